"""Decoder for Hitachi HiRDB Datareplicator update-SQL files (feed format ``hirdb_update_sql``).

The update-SQL output facility writes the changes it could not deliver to
``SQLTXT_<server>_<destination>``: one SQL statement a line, committed transactions only, in
commit order, appended to when the file exists. Every line starts with a ``/* stamp */``
comment (the update time, or ``****-**-** **:**:**`` on event and COMMIT lines).

Each line is parsed into one raw row. A regular INSERT, UPDATE or DELETE (the bulk of a file)
is read by one regular expression per statement shape (:func:`fast_statement`); every other
line, and every line with ``reference``, is tokenized (:func:`tokenize`) and parsed by a small
recursive-descent parser (:class:`_Parser`), the reference the fast path is tested against. A
line becomes: ``statement_type`` (INSERT, UPDATE, DELETE, PURGE, EVENT,
COMMIT), the table, ``data`` (VALUES of an INSERT, SET of an UPDATE) and ``where_data`` (the
WHERE clause's mapping-key values) as ``map<string,string>`` of canonical text. A placeholder
(``*BLOB*``, ``*BINARY*``, ``*ADT*``, ``*MCOL*``) and a long column the SET leaves out are
**absent** from the maps; ``NULL`` and ``col IS NULL`` are present with a null value.

Transactions are not resolved here: the dbt staging model groups lines up to each ``COMMIT;``
(across the appended tail of a file and across the files of one ``SQLTXT_`` stream), so a
transaction whose COMMIT has not landed yet stays pending. Lines the decoder cannot read
become rejects with their line number; the next line parses normally.

Follows ``formats/hirdb_update_sql.md`` (built from ``seeds/hirdb_update_sql_file_ja.txt``,
HiRDB Datareplicator Version 10 manual 9.8.2). No public sample file exists; the manual's
output example is the real vector (tests/test_hirdb_update_sql.py).
"""

from __future__ import annotations

import collections
import datetime as dt
import functools
import re
import zoneinfo
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from python_udfs.canonical import (
    canonical_date,
    canonical_decimal,
    canonical_float,
    canonical_integer,
    canonical_time,
    canonical_timestamp,
    japanese_text_score,
    packed_decimal,
)
from python_udfs.records import DecodeResult, MetadataColumn, Reject

FORMAT = "hirdb_update_sql"

#: Every option a ``hirdb_update_sql`` feed accepts (formats/hirdb_update_sql.md, *Uncertain points
#: and options*): name → (default, the values this version implements; ``None``: any value of the
#: option's kind). ``encoding`` and ``source_time_zone`` are also checked as a codec and a time
#: zone. The decoder reads ``DEFAULT_OPTIONS`` and ``config.load_project`` checks its choices
#: (``FeedFormat.option_choices``), both derived from this one table, so the check cannot drift
#: from what the decoder reads.
OPTIONS: dict[str, tuple[Any, tuple[Any, ...] | None]] = {
    "encoding": ("auto", None),
    "source_time_zone": ("UTC", None),
    "quote_escape": ("doubled", ("doubled", "none")),
    "where_image": ("after", ("after", "before")),
    "hex_fallback": ("reject", ("reject", "decode_packed")),
    "placeholder_quoted": ("bare_only", ("bare_only", "accept_quoted")),
    "duplicate_transactions": ("reject", ("reject", "keep")),
    "purge_event_codes": ([], None),
    "identifier_case": ("as_written", ("as_written", "upper")),
    "unknown_columns": ("keep", ("keep", "reject")),
    "incomplete_tail": ("hold", ("hold", "reject")),
}
#: Default of every option (``OPTIONS``).
DEFAULT_OPTIONS: dict[str, Any] = {name: spec[0] for name, spec in OPTIONS.items()}
#: Accepted values of every option (``OPTIONS``); ``None`` takes any value of its kind.

#: Encodings tried, in order, by ``encoding: auto`` (formats/hirdb_update_sql.md, *options*).
AUTO_ENCODINGS = ("utf-8", "euc_jp", "cp932")
ENCODING_ALIASES = {"sjis": "cp932", "shift_jis": "cp932", "ujis": "euc_jp", "euc-jp": "euc_jp"}
MASKED_STAMP = "****-**-** **:**:**"
PLACEHOLDERS = ("*BLOB*", "*BINARY*", "*ADT*", "*MCOL*")
FILE_NAME_RE = re.compile(r"^SQLTXT_")

INTEGER_TYPES = {"INTEGER", "INT", "SMALLINT", "BIGINT"}
DECIMAL_TYPES = {"DECIMAL", "DEC", "NUMERIC", "LARGE DECIMAL"}
_FLOAT_TYPES = {"FLOAT", "SMALLFLT", "REAL", "DOUBLE PRECISION", "DOUBLE"}
TEXT_TYPES = {
    "CHAR",
    "CHARACTER",
    "VARCHAR",
    "CHAR VARYING",
    "MCHAR",
    "MVARCHAR",
    "NCHAR",
    "NVARCHAR",
    "NCHAR VARYING",
}
_PLACEHOLDER_TYPES = {"BLOB", "BINARY", "SGMLTEXT", "FREEWORD", "XML", "ADT"}
INTERVAL_TYPES = {"INTERVAL YEAR TO DAY", "INTERVAL HOUR TO SECOND"}

_STAMP_RE = re.compile(r"(\d{4})-(\d{2})-(\d{2})[ \t]+(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?")
#: What follows a literal's opening apostrophe, by option ``quote_escape``: ``doubled`` reads
#: ``''`` inside it as one apostrophe; with ``none`` an apostrophe is written as it is, so the
#: literal ends only at an apostrophe followed by what may follow a value (``,``, ``)``, ``;``,
#: ``AND``, ``OR``, ``WHERE`` or the end of the statement).
_LITERAL_END = r"'(?=[ \t]*(?:[,);]|$|(?i:AND|OR|WHERE)\b))"
_LITERAL_BODIES = {
    "doubled": r"(?:[^']|'')*'",
    "none": r"(?:[^']|'(?!" + _LITERAL_END[1:] + r"))*" + _LITERAL_END,
}


