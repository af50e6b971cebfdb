"""Record shapes shared by every decoder: rejects, metadata columns and decode results.

Decoders are pure functions (bytes in, :class:`DecodeResult` out). They never raise for bad
input: each undecodable byte range or line becomes a :class:`Reject`. Configuration mistakes
raise :class:`ConfigError` (defined in :mod:`python_udfs.config`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

EXCERPT_BYTES = 200


@dataclass(frozen=True, slots=True)
class Reject:
    """One byte range (or line) that could not be decoded.

    ``offset`` and ``length`` are bytes from the start of the file; ``record_index`` is the
    1-based record, line or frame number when known (0 when not). ``reason`` is a short code
    (``wrong_field_count``, ``invalid_json``…), ``message`` says what was wrong in words, and
    ``excerpt`` holds up to 200 bytes of the raw input as uppercase hex.
    """

    offset: int
    length: int
    record_index: int
    reason: str
    message: str
    excerpt: str

    @classmethod
    def of(
        cls,
        data: bytes | memoryview,
        offset: int,
        end: int,
        record_index: int,
        reason: str,
        message: str,
    ) -> Reject:
        """Build a reject for ``data[offset:end]``, with its hex excerpt."""
        excerpt = bytes(data[offset : min(end, offset + EXCERPT_BYTES)]).hex().upper()
        return cls(offset, end - offset, record_index, reason, message, excerpt)


class ConfigError(Exception):
    """A configuration mistake: the message names the file and the fix.

    Raised before any file is decoded (``python_udfs.config``, a format's option checks and
    decoder context); the CLI prints the message and exits with status 2. Re-exported by
    ``python_udfs.config``.
    """


class RecordError(Exception):
    """Raised inside a binary decoder for a record that becomes a reject.

    ``reason`` is the reject's short code, the message its words. Decoders catch it at the
    record boundary; it never leaves a decoder.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class MetadataColumn:
    """One column of one replicated table, as a feed's own metadata declares it.

    Written to ``raw_metadata``; the scaffolding command turns these rows into the catalog seed
    ``seeds/cdc_columns.csv``. ``source_type`` is the vendor's type name, ``length`` is bytes,
    ``primary_key_position`` is 1-based (0 = not a key column). ``metadata_source`` names where
    it came from (``dfm``, ``kafka_md``); ``schema_id`` and ``data_schema`` are the Kafka MD
    message's schema id and Avro ``dataSchema`` text (null for other sources).
    """

    source_schema: str
    source_table: str
    table_version: int | None
    column_name: str
    ordinal: int
    source_type: str
    length: int | None
    precision: int | None
    scale: int | None
    primary_key_position: int
    nullable: bool | None
    metadata_source: str
    schema_id: str | None = None
    data_schema: str | None = None
    record_offset: int = 0
    record_index: int = 0


@dataclass(slots=True)
class DecodeResult:
    """What a decoder made of one file (or of the new tail of a growing file).

    ``rows`` are dicts shaped like the format's raw table (without the provenance columns the
    staging job adds: feed, source_file, ingest_batch_id, ingested_at). ``consumed_end`` is the
    byte offset after the last complete record: bytes past it (an incomplete last record of a
    file still being written) are left for the next run. Every byte in ``[start, consumed_end)``
    is either in a row or in a reject. ``warnings`` are file-level notes (counts, fallbacks).
    ``table`` is set instead of ``rows`` by a decoder asked for columnar output that could
    decode the whole file that way: a ``pyarrow.Table`` of the same columns as ``rows`` would
    hold (map columns as Arrow maps), in file order. ``fast_path_fallback`` says why a file
    asked for by column was decoded by the reference instead (the fast path's reason or
    exception, :func:`python_udfs.feed_format.fast_or_reference`); None otherwise.
    """

    rows: list[dict[str, Any]] = field(default_factory=list)
    table: Any = None
    rejects: list[Reject] = field(default_factory=list)
    metadata: list[MetadataColumn] = field(default_factory=list)
    consumed_end: int = 0
    warnings: list[str] = field(default_factory=list)
    fast_path_fallback: str | None = None


class FrameChains:
    """Where a damaged file of length-prefixed records can be read again (resynchronisation).

    Formats framed as ``[u32 length][body]`` with no sync marker (Kafka ``.lpv`` dumps,
    Linkexpress layouts C, D and E) lose their framing at a damaged length: the reader lands
    in the middle of a body and every record after it reads as garbage. In a complete file
    the records after the damage still chain, length by length, exactly to the end of the
    file. ``FrameChains(data, ...)[q]`` says whether records read from byte ``q`` do; after a
    rejected record, :meth:`next_start` gives the first such byte, where reading resumes.

    ``big_endian``: byte order of the length. ``add``: bytes to add to the length for the
    whole record (4 when the length excludes itself, 0 when it includes it). ``minimum``: the
    shortest valid record in bytes. ``tombstone``: a length value that means a 4-byte record
    with no body (Kafka's null value, ``0xFFFFFFFF``). Computed once, with numpy, by pointer
    doubling over the next-record offsets: ``O(n log n)`` for an ``n``-byte file, and only
    for a file that has a rejected record.
    """

    def __init__(
        self,
        data: bytes,
        *,
        big_endian: bool = True,
        add: int = 4,
        minimum: int = 4,
        tombstone: int | None = None,
    ) -> None:
        import numpy as np

        n = len(data)
        nxt = np.full(n + 2, n + 1, dtype=np.int64)  # n + 1: no valid chain from here
        if n >= 4:
            raw = np.frombuffer(data, dtype=np.uint8).astype(np.int64)
            b0, b1, b2, b3 = raw[:-3], raw[1:-2], raw[2:-1], raw[3:]
            length = (
                (b0 << 24) | (b1 << 16) | (b2 << 8) | b3
                if big_endian
                else (b3 << 24) | (b2 << 16) | (b1 << 8) | b0
            )
            total = length + add
            if tombstone is not None:
                total = np.where(length == tombstone, 4, total)
            target = np.arange(n - 3, dtype=np.int64) + total
            nxt[: n - 3] = np.where((total >= minimum) & (target <= n), target, n + 1)
        nxt[n] = n
        for _ in range(max(1, n.bit_length() + 1)):
            nxt = nxt[nxt]
        self._chains = nxt[: n + 1] == n

    def __getitem__(self, offset: int) -> bool:
        return bool(self._chains[offset])

    def next_start(self, after: int) -> int:
        """Return the first offset ``> after`` from which records chain to the end of the file.

        The file's length when none does.
        """
        found = self._chains[after + 1 :].nonzero()[0]
        return after + 1 + int(found[0]) if len(found) else len(self._chains) - 1
