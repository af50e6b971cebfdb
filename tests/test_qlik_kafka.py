import json
import struct
from pathlib import Path

import fastavro
import pytest

from python_udfs.qlik_kafka.decoder import KafkaCatalog, decode_dump_file, scan_metadata
from python_udfs.records import MetadataColumn
from simulator.qlik_kafka import fastavro_bytes

EMPLOYEES = "qlik_kafka/employees_salaries_md_and_refresh.jsonl"
ITEM_MASTER = "qlik_kafka/item_master_update_16_columns.jsonl"
TOPIC_TABLES = {"employees_salaries_md_and_refresh": "employees.salaries"}


def decode(data, name, options=None, catalog=None, **kw):
    catalog = catalog or KafkaCatalog()
    catalog.add_columns(scan_metadata(data, file_name=name))
    return decode_dump_file(data, file_name=name, catalog=catalog, options=options or {}, **kw)


def test_item_master_update_has_both_images_and_the_mask_columns(samples):
    result = decode(
        (samples / ITEM_MASTER).read_bytes(),
        "item_master_update_16_columns.jsonl",
        {"topic_tables": {"item_master_update_16_columns": "SAPTM.ITEM_MASTER"}},
    )
    assert result.rejects == []
    (row,) = result.rows
    assert row["operation"] == "UPDATE"
    assert row["change_sequence"] == "20230321213416580000000000000000017"
    assert row["timestamp"] == "2023-03-21 21:34:19.511000"
    assert row["transaction_id"] == "0000000066DA0202A903000000000000"
    assert row["transaction_event_counter"] == 1 and row["transaction_last_event"] is True
    assert len(row["data"]) == 16 and len(row["before_data"]) == 16
    changed = [row["column_names"][b] for b in (7, 15)]
    assert (row["change_mask"], row["column_mask"]) == ("008080", "00FFFF")
    assert changed == ["item_desc", "load_date_time"]
    assert row["data"]["item_desc"] == "RIVET 3/16 POPR FENDER"
    assert row["data"]["itm_ord_mod_cd"] == ""  # empty string, not null
    assert row["before_data"]["item_desc"] == "KAFKA UPD FOR TESTING"
    assert "load_date_time" in row["before_data"] and row["before_data"]["load_date_time"] is None


def test_missing_transaction_fields_are_allowed_or_rejected_as_the_option_says(samples):
    """formats/qlik_kafka_messages.md, option missing_transaction_fields: the real UPDATE
    without its transactionEventCounter and transactionLastEvent headers (as 2018-era
    messages are) decodes by default (allow) and is one reject naming them with reject; the
    real message, which has both, decodes either way."""
    options = {"topic_tables": {"item_master_update_16_columns": "SAPTM.ITEM_MASTER"}}
    line = json.loads((samples / ITEM_MASTER).read_bytes())
    headers = line["message"]["headers"]
    assert {"transactionEventCounter", "transactionLastEvent"} <= set(headers)
    name = "item_master_update_16_columns.jsonl"
    real = json.dumps(line).encode() + b"\n"
    del headers["transactionEventCounter"], headers["transactionLastEvent"]
    bare = json.dumps(line).encode() + b"\n"
    reject = {**options, "missing_transaction_fields": "reject"}
    assert [r["operation"] for r in decode(bare, name, options).rows] == ["UPDATE"]
    assert [r["operation"] for r in decode(real, name, reject).rows] == ["UPDATE"]
    result = decode(bare, name, reject)
    assert result.rows == [] and [r.reason for r in result.rejects] == [
        "missing_transaction_fields"
    ]
    assert "transactionEventCounter, transactionLastEvent" in result.rejects[0].message


def test_item_master_without_any_metadata_is_rejected(samples):
    result = decode((samples / ITEM_MASTER).read_bytes(), "item_master_update_16_columns.jsonl")
    assert result.rows == [] and [r.reason for r in result.rejects] == ["no_metadata"]


def test_employees_md_then_refresh_row(samples):
    data = (samples / EMPLOYEES).read_bytes()
    result = decode(data, "employees_salaries_md_and_refresh.jsonl", {"topic_tables": TOPIC_TABLES})
    assert result.rejects == []
    keys = {c.column_name: c.primary_key_position for c in result.metadata}
    assert keys == {"emp_no": 1, "salary": 0, "from_date": 2, "to_date": 0}
    assert {c.schema_id for c in result.metadata} == {"94345778F0A920B9F6634C541177EBB2"}
    (row,) = result.rows
    assert row["operation"] == "REFRESH" and row["change_sequence"] is None
    assert row["data"] == {
        "emp_no": "14472",
        "salary": "49592",
        "from_date": "1993-11-25",
        "to_date": "1994-11-25",
    }
    assert (row["source_schema"], row["source_table"], row["record_index"]) == (
        "employees",
        "salaries",
        2,
    )


