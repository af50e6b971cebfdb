"""Decoder for Qlik Replicate change tables and full-load files (feed format ``qlik_change_tables``).

Reads one file of a Qlik Replicate file-type target: a change-table file
``<schema>.<table>__ct/YYYYMMDD-HHMMSSmmm.csv`` (or ``.csv.gz``, ``.parquet``) with its ``.dfm``
sidecar, or a full-load file ``<schema>.<table>/LOAD00000001.csv``. Without a ``.dfm`` the
column list comes from the CSV header row and the types from the catalog seed.

It reports what the file says, one raw row per record: the ``header__`` columns as text, the
data columns as a ``map<string,string>`` of canonical text, and the column names in ordinal
order so that the dbt macro ``cdc_mask_bit`` can decode ``header__change_mask``. Pairing of
before images with their UPDATE happens in dbt (the vendor's self-join on ``change_seq``).

Follows ``formats/qlik_change_tables.md`` (translated from ``seeds/qlik_change_tables_ja.txt``)
and the real sample ``samples/qlik_ct/EDW.SAMPLE__ct/20211201-122433444.csv`` + ``.dfm``.
"""

from __future__ import annotations

import gzip
import io
import itertools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa

from python_udfs import canonical_arrow
from python_udfs.byte_fields import Decline, reason
from python_udfs.canonical import (
    canonical_qlik_value,
    canonical_timestamp,
    mask_set_bits,
    normalize_mask_hex,
)
from python_udfs.records import DecodeResult, MetadataColumn, Reject

FORMAT = "qlik_change_tables"

#: Every option a ``qlik_change_tables`` feed accepts (formats/qlik_change_tables.md, *Uncertain
#: points and options*): name → (default, the values this version implements; ``None``: any value
#: of the option's kind). The decoder reads ``DEFAULT_OPTIONS`` and ``config.load_project`` checks
#: its choices (``FeedFormat.option_choices``), both derived from this one table, so the check
#: cannot drift from what the decoder reads.
OPTIONS: dict[str, tuple[Any, tuple[Any, ...] | None]] = {
    "mask_bit_order": ("lsb_last_hex", ("lsb_last_hex", "lsb_first_byte")),
    "header_prefix": ("header__", None),
    "header_columns": (None, None),
    "ct_suffix": ("__ct", None),
    "truncate_oper_code": (None, None),
    "load_position": ("zeros", ("zeros", "dfm_start")),
    "update_unmasked_columns": ("trust_values", ("trust_values", "absent")),
    "unmatched_before_image": ("reject", ("reject", "drop_with_count")),
    "subsecond_overflow": ("truncate", ("truncate", "reject")),
    "encoding": ("utf-8", None),
    "csv_header_row": ("auto", ("auto", "present", "absent")),
    "field_delimiter": (",", None),
    "record_delimiter": ("\n", None),
    "null_value": ("", None),
    "quote_char": ('"', None),
    "escape_char": ("", None),
}
#: Default of every option (``OPTIONS``).
DEFAULT_OPTIONS: dict[str, Any] = {name: spec[0] for name, spec in OPTIONS.items()}
#: Accepted values of every option (``OPTIONS``); ``None`` takes any value of its kind.


#: The default set of header columns, in order (a task may configure fewer).
DEFAULT_HEADER_FIELDS = (
    "change_seq",
    "change_oper",
    "change_mask",
    "stream_position",
    "operation",
    "transaction_id",
    "timestamp",
)
#: Every header column the decoder knows: the defaults plus ``partition_name``.
HEADER_FIELDS = (*DEFAULT_HEADER_FIELDS, "partition_name")
_OPERATIONS = {"I": "INSERT", "U": "UPDATE", "D": "DELETE", "B": "BEFOREIMAGE"}
_CHANGE_SEQ_RE = re.compile(r"\d{35}")
_LOAD_NAME_RE = re.compile(r"LOAD(?:_\d+)?_?\d+\.", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class CsvDialect:
    """Delimited-text settings of one file (``.dfm`` ``formatInfo.options`` or feed options)."""

    field_delimiter: bytes
    record_delimiter: bytes
    quote_char: bytes
    escape_char: bytes
    null_value: str


def parse_dfm(text: str) -> tuple[dict[str, Any], list[MetadataColumn]]:
    """Parse a ``.dfm`` metadata sidecar (JSON, ``dfmVersion`` 1.1).

    Returns the dialect/format part (``formatInfo``, ``fileInfo``, table names) as a dict and
    the columns ordered by ``ordinal`` (header columns included). Raises ValueError when the
    text is not a ``.dfm`` (not JSON, no ``dataInfo.columns``).
    """
    try:
        doc = json.loads(text)
        info = doc["dataInfo"]
        columns = sorted(info["columns"], key=lambda c: int(c["ordinal"]))
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"not a .dfm metadata file: {exc}") from exc
    schema, table = info.get("sourceSchema") or "", info.get("sourceTable") or ""
    meta = [
        MetadataColumn(
            source_schema=schema,
            source_table=table,
            table_version=info.get("tableVersion"),
            column_name=c["name"],
            ordinal=int(c["ordinal"]),
            source_type=str(c.get("type") or "STRING"),
            length=c.get("length"),
            precision=c.get("precision"),
            scale=c.get("scale"),
            primary_key_position=int(c.get("primaryKeyPos") or 0),
            nullable=c.get("nullable"),
            metadata_source="dfm",
        )
        for c in columns
    ]
    return doc, meta


def table_from_path(file_name: str, ct_suffix: str) -> tuple[str, str, bool]:
    """Return ``(schema, table, is_full_load)`` from a landing path's folder and file name.

    ``EDW.SAMPLE__ct/20211201-122433444.csv`` → ``("EDW", "SAMPLE", False)``;
    ``EDW.SAMPLE/LOAD00000001.csv`` → ``("EDW", "SAMPLE", True)``. Partition folders
    (``<start>_<end>``) between the table folder and the file are skipped.
    """
    parts = file_name.replace("\\", "/").split("/")
    base = parts[-1]
    folder = next(
        (
            p
            for p in reversed(parts[:-1])
            if "." in p and not re.fullmatch(r"\d{8}T\d{6}_\d{8}T\d{6}", p)
        ),
        parts[-2] if len(parts) > 1 else "",
    )
    if ct_suffix and folder.endswith(ct_suffix):
        folder = folder[: -len(ct_suffix)]
    schema, _, table = folder.partition(".")
    if not table:
        schema, table = "", folder
    return schema, table, bool(_LOAD_NAME_RE.match(base))


