"""Canonical text of column values (DESIGN.md §4) and change-mask parsing.

Every decoder renders values through these functions so that one value has one text whatever
feed it came from:

* integers: plain digits with an optional leading ``-``;
* exact decimals: plain digits with exactly the declared scale (never rounded);
* floats: Python ``repr`` of the double (the shortest round-trip form);
* character data: Unicode text, unchanged;
* binary: uppercase hex, no ``0x``;
* booleans: ``true`` / ``false``;
* DATE ``YYYY-MM-DD``; TIME ``HH:MM:SS[.ffffff]``; TIMESTAMP ``YYYY-MM-DD HH:MM:SS[.ffffff]``,
  where the fraction is left out when zero and is otherwise exactly six digits (microseconds).

Functions raise :class:`ValueError` with a short message when a value does not parse as its
type; decoders turn that into a reject row. Sources: ``formats/qlik_change_tables.md`` and
``formats/qlik_kafka_messages.md`` (section *Values*).
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from decimal import Decimal, InvalidOperation, localcontext

__all__ = [
    "canonical_bool",
    "canonical_date",
    "canonical_decimal",
    "canonical_float",
    "canonical_integer",
    "canonical_time",
    "canonical_timestamp",
    "canonical_qlik_value",
    "mask_set_bits",
    "normalize_mask_hex",
    "japanese_text_score",
    "packed_decimal",
    "scaled_digits",
]

_INT_RE = re.compile(r"[+-]?\d+")
_DECIMAL_RE = re.compile(r"[+-]?(\d+)(?:\.(\d*))?|[+-]?\.(\d+)")
_DATE_RE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_TIME_RE = re.compile(r"(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?")
_TS_RE = re.compile(r"(\d{4})-(\d{2})-(\d{2})[ T:](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?")
_HEX_RE = re.compile(r"[0-9A-Fa-f]*")

EPOCH = dt.datetime(1970, 1, 1)


def canonical_integer(value: object) -> str:
    """Render an integer (``int`` or decimal-digit text) as plain digits.

    Raises ValueError for text that is not an integer (``"12a"``, ``"1.5"``) and for bools.
    """
    if isinstance(value, bool):
        raise ValueError(f"boolean {value!r} is not an integer")
    if isinstance(value, int):
        return str(value)
    text = str(value).strip()
    if not _INT_RE.fullmatch(text):
        raise ValueError(f"{text!r} is not an integer")
    return str(int(text))


def canonical_decimal(value: object, scale: int) -> str:
    """Render an exact decimal with exactly ``scale`` fraction digits, no exponent.

    ``value`` is text (``"1.5"``), ``int``, or :class:`decimal.Decimal`. A value with more
    significant fraction digits than ``scale`` raises ValueError: it is never rounded
    (formats/qlik_change_tables.md, *Bad input*). Trailing zeros beyond the scale are accepted.

    The common inputs (ASCII decimal text, ``int``, a ``Decimal`` whose ``str`` has no
    exponent; ``scale`` at least 0) are rendered from their digits as text
    (:func:`_scaled_text`) rather than by :class:`~decimal.Decimal` arithmetic; anything else,
    and every value with more fraction digits than ``scale``, goes through
    :func:`_decimal_by_quantize`, which raises the errors.
    """
    if scale >= 0 and not isinstance(value, bool | float):
        # an int's or a Decimal's str is such text too, unless the Decimal is written with an
        # exponent (1E-7) or is not finite: those go the slow way
        text = _decimal_text(str(value).strip(), scale)
        if text is not None:
            return text
    return _decimal_by_quantize(value, scale)


def _decimal_text(text: str, scale: int) -> str | None:
    """Render ASCII decimal text by :func:`_scaled_text`, or return ``None`` for other text.

    ``text`` is ``[+-]digits[.digits]`` or ``[+-].digits``; anything else (non-ASCII digits,
    which :class:`~decimal.Decimal` reads too, exponents, names) gives ``None``.
    """
    if not text.isascii():
        return None
    match = _DECIMAL_RE.fullmatch(text)
    if match is None:
        return None
    whole, fraction, bare_fraction = match.groups()
    fraction = fraction or bare_fraction or ""
    return _scaled_text(text[0] == "-", (whole or "") + fraction, -len(fraction), scale)


def _scaled_text(negative: bool, digits: str, exponent: int, scale: int) -> str | None:
    """Render ``±digits × 10**exponent`` with ``scale`` fraction digits (``scale`` >= 0).

    ``digits`` are ASCII decimal digits, leading zeros allowed. Returns ``None`` when the value
    has more significant fraction digits than ``scale``: the caller then raises.
    """
    drop = -exponent - scale  # fraction digits beyond the scale: zeros, or not representable
    if drop > 0:
        kept = max(len(digits) - drop, 0)
        if digits[kept:].strip("0"):
            return None
        digits = digits[:kept]
    else:
        digits += "0" * -drop
    digits = digits.lstrip("0").rjust(scale + 1, "0")
    sign = "-" if negative and digits.strip("0") else ""  # a negative zero is zero
    return sign + (digits[:-scale] + "." + digits[-scale:] if scale else digits)


def _decimal_by_quantize(value: object, scale: int) -> str:
    """Render :func:`canonical_decimal` by :class:`~decimal.Decimal` arithmetic, for any input.

    Every scale; raises ValueError for what is not a decimal of at most ``scale`` fraction
    digits.
    """
    if isinstance(value, bool):
        raise ValueError(f"boolean {value!r} is not a decimal")
    if isinstance(value, float):
        raise ValueError(f"binary float {value!r} is not an exact decimal")
    if isinstance(value, int):
        number = Decimal(value)
    elif isinstance(value, Decimal):
        number = value
    else:
        text = str(value).strip()
        if not _DECIMAL_RE.fullmatch(text):
            raise ValueError(f"{text!r} is not a decimal number")
        try:
            number = Decimal(text)
        except InvalidOperation as exc:  # pragma: no cover - regex guards this
            raise ValueError(f"{text!r} is not a decimal number") from exc
    if not number.is_finite():
        raise ValueError(f"{value!r} is not a finite decimal")
    quantum = Decimal(1).scaleb(-scale)
    with localcontext() as context:  # the result's digits, beyond the default 28 if need be
        context.prec = max(context.prec, number.adjusted() + scale + 2)
        quantized = number.quantize(quantum)
    if quantized != number:
        raise ValueError(f"{value!r} has more than {scale} fraction digits")
    text = format(quantized, "f")
    return text[1:] if text.startswith("-") and quantized == 0 else text  # -0.00 is 0.00


def packed_decimal(nibbles: str, scale: int) -> str:
    """Render a packed (COMP-3) decimal, given as its hex digits, as canonical decimal text.

    Two BCD digits a byte, the last nibble the sign (A C E F positive, B D negative), ``scale``
    fraction digits (a negative zero is ``0``). ``nibbles`` is the hex of the bytes, either
    case (``bytes.hex()``, or a HiRDB ``X'…'`` literal's text). Raises ValueError naming the
    digits for a digit nibble above 9, a sign nibble below A, or fewer than two nibbles.
    Sources: formats/linkexpress_extract.md (``pack``), formats/goldengate_trail.md (type 189),
    formats/hirdb_update_sql.md (note ※1, hex form of DECIMAL).
    """
    digits, sign = nibbles[:-1], nibbles[-1:].upper()
    if not digits.isdigit() or not sign or sign not in "ABCDEF":
        raise ValueError(f"invalid packed digit or sign in {nibbles.upper()}")
    return scaled_digits(digits, sign in "BD", scale)


def scaled_digits(digits: str, negative: bool, scale: int) -> str:
    """Render unsigned decimal ``digits`` with ``scale`` fraction digits as canonical text.

    ``negative`` gives the sign; a negative zero is ``0``. ``scaled_digits("0125", True, 1)``
    is ``-12.5``. The digits of packed and zoned decimals (:func:`packed_decimal`,
    ``linkexpress_extract.zoned_text``); ``int`` raises ValueError for a non-digit.
    """
    value = int(digits)
    text = str(value).rjust(scale + 1, "0")
    whole, frac = (text[:-scale], text[-scale:]) if scale else (text, "")
    return ("-" if negative and value else "") + whole + ("." + frac if frac else "")


def canonical_float(value: object) -> str:
    """Render a float as ``repr`` of the double (REAL4 values are widened first).

    Accepts ``float``, ``int`` or numeric text; raises ValueError otherwise.
    """
    if isinstance(value, bool):
        raise ValueError(f"boolean {value!r} is not a float")
    try:
        return repr(float(value))  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{value!r} is not a floating-point number") from exc


def canonical_bool(value: object) -> str:
    """Render a boolean (``bool``, ``1``/``0``, ``true``/``false``) as ``true``/``false``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value).strip().lower()
    if text in ("1", "true", "t", "y"):
        return "true"
    if text in ("0", "false", "f", "n"):
        return "false"
    raise ValueError(f"{value!r} is not a boolean")