def _token_re(literal_body: str) -> re.Pattern[str]:
    """Return the pattern of one token, literals by ``literal_body`` (:data:`_LITERAL_BODIES`).

    Whitespace is skipped by the caller. Order matters: comments and prefixed strings before
    bare words, numbers before punctuation.
    """
    return re.compile(
        r"""
    [ \t]*(?:
    (?P<comment>/\*(?P<comment_body>.*?)\*/)
  | (?P<qident>"(?:[^"]|"")*")
  | (?P<pstring>[MmNnXx]'"""
        + literal_body
        + r""")
  | (?P<string>'"""
        + literal_body
        + r""")
  | (?P<number>[+-]?\d+(?:\.\d*)?(?:[Ee][+-]?\d+)?)
  | (?P<placeholder>\*(?:BLOB|BINARY|ADT|MCOL)\*)
  | (?P<word>[^\s"'(),.;=*/+-]+)
  | (?P<punct>[(),.;=])
    )
    """,
        re.VERBOSE,
    )


#: The token pattern of each ``quote_escape`` value.
_TOKEN_RES = {escape: _token_re(body) for escape, body in _LITERAL_BODIES.items()}
_TRAILING_SPACE_RE = re.compile(r"[ \t]*")


class HiRDBError(ValueError):
    """A line that does not parse: ``reason`` code and message (becomes a reject)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class Token(NamedTuple):
    """One lexical token.

    ``kind`` (qident, string, pstring, number, placeholder, word, punct, comment), its ``text``
    as written and its 0-based ``column`` in the body.
    """

    kind: str
    text: str
    column: int


@dataclass(frozen=True, slots=True)
class Literal:
    """A literal value as written.

    ``kind`` is ``string``, ``mchar``, ``nchar``, ``hex``, ``number``, ``placeholder`` or
    ``null``; ``text`` is the unescaped content (hex digits for ``hex``).
    """

    kind: str
    text: str


@dataclass(frozen=True, slots=True)
class Statement:
    """One parsed statement line.

    ``statement_type`` is INSERT, UPDATE, DELETE, PURGE, EVENT or COMMIT; ``schema`` and
    ``table`` are the authorization identifier and table name (quotes removed, case kept);
    ``columns`` and ``values`` the INSERT list or the SET assignments, ``where`` the WHERE
    conditions as ``(column, Literal)`` (``IS NULL`` is a ``null`` literal); ``event_code``
    the HDEEVENT number.
    """

    statement_type: str
    schema: str | None = None
    table: str | None = None
    columns: tuple[str, ...] = ()
    values: tuple[Literal, ...] = ()
    where: tuple[tuple[str, Literal], ...] = ()
    event_code: int | None = None


def tokenize(body: str, quote_escape: str = "doubled") -> list[Token]:
    """Split a statement body into tokens.

    ``quote_escape`` is the option: ``doubled`` reads ``''`` inside a literal as one
    apostrophe, ``none`` reads apostrophes as written (:data:`_LITERAL_BODIES`). Raise
    :class:`HiRDBError` on an unterminated literal or identifier, or a character that starts
    no token.
    """
    tokens: list[Token] = []
    append = tokens.append
    pos = 0
    for m in _TOKEN_RES[quote_escape].finditer(body):
        if m.start() != pos:
            _bad_character(body, pos)
        kind = m.lastgroup
        if kind == "comment_body":  # pragma: no cover - lastgroup names the outer group
            kind = "comment"
        start = m.start(kind)
        append(Token(kind, m.group("comment_body") if kind == "comment" else m.group(kind), start))
        pos = m.end()
    pos = _TRAILING_SPACE_RE.match(body, pos).end()
    if pos != len(body):
        _bad_character(body, pos)
    return tokens


def _bad_character(body: str, pos: int) -> None:
    pos = _TRAILING_SPACE_RE.match(body, pos).end()
    char = body[pos]
    if char in "'\"":
        raise HiRDBError("unterminated_literal", f"unterminated {char} literal at column {pos + 1}")
    if body.startswith("/*", pos):
        raise HiRDBError("unparsable_sql", f"unterminated comment at column {pos + 1}")
    raise HiRDBError("unparsable_sql", f"unexpected character {char!r} at column {pos + 1}")


def _unquote(text: str, quote: str) -> str:
    return text[1:-1].replace(quote * 2, quote)


class _Parser:
    """Recursive-descent parser of one statement body (grammar: formats/hirdb_update_sql.md)."""

    def __init__(
        self, tokens: Sequence[Token], identifier_case: str, quote_escape: str = "doubled"
    ) -> None:
        self.tokens = tokens
        self.i = 0
        self.upper = identifier_case == "upper"
        self.doubled = quote_escape == "doubled"

    # -- token helpers --------------------------------------------------------------------
    def literal_text(self, inside: str) -> str:
        """Return the text between a literal's apostrophes, ``''`` read as one if ``doubled``."""
        return inside.replace("''", "'") if self.doubled else inside

    def peek(self) -> Token | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def fail(self, expected: str) -> HiRDBError:
        token = self.peek()
        if token is None:
            if expected == "';'":
                return HiRDBError("unparsable_sql", "unparsable SQL: missing ';'")
            return HiRDBError(
                "unparsable_sql", f"unparsable SQL: expected {expected} at end of line"
            )
        return HiRDBError(
            "unparsable_sql",
            f"unparsable SQL: expected {expected} at column {token.column + 1}, found {token.text!r}",
        )

    def keyword(self, *words: str) -> str:
        token = self.peek()
        if token is None or token.kind != "word" or token.text.upper() not in words:
            raise self.fail(" or ".join(words))
        self.i += 1
        return token.text.upper()

    def at_keyword(self, word: str) -> bool:
        token = self.peek()
        return token is not None and token.kind == "word" and token.text.upper() == word

    def punct(self, char: str) -> None:
        token = self.peek()
        if token is None or token.kind != "punct" or token.text != char:
            raise self.fail(repr(char))
        self.i += 1

    def at_punct(self, char: str) -> bool:
        token = self.peek()
        return token is not None and token.kind == "punct" and token.text == char

    # -- grammar --------------------------------------------------------------------------
    def ident(self) -> str:
        token = self.peek()
        if token is None or token.kind not in ("qident", "word"):
            raise self.fail("an identifier")
        self.i += 1
        if token.kind == "qident":
            name = _unquote(token.text, '"')
            if not name:
                raise HiRDBError("unparsable_sql", f"empty identifier at column {token.column + 1}")
            return name.upper() if self.upper else name
        return token.text.upper()  # bare identifiers are case-insensitive in SQL

    def table(self) -> tuple[str, str]:
        first = self.ident()
        self.punct(".")
        return first, self.ident()

    def value(self) -> Literal:
        token = self.peek()
        if token is None:
            raise self.fail("a value")
        self.i += 1
        if token.kind == "string":
            return Literal("string", self.literal_text(token.text[1:-1]))
        if token.kind == "pstring":
            prefix = token.text[0].upper()
            body = self.literal_text(token.text[2:-1])
            if prefix == "X":
                if len(body) % 2 or not all(c in "0123456789abcdefABCDEF" for c in body):
                    raise HiRDBError("bad_literal", f"malformed hex literal {token.text!r}")
                return Literal("hex", body.upper())
            return Literal("mchar" if prefix == "M" else "nchar", body)
        if token.kind == "number":
            return Literal("number", token.text)
        if token.kind == "placeholder":
            return Literal("placeholder", token.text)
        if token.kind == "word" and token.text.upper() == "NULL":
            return Literal("null", "")
        self.i -= 1
        raise self.fail("a value")

    def end(self) -> None:
        self.punct(";")
        if self.peek() is not None:
            raise HiRDBError(
                "unparsable_sql",
                f"unparsable SQL: text after ';' at column {self.peek().column + 1}",
            )

    def conditions(self) -> tuple[tuple[str, Literal], ...]:
        conds = []
        while True:
            column = self.ident()
            if self.at_keyword("IS"):
                self.keyword("IS")
                self.keyword("NULL")
                literal = Literal("null", "")
            else:
                self.punct("=")
                literal = self.value()
            conds.append((column, literal))
            if not self.at_keyword("AND"):
                return tuple(conds)
            self.keyword("AND")

    def statement(self) -> Statement:
        """Parse the whole statement: an ``HDEEVENT`` comment or one of the verbs."""
        token = self.peek()
        if token is None:
            raise HiRDBError("unparsable_sql", "unparsable SQL: no statement after the stamp")
        if token.kind == "comment":
            self.i += 1
            return self._event(token.text)
        verb = self.keyword("INSERT", "UPDATE", "DELETE", "PURGE", "COMMIT")
        return {
            "COMMIT": self._commit,
            "PURGE": self._purge,
            "INSERT": self._insert,
            "UPDATE": self._update,
            "DELETE": self._delete,
        }[verb]()

    def _event(self, text: str) -> Statement:
        words = text.split()
        if len(words) != 2 or words[0].upper() != "HDEEVENT":
            raise HiRDBError("unparsable_sql", f"unknown comment /*{text}*/")
        if not words[1].isdigit():
            raise HiRDBError("bad_event", f"HDEEVENT code {words[1]!r} is not an integer")
        if self.peek() is not None:
            raise HiRDBError("unparsable_sql", "unparsable SQL: text after the event comment")
        return Statement("EVENT", event_code=int(words[1]))

    def _commit(self) -> Statement:
        self.end()
        return Statement("COMMIT")

    def _purge(self) -> Statement:
        self.keyword("TABLE")
        schema, table = self.table()
        self.end()
        return Statement("PURGE", schema, table)

    def _listed(self, item) -> list:
        """Parse ``( item, item … )``."""
        self.punct("(")
        items = [item()]
        while self.at_punct(","):
            self.punct(",")
            items.append(item())
        self.punct(")")
        return items

    def _insert(self) -> Statement:
        self.keyword("INTO")
        schema, table = self.table()
        columns = self._listed(self.ident)
        self.keyword("VALUES")
        values = self._listed(self.value)
        self.end()
        if len(columns) != len(values):
            raise HiRDBError(
                "count_mismatch",
                f"column/value count mismatch ({len(columns)} columns, {len(values)} values)",
            )
        return Statement("INSERT", schema, table, tuple(columns), tuple(values))

    def _update(self) -> Statement:
        schema, table = self.table()
        self.keyword("SET")
        columns, values = [], []
        while True:
            columns.append(self.ident())
            self.punct("=")
            values.append(self.value())
            if not self.at_punct(","):
                break
            self.punct(",")
        self.keyword("WHERE")
        where = self.conditions()
        self.end()
        return Statement("UPDATE", schema, table, tuple(columns), tuple(values), where)

    def _delete(self) -> Statement:
        self.keyword("FROM")
        schema, table = self.table()
        if self.peek() is None or self.at_punct(";"):
            raise HiRDBError("unparsable_sql", "DELETE without WHERE")
        self.keyword("WHERE")
        where = self.conditions()
        self.end()
        return Statement("DELETE", schema, table, where=where)


