"""Staging: decode new landing files into the raw Delta tables (DESIGN.md §4, ADR 0038).

One run of :func:`stage` is one *ingest batch* (id ``YYYYMMDDTHHMMSSffffff``, UTC):

1. list every feed's landing folder on the driver and compare with the manifest
   ``raw_ingested_files``: files already ingested (same size and modification time) are skipped
   without reading; new files are read from byte 0; files that grew are read from where the
   last run stopped, after checking that the SHA-256 of the ingested prefix is unchanged;
2. for formats with a metadata pass (``FeedFormat.scan_metadata``: Kafka MD messages), a first
   pass collects the batch's metadata, so that data messages can be resolved whatever file
   order they arrive in;
3. the candidate files are spread over tasks (:func:`task_groups`) that run the pure-Python
   decoders in parallel: in worker processes on a local master
   (:func:`~python_udfs.workers.run_in_processes`, ADR 0031; no JVM), as one Spark job on a
   cluster's (:func:`run_on_spark`), and in this process
   for a batch of at most :data:`IN_PROCESS_BYTES`; each task reads its files from the landing
   folder itself (:func:`candidate_bytes`) and writes its rows with pyarrow, once, as
   partition ``ingest_batch_id=<id>`` of the format's raw table, ``raw_rejects`` and
   ``raw_metadata`` (one parquet file per table and task, :func:`make_write_udf`); only the
   manifest rows come back to the driver;
4. the driver writes the manifest rows **last**, in one file moved into place by a rename
   (the batch's commit), then adds the batch's files to each table's Delta log, the
   manifest's last (:mod:`python_udfs.raw_tables`). A batch without manifest rows (a run
   killed half way) enters no log and is ignored by the working set, so a re-run ingests
   those files again without duplicates; a batch whose logs a kill left behind is committed
   to them by the next run (:meth:`Stager.ensure_tables`).

Tables live under ``<lake_root>/raw/<table>/`` as Delta tables partitioned by
``ingest_batch_id`` (Hive-style folders); the dbt macro ``register_raw_tables`` registers them
as external tables.
"""

from __future__ import annotations

import collections
import datetime as dt
import functools
import hashlib
import os
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from python_udfs import build_state, raw_tables
from python_udfs.config import ConfigError, ProjectConfig
from python_udfs.feed_format import (
    BOOL,
    I32,
    I64,
    PROVENANCE,
    STR,
    STR_LIST,
    TS,
    FeedFormat,
    FileToDecode,
)
from python_udfs.records import EXCERPT_BYTES, DecodeResult, MetadataColumn, Reject
from python_udfs.registry import FORMATS
from python_udfs.workers import local_processes, run_in_processes, start_worker_server

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


#: How a manifest row's ``warnings`` say that the format's fast path left the file to its
#: per-record reference, followed by the reason (:attr:`DecodeResult.fast_path_fallback`).
FALLBACK_WARNING = "fast path fell back: "


def fallback_reason(info: Mapping[str, Any]) -> str | None:
    """Return why the fast path left a manifest row's file to the reference, or None."""
    for warning in info.get("warnings") or ():
        if warning.startswith(FALLBACK_WARNING):
            return warning.removeprefix(FALLBACK_WARNING)
    return None


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


#: Manifest status of a file decoded again by ``cdc restage`` (:meth:`Stager.restage`): its
#: row covers bytes ``[byte_start, byte_end)`` and supersedes every earlier reject there.
RESTAGED = "restaged"
#: Reject reasons ``cdc restage`` leaves alone: the file itself was refused.
NOT_RESTAGED_REASONS = ("prefix_changed",)


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


def new_batch_id(now: dt.datetime | None = None) -> str:
    """Return a sortable UTC batch id ``YYYYMMDDTHHMMSSffffff``."""
    now = now or dt.datetime.now(dt.UTC)
    return now.strftime("%Y%m%dT%H%M%S%f")


def list_landing_files(feed_path: Path, fmt: str | None = None) -> Iterator[Path]:
    """Yield data files under a feed folder in name order (no sidecars, hidden or temp files).

    With ``fmt``, only the files its :attr:`FeedFormat.is_data_file` accepts (a GoldenGate
    feed's trails, not its sourcedefs file or ``dirdef`` folder; a HiRDB feed's ``SQLTXT_*``).
    """
    is_data_file = FORMATS[fmt].is_data_file if fmt else None
    for root, dirs, files in os.walk(feed_path):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
        for name in sorted(files):
            if name.startswith((".", "_")) or name.endswith((".dfm", ".avsc", ".tmp", ".crc")):
                continue
            if is_data_file is not None and not is_data_file(name):
                continue
            yield Path(root) / name


