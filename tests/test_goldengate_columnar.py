"""Issue 47: the GoldenGate fast path (``columnar.decode_columnar``) against the reference.

The per-record decoder (``decoder.decode_trail_file``) is the reference: on the real samples,
on the simulator's trails of every style and on damaged trails, the fast path gives the same
raw rows, rejects, metadata, warnings and resume offset, or leaves the file to the reference
(returns None). The files the simulator writes whole take the fast path.
"""

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from python_udfs.feed_format import FileToDecode
from python_udfs.goldengate_trail import columnar, spec
from python_udfs.goldengate_trail.decoder import decode_trail_file, parse_sourcedefs
from tests import fast_paths
from tests.fast_paths import raw_rows


def _table(result) -> list[dict]:
    return raw_rows(result, "raw_goldengate_trail")


def assert_same(fast, reference) -> None:
    """The fast path's result is the reference's: rows, rejects, metadata, warnings, offset."""
    fast_paths.assert_same(fast, reference, "raw_goldengate_trail")


def both(data: bytes, **kwargs):
    """``(fast path result or None, reference result)`` of one trail."""
    kwargs.setdefault("file_name", "aa000000")
    return columnar.decode_columnar(data, **kwargs), decode_trail_file(data, **kwargs)


@pytest.fixture(scope="module")
def samples_gg(samples):
    folder = samples / "goldengate"
    defs, _charset = parse_sourcedefs((folder / "tc.def").read_text(encoding="utf-8"))
    return {
        "tc000000": ((folder / "tc000000").read_bytes(), defs),
        "tr000000000": ((folder / "tr000000000").read_bytes(), None),
    }


@pytest.mark.parametrize("name", ["tc000000", "tr000000000"])
def test_the_real_trails_take_the_fast_path_and_read_as_the_reference_reads_them(samples_gg, name):
    """tc000000 (sourcedefs, FieldComp) and tr000000000 (TDRs, unified updates), whole and
    resumed at every record: the same rows, TDR metadata and offsets either way."""
    data, defs = samples_gg[name]
    fast, reference = both(data, file_name=name, definitions=defs, final=True)
    assert fast is not None and len(reference.rows) > 5
    assert_same(fast, reference)
    assert fast.metadata or defs  # tr000000000's TDRs land in raw_metadata
    for k, row in enumerate(reference.rows):
        start = {"start": row["record_offset"], "start_index": 100 + k}
        fast, reference = both(data, file_name=name, definitions=defs, final=True, **start)
        assert fast is not None
        assert_same(fast, reference)


SIMULATED_STYLES = {
    "tdr": {},
    "tdr little-endian": {"byte_order": "little"},
    "sourcedefs": {"definitions": "dirdef/sim.def"},
    "sourcedefs compressed": {"definitions": "dirdef/sim.def", "compressed_updates": True},
    "sourcedefs unified": {"definitions": "dirdef/sim.def", "unified_updates": True},
    "sourcedefs little-endian": {"definitions": "dirdef/sim.def", "byte_order": "little"},
}


def simulated_trails(folder, options):
    """The simulator's trails of one style: ``[(name, bytes)]`` and their sourcedefs or None."""
    from simulator.database import TABLES, simulate
    from simulator.goldengate_trail import write_trails

    write_trails(simulate(seed=7), TABLES, folder, {"records_per_file": 30, **options})
    defs = None
    if options.get("definitions"):
        defs, _ = parse_sourcedefs((folder / "dirdef" / "sim.def").read_text("utf-8"))
    files = sorted(p for p in folder.iterdir() if p.name.startswith("aa"))
    return [(p.name, p.read_bytes()) for p in files], defs


