"""Decoder for Qlik Replicate Kafka target topic dumps (feed format ``qlik_kafka``).

A dump file holds the message values of one topic partition in offset order, framed as JSON
Lines (``.jsonl``), length-prefixed values (``.lpv``: ``[u32 BE length][value]``, length
``0xFFFFFFFF`` = tombstone) or an Avro object container (``.avro``); a name may end in ``.gz``
too, and then the staging job hands this decoder the decompressed stream
(:attr:`FeedFormat.gzip_stream <python_udfs.feed_format.FeedFormat>`, issue 48): every byte
offset here (``start``, records, rejects, ``consumed_end``) counts in the decompressed bytes,
as for Qlik's ``.csv.gz`` change tables. A value is a JSON or Avro
Replicate envelope (``magic`` ``atMSG``), a bare JSON message, a Confluent-framed Avro
``DataRecord`` (``00`` + 4-byte schema id) or a plain Avro ``DataRecord``. Avro is decoded with
fastavro.

Metadata messages (``MD``) become :class:`~python_udfs.records.MetadataColumn` rows and feed
the :class:`KafkaCatalog` that resolves later data messages; data messages (``DT``) become raw
rows with the Replicate header fields (snake_cased), ``data`` / ``before_data`` as
``map<string,string>`` of canonical text, and the data-column names in ordinal order (the
``changeMask``/``columnMask`` bit *k* is data ordinal *k+1*). A column whose ``columnMask`` bit
is clear, or whose key is missing from the object, is absent from the map; a present key with
``null`` is a real NULL.

Follows ``formats/qlik_kafka_messages.md`` (translated from ``seeds/qlik_kafka_messages_de.txt``)
and the real samples in ``samples/qlik_kafka/``.
"""

from __future__ import annotations

import functools
import io
import json
import re
import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, NamedTuple

import fastavro

from python_udfs.canonical import (
    QLIK_INTEGER_TYPES,
    QLIK_STRING_TYPES,
    canonical_qlik_value,
    canonical_timestamp,
    mask_set_bits,
    normalize_mask_hex,
)
from python_udfs.records import DecodeResult, FrameChains, MetadataColumn, Reject

FORMAT = "qlik_kafka"

#: Every option a ``qlik_kafka`` feed accepts (formats/qlik_kafka_messages.md, *Uncertain points
#: and options*): name → (default, the values this version implements; ``None``: any value of the
#: option's kind). ``schema_dir`` is the folder of ``<id>.avsc`` files under the feed's landing
#: folder. The decoder reads ``DEFAULT_OPTIONS`` and ``config.load_project`` checks its choices
#: (``FeedFormat.option_choices``), both derived from this one table, so the check cannot drift
#: from what the decoder reads.
OPTIONS: dict[str, tuple[Any, tuple[Any, ...] | None]] = {
    "mask_bit_order": ("lsb_last_hex", ("lsb_last_hex", "lsb_first_byte")),
    "topic_tables": ({}, None),
    "schema_dir": (None, None),
    "load_position": ("zeros", ("zeros", "explicit")),
    "load_positions": ({}, None),
    "tombstones": ("count_and_skip", ("count_and_skip", "reject")),
    "subsecond_overflow": ("truncate", ("truncate", "reject")),
    "missing_transaction_fields": ("allow", ("allow", "reject")),
    "envelope": ("auto", ("auto", "required", "absent")),
    "confluent_framing": ("auto", ("auto", "off")),
    "ordinal_source": ("metadata", ("metadata", "data_key_order")),
    "metadata_source": ("in_dump", ("in_dump", "catalog_file", "none")),
    "incomplete_tail": ("pending", ("pending", "reject")),
    "delete_image_field": (None, ("before_then_data", "data", "beforeData")),
}
#: The headers that mark a change's place in its transaction (formats/qlik_kafka_messages.md,
#: *Transactions*), absent from 2018-era messages: option ``missing_transaction_fields``.
TRANSACTION_FIELDS = ("transactionEventCounter", "transactionLastEvent")
#: Default of every option (``OPTIONS``).
DEFAULT_OPTIONS: dict[str, Any] = {name: spec[0] for name, spec in OPTIONS.items()}
#: Accepted values of every option (``OPTIONS``); ``None`` takes any value of its kind.


OPERATIONS = ("INSERT", "UPDATE", "DELETE", "REFRESH")
_CHANGE_SEQ_RE = re.compile(r"\d{35}")
_DUMP_NAME_RE = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)-(?P<offset>\d{20})$")
#: The length before each value of a ``.lpv`` dump: u32 big-endian (formats/
#: qlik_kafka_messages.md, *What a file looks like*); ``TOMBSTONE`` marks a null value.
_FRAME_LEN = struct.Struct(">I")
TOMBSTONE = 0xFFFFFFFF


class ConfluentHeader(NamedTuple):
    """The Confluent wire format's header before an Avro value: magic byte 0, registry id.

    formats/qlik_kafka_messages.md, *What a file looks like* (message values) and option
    ``confluent_framing``.
    """

    magic: int  # 0: u8, 0x00
    registry_id: int  # 1: u32 big-endian, the schema registry's id of the writer schema


#: :class:`ConfluentHeader` as bytes: 5 bytes, big-endian.
CONFLUENT_HEADER = struct.Struct(">BI")
CONFLUENT_MAGIC = 0x00
MAGIC = b"atMSG"
#: How an Avro envelope (:data:`ENVELOPE_SCHEMA`) of a data message begins: the fixed
#: ``magic``, then ``type`` as an Avro string (zigzag length 2, ``DT``). The metadata pass
#: skips such values unread.
AVRO_DT_ENVELOPE = MAGIC + b"\x04DT"
#: How an Avro envelope of a metadata message begins (``type`` ``MD``).
AVRO_MD_ENVELOPE = MAGIC + b"\x04MD"