def decode_candidate(
    fmt: str,
    content: bytes,
    source_file: str,
    start: int,
    start_index: int,
    sidecar: str | None,
    context: Mapping[str, Any],
    is_final: bool = False,
    columnar: bool = False,
) -> DecodeResult:
    """Run the decoder of ``fmt`` over one file's bytes (pure; used inside the Spark tasks).

    ``context`` holds the feed's ``options``, ``catalog`` and what the format's
    :attr:`FeedFormat.decoder_context` added (:meth:`Stager.contexts`). Whole-file formats
    ignore ``start``. ``is_final`` says no more bytes will be appended (a trail that rolled
    over to the next sequence number, an update-SQL file or a Kafka dump followed by a later
    one of its stream), so an incomplete last record is a reject instead of pending.
    ``columnar`` lets a decoder that can return its rows as an Arrow table
    (``DecodeResult.table``) do so. Raises KeyError for a format not in the registry (the
    configuration check refuses it first).
    """
    return FORMATS[fmt].decode(
        content,
        FileToDecode(source_file, context, start, start_index, sidecar, is_final, columnar),
    )


def file_outputs(
    candidate: Mapping[str, Any],
    content: bytes | Gunzipped,
    context: Mapping[str, Any],
    columnar: bool = False,
) -> list[dict]:
    """Decode one candidate file and return the decode-pass rows (``kind`` + struct).

    ``content`` is the file's bytes, or a gzip stream decompressed (:class:`Gunzipped`): then
    every offset and hash is the decompressed stream's, and the manifest's ``file_size`` the
    compressed file's. Such a stream that stops short is decoded up to the cut as a file that
    may grow (the incomplete record before the cut left for the next run, status ``partial``)
    until the file is final; then, or at once for bytes that do not decompress, the cut is one
    ``truncated_gzip`` or ``bad_gzip`` reject from the end of the last whole record.

    With ``columnar``, the raw rows come as one item ``{"kind": <raw table>, "arrow":
    pyarrow.Table}`` (with ``feed`` and ``source_file`` added) instead of one dict per row:
    the decoder's Arrow table, or its row dicts converted column by column
    (:func:`_rows_by_column`); :func:`file_tables` turns both kinds of item into tables.

    Checks the ingested prefix first: when its SHA-256 differs from the manifest's, the file
    is refused (one ``prefix_changed`` reject and a ``refused`` manifest row). Never raises for
    bad input; an unexpected decoder exception becomes a ``decoder_error`` reject of the file.
    """
    feed, source_file, start = candidate["feed"], candidate["source_file"], candidate["start"]
    gunzipped = content if isinstance(content, Gunzipped) else None
    if gunzipped is not None:
        content = gunzipped.data
    cut = gunzipped.cut if gunzipped is not None else None
    # a gzip stream cut short may still grow: its incomplete tail waits unless it is final
    cut_pending = cut is not None and cut[0] == "truncated_gzip" and not candidate["is_final"]
    # (start, end) pairs; through Spark each is a struct, read back as a dict
    ranges = [
        (r["start"], r["end"]) if isinstance(r, Mapping) else tuple(r)
        for r in candidate.get("ranges") or ()
    ]
    if ranges:
        content = content[: candidate["end"]]
    size = len(content)
    manifest = {
        "feed": feed,
        "source_file": source_file,
        "format": candidate["format"],
        "file_size": size if gunzipped is None else gunzipped.file_size,
        "modification_time": candidate["modification_time"],
        "byte_start": start,
        "record_index_start": candidate["start_index"],
        "warnings": [],
        "message": None,
    }
    # One pass over the file: the hash of the ingested prefix is extended to the new end and
    # then to the whole file.
    hashes = _FileHashes(memoryview(content), start)
    early = _not_decoded(candidate, content, manifest, hashes, cut)
    if early is not None:
        return early
    result = _decoded(candidate, content, context, cut, cut_pending, ranges, columnar)
    if columnar and result.rows and result.table is None:
        raw_table = FORMATS[candidate["format"]].raw_table
        result.table, result.rows = _rows_by_column(result.rows, arrow_schema(raw_table)), []
    out, arrow_rows, arrow_last_index = _result_outputs(candidate, result)
    end = max(result.consumed_end, start)
    last_index = max(
        [candidate["start_index"], arrow_last_index]
        + [r["record_index"] for r in result.rows]
        + [r.record_index for r in result.rejects]
    )
    whole = end == size and not cut_pending
    prefix_sha256 = hashes.prefix_to(end)  # before the whole file's hash, which continues it
    manifest.update(
        sha256=hashes.whole_file(end),
        byte_end=end,
        prefix_sha256=prefix_sha256,
        record_index_end=last_index,
        rows=len(result.rows) + arrow_rows,
        rejects=len(result.rejects),
        reject_bytes=sum(r.length for r in result.rejects),
        status="ingested" if whole else "partial",
        warnings=result.warnings
        + ([FALLBACK_WARNING + result.fast_path_fallback] if result.fast_path_fallback else []),
        message=None
        if whole
        else f"{size - end} bytes of an incomplete record left for the next run"
        + (" (decompressed; the gzip stream is not whole yet)" if cut_pending else ""),
    )
    if ranges:
        manifest.update(
            status=RESTAGED,
            message=(
                f"restaged {len(ranges)} rejected range(s): {len(result.rows)} record(s) "
                f"decoded, {len(result.rejects)} still rejected"
            ),
        )
    out.append({"kind": "raw_ingested_files", "raw_ingested_files": manifest})
    return out