def _field_regex(d: CsvDialect) -> re.Pattern[bytes]:
    """Compile the regex matching one field (quoted or bare) and the delimiter after it."""
    q, fd, rd = re.escape(d.quote_char), re.escape(d.field_delimiter), re.escape(d.record_delimiter)
    if d.escape_char:
        e = re.escape(d.escape_char)
        quoted = rb"(?:[^" + q + e + rb"]|" + e + rb".|" + q + q + rb")*"
    else:
        quoted = rb"(?:[^" + q + rb"]|" + q + q + rb")*"
    bare = rb"(?:(?!" + fd + rb"|" + rd + rb")[^" + q + rb"])*"
    return re.compile(
        rb"(?:"
        + q
        + rb"("
        + quoted
        + rb")"
        + q
        + rb"|("
        + bare
        + rb"))("
        + fd
        + rb"|"
        + rd
        + rb"|\Z)",
        re.DOTALL,
    )


def split_records(data: bytes, d: CsvDialect, field_count: list[int | None] | None = None):
    """Yield ``(offset, end, fields | None, error)`` for each record of a delimited file.

    ``fields`` is a list of ``(raw_bytes, was_quoted)``; on a syntax error it is ``None`` and
    ``error`` names the problem; the generator then resynchronises at the next record
    delimiter. Offsets are bytes. ``field_count`` holds (in its one element, which the caller
    may set while reading) the number of fields a record has: once known, a record whose
    quote runs over its line and which then does not have that many fields is an unclosed
    quote: its first line is rejected and reading resumes at the next line, so one bad quote
    does not swallow the valid records after it. An unclosed quote in the last line (a file
    still being written) rejects to the end of the file as a truncated record.
    """
    pattern = _field_regex(d)
    q, rd = d.quote_char, d.record_delimiter
    pos, size = 0, len(data)

    def line_end(start: int) -> int:
        nxt = data.find(rd, start)
        return size if nxt == -1 else nxt + len(rd)

    while pos < size:
        start, fields = pos, []
        while True:
            match = pattern.match(data, pos)
            if match is None:
                if data.startswith(q, pos) and data.count(q, pos) % 2 == 1:
                    end = line_end(start)
                    if field_count and field_count[0] is not None and end < size:
                        yield start, end, None, "quote not closed on its line"
                        pos = end
                        break
                    yield start, size, None, "unterminated quoted field (truncated record)"
                    return
                nxt = data.find(rd, pos)
                end = size if nxt == -1 else nxt + len(rd)
                yield (
                    start,
                    end,
                    None,
                    "quote character inside a bare field or after a quoted field",
                )
                pos = end
                break
            quoted, bare, delim = match.groups()
            if quoted is not None:
                value = quoted.replace(q + q, q)
                if d.escape_char:
                    value = re.sub(
                        re.escape(d.escape_char) + b"(.)", rb"\1", value, flags=re.DOTALL
                    )
                fields.append((value, True))
            else:
                fields.append((bare, False))
            pos = match.end()
            if delim != d.field_delimiter:
                if delim == b"" and pos == start:
                    return
                expected = field_count[0] if field_count else None
                if (
                    expected is not None
                    and len(fields) != expected
                    and data.find(rd, start, pos - len(delim)) != -1
                ):
                    end = line_end(start)
                    yield start, end, None, "quote not closed on its line"
                    pos = end
                    break
                yield start, pos, fields, None
                break


def _dialect(options: Mapping[str, Any], dfm: Mapping[str, Any] | None) -> CsvDialect:
    fmt = ((dfm or {}).get("formatInfo") or {}).get("options") or {}

    def pick(dfm_key: str, opt_key: str) -> str:
        value = fmt.get(dfm_key)
        return options[opt_key] if value is None else value

    return CsvDialect(
        field_delimiter=pick("fieldDelimiter", "field_delimiter").encode(),
        record_delimiter=pick("recordDelimiter", "record_delimiter").encode(),
        quote_char=(pick("quoteChar", "quote_char") or '"').encode(),
        escape_char=(pick("escapeChar", "escape_char") or "").encode(),
        null_value=pick("nullValue", "null_value"),
    )


#: ``fileInfo.startWriteTimestamp`` of a ``.dfm`` as Replicate writes it: a date and a time of
#: day, ``T`` or a space between them, an optional fraction (UTC; formats/qlik_change_tables.md).
_START_WRITE_RE = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?")


def start_write_timestamp(sidecar: str | None) -> str | None:
    """Return the ``.dfm``'s ``fileInfo.startWriteTimestamp`` text, or None when it has none.

    ``sidecar`` is the ``.dfm`` text. None too when it is not JSON (the decoder then rejects
    the file) or the value is empty (the real sample's ``""``). Never raises.
    """
    try:
        info = json.loads(sidecar or "null") or {}
        value = (info.get("fileInfo") or {}).get("startWriteTimestamp")
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, str) and value.strip() else None


