"""Decoder for Oracle GoldenGate trail files (feed format ``goldengate_trail``).

A trail is a run of token-framed records: the file header ``F`` at offset 0, then ``G``
records, each ``[id u8][info u8][u16 total length]`` + sub-tokens ``H`` (record header, GHDR),
``D`` (data area), ``T`` (GGS tokens), closed by a ``Z`` trailer that repeats the length. The
RBA of a record is the file offset of its ``G`` byte. Lengths use the trail's byte order
(detected per file); column payload integers are big-endian.

Each ``G`` record becomes one raw row with every GHDR field the vendor lists (Hdr-Ind,
Partition, UndoFlag, BeforeAfter, RecLength, IOType, OrigNode, IO Time, AuditPos, AuditRBA,
TransInd, FormatType, SyskeyLen, Incomplete, Continued, RecCount), the table, the tokens, and
the column images as ``map<string,string>`` of canonical text. Columns not in a compressed
record are absent. Unified updates (IOType 134/135) carry ``before_data`` and ``data``;
FieldComp ``B``/``A`` pairs stay two rows (dbt pairs them by position). Metadata records
(IOType 170) define tables (TDR) and also land in ``raw_metadata``; table definitions may come
from a defgen sourcedefs file instead.

Follows ``formats/goldengate_trail.md`` (built from ``seeds/goldengate_record_header_ja.txt``)
and the real trails ``samples/goldengate/tc000000`` (+ ``tc.def``) and ``tr000000000``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import functools
import re
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, NamedTuple

from python_udfs.canonical import (
    canonical_date,
    canonical_decimal,
    canonical_time,
    canonical_timestamp,
    packed_decimal,
    scaled_digits,
)
from python_udfs.records import DecodeResult, MetadataColumn, Reject
from python_udfs.records import RecordError as _Bad

FORMAT = "goldengate_trail"

#: Every option a ``goldengate_trail`` feed accepts (formats/goldengate_trail.md, *Uncertain points
#: and options*): name → (default, the values this version implements; ``None``: any value of the
#: option's kind). ``definitions`` is the sourcedefs file under the landing root; ``segments``
#: defaults to ``reassemble``, not the page's ``reject`` (issue 13). The decoder reads
#: ``DEFAULT_OPTIONS`` and ``config.load_project`` checks its choices
#: (``FeedFormat.option_choices``), both derived from this one table, so the check cannot drift
#: from what the decoder reads.
OPTIONS: dict[str, tuple[Any, tuple[Any, ...] | None]] = {
    "byte_order": ("auto", ("auto", "big", "little")),
    "metadata_source": ("auto", ("auto", "trail", "sourcedefs")),
    "column_int_byte_order": ("big", ("big", "metadata")),
    "definitions": (None, None),
    "char_encoding": (None, None),
    "update_pair_position": ("before", ("before", "after")),
    "number_text_rendering": ("as_decimal", ("as_decimal", "as_float")),
    "segments": ("reassemble", ("reassemble", "reject")),
    "seqno_source": ("header", ("header", "file_name")),
    "unknown_iotype": ("keep", ("keep", "reject")),
    "subsecond_overflow": ("truncate", ("truncate", "reject")),
    "incomplete_tail": ("pending", ("pending", "reject")),
    "upsert_as": ("update", ("update", "insert")),
    "datetime_kind": ("by_msdt_lsdt", ("by_msdt_lsdt", "timestamp_always")),
}
#: Default of every option (``OPTIONS``).
DEFAULT_OPTIONS: dict[str, Any] = {name: spec[0] for name, spec in OPTIONS.items()}
#: Accepted values of every option (``OPTIONS``); ``None`` takes any value of its kind.


class IOType(enum.IntEnum):
    """GHDR IOType codes of open-systems trails (formats/goldengate_trail.md, *IOType codes*)."""

    DELETE = 3
    INSERT = 5
    UPDATE = 10  # full image
    FIELD_COMP = 15  # compressed update: a B record (before image), then its A record
    PK_UPDATE = 115  # key change, with the before key columns
    PK_UPDATE_ALT = 116  # key change, the page's second code
    UNIFIED_UPDATE = 134  # before and after images in one record
    UNIFIED_PK_UPDATE = 135
    UPSERT = 140  # option upsert_as
    TRUNCATE = 100  # Logdump: GGSPurgedata
    DDL = 160
    METADATA = 170  # DDR (OrigNode 1) or TDR (OrigNode 2)


class TokenId(enum.IntEnum):
    """The ids of a trail's record tokens, a ``G`` record's sub-tokens and three GGS tokens.

    formats/goldengate_trail.md, *Layout*: ``'F' 'G' 'Z'`` and ``'H' 'D' 'T'``; *GGS tokens*:
    ``'R' 'L' '6'``.
    """

    FILE_HEADER = 0x46  # 'F': once, at offset 0
    RECORD = 0x47  # 'G': every other record
    TRAILER = 0x5A  # 'Z': ends every record, repeating its length
    HEADER = 0x48  # 'H': the record header, GHDR
    DATA = 0x44  # 'D': the data area, GHDR.RecLength bytes
    TOKENS = 0x54  # 'T': the GGS tokens
    ROW_ID = 0x52  # 'R' in the GGS tokens: ORAROWID
    LOG_CSN = 0x4C  # 'L' in the GGS tokens: LOGCSN
    TRAN_ID = 0x36  # '6' in the GGS tokens: TRANID


class TransInd(enum.IntEnum):
    """GHDR TransInd: the record's place in its transaction (formats/goldengate_trail.md)."""

    FIRST = 0
    MIDDLE = 1
    LAST = 2
    ONLY = 3


#: Canonical operation of each IOType (formats/goldengate_trail.md, *IOType codes*).
IO_TYPES: dict[int, str] = {
    IOType.DELETE: "DELETE",
    IOType.INSERT: "INSERT",
    IOType.UPDATE: "UPDATE",
    IOType.FIELD_COMP: "UPDATE",
    IOType.PK_UPDATE: "UPDATE",
    IOType.PK_UPDATE_ALT: "UPDATE",
    IOType.UNIFIED_UPDATE: "UPDATE",
    IOType.UNIFIED_PK_UPDATE: "UPDATE",
    IOType.UPSERT: "UPDATE",
    IOType.TRUNCATE: "TRUNCATE",
    IOType.DDL: "DDL",
    IOType.METADATA: "METADATA",
}
#: The GGS tokens whose value is text (:func:`token_text`); every other token's is hex.
TEXT_TOKENS = (TokenId.ROW_ID, TokenId.LOG_CSN, TokenId.TRAN_ID)
#: IOTypes that change no row of a table (a TRUNCATE changes all of them, in dbt).
NO_ROW_IMAGE = (IOType.TRUNCATE, IOType.DDL)


class GHdr(NamedTuple):
    """The fixed part of a record header: GHDR offsets 0–33.

    formats/goldengate_trail.md, *Fields*; the table reference from offset 34 is read by
    :func:`_table_reference`.
    """

    hdr_ind: bytes  # 0: b"E"
    partition: int  # 1
    undo_flag: int  # 2
    before_after: bytes  # 3: b"B" / b"A"
    rec_length: int  # 4: u16, the D token's length
    io_type: int  # 6: IOType
    orig_node: int  # 7: on IOType 170, 1 DDR, 2 TDR
    io_time: int  # 8: i64 microseconds since Julian day 0
    audit_pos: int  # 16: u64
    audit_rba: int  # 24: u32; metadata: (DDR u16, TDR u16)
    trans_ind: int  # 28: TransInd
    format_type: bytes  # 29: b"R" / b"F"
    syskey_len: int  # 30
    incomplete: int  # 31
    continued: int  # 32: 1 = a segment of a larger item
    rec_count: int  # 33


