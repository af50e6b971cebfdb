"""Each vector renderer of ``canonical_arrow`` against its scalar twin in ``canonical`` (issue 74).

For every generated list of values, a value the vector function renders (``ok``) must have
exactly the scalar rule's text, and the scalar rule must accept it; the common spellings (a
value's own canonical text, an ISO date, ...) must be rendered by the vector function, so that
a fast path does not quietly fall back to the scalar rule for them. 500 examples each.
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from python_udfs import canonical_arrow as ca
from python_udfs.canonical import (
    canonical_date,
    canonical_decimal,
    canonical_float,
    canonical_integer,
    canonical_qlik_value,
    canonical_time,
    canonical_timestamp,
    scaled_digits,
)

EXAMPLES = settings(max_examples=500, deadline=None)
OVERFLOW = st.sampled_from(["truncate", "reject"])


def scalar(rule, value):
    """The scalar rule's text, or None when it raises ValueError (a reject)."""
    try:
        return rule(value)
    except ValueError:
        return None


def assert_twins(values, ok, texts, rule, must_render=()):
    """Where ``ok``, the vector text is the scalar rule's; ``must_render`` values are ok."""
    assert len(ok) == len(values) == len(texts)
    for value, rendered, text in zip(values, ok.tolist(), texts.to_pylist(), strict=True):
        if value is None:
            assert rendered and text is None
        elif rendered:
            assert text == scalar(rule, value) is not None, value
        if value in must_render:
            assert rendered, value


def own_canonical(values, rule) -> set[str]:
    """The values that are their own canonical text: a vector renderer must render them."""
    return {v for v in values if v is not None and scalar(rule, v) == v}


@EXAMPLES
@given(st.lists(st.integers(-(2**63), 2**63 - 1)))
def test_integers(values):
    texts = ca.integers(np.array(values, dtype=np.int64))
    assert texts.to_pylist() == [canonical_integer(v) for v in values]


INTEGER_TEXT = st.one_of(
    st.integers(-(10**30), 10**30).map(str),
    st.integers(-(10**17), 10**17).map(lambda v: f"{'-' if v < 0 else ''}00{abs(v)}"),
    st.sampled_from(["-0", "+5", " 7", "1.0", "", "-", "٣"]),
    st.text("0123456789+- ", max_size=22),
)


@EXAMPLES
@given(st.lists(st.tuples(st.integers(0, 2**64 - 1), st.booleans())), st.integers(0, 24))
def test_scaled_integers(pairs, scale):
    magnitudes = np.array([m for m, _ in pairs], dtype=np.uint64)
    negative = np.array([n for _, n in pairs], dtype=bool)
    texts = ca.scaled_integers(magnitudes, negative, scale)
    assert texts.to_pylist() == [scaled_digits(str(m), n, scale) for m, n in pairs]


@EXAMPLES
@given(
    st.integers(1, 24).flatmap(
        lambda w: st.lists(st.lists(st.integers(0, 9), min_size=w, max_size=w), min_size=1)
    ),
    st.integers(0, 6),
)
def test_digit_rows(rows, scale):
    negative = np.array([sum(r) % 2 == 1 for r in rows], dtype=bool)
    texts = ca.digit_rows(np.array(rows, dtype=np.uint8), negative, scale)
    expected = ["".join(map(str, r)) for r in rows]
    assert texts.to_pylist() == [
        scaled_digits(t, n, scale) for t, n in zip(expected, negative.tolist(), strict=True)
    ]


DECIMAL_TEXT = st.one_of(
    st.decimals(allow_nan=False, allow_infinity=False).map(str),
    st.decimals(-(10**20), 10**20, allow_nan=False, allow_infinity=False, places=3).map(str),
    st.decimals(-(10**20), 10**20, allow_nan=False, allow_infinity=False, places=0).map(str),
    st.sampled_from(["-0", "-0.00", "00.10", "1.", ".5", "-.5", "+1.00", "1e5", " 1.00", "1.234"]),
    st.text("0123456789.-", max_size=32),
)


