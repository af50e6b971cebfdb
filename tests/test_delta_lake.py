"""The embedded engine reads and writes Delta Lake tables (issue 73, first step; ADR 0038).

The jars ``make install`` fetched (``python_udfs.spark.delta_jars``) are on the driver's class
path and Delta's extension and catalog are set (``DELTA_CONF``): a ``cdc sql`` process creates a
Delta table with its Change Data Feed on, merges into it, and reads it back at a version and
as its change feed. ``current_state`` and ``history`` are Delta tables a run updates by MERGE,
with their change feed on, and a second process reads them while a run works.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from python_udfs import spark
from python_udfs.config import ConfigError
from python_udfs.spark import delta_jars, delta_packages
from tests.lake_reader import check_reading
from tests.spark_project import cdc, delta_table, make_project, read_mart


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


def test_the_change_feed_of_current_state_holds_what_round_two_changed_and_nothing_else(
    two_rounds,
):
    """current_state is a Delta table with its change feed on (read by path, as a reader outside
    Spark would), and its change feed since round 1's commit, folded per key (the image before
    the key's first change, the one after its last), is the difference between current_state
    after round 1 and after round 2: each inserted, updated and deleted key, with its rows. No
    update's post-image equals its pre-image (the MERGE writes only the keys that changed)."""
    table = delta_table(two_rounds.lake, "current_state")
    configuration = table.metadata().configuration
    assert configuration.get("delta.enableChangeDataFeed") == "true"
    # a MERGE marks the rows it replaces in deletion vectors instead of rewriting their files
    assert configuration.get("delta.enableDeletionVectors") == "true"
    before = {r["current_state_id"]: r for r in two_rounds.after_round1["current_state"]}
    after = {r["current_state_id"]: r for r in read_mart(two_rounds.lake, "current_state")}
    changes = table.load_cdf(starting_version=two_rounds.current_state_version + 1)
    feed = pa.RecordBatchReader.from_stream(changes).read_all()
    events = sorted(feed.to_pylist(), key=lambda e: e["_commit_version"])
    net: dict[str, list] = {}  # current_state_id: [row before the first change, row after]
    for event in events:
        kind, row = event["_change_type"], dict(event["row"])
        if event["current_state_id"] not in net:  # the first change: what the key held before
            net[event["current_state_id"]] = [None if kind == "insert" else row, None]
        if kind != "update_preimage":
            net[event["current_state_id"]][1] = None if kind == "delete" else row
    net = {key: rows for key, rows in net.items() if rows[0] != rows[1]}
    columns = [c for c in feed.column_names if not c.startswith("_")]
    pairs: dict[tuple, list] = {}  # each update's pre- and post-image differ
    for event in events:
        if event["_change_type"].startswith("update_"):
            image = tuple(str(event[c]) for c in columns)
            pairs.setdefault((event["_commit_version"], event["current_state_id"]), []).append(
                image
            )
    assert pairs and all(len(set(images)) == 2 for images in pairs.values())
    changed = {
        key: [
            before[key]["row"] if key in before else None,
            after[key]["row"] if key in after else None,
        ]
        for key in before.keys() | after.keys()
        if key not in before or key not in after or before[key]["row"] != after[key]["row"]
    }
    assert changed and net == changed
    kinds = {e["_change_type"] for e in events}
    assert {"insert", "delete", "update_preimage", "update_postimage"} <= kinds


def test_a_second_process_reads_current_state_and_history_while_a_run_applies_a_round(
    two_rounds,
):
    """Readers never wait (issue 73): while round 2's `cdc run` applies its landing round, a
    second process (tests/lake_reader.py) queries current_state and history in a loop, through
    a reader session on the run's metastore server (what `cdc sql` opens then) and by path with
    delta-rs. None of its queries fails, there are at least 50 of each kind, and every answer is
    the lake as round 1 left it or as round 2 left it, in that order."""
    states = [two_rounds.answers["before round 2"], two_rounds.answers["after round 2"]]
    assert states[0] != states[1]
    check_reading(two_rounds.reading, states)
