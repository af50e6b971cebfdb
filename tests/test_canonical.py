import datetime as dt
from decimal import Decimal

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from python_udfs.canonical import (
    _decimal_by_quantize,
    canonical_decimal,
    canonical_qlik_value,
    canonical_time,
    canonical_timestamp,
    mask_set_bits,
    normalize_mask_hex,
    packed_decimal,
)
from simulator.linkexpress_extract import _packed


@pytest.mark.parametrize(
    ("value", "scale", "expected"),
    [
        ("1.5", 2, "1.50"),
        ("17520", 2, "17520.00"),
        ("-0.10", 2, "-0.10"),
        (Decimal("3"), 0, "3"),
        ("1.230", 2, "1.23"),
        ("-0.00", 2, "0.00"),  # a negative zero is zero (it was "00.00")
        ("-0", 0, "0"),
        (Decimal("-0.000"), 2, "0.00"),
    ],
)
def test_decimal_has_exactly_the_declared_scale(value, scale, expected):
    assert canonical_decimal(value, scale) == expected


@pytest.mark.parametrize("value", ["1.234", "12a", "1e5", ""])
def test_decimal_never_rounds_and_rejects_non_numbers(value):
    with pytest.raises(ValueError):
        canonical_decimal(value, 2)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2021-12-01 11:20:30.4444444", "2021-12-01 11:20:30.444444"),  # Qlik's 7 digits
        ("2023-03-21T21:34:19.511", "2023-03-21 21:34:19.511000"),  # Kafka header
        ("2023-03-21 14:34:21.000000", "2023-03-21 14:34:21"),  # zero fraction is left out
        ("1994-09-30:15:33:00", "1994-09-30 15:33:00"),  # GoldenGate spelling
    ],
)
def test_timestamp_text(text, expected):
    assert canonical_timestamp(text) == expected


def test_timestamp_overflow_can_reject():
    with pytest.raises(ValueError):
        canonical_timestamp("2021-12-01 11:20:30.4444444", overflow="reject")
    with pytest.raises(ValueError):
        canonical_timestamp("2021-13-01 00:00:00")


def test_aware_datetime_is_rendered_in_utc():
    moment = dt.datetime(2024, 1, 1, 9, 0, tzinfo=dt.timezone(dt.timedelta(hours=9)))
    assert canonical_timestamp(moment) == "2024-01-01 00:00:00"
    assert canonical_time("10:15:00.120") == "10:15:00.120000"


@pytest.mark.parametrize(
    ("mask", "expected"),
    [
        ("008080", [7, 15]),
        ("0B", [0, 1, 3]),
        ("b", [0, 1, 3]),
        ("3a70", [4, 5, 6, 9, 11, 12, 13]),
        ("", []),
    ],
)
def test_mask_vectors_from_the_formats_page(mask, expected):
    assert mask_set_bits(normalize_mask_hex(mask)) == expected


def test_mask_bit_orders_differ_on_multi_byte_masks():
    assert mask_set_bits("008080", "lsb_first_byte") == [15, 23]
    assert normalize_mask_hex(b"\x00\x80\x80") == "008080"
    with pytest.raises(ValueError):
        normalize_mask_hex("0xZZ")


@given(st.integers(min_value=-(10**20), max_value=10**20), st.integers(min_value=0, max_value=6))
def test_decimal_round_trips_through_its_text(unscaled, scale):
    number = Decimal(unscaled).scaleb(-scale)
    text = canonical_decimal(number, scale)
    assert Decimal(text) == number
    assert len(text.partition(".")[2]) == scale


def _rendered(render, value, scale):
    """What ``render`` makes of ``value``: its text, or the message of the ValueError it raises."""
    try:
        return render(value, scale)
    except ValueError as exc:
        return f"ValueError: {exc}"


#: Decimal text as files spell it: a sign or none, digits before and after a point (leading and
#: trailing zeros included), a bare fraction, blanks around, and what is not a decimal.
DECIMAL_TEXT = st.builds(
    lambda blank, sign, whole, point, fraction: f"{blank}{sign}{whole}{point}{fraction}{blank}",
    st.sampled_from(["", " "]),
    st.sampled_from(["", "-", "+"]),
    st.text("00123456789", max_size=25),
    st.sampled_from(["", "."]),
    st.text("0123456789", max_size=12),
) | st.sampled_from(["", "-", ".", "1e5", "NaN", "１２", "١٢.5", "0x1F", "1.2.3"])


@given(
    DECIMAL_TEXT
    | st.integers(-(10**40), 10**40)
    | st.decimals(allow_nan=True, allow_infinity=True, places=None),
    st.integers(min_value=0, max_value=8),
)
@example("-0.000", 2)  # a negative zero is zero
@example(" -00.10 ", 3)  # leading zeros go, blanks too
@example("007", 0)
@example(Decimal("-0E-5"), 2)
@example(Decimal("1.2300"), 2)  # zeros beyond the scale
@example(".5", 1)
@settings(max_examples=500)
def test_decimal_from_its_digits_equals_decimal_arithmetic(value, scale):
    """canonical_decimal renders the common inputs from their digits as text; the result, or
    the error, is what Decimal's quantize gives for every input (the non-ASCII digits Decimal
    reads, exponents and non-finite values go that way whole)."""
    assert _rendered(canonical_decimal, value, scale) == _rendered(
        _decimal_by_quantize, value, scale
    )


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_float_text_round_trips(value):
    assert float(canonical_qlik_value(value, "REAL8")) == value


@given(st.integers(-(10**17) + 1, 10**17 - 1), st.integers(0, 6))
def test_packed_decimal_reads_what_the_simulator_packs(unscaled, scale):
    """The one packed-decimal reader of the three binary feeds (GoldenGate type 189, HiRDB hex
    literals, Linkexpress ``pack`` items) against the simulator's independent writer."""
    text = canonical_decimal(Decimal(unscaled).scaleb(-scale), scale)
    packed = _packed(text, 17, scale)
    assert packed_decimal(packed.hex(), scale) == text
    assert packed_decimal(packed.hex().upper(), scale) == text


@pytest.mark.parametrize(
    ("nibbles", "scale", "expected"),
    [("125C", 1, "12.5"), ("125d", 1, "-12.5"), ("000B", 2, "0.00"), ("7F", 0, "7")],
)
def test_packed_decimal_signs_and_scale(nibbles, scale, expected):
    assert packed_decimal(nibbles, scale) == expected


@pytest.mark.parametrize("nibbles", ["1A5C", "1259", "C", "", "12 C"])
def test_packed_decimal_rejects_a_bad_digit_or_sign(nibbles):
    with pytest.raises(ValueError, match="invalid packed digit or sign"):
        packed_decimal(nibbles, 0)


def test_a_datetime_of_a_year_before_1000_renders_four_digits():
    """The canonical text of a datetime is the text of the same timestamp written out: year
    24 is ``0024`` (glibc's strftime would write ``24``)."""
    moment = dt.datetime(24, 3, 1, 8, 0, 5, 120)
    assert canonical_timestamp(moment) == "0024-03-01 08:00:05.000120"
    assert canonical_timestamp(moment) == canonical_timestamp("0024-03-01 08:00:05.000120")
