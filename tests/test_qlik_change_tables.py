import dataclasses

import pytest

from python_udfs.canonical import mask_set_bits
from python_udfs.feed_format import FileToDecode
from python_udfs.qlik_change_tables.decoder import (
    DEFAULT_HEADER_FIELDS,
    decode_change_table_file,
    start_write_timestamp,
    table_from_path,
)
from python_udfs.qlik_change_tables.spec import decode
from python_udfs.records import MetadataColumn

SAMPLE = "qlik_ct/EDW.SAMPLE__ct/20211201-122433444"


def decode_sample(samples):
    data = (samples / f"{SAMPLE}.csv").read_bytes()
    sidecar = (samples / f"{SAMPLE}.dfm").read_text(encoding="utf-8")
    return data, decode_change_table_file(
        data, file_name="EDW.SAMPLE__ct/20211201-122433444.csv", sidecar=sidecar
    )


def test_real_sample_decodes_as_the_vendor_wrote_it(samples):
    data, result = decode_sample(samples)
    assert result.rejects == [] and result.warnings == []
    update, insert = result.rows
    assert update["header__change_oper"] == "U"
    assert update["header__change_seq"] == "20210915031230320000000000000000041"
    assert update["header__timestamp"] == "2021-10-08 14:12:31.320000"
    assert update["data"] == {
        "SAMPLE_ID": "4",
        "SAMPLE_NAME": "Sample 4 🔥🔥🔥🔥",
        "EDW_INSERTED_DTM": "2021-12-01 11:20:30.444444",
        "EDW_UPDATED_DTM": "2021-12-01 11:20:31.444444",
    }
    assert update["header__change_mask"] is None  # this task writes no mask
    assert (update["source_schema"], update["source_table"]) == ("EDW", "SAMPLE")
    assert update["header_column_count"] == 3
    assert insert["header__change_oper"] == "I"
    assert insert["data"]["SAMPLE_NAME"] == "Sample 5 🔥🔥🔥🔥🔥"
    assert update["header__change_seq"] < insert["header__change_seq"]
    # record offsets point at the records' first bytes
    assert data[update["record_offset"] :].startswith(b"20210915031230")
    assert [c.column_name for c in result.metadata][:3] == [
        "header__change_seq",
        "header__change_oper",
        "header__timestamp",
    ]


def _dfm(columns):
    import json

    cols = [
        {
            "ordinal": i,
            "name": n,
            "type": t,
            "length": 0,
            "precision": 0,
            "scale": s,
            "primaryKeyPos": k,
        }
        for i, (n, t, s, k) in enumerate(columns, start=1)
    ]
    return json.dumps({"dataInfo": {"sourceSchema": "S", "sourceTable": "T", "columns": cols}})


HEADERS7 = [(f"header__{h}", "STRING", 0, 0) for h in DEFAULT_HEADER_FIELDS[:-1]]
HEADERS7.append(("header__timestamp", "DATETIME", 0, 0))
PAIRING_DFM = _dfm(
    HEADERS7 + [("ID", "INT4", 0, 1), ("NAME", "STRING", 0, 0), ("CITY", "STRING", 0, 0)]
)


def test_constructed_pairing_vector_keeps_b_and_u_rows_with_the_mask():
    text = (
        '20240105101500120000000000000000510,B,,,BEFOREIMAGE,,2024-01-05 10:15:00.12,7,"Ann","Seattle"\n'
        '20240105101500120000000000000000510,U,0200,,UPDATE,,2024-01-05 10:15:00.12,7,"Ann","New York"\n'
    )
    result = decode_change_table_file(text.encode(), file_name="S.T__ct/x.csv", sidecar=PAIRING_DFM)
    assert result.rejects == []
    before, update = result.rows
    assert before["data"] == {"ID": "7", "NAME": "Ann", "CITY": "Seattle"}
    assert update["data"]["CITY"] == "New York"
    assert update["header__timestamp"] == "2024-01-05 10:15:00.120000"
    bits = mask_set_bits(update["header__change_mask"])
    assert [update["column_names"][b] for b in bits] == ["CITY"]


