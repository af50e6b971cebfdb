import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from python_udfs.goldengate_trail.decoder import (
    GGColumn,
    column_value,
    decode_trail_file,
    detect_byte_order,
    parse_sourcedefs,
)


@pytest.fixture(scope="module")
def tc(samples):
    defs, charset = parse_sourcedefs(
        (samples / "goldengate" / "tc.def").read_text(encoding="utf-8")
    )
    return (samples / "goldengate" / "tc000000").read_bytes(), defs, charset


@pytest.fixture(scope="module")
def tr(samples):
    return (samples / "goldengate" / "tr000000000").read_bytes()


def by_rba(result):
    return {r["record_offset"]: r for r in result.rows}


def test_sourcedefs(tc):
    _data, defs, charset = tc
    assert charset == "windows-1252"
    orders = defs["GG.TCUSTORD"]
    assert [c.name for c in orders.columns][:2] == ["CUST_CODE", "ORDER_DATE"]
    price = orders.columns[4]
    assert (price.data_type, price.scale, price.is_key) == (134, 2, False)
    assert [c.is_key for c in orders.columns] == [True, True, True, True, False, False, False]
    assert orders.columns[3].sub_type == 2


def test_tc000000_decodes_as_oracle_printed_it(tc):
    data, defs, _ = tc
    result = decode_trail_file(data, file_name="tc000000", definitions=defs)
    assert result.rejects == [] and result.consumed_end == len(data)
    assert len(result.rows) == 20
    assert [r["io_type"] for r in result.rows].count(5) == 10
    assert [r["io_type"] for r in result.rows].count(15) == 8
    insert = by_rba(result)[1444]
    assert insert["io_type"] == 5 and insert["table_name"] == "GG.TCUSTORD"
    assert insert["data"] == {
        "CUST_CODE": "WILL",
        "ORDER_DATE": "1994-09-30 15:33:00",
        "PRODUCT_CODE": "CAR",
        "ORDER_ID": "144",
        "PRODUCT_PRICE": "17520.00",
        "PRODUCT_AMOUNT": "3",
        "TRANSACTION_ID": "100",
    }
    assert insert["io_time"] == "2013-06-02 22:14:36"
    assert insert["token_row_id"] == "AADPkvAAEAAEqL2AAA"
    assert (
        insert["transaction_id"] == "36.29.8952" and insert["token_tran_id"] is None
    )  # carried from RBA 1121
    assert (
        insert["hdr_ind"],
        insert["partition"],
        insert["before_after"],
        insert["trans_ind"],
    ) == ("E", 4, "A", 1)
    assert (
        insert["audit_rba"],
        insert["format_type"],
        insert["rec_count"],
        insert["trail_seqno"],
    ) == (3775, "R", 1, 0)
    delete = by_rba(result)[4338]
    assert delete["io_type"] == 3 and delete["before_after"] == "B"
    assert delete["data"] == {
        "CUST_CODE": "DAVE",
        "ORDER_DATE": "1993-11-03 07:51:35",
        "PRODUCT_CODE": "PLANE",
        "ORDER_ID": "600",
    }
    assert (delete["token_tran_id"], delete["token_log_csn"]) == ("9.0.80330", "206080450")
    assert delete["io_time"] == "2013-06-02 22:14:41"
    before, after = by_rba(result)[2891], by_rba(result)[3107]
    assert (before["before_after"], after["before_after"]) == ("B", "A")
    assert (
        before["data"]["PRODUCT_PRICE"] == "15000.00"
        and after["data"]["PRODUCT_PRICE"] == "14000.00"
    )
    firsts = [r["record_offset"] for r in result.rows if r["trans_ind"] == 0]
    assert firsts == [1121, 1822, 2296, 2891, 4338]
    assert {r["transaction_id"] for r in result.rows} == {
        "36.29.8952",
        "4.25.105435",
        "35.8.11259",
        "11.14.51836",
        "9.0.80330",
    }
    # the sourcedefs tables the file used land in raw_metadata, for `cdc scaffold`
    keys = {(m.source_table, m.column_name): m.primary_key_position for m in result.metadata}
    assert keys[("TCUSTORD", "ORDER_ID")] == 4 and keys[("TCUSTORD", "PRODUCT_PRICE")] == 0
    assert {m.metadata_source for m in result.metadata} == {"goldengate_sourcedefs"}


