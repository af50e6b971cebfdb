"""End to end for the HiRDB and Linkexpress feeds, landed in two rounds (the shared two-round
project of ``tests/two_rounds.py``).

Round 1 lands the first update-SQL file, whose last transaction has no COMMIT yet, and the start
of the second file, cut inside the COMMIT line that closes it; and the first Linkexpress files (a group-unit feed and a
table-unit JNL, little-endian, EUC feed), full extracts first. Round 2 lands the rest: the grown
second SQL file and the later extract files. After round 1 the open transaction is pending;
after round 2 current state equals the simulated database.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from simulator.database import JP_TABLES, simulate
from simulator.feeds import write_feed
from tests.spark_project import read_mart
from tests.two_rounds import Contribution

pytestmark = pytest.mark.spark
#: Feed: (format, decoder options).
FEEDS = {
    "hirdb_rounds": ("hirdb_update_sql", {"encoding": "auto"}),
    "lx_group": ("linkexpress_extract", {}),  # no unit option: read from the records
    "lx_table": ("linkexpress_extract", {"difftype": "jnl"}),
}
WRITER_OPTIONS = {
    "hirdb_rounds": {"files": 2, "encoding": "cp932"},
    "lx_group": {"unit": "group", "logtype": "little", "byteswap": "no", "outcode": "sjis"},
    "lx_table": {
        "unit": "table",
        "difftype": "jnl",
        "logtype": "normal",
        "byteswap": "yes",
        "outcode": "euc",
    },
}


def _state(lake, feed):
    state: dict = {}
    for row in read_mart(lake, "current_state"):
        if row["feed"] == feed:
            state.setdefault((row["source_schema"], row["source_table"]), {})[
                row["primary_key"]
            ] = row["row"]
    return state


def prepare(src: Path) -> Contribution:
    """Write the three feeds of one simulated database under ``src`` (``tests/two_rounds``).

    Round 1 lands the first SQL file whole, the second cut inside its first COMMIT line, and
    the first half of each extract feed's files; round 2 the rest. ``expected`` is the
    simulation."""
    sim = simulate(seed=21, load_rows=10, transactions=36, truncate_every=10, tables=JP_TABLES)
    for feed, (fmt, _options) in FEEDS.items():
        write_feed(sim, fmt, src / feed, WRITER_OPTIONS[feed])

    def land_round1(src: Path, landing: Path) -> None:
        sql_files = sorted((src / "hirdb_rounds").iterdir())
        (landing / "hirdb_rounds").mkdir(parents=True)
        shutil.copy(sql_files[0], landing / "hirdb_rounds" / sql_files[0].name)
        second = sql_files[1].read_bytes()
        cut = second.index(b"COMMIT;") + 3  # inside the line that closes file 1's last transaction
        (landing / "hirdb_rounds" / sql_files[1].name).write_bytes(second[:cut])
        for feed in ("lx_group", "lx_table"):
            paths = sorted((src / feed).rglob("*.dat"), key=lambda p: p.name)
            for path in paths[: len(paths) // 2]:
                target = landing / path.relative_to(src)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(path, target)

    return Contribution(FEEDS, land_round1, sim)


def test_two_landing_rounds_close_the_open_transaction_and_reach_the_simulated_state(two_rounds):
    sim = two_rounds.contributions["japanese"].expected
    lake = two_rounds.lake
    sql_files = sorted((two_rounds.landing / "hirdb_rounds").iterdir())
    second = sql_files[1].read_bytes()
    cut = second.index(b"COMMIT;") + 3
    # After round 1: the first SQL file whole, the second cut inside its first COMMIT line.
    pending = two_rounds.after_round1["pending_changes"]
    first_file_tail = [
        r
        for r in pending
        if r["feed"] == "hirdb_rounds" and r["source_file"].endswith(sql_files[0].name)
    ]
    assert first_file_tail, "the first file ends inside a transaction: its tail is pending"
    manifest = {
        m["source_file"]: m
        for m in two_rounds.after_round1["ingested_files"]
        if m["feed"] == "hirdb_rounds"
    }
    partial = manifest[f"hirdb_rounds/{sql_files[1].name}"]
    assert (
        partial["status"] == "partial" and partial["byte_end"] == second.rindex(b"\n", 0, cut) + 1
    )
    assert not any(r["feed"] == "lx_table" for r in pending)  # one-table files are complete
    # After round 2: everything.
    expected = {k: v for k, v in sim.final_state.items() if v}
    assert _state(lake, "hirdb_rounds") == expected
    assert _state(lake, "lx_group") == expected
    log = read_mart(lake, "change_log")
    logged = {r["change_id"] for r in log}
    assert {r["change_id"] for r in first_file_tail} <= logged  # closed by the next file's COMMIT
    closing = {
        r["transaction_id"]
        for r in log
        if r["change_id"] in {p["change_id"] for p in first_file_tail}
    }
    assert len(closing) == 1 and next(iter(closing)).startswith(sql_files[1].name + ":")
    pending = read_mart(lake, "pending_changes")
    assert len([r for r in pending if r["feed"] == "hirdb_rounds"]) == len(sim.open_transaction)
    assert len([r for r in pending if r["feed"] == "lx_group"]) == len(sim.open_transaction)
    # Table unit has no commit records: its files leave the open transaction out.
    assert _state(lake, "lx_table") == expected
    purges = [r for r in log if r["feed"] == "hirdb_rounds" and r["operation"] == "TRUNCATE"]
    assert len(purges) == len([c for c in sim.changes if c.operation == "TRUNCATE"]) > 0
    assert len(logged) == len(log)
    rejects = read_mart(lake, "ingest_rejects")
    assert [r for r in rejects if r["feed"] in FEEDS] == []
