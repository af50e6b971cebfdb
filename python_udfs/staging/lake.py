"""The raw tables on disk: their Delta logs, the manifest, metadata and open rejects.

:class:`RawLake` is what staging reads of the lake and how it commits a batch: every raw table
(:data:`~python_udfs.staging.schemas.RAW_TABLES`) is a Delta table at
``<lake root>/raw/<table>``, partitioned by ``ingest_batch_id``. The manifest, metadata and
batch list are read with pyarrow from the partition folders (no Spark job: ``cdc stage``
starts no JVM); only the reject listings query the tables with Spark. Delta commits are made
with delta-rs (:mod:`python_udfs.raw_tables`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from python_udfs import build_state, raw_tables
from python_udfs.records import MetadataColumn
from python_udfs.registry import FORMATS
from python_udfs.staging.decode import conform
from python_udfs.staging.schemas import (
    NOT_RESTAGED_REASONS,
    RAW_TABLES,
    RESTAGED,
    SCHEMA_PARTITION,
    UNIX_EPOCH,
    arrow_schema,
    metadata_from_row,
)
from python_udfs.staging.write import stamped, write_file_in_place


class RawLake:
    """The raw tables of one lake, as staging reads and commits them."""

    def __init__(self, lake_root: Path, spark: Callable[[], Any]) -> None:
        """Read the raw tables under ``lake_root / "raw"``.

        ``spark`` returns a SparkSession (started on first use), for the reject listings and
        :meth:`read_table` only.
        """
        self.lake_root = lake_root
        self.raw_root = lake_root / "raw"
        self.spark = spark

    def _table_path(self, table: str) -> Path:
        return self.raw_root / table

    def ensure_tables(self) -> None:
        """Give every raw table its Delta log, with this release's columns and every batch.

        Each table's log is created (or given the columns this release added) by
        :func:`raw_tables.ensure_table`, with delta-rs (no Spark job), so a table has its
        schema before it has data. Then every committed batch (the manifest's files) that a
        log lacks is committed to it, the manifest's log last (:meth:`commit_batches`): this
        heals a run killed between its manifest and its Delta commits, and brings the raw
        folders of an earlier release's lake into their logs.
        """
        for table in RAW_TABLES:
            raw_tables.ensure_table(self._table_path(table), arrow_schema(table))
        self.commit_batches(self.committed_batches())

    def commit_batches(self, batches: set[str]) -> None:
        """Commit the files of ``batches`` to each raw table's Delta log, the manifest's last.

        One Delta commit per table that lacks one of them (:func:`raw_tables.commit_batches`);
        none when every log holds them. ``batches`` are committed batches (their manifest
        files written), so no reader of the logs sees a batch the manifest does not hold.
        """
        for table in [t for t in RAW_TABLES if t != "raw_ingested_files"] + ["raw_ingested_files"]:
            raw_tables.commit_batches(self._table_path(table), batches)

    def committed_batches(self) -> set[str]:
        """Return the ids of batches whose manifest rows were written (committed batches).

        Read from the manifest's partition folders (:func:`build_state.committed_batches`, no
        Spark job), without the schema partition.
        """
        return set(build_state.committed_batches(self.lake_root)) - {SCHEMA_PARTITION}

    def read_table(self, table: str):
        """Return a raw table as a DataFrame of its Delta table's last version (all batches)."""
        return self.spark().read.format("delta").load(str(self._table_path(table)))

    def manifest(self) -> dict[tuple[str, str], dict[str, Any]]:
        """Return the latest manifest row of every ``(feed, source_file)`` (restages aside).

        Read with pyarrow from the committed batches' partition folders on the driver (a few
        rows per ingested file; no Spark job). Each row also holds ``ingest_batch_id`` and
        ``mtime_us`` (the file's modification time in microseconds since 1970, UTC);
        timestamps are aware UTC datetimes.
        """
        latest: dict[tuple[str, str], dict[str, Any]] = {}
        # a later batch replaces an earlier row
        for batch, table in self._batch_tables("raw_ingested_files", self.committed_batches()):
            for i, field_ in enumerate(table.schema):
                if pa.types.is_timestamp(field_.type):
                    utc = pa.timestamp("us", tz="UTC")
                    table = table.set_column(i, field_.name, table.column(i).cast(utc))
            for row in table.to_pylist():
                if row["status"] == RESTAGED:
                    continue
                mtime = row["modification_time"]
                row["ingest_batch_id"] = batch
                row["mtime_us"] = (mtime - UNIX_EPOCH) // dt.timedelta(microseconds=1)
                latest[(row["feed"], row["source_file"])] = row
        return latest

    def _batch_tables(self, table: str, batches: set[str]) -> Iterator[tuple[str, pa.Table]]:
        """Yield ``(batch, pyarrow table)`` of each parquet file of raw ``table``'s ``batches``.

        In batch order, then file name order; read with pyarrow on the driver (no Spark job).
        """
        import pyarrow.parquet as pq

        folder = self._table_path(table)
        for batch in sorted(batches):
            for path in sorted((folder / f"ingest_batch_id={batch}").glob("*.parquet")):
                yield batch, pq.read_table(path)

    def metadata_rows(self, batches: set[str]) -> list[dict[str, Any]]:
        """Return the ``raw_metadata`` rows of the committed ``batches`` as dicts.

        Read with pyarrow from the batches' partition folders, in batch order (no Spark job:
        ``cdc stage`` starts no JVM). Each row also holds its ``ingest_batch_id``; a column
        an earlier release did not write is missing from its rows.
        """
        return [
            dict(row, ingest_batch_id=batch)
            for batch, table in self._batch_tables("raw_metadata", batches)
            for row in table.to_pylist()
        ]

    def known_metadata(self, batches: set[str]) -> list[tuple[MetadataColumn, str]]:
        """Return ``(column, feed)`` for the columns a metadata pass found in committed batches.

        These are the rows of each format's :attr:`FeedFormat.scanned_metadata_source` (Kafka
        MD messages), which data records of later batches refer to.
        """
        sources = {f.scanned_metadata_source for f in FORMATS.values() if f.scan_metadata}
        return [
            (metadata_from_row(r), r["feed"])
            for r in self.metadata_rows(batches)
            if r["metadata_source"] in sources
        ]

    def write_manifest(self, batch_id: str, manifest: pa.Table, ingested_at) -> None:
        """Write batch ``batch_id``'s manifest rows: the commit of the batch.

        One parquet file, written under a ``_``-prefixed temporary name and renamed into
        ``raw_ingested_files/ingest_batch_id=<batch_id>/``, so a kill leaves all of the
        batch's manifest rows or none (readers skip ``_`` files; ``build_state`` counts a
        batch committed once its folder holds a ``.parquet`` file).
        """
        manifest = stamped(conform(manifest, arrow_schema("raw_ingested_files")), ingested_at)
        folder = self._table_path("raw_ingested_files") / f"ingest_batch_id={batch_id}"
        write_file_in_place(manifest, folder, "part-00000-manifest.parquet")

    def open_reject_rows(self) -> list:
        """Return the open rejects of committed batches as Spark rows, by feed, file, offset.

        Columns: ``feed, source_file, reason, record_offset, record_length, message``.

        A reject is open until a later batch restaged its file over its offset (a manifest row
        of status :data:`RESTAGED` whose ``[byte_start, byte_end)`` holds it). Reads the raw
        tables only: it works right after ``cdc stage``, before any dbt run.
        """
        rejects = self.read_table("raw_rejects").where(f"ingest_batch_id != '{SCHEMA_PARTITION}'")
        files = self.read_table("raw_ingested_files").where(
            f"ingest_batch_id != '{SCHEMA_PARTITION}'"
        )
        rejects.createOrReplaceTempView("cdc_open_rejects")
        files.createOrReplaceTempView("cdc_open_files")
        return (
            self.spark()
            .sql(
                """
            select r.feed, r.source_file, r.reason, r.record_offset, r.record_length, r.message
            from cdc_open_rejects as r
            left semi join (select distinct ingest_batch_id from cdc_open_files) as c
                on r.ingest_batch_id = c.ingest_batch_id
            left anti join cdc_open_files as m
                on
                    m.feed = r.feed and m.source_file = r.source_file
                    and m.status = 'restaged' and m.ingest_batch_id > r.ingest_batch_id
                    and m.byte_start <= r.record_offset and r.record_offset < m.byte_end
            order by r.feed, r.source_file, r.record_offset
            """
            )
            .collect()
        )

    def open_rejects(
        self, feed: str | None = None, reason: str | None = None
    ) -> dict[tuple[str, str], list[tuple[int, int]]]:
        """Return the open rejects of committed batches: ``(feed, source_file)`` → byte ranges.

        Open rejects as :meth:`open_reject_rows` reads them. Only files with
        an open reject of ``feed`` and of ``reason`` (when given) are returned, each with all
        its open ranges (``(offset, offset + length)``); rejects of refused files
        (:data:`NOT_RESTAGED_REASONS`) are left out.
        """
        rows = self.open_reject_rows()
        ranges: dict[tuple[str, str], list[tuple[int, int]]] = {}
        wanted: set[tuple[str, str]] = set()
        for row in rows:
            if row.reason in NOT_RESTAGED_REASONS:
                continue
            key = (row.feed, row.source_file)
            ranges.setdefault(key, []).append(
                (row.record_offset, row.record_offset + (row.record_length or 0))
            )
            if (feed is None or row.feed == feed) and (reason is None or row.reason == reason):
                wanted.add(key)
        return {key: sorted(ranges[key]) for key in sorted(wanted)}