def test_tr000000000_uses_its_embedded_metadata_and_unified_updates(tr):
    result = decode_trail_file(tr, file_name="tr000000000")
    assert result.rejects == [] and result.consumed_end == len(tr)
    rows = by_rba(result)
    assert rows[1548]["io_type"] == 170 and rows[1548]["table_name"] == "QASOURCE.TCUSTMER"
    keys = {(m.source_table, m.column_name): m.primary_key_position for m in result.metadata}
    assert keys[("TCUSTMER", "CUST_CODE")] == 1 and keys[("TCUSTMER", "STATE")] == 0
    assert rows[1956]["data"] == {
        "CUST_CODE": "WILL",
        "NAME": "BG SOFTWARE CO.",
        "CITY": "SEATTLE",
        "STATE": "WA",
    }
    assert rows[1956]["transaction_id"] == "2.3.228025" and rows[1956]["tdr_index"] == 1
    unified = rows[4300]
    assert unified["io_type"] == 134 and len(unified["before_data"]) == 7
    assert unified["before_data"]["PRODUCT_PRICE"] == "15000.00"
    assert unified["data"] == {
        "CUST_CODE": "BILL",
        "ORDER_DATE": "1995-12-31 15:00:00",
        "PRODUCT_CODE": "CAR",
        "ORDER_ID": "765",
        "PRODUCT_PRICE": "14000.00",
    }
    ann = rows[5100]
    assert ann["before_data"] == {
        "CUST_CODE": "ANN",
        "NAME": "ANN'S BOATS",
        "CITY": "SEATTLE",
        "STATE": "WA",
    }
    assert ann["data"] == {"CUST_CODE": "ANN", "CITY": "NEW YORK", "STATE": "NY"}


def test_cut_trail_leaves_the_partial_record_pending_or_rejects_it_when_final(tc):
    data, defs, _ = tc
    cut = data[:1500]
    pending = decode_trail_file(cut, file_name="tc000000", definitions=defs)
    assert [r["record_offset"] for r in pending.rows] == [1121, 1296] and pending.rejects == []
    assert pending.consumed_end == 1444
    final = decode_trail_file(cut, file_name="tc000000", definitions=defs, final=True)
    assert [(r.offset, r.reason) for r in final.rejects] == [(1444, "truncated_record")]
    tail = decode_trail_file(
        data, file_name="tc000000", definitions=defs, start=1444, start_index=2
    )
    assert tail.rows[0]["record_offset"] == 1444 and tail.rows[0]["record_index"] == 3
    assert tail.rows[0]["transaction_id"] == "36.29.8952"  # carried from the part read before


def test_bad_header_indicator_rejects_one_record(tc):
    data, defs, _ = tc
    broken = bytearray(data)
    broken[0x5AC] = 0
    result = decode_trail_file(bytes(broken), file_name="tc000000", definitions=defs)
    assert [(r.offset, r.reason) for r in result.rejects] == [(1444, "invalid_header_indicator")]
    assert 1632 in by_rba(result) and len(result.rows) == 19


def test_broken_length_resynchronises_at_the_next_record(tc):
    data, defs, _ = tc
    broken = bytearray(data)
    broken[1444 + 3] ^= 0x10  # record length of RBA 1444
    result = decode_trail_file(bytes(broken), file_name="tc000000", definitions=defs)
    (reject,) = result.rejects
    assert (reject.offset, reject.offset + reject.length) == (1444, 1632)
    assert len(result.rows) == 19


