"""The columnar Parquet path of the Qlik change-table decoder gives the per-record path's rows.

The fast path (``columnar.py``, through ``feed_format.fast_or_reference``) renders a Parquet change-table file with Arrow
compute (``result.table``); every file it cannot render exactly as the per-record path would is
handed back to that path, which makes the rejects. Known answers: the per-record path (the
reference), on the simulator's Parquet change tables, on files of every Parquet type the Qlik
Parquet mapping uses (formats/qlik_change_tables.md, *Values*), and on damaged files.
"""

from __future__ import annotations

import datetime as dt
import io
import shutil
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from python_udfs.feed_format import fast_or_reference
from python_udfs.qlik_change_tables.columnar import decode_or_decline
from python_udfs.qlik_change_tables.decoder import decode_change_table_file
from python_udfs.records import MetadataColumn
from simulator.database import simulate
from simulator.feeds import write_feed

SEQ = "2024030108000000{:019d}"
HEADERS = {
    "header__change_seq": pa.string(),
    "header__change_oper": pa.string(),
    "header__change_mask": pa.binary(),
    "header__stream_position": pa.string(),
    "header__operation": pa.string(),
    "header__transaction_id": pa.string(),
    "header__timestamp": pa.timestamp("us"),
}
#: (name, Qlik type, scale, Arrow type, values): every row's value of each data column
TYPED = [
    ("ID", "INT8", 0, pa.int64(), [1, -2, 3, 2**62, 5, 6]),
    ("SMALL", "INT2", 0, pa.int16(), [1, None, -7, 0, 32767, 3]),
    ("NAME", "STRING", 0, pa.string(), ["a", "", None, "日本語", " pad ", "x,y"]),
    (
        "AMOUNT",
        "NUMERIC",
        2,
        pa.decimal128(18, 2),
        [Decimal("1.50"), Decimal("-0.05"), Decimal("0"), None, Decimal("9" * 16 + ".99"), 1],
    ),
    ("WIDER", "NUMERIC", 4, pa.decimal128(18, 2), [Decimal("1.5"), None, 0, 1, 2, 3]),
    ("RATE", "REAL8", 0, pa.float64(), [0.1, -0.0, 1e20, None, float("nan"), 100.0]),
    ("FLAG", "BOOLEAN", 0, pa.bool_(), [True, False, None, True, False, True]),
    ("RAW", "BYTES", 0, pa.binary(), [b"\x00\xff", b"", None, b"a", b"b", b"c"]),
    ("DAY", "DATE", 0, pa.date32(), [dt.date(2024, 1, 2), None, dt.date(1, 1, 1)] * 2),
    (
        "AT",
        "DATETIME",
        0,
        pa.timestamp("us"),
        [
            dt.datetime(2024, 1, 2, 3, 4, 5),
            dt.datetime(2024, 1, 2, 3, 4, 5, 120),
            dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
            None,
            dt.datetime(1900, 2, 28, 0, 0, 0, 1),
            dt.datetime(9999, 12, 31, 23, 59, 59),
        ],
    ),
    (
        "AT_UTC",
        "DATETIME",
        0,
        pa.timestamp("ms", tz="Asia/Tokyo"),
        [dt.datetime(2024, 1, 2, 3, 4, 5, 7000, tzinfo=dt.UTC)] * 5 + [None],
    ),
    ("OLD", "DATETIME", 0, pa.timestamp("us"), [dt.datetime(999, 1, 1)] + [None] * 5),
]
OPERS = ["I", "U", "D", "B", "U", "I"]
SEQS = [1, 2, 3, 5, 5, 6]


def _catalog():
    columns = [
        MetadataColumn("S", "T", None, name, i, qlik_type, None, 18, scale, int(i == 1), None, "c")
        for i, (name, qlik_type, scale, _, _) in enumerate(TYPED, start=1)
    ]
    return {("S", "T"): columns}


