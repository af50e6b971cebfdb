"""GoldenGate trail writer of the sample-feed simulator (the inverse of ``goldengate_trail``).

Writes a :class:`~simulator.database.Simulation` as Oracle GoldenGate would: trail files
``<prefix><6-digit seqno>`` that roll over every ``records_per_file`` records (so transactions
span files), in big- or little-endian framing, with table definitions either in a defgen
sourcedefs file (``dirdef/sim.def``, 11.x style, table names in the record header) or as TDR
metadata records inside each trail (12.2+ style, TDR indexes in the record header). Updates are
FieldComp ``B``/``A`` record pairs or unified records (IOType 134); deletes carry the key
columns only; the full load is written as inserts in one transaction. The open transaction of
the simulation is written without its last record, so it stays pending.

The byte layout is the one ``formats/goldengate_trail.md`` establishes from Oracle's samples:
record and token lengths, GHDR fields (the TDR index at offset 34 among them) and TDR fields
follow the framing order; column payload integers and VARCHAR lengths are big-endian whatever
the framing order.
"""

from __future__ import annotations

import datetime as dt
import struct
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

from python_udfs.goldengate_trail.decoder import JULIAN_UNIX_OFFSET_US

_EPOCH = dt.datetime(1970, 1, 1)
#: GoldenGate type, scale source, msdt, lsdt and sub type of each simulator (Qlik) type.
_GG_TYPES = {
    "INT2": (134, 0, 0, 0),
    "INT4": (134, 0, 0, 0),
    "INT8": (134, 0, 0, 0),
    "NUMERIC": (134, 0, 0, 0),
    "REAL8": (143, 0, 0, 0),
    "DATE": (192, 0, 2, 0),
    "DATETIME": (192, 0, 6, 0),
    "STRING": (64, 0, 0, 0),
    "WSTRING": (64, 0, 0, 0),
    "BOOLEAN": (64, 0, 0, 0),
}


def gg_type_code(col) -> int:
    """GoldenGate data type code the simulator writes for a simulated column."""
    return _GG_TYPES[col.qlik_type][0]


def _gg_type(col) -> tuple[int, int, int, int]:
    kind, msdt, lsdt, sub = _GG_TYPES[col.qlik_type]
    return kind, msdt, lsdt, sub


def sourcedefs_text(tables) -> str:
    """Return a defgen sourcedefs file describing the simulated tables (19 fields a column)."""
    lines = [
        "*+- Defgen version 2.0, Encoding UTF-8",
        "*",
        "Database type: ORACLE",
        "Character set ID: UTF-8",
        "National character set ID: UTF-16",
        "Locale: neutral",
        "*",
    ]
    for table in tables:
        lines += [
            f"Definition for table {table.schema}.{table.name}",
            "Record length: 0",
            "Syskey: 0",
            f"Columns: {len(table.columns)}",
        ]
        for col in table.columns:
            kind, msdt, lsdt, sub = _gg_type(col)
            fields = [
                kind,
                col.length or 50,
                0,
                col.scale,
                0,
                1,
                0,
                col.length or 50,
                col.length or 50,
                0,
                msdt,
                lsdt,
                0,
                0,
                1,
                0,
                1 if col.primary_key_position else 0,
                sub,
            ]
            lines.append(f"{col.name:<16} " + " ".join(str(f) for f in fields))
        lines.append("End of definition")
    return "\n".join(lines) + "\n"


def _payload(col, value: str | None) -> bytes:
    """Column entry payload: null indicator, then the value in its GoldenGate encoding."""
    if value is None:
        return b"\xff\xff"
    kind, _msdt, lsdt, _sub = _gg_type(col)
    if kind == 134:
        unscaled = int(Decimal(value).scaleb(col.scale))
        return b"\x00\x00" + struct.pack(">q", unscaled)
    if kind == 143:
        return b"\x00\x00" + struct.pack(">d", float(value))
    if kind == 192:
        if lsdt <= 2:
            return b"\x00\x00" + value.encode("ascii")
        date, _, rest = value.partition(" ")
        clock, _, frac = rest.partition(".")
        return b"\x00\x00" + f"{date}:{clock}.{(frac or '0').ljust(9, '0')}".encode("ascii")
    body = value.encode("utf-8")
    return b"\x00\x00" + struct.pack(">H", len(body)) + body