class _FileHashes:
    """SHA-256 of a file's bytes in one pass.

    The ingested prefix (up to ``start``), extended to the new end, and from any position
    to the whole file.
    """

    def __init__(self, view: memoryview, start: int) -> None:
        self.view, self.start = view, start
        self.running = hashlib.sha256(view[:start])

    def prefix(self) -> str:
        """Return the hash of the bytes ingested before (up to ``start``)."""
        return self.running.hexdigest()

    def whole_file(self, position: int) -> str:
        """Return the hash of the whole file: the running hash continued from ``position``."""
        rest = self.running.copy()
        rest.update(self.view[position:])
        return rest.hexdigest()

    def prefix_to(self, end: int) -> str:
        """Extend the running hash over ``start .. end``; return it (the new prefix's hash)."""
        self.running.update(self.view[self.start : end])
        return self.running.hexdigest()


def _reject_row(feed: str, source_file: str, rej: Reject) -> dict:
    """Return the decode-pass row of one reject (raw table ``raw_rejects``)."""
    return {
        "kind": "raw_rejects",
        "raw_rejects": {
            "feed": feed,
            "source_file": source_file,
            "record_offset": rej.offset,
            "record_length": rej.length,
            "record_index": rej.record_index,
            "reason": rej.reason,
            "message": rej.message,
            "excerpt_hex": rej.excerpt,
        },
    }


def _not_decoded(
    candidate: Mapping[str, Any],
    content: bytes,
    manifest: dict[str, Any],
    hashes: _FileHashes,
    cut: tuple[str, str, str] | None,
) -> list[dict] | None:
    """Return the outputs of a file that is not decoded, or None for one to decode.

    A re-delivery of a file applied before (``duplicate``), a file whose ingested prefix
    changed (``refused``, one ``prefix_changed`` reject) and a file touched but not grown.
    """
    start, size = candidate["start"], len(content)
    nothing = dict(record_index_end=candidate["start_index"], rows=0, rejects=0, reject_bytes=0)
    duplicate_of = candidate.get("duplicate_of")
    if duplicate_of:  # the same bytes as a file applied before: counted, not applied again
        manifest.update(
            sha256=hashlib.sha256(content).hexdigest(),
            byte_end=size,
            prefix_sha256=None,
            **nothing,
            status="duplicate",
            message=f"same bytes as {duplicate_of}: delivered again, not applied again",
        )
        return [{"kind": "raw_ingested_files", "raw_ingested_files": manifest}]
    expected = candidate["expected_prefix_sha256"]
    if start and (size < start or hashes.prefix() != expected):
        message = (
            f"the first {start} bytes, ingested before, changed (file is now {size} bytes); "
            "the file is refused. Land changed data as a new file."
        )
        reject = Reject.of(content, 0, size, 0, "prefix_changed", message)
        manifest.update(
            sha256=hashes.whole_file(min(start, size)),
            byte_end=start,
            prefix_sha256=expected,
            **{**nothing, "rejects": 1, "reject_bytes": size},
            status="refused",
            message=message,
        )
        return [
            _reject_row(candidate["feed"], candidate["source_file"], reject),
            {"kind": "raw_ingested_files", "raw_ingested_files": manifest},
        ]
    if start and start == size and cut is None:  # touched but not grown: nothing to decode
        manifest.update(
            sha256=hashes.whole_file(start),
            byte_end=start,
            prefix_sha256=expected,
            **nothing,
            status="ingested",
        )
        return [{"kind": "raw_ingested_files", "raw_ingested_files": manifest}]
    return None


def _decoded(
    candidate: Mapping[str, Any],
    content: bytes,
    context: Mapping[str, Any],
    cut: tuple[str, str, str] | None,
    cut_pending: bool,
    ranges: list[tuple[int, int]],
    columnar: bool,
) -> DecodeResult:
    """Decode the file from its start (:func:`decode_candidate`).

    Adds the reject of a gzip cut and, for a restage, keeps only the records within
    ``ranges``. A decoder exception becomes one ``decoder_error`` reject of the rest of the
    file.
    """
    start, size = candidate["start"], len(content)
    try:
        result = decode_candidate(
            candidate["format"],
            content,
            candidate["source_file"],
            start,
            candidate["start_index"],
            candidate["sidecar"],
            context,
            candidate["is_final"] and cut is None,
            columnar=columnar and not ranges,
        )
    except Exception as exc:  # noqa: BLE001 - a decoder bug must not lose the file silently
        result = DecodeResult(consumed_end=size)
        result.rejects.append(Reject.of(content, start, size, 0, "decoder_error", repr(exc)))
    if cut is not None and not cut_pending and not ranges:
        result.rejects.append(_cut_reject(content, max(result.consumed_end, start), cut))
        result.consumed_end = size
    if ranges:
        result = _within(result, ranges)
    return result


