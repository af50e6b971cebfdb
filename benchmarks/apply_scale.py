"""Scale benchmark of the whole pipeline (issues 5 and 11; not part of the test suite).

For each history size (default 500,000 and 5,000,000 change events over 200,000 keys: one fifth
per feed, all five feed formats, mixed operations), the sample-feed simulator writes the history
and, after it, a batch of new changes of the same size for every history (default 50,000 events,
all feeds). Then it times and prints, with the peak memory (RSS of the process tree: Python, dbt
and the Spark JVM) of each step:

1. staging of the history, feed by feed (``cdc stage``): records/s, MB/s, records/s per core;
2. a full ``dbt build`` (``cdc run``; dbt's own elapsed time, models and tests apart);
3. baseline (a): a minimal hand-written PySpark plan computing current state from the same
   raw tables (window over position, last event per key, deletes dropped), written as parquet;
4. the run that applies the new batch (``cdc run`` after landing it);
5. a run with nothing new (``cdc run``: the build is skipped, only its wall time counts), and
   the same forced (``cdc run --force``: every model and test runs over nothing new).

Last, the ratio of each run between the largest and the smallest history: a run that costs what
its new data costs has a ratio near 1.

    .venv/bin/python benchmarks/apply_scale.py [--histories 500000,5000000] [--batch 50000]
        [--keys 200000] [--workdir DIR]
        [--reuse-staged]   # with --workdir: start at the full build over the raw tables staged there
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
import threading
import time
from pathlib import Path

import pyarrow.dataset as ds

from python_udfs.config import load_project
from python_udfs.demo import DEMO_TRUNCATE_EVERY
from python_udfs.scaffold import write_typed_models
from simulator.database import Simulation, catalog_rows, simulate, tables_for
from simulator.feeds import write_feed

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.spark_project import REPO, cli_env, demo_feeds_yaml, make_project  # noqa: E402

CORES = os.cpu_count() or 2
FEEDS = {
    "qlik_ct_demo": "qlik_change_tables",
    "qlik_kafka_demo": "qlik_kafka",
    "goldengate_demo": "goldengate_trail",
    "hirdb_demo": "hirdb_update_sql",
    "linkexpress_demo": "linkexpress_extract",
}

GG = "goldengate_trail"
#: The number the new batch's files start at (trail seqno, HiRDB and Linkexpress file numbers).
INCREMENT_NUMBER = 500000

#: File sizes a production feed would have (the simulator's defaults suit the small demo).
WRITER_OPTIONS = {
    "goldengate_trail": {"records_per_file": 20000},
    "hirdb_update_sql": {"files": 8},
    "linkexpress_extract": {"chunks": 8},
}


class PeakRss:
    """Sample the summed RSS of a process and its descendants every 0.2 s (Linux /proc)."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self._stop = pid, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _tree_rss(self) -> int:
        children: dict[int, list[int]] = {}
        rss: dict[int, int] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                status = Path(f"/proc/{entry}/status").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry))
            match = re.search(r"VmRSS:\s+(\d+) kB", status)
            rss[int(entry)] = int(match.group(1)) * 1024 if match else 0
        total, stack = 0, [self.pid]
        while stack:
            pid = stack.pop()
            total += rss.get(pid, 0)
            stack += children.get(pid, [])
        return total

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._tree_rss())
            time.sleep(0.2)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def run_step(args: list[str], env: dict, cwd: Path) -> tuple[float, int, str]:
    """Run a command; return (wall seconds, peak RSS bytes, stdout). Raises on failure."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        args, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    sampler = PeakRss(proc.pid)
    out = proc.communicate()[0]
    peak = sampler.stop()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args[:4])} failed ({proc.returncode}):\n{out[-5000:]}")
    return time.perf_counter() - started, peak, out


def split(sim: Simulation, fraction: float) -> tuple[Simulation, Simulation]:
    """Cut a workload at the transaction boundary nearest ``1 - fraction`` of its changes."""
    cut = int(len(sim.changes) * (1 - fraction))
    while cut < len(sim.changes) and (
        sim.changes[cut].transaction_id == sim.changes[cut - 1].transaction_id
    ):
        cut += 1
    return (
        Simulation(sim.changes[:cut], {}, []),
        Simulation(sim.changes[cut:], {}, sim.open_transaction),
    )


def renumber_increment(folder: Path, fmt: str) -> None:
    """Give the increment's files names that sort after the base files (HiRDB, Linkexpress and
    Kafka positions come from names; a trail's from its headers, see write_feeds), and drop what
    a writer emits for a workload's start: full loads and extracts."""
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        name = path.name
        if fmt == "qlik_change_tables" and not path.parent.name.endswith("__ct"):
            path.unlink()  # LOAD files of the (empty) initial load
        elif fmt == "qlik_kafka" and "schemas" not in path.parts:
            path.rename(
                path.with_name(
                    re.sub(r"-0-(\d{20})", lambda m: f"-0-{int(m[1]) + 10**15:020d}", name)
                )
            )
        elif fmt == "hirdb_update_sql":
            stem, number = name.rsplit(".", 1)
            path.rename(path.with_name(f"{stem}.{int(number) + INCREMENT_NUMBER:06d}"))
        elif fmt == "linkexpress_extract":
            if path.parent != folder:
                path.unlink()  # full extracts of the writer's own (empty) start state
            else:
                path.rename(path.with_name(f"LX{int(name[2:8]) + INCREMENT_NUMBER:06d}{name[8:]}"))
    for sub in sorted(folder.rglob("*"), reverse=True):
        if sub.is_dir() and not any(sub.iterdir()):
            sub.rmdir()


