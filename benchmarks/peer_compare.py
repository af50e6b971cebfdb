"""cdc_changelog against Spark's own Auto CDC flow on the peer's events (issue 12; not a test).

The peer (``../shared/peer``, see its README) is Spark 4.2's Auto CDC flow (SCD type 1) with a
copy-on-write parquet catalog. Its ``bench.sh`` generates ``EVENTS`` change events over ``KEYS``
keys as parquet files (``id, seq, op, name, amount, updated_at``; arrival locally shuffled, so a
higher ``seq`` can land in an earlier file), then times a full run, a +1 % run (new events plus
0.5 % exact re-deliveries of old events) and a no-op run, and checks each against the expected
SCD1 state it wrote next to the data.

This script runs that, then feeds the same events to cdc_changelog in the same benchmark run:
each parquet file becomes one Qlik Replicate change-table Parquet file of a table
``PEER.CUSTOMERS`` (the change-table columns of formats/qlik_change_tables.md, with Parquet's
physical types; ``header__change_seq`` carries ``seq``, so the change sequence orders the events
as ``seq`` orders them for the peer), and it times ``cdc run`` (staging and dbt build in one
SparkSession, as a user runs it; the staging's share is read from its summary line) for the
full, +1 % and no-op runs, checking our current state against the same expected parquet after
each run (every live key, its NAME and AMOUNT as written by the event with the highest ``seq``).
Then the +1 % run once more, from the lake as the full run left it, in a process that stays
running (``cdc run --every``) and has just applied one event: the same run in a warm engine.
Last, where each run's time goes: the peer's setup and flow seconds (from its log) beside our
staging, dbt build, and each model of the apply chain (from dbt's run_results.json).

    .venv/bin/python benchmarks/peer_compare.py [--events 1000000] [--keys 200000] [--files 10]
        [--workdir DIR] [--peer-venv /tmp/peer-venv]

The peer's venv must hold ``pyspark[connect]==4.2.0 numpy pyarrow pyyaml`` (its README); the
script creates it with pip when the folder does not exist.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.apply_scale import apply_seconds, dbt_times, run_step  # noqa: E402
from tests.spark_project import REPO, cli_env, make_project, read_mart  # noqa: E402

PEER = REPO.parent / "shared" / "peer"
FEED, SCHEMA, TABLE = "peer", "PEER", "CUSTOMERS"
#: Every data column present: bits 7..10 after the seven header columns (lsb_last_hex), as the
#: raw bytes a Parquet change table carries.
MASK = sum(1 << (7 + i) for i in range(4)).to_bytes(2, "big")
FEEDS_YAML = f"""  cdc_feeds:
    {FEED}:
      format: qlik_change_tables
      path: {FEED}
      options:
        mask_bit_order: lsb_last_hex