def decode_change_table_file(
    data: bytes,
    *,
    file_name: str,
    sidecar: str | None = None,
    catalog: Mapping[tuple[str, str], list[MetadataColumn]] | None = None,
    options: Mapping[str, Any] | None = None,
    columnar: bool = False,
) -> DecodeResult:
    """Decode one change-table or full-load file: :func:`_decode_file`, plus the ``.dfm`` start.

    Every row (and ``result.table``) also holds ``start_write_timestamp``: the ``.dfm``'s
    ``fileInfo.startWriteTimestamp`` as written (null without one). With option
    ``load_position: dfm_start`` a full-load file's LOAD rows take their change position from
    it (staging model), so a full-load file with rows whose ``.dfm`` has none, or not as a date
    and time, is rejected whole (reason ``no_start_write_timestamp``): its rows would have no
    position.
    """
    opts = {**DEFAULT_OPTIONS, **(options or {})}
    start = start_write_timestamp(sidecar)
    result = _decode_file(
        data,
        file_name=file_name,
        sidecar=sidecar,
        catalog=catalog,
        options=opts,
        columnar=columnar,
    )
    rows = result.table.num_rows if result.table is not None else len(result.rows)
    if (
        rows
        and opts["load_position"] == "dfm_start"
        and table_from_path(file_name, opts["ct_suffix"])[2]
        and not (start and _START_WRITE_RE.fullmatch(start.strip()))
    ):
        message = f"load_position dfm_start: {file_name} has no .dfm startWriteTimestamp"
        rejected = DecodeResult(consumed_end=len(data), metadata=result.metadata)
        rejected.rejects.append(
            Reject.of(data, 0, len(data), 0, "no_start_write_timestamp", message)
        )
        return rejected
    if start is not None:
        if result.table is not None:
            column = pa.repeat(pa.scalar(start, pa.string()), result.table.num_rows)
            result.table = result.table.append_column("start_write_timestamp", column)
        for row in result.rows:
            row["start_write_timestamp"] = start
    return result


def _decode_file(
    data: bytes,
    *,
    file_name: str,
    sidecar: str | None,
    catalog: Mapping[tuple[str, str], list[MetadataColumn]] | None,
    options: Mapping[str, Any],
    columnar: bool,
) -> DecodeResult:
    """Decode one change-table or full-load file into raw rows and rejects.

    ``data`` is the whole file (bytes; ``.gz`` is gunzipped first, offsets then count
    uncompressed bytes). ``file_name`` is the path below the feed's landing folder; its folder
    names the table. ``sidecar`` is the ``.dfm`` text when the file has one; ``catalog`` maps
    ``(schema, table)`` to the catalog seed's columns (used for the types, and for the column
    list when there is neither ``.dfm`` nor header row). ``options`` override
    :data:`DEFAULT_OPTIONS`.

    Each row holds ``record_offset`` (bytes), ``record_index`` (1-based data record number),
    ``source_schema``, ``source_table``, ``table_version``, ``file_kind`` (``change_table`` or
    ``full_load``), ``header__*`` text (null when the file has no such column), ``column_names``
    (every column in ordinal order), ``header_column_count`` and ``data`` (data column →
    canonical text). Never raises for bad input: every record that fails becomes a
    :class:`~python_udfs.records.Reject` (see *Bad input* in formats/qlik_change_tables.md).

    ``columnar`` asks for the rows as ``result.table`` (a ``pyarrow.Table``: Parquet by
    :func:`_decode_parquet_columnar`, delimited text by :func:`_decode_csv_columnar`) instead
    of ``result.rows``; a file that path cannot render exactly as the per-record path would (a
    value, header or record to reject, a before image without its UPDATE, a quoted value over
    two lines, options it does not cover) is decoded record by record as before.
    """
    opts = {**DEFAULT_OPTIONS, **(options or {})}
    result = DecodeResult(consumed_end=len(data))
    schema, table, is_load = table_from_path(file_name, opts["ct_suffix"])
    try:
        dfm, columns = None, None
        if sidecar is not None:
            dfm, columns = _parsed_dfm(sidecar, file_name)
            info = dfm["dataInfo"]
            schema = info.get("sourceSchema") or schema
            table = info.get("sourceTable") or table
            result.metadata.extend(columns)
        catalog_columns = (catalog or {}).get((schema, table))
        if file_name.endswith(".gz"):
            data = _gunzipped(data)
            result.consumed_end = len(data)
        if file_name.removesuffix(".gz").lower().endswith(".parquet"):
            table_rows = None
            if columnar:
                table_rows = _fast_path(
                    result,
                    _decode_parquet_columnar,
                    *(data, schema, table, is_load, columns, catalog_columns, opts),
                )
            if table_rows is None:
                return _decode_parquet(
                    data, result, schema, table, is_load, columns, catalog_columns, opts
                )
            result.table = table_rows
            return result
        _decode_delimited(
            data,
            result,
            _FileContext(schema, table, is_load, dfm, columns, catalog_columns, opts),
            columnar,
        )
    except _FileReject as bad:
        result.rows.clear()
        result.table = None
        result.rejects[:] = [Reject.of(data, 0, len(data), 0, bad.reason, str(bad))]
    return result


class _FileReject(Exception):
    """A whole file that cannot be read (one reject over the file): ``reason`` and message."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def _parsed_dfm(sidecar: str, file_name: str) -> tuple[dict[str, Any], list[MetadataColumn]]:
    """Parse the file's ``.dfm`` (:func:`parse_dfm`); raise _FileReject when it does not."""
    try:
        return parse_dfm(sidecar)
    except ValueError as exc:
        raise _FileReject("bad_metadata_file", f"{file_name}.dfm: {exc}") from exc


def _gunzipped(data: bytes) -> bytes:
    """Decompress a ``.gz`` change table; raise _FileReject when it does not decompress."""
    try:
        return gzip.decompress(data)
    except (OSError, EOFError) as exc:
        raise _FileReject("bad_gzip", f"cannot gunzip: {exc}") from exc


@dataclass(frozen=True, slots=True)
class _FileContext:
    """What a delimited change table is read with.

    Its table, the ``.dfm`` (when it has one) and its columns, the catalog's columns of the
    table and the options.
    """

    schema: str
    table: str
    is_load: bool
    dfm: dict[str, Any] | None
    columns: list[MetadataColumn] | None
    catalog_columns: list[MetadataColumn] | None
    opts: Mapping[str, Any]


