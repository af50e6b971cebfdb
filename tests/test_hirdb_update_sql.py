"""HiRDB update-SQL decoder: the manual's output example, the literal table, constructed and
fuzzed lines (formats/hirdb_update_sql.md, *Test vectors*)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from python_udfs.hirdb_update_sql.decoder import (
    HiRDBError,
    Literal,
    decode_update_sql_file,
    fast_statement,
    parse_statement,
    split_stamp,
    typed_value,
)
from python_udfs.records import MetadataColumn
from simulator.database import JP_TABLES, seed_catalog, simulate
from simulator.hirdb_update_sql import sqltxt_lines

#: The six lines under 出力例 in seeds/hirdb_update_sql_file_ja.txt, as printed there.
MANUAL_EXAMPLE = """/* 2004-12-29 19:18:00 */ INSERT INTO "USR1"."T1"("C1","C2") VALUES(1,'a');
/* 2004-12-29 19:18:30 */ UPDATE "USR1"."T1" SET "C1"=2,"C2"='b' WHERE "C1"=2;
/* 2004-12-29 19:19:00 */ DELETE FROM "USR1"."T1" WHERE "C1" IS NULL;
/* 2004-12-29 19:19:30 */ PURGE TABLE "USR1"."T1";
/* ****-**-** **:**:** */ /* HDEEVENT 200 */
/* ****-**-** **:**:** */ COMMIT;
"""


def column(name: str, source_type: str, scale: int | None = None, key: int = 0) -> MetadataColumn:
    return MetadataColumn(
        "S", "T", None, name, 1, source_type, None, None, scale, key, True, "test"
    )


def decode(text: str, encoding: str = "utf-8", **kwargs):
    return decode_update_sql_file(
        text.encode(encoding), file_name="SQLTXT_SV1_DST1", final=True, **kwargs
    )


def test_manual_output_example_parses_into_each_statement_kind():
    result = decode(MANUAL_EXAMPLE)
    assert result.rejects == []
    rows = result.rows
    assert [r["statement_type"] for r in rows] == [
        "INSERT",
        "UPDATE",
        "DELETE",
        "PURGE",
        "EVENT",
        "COMMIT",
    ]
    insert, update, delete, purge, event, commit = rows
    assert [r["record_index"] for r in rows] == [1, 2, 3, 4, 5, 6]
    assert (insert["source_schema"], insert["source_table"]) == ("USR1", "T1")
    assert insert["update_time_utc"] == "2004-12-29 19:18:00"
    assert insert["data"] == {"C1": "1", "C2": "a"} and insert["where_data"] is None
    assert update["data"] == {"C1": "2", "C2": "b"} and update["where_data"] == {"C1": "2"}
    assert delete["where_data"] == {"C1": None} and delete["data"] is None  # "C1" IS NULL
    assert purge["source_table"] == "T1" and purge["data"] is None
    assert event["event_code"] == 200 and event["stamp_masked"] and event["source_table"] is None
    assert commit["stamp_masked"] and commit["update_time_utc"] is None
    assert result.consumed_end == len(MANUAL_EXAMPLE.encode())


def test_manual_example_appended_twice_rejects_the_repeat_as_a_duplicate_transaction():
    result = decode(MANUAL_EXAMPLE * 2)
    assert [r["record_index"] for r in result.rows] == [1, 2, 3, 4, 5, 6]
    assert [(r.record_index, r.reason) for r in result.rejects] == [
        (n, "duplicate_transaction") for n in range(7, 13)
    ]
    assert result.rejects[0].message == "duplicate transaction (repeat of lines 1–6)"
    kept = decode(MANUAL_EXAMPLE * 2, options={"duplicate_transactions": "keep"})
    assert len(kept.rows) == 12 and kept.rejects == []


def test_the_repeat_is_found_when_only_the_appended_tail_is_decoded():
    data = (MANUAL_EXAMPLE * 2).encode()
    first = len(MANUAL_EXAMPLE.encode())
    result = decode_update_sql_file(data, file_name="SQLTXT_X", start=first, start_index=6)
    assert result.rows == [] and len(result.rejects) == 6
    assert result.rejects[0].offset == first


@pytest.mark.parametrize(
    ("literal", "source_type", "scale", "encoding", "expected"),
    [
        ("'aaa'", "VARCHAR", None, "utf-8", "aaa"),
        ("X'C3C3C3'", "CHAR", None, "cp932", "ﾃﾃﾃ"),
        ("N'あいう'", "NCHAR", None, "utf-8", "あいう"),
        ("M'あイうエお'", "MVARCHAR", None, "utf-8", "あイうエお"),
        ("100", "DECIMAL", 2, "utf-8", "100.00"),
        ("-0.5", "DECIMAL", 2, "utf-8", "-0.50"),
        ("1.000000000000000E+02", "FLOAT", None, "utf-8", "100.0"),
        ("'2008-04-15 16:15:30'", "TIMESTAMP", None, "utf-8", "2008-04-15 16:15:30"),
        ("'2008-04-15'", "DATE", None, "utf-8", "2008-04-15"),
        ("'16:15:30'", "TIME", None, "utf-8", "16:15:30"),
        ("+12340102.", "INTERVAL YEAR TO DAY", None, "utf-8", "+12340102."),
        ("+112233.", "INTERVAL HOUR TO SECOND", None, "utf-8", "+112233."),
        ("+100", "INTEGER", None, "utf-8", "100"),
        ("NULL", "INTEGER", None, "utf-8", None),
    ],
)
def test_manual_literal_table_with_a_catalog(literal, source_type, scale, encoding, expected):
    line = f'/* 2024-02-01 09:00:00 */ INSERT INTO "S"."T"("V") VALUES({literal});\n'
    catalog = {("S", "T"): [column("V", source_type, scale)]}
    result = decode(line, encoding=encoding, catalog=catalog, options={"encoding": encoding})
    assert result.rejects == [], result.rejects
    assert result.rows[0]["data"] == {"V": expected}


def test_placeholders_are_absent_and_doubled_quotes_unescape():
    line = '/* 2024-02-01 09:00:00 */ INSERT INTO "S"."T"("K","NAME","DOC") VALUES(7,\'O\'\'Brien\',*BLOB*);\n'
    row = decode(line).rows[0]
    assert row["data"] == {"K": "7", "NAME": "O'Brien"}
    catalog = {
        ("S", "T"): [
            column("K", "INTEGER", key=1),
            column("NAME", "VARCHAR"),
            column("DOC", "BLOB"),
        ]
    }
    assert decode(line, catalog=catalog).rows[0]["data"] == {"K": "7", "NAME": "O'Brien"}
    quoted = line.replace("*BLOB*", "'*BLOB*'")
    assert decode(quoted).rows[0]["data"]["DOC"] == "*BLOB*"
    accepted = decode(quoted, options={"placeholder_quoted": "accept_quoted"})
    assert "DOC" not in accepted.rows[0]["data"]


def test_update_keeps_set_and_where_apart():
    line = '/* 2024-02-01 09:00:01 */ UPDATE "S"."T" SET "NAME"=\'X\' WHERE "K"=7;\n'
    row = decode(line).rows[0]
    assert row["data"] == {"NAME": "X"} and row["where_data"] == {"K": "7"}


@pytest.mark.parametrize(
    ("line", "reason", "message"),
    [
        (
            '/* 2024-02-01 09:00:02 */ UPDATE "S"."T" SET "NAME"=\'X\' WHERE "K"=7',
            "unparsable_sql",
            "unparsable SQL: missing ';'",
        ),
        (
            '/* 2024-02-31 09:00:02 */ DELETE FROM "S"."T" WHERE "K"=7;',
            "invalid_stamp",
            "invalid stamp",
        ),
        (
            '/* 2024-02-01 09:00:03 */ INSERT INTO "S"."T"("K") VALUES(1,2);',
            "count_mismatch",
            "column/value count mismatch (1 columns, 2 values)",
        ),
        (
            '/* 2024-02-01 09:00:03 */ INSERT INTO "S"."T"("K") VALUES(\'abc);',
            "unterminated_literal",
            "unterminated",
        ),
        (
            '/* 2024-02-01 09:00:03 */ DELETE FROM "S"."T";',
            "unparsable_sql",
            "DELETE without WHERE",
        ),
        ('/* 2024-02-01 09:00:03 */ MERGE INTO "S"."T";', "unparsable_sql", "expected INSERT"),
        ("/* 2024-02-01 09:00:03 */ COMMIT; extra", "unparsable_sql", "text after ';'"),
        (
            '/* 2024-02-01 09:00:03 */ INSERT INTO "S"."T"("K") VALUES(X\'ABC\');',
            "bad_literal",
            "malformed hex",
        ),
        (
            '/* 2024-02-01 09:00:03 */ DELETE FROM "S"."T" WHERE "K"=*BLOB*;',
            "placeholder_in_where",
            "placeholder",
        ),
        ("/* ****-**-** **:**:** */ /* HDEEVENT x1 */", "bad_event", "not an integer"),
        ('INSERT INTO "S"."T"("K") VALUES(1);', "invalid_stamp", "does not start"),
    ],
)
def test_constructed_bad_lines_are_rejected_and_the_next_line_parses(line, reason, message):
    good = '/* 2024-02-01 09:00:04 */ DELETE FROM "S"."T" WHERE "K"=8;'
    result = decode(line + "\n" + good + "\n")
    assert [(r.record_index, r.reason) for r in result.rejects] == [(1, reason)]
    assert message in result.rejects[0].message
    assert [r["record_index"] for r in result.rows] == [2]
    assert result.rows[0]["where_data"] == {"K": "8"}


def test_catalog_rejects_unknown_tables_columns_and_bad_values_naming_the_column():
    catalog = {("S", "T"): [column("K", "INTEGER", key=1), column("D", "DECIMAL", 1)]}
    lines = [
        '/* 2024-02-01 09:00:00 */ INSERT INTO "S"."U"("K") VALUES(1);',
        '/* 2024-02-01 09:00:00 */ INSERT INTO "S"."T"("K","Z") VALUES(1,2);',
        '/* 2024-02-01 09:00:00 */ INSERT INTO "S"."T"("K","D") VALUES(1,1.25);',
        '/* 2024-02-01 09:00:00 */ INSERT INTO "S"."T"("K","D") VALUES(\'x\',1.5);',
        '/* 2024-02-01 09:00:00 */ INSERT INTO "S"."T"("K","D") VALUES(2,X\'125C\');',
        '/* 2024-02-01 09:00:00 */ INSERT INTO "S"."T"("K","D") VALUES(3,1.5);',
    ]
    result = decode("\n".join(lines) + "\n", catalog=catalog, options={"unknown_columns": "reject"})
    reasons = [(r.record_index, r.reason) for r in result.rejects]
    assert reasons == [
        (1, "unknown_table"),
        (2, "unknown_column"),
        (3, "bad_value"),
        (4, "bad_value"),
        (5, "bad_value"),
    ]
    assert "column D" in result.rejects[2].message and "column K" in result.rejects[3].message
    assert result.rows[0]["data"] == {"K": "3", "D": "1.5"}
    packed = decode(lines[4] + "\n", catalog=catalog, options={"hex_fallback": "decode_packed"})
    assert packed.rows[0]["data"]["D"] == "12.5"


def test_a_column_the_catalog_lacks_is_kept_typed_by_its_literal_and_warned_once():
    """formats/hirdb_update_sql.md, option unknown_columns (default keep): a column added at
    the source (ALTER TABLE ... ADD) after the catalog was written is kept in data and
    where_data, typed by the literal-shape rule, with one warning per file and column; the
    catalog's own columns keep their types."""
    catalog = {("S", "T"): [column("K", "INTEGER", key=1), column("D", "DECIMAL", 2)]}
    lines = [
        '/* 2024-02-01 09:00:00 */ INSERT INTO "S"."T"("K","D") VALUES(1,1.5);',
        '/* 2024-02-01 09:00:01 */ INSERT INTO "S"."T"("K","D","Z") VALUES(2,1.5,\'new\');',
        '/* 2024-02-01 09:00:02 */ UPDATE "S"."T" SET "K"=2,"D"=2,"Z"=1.0E+1 WHERE "K"=2;',
        '/* 2024-02-01 09:00:03 */ DELETE FROM "S"."T" WHERE "K"=2 AND "Z"=7;',
    ]
    result = decode("\n".join(lines) + "\n", catalog=catalog)
    assert result.rejects == []
    assert [r["data"] for r in result.rows] == [
        {"K": "1", "D": "1.50"},
        {"K": "2", "D": "1.50", "Z": "new"},
        {"K": "2", "D": "2.00", "Z": "10.0"},
        None,
    ]
    assert result.rows[3]["where_data"] == {"K": "2", "Z": "7"}
    drift = [w for w in result.warnings if "schema drift" in w]
    assert drift == [
        "column Z of S.T is not in the catalog (schema drift): its values are kept, typed by "
        "their literals; `cdc scaffold` adds it to seeds/cdc_columns.csv"
    ]
    # for `cdc scaffold`: one raw_metadata row, at the line that first names the column, typed
    # by its first literal's shape, at its place in that statement
    (meta,) = result.metadata
    assert (meta.source_schema, meta.source_table, meta.column_name) == ("S", "T", "Z")
    assert (meta.record_index, meta.ordinal, meta.source_type) == (2, 3, "VARCHAR")
    assert (meta.primary_key_position, meta.metadata_source) == (0, "hirdb_statement")
    assert decode("\n".join(lines[:1]) + "\n", catalog=catalog).metadata == []


