"""GoldenGate trail decoder throughput on one core: records/s and MB/s (not part of the tests).

Simulates a workload, writes it as big-endian trails with a sourcedefs file (FieldComp pairs) and
as little-endian trails with TDR records (unified updates), then times the pure-Python decoder
over every file, as one Spark task runs it. Prints one line per trail style.

    .venv/bin/python benchmarks/goldengate_throughput.py [--rows 100000] [--transactions 300000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from python_udfs.goldengate_trail.decoder import decode_trail_file, parse_sourcedefs
from simulator.database import simulate
from simulator.feeds import write_feed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100000, help="full-load rows per table")
    parser.add_argument(
        "--transactions", type=int, default=300000, help="transactions after the load"
    )
    parser.add_argument("--records-per-file", type=int, default=250000)
    args = parser.parse_args()
    started = time.perf_counter()
    sim = simulate(seed=3, load_rows=args.rows, transactions=args.transactions)
    print(f"simulated {len(sim.changes):,} changes in {time.perf_counter() - started:.1f} s")
    styles = {
        "big-endian, sourcedefs, FieldComp": {"definitions": "dirdef/sim.def"},
        "little-endian, TDR, unified": {"byte_order": "little"},
    }
    with tempfile.TemporaryDirectory() as tmp:
        for label, options in styles.items():
            folder = Path(tmp) / label.split(",")[0]
            t0 = time.perf_counter()
            write_feed(
                sim,
                "goldengate_trail",
                folder,
                {**options, "records_per_file": args.records_per_file},
            )
            written = time.perf_counter() - t0
            defs = (
                parse_sourcedefs((folder / "dirdef" / "sim.def").read_text())[0]
                if options.get("definitions")
                else None
            )
            files = sorted(p for p in folder.iterdir() if p.is_file())
            size = sum(p.stat().st_size for p in files)
            rows = rejects = 0
            t0 = time.perf_counter()
            for path in files:
                result = decode_trail_file(
                    path.read_bytes(), file_name=path.name, definitions=defs, final=True
                )
                rows += len(result.rows)
                rejects += len(result.rejects)
            seconds = time.perf_counter() - t0
            print(
                f"{label:36s} {len(files)} files {size / 1e6:7.1f} MB {rows:10,d} records {rejects} rejects "
                f"(written in {written:.0f} s) decoded in {seconds:6.1f} s: {rows / seconds:8,.0f} records/s, "
                f"{size / 1e6 / seconds:5.2f} MB/s (one core)"
            )


if __name__ == "__main__":
    main()
