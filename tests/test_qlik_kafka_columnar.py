"""Issue 47: the Kafka fast path (``columnar.decode_columnar``) against the reference.

The per-message decoder (``decoder.decode_dump_file``) is the reference: on the real JSON
samples, on the simulator's JSON Lines dumps (whole, resumed and cut), on hand-made messages of
every value type, mask and image shape, and on damaged dumps, the fast path gives the same raw
rows, metadata, warnings and resume offset, or leaves the dump to the reference (returns None).
"""

from __future__ import annotations

import json
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from python_udfs.feed_format import FileToDecode
from python_udfs.qlik_kafka import columnar, spec
from python_udfs.qlik_kafka.decoder import KafkaCatalog, decode_dump_file, scan_metadata
from python_udfs.records import MetadataColumn
from simulator.database import TABLES, seed_catalog, simulate
from simulator.qlik_kafka import write_kafka
from tests import fast_paths
from tests.test_qlik_kafka import _data_record, _md_line

RAW = "raw_qlik_kafka"
ITEM_MASTER = "qlik_kafka/item_master_update_16_columns.jsonl"
EMPLOYEES = "qlik_kafka/employees_salaries_md_and_refresh.jsonl"


def both(data: bytes, file_name: str, catalog: KafkaCatalog | None = None, **kwargs):
    """``(fast path result or None, reference result)`` of one dump, each on its own catalog."""

    def copy() -> KafkaCatalog:
        own = KafkaCatalog()
        if catalog is not None:
            own.by_schema_id.update(catalog.by_schema_id)
            own.by_table.update(catalog.by_table)
        return own

    fast = columnar.decode_columnar(data, file_name=file_name, catalog=copy(), **kwargs)
    return fast, decode_dump_file(data, file_name=file_name, catalog=copy(), **kwargs)


def assert_same(fast, reference) -> None:
    """The fast path's result is the reference's: rows, rejects, metadata, warnings, offset."""
    fast_paths.assert_same(fast, reference, RAW)


def scanned(data: bytes, name: str) -> KafkaCatalog:
    catalog = KafkaCatalog()
    catalog.add_columns(scan_metadata(data, file_name=name))
    return catalog


def test_the_real_samples_read_as_the_reference_reads_them(samples):
    """The 16-column UPDATE (both images, masks with a leading zero byte) and the MD message
    followed by a REFRESH row, with their topics mapped to tables."""
    cases = [
        (ITEM_MASTER, {"item_master_update_16_columns": "SAPTM.ITEM_MASTER"}),
        (EMPLOYEES, {"employees_salaries_md_and_refresh": "employees.salaries"}),
    ]
    for sample, topics in cases:
        data = (samples / sample).read_bytes()
        name = sample.rsplit("/", 1)[-1]
        fast, reference = both(
            data, name, scanned(data, name), options={"topic_tables": topics}, final=True
        )
        assert fast is not None and reference.rows
        assert_same(fast, reference)


@pytest.fixture(scope="module")
def simulated_folder(tmp_path_factory):
    """The simulator's dumps: SALES.CUSTOMERS in JSON Lines, SALES.ORDER_LINES in Avro
    envelopes, HR.EMPLOYEES in Confluent framing (``schemas/1.avsc``)."""
    folder = tmp_path_factory.mktemp("kafka")
    write_kafka(simulate(seed=5, truncate_every=0), folder, TABLES)
    return folder


@pytest.fixture(scope="module")
def simulated_json(simulated_folder):
    """The simulator's JSON Lines dumps (an MD message, then the data messages)."""
    return [(p.name, p.read_bytes()) for p in sorted(simulated_folder.glob("*.jsonl"))]


@pytest.fixture(scope="module")
def simulated_lpv(simulated_folder):
    """The simulator's ``.lpv`` dumps, and the catalog and options that resolve them: the MD
    messages of the envelope dumps, the seed's columns, and the Confluent topic's table."""
    dumps = [(p.name, p.read_bytes()) for p in sorted(simulated_folder.glob("*.lpv"))]
    catalog = KafkaCatalog()
    catalog.add_columns([c for cols in seed_catalog("qlik_kafka")[0].values() for c in cols])
    for name, data in dumps:
        catalog.add_columns(scan_metadata(data, file_name=name))
    registry = {1: (simulated_folder / "schemas" / "1.avsc").read_text(encoding="utf-8")}
    options = {"topic_tables": {"HR.EMPLOYEES": "HR.EMPLOYEES"}}
    return dumps, catalog, {"registry_schemas": registry, "options": options}


