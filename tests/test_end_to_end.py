"""End to end on the embedded engine: simulator → Qlik files → `cdc run` → marts equal the truth."""

from __future__ import annotations

import csv
import datetime as dt
import gzip
import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from python_udfs.config import CDC_COLUMNS_HEADER, load_project
from python_udfs.demo import DEMO_TRUNCATE_EVERY
from simulator.database import (
    JP_TABLES,
    SimColumn,
    catalog_rows,
    primary_key_text,
    simulate,
    tables_for,
)
from simulator.feeds import write_feed
from tests import lake_reader
from tests.spark_project import (
    HOSTILE_NAMES,
    HOSTILE_SCHEMA,
    REPO,
    build_through_thrift,
    cdc,
    cdc_every,
    cli_env,
    delta_rows,
    hostile_kafka_dump,
    make_project,
    query,
    read_mart,
    run_results,
    write_seeds,
)
from tests.two_rounds import Contribution

pytestmark = pytest.mark.spark
FEEDS = {
    "qlik_ct_demo": "qlik_change_tables",
    "qlik_kafka_demo": "qlik_kafka",
    "goldengate_demo": "goldengate_trail",
}
JP_FEEDS = {"hirdb_demo": "hirdb_update_sql", "linkexpress_demo": "linkexpress_extract"}


def jp_simulation():
    """The Japanese demo feeds' workload (JP_TABLES, with truncates), as `cdc demo` runs it."""
    return simulate(seed=11, truncate_every=DEMO_TRUNCATE_EVERY, tables=JP_TABLES)


def _state(lake, rows=None):
    """``{feed: {(schema, table): {primary key: row}}}`` of the lake's current_state, or of
    ``rows`` of it read earlier (``two_rounds.after_round1``)."""
    state: dict = {}
    for row in read_mart(lake, "current_state") if rows is None else rows:
        state.setdefault(row["feed"], {}).setdefault(
            (row["source_schema"], row["source_table"]), {}
        )[row["primary_key"]] = row["row"]
    return state


def test_shipped_seeds_describe_the_simulated_tables():
    """The demo's catalog is the simulator's, its typed models are what `cdc scaffold` writes
    for it, and the project's own seeds start empty (the demo is separable, issue 16)."""
    from python_udfs.config import DEMO_SEEDS, load_catalog
    from python_udfs.scaffold import (
        DEMO_TYPED_MODELS_DIR,
        DEMO_TYPED_MODELS_YML,
        typed_model_files,
    )

    columns, tables = catalog_rows({**FEEDS, **JP_FEEDS})
    with (REPO / "seeds" / DEMO_SEEDS[0]).open(encoding="utf-8") as fh:
        shipped = list(csv.DictReader(fh))
    assert [{k: str(v) for k, v in row.items()} for row in columns] == shipped
    assert len(tables) == 15 and CDC_COLUMNS_HEADER == list(shipped[0])
    catalog, spark_types, _ = load_catalog(REPO / "seeds", {}, demo=True)
    expected = typed_model_files(catalog, spark_types, DEMO_TYPED_MODELS_YML, demo=True)
    folder = REPO / DEMO_TYPED_MODELS_DIR
    assert {p.name: p.read_text(encoding="utf-8") for p in folder.iterdir()} == expected
    assert load_catalog(REPO / "seeds", {})[0] == {}


#: Landing rounds of the oracle: the first builds from nothing, the second is an incremental,
#: data-only run whose transactions and files continue what the first left open (the crash test
#: lands two rounds too, and the appended-file test adds a third run). Each is a `cdc run` (a
#: JVM, staging and about a hundred dbt nodes, over a minute): two keep `make test` under 30 minutes.
ROUNDS = 2


def landing_rounds(folder: Path, rounds: int = ROUNDS) -> list[list[Path]]:
    """Split a feed's files into ``rounds`` consecutive groups by file name (the order the
    writer produced them; a Qlik .csv stays with its .dfm, Avro schemas come first)."""
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    unit = {p: p.name[:-4] if p.suffix in (".csv", ".dfm") else p.name for p in files}
    names = sorted({unit[p] for p in files if "schemas" not in p.parts and "dirdef" not in p.parts})
    groups = [
        [
            p
            for p in files
            if unit[p] in names[len(names) * k // rounds : len(names) * (k + 1) // rounds]
        ]
        for k in range(rounds)
    ]
    groups[0] += [p for p in files if unit[p] not in names]  # schemas, sourcedefs
    return groups


def _land(src: Path, landing: Path, files: list[Path]) -> None:
    for path in files:
        target = landing / path.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)


def _snapshot(lake) -> dict:
    """The marts an incremental run and a full refresh must agree on, read by path with
    delta-rs (:func:`~tests.spark_project.read_mart`: history without the generation of the run
    that wrote each row), as {mart: {row id: row as sorted JSON}}."""
    log = {}
    for row in read_mart(lake, "change_log"):
        row.pop("applied_generation", None)  # a partition folder, absent from the files
        if row["feed"] == "qlik_ct_demo":
            # Qlik change tables mark no transaction end: the order of a change inside its
            # transaction counts the changes landed so far (tables land in separate files)
            row.pop("transaction_sequence")
        log[row["change_id"]] = json.dumps(row, default=str, sort_keys=True)
    return {
        "change_log": log,
        "current_state": {
            r["current_state_id"]: json.dumps(r, default=str, sort_keys=True)
            for r in read_mart(lake, "current_state")
        },
        "history": {
            r["version_id"]: json.dumps(r, default=str, sort_keys=True)
            for r in read_mart(lake, "history")
        },
    }


#: The oracle's `cdc run` of each landing round (the completed process, with ``nodes``:
#: {unique_id: status} of the dbt nodes it ran, and ``manifest``: dbt's manifest after it).
ORACLE_ROUNDS: list = []
#: What ``dbt build --target thrift --full-refresh`` printed: the oracle's full refresh, through
#: a loopback Spark Thrift Server (``build_through_thrift``).
THRIFT_FULL_REFRESH: list[str] = []


@pytest.fixture(scope="module")
def oracle_run(tmp_path_factory):
    """All five demo feeds landed in :data:`ROUNDS` rounds, one ``cdc run`` each, then the
    marts of a full refresh over the same files, built by dbt through a loopback Spark Thrift
    Server (the cluster path, README; :data:`THRIFT_FULL_REFRESH`)."""
    root = tmp_path_factory.mktemp("oracle")
    src, landing, lake = root / "src", root / "landing", root / "lake"
    # with the typed views of the demo tables from the first round (a data-only round leaves
    # them as the first round created them)
    project = make_project(root)
    sim = simulate(seed=11)
    feeds = load_project(project, check_paths=False).feeds
    for feed, fmt in FEEDS.items():
        write_feed(sim, fmt, src / feed, feeds[feed].options)
    for feed, fmt in JP_FEEDS.items():
        write_feed(jp_simulation(), fmt, src / feed, feeds[feed].options)
    rounds = [landing_rounds(src / feed) for feed in {**FEEDS, **JP_FEEDS}]
    for feed in {**FEEDS, **JP_FEEDS}:
        (landing / feed).mkdir(parents=True)  # a feed's folder must exist, even empty
    runs = []
    for k in range(ROUNDS):
        for feed_rounds in rounds:
            _land(src, landing, feed_rounds[k])
        # the first round also runs the dbt unit tests (cdc run leaves them out by default)
        options = ["--unit-tests"] if k == 0 else []
        runs.append(cdc(project, "run", *options, landing=landing, lake=lake))
        runs[-1].nodes = run_results(project)
        runs[-1].manifest = json.loads((project / "target" / "manifest.json").read_text())
    ORACLE_ROUNDS[:] = runs
    incremental = _snapshot(lake)
    # the cluster path: the full refresh is dbt through a loopback Spark Thrift Server
    THRIFT_FULL_REFRESH[:] = [
        build_through_thrift(project, "--full-refresh", landing=landing, lake=lake)
    ]
    full_refresh = _snapshot(lake)
    return sim, project, landing, lake, runs[-1], incremental, full_refresh


def summary_figures(stdout: str) -> dict[str, list[int]]:
    """The figures of the summary table a `cdc run` printed, per feed: ``{feed: [files, changes,
    pending, tables, live rows, versions, open rejects]}``."""
    return {
        cells[0]: [int(c) for c in cells[1:]]
        for line in stdout.splitlines()
        if line.startswith("│")
        for cells in [[c.strip() for c in line.strip("│").split("│")]]
    }


def test_the_run_output_is_short_and_its_summary_counts_what_the_marts_hold(oracle_run):
    """issue 16: a run printed 277 dbt log lines and one line per file, and its summary listed
    dbt's temporary tables. The last round's `cdc run` (the demo's path) prints at most 60
    lines, none of dbt's own log, and its table is what the marts hold."""
    _sim, _project, _landing, lake, last, incremental, _full = oracle_run
    lines = last.stdout.splitlines()
    assert len(lines) <= 60, last.stdout
    assert not [line for line in lines if re.match(r"\d\d:\d\d:\d\d ", line)]
    assert re.search(r"dbt build: \d+ node\(s\) built, \d+ test\(s\) run: \d+ passed", last.stdout)
    assert "__dbt_tmp" not in last.stdout
    shown = summary_figures(last.stdout)

    def per_feed(rows, value=lambda r: 1):
        out: dict = {}
        for r in rows:
            out.setdefault(r["feed"], []).append(value(r))
        return out

    files = per_feed(read_mart(lake, "ingested_files"), lambda r: r["source_file"])
    log = per_feed(read_mart(lake, "change_log"))
    pending = per_feed(read_mart(lake, "pending_changes"))
    state = per_feed(
        read_mart(lake, "current_state"), lambda r: (r["source_schema"], r["source_table"])
    )
    history = per_feed(map(json.loads, incremental["history"].values()))
    rejects = per_feed(r for r in read_mart(lake, "ingest_rejects") if not r["restaged_batch_id"])
    expected = {
        feed: [
            len(set(files.get(feed, []))),
            len(log.get(feed, [])),
            len(pending.get(feed, [])),
            len(set(state.get(feed, []))),
            len(state.get(feed, [])),
            len(history.get(feed, [])),
            len(rejects.get(feed, [])),
        ]
        for feed in {**FEEDS, **JP_FEEDS}
    }
    assert shown == expected


