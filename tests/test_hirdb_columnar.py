"""Issue 47: the HiRDB fast path (``columnar.decode_columnar``) against the reference.

The tokenizer and parser (``decode_update_sql_file(..., reference=True)``) are the reference:
on the manual's output example, on the simulator's files in every encoding, on hand-made lines
of every literal kind and catalog type, on generated and damaged statements and on damaged
files, the fast path gives the same raw rows, warnings and resume offset, or leaves the file to
the reference (returns None). The files the simulator writes whole take the fast path.
"""

from __future__ import annotations

import functools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from python_udfs.feed_format import FileToDecode
from python_udfs.hirdb_update_sql import columnar, spec
from python_udfs.hirdb_update_sql.decoder import decode_update_sql_file
from simulator.database import JP_TABLES, simulate
from simulator.hirdb_update_sql import sqltxt_lines
from tests import fast_paths
from tests.test_hirdb_update_sql import MANUAL_EXAMPLE, _statement_bodies, column, jp_catalog

RAW = "raw_hirdb_update_sql"


def both(data: bytes, **kwargs):
    """``(fast path result or None, reference result)`` of one file."""
    kwargs.setdefault("file_name", "SQLTXT_SV1_DST1")
    return columnar.decode_columnar(data, **kwargs), decode_update_sql_file(
        data, reference=True, **kwargs
    )


def assert_same(fast, reference) -> None:
    """The fast path's result is the reference's: rows, rejects, metadata, warnings, offset."""
    fast_paths.assert_same(fast, reference, RAW)


@functools.cache
def simulated(encoding: str, hex_text: bool, seed: int = 2) -> bytes:
    sim = simulate(seed=seed, load_rows=6, transactions=25, truncate_every=7, tables=JP_TABLES)
    lines = sqltxt_lines(sim, {"encoding": encoding, "hex_text": hex_text})
    return "".join(line + "\n" for line in lines).encode(encoding)


def test_the_manual_example_takes_the_fast_path_with_the_reference_s_rows():
    """Every statement kind of the manual's example (INSERT, UPDATE, DELETE … IS NULL, PURGE,
    an event, COMMIT), with and without the seed's catalog; appended twice, the repeated
    transaction is the reference's (it rejects it) unless duplicates are kept."""
    data = MANUAL_EXAMPLE.encode()
    catalog = {("USR1", "T1"): [column("C1", "INTEGER", key=1), column("C2", "VARCHAR")]}
    for kwargs in ({}, {"catalog": catalog}):
        fast, reference = both(data, final=True, **kwargs)
        assert fast is not None and fast.table.num_rows == 6
        assert_same(fast, reference)
    assert both(data * 2, final=True)[0] is None
    keep = {"duplicate_transactions": "keep"}
    fast, reference = both(data * 2, final=True, options=keep)
    assert fast is not None
    assert_same(fast, reference)


