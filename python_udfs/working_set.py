"""The run's working set: which ingest batches and records the staging models read (ADR 0007).

``cdc run`` decides it once, after staging and before ``dbt build``, and passes it to dbt in
the environment variable :data:`ENV_VAR` (JSON). The macro ``cdc_working_set`` reads it there
when a staging model or ``int_staged_batches`` compiles, and the ephemeral ``int_working_set``
shows it in dbt's lineage; no model queries another model's table when it compiles (ADR 0020).
A ``dbt build`` without the variable (dbt run by hand, a Thrift Server) reads every batch: the
same change log, since ``int_changes_logged`` appends a change_id once, at the cost of reading
all of history.

Rows are ``[kind, feed, ingest_batch_id, source_file, record_offset]``:

- ``["all", None, None, None, None]``: every batch of every feed: the first run, a
  ``--full-refresh``, or a state table missing;
- ``["all", feed, None, None, None]``: every batch of the feed: a feed of a format whose
  transactions follow file order (GoldenGate, HiRDB, Linkexpress) with a new file that sorts
  before an applied file of the same stream (the file name less a numbered suffix ``.NNN``: a
  HiRDB SQLTXT stream; any other name is a stream of its own), or with a file restaged by
  ``cdc restage`` (manifest status ``restaged``);
- ``["new", None, batch, None, None]``: a committed batch not yet in ``int_staged_batches``;
- ``["from", feed, batch, file, offset]``: the feed's records from the first record of a
  transaction still pending (by file name, then byte offset), in the batches from the earliest
  one holding such a record (``int_changes_pending.transaction_first_record``,
  ``transaction_first_batch_id``), and a GoldenGate feed's records from the last transaction
  start (TransInd 0 or 3) of its latest applied trail file, in the batches from the first that
  read it: that transaction may have no change row yet (a before image whose after image is in
  the file's next part).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from python_udfs.config import ProjectConfig
from python_udfs.staging import SCHEMA_PARTITION

#: The environment variable ``cdc run`` passes the working set in (a JSON array of rows).
ENV_VAR = "CDC_WORKING_SET"

#: Every batch of every feed.
EVERYTHING: list[list[Any]] = [["all", None, None, None, None]]

#: Feed formats whose transactions follow file order: a late file re-reads the feed.
ORDERED_FORMATS = ("goldengate_trail", "hirdb_update_sql", "linkexpress_extract")

#: Columns of the manifest (``raw_ingested_files``) the working set reads.
_MANIFEST_COLUMNS = ["feed", "ingest_batch_id", "source_file", "byte_start", "rows", "status"]
#: A HiRDB stream is ``SQLTXT_<server>_<destination>`` without a numbered suffix.
_NUMBERED_SUFFIX = re.compile(r"\.[0-9]+$")


def compute_working_set(
    spark, config: ProjectConfig, schema: str, full_refresh: bool
) -> list[list]:
    """Return this run's working set rows (module docstring) for dbt schema ``schema``.

    Reads the manifest and the GoldenGate raw table from their parquet folders under
    ``<lake root>/raw`` (this run's new batches are committed but not yet registered in the
    metastore: dbt's ``register_raw_tables`` hook does that), and the state of the last run,
    ``int_staged_batches`` and ``int_changes_pending``, from their tables' folders (the
    metastore gives the folder; Delta tables read with delta-rs, :func:`_read_model`). Every
    batch (:data:`EVERYTHING`) with ``full_refresh``, on the first run, or when a state table
    is missing (a run killed while rewriting it). The files are read with pyarrow, and the decision is made in Python: a few thousand manifest rows
    (one per file and batch) take milliseconds, where the same logic as Spark SQL took 12 s of
    a run's cold JVM and 4 s of a warm one. Raises nothing of its own.
    """
    tables = ("int_staged_batches", "int_changes_pending", "int_changes_logged")
    raw = config.lake_root / "raw"
    if full_refresh or not (raw / "raw_ingested_files").is_dir():
        return EVERYTHING
    if not all(spark.catalog.tableExists(f"{schema}.{t}") for t in tables):
        return EVERYTHING
    files = [
        f
        for f in _read(raw / "raw_ingested_files", _MANIFEST_COLUMNS)
        if f["ingest_batch_id"] != SCHEMA_PARTITION
    ]
    applied = {
        r["ingest_batch_id"]
        for r in _read_model(_location(spark, schema, tables[0]), ["ingest_batch_id"])
    }
    pending = _read_model(
        _location(spark, schema, tables[1]),
        ["feed", "transaction_first_batch_id", "transaction_first_record"],
    )
    formats = {name: feed.format for name, feed in config.feeds.items()}
    new_files = [f for f in files if f["ingest_batch_id"] not in applied]
    applied_files = [f for f in files if f["ingest_batch_id"] in applied]
    rows = [
        ["all", feed, None, None, None] for feed in _late_feeds(new_files, applied_files, formats)
    ]
    rows += [
        ["new", None, b, None, None] for b in sorted({f["ingest_batch_id"] for f in new_files})
    ]
    rows += _pending_rows(pending)
    rows += _trail_rows(raw, applied_files, formats)
    return rows


def _read(folder: Path, columns: list[str]) -> list[dict]:
    """Return the rows of ``columns`` of the parquet table in ``folder`` (:func:`_dataset`)."""
    dataset = _dataset(folder)
    if dataset is None or not dataset.files:  # a table with no file yet
        return []
    return dataset.to_table(columns=columns).to_pylist()


def _read_model(folder: Path, columns: list[str]) -> list[dict]:
    """Return the rows of ``columns`` of a model's table in ``folder`` at its last commit.

    A Delta table (a ``_delta_log`` folder, ADR 0038) is read with delta-rs, which reads only
    the files of its last committed version; a parquet table of an earlier release with
    :func:`_read` (its next run is a ``--full-refresh``, which reads nothing here).
    """
    if not (folder / "_delta_log").is_dir():
        return _read(folder, columns)
    from deltalake import DeltaTable

    return DeltaTable(str(folder)).to_pyarrow_table(columns=columns).to_pylist()


def _dataset(folder: Path):
    """Return the pyarrow dataset of the parquet table in ``folder``, None without the folder.

    Hive-style partition folders give their values as strings (:func:`_string_partitions`);
    files whose names start with ``.`` or ``_`` are left out, as Spark leaves them out.
    """
    import pyarrow.dataset as ds

    if not folder.is_dir():
        return None
    return ds.dataset(folder, format="parquet", partitioning=_string_partitions(folder))


def _string_partitions(folder: Path):
    """Return the Hive partitioning of ``folder`` (``name=value`` folders), every value a string.

    None when the table's files sit in the folder itself.
    """
    import pyarrow as pa
    import pyarrow.dataset as ds

    names, level = [], folder
    while True:
        child = next((c for c in sorted(level.iterdir()) if c.is_dir() and "=" in c.name), None)
        if child is None:
            break
        names.append(child.name.split("=", 1)[0])
        level = child
    if not names:
        return None
    return ds.partitioning(pa.schema([(n, pa.string()) for n in names]), flavor="hive")


def _location(spark, schema: str, table: str) -> Path | None:
    """Return the folder of metastore table ``schema.table``, or None for a view.

    A view has no location (an earlier release's ``history`` is one). Asked of Spark's external
    catalog (the Hive metastore client) directly: ``describe table extended`` gives the same
    Location through the SQL parser and analyser, 1 to 2 s of a cold JVM against 0.2 s.
    """
    entry = spark._jsparkSession.sharedState().externalCatalog().getTable(schema, table)
    if entry.tableType().name() == "VIEW":
        return None
    return Path(entry.location().getPath())


def _late_feeds(new_files: list[dict], applied_files: list[dict], formats: dict) -> list[str]:
    """Return the feeds to read again whole (``all`` rows), sorted.

    An ordered feed (:data:`ORDERED_FORMATS`) with a new file read from its start, not a
    re-delivery, whose name sorts before an applied file of its stream (a HiRDB stream's files
    differ by their numbered suffix); or a feed with a file restaged by ``cdc restage``.
    """
    latest: dict[tuple[str, str], str] = {}  # (feed, stream) -> the last applied file name
    for f in applied_files:
        key = (f["feed"], _stream(f["source_file"]))
        latest[key] = max(latest.get(key, ""), _file_name(f["source_file"]))
    late = {
        f["feed"]
        for f in new_files
        if f["byte_start"] == 0
        and f["status"] not in (None, "duplicate")
        and formats.get(f["feed"]) in ORDERED_FORMATS
        and latest.get((f["feed"], _stream(f["source_file"])), "") > _file_name(f["source_file"])
    }
    late |= {f["feed"] for f in new_files if f["status"] == "restaged"}
    return sorted(late)


def _file_name(source_file: str) -> str:
    return source_file.rsplit("/", 1)[-1]


def _stream(source_file: str) -> str:
    return _NUMBERED_SUFFIX.sub("", _file_name(source_file))


def _pending_rows(pending: list[dict]) -> list[list]:
    """Return a ``from`` row per feed with changes pending, sorted by feed.

    Each row holds the earliest batch and the first record (by file name, then byte offset) of
    the feed's pending transactions, None where no pending change holds one.
    """
    batches: dict[str, list] = {}
    records: dict[str, list] = {}
    for r in pending:
        batches.setdefault(r["feed"], [])
        records.setdefault(r["feed"], [])
        if r["transaction_first_batch_id"] is not None:
            batches[r["feed"]].append(r["transaction_first_batch_id"])
        first = r["transaction_first_record"]
        if first is not None:
            records[r["feed"]].append((first["source_file"], first["record_offset"]))
    rows = []
    for feed in sorted(batches):
        source_file, offset = min(records[feed], key=_nulls_first, default=(None, None))
        rows.append(["from", feed, min(batches[feed], default=None), source_file, offset])
    return rows


def _nulls_first(record: tuple) -> tuple:
    """Sort key of a (source_file, record_offset) pair as Spark orders structs: nulls first."""
    return tuple((value is not None, value) for value in record)


def _trail_rows(raw: Path, applied_files: list[dict], formats: dict) -> list[list]:
    """Return a ``from`` row per GoldenGate feed, sorted by feed.

    From its latest applied trail file's last transaction start (TransInd 0 or 3), in the
    batches from the first that read that file.
    """
    latest: dict[str, str] = {}
    for f in applied_files:
        if (f["rows"] or 0) > 0 and formats.get(f["feed"]) == "goldengate_trail":
            latest[f["feed"]] = max(latest.get(f["feed"], ""), f["source_file"])
    if not latest:
        return []
    trail = _dataset(raw / "raw_goldengate_trail")  # one listing for every GoldenGate feed
    rows = []
    for feed, source_file in sorted(latest.items()):
        batch = min(
            f["ingest_batch_id"]
            for f in applied_files
            if f["feed"] == feed and f["source_file"] == source_file
        )
        rows.append(
            [
                "from",
                feed,
                batch,
                source_file,
                _last_transaction_start(trail, feed, batch, source_file),
            ]
        )
    return rows


def _last_transaction_start(trail, feed: str, batch: str, source_file: str) -> int:
    """Return the last transaction start's record_offset in a GoldenGate trail file.

    The largest record_offset of TransInd 0 or 3 of ``source_file`` in ``trail``, the
    GoldenGate raw table's dataset (:func:`_dataset`), from batch ``batch`` on; 0 when there
    is none.
    """
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    starts = trail.to_table(
        columns=["record_offset"],
        filter=(ds.field("ingest_batch_id") >= batch)
        & (ds.field("feed") == feed)
        & (ds.field("source_file") == source_file)
        & ds.field("trans_ind").isin([0, 3]),
    ).column("record_offset")
    return pc.max(starts).as_py() or 0


def state_watermark(spark, schema: str, full_refresh: bool) -> str | None:
    """Return the apply's watermark for this run, or None to leave it to the build.

    The watermark is the newest ``history_generation`` of the history the previous runs left
    (source ``cdc_state.history``, macro ``cdc_state_watermark``, ADR 0025): every change_log
    row of that generation or before has been merged. ``cdc run`` reads it once, before the
    build and while it holds the lake (nothing merges into history until its own build), and
    passes it in :data:`WATERMARK_ENV_VAR`, so the apply's plans hold a literal where a scalar
    subquery of history stood: Spark evaluates a subquery once per copy of the CTE that holds
    it, and the apply's CTEs are copied into each reader (``int_apply_keys``: 66 Spark jobs with
    the subquery, 27 with the literal, on the demo's lake). ``''`` with ``full_refresh`` or
    when history does not exist yet (the hook ``cdc_prepare_history`` creates it empty). None
    when history is no Delta table (an earlier release's view: the build stops with the fix).
    Read with delta-rs's SQL engine, which applies the deletion vectors history's MERGEs write.
    """
    if full_refresh or not spark.catalog.tableExists(f"{schema}.history"):
        return ""
    folder = _location(spark, schema, "history")
    if folder is None or not (folder / "_delta_log").is_dir():
        return None
    from deltalake import DeltaTable, QueryBuilder

    query = QueryBuilder().register("history", DeltaTable(str(folder)))
    newest = query.execute("select max(history_generation) as newest from history").read_all()
    return newest.column("newest")[0].as_py() or ""


#: The environment variable ``cdc run`` passes the watermark in (:func:`state_watermark`).
WATERMARK_ENV_VAR = "CDC_STATE_WATERMARK"


def to_env(rows: list[list]) -> str:
    """Return the value of :data:`ENV_VAR` for ``rows``: compact JSON, for ``cdc_working_set``."""
    return json.dumps(rows, separators=(",", ":"))
