"""Decoder for Fujitsu Linkexpress ``lxextdb`` extract files (feed format ``linkexpress_extract``).

An extract data storage file is a run of binary records. Nothing in the file says how it was
written: the extraction definition's DIFFTYPE (OPEN / JNL), LOGTYPE (NORMAL / LITTLE), NULLIND,
BYTESWAP and OUTCODE, and table or group unit, decide the layout:

* **A** table unit with null indicators (also every table-unit full extract),
  ``[len, LITTLE only] [op] {[null ind] [item]}…``;
* **B** table unit without null indicators, ``[len, LITTLE only] [op] {[item]}…``;
* **C** table unit, JNL: ``[len] [valid count] [op null ind 0000] [op] {[null ind] [item]}…``;
* **D** group unit with null indicators: ``[len] [valid count] [extraction id] [0000] [op]
  {[null ind] [item]}…``, commit ``[len] [1] [0000] [8000]``;
* **E** group unit without: ``[len] [valid count] [extraction id] [op] {[item]}…``, commit
  ``[len] [1] [8000]``.

Options name the settings (``unit``, ``difftype``, ``logtype``, ``null_indicators``,
``byteswap``, ``outcode``); ``auto`` values are settled on the first record, as
formats/linkexpress_extract.md describes. Items follow the catalog seed's column types (CHAR,
VARCHAR, NCHAR, NCHAR VARYING, SMALLINT, INTEGER, BIGINT, DECIMAL packed, NUMERIC zoned,
REAL, DOUBLE PRECISION, DATE, TIME, TIMESTAMP).

Each data or commit record becomes one raw row; ``data`` is the row image as
``map<string,string>`` of canonical text (every column is present; NULL is a null value).
Bad records become rejects with their byte offset: fixed-length files resynchronise at the next
record boundary, length-prefixed ones at the next record length.

Follows ``formats/linkexpress_extract.md`` (built from ``seeds/linkexpress_extract_file_ja.txt``,
Linkexpress Replication option 説明書 6.14). No public sample files exist: the hand-built
vectors in tests/test_linkexpress_extract.py follow the formats page's worked example.
"""

from __future__ import annotations

import datetime as dt
import enum
import fnmatch
import re
import struct
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from python_udfs import canonical_arrow
from python_udfs.canonical import japanese_text_score, packed_decimal, scaled_digits
from python_udfs.records import DecodeResult, FrameChains, MetadataColumn, Reject
from python_udfs.records import RecordError as _Bad

FORMAT = "linkexpress_extract"

#: Every option a ``linkexpress_extract`` feed accepts (formats/linkexpress_extract.md, *Uncertain
#: points and options*): name → (default, the values this version implements; ``None``: any value
#: of the option's kind). ``unit`` (``auto``: read from the records) and ``difftype`` name the file
#: layout. The decoder reads ``DEFAULT_OPTIONS`` and ``config.load_project`` checks its choices
#: (``FeedFormat.option_choices``), both derived from this one table, so the check cannot drift
#: from what the decoder reads.
OPTIONS: dict[str, tuple[Any, tuple[Any, ...] | None]] = {
    "unit": ("auto", ("auto", "table", "group")),
    "difftype": ("open", ("open", "jnl")),
    "logtype": ("auto", ("auto", "normal", "little")),
    "null_indicators": ("auto", ("auto", "yes", "no", True, False)),
    "byteswap": ("auto", ("auto", "no", "yes")),
    "outcode": ("auto", ("auto", "unicode", "euc", "sjis")),
    "nchar_encoding": (None, None),
    "record_length_basis": ("inclusive", ("inclusive", "exclusive")),
    "zoned_sign": ("auto", ("auto", "ascii_unsigned", "fujitsu_4_5", "ebcdic_c_d")),
    "empty_full_extract_as": ("truncate", ("truncate", "marker")),
    "table_unit_transaction": ("file", ("file", "none")),
    "extraction_ids": (None, None),
    "full_extract_tables": ({}, None),
    "char_rtrim": (False, (True, False)),
    "timestamp_layout": ("auto", ("auto", "ymdhms7", "ymdhms7_r4")),
    "nvarchar_length_unit": ("characters", ("characters", "bytes")),
    "varchar_layout": ("auto", ("auto", "padded", "compact")),
    "interval_layout": ("reject", None),
    "file_order": ("name", None),
}
#: Default of every option (``OPTIONS``).
DEFAULT_OPTIONS: dict[str, Any] = {name: spec[0] for name, spec in OPTIONS.items()}
#: Accepted values of every option (``OPTIONS``); ``None`` takes any value of its kind.


class Operation(enum.IntEnum):
    """The operation field of a record (差分反映操作, formats/linkexpress_extract.md, *Fields*)."""

    FULL_EXTRACT = 0x0000
    INSERT = 0x0001
    UPDATE = 0x0002
    DELETE = 0x0003
    EMPTY_FULL_EXTRACT = 0xFFFF  # a full extract of a table with no rows: no items
    COMMIT = 0x8000  # group unit only


#: The operation codes and their names (``operation_name`` of the raw rows).
OPERATIONS = {op.value: op.name for op in Operation}
#: The operations that carry the table's items.
ROW_OPERATIONS = (Operation.FULL_EXTRACT, Operation.INSERT, Operation.UPDATE, Operation.DELETE)
#: OUTCODE → (codec of CHAR items, codec of NCHAR items; ``utf-16`` takes the byte order).
OUTCODES = {"unicode": ("utf-8", "utf-16"), "euc": ("euc_jp", "euc_jp"), "sjis": ("cp932", "cp932")}
_TABLE_FOLDER_RE = re.compile(r"^([^./]+)\.([^./]+)$")


@dataclass(frozen=True, slots=True)
class Item:
    """One data item's layout.

    Column ``name``, base ``kind`` (``CHAR``, ``VARCHAR``, ``NCHAR``, ``NVARCHAR``,
    ``SMALLINT``, ``INTEGER``, ``BIGINT``, ``DECIMAL``, ``NUMERIC``, ``REAL``, ``DOUBLE``,
    ``DATE``, ``TIME``, ``TIMESTAMP``), ``n`` (length: bytes for CHAR/VARCHAR, characters for
    NCHAR), ``precision`` and ``scale``; ``filler``: zero bytes after the value (4 for a
    TIMESTAMP under ``timestamp_layout: ymdhms7_r4``, the legend's ``R`` = ``00000000``);
    ``length_in_bytes``: an NCHAR VARYING's valid length counts bytes, not characters
    (``nvarchar_length_unit: bytes``); ``fields``: an ``INTERVAL`` item's ``(field, bytes)``
    in file order, from option ``interval_layout`` (:func:`interval_text`).
    """

    name: str
    kind: str
    n: int
    precision: int
    scale: int
    filler: int = 0
    length_in_bytes: bool = False
    fields: tuple[tuple[str, int], ...] = ()

    def normal_size(self) -> int:
        """Bytes of the item in a NORMAL (fixed-length) record."""
        k = self.kind
        if k == "CHAR":
            return self.n
        if k == "VARCHAR":
            return 2 + self.n
        if k == "NCHAR":
            return 2 * self.n
        if k == "NVARCHAR":
            return 2 + 2 * self.n
        if k == "DECIMAL":
            return self.precision // 2 + 1
        if k == "NUMERIC":
            return self.precision
        if k == "INTERVAL":
            return sum(size for _field, size in self.fields)
        return _FIXED_SIZES[k] + self.filler