def _fraction(digits: str | None, overflow: str) -> str:
    """Return ``.ffffff`` for fraction digits, or ``""`` when zero; truncate or reject >6."""
    if not digits:
        return ""
    if len(digits) > 6:
        if overflow == "reject" and digits[6:].strip("0"):
            raise ValueError(f"fraction .{digits} has more than 6 digits")
        digits = digits[:6]
    digits = digits.ljust(6, "0")
    return "" if int(digits) == 0 else "." + digits


def canonical_date(value: object) -> str:
    """Render a date (``datetime.date`` or ``YYYY-MM-DD`` text) as ``YYYY-MM-DD``.

    Raises ValueError for text that is no date (``2021-13-01``, ``21-03-01``). Text is checked
    once per distinct value (dates repeat across a feed's rows).
    """
    if isinstance(value, dt.datetime):
        value = value.date()
    if isinstance(value, dt.date):
        return value.isoformat()
    return _date_text(str(value))


@functools.lru_cache(maxsize=2**16)
def _date_text(text: str) -> str:
    """:func:`canonical_date` of text; raises ValueError (not cached) for no date."""
    text = text.strip()
    match = _DATE_RE.fullmatch(text)
    if not match:
        raise ValueError(f"{text!r} is not a date (YYYY-MM-DD)")
    dt.date(*map(int, match.groups()))  # range check: raises ValueError for 2021-13-01
    return text


