"""Linkexpress extract decoder: hand-built records of every layout (hex written here, after the
seed's field order), the formats page's vectors, simulator round trips over every layout ×
LOGTYPE × byte order, and fuzzing (formats/linkexpress_extract.md, *Test vectors*)."""

from __future__ import annotations

import collections
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from python_udfs.linkexpress_extract import columnar
from python_udfs.linkexpress_extract.decoder import decode_extract_file as reference_decode
from python_udfs.linkexpress_extract.decoder import file_table_for
from python_udfs.records import MetadataColumn
from simulator.database import JP_TABLES, seed_catalog, simulate, tables_for
from simulator.linkexpress_extract import lx_record, write_extracts
from tests.fast_paths import assert_same

ORDERS = ("S", "ORDERS")
#: How many files the tests of this module decoded, and how many of them took the fast path.
FAST_PATH_TAKEN = collections.Counter()


def decode_extract_file(data, **kwargs):
    """The reference decoder, checked against the fast path on every file a test decodes.

    Issue 47: where the fast path (``columnar.decode_columnar``) reads a file, it must give the
    reference's rows, rejects and warnings exactly.
    """
    reference = reference_decode(data, **kwargs)
    fast = columnar.decode_columnar(data, **kwargs)
    FAST_PATH_TAKEN["files"] += 1
    if fast is not None:
        FAST_PATH_TAKEN["fast"] += 1
        assert_same(fast, reference, "raw_linkexpress_extract")
    return reference


def col(name, ordinal, source_type, length=None, precision=None, scale=None, key=0):
    return MetadataColumn(
        "S", "ORDERS", None, name, ordinal, source_type, length, precision, scale, key, True, "test"
    )


#: ORDERS(ID INTEGER, NAME VARCHAR(6), PRICE DECIMAL(5,2), QTY NUMERIC(3,0), SHIP_DATE DATE)
CATALOG = {
    ORDERS: [
        col("ID", 1, "INTEGER", key=1),
        col("NAME", 2, "VARCHAR", 6),
        col("PRICE", 3, "DECIMAL", precision=5, scale=2),
        col("QTY", 4, "NUMERIC", precision=3, scale=0),
        col("SHIP_DATE", 5, "DATE"),
    ]
}
h = bytes.fromhex
# The worked example: layout A, NORMAL, big-endian, 34-byte records.
RECORD_1 = h("00010000 0000002A0000 0003 4142432020200000 12345CFFFF 0000000000 07E70B15")
RECORD_2 = h("00030000 000000070000 0002 5859202020200000 00050D0000 3031300000 07E8021D")
ROW_1 = {"ID": "42", "NAME": "ABC", "PRICE": "123.45", "QTY": None, "SHIP_DATE": "2023-11-21"}
ROW_2 = {"ID": "7", "NAME": "XY", "PRICE": "-0.50", "QTY": "10", "SHIP_DATE": "2024-02-29"}


def decode(data, file_name="X", **options):
    unit = options.get("unit", "table")
    return decode_extract_file(
        data,
        file_name=file_name,
        catalog=CATALOG,
        extraction_ids={3: ORDERS},
        file_table=ORDERS if unit == "table" else None,
        options=options,
    )


def test_worked_example_layout_a_normal():
    result = decode(RECORD_1 + RECORD_2)
    assert result.rejects == []
    first, second = result.rows
    assert (first["operation_name"], first["record_index"], first["record_offset"]) == (
        "INSERT",
        1,
        0,
    )
    assert first["data"] == ROW_1 and (first["layout"], first["logtype"]) == ("A", "NORMAL")
    assert (second["operation_name"], second["record_offset"], second["data"]) == (
        "DELETE",
        34,
        ROW_2,
    )
    assert first["transaction_id"] == second["transaction_id"] == "X:000000000002"
    assert (first["is_transaction_end"], second["is_transaction_end"]) == (False, True)


