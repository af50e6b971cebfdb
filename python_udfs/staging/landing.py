"""The landing folders: which files to read, from where, and their bytes.

:func:`list_landing_files` lists a feed's data files, :func:`plan` compares them with the
manifest (skip, read from byte 0, read the new tail of a file that grew, a re-delivery by
:func:`redeliveries`), :func:`candidate_bytes` reads one candidate's bytes in a task (a
``.gz`` stream decompressed by :func:`gunzip_file`), and :class:`FileHashes` hashes the
ingested prefix and the whole file in one pass (SHA-256).
"""

from __future__ import annotations

import collections
import datetime as dt
import hashlib
import os
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from python_udfs.config import ProjectConfig
from python_udfs.feed_format import (
    FeedFormat,
)
from python_udfs.records import EXCERPT_BYTES
from python_udfs.registry import FORMATS
from python_udfs.staging.schemas import UNIX_EPOCH, Candidate, StageSummary


def list_landing_files(feed_path: Path, fmt: str | None = None) -> Iterator[Path]:
    """Yield data files under a feed folder in name order (no sidecars, hidden or temp files).

    With ``fmt``, only the files its :attr:`FeedFormat.is_data_file` accepts (a GoldenGate
    feed's trails, not its sourcedefs file or ``dirdef`` folder; a HiRDB feed's ``SQLTXT_*``).
    """
    is_data_file = FORMATS[fmt].is_data_file if fmt else None
    for root, dirs, files in os.walk(feed_path):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
        for name in sorted(files):
            if name.startswith((".", "_")) or name.endswith((".dfm", ".avsc", ".tmp", ".crc")):
                continue
            if is_data_file is not None and not is_data_file(name):
                continue
            yield Path(root) / name


def candidate_bytes(candidate: Mapping[str, Any]) -> bytes | Gunzipped:
    """Read a candidate file's bytes (``candidate["path"]``, an absolute local path).

    A ``.gz`` file of a format whose files may be gzip streams (:attr:`FeedFormat.gzip_stream`)
    comes decompressed (:func:`gunzip_file`). Called by the staging task that decodes the file.
    Raises OSError when the file cannot be read (a file removed after the batch was planned
    fails the batch; the next run plans again).
    """
    if FORMATS[candidate["format"]].gzip_stream and candidate["path"].lower().endswith(".gz"):
        return gunzip_file(candidate["path"])
    with open(candidate["path"], "rb") as handle:
        return handle.read()


#: Bytes of a compressed file :func:`gunzip_file` reads at a time.
GZIP_CHUNK_BYTES = 2**20


@dataclass(frozen=True, slots=True)
class Gunzipped:
    """A gzip-compressed landing file, decompressed (:func:`gunzip_file`).

    Attributes:
        data: the decompressed bytes, every member's in file order; what the decoder frames.
        file_size: the compressed file's size on disk, in bytes (the manifest's ``file_size``,
            which the next run's plan compares with the file).
        cut: None when the gzip stream ends properly (its last member's trailer read, nothing
            but zero padding after it); else ``(reason, message, excerpt)``: ``truncated_gzip``
            for a stream that ends before its end-of-stream marker (a dump still being written,
            or cut), ``bad_gzip`` for bytes that do not decompress (not gzip at all, a damaged
            member, a wrong CRC-32); ``data`` holds what decompressed before that point.
            ``excerpt`` is, for ``bad_gzip``, up to 200 bytes of the compressed file from
            there, uppercase hex; empty for ``truncated_gzip`` (its reject shows the
            incomplete record instead, :func:`_cut_reject`).
    """

    data: bytearray
    file_size: int
    cut: tuple[str, str, str] | None = None


def gunzip_file(path: str | Path) -> Gunzipped:
    """Decompress a gzip file (RFC 1952) with :mod:`zlib`, :data:`GZIP_CHUNK_BYTES` at a time.

    The compressed bytes are never held whole, only the decompressed stream, so a
    multi-gigabyte dump is in memory once. Concatenated members are read one after the other
    (as ``gzip.decompress`` reads them) and zero padding after a member is skipped. A stream
    that stops short or does not decompress raises nothing: :attr:`Gunzipped.cut` says where
    and why, and the bytes that decompressed before it are returned (issue 48). An empty file
    is an empty stream. Raises OSError when the file cannot be read.
    """
    data = bytearray()
    member = None  # the member being decompressed; None before the first and between two
    members = at = 0  # members read whole; compressed bytes consumed
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        while chunk := handle.read(GZIP_CHUNK_BYTES):
            while chunk:
                if member is None:
                    if members:
                        padded, chunk = chunk, chunk.lstrip(b"\0")
                        at += len(padded) - len(chunk)
                        if not chunk:
                            break
                    member = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)  # gzip framing
                fed = chunk
                try:
                    data += member.decompress(fed)
                except zlib.error as exc:
                    handle.seek(at)
                    excerpt = handle.read(EXCERPT_BYTES).hex().upper()
                    message = (
                        f"cannot gunzip the compressed bytes from {at} on (of {size}): {exc}; "
                        f"the {len(data)} bytes that decompressed before them were decoded"
                    )
                    return Gunzipped(data, size, ("bad_gzip", message, excerpt))
                if not member.eof:
                    at += len(fed)
                    break
                chunk = member.unused_data  # the bytes after this member's trailer
                at += len(fed) - len(chunk)
                member, members = None, members + 1
        if member is not None:
            message = (
                f"the gzip stream ends at compressed byte {size} before its end-of-stream "
                f"marker (a dump still being written, or cut); {len(data)} bytes decompressed"
            )
            return Gunzipped(data, size, ("truncated_gzip", message, ""))
    return Gunzipped(data, size)