def test_tail_without_commit_is_emitted_and_reported_and_a_partial_line_waits():
    text = MANUAL_EXAMPLE + '/* 2004-12-30 10:00:00 */ DELETE FROM "USR1"."T1" WHERE "C1"=5;\n'
    result = decode_update_sql_file(
        (text + "/* 2004-12-30 10:00:01 */ DELE").encode(), file_name="SQLTXT_A"
    )
    assert [r["record_index"] for r in result.rows][-1] == 7
    assert result.consumed_end == len(text.encode())
    assert any("incomplete transaction at lines 7–7" in w for w in result.warnings)


def test_incomplete_tail_reject_makes_the_lines_after_the_last_commit_rejects():
    """formats/hirdb_update_sql.md, option incomplete_tail: with reject, the statements after
    the last COMMIT and a last line cut short are rejects (the file is read as final), no
    warning says pending, and the committed transactions land as with hold."""
    text = MANUAL_EXAMPLE + '/* 2004-12-30 10:00:00 */ DELETE FROM "USR1"."T1" WHERE "C1"=5;\n'
    data = (text + "/* 2004-12-30 10:00:01 */ DELE").encode()
    held = decode_update_sql_file(data, file_name="SQLTXT_A")
    rejected = decode_update_sql_file(
        data, file_name="SQLTXT_A", options={"incomplete_tail": "reject"}
    )
    assert [r["record_index"] for r in rejected.rows] == [r["record_index"] for r in held.rows][:-1]
    assert [(r.record_index, r.reason) for r in rejected.rejects] == [
        (7, "incomplete_transaction"),
        (8, "unparsable_sql"),
    ]
    assert rejected.consumed_end == len(data)
    assert not any("pending" in w for w in rejected.warnings)