def test_hand_built_record_of_each_layout():
    # A, LITTLE: [len 35][op 0002] items in compact form (VARCHAR without padding).
    a = decode(
        h("00000023 0002 0000 0000002A 0000 0003 414243 0000 12500C 0000 303038 0000 07E70B16")
    )
    assert a.rows[0]["data"] == {
        "ID": "42",
        "NAME": "ABC",
        "PRICE": "125.00",
        "QTY": "8",
        "SHIP_DATE": "2023-11-22",
    }
    assert (a.rows[0]["operation_name"], a.rows[0]["logtype"], a.rows[0]["record_length"]) == (
        "UPDATE",
        "LITTLE",
        35,
    )
    # The same record with a length that does not count its own 4 bytes (31): record_length
    # is still the record's bytes in the file, so the next record starts there (a fuzzed
    # file once left the 4 bytes of such a record neither a row nor a reject).
    exclusive = h(
        "0000001F 0002 0000 0000002A 0000 0003 414243 0000 12500C 0000 303038 0000 07E70B16"
    )
    e = decode(exclusive + exclusive, record_length_basis="exclusive")
    assert [(r["record_offset"], r["record_length"]) for r in e.rows] == [(0, 35), (35, 35)]
    assert e.rows[0]["data"] == a.rows[0]["data"] and e.rejects == []
    # B, NORMAL: [op] items without null indicators (24 bytes).
    b = decode(h("0001 0000002A 0003 414243202020 12345C 303037 07E70B15"), null_indicators="no")
    assert b.rows[0]["layout"] == "B" and b.rows[0]["data"] == dict(ROW_1, QTY="7")
    # C (JNL): [len 42][valid count 6][op null 0000][op] + the 32 item bytes of record 1.
    c = decode(h("0000002A 0006 0000 0001") + RECORD_1[2:], difftype="jnl")
    assert c.rows[0]["layout"] == "C" and c.rows[0]["valid_column_count"] == 6
    assert c.rows[0]["data"] == ROW_1
    # D: [len 41][valid 7][extraction id 3][0000][op] LITTLE items, then a commit record.
    d = decode(
        h(
            "00000029 0007 0003 0000 0001 0000 0000002A 0000 0003 414243 0000 12345C 0000 303037 0000 07E70B15"
        )
        + h("0000000A 0001 0000 8000"),
        file_name="G",
        unit="group",
    )
    assert [r["operation_name"] for r in d.rows] == ["INSERT", "COMMIT"]
    assert (d.rows[0]["source_table"], d.rows[0]["extraction_id"]) == ("ORDERS", 3)
    assert d.rows[0]["data"] == dict(ROW_1, QTY="7") and d.rows[0]["transaction_id"] is None
    # E: [len 28][valid 7][id 3][op] LITTLE items without indicators, then [len 8][1][8000].
    e = decode(
        h("0000001C 0007 0003 0003 00000007 0002 5859 00050D 303130 07E8021D")
        + h("00000008 0001 8000"),
        unit="group",
    )
    assert e.rows[0]["layout"] == "E" and e.rows[0]["data"] == ROW_2
    assert e.rows[1]["operation_name"] == "COMMIT"


@pytest.mark.parametrize(
    ("data", "options", "expected"),
    [
        (h("FFFF"), {}, ("EMPTY_FULL_EXTRACT", "NORMAL", "big")),
        (h("00000006FFFF"), {}, ("EMPTY_FULL_EXTRACT", "LITTLE", "big")),
        (h("0A00000001000000 0080"), {"unit": "group"}, ("COMMIT", "NORMAL", "little")),
    ],
)
def test_markers_and_byte_order_detection(data, options, expected):
    result = decode(data, **options)
    assert result.rejects == []
    row = result.rows[0]
    assert (row["operation_name"], row["logtype"], row["byte_order"]) == expected