"""
COLUMNS = [
    ("ID", "INT8", 19, 0, 0, 1, "false", "bigint"),
    ("NAME", "STRING", 100, 0, 0, 0, "true", "string"),
    ("AMOUNT", "NUMERIC", 0, 18, 2, 0, "true", "decimal(18,2)"),
    ("UPDATED_AT", "DATETIME", 0, 0, 0, 0, "true", "timestamp"),
]


def write_change_table(source: Path, target: Path) -> int:
    """Write one peer parquet file as a Qlik change-table Parquet file; return its record count.

    Qlik's default header columns, then ID, NAME, AMOUNT, UPDATED_AT, in the physical types of
    the Parquet mapping (formats/qlik_change_tables.md, Values): each event is its own
    transaction (the peer has no transactions); ``op`` I/U/D becomes ``header__change_oper``;
    ``header__change_seq`` is 35 digits ending in ``seq``; ``header__change_mask`` raw bytes.
    """
    table = pq.read_table(source)
    seqs = table.column("seq").to_numpy()
    count = len(seqs)
    operation = {"I": "INSERT", "U": "UPDATE", "D": "DELETE"}
    stamps = pc.cast(table.column("updated_at"), pa.timestamp("us"))
    change_table = pa.table(
        {
            "header__change_seq": [f"2024010100000000{seq:019d}" for seq in seqs],
            "header__change_oper": table.column("op"),
            "header__change_mask": pa.array([MASK] * count, pa.binary()),
            "header__stream_position": pa.array([""] * count, pa.string()),
            "header__operation": [operation[op] for op in table.column("op").to_pylist()],
            "header__transaction_id": [f"{seq:016X}" for seq in seqs],
            "header__timestamp": stamps,
            "ID": pc.cast(table.column("id"), pa.int64()),
            "NAME": table.column("name"),
            "AMOUNT": pc.cast(table.column("amount"), pa.decimal128(18, 2)),
            "UPDATED_AT": stamps,
        }
    )
    target.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(change_table, target)
    return count


def check_state(lake: Path, expected: Path) -> dict:
    """Compare current_state of PEER.CUSTOMERS with the peer's expected SCD1 parquet."""
    want = pq.read_table(expected)
    want_seq = dict(zip(want.column("id").to_pylist(), want.column("seq").to_pylist(), strict=True))
    rows = [
        r["row"]
        for r in read_mart(lake, "current_state")
        if (r["feed"], r["source_schema"], r["source_table"]) == (FEED, SCHEMA, TABLE)
    ]
    errors = []
    got = {int(r["ID"]): r for r in rows}
    if len(got) != len(rows):
        errors.append("duplicate keys")
    if set(got) != set(want_seq):
        errors.append(
            f"key sets differ: {len(set(got) - set(want_seq))} extra, "
            f"{len(set(want_seq) - set(got))} missing"
        )
    wrong = 0
    for key, seq in want_seq.items():
        row = got.get(key)
        cents = (seq * 2654435761) % 10_000_000  # gen_bench.amount_cents
        if row is not None and (
            row["NAME"] != f"n_{key}_{seq}" or Decimal(row["AMOUNT"]) != Decimal(cents) / 100
        ):
            wrong += 1
    if wrong:
        errors.append(f"{wrong} rows differ from the event with the highest seq")
    return {"rows": len(rows), "expected_rows": len(want_seq), "ok": not errors, "errors": errors}


def ensure_peer_venv(venv: Path) -> None:
    if (venv / "bin" / "spark-pipelines").exists():
        return
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", "pyspark[connect]==4.2.0", "numpy", "pyarrow"]
        + ["pyyaml"],
        check=True,
    )