@EXAMPLES
@given(st.lists(st.one_of(st.none(), DECIMAL_TEXT)), st.integers(-1, 30))
def test_decimal_texts(values, scale):
    ok, texts = ca.decimal_texts(pa.array(values, pa.string()), scale)
    if scale < 0:  # left to the scalar rule
        assert ok.tolist() == [v is None for v in values]
        return
    rule = lambda v: canonical_decimal(v, scale)  # noqa: E731
    assert_twins(values, ok, texts, rule, must_render=own_canonical(values, rule))


@EXAMPLES
@given(
    st.integers(0, 12).flatmap(
        lambda scale: st.tuples(
            st.just(scale),
            st.lists(st.one_of(st.none(), st.decimals(-(10**20), 10**20, places=scale))),
        )
    )
)
def test_decimals(case):
    scale, values = case
    array = pa.array(values, pa.decimal128(38, scale))
    expected = [None if v is None else canonical_decimal(v, scale) for v in values]
    assert ca.decimals(array).to_pylist() == expected


FLOAT32 = st.floats(width=32).map(lambda v: float(np.float32(v)))


@EXAMPLES
@given(st.lists(st.one_of(st.none(), st.floats(), FLOAT32)))
def test_floats(values):
    texts = ca.floats(pa.array(values, pa.float64()))
    assert texts.to_pylist() == [None if v is None else canonical_float(v) for v in values]


@EXAMPLES
@given(st.lists(st.floats(width=32)))
def test_floats_of_four_byte_numpy_values(values):
    array = np.array(values, dtype=np.float32)
    assert ca.floats(array).to_pylist() == [canonical_float(v) for v in array.tolist()]


def is_date(year: int, month: int, day: int) -> bool:
    try:
        dt.date(year, month, day)
    except ValueError:
        return False
    return True


@EXAMPLES
@given(st.lists(st.tuples(st.integers(0, 10001), st.integers(0, 13), st.integers(0, 32))))
def test_valid_dates(triples):
    parts = np.array(triples, dtype=np.int64).reshape(-1, 3)
    valid = ca.valid_dates(parts[:, 0], parts[:, 1], parts[:, 2])
    assert valid.tolist() == [is_date(*t) for t in triples]