def canonical_time(value: object, overflow: str = "truncate") -> str:
    """Render a time of day as ``HH:MM:SS[.ffffff]``.

    ``value`` is ``datetime.time`` or text with any number of fraction digits; more than six
    are truncated (``overflow="truncate"``) or rejected (``"reject"``).
    """
    if isinstance(value, dt.time):
        frac = f"{value.microsecond:06d}" if value.microsecond else None
        return f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}" + _fraction(frac, overflow)
    text = str(value).strip()
    match = _TIME_RE.fullmatch(text)
    if not match:
        raise ValueError(f"{text!r} is not a time (HH:MM:SS[.f])")
    hh, mm, ss, frac = match.groups()
    dt.time(int(hh), int(mm), int(ss))
    return f"{hh}:{mm}:{ss}" + _fraction(frac, overflow)


def canonical_timestamp(value: object, overflow: str = "truncate") -> str:
    """Render a timestamp as ``YYYY-MM-DD HH:MM:SS[.ffffff]``.

    ``value`` is ``datetime.datetime`` (an aware one is converted to UTC first) or text in
    ``YYYY-MM-DD HH:MM:SS[.f…]`` with a space, ``T`` or ``:`` (GoldenGate) between date and
    time. Fractions longer than six digits follow ``overflow`` (Qlik writes 7 digits).
    """
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        frac = f"{value.microsecond:06d}" if value.microsecond else None
        # not strftime: glibc's %Y writes year 24 as "24", not "0024"
        whole = f"{value.year:04d}-{value.month:02d}-{value.day:02d} "
        whole += f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}"
        return whole + _fraction(frac, overflow)
    text = str(value).strip()
    match = _TS_RE.fullmatch(text)
    if not match:
        raise ValueError(f"{text!r} is not a timestamp (YYYY-MM-DD HH:MM:SS[.f])")
    y, mo, d, hh, mi, ss, frac = match.groups()
    dt.datetime(int(y), int(mo), int(d), int(hh), int(mi), int(ss))
    return f"{y}-{mo}-{d} {hh}:{mi}:{ss}" + _fraction(frac, overflow)