def test_quote_escape_none_reads_apostrophes_as_written():
    """formats/hirdb_update_sql.md, option quote_escape: doubled (the default) reads '' inside a
    literal as one apostrophe and rejects a lone one; none keeps every apostrophe as written,
    a literal ending only at an apostrophe followed by what may follow a value (, ) ; AND OR
    WHERE or the end)."""
    lines = [
        '/* 2024-02-01 09:00:00 */ INSERT INTO "S"."T"("K","N") VALUES(1,\'O\'\'Hare\');',
        '/* 2024-02-01 09:00:01 */ INSERT INTO "S"."T"("K","N") VALUES(2,\'O\'Hare\');',
        '/* 2024-02-01 09:00:02 */ UPDATE "S"."T" SET "N"=N\'it\'s, ok\' WHERE "K"=2 AND "N"=\'O\'Hare\';',
    ]
    text = "\n".join(lines) + "\n"
    doubled = decode(text)
    assert [r["data"]["N"] for r in doubled.rows] == ["O'Hare"]
    assert [(r.record_index, r.reason) for r in doubled.rejects] == [
        (2, "unterminated_literal"),
        (3, "unparsable_sql"),
    ]
    none = decode(text, options={"quote_escape": "none"})
    assert none.rejects == []
    assert [r["data"]["N"] for r in none.rows] == ["O''Hare", "O'Hare", "it's, ok"]
    assert none.rows[2]["where_data"] == {"K": "2", "N": "O'Hare"}