def _parquet(rows: int = 6, row_group_size: int = 4, **change) -> bytes:
    """A change-table Parquet file of TYPED's columns; ``change`` replaces header columns."""
    columns = {
        "header__change_seq": [SEQ.format(s) for s in SEQS],
        "header__change_oper": OPERS,
        "header__change_mask": [bytes.fromhex("07FF80")] * 6,
        "header__stream_position": ["p"] * 6,
        "header__operation": [
            {"I": "INSERT", "U": "UPDATE", "D": "DELETE", "B": "BEFOREIMAGE"}[o] for o in OPERS
        ],
        "header__transaction_id": ["00000001"] * 3 + ["00000002"] * 3,
        "header__timestamp": [dt.datetime(2024, 3, 1, 8, 0, 0, 10 * i) for i in range(6)],
    }
    columns.update(change)
    arrays = {name: pa.array(columns[name][:rows], HEADERS[name]) for name in HEADERS}
    for name, _, _, arrow_type, values in TYPED:
        arrays[name] = pa.array(values[:rows], arrow_type)
    sink = io.BytesIO()
    pq.write_table(pa.table(arrays), sink, row_group_size=row_group_size)
    return sink.getvalue()


def _both(data: bytes, file_name: str = "S.T__ct/20240301-080000000.parquet", **kwargs):
    """Decode ``data`` both ways; return (columnar result, per-record result)."""
    kwargs.setdefault("catalog", _catalog())
    columnar = fast_or_reference(
        decode_or_decline, decode_change_table_file, data, True, file_name=file_name, **kwargs
    )
    reference = decode_change_table_file(data, file_name=file_name, **kwargs)
    return columnar, reference


def _rows(result) -> list[dict]:
    if result.table is None:
        return result.rows
    rows = result.table.to_pylist()
    for row in rows:
        row["data"] = dict(row["data"])
    return rows


def test_every_parquet_type_renders_as_the_per_record_path_renders_it():
    columnar, reference = _both(_parquet())
    assert columnar.table is not None and reference.table is None
    assert reference.rejects == [] and len(reference.rows) == 6
    assert _rows(columnar) == reference.rows
    # spot checks of the canonical text (DESIGN.md §4)
    first, second = reference.rows[0]["data"], reference.rows[1]["data"]
    assert first["AT"] == "2024-01-02 03:04:05" and second["AT"] == "2024-01-02 03:04:05.000120"
    assert reference.rows[2]["data"]["AT"] == "1969-12-31 23:59:59.999999"
    assert second["AMOUNT"] == "-0.05" and first["WIDER"] == "1.5000"
    assert first["AT_UTC"] == "2024-01-02 03:04:05.007000"


@pytest.mark.parametrize("row_group_size", [1, 4, 100])
def test_row_group_offsets_and_record_indexes_match(row_group_size):
    columnar, reference = _both(_parquet(row_group_size=row_group_size))
    assert columnar.table is not None
    assert _rows(columnar) == reference.rows


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"header__change_seq": ["12"] + [SEQ.format(s) for s in SEQS[1:]]}, "bad_change_seq"),
        ({"header__change_oper": ["X"] + OPERS[1:]}, "unknown_operation"),
        ({"header__operation": ["DELETE"] * 6}, "operation_mismatch"),
        ({"header__change_mask": [bytes.fromhex("FF") * 8] * 6}, "mask_longer_than_columns"),
        ({"header__change_seq": [SEQ.format(s) for s in [1, 2, 3, 4, 5, 6]]}, "unmatched"),
    ],
)
def test_a_file_with_a_reject_is_decoded_record_by_record(change, reason):
    columnar, reference = _both(_parquet(**change))
    assert columnar.table is None
    assert columnar.rows == reference.rows and columnar.rejects == reference.rejects
    assert any(r.reason.startswith(reason) for r in reference.rejects)


def test_a_value_that_does_not_render_leaves_the_file_to_the_per_record_path():
    catalog = _catalog()
    # NAME declared as an integer: "a" is not one
    catalog[("S", "T")][2] = MetadataColumn(
        "S", "T", None, "NAME", 3, "INT4", None, 0, 0, 0, None, "c"
    )
    columnar, reference = _both(_parquet(), catalog=catalog)
    assert columnar.table is None and reference.rejects
    assert columnar.rejects == reference.rejects and columnar.rows == reference.rows


def test_a_damaged_file_is_left_to_the_per_record_path():
    data = _parquet()
    damaged = data[:40] + b"\x00" * 200 + data[240:]
    columnar, reference = _both(damaged)
    assert columnar.table is None
    assert columnar.rejects == reference.rejects and reference.rejects