def _decode_delimited(
    data: bytes, result: DecodeResult, context: _FileContext, columnar: bool
) -> None:
    """Decode a delimited (CSV) change table into ``result``.

    Its header row and columns, then every record (by column when ``columnar`` and the file
    allows it). Raises _FileReject for a file whose columns cannot be known.
    """
    opts, dfm = context.opts, context.dfm
    dialect = _dialect(opts, dfm)
    field_count: list[int | None] = [None]  # set once the layout is known
    records = split_records(data, dialect, field_count)
    first = next(records, None)
    header_names = _header_row(first, context)
    columns = context.columns or _columns_without_dfm(header_names, context)
    layout = _Layout.build(columns, opts, context.is_load)
    field_count[0] = len(layout.columns)
    table_version = (dfm or {}).get("dataInfo", {}).get("tableVersion")
    pending_first = first if header_names is None else None
    if columnar and first is not None:
        body_start = first[1] if pending_first is None else 0
        rows = _fast_path(
            result,
            _decode_csv_columnar,
            data,
            body_start,
            dialect,
            layout,
            context.schema,
            context.table,
            context.is_load,
            opts,
            table_version,
        )
        if rows is not None:
            result.table = rows
            _check_record_count(dfm, result)
            return
    every = itertools.chain([pending_first] if pending_first is not None else [], records)
    ends = _record_rows(data, every, layout, dialect, context, table_version, result)
    _check_before_images(data, result, opts, ends)
    _check_record_count(dfm, result)


def _header_row(first, context: _FileContext) -> list[str] | None:
    """Return the column names of the file's header row, or None when it has none.

    Option ``csv_header_row`` says whether the first record is a header. Raises _FileReject
    for a header the ``.dfm`` contradicts.
    """
    mode, opts = context.opts["csv_header_row"], context.opts
    if first is None or first[2] is None or mode not in ("auto", "present"):
        return None
    try:
        names = [f[0].decode(opts["encoding"]) for f in first[2]]
    except UnicodeDecodeError:
        names = []
    columns = context.columns
    if columns is not None:
        expected = [c.column_name for c in columns]
    else:
        ordered = sorted(context.catalog_columns or [], key=lambda c: c.ordinal)
        expected = [c.column_name for c in ordered]
    looks_like_header = names == expected or (
        columns is None
        and (
            (bool(expected) and set(expected) <= set(names))
            or any(n.startswith(opts["header_prefix"]) for n in names)
        )
    )
    if mode != "present" and not looks_like_header:
        return None
    if columns is not None and names != expected:
        raise _FileReject("header_metadata_mismatch", "header row differs from .dfm columns")
    return names


def _columns_without_dfm(
    header_names: list[str] | None, context: _FileContext
) -> list[MetadataColumn]:
    """Return the columns of a file without ``.dfm``.

    Its header row's names, typed by the catalog where it has them (a full load without
    header row: the catalog's columns). Raises _FileReject when neither says.
    """
    ordered = sorted(context.catalog_columns or [], key=lambda c: c.ordinal)
    if header_names is None and (not ordered or not context.is_load):
        raise _FileReject(
            "no_column_metadata",
            f"no .dfm and no header row for {context.schema}.{context.table}"
            + ("" if ordered else ", and no catalog entry"),
        )
    by_name = {c.column_name: c for c in ordered}
    names = header_names or [c.column_name for c in ordered]
    return [
        replace(by_name[name], ordinal=i + 1)
        if name in by_name
        else MetadataColumn(
            context.schema,
            context.table,
            None,
            name,
            i + 1,
            "STRING",
            None,
            None,
            None,
            0,
            None,
            "header_row",
        )
        for i, name in enumerate(names)
    ]


def _record_rows(
    data: bytes,
    records,
    layout: _Layout,
    dialect: CsvDialect,
    context: _FileContext,
    table_version: int | None,
    result: DecodeResult,
) -> dict[int, int]:
    """Add the raw row or reject of every record to ``result``.

    Returns each record's end by record index. A second row of one change sequence and
    operation is a reject.
    """
    seen: dict[tuple[str, str], int] = {}
    ends: dict[int, int] = {}
    column_names = [c.column_name for c in layout.columns]
    for index, (offset, end, fields, error) in enumerate(records, start=1):
        ends[index] = end
        if fields is None:
            reason = "truncated_record" if "unterminated" in error else "bad_quoting"
            result.rejects.append(Reject.of(data, offset, end, index, reason, error))
            continue
        row, problem = _record_to_row(fields, layout, context.opts, dialect)
        key = (
            (row or {}).get("header__change_seq") or "",
            (row or {}).get("header__change_oper") or "",
        )
        if problem is None and key[0] and key in seen:
            problem = (
                "duplicate_change_seq",
                f"second {key[1]} row with change_seq {key[0]} (first at record {seen[key]})",
            )
        if problem is not None:
            result.rejects.append(Reject.of(data, offset, end, index, *problem))
            continue
        if key[0]:
            seen[key] = index
        row.update(
            record_offset=offset,
            record_index=index,
            source_schema=context.schema,
            source_table=context.table,
            table_version=table_version,
            file_kind="full_load" if context.is_load else "change_table",
            column_names=column_names,
            header_column_count=len(layout.header_positions),
        )
        result.rows.append(row)
    return ends


@dataclass(frozen=True, slots=True)
class _Layout:
    """Column roles of one file: which positions are headers and which are data."""

    columns: tuple[MetadataColumn, ...]
    header_positions: dict[str, int]
    data_positions: tuple[int, ...]

    @classmethod
    def build(
        cls, columns: list[MetadataColumn], opts: Mapping[str, Any], is_load: bool
    ) -> _Layout:
        prefix = opts["header_prefix"]
        explicit = opts.get("header_columns")
        headers: dict[str, int] = {}
        data_pos: list[int] = []
        for i, c in enumerate(columns):
            is_header = not is_load and (
                c.column_name in explicit if explicit else c.column_name.startswith(prefix)
            )
            if is_header:
                headers[
                    c.column_name[len(prefix) :]
                    if c.column_name.startswith(prefix)
                    else c.column_name
                ] = i
            else:
                data_pos.append(i)
        return cls(tuple(columns), headers, tuple(data_pos))


