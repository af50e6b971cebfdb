"""Staging: decode new landing files into the raw Delta tables (DESIGN.md §4, ADR 0038).

One run of :meth:`Stager.stage` is one *ingest batch* (id ``YYYYMMDDTHHMMSSffffff``, UTC):

1. list every feed's landing folder on the driver and compare with the manifest
   ``raw_ingested_files``: files already ingested (same size and modification time) are skipped
   without reading; new files are read from byte 0; files that grew are read from where the
   last run stopped, after checking that the SHA-256 of the ingested prefix is unchanged
   (:mod:`.landing`);
2. for formats with a metadata pass (``FeedFormat.scan_metadata``: Kafka MD messages), a first
   pass collects the batch's metadata, so that data messages can be resolved whatever file
   order they arrive in;
3. the candidate files are spread over tasks that run the pure-Python decoders in parallel
   (:mod:`.workers`): in worker processes on a local master (ADR 0031; no JVM), as one Spark
   job on a cluster's, and in this process for a small batch; each task reads its files from
   the landing folder itself, decodes them (:mod:`.decode`) and writes its rows with pyarrow,
   once, as partition ``ingest_batch_id=<id>`` of the format's raw table, ``raw_rejects`` and
   ``raw_metadata`` (:mod:`.write`); only the manifest rows come back to the driver;
4. the driver writes the manifest rows **last**, in one file moved into place by a rename
   (the batch's commit), then adds the batch's files to each table's Delta log, the
   manifest's last (:mod:`.lake`, :mod:`python_udfs.raw_tables`). A batch without manifest
   rows (a run killed half way) enters no log and is ignored by the working set, so a re-run
   ingests those files again without duplicates; a batch whose logs a kill left behind is
   committed to them by the next run (:meth:`RawLake.ensure_tables`).

The modules, one job each: :mod:`.schemas` (raw table schemas, candidates, the summary),
:mod:`.landing`, :mod:`.decode`, :mod:`.write`, :mod:`.workers`, :mod:`.lake` (the raw tables
on disk) and :mod:`.batch` (:class:`Stager`, the batch's named steps).

Tables live under ``<lake_root>/raw/<table>/`` as Delta tables partitioned by
``ingest_batch_id`` (Hive-style folders); the dbt macro ``register_raw_tables`` registers them
as external tables.
"""

from python_udfs.staging.batch import Stager
from python_udfs.staging.decode import decode_candidate, file_outputs, file_tables
from python_udfs.staging.lake import RawLake
from python_udfs.staging.landing import GZIP_CHUNK_BYTES, gunzip_file, list_landing_files
from python_udfs.staging.schemas import (
    RAW_TABLES,
    SCHEMA_PARTITION,
    Candidate,
    StageSummary,
    arrow_schema,
    fallback_reason,
    metadata_from_row,
    written_schema,
)
from python_udfs.staging.workers import run_on_spark, task_groups
from python_udfs.staging.write import make_metadata_udf, make_write_udf

__all__ = [
    "GZIP_CHUNK_BYTES",
    "RAW_TABLES",
    "SCHEMA_PARTITION",
    "Candidate",
    "RawLake",
    "StageSummary",
    "Stager",
    "arrow_schema",
    "decode_candidate",
    "fallback_reason",
    "file_outputs",
    "file_tables",
    "gunzip_file",
    "list_landing_files",
    "make_metadata_udf",
    "make_write_udf",
    "metadata_from_row",
    "run_on_spark",
    "task_groups",
    "written_schema",
]