def test_the_simulators_parquet_change_tables_decode_alike(tmp_path):
    write_feed(simulate(seed=11, transactions=60), "qlik_change_tables", tmp_path)
    files = sorted(tmp_path.rglob("*.parquet"))
    assert files
    for path in files:
        sidecar = path.with_suffix(".dfm")
        name = path.relative_to(tmp_path).as_posix()
        columnar, reference = _both(
            path.read_bytes(),
            file_name=name,
            sidecar=sidecar.read_text() if sidecar.exists() else None,
            catalog={},
        )
        assert columnar.table is not None, name
        assert _rows(columnar) == reference.rows and reference.rejects == []
        assert columnar.metadata == reference.metadata


# Delimited text (pyarrow.csv): the same rows as the per-record path, which stays the reference
# for every file the columnar path cannot be sure of.

CSV_HEADER = (
    "header__change_seq,header__change_oper,header__change_mask,header__stream_position,"
    "header__operation,header__transaction_id,header__timestamp,ID,NAME,AMOUNT,AT\n"
)
CSV_COLUMNS = [
    ("ID", "INT8", 0),
    ("NAME", "STRING", 0),
    ("AMOUNT", "NUMERIC", 2),
    ("AT", "DATETIME", 0),
]


def _csv_catalog():
    return {
        ("S", "T"): [
            MetadataColumn("S", "T", None, name, i, kind, None, 18, scale, int(i == 1), None, "c")
            for i, (name, kind, scale) in enumerate(CSV_COLUMNS, start=1)
        ]
    }


def _csv_record(seq: int, oper: str, values: str, mask: str = "0F") -> str:
    operation = {"I": "INSERT", "U": "UPDATE", "D": "DELETE", "B": "BEFOREIMAGE"}[oper]
    return (
        f'"{SEQ.format(seq)}","{oper}",{mask},"LSN:{seq}","{operation}","0001",'
        f"2024-03-01 08:00:00.{seq:06d},{values}\n"
    )


#: Records the per-record path reads as rows: quoted and bare values, a doubled quote, a line
#: feed inside a quoted value, NULL (a bare empty value) against "" (a quoted one), Qlik's
#: seven fraction digits, a before image with its UPDATE.
CSV_RECORDS = (
    _csv_record(1, "I", '1,"Ann",10.5,2023-01-24 04:26:15.0000000')
    + _csv_record(2, "I", '-02,"Quinn ""Q""",,2023-01-24 04:26:15.1234567')
    + _csv_record(3, "B", '3,"two\nlines",0.00,1999-12-31 23:59:59', mask="")
    + _csv_record(3, "U", '3,"",-0.00,2000-01-01 00:00:00.000001')
    + _csv_record(4, "D", "4,plain,7,2024-02-29 12:00:00", mask="")
)
CSV_NAME = "S.T__ct/20240301-080000000.csv"


def _csv_both(text: str, **kwargs):
    kwargs.setdefault("catalog", _csv_catalog())
    return _both(text.encode("utf-8"), file_name=CSV_NAME, **kwargs)


def _same(columnar, reference) -> None:
    assert _rows(columnar) == reference.rows
    assert (columnar.rejects, columnar.warnings) == (reference.rejects, reference.warnings)
    assert columnar.consumed_end == reference.consumed_end


@pytest.mark.parametrize("trailing_line_feed", [True, False])
def test_a_csv_change_table_renders_as_the_per_record_path_renders_it(trailing_line_feed):
    text = CSV_HEADER + CSV_RECORDS
    columnar, reference = _csv_both(text if trailing_line_feed else text[:-1])
    assert columnar.table is not None and reference.table is None
    assert reference.rejects == [] and len(reference.rows) == 5
    _same(columnar, reference)
    rows = reference.rows
    second = len(CSV_HEADER) + len(CSV_RECORDS.splitlines(True)[0].encode())
    assert [r["record_offset"] for r in rows][:2] == [len(CSV_HEADER), second]
    assert rows[1]["data"]["NAME"] == 'Quinn "Q"' and rows[2]["data"]["NAME"] == "two\nlines"
    assert rows[1]["data"]["AMOUNT"] is None and rows[3]["data"]["NAME"] == ""
    assert rows[1]["data"]["ID"] == "-2" and rows[3]["data"]["AMOUNT"] == "0.00"
    assert rows[0]["data"]["AT"] == "2023-01-24 04:26:15"
    assert rows[1]["data"]["AT"] == "2023-01-24 04:26:15.123456"
    assert rows[2]["header__change_mask"] == ""


def test_a_csv_full_load_without_header_row_renders_alike():
    text = '1,"Ann",10.5,2023-01-24 04:26:15\n2,,,\n'
    columnar, reference = _both(
        text.encode(), file_name="S.T/LOAD00000001.csv", catalog=_csv_catalog()
    )
    assert columnar.table is not None and len(reference.rows) == 2
    _same(columnar, reference)


