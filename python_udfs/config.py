"""One configuration for Python and dbt: ``dbt_project.yml`` vars and the catalog seeds.

Feeds are declared under ``vars.cdc_feeds`` (name → ``format``, ``path`` below the landing
root, ``options``). ``vars.cdc_landing_root`` / ``vars.cdc_lake_root`` give the roots, relative
to the project directory unless absolute; the environment variables ``CDC_LANDING_ROOT`` and
``CDC_LAKE_ROOT`` override them. The catalog of replicated tables is
``seeds/cdc_columns.csv`` and ``seeds/cdc_tables.csv``.

The demo is separable: while ``vars.cdc_demo`` is true, the feeds of ``vars.cdc_demo_feeds``
and the demo catalog ``seeds/demo/cdc_demo_columns.csv`` / ``cdc_demo_tables.csv`` are in
effect too (the dbt macros ``cdc_feeds`` and ``cdc_catalog_seeds`` merge the same files);
``cdc_demo: false`` leaves only the project's own feeds and tables.

Every configuration mistake raises :class:`ConfigError` with one message that names the file
and the fix; the CLI prints it and exits with status 2.
"""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from python_udfs.records import ConfigError, MetadataColumn
from python_udfs.registry import FORMATS

CDC_COLUMNS_HEADER = [
    "feed",
    "source_schema",
    "source_table",
    "column_name",
    "ordinal",
    "source_type",
    "length",
    "precision",
    "scale",
    "primary_key_position",
    "nullable",
    "spark_type",
]
CDC_TABLES_HEADER = ["feed", "source_schema", "source_table", "table_identifier"]
#: The demo's catalog seeds, relative to the seeds folder: (columns, tables).
DEMO_SEEDS = (Path("demo") / "cdc_demo_columns.csv", Path("demo") / "cdc_demo_tables.csv")


#: Longest schema, table or column name accepted (characters). The Hive metastore holds a
#: view's column names in VARCHAR(767); typed model names are shortened (scaffold.typed_model_name).
MAX_NAME_LENGTH = 512
#: Typed-view columns a source column may not be named (case-insensitively): the views' own.
RESERVED_COLUMN_NAMES = frozenset(
    (
        "primary_key version_id last_change_position last_committed_at valid_from valid_to "
        "valid_from_position valid_to_position opened_by_operation closed_by_operation "
        "is_current is_deleted"
    ).split()
)


def unsafe_name_reason(name: str) -> str | None:
    """Return why ``name`` cannot be a schema, table or column name, or None when it can.

    Names come from the data (a Kafka MD message, a Qlik folder or ``.dfm``, a sourcedefs file)
    and are carried as they are: quotes, backticks, backslashes, ``;``, newlines and Jinja
    braces are quoted or escaped wherever a name reaches SQL, Jinja, YAML or a file name
    (macros ``cdc_string_literal`` and ``cdc_quote_identifier``, :func:`python_udfs.scaffold.typed_model_name`).
    Refused: an empty name, a NUL character, and more than :data:`MAX_NAME_LENGTH` characters.
    """
    if not name:
        return "is empty"
    if len(name) > MAX_NAME_LENGTH:
        return f"is {len(name)} characters long (at most {MAX_NAME_LENGTH})"
    if "\x00" in name:
        return "holds a NUL character"
    return None


def table_columns_problem(column_names: list[str]) -> str | None:
    """Return why one table's column names cannot become a typed view's columns, or None.

    The views name their columns in lower case next to their own (:data:`RESERVED_COLUMN_NAMES`),
    so two names equal in lower case, or one of those, cannot both be columns.
    """
    seen: dict[str, str] = {}
    for name in column_names:
        lower = name.lower()
        if lower in RESERVED_COLUMN_NAMES:
            return f"column {name!r} has the name of a typed view column ({lower})"
        if lower in seen:
            return f"columns {seen[lower]!r} and {name!r} are equal in lower case"
        seen[lower] = name
    return None