def test_employees_refresh_without_mapping_is_rejected_with_its_schema_id(samples):
    data = (samples / EMPLOYEES).read_bytes()
    result = decode(data, "employees_salaries_md_and_refresh.jsonl")
    (rej,) = result.rejects
    # the message says what the topic is and how to map it (issue 16)
    assert rej.message.startswith(
        "no metadata for schemaId 8FB9D3C10EA4B25751DF9CC8318F0A02, and topic "
        "'employees_salaries_md_and_refresh' is mapped to no table"
    )
    assert "options.topic_tables (employees_salaries_md_and_refresh: SCHEMA.TABLE)" in rej.message
    assert rej.record_index == 2 and data[rej.offset :].startswith(b'{"magic"')


def _md_line(samples):
    return (samples / EMPLOYEES).read_bytes().splitlines()[0]


def _data_record(samples):
    md = json.loads(_md_line(samples))["message"]
    schema = fastavro.parse_schema(json.loads(md["dataSchema"]))
    record = {
        "data": {
            "emp_no": 14472,
            "salary": 49592,
            "from_date": "1993-11-25",
            "to_date": "1994-11-25",
        },
        "beforeData": None,
        "headers": {
            "operation": "REFRESH",
            "changeSequence": "",
            "timestamp": "",
            "streamPosition": "",
            "transactionId": "",
            "changeMask": None,
            "columnMask": None,
        },
    }
    return md, fastavro_bytes(schema, record)


def _dt_envelope(samples):
    """An Avro envelope of one data message (formats/qlik_kafka_messages.md)."""
    md, payload = _data_record(samples)
    assert len(payload) == 40
    return (
        b"atMSG"
        + b"\x04DT"
        + b"\x00"
        + b"\x02\x40"
        + md["schemaId"].encode()
        + b"\x00"
        + bytes([len(payload) * 2])
        + payload
    )


def test_avro_envelope_frame_of_the_formats_page(samples):
    envelope = _dt_envelope(samples)
    assert len(envelope) == 85
    dump = _md_line(samples) + b"\n"
    catalog = KafkaCatalog()
    catalog.add_columns(scan_metadata(dump, file_name="t-0-00000000000000000000.jsonl"))
    result = decode_dump_file(
        struct.pack(">I", 85) + envelope, file_name="t-0-00000000000000000000.lpv", catalog=catalog
    )
    assert result.rejects == []
    (row,) = result.rows
    assert row["value_format"] == "avro_envelope" and row["operation"] == "REFRESH"
    assert row["data"] == {
        "emp_no": "14472",
        "salary": "49592",
        "from_date": "1993-11-25",
        "to_date": "1994-11-25",
    }


def test_the_metadata_pass_reads_the_md_values_of_a_length_prefixed_dump(samples):
    """MD text among Avro data envelopes is found; a dump of data envelopes holds none."""
    md, dt = _md_line(samples), _dt_envelope(samples)

    def framed(*values):
        return b"".join(struct.pack(">I", len(v)) + v for v in values)

    def declared(columns):
        return [(c.source_table, c.column_name, c.ordinal, c.record_index) for c in columns]

    in_lines = scan_metadata(b"x\n" + md + b"\n", file_name="t-0-00000000000000000000.jsonl")
    in_frames = scan_metadata(framed(dt, md, dt), file_name="t-0-00000000000000000000.lpv")
    assert declared(in_frames) == declared(in_lines) and len(in_frames) == 4
    assert scan_metadata(framed(dt, dt, dt), file_name="t-0-00000000000000000000.lpv") == []


def test_confluent_wire_format_with_a_schema_file(samples):
    md, payload = _data_record(samples)
    value = b"\x00\x00\x00\x00\x2a" + payload
    catalog = KafkaCatalog()
    catalog.add_columns(scan_metadata(_md_line(samples) + b"\n", file_name="x.jsonl"))
    frames = struct.pack(">I", len(value)) + value + b"\xff\xff\xff\xff"
    result = decode_dump_file(
        frames,
        file_name="salaries-0-00000000000000000000.lpv",
        catalog=catalog,
        registry_schemas={42: md["dataSchema"]},
        options={"topic_tables": {"salaries": "employees.salaries"}},
    )
    assert result.rejects == [] and result.rows[0]["value_format"] == "confluent"
    assert result.warnings == ["1 tombstone value(s) skipped"]
    unknown = decode_dump_file(
        b"\x00\x00\x00\x05" + b"\x00\x00\x00\x00\x07",
        file_name="salaries-0-00000000000000000000.lpv",
        catalog=catalog,
        options={"topic_tables": {"salaries": "employees.salaries"}},
    )
    assert unknown.rejects[0].message == "no schema for id 7"


