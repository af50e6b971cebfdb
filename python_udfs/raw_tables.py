"""The raw tables as Delta Lake tables, written without a JVM (ADR 0018).

Each raw table (``staging.RAW_TABLES``) is a Delta table at ``<lake_root>/raw/<table>``,
partitioned by ``ingest_batch_id``. The staging tasks write a batch's parquet files into the
partition folder ``ingest_batch_id=<batch>`` (as before: pyarrow, one file per table and
task); the driver then commits them, one Delta commit per table (:func:`commit_partition`),
and the manifest ``raw_ingested_files`` last: that commit is the batch's. Files a killed run
wrote but never committed are in no table version, so no reader sees them (``VACUUM`` deletes
them once they are older than its retention). Any Delta reader reads these tables by path,
Spark through the catalog (``macros/register_raw_tables.sql``). The Delta log is read and
written with delta-rs (the ``deltalake`` package): Delta's own protocol, not ours.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

#: The partition column of every raw table: the staging batch that wrote the row.
PARTITION = "ingest_batch_id"


def _delta_schema(schema: pa.Schema) -> pa.Schema:
    """Return a raw table's Arrow schema with its partition column last (a Delta column)."""
    return schema.append(pa.field(PARTITION, pa.string()))


def is_delta(folder: Path) -> bool:
    """Tell whether ``folder`` holds a Delta table (its ``_delta_log`` exists)."""
    return (folder / "_delta_log").is_dir()


def ensure_table(folder: Path, schema: pa.Schema) -> None:
    """Create the Delta table of a raw table at ``folder`` if there is none.

    ``schema`` is the table's columns without the partition (``staging.arrow_schema``). A
    folder of plain parquet partitions that an earlier version wrote (``ingest_batch_id=<id>``
    folders, no Delta log) is converted in place: its committed files become the table's
    first version (delta-rs ``convert_to_deltalake``). Raises OSError when the folder cannot
    be written.
    """
    from deltalake import DeltaTable, convert_to_deltalake

    if is_delta(folder):
        return
    if folder.is_dir() and any(folder.glob(f"{PARTITION}=*/*.parquet")):
        convert_to_deltalake(
            str(folder),
            partition_by=pa.schema([pa.field(PARTITION, pa.string())]),
            partition_strategy="hive",
        )
        return
    folder.mkdir(parents=True, exist_ok=True)
    DeltaTable.create(str(folder), schema=_delta_schema(schema), partition_by=[PARTITION])


def commit_partition(folder: Path, batch_id: str) -> int:
    """Commit the parquet files of partition ``ingest_batch_id=<batch_id>`` to the table.

    One Delta commit (an append) adds every ``*.parquet`` file of the partition folder, with
    its size, modification time and row count (read from the file's footer). Files whose
    name starts with ``_`` (a task's file being written) are left out. Returns the number of
    files added; commits nothing when there are none. Raises OSError for a file that cannot
    be read, and delta-rs's CommitFailedError when the table changed under a conflicting
    commit (another writer; the lake lock prevents one).
    """
    from deltalake import DeltaTable
    from deltalake.transaction import AddAction

    partition = folder / f"{PARTITION}={batch_id}"
    files = sorted(partition.glob("[!_]*.parquet")) if partition.is_dir() else []
    if not files:
        return 0
    actions = []
    for path in files:
        stat = path.stat()
        rows = pq.read_metadata(path).num_rows
        actions.append(
            AddAction(
                path.relative_to(folder).as_posix(),
                stat.st_size,
                {PARTITION: batch_id},
                stat.st_mtime_ns // 1_000_000,
                True,
                json.dumps({"numRecords": rows}),
            )
        )
    table = DeltaTable(str(folder))
    table.create_write_transaction(actions, mode="append", schema=table.schema())
    return len(actions)


def committed_batches(folder: Path) -> list[str]:
    """Return the ``ingest_batch_id`` of every partition of the table's current version.

    Read from the Delta log alone (the files' partition values; no data file is read). Empty
    when ``folder`` holds no Delta table yet.
    """
    from deltalake import DeltaTable

    if not is_delta(folder):
        return []
    actions = pa.table(DeltaTable(str(folder)).get_add_actions(flatten=True))
    return sorted(set(actions.column(f"partition.{PARTITION}").to_pylist()))


def read(folder: Path, batches: Iterable[str] | None = None) -> pa.Table:
    """Read a raw table's current version (with ``ingest_batch_id``) as one Arrow table.

    ``batches`` keeps the rows of those batches only (partition pruning: the other files are
    not opened). Timestamps are microseconds, UTC. Raises delta-rs's TableNotFoundError when
    ``folder`` holds no Delta table.
    """
    import pyarrow.compute as pc
    from deltalake import DeltaTable

    dataset = DeltaTable(str(folder)).to_pyarrow_dataset()
    if batches is None:
        return dataset.to_table()
    return dataset.to_table(filter=pc.field(PARTITION).isin(sorted(batches)))