@pytest.mark.parametrize(
    ("data", "options", "rejects", "rows"),
    [
        (
            h("000000060004"),
            {"logtype": "little"},
            [(0, 6, "unknown_operation", "unknown operation 0x0004")],
            0,
        ),
        (
            h("00000029 0005 0003 0000 0001") + bytes(29),
            {"unit": "group", "logtype": "little"},
            [(0, 41, "bad_valid_count", "valid column count 5, expected 7")],
            0,
        ),
        (
            (RECORD_1 + RECORD_2)[:50],
            {},
            [(34, 16, "truncated_record", "truncated record at offset 34")],
            1,
        ),
        (
            RECORD_1[:20] + h("123A5C") + RECORD_1[23:] + RECORD_2,
            {"logtype": "normal"},
            [(0, 34, "bad_value", "invalid packed digit or sign")],
            1,
        ),
        (
            RECORD_1[:2] + h("1234") + RECORD_1[4:] + RECORD_2,
            {"logtype": "normal"},
            [(0, 34, "bad_null_indicator", "null indicator 1234")],
            1,
        ),
        (
            h("00000023 0002 0000 0000002A 0000 0003 414243 0000 12500C 0000 303038 0000 07E70B16")
            + h("00000099 0001"),
            {},
            [(35, 6, "bad_record_length", "overruns")],
            1,
        ),
        (
            RECORD_1 + RECORD_2 + h("FFFF"),
            {},
            [(68, 2, "empty_marker_among_rows", "empty-extract marker")],
            2,
        ),
    ],
)
def test_bad_records_become_rejects_with_their_offset(data, options, rejects, rows):
    result = decode(data, **options)
    got = [(r.offset, r.length, r.reason) for r in result.rejects]
    assert got == [r[:3] for r in rejects]
    for reject, (*_rest, message) in zip(result.rejects, rejects, strict=True):
        assert message in reject.message
    assert len(result.rows) == rows


def test_undecodable_text_is_a_reject_naming_the_column():
    bad = RECORD_1[:12] + h("81FF43202020") + RECORD_1[18:]
    result = decode(bad + RECORD_2, outcode="sjis", logtype="normal")
    assert [(r.offset, r.reason) for r in result.rejects] == [(0, "undecodable_bytes")]
    assert "NAME" in result.rejects[0].message and len(result.rows) == 1


def test_file_table_comes_from_the_glob_or_the_table_folder():
    tables = [ORDERS, ("HR", "EMPLOYEES")]
    assert file_table_for("feed/S.ORDERS/LX1.dat", {}, tables) == ORDERS
    assert file_table_for("feed/LX1.dat", {}, tables) is None
    assert file_table_for(
        "feed/x/FULL_E_1.dat", {"full_extract_tables": {"FULL_E_*": "HR.EMPLOYEES"}}, tables
    ) == (
        "HR",
        "EMPLOYEES",
    )
    result = decode_extract_file(RECORD_1, file_name="LX1.dat", catalog=CATALOG)
    assert [r.reason for r in result.rejects] == ["unknown_table"]


def jp_catalog():
    return seed_catalog("linkexpress_extract")


def _rows(nulls: bool):
    sim = simulate(seed=8, load_rows=10, transactions=20, tables=JP_TABLES)
    rows = []
    for change in sim.changes:
        image = change.after or change.before
        if not nulls:
            image = {k: v for k, v in image.items()}
            for c in change.table.columns:
                if image[c.name] is None:  # layouts B and E cannot carry NULL
                    image[c.name] = {"CITY": "東京", "NOTE": "", "SHIPPED_DATE": "2024-01-01"}.get(
                        c.name, "0.0" if c.lx_type == "DOUBLE PRECISION" else "1.00"
                    )
        op = {"LOAD": 0, "INSERT": 1, "UPDATE": 2, "DELETE": 3}[change.operation]
        rows.append((change.table, op, image))
    return rows


