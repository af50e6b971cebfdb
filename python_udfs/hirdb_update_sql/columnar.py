"""The fast path of the HiRDB update-SQL decoder: a file's raw rows built by column (issue 47).

:func:`decode_columnar` reads an update-SQL file as :func:`decoder.decode_update_sql_file` (the
reference path) does, with the same raw row columns and warnings, but builds the rows as Arrow
columns instead of one ``dict`` per line:

1. the file is decoded whole, in the codec the reference chooses, and split into lines; each
   line's ``/* stamp */`` is cut off at its `` */ `` and checked by one pattern
   (formats/hirdb_update_sql.md, *Line grammar*);
2. ``COMMIT;`` and ``/* HDEEVENT n */`` lines are told by their bodies. Every other line is a
   statement of some *shape*: its body with the literals cut out. The reference parser
   (:func:`decoder.parse_statement`) reads each shape once, from a probe line in which every
   literal is a distinct number, which gives the verb, the table and the column of each
   literal. One RE2 pattern per shape (Arrow ``extract_regex``) then cuts the literals out of
   all the shape's lines at once;
3. each column's literals are rendered by its catalog type: the common spellings by
   :mod:`python_udfs.canonical_arrow` (:data:`_VECTOR_RULES`), every other literal by the reference's typing
   (:func:`decoder.column_value`), once per distinct literal;
4. transactions (duplicates, the incomplete tail, the odd stamps the reference counts) are
   found with numpy over the COMMIT lines.

A file with anything the fast path does not read in bulk goes to the reference whole
(:func:`decode_columnar` returns None): ``quote_escape: none``, bytes the codec does not decode,
a CR other than before LF, a blank line, a stamp comment in another spelling (tabs, more
spaces), a literal not between ``( , =`` or a blank and ``, ) ;`` or a blank, any line the
reference rejects (a bad literal, an unknown table, a placeholder in a key, a purge event, a
duplicate transaction, an incomplete tail with ``incomplete_tail: reject``), a column the
catalog lacks. A statement in another spelling (lowercase keywords, more blanks, bare
identifiers) is a shape of its own. ``tests/test_hirdb_columnar.py``
checks that both paths give the same rows and warnings.
"""

from __future__ import annotations

import re
import zoneinfo
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from python_udfs import canonical_arrow
from python_udfs.byte_fields import Decline, check, none_when_declined
from python_udfs.hirdb_update_sql import decoder as ref
from python_udfs.hirdb_update_sql.decoder import HiRDBError, Literal, Statement
from python_udfs.records import DecodeResult, MetadataColumn

#: A stamp comment as real output writes it, up to the `` */ `` the line is split at.
_STAMP_HEAD = (
    r"^/\* (?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,6})?|\*{4}-\*\*-\*\* \*\*:\*\*:\*\*)$"
)
_EVENT_BODY = r"^/\* HDEEVENT (?P<code>\d{1,9}) \*/$"
#: What a shape's pattern captures where a literal stands, in RE2 syntax: a quoted literal
#: (``''`` inside it read as one apostrophe), or a run of characters that cannot end a literal.
#: More than the literals (:data:`decoder.VALUE`), and so a smaller program that RE2 runs
#: several times faster: the rendering checks that each capture is one literal (the Arrow
#: rules' patterns, or the reference's literal pattern), and declines any other.
_SLOT = r"'(?:[^']|'')*'|[MmNnXx]'(?:[^']|'')*'|[^,;)' \t]+"
#: What a statement body is scanned for to find its literals: ``IS NULL`` (no literal), a
#: literal (group 1), an identifier (skipped).
_SCAN = re.compile(
    r"[Ii][Ss][ \t]+[Nn][Uu][Ll][Ll](?!" + ref.WORD_CHAR + ")|(" + ref.VALUE + ")|" + ref.IDENT
)
#: The characters a literal may follow and be followed by in a shape: then the tokenizer reads
#: it as one token of its own whatever it is, as in the probe.
_BEFORE_LITERAL = frozenset("(,= \t")
_AFTER_LITERAL = frozenset(",); \t")
#: The probe's literals: ``_PROBE + slot`` (slot 0, 1, …).
_PROBE = 900_000_001
#: More shapes than this in one file: leave it to the reference.
_MAX_SHAPES = 512
_RE2_SPECIAL = frozenset("\\.^$|?*+()[]{}")