def _per_byte_order(layout: str) -> dict[str, struct.Struct]:
    """One :class:`struct.Struct` of ``layout`` per trail byte order (``>``, ``<``)."""
    return {order: struct.Struct(order + layout) for order in "><"}


#: :class:`GHdr` as bytes, per byte order (``>``, ``<``): 34 bytes.
GHDR = _per_byte_order("cBBcHBBqQIBcBBBB")


class TokenHeader(NamedTuple):
    """The header of a token, ``[id u8][info u8][len u16]``.

    formats/goldengate_trail.md, *What a file looks like* (token framing). ``length`` is the
    value's length in bytes, except in the ``F``, ``G`` and ``Z`` tokens of a record, where it
    is the record's total length (the ``Z`` trailer repeats it).
    """

    token_id: int  # 0: u8, TokenId
    info: int  # 1: u8; bit 0x40: the length is a u32 (LONG_TOKEN_HEADER)
    length: int  # 2: u16 (u32 in a long header)


#: :class:`TokenHeader` as bytes, per byte order: 4 bytes, a u16 length.
TOKEN_HEADER = _per_byte_order("BBH")
#: :class:`TokenHeader` of a token whose info byte is ``LONG_LENGTH_INFO``: 6 bytes, a u32 length.
LONG_TOKEN_HEADER = _per_byte_order("BBI")
#: The info byte of a token with a u32 length (metadata records).
LONG_LENGTH_INFO = 0x40
#: The smallest record: its token header and its trailer, no value.
MIN_RECORD_LENGTH = 2 * 4
#: TrailInfo sub-tokens of the file header's group ``0`` (formats/goldengate_trail.md, *File
#: header*): sub-token id → (field, its value as a struct of the trail's byte order).
TRAIL_INFO_FIELDS = {
    0x31: ("compatibility", _per_byte_order("H")),
    0x38: ("seqno", _per_byte_order("I")),
    0x33: ("creation_time", _per_byte_order("q")),
}
#: The file header's group of TrailInfo sub-tokens.
TRAIL_INFO_GROUP = 0x30


class TdrColumnHead(NamedTuple):
    """The head of a TDR's column entry, before the column name: ``[u16 n][u16][u16 len]``.

    formats/goldengate_trail.md, *Metadata records*: ``entry_length`` counts the bytes after
    itself.
    """

    entry_length: int  # 0: u16
    name_length: int  # 4: u16


class TdrColumn(NamedTuple):
    """The attributes after a TDR column's name (the first 44 of its 60 bytes).

    formats/goldengate_trail.md, *Metadata records* (the table of entry offsets after the
    name, checked against ``tc.def``); the other bytes are constant in the samples.
    """

    data_type: int  # 0: u16, GG data type
    internal_length: int  # 2: u32
    external_length: int  # 6: u32
    binary_length: int  # 10: u32
    table_length: int  # 14: u32
    fetch_offset: int  # 22: u32
    native_type: int  # 30: u16, the database's own type
    sub_type: int  # 32: u16
    msdt: int  # 34: u16
    lsdt: int  # 36: u16
    scale: int  # 38: u16
    flags: int  # 42: u16; TDR_KEY_FLAG: a key column


#: :class:`TdrColumnHead` as bytes, per byte order: 6 bytes.
TDR_COLUMN_HEAD = _per_byte_order("H2xH")
#: :class:`TdrColumn` as bytes, per byte order: 44 bytes.
TDR_COLUMN = _per_byte_order("HIIII4xI4xHHHHH2xH")
#: :attr:`TdrColumn.flags` bit of a key column.
TDR_KEY_FLAG = 0x01
#: The TDR data area's group token and its sub-token of column entries.
TDR_GROUP, TDR_COLUMNS = 0x30, 0x03


class ColumnEntryHead(NamedTuple):
    """The head of a column entry of an image in the data area, ``[u16 index][u16 length]``.

    formats/goldengate_trail.md, *Data area*: ``length`` counts the null indicator (u16,
    ``0000`` or ``FFFF``) and the value after it.
    """

    index: int  # 0: u16, the column's position in its table definition
    length: int  # 2: u16


#: :class:`ColumnEntryHead` as bytes, per byte order: 4 bytes.
COLUMN_ENTRY_HEAD = _per_byte_order("HH")

#: GHDR offset of a metadata record's TDR index, a u16 (AuditRBA's second half).
GHDR_TDR_INDEX_OFFSET = 26
#: NonStop TMF IOTypes, not expected from open systems: rejected.
NONSTOP_IO_TYPES = {1, 2, 4, 6, 7, 8, 9, 11, 12, 13, 14, 16, 17, 18, 19}
JULIAN_UNIX_OFFSET_US = 210_866_760_000_000_000
TRAIL_NAME_RE = re.compile(r"^[A-Za-z0-9]{2}(\d{6}|\d{9})$")
_UNIX_EPOCH = dt.datetime(1970, 1, 1)


@dataclass(frozen=True, slots=True)
class GGColumn:
    """One column of a table definition (sourcedefs line or TDR entry).

    ``index`` is the 0-based position used in the data area; ``data_type`` the GoldenGate type
    code; ``scale`` the decimal scale; ``msdt``/``lsdt`` the most/least significant datetime
    fields (0 year … 5 second, 6 fraction); ``sub_type`` the GoldenGate sub data type.
    """

    name: str
    index: int
    data_type: int
    external_length: int
    scale: int
    msdt: int
    lsdt: int
    sub_type: int
    is_key: bool
    nullable: bool = True


@dataclass(slots=True)
class GGTable:
    """A table definition: ``SCHEMA.TABLE`` name and columns in definition order."""

    name: str
    columns: list[GGColumn]
    source: str = "sourcedefs"
    char_encoding: str | None = None

    @property
    def schema_and_table(self) -> tuple[str, str]:
        """Split ``SCHEMA.TABLE`` (a name without a dot has an empty schema)."""
        schema, _, table = self.name.rpartition(".")
        return schema, table

    def metadata(self, offset: int = 0, index: int = 0) -> list[MetadataColumn]:
        """Return the definition as catalog columns (for ``raw_metadata``)."""
        schema, table = self.schema_and_table
        keys = [c for c in self.columns if c.is_key]
        return [
            MetadataColumn(
                source_schema=schema,
                source_table=table,
                table_version=None,
                column_name=c.name,
                ordinal=c.index + 1,
                source_type=str(c.data_type),
                length=c.external_length,
                precision=None,
                scale=c.scale,
                primary_key_position=keys.index(c) + 1 if c.is_key else 0,
                nullable=c.nullable,
                metadata_source=f"goldengate_{self.source}",
                record_offset=offset,
                record_index=index,
            )
            for c in self.columns
        ]


def parse_sourcedefs(text: str) -> tuple[dict[str, GGTable], str | None]:
    """Parse a defgen sourcedefs file (like ``tc.def``) into table definitions.

    Returns ``({"SCHEMA.TABLE": GGTable}, character set)``. Raises ValueError when a definition
    is malformed (a column line without 19 fields, a column count that does not match).
    """
    tables: dict[str, GGTable] = {}
    charset = None
    current: GGTable | None = None
    expected = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("*"):
            continue
        if line.startswith("Character set ID:"):
            charset = line.split(":", 1)[1].strip() or None
        elif line.startswith("Definition for table "):
            current = GGTable(line[len("Definition for table ") :].strip(), [])
        elif line.startswith("Columns:") and current is not None:
            expected = int(line.split(":", 1)[1])
        elif line == "End of definition" and current is not None:
            if len(current.columns) != expected:
                raise ValueError(
                    f"line {number}: {current.name} declares {expected} columns, has {len(current.columns)}"
                )
            tables[current.name] = current
            current = None
        elif current is not None and not line.startswith(("Record length:", "Syskey:")):
            fields = line.split()
            if len(fields) != 19:
                raise ValueError(
                    f"line {number}: column line has {len(fields)} fields, expected 19"
                )
            f = [int(x) for x in fields[1:]]
            current.columns.append(
                GGColumn(
                    name=fields[0],
                    index=len(current.columns),
                    data_type=f[0],
                    external_length=f[1],
                    scale=f[3],
                    msdt=f[10],
                    lsdt=f[11],
                    sub_type=f[17],
                    is_key=f[16] == 1,
                    nullable=f[5] == 1,
                )
            )
    for table in tables.values():
        table.char_encoding = charset
    return tables, charset


