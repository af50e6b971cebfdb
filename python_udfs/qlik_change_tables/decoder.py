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
OPERATIONS = {"I": "INSERT", "U": "UPDATE", "D": "DELETE", "B": "BEFOREIMAGE"}
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
) -> DecodeResult:
    """Decode one change-table or full-load file record by record (the reference path).

    ``data`` is the whole file (bytes; ``.gz`` is gunzipped first, offsets then count
    uncompressed bytes). ``file_name`` is the path below the feed's landing folder; its folder
    names the table. ``sidecar`` is the ``.dfm`` text when the file has one; ``catalog`` maps
    ``(schema, table)`` to the catalog seed's columns (used for the types, and for the column
    list when there is neither ``.dfm`` nor header row). ``options`` override
    :data:`DEFAULT_OPTIONS`.

    Each row holds ``record_offset`` (bytes), ``record_index`` (1-based data record number),
    ``source_schema``, ``source_table``, ``table_version``, ``file_kind`` (``change_table`` or
    ``full_load``), ``header__*`` text (null when the file has no such column), ``column_names``
    (every column in ordinal order), ``header_column_count``, ``data`` (data column →
    canonical text) and ``start_write_timestamp`` (:func:`with_start_write_timestamp`). Never
    raises for bad input: every record that fails becomes a
    :class:`~python_udfs.records.Reject` (see *Bad input* in formats/qlik_change_tables.md).
    The fast path (``columnar.py``) gives the same rows as one Arrow table.
    """
    opts = {**DEFAULT_OPTIONS, **(options or {})}
    result = DecodeResult(consumed_end=len(data))
    try:
        opened = open_file(data, file_name, sidecar, catalog, opts, result)
        context = opened.context
        if opened.is_parquet:
            _decode_parquet(
                opened.data,
                result,
                *(context.schema, context.table, context.is_load),
                *(context.columns, context.catalog_columns, opts),
            )
        else:
            _decode_delimited(opened.data, result, context)
    except FileReject as bad:
        result.rows.clear()
        result.rejects[:] = [Reject.of(data, 0, len(data), 0, bad.reason, str(bad))]
    return with_start_write_timestamp(result, data, file_name, sidecar, opts)


def with_start_write_timestamp(
    result: DecodeResult, data: bytes, file_name: str, sidecar: str | None, opts: Mapping[str, Any]
) -> DecodeResult:
    """Give a decoded file's rows the ``.dfm``'s start time, or reject the file without one.

    Every row (and ``result.table``) holds ``start_write_timestamp``: the ``.dfm``'s
    ``fileInfo.startWriteTimestamp`` as written (null without one). With option
    ``load_position: dfm_start`` a full-load file's LOAD rows take their change position from
    it (staging model), so a full-load file with rows whose ``.dfm`` has none, or not as a date
    and time, is rejected whole (reason ``no_start_write_timestamp``): its rows would have no
    position. Both paths end here.
    """
    start = start_write_timestamp(sidecar)
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


@dataclass(frozen=True, slots=True)
class OpenedFile:
    """A change-table file ready to decode: its bytes (gunzipped), what it is read with."""

    data: bytes
    context: FileContext
    is_parquet: bool


def open_file(
    data: bytes,
    file_name: str,
    sidecar: str | None,
    catalog: Mapping[tuple[str, str], list[MetadataColumn]] | None,
    opts: Mapping[str, Any],
    result: DecodeResult,
) -> OpenedFile:
    """Read a file's ``.dfm``, name its table and gunzip it, as both paths start.

    The ``.dfm``'s columns go to ``result.metadata``; a ``.gz`` file's uncompressed length to
    ``result.consumed_end``. Raises :class:`FileReject` for a ``.dfm`` that does not parse or
    bytes that do not gunzip.
    """
    schema, table, is_load = table_from_path(file_name, opts["ct_suffix"])
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
    context = FileContext(schema, table, is_load, dfm, columns, catalog_columns, opts)
    return OpenedFile(data, context, file_name.removesuffix(".gz").lower().endswith(".parquet"))


class FileReject(Exception):
    """A whole file that cannot be read (one reject over the file): ``reason`` and message."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def _parsed_dfm(sidecar: str, file_name: str) -> tuple[dict[str, Any], list[MetadataColumn]]:
    """Parse the file's ``.dfm`` (:func:`parse_dfm`); raise FileReject when it does not."""
    try:
        return parse_dfm(sidecar)
    except ValueError as exc:
        raise FileReject("bad_metadata_file", f"{file_name}.dfm: {exc}") from exc


def _gunzipped(data: bytes) -> bytes:
    """Decompress a ``.gz`` change table; raise FileReject when it does not decompress."""
    try:
        return gzip.decompress(data)
    except (OSError, EOFError) as exc:
        raise FileReject("bad_gzip", f"cannot gunzip: {exc}") from exc