def parse_statement(
    body: str,
    identifier_case: str = "as_written",
    quote_escape: str = "doubled",
    reference: bool = False,
) -> Statement:
    """Parse one statement body (the text after the stamp); raise :class:`HiRDBError`.

    ``identifier_case`` and ``quote_escape`` are the feed's options of those names. A regular
    INSERT, UPDATE or DELETE takes :func:`fast_statement` unless ``reference``; every other
    body, and every body with ``reference``, the tokenizer and parser.
    """
    if not reference:
        statement = fast_statement(body, identifier_case, quote_escape)
        if statement is not None:
            return statement
    return _Parser(tokenize(body, quote_escape), identifier_case, quote_escape).statement()


#: A bare identifier as the tokenizer reads one: a ``word`` token that does not start as a
#: number would (a digit starts a ``number`` token there). Possessive quantifiers everywhere
#: below: a token is the tokenizer's longest match, never a shorter one found by backtracking.
WORD_CHAR = r"""[^\s"'(),.;=*/+-]"""
_BARE = r"(?!\d)" + WORD_CHAR + "++"
IDENT = r'(?:"(?:[^"]|"")++"|' + _BARE + ")"
_IDENT_CAPTURE = r'(?:"((?:[^"]|"")++)"|(' + _BARE + "))"
#: A literal as :meth:`_Parser.value` reads one with ``quote_escape: doubled``. The groups of
#: :data:`_VALUE_CAPTURE`: string body; prefix and body of an M, N or X string; number;
#: placeholder; NULL. The shapes use the forms without groups: CPython 3.11's ``re`` fails
#: ("The span of capturing group is wrong", SystemError) on groups inside possessive repeats.
_NUMBER = r"[+-]?\d++(?:\.\d*+)?+(?:[Ee][+-]?\d++)?+"
VALUE = (
    r"(?:'(?:[^']|'')*+'|[MmNnXx]'(?:[^']|'')*+'|" + _NUMBER + r"|\*(?:BLOB|BINARY|ADT|MCOL)\*"
    r"|[Nn][Uu][Ll][Ll](?!" + WORD_CHAR + "))"
)
_VALUE_CAPTURE = (
    r"(?:'((?:[^']|'')*+)'|([MmNnXx])'((?:[^']|'')*+)'|(" + _NUMBER + r")"
    r"|(\*(?:BLOB|BINARY|ADT|MCOL)\*)|([Nn][Uu][Ll][Ll])(?!" + WORD_CHAR + "))"
)
_S = r"[ \t]*"


