"""Decoder throughput on one core: records/s and MB/s per feed format (not part of the tests).

Writes a simulated workload with the sample-feed simulator, then times the pure-Python decoders
over every file, as one Spark task would run them. Prints one line per format.

    .venv/bin/python benchmarks/staging_throughput.py [--rows 20000] [--transactions 20000]
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
from pathlib import Path

from python_udfs.config import load_project
from python_udfs.registry import FORMATS
from python_udfs.staging import decode_candidate, list_landing_files
from simulator.database import simulate
from simulator.feeds import write_feed

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=20000, help="full-load rows per table")
    parser.add_argument(
        "--transactions", type=int, default=20000, help="transactions after the load"
    )
    args = parser.parse_args()
    started = time.perf_counter()
    sim = simulate(seed=1, load_rows=args.rows, transactions=args.transactions)
    print(f"simulated {len(sim.changes):,} changes in {time.perf_counter() - started:.1f} s")
    config = load_project(REPO, check_paths=False)
    with tempfile.TemporaryDirectory() as tmp:
        for fmt, feed in (
            ("qlik_change_tables", "qlik_ct_demo"),
            ("qlik_kafka", "qlik_kafka_demo"),
        ):
            folder = Path(tmp) / feed
            write_feed(sim, fmt, folder, {})
            spec = FORMATS[fmt]
            files = list(list_landing_files(folder, fmt))
            scanned = []  # the metadata pass over every file (Kafka MD messages), not timed
            if spec.scan_metadata is not None:
                for path in files:
                    scanned += spec.scan_metadata(path.read_bytes(), path.name, 0)
            feed_config = dataclasses.replace(config.feeds[feed], path=folder)
            context = {
                "options": dict(feed_config.options),
                "catalog": config.feed_catalog(feed),
            }
            context.update(spec.decoder_context(feed_config, config, context["catalog"], scanned))
            size = sum(p.stat().st_size for p in files)
            # the Qlik Parquet files decode column by column in staging; the per-record path
            # (the reference) is timed beside it
            for columnar in (False, True) if fmt == "qlik_change_tables" else (False,):
                rows = rejects = 0
                t0 = time.perf_counter()
                for path in files:
                    data = path.read_bytes()
                    sidecar = spec.sidecar(path)
                    name = path.relative_to(folder).as_posix()
                    result = decode_candidate(
                        fmt, data, name, 0, 0, sidecar, context, columnar=columnar
                    )
                    rows += len(result.rows) + (result.table.num_rows if result.table else 0)
                    rejects += len(result.rejects)
                seconds = time.perf_counter() - t0
                label = fmt + (" (Parquet files columnar)" if columnar else "")
                print(
                    f"{label:40s} {len(files):3d} files {size / 1e6:8.1f} MB {rows:9,d} records "
                    f"{rejects} rejects {seconds:7.2f} s  {rows / seconds:9,.0f} records/s  "
                    f"{size / 1e6 / seconds:6.2f} MB/s (one core)"
                )


if __name__ == "__main__":
    main()