#: Avro schema of the Replicate message envelope (formats/qlik_kafka_messages.md).
ENVELOPE_SCHEMA = fastavro.parse_schema(
    {
        "type": "record",
        "name": "MessageEnvelope",
        "namespace": "com.attunity.queue.msg",
        "fields": [
            {"name": "magic", "type": {"type": "fixed", "name": "Magic", "size": 5}},
            {"name": "type", "type": "string"},
            {"name": "headers", "type": ["null", {"type": "map", "values": "string"}]},
            {"name": "messageSchemaId", "type": ["null", "string"]},
            {"name": "messageSchema", "type": ["null", "string"]},
            {"name": "message", "type": "bytes"},
        ],
    }
)

#: Avro schema we read Avro-encoded ``MD`` messages with. Qlik's pages describe the fields
#: (schemaId, lineage, tableStructure.tableColumns, dataSchema) but not the Avro bytes, so this
#: is our reading of them; a JSON MD message inside an Avro envelope is also accepted.
METADATA_SCHEMA = fastavro.parse_schema(
    {
        "type": "record",
        "name": "MetadataMessage",
        "namespace": "com.attunity.queue.msg.meta",
        "fields": [
            {"name": "schemaId", "type": "string"},
            {
                "name": "lineage",
                "type": {
                    "type": "record",
                    "name": "Lineage",
                    "fields": [
                        {"name": "server", "type": "string"},
                        {"name": "task", "type": "string"},
                        {"name": "schema", "type": "string"},
                        {"name": "table", "type": "string"},
                        {"name": "tableVersion", "type": "int"},
                        {"name": "timestamp", "type": "string"},
                    ],
                },
            },
            {
                "name": "tableStructure",
                "type": {
                    "type": "record",
                    "name": "TableStructure",
                    "fields": [
                        {
                            "name": "tableColumns",
                            "type": {
                                "type": "map",
                                "values": {
                                    "type": "record",
                                    "name": "Column",
                                    "fields": [
                                        {"name": "ordinal", "type": "int"},
                                        {"name": "type", "type": "string"},
                                        {"name": "length", "type": "int"},
                                        {"name": "precision", "type": "int"},
                                        {"name": "scale", "type": "int"},
                                        {"name": "primaryKeyPosition", "type": "int"},
                                        {"name": "nullable", "type": ["null", "boolean"]},
                                    ],
                                },
                            },
                        }
                    ],
                },
            },
            {"name": "dataSchema", "type": "string"},
        ],
    }
)


@dataclass(slots=True)
class TableMeta:
    """Columns of one table version, in ordinal order, and its Avro ``dataSchema`` if known."""

    source_schema: str
    source_table: str
    table_version: int | None
    columns: list[MetadataColumn]
    schema_id: str | None = None
    data_schema: str | None = None
    _plan: Any = None

    def image_plan(self, overflow: str) -> ImagePlan:
        """Return the :class:`ImagePlan` of :attr:`columns` (made once per ``overflow``)."""
        if self._plan is None or self._plan.overflow != overflow:
            self._plan = ImagePlan.of(self.columns, overflow)
        return self._plan


@functools.lru_cache(maxsize=256)
def parsed_schema(text: str) -> Any:
    """Parse an Avro schema's JSON text with fastavro, once per distinct text.

    The writer schemas of Confluent-framed values (``<id>.avsc``) and of envelopes'
    ``messageSchema`` repeat on every message. Raises what ``json.loads`` or
    ``fastavro.parse_schema`` raise for a damaged schema (not cached).
    """
    return fastavro.parse_schema(json.loads(text))


@dataclass(frozen=True, slots=True)
class ImagePlan:
    """How a table's row images render: its column names and one renderer per column.

    A renderer is :func:`canonical_qlik_value` with the column's type and scale bound (text of
    a character column and an ``int`` of an integer column are taken as they are, which is
    what that function returns for them); :func:`_untyped` for a column of no known type.
    """

    overflow: str
    names: frozenset[str]
    renderers: tuple[tuple[int, str, Any], ...]
    key_positions: frozenset[int]

    @classmethod
    def of(cls, columns: list[MetadataColumn], overflow: str) -> ImagePlan:
        """Make the plan of ``columns`` (in ordinal order) for option ``subsecond_overflow``."""
        return cls(
            overflow,
            frozenset(c.column_name for c in columns),
            tuple((i, c.column_name, value_renderer(c, overflow)) for i, c in enumerate(columns)),
            frozenset(i for i, c in enumerate(columns) if c.primary_key_position),
        )


def value_renderer(column: MetadataColumn, overflow: str):
    """Return the function rendering one value of ``column`` (see :class:`ImagePlan`)."""
    if not column.source_type:
        return _untyped
    kind, scale = column.source_type.upper(), column.scale or 0

    def render(value):
        return canonical_qlik_value(value, kind, scale, overflow)

    if kind in QLIK_STRING_TYPES:
        return lambda value: value if type(value) is str else render(value)
    if kind in QLIK_INTEGER_TYPES:
        return lambda value: str(value) if type(value) is int else render(value)
    return render


@dataclass(slots=True)
class KafkaCatalog:
    """Table metadata known to the decoder: by MD ``schemaId`` and by ``(schema, table)``.

    Built from ``MD`` messages (this batch's and earlier batches' ``raw_metadata`` rows) and the
    catalog seed. Later MD versions of a table replace earlier ones in ``by_table``.
    """

    by_schema_id: dict[str, TableMeta] = field(default_factory=dict)
    by_table: dict[tuple[str, str], TableMeta] = field(default_factory=dict)

    def add_columns(self, columns: list[MetadataColumn]) -> None:
        """Add the columns of one or more MD messages / seed tables (grouped by table version).

        Columns declared more than once for one table version and schema id (the same MD
        message delivered again) count once.
        """
        groups: dict[tuple, list[MetadataColumn]] = {}
        for c in columns:
            key = (c.source_schema, c.source_table, c.table_version, c.schema_id)
            groups.setdefault(key, []).append(c)
        for (schema, table, version, schema_id), cols in groups.items():
            # an MD message delivered twice (a replayed dump) declares each column twice
            unique = {(c.ordinal, c.column_name): c for c in cols}
            cols = sorted(unique.values(), key=lambda c: c.ordinal)
            meta = TableMeta(schema, table, version, cols, schema_id, cols[0].data_schema)
            if schema_id:
                self.by_schema_id[schema_id] = meta
            current = self.by_table.get((schema, table))
            if current is None or _rank(meta) >= _rank(current):
                self.by_table[(schema, table)] = meta


