"""The fast path of the Kafka dump decoder: a dump's raw rows built by column (issue 47).

:func:`decode_columnar` reads a ``.jsonl`` or ``.lpv`` dump as :func:`decoder.decode_dump_file`
(the reference path) does, with the same raw row columns, metadata and warnings, but builds the
rows as Arrow columns instead of one ``dict`` per message. Three walks read the messages:

- :class:`_ArrowJsonWalk`: a JSON Lines dump of enveloped messages, parsed whole by
  ``pyarrow.json``. Arrow reads a missing key as a null value, so the lines where a data value
  is null are read again with simdjson to tell the two apart;
- :class:`_JsonWalk`: the JSON Lines dumps the first walk declines (bare messages, a table
  without metadata, ...), parsed line by line with orjson;
- :class:`_LpvWalk`: a ``.lpv`` dump of Avro envelopes or Confluent-framed records, whose
  payloads :class:`AvroColumns` reads field by field over all frames with numpy.

Then, as the reference does: metadata (``MD``) messages, which must all come before the first
data message, go through the reference one by one and settle the catalog; the data (``DT``)
messages are grouped by the table they resolve to (:func:`decoder.resolve_table`); per table the
headers are checked over whole columns (:func:`decoder.checked_headers`) and the masks once
per distinct pair (:func:`decoder.read_masks`, :func:`decoder.check_present`); each data column
is rendered by :func:`python_udfs.canonical_arrow.qlik_values` (the text of
:func:`python_udfs.canonical.canonical_qlik_value`); ``data`` / ``before_data`` become maps
without the columns a message leaves absent (a clear ``columnMask`` bit, a missing key).

A dump with anything the fast path does not read in bulk goes to the reference whole
(:func:`decode_columnar` returns None): a line or value the reference rejects, JSON that orjson
or Arrow reads otherwise than ``json`` (``NaN`` outside REAL columns, lone surrogates, UTF-16, a
key written twice), a metadata message after a data message, option ``ordinal_source:
data_key_order`` or ``envelope: absent``, a number with a fraction in a JSON column that is not
REAL4/REAL8 (``json`` reads it as ``Decimal``), a nested value, an Avro logical type, map or
array, a change sequence seen twice, a header of an unexpected type. ``.avro`` containers and
gzip dumps always take the reference. ``tests/test_qlik_kafka_columnar.py`` checks that both
paths give the same rows, metadata and warnings.
"""

from __future__ import annotations

import gc
import json
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import compress, repeat
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj
import simdjson

from python_udfs import canonical_arrow
from python_udfs.byte_fields import Decline, binary, check, none_when_declined
from python_udfs.qlik_kafka import decoder as ref
from python_udfs.qlik_kafka.decoder import KafkaCatalog, TableMeta
from python_udfs.records import DecodeResult

_MISSING = object()
#: The header fields the raw row reads (:func:`decoder.data_row`).
_HEADERS = (
    "operation",
    "changeSequence",
    "timestamp",
    "streamPosition",
    "transactionId",
    "changeMask",
    "columnMask",
    "externalSchemaId",
    "transactionEventCounter",
    "transactionLastEvent",
)
#: The header fields kept as text in the raw table, with ``""`` read as none.
_TEXT_HEADERS = {"stream_position": "streamPosition", "transaction_id": "transactionId"}
_NONE = type(None)
#: Python types of a text header field, and of a data value on the fast path (a nested object
#: or array goes to the reference).
_TEXT = {str, _NONE}
_SCALARS = {str, int, float, bool, bytes, _NONE}


def decode_or_decline(
    data: bytes,
    *,
    file_name: str,
    catalog: KafkaCatalog | None = None,
    registry_schemas: Mapping[int, str] | None = None,
    options: Mapping[str, Any] | None = None,
    start: int = 0,
    start_index: int = 0,
    final: bool = False,
) -> DecodeResult | None:
    """Decode a dump as :func:`decoder.decode_dump_file` does, its rows as ``result.table``.

    Same arguments and result, except that the rows are one ``pyarrow.Table`` (the
    reference's row keys as columns, in message order) and ``result.rows`` is empty. Raises
    :class:`Decline` when the dump holds something only the reference reads (the module's
    docstring lists what); never raises anything else for bad input. The MD messages it meets go to a copy of ``catalog``.
    """
    opts = {**ref.DEFAULT_OPTIONS, **(options or {})}
    if opts["ordinal_source"] != "metadata":
        raise Decline(f"option ordinal_source: {opts['ordinal_source']}")
    if opts["envelope"] == "absent":
        raise Decline("option envelope: absent")
    suffix = next((ext for ext in _WALKS if file_name.lower().endswith(ext)), None)
    dump = (data, file_name, catalog, registry_schemas or {}, start, start_index, final)
    declined = Decline(f"no fast path for a dump named {file_name.rsplit('/', 1)[-1]}")
    for walk_type in _WALKS.get(suffix, ()):
        try:
            return _walk(walk_type, dump, dict(opts))
        except Decline as exc:
            declined = exc  # the next walk may read it; else the last one says why not
    raise declined


decode_columnar = none_when_declined(decode_or_decline)


