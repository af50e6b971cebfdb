"""``cdc scaffold``: the catalog seeds and typed model files from the feeds' metadata.

The tables and columns that feeds' own metadata declares (``raw_metadata``) are written into
the catalog seeds, and the typed model files (one current-state view and one ``__history``
view, SCD type 2, per catalog table) are generated from the catalog.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from python_udfs.config import (
    CDC_COLUMNS_HEADER,
    CDC_TABLES_HEADER,
    ProjectConfig,
)

TYPED_MODELS_DIR = Path("models") / "marts" / "tables"


#: The demo's typed models (of seeds/demo/), enabled while ``vars.cdc_demo`` is true.
DEMO_TYPED_MODELS_DIR = TYPED_MODELS_DIR / "demo"


#: The YAML file of the typed models in TYPED_MODELS_DIR, and of those in DEMO_TYPED_MODELS_DIR.
TYPED_MODELS_YML = "_tables__models.yml"


DEMO_TYPED_MODELS_YML = "_demo__models.yml"


def scaffold(config: ProjectConfig, log=print) -> int:
    """Add tables from ``raw_metadata`` to the seeds and write missing typed model files.

    Existing seed rows are kept (hand edits win); tables declared by a ``.dfm`` or MD message
    but not yet in the seeds are appended with Spark types mapped from the vendor types. Then
    every table of ``cdc_tables.csv`` gets its typed model files (:func:`typed_model_name`) if
    it has none, and ``_tables__models.yml`` is rewritten.

    Everything is checked before anything is written: the new seeds are read back with
    :func:`python_udfs.config.load_catalog` from a scratch folder and every file is rendered
    in memory; a :class:`ConfigError` leaves the project as it was. Idempotent: a second
    scaffold of the same metadata adds nothing and writes the same files.
    """
    import tempfile

    from python_udfs.config import load_catalog
    from python_udfs.spark import lock_lake
    from python_udfs.staging import Stager

    lock_lake(config.lake_root)  # no JVM: the metadata is read with pyarrow
    stager = Stager(None, config, log)
    stager.lake.ensure_tables()
    seeds = config.project_dir / "seeds"
    columns_path, tables_path = seeds / "cdc_columns.csv", seeds / "cdc_tables.csv"
    rows = stager.lake.metadata_rows(stager.lake.committed_batches())
    feed_formats = {name: feed.format for name, feed in config.feeds.items()}
    # the project's own seed tables (not the demo's), whose columns scaffold may extend
    own_catalog = (
        load_catalog(seeds, config.feeds)[0]
        if columns_path.exists() and tables_path.exists()
        else {}
    )
    own_columns = {
        key: {c.column_name: c.ordinal for c in cols} for key, cols in own_catalog.items()
    }
    new_columns, new_tables, skipped = scaffold_rows(
        rows, set(config.catalog), feed_formats, own_columns
    )
    for line in skipped:
        log(f"  skipped {line}")
    for column in new_columns:
        key = (column["feed"], column["source_schema"], column["source_table"])
        if key in own_columns:
            log(
                f"  column {column['column_name']!r} added to {key[0]} "
                f"{key[1]!r}.{key[2]!r} (its feed's metadata has it)"
            )
    seed_texts = {
        columns_path: _appended_csv(columns_path, CDC_COLUMNS_HEADER, new_columns),
        tables_path: _appended_csv(tables_path, CDC_TABLES_HEADER, new_tables),
    }
    with tempfile.TemporaryDirectory() as scratch:
        for path, text in seed_texts.items():
            (Path(scratch) / path.name).write_text(text, encoding="utf-8")
        catalog, spark_types, _ = load_catalog(Path(scratch), config.feeds)
    files = typed_model_files(catalog, spark_types)
    for path, text in seed_texts.items():
        _replace_text(path, text)
    written = _write_typed_files(config.project_dir, files)
    log(f"seeds: {len(new_tables)} table(s), {len(new_columns)} column(s) added")
    log(f"models: {written} typed model file(s) written under {TYPED_MODELS_DIR}")
    return 0


def scaffold_rows(
    rows: list[dict[str, Any]],
    known: set[tuple[str, str, str]],
    feed_formats: Mapping[str, str] | None = None,
    own_columns: Mapping[tuple[str, str, str], Mapping[str, int]] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """Turn ``raw_metadata`` rows into new catalog seed rows: ``(columns, tables, skipped)``.

    Tables already in the catalog (``known``: ``(feed, schema, table)``) keep their rows. A
    known table of the project's own seeds (``own_columns``: its ``{column: ordinal}``) gets the
    columns its latest metadata has and the seeds lack (source DDL, issue 46), after its last
    ordinal, as non-key columns; a known table of other seeds (the demo's) gets none.
    The latest table version of each new table gives its columns, in ordinal order, with Spark
    types from the ``spark_type_for`` of the feed's format (``feed_formats``: feed → format;
    ``string`` for a feed not named there or a format without one). Names are kept as the feed spells them (quotes,
    newlines and braces included). A table with a name :func:`python_udfs.config.unsafe_name_reason`
    refuses (empty, a NUL character, too long) is skipped whole, before anything is appended,
    with one line in ``skipped`` naming it and why;
    so is a table whose columns cannot all be typed-view columns
    (:func:`python_udfs.config.table_columns_problem`).
    """
    from python_udfs.config import table_columns_problem, unsafe_name_reason
    from python_udfs.registry import FORMATS

    def spark_type(feed: str, column: Mapping[str, Any]) -> str:
        fmt = FORMATS.get((feed_formats or {}).get(feed, ""))
        if fmt is None or fmt.spark_type_for is None:
            return "string"
        return fmt.spark_type_for(column["source_type"], column["precision"], column["scale"])

    own_columns = own_columns or {}
    latest: dict[tuple[str, str, str], dict[str, dict]] = {}
    for r in sorted(rows, key=lambda r: (r["table_version"] or 0, r["ingest_batch_id"])):
        key = (r["feed"], r["source_schema"], r["source_table"])
        if (key in known and key not in own_columns) or r["column_name"].startswith("header__"):
            continue
        latest.setdefault(key, {})[r["column_name"]] = r
    new_columns, new_tables, skipped = [], [], []
    for key in sorted(set(latest) & set(own_columns)):
        seeded = own_columns[key]
        added = sorted(
            (c for name, c in latest.pop(key).items() if name not in seeded),
            key=lambda c: c["ordinal"],
        )
        problems = [(c["column_name"], unsafe_name_reason(c["column_name"])) for c in added]
        if any(reason for _name, reason in problems):
            name, reason = next(p for p in problems if p[1])
            skipped.append(f"{key[0]} column {name[:80]!r} {reason}; add it to the seeds by hand")
            continue
        after = max(seeded.values(), default=0)
        for i, c in enumerate(added, start=after + 1):
            new_columns.append(_seed_column(key, c, i, spark_type(key[0], c), key_position=0))
    for key, cols in sorted(latest.items()):
        names = [("schema", key[1]), ("table", key[2])] + [("column", c) for c in cols]
        problems = [(kind, name, unsafe_name_reason(name)) for kind, name in names]
        problems = [p for p in problems if p[2]]
        problem = (
            f"{problems[0][0]} {problems[0][1][:80]!r} {problems[0][2]}"
            if problems
            else table_columns_problem(list(cols))
        )
        if problem:
            skipped.append(
                f"{key[0]} {key[1][:80]!r}.{key[2][:80]!r}: {problem}; declare the table in "
                "the seeds by hand"
            )
            continue
        ordered = sorted(cols.values(), key=lambda c: c["ordinal"])
        for i, c in enumerate(ordered, start=1):
            new_columns.append(_seed_column(key, c, i, spark_type(key[0], c)))
        new_tables.append(
            {
                "feed": key[0],
                "source_schema": key[1],
                "source_table": key[2],
                "table_identifier": "",
            }
        )
    return new_columns, new_tables, skipped


def _seed_column(
    key: tuple[str, str, str],
    column: Mapping[str, Any],
    ordinal: int,
    spark_type: str,
    key_position: int | None = None,
) -> dict[str, Any]:
    """One ``cdc_columns.csv`` row of table ``key`` from a ``raw_metadata`` row.

    ``key_position`` overrides the metadata's ``primary_key_position`` (0: not a key column).
    """

    def text(value: Any) -> Any:
        return value if value is not None else ""

    return {
        "feed": key[0],
        "source_schema": key[1],
        "source_table": key[2],
        "column_name": column["column_name"],
        "ordinal": ordinal,
        "source_type": column["source_type"],
        "length": text(column["length"]),
        "precision": text(column["precision"]),
        "scale": text(column["scale"]),
        "primary_key_position": (
            key_position if key_position is not None else column["primary_key_position"] or 0
        ),
        "nullable": str(bool(column["nullable"])).lower()
        if column["nullable"] is not None
        else "true",
        "spark_type": spark_type,
    }


#: Columns of a typed history model after the catalog columns (documented in _marts__docs.md).
HISTORY_COLUMNS = (
    "valid_from",
    "valid_to",
    "valid_from_position",
    "valid_to_position",
    "opened_by_operation",
    "closed_by_operation",
    "is_current",
    "is_deleted",
)


def typed_model_name(feed: str, schema: str, table: str) -> str:
    """Return the typed model name of a catalog table: ``<feed>__<schema>__<table>`` in lower case.

    A dbt model, file and Spark relation name: when the lower-case name holds anything but
    ASCII letters, digits and underscores, or is over 80 characters, each such character
    becomes ``_``, the name is cut to 60 characters and ``_`` plus the first 8 hex digits of
    the MD5 of the three names (as JSON) is added, so two tables never share a name. The
    names as the feed spells them stay in the catalog and the model's description.
    """
    name = f"{feed}__{schema}__{table}".lower()
    if re.fullmatch(r"[a-z0-9_]{1,80}", name):
        return name
    digest = hashlib.md5(json.dumps([feed, schema, table]).encode()).hexdigest()[:8]
    return f"{re.sub(r'[^a-z0-9_]', '_', name)[:60]}_{digest}"


def jinja_text(text: str) -> str:
    """Return ``text`` so that dbt's Jinja rendering of a YAML value or a description yields it.

    Text without ``{`` is returned as it is; otherwise it becomes one Jinja expression holding
    it as a string literal (``{{ "..." }}``), so ``{{ 7*7 }}`` in a name is shown, not run.
    """
    if "{" not in text:
        return text
    return "{{ " + json.dumps(text, ensure_ascii=False) + " }}"


def typed_model_files(
    catalog: dict[tuple[str, str, str], list],
    spark_types: dict[tuple[str, str, str], dict],
    models_yml: str = TYPED_MODELS_YML,
    demo: bool = False,
) -> dict[str, str]:
    """Return the typed model files of a catalog: file name under TYPED_MODELS_DIR → text.

    Per table (``(feed, schema, table)`` → catalog columns) a current-state and a history
    view (``<name>.sql``, ``<name>__history.sql``, :func:`typed_model_name`), plus
    ``models_yml`` documenting every model and column. Both are views (on ``current_state``
    and ``history``; the marts' default materialization, so the files set none): they hold no data, so a run with new data only leaves them as they are
    (ADR 0009), whatever the number of tables. They declare no data tests: their rows are
    ``current_state``'s and ``history``'s, whose tests cover them, so a whole build costs no
    test per table (ADR 0034). Each catalog column's YAML carries its Spark type
    (``data_type``) and its name as the feed spells it (``config.meta.source_column``), and
    each model its table's names (``config.meta``): the views cast from those, with no query
    when they compile, and the data test ``typed_models_match_catalog`` fails when they
    differ from the seeds (ADR 0035). The demo's typed models (in
    DEMO_TYPED_MODELS_DIR) are these files of the demo catalog with DEMO_TYPED_MODELS_YML and
    ``demo``: each is enabled by ``var('cdc_demo')`` (dbt_project.yml cannot read its own
    vars). Names reach the model files as Jinja string literals (JSON-escaped) and the YAML
    through :func:`jinja_text`: a quote, newline or ``{{ }}`` in a name is carried, never
    rendered.
    """
    import yaml

    files: dict[str, str] = {}
    docs = []
    for (feed, schema, table), columns in sorted(catalog.items()):
        types = spark_types[(feed, schema, table)]
        keys = sorted(
            (c for c in columns if c.primary_key_position), key=lambda c: c.primary_key_position
        )
        key_text = jinja_text(", ".join(c.column_name for c in keys) or "none declared")
        where = f"{jinja_text(schema)}.{jinja_text(table)} from feed {feed}"
        column_docs = [
            {
                "name": jinja_text(c.column_name.lower()),
                "description": (
                    f"{jinja_text(c.column_name)}: source type {c.source_type}"
                    + (f"({c.precision},{c.scale})" if c.precision else "")
                    + f", as {types[c.column_name]}"
                    + (
                        f"; primary key position {c.primary_key_position}"
                        if c.primary_key_position
                        else ""
                    )
                    + ("" if c.nullable else "; not null at the source")
                    + "."
                ),
                # what cdc_typed_rows casts: the column's text under its source name in `row`
                "data_type": types[c.column_name],
                "config": {"meta": {"source_column": jinja_text(c.column_name)}},
            }
            for c in columns
        ]
        table_meta = {
            "meta": {
                "feed": jinja_text(feed),
                "source_schema": jinja_text(schema),
                "source_table": jinja_text(table),
            }
        }
        name = typed_model_name(feed, schema, table)
        docs.append(
            {
                "name": name,
                "description": (
                    f"Current state of {where} (a view on `current_state`): one row per live "
                    "key, columns cast from canonical text to the catalog's Spark types. "
                    f"Primary key: {key_text}; unique and not null, by the self-checks of "
                    "`current_state` on `current_state_id` and `primary_key` (ADR 0034)."
                ),
                "config": table_meta,
                "columns": [
                    {"name": "primary_key", "description": "{{ doc('primary_key') }}"},
                    *column_docs,
                    {
                        "name": "last_change_position",
                        "description": "Position of the change that opened the row's current version.",
                    },
                    {
                        "name": "last_committed_at",
                        "description": "Commit time (UTC) of the change that opened the row's current version.",
                    },
                ],
            }
        )
        docs.append(
            {
                "name": f"{name}__history",
                "description": (
                    f"SCD type 2 history of {where} (a view on `history`): one row per version "
                    "of a key, columns cast to the catalog's Spark types. "
                    f"Primary key: {key_text}."
                ),
                "config": table_meta,
                "columns": [
                    {"name": "version_id", "description": "{{ doc('version_id') }}"},
                    {"name": "primary_key", "description": "{{ doc('primary_key') }}"},
                    *column_docs,
                    *[
                        {"name": column, "description": f"{{{{ doc('{column}') }}}}"}
                        for column in HISTORY_COLUMNS
                    ],
                ],
            }
        )
        arguments = ", ".join(json.dumps(n, ensure_ascii=False) for n in (feed, schema, table))
        # views, the marts' default (dbt_project.yml); the demo's are enabled by its var
        enabled = "{{ config(enabled=var('cdc_demo', false)) }}\n" if demo else ""
        for suffix, macro in (("", "cdc_typed_current_state"), ("__history", "cdc_typed_history")):
            files[f"{name}{suffix}.sql"] = enabled + f"{{{{ {macro}({arguments}) }}}}\n"
    files[models_yml] = (
        "# Generated by `cdc scaffold` from the catalog seeds; edits are overwritten.\n"
        + yaml.safe_dump(
            {"version": 2, "models": docs}, sort_keys=False, allow_unicode=True, width=100
        )
    )
    return files


def write_typed_models(config: ProjectConfig) -> int:
    """Write the typed model files of ``config``'s catalog (:func:`typed_model_files`).

    The demo's tables are left out (their models are in DEMO_TYPED_MODELS_DIR). Model files
    that exist are kept (hand edits win); ``_tables__models.yml`` is rewritten. Returns how
    many model files were written.
    """
    own = {k: v for k, v in config.catalog.items() if k[0] not in config.demo_feeds}
    return _write_typed_files(config.project_dir, typed_model_files(own, config.spark_types))


def _write_typed_files(project_dir: Path, files: dict[str, str]) -> int:
    """Write typed model ``files`` under the project's TYPED_MODELS_DIR; return the SQL count.

    A model file that exists is kept (hand edits win); the YAML file is always rewritten.
    """
    folder = project_dir / TYPED_MODELS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    written = 0
    for name, text in files.items():
        path = folder / name
        if name.endswith(".sql") and path.exists():
            continue
        _replace_text(path, text)
        written += name.endswith(".sql")
    return written


def _appended_csv(path: Path, header: list[str], rows: list[dict]) -> str:
    """Return the text of the CSV file ``path`` with ``rows`` appended (csv quoting)."""
    import io

    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if not text:
        text = ",".join(header) + "\n"
    elif not text.endswith("\n"):
        text += "\n"
    out = io.StringIO()
    csv.DictWriter(out, fieldnames=header, lineterminator="\n").writerows(rows)
    return text + out.getvalue()


def _replace_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a scratch file and a rename (never half a file)."""
    scratch = path.with_name(f".{path.name}.tmp")
    scratch.write_text(text, encoding="utf-8")
    os.replace(scratch, path)
