"""Shared fixtures: paths to the real samples in ../shared and the repository root.

Every ``cdc`` subprocess of the suite (each inherits the environment) runs Spark with
:data:`SMALL_DATA_SPARK_CONF` unless ``CDC_SPARK_CONF`` is set.
The README test (``make test-readme``) clears every ``CDC_`` variable, so it runs the
project's defaults.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

#: Spark settings for the suite's tiny data (``CDC_SPARK_CONF``, python_udfs/spark.py). A
#: ``cdc run`` of the demo spends most of its CPU compiling: Janino compiling each query's
#: generated Java, then the JIT compiling that (55,000 JIT compilations, 2 min 8 s of compiler
#: time, in a Java Flight Recording of a 110 s demo). Expressions evaluated without code
#: generation cut a demo run by about a tenth on this machine (94.7 s against 104.8 and
#: 116.8 s; later, with the machine slower, 126 to 159 s against 164 and 170 s). Spark's
#: results are the same either way. One shuffle partition instead of four made no difference
#: (adaptive execution coalesces them).
SMALL_DATA_SPARK_CONF = (
    "spark.sql.codegen.wholeStage=false spark.sql.codegen.factoryMode=NO_CODEGEN"
)
os.environ.setdefault("CDC_SPARK_CONF", SMALL_DATA_SPARK_CONF)

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
def clean_run(tmp_path_factory):
    """The crash workload (seed 23) landed at once and built cleanly, in one batch, through a
    loopback Spark Thrift Server: ``(src, marts, simulations, dbt output)``
    (:func:`tests.test_thrift_server.build_through_thrift`). The Thrift test checks it against
    the simulated databases; the crash test lands the same files in rounds, kills its runs,
    and must reach the same marts (rounds and one batch build the same marts: the oracle
    checks that)."""
    from tests.test_thrift_server import build_through_thrift

    return build_through_thrift(tmp_path_factory.mktemp("clean"))


@pytest.fixture(scope="session")
def two_rounds(tmp_path_factory):
    """The two-round project of ``tests/two_rounds.py``: the apply scenarios, the HiRDB and
    Linkexpress rounds, the little-endian trails and the restage of a table declared late,
    landed in two rounds, one ``cdc run`` each (see :func:`tests.two_rounds.run` for what it
    returns). Declaring the late table changes the seeds, so round 2 is a whole build; the
    oracle's second round is the data-only one (``test_end_to_end``)."""
    from tests import (
        test_apply_scenarios,
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
            "restage": test_restage.prepare,
        },
    )