def _keyword(word: str) -> str:
    """Return the pattern of a keyword as a token of its own, in ASCII letters of either case."""
    return "".join(f"[{c.upper()}{c.lower()}]" for c in word) + "(?!" + WORD_CHAR + ")"


_TABLE = (
    r'(?:"(?P<schema_q>(?:[^"]|"")++)"|(?P<schema_b>' + _BARE + rf")){_S}\.{_S}"
    r'(?:"(?P<table_q>(?:[^"]|"")++)"|(?P<table_b>' + _BARE + "))"
)
_COND = rf"{IDENT}{_S}(?:={_S}{VALUE}|{_keyword('IS')}{_S}{_keyword('NULL')})"
_WHERE = (
    rf"{_keyword('WHERE')}{_S}(?P<where>{_COND}(?:{_S}{_keyword('AND')}{_S}{_COND})*+){_S};{_S}"
)
#: The regular shapes of INSERT, UPDATE and DELETE (formats/hirdb_update_sql.md, *Grammar*),
#: each matched against a whole statement body; their lists are split by :data:`LIST_ITEMS`.
_FAST_SHAPES = {
    "INSERT": re.compile(
        rf"{_S}{_keyword('INSERT')}{_S}{_keyword('INTO')}{_S}{_TABLE}{_S}"
        rf"\({_S}(?P<columns>{IDENT}(?:{_S},{_S}{IDENT})*+){_S}\){_S}{_keyword('VALUES')}{_S}"
        rf"\({_S}(?P<values>{VALUE}(?:{_S},{_S}{VALUE})*+){_S}\){_S};{_S}"
    ),
    "UPDATE": re.compile(
        rf"{_S}{_keyword('UPDATE')}{_S}{_TABLE}{_S}{_keyword('SET')}{_S}"
        rf"(?P<sets>{IDENT}{_S}={_S}{VALUE}(?:{_S},{_S}{IDENT}{_S}={_S}{VALUE})*+){_S}" + _WHERE
    ),
    "DELETE": re.compile(
        rf"{_S}{_keyword('DELETE')}{_S}{_keyword('FROM')}{_S}{_TABLE}{_S}" + _WHERE
    ),
}
#: The items of a list a shape matched, in order (``findall``). Commas and blanks, which
#: separate them, start no item; a condition consumes the AND before it, and its last group
#: is ``IS NULL`` (an empty string literal leaves every value group empty too).
LIST_ITEMS = {
    "ident": re.compile(_IDENT_CAPTURE),
    "values": re.compile(_VALUE_CAPTURE),
    "sets": re.compile(rf"{_IDENT_CAPTURE}{_S}={_S}{_VALUE_CAPTURE}"),
    "where": re.compile(
        rf"(?:^|{_S}{_keyword('AND')}{_S}){_IDENT_CAPTURE}{_S}"
        rf"(?:={_S}{_VALUE_CAPTURE}|({_keyword('IS')}{_S}{_keyword('NULL')}))"
    ),
}
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_NULL = Literal("null", "")


def _fast_ident(quoted: str, bare: str, upper: bool) -> str:
    """Return an identifier from its quoted and bare groups (the unmatched one empty or None)."""
    if bare:
        return bare.upper()  # bare identifiers are case-insensitive in SQL
    name = quoted.replace('""', '"')
    return name.upper() if upper else name


def fast_literal(
    string: str, prefix: str, body: str, number: str, placeholder: str, null: str
) -> Literal | None:
    """Return the literal of one :data:`_VALUE_CAPTURE` match's groups (unmatched ones empty).

    None for an X literal that is no hex (the reference parser rejects it). Only a string
    literal leaves every group but its body empty, and an empty string leaves that empty too.
    """
    if prefix:
        body = body.replace("''", "'")
        if prefix in "Xx":
            if len(body) % 2 or not _HEX_DIGITS.issuperset(body):
                return None
            return Literal("hex", body.upper())
        return Literal("mchar" if prefix in "Mm" else "nchar", body)
    if number:
        return Literal("number", number)
    if placeholder:
        return Literal("placeholder", placeholder)
    if null:
        return _NULL
    return Literal("string", string.replace("''", "'"))


def fast_statement(body: str, identifier_case: str, quote_escape: str) -> Statement | None:
    """Parse a regular INSERT, UPDATE or DELETE body without tokens; None for any other body.

    The fast path of :func:`parse_statement`: one regular expression per statement shape
    (:data:`_FAST_SHAPES`) checks the whole body, and the lists are split by their items'
    patterns. For every body it parses, the tokenizer and parser (the reference) give the same
    statement: tests/test_hirdb_update_sql.py checks both on the manual's example, the
    simulator's files and generated and damaged lines. None, so that the reference reads the
    body, for ``quote_escape: none``, COMMIT, PURGE, events, other spellings (a comment, a
    keyword in non-ASCII letters) and every body the reference rejects.
    """
    if quote_escape != "doubled":
        return None
    verb = body.lstrip(" \t")[:6].upper()
    shape = _FAST_SHAPES.get(verb)
    match = shape.fullmatch(body) if shape is not None else None
    if match is None:
        return None
    upper, ident = identifier_case == "upper", LIST_ITEMS["ident"]
    schema_q, schema_b, table_q, table_b = match.group("schema_q", "schema_b", "table_q", "table_b")
    schema = _fast_ident(schema_q, schema_b, upper)
    table = _fast_ident(table_q, table_b, upper)
    columns: list[str] = []
    values: list[Literal | None] = []
    where: tuple[tuple[str, Literal | None], ...] = ()
    if verb == "INSERT":
        columns = [_fast_ident(q, b, upper) for q, b in ident.findall(match["columns"])]
        values = [fast_literal(*groups) for groups in LIST_ITEMS["values"].findall(match["values"])]
        if len(columns) != len(values):
            return None
    else:
        if verb == "UPDATE":
            for q, b, *literal in LIST_ITEMS["sets"].findall(match["sets"]):
                columns.append(_fast_ident(q, b, upper))
                values.append(fast_literal(*literal))
        where = tuple(
            (_fast_ident(q, b, upper), _NULL if is_null else fast_literal(*literal))
            for q, b, *literal, is_null in LIST_ITEMS["where"].findall(match["where"])
        )
    if None in values or any(literal is None for _name, literal in where):
        return None
    return Statement(verb, schema, table, tuple(columns), tuple(values), where)


