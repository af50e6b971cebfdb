"""The ``cdc`` command: stage landing files, run dbt in the same Spark session, demo, scaffold.

``cdc stage``     decode new landing files into the raw tables (one ingest batch).
``cdc run``       ``stage``, then ``dbt build`` in this process and SparkSession; with
                  ``--every SECONDS`` it stays running and runs again SECONDS after each run, in
                  the same SparkSession: a JVM already warm, about half the time of a fresh
                  process for a small batch (README, "Keeping the engine warm").
``cdc demo``      simulate a source database, write files of all five feed formats into the
                  project's landing root, run on its lake, and print a summary.
``cdc restage``   decode the open rejects again (after declaring a table) in a new batch.
``cdc scaffold``  write the tables that feeds' own metadata declares (``raw_metadata``) into
                  the catalog seeds and generate typed model files per catalog table.
``cdc thrift-server``  start a Spark Thrift Server on loopback against the project's lake (the
                  cluster path: ``dbt build --target thrift``); runs until stopped.
``cdc sql``       run one Spark SQL query on the embedded engine and print the rows (a table,
                  or JSON lines with ``--json``): views such as ``cdc.history`` included.

Exit status: 0 on success (rejected records included: they are counted, not fatal), 1 when
``dbt build`` fails (with ``--every``: the last run's), 2 for a configuration error (one
message naming the file and the fix), 130 when stopped with Ctrl-C.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import csv
import hashlib
import json
import os
import re
import shutil
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from python_udfs.config import (
    CDC_COLUMNS_HEADER,
    CDC_TABLES_HEADER,
    ConfigError,
    ProjectConfig,
    load_project,
)

TYPED_MODELS_DIR = Path("models") / "marts" / "tables"
#: The demo's typed models (of seeds/demo/), enabled while ``vars.cdc_demo`` is true.
DEMO_TYPED_MODELS_DIR = TYPED_MODELS_DIR / "demo"
#: The YAML file of the typed models in TYPED_MODELS_DIR, and of those in DEMO_TYPED_MODELS_DIR.
TYPED_MODELS_YML = "_tables__models.yml"
DEMO_TYPED_MODELS_YML = "_demo__models.yml"

#: The tag of the self-checks (ADR 0015): data tests that only a defect of this project or a
#: damaged lake can fail (unique on ids the project makes, two models that must agree, the
#: mask macros' vectors), as opposed to the data tests of what the feeds deliver.
SELF_CHECK_TAG = "cdc_self_check"

#: dbt node selection of a run with new data and the project as last built (ADR 0009): every
#: table and incremental model and every data test, without the seeds and views (they hold no
#: data: the last build created them from the same files). The typed views' own tests go with
#: them: their rows are current_state's, whose tests run. The self-checks are left out too
#: (ADR 0015) unless ``cdc run --self-checks``: the last whole build ran them.
DATA_ONLY_SELECTION = [
    "--select",
    "resource_type:test",
    "config.materialized:table",
    "config.materialized:incremental",
    "--exclude",
    f"path:{TYPED_MODELS_DIR.as_posix()},config.materialized:view",
]


def _console():
    from rich.console import Console

    # Not a terminal (a log, CI): wide enough for the summary table, not rich's 80 columns.
    width = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 120
    return Console(highlight=False, soft_wrap=True, width=width)


def _parse_vars(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        import yaml

        value = yaml.safe_load(text)
    if not isinstance(value, dict):
        raise ConfigError(f"--vars {text!r}: must be a JSON or YAML mapping.")
    return value


def _export_roots(config: ProjectConfig) -> None:
    """Expose the resolved roots to dbt (profiles.yml and macros read these variables)."""
    os.environ["CDC_LAKE_ROOT"] = str(config.lake_root)
    os.environ["CDC_LANDING_ROOT"] = str(config.landing_root)


def _export_table_folders(config: ProjectConfig) -> None:
    """Expose the table folders under ``<lake root>/warehouse`` to the dbt build about to start.

    ``CDC_WAREHOUSE_FOLDERS`` lists them as ``<schema>.<table>``, comma-separated: macro
    ``cdc_clear_orphan_table_folders`` clears the folders of tables missing from the catalog
    (left by a run killed inside CREATE TABLE AS SELECT), and with this list it leaves alone
    the tables that have no folder, such as every table of a first run.
    """
    warehouse = config.lake_root / "warehouse"
    folders = (
        f"{schema.name[: -len('.db')]}.{table.name}"
        for schema in (warehouse.iterdir() if warehouse.is_dir() else ())
        if schema.name.endswith(".db") and schema.is_dir()
        for table in schema.iterdir()
        if table.is_dir()
    )
    os.environ["CDC_WAREHOUSE_FOLDERS"] = ",".join(sorted(folders))


def stage(config: ProjectConfig, spark=None, log=print, detail=None):
    """Run one staging batch for ``config``; returns the :class:`StageSummary`.

    ``detail`` prints the one line per file (default: ``log``). The summary's ``seconds`` is the
    wall time of the staging itself (a SparkSession started here not included).
    """
    from python_udfs.spark import get_spark
    from python_udfs.staging import Stager

    spark = spark or get_spark(config.lake_root)
    started = time.monotonic()
    summary = Stager(spark, config, log, detail).stage()
    summary.seconds = time.monotonic() - started
    return summary


def dbt_build(
    config: ProjectConfig,
    extra_vars: dict[str, Any],
    args: list[str] | None = None,
    log=print,
    verbose: bool = False,
) -> bool:
    """Run ``dbt build`` (target from ``CDC_DBT_TARGET``, default ``local``) in this process.

    The session target reuses the SparkSession created by staging. dbt's own log goes to
    ``<project>/logs/dbt.log``; on the terminal dbt prints only errors (``--quiet``) and this
    function prints one line of counts and one line per test that warned or failed (``WARN 2
    <test>``), unless ``verbose`` brings back dbt's whole output. Colours only on a terminal.
    Returns True on success.
    """
    from dbt.cli.main import dbtRunner

    _export_roots(config)
    _export_table_folders(config)
    cli_args = [
        "build",
        "--project-dir",
        str(config.project_dir),
        "--profiles-dir",
        str(config.project_dir),
        "--target",
        os.environ.get("CDC_DBT_TARGET", "local"),
    ]
    if not sys.stdout.isatty():
        cli_args.append("--no-use-colors")
    if not verbose:
        cli_args.append("--quiet")
    if extra_vars:
        cli_args += ["--vars", json.dumps(extra_vars)]
    progress = BuildProgress() if sys.stdout.isatty() and not verbose else None
    with progress or contextlib.nullcontext():
        runner = dbtRunner(callbacks=[progress.on_event] if progress else [])
        result = runner.invoke(cli_args + list(args or []))
    report_build(result, config.project_dir, log)
    return bool(result.success)


class BuildProgress:
    """A one-line, transient progress display of a ``dbt build`` on a terminal (rich).

    Shows the nodes finished so far and the node last started, with the time elapsed; it
    disappears when the build ends, leaving :func:`report_build`'s line. Fed by dbt's event
    callbacks (``NodeStart``, ``NodeFinished``), which dbt calls from its worker threads.
    """

    def __init__(self) -> None:
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.done = 0
        self.running = ""
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=_console(),
            transient=True,
        )
        self.task = self.progress.add_task("dbt build: starting", total=None)

    def __enter__(self) -> BuildProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.stop()

    def on_event(self, event) -> None:
        """Count finished nodes and name the one started last (a dbt event callback)."""
        name = event.info.name
        if name == "NodeStart":
            self.running = event.data.node_info.node_name
        elif name == "NodeFinished":
            self.done += 1
        else:
            return
        self.progress.update(
            self.task,
            description=f"dbt build: {self.done} node(s) done, running {self.running}",
        )


def report_build(result, project_dir: Path, log=print) -> None:
    """Print what one ``dbt build`` did (``result``: a ``dbtRunnerResult``).

    One line of counts by status, then each test that warned or failed and each node in
    error, with the first line of dbt's message.
    """
    nodes = getattr(result.result, "results", None)
    if nodes is None:  # dbt stopped before building (a parse error): its exception says why
        log(f"dbt build did not run: {result.exception}")
        return
    counts = collections.Counter(str(getattr(r.status, "value", r.status)) for r in nodes)
    built = counts["success"]
    tests = sum(counts[k] for k in ("pass", "warn", "fail"))
    log(
        f"dbt build: {built} node(s) built, {tests} test(s) run: {counts['pass']} passed, "
        f"{counts['warn']} warned, {counts['fail']} failed; {counts['error']} error(s), "
        f"{counts['skipped']} skipped (dbt's log: {project_dir / 'logs' / 'dbt.log'})"
    )
    for r in nodes:
        status = str(getattr(r.status, "value", r.status))
        if status in ("warn", "fail"):
            log(f"  {status.upper()} {r.failures} {r.node.name}")
        elif status == "error":
            first = (r.message or "").strip().splitlines()[:1]
            log(f"  ERROR {r.node.name}: {first[0] if first else ''}")


def run(
    config: ProjectConfig,
    extra_vars: dict[str, Any],
    dbt_args: list[str] | None = None,
    log=print,
    *,
    force: bool = False,
    unit_tests: bool = False,
    self_checks: bool = False,
    verbose: bool = False,
):
    """Stage, then ``dbt build`` in the same SparkSession. Returns ``(summary, dbt_ok, built)``.

    Before the build, the run's working set (:mod:`python_udfs.working_set`) is decided once
    and passed to dbt in ``CDC_WORKING_SET``. ``verbose`` prints one line per staged file and
    dbt's whole output (:func:`dbt_build`).

    What the build does depends on what changed since the last successful build
    (:mod:`python_udfs.build_state`, ADR 0009):

    - nothing (no new batch, the same project): ``dbt build`` is skipped, the marts are already
      what a build would write;
    - new data only (the same project files, vars and target): ``dbt build`` with
      :data:`DATA_ONLY_SELECTION`, every table, incremental model and data test, but not the
      seeds and views, which hold no data and are as the last build created them, nor the
      self-checks (tag :data:`SELF_CHECK_TAG`, ADR 0015) unless ``self_checks``;
    - the project: the whole ``dbt build``, self-checks included.

    ``force`` builds everything anyway; extra ``dbt_args`` always build, with no selection of
    ours. dbt unit tests (SQL logic on mocked rows, not data) run only with ``unit_tests``, as
    dbt recommends for production runs; ``make test`` runs them.
    """
    from python_udfs import build_state, working_set
    from python_udfs.spark import get_spark, open_metastore_in_background

    _export_roots(config)
    spark = get_spark(config.lake_root)
    open_metastore_in_background(spark)  # dbt's first catalog query finds it open, or waits
    summary = stage(config, spark, log, None if verbose else (lambda _text: None))
    project = build_state.project_fingerprint(config.project_dir, extra_vars)
    fingerprint = build_state.build_fingerprint(config.project_dir, config.lake_root, extra_vars)
    # a plain `cdc run`: only then may the build be skipped or narrowed to the data
    plain = not force and not dbt_args and not unit_tests
    if plain and fingerprint == build_state.last_build(config.lake_root):
        log(
            "nothing new since the last successful build: dbt build skipped (cdc run --force builds)"
        )
        return summary, True, False
    data_only = plain and project == build_state.last_project(config.lake_root)
    build_state.forget_build(config.lake_root)
    args = list(dbt_args or [])
    if not unit_tests:
        args += ["--exclude-resource-type", "unit_test"]
    if data_only:
        args += DATA_ONLY_SELECTION
        if self_checks:
            log("new data only, the project as last built: seeds and views are left as they are")
        else:
            args.append(f"tag:{SELF_CHECK_TAG}")  # one more --exclude selector
            log(
                "new data only, the project as last built: seeds, views and self-checks are left "
                "as they are (cdc run --self-checks runs the self-checks)"
            )
    # the working set is decided here, once, and passed in (ADR 0020)
    rows = working_set.compute_working_set(
        spark, config, os.environ.get("CDC_DBT_SCHEMA", "cdc"), "--full-refresh" in args
    )
    os.environ[working_set.ENV_VAR] = working_set.to_env(rows)
    ok = dbt_build(config, extra_vars, args, log, verbose)
    if ok and not dbt_args:
        build_state.record_build(config.lake_root, fingerprint, project, summary.ingest_batch_id)
    return summary, ok, True


def run_and_report(config: ProjectConfig, extra_vars: dict[str, Any], args, log=print) -> bool:
    """One ``cdc run`` with the parsed command-line ``args``: :func:`run`, then what it built.

    Prints the lake's summary after a build (:func:`print_summary`), or the staging time when
    the build was skipped. Returns True when staging and the build succeeded.
    """
    started = time.monotonic()
    dbt_args = [a for a in (args.dbt_args or []) if a != "--"]
    summary, ok, built = run(
        config,
        extra_vars,
        dbt_args,
        log,
        force=args.force,
        unit_tests=args.unit_tests,
        self_checks=args.self_checks,
        verbose=args.verbose,
    )
    if dbt_args:
        log("dbt build ran with your arguments: marts it did not select are as before")
    if ok and built:
        print_summary(config, summary, time.monotonic() - started)
    elif ok:  # the marts are as the last build left them: no need to count them again
        log(f"staged in {summary.seconds:.1f} s, elapsed {time.monotonic() - started:.1f} s")
    return ok


def print_summary(config: ProjectConfig, summary, elapsed: float) -> None:
    """Print what the lake holds after a run, per feed (counted from the built marts).

    Then what this run's batch did, the typed views and a query to try next.
    """
    from rich.table import Table

    from python_udfs.spark import get_spark

    spark = get_spark(config.lake_root)
    schema = os.environ.get("CDC_DBT_SCHEMA", "cdc")
    table = Table(title="cdc_changelog: what the lake holds now (all batches)")
    for col in (
        "feed",
        "files",
        "changes",
        "pending",
        "tables",
        "live rows",
        "versions",
        "open rejects",
    ):
        table.add_column(col, justify="right" if col != "feed" else "left")
    for feed, *figures in summary_rows(spark, schema, list(config.feeds)):
        table.add_row(feed, *(str(f) for f in figures))
    console = _console()
    console.print(table)
    console.print(
        f"this run: batch {summary.ingest_batch_id}, {summary.files_ingested} file(s) ingested, "
        f"{summary.files_skipped} unchanged, {len(summary.files_refused)} refused, "
        f"{sum(summary.rejects.values())} new reject(s); staged in {summary.seconds:.1f} s, "
        f"elapsed {elapsed:.1f} s",
        markup=False,
    )
    views = typed_views(spark, schema)
    current = [v for v in views if not v.endswith("__history")]
    if current:
        console.print(
            f"{len(current)} typed current-state views (and their __history views, SCD type 2) "
            f"in schema {schema}, for example {schema}.{current[0]}; try:",
            markup=False,
        )
        console.print(f'  cdc sql "select * from {schema}.{current[0]} limit 5"', markup=False)


#: The figures of the summary, per feed, from the marts: ``(mart, measure)``. The history's
#: versions are the sum of int_key_state's per-key ``version_count`` (one row per key), which
#: equals ``count(*)`` of the history mart (tested against it) without that view's window over
#: every version: 4 to 9 s of each run at 1 M versions, and most of the summary's time.
SUMMARY_MEASURES = (
    ("ingested_files", "count(distinct source_file)"),
    ("change_log", "count(*)"),
    ("pending_changes", "count(*)"),
    ("current_state", "count(distinct source_schema, source_table)"),
    ("current_state", "count(*)"),
    ("int_key_state", "sum(version_count)"),
    ("ingest_rejects", "count_if(restaged_batch_id is null)"),
)


def summary_rows(spark, schema: str, feeds: list[str]) -> list[tuple]:
    """Count the summary's figures per feed from the marts in ``schema``.

    One tuple per feed: ``(feed, files, changes, pending, tables, live rows, versions, open
    rejects)``. One query (a ``union all`` of the per-mart counts), so one Spark job.
    """
    query = "\nunion all\n".join(
        f"select {i} as measure, feed, {measure} as figure from {schema}.{mart} group by feed"
        for i, (mart, measure) in enumerate(SUMMARY_MEASURES)
    )
    counts: list[dict[str, int]] = [{} for _ in SUMMARY_MEASURES]
    for measure, feed, figure in spark.sql(query).collect():
        counts[measure][feed] = figure
    return [(feed, *(d.get(feed, 0) for d in counts)) for feed in feeds]


def typed_views(spark, schema: str) -> list[str]:
    """List the typed per-table models in ``schema``, without dbt's temporary relations.

    Names are ``<feed>__<schema>__<table>`` and their ``__history`` views.
    """
    names = [r.tableName for r in spark.sql(f"show tables in {schema}").collect()]
    return sorted(
        n
        for n in names
        if "__" in n and not n.startswith(("stg_", "int_")) and not n.endswith("__dbt_tmp")
    )


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


def scaffold(config: ProjectConfig, log=print) -> int:
    """Add tables from ``raw_metadata`` to the seeds and write missing typed model files.

    Existing seed rows are kept (hand edits win); tables declared by a ``.dfm`` or MD message
    but not yet in the seeds are appended with Spark types mapped from the vendor types. Then
    every table of ``cdc_tables.csv`` gets its typed model files (:func:`typed_model_name`) if
    it has none, and ``_tables__models.yml`` is rewritten.

    Everything is checked before anything is written: the new seeds are read back with
    :func:`python_udfs.config.load_catalog` from a scratch folder and every file is rendered
    in memory; a :class:`ConfigError` leaves the project as it was. Idempotent: a second
    scaffold of the same metadata adds nothing and writes the same files.
    """
    import tempfile

    from python_udfs.config import load_catalog
    from python_udfs.spark import get_spark
    from python_udfs.staging import Stager

    spark = get_spark(config.lake_root)
    stager = Stager(spark, config, log)
    stager.ensure_tables()
    seeds = config.project_dir / "seeds"
    columns_path, tables_path = seeds / "cdc_columns.csv", seeds / "cdc_tables.csv"
    rows = stager.metadata_rows(stager.committed_batches())
    feed_formats = {name: feed.format for name, feed in config.feeds.items()}
    # the project's own seed tables (not the demo's), whose columns scaffold may extend
    own_catalog = (
        load_catalog(seeds, config.feeds)[0]
        if columns_path.exists() and tables_path.exists()
        else {}
    )
    own_columns = {
        key: {c.column_name: c.ordinal for c in cols} for key, cols in own_catalog.items()
    }
    new_columns, new_tables, skipped = scaffold_rows(
        rows, set(config.catalog), feed_formats, own_columns
    )
    for line in skipped:
        log(f"  skipped {line}")
    for column in new_columns:
        key = (column["feed"], column["source_schema"], column["source_table"])
        if key in own_columns:
            log(
                f"  column {column['column_name']!r} added to {key[0]} "
                f"{key[1]!r}.{key[2]!r} (its feed's metadata has it)"
            )
    seed_texts = {
        columns_path: _appended_csv(columns_path, CDC_COLUMNS_HEADER, new_columns),
        tables_path: _appended_csv(tables_path, CDC_TABLES_HEADER, new_tables),
    }
    with tempfile.TemporaryDirectory() as scratch:
        for path, text in seed_texts.items():
            (Path(scratch) / path.name).write_text(text, encoding="utf-8")
        catalog, spark_types, _ = load_catalog(Path(scratch), config.feeds)
    files = typed_model_files(catalog, spark_types)
    for path, text in seed_texts.items():
        _replace_text(path, text)
    written = _write_typed_files(config.project_dir, files)
    log(f"seeds: {len(new_tables)} table(s), {len(new_columns)} column(s) added")
    log(f"models: {written} typed model file(s) written under {TYPED_MODELS_DIR}")
    return 0


def scaffold_rows(
    rows: list[dict[str, Any]],
    known: set[tuple[str, str, str]],
    feed_formats: Mapping[str, str] | None = None,
    own_columns: Mapping[tuple[str, str, str], Mapping[str, int]] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """Turn ``raw_metadata`` rows into new catalog seed rows: ``(columns, tables, skipped)``.

    Tables already in the catalog (``known``: ``(feed, schema, table)``) keep their rows. A
    known table of the project's own seeds (``own_columns``: its ``{column: ordinal}``) gets the
    columns its latest metadata has and the seeds lack (source DDL, issue 46), after its last
    ordinal, as non-key columns; a known table of other seeds (the demo's) gets none.
    The latest table version of each new table gives its columns, in ordinal order, with Spark
    types from the ``spark_type_for`` of the feed's format (``feed_formats``: feed → format;
    ``string`` for a feed not named there or a format without one). Names are kept as the feed spells them (quotes,
    newlines and braces included). A table with a name :func:`python_udfs.config.unsafe_name_reason`
    refuses (empty, a NUL character, too long) is skipped whole, before anything is appended,
    with one line in ``skipped`` naming it and why;
    so is a table whose columns cannot all be typed-view columns
    (:func:`python_udfs.config.table_columns_problem`).
    """
    from python_udfs.config import table_columns_problem, unsafe_name_reason
    from python_udfs.registry import FORMATS

    def spark_type(feed: str, column: Mapping[str, Any]) -> str:
        fmt = FORMATS.get((feed_formats or {}).get(feed, ""))
        if fmt is None or fmt.spark_type_for is None:
            return "string"
        return fmt.spark_type_for(column["source_type"], column["precision"], column["scale"])

    own_columns = own_columns or {}
    latest: dict[tuple[str, str, str], dict[str, dict]] = {}
    for r in sorted(rows, key=lambda r: (r["table_version"] or 0, r["ingest_batch_id"])):
        key = (r["feed"], r["source_schema"], r["source_table"])
        if (key in known and key not in own_columns) or r["column_name"].startswith("header__"):
            continue
        latest.setdefault(key, {})[r["column_name"]] = r
    new_columns, new_tables, skipped = [], [], []
    for key in sorted(set(latest) & set(own_columns)):
        seeded = own_columns[key]
        added = sorted(
            (c for name, c in latest.pop(key).items() if name not in seeded),
            key=lambda c: c["ordinal"],
        )
        problems = [(c["column_name"], unsafe_name_reason(c["column_name"])) for c in added]
        if any(reason for _name, reason in problems):
            name, reason = next(p for p in problems if p[1])
            skipped.append(f"{key[0]} column {name[:80]!r} {reason}; add it to the seeds by hand")
            continue
        after = max(seeded.values(), default=0)
        for i, c in enumerate(added, start=after + 1):
            new_columns.append(_seed_column(key, c, i, spark_type(key[0], c), key_position=0))
    for key, cols in sorted(latest.items()):
        names = [("schema", key[1]), ("table", key[2])] + [("column", c) for c in cols]
        problems = [(kind, name, unsafe_name_reason(name)) for kind, name in names]
        problems = [p for p in problems if p[2]]
        problem = (
            f"{problems[0][0]} {problems[0][1][:80]!r} {problems[0][2]}"
            if problems
            else table_columns_problem(list(cols))
        )
        if problem:
            skipped.append(
                f"{key[0]} {key[1][:80]!r}.{key[2][:80]!r}: {problem}; declare the table in "
                "the seeds by hand"
            )
            continue
        ordered = sorted(cols.values(), key=lambda c: c["ordinal"])
        for i, c in enumerate(ordered, start=1):
            new_columns.append(_seed_column(key, c, i, spark_type(key[0], c)))
        new_tables.append(
            {
                "feed": key[0],
                "source_schema": key[1],
                "source_table": key[2],
                "table_identifier": "",
            }
        )
    return new_columns, new_tables, skipped


def _seed_column(
    key: tuple[str, str, str],
    column: Mapping[str, Any],
    ordinal: int,
    spark_type: str,
    key_position: int | None = None,
) -> dict[str, Any]:
    """One ``cdc_columns.csv`` row of table ``key`` from a ``raw_metadata`` row.

    ``key_position`` overrides the metadata's ``primary_key_position`` (0: not a key column).
    """

    def text(value: Any) -> Any:
        return value if value is not None else ""

    return {
        "feed": key[0],
        "source_schema": key[1],
        "source_table": key[2],
        "column_name": column["column_name"],
        "ordinal": ordinal,
        "source_type": column["source_type"],
        "length": text(column["length"]),
        "precision": text(column["precision"]),
        "scale": text(column["scale"]),
        "primary_key_position": (
            key_position if key_position is not None else column["primary_key_position"] or 0
        ),
        "nullable": str(bool(column["nullable"])).lower()
        if column["nullable"] is not None
        else "true",
        "spark_type": spark_type,
    }


#: Columns of a typed history model after the catalog columns (documented in _marts__docs.md).
HISTORY_COLUMNS = (
    "valid_from",
    "valid_to",
    "valid_from_position",
    "valid_to_position",
    "opened_by_operation",
    "closed_by_operation",
    "is_current",
    "is_deleted",
)


def typed_model_name(feed: str, schema: str, table: str) -> str:
    """Return the typed model name of a catalog table: ``<feed>__<schema>__<table>`` in lower case.

    A dbt model, file and Spark relation name: when the lower-case name holds anything but
    ASCII letters, digits and underscores, or is over 80 characters, each such character
    becomes ``_``, the name is cut to 60 characters and ``_`` plus the first 8 hex digits of
    the MD5 of the three names (as JSON) is added, so two tables never share a name. The
    names as the feed spells them stay in the catalog and the model's description.
    """
    name = f"{feed}__{schema}__{table}".lower()
    if re.fullmatch(r"[a-z0-9_]{1,80}", name):
        return name
    digest = hashlib.md5(json.dumps([feed, schema, table]).encode()).hexdigest()[:8]
    return f"{re.sub(r'[^a-z0-9_]', '_', name)[:60]}_{digest}"


def jinja_text(text: str) -> str:
    """Return ``text`` so that dbt's Jinja rendering of a YAML value or a description yields it.

    Text without ``{`` is returned as it is; otherwise it becomes one Jinja expression holding
    it as a string literal (``{{ "..." }}``), so ``{{ 7*7 }}`` in a name is shown, not run.
    """
    if "{" not in text:
        return text
    return "{{ " + json.dumps(text, ensure_ascii=False) + " }}"


def typed_model_files(
    catalog: dict[tuple[str, str, str], list],
    spark_types: dict[tuple[str, str, str], dict],
    models_yml: str = TYPED_MODELS_YML,
    demo: bool = False,
) -> dict[str, str]:
    """Return the typed model files of a catalog: file name under TYPED_MODELS_DIR → text.

    Per table (``(feed, schema, table)`` → catalog columns) a current-state and a history
    view (``<name>.sql``, ``<name>__history.sql``, :func:`typed_model_name`), plus
    ``models_yml`` documenting every model and column. Both are views (on ``current_state``
    and ``history``): they hold no data, so a run with new data only leaves them as they are
    (ADR 0009), whatever the number of tables. The demo's typed models (in
    DEMO_TYPED_MODELS_DIR) are these files of the demo catalog with DEMO_TYPED_MODELS_YML and
    ``demo``: each is enabled by ``var('cdc_demo')`` (dbt_project.yml cannot read its own
    vars). Names reach the model files as Jinja string literals (JSON-escaped) and the YAML
    through :func:`jinja_text`: a quote, newline or ``{{ }}`` in a name is carried, never
    rendered.
    """
    import yaml

    files: dict[str, str] = {}
    docs = []
    for (feed, schema, table), columns in sorted(catalog.items()):
        types = spark_types[(feed, schema, table)]
        keys = sorted(
            (c for c in columns if c.primary_key_position), key=lambda c: c.primary_key_position
        )
        key_text = jinja_text(", ".join(c.column_name for c in keys) or "none declared")
        where = f"{jinja_text(schema)}.{jinja_text(table)} from feed {feed}"
        column_docs = [
            {
                "name": jinja_text(c.column_name.lower()),
                "description": (
                    f"{jinja_text(c.column_name)}: source type {c.source_type}"
                    + (f"({c.precision},{c.scale})" if c.precision else "")
                    + f", as {types[c.column_name]}"
                    + (
                        f"; primary key position {c.primary_key_position}"
                        if c.primary_key_position
                        else ""
                    )
                    + ("" if c.nullable else "; not null at the source")
                    + "."
                ),
            }
            for c in columns
        ]
        name = typed_model_name(feed, schema, table)
        docs.append(
            {
                "name": name,
                "description": (
                    f"Current state of {where} (a view on `current_state`): one row per live "
                    "key, columns cast from canonical text to the catalog's Spark types. "
                    f"Primary key: {key_text}."
                ),
                "columns": [
                    {
                        "name": "primary_key",
                        "description": "{{ doc('primary_key') }}",
                        "data_tests": ["unique", "not_null"],
                    },
                    *column_docs,
                    {
                        "name": "last_change_position",
                        "description": "Position of the change that opened the row's current version.",
                    },
                    {
                        "name": "last_committed_at",
                        "description": "Commit time (UTC) of the change that opened the row's current version.",
                    },
                ],
            }
        )
        docs.append(
            {
                "name": f"{name}__history",
                "description": (
                    f"SCD type 2 history of {where} (a view on `history`): one row per version "
                    "of a key, columns cast to the catalog's Spark types. "
                    f"Primary key: {key_text}."
                ),
                "columns": [
                    {"name": "version_id", "description": "{{ doc('version_id') }}"},
                    {"name": "primary_key", "description": "{{ doc('primary_key') }}"},
                    *column_docs,
                    *[
                        {"name": column, "description": f"{{{{ doc('{column}') }}}}"}
                        for column in HISTORY_COLUMNS
                    ],
                ],
            }
        )
        arguments = ", ".join(json.dumps(n, ensure_ascii=False) for n in (feed, schema, table))
        enabled = ", enabled=var('cdc_demo', false)" if demo else ""
        for suffix, macro in (("", "cdc_typed_current_state"), ("__history", "cdc_typed_history")):
            files[f"{name}{suffix}.sql"] = (
                f"{{{{ config(materialized='view'{enabled}) }}}}\n"
                + f"{{{{ {macro}({arguments}) }}}}\n"
            )
    files[models_yml] = (
        "# Generated by `cdc scaffold` from the catalog seeds; edits are overwritten.\n"
        + yaml.safe_dump(
            {"version": 2, "models": docs}, sort_keys=False, allow_unicode=True, width=100
        )
    )
    return files


def write_typed_models(config: ProjectConfig) -> int:
    """Write the typed model files of ``config``'s catalog (:func:`typed_model_files`).

    The demo's tables are left out (their models are in DEMO_TYPED_MODELS_DIR). Model files
    that exist are kept (hand edits win); ``_tables__models.yml`` is rewritten. Returns how
    many model files were written.
    """
    own = {k: v for k, v in config.catalog.items() if k[0] not in config.demo_feeds}
    return _write_typed_files(config.project_dir, typed_model_files(own, config.spark_types))


def _write_typed_files(project_dir: Path, files: dict[str, str]) -> int:
    """Write typed model ``files`` under the project's TYPED_MODELS_DIR; return the SQL count.

    A model file that exists is kept (hand edits win); the YAML file is always rewritten.
    """
    folder = project_dir / TYPED_MODELS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    written = 0
    for name, text in files.items():
        path = folder / name
        if name.endswith(".sql") and path.exists():
            continue
        _replace_text(path, text)
        written += name.endswith(".sql")
    return written


def sql(config: ProjectConfig, query: str, as_json: bool) -> int:
    """Run one Spark SQL query against the project's lake and print its rows; return 0.

    With ``as_json``, one JSON object per row on stdout (maps as objects, timestamps and
    decimals as text) and nothing else. Otherwise a table on a terminal, and tab-separated
    lines (:func:`tab_separated`) when stdout is a pipe or a file. A query Spark refuses (a
    syntax error, a table that is not there) prints one line with Spark's error class and
    message on stderr and returns 1; on a lake with no built marts the line says so.
    """
    import logging

    from pyspark.errors import PySparkException

    from python_udfs.spark import get_spark

    logging.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)  # the line below says it
    spark = get_spark(config.lake_root)
    try:
        result = spark.sql(query)
        columns, rows = result.columns, result.collect()
    except PySparkException as exc:
        first = str(exc).strip().splitlines()[0]
        schema = os.environ.get("CDC_DBT_SCHEMA", "cdc")
        if not spark.catalog.databaseExists(schema):
            first += (
                f" (the lake {config.lake_root} has no schema {schema} yet: `cdc run` stages "
                "the landing files and builds it; `make demo` builds a demo lake)"
            )
        print(f"cdc sql: {first}", file=sys.stderr)
        return 1
    if as_json:
        for row in rows:
            print(json.dumps(row.asDict(recursive=True), default=str, ensure_ascii=False))
        return 0
    print_rows(columns, [tuple(row) for row in rows], f"{len(rows)} row(s)")
    return 0


def print_rows(columns: list[str], rows: list[tuple], title: str) -> None:
    """Print rows as a table titled ``title`` on a terminal, else as tab-separated lines.

    Tab-separated lines (:func:`tab_separated`) are the form a pipe or a file wants.
    """
    if not sys.stdout.isatty():
        sys.stdout.write(tab_separated(columns, rows))
        return
    from rich.table import Table

    table = Table(title=title)
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*(_text(v) for v in row))
    _console().print(table, markup=False)


def list_rejects(config: ProjectConfig, feed: str | None = None) -> int:
    """Print the open rejects of the lake (of ``feed`` when given); return 0.

    One line each with feed, file, byte offset and length, reason and message, read from the
    raw tables (so right after ``cdc stage``, before any dbt run); a table on a terminal,
    tab-separated lines otherwise (:func:`tab_separated`).
    """
    from python_udfs.spark import get_spark
    from python_udfs.staging import Stager

    stager = Stager(get_spark(config.lake_root), config)
    stager.ensure_tables()
    columns = ["feed", "source_file", "record_offset", "record_length", "reason", "message"]
    rows = [
        tuple(getattr(r, c) for c in columns)
        for r in stager.open_reject_rows()
        if feed is None or r.feed == feed
    ]
    print_rows(columns, rows, f"{len(rows)} open reject(s)")
    return 0


def _text(value: Any) -> str:
    """One value as text: NULL for None; maps, structs and arrays as JSON (other values as text)."""
    if value is None:
        return "NULL"
    if hasattr(value, "asDict"):  # a struct (pyspark Row)
        value = value.asDict(recursive=True)
    if isinstance(value, dict | list | tuple):
        return json.dumps(value, default=str, ensure_ascii=False)
    return str(value)


def tab_separated(columns: list[str], rows: list[tuple]) -> str:
    r"""Format rows for ``cdc sql`` on a pipe or a file: tab-separated lines.

    A header line of column names, then one line per row, fields separated by tabs (what ``cut``,
    ``sort`` and ``psql -A`` users expect). NULL is written ``NULL``; maps, structs and arrays as
    JSON; a tab, newline, carriage return or backslash inside a value as ``\t``, ``\n``,
    ``\r``, ``\\``, so that every row stays on one line. Returns the text, ending with a
    newline.
    """

    def field(value: Any) -> str:
        text = _text(value)
        return (
            text.replace("\\", "\\\\")
            .replace("\t", "\\t")
            .replace("\n", "\\n")
            .replace("\r", "\\r")
        )

    lines = ["\t".join(columns)] + ["\t".join(field(v) for v in row) for row in rows]
    return "\n".join(lines) + "\n"


def _appended_csv(path: Path, header: list[str], rows: list[dict]) -> str:
    """Return the text of the CSV file ``path`` with ``rows`` appended (csv quoting)."""
    import io

    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if not text:
        text = ",".join(header) + "\n"
    elif not text.endswith("\n"):
        text += "\n"
    out = io.StringIO()
    csv.DictWriter(out, fieldnames=header, lineterminator="\n").writerows(rows)
    return text + out.getvalue()


def _replace_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a scratch file and a rename (never half a file)."""
    scratch = path.with_name(f".{path.name}.tmp")
    scratch.write_text(text, encoding="utf-8")
    os.replace(scratch, path)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``cdc`` console script."""
    parser = argparse.ArgumentParser(prog="cdc", description=__doc__.split("\n\n")[0])
    parser.add_argument("--project-dir", type=Path, default=Path.cwd(), help="dbt project folder")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in (
        ("stage", "decode new landing files into raw tables"),
        ("run", "stage, then dbt build in the same Spark session"),
        ("demo", "simulate feeds, run, print a summary"),
        ("scaffold", "write catalog seeds and typed model files from feed metadata"),
        ("restage", "decode the open rejects again (after declaring a table), in a new batch"),
        ("rejects", "list the open rejects (file, offset, reason), from the raw tables"),
        ("sql", "run one Spark SQL query on the embedded engine and print its rows"),
        ("thrift-server", "start a Spark Thrift Server on loopback against the lake"),
    ):
        p = sub.add_parser(name, help=text)
        p.add_argument("--vars", help="dbt vars override (JSON or YAML mapping)")
        if name == "demo":
            p.add_argument("--seed", type=int, default=7, help="simulator random seed")
        if name in ("demo", "run"):
            p.add_argument(
                "--verbose",
                action="store_true",
                help="print one line per staged file and dbt's whole output (else logs/dbt.log)",
            )
        if name == "thrift-server":
            p.add_argument("--port", type=int, default=10001, help="port (default 10001)")
            p.add_argument("--host", default="127.0.0.1", help="bind address (default loopback)")
        if name == "rejects":
            p.add_argument("--feed", help="only this feed")
        if name == "restage":
            p.add_argument("--feed", help="only files of this feed")
            p.add_argument("--reason", help="only files with an open reject of this reason code")
        if name == "sql":
            p.add_argument("query", help="the query, e.g. 'select * from cdc.history limit 20'")
            p.add_argument("--json", action="store_true", help="print one JSON object per row")
        if name == "run":
            p.add_argument(
                "--force",
                action="store_true",
                help="run dbt build even when nothing changed since the last successful build",
            )
            p.add_argument(
                "--unit-tests",
                action="store_true",
                help="also run the dbt unit tests (SQL logic on mocked rows)",
            )
            p.add_argument(
                "--self-checks",
                action="store_true",
                help="also run the self-checks (tag cdc_self_check) when only data is new",
            )
            p.add_argument(
                "--every",
                type=float,
                metavar="SECONDS",
                help="stay running: after each run wait SECONDS, then run again, in the same "
                "Spark session (Ctrl-C stops it)",
            )
            p.add_argument(
                "--runs",
                type=int,
                metavar="N",
                help="with --every: stop after N runs (default: until stopped)",
            )
            p.add_argument(
                "dbt_args", nargs=argparse.REMAINDER, help="extra dbt build arguments after --"
            )
    args = parser.parse_args(argv)
    if args.command == "run" and args.every is not None and args.every < 0:
        parser.error("--every: give the seconds to wait between runs, 0 or more")
    if args.command == "run" and args.runs is not None and (args.every is None or args.runs < 1):
        parser.error("--runs N needs --every SECONDS and N of 1 or more")
    project_dir = args.project_dir.resolve()
    console = _console()

    def log(text: str) -> None:
        # file, table and feed names are text, never rich markup ("[ingested]" stays)
        console.print(text, markup=False)

    try:
        if args.command == "demo":
            return demo(project_dir, args.seed, log, args.verbose)
        extra = _parse_vars(args.vars)
        config = load_project(
            project_dir, extra, check_paths=args.command in ("stage", "run", "restage")
        )
        _export_roots(config)
        if args.command == "sql":
            return sql(config, args.query, args.json)
        if args.command == "thrift-server":
            from python_udfs.spark import java_executable, lock_lake, thrift_server_command

            java_executable()  # ConfigError with the fix when there is no Java
            lock_lake(config.lake_root, inheritable=True)  # held by the server after exec
            command = thrift_server_command(config.lake_root, args.port, args.host)
            log(f"Spark Thrift Server on {args.host}:{args.port}, lake {config.lake_root}")
            os.execv(command[0], command)  # replaces this process; stop it with Ctrl-C
        if args.command == "stage":
            stage(config, log=log)
            return 0
        if args.command == "rejects":
            return list_rejects(config, args.feed)
        if args.command == "restage":
            from python_udfs.spark import get_spark
            from python_udfs.staging import Stager

            summary = Stager(get_spark(config.lake_root), config, log).restage(
                args.feed, args.reason
            )
            rows, rejects = sum(summary.rows.values()), sum(summary.rejects.values())
            log(
                f"restaged {summary.files_ingested} file(s): {rows} record(s) landed, "
                f"{rejects} still rejected; `cdc run` applies them"
            )
            return 0
        if args.command == "run":
            runs = 0
            while True:
                ok = run_and_report(config, extra, args, log)
                runs += 1
                if args.every is None or (args.runs is not None and runs >= args.runs):
                    return 0 if ok else 1
                log(f"run {runs} {'done' if ok else 'failed'}; next run in {args.every:g} s")
                time.sleep(args.every)
                # the catalog seeds and vars may have changed: read them again, as a new
                # process would (a mistake there stops the loop with its message)
                config = load_project(project_dir, extra, check_paths=True)
        return scaffold(config, log)
    except ConfigError as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: during a run, the next run takes up what it left
        log("stopped (Ctrl-C)")
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
