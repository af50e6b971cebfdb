"""Cluster path: `dbt build --target thrift` through a Spark Thrift Server on loopback
(`cdc thrift-server`) builds the same marts from the same staged raw tables as the embedded
engine. Skipped only when Java is missing."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from python_udfs.simulator import catalog_rows
from tests.spark_project import cdc, make_project
from tests.test_crash_safety import FEEDS, FEEDS_YAML, _marts

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


def test_dbt_build_through_a_loopback_thrift_server_matches_the_embedded_run(
    tmp_path, uninterrupted_run
):
    # The embedded run: the crash test's uninterrupted run over the same files.
    src, embedded = uninterrupted_run
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    shutil.copytree(src, landing)
    seeds = catalog_rows({name: fmt for name, (fmt, _options) in FEEDS.items()})
    project = make_project(tmp_path, FEEDS_YAML, seeds=seeds, typed_models=False)
    cdc(project, "stage", landing=landing, lake=lake)
    port = _free_port()
    env = {
        **os.environ,
        "CDC_LANDING_ROOT": str(landing),
        "CDC_LAKE_ROOT": str(lake),
        "CDC_THRIFT_PORT": str(port),
    }
    log = tmp_path / "thrift.log"
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
        assert "ERROR=0" in build.stdout and "PASS=" in build.stdout
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)
    thrift = _marts(project, landing, lake)
    assert len(embedded["history"]) > 100
    for mart, rows in embedded.items():
        assert thrift[mart] == rows, mart