@pytest.mark.parametrize(
    ("encoding", "hex_text"), [("cp932", False), ("euc_jp", True), ("utf-8", False)]
)
def test_every_simulated_file_takes_the_fast_path_whole_resumed_and_cut(encoding, hex_text):
    """The simulator's files (loads, updates that leave the long column out, deletes, purges,
    NULL keys, Japanese text, ``-H`` hex text), with LF and CR LF, read whole, resumed at a
    line and cut inside a line (the partial line waits, as in the reference)."""
    data = simulated(encoding, hex_text)
    options = {"encoding": encoding} if hex_text else {}
    for text in (data, data.replace(b"\n", b"\r\n")):
        kwargs = {"catalog": jp_catalog(), "options": options}
        fast, reference = both(text, final=True, **kwargs)
        assert fast is not None and fast.table.num_rows > 100
        assert_same(fast, reference)
        middle = reference.rows[len(reference.rows) // 2]["record_offset"]
        fast, reference = both(text, final=True, start=middle, start_index=9, **kwargs)
        assert fast is not None
        assert_same(fast, reference)
        cut = text[: middle + 7]
        fast, reference = both(cut, final=False, **kwargs)
        assert fast is not None and fast.consumed_end == middle
        assert_same(fast, reference)


#: Literals of each catalog type in the spellings the Arrow rules render and the ones they
#: leave to the reference: signs, leading zeros, negative zeros, short and long fractions,
#: exponents, impossible dates, fractions of seconds, doubled quotes, prefixes, placeholders.
TYPED_LITERALS = {
    ("INTEGER", None): ["0", "-7", "+5", "007", "-0", "123456789012"],
    ("DECIMAL", 2): ["0.50", "-0.50", "-0.00", "1.5", "12", "-3.140", "0.00"],
    ("DECIMAL", 0): ["5", "-0", "5.", "05"],
    ("FLOAT", None): ["1.000000000000000E+02", "-2.5E-07", "3", "0.1"],
    ("VARCHAR", None): ["'a''b'", "''", "'*BLOB*'", "'x,y)'", "N'あ'", "M'い'"],
    ("DATE", None): ["'2024-02-29'", "'1999-12-31'"],
    ("TIME", None): ["'23:59:59'", "'00:00:00'", "'12:30:00.500'"],
    ("TIMESTAMP", None): ["'2024-02-29 23:59:59'", "'2024-01-01 00:00:00.000'"],
    ("TIMESTAMP", 6): ["'2024-01-01T10:00:00'", "'2024-01-01 00:00:00.123456'"],
    ("INTERVAL YEAR TO DAY", None): ["+12340102.", "-00000001."],
    ("BLOB", None): ["*BLOB*"],
}


@pytest.mark.parametrize("quoted", ["bare_only", "accept_quoted"])
def test_literals_of_every_type_render_as_the_reference_renders_them(quoted):
    """One table with a column per type; each line an INSERT, then an UPDATE and a DELETE of
    the same literals (WHERE typing), in a random-free but mixed order."""
    columns = [column("K", "INTEGER", key=1)]
    names = []
    for number, (source_type, scale) in enumerate(TYPED_LITERALS):
        names.append(f"C{number}")
        columns.append(column(f"C{number}", source_type, scale))
    catalog = {("S", "T"): columns}
    lines = []
    width = max(len(values) for values in TYPED_LITERALS.values())
    for row in range(width):
        values = [v[row % len(v)] for v in TYPED_LITERALS.values()]
        stamp = f"/* 2024-03-01 10:00:{row:02d} */ "
        lines.append(
            stamp
            + f'INSERT INTO "S"."T"("K",{",".join(f"{chr(34)}{n}{chr(34)}" for n in names)}) '
            + f"VALUES({row},{','.join(values)});"
        )
        sets = ",".join(f'"{n}"={v}' for n, v in zip(names, values, strict=True))
        lines.append(stamp + f'UPDATE "S"."T" SET {sets} WHERE "K"={row};')
        lines.append(stamp + f'DELETE FROM "S"."T" WHERE "K"={row} AND "C0" IS NULL;')
        lines.append("/* ****-**-** **:**:** */ COMMIT;")
    data = "".join(line + "\n" for line in lines).encode()
    fast, reference = both(
        data, final=True, catalog=catalog, options={"placeholder_quoted": quoted}
    )
    assert reference.rejects == []
    assert fast is not None
    assert_same(fast, reference)


def test_a_time_zone_and_fractions_of_seconds_in_stamps():
    """Stamps read in ``source_time_zone`` and stamps with a fraction take the reference's
    conversion (``stamp_to_utc``) once per distinct stamp."""
    data = simulated("utf-8", False)
    fast, reference = both(data, final=True, options={"source_time_zone": "Asia/Tokyo"})
    assert fast is not None
    assert_same(fast, reference)
    fraction = data.replace(b":00 */", b":00.250 */", 5)
    fast, reference = both(fraction, final=True)
    assert fast is not None
    assert_same(fast, reference)
    early = data.replace(b"/* 2024-", b"/* 0024-", 3)  # a year of fewer than four digits
    fast, reference = both(early, final=True)
    assert fast is not None and reference.rows[0]["update_time_utc"].startswith("0024-")
    assert_same(fast, reference)


def test_what_the_fast_path_leaves_to_the_reference():
    """A line the reference rejects, an unknown table, a blank line, a stamp in another
    spelling, ``quote_escape: none`` and undecodable bytes: the whole file declines. A
    statement in another spelling (lowercase keywords, more blanks) has a shape of its own and
    reads as the reference reads it."""
    data = simulated("utf-8", False)
    catalog = jp_catalog()
    assert both(data, final=True, catalog=catalog)[0] is not None
    lines = data.split(b"\n")
    at = next(i for i, line in enumerate(lines) if b"INSERT" in line)

    def with_line(line: bytes):
        return both(b"\n".join([*lines[:at], line, *lines[at + 1 :]]), final=True, catalog=catalog)

    for bad in (
        lines[at].replace(b"VALUES(", b"VALUES(("),
        lines[at].replace(b'"SALES"', b'"XALES"', 1),
        lines[at].replace(b"/* ", b"/*\t", 1),
        b"",
    ):
        fast, _reference = with_line(bad)
        assert fast is None, bad
    for other in (
        lines[at].replace(b"INSERT INTO", b"insert  into"),
        lines[at].replace(b"*/ ", b"*/  ").replace(b",", b" , "),
    ):
        fast, reference = with_line(other)
        assert fast is not None and reference.rejects == []
        assert_same(fast, reference)
    assert both(data, final=True, options={"quote_escape": "none"})[0] is None
    assert both(data.replace(b"VALUES(", b"VALUES(\xff", 1), final=True)[0] is None


def test_a_fast_path_that_fails_leaves_the_file_to_the_per_line_path(monkeypatch):
    """A bug of the fast path (an exception) costs speed, never the file's rows."""
    data = MANUAL_EXAMPLE.encode()

    def failing(*args, **kwargs):
        raise IndexError("a bug")

    monkeypatch.setattr(columnar, "decode_or_decline", failing)
    context = {"catalog": None, "options": {}}
    result = spec.decode(data, FileToDecode("SQLTXT_SV1_DST1", context, 0, 0, None, True, True))
    assert result.rows and result.table is None
    assert result.fast_path_fallback == "IndexError: a bug"
    reference = decode_update_sql_file(data, file_name="SQLTXT_SV1_DST1", final=True)
    assert_same(result, reference)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_statement_bodies(), min_size=1, max_size=3), st.data())
