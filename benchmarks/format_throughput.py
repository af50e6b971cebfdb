"""Throughput of every feed format, decoder alone and through ``cdc stage`` (issue 15; not a test).

The sample-feed simulator writes ``--records`` change records per feed format (default
1,000,000; the five demo feeds, files of a production feed's size as ``apply_scale.py`` writes
them). Then, per format:

1. the decoder alone on one core, over every file, as one Spark task runs it (the format's
   ``decode`` from the registry, with the decoder context staging builds): records/s and MB/s.
   Every format's fast path (:data:`FAST_PATHS`) and its per-record reference path are timed
   in the same run;
2. ``cdc stage`` of the same files (worker processes on all cores, ADR 0031; the manifest and
   the raw-table writes included): records/s, records/s per core and MB/s, the median of
   ``--stage-runs`` runs (default 3), each on the lake as it was before.

``--profile N`` decodes each format's files once more under ``cProfile`` (not timed: the
profiler slows Python calls several times) and prints the N functions with the most time of
their own, which is where a format's decoding time goes.

    .venv/bin/python benchmarks/format_throughput.py [--records 1000000] [--workdir DIR]
        [--formats qlik_change_tables,goldengate_trail] [--stage-runs 3] [--profile 12]
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import io
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from python_udfs.config import load_project
from python_udfs.registry import FORMATS
from python_udfs.staging import Stager, decode_candidate, list_landing_files

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.apply_scale import CORES, FEEDS, land, manifest_rows, write_feeds  # noqa: E402
from tests.spark_project import cli_env, make_project  # noqa: E402

#: The formats whose decoder has a fast path beside its per-record reference (issue 47), and
#: what the fast path does. ``cdc stage`` takes the fast path.
FAST_PATHS = {
    "qlik_change_tables": "by column",
    "goldengate_trail": "by column",
    "linkexpress_extract": "by column",
    "hirdb_update_sql": "by column, one pattern per statement shape",
    "qlik_kafka": "by column (pyarrow.json or orjson; Avro by numpy)",
}


def decoder_alone(
    config, feed: str, folder: Path, reference: bool = True
) -> list[tuple[str, int, int, float]]:
    """Decode every file of ``folder`` on this core; ``[(path label, records, rejects, s)]``.

    ``reference`` also times the per-record reference path where a faster one sits beside it.
    """
    spec = FORMATS[config.feeds[feed].format]
    files = list(list_landing_files(folder, spec.name))
    scanned = []  # the metadata pass (Kafka MD messages) is a pass of its own: not timed
    if spec.scan_metadata is not None:
        for path in files:
            scanned += [(c, feed) for c in spec.scan_metadata(path.read_bytes(), path.name, 0)]
    feed_config = dataclasses.replace(config.feeds[feed], path=folder)
    stager = Stager(None, dataclasses.replace(config, feeds={feed: feed_config}))
    context = stager.contexts(scanned)[feed]
    fast = FAST_PATHS.get(spec.name)
    paths = [(f"fast: {fast}" if fast else "per record", True)] + (
        [("per record, the reference", False)] if reference and fast else []
    )
    out = []
    for label, columnar in paths:
        records = rejects = 0
        started = time.perf_counter()
        for path in files:
            result = decode_candidate(
                spec.name,
                path.read_bytes(),
                path.relative_to(config.landing_root).as_posix(),
                0,
                0,
                spec.sidecar(path),
                context,
                True,
                columnar=columnar,
            )
            records += len(result.rows) + (result.table.num_rows if result.table else 0)
            rejects += len(result.rejects)
        out.append((label, records, rejects, time.perf_counter() - started))
    return out


def stage_runs(args: list[str], env: dict, cwd: Path, lake: Path, runs: int) -> list[float]:
    """Time ``cdc stage`` (``args``) ``runs`` times, each on the lake as it was before the first.

    The wall time of one run varies by a tenth from run to run on a 2-core virtual machine (its
    page faults cost more or less), so a format's figure is the median of a few. The lake
    holds the formats staged before; a copy of it is put back before each run after the first.
    """
    before = lake.with_name(lake.name + "_before")
    shutil.rmtree(before, ignore_errors=True)
    if lake.exists():
        shutil.copytree(lake, before)
    walls = []
    for run in range(max(1, runs)):
        if run:
            shutil.rmtree(lake, ignore_errors=True)
            if before.exists():
                shutil.copytree(before, lake)
        walls.append(timed(args, env, cwd))
    shutil.rmtree(before, ignore_errors=True)
    return walls


def timed(args: list[str], env: dict, cwd: Path) -> float:
    """Run a command; return its wall seconds. Raises SystemExit with its output if it fails.

    No memory sampler runs beside it (``apply_scale.run_step`` polls ``/proc``): on a 2-core
    machine its polling would be timed with the command.
    """
    started = time.perf_counter()
    proc = subprocess.run(
        args, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args[:4])} failed ({proc.returncode}):\n{proc.stdout[-5000:]}")
    return time.perf_counter() - started


def profile(config, feed: str, folder: Path, top: int) -> str:
    """Decode ``folder``'s files once under cProfile; the ``top`` functions by their own time."""
    profiler = cProfile.Profile()
    profiler.enable()
    decoder_alone(config, feed, folder, reference=False)
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.strip_dirs().sort_stats("tottime").print_stats(top)
    return out.getvalue().strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000, help="change records per format")
    parser.add_argument("--keys", type=int, default=1_000_000, help="primary keys, all formats")
    parser.add_argument("--formats", default=",".join(FEEDS.values()))
    parser.add_argument("--workdir", type=Path, help="keep files here (default: a temp folder)")
    parser.add_argument(
        "--stage-runs",
        type=int,
        default=3,
        metavar="N",
        help="time cdc stage N times on the lake as it was before, print the median (default 3)",
    )
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="print each decoder's N hottest functions",
    )
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="cdc-formats-"))
    for name in ("project", "landing", "lake", "src", "increment_landed"):
        shutil.rmtree(work / name, ignore_errors=True)
    project, landing, lake = work / "project", work / "landing", work / "lake"
    make_project(work)
    # a little over --records per feed: the simulator's load rows and 1–4 changes a
    # transaction do not land on the figure exactly; the batch is written and not used
    write_feeds(int(args.records * 1.05) * len(FEEDS), 1000, args.keys, work, project, landing)
    env = cli_env(landing, lake)
    cdc = [sys.executable, "-m", "python_udfs.cli", "--project-dir", str(project)]
    wanted = args.formats.split(",")
    config = load_project(project, {"cdc_landing_root": str(landing)}, check_paths=False)
    print(
        f"{'format':22s} {'path':50s} {'files':>5s} {'MB':>8s} {'records':>10s} "
        f"{'s':>7s} {'records/s per core':>19s} {'MB/s per core':>14s}"
    )
    for feed, fmt in FEEDS.items():
        if fmt not in wanted:
            continue
        land(work / "src" / "base" / feed, landing / feed)
        files = list(list_landing_files(landing / feed, fmt))
        size = sum(p.stat().st_size for p in files) / 1e6
        walls = stage_runs(cdc + ["stage"], env, project, lake, args.stage_runs)
        wall = statistics.median(walls)
        for label, records, rejects, seconds in decoder_alone(config, feed, landing / feed):
            path = "decoder alone, one core" + (f" ({label})" if label else "")
            print(
                f"{fmt:22s} {path:50s} {len(files):5d} {size:8.1f} {records:10,d} {seconds:7.1f} "
                f"{records / seconds:19,.0f} {size / seconds:14.2f}"
                + (f"  {rejects} rejects" if rejects else ""),
                flush=True,
            )
        staged = sum(m["rows"] + m["rejects"] for m in manifest_rows(lake) if m["feed"] == feed)
        path = f"cdc stage, {CORES} cores"
        print(
            f"{fmt:22s} {path:50s} {len(files):5d} {size:8.1f} {staged:10,d} {wall:7.1f} "
            f"{staged / wall / CORES:19,.0f} {size / wall / CORES:14.2f}"
            + (
                f"  median of {len(walls)} runs ({min(walls):.1f}–{max(walls):.1f} s)"
                if len(walls) > 1
                else ""
            ),
            flush=True,
        )
        if args.profile:
            print(f"{fmt}: decoder alone under cProfile, by own time")
            print(profile(config, feed, landing / feed, args.profile), flush=True)


if __name__ == "__main__":
    main()