#: Spark types of the catalog seed that a VARCHAR column (type 64) carries as number text.
_NUMBER_TEXT_SPARK_TYPES = ("decimal", "int", "bigint", "smallint", "tinyint", "double", "float")


def tables_from_catalog(
    catalog: Mapping[tuple[str, str], Sequence[MetadataColumn]],
    spark_types: Mapping[tuple[str, str], Mapping[str, str]],
) -> dict[str, GGTable]:
    """Build table definitions from a feed's catalog seed rows (``seeds/cdc_columns.csv``).

    ``catalog`` maps ``(schema, table)`` to the seed's columns in ordinal order and
    ``spark_types`` the same key to ``{column: spark_type}`` (as
    :meth:`python_udfs.config.ProjectConfig.feed_catalog` and ``spark_types`` give them). A
    table whose every ``source_type`` is a GoldenGate type code (the digits ``cdc scaffold``
    writes from sourcedefs or TDRs) becomes a definition: ``length`` and ``scale`` as declared;
    the seed has no MSDT/LSDT, so a 191/192 column is a DATE when its spark_type is ``date``
    and a TIMESTAMP otherwise; a type-64 column whose spark_type is numeric carries number text
    (sub-type 2), ``binary`` raw bytes (sub-type 4). Tables with other type names are left out
    (their records stay rejects: "no metadata"). Used by ``metadata_source: auto`` after the
    trail's TDRs and the sourcedefs file (formats/goldengate_trail.md, *Uncertain points*).
    """
    tables: dict[str, GGTable] = {}
    for (schema, table), columns in catalog.items():
        if not columns or not all(str(c.source_type).isdigit() for c in columns):
            continue
        types = spark_types.get((schema, table), {})
        definition = []
        for index, c in enumerate(sorted(columns, key=lambda c: c.ordinal)):
            spark_type = str(types.get(c.column_name, "string")).lower()
            code = int(c.source_type)
            sub_type = 0
            if code in (64, 65) and spark_type.startswith(_NUMBER_TEXT_SPARK_TYPES):
                sub_type = 2
            elif code in (64, 65) and spark_type == "binary":
                sub_type = 4
            date_only = code in (191, 192) and spark_type == "date"
            definition.append(
                GGColumn(
                    name=c.column_name,
                    index=index,
                    data_type=code,
                    external_length=c.length or 0,
                    scale=c.scale or 0,
                    msdt=0,
                    lsdt=2 if date_only else 6,
                    sub_type=sub_type,
                    is_key=bool(c.primary_key_position),
                    nullable=bool(c.nullable),
                )
            )
        name = f"{schema}.{table}" if schema else table
        tables[name] = GGTable(name, definition, source="catalog")
    return tables


@functools.lru_cache(maxsize=4096)
def julian_to_text(value: int, overflow: str = "truncate") -> str:
    """Render Julian-epoch microseconds (GMT) as canonical UTC timestamp text.

    Cached: the records of one transaction repeat its commit timestamp.
    """
    return canonical_timestamp(
        _UNIX_EPOCH + dt.timedelta(microseconds=value - JULIAN_UNIX_OFFSET_US), overflow
    )


@dataclass(slots=True)
class _Trail:
    """Per-file decoding state."""

    data: bytes
    order: str  # ">" or "<"
    u16: struct.Struct
    u32: struct.Struct
    seqno: int
    tables: dict[str, GGTable]
    tdrs: dict[int, GGTable] = field(default_factory=dict)
    tran_id: str | None = None
    log_csn: str | None = None
    used: set[str] = field(default_factory=set)
    segmenting: bool = False  # a segmented record is being read: keep each segment's 'D' bytes
    #: option metadata_source: ``sourcedefs`` maps a TDR's index to the definition of its
    #: table name instead of reading the TDR's columns
    metadata_source: str = "auto"
    #: bytes of the file header (the F record): where the first record starts
    header_length: int = 0


def detect_byte_order(data: bytes) -> str | None:
    """Return ``">"`` or ``"<"`` for a trail whose ``F`` record checks out that way, else None.

    Rule: take the length both ways; keep the order for which ``rec[L-4] == 'Z'`` and the
    trailer repeats ``L`` (formats/goldengate_trail.md, option ``byte_order``).
    """
    if len(data) < MIN_RECORD_LENGTH or data[0] != TokenId.FILE_HEADER:
        return None
    for order in (">", "<"):
        header = TokenHeader._make(TOKEN_HEADER[order].unpack_from(data, 0))
        if MIN_RECORD_LENGTH <= header.length <= len(data):
            trailer = TokenHeader._make(TOKEN_HEADER[order].unpack_from(data, header.length - 4))
            if trailer.token_id == TokenId.TRAILER and trailer.length == header.length:
                return order
    return None


def _tokens(buf: bytes, start: int, end: int, order: str) -> list[tuple[int, int, int, int]]:
    """Split ``buf[start:end]`` into tokens ``(id, info, value_start, value_end)``.

    Info ``0x40`` means a u32 length. Raises ValueError when a token overruns ``end``.
    """
    short, long = TOKEN_HEADER[order], LONG_TOKEN_HEADER[order]
    out = []
    pos = start
    while pos < end:
        header = short if pos + 1 >= end or buf[pos + 1] != LONG_LENGTH_INFO else long
        if pos + header.size > end:
            raise ValueError(f"token header overruns at {pos}")
        tid, info, length = header.unpack_from(buf, pos)
        vstart = pos + header.size
        if vstart + length > end:
            raise ValueError(f"token {chr(tid)!r} at {pos} overruns its record")
        out.append((tid, info, vstart, vstart + length))
        pos = vstart + length
    return out


def _file_header(data: bytes, order: str, length: int) -> dict[str, Any]:
    """Read TrailInfo (group ``0``) of the ``F`` record: Compatibility, Seqno, CreationTime."""
    info: dict[str, Any] = {}
    for tid, _i, vs, ve in _tokens(data, 4, length - 4, order):
        if tid != TRAIL_INFO_GROUP:
            continue
        for sid, sinfo, svs, sve in _tokens(data, vs, ve, order):
            name, value = TRAIL_INFO_FIELDS.get(sid, (None, None))
            if sinfo != 0xFF and name is not None and sve - svs == value[order].size:
                info[name] = value[order].unpack_from(data, svs)[0]
    return info


def seqno_from_name(file_name: str) -> int | None:
    """Return the sequence number in a trail file name (``tc000000`` → 0), or None."""
    base = file_name.replace("\\", "/").rsplit("/", 1)[-1]
    match = TRAIL_NAME_RE.match(base)
    return int(match.group(1)) if match else None