@pytest.mark.parametrize("style", list(SIMULATED_STYLES))
def test_every_simulated_trail_takes_the_fast_path_with_the_reference_s_result(tmp_path, style):
    """Every file of every style the simulator writes (FieldComp pairs and unified updates,
    TDRs and sourcedefs, both byte orders, NULLs, every type it writes), final or still being
    written, whole and resumed at a record, and cut inside its last record."""
    files, defs = simulated_trails(tmp_path, SIMULATED_STYLES[style])
    assert len(files) > 3
    options = {k: v for k, v in SIMULATED_STYLES[style].items() if k == "byte_order"}
    for number, (name, data) in enumerate(files):
        final = number < len(files) - 1
        kwargs = {"file_name": name, "definitions": defs, "options": options}
        fast, reference = both(data, final=final, **kwargs)
        assert fast is not None and reference.rows
        assert_same(fast, reference)
        middle = reference.rows[len(reference.rows) // 2]["record_offset"]
        assert_same(*both(data, final=final, start=middle, start_index=7, **kwargs))
        cut = data[: middle + 9]  # a record the writer is still writing: it waits
        fast, reference = both(cut, final=False, **kwargs)
        assert fast is not None and fast.consumed_end == middle
        assert_same(fast, reference)
        assert both(cut, final=True, **kwargs)[0] is None  # final: the reference rejects it


def test_what_the_fast_path_leaves_to_the_reference(samples_gg, tmp_path):
    """A record that does not parse, a segmented record and a FieldComp before image without
    its after image are the reference's: the fast path declines the whole file."""
    data, defs = samples_gg["tc000000"]
    reference = decode_trail_file(data, file_name="tc000000", definitions=defs, final=True)
    second = reference.rows[1]["record_offset"]
    bad_header = bytearray(data)
    bad_header[second + 8] = ord("X")  # Hdr-Ind of the second record's GHDR
    assert (
        columnar.decode_columnar(
            bytes(bad_header), file_name="tc000000", definitions=defs, final=True
        )
        is None
    )
    fieldcomp_b = next(r for r in reference.rows if r["io_type"] == 15 and r["before_after"] == "B")
    end = fieldcomp_b["record_offset"] + fieldcomp_b["record_length"]
    orphan = data[:end]  # the file ends after the before image: final, it is an orphan
    assert (
        columnar.decode_columnar(orphan, file_name="tc000000", definitions=defs, final=True) is None
    )
    fast, reference = both(orphan, file_name="tc000000", definitions=defs, final=False)
    assert fast is not None and fast.rows == [] and _table(fast)[-1]["before_after"] == "B"
    assert_same(fast, reference)  # not final: the before image waits in raw, as the reference
    files, defs = simulated_trails(tmp_path, {"segment_bytes": 24})
    assert all(columnar.decode_columnar(d, file_name=n, final=True) is None for n, d in files)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_damaged_trails_decode_the_same_by_both_paths(samples_gg, data):
    """Bytes flipped, set, cut or inserted anywhere in a real trail: the fast path declines or
    gives what the reference gives, rejects included, and so does staging's decode."""
    name = data.draw(st.sampled_from(["tc000000", "tr000000000"]))
    source, defs = samples_gg[name]
    mutated = bytearray(source)
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(mutated) - 1))
        kind = data.draw(st.sampled_from(["flip", "set", "cut", "insert"]))
        if kind == "flip":
            mutated[at] ^= 1 << data.draw(st.integers(0, 7))
        elif kind == "set":
            mutated[at] = data.draw(st.integers(0, 255))
        elif kind == "cut":
            mutated = mutated[: max(at, 1)]
        else:
            mutated[at:at] = bytes(data.draw(st.binary(min_size=1, max_size=4)))
    final = data.draw(st.booleans())
    fast, reference = both(bytes(mutated), file_name=name, definitions=defs, final=final)
    if fast is not None:  # an exception of the fast path fails the test here
        assert_same(fast, reference)
    context = {"definitions": defs, "options": {}}
    staged, reference = (
        spec.decode(bytes(mutated), FileToDecode(name, context, 0, 0, None, final, columnar))
        for columnar in (True, False)
    )
    assert_same(staged, reference)


def test_a_fast_path_that_fails_leaves_the_trail_to_the_reference(samples_gg, monkeypatch):
    """A bug of the fast path (an exception) costs speed, never the file's rows."""
    data, defs = samples_gg["tc000000"]

    def failing(*args, **kwargs):
        raise IndexError("a bug")

    monkeypatch.setattr(columnar, "decode_or_decline", failing)
    context = {"definitions": defs, "options": {}}
    result = spec.decode(data, FileToDecode("tc000000", context, 0, 0, None, True, True))
    reference = decode_trail_file(data, file_name="tc000000", definitions=defs, final=True)
    assert result.rows and result.table is None
    assert result.fast_path_fallback == "IndexError: a bug"
    assert_same(result, reference)