def run_peer(args: argparse.Namespace, root: Path) -> list[dict]:
    """Run the peer's bench.sh in a writable copy; return its results.jsonl rows with validation."""
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(PEER, root)
    env = {**os.environ, "PEER_ROOT": str(root), "PEER_VENV": str(args.peer_venv)}
    proc = subprocess.run(
        ["bash", str(root / "bench.sh"), "e", str(args.events), str(args.keys), str(args.files)],
        env=env,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(
            f"the peer's bench.sh failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
    results = [
        json.loads(x) for x in (root / "runs" / "e" / "results.jsonl").read_text().splitlines()
    ]
    checks = [
        json.loads(x) for x in (root / "runs" / "e" / "validation.jsonl").read_text().splitlines()
    ]
    for result, check in zip(results, checks, strict=True):
        result["valid"] = check["ok"]
        result["rows"] = check["rows"]
    return results


def run_ours(data: Path, work: Path) -> list[dict]:
    """Full, +1 % and no-op `cdc run` (staging and dbt build) on the peer's files."""
    project, landing, lake = work / "project", work / "landing", work / "lake"
    for name in ("project", "landing", "lake", "src"):
        shutil.rmtree(work / name, ignore_errors=True)
    columns = [
        dict(
            zip(
                (
                    "feed source_schema source_table column_name ordinal source_type length "
                    "precision scale primary_key_position nullable spark_type"
                ).split(),
                (FEED, SCHEMA, TABLE, name, i, *rest),
                strict=True,
            )
        )
        for i, (name, *rest) in enumerate(COLUMNS, start=1)
    ]
    tables = [
        {"feed": FEED, "source_schema": SCHEMA, "source_table": TABLE, "table_identifier": ""}
    ]
    make_project(work, FEEDS_YAML, (columns, tables))
    from python_udfs.config import load_project
    from python_udfs.scaffold import write_typed_models

    write_typed_models(load_project(project, check_paths=False))
    folder = work / "src" / f"{SCHEMA}.{TABLE}__ct"
    base = sorted(data.glob("part-0*.parquet"))
    for i, path in enumerate(base):
        write_change_table(path, folder / f"20240101-000000{i:03d}.parquet")
    (increment,) = data.glob("part-inc-*.parquet")
    write_change_table(increment, work / "src_inc" / "20240102-000000000.parquet")
    env = cli_env(landing, lake)
    cdc = [sys.executable, "-m", "python_udfs.cli", "--project-dir", str(project)]
    results = []

    def step(name: str, expected: Path) -> None:
        # `cdc run` stages and builds in one SparkSession, as a user runs it; the staging's own
        # seconds come from its summary line ("staged in 12.3 s")
        wall, peak, out = run_step(cdc + ["run"], env, project)
        staged = re.search(r"staged in ([0-9.]+) s", out)
        check = check_state(lake, expected)
        skipped = "dbt build skipped" in out
        results.append(
            {
                "step": name,
                "wall_s": round(wall, 1),
                "stage_s": float(staged[1]) if staged else None,
                "skipped": skipped,
                "peak_tree_rss_mb": round(peak / 2**20),
                "valid": check["ok"],
                "rows": check["rows"],
                "errors": check["errors"],
                **({} if skipped else build_seconds(project)),
            }
        )
        print(json.dumps(results[-1]), flush=True)

    target = landing / FEED / f"{SCHEMA}.{TABLE}__ct"
    target.mkdir(parents=True)
    for path in sorted(folder.iterdir()):
        shutil.copy2(path, target / path.name)
    step("full", data.with_name(data.name + ".expected_base.parquet"))
    snapshot = work / "after_full"
    shutil.rmtree(snapshot, ignore_errors=True)
    for name in ("project", "landing", "lake"):
        shutil.copytree(work / name, snapshot / name)
    shutil.copy2(work / "src_inc" / "20240102-000000000.parquet", target)
    step("incremental", data.with_name(data.name + ".expected_inc.parquet"))
    step("noop", data.with_name(data.name + ".expected_inc.parquet"))
    results.append(warm_increment(work, snapshot, target, cdc, env, data))
    print(json.dumps(results[-1]), flush=True)
    return results


def warm_increment(
    work: Path, snapshot: Path, target: Path, cdc: list[str], env: dict, data: Path
) -> dict:
    """The +1 % run again, from the lake as the full run left it, in a warm process.

    ``cdc run --every 5 --runs 2``: its first run applies one event (the increment's highest
    ``seq``, in a file of its own: the engine's warm-up, as the previous run of a process that
    stays running), then the increment lands (renamed into place whole) while the process waits
    5 s, and its second run is timed: from the line that ends the first to the process's exit,
    less the wait. The increment delivers that event again, so the expected state is the +1 %
    run's.
    """
    for name in ("project", "landing", "lake"):  # the same paths: the metastore holds them
        shutil.rmtree(work / name)
        shutil.copytree(snapshot / name, work / name)
    increment = pq.read_table(work / "src_inc" / "20240102-000000000.parquet")
    last = pc.index(increment["header__change_seq"], pc.max(increment["header__change_seq"]))
    pq.write_table(increment.slice(last.as_py(), 1), target / "20240101-999999999.parquet")
    wait = 5.0
    proc = subprocess.Popen(
        cdc + ["run", "--every", f"{wait:g}", "--runs", "2"],
        env=env,
        cwd=work / "project",
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    started = None
    for line in proc.stdout:
        if " next run in " in line:
            started = time.perf_counter()
            landed = shutil.copy2(work / "src_inc" / "20240102-000000000.parquet", work)
            os.replace(landed, target / "20240102-000000000.parquet")
    proc.wait()
    wall = time.perf_counter() - started - wait if started is not None else float("nan")
    check = check_state(work / "lake", data.with_name(data.name + ".expected_inc.parquet"))
    return {
        "step": "incremental, warm",
        "wall_s": round(wall, 1),
        "exit": proc.returncode,
        "valid": check["ok"] and proc.returncode == 0,
        "rows": check["rows"],
        "errors": check["errors"],
        **build_seconds(work / "project"),
    }


def build_seconds(project: Path) -> dict:
    """The last dbt build's seconds (``project``'s target/run_results.json): ``dbt_s`` (dbt's
    elapsed time), ``models_s`` and ``tests_s`` (summed over nodes, which overlap on dbt's two
    threads) and ``apply_s``, each model of the apply chain (apply_scale.APPLY_MODELS, the
    staging tables of the change feeds as one entry)."""
    elapsed, models, tests = dbt_times(project)
    return {
        "dbt_s": round(elapsed, 1),
        "models_s": round(models, 1),
        "tests_s": round(tests, 1),
        "apply_s": {name: round(s, 1) for name, s in apply_seconds(project).items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=200_000)
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--peer-venv", type=Path, default=Path("/tmp/peer-venv"))
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="cdc-peer-"))
    work.mkdir(parents=True, exist_ok=True)
    ensure_peer_venv(args.peer_venv)
    print(f"=== {args.events:,} events over {args.keys:,} keys, {args.files} files ({work})")
    print("the peer: Spark Auto CDC (bench.sh: local[2], driver 4g)", flush=True)
    peer = run_peer(args, work / "peer")
    peer_keys = ("step", "wall_s", "peak_tree_rss_mb", "valid", "rows")
    peer_keys += ("session_and_graph_setup_s", "flow_running_to_completed_s")
    for row in peer:
        print(json.dumps({k: row.get(k) for k in peer_keys}))
    print(
        "cdc_changelog: cdc run (stage and build) on the same events as Qlik change tables",
        flush=True,
    )
    ours = run_ours(work / "peer" / "data" / "e", work)
    print(f"\n{'run':17s} {'peer s':>8s} {'ours s':>8s} {'ours ÷ peer':>12s} {'both valid':>11s}")
    # our warm +1 % run (cdc run --every) against the peer's +1 % run, a fresh process
    for theirs, mine in zip([*peer, peer[1]], ours, strict=True):
        print(
            f"{mine['step']:17s} {theirs['wall_s']:8.1f} {mine['wall_s']:8.1f} "
            f"{mine['wall_s'] / theirs['wall_s']:12.2f} {str(theirs['valid'] and mine['valid']):>11s}"
        )
    print_breakdown(peer, ours)


def print_breakdown(peer: list[dict], ours: list[dict]) -> None:
    """Where each run's seconds go: the peer's flow (its log's "Flow ... is RUNNING" to
    "COMPLETED") and setup, beside our staging, dbt build and each apply model (seconds)."""
    print("\nwhere the time goes (s): the peer's flow beside our staging, dbt and apply models")
    for theirs, mine in zip([*peer, peer[1]], ours, strict=True):
        parts = [
            f"peer setup {theirs.get('session_and_graph_setup_s')}",
            f"peer flow {theirs.get('flow_running_to_completed_s')}",
            f"ours staging {mine.get('stage_s')}",
            f"dbt {mine.get('dbt_s')} (models {mine.get('models_s')}, tests {mine.get('tests_s')})",
        ]
        parts += [f"{name} {seconds}" for name, seconds in mine.get("apply_s", {}).items()]
        print(f"{mine['step']:17s} " + "; ".join(parts))


if __name__ == "__main__":
    main()