@pytest.mark.parametrize(
    ("text", "options"),
    [
        (CSV_HEADER + CSV_RECORDS.replace("\n", "\r\n"), {}),  # CRLF: \r stays in the last value
        (CSV_HEADER + CSV_RECORDS.replace('"Ann"', 'A"nn'), {}),  # a quote in a bare value
        (CSV_HEADER + CSV_RECORDS.replace('"Ann"', '"Ann"x'), {}),  # text after a closing quote
        (CSV_HEADER + CSV_RECORDS.replace('"Ann"', '"Ann'), {}),  # a quote never closed
        (CSV_HEADER + CSV_RECORDS.replace(",10.5,", ",10.5,,"), {}),  # one field too many
        (CSV_HEADER + CSV_RECORDS.replace(",10.5,", ",10.555,"), {}),  # beyond the scale
        (CSV_HEADER + CSV_RECORDS.replace("2024-02-29", "2023-02-29"), {}),  # no such day
        (CSV_HEADER + CSV_RECORDS.replace('"I",0F', '"I",XY'), {}),  # a mask that is not hex
        (CSV_HEADER + CSV_RECORDS + CSV_RECORDS.splitlines(True)[0], {}),  # change_seq again
        (CSV_HEADER + CSV_RECORDS.replace('"U"', '"I"').replace("UPDATE", "INSERT"), {}),
        (CSV_HEADER + "\n" + CSV_RECORDS, {}),  # an empty record
        ("\ufeff" + CSV_HEADER + CSV_RECORDS, {}),  # a byte-order mark
        (CSV_HEADER + CSV_RECORDS.replace("Ann", "Änn"), {"encoding": "latin-1"}),
        (CSV_HEADER + CSV_RECORDS.replace(",,", ",NULL,"), {"null_value": "NULL"}),
        (CSV_HEADER + CSV_RECORDS, {"update_unmasked_columns": "absent"}),
    ],
    ids=[
        "crlf",
        "quote_in_bare_value",
        "text_after_quote",
        "unclosed_quote",
        "field_count",
        "scale",
        "bad_date",
        "bad_mask",
        "repeated_change_seq",
        "unmatched_before_image",
        "empty_record",
        "bom",
        "latin1",
        "null_value",
        "unmasked_absent",
    ],
)
def test_csv_the_columnar_path_cannot_be_sure_of_decodes_as_the_reference(text, options):
    columnar, reference = _csv_both(text, options=options)
    if options.get("null_value") == "NULL":  # another NULL text: still columnar
        assert columnar.table is not None and reference.rows[1]["data"]["AMOUNT"] is None
    _same(columnar, reference)


def test_the_simulators_and_the_samples_csv_files_decode_alike(tmp_path, samples):
    write_feed(simulate(seed=11, transactions=60), "qlik_change_tables", tmp_path / "sim")
    shutil.copytree(samples / "qlik_ct", tmp_path / "real")
    files = sorted(tmp_path.rglob("*.csv"))
    assert len(files) > 3
    columnar_files = 0
    for path in files:
        sidecar = path.with_suffix(".dfm")
        name = path.relative_to(path.parents[1]).as_posix()
        columnar, reference = _both(
            path.read_bytes(),
            file_name=name,
            sidecar=sidecar.read_text() if sidecar.exists() else None,
            catalog={},
        )
        columnar_files += columnar.table is not None
        _same(columnar, reference)
        assert columnar.metadata == reference.metadata
    assert columnar_files >= len(files) - 1  # a full load with no column list is a reject


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.data())
def test_damaged_csv_decodes_as_the_reference(data):
    """Bytes of the delimiters, quotes and line feeds inserted, replaced or cut anywhere: the
    columnar path gives the per-record path's rows, rejects and warnings, or leaves the file to
    it."""
    text = (CSV_HEADER + CSV_RECORDS).encode()
    for _ in range(data.draw(st.integers(1, 3))):
        pos = data.draw(st.integers(0, len(text)))
        piece = data.draw(st.sampled_from([b'"', b",", b"\n", b'""', b"\r", b"x", b"\xff", b""]))
        cut = data.draw(st.integers(0, 2))
        text = text[:pos] + piece + text[pos + cut :]
    columnar, reference = _both(text, file_name=CSV_NAME, catalog=_csv_catalog())
    _same(columnar, reference)