def split_stamp(line: str) -> tuple[str, str]:
    """Split a line into its stamp text (inside ``/* */``, stripped) and the body.

    Raises :class:`HiRDBError` (``invalid_stamp``) when the line does not start with a comment.
    """
    stripped = line.lstrip(" \t")
    if not stripped.startswith("/*"):
        raise HiRDBError("invalid_stamp", "line does not start with a /* stamp */ comment")
    close = stripped.find("*/", 2)
    if close < 0:
        raise HiRDBError("invalid_stamp", "stamp comment is not closed")
    return stripped[2:close].strip(" \t"), stripped[close + 2 :]


@functools.lru_cache(maxsize=2**14)
def stamp_to_utc(stamp: str, zone: dt.tzinfo | None) -> str:
    """Validate a ``YYYY-MM-DD HH:MM:SS[.f]`` stamp read in ``zone`` and render it in UTC.

    Returns canonical timestamp text; raises :class:`HiRDBError` (``invalid_stamp``) for a
    malformed or impossible date-time (``2024-02-31``). Computed once per distinct stamp and
    zone (the statements of a transaction share their stamp).
    """
    match = _STAMP_RE.fullmatch(stamp)
    if not match:
        raise HiRDBError("invalid_stamp", f"invalid stamp {stamp!r}")
    y, mo, d, hh, mi, ss, frac = match.groups()
    try:
        moment = dt.datetime(
            int(y), int(mo), int(d), int(hh), int(mi), int(ss), int((frac or "0").ljust(6, "0"))
        )
    except ValueError as exc:
        raise HiRDBError("invalid_stamp", f"invalid stamp {stamp!r}: {exc}") from exc
    if zone is not None:
        moment = moment.replace(tzinfo=zone)
    return canonical_timestamp(moment)


@functools.lru_cache(maxsize=1024)
def base_type(source_type: str) -> str:
    """Return a catalog ``source_type`` without its length (``DECIMAL(9,2)``: ``DECIMAL``)."""
    return re.sub(r"\s*\(.*$", "", source_type.strip().upper())


def _shape_typed(literal: Literal) -> str:
    """Type a literal of a column the catalog lacks by its shape.

    Integers and floats become canonical, other numbers and text stay as written (``X'…'``
    stays uppercase hex).
    """
    text = literal.text
    if literal.kind != "number":
        return text
    if re.fullmatch(r"[+-]?\d+", text):
        return canonical_integer(text)
    return canonical_float(text) if "e" in text.lower() else text


def _expect(literal: Literal, kind: str, *kinds: str) -> None:
    if literal.kind not in kinds:
        raise ValueError(f"{literal.kind} literal for {kind}")


def _integer_literal(literal, column, kind, encoding, hex_fallback) -> str:
    _expect(literal, kind, "number")
    return canonical_integer(literal.text)


def _decimal_literal(literal, column, kind, encoding, hex_fallback) -> str:
    if literal.kind == "hex":
        if hex_fallback == "decode_packed":
            return packed_decimal(literal.text, column.scale or 0)
        raise ValueError("DECIMAL written in hex form (HiRDB could not convert the packed value)")
    if literal.kind != "number" or "e" in literal.text.lower():
        raise ValueError(f"{literal.kind} literal {literal.text!r} for {kind}")
    return canonical_decimal(literal.text, column.scale or 0)


def _float_literal(literal, column, kind, encoding, hex_fallback) -> str:
    _expect(literal, kind, "number")
    return canonical_float(literal.text)


def _interval_literal(literal, column, kind, encoding, hex_fallback) -> str:
    if literal.kind != "number" or not re.fullmatch(r"[+-]?\d+\.", literal.text):
        raise ValueError(f"{literal.text!r} is not an interval literal (+digits.)")
    return literal.text


def _text_literal(literal, column, kind, encoding, hex_fallback) -> str:
    if literal.kind == "hex":
        return bytes.fromhex(literal.text).decode(encoding)
    _expect(literal, kind, "string", "mchar", "nchar")
    return literal.text


def _datetime_literal(literal, column, kind, encoding, hex_fallback) -> str:
    if literal.kind == "hex":
        raise ValueError(f"{kind} written in hex form (HiRDB could not convert the packed value)")
    _expect(literal, kind, "string")
    if kind == "DATE":
        return canonical_date(literal.text)
    if kind == "TIME":
        return canonical_time(literal.text)
    return canonical_timestamp(literal.text.replace("T", " "))


def _placeholder_literal(literal, column, kind, encoding, hex_fallback) -> str:
    raise ValueError(f"{kind} column with a value instead of its placeholder")


#: How a literal of each catalog base type becomes canonical text (formats/hirdb_update_sql.md,
#: *Values*): ``(literal, column, base type, encoding, hex_fallback) -> text``; a type not
#: listed keeps the literal's text.
_TYPED_LITERALS = {
    **dict.fromkeys(INTEGER_TYPES, _integer_literal),
    **dict.fromkeys(DECIMAL_TYPES, _decimal_literal),
    **dict.fromkeys(_FLOAT_TYPES, _float_literal),
    **dict.fromkeys(INTERVAL_TYPES, _interval_literal),
    **dict.fromkeys(TEXT_TYPES, _text_literal),
    **dict.fromkeys(("DATE", "TIME", "TIMESTAMP"), _datetime_literal),
    **dict.fromkeys(_PLACEHOLDER_TYPES, _placeholder_literal),
}


def typed_value(
    literal: Literal, column: MetadataColumn | None, encoding: str, hex_fallback: str
) -> str | None:
    """Return the canonical text of one literal, or raise ValueError.

    With a catalog ``column`` the literal must suit its ``source_type`` (formats/
    hirdb_update_sql.md, *Values*; one function per type family, :data:`_TYPED_LITERALS`);
    without one the literal's shape decides. The caller handles placeholders (absent) before
    calling. ``encoding`` decodes ``X'…'`` character values.
    """
    if literal.kind == "null":
        return None
    if column is None:
        return _shape_typed(literal)
    kind = base_type(column.source_type)
    typed = _TYPED_LITERALS.get(kind)
    return literal.text if typed is None else typed(literal, column, kind, encoding, hex_fallback)


def choose_encoding(lines: Sequence[bytes], option: str) -> tuple[str, list[str]]:
    """Return the codec for a file's lines and warnings.

    ``auto`` keeps those of UTF-8, EUC-JP, CP932 that decode every line strictly and takes the
    one whose text looks most Japanese (:func:`python_udfs.canonical.japanese_text_score`; ties
    keep that order). When none decodes every line, the one with the fewest undecodable lines
    is used and a warning says so. Other values are codec names (``sjis`` means CP932, ``ujis``
    EUC-JP).
    """
    option = ENCODING_ALIASES.get(str(option).lower(), str(option).lower())
    if option != "auto":
        return option, []
    decoded = auto_decoded(b"\n".join(lines))
    if decoded is not None:
        return decoded[0], []

    def failures(codec: str) -> int:
        bad = 0
        for line in lines:
            try:
                line.decode(codec)
            except UnicodeDecodeError:
                bad += 1
        return bad

    best = min(AUTO_ENCODINGS, key=failures)
    return best, [f"no encoding decodes every line; using {best} (undecodable lines are rejected)"]


