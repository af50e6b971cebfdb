"""``cdc demo``: simulate a source database and run the pipeline on it.

It writes files of all five feed formats into the project's landing root, runs on its lake,
and prints a summary.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from python_udfs.config import (
    ConfigError,
    load_project,
)
from python_udfs.run import print_summary, run

#: The Japanese demo feeds' workload has a TRUNCATE (HiRDB PURGE TABLE, Linkexpress empty full
#: extract) every this many transactions.
DEMO_TRUNCATE_EVERY = 12


#: The file that marks a landing or lake folder as written by ``cdc demo`` (which may delete it).
DEMO_MARKER = ".cdc_demo"


def demo(project_dir: Path, seed: int, log=print, verbose: bool = False) -> int:
    """Simulate, write every demo feed's files, run staging + dbt build, print the summary.

    The demo writes to the project's own landing and lake roots (``landing/`` and ``lake/``
    unless ``CDC_LANDING_ROOT``/``CDC_LAKE_ROOT`` or the vars say otherwise), so every command
    run after it (``cdc sql``, ``cdc run``, ``dbt build``, ``make docs``) finds its lake. It
    starts over each time: it deletes both folders first, and therefore refuses (a
    :class:`ConfigError` naming the folder) when either holds files it did not write (no
    ``.cdc_demo`` marker). The Qlik and GoldenGate feeds replicate
    ``simulator.database.TABLES``; the HiRDB and Linkexpress feeds a source database of
    ``simulator.database.JP_TABLES`` with truncates.
    """
    from simulator.database import JP_FORMATS, JP_TABLES, simulate
    from simulator.feeds import write_feed

    started = time.monotonic()
    config = load_project(project_dir, check_paths=False)
    if not config.demo:
        raise ConfigError(
            f"{config.project_dir / 'dbt_project.yml'}: the demo is switched off "
            "(vars.cdc_demo: false). Set it to true to run the demo."
        )
    for root in (config.landing_root, config.lake_root):
        if root.is_dir() and any(root.iterdir()) and not (root / DEMO_MARKER).exists():
            raise ConfigError(
                f"{root}: holds files that cdc demo did not write, and the demo starts over "
                "by deleting it. Point CDC_LANDING_ROOT and CDC_LAKE_ROOT at other folders "
                "for the demo, or move the files away."
            )
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        (root / DEMO_MARKER).write_text("written by `cdc demo`, which deletes this folder\n")
    log(f"simulating a source database (seed {seed}) and writing feeds to {config.landing_root}")
    sims = {
        "default": simulate(seed=seed),
        "japanese": simulate(seed=seed, truncate_every=DEMO_TRUNCATE_EVERY, tables=JP_TABLES),
    }
    for feed in config.feeds.values():
        sim = sims["japanese" if feed.format in JP_FORMATS else "default"]
        written = write_feed(sim, feed.format, feed.path, feed.options)
        log(f"  {feed.name}: {written} file(s) written ({feed.format})")
    config = load_project(project_dir)
    summary, ok, _built = run(config, {}, log=log, verbose=verbose)
    if not ok:
        log("dbt build failed: see the lines above, and logs/dbt.log")
        return 1
    print_summary(config, summary, time.monotonic() - started)
    return 0