_FIXED_SIZES = {
    "SMALLINT": 2,
    "INTEGER": 4,
    "BIGINT": 8,
    "REAL": 4,
    "DOUBLE": 8,
    "DATE": 4,
    "TIME": 3,
    "TIMESTAMP": 7,
}
_TYPE_ALIASES = {
    "CHARACTER": "CHAR",
    "CHAR VARYING": "VARCHAR",
    "CHARACTER VARYING": "VARCHAR",
    "NATIONAL CHARACTER": "NCHAR",
    "NCHAR VARYING": "NVARCHAR",
    "NATIONAL CHARACTER VARYING": "NVARCHAR",
    "NVARCHAR": "NVARCHAR",
    "INT": "INTEGER",
    "DEC": "DECIMAL",
    "FLOAT": "DOUBLE",
    "DOUBLE PRECISION": "DOUBLE",
}


def interval_type_name(source_type: str) -> str:
    """Return an INTERVAL type's name as option ``interval_layout`` keys it.

    Upper case, without precisions, single spaces: ``interval day(2) to second(6)`` →
    ``INTERVAL DAY TO SECOND``.
    """
    return " ".join(re.sub(r"\([^)]*\)", " ", source_type.upper()).split())


def item_layout(
    columns: Sequence[MetadataColumn],
    timestamp_filler: int = 0,
    nvarchar_bytes: bool = False,
    interval_layouts: Mapping[str, Sequence[Sequence[Any]]] | None = None,
) -> list[Item]:
    """Turn catalog columns (ordinal order) into item layouts.

    ``timestamp_filler`` is the number of zero bytes after each TIMESTAMP (0 or 4, see
    ``timestamp_layout``); ``nvarchar_bytes`` makes NCHAR VARYING lengths count bytes
    (``nvarchar_length_unit: bytes``); ``interval_layouts`` is option ``interval_layout`` when
    it maps INTERVAL type names (:func:`interval_type_name`) to ``[field, bytes]`` lists.

    ``length`` is bytes for CHAR/VARCHAR and characters for NCHAR / NCHAR VARYING;
    ``precision``/``scale`` give DECIMAL and NUMERIC. Raises ValueError for a type this
    decoder cannot lay out (an INTERVAL type that ``interval_layout`` does not lay out: the
    format page documents no layout of its own).
    """
    intervals = {interval_type_name(k): v for k, v in (interval_layouts or {}).items()}
    items = []
    for col in sorted(columns, key=lambda c: c.ordinal):
        if col.source_type.strip().upper().startswith("INTERVAL"):
            fields = intervals.get(interval_type_name(col.source_type))
            if fields is None:
                raise ValueError(
                    f"column {col.column_name}: type {col.source_type!r} has no documented item "
                    "layout; give its bytes in options.interval_layout"
                )
            layout = tuple((str(f).upper(), int(size)) for f, size in fields)
            items.append(Item(col.column_name, "INTERVAL", 0, 0, 0, fields=layout))
            continue
        raw = re.sub(r"\s*\(.*$", "", col.source_type.strip().upper())
        kind = _TYPE_ALIASES.get(raw, raw)
        if kind not in ("CHAR", "VARCHAR", "NCHAR", "NVARCHAR", "DECIMAL", "NUMERIC") and (
            kind not in _FIXED_SIZES
        ):
            raise ValueError(
                f"column {col.column_name}: type {col.source_type!r} has no documented item layout"
            )
        n = col.length or 0
        if kind in ("CHAR", "VARCHAR", "NCHAR", "NVARCHAR") and n <= 0:
            raise ValueError(f"column {col.column_name}: {kind} needs a length")
        if kind in ("DECIMAL", "NUMERIC") and not col.precision:
            raise ValueError(f"column {col.column_name}: {kind} needs a precision")
        filler = timestamp_filler if kind == "TIMESTAMP" else 0
        in_bytes = nvarchar_bytes and kind == "NVARCHAR"
        items.append(
            Item(col.column_name, kind, n, col.precision or 0, col.scale or 0, filler, in_bytes)
        )
    return items


@dataclass(frozen=True, slots=True)
class Layout:
    """A file's settled layout.

    ``letter`` A–E, ``little`` (LITTLE log type), ``order`` (``>`` or ``<``),
    ``null_indicators``, the length ``basis`` (``inclusive`` counts the 4 length bytes) and
    option ``varchar_layout`` (``auto``: padded with NORMAL, compact with LITTLE).
    """

    letter: str
    little: bool
    order: str
    null_indicators: bool
    basis: str = "inclusive"
    varchar_layout: str = "auto"

    @property
    def varchar_padded(self) -> bool:
        """Whether a VARCHAR / NCHAR VARYING item fills its declared length (``2 + n``).

        Otherwise it takes its valid length only (``2 + l``): formats/linkexpress_extract.md,
        Data items, and option ``varchar_layout``.
        """
        if self.varchar_layout == "auto":
            return not self.little
        return self.varchar_layout == "padded"

    @property
    def has_length(self) -> bool:
        """Whether records start with a 4-byte record length."""
        return self.letter in "CDE" or self.little

    def describe(self) -> str:
        """Describe the layout in words (for warnings)."""
        order = "big-endian" if self.order == ">" else "little-endian"
        return f"layout {self.letter}, {'LITTLE' if self.little else 'NORMAL'}, {order}"


@dataclass(slots=True)
class ParsedRecord:
    """One record read structurally.

    Offset offset/length (bytes), fields, and the items as raw values (``bytes`` for text items,
    to be decoded once the OUTCODE is known).
    """

    offset: int
    length: int
    valid_count: int | None
    extraction_id: int | None
    operation: int
    record_length: int | None
    items: list[Any] | None


#: The sign nibbles of a zoned decimal's last byte by option ``zoned_sign``
#: (formats/linkexpress_extract.md): ``(positive, negative)``. ``auto`` takes every form below.
ZONED_SIGNS: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {
    "auto": ((0x3, 0x4, 0xA, 0xC, 0xE, 0xF), (0x5, 0xB, 0xD)),
    "ascii_unsigned": ((0x3,), ()),
    "fujitsu_4_5": ((0x3, 0x4), (0x5,)),  # Fujitsu COBOL external decimal on open systems
    "ebcdic_c_d": ((0xC, 0xF), (0xD,)),  # IBM-style C/F plus, D minus
}


def zoned_text(raw: bytes, scale: int, mode: str = "auto") -> str:
    """Render a zoned decimal as canonical text.

    Zoned decimal "zonei" (one ASCII digit a byte, sign in the last byte's high nibble) as
    canonical text with ``scale`` fraction digits; the sign nibbles follow ``mode``, option
    ``zoned_sign`` (:data:`ZONED_SIGNS`). Raise ValueError for a non-digit byte or a sign
    nibble the mode does not know.
    """
    if not raw:
        raise ValueError("empty zoned item")
    body, last = raw[:-1], raw[-1]
    if any(b < 0x30 or b > 0x39 for b in body):
        raise ValueError(f"zoned byte not a digit in {raw.hex().upper()}")
    zone, digit = last >> 4, last & 0x0F
    if digit > 9:
        raise ValueError(f"zoned last byte {last:02X} is not a digit")
    positive, negative = ZONED_SIGNS.get(mode, ZONED_SIGNS["auto"])
    if zone in positive:
        neg = False
    elif zone in negative:
        neg = True
    else:
        raise ValueError(f"zoned sign nibble {zone:X} unknown")
    return scaled_digits(body.decode("ascii") + str(digit), neg, scale)