def auto_decoded(whole: bytes) -> tuple[str, str] | None:
    """Return ``(codec, text)`` of ``encoding: auto`` for a file's lines joined by LF.

    Of UTF-8, EUC-JP and CP932, the codecs that decode ``whole`` strictly compete on
    :func:`python_udfs.canonical.japanese_text_score` (ties keep that order). None when none
    decodes it: :func:`choose_encoding` then counts undecodable lines.
    """
    best: tuple[str, str] | None = None
    best_score = -1.0
    for codec in AUTO_ENCODINGS:
        try:
            text = whole.decode(codec)
        except UnicodeDecodeError:
            continue
        score = japanese_text_score(text)
        if score > best_score:
            best, best_score = (codec, text), score
    return best


def stream_of(file_name: str) -> str:
    """Return the ``SQLTXT_<server>_<destination>`` stream of a file.

    It is its base name up to the first ``.`` (a loader may land successive outputs as
    ``SQLTXT_SV1_DST1.20240301T0900``).
    """
    base = file_name.replace("\\", "/").rsplit("/", 1)[-1]
    return base.split(".", 1)[0]


def decode_update_sql_file(
    data: bytes,
    *,
    file_name: str,
    catalog: Mapping[tuple[str, str], list[MetadataColumn]] | None = None,
    options: Mapping[str, Any] | None = None,
    start: int = 0,
    start_index: int = 0,
    final: bool = False,
    reference: bool = False,
) -> DecodeResult:
    """Decode the lines of an update-SQL file from byte ``start`` (a line start) into raw rows.

    ``catalog`` maps ``(schema, table)`` to the seed's columns: when given, a statement for a
    table not in it is rejected and literals are typed by column type; a column of a catalog
    table that the catalog lacks (a column added at the source) is kept, typed by its literal,
    with one warning per file and column (option ``unknown_columns``: ``keep``), or rejected
    (``reject``); when None,
    literals are typed by their shape (formats/hirdb_update_sql.md, *Values*). A last line without its newline is left for the
    next run (``consumed_end`` stops before it) unless ``final``. The statements after the last
    COMMIT are emitted, with a warning, for dbt to hold pending (option ``incomplete_tail``:
    ``hold``), or, with ``reject``, are rejects (``incomplete_transaction``) and the file is
    read as final. Lines before ``start`` are
    read again only to find repeated transactions (``duplicate_transactions: reject``).

    Row keys: ``record_offset`` (byte offset of the line), ``record_index`` (1-based line
    number), ``file_name``, ``stream``, ``line_length`` (bytes), ``update_time`` (the stamp as
    written), ``update_time_utc`` (canonical UTC text, null when masked), ``stamp_masked``,
    ``statement_type``, ``source_schema``, ``source_table``, ``event_code``, ``column_names``,
    ``data``, ``where_data``, ``encoding``. Line numbers count from the file's start, so
    ``start_index`` only documents the caller's view. ``reference`` reads every statement with
    the tokenizer and parser (:func:`parse_statement`); the same rows and rejects, slower.
    Never raises for bad input.
    """
    opts = {**DEFAULT_OPTIONS, **(options or {})}
    final = final or opts["incomplete_tail"] == "reject"
    result = DecodeResult(consumed_end=start)
    offsets = _line_offsets(data, final)
    raw_lines = [data[a:b].rstrip(b"\r") for a, b in offsets]
    encoding, warnings = choose_encoding(raw_lines, opts["encoding"])
    result.warnings.extend(warnings)
    if opts["encoding"] == "auto":
        result.warnings.append(f"encoding detected: {encoding}")
    walk = _SqlWalk(
        data, file_name, catalog, opts, start, result, offsets, raw_lines, encoding, reference
    )
    for i in range(len(offsets)):
        walk.line(i)
    walk.finish()
    if offsets:
        result.consumed_end = max(start, min(offsets[-1][1] + 1, len(data)))
    return result


def _line_offsets(data: bytes, final: bool) -> list[tuple[int, int]]:
    """Return ``(line start, end without the newline)`` of every whole line.

    Lines end at LF; the last line without a newline counts too when ``final``. Byte-level
    splitting is safe for UTF-8, EUC-JP and CP932: no multi-byte character contains 0x0A.
    """
    offsets: list[tuple[int, int]] = []
    pos, size = 0, len(data)
    while pos < size:
        nl = data.find(b"\n", pos)
        if nl < 0:
            if final:
                offsets.append((pos, size))
            break
        offsets.append((pos, nl))
        pos = nl + 1
    return offsets


#: The warnings of the formats page's *Bad input* cases that are accepted, by case.
ODD_STAMPS = {
    "masked statement": "{} statement line(s) with a masked stamp",
    "unmasked control": "{} COMMIT/event line(s) with an unmasked stamp",
    "empty transaction": "{} COMMIT line(s) with no statement before them",
}


