"""Kill-and-rerun: a `cdc run` killed at any point and started again builds the same marts as
uninterrupted runs of the same files (DESIGN.md §6.5): nothing duplicated, nothing lost.

The uninterrupted runs are the two-round project's (``tests/two_rounds``, fixture
``two_rounds``): this module's workload is one of its contributions (:func:`prepare`), landed
in the same two rounds, so the reference costs no build of its own (issue 72).

The workload covers the five feed formats. Real runs are killed with SIGKILL (the whole
process group: Python, dbt and the Spark JVM) when their output reaches a chosen point
(:data:`KILLS`): while staging decodes, while it writes the batch's manifest rows (the commit),
and before the models that write state: current_state's MERGE (change_log appended, the events
of the keys applied written), history's MERGE (current_state merged, ADR 0038) and the staging
watermark (change_log and pending_changes written). Each killed run inside dbt costs most of a
run, so the kill points are the ones where a different part of the lake is committed. The run that completes each round has a twin started at the same moment on the same
lake: one of the two applies, the other stops at once. After the first round, int_apply_events
is left as a kill inside its CREATE TABLE AS SELECT leaves it: its folder, no table in the
catalog.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from python_udfs.build_state import committed_batches
from simulator.database import JP_TABLES, catalog_rows, simulate
from simulator.feeds import write_feed
from tests.spark_project import cdc, cli_env, make_project, read_mart
from tests.test_end_to_end import _state as current_states
from tests.test_end_to_end import landing_rounds
from tests.two_rounds import Contribution

pytestmark = pytest.mark.spark

FEEDS = {
    "ct": ("qlik_change_tables", {"mask_bit_order": "lsb_last_hex"}),
    "kafka": ("qlik_kafka", {"mask_bit_order": "lsb_last_hex", "schema_dir": "schemas"}),
    "gg": ("goldengate_trail", {"byte_order": "auto"}),
    "hirdb": ("hirdb_update_sql", {"encoding": "auto", "source_time_zone": "UTC"}),
    "lx": ("linkexpress_extract", {"logtype": "auto", "byteswap": "auto", "outcode": "sjis"}),
}
FEEDS_YAML = "  cdc_feeds:\n" + "".join(
    f"    {name}:\n      format: {fmt}\n      path: {name}\n      options:\n"
    + "".join(f"        {k}: {v}\n" for k, v in options.items())
    for name, (fmt, options) in FEEDS.items()
)
#: Where each killed run dies: a line of its output.
STAGING = "decoding "
#: After the raw tables of the batch are written, while its manifest rows (the commit) are.
COMMITTING = "committing batch "
#: After current_state's MERGE, before history's (ADR 0038): the watermark (history's newest
#: generation) has not moved, so the next run applies the same keys again, and current_state's
#: comparison with itself makes its second MERGE write nothing it already holds.
BEFORE_HISTORY = "START sql incremental model cdc.history"
#: After the events, before current_state's MERGE: nothing of the apply is committed.
BEFORE_CURRENT_STATE = "START sql incremental model cdc.current_state"
BEFORE_STAGED_BATCHES = "START sql incremental model cdc.int_staged_batches"
#: Per landing round, the kill points of its runs; a last run completes the round. The second
#: round kills before the staging watermark moves: change_log and pending_changes are written,
#: int_staged_batches is not, so the next run reads the round's batches again (ADR 0007). A kill
#: before the events of the keys applied (int_apply_events) commits nothing that the kill before
#: current_state's MERGE does not, so it is left out: each kill inside dbt costs most of a run.
#: The kills inside dbt are in the second round, whose runs build the data only (the first
#: round's are whole builds, seeds, views and self-checks too), and where both MERGEs are
#: incremental: what a kill between them leaves is what the next run must heal.
KILLS = [
    [STAGING, COMMITTING],
    [BEFORE_CURRENT_STATE, BEFORE_HISTORY, BEFORE_STAGED_BATCHES],
]


def write_workloads(src: Path, seed: int) -> dict:
    """Write each feed's simulated workload (truncates where the format carries them); return
    each feed's simulation."""
    sims = {
        "qlik_change_tables": simulate(seed=seed),
        "qlik_kafka": simulate(seed=seed),
        "goldengate_trail": simulate(seed=seed, truncate_every=9),
        "hirdb_update_sql": simulate(seed=seed, truncate_every=9, tables=JP_TABLES),
        "linkexpress_extract": simulate(seed=seed, truncate_every=9, tables=JP_TABLES),
    }
    for name, (fmt, options) in FEEDS.items():
        write_feed(sims[fmt], fmt, src / name, options)
    return {name: sims[fmt] for name, (fmt, _options) in FEEDS.items()}


