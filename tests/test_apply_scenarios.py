"""Scenario table of DESIGN.md §6: each apply case, written by hand, through every feed format
that can express it, with a hand-written expected current state and history.

Every scenario is a small script of transactions on the CUSTOMERS table of the format's source
database, written to files by the format's simulator writer (the Linkexpress full-load case by
``lx_record``). All scenario feeds share one project (with the other two-round tests,
``tests/two_rounds.py``); files land in two rounds (the out-of-order cases land their later
files first) and each round is one ``cdc run``.

Cases a format cannot express, and why:
- a column added at the source: Linkexpress records are laid out by the catalog, so a new
  column is a catalog change made before its files land.
- a column dropped at the source: the same for Linkexpress; HiRDB statements name the columns
  they set and nothing else, so no statement says that a column is gone (ADR 0024).
- TRUNCATE: Qlik change tables and Kafka messages of this simulator carry none.
- key change: a Linkexpress UPDATE record holds the after image only.
- full load replacing a table mid-stream: Linkexpress full extracts, and a Qlik change-table
  reload with option ``load_position: dfm_start`` (at the default, position zero, a Qlik full
  load sits before every change; GoldenGate and HiRDB files hold no loads).
- duplicates at one position: only the Qlik formats carry their position in the record;
  elsewhere a position is the file name and offset.
- open transaction: Qlik change tables have no transaction boundaries.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import itertools
import json
import random
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from simulator.database import (
    JP_TABLES,
    SimChange,
    SimColumn,
    Simulation,
    _new_row,
    primary_key_text,
    tables_for,
    with_added_column,
    with_altered_column,
    with_dropped_column,
)
from simulator.feeds import write_feed
from simulator.linkexpress_extract import lx_record
from simulator.qlik_change_tables import _write_ct_file
from tests.spark_project import cdc, read_mart
from tests.two_rounds import Contribution

pytestmark = pytest.mark.spark

FORMATS = {
    "ct": "qlik_change_tables",
    "kafka": "qlik_kafka",
    "gg": "goldengate_trail",
    "hirdb": "hirdb_update_sql",
    "lx": "linkexpress_extract",
}
OPTIONS = {
    "ct": {"mask_bit_order": "lsb_last_hex"},
    "kafka": {"mask_bit_order": "lsb_last_hex", "schema_dir": "schemas"},
    # compressed updates: a before image carries the key columns only (Oracle's default)
    "gg": {"byte_order": "auto", "records_per_file": 3, "compressed_updates": True},
    "hirdb": {"encoding": "auto", "source_time_zone": "UTC", "where_image": "before"},
    "lx": {"unit": "group", "logtype": "auto", "byteswap": "auto", "outcode": "sjis", "chunks": 3},
}
# simulator options, not decoder options (the decoder reads a Linkexpress file's unit from it)
WRITER_ONLY = {"records_per_file", "chunks", "compressed_updates", "unit"}


class Script:
    """Transactions on the CUSTOMERS table of one format's source database."""

    def __init__(self, short: str) -> None:
        self.table = next(t for t in tables_for(FORMATS[short]) if t.name == "CUSTOMERS")
        #: every version of the table the script wrote to, when a DDL made more than one
        self.versions = [self.table]
        self.changes: list[SimChange] = []
        self.open: list[SimChange] = []
        self.clock = dt.datetime(2024, 5, 1, 9, 0, 0)
        self.number = 0

    def row(self, key: int, variant: int = 0, **overrides) -> dict:
        """A full row of key ``key``: values drawn from a seed, then ``overrides``."""
        row = _new_row(random.Random(key * 101 + variant), self.table, (str(key),))
        row.update(overrides)
        return row

    @property
    def key_name(self) -> str:
        return self.table.key_columns[0].name

    def pk(self, key: int) -> str:
        return primary_key_text(self.table, {self.key_name: str(key)})

    def transaction(self, *ops: tuple, is_open: bool = False) -> None:
        """Append one transaction of ``(operation, before, after)`` changes."""
        self.clock += dt.timedelta(seconds=10)
        txn_id = f"{len({c.transaction_id for c in self.changes}) + 1:032X}"
        batch = []
        for operation, before, after in ops:
            self.number += 1
            seq = self.clock.strftime("%Y%m%d%H%M%S") + "00" + f"{self.number:019d}"
            columns = [c.name for c in self.table.columns]
            if operation == "UPDATE":
                changed = [c for c in columns if before.get(c) != after.get(c)]
            else:
                changed = {"INSERT": columns, "DELETE": [self.key_name]}.get(operation, [])
            batch.append(
                SimChange(self.table, operation, before, after, changed, seq, txn_id, self.clock)
            )
        for i, change in enumerate(batch, start=1):
            change.counter, change.is_last = i, i == len(batch)
        self.changes += batch
        if is_open:
            self.open = batch

    def add_column(self, column: SimColumn) -> None:
        """``ALTER TABLE ... ADD column`` at the source: later changes write the new version."""
        self.table = with_added_column(self.table, column)
        self.versions.append(self.table)

    def drop_column(self, name: str) -> None:
        """``ALTER TABLE ... DROP COLUMN name`` at the source: later changes write the new
        version, without the column."""
        self.table = with_dropped_column(self.table, name)
        self.versions.append(self.table)

    def alter_column(self, name: str, column: SimColumn) -> None:
        """A rename or a type change of column ``name`` at the source (``column`` in its place)."""
        self.table = with_altered_column(self.table, name, column)
        self.versions.append(self.table)

    def tables(self, short: str) -> tuple | None:
        """The tables the writer writes: the format's own, and every later version of CUSTOMERS
        (None when there is none: the writer's default)."""
        if len(self.versions) == 1:
            return None
        return (*tables_for(FORMATS[short]), *self.versions[1:])

    def simulation(self) -> Simulation:
        return Simulation(self.changes, {}, self.open)


