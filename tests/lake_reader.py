"""A second process that reads a lake while `cdc run` works on it (issue 44, ADR 0018).

``python -m tests.lake_reader LAKE OUT STOP``: waits until a process holds the lake and serves
its metastore (``python_udfs.spark.held_metastore_port``; it takes no lock), opens one reader session (``python_udfs.spark.reader_session``)
and queries ``current_state`` and ``history`` in a loop until the file STOP exists, appending one
JSON line per round to OUT: the row count and an order-free checksum of ``current_state``, the
row count of ``history``, or the error a query raised.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

#: current_state's row count and checksum (the sum of a hash of each row: order-free).
STATE_QUERY = (
    "select count(*) as n, coalesce(sum(xxhash64(current_state_id, to_json(row))), 0) as h"
    " from cdc.current_state"
)
HISTORY_QUERY = "select count(*) as n from cdc.history"


def main(lake: Path, out: Path, stop: Path) -> None:
    """Read ``lake`` in a loop until ``stop`` exists; one JSON line per round to ``out``."""
    from python_udfs.spark import held_metastore_port, reader_session

    while (port := held_metastore_port(lake)) is None:  # the run has not opened it yet
        time.sleep(0.2)
    spark = reader_session(lake, port)
    with out.open("a", encoding="utf-8") as log:
        while not stop.exists():
            try:
                state = spark.sql(STATE_QUERY).collect()[0]
                history = spark.sql(HISTORY_QUERY).collect()[0]
                line = {"n": state["n"], "h": state["h"], "history": history["n"]}
            except Exception as exc:  # noqa: BLE001 - every error is what the test counts
                line = {"error": str(exc).strip().splitlines()[0]}
            log.write(json.dumps(line) + "\n")
            log.flush()


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
