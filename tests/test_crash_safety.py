"""Kill-and-rerun: a `cdc run` killed at any point and started again builds the same marts as
an uninterrupted build of the same files (one batch, through the Thrift Server: the
``clean_run`` fixture) (DESIGN.md §6.5): nothing duplicated, nothing lost.

Real runs are killed with SIGKILL (the whole process group: Python, dbt and the Spark JVM)
when their output reaches a chosen point: while staging decodes, and before each of the
models that write state (history versions after change_log was appended, key state after the
history partition was written, the current-state table after the key state, the staging
watermark after change_log and pending_changes).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from python_udfs.simulator import JP_TABLES, catalog_rows, simulate, write_feed
from tests.spark_project import cdc, make_project, read_mart
from tests.test_end_to_end import landing_rounds

pytestmark = pytest.mark.spark

FEEDS = {
    "kafka": ("qlik_kafka", {"mask_bit_order": "lsb_last_hex", "schema_dir": "schemas"}),
    "gg": ("goldengate_trail", {"byte_order": "auto"}),
    "hirdb": ("hirdb_update_sql", {"encoding": "auto", "source_time_zone": "UTC"}),
}
FEEDS_YAML = "  cdc_feeds:\n" + "".join(
    f"    {name}:\n      format: {fmt}\n      path: {name}\n      options:\n"
    + "".join(f"        {k}: {v}\n" for k, v in options.items())
    for name, (fmt, options) in FEEDS.items()
)
#: Where each killed run dies: a line of its output.
STAGING = "decoding "
BEFORE_HISTORY = "START sql incremental model cdc.int_history_versions"
BEFORE_KEY_STATE = "START sql incremental model cdc.int_key_state"
BEFORE_CURRENT_STATE = "START sql table model cdc.current_state"
BEFORE_STAGED_BATCHES = "START sql incremental model cdc.int_staged_batches"
#: Per landing round, the kill points of its runs; a last run completes the round. The second
#: round kills before the staging watermark moves: change_log and pending_changes are written,
#: int_staged_batches is not, so the next run reads the round's batches again (ADR 0007).
KILLS = [
    [STAGING, BEFORE_HISTORY, BEFORE_KEY_STATE],
    [BEFORE_CURRENT_STATE, BEFORE_STAGED_BATCHES],
]


def write_workloads(src: Path, seed: int) -> dict:
    """Write each feed's simulated workload (truncates where the format carries them); return
    each feed's simulation."""
    sims = {
        "qlik_kafka": simulate(seed=seed),
        "goldengate_trail": simulate(seed=seed, truncate_every=9),
        "hirdb_update_sql": simulate(seed=seed, truncate_every=9, tables=JP_TABLES),
    }
    for name, (fmt, options) in FEEDS.items():
        write_feed(sims[fmt], fmt, src / name, options)
    return {name: sims[fmt] for name, (fmt, _options) in FEEDS.items()}


def _killed_run(project: Path, landing: Path, lake: Path, marker: str) -> None:
    """Start `cdc run` and SIGKILL its process group when ``marker`` appears in its output."""
    env = {
        **os.environ,
        "CDC_LANDING_ROOT": str(landing),
        "CDC_LAKE_ROOT": str(lake),
        "PYTHONUNBUFFERED": "1",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "python_udfs.cli", "--project-dir", str(project), "run"],
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


def _marts(project: Path, landing: Path, lake: Path) -> dict:
    """The marts, without what differs between two lakes by wall clock (batch ids, generation)."""
    history = cdc(
        project, "sql", "--json", "select * from cdc.history", landing=landing, lake=lake
    ).stdout.splitlines()
    drop = {"applied_generation", "ingest_batch_id", "transaction_first_batch_id"}
    return {
        "change_log": sorted(
            json.dumps({k: v for k, v in r.items() if k not in drop}, default=str)
            for r in read_mart(lake, "change_log")
        ),
        "pending_changes": sorted(
            json.dumps({k: v for k, v in r.items() if k not in drop}, default=str)
            for r in read_mart(lake, "pending_changes")
        ),
        "current_state": sorted(
            json.dumps(r, default=str) for r in read_mart(lake, "current_state")
        ),
        "history": sorted(line for line in history if line.startswith("{")),
    }


def _land_round(src: Path, landing: Path, rounds: list[list[list[Path]]], k: int) -> None:
    for feed_rounds in rounds:
        for path in feed_rounds[k]:
            target = landing / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
            os.utime(target, (path.stat().st_mtime, path.stat().st_mtime))


def _rounds(src: Path) -> list[list[list[Path]]]:
    return [landing_rounds(src / name, rounds=len(KILLS)) for name in FEEDS]


def _project(root: Path, landing: Path) -> Path:
    seeds = catalog_rows({name: fmt for name, (fmt, _options) in FEEDS.items()})
    project = make_project(root, FEEDS_YAML, seeds=seeds, typed_models=False)
    for name in FEEDS:
        (landing / name).mkdir(parents=True)
    return project


def test_runs_killed_at_any_point_and_rerun_build_the_same_marts(tmp_path, clean_run):
    src, uninterrupted, _sims, _output = clean_run
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    project = _project(tmp_path, landing)
    rounds = _rounds(src)
    for k, kills in enumerate(KILLS):
        _land_round(src, landing, rounds, k)
        for marker in kills:
            _killed_run(project, landing, lake, marker)
        cdc(project, "run", landing=landing, lake=lake)
    killed = _marts(project, landing, lake)
    assert len(uninterrupted["change_log"]) > 100 and uninterrupted["pending_changes"]
    assert len({json.loads(r)["change_id"] for r in killed["change_log"]}) == len(
        killed["change_log"]
    )
    for mart in uninterrupted:
        assert killed[mart] == uninterrupted[mart], mart
