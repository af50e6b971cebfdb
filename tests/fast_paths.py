"""Issue 47: compare a decoder's fast path with its per-record reference path.

A fast path returns its rows as an Arrow table (``DecodeResult.table``), the reference as
dicts (``DecodeResult.rows``); both are read back in the raw table's schema (without the
provenance columns staging adds) and must be equal, as must the rejects, metadata, warnings
and resume offset.
"""

import pyarrow as pa

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
