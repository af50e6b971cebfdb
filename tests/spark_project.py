"""Helpers for end-to-end tests: a copy of the dbt project in a temp folder, `cdc` runs, mart reads."""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds

from python_udfs.config import CDC_COLUMNS_HEADER, CDC_TABLES_HEADER

REPO = Path(__file__).resolve().parents[1]


def make_project(
    root: Path, feeds_yaml: str | None = None, seeds: tuple[list, list] | None = None
) -> Path:
    """Copy the dbt project into ``root/project``, the demo on.

    ``feeds_yaml`` (a ``  cdc_feeds:`` block) switches the demo off (``cdc_demo: false``, as a
    user's project does) and declares those feeds; ``seeds`` replaces the project's own
    catalog seeds (``cdc_columns.csv``, ``cdc_tables.csv``).
    """
    project = root / "project"
    project.mkdir(parents=True)
    for name in ("dbt_project.yml", "profiles.yml"):
        shutil.copy(REPO / name, project / name)
    for name in ("models", "macros", "seeds", "tests"):
        shutil.copytree(
            REPO / name, project / name, ignore=shutil.ignore_patterns("__pycache__", "*.py")
        )
    if feeds_yaml is not None:
        set_feeds(project, feeds_yaml)
    if seeds is not None:
        write_seeds(project, *seeds)
    return project


def demo_feeds_yaml() -> str:
    """The demo's feeds (``vars.cdc_demo_feeds``) as a ``  cdc_feeds:`` block for :func:`set_feeds`:
    a project of the demo's feeds with a catalog of its own instead of the demo's."""
    text = (REPO / "dbt_project.yml").read_text(encoding="utf-8")
    start = text.index("  cdc_demo_feeds:\n")
    end = text.index("\n  cdc_feeds:", start)
    block = text[start:end].split("\n", 1)[1]
    return "  cdc_feeds:\n" + "\n".join(
        line for line in block.splitlines() if not line.lstrip().startswith("#")
    )


def set_feeds(project: Path, feeds_yaml: str) -> None:
    """Switch the project's demo off and declare ``feeds_yaml`` (a ``  cdc_feeds:`` block)."""
    path = project / "dbt_project.yml"
    text = path.read_text(encoding="utf-8").replace(
        "\n  cdc_demo: true\n", "\n  cdc_demo: false\n", 1
    )
    start, end = text.index("  cdc_feeds:"), text.index("\nmodels:")
    path.write_text(text[:start] + feeds_yaml.rstrip() + "\n" + text[end:], encoding="utf-8")


def write_seeds(project: Path, columns: list[dict], tables: list[dict]) -> None:
    for name, header, rows in (
        ("cdc_columns.csv", CDC_COLUMNS_HEADER, columns),
        ("cdc_tables.csv", CDC_TABLES_HEADER, tables),
    ):
        with (project / "seeds" / name).open("w", encoding="utf-8", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=header, lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)


def cli_env(landing: Path, lake: Path) -> dict[str, str]:
    """The environment of a ``cdc`` CLI subprocess on ``landing`` and ``lake``: this checkout
    first on ``PYTHONPATH``, so the subprocess runs this checkout's ``python_udfs`` even when the
    virtualenv's editable install points at another checkout (a venv shared between two clones),
    and 200 columns for the summary table. ``CDC_DELTA_JARS`` names this environment's Delta jars
    for a plain ``dbt`` in a project copy (``profiles.yml`` looks in ``.venv`` of the folder it
    runs in otherwise)."""
    from python_udfs.spark import delta_class_path

    path = os.environ.get("PYTHONPATH", "")
    return {
        **os.environ,
        "CDC_DELTA_JARS": delta_class_path(),
        "PYTHONPATH": str(REPO) + (os.pathsep + path if path else ""),
        "CDC_LANDING_ROOT": str(landing),
        "CDC_LAKE_ROOT": str(lake),
        "COLUMNS": "200",
    }