def test_table_without_definition_is_rejected(tc):
    data, defs, _ = tc
    result = decode_trail_file(
        data, file_name="tc000000", definitions={"GG.TCUSTMER": defs["GG.TCUSTMER"]}
    )
    assert {r.reason for r in result.rejects} == {"no_metadata"}
    assert len(result.rows) + len(result.rejects) == 20


def test_byte_order_detection():
    header = b"F\x00" + struct.pack("<H", 16) + b"\x00" * 8 + b"Z\x00" + struct.pack("<H", 16)
    assert detect_byte_order(header) == "<"
    assert detect_byte_order(header.replace(struct.pack("<H", 16), struct.pack(">H", 16))) == ">"
    assert detect_byte_order(b"nonsense") is None


def test_null_indicator_and_values():
    col = GGColumn("C", 5, 64, 10, 0, 0, 0, 0, False)
    opts = {}
    assert column_value(col, b"\x00\x03abc", "utf-8", opts) == "abc"
    assert (
        column_value(GGColumn("N", 0, 64, 10, 0, 0, 0, 2, False), b"\x00\x05+1E+2", "utf-8", opts)
        == "100"
    )
    assert (
        column_value(
            GGColumn("I", 0, 132, 4, 3, 0, 0, 0, False), struct.pack(">i", -1500), "utf-8", opts
        )
        == "-1.500"
    )
    assert (
        column_value(GGColumn("D", 0, 192, 10, 0, 0, 2, 0, False), b"2024-01-05", "utf-8", opts)
        == "2024-01-05"
    )
    assert (
        column_value(
            GGColumn("P", 0, 189, 3, 2, 0, 0, 0, False), bytes.fromhex("12345D"), "utf-8", opts
        )
        == "-123.45"
    )
    assert (
        column_value(GGColumn("L", 0, 151, 4, 1, 0, 0, 0, False), b"-123", "utf-8", opts) == "-12.3"
    )
    with pytest.raises(ValueError):
        column_value(GGColumn("I", 0, 134, 8, 0, 0, 0, 0, False), b"\x00" * 4, "utf-8", opts)


def test_column_int_byte_order_metadata_reads_integers_in_the_trail_order(tmp_path):
    """formats/goldengate_trail.md, option column_int_byte_order: integer payloads are
    big-endian whatever the trail's order (big, the default); with metadata they follow the
    trail's metadata order, little-endian in a little-endian trail. The simulator writes a
    little-endian trail with big-endian integers, as 21c does: the option changes them."""
    from simulator.database import TABLES, simulate
    from simulator.goldengate_trail import write_trails

    write_trails(simulate(seed=8), TABLES, tmp_path, {"byte_order": "little"})
    first = min(p for p in tmp_path.iterdir() if p.name.startswith("aa")).read_bytes()

    def ids(options):
        result = decode_trail_file(first, file_name="aa000000", options=options, final=True)
        return [(r["data"] or {}).get("CUSTOMER_ID") for r in result.rows]

    default = ids({})
    assert any(default) and ids({"column_int_byte_order": "big"}) == default
    assert ids({"column_int_byte_order": "metadata"}) != default
    col = GGColumn("I", 0, 132, 4, 0, 0, 0, 0, False)
    payload = struct.pack("<i", 1500)
    assert column_value(col, payload, "utf-8", {}) == str(struct.unpack(">i", payload)[0])
    assert column_value(col, payload, "utf-8", {"column_int_order": "<"}) == "1500"
    assert column_value(col, struct.pack(">i", 1500), "utf-8", {"column_int_order": ">"}) == "1500"