#: The fields of an INTERVAL item (option ``interval_layout``): a sign byte, or an unsigned
#: integer of the file's byte order.
INTERVAL_FIELDS = ("SIGN", "YEAR", "MONTH", "DAY", "HOUR", "MINUTE", "SECOND", "MICROSECOND")
#: The sign bytes of an INTERVAL item: ``00`` or ``+`` positive, ``01``, ``FF`` or ``-`` negative.
_INTERVAL_SIGNS = {0x00: "", 0x2B: "", 0x01: "-", 0xFF: "-", 0x2D: "-"}
#: Each field's unit in the next smaller one (a leading field is not bounded by it).
_INTERVAL_UNITS = {"YEAR": 12, "DAY": 24, "HOUR": 60, "MINUTE": 60, "SECOND": 1_000_000}
_SMALLER = {
    "YEAR": "MONTH",
    "DAY": "HOUR",
    "HOUR": "MINUTE",
    "MINUTE": "SECOND",
    "SECOND": "MICROSECOND",
}


def interval_text(raw: bytes, fields: Sequence[tuple[str, int]], order: str) -> str:
    """Render an INTERVAL item laid out by option ``interval_layout`` as canonical text.

    ``fields`` are ``(field, bytes)`` in file order (:data:`INTERVAL_FIELDS`); the integers are
    unsigned, in byte order ``order`` (``>`` or ``<``). Year-month intervals read ``[-]Y-M``,
    day-time intervals ``[-]D HH:MM:SS[.ffffff]`` (the strings Spark casts to its interval
    types), normalized: a leading field may exceed its unit (``INTERVAL MINUTE TO SECOND`` of
    90 minutes reads ``0 01:30:00``), a field after another may not. Raises ValueError for an
    unknown sign byte or a field out of its range.
    """
    byteorder = "big" if order == ">" else "little"
    sign, parts, pos = "", {}, 0
    for field, size in fields:
        chunk, pos = raw[pos : pos + size], pos + size
        if field == "SIGN":
            if chunk[0] not in _INTERVAL_SIGNS:
                raise ValueError(f"interval sign byte {chunk.hex().upper()} unknown")
            sign = _INTERVAL_SIGNS[chunk[0]]
        else:
            parts[field] = int.from_bytes(chunk, byteorder)
    for larger, unit in _INTERVAL_UNITS.items():
        smaller = _SMALLER[larger]
        if larger in parts and parts.get(smaller, 0) >= unit:
            raise ValueError(f"interval {smaller.lower()} {parts[smaller]} out of range")
    if parts.keys() & {"YEAR", "MONTH"}:
        years, months = divmod(parts.get("YEAR", 0) * 12 + parts.get("MONTH", 0), 12)
        return f"{sign}{years}-{months}"
    day, hour, minute, second = (parts.get(f, 0) for f in ("DAY", "HOUR", "MINUTE", "SECOND"))
    total = (((day * 24 + hour) * 60 + minute) * 60 + second) * 1_000_000
    minutes, micro = divmod(total + parts.get("MICROSECOND", 0), 60_000_000)
    days, minutes = divmod(minutes, 24 * 60)
    text = f"{sign}{days} {minutes // 60:02d}:{minutes % 60:02d}:{micro // 1_000_000:02d}"
    return text + (f".{micro % 1_000_000:06d}" if "MICROSECOND" in parts else "")


def _date_text(year: int, month: int, day: int) -> str:
    if year < 1:
        raise ValueError(f"year {year} out of range")
    return dt.date(year, month, day).isoformat()


def _time_text(h: int, m: int, s: int) -> str:
    return dt.time(h, m, s).isoformat()


class RecordReader:
    """Reads the items of one record in a settled layout."""

    def __init__(self, items: Sequence[Item], layout: Layout, zoned_sign: str) -> None:
        self.items = items
        self.layout = layout
        o = layout.order
        self.h = struct.Struct(o + "h")
        self.H = struct.Struct(o + "H")
        self.i = struct.Struct(o + "i")
        self.q = struct.Struct(o + "q")
        self.f = struct.Struct(o + "f")
        self.d = struct.Struct(o + "d")
        self.zoned_sign = zoned_sign
        self.sizes = [item.normal_size() for item in items]

    def read_items(self, data: bytes, pos: int, end: int) -> tuple[list[Any], int]:
        """Read every item from ``pos``; return raw values and the position after them."""
        values: list[Any] = []
        nulls = self.layout.null_indicators
        padded = self.layout.varchar_padded
        for item, size in zip(self.items, self.sizes, strict=True):
            is_null = False
            if nulls:
                if pos + 2 > end:
                    raise _Bad(
                        "layout_mismatch", f"record ends inside the null indicator of {item.name}"
                    )
                ind = self.H.unpack_from(data, pos)[0]
                pos += 2
                if ind == 0xFFFF:
                    is_null = True
                elif ind != 0:
                    raise _Bad(
                        "bad_null_indicator",
                        f"null indicator {ind:04X} of {item.name} is not 0000/FFFF",
                    )
            value, pos = self.read_item(item, size, data, pos, end, padded, is_null)
            values.append(value)
        return values, pos

    def read_item(
        self, item: Item, size: int, data: bytes, pos: int, end: int, padded: bool, is_null: bool
    ) -> tuple[Any, int]:
        """Read one item at ``pos``; return its raw value and the position after it.

        ``size`` is the item's NORMAL size in bytes. VARCHARs read their own length, and fill
        their declared length when ``padded`` (:attr:`Layout.varchar_padded`).
        """
        kind = item.kind
        if kind in ("VARCHAR", "NVARCHAR"):
            return self._read_varchar(item, data, pos, end, padded, is_null)
        start, pos = pos, pos + size
        if pos > end:
            raise _Bad("layout_mismatch", f"record ends inside {item.name}")
        if is_null:
            return None, pos
        reader = _READERS.get(kind)
        if reader is None:  # item_layout lays out no other kind
            raise _Bad("bad_value", f"{item.name}: type {kind} unsupported")
        try:
            return reader(self, item, data[start:pos]), pos
        except ValueError as exc:
            raise _Bad("bad_value", f"{item.name}: {exc}") from exc

    def _read_varchar(
        self, item: Item, data: bytes, pos: int, end: int, padded: bool, is_null: bool
    ) -> tuple[Any, int]:
        """Read a VARCHAR or NCHAR VARYING item at ``pos``.

        Its valid length (a SMALLINT), then its text, padded to the declared length when
        ``padded``. Returns the raw value and the position after it; raises _Bad for a length
        the declaration cannot hold.
        """
        if pos + 2 > end:
            raise _Bad("layout_mismatch", f"record ends inside the length of {item.name}")
        count = self.H.unpack_from(data, pos)[0]
        unit = 2 if item.kind == "NVARCHAR" else 1
        if is_null and padded:  # a padded NULL item keeps its size; its bytes are skipped
            count = 0
        if item.length_in_bytes:  # the count is bytes of 2-byte characters
            if count % 2:
                raise _Bad("bad_length", f"{item.name}: odd byte length of NCHAR VARYING")
            count //= 2
        if count > item.n:
            raise _Bad(
                "bad_length", f"{item.name}: valid length {count} exceeds the declared {item.n}"
            )
        start = pos + 2
        pos = start + unit * (item.n if padded else count)
        if pos > end:
            raise _Bad("layout_mismatch", f"record ends inside {item.name}")
        if is_null:
            return None, pos
        return (item.kind, data[start : start + unit * count]), pos


def _date_item(reader: RecordReader, item: Item, raw: bytes) -> str:
    return _date_text(reader.h.unpack_from(raw)[0], raw[2], raw[3])


def _timestamp_item(reader: RecordReader, item: Item, raw: bytes) -> str:
    if any(raw[7:]):
        raise ValueError("the 4-byte filler after the timestamp is not zero")
    return _date_item(reader, item, raw) + " " + _time_text(raw[4], raw[5], raw[6])


