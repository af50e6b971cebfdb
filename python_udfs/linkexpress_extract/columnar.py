"""The fast path of the Linkexpress extract decoder: a file's raw rows built by column (issue 47).

:func:`decode_columnar` reads an extract file as :func:`decoder.decode_extract_file` (the
reference path) does, with the same raw row columns and warnings, but builds the rows as Arrow
columns instead of one ``dict`` per record, for the layouts whose records start with a record
length (C, D, E, and A/B with LITTLE: formats/linkexpress_extract.md, *What a file looks
like*):

1. the file's layout, tables and OUTCODE are settled as the reference settles them
   (:func:`decoder.settle_file`, :func:`decoder.choose_outcode` over the first 1000 records);
2. one Python step per record follows the record lengths;
3. numpy reads the record fields of every record at once (valid column count, extraction id,
   operation null indicator, operation), then, table by table, the items of all its records
   one item deep per step: null indicator, VARCHAR valid length, item bytes;
4. each item's values are rendered by the reference's column readers
   (:data:`decoder.NUMPY_READERS`, the ones its fixed-length path uses) and its text decoded
   with the OUTCODE's codecs.

A file with anything the fast path does not read in bulk goes to the reference whole
(:func:`decode_columnar` returns None): a NORMAL A/B file (no record lengths), any record the
reference rejects (a length that overruns, an unknown operation or extraction id, a wrong
valid column count, a bad null indicator, items that do not add up, a value that does not read
or decode), an empty-extract marker among rows. ``tests/test_linkexpress_columnar.py`` checks
that both paths give the same rows, rejects and warnings.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from python_udfs.byte_fields import Decline, check, none_when_declined, u16
from python_udfs.linkexpress_extract import decoder as ref
from python_udfs.linkexpress_extract.decoder import Item, Operation
from python_udfs.records import DecodeResult, MetadataColumn

_TEXT_KINDS = ("CHAR", "NCHAR", "VARCHAR", "NVARCHAR")
#: The item kinds the reference reads value by value (``decoder._numpy_each``).
_EACH_KINDS = ("DATE", "TIME", "TIMESTAMP", "INTERVAL")
#: Zero bytes after the file's bytes: a record's fields may be read past a short last record
#: (the reference reads them too, then rejects the record).
_PAD = 16


def decode_or_decline(
    data: bytes,
    *,
    file_name: str,
    catalog: Mapping[tuple[str, str], list[MetadataColumn]],
    extraction_ids: Mapping[int, tuple[str, str]] | None = None,
    file_table: tuple[str, str] | None = None,
    options: Mapping[str, Any] | None = None,
) -> DecodeResult | None:
    """Decode one extract file as :func:`decoder.decode_extract_file` does, as ``result.table``.

    Same arguments and result, except that the rows are one ``pyarrow.Table`` (the reference's
    row keys as columns, in file order) and ``result.rows`` is empty. Raises :class:`Decline`
    when the file holds something only the reference reads (the module's docstring lists
    what); never raises anything else for bad input.
    """
    opts = {**ref.DEFAULT_OPTIONS, **(options or {})}
    result = DecodeResult(consumed_end=len(data))
    settled = ref.settle_file(data, catalog, extraction_ids, file_table, opts, result)
    if settled is None:
        return result
    if not settled.layout.has_length:
        raise Decline(f"layout {settled.layout.letter} without record lengths")
    _Walk(data, settled, file_name, file_table, opts, result).run()
    return result


decode_columnar = none_when_declined(decode_or_decline)


class _Walk:
    """One fast decode of a length-prefixed extract file into ``result``."""

    def __init__(self, data, settled, file_name, file_table, opts, result) -> None:
        self.data, self.settled, self.layout = data, settled, settled.layout
        self.file_table, self.opts, self.result = file_table, opts, result
        self.order = settled.layout.order
        self.buf = np.concatenate([np.frombuffer(data, np.uint8), np.zeros(_PAD, np.uint8)])
        self.base = file_name.replace("\\", "/").rsplit("/", 1)[-1]

    def run(self) -> None:
        """Frame, read and render every record; the rows go to ``result.table``."""
        starts, ends = self._frames()
        fields = self._fields(starts, ends)
        groups, table_keys = self._tables(fields)
        raw = [
            (rows, position, item, values)
            for items, rows in groups
            for position, (item, values) in enumerate(
                zip(items, self._items(items, fields["cursor"][rows], ends[rows]), strict=True)
            )
        ]
        outcode = self._outcode(len(starts), raw)
        char, nchar = ref.outcode_codecs(outcode, self.order, self.opts.get("nchar_encoding"))
        rtrim = bool(self.opts["char_rtrim"])
        entries = [
            (rows, position, item.name, _rendered(values, item, char, nchar, rtrim))
            for rows, position, item, values in raw
        ]
        columns = self._record_columns(starts, ends, fields, table_keys, outcode)
        columns.update(self._data_columns(len(starts), groups, entries))
        self.result.table = pa.table(columns)

    def _outcode(self, count: int, raw: list) -> str:
        """Settle the OUTCODE as :func:`decoder.choose_outcode` does.

        Over the text items of the first 1000 records, in record and item order (``raw``: each
        item's records, position and values).
        """
        first = min(count, 1000)
        items: list[list[Any]] = [[] for _ in range(first)]
        for rows, _position, item, values in sorted(raw, key=lambda r: r[1]):
            if item.kind in _TEXT_KINDS:
                for row, value in zip(rows.tolist(), values.tolist(), strict=True):
                    if row < first:
                        items[row].append(value)
        records = [ref.ParsedRecord(0, 0, None, None, 0, None, values) for values in items]
        try:
            outcode = ref.choose_outcode(records, self.opts, self.order)
        except ValueError as exc:
            raise Decline from exc
        if str(self.opts["outcode"]).lower() == "auto":
            self.result.warnings.append(f"outcode detected: {outcode}")
        return outcode

    def _frames(self) -> tuple[np.ndarray, np.ndarray]:
        """Follow the record lengths from byte 0: ``(record starts, record ends)``.

        Declines at a length below the layout's minimum or beyond the end of the file
        (``bad_record_length`` or ``truncated_record`` in the reference).
        """
        data, size, layout = self.data, len(self.data), self.layout
        unpack = struct.Struct(self.order + "i").unpack_from
        extra = 4 if layout.basis == "exclusive" else 0
        minimum = ref.MINIMUM_RECORD[layout.letter in "AB"]
        pos, starts, ends = 0, [], []
        while pos < size:
            if pos + 4 > size:
                raise Decline
            total = unpack(data, pos)[0] + extra
            if total < minimum or pos + total > size:
                raise Decline
            starts.append(pos)
            pos += total
            ends.append(pos)
        return np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64)

    def _fields(self, starts: np.ndarray, ends: np.ndarray) -> dict[str, np.ndarray]:
        """Read every record's fields before its items (:meth:`decoder._File._fields`).

        Returns ``valid`` (the valid column count, -1 in A/B), ``commit``, ``extraction_id``
        (-1 where the layout or a commit record has none), ``operation`` and ``cursor`` (where
        the items start). Declines where the reference rejects a record's fields.
        """
        buf, order, letter = self.buf, self.order, self.layout.letter
        n = len(starts)
        cursor = starts + 4
        valid, commit, ext = np.full(n, -1), np.zeros(n, bool), np.full(n, -1)
        if letter in "CDE":
            valid, cursor = u16(buf, cursor, order), cursor + 2
        if letter in "DE":
            commit = valid == 1
            at = cursor[commit] + (2 if letter == "D" else 0)
            if letter == "D":  # the commit's operation null indicator
                check(u16(buf, cursor[commit], order) == 0)
            check(u16(buf, at, order) == Operation.COMMIT)
            check(at + 2 == ends[commit])
            ext = np.where(commit, -1, u16(buf, cursor, order))
            cursor = np.where(commit, ends, cursor + 2)
        if letter in "CD":
            check((u16(buf, cursor, order) == 0) | commit)
            cursor = np.where(commit, ends, cursor + 2)
        op = np.where(commit, Operation.COMMIT, u16(buf, cursor, order))
        cursor = np.where(commit, ends, cursor + 2)
        known = [o for o in ref.OPERATIONS if o != Operation.COMMIT]
        if letter == "C":
            known = [
                o for o in known if o not in (Operation.FULL_EXTRACT, Operation.EMPTY_FULL_EXTRACT)
            ]
        check(np.isin(op, known) | commit)
        empty = op == Operation.EMPTY_FULL_EXTRACT
        check(cursor[empty] == ends[empty])
        if letter in "CDE":
            check(valid[empty] == (2 if letter in "DE" else 1))
        rows = np.isin(op, ref.ROW_OPERATIONS)
        check(~(empty.any() & rows.any()))  # the reference rejects the marker among rows
        return {
            "valid": valid,
            "commit": commit,
            "extraction_id": ext,
            "operation": op,
            "cursor": cursor,
        }

    def _tables(self, fields: dict[str, np.ndarray]) -> tuple[list, list]:
        """Group the records by table (:meth:`decoder._File._table_of`).

        Returns ``([(items, record numbers)] of the records with items, each record's
        (schema, table) or None)``. Declines on an extraction id nothing declares, a record
        without a table, or a valid column count that is not the table's.
        """
        settled, letter = self.settled, self.layout.letter
        ext, op = fields["extraction_id"], fields["operation"]
        commit = fields["commit"]
        by_table = ext if letter in "DE" else np.zeros(len(ext), np.int64)
        by_table = np.where(by_table > 0, by_table, 0)
        keys: list[tuple[str, str] | None] = [None] * len(ext)
        groups = []
        for number in np.unique(by_table[~commit]).tolist():
            members = np.flatnonzero((by_table == number) & ~commit)
            if number:
                check(number in settled.tables)
                key, items = settled.tables[number]
            else:
                key, items = self.file_table, settled.file_items
                check(items is not None)
            for i in members.tolist():
                keys[i] = key
            with_items = members[op[members] != Operation.EMPTY_FULL_EXTRACT]
            if letter in "CDE":  # the items, the operation and (group unit) the extraction id
                counted = 2 if letter in "DE" else 1
                check(fields["valid"][with_items] == len(items) + counted)
            if len(with_items):
                groups.append((items, with_items))
        return groups, keys

    def _items(self, items: list[Item], cursor: np.ndarray, end: np.ndarray) -> list[np.ndarray]:
        """Read the items of one table's records, one item of all of them per step.

        Returns each item's raw values (an object array: the reference reader's text, a
        ``(kind, bytes)`` pair for a text item, None for NULL). Declines where the reference
        rejects: a bad null indicator, a VARCHAR length its declaration cannot hold, items
        that overrun or do not fill the record, a value that does not read.
        """
        buf, order, layout = self.buf, self.order, self.layout
        reader = ref.RecordReader(items, layout, str(self.opts["zoned_sign"]))
        out = []
        for item in items:
            null = np.zeros(len(cursor), dtype=bool)
            if layout.null_indicators:
                check(cursor + 2 <= end)
                indicator = u16(buf, cursor, order)
                check((indicator == 0) | (indicator == 0xFFFF))
                null, cursor = indicator == 0xFFFF, cursor + 2
            if item.kind in ("VARCHAR", "NVARCHAR"):
                values, cursor = self._varchar(item, cursor, end, null)
            else:
                start, cursor = cursor, cursor + item.normal_size()
                check(cursor <= end)
                values = self._fixed(item, reader, start, null)
            out.append(values)
        check(cursor == end)
        return out

    def _varchar(
        self, item: Item, cursor: np.ndarray, end: np.ndarray, null: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Read a VARCHAR or NCHAR VARYING item of every record (:meth:`decoder.RecordReader._read_varchar`)."""
        padded = self.layout.varchar_padded
        check(cursor + 2 <= end)
        count = u16(self.buf, cursor, self.order)
        if padded:
            count = np.where(null, 0, count)  # a padded NULL item keeps its size
        if item.length_in_bytes:
            check(count % 2 == 0)
            count = count // 2
        check(count <= item.n)
        unit = 2 if item.kind == "NVARCHAR" else 1
        start = cursor + 2
        cursor = start + unit * (item.n if padded else count)
        check(cursor <= end)
        data, kind = self.data, item.kind
        values = np.empty(len(start), dtype=object)
        values[:] = [
            None if z else (kind, data[a : a + unit * c])
            for z, a, c in zip(null.tolist(), start.tolist(), count.tolist(), strict=True)
        ]
        return values, cursor

    def _fixed(self, item: Item, reader, start: np.ndarray, null: np.ndarray) -> np.ndarray:
        """Read a fixed-size item of every record with the reference's column readers."""
        size = item.normal_size()
        values = np.full(len(start), None, dtype=object)
        keep = np.flatnonzero(~null)
        if not len(keep):
            return values
        cells = self.buf[start[keep][:, None] + np.arange(size)]
        inverse = None
        if item.kind in _EACH_KINDS:  # read value by value: once per distinct bytes
            distinct, inverse = np.unique(cells.view(f"V{size}").ravel(), return_inverse=True)
            cells = distinct.view(np.uint8).reshape(len(distinct), size)
        block = ref.FixedBlock(cells, self.order, str(self.opts["zoned_sign"]), reader)
        read, valid = ref.NUMPY_READERS[item.kind](block, item, 0, size)
        check(valid)
        read = _pairs(read)
        values[keep] = read if inverse is None else read[inverse.reshape(-1)]
        return values

    def _record_columns(self, starts, ends, fields, keys, outcode) -> dict[str, Any]:
        """Return the columns of every record but its items (:func:`decoder._row`)."""
        n, layout, op = len(starts), self.layout, fields["operation"]
        valid, ext = fields["valid"], fields["extraction_id"]
        constant = {
            "file_name": self.base,
            "layout": layout.letter,
            "logtype": "LITTLE" if layout.little else "NORMAL",
            "byte_order": "big" if layout.order == ">" else "little",
            "outcode": outcode,
        }
        columns: dict[str, Any] = {
            "record_offset": starts,
            "record_index": np.arange(1, n + 1, dtype=np.int64),
            "record_length": ends - starts,
            "valid_column_count": pa.array(valid, mask=valid < 0),
            "extraction_id": pa.array(ext, mask=ext < 0),
            "operation_code": op,
            "operation_name": pa.array([ref.OPERATIONS[o] for o in op.tolist()], pa.string()),
            "source_schema": pa.array([k[0] if k else None for k in keys], pa.string()),
            "source_table": pa.array([k[1] if k else None for k in keys], pa.string()),
            "is_full_extract": np.isin(op, (Operation.FULL_EXTRACT, Operation.EMPTY_FULL_EXTRACT)),
            **{name: pa.array([value] * n, pa.string()) for name, value in constant.items()},
        }
        extraction_ids = [None if e < 0 else e for e in ext.tolist()]
        one_table = ref.is_one_table_file(self.settled, self.file_table, extraction_ids)
        if one_table and n and self.opts["table_unit_transaction"] == "file":
            changes = np.flatnonzero(op != Operation.COMMIT)
            last = changes[-1] if len(changes) else n - 1
            columns["transaction_id"] = pa.array([f"{self.base}:{n:012d}"] * n, pa.string())
            columns["is_transaction_end"] = np.arange(n) == last
        else:
            columns["transaction_id"] = pa.nulls(n, pa.string())
            columns["is_transaction_end"] = pa.nulls(n, pa.bool_())
        return columns

    def _data_columns(self, n: int, groups: list, entries: list) -> dict[str, Any]:
        """Return ``column_names`` and ``data`` (every item of a record, in item order)."""
        width = np.zeros(n, dtype=np.int64)
        group_of = np.full(n, -1, dtype=np.int64)
        for number, (items, rows) in enumerate(groups):
            width[rows], group_of[rows] = len(items), number
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(width, out=offsets[1:])
        names = pa.array(
            [[i.name for i in items] for items, _rows in groups], pa.list_(pa.string())
        )
        empty = pa.array([], pa.string())  # a file of commits and empty extracts has no items
        slots = np.concatenate(
            [np.zeros(0, np.int64)]
            + [offsets[rows] + position for rows, position, _n, _v in entries]
        )
        keys = pa.concat_arrays(
            [empty] + [pa.array([name] * len(rows), pa.string()) for rows, _p, name, _v in entries]
        )
        values = pa.concat_arrays([empty] + [v for *_rest, v in entries])
        order = pa.array(np.argsort(slots, kind="stable"))
        data = pa.MapArray.from_arrays(
            pa.array(offsets.astype(np.int32)),
            keys.take(order),
            values.take(order),
            mask=pa.array(group_of < 0),
        )
        return {"column_names": names.take(pa.array(group_of, mask=group_of < 0)), "data": data}


def _pairs(values: list) -> np.ndarray:
    """Return ``(kind, bytes)`` text values as an object array (numpy keeps each pair whole)."""
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _rendered(values: np.ndarray, item: Item, char: str, nchar: str, rtrim: bool) -> pa.Array:
    """Return one item's values as text: text items decoded (:func:`decoder.item_text`), once each."""
    if item.kind not in _TEXT_KINDS:
        return pa.array(values.tolist(), pa.string())
    seen: dict[tuple[str, bytes], str] = {}
    out = []
    try:
        for value in values.tolist():
            if value is not None:
                text = seen.get(value)
                if text is None:
                    text = seen[value] = ref.item_text(value, char, nchar, rtrim)
                value = text
            out.append(value)
    except Exception as exc:  # noqa: BLE001 - undecodable bytes: the reference rejects the record
        raise Decline from exc
    return pa.array(out, pa.string())