def test_bad_records_become_rejects_and_neighbours_still_land():
    good = '20240105101500120000000000000000511,I,,,INSERT,,2024-01-05 10:15:00,8,"Bo","Oslo"\n'
    wrong_count = '20240105101500120000000000000000512,I,,,INSERT,,2024-01-05 10:15:00,9,"Cy"\n'
    overlong_mask = (
        '20240105101500120000000000000000513,I,0400,,INSERT,,2024-01-05 10:15:00,10,"Di","Rome"\n'
    )
    bad_int = (
        '20240105101500120000000000000000514,I,,,INSERT,,2024-01-05 10:15:00,12a,"Ed","Rome"\n'
    )
    unknown_oper = '20240105101500120000000000000000515,X,,,,,2024-01-05 10:15:00,13,"Fa","Rome"\n'
    last = '20240105101500120000000000000000516,D,,,DELETE,,2024-01-05 10:15:00,8,"Bo","Oslo"\n'
    data = (good + wrong_count + overlong_mask + bad_int + unknown_oper + last).encode()
    result = decode_change_table_file(data, file_name="S.T__ct/x.csv", sidecar=PAIRING_DFM)
    assert [r["data"]["ID"] for r in result.rows] == ["8", "8"]
    reasons = {r.record_index: r.reason for r in result.rejects}
    assert reasons == {
        2: "wrong_field_count",
        3: "mask_longer_than_columns",
        4: "bad_value",
        5: "unknown_operation",
    }
    for rej in result.rejects:
        assert data[rej.offset : rej.offset + rej.length].startswith(b"202401051015")
    decoded = sum(len(line) for line in (good, last))
    assert decoded + sum(r.length for r in result.rejects) == len(data)


def test_unterminated_quote_rejects_to_end_of_file_and_unmatched_before_image():
    data = (
        b'20240105101500120000000000000000520,B,,,BEFOREIMAGE,,2024-01-05 10:15:00,7,"Ann","Seattle"\n'
        b'20240105101500120000000000000000521,I,,,INSERT,,2024-01-05 10:15:00,7,"Ann","Sea\n'
    )
    result = decode_change_table_file(data, file_name="S.T__ct/x.csv", sidecar=PAIRING_DFM)
    assert result.rows == []
    assert sorted(r.reason for r in result.rejects) == [
        "truncated_record",
        "unmatched_before_image",
    ]
    assert sum(r.length for r in result.rejects) == len(data)


def test_stray_quote_rejects_only_its_record():
    data = (
        b'20240105101500120000000000000000522,I,,,INSERT,,2024-01-05 10:15:00,7,"Ann,"Sea\n'
        b'20240105101500120000000000000000523,I,,,INSERT,,2024-01-05 10:15:00,8,"Bo","Oslo"\n'
    )
    result = decode_change_table_file(data, file_name="S.T__ct/x.csv", sidecar=PAIRING_DFM)
    assert [r.reason for r in result.rejects] == ["bad_quoting"]
    assert [r["data"]["ID"] for r in result.rows] == ["8"]


def test_quoted_newline_and_null_versus_empty_string():
    data = b'20240105101500120000000000000000530,I,,,INSERT,,2024-01-05 10:15:00,7,"two\nlines",\n'
    data += b'20240105101500120000000000000000531,I,,,INSERT,,2024-01-05 10:15:00,8,"",""\n'
    result = decode_change_table_file(data, file_name="S.T__ct/x.csv", sidecar=PAIRING_DFM)
    assert result.rejects == []
    assert result.rows[0]["data"] == {"ID": "7", "NAME": "two\nlines", "CITY": None}
    assert result.rows[1]["data"] == {"ID": "8", "NAME": "", "CITY": ""}


def test_full_load_without_dfm_uses_the_catalog_and_header_row():
    catalog = {
        ("S", "T"): [
            MetadataColumn(
                "S", "T", None, "ID", 1, "INT4", None, None, None, 1, False, "catalog_seed"
            ),
            MetadataColumn(
                "S", "T", None, "PRICE", 2, "NUMERIC", None, 10, 2, 0, True, "catalog_seed"
            ),
        ]
    }
    result = decode_change_table_file(
        b"ID,PRICE\n1,1.5\n2,\n", file_name="S.T/LOAD00000001.csv", catalog=catalog
    )
    assert result.rejects == []
    assert [r["data"] for r in result.rows] == [
        {"ID": "1", "PRICE": "1.50"},
        {"ID": "2", "PRICE": None},
    ]
    assert all(r["file_kind"] == "full_load" for r in result.rows)