TEXT_VALUES = {
    "INT8": st.from_regex(r"\A[+-]?[0-9]{1,20}\Z") | st.sampled_from(["-0", "007", " 5", "1.0"]),
    "NUMERIC": st.from_regex(r"\A-?[0-9]{0,30}(\.[0-9]{0,4})?\Z")
    | st.sampled_from(["-0.00", "007.5", ".5", "1e5", "+1"]),
    "DATETIME": st.builds(
        lambda d, sep, fraction: (
            f"{d.year:04d}-{d.month:02d}-{d.day:02d}{sep}{d:%H:%M:%S}{fraction}"
        ),
        st.datetimes(),
        st.sampled_from([" ", "T", ":"]),
        st.from_regex(r"\A(\.[0-9]{0,9})?\Z"),
    )
    | st.from_regex(
        r"\A[0-9]{4}-[01][0-9]-[0-3][0-9][ T:][0-2][0-9]:[0-6][0-9]:[0-6][0-9](\.[0-9]{0,9})?\Z"
    )
    | st.sampled_from(["0000-01-01 00:00:00", "2023-02-29 00:00:00", "2024-02-29 23:59:60"]),
}


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    st.sampled_from(sorted(TEXT_VALUES)).flatmap(
        lambda kind: st.tuples(
            st.just(kind),
            st.lists(TEXT_VALUES[kind] | st.none(), min_size=1, max_size=6),
            st.sampled_from([0, 2, 4]),
            st.sampled_from(["truncate", "reject"]),
        )
    )
)
def test_text_values_render_by_arrow_as_canonical_qlik_value_renders_them(case):
    """Integer, decimal and timestamp text of a CSV file, rendered by Arrow where it can be
    sure: each value's canonical_qlik_value, or an error where one value has none."""
    from python_udfs.canonical import canonical_qlik_value
    from python_udfs.qlik_change_tables.columnar import render_column

    kind, values, scale, overflow = case
    column = MetadataColumn("S", "T", None, "C", 1, kind, None, 18, scale, 0, None, "c")
    try:
        expected = [canonical_qlik_value(v, kind, scale, overflow) for v in values]
    except ValueError:
        event(f"{kind}: a value with no canonical text")
        with pytest.raises((ValueError, pa.ArrowException)):
            render_column(pa.array(values, pa.string()), column, overflow)
        return
    event(f"{kind}: every value rendered")
    assert render_column(pa.array(values, pa.string()), column, overflow).to_pylist() == expected


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.floats(allow_nan=True, allow_infinity=True)
        | st.floats(min_value=-1e17, max_value=1e17)
        | st.integers(-(10**17), 10**17).map(float)
        | st.none(),
        min_size=1,
        max_size=40,
    ),
    st.sampled_from(["REAL4", "REAL8"]),
)
def test_floats_render_by_arrow_as_repr_of_the_double(values, kind):
    """REAL4 and REAL8 values (Parquet, Avro, JSON numbers) of every magnitude and the odd
    ones (-0.0, NaN, infinities, whole numbers past 1e16): Arrow's text with ``.0`` where
    ``repr`` writes one, each value's ``repr`` of the double where the two could differ."""
    from python_udfs.canonical import canonical_float
    from python_udfs.qlik_change_tables.columnar import render_column

    arrow_type = pa.float32() if kind == "REAL4" else pa.float64()
    array = pa.array(values, arrow_type)
    column = MetadataColumn("S", "T", None, "C", 1, kind, None, None, 0, 0, None, "c")
    expected = [None if v is None else canonical_float(v) for v in array.to_pylist()]
    assert render_column(array, column, "truncate").to_pylist() == expected


def test_a_fast_path_fallback_is_recorded_with_its_reason(monkeypatch):
    """A declined file and a failing fast path both decode alike and say why (issue 74)."""
    from python_udfs.qlik_change_tables import columnar

    data = _parquet()
    declined, reference = _both(data, options={"update_unmasked_columns": "absent"})
    assert declined.table is None and reference.fast_path_fallback is None
    assert declined.fast_path_fallback == "declined: option update_unmasked_columns: absent"

    def failing(*args):
        raise IndexError("a bug")

    monkeypatch.setattr(columnar, "_columnar_rows", failing)
    failed, reference = _both(data)
    assert failed.fast_path_fallback == "IndexError: a bug"
    assert _rows(failed) == _rows(reference)
