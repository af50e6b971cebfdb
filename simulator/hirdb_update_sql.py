"""HiRDB Datareplicator update-SQL writer of the sample-feed simulator (``hirdb_update_sql``).

:func:`write_sqltxt` writes a :class:`simulator.database.Simulation` run over ``JP_TABLES`` as
``SQLTXT_SV1_DST1.000001`` … files of one stream, one statement a line
(formats/hirdb_update_sql.md, *Line grammar*): the full load as one INSERT transaction, then
every transaction's statements and its ``COMMIT;``; a TRUNCATE is a ``PURGE TABLE``; some
transactions carry an ``HDEEVENT`` line; an UPDATE's SET leaves out a VARCHAR of 256 bytes or
more that it did not change (note ※3). The files are cut inside a transaction, so its COMMIT
is in the next file; the simulation's last transaction has no COMMIT (pending). Written the way
the product would, independently of the decoder.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from simulator.database import transaction_groups

STREAM = "SQLTXT_SV1_DST1"
MASK = "/* ****-**-** **:**:** */"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def hirdb_literal(col, value: str | None, encoding: str, hex_text: bool = False) -> str:
    """Write one canonical value as the literal HiRDB prints for ``col.hirdb_type`` (note ※1).

    ``hex_text`` writes character values in the ``-H`` hex form, encoded with ``encoding``.
    """
    if value is None:
        return "NULL"
    kind = col.hirdb_type
    if kind in ("INTEGER", "SMALLINT", "BIGINT", "DECIMAL"):
        return value
    if kind == "FLOAT":
        return format(float(value), ".15E")
    if kind in ("CHAR", "VARCHAR", "MVARCHAR", "NCHAR", "NVARCHAR"):
        if hex_text:
            return "X'" + value.encode(encoding).hex().upper() + "'"
        prefix = {"MVARCHAR": "M", "NCHAR": "N", "NVARCHAR": "N"}.get(kind, "")
        return prefix + _quote(value)
    return _quote(value)  # DATE, TIME, TIMESTAMP


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def sqltxt_lines(sim, options: Mapping[str, Any] | None = None) -> list[str]:
    """Return the update-SQL lines of a simulation (without newlines), in commit order."""
    opts = dict(options or {})
    encoding = opts.get("encoding", "cp932")
    hex_text = bool(opts.get("hex_text", False))
    open_ids = {c.transaction_id for c in sim.open_transaction}
    lines: list[str] = []
    for number, (txn_id, changes) in enumerate(transaction_groups(sim)):
        for change in changes:
            table = change.table
            stamp = f"/* {change.committed_at.strftime('%Y-%m-%d %H:%M:%S')} */ "
            name = f"{_ident(table.schema)}.{_ident(table.name)}"
            if change.operation == "TRUNCATE":
                lines.append(stamp + f"PURGE TABLE {name};")
                continue
            if change.operation in ("LOAD", "INSERT"):
                cols = [c for c in table.columns]
                values = [hirdb_literal(c, change.after[c.name], encoding, hex_text) for c in cols]
                lines.append(
                    stamp
                    + f"INSERT INTO {name}({','.join(_ident(c.name) for c in cols)}) "
                    + f"VALUES({','.join(values)});"
                )
                continue
            # WHERE names the row by its key after the update (the manual's example), or before
            # it with the feed option where_image: before (then an UPDATE may change the key).
            where_after = opts.get("where_image", "after") == "after"
            image = change.after if change.operation == "UPDATE" and where_after else change.before
            where = " AND ".join(
                f"{_ident(c.name)}=" + hirdb_literal(c, image[c.name], encoding, hex_text)
                if image[c.name] is not None
                else f"{_ident(c.name)} IS NULL"
                for c in table.key_columns
            )
            if change.operation == "DELETE":
                lines.append(stamp + f"DELETE FROM {name} WHERE {where};")
                continue
            sets = ",".join(
                f"{_ident(c.name)}=" + hirdb_literal(c, change.after[c.name], encoding, hex_text)
                for c in table.columns
                if not (
                    c.hirdb_type == "VARCHAR" and c.length >= 256 and c.name not in change.changed
                )
            )
            lines.append(stamp + f"UPDATE {name} SET {sets} WHERE {where};")
        if txn_id in open_ids and txn_id:
            continue  # not committed yet: no COMMIT line
        if number % 5 == 4:
            lines.append(f"{MASK} /* HDEEVENT {number % 256} */")
        lines.append(f"{MASK} COMMIT;")
    return lines


def write_sqltxt(sim, folder: Path, options: Mapping[str, Any] | None = None) -> int:
    """Write the simulation as update-SQL files of one stream; return the file count.

    Options: ``encoding`` (default and ``auto``: ``cp932``), ``hex_text`` (the ``-H`` hex form for character
    columns), ``files`` (default 2; each cut falls inside a transaction), ``where_image``
    (``after`` default: WHERE holds the key after the update; ``before``: before it).
    """
    opts = dict(options or {})
    encoding = opts.get("encoding") if opts.get("encoding", "auto") != "auto" else "cp932"
    lines = sqltxt_lines(sim, {**opts, "encoding": encoding})
    files = max(1, int(opts.get("files", 2)))
    cuts = [0]
    for k in range(1, files):
        cut = len(lines) * k // files
        while cut < len(lines) and lines[cut - 1].endswith("COMMIT;"):
            cut += 1  # cut inside a transaction: its COMMIT lands in the next file
        cuts.append(min(cut, len(lines)))
    cuts.append(len(lines))
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(files):
        chunk = lines[cuts[k] : cuts[k + 1]]
        text = "".join(line + "\r\n" for line in chunk)
        (folder / f"{STREAM}.{k + 1:06d}").write_bytes(text.encode(encoding))
    return files
