"""The fast path of the Kafka dump decoder: a JSON Lines dump's raw rows built by column (issue 47).

:func:`decode_columnar` reads a ``.jsonl`` dump as :func:`decoder.decode_dump_file` (the
reference path) does, with the same raw row columns, metadata and warnings, but builds the rows
as Arrow columns instead of one ``dict`` per message:

1. the lines are found with numpy and parsed with orjson (the reference parses with ``json``
   and reads numbers with a fraction as ``Decimal``: see 4);
2. metadata (``MD``) messages, which must all come before the first data message, go through
   the reference one by one and settle the catalog; the data (``DT``) messages are grouped by
   the table they resolve to (:func:`decoder._resolve`, once per distinct schema, table and
   schema id);
3. per table, the headers are checked over whole columns as :func:`decoder._checked_headers`
   checks them, and the masks once per distinct pair (:func:`decoder._masks`,
   :func:`decoder._check_present`);
4. each data column's values are rendered by the Qlik change tables' column renderer
   (:func:`python_udfs.qlik_change_tables.decoder._render_column`, the same canonical text as
   :func:`python_udfs.canonical.canonical_qlik_value`), and ``data`` / ``before_data`` become
   maps without the columns a message leaves absent (a clear ``columnMask`` bit, a missing key).

A dump with anything the fast path does not read in bulk goes to the reference whole
(:func:`decode_columnar` returns None): a line that is empty or not JSON to orjson (which is
stricter than ``json``: ``NaN``, lone surrogates, UTF-16), any message the reference rejects, a
metadata message after a data message, a table without metadata, option ``ordinal_source:
data_key_order`` or ``envelope: absent``, a number with a fraction in a column that is not
REAL4/REAL8 (``json`` reads it as ``Decimal``, orjson as ``float``), a nested value, a
change sequence seen twice, a header of an unexpected type. ``.lpv`` and ``.avro`` dumps
always take the reference. ``tests/test_qlik_kafka_columnar.py`` checks that both paths give
the same rows, metadata and warnings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from python_udfs.byte_fields import Decline, check
from python_udfs.qlik_change_tables.decoder import _render_column, _text_timestamps
from python_udfs.qlik_kafka import decoder as ref
from python_udfs.qlik_kafka.decoder import KafkaCatalog, TableMeta
from python_udfs.records import DecodeResult

_MISSING = object()
_MAP = pa.map_(pa.string(), pa.string())
#: The header fields kept as text in the raw table, with ``""`` read as none.
_TEXT_HEADERS = {"stream_position": "streamPosition", "transaction_id": "transactionId"}
#: Python types a data value may have on the fast path (a nested object or array: reference).
_SCALARS = (str, int, float, bool, type(None))


def decode_columnar(
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
    reference's row keys as columns, in message order) and ``result.rows`` is empty. Returns
    None when the dump holds something only the reference reads (the module's docstring lists
    what); never raises for bad input. The MD messages it meets go to a copy of ``catalog``.
    """
    opts = {**ref.DEFAULT_OPTIONS, **(options or {})}
    if not ref._is_json_dump(file_name) or file_name.lower().endswith(".gz"):
        return None
    if opts["ordinal_source"] != "metadata" or opts["envelope"] == "absent":
        return None
    own = KafkaCatalog()
    if catalog is not None:
        own.by_schema_id.update(catalog.by_schema_id)
        own.by_table.update(catalog.by_table)
    final = final or opts["incomplete_tail"] == "reject"
    walk = _JsonWalk(data, file_name, own, registry_schemas or {}, opts, start, start_index)
    try:
        return walk.run(final)
    except (Decline, ref._Bad, orjson.JSONDecodeError):
        return None