def decode_or_decline(
    data: bytes,
    *,
    file_name: str,
    catalog: Mapping[tuple[str, str], list[MetadataColumn]] | None = None,
    options: Mapping[str, Any] | None = None,
    start: int = 0,
    start_index: int = 0,
    final: bool = False,
) -> DecodeResult | None:
    """Decode an update-SQL file as :func:`decoder.decode_update_sql_file` does, as a table.

    Same arguments and result, except that the rows are one ``pyarrow.Table``
    (``result.table``: the reference's row keys as columns, rows in line order) and
    ``result.rows`` is empty. Raises :class:`Decline` when the file holds something only the
    reference reads (the module's docstring lists what); never raises anything else for bad
    input.
    """
    opts = {**ref.DEFAULT_OPTIONS, **(options or {})}
    if opts["quote_escape"] != "doubled":
        raise Decline(f"option quote_escape: {opts['quote_escape']}")
    final = final or opts["incomplete_tail"] == "reject"
    return _Walk(data, file_name, catalog, opts, start, final).run()


decode_columnar = none_when_declined(decode_or_decline)


_COMMIT, _EVENT, _STATEMENT = 0, 1, 2
_MAP = pa.map_(pa.string(), pa.string())


@dataclass(frozen=True, slots=True)
class _Lines:
    """A file's whole lines, by byte offsets in the file and in ``whole``.

    ``start`` is each line's first byte and ``end`` the byte of its LF (or the file's end) in
    the file, as the reference's line offsets give them. ``whole`` is the lines without their
    CR joined by LF, the bytes the reference chooses a codec by; ``key_start`` and ``key_end``
    bound each line there, so that the bytes of a run of lines identify it as the reference's
    tuple of lines does.
    """

    start: np.ndarray
    end: np.ndarray
    whole: bytes
    key_start: np.ndarray
    key_end: np.ndarray


def _lines(data: bytes, final: bool) -> _Lines:
    """Split ``data`` into its whole lines (the last without LF only when ``final``).

    Declines an empty file and a CR anywhere but before LF: the reference strips CRs at a
    line's end only.
    """
    check(data.count(b"\r") == data.count(b"\r\n"))
    buf = np.frombuffer(data, np.uint8)
    end = np.flatnonzero(buf == 10)
    start = np.concatenate(([0], end + 1))
    if final and start[-1] < len(data):
        end = np.append(end, len(data))
    start = start[: len(end)]
    check(len(end) > 0)
    inside = end < len(data)
    cr = np.zeros(len(end), dtype=bool)
    cr[inside] = buf[np.maximum(end[inside] - 1, 0)] == 13
    cr &= end > start
    whole = data[: int(end[-1]) - int(cr[-1])].replace(b"\r\n", b"\n")
    removed = np.cumsum(cr) - cr  # the CRs before each line
    return _Lines(start, end, whole, start - removed, end - removed - cr)