def _record_to_row(fields, layout: _Layout, opts, dialect: CsvDialect):
    """Turn one record's fields into a raw row, or return ``(None, (reason, message))``."""
    if len(fields) != len(layout.columns):
        return None, ("wrong_field_count", f"{len(fields)} fields, expected {len(layout.columns)}")
    texts: list[str | None] = []
    for n, (raw, quoted) in enumerate(fields, start=1):
        try:
            text = raw.decode(opts["encoding"])
        except UnicodeDecodeError as exc:
            return None, ("undecodable_bytes", f"undecodable bytes at field {n}: {exc.reason}")
        texts.append(None if (not quoted and text == dialect.null_value) else text)
    return _values_to_row(texts, layout, opts)


def _values_to_row(values: list[Any], layout: _Layout, opts):
    """Validate header values and render data values; shared by CSV and Parquet.

    Returns ``(row, None)``, or ``(None, (reason, message))`` for a record to reject.
    """
    row: dict[str, Any] = {f"header__{h}": None for h in HEADER_FIELDS}
    for name, pos in layout.header_positions.items():
        try:
            row[f"header__{name}"] = _header_value(name, values[pos], opts)
        except ValueError as exc:
            reason = "bad_mask" if name == "change_mask" else "bad_value"
            return None, (reason, str(exc) if name == "change_mask" else f"header__{name}: {exc}")
    if layout.header_positions:
        problem = _check_headers(row, len(layout.columns), opts)
        if problem:
            return None, problem
    data: dict[str, str | None] = {}
    oper = row["header__change_oper"]
    mask_bits = None
    if oper == "U" and opts["update_unmasked_columns"] == "absent" and row["header__change_mask"]:
        mask_bits = set(mask_set_bits(row["header__change_mask"], opts["mask_bit_order"]))
    for pos in layout.data_positions:
        column = layout.columns[pos]
        if mask_bits is not None and pos not in mask_bits:
            continue
        try:
            data[column.column_name] = canonical_qlik_value(
                values[pos], column.source_type, column.scale or 0, opts["subsecond_overflow"]
            )
        except ValueError as exc:
            return None, ("bad_value", f"column {column.column_name}: {exc}")
    row["data"] = data
    return row, None


def _header_value(name: str, value: Any, opts) -> str | None:
    """Return a ``header__`` column's value as text.

    The change mask is normalized, the timestamp canonical, other values stay as they are.
    Raises ValueError for a bad mask or timestamp.
    """
    if name == "change_mask":
        return normalize_mask_hex(value)
    if name == "timestamp" and value is not None and value != "":
        return canonical_timestamp(value, opts["subsecond_overflow"])
    if value is not None and not isinstance(value, str):
        return str(value)
    return value


def _check_headers(row: dict[str, Any], column_count: int, opts) -> tuple[str, str] | None:
    """Check change_seq, change_oper/operation agreement and the mask length."""
    seq, oper, operation = (
        row["header__change_seq"],
        row["header__change_oper"],
        row["header__operation"],
    )
    if seq is None or not _CHANGE_SEQ_RE.fullmatch(seq):
        return "bad_change_seq", f"change_seq {seq!r} is not 35 digits"
    if oper is not None:
        truncate_code = opts.get("truncate_oper_code")
        if operation == "TRUNCATE" or (truncate_code and oper == truncate_code):
            if operation not in (None, "TRUNCATE"):
                return "operation_mismatch", f"change_oper {oper!r} but operation {operation!r}"
        elif oper not in _OPERATIONS:
            return "unknown_operation", f"unknown change_oper {oper!r}"
        elif operation is not None and operation != _OPERATIONS[oper]:
            return "operation_mismatch", f"change_oper {oper!r} but operation {operation!r}"
    elif operation not in ("INSERT", "UPDATE", "DELETE", "BEFOREIMAGE", "TRUNCATE"):
        return "unknown_operation", f"no change_oper and operation {operation!r}"
    return _mask_problem(row["header__change_mask"], column_count, opts)


def _mask_problem(mask: str | None, column_count: int, opts) -> tuple[str, str] | None:
    """Return ``(reason, message)`` when a normalized change mask does not fit the columns."""
    if not mask:
        return None
    try:
        bits = mask_set_bits(mask, opts["mask_bit_order"])
    except ValueError as exc:
        return "bad_mask", str(exc)
    if bits and bits[-1] >= column_count:
        return "mask_longer_than_columns", (
            f"mask longer than column list: bit {bits[-1]} set, {column_count} columns "
            "(is mask_bit_order right?)"
        )
    return None


def _check_before_images(
    data: bytes, result: DecodeResult, opts: Mapping[str, Any], ends: Mapping[int, int]
) -> None:
    """Turn ``B`` rows with no ``U`` row of the same change_seq in the file into rejects.

    ``ends`` maps a row's ``record_index`` to the byte offset where its record ends, so the
    reject covers the record's bytes (option ``unmatched_before_image``: ``reject`` or
    ``drop_with_count``, which still counts the bytes as a reject and adds a warning).
    """
    updates = {r["header__change_seq"] for r in result.rows if r["header__change_oper"] == "U"}
    kept = []
    for row in result.rows:
        if row["header__change_oper"] == "B" and row["header__change_seq"] not in updates:
            message = f"before image {row['header__change_seq']} has no UPDATE row in this file"
            start, index = row["record_offset"], row["record_index"]
            result.rejects.append(
                Reject.of(data, start, ends[index], index, "unmatched_before_image", message)
            )
            if opts["unmatched_before_image"] != "reject":
                result.warnings.append(message)
            continue
        kept.append(row)
    result.rows[:] = kept


def _check_record_count(dfm: Mapping[str, Any] | None, result: DecodeResult) -> None:
    expected = ((dfm or {}).get("fileInfo") or {}).get("recordCount")
    got = len(result.rows) + len(result.rejects)
    got += result.table.num_rows if result.table is not None else 0
    if isinstance(expected, int) and expected != got:
        result.warnings.append(f".dfm recordCount {expected} but {got} records read")