@pytest.mark.parametrize("layout", ["A", "B", "C", "D", "E"])
@pytest.mark.parametrize("logtype", ["normal", "little"])
@pytest.mark.parametrize("order", [">", "<"])
@pytest.mark.parametrize("outcode", ["sjis", "euc", "unicode"])
@pytest.mark.parametrize(
    "timestamp_layout,nvarchar_length_unit", [("ymdhms7", "characters"), ("ymdhms7_r4", "bytes")]
)
def test_simulated_files_round_trip_every_value(
    layout, logtype, order, outcode, timestamp_layout, nvarchar_length_unit
):
    catalog, ids = jp_catalog()
    rows = _rows(nulls=layout in "ACD")
    group = layout in "DE"
    filler = 4 if timestamp_layout == "ymdhms7_r4" else 0
    files: dict = collections.defaultdict(list)
    for table, op, image in rows:
        if layout == "C" and op == 0:
            continue  # a JNL file holds differential records only
        key = None if group else (table.schema, table.name)
        ext_id = [i for i, t in ids.items() if t == (table.schema, table.name)][0]
        files[key].append(
            (
                table,
                image,
                op,
                lx_record(
                    layout,
                    table.columns,
                    image,
                    op if not (group and op == 0) else 1,
                    little=logtype == "little",
                    order=order,
                    outcode=outcode,
                    extraction_id=ext_id,
                    timestamp_filler=filler,
                    nvarchar_bytes=nvarchar_length_unit == "bytes",
                ),
            )
        )
    if group:  # a group full extract per table: extraction id 0000, in the table's folder
        for table, op, image in rows:
            if op == 0:
                key = (table.schema, table.name)
                raw = lx_record(
                    layout,
                    table.columns,
                    image,
                    0,
                    little=logtype == "little",
                    order=order,
                    outcode=outcode,
                    extraction_id=0,
                    timestamp_filler=filler,
                    nvarchar_bytes=nvarchar_length_unit == "bytes",
                )
                files[key].append((table, image, op, raw))
    # no `unit` option: table or group unit is read from the records (issue 13); the
    # timestamp layout both ways: detected (auto) and declared
    options = {
        "difftype": "jnl" if layout == "C" else "open",
        "outcode": outcode,
        "nvarchar_length_unit": nvarchar_length_unit,
    }
    for key, records in files.items():
        data = b"".join(r[3] for r in records)
        if group and key is None:
            data += lx_record(layout, (), None, 0x8000, little=logtype == "little", order=order)
        result, declared = (
            decode_extract_file(
                data,
                file_name="F.dat",
                catalog=catalog,
                extraction_ids=ids,
                file_table=key,
                options={**options, **extra},
            )
            for extra in ({}, {"timestamp_layout": timestamp_layout})
        )
        assert declared.rows == result.rows and declared.rejects == result.rejects
        assert result.rejects == [], result.rejects[:2]
        decoded = [r for r in result.rows if r["operation_name"] != "COMMIT"]
        assert len(decoded) == len(records)
        for row, (table, image, _op, _raw) in zip(decoded, records, strict=True):
            assert row["layout"] == layout
            if any(c.lx_type in ("VARCHAR", "NCHAR VARYING") for c in table.columns):
                # without variable-length items NORMAL and LITTLE items are the same bytes
                assert row["logtype"].lower() == logtype
            assert row["byte_order"] == ("big" if order == ">" else "little")
            assert row["source_table"] == table.name and row["data"] == image