def test_encodings_are_detected_and_undecodable_lines_rejected():
    line = '/* 2024-02-01 09:00:00 */ INSERT INTO "S"."T"("K","N") VALUES(1,N\'山田　太郎\');\n'
    for codec in ("utf-8", "euc_jp", "cp932"):
        result = decode_update_sql_file(line.encode(codec) * 1, file_name="SQLTXT_A")
        assert result.rows[0]["data"]["N"] == "山田　太郎", codec
        assert result.rows[0]["encoding"] == codec
    bad = (
        line.encode("cp932")
        + b'/* 2024-02-01 09:00:01 */ INSERT INTO "S"."T"("K") VALUES(\'\x81\');\n'
    )
    result = decode_update_sql_file(bad, file_name="SQLTXT_A", options={"encoding": "sjis"})
    assert [r.reason for r in result.rejects] == ["undecodable_bytes"] and len(result.rows) == 1


def test_source_time_zone_converts_stamps_to_utc():
    row = decode(MANUAL_EXAMPLE, options={"source_time_zone": "Asia/Tokyo"}).rows[0]
    assert (
        row["update_time_utc"] == "2004-12-29 10:18:00"
        and row["update_time"] == "2004-12-29 19:18:00"
    )


def test_parser_reads_bare_and_quoted_identifiers_and_every_literal_kind():
    statement = parse_statement('INSERT INTO usr1."My ""T"""(a, "B") VALUES (-1.5e-3, X\'00ff\');')
    assert (statement.schema, statement.table) == ("USR1", 'My "T"')
    assert statement.columns == ("A", "B")
    assert statement.values == (Literal("number", "-1.5e-3"), Literal("hex", "00FF"))
    with pytest.raises(HiRDBError):
        parse_statement("UPDATE S.T SET WHERE K=1;")
    assert typed_value(Literal("number", "1.0E+02"), None, "utf-8", "reject") == "100.0"