def _decode_parquet(data, result, schema, table, is_load, columns, catalog_columns, opts):
    """Decode a Parquet change-table file with pyarrow; offsets are row-group byte offsets."""
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(io.BytesIO(data))
    except Exception as exc:  # noqa: BLE001 - any pyarrow failure is bad input
        result.rejects.append(Reject.of(data, 0, len(data), 0, "bad_parquet", str(exc)))
        result.consumed_end = len(data)
        return result
    names = pf.schema_arrow.names
    columns = _parquet_columns(pf.schema_arrow, schema, table, columns, catalog_columns)
    if columns is None:
        result.rejects.append(
            Reject.of(
                data,
                0,
                len(data),
                0,
                "header_metadata_mismatch",
                "Parquet columns differ from .dfm columns",
            )
        )
        return result
    layout = _Layout.build(columns, opts, is_load)
    index = 0
    ends: dict[int, int] = {}
    for rg in range(pf.num_row_groups):
        meta = pf.metadata.row_group(rg)
        rg_offset = _row_group_offset(meta)
        try:
            batch = pf.read_row_group(rg).to_pylist()
        except Exception as exc:  # noqa: BLE001 - a damaged page is bad input
            size = sum(meta.column(i).total_compressed_size for i in range(meta.num_columns))
            rg_end = min(rg_offset + size, len(data))
            message = f"row group {rg} ({meta.num_rows} rows) does not read: {exc}"
            result.rejects.append(
                Reject.of(data, rg_offset, rg_end, index + 1, "bad_parquet", message)
            )
            index += meta.num_rows
            continue
        for record in batch:
            index += 1
            values = [record[n] for n in names]
            row, problem = _values_to_row(values, layout, opts)
            if problem is not None:
                result.rejects.append(
                    Reject(
                        rg_offset,
                        0,
                        index,
                        problem[0],
                        problem[1],
                        json.dumps(record, default=str)[:200].encode().hex().upper(),
                    )
                )
                continue
            row.update(
                record_offset=rg_offset,
                record_index=index,
                source_schema=schema,
                source_table=table,
                table_version=None,
                file_kind="full_load" if is_load else "change_table",
                column_names=[c.column_name for c in columns],
                header_column_count=len(layout.header_positions),
            )
            result.rows.append(row)
            ends[index] = rg_offset
    _check_before_images(data, result, opts, ends)
    return result


def _parquet_columns(arrow_schema, schema, table, columns, catalog_columns):
    """Return the file's columns in order.

    The ``.dfm`` ones (``None`` when they name other columns than the Parquet schema), else
    the catalog's by name, else columns typed from the Arrow schema (:func:`_arrow_qlik_type`).
    """
    names = arrow_schema.names
    if columns is not None:
        return columns if [c.column_name for c in columns] == names else None
    by_name = {c.column_name: c for c in catalog_columns or []}
    return [
        replace(by_name[n], ordinal=i + 1)
        if n in by_name
        else MetadataColumn(
            schema,
            table,
            None,
            n,
            i + 1,
            _arrow_qlik_type(arrow_schema.field(n).type),
            None,
            None,
            None,
            0,
            None,
            "parquet",
        )
        for i, n in enumerate(names)
    ]


def _row_group_offset(meta) -> int:
    """Return a row group's first byte in the file (its first dictionary or data page).

    It is the ``record_offset`` of each of the row group's rows.
    """
    return min(
        (meta.column(i).dictionary_page_offset or meta.column(i).data_page_offset)
        for i in range(meta.num_columns)
    )


_NotColumnar = Decline  # what the columnar checks raise: the file goes to the per-record path


def _fast_path(result: DecodeResult, decode, *arguments):
    """Return ``decode(*arguments)``, or None after recording why it declined or failed.

    The reason goes to ``result.fast_path_fallback`` (:func:`byte_fields.reason`), which the
    staging summary counts; the caller then decodes the file record by record.
    """
    try:
        return decode(*arguments)
    except Exception as exc:  # noqa: BLE001 - Decline, or a value Python cannot hold (a damaged
        # file): the per-record path decides what is a row and what a reject
        result.fast_path_fallback = reason(exc)
        return None


def _decode_parquet_columnar(data, schema, table, is_load, columns, catalog_columns, opts):
    """Decode a Parquet change-table file with Arrow compute, no Python object per record.

    Returns a ``pyarrow.Table`` with the columns of a raw row (``header__*``, ``data`` as
    ``map<string,string>``, ``record_offset``, ``record_index``, ``source_schema``,
    ``source_table``, ``table_version``, ``file_kind``, ``column_names``,
    ``header_column_count``), equal to what :func:`_decode_parquet` makes of the file. Raises
    :class:`Decline` (or the error of a file that does not read) when that is not certain: a header value fails its check,
    a value fails to render, a before image has no UPDATE, or option
    ``update_unmasked_columns: absent`` (a map per mask). The caller then decodes the file
    record by record, which makes the rejects, and records why (:func:`_fast_path`). Values render with the same functions
    (:mod:`python_udfs.canonical`), once per distinct value; integers, strings, exact
    decimals of the declared scale and timestamps are rendered by Arrow itself
    (tests/test_qlik_columnar.py checks both paths give the same rows).
    """
    import pyarrow.parquet as pq

    if opts["update_unmasked_columns"] == "absent":
        raise Decline("option update_unmasked_columns: absent")
    pf = pq.ParquetFile(io.BytesIO(data))
    columns = _parquet_columns(pf.schema_arrow, schema, table, columns, catalog_columns)
    if columns is None:
        raise Decline("Parquet columns the .dfm and the catalog do not settle")
    layout = _Layout.build(columns, opts, is_load)
    meta = [pf.metadata.row_group(rg) for rg in range(pf.num_row_groups)]
    counts = [m.num_rows for m in meta]
    offsets = [_row_group_offset(m) for m in meta]
    read = pf.read(use_threads=False)  # every row group in one call
    if read.num_rows != sum(counts):
        raise Decline("row groups that do not add up")
    return _columnar_rows(read, counts, offsets, schema, table, is_load, layout, opts)