def decode_trail_file(
    data: bytes,
    *,
    file_name: str,
    definitions: Mapping[str, GGTable] | None = None,
    options: Mapping[str, Any] | None = None,
    start: int = 0,
    start_index: int = 0,
    final: bool = False,
) -> DecodeResult:
    """Decode one trail file (from byte ``start``) into raw rows, metadata and rejects.

    ``definitions`` maps ``SCHEMA.TABLE`` to sourcedefs definitions (:func:`parse_sourcedefs`);
    TDR metadata records in the trail are used as well (and win for the tables they define).
    Records before ``start`` (already ingested) are walked again only to rebuild the TDRs and
    the open transaction's carried tokens. A partly written last record is left for the next
    run (``consumed_end`` stops before it) unless ``final``. Never raises for bad input.

    Row keys: ``record_offset`` (= RBA, bytes), ``record_length`` (bytes, G to Z),
    ``record_index``, ``trail_seqno``, the GHDR
    fields snake_cased (``hdr_ind``, ``partition``, ``undo_flag``, ``before_after``,
    ``rec_length``, ``io_type``, ``orig_node``, ``io_time`` (canonical UTC text),
    ``audit_pos`` (u64 as digits), ``audit_rba``, ``trans_ind``, ``format_type``, ``syskey_len``,
    ``incomplete``, ``continued``, ``rec_count``), ``table_name``, ``source_schema``,
    ``source_table``, ``tdr_index``, ``token_row_id``, ``token_log_csn``, ``token_tran_id``
    (as in the record), ``transaction_id`` / ``log_csn`` (carried from the transaction's first
    record in this file), ``tokens`` (every token, text or hex), ``column_names``, ``data``,
    ``before_data``.
    """
    opts = {**DEFAULT_OPTIONS, **(options or {})}
    final = final or opts["incomplete_tail"] == "reject"
    result = DecodeResult(consumed_end=max(start, 0))
    state = open_trail(data, file_name, definitions, opts, final, result)
    if state is not None:
        _TrailWalk(state, opts, result, start, start_index, final).walk()
    return result


def open_trail(
    data: bytes,
    file_name: str,
    definitions: Mapping[str, GGTable] | None,
    opts: dict[str, Any],
    final: bool,
    result: DecodeResult,
) -> _Trail | None:
    """Read the file header: the byte order, the header's length and the trail seqno.

    Returns the trail's reading state, or None when there is nothing to walk: not a trail
    file (one reject), or a header still being written (nothing consumed, unless ``final``).
    Sets ``opts["column_int_order"]`` (option ``column_int_byte_order``).
    """
    order = (
        detect_byte_order(data)
        if opts["byte_order"] == "auto"
        else {"big": ">", "little": "<"}[opts["byte_order"]]
    )
    if order is None or data[:1] != b"F":
        if len(data) < 8 and not final:
            result.consumed_end = 0
            return None
        message = "first record is not an F file header in either byte order"
        result.rejects.append(Reject.of(data, 0, len(data), 0, "not_a_trail_file", message))
        result.consumed_end = len(data)
        return None
    # option column_int_byte_order: integer column payloads in big-endian order, or in the
    # trail's metadata order (read by column_value from this key)
    opts["column_int_order"] = order if opts["column_int_byte_order"] == "metadata" else ">"
    header_length = TokenHeader._make(TOKEN_HEADER[order].unpack_from(data, 0)).length
    if header_length > len(data):
        if final:
            message = f"file header of {header_length} bytes overruns the file ({len(data)})"
            result.rejects.append(Reject.of(data, 0, len(data), 0, "truncated_record", message))
            result.consumed_end = len(data)
        return None  # not final: the writer is still writing the header
    result.consumed_end = max(result.consumed_end, header_length)
    state = _Trail(
        data,
        order,
        struct.Struct(order + "H"),
        struct.Struct(order + "I"),
        _trail_seqno(data, order, header_length, file_name, opts, result),
        # option metadata_source: trail reads the TDR records only
        dict(definitions or {}) if opts["metadata_source"] != "trail" else {},
        metadata_source=opts["metadata_source"],
    )
    state.header_length = header_length
    return state


def _trail_seqno(
    data: bytes,
    order: str,
    header_length: int,
    file_name: str,
    opts: Mapping[str, Any],
    result: DecodeResult,
) -> int:
    """Return the trail's sequence number: the file header's, or the file name's.

    The file name's with option ``seqno_source: file_name`` or a header that does not parse;
    a difference between the two is a warning.
    """
    try:
        info = _file_header(data, order, header_length)
    except (ValueError, struct.error) as exc:
        info = {}
        result.warnings.append(
            f"file header does not parse ({exc}); seqno taken from the file name"
        )
    seqno = info.get("seqno")
    name_seqno = seqno_from_name(file_name)
    if opts["seqno_source"] == "file_name" or seqno is None:
        return name_seqno if name_seqno is not None else 0
    if name_seqno is not None and name_seqno != seqno:
        result.warnings.append(f"file name seqno {name_seqno} differs from header Seqno {seqno}")
    return seqno


@dataclass(slots=True)
class _TrailWalk:
    """One walk over a trail's records after its file header, into ``result``.

    Records before ``start`` (already ingested) are walked again only to rebuild the TDRs and
    the open transaction's carried tokens (``emit`` false). It keeps what spans records: a
    FieldComp before image waiting for its after image (``pending_b``), a segmented record
    waiting for its last segment (``segments``) and the TransInd sequence.
    """

    state: _Trail
    opts: Mapping[str, Any]
    result: DecodeResult
    start: int
    start_index: int
    final: bool
    index: int = 0
    pending_b: tuple[dict[str, Any], int] | None = None
    segments: _Segments | None = None
    sequence: _TransactionSequence = field(default_factory=lambda: _TransactionSequence())

    def walk(self) -> None:
        """Read every whole record, then what the end of the file leaves open."""
        data = self.state.data
        pos = self.state.header_length
        while pos < len(data):
            next_pos = self._record(pos)
            if next_pos is None:
                break  # the writer is still writing this record: left for the next run
            pos = next_pos
        self._finish()

    def _record(self, pos: int) -> int | None:
        """Read the record at ``pos``; return where the next one starts (None: stop here)."""
        state, result, data = self.state, self.result, self.state.data
        emit = pos >= self.start
        if emit:
            self.index = max(self.index, self.start_index)
        end, framed = self._frame(pos, emit)
        if not framed:
            return end
        parsed = _parse(state, pos, end, self.opts, emit)
        if self.segments is not None and not (
            isinstance(parsed, tuple) and self.segments.continued_by(parsed[0])
        ):
            # the segmented record never got its last segment: reject it, read this one alone
            self.segments.reject(data, result, pos, "segment_without_end")
            self.segments, state.segmenting = None, False
            parsed = _parse(state, pos, end, self.opts, emit)
        if isinstance(parsed, Reject):
            if emit:
                result.rejects.append(dataclasses.replace(parsed, record_index=self.index))
                result.consumed_end = end
            return end
        row, metadata = parsed
        record_start = pos
        if "_segment_data" in row:  # segments.md: concatenate 'D' until Continued = N
            row, record_start = self._segment(row, pos, end)
            if row is None:
                return end
        if metadata is not None and emit:
            result.metadata.extend(metadata.metadata(record_start, self.index))
        if emit:
            self._emit(row, record_start, end)
        return end

    def _frame(self, pos: int, emit: bool) -> tuple[int | None, bool]:
        """Frame the record at ``pos``: ``(its end, True)``.

        A record that does not frame gives ``(where records resume, False)`` after a reject,
        and ``(None, False)`` when it is still being written.
        """
        state, result = self.state, self.result
        try:
            end = _frame(state, pos)
        except _Bad as bad:
            if bad.reason == "truncated_record" and not self.final:
                return None, False
            resync = _resync(state, pos + 1)
            if emit:
                self.index += 1
                reject = Reject.of(state.data, pos, resync, self.index, bad.reason, str(bad))
                result.rejects.append(reject)
            result.consumed_end = max(result.consumed_end, resync)
            return resync, False
        if emit:
            self.index += 1
        return end, True

    def _segment(
        self, row: dict[str, Any], pos: int, end: int
    ) -> tuple[dict[str, Any] | None, int]:
        """Add a segment's 'D' bytes; return the whole record once its last segment is read.

        Returns ``(None, pos)`` before that, or when the whole does not decode.
        """
        if self.segments is None:
            self.segments = _Segments(row, pos, self.index)
            self.state.segmenting = True
        self.segments.parts.append(row.pop("_segment_data"))
        row.pop("_table", None)
        if row["continued"]:
            return None, pos
        self.state.segmenting = False
        whole, record_start = self.segments.whole(
            self.state, self.opts, self.state.data, self.result, end
        )
        self.segments = None
        return whole, record_start

    def _emit(self, row: dict[str, Any], record_start: int, end: int) -> None:
        """Add a row; check it against the FieldComp before image it may complete."""
        result = self.result
        row.update(
            record_offset=record_start,
            record_length=end - record_start,
            record_index=row.get("record_index") or self.index,
            trail_seqno=self.state.seqno,
        )
        result.consumed_end = end
        # FieldComp B records must be followed by their A record.
        if self.pending_b is not None:
            if not _is_after_of(row, self.pending_b[0]):
                _reject_orphan(
                    self.state.data, result, self.pending_b, "not followed by its after image"
                )
            self.pending_b = None
        if row["io_type"] == IOType.FIELD_COMP and row["before_after"] == "B":
            self.pending_b = (row, end)
        if row["io_type"] not in IO_TYPES:
            result.warnings.append(
                f"unknown IOType {row['io_type']} at RBA {record_start} kept in raw"
            )
        if row["io_type"] != IOType.METADATA:
            self.sequence.see(row["trans_ind"], record_start, result.warnings)
        result.rows.append(row)

    def _finish(self) -> None:
        """Report what the end of the file leaves open, and the sourcedefs tables it used."""
        state, result, data = self.state, self.result, self.state.data
        if self.final and self.sequence.open_at is not None:
            result.warnings.append(transaction_without_end(self.sequence.open_at))
        if self.segments is not None:
            if self.final:
                self.segments.reject(data, result, len(data), "segment_without_end")
            else:  # the next segments are still being written: read the record again next run
                result.consumed_end = min(result.consumed_end, self.segments.start)
        for name in sorted(state.used):  # sourcedefs tables this file used: for `cdc scaffold`
            if state.tables[name].source == "sourcedefs":
                result.metadata.extend(state.tables[name].metadata())
        if self.pending_b is not None and self.final:
            _reject_orphan(data, result, self.pending_b, "at end of file")