def land(src: Path, landing: Path) -> None:
    for path in src.rglob("*"):
        if path.is_file():
            target = landing / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)


BASELINE = r'''
import sys, time
from pathlib import Path
from python_udfs.spark import get_spark
spark = get_spark(Path(sys.argv[1]))
# the project's catalog and the demo's (seeds/demo/, on while vars.cdc_demo is true)
catalogs = [p for p in ("/seeds/cdc_columns.csv", "/seeds/demo/cdc_demo_columns.csv")
            if Path(sys.argv[2] + p).is_file()]
keys = spark.read.option("header", True).csv([sys.argv[2] + p for p in catalogs])
keys = keys.where("cast(primary_key_position as int) > 0")
if keys.isEmpty():
    raise SystemExit(f"baseline (a): no primary key columns in {sys.argv[2]}/seeds ({catalogs})")
keys.createOrReplaceTempView("key_columns")
spark.sql("""select feed, source_schema, source_table,
    transform(array_sort(collect_list(struct(cast(primary_key_position as int) as p, column_name as c))), x -> x.c) as key_names
    from key_columns group by 1, 2, 3""").createOrReplaceTempView("table_keys")
raw = sys.argv[1] + "/raw/"
committed = spark.read.parquet(raw + "raw_ingested_files").select("ingest_batch_id").distinct()
def table(name):
    return spark.read.parquet(raw + name).join(committed, "ingest_batch_id", "left_semi")
table("raw_qlik_change_tables").createOrReplaceTempView("ct")
table("raw_qlik_kafka").createOrReplaceTempView("kafka")
table("raw_goldengate_trail").createOrReplaceTempView("gg")
table("raw_hirdb_update_sql").createOrReplaceTempView("hirdb")
table("raw_linkexpress_extract").createOrReplaceTempView("lx")
started = time.perf_counter()
spark.sql("""
with events as (
    select feed, source_schema, source_table,
        case when file_kind = 'full_load' then repeat('0', 35) else header__change_seq end as position,
        source_file, record_index, header__change_oper = 'D' as is_delete, data as image
    from ct where coalesce(header__change_oper, 'L') != 'B'
    union all
    select feed, source_schema, source_table, coalesce(change_sequence, repeat('0', 35)), source_file,
        record_index, operation = 'DELETE', coalesce(data, before_data)
    from kafka where message_type = 'DT'
    union all
    select feed, source_schema, source_table,
        concat(lpad(cast(trail_seqno as string), 10, '0'), lpad(cast(record_offset as string), 20, '0')),
        source_file, record_index, io_type = 3, data
    from gg where io_type in (3, 5, 15, 134) and before_after = 'A' or io_type = 3
    union all
    select feed, source_schema, source_table, concat(file_name, ':', lpad(cast(record_index as string), 12, '0')),
        source_file, record_index, statement_type = 'DELETE', map_concat(where_data, map_filter(data, (k, v) -> not map_contains_key(where_data, k)))
    from hirdb where statement_type in ('INSERT', 'UPDATE', 'DELETE')
    union all
    select feed, source_schema, source_table, concat(file_name, ':', lpad(cast(record_index as string), 12, '0')),
        source_file, record_index, operation_code = 3, data
    from lx where operation_code in (0, 1, 2, 3)
),
keyed as (
    select events.*, to_json(transform(table_keys.key_names, k -> image[k])) as primary_key
    from events join table_keys using (feed, source_schema, source_table)
),
ranked as (
    select *, row_number() over (partition by feed, source_schema, source_table, primary_key
        order by position desc, source_file desc, record_index desc) as rank
    from keyed
)
select feed, source_schema, source_table, primary_key, image as row, position as last_change_position
from ranked where rank = 1 and not is_delete
""").write.mode("overwrite").parquet(sys.argv[1] + "/baseline_current_state")
elapsed = time.perf_counter() - started
rows = spark.read.parquet(sys.argv[1] + "/baseline_current_state").count()
print(f"BASELINE {elapsed:.3f} {rows}")
'''