@dataclass
class Scenario:
    """One case: a script per format, the expected state and history, the landing rounds."""

    name: str
    formats: tuple[str, ...]
    script: object  # (Script) -> (expected state, expected history)
    late_first: bool = False  # land the later half of the files in round 1


def overlay(s: Script):
    nullable = next(c.name for c in s.table.columns if c.nullable and not c.primary_key_position)
    r1 = s.row(1, 0)
    r1[nullable] = r1[nullable] or "set"
    r2 = s.row(1, 1, **{nullable: None})
    s.transaction(("INSERT", None, r1))
    s.transaction(("UPDATE", r1, r2))
    return {s.pk(1): r2}, {s.pk(1): [("INSERT", False, r1), ("UPDATE", False, r2)]}


def key_change(s: Script):
    r1 = s.row(1, 0)
    moved = s.row(1, 1, **{s.key_name: "2"})
    s.transaction(("INSERT", None, r1))
    s.transaction(("UPDATE", r1, moved))
    return {s.pk(2): moved}, {
        s.pk(1): [("INSERT", False, r1), ("UPDATE", True, r1)],
        s.pk(2): [("UPDATE", False, moved)],
    }


def key_move(s: Script):
    """Key changes that carry the row: A→B in one transaction, B→C→D in the next (a chain
    inside one transaction). The after images carry only the key (the one changed column), and
    a compressed before image only the old key: every other column comes from the old row."""
    r1 = s.row(1, 0)
    moved = [dict(r1, **{s.key_name: str(k)}) for k in (2, 3, 4)]
    s.transaction(("INSERT", None, r1))
    s.transaction(("UPDATE", r1, moved[0]))
    s.transaction(("UPDATE", moved[0], moved[1]), ("UPDATE", moved[1], moved[2]))
    return {s.pk(4): moved[2]}, {
        s.pk(1): [("INSERT", False, r1), ("UPDATE", True, r1)],
        s.pk(2): [("UPDATE", False, moved[0]), ("UPDATE", True, moved[0])],
        s.pk(3): [("UPDATE", False, moved[1]), ("UPDATE", True, moved[1])],
        s.pk(4): [("UPDATE", False, moved[2])],
    }