def _rank(meta: TableMeta) -> tuple[int, int]:
    """Order table metadata: higher ``tableVersion`` wins, then MD messages over the seed."""
    return (meta.table_version or 0, 1 if meta.schema_id else 0)


def topic_of(file_name: str) -> str:
    """Return the topic of a dump file named ``<topic>-<partition>-<20-digit offset>.<ext>``.

    Other names give their stem (``item_master_update_16_columns.jsonl`` →
    ``item_master_update_16_columns``).
    """
    stem = file_name.replace("\\", "/").rsplit("/", 1)[-1]
    stem = re.sub(r"\.(jsonl|json|lpv|avro)(\.gz)?$", "", stem, flags=re.IGNORECASE)
    match = _DUMP_NAME_RE.match(stem)
    return match.group("topic") if match else stem


def stream_of(file_name: str) -> tuple[str, int, int] | None:
    """Return ``(topic, partition, first offset)`` of a dump file.

    The name is ``<topic>-<partition>-<20-digit offset>.<ext>``; other names give None.
    """
    stem = file_name.replace("\\", "/").rsplit("/", 1)[-1]
    stem = re.sub(r"\.(jsonl|json|lpv|avro)(\.gz)?$", "", stem, flags=re.IGNORECASE)
    match = _DUMP_NAME_RE.match(stem)
    if not match:
        return None
    return match.group("topic"), int(match.group("partition")), int(match.group("offset"))


def _frames(
    data: bytes, file_name: str, start: int, start_index: int, final: bool
) -> Iterator[tuple[int, int, int, bytes | None, str | None]]:
    """Yield ``(offset, end, record_index, value, error)`` for each framed value.

    ``value`` is None for a tombstone or a framing error (then ``error`` is set). Stops before
    an incomplete last record unless ``final``; then that record is an error.
    """
    lower = file_name.lower().removesuffix(".gz")
    if lower.endswith(".jsonl") or lower.endswith(".json"):
        yield from line_frames(data, start, start_index, final)
    elif lower.endswith(".lpv"):
        yield from length_prefixed_frames(data, start, start_index, final)
    elif lower.endswith(".avro"):
        yield from _container_frames(data, start_index)
    else:
        yield 0, len(data), 0, None, f"unknown dump framing for {file_name} (.jsonl, .lpv, .avro)"


def line_frames(
    data: bytes, start: int, index: int, final: bool
) -> Iterator[tuple[int, int, int, bytes | None, str | None]]:
    """Frame a ``.jsonl`` dump: one value per line (an empty line is an error)."""
    pos = start
    while pos < len(data):
        nl = data.find(b"\n", pos)
        if nl == -1 and not final:
            return
        nl_end = len(data) if nl == -1 else nl + 1
        index += 1
        line = data[pos : nl if nl != -1 else len(data)].rstrip(b"\r")
        yield pos, nl_end, index, line, None if line.strip() else "empty value"
        pos = nl_end


def length_prefixed_frames(
    data: bytes, start: int, index: int, final: bool
) -> Iterator[tuple[int, int, int, bytes | None, str | None]]:
    """Frame a ``.lpv`` dump: ``[u32 big-endian length][value]``.

    A tombstone is the length ``FFFFFFFF`` with no value.
    """
    pos = start
    for pos, end, length in lpv_bounds(data, start):
        index += 1
        value = None if length == TOMBSTONE else data[pos + 4 : end]
        yield pos, end, index, value, None
        pos = end
    if pos < len(data) and final:  # a last frame that stops short
        index += 1
        if pos + 4 > len(data):
            yield pos, len(data), index, None, "truncated frame (end of file inside length)"
        else:
            (length,) = _FRAME_LEN.unpack_from(data, pos)
            message = f"truncated frame: length {length} overruns the file"
            yield pos, len(data), index, None, message


def lpv_bounds(data: bytes, start: int) -> Iterator[tuple[int, int, int]]:
    """Yield ``(offset, end, length)`` of each whole frame of a ``.lpv`` dump from ``start``.

    Byte offsets; ``length`` is the frame's u32 big-endian length field, :data:`TOMBSTONE`
    for a tombstone (``end`` is then ``offset + 4``). Stops before a frame that does not end
    within ``data``. Copies no value: the framing of the reference (:func:`_frames`), of the
    metadata pass and of the fast path (``columnar._lpv_frames``) (formats/qlik_kafka_messages.md,
    *What a file looks like*).
    """
    pos, size, unpack = start, len(data), _FRAME_LEN.unpack_from
    while pos + 4 <= size:
        (length,) = unpack(data, pos)
        end = pos + 4 if length == TOMBSTONE else pos + 4 + length
        if end > size:
            return
        yield pos, end, length
        pos = end


#: The Avro object container header (Avro specification, "Object Container Files").
_CONTAINER_HEADER = fastavro.parse_schema(
    {
        "type": "record",
        "name": "org.apache.avro.file.Header",
        "fields": [
            {"name": "magic", "type": {"type": "fixed", "name": "Magic", "size": 4}},
            {"name": "meta", "type": {"type": "map", "values": "bytes"}},
            {"name": "sync", "type": {"type": "fixed", "name": "Sync", "size": 16}},
        ],
    }
)