def _walk(walk_type: type[_Walk], dump: tuple, opts: dict[str, Any]) -> DecodeResult:
    """Run one walk over a dump on its own copy of the catalog; raise Decline when it declines."""
    data, file_name, catalog, registry, start, start_index, final = dump
    own = KafkaCatalog()
    if catalog is not None:
        own.by_schema_id.update(catalog.by_schema_id)
        own.by_table.update(catalog.by_table)
    final = final or opts["incomplete_tail"] == "reject"
    walk = walk_type(data, file_name, own, registry, opts, start, start_index)
    # A dump's messages are some hundred thousand small objects, none in a cycle: the cyclic
    # collector would walk all of them again and again while they are built (a third of the
    # time of a JSON dump), so it waits until they are gone.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return walk.run(final)
    except (ref.BadMessage, orjson.JSONDecodeError) as exc:
        raise Decline(f"{walk_type.__name__}: {exc}") from exc
    finally:
        if collecting:
            gc.enable()


@dataclass(frozen=True, slots=True)
class _Image:
    """One row image (``data`` or ``beforeData``) of a table's messages, by column.

    ``is_null`` marks the messages whose image is null; ``keys`` are the column names any
    image holds; ``values(name)`` returns the column's values of every message (a list of
    Python values or an Arrow array) and where the image holds the key at all.
    """

    is_null: np.ndarray
    keys: set[str]
    values: Callable[[str], tuple[Any, np.ndarray]]


class _Walk:
    """One fast-path read of a dump, into ``result``; raises Decline."""

    #: Whether the dump holds JSON values only (``.jsonl``), as the reference's framing says.
    is_json = True
    #: The column types whose float values render as the reference's (None: every type, Avro).
    #: The reference's ``json`` reads a number with a fraction as ``Decimal``: only REAL4 and
    #: REAL8 (and untyped) columns render it as ``repr(float)``.
    float_kinds: frozenset[str] | None = frozenset({"REAL4", "REAL8", ""})

    def __init__(
        self,
        data: bytes,
        file_name: str,
        catalog: KafkaCatalog,
        registry: Mapping[int, str],
        opts: dict[str, Any],
        start: int,
        start_index: int,
    ) -> None:
        self.data, self.file_name, self.catalog, self.registry = data, file_name, catalog, registry
        self.opts, self.start, self.start_index = opts, start, start_index
        self.topic = ref.topic_of(file_name)
        self.result = DecodeResult(consumed_end=start)

    def _metadata(self, kinds: list[str], value: Callable[[int], bytes], offsets) -> int:
        """Read the metadata messages before the first data message, by the reference.

        ``value(i)`` is record ``i``'s value. Returns the first data message's record;
        declines a metadata message after it.
        """
        first_data = next((i for i, kind in enumerate(kinds) if kind != "MD"), len(kinds))
        check("MD" not in kinds[first_data:])
        for i in range(first_data):
            index = self.start_index + 1 + i
            arguments = (self.topic, self.catalog, self.registry, self.opts, self.result)
            decoded = ref.decode_value(value(i), *arguments, int(offsets[i]), index, self.is_json)
            check(decoded is None)
        return first_data

    def _finish(self, parts: list[pa.Table], offsets: np.ndarray) -> DecodeResult:
        """Put the tables' rows in record order, with their offsets and indexes."""
        if parts:
            table = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
            record = table["_record"].to_numpy()
            if len(parts) > 1:
                order = np.argsort(record, kind="stable")
                table, record = table.take(pa.array(order)), record[order]
            table = table.drop_columns(["_record"])
            table = table.append_column("record_offset", pa.array(offsets[record], pa.int64()))
            index = self.start_index + 1 + record
            self.result.table = table.append_column("record_index", pa.array(index, pa.int64()))
            sequences = table["change_sequence"].drop_null()
            check(pc.count_distinct(sequences).as_py() == len(sequences))  # the reference's
        self.result.warnings.extend(sorted(self.opts.pop("_notes", ())))
        return self.result

    def _rows(
        self,
        meta: TableMeta,
        header: Callable[[str], Any],
        images: dict[str, _Image],
        schema_ids: list[Any],
        records: np.ndarray,
        value_format: str = "json",
    ) -> pa.Table:
        """Return the raw rows of one table's data messages (and their ``_record``).

        ``header(field)`` gives a header field's value of every message (None where absent),
        as a list or an Arrow array; ``records`` are the messages' places in the dump;
        ``value_format`` is the raw column of that name.
        """
        n = len(records)
        columns = _header_columns(header, self.opts)
        operation = columns["operation"].to_numpy(zero_copy_only=False)
        check(not np.any((operation == "UPDATE") & images["data"].is_null))
        table_columns, plan = self._columns(meta, images)
        masks = (header("changeMask"), header("columnMask"))
        present = _present(masks, operation, table_columns, plan, self.opts, columns)
        for name, image in images.items():
            columns[name] = _image_map(image, table_columns, plan, present, self.float_kinds)
        check(all(s is None or type(s) is str for s in schema_ids))
        names = [c.column_name for c in table_columns]
        columns.update(
            value_format=pa.repeat(pa.scalar(value_format), n),
            message_type=pa.repeat(pa.scalar("DT"), n),
            message_schema_id=pa.array(schema_ids, pa.string()),
            source_schema=pa.repeat(pa.scalar(meta.source_schema, pa.string()), n),
            source_table=pa.repeat(pa.scalar(meta.source_table, pa.string()), n),
            table_version=pa.repeat(pa.scalar(meta.table_version, pa.int64()), n),
            column_names=pa.repeat(pa.scalar(names, pa.list_(pa.string())), n),
            _record=pa.array(records, pa.int64()),
        )
        return pa.table(columns)

    def _columns(self, meta: TableMeta, images: dict[str, _Image]) -> tuple[list, Any]:
        """Return the columns the masks index and their image plan.

        The table's metadata columns; for a table without metadata the data keys, which every
        message must list alike (:func:`decoder.message_columns`, which notes the table).
        """
        overflow = self.opts["subsecond_overflow"]
        if meta.columns:
            return meta.columns, meta.image_plan(overflow)
        keys = self._data_keys(images)
        columns = ref.message_columns(meta, dict.fromkeys(keys), self.opts)
        return columns, ref.ImagePlan.of(columns, overflow)

    def _data_keys(self, images: dict[str, _Image]) -> list[str]:
        raise Decline  # the JSON walk reads tables without metadata


