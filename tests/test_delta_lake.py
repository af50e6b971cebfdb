"""Issue 44: the lake is Delta Lake: every table a Delta table, current_state's change feed.

One project of one Qlik Kafka feed (table S.T, key A): a first run inserts three keys, a second
run updates one and deletes another. The change feed of current_state's commits after the first
run holds exactly those two changes; time travel to the first run's version gives its rows.
"""

from __future__ import annotations

import json

import pytest

from tests.spark_project import cdc, make_project, query, read_mart, write_seeds

pytestmark = pytest.mark.spark

FEEDS = """  cdc_feeds:
    k:
      format: qlik_kafka
      path: k
"""


def _message(n: int, operation: str, data: dict | None, before: dict | None = None) -> bytes:
    """One Replicate JSON envelope (formats/qlik_kafka_messages.md) of table S.T, change n."""
    message = {
        "data": data,
        "beforeData": before,
        "headers": {
            "operation": operation,
            "changeSequence": f"{n:035d}",
            "timestamp": f"2024-01-01T00:00:{n:02d}",
            "streamPosition": "",
            "transactionId": f"{n:032X}",
            "changeMask": "03" if operation != "DELETE" else None,
            "columnMask": "03",
        },
    }
    envelope = {"magic": "atMSG", "type": "DT", "headers": None, "messageSchemaId": None}
    return json.dumps({**envelope, "messageSchema": None, "message": message}).encode() + b"\n"


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """The lake after the two runs; returns (project, landing, lake, first run's version)."""
    root = tmp_path_factory.mktemp("delta")
    landing, lake = root / "landing", root / "lake"
    project = make_project(root, FEEDS)
    columns = [
        {
            "feed": "k",
            "source_schema": "S",
            "source_table": "T",
            "column_name": name,
            "ordinal": i,
            "source_type": kind,
            "length": "",
            "precision": "",
            "scale": "",
            "primary_key_position": key,
            "nullable": "true",
            "spark_type": "string",
        }
        for i, (name, kind, key) in enumerate([("A", "INT4", 1), ("B", "STRING", 0)], start=1)
    ]
    write_seeds(
        project,
        columns,
        [{"feed": "k", "source_schema": "S", "source_table": "T", "table_identifier": "t"}],
    )
    folder = landing / "k"
    folder.mkdir(parents=True)
    (folder / "t-0-00000000000000000000.jsonl").write_bytes(
        b"".join(_message(n, "INSERT", {"A": n, "B": f"v{n}"}) for n in (1, 2, 3))
    )
    cdc(project, "run", landing=landing, lake=lake)
    history = query(project, "describe history cdc.current_state", landing=landing, lake=lake)
    first_version = max(row["version"] for row in history)
    (folder / "t-0-00000000000000000003.jsonl").write_bytes(
        _message(4, "UPDATE", {"A": 1, "B": "w1"}, {"A": 1, "B": "v1"})
        + _message(5, "DELETE", None, {"A": 2, "B": "v2"})
    )
    cdc(project, "run", landing=landing, lake=lake)
    return project, landing, lake, first_version


def test_every_table_of_the_lake_is_a_delta_table(two_runs):
    """Every table in the schemas cdc and cdc_raw is Delta (the metastore's provider of each;
    DESCRIBE DETAIL's format of current_state and a raw table)."""
    project, landing, lake, _version = two_runs
    for schema in ("cdc", "cdc_raw"):
        tables = query(
            project, f"show table extended in {schema} like '*'", landing=landing, lake=lake
        )
        providers = {
            row["tableName"]: line.split(":", 1)[1].strip()
            for row in tables
            for line in row["information"].splitlines()
            if line.startswith("Provider:")
        }
        kinds = {
            row["tableName"]: line.split(":", 1)[1].strip()
            for row in tables
            for line in row["information"].splitlines()
            if line.startswith("Type:")
        }
        stored = {name for name, kind in kinds.items() if kind != "VIEW"}
        assert stored, schema
        assert {name: providers.get(name) for name in stored} == dict.fromkeys(stored, "delta")
    for table in ("cdc.current_state", "cdc_raw.raw_qlik_kafka"):
        (detail,) = query(project, f"describe detail {table}", landing=landing, lake=lake)
        assert detail["format"] == "delta", table


