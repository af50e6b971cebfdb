"""One landing file decoded into its rows per raw table (pure: no I/O, no Spark).

:func:`decode_candidate` runs the format's decoder (:attr:`FeedFormat.decode`),
:func:`file_outputs` adds the manifest row, the rejects (a changed prefix, a cut gzip stream,
a decoder error) and the restaged ranges, and :func:`file_tables` turns them into one Arrow
table per raw table in that table's schema (:func:`conform`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import asdict, replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from python_udfs.feed_format import (
    FileToDecode,
)
from python_udfs.records import DecodeResult, Reject
from python_udfs.registry import FORMATS
from python_udfs.staging.landing import FileHashes, Gunzipped
from python_udfs.staging.schemas import FALLBACK_WARNING, KINDS, RESTAGED, arrow_schema


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
    hashes = FileHashes(memoryview(content), start)
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
    hashes: FileHashes,
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
        parts = [conform(t, schema) for t in arrow.get(kind, [])]
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


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
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
