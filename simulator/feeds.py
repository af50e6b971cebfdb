"""Write a simulation in any feed format: the one entry point of the sample-feed simulator.

:func:`write_feed` writes the workload as one product would have written it; each format's
writer lives in its own module of this package (``simulator.<format>``), the inverse of the
decoder of the same name in ``python_udfs``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from simulator.database import SimTable, Simulation, tables_for
from simulator.goldengate_trail import write_trails
from simulator.hirdb_update_sql import write_sqltxt
from simulator.linkexpress_extract import write_extracts
from simulator.qlik_change_tables import write_change_tables
from simulator.qlik_kafka import write_kafka


def write_feed(
    sim: Simulation,
    fmt: str,
    folder: Path,
    options: Mapping[str, Any] | None = None,
    tables: tuple[SimTable, ...] | None = None,
) -> int:
    """Write the simulation in feed format ``fmt`` under ``folder``; return the file count.

    ``tables`` are the tables the simulation ran over (default :func:`tables_for` the format).
    """
    folder.mkdir(parents=True, exist_ok=True)
    tables = tables or tables_for(fmt)
    if fmt == "qlik_change_tables":
        return write_change_tables(sim, folder, tables)
    if fmt == "qlik_kafka":
        return write_kafka(sim, folder, tables)
    if fmt == "goldengate_trail":
        return write_trails(sim, tables, folder, options)
    if fmt == "hirdb_update_sql":
        return write_sqltxt(sim, folder, options)
    if fmt == "linkexpress_extract":
        return write_extracts(sim, folder, options, tables)
    raise ValueError(f"the simulator does not write {fmt!r} yet")
