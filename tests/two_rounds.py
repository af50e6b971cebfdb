"""One project whose feeds land in two rounds, shared by every test that needs two rounds.

Each ``cdc run`` costs about a minute whatever its data (a JVM, dbt, some 70 nodes), so the
tests that land files in two rounds share one project and two runs instead of two runs each:
the apply scenarios (``test_apply_scenarios``), the HiRDB and Linkexpress rounds
(``test_end_to_end_japanese``), the little-endian trails and a Qlik feed with a table
declared without key columns and one missing from the catalog in round 1 (``test_end_to_end``)
and the restage of a table declared late (``test_restage``). Their feeds have their own names
and folders, so no feed sees another's files. Declaring the late tables changes the seeds
between the rounds, so round 2 builds the whole project (ADR 0009).

A contribution writes its feeds' complete files under ``src/<feed>`` and says what lands in
round 1; round 2 lands the rest: every file of ``src`` missing from the landing folder or with
other bytes there (a file cut in round 1 grows to its full length).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from simulator.database import catalog_rows
from tests import lake_reader
from tests.spark_project import (
    cdc,
    cli_env,
    delta_table,
    make_project,
    read_mart,
    write_seeds,
)

#: Data tests whose SQL, as round 1 ran it, is kept (``round1_tests``): round 2 overwrites
#: ``target/run``. Scoped to the run's keys, they check all history in a first run (macro
#: cdc_tests_check_all_history).
ROUND1_TESTS = ("history_replays_to_current_state",)

#: Marts read right after round 1, for the tests that check what round 1 left pending.
ROUND1_MARTS = (
    "pending_changes",
    "ingested_files",
    "ingest_rejects",
    "change_log",
    "current_state",
)


@dataclass
class Contribution:
    """Feeds of one test module: ``{feed: (format, decoder options)}``, the round-1 landing
    (``land_round1(src, landing)``) and whatever the module's tests expect."""

    feeds: dict[str, tuple[str, dict[str, Any]]]
    land_round1: Callable[[Path, Path], None]
    expected: Any = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: ``(feed, schema, table)`` left out of the seeds in round 1 and declared before round 2.
    undeclared: set[tuple[str, str, str]] = field(default_factory=set)
    #: ``(feed, schema, table)`` in no seed, in either round: its feed's metadata declares it.
    discovered: set[tuple[str, str, str]] = field(default_factory=set)
    #: ``(feed, schema, table)`` declared with no key column (every primary_key_position 0).
    keyless: set[tuple[str, str, str]] = field(default_factory=set)
    #: Run before round 2, after the undeclared tables are declared, as
    #: ``between_rounds(project, landing, lake)``; what it returns is ``extra["between_rounds"]``.
    between_rounds: Callable[[Path, Path, Path], Any] | None = None


def land_rest(src: Path, landing: Path) -> None:
    """Copy every file of ``src`` that ``landing`` lacks or holds with other bytes."""
    for path in sorted(p for p in src.rglob("*") if p.is_file()):
        target = landing / path.relative_to(src)
        if target.is_file() and target.read_bytes() == path.read_bytes():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)


def run(root: Path, prepares: dict[str, Callable[[Path], Contribution]]) -> SimpleNamespace:
    """Write every contribution's files, build the project, run round 1 and round 2.

    Returns ``project``, ``landing``, ``lake``, ``round1`` / ``round2`` (the completed ``cdc
    run`` processes),
    ``after_round1`` (:data:`ROUND1_MARTS` rows as round 1 left them),
    ``current_state_version`` (the Delta version of ``current_state`` round 1 committed),
    ``round1_tests`` (the SQL of :data:`ROUND1_TESTS` as round 1 ran it, by test name),
    ``history`` (every row of ``cdc.history`` after round 2, :func:`~tests.spark_project.read_mart`),
    ``reading`` (the rounds of a second process that read the lake while round 2 ran,
    :func:`tests.lake_reader.finish`), ``answers`` (the lake before and after round 2, as
    :func:`tests.lake_reader.delta_answer` reads it) and ``contributions`` by name.
    """
    src, landing, lake = root / "src", root / "landing", root / "lake"
    contributions = {name: prepare(src) for name, prepare in prepares.items()}
    feeds = {f: spec for c in contributions.values() for f, spec in c.feeds.items()}
    lines = ["  cdc_feeds:"]
    for feed, (fmt, options) in feeds.items():
        lines += [f"    {feed}:", f"      format: {fmt}", f"      path: {feed}", "      options:"]
        lines += [f"        {k}: {v}" for k, v in options.items()]
    seeds = catalog_rows({feed: fmt for feed, (fmt, _options) in feeds.items()})
    keyless = set().union(*(c.keyless for c in contributions.values()))
    for row in seeds[0]:
        if (row["feed"], row["source_schema"], row["source_table"]) in keyless:
            row["primary_key_position"] = 0
    undeclared = set().union(*(c.undeclared for c in contributions.values()))
    discovered = set().union(*(c.discovered for c in contributions.values()))

    def declared(rows, left_out):
        return [
            r for r in rows if (r["feed"], r["source_schema"], r["source_table"]) not in left_out
        ]

    project = make_project(
        root,
        "\n".join(lines) + "\n",
        seeds=tuple(declared(rows, undeclared | discovered) for rows in seeds),
    )
    for contribution in contributions.values():
        contribution.land_round1(src, landing)
    round1 = cdc(project, "run", landing=landing, lake=lake)
    after_round1 = {mart: read_mart(lake, mart) for mart in ROUND1_MARTS}
    current_state_version = delta_table(lake, "current_state").version()
    round1_tests = {
        path.stem: path.read_text(encoding="utf-8")
        for name in ROUND1_TESTS
        for path in (project / "target" / "run").rglob(f"{name}.sql")
    }
    if undeclared:
        write_seeds(project, *(declared(rows, discovered) for rows in seeds))
    for contribution in contributions.values():
        if contribution.between_rounds is not None:
            contribution.extra["between_rounds"] = contribution.between_rounds(
                project, landing, lake
            )
    land_rest(src, landing)
    # a second process reads current_state and history while round 2 applies (issue 73)
    answers = {"before round 2": lake_reader.delta_answer(lake)}
    reader = lake_reader.start(lake, root / "reader", cli_env(landing, lake))
    # the self-checks too (ADR 0015), scoped to what round 2 changed: the key changes, late
    # arrivals and resets that reach back into round 1's history are what they check
    try:
        round2 = cdc(project, "run", "--self-checks", landing=landing, lake=lake)
    finally:
        reading = lake_reader.finish(reader, root / "reader")
    answers["after round 2"] = lake_reader.delta_answer(lake)
    # read by path with delta-rs (no JVM of its own), as the other marts are
    history = read_mart(lake, "history")
    return SimpleNamespace(
        project=project,
        landing=landing,
        lake=lake,
        round1=round1,
        round2=round2,
        after_round1=after_round1,
        current_state_version=current_state_version,
        round1_tests=round1_tests,
        history=history,
        reading=reading,
        answers=answers,
        contributions=contributions,
    )