class _JsonWalk(_Walk):
    """One fast-path read of a JSON Lines dump."""

    def run(self, final: bool) -> DecodeResult:
        """Read every line; the data messages' rows go to ``result.table``."""
        found = self._lines(final)
        if found is None:
            return self.result
        lines, offsets = found
        objects = [orjson.loads(line) for line in lines]
        first_data = self._metadata([_kind(o) for o in objects], lines.__getitem__, offsets)
        messages = [_data_message(o, self.opts["envelope"]) for o in objects[first_data:]]
        parts = [
            self._table(meta, [messages[i] for i in group], first_data + group)
            for meta, group in self._by_table(messages)
        ]
        return self._finish(parts, offsets)

    def _lines(self, final: bool) -> tuple[list[bytes], np.ndarray] | None:
        """Return the whole lines from ``start``: each line and each line's offset.

        None when there is none (:meth:`_line_bounds`); a CR before LF is not the line's; an
        empty line declines (:class:`_Lines`).
        """
        found = self._line_bounds(final)
        if found is None:
            return None
        offsets, ends = found
        lines = _Lines(self.data, offsets, ends)
        return [lines[i] for i in range(len(lines))], offsets

    def _line_bounds(self, final: bool) -> tuple[np.ndarray, np.ndarray] | None:
        """Return each whole line's offset and end (at LF) from ``start``; ``consumed_end`` is set.

        None when there is none. The last line without LF counts only when ``final``
        (:func:`decoder.line_frames`). The lines are not made here: the walk that reads them
        with Arrow takes few of them, one by one (:class:`_Lines`).
        """
        end = self.data.rfind(b"\n", self.start) + 1 or self.start
        if final:
            end = len(self.data)
        if end <= self.start:
            return None
        self.result.consumed_end = end
        ends = np.array(_newlines(self.data, self.start, end), np.int64)
        if self.data[end - 1 : end] != b"\n":
            ends = np.append(ends, end)
        offsets = np.concatenate(([self.start], ends[:-1] + 1)).astype(np.int64)
        return offsets, ends

    def _by_table(self, messages: list[tuple[dict, Any]]):
        """Yield ``(table metadata, positions in messages)`` of each table the messages name."""
        keys = [(m.get("schema"), m.get("table"), schema_id) for m, schema_id in messages]
        check(_types_within([k for key in keys for k in key], _TEXT))
        distinct = {key: n for n, key in enumerate(dict.fromkeys(keys))}
        group = np.array([distinct[key] for key in keys], dtype=np.int64)
        for key, n in distinct.items():
            schema, table, schema_id = key
            message = {"schema": schema, "table": table} if schema is not None else {}
            meta = ref.resolve_table(message, schema_id, self.topic, self.catalog, self.opts)
            yield meta, np.flatnonzero(group == n)

    def _table(self, meta: TableMeta, messages: list[tuple[dict, Any]], records) -> pa.Table:
        """Return the raw rows of one table's JSON data messages."""
        bodies = [m for m, _ in messages]
        headers = [m.get("headers") or {} for m in bodies]
        check(_types_within(headers, {dict}))
        self.bodies = bodies
        images = {
            "data": _json_image([m.get("data") for m in bodies]),
            "before_data": _json_image([m.get("beforeData") for m in bodies]),
        }
        schema_ids = [schema_id for _, schema_id in messages]
        # every header field of every message in one pass (dict.get by map, in C)
        rows = (tuple(map(h.get, _HEADERS)) for h in headers)
        by_field = dict(zip(_HEADERS, zip(*rows, strict=True), strict=True))
        return self._rows(meta, by_field.__getitem__, images, schema_ids, records)

    def _data_keys(self, images: dict[str, _Image]) -> list[str]:
        keys = [list(m.get("data") or m.get("beforeData") or {}) for m in self.bodies]
        check(all(k == keys[0] for k in keys))
        return keys[0]


def _newlines(data: bytes, start: int, end: int) -> list[int]:
    """Return the offset of every LF in ``data[start:end]``.

    Found with ``bytes.find``, one line at a time: a mask of the whole dump (numpy) costs a
    byte of new memory per byte of the dump.
    """
    found, find = [], data.find
    at = find(b"\n", start, end)
    while at != -1:
        found.append(at)
        at = find(b"\n", at + 1, end)
    return found