def _result_outputs(
    candidate: Mapping[str, Any], result: DecodeResult
) -> tuple[list[dict], int, int]:
    """Return the decode-pass rows of a decoded file's rows, Arrow table, rejects, metadata.

    Returns them with the Arrow table's row count and its last record index (the
    candidate's start index when there is none).
    """
    feed, source_file = candidate["feed"], candidate["source_file"]
    table = FORMATS[candidate["format"]].raw_table
    # a map column stays a dict: pyarrow converts dicts to maps directly (several times faster
    # than from lists of pairs)
    out: list[dict] = [
        {"kind": table, table: dict(row, feed=feed, source_file=source_file)} for row in result.rows
    ]
    arrow_rows, arrow_last_index = 0, candidate["start_index"]
    if result.table is not None and result.table.num_rows:
        arrow_rows = result.table.num_rows
        arrow_last_index = pc.max(result.table.column("record_index")).as_py()
        rows_table = result.table.append_column("feed", pa.repeat(pa.scalar(feed), arrow_rows))
        rows_table = rows_table.append_column(
            "source_file", pa.repeat(pa.scalar(source_file), arrow_rows)
        )
        out.append({"kind": table, "arrow": rows_table})
    out.extend(_reject_row(feed, source_file, rej) for rej in result.rejects)
    for col in result.metadata:
        meta = asdict(col)
        meta.update(feed=feed, source_file=source_file)
        out.append({"kind": "raw_metadata", "raw_metadata": meta})
    return out, arrow_rows, arrow_last_index