def _container_frames(data: bytes, start_index: int):
    """Yield datums of an Avro object container file as ``(offset, end, index, datum, error)``.

    The datum is already decoded (a dict), wrapped in a one-element tuple to tell it apart
    from raw bytes; ``offset``/``end`` are its block's byte range (through the block's sync
    marker). A block that does not decode (bad counts, a sync marker mismatch, a corrupt
    compressed body) is one error ranging to the next sync marker, where reading resumes
    (formats/qlik_kafka_messages.md, bad input). A header that does not parse rejects the
    file. Each block is decoded by fastavro (codecs included) behind the file's own header.
    """
    index = start_index
    stream = io.BytesIO(data)
    try:
        header = fastavro.schemaless_reader(stream, _CONTAINER_HEADER, None)
        if header["magic"] != b"Obj\x01":
            raise ValueError(f"bad magic {header['magic']!r}")
    except Exception as exc:  # noqa: BLE001 - any header corruption is bad input
        yield 0, len(data), index + 1, None, f"corrupt Avro container header: {exc}"
        return
    header_bytes, sync = data[: stream.tell()], header["sync"]
    pos = stream.tell()
    while pos < len(data):
        try:
            stream.seek(pos)
            fastavro.schemaless_reader(stream, "long", None)  # object count
            size = fastavro.schemaless_reader(stream, "long", None)
            end = stream.tell() + size + 16
            if size < 0 or end > len(data) or data[end - 16 : end] != sync:
                raise ValueError("block size or sync marker mismatch")
            datums = [
                d
                for block in fastavro.block_reader(io.BytesIO(header_bytes + data[pos:end]))
                for d in block
            ]
        except Exception as exc:  # noqa: BLE001 - any block corruption is bad input
            found = data.find(sync, pos + 1)
            resume = found + 16 if found != -1 else len(data)
            index += 1
            yield pos, resume, index, None, f"corrupt Avro block: {exc}"
            pos = resume
            continue
        for datum in datums:
            index += 1
            yield pos, end, index, (datum,), None
        pos = end


class _Restartable:
    """An iterator whose source can be replaced while a ``for`` loop runs over it."""

    def __init__(self, source: Iterator) -> None:
        self.source = source

    def __iter__(self) -> _Restartable:
        return self

    def __next__(self):
        return next(self.source)


class _Resync:
    """Resynchronise a final ``.lpv`` dump at a broken frame (:class:`FrameChains`).

    A frame length that overruns the file ends a run of rejected frames since the last value
    that decoded: one of them had its length damaged, and the frames after it were read from
    the middle of a value. When frames chain, length by length, from a later byte exactly to
    the end of the file, the run becomes one ``bad_framing`` reject up to that byte and reading
    resumes there; when none does, the rejects stay as they are (a truncated last frame).
    """

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.chains: FrameChains | None = None

    def after(self, result, frames: _Restartable, run: tuple[int, int], index, file_name) -> None:
        """Resynchronise after a framing error.

        ``run`` is ``(offset, number of rejects in result before it)`` of the first rejected
        frame since the last decoded value.
        """
        if self.chains is None:
            self.chains = FrameChains(self.data, tombstone=TOMBSTONE)
        offset, kept = run
        resume = self.chains.next_start(offset)
        if resume >= len(self.data):
            return
        rejected = result.rejects[kept:]
        del result.rejects[kept:]
        result.rejects.append(
            Reject.of(
                self.data,
                offset,
                resume,
                rejected[0].record_index,
                "bad_framing",
                f"{len(rejected)} frame(s) after a damaged frame length ({rejected[-1].message}); "
                f"the frames from byte {resume} on chain to the end of the file and are read "
                "from there",
            )
        )
        result.consumed_end = resume
        frames.source = _frames(self.data, file_name, resume, index, True)


def _json_loads(raw: bytes) -> Any:
    """Parse JSON exactly: integers as ``int``, other numbers as ``Decimal`` (never float).

    Raises ValueError for text that is not JSON, including JSON nested deeper than Python's
    recursion limit (a hostile value must become a reject, not a failed run).
    """
    try:
        return json.loads(raw, parse_float=Decimal)
    except RecursionError as exc:
        raise ValueError("JSON nested too deeply") from exc


def scan_metadata(data: bytes, *, file_name: str, start: int = 0) -> list[MetadataColumn]:
    """Return the columns of every ``MD`` message in a dump (first pass of a batch).

    Only values that can be metadata are parsed fully; bad values are ignored here (the main
    pass rejects them). Used by the staging job to build the batch's :class:`KafkaCatalog`
    before any data message is resolved.
    """
    out: list[MetadataColumn] = []
    for offset, _end, index, value, error in _metadata_frames(data, file_name, start):
        if error or value is None or isinstance(value, tuple):
            continue
        if value.startswith(AVRO_DT_ENVELOPE) or (
            value.lstrip()[:1] == b"{" and b'"MD"' not in value
        ):
            continue
        try:
            kind, envelope, message = _open_envelope(value, _is_json_dump(file_name))
        except (ValueError, EOFError, StopIteration):
            continue
        if kind == "MD":
            try:
                out.extend(_metadata_columns(message, offset, index))
            except ValueError:
                continue
    return out


def _metadata_frames(data: bytes, file_name: str, start: int):
    """Yield the frames of a dump that may hold an MD message, as :func:`_frames` does.

    A JSON Lines dump yields only its lines with ``"MD"`` in them (found with ``bytes.find``,
    the line index counted); a ``.lpv`` dump only its values that do not start as an Avro DT
    envelope or a Confluent-framed record (neither can be metadata), and none when the dump
    holds neither an Avro MD envelope's first bytes nor ``"MD"``; other framings every frame.
    A value left out is one :func:`scan_metadata` would skip.
    """
    lower = file_name.lower().removesuffix(".gz")
    if not lower.endswith((".jsonl", ".json", ".lpv")):
        yield from _frames(data, file_name, start, 0, final=False)
        return
    if lower.endswith(".lpv"):
        if data.find(AVRO_MD_ENVELOPE, start) == -1 and data.find(b'"MD"', start) == -1:
            return  # no value can be metadata: an Avro MD envelope, or JSON text with "MD"
        for index, (pos, end, length) in enumerate(lpv_bounds(data, start), 1):
            skipped = data.startswith(AVRO_DT_ENVELOPE, pos + 4, end) or data.startswith(
                b"\x00", pos + 4, end
            )
            if length != TOMBSTONE and not skipped:
                yield pos, end, index, data[pos + 4 : end], None
        return
    last = data.rfind(b"\n", start) + 1  # a last line without LF is not read yet
    at, counted, index = data.find(b'"MD"', start, last), start, 0
    while at != -1:
        begin = data.rfind(b"\n", start, at) + 1 or start
        end = data.index(b"\n", at)
        index += data.count(b"\n", counted, begin) + 1
        counted = end + 1
        yield begin, end + 1, index, data[begin:end].rstrip(b"\r"), None
        at = data.find(b'"MD"', end, last)