class _JsonWalk:
    """One fast-path read of a JSON Lines dump, into ``result``; raises Decline."""

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

    def run(self, final: bool) -> DecodeResult:
        """Read every line; the data messages' rows go to ``result.table``."""
        offsets, ends = _line_bounds(self.data, self.start, final)
        if not len(offsets):
            return self.result
        self.result.consumed_end = int(ends[-1])
        lines = [self.data[a:b] for a, b in zip(offsets.tolist(), ends.tolist(), strict=True)]
        if b"\r" in self.data:
            lines = [line.rstrip(b"\r\n") for line in lines]
        else:
            lines = [line.rstrip(b"\n") for line in lines]
        check(all(line.strip() for line in lines))
        objects = [orjson.loads(line) for line in lines]
        first_data = self._metadata(objects, lines, offsets)
        messages = [_data_message(o, self.opts["envelope"]) for o in objects[first_data:]]
        parts = [
            self._table_rows(meta, [messages[i] for i in group], first_data + group)
            for meta, group in self._by_table(messages)
        ]
        if parts:
            table = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
            line = table["_line"].to_numpy()
            if len(parts) > 1:
                order = np.argsort(line, kind="stable")
                table, line = table.take(pa.array(order)), line[order]
            table = table.drop_columns(["_line"])
            table = table.append_column("record_offset", pa.array(offsets[line], pa.int64()))
            index = self.start_index + 1 + line
            self.result.table = table.append_column("record_index", pa.array(index, pa.int64()))
            sequences = table["change_sequence"].drop_null()
            check(pc.count_distinct(sequences).as_py() == len(sequences))  # the reference's
        self.result.warnings.extend(sorted(self.opts.pop("_notes", ())))
        return self.result

    def _metadata(self, objects: list[Any], lines: list[bytes], offsets: np.ndarray) -> int:
        """Read the metadata messages before the first data message, by the reference.

        Returns the first data message's line; declines a metadata message after it.
        """
        kinds = [_kind(o) for o in objects]
        first_data = next((i for i, kind in enumerate(kinds) if kind != "MD"), len(kinds))
        check("MD" not in kinds[first_data:])
        for i in range(first_data):
            index = self.start_index + 1 + i
            value = ref._decode_value(
                lines[i],
                self.topic,
                self.catalog,
                self.registry,
                self.opts,
                self.result,
                int(offsets[i]),
                index,
                True,
            )
            check(value is None)
        return first_data

    def _by_table(self, messages: list[tuple[dict, Any]]):
        """Yield ``(table metadata, positions in messages)`` of each table the messages name."""
        keys = [(m.get("schema"), m.get("table"), schema_id) for m, schema_id in messages]
        distinct = {key: n for n, key in enumerate(dict.fromkeys(keys))}
        group = np.array([distinct[key] for key in keys], dtype=np.int64)
        for key, n in distinct.items():
            schema, table, schema_id = key
            message = {"schema": schema, "table": table} if schema is not None else {}
            meta = ref._resolve(message, schema_id, self.topic, self.catalog, self.opts)
            yield meta, np.flatnonzero(group == n)

    def _table_rows(
        self, meta: TableMeta, messages: list[tuple[dict, Any]], lines: np.ndarray
    ) -> pa.Table:
        """Return the raw rows of one table's data messages (and their ``_line``)."""
        n = len(messages)
        bodies = [m for m, _ in messages]
        headers = [m.get("headers") or {} for m in bodies]
        check(all(type(h) is dict for h in headers))
        columns = _header_columns(headers, self.opts)
        operation = columns["operation"].to_numpy(zero_copy_only=False)
        images = {
            "data": [m.get("data") for m in bodies],
            "before_data": [m.get("beforeData") for m in bodies],
        }
        for image in images.values():
            check(all(v is None or type(v) is dict for v in image))
        check(not np.any((operation == "UPDATE") & np.array([v is None for v in images["data"]])))
        table_columns, plan = self._columns(meta, bodies)
        present = _present(headers, operation, table_columns, plan, self.opts, columns)
        for name, image in images.items():
            columns[name] = _image_map(image, table_columns, plan, present)
        schema_ids = [schema_id for _, schema_id in messages]
        check(all(s is None or type(s) is str for s in schema_ids))
        names = [c.column_name for c in table_columns]
        columns.update(
            value_format=pa.repeat(pa.scalar("json"), n),
            message_type=pa.repeat(pa.scalar("DT"), n),
            message_schema_id=pa.array(schema_ids, pa.string()),
            source_schema=pa.repeat(pa.scalar(meta.source_schema, pa.string()), n),
            source_table=pa.repeat(pa.scalar(meta.source_table, pa.string()), n),
            table_version=pa.repeat(pa.scalar(meta.table_version, pa.int64()), n),
            column_names=pa.repeat(pa.scalar(names, pa.list_(pa.string())), n),
            _line=pa.array(lines, pa.int64()),
        )
        return pa.table(columns)

    def _columns(self, meta: TableMeta, bodies: list[dict]) -> tuple[list, Any]:
        """Return the columns the masks index and their image plan.

        The table's metadata columns; for a table without metadata the data keys, which every
        message must list alike (:func:`decoder._message_columns`, which notes the table).
        """
        overflow = self.opts["subsecond_overflow"]
        if meta.columns:
            return meta.columns, meta.image_plan(overflow)
        keys = [list(m.get("data") or m.get("beforeData") or {}) for m in bodies]
        check(all(k == keys[0] for k in keys))
        columns = ref._message_columns(meta, dict.fromkeys(keys[0]), self.opts)
        return columns, ref._ImagePlan.of(columns, overflow)


