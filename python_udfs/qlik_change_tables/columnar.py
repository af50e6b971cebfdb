"""The fast path of the Qlik change-table decoder: a file's raw rows built by column (issue 47).

:func:`decode_or_decline` reads a change-table or full-load file as
:func:`decoder.decode_change_table_file` (the reference path) does, with the same raw row
columns, metadata and warnings, but builds the rows as Arrow columns instead of one ``dict``
per record:

1. the file is opened as the reference opens it (:func:`decoder.open_file`: its ``.dfm``, its
   table, gunzip) and a delimited file's header row and columns are read the same way
   (:func:`decoder.open_delimited`);
2. Parquet is read with ``pyarrow.parquet``, delimited text with ``pyarrow.csv`` (one record
   per line feed, checked against the quote characters first);
3. the header columns are checked over whole columns (change_seq, change_oper and operation,
   masks once per distinct mask) and every data column is rendered by
   :func:`python_udfs.canonical_arrow.qlik_values`.

A file with anything the fast path does not read in bulk raises
:class:`~python_udfs.byte_fields.Decline` (and the reference reads it): a value, header or
record to reject, a before image without its UPDATE, a repeated change_seq and change_oper, a
quoted value over two lines, a dialect or encoding other than the common one, option
``update_unmasked_columns: absent``, a ``.dfm`` or gzip stream the reference rejects.
``tests/test_qlik_columnar.py`` checks that both paths give the same rows.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from python_udfs import canonical_arrow
from python_udfs.byte_fields import Decline, none_when_declined
from python_udfs.canonical import canonical_timestamp, normalize_mask_hex
from python_udfs.qlik_change_tables import decoder as ref
from python_udfs.qlik_change_tables.decoder import HEADER_FIELDS, CsvDialect
from python_udfs.records import DecodeResult, MetadataColumn


def decode_or_decline(
    data: bytes,
    *,
    file_name: str,
    sidecar: str | None = None,
    catalog: Mapping[tuple[str, str], list[MetadataColumn]] | None = None,
    options: Mapping[str, Any] | None = None,
) -> DecodeResult:
    """Decode a file as :func:`decoder.decode_change_table_file` does, as ``result.table``.

    Same arguments and result, except that the rows are one ``pyarrow.Table`` (the
    reference's row keys as columns, in file order) and ``result.rows`` is empty. Raises
    :class:`Decline` when the file holds something only the reference reads (the module's
    docstring lists what), or the error of bytes pyarrow refuses.
    """
    opts = {**ref.DEFAULT_OPTIONS, **(options or {})}
    result = DecodeResult(consumed_end=len(data))
    try:
        opened = ref.open_file(data, file_name, sidecar, catalog, opts, result)
        context = opened.context
        if opened.is_parquet:
            result.table = _decode_parquet(
                opened.data,
                *(context.schema, context.table, context.is_load),
                *(context.columns, context.catalog_columns, opts),
            )
        else:
            result.table = _decode_delimited(opened.data, context)
            ref.check_record_count(context.dfm, result)
    except ref.FileReject as bad:
        raise Decline(f"the reference rejects the file ({bad.reason})") from bad
    return ref.with_start_write_timestamp(result, data, file_name, sidecar, opts)


decode_columnar = none_when_declined(decode_or_decline)


def _decode_delimited(data: bytes, context: ref.FileContext) -> pa.Table:
    """Return a delimited file's rows (:func:`_decode_csv`) after its header row, if any."""
    file = ref.open_delimited(data, context)
    if file.first is None:
        raise Decline("no records")
    body_start = file.first[1] if file.header_names is not None else 0
    return _decode_csv(
        data,
        body_start,
        file.dialect,
        file.layout,
        *(context.schema, context.table, context.is_load),
        context.opts,
        file.table_version,
    )


def _decode_parquet(data, schema, table, is_load, columns, catalog_columns, opts):
    """Decode a Parquet change-table file with Arrow compute, no Python object per record.

    Returns a ``pyarrow.Table`` with the columns of a raw row (``header__*``, ``data`` as
    ``map<string,string>``, ``record_offset``, ``record_index``, ``source_schema``,
    ``source_table``, ``table_version``, ``file_kind``, ``column_names``,
    ``header_column_count``), equal to what the reference's ``_decode_parquet`` makes of the file. Raises
    :class:`Decline` (or the error of a file that does not read) when that is not certain: a
    header value fails its check,
    a value fails to render, a before image has no UPDATE, or option
    ``update_unmasked_columns: absent`` (a map per mask). The caller then decodes the file
    record by record, which makes the rejects. Values render with the same rules
    (:mod:`python_udfs.canonical`), once per distinct value; integers, strings, exact
    decimals of the declared scale and timestamps are rendered by Arrow itself
    (tests/test_qlik_columnar.py checks both paths give the same rows).
    """
    import pyarrow.parquet as pq

    if opts["update_unmasked_columns"] == "absent":
        raise Decline("option update_unmasked_columns: absent")
    pf = pq.ParquetFile(io.BytesIO(data))
    columns = ref.parquet_columns(pf.schema_arrow, schema, table, columns, catalog_columns)
    if columns is None:
        raise Decline("Parquet columns the .dfm and the catalog do not settle")
    layout = ref.Layout.build(columns, opts, is_load)
    meta = [pf.metadata.row_group(rg) for rg in range(pf.num_row_groups)]
    counts = [m.num_rows for m in meta]
    offsets = [ref.row_group_offset(m) for m in meta]
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


def _decode_csv(data, body_start, dialect, layout, schema, table, is_load, opts, table_version):
    """Decode a delimited change-table or full-load file with ``pyarrow.csv`` and Arrow compute.

    ``data[body_start:]`` holds the data records (after the header row, if any); ``layout`` is
    the file's columns. Returns the raw rows as a ``pyarrow.Table`` (the columns of
    :func:`_decode_parquet`, ``record_offset`` the byte where each record starts),
    equal to what the per-record path makes of the file. Raises :class:`Decline` (or the
    error of a record pyarrow refuses) when that is not certain: an encoding other than UTF-8, a record delimiter other than a line feed, a
    carriage return, an escape character, a byte-order mark, a record or value the
    per-record path would reject (wrong field count, bad quoting, undecodable bytes, a header
    or value that fails its check, a repeated change_seq, a before image without its UPDATE),
    or option ``update_unmasked_columns: absent``. The caller then decodes the file record by
    record. Source: formats/qlik_change_tables.md (*CSV*); tests/test_qlik_columnar.py checks
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
    """Return the raw rows of the Arrow table ``read`` (see :func:`_decode_parquet`).

    ``counts`` and ``offsets`` are the row count and first byte of each row group (of each
    record, for delimited text), in order; ``table_version`` the ``.dfm``'s, if any.
    Raises :class:`Decline` (or an Arrow or ValueError) where a row might be a reject.
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
        _check_headers(out, len(layout.columns), opts)
    names = [layout.columns[p].column_name for p in layout.data_positions]
    rendered = [
        render_column(values[p], layout.columns[p], overflow) for p in layout.data_positions
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
            raise Decline("a before image without its UPDATE")
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


def render_column(array, column: MetadataColumn, overflow: str):
    """Return one data column as canonical text (:func:`canonical_arrow.qlik_values`)."""
    return canonical_arrow.qlik_values(array, column.source_type, column.scale or 0, overflow)


def _check_headers(out: dict, column_count: int, opts) -> None:
    """Check :func:`_check_headers` over whole columns.

    Raises :class:`Decline` where a row might fail it (the per-record path then makes
    the reject).
    """
    import pyarrow.compute as pc

    seqs = out["header__change_seq"]
    if seqs.null_count or not canonical_arrow.matches(seqs, r"^[0-9]{35}$").all():
        raise Decline("a change_seq that is not 35 digits")
    opers, operations = out["header__change_oper"], out["header__operation"]
    if opers.null_count or not pc.all(pc.is_in(opers, pa.array(list(ref.OPERATIONS)))).as_py():
        raise Decline("a change_oper other than I, U, D, B")
    truncate_code = opts.get("truncate_oper_code")
    if truncate_code and pc.any(pc.equal(opers, truncate_code)).as_py():
        raise Decline("a truncate")
    expected = pa.nulls(len(opers), pa.string())
    for code, name in ref.OPERATIONS.items():
        expected = pc.if_else(pc.equal(opers, code), name, expected)
    agrees = pc.or_kleene(pc.is_null(operations), pc.equal(operations, expected))
    if not pc.all(agrees).as_py():
        raise Decline("change_oper and operation disagree")
    for mask in pc.unique(out["header__change_mask"]).to_pylist():
        if ref.mask_problem(mask, column_count, opts) is not None:
            raise Decline("a mask that does not fit the columns")
