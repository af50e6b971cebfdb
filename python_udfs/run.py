"""``cdc stage`` and ``cdc run``: a staging batch, then ``dbt build`` in the same Spark session.

The build is the whole project, the data models only, or nothing, as the build state says
(ADR 0009); after it, the summary of what the lake holds.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from python_udfs.config import (
    ProjectConfig,
)
from python_udfs.scaffold import TYPED_MODELS_DIR
from python_udfs.sql_console import rich_console
from python_udfs.workers import stop_worker_server

#: The tag of the self-checks (ADR 0015): data tests that only a defect of this project or a
#: damaged lake can fail (unique on ids the project makes, two models that must agree, the
#: mask macros' vectors), as opposed to the data tests of what the feeds deliver.
SELF_CHECK_TAG = "cdc_self_check"


#: dbt node selection of a run with new data and the project as last built (ADR 0009): every
#: table and incremental model and every data test, without the seeds and views (they hold no
#: data: the last build created them from the same files). The self-checks are left out too
#: (ADR 0015) unless ``cdc run --self-checks``: the last whole build ran them.
DATA_ONLY_SELECTION = [
    "--select",
    "resource_type:test",
    "config.materialized:table",
    "config.materialized:incremental",
    "--exclude",
    f"path:{TYPED_MODELS_DIR.as_posix()},config.materialized:view",
]
#: Extra dbt arguments (after ``--``) whose successful build is recorded as a whole build
#: (ADR 0009): a full refresh selects every node and rebuilds every table, so the next plain
#: run with nothing new is skipped and one with new data only is a data-only build. Any other
#: argument (a selection, another target) leaves no record: the next run builds everything.
WHOLE_BUILD_ARGS = frozenset({"--full-refresh"})


def export_roots(config: ProjectConfig) -> None:
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


def stage(config: ProjectConfig, log=print, detail=None):
    """Run one staging batch for ``config``; returns the :class:`StageSummary`.

    Staging starts no JVM: it takes the lake's lock (:func:`~python_udfs.spark.lock_lake`,
    which raises ConfigError while another ``cdc`` process holds it) and decodes in worker
    processes on a local master (ADR 0031). ``detail`` prints the one line per file (default:
    ``log``). The summary's ``seconds`` is the wall time of the staging itself.
    """
    from python_udfs.spark import lock_lake
    from python_udfs.staging import Stager

    lock_lake(config.lake_root)
    started = time.monotonic()
    summary = Stager(None, config, log, detail).stage()
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

    export_roots(config)
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
            console=rich_console(),
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


#: The modules ``dbt build`` loads in this process: its runner and the adapter's plugin.
DBT_MODULES = ("dbt.cli.main", "dbt.adapters.spark")


def import_dbt_in_background() -> None:
    """Import :data:`DBT_MODULES` in a daemon thread, and return at once.

    A fresh ``cdc run`` otherwise imports them when the build starts (about 1.4 s). Started
    once staging is done and a build will follow, the import runs while this process waits for
    the JVM; a run with nothing new skips the build and imports nothing. Python's import locks
    make :func:`dbt_build`'s own import wait for a module still loading. An error is left to
    that import, which raises it; in the thread it is dropped. Modules already loaded (``cdc
    run --every`` after its first run) cost nothing.
    """
    import importlib
    import threading

    def load() -> None:
        try:
            for name in DBT_MODULES:
                importlib.import_module(name)
        except Exception:  # noqa: BLE001, S110 - dbt_build's own import raises it
            pass

    if not all(name in sys.modules for name in DBT_MODULES):
        threading.Thread(target=load, name="cdc-import-dbt", daemon=True).start()


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
    keep_workers: bool = False,
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
    ours. A successful build is recorded for the next run to compare with, unless ``dbt_args``
    narrow or change it: ``--full-refresh`` alone (:data:`WHOLE_BUILD_ARGS`) rebuilds every
    node, as a whole build does, so it is recorded too. A run killed during a data-only build
    leaves the project's fingerprint, so the run after it is data-only too; a failed build
    leaves none, so the build after it is a whole one. dbt unit tests (SQL logic on mocked
    rows, not data) run only with ``unit_tests``, as dbt recommends for production runs;
    ``make test`` runs them.

    The staging workers' server stops once staging is done, unless ``keep_workers`` (``cdc run
    --every``, whose next batch forks from it again): the build does not carry its memory
    (:func:`~python_udfs.workers.stop_worker_server`).
    """
    from python_udfs import build_state, working_set
    from python_udfs.spark import lock_lake, start_spark_in_background

    export_roots(config)
    lock_lake(config.lake_root)  # before the JVM and the staging workers start
    # the JVM starts (and opens the metastore) while staging decodes in its worker processes
    starting = start_spark_in_background(config.lake_root)
    summary = stage(config, log, None if verbose else (lambda _text: None))
    if not keep_workers:
        stop_worker_server()
    project = build_state.project_fingerprint(config.project_dir, extra_vars)
    fingerprint = build_state.build_fingerprint(config.project_dir, config.lake_root, extra_vars)
    # a plain `cdc run`: only then may the build be skipped or narrowed to the data
    plain = not force and not dbt_args and not unit_tests
    skipped = plain and fingerprint == build_state.last_build(config.lake_root)
    if not skipped:
        import_dbt_in_background()  # while the JVM finishes starting
    spark = starting.result()
    if skipped:
        log(
            "nothing new since the last successful build: dbt build skipped (cdc run --force builds)"
        )
        return summary, True, False
    data_only = plain and project == build_state.last_project(config.lake_root)
    # a run killed during a data-only build leaves the project's record: the next run builds
    # the data only, as this one would have (a failed build forgets it, below)
    build_state.forget_build(config.lake_root, keep_project=data_only)
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
    schema = os.environ.get("CDC_DBT_SCHEMA", "cdc")
    rows = working_set.compute_working_set(spark, config, schema, "--full-refresh" in args)
    os.environ[working_set.ENV_VAR] = working_set.to_env(rows)
    watermark = working_set.state_watermark(spark, schema, "--full-refresh" in args)
    if watermark is None:
        os.environ.pop(working_set.WATERMARK_ENV_VAR, None)
    else:
        os.environ[working_set.WATERMARK_ENV_VAR] = watermark
    ok = dbt_build(config, extra_vars, args, log, verbose)
    if ok and set(dbt_args or ()) <= WHOLE_BUILD_ARGS:
        build_state.record_build(config.lake_root, fingerprint, project, summary.ingest_batch_id)
    elif not ok:
        build_state.forget_build(config.lake_root)  # the next build is a whole one
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
        keep_workers=args.every is not None,
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
    console = rich_console()
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


#: The figures of the summary, per feed, from the marts: ``(mart, measure)``.
SUMMARY_MEASURES = (
    ("ingested_files", "count(distinct source_file)"),
    ("change_log", "count(*)"),
    ("pending_changes", "count(*)"),
    ("current_state", "count(distinct source_schema, source_table)"),
    ("current_state", "count(*)"),
    ("history", "count(*)"),
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