def test_incremental_rounds_and_a_full_refresh_through_a_thrift_server_build_identical_marts(
    oracle_run,
):
    """The embedded engine's incremental rounds and a full refresh of the same raw tables by
    `dbt build --target thrift` through a loopback Spark Thrift Server (`cdc thrift-server`)
    build the same change log, current state and history; dbt's tests pass through the server
    (the current state equals the simulated database: the test after this one)."""
    *_, incremental, full_refresh = oracle_run
    (output,) = THRIFT_FULL_REFRESH
    assert "ERROR=0" in output and "PASS=" in output, output[-3000:]
    assert len(incremental["history"]) > len(incremental["current_state"]) > 0
    differences = {}
    for mart in ("change_log", "current_state", "history"):
        ids = set(incremental[mart]) | set(full_refresh[mart])
        differences[mart] = sorted(
            (i, incremental[mart].get(i), full_refresh[mart].get(i))
            for i in ids
            if incremental[mart].get(i) != full_refresh[mart].get(i)
        )[:5]
    assert differences == {"change_log": [], "current_state": [], "history": []}


def test_a_run_with_new_data_only_leaves_seeds_views_and_self_checks(oracle_run):
    """issue 11, ADR 0009, ADR 0015: the oracle's second round lands data only (the project as
    round 1 built it), so its build recreates no seed and no view (they hold no data) but
    rebuilds every table and incremental model and runs every data test round 1 ran, except the
    self-checks (tag cdc_self_check), which round 1's whole build ran; the oracle's other tests
    read the marts, the `history` view and the typed views it leaves."""
    first, second = ORACLE_ROUNDS[:2]
    manifest = second.manifest
    kinds: dict[str, set] = {}
    for uid, node in manifest["nodes"].items():
        kind = node["resource_type"]
        if kind == "model":
            kind = node["config"]["materialized"]
        kinds.setdefault(kind, set()).add(uid)
    round1, round2 = first.nodes, second.nodes
    assert "new data only" not in first.stdout
    assert "new data only" in second.stdout
    assert kinds["view"] and kinds["seed"] and kinds["table"] and kinds["incremental"]
    for kind in ("view", "seed", "table", "incremental"):
        assert kinds[kind] <= set(round1), kind
    assert not (kinds["view"] | kinds["seed"]) & set(round2)
    assert kinds["table"] | kinds["incremental"] <= set(round2)
    # every data test again but the self-checks; the typed views carry no tests of their own
    # (ADR 0034: current_state's tests on current_state_id and primary_key cover their rows)
    typed = {
        uid
        for uid, node in manifest["nodes"].items()
        if node["resource_type"] == "model" and node["path"].startswith("marts/tables/")
    }
    on_typed = {
        uid
        for uid, node in manifest["nodes"].items()
        if node["resource_type"] == "test" and set(node["depends_on"]["nodes"]) & typed
    }
    self_checks = {
        uid
        for uid, node in manifest["nodes"].items()
        if node["resource_type"] == "test" and "cdc_self_check" in node["config"]["tags"]
    }
    tests1 = {uid for uid in round1 if uid.startswith("test.")}
    assert typed and tests1 and not on_typed
    assert "test.cdc_changelog.history_replays_to_current_state" in self_checks
    # self-checks, like the typed views' key tests were: run by every whole build
    covering = {uid.split(".")[2] for uid in tests1 & self_checks}
    assert {
        "not_null_current_state_primary_key",
        "unique_current_state_current_state_id",
    } <= covering
    assert self_checks <= tests1
    assert {uid for uid in round2 if uid.startswith("test.")} == tests1 - self_checks
    assert "self-checks are left" in second.stdout
    assert set(round2.values()) <= {"success", "pass", "warn"}


def test_history_replays_to_current_state(oracle_run):
    *_, incremental, _full = oracle_run
    current = {}
    for line in incremental["history"].values():
        row = json.loads(line)
        if row["is_current"] and not row["is_deleted"]:
            current[(row["feed"], row["source_table"], row["primary_key"])] = row["row"]
    state = {
        (r["feed"], r["source_table"], r["primary_key"]): r["row"]
        for r in map(json.loads, incremental["current_state"].values())
    }
    assert current == state


def test_current_state_equals_the_simulated_database(oracle_run):
    sim, _project, _landing, lake, first, *_ = oracle_run
    state = _state(lake)
    for feed in FEEDS:
        assert state[feed] == {k: v for k, v in sim.final_state.items() if v}, feed
    pending = read_mart(lake, "pending_changes")
    assert {r["feed"] for r in pending} <= {"qlik_kafka_demo", "goldengate_demo", *JP_FEEDS}
    for feed in (
        "qlik_kafka_demo",
        "goldengate_demo",
    ):  # the open transaction's last event is missing
        assert len([r for r in pending if r["feed"] == feed]) == max(
            len(sim.open_transaction) - 1, 0
        )
    assert "cdc_changelog: what the lake holds now" in first.stdout
    jp_sim = jp_simulation()
    assert any(c.operation == "TRUNCATE" for c in jp_sim.changes)
    for feed in JP_FEEDS:  # PURGE TABLE / empty full extracts in the middle of the workload
        assert state[feed] == {k: v for k, v in jp_sim.final_state.items() if v}, feed
        # the open transaction has no COMMIT line / commit record yet
        assert len([r for r in pending if r["feed"] == feed]) == len(jp_sim.open_transaction)
    log = read_mart(lake, "change_log")
    events = [r for r in log if r["feed"] == "hirdb_demo" and r["operation"] == "EVENT"]
    assert events and all(r["source_table"] is None for r in events)
    loads = [r for r in log if r["feed"] == "linkexpress_demo" and r["operation"] == "LOAD"]
    load_files = {r["source_file"] for r in loads}
    assert len(load_files) >= 3  # a full extract per table, and a re-extract in the middle
    # each full extract replaces its table as of its first row (no derived TRUNCATE rows)
    assert not [r for r in log if r["change_position"].endswith(":000000000000")]


def test_change_log_is_unique_ordered_and_has_paired_update_images(oracle_run):
    sim, project, landing, lake, *_ = oracle_run
    log = read_mart(lake, "change_log")
    assert len({r["change_id"] for r in log}) == len(log)
    ct_updates = [r for r in log if r["feed"] == "qlik_ct_demo" and r["operation"] == "UPDATE"]
    expected = {
        c.change_seq: c
        for c in sim.changes
        if c.operation == "UPDATE" and c not in sim.open_transaction
    }
    assert len(ct_updates) == len(expected)
    for row in ct_updates:
        change = expected[row["change_position"]]
        assert row["before_image"] == change.before and row["after_image"] == change.after
        assert sorted(row["changed_columns"]) == sorted(change.changed)
    kafka_updates = [
        r for r in log if r["feed"] == "qlik_kafka_demo" and r["operation"] == "UPDATE"
    ]
    absent = [r for r in kafka_updates if expected[r["change_position"]].absent]
    assert absent and all("NOTE" not in r["after_image"] for r in absent)
    (typed,) = query(
        project,
        "select count(*) as rows, collect_set(typeof(unit_price)) as types"
        " from cdc.qlik_ct_demo__sales__order_lines",
        landing=landing,
        lake=lake,
    )
    assert typed["rows"] == len(sim.final_state[("SALES", "ORDER_LINES")])
    assert len(typed["types"]) == 1 and typed["types"][0].startswith("decimal(")


def _redeliver_full_loads(landing: Path) -> dict[str, list[str]]:
    """Land a copy of one full load of each format that has them (issue 76), as a re-delivery
    would: a Qlik Kafka dump holding REFRESH messages gzip-compressed beside itself, a Qlik
    change-table ``LOAD*`` file (with its ``.dfm``) and a Linkexpress full extract under
    another folder. Returns ``{feed: [paths of the copies, relative to the landing root]}``."""
    dump = sorted((landing / "qlik_kafka_demo").glob("*-00000000000000000000.jsonl"))[0]
    assert '"REFRESH"' in dump.read_text(encoding="utf-8")
    compressed = dump.with_name(dump.name + ".gz")
    compressed.write_bytes(gzip.compress(dump.read_bytes()))
    copies = {"qlik_kafka_demo": [compressed]}
    load = sorted((landing / "qlik_ct_demo").glob("*.*/LOAD00000001.*"))[0]
    resent = landing / "qlik_ct_demo" / "resent" / load.parent.name
    resent.mkdir(parents=True)
    # the data file and its .dfm, if any
    copies["qlik_ct_demo"] = [
        Path(shutil.copy(part, resent / part.name)) for part in load.parent.glob(load.stem + ".*")
    ]
    extract = sorted((landing / "linkexpress_demo").glob("*.*/*_F.dat"))[0]
    resent = landing / "linkexpress_demo" / "resent" / extract.parent.name
    resent.mkdir(parents=True)
    copies["linkexpress_demo"] = [Path(shutil.copy(extract, resent / extract.name))]
    return {
        feed: [p.relative_to(landing).as_posix() for p in paths] for feed, paths in copies.items()
    }


