"""The embedded engine reads and writes Delta Lake tables (issue 73, first step; ADR 0038).

The jars ``make install`` fetched (``python_udfs.spark.delta_jars``) are on the driver's class
path and Delta's extension and catalog are set (``DELTA_CONF``): a ``cdc sql`` process creates a
Delta table with its Change Data Feed on, merges into it, and reads it back at a version and
as its change feed. The models still write parquet; the following steps move them.
"""

from __future__ import annotations

import json

import pytest

from python_udfs import spark
from python_udfs.config import ConfigError
from python_udfs.spark import delta_jars, delta_packages
from tests.spark_project import cdc, make_project


def test_pinned_delta_packages_name_the_jars_make_install_fetched():
    """The jar coordinates follow the pinned pyspark and delta-spark (4.2 and 4.4.0), and the
    jars are in the environment (make install fetched them; a run needs no network)."""
    assert delta_packages() == (
        "io.delta:delta-spark_4.2_2.13:4.4.0",
        "io.delta:delta-storage:4.4.0",
    )
    assert [jar.name for jar in delta_jars()] == [
        "delta-spark_4.2_2.13-4.4.0.jar",
        "delta-storage-4.4.0.jar",
    ]


def test_a_missing_jar_fails_with_one_line_naming_make_install(tmp_path, monkeypatch):
    """Without the jars (an environment `make install` did not finish), building the session's
    settings stops at once with the jar's path and the fix, before any JVM starts."""
    monkeypatch.setattr(spark, "jar_folder", lambda: tmp_path / "jars")
    with pytest.raises(ConfigError) as raised:
        spark.spark_conf(tmp_path / "lake")
    message = str(raised.value)
    assert str(tmp_path / "jars" / "delta-spark_4.2_2.13-4.4.0.jar") in message
    assert "make install" in message and "\n" not in message


def test_a_cdc_process_merges_into_a_delta_table_and_reads_its_versions_and_change_feed(
    tmp_path,
):
    """One `cdc sql` process: a Delta table with the change feed on gets three rows (version 1),
    then one MERGE updates one row and deletes another (version 2). DESCRIBE DETAIL says delta,
    version 1 still holds the three rows, and the change feed of version 2 holds exactly the
    update (pre- and post-image) and the delete."""
    project = make_project(tmp_path)
    statements = [
        "create database if not exists delta_check",
        "create table delta_check.t (k int, v string) using delta"
        " tblproperties (delta.enableChangeDataFeed = true)",
        "insert into delta_check.t values (1, 'a'), (2, 'b'), (3, 'c')",
        "merge into delta_check.t as t"
        " using (select 1 as k, 'A' as v union all select 2, null) as s on t.k = s.k"
        " when matched and s.v is null then delete when matched then update set v = s.v",
        "describe detail delta_check.t",
        "select 'version 1' as q, k, v from delta_check.t version as of 1",
        "select 'now' as q, k, v from delta_check.t",
        "select 'changes' as q, k, v, _change_type, _commit_version"
        " from table_changes('delta_check.t', 2)",
    ]
    done = cdc(
        project, "sql", "--json", *statements, landing=tmp_path / "landing", lake=tmp_path / "lake"
    )
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    detail = [r for r in rows if "format" in r]
    assert [(d["format"], d["name"]) for d in detail] == [("delta", "spark_catalog.delta_check.t")]
    answers: dict[str, set] = {}
    for row in rows:
        if "q" in row:
            values = tuple(v for k, v in row.items() if k != "q")
            answers.setdefault(row["q"], set()).add(values)
    assert answers["version 1"] == {(1, "a"), (2, "b"), (3, "c")}
    assert answers["now"] == {(1, "A"), (3, "c")}
    assert answers["changes"] == {
        (1, "a", "update_preimage", 2),
        (1, "A", "update_postimage", 2),
        (2, "b", "delete", 2),
    }