@dataclass(slots=True)
class _TransactionSequence:
    """Checks TransInd order within a file (formats/goldengate_trail.md, bad input).

    A 1 or 2 after a transaction ended, or a 0 while one is open, is out of sequence: a
    warning (the transaction grouping in dbt closes the open one and starts a new one). A file
    may start inside a transaction begun in the previous file.
    """

    open_at: int | None = None  # RBA of the open transaction's first record
    ended: bool = False  # a transaction ended in this file: a 1 or 2 now has no opening 0

    def see(self, trans_ind: int, rba: int, warnings: list[str]) -> None:
        """Record one change record's TransInd, appending a warning when out of sequence."""
        if trans_ind in (TransInd.FIRST, TransInd.ONLY) and self.open_at is not None:
            warnings.append(
                f"TransInd {trans_ind} at RBA {rba} while the transaction of RBA "
                f"{self.open_at} is open: that transaction ends incomplete"
            )
        elif trans_ind in (TransInd.MIDDLE, TransInd.LAST) and self.open_at is None and self.ended:
            warnings.append(f"TransInd {trans_ind} at RBA {rba} without an open transaction")
        if trans_ind == TransInd.FIRST:
            self.open_at = rba
        elif trans_ind in (TransInd.LAST, TransInd.ONLY):
            self.open_at, self.ended = None, True


def _parse(
    state: _Trail, start: int, end: int, opts: Mapping[str, Any], emit: bool
) -> tuple[dict[str, Any], GGTable | None] | Reject:
    """Decode the framed record ``[start, end)``: ``(row, metadata)`` or a Reject."""
    try:
        try:
            return _record(state, start, end, opts, images=emit)
        except (ValueError, IndexError, ArithmeticError, struct.error) as exc:
            raise _Bad("bad_record", f"record does not parse: {exc}") from exc
    except _Bad as bad:
        return Reject.of(state.data, start, end, 0, bad.reason, str(bad))


@dataclass(slots=True)
class _Segments:
    """A segmented record (Continued = Y) being read.

    Holds its first segment's row, offset and index, and every segment's 'D' bytes so far
    (formats/goldengate_trail.md, *Segmented records*).
    """

    first: dict[str, Any]
    start: int
    index: int
    parts: list[bytes] = field(default_factory=list)

    def continued_by(self, row: Mapping[str, Any]) -> bool:
        """Whether ``row`` is the next segment: same table, IOType and AuditPos."""
        return "_segment_data" in row and all(
            row[k] == self.first[k] for k in ("io_type", "audit_pos", "table_name")
        )

    def whole(
        self, state: _Trail, opts: Mapping[str, Any], data: bytes, result: DecodeResult, end: int
    ) -> tuple[dict[str, Any] | None, int]:
        """Decode the concatenated 'D' bytes as one record: ``(row, first offset)``.

        A record that does not decode becomes one reject over every segment (row None).
        """
        row, joined = self.first, b"".join(self.parts)
        table = state.tables.get(row["table_name"]) if row["table_name"] else None
        table = table or state.tdrs.get(row.get("tdr_index"))
        if table is not None and row["io_type"] not in NO_ROW_IMAGE and joined:
            try:
                whole = _Trail(joined, state.order, state.u16, state.u32, state.seqno, state.tables)
                _images(whole, row, table, 0, len(joined), opts)
            except (_Bad, ValueError, IndexError, ArithmeticError, struct.error) as exc:
                message = f"reassembled segmented record does not parse: {exc}"
                self.reject(data, result, end, "bad_record", message)
                result.consumed_end = end
                return None, self.start
        row["record_index"] = self.index
        row["continued"] = 0
        return row, self.start

    def reject(
        self,
        data: bytes,
        result: DecodeResult,
        end: int,
        reason: str,
        message: str = "segmented record (Continued = Y) without its last segment",
    ) -> None:
        """Reject the segments read so far, ``[start, end)``."""
        result.rejects.append(Reject.of(data, self.start, end, self.index, reason, message))


def _reject_orphan(
    data: bytes, result: DecodeResult, pending_b: tuple[dict[str, Any], int], why: str
) -> None:
    """Move a FieldComp ``B`` row without its ``A`` record from the rows to the rejects."""
    b_row, b_end = pending_b
    result.rows.remove(b_row)
    result.rejects.append(
        Reject.of(
            data,
            b_row["record_offset"],
            b_end,
            b_row["record_index"],
            "orphan_before_image",
            f"FieldComp before image {why}",
        )
    )


def _is_after_of(row: Mapping[str, Any], b_row: Mapping[str, Any]) -> bool:
    return (
        row["io_type"] == IOType.FIELD_COMP
        and row["before_after"] == "A"
        and row["table_name"] == b_row["table_name"]
        and row["audit_pos"] == b_row["audit_pos"]
    )


def _frame(state: _Trail, pos: int) -> int:
    """Check the ``G`` record at ``pos`` from both ends; return its end offset."""
    data = state.data
    token_header = TOKEN_HEADER[state.order]
    if pos + token_header.size > len(data):
        raise _Bad("truncated_record", f"truncated record at RBA {pos}")
    header = TokenHeader._make(token_header.unpack_from(data, pos))
    if header.token_id != TokenId.RECORD:
        raise _Bad("bad_record_token", f"record token {data[pos]:#04x} is not 'G' at RBA {pos}")
    length = header.length
    if length < MIN_RECORD_LENGTH:
        raise _Bad("bad_record_length", f"record length {length} < 8 at RBA {pos}")
    if pos + length > len(data):
        raise _Bad(
            "truncated_record", f"truncated record at RBA {pos}: length {length} overruns the file"
        )
    trailer = TokenHeader._make(token_header.unpack_from(data, pos + length - 4))
    if trailer.token_id != TokenId.TRAILER or trailer.length != length:
        raise _Bad(
            "bad_trailer", f"trailer of the record at RBA {pos} does not match its length {length}"
        )
    return pos + length