def test_appended_files_add_exactly_their_changes_and_a_run_with_nothing_new_is_skipped(
    oracle_run, tmp_path
):
    """After the full refresh (through the Thrift Server), `cdc run --every` in one process:
    its first run applies an appended file, its second a file landed while it waited (a build
    in the same Spark session), each adding its one change and nothing else, both data-only
    builds (round 2's build of the same project is the last one `cdc run` recorded); its
    third, with nothing new, skips dbt and leaves the marts as they are. (An incremental run
    that re-reads applied changes and changes nothing is the crash test's.)

    The first run also ingests a re-delivered full load of each format that has them
    (:func:`_redeliver_full_loads`): each adds no row to change_log, and current_state and
    history keep their rows (issue 76).

    Readers never wait (issue 73): a second process (tests/lake_reader.py) queries
    current_state and history in a loop while the runs work, through a reader session on the
    running process's metastore server and by path with delta-rs. None of its queries fails,
    and every answer is the lake as it stood before the first run or after one of the runs, in
    that order. `cdc sql` run between two runs reads through the same server."""
    sim, project, landing, lake, last_round, *_ = oracle_run
    before_log, before_state = read_mart(lake, "change_log"), _state(lake)
    answers = {0: lake_reader.delta_answer(lake)}
    reader = lake_reader.start(lake, tmp_path / "reader", cli_env(landing, lake))
    redelivered = _redeliver_full_loads(landing)
    folder = landing / "qlik_ct_demo" / "SALES.ORDER_LINES__ct"
    header = "header__change_seq,header__change_oper,header__change_mask,header__stream_position,header__operation,header__transaction_id,header__timestamp,"
    header += "ORDER_ID,LINE_NO,PRODUCT,QUANTITY,UNIT_PRICE,NOTE,SHIPPED_DATE\n"
    line = '"20990101000000000000000000000999999","I","3F80","x","INSERT","FF",2099-01-01 00:00:00.0000000,4242,1,"extra",2,9.500,,2099-01-02\n'
    (folder / "20990101-000000000.csv").write_text(header + line, encoding="utf-8")
    second = '"20990102000000000000000000000999999","I","3F80","x","INSERT","FE",2099-01-02 00:00:00.0000000,4242,2,"more",1,1.250,,\n'
    waits, during = {}, {}

    def on_wait(run: int) -> None:
        answers[run] = lake_reader.delta_answer(lake)
        if run == 1:  # while the process waits (5 s): its next run finds this file
            (folder / "20990102-000000000.csv").write_text(header + second, encoding="utf-8")
        waits[run] = (read_mart(lake, "change_log"), _state(lake))
        if run == 1:  # cdc sql while the process holds the lake: through its metastore
            during["sql"] = cdc(
                project, "sql", "--json", "select count(*) as n from cdc.history", **paths
            )
        if run == 2:  # after the last run that changes anything
            during["reading"] = lake_reader.finish(reader, tmp_path / "reader")

    paths = {"landing": landing, "lake": lake}
    try:
        appended = cdc_every(project, "--every", "5", "--runs", "3", **paths, on_wait=on_wait)
    finally:
        lake_reader.finish(reader, tmp_path / "reader")
    assert appended.returncode == 0, appended.stdout[-6000:]
    (counted,) = [json.loads(x) for x in during["sql"].stdout.splitlines() if x.startswith("{")]
    assert counted["n"] in {answers[1]["history"][0], answers[2]["history"][0]}
    states = [answers[0], answers[1], answers[2]]
    assert states[0] != states[1] != states[2]
    lake_reader.check_reading(during["reading"], states)
    # a run on a lake that has its databases: no metastore error logged for what Spark handles
    # (AlreadyExistsException of `create database if not exists`, python_udfs/log4j2.properties)
    assert " ERROR " not in appended.stdout, appended.stdout[-3000:]
    runs = appended.stdout.split(" next run in ")
    assert len(runs) == 3 and "dbt build:" in runs[0] and "new data only" in runs[0]
    assert "new data only" in runs[1] and "dbt build:" in runs[1]  # built in the same session
    assert "dbt build skipped" in runs[2] and "dbt build:" not in runs[2]

    def added(log: list[dict]) -> set[str]:
        return {r["change_id"] for r in log} - {r["change_id"] for r in before_log}

    assert added(waits[1][0]) == {"qlik_ct_demo:20990101000000000000000000000999999"}
    logged_before, logged = (Counter(r["feed"] for r in log) for log in (before_log, waits[1][0]))
    for feed in redelivered:  # a re-delivered full load adds no row, under any change_id
        expected = logged_before[feed] + (feed == "qlik_ct_demo")
        assert logged[feed] == expected, f"{feed}: a re-delivered full load was logged"
    # the summary's figures per feed: changes, live rows and versions as the last round left
    # them (the full refresh built the same marts), but the one appended change and its version
    before, first = summary_figures(last_round.stdout), summary_figures(runs[0])
    for feed, figures in before.items():
        added_one = [0, 1, 0, 0, 1, 1, 0] if feed == "qlik_ct_demo" else [0] * 7
        copies = [c for c in redelivered.get(feed, []) if not c.endswith(".dfm")]
        added_one[0] = len(copies) + (feed == "qlik_ct_demo")  # files: the copies, the new one
        assert [a - b for a, b in zip(first[feed], figures, strict=True)] == added_one, feed
    assert added(read_mart(lake, "change_log")) == {
        "qlik_ct_demo:20990101000000000000000000000999999",
        "qlik_ct_demo:20990102000000000000000000000999999",
    }
    new_state = _state(lake)["qlik_ct_demo"][("SALES", "ORDER_LINES")]
    assert new_state['["4242","1"]'] == {
        "ORDER_ID": "4242",
        "LINE_NO": "1",
        "PRODUCT": "extra",
        "QUANTITY": "2",
        "UNIT_PRICE": "9.500",
        "NOTE": None,
        "SHIPPED_DATE": "2099-01-02",
    }
    assert new_state['["4242","2"]'] == {
        "ORDER_ID": "4242",
        "LINE_NO": "2",
        "PRODUCT": "more",
        "QUANTITY": "1",
        "UNIT_PRICE": "1.250",
        "NOTE": None,
        "SHIPPED_DATE": None,
    }
    after_state = _state(lake)
    assert after_state == waits[2][1]  # the third run, with nothing new, changed nothing
    del after_state["qlik_ct_demo"][("SALES", "ORDER_LINES")]['["4242","1"]']
    del after_state["qlik_ct_demo"][("SALES", "ORDER_LINES")]['["4242","2"]']
    assert after_state == before_state  # nothing else changed
    manifest = [m["source_file"] for m in read_mart(lake, "ingested_files")]
    for name in ("20990101-000000000.csv", "20990102-000000000.csv"):
        assert manifest.count(f"qlik_ct_demo/SALES.ORDER_LINES__ct/{name}") == 1
    for copies in redelivered.values():  # each copy was ingested once
        assert all(manifest.count(copy) == 1 for copy in copies if not copy.endswith(".dfm"))


GOLDENGATE_FEEDS = """    gg_tc:
      format: goldengate_trail
      path: gg_tc
      options:
        definitions: gg_tc/dirdef/tc.def
    gg_tr:
      format: goldengate_trail
      path: gg_tr
"""

SAMPLE_FEEDS = """  cdc_feeds:
    samples_ct:
      format: qlik_change_tables
      path: qlik_ct
    samples_kafka:
      format: qlik_kafka
      path: qlik_kafka
      options:
        topic_tables:
          item_master_update_16_columns: SAPTM.ITEM_MASTER
          employees_salaries_md_and_refresh: employees.salaries
          bad: employees.salaries
"""
ITEM_MASTER_COLUMNS = [
    "item_no",
    "mfg_div_cd",
    "phys_loc_cd",
    "plnr_cd",
    "inv_class_cd",
    "use_um_cd",
    "byr_cd",
    "item_desc",
    "itm_aut_ord_fct",
    "itm_ord_mod_cd",
    "itm_whs_ctl_cd",
    "itm_aut_ord_cd",
    "gnr_pt_no_ind",
    "div_adr_no",
    "ems_rel_cd",
    "load_date_time",
]


#: What `cdc stage` and `cdc rejects` printed in the real-samples project (before any dbt run).
REJECT_LISTINGS: dict[str, str] = {}


def land_goldengate_samples(samples: Path, landing: Path) -> None:
    """Land the real GoldenGate trails as the feeds of :data:`GOLDENGATE_FEEDS`: the classic
    trail ``tc000000`` with its definitions file (feed gg_tc) and the 12.2 trail (feed gg_tr)."""
    (landing / "gg_tc" / "dirdef").mkdir(parents=True)
    (landing / "gg_tr").mkdir(parents=True)
    shutil.copy(samples / "goldengate" / "tc000000", landing / "gg_tc" / "tc000000")
    shutil.copy(samples / "goldengate" / "tc.def", landing / "gg_tc" / "dirdef" / "tc.def")
    shutil.copy(samples / "goldengate" / "tr000000000", landing / "gg_tr" / "tr000000000")