def _csv_record_starts(body: bytes, dialect: CsvDialect):
    """Return the byte offset of each record of delimited text (numpy int64), or ``None``.

    A line feed ends a record when an even number of quotes precede it (one inside a quoted
    value does not). ``None`` when the per-record path might read the text otherwise: an odd
    number of quotes, an empty record, or a quote that is neither at a value's start or end
    nor doubled (the per-record path's ``bad_quoting``). Quotes pair up in order: an opening
    one follows a delimiter, a record's start or a closing one (a doubled quote), a closing
    one precedes a delimiter, a record's end or an opening one.
    """
    import numpy as np

    raw = np.frombuffer(body, np.uint8)
    line_feeds = np.flatnonzero(raw == 10)
    quote, delimiter = dialect.quote_char[0], dialect.field_delimiter[0]
    quotes = np.flatnonzero(raw == quote)
    if len(quotes) % 2:
        return None
    ends = line_feeds[np.searchsorted(quotes, line_feeds) % 2 == 0]
    if len(ends) and (ends[0] == 0 or (np.diff(ends) == 1).any()):
        return None
    if len(quotes):
        before = np.where(quotes > 0, raw[np.maximum(quotes - 1, 0)], 10)
        after = np.where(quotes + 1 < len(raw), raw[np.minimum(quotes + 1, len(raw) - 1)], 10)
        opens = (before == delimiter) | (before == 10) | (before == quote)
        closes = (after == delimiter) | (after == 10) | (after == quote)
        if not np.where(np.arange(len(quotes)) % 2 == 0, opens, closes).all():
            return None
    ends = ends + 1
    if len(ends) and ends[-1] == len(body):
        ends = ends[:-1]
    return np.concatenate([np.zeros(1, np.int64), ends.astype(np.int64)])


def _decode_csv_columnar(
    data, body_start, dialect, layout, schema, table, is_load, opts, table_version
):
    """Decode a delimited change-table or full-load file with ``pyarrow.csv`` and Arrow compute.

    ``data[body_start:]`` holds the data records (after the header row, if any); ``layout`` is
    the file's columns. Returns the raw rows as a ``pyarrow.Table`` (the columns of
    :func:`_decode_parquet_columnar`, ``record_offset`` the byte where each record starts),
    equal to what the per-record path makes of the file. Raises :class:`Decline` (or the
    error of a record pyarrow refuses) when that is not certain: an encoding other than UTF-8, a record delimiter other than a line feed, a
    carriage return, an escape character, a byte-order mark, a record or value the
    per-record path would reject (wrong field count, bad quoting, undecodable bytes, a header
    or value that fails its check, a repeated change_seq, a before image without its UPDATE),
    or option ``update_unmasked_columns: absent``. The caller then decodes the file record by
    record (:func:`_fast_path`). Source: formats/qlik_change_tables.md (*CSV*); tests/test_qlik_columnar.py checks
    both paths give the same rows.
    """
    import numpy as np
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    body = data[body_start:]
    if (
        opts["update_unmasked_columns"] == "absent"
        or str(opts["encoding"]).lower().replace("_", "-") not in ("utf-8", "utf8")
        or dialect.record_delimiter != b"\n"
        or len(dialect.field_delimiter) != 1
        or len(dialect.quote_char) != 1
        or dialect.escape_char
        or dialect.field_delimiter in (b"\n", dialect.quote_char)
        or not body
        or b"\r" in body
        or body.startswith(b"\xef\xbb\xbf")
    ):
        raise Decline("an encoding, dialect or option the CSV fast path does not read")
    starts = _csv_record_starts(body, dialect)
    if starts is None:
        raise Decline("quoting the CSV fast path cannot follow")
    names = [f"c{i}" for i in range(len(layout.columns))]
    read = pcsv.read_csv(
        pa.py_buffer(body),
        read_options=pcsv.ReadOptions(column_names=names, use_threads=False),
        parse_options=pcsv.ParseOptions(
            delimiter=dialect.field_delimiter.decode("latin-1"),
            quote_char=dialect.quote_char.decode("latin-1"),
            double_quote=True,
            escape_char=False,
            newlines_in_values=True,
            ignore_empty_lines=False,
        ),
        convert_options=pcsv.ConvertOptions(
            column_types=dict.fromkeys(names, pa.string()),
            null_values=[dialect.null_value],
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
            check_utf8=True,
        ),
    )
    if read.num_rows != len(starts):
        raise Decline("records pyarrow.csv counts otherwise")
    rows = _columnar_rows(
        read,
        np.ones(len(starts), np.int64),
        starts + body_start,
        schema,
        table,
        is_load,
        layout,
        opts,
        table_version,
    )
    if layout.header_positions:
        # a repeated (change_seq, change_oper) is a reject of the per-record path
        pairs = pc.binary_join_element_wise(
            rows.column("header__change_seq"), rows.column("header__change_oper"), " "
        )
        if pc.count_distinct(pairs).as_py() != rows.num_rows:
            raise Decline("a repeated change_seq and change_oper")
    return rows


