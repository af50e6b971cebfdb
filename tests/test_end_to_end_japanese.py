"""End to end for the HiRDB and Linkexpress feeds, landed in two rounds.

Round 1 lands the first update-SQL file, whose last transaction has no COMMIT yet, and the start
of the second file, cut inside the COMMIT line that closes it; and the first Linkexpress files (a group-unit feed and a
table-unit JNL, little-endian, EUC feed), full extracts first. Round 2 lands the rest: the grown
second SQL file and the later extract files. After round 1 the open transaction is pending;
after round 2 current state equals the simulated database.
"""

from __future__ import annotations

import shutil

import pytest

from python_udfs.simulator import JP_TABLES, catalog_rows, simulate, write_feed
from tests.spark_project import cdc, make_project, read_mart

pytestmark = pytest.mark.spark
FEEDS_YAML = """  cdc_feeds:
    hirdb_rounds:
      format: hirdb_update_sql
      path: hirdb_rounds
      options:
        encoding: auto
    lx_group:
      format: linkexpress_extract
      path: lx_group
      options:
        unit: group
    lx_table:
      format: linkexpress_extract
      path: lx_table
      options:
        unit: table
        difftype: jnl
"""
FEEDS = {
    "hirdb_rounds": "hirdb_update_sql",
    "lx_group": "linkexpress_extract",
    "lx_table": "linkexpress_extract",
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


def test_two_landing_rounds_close_the_open_transaction_and_reach_the_simulated_state(tmp_path):
    sim = simulate(seed=21, load_rows=10, transactions=36, truncate_every=10, tables=JP_TABLES)
    full, landing, lake = tmp_path / "full", tmp_path / "landing", tmp_path / "lake"
    for feed, fmt in FEEDS.items():
        write_feed(sim, fmt, full / feed, WRITER_OPTIONS[feed])
    project = make_project(tmp_path, FEEDS_YAML, catalog_rows(FEEDS), typed_models=False)
    # Round 1: the first SQL file whole, the second cut inside its first COMMIT line.
    sql_files = sorted((full / "hirdb_rounds").iterdir())
    (landing / "hirdb_rounds").mkdir(parents=True)
    shutil.copy(sql_files[0], landing / "hirdb_rounds" / sql_files[0].name)
    second = sql_files[1].read_bytes()
    cut = second.index(b"COMMIT;") + 3  # inside the line that closes file 1's last transaction
    (landing / "hirdb_rounds" / sql_files[1].name).write_bytes(second[:cut])
    extract_files = {
        feed: sorted((full / feed).rglob("*.dat"), key=lambda p: p.name)
        for feed in ("lx_group", "lx_table")
    }
    for feed, paths in extract_files.items():
        for path in paths[: len(paths) // 2]:
            target = landing / feed / path.relative_to(full / feed)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, target)
    cdc(project, "run", landing=landing, lake=lake)
    pending = read_mart(lake, "pending_changes")
    first_file_tail = [
        r
        for r in pending
        if r["feed"] == "hirdb_rounds" and r["source_file"].endswith(sql_files[0].name)
    ]
    assert first_file_tail, "the first file ends inside a transaction: its tail is pending"
    manifest = {
        m["source_file"]: m
        for m in read_mart(lake, "ingested_files")
        if m["feed"] == "hirdb_rounds"
    }
    partial = manifest[f"hirdb_rounds/{sql_files[1].name}"]
    assert (
        partial["status"] == "partial" and partial["byte_end"] == second.rindex(b"\n", 0, cut) + 1
    )
    assert not any(r["feed"] == "lx_table" for r in pending)  # one-table files are complete
    # Round 2: everything.
    for feed in FEEDS:
        shutil.copytree(full / feed, landing / feed, dirs_exist_ok=True)
    cdc(project, "run", landing=landing, lake=lake)
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