def test_a_group_extract_of_many_tables_names_each_record_s_table_by_its_extraction_id(tmp_path):
    # 40 tables (copies of the three, as the catalog benchmark uses): extraction ids 1..40 in
    # catalog order; every differential record decodes to the table and image simulated
    tables = tables_for("linkexpress_extract", 40)
    catalog, ids = seed_catalog("linkexpress_extract", tables_per_feed=40)
    assert sorted(ids) == list(range(1, 41)) and len(catalog) == 40
    sim = simulate(seed=3, load_rows=1, transactions=150, tables=tables, truncate_every=0)
    write_extracts(sim, tmp_path, {"chunks": 2}, tables)
    decoded = []
    for path in sorted(tmp_path.glob("LX*_D.dat")):  # the group's differential files
        result = decode_extract_file(
            path.read_bytes(), file_name=path.name, catalog=catalog, extraction_ids=ids
        )
        assert result.rejects == []
        decoded += [r for r in result.rows if r["operation_name"] != "COMMIT"]
    expected = [
        (c.table.name, c.after if c.operation != "DELETE" else c.before)
        for c in sim.changes
        if c.operation != "LOAD"  # the open transaction too: written, without its commit
    ]
    assert len({name for name, _ in expected}) > 30
    assert [(r["source_table"], r["data"]) for r in decoded] == expected


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzzed_files_never_raise_and_every_byte_is_a_row_or_a_reject(data):
    catalog, ids = jp_catalog()
    layout = data.draw(st.sampled_from(["A", "D"]))
    little = data.draw(st.booleans())
    rng = random.Random(data.draw(st.integers(0, 1000)))
    rows = [r for r in _rows(nulls=True) if layout == "D" or r[0] is JP_TABLES[0]]
    raw = bytearray()
    for table, op, image in rng.sample(rows, min(len(rows), 12)):
        raw += lx_record(layout, table.columns, image, op or 1, little=little, extraction_id=1)
    for _ in range(data.draw(st.integers(0, 5))):
        pos = data.draw(st.integers(0, max(len(raw) - 1, 0)))
        kind = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        if kind == "flip" and raw:
            raw[pos] ^= 1 << data.draw(st.integers(0, 7))
        elif kind == "cut":
            del raw[pos:]
        else:
            raw[pos:pos] = data.draw(st.binary(max_size=6))
    result = decode_extract_file(
        bytes(raw),
        file_name="F.dat",
        catalog=catalog,
        extraction_ids=ids,
        file_table=None if layout == "D" else ("SALES", "CUSTOMERS"),
        options={"unit": "group" if layout == "D" else "table"},
    )
    if not raw:
        assert result.rows == [] and result.rejects == []
        return
    # NORMAL records carry no length: a row reaches to the next record or reject, or the end.
    starts = sorted([r["record_offset"] for r in result.rows] + [r.offset for r in result.rejects])
    following = dict(zip(starts, starts[1:] + [len(raw)], strict=True))
    spans = sorted(
        [
            (
                r["record_offset"],
                r["record_offset"] + r["record_length"]
                if r["record_length"]
                else following[r["record_offset"]],
            )
            for r in result.rows
        ]
        + [(r.offset, r.offset + r.length) for r in result.rejects]
    )
    position = 0
    for start, end in spans:
        assert start == position, (spans, len(raw))
        position = end
    assert position == len(raw)


