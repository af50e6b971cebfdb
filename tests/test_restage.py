"""``cdc restage`` (issue 14): a table declared in the seeds after its files landed.

The HiRDB update-SQL feed of one simulated database lands whole in round 1 of the shared
two-round project (``tests/two_rounds.py``, fixture ``two_rounds``: declaring the table
changes the seeds, so its round 2 is a whole build) while one of its three tables is not in the
seeds: that table's statements are ``unknown_table`` rejects and round 1 applies the other two. Then
the table is declared, ``cdc restage`` decodes the rejected statements again in a new ingest
batch, a second restage finds nothing open, and round 2 (no new file for this feed) applies
the restaged changes among the applied ones: current state equals the simulated database.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from simulator.database import JP_TABLES, simulate
from simulator.feeds import write_feed
from tests.spark_project import cdc, read_mart
from tests.test_end_to_end_japanese import _state
from tests.two_rounds import Contribution

pytestmark = pytest.mark.spark
FEED = "hirdb_restage"
FEEDS = {FEED: ("hirdb_update_sql", {"encoding": "auto"})}
LATE_TABLE = (FEED, JP_TABLES[2].schema, JP_TABLES[2].name)


def prepare(src: Path) -> Contribution:
    """Write the feed (one update-SQL file); round 1 lands it whole, before the late table is
    declared; between the rounds ``cdc restage`` runs twice."""
    sim = simulate(seed=33, load_rows=6, transactions=24, tables=JP_TABLES)
    write_feed(sim, "hirdb_update_sql", src / FEED, {"files": 1})

    def land_round1(src: Path, landing: Path) -> None:
        shutil.copytree(src / FEED, landing / FEED)

    def restage_twice(project: Path, landing: Path, lake: Path):
        first = cdc(project, "restage", "--feed", FEED, landing=landing, lake=lake)
        again = cdc(project, "restage", landing=landing, lake=lake)
        return first, again

    return Contribution(
        FEEDS, land_round1, sim, undeclared={LATE_TABLE}, between_rounds=restage_twice
    )


def test_a_table_declared_after_its_files_landed_is_restaged_and_applied_in_order(two_rounds):
    sim = two_rounds.contributions["restage"].expected
    first, again = two_rounds.contributions["restage"].extra["between_rounds"]
    lake = two_rounds.lake
    # Round 1: the late table's statements are rejects naming it; the rest is applied.
    rejected = [r for r in two_rounds.after_round1["ingest_rejects"] if r["feed"] == FEED]
    assert rejected and {r["reason"] for r in rejected} == {"unknown_table"}
    assert all(LATE_TABLE[2] in r["message"] for r in rejected)
    late = (LATE_TABLE[1], LATE_TABLE[2])
    expected = {k: v for k, v in sim.final_state.items() if v}
    assert late in expected
    # The restage decodes exactly those statements again, in a new batch; then nothing is open.
    assert first.returncode == 0
    assert f"restaged 1 file(s): {len(rejected)} record(s) landed, 0 still rejected" in first.stdout
    assert again.returncode == 0 and "no open rejects to restage" in again.stdout
    files = [m for m in read_mart(lake, "ingested_files") if m["feed"] == FEED]
    (restaged,) = [m for m in files if m["status"] == "restaged"]
    (ingested,) = [m for m in files if m["status"] == "ingested"]
    assert restaged["source_file"] == ingested["source_file"]
    assert (restaged["byte_start"], restaged["byte_end"]) == (0, ingested["byte_end"])
    assert (restaged["row_count"], restaged["reject_count"]) == (len(rejected), 0)
    rejects = [r for r in read_mart(lake, "ingest_rejects") if r["feed"] == FEED]
    assert sorted((r["record_offset"], r["reason"]) for r in rejects) == sorted(
        (r["record_offset"], r["reason"]) for r in rejected
    )
    assert {r["restaged_batch_id"] for r in rejects} == {restaged["ingest_batch_id"]}
    # Round 2 applies them among the changes applied in round 1, in position order.
    assert _state(lake, FEED) == expected
    log = [r for r in read_mart(lake, "change_log") if r["feed"] == FEED]
    assert len({r["change_id"] for r in log}) == len(log)
    tables = {(r["source_schema"], r["source_table"]) for r in log if r["operation"] != "EVENT"}
    assert tables == set(sim.final_state)  # EVENT records name no table
