"""Canonical text of column values over whole Arrow arrays: the twin of ``canonical``.

The rules are DESIGN.md §4's, as :mod:`python_udfs.canonical` writes them per value. The
decoders' fast paths (``<format>/columnar.py``) render every value through these functions,
which give, value for value, the text the scalar rule gives (``tests/test_canonical_arrow.py``
checks each pair with hypothesis, 500 examples each):

==========================  ==========================================================
vector (this module)        scalar twin (:mod:`python_udfs.canonical`)
==========================  ==========================================================
:func:`integers`            ``canonical_integer`` of an ``int``
:func:`integer_texts`       ``canonical_integer`` of text
:func:`scaled_integers`     ``scaled_digits`` (GoldenGate scaled integers)
:func:`digit_rows`          ``scaled_digits`` of rows of digits (packed and zoned decimals)
:func:`decimal_texts`       ``canonical_decimal`` of text
:func:`decimals`            ``canonical_decimal`` of a ``Decimal`` (Arrow decimal128)
:func:`floats`              ``canonical_float`` (``repr`` of the double)
:func:`valid_dates`         the date range check of ``canonical_date`` (year, month, day)
:func:`date_texts`          ``canonical_date`` of ``YYYY-MM-DD`` text
:func:`time_texts`          ``canonical_time`` of text
:func:`timestamp_texts`     ``canonical_timestamp`` of text
:func:`timestamps`          ``canonical_timestamp`` of a ``datetime`` (Arrow timestamps, UTC)
:func:`binary_hex`          uppercase hex of bytes (``_qlik_binary``)
:func:`qlik_values`         ``canonical_qlik_value`` (a column of a Qlik Replicate type)
==========================  ==========================================================

Two shapes of result:

* a function over typed values (``int``, ``float``, timestamp, binary arrays) always renders
  and returns a ``pa.string()`` array; what Arrow cannot render exactly it renders value by
  value with the scalar twin (:func:`by_value`);
* a function over text returns ``(ok, texts)``: ``ok`` is a ``bool`` numpy array, true where
  the value was rendered (nulls count as rendered, and stay null), and ``texts`` holds the
  canonical text there. Elsewhere the value is of a spelling this module does not vouch for:
  the caller renders it with the scalar rule, which renders or raises ValueError (a reject).

Nothing here raises for a bad value; functions raise only for a wrong argument type.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from python_udfs.canonical import (
    QLIK_INTEGER_TYPES,
    QLIK_STRING_TYPES,
    canonical_decimal,
    canonical_float,
    canonical_qlik_value,
    canonical_timestamp,
    scaled_digits,
)

__all__ = [
    "binary_hex",
    "by_value",
    "date_texts",
    "decimal_texts",
    "decimals",
    "digit_rows",
    "floats",
    "integer_texts",
    "integers",
    "matches",
    "or_by_value",
    "qlik_values",
    "scaled_integers",
    "time_texts",
    "timestamp_texts",
    "timestamps",
    "valid_dates",
]

_TIME_OF_DAY = r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
_DAYS_IN_MONTH = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])
#: Seconds from 1970-01-01 to 1000-01-01 and to 9999-12-31 23:59:59: the years whose
#: timestamps Arrow's ``strftime`` writes with four digits, as the scalar rule does.
_FIRST_SECOND, _LAST_SECOND = -30610224000, 253402300799
_HEX_DIGITS = np.frombuffer(b"0123456789ABCDEF", dtype=np.uint8)


def by_value(array: pa.Array, render: Callable[[Any], str]) -> pa.Array:
    """Return ``render`` of each value of ``array`` as a ``pa.string()`` array; nulls stay null.

    ``render`` (a scalar rule of :mod:`python_udfs.canonical`) gets the Python object
    ``to_pylist`` gives and may raise ValueError, which propagates. It is called once per
    distinct value, except for floats (0.0 and -0.0 are equal but render apart).
    """
    if pa.types.is_floating(array.type):
        return pa.array([None if v is None else render(v) for v in array.to_pylist()], pa.string())
    distinct = pc.unique(array)
    texts = pa.array([None if v is None else render(v) for v in distinct.to_pylist()], pa.string())
    return texts.take(pc.index_in(array, value_set=distinct))


def or_by_value(
    ok: np.ndarray, texts: pa.Array, array: pa.Array, render: Callable[[Any], str]
) -> pa.Array:
    """Return ``texts`` where ``ok`` and :func:`by_value` of ``array`` with ``render`` elsewhere.

    The usual end of a text function's ``(ok, texts)``: the values it left are rendered (or
    rejected: ``render`` raises ValueError) by the scalar rule. ``array`` and ``texts`` have the
    same length.
    """
    if ok.all():
        return texts
    left = by_value(pc.if_else(pa.array(ok), pa.scalar(None, array.type), array), render)
    return pc.if_else(pa.array(ok), texts, left)


def matches(texts: pa.Array, pattern: str, null: bool = True) -> np.ndarray:
    """Whether each value of a string array matches the RE2 ``pattern``; a null gives ``null``."""
    return _numpy_bool(pc.match_substring_regex(texts, pattern).fill_null(null))


def _numpy_bool(array: pa.Array) -> np.ndarray:
    return np.asarray(array.to_numpy(zero_copy_only=False), dtype=bool)


def _where(ok: np.ndarray, texts: pa.Array, filler: str) -> pa.Array:
    """``texts`` where ``ok``, else ``filler`` (so that a cast of the result cannot fail)."""
    return pc.if_else(pa.array(ok), texts, filler)


def integers(values: np.ndarray | pa.Array) -> pa.Array:
    """Render integers (a numpy integer array or an Arrow integer array) as plain digits."""
    return pa.array(values).cast(pa.string())


def integer_texts(texts: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """Render integer text as ``canonical_integer`` does: ``(ok, texts)``.

    Text already canonical (``0``, or ``-?`` and digits without a leading zero) is kept, at
    any length; ``-?`` and up to 18 digits with leading zeros or ``-0`` go through int64. A
    ``+``, spaces and longer non-canonical text are not ok.
    """
    ok = matches(texts, r"^(?:0|-?[1-9][0-9]*)$")
    if ok.all():
        return ok, texts
    cast = matches(texts, r"^-?[0-9]{1,18}$") & ~ok
    if cast.any():
        rendered = _where(cast, texts, "0").cast(pa.int64()).cast(pa.string())
        texts = pc.if_else(pa.array(cast), rendered, texts)
    return ok | cast, texts


def scaled_integers(magnitudes: np.ndarray, negative: np.ndarray, scale: int) -> pa.Array:
    """Render ``±magnitude × 10**-scale`` as ``scaled_digits(str(magnitude), negative, scale)``.

    ``magnitudes`` is a non-negative numpy integer array, ``negative`` a ``bool`` array of the
    same length, ``scale`` ≥ 0 the number of fraction digits. A negative zero is ``0``.
    """
    text = pa.array(magnitudes).cast(pa.string())
    if scale:
        padded = pc.utf8_lpad(text, width=scale + 1, padding="0")
        whole = pc.utf8_slice_codeunits(padded, 0, -scale)
        text = pc.binary_join_element_wise(whole, pc.utf8_slice_codeunits(padded, -scale), ".")
    signed = pa.array(np.asarray(negative, dtype=bool) & (magnitudes != 0))
    return pc.if_else(signed, pc.binary_join_element_wise("-", text, ""), text)


def digit_rows(digits: np.ndarray, negative: np.ndarray, scale: int) -> pa.Array:
    """Render rows of decimal digits (most significant first) as ``scaled_digits`` does.

    ``digits`` is a 2-D integer array of values 0–9, one row a value; ``negative`` a ``bool``
    array of its rows. Up to 18 digits through int64, more row by row with the scalar rule.
    Source: the packed and zoned decimals of formats/linkexpress_extract.md.
    """
    if digits.shape[1] > 18:
        texts = ["".join(map(str, row)) for row in digits.tolist()]
        rows = zip(texts, negative.tolist(), strict=True)
        return pa.array([scaled_digits(t, n, scale) for t, n in rows], pa.string())
    powers = 10 ** np.arange(digits.shape[1] - 1, -1, -1, dtype=np.int64)
    return scaled_integers(digits.astype(np.int64) @ powers, negative, scale)


def decimal_texts(texts: pa.Array, scale: int) -> tuple[np.ndarray, pa.Array]:
    """Render decimal text as ``canonical_decimal(text, scale)`` does: ``(ok, texts)``.

    Canonical text (no leading zero, exactly ``scale`` fraction digits, no negative zero) is
    kept at any length. ``-?`` digits with at most ``scale`` fraction digits and at most 28
    digits in all (the precision of Python's decimal context) go through Arrow's decimal128,
    which pads the fraction and drops leading zeros and the sign of a zero, except where it
    writes an exponent (``0E-7``: a value below 1E-6 at a scale of 7 or more). Everything else
    (and every value when ``scale`` < 0) is not ok.
    """
    if scale < 0:
        return _numpy_bool(texts.is_null()), texts
    exact = rf"\.[0-9]{{{scale}}}" if scale else ""
    ok = matches(texts, rf"^-?(?:0|[1-9][0-9]*){exact}$") & ~matches(
        texts, r"^-0(?:\.0*)?$", null=False
    )
    if ok.all() or scale > 27:
        return ok, texts
    fraction = rf"(\.[0-9]{{1,{scale}}})?" if scale else ""
    cast = matches(texts, rf"^-?[0-9]{{1,{28 - scale}}}{fraction}$") & ~ok
    if cast.any():
        filled = _where(cast, texts, "0")
        rendered = filled.cast(pa.decimal128(38, scale)).cast(pa.string())
        cast &= ~matches(rendered, "E", null=False)  # Arrow writes 0E-7 below 1E-6
        texts = pc.if_else(pa.array(cast), rendered, texts)
    return ok | cast, texts


def decimals(array: pa.Array) -> pa.Array:
    """Render an Arrow decimal array (scale ≥ 0) as ``canonical_decimal`` with its own scale.

    Arrow's text has every fraction digit of the scale, except below 1E-6 at a scale of 7 or
    more, where it writes an exponent (``0E-7``): those values take the scalar rule.
    """
    scale = array.type.scale
    texts = array.cast(pa.string())
    plain = ~matches(texts, "E", null=False)
    return or_by_value(plain, texts, array, lambda v: canonical_decimal(v, scale))


def floats(values: np.ndarray | pa.Array) -> pa.Array:
    """Render floats as ``canonical_float`` does: ``repr`` of the double.

    Arrow writes the same shortest digits as ``repr``. Where ``repr`` writes them without an
    exponent (zero, and magnitudes from 1e-4 to below 1e16) and Arrow does too, its text is
    ``repr``'s once a whole number gets ``.0``; every other value (exponents, NaNs,
    infinities) is rendered by the scalar rule. A 4-byte float is widened to a double first.
    """
    doubles = pa.array(values).cast(pa.float64())
    texts = doubles.cast(pa.string())
    magnitude = np.abs(doubles.to_numpy(zero_copy_only=False))
    with np.errstate(invalid="ignore"):
        fixed = (magnitude == 0) | ((magnitude >= 1e-4) & (magnitude < 1e16))
    fixed &= ~_numpy_bool(pc.match_substring(texts, "e").fill_null(True))
    whole = pc.invert(pc.match_substring(texts, "."))
    texts = pc.if_else(whole, pc.binary_join_element_wise(texts, ".0", ""), texts)
    if fixed[_numpy_bool(doubles.is_valid())].all():
        return texts
    return pc.if_else(pa.array(fixed), texts, by_value(doubles, canonical_float))


def valid_dates(year: np.ndarray, month: np.ndarray, day: np.ndarray) -> np.ndarray:
    """Whether each ``(year, month, day)`` is a date ``datetime.date`` accepts (year 1–9999)."""
    leap = (year % 4 == 0) & ((year % 100 != 0) | (year % 400 == 0))
    days = _DAYS_IN_MONTH[np.clip(month, 0, 12)] + ((month == 2) & leap)
    in_month = (month >= 1) & (month <= 12) & (day >= 1) & (day <= days)
    return (year >= 1) & (year <= 9999) & in_month


def _date_parts_valid(texts: pa.Array) -> np.ndarray:
    """:func:`valid_dates` of the ``YYYY-MM-DD`` that starts each text (checked already).

    Once per distinct date: a column's rows share few dates.
    """
    dates = pc.utf8_slice_codeunits(texts, 0, 10).fill_null("0001-01-01")
    distinct = pc.unique(dates)
    parts = []
    for start, stop in ((0, 4), (5, 7), (8, 10)):
        part = pc.utf8_slice_codeunits(distinct, start, stop)
        parts.append(part.cast(pa.int64()).to_numpy(zero_copy_only=False))
    valid = valid_dates(*parts)
    return valid[pc.index_in(dates, value_set=distinct).to_numpy(zero_copy_only=False)]


def date_texts(texts: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """Render date text as ``canonical_date`` does: ``(ok, texts)``, ``YYYY-MM-DD`` of a real date."""
    ok = matches(texts, r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
    ok &= _date_parts_valid(_where(ok, texts, "0001-01-01"))
    return ok, texts


def _fraction(texts: pa.Array, start: int, overflow: str) -> tuple[np.ndarray, pa.Array]:
    """``(ok, .ffffff or "")`` of the fraction digits from ``start`` to each text's end.

    Cut to six digits, left out when zero; with ``overflow: reject`` more than six digits are
    not ok (the scalar rule rejects them unless they are zeros).
    """
    digits = pc.utf8_slice_codeunits(texts, start + 1, start + 7)
    ok = np.ones(len(texts), dtype=bool)
    if overflow == "reject":
        ok = ~_numpy_bool(pc.greater(pc.utf8_length(texts), start + 7).fill_null(False))
    digits = pc.utf8_rpad(digits, width=6, padding="0")
    dot = pc.binary_join_element_wise(".", digits, "")
    return ok, pc.if_else(pc.equal(digits, "000000"), "", dot)


def time_texts(texts: pa.Array, overflow: str = "truncate") -> tuple[np.ndarray, pa.Array]:
    """Render time text as ``canonical_time`` does: ``(ok, texts)``.

    ``HH:MM:SS`` of a time of day, an optional fraction of any number of digits (cut to six,
    left out when zero; with ``overflow: reject``, more than six are not ok).
    """
    ok = matches(texts, rf"^{_TIME_OF_DAY}(\.[0-9]+)?$")
    if ok.all() and matches(texts, rf"^{_TIME_OF_DAY}$").all():  # canonical already
        return ok, texts
    fraction_ok, fraction = _fraction(texts, 8, overflow)
    whole = pc.utf8_slice_codeunits(texts, 0, 8)
    return ok & fraction_ok, pc.binary_join_element_wise(whole, fraction, "")


def timestamp_texts(texts: pa.Array, overflow: str = "truncate") -> tuple[np.ndarray, pa.Array]:
    """Render timestamp text as ``canonical_timestamp`` does: ``(ok, texts)``.

    ``YYYY-MM-DD`` of a real date, a space, ``T`` or ``:`` (GoldenGate), ``HH:MM:SS`` of a
    time of day and an optional fraction (cut to six digits, left out when zero; with
    ``overflow: reject``, more than six are not ok).
    """
    ok = matches(texts, rf"^[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}[ T:]{_TIME_OF_DAY}(\.[0-9]+)?$")
    ok &= _date_parts_valid(_where(ok, texts, "0001-01-01"))
    whole = pc.utf8_replace_slice(texts, 10, 11, " ")  # the date, a space, the rest
    lengths = pc.utf8_length(whole).fill_null(19)
    if pc.all(pc.equal(lengths, 19)).as_py():  # no fraction: nothing more to cut
        return ok, whole
    if pc.all(pc.equal(lengths, 26)).as_py():  # six digits: left out when zero
        zero = pc.equal(pc.utf8_slice_codeunits(whole, 20, 26), "000000")
        return ok, pc.if_else(zero, pc.utf8_slice_codeunits(whole, 0, 19), whole)
    fraction_ok, fraction = _fraction(texts, 19, overflow)
    whole = pc.utf8_slice_codeunits(whole, 0, 19)
    return ok & fraction_ok, pc.binary_join_element_wise(whole, fraction, "")


def timestamps(array: pa.Array, overflow: str = "truncate") -> pa.Array:
    """Render an Arrow timestamp array as ``canonical_timestamp`` renders each ``datetime``.

    ``YYYY-MM-DD HH:MM:SS[.ffffff]`` of the UTC instant (a zoned array is UTC underneath).
    Nanosecond units, and years before 1000 or after 9999, are rendered by the scalar rule.
    """
    unit = array.type.unit
    if unit == "ns":
        return by_value(array, lambda v: canonical_timestamp(v, overflow))
    per_second = {"s": 1, "ms": 1_000, "us": 1_000_000}[unit]
    ticks = array.cast(pa.timestamp(unit)).cast(pa.int64())
    valid = _numpy_bool(ticks.is_valid())
    raw = ticks.fill_null(0).to_numpy()  # int64 throughout: a float64 loses microseconds
    seconds = np.floor_divide(raw, per_second)
    micros = (raw - seconds * per_second) * (1_000_000 // per_second)
    if valid.any() and (
        seconds[valid].min() < _FIRST_SECOND or seconds[valid].max() > _LAST_SECOND
    ):
        return by_value(array, lambda v: canonical_timestamp(v, overflow))
    whole = pc.strftime(pa.array(seconds, pa.timestamp("s")), format="%Y-%m-%d %H:%M:%S")
    fraction = pc.utf8_lpad(pa.array(micros).cast(pa.string()), width=6, padding="0")
    fraction = pc.if_else(pa.array(micros != 0), pc.binary_join_element_wise(".", fraction, ""), "")
    text = pc.binary_join_element_wise(whole, fraction, "")
    return pc.if_else(pa.array(valid), text, pa.nulls(len(array), pa.string()))


def binary_hex(array: pa.Array) -> pa.Array:
    """Render a binary array as uppercase hex text, two digits a byte, no ``0x``; nulls stay null."""
    array = array.cast(pa.large_binary())
    _, offset_buffer, body = array.buffers()
    offsets = np.frombuffer(offset_buffer, dtype=np.int64)[
        array.offset : array.offset + len(array) + 1
    ]
    raw = np.frombuffer(body, dtype=np.uint8) if body is not None else np.zeros(0, np.uint8)
    raw = raw[offsets[0] : offsets[-1]]
    hexes = np.empty(2 * len(raw), dtype=np.uint8)
    hexes[0::2], hexes[1::2] = _HEX_DIGITS[raw >> 4], _HEX_DIGITS[raw & 0x0F]
    text_offsets = pa.array(2 * (offsets - offsets[0]), pa.int64()).buffers()[1]
    out = pa.LargeStringArray.from_buffers(len(array), text_offsets, pa.py_buffer(hexes.tobytes()))
    if array.null_count:
        out = pc.if_else(array.is_valid(), out, pa.scalar(None, pa.large_string()))
    return out.cast(pa.string())


def qlik_values(
    array: pa.Array, qlik_type: str, scale: int = 0, overflow: str = "truncate"
) -> pa.Array:
    """Render one column of a Qlik Replicate type as ``canonical_qlik_value`` renders each value.

    ``array`` is the column as a file holds it: text (CSV, JSON) or a typed Arrow array
    (Parquet, Avro, JSON numbers). ``qlik_type`` is the ``.dfm`` / MD type name, ``scale`` its
    scale, ``overflow`` the subsecond option. Integers, exact decimals of the same scale,
    timestamps, floats and binary are rendered by Arrow, and so are integer, decimal and
    timestamp text; every other value by the scalar rule, which raises ValueError for a value
    that does not parse as the type. Source: formats/qlik_change_tables.md and
    qlik_kafka_messages.md, *Values*.
    """
    kind, arrow_type = qlik_type.upper(), array.type
    if kind in QLIK_STRING_TYPES and pa.types.is_string(arrow_type):
        return array
    if kind in QLIK_INTEGER_TYPES and pa.types.is_integer(arrow_type):
        return integers(array)
    if (
        kind in ("NUMERIC", "DECIMAL")
        and pa.types.is_decimal(arrow_type)
        and arrow_type.scale == scale
    ):
        return decimals(array)
    if kind == "DATETIME" and pa.types.is_timestamp(arrow_type):
        return timestamps(array, overflow)
    if kind in ("REAL4", "REAL8") and pa.types.is_floating(arrow_type):
        return floats(array)
    if kind in ("BYTES", "BLOB") and (
        pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type)
    ):
        return binary_hex(array)

    def render(value: Any) -> str:
        return canonical_qlik_value(value, qlik_type, scale, overflow)  # type: ignore[return-value]

    if pa.types.is_string(arrow_type):
        if kind in QLIK_INTEGER_TYPES:
            return or_by_value(*integer_texts(array), array, render)
        if kind in ("NUMERIC", "DECIMAL"):
            return or_by_value(*decimal_texts(array, scale), array, render)
        if kind == "DATETIME":
            return or_by_value(*timestamp_texts(array, overflow), array, render)
    return by_value(array, render)
