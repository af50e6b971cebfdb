"""Fujitsu Linkexpress extract writer of the sample-feed simulator (``linkexpress_extract``).

:func:`write_extracts` writes a :class:`simulator.database.Simulation` run over ``JP_TABLES`` as
``lxextdb`` files (formats/linkexpress_extract.md, *What a file looks like*) in any of the
layouts A–E, NORMAL or LITTLE, either byte order and OUTCODE: a full extract of every table,
differential files in chunks, a re-extract of one table in the middle, and an empty full extract
(0xFFFF) for each TRUNCATE. Group unit cuts one transaction over two files and leaves the last
transaction without its commit record; table unit writes each table's changes of a chunk as one
file and leaves the last (open) transaction out. Written the way the product would,
independently of the decoder.
"""

from __future__ import annotations

import datetime as dt
import struct
from collections.abc import Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

from simulator.database import JP_TABLES, primary_key_text, transaction_groups

#: OUTCODE → (CHAR codec, NCHAR codec; ``utf-16`` takes the file's byte order).
OUTCODES = {"unicode": ("utf-8", "utf-16"), "euc": ("euc_jp", "euc_jp"), "sjis": ("cp932", "cp932")}


def _packed(value: str, precision: int, scale: int) -> bytes:
    number = Decimal(value).scaleb(scale)
    digits = str(abs(int(number))).rjust(2 * (precision // 2 + 1) - 1, "0")
    return bytes.fromhex(digits + ("d" if number < 0 else "c"))


def _zoned(value: str, precision: int, scale: int) -> bytes:
    number = int(Decimal(value).scaleb(scale))
    digits = str(abs(number)).rjust(precision, "0").encode("ascii")
    last = (0x50 if number < 0 else 0x30) | (digits[-1] - 0x30)
    return digits[:-1] + bytes([last])


def lx_item(
    col,
    value: str | None,
    little: bool,
    order: str,
    outcode: str,
    timestamp_filler: int = 0,
    nvarchar_bytes: bool = False,
    varchar_padded: bool | None = None,
) -> bytes:
    """Encode one canonical value as a Linkexpress data item of ``col.lx_type``.

    A TIMESTAMP is followed by ``timestamp_filler`` zero bytes (4 for ``ymdhms7_r4``); with
    ``nvarchar_bytes`` an NCHAR VARYING's length counts bytes (``nvarchar_length_unit``). A
    VARCHAR is padded to its declared length when ``varchar_padded`` (default: NORMAL only,
    option ``varchar_layout``).

    No null indicator is written. ``None`` gives the null item: zero bytes of the item's size (a zero length for
    a LITTLE VARCHAR). ``order`` is ``>`` or ``<``; ``outcode`` a key of :data:`OUTCODES`.
    """
    kind = col.lx_type
    char_codec, nchar_codec = OUTCODES[outcode]
    if nchar_codec == "utf-16":
        nchar_codec = "utf-16-be" if order == ">" else "utf-16-le"
    if kind in ("VARCHAR", "NCHAR VARYING"):
        unit = 2 if kind == "NCHAR VARYING" else 1
        raw = b"" if value is None else value.encode(nchar_codec if unit == 2 else char_codec)
        count = len(raw) if nvarchar_bytes else len(raw) // unit
        padded = not little if varchar_padded is None else varchar_padded
        body = raw.ljust(unit * col.length, b"\0") if padded else raw
        return struct.pack(order + "H", count) + body
    if kind == "CHAR":
        if value is None:
            return b"\0" * col.length
        return value.encode(char_codec).ljust(col.length, b" ")
    if kind == "NCHAR":
        return b"\0" * (2 * col.length) if value is None else value.encode(nchar_codec)
    sizes = {"SMALLINT": "h", "INTEGER": "i", "BIGINT": "q", "REAL": "f", "DOUBLE PRECISION": "d"}
    if kind in sizes:
        fmt = order + sizes[kind]
        if value is None:
            return b"\0" * struct.calcsize(fmt)
        number = float(value) if kind in ("REAL", "DOUBLE PRECISION") else int(value)
        return struct.pack(fmt, number)
    if kind == "DECIMAL":
        if value is None:
            return b"\0" * (col.precision // 2 + 1)
        return _packed(value, col.precision, col.scale)
    if kind == "NUMERIC":
        return b"\0" * col.precision if value is None else _zoned(value, col.precision, col.scale)
    if kind in ("DATE", "TIMESTAMP", "TIME"):
        size = {"DATE": 4, "TIME": 3, "TIMESTAMP": 7}[kind]
        if kind == "TIMESTAMP":
            size += timestamp_filler
        if value is None:
            return b"\0" * size
        if kind == "TIME":
            t = dt.time.fromisoformat(value)
            return bytes([t.hour, t.minute, t.second])
        moment = dt.datetime.fromisoformat(value if kind == "TIMESTAMP" else value + " 00:00:00")
        out = struct.pack(order + "h", moment.year) + bytes([moment.month, moment.day])
        return out + (
            bytes([moment.hour, moment.minute, moment.second]) + b"\0" * timestamp_filler
            if kind == "TIMESTAMP"
            else b""
        )
    raise ValueError(f"no Linkexpress item for {kind}")


def lx_record(
    layout: str,
    columns: Sequence,
    values: Mapping[str, str | None] | None,
    op: int,
    *,
    little: bool,
    order: str = ">",
    outcode: str = "sjis",
    extraction_id: int = 0,
    timestamp_filler: int = 0,
    nvarchar_bytes: bool = False,
    varchar_padded: bool | None = None,
) -> bytes:
    """Encode one record in ``layout`` A–E (formats/linkexpress_extract.md).

    ``values`` None writes no items (0xFFFF, 0x8000); op 0x8000 writes a commit record (D, E).
    ``varchar_padded`` as :func:`lx_item`.
    """
    h = struct.Struct(order + "H")
    nulls = layout in "ACD"
    items = b""
    if values is not None:
        for col in columns:
            value = values.get(col.name)
            if nulls:
                items += h.pack(0xFFFF if value is None else 0)
            items += lx_item(
                col, value, little, order, outcode, timestamp_filler, nvarchar_bytes, varchar_padded
            )
    if op == 0x8000:
        body = h.pack(1) + (h.pack(0) if layout == "D" else b"") + h.pack(op)
    elif layout in "AB":
        body = h.pack(op) + items
        if not little:
            return body
    elif layout == "C":
        body = h.pack(len(columns) + 1) + h.pack(0) + h.pack(op) + items
    else:
        count = 2 if values is None else len(columns) + 2
        body = (
            h.pack(count)
            + h.pack(extraction_id)
            + (h.pack(0) if layout == "D" else b"")
            + h.pack(op)
            + items
        )
    return struct.pack(order + "i", len(body) + 4) + body


def write_extracts(
    sim, folder: Path, options: Mapping[str, Any] | None = None, tables: tuple | None = None
) -> int:
    """Write the simulation as ``lxextdb`` extract files; return the file count.

    Options: ``unit`` (``group`` default, or ``table``), ``difftype`` (``open``/``jnl``, table
    unit), ``null_indicators`` (default true), ``logtype`` (``little`` default / ``normal``),
    ``byteswap`` (``no`` big-endian default / ``yes``), ``outcode`` (``sjis`` default), ``chunks``
    (differential files per table or group, default 3), ``timestamp_layout`` (``ymdhms7``
    default, or ``ymdhms7_r4``: 4 zero bytes after each TIMESTAMP), ``nvarchar_length_unit``
    (``characters`` default, or ``bytes``). Extraction ids are the tables' order in ``tables``
    (default JP_TABLES), 1-based (the catalog seed's ``table_identifier``).
    """
    opts = dict(options or {})
    group = opts.get("unit", "group") == "group"
    nulls = bool(opts.get("null_indicators", True))
    little = opts.get("logtype", "little") == "little"
    order = "<" if opts.get("byteswap", "no") == "yes" else ">"
    outcode = opts.get("outcode") if opts.get("outcode") in OUTCODES else "sjis"
    chunks = max(1, int(opts.get("chunks", 3)))
    jnl = opts.get("difftype", "open") == "jnl"
    filler = 4 if opts.get("timestamp_layout") == "ymdhms7_r4" else 0
    nvarchar_bytes = opts.get("nvarchar_length_unit") == "bytes"
    diff_layout = ("D" if nulls else "E") if group else ("C" if jnl else ("A" if nulls else "B"))
    full_layout = ("D" if nulls else "E") if group else ("A" if nulls else "B")

    tables = tables or JP_TABLES
    ids = {(t.schema, t.name): i for i, t in enumerate(tables, start=1)}
    folder.mkdir(parents=True, exist_ok=True)
    counter = [0]

    def write(path_table, kind: str, payload: bytes) -> None:
        counter[0] += 1
        sub = (
            folder / f"{path_table.schema}.{path_table.name}" if path_table is not None else folder
        )
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"LX{counter[0]:06d}_{kind}.dat").write_bytes(payload)

    def rec(layout, table, values, op, ext_id=0) -> bytes:
        return lx_record(
            layout,
            table.columns,
            values,
            op,
            little=little,
            order=order,
            outcode=outcode,
            extraction_id=ext_id,
            timestamp_filler=filler,
            nvarchar_bytes=nvarchar_bytes,
        )

    state: dict[tuple[str, str], dict[str, dict]] = {(t.schema, t.name): {} for t in tables}

    def full_extract(table) -> None:
        rows = list(state[(table.schema, table.name)].values())
        if not rows:
            write(table, "F", rec(full_layout, table, None, 0xFFFF))
            return
        write(table, "F", b"".join(rec(full_layout, table, row, 0) for row in rows))

    def apply(change) -> None:
        rows = state[(change.table.schema, change.table.name)]
        if change.operation == "TRUNCATE":
            rows.clear()
        elif change.operation == "DELETE":
            rows.pop(primary_key_text(change.table, change.before), None)
        else:
            rows[primary_key_text(change.table, change.after)] = dict(change.after)

    transactions = transaction_groups(sim)
    loads = [c for _, cs in transactions for c in cs if c.operation == "LOAD"]
    for change in loads:
        apply(change)
    for table in tables:
        full_extract(table)
    work = [(t, cs) for t, cs in transactions if cs[0].operation != "LOAD"]
    open_ids = {c.transaction_id for c in sim.open_transaction}
    if not group:
        work = [(t, cs) for t, cs in work if t not in open_ids]
    bounds = {len(work) * k // chunks for k in range(1, chunks)}
    split_bound = min(bounds) if bounds else None
    reextract_bound = max(bounds) if len(bounds) > 1 else None
    pending: list[bytes] = []  # group unit: records of the current file
    per_table: dict[tuple[str, str], list[bytes]] = {}

    def flush() -> None:
        if group and pending:
            write(None, "D", b"".join(pending))
            pending.clear()
        for table in tables:
            records = per_table.pop((table.schema, table.name), None)
            if records:
                write(table, "D", b"".join(records))

    for number, (txn_id, changes) in enumerate(work):
        if number in bounds:
            if group and number == split_bound and len(changes) > 1:
                carry = changes  # this transaction is cut over two files
            else:
                carry = None
            if carry is None:
                flush()
                if number == reextract_bound:
                    full_extract(tables[0])
        else:
            carry = None
        for i, change in enumerate(changes):
            if change.operation == "TRUNCATE":
                flush()
                apply(change)
                full_extract(change.table)
                continue
            apply(change)
            op = {"INSERT": 1, "UPDATE": 2, "DELETE": 3}[change.operation]
            image = change.before if change.operation == "DELETE" else change.after
            key = (change.table.schema, change.table.name)
            if group:
                pending.append(rec(diff_layout, change.table, image, op, ids[key]))
                if carry is not None and i == 0:
                    flush()  # the rest of the transaction and its commit go to the next file
            else:
                per_table.setdefault(key, []).append(rec(diff_layout, change.table, image, op))
        if group and changes[-1].operation != "TRUNCATE" and txn_id not in open_ids:
            pending.append(rec(diff_layout, tables[0], None, 0x8000))
    flush()
    return counter[0]