def test_datetime_kind_timestamp_always_renders_every_datetime_as_a_timestamp():
    """formats/goldengate_trail.md, option datetime_kind: by default MSDT/LSDT decide (an
    LSDT ≤ 2 column is a DATE, an MSDT ≥ 3 one a TIME); timestamp_always renders each 192
    DATETIME with a date as a timestamp (a date alone at midnight); a time alone stays one."""
    always = {"datetime_kind": "timestamp_always"}
    date = GGColumn("D", 0, 192, 10, 0, 0, 2, 0, False)
    time = GGColumn("T", 0, 192, 19, 0, 3, 5, 0, False)
    full = b"2024-01-05:13:14:15"
    assert column_value(date, full, "utf-8", {}) == "2024-01-05"
    assert column_value(date, full, "utf-8", always) == "2024-01-05 13:14:15"
    for opts in ({}, always):
        assert column_value(time, b"13:14:15", "utf-8", opts) == "13:14:15"
    assert column_value(date, b"2024-01-05", "utf-8", always) == "2024-01-05 00:00:00"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzzed_trails_never_raise_and_rejects_cover_the_damage(tc, tr, data):
    raw, defs, _ = tc
    source = raw if data.draw(st.booleans(), label="tc000000 (else tr000000000)") else tr
    mutated = bytearray(source)
    for _ in range(data.draw(st.integers(0, 6))):
        kind = data.draw(st.sampled_from(["flip", "cut", "length"]))
        if not mutated:
            break
        at = data.draw(st.integers(0, len(mutated) - 1))
        if kind == "flip":
            mutated[at] ^= 1 << data.draw(st.integers(0, 7))
        elif kind == "cut":
            mutated = mutated[:at]
        else:
            mutated[at] = data.draw(st.integers(0, 255))
    final = data.draw(st.booleans())
    result = decode_trail_file(bytes(mutated), file_name="tc000000", definitions=defs, final=final)
    covered = sorted(
        [(r["record_offset"], r["record_offset"] + 1) for r in result.rows]
        + [(r.offset, r.offset + r.length) for r in result.rejects]
    )
    assert all(0 <= a < len(mutated) + 1 and b <= len(mutated) for a, b in covered)
    assert result.consumed_end <= len(mutated)
    if final:
        assert result.consumed_end == len(mutated)


def _catalog_of(definitions):
    """The catalog seed rows `cdc scaffold` writes for these definitions, read back as
    `config` reads them: ``(catalog, spark_types)`` keyed by ``(schema, table)``."""
    from python_udfs.goldengate_trail.spec import spark_type_for

    catalog, spark_types = {}, {}
    for table in definitions.values():
        columns = table.metadata()
        catalog[table.schema_and_table] = columns
        spark_types[table.schema_and_table] = {
            c.column_name: spark_type_for(c.source_type, c.precision, c.scale) for c in columns
        }
    return catalog, spark_types


def _rows(result):
    return [(r["record_offset"], r["io_type"], r["data"], r["before_data"]) for r in result.rows]