#: How a fixed-size item's bytes become its raw value, by item kind (formats/linkexpress_extract.md,
#: *Data items*): text items stay ``(kind, bytes)`` until the OUTCODE is known, the others
#: become canonical text. Each raises ValueError for bytes its type cannot hold.
_READERS: dict[str, Callable[[RecordReader, Item, bytes], Any]] = {
    "CHAR": lambda r, item, raw: ("CHAR", raw),
    "NCHAR": lambda r, item, raw: ("NCHAR", raw),
    "SMALLINT": lambda r, item, raw: str(r.h.unpack(raw)[0]),
    "INTEGER": lambda r, item, raw: str(r.i.unpack(raw)[0]),
    "BIGINT": lambda r, item, raw: str(r.q.unpack(raw)[0]),
    "DECIMAL": lambda r, item, raw: packed_decimal(raw.hex(), item.scale),
    "NUMERIC": lambda r, item, raw: zoned_text(raw, item.scale, r.zoned_sign),
    "REAL": lambda r, item, raw: repr(float(r.f.unpack(raw)[0])),
    "DOUBLE": lambda r, item, raw: repr(r.d.unpack(raw)[0]),
    "DATE": _date_item,
    "TIMESTAMP": _timestamp_item,
    "TIME": lambda r, item, raw: _time_text(raw[0], raw[1], raw[2]),
    "INTERVAL": lambda r, item, raw: interval_text(raw, item.fields, r.layout.order),
}


def _record_size(items: Sequence[Item], layout: Layout) -> int:
    """Return the fixed record size of layouts A/B with NORMAL (op + items)."""
    per_item = 2 if layout.null_indicators else 0
    return 2 + sum(item.normal_size() + per_item for item in items)


class _File:
    """Reads records of one file in one layout (several tables in group unit)."""

    def __init__(
        self,
        data: bytes,
        layout: Layout,
        tables: Mapping[int, tuple[tuple[str, str], list[Item]]],
        file_items: list[Item] | None,
        zoned_sign: str,
    ) -> None:
        self.data = data
        self.layout = layout
        self.readers = {
            k: RecordReader(items, layout, zoned_sign) for k, (_t, items) in tables.items()
        }
        self.file_reader = (
            RecordReader(file_items, layout, zoned_sign) if file_items is not None else None
        )
        self.file_items = file_items
        self.tables = tables
        o = layout.order
        self.H = struct.Struct(o + "H")
        self.i = struct.Struct(o + "i")
        fixed = layout.letter in "AB" and not layout.little and file_items is not None
        if fixed and not layout.varchar_padded:  # compact VARCHARs: a record's size varies
            fixed = not any(item.kind in ("VARCHAR", "NVARCHAR") for item in file_items)
        self._fixed = _record_size(file_items, layout) if fixed else None

    def fixed_size(self) -> int | None:
        """Return the record size of a fixed-length (NORMAL A/B) file, None otherwise."""
        return self._fixed

    def _unframed_end(self, pos: int) -> int:
        """Return the end of the record at ``pos`` of a NORMAL A/B file whose size varies.

        That is a file of ``varchar_layout: compact``: the operation, then the items read to
        their end.
        """
        if self.file_reader is None:  # a table layout tried on a file without its table
            raise _Framing(
                "unknown_table", "no table for a record without a length", len(self.data)
            )
        try:
            return self.file_reader.read_items(self.data, pos + 2, len(self.data))[1]
        except _Bad as bad:
            raise _Framing(bad.reason, str(bad), len(self.data)) from bad
        except (struct.error, IndexError) as exc:
            raise _Framing(
                "layout_mismatch", f"record does not parse: {exc}", len(self.data)
            ) from exc

    def read(self, pos: int) -> ParsedRecord:
        """Read the record at ``pos``; raise _Bad (with the record's end in ``.end`` when known)."""
        data, layout = self.data, self.layout
        size = len(data)
        if layout.has_length:
            if pos + 4 > size:
                raise _Framing("truncated_record", f"truncated record length at offset {pos}", size)
            length = self.i.unpack_from(data, pos)[0]
            total = length + (4 if layout.basis == "exclusive" else 0)
            minimum = 6 if layout.letter in "AB" else 8
            if total < minimum or pos + total > size:
                raise _Framing(
                    "bad_record_length",
                    f"record length {length} at offset {pos} is below the minimum or overruns the file",
                    size,
                )
            end = pos + total
            cursor = pos + 4
        else:
            fixed = self.fixed_size()
            if size - pos >= 2 and self.H.unpack_from(data, pos)[0] == Operation.EMPTY_FULL_EXTRACT:
                end = pos + 2
            elif fixed is None:
                end = self._unframed_end(pos)
            else:
                if pos + fixed > size:
                    raise _Framing("truncated_record", f"truncated record at offset {pos}", size)
                end = pos + fixed
            length = None
            cursor = pos
        try:
            return self._fields(pos, cursor, end, length)
        except _Bad as bad:
            raise _Framing(bad.reason, str(bad), end) from bad
        except (struct.error, IndexError) as exc:
            raise _Framing("layout_mismatch", f"record does not parse: {exc}", end) from exc

    def _fields(self, pos: int, cursor: int, end: int, length: int | None) -> ParsedRecord:
        """Read a framed record's fields from ``cursor`` (after the record length) to ``end``.

        The valid column count, extraction id and operation null indicator as its layout has
        them, the operation, then the items of its table. Raises _Bad for a field or item
        that does not check out.
        """
        data, letter = self.data, self.layout.letter
        valid = ext_id = None
        if letter in "CDE":
            valid, cursor = self._u16(cursor), cursor + 2
            if letter in "DE" and valid == 1:
                return self._commit_record(pos, cursor, end, length)
            if letter in "DE":
                ext_id, cursor = self._u16(cursor), cursor + 2
            if letter in "CD":
                cursor = self._operation_null(cursor)
        op, cursor = self._operation(cursor), cursor + 2
        items, reader = self._table_of(ext_id)
        group_fields = 2 if letter in "DE" else 1  # the operation, and the extraction id
        if op == Operation.EMPTY_FULL_EXTRACT:
            if valid is not None and valid != group_fields:
                raise _Bad(
                    "bad_valid_count", f"valid column count {valid}, expected {group_fields}"
                )
            if cursor != end:
                raise _Bad("layout_mismatch", "empty full extract record carries items")
            return ParsedRecord(pos, end - pos, valid, ext_id, op, length, None)
        if items is None or reader is None:
            raise _Bad(
                "unknown_table",
                "full-extract record whose table is not configured (full_extract_tables or a <SCHEMA>.<TABLE> folder)",
            )
        if valid is not None and valid != len(items) + group_fields:
            expected = len(items) + group_fields
            raise _Bad("bad_valid_count", f"valid column count {valid}, expected {expected}")
        values, cursor = reader.read_items(data, cursor, end)
        if cursor != end:
            raise _Bad(
                "layout_mismatch",
                f"items end at {cursor - pos} bytes, record is {end - pos} bytes (check null_indicators, logtype, catalog)",
            )
        return ParsedRecord(pos, end - pos, valid, ext_id, op, length, values)

    def _u16(self, cursor: int) -> int:
        return self.H.unpack_from(self.data, cursor)[0]

    def _operation(self, cursor: int) -> int:
        """Return the operation at ``cursor`` of a record that is no commit record.

        Raises _Bad for a code that is no operation, a commit here, or a full extract in a
        JNL record.
        """
        op = self._u16(cursor)
        if op not in OPERATIONS or op == Operation.COMMIT:
            where = "in a table-unit file" if op == Operation.COMMIT else ""
            raise _Bad("unknown_operation", f"unknown operation 0x{op:04X} {where}".strip())
        if self.layout.letter == "C" and op in (
            Operation.FULL_EXTRACT,
            Operation.EMPTY_FULL_EXTRACT,
        ):
            raise _Bad("unknown_operation", f"operation 0x{op:04X} in a JNL record")
        return op

    def _operation_null(self, cursor: int) -> int:
        """Check the operation's null indicator (always 0000) at ``cursor``.

        Returns the position after it; raises _Bad for another value.
        """
        opnull = self._u16(cursor)
        if opnull != 0:
            raise _Bad("bad_null_indicator", f"operation null indicator {opnull:04X} is not 0000")
        return cursor + 2

    def _commit_record(self, pos: int, cursor: int, end: int, length: int | None) -> ParsedRecord:
        """Read a group unit's commit record (valid column count 1) after its count."""
        if self.layout.letter == "D":
            cursor = self._operation_null(cursor)
        op, cursor = self._u16(cursor), cursor + 2
        if op != Operation.COMMIT:
            raise _Bad("bad_valid_count", f"valid column count 1 with operation {op:04X}")
        if cursor != end:
            raise _Bad("layout_mismatch", f"commit record of {end - pos} bytes")
        return ParsedRecord(pos, end - pos, 1, None, op, length, None)

    def _table_of(self, ext_id: int | None) -> tuple[list[Item] | None, RecordReader | None]:
        """Return the items and reader of a record's table.

        That is its extraction id's table in a group-unit file, else the file's table. Raises
        _Bad for an extraction id nothing declares.
        """
        if self.layout.letter not in "DE" or not ext_id:
            return self.file_items, self.file_reader
        entry = self.tables.get(ext_id)
        if entry is None:
            raise _Bad(
                "unknown_extraction_id",
                f"extraction id {ext_id} is not in the catalog (cdc_tables.csv table_identifier) or extraction_ids",
            )
        return entry[1], self.readers[ext_id]


