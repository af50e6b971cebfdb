"""The ``cdc`` command: stage landing files, run dbt in the same Spark session, demo, scaffold.

``cdc stage``     decode new landing files into the raw tables (one ingest batch).
``cdc run``       ``stage``, then ``dbt build`` in this process and SparkSession; with
                  ``--every SECONDS`` it stays running and runs again SECONDS after each run, in
                  the same SparkSession: a JVM already warm, about half the time of a fresh
                  process for a small batch (docs/operations.md, "Keeping the engine warm").
``cdc demo``      simulate a source database, write files of all five feed formats into the
                  project's landing root, run on its lake, and print a summary.
``cdc restage``   decode the open rejects again (after declaring a table) in a new batch.
``cdc scaffold``  write the tables that feeds' own metadata declares (``raw_metadata``) into
                  the catalog seeds and generate typed model files per catalog table.
``cdc thrift-server``  start a Spark Thrift Server on loopback against the project's lake (the
                  cluster path: ``dbt build --target thrift``); runs until stopped.
``cdc sql``       run one Spark SQL query on the embedded engine and print the rows (a table,
                  or JSON lines with ``--json``): views such as ``cdc.history`` included.

The parser and dispatch are here; the commands live in :mod:`python_udfs.run` (stage, run),
:mod:`python_udfs.demo`, :mod:`python_udfs.scaffold` and :mod:`python_udfs.sql_console`
(sql, rejects).

Exit status: 0 on success (rejected records included: they are counted, not fatal), 1 when
``dbt build`` fails (with ``--every``: the last run's), 2 for a configuration error (one
message naming the file and the fix), 130 when stopped with Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from python_udfs.workers import configured_master, local_processes, start_worker_server

if TYPE_CHECKING:
    from python_udfs.config import ProjectConfig

# The commands' modules (the decoders, pyarrow, rich, dbt's) are imported by ``main`` once
# the command is known: ``cdc stage`` first starts its worker processes' server, which imports
# the decoders beside this process (python_udfs/workers.py).


def _parse_vars(text: str | None) -> dict[str, Any]:
    from python_udfs.config import ConfigError

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


def _parser() -> argparse.ArgumentParser:
    """Return the ``cdc`` argument parser: one subcommand per command, with its options."""
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
        ("sql", "run Spark SQL statements on the embedded engine and print their rows"),
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
            p.add_argument(
                "query",
                nargs="+",
                help="one or more statements, run in order in one session, each printed, "
                "e.g. 'select * from cdc.history limit 20'",
            )
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
    return parser


def _stage(config: ProjectConfig, log) -> int:
    """``cdc stage``: one staging batch (its files are reported as they are decoded)."""
    from python_udfs.run import stage

    stage(config, log=log)
    return 0


def _restage(config: ProjectConfig, args: argparse.Namespace, log) -> int:
    """``cdc restage``: decode the open rejects again in a new batch (``staging.Stager``)."""
    from python_udfs.spark import get_spark
    from python_udfs.staging import Stager

    summary = Stager(get_spark(config.lake_root), config, log).restage(args.feed, args.reason)
    rows, rejects = sum(summary.rows.values()), sum(summary.rejects.values())
    log(
        f"restaged {summary.files_ingested} file(s): {rows} record(s) landed, "
        f"{rejects} still rejected; `cdc run` applies them"
    )
    return 0


def _thrift_server(config: ProjectConfig, args: argparse.Namespace, log) -> int:
    """``cdc thrift-server``: replace this process by a Spark Thrift Server on the lake."""
    from python_udfs.spark import java_executable, lock_lake, thrift_server_command

    java_executable()  # ConfigError with the fix when there is no Java
    lock_lake(config.lake_root, inheritable=True)  # held by the server after exec
    command = thrift_server_command(config.lake_root, args.port, args.host)
    log(f"Spark Thrift Server on {args.host}:{args.port}, lake {config.lake_root}")
    os.execv(command[0], command)  # replaces this process; stop it with Ctrl-C
    return 0  # pragma: no cover


def _run_loop(
    project_dir: Path, config: ProjectConfig, extra: dict[str, Any], args: argparse.Namespace, log
) -> int:
    """``cdc run``: one run, or with ``--every`` one after another until ``--runs`` or Ctrl-C.

    Returns 0 when the (last) run succeeded, 1 when its build failed.
    """
    from python_udfs.config import load_project
    from python_udfs.run import run_and_report

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


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``cdc`` console script."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "run" and args.every is not None and args.every < 0:
        parser.error("--every: give the seconds to wait between runs, 0 or more")
    if args.command == "run" and args.runs is not None and (args.every is None or args.runs < 1):
        parser.error("--runs N needs --every SECONDS and N of 1 or more")
    project_dir = args.project_dir.resolve()
    if args.command == "stage" and local_processes(configured_master()):
        # its imports run while this process reads the project; a cluster's master named in
        # CDC_SPARK_CONF instead leaves it unused (Stager reads the master from spark_conf)
        start_worker_server()
    from python_udfs.config import ConfigError, load_project
    from python_udfs.demo import demo
    from python_udfs.run import export_roots
    from python_udfs.scaffold import scaffold
    from python_udfs.sql_console import list_rejects, rich_console, sql

    console = rich_console()

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
        export_roots(config)
        commands = {
            "sql": lambda: sql(config, args.query, args.json),
            "thrift-server": lambda: _thrift_server(config, args, log),
            "stage": lambda: _stage(config, log),
            "rejects": lambda: list_rejects(config, args.feed),
            "restage": lambda: _restage(config, args, log),
            "run": lambda: _run_loop(project_dir, config, extra, args, log),
            "scaffold": lambda: scaffold(config, log),
        }
        return commands[args.command]()
    except ConfigError as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: during a run, the next run takes up what it left
        log("stopped (Ctrl-C)")
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