#: The models that turn raw tables into applied changes (what baseline (a) and the peer compute):
#: the staging tables of the change feeds, summed as one entry, then the apply chain.
APPLY_MODELS = (
    "int_changes_transaction_flagged",
    "int_changes_logged",
    "int_apply_keys",
    "int_apply_events",
    "history",
    "current_state",
)


def apply_seconds(project: Path) -> dict[str, float]:
    """Seconds of the staging change models and APPLY_MODELS in the last run_results.json."""
    results = json.loads((project / "target" / "run_results.json").read_text())
    seconds = {"staging tables": 0.0}
    for r in results["results"]:
        kind, name = r["unique_id"].split(".")[0], r["unique_id"].rsplit(".", 1)[1]
        if kind != "model":
            continue
        if name.startswith("stg_") and name.endswith("__changes"):
            seconds["staging tables"] += r["execution_time"]
        elif name in APPLY_MODELS:
            seconds[name] = r["execution_time"]
    return seconds


def dbt_times(project: Path) -> tuple[float, float, float]:
    """(dbt elapsed, model seconds, test seconds) of the last invocation's run_results.json."""
    results = json.loads((project / "target" / "run_results.json").read_text())
    models = sum(
        r["execution_time"] for r in results["results"] if r["unique_id"].startswith("model.")
    )
    tests = sum(
        r["execution_time"]
        for r in results["results"]
        if r["unique_id"].startswith(("test.", "unit_test."))
    )
    return results["elapsed_time"], models, tests


def manifest_rows(lake: Path) -> list[dict]:
    """The staged manifest (raw_ingested_files) rows, one per ingested file."""
    path = lake / "raw" / "raw_ingested_files"
    return ds.dataset(str(path), format="parquet", partitioning="hive").to_table().to_pylist()


