"""The fingerprint that lets `cdc run` skip a build with nothing new (python_udfs.build_state),
and what a run readies before its build."""

from __future__ import annotations

from pathlib import Path

from python_udfs import build_state
from tests.spark_project import REPO, make_project


def _commit_batch(lake: Path, batch: str) -> None:
    folder = lake / "raw" / "raw_ingested_files" / f"ingest_batch_id={batch}"
    folder.mkdir(parents=True)
    (folder / "part-0.parquet").write_bytes(b"PAR1")


def test_fingerprint_follows_committed_batches_project_files_vars_and_target(tmp_path, monkeypatch):
    monkeypatch.delenv("CDC_DBT_TARGET", raising=False)
    project, lake = make_project(tmp_path), tmp_path / "lake"
    first = build_state.build_fingerprint(project, lake, {})
    assert build_state.build_fingerprint(project, lake, {}) == first
    first_project = build_state.project_fingerprint(project, {})

    # a batch folder without a parquet file is a batch killed before its manifest: not committed
    (lake / "raw" / "raw_ingested_files" / "ingest_batch_id=20240101T000000000000").mkdir(
        parents=True
    )
    assert build_state.build_fingerprint(project, lake, {}) == first
    _commit_batch(lake, "20240102T000000000000")
    assert build_state.committed_batches(lake) == ["20240102T000000000000"]
    with_batch = build_state.build_fingerprint(project, lake, {})
    assert with_batch != first
    # new data only: the project's own fingerprint stays (a data-only build, ADR 0009)
    assert build_state.project_fingerprint(project, {}) == first_project

    (project / "models" / "__pycache__").mkdir()
    (project / "models" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    assert build_state.build_fingerprint(project, lake, {}) == with_batch
    model = project / "models" / "marts" / "current_state.sql"
    model.write_text(model.read_text() + "\n-- edited\n")
    edited = build_state.build_fingerprint(project, lake, {})
    assert edited != with_batch
    assert build_state.project_fingerprint(project, {}) != first_project
    assert build_state.build_fingerprint(project, lake, {"cdc_test_scope": "all"}) != edited
    monkeypatch.setenv("CDC_DBT_TARGET", "thrift")
    assert build_state.build_fingerprint(project, lake, {}) != edited


def test_recorded_build_is_read_back_and_forgotten(tmp_path):
    lake = tmp_path / "lake"
    assert build_state.last_build(lake) is None and build_state.last_project(lake) is None
    build_state.record_build(lake, "abc", "def", "20240101T000000000000")
    assert build_state.last_build(lake) == "abc" and build_state.last_project(lake) == "def"
    build_state.forget_build(lake)
    assert build_state.last_build(lake) is None and build_state.last_project(lake) is None
    # before a data-only build: the project's fingerprint stays, alone (a kill during that
    # build is followed by a data-only one); the build's goes, so no run skips dbt
    build_state.record_build(lake, "abc", "def", "20240101T000000000000")
    build_state.forget_build(lake, keep_project=True)
    assert build_state.last_build(lake) is None and build_state.last_project(lake) == "def"
    build_state.forget_build(lake, keep_project=True)
    assert build_state.last_project(lake) == "def"
    build_state.forget_build(lake)  # a failed build: the next one is a whole one
    assert build_state.last_build(lake) is None and build_state.last_project(lake) is None
    build_state.forget_build(lake, keep_project=True)  # nothing recorded: nothing written
    assert not (lake / build_state.STATE_FILE).exists()
    (lake / build_state.STATE_FILE).write_text("not json")
    assert build_state.last_build(lake) is None and build_state.last_project(lake) is None
    # a record of an earlier version (one fingerprint): the next build is a whole one
    (lake / build_state.STATE_FILE).write_text('{"fingerprint": "abc", "built_at": "x"}')
    assert build_state.last_build(lake) == "abc" and build_state.last_project(lake) is None


def test_dbt_loads_beside_the_jvm_start_once_and_only_when_not_loaded():
    """``cdc run`` imports dbt's runner and the Spark adapter in a daemon thread while the JVM
    starts (run.import_dbt_in_background); once they are loaded, no thread starts."""
    import subprocess
    import sys

    code = """
import sys, threading
from python_udfs.run import DBT_MODULES, import_dbt_in_background
assert not any(name in sys.modules for name in DBT_MODULES)
import_dbt_in_background()
(loader,) = [t for t in threading.enumerate() if t.name == "cdc-import-dbt"]
assert loader.daemon
loader.join()
assert all(name in sys.modules for name in DBT_MODULES)
import_dbt_in_background()
assert not [t for t in threading.enumerate() if t.name == "cdc-import-dbt"]
print("ok")
"""
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert out.stdout.strip() == "ok", out.stderr