@pytest.fixture(scope="module")
def real_samples_run(tmp_path_factory, samples):
    """The real Qlik samples (with bad input and tables with hostile names beside them) and the
    real GoldenGate trails in one project: ``cdc stage``, ``cdc run`` (no table declared yet),
    ``cdc scaffold``, the analytics engineer's key for EDW.SAMPLE, then ``cdc run`` again.
    Returns ``(project, lake, first run process, last run process)``."""
    tmp_path = tmp_path_factory.mktemp("real_samples")
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    land_goldengate_samples(samples, landing)
    shutil.copytree(samples / "qlik_ct", landing / "qlik_ct")
    shutil.copytree(samples / "qlik_kafka", landing / "qlik_kafka")
    # the demo switched off, as a user's project does: only the samples' tables are built
    project = make_project(tmp_path, SAMPLE_FEEDS + GOLDENGATE_FEEDS)
    # bad input beside the real files: wrong field count, non-JSON line, Avro not matching, overlong mask
    ct_dir = landing / "qlik_ct" / "EDW.SAMPLE__ct"
    shutil.copy(ct_dir / "20211201-122433444.dfm", ct_dir / "20211201-130000000.dfm")
    (ct_dir / "20211201-130000000.csv").write_text(
        "header__change_seq,header__change_oper,header__timestamp,SAMPLE_ID,SAMPLE_NAME,EDW_INSERTED_DTM,EDW_UPDATED_DTM\n"
        '20210915031232320000000000000000042,I,2021-10-08 16:12:31.320000,6,"Sample 6",2021-12-01 11:20:30,2021-12-01 11:20:31\n'
        '20210915031233320000000000000000043,I,2021-10-08 16:12:32.320000,7,"short line"\n'
        '20210915031234320000000000000000044,I,2021-10-08 16:12:33.320000,8,"Sample 8",2021-12-01 11:20:30,2021-12-01 11:20:31\n',
        encoding="utf-8",
    )
    md_line = (
        (samples / "qlik_kafka" / "employees_salaries_md_and_refresh.jsonl")
        .read_bytes()
        .splitlines()[0]
    )
    bad_json = (
        b'{"magic": "atMSG", "type": "DT", "headers": null, "messageSchemaId": null, "messageSchema": null, "message": '
        b'{"data": {"emp_no": 1, "salary": 10, "from_date": "2000-01-01", "to_date": "2001-01-01"}, "beforeData": null, '
        b'"headers": {"operation": "INSERT", "changeSequence": "20240101000000000000000000000000001", "timestamp": "2024-01-01T00:00:00", '
        b'"streamPosition": "", "transactionId": "AA", "changeMask": "0100", "columnMask": "0F"}}}\n'
        b"this is not json\n"
        b'{"magic": "atMSG", "type": "DT", "headers": null, "messageSchemaId": null, "messageSchema": null, "message": '
        b'{"data": {"emp_no": 2, "salary": 20, "from_date": "2000-01-01", "to_date": "2001-01-01"}, "beforeData": null, '
        b'"headers": {"operation": "INSERT", "changeSequence": "20240101000000000000000000000000002", "timestamp": "2024-01-01T00:00:00", '
        b'"streamPosition": "", "transactionId": "AB", "changeMask": "0F", "columnMask": "0F"}}}\n'
    )
    (landing / "qlik_kafka" / "bad-0-00000000000000000000.jsonl").write_bytes(
        md_line + b"\n" + bad_json
    )
    envelope = (
        b"atMSG\x04DT\x00\x02\x40"
        + b"94345778F0A920B9F6634C541177EBB2"
        + b"\x00"
        + b"\x06"
        + b"\x02\x90\xe2"
    )
    (landing / "qlik_kafka" / "bad-0-00000000000000000005.lpv").write_bytes(
        len(envelope).to_bytes(4, "big") + envelope
    )
    # names from the data that SQL, Jinja, YAML or a file name cannot take as they are
    (landing / "qlik_kafka" / "hostile-0-00000000000000000000.jsonl").write_bytes(
        hostile_kafka_dump()
    )

    # item_master's dumps carry no metadata: its columns are declared in the catalog first.
    item_master = [
        {
            "feed": "samples_kafka",
            "source_schema": "SAPTM",
            "source_table": "ITEM_MASTER",
            "column_name": name,
            "ordinal": i,
            "source_type": "DATETIME" if name == "load_date_time" else "STRING",
            "length": "",
            "precision": "",
            "scale": "",
            "primary_key_position": 1 if name == "item_no" else 0,
            "nullable": "true",
            "spark_type": "timestamp" if name == "load_date_time" else "string",
        }
        for i, name in enumerate(ITEM_MASTER_COLUMNS, start=1)
    ]
    write_seeds(
        project,
        item_master,
        [
            {
                "feed": "samples_kafka",
                "source_schema": "SAPTM",
                "source_table": "ITEM_MASTER",
                "table_identifier": "item_master_update_16_columns",
            }
        ],
    )
    staged = cdc(project, "stage", landing=landing, lake=lake)
    # right after staging, before any dbt run: the rejects with their reasons (issue 16)
    listed = cdc(project, "rejects", "--feed", "samples_kafka", landing=landing, lake=lake)
    # a first run before any table is declared: the tables whose metadata names a key (the
    # Kafka MD messages, the GoldenGate definitions) are applied, EDW.SAMPLE's changes are
    # logged without a key (issue 46)
    first = cdc(project, "run", landing=landing, lake=lake)
    REAL_SAMPLES_BEFORE_SCAFFOLD.update(
        stdout=first.stdout,
        state={(r["feed"], r["source_table"]) for r in read_mart(lake, "current_state")},
    )
    cdc(project, "scaffold", landing=landing, lake=lake)
    columns = list(csv.DictReader((project / "seeds" / "cdc_columns.csv").open(encoding="utf-8")))
    # The .dfm declares no key for EDW.SAMPLE: the analytics engineer sets it.
    for c in columns:
        if c["source_table"] == "SAMPLE" and c["column_name"] == "SAMPLE_ID":
            c["primary_key_position"] = "1"
    tables = list(csv.DictReader((project / "seeds" / "cdc_tables.csv").open(encoding="utf-8")))
    write_seeds(project, columns, tables)
    REJECT_LISTINGS.update(staged=staged.stdout, listed=listed.stdout)
    run = cdc(project, "run", landing=landing, lake=lake)
    REAL_SAMPLES_NODES.update(run_results(project))
    return project, lake, first, run


#: {unique_id: status} of the dbt nodes the real-samples `cdc run` built and tested.
REAL_SAMPLES_NODES: dict[str, str] = {}
#: The real-samples project's first `cdc run`, before `cdc scaffold`: its ``stdout`` and the
#: ``(feed, table)`` pairs current state held after it.
REAL_SAMPLES_BEFORE_SCAFFOLD: dict[str, object] = {}


def test_real_samples_tables_are_applied_from_their_metadata_then_from_the_scaffold(
    real_samples_run,
):
    """issue 46: a first run before any table is declared applies every table whose feed's
    metadata names a key: the Kafka MD message's employees.salaries and the tables with
    hostile names, and the GoldenGate trails' tables. EDW.SAMPLE's .dfm names no key: its
    changes are logged without one and the run warns. After `cdc scaffold` and the key set in
    the seed, the next plain run applies them, with no --full-refresh."""
    _project, lake, first, _run = real_samples_run
    before = REAL_SAMPLES_BEFORE_SCAFFOLD["state"]
    kafka = {t for f, t in before if f == "samples_kafka"}
    assert "salaries" in kafka and set(HOSTILE_NAMES) <= kafka
    assert {f for f, _t in before} >= {"samples_kafka", "gg_tc", "gg_tr"}
    assert ("samples_ct", "SAMPLE") not in before
    assert "WARN 1 changes_of_tables_not_in_catalog" in first.stdout, first.stdout[-3000:]
    after = {(r["feed"], r["source_table"]) for r in read_mart(lake, "current_state")}
    assert ("samples_ct", "SAMPLE") in after and before <= after


def test_with_the_demo_off_a_run_builds_only_the_real_samples_tables(real_samples_run):
    """issue 16: the real samples' project has the demo switched off (`cdc_demo: false`, as a
    user's project does): no demo seed, typed model or test is built, every typed model is one
    of the samples' feeds, and the marts hold those feeds alone."""
    project, lake, _first, _proc = real_samples_run
    feeds = ("samples_ct", "samples_kafka", "gg_tc", "gg_tr")
    assert REAL_SAMPLES_NODES and not [n for n in REAL_SAMPLES_NODES if "demo" in n]
    assert "seed.cdc_changelog.cdc_columns" in REAL_SAMPLES_NODES
    models = {n.split(".")[2] for n in REAL_SAMPLES_NODES if n.startswith("model.")}
    typed = {m for m in models if "__" in m and not m.startswith(("stg_", "int_"))}
    assert typed and all(m.startswith(tuple(f"{f}__" for f in feeds)) for m in typed)
    # every feed of the samples, and no other, has rows and files in the marts
    assert {r["feed"] for r in read_mart(lake, "current_state")} == set(feeds)
    assert {r["feed"] for r in read_mart(lake, "ingested_files")} == set(feeds)


