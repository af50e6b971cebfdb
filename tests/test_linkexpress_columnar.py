"""Issue 47: the Linkexpress fast path (``columnar.decode_columnar``) against the reference.

Every file ``tests/test_linkexpress_extract.py`` decodes is also decoded by the fast path and
checked against the reference there (its ``decode_extract_file``). This module checks that the
simulator's group files take the fast path, and that each record the reference rejects leaves
the whole file to it.
"""

import pytest

from python_udfs.feed_format import FileToDecode
from python_udfs.linkexpress_extract import columnar, spec
from python_udfs.linkexpress_extract.decoder import decode_extract_file
from tests.fast_paths import assert_same
from tests.test_linkexpress_extract import CATALOG, ORDERS

h = bytes.fromhex
#: formats/linkexpress_extract.md, test vector of layout D: an insert of extraction id 3 (41
#: bytes: length, valid count, extraction id, operation null indicator, operation, then the
#: items in LITTLE form), then a commit record.
INSERT = h("00000029 0007 0003 0000 0001") + h(
    "0000 0000002A 0000 0003 414243 0000 12345C 0000 303037 0000 07E70B15"
)
COMMIT = h("0000000A 0001 0000 8000")


def _damaged(at: int, value: str) -> bytes:
    """The insert with the bytes at ``at`` replaced by ``value`` (hex)."""
    raw = h(value)
    return INSERT[:at] + raw + INSERT[at + len(raw) :]


#: Group files with one record the reference rejects, after two good inserts (or alone, where
#: the rows would hide what the case is about): each is left to the reference whole.
ALONE = {
    "empty marker with items": h("0000000E 0002 0003 0000 FFFF 0000"),
    "empty marker of a wrong valid count": h("0000000C 0003 0003 0000 FFFF"),
    "full extract without a table": h("00000029 0007 0000 0000 0000") + INSERT[12:],
}
REJECTED = {
    "unknown operation": _damaged(10, "0004"),
    "operation null indicator": _damaged(8, "0001"),
    "valid column count": _damaged(4, "0008"),
    "unknown extraction id": _damaged(6, "0009"),
    "bad null indicator": _damaged(12, "1234"),
    "VARCHAR longer than declared": _damaged(20, "0007"),
    "items short of the record": _damaged(20, "0002") + h("00"),
    "bad packed digit": _damaged(27, "123A5C"),
    "bad zoned digit": _damaged(32, "3A3037"),
    "month 13": _damaged(39, "0D"),
    "commit of another operation": h("0000000A 0001 0000 8001"),
    "commit with a null indicator": h("0000000A 0001 0001 8000"),
    "empty marker among rows": h("0000000C 0002 0003 0000 FFFF"),
    "commit with more bytes": h("0000000C 0001 0000 8000 0000"),
    "VARCHAR longer than declared in a longer record": h("0000002D 0007 0003 0000 0001")
    + INSERT[12:20]
    + h("0007 41424344454647")
    + INSERT[25:],
    "undecodable text": _damaged(22, "81FF43"),
    "length beyond the file": h("00000099 0007 0003 0000 0001"),
}


def both(data: bytes, **options):
    """``(fast path result or None, reference result)`` of one group file."""
    kwargs = {
        "file_name": "G.dat",
        "catalog": CATALOG,
        "extraction_ids": {3: ORDERS},
        "options": {"unit": "group", **options},
    }
    return columnar.decode_columnar(data, **kwargs), decode_extract_file(data, **kwargs)


def test_the_format_page_s_group_vector_takes_the_fast_path():
    fast, reference = both(INSERT + INSERT + COMMIT)
    assert fast is not None and not reference.rejects and len(reference.rows) == 3
    assert_same(fast, reference, "raw_linkexpress_extract")
    assert reference.rows[0]["data"] == {
        "ID": "42",
        "NAME": "ABC",
        "PRICE": "123.45",
        "QTY": "7",
        "SHIP_DATE": "2023-11-21",
    }


@pytest.mark.parametrize("case", list(REJECTED) + list(ALONE))
def test_a_record_the_reference_rejects_leaves_the_file_to_it(case):
    data = ALONE[case] + COMMIT if case in ALONE else INSERT + INSERT + REJECTED[case] + COMMIT
    options = {"outcode": "sjis"} if case == "undecodable text" else {}
    fast, reference = both(data, **options)
    assert fast is None
    assert reference.rejects and len(reference.rows) >= (1 if case in ALONE else 3)
    context = {
        "catalog": CATALOG,
        "extraction_ids": {3: ORDERS},
        "options": {"unit": "group", **options},
    }
    assert_same(
        *(
            spec.decode(data, FileToDecode("G.dat", context, 0, 0, None, True, columnar))
            for columnar in (True, False)
        ),
        "raw_linkexpress_extract",
    )


def test_every_simulated_group_file_takes_the_fast_path(tmp_path):
    """The simulator's group files (layout D, LITTLE: the benchmark's), Japanese text, every
    type the simulator writes, NULLs, full extracts, truncates and commits."""
    from simulator.database import JP_TABLES, seed_catalog, simulate
    from simulator.linkexpress_extract import write_extracts

    catalog, ids = seed_catalog("linkexpress_extract")
    write_extracts(simulate(seed=5, transactions=40, tables=JP_TABLES), tmp_path, {}, JP_TABLES)
    files = sorted(p for p in tmp_path.rglob("*.dat"))
    assert len(files) > 3
    for path in files:
        kwargs = {"file_name": path.name, "catalog": catalog, "extraction_ids": ids}
        folder = path.parent.name
        if "." in folder:  # a full extract in its <SCHEMA>.<TABLE> folder
            kwargs["file_table"] = tuple(folder.split("."))
        data = path.read_bytes()
        fast, reference = (
            columnar.decode_columnar(data, **kwargs),
            decode_extract_file(data, **kwargs),
        )
        assert fast is not None and reference.rows and not reference.rejects, path
        assert_same(fast, reference, "raw_linkexpress_extract")


def test_a_fast_path_that_fails_leaves_the_file_to_the_reference(monkeypatch):
    """A bug of the fast path (an exception) costs speed, never the file's rows."""

    def failing(*args, **kwargs):
        raise IndexError("a bug")

    monkeypatch.setattr(columnar, "decode_or_decline", failing)
    data = INSERT + INSERT + COMMIT
    context = {"catalog": CATALOG, "extraction_ids": {3: ORDERS}, "options": {"unit": "group"}}
    result = spec.decode(data, FileToDecode("G.dat", context, 0, 0, None, True, True))
    assert len(result.rows) == 3 and result.table is None
    assert result.fast_path_fallback == "IndexError: a bug"
    reference = decode_extract_file(
        data,
        file_name="G.dat",
        catalog=CATALOG,
        extraction_ids={3: ORDERS},
        options={"unit": "group"},
    )
    assert_same(result, reference, "raw_linkexpress_extract")