#: The shortest record of a length-prefixed layout, in bytes: C/D/E (False), A/B (True).
MINIMUM_RECORD = {False: 8, True: 6}


def _frame_holds(data: bytes, layout: Layout, pos: int, end: int) -> bool:
    """Tell whether a rejected last record of a length-prefixed file was framed soundly.

    True when the record at ``pos`` reaches exactly to the end of the file by its length: its
    content was bad, not its framing. (For a record inside the file the caller asks
    :class:`FrameChains` whether its end is sound.)
    """
    if pos + 4 > len(data):
        return False
    length = struct.unpack_from(layout.order + "i", data, pos)[0]
    total = length + (4 if layout.basis == "exclusive" else 0)
    return total >= MINIMUM_RECORD[layout.letter in "AB"] and pos + total == end == len(data)


class _Framing(_Bad):
    """A bad record whose end is known (``end``) or, for framing errors, the end of file."""

    def __init__(self, reason: str, message: str, end: int) -> None:
        super().__init__(reason, message)
        self.end = end


_INT_DTYPES = {"SMALLINT": "i2", "INTEGER": "i4", "BIGINT": "i8"}
_FLOAT_DTYPES = {"REAL": "f4", "DOUBLE": "f8"}


@dataclass(frozen=True, slots=True)
class FixedBlock:
    """The whole records of a fixed-length file as an ``n × size`` byte matrix (numpy)."""

    rows: np.ndarray
    order: str  # ">" or "<"
    zoned_sign: str
    reader: RecordReader  # the record reader, whose item readers the value-by-value kinds share

    def field(self, offset: int, width: int, dtype: str) -> np.ndarray:
        """Column ``offset .. offset + width`` of every record as ``dtype`` in the byte order."""
        columns = self.rows[:, offset : offset + width]
        return np.ascontiguousarray(columns).view(self.order + dtype).ravel()


#: ``(values, valid)`` of one item across all records: the raw values as the record reader
#: makes them, and whether each checks out (False: that record is read again one by one).
_ColumnValues = tuple[list[Any], np.ndarray]


def _numpy_int(block: FixedBlock, item: Item, offset: int, width: int) -> _ColumnValues:
    values = block.field(offset, width, _INT_DTYPES[item.kind]).astype(np.int64)
    return canonical_arrow.integers(values).to_pylist(), np.ones(len(values), dtype=bool)


def _numpy_float(block: FixedBlock, item: Item, offset: int, width: int) -> _ColumnValues:
    values = block.field(offset, width, _FLOAT_DTYPES[item.kind]).astype(np.float64)
    return canonical_arrow.floats(values).to_pylist(), np.ones(len(values), dtype=bool)


def _numpy_packed(block: FixedBlock, item: Item, offset: int, width: int) -> _ColumnValues:
    cells = block.rows[:, offset : offset + width]
    nibbles = np.stack([cells >> 4, cells & 0x0F], axis=2).reshape(len(cells), 2 * width)
    digits, sign = nibbles[:, :-1], nibbles[:, -1]
    valid = (digits <= 9).all(axis=1) & (sign >= 0x0A)
    negative = (sign == 0x0B) | (sign == 0x0D)
    return _digit_texts(digits, negative, item.scale), valid


def _numpy_zoned(block: FixedBlock, item: Item, offset: int, width: int) -> _ColumnValues:
    cells = block.rows[:, offset : offset + width]
    zone, last = cells[:, -1] >> 4, cells[:, -1] & 0x0F
    body = cells[:, :-1]
    signs = ZONED_SIGNS.get(block.zoned_sign, ZONED_SIGNS["auto"])
    positive, negative = np.isin(zone, signs[0]), np.isin(zone, signs[1])
    digits_ok = ((body >= 0x30) & (body <= 0x39)).all(axis=1) & (last <= 9)
    digits = np.concatenate([body - 0x30, last[:, None]], axis=1)
    return _digit_texts(digits, negative, item.scale), digits_ok & (positive | negative)


def _numpy_text(block: FixedBlock, item: Item, offset: int, width: int) -> _ColumnValues:
    cells = block.rows[:, offset : offset + width]
    return [(item.kind, bytes(r)) for r in cells], np.ones(len(cells), dtype=bool)


def _numpy_varchar(block: FixedBlock, item: Item, offset: int, width: int) -> _ColumnValues:
    cells = block.rows[:, offset : offset + width]
    counts = block.field(offset, 2, "u2")
    if item.length_in_bytes:
        valid = (counts % 2 == 0) & (counts <= 2 * item.n)
        counts = counts // 2
    else:
        valid = counts <= item.n
    unit = 2 if item.kind == "NVARCHAR" else 1
    values = [
        (item.kind, bytes(r[2 : 2 + unit * int(c)]))
        for r, c in zip(cells, counts.tolist(), strict=True)
    ]
    return values, valid


def _numpy_each(block: FixedBlock, item: Item, offset: int, width: int) -> _ColumnValues:
    """Read DATE, TIME, TIMESTAMP and INTERVAL items value by value.

    Each is validated with the record reader's own function (:data:`_READERS`).
    """
    read, reader = _READERS[item.kind], block.reader
    cells = block.rows[:, offset : offset + width]
    values: list[Any] = []
    valid = np.ones(len(cells), dtype=bool)
    for k, r in enumerate(cells):
        try:
            values.append(read(reader, item, bytes(r)))
        except ValueError:
            values.append(None)
            valid[k] = False
    return values, valid