class FileHashes:
    """SHA-256 of a file's bytes in one pass.

    The ingested prefix (up to ``start``), extended to the new end, and from any position
    to the whole file.
    """

    def __init__(self, view: memoryview, start: int) -> None:
        self.view, self.start = view, start
        self.running = hashlib.sha256(view[:start])

    def prefix(self) -> str:
        """Return the hash of the bytes ingested before (up to ``start``)."""
        return self.running.hexdigest()

    def whole_file(self, position: int) -> str:
        """Return the hash of the whole file: the running hash continued from ``position``."""
        rest = self.running.copy()
        rest.update(self.view[position:])
        return rest.hexdigest()

    def prefix_to(self, end: int) -> str:
        """Extend the running hash over ``start .. end``; return it (the new prefix's hash)."""
        self.running.update(self.view[self.start : end])
        return self.running.hexdigest()


def plan(
    config: ProjectConfig,
    manifest: Mapping[tuple[str, str], Mapping[str, Any]],
    summary: StageSummary,
    log: Callable[[str], None],
    applied_when_repeated: Callable[[str, FeedFormat, Path], bool],
) -> list[Candidate]:
    """List landing files and decide, per file, skip / read from 0 / read the new tail.

    ``manifest`` is the latest manifest row of each ``(feed, source_file)``
    (:meth:`RawLake.manifest`); ``summary`` counts the files seen and skipped; ``log`` gets
    one line per feed. A new file repeating the bytes of an earlier one is a re-delivery
    (:func:`redeliveries`) unless ``applied_when_repeated(feed, format, path)`` says it
    applies all the same (DESIGN.md §6.5).
    """
    candidates: list[Candidate] = []
    for feed in config.feeds.values():
        new = grown = 0
        fmt = FORMATS[feed.format]
        paths = list(list_landing_files(feed.path, feed.format))
        rolled_over = fmt.complete_files(paths)
        duplicates = (
            redeliveries(config.landing_root, feed.name, paths, manifest)
            if fmt.deduplicated_by_content
            else {}
        )
        if duplicates:
            duplicates = {
                path: first
                for path, first in duplicates.items()
                if not applied_when_repeated(feed.name, fmt, path)
            }
        for path in paths:
            summary.files_seen += 1
            stat = path.stat()
            mtime_us = stat.st_mtime_ns // 1000
            mtime = UNIX_EPOCH + dt.timedelta(microseconds=mtime_us)
            rel = path.relative_to(config.landing_root).as_posix()
            last = manifest.get((feed.name, rel))
            start = start_index = 0
            expected = None
            if last is not None:
                same_mtime = last["mtime_us"] == mtime_us
                unchanged = last["file_size"] == stat.st_size and same_mtime
                # a partial file whose writer has moved on is read once more, as final
                if unchanged and not (last["status"] == "partial" and path in rolled_over):
                    summary.files_skipped += 1
                    continue
                if last["status"] == "refused":
                    start, expected = last["byte_start"], last["prefix_sha256"]
                else:
                    start, expected = last["byte_end"], last["prefix_sha256"]
                start_index = last["record_index_end"] or 0
                grown += 1
            else:
                new += 1
            sidecar = fmt.sidecar(path)
            candidates.append(
                Candidate(
                    feed.name,
                    feed.format,
                    str(path.resolve()),
                    rel,
                    mtime,
                    start,
                    start_index,
                    expected,
                    sidecar,
                    path in rolled_over,
                    duplicates.get(path),
                )
            )
        log(f"  {feed.name} ({feed.format}): {new} new file(s), {grown} grown or changed")
    return candidates


def redeliveries(
    landing_root: Path,
    feed: str,
    paths: list[Path],
    manifest: Mapping[tuple[str, str], Mapping[str, Any]],
) -> dict[Path, str]:
    """Map each new file of ``feed`` that repeats the bytes of an earlier file to that file.

    An earlier file is a complete file ingested before, or a new file earlier in name
    order; it is named by its ``source_file`` (relative to ``landing_root``). Only files whose
    size equals such a file's size are read and hashed (SHA-256), so a batch of new files of
    distinct sizes costs no extra read.
    """
    complete: dict[int, dict[str, str]] = {}  # size -> sha256 -> source_file
    for (f, source_file), m in manifest.items():
        if f == feed and m["status"] == "ingested" and m["byte_end"] == m["file_size"]:
            complete.setdefault(m["file_size"], {})[m["sha256"]] = source_file
    new = {p: p.stat().st_size for p in paths if (feed, _relative(landing_root, p)) not in manifest}
    sizes = collections.Counter(new.values())
    out: dict[Path, str] = {}
    for path, size in new.items():
        if size == 0 or (size not in complete and sizes[size] < 2):
            continue
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        known = complete.setdefault(size, {})
        if digest in known:
            out[path] = known[digest]
        else:
            known[digest] = _relative(landing_root, path)
    return out


def _relative(landing_root: Path, path: Path) -> str:
    return path.relative_to(landing_root).as_posix()