def _open_envelope(
    value: bytes, is_json: bool = False, envelope_mode: str = "auto"
) -> tuple[str, dict[str, Any] | None, Any]:
    """Return ``(type, envelope, message)`` of a value; ``message`` is a dict or Avro bytes.

    ``is_json`` says the framing holds JSON only (``.jsonl``). ``envelope_mode`` is option
    ``envelope``: ``auto`` detects the Replicate envelope per value, ``required`` refuses a
    value without one, ``absent`` refuses one with one (and reads binary values as bare
    records). Raises ValueError with a short reason when the value is not a readable message.
    """
    kind, envelope, message = open_any(value, is_json, envelope_mode)
    if envelope_mode == "required" and envelope is None:
        raise ValueError("no Replicate envelope (option envelope: required)")
    return kind, envelope, message


def open_any(value: bytes, is_json: bool, envelope_mode: str) -> tuple[str, dict | None, Any]:
    """:func:`_open_envelope` before its ``required`` check."""
    stripped = value.lstrip()
    if is_json or stripped[:1] == b"{":
        return _open_json(stripped, envelope_mode)
    if value.startswith(MAGIC) and envelope_mode != "absent":
        return _open_avro_envelope(value)
    return "DT", None, value  # a bare data value (Avro, Confluent-framed or not)


def _open_json(text: bytes, envelope_mode: str) -> tuple[str, dict | None, Any]:
    """Open a JSON value: a Replicate envelope (``magic`` atMSG) or a bare MD / DT message."""
    try:
        obj = _json_loads(text)
    except ValueError as exc:
        raise ValueError(f"invalid JSON: {exc}") from exc
    if not isinstance(obj, dict):
        raise ValueError("JSON value is not an object")
    if "magic" in obj:
        if envelope_mode == "absent":
            raise ValueError("a Replicate envelope (option envelope: absent)")
        if obj["magic"] != "atMSG":
            raise ValueError(f"magic {obj['magic']!r} is not atMSG")
        if obj.get("type") not in ("MD", "DT"):
            raise ValueError(f"message type {obj.get('type')!r} is not MD or DT")
        message = obj.get("message")
        if isinstance(message, str):
            message = _json_loads(message)
        return obj["type"], obj, message
    if "tableStructure" in obj and "dataSchema" in obj:
        return "MD", None, obj
    if "headers" in obj and "data" in obj:
        return "DT", None, obj
    raise ValueError("JSON object is neither a Replicate envelope nor a message")


def _open_avro_envelope(value: bytes) -> tuple[str, dict, Any]:
    """Open an Avro Replicate envelope (:data:`ENVELOPE_SCHEMA`).

    An MD message inside it is JSON or Avro (:data:`METADATA_SCHEMA`).
    """
    stream = io.BytesIO(value)
    try:
        envelope = fastavro.schemaless_reader(stream, ENVELOPE_SCHEMA, None)
    except Exception as exc:  # noqa: BLE001 - fastavro raises many types on bad bytes
        raise ValueError(f"Avro decode error at byte {stream.tell()}: {exc!r}") from exc
    if stream.tell() != len(value):
        raise ValueError(f"Avro decode error at byte {stream.tell()}: bytes left after envelope")
    if envelope["type"] not in ("MD", "DT"):
        raise ValueError(f"message type {envelope['type']!r} is not MD or DT")
    message = envelope["message"]
    if envelope["type"] == "MD":
        if message.lstrip()[:1] == b"{":
            message = _json_loads(message)
        else:
            inner = io.BytesIO(message)
            try:
                message = fastavro.schemaless_reader(inner, METADATA_SCHEMA, None)
            except Exception as exc:  # noqa: BLE001 - as above
                raise ValueError(f"Avro metadata decode error: {exc!r}") from exc
    return envelope["type"], envelope, message


def _metadata_columns(message: Mapping[str, Any], offset: int, index: int) -> list[MetadataColumn]:
    """Turn one MD message into catalog columns (one per ``tableStructure.tableColumns`` entry).

    Raises ValueError naming what is missing or malformed (a damaged message): the lineage,
    the column structure, or a ``dataSchema`` that is not a readable Avro schema.
    """
    try:
        return _md_columns(message, offset, index)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise ValueError(f"{type(exc).__name__}: {exc}") from exc


def _md_columns(message: Mapping[str, Any], offset: int, index: int) -> list[MetadataColumn]:
    lineage = message["lineage"]
    columns = message["tableStructure"]["tableColumns"]
    if message.get("dataSchema"):
        try:
            fastavro.parse_schema(json.loads(message["dataSchema"]))
        except Exception as exc:  # noqa: BLE001 - fastavro raises many types on bad schemas
            raise ValueError(f"dataSchema is not a readable Avro schema: {exc}") from exc
    return [
        MetadataColumn(
            source_schema=lineage["schema"],
            source_table=lineage["table"],
            table_version=int(lineage.get("tableVersion") or 0),
            column_name=name,
            ordinal=int(col["ordinal"]),
            source_type=str(col.get("type") or "STRING"),
            length=col.get("length"),
            precision=col.get("precision"),
            scale=col.get("scale"),
            primary_key_position=int(col.get("primaryKeyPosition") or 0),
            nullable=col.get("nullable"),
            metadata_source="kafka_md",
            schema_id=message.get("schemaId"),
            data_schema=message.get("dataSchema"),
            record_offset=offset,
            record_index=index,
        )
        for name, col in columns.items()
    ]


