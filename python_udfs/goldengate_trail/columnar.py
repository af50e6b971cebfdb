"""The fast path of the GoldenGate trail decoder: a trail's raw rows built by column (issue 47).

:func:`decode_columnar` reads a trail as :func:`decoder.decode_trail_file` (the reference
path) does, with the same raw row columns, metadata and warnings, but builds the rows as Arrow
columns instead of one ``dict`` per record:

1. one Python step per record follows the record lengths (a record starts where the one before
   it ends; formats/goldengate_trail.md, *Token framing*), and one more resolves each record's
   table (a name or a TDR index at GHDR offset 34; a TDR record redefines an index);
2. numpy reads everything else over all records at once: the trailers, the sub-tokens ``H``
   ``D`` ``T``, the GHDR fields (one structured ``dtype`` of :data:`decoder.GHDR`'s layout), the
   GGS tokens and the column entries of every image, one token or entry deep per step;
3. values are rendered per column of a table definition: integers, scaled integers, floats and
   UTF-8 text with Arrow compute (:data:`_VECTOR_READERS`), every other type with the
   reference's :func:`decoder.column_value`, once per distinct payload.

A trail with anything the fast path does not read in bulk goes to the reference path whole
(:func:`decode_columnar` returns None): a record that does not frame or parse (a reject), a
segmented record, an unknown or NonStop IOType, a FieldComp before image without its after
image, a TransInd out of sequence, a GGS token twice in one record, a truncated last record of a
final file. ``tests/test_goldengate_columnar.py`` checks that both paths give the same rows,
rejects, metadata and warnings on the real samples, the simulator's trails and damaged trails.
"""

from __future__ import annotations

import codecs
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from python_udfs import canonical_arrow
from python_udfs.byte_fields import Decline, binary, check, fixed, none_when_declined, u16, u32
from python_udfs.goldengate_trail import decoder as ref
from python_udfs.goldengate_trail.decoder import GHdr, IOType, TokenId, TransInd
from python_udfs.records import DecodeResult

#: numpy field types of :class:`decoder.GHdr`, in :data:`decoder.GHDR`'s layout
#: (``cBBcHBBqQIBcBBBB``, 34 bytes); the byte order is prefixed per trail.
_GHDR_FIELD_TYPES = ("S1", "u1", "u1", "S1", "u2", "u1", "u1", "i8", "u8", "u4")
_GHDR_FIELD_TYPES += ("u1", "S1", "u1", "u1", "u1", "u1")
_GHDR_DTYPES = {
    order: np.dtype(
        [
            (name, (order + kind) if kind[1] != "1" else kind)
            for name, kind in zip(GHdr._fields, _GHDR_FIELD_TYPES, strict=True)
        ]
    )
    for order in "><"
}
_GHDR_SIZE = ref.GHDR[">"].size
#: The GHDR offset of the table reference: a NUL-terminated name or a u16 TDR index.
_TABLE_REFERENCE_OFFSET = _GHDR_SIZE


@functools.cache
def _latin1() -> pa.Array:
    """Text of each byte read as latin-1 (``before_after``, ``format_type``, token ids).

    Built on first use: ``pa.array`` of a list imports pandas, which importing this module
    need not pay for.
    """
    return pa.array([chr(b) for b in range(256)])


#: IOTypes whose data area holds two images: ``(before-image length size in bytes)``.
_TWO_IMAGES = {
    IOType.UNIFIED_UPDATE: 4,
    IOType.UNIFIED_PK_UPDATE: 4,
    IOType.PK_UPDATE: 2,
    IOType.PK_UPDATE_ALT: 2,
}
_INT_SIZES = {130: "i2", 131: "u2", 132: "i4", 133: "u4", 134: "i8", 135: "u8"}
_NUMBER_TEXT_SUBTYPES = (2, 3, 27, 37)


def decode_or_decline(
    data: bytes,
    *,
    file_name: str,
    definitions: Mapping[str, ref.GGTable] | None = None,
    options: Mapping[str, Any] | None = None,
    start: int = 0,
    start_index: int = 0,
    final: bool = False,
) -> DecodeResult | None:
    """Decode one trail as :func:`decoder.decode_trail_file` does, its rows as ``result.table``.

    Same arguments and the same result, except that the rows are one ``pyarrow.Table`` (the
    reference's row keys as columns, rows in RBA order) and ``result.rows`` is empty. Raises
    :class:`Decline` when the trail holds something only the reference path reads (the
    module's docstring lists what); never raises anything else for bad input.
    """
    opts = {**ref.DEFAULT_OPTIONS, **(options or {})}
    final = final or opts["incomplete_tail"] == "reject"
    result = DecodeResult(consumed_end=max(start, 0))
    state = ref.open_trail(data, file_name, definitions, opts, final, result)
    if state is None:
        return result
    _Walk(state, opts, result, start, start_index, final).run()
    return result