class _ArrowJsonWalk(_JsonWalk):
    """A JSON Lines dump of enveloped messages parsed whole by ``pyarrow.json``.

    The first try for a ``.jsonl`` dump: Arrow builds the columns in C++, and only the lines
    where a data value is null are read again (simdjson, :meth:`_has_key`), to tell a null
    value from a missing key, which Arrow reads alike. Declines, for :class:`_JsonWalk` to
    try, what Arrow reads otherwise than ``json`` or not at all: a bare message or one in a
    JSON string, a table without metadata, a key written twice, a number past 64 bits (Arrow
    reads it as a float, so floats render in REAL4 and REAL8 columns only), a nested value,
    timestamps Arrow infers.
    """

    float_kinds = frozenset({"REAL4", "REAL8"})

    def run(self, final: bool) -> DecodeResult:
        """Read every line; the data messages' rows go to ``result.table``."""
        found = self._line_bounds(final)
        if found is None:
            return self.result
        offsets, ends = found
        self.lines = _Lines(self.data, offsets, ends)
        # the metadata messages first: Arrow reads only the data messages after them (an MD
        # message's nested fields would be null columns of every data message)
        first_data = 0
        while first_data < len(self.lines) and _kind(orjson.loads(self.lines[first_data])) == "MD":
            first_data += 1
        kinds = ["MD"] * first_data + ["DT"] * (len(self.lines) - first_data)
        self._metadata(kinds, self.lines.__getitem__, offsets)
        if first_data == len(self.lines):
            return self._finish([], offsets)
        read = _read_json(
            memoryview(self.data)[int(offsets[first_data]) : self.result.consumed_end]
        )
        check(
            read.num_rows == len(self.lines) - first_data
            and {"magic", "type", "message"} <= set(read.column_names)
        )
        envelope = {name: read.column(name).combine_chunks() for name in read.column_names}
        check(
            pc.all(pc.equal(envelope["magic"], "atMSG")).as_py()
            and envelope["magic"].null_count == 0
            and pc.all(pc.equal(envelope["type"], "DT")).as_py()
            and envelope["type"].null_count == 0
        )
        message = envelope["message"]
        check(pa.types.is_struct(message.type) and message.null_count == 0)
        fields = dict(zip([f.name for f in message.type], message.flatten(), strict=True))
        ids = envelope.get("messageSchemaId", pa.nulls(read.num_rows))
        check(_is_text(ids.type))
        schema_ids = ids.to_pylist()
        table_names = [
            fields[n].to_pylist() if n in fields else [None] * len(message)
            for n in ("schema", "table")
        ]
        keys = list(zip(*table_names, schema_ids, strict=True))
        parts = []
        for key in dict.fromkeys(keys):
            group = np.flatnonzero(np.array([k == key for k in keys], dtype=bool))
            schema, table, schema_id = key
            named = {"schema": schema, "table": table} if schema is not None else {}
            meta = ref.resolve_table(named, schema_id, self.topic, self.catalog, self.opts)
            check(bool(meta.columns))
            whole = len(group) == len(keys)  # one table: the fields as they are
            subset = fields if whole else {n: a.take(pa.array(group)) for n, a in fields.items()}
            ids_of = [schema_ids[i] for i in group]
            parts.append(self._arrow_table(meta, subset, ids_of, first_data + group))
        return self._finish(parts, offsets)

    def _arrow_table(self, meta, fields: dict[str, pa.Array], schema_ids, records) -> pa.Table:
        """Return the raw rows of one table's data messages, from their Arrow fields."""
        n = len(records)
        headers = fields.get("headers", pa.nulls(n))
        check(pa.types.is_struct(headers.type) or pa.types.is_null(headers.type))
        by_field = {}
        if pa.types.is_struct(headers.type):
            by_field = dict(zip([f.name for f in headers.type], headers.flatten(), strict=True))
        for child in by_field.values():
            check(not pa.types.is_nested(child.type) and not pa.types.is_temporal(child.type))

        def header(name: str) -> Any:
            if name in ("changeMask", "columnMask"):  # read per distinct pair, as Python values
                return by_field[name].to_pylist() if name in by_field else [None] * n
            return by_field.get(name, pa.nulls(n))

        images = {
            name: self._arrow_image(fields.get(field, pa.nulls(n)), field, records)
            for name, field in (("data", "data"), ("before_data", "beforeData"))
        }
        return self._rows(meta, header, images, schema_ids, records)

    def _arrow_image(self, image: pa.Array, field: str, records: np.ndarray) -> _Image:
        """Return the :class:`_Image` of one image's Arrow struct (null where the image is).

        A null value's key is looked up in the line itself (orjson), where Arrow cannot say
        whether the key was there.
        """
        is_null = image.is_null().to_numpy(zero_copy_only=False)
        if pa.types.is_null(image.type):
            return _Image(is_null, set(), lambda name: (None, np.zeros(len(image), dtype=bool)))
        check(pa.types.is_struct(image.type))
        children = dict(zip([f.name for f in image.type], image.flatten(), strict=True))
        for child in children.values():
            check(not pa.types.is_nested(child.type) and not pa.types.is_temporal(child.type))

        def values(name: str) -> tuple[Any, np.ndarray]:
            if name not in children:
                return None, np.zeros(len(image), dtype=bool)
            child = children[name]
            has_key = ~is_null & child.is_valid().to_numpy(zero_copy_only=False)
            for row in np.flatnonzero(~is_null & ~has_key).tolist():
                has_key[row] = self._has_key(int(records[row]), field, name)
            return child, has_key

        return _Image(is_null, set(children), values)

    def _has_key(self, record: int, field: str, name: str) -> bool:
        """Whether the ``field`` image of line ``record``'s message holds key ``name``.

        Asked with simdjson, which reads the line without building its objects; any line it
        does not read as Arrow did declines.
        """
        parser = self.__dict__.setdefault("_parser", simdjson.Parser())
        try:
            return name in parser.parse(self.lines[record])["message"][field]
        except (ValueError, KeyError, TypeError) as exc:
            raise Decline from exc