def test_outcode_auto_tells_euc_nchar_from_utf16_and_sjis_needs_the_option():
    catalog = {ORDERS: [col("ID", 1, "INTEGER", key=1), col("N", 2, "NCHAR", 4)]}
    for outcode, codec in (("euc", "euc_jp"), ("unicode", "utf-16-be")):
        data = h("0001 0000 00000001 0000") + "高橋美紀".encode(codec)
        result = decode_extract_file(data, file_name="X", catalog=catalog, file_table=ORDERS)
        assert result.rows[0]["data"]["N"] == "高橋美紀", outcode
        assert result.rows[0]["outcode"] == outcode
    # CP932 kanji pairs are CJK ideographs in UTF-16 too: with NCHAR text only, auto cannot
    # tell them apart (documented), so such feeds set outcode.
    data = h("0001 0000 00000001 0000") + "高橋美紀".encode("cp932")
    auto = decode_extract_file(data, file_name="X", catalog=catalog, file_table=ORDERS)
    assert auto.rows[0]["outcode"] == "unicode"
    explicit = decode_extract_file(
        data, file_name="X", catalog=catalog, file_table=ORDERS, options={"outcode": "sjis"}
    )
    assert explicit.rows[0]["data"]["N"] == "高橋美紀"


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_numpy_reader_of_fixed_length_files_agrees_with_the_record_reader(data):
    from python_udfs.linkexpress_extract.decoder import (
        Layout,
        _File,
        _Framing,
        _record_size,
        item_layout,
        read_fixed_records,
    )

    catalog, _ids = jp_catalog()
    order = data.draw(st.sampled_from([">", "<"]))
    nulls = data.draw(st.booleans())
    table = data.draw(st.sampled_from(JP_TABLES))
    rows = [r for r in _rows(nulls=nulls) if r[0] is table]
    raw = bytearray(
        b"".join(
            lx_record("A" if nulls else "B", t.columns, image, op or 1, little=False, order=order)
            for t, op, image in rows
        )
    )
    for _ in range(data.draw(st.integers(0, 8))):
        if raw:
            raw[data.draw(st.integers(0, len(raw) - 1))] ^= 1 << data.draw(st.integers(0, 7))
    layout = Layout("A" if nulls else "B", False, order, nulls)
    items = item_layout(catalog[(table.schema, table.name)])
    size = _record_size(items, layout)
    reader = _File(bytes(raw), layout, {}, items, "auto")
    for k, fast in enumerate(read_fixed_records(bytes(raw), size, layout, items, "auto")):
        try:
            slow = reader.read(k * size)
        except _Framing:
            slow = None
        if fast is not None:
            assert slow == fast
        elif slow is not None:  # only the FFFF marker reads differently: it is 2 bytes long
            assert slow.operation == 0xFFFF


@pytest.mark.parametrize(
    ("mode", "signs"),
    [
        ("auto", {"3": "+", "4": "+", "5": "-", "A": "+", "B": "-", "C": "+", "D": "-", "F": "+"}),
        ("ascii_unsigned", {"3": "+", "4": None, "5": None, "C": None, "D": None}),
        ("fujitsu_4_5", {"3": "+", "4": "+", "5": "-", "C": None, "D": None}),
        ("ebcdic_c_d", {"C": "+", "F": "+", "D": "-", "4": None, "5": None}),
    ],
)
def test_zoned_sign_option_reads_the_sign_nibbles_it_names(mode, signs):
    """formats/linkexpress_extract.md, option zoned_sign: the last byte's high nibble of a
    zoned decimal is its sign. auto takes every known form; ascii_unsigned only 3 (no sign);
    fujitsu_4_5 the 4/5 nibbles of Fujitsu COBOL; ebcdic_c_d C/F plus and D minus. A nibble
    the mode does not know is a ValueError (the record a reject naming the item)."""
    from python_udfs.linkexpress_extract.decoder import zoned_text

    for nibble, sign in signs.items():
        raw = b"12" + bytes([int(nibble, 16) << 4 | 5])  # 125, scale 1
        if sign is None:
            with pytest.raises(ValueError, match="sign nibble"):
                zoned_text(raw, 1, mode)
        else:
            assert zoned_text(raw, 1, mode) == ("-12.5" if sign == "-" else "12.5"), nibble


def _orders_rows():
    table = [
        ("ID", "INTEGER", 0),
        ("NAME", "VARCHAR", 6),
        ("PRICE", "DECIMAL", 0),
        ("QTY", "NUMERIC", 0),
        ("SHIP_DATE", "DATE", 0),
    ]
    columns = [
        collections.namedtuple("C", "name lx_type length precision scale")(n, t, length, 5, 2)
        if t == "DECIMAL"
        else collections.namedtuple("C", "name lx_type length precision scale")(
            n, t, length, 3 if t == "NUMERIC" else 0, 0
        )
        for n, t, length in table
    ]
    rows = [
        {"ID": "42", "NAME": "ABC", "PRICE": "123.45", "QTY": "7", "SHIP_DATE": "2023-11-21"},
        {"ID": "7", "NAME": None, "PRICE": "-0.50", "QTY": "10", "SHIP_DATE": "2024-02-29"},
        {"ID": "8", "NAME": "ABCDEF", "PRICE": "1.00", "QTY": None, "SHIP_DATE": "2024-03-01"},
    ]
    return columns, rows