def test_real_samples_through_stage_scaffold_and_run_with_bad_input(real_samples_run):
    # the first run applies the staged batch (its rejects warn there); the state is the last's
    project, lake, proc, _last = real_samples_run
    columns = list(csv.DictReader((project / "seeds" / "cdc_columns.csv").open(encoding="utf-8")))
    salaries = {c["column_name"]: c for c in columns if c["source_table"] == "salaries"}
    assert {k: v["primary_key_position"] for k, v in salaries.items()} == {
        "emp_no": "1",
        "salary": "0",
        "from_date": "2",
        "to_date": "0",
    }
    assert salaries["from_date"]["spark_type"] == "date"
    assert (
        project / "models" / "marts" / "tables" / "samples_kafka__employees__salaries.sql"
    ).is_file()
    assert proc.returncode == 0

    log = {r["change_id"]: r for r in read_mart(lake, "change_log")}
    update = log["samples_ct:20210915031230320000000000000000041"]
    assert update["operation"] == "UPDATE" and update["source_table"] == "SAMPLE"
    assert update["after_image"]["SAMPLE_NAME"] == "Sample 4 🔥🔥🔥🔥"
    assert update["after_image"]["EDW_INSERTED_DTM"] == "2021-12-01 11:20:30.444444"
    assert str(update["committed_at"])[:26] == "2021-10-08 14:12:31.320000"  # UTC
    assert log["samples_ct:20210915031231320000000000000000041"]["operation"] == "INSERT"
    item = log["samples_kafka:20230321213416580000000000000000017"]
    assert sorted(item["changed_columns"]) == ["item_desc", "load_date_time"]
    assert (
        len(item["after_image"]) == 16
        and item["after_image"]["load_date_time"] == "2023-03-21 14:34:21"
    )
    assert item["before_image"]["load_date_time"] is None
    loads = [r for r in log.values() if r["operation"] == "LOAD"]
    assert [(r["source_table"], r["primary_key"]) for r in loads] == [
        ("salaries", '["14472","1993-11-25"]')
    ]

    state = {
        (r["feed"], r["source_table"], r["primary_key"]): r["row"]
        for r in read_mart(lake, "current_state")
    }
    assert (
        state[("samples_ct", "SAMPLE", '["4"]')]["EDW_UPDATED_DTM"] == "2021-12-01 11:20:31.444444"
    )
    assert state[("samples_kafka", "salaries", '["14472","1993-11-25"]')] == {
        "emp_no": "14472",
        "salary": "49592",
        "from_date": "1993-11-25",
        "to_date": "1994-11-25",
    }
    assert (
        state[("samples_kafka", "ITEM_MASTER", '["AAL614"]')]["item_desc"]
        == "RIVET 3/16 POPR FENDER"
    )
    # the valid rows around the bad ones landed
    assert ("samples_ct", "SAMPLE", '["6"]') in state and ("samples_ct", "SAMPLE", '["8"]') in state
    assert ("samples_kafka", "salaries", '["2","2000-01-01"]') in state
    rejects = {
        (r["source_file"], r["reason"]): r
        for r in read_mart(lake, "ingest_rejects")
        if r["feed"].startswith("samples_")
    }
    assert set(rejects) == {
        ("qlik_ct/EDW.SAMPLE__ct/20211201-130000000.csv", "wrong_field_count"),
        ("qlik_kafka/bad-0-00000000000000000000.jsonl", "mask_longer_than_columns"),
        ("qlik_kafka/bad-0-00000000000000000000.jsonl", "invalid_json"),
        ("qlik_kafka/bad-0-00000000000000000005.lpv", "avro_decode_error"),
    }
    assert (
        rejects[("qlik_kafka/bad-0-00000000000000000000.jsonl", "invalid_json")]["record_index"]
        == 3
    )
    assert (
        rejects[("qlik_ct/EDW.SAMPLE__ct/20211201-130000000.csv", "wrong_field_count")][
            "record_offset"
        ]
        > 0
    )
    assert "4 new reject(s)" not in proc.stdout  # the rejects were staged by `cdc stage` before
    # `cdc stage` named the reasons; `cdc rejects` listed each with file, offset and reason
    assert "invalid_json 1" in REJECT_LISTINGS["staged"], REJECT_LISTINGS["staged"]
    listed = [line.split("\t") for line in REJECT_LISTINGS["listed"].splitlines()]
    assert listed[0] == [
        "feed",
        "source_file",
        "record_offset",
        "record_length",
        "reason",
        "message",
    ]
    assert {(r[0], r[1], r[4]) for r in listed[1:]} >= {
        ("samples_kafka", "qlik_kafka/bad-0-00000000000000000000.jsonl", "invalid_json")
    }
    assert all(r[0] == "samples_kafka" for r in listed[1:])
    # the run that applies that batch (the first) warns about them (tests/dbt/rejects_of_this_run.sql)
    assert re.search(r"WARN \d+ rejects_of_this_run", proc.stdout), proc.stdout[-3000:]
    assert "│ samples_kafka" in proc.stdout


def test_names_from_the_data_reach_every_typed_model_as_they_are(real_samples_run, tmp_path):
    """issue 14: tables and columns named with a quote, a double quote, a backtick, `;`, a
    newline, `{{ 7*7 }}`, a backslash or 300 characters (a Kafka MD message) go through stage,
    scaffold and run: the seeds keep the names, the model files get safe names, Jinja in a
    name is never rendered, each typed view is queryable, and scaffolding again changes nothing."""
    from python_udfs.scaffold import TYPED_MODELS_DIR, typed_model_files, typed_model_name

    project, lake, _first, _proc = real_samples_run
    landing = lake.parent / "landing"
    seeds = project / "seeds"
    columns = list(csv.DictReader((seeds / "cdc_columns.csv").open(encoding="utf-8")))
    hostile = {
        c["source_table"]: c["column_name"]
        for c in columns
        if c["source_schema"] == HOSTILE_SCHEMA and c["column_name"] != "ID"
    }
    assert hostile == {name: name for name in HOSTILE_NAMES}
    models = {
        name: typed_model_name("samples_kafka", HOSTILE_SCHEMA, name) for name in HOSTILE_NAMES
    }
    assert len(set(models.values())) == len(HOSTILE_NAMES)
    folder = project / TYPED_MODELS_DIR
    assert all((folder / f"{m}.sql").is_file() for m in models.values())
    assert all(len(m) <= 80 and m.isascii() for m in models.values())

    # Jinja in a name is text: the parsed descriptions and column names hold it as it is.
    manifest = json.loads((project / "target" / "manifest.json").read_text(encoding="utf-8"))
    node = manifest["nodes"][f"model.cdc_changelog.{models['{{ 7*7 }}']}"]
    assert "S'; --.{{ 7*7 }} from feed samples_kafka" in node["description"]
    assert "{{ 7*7 }}" in node["columns"] and "49" not in node["columns"]

    # Scaffolding again appends nothing and writes no model file; the YAML is rewritten from
    # the seeds (which the fixture edited after the first scaffold).
    before = {p.name: p.read_bytes() for p in [*seeds.glob("*.csv"), *folder.glob("*.sql")]}
    cdc(project, "scaffold", landing=landing, lake=lake)
    after = {p.name: p.read_bytes() for p in [*seeds.glob("*.csv"), *folder.glob("*.sql")]}
    assert after == before
    config = load_project(project, check_paths=False)
    expected = typed_model_files(config.catalog, config.spark_types)["_tables__models.yml"]
    assert (folder / "_tables__models.yml").read_text(encoding="utf-8") == expected

    def quoted(name):
        return "`" + name.replace("`", "``") + "`"

    sql = " union all ".join(
        f"select {n} as n, 'state' as kind, id, {quoted(name.lower())} as value, true as is_current "
        f"from cdc.{models[name]} union all "
        f"select {n}, 'history', id, {quoted(name.lower())}, is_current from cdc.{models[name]}__history"
        for n, name in enumerate(HOSTILE_NAMES)
    )
    rows = query(project, sql, landing=landing, lake=lake)
    for n, _name in enumerate(HOSTILE_NAMES):
        mine = sorted(
            (r["kind"], r["id"], r["value"], r["is_current"]) for r in rows if r["n"] == n
        )
        assert mine == [
            ("history", 1, "one", False),
            ("history", 1, "uno", True),
            ("history", 2, "two", True),
            ("state", 1, "uno", True),
            ("state", 2, "two", True),
        ], HOSTILE_NAMES[n][:20]

    # The views cast what their YAML says (ADR 0035): a seed type changed without `cdc scaffold`
    # fails typed_models_match_catalog, once for the current-state and once for the history
    # view of that column's table. The seed files are restored for the module's other tests
    # (a build with a selection leaves no record: the next `cdc run` loads the seeds again).
    kept = {p: p.read_bytes() for p in seeds.glob("*.csv")}
    try:
        for c in columns:
            if c["source_schema"] == HOSTILE_SCHEMA and c["column_name"] == "{{ 7*7 }}":
                c["spark_type"] = "int"
        tables = list(csv.DictReader((seeds / "cdc_tables.csv").open(encoding="utf-8")))
        write_seeds(project, columns, tables)
        stale = cdc(
            project,
            "run",
            "--",
            "--select",
            "cdc_columns",
            "typed_models_match_catalog",
            landing=landing,
            lake=lake,
            check=False,
        )
        assert "FAIL 2 typed_models_match_catalog" in stale.stdout, stale.stdout[-3000:]
    finally:
        for path, data in kept.items():
            path.write_bytes(data)


