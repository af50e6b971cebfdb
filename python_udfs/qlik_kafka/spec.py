"""The ``qlik_kafka`` feed format as staging, config and scaffolding use it.

Qlik Replicate Kafka target topic dumps (formats/qlik_kafka_messages.md; the real samples
``samples/qlik_kafka/``): raw table ``raw_qlik_kafka``, a first pass over the batch's dumps that
collects the metadata (MD) messages, Avro schemas of Confluent-framed values from
``options.schema_dir``, and Qlik's type names for scaffolding.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from python_udfs.feed_format import (
    BOOL,
    I64,
    STR,
    STR_LIST,
    STR_MAP,
    FeedFormat,
    FileToDecode,
    fast_or_reference,
)
from python_udfs.qlik_change_tables.spec import spark_type_for
from python_udfs.qlik_kafka import columnar, decoder
from python_udfs.records import ConfigError, DecodeResult

#: Columns of ``raw_qlik_kafka`` after the provenance columns: the message envelope's fields
#: (``headers`` of the Qlik message) snake_cased, ``data`` and ``beforeData`` as maps.
RAW_COLUMNS = (
    ("value_format", STR),
    ("message_type", STR),
    ("message_schema_id", STR),
    ("source_schema", STR),
    ("source_table", STR),
    ("table_version", I64),
    ("operation", STR),
    ("change_sequence", STR),
    ("timestamp", STR),
    ("stream_position", STR),
    ("transaction_id", STR),
    ("change_mask", STR),
    ("column_mask", STR),
    ("external_schema_id", STR),
    ("transaction_event_counter", I64),
    ("transaction_last_event", BOOL),
    ("column_names", STR_LIST),
    ("data", STR_MAP),
    ("before_data", STR_MAP),
)


def superseded_dumps(paths: list[Path]) -> set[Path]:
    """Return the Kafka dumps that a later dump of the same topic partition follows.

    A dump named ``<topic>-<partition>-<offset>`` holds the messages from that offset on; once
    a dump with a higher first offset of the same partition exists, the consumer writes the
    older one no more: it is complete, its undecodable tail is a reject (a broken frame, random
    bytes) and a last line without a newline is a message (issue 14).
    """
    latest: dict[tuple[Path, str, int], int] = {}
    streams = {p: decoder.stream_of(p.name) for p in paths}
    for path, stream in streams.items():
        if stream is not None:
            key = (path.parent, stream[0], stream[1])
            latest[key] = max(latest.get(key, -1), stream[2])
    return {
        p
        for p, stream in streams.items()
        if stream is not None and stream[2] < latest[(p.parent, stream[0], stream[1])]
    }


def registry_schemas(feed_path: Path, options: Mapping[str, Any]) -> dict[int, str]:
    """Read ``<schema_dir>/<id>.avsc`` files (Confluent schema ids) named by the feed option."""
    folder = options.get("schema_dir")
    if not folder:
        return {}
    path = (feed_path / folder).resolve()
    return {
        int(p.stem): p.read_text(encoding="utf-8") for p in path.glob("*.avsc") if p.stem.isdigit()
    }


def decoder_context(feed, config, catalog, scanned) -> dict[str, Any]:
    """Kafka catalog (seed columns, then this feed's MD columns), schemas and topic tables.

    Option ``metadata_source`` (formats/qlik_kafka_messages.md): ``in_dump`` takes both,
    ``catalog_file`` the catalog seed's columns only, ``none`` neither (values are typed by
    their JSON types, with a warning per table). ``topic_tables`` maps a topic to
    ``schema.table``: the feed option's, then each catalog table whose ``table_identifier``
    is a topic.
    """
    source = feed.options.get("metadata_source", "in_dump")
    kafka_catalog = decoder.KafkaCatalog()
    if source != "none":
        kafka_catalog.add_columns([c for cols in catalog.values() for c in cols])
    if source == "in_dump":
        kafka_catalog.add_columns(scanned)
    topic_tables = dict(feed.options.get("topic_tables") or {})
    for (f, ident), (schema, table) in config.table_identifiers.items():
        if f == feed.name:
            topic_tables.setdefault(ident, f"{schema}.{table}")
    return {
        "kafka_catalog": kafka_catalog,
        "registry_schemas": registry_schemas(feed.path, feed.options),
        "options": {**feed.options, "topic_tables": topic_tables},
    }


#: A change sequence: 35 digits (formats/qlik_kafka_messages.md, Ordering position).
_CHANGE_SEQUENCE = re.compile(r"[0-9]{35}")


def check_options(where: str, options: Mapping[str, Any]) -> None:
    """Check option ``load_positions`` against ``load_position``.

    ``load_positions`` maps dump file-name patterns (``*``, ``?``) to the 35-digit change
    sequence of the REFRESH rows of the dumps they match; the staging model reads it with
    ``load_position: explicit`` only (macro ``cdc_explicit_load_position``).

    Raises :class:`ConfigError` naming ``where``'s option and what to write instead.
    """
    positions = options.get("load_positions")
    if positions is None:
        return
    if options.get("load_position") != "explicit":
        raise ConfigError(
            f"{where}.options.load_positions is read with load_position: explicit only; add "
            "it, or remove load_positions (formats/qlik_kafka_messages.md)."
        )
    if not isinstance(positions, Mapping) or not all(
        isinstance(p, str) and p and _CHANGE_SEQUENCE.fullmatch(str(v))
        for p, v in positions.items()
    ):
        raise ConfigError(
            f"{where}.options.load_positions: {positions!r} must map dump file-name patterns to "
            '35-digit change sequences, e.g. {"SALES.ORDERS-*-reload.jsonl": '
            '"20240301080000000000000000000000042"}.'
        )


def decode(content: bytes, file: FileToDecode) -> DecodeResult:
    """Decode one dump from byte ``start`` with a copy of the feed's Kafka catalog.

    The decoder adds the MD messages it meets to the catalog it is given; the copy keeps one
    file's messages from leaking into another file's decode in the same task. With
    ``file.columnar`` a dump takes the fast path (:func:`columnar.decode_or_decline`,
    which copies the catalog itself) first; a dump it leaves alone or fails on, and every dump
    without ``file.columnar``, takes the per-message reference path.
    """
    arguments = {
        "file_name": file.source_file,
        "registry_schemas": file.context.get("registry_schemas"),
        "options": file.context["options"],
        "start": file.start,
        "start_index": file.start_index,
        "final": file.final,
    }

    def reference(content: bytes, **arguments: Any) -> DecodeResult:
        catalog = decoder.KafkaCatalog()
        catalog.by_schema_id.update(file.context["kafka_catalog"].by_schema_id)
        catalog.by_table.update(file.context["kafka_catalog"].by_table)
        return decoder.decode_dump_file(content, catalog=catalog, **arguments)

    def fast(content: bytes, **arguments: Any) -> DecodeResult:
        catalog = file.context["kafka_catalog"]
        return columnar.decode_or_decline(content, catalog=catalog, **arguments)

    return fast_or_reference(fast, reference, content, file.columnar, **arguments)


def scan_metadata(content: bytes, file_name: str, start: int):
    """Return the MD messages' columns of one dump from byte ``start`` (``decoder.scan_metadata``)."""
    return decoder.scan_metadata(content, file_name=file_name, start=start)


FEED_FORMAT = FeedFormat(
    name=decoder.FORMAT,
    raw_columns=RAW_COLUMNS,
    options=decoder.OPTIONS,
    options_page="formats/qlik_kafka_messages.md",
    decode=decode,
    complete_files=superseded_dumps,
    decoder_context=decoder_context,
    scan_metadata=scan_metadata,
    scanned_metadata_source="kafka_md",
    spark_type_for=spark_type_for,
    gzip_stream=True,
    check_options=check_options,
)