def _line_bounds(data: bytes, start: int, final: bool) -> tuple[np.ndarray, np.ndarray]:
    """Return the first byte and the end (after LF) of each line from ``start``.

    The last line without LF counts only when ``final`` (:func:`decoder._line_frames`).
    """
    buf = np.frombuffer(data, np.uint8)[start:]
    ends = np.flatnonzero(buf == 10) + 1 + start
    if final and (ends[-1] if len(ends) else start) < len(data):
        ends = np.append(ends, len(data))
    offsets = np.concatenate(([start], ends[:-1])).astype(np.int64)
    return offsets[: len(ends)], ends


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


def _header_columns(headers: list[dict], opts: Mapping[str, Any]) -> dict[str, pa.Array]:
    """Return the header columns of the raw rows, checked as :func:`decoder._checked_headers`."""
    operation = [h.get("operation") for h in headers]
    check(set(operation) <= set(ref.OPERATIONS))
    sequence = [h.get("changeSequence") or "" for h in headers]
    check(all(type(s) is str for s in sequence))
    operations = pa.array(operation, pa.string())
    sequences = pa.array(sequence, pa.string())
    change = pc.not_equal(operations, "REFRESH")
    digits = pc.match_substring_regex(sequences, r"^[0-9]{35}$")
    check(pc.all(pc.or_(pc.invert(change), digits)).as_py())
    columns = {
        "operation": operations,
        "change_sequence": pc.if_else(pc.equal(sequences, ""), None, sequences),
    }
    for name, field in _TEXT_HEADERS.items():
        values = [h.get(field) or None for h in headers]
        check(all(v is None or type(v) is str for v in values))
        columns[name] = pa.array(values, pa.string())
    external = [h.get("externalSchemaId") for h in headers]
    check(all(v is None or type(v) is str for v in external))
    columns["external_schema_id"] = pa.array(external, pa.string())
    counter = [h.get("transactionEventCounter") for h in headers]
    last = [h.get("transactionLastEvent") for h in headers]
    check(all(v is None or type(v) is int for v in counter))
    check(all(v is None or type(v) is bool for v in last))
    if opts["missing_transaction_fields"] == "reject":
        missing = pc.or_(
            pa.array([v is None for v in counter]), pa.array([v is None for v in last])
        )
        check(not pc.any(pc.and_(change, missing)).as_py())
    columns["transaction_event_counter"] = pa.array(counter, pa.int64())
    columns["transaction_last_event"] = pa.array(last, pa.bool_())
    columns["timestamp"] = _timestamps([h.get("timestamp") for h in headers], opts)
    return columns


def _timestamps(values: list[Any], opts: Mapping[str, Any]) -> pa.Array:
    """``headers.timestamp`` as canonical UTC text (:func:`decoder._header_time`)."""
    values = [None if v == "" else v for v in values]
    check(all(v is None or type(v) is str for v in values))
    texts = pa.array(values, pa.string())
    overflow = opts["subsecond_overflow"]
    rendered = _text_timestamps(texts, overflow) if texts.null_count < len(texts) else texts
    if rendered is not None:
        return rendered
    distinct = pc.unique(texts)
    out = [None if v is None else ref._header_time(v, overflow) for v in distinct.to_pylist()]
    return pa.array(out, pa.string()).take(pc.index_in(texts, distinct))