def _read_json(text: bytes | memoryview) -> pa.Table:
    """Read JSON Lines with ``pyarrow.json`` in one block; decline what it cannot read.

    Arrow does not check the text of strings as it reads them: the table is validated in full
    (its strings and names must be UTF-8, as ``json`` decodes them). Arrow reads ISO dates and
    times as timestamps, whose text is lost: a dump with such values is read again with those
    columns as text.
    """
    options = pj.ReadOptions(use_threads=False, block_size=len(text) + 1)
    try:
        read = pj.read_json(pa.BufferReader(text), read_options=options)
        _field_names(read.schema)  # names (keys) that are not UTF-8 raise here
        schema = pa.schema([f.with_type(_as_text(f.type)) for f in read.schema])
        if schema != read.schema:
            parse = pj.ParseOptions(explicit_schema=schema)
            read = pj.read_json(pa.BufferReader(text), read_options=options, parse_options=parse)
        read.validate(full=True)
    except (pa.ArrowInvalid, UnicodeDecodeError) as exc:
        raise Decline from exc
    return read


def _field_names(fields) -> list[str]:
    """Return every field name of a schema or struct type, nested ones too (as ``str``)."""
    names = []
    for f in fields:
        names.append(f.name)
        if pa.types.is_struct(f.type):
            names += _field_names(f.type)
        elif pa.types.is_list(f.type) and pa.types.is_struct(f.type.value_type):
            names += _field_names(f.type.value_type)
    return names


def _as_text(arrow_type: pa.DataType) -> pa.DataType:
    """Return ``arrow_type`` with every date, time and timestamp in it read as text."""
    if pa.types.is_temporal(arrow_type):
        return pa.string()
    if pa.types.is_struct(arrow_type):
        return pa.struct([f.with_type(_as_text(f.type)) for f in arrow_type])
    if pa.types.is_list(arrow_type):
        return pa.list_(_as_text(arrow_type.value_type))
    return arrow_type


def _is_text(arrow_type) -> bool:
    return pa.types.is_string(arrow_type) or pa.types.is_null(arrow_type)


class _Lines:
    """The lines of a dump, made one by one when asked for: ``lines[i]``, ``len(lines)``.

    ``offsets`` and ``ends`` bound each line (``ends`` at its LF, or the dump's end); a CR
    before the LF is not the line's (:func:`decoder.line_frames`).
    """

    def __init__(self, data: bytes, offsets: np.ndarray, ends: np.ndarray) -> None:
        self.data, self.offsets, self.ends = data, offsets.tolist(), ends.tolist()

    def __len__(self) -> int:
        return len(self.offsets)

    def __getitem__(self, i: int) -> bytes:
        line = self.data[self.offsets[i] : self.ends[i]].rstrip(b"\r")
        check(bool(line.strip()))  # an empty line: the reference's reject
        return line


class _LpvWalk(_Walk):
    """One fast-path read of a ``.lpv`` dump of Avro values (envelopes or Confluent framing)."""

    float_kinds = None
    is_json = False

    def run(self, final: bool) -> DecodeResult:
        """Read every frame; the data messages' rows go to ``result.table``."""
        offsets, ends, tombstones = _lpv_frames(self.data, self.start, final)
        if not len(offsets):
            return self.result
        self.result.consumed_end = int(ends[-1])
        value_start = np.where(tombstones, ends, offsets + 4)
        if tombstones.any():
            check(self.opts["tombstones"] == "count_and_skip")
        self.buf = padded(self.data)  # one copy of the dump, read by every AvroColumns
        envelope, kinds = _avro_kinds(self.buf, value_start, ends, tombstones, self.opts)
        first_data = self._metadata(kinds, lambda i: self.data[value_start[i] : ends[i]], offsets)
        records = np.arange(first_data, len(offsets))
        records = records[~tombstones[first_data:]]
        parts = [
            self._table(*group)
            for group in self._groups(records, envelope[records], value_start, ends)
        ]
        result = self._finish(parts, offsets)
        if tombstones.any():
            result.warnings.append(f"{int(tombstones.sum())} tombstone value(s) skipped")
        return result

    def _groups(self, records, envelope, value_start, ends):
        """Yield ``(meta, records, payload starts, ends, value format, schema text, schema ids)``.

        Envelopes are read with :class:`AvroColumns` up to their ``message``; a Confluent value's
        payload follows its 5-byte header. One group per schema id (envelopes) or registry id.
        """
        if envelope.any():
            chosen = records[envelope]
            reader = AvroColumns(
                self.buf, value_start[chosen] + len(ref.AVRO_DT_ENVELOPE), ends[chosen]
            )
            rows = np.arange(len(chosen))
            check(np.all(reader.varint(rows) == 0))  # headers: null
            ids = reader.read_value(["null", "string"], rows).to_pylist()
            check(np.all(reader.varint(rows) == 0))  # messageSchema: null (the id names it)
            size = reader.varint(rows)
            payload = reader.pos.copy()
            check(np.array_equal(payload + size, ends[chosen]))
            for schema_id in dict.fromkeys(ids):
                take = np.array([i == schema_id for i in ids], dtype=bool)
                meta = ref.resolve_table({}, schema_id, self.topic, self.catalog, self.opts)
                check(bool(meta.data_schema))
                yield (
                    meta,
                    chosen[take],
                    payload[take],
                    ends[chosen][take],
                    "avro_envelope",
                    meta.data_schema,
                    [schema_id] * int(take.sum()),
                )
        confluent = records[~envelope]
        if len(confluent):
            registry_ids = [
                int.from_bytes(self.data[a + 1 : a + 5], "big")
                for a in value_start[confluent].tolist()
            ]
            meta = ref.table_for_topic(self.topic, self.catalog, self.opts)
            check(meta is not None)
            for registry_id in dict.fromkeys(registry_ids):
                take = np.array([i == registry_id for i in registry_ids], dtype=bool)
                schema_text = self.registry.get(registry_id)
                check(schema_text is not None)
                rows = confluent[take]
                yield (
                    meta,
                    rows,
                    value_start[rows] + 5,
                    ends[rows],
                    "confluent",
                    schema_text,
                    [None] * len(rows),
                )

    def _table(
        self, meta, records, starts, ends, value_format, schema_text, schema_ids
    ) -> pa.Table:
        """Return the raw rows of one table's Avro data messages of one schema."""
        try:
            ref.parsed_schema(schema_text)  # a schema fastavro refuses is the reference's
            schema = json.loads(schema_text)
        except Exception as exc:  # noqa: BLE001 - as the reference: any parse failure
            raise Decline from exc
        check(bool(meta.columns))
        record = AvroColumns(self.buf, starts, ends).read(schema)
        check(pa.types.is_struct(record.type))
        fields = {f.name for f in record.type}
        check({"data", "headers"} <= fields and fields <= {"data", "beforeData", "headers"})
        headers = record.field("headers")
        check(pa.types.is_struct(headers.type) and headers.null_count == 0)
        header_names = {f.name for f in headers.type}

        def header(name: str) -> Any:
            if name not in header_names:
                return pa.nulls(len(records))
            if name in ("changeMask", "columnMask"):  # read per distinct pair, as Python values
                return headers.field(name).to_pylist()
            return headers.field(name)

        images = {
            "data": _avro_image(record.field("data")),
            "before_data": _avro_image(
                record.field("beforeData") if "beforeData" in fields else pa.nulls(len(records))
            ),
        }
        return self._rows(meta, header, images, schema_ids, records, value_format)