decode_columnar = none_when_declined(decode_or_decline)


def _walk_entries(
    buf: np.ndarray, lo: np.ndarray, hi: np.ndarray, order: str, tokens: bool
) -> tuple[np.ndarray, ...]:
    """Split every span ``[lo, hi)`` into its tokens or column entries, all spans at once.

    Tokens are ``[id u8][info u8][u16 length]`` (a u32 length when info is ``0x40``), column
    entries ``[u16 index][u16 length]`` (formats/goldengate_trail.md). Returns
    ``(span, id or index, value start, value end)``, ordered by span, then position. Declines
    where an entry overruns its span, as :func:`decoder._tokens` and :func:`decoder._image`
    reject it.
    """
    span = np.arange(len(lo))
    pos, end = lo, hi
    live = pos < end
    span, pos, end = span[live], pos[live], end[live]
    found: list[tuple[np.ndarray, ...]] = []
    while len(pos):
        check(pos + 4 <= end)
        if tokens:
            ids, long = buf[pos].astype(np.int64), buf[pos + 1] == ref.LONG_LENGTH_INFO
            size = np.where(long, 6, 4)
            check(pos + size <= end)
            length = np.where(long, u32(buf, pos + 2, order), u16(buf, pos + 2, order))
        else:
            ids, size, length = u16(buf, pos, order), 4, u16(buf, pos + 2, order)
        value_end = pos + size + length
        check(value_end <= end)
        found.append((span, ids, pos + size, value_end))
        more = value_end < end
        span, pos, end = span[more], value_end[more], end[more]
    if not found:
        return tuple(np.zeros(0, np.int64) for _ in range(4))
    # entry k of a span goes to the span's first slot + k: span, then position, without a sort
    first = np.zeros(len(lo) + 1, dtype=np.int64)
    np.cumsum(np.bincount(np.concatenate([f[0] for f in found]), minlength=len(lo)), out=first[1:])
    out = [np.empty(first[-1], dtype=np.int64) for _ in range(4)]
    for step, columns in enumerate(found):
        slots = first[columns[0]] + step
        for target, column in zip(out, columns, strict=True):
            target[slots] = column
    return tuple(out)


def _first_of(entries: tuple[np.ndarray, ...], wanted: int, count: int) -> np.ndarray:
    """Return ``[count, 2]``: each owner's first entry with id ``wanted``, ``(-1, -1)`` if none.

    ``entries`` are :func:`_walk_entries`' (ordered by owner, then position).
    """
    owner, ids, vs, ve = entries
    spans = np.full((count, 2), -1, dtype=np.int64)
    picked = np.flatnonzero(ids == wanted)
    owners = owner[picked]
    changes = np.concatenate([np.ones(min(len(owners), 1), bool), owners[1:] != owners[:-1]])
    first = picked[changes]
    spans[owner[first], 0], spans[owner[first], 1] = vs[first], ve[first]
    return spans