def _columnar_rows(read, counts, offsets, schema, table, is_load, layout, opts, table_version=None):
    """Return the raw rows of the Arrow table ``read`` (see :func:`_decode_parquet_columnar`).

    ``counts`` and ``offsets`` are the row count and first byte of each row group (of each
    record, for delimited text), in order; ``table_version`` the ``.dfm``'s, if any.
    Raises :class:`_NotColumnar` (or an Arrow or ValueError) where a row might be a reject.
    """
    import numpy as np
    import pyarrow.compute as pc

    n = read.num_rows
    overflow = opts["subsecond_overflow"]
    values = [read.column(i).combine_chunks() for i in range(read.num_columns)]
    out: dict[str, pa.Array] = {}
    for name in HEADER_FIELDS:
        pos = layout.header_positions.get(name)
        if pos is None:
            out[f"header__{name}"] = pa.nulls(n, pa.string())
        elif name == "change_mask":  # no mask is "" (normalize_mask_hex)
            out["header__change_mask"] = canonical_arrow.by_value(
                values[pos], normalize_mask_hex
            ).fill_null("")
        elif name == "timestamp":
            out["header__timestamp"] = _header_timestamp(values[pos], overflow)
        else:
            out[f"header__{name}"] = _as_text(values[pos])
    if layout.header_positions:
        _check_headers_columnar(out, len(layout.columns), opts)
    names = [layout.columns[p].column_name for p in layout.data_positions]
    rendered = [
        _render_column(values[p], layout.columns[p], overflow) for p in layout.data_positions
    ]
    width = len(rendered)
    if width:
        order = (np.arange(n)[:, None] + np.arange(width)[None, :] * n).ravel()
        items = pa.concat_arrays(rendered).take(pa.array(order))
    else:
        items = pa.array([], pa.string())
    keys = pa.array(np.tile(np.array(names, dtype=object), n), pa.string())
    entry_offsets = pa.array(
        np.arange(0, n * width + 1, width, dtype=np.int32)
        if width
        else np.zeros(n + 1, dtype=np.int32)
    )
    out["data"] = pa.MapArray.from_arrays(entry_offsets, keys, items)
    out["record_offset"] = pa.array(
        np.repeat(np.array(offsets, dtype=np.int64), counts), pa.int64()
    )
    out["record_index"] = pa.array(np.arange(1, n + 1, dtype=np.int64))
    out["source_schema"] = pa.repeat(pa.scalar(schema, pa.string()), n)
    out["source_table"] = pa.repeat(pa.scalar(table, pa.string()), n)
    out["table_version"] = pa.repeat(pa.scalar(table_version, pa.int64()), n)
    kind = "full_load" if is_load else "change_table"
    out["file_kind"] = pa.repeat(pa.scalar(kind, pa.string()), n)
    column_names = [c.column_name for c in layout.columns]
    out["column_names"] = pa.repeat(pa.scalar(column_names, pa.list_(pa.string())), n)
    out["header_column_count"] = pa.repeat(pa.scalar(len(layout.header_positions), pa.int32()), n)
    rows = pa.table(out)
    # a before image whose UPDATE is not in the file is a reject: the per-record path says so
    opers = rows.column("header__change_oper")
    before = pc.equal(opers, "B")
    if pc.any(before).as_py():
        seqs = rows.column("header__change_seq")
        updates = pc.filter(seqs, pc.equal(opers, "U"))
        matched = pc.is_in(pc.filter(seqs, before), value_set=updates.combine_chunks())
        if not pc.all(matched).as_py():
            raise _NotColumnar("a before image without its UPDATE")
    return rows


def _as_text(array):
    """Return a header column as the per-record path keeps it: text as is, others ``str()``."""
    if pa.types.is_string(array.type) or pa.types.is_large_string(array.type):
        return array.cast(pa.string())
    return canonical_arrow.by_value(array, str)


def _header_timestamp(array, overflow: str):
    """Return ``header__timestamp`` as canonical UTC text; empty text stays empty."""
    import pyarrow.compute as pc

    def render(value):
        return value if value == "" else canonical_timestamp(value, overflow)

    if pa.types.is_timestamp(array.type):
        return canonical_arrow.timestamps(array, overflow)
    if not pa.types.is_string(array.type):
        return canonical_arrow.by_value(array, render)
    ok, texts = canonical_arrow.timestamp_texts(array, overflow)
    empty = pc.equal(array, "").fill_null(False)
    texts = pc.if_else(empty, "", texts)
    return canonical_arrow.or_by_value(
        ok | empty.to_numpy(zero_copy_only=False), texts, array, render
    )


def _render_column(array, column: MetadataColumn, overflow: str):
    """Return one data column as canonical text (:func:`canonical_arrow.qlik_values`)."""
    return canonical_arrow.qlik_values(array, column.source_type, column.scale or 0, overflow)


def _check_headers_columnar(out: dict, column_count: int, opts) -> None:
    """Check :func:`_check_headers` over whole columns.

    Raises :class:`_NotColumnar` where a row might fail it (the per-record path then makes
    the reject).
    """
    import pyarrow.compute as pc

    seqs = out["header__change_seq"]
    if seqs.null_count or not canonical_arrow.matches(seqs, r"^[0-9]{35}$").all():
        raise _NotColumnar("a change_seq that is not 35 digits")
    opers, operations = out["header__change_oper"], out["header__operation"]
    if opers.null_count or not pc.all(pc.is_in(opers, pa.array(list(_OPERATIONS)))).as_py():
        raise _NotColumnar("a change_oper other than I, U, D, B")
    truncate_code = opts.get("truncate_oper_code")
    if truncate_code and pc.any(pc.equal(opers, truncate_code)).as_py():
        raise _NotColumnar("a truncate")
    expected = pa.nulls(len(opers), pa.string())
    for code, name in _OPERATIONS.items():
        expected = pc.if_else(pc.equal(opers, code), name, expected)
    agrees = pc.or_kleene(pc.is_null(operations), pc.equal(operations, expected))
    if not pc.all(agrees).as_py():
        raise _NotColumnar("change_oper and operation disagree")
    for mask in pc.unique(out["header__change_mask"]).to_pylist():
        if _mask_problem(mask, column_count, opts) is not None:
            raise _NotColumnar("a mask that does not fit the columns")


def _arrow_qlik_type(arrow_type) -> str:
    """Map a Parquet/Arrow type to the Qlik type used to render it (no ``.dfm`` case)."""
    import pyarrow.types as pt

    if pt.is_integer(arrow_type):
        return "INT8"
    if pt.is_decimal(arrow_type):
        return "NUMERIC"
    if pt.is_floating(arrow_type):
        return "REAL8"
    if pt.is_boolean(arrow_type):
        return "BOOLEAN"
    if pt.is_timestamp(arrow_type):
        return "DATETIME"
    if pt.is_date(arrow_type):
        return "DATE"
    if pt.is_time(arrow_type):
        return "TIME"
    if pt.is_binary(arrow_type) or pt.is_large_binary(arrow_type):
        return "BYTES"
    return "STRING"
