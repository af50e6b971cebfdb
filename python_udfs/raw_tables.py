"""The raw tables as Delta Lake tables, committed without a JVM (ADR 0038, after ADR 0018).

Each raw table (``staging.RAW_TABLES``) is a Delta table at ``<lake root>/raw/<table>``,
partitioned by ``ingest_batch_id``. The staging tasks write a batch's parquet files into the
partition folder ``ingest_batch_id=<batch>`` as before (pyarrow, one file per table and task),
and the driver writes the manifest's file last: that file commits the batch for the readers
that go by the manifest (``build_state.committed_batches``, the working set, ``cdc stage``
itself). The driver then adds the batch's files to each table's Delta log, one commit per
table and the manifest table last (:func:`commit_batches`). A run killed between the two is
healed by the next ``cdc stage`` or ``cdc run``, which commits every batch the manifest holds
and a log lacks; files of a batch killed before its manifest enter no log, so Spark and any
Delta reader never see them. The log is read and written with delta-rs (the ``deltalake``
package): Delta's own protocol, not ours. Spark reads the tables through the catalog
(``macros/register_raw_tables.sql``), every query at the log's last version: no ``MSCK
REPAIR`` and no ``REFRESH``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

#: The partition column of every raw table: the staging batch that wrote the row.
PARTITION = "ingest_batch_id"


def is_delta(folder: Path) -> bool:
    """Tell whether ``folder`` holds a Delta table (its ``_delta_log`` folder exists)."""
    return (folder / "_delta_log").is_dir()


def ensure_table(folder: Path, schema: pa.Schema) -> None:
    """Create the raw table's Delta log at ``folder``, or add the columns it lacks.

    ``schema`` is the table's columns without the partition (``staging.arrow_schema``). A
    folder of parquet partitions that an earlier release wrote (no Delta log) gets an empty
    table; :func:`commit_batches` then commits its committed batches, and never the files of
    a batch without a manifest. A column this release added (such as
    ``start_write_timestamp``) is added to the table's schema, and the files written before
    read it as null. Raises OSError when the folder cannot be written.
    """
    from deltalake import DeltaTable, Field

    full = schema.append(pa.field(PARTITION, pa.string()))
    if not is_delta(folder):
        folder.mkdir(parents=True, exist_ok=True)
        DeltaTable.create(str(folder), schema=full, partition_by=[PARTITION], mode="ignore")
        return
    table = DeltaTable(str(folder))
    have = {f.name for f in table.schema().fields}
    missing = [f for f in schema if f.name not in have]
    if missing:
        table.alter.add_columns([Field.from_arrow(f) for f in missing])


def logged_batches(folder: Path) -> set[str]:
    """Return the ``ingest_batch_id`` of every partition in the table's last version.

    Read from the Delta log alone (the files' partition values; no data file is read). Empty
    when ``folder`` holds no Delta table yet.
    """
    from deltalake import DeltaTable

    if not is_delta(folder):
        return set()
    actions = pa.table(DeltaTable(str(folder)).get_add_actions(flatten=True))
    if actions.num_rows == 0:
        return set()
    return set(actions.column(f"partition.{PARTITION}").to_pylist())


def commit_batches(folder: Path, batches: Iterable[str]) -> int:
    """Add the parquet files of partitions ``ingest_batch_id=<batch>`` to the table's log.

    One Delta commit (an append) for every batch of ``batches`` the log lacks, each file with
    its size, modification time (milliseconds) and row count (read from its footer). Files
    whose name starts with ``_`` (a task's file being written) are left out, and so is a
    batch with no file (a table with no row of it). Returns the number of files added,
    committing nothing when there are none. Raises OSError for a file that cannot be read,
    and delta-rs's CommitFailedError when another writer committed a conflicting change (the
    lake lock prevents one).
    """
    from deltalake import DeltaTable
    from deltalake.transaction import AddAction

    new = sorted(set(batches) - logged_batches(folder))
    actions = []
    for batch in new:
        partition = folder / f"{PARTITION}={batch}"
        for path in sorted(partition.glob("[!_]*.parquet")) if partition.is_dir() else []:
            stat = path.stat()
            rows = pq.read_metadata(path).num_rows
            actions.append(
                AddAction(
                    path.relative_to(folder).as_posix(),
                    stat.st_size,
                    {PARTITION: batch},
                    stat.st_mtime_ns // 1_000_000,
                    True,
                    json.dumps({"numRecords": rows}),
                )
            )
    if actions:
        table = DeltaTable(str(folder))
        table.create_write_transaction(actions, mode="append", schema=table.schema())
    return len(actions)