def test_dbt_docs_generate_documents_every_model_source_and_column(oracle_run):
    """issue 16: the docs site describes every source, staging, intermediate and mart model and
    every column the catalog finds in them (from shared doc blocks), opens on an overview page,
    cites no file outside the repository, and tags each node with its layer (and its feed
    format, for raw tables and staging models) so the lineage graph can be filtered."""
    import json
    from pathlib import Path

    _sim, project, landing, lake, *_ = oracle_run
    env = cli_env(landing, lake)
    dbt = Path(sys.executable).parent / "dbt"
    proc = subprocess.run(
        [
            str(dbt),
            "docs",
            "generate",
            "--project-dir",
            str(project),
            "--profiles-dir",
            str(project),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=project,
    )
    assert proc.returncode == 0, proc.stdout[-4000:]
    manifest = json.loads((project / "target" / "manifest.json").read_text())
    catalog = json.loads((project / "target" / "catalog.json").read_text())
    nodes = {
        k: n
        for k, n in {**manifest["nodes"], **manifest["sources"]}.items()
        if n["resource_type"] in ("model", "source")
        and k in {**catalog["nodes"], **catalog["sources"]}
    }
    layers = {"staging", "intermediate", "marts"}
    models = [n for n in nodes.values() if n["resource_type"] == "model"]
    assert {n["path"].split("/")[0] for n in models} == layers
    # the raw tables (5 formats, the manifest, rejects, metadata) and the previous key state
    assert len([n for n in nodes.values() if n["resource_type"] == "source"]) == 9
    missing, untagged, outside = [], [], []
    for key, node in nodes.items():
        name = node["name"]
        if not node["description"].strip():
            missing.append(name)
        documented = {
            c.lower(): spec["description"]
            for c, spec in node["columns"].items()
            if spec["description"].strip()
        }
        kind = "sources" if node["resource_type"] == "source" else "nodes"
        for column in catalog[kind][key]["columns"]:
            if column.lower() not in documented:
                missing.append(f"{name}.{column}")
        texts = [node["description"], *documented.values()]
        outside += [name for t in texts if "DESIGN.md" in t or "formats/" in t]
        tags = set(node["tags"])
        if node["resource_type"] == "source":
            # the previous run's key state is no raw table (ADR 0025)
            layer = "state" if node["source_name"] == "cdc_state" else "raw"
            expected = {layer, node["source_name"]}
        else:
            layer = node["path"].split("/")[0]
            folder = node["path"].split("/")[1] if layer == "staging" else None
            expected = {layer} | ({folder} if folder else set())
        if not expected <= tags:
            untagged.append((name, sorted(tags)))
    assert missing == []
    assert outside == []
    assert untagged == []
    (overview,) = [
        d
        for d in manifest["docs"].values()
        if d["name"] == "__overview__" and d["package_name"] == "cdc_changelog"
    ]
    assert "change_log" in overview["block_contents"]
    freshness = {
        n["name"]: n["loaded_at_field"]
        for n in manifest["sources"].values()
        if (n.get("freshness") or {}).get("warn_after", {}).get("count")
    }
    assert set(freshness) == {
        "raw_ingested_files",
        "raw_qlik_change_tables",
        "raw_qlik_kafka",
        "raw_goldengate_trail",
        "raw_hirdb_update_sql",
        "raw_linkexpress_extract",
    } and set(freshness.values()) == {"ingested_at"}


def test_real_goldengate_trails_through_stage_scaffold_and_run(real_samples_run):
    project, lake, _first, proc = real_samples_run
    assert "│ gg_tc" in proc.stdout

    log = {r["change_id"]: r for r in read_mart(lake, "change_log")}
    insert = log["gg_tc:000000000000000000000000001444"]
    assert insert["operation"] == "INSERT" and insert["transaction_id"] == "36.29.8952"
    assert insert["after_image"]["PRODUCT_PRICE"] == "17520.00"
    assert str(insert["committed_at"])[:19] == "2013-06-02 22:14:36"
    update = log["gg_tc:000000000000000000000000002891"]  # FieldComp pair at the B record's RBA
    assert update["operation"] == "UPDATE" and update["changed_columns"] == ["PRODUCT_PRICE"]
    assert (update["before_image"]["PRODUCT_PRICE"], update["after_image"]["PRODUCT_PRICE"]) == (
        "15000.00",
        "14000.00",
    )
    assert "gg_tc:000000000000000000000000003107" not in log
    delete = log["gg_tc:000000000000000000000000004338"]
    assert delete["operation"] == "DELETE" and set(delete["before_image"]) == {
        "CUST_CODE",
        "ORDER_DATE",
        "PRODUCT_CODE",
        "ORDER_ID",
    }
    unified = log["gg_tr:000000000000000000000000005100"]
    assert unified["before_image"]["CITY"] == "SEATTLE" and unified["after_image"] == {
        "CUST_CODE": "ANN",
        "CITY": "NEW YORK",
        "STATE": "NY",
    }
    assert sorted(unified["changed_columns"]) == ["CITY", "STATE"]
    assert (
        len([r for r in log.values() if r["feed"] == "gg_tc"]) == 16
    )  # 10 inserts, 4 updates, 2 deletes

    state = {}
    for row in read_mart(lake, "current_state"):
        state.setdefault((row["feed"], row["source_table"]), {})[row["primary_key"]] = row["row"]
    customers = {
        k: (v["NAME"], v["CITY"], v["STATE"]) for k, v in state[("gg_tc", "TCUSTMER")].items()
    }
    assert customers == {
        '["WILL"]': ("BG SOFTWARE CO.", "SEATTLE", "WA"),
        '["JANE"]': ("ROCKY FLYER INC.", "DENVER", "CO"),
        '["DAVE"]': ("DAVE'S PLANES INC.", "TALLAHASSEE", "FL"),
        '["BILL"]': ("BILL'S USED CARS", "DENVER", "CO"),
        '["ANN"]': ("ANN'S BOATS", "NEW YORK", "NY"),
    }
    orders = {k: v["PRODUCT_PRICE"] for k, v in state[("gg_tc", "TCUSTORD")].items()}
    assert orders == {
        '["WILL","1994-09-30 15:33:00","CAR","144"]': "16520.00",
        '["BILL","1995-12-31 15:00:00","CAR","765"]': "14000.00",
        '["BILL","1996-01-01 00:00:00","TRUCK","333"]': "25000.00",
    }
    tr_orders = {k: v["PRODUCT_PRICE"] for k, v in state[("gg_tr", "TCUSTORD")].items()}
    assert tr_orders == orders  # the 12.2 trail replays the same workload with unified updates
    assert state[("gg_tr", "TCUSTMER")]['["ANN"]'] == {
        "CUST_CODE": "ANN",
        "NAME": "ANN'S BOATS",
        "CITY": "NEW YORK",
        "STATE": "NY",
    }
    typed = query(
        project,
        "select cast(product_price as string) as price, typeof(product_price) as type"
        " from cdc.gg_tc__gg__tcustord",
        landing=lake.parent / "landing",
        lake=lake,
    )
    assert sorted(r["price"] for r in typed) == ["14000.00", "16520.00", "25000.00"]
    assert {r["type"] for r in typed} == {"decimal(38,2)"}


def test_a_lake_of_the_last_parquet_release_is_upgraded_by_one_full_refresh(real_samples_run):
    """The upgrade of ADR 0038 (docs/operations.md, "Upgrade from the last parquet release").
    A lake the last parquet release built has raw tables of plain parquet partitions
    registered as parquet, model tables of parquet and a view where history now is. Made so
    from the real samples' lake (last of its tests: the full refresh leaves the same marts):
    the raw tables' Delta logs removed and one raw table registered as parquet again, one
    model table rewritten as parquet, history a view. The next build stops before any model
    with a message that names the fix; `cdc run -- --full-refresh` gives every raw table its
    Delta log (the batches of the manifest, ADR 0038), registers it as Delta, rebuilds every
    model as Delta with the same figures, and every table of `cdc` and `cdc_raw` is
    registered as `delta` over a folder with a Delta log."""
    project, lake, _first, last = real_samples_run
    landing = lake.parent / "landing"
    counted = summary_figures(last.stdout)
    # versions (the oracle's summary test checks them against the history mart's rows)
    assert {"gg_tc", "gg_tr", "samples_ct"} <= set(counted), counted
    assert all(f[5] > 0 for f in counted.values()), counted
    for log in (lake / "raw").glob("*/_delta_log"):
        shutil.rmtree(log)
    cdc(
        project,
        "sql",
        "drop table cdc_raw.raw_rejects",
        f"create table cdc_raw.raw_rejects using parquet location '{lake}/raw/raw_rejects'",
        "create table cdc.old_catalog using parquet as select * from cdc.int_catalog_tables",
        "drop table cdc.int_catalog_tables",
        "alter table cdc.old_catalog rename to cdc.int_catalog_tables",
        "drop table cdc.history",
        "create view cdc.history as select * from cdc.current_state",
        landing=landing,
        lake=lake,
    )
    failed = cdc(project, "run", "--force", landing=landing, lake=lake, check=False)
    assert failed.returncode != 0
    assert "was written by an earlier release" in failed.stdout, failed.stdout
    assert "cdc run -- --full-refresh" in failed.stdout, failed.stdout
    rebuilt = cdc(project, "run", "--", "--full-refresh", landing=landing, lake=lake)
    assert summary_figures(rebuilt.stdout) == counted
    assert (lake / "warehouse" / "cdc.db" / "history" / "_delta_log").is_dir()
    # one JVM lists both schemas with each table's catalog entry: its provider, its type (a
    # view is no table) and its location, which must hold a Delta log
    schemas = ("cdc", "cdc_raw")
    listings = [f"show table extended in {schema} like '*'" for schema in schemas]
    listed = cdc(project, "sql", "--json", *listings, landing=landing, lake=lake).stdout
    entries = {}
    for line in listed.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            entry = dict(
                item.split(": ", 1) for item in row["information"].splitlines() if ": " in item
            )
            entries[f"{row['namespace']}.{row['tableName']}"] = entry
    tables = {name: e for name, e in entries.items() if e["Type"] != "VIEW"}
    assert {name.split(".")[0] for name in tables} == set(schemas), sorted(entries)
    formats = {name: e["Provider"] for name, e in tables.items()}
    assert len(formats) > 20 and set(formats.values()) == {"delta"}, formats
    for name, entry in tables.items():
        location = Path(entry["Location"].removeprefix("file:"))
        assert (location / "_delta_log").is_dir(), (name, location)
    assert any(name.endswith("raw_rejects") for name in formats)


def prepare_little_endian(src: Path) -> Contribution:
    """12.2-style trails (TDR records, unified updates, truncates), little-endian, for the
    two-round project (``tests/two_rounds``): round 1 lands every trail file, the last one cut
    30 bytes short (the writer is in the middle of its last record); round 2 the whole file.
    ``expected`` is the simulation."""
    sim = simulate(seed=5, truncate_every=15)
    assert any(c.operation == "TRUNCATE" for c in sim.changes)
    write_feed(sim, "goldengate_trail", src / "gg_le", {"byte_order": "little"})

    def land_round1(src: Path, landing: Path) -> None:
        shutil.copytree(src / "gg_le", landing / "gg_le")
        last = sorted((landing / "gg_le").iterdir())[-1]
        last.write_bytes(last.read_bytes()[:-30])

    return Contribution({"gg_le": ("goldengate_trail", {"byte_order": "little"})}, land_round1, sim)


#: The Qlik change-table feed of the two-round project whose catalog declares one table with no
#: key column (``prepare_keyless``).
KEYLESS_FEED = "ct_keyless"


def prepare_keyless(src: Path) -> Contribution:
    """A Qlik change-table feed of the simulated tables for the two-round project: HR.EMPLOYEES
    declared in the catalog with no key column (every primary_key_position 0), SALES.CUSTOMERS
    left out of the catalog in round 1 (declared before round 2); round 1 lands every file.
    ``expected`` is the simulation."""
    sim = simulate(seed=21, load_rows=4, transactions=16)
    write_feed(sim, "qlik_change_tables", src / KEYLESS_FEED)
    tables = {table.name: table for table in tables_for("qlik_change_tables")}
    # the missing table's files all carry their column metadata (.dfm), so they decode without
    # the catalog (SALES.ORDER_LINES's full load has none: a reject that `cdc restage` decodes);
    # its .dfm files name no key column, as the real sample's do, so nothing declares its key
    missing, keyless = tables["CUSTOMERS"], tables["EMPLOYEES"]
    for dfm in (src / KEYLESS_FEED).glob(f"{missing.schema}.{missing.name}*/*.dfm"):
        sidecar = json.loads(dfm.read_text(encoding="utf-8"))
        for column in sidecar["dataInfo"]["columns"]:
            column["primaryKeyPos"] = 0
        dfm.write_text(json.dumps(sidecar), encoding="utf-8")

    def land_round1(src: Path, landing: Path) -> None:
        shutil.copytree(src / KEYLESS_FEED, landing / KEYLESS_FEED)

    return Contribution(
        {KEYLESS_FEED: ("qlik_change_tables", {"mask_bit_order": "lsb_last_hex"})},
        land_round1,
        sim,
        undeclared={(KEYLESS_FEED, missing.schema, missing.name)},
        keyless={(KEYLESS_FEED, keyless.schema, keyless.name)},
    )


#: The feeds of the two-round project whose tables are in no seed in either round: their own
#: metadata (.dfm files, Kafka MD messages, GoldenGate TDR records) declares columns and keys
#: (``prepare_discovered``).
DISCOVERED_FEEDS = {
    "md_ct": "qlik_change_tables",
    "md_kafka": "qlik_kafka",
    "md_gg": "goldengate_trail",
}

#: Decoder (and writer) options of the discovered feeds: the trail is little-endian, as 21c
#: writes it by default, so its TDR indexes and its second TDR after the source DDL are read in
#: the trail's byte order (issue 77); the real TDR trail, ``tr000000000``, is big-endian.
DISCOVERED_OPTIONS = {"md_gg": {"byte_order": "little"}}


#: The simulated table a discovered feed leaves out, by format: no metadata describes it. Kafka's
#: HR.EMPLOYEES values are Confluent-framed and name their table only through a seed's
#: ``table_identifier``; the change-table writer gives SALES.ORDER_LINES's full load no ``.dfm``.
LEFT_OUT_OF_DISCOVERED = {"qlik_kafka": "EMPLOYEES", "qlik_change_tables": "ORDER_LINES"}


#: The column the discovered feeds' CUSTOMERS table gains before transaction 12 of 20.
ADDED_COLUMN = (
    "CUSTOMERS",
    SimColumn(
        "LOYALTY_TIER", "STRING", "string", nullable=True, length=10, pool=("gold", "silver")
    ),
    12,
)


def prepare_discovered(src: Path) -> Contribution:
    """A Qlik change-table feed, a Kafka feed and a little-endian GoldenGate trail with TDR
    records (:data:`DISCOVERED_OPTIONS`) of one simulated workload, for the two-round project:
    none of their tables is in the seeds, in either round. Round 1 lands the first half of each
    feed's files (a data file with its ``.dfm``), round 2 the rest. CUSTOMERS gains a column
    half way (:data:`ADDED_COLUMN`). Two tables are left out (:data:`LEFT_OUT_OF_DISCOVERED`).
    ``expected`` is each feed's simulation; ``extra["tables"]`` the tables each feed holds."""
    sims, tables = {}, {}
    for feed, fmt in DISCOVERED_FEEDS.items():
        left_out = LEFT_OUT_OF_DISCOVERED.get(fmt)
        written = tuple(t for t in tables_for(fmt) if t.name != left_out)
        # a simulation of the written tables only: a transaction's event count covers them
        # all; CUSTOMERS gains a column half way (source DDL: issue 46 item 3)
        sims[feed] = simulate(
            seed=44, load_rows=4, transactions=20, tables=written, added_column=ADDED_COLUMN
        )
        write_feed(sims[feed], fmt, src / feed, DISCOVERED_OPTIONS.get(feed), sims[feed].tables)
        tables[feed] = {(t.schema, t.name) for t in written}

    def land_round1(src: Path, landing: Path) -> None:
        for feed in DISCOVERED_FEEDS:
            groups: dict[tuple, list[Path]] = {}
            for path in sorted(p for p in (src / feed).rglob("*") if p.is_file()):
                groups.setdefault((path.parent, path.stem), []).append(path)
            for key in sorted(groups)[: len(groups) // 2]:
                for path in groups[key]:
                    target = landing / path.relative_to(src)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, target)

    return Contribution(
        {feed: (fmt, DISCOVERED_OPTIONS.get(feed, {})) for feed, fmt in DISCOVERED_FEEDS.items()},
        land_round1,
        sims,
        extra={"tables": tables},
        discovered={
            (feed, schema, name) for feed, names in tables.items() for schema, name in names
        },
    )


def _replayed(sim, tables, log) -> dict:
    """The simulated tables as far as round 1 logged them (``log``: its change_log rows).

    A change counts when its transaction's changes of its table are logged (only complete
    transactions are; a change-table folder holds one table's): the Qlik feeds carry the
    simulator's transaction ids. A trail names its transactions its own way,
    but its round 1 is its first trail files, so a table's changes up to the last commit time
    the log holds of it are what reached it. A full load counts when its LOAD rows are
    logged, or (GoldenGate) its INSERTs. Changes replay as the simulator applies them; a
    DELETE or UPDATE whose INSERT waits in an open transaction is applied as the apply does
    (a row that was not there is not removed)."""
    logged_ids = {(r["transaction_id"], r["source_schema"], r["source_table"]) for r in log}
    by_id = any((c.transaction_id, c.table.schema, c.table.name) in logged_ids for c in sim.changes)
    last_commit: dict[tuple[str, str], dt.datetime] = {}
    for r in log:
        if r["committed_at"] is not None and r["operation"] != "LOAD":
            table, at = (r["source_schema"], r["source_table"]), r["committed_at"]
            last_commit[table] = max(
                last_commit.get(table, dt.datetime.min), at.replace(tzinfo=None)
            )
    loaded = {(r["source_schema"], r["source_table"]) for r in log if r["operation"] == "LOAD"}
    open_changes = {id(c) for c in sim.open_transaction}
    state: dict = {table: {} for table in tables}
    for change in sim.changes:
        table = (change.table.schema, change.table.name)
        if table not in tables or id(change) in open_changes:
            continue
        if by_id:
            reached = (change.transaction_id, *table) in logged_ids
        else:
            reached = change.committed_at <= last_commit.get(table, dt.datetime.min)
        if not (reached or (change.operation == "LOAD" and table in loaded)):
            continue
        rows = state[table]
        if change.operation == "DELETE":
            rows.pop(primary_key_text(change.table, change.before), None)
        else:
            rows[primary_key_text(change.table, change.after)] = dict(change.after)
    return {table: rows for table, rows in state.items() if rows}


def test_tables_that_only_their_feeds_metadata_declares_are_applied(two_rounds):
    """issue 46 items 1 and 3: no seed names the tables of the three feeds, in either round;
    their .dfm files, Kafka MD messages and GoldenGate TDR records name the columns and the
    key. Half way, CUSTOMERS gains a column (a later .dfm, an MD message of table version 2, a
    second TDR).
    Their changes are logged with their key, and current state equals the simulated database
    after each round (after round 1, as far as its files reached: :func:`_replayed`); no run
    warns about them (changes_of_tables_not_in_catalog counts only the keyless feed's table,
    changes_of_tables_without_primary_key only its keyless table)."""
    contribution = two_rounds.contributions["discovered"]
    sims, lake = contribution.expected, two_rounds.lake
    added = ADDED_COLUMN[1].name

    def unset_as_absent(state):
        # a row that never had a value for the added column may hold it as NULL or not at all
        # (a GoldenGate compressed update leaves an unchanged column out of its image)
        return {
            table: {
                key: {c: v for c, v in row.items() if c != added or v is not None}
                for key, row in rows.items()
            }
            for table, rows in state.items()
        }

    round1 = _state(lake, two_rounds.after_round1["current_state"])
    state = {feed: unset_as_absent(tables) for feed, tables in _state(lake).items()}
    for feed, tables in contribution.extra["tables"].items():
        # after round 1: the simulated tables as far as its files reached
        log = [r for r in two_rounds.after_round1["change_log"] if r["feed"] == feed]
        expected = _replayed(sims[feed], tables, log)
        assert expected and unset_as_absent(round1[feed]) == unset_as_absent(expected), feed
        assert expected != {k: v for k, v in sims[feed].final_state.items() if v}, feed
        expected = {k: v for k, v in sims[feed].final_state.items() if v and k in tables}
        assert expected and state[feed] == unset_as_absent(expected), feed
        # the column added at the source is kept where rows were written after the DDL
        customers = state[feed][("SALES", "CUSTOMERS")]
        assert any(added in row for row in customers.values()), feed
        assert any(added not in row for row in customers.values()), feed
        log = [r for r in read_mart(lake, "change_log") if r["feed"] == feed]
        assert any(added in (r["after_image"] or {}) for r in log), feed
        log = [r for r in read_mart(lake, "change_log") if r["feed"] == feed]
        assert log and all(r["is_in_catalog"] for r in log), feed
    for run in (two_rounds.round1, two_rounds.round2):
        assert "WARN 1 changes_of_tables_without_primary_key" in run.stdout
    assert "WARN 1 changes_of_tables_not_in_catalog" in two_rounds.round1.stdout


def _keyless_feed_log(two_rounds, table: tuple[str, str, str]) -> tuple[list[dict], list[dict]]:
    """The keyless feed's change_log rows: those of ``table`` (feed, schema, name), the others."""
    log = [r for r in read_mart(two_rounds.lake, "change_log") if r["feed"] == KEYLESS_FEED]
    mine = [r for r in log if (r["feed"], r["source_schema"], r["source_table"]) == table]
    return mine, [r for r in log if r not in mine]


def test_changes_of_a_table_declared_without_key_are_logged_and_reported(two_rounds):
    """A catalog table with no key column: its changes are in change_log with no primary key,
    never in current state, and every run warns about them (changes_of_tables_without_primary_key,
    one row per such table); the feed's tables declared with a key are applied, the one
    declared late too."""
    contribution = two_rounds.contributions["keyless"]
    sim, lake = contribution.expected, two_rounds.lake
    (keyless,) = contribution.keyless
    (missing,) = contribution.undeclared
    for run in (two_rounds.round1, two_rounds.round2):
        assert "WARN 1 changes_of_tables_without_primary_key" in run.stdout, run.stdout[-3000:]
    log, others = _keyless_feed_log(two_rounds, keyless)
    assert log and all(r["primary_key"] is None and r["is_in_catalog"] for r in log)
    assert all(r["primary_key"] is not None for r in others if r["source_table"] != missing[2])
    assert _state(lake)[KEYLESS_FEED] == {
        k: v for k, v in sim.final_state.items() if v and k != keyless[1:]
    }


def test_changes_of_a_table_declared_after_they_were_logged_are_applied_without_full_refresh(
    two_rounds,
):
    """A table left out of the catalog in round 1 and declared before round 2, all of its files
    landed in round 1 (issue 46 item 2, ADR 0021). Round 1 logs its changes as not in the
    catalog, with no primary key, applies none of them and warns, one row for the table
    (changes_of_tables_not_in_catalog). Round 2, a plain run with no new file of the table,
    logs them again with their key: change_log shows each change once, keyed, and current
    state holds the table as the simulation ends it. The other tables' changes are not logged
    again."""
    contribution = two_rounds.contributions["keyless"]
    sim, lake = contribution.expected, two_rounds.lake
    (missing,) = contribution.undeclared
    assert "WARN 1 changes_of_tables_not_in_catalog" in two_rounds.round1.stdout
    assert "WARN 1 changes_of_tables_not_in_catalog" not in two_rounds.round2.stdout
    first = [
        r
        for r in two_rounds.after_round1["change_log"]
        if (r["feed"], r["source_schema"], r["source_table"]) == missing
    ]
    assert first and all(not r["is_in_catalog"] and r["primary_key"] is None for r in first)
    # change_log shows each change once, keyed; its store keeps round 1's keyless rows too
    log, others = _keyless_feed_log(two_rounds, missing)
    assert sorted(r["change_id"] for r in log) == sorted(r["change_id"] for r in first)
    assert all(r["is_in_catalog"] for r in log)
    row_changes = [r for r in log if r["operation"] in ("INSERT", "UPDATE", "DELETE", "LOAD")]
    assert row_changes and all(r["primary_key"] is not None and r["key_id"] for r in row_changes)
    store = [
        r
        for r in read_mart(lake, "int_changes_logged")
        if (r["feed"], r["source_schema"], r["source_table"]) == missing
    ]
    assert len(store) == 2 * len(first)
    assert sorted(r["change_id"] for r in store if not r["is_in_catalog"]) == sorted(
        r["change_id"] for r in first
    )
    assert len({r["change_id"] for r in others}) == len(others)
    # the run's summary counts the change_log view: each change of the feed once
    assert summary_figures(two_rounds.round2.stdout)[KEYLESS_FEED][1] == len(log) + len(others)
    assert sim.final_state[missing[1:]]
    assert _state(lake)[KEYLESS_FEED][missing[1:]] == sim.final_state[missing[1:]]


def test_little_endian_trails_with_metadata_records_growing_between_runs(two_rounds):
    """Transactions across files, and a last trail file caught half written by round 1."""
    sim, lake = two_rounds.contributions["little_endian"].expected, two_rounds.lake
    trails = sorted((two_rounds.landing / "gg_le").iterdir())
    assert len(trails) >= 3
    manifest = {m["source_file"]: m for m in two_rounds.after_round1["ingested_files"]}
    assert manifest[f"gg_le/{trails[-1].name}"]["status"] == "partial"
    assert [r for r in two_rounds.after_round1["ingest_rejects"] if r["feed"] == "gg_le"] == []
    assert [r for r in read_mart(lake, "ingest_rejects") if r["feed"] == "gg_le"] == []
    assert _state(lake)["gg_le"] == {k: v for k, v in sim.final_state.items() if v}
    log = [r for r in read_mart(lake, "change_log") if r["feed"] == "gg_le"]
    assert {r["change_position"][:10] for r in log} == {f"{n:010d}" for n in range(len(trails))}
    spanning = {r["transaction_id"] for r in log if r["source_file"] != log[0]["source_file"]}
    files_per_txn = {}
    for r in log:
        files_per_txn.setdefault(r["transaction_id"], set()).add(r["source_file"])
    assert spanning and any(len(f) > 1 for f in files_per_txn.values())  # transactions across files
    updates = [r for r in log if r["operation"] == "UPDATE"]
    assert updates and all(r["before_image"] is not None for r in updates)
    assert len([r for r in log if r["operation"] == "TRUNCATE"]) == 2


def test_round_one_self_checks_every_key_without_the_scoping_subquery(two_rounds):
    """issue 45: round 1 is a first run, so `cdc run` passes a working set of every batch, and
    the self-checks scoped to the run's keys check every key with no subquery at all (macro
    cdc_tests_check_all_history): each key is the run's. Round 2's SQL keeps the subquery (the
    test below)."""
    sql = two_rounds.round1_tests["history_replays_to_current_state"]
    assert "from cdc.history" in sql and "from cdc.current_state" in sql  # as round 1 ran it
    assert "max(history_generation)" not in sql
    assert "touched.key_id" not in sql


def test_round_two_self_checks_find_the_keys_round_two_touched_when_they_run(two_rounds):
    """issue 45, 73: the self-checks of round 2 are scoped to the keys it touched (history's
    rows of round 2's history_generation: every run writes the current version of each key it
    applies). The generation is the invocation's own, a literal, so nothing is read when the
    test compiles and only the history it refs is read when it runs. The scope is neither
    empty nor the whole history: round 2 touched some of round 1's keys."""
    (compiled,) = (two_rounds.project / "target" / "run").rglob(
        "history_replays_to_current_state.sql"
    )
    sql = compiled.read_text(encoding="utf-8")
    assert "max(history_generation)" not in sql
    (generation,) = set(re.findall(r"touched\.history_generation = '(\d{8}T\d{12})'", sql))
    rows = delta_rows(two_rounds.lake, "history", columns="key_id, history_generation")
    keys: dict[str, set[str]] = {}
    for row in rows.to_pylist():
        keys.setdefault(row["history_generation"], set()).add(row["key_id"])
    touched = keys[max(keys)]
    assert generation == max(keys)
    assert len(keys) >= 2 and touched
    assert set().union(*keys.values()) - touched


def test_round_two_applies_the_changes_after_the_watermark_cdc_run_read_before_the_build(
    two_rounds,
):
    """issue 73: `cdc run` reads the apply's watermark once, before the build (the newest
    history_generation round 1 merged, python_udfs/working_set.py state_watermark), and the
    apply's models compile it as a literal (macro cdc_state_watermark): no copy of their CTEs
    plans a subquery of history. Round 1's history rows carry that generation, and round 2's
    rows the newer one of its own build."""
    apply = two_rounds.project / "target" / "run" / "cdc_changelog" / "models" / "intermediate"
    (compiled,) = (apply / "apply").glob("int_apply_events.sql")
    sql = compiled.read_text(encoding="utf-8")
    assert "max(history_generation)" not in sql
    (watermark,) = set(re.findall(r"applied_generation > '(\d{8}T\d{12})'", sql))
    rows = delta_rows(two_rounds.lake, "history", columns="history_generation")
    generations = sorted({row["history_generation"] for row in rows.to_pylist()})
    # round 2 rewrote the keys it touched with its own generation; the others keep round 1's
    assert len(generations) >= 2, generations
    assert generations[-2] <= watermark < generations[-1], (watermark, generations)
