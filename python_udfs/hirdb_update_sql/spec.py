"""The ``hirdb_update_sql`` feed format as staging, config and scaffolding use it.

Hitachi HiRDB Datareplicator update-SQL files (formats/hirdb_update_sql.md; the vendor excerpt
``seeds/hirdb_datareplicator_ja.txt``): raw table ``raw_hirdb_update_sql``, only ``SQLTXT_*``
files are data, a file that a later file of its stream follows is complete, a repeated file is a
re-delivery by content, and the ``encoding`` and ``source_time_zone`` options are checked. The
format carries no column types: the catalog seed declares them.
"""

from __future__ import annotations

import codecs
import functools
import zoneinfo
from collections.abc import Mapping
from pathlib import Path
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
from python_udfs.hirdb_update_sql import columnar, decoder
from python_udfs.records import ConfigError, DecodeResult

#: Columns of ``raw_hirdb_update_sql`` after the provenance columns: the line's stamp (as
#: written and in UTC), the statement's type, table and event code, and the SET / VALUES and
#: WHERE images as maps.
RAW_COLUMNS = (
    ("file_name", STR),
    ("stream", STR),
    ("line_length", I64),
    ("encoding", STR),
    ("update_time", STR),
    ("update_time_utc", STR),
    ("stamp_masked", BOOL),
    ("statement_type", STR),
    ("source_schema", STR),
    ("source_table", STR),
    ("event_code", I32),
    ("column_names", STR_LIST),
    ("data", STR_MAP),
    ("where_data", STR_MAP),
)


def is_data_file(name: str) -> bool:
    """Only ``SQLTXT_*`` files are update-SQL files."""
    return bool(decoder.FILE_NAME_RE.match(name))


def superseded_sqltxt(paths: list[Path]) -> set[Path]:
    """Return the HiRDB update-SQL files that a later file of the same stream follows.

    A loader that lands each output under a new name (``SQLTXT_SV1_DST1.<time>``) appends to
    the older file no more, so its last line is complete even without a newline.
    """
    latest: dict[tuple[Path, str], str] = {}
    for path in paths:
        key = (path.parent, decoder.stream_of(path.name))
        latest[key] = max(latest.get(key, ""), path.name)
    return {p for p in paths if p.name < latest[(p.parent, decoder.stream_of(p.name))]}


def check_options(where: str, options: Mapping[str, Any]) -> None:
    """Check ``encoding`` (``auto`` or a codec, ``sjis``/``ujis`` aliases) and the time zone.

    Raises :class:`ConfigError` naming ``where``'s option and the values to use.
    """
    encoding = str(options.get("encoding", "auto"))
    if encoding != "auto":
        try:
            codecs.lookup(decoder.ENCODING_ALIASES.get(encoding.lower(), encoding))
        except LookupError as exc:
            raise ConfigError(
                f"{where}.options.encoding: unknown codec {encoding!r}. Use auto, utf-8, "
                "euc_jp or cp932."
            ) from exc
    zone = str(options.get("source_time_zone", "UTC"))
    try:
        zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise ConfigError(
            f"{where}.options.source_time_zone: unknown time zone {zone!r}. Use an IANA "
            "name such as Asia/Tokyo, or UTC."
        ) from exc


def decode(content: bytes, file: FileToDecode) -> DecodeResult:
    """Decode one update-SQL file from byte ``start`` (types from the catalog seed).

    With ``file.columnar`` the fast path (:func:`columnar.decode_or_decline`) builds the rows as
    an Arrow table; a file it leaves alone or fails on takes the per-line path with the regular
    shapes read by regular expression (:func:`decoder.fast_statement`). Without
    ``file.columnar`` every statement takes the reference path (the tokenizer and parser): the
    same rows, slower.
    """
    arguments = {
        "file_name": file.source_file,
        "catalog": file.context["catalog"],
        "options": file.context["options"],
        "start": file.start,
        "start_index": file.start_index,
        "final": file.final,
    }
    per_line = functools.partial(decoder.decode_update_sql_file, reference=not file.columnar)
    return fast_or_reference(
        columnar.decode_or_decline, per_line, content, file.columnar, **arguments
    )


FEED_FORMAT = FeedFormat(
    name=decoder.FORMAT,
    raw_columns=RAW_COLUMNS,
    options=decoder.OPTIONS,
    options_page="formats/hirdb_update_sql.md",
    decode=decode,
    is_data_file=is_data_file,
    complete_files=superseded_sqltxt,
    check_options=check_options,
    deduplicated_by_content=True,
)
