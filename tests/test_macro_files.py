"""The project's macros: one per file, named after it, documented with Args and Usage (issue 45).

Reads ``macros/*.sql`` and ``macros/_macros.yml`` only (no Spark, no dbt run).
"""

import ast
import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
MACROS = REPO / "macros"
SIGNATURE = re.compile(r"\{%-?\s*macro\s+([a-z_0-9]+)\((.*?)\)\s*-?%\}", re.S)


def _signature(path: Path) -> tuple[str, list[str]]:
    """Return the name and parameter names of the one macro ``path`` defines."""
    found = SIGNATURE.findall(path.read_text(encoding="utf-8"))
    assert len(found) == 1, f"{path.name} defines {len(found)} macros; one per file"
    name, params = found[0]
    # Jinja defaults are Python literals (strings, none, true): ast reads the list
    parsed = ast.parse(f"def _({params}): pass").body[0].args
    return name, [a.arg for a in parsed.args]


def _documented() -> dict[str, dict]:
    entries = yaml.safe_load((MACROS / "_macros.yml").read_text(encoding="utf-8"))["macros"]
    return {entry["name"]: entry for entry in entries}


MACRO_FILES = sorted(MACROS.glob("*.sql"))


@pytest.mark.parametrize("path", MACRO_FILES, ids=lambda p: p.stem)
def test_a_macro_file_holds_one_macro_named_after_it(path):
    name, _ = _signature(path)
    assert name == path.stem


@pytest.mark.parametrize("path", MACRO_FILES, ids=lambda p: p.stem)
def test_a_macro_is_documented_with_its_arguments_and_a_usage(path):
    name, params = _signature(path)
    entry = _documented().get(name)
    assert entry is not None, f"{name} has no entry in macros/_macros.yml"
    assert "Usage" in entry["description"], f"{name}: its description gives no Usage"
    assert [arg["name"] for arg in entry.get("arguments", [])] == params
    assert all(arg.get("description") for arg in entry.get("arguments", []))


def test_every_documented_macro_exists():
    assert set(_documented()) == {path.stem for path in MACRO_FILES}


def test_no_description_holds_jinja():
    # dbt renders descriptions: a macro call written in one fails the project's parse
    text = (MACROS / "_macros.yml").read_text(encoding="utf-8")
    assert "{{" not in text and "{%" not in text


@pytest.mark.parametrize("path", MACRO_FILES, ids=lambda p: p.stem)
def test_a_macro_file_comments_in_one_line_and_leaves_its_description_to_the_yaml(path):
    """issue 74: each macro has one description, in macros/_macros.yml; a comment in its file
    is one line, so the two cannot drift apart."""
    comments = re.findall(r"\{#(.*?)#\}", path.read_text(encoding="utf-8"), re.S)
    assert all("\n" not in comment for comment in comments), path.name
