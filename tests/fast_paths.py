"""Issue 47: compare a decoder's fast path with its per-record reference path.

A fast path returns its rows as an Arrow table (``DecodeResult.table``), the reference as
dicts (``DecodeResult.rows``); both are read back in the raw table's schema (without the
provenance columns staging adds) and must be equal, as must the rejects, metadata, warnings
and resume offset.
"""

import pyarrow as pa
from hypothesis import strategies as st

from python_udfs.staging import arrow_schema


def raw_rows(result, raw_table: str) -> list[dict]:
    """The rows of a decode result (dicts or an Arrow table) in ``raw_table``'s schema."""
    schema = pa.schema(
        [f for f in arrow_schema(raw_table) if f.name not in ("feed", "source_file")]
    )
    if result.table is None:
        return pa.Table.from_pylist(result.rows, schema=schema).to_pylist()
    table = result.table
    columns = [
        table.column(f.name).cast(f.type) if f.name in table.column_names else pa.nulls(len(table))
        for f in schema
    ]
    return pa.Table.from_arrays(columns, schema=schema).to_pylist()


def assert_same(fast, reference, raw_table: str) -> None:
    """The fast path's result is the reference's: rows, rejects, metadata, warnings, offset."""
    assert raw_rows(fast, raw_table) == raw_rows(reference, raw_table)
    assert fast.rejects == reference.rejects
    assert fast.metadata == reference.metadata
    assert fast.warnings == reference.warnings
    assert fast.consumed_end == reference.consumed_end


def damaged(source: bytes, data, kinds: tuple[str, ...], most: int) -> bytes:
    """Return ``source`` damaged 1 to ``most`` times, each by a kind drawn from ``kinds``.

    ``flip`` one bit, ``set`` one byte, ``cut`` the rest of the file, ``insert`` 1 to 8 bytes,
    ``line`` insert a line of random text; ``data`` is hypothesis's ``st.data()``.
    """
    raw = bytearray(source)
    for _ in range(data.draw(st.integers(1, most))):
        kind = data.draw(st.sampled_from(kinds))
        pos = data.draw(st.integers(0, len(raw) - 1))
        if kind == "flip":
            raw[pos] ^= 1 << data.draw(st.integers(0, 7))
        elif kind == "set":
            raw[pos] = data.draw(st.integers(0, 255))
        elif kind == "cut":
            del raw[max(pos, 1) :]
        elif kind == "insert":
            raw[pos:pos] = data.draw(st.binary(min_size=1, max_size=8))
        else:
            raw[pos:pos] = data.draw(st.text(max_size=40)).encode("utf-8", "replace") + b"\n"
    return bytes(raw)