def test_a_trail_without_tdrs_or_sourcedefs_decodes_from_the_catalog_seed(tc, tmp_path):
    """metadata_source auto, last resort (issue 13): the catalog seed's type codes, lengths and
    scales stand in for the sourcedefs file: the real 11.x trail and a little-endian simulated
    trail (no TDRs) decode to the same rows as with their sourcedefs files."""
    from python_udfs.config import FeedConfig, load_catalog
    from python_udfs.goldengate_trail.decoder import tables_from_catalog
    from simulator.database import catalog_rows, simulate
    from simulator.feeds import write_feed
    from tests.spark_project import write_seeds

    data, defs, charset = tc
    with_defs = decode_trail_file(data, file_name="tc000000", definitions=defs, final=True)
    catalog = tables_from_catalog(*_catalog_of(defs))
    for table in catalog.values():
        table.char_encoding = charset  # the seed holds no character set: the feed option does
    from_catalog = decode_trail_file(data, file_name="tc000000", definitions=catalog, final=True)
    assert _rows(with_defs) and _rows(from_catalog) == _rows(with_defs)
    assert from_catalog.rejects == with_defs.rejects
    without = decode_trail_file(data, file_name="tc000000", final=True)
    assert not without.rows  # no metadata at all: every record is a reject

    # 12.2 style (unified updates), little-endian, without TDRs: tables named in the headers
    options = {"byte_order": "little", "definitions": "dirdef/sim.def", "unified_updates": True}
    write_feed(simulate(seed=3, truncate_every=12), "goldengate_trail", tmp_path, options)
    sim_defs, _ = parse_sourcedefs((tmp_path / "dirdef" / "sim.def").read_text(encoding="utf-8"))
    # the simulated database's seed rows, as the demo ships them (DATE columns: spark_type date)
    columns, _tables = catalog_rows({"gg": "goldengate_trail"})
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    write_seeds(tmp_path, columns, [])
    feed = FeedConfig("gg", "goldengate_trail", tmp_path)
    full_catalog, full_types, _ids = load_catalog(seeds, {"gg": feed})
    sim_catalog = tables_from_catalog(
        {k[1:]: v for k, v in full_catalog.items()}, {k[1:]: v for k, v in full_types.items()}
    )
    assert set(sim_catalog) == set(sim_defs)
    trails = sorted(p for p in tmp_path.iterdir() if p.is_file() and p.name.startswith("aa"))
    assert trails
    unified = 0
    for path in trails:
        raw = path.read_bytes()
        expected = decode_trail_file(raw, file_name=path.name, definitions=sim_defs, final=True)
        decoded = decode_trail_file(raw, file_name=path.name, definitions=sim_catalog, final=True)
        assert expected.rows and not expected.rejects and not decoded.rejects
        assert _rows(decoded) == _rows(expected)
        assert not any(r["io_type"] == 170 for r in expected.rows)  # no TDR record
        unified += sum(r["io_type"] in (134, 135) for r in expected.rows)
    assert unified  # updates are unified records


def test_metadata_source_picks_the_tdr_records_or_the_sourcedefs_file(tmp_path):
    """formats/goldengate_trail.md, option metadata_source. A 12.2-style trail (TDR records)
    decodes by its TDRs with auto and trail; with sourcedefs each TDR only names the table its
    index stands for and the definition comes from the sourcedefs file, so a table the file
    lacks is a no_metadata reject. An 11.x-style trail (table names, no TDR) decodes by its
    sourcedefs file with auto and sourcedefs; with trail every record is a no_metadata
    reject."""
    from simulator.database import TABLES, simulate
    from simulator.goldengate_trail import write_trails

    sim = simulate(seed=6)

    def decode_all(folder, definitions, metadata_source):
        rows, reasons = [], set()
        for path in sorted(p for p in folder.iterdir() if p.name.startswith("aa")):
            result = decode_trail_file(
                path.read_bytes(),
                file_name=path.name,
                definitions=definitions,
                options={"metadata_source": metadata_source},
                final=True,
            )
            rows += [(r["table_name"], r["data"]) for r in result.rows if r["io_type"] != 170]
            reasons |= {r.reason for r in result.rejects}
        return rows, reasons

    write_trails(sim, TABLES, tmp_path / "v11", {"definitions": "dirdef/sim.def"})
    defs, _ = parse_sourcedefs((tmp_path / "v11" / "dirdef" / "sim.def").read_text("utf-8"))
    write_trails(sim, TABLES, tmp_path / "v12", {})
    by_tdr, none = decode_all(tmp_path / "v12", None, "auto")
    assert by_tdr and not none
    assert decode_all(tmp_path / "v12", None, "trail") == (by_tdr, set())
    assert decode_all(tmp_path / "v12", defs, "sourcedefs") == (by_tdr, set())
    customers = next(name for name in defs if name.endswith(".CUSTOMERS"))
    partial = {name: table for name, table in defs.items() if name != customers}
    rows, reasons = decode_all(tmp_path / "v12", partial, "sourcedefs")
    assert reasons == {"no_metadata"}
    assert rows == [r for r in by_tdr if r[0] != customers]
    by_defs, none = decode_all(tmp_path / "v11", defs, "auto")
    assert by_defs and not none
    assert decode_all(tmp_path / "v11", defs, "sourcedefs") == (by_defs, set())
    assert decode_all(tmp_path / "v11", defs, "trail") == ([], {"no_metadata"})


