"""The run's working set: which ingest batches and records the staging models read (ADR 0007).

``cdc run`` decides it once, after staging and before ``dbt build``, and passes it to dbt in
the environment variable :data:`ENV_VAR` (JSON). The macro ``cdc_working_set`` reads it there
when a staging model or ``int_staged_batches`` compiles, and ``int_working_set`` records it in
the lake; no model queries another model's table when it compiles (ADR 0020). A ``dbt build``
without the variable (dbt run by hand, a Thrift Server) reads every batch: the same change log,
since ``int_changes_logged`` appends a change_id once, at the cost of reading all of history.

Rows are ``[kind, feed, ingest_batch_id, source_file, record_offset]``:

- ``["all", None, None, None, None]``: every batch of every feed: the first run, a
  ``--full-refresh``, or a state table missing;
- ``["all", feed, None, None, None]``: every batch of the feed: a feed whose new files sort
  before files already applied (a late file of a GoldenGate trail, a HiRDB SQLTXT stream or a
  Linkexpress feed, whose transactions follow file order), or with a file restaged by
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
from typing import Any

from python_udfs.config import ProjectConfig
from python_udfs.staging import SCHEMA_PARTITION

#: The environment variable ``cdc run`` passes the working set in (a JSON array of rows).
ENV_VAR = "CDC_WORKING_SET"

#: Every batch of every feed.
EVERYTHING: list[list[Any]] = [["all", None, None, None, None]]

#: Feed formats whose transactions follow file order: a late file re-reads the feed.
ORDERED_FORMATS = ("goldengate_trail", "hirdb_update_sql", "linkexpress_extract")

_QUERY = r"""
with

files as (
    select
        feed, ingest_batch_id, source_file, byte_start, rows, status,
        regexp_extract(source_file, '[^/]+$', 0) as file_name
    from cdc_ws_ingested_files
),

applied as (
    select distinct ingest_batch_id from cdc_ws_staged_batches
),

new_batches as (
    select distinct files.ingest_batch_id
    from files
    left anti join applied on files.ingest_batch_id = applied.ingest_batch_id
),

applied_files as (
    select files.* from files
    left semi join applied on files.ingest_batch_id = applied.ingest_batch_id
),

new_files as (
    select files.* from files
    left semi join new_batches on files.ingest_batch_id = new_batches.ingest_batch_id
),

late_feeds as (
    select distinct new_files.feed
    from new_files
    inner join applied_files
        on
            new_files.feed = applied_files.feed
            -- a HiRDB stream is SQLTXT_<server>_<destination> without a numbered suffix
            and regexp_replace(new_files.file_name, '\\.[0-9]+$', '')
            = regexp_replace(applied_files.file_name, '\\.[0-9]+$', '')
    where
        new_files.byte_start = 0
        and new_files.status != 'duplicate'  -- a re-delivery is not read
        and applied_files.file_name > new_files.file_name
        and new_files.feed in (select feed from cdc_ws_feeds where is_ordered)
    union
    -- records of a file decoded again by `cdc restage` sit among applied ones
    select feed from new_files where status = 'restaged'
),

pending_from as (
    select
        feed,
        min(transaction_first_batch_id) as first_batch_id,
        min(transaction_first_record) as first_record
    from cdc_ws_pending
    group by feed
),

latest_trail_files as (
    select feed, max(source_file) as source_file
    from applied_files
    where rows > 0 and feed in (select feed from cdc_ws_feeds where is_trail)
    group by feed
),

latest_trail_batches as (
    select applied_files.feed, applied_files.source_file, min(applied_files.ingest_batch_id) as first_batch_id
    from applied_files
    inner join latest_trail_files
        on applied_files.feed = latest_trail_files.feed and applied_files.source_file = latest_trail_files.source_file
    group by applied_files.feed, applied_files.source_file
)

select 'all' as kind, feed, null as ingest_batch_id, null as source_file, null as record_offset
from late_feeds
union all
select 'new', null, ingest_batch_id, null, null from new_batches
union all
select 'from', feed, first_batch_id, first_record.source_file, first_record.record_offset
from pending_from
union all
select 'trail', feed, first_batch_id, source_file, null from latest_trail_batches
"""


def compute_working_set(
    spark, config: ProjectConfig, schema: str, full_refresh: bool
) -> list[list]:
    """Return this run's working set rows (module docstring) for dbt schema ``schema``.

    Reads the manifest and the GoldenGate raw table from their parquet folders under
    ``<lake root>/raw`` (this run's new batches are committed but not yet registered in the
    metastore: dbt's ``register_raw_tables`` hook does that), and the state of the last run,
    ``int_staged_batches`` and ``int_changes_pending``, from the metastore. Every batch
    (:data:`EVERYTHING`) with ``full_refresh``, on the first run, or when a state table is
    missing (a run killed while rewriting it). A few small Spark jobs; raises nothing of its own.
    """
    state = [
        f"{schema}.{t}" for t in ("int_staged_batches", "int_changes_pending", "int_changes_logged")
    ]
    raw = config.lake_root / "raw"
    if full_refresh or not (raw / "raw_ingested_files").is_dir():
        return EVERYTHING
    if not all(spark.catalog.tableExists(t) for t in state):
        return EVERYTHING
    reader = spark.read.option("mergeSchema", "false")
    manifest = reader.parquet(str(raw / "raw_ingested_files"))
    manifest.where(manifest.ingest_batch_id != SCHEMA_PARTITION).createOrReplaceTempView(
        "cdc_ws_ingested_files"
    )
    spark.table(state[0]).createOrReplaceTempView("cdc_ws_staged_batches")
    spark.table(state[1]).createOrReplaceTempView("cdc_ws_pending")
    feeds = [
        (n, f.format in ORDERED_FORMATS, f.format == "goldengate_trail")
        for n, f in config.feeds.items()
    ]
    spark.createDataFrame(
        feeds, "feed string, is_ordered boolean, is_trail boolean"
    ).createOrReplaceTempView("cdc_ws_feeds")
    rows, trail = [], None
    for kind, feed, batch, source_file, offset in spark.sql(_QUERY).collect():
        if kind == "trail":  # from the last transaction start of the trail's latest file
            if trail is None:  # one listing of the raw table for every GoldenGate feed
                trail = reader.parquet(str(raw / "raw_goldengate_trail"))
            start = (
                trail.where(
                    (trail.feed == feed)
                    & (trail.ingest_batch_id >= batch)
                    & (trail.source_file == source_file)
                    & trail.trans_ind.isin(0, 3)
                )
                .agg({"record_offset": "max"})
                .first()[0]
            )
            kind, offset = "from", start or 0
        rows.append([kind, feed, batch, source_file, offset])
    return rows


def to_env(rows: list[list]) -> str:
    """Return the value of :data:`ENV_VAR` for ``rows``: compact JSON, for ``cdc_working_set``."""
    return json.dumps(rows, separators=(",", ":"))