def _resync(state: _Trail, pos: int) -> int:
    """Return the offset of the next plausible ``G`` record (or the end of the file)."""
    data = state.data
    while True:
        pos = data.find(b"G", pos)
        if pos == -1:
            return len(data)
        try:
            _frame(state, pos)
            return pos
        except _Bad:
            pos += 1


def _record(
    state: _Trail, start: int, end: int, opts, images: bool = True
) -> tuple[dict[str, Any], GGTable | None]:
    """Decode one framed ``G`` record; raises :class:`_Bad` for a record to reject.

    With ``images`` false (a record already ingested, walked again for its TDR and tokens)
    the column data is not decoded.
    """
    data = state.data
    parts = _record_parts(state, start, end)
    ghdr = data[slice(*parts[TokenId.HEADER])]
    row = _header_row(state.order, ghdr, opts)
    io_type, rec_length = row["io_type"], row["rec_length"]
    ds, de = parts.get(TokenId.DATA, (0, 0))
    if TokenId.DATA in parts and de - ds != rec_length:
        raise _Bad("rec_length_mismatch", f"RecLength {rec_length} but 'D' holds {de - ds} bytes")
    segment = bool(row["continued"]) or state.segmenting
    if segment:  # one segment of a longer record: its 'D' bytes wait for the others
        row["_segment_data"] = bytes(data[ds:de])
    _carry(state, row, _ggs_tokens(state, parts.get(TokenId.TOKENS)))
    if io_type == IOType.METADATA:
        table = metadata_record(state, ghdr, ds, de, row["orig_node"])
        row.update(
            table_name=table.name if table else None,
            tdr_index=None,
            column_names=None,
            data=None,
            before_data=None,
        )
        _set_table(row, table.name if table else None)
        return row, table
    table_name, tdr_index = _table_reference(ghdr, state.order)
    table = state.tables.get(table_name) if table_name else state.tdrs.get(tdr_index)
    if table is not None:
        state.used.add(table.name)
    row["tdr_index"] = tdr_index
    if table is None and io_type in IO_TYPES and io_type != IOType.DDL:
        raise _Bad("no_metadata", f"no metadata for table {table_name or f'TDR #{tdr_index}'}")
    _set_table(row, table.name if table else table_name)
    row["column_names"] = [c.name for c in table.columns] if table else None
    row["data"], row["before_data"] = None, None
    if (
        segment
        or not images
        or table is None
        or TokenId.DATA not in parts
        or io_type in NO_ROW_IMAGE
    ):
        return row, None
    _images(state, row, table, ds, de, opts)
    return row, None


def _record_parts(state: _Trail, start: int, end: int) -> dict[int, tuple[int, int]]:
    """Return the first value span of each sub-token id of a ``G`` record.

    The ids are ``H`` header, ``D`` data, ``T`` tokens and so on. Raises :class:`_Bad` for
    sub-tokens that do not add up, or a record without its header.
    """
    try:
        tokens = _tokens(state.data, start + 4, end - 4, state.order)
    except ValueError as exc:
        raise _Bad(
            "bad_subtokens", f"sub-token lengths do not sum to the record length: {exc}"
        ) from exc
    parts: dict[int, tuple[int, int]] = {}
    for tid, _info, vs, ve in tokens:
        parts.setdefault(tid, (vs, ve))
    if TokenId.HEADER not in parts:
        raise _Bad("no_record_header", "record has no 'H' header token")
    return parts


def _header_row(order: str, ghdr: bytes, opts: Mapping[str, Any]) -> dict[str, Any]:
    """Return the raw row's GHDR fields (:class:`GHdr`) of a record header.

    Raises :class:`_Bad` for a header that is short or not written by Extract, a NonStop
    IOType, an unknown IOType under ``unknown_iotype: reject``, or a segment under
    ``segments: reject``.
    """
    ghdr_struct = GHDR[order]
    if len(ghdr) < ghdr_struct.size:
        raise _Bad(
            "short_record_header", f"GHDR of {len(ghdr)} bytes is shorter than {ghdr_struct.size}"
        )
    header = GHdr._make(ghdr_struct.unpack_from(ghdr))
    if header.hdr_ind != b"E":
        raise _Bad("invalid_header_indicator", f"invalid header indicator {ghdr[0]:#04x}")
    io_type, io_time = header.io_type, header.io_time
    row = {
        **header._asdict(),
        "hdr_ind": "E",
        "before_after": header.before_after.decode("latin-1"),
        "format_type": header.format_type.decode("latin-1"),
        "io_time": julian_to_text(io_time, opts["subsecond_overflow"]) if io_time > 0 else None,
        "audit_pos": str(header.audit_pos),
    }
    if io_type in NONSTOP_IO_TYPES:
        raise _Bad(
            "nonstop_io_type",
            f"NonStop IOType {io_type} is not expected from an open-systems trail",
        )
    if opts["unknown_iotype"] == "reject" and io_type not in IO_TYPES:
        raise _Bad("unknown_io_type", f"unknown IOType {io_type}")
    if header.continued and opts["segments"] == "reject":
        raise _Bad("segmented_record", "segmented record (Continued = Y) is not reassembled")
    return row


def _images(
    state: _Trail, row: dict[str, Any], table: GGTable, ds: int, de: int, opts: Mapping[str, Any]
) -> None:
    """Decode the 'D' area ``state.data[ds:de]`` of a change record into ``row``.

    Sets ``data`` and ``before_data`` by IOType: unified 134/135, PK update 115/116, else one
    image. Raises _Bad or ValueError for a payload that does not fit the definition.
    """
    data, io_type = state.data, row["io_type"]
    charset = opts["char_encoding"] or table.char_encoding or "utf-8"
    charset = {"windows-1252": "cp1252"}.get(charset.lower(), charset)
    if io_type in (IOType.UNIFIED_UPDATE, IOType.UNIFIED_PK_UPDATE):
        if de - ds < 4:
            raise _Bad("bad_unified_record", "unified record shorter than its before-image length")
        (before_len,) = state.u32.unpack_from(data, ds)
        if 4 + before_len > de - ds:
            raise _Bad(
                "bad_unified_record",
                f"unified before-image length {before_len} overruns the data area",
            )
        row["before_data"] = _image(state, table, ds + 4, ds + 4 + before_len, charset, opts)
        row["data"] = _image(state, table, ds + 4 + before_len, de, charset, opts)
    elif io_type in (IOType.PK_UPDATE, IOType.PK_UPDATE_ALT):
        if de - ds < 2:
            raise _Bad("bad_pk_update_record", "PK update record shorter than its key length")
        (key_len,) = state.u16.unpack_from(data, ds)
        if 2 + key_len > de - ds:
            raise _Bad(
                "bad_pk_update_record", f"PK update key length {key_len} overruns the data area"
            )
        row["before_data"] = _image(state, table, ds + 2, ds + 2 + key_len, charset, opts)
        row["data"] = _image(state, table, ds + 2 + key_len, de, charset, opts)
    else:
        row["data"] = _image(state, table, ds, de, charset, opts)


def _set_table(row: dict[str, Any], name: str | None) -> None:
    row["table_name"] = name
    if name:
        schema, _, table = name.rpartition(".")
        row["source_schema"], row["source_table"] = schema, table
    else:
        row["source_schema"] = row["source_table"] = None