#: The numpy reader of each item kind (:func:`read_fixed_records`).
NUMPY_READERS: dict[str, Callable[[FixedBlock, Item, int, int], _ColumnValues]] = {
    **dict.fromkeys(_INT_DTYPES, _numpy_int),
    **dict.fromkeys(_FLOAT_DTYPES, _numpy_float),
    "DECIMAL": _numpy_packed,
    "NUMERIC": _numpy_zoned,
    "CHAR": _numpy_text,
    "NCHAR": _numpy_text,
    "VARCHAR": _numpy_varchar,
    "NVARCHAR": _numpy_varchar,
    **dict.fromkeys(("DATE", "TIME", "TIMESTAMP", "INTERVAL"), _numpy_each),
}


def read_fixed_records(
    data: bytes, size: int, layout: Layout, items: Sequence[Item], zoned_sign: str
) -> list[ParsedRecord | None]:
    """Read the whole records of a fixed-length (NORMAL A/B) file column by column with numpy.

    Returns one entry per whole record: a :class:`ParsedRecord` when every check passed, or
    None when the record needs the record-by-record reader (which then reports the reject:
    unknown operation, bad null indicator, bad packed or zoned digit, invalid date…). Values
    are the same as that reader's; each item kind has its reader (:data:`NUMPY_READERS`).
    """
    n = len(data) // size
    if n == 0:
        return []
    rows = np.frombuffer(data, dtype=np.uint8, count=n * size).reshape(n, size)
    block = FixedBlock(rows, layout.order, zoned_sign, RecordReader(items, layout, zoned_sign))
    op = block.field(0, 2, "u2")
    ok = op <= Operation.DELETE
    columns: list[list[Any]] = []
    offset = 2
    for item in items:
        width = item.normal_size()
        null = np.zeros(n, dtype=bool)
        if layout.null_indicators:
            indicator = block.field(offset, 2, "u2")
            ok &= (indicator == 0) | (indicator == 0xFFFF)
            null = indicator == 0xFFFF
            offset += 2
        values, valid = NUMPY_READERS[item.kind](block, item, offset, width)
        ok &= null | valid
        columns.append([None if z else v for z, v in zip(null.tolist(), values, strict=True)])
        offset += width
    out: list[ParsedRecord | None] = []
    for k, (good, code, items_k) in enumerate(
        zip(ok.tolist(), op.tolist(), zip(*columns, strict=True), strict=True)
    ):
        out.append(
            ParsedRecord(k * size, size, None, None, code, None, list(items_k)) if good else None
        )
    return out


def _digit_texts(digits: np.ndarray, negative: np.ndarray, scale: int) -> list[str]:
    """Canonical decimal texts of rows of decimal digits (:func:`canonical_arrow.digit_rows`)."""
    return canonical_arrow.digit_rows(digits, negative, scale).to_pylist()


def candidate_layouts(opts: Mapping[str, Any]) -> list[Layout]:
    """List the layouts to try on the first records, most likely first (from the options).

    ``unit: group`` tries the group layouts (D, E), ``unit: table`` the table layouts (C for a
    JNL feed's differential files, A, B); ``unit: auto`` (the default) tries the table layouts,
    then the group layouts, and the records decide (:func:`_settle_layout`).
    """
    orders = {"no": [">"], "yes": ["<"], "big": [">"], "little": ["<"]}.get(
        str(opts["byteswap"]).lower(), [">", "<"]
    )
    logtypes = {"normal": [False], "little": [True]}.get(
        str(opts["logtype"]).lower(), [False, True]
    )
    nulls = {"yes": [True], "no": [False], True: [True], False: [False]}.get(
        opts["null_indicators"]
        if isinstance(opts["null_indicators"], bool)
        else str(opts["null_indicators"]).lower(),
        [True, False],
    )
    bases = [opts["record_length_basis"]] + (
        ["exclusive"] if opts["record_length_basis"] == "inclusive" else []
    )
    varchar_layout = str(opts.get("varchar_layout", "auto"))
    group: list[Layout] = []
    for order in orders:
        for little in logtypes:
            for null in nulls:
                for basis in bases:
                    group.append(
                        Layout("D" if null else "E", little, order, null, basis, varchar_layout)
                    )
    table: list[Layout] = []
    # a JNL feed's one-table files are JNL differentials (C) or full extracts (A): C rejects a
    # full-extract operation, so the records decide between them
    letters = ["C", "A"] if str(opts["difftype"]).lower() == "jnl" else []
    for order in orders:
        for little in logtypes:
            for null in nulls:
                for basis in bases:
                    if "C" in letters:
                        table.append(Layout("C", little, order, True, basis, varchar_layout))
                    if little or basis == bases[0]:
                        table.append(
                            Layout("A" if null else "B", little, order, null, basis, varchar_layout)
                        )
    unit = str(opts.get("unit", "auto")).lower()
    return group if unit == "group" else table if unit == "table" else table + group


def file_table_for(
    relative_path: str, options: Mapping[str, Any], tables: Sequence[tuple[str, str]]
) -> tuple[str, str] | None:
    """Return the table a one-table file belongs to.

    It is the first ``full_extract_tables`` glob that matches its name (or path) under the feed
    folder, else its parent folder when named ``<SCHEMA>.<TABLE>`` after a catalog table; None
    when neither says.
    """
    path = relative_path.replace("\\", "/")
    name = path.rsplit("/", 1)[-1]
    for pattern, table in (options.get("full_extract_tables") or {}).items():
        if fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(path, pattern):
            schema, _, tab = str(table).rpartition(".")
            return schema, tab
    parts = path.split("/")
    if len(parts) >= 2:
        match = _TABLE_FOLDER_RE.match(parts[-2])
        if match and (match.group(1), match.group(2)) in set(tables):
            return match.group(1), match.group(2)
    return None


def outcode_codecs(outcode: str, order: str, nchar_encoding: str | None) -> tuple[str, str]:
    """Return ``(CHAR codec, NCHAR codec)`` of an OUTCODE in byte order ``order`` (``>``/``<``).

    Option ``nchar_encoding`` overrides the NCHAR codec. Source: formats/linkexpress_extract.md.
    """
    char, nchar = OUTCODES[outcode]
    if nchar == "utf-16":
        nchar = "utf-16-be" if order == ">" else "utf-16-le"
    return char, nchar_encoding or nchar


def item_text(value: tuple[str, bytes], char: str, nchar: str, rtrim: bool) -> str:
    """Decode a ``(kind, bytes)`` text item with the CHAR or NCHAR codec.

    With ``rtrim``, CHAR and NCHAR lose trailing spaces (ASCII and ideographic). Raises
    UnicodeDecodeError for bytes the codec does not decode (the record's reject).
    """
    kind, raw = value
    text = raw.decode(nchar if kind in ("NCHAR", "NVARCHAR") else char)
    return text.rstrip(" \u3000") if rtrim and kind in ("CHAR", "NCHAR") else text


def choose_outcode(records: Sequence[ParsedRecord], opts: Mapping[str, Any], order: str) -> str:
    """Settle ``outcode: auto``.

    Among unicode, euc and sjis, keep those whose codecs decode every text item of the first
    1000 records strictly, and take the one whose text looks most Japanese
    (:func:`python_udfs.canonical.japanese_text_score`; ties keep that order). NCHAR bytes
    alone often decode in several codecs, which is what the score settles.
    """
    option = str(opts["outcode"]).lower()
    if option != "auto":
        if option not in OUTCODES:
            raise ValueError(f"unknown outcode {option!r}")
        return option
    sample = [v for r in records[:1000] if r.items for v in r.items if isinstance(v, tuple)]
    best, best_score = "unicode", -1.0
    for outcode in OUTCODES:
        char, nchar = outcode_codecs(outcode, order, opts.get("nchar_encoding"))
        try:
            text = "".join(item_text(value, char, nchar, False) for value in sample)
        except UnicodeDecodeError:
            continue
        score = japanese_text_score(text)
        if score > best_score:
            best, best_score = outcode, score
    return best