def key_chain(s: Script):
    """A chain of eleven key changes: A→B in one transaction, then B→C→…→L in the next. With
    compressed images every column of L's row comes from A's, through the whole chain (a
    recursive CTE in int_key_change_rows follows a chain as far as it goes; the SQL unrolled
    eight steps before, so this chain was cut)."""
    r1 = s.row(1, 0)
    moved = [dict(r1, **{s.key_name: str(k)}) for k in range(2, 13)]
    s.transaction(("INSERT", None, r1))
    s.transaction(("UPDATE", r1, moved[0]))
    s.transaction(*(("UPDATE", old, new) for old, new in itertools.pairwise(moved)))
    history = {s.pk(1): [("INSERT", False, r1), ("UPDATE", True, r1)]}
    for k, row in enumerate(moved[:-1], start=2):
        history[s.pk(k)] = [("UPDATE", False, row), ("UPDATE", True, row)]
    history[s.pk(12)] = [("UPDATE", False, moved[-1])]
    return {s.pk(12): moved[-1]}, history


def delete_reinsert(s: Script):
    r1, r1b = s.row(1, 0), s.row(1, 5)
    s.transaction(("INSERT", None, r1))
    s.transaction(("DELETE", r1, None))
    s.transaction(("INSERT", None, r1b))
    return {s.pk(1): r1b}, {
        s.pk(1): [("INSERT", False, r1), ("DELETE", True, r1), ("INSERT", False, r1b)]
    }


def _around_ddl(s: Script, ddl, as_it_reads, changed=None, inserted=None):
    """Keys 1 and 2 inserted, then ``ddl(s)`` at the source, then key 1 updated (its before
    image ``as_it_reads(r1)``: the row as it reads after the DDL) and key 3 inserted, their
    rows drawn for the new version with ``changed`` and ``inserted`` over them. Key 2 is not
    touched after the DDL, so it keeps the row it was inserted with: nothing in a feed says
    otherwise. Returns the expected current state and history."""
    r1, r2 = s.row(1), s.row(2)
    s.transaction(("INSERT", None, r1))  # one transaction per change-table file
    s.transaction(("INSERT", None, r2))
    ddl(s)
    r1b, r3 = {**s.row(1, 1), **(changed or {})}, {**s.row(3), **(inserted or {})}
    s.transaction(("UPDATE", as_it_reads(r1), r1b))
    s.transaction(("INSERT", None, r3))
    return {s.pk(1): r1b, s.pk(2): r2, s.pk(3): r3}, {
        s.pk(1): [("INSERT", False, r1), ("UPDATE", False, r1b)],
        s.pk(2): [("INSERT", False, r2)],
        s.pk(3): [("INSERT", False, r3)],
    }


def add_column(s: Script):
    """Source DDL mid-stream (issue 46 item 3): a column added to the table (the catalog seeds
    do not have it) between the inserts of keys 1 and 2 and the update of key 1 and insert of
    key 3, which set it. Each product says so its own way: a Kafka MD message of table
    version 2, later change-table files whose .dfm lists the column, a new GoldenGate TDR,
    HiRDB statements that name it. The new column's values are kept in current state and
    history; key 2, untouched since, has no value for it (NULL in a typed view)."""
    tier = SimColumn(
        "LOYALTY_TIER",
        "STRING",
        "string",
        nullable=True,
        length=10,
        hirdb_type="VARCHAR",
        lx_type="VARCHAR",
        pool=("gold", "silver", "bronze"),
    )
    return _around_ddl(
        s,
        lambda s: s.add_column(tier),
        lambda r1: {**r1, "LOYALTY_TIER": None},
        {"LOYALTY_TIER": "gold"},
        {"LOYALTY_TIER": "silver"},
    )


def drop_column(s: Script):
    """A column dropped at the source mid-stream (issue 46 item 3, ADR 0024), the table's last
    non-key column. The GoldenGate UPDATE is a compressed image (the key and the changed
    columns), the Qlik images are full; the new TDR, MD message and .dfm no longer list the
    column. Key 1's row after the update has no value for it (it is not carried on from the
    INSERT as unchanged), nor has key 3's; key 2 keeps it."""
    dropped = next(c.name for c in s.table.columns[::-1] if not c.primary_key_position)
    return _around_ddl(
        s,
        lambda s: s.drop_column(dropped),
        lambda r1: {k: v for k, v in r1.items() if k != dropped},
    )


