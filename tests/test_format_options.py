"""Every option value the format pages document is accepted (issue 46).

Each page of ``../shared/formats/`` ends its description with a table *Uncertain points and
options*: one row per option, its default and its alternatives, each value in backticks. This
test reads those tables and passes every documented value of every option a user can set
through the same check ``config.load_project`` runs on ``vars.cdc_feeds`` (the format's
``OPTIONS``, which lists the values the decoder implements). A row whose alternatives cell is
``—`` is a fixed rule of the decoder, not a setting, and is left out; so is text in
parentheses (an explanation, not a value) and a default cell that does not start with a value.
:data:`SET_ELSEWHERE` lists the documented options the project sets another way.

:data:`NOT_IMPLEMENTED` lists, with the reason, the documented values this version still
refuses. The test fails on a refused value that the list lacks (a page gained an option, or a
value was dropped), and on a listed value that is now accepted (take it off the list).
"""

from __future__ import annotations

import re

import pytest

from python_udfs.config import ConfigError, _check_options
from python_udfs.registry import FORMATS
from tests.conftest import SHARED

#: ``(format, option, value)`` documented but refused by this version, and why. ``value`` is
#: None for an option the format does not have at all. Empty: every documented value is
#: implemented; a page that gains one this version refuses must list it here.
NOT_IMPLEMENTED: dict[tuple[str, str, str | None], str] = {}

#: Documented options a feed does not set in ``options`` because the project sets them another
#: way, and where.
SET_ELSEWHERE: dict[tuple[str, str, str | None], str] = {
    ("hirdb_update_sql", "column_types", None): (
        "the catalog seeds (seeds/cdc_columns.csv) are the per-table catalog; without a seed row "
        "a table's literals are typed by their shape"
    ),
}

_VALUE = re.compile(r"`([^`]+)`")
_PARENTHESES = re.compile(r"\([^()]*\)")


def documented_options(page_text: str) -> dict[str, list[str]]:
    """Return ``{option: [documented values]}`` of a format page's option table.

    Options whose alternatives cell is ``—`` (fixed rules) are left out. Values are the
    backticked words of the default cell (only when it starts with one) and of the
    alternatives cell, outside parentheses. An option whose cells name no value maps to [].
    """
    section = page_text.split("## Uncertain points and options", 1)[1].split("\n## ", 1)[0]
    options: dict[str, list[str]] = {}
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        name_cell, default_cell, alternatives_cell = (
            c.strip() for c in line.strip().strip("|").split("|")[:3]
        )
        if alternatives_cell in ("—", "-", ""):
            continue
        default_cell = _PARENTHESES.sub("", default_cell).strip()
        values = _VALUE.findall(default_cell)[:1] if default_cell.startswith("`") else []
        values += _VALUE.findall(_PARENTHESES.sub("", alternatives_cell))
        for name in _VALUE.findall(name_cell):
            options[name] = values
    return options


def _as_yaml(value: str):
    """A documented value as ``vars.cdc_feeds`` YAML gives it to the check (true → True)."""
    return {"true": True, "false": False}.get(value, value)


def _refused() -> dict[tuple[str, str, str | None], str]:
    refused = {}
    for fmt, feed_format in FORMATS.items():
        page = (SHARED / feed_format.options_page).read_text(encoding="utf-8")
        for option, values in documented_options(page).items():
            if option not in feed_format.options:
                refused[(fmt, option, None)] = "no such option"
                continue
            for value in values:
                try:
                    _check_options("test", fmt, {option: _as_yaml(value)})
                except ConfigError as exc:
                    refused[(fmt, option, value)] = str(exc)
    return refused


def test_the_option_tables_parse_into_the_options_of_every_format():
    """The parser finds each page's table: every format has options, and the settable ones
    include some everyone knows (a guard against a parser that finds nothing)."""
    found = {
        fmt: documented_options((SHARED / f.options_page).read_text(encoding="utf-8"))
        for fmt, f in FORMATS.items()
    }
    assert found["goldengate_trail"]["byte_order"] == ["auto", "big", "little"]
    assert found["qlik_change_tables"]["load_position"] == ["zeros", "dfm_start"]
    assert found["hirdb_update_sql"]["unknown_columns"] == ["keep", "reject"]
    assert "delimiters" not in found["qlik_change_tables"]
    assert found["qlik_change_tables"]["null_value"] == []
    assert all(len(options) >= 5 for options in found.values()), found


def test_every_documented_option_value_is_accepted_or_listed_as_not_yet_implemented():
    refused = {key: why for key, why in _refused().items() if key not in SET_ELSEWHERE}
    unlisted = {key: why for key, why in refused.items() if key not in NOT_IMPLEMENTED}
    now_accepted = sorted(key for key in NOT_IMPLEMENTED if key not in refused)
    assert unlisted == {}, "documented but refused, and not in NOT_IMPLEMENTED"
    assert now_accepted == [], "accepted now: take these off NOT_IMPLEMENTED"


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_option_a_format_accepts_is_documented(fmt):
    """Each option a format accepts is one its page documents, or one of the few settings
    outside the pages' tables (file layout and naming the pages describe in their text)."""
    page = (SHARED / FORMATS[fmt].options_page).read_text(encoding="utf-8")
    documented = set(documented_options(page))
    fixed = set(re.findall(r"^\| `([a-z_]+)`", page, re.MULTILINE))
    undocumented = set(FORMATS[fmt].options) - documented - fixed
    assert undocumented == OUTSIDE_THE_TABLE.get(fmt, set())


#: Options a format accepts that its page's option table does not list, and where the page
#: describes them instead.
OUTSIDE_THE_TABLE: dict[str, set[str]] = {
    "goldengate_trail": {"definitions", "incomplete_tail"},
    "qlik_change_tables": {"ct_suffix", "field_delimiter", "record_delimiter", "quote_char"},
    # load_positions: the per-dump positions of load_position explicit ("explicit per dump")
    "qlik_kafka": {"topic_tables", "schema_dir", "incomplete_tail", "load_positions"},
    "linkexpress_extract": {"unit", "difftype"},
}
