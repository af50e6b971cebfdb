"""The ``linkexpress_extract`` feed format as staging, config and scaffolding use it.

Fujitsu Linkexpress ``lxextdb`` extract files (formats/linkexpress_extract.md; the vendor
excerpt ``seeds/linkexpress_replication_ja.txt``): raw table ``raw_linkexpress_extract``, the
extraction ids of group-unit files (``options.extraction_ids``, then the catalog's
``table_identifier``), and re-delivery by content except for files of empty full extracts only.
The format is not self-describing: the catalog seed declares the layout and types.
"""

from __future__ import annotations

from typing import Any

from python_udfs.feed_format import BOOL, I32, I64, STR, STR_LIST, STR_MAP, FeedFormat, FileToDecode
from python_udfs.linkexpress_extract import decoder
from python_udfs.records import DecodeResult

#: Columns of ``raw_linkexpress_extract`` after the provenance columns: the file's layout as
#: detected, the record's length, extraction id and operation code, the transaction (group
#: unit commit records) and the row as a map.
RAW_COLUMNS = (
    ("file_name", STR),
    ("layout", STR),
    ("logtype", STR),
    ("byte_order", STR),
    ("outcode", STR),
    ("record_length", I64),
    ("valid_column_count", I32),
    ("extraction_id", I32),
    ("operation_code", I32),
    ("operation_name", STR),
    ("source_schema", STR),
    ("source_table", STR),
    ("is_full_extract", BOOL),
    ("transaction_id", STR),
    ("is_transaction_end", BOOL),
    ("column_names", STR_LIST),
    ("data", STR_MAP),
)


def decoder_context(feed, config, catalog, scanned) -> dict[str, Any]:
    """Map extraction ids to ``(schema, table)``, in the context's ``extraction_ids``.

    ``options.extraction_ids`` first, then the catalog's numeric ``table_identifier`` values.
    """
    ids: dict[int, tuple[str, str]] = {}
    for key, table in (feed.options.get("extraction_ids") or {}).items():
        schema, _, name = str(table).rpartition(".")
        ids[int(key)] = (schema, name)
    for (f, ident), table in config.table_identifiers.items():
        if f == feed.name and ident.strip().isdigit():
            ids.setdefault(int(ident), table)
    return {"extraction_ids": ids}


def truncates_only(result: DecodeResult) -> bool:
    """Whether a decoded file holds empty full extracts (``FFFF``, truncates) only.

    Such a file carries nothing that tells two truncates of a table apart, so a repeat of it
    is applied again (applying a truncate twice with no change between changes nothing;
    skipping a real one would keep deleted rows).
    """
    return bool(result.rows) and all(r["operation_code"] == decoder.OP_EMPTY for r in result.rows)


def decode(content: bytes, file: FileToDecode) -> DecodeResult:
    """Decode one whole extract file; its table comes from its folder or the options."""
    return decoder.decode_extract_file(
        content,
        file_name=file.source_file,
        catalog=file.context["catalog"],
        extraction_ids=file.context["extraction_ids"],
        file_table=decoder.file_table_for(
            file.source_file, file.context["options"], list(file.context["catalog"])
        ),
        options=file.context["options"],
    )


FEED_FORMAT = FeedFormat(
    name=decoder.FORMAT,
    raw_columns=RAW_COLUMNS,
    options=decoder.OPTIONS,
    options_page="formats/linkexpress_extract.md",
    decode=decode,
    codec_options=("nchar_encoding",),
    decoder_context=decoder_context,
    deduplicated_by_content=True,
    applied_when_repeated=truncates_only,
)