@dataclass(frozen=True, slots=True)
class FeedConfig:
    """One feed: its name, format, absolute landing folder and decoder options."""

    name: str
    format: str
    path: Path
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class ProjectConfig:
    """The project's resolved configuration.

    ``catalog`` maps ``(feed, source_schema, source_table)`` to the seed's columns in ordinal
    order; ``spark_types`` maps the same key to ``{column_name: spark_type}``;
    ``table_identifiers`` maps ``(feed, table_identifier)`` to ``(schema, table)``.
    """

    project_dir: Path
    landing_root: Path
    lake_root: Path
    feeds: dict[str, FeedConfig]
    catalog: dict[tuple[str, str, str], list[MetadataColumn]]
    spark_types: dict[tuple[str, str, str], dict[str, str]]
    table_identifiers: dict[tuple[str, str], tuple[str, str]]
    raw_schema: str = "cdc_raw"
    #: Whether the demo is on (``vars.cdc_demo``), and the names of its feeds then in effect.
    demo: bool = False
    demo_feeds: frozenset[str] = frozenset()

    def feed_catalog(self, feed: str) -> dict[tuple[str, str], list[MetadataColumn]]:
        """Return the seed's columns of one feed's tables, keyed by ``(schema, table)``."""
        return {(s, t): cols for (f, s, t), cols in self.catalog.items() if f == feed}


def _root(value: str, env: str, project_dir: Path) -> Path:
    path = Path(os.environ.get(env) or value)
    return (path if path.is_absolute() else project_dir / path).resolve()


def load_project(
    project_dir: Path, extra_vars: Mapping[str, Any] | None = None, check_paths: bool = True
) -> ProjectConfig:
    """Read ``dbt_project.yml`` and the catalog seeds of ``project_dir`` and validate them.

    ``extra_vars`` overrides vars as ``dbt --vars`` does. The feeds are ``vars.cdc_feeds``
    plus, while ``vars.cdc_demo`` is true, ``vars.cdc_demo_feeds``. With ``check_paths`` every
    feed's landing folder must exist. Raises :class:`ConfigError` for a missing project file,
    no feed at all, a feed name in both vars, an unknown feed format, a missing landing
    folder, malformed seeds, or a table listed in ``cdc_tables.csv`` without columns in
    ``cdc_columns.csv``.
    """
    project_file = project_dir / "dbt_project.yml"
    if not project_file.is_file():
        raise ConfigError(
            f"{project_file}: not found. Run from the dbt project folder or pass --project-dir."
        )
    with project_file.open(encoding="utf-8") as fh:
        project = yaml.safe_load(fh) or {}
    variables = {**(project.get("vars") or {}), **(extra_vars or {})}
    demo = variables.get("cdc_demo", False) is True
    own_feeds = variables.get("cdc_feeds") or {}
    demo_feeds = (variables.get("cdc_demo_feeds") or {}) if demo else {}
    for var_name, value in (("cdc_feeds", own_feeds), ("cdc_demo_feeds", demo_feeds)):
        if not isinstance(value, Mapping):
            raise ConfigError(
                f"{project_file}: vars.{var_name} must be a mapping of feed name to "
                "`{format: ..., path: ..., options: {...}}`."
            )
    both = sorted(set(own_feeds) & set(demo_feeds))
    if both:
        raise ConfigError(
            f"{project_file}: feed {both[0]} is in vars.cdc_feeds and in vars.cdc_demo_feeds. "
            "Rename your feed, or switch the demo off with `cdc_demo: false`."
        )
    feeds_var = {**demo_feeds, **own_feeds}
    if not feeds_var:
        raise ConfigError(
            f"{project_file}: vars.cdc_feeds is empty and the demo is off (cdc_demo: false). "
            "Declare each feed as `<name>: {format: ..., path: ..., options: {...}}`."
        )
    landing_root = _root(
        str(variables.get("cdc_landing_root", "landing")), "CDC_LANDING_ROOT", project_dir
    )
    lake_root = _root(str(variables.get("cdc_lake_root", "lake")), "CDC_LAKE_ROOT", project_dir)
    feeds: dict[str, FeedConfig] = {}
    for name, spec in feeds_var.items():
        where = (
            f"{project_file}: vars.{'cdc_feeds' if name in own_feeds else 'cdc_demo_feeds'}.{name}"
        )
        feeds[str(name)] = _feed_config(where, name, spec, landing_root, check_paths)
    catalog, spark_types, identifiers = load_catalog(project_dir / "seeds", feeds, demo)
    return ProjectConfig(
        project_dir=project_dir.resolve(),
        landing_root=landing_root,
        lake_root=lake_root,
        feeds=feeds,
        catalog=catalog,
        spark_types=spark_types,
        table_identifiers=identifiers,
        raw_schema=str(variables.get("cdc_raw_schema", "cdc_raw")),
        demo=demo,
        demo_feeds=frozenset(str(name) for name in demo_feeds),
    )