def test_values_of_every_kind_render_as_the_reference_renders_them():
    """A hand-made trail of one table with a column of each type the fast path renders in
    bulk or per value: integers of every size and scale, floats, CHAR, VARCHAR number text,
    dates, timestamps of every fraction length, NULLs and a non-ASCII value."""
    from python_udfs.goldengate_trail.decoder import GGColumn, GGTable

    kinds = [
        (130, 0, 0, 0, 0, [b"\xff\xfe", b"\x00\x07"]),
        (131, 2, 0, 0, 0, [b"\xff\xfe", b"\x00\x07"]),
        (132, 3, 0, 0, 0, [b"\x80\x00\x00\x00", None]),
        (134, 4, 0, 0, 0, [struct.pack(">q", -(2**63)), struct.pack(">q", -5)]),
        (135, 0, 0, 0, 0, [struct.pack(">Q", 2**64 - 1), struct.pack(">Q", 0)]),
        (141, 0, 0, 0, 0, [struct.pack(">d", 1e16), struct.pack(">d", -0.0)]),
        (140, 0, 0, 0, 0, [struct.pack(">f", 0.1), struct.pack(">d", 2.5)]),
        (0, 0, 0, 0, 0, ["Zürich".encode(), b"  "]),
        (64, 0, 0, 0, 2, [b"\x00\x04-1e3", b"\x00\x02+5"]),
        (64, 0, 0, 0, 0, [b"\x00\x03abcXX", "ā".encode().rjust(4, b"\x00")]),
        (192, 0, 0, 2, 0, [b"2024-02-29", b"2023-12-31"]),
        (192, 0, 0, 6, 0, [b"2024-02-29:23:59:59.123456789", b"1999-01-01:00:00:00.000000000"]),
        (192, 0, 0, 6, 0, [b"2024-02-29:23:59:59", b"0999-01-01:00:00:00"]),
        (192, 0, 0, 6, 0, [b"2024-01-01 01:02:03.5", b"2024-01-01T01:02:03.0"]),
        (192, 0, 3, 6, 0, [b"13:14:15.25", b"00:00:00"]),
    ]
    columns = [
        GGColumn(f"C{i}", i, kind, 8, scale, msdt, lsdt, sub, False)
        for i, (kind, scale, msdt, lsdt, sub, _values) in enumerate(kinds)
    ]
    definitions = {"S.T": GGTable("S.T", columns)}
    records = b""
    for row in range(2):
        entries = b"".join(
            struct.pack(">HH", i, 2 + len(values[row])) + b"\x00\x00" + values[row]
            if values[row] is not None
            else struct.pack(">HH", i, 2) + b"\xff\xff"
            for i, (*_, values) in enumerate(kinds)
        )
        records += _record(entries)
    data = _header() + records
    fast, reference = both(data, definitions=definitions, final=True)
    assert fast is not None and len(reference.rows) == 2 and not reference.rejects
    assert_same(fast, reference)
    assert reference.rows[0]["data"]["C3"] == "-922337203685477.5808"


def _header() -> bytes:
    """A minimal big-endian ``F`` file header: no TrailInfo, so the seqno is the name's."""
    return b"F\x00\x00\x08" + b"Z\x00\x00\x08"


def _record(entries: bytes, io_type=5, trans_ind=3, name=b"S.T", tokens=b"", **ghdr) -> bytes:
    """One big-endian ``G`` record of table ``name`` with data area ``entries``.

    ``tokens`` is the GGS token area (none when empty).
    ``ghdr`` overrides ``before_after`` (b"A"), ``audit_pos`` (42) and ``continued`` (0).
    """
    fields = {"before_after": b"A", "audit_pos": 42, "continued": 0, **ghdr}
    header = struct.pack(
        ">cBBcHBBqQIBcBBBB",
        b"E",
        4,
        0,
        fields["before_after"],
        len(entries),
        io_type,
        0,
        212236971276000000,
        fields["audit_pos"],
        7,
        trans_ind,
        b"R",
        0,
        0,
        fields["continued"],
        1,
    )
    body = b"H\x00" + struct.pack(">H", len(header) + len(name) + 1) + header + name + b"\x00"
    body += b"D\x00" + struct.pack(">H", len(entries)) + entries
    if tokens:
        body += b"T\x00" + struct.pack(">H", len(tokens)) + tokens
    length = 4 + len(body) + 4
    return b"G\x01" + struct.pack(">H", length) + body + b"Z\x01" + struct.pack(">H", length)


def _entry(index: int, payload: bytes | None, indicator=b"\x00\x00") -> bytes:
    """A column entry: ``payload`` after a null indicator; None is a NULL."""
    if payload is None:
        return struct.pack(">HH", index, 2) + b"\xff\xff"
    return struct.pack(">HH", index, 2 + len(payload)) + indicator + payload


