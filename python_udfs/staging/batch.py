"""One staging batch: plan, decode and write in tasks, commit, report (:class:`Stager`).

The steps of :meth:`Stager.stage` (DESIGN.md §4, ADR 0038) and where each lives:

1. plan: list the landing files against the manifest (:func:`landing.plan`);
2. scan: a metadata pass over the batch's files, for the formats with one (Kafka MD
   messages, :func:`write.make_metadata_udf`);
3. decode and write: the tasks (:class:`workers.Tasks`) decode their files
   (:mod:`~python_udfs.staging.decode`) and write the batch's raw table files themselves
   (:func:`write.make_write_udf`); only the manifest rows come back;
4. commit: the manifest rows last, then the Delta logs (:meth:`RawLake.write_manifest`,
   :meth:`RawLake.commit_batches`);
5. report: the summary counts and prints per feed (:meth:`StageSummary.add`,
   :meth:`StageSummary.report`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

from python_udfs.config import ConfigError, ProjectConfig
from python_udfs.feed_format import FeedFormat
from python_udfs.records import MetadataColumn
from python_udfs.registry import FORMATS
from python_udfs.staging import landing
from python_udfs.staging.decode import decode_candidate
from python_udfs.staging.lake import RawLake
from python_udfs.staging.schemas import (
    RAW_SORT_ORDER,
    RAW_TABLES,
    Candidate,
    StageSummary,
    metadata_from_row,
    new_batch_id,
    written_schema,
)
from python_udfs.staging.workers import Tasks
from python_udfs.staging.write import make_metadata_udf, make_write_udf
from python_udfs.workers import start_worker_server


class Stager:
    """Runs staging batches for one project.

    A batch needs no SparkSession: it reads the manifest and metadata with pyarrow and decodes
    in worker processes (:func:`~python_udfs.workers.run_in_processes`). ``cdc restage`` and
    the reject listings (:attr:`lake`) query the raw tables with Spark.
    """

    def __init__(
        self,
        spark,
        config: ProjectConfig,
        log: Callable[[str], None] = print,
        detail: Callable[[str], None] | None = None,
    ) -> None:
        """Stage ``config``'s feeds; ``spark`` (a SparkSession, or None for staging alone) reads.

        ``log`` prints a few lines per batch and feed; ``detail`` one line per file (by default
        ``log`` too; ``cdc run`` and ``cdc demo`` print them with ``--verbose``).
        """
        self.spark = spark
        self.config = config
        self.log = log
        self.detail = log if detail is None else detail
        self._contexts: dict[str, dict[str, Any]] | None = None
        #: The raw tables: the manifest, metadata, Delta commits and open rejects.
        self.lake = RawLake(config.lake_root, self._spark_session)

    def _spark_session(self):
        """Return the Stager's SparkSession, starting one when it was given none."""
        if self.spark is None:
            from python_udfs.spark import get_spark

            self.spark = get_spark(self.config.lake_root)
        return self.spark

    def plan(self, manifest, summary: StageSummary) -> list[Candidate]:
        """List the landing files against ``manifest`` (:func:`landing.plan`)."""
        return landing.plan(self.config, manifest, summary, self.log, self._applied_when_repeated)

    def _applied_when_repeated(self, feed: str, fmt: FeedFormat, path: Path) -> bool:
        """Tell whether a re-delivered file is applied all the same.

        :attr:`FeedFormat.applied_when_repeated` of its decoded records (a Linkexpress file of
        truncates only).
        """
        if fmt.applied_when_repeated is None:
            return False
        if self._contexts is None:  # built once: it reads every feed's catalog
            self._contexts = self.contexts([])
        result = decode_candidate(
            fmt.name,
            path.read_bytes(),
            path.relative_to(self.config.landing_root).as_posix(),
            0,
            0,
            fmt.sidecar(path),
            self._contexts[feed],
            True,
        )
        return fmt.applied_when_repeated(result)

    def contexts(
        self, scanned_metadata: list[tuple[MetadataColumn, str]]
    ) -> dict[str, dict[str, Any]]:
        """Build each feed's decoder context.

        ``options``, ``catalog`` (the feed's seed rows) and what its format's
        :attr:`FeedFormat.decoder_context` adds from the configuration and
        ``scanned_metadata`` (``(column, feed)`` of a metadata pass).

        Raises :class:`ConfigError` for a file a feed's options name that does not read.
        """
        out: dict[str, dict[str, Any]] = {}
        by_feed: dict[str, list[MetadataColumn]] = {}
        for col, feed in scanned_metadata:
            by_feed.setdefault(feed, []).append(col)
        for feed in self.config.feeds.values():
            catalog = self.config.feed_catalog(feed.name)
            context: dict[str, Any] = {"options": dict(feed.options), "catalog": catalog}
            context.update(
                FORMATS[feed.format].decoder_context(
                    feed, self.config, catalog, by_feed.get(feed.name, [])
                )
            )
            out[feed.name] = context
        return out

    # -- running --------------------------------------------------------------------------
    def stage(self) -> StageSummary:
        """Run one ingest batch over every feed; return what it did."""
        batch_id = new_batch_id()
        summary = StageSummary(batch_id)
        committed = self.lake.committed_batches()
        self.log(f"staging batch {batch_id}")
        candidates = self.plan(self.lake.manifest(), summary)
        tasks = (
            Tasks(candidates, self.config.lake_root, self._spark_session) if candidates else None
        )
        if tasks is not None and tasks.processes and not tasks.in_process:
            start_worker_server()  # its imports run while this process goes on
        self.lake.ensure_tables()
        if tasks is None:
            self.log("  nothing new to ingest")
            return summary
        return self._commit_batch(summary, tasks, committed)

    def restage(self, feed: str | None = None, reason: str | None = None) -> StageSummary:
        """Decode the open rejects again (``cdc restage``), in a new ingest batch.

        For example after a table was declared in the seeds. Each file with an open reject
        (:meth:`RawLake.open_rejects`, filtered by ``feed`` and ``reason``) is decoded from byte 0 to
        where the last staging run stopped, with today's catalog and options; the records at
        the offsets of its open rejects land (or are rejected again), all others landed before
        and are dropped. Its manifest row has status :data:`RESTAGED` and says how many
        records landed; planning ignores it (:meth:`RawLake.manifest`). The dbt working set reads the
        feed whole again (python_udfs/working_set.py), so the records are applied in change
        position order. Raises :class:`ConfigError` for an unknown ``feed``.
        """
        if feed is not None and feed not in self.config.feeds:
            raise ConfigError(
                f"cdc restage --feed {feed}: no such feed in vars.cdc_feeds of "
                f"{self.config.project_dir / 'dbt_project.yml'} (feeds: "
                f"{', '.join(sorted(self.config.feeds))})."
            )
        batch_id = new_batch_id()
        summary = StageSummary(batch_id)
        self.lake.ensure_tables()
        committed = self.lake.committed_batches()
        self.log(f"restaging batch {batch_id}")
        manifest = self.lake.manifest()
        candidates = []
        for (feed_name, source_file), ranges in self.lake.open_rejects(feed, reason).items():
            last = manifest.get((feed_name, source_file))
            spec = self.config.feeds.get(feed_name)
            path = self.config.landing_root / source_file
            if last is None or spec is None or last["status"] == "refused" or not path.is_file():
                self.log(f"  {feed_name}: {source_file} cannot be restaged (file or feed gone)")
                continue
            summary.files_seen += 1
            candidates.append(
                Candidate(
                    feed_name,
                    spec.format,
                    str(path.resolve()),
                    source_file,
                    last["modification_time"],
                    0,
                    0,
                    None,
                    FORMATS[spec.format].sidecar(path),
                    last["status"] == "ingested",
                    end=last["byte_end"],
                    ranges=tuple(ranges),
                )
            )
        if not candidates:
            self.log("  no open rejects to restage")
            return summary
        tasks = Tasks(candidates, self.config.lake_root, self._spark_session)
        return self._commit_batch(summary, tasks, committed)

    def _commit_batch(
        self, summary: StageSummary, tasks: Tasks, committed: set[str]
    ) -> StageSummary:
        """Decode ``tasks``' candidates and append batch ``summary.ingest_batch_id``.

        The named steps of the module's description: scan the metadata, decode and write, commit
        (the raw tables first, the manifest ``raw_ingested_files`` last: it commits the batch),
        report. The tasks run in this process (a small batch), in worker processes (a local
        master) or as a Spark job (a cluster's master).
        """
        contexts = self.contexts(self._scanned_metadata(tasks, committed))
        ingested_at = dt.datetime.now(dt.UTC)
        written = self._decode_and_write(summary.ingest_batch_id, tasks, contexts, ingested_at)
        self._commit(summary.ingest_batch_id, written, ingested_at)
        for row in written.to_pylist():
            summary.add(row["raw_ingested_files"], dict(row["reject_reasons"] or []))
        summary.report(self.log, self.detail)
        return summary

    def _scanned_metadata(
        self, tasks: Tasks, committed: set[str]
    ) -> list[tuple[MetadataColumn, str]]:
        """Scan: the columns the metadata pass finds, with those of ``committed`` batches.

        ``(column, feed)`` pairs; none when no candidate's format has a metadata pass.
        """
        scanned = sorted({c.format for c in tasks.candidates if FORMATS[c.format].scan_metadata})
        if not scanned:
            return []
        schema = pa.schema(RAW_TABLES["raw_metadata"])
        rows = tasks.run(make_metadata_udf(), schema, scanned).to_pylist()
        found = [(metadata_from_row(r), r["feed"]) for r in rows]
        return self.lake.known_metadata(committed) + found

    def _decode_and_write(
        self, batch_id: str, tasks: Tasks, contexts, ingested_at: dt.datetime
    ) -> pa.Table:
        """Decode and write: each task decodes its files and writes the batch's raw table files.

        In feed, file and offset order (:func:`workers.task_groups`), through
        :func:`write.make_write_udf`; returns the rows that come back, one per file
        (:func:`schemas.written_schema`). ``ingested_at`` (aware UTC) stamps the rows.
        """
        self.log(f"  decoding {len(tasks.candidates)} file(s) {tasks.where}")
        udf = make_write_udf(contexts, str(self.lake.raw_root), batch_id, ingested_at)
        return tasks.run(udf, written_schema())

    def _commit(self, batch_id: str, written: pa.Table, ingested_at: dt.datetime) -> None:
        """Commit: the batch's manifest rows in one file, then every raw table's Delta log."""
        manifest = pa.Table.from_struct_array(written.column("raw_ingested_files").combine_chunks())
        manifest = manifest.sort_by(
            [(c, "ascending") for c in RAW_SORT_ORDER if c in manifest.column_names]
        )
        self.log(f"  committing batch {batch_id}: its manifest rows, then the Delta logs")
        self.lake.write_manifest(batch_id, manifest, ingested_at)
        self.lake.commit_batches({batch_id})