class BadMessage(Exception):
    """A data message that becomes a reject: ``reason`` code and message."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def decode_dump_file(
    data: bytes,
    *,
    file_name: str,
    catalog: KafkaCatalog | None = None,
    registry_schemas: Mapping[int, str] | None = None,
    options: Mapping[str, Any] | None = None,
    start: int = 0,
    start_index: int = 0,
    final: bool = False,
) -> DecodeResult:
    """Decode the values of one topic dump (from byte ``start``) into raw rows and rejects.

    ``data`` is the dump's bytes, ``bytes`` or ``bytearray``; for a ``.gz`` dump, the
    decompressed stream, in which every offset counts (the staging job decompresses it).

    ``catalog`` holds the table metadata known before this file (MD messages of the batch and
    of earlier batches, plus the catalog seed); MD messages met in the file are added to it.
    ``registry_schemas`` maps Confluent schema ids to Avro schema text (``<id>.avsc`` files).
    ``start_index`` is the number of records already consumed (for the tail of a growing
    file). With ``final`` false an incomplete last record is left for the next run and
    ``consumed_end`` stops before it.

    Row keys: ``record_offset`` (bytes), ``record_index`` (1-based line/frame/datum),
    ``value_format``, ``message_type``, ``message_schema_id``, ``source_schema``,
    ``source_table``, ``table_version``, ``operation``, ``change_sequence``, ``timestamp``
    (canonical UTC text), ``stream_position``, ``transaction_id``, ``change_mask``,
    ``column_mask`` (normalized hex), ``external_schema_id``, ``transaction_event_counter``,
    ``transaction_last_event``, ``data``, ``before_data`` (maps or None), ``column_names``
    (data columns in ordinal order). Never raises for bad input.
    """
    opts = {**DEFAULT_OPTIONS, **(options or {})}
    catalog = catalog or KafkaCatalog()
    final = final or opts["incomplete_tail"] == "reject"
    result = DecodeResult(consumed_end=start)
    topic = topic_of(file_name)
    is_json = _is_json_dump(file_name)
    seen: dict[str, dict[str, Any]] = {}
    tombstones = 0
    resync = _Resync(data) if final and file_name.lower().endswith(".lpv") else None
    frames = _Restartable(_frames(data, file_name, start, start_index, final))
    run: tuple[int, int] | None = None  # the first rejected frame since the last decoded value
    for offset, end, index, value, error in frames:
        result.consumed_end = end
        if error is not None:
            reason = (
                "truncated_frame"
                if "truncated" in error
                else ("empty_value" if error == "empty value" else "bad_framing")
            )
            run = run or (offset, len(result.rejects))
            result.rejects.append(Reject.of(data, offset, end, index, reason, error))
            if resync is not None and reason == "truncated_frame":
                resync.after(result, frames, run, index, file_name)
            continue
        if value is None:
            tombstones += 1
            if opts["tombstones"] == "reject":
                result.rejects.append(
                    Reject.of(data, offset, end, index, "tombstone", "null value")
                )
            continue
        try:
            row = decode_value(
                value, topic, catalog, registry_schemas or {}, opts, result, offset, index, is_json
            )
        except BadMessage as bad:
            run = run or (offset, len(result.rejects))
            result.rejects.append(Reject.of(data, offset, end, index, bad.reason, str(bad)))
            continue
        run = None
        if row is None:
            continue
        seq = row["change_sequence"]
        if seq:
            fingerprint = {k: row[k] for k in ("operation", "data", "before_data", "source_table")}
            if seq in seen and seen[seq] != fingerprint:
                result.rejects.append(
                    Reject.of(
                        data,
                        offset,
                        end,
                        index,
                        "duplicate_position",
                        f"changeSequence {seq} seen twice with different content",
                    )
                )
                continue
            seen.setdefault(seq, fingerprint)
        row.update(record_offset=offset, record_index=index)
        result.rows.append(row)
    result.warnings.extend(sorted(opts.pop("_notes", ())))
    if tombstones:
        result.warnings.append(f"{tombstones} tombstone value(s) skipped")
    return result


def _is_json_dump(file_name: str) -> bool:
    return file_name.lower().removesuffix(".gz").endswith((".jsonl", ".json"))


def decode_value(value, topic, catalog, registry, opts, result, offset, index, is_json):
    """Decode one message value; returns a raw row, None for MD, or raises :class:`BadMessage`."""
    if isinstance(value, tuple):  # datum of an Avro container: a plain DataRecord
        meta = table_for_topic(topic, catalog, opts)
        return data_row(value[0], meta, "avro_container", None, opts)
    try:
        kind, envelope, message = _open_envelope(value, is_json, opts["envelope"])
    except (ValueError, EOFError, StopIteration, KeyError) as exc:
        text = str(exc)
        reason = "invalid_json" if "JSON" in text else "bad_envelope"
        raise BadMessage(reason, text or "unreadable value") from exc
    if kind == "MD":
        try:
            columns = _metadata_columns(message, offset, index)
        except ValueError as exc:
            raise BadMessage("bad_metadata_message", f"metadata message lacks {exc}") from exc
        if opts["metadata_source"] == "in_dump":  # else the catalog seed, or none, types values
            catalog.add_columns(columns)
        result.metadata.extend(columns)
        return None
    schema_id = (envelope or {}).get("messageSchemaId")
    if isinstance(message, dict):  # JSON data message
        meta = resolve_table(message, schema_id, topic, catalog, opts)
        return data_row(message, meta, "json", schema_id, opts)
    fmt, meta, schema_text, payload = _avro_payload(
        value, envelope, message, schema_id, topic, catalog, registry, opts
    )
    if not schema_text:
        raise _no_metadata(schema_id, topic)
    record = _avro_record(payload, schema_text)
    if meta is None:
        meta = resolve_table(record, schema_id, topic, catalog, opts)
    return data_row(record, meta, fmt, schema_id, opts)


def _avro_payload(value, envelope, message, schema_id, topic, catalog, registry, opts):
    """Return ``(value format, table metadata, Avro schema text, payload)`` of an Avro value.

    The value is in a Replicate envelope, in Confluent wire format (magic 0, 4-byte registry
    id), or a plain DataRecord. Raises :class:`BadMessage` for a registry id with no schema.
    """
    if envelope is not None:
        if envelope.get("messageSchema"):
            meta = resolve_table({}, schema_id, topic, catalog, opts, required=False)
            return "avro_envelope", meta, envelope["messageSchema"], message
        meta = resolve_table({}, schema_id, topic, catalog, opts)
        return "avro_envelope", meta, meta.data_schema if meta else None, message
    if (
        len(value) >= CONFLUENT_HEADER.size
        and value[0] == CONFLUENT_MAGIC
        and opts["confluent_framing"] == "auto"
    ):
        header = ConfluentHeader._make(CONFLUENT_HEADER.unpack_from(value))
        schema_text = registry.get(header.registry_id)
        if schema_text is None:
            raise BadMessage("unknown_schema_id", f"no schema for id {header.registry_id}")
        payload = value[CONFLUENT_HEADER.size :]
        return "confluent", table_for_topic(topic, catalog, opts), schema_text, payload
    meta = table_for_topic(topic, catalog, opts)
    return "avro", meta, meta.data_schema if meta else None, value


def _avro_record(payload: bytes, schema_text: str) -> dict[str, Any]:
    """Read one Avro datum with ``schema_text``.

    The schema is parsed once per distinct text (:func:`parsed_schema`). Raises
    :class:`BadMessage` for a schema that does not parse, a datum that does not decode, or bytes
    left after it.
    """
    try:
        parsed = parsed_schema(schema_text)
    except Exception as exc:  # noqa: BLE001 - a damaged messageSchema or seed schema
        raise BadMessage("bad_schema", f"Avro schema does not parse: {exc}") from exc
    stream = io.BytesIO(payload)
    try:
        record = fastavro.schemaless_reader(stream, parsed, None)
    except Exception as exc:  # noqa: BLE001 - any Avro failure is bad input
        raise BadMessage(
            "avro_decode_error", f"Avro decode error at byte {stream.tell()}: {exc}"
        ) from exc
    if stream.tell() != len(payload):
        raise BadMessage(
            "avro_decode_error",
            f"Avro decode error at byte {stream.tell()}: {len(payload) - stream.tell()} bytes left",
        )
    return record


def resolve_table(message, schema_id, topic, catalog, opts, required=True) -> TableMeta | None:
    """Find the table of a data message: its own schema/table, its schema id, or the topic."""
    schema, table = message.get("schema"), message.get("table")
    if schema is not None and table is not None:
        meta = catalog.by_table.get((schema, table))
        if meta is not None:
            return meta
        return TableMeta(schema, table, None, [])
    if schema_id and schema_id in catalog.by_schema_id:
        return catalog.by_schema_id[schema_id]
    meta = table_for_topic(topic, catalog, opts)
    if meta is None and required:
        raise _no_metadata(schema_id, topic)
    return meta


def _no_metadata(schema_id, topic) -> BadMessage:
    """Build the reject of a data message whose table nothing names: what to declare, where."""
    return BadMessage(
        "no_metadata",
        f"no metadata for schemaId {schema_id}, and topic {topic!r} is mapped to no table (the "
        "topic is the dump file's name before -<partition>-<offset>, else its stem): declare "
        f"the table in the seeds with table_identifier {topic}, or map it in the feed's "
        f"options.topic_tables ({topic}: SCHEMA.TABLE), then run `cdc restage`",
    )


def table_for_topic(topic, catalog, opts) -> TableMeta | None:
    """Return the table a topic is mapped to by the ``topic_tables`` option, if any."""
    name = (opts.get("topic_tables") or {}).get(topic)
    if not name:
        return None
    schema, _, table = name.rpartition(".")
    return catalog.by_table.get((schema, table)) or TableMeta(schema, table, None, [])


def data_row(message, meta: TableMeta | None, fmt, schema_id, opts) -> dict[str, Any]:
    """Build the raw row of one data message, validating masks and values."""
    headers, operation, seq = checked_headers(message, meta, schema_id, opts)
    data, before = message.get("data"), message.get("beforeData")
    if operation == "UPDATE" and data is None:
        raise BadMessage("no_after_image", "UPDATE with data null")
    columns = message_columns(meta, data or before or {}, opts)
    names = [c.column_name for c in columns]
    change_mask, column_mask, changed, present_bits, present = read_masks(
        headers.get("changeMask"), headers.get("columnMask"), opts["mask_bit_order"], len(columns)
    )
    overflow = opts["subsecond_overflow"]
    plan = meta.image_plan(overflow) if columns is meta.columns else ImagePlan.of(columns, overflow)
    if present_bits is not None:
        check_present(columns, plan.key_positions, changed, present, operation)
    return {
        "value_format": fmt,
        "message_type": "DT",
        "message_schema_id": schema_id,
        "source_schema": meta.source_schema,
        "source_table": meta.source_table,
        "table_version": meta.table_version,
        "operation": operation,
        "change_sequence": seq or None,
        "timestamp": header_time(headers.get("timestamp"), overflow),
        "stream_position": headers.get("streamPosition") or None,
        "transaction_id": headers.get("transactionId") or None,
        "change_mask": change_mask or None,
        "column_mask": column_mask or None,
        "external_schema_id": headers.get("externalSchemaId"),
        "transaction_event_counter": headers.get("transactionEventCounter"),
        "transaction_last_event": headers.get("transactionLastEvent"),
        "data": _image(data, plan, present),
        "before_data": _image(before, plan, present),
        "column_names": names,
    }


def checked_headers(message, meta, schema_id, opts) -> tuple[Mapping[str, Any], str, str]:
    """Return a data message's ``(headers, operation, changeSequence)`` once they check out.

    Raises :class:`BadMessage` for a message that is no object or whose table has no metadata, an
    unknown operation, a change sequence that is not 35 digits (REFRESH has none), or missing
    transaction headers under ``missing_transaction_fields: reject``.
    """
    if not isinstance(message, Mapping):
        raise BadMessage("bad_message", "data message is not an object")
    if meta is None:
        raise BadMessage("no_metadata", f"no metadata for schemaId {schema_id}")
    headers = message.get("headers") or {}
    operation = headers.get("operation")
    if operation not in OPERATIONS:
        raise BadMessage("unknown_operation", f"unknown operation {operation!r}")
    seq = headers.get("changeSequence") or ""
    if operation != "REFRESH" and not _CHANGE_SEQ_RE.fullmatch(seq):
        raise BadMessage("bad_change_sequence", f"changeSequence {seq!r} is not 35 digits")
    if operation != "REFRESH" and opts["missing_transaction_fields"] == "reject":
        missing = [f for f in TRANSACTION_FIELDS if headers.get(f) is None]
        if missing:
            raise BadMessage(
                "missing_transaction_fields",
                f"{operation} without headers {', '.join(missing)} "
                "(option missing_transaction_fields: reject)",
            )
    return headers, operation, seq


def message_columns(meta: TableMeta, image: Mapping[str, Any], opts) -> list[MetadataColumn]:
    """Return the columns a message's masks index.

    The table's metadata columns in ordinal order, in the data keys' order under
    ``ordinal_source: data_key_order``, or, with no metadata, the data keys themselves (noted
    once per table in ``opts["_notes"]``).
    """
    columns = meta.columns
    if columns and opts["ordinal_source"] == "data_key_order":
        # option ordinal_source: masks index the data keys' order, not the MD ordinals
        keys = dict.fromkeys(image)
        by_name = {c.column_name: c for c in columns}
        return [by_name[k] for k in keys if k in by_name] + [
            c for c in columns if c.column_name not in keys
        ]
    if columns:
        return columns
    notes = opts.setdefault("_notes", set())
    notes.add(
        f"no metadata for {meta.source_schema}.{meta.source_table}: column order from data keys, "
        "values as JSON types (add the table to seeds/cdc_columns.csv)"
    )
    return [
        MetadataColumn(
            meta.source_schema,
            meta.source_table,
            None,
            k,
            i + 1,
            "",
            None,
            None,
            None,
            0,
            None,
            "data_key_order",
        )
        for i, k in enumerate(image)
    ]


def check_present(columns, key_positions, changed, present, operation) -> None:
    """Check a columnMask against the changeMask and the key.

    A changed column must be present, and so must every key column of an UPDATE or DELETE.
    ``key_positions`` are the 0-based positions of ``columns``' key columns, ``changed`` the
    changeMask's bits, ``present`` the positions the columnMask leaves present. Raises
    :class:`BadMessage`.
    """
    if not present.issuperset(changed):
        absent_changed = [columns[b].column_name for b in changed if b not in present]
        raise BadMessage(
            "changed_column_absent", f"changeMask flags absent column(s) {absent_changed}"
        )
    if operation in ("UPDATE", "DELETE") and not present.issuperset(key_positions):
        missing_keys = [columns[i].column_name for i in sorted(key_positions - present)]
        raise BadMessage(
            "key_column_not_present", f"columnMask clears key column(s) {missing_keys}"
        )


def header_time(value, overflow) -> str | None:
    """Return ``headers.timestamp`` as canonical UTC text (None for none or empty).

    Raises :class:`BadMessage` (``bad_value``) for text that is no timestamp.
    """
    if value in (None, ""):
        return None
    try:
        return canonical_timestamp(value, overflow)
    except ValueError as exc:
        raise BadMessage("bad_value", f"headers.timestamp: {exc}") from exc


def read_masks(change, column, bit_order: str, width: int):
    """Return a message's masks and the columns they leave present.

    ``(change_mask, column_mask, changed bits, present bits or None, present positions)`` for
    a table of ``width`` columns. The masks are ``headers.changeMask`` and ``headers.columnMask`` (hex text or bytes);
    computed once per distinct value (:func:`_mask_values`). Raises :class:`BadMessage` for a mask
    that is not hex or sets a bit beyond the columns.
    """
    try:
        if isinstance(change, str | bytes | None) and isinstance(column, str | bytes | None):
            return _mask_values(change, column, bit_order, width)
        return _mask_values.__wrapped__(change, column, bit_order, width)
    except ValueError as exc:
        raise BadMessage(*exc.args) from exc


@functools.lru_cache(maxsize=4096)
def _mask_values(change, column, bit_order: str, width: int):
    """:func:`read_masks` (hashable masks are cached); raises ValueError ``(reason, message)``."""
    try:
        change_mask = normalize_mask_hex(change)
        column_mask = normalize_mask_hex(column)
        changed = tuple(mask_set_bits(change_mask, bit_order))
        present_bits = tuple(mask_set_bits(column_mask, bit_order)) if column_mask else None
    except ValueError as exc:
        raise ValueError("bad_mask", str(exc)) from exc
    for bits, label in ((changed, "changeMask"), (present_bits or (), "columnMask")):
        if bits and bits[-1] >= width:
            raise ValueError(
                "mask_longer_than_columns",
                f"{label} longer than column list: bit {bits[-1]} set, {width} columns",
            )
    present = frozenset(range(width) if present_bits is None else present_bits)
    return change_mask, column_mask, changed, present_bits, present


def _image(obj, plan: ImagePlan, present: frozenset[int]) -> dict | None:
    """Render ``data``/``beforeData`` as canonical text; absent columns are left out."""
    if obj is None:
        return None
    if not isinstance(obj, Mapping):
        raise BadMessage("bad_message", "row image is not an object")
    if not plan.names.issuperset(obj):
        unknown = [k for k in obj if k not in plan.names]
        raise BadMessage("unknown_column", f"column(s) {unknown} not in the table metadata")
    image: dict[str, str | None] = {}
    for i, name, render in plan.renderers:
        if i not in present or name not in obj:
            continue
        try:
            image[name] = render(obj[name])
        except ValueError as exc:
            raise BadMessage("bad_value", f"column {name}: {exc}") from exc
    return image


def _untyped(value) -> str | None:
    """Canonical text of a JSON value whose type is unknown (``metadata_source: none``)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Decimal):
        return repr(float(value))
    return str(value)