_KEY, _NAME = _entry(0, struct.pack(">q", 1)), _entry(1, b"\x00\x01x")
#: Trails the reference rejects a record of or warns of, and a segmented record (the reference
#: reassembles it): each is left to the reference whole.
LEFT_TO_THE_REFERENCE = {
    "a before image followed by another row's after image": [
        _record(_KEY, 15, 0, before_after=b"B", audit_pos=1),
        _record(_KEY + _NAME, 15, 2, before_after=b"A", audit_pos=2),
    ],
    "a before image followed by another table's after image": [
        _record(_KEY, 15, 0, before_after=b"B"),
        _record(_KEY + _NAME, 15, 2, name=b"S.U"),
    ],
    "TransInd 0 while a transaction is open": [_record(_KEY, 5, 0), _record(_KEY, 5, 0)],
    "TransInd 2 after the transactions ended": [_record(_KEY, 5, 3), _record(_KEY, 5, 2)],
    "a table without a definition": [_record(_KEY, name=b"S.X")],
    "a record in two segments": [_record(_KEY, continued=1), _record(_NAME)],
    "an unknown IOType": [_record(_KEY, io_type=77)],
    "a NonStop IOType": [_record(_KEY, io_type=4)],
    "a NULL with a payload": [_record(_entry(0, b"\x00\x01", b"\xff\xff"))],
    "a bad null indicator": [_record(_entry(0, struct.pack(">q", 1), b"\x12\x34"))],
    "a column twice": [_record(_KEY + _NAME + _entry(1, None))],
    "a column the table does not have": [_record(_KEY + _entry(2, b"\x00\x01x"))],
    "an integer of three bytes": [_record(_entry(0, b"\x00\x00\x01"))],
    "a VARCHAR longer than its entry": [_record(_KEY + _entry(1, b"\x00\x09x"))],
}


@pytest.mark.parametrize("case", list(LEFT_TO_THE_REFERENCE))
def test_a_record_the_reference_rejects_or_reassembles_leaves_the_file_to_it(case):
    from python_udfs.goldengate_trail.decoder import GGColumn, GGTable

    columns = [
        GGColumn("ID", 0, 134, 8, 0, 0, 0, 0, True),
        GGColumn("NAME", 1, 64, 8, 0, 0, 0, 0, False),
    ]
    definitions = {name: GGTable(name, columns) for name in ("S.T", "S.U")}
    data = _header() + b"".join(LEFT_TO_THE_REFERENCE[case])
    fast, reference = both(data, definitions=definitions, final=True)
    assert fast is None
    if "segments" in case:
        assert len(reference.rows) == 1 and reference.rows[0]["data"] == {"ID": "1", "NAME": "x"}
    else:
        assert reference.rejects or reference.warnings
    context = {"definitions": definitions, "options": {}}
    assert_same(
        *(
            spec.decode(data, FileToDecode("aa000000", context, 0, 0, None, True, columnar))
            for columnar in (True, False)
        )
    )
    well_formed = _header() + _record(_KEY + _NAME) + _record(_KEY + _entry(1, None))
    assert both(well_formed, definitions=definitions, final=True)[0] is not None


def _token(token_id: bytes, value: bytes) -> bytes:
    return token_id + b"\x00" + struct.pack(">H", len(value)) + value


def test_gg_s_tokens_render_as_the_reference_renders_them():
    """ASCII ``R``, ``L`` and ``6`` tokens by Arrow, the rest (a short row id, hex tokens)
    value by value; a byte that is not ASCII in any text token turns every token of the file
    to the reference's rendering (U+FFFD), whether or not the bytes are UTF-8."""
    from python_udfs.goldengate_trail.decoder import GGColumn, GGTable

    definitions = {"S.T": GGTable("S.T", [GGColumn("ID", 0, 134, 8, 0, 0, 0, 0, True)])}
    key = _entry(0, struct.pack(">q", 1))
    plain = [
        _token(b"R", b"AAAS00000000000001\x00\x01") + _token(b"L", b"42") + _token(b"6", b"1.2.3"),
        _token(b"R", b"AAB\x00\x01") + _token(b"t", b"") + _token(b"X", b"\x01\xff"),
    ]
    for odd in (b"\xc3\xa9", b"\xff"):  # UTF-8 é, and a byte that is no UTF-8
        for tokens in (plain, plain + [_token(b"L", b"4" + odd)]):
            data = _header() + b"".join(
                _record(key, trans_ind=0 if i == 0 else 1, tokens=t) for i, t in enumerate(tokens)
            )
            fast, reference = both(data, definitions=definitions, final=False)
            assert fast is not None and len(reference.rows) == len(tokens)
            assert_same(fast, reference)
    assert reference.rows[-1]["token_log_csn"] == "4\ufffd"
