"""The batch's raw table files, written by the tasks themselves.

:func:`make_write_udf` is the decode-and-write task function (:func:`write_files`): each task
decodes its files and appends their rows to one parquet file per raw table of the batch's
partition (:class:`_BatchFiles`, :func:`parquet_options`), moved into place by a rename
(:func:`write_file_in_place`). :func:`make_metadata_udf` is the metadata pass
(:func:`scan_files`).
"""

from __future__ import annotations

import collections
import datetime as dt
import functools
import hashlib
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pyarrow as pa

from python_udfs.feed_format import (
    TS,
)
from python_udfs.registry import FORMATS
from python_udfs.staging.decode import file_tables
from python_udfs.staging.landing import Gunzipped, candidate_bytes
from python_udfs.staging.schemas import RAW_ROW_GROUP_BYTES, RAW_TABLES, written_schema


def stamped(table: pa.Table, ingested_at: dt.datetime) -> pa.Table:
    """Return ``table`` (a raw table's schema) with every row's ``ingested_at`` set."""
    stamp = pa.repeat(pa.scalar(ingested_at, TS), table.num_rows)
    return table.set_column(table.schema.get_field_index("ingested_at"), "ingested_at", stamp)


def write_file_in_place(table: pa.Table, folder: Path, name: str) -> None:
    """Write ``table`` as ``folder/name``, whole or not at all.

    It is written as ``_<name>.tmp`` first (a name Spark and pyarrow skip), then renamed.
    """
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    temporary = folder / f"_{name}.tmp"
    pq.write_table(table, temporary, **parquet_options(table.schema))
    os.replace(temporary, folder / name)


def parquet_options(schema: pa.Schema) -> dict[str, Any]:
    """Return the pyarrow parquet writer options of a raw table of ``schema``.

    Snappy pages. Column statistics only for the columns that are not nested (Spark pushes no
    filter into a map or list column), dictionary pages only for the text columns that are not
    nested (an operation, a table name; not positions and counters, whose values seldom repeat).
    The data images' dictionaries cost a fifth of the write time of a Kafka dump's rows for a
    tenth of the file's size.
    """
    flat = [f.name for f in schema if not pa.types.is_nested(f.type)]
    text = [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_binary(f.type)]
    return {"compression": "snappy", "use_dictionary": text, "write_statistics": flat}


class _BatchFiles:
    """The parquet files one staging task writes into this batch's partition of each raw table.

    One file per raw table per task, named from the task's first file (the same name when
    Spark runs the task again, so a retry replaces what a failed attempt wrote), written under
    a ``_``-prefixed temporary name that readers skip (Spark, pyarrow) and renamed into place
    by :meth:`close`. Row groups of about :data:`RAW_ROW_GROUP_BYTES` (in Arrow bytes).
    """

    def __init__(self, raw_root: str, batch_id: str, ingested_at: dt.datetime) -> None:
        self.raw_root, self.batch_id, self.ingested_at = Path(raw_root), batch_id, ingested_at
        self.name: str | None = None
        self.writers: dict[str, Any] = {}
        self.pending: dict[str, list[pa.Table]] = {}
        self.pending_bytes: collections.Counter = collections.Counter()

    def _path(self, table: str, temporary: bool) -> Path:
        folder = self.raw_root / table / f"ingest_batch_id={self.batch_id}"
        return folder / (f"_{self.name}.parquet.tmp" if temporary else f"{self.name}.parquet")

    def add(self, key: str, table_name: str, table: pa.Table) -> None:
        """Append ``table``'s rows (``table_name``'s schema) to this task's file of the table."""
        import pyarrow.parquet as pq

        if self.name is None:
            self.name = "part-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]
        table = stamped(table, self.ingested_at)
        if table_name not in self.writers:
            path = self._path(table_name, temporary=True)
            path.parent.mkdir(parents=True, exist_ok=True)
            options = parquet_options(table.schema)
            self.writers[table_name] = pq.ParquetWriter(path, table.schema, **options)
        self.pending.setdefault(table_name, []).append(table)
        self.pending_bytes[table_name] += table.nbytes
        if self.pending_bytes[table_name] >= RAW_ROW_GROUP_BYTES:
            self._flush(table_name)

    def _flush(self, table_name: str) -> None:
        self.pending_bytes[table_name] = 0
        pending = self.pending.pop(table_name, [])
        if pending:
            table = pa.concat_tables(pending)
            self.writers[table_name].write_table(table, row_group_size=table.num_rows)

    def close(self) -> None:
        """Write what is buffered and move every file into place (a rename each)."""
        for table_name, writer in self.writers.items():
            self._flush(table_name)
            writer.close()
            os.replace(self._path(table_name, True), self._path(table_name, False))