@dataclass(frozen=True, slots=True)
class FileContext:
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


@dataclass(slots=True)
class DelimitedFile:
    """A delimited change table's dialect, records, header row, columns and table version."""

    dialect: CsvDialect
    records: Any  # the records after the first (split_records)
    first: Any  # the first record, or None for an empty file
    header_names: list[str] | None
    layout: Layout
    table_version: Any


def open_delimited(data: bytes, context: FileContext) -> DelimitedFile:
    """Read a delimited file's dialect, first record, header row and columns (both paths).

    Raises :class:`FileReject` for a file whose columns cannot be known.
    """
    opts, dfm = context.opts, context.dfm
    dialect = _dialect(opts, dfm)
    field_count: list[int | None] = [None]  # set once the layout is known
    records = split_records(data, dialect, field_count)
    first = next(records, None)
    header_names = _header_row(first, context)
    columns = context.columns or _columns_without_dfm(header_names, context)
    layout = Layout.build(columns, opts, context.is_load)
    field_count[0] = len(layout.columns)
    table_version = (dfm or {}).get("dataInfo", {}).get("tableVersion")
    return DelimitedFile(dialect, records, first, header_names, layout, table_version)


def _decode_delimited(data: bytes, result: DecodeResult, context: FileContext) -> None:
    """Decode a delimited (CSV) change table into ``result``, record by record.

    Raises FileReject for a file whose columns cannot be known.
    """
    file = open_delimited(data, context)
    pending_first = file.first if file.header_names is None else None
    every = itertools.chain([pending_first] if pending_first is not None else [], file.records)
    ends = _record_rows(data, every, file.layout, file.dialect, context, file.table_version, result)
    _check_before_images(data, result, context.opts, ends)
    check_record_count(context.dfm, result)


def _header_row(first, context: FileContext) -> list[str] | None:
    """Return the column names of the file's header row, or None when it has none.

    Option ``csv_header_row`` says whether the first record is a header. Raises FileReject
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
        raise FileReject("header_metadata_mismatch", "header row differs from .dfm columns")
    return names


def _columns_without_dfm(
    header_names: list[str] | None, context: FileContext
) -> list[MetadataColumn]:
    """Return the columns of a file without ``.dfm``.

    Its header row's names, typed by the catalog where it has them (a full load without
    header row: the catalog's columns). Raises FileReject when neither says.
    """
    ordered = sorted(context.catalog_columns or [], key=lambda c: c.ordinal)
    if header_names is None and (not ordered or not context.is_load):
        raise FileReject(
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
    layout: Layout,
    dialect: CsvDialect,
    context: FileContext,
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
class Layout:
    """Column roles of one file: which positions are headers and which are data."""

    columns: tuple[MetadataColumn, ...]
    header_positions: dict[str, int]
    data_positions: tuple[int, ...]

    @classmethod
    def build(cls, columns: list[MetadataColumn], opts: Mapping[str, Any], is_load: bool) -> Layout:
        """Tell header columns (``header_prefix`` or ``header_columns``) from data columns.

        A full-load file (``is_load``) has data columns only.
        """
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


def _record_to_row(fields, layout: Layout, opts, dialect: CsvDialect):
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


def _values_to_row(values: list[Any], layout: Layout, opts):
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
        elif oper not in OPERATIONS:
            return "unknown_operation", f"unknown change_oper {oper!r}"
        elif operation is not None and operation != OPERATIONS[oper]:
            return "operation_mismatch", f"change_oper {oper!r} but operation {operation!r}"
    elif operation not in ("INSERT", "UPDATE", "DELETE", "BEFOREIMAGE", "TRUNCATE"):
        return "unknown_operation", f"no change_oper and operation {operation!r}"
    return mask_problem(row["header__change_mask"], column_count, opts)


def mask_problem(mask: str | None, column_count: int, opts) -> tuple[str, str] | None:
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


def check_record_count(dfm: Mapping[str, Any] | None, result: DecodeResult) -> None:
    """Warn when the ``.dfm``'s ``fileInfo.recordCount`` is not the records read (rows, rejects)."""
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
    columns = parquet_columns(pf.schema_arrow, schema, table, columns, catalog_columns)
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
    layout = Layout.build(columns, opts, is_load)
    index = 0
    ends: dict[int, int] = {}
    for rg in range(pf.num_row_groups):
        meta = pf.metadata.row_group(rg)
        rg_offset = row_group_offset(meta)
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


def parquet_columns(arrow_schema, schema, table, columns, catalog_columns):
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


def row_group_offset(meta) -> int:
    """Return a row group's first byte in the file (its first dictionary or data page).

    It is the ``record_offset`` of each of the row group's rows.
    """
    return min(
        (meta.column(i).dictionary_page_offset or meta.column(i).data_page_offset)
        for i in range(meta.num_columns)
    )


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