def _table_reference(ghdr: bytes, order: str) -> tuple[str | None, int | None]:
    """Return ``(name, None)`` for a NUL-terminated name at GHDR offset 34, else ``(None, index)``.

    ``order`` is the trail's resolved byte order (``">"`` or ``"<"``): the TDR index is a
    header field, so it follows ``byte_order`` like every other GHDR integer, not the column
    data's big-endian order (formats/goldengate_trail.md, *Fields* and option ``byte_order``).
    """
    return reference_at(bytes(ghdr[GHDR[">"].size :]), order)


@functools.lru_cache(maxsize=4096)
def reference_at(tail: bytes, order: str) -> tuple[str | None, int | None]:
    """:func:`_table_reference` of the GHDR bytes from offset 34 (once per table: they repeat)."""
    nul = tail.find(b"\x00")
    text = tail[: nul if nul != -1 else len(tail)]
    if len(text) >= 2 and all(0x20 < b < 0x7F for b in text):
        return text.decode("ascii"), None
    if len(tail) >= 2:
        return None, int.from_bytes(tail[:2], "little" if order == "<" else "big")
    return None, None


def _ggs_tokens(state: _Trail, span: tuple[int, int] | None) -> dict[str, str]:
    """Return the GGS tokens: ``R`` row id, ``L`` log CSN, ``6`` transaction id, others as hex."""
    if span is None:
        return {}
    data = state.data
    out: dict[str, str] = {}
    try:
        tokens = _tokens(data, span[0], span[1], state.order)
    except ValueError as exc:
        raise _Bad("bad_tokens", f"GGS token area: {exc}") from exc
    for tid, _info, vs, ve in tokens:
        out[chr(tid)] = token_text(tid, data[vs:ve])
    return out


def token_text(token_id: int, value: bytes) -> str:
    """Return the text of one GGS token's value (formats/goldengate_trail.md, *GGS tokens*).

    ``R`` (ORAROWID): its first 18 characters (a shorter value without its ``00 01`` tail);
    ``R``, ``L`` (LOGCSN) and ``6`` (TRANID) as ASCII, a byte that is not ASCII as U+FFFD;
    every other token as uppercase hex.
    """
    if token_id == TokenId.ROW_ID:
        value = value[:18] if len(value) >= 18 else value.rstrip(b"\x00\x01")
    if token_id in TEXT_TOKENS:
        return value.decode("ascii", "replace")
    return value.hex().upper()


def transaction_without_end(rba: int) -> str:
    """Return the warning of a final file whose last transaction (from ``rba``) has no end."""
    return (
        f"transaction without end: TransInd 0 at RBA {rba} has no last "
        "record (TransInd 2) in this file, which is final"
    )


def _carry(state: _Trail, row: dict[str, Any], tokens: Mapping[str, str]) -> None:
    """Set the record's tokens and the transaction's carried ``6``/``L`` tokens."""
    if row["trans_ind"] in (TransInd.FIRST, TransInd.ONLY):
        state.tran_id = state.log_csn = None
    if "6" in tokens:
        state.tran_id = tokens["6"]
    if "L" in tokens:
        state.log_csn = tokens["L"]
    row.update(
        tokens=tokens,
        token_row_id=tokens.get("R"),
        token_log_csn=tokens.get("L"),
        token_tran_id=tokens.get("6"),
        transaction_id=state.tran_id,
        log_csn=state.log_csn,
    )


def metadata_record(state: _Trail, ghdr: bytes, ds: int, de: int, orig_node: int) -> GGTable | None:
    """Read a DDR (OrigNode 1: nothing to keep) or TDR (OrigNode 2) and register the table."""
    if orig_node != 2:
        return None
    name, _ = _table_reference(ghdr, state.order)
    if not name:
        raise _Bad("bad_metadata_record", "TDR without a table name")
    tdr_index = state.u16.unpack_from(ghdr, GHDR_TDR_INDEX_OFFSET)[0]
    data, order = state.data, state.order
    head_struct, column_struct = TDR_COLUMN_HEAD[order], TDR_COLUMN[order]
    try:
        (outer,) = [t for t in _tokens(data, ds, de, order) if t[0] == TDR_GROUP]
        inner = {t[0]: t for t in _tokens(data, outer[2], outer[3], order)}
        cs, ce = inner[TDR_COLUMNS][2], inner[TDR_COLUMNS][3]
        count = state.u16.unpack_from(data, cs)[0]
        pos, columns = cs + 2, []
        for i in range(count):
            head = TdrColumnHead._make(head_struct.unpack_from(data, pos))
            e = pos + head_struct.size + head.name_length
            col_name = data[pos + head_struct.size : e].decode("ascii")
            if e + column_struct.size > ce or pos + 2 + head.entry_length > ce:
                raise ValueError("column entry overruns the TDR")
            column = TdrColumn._make(column_struct.unpack_from(data, e))
            columns.append(
                GGColumn(
                    name=col_name,
                    index=i,
                    data_type=column.data_type,
                    external_length=column.external_length,
                    scale=column.scale,
                    msdt=column.msdt,
                    lsdt=column.lsdt,
                    sub_type=column.sub_type,
                    is_key=bool(column.flags & TDR_KEY_FLAG),
                )
            )
            pos += 2 + head.entry_length
    except (ValueError, KeyError, struct.error, UnicodeDecodeError) as exc:
        raise _Bad("bad_metadata_record", f"TDR for {name} does not parse: {exc}") from exc
    table = GGTable(name, columns, source="tdr")
    if state.metadata_source == "sourcedefs":
        # the TDR names the table its index stands for; the definition comes from sourcedefs
        # (or the catalog seed), and an index of a table without one reads as no metadata
        defined = state.tables.get(name)
        if defined is None:
            state.tdrs.pop(tdr_index, None)
        else:
            state.tdrs[tdr_index] = defined
        return table
    state.tdrs[tdr_index] = table
    state.tables[name] = table
    return table


def _image(
    state: _Trail, table: GGTable, start: int, end: int, charset: str, opts
) -> dict[str, str | None]:
    """Decode column entries ``[u16 index][u16 length][bytes]`` into canonical text.

    Each entry's head is a :class:`ColumnEntryHead`; its bytes are a null indicator and the
    value (formats/goldengate_trail.md, *Data area*).
    """
    data, head = state.data, COLUMN_ENTRY_HEAD[state.order]
    image: dict[str, str | None] = {}
    pos = start
    while pos < end:
        if pos + head.size > end:
            raise _Bad("bad_column_entry", f"column entry header overruns the data area at {pos}")
        index, length = head.unpack_from(data, pos)
        vs = pos + head.size
        ve = vs + length
        if ve > end:
            raise _Bad("bad_column_entry", f"column {index} entry overruns the data area")
        if index >= len(table.columns):
            raise _Bad(
                "bad_column_index",
                f"column index {index} ≥ {len(table.columns)} columns of {table.name}",
            )
        column = table.columns[index]
        if column.name in image:
            raise _Bad("duplicate_column", f"column {column.name} twice in one image")
        if length < 2:
            raise _Bad(
                "bad_column_entry", f"column {column.name} entry shorter than its null indicator"
            )
        indicator = data[vs : vs + 2]
        if indicator == b"\xff\xff":
            if length != 2:
                raise _Bad(
                    "bad_null_indicator",
                    f"column {column.name}: NULL with {length - 2} payload bytes",
                )
            image[column.name] = None
        elif indicator == b"\x00\x00":
            try:
                image[column.name] = column_value(column, data[vs + 2 : ve], charset, opts)
            except (ValueError, ArithmeticError, struct.error) as exc:
                raise _Bad(
                    "bad_value", f"column {column.name} (type {column.data_type}): {exc}"
                ) from exc
        else:
            raise _Bad(
                "bad_null_indicator", f"column {column.name}: bad null indicator {indicator.hex()}"
            )
        pos = ve
    return image


