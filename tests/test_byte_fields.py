"""The fast paths' shared byte readers (``python_udfs/byte_fields.py``) against plain slicing."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from python_udfs.byte_fields import Decline, binary, check, gather

#: A buffer and byte ranges in it: ``(lo, hi)`` pairs with ``lo <= hi``, in any order, some
#: overlapping, some empty, some repeated.
_RANGES = st.binary(min_size=1, max_size=64).flatmap(
    lambda data: st.tuples(
        st.just(data),
        st.lists(
            st.tuples(st.integers(0, len(data)), st.integers(0, len(data))).map(sorted),
            max_size=12,
        ),
    )
)


@settings(max_examples=300, deadline=None)
@given(_RANGES, st.booleans())
def test_binary_and_gather_cut_the_ranges_a_slice_cuts(case, in_file_order):
    """Both ways of ``binary`` (Arrow's cut of ranges in file order, ``gather`` otherwise)."""
    data, ranges = case
    if in_file_order:  # the ranges of one field of every record: ascending, not overlapping
        ends = sorted(b for pair in ranges for b in pair)  # empty and adjacent ones too
        ranges = list(zip(ends[0::2], ends[1::2], strict=False))
    buf = np.frombuffer(data, np.uint8)
    lo = np.array([a for a, _ in ranges], dtype=np.int64)
    hi = np.array([b for _, b in ranges], dtype=np.int64)
    expected = [data[a:b] for a, b in ranges]
    assert binary(buf, lo, hi).to_pylist() == expected
    body, offsets = gather(buf, lo, hi)
    assert [body[offsets[i] : offsets[i + 1]].tobytes() for i in range(len(lo))] == expected


def test_check_declines_what_does_not_hold():
    """``check`` passes a Python or numpy truth and raises Decline for any falsehood."""
    check(True)
    check(np.array([True, True]))
    check(np.bool_(True))
    for ok in (False, np.array([True, False]), np.bool_(False), 0):
        with pytest.raises(Decline):
            check(ok)