def rename_column(s: Script):
    """A column renamed at the source mid-stream (ADR 0024): CITY becomes TOWN. A rename is
    not recognised as such: TOWN is a new column (columns_not_in_catalog warns of it) and CITY
    one that is gone, so key 1's row after the update and key 3's have TOWN only, and key 2,
    untouched since, CITY only."""
    city = next(c for c in s.table.columns if c.name == "CITY")
    town = dataclasses.replace(city, name="TOWN", pool=("Lyon", "Osaka"))
    return _around_ddl(
        s,
        lambda s: s.alter_column("CITY", town),
        lambda r1: {("TOWN" if k == "CITY" else k): v for k, v in r1.items()},
        {"TOWN": "Lyon"},
        {"TOWN": "Osaka"},
    )


def retype_column(s: Script):
    """A column's type changed at the source mid-stream (ADR 0024): CREDIT_LIMIT, a
    NUMERIC(12,2), becomes a string column; key 1 is updated to a value that is no number and
    key 3 inserted with one. Values are kept as the canonical text of the type each change was
    written with: key 2 keeps its decimal text, keys 1 and 3 hold their strings (a typed view
    still casts by the catalog's type: NULL for these)."""
    text = SimColumn("CREDIT_LIMIT", "STRING", "string", nullable=True, length=20, pool=("none",))
    return _around_ddl(
        s,
        lambda s: s.alter_column("CREDIT_LIMIT", text),
        dict,  # the decimal's text, as the row now reads
        {"CREDIT_LIMIT": "unlimited"},
        {"CREDIT_LIMIT": "on request"},
    )


def truncate(s: Script):
    r1, r2, r3 = s.row(1), s.row(2), s.row(3)
    s.transaction(("INSERT", None, r1), ("INSERT", None, r2))
    s.transaction(("TRUNCATE", None, None))
    s.transaction(("INSERT", None, r3))
    return {s.pk(3): r3}, {
        s.pk(1): [("INSERT", False, r1), ("TRUNCATE", True, r1)],
        s.pk(2): [("INSERT", False, r2), ("TRUNCATE", True, r2)],
        s.pk(3): [("INSERT", False, r3)],
    }


def out_of_order(s: Script):
    r1, r1b, r1c, r2 = s.row(1), s.row(1, 1), s.row(1, 2), s.row(2)
    s.transaction(("INSERT", None, r1))
    s.transaction(("UPDATE", r1, r1b))
    s.transaction(("INSERT", None, r2))
    s.transaction(("UPDATE", r1b, r1c))
    s.transaction(("DELETE", r2, None))
    s.transaction(("UPDATE", r1c, r1))
    return {s.pk(1): r1}, {
        s.pk(1): [
            ("INSERT", False, r1),
            ("UPDATE", False, r1b),
            ("UPDATE", False, r1c),
            ("UPDATE", False, r1),
        ],
        s.pk(2): [("INSERT", False, r2), ("DELETE", True, r2)],
    }


def open_transaction(s: Script):
    r1, r1b, r2 = s.row(1), s.row(1, 1), s.row(2)
    s.transaction(("INSERT", None, r1))
    s.transaction(("UPDATE", r1, r1b), ("INSERT", None, r2), is_open=True)
    return {s.pk(1): r1}, {s.pk(1): [("INSERT", False, r1)]}


def duplicates(s: Script):
    r1, r2 = s.row(1), s.row(2)
    s.transaction(("INSERT", None, r1))
    s.transaction(("INSERT", None, r2))
    s.transaction(("DELETE", r2, None))
    return {s.pk(1): r1}, {
        s.pk(1): [("INSERT", False, r1)],
        s.pk(2): [("INSERT", False, r2), ("DELETE", True, r2)],
    }


SCENARIOS = [
    Scenario("overlay", ("ct", "kafka", "gg", "hirdb", "lx"), overlay),
    Scenario("keychange", ("ct", "kafka", "gg", "hirdb"), key_change),
    Scenario("keymove", ("ct", "kafka", "gg", "hirdb"), key_move),
    Scenario("keymovelate", ("ct", "gg"), key_move, late_first=True),
    Scenario("keychain", ("ct", "gg"), key_chain),
    Scenario("reinsert", ("ct", "kafka", "gg", "hirdb", "lx"), delete_reinsert),
    Scenario("truncate", ("gg", "hirdb", "lx"), truncate),
    Scenario("late", ("ct", "kafka", "gg", "hirdb", "lx"), out_of_order, late_first=True),
    Scenario("open", ("kafka", "gg", "hirdb", "lx"), open_transaction),
    Scenario("dupexact", ("ct", "kafka"), duplicates),
    Scenario("dupconflict", ("ct", "kafka"), duplicates),
    # the conflicting copy lands in round 2, after round 1 logged the first delivery
    Scenario("dupconflictlate", ("ct", "kafka"), duplicates),
    Scenario("addcolumn", ("ct", "kafka", "gg", "hirdb"), add_column),
    Scenario("dropcolumn", ("ct", "kafka", "gg"), drop_column),
    Scenario("renamecolumn", ("ct", "kafka", "gg"), rename_column),
    Scenario("retypecolumn", ("ct", "kafka", "gg"), retype_column),
]