def test_confluent_framing_off_reads_a_leading_zero_byte_as_part_of_the_record(samples):
    """formats/qlik_kafka_messages.md, option confluent_framing: with off, a value starting
    with 0x00 is not a registry id and its 5 bytes: it is a bare Avro DataRecord of the
    topic's table. The same framed value that decodes as Confluent by default is then an Avro
    decode error (bytes left over), and the bare record decodes."""
    md, payload = _data_record(samples)
    catalog = KafkaCatalog()
    catalog.add_columns(scan_metadata(_md_line(samples) + b"\n", file_name="x.jsonl"))
    options = {"topic_tables": {"salaries": "employees.salaries"}, "confluent_framing": "off"}

    def run(value):
        return decode_dump_file(
            struct.pack(">I", len(value)) + value,
            file_name="salaries-0-00000000000000000000.lpv",
            catalog=catalog,
            registry_schemas={42: md["dataSchema"]},
            options=options,
        )

    framed = run(b"\x00\x00\x00\x00\x2a" + payload)
    assert framed.rows == [] and [r.reason for r in framed.rejects] == ["avro_decode_error"]
    bare = run(payload)
    assert bare.rejects == [] and bare.rows[0]["value_format"] == "avro"


def test_envelope_option_requires_or_refuses_the_replicate_envelope(samples):
    """formats/qlik_kafka_messages.md, option envelope: the real UPDATE comes in the
    Replicate envelope and its message can come bare. auto reads both; required refuses the
    bare one and absent the enveloped one (a bad_envelope reject each)."""
    options = {"topic_tables": {"item_master_update_16_columns": "SAPTM.ITEM_MASTER"}}
    name = "item_master_update_16_columns.jsonl"
    enveloped = (samples / ITEM_MASTER).read_bytes()
    bare = json.dumps(json.loads(enveloped)["message"]).encode() + b"\n"
    expected = {
        "auto": ("UPDATE", "UPDATE"),
        "required": ("UPDATE", "bad_envelope"),
        "absent": ("bad_envelope", "UPDATE"),
    }
    for mode, outcomes in expected.items():
        got = []
        for data in (enveloped, bare):
            result = decode(data, name, {**options, "envelope": mode})
            got.append(result.rows[0]["operation"] if result.rows else result.rejects[0].reason)
        assert tuple(got) == outcomes, mode


def test_metadata_source_takes_md_messages_the_catalog_seed_or_nothing(samples):
    """formats/qlik_kafka_messages.md, option metadata_source. The real dump holds an MD
    message, then a REFRESH of its table. in_dump types the row by the MD message (its table
    version); catalog_file and none leave the MD message to raw_metadata only: with an empty
    seed catalog the row's columns come from its data keys, with a warning. The decoder
    context of a feed takes the seed's and the dumps' columns (in_dump), the seed's only
    (catalog_file) or none."""
    from python_udfs.config import FeedConfig
    from python_udfs.qlik_kafka.spec import decoder_context

    data = (samples / EMPLOYEES).read_bytes()
    name = "employees_salaries_md_and_refresh.jsonl"
    rows = {}
    for source in ("in_dump", "catalog_file", "none"):
        result = decode_dump_file(
            data,
            file_name=name,
            catalog=KafkaCatalog(),
            options={"topic_tables": TOPIC_TABLES, "metadata_source": source},
        )
        assert result.rejects == [] and len(result.metadata) == 4, source
        rows[source] = (result.rows[0]["table_version"], result.warnings)
    assert rows["in_dump"][0] is not None
    assert not any("column order from data keys" in w for w in rows["in_dump"][1])
    for source in ("catalog_file", "none"):
        assert rows[source][0] is None
        assert any("column order from data keys" in w for w in rows[source][1]), source

    md = scan_metadata(data, file_name=name)
    seed = [
        MetadataColumn("S", "SEEDED", None, "ID", 1, "INT4", None, None, None, 1, False, "seed")
    ]
    config = type("Config", (), {"table_identifiers": {}})()
    tables = {}
    for source in ("in_dump", "catalog_file", "none"):
        feed = FeedConfig("k", "qlik_kafka", Path("."), {"metadata_source": source})
        context = decoder_context(feed, config, {("k", "S", "SEEDED"): seed}, md)
        tables[source] = {t for _s, t in context["kafka_catalog"].by_table}
    assert tables == {
        "in_dump": {"SEEDED", "salaries"},
        "catalog_file": {"SEEDED"},
        "none": set(),
    }


