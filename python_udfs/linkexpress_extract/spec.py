"""The ``linkexpress_extract`` feed format as staging, config and scaffolding use it.

Fujitsu Linkexpress ``lxextdb`` extract files (formats/linkexpress_extract.md; the vendor
excerpt ``seeds/linkexpress_replication_ja.txt``): raw table ``raw_linkexpress_extract``, the
extraction ids of group-unit files (``options.extraction_ids``, then the catalog's
``table_identifier``), and re-delivery by content except for files of empty full extracts only.
The format is not self-describing: the catalog seed declares the layout and types.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from python_udfs.feed_format import (
    BOOL,
    I32,
    I64,
    STR,
    STR_LIST,
    STR_MAP,
    FeedFormat,
    FileToDecode,
    fast_or_reference,
)
from python_udfs.linkexpress_extract import columnar, decoder
from python_udfs.records import ConfigError, DecodeResult

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
    codes = (
        result.table.column("operation_code").to_pylist()
        if result.table is not None
        else [r["operation_code"] for r in result.rows]
    )
    return bool(codes) and all(c == decoder.Operation.EMPTY_FULL_EXTRACT for c in codes)


def check_options(where: str, options: Mapping[str, Any]) -> None:
    """Check options ``file_order`` and ``interval_layout``.

    ``file_order``: ``name``, or a non-empty list of file-name patterns (``*``, ``?``): staging
    model ``stg_linkexpress_extract__changes`` sorts a file by the first pattern its name
    matches (macro ``cdc_file_sort_name``). ``interval_layout``: ``reject``, or a map of INTERVAL
    type names to their ``[field, bytes]`` in file order (:func:`_check_interval_layout`).

    Raises :class:`ConfigError` naming ``where``'s option and the values to use.
    """
    _check_interval_layout(where, options.get("interval_layout", "reject"))
    order = options.get("file_order", "name")
    if order == "name":
        return
    if (
        not isinstance(order, list | tuple)
        or not order
        or not all(isinstance(p, str) and p for p in order)
    ):
        raise ConfigError(
            f"{where}.options.file_order: {order!r} is neither name nor a list of file-name "
            'patterns, e.g. ["DIFF_*.dat", "FULL_*.dat"] (formats/linkexpress_extract.md).'
        )


_INTERVAL_EXAMPLE = (
    '{"INTERVAL DAY TO SECOND": [[SIGN, 1], [DAY, 4], [HOUR, 1], [MINUTE, 1], [SECOND, 1], '
    "[MICROSECOND, 4]]}"
)
_YEAR_MONTH = {"YEAR", "MONTH"}


def _check_interval_layout(where: str, layouts: Any) -> None:
    """Check option ``interval_layout``: ``reject`` (the page's default), or a map of types.

    The map takes INTERVAL type names to fields ``[field, bytes]`` in file order. Fields are :data:`decoder.INTERVAL_FIELDS`: ``SIGN`` takes 1 byte, the others 1, 2, 4 or 8
    (unsigned integers of the file's byte order), and year-month fields do not mix with
    day-time fields. Raises :class:`ConfigError` with an example.
    """
    if layouts == "reject":
        return

    def fault(message: str) -> ConfigError:
        return ConfigError(
            f"{where}.options.interval_layout: {message}. Write reject, or a map of INTERVAL "
            f"types to [field, bytes] lists, e.g. {_INTERVAL_EXAMPLE} (formats/linkexpress_extract.md)."
        )

    if not isinstance(layouts, Mapping) or not layouts:
        raise fault(f"{layouts!r} is neither reject nor a map")
    for name, fields in layouts.items():
        if not str(name).upper().startswith("INTERVAL"):
            raise fault(f"{name!r} is not an INTERVAL type")
        problem = _interval_fields_problem(fields)
        if problem:
            raise fault(f"{name}: {problem}")


def _interval_fields_problem(fields: Any) -> str | None:
    """Return what is wrong with one INTERVAL type's ``[field, bytes]`` list, or None."""
    if not isinstance(fields, list | tuple) or not fields:
        return f"{fields!r} is not a list of [field, bytes]"
    names = []
    for entry in fields:
        if not isinstance(entry, list | tuple) or len(entry) != 2:
            return f"{entry!r} is not [field, bytes]"
        field, size = str(entry[0]).upper(), entry[1]
        if field not in decoder.INTERVAL_FIELDS:
            return f"unknown field {entry[0]!r}"
        if size not in ((1,) if field == "SIGN" else (1, 2, 4, 8)):
            return f"{field} cannot take {size!r} bytes"
        names.append(field)
    values = set(names) - {"SIGN"}
    if not values or len(names) != len(set(names)):
        return "each field once, and at least one that is not SIGN"
    if values & _YEAR_MONTH and values - _YEAR_MONTH:
        return "year-month and day-time fields do not mix"
    return None


def decode(content: bytes, file: FileToDecode) -> DecodeResult:
    """Decode one whole extract file; its table comes from its folder or the options.

    With ``file.columnar`` the fast path (:func:`columnar.decode_or_decline`) builds the rows as
    an Arrow table; a file it leaves alone or fails on (an exception of the fast path is a bug,
    which the tests see), and every file without ``file.columnar``, takes the per-record
    reference path (:func:`decoder.decode_extract_file`).
    """
    arguments = {
        "file_name": file.source_file,
        "catalog": file.context["catalog"],
        "extraction_ids": file.context["extraction_ids"],
        "file_table": decoder.file_table_for(
            file.source_file, file.context["options"], list(file.context["catalog"])
        ),
        "options": file.context["options"],
    }
    return fast_or_reference(
        columnar.decode_or_decline, decoder.decode_extract_file, content, file.columnar, **arguments
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
    check_options=check_options,
)