def jp_catalog():
    return seed_catalog("hirdb_update_sql")[0]


@pytest.mark.parametrize(
    ("encoding", "hex_text"), [("cp932", False), ("euc_jp", True), ("utf-8", False)]
)
def test_simulated_file_round_trips_every_value(encoding, hex_text):
    sim = simulate(seed=2, load_rows=6, transactions=25, truncate_every=7, tables=JP_TABLES)
    lines = sqltxt_lines(sim, {"encoding": encoding, "hex_text": hex_text})
    data = "".join(line + "\n" for line in lines).encode(encoding)
    # With -H the file is plain ASCII, so auto detection cannot see the hex bytes' code: the
    # feed sets its encoding.
    options = {"encoding": encoding} if hex_text else {}
    result = decode_update_sql_file(
        data, file_name="SQLTXT_SV1_DST1.000001", catalog=jp_catalog(), final=True, options=options
    )
    assert result.rejects == []
    changes = [
        r for r in result.rows if r["statement_type"] in ("INSERT", "UPDATE", "DELETE", "PURGE")
    ]
    assert len(changes) == len(sim.changes)
    for row, change in zip(changes, sim.changes, strict=True):
        assert row["source_table"] == change.table.name
        if change.operation in ("INSERT", "LOAD"):
            assert row["data"] == change.after
        elif change.operation == "UPDATE":
            assert {k: change.after[k] for k in row["data"]} == row["data"]
            omitted = set(change.after) - set(row["data"])
            assert omitted <= {"NOTE"} and "NOTE" not in (omitted & set(change.changed))
        elif change.operation == "DELETE":
            assert row["where_data"] == {
                c.name: change.before[c.name] for c in change.table.key_columns
            }


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzzed_files_never_raise_and_every_line_is_decoded_or_rejected(data):
    sim = simulate(seed=4, load_rows=3, transactions=8, truncate_every=5, tables=JP_TABLES)
    raw = bytearray("".join(line + "\n" for line in sqltxt_lines(sim)).encode("cp932"))
    for _ in range(data.draw(st.integers(0, 6))):
        kind = data.draw(st.sampled_from(["flip", "cut", "insert", "line"]))
        pos = data.draw(st.integers(0, max(len(raw) - 1, 0)))
        if kind == "flip" and raw:
            raw[pos] ^= 1 << data.draw(st.integers(0, 7))
        elif kind == "cut":
            del raw[pos:]
        elif kind == "insert":
            raw[pos:pos] = data.draw(st.binary(max_size=8))
        else:
            raw[pos:pos] = data.draw(st.text(max_size=40)).encode("utf-8", "replace") + b"\n"
    result = decode_update_sql_file(
        bytes(raw), file_name="SQLTXT_F", catalog=jp_catalog(), final=True
    )
    reference = decode_update_sql_file(
        bytes(raw), file_name="SQLTXT_F", catalog=jp_catalog(), final=True, reference=True
    )
    assert result == reference  # the fast path for the regular statements changes nothing
    lines = [ln for ln in bytes(raw).split(b"\n")]
    if lines and lines[-1] == b"":
        lines.pop()
    nonblank = {i + 1 for i, ln in enumerate(lines) if ln.rstrip(b"\r").strip(b" \t")}
    seen = [r["record_index"] for r in result.rows] + [r.record_index for r in result.rejects]
    assert sorted(seen) == sorted(nonblank)
    assert result.consumed_end == len(raw)