_INT_FORMATS = {130: ">h", 131: ">H", 132: ">i", 133: ">I", 134: ">q", 135: ">Q"}

#: A column reader: ``(column, payload, charset, opts) -> canonical text``.
_ColumnReader = Callable[[GGColumn, bytes, str, Mapping[str, Any]], str]


def _overflow(opts: Mapping[str, Any]) -> str:
    return opts.get("subsecond_overflow", "truncate")


def _varchar_value(column: GGColumn, payload: bytes, charset: str, opts: Mapping[str, Any]) -> str:
    """Read 64/65 VARCHAR and 191 DATETIME as text: a u16 length, then the body.

    A VARCHAR's sub-type says what the body is (2/3/27/37 number text, 4 binary, 1 UTF-16BE).
    """
    if len(payload) < 2:
        raise ValueError("VARCHAR payload without its length")
    length = int.from_bytes(payload[:2], "big")
    if length > len(payload) - 2:
        raise ValueError(f"VARCHAR length {length} > {len(payload) - 2} bytes")
    body = payload[2 : 2 + length]
    if column.data_type == 191:
        return _datetime(column, body.decode("ascii"), _overflow(opts), opts)
    if column.sub_type in (2, 3, 27, 37):
        return _number_text(body.decode("ascii"), opts)
    if column.sub_type == 4:
        return body.hex().upper()
    if column.sub_type == 1:
        return body.decode("utf-16-be")
    return body.decode(charset)


def _integer_value(column: GGColumn, payload: bytes, charset: str, opts: Mapping[str, Any]) -> str:
    """Read 130–135 integers, scaled by the column's scale.

    Big-endian, or little-endian when ``opts["column_int_order"]`` is ``"<"``.
    """
    fmt = _INT_FORMATS[column.data_type]
    if opts.get("column_int_order") == "<":
        fmt = "<" + fmt[1:]
    if len(payload) != struct.calcsize(fmt):
        raise ValueError(f"{len(payload)} bytes for a {struct.calcsize(fmt)}-byte integer")
    (value,) = struct.unpack(fmt, payload)
    if column.scale == 0:  # what canonical_decimal makes of it, without a Decimal
        return str(value)
    if column.scale > 0:
        return scaled_digits(str(abs(value)), value < 0, column.scale)
    return canonical_decimal(Decimal(value).scaleb(-column.scale), column.scale)


def _float_value(column: GGColumn, payload: bytes, charset: str, opts: Mapping[str, Any]) -> str:
    """140/142 (4 bytes) and 141/143 (8 bytes) IEEE floats, big-endian."""
    if len(payload) not in (4, 8):
        raise ValueError(f"{len(payload)} bytes for a float")
    (value,) = struct.unpack(">f" if len(payload) == 4 else ">d", payload)
    return repr(float(value))


def _ascii_decimal_value(
    column: GGColumn, payload: bytes, charset: str, opts: Mapping[str, Any]
) -> str:
    """150–154 ASCII decimals, the sign unsigned / leading / trailing (:func:`_sign_text`)."""
    text = _sign_text(column.data_type, payload)
    return canonical_decimal(Decimal(text).scaleb(-column.scale), column.scale)


#: The reader of each GoldenGate data type code (formats/goldengate_trail.md, *Values*).
_COLUMN_READERS: dict[int, _ColumnReader] = {
    0: lambda column, payload, charset, opts: payload.decode(charset),  # fixed CHAR
    1: lambda column, payload, charset, opts: payload.decode(charset),
    64: _varchar_value,
    65: _varchar_value,
    191: _varchar_value,
    **dict.fromkeys(_INT_FORMATS, _integer_value),
    **dict.fromkeys((140, 141, 142, 143), _float_value),
    **dict.fromkeys((150, 151, 152, 153, 154), _ascii_decimal_value),
    189: lambda column, payload, charset, opts: packed_decimal(payload.hex(), column.scale),
    192: lambda column, payload, charset, opts: _datetime(
        column, payload.decode("ascii"), _overflow(opts), opts
    ),
    **dict.fromkeys(  # interval literals
        range(195, 213), lambda column, payload, charset, opts: payload.decode("ascii").strip()
    ),
}


def column_value(column: GGColumn, payload: bytes, charset: str, opts: Mapping[str, Any]) -> str:
    """Render one column payload (after the null indicator) as canonical text.

    Types (formats/goldengate_trail.md, *Values*), one reader each (:data:`_COLUMN_READERS`):
    0/1 fixed CHAR; 64/65 VARCHAR (u16 length; sub-type 2/3 number text, 4 binary, 1
    UTF-16BE); 130–135 integers (big-endian, or little-endian when ``opts["column_int_order"]``
    is ``"<"``: option ``column_int_byte_order: metadata`` of a little-endian trail) scaled by
    ``scale``; 140/142 (4 bytes) and 141/143 (8 bytes) IEEE floats; 150–154 ASCII decimals with
    the sign unsigned / leading / trailing (separate or embedded); 189 packed decimal; 191/192
    DATETIME by MSDT/LSDT; 195–212 interval literals. Raises ValueError for a payload that does
    not fit its type, or a type code no reader knows.
    """
    reader = _COLUMN_READERS.get(column.data_type)
    if reader is None:
        raise ValueError(f"unsupported GoldenGate data type {column.data_type}")
    return reader(column, payload, charset, opts)


def _number_text(text: str, opts: Mapping[str, Any]) -> str:
    """Oracle NUMBER carried as text: keep its digits, drop ``+``, expand an exponent."""
    text = text.strip()
    if opts.get("number_text_rendering") == "as_float":
        return repr(float(text))
    try:
        number = Decimal(text)
    except ArithmeticError as exc:
        raise ValueError(f"{text!r} is not a number") from exc
    if not number.is_finite():
        raise ValueError(f"{text!r} is not a finite number")
    return format(number, "f")


def _sign_text(kind: int, payload: bytes) -> str:
    """Digits of an ASCII decimal (150 unsigned, 151/152 leading sign, 153/154 trailing sign)."""
    raw = bytearray(payload)
    sign = ""
    if kind == 151:
        sign, raw = chr(raw[0]), raw[1:]
    elif kind == 153:
        sign, raw = chr(raw[-1]), raw[:-1]
    elif kind in (152, 154) and raw:
        at = 0 if kind == 152 else -1
        if raw[at] & 0x80:
            sign, raw[at] = "-", raw[at] & 0x7F
    text = raw.decode("ascii").strip()
    if sign not in ("", "+", "-") or not text.isdigit():
        raise ValueError(f"{bytes(payload)!r} is not an ASCII decimal")
    return ("-" if sign == "-" else "") + text


def _datetime(column: GGColumn, text: str, overflow: str, opts: Mapping[str, Any]) -> str:
    """Render GoldenGate ``YYYY-MM-DD:HH:MI:SS[.f]`` by MSDT/LSDT: DATE, TIME or TIMESTAMP.

    With option ``datetime_kind: timestamp_always`` (formats/goldengate_trail.md) a text with a
    date is always a TIMESTAMP (a date alone at midnight); a time alone stays a TIME.
    """
    text = text.strip()
    if opts.get("datetime_kind") == "timestamp_always" and text[4:5] == "-":
        return canonical_timestamp(text if len(text) > 10 else f"{text} 00:00:00", overflow)
    return _datetime_text(column.msdt, column.lsdt, text, overflow)


@functools.lru_cache(maxsize=65536)
def _datetime_text(msdt: int, lsdt: int, text: str, overflow: str) -> str:
    """:func:`_datetime` of a column's MSDT and LSDT, once per distinct text (dates repeat)."""
    text = text.strip()
    if lsdt <= 2 and msdt == 0:
        return canonical_date(text[:10])
    if msdt >= 3:
        return canonical_time(text, overflow)
    return canonical_timestamp(text, overflow)