def _three_column_catalog():
    catalog = KafkaCatalog()
    catalog.add_columns(
        [
            MetadataColumn(
                "S", "T", 1, name, i, kind, None, None, None, key, True, "kafka_md", schema_id="ID1"
            )
            for i, (name, kind, key) in enumerate(
                [("A", "INT4", 1), ("B", "STRING", 0), ("C", "STRING", 0)], start=1
            )
        ]
    )
    return catalog


def _dt(headers, data, before=None):
    base = {
        "operation": "UPDATE",
        "changeSequence": "2" * 35,
        "timestamp": "2024-01-01T00:00:00",
        "streamPosition": "",
        "transactionId": "T1",
    }
    return json.dumps(
        {
            "magic": "atMSG",
            "type": "DT",
            "headers": None,
            "messageSchemaId": "ID1",
            "messageSchema": None,
            "message": {"data": data, "beforeData": before, "headers": {**base, **headers}},
        }
    ).encode()


def test_column_mask_makes_columns_absent_not_null():
    line = _dt({"columnMask": "05", "changeMask": "04"}, {"A": 1, "B": None, "C": "x"})
    result = decode_dump_file(
        line + b"\n", file_name="t-0-00000000000000000000.jsonl", catalog=_three_column_catalog()
    )
    assert result.rejects == []
    assert result.rows[0]["data"] == {"A": "1", "C": "x"}


def test_ordinal_source_data_key_order_reads_masks_in_the_order_of_the_data_keys():
    """formats/qlik_kafka_messages.md, option ordinal_source: by default a mask bit indexes
    the MD ordinals (A, B, C); with data_key_order, the order of the message's data keys
    (C, B, A here), so columnMask 05 keeps C and A either way and changeMask 01 names A by
    default and C with the option."""
    line = _dt({"columnMask": "05", "changeMask": "01"}, {"C": "x", "B": None, "A": 1})
    rows = {}
    for source in ("metadata", "data_key_order"):
        result = decode_dump_file(
            line + b"\n",
            file_name="t-0-00000000000000000000.jsonl",
            catalog=_three_column_catalog(),
            options={"ordinal_source": source},
        )
        assert result.rejects == [], source
        rows[source] = result.rows[0]
    assert rows["metadata"]["column_names"] == ["A", "B", "C"]
    assert rows["data_key_order"]["column_names"] == ["C", "B", "A"]
    assert rows["metadata"]["data"] == rows["data_key_order"]["data"] == {"A": "1", "C": "x"}


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (_dt({"changeMask": "0100"}, {"A": 1, "B": "b", "C": "c"}), "mask_longer_than_columns"),
        (_dt({"columnMask": "06"}, {"B": "b", "C": "c"}), "key_column_not_present"),
        (
            _dt({"columnMask": "03", "changeMask": "04"}, {"A": 1, "B": "b"}),
            "changed_column_absent",
        ),
        (_dt({"operation": "MERGE"}, {"A": 1}), "unknown_operation"),
        (_dt({"changeSequence": "123"}, {"A": 1}), "bad_change_sequence"),
        (_dt({}, None), "no_after_image"),
        (_dt({}, {"A": "12a"}), "bad_value"),
        (_dt({}, {"A": 1, "Z": 2}), "unknown_column"),
        (b'{"magic": "atMSG", "type": "DT", "message": {"data": {', "invalid_json"),
        (b"[1, 2]", "invalid_json"),
        (b"", "empty_value"),
    ],
)
def test_bad_lines_are_rejected_and_the_next_line_still_lands(line, reason):
    good = _dt({"changeSequence": "3" * 35}, {"A": 2, "B": "b", "C": "c"})
    data = line + b"\n" + good + b"\n"
    result = decode_dump_file(
        data, file_name="t-0-00000000000000000000.jsonl", catalog=_three_column_catalog()
    )
    assert [r.reason for r in result.rejects] == [reason]
    assert result.rejects[0].offset == 0 and result.rejects[0].record_index == 1
    assert [r["data"]["A"] for r in result.rows] == ["2"]


