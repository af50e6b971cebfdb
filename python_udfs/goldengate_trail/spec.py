"""The ``goldengate_trail`` feed format as staging, config and scaffolding use it.

Oracle GoldenGate trail files (formats/goldengate_trail.md; the real trails of
``samples/goldengate/``): raw table ``raw_goldengate_trail``, trail file names
(``<2 chars><6 or 9 digits>``), roll-over to the next sequence number, table definitions from the
catalog seed and the feed's sourcedefs file, and Spark types of GoldenGate's type codes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
from python_udfs.goldengate_trail import columnar, decoder
from python_udfs.records import ConfigError, DecodeResult

#: Columns of ``raw_goldengate_trail`` after the provenance columns: the record header's
#: fields (``IOType`` as ``io_type``, ``TransInd`` as ``trans_ind``…), the trail position, the
#: table, the tokens and the before and after images.
RAW_COLUMNS = (
    ("record_length", I64),
    ("trail_seqno", I64),
    ("hdr_ind", STR),
    ("partition", I32),
    ("undo_flag", I32),
    ("before_after", STR),
    ("rec_length", I32),
    ("io_type", I32),
    ("orig_node", I32),
    ("io_time", STR),
    ("audit_pos", STR),  # u64: text, so that no value overflows a bigint
    ("audit_rba", I64),
    ("trans_ind", I32),
    ("format_type", STR),
    ("syskey_len", I32),
    ("incomplete", I32),
    ("continued", I32),
    ("rec_count", I32),
    ("table_name", STR),
    ("source_schema", STR),
    ("source_table", STR),
    ("tdr_index", I32),
    ("token_row_id", STR),
    ("token_log_csn", STR),
    ("token_tran_id", STR),
    ("transaction_id", STR),
    ("log_csn", STR),
    ("tokens", STR_MAP),
    ("column_names", STR_LIST),
    ("data", STR_MAP),
    ("before_data", STR_MAP),
)

#: Spark SQL types of GoldenGate's integer, float and date type codes (formats/goldengate_trail.md,
#: *column types*); the scaled and decimal codes are in :func:`spark_type_for`.
SPARK_TYPES = {
    130: "smallint",
    131: "int",
    132: "int",
    133: "bigint",
    134: "bigint",
    135: "decimal(20,0)",
    140: "float",
    141: "double",
    142: "float",
    143: "double",
    192: "timestamp",
    191: "timestamp",
}


def spark_type_for(source_type: str, precision: int | None, scale: int | None) -> str:
    """Map a GoldenGate type code (``134``…, as sourcedefs and TDRs give it) to a Spark type.

    Integer codes with a scale become decimals (18 digits for 130–133, 38 for 134–135); the
    decimal codes 150–154 and packed decimal 189 ``decimal(38, scale)``; a code not in
    :data:`SPARK_TYPES`, or a name that is not a code, ``string``.
    """
    kind = (source_type or "").strip()
    if not kind.isdigit():
        return "string"
    code = int(kind)
    if 130 <= code <= 135 and scale:
        return f"decimal({38 if code >= 134 else 18},{scale})"
    if code in (150, 151, 152, 153, 154, 189):
        return f"decimal(38,{scale or 0})"
    return SPARK_TYPES.get(code, "string")


def is_data_file(name: str) -> bool:
    """Only trail files (``<2 chars><6 or 9 digits>``) are data: not sourcedefs or ``dirdef``."""
    return bool(decoder.TRAIL_NAME_RE.match(name))


def rolled_over_trails(paths: list[Path]) -> set[Path]:
    """Return the trail files that a later sequence number of the same trail follows.

    The writer appends to a trail only until it rolls over, so these files are complete.
    """
    latest: dict[tuple[Path, str], int] = {}
    for path in paths:
        seqno = decoder.seqno_from_name(path.name)
        if seqno is not None:
            key = (path.parent, path.name[:2])
            latest[key] = max(latest.get(key, -1), seqno)
    return {
        p
        for p in paths
        if (s := decoder.seqno_from_name(p.name)) is not None and s < latest[(p.parent, p.name[:2])]
    }


def decoder_context(feed, config, catalog, scanned) -> dict[str, Any]:
    """Table definitions: the catalog seed's, then the feed's sourcedefs file over them.

    With ``metadata_source: auto`` the trail's own TDR records win over both (in the decoder).
    Raises :class:`ConfigError` naming the file when ``options.definitions`` does not read.
    """
    definitions = decoder.tables_from_catalog(
        catalog,
        {
            (schema, table): types
            for (f, schema, table), types in config.spark_types.items()
            if f == feed.name
        },
    )
    if feed.options.get("definitions"):
        path = config.landing_root / str(feed.options["definitions"])
        try:
            sourcedefs, _charset = decoder.parse_sourcedefs(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"{path}: sourcedefs file of feed {feed.name} does not read: {exc}. "
                "Regenerate it with defgen or fix vars.cdc_feeds.<feed>.options.definitions."
            ) from exc
        definitions.update(sourcedefs)
    return {"definitions": definitions}


def decode(content: bytes, file: FileToDecode) -> DecodeResult:
    """Decode one trail from byte ``start`` with the feed's table definitions.

    With ``file.columnar`` the fast path (:func:`columnar.decode_or_decline`) builds the rows as
    an Arrow table; a trail it leaves alone or fails on (an exception of the fast path is a bug,
    which the tests see), and every trail without ``file.columnar``, takes the per-record
    reference path (:func:`decoder.decode_trail_file`).
    """
    arguments = {
        "file_name": file.source_file,
        "definitions": file.context.get("definitions"),
        "options": file.context["options"],
        "start": file.start,
        "start_index": file.start_index,
        "final": file.final,
    }
    return fast_or_reference(
        columnar.decode_or_decline, decoder.decode_trail_file, content, file.columnar, **arguments
    )


FEED_FORMAT = FeedFormat(
    name=decoder.FORMAT,
    raw_columns=RAW_COLUMNS,
    options=decoder.OPTIONS,
    options_page="formats/goldengate_trail.md",
    decode=decode,
    codec_options=("char_encoding",),
    is_data_file=is_data_file,
    complete_files=rolled_over_trails,
    decoder_context=decoder_context,
    spark_type_for=spark_type_for,
)
