"""What registering a run's new batch costs as a lake's batches pile up (issue 45; not a test).

Every ``cdc run`` stages its files as a new ingest batch, a partition ``ingest_batch_id=<id>``
of each raw table, which the on-run-start hook ``register_raw_tables`` registers in the
metastore. A lake that ``cdc run --every`` feeds gets a batch per run: thousands within days.
For each batch count, this script writes a raw-like table of that many partitions (one small
parquet file each) under a scratch lake, registers it, and times, each three times in a warm
engine:

- ``MSCK REPAIR TABLE``, which lists every partition folder and compares it with the
  metastore (what the hook ran in every run before);
- ``ALTER TABLE ... ADD IF NOT EXISTS PARTITION`` of one new batch (what the hook runs now
  for each batch of the run's working set).

    .venv/bin/python benchmarks/raw_partitions.py [--batches 10,100,1000] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from python_udfs.spark import get_spark  # noqa: E402


def timed(spark, sql: str, repeat: int = 3) -> list[float]:
    """Run ``sql`` ``repeat`` times; return the wall seconds of each run."""
    seconds = []
    for _ in range(repeat):
        started = time.perf_counter()
        spark.sql(sql).collect()
        seconds.append(time.perf_counter() - started)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", default="10,100,1000")
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="cdc_raw_partitions_"))
    shutil.rmtree(work, ignore_errors=True)
    spark = get_spark(work / "lake")
    print("batches  msck repair s (3 runs)      add one partition s (3 runs)")
    for count in (int(n) for n in args.batches.split(",")):
        table = work / "raw" / f"raw_{count}"
        for i in range(count):
            folder = table / f"ingest_batch_id=20260101T{i:06d}000000"
            folder.mkdir(parents=True)
            pq.write_table(pa.table({"record_index": [i]}), folder / "part-0.parquet")
        spark.sql(f"create table raw_{count} using parquet location '{table}'")
        spark.sql(f"msck repair table raw_{count}").collect()  # the first registration
        msck = timed(spark, f"msck repair table raw_{count}")
        adds = []
        for i in range(3):
            folder = table / f"ingest_batch_id=20270101T{i:06d}000000"
            folder.mkdir(parents=True)
            pq.write_table(pa.table({"record_index": [i]}), folder / "part-0.parquet")
            adds += timed(
                spark,
                f"alter table raw_{count} add if not exists partition "
                f"(ingest_batch_id = '20270101T{i:06d}000000')",
                repeat=1,
            )
        print(
            f"{count:7d}  {'  '.join(f'{s:6.2f}' for s in msck)}      "
            f"{'  '.join(f'{s:6.2f}' for s in adds)}",
            flush=True,
        )
    spark.stop()
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