def test_the_change_feed_of_current_state_holds_what_a_run_changed(two_runs):
    """A run that updates one row and deletes one: current_state's Change Data Feed after the
    first run's version holds one update (pre- and post-image) and one delete, nothing else
    (README, "Reading what a run changed")."""
    project, landing, lake, version = two_runs
    changes = query(
        project,
        "select _change_type, primary_key, row['B'] as b"
        f" from table_changes('cdc.current_state', {version + 1})",
        landing=landing,
        lake=lake,
    )
    assert sorted((c["_change_type"], c["primary_key"], c["b"]) for c in changes) == [
        ("delete", '["2"]', "v2"),
        ("update_postimage", '["1"]', "w1"),
        ("update_preimage", '["1"]', "v1"),
    ]
    rows = {r["primary_key"]: r["row"]["B"] for r in read_mart(lake, "current_state")}
    assert rows == {'["1"]': "w1", '["3"]': "v3"}


def test_time_travel_reads_current_state_as_of_the_first_run(two_runs):
    """`VERSION AS OF` the first run's version gives the three keys it inserted."""
    project, landing, lake, version = two_runs
    rows = query(
        project,
        f"select primary_key, row['B'] as b from cdc.current_state version as of {version}",
        landing=landing,
        lake=lake,
    )
    assert sorted((r["primary_key"], r["b"]) for r in rows) == [
        ('["1"]', "v1"),
        ('["2"]', "v2"),
        ('["3"]', "v3"),
    ]


def test_a_second_process_reads_the_lake_while_runs_work(two_runs, tmp_path):
    """A reader in its own JVM (tests/lake_reader.py: python_udfs.spark.reader_session, no
    lock) queries current_state and history in a loop while `cdc run --every` applies two
    landing rounds in one process: no query fails or waits for a run, and current_state reads
    as one run's state or the next (its count and checksum take at most one value per run,
    in order, from the state before the runs to the state after them)."""
    import subprocess
    import sys

    from tests.lake_reader import STATE_QUERY
    from tests.spark_project import REPO, cdc_every, cli_env

    project, landing, lake, _version = two_runs
    (before,) = query(project, STATE_QUERY, landing=landing, lake=lake)
    folder = landing / "k"
    (folder / "t-0-00000000000000000005.jsonl").write_bytes(
        _message(6, "UPDATE", {"A": 3, "B": "w3"}, {"A": 3, "B": "v3"})
        + _message(7, "INSERT", {"A": 7, "B": "v7"})
    )
    out, stop = tmp_path / "reader.jsonl", tmp_path / "stop"
    reader = subprocess.Popen(
        [sys.executable, "-m", "tests.lake_reader", str(lake), str(out), str(stop)],
        env=cli_env(landing, lake),
        cwd=REPO,
    )

    def on_wait(run: int) -> None:
        if run == 1:
            (folder / "t-0-00000000000000000007.jsonl").write_bytes(
                _message(8, "DELETE", None, {"A": 7, "B": "v7"})
            )
        elif run == 2:
            stop.touch()  # the reader stops while the run's process still serves the metastore
            reader.wait(timeout=300)

    try:
        proc = cdc_every(
            project, "--every", "5", "--runs", "3", landing=landing, lake=lake, on_wait=on_wait
        )
    finally:
        stop.touch()
        reader.wait(timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:]
    (after,) = query(project, STATE_QUERY, landing=landing, lake=lake)
    rounds = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r for r in rounds if "error" in r] == []
    assert len(rounds) >= 25  # two queries a round
    states = []
    for r in rounds:
        if not states or states[-1] != (r["n"], r["h"]):
            states.append((r["n"], r["h"]))
    # the states before, between and after the two runs, in order; a reader that opened after
    # the first run's commit sees the last two only
    assert states[-1] == (after["n"], after["h"]) and len(set(states)) == len(states), states
    assert len(states) <= (3 if states[0] == (before["n"], before["h"]) else 2), states
