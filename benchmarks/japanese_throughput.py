"""HiRDB update-SQL and Linkexpress extract decoder throughput on one core (not part of the tests).

Simulates a workload over the Japanese tables (at least 1 million changes by default), writes it
as update-SQL files (Shift_JIS) and as Linkexpress extract files (group unit, layout D, LITTLE,
and table unit, layout A, NORMAL), then times the pure-Python decoders over every file, as one
Spark task runs them. Prints statements/s for HiRDB and records/s and MB/s for Linkexpress.

    .venv/bin/python benchmarks/japanese_throughput.py [--rows 100000] [--transactions 400000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from python_udfs.hirdb_update_sql.decoder import decode_update_sql_file
from python_udfs.linkexpress_extract.decoder import decode_extract_file, file_table_for
from simulator.database import JP_TABLES, seed_catalog, simulate
from simulator.feeds import write_feed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100000, help="full-load rows per table")
    parser.add_argument("--transactions", type=int, default=400000)
    args = parser.parse_args()
    t0 = time.perf_counter()
    sim = simulate(seed=3, load_rows=args.rows, transactions=args.transactions, tables=JP_TABLES)
    print(f"simulated {len(sim.changes):,} changes in {time.perf_counter() - t0:.1f} s")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "hirdb"
        write_feed(sim, "hirdb_update_sql", folder, {"files": 4, "encoding": "cp932"})
        cat, _ids = seed_catalog("hirdb_update_sql")
        time_decoder(
            "hirdb_update_sql (cp932)",
            "statements",
            folder,
            sorted(folder.iterdir()),
            lambda data, rel: decode_update_sql_file(data, file_name=rel, catalog=cat, final=True),
        )
        cat, ids = seed_catalog("linkexpress_extract")
        styles = {
            "group unit D, LITTLE, big-endian": {"unit": "group", "logtype": "little"},
            "table unit A, NORMAL, little-endian": {
                "unit": "table",
                "logtype": "normal",
                "byteswap": "yes",
            },
        }
        for label, options in styles.items():
            folder = Path(tmp) / label.split()[0]
            write_feed(sim, "linkexpress_extract", folder, {**options, "chunks": 8})
            time_decoder(
                f"linkexpress {label}",
                "records",
                folder,
                sorted(folder.rglob("*.dat")),
                lambda data, rel, unit=options["unit"]: decode_extract_file(
                    data,
                    file_name=rel,
                    catalog=cat,
                    extraction_ids=ids,
                    file_table=file_table_for(rel, {}, list(cat)),
                    options={"unit": unit},
                ),
            )


def time_decoder(label: str, unit: str, folder: Path, files: list[Path], decode) -> None:
    """Decode ``files`` one after another with ``decode(bytes, relative path)``; print the rate."""
    size = sum(p.stat().st_size for p in files)
    rows = rejects = 0
    t0 = time.perf_counter()
    for path in files:
        result = decode(path.read_bytes(), path.relative_to(folder).as_posix())
        rows += len(result.rows)
        rejects += len(result.rejects)
    seconds = time.perf_counter() - t0
    print(
        f"{label:48s} {len(files)} files {size / 1e6:7.1f} MB {rows:10,d} {unit} {rejects} "
        f"rejects, decoded in {seconds:6.1f} s: {rows / seconds:8,.0f} {unit}/s, "
        f"{size / 1e6 / seconds:5.2f} MB/s (one core)"
    )


if __name__ == "__main__":
    main()
