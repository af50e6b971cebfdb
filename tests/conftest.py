"""Shared fixtures: paths to the real samples in ../shared and the repository root."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
SAMPLES = SHARED / "samples"


@pytest.fixture(scope="session")
def samples() -> Path:
    if not SAMPLES.is_dir():
        pytest.fail(
            f"real samples not found at {SAMPLES}: ../shared must sit beside the repository"
        )
    return SAMPLES


@pytest.fixture(scope="session")
def uninterrupted_run(tmp_path_factory):
    """The crash workload (seed 23) landed at once and built by one uninterrupted ``cdc run``:
    ``(src, marts)``. The crash test lands the same files in rounds and kills its runs; the
    Thrift Server test builds them through the server. Both must reach these marts (rounds and
    one batch build the same marts: test_end_to_end's oracle checks that)."""
    from tests.spark_project import cdc
    from tests.test_crash_safety import _marts, _project, write_workloads

    root = tmp_path_factory.mktemp("uninterrupted")
    src, landing, lake = root / "src", root / "landing", root / "lake"
    write_workloads(src, seed=23)
    project = _project(root, landing)
    shutil.copytree(src, landing, dirs_exist_ok=True)
    cdc(project, "run", landing=landing, lake=lake)
    return src, _marts(project, landing, lake)


@pytest.fixture(scope="session")
def two_rounds(tmp_path_factory):
    """The two-round project of ``tests/two_rounds.py``: the apply scenarios, the HiRDB and
    Linkexpress rounds and the little-endian trails, landed in two rounds, one ``cdc run``
    each (see :func:`tests.two_rounds.run` for what it returns)."""
    from tests import test_apply_scenarios, test_end_to_end, test_end_to_end_japanese, two_rounds

    return two_rounds.run(
        tmp_path_factory.mktemp("two_rounds"),
        {
            "scenarios": test_apply_scenarios.prepare,
            "japanese": test_end_to_end_japanese.prepare,
            "little_endian": test_end_to_end.prepare_little_endian,
        },
    )