def test_no_metadata_at_all_rejects_the_file():
    result = decode_change_table_file(b"1,2\n", file_name="S.T__ct/x.csv")
    assert result.rows == [] and [r.reason for r in result.rejects] == ["no_column_metadata"]


def test_table_from_path():
    assert table_from_path("EDW.SAMPLE__ct/20211201-122433444.csv", "__ct") == (
        "EDW",
        "SAMPLE",
        False,
    )
    assert table_from_path("feed/EDW.SAMPLE/LOAD00000001.csv", "__ct") == ("EDW", "SAMPLE", True)
    assert table_from_path("EDW.SAMPLE__ct/20170313T123000_20170313T170000/x.csv", "__ct") == (
        "EDW",
        "SAMPLE",
        False,
    )


def test_an_unclosed_quote_rejects_its_line_and_the_next_records_still_land():
    """issue 14: a row whose quote is never closed once swallowed the 18 valid rows after it
    into one reject; it is rejected up to the next line, which parses as a record."""
    rows = [
        f'2024010510150012000000000000000{600 + n:04d},I,,,INSERT,,2024-01-05 10:15:00,{n},"N{n}","C{n}"\n'
        for n in range(1, 20)
    ]
    broken = '20240105101500120000000000000000599,I,,,INSERT,,2024-01-05 10:15:00,99,"Ann,"Oslo"\n'
    data = (rows[0] + broken + "".join(rows[1:])).encode()
    result = decode_change_table_file(data, file_name="S.T__ct/x.csv", sidecar=PAIRING_DFM)
    assert [r["data"]["ID"] for r in result.rows] == [str(n) for n in range(1, 20)]
    (reject,) = result.rejects
    assert data[reject.offset : reject.offset + reject.length] == broken.encode()
    assert reject.reason == "bad_quoting"


def _with_start(dfm_text: str, start: str) -> str:
    import json

    doc = json.loads(dfm_text)
    doc["fileInfo"] = {"startWriteTimestamp": start}
    return json.dumps(doc)


LOAD_DFM = _dfm([("ID", "INT4", 0, 1), ("NAME", "STRING", 0, 0)])


@pytest.mark.parametrize("columnar", [False, True])
def test_rows_carry_the_dfm_start_write_timestamp(columnar):
    sidecar = _with_start(LOAD_DFM, "2024-05-01T09:00:15.250")
    file = FileToDecode("S.T/LOAD00000002.csv", {"catalog": {}, "options": {}}, sidecar=sidecar)
    result = decode(b"1,Ann\n2,Bo\n", dataclasses.replace(file, columnar=columnar))
    assert result.fast_path_fallback is None
    rows = result.table.to_pylist() if result.table is not None else result.rows
    assert [r["start_write_timestamp"] for r in rows] == ["2024-05-01T09:00:15.250"] * 2
    assert result.rejects == []


def test_the_real_sample_has_an_empty_start_write_timestamp(samples):
    sidecar = (samples / f"{SAMPLE}.dfm").read_text(encoding="utf-8")
    assert start_write_timestamp(sidecar) is None
    _, result = decode_sample(samples)
    assert result.rows and all("start_write_timestamp" not in r for r in result.rows)


@pytest.mark.parametrize("start", ["", "yesterday", None])
def test_dfm_start_rejects_a_full_load_file_without_a_start_write_timestamp(start):
    sidecar = LOAD_DFM if start is None else _with_start(LOAD_DFM, start)
    data = b"1,Ann\n2,Bo\n"
    options = {"load_position": "dfm_start"}
    result = decode_change_table_file(
        data, file_name="S.T/LOAD00000002.csv", sidecar=sidecar, options=options
    )
    assert result.rows == [] and result.table is None
    assert [(r.reason, r.offset, r.length) for r in result.rejects] == [
        ("no_start_write_timestamp", 0, len(data))
    ]
    # the default position (zeros) needs none, and a change-table file under dfm_start neither
    assert len(decode_change_table_file(data, file_name="S.T/LOAD1.csv", sidecar=sidecar).rows)
    empty = decode_change_table_file(
        b"", file_name="S.T/LOAD00000002.csv", sidecar=sidecar, options=options
    )
    assert empty.rejects == []  # a full-load file without rows has nothing to position
