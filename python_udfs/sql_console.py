"""The SQL console of ``cdc``: ``cdc sql`` and ``cdc rejects``.

``cdc sql`` runs Spark SQL statements on the embedded engine and prints their rows as tables
or JSON lines; ``cdc rejects`` lists the open rejects. :func:`rich_console` is the console every
command prints with.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from python_udfs.config import (
    ProjectConfig,
)


def rich_console():
    """Return the rich Console the commands print with.

    Soft-wrapped, no highlighting; 120 columns wide when stdout is not a terminal (a log, CI)
    and COLUMNS is unset.
    """
    from rich.console import Console

    # Not a terminal (a log, CI): wide enough for the summary table, not rich's 80 columns.
    width = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 120
    return Console(highlight=False, soft_wrap=True, width=width)


def sql(config: ProjectConfig, queries: list[str], as_json: bool) -> int:
    """Run Spark SQL statements against the project's lake in order; print each one's rows.

    ``queries`` run one after the other in one SparkSession (one JVM start and one metastore
    opening for all of them, which take most of a short command's 15 to 20 s). With
    ``as_json``, one JSON object per row on stdout (maps as objects, timestamps and decimals as
    text) and nothing else. Otherwise a table per statement on a terminal, and tab-separated
    lines (:func:`tab_separated`) when stdout is a pipe or a file. A statement Spark refuses (a
    syntax error, a table that is not there) prints one line with Spark's error class and
    message on stderr and returns 1; the statements after it do not run, those before it
    stay done. On a lake with no built marts the line says so. Returns 0 when all ran.

    While another process holds the lake (``cdc run``, ``cdc run --every``, a Thrift Server),
    the statements run in a reader session (:func:`_session`): each reads the last committed
    version of every Delta table, without waiting for the run (ADR 0038).
    """
    import logging

    from pyspark.errors import PySparkException

    logging.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)  # the line below says it
    spark = _session(config)
    for query in queries:
        try:
            result = spark.sql(query)
            columns, rows = result.columns, result.collect()
        except PySparkException as exc:
            first = str(exc).strip().splitlines()[0]
            schema = os.environ.get("CDC_DBT_SCHEMA", "cdc")
            if not spark.catalog.databaseExists(schema):
                first += (
                    f" (the lake {config.lake_root} has no schema {schema} yet: `cdc run` "
                    "stages the landing files and builds it; `make demo` builds a demo lake)"
                )
            print(f"cdc sql: {first}", file=sys.stderr)
            return 1
        if as_json:
            for row in rows:
                print(json.dumps(row.asDict(recursive=True), default=str, ensure_ascii=False))
        else:
            print_rows(columns, [tuple(row) for row in rows], f"{len(rows)} row(s)")
    return 0


#: Seconds ``cdc sql`` waits for the metastore server of a process that holds the lake and has
#: not started its JVM yet (a ``cdc run`` starts it while it stages, within seconds).
METASTORE_WAIT_SECONDS = 30.0


def _session(config: ProjectConfig):
    """Return the SparkSession ``cdc sql`` queries with.

    The lake's own engine (:func:`python_udfs.spark.get_spark`, which takes the lake's lock),
    or, while another process holds the lake, a reader session through that process's
    metastore server (:func:`python_udfs.spark.reader_session`; the lock line names its
    port), waiting up to :data:`METASTORE_WAIT_SECONDS` for it to answer. Raises the holder's
    :class:`~python_udfs.spark.LakeInUse` (one line, exit 2) when it serves none: a ``cdc
    stage`` or ``cdc scaffold`` runs no JVM.
    """
    import time

    from python_udfs.spark import LakeInUse, get_spark, held_metastore_port, reader_session

    try:
        return get_spark(config.lake_root)
    except LakeInUse as busy:
        if busy.metastore_port is None:
            raise
        deadline = time.monotonic() + METASTORE_WAIT_SECONDS
        while (port := held_metastore_port(config.lake_root)) is None:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
        return reader_session(config.lake_root, port)


def print_rows(columns: list[str], rows: list[tuple], title: str) -> None:
    """Print rows as a table titled ``title`` on a terminal, else as tab-separated lines.

    Tab-separated lines (:func:`tab_separated`) are the form a pipe or a file wants.
    """
    if not sys.stdout.isatty():
        sys.stdout.write(tab_separated(columns, rows))
        return
    from rich.table import Table

    table = Table(title=title)
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*(_text(v) for v in row))
    rich_console().print(table, markup=False)


def list_rejects(config: ProjectConfig, feed: str | None = None) -> int:
    """Print the open rejects of the lake (of ``feed`` when given); return 0.

    One line each with feed, file, byte offset and length, reason and message, read from the
    raw tables (so right after ``cdc stage``, before any dbt run); a table on a terminal,
    tab-separated lines otherwise (:func:`tab_separated`).
    """
    from python_udfs.spark import get_spark
    from python_udfs.staging import Stager

    stager = Stager(get_spark(config.lake_root), config)
    stager.lake.ensure_tables()
    columns = ["feed", "source_file", "record_offset", "record_length", "reason", "message"]
    rows = [
        tuple(getattr(r, c) for c in columns)
        for r in stager.lake.open_reject_rows()
        if feed is None or r.feed == feed
    ]
    print_rows(columns, rows, f"{len(rows)} open reject(s)")
    return 0


def _text(value: Any) -> str:
    """One value as text: NULL for None; maps, structs and arrays as JSON (other values as text)."""
    if value is None:
        return "NULL"
    if hasattr(value, "asDict"):  # a struct (pyspark Row)
        value = value.asDict(recursive=True)
    if isinstance(value, dict | list | tuple):
        return json.dumps(value, default=str, ensure_ascii=False)
    return str(value)


def tab_separated(columns: list[str], rows: list[tuple]) -> str:
    r"""Format rows for ``cdc sql`` on a pipe or a file: tab-separated lines.

    A header line of column names, then one line per row, fields separated by tabs (what ``cut``,
    ``sort`` and ``psql -A`` users expect). NULL is written ``NULL``; maps, structs and arrays as
    JSON; a tab, newline, carriage return or backslash inside a value as ``\t``, ``\n``,
    ``\r``, ``\\``, so that every row stays on one line. Returns the text, ending with a
    newline.
    """

    def field(value: Any) -> str:
        text = _text(value)
        return (
            text.replace("\\", "\\\\")
            .replace("\t", "\\t")
            .replace("\n", "\\n")
            .replace("\r", "\\r")
        )

    lines = ["\t".join(columns)] + ["\t".join(field(v) for v in row) for row in rows]
    return "\n".join(lines) + "\n"