_INTEGER_TYPES = {"INT1", "INT2", "INT4", "INT8", "UINT1", "UINT2", "UINT4", "UINT8"}
_STRING_TYPES = {"STRING", "WSTRING", "CLOB", "NCLOB"}
_BINARY_TYPES = {"BYTES", "BLOB"}
#: The Qlik Replicate integer type names (rendered as plain digits) and character type names
#: (text kept as it is), as :func:`canonical_qlik_value` renders them.
QLIK_INTEGER_TYPES = frozenset(_INTEGER_TYPES)
QLIK_STRING_TYPES = frozenset(_STRING_TYPES)


def _qlik_integer(value: object, scale: int, overflow: str) -> str:
    if isinstance(value, Decimal | bytes):
        value = int(value) if isinstance(value, Decimal) else value.decode("ascii")
    return canonical_integer(value)


def _qlik_binary(value: object, scale: int, overflow: str) -> str:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex().upper()
    text = str(value).strip()
    if text[:2].lower() == "0x":
        text = text[2:]
    if not _HEX_RE.fullmatch(text) or len(text) % 2:
        raise ValueError(f"{text!r} is not hex")
    return text.upper()


def _qlik_date(value: object, scale: int, overflow: str) -> str:
    if isinstance(value, int):  # Avro "date": days since 1970-01-01
        return _epoch_day(int(value))
    return canonical_date(value)


@functools.lru_cache(maxsize=2**16)
def _epoch_day(days: int) -> str:
    """``YYYY-MM-DD`` of an Avro ``date`` (days since 1970-01-01), once per distinct value."""
    return (EPOCH.date() + dt.timedelta(days=days)).isoformat()


def _qlik_time(value: object, scale: int, overflow: str) -> str:
    if isinstance(value, int):  # Avro "time-millis"
        return canonical_time((EPOCH + dt.timedelta(milliseconds=value)).time(), overflow)
    return canonical_time(value, overflow)


def _qlik_datetime(value: object, scale: int, overflow: str) -> str:
    if isinstance(value, int):  # Avro "timestamp-micros", UTC
        return canonical_timestamp(EPOCH + dt.timedelta(microseconds=value), overflow)
    return canonical_timestamp(value, overflow)


def _qlik_other(value: object) -> str:
    """Render a value of a type without a reader of its own.

    Text stays as it is; JSON booleans and floats become canonical.
    """
    if isinstance(value, bool):
        return canonical_bool(value)
    if isinstance(value, float):
        return canonical_float(value)
    return str(value)


#: The reader of each Qlik Replicate type (``.dfm`` / MD type name, upper case):
#: ``(value, scale, subsecond overflow) -> canonical text``.
_QLIK_READERS = {
    **dict.fromkeys(_INTEGER_TYPES, _qlik_integer),
    "NUMERIC": lambda value, scale, overflow: canonical_decimal(value, scale),
    "DECIMAL": lambda value, scale, overflow: canonical_decimal(value, scale),
    "REAL4": lambda value, scale, overflow: canonical_float(value),
    "REAL8": lambda value, scale, overflow: canonical_float(value),
    **dict.fromkeys(_BINARY_TYPES, _qlik_binary),
    "BOOLEAN": lambda value, scale, overflow: canonical_bool(value),
    "DATE": _qlik_date,
    "TIME": _qlik_time,
    "DATETIME": _qlik_datetime,
}