def _write_full_load(folder: Path):
    """Linkexpress: a full extract of keys 1 and 2, an INSERT of key 3, then a full extract of
    key 1 only (changed): the second full load replaces the table as of its position."""
    s = Script("lx")
    r1, r2, r3, r1b = s.row(1), s.row(2), s.row(3), s.row(1, 1)
    opts = {"little": True, "order": ">", "outcode": "sjis"}
    ext_id = 1 + [t.name for t in JP_TABLES].index("CUSTOMERS")
    full = folder / f"{s.table.schema}.{s.table.name}"
    full.mkdir(parents=True)

    def records(rows, op, ext=0):
        return b"".join(
            lx_record("D", s.table.columns, r, op, extraction_id=ext, **opts) for r in rows
        )

    (full / "LX000001_F.dat").write_bytes(records([r1, r2], 0))
    diff = records([r3], 1, ext_id) + lx_record("D", s.table.columns, None, 0x8000, **opts)
    (folder / "LX000002_D.dat").write_bytes(diff)
    (full / "LX000003_F.dat").write_bytes(records([r1b], 0))
    return {s.pk(1): r1b}, {
        s.pk(1): [("LOAD", False, r1), ("LOAD", False, r1b)],  # reloaded, changed: no gap
        s.pk(2): [("LOAD", False, r2), ("LOAD", True, r2)],
        s.pk(3): [("INSERT", False, r3), ("LOAD", True, r3)],
    }


def _write_reload(folder: Path):
    """Qlik change tables, option ``load_position: dfm_start``: INSERTs of keys 1 and 2, then a
    reload (``LOAD00000002``, its ``.dfm`` started writing between the two transactions) of the
    table as it stood then, key 1 changed and key 3 new, key 2 gone, then an UPDATE of key 1.
    The reload supersedes the changes before it, and the UPDATE applies on top. At the default
    position (zeros) the reload would sort first: key 2 would stay and key 1's INSERT would win."""
    s = Script("ct")
    r1, r2, r1_reloaded, r3, r1_after = s.row(1), s.row(2), s.row(1, 1), s.row(3), s.row(1, 2)
    s.transaction(("INSERT", None, r1))  # one transaction per change-table file
    s.transaction(("INSERT", None, r2))
    reloaded_at = s.clock + dt.timedelta(seconds=5, milliseconds=250)
    s.transaction(("UPDATE", r1_reloaded, r1_after))
    write_feed(s.simulation(), FORMATS["ct"], folder, OPTIONS["ct"])
    load_dir = folder / s.table.topic
    for path in load_dir.glob("LOAD00000001.*"):  # the initial load, empty here
        path.unlink()
    rows = [([r[c.name] for c in s.table.columns], None) for r in (r1_reloaded, r3)]
    _write_ct_file(s.table, load_dir, "LOAD00000002", rows, "csv_dfm", with_headers=False)
    dfm_path = load_dir / "LOAD00000002.dfm"
    dfm = json.loads(dfm_path.read_text(encoding="utf-8"))
    dfm["fileInfo"]["startWriteTimestamp"] = reloaded_at.isoformat(timespec="milliseconds")
    dfm_path.write_text(json.dumps(dfm), encoding="utf-8")
    return {s.pk(1): r1_after, s.pk(3): r3}, {
        s.pk(1): [("INSERT", False, r1), ("LOAD", False, r1_reloaded), ("UPDATE", False, r1_after)],
        s.pk(2): [("INSERT", False, r2), ("LOAD", True, r2)],
        s.pk(3): [("LOAD", False, r3)],
    }