def test_every_simulated_json_dump_takes_the_fast_path_whole_resumed_and_cut(simulated_json):
    """Loads, inserts, updates with both images, deletes, NULLs, Japanese text, masks; read
    whole, resumed at a message and cut inside one (the partial line waits)."""
    catalog = KafkaCatalog()
    for name, data in simulated_json:
        catalog.add_columns(scan_metadata(data, file_name=name))
    assert len(simulated_json) == 2
    for name, data in simulated_json:
        for text in (data, data.replace(b"\n", b"\r\n")):
            fast, reference = both(text, name, catalog, final=True)
            assert fast is not None and fast.table.num_rows > 10
            assert_same(fast, reference)
            middle = reference.rows[len(reference.rows) // 2]["record_offset"]
            fast, reference = both(text, name, catalog, final=True, start=middle, start_index=4)
            assert fast is not None
            assert_same(fast, reference)
            fast, reference = both(text[: middle + 9], name, catalog, final=False)
            assert fast is not None and fast.consumed_end == middle
            assert_same(fast, reference)


def test_every_simulated_avro_dump_takes_the_fast_path_whole_resumed_and_cut(simulated_lpv):
    """Avro envelopes after their Avro MD message, and Confluent-framed records: read whole,
    resumed at a frame and cut inside one (the partial frame waits); with a tombstone."""
    dumps, catalog, context = simulated_lpv
    assert {name.split("-")[0] for name, _ in dumps} == {"HR.EMPLOYEES", "SALES.ORDER_LINES"}
    for name, data in dumps:
        fast, reference = both(data, name, catalog, final=True, **context)
        assert fast is not None and fast.table.num_rows > 10
        assert_same(fast, reference)
        middle = reference.rows[len(reference.rows) // 2]["record_offset"]
        fast, reference = both(data, name, catalog, final=True, start=middle, **context)
        assert fast is not None
        assert_same(fast, reference)
        fast, reference = both(data[: middle + 9], name, catalog, final=False, **context)
        assert fast is not None and fast.consumed_end == middle
        assert_same(fast, reference)
        tombstone = data[:middle] + b"\xff\xff\xff\xff" + data[middle:]
        fast, reference = both(tombstone, name, catalog, final=True, **context)
        assert fast is not None and reference.warnings
        assert_same(fast, reference)


def test_the_formats_page_frame_and_its_confluent_framing(samples):
    """The worked example of formats/qlik_kafka_messages.md (the real sample's REFRESH row in
    an Avro envelope of 85 bytes, after the sample's MD message as JSON) and the same record in
    Confluent framing followed by a tombstone."""
    md, payload = _data_record(samples)
    envelope = b"atMSG\x04DT\x00\x02\x40" + md["schemaId"].encode() + b"\x00"
    envelope += bytes([len(payload) * 2]) + payload
    catalog = scanned(_md_line(samples) + b"\n", "x.jsonl")
    name = "salaries-0-00000000000000000000.lpv"
    fast, reference = both(struct.pack(">I", 85) + envelope, name, catalog, final=True)
    assert fast is not None and reference.rows[0]["value_format"] == "avro_envelope"
    assert_same(fast, reference)
    value = b"\x00\x00\x00\x00\x2a" + payload
    frames = struct.pack(">I", len(value)) + value + b"\xff\xff\xff\xff"
    context = {
        "registry_schemas": {42: md["dataSchema"]},
        "options": {"topic_tables": {"salaries": "employees.salaries"}},
    }
    fast, reference = both(frames, name, catalog, final=True, **context)
    assert fast is not None and reference.rows[0]["value_format"] == "confluent"
    assert_same(fast, reference)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_damaged_avro_dumps_decode_the_same_by_both_paths(simulated_lpv, data):
    """Bytes flipped, set, cut or inserted anywhere in a simulated ``.lpv`` dump: the fast
    path declines or gives what the reference gives."""
    dumps, catalog, context = simulated_lpv
    name, source = dumps[data.draw(st.integers(0, len(dumps) - 1))]
    raw = fast_paths.damaged(source[:8000], data, ("flip", "set", "cut", "insert"), 3)
    final = data.draw(st.booleans())
    fast, reference = both(raw, name, catalog, final=final, **context)
    if fast is not None:  # an exception of the fast path fails the test here
        assert_same(fast, reference)


def column(name: str, source_type: str, ordinal: int, scale: int = 0, key: int = 0):
    return MetadataColumn(
        "S", "T", 1, name, ordinal, source_type, None, None, scale, key, True, "md", "ID1"
    )


#: Values of each Replicate type as JSON producers write them, canonical or not.
TYPED_VALUES = {
    ("INT4", 0): [1, -7, 0, "12", None],
    ("INT8", 0): [2**62, -(2**63), 2**64 - 1],
    ("NUMERIC", 2): ["1.50", "-0.00", "7", "12.5", 3],
    ("REAL8", 0): [1.5, -2.5e-07, 3, 1e300, 0.1],
    ("STRING", 0): ["a", "", "東京", 5, True],
    ("BOOLEAN", 0): [True, False, 1, "true"],
    ("DATE", 0): ["2024-02-29", "1999-12-31"],
    ("DATETIME", 0): ["2024-01-01 00:00:00.123456", "2024-01-01T10:00:00", "2023-12-31 23:59:59"],
    ("BYTES", 0): ["0A0B", "ff"],
}


def typed_catalog() -> KafkaCatalog:
    columns = [column("K", "INT4", 1, key=1)] + [
        column(f"C{n}", kind, n + 2, scale) for n, (kind, scale) in enumerate(TYPED_VALUES)
    ]
    catalog = KafkaCatalog()
    catalog.add_columns(columns)
    return catalog


def typed_dump(masks=("", "")) -> bytes:
    """One message per value row of :data:`TYPED_VALUES`: INSERT, UPDATE, DELETE, REFRESH."""
    lines = []
    width = max(len(v) for v in TYPED_VALUES.values())
    operations = ["INSERT", "UPDATE", "DELETE", "REFRESH"]
    for row in range(width):
        data = {"K": row}
        for n, values in enumerate(TYPED_VALUES.values()):
            if row % 3 != 2 or n % 2:  # now and then a key left out: an absent column
                data[f"C{n}"] = values[row % len(values)]
        operation = operations[row % 4]
        headers = {
            "operation": operation,
            "changeSequence": "" if operation == "REFRESH" else f"{row + 1:035d}",
            "timestamp": "" if operation == "REFRESH" else "2024-05-09T10:56:30.490",
            "transactionId": "00FF",
            "changeMask": masks[0] or None,
            "columnMask": masks[1] or None,
            "transactionEventCounter": row + 1,
            "transactionLastEvent": row % 2 == 0,
        }
        message = {
            "data": data,
            "beforeData": data if operation == "UPDATE" else None,
            "headers": headers,
        }
        envelope = {"magic": "atMSG", "type": "DT", "messageSchemaId": "ID1", "message": message}
        lines.append(json.dumps({**envelope, "headers": None}, ensure_ascii=False))
    return "".join(line + "\n" for line in lines).encode()


@pytest.mark.parametrize("masks", [("", ""), ("0001", "3FF"), ("01", "3FE")])
def test_values_of_every_type_read_as_the_reference_reads_them(masks):
    """Integers beyond 2**63, NUMERIC text and integers, floats in a REAL8 column, text of
    other types, booleans, dates and timestamps, hex; absent keys and columnMask bits."""
    data = typed_dump(masks)
    fast, reference = both(data, "T-0-00000000000000000000.jsonl", typed_catalog(), final=True)
    if reference.rejects:
        assert fast is None
    else:
        assert fast is not None
        assert_same(fast, reference)


#: Values of one JSON type per Replicate type, as ``pyarrow.json`` reads a column.
ARROW_VALUES = {
    ("INT4", 0): [1, -7, 0, 12, 2**62],
    ("NUMERIC", 2): ["1.50", "-0.00", "7", "12.5"],
    ("REAL8", 0): [1.5, -2.5e-07, 3.0, 1e300, 0.1],
    ("STRING", 0): ["a", "", "東京", "x,y"],
    ("BOOLEAN", 0): [True, False],
    ("DATE", 0): ["2024-02-29", "1999-12-31"],
    ("DATETIME", 0): ["2024-01-01 00:00:00.123456", "2024-01-01T10:00:00"],
}


def test_the_arrow_walk_tells_a_missing_key_from_a_null_value():
    """``pyarrow.json`` reads a missing key and a null value alike: the walk that reads a
    dump with it looks the key up where a value is null. Messages with values of one JSON type
    a column, nulls and missing keys in ``data`` and ``beforeData``: that walk reads them with
    the reference's rows."""
    catalog = KafkaCatalog()
    catalog.add_columns(
        [column("K", "INT4", 1, key=1)]
        + [column(f"C{n}", kind, n + 2, scale) for n, (kind, scale) in enumerate(ARROW_VALUES)]
    )
    lines = []
    for row in range(12):
        data = {"K": row}
        for n, values in enumerate(ARROW_VALUES.values()):
            if (row + n) % 4 == 1:
                continue  # a missing key: an absent column
            data[f"C{n}"] = None if (row + n) % 4 == 2 else values[row % len(values)]
        before = dict(list(data.items())[: 1 + row % 5]) if row % 2 else None
        headers = {
            "operation": "UPDATE" if before else "INSERT",
            "changeSequence": f"{row + 1:035d}",
            "timestamp": "2024-05-09T10:56:30.490",
            "transactionId": "00FF",
            "transactionEventCounter": 1,
            "transactionLastEvent": True,
        }
        message = {"data": data, "beforeData": before, "headers": headers}
        lines.append(
            json.dumps(
                {"magic": "atMSG", "type": "DT", "messageSchemaId": "ID1", "message": message}
            )
        )
    dump = "".join(line + "\n" for line in lines).encode()
    name = "T-0-00000000000000000000.jsonl"
    context = (dump, name, catalog, {}, 0, 0, True)
    arrow = columnar._walk(columnar._ArrowJsonWalk, context, dict(columnar.ref.DEFAULT_OPTIONS))
    _fast, reference = both(dump, name, catalog, final=True)
    assert arrow is not None and not reference.rejects
    assert_same(arrow, reference)
    absent = [r for r in reference.rows if "C0" not in r["data"]]
    nulls = [r for r in reference.rows if "C0" in r["data"] and r["data"]["C0"] is None]
    assert absent and nulls


def test_what_the_fast_path_leaves_to_the_reference():
    """A number with a fraction in a NUMERIC column (``json`` reads a Decimal, orjson a
    float), a message the reference rejects, a metadata message after data, JSON orjson
    refuses, a nested value: the whole dump declines."""
    name = "T-0-00000000000000000000.jsonl"
    good = typed_dump()
    assert both(good, name, typed_catalog(), final=True)[0] is not None
    lines = good.split(b"\n")
    for bad in (
        lines[0].replace(b'"C2": "1.50"', b'"C2": 1.5'),
        lines[0].replace(b'"INSERT"', b'"MERGE"'),
        lines[0].replace(b'"C6": "2024-02-29"', b'"C6": "2024-02-30"'),
        lines[0].replace(b'"C0": 1', b'"C0": NaN'),
        lines[0].replace(b'"C4": "a"', b'"C4": {"x": 1}'),
        b'{"magic": "atMSG", "type": "MD", "message": {}}',
    ):
        dump = b"\n".join([lines[1], bad, *lines[2:]])
        assert both(dump, name, typed_catalog(), final=True)[0] is None, bad
    assert both(good, name.replace(".jsonl", ".lpv"), typed_catalog(), final=True)[0] is None


def test_a_fast_path_that_fails_leaves_the_dump_to_the_reference(monkeypatch, simulated_json):
    """A bug of the fast path (an exception) costs speed, never the dump's rows."""
    name, data = simulated_json[0]

    def failing(*args, **kwargs):
        raise IndexError("a bug")

    monkeypatch.setattr(columnar, "decode_or_decline", failing)
    catalog = scanned(data, name)
    context = {"kafka_catalog": catalog, "options": {}}
    result = spec.decode(data, FileToDecode(name, context, 0, 0, None, True, True))
    assert result.rows and result.table is None
    assert result.fast_path_fallback == "IndexError: a bug"
    assert_same(result, decode_dump_file(data, file_name=name, catalog=scanned(data, name)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_damaged_dumps_decode_the_same_by_both_paths(simulated_json, data):
    """Bytes flipped, cut or inserted anywhere in a simulated dump, lines of random text: the
    fast path declines or gives what the reference gives, and so does staging's decode."""
    name, source = simulated_json[data.draw(st.integers(0, len(simulated_json) - 1))]
    raw = fast_paths.damaged(source[:6000], data, ("flip", "cut", "insert", "line"), 3)
    final = data.draw(st.booleans())
    catalog = scanned(simulated_json[0][1], simulated_json[0][0])
    fast, reference = both(raw, name, catalog, final=final)
    if fast is not None:  # an exception of the fast path fails the test here
        assert_same(fast, reference)
    context = {"kafka_catalog": catalog, "options": {}}
    staged, reference = (
        spec.decode(raw, FileToDecode(name, context, 0, 0, None, final, c)) for c in (True, False)
    )
    assert_same(staged, reference)
