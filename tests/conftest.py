"""Shared fixtures: paths to the real samples in ../shared and the repository root.

Every ``cdc`` subprocess of the suite (each inherits the environment) runs Spark with
:data:`SMALL_DATA_SPARK_CONF`, one shuffle partition and :data:`SMALL_DATA_JAVA_OPTIONS`,
unless ``CDC_SPARK_CONF``, ``CDC_SHUFFLE_PARTITIONS`` and ``CDC_SPARK_JAVA_OPTIONS`` are set,
and starts its JVM from a class archive (:func:`jvm_class_archive`).

``make test`` runs the suite on two pytest-xdist workers;
:func:`pytest_xdist_make_scheduler` keeps the tests that share a built project on one worker.
The README test (``make test-readme``) clears every ``CDC_`` variable, so ``make demo`` runs
the project's defaults; it passes these three settings to the README's commands after it.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest

#: Spark settings for the suite's tiny data (``CDC_SPARK_CONF``, python_udfs/spark.py), with one
#: shuffle partition (``CDC_SHUFFLE_PARTITIONS``, which profiles.yml applies to dbt's queries
#: too). A ``cdc run`` of the demo spent most of its CPU compiling: Janino compiling each
#: query's generated Java, then the JIT compiling that (55,000 JIT compilations, 2 min 8 s of
#: compiler time, in a Java Flight Recording of a 110 s demo); expressions evaluated without
#: code generation cut a demo run by about a tenth (94.7 s against 104.8 and 116.8 s). Adaptive
#: execution re-plans each query at every shuffle, and its one task per partition is all the
#: parallelism tiny data needs: without it, and with one partition, the warm
#: ``stg_hirdb_update_sql__changes`` query of the demo's lake took 0.58 to 0.76 s against 0.89
#: to 1.0 s (code generation off in both), and the demo's dbt build 85.7 and 92.3 s against
#: 98.3 and 100.9 s. Spark's results are the same either way.
SMALL_DATA_SPARK_CONF = (
    "spark.sql.codegen.wholeStage=false spark.sql.codegen.factoryMode=NO_CODEGEN "
    "spark.sql.adaptive.enabled=false"
)
os.environ.setdefault("CDC_SPARK_CONF", SMALL_DATA_SPARK_CONF)
os.environ.setdefault("CDC_SHUFFLE_PARTITIONS", "1")
#: JVM options for the suite's short runs: the client compiler only, on one thread. In a forced
#: ``cdc run`` of the demo on the project's defaults (161 s), the JVM's JIT compilers ran for
#: 3 min 13 s (56,163 compilations, Java Flight Recorder): both cores busy. With
#: :data:`SMALL_DATA_SPARK_CONF`, a forced run of the demo took 120.6 s with these options
#: against 134.7 s without. The optimising compiler pays off on large data only (the
#: benchmarks, which run the project's defaults). The Hive metastore's Derby database does not
#: force its log to disk at each commit (``derby.system.durability=test``): a forced run of the
#: demo with the suite's settings took 122.7 and 120.0 s with it, 129.4 s without. Its writes
#: still reach the operating system, so a process killed with SIGKILL (the crash test) leaves
#: what it would leave without it; only a machine crash could lose them, which no test makes.
#: With the client compiler alone the JVM reserves 48 MB for compiled code, and a run of the
#: demo fills it some 15 s in ("CodeCache is full. Compiler has been disabled."): the rest of
#: the run is interpreted. 256 MB keep the compiler on: forced runs of the demo's lake with
#: the suite's settings took 34.1 to 45.2 s (mean 37.2, five runs) against 38.6 to 48.6 s
#: (mean 43.6, five runs, alternated) with the default reservation (issue 72).
SMALL_DATA_JAVA_OPTIONS = (
    "-XX:TieredStopAtLevel=1 -XX:CICompilerCount=1 -XX:ReservedCodeCacheSize=256m "
    "-Dderby.system.durability=test"
)
os.environ.setdefault("CDC_SPARK_JAVA_OPTIONS", SMALL_DATA_JAVA_OPTIONS)

REPO = Path(__file__).resolve().parents[1]

SHARED = REPO.parent / "shared"
SAMPLES = SHARED / "samples"


#: Session fixtures every test may use for free (no project is built for them).
FREE_FIXTURES = frozenset({"jvm_class_archive", "samples", "tmp_path_factory"})
#: The file where the pytest-xdist workers write each test's group for the controller.
GROUPS_FILE = "CDC_TEST_GROUPS_FILE"


def shared_build_groups(items) -> dict[str, str]:
    """Each test's group: ``{node id: group}``, for tests that share a built project.

    Tests that share a session or module fixture (``two_rounds``, a module's oracle) are one
    group, named after one of those fixtures; groups that share a fixture are merged. Every
    other test is its own group.
    """
    parent: dict[str, str] = {}

    def root(key: str) -> str:
        while parent.setdefault(key, key) != key:
            key = parent[key]
        return key

    shared_of = {}
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        shared = [
            f"{defs[-1].baseid}::{name}" if defs[-1].scope == "module" else name
            for name, defs in (info.name2fixturedefs.items() if info else ())
            if defs and defs[-1].scope in ("module", "session") and name not in FREE_FIXTURES
        ]
        shared.sort(key=lambda key: "::" in key)  # a session fixture names the group
        for key in shared[1:]:
            parent[root(key)] = root(shared[0])
        shared_of[item.nodeid] = shared
    return {nodeid: root(shared[0]) if shared else nodeid for nodeid, shared in shared_of.items()}


def pytest_configure(config):
    """In the controller of ``pytest -n 2`` (``make test``): a file for the tests' groups."""
    if config.getoption("numprocesses", None) and GROUPS_FILE not in os.environ:
        fd, path = tempfile.mkstemp(prefix="cdc-test-groups-", suffix=".json")
        os.close(fd)
        os.environ[GROUPS_FILE] = path  # the workers, started after this, inherit it


def pytest_unconfigure(config):
    """In the controller: remove the groups file :func:`pytest_configure` made."""
    if config.getoption("numprocesses", None) and GROUPS_FILE in os.environ:
        Path(os.environ.pop(GROUPS_FILE)).unlink(missing_ok=True)


def pytest_collection_modifyitems(items):
    """In a pytest-xdist worker: write the tests' groups (:func:`shared_build_groups`) for the
    controller's scheduler, in place (each worker writes the same)."""
    path = os.environ.get(GROUPS_FILE)
    if path and os.environ.get("PYTEST_XDIST_WORKER"):
        partial = Path(f"{path}.{os.environ['PYTEST_XDIST_WORKER']}")
        partial.write_text(json.dumps(shared_build_groups(items)), encoding="utf-8")
        partial.replace(path)


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Schedule ``pytest -n 2`` by :func:`shared_build_groups`: a built project is built once.

    pytest-xdist's own ``--dist loadgroup`` cannot be used: with pytest 9.2 it no longer
    groups (pytest-dev/pytest-xdist#1386), so this scheduler reads the groups the workers wrote.
    """
    from xdist.scheduler import LoadScopeScheduling

    class SharedBuildScheduling(LoadScopeScheduling):
        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:
                self.groups = json.loads(Path(os.environ[GROUPS_FILE]).read_text("utf-8"))
            return self.groups.get(nodeid, nodeid)

        def schedule(self) -> None:
            # the groups of a session fixture first (the costliest builds), then those of a
            # module fixture, then the other tests in their order
            self.config.option.loadscopereorder = False
            super().schedule()

        def _assign_work_unit(self, node) -> None:
            if not getattr(self, "_ordered", False):
                self._ordered = True
                tests = set(self.collection or ())
                rank = {
                    scope: (0 if "::" not in scope else 1) if scope not in tests else 2
                    for scope in self.workqueue
                }
                units = sorted(self.workqueue.items(), key=lambda unit: rank[unit[0]])
                self.workqueue.clear()
                self.workqueue.update(units)
            super()._assign_work_unit(node)

    return SharedBuildScheduling(config, log)


@pytest.fixture(scope="session", autouse=True)
def jvm_class_archive(request, tmp_path_factory):
    """Start every Spark JVM of the suite from a class-data sharing archive (Java 17 AppCDS).

    Every ``cdc`` command of the suite, and the Thrift Server, starts a JVM that loads the same
    Spark, Hive and Derby classes (``cdc sql`` on the demo lake: 18.7 to 23.5 s with an archive
    against 24.2 to 28.3 s without, three runs each; the growing-dump test's four ``cdc
    stage``: 62.2 s against 93.4 s). ``make install`` writes the environment's archive, which
    every JVM maps by default (python_udfs/spark.py, :func:`~python_udfs.spark.class_archive`).
    Without it (pytest outside ``make``), this writes one for the session
    (:func:`~python_udfs.spark.build_class_archive`, about 35 s) and hands it to every later
    JVM through ``CDC_SPARK_CLASS_ARCHIVE``. Skipped when no collected test is marked
    ``spark`` or when class sharing is turned off (``CDC_SPARK_CLASS_ARCHIVE=off``).
    """
    from python_udfs.spark import build_class_archive, class_archive, class_archive_path

    existing = class_archive()
    if (
        existing is not None
        or class_archive_path() is None
        or not any(item.get_closest_marker("spark") for item in request.session.items)
    ):
        yield existing
        return
    archive = build_class_archive(tmp_path_factory.mktemp("jvm_classes") / "spark.jsa")
    if archive is None:
        yield None
        return
    os.environ["CDC_SPARK_CLASS_ARCHIVE"] = str(archive)
    yield archive
    del os.environ["CDC_SPARK_CLASS_ARCHIVE"]


@pytest.fixture(scope="session")
def samples() -> Path:
    if not SAMPLES.is_dir():
        pytest.fail(
            f"real samples not found at {SAMPLES}: ../shared must sit beside the repository"
        )
    return SAMPLES


@pytest.fixture(scope="session")
def two_rounds(tmp_path_factory):
    """The two-round project of ``tests/two_rounds.py``: the apply scenarios, the HiRDB and
    Linkexpress rounds, the little-endian trails, a Qlik feed with a table declared without key
    columns and one missing from the catalog in round 1, three feeds whose tables only their
    own metadata declares, the restage of a table declared late, and the crash test's
    workload (its uninterrupted reference), landed in two rounds, one ``cdc run`` each (see
    :func:`tests.two_rounds.run` for what it returns). Declaring the late tables changes the
    seeds, so round 2 is a whole build; the oracle's second round is the data-only one
    (``test_end_to_end``)."""
    from tests import (
        test_apply_scenarios,
        test_crash_safety,
        test_end_to_end,
        test_end_to_end_japanese,
        test_restage,
        two_rounds,
    )

    return two_rounds.run(
        tmp_path_factory.mktemp("two_rounds"),
        {
            "scenarios": test_apply_scenarios.prepare,
            "japanese": test_end_to_end_japanese.prepare,
            "little_endian": test_end_to_end.prepare_little_endian,
            "keyless": test_end_to_end.prepare_keyless,
            "discovered": test_end_to_end.prepare_discovered,
            "restage": test_restage.prepare,
            "crash": test_crash_safety.prepare,
        },
    )