class TrailWriter:
    """Writes GoldenGate trail records into files of one trail (one prefix)."""

    def __init__(
        self,
        folder: Path,
        prefix: str,
        order: str,
        metadata: str,
        records_per_file: int,
        tables,
        segment_bytes: int = 0,
        first_seqno: int = 0,
    ):
        self.folder, self.prefix, self.order = folder, prefix, order
        self.metadata, self.records_per_file, self.tables = metadata, records_per_file, tables
        self.segment_bytes = segment_bytes
        self.first_seqno = first_seqno
        self.seqno = first_seqno - 1
        self.buffer = bytearray()
        self.records_in_file = 0
        self.audit_pos = 1000
        self.tdr_index: dict[tuple[str, int], int] = {}
        self.files: list[Path] = []

    def _pack(self, fmt: str, *values) -> bytes:
        return struct.pack(self.order + fmt, *values)

    def _token(self, tid: int, payload: bytes, info: int = 0) -> bytes:
        if info == 0x40:
            return bytes([tid, info]) + self._pack("I", len(payload)) + payload
        return bytes([tid, info]) + self._pack("H", len(payload)) + payload

    def _record(self, tid: int, info: int, body: bytes) -> bytes:
        total = len(body) + 8
        return (
            bytes([tid, info])
            + self._pack("H", total)
            + body
            + bytes([0x5A, info])
            + self._pack("H", total)
        )

    def _open(self) -> None:
        self.flush()
        self.seqno += 1
        trail_info = (
            self._token(0x30, b"GG\r\nTL\n\r")
            + self._token(0x31, self._pack("H", 3 if self.metadata == "sourcedefs" else 5))
            + self._token(0x38, self._pack("I", self.seqno))
        )
        self.buffer = bytearray(self._record(0x46, 0, self._token(0x30, trail_info)))
        self.records_in_file = 0
        self.tdr_index = {}

    def flush(self) -> None:
        """Write the current trail file to disk."""
        if self.seqno >= self.first_seqno:
            path = self.folder / f"{self.prefix}{self.seqno:06d}"
            path.write_bytes(bytes(self.buffer))
            if path not in self.files:
                self.files.append(path)

    def _ghdr(
        self,
        io_type: int,
        before_after: str,
        rec_length: int,
        when: dt.datetime,
        trans_ind: int,
        table_ref: bytes,
        orig_node: int = 0xFF,
        audit_rba: bytes | None = None,
        same_audit_pos: bool = False,
        continued: bool = False,
        rec_count: int = 1,
    ) -> bytes:
        julian = int((when - _EPOCH).total_seconds() * 1_000_000) + JULIAN_UNIX_OFFSET_US
        if not same_audit_pos:  # a FieldComp A record shares its B record's AuditPos
            self.audit_pos += 16
        return (
            b"E\x04\x00"
            + before_after.encode("ascii")
            + self._pack("H", rec_length)
            + bytes([io_type, orig_node])
            + self._pack("q", julian)
            + self._pack("Q", self.audit_pos)
            + (audit_rba if audit_rba is not None else self._pack("I", 42))
            + bytes([trans_ind])
            + b"R\x00\x00"
            + bytes([1 if continued else 0, rec_count])
            + table_ref
        )

    def _table_ref(self, table, when: dt.datetime, trans_ind: int) -> bytes:
        name = f"{table.schema}.{table.name}"
        if self.metadata == "sourcedefs":
            return name.encode("ascii") + b"\x00"
        # a new version of the table (source DDL) gets a TDR of its own, at the next index
        if (name, table.version) not in self.tdr_index:
            self.tdr_index[(name, table.version)] = len(self.tdr_index) + 1
            self._append(self._tdr(table, self.tdr_index[(name, table.version)], when, trans_ind))
        return self._pack("H", self.tdr_index[(name, table.version)])  # a header field: trail order

    def _tdr(self, table, index: int, when: dt.datetime, trans_ind: int) -> bytes:
        entries = b""
        for col in table.columns:
            kind, msdt, lsdt, sub = _gg_type(col)
            tail = bytearray(60)
            struct.pack_into(self.order + "H", tail, 0, kind)
            struct.pack_into(self.order + "I", tail, 6, col.length or 50)
            struct.pack_into(self.order + "H", tail, 32, sub)
            struct.pack_into(self.order + "H", tail, 34, msdt)
            struct.pack_into(self.order + "H", tail, 36, lsdt)
            struct.pack_into(self.order + "H", tail, 38, col.scale)
            struct.pack_into(self.order + "H", tail, 42, 0x23 if col.primary_key_position else 0x22)
            name = col.name.encode("ascii")
            body = self._pack("H", 0) + self._pack("H", len(name)) + name + bytes(tail)
            entries += self._pack("H", len(body)) + body
        keys = sum(1 for c in table.columns if c.primary_key_position)
        inner = (
            self._token(0x01, self._pack("H", 1))
            + self._token(0x02, self._token(0x01, self._token(0x01, self._pack("H", keys))))
            + self._token(0x03, self._pack("H", len(table.columns)) + entries, info=0x40)
        )
        data = self._token(0x30, inner, info=0x40)
        ghdr = self._ghdr(
            170,
            "A",
            len(data),
            when,
            trans_ind,
            f"{table.schema}.{table.name}".encode() + b"\x00",
            orig_node=2,
            audit_rba=self._pack("HH", 1, index),
        )
        return self._record(0x47, 1, self._token(0x48, ghdr) + self._token(0x44, data))

    def _append(self, record: bytes) -> None:
        self.buffer += record

    def write(
        self,
        table,
        io_type: int,
        before_after: str,
        data: bytes,
        when: dt.datetime,
        trans_ind: int,
        tokens: Mapping[str, str],
    ) -> None:
        """Append one change record, rolling over to the next trail file when this one is full.

        A FieldComp ``A`` record stays in the file of its ``B`` record and shares its AuditPos.
        With ``segment_bytes``, a longer 'D' area is written as segments of that many bytes
        (Continued = Y on all but the last, RecCount 1, 2, …, one AuditPos).
        """
        pair_after = io_type == 15 and before_after == "A"
        if self.seqno < self.first_seqno or (
            self.records_in_file >= self.records_per_file and not pair_after
        ):
            self._open()
        table_ref = self._table_ref(table, when, trans_ind)
        token_area = b"".join(self._token(ord(k), v.encode("ascii")) for k, v in tokens.items())
        size = self.segment_bytes if self.segment_bytes and io_type != 100 else len(data) or 1
        chunks = [data[i : i + size] for i in range(0, len(data), size)] or [data]
        for number, chunk in enumerate(chunks, start=1):
            ghdr = self._ghdr(
                io_type,
                before_after,
                len(chunk),
                when,
                trans_ind,
                table_ref,
                same_audit_pos=pair_after or number > 1,
                continued=number < len(chunks),
                rec_count=number,
            )
            data_token = self._token(0x44, chunk) if io_type != 100 else b""  # truncate: no 'D'
            tokens_token = self._token(0x54, token_area) if number == 1 else b""
            self._append(self._record(0x47, 1, self._token(0x48, ghdr) + data_token + tokens_token))
        self.records_in_file += 1