class _SqlWalk:
    """One walk over an update-SQL file's lines, into ``result``.

    Lines before ``start`` (already ingested) are read again only to find repeated
    transactions. A transaction's rows and rejects are held (``held``) until its COMMIT line
    closes it: emitted, or rejected as a repeat (``duplicate_transactions: reject``).
    """

    def __init__(
        self,
        data: bytes,
        file_name: str,
        catalog: Mapping[tuple[str, str], list[MetadataColumn]] | None,
        opts: Mapping[str, Any],
        start: int,
        result: DecodeResult,
        offsets: list[tuple[int, int]],
        raw_lines: list[bytes],
        encoding: str,
        reference: bool = False,
    ) -> None:
        self.data, self.opts, self.start, self.result = data, opts, start, result
        self.offsets, self.raw_lines, self.encoding = offsets, raw_lines, encoding
        self.base_name = file_name.replace("\\", "/").rsplit("/", 1)[-1]
        self.stream = stream_of(file_name)
        zone_name = str(opts["source_time_zone"] or "UTC")
        self.zone = None if zone_name.upper() == "UTC" else zoneinfo.ZoneInfo(zone_name)
        self.purge_codes = {int(c) for c in opts["purge_event_codes"] or []}
        self.tables = None
        if catalog is not None:
            self.tables = {
                key: (
                    {c.column_name: c for c in cols},
                    {c.column_name for c in cols if c.primary_key_position},
                )
                for key, cols in catalog.items()
            }
        self.reference = reference  # every statement through the tokenizer and parser
        self.seen_transactions: dict[tuple[bytes, ...], tuple[int, int]] = {}
        self.current: list[int] = []  # line indexes (0-based) of the transaction read so far
        self.held: list[dict[str, Any] | Reject] = []  # its emitted rows and rejects
        self.empty_lines = 0
        self.odd_stamps: collections.Counter[str] = collections.Counter()
        # option unknown_columns: keep; the line of each column's first appearance
        self.drifted: dict[tuple[str, str, str], tuple[int, str] | None] = {}
        self.drift_lines: dict[tuple[str, str, str], tuple[int, int]] = {}

    def _reject(self, i: int, reason: str, message: str) -> Reject:
        a, b = self.offsets[i]
        return Reject.of(self.data, a, min(b + 1, len(self.data)), i + 1, reason, message)

    def line(self, i: int) -> None:
        """Read line ``i`` (0-based): hold its row or reject, close its transaction."""
        a, raw = self.offsets[i][0], self.raw_lines[i]
        emit = a >= self.start
        if not raw.strip(b" \t"):
            self.empty_lines += emit
            return
        self.current.append(i)
        try:
            text = raw.decode(self.encoding)
        except UnicodeDecodeError as exc:
            if emit:
                message = f"undecodable bytes at column {exc.start + 1} in {self.encoding}"
                self.held.append(self._reject(i, "undecodable_bytes", message))
            return
        if not emit:
            # Already ingested: only the transaction boundaries matter (duplicate detection).
            if _is_commit(text):
                self._close_transaction()
            return
        row = self._row(i, text)
        if row is None:
            return
        self.held.append(row)
        control = row["statement_type"] in ("COMMIT", "EVENT")
        if row["stamp_masked"] != control:
            self.odd_stamps["unmasked control" if control else "masked statement"] += 1
        if row["statement_type"] == "COMMIT":
            if len(self.current) == 1:
                self.odd_stamps["empty transaction"] += 1
            self._close_transaction()

    def _row(self, i: int, text: str) -> dict[str, Any] | None:
        """Return the raw row of statement line ``i``, or None after holding its reject."""
        a, line_no = self.offsets[i][0], i + 1
        try:
            row = _line_row(
                text, self.tables, self.encoding, self.opts, self.zone, self.drifted, self.reference
            )
        except HiRDBError as exc:
            # a column first named on a rejected line is no drift: only its reject lands
            for key in [k for k in self.drifted if k not in self.drift_lines]:
                del self.drifted[key]
            self.held.append(self._reject(i, exc.reason, str(exc)))
            return None
        if len(self.drifted) > len(self.drift_lines):  # a column first named on this line
            for key in self.drifted:
                self.drift_lines.setdefault(key, (a, line_no))
        if row["statement_type"] == "EVENT" and row["event_code"] in self.purge_codes:
            message = (
                f"HDEEVENT {row['event_code']} stands for a PURGE of a split table whose "
                "name the file does not give; purge the table by hand"
            )
            self.held.append(self._reject(i, "table_wide_purge", message))
            return None
        row.update(
            record_offset=a,
            record_index=line_no,
            line_length=min(self.offsets[i][1] + 1, len(self.data)) - a,
            file_name=self.base_name,
            stream=self.stream,
            encoding=self.encoding,
        )
        return row

    def _close_transaction(self) -> None:
        """Close the transaction a COMMIT line (the last of ``current``) ends: emit or reject it."""
        current = self.current
        key = tuple(self.raw_lines[i] for i in current)
        earlier = self.seen_transactions.get(key)
        if earlier is None:
            self.seen_transactions[key] = (current[0] + 1, current[-1] + 1)
        elif (
            self.opts["duplicate_transactions"] == "reject"
            and self.offsets[current[0]][0] >= self.start
        ):
            message = f"duplicate transaction (repeat of lines {earlier[0]}–{earlier[1]})"
            self.held = [self._reject(i, "duplicate_transaction", message) for i in current]
        self._release()
        current.clear()

    def _release(self) -> None:
        for item in self.held:
            (self.result.rejects if isinstance(item, Reject) else self.result.rows).append(item)
        self.held = []

    def finish(self) -> None:
        """Emit what the last COMMIT leaves (option ``incomplete_tail``), then the warnings.

        The columns the catalog lacks become ``raw_metadata`` rows too.
        """
        # Lines after the last COMMIT: with hold, they are emitted as they are and dbt keeps
        # them pending until a later COMMIT of the same stream lands (in the appended tail or
        # the stream's next file); with reject, each is a reject.
        tail = [i for i in self.current if self.offsets[i][0] >= self.start]
        if self.opts["incomplete_tail"] == "reject":
            message = "no COMMIT after this statement (option incomplete_tail: reject)"
            self.held = [
                item
                if isinstance(item, Reject)
                else self._reject(item["record_index"] - 1, "incomplete_transaction", message)
                for item in self.held
            ]
        self._release()
        warnings = self.result.warnings
        if tail and self.opts["incomplete_tail"] == "hold":
            warnings.append(
                f"incomplete transaction at lines {tail[0] + 1}–{tail[-1] + 1} (no COMMIT yet): "
                "pending"
            )
        for what, count in sorted(self.odd_stamps.items()):
            warnings.append(ODD_STAMPS[what].format(count))
        if self.empty_lines:
            warnings.append(f"{self.empty_lines} empty line(s) skipped")
        self._drift_metadata()

    def _drift_metadata(self) -> None:
        """Warn of each column the catalog lacks and land it in ``raw_metadata`` (ADR 0023)."""
        for (schema, table, name), seen in sorted(self.drifted.items()):
            self.result.warnings.append(
                f"column {name} of {schema}.{table} is not in the catalog (schema drift): its "
                "values are kept, typed by their literals; `cdc scaffold` adds it to "
                "seeds/cdc_columns.csv"
            )
            offset, index = self.drift_lines[(schema, table, name)]
            position, source_type = seen or (0, "VARCHAR")
            self.result.metadata.append(
                MetadataColumn(
                    source_schema=schema,
                    source_table=table,
                    table_version=None,
                    column_name=name,
                    ordinal=position,
                    source_type=source_type,
                    length=None,
                    precision=None,
                    scale=None,
                    primary_key_position=0,
                    nullable=True,
                    metadata_source="hirdb_statement",
                    record_offset=offset,
                    record_index=index,
                )
            )


