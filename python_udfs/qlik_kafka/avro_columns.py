"""Avro datums of one schema read at many offsets at once, with numpy (issue 47).

The Kafka fast path (``qlik_kafka/columnar.py``) reads the ``DataRecord`` payloads of a
``.lpv`` dump this way: every payload starts at its own offset in one buffer, and the reader
walks the schema once, reading one field of every datum per step (Avro specification 1.11,
*Binary Encoding*: zig-zag varints for ``int``/``long``, lengths before ``string`` and
``bytes``, little-endian IEEE 754 for ``float``/``double``, one byte for ``boolean``, the
branch index before a union's value). Each field becomes one Arrow array of all datums.

Only the types Replicate's ``dataSchema`` uses are read: records, named references to them,
unions of ``null`` and one type, enums and the primitive types. Anything else (logical types,
maps, arrays, fixed, unions of two non-null types) and any datum that does not decode (a branch
or enum index out of range, a length past the payload, text that is not UTF-8, a varint of more
than ten bytes) raises :class:`~python_udfs.byte_fields.Decline`: fastavro, the reference, reads
that dump.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from python_udfs.byte_fields import Decline, check, gather

#: The longest varint of a 64-bit value, in bytes.
_VARINT_BYTES = 10
_PRIMITIVE_BYTES = {"float": ("<f4", 4), "double": ("<f8", 8)}


class AvroColumns:
    """Read datums of one Avro schema, one per ``start`` offset of ``data``, by column.

    ``end`` bounds each datum: :meth:`read` checks that every datum ends exactly there.
    """

    def __init__(self, data: bytes, start: np.ndarray, end: np.ndarray) -> None:
        self.buf = np.frombuffer(data + bytes(_VARINT_BYTES + 8), np.uint8)
        self.pos = start.astype(np.int64).copy()
        self.end = end.astype(np.int64)
        self.named: dict[str, Any] = {}

    def read_value(self, schema: Any, rows: np.ndarray) -> pa.Array:
        """Read one value of ``schema`` of each datum in ``rows`` (a field of a larger datum)."""
        return self._read(schema, rows)

    def read(self, schema: Any) -> pa.Array:
        """Return the datums as one Arrow array (a struct array for a record schema)."""
        rows = np.arange(len(self.pos))
        values = self._read(schema, rows)
        check(np.array_equal(self.pos, self.end))
        return values

    def _read(self, schema: Any, rows: np.ndarray) -> pa.Array:
        """Read the value of ``schema`` of every datum in ``rows``, advancing their offsets."""
        if isinstance(schema, str) and schema in self.named:
            schema = self.named[schema]
        if isinstance(schema, list):
            return self._union(schema, rows)
        kind = schema if isinstance(schema, str) else schema.get("type")
        if isinstance(schema, dict):
            check("logicalType" not in schema)
            if kind in ("record", "enum") and "name" in schema:
                self.named[schema["name"]] = schema
            if kind not in ("record", "enum"):
                return self._read(kind, rows)
        reader = _READERS.get(kind)
        check(reader is not None)
        return reader(self, schema, rows)

    def varint(self, rows: np.ndarray) -> np.ndarray:
        """Read a zig-zag varint (``int``, ``long``, a length or an index) of every row.

        Byte by byte over the rows whose varint goes on: most are one byte long (branch
        indexes, short lengths).
        """
        at = self.pos[rows]
        check(np.all(at < self.end[rows]))  # every value takes a byte at least
        byte = self.buf[at]
        value = (byte & 0x7F).astype(np.uint64)
        size = np.ones(len(rows), dtype=np.int64)
        going = np.flatnonzero(byte >= 0x80)
        for shift in range(7, 7 * _VARINT_BYTES, 7):
            if not len(going):
                break
            byte = self.buf[at[going] + size[going]]
            check(shift < 63 or np.all(byte <= 1))  # at most 64 bits
            value[going] |= (byte & 0x7F).astype(np.uint64) << np.uint64(shift)
            size[going] += 1
            going = going[byte >= 0x80]
        check(not len(going))
        self.pos[rows] = at + size
        return (value >> np.uint64(1)).astype(np.int64) ^ -(value & np.uint64(1)).astype(np.int64)

    def _union(self, schema: list, rows: np.ndarray) -> pa.Array:
        """Read a union of ``null`` and one type: the value where the branch is not null."""
        nulls = [_is_null(branch) for branch in schema]
        check(len(schema) == 2 and sum(nulls) == 1)
        branch = self.varint(rows)
        check(np.all((branch == 0) | (branch == 1)))
        other = nulls.index(False)
        valued = branch == other
        other = schema[other]
        values = self._read(other, rows[valued])
        if valued.all():  # no null: the values as they are
            return values
        index = np.full(len(rows), -1, dtype=np.int64)
        index[valued] = np.arange(int(valued.sum()))
        return values.take(pa.array(index, mask=index < 0))

    def _record(self, schema: dict, rows: np.ndarray) -> pa.Array:
        fields = schema.get("fields")
        check(isinstance(fields, list) and len(fields) > 0)
        children = [self._read(field["type"], rows) for field in fields]
        return pa.StructArray.from_arrays(children, [field["name"] for field in fields])

    def _enum(self, schema: dict, rows: np.ndarray) -> pa.Array:
        symbols = schema.get("symbols")
        check(isinstance(symbols, list))
        index = self.varint(rows)
        check(np.all((index >= 0) & (index < len(symbols))))
        return pa.array(symbols, pa.string()).take(pa.array(index))

    def _long(self, schema: Any, rows: np.ndarray) -> pa.Array:
        return pa.array(self.varint(rows), pa.int64())

    def _boolean(self, schema: Any, rows: np.ndarray) -> pa.Array:
        check(np.all(self.pos[rows] < self.end[rows]))
        byte = self.buf[self.pos[rows]]
        check(np.all(byte <= 1))
        self.pos[rows] += 1
        return pa.array(byte == 1)

    def _fixed_width(self, schema: Any, rows: np.ndarray) -> pa.Array:
        dtype, size = _PRIMITIVE_BYTES[schema]
        check(np.all(self.pos[rows] + size <= self.end[rows]))
        cells = self.buf[self.pos[rows][:, None] + np.arange(size)]
        self.pos[rows] += size
        return pa.array(
            np.ascontiguousarray(cells).view(dtype).reshape(len(rows)).astype(np.float64)
        )

    def _bytes(self, schema: Any, rows: np.ndarray) -> pa.Array:
        size = self.varint(rows)
        start = self.pos[rows]
        check(np.all((size >= 0) & (start + size <= self.end[rows])))
        self.pos[rows] += size
        body, offsets = gather(self.buf, start, start + size)
        return pa.Array.from_buffers(
            pa.large_binary(), len(rows), [None, pa.py_buffer(offsets), pa.py_buffer(body)]
        ).cast(pa.binary())

    def _string(self, schema: Any, rows: np.ndarray) -> pa.Array:
        try:
            return self._bytes(schema, rows).cast(pa.string())
        except pa.ArrowInvalid as exc:  # not UTF-8
            raise Decline from exc

    def _null(self, schema: Any, rows: np.ndarray) -> pa.Array:
        return pa.nulls(len(rows))


def _is_null(schema: Any) -> bool:
    """Whether a schema is ``null``, written as a name (``"null"``) or an object (Replicate)."""
    return schema == "null" or (isinstance(schema, dict) and schema.get("type") == "null")


_READERS = {
    "record": AvroColumns._record,
    "enum": AvroColumns._enum,
    "int": AvroColumns._long,
    "long": AvroColumns._long,
    "boolean": AvroColumns._boolean,
    "float": AvroColumns._fixed_width,
    "double": AvroColumns._fixed_width,
    "bytes": AvroColumns._bytes,
    "string": AvroColumns._string,
    "null": AvroColumns._null,
}