def test_avro_value_that_does_not_match_its_schema(samples):
    md, payload = _data_record(samples)
    catalog = KafkaCatalog()
    catalog.add_columns(scan_metadata(_md_line(samples) + b"\n", file_name="x.jsonl"))
    bad = fastavro_bytes(fastavro.parse_schema({"type": "string"}), "not a record")
    env = fastavro_bytes(
        fastavro.parse_schema(
            __import__("python_udfs.qlik_kafka.decoder", fromlist=["x"]).ENVELOPE_SCHEMA
        ),
        {
            "magic": b"atMSG",
            "type": "DT",
            "headers": None,
            "messageSchemaId": md["schemaId"],
            "messageSchema": None,
            "message": bad + payload,
        },
    )
    good = fastavro_bytes(
        fastavro.parse_schema(
            __import__("python_udfs.qlik_kafka.decoder", fromlist=["x"]).ENVELOPE_SCHEMA
        ),
        {
            "magic": b"atMSG",
            "type": "DT",
            "headers": None,
            "messageSchemaId": md["schemaId"],
            "messageSchema": None,
            "message": payload,
        },
    )
    data = struct.pack(">I", len(env)) + env + struct.pack(">I", len(good)) + good
    result = decode_dump_file(data, file_name="t-0-00000000000000000000.lpv", catalog=catalog)
    assert [r.reason for r in result.rejects] == ["avro_decode_error"]
    assert result.rejects[0].offset == 0
    assert len(result.rows) == 1 and result.rows[0]["record_offset"] == 4 + len(env)


def test_truncated_frame_and_growing_files():
    frame = struct.pack(">I", 3) + b"abc"
    partial = frame + b"\x00\x00\x01\x00" + b"x" * 10
    pending = decode_dump_file(partial, file_name="t-0-00000000000000000000.lpv")
    assert pending.consumed_end == len(frame)  # the incomplete frame is left for the next run
    final = decode_dump_file(
        partial, file_name="t-0-00000000000000000000.lpv", options={"incomplete_tail": "reject"}
    )
    assert final.rejects[-1].reason == "truncated_frame" and final.rejects[-1].offset == len(frame)
    lines = _dt({}, {"A": 1, "B": "b", "C": "c"}) + b"\n" + b'{"magic": "atMSG"'
    growing = decode_dump_file(
        lines, file_name="t-0-00000000000000000000.jsonl", catalog=_three_column_catalog()
    )
    assert (
        growing.rejects == []
        and len(growing.rows) == 1
        and growing.consumed_end == lines.index(b"\n") + 1
    )


def test_an_md_message_delivered_twice_declares_each_column_once(samples):
    dump = _md_line(samples) + b"\n"
    once, twice = KafkaCatalog(), KafkaCatalog()
    once.add_columns(scan_metadata(dump, file_name="t-0-00000000000000000000.jsonl"))
    twice.add_columns(scan_metadata(dump + dump, file_name="t-0-00000000000000000000.jsonl"))
    assert len(scan_metadata(dump + dump, file_name="t.jsonl")) == 2 * len(
        scan_metadata(dump, file_name="t.jsonl")
    )
    assert [c.column_name for c in twice.by_table[("employees", "salaries")].columns] == [
        c.column_name for c in once.by_table[("employees", "salaries")].columns
    ]


DATA_RECORD = {
    "type": "record",
    "name": "DataRecord",
    "fields": [
        {"name": "data", "type": {"type": "map", "values": ["null", "string"]}},
        {
            "name": "headers",
            "type": {
                "type": "record",
                "name": "Headers",
                "fields": [
                    {"name": "operation", "type": "string"},
                    {"name": "changeSequence", "type": "string"},
                    {"name": "timestamp", "type": "string"},
                    {"name": "transactionId", "type": "string"},
                ],
            },
        },
    ],
}


