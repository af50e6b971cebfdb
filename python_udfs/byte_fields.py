"""Fields at many offsets of a file's bytes, read at once with numpy (issue 47).

The shared readers of the decoders' fast paths (``goldengate_trail/columnar.py``,
``linkexpress_extract/columnar.py``): ``buf`` is the file as a ``uint8`` array, ``pos`` an
``int64`` array of byte offsets, ``order`` ``">"`` (big-endian) or ``"<"``. A fast path that
meets anything it does not read in bulk raises :class:`Decline` (through :func:`check`), and
its format's per-record decoder, the reference, reads the file instead.
"""

from __future__ import annotations

import functools
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa


class Decline(Exception):  # noqa: N818 - a signal, not an error: the reference path decodes
    """The file holds something the fast path leaves to the per-record reference path.

    Its message, when it has one, says what (``option envelope: absent``); :func:`reason`
    names the fast-path function that raised one without a message.
    """


def reason(exc: BaseException) -> str:
    """Say why a fast path left a file to the reference, for the staging summary.

    ``declined: <message>`` for a :class:`Decline` with a message, ``declined in <function>``
    (the innermost frame outside this module: where :func:`check` failed) for one without,
    ``<exception type>: <message>`` for any other exception (a fast-path bug).
    """
    if not isinstance(exc, Decline):
        return f"{type(exc).__name__}: {exc}"
    if str(exc):
        return f"declined: {exc}"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename != __file__]
    return f"declined in {frames[-1].name}" if frames else "declined"


def none_when_declined(fast: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a fast path that raises :class:`Decline` into one that returns None instead."""

    @functools.wraps(fast)
    def decode(*args: Any, **kwargs: Any) -> Any:
        try:
            return fast(*args, **kwargs)
        except Decline:
            return None

    decode.__doc__ = f"Return :func:`{fast.__name__}`'s result, or None where it declines."
    return decode


def check(ok: np.ndarray | bool) -> None:
    """Raise :class:`Decline` unless every element of ``ok`` holds.

    A Python ``bool`` is answered without numpy, whose ``all`` costs microseconds a call:
    the fast paths check some values one by one.
    """
    if ok is True:
        return
    if ok is False or not np.all(ok):
        raise Decline


def u16(buf: np.ndarray, pos: np.ndarray, order: str) -> np.ndarray:
    """Read the u16 at every offset of ``pos`` in ``buf``, in byte order ``order``, as int64."""
    hi, lo = (pos, pos + 1) if order == ">" else (pos + 1, pos)
    return (buf[hi].astype(np.int64) << 8) | buf[lo]


def u32(buf: np.ndarray, pos: np.ndarray, order: str) -> np.ndarray:
    """Read the u32 at every offset of ``pos`` in ``buf``, in byte order ``order``, as int64."""
    first, second = u16(buf, pos, order), u16(buf, pos + 2, order)
    return (first << 16 | second) if order == ">" else (second << 16 | first)


def fixed(buf: np.ndarray, pos: np.ndarray, size: int, kind: str | np.dtype) -> np.ndarray:
    """Read the ``size``-byte values at offsets ``pos`` as numpy dtype ``kind`` (``>i8``…).

    ``kind`` may be a structured dtype of ``size`` bytes (a record header's fields).

    The result keeps ``kind``'s byte order: ``astype`` a native dtype before handing it to
    Arrow, which refuses byte-swapped arrays.
    """
    cells = buf[pos[:, None] + np.arange(size)]
    return np.ascontiguousarray(cells).view(kind).reshape(len(pos))


def gather(buf: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate the byte ranges ``[lo, hi)`` of ``buf``: ``(bytes, int64 offsets)``.

    The index of every byte to take is one running sum: steps of 1 inside a range, and at the
    first byte of each non-empty range the jump from the last byte of the one before.
    """
    lengths = hi - lo
    offsets = np.zeros(len(lo) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    step = np.ones(int(offsets[-1]), dtype=np.int64)
    filled = lengths > 0
    starts, firsts, lasts = offsets[:-1][filled], lo[filled], hi[filled] - 1
    if len(starts):
        step[starts[0]] = firsts[0]
        step[starts[1:]] = firsts[1:] - lasts[:-1]
    return buf[np.cumsum(step)], offsets


def binary(buf: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> pa.Array:
    """Return the byte ranges ``[lo, hi)`` of ``buf`` as one Arrow ``large_binary`` array.

    Ranges in file order that do not overlap (each ends before the next starts: a field of
    every record, the usual case) are cut by Arrow: ``buf`` read as one binary array whose
    values are the ranges and the gaps between them, of which ``take`` keeps the ranges. Any
    other ranges go through :func:`gather`.
    """
    if len(lo) and np.all(lo[1:] >= hi[:-1]):
        bounds = np.empty(2 * len(lo), dtype=np.int64)
        bounds[0::2], bounds[1::2] = lo, hi
        buffers = [None, pa.py_buffer(bounds), pa.py_buffer(buf)]
        spans = pa.Array.from_buffers(pa.large_binary(), len(bounds) - 1, buffers)
        return spans.take(pa.array(np.arange(0, len(bounds) - 1, 2)))
    body, offsets = gather(buf, lo, hi)
    return pa.Array.from_buffers(
        pa.large_binary(), len(lo), [None, pa.py_buffer(offsets), pa.py_buffer(body)]
    )