@pytest.mark.parametrize(
    "letter,little,padded",
    [("A", False, False), ("B", False, False), ("A", True, True), ("D", True, True)],
    ids=["A-normal-compact", "B-normal-compact", "A-little-padded", "D-little-padded"],
)
def test_varchar_layout_option_reads_varchars_padded_or_compact_whatever_the_logtype(
    letter, little, padded
):
    """formats/linkexpress_extract.md, option varchar_layout: by default a VARCHAR fills its
    declared length with NORMAL and its valid length only with LITTLE. A feed whose files do
    otherwise says so: `compact` NORMAL records vary in size (no record length, so each record
    ends where its items do), `padded` LITTLE records carry the padding. Without the option
    such files are rejects, with it every row is read."""
    columns, rows = _orders_rows()
    if letter in "BE":  # no null indicators: no NULL item
        rows = [
            {k: "" if v is None and k == "NAME" else v or "0" for k, v in r.items()} for r in rows
        ]
    unit = "group" if letter in "DE" else "table"
    data = b"".join(
        lx_record(letter, columns, r, 1, little=little, extraction_id=3, varchar_padded=padded)
        for r in rows
    )
    if letter in "DE":
        data += lx_record(letter, columns, None, 0x8000, little=little)
    logtype = "little" if little else "normal"
    options = {"unit": unit, "logtype": logtype, "byteswap": "no", "outcode": "sjis"}
    result = decode(data, **options, varchar_layout="padded" if padded else "compact")
    assert result.rejects == []
    assert [r["data"] for r in result.rows if r["operation_name"] == "INSERT"] == rows
    default = decode(data, **options)
    assert [r["data"] for r in default.rows if r["operation_name"] == "INSERT"] != rows


#: Option interval_layout of the interval tests: a sign byte, then unsigned integers.
INTERVAL_LAYOUT = {
    "INTERVAL DAY TO SECOND": [
        ["SIGN", 1],
        ["DAY", 4],
        ["HOUR", 1],
        ["MINUTE", 1],
        ["SECOND", 1],
        ["MICROSECOND", 4],
    ],
    "interval year(4) to month": [["SIGN", 1], ["YEAR", 2], ["MONTH", 1]],
}


def _interval_file(letter: str, little: bool) -> bytes:
    """Records of ORDERS(ID INTEGER, WAIT INTERVAL DAY TO SECOND, TERM INTERVAL YEAR TO MONTH):
    the worked layout of INTERVAL_LAYOUT, big-endian."""
    wait = [
        h("00 00000002 03 04 05 00000007"),  # +2 03:04:05.000007
        h("2D 00000000 17 3B 3B 000F423F"),  # -0 23:59:59.999999
        h("00 00000001 18 00 00 00000000"),  # hour 24: a reject
    ]
    term = [h("00 0001 02"), h("FF 000A 0B"), h("00 0000 00")]
    out = b""
    for k, (w, t) in enumerate(zip(wait, term, strict=True)):
        items = h("0000") + (k + 1).to_bytes(4, "big") + h("0000") + w + h("0000") + t
        body = (1).to_bytes(2, "big") + items
        if letter == "D":
            body = h("0005") + h("0003") + h("0000") + body
        out += (len(body) + 4).to_bytes(4, "big") + body if little or letter == "D" else body
    if letter == "D":
        out += h("0000000A 0001 0000 8000")
    return out