def _utf8(buf: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> pa.Array:
    """Decode the byte ranges from UTF-8; decline where one is not valid UTF-8."""
    try:
        return binary(buf, lo, hi).cast(pa.string())
    except pa.ArrowInvalid as exc:
        raise Decline from exc


@dataclass(frozen=True, slots=True)
class _Column:
    """One column of a table definition as the value readers get it."""

    column: ref.GGColumn
    charset: str
    opts: Mapping[str, Any]


def _python_values(data: bytes, lo: np.ndarray, hi: np.ndarray, col: _Column) -> pa.Array:
    """Render payloads by the reference's :func:`decoder.column_value`, once per distinct one.

    Declines where the reference raises (a bad value: the reference path rejects the record).
    """
    seen: dict[bytes, str] = {}
    out = []
    for a, b in zip(lo.tolist(), hi.tolist(), strict=True):
        payload = data[a:b]
        text = seen.get(payload)
        if text is None:
            try:
                text = ref.column_value(col.column, payload, col.charset, col.opts)
            except Exception as exc:  # noqa: BLE001 - the reference path reports it
                raise Decline from exc
            seen[payload] = text
        out.append(text)
    return pa.array(out, pa.string())


def _integers(
    buf: np.ndarray, data: bytes, lo: np.ndarray, hi: np.ndarray, col: _Column
) -> pa.Array:
    """Render types 130–135 as :func:`decoder._integer_value` does, scaled by ``scale``."""
    kind, scale = _INT_SIZES[col.column.data_type], col.column.scale
    size = int(kind[1])
    check(hi - lo == size)
    order = "<" if col.opts.get("column_int_order") == "<" else ">"
    values = fixed(buf, lo, size, order + kind).astype(kind)  # native order: Arrow's
    if scale < 0 or (kind[0] == "i" and (values == np.iinfo(values.dtype).min).any()):
        return _python_values(data, lo, hi, col)
    if scale == 0:
        return canonical_arrow.integers(values)
    return canonical_arrow.scaled_integers(np.abs(values), values < 0, scale)


def _floats(buf: np.ndarray, data: bytes, lo: np.ndarray, hi: np.ndarray, col: _Column) -> pa.Array:
    """Render types 140–143 as :func:`decoder._float_value`: ``repr`` of the big-endian value."""
    sizes = np.unique(hi - lo)
    if len(sizes) != 1 or int(sizes[0]) not in (4, 8):
        return _python_values(data, lo, hi, col)
    size = int(sizes[0])
    values = fixed(buf, lo, size, ">f4" if size == 4 else ">f8")
    return canonical_arrow.floats(values.astype(np.float64))  # native order, as Arrow reads


def _text(buf: np.ndarray, data: bytes, lo: np.ndarray, hi: np.ndarray, col: _Column) -> pa.Array:
    """Render types 0/1 (fixed CHAR) and 64/65 (VARCHAR: a big-endian u16 length, then the body).

    UTF-8 text is decoded by Arrow; other character sets, number text (sub-types 2, 3, 27,
    37), binary (4) and UTF-16 (1) VARCHARs go to :func:`_python_values`.
    """
    column = col.column
    utf8 = codecs.lookup(col.charset).name == "utf-8"
    if column.data_type in (0, 1):
        return _utf8(buf, lo, hi) if utf8 else _python_values(data, lo, hi, col)
    if not utf8 or column.sub_type in (*_NUMBER_TEXT_SUBTYPES, 4, 1):
        return _python_values(data, lo, hi, col)
    check(hi - lo >= 2)
    length = u16(buf, lo, ">")
    check(length <= hi - lo - 2)
    return _utf8(buf, lo + 2, lo + 2 + length)


def _datetimes(
    buf: np.ndarray, data: bytes, lo: np.ndarray, hi: np.ndarray, col: _Column
) -> pa.Array:
    """Render type 192 as :func:`decoder._datetime` does, by MSDT and LSDT.

    In bulk: a DATE column (MSDT 0, LSDT ≤ 2) of ``YYYY-MM-DD…`` payloads, and a TIMESTAMP
    column (MSDT 0) of ``YYYY-MM-DD:HH:MI:SS[.f…]`` payloads, all of one length (GoldenGate
    writes them so: formats/goldengate_trail.md, *Values*), by
    :func:`canonical_arrow.date_texts` and :func:`canonical_arrow.timestamp_texts`. Any other
    shape, a TIME, option ``datetime_kind: timestamp_always``, a byte above 0x7F and a value
    those refuse go to :func:`_python_values`, which renders or rejects them as the reference
    does.
    """
    column, sizes = col.column, np.unique(hi - lo)
    if column.msdt != 0 or col.opts.get("datetime_kind") == "timestamp_always" or len(sizes) != 1:
        return _python_values(data, lo, hi, col)
    size = int(sizes[0])
    if size < 10 or (column.lsdt > 2 and size != 19 and size < 21):
        return _python_values(data, lo, hi, col)
    if (buf[lo[:, None] + np.arange(size)] >= 0x80).any():
        return _python_values(data, lo, hi, col)
    if column.lsdt <= 2:
        ok, texts = canonical_arrow.date_texts(binary(buf, lo, lo + 10).cast(pa.string()))
    else:
        overflow = col.opts.get("subsecond_overflow", "truncate")
        texts = binary(buf, lo, hi).cast(pa.string())
        ok, texts = canonical_arrow.timestamp_texts(texts, overflow)
    return texts if ok.all() else _python_values(data, lo, hi, col)


#: The vectorized reader of each GoldenGate data type the fast path renders in bulk; every
#: other type is rendered per distinct payload by the reference (:func:`_python_values`).
_VECTOR_READERS = {
    **dict.fromkeys(_INT_SIZES, _integers),
    **dict.fromkeys((140, 141, 142, 143), _floats),
    **dict.fromkeys((0, 1, 64, 65), _text),
    192: _datetimes,
}


def _render(buf: np.ndarray, data: bytes, lo: np.ndarray, hi: np.ndarray, col: _Column) -> pa.Array:
    """Render the payloads ``[lo, hi)`` of one column (after the null indicator) as text."""
    reader = _VECTOR_READERS.get(col.column.data_type)
    if reader is None:
        return _python_values(data, lo, hi, col)
    return reader(buf, data, lo, hi, col)


@dataclass(slots=True)
class _Records:
    """Every framed record of the trail: where it is, its GHDR, its sub-token spans."""

    starts: np.ndarray
    lengths: np.ndarray
    ghdr: np.ndarray  # structured, _GHDR_DTYPES
    header: np.ndarray  # [n, 2] span of 'H'
    body: np.ndarray  # [n, 2] span of 'D', (-1, -1) when absent
    tokens: np.ndarray  # [n, 2] span of 'T', (-1, -1) when absent


class _Walk:
    """One fast decode of a trail after its file header, into ``result``."""

    def __init__(self, state, opts, result: DecodeResult, start, start_index, final) -> None:
        self.state, self.opts, self.result = state, opts, result
        self.start, self.start_index, self.final = start, start_index, final
        self.data = state.data
        self.buf = np.frombuffer(state.data, dtype=np.uint8)
        self.order = state.order

    def run(self) -> None:
        """Frame, parse and render every record; the emitted rows go to ``result.table``."""
        records = self._records()
        self._check_headers(records)
        tables, tdr_index, metadata = self._tables(records)
        emitted = np.flatnonzero(records.starts >= self.start)
        columns = self._header_columns(records, emitted)
        columns.update(self._token_columns(records, emitted))
        columns.update(self._table_columns(emitted, tables, tdr_index))
        columns.update(self._image_columns(records, emitted, tables))
        self._check_sequence(records, emitted)
        result = self.result
        for i, table in metadata.items():  # a TDR: its table lands in raw_metadata
            if table is not None and records.starts[i] >= self.start:
                index = self.start_index + 1 + int(np.searchsorted(emitted, i))
                result.metadata.extend(table.metadata(int(records.starts[i]), index))
        for name in sorted(self.state.used):  # sourcedefs tables this file used: for scaffold
            if self.state.tables[name].source == "sourcedefs":
                result.metadata.extend(self.state.tables[name].metadata())
        result.table = pa.table(columns)
        if len(emitted):
            last = emitted[-1]
            result.consumed_end = int(records.starts[last] + records.lengths[last])

    def _frames(self) -> tuple[np.ndarray, np.ndarray]:
        """Follow the record lengths from the file header: ``(record starts, record lengths)``.

        Declines at a record that is not a ``G`` or is shorter than 8 bytes. A last record
        the file does not hold whole is left for the next run, or declined when final.
        """
        data, unpack = self.data, self.state.u16.unpack_from
        pos, size, starts, lengths = self.state.header_length, len(self.data), [], []
        while pos + 4 <= size:
            if data[pos] != TokenId.RECORD:
                raise Decline
            length = unpack(data, pos + 2)[0]
            if length < ref.MIN_RECORD_LENGTH:
                raise Decline
            if pos + length > size:
                break
            starts.append(pos)
            lengths.append(length)
            pos += length
        if pos < size and self.final:
            raise Decline  # the reference rejects the truncated record
        return np.array(starts, dtype=np.int64), np.array(lengths, dtype=np.int64)

    def _records(self) -> _Records:
        """Frame every record, check its trailer, and find its ``H``, ``D`` and ``T`` spans.

        Declines where a trailer does not repeat its record's length, sub-tokens do not add
        up, or a record has no GHDR of 34 bytes (:func:`decoder._frame`,
        :func:`decoder._record_parts`, :func:`decoder._header_row` reject those).
        """
        buf, order = self.buf, self.order
        starts, lengths = self._frames()
        ends = starts + lengths
        check(buf[ends - 4] == TokenId.TRAILER)
        check(u16(buf, ends - 2, order) == lengths)
        subtokens = _walk_entries(buf, starts + 4, ends - 4, order, tokens=True)
        header = _first_of(subtokens, TokenId.HEADER, len(starts))
        check(header[:, 1] - header[:, 0] >= _GHDR_SIZE)  # also: every record has its 'H'
        return _Records(
            starts,
            lengths,
            fixed(buf, header[:, 0], _GHDR_SIZE, _GHDR_DTYPES[order]),
            header,
            _first_of(subtokens, TokenId.DATA, len(starts)),
            _first_of(subtokens, TokenId.TOKENS, len(starts)),
        )

    def _check_headers(self, records: _Records) -> None:
        """Decline what :func:`decoder._header_row` and :func:`decoder._record` reject or warn of.

        Declines on a header indicator other than ``E``, a NonStop or unknown IOType, a
        segment (Continued = Y), and a ``D`` area whose length is not RecLength.
        """
        ghdr = records.ghdr
        check(ghdr["hdr_ind"] == b"E")
        check(np.isin(ghdr["io_type"], list(ref.IO_TYPES)))
        check(ghdr["continued"] == 0)
        body = records.body
        check((body[:, 0] < 0) | (body[:, 1] - body[:, 0] == ghdr["rec_length"]))

    def _io_times(self, io_time: np.ndarray) -> pa.Array:
        """Render IO Time as :func:`decoder.julian_to_text` does (null where not positive).

        Once per run of equal values, by :func:`canonical_arrow.timestamps`; a time ``datetime``
        cannot hold is the reference's reject.
        """
        starts = np.concatenate([np.ones(min(len(io_time), 1), bool), io_time[1:] != io_time[:-1]])
        if starts.sum() < len(io_time):  # a transaction's records share one: render it once
            texts = self._io_times(io_time[starts])
            return texts.take(pa.array(np.cumsum(starts) - 1))
        micros = pa.array(
            io_time - ref.JULIAN_UNIX_OFFSET_US, pa.timestamp("us"), mask=io_time <= 0
        )
        try:
            return canonical_arrow.timestamps(micros, self.opts["subsecond_overflow"])
        except (ValueError, ArithmeticError) as exc:  # no datetime: the reference's reject
            raise Decline from exc

    def _tables(self, records: _Records) -> tuple[list[ref.GGTable], np.ndarray, dict]:
        """Resolve every record's table as the reference does in file order.

        The TDR records are read in order first (:meth:`_read_tdrs`); every other record's
        table reference (a name, or a TDR index as the TDRs before it define it) is resolved
        once per distinct reference and number of TDRs before it. Returns ``(tables, TDR index
        per record (-1: none), {record: its TDR's table or None})`` and sets
        ``self.table_of`` (each record's table number, -1 for none), ``self.names`` (the
        ``table_name`` texts) and ``self.name_codes`` (each record's, -1 for none). Declines
        where the reference rejects: a TDR that does not parse, or an emitted change record of
        a table without a definition.
        """
        n, io_type = len(records.starts), records.ghdr["io_type"]
        is_metadata = io_type == IOType.METADATA
        snapshots, metadata = self._read_tdrs(records, np.flatnonzero(is_metadata))
        epoch = np.cumsum(is_metadata) - is_metadata  # TDR records before each record
        heads = records.header
        tails = binary(self.buf, heads[:, 0] + _TABLE_REFERENCE_OFFSET, heads[:, 1])
        tails = tails.dictionary_encode()
        references = [ref.reference_at(t, self.order) for t in tails.dictionary.to_pylist()]
        changes = np.flatnonzero(~is_metadata)
        pairs = np.asarray(tails.indices)[changes].astype(np.int64) * len(snapshots)
        distinct, inverse = np.unique(pairs + epoch[changes], return_inverse=True)
        self.names: dict[str, int] = {}
        tables: list[ref.GGTable] = []
        resolved = np.full((len(distinct), 3), -1, dtype=np.int64)  # table, name, TDR index
        for k, pair in enumerate(distinct.tolist()):
            (name, index), (by_name, by_index) = (
                references[pair // len(snapshots)],
                snapshots[pair % len(snapshots)],
            )
            table = by_name.get(name) if name else by_index.get(index)
            if table is not None:
                self.state.used.add(table.name)
                resolved[k, 0] = next((j for j, t in enumerate(tables) if t is table), len(tables))
                tables += [table] if resolved[k, 0] == len(tables) else []
                name = table.name
            if name is not None:
                resolved[k, 1] = self.names.setdefault(name, len(self.names))
            resolved[k, 2] = -1 if index is None else index
        self.table_of, self.name_codes = np.full(n, -1, np.int64), np.full(n, -1, np.int64)
        tdr_index = np.full(n, -1, np.int64)
        self.table_of[changes], self.name_codes[changes], tdr_index[changes] = resolved[inverse].T
        for row, table in metadata.items():
            if table is not None:
                self.name_codes[row] = self.names.setdefault(table.name, len(self.names))
        unresolved = (self.table_of < 0) & ~is_metadata & (io_type != IOType.DDL)
        check(~(unresolved & (records.starts >= self.start)))
        return tables, tdr_index, metadata

    def _read_tdrs(self, records: _Records, rows: np.ndarray) -> tuple[list[tuple], dict]:
        """Read the metadata records ``rows`` in order (:func:`decoder.metadata_record`).

        Returns ``(snapshots, {row: its table or None})``: snapshot ``k`` is the table
        definitions by name and by TDR index after ``k`` TDR records. Declines on a TDR that
        does not parse.
        """
        state = self.state
        snapshots = [(dict(state.tables), dict(state.tdrs))]
        metadata = {}
        for row in rows.tolist():
            (hs, he), ds, de = records.header[row], *np.maximum(records.body[row], 0).tolist()
            origin = int(records.ghdr["orig_node"][row])
            try:
                metadata[row] = ref.metadata_record(state, self.data[hs:he], ds, de, origin)
            except Exception as exc:  # noqa: BLE001 - the reference path rejects it
                raise Decline from exc
            snapshots.append((dict(state.tables), dict(state.tdrs)))
        return snapshots, metadata

    def _header_columns(self, records: _Records, emitted: np.ndarray) -> dict[str, Any]:
        """Return the emitted records' position and GHDR columns (:func:`decoder._header_row`)."""
        ghdr, count = records.ghdr, len(emitted)
        io_time = self._io_times(ghdr["io_time"])  # every record's: a bad one is a reject
        columns: dict[str, Any] = {
            "record_offset": records.starts[emitted],
            "record_length": records.lengths[emitted],
            "record_index": self.start_index + 1 + np.arange(count, dtype=np.int64),
            "trail_seqno": np.full(count, self.state.seqno, dtype=np.int64),
        }
        ghdr = ghdr[emitted]
        for name in GHdr._fields:
            if name in ("hdr_ind", "before_after", "format_type"):
                columns[name] = _latin1().take(pa.array(ghdr[name].view(np.uint8)))
            elif name == "audit_pos":  # u64: digits, so that no value overflows a bigint
                columns[name] = pa.array(ghdr[name].astype(np.uint64)).cast(pa.string())
            elif name == "io_time":
                columns[name] = io_time.take(pa.array(emitted))
            else:
                columns[name] = ghdr[name].astype(np.int64)
        return columns

    def _token_columns(self, records: _Records, emitted: np.ndarray) -> dict[str, Any]:
        """Return the GGS token columns (:func:`decoder._ggs_tokens`, :func:`decoder._carry`).

        Every record's tokens are read (the transaction's ``6`` and ``L`` tokens carry from
        records before ``start``); declines on tokens that overrun their area, or one token id
        twice in a record.
        """
        n, spans = len(records.starts), records.tokens
        present = np.flatnonzero(spans[:, 0] >= 0)
        owner, ids, vs, ve = _walk_entries(
            self.buf, spans[present, 0], spans[present, 1], self.order, tokens=True
        )
        owner = present[owner]
        _check_unique(owner, ids)
        values = self._token_values(ids, vs, ve)
        row_of = np.full(n, -1, dtype=np.int64)
        row_of[emitted] = np.arange(len(emitted))
        mine = row_of[owner] >= 0
        columns = {
            "tokens": _map(
                row_of[owner[mine]],
                len(emitted),
                _latin1().take(pa.array(ids[mine])),
                values.filter(pa.array(mine)),
                None,
            )
        }
        trans_ind = records.ghdr["trans_ind"]
        reset = (trans_ind == TransInd.FIRST) | (trans_ind == TransInd.ONLY)
        for column, token, carried in (
            ("token_row_id", TokenId.ROW_ID, None),
            ("token_log_csn", TokenId.LOG_CSN, "log_csn"),
            ("token_tran_id", TokenId.TRAN_ID, "transaction_id"),
        ):
            entry = np.full(n, -1, dtype=np.int64)
            entry[owner[ids == token]] = np.flatnonzero(ids == token)
            columns[column] = _pick(values, entry[emitted])
            if carried:
                columns[carried] = _pick(values, _carry(entry, reset)[emitted])
        return columns

    def _token_values(self, ids: np.ndarray, vs: np.ndarray, ve: np.ndarray) -> pa.Array:
        """Return every token's text (:func:`decoder.token_text`), ASCII text by Arrow."""
        long_row_id = (ids == TokenId.ROW_ID) & (ve - vs >= 18)
        bulk = np.flatnonzero(long_row_id | np.isin(ids, [TokenId.LOG_CSN, TokenId.TRAN_ID]))
        ends = np.where(long_row_id, vs + 18, ve)[bulk]
        text = binary(self.buf, vs[bulk], ends)
        body = text.buffers()[2]  # the values' bytes, one after the other
        if body is not None and (np.frombuffer(body, np.uint8) >= 0x80).any():
            bulk, text = bulk[:0], text[:0]  # not ASCII: U+FFFD, as the reference writes it
        rest = np.setdiff1d(np.arange(len(ids)), bulk, assume_unique=True)
        data = self.data
        texts = [
            ref.token_text(t, data[a:b])
            for t, a, b in zip(
                ids[rest].tolist(), vs[rest].tolist(), ve[rest].tolist(), strict=True
            )
        ]
        merged = pa.concat_arrays([text.cast(pa.string()), pa.array(texts, pa.string())])
        return merged.take(pa.array(_inverse(np.concatenate([bulk, rest]))))

    def _table_columns(
        self, emitted: np.ndarray, tables: list[ref.GGTable], tdr_index: np.ndarray
    ) -> dict[str, Any]:
        """``table_name``, ``source_schema``, ``source_table``, ``tdr_index``, ``column_names``."""
        names = list(self.names)
        split = [name.rpartition(".") for name in names]
        codes = self.name_codes[emitted]
        columns = {
            "table_name": _pick(pa.array(names, pa.string()), codes),
            "source_schema": _pick(pa.array([s for s, _, _ in split], pa.string()), codes),
            "source_table": _pick(pa.array([t for _, _, t in split], pa.string()), codes),
            "tdr_index": pa.array(tdr_index[emitted], mask=tdr_index[emitted] < 0),
            "column_names": _pick(
                pa.array([[c.name for c in t.columns] for t in tables], pa.list_(pa.string())),
                self.table_of[emitted],  # -1 for TDRs, as for a record without a table
            ),
        }
        return columns

    def _image_spans(self, records: _Records, emitted: np.ndarray) -> tuple[np.ndarray, ...]:
        """Return the before and after image spans of the emitted records with images.

        Returns ``(output row, is before image, start, end, table number)``, after images
        first, each kind in row order (:func:`decoder._images`). Declines where a unified or PK
        update's before-image length overruns its data area.
        """
        io_type = records.ghdr["io_type"][emitted]
        table_of = self.table_of[emitted]
        ds, de = records.body[emitted, 0], records.body[emitted, 1]
        has = (table_of >= 0) & (ds >= 0) & ~np.isin(io_type, ref.NO_ROW_IMAGE)
        rows = np.flatnonzero(has)
        io_type, ds, de = io_type[rows], ds[rows], de[rows]
        size = np.zeros(len(rows), dtype=np.int64)
        for code, length_size in _TWO_IMAGES.items():
            size[io_type == code] = length_size
        two = np.flatnonzero(size)
        check(de[two] - ds[two] >= size[two])
        before_length = np.where(
            size[two] == 4, u32(self.buf, ds[two], self.order), u16(self.buf, ds[two], self.order)
        )
        check(size[two] + before_length <= de[two] - ds[two])
        after_start = ds.copy()
        after_start[two] = ds[two] + size[two] + before_length
        return (
            np.concatenate([rows, rows[two]]),
            np.concatenate([np.zeros(len(rows), bool), np.ones(len(two), bool)]),
            np.concatenate([after_start, ds[two] + size[two]]),
            np.concatenate([de, after_start[two]]),
            np.concatenate([table_of[rows], table_of[rows[two]]]),
        )

    def _image_columns(
        self, records: _Records, emitted: np.ndarray, tables: list[ref.GGTable]
    ) -> dict[str, Any]:
        """Return ``data`` and ``before_data``: each image's column entries as a text map.

        Declines where :func:`decoder._image` rejects: an entry that overruns its image, a
        column index the table does not have, a column twice in one image, a bad null
        indicator, a value that does not read as its type.
        """
        rows, before, lo, hi, table_of = self._image_spans(records, emitted)
        image, index, vs, ve = _walk_entries(self.buf, lo, hi, self.order, tokens=False)
        widths = np.array([len(t.columns) for t in tables] + [0], dtype=np.int64)
        check(index < widths[table_of[image]])
        check(ve - vs >= 2)
        _check_unique(image, index)
        indicator = u16(self.buf, vs, ">")
        null = indicator == 0xFFFF
        check(null | (indicator == 0))
        check(~null | (ve - vs == 2))
        bases = np.concatenate([[0], np.cumsum(widths[:-1])])
        column_id = bases[table_of[image]] + index
        keys = pa.array([c.name for t in tables for c in t.columns], pa.string())
        values = self._values(tables, column_id, vs + 2, ve, null)
        out = {}
        for name, kind in (("data", False), ("before_data", True)):
            mine = before[image] == kind
            owners = rows[before == kind]
            present = np.zeros(len(emitted), dtype=bool)
            present[owners] = True
            out[name] = _map(
                rows[image[mine]],
                len(emitted),
                keys.take(pa.array(column_id[mine])),
                values.filter(pa.array(mine)),
                present,
            )
        return out

    def _values(
        self,
        tables: list[ref.GGTable],
        column_id: np.ndarray,
        lo: np.ndarray,
        hi: np.ndarray,
        null: np.ndarray,
    ) -> pa.Array:
        """Return every entry's value text (null where its indicator is NULL), per column."""
        columns = [(t, c) for t in tables for c in t.columns]
        valued = np.flatnonzero(~null)
        ids = column_id[valued]
        ids = ids.astype(np.uint16) if len(columns) <= 65536 else ids  # stable: a radix sort
        order = valued[np.argsort(ids, kind="stable")]
        ids = column_id[order]
        bounds = np.flatnonzero(np.diff(ids)) + 1
        parts = []
        for first, last in zip([0, *bounds.tolist()], [*bounds.tolist(), len(order)], strict=True):
            if first == last:
                continue
            table, column = columns[int(ids[first])]
            charset = self.opts["char_encoding"] or table.char_encoding or "utf-8"
            charset = {"windows-1252": "cp1252"}.get(charset.lower(), charset)
            chunk = order[first:last]
            parts.append(
                _render(
                    self.buf, self.data, lo[chunk], hi[chunk], _Column(column, charset, self.opts)
                ).cast(pa.string())
            )
        rendered = pa.concat_arrays(parts) if parts else pa.array([], pa.string())
        position = np.full(len(null), -1, dtype=np.int64)
        position[order] = np.arange(len(order))
        return _pick(rendered, position)

    def _check_sequence(self, records: _Records, emitted: np.ndarray) -> None:
        """Decline FieldComp before images without their after image and TransInd out of order.

        Those are rejects and warnings of the reference (:meth:`decoder._TrailWalk._emit`);
        adds its one warning of a final file whose last transaction has no end.
        """
        ghdr = records.ghdr[emitted]
        fieldcomp = ghdr["io_type"] == IOType.FIELD_COMP
        before = np.flatnonzero(fieldcomp & (ghdr["before_after"] == b"B"))
        if len(before) and before[-1] == len(emitted) - 1:
            check(not self.final)  # the last before image waits for its after image
            before = before[:-1]
        after = before + 1
        codes = self.name_codes[emitted]
        check(fieldcomp[after] & (ghdr["before_after"][after] == b"A"))
        check(codes[after] == codes[before])
        check(ghdr["audit_pos"][after] == ghdr["audit_pos"][before])
        changes = ghdr["io_type"] != IOType.METADATA
        trans_ind, rba = ghdr["trans_ind"][changes], records.starts[emitted][changes]
        opens = trans_ind == TransInd.FIRST
        closes = (trans_ind == TransInd.LAST) | (trans_ind == TransInd.ONLY)
        positions = np.arange(len(trans_ind))
        last_event = np.maximum.accumulate(np.where(opens | closes, positions, -1))
        open_after = (last_event >= 0) & opens[np.maximum(last_event, 0)]
        open_before = np.concatenate([[False], open_after[:-1]])
        ended_before = np.concatenate([[0], np.cumsum(closes)[:-1]]) > 0
        starts = (trans_ind == TransInd.FIRST) | (trans_ind == TransInd.ONLY)
        middles = (trans_ind == TransInd.MIDDLE) | (trans_ind == TransInd.LAST)
        check(~(starts & open_before))
        check(~(middles & ~open_before & ended_before))
        if self.final and len(trans_ind) and open_after[-1]:
            rba_open = int(rba[last_event[-1]])
            self.result.warnings.append(ref.transaction_without_end(rba_open))


def _check_unique(owner: np.ndarray, ids: np.ndarray) -> None:
    """Decline where one owner (record, image) lists one id twice (a token, a column).

    ``owner`` is ascending: an owner's entries are side by side.
    """
    same = owner[1:] == owner[:-1]
    if np.all(~same | (ids[1:] > ids[:-1])):
        return  # ascending within every owner, as writers write columns
    deepest = int(np.bincount(owner).max())
    if deepest <= 8:  # a few entries each (GGS tokens): compare each with the ones before it
        for gap in range(1, deepest):
            check(~((owner[gap:] == owner[:-gap]) & (ids[gap:] == ids[:-gap])))
        return
    check(len(np.unique(owner * 65536 + ids)) == len(owner))


def _inverse(permutation: np.ndarray) -> np.ndarray:
    """Return the inverse of a permutation of ``range(len(permutation))``."""
    out = np.empty_like(permutation)
    out[permutation] = np.arange(len(permutation))
    return out


def _pick(values: pa.Array, index: np.ndarray) -> pa.Array:
    """Return ``values`` at every ``index``, null where the index is -1."""
    return values.take(pa.array(index, mask=index < 0))


def _carry(entry: np.ndarray, reset: np.ndarray) -> np.ndarray:
    """Return, for each record, the entry of the last record up to it with one, since a reset.

    ``entry`` is a token's entry per record (-1: none); ``reset`` marks the records that open
    a transaction (TransInd 0 or 3), which drop the carried token before reading their own
    (:func:`decoder._carry`). Returns -1 where nothing is carried.
    """
    positions = np.arange(len(entry))
    last = np.maximum.accumulate(np.where(entry >= 0, positions, -1)) if len(entry) else entry
    last_reset = np.maximum.accumulate(np.where(reset, positions, -1)) if len(entry) else entry
    carried = (last >= 0) & (last >= last_reset)
    return np.where(carried, entry[np.maximum(last, 0)] if len(entry) else entry, -1)


def _map(
    rows: np.ndarray, count: int, keys: pa.Array, items: pa.Array, present: np.ndarray | None
) -> pa.MapArray:
    """Build a ``map<string,string>`` column of ``count`` rows from entries in row order.

    ``rows`` is each entry's row, ``keys`` and ``items`` its key and value; rows not
    ``present`` are null (every row is present when ``present`` is None).
    """
    offsets = np.zeros(count + 1, dtype=np.int32)
    np.cumsum(np.bincount(rows, minlength=count), out=offsets[1:])
    mask = None if present is None else pa.array(~present)
    return pa.MapArray.from_arrays(
        pa.array(offsets), keys.cast(pa.string()), items.cast(pa.string()), mask=mask
    )