def decode_extract_file(
    data: bytes,
    *,
    file_name: str,
    catalog: Mapping[tuple[str, str], list[MetadataColumn]],
    extraction_ids: Mapping[int, tuple[str, str]] | None = None,
    file_table: tuple[str, str] | None = None,
    options: Mapping[str, Any] | None = None,
) -> DecodeResult:
    """Decode one extract file into raw rows and rejects.

    ``catalog`` maps ``(schema, table)`` to the seed's columns (the item layout);
    ``extraction_ids`` maps group-unit extraction ids to tables; ``file_table`` is the table
    of a one-table file (every table-unit file; a group-unit full extract), see
    :func:`file_table_for`. Raises nothing for bad input; configuration mistakes (a catalog type
    without a layout) become file-level rejects naming the fix.

    Row keys: ``record_offset`` (bytes), ``record_index`` (1-based), ``file_name``,
    ``layout`` (A–E), ``logtype``, ``byte_order``, ``record_length``,
    ``valid_column_count``, ``extraction_id``, ``operation_code``, ``operation_name``,
    ``source_schema``, ``source_table``, ``is_full_extract``, ``transaction_id`` and
    ``is_transaction_end`` (set for one-table files, which are one transaction each; null in
    group differential files, where dbt reads the commit records), ``outcode``,
    ``column_names``, ``data``.
    """
    opts = {**DEFAULT_OPTIONS, **(options or {})}
    result = DecodeResult(consumed_end=len(data))
    settled = settle_file(data, catalog, extraction_ids, file_table, opts, result)
    if settled is None:
        return result
    parsed = list(
        _framed_records(
            data, settled.layout, settled.tables, settled.file_items, str(opts["zoned_sign"])
        )
    )
    records = [r for _, r in parsed if isinstance(r, ParsedRecord)]
    try:
        outcode = choose_outcode(records, opts, settled.layout.order)
    except ValueError as exc:
        result.rejects.append(Reject.of(data, 0, len(data), 0, "bad_option", str(exc)))
        return result
    if str(opts["outcode"]).lower() == "auto":
        result.warnings.append(f"outcode detected: {outcode}")
    base = file_name.replace("\\", "/").rsplit("/", 1)[-1]
    context = _RowContext(
        base, settled.layout, outcode, opts, settled.tables, file_table, settled.file_items
    )
    result.rows = _built_rows(data, parsed, context, result.rejects)
    if is_one_table_file(settled, file_table, [r.extraction_id for r in records]) and result.rows:
        if opts["table_unit_transaction"] == "file":
            _one_transaction(result.rows, base)
    return result


@dataclass(frozen=True, slots=True)
class SettledFile:
    """What the whole file is read with: its layout and its tables' item layouts.

    ``tables`` maps extraction ids to ``((schema, table), items)``; ``file_items`` are the
    items of a one-table file's table (None when the file has none).
    """

    layout: Layout
    tables: Mapping[int, tuple[tuple[str, str], list[Item]]]
    file_items: list[Item] | None


def settle_file(
    data: bytes,
    catalog: Mapping[tuple[str, str], list[MetadataColumn]],
    extraction_ids: Mapping[int, tuple[str, str]] | None,
    file_table: tuple[str, str] | None,
    opts: Mapping[str, Any],
    result: DecodeResult,
) -> SettledFile | None:
    """Settle a file's layout and tables, as :func:`decode_extract_file` reads it.

    Returns None when nothing more is read: an empty file, or a file-level reject in
    ``result`` (a catalog type without a layout, a file whose table is not configured). Adds
    the warning of a layout the ``auto`` options detected.
    """
    unit = str(opts["unit"]).lower()
    try:
        variants = _item_variants(catalog, extraction_ids, file_table, opts)
    except ValueError as exc:
        result.rejects.append(
            Reject.of(data, 0, len(data), 0, "catalog_error", f"{exc}; fix the catalog seed")
        )
        return None
    tables, file_items = variants[-1]
    if not data:
        return None
    if file_items is None and (unit == "table" or (unit == "auto" and not tables)):
        result.rejects.append(Reject.of(data, 0, len(data), 0, "unknown_table", _UNKNOWN_TABLE))
        return None
    # unit auto: a table-unit file (one table: its folder or full_extract_tables) against a
    # group-unit file (extraction ids, or 0000 in a group full extract); timestamp_layout auto:
    # 7 bytes against 7 + 4 zero bytes. The layout that reads the most records decides (ties:
    # the first tried).
    best_score = -1
    for candidate_tables, candidate_items in variants:
        candidate, score = _settle_layout(data, opts, candidate_tables, candidate_items)
        if score > best_score:
            layout, tables, file_items, best_score = (
                candidate,
                candidate_tables,
                candidate_items,
                score,
            )
    if any(opts[k] == "auto" for k in ("byteswap", "logtype", "null_indicators")):
        result.warnings.append(f"detected {layout.describe()}")
    return SettledFile(layout, tables, file_items)


def is_one_table_file(
    settled: SettledFile, file_table: tuple[str, str] | None, extraction_ids: Sequence[int | None]
) -> bool:
    """Whether a file's records are one table's (and one transaction under the default).

    A file with a configured table, in a table layout or with extraction id 0 (or none) on
    every record (a group full extract).
    """
    return file_table is not None and (
        settled.layout.letter not in "DE" or all((e or 0) == 0 for e in extraction_ids)
    )


_UNKNOWN_TABLE = (
    "file whose table is not configured: for a table-unit file put it in a <SCHEMA>.<TABLE> "
    "folder or map its name in options.full_extract_tables; for a group-unit file declare the "
    "extraction ids (cdc_tables.csv table_identifier or options.extraction_ids)"
)


def _item_variants(
    catalog: Mapping[tuple[str, str], list[MetadataColumn]],
    extraction_ids: Mapping[int, tuple[str, str]] | None,
    file_table: tuple[str, str] | None,
    opts: Mapping[str, Any],
) -> list[tuple[dict[int, tuple[tuple[str, str], list[Item]]], list[Item] | None]]:
    """Return the item layouts to try: ``(tables by extraction id, file items)`` per layout.

    One per TIMESTAMP layout of option ``timestamp_layout`` (one when no table has a
    TIMESTAMP). Raises ValueError for a catalog type without a layout or a file table the
    catalog lacks.
    """
    unit = str(opts["unit"]).lower()
    fillers = {"ymdhms7": [0], "ymdhms7_r4": [4]}.get(str(opts["timestamp_layout"]), [0, 4])
    nvarchar_bytes = opts["nvarchar_length_unit"] == "bytes"
    intervals = opts["interval_layout"] if isinstance(opts["interval_layout"], Mapping) else None
    variants = []
    for filler in fillers:
        tables: dict[int, tuple[tuple[str, str], list[Item]]] = {}
        if unit != "table":
            for ext_id, table in (extraction_ids or {}).items():
                if table in catalog:
                    items = item_layout(catalog[table], filler, nvarchar_bytes, intervals)
                    tables[int(ext_id)] = (table, items)
        file_items = None
        if file_table is not None:
            if file_table not in catalog:
                raise ValueError(
                    f"table {'.'.join(file_table)} has no columns in seeds/cdc_columns.csv"
                )
            file_items = item_layout(catalog[file_table], filler, nvarchar_bytes, intervals)
        variants.append((tables, file_items))
        every_items = [file_items or []] + [t[1] for t in tables.values()]
        if not any(i.kind == "TIMESTAMP" for items in every_items for i in items):
            break  # both TIMESTAMP layouts are the same bytes
    return variants