def _lpv_frames(data: bytes, start: int, final: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return each frame's offset, end and whether it is a tombstone, from ``start``.

    Declines a frame that overruns a final dump (the reference rejects it); in a dump still
    being written the frames stop before it (:func:`decoder.length_prefixed_frames`).
    """
    bounds = np.array(list(ref.lpv_bounds(data, start)), np.int64).reshape(-1, 3)
    last = int(bounds[-1, 1]) if len(bounds) else start
    check(not final or last >= len(data))
    return bounds[:, 0].copy(), bounds[:, 1].copy(), bounds[:, 2] == ref.TOMBSTONE


def _avro_kinds(buf: np.ndarray, start: np.ndarray, end: np.ndarray, tombstones: np.ndarray, opts):
    """Tell each ``.lpv`` value from its first bytes: ``(is a DT envelope, kinds)``.

    ``kinds`` is ``MD`` or ``DT`` per value (a tombstone counts as DT). A value is an envelope
    (``atMSG``) of type MD or DT, or a Confluent-framed record (``00`` and a 4-byte registry id)
    with ``confluent_framing: auto``; a plain record or any other value declines the dump
    (:func:`decoder.open_any`, :func:`decoder._avro_payload`). ``buf`` is the dump
    (:func:`padded`).
    """
    head = buf[start[:, None] + np.arange(8)]

    def starts_with(prefix: bytes) -> np.ndarray:
        return np.all(head[:, : len(prefix)] == np.frombuffer(prefix, np.uint8), axis=1)

    magic = starts_with(ref.MAGIC) & ~tombstones
    dt, md = starts_with(ref.AVRO_DT_ENVELOPE) & magic, starts_with(ref.AVRO_MD_ENVELOPE) & magic
    check(not np.any(magic & ~dt & ~md))
    check(not magic.any() or opts["envelope"] != "absent")
    bare = ~magic & ~tombstones
    if bare.any():
        check(opts["envelope"] != "required" and opts["confluent_framing"] == "auto")
        check(np.all((head[bare, 0] == ref.CONFLUENT_MAGIC) & (end[bare] - start[bare] >= 5)))
    return dt, np.where(md, "MD", "DT").tolist()


def _avro_image(image: pa.Array) -> _Image:
    """Return the :class:`_Image` of Avro records (a struct array; a null record is null)."""
    is_null = image.is_null().to_numpy(zero_copy_only=False)
    if pa.types.is_null(image.type):
        return _Image(is_null, set(), lambda name: (None, np.zeros(len(image), dtype=bool)))
    check(pa.types.is_struct(image.type))
    names = {f.name for f in image.type}

    def values(name: str) -> tuple[Any, np.ndarray]:
        if name not in names:
            return None, np.zeros(len(image), dtype=bool)
        return image.field(name), ~is_null

    return _Image(is_null, names, values)


def _json_image(images: list[Any]) -> _Image:
    """Return the :class:`_Image` of JSON objects (dicts or None)."""
    check(_types_within(images, {dict, _NONE}))
    keys: set[str] = set()
    for image in images:
        if image is not None:
            keys.update(image)

    names = sorted(keys)
    missing = (_MISSING,) * len(names)
    columns: dict[str, tuple] = {}

    def values(name: str) -> tuple[Any, np.ndarray]:
        if name not in keys:
            return None, np.zeros(len(images), dtype=bool)
        if not columns:  # every column of every image in one pass (dict.get by map, in C)
            rows = (
                missing if v is None else tuple(map(v.get, names, repeat(_MISSING))) for v in images
            )
            columns.update(zip(names, zip(*rows, strict=True), strict=True))
        found = columns[name]
        return found, np.array(list(map(operator.is_not, found, repeat(_MISSING))), dtype=bool)

    return _Image(np.array([v is None for v in images], dtype=bool), keys, values)


def _types_within(values: list[Any], types: set[type]) -> bool:
    """Whether every value's type (exactly) is one of ``types``."""
    return set(map(type, values)) <= types


def _kind(obj: Any) -> str:
    """Return ``MD`` or ``DT`` as :func:`decoder._open_json` tells a message; decline others."""
    if type(obj) is not dict:
        raise Decline
    if "magic" in obj:
        kind = obj.get("type")
        if obj["magic"] != "atMSG" or kind not in ("MD", "DT"):
            raise Decline
        return kind
    if "tableStructure" in obj and "dataSchema" in obj:
        return "MD"
    if "headers" not in obj or "data" not in obj:
        raise Decline
    return "DT"


def _data_message(obj: dict, envelope_mode: str) -> tuple[dict, Any]:
    """Return a data message and its envelope's ``messageSchemaId`` (None without one)."""
    if "magic" not in obj:
        if envelope_mode == "required":
            raise Decline
        return obj, None
    message = obj.get("message")
    if type(message) is str:
        message = orjson.loads(message)
    if type(message) is not dict:
        raise Decline
    return message, obj.get("messageSchemaId")


def _arrow_of(values: Any, arrow_type: pa.DataType, python_types: set[type]) -> pa.Array:
    """Return a header field's values as an Arrow array of ``arrow_type``; decline others.

    ``values`` is an Arrow array (of that type, or all null) or a list of Python values whose
    types are all in ``python_types``.
    """
    if isinstance(values, pa.Array):
        check(values.type == arrow_type or pa.types.is_null(values.type))
        return values.cast(arrow_type)
    check(_types_within(values, python_types))
    return pa.array(values, arrow_type)


def _none_if_empty(texts: pa.Array) -> pa.Array:
    """Read ``""`` as none, as ``headers.get(field) or None`` does."""
    return pc.if_else(pc.equal(texts, ""), pa.scalar(None, pa.string()), texts)


def _header_columns(header: Callable[[str], Any], opts: Mapping[str, Any]) -> dict:
    """Return the header columns of the raw rows, checked as :func:`decoder.checked_headers`.

    ``header(field)`` gives a header field's value of every message (None where absent), as a
    list or an Arrow array.
    """
    operations = _arrow_of(header("operation"), pa.string(), {str, _NONE})
    check(operations.null_count == 0)
    check(pc.all(pc.is_in(operations, pa.array(ref.OPERATIONS))).as_py())
    sequences = _arrow_of(header("changeSequence"), pa.string(), _TEXT).fill_null("")
    change = pc.not_equal(operations, "REFRESH")
    digits = pc.match_substring_regex(sequences, r"^[0-9]{35}$")
    check(pc.all(pc.or_(pc.invert(change), digits)).as_py())
    columns = {"operation": operations, "change_sequence": _none_if_empty(sequences)}
    for name, field in _TEXT_HEADERS.items():
        columns[name] = _none_if_empty(_arrow_of(header(field), pa.string(), _TEXT))
    external = _arrow_of(header("externalSchemaId"), pa.string(), _TEXT)
    counter = _arrow_of(header("transactionEventCounter"), pa.int64(), {int, _NONE})
    last = _arrow_of(header("transactionLastEvent"), pa.bool_(), {bool, _NONE})
    if opts["missing_transaction_fields"] == "reject":
        missing = pc.or_(counter.is_null(), last.is_null())
        check(not pc.any(pc.and_(change, missing)).as_py())
    columns.update(
        external_schema_id=external,
        transaction_event_counter=counter,
        transaction_last_event=last,
        timestamp=_timestamps(header("timestamp"), opts),
    )
    return columns


def _timestamps(values: Any, opts: Mapping[str, Any]) -> pa.Array:
    """``headers.timestamp`` as canonical UTC text (:func:`decoder.header_time`)."""
    texts = _none_if_empty(_arrow_of(values, pa.string(), _TEXT))
    overflow = opts["subsecond_overflow"]
    ok, rendered = canonical_arrow.timestamp_texts(texts, overflow)
    return canonical_arrow.or_by_value(ok, rendered, texts, lambda v: ref.header_time(v, overflow))


_MASK_TYPES = {str, bytes, _NONE}


def _present(masks, operation, table_columns, plan, opts, columns) -> np.ndarray:
    """Return which columns each message leaves present (rows × columns), masks checked.

    ``masks`` are the ``changeMask`` and ``columnMask`` values of every message. Sets
    ``change_mask`` and ``column_mask`` in ``columns``. The masks are read and checked once per
    distinct pair and operation (:func:`decoder.read_masks`, :func:`decoder.check_present`).
    """
    width = len(table_columns)
    check(all(_types_within(values, _MASK_TYPES) for values in masks))
    keys = list(zip(*masks, operation.tolist(), strict=True))
    distinct = {key: n for n, key in enumerate(dict.fromkeys(keys))}
    which = pa.array(np.array([distinct[key] for key in keys], dtype=np.int64))
    texts, rows = [], np.zeros((len(distinct), width), dtype=bool)
    for (change, column, op), n in distinct.items():
        change_mask, column_mask, changed, present_bits, present = ref.read_masks(
            change, column, opts["mask_bit_order"], width
        )
        if present_bits is not None:
            ref.check_present(table_columns, plan.key_positions, changed, present, op)
        texts.append((change_mask or None, column_mask or None))
        rows[n, sorted(present)] = True
    columns["change_mask"] = pa.array([t[0] for t in texts], pa.string()).take(which)
    columns["column_mask"] = pa.array([t[1] for t in texts], pa.string()).take(which)
    return rows[which.to_numpy()]


def _image_map(
    image: _Image, table_columns: list, plan, present: np.ndarray, float_kinds
) -> pa.MapArray:
    """Return ``data`` or ``before_data``: each image's present columns as canonical text.

    A column is absent where its ``columnMask`` bit is clear or its key is missing; a null
    image is a null map (:func:`decoder._image`).
    """
    n = len(image.is_null)
    if not image.is_null.all():
        check(plan.names.issuperset(image.keys))
    width = len(plan.renderers)
    kept = np.zeros((n, width), dtype=bool)
    rendered = []
    for i, name, _render in plan.renderers:
        values, has_key = image.values(name)
        here = has_key & present[:, i] & ~image.is_null
        kept[:, i] = here
        rendered.append(_rendered(values, here, table_columns[i], plan.overflow, float_kinds))
    items = pa.concat_arrays(rendered) if rendered else pa.array([], pa.string())
    # rendered column i holds its kept rows in row order: the entry of (row r, column i) is
    # at column i's start plus the number of kept rows of column i before r
    starts = np.concatenate(([0], np.cumsum(kept.sum(axis=0))[:-1])).astype(np.int64)
    rank = np.cumsum(kept, axis=0) - kept
    pick = (starts[None, :] + rank)[kept]
    column = np.nonzero(kept)[1]
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(kept.sum(axis=1), out=offsets[1:])
    names = pa.array([name for _, name, _ in plan.renderers], pa.string())
    return pa.MapArray.from_arrays(
        pa.array(offsets),
        names.take(pa.array(column, pa.int64())),
        items.take(pa.array(pick, pa.int64())),
        mask=pa.array(image.is_null),
    )


#: The Arrow types of a data column the fast path renders (a nested value goes to the reference).
_RENDERED_TYPES = (
    pa.types.is_integer,
    pa.types.is_floating,
    pa.types.is_string,
    pa.types.is_boolean,
    pa.types.is_binary,
)


def _rendered(values: Any, here: np.ndarray, column, overflow: str, float_kinds):
    """Render the values of one column ``here`` as :func:`decoder._image` does.

    ``values`` is a list of Python values or an Arrow array, of every message. By the change
    tables' Arrow renderer where the values have one type, else value by value with the
    reference's renderer; declines a value the reference rejects, a nested value, and a float
    in a column whose type is not in ``float_kinds`` (:attr:`_Walk.float_kinds`).
    """
    floats = float_kinds is None or column.source_type.upper() in float_kinds
    if values is None:  # no image holds the column
        return pa.array([], pa.string())
    if isinstance(values, pa.Array):
        array = values.filter(pa.array(here))
    else:
        values = list(compress(values, here.tolist()))
        try:
            array = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            array = None
    try:
        if array is None or not column.source_type:
            values = values if array is None else array.to_pylist()
            check(_types_within(values, _SCALARS))
            check(floats or not any(type(v) is float for v in values))
            render = ref.value_renderer(column, overflow)
            return pa.array([render(v) for v in values], pa.string())
        if pa.types.is_null(array.type):
            return pa.nulls(len(array), pa.string())
        check(any(test(array.type) for test in _RENDERED_TYPES))
        check(floats or not pa.types.is_floating(array.type))
        return canonical_arrow.qlik_values(array, column.source_type, column.scale or 0, overflow)
    except ValueError as exc:
        raise Decline from exc


#: The walks that read a dump, by the end of its name, in the order they are tried.
_WALKS = {
    ".jsonl": (_ArrowJsonWalk, _JsonWalk),
    ".json": (_ArrowJsonWalk, _JsonWalk),
    ".lpv": (_LpvWalk,),
}


# -- Avro datums read by column -----------------------------------------------------------
#
# Avro datums of one schema read at many offsets at once, with numpy (issue 47).
#
# The Kafka fast path (``qlik_kafka/columnar.py``) reads the ``DataRecord`` payloads of a
# ``.lpv`` dump this way: every payload starts at its own offset in one buffer, and the reader
# walks the schema once, reading one field of every datum per step (Avro specification 1.11,
# *Binary Encoding*: zig-zag varints for ``int``/``long``, lengths before ``string`` and
# ``bytes``, little-endian IEEE 754 for ``float``/``double``, one byte for ``boolean``, the
# branch index before a union's value). Each field becomes one Arrow array of all datums.
#
# Only the types Replicate's ``dataSchema`` uses are read: records, named references to them,
# unions of ``null`` and one type, enums and the primitive types. Anything else (logical types,
# maps, arrays, fixed, unions of two non-null types) and any datum that does not decode (a branch
# or enum index out of range, a length past the payload, text that is not UTF-8, a varint of more
# than ten bytes) raises :class:`~python_udfs.byte_fields.Decline`: fastavro, the reference, reads
# that dump.

#: The longest varint of a 64-bit value, in bytes.
_VARINT_BYTES = 10
_PRIMITIVE_BYTES = {"float": ("<f4", 4), "double": ("<f8", 8)}


def padded(data: bytes) -> np.ndarray:
    """Return ``data`` as a ``uint8`` array with zero bytes after it, as :class:`AvroColumns` reads.

    A varint or a fixed-width value is read a whole number of bytes at a time before it is
    checked against its datum's end: the zeros keep those reads within the array.
    """
    return np.frombuffer(data + bytes(_VARINT_BYTES + 8), np.uint8)


class AvroColumns:
    """Read datums of one Avro schema, one per ``start`` offset of ``buf``, by column.

    ``buf`` is the bytes that hold the datums, :func:`padded`; ``end`` bounds each datum:
    :meth:`read` checks that every datum ends exactly there.
    """

    def __init__(self, buf: np.ndarray, start: np.ndarray, end: np.ndarray) -> None:
        self.buf = buf
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
        return binary(self.buf, start, start + size).cast(pa.binary())

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