def write_feeds(
    events: int,
    batch: int,
    keys: int,
    work: Path,
    project: Path,
    landing: Path,
    tables_per_feed: int | None = None,
) -> None:
    """Simulate ``events`` + ``batch`` changes and write each feed's history ("base") and new
    batch ("increment") files under work/src; ``tables_per_feed`` as in tables_for."""
    western_tables = tables_for("qlik_change_tables", tables_per_feed)
    japanese_tables = tables_for("hirdb_update_sql", tables_per_feed)
    per_feed, keys_per_feed = (events + batch) // len(FEEDS), keys // len(FEEDS)
    load_rows = max(1, keys_per_feed // len(western_tables))
    # 1–4 changes per transaction
    transactions = int((per_feed - len(western_tables) * load_rows) / 2.5)
    started = time.perf_counter()
    western = simulate(
        seed=5, load_rows=load_rows, transactions=transactions, tables=western_tables
    )
    japanese = simulate(
        seed=5,
        load_rows=load_rows,
        transactions=transactions,
        truncate_every=DEMO_TRUNCATE_EVERY * 2000,
        tables=japanese_tables,
    )
    print(
        f"simulated 2 × {len(western.changes):,} changes "
        f"({load_rows * len(western_tables):,} keys loaded per feed, "
        f"{len(western_tables)} tables per feed) in {time.perf_counter() - started:.0f} s"
    )
    feeds = load_project(project, check_paths=False).feeds
    started = time.perf_counter()
    for feed, fmt in FEEDS.items():
        is_japanese = fmt in ("hirdb_update_sql", "linkexpress_extract")
        sim = japanese if is_japanese else western
        tables = japanese_tables if is_japanese else western_tables
        base, increment = split(sim, batch / (events + batch))
        options = {**feeds[feed].options, **WRITER_OPTIONS.get(fmt, {})}
        write_feed(base, fmt, work / "src" / "base" / feed, options, tables)
        # a trail's positions come from the seqno in each file's header: the new batch's trail
        # continues the history's (renaming its files would not move its positions)
        increment_options = {**options, "first_seqno": INCREMENT_NUMBER} if fmt == GG else options
        write_feed(increment, fmt, work / "src" / "increment" / feed, increment_options, tables)
        renumber_increment(work / "src" / "increment" / feed, fmt)
        (landing / feed).mkdir(parents=True)
        for side in ("dirdef", "schemas"):  # definitions the configuration checks up front
            if (work / "src" / "base" / feed / side).is_dir():
                land(work / "src" / "base" / feed / side, landing / feed / side)
    print(f"wrote the feeds' files in {time.perf_counter() - started:.0f} s\n")


def stage_feeds(work: Path, landing: Path, lake: Path, cdc: list, env: dict, project: Path) -> int:
    """Land and stage the base files feed by feed, printing each feed's figures; return records."""
    print("staging, feed by feed (cdc stage: worker processes, all cores)")
    staged_records = 0
    for feed, fmt in FEEDS.items():
        land(work / "src" / "base" / feed, landing / feed)
        files = [p for p in (landing / feed).rglob("*") if p.is_file()]
        size = sum(p.stat().st_size for p in files)
        wall, peak, _out = run_step(cdc + ["stage"], env, project)
        records = sum(m["rows"] + m["rejects"] for m in manifest_rows(lake) if m["feed"] == feed)
        staged_records += records
        print(
            f"  {fmt:20s} {len(files):5d} files {size / 1e6:8.1f} MB {records:10,d} records "
            f"{wall:7.1f} s  {records / wall:9,.0f} rec/s ({records / wall / CORES:8,.0f} per core)  "
            f"{size / 1e6 / wall:6.2f} MB/s  peak {peak / 2**30:.1f} GiB"
        )
    return staged_records


def measure(args: argparse.Namespace, events: int, work: Path) -> dict[str, tuple]:
    """Run every step over one history of ``events`` changes in ``work``; return
    {step: (dbt seconds or None, wall seconds, peak RSS bytes)} and print the figures."""
    project, landing, lake = work / "project", work / "landing", work / "lake"
    if args.reuse_staged:
        if (
            not (lake / "raw" / "raw_ingested_files").is_dir()
            or (work / "increment_landed").exists()
        ):
            raise SystemExit(f"--reuse-staged: no staged run to reuse in {work}; run without it")
        doomed = (
            "project",
            "lake/warehouse",
            "lake/metastore_db",
            "lake/_scratch",
            "lake/cdc_state",
        )
    else:
        doomed = ("project", "landing", "lake", "src", "increment_landed")
    for name in doomed:
        path = work / name
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    tables_per_feed = getattr(args, "tables_per_feed", None)
    if tables_per_feed is None:
        make_project(work)  # the dbt project copy the end-to-end tests use, in work/project
    else:  # the catalog of the simulated tables, and their typed models (as cdc scaffold does)
        make_project(work, demo_feeds_yaml(), seeds=catalog_rows(FEEDS, tables_per_feed))
        # the demo's own typed models describe the same model names (its feeds, its tables):
        # dbt refuses a second description even of a disabled model, so the copy drops them
        shutil.rmtree(work / "project" / "models" / "marts" / "tables" / "demo")
        write_typed_models(load_project(work / "project", check_paths=False))
    env = cli_env(landing, lake)
    cdc = [sys.executable, "-m", "python_udfs.cli", "--project-dir", str(project)]
    print(f"=== history of {events:,} events, new batch of {args.batch:,} ({work})")
    if args.reuse_staged:
        staged_records = sum(m["rows"] + m["rejects"] for m in manifest_rows(lake))
        print(f"reusing {staged_records:,} staged records of an earlier run in {work}\n")
    else:
        write_feeds(events, args.batch, args.keys, work, project, landing, tables_per_feed)
        staged_records = stage_feeds(work, landing, lake, cdc, env, project)
    steps: dict[str, tuple] = {}
    applies: dict[str, dict[str, float]] = {}

    def dbt_step(step: str, *options: str) -> None:
        wall, peak, out = run_step(cdc + ["run", *options], env, project)
        if "dbt build skipped" in out:
            steps[step] = (None, wall, peak)
            return
        seconds, models, tests = dbt_times(project)
        # each step's run_results.json stays in the work folder, for per-node times
        shutil.copy(
            project / "target" / "run_results.json",
            work / f"run_results_{step.replace(' ', '_').replace(',', '')}.json",
        )
        steps[step] = (seconds, wall, peak)
        applies[step] = apply_seconds(project)
        print(
            f"{step}: dbt {seconds:.1f} s (models {models:.1f} s, tests {tests:.1f} s); "
            f"cdc run wall {wall:.1f} s, peak {peak / 2**30:.1f} GiB"
        )

    dbt = Path(sys.executable).parent / "dbt"
    wall, peak, _out = run_step(
        [str(dbt), "parse", "--no-partial-parse", "--project-dir", str(project)],
        {**env, "DBT_PROFILES_DIR": str(project)},
        project,
    )
    steps["dbt parse"] = (wall, wall, peak)
    print(f"dbt parse: {wall:.1f} s wall")
    dbt_step("full dbt build")
    script = work / "baseline.py"
    script.write_text(BASELINE, encoding="utf-8")
    wall, peak, out = run_step(
        [sys.executable, str(script), str(lake), str(project)],
        env,
        REPO,
    )
    baseline_seconds, baseline_rows = (float(x) for x in out.split("BASELINE ")[1].split()[:2])
    steps["baseline (a) PySpark plan"] = (baseline_seconds, wall, peak)
    print(f"baseline (a): {baseline_seconds:.1f} s ({int(baseline_rows):,} live rows)")
    land(work / "src" / "increment", landing)
    (work / "increment_landed").touch()  # the staged state is no longer the base alone
    dbt_step("run with the new batch")
    dbt_step("no-op run")
    if getattr(args, "forced", True):
        dbt_step("no-op run, forced", "--force")

    full = steps["full dbt build"][0]
    print(
        f"\n{'step':28s} {'dbt s':>8s} {'wall s':>8s} {'peak GiB':>9s} {'÷ baseline':>11s} {'÷ full':>7s}"
    )
    for step, (seconds, wall, peak) in steps.items():
        shown = seconds if seconds is not None else 0.0
        label = f"{shown:8.1f}" if seconds is not None else f"{'skipped':>8s}"
        print(
            f"{step:28s} {label} {wall:8.1f} {peak / 2**30:9.1f} "
            f"{(seconds or wall) / baseline_seconds:11.2f} {(seconds or wall) / full:7.2f}"
        )
    print("\napply models alone (seconds):")
    for step, seconds in applies.items():
        parts = ", ".join(f"{name} {value:.1f}" for name, value in seconds.items())
        print(f"  {step:28s} {sum(seconds.values()):7.1f} s  ({parts})")
    print(f"\n{staged_records:,} records staged\n")
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--histories",
        default="500000,5000000",
        help="comma-separated history sizes in change events, all feeds",
    )
    parser.add_argument("--batch", type=int, default=50_000, help="new change events, all feeds")
    parser.add_argument("--keys", type=int, default=200_000, help="primary keys, all feeds")
    parser.add_argument("--workdir", type=Path, help="keep files here (default: a temp folder)")
    parser.add_argument(
        "--reuse-staged",
        action="store_true",
        help="start at the full build, reusing the files and raw tables staged by an earlier run "
        "in --workdir that stopped before its new batch (dbt tables are dropped)",
    )
    args = parser.parse_args()
    histories = [int(x) for x in args.histories.split(",")]
    root = args.workdir or Path(tempfile.mkdtemp(prefix="cdc_bench_"))
    results = {events: measure(args, events, root / f"history_{events}") for events in histories}
    if len(histories) > 1:
        small, large = min(histories), max(histories)
        print(f"cost of the history: each run at {large:,} events ÷ the same run at {small:,}")
        for step in ("run with the new batch", "no-op run", "no-op run, forced"):
            (s_dbt, s_wall, _), (l_dbt, l_wall, _) = results[small][step], results[large][step]
            ratio = f"dbt {l_dbt / s_dbt:.2f}, " if s_dbt and l_dbt else ""
            print(f"  {step:28s} {ratio}wall {l_wall / s_wall:.2f}")


if __name__ == "__main__":
    main()
