"""The shapes staging works with: raw table schemas, candidates, the batch's summary.

:data:`RAW_TABLES` holds every raw table's columns (DESIGN.md §4), :func:`arrow_schema` one
table's Arrow schema; a :class:`Candidate` is one landing file to decode (as the tasks get
it: :data:`CANDIDATE_SCHEMA`); :func:`written_schema` is what a task hands back per file;
:class:`StageSummary` counts and prints what a batch did, fast-path fallbacks included
(:data:`FALLBACK_WARNING`).
"""

from __future__ import annotations

import collections
import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from python_udfs.feed_format import (
    BOOL,
    I32,
    I64,
    PROVENANCE,
    STR,
    STR_LIST,
    TS,
)
from python_udfs.records import MetadataColumn
from python_udfs.registry import FORMATS

#: Every raw table's columns (without the ``ingest_batch_id`` partition): one per feed format
#: (its ``spec.RAW_COLUMNS`` after the provenance columns), then the three every feed shares.
RAW_TABLES: dict[str, list[tuple[str, pa.DataType]]] = {
    **{f.raw_table: [*PROVENANCE, *f.raw_columns] for f in FORMATS.values()},
    "raw_rejects": [
        ("feed", STR),
        ("source_file", STR),
        ("record_offset", I64),
        ("record_length", I64),
        ("record_index", I64),
        ("reason", STR),
        ("message", STR),
        ("excerpt_hex", STR),
    ],
    "raw_metadata": [
        ("feed", STR),
        ("source_file", STR),
        ("record_offset", I64),
        ("record_index", I64),
        ("metadata_source", STR),
        ("source_schema", STR),
        ("source_table", STR),
        ("table_version", I64),
        ("schema_id", STR),
        ("column_name", STR),
        ("ordinal", I32),
        ("source_type", STR),
        ("length", I64),
        ("precision", I32),
        ("scale", I32),
        ("primary_key_position", I32),
        ("nullable", BOOL),
        ("data_schema", STR),
    ],
    "raw_ingested_files": [
        ("feed", STR),
        ("source_file", STR),
        ("format", STR),
        ("file_size", I64),
        ("modification_time", TS),
        ("sha256", STR),
        ("byte_start", I64),
        ("byte_end", I64),
        ("prefix_sha256", STR),
        ("record_index_start", I64),
        ("record_index_end", I64),
        ("rows", I64),
        ("rejects", I64),
        ("reject_bytes", I64),
        ("status", STR),
        ("message", STR),
        ("warnings", STR_LIST),
    ],
}


for _columns in RAW_TABLES.values():
    _columns.append(("ingested_at", TS))  # set by the staging job when it appends the batch


KINDS = list(RAW_TABLES)


#: Order of the rows in each raw parquet file (the columns a table has): by feed, file and byte
#: offset, so that a row group holds a short stretch of a few files, and its min/max statistics
#: let a reader skip it. The dbt working set (python_udfs/working_set.py: "from this file and offset
#: on") and the re-delivery test (tests/dbt/conflicting_duplicate_changes.sql: "positions from the
#: newest one on") filter on these columns with literals, and Spark pushes them to parquet.
#: A staging task gets its files sorted by feed and file and writes each file's rows in offset
#: order (:func:`make_write_udf`); the manifest is sorted by feed, file and byte_start.
RAW_SORT_ORDER = ("feed", "source_file", "record_offset", "byte_start")


#: Parquet row group size of the raw tables, in bytes (uncompressed: the Arrow bytes a staging
#: task buffers before it writes a row group): 16 MiB instead of parquet's usual 128 MiB, so
#: that a staged batch of a few hundred megabytes has row groups a filter can skip.
RAW_ROW_GROUP_BYTES = 16 * 2**20


#: Partition in which a release before ADR 0038 wrote one empty parquet file per raw table (a
#: schema before data; a Delta log holds the schema now). Never a batch: readers leave it out.
SCHEMA_PARTITION = "00000000T000000000000"


UNIX_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def arrow_schema(table: str) -> pa.Schema:
    """Return the Arrow schema of a raw table (without the ``ingest_batch_id`` partition)."""
    return pa.schema(RAW_TABLES[table])


def written_schema() -> pa.Schema:
    """Return what the decode-and-write pass hands back to the driver, one row per file.

    ``raw_ingested_files``: the file's manifest row (``ingested_at`` null, set when the driver
    writes the manifest); ``reject_reasons``: its rejects counted by reason code.
    """
    return pa.schema(
        [
            ("raw_ingested_files", pa.struct(RAW_TABLES["raw_ingested_files"])),
            ("reject_reasons", pa.map_(STR, I64)),
        ]
    )


@dataclass(frozen=True, slots=True)
class Candidate:
    """A landing file to decode in this batch, from byte ``start`` (0 for a new file)."""

    feed: str
    format: str
    path: str
    source_file: str
    modification_time: dt.datetime
    start: int
    start_index: int
    expected_prefix_sha256: str | None
    sidecar: str | None
    is_final: bool = False
    duplicate_of: str | None = (
        None  # a file already ingested (or earlier in this batch) with the same bytes
    )
    #: ``cdc restage``: decode bytes ``[0, end)`` and keep only the records whose offset lies
    #: in one of these ``(start, end)`` byte ranges (the file's open rejects).
    end: int | None = None
    ranges: tuple[tuple[int, int], ...] = ()