def test_generated_statements_decode_the_same_by_both_paths(bodies, data):
    """Files of generated and damaged INSERT, UPDATE and DELETE bodies (identifiers and
    literals of every kind and spelling, keywords as names, undoubled quotes): the fast path
    declines or gives the reference's result."""
    case = data.draw(st.sampled_from(["as_written", "upper"]))
    lines = []
    for body in bodies:
        lines.append(f"/* 2024-05-0{data.draw(st.integers(1, 9))} 10:00:00 */ {body}")
        if data.draw(st.booleans()):
            lines.append("/* ****-**-** **:**:** */ COMMIT;")
    text = "".join(line + "\n" for line in lines).encode()
    fast, reference = both(text, final=True, options={"identifier_case": case})
    if fast is not None:
        assert_same(fast, reference)


#: Literals of every kind, valid, with the characters that end literals inside quoted ones.
_LITERALS = st.one_of(
    st.sampled_from(["0", "-1.5e-3", "+2.", "3E+7", "NULL", "null", "*BLOB*", "*MCOL*", "12"]),
    st.integers(-(10**12), 10**12).map(str),
    st.builds(
        lambda prefix, body: prefix + "'" + body.replace("'", "''") + "'",
        st.sampled_from(["", "", "", "M", "N", "n", "X"]),
        st.text(alphabet="ab'0F ,;()=あ*/", max_size=6),
    ),
)
_NAMES = st.sampled_from(['"K"', '"c1"', '"名前"', '"a""b"', '"A B"', "c_1", "名称", '"IS"'])


@st.composite
def _shaped_lines(draw) -> list[str]:
    """A few lines of one statement shape (verb spelling, table, columns, blanks), each with
    literals of its own; now and then a character of a line is damaged."""
    gap = draw(st.sampled_from(["", " ", "  ", "\t"]))
    names = draw(st.lists(_NAMES, min_size=1, max_size=4, unique=True))
    verb = draw(st.sampled_from(["INSERT", "insert", "UPDATE", "Update", "DELETE", "DELETE"]))
    table = draw(st.sampled_from(['"S"."T"', "S.T", '"S" . "T"']))
    lines = []
    for _ in range(draw(st.integers(1, 5))):
        values = [draw(_LITERALS) for _ in names]
        where = f" AND{gap} ".join(
            f"{n} IS NULL" if v.upper() == "NULL" else f"{n}{gap}={v}"
            for n, v in zip(names, values, strict=True)
        )
        if verb.upper() == "INSERT":
            body = f"{verb} INTO {table}({','.join(names)}) VALUES({f',{gap}'.join(values)})"
        elif verb.upper() == "UPDATE":
            sets = ",".join(f"{n}={gap}{v}" for n, v in zip(names, values, strict=True))
            body = f"{verb} {table} SET {sets} WHERE {where}"
        else:
            body = f"{verb} FROM {table} WHERE {where}"
        line = f"/* 2024-05-01 10:00:0{draw(st.integers(0, 9))} */ {gap}{body};"
        if draw(st.integers(0, 9)) == 0:
            at = draw(st.integers(26, len(line)))
            line = line[:at] + draw(st.sampled_from(list("'\",()=; "))) + line[at + 1 :]
        lines.append(line)
    return lines


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_shaped_lines(), min_size=1, max_size=3), st.data())
def test_lines_of_one_shape_with_literals_of_their_own_decode_as_the_reference_does(files, data):
    """Several lines per statement shape, each with different literals (quotes, commas and
    parentheses inside strings, NULLs that become ``IS NULL``, placeholders, prefixes),
    identifiers quoted, bare and Japanese: one shape's pattern reads them all as the parser
    does, or the file declines."""
    lines = [line for shape in files for line in shape]
    if data.draw(st.booleans()):
        lines.append("/* ****-**-** **:**:** */ COMMIT;")
    text = "".join(line + "\n" for line in lines).encode()
    case = data.draw(st.sampled_from(["as_written", "upper"]))
    fast, reference = both(text, final=True, options={"identifier_case": case})
    if fast is not None:
        assert_same(fast, reference)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_damaged_files_decode_the_same_by_both_paths(data):
    """Bytes flipped, cut or inserted anywhere in a simulated file, lines of random text: the
    fast path declines or gives what the reference gives, and so does staging's decode."""
    source = simulated("cp932", False, seed=4)
    raw = fast_paths.damaged(source, data, ("flip", "cut", "insert", "line"), 4)
    final = data.draw(st.booleans())
    fast, reference = both(raw, final=final, catalog=jp_catalog())
    if fast is not None:  # an exception of the fast path fails the test here
        assert_same(fast, reference)
    context = {"catalog": jp_catalog(), "options": {}}
    staged, reference = (
        spec.decode(raw, FileToDecode("SQLTXT_SV1_DST1", context, 0, 0, None, final, c))
        for c in (True, False)
    )
    assert_same(staged, reference)
