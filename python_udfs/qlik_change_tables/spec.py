"""The ``qlik_change_tables`` feed format as staging, config and scaffolding use it.

Qlik Replicate "Store Changes" change tables and full-load files (formats/qlik_change_tables.md;
the real sample ``samples/qlik_ct/``): raw table ``raw_qlik_change_tables``, one ``.dfm``
sidecar per data file, Spark types of Qlik's type names.
"""

from __future__ import annotations

from pathlib import Path

from python_udfs.feed_format import (
    I32,
    I64,
    STR,
    STR_LIST,
    STR_MAP,
    FeedFormat,
    FileToDecode,
    fast_or_reference,
)
from python_udfs.qlik_change_tables import columnar, decoder
from python_udfs.records import DecodeResult

#: Columns of ``raw_qlik_change_tables`` after the provenance columns: the ``header__``
#: columns as the file says them, the data columns as a map of canonical text.
RAW_COLUMNS = (
    ("source_schema", STR),
    ("source_table", STR),
    ("table_version", I64),
    ("start_write_timestamp", STR),
    ("file_kind", STR),
    ("header__change_seq", STR),
    ("header__change_oper", STR),
    ("header__change_mask", STR),
    ("header__stream_position", STR),
    ("header__operation", STR),
    ("header__transaction_id", STR),
    ("header__timestamp", STR),
    ("header__partition_name", STR),
    ("column_names", STR_LIST),
    ("header_column_count", I32),
    ("data", STR_MAP),
)

#: Spark SQL types of Qlik Replicate's data type names (``.dfm`` ``type`` and Kafka MD
#: messages; formats/qlik_change_tables.md, *data types*). Others are ``string``.
SPARK_TYPES = {
    "INT1": "tinyint",
    "INT2": "smallint",
    "INT4": "int",
    "INT8": "bigint",
    "UINT1": "smallint",
    "UINT2": "int",
    "UINT4": "bigint",
    "UINT8": "decimal(20,0)",
    "REAL4": "float",
    "REAL8": "double",
    "BOOLEAN": "boolean",
    "DATE": "date",
    "DATETIME": "timestamp",
    "TIME": "string",
    "BYTES": "binary",
    "BLOB": "binary",
}


def spark_type_for(source_type: str, precision: int | None, scale: int | None) -> str:
    """Map a Qlik Replicate type name (``INT4``, ``NUMERIC``…) to a Spark SQL type.

    ``NUMERIC``/``DECIMAL`` become ``decimal(precision, scale)`` (38 digits when the precision
    is unknown); a name not in :data:`SPARK_TYPES` is ``string``.
    """
    kind = (source_type or "").upper()
    if kind in ("NUMERIC", "DECIMAL"):
        return f"decimal({precision or 38},{scale or 0})"
    return SPARK_TYPES.get(kind, "string")


def sidecar(path: Path) -> str | None:
    """Return the ``.dfm`` text beside a Qlik data file (``X.csv``/``X.csv.gz`` → ``X.dfm``)."""
    stem = path.name.split(".", 1)[0]
    dfm = path.with_name(stem + ".dfm")
    return dfm.read_text(encoding="utf-8") if dfm.is_file() else None


def decode(content: bytes, file: FileToDecode) -> DecodeResult:
    """Decode one change-table or full-load file (whole files: ``start`` is 0).

    With ``file.columnar`` the fast path (:func:`columnar.decode_or_decline`) builds the rows
    as an Arrow table; a file it leaves alone or fails on, and every file without
    ``file.columnar``, takes the per-record reference path.
    """
    return fast_or_reference(
        columnar.decode_or_decline,
        decoder.decode_change_table_file,
        content,
        file.columnar,
        file_name=file.source_file,
        sidecar=file.sidecar,
        catalog=file.context["catalog"],
        options=file.context["options"],
    )


FEED_FORMAT = FeedFormat(
    name=decoder.FORMAT,
    raw_columns=RAW_COLUMNS,
    options=decoder.OPTIONS,
    options_page="formats/qlik_change_tables.md",
    decode=decode,
    codec_options=("encoding",),
    sidecar=sidecar,
    spark_type_for=spark_type_for,
)