def _feed_config(
    where: str, name: Any, spec: Any, landing_root: Path, check_paths: bool
) -> FeedConfig:
    """Check one feed's declaration (``where`` names it in messages) and return it.

    Raises :class:`ConfigError` for a bad name, an unknown format, no ``path`` or (with
    ``check_paths``) a landing folder that does not exist, options that are no mapping or that the format
    does not have (:func:`_check_options`), or a sourcedefs file that does not exist.
    """
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", str(name)):
        raise ConfigError(
            f"{where}: a feed name is letters, digits and underscores (at most 64, not "
            "starting with a digit): it names raw rows, typed models and files."
        )
    if not isinstance(spec, Mapping):
        raise ConfigError(f"{where} must be a mapping with format, path and options.")
    fmt = spec.get("format")
    if fmt not in supported_formats():
        raise ConfigError(
            f"{where}: unknown format {fmt!r}. Use one of: {', '.join(supported_formats())}."
        )
    rel = spec.get("path")
    if not rel:
        raise ConfigError(f"{where}: `path` (landing sub-folder) is missing.")
    path = (landing_root / str(rel)).resolve()
    if check_paths and not path.is_dir():
        raise ConfigError(
            f"{where}: landing folder {path} does not exist. Create it, fix `path`, or set "
            "CDC_LANDING_ROOT to the folder that holds it."
        )
    options = spec.get("options") or {}
    if not isinstance(options, Mapping):
        raise ConfigError(f"{where}.options must be a mapping.")
    _check_options(where, fmt, options)
    definitions = options.get("definitions")
    if definitions and check_paths and not (landing_root / str(definitions)).is_file():
        raise ConfigError(
            f"{where}.options.definitions: sourcedefs file {landing_root / str(definitions)} does not "
            "exist. Give its path relative to the landing root, or remove the option to use the "
            "trail's own metadata records."
        )
    return FeedConfig(str(name), fmt, path, dict(options))


def supported_formats() -> tuple[str, ...]:
    """Return the ``format:`` values this version decodes (DESIGN.md §1), from the registry."""
    return tuple(FORMATS)


def _check_options(where: str, fmt: str, options: Mapping[str, Any]) -> None:
    """Fail fast on an option the format does not have, or a value it does not implement.

    A misspelled key would be ignored and a wrong value would make every record a reject.
    The format's codec options are looked up as Python codecs, then its own
    ``check_options`` runs (:class:`python_udfs.feed_format.FeedFormat`).

    Raises ConfigError naming the feed, the key, and the keys or values that are accepted.
    """
    import codecs
    import difflib

    feed_format = FORMATS[fmt]
    choices = feed_format.option_choices
    page = feed_format.options_page
    for name, value in options.items():
        if name not in choices:
            close = difflib.get_close_matches(str(name), list(choices), n=1)
            hint = f"Did you mean {close[0]}? " if close else ""
            raise ConfigError(
                f"{where}.options.{name}: {fmt} has no option {name!r}. {hint}"
                f"Options: {', '.join(sorted(choices))} ({page})."
            )
        allowed = choices[name]
        if allowed is not None and value not in allowed:
            raise ConfigError(
                f"{where}.options.{name}: {value!r} is not one of "
                f"{', '.join(str(a) for a in allowed)} ({page})."
            )
    for name in feed_format.codec_options:
        codec = options.get(name)
        if codec is None:
            continue
        try:
            codecs.lookup(str(codec))
        except LookupError as exc:
            raise ConfigError(
                f"{where}.options.{name}: unknown codec {codec!r}. Use a Python codec name "
                "such as utf-8, cp1252, euc_jp or cp932."
            ) from exc
    feed_format.check_options(where, options)


def _read_seed(path: Path, header: list[str]) -> list[dict[str, str]]:
    if not path.is_file():
        raise ConfigError(f"{path}: not found. Create it with the header {','.join(header)}.")
    with path.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        if reader.fieldnames != header:
            raise ConfigError(
                f"{path}: header is {reader.fieldnames}; it must be exactly {','.join(header)}."
            )
        return list(reader)