def _stamp_split(texts: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Split each line at its first `` */ ``: ``(stamp comment, body)``; decline a line without.

    The comments are ASCII (the caller checks them), so a code point is a byte there: where
    every line has its `` */ `` at one position (stamps of one precision), slicing there is
    the split.
    """
    at = pc.find_substring(texts, " */ ").to_numpy(zero_copy_only=False)
    check(np.all(at >= 0))
    if np.all(at == at[0]):
        first = int(at[0])
        return pc.utf8_slice_codeunits(texts, 0, first), pc.utf8_slice_codeunits(texts, first + 4)
    parts = pc.split_pattern(texts, " */ ", max_splits=1)
    return pc.list_element(parts, 0), pc.list_element(parts, 1)


class _Walk:
    """One fast-path read of an update-SQL file, into ``result``; raises Decline."""

    def __init__(
        self,
        data: bytes,
        file_name: str,
        catalog: Mapping[tuple[str, str], list[MetadataColumn]] | None,
        opts: Mapping[str, Any],
        start: int,
        final: bool,
    ) -> None:
        self.data, self.opts, self.start, self.final = data, opts, start, final
        self.base_name = file_name.replace("\\", "/").rsplit("/", 1)[-1]
        self.stream = ref.stream_of(file_name)
        self.result = DecodeResult(consumed_end=start)
        self.typing = _Typing(catalog, opts)

    def run(self) -> DecodeResult:
        """Read every line; the rows of the lines from ``start`` on go to ``result.table``."""
        lines = _lines(self.data, self.final)
        codec, text = self._decoded(lines.whole)
        self.typing.encoding = codec
        texts = pc.split_pattern(pa.array([text], pa.large_string()), "\n").values
        check(len(texts) == len(lines.start))
        head, body = _stamp_split(texts.cast(pa.string()))
        check(pc.all(pc.match_substring_regex(head, _STAMP_HEAD)).as_py())
        columns = self._stamp_columns(pc.utf8_slice_codeunits(head, 3))
        statements = _Statements(body, self.opts, self.typing)
        emitted = int(np.searchsorted(lines.start, self.start))
        masked = columns["stamp_masked"].to_numpy(zero_copy_only=False)
        self._transactions(lines, statements.kind, emitted)
        self._odd_stamps(statements.kind, masked, emitted)
        columns.update(statements.columns())
        n, size = len(lines.start), len(self.data)
        columns.update(
            record_offset=pa.array(lines.start, pa.int64()),
            record_index=pa.array(np.arange(1, n + 1), pa.int64()),
            line_length=pa.array(np.minimum(lines.end + 1, size) - lines.start, pa.int64()),
        )
        for name, value in (("file_name", self.base_name), ("stream", self.stream)):
            columns[name] = pa.repeat(pa.scalar(value, pa.string()), n)
        columns["encoding"] = pa.repeat(pa.scalar(codec, pa.string()), n)
        self.result.table = pa.table(columns).slice(emitted)
        self.result.consumed_end = max(self.start, min(int(lines.end[-1]) + 1, size))
        return self.result

    def _decoded(self, whole: bytes) -> tuple[str, str]:
        """Return the codec and text of the file's lines, the codec chosen as the reference does."""
        option = str(self.opts["encoding"]).lower()
        option = ref.ENCODING_ALIASES.get(option, option)
        if option == "auto":
            decoded = ref.auto_decoded(whole)
            check(decoded is not None)
            self.result.warnings.append(f"encoding detected: {decoded[0]}")
            return decoded
        try:
            return option, whole.decode(option)
        except UnicodeDecodeError as exc:
            raise Decline from exc

    def _stamp_columns(self, stamps: pa.Array) -> dict[str, pa.Array]:
        """``update_time``, ``update_time_utc`` and ``stamp_masked`` of every line."""
        zone_name = str(self.opts["source_time_zone"] or "UTC")
        zone = None if zone_name.upper() == "UTC" else zoneinfo.ZoneInfo(zone_name)
        stamps = stamps.cast(pa.string())
        masked = pc.equal(stamps, ref.MASKED_STAMP)
        # a UTC stamp without a fraction is its own canonical text when it is a date-time
        same = np.zeros(len(stamps), dtype=bool)
        if zone is None:
            same = _matches(stamps, r"^\d{4}-\d\d-\d\d (?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d$")
            same &= canonical_arrow.date_texts(pc.utf8_slice_codeunits(stamps, 0, 10))[0]
        same |= masked.to_numpy(zero_copy_only=False)
        utc = pc.if_else(masked, pa.scalar(None, pa.string()), stamps)
        if not same.all():
            distinct = pc.unique(stamps.filter(pa.array(~same)))
            try:
                texts = [ref.stamp_to_utc(stamp, zone) for stamp in distinct.to_pylist()]
            except HiRDBError as exc:
                raise Decline from exc
            each = pa.array(texts, pa.string()).take(pc.index_in(stamps, distinct))
            utc = pc.if_else(pa.array(same), utc, each)
        return {"update_time": stamps, "update_time_utc": utc, "stamp_masked": masked}

    def _transactions(self, lines: _Lines, kind: np.ndarray, emitted: int) -> None:
        """Check the transactions as the reference closes them; warn of an incomplete tail.

        Declines a repeated transaction (``duplicate_transactions: reject``) and an incomplete
        tail with ``incomplete_tail: reject``: the reference rejects their lines.
        """
        closes = np.flatnonzero(kind == _COMMIT)
        firsts = np.concatenate(([0], closes + 1))[: len(closes)]
        if self.opts["duplicate_transactions"] == "reject":
            whole, seen = lines.whole, set()
            key_start, key_end = lines.key_start.tolist(), lines.key_end.tolist()
            for first, close in zip(firsts.tolist(), closes.tolist(), strict=True):
                key = whole[key_start[first] : key_end[close]]
                if first >= emitted and key in seen:
                    raise Decline
                seen.add(key)
        tail = max(int(closes[-1]) + 1 if len(closes) else 0, emitted)
        if tail < len(kind):
            check(self.opts["incomplete_tail"] == "hold")
            self.result.warnings.append(
                f"incomplete transaction at lines {tail + 1}–{len(kind)} (no COMMIT yet): pending"
            )

    def _odd_stamps(self, kind: np.ndarray, masked: np.ndarray, emitted: int) -> None:
        """Add the reference's warnings of odd stamps (:data:`decoder.ODD_STAMPS`)."""
        commit = kind == _COMMIT
        control = commit | (kind == _EVENT)
        after_commit = np.concatenate(([True], commit[:-1]))
        counts = {
            "empty transaction": (commit & after_commit)[emitted:].sum(),
            "masked statement": (masked & ~control)[emitted:].sum(),
            "unmasked control": (~masked & control)[emitted:].sum(),
        }
        for what, count in sorted(counts.items()):
            if count:
                self.result.warnings.append(ref.ODD_STAMPS[what].format(int(count)))


@dataclass(frozen=True, slots=True)
class _Shape:
    """A statement body with its literals cut out, as the reference parses it.

    ``statement`` is the probe's statement (its literals stand for the slots), ``pattern``
    the RE2 pattern of the shape's bodies (group ``s<i>``: slot ``i``), ``value_slots`` the
    slot of each of ``statement.values`` and ``where_slots`` of each WHERE condition (None for
    ``IS NULL``).
    """

    statement: Statement
    pattern: str
    slots: int
    value_slots: tuple[int, ...]
    where_slots: tuple[int | None, ...]


def _re2_escape(text: str) -> str:
    return "".join("\\" + c if c in _RE2_SPECIAL else c for c in text)


def _shape(body: str, identifier_case: str) -> _Shape:
    """Return the shape of one statement body; decline one the fast path does not read.

    Its literals (:data:`_SCAN`) must each stand between :data:`_BEFORE_LITERAL` and
    :data:`_AFTER_LITERAL`, so that every body of the shape tokenizes as the probe does.
    """
    parts, pos = [], 0
    for match in _SCAN.finditer(body):
        if match.group(1) is not None:
            parts.append(body[pos : match.start()])
            pos = match.end()
    parts.append(body[pos:])
    slots = len(parts) - 1
    for i in range(slots):
        check(parts[i][-1:] in _BEFORE_LITERAL and parts[i + 1][:1] in _AFTER_LITERAL)
    probe = "".join(part + str(_PROBE + i) for i, part in enumerate(parts[:-1])) + parts[-1]
    try:
        statement = ref.parse_statement(probe, identifier_case, "doubled", reference=True)
    except HiRDBError as exc:
        raise Decline from exc
    check(statement.statement_type in ("INSERT", "UPDATE", "DELETE", "PURGE"))
    value_slots = tuple(_slot(literal, slots) for literal in statement.values)
    where_slots = tuple(
        None if literal.kind == "null" else _slot(literal, slots) for _, literal in statement.where
    )
    used = sorted(value_slots + tuple(s for s in where_slots if s is not None))
    check(used == list(range(slots)))
    check(len(set(statement.columns)) == len(statement.columns))
    check(len({name for name, _ in statement.where}) == len(statement.where))
    pattern = "".join(_re2_escape(part) + f"(?P<s{i}>{_SLOT})" for i, part in enumerate(parts[:-1]))
    return _Shape(
        statement, "^" + pattern + _re2_escape(parts[-1]) + "$", slots, value_slots, where_slots
    )


def _slot(literal: Literal, slots: int) -> int:
    """Return the slot a probe literal stands for; decline any other literal."""
    check(literal.kind == "number" and literal.text.isascii() and literal.text.isdigit())
    slot = int(literal.text) - _PROBE
    check(0 <= slot < slots)
    return slot


#: The verb and table a statement body starts with, as real output writes them: the lines are
#: grouped by it before their shapes are matched (a line of another spelling has none).
_HEAD = r'^(?P<head>(?:INSERT INTO|UPDATE|DELETE FROM|PURGE TABLE) "[^"]*"\."[^"]*")'


def _match_shapes(
    body: pa.Array, rows: np.ndarray, identifier_case: str
) -> list[tuple[_Shape, np.ndarray, pa.StructArray | None]]:
    """Sort the statement ``rows`` of ``body`` by shape: ``(shape, rows, slot texts)`` each.

    The lines are grouped by their verb and table (:data:`_HEAD`). In each group, the first
    line no shape matched yet gives the next shape, whose pattern then takes every line of it
    in the group at once.
    """
    bodies = body.take(pa.array(rows))
    heads = pc.dictionary_encode(pc.extract_regex(bodies, _HEAD).field("head"))
    group = pc.fill_null(heads.indices, -1).to_numpy(zero_copy_only=False)
    order = np.argsort(group, kind="stable")
    bodies, rows, group = bodies.take(pa.array(order)), rows[order], group[order]
    bounds = np.flatnonzero(np.diff(group)) + 1
    shapes: list[tuple[_Shape, np.ndarray, pa.StructArray | None]] = []
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(rows)], strict=True):
        _group_shapes(bodies.slice(lo, hi - lo), rows[lo:hi], identifier_case, shapes)
    return shapes


