"""Catalog benchmark: the cost of a run per catalog table (issue 12; not part of the test suite).

Runs ``apply_scale.measure`` twice over the same workload (default 50,000 change events over
20,000 keys, all five feed formats, and a new batch of 1 %; with more keys than events per feed
the history would be full loads alone): once with the three simulated
tables per feed (15 tables), once with 100 per feed (500 tables: copies of the three,
``simulator.database.tables_for``), each with its catalog seeds and its typed models as
``cdc scaffold`` writes them. It prints, per catalog, ``dbt parse`` (a full parse), the full build, the run
with the new batch and the no-op run (build skipped), then the cost of each per added table:
(500-table figure - 15-table figure) / 485, in seconds.

    .venv/bin/python benchmarks/catalog_scale.py [--events 50000] [--batch 500]
        [--keys 20000] [--tables 3,100] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import apply_scale  # noqa: E402

STEPS = ("dbt parse", "full dbt build", "run with the new batch", "no-op run")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=50_000, help="history, all feeds")
    parser.add_argument("--batch", type=int, default=500, help="new change events, all feeds")
    parser.add_argument("--keys", type=int, default=20_000, help="primary keys, all feeds")
    parser.add_argument(
        "--tables", default="3,100", help="comma-separated tables per feed (two counts)"
    )
    parser.add_argument("--workdir", type=Path, help="keep files here (default: a temp folder)")
    args = parser.parse_args()
    args.reuse_staged, args.forced = False, False
    counts = [int(x) for x in args.tables.split(",")]
    root = args.workdir or Path(tempfile.mkdtemp(prefix="cdc_catalog_"))
    results = {}
    for count in counts:
        args.tables_per_feed = count
        tables = count * len(apply_scale.FEEDS)
        print(f"##### catalog of {tables} tables ({count} per feed)")
        results[tables] = apply_scale.measure(args, args.events, root / f"tables_{tables}")
    small, large = min(results), max(results)
    print(
        f"\ncost per catalog table: ({large}-table figure - {small}-table figure) / {large - small}"
    )
    print(f"{'step':28s} {small:>7d} t s {large:>7d} t s {'s per table':>12s}")
    for step in STEPS:
        (s_dbt, s_wall, _), (l_dbt, l_wall, _) = results[small][step], results[large][step]
        for label, a, b in (("dbt", s_dbt, l_dbt), ("wall", s_wall, l_wall)):
            if a is None or b is None:
                continue
            name = f"{step} ({label})"
            print(f"{name:28s} {a:9.1f} {b:11.1f} {(b - a) / (large - small):12.3f}")


if __name__ == "__main__":
    main()