def _int(value: str, path: Path, line: int, column: str) -> int | None:
    if value in ("", None):
        return None
    try:
        return int(value)
    except ValueError as exc:
        raise ConfigError(f"{path}:{line}: {column} {value!r} is not an integer.") from exc


def load_catalog(seeds_dir: Path, feeds: Mapping[str, FeedConfig], demo: bool = False):
    """Read the catalog seeds; return catalog, Spark types, identifiers (see :class:`ProjectConfig`).

    The seeds are ``cdc_columns.csv`` and ``cdc_tables.csv`` of ``seeds_dir`` and, with
    ``demo``, the demo's (:data:`DEMO_SEEDS`). Raises :class:`ConfigError` when a seed is
    missing or malformed, a table of a tables seed has no columns in its columns seed, or a
    table is in both the project's seeds and the demo's.
    """
    pairs = [(seeds_dir / "cdc_columns.csv", seeds_dir / "cdc_tables.csv")]
    if demo:
        pairs.append((seeds_dir / DEMO_SEEDS[0], seeds_dir / DEMO_SEEDS[1]))
    catalog: dict[tuple[str, str, str], list[MetadataColumn]] = {}
    spark_types: dict[tuple[str, str, str], dict[str, str]] = {}
    identifiers: dict[tuple[str, str], tuple[str, str]] = {}
    for columns_path, tables_path in pairs:
        one = _load_seed_pair(columns_path, tables_path)
        for key in one[0]:
            if key in catalog:
                raise ConfigError(
                    f"{columns_path}: table {'.'.join(key[1:])} of feed {key[0]} is declared in "
                    f"{pairs[0][0]} too. Keep one of them (or switch the demo off)."
                )
        catalog.update(one[0])
        spark_types.update(one[1])
        identifiers.update(one[2])
    return catalog, spark_types, identifiers


def _load_seed_pair(columns_path: Path, tables_path: Path):
    """Read one columns seed and its tables seed (see :func:`load_catalog`)."""
    catalog: dict[tuple[str, str, str], list[MetadataColumn]] = {}
    spark_types: dict[tuple[str, str, str], dict[str, str]] = {}
    for line, row in enumerate(_read_seed(columns_path, CDC_COLUMNS_HEADER), start=2):
        key = (row["feed"], row["source_schema"], row["source_table"])
        for field_name in ("feed", "source_schema", "source_table", "column_name"):
            reason = unsafe_name_reason(row[field_name])
            if reason:
                raise ConfigError(
                    f"{columns_path}:{line}: {field_name} {row[field_name][:80]!r} {reason}. "
                    "Remove the row (the table's records stay rejects naming it)."
                )
        column = MetadataColumn(
            source_schema=row["source_schema"],
            source_table=row["source_table"],
            table_version=None,
            column_name=row["column_name"],
            ordinal=_int(row["ordinal"], columns_path, line, "ordinal") or 0,
            source_type=row["source_type"],
            length=_int(row["length"], columns_path, line, "length"),
            precision=_int(row["precision"], columns_path, line, "precision"),
            scale=_int(row["scale"], columns_path, line, "scale"),
            primary_key_position=_int(
                row["primary_key_position"], columns_path, line, "primary_key_position"
            )
            or 0,
            nullable=row["nullable"].strip().lower() == "true",
            metadata_source="catalog_seed",
        )
        catalog.setdefault(key, []).append(column)
        spark_types.setdefault(key, {})[row["column_name"]] = row["spark_type"] or "string"
    for cols in catalog.values():
        cols.sort(key=lambda c: c.ordinal)
    identifiers: dict[tuple[str, str], tuple[str, str]] = {}
    for line, row in enumerate(_read_seed(tables_path, CDC_TABLES_HEADER), start=2):
        key = (row["feed"], row["source_schema"], row["source_table"])
        if key not in catalog:
            raise ConfigError(
                f"{tables_path}:{line}: table {'.'.join(key[1:])} of feed {key[0]} has no columns. "
                f"Add its columns to {columns_path} (or run `cdc scaffold`)."
            )
        if row["table_identifier"]:
            identifiers[(row["feed"], row["table_identifier"])] = key[1:]
    return catalog, spark_types, identifiers