def test_odd_stamps_and_empty_transactions_are_accepted_with_warnings():
    text = (
        "/* ****-**-** **:**:** */ COMMIT;\n"
        '/* ****-**-** **:**:** */ DELETE FROM "S"."T" WHERE "K"=1;\n'
        "/* 2024-01-01 00:00:00 */ COMMIT;\n"
    )
    result = decode(text)
    assert result.rejects == [] and len(result.rows) == 3
    assert "1 COMMIT line(s) with no statement before them" in result.warnings
    assert "1 statement line(s) with a masked stamp" in result.warnings
    assert "1 COMMIT/event line(s) with an unmasked stamp" in result.warnings


@pytest.mark.parametrize(
    ("encoding", "hex_text"), [("cp932", False), ("euc_jp", True), ("utf-8", False)]
)
def test_the_fast_path_reads_every_simulated_change_as_the_parser_does(encoding, hex_text):
    """Issue 47: every INSERT, UPDATE and DELETE line the simulator writes takes the fast path
    (:func:`fast_statement`), which gives the parser's statement; a file decodes to the same
    rows, rejects and warnings either way. The manual's example too (its PURGE, event and
    COMMIT lines take the parser on both paths)."""
    sim = simulate(seed=2, load_rows=6, transactions=25, truncate_every=7, tables=JP_TABLES)
    lines = sqltxt_lines(sim, {"encoding": encoding, "hex_text": hex_text})
    bodies = [split_stamp(line)[1] for line in lines]
    changes = [b for b in bodies if b.lstrip().startswith(("INSERT", "UPDATE", "DELETE"))]
    assert len(changes) > 50
    for body in changes:
        assert fast_statement(body, "as_written", "doubled") == parse_statement(
            body, reference=True
        )
    options = {"encoding": encoding}
    for text in ("".join(line + "\n" for line in lines), MANUAL_EXAMPLE):
        data = text.encode(encoding)
        fast, reference = (
            decode_update_sql_file(
                data,
                file_name="SQLTXT_SV1_DST1",
                catalog=jp_catalog(),
                final=True,
                options=options,
                reference=reference,
            )
            for reference in (False, True)
        )
        assert fast == reference and fast.rows