@pytest.mark.parametrize("letter,little", [("A", False), ("D", True)], ids=["A-normal", "D-little"])
def test_interval_layout_option_reads_interval_items_it_lays_out(letter, little):
    """formats/linkexpress_extract.md, option interval_layout: the page documents no INTERVAL
    layout, so by default (reject) a catalog INTERVAL column makes the file one catalog_error
    reject naming the option. A feed that knows its bytes lays them out; values read as Spark
    casts them (day-time `[-]D HH:MM:SS.ffffff`, year-month `[-]Y-M`), through the numpy
    reader of fixed-length files (A, NORMAL) and the record reader (D, LITTLE) alike, and a
    field out of range is a bad_value reject."""
    catalog = {
        ORDERS: [
            col("ID", 1, "INTEGER", key=1),
            col("WAIT", 2, "INTERVAL DAY(9) TO SECOND(6)"),
            col("TERM", 3, "INTERVAL YEAR(4) TO MONTH"),
        ]
    }
    data = _interval_file(letter, little)
    options = {"unit": "group" if letter == "D" else "table", "byteswap": "no", "outcode": "sjis"}

    def run(**more):
        return decode_extract_file(
            data,
            file_name="X",
            catalog=catalog,
            extraction_ids={3: ORDERS},
            file_table=ORDERS if letter == "A" else None,
            options={**options, **more},
        )

    refused = run()
    assert [r.reason for r in refused.rejects] == ["catalog_error"] and not refused.rows
    assert "interval_layout" in refused.rejects[0].message
    result = run(interval_layout=INTERVAL_LAYOUT)
    rows = [r["data"] for r in result.rows if r["operation_name"] == "INSERT"]
    assert rows == [
        {"ID": "1", "WAIT": "2 03:04:05.000007", "TERM": "1-2"},
        {"ID": "2", "WAIT": "-0 23:59:59.999999", "TERM": "-10-11"},
    ]
    assert [(r.reason, r.record_index) for r in result.rejects] == [("bad_value", 3)]


def test_interval_layout_option_is_checked_when_the_project_loads():
    from python_udfs.config import ConfigError, _check_options

    _check_options("f", "linkexpress_extract", {"interval_layout": INTERVAL_LAYOUT})
    for bad in (
        "keep",
        {"DATE": [["DAY", 4]]},
        {"INTERVAL DAY": [["DAYS", 4]]},
        {"INTERVAL DAY": [["SIGN", 2], ["DAY", 4]]},
        {"INTERVAL YEAR TO DAY": [["YEAR", 2], ["DAY", 2]]},
        {"INTERVAL DAY": [["SIGN", 1]]},
    ):
        with pytest.raises(ConfigError, match="interval_layout"):
            _check_options("f", "linkexpress_extract", {"interval_layout": bad})


@pytest.mark.parametrize(
    "raw,fields,text",
    [
        ("00 5A 05", [["SIGN", 1], ["MINUTE", 1], ["SECOND", 1]], "0 01:30:05"),
        ("2D 0030", [["SIGN", 1], ["HOUR", 2]], "-2 00:00:00"),
        ("00 1E", [["SIGN", 1], ["MONTH", 1]], "2-6"),
        ("FF 000A 0B", [["SIGN", 1], ["YEAR", 2], ["MONTH", 1]], "-10-11"),
        ("01 3C", [["MINUTE", 1], ["SECOND", 1]], None),  # second 60 after a minute
        ("01 0C", [["YEAR", 1], ["MONTH", 1]], None),  # month 12 after a year
        ("7F 01", [["SIGN", 1], ["DAY", 1]], None),  # not a sign byte
    ],
)
def test_interval_values_are_normalized_and_only_a_leading_field_may_exceed_its_unit(
    raw, fields, text
):
    """Option interval_layout: values read as Spark casts them. A leading field may exceed
    its unit (90 minutes of an INTERVAL MINUTE TO SECOND read 1 hour 30), a field after
    another may not (a reject), and a sign byte must be 00/+ or 01/FF/-."""
    from python_udfs.linkexpress_extract.decoder import interval_text

    layout = [(f, size) for f, size in fields]
    if text is None:
        with pytest.raises(ValueError):
            interval_text(h(raw), layout, ">")
    else:
        assert interval_text(h(raw), layout, ">") == text