@pytest.mark.parametrize("style", ["tdr", "sourcedefs"])
def test_segmented_records_are_reassembled_to_the_whole_row(tmp_path, style):
    """Continued = Y (the LOB case, issue 13): the simulator writes every 'D' area longer than
    24 bytes as segments; the decoder concatenates them and reads the same rows as from the
    unsegmented trail. Without the last segment the record waits (a file still being written)
    or, in a final file, is one reject."""
    from simulator.database import TABLES, simulate
    from simulator.goldengate_trail import write_trails

    sim = simulate(seed=4)
    base = {"definitions": "dirdef/sim.def"} if style == "sourcedefs" else {}

    def decoded(folder, options):
        write_trails(sim, TABLES, folder, {**base, **options})
        defs = None
        if style == "sourcedefs":
            defs, _ = parse_sourcedefs((folder / "dirdef" / "sim.def").read_text("utf-8"))
        rows, rejects = [], []
        for path in sorted(p for p in folder.iterdir() if p.name.startswith("aa")):
            result = decode_trail_file(
                path.read_bytes(), file_name=path.name, definitions=defs, final=True
            )
            rows += [
                (r["io_type"], r["table_name"], r["data"], r["before_data"]) for r in result.rows
            ]
            rejects += result.rejects
        return rows, rejects

    whole, whole_rejects = decoded(tmp_path / "whole", {})
    segmented, segmented_rejects = decoded(tmp_path / "segmented", {"segment_bytes": 24})
    assert whole and not whole_rejects and not segmented_rejects
    assert segmented == whole
    assert len(list((tmp_path / "segmented").glob("aa*"))) == len(
        list((tmp_path / "whole").glob("aa*"))
    )


def test_a_segmented_record_without_its_last_segment_waits_or_is_rejected(tmp_path):
    from simulator.database import TABLES, simulate
    from simulator.goldengate_trail import write_trails

    write_trails(simulate(seed=4), TABLES, tmp_path, {"segment_bytes": 24})
    data = sorted(tmp_path.glob("aa*"))[0].read_bytes()
    whole = decode_trail_file(data, file_name="aa000000", final=True)
    assert not whole.rejects
    changes = [r for r in whole.rows if r["io_type"] != 170]  # TDRs are not segmented
    row = max(changes, key=lambda r: r["record_length"])  # a record of several segments
    first_end = row["record_offset"] + struct.unpack_from(">H", data, row["record_offset"] + 2)[0]
    assert first_end < row["record_offset"] + row["record_length"]
    cut = data[:first_end]  # the file ends after the record's first segment
    held = decode_trail_file(cut, file_name="aa000000")  # the writer may still add the rest
    assert not held.rejects and held.consumed_end == row["record_offset"]
    assert [r["record_offset"] for r in held.rows] == [
        r["record_offset"] for r in whole.rows if r["record_offset"] < row["record_offset"]
    ]
    final = decode_trail_file(cut, file_name="aa000000", final=True)
    assert [(r.offset, r.reason) for r in final.rejects] == [
        (row["record_offset"], "segment_without_end")
    ]


def test_transind_out_of_sequence_and_a_transaction_without_end_are_reported(tc):
    """formats/goldengate_trail.md, bad input: the real trail cut to 1500 bytes reports its
    last transaction as without end; a last record (TransInd 2) changed to a middle one (1)
    leaves its transaction open when the next one starts (issue 13)."""
    data, defs, _charset = tc
    whole = decode_trail_file(data, file_name="tc000000", definitions=defs, final=True)
    assert not [w for w in whole.warnings if "TransInd" in w or "without end" in w]
    cut = decode_trail_file(data[:1500], file_name="tc000000", definitions=defs, final=True)
    assert [r["record_offset"] for r in cut.rows if r["io_type"] == 5] == [1121, 1296]
    assert any(w.startswith("transaction without end: TransInd 0 at RBA") for w in cut.warnings)
    held = decode_trail_file(data[:1500], file_name="tc000000", definitions=defs)
    assert not any("without end" in w for w in held.warnings)  # the writer may still finish it
    last = next(r for r in whole.rows if r["trans_ind"] == 2)
    patched = bytearray(data)
    assert patched[last["record_offset"] + 8 + 28] == 2  # GHDR TransInd of that record
    patched[last["record_offset"] + 8 + 28] = 1
    result = decode_trail_file(bytes(patched), file_name="tc000000", definitions=defs, final=True)
    assert any("while the transaction of RBA" in w for w in result.warnings), result.warnings