#: Pieces of statement text: identifiers and literals of every kind, most of them valid, and
#: the spellings at the edges of the token rules (a digit or a non-ASCII letter first, doubled
#: quotes, keywords as names, a NULL that is a longer word, numbers cut short, an undoubled
#: quote, an unknown prefix or placeholder).
_EDGE_IDENTS = st.sampled_from(["1C", '""', '"a"b"', "a-b"])
_NAMES = st.sampled_from(
    ["K", "c1", "_x", "名前", "ı", "straße", "NULL", "AND", "WHERE", "IS", "X"]
)
_IDENTS = st.one_of(
    *[_NAMES] * 8,
    st.text(alphabet='ab"', min_size=1, max_size=4).map(lambda t: '"' + t.replace('"', '""') + '"'),
    _EDGE_IDENTS,
)
_EDGE_VALUES = st.sampled_from(["1e", "NULLX", "*FOO*", "Q'a'", "'a'b'", "- 1", "1.5.2", "0x1"])
_LITERALS = st.sampled_from(["1", "-1.5e-3", "+2.", "3E+7", "NULL", "null", "*BLOB*", "*MCOL*"])
_VALUES = st.one_of(
    *[_LITERALS] * 6,
    st.builds(
        lambda prefix, body: prefix + "'" + body.replace("'", "''") + "'",
        st.sampled_from(["", "", "M", "n", "X", "x"]),
        st.text(alphabet="ab'0F ,;()", max_size=6),
    ),
    _EDGE_VALUES,
)
_GAPS = st.sampled_from(["", " ", " ", "  ", "\t"])


def _keyword(word: str):
    return st.sampled_from([word, word, word.lower(), word.capitalize(), word.replace("I", "ı")])


@st.composite
def _statement_bodies(draw) -> str:
    gap = lambda: draw(_GAPS)  # noqa: E731
    table = draw(_IDENTS) + gap() + "." + gap() + draw(_IDENTS)
    pairs = draw(st.lists(st.tuples(_IDENTS, _VALUES), min_size=1, max_size=4))
    conditions = [
        name + gap() + ("=" + gap() + value if value != "IS" else "IS" + " " + "NULL")
        for name, value in draw(
            st.lists(st.tuples(_IDENTS, _VALUES | st.just("IS")), min_size=1, max_size=3)
        )
    ]
    where = draw(_keyword("WHERE")) + " " + (" " + draw(_keyword("AND")) + " ").join(conditions)
    verb = draw(st.sampled_from(["INSERT", "UPDATE", "DELETE"]))
    if verb == "INSERT":
        names = [n for n, _v in pairs] + draw(st.sampled_from([[]] * 7 + [["K"]]))
        text = (
            f"{draw(_keyword('INSERT'))} {draw(_keyword('INTO'))}{gap()} {table}{gap()}("
            + ("," + gap()).join(names)
            + f"){gap()}{draw(_keyword('VALUES'))}{gap()}("
            + ("," + gap()).join(v for _n, v in pairs)
            + ")"
        )
    elif verb == "UPDATE":
        sets = ("," + gap()).join(n + gap() + "=" + gap() + v for n, v in pairs)
        text = f"{draw(_keyword('UPDATE'))} {table} {draw(_keyword('SET'))} {sets} {where}"
    else:
        text = f"{draw(_keyword('DELETE'))} {draw(_keyword('FROM'))} {table} {where}"
    text = gap() + text + gap() + draw(st.sampled_from([";"] * 8 + ["", "; x"])) + gap()
    for _ in range(draw(st.sampled_from([0] * 5 + [1, 2]))):  # damage: a character in or out
        pos = draw(st.integers(0, len(text)))
        if draw(st.booleans()):
            text = text[:pos] + draw(st.sampled_from(list("'\"(),.;=*/+- A"))) + text[pos:]
        else:
            text = text[:pos] + text[pos + 1 :]
    return text


@settings(max_examples=600, deadline=None)
@given(_statement_bodies(), st.sampled_from(["as_written", "upper"]))
def test_the_fast_path_gives_the_parser_s_statement_or_leaves_the_body_to_it(body, case):
    """Issue 47: for generated and damaged INSERT, UPDATE and DELETE bodies, the fast path
    either declines (None: the parser reads the body) or gives exactly the statement the
    tokenizer and parser give; it never accepts a body the parser rejects."""
    fast = fast_statement(body, case, "doubled")
    try:
        reference = parse_statement(body, case, "doubled", reference=True)
    except HiRDBError as exc:
        assert fast is None, exc
        return
    assert fast is None or fast == reference
    assert fast_statement(body, case, "none") is None