def cdc(
    project: Path, *args: str, landing: Path, lake: Path, check: bool = True
) -> subprocess.CompletedProcess:
    """Run the ``cdc`` CLI in a subprocess (its own JVM) and return the completed process."""
    env = cli_env(landing, lake)
    proc = subprocess.run(
        [sys.executable, "-m", "python_udfs.cli", "--project-dir", str(project), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        cwd=project,
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"cdc {' '.join(args)} exited {proc.returncode}\n{proc.stdout[-6000:]}\n{proc.stderr[-4000:]}"
        )
    return proc


def cdc_every(
    project: Path, *args: str, landing: Path, lake: Path, on_wait
) -> subprocess.CompletedProcess:
    """Run ``cdc run --every ...`` (``args`` after ``run``) in a subprocess and return it done.

    Calls ``on_wait(n)`` when the process says it waits after its run ``n`` (the line ``run n
    done; next run in ...``), before it sleeps: the test lands files for the next run there.
    The process is killed after 900 s, as :func:`cdc` would time out.
    """
    proc = subprocess.Popen(
        [sys.executable, "-m", "python_udfs.cli", "--project-dir", str(project), "run", *args],
        env=cli_env(landing, lake),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=project,
    )
    watchdog = threading.Timer(900, proc.kill)
    watchdog.start()
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if " done; next run in " in line or " failed; next run in " in line:
                on_wait(int(line.split()[1]))
        proc.wait()
    finally:
        watchdog.cancel()
    return subprocess.CompletedProcess(proc.args, proc.returncode, "".join(lines), "")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for_port(port: int, proc: subprocess.Popen, log: Path, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"Thrift Server exited:\n{log.read_text()[-4000:]}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(2)
    raise AssertionError(f"Thrift Server did not listen on {port}:\n{log.read_text()[-4000:]}")


def build_through_thrift(project: Path, *dbt_args: str, landing: Path, lake: Path) -> str:
    """``dbt build --target thrift`` (and ``dbt_args``) of ``project`` through a loopback Spark
    Thrift Server on ``lake`` (``cdc thrift-server``, the README's cluster path), on the raw
    tables already staged there. The server is stopped before this returns, whatever happens,
    so the next ``cdc`` command can open the lake's metastore. Returns dbt's output; raises
    AssertionError when the server does not start or the build fails."""
    port = _free_port()
    env = {**cli_env(landing, lake), "CDC_THRIFT_PORT": str(port)}
    log = lake.parent / "thrift.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "python_udfs.cli", "--project-dir", str(project)]
            + ["thrift-server", "--port", str(port)],
            env=env,
            cwd=project,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        _wait_for_port(port, server, log)
        dbt = Path(sys.executable).parent / "dbt"
        build = subprocess.run(
            [str(dbt), "build", "--target", "thrift", "--profiles-dir", str(project)]
            + ["--project-dir", str(project), *dbt_args],
            env=env,
            cwd=project,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert build.returncode == 0, build.stdout[-6000:]
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)
    return build.stdout


def query(project: Path, sql: str, *, landing: Path, lake: Path) -> list[dict]:
    """Rows of one Spark SQL query on the project's lake (``cdc sql --json``, its own JVM): for
    views, whose rows no parquet file holds."""
    out = cdc(project, "sql", "--json", sql, landing=landing, lake=lake).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def run_results(project: Path) -> dict[str, str]:
    """{unique_id: status} of the nodes the last dbt invocation ran (target/run_results.json)."""
    results = json.loads((project / "target" / "run_results.json").read_text(encoding="utf-8"))
    return {r["unique_id"]: r["status"] for r in results["results"]}


#: Marts that are views of an intermediate table with the same columns (issue 45): their rows
#: are that table's files.
VIEW_TABLES = {"change_log": "int_changes_logged", "pending_changes": "int_changes_pending"}


def read_mart(lake: Path, table: str, schema: str = "cdc") -> list[dict]:
    """Read a built mart straight from its files in the warehouse, as a second process would.

    A Delta table (a folder with ``_delta_log``: every model table since ADR 0038 step 4b) is
    read at its last committed version with delta-rs, without ``history_generation``; any other
    table from its parquet files. A mart of :data:`VIEW_TABLES` is read from the table it is a
    view of. Partition columns of a parquet table (``name=value`` folders) are added as text,
    after the file's columns, except a ``*_generation`` partition. A generation names the run
    that wrote the rows, which differs between runs that must agree on them. ``change_log`` keeps, as its view does, one row per change: the one
    logged last (a change logged again with the key of a table declared late, ADR 0021);
    ``read_mart(lake, "int_changes_logged")`` reads every row of the store. Maps come back as
    dicts.
    """
    path = lake / "warehouse" / f"{schema}.db" / VIEW_TABLES.get(table, table)
    if (path / "_delta_log").is_dir():
        rows = delta_rows(lake, path.name, schema).to_pylist()
        for row in rows:
            row.pop("history_generation", None)
        return _with_dicts(_last_logged(rows) if table == "change_log" else rows)
    files = [
        p.relative_to(path)
        for p in sorted(path.rglob("*.parquet"))
        if not any(part.startswith((".", "_")) for part in p.relative_to(path).parts)
    ]
    keys = [part.split("=", 1)[0] for part in files[0].parts[:-1] if "=" in part] if files else []
    partitioning = (
        ds.partitioning(pa.schema([(key, pa.string()) for key in keys]), flavor="hive")
        if keys
        else None
    )
    data = ds.dataset(str(path), format="parquet", partitioning=partitioning).to_table()
    rows = data.to_pylist()
    if table == "change_log":
        rows = _last_logged(rows)
    for row in rows:
        for key in keys:
            if key.endswith("_generation"):
                del row[key]
    return _with_dicts(rows)


def _last_logged(rows: list[dict]) -> list[dict]:
    """The rows of the change log's store that its view shows: per ``change_id``, the row of
    the newest ``applied_generation`` (a change logged again with its key, ADR 0021)."""
    last: dict[str, str] = {}
    for row in rows:
        last[row["change_id"]] = max(last.get(row["change_id"], ""), row["applied_generation"])
    return [row for row in rows if row["applied_generation"] == last[row["change_id"]]]


def delta_table(lake: Path, table: str, schema: str = "cdc"):
    """The Delta table ``schema.table`` of the lake's warehouse, opened by path with delta-rs
    (``deltalake.DeltaTable``) at its last committed version, as a reader outside Spark does."""
    from deltalake import DeltaTable

    return DeltaTable(str(lake / "warehouse" / f"{schema}.db" / table))


def delta_rows(lake: Path, table: str, schema: str = "cdc", columns: str = "*") -> pa.Table:
    """The rows of the Delta table ``schema.table`` at its last committed version, read by path
    with delta-rs's SQL engine (``deltalake.QueryBuilder``): it applies the deletion vectors a
    MERGE writes (ADR 0038), which ``DeltaTable.to_pyarrow_table`` refuses (delta-rs 1.6).
    ``columns``: a SQL select list."""
    from deltalake import QueryBuilder

    query = QueryBuilder().register("t", delta_table(lake, table, schema))
    return pa.table(query.execute(f"select {columns} from t").read_all())


def _with_dicts(rows: list[dict]) -> list[dict]:
    """``rows`` with each map value (a list of key, value pairs in Arrow) as a dict."""
    for row in rows:
        for key, value in row.items():
            if isinstance(value, list) and value and isinstance(value[0], tuple):
                row[key] = dict(value)
    return rows


#: Names from the data that once broke scaffolding, the dbt parse or Spark SQL (issue 14): a
#: single quote, a double quote, a backtick, ``;``, a newline, Jinja, a backslash, 300 characters.
HOSTILE_NAMES = [
    "O'BRIEN",
    'say "hi"',
    "back`tick",
    "a;drop table x",
    "two\nlines",
    "{{ 7*7 }}",
    "C:\\temp",
    "x" * 300,
]
#: The schema of the hostile tables of :func:`hostile_kafka_dump`.
HOSTILE_SCHEMA = "S'; --"


def hostile_kafka_dump() -> bytes:
    """A Qlik Kafka JSON dump declaring one table per :data:`HOSTILE_NAMES` name.

    Each table ``HOSTILE_SCHEMA.<name>`` has the key column ``ID`` and one column named
    ``<name>``; its changes insert keys 1 and 2 (values ``one`` and ``two``), then update key 1
    to ``uno``. Every message is its own transaction.
    """
    lines, seq = [], 0
    for number, name in enumerate(HOSTILE_NAMES, start=1):
        schema_id = f"HOSTILE-{number}"
        md = {
            "schemaId": schema_id,
            "lineage": {"schema": HOSTILE_SCHEMA, "table": name, "tableVersion": 1},
            "tableStructure": {
                "tableColumns": {
                    "ID": {"ordinal": 1, "type": "INT4", "primaryKeyPosition": 1},
                    name: {"ordinal": 2, "type": "STRING", "nullable": True},
                }
            },
            "dataSchema": "",
        }
        lines.append({"magic": "atMSG", "type": "MD", "message": md})
        for op, key, value, before in (
            ("INSERT", 1, "one", None),
            ("INSERT", 2, "two", None),
            ("UPDATE", 1, "uno", "one"),
        ):
            seq += 1
            message = {
                "data": {"ID": key, name: value},
                "beforeData": None if before is None else {"ID": key, name: before},
                "headers": {
                    "operation": op,
                    "changeSequence": f"2025060100000000{seq:019d}",
                    "timestamp": "2024-01-01T00:00:00.000",
                    "streamPosition": "",
                    "transactionId": f"T{seq:04d}",
                    "changeMask": "03" if op == "INSERT" else "02",
                    "columnMask": "03",
                    "transactionEventCounter": 1,
                    "transactionLastEvent": True,
                },
            }
            lines.append(
                {"magic": "atMSG", "type": "DT", "messageSchemaId": schema_id, "message": message}
            )
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)
