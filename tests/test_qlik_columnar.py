"""The columnar Parquet path of the Qlik change-table decoder gives the per-record path's rows.

``decode_change_table_file(..., columnar=True)`` renders a Parquet change-table file with Arrow
compute (``result.table``); every file it cannot render exactly as the per-record path would is
handed back to that path, which makes the rejects. Known answers: the per-record path (the
reference), on the simulator's Parquet change tables, on files of every Parquet type the Qlik
Parquet mapping uses (formats/qlik_change_tables.md, *Values*), and on damaged files.
"""

from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

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
    columnar = decode_change_table_file(data, file_name=file_name, columnar=True, **kwargs)
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