#: A :class:`Candidate` as the tasks get it: one row of an Arrow batch.
CANDIDATE_SCHEMA = pa.schema(
    [
        ("feed", STR),
        ("format", STR),
        ("path", STR),
        ("source_file", STR),
        ("modification_time", TS),
        ("start", I64),
        ("start_index", I64),
        ("expected_prefix_sha256", STR),
        ("sidecar", STR),
        ("is_final", BOOL),
        ("duplicate_of", STR),
        ("end", I64),
        ("ranges", pa.list_(pa.struct([("start", I64), ("end", I64)]))),
    ]
)

#: Manifest status of a file decoded again by ``cdc restage`` (:meth:`Stager.restage`): its
#: row covers bytes ``[byte_start, byte_end)`` and supersedes every earlier reject there.
RESTAGED = "restaged"


#: Reject reasons ``cdc restage`` leaves alone: the file itself was refused.
NOT_RESTAGED_REASONS = ("prefix_changed",)


#: How a manifest row's ``warnings`` say that the format's fast path left the file to its
#: per-record reference, followed by the reason (:attr:`DecodeResult.fast_path_fallback`).
FALLBACK_WARNING = "fast path fell back: "


def fallback_reason(info: Mapping[str, Any]) -> str | None:
    """Return why the fast path left a manifest row's file to the reference, or None."""
    for warning in info.get("warnings") or ():
        if warning.startswith(FALLBACK_WARNING):
            return warning.removeprefix(FALLBACK_WARNING)
    return None


@dataclass(slots=True)
class StageSummary:
    """What one staging run did, per feed: files, rows, rejects, fast-path fallbacks, refusals."""

    ingest_batch_id: str
    files_seen: int = 0
    files_skipped: int = 0
    files_ingested: int = 0
    files_refused: list[str] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    rejects: dict[str, int] = field(default_factory=dict)
    #: Per feed, how many files the fast path left to the per-record decoder, by reason.
    fallbacks: dict[str, collections.Counter] = field(default_factory=dict)
    per_file: list[dict[str, Any]] = field(default_factory=list)
    #: Wall seconds the staging run took (set by ``cdc stage`` / ``cdc run``; 0.0 otherwise).
    seconds: float = 0.0
    #: Per feed, its rejects by reason code.
    reject_reasons: dict[str, collections.Counter] = field(default_factory=dict)

    def add(self, info: Mapping[str, Any], reject_reasons: Mapping[str, int]) -> None:
        """Count one file's manifest row ``info`` and its rejects by reason."""
        feed = info["feed"]
        self.per_file.append(info)
        if info["status"] == "refused":
            self.files_refused.append(f"{feed}/{info['source_file']}")
        else:
            self.files_ingested += 1
        self.rows[feed] = self.rows.get(feed, 0) + info["rows"]
        self.rejects[feed] = self.rejects.get(feed, 0) + info["rejects"]
        self.reject_reasons.setdefault(feed, collections.Counter()).update(reject_reasons)
        fell_back = fallback_reason(info)
        if fell_back is not None:
            self.fallbacks.setdefault(feed, collections.Counter())[fell_back] += 1

    def report(self, log: Callable[[str], None], detail: Callable[[str], None]) -> None:
        """Print the batch: a few lines per feed to ``log``, one line per file to ``detail``."""
        files = collections.Counter(info["feed"] for info in self.per_file)
        for feed, count in sorted(files.items()):
            rows, rejects = self.rows.get(feed, 0), self.rejects.get(feed, 0)
            why = ", ".join(
                f"{r} {n}" for r, n in sorted(self.reject_reasons.get(feed, {}).items())
            )
            log(
                f"    {feed}: {count} file(s) decoded, {rows} rows, {rejects} rejects"
                + (f" ({why}; `cdc rejects` lists them)" if why else "")
            )
            fallbacks = self.fallbacks.get(feed)
            if fallbacks:
                log(
                    f"    {feed}: the fast path left {sum(fallbacks.values())} file(s) to the "
                    "per-record decoder ("
                    + "; ".join(f"{r}: {n}" for r, n in sorted(fallbacks.items()))
                    + "; `--verbose` names them)"
                )
        for info in sorted(self.per_file, key=lambda i: (i["feed"], i["source_file"])):
            fell_back = fallback_reason(info)
            detail(
                f"      {info['feed']}: {info['source_file']} [{info['status']}] "
                f"bytes {info['byte_start']}-{info['byte_end']}, {info['rows']} rows, {info['rejects']} rejects"
                + (f" (fast path fell back: {fell_back})" if fell_back else "")
            )
        for name in self.files_refused:
            log(f"  REFUSED {name}: its already-ingested prefix changed (see raw_rejects)")


def new_batch_id(now: dt.datetime | None = None) -> str:
    """Return a sortable UTC batch id ``YYYYMMDDTHHMMSSffffff``."""
    now = now or dt.datetime.now(dt.UTC)
    return now.strftime("%Y%m%dT%H%M%S%f")


def metadata_from_row(row: Mapping[str, Any]) -> MetadataColumn:
    """Return the :class:`MetadataColumn` of a ``raw_metadata`` row (a missing column is None)."""
    fields = MetadataColumn.__slots__
    return MetadataColumn(**{k: row.get(k) for k in fields})