def canonical_qlik_value(
    value: object, qlik_type: str, scale: int = 0, overflow: str = "truncate"
) -> str | None:
    """Render one column value of a Qlik Replicate type as canonical text.

    ``value`` is what the file holds: text (CSV, JSON strings), ``int``/``float``/``bool``
    (JSON, Avro, Parquet), ``bytes``, ``Decimal`` or a date/time object (Avro logical types,
    Parquet). ``None`` stays ``None`` (a real NULL). ``qlik_type`` is the ``.dfm`` / MD type
    name, read by one function per type family (:data:`_QLIK_READERS`); unknown types keep the
    text as it is. Raises ValueError when the value does not parse as the type. Source:
    formats/qlik_change_tables.md and qlik_kafka_messages.md, *Values*.
    """
    if value is None:
        return None
    reader = _QLIK_READERS.get(qlik_type.upper())
    if reader is not None:
        return reader(value, scale, overflow)
    if isinstance(value, bytes | bytearray):
        raise ValueError(f"binary value for {qlik_type} column")
    return _qlik_other(value)


def normalize_mask_hex(mask: object) -> str:
    """Return a change/column mask as uppercase hex text of even length.

    ``mask`` is hex text (``0x`` prefix allowed; odd length is left-padded with one ``0``),
    raw ``bytes`` (Avro, Parquet), or ``None``/empty (no bits: returns ``""``). Raises
    ValueError for text that is not hex. Source: formats/qlik_change_tables.md, *Change mask*.
    """
    if mask is None:
        return ""
    if isinstance(mask, bytes | bytearray | memoryview):
        return bytes(mask).hex().upper()
    text = str(mask).strip()
    if text[:2].lower() == "0x":
        text = text[2:]
    if not _HEX_RE.fullmatch(text):
        raise ValueError(f"mask {text!r} is not hex")
    if len(text) % 2:
        text = "0" + text
    return text.upper()


def mask_set_bits(mask_hex: str, bit_order: str = "lsb_last_hex") -> list[int]:
    """Return the indexes of the set bits of a normalized hex mask, ascending.

    ``lsb_last_hex`` (default) reads the hex text as one big-endian unsigned number, bit *k* =
    ``(v >> k) & 1``; ``lsb_first_byte`` reads byte 0 as bits 0–7, byte 1 as bits 8–15, each
    byte least-significant bit first. Raises ValueError for an unknown order. The default is
    settled by the real Kafka sample (``008080`` flags ordinals 8 and 16).
    """
    if not mask_hex:
        return []
    raw = bytes.fromhex(mask_hex)
    if bit_order == "lsb_last_hex":
        value = int.from_bytes(raw, "big")
    elif bit_order == "lsb_first_byte":
        value = int.from_bytes(raw, "little")
    else:
        raise ValueError(f"unknown mask_bit_order {bit_order!r}")
    return [k for k in range(value.bit_length()) if (value >> k) & 1]


def _is_plain_japanese(code: int) -> bool:
    return (
        0x20 <= code < 0x7F
        or 0x3000 <= code <= 0x30FF  # CJK symbols, hiragana, katakana
        or 0x4E00 <= code <= 0x9FFF  # CJK unified ideographs
        or 0xFF00 <= code <= 0xFFEF  # half- and full-width forms
        or code in (0x09, 0x0A, 0x0D)
    )


def japanese_text_score(text: str, sample: int = 200_000) -> float:
    """Return how Japanese a text looks, from 0 to 1.

    The score is the share of the first ``sample`` characters that are ASCII, kana, CJK or
    half/full-width forms. It is used to choose between Japanese encodings that all decode the same bytes strictly: EUC-JP
    bytes read as UTF-16 give Hangul and Yi syllables, not kanji, so the right codec scores
    higher. An empty text scores 1.
    """
    head = text[:sample]
    if not head:
        return 1.0
    return sum(1 for ch in head if _is_plain_japanese(ord(ch))) / len(head)