def _killed_run(project: Path, landing: Path, lake: Path, marker: str) -> None:
    """Start `cdc run` and SIGKILL its process group when ``marker`` appears in its output.

    Its staging decodes in worker processes whatever the batch's size (a small batch is
    decoded in the driver process otherwise; ADR 0031), so the kills land while tasks write
    the raw tables; the uninterrupted runs it is compared with decode in the driver process.
    """
    env = {**cli_env(landing, lake), "PYTHONUNBUFFERED": "1", "CDC_STAGE_IN_PROCESS_BYTES": "0"}
    proc = subprocess.Popen(
        # --verbose: the kill points are lines of dbt's own output
        [
            sys.executable,
            "-m",
            "python_udfs.cli",
            "--project-dir",
            str(project),
            "run",
            "--verbose",
        ],
        env=env,
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if marker in line:
            os.killpg(proc.pid, signal.SIGKILL)
            break
    proc.wait(timeout=120)
    assert proc.returncode == -signal.SIGKILL, (
        f"run ended before {marker!r}:\n{''.join(seen)[-3000:]}"
    )


def _two_runs_at_once(project: Path, landing: Path, lake: Path) -> None:
    """Start two `cdc run` on the lake at once (issue 14): one applies, the other exits 2 at
    once with one line naming the lake and the process that holds it."""
    env = cli_env(landing, lake)
    command = [sys.executable, "-m", "python_udfs.cli", "--project-dir", str(project), "run"]
    procs = [
        subprocess.Popen(
            command, env=env, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outputs = [proc.communicate(timeout=900) for proc in procs]
    codes = [proc.returncode for proc in procs]
    assert sorted(codes) == [0, 2], (codes, [err[-3000:] for _out, err in outputs])
    _out, err = outputs[codes.index(2)]
    assert err.count("\n") == 1 and "the lake is in use by cdc process" in err, err


def _leave_a_killed_table_behind(project: Path, landing: Path, lake: Path, table: str) -> None:
    """Leave the lake as a run killed inside CREATE TABLE AS SELECT of ``table`` leaves it: the
    table's folder, with its files, and no table in the catalog (Spark enters the table after
    writing its files; dbt dropped the old one first). The next runs clear it (macro
    cdc_clear_orphan_table_folders): Spark refuses a managed table over a non-empty folder."""
    folder = lake / "warehouse" / "cdc.db" / table
    kept = lake.parent / f"{table}.kept"
    shutil.copytree(folder, kept)
    cdc(project, "sql", f"drop table cdc.{table}", landing=landing, lake=lake)
    assert not folder.exists()
    shutil.move(kept, folder)


def _marts(lake: Path) -> dict:
    """The marts of :data:`FEEDS` on ``lake``, read from their Delta tables by path
    (:func:`~tests.spark_project.read_mart`: no JVM of its own), as sorted JSON texts, without
    what differs between two lakes by wall clock (batch ids, generation)."""
    drop = {
        "applied_generation",
        "history_generation",
        "ingest_batch_id",
        "transaction_first_batch_id",
    }

    def kept(row: dict) -> str:
        # Qlik change tables mark no transaction end: the order of a change inside its
        # transaction counts the changes landed so far (tables land in separate files)
        gone = drop | ({"transaction_sequence"} if row["feed"] == "ct" else set())
        return json.dumps({k: v for k, v in row.items() if k not in gone}, default=str)

    def ours(rows: list[dict]) -> list[dict]:
        return [r for r in rows if r["feed"] in FEEDS]

    return {
        "change_log": sorted(kept(r) for r in ours(read_mart(lake, "change_log"))),
        "pending_changes": sorted(kept(r) for r in ours(read_mart(lake, "pending_changes"))),
        "current_state": sorted(
            json.dumps(r, default=str) for r in ours(read_mart(lake, "current_state"))
        ),
        "history": sorted(
            json.dumps({k: v for k, v in r.items() if k not in drop}, default=str, sort_keys=True)
            for r in ours(read_mart(lake, "history"))
        ),
    }


def _land_round(src: Path, landing: Path, rounds: list[list[list[Path]]], k: int) -> None:
    for feed_rounds in rounds:
        for path in feed_rounds[k]:
            target = landing / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
            # to the nanosecond, as the two-round project's copy has it: a Linkexpress change's
            # committed_at is its file's modification time
            mtime = path.stat().st_mtime_ns
            os.utime(target, ns=(mtime, mtime))


def _rounds(src: Path) -> list[list[list[Path]]]:
    return [landing_rounds(src / name, rounds=len(KILLS)) for name in FEEDS]


def _project(root: Path, landing: Path) -> Path:
    seeds = catalog_rows({name: fmt for name, (fmt, _options) in FEEDS.items()})
    project = make_project(root, FEEDS_YAML, seeds=seeds)
    for name in FEEDS:
        (landing / name).mkdir(parents=True)
    return project


def prepare(src: Path) -> Contribution:
    """The crash workload (:func:`write_workloads`, seed 23) as a contribution of the two-round
    project: round 1 lands the first of the :data:`KILLS` rounds of each feed's files
    (:func:`_rounds`), round 2 the rest, as this module's killed runs land them. ``expected``
    is each feed's simulation; ``extra["src"]`` the folder of the files."""
    sims = write_workloads(src, seed=23)
    assert len(KILLS) == 2  # the two-round project's rounds are this module's landing rounds

    def land_round1(src: Path, landing: Path) -> None:
        _land_round(src, landing, _rounds(src), 0)

    feeds = {name: (fmt, dict(options)) for name, (fmt, options) in FEEDS.items()}
    return Contribution(feeds, land_round1, sims, extra={"src": src})


def test_uninterrupted_runs_reach_the_simulated_databases(two_rounds):
    """The reference of the crash test: the two-round project's current state of the crash
    workload's feeds equals each simulated source database, and dbt's tests passed."""
    sims, lake = two_rounds.contributions["crash"].expected, two_rounds.lake
    assert "0 failed" in two_rounds.round2.stdout and "0 error(s)" in two_rounds.round2.stdout
    state = current_states(lake)
    for feed, sim in sims.items():
        assert state[feed] == {k: v for k, v in sim.final_state.items() if v}, feed


def test_runs_killed_at_any_point_and_rerun_build_the_same_marts(tmp_path, two_rounds):
    src = two_rounds.contributions["crash"].extra["src"]
    uninterrupted = _marts(two_rounds.lake)
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    project = _project(tmp_path, landing)
    rounds = _rounds(src)
    for k, kills in enumerate(KILLS):
        _land_round(src, landing, rounds, k)
        for marker in kills:
            _killed_run(project, landing, lake, marker)
        _two_runs_at_once(project, landing, lake)
        if k == 0:
            _leave_a_killed_table_behind(project, landing, lake, "int_apply_events")
    killed = _marts(lake)
    # a batch killed before its manifest rows were written is not read: every change comes
    # from a committed batch (DESIGN.md §4), though the batch's raw files stay on disk
    committed = set(committed_batches(lake))
    for mart in ("change_log", "pending_changes"):
        batches = {r["ingest_batch_id"] for r in read_mart(lake, mart) if r["feed"] in FEEDS}
        assert batches and batches <= committed, (mart, sorted(batches - committed)[:3])
    assert len(uninterrupted["change_log"]) > 100 and uninterrupted["pending_changes"]
    assert len(uninterrupted["history"]) > 100
    assert len({json.loads(r)["change_id"] for r in killed["change_log"]}) == len(
        killed["change_log"]
    )
    for mart in uninterrupted:
        extra = sorted(set(killed[mart]) - set(uninterrupted[mart]))[:1]
        missing = sorted(set(uninterrupted[mart]) - set(killed[mart]))[:1]
        assert killed[mart] == uninterrupted[mart], (mart, extra, missing)