def _tdr_trails(folder, byte_order: str) -> list[bytes]:
    """One workload's 12.2-style trails (TDRs, unified updates) in ``byte_order``: CUSTOMERS
    gains a column after transaction 10, so a second TDR of it follows mid-trail."""
    from simulator.database import SimColumn, simulate
    from simulator.goldengate_trail import write_trails

    added = SimColumn("LOYALTY_TIER", "STRING", "string", nullable=True, length=10, pool=("gold",))
    sim = simulate(seed=9, truncate_every=12, added_column=("CUSTOMERS", added, 10))
    write_trails(sim, sim.tables, folder, {"byte_order": byte_order, "records_per_file": 40})
    return [p.read_bytes() for p in sorted(folder.iterdir()) if p.name.startswith("aa")]


def _without_metadata_audit_rba(result) -> list[dict]:
    """The rows, a metadata record's ``audit_rba`` left out: its slot holds two u16 (DDR, TDR
    index), which the raw u32 reads in the trail's order, so the two copies differ there."""
    return [{**r, "audit_rba": None} if r["io_type"] == 170 else r for r in result.rows]


def test_a_little_endian_tdr_trail_resolves_every_change_as_its_big_endian_copy(tmp_path):
    """Issue 77: a DML record's table reference (a u16 TDR index at GHDR offset 34) is a header
    field, read in the trail's byte order (formats/goldengate_trail.md, *Fields* and option
    ``byte_order``). A little-endian trail with TDRs, a second TDR of a table after a source
    DDL among them, decodes to the rows of the big-endian copy of the same changes, in the
    per-record decoder and the fast path alike; the index bytes are ``01 00`` in it."""
    from python_udfs.goldengate_trail import columnar
    from tests import fast_paths

    (tmp_path / "be").mkdir(), (tmp_path / "le").mkdir()
    big, little = _tdr_trails(tmp_path / "be", "big"), _tdr_trails(tmp_path / "le", "little")
    assert len(big) == len(little) >= 2
    indexes, columns = set(), set()
    for seqno, (be, le) in enumerate(zip(big, little, strict=True)):
        assert detect_byte_order(le) == "<" and len(le) == len(be)
        name = f"aa{seqno:06d}"
        expected = decode_trail_file(be, file_name=name, final=True)
        result = decode_trail_file(le, file_name=name, final=True)
        assert result.rejects == [] and result.warnings == expected.warnings
        assert _without_metadata_audit_rba(result) == _without_metadata_audit_rba(expected)
        assert result.metadata == expected.metadata
        fast = columnar.decode_columnar(le, file_name=name, final=True)
        assert fast is not None  # the fast path reads it, and as the reference does
        fast_paths.assert_same(fast, result, "raw_goldengate_trail")
        changes = [r for r in expected.rows if r["io_type"] != 170 and r["table_name"]]
        assert changes and all(r["source_table"] for r in changes)
        for row in changes:
            indexes.add(row["tdr_index"])
            columns.update((row["data"] or {}) | (row["before_data"] or {}))
            tail = le[row["record_offset"] + 8 + 34 :][:2]  # 'G' token, 'H' token, GHDR 34
            assert tail == struct.pack("<H", row["tdr_index"]), row["record_offset"]
    assert {1, 2, 3} <= indexes and max(indexes) < 256  # one more TDR after the DDL
    assert "LOYALTY_TIER" in columns
