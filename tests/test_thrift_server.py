"""Cluster path: `dbt build --target thrift` through a Spark Thrift Server on loopback
(`cdc thrift-server`) builds the same marts from the same staged raw tables as the embedded
engine. Skipped only when Java is missing."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.spark_project import cdc, cli_env
from tests.test_crash_safety import _marts

pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(shutil.which("java") is None, reason="Java is not installed"),
]


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


def build_through_thrift(root: Path) -> tuple[Path, dict, dict, str]:
    """The crash workload (seed 23) landed at once, staged by the embedded engine, built by
    ``dbt build --target thrift`` through a loopback Spark Thrift Server (``cdc
    thrift-server``). Returns ``(src, marts, simulations by feed, dbt output)``; the marts as
    :func:`tests.test_crash_safety._marts` reads them (after the server stopped)."""
    from tests.test_crash_safety import _project, write_workloads

    src, landing, lake = root / "src", root / "landing", root / "lake"
    sims = write_workloads(src, seed=23)
    project = _project(root, landing)
    shutil.copytree(src, landing, dirs_exist_ok=True)
    cdc(project, "stage", landing=landing, lake=lake)
    port = _free_port()
    env = {**cli_env(landing, lake), "CDC_THRIFT_PORT": str(port)}
    log = root / "thrift.log"
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
            + ["--project-dir", str(project)],
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
    return src, _marts(project, landing, lake), sims, build.stdout


def test_dbt_build_through_a_loopback_thrift_server_reaches_the_simulated_database(clean_run):
    """The cluster path builds the marts from the staged raw tables: dbt's tests pass through
    the server and current state equals each simulated source database. (The crash test then
    holds its killed-and-rerun embedded runs against these marts.)"""
    _src, marts, sims, output = clean_run
    assert "ERROR=0" in output and "PASS=" in output
    assert len(marts["history"]) > 100
    state: dict = {}
    for line in marts["current_state"]:
        row = json.loads(line)
        state.setdefault(row["feed"], {}).setdefault(
            (row["source_schema"], row["source_table"]), {}
        )[row["primary_key"]] = row["row"]
    for feed, sim in sims.items():
        assert state[feed] == {k: v for k, v in sim.final_state.items() if v}, feed