@pytest.mark.parametrize("codec", ["null", "deflate"])
def test_a_corrupt_avro_block_is_rejected_and_reading_resumes_at_the_next_sync_marker(codec):
    """formats/qlik_kafka_messages.md, bad input: a corrupt block of an object container is
    rejected up to its sync marker and the blocks after it still land (issue 13)."""
    import io

    records = [
        {
            "data": {"K": str(n), "V": f"value {n}"},
            "headers": {
                "operation": "INSERT",
                "changeSequence": f"2024010100000000000000000000000000{n}",
                "timestamp": "2024-01-01 00:00:00",
                "transactionId": f"T{n}",
            },
        }
        for n in range(1, 7)
    ]
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(DATA_RECORD), records, codec=codec, sync_interval=1)
    data = bytearray(out.getvalue())
    options = {"topic_tables": {"orders": "S.T"}}
    whole = decode(bytes(data), "orders-0-00000000000000000000.avro", options)
    assert not whole.rejects and [r["data"]["K"] for r in whole.rows] == list("123456")
    blocks = sorted({r["record_offset"] for r in whole.rows})
    assert len(blocks) == 6  # one record a block
    third, fourth = blocks[2], blocks[3]
    data[third + 4 : fourth - 16] = b"\xff" * (fourth - 16 - third - 4)  # its body, not its sync
    result = decode(bytes(data), "orders-0-00000000000000000000.avro", options)
    assert [r["data"]["K"] for r in result.rows] == ["1", "2", "4", "5", "6"]
    assert [(r.offset, r.length) for r in result.rejects] == [(third, fourth - third)]


def test_json_nested_too_deeply_is_a_reject_not_a_crash():
    """issue 14: a line nested 100,000 levels deep once stopped the whole run (RecursionError in
    the metadata pre-pass); it is one reject and the line after it still lands."""
    hostile = b'{"magic": "atMSG", "type": "MD", "message": ' + b"[" * 100_000 + b"]" * 100_000
    good = (
        b'{"magic": "atMSG", "type": "DT", "headers": null, "messageSchemaId": null, '
        b'"messageSchema": null, "message": {"data": {"K": "1"}, "beforeData": null, "headers": '
        b'{"operation": "INSERT", "changeSequence": "20240101000000000000000000000000001", '
        b'"timestamp": "2024-01-01T00:00:00", "streamPosition": "", "transactionId": "AA"}}}'
    )
    data = hostile + b"}\n" + good + b"\n"
    result = decode(
        data, "orders-0-00000000000000000000.jsonl", {"topic_tables": {"orders": "S.T"}}
    )
    assert [r.reason for r in result.rejects] == ["invalid_json"]
    assert [r["data"] for r in result.rows] == [{"K": "1"}]


def test_a_dump_is_final_once_a_later_dump_of_its_partition_exists(tmp_path):
    """issue 14: Kafka dumps were never final, so a broken frame held the frames after it
    forever and a last line without a newline stayed pending. A later dump of the same topic
    partition makes a dump final: a broken frame is one reject and the frames after it are read
    again where they chain to the end of the file; a broken tail is one reject; its last line
    is a message."""
    from python_udfs.qlik_kafka.spec import superseded_dumps

    names = [
        "t-0-00000000000000000000.lpv",
        "t-0-00000000000000000010.lpv",
        "t-1-00000000000000000000.lpv",
        "u-0-00000000000000000000.jsonl",
        "item_master_update_16_columns.jsonl",
    ]
    paths = [tmp_path / n for n in names]
    assert superseded_dumps(paths) == {paths[0]}

    message = _dt({}, {"A": 1, "B": "b", "C": "c"})
    frame = struct.pack(">I", len(message)) + message
    corrupt = frame + struct.pack(">I", 10**9) + frame * 10  # a length corrupted mid-file
    held = decode_dump_file(
        corrupt, file_name=names[0], catalog=_three_column_catalog(), final=False
    )
    assert len(held.rows) == 1 and not held.rejects and held.consumed_end == len(frame)
    final = decode_dump_file(
        corrupt, file_name=names[0], catalog=_three_column_catalog(), final=True
    )
    # the 4 corrupted length bytes are one reject; the 10 frames after them chain to the end
    # of the file and are read from there (resynchronisation)
    assert len(final.rows) == 11
    assert [(r.offset, r.offset + r.length, r.reason) for r in final.rejects] == [
        (len(frame), len(frame) + 4, "bad_framing")
    ]
    garbage = frame + struct.pack(">I", 10**9) + b"\x07" * 50  # nothing chains after it
    rest = decode_dump_file(
        garbage, file_name=names[0], catalog=_three_column_catalog(), final=True
    )
    assert [(r.offset, r.offset + r.length, r.reason) for r in rest.rejects] == [
        (len(frame), len(garbage), "truncated_frame")
    ]
    no_newline = message + b"\n" + message
    last = decode_dump_file(
        no_newline, file_name=names[3], catalog=_three_column_catalog(), final=True
    )
    assert len(last.rows) == 2 and last.consumed_end == len(no_newline)