def _group_shapes(
    bodies: pa.Array,
    rows: np.ndarray,
    identifier_case: str,
    shapes: list[tuple[_Shape, np.ndarray, pa.StructArray | None]],
) -> None:
    """Append the shapes of one group's lines (``bodies`` of ``rows``) to ``shapes``."""
    while len(rows):
        check(len(shapes) < _MAX_SHAPES)
        shape = _shape(bodies[0].as_py(), identifier_case)
        if shape.slots:
            found = pc.extract_regex(bodies, shape.pattern)
            matched = found.is_valid().to_numpy(zero_copy_only=False)
        else:
            found = None
            matched = pc.match_substring_regex(bodies, shape.pattern).to_numpy(zero_copy_only=False)
        check(matched[0])
        if matched.all():
            shapes.append((shape, rows, found))
            return
        picked = pa.array(matched)
        shapes.append((shape, rows[matched], None if found is None else found.filter(picked)))
        bodies, rows = bodies.filter(pa.array(~matched)), rows[~matched]


class _Statements:
    """The bodies of a file's lines, told apart and parsed: ``kind`` and the row columns."""

    def __init__(self, body: pa.Array, opts: Mapping[str, Any], typing: _Typing) -> None:
        self.typing = typing
        event = pc.extract_regex(body, _EVENT_BODY)
        is_event = event.is_valid()
        is_commit = pc.equal(body, "COMMIT;").to_numpy(zero_copy_only=False)
        self.kind = np.where(
            is_commit,
            _COMMIT,
            np.where(is_event.to_numpy(zero_copy_only=False), _EVENT, _STATEMENT),
        )
        codes = pc.if_else(is_event, event.field("code"), pa.scalar(None, pa.string()))
        self.event_code = codes.cast(pa.int32())
        purge = [int(code) for code in opts["purge_event_codes"] or []]
        check(
            not purge or not pc.any(pc.is_in(self.event_code, pa.array(purge, pa.int32()))).as_py()
        )
        rows = np.flatnonzero(self.kind == _STATEMENT)
        self.shapes = _match_shapes(body, rows, opts["identifier_case"])

    def columns(self) -> dict[str, pa.Array]:
        """Return the statement columns of the raw rows of every line."""
        n = len(self.kind)
        group = self.kind.astype(np.int64)  # 0 COMMIT, 1 EVENT, 2 + s shape s
        attributes: list[tuple[Any, ...]] = [("COMMIT", None, None, None), ("EVENT",) + (None,) * 3]
        maps: dict[str, list[pa.Array]] = {
            "data": [pa.nulls(1, _MAP)],
            "where_data": [pa.nulls(1, _MAP)],
        }
        index = {name: np.zeros(n, dtype=np.int64) for name in maps}
        for s, (shape, rows, found) in enumerate(self.shapes):
            group[rows] = 2 + s
            statement = shape.statement
            listed = statement.statement_type in ("INSERT", "UPDATE")
            attributes.append(
                (
                    statement.statement_type,
                    statement.schema,
                    statement.table,
                    list(statement.columns) if listed else None,
                )
            )
            for name, built in zip(maps, self._maps(shape, found, len(rows)), strict=True):
                if built is not None:
                    index[name][rows] = sum(len(m) for m in maps[name]) + np.arange(len(rows))
                    maps[name].append(built)
        which = pa.array(group)
        kinds, schemas, tables, names = zip(*attributes, strict=True)
        return {
            "statement_type": pa.array(kinds, pa.string()).take(which),
            "source_schema": pa.array(schemas, pa.string()).take(which),
            "source_table": pa.array(tables, pa.string()).take(which),
            "event_code": self.event_code,
            "column_names": pa.array(names, pa.list_(pa.string())).take(which),
            **{
                name: pa.concat_arrays(parts).take(pa.array(index[name]))
                for name, parts in maps.items()
            },
        }

    def _maps(
        self, shape: _Shape, found: pa.StructArray | None, n: int
    ) -> tuple[pa.MapArray | None, pa.MapArray | None]:
        """Return the ``data`` and ``where_data`` maps of one shape's ``n`` lines (None: null)."""
        statement = shape.statement
        columns, keys = self.typing.table(statement)
        data = where = None
        if statement.statement_type in ("INSERT", "UPDATE"):
            rendered = [
                self.typing.render(found.field(f"s{slot}"), name, columns, keys, where=False)
                for name, slot in zip(statement.columns, shape.value_slots, strict=True)
            ]
            data = _map(n, statement.columns, rendered)
        if statement.statement_type in ("UPDATE", "DELETE"):
            names = [name for name, _ in statement.where]
            rendered = []
            for name, slot in zip(names, shape.where_slots, strict=True):
                if slot is None:  # IS NULL
                    self.typing.column(name, columns)
                    rendered.append((pa.nulls(n, pa.string()), np.zeros(n, dtype=bool)))
                else:
                    texts = found.field(f"s{slot}")
                    rendered.append(self.typing.render(texts, name, columns, keys, where=True))
            where = _map(n, names, rendered)
        return data, where