def _earlier_half(folder: Path) -> list[Path]:
    """The change files of the first half of the feed's file names (a .csv with its .dfm)."""
    files = [p for p in folder.rglob("*") if p.is_file() and "schemas" not in p.parts]
    stem = {p: p.name[:-4] if p.suffix in (".csv", ".dfm") else p.name for p in files}
    names = sorted(set(stem.values()))
    early = set(names[: len(names) // 2])
    return [p for p in files if stem[p] in early]


def _land(src: Path, landing: Path, files: list[Path]) -> None:
    for path in files:
        target = landing / path.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)


def prepare(src: Path) -> Contribution:
    """Write every scenario's feed under ``src`` (the two-round project, ``tests/two_rounds``).

    Round 1 lands each feed's files except, for the late cases, the earlier half of its
    positions; round 2 lands those. ``expected`` maps feed to (current state, history)."""
    feeds, expected, later = {}, {}, []
    for scenario in SCENARIOS:
        for short in scenario.formats:
            feed = f"{scenario.name}_{short}"
            script = Script(short)
            expected[feed] = scenario.script(script)
            folder = src / feed
            write_feed(
                script.simulation(), FORMATS[short], folder, OPTIONS[short], script.tables(short)
            )
            feeds[feed] = short
            if scenario.late_first:
                later += _earlier_half(folder)  # the earlier positions land in round 2
            if scenario.name.startswith("dup"):
                name = script.changes[0].after["NAME"]
                copies = _duplicate(folder, short, scenario.name != "dupexact", name)
                if scenario.name == "dupconflictlate":
                    later += copies
    feeds["fullload_lx"] = "lx"
    expected["fullload_lx"] = _write_full_load(src / "fullload_lx")
    feeds["reload_ct"] = "ct"
    expected["reload_ct"] = _write_reload(src / "reload_ct")
    specs = {
        feed: (FORMATS[short], {k: v for k, v in OPTIONS[short].items() if k not in WRITER_ONLY})
        for feed, short in feeds.items()
    }
    specs["reload_ct"][1]["load_position"] = "dfm_start"
    folders = [src / feed for feed in feeds]

    def land_round1(src: Path, landing: Path) -> None:
        first = [p for f in folders for p in sorted(f.rglob("*")) if p.is_file()]
        _land(src, landing, [p for p in first if p not in later])

    return Contribution(specs, land_round1, expected)


@pytest.fixture(scope="module")
def scenario_run(two_rounds):
    run = two_rounds
    expected = run.contributions["scenarios"].expected
    return expected, run.lake, run.history, run.round1, run.round2


def _duplicate(folder: Path, short: str, conflict: bool, name: str) -> list[Path]:
    """Land every change file a second time under a later name; with ``conflict``, change the
    NAME ``name`` in the copy (same change sequence, other content). Returns the copies."""
    copies = []
    if short == "ct":
        ct_dir = next(p for p in folder.iterdir() if p.name.endswith("CUSTOMERS__ct"))
        for path in sorted(ct_dir.glob("*.csv")):  # the first file holds the changed row
            copy = path.with_name("2099" + path.name[4:])
            text = path.read_text(encoding="utf-8")
            if conflict and f'"{name}"' in text:
                text = text.replace(f'"{name}"', '"conflicting name"', 1)
            copy.write_text(text, encoding="utf-8")
            shutil.copy(path.with_suffix(".dfm"), copy.with_suffix(".dfm"))
            copies += [copy, copy.with_suffix(".dfm")]
    else:
        for path in sorted(folder.glob("*SALES.CUSTOMERS*-0-*.jsonl")):
            lines = path.read_bytes().splitlines(keepends=True)
            if conflict and path.name.endswith("-0-00000000000000000000.jsonl"):
                data = [i for i, line in enumerate(lines) if b'"type": "DT"' in line]
                message = json.loads(lines[data[0]])
                message["message"]["data"]["NAME"] = "conflicting name"
                lines[data[0]] = json.dumps(message).encode() + b"\n"
            copy = path.with_name(path.name.replace("-0-0", "-0-9"))
            copy.write_bytes(b"".join(lines))
            copies.append(copy)
    return copies


def _state(lake: Path) -> dict:
    state: dict = {}
    for row in read_mart(lake, "current_state"):
        state.setdefault(row["feed"], {})[row["primary_key"]] = row["row"]
    return state


CASES = [(scenario.name, short) for scenario in SCENARIOS for short in scenario.formats] + [
    ("fullload", "lx"),
    ("reload", "ct"),
]


@pytest.mark.parametrize("name,short", CASES, ids=[f"{n}-{s}" for n, s in CASES])
def test_scenario_current_state_and_history(scenario_run, name, short):
    expected, lake, history, _round1, _round2 = scenario_run
    feed = f"{name}_{short}"
    expected_state, expected_history = expected[feed]
    assert _state(lake).get(feed, {}) == expected_state
    versions: dict = {}
    for row in sorted(
        (r for r in history if r["feed"] == feed), key=lambda r: r["valid_from_position"]
    ):
        versions.setdefault(row["primary_key"], []).append(
            (row["opened_by_operation"], row["is_deleted"], row["row"])
        )
    assert versions == expected_history


def test_open_transactions_are_pending_not_applied(scenario_run):
    _expected, lake, _history, _r1, _r2 = scenario_run
    pending = read_mart(lake, "pending_changes")
    for short in ("hirdb", "lx"):  # no COMMIT line / commit record yet: both changes wait
        assert len([r for r in pending if r["feed"] == f"open_{short}"]) == 2, short
    for short in ("kafka", "gg"):  # the last record is unpublished, the first one waits
        assert len([r for r in pending if r["feed"] == f"open_{short}"]) == 1, short


def test_exact_duplicates_are_ignored_and_conflicting_ones_reported(scenario_run):
    """Round 1 lands dupconflict's two deliveries together (one conflict per feed); round 2
    lands dupconflictlate's conflicting copy after round 1 logged the first delivery: each
    round warns about the two feeds of its own conflicts only."""
    _expected, lake, _history, round1, round2 = scenario_run
    log = read_mart(lake, "change_log")
    for dup in ("dupexact", "dupconflict", "dupconflictlate"):
        for short in ("ct", "kafka"):
            assert len([r for r in log if r["feed"] == f"{dup}_{short}"]) == 3, (dup, short)
    for run in (round1, round2):
        conflicts = [
            line for line in run.stdout.splitlines() if "conflicting_duplicate_changes" in line
        ]
        assert any("WARN 2 conflicting_duplicate_changes" in line for line in conflicts), conflicts


def test_a_column_added_at_the_source_is_reported_and_scaffold_declares_it(two_rounds):
    """issue 46 item 3: the addcolumn scenario's new column (not in the seeds) is kept in
    current state and history (test_scenario_current_state_and_history). Both rounds warn,
    one row per feed and column (columns_not_in_catalog: the latest .dfm, MD message and TDR
    list it, and the HiRDB decoder records it from the statements that name it); the
    renamecolumn scenario's new name counts as an added column. `cdc scaffold` then appends
    each to the seeds after the table's last column, typed as a string."""
    new_columns = {f"addcolumn_{short}": "LOYALTY_TIER" for short in ("ct", "kafka", "gg", "hirdb")}
    new_columns |= {f"renamecolumn_{short}": "TOWN" for short in ("ct", "kafka", "gg")}
    feeds = set(new_columns)
    for run in (two_rounds.round1, two_rounds.round2):
        assert f"WARN {len(feeds)} columns_not_in_catalog" in run.stdout, run.stdout[-3000:]
    cdc(two_rounds.project, "scaffold", landing=two_rounds.landing, lake=two_rounds.lake)
    with (two_rounds.project / "seeds" / "cdc_columns.csv").open(encoding="utf-8") as fh:
        rows = [r for r in csv.DictReader(fh) if r["feed"] in feeds]
    added = {r["feed"]: r for r in rows if r["column_name"] == new_columns[r["feed"]]}
    assert set(added) == feeds
    for feed, row in added.items():
        table = [r for r in rows if r["feed"] == feed and r["source_table"] == "CUSTOMERS"]
        last = max(int(r["ordinal"]) for r in table if r is not row)
        assert (int(row["ordinal"]), row["primary_key_position"]) == (last + 1, "0"), feed
        assert row["spark_type"] == "string", feed