def _present(headers, operation, table_columns, plan, opts, columns) -> np.ndarray:
    """Return which columns each message leaves present (rows × columns), masks checked.

    Sets ``change_mask`` and ``column_mask`` in ``columns``. The masks are read and checked
    once per distinct pair and operation (:func:`decoder._masks`,
    :func:`decoder._check_present`).
    """
    width = len(table_columns)
    pairs = [(h.get("changeMask"), h.get("columnMask")) for h in headers]
    check(all(type(a) in (str, type(None)) and type(b) in (str, type(None)) for a, b in pairs))
    keys = [(a, b, op) for (a, b), op in zip(pairs, operation.tolist(), strict=True)]
    distinct = {key: n for n, key in enumerate(dict.fromkeys(keys))}
    which = np.array([distinct[key] for key in keys], dtype=np.int64)
    masks, rows = [], np.zeros((len(distinct), width), dtype=bool)
    for (change, column, op), n in distinct.items():
        change_mask, column_mask, changed, present_bits, present = ref._masks(
            change, column, opts["mask_bit_order"], width
        )
        if present_bits is not None:
            ref._check_present(table_columns, plan.key_positions, changed, present, op)
        masks.append((change_mask or None, column_mask or None))
        rows[n, sorted(present)] = True
    columns["change_mask"] = pa.array([m[0] for m in masks], pa.string()).take(pa.array(which))
    columns["column_mask"] = pa.array([m[1] for m in masks], pa.string()).take(pa.array(which))
    return rows[which]


def _image_map(
    images: list[dict | None], table_columns: list, plan, present: np.ndarray
) -> pa.MapArray:
    """Return ``data`` or ``before_data``: each image's present columns as canonical text.

    A column is absent where its ``columnMask`` bit is clear or its key is missing; a null
    image is a null map (:func:`decoder._image`).
    """
    n = len(images)
    is_null = np.array([image is None for image in images])
    known: set[str] = set()
    for image in images:
        if image is not None:
            known.update(image)
    check(plan.names.issuperset(known))
    width = len(plan.renderers)
    kept = np.zeros((n, width), dtype=bool)
    rendered = []
    for i, name, _render in plan.renderers:
        values = [_MISSING if image is None else image.get(name, _MISSING) for image in images]
        here = np.array([v is not _MISSING for v in values]) & present[:, i]
        kept[:, i] = here
        kept_values = [v for v, h in zip(values, here.tolist(), strict=True) if h]
        rendered.append(_rendered(kept_values, table_columns[i], plan.overflow))
    items = pa.concat_arrays(rendered)
    # rendered column i holds its kept rows in row order: the entry of (row r, column i) is
    # at column i's start plus the number of kept rows of column i before r
    starts = np.concatenate(([0], np.cumsum(kept.sum(axis=0))[:-1]))
    rank = np.cumsum(kept, axis=0) - kept
    pick = (starts[None, :] + rank)[kept]
    column = np.nonzero(kept)[1]
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(kept.sum(axis=1), out=offsets[1:])
    names = pa.array([name for _, name, _ in plan.renderers], pa.string())
    return pa.MapArray.from_arrays(
        pa.array(offsets),
        names.take(pa.array(column)),
        items.take(pa.array(pick)),
        mask=pa.array(is_null),
    )


#: The Arrow types of a data column the fast path renders (a nested value goes to the reference).
_RENDERED_TYPES = (
    pa.types.is_integer,
    pa.types.is_floating,
    pa.types.is_string,
    pa.types.is_boolean,
)


def _rendered(values: list[Any], column, overflow: str) -> pa.Array:
    """Render one column's present values as :func:`decoder._image` does (canonical text).

    By the change tables' Arrow renderer where the values have one JSON type, else value by
    value with the reference's renderer; declines a value the reference rejects, a nested
    value, and a number with a fraction in a column that is not REAL4/REAL8.
    """
    real = column.source_type.upper() in ("REAL4", "REAL8", "")  # "": typed by JSON type
    try:
        array = pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        array = None
    try:
        if array is None or not column.source_type:
            check(all(type(v) in _SCALARS for v in values))
            check(real or not any(type(v) is float for v in values))
            render = ref._renderer(column, overflow)
            return pa.array([render(v) for v in values], pa.string())
        if pa.types.is_null(array.type):
            return pa.nulls(len(array), pa.string())
        check(any(test(array.type) for test in _RENDERED_TYPES))
        check(real or not pa.types.is_floating(array.type))
        return _render_column(array, column, overflow).cast(pa.string())
    except ValueError as exc:
        raise Decline from exc
