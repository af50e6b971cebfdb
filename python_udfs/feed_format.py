"""What one feed format gives the rest of the project: :class:`FeedFormat`.

Each feed format is one package, ``python_udfs/<format>/``: ``decoder.py`` (the pure decoder
and its option table) and ``spec.py`` (its :class:`FeedFormat`: raw table schema, file-name
rules, decoder context, option checks, Spark types). :mod:`python_udfs.registry` lists the
five; the staging job, the configuration check, ``cdc scaffold`` and the test of the dbt
raw-table list iterate over it and name no format (issue 15, ADR 0013).

The Arrow type names below are the raw tables' column types (DESIGN.md §4).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from python_udfs.byte_fields import reason
from python_udfs.records import DecodeResult, MetadataColumn

STR, I64, I32, BOOL = pa.string(), pa.int64(), pa.int32(), pa.bool_()
TS = pa.timestamp("us", tz="UTC")
STR_MAP = pa.map_(pa.string(), pa.string())
STR_LIST = pa.list_(pa.string())

#: Provenance columns every raw table starts with (``ingest_batch_id`` is the partition).
PROVENANCE: tuple[tuple[str, pa.DataType], ...] = (
    ("feed", STR),
    ("source_file", STR),
    ("record_offset", I64),
    ("record_index", I64),
)


def fast_or_reference(
    fast: Callable[..., DecodeResult | None],
    reference: Callable[..., DecodeResult],
    content: bytes,
    columnar: bool,
    **arguments: Any,
) -> DecodeResult:
    """Decode ``content`` by a format's fast path, or by its per-record reference.

    With ``columnar`` (:attr:`FileToDecode.columnar`) ``fast`` decodes first. When it leaves
    the file to the reference (raises :class:`~python_udfs.byte_fields.Decline`), or raises
    anything else (a bug: it must cost speed, never the file's rows), ``reference`` decodes the
    file and the result's ``fast_path_fallback`` says why (:func:`byte_fields.reason`; the
    staging summary counts them). Without ``columnar`` ``reference`` decodes it (issue 47, ADR
    0029). Both take ``content`` and the same keyword ``arguments``.
    """
    if not columnar:
        return reference(content, **arguments)
    try:
        return fast(content, **arguments)
    except Exception as exc:  # noqa: BLE001 - the reference reads the file instead
        why = reason(exc)
    result = reference(content, **arguments)
    result.fast_path_fallback = why
    return result


@dataclass(frozen=True, slots=True)
class FileToDecode:
    """What a format's ``decode`` gets besides the file's bytes.

    Attributes:
        source_file: the file's path relative to the landing root (records carry it).
        context: the feed's decoder context: ``options``, ``catalog`` (the feed's catalog seed
            columns by ``(schema, table)``) and what :attr:`FeedFormat.decoder_context` added.
        start: byte offset to decode from (where the last run stopped in a file that grew);
            formats that decode whole files ignore it.
        start_index: the record index the last run ended at (``record_index`` goes on from it).
        sidecar: the text :attr:`FeedFormat.sidecar` read beside the file, or None.
        final: no byte will be appended to the file, so an incomplete last record is a reject
            instead of being left for the next run.
        columnar: the decoder may take its fast path: return its rows as an Arrow table
            (``DecodeResult.table``; Qlik change tables), or parse the regular statements
            without the tokenizer (HiRDB update SQL). False takes the per-record reference
            path, which gives the same rows and rejects (the equivalence tests).
    """

    source_file: str
    context: Mapping[str, Any]
    start: int = 0
    start_index: int = 0
    sidecar: str | None = None
    final: bool = False
    columnar: bool = False


#: ``decode(content, file)``: one file's bytes → :class:`~python_udfs.records.DecodeResult`
#: (pure: no I/O, no Spark; it runs inside the staging job's Spark tasks).
Decode = Callable[[bytes, FileToDecode], DecodeResult]


def _every_file(name: str) -> bool:
    return True


def _none_complete(paths: list[Path]) -> set[Path]:
    return set()


def _no_sidecar(path: Path) -> str | None:
    return None


def _no_context(feed: Any, config: Any, catalog: Any, scanned: list[MetadataColumn]) -> dict:
    return {}


def _no_option_check(where: str, options: Mapping[str, Any]) -> None:
    return None


@dataclass(frozen=True, slots=True)
class FeedFormat:
    """One feed format, as the staging job, ``config`` and ``cdc scaffold`` use it.

    Only ``name``, ``raw_columns``, ``options``, ``options_page`` and ``decode`` are required;
    every hook has a default that does nothing, so a format declares only what it has.

    Attributes:
        name: the ``format:`` value of ``vars.cdc_feeds`` (``goldengate_trail``).
        raw_columns: the raw table's columns after :data:`PROVENANCE`, ``(name, Arrow type)``,
            the format's own field names snake_cased (DESIGN.md §4). The staging job appends
            ``ingested_at``; ``ingest_batch_id`` is the partition.
        options: ``{option: (default, allowed values or None for any)}``, the decoder
            module's ``OPTIONS``, from the format page's option table.
        options_page: the page of ``../shared/formats/`` that documents the options.
        decode: the decoder over one file (:data:`Decode`), pure, run inside Spark tasks.
        is_data_file: ``name → bool``: whether a landing file of this name is a data file
            (a trail ``aa000000123``, ``SQLTXT_*``); the others (sourcedefs, schemas) are not
            ingested.
        complete_files: ``paths → set``: the files of a feed folder that a later file of the
            same stream follows, so no byte will be appended to them (a trail that rolled over):
            their incomplete last record is a reject instead of pending.
        sidecar: ``path → text or None``: a metadata file delivered beside a data file (a
            Qlik ``.dfm``), handed to ``decode``.
        decoder_context: ``(feed, config, catalog, scanned) → dict``: what the decoder needs
            beyond ``options`` and ``catalog`` (GoldenGate definitions, Kafka catalog).
            ``scanned`` holds the feed's columns found by ``scan_metadata``. Raises
            :class:`~python_udfs.config.ConfigError` for a file the options name that does not
            read.
        scan_metadata: ``(content, file_name, start) → columns``, or None: a first pass over
            the batch's files that collects metadata the data records refer to, whatever file
            order they arrive in (Kafka MD messages); its rows have ``metadata_source``
            :attr:`scanned_metadata_source`.
        scanned_metadata_source: the ``raw_metadata.metadata_source`` of those columns.
        codec_options: the options whose value is a Python codec name (``utf-8``, ``cp932``):
            ``config`` looks each one up.
        check_options: ``(where, options) → None``: checks beyond the choices and codecs (a
            time zone name); raises :class:`~python_udfs.config.ConfigError` naming ``where``.
        spark_type_for: ``(source_type, precision, scale) → Spark SQL type``, or None when
            the format carries no metadata to scaffold from (the seeds declare the types).
        deduplicated_by_content: a new file repeating an applied file's bytes is a re-delivery
            (DESIGN.md §6.5): the format's change positions are file names and offsets, so the
            same bytes under another name would be applied again at a new position (a HiRDB
            statement carries only its update time, a Linkexpress differential file its
            operations in extraction order). Qlik rows carry their change sequence and
            GoldenGate records their trail position, so those formats recognise a repeat by
            position instead.
        applied_when_repeated: ``result → bool``, or None for never: whether a re-delivered
            file is applied all the same, from its decoded records (a Linkexpress file of empty
            full extracts only).
        gzip_stream: a landing file whose name ends in ``.gz`` is the format's byte stream
            compressed with gzip (RFC 1952, one member or several): the staging job
            decompresses it in chunks before the decoder frames it
            (:func:`python_udfs.staging.gunzip_file`), and every byte position (``start``,
            ``consumed_end``, reject and record offsets, the manifest's ``byte_*`` and hashes)
            counts in the decompressed stream. A stream that stops short is decoded up to the
            cut, as a file that may still grow (issue 48: Kafka dumps).
    """

    name: str
    raw_columns: tuple[tuple[str, pa.DataType], ...]
    options: Mapping[str, tuple[Any, tuple[Any, ...] | None]]
    options_page: str
    decode: Decode
    is_data_file: Callable[[str], bool] = _every_file
    complete_files: Callable[[list[Path]], set[Path]] = _none_complete
    sidecar: Callable[[Path], str | None] = _no_sidecar
    decoder_context: Callable[..., dict[str, Any]] = _no_context
    scan_metadata: Callable[[bytes, str, int], list[MetadataColumn]] | None = None
    scanned_metadata_source: str | None = None
    codec_options: tuple[str, ...] = ()
    check_options: Callable[[str, Mapping[str, Any]], None] = _no_option_check
    spark_type_for: Callable[[str, int | None, int | None], str] | None = None
    deduplicated_by_content: bool = False
    applied_when_repeated: Callable[[DecodeResult], bool] | None = None
    gzip_stream: bool = False

    @property
    def raw_table(self) -> str:
        """The raw table this format's records land in: ``raw_<name>``."""
        return f"raw_{self.name}"

    @property
    def option_choices(self) -> dict[str, tuple[Any, ...] | None]:
        """``{option: allowed values}`` (``None``: any value), what ``config`` checks."""
        return {name: spec[1] for name, spec in self.options.items()}