def _map(
    n: int, names: tuple[str, ...] | list[str], rendered: list[tuple[pa.Array, np.ndarray]]
) -> pa.MapArray:
    """Build ``n`` maps of ``names`` to their rendered values, a value's absent entries left out.

    ``rendered`` holds one ``(values, absent)`` pair per name, each of ``n`` rows.
    """
    m = len(names)
    present = ~np.stack([absent for _, absent in rendered], axis=1)
    values = pa.concat_arrays([values.cast(pa.string()) for values, _ in rendered])
    pick = (np.arange(m, dtype=np.int64) * n)[None, :] + np.arange(n, dtype=np.int64)[:, None]
    flat = pick[present]
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(present.sum(axis=1), out=offsets[1:])
    keys = pa.array(list(names), pa.string()).take(pa.array(flat // n))
    return pa.MapArray.from_arrays(pa.array(offsets), keys, values.take(pa.array(flat)))


_matches = canonical_arrow.matches


def _inner(texts: pa.Array) -> pa.Array:
    """Return the text between a quoted literal's apostrophes, as written."""
    return pc.utf8_slice_codeunits(texts, 1, -1)


def _integer_rule(texts: pa.Array, column: MetadataColumn) -> tuple[np.ndarray, pa.Array]:
    return canonical_arrow.integer_texts(texts)


def _decimal_rule(texts: pa.Array, column: MetadataColumn) -> tuple[np.ndarray, pa.Array]:
    return canonical_arrow.decimal_texts(texts, column.scale or 0)


def _interval_rule(texts: pa.Array, column: MetadataColumn) -> tuple[np.ndarray, pa.Array]:
    return _matches(texts, r"^[+-]?\d+\.$"), texts


def _text_rule(texts: pa.Array, column: MetadataColumn) -> tuple[np.ndarray, pa.Array]:
    quoted = _matches(texts, "^'")
    ok = quoted | _matches(texts, "^[MmNn]'")
    inner = pc.if_else(pa.array(quoted), _inner(texts), pc.utf8_slice_codeunits(texts, 2, -1))
    return ok, pc.replace_substring(inner, "''", "'")


def _quoted(
    texts: pa.Array, rule: Callable[[pa.Array], tuple[np.ndarray, pa.Array]]
) -> tuple[np.ndarray, pa.Array]:
    """Apply a date-time rule of :mod:`canonical_arrow` to the text of ``'…'`` literals."""
    ok, rendered = rule(_inner(texts))
    return ok & _matches(texts, r"^'[0-9 :.T-]+'$"), rendered


def _date_rule(texts: pa.Array, column: MetadataColumn) -> tuple[np.ndarray, pa.Array]:
    return _quoted(texts, canonical_arrow.date_texts)


def _time_rule(texts: pa.Array, column: MetadataColumn) -> tuple[np.ndarray, pa.Array]:
    return _quoted(texts, canonical_arrow.time_texts)


def _timestamp_rule(texts: pa.Array, column: MetadataColumn) -> tuple[np.ndarray, pa.Array]:
    return _quoted(texts, canonical_arrow.timestamp_texts)


#: The literals of each catalog base type rendered with Arrow compute: ``(texts, column) ->
#: (rendered here, rendered text)``, the ones rendered here already in the reference's
#: canonical text (:data:`decoder._TYPED_LITERALS`). Every other literal, and every literal
#: of a type not listed (FLOAT among them), takes the reference's typing.
_VECTOR_RULES = {
    **dict.fromkeys(ref.INTEGER_TYPES, _integer_rule),
    **dict.fromkeys(ref.DECIMAL_TYPES, _decimal_rule),
    **dict.fromkeys(ref.INTERVAL_TYPES, _interval_rule),
    **dict.fromkeys(ref.TEXT_TYPES, _text_rule),
    "DATE": _date_rule,
    "TIME": _time_rule,
    "TIMESTAMP": _timestamp_rule,
}
_QUOTED_PLACEHOLDER = r"^'\*(?:BLOB|BINARY|ADT|MCOL)\*'$"


class _Typing:
    """How a column's literals become canonical text: the catalog, the options, the codec."""

    def __init__(
        self,
        catalog: Mapping[tuple[str, str], list[MetadataColumn]] | None,
        opts: Mapping[str, Any],
    ) -> None:
        self.opts = opts
        self.encoding = "utf-8"
        self.tables = None
        if catalog is not None:
            self.tables = {
                key: (
                    {c.column_name: c for c in cols},
                    {c.column_name for c in cols if c.primary_key_position},
                )
                for key, cols in catalog.items()
            }

    def table(self, statement: Statement) -> tuple[Mapping[str, MetadataColumn] | None, set[str]]:
        """Return the columns and key columns of a statement's table; decline one not in the catalog."""
        if self.tables is None:
            return None, set()
        entry = self.tables.get((statement.schema, statement.table))
        check(entry is not None)
        return entry

    def column(
        self, name: str, columns: Mapping[str, MetadataColumn] | None
    ) -> MetadataColumn | None:
        """Return the catalog's column ``name``; decline one the catalog lacks (schema drift)."""
        if columns is None:
            return None
        check(name in columns)
        return columns[name]

    def render(
        self,
        texts: pa.Array,
        name: str,
        columns: Mapping[str, MetadataColumn] | None,
        keys: set[str],
        where: bool,
    ) -> tuple[pa.Array, np.ndarray]:
        """Render one column's literal ``texts``: ``(canonical text or null, absent)``."""
        column = self.column(name, columns)
        ok, values = np.zeros(len(texts), dtype=bool), pa.nulls(len(texts), pa.string())
        rule = None if column is None else _VECTOR_RULES.get(ref.base_type(column.source_type))
        if rule is not None:
            ok, values = rule(texts, column)
            if self.opts["placeholder_quoted"] == "accept_quoted":
                ok &= ~_matches(texts, _QUOTED_PLACEHOLDER)
        null = _matches(texts, "^[Nn][Uu][Ll][Ll]$")
        values = pc.if_else(pa.array(null), pa.scalar(None, pa.string()), values.cast(pa.string()))
        ok |= null
        absent = np.zeros(len(texts), dtype=bool)
        if not ok.all():
            each, absent = self._each(texts, ~ok, name, columns, keys, where)
            values = pc.if_else(pa.array(ok), values, each)
        return values, absent

    def _each(
        self,
        texts: pa.Array,
        need: np.ndarray,
        name: str,
        columns: Mapping[str, MetadataColumn] | None,
        keys: set[str],
        where: bool,
    ) -> tuple[pa.Array, np.ndarray]:
        """Render the ``need``-ed literals by the reference's typing, once per distinct text."""
        distinct = pc.unique(texts.filter(pa.array(need)))
        values, absent = [], []
        for text in distinct.to_pylist():
            value = self._value(text, name, columns, keys, where)
            absent.append(value is ref.ABSENT)
            values.append(None if value is ref.ABSENT else value)
        index = pc.fill_null(pc.index_in(texts, distinct), 0)
        taken = pa.array(values, pa.string()).take(index)
        return taken, np.array(absent, dtype=bool)[index.to_numpy(zero_copy_only=False)] & need

    def _value(
        self,
        text: str,
        name: str,
        columns: Mapping[str, MetadataColumn] | None,
        keys: set[str],
        where: bool,
    ) -> Any:
        """Return the reference's rendering of one literal; decline what it would reject."""
        match = ref.LIST_ITEMS["values"].fullmatch(text)
        literal = ref.fast_literal(*match.groups()) if match else None
        check(literal is not None and not (where and literal.kind == "placeholder"))
        try:
            return ref.column_value(name, literal, columns, self.encoding, self.opts, keys)
        except HiRDBError as exc:
            raise Decline from exc