DATE_TEXT = st.one_of(
    st.dates().map(dt.date.isoformat),
    st.from_regex(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", fullmatch=True),
    st.sampled_from(
        ["0000-01-01", "2023-02-29", "2024-02-29", "21-03-01", " 2021-03-01", "2021-3-1"]
    ),
)


@pytest.mark.parametrize(
    ("vector", "rule", "texts"),
    [
        (ca.integer_texts, canonical_integer, INTEGER_TEXT),
        (ca.date_texts, canonical_date, DATE_TEXT),
    ],
    ids=["integer_texts", "date_texts"],
)
@EXAMPLES
@given(data=st.data())
def test_text_renderers_without_options(vector, rule, texts, data):
    values = data.draw(st.lists(st.one_of(st.none(), texts)))
    ok, rendered = vector(pa.array(values, pa.string()))
    assert_twins(values, ok, rendered, rule, must_render=own_canonical(values, rule))


FRACTION = st.one_of(st.just(""), st.from_regex(r"\.[0-9]{1,9}", fullmatch=True))
TIME_TEXT = st.one_of(
    st.tuples(st.times().map(lambda t: t.strftime("%H:%M:%S")), FRACTION).map("".join),
    st.from_regex(r"[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{0,8})?", fullmatch=True),
    st.sampled_from(["24:00:00", "12:60:00", "1:02:03", "12:00:00.", "12:00"]),
)


TIMESTAMP_TEXT = st.one_of(
    st.tuples(
        st.dates().map(dt.date.isoformat),
        st.sampled_from([" ", "T", ":"]),
        st.times().map(lambda t: t.strftime("%H:%M:%S")),
        FRACTION,
    ).map("".join),
    st.from_regex(
        r"[0-9]{4}-[0-9]{2}-[0-9]{2}[ T:][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{0,8})?", fullmatch=True
    ),
    st.sampled_from(
        ["2023-02-29 00:00:00", "2021-01-01 24:00:00", "2021-01-01", "2021-01-01_00:00:00"]
    ),
)


@pytest.mark.parametrize(
    ("vector", "rule", "texts", "longest"),
    [
        (ca.time_texts, canonical_time, TIME_TEXT, 15),
        (ca.timestamp_texts, canonical_timestamp, TIMESTAMP_TEXT, 26),
    ],
    ids=["time_texts", "timestamp_texts"],
)
@EXAMPLES
@given(data=st.data(), overflow=OVERFLOW)
def test_renderers_with_a_subsecond_option(vector, rule, texts, longest, data, overflow):
    """Text up to six fraction digits that the scalar rule accepts must render here."""
    values = data.draw(st.lists(st.one_of(st.none(), texts)))
    ok, rendered = vector(pa.array(values, pa.string()), overflow)
    must = {v for v in values if v and len(v) <= longest and scalar(rule, v) is not None}
    assert_twins(values, ok, rendered, lambda v: rule(v, overflow), must_render=must)


@EXAMPLES
@given(
    st.lists(st.one_of(st.none(), st.datetimes(dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31)))),
    st.sampled_from(["s", "ms", "us"]),
    st.sampled_from([None, "UTC"]),
)
def test_timestamps(values, unit, zone):
    step = {"s": 1_000_000, "ms": 1_000, "us": 1}[unit]  # microseconds a tick
    values = [
        None if v is None else v.replace(microsecond=v.microsecond // step * step) for v in values
    ]
    aware = [None if v is None or zone is None else v.replace(tzinfo=dt.UTC) for v in values]
    array = pa.array(aware if zone else values, pa.timestamp(unit, tz=zone))
    expected = [None if v is None else canonical_timestamp(v) for v in values]
    assert ca.timestamps(array).to_pylist() == expected


QLIK_CASES = st.sampled_from(
    [
        ("INT4", pa.int32(), st.integers(-(2**31), 2**31 - 1)),
        ("INT8", pa.string(), INTEGER_TEXT),
        ("NUMERIC", pa.string(), DECIMAL_TEXT),
        ("DATETIME", pa.string(), TIMESTAMP_TEXT),
        ("REAL8", pa.float64(), st.floats()),
        ("BYTES", pa.binary(), st.binary(max_size=20)),
        ("DATE", pa.string(), DATE_TEXT),
        ("TIME", pa.string(), TIME_TEXT),
        ("BOOLEAN", pa.string(), st.sampled_from(["1", "0", "true", "x"])),
        ("STRING", pa.string(), st.text(max_size=10)),
    ]
)


@EXAMPLES
@given(
    QLIK_CASES.flatmap(
        lambda c: st.tuples(st.just(c[:2]), st.lists(st.one_of(st.none(), c[2]), max_size=8))
    ),
    st.integers(0, 4),
    OVERFLOW,
)
def test_qlik_values(case, scale, overflow):
    """A whole column renders as its values do one by one, or raises as one of them does."""
    (qlik_type, arrow_type), values = case
    expected = [
        scalar(lambda v: canonical_qlik_value(v, qlik_type, scale, overflow), v) for v in values
    ]
    array = pa.array(values, arrow_type)
    if any(e is None and v is not None for e, v in zip(expected, values, strict=True)):
        with pytest.raises(ValueError):
            ca.qlik_values(array, qlik_type, scale, overflow)
    else:
        assert ca.qlik_values(array, qlik_type, scale, overflow).to_pylist() == expected


@EXAMPLES
@given(st.lists(st.one_of(st.none(), st.binary(max_size=40))), st.integers(0, 3))
def test_binary_hex(values, cut):
    array = pa.array(values, pa.binary()).slice(min(cut, len(values)))
    expected = [None if v is None else v.hex().upper() for v in values[min(cut, len(values)) :]]
    assert ca.binary_hex(array).to_pylist() == expected