def _rows_by_column(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """Return a decoder's row dicts as an Arrow table of ``schema``'s columns, column by column.

    The provenance columns :func:`_result_outputs` adds (``feed``, ``source_file``) are left
    out; a key a row lacks is null, as ``pa.Table.from_pylist`` makes it. Converting each
    column from one list skips the per-row dict copies the row items need, which cost as
    much as the conversion itself (a decoder's raw rows of a large file, Kafka's map columns
    among them). Raises ``pyarrow.ArrowInvalid`` or ``ArrowTypeError`` for a value that does
    not fit its column's type, as ``from_pylist`` does.
    """
    fields = [f for f in schema if f.name not in ("feed", "source_file")]
    return pa.Table.from_arrays(
        [pa.array([row.get(f.name) for row in rows], f.type) for f in fields],
        schema=pa.schema(fields),
    )


def _cut_reject(data: bytes | bytearray, offset: int, cut: tuple[str, str, str]) -> Reject:
    """Build the one reject of a gzip stream's cut (:attr:`Gunzipped.cut`).

    It ranges from ``offset`` (the end of the last whole record) to the end of the
    decompressed bytes, the incomplete record before the cut. Its excerpt is that record's
    first bytes, or for a ``bad_gzip`` stream the compressed bytes that do not decompress.
    """
    reason, message, compressed_excerpt = cut
    reject = Reject.of(data, offset, len(data), 0, reason, message)
    if reason == "bad_gzip" and compressed_excerpt:
        return replace(reject, excerpt=compressed_excerpt)
    return reject


def _within(result: DecodeResult, ranges: list[tuple[int, int]]) -> DecodeResult:
    """Keep the rows, rejects and metadata of ``result`` whose offset lies in ``ranges``.

    ``ranges`` are ``(start, end)`` byte ranges, end exclusive (a reject's offset and length;
    a reject of length 0 is its offset alone). The records outside them landed before.
    """

    def inside(offset: int | None) -> bool:
        return offset is not None and any(a <= offset < max(b, a + 1) for a, b in ranges)

    kept = DecodeResult(consumed_end=result.consumed_end, warnings=result.warnings)
    kept.rows = [r for r in result.rows if inside(r.get("record_offset"))]
    kept.rejects = [r for r in result.rejects if inside(r.offset)]
    kept.metadata = [c for c in result.metadata if inside(c.record_offset)]
    return kept


def file_tables(
    candidate: Mapping[str, Any], content: bytes, context: Mapping[str, Any]
) -> dict[str, pa.Table]:
    """Decode one candidate file into its rows per raw table (pure: no I/O, no Spark).

    Returns ``{raw table: pyarrow.Table}`` in each table's schema (:func:`arrow_schema`; a
    column the decoder does not set, ``ingested_at`` among them, is null), for the tables the
    file has rows for, rows in byte offset order; ``raw_ingested_files`` (one row) is always
    there. Decodes with :func:`file_outputs` (columnar where the format can).
    """
    rows: dict[str, list[dict]] = {}
    arrow: dict[str, list[pa.Table]] = {}
    for item in file_outputs(candidate, content, context, columnar=True):
        kind = item["kind"]
        if "arrow" in item:
            arrow.setdefault(kind, []).append(item["arrow"])
        else:
            rows.setdefault(kind, []).append(item[kind])
    out = {}
    for kind in [k for k in KINDS if k in rows or k in arrow]:
        schema = arrow_schema(kind)
        parts = [_conform(t, schema) for t in arrow.get(kind, [])]
        if kind in rows:
            parts.append(pa.Table.from_pylist(rows[kind], schema=schema))
        table = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
        if "record_offset" in table.column_names and not _ascending(table["record_offset"]):
            table = table.sort_by([("record_offset", "ascending")])
        out[kind] = table
    return out


def _ascending(offsets: pa.ChunkedArray) -> bool:
    """Whether ``offsets`` never go down, a decoder's usual order (a null counts as out of order).

    Sorting a table that is in order already would copy every column (maps and lists too).
    """
    values = offsets.to_numpy(zero_copy_only=False) if offsets.null_count == 0 else None
    return values is not None and bool((values[1:] >= values[:-1]).all())


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Return ``table`` in ``schema``: its columns cast, the ones it lacks null."""
    n = table.num_rows
    return pa.Table.from_arrays(
        [
            table.column(f.name).cast(f.type)
            if f.name in table.column_names
            else pa.nulls(n, f.type)
            for f in schema
        ],
        schema=schema,
    )


def _stamped(table: pa.Table, ingested_at: dt.datetime) -> pa.Table:
    """Return ``table`` (a raw table's schema) with every row's ``ingested_at`` set."""
    stamp = pa.repeat(pa.scalar(ingested_at, TS), table.num_rows)
    return table.set_column(table.schema.get_field_index("ingested_at"), "ingested_at", stamp)


def _write_file_in_place(table: pa.Table, folder: Path, name: str) -> None:
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
        table = _stamped(table, self.ingested_at)
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


#: A batch with at most this many bytes to decode runs its tasks in the driver process, one
#: after the other (the same task functions, the same files): starting Spark's Python workers
#: for a job costs more than decoding a few MiB (a +1 % run's 10,050-row Qlik Parquet file of
#: 0.5 MB: 2.7 s as a Spark job). ``CDC_STAGE_IN_PROCESS_BYTES`` overrides it (0: always Spark).
IN_PROCESS_BYTES = 8 * 2**20


def work_bytes(candidate: Candidate) -> int:
    """Count the bytes of ``candidate`` left to decode: its size (or ``end``) less ``start``.

    A file the driver cannot stat counts as empty (its task reports the error).
    """
    try:
        size = os.stat(candidate.path).st_size
    except OSError:
        size = 0
    end = size if candidate.end is None else min(candidate.end, size)
    return max(0, end - candidate.start)


def task_groups(candidates: list[Candidate], tasks: int) -> list[list[Candidate]]:
    """Spread ``candidates`` over at most ``tasks`` staging tasks of about equal work.

    The work of a file is the bytes left to decode (:func:`work_bytes`). The largest file
    goes to the task with the least work so far (longest processing time first). Each group is
    in feed, file and start order, the order a task decodes and writes in (ADR 0010, ADR
    0014); empty groups are dropped.
    """
    groups: list[list[Candidate]] = [[] for _ in range(max(1, tasks))]
    loads = [0] * len(groups)
    for size, candidate in sorted(
        ((work_bytes(c), c) for c in candidates), key=lambda pair: (-pair[0], pair[1].source_file)
    ):
        lightest = loads.index(min(loads))
        groups[lightest].append(candidate)
        loads[lightest] += size
    order = lambda c: (c.feed, c.source_file, c.start)  # noqa: E731
    return [sorted(group, key=order) for group in groups if group]


def candidate_bytes(candidate: Mapping[str, Any]) -> bytes | Gunzipped:
    """Read a candidate file's bytes (``candidate["path"]``, an absolute local path).

    A ``.gz`` file of a format whose files may be gzip streams (:attr:`FeedFormat.gzip_stream`)
    comes decompressed (:func:`gunzip_file`). Called by the staging task that decodes the file.
    Raises OSError when the file cannot be read (a file removed after the batch was planned
    fails the batch; the next run plans again).
    """
    if FORMATS[candidate["format"]].gzip_stream and candidate["path"].lower().endswith(".gz"):
        return gunzip_file(candidate["path"])
    with open(candidate["path"], "rb") as handle:
        return handle.read()


#: Bytes of a compressed file :func:`gunzip_file` reads at a time.
GZIP_CHUNK_BYTES = 2**20


@dataclass(frozen=True, slots=True)
class Gunzipped:
    """A gzip-compressed landing file, decompressed (:func:`gunzip_file`).

    Attributes:
        data: the decompressed bytes, every member's in file order; what the decoder frames.
        file_size: the compressed file's size on disk, in bytes (the manifest's ``file_size``,
            which the next run's plan compares with the file).
        cut: None when the gzip stream ends properly (its last member's trailer read, nothing
            but zero padding after it); else ``(reason, message, excerpt)``: ``truncated_gzip``
            for a stream that ends before its end-of-stream marker (a dump still being written,
            or cut), ``bad_gzip`` for bytes that do not decompress (not gzip at all, a damaged
            member, a wrong CRC-32); ``data`` holds what decompressed before that point.
            ``excerpt`` is, for ``bad_gzip``, up to 200 bytes of the compressed file from
            there, uppercase hex; empty for ``truncated_gzip`` (its reject shows the
            incomplete record instead, :func:`_cut_reject`).
    """

    data: bytearray
    file_size: int
    cut: tuple[str, str, str] | None = None


def gunzip_file(path: str | Path) -> Gunzipped:
    """Decompress a gzip file (RFC 1952) with :mod:`zlib`, :data:`GZIP_CHUNK_BYTES` at a time.

    The compressed bytes are never held whole, only the decompressed stream, so a
    multi-gigabyte dump is in memory once. Concatenated members are read one after the other
    (as ``gzip.decompress`` reads them) and zero padding after a member is skipped. A stream
    that stops short or does not decompress raises nothing: :attr:`Gunzipped.cut` says where
    and why, and the bytes that decompressed before it are returned (issue 48). An empty file
    is an empty stream. Raises OSError when the file cannot be read.
    """
    data = bytearray()
    member = None  # the member being decompressed; None before the first and between two
    members = at = 0  # members read whole; compressed bytes consumed
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        while chunk := handle.read(GZIP_CHUNK_BYTES):
            while chunk:
                if member is None:
                    if members:
                        padded, chunk = chunk, chunk.lstrip(b"\0")
                        at += len(padded) - len(chunk)
                        if not chunk:
                            break
                    member = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)  # gzip framing
                fed = chunk
                try:
                    data += member.decompress(fed)
                except zlib.error as exc:
                    handle.seek(at)
                    excerpt = handle.read(EXCERPT_BYTES).hex().upper()
                    message = (
                        f"cannot gunzip the compressed bytes from {at} on (of {size}): {exc}; "
                        f"the {len(data)} bytes that decompressed before them were decoded"
                    )
                    return Gunzipped(data, size, ("bad_gzip", message, excerpt))
                if not member.eof:
                    at += len(fed)
                    break
                chunk = member.unused_data  # the bytes after this member's trailer
                at += len(fed) - len(chunk)
                member, members = None, members + 1
        if member is not None:
            message = (
                f"the gzip stream ends at compressed byte {size} before its end-of-stream "
                f"marker (a dump still being written, or cut); {len(data)} bytes decompressed"
            )
            return Gunzipped(data, size, ("truncated_gzip", message, ""))
    return Gunzipped(data, size)


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


def run_on_spark(
    spark, task: Callable, groups: list[pa.RecordBatch], out_schema: pa.Schema
) -> pa.Table:
    """Run ``task`` once per group of candidates as Spark tasks (a cluster's master).

    One Spark job over ``spark.range`` with one partition per group; each task takes its
    group from the function's closure and reads its files itself (:func:`candidate_bytes`),
    so the landing and lake roots must be mounted alike on every executor. Returns the output
    rows in ``out_schema``; a failed task fails the job (raised here).
    """
    from pyspark.sql.pandas.types import from_arrow_schema

    def by_group(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for number in batch.column("id").to_pylist():
                yield from task(iter([groups[number]]))

    spread = spark.range(0, len(groups), 1, max(1, len(groups)))
    return spread.mapInArrow(by_group, from_arrow_schema(out_schema)).toArrow()


class Stager:
    """Runs staging batches for one project.

    A batch needs no SparkSession: it reads the manifest and metadata with pyarrow and decodes
    in worker processes (:func:`~python_udfs.workers.run_in_processes`). ``cdc restage`` and
    the reject listings query the raw tables with Spark.
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
        self.raw_root = config.lake_root / "raw"

    def _spark_session(self):
        """Return the Stager's SparkSession, starting one when it was given none."""
        if self.spark is None:
            from python_udfs.spark import get_spark

            self.spark = get_spark(self.config.lake_root)
        return self.spark

    # -- reading what is there ------------------------------------------------------------
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
        return set(build_state.committed_batches(self.config.lake_root)) - {SCHEMA_PARTITION}

    def read_table(self, table: str):
        """Return a raw table as a DataFrame of its Delta table's last version (all batches)."""
        return self.spark.read.format("delta").load(str(self._table_path(table)))

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
            (_metadata_from_row(r), r["feed"])
            for r in self.metadata_rows(batches)
            if r["metadata_source"] in sources
        ]

    # -- planning -------------------------------------------------------------------------
    def plan(
        self, manifest: Mapping[tuple[str, str], Mapping[str, Any]], summary: StageSummary
    ) -> list[Candidate]:
        """List landing files and decide, per file, skip / read from 0 / read the new tail."""
        candidates: list[Candidate] = []
        for feed in self.config.feeds.values():
            new = grown = 0
            fmt = FORMATS[feed.format]
            paths = list(list_landing_files(feed.path, feed.format))
            rolled_over = fmt.complete_files(paths)
            duplicates = (
                self.redeliveries(feed.name, paths, manifest) if fmt.deduplicated_by_content else {}
            )
            if duplicates:
                duplicates = {
                    path: first
                    for path, first in duplicates.items()
                    if not self._applied_when_repeated(feed.name, fmt, path)
                }
            for path in paths:
                summary.files_seen += 1
                stat = path.stat()
                mtime_us = stat.st_mtime_ns // 1000
                mtime = UNIX_EPOCH + dt.timedelta(microseconds=mtime_us)
                rel = path.relative_to(self.config.landing_root).as_posix()
                last = manifest.get((feed.name, rel))
                start = start_index = 0
                expected = None
                if last is not None:
                    same_mtime = last["mtime_us"] == mtime_us
                    unchanged = last["file_size"] == stat.st_size and same_mtime
                    # a partial file whose writer has moved on is read once more, as final
                    if unchanged and not (last["status"] == "partial" and path in rolled_over):
                        summary.files_skipped += 1
                        continue
                    if last["status"] == "refused":
                        start, expected = last["byte_start"], last["prefix_sha256"]
                    else:
                        start, expected = last["byte_end"], last["prefix_sha256"]
                    start_index = last["record_index_end"] or 0
                    grown += 1
                else:
                    new += 1
                sidecar = fmt.sidecar(path)
                candidates.append(
                    Candidate(
                        feed.name,
                        feed.format,
                        str(path.resolve()),
                        rel,
                        mtime,
                        start,
                        start_index,
                        expected,
                        sidecar,
                        path in rolled_over,
                        duplicates.get(path),
                    )
                )
            self.log(f"  {feed.name} ({feed.format}): {new} new file(s), {grown} grown or changed")
        return candidates

    def redeliveries(
        self,
        feed: str,
        paths: list[Path],
        manifest: Mapping[tuple[str, str], Mapping[str, Any]],
    ) -> dict[Path, str]:
        """Map each new file of ``feed`` that repeats the bytes of an earlier file to that file.

        An earlier file is a complete file ingested before, or a new file earlier in name
        order; it is named by its ``source_file``. Only files whose size equals such a file's size are read and hashed (SHA-256), so a
        batch of new files of distinct sizes costs no extra read.
        """
        complete: dict[int, dict[str, str]] = {}  # size -> sha256 -> source_file
        for (f, source_file), m in manifest.items():
            if f == feed and m["status"] == "ingested" and m["byte_end"] == m["file_size"]:
                complete.setdefault(m["file_size"], {})[m["sha256"]] = source_file
        new = {p: p.stat().st_size for p in paths if (feed, self._relative(p)) not in manifest}
        sizes = collections.Counter(new.values())
        out: dict[Path, str] = {}
        for path, size in new.items():
            if size == 0 or (size not in complete and sizes[size] < 2):
                continue
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            known = complete.setdefault(size, {})
            if digest in known:
                out[path] = known[digest]
            else:
                known[digest] = self._relative(path)
        return out

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
            self._relative(path),
            0,
            0,
            fmt.sidecar(path),
            self._contexts[feed],
            True,
        )
        return fmt.applied_when_repeated(result)

    def _relative(self, path: Path) -> str:
        return path.relative_to(self.config.landing_root).as_posix()

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
        committed = self.committed_batches()
        self.log(f"staging batch {batch_id}")
        candidates = self.plan(self.manifest(), summary)
        if candidates and self._processes() and not self._in_process(candidates):
            start_worker_server()  # its imports run while this process goes on
        self.ensure_tables()
        if not candidates:
            self.log("  nothing new to ingest")
            return summary
        return self._commit_batch(summary, candidates, committed)

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
        return self.spark.sql(
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
        ).collect()

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

    def restage(self, feed: str | None = None, reason: str | None = None) -> StageSummary:
        """Decode the open rejects again (``cdc restage``), in a new ingest batch.

        For example after a table was declared in the seeds. Each file with an open reject
        (:meth:`open_rejects`, filtered by ``feed`` and ``reason``) is decoded from byte 0 to
        where the last staging run stopped, with today's catalog and options; the records at
        the offsets of its open rejects land (or are rejected again), all others landed before
        and are dropped. Its manifest row has status :data:`RESTAGED` and says how many
        records landed; planning ignores it (:meth:`manifest`). The dbt working set reads the
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
        self.ensure_tables()
        committed = self.committed_batches()
        self.log(f"restaging batch {batch_id}")
        manifest = self.manifest()
        candidates = []
        for (feed_name, source_file), ranges in self.open_rejects(feed, reason).items():
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
        return self._commit_batch(summary, candidates, committed)

    def _write_manifest(self, batch_id: str, manifest: pa.Table, ingested_at) -> None:
        """Write batch ``batch_id``'s manifest rows: the commit of the batch.

        One parquet file, written under a ``_``-prefixed temporary name and renamed into
        ``raw_ingested_files/ingest_batch_id=<batch_id>/``, so a kill leaves all of the
        batch's manifest rows or none (readers skip ``_`` files; ``build_state`` counts a
        batch committed once its folder holds a ``.parquet`` file).
        """
        manifest = _stamped(_conform(manifest, arrow_schema("raw_ingested_files")), ingested_at)
        folder = self._table_path("raw_ingested_files") / f"ingest_batch_id={batch_id}"
        _write_file_in_place(manifest, folder, "part-00000-manifest.parquet")

    def _in_process(self, candidates: list[Candidate]) -> bool:
        """Whether a batch of ``candidates`` decodes in this process (:data:`IN_PROCESS_BYTES`)."""
        limit = int(os.environ.get("CDC_STAGE_IN_PROCESS_BYTES", IN_PROCESS_BYTES))
        return sum(work_bytes(c) for c in candidates) <= limit

    def _processes(self) -> int | None:
        """Return the worker processes of a batch on the engine's master (``local_processes``).

        The master of ``spark_conf``: ``CDC_SPARK_MASTER``, or ``spark.master`` in
        ``CDC_SPARK_CONF``.
        """
        from python_udfs.spark import spark_conf

        return local_processes(spark_conf(self.config.lake_root)["spark.master"])

    def _commit_batch(
        self, summary: StageSummary, candidates: list[Candidate], committed: set[str]
    ) -> StageSummary:
        """Decode ``candidates`` and append batch ``summary.ingest_batch_id``.

        The tasks run in this process (a small batch), in worker processes (a local master) or
        as a Spark job (a cluster's master); see the module's description.

        The raw tables first, the manifest ``raw_ingested_files`` last (it commits the batch).
        """
        batch_id = summary.ingest_batch_id
        cand_schema = pa.schema(
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
        in_process = self._in_process(candidates)
        # in this process, one task: one file per raw table for a small batch; on a local
        # master, worker processes (ADR 0031); on a cluster, a Spark job
        processes = self._processes()
        spark = None if in_process or processes else self._spark_session()
        tasks = 1 if in_process else (processes or spark.sparkContext.defaultParallelism) * 2
        groups = [
            [dict(asdict(c), ranges=[{"start": a, "end": b} for a, b in c.ranges]) for c in group]
            for group in task_groups(candidates, tasks)
        ]

        def run_tasks(task: Callable, out_schema: pa.Schema, formats=None) -> pa.Table:
            """Run ``task`` (a task function) over every group; its output rows."""
            chosen = [
                pa.RecordBatch.from_pylist(rows, cand_schema)
                for rows in (
                    [r for r in g if formats is None or r["format"] in formats] for g in groups
                )
                if rows
            ]
            if in_process:  # one group after the other, in this process
                out = [batch for group in chosen for batch in task(iter([group]))]
            elif processes:
                out = run_in_processes(task, chosen, processes)
            else:
                return run_on_spark(spark, task, chosen, out_schema)
            return pa.Table.from_batches(out, schema=out_schema)

        scanned_metadata: list[tuple[MetadataColumn, str]] = []
        scanned = sorted({c.format for c in candidates if FORMATS[c.format].scan_metadata})
        if scanned:
            known = self.known_metadata(committed)
            meta_rows = run_tasks(
                make_metadata_udf(), pa.schema(RAW_TABLES["raw_metadata"]), scanned
            ).to_pylist()
            scanned_metadata = known + [(_metadata_from_row(r), r["feed"]) for r in meta_rows]
        contexts = self.contexts(scanned_metadata)
        ingested_at = dt.datetime.now(dt.UTC)
        where = (
            "in this process"
            if in_process
            else f"in {min(processes, len(groups))} worker process(es), {len(groups)} task(s)"
            if processes
            else f"on {len(groups)} Spark task(s)"
        )
        self.log(f"  decoding {len(candidates)} file(s) {where}")
        # each task decodes its files in feed, file and offset order (task_groups) and writes
        # the raw tables' files of this batch itself (make_write_udf); only the manifest rows
        # come back
        written = run_tasks(
            make_write_udf(contexts, str(self.raw_root), batch_id, ingested_at), written_schema()
        )
        manifest = pa.Table.from_struct_array(written.column("raw_ingested_files").combine_chunks())
        manifest = manifest.sort_by(
            [(c, "ascending") for c in RAW_SORT_ORDER if c in manifest.column_names]
        )
        self.log(f"  committing batch {batch_id}: its manifest rows, then the Delta logs")
        self._write_manifest(batch_id, manifest, ingested_at)
        self.commit_batches({batch_id})
        reasons: dict[str, collections.Counter] = {}
        for row in written.to_pylist():
            info = row["raw_ingested_files"]
            summary.per_file.append(info)
            if info["status"] == "refused":
                summary.files_refused.append(f"{info['feed']}/{info['source_file']}")
            else:
                summary.files_ingested += 1
            summary.rows[info["feed"]] = summary.rows.get(info["feed"], 0) + info["rows"]
            summary.rejects[info["feed"]] = summary.rejects.get(info["feed"], 0) + info["rejects"]
            reasons.setdefault(info["feed"], collections.Counter()).update(
                dict(row["reject_reasons"] or [])
            )
            fell_back = fallback_reason(info)
            if fell_back is not None:
                summary.fallbacks.setdefault(info["feed"], collections.Counter())[fell_back] += 1
        files = collections.Counter(info["feed"] for info in summary.per_file)
        for feed, count in sorted(files.items()):
            rows, rejects = summary.rows.get(feed, 0), summary.rejects.get(feed, 0)
            why = ", ".join(f"{r} {n}" for r, n in sorted(reasons.get(feed, {}).items()))
            self.log(
                f"    {feed}: {count} file(s) decoded, {rows} rows, {rejects} rejects"
                + (f" ({why}; `cdc rejects` lists them)" if why else "")
            )
            fallbacks = summary.fallbacks.get(feed)
            if fallbacks:
                self.log(
                    f"    {feed}: the fast path left {sum(fallbacks.values())} file(s) to the "
                    "per-record decoder ("
                    + "; ".join(f"{r}: {n}" for r, n in sorted(fallbacks.items()))
                    + "; `--verbose` names them)"
                )
        for info in sorted(summary.per_file, key=lambda i: (i["feed"], i["source_file"])):
            fell_back = fallback_reason(info)
            self.detail(
                f"      {info['feed']}: {info['source_file']} [{info['status']}] "
                f"bytes {info['byte_start']}-{info['byte_end']}, {info['rows']} rows, {info['rejects']} rejects"
                + (f" (fast path fell back: {fell_back})" if fell_back else "")
            )
        for name in summary.files_refused:
            self.log(f"  REFUSED {name}: its already-ingested prefix changed (see raw_rejects)")
        return summary


def _metadata_from_row(row: Mapping[str, Any]) -> MetadataColumn:
    fields = MetadataColumn.__slots__
    return MetadataColumn(**{k: row.get(k) for k in fields})