def _is_commit(text: str) -> bool:
    try:
        return split_stamp(text)[1].strip(" \t").upper().replace(" ", "") == "COMMIT;"
    except HiRDBError:
        return False


def _line_row(
    text: str,
    tables: Mapping[tuple[str, str], tuple[Mapping[str, MetadataColumn], set[str]]] | None,
    encoding: str,
    opts: Mapping[str, Any],
    zone: dt.tzinfo | None,
    drifted: dict[tuple[str, str, str], tuple[int, str] | None],
    reference: bool = False,
) -> dict[str, Any]:
    """Parse one decoded line into a raw row (without provenance); raise HiRDBError.

    A column of a catalog table that the catalog lacks, kept by ``unknown_columns``, is added
    to ``drifted`` as ``(schema, table, column) → (position in the statement, HiRDB type of
    its literal's shape)``, or None while only NULLs and placeholders were seen.
    """
    stamp, body = split_stamp(text)
    masked = stamp == MASKED_STAMP
    statement = parse_statement(body, opts["identifier_case"], opts["quote_escape"], reference)
    update_time_utc = None if masked else stamp_to_utc(stamp, zone)
    row: dict[str, Any] = {
        "update_time": stamp,
        "update_time_utc": update_time_utc,
        "stamp_masked": masked,
        "statement_type": statement.statement_type,
        "source_schema": statement.schema,
        "source_table": statement.table,
        "event_code": statement.event_code,
        "column_names": None,
        "data": None,
        "where_data": None,
    }
    if statement.table is None:
        return row
    columns, keys = None, set()
    if tables is not None:
        entry = tables.get((statement.schema, statement.table))
        if entry is None:
            raise HiRDBError(
                "unknown_table",
                f"table {statement.schema}.{statement.table} is not in the catalog seed "
                "(seeds/cdc_columns.csv) for this feed; add its columns",
            )
        columns, keys = entry
    if statement.statement_type == "PURGE":
        return row
    typed = _StatementTyping(statement, columns, keys, encoding, opts, drifted)
    data, where = typed.values(), typed.where()
    if statement.statement_type in ("INSERT", "UPDATE"):
        row["data"] = data
        row["column_names"] = list(statement.columns)
    if statement.statement_type in ("UPDATE", "DELETE"):
        row["where_data"] = where
    return row


@dataclass(frozen=True, slots=True)
class _StatementTyping:
    """How one statement's literals become canonical text.

    By the catalog's ``columns`` of its table (None: by their shape), noting the columns the
    catalog lacks in ``drifted``.
    """

    statement: Statement
    columns: Mapping[str, MetadataColumn] | None
    keys: set[str]
    encoding: str
    opts: Mapping[str, Any]
    drifted: dict[tuple[str, str, str], tuple[int, str] | None]

    def _typed(self, name: str, literal: Literal, position: int) -> Any:
        value = column_value(name, literal, self.columns, self.encoding, self.opts, self.keys)
        if self.columns is not None and name not in self.columns:
            key = (self.statement.schema, self.statement.table, name)
            _note_drift(self.drifted, key, position, literal)
        return value

    def values(self) -> dict[str, str | None]:
        """Return the INSERT or SET values by column (a placeholder's column absent).

        Raises HiRDBError for a column named twice.
        """
        data: dict[str, str | None] = {}
        seen: set[str] = set()
        pairs = zip(self.statement.columns, self.statement.values, strict=True)
        for position, (name, literal) in enumerate(pairs, start=1):
            if name in seen:
                raise HiRDBError("duplicate_column", f"column {name} named twice")
            seen.add(name)
            value = self._typed(name, literal, position)
            if value is not ABSENT:
                data[name] = value
        return data

    def where(self) -> dict[str, str | None]:
        """Return the WHERE values by column; raise HiRDBError for a placeholder there."""
        where: dict[str, str | None] = {}
        for name, literal in self.statement.where:
            if literal.kind == "placeholder":
                raise HiRDBError(
                    "placeholder_in_where", f"placeholder {literal.text} in WHERE ({name})"
                )
            where[name] = self._typed(name, literal, 0)
        return where


#: The HiRDB type a column the catalog lacks is given in ``raw_metadata``, by its literal's
#: shape (formats/hirdb_update_sql.md, *Values*, literal-shape rule).
SHAPE_TYPES = {"string": "VARCHAR", "mchar": "MVARCHAR", "nchar": "NVARCHAR", "hex": "BINARY"}


def _shape_type(literal: Literal) -> str | None:
    """Return the HiRDB type of a literal's shape; None for NULL and placeholders (no shape)."""
    if literal.kind == "number":
        text = literal.text.lstrip("+-")
        if "E" in text.upper():
            return "FLOAT"
        return "DECIMAL" if "." in text else "INTEGER"
    return SHAPE_TYPES.get(literal.kind)


def _note_drift(
    drifted: dict[tuple[str, str, str], tuple[int, str] | None],
    key: tuple[str, str, str],
    position: int,
    literal: Literal,
) -> None:
    """Record a column the catalog lacks, with the first shape its literals show."""
    if drifted.get(key) is None:
        shape = _shape_type(literal)
        drifted[key] = (position, shape) if shape is not None else None


ABSENT = object()


def column_value(
    name: str,
    literal: Literal,
    columns: Mapping[str, MetadataColumn] | None,
    encoding: str,
    opts: Mapping[str, Any],
    keys: set[str],
) -> Any:
    """Return the canonical text of column ``name``'s literal, :data:`ABSENT`, or None (NULL).

    ``columns`` is the table's catalog columns (None: no catalog, the literal's shape types
    it); ``keys`` the key columns, where a placeholder is a reject. Raises
    :class:`HiRDBError` (``unknown_column``, ``placeholder_in_key``, ``bad_value``). Source:
    formats/hirdb_update_sql.md, *Values*. The fast path renders through it too.
    """
    column = None
    if columns is not None:
        column = columns.get(name)
        if column is None and opts["unknown_columns"] == "reject":
            raise HiRDBError(
                "unknown_column", f"column {name} is not in the catalog for this table"
            )
    if literal.kind == "placeholder":
        if name in keys:
            raise HiRDBError(
                "placeholder_in_key", f"placeholder {literal.text} in key column {name}"
            )
        return ABSENT
    if literal.kind == "string" and opts["placeholder_quoted"] == "accept_quoted":
        if literal.text in PLACEHOLDERS:
            return ABSENT
    try:
        return typed_value(literal, column, encoding, opts["hex_fallback"])
    except (ValueError, UnicodeDecodeError) as exc:
        raise HiRDBError("bad_value", f"column {name}: {exc}") from exc