def make_write_udf(
    contexts: Mapping[str, Mapping[str, Any]], raw_root: str, batch_id: str, ingested_at
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """Return the task function of the decode-and-write pass (:func:`write_files`, bound).

    A ``functools.partial`` of a module-level function, which the worker processes
    (:func:`~python_udfs.workers.run_in_processes`) and Spark's tasks (:func:`run_on_spark`)
    receive pickled.
    """
    return functools.partial(write_files, contexts, raw_root, batch_id, ingested_at)


def write_files(
    contexts: Mapping[str, Mapping[str, Any]],
    raw_root: str,
    batch_id: str,
    ingested_at,
    batches: Iterator[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """Decode and write one task's files: the decode-and-write pass.

    Candidate rows in (Arrow batches of :class:`Candidate` fields), sorted by feed, file and
    start within the task: each file is read (:func:`candidate_bytes`) and decoded
    (:func:`file_tables`), and its rows of every raw table but the manifest are written by the
    task itself into batch ``batch_id``'s partition of the table under ``raw_root``
    (:class:`_BatchFiles`), once; out comes one row per file (:func:`written_schema`): its
    manifest row and its rejects by reason, which the driver writes as the manifest after
    every task finished (the batch's commit). ``ingested_at`` is an aware UTC datetime.
    Raises OSError when a file cannot be read or written (the batch fails; the next run plans
    again).
    """
    schema = written_schema()
    files = _BatchFiles(raw_root, batch_id, ingested_at)
    for batch in batches:
        out = []
        for record in batch.to_pylist():
            tables = file_tables(record, candidate_bytes(record), contexts[record["feed"]])
            key = f"{record['feed']}\0{record['source_file']}\0{record['start']}"
            for table_name, table in tables.items():
                if table_name != "raw_ingested_files":
                    files.add(key, table_name, table)
            reasons = collections.Counter(
                tables["raw_rejects"].column("reason").to_pylist()
                if "raw_rejects" in tables
                else []
            )
            manifest = tables["raw_ingested_files"].to_pylist()[0]
            out.append({"raw_ingested_files": manifest, "reject_reasons": list(reasons.items())})
        if out:
            yield pa.RecordBatch.from_pylist(out, schema=schema)
    files.close()


def make_metadata_udf() -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """Return the task function of the metadata pass (:func:`scan_files`)."""
    return scan_files


def scan_files(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Scan one task's files for metadata: the metadata pass.

    Candidate rows in (Arrow batches of :class:`Candidate` fields) → ``raw_metadata`` rows of
    the columns each format's :attr:`FeedFormat.scan_metadata` finds (Kafka MD messages) in
    the file (:func:`candidate_bytes`). Raises OSError when a file cannot be read.
    """
    schema = pa.schema(RAW_TABLES["raw_metadata"])
    for batch in batches:
        for record in batch.to_pylist():
            content = candidate_bytes(record)
            columns = FORMATS[record["format"]].scan_metadata(
                content.data if isinstance(content, Gunzipped) else content,
                record["source_file"],
                record["start"],
            )
            rows = [
                dict(asdict(c), feed=record["feed"], source_file=record["source_file"])
                for c in columns
            ]
            if rows:
                yield pa.RecordBatch.from_pylist(rows, schema=schema)