def _entries(table, row: Mapping[str, str | None], names, order: str) -> bytes:
    """Column entries ``[u16 index][u16 length][payload]``; index and length in trail order."""
    out = b""
    for index, col in enumerate(table.columns):
        if col.name in names:
            payload = _payload(col, row[col.name])
            out += struct.pack(order + "HH", index, len(payload)) + payload
    return out


def write_trails(sim, tables, folder: Path, options: Mapping[str, Any] | None = None) -> int:
    """Write the simulation as GoldenGate trails under ``folder``; return the file count.

    ``options`` are the feed's decoder options: with ``definitions`` the trail is 11.x style
    (sourcedefs file ``dirdef/sim.def``, table names in the header, FieldComp ``B``/``A``
    pairs), without it 12.2 style (TDR records, unified updates). ``byte_order: little`` writes
    little-endian framing (anything else: big-endian). ``records_per_file`` (default 40) sets
    the roll-over; ``prefix`` (default ``aa``) the file names; ``first_seqno`` (default 0) the
    sequence number of the first file (its name and its header's seqno, which positions come
    from: a later part of a trail starts after the earlier one). ``compressed_updates: true``
    writes an UPDATE's before image with its key columns only, as Oracle does without full
    supplemental logging (the after image always carries the key and the changed columns).
    ``unified_updates`` (default: true for TDR style) writes updates as unified records
    (IOType 134/135) also with a sourcedefs file: a 12.2-style trail without TDRs.
    ``segment_bytes: n`` writes every 'D' area longer than n bytes as segmented records (the
    LOB case: Continued = Y until the last segment).
    """
    opts = dict(options or {})
    order = "<" if opts.get("byte_order") == "little" else ">"
    metadata = "sourcedefs" if opts.get("definitions") else "tdr"
    unified = bool(opts.get("unified_updates", metadata == "tdr"))
    folder.mkdir(parents=True, exist_ok=True)
    if metadata == "sourcedefs":
        (folder / "dirdef").mkdir(exist_ok=True)
        (folder / "dirdef" / "sim.def").write_text(sourcedefs_text(tables), encoding="utf-8")
    writer = TrailWriter(
        folder,
        opts.get("prefix", "aa"),
        order,
        metadata,
        int(opts.get("records_per_file", 40)),
        tables,
        int(opts.get("segment_bytes", 0)),
        int(opts.get("first_seqno", 0)),
    )
    unpublished = {id(c) for c in sim.open_transaction[-1:]}
    groups: list[list] = []
    loads = [c for c in sim.changes if c.operation == "LOAD"]
    if loads:
        groups.append(loads)
    by_txn: dict[str, list] = {}
    for change in sim.changes:
        if change.operation != "LOAD" and id(change) not in unpublished:
            by_txn.setdefault(change.transaction_id, []).append(change)
    groups += list(by_txn.values())
    open_ids = {c.transaction_id for c in sim.open_transaction}
    row_id = 0
    for number, changes in enumerate(groups, start=1):
        records = []
        for change in changes:
            table = change.table
            keys = [c.name for c in table.key_columns]
            if change.operation == "TRUNCATE":
                records.append((table, 100, "A", b"", change))
            elif change.operation in ("LOAD", "INSERT"):
                records.append(
                    (
                        table,
                        5,
                        "A",
                        _entries(table, change.after, [c.name for c in table.columns], order),
                        change,
                    )
                )
            elif change.operation == "DELETE":
                records.append((table, 3, "B", _entries(table, change.before, keys, order), change))
            else:
                present = keys + [n for n in change.changed if n not in keys]
                after = _entries(table, change.after, present, order)
                before_names = (
                    keys if opts.get("compressed_updates") else [c.name for c in table.columns]
                )
                before = _entries(table, change.before, before_names, order)
                if unified:
                    records.append(
                        (
                            table,
                            134,
                            "A",
                            struct.pack(order + "I", len(before)) + before + after,
                            change,
                        )
                    )
                else:
                    records.append((table, 15, "B", before, change))
                    records.append((table, 15, "A", after, change))
        is_open = (
            bool(changes)
            and changes[0].transaction_id in open_ids
            and changes[0].operation != "LOAD"
        )
        for i, (table, io_type, before_after, data, change) in enumerate(records):
            last = i == len(records) - 1 and not is_open
            trans_ind = (
                3 if len(records) == 1 and not is_open else (0 if i == 0 else (2 if last else 1))
            )
            tokens = {"R": f"AAAS{row_id:014d}"}
            row_id += 1
            if i == 0:
                tokens["L"] = str(1_000_000 + number)
                tokens["6"] = f"{number}.0.{number * 7}"
            when = change.committed_at
            writer.write(table, io_type, before_after, data, when, trans_ind, tokens)
    writer.flush()
    return len(writer.files)