def _framed_records(
    data: bytes,
    layout: Layout,
    tables: Mapping[int, tuple[tuple[str, str], list[Item]]],
    file_items: list[Item] | None,
    zoned_sign: str,
) -> Iterator[tuple[int, ParsedRecord | Reject]]:
    """Yield ``(record index, record or reject)`` for every record of the file, in order.

    Fixed-length files are read by numpy first (:func:`read_fixed_records`); a record it leaves
    out, and every record of other files, is read one by one. After a damaged record the next
    one starts at its end, or, when its length field is damaged, where the records chain
    again (:class:`~python_udfs.records.FrameChains`).
    """
    reader = _File(data, layout, tables, file_items, zoned_sign)
    fixed = reader.fixed_size()
    fast: dict[int, ParsedRecord] = {}  # fixed-length files: records read by numpy, by offset
    chains: FrameChains | None = None  # length-prefixed files: where to resume after damage
    if fixed is not None and data[:2] != b"\xff\xff":
        records = read_fixed_records(data, fixed, layout, file_items, zoned_sign)
        fast = {r.offset: r for r in records if r is not None}
    pos, index = 0, 0
    while pos < len(data):
        index += 1
        if pos in fast:
            yield index, fast[pos]
            pos += fixed
            continue
        try:
            record = reader.read(pos)
        except _Framing as bad:
            end = bad.end
            if layout.has_length and not _frame_holds(data, layout, pos, end):
                chains = chains or FrameChains(
                    data,
                    big_endian=layout.order == ">",
                    add=4 if layout.basis == "exclusive" else 0,
                    minimum=MINIMUM_RECORD[layout.letter in "AB"],
                )
                if not (end < len(data) and chains[end]):
                    end = chains.next_start(pos)  # a damaged length: resume where records chain
            yield index, Reject.of(data, pos, end, index, bad.reason, str(bad))
            pos = end
            continue
        yield index, record
        pos = record.offset + record.length


@dataclass(frozen=True, slots=True)
class _RowContext:
    """What every row of one file is built with (:func:`_row`)."""

    base: str
    layout: Layout
    outcode: str
    opts: Mapping[str, Any]
    tables: Mapping[int, tuple[tuple[str, str], list[Item]]]
    file_table: tuple[str, str] | None
    file_items: list[Item] | None


def _built_rows(
    data: bytes,
    parsed: list[tuple[int, ParsedRecord | Reject]],
    context: _RowContext,
    rejects: list[Reject],
) -> list[dict[str, Any]]:
    """Build the raw rows of the parsed records; append the rejects to ``rejects`` in order.

    A record whose values do not decode is a reject, and so is an empty-extract marker in a
    file that also holds rows.
    """
    char, nchar = outcode_codecs(
        context.outcode, context.layout.order, context.opts.get("nchar_encoding")
    )
    has_rows = any(isinstance(r, ParsedRecord) and r.operation in ROW_OPERATIONS for _, r in parsed)
    rows: list[dict[str, Any]] = []
    for index, record in parsed:
        if isinstance(record, Reject):
            rejects.append(record)
            continue
        where = (data, record.offset, record.offset + record.length, index)
        try:
            row = _row(
                record,
                index,
                context.base,
                context.layout,
                context.outcode,
                char,
                nchar,
                context.opts,
                context.tables,
                context.file_table,
                context.file_items,
            )
        except _Bad as bad:
            rejects.append(Reject.of(*where, bad.reason, str(bad)))
            continue
        if record.operation == Operation.EMPTY_FULL_EXTRACT and has_rows:
            rejects.append(
                Reject.of(*where, "empty_marker_among_rows", "empty-extract marker among rows")
            )
            continue
        rows.append(row)
    return rows


def _one_transaction(rows: list[dict[str, Any]], base: str) -> None:
    """Make a one-table file's rows one transaction (option ``table_unit_transaction: file``).

    Its id is the file name and last record index, and its last change ends it.
    """
    changes = [r for r in rows if r["operation_code"] != Operation.COMMIT]
    last = max((r["record_index"] for r in rows), default=0)
    for row in rows:
        row["transaction_id"] = f"{base}:{last:012d}"
        row["is_transaction_end"] = row is (changes[-1] if changes else rows[-1])


def _settle_layout(
    data: bytes,
    opts: Mapping[str, Any],
    tables: Mapping[int, tuple[tuple[str, str], list[Item]]],
    file_items: list[Item] | None,
    probe: int = 50,
) -> tuple[Layout, int]:
    """Settle the ``auto`` layout options.

    The candidate the candidate layout that reads the most of the first ``probe`` records wins
    (ties keep the options' preferred order: big-endian, NORMAL, with null indicators). When
    none reads anything, the first candidate is used and the records become rejects. Returns
    the layout and the number of records it read.
    """
    candidates = [
        layout
        for layout in candidate_layouts(opts)
        if file_items is not None or layout.letter in "DE"  # table layouts need the table
    ] or candidate_layouts(opts)
    best, best_score = candidates[0], 0
    for layout in candidates:
        reader = _File(data, layout, tables, file_items, str(opts["zoned_sign"]))
        pos = score = 0
        for _ in range(probe):
            if pos >= len(data):
                break
            try:
                record = reader.read(pos)
            except _Bad:
                break
            score += 1
            pos = record.offset + record.length
        if score > best_score:
            best, best_score = layout, score
        if pos >= len(data) and score:
            break  # this layout reads the whole (short) file
    return best, best_score


def _row(
    record: ParsedRecord,
    index: int,
    base: str,
    layout: Layout,
    outcode: str,
    char: str,
    nchar: str,
    opts: Mapping[str, Any],
    tables: Mapping[int, tuple[tuple[str, str], list[Item]]],
    file_table: tuple[str, str] | None,
    file_items: list[Item] | None,
) -> dict[str, Any]:
    op = record.operation
    schema = table = None
    names: list[str] | None = None
    items = None
    if op != Operation.COMMIT:
        if record.extraction_id:
            (schema, table), items = tables[record.extraction_id]
        elif file_table is not None:
            (schema, table), items = file_table, file_items
    data_map = None
    if record.items is not None and items is not None:
        names = [i.name for i in items]
        data_map = {}
        rtrim = bool(opts["char_rtrim"])
        for item, value in zip(items, record.items, strict=True):
            if isinstance(value, tuple):
                try:
                    value = item_text(value, char, nchar, rtrim)
                except UnicodeDecodeError as exc:
                    raise _Bad(
                        "undecodable_bytes", f"undecodable bytes in column {item.name} ({outcode})"
                    ) from exc
            data_map[item.name] = value
    return {
        "record_offset": record.offset,
        "record_index": index,
        "file_name": base,
        "layout": layout.letter,
        "logtype": "LITTLE" if layout.little else "NORMAL",
        "byte_order": "big" if layout.order == ">" else "little",
        # the record's bytes in the file (the length field plus 4 when it excludes itself)
        "record_length": record.length if record.record_length is not None else None,
        "valid_column_count": record.valid_count,
        "extraction_id": record.extraction_id,
        "operation_code": op,
        "operation_name": OPERATIONS[op],
        "source_schema": schema,
        "source_table": table,
        "is_full_extract": op in (Operation.FULL_EXTRACT, Operation.EMPTY_FULL_EXTRACT),
        "transaction_id": None,
        "is_transaction_end": None,
        "outcode": outcode,
        "column_names": names,
        "data": data_map,
    }
