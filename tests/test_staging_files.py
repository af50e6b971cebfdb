"""Staging framework on real runs: growing files, pending tails, refused prefixes, the manifest."""

from __future__ import annotations

import dataclasses
import json

import pyarrow.dataset as ds
import pytest

from tests.spark_project import cdc, make_project, write_seeds

pytestmark = pytest.mark.spark

FEEDS = """  cdc_feeds:
    k:
      format: qlik_kafka
      path: k
"""


def _raw(lake, table):
    rows = (
        ds.dataset(str(lake / "raw" / table), format="parquet", partitioning="hive")
        .to_table()
        .to_pylist()
    )
    return [r for r in rows if r["ingest_batch_id"] != "00000000T000000000000"]


def _line(n):
    message = {
        "data": {"A": n, "B": f"v{n}"},
        "beforeData": None,
        "headers": {
            "operation": "INSERT",
            "changeSequence": f"{n:035d}",
            "timestamp": "2024-01-01T00:00:00",
            "streamPosition": "",
            "transactionId": f"{n:032X}",
            "changeMask": "03",
            "columnMask": "03",
        },
    }
    return (
        json.dumps(
            {
                "magic": "atMSG",
                "type": "DT",
                "headers": None,
                "messageSchemaId": None,
                "messageSchema": None,
                "message": message,
            }
        ).encode()
        + b"\n"
    )


def test_growing_dump_is_read_from_where_the_last_run_stopped_and_a_changed_prefix_is_refused(
    tmp_path,
):
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    project = make_project(tmp_path, FEEDS)
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
    dump = landing / "k" / "t-0-00000000000000000000.jsonl"
    dump.parent.mkdir(parents=True)
    first = _line(1) + _line(2)
    partial = _line(3)[:40]  # the writer is in the middle of line 3
    dump.write_bytes(first + partial)
    empty = landing / "k" / "t-1-00000000000000000000.jsonl"
    empty.write_bytes(b"")  # issue 14: an empty file gets its manifest row, once

    cdc(project, "stage", landing=landing, lake=lake)
    manifests = {m["source_file"]: m for m in _raw(lake, "raw_ingested_files")}
    assert manifests["k/t-1-00000000000000000000.jsonl"]["rows"] == 0
    manifest = manifests["k/t-0-00000000000000000000.jsonl"]
    assert (manifest["status"], manifest["byte_start"], manifest["byte_end"]) == (
        "partial",
        0,
        len(first),
    )
    assert sorted(r["change_sequence"] for r in _raw(lake, "raw_qlik_kafka")) == [
        f"{1:035d}",
        f"{2:035d}",
    ]
    assert _raw(lake, "raw_rejects") == []

    dump.write_bytes(first + _line(3) + _line(4))  # line 3 completed, line 4 appended
    cdc(project, "stage", landing=landing, lake=lake)
    rows = _raw(lake, "raw_qlik_kafka")
    assert sorted(r["change_sequence"] for r in rows) == [f"{n:035d}" for n in (1, 2, 3, 4)]
    tail = [m for m in _raw(lake, "raw_ingested_files") if m["byte_start"] == len(first)]
    assert len(tail) == 1 and tail[0]["status"] == "ingested" and tail[0]["record_index_start"] == 2
    assert sorted(r["record_index"] for r in rows) == [1, 2, 3, 4]

    cdc(project, "stage", landing=landing, lake=lake)  # nothing new: nothing written
    assert len(_raw(lake, "raw_ingested_files")) == 3

    dump.write_bytes(
        _line(9) + first[len(_line(9)) :] + _line(3) + _line(4) + _line(5)
    )  # history rewritten
    proc = cdc(project, "stage", landing=landing, lake=lake)
    assert "REFUSED" in proc.stdout
    refused = [m for m in _raw(lake, "raw_ingested_files") if m["status"] == "refused"]
    assert len(refused) == 1
    (reject,) = _raw(lake, "raw_rejects")
    assert reject["reason"] == "prefix_changed" and reject["record_offset"] == 0
    assert len(_raw(lake, "raw_qlik_kafka")) == 4  # nothing from the changed file was ingested


def test_a_file_delivered_again_under_another_name_is_counted_not_applied(tmp_path):
    """issue 14, DESIGN.md §6.5: the same HiRDB or Linkexpress bytes under another name were
    applied twice (their positions are file name and offset). A new file that repeats a
    complete file ingested before, or a new file earlier in name order, is marked a
    duplicate: its manifest row says so and nothing of it is decoded."""
    import hashlib
    from dataclasses import asdict

    from python_udfs.config import FeedConfig, ProjectConfig
    from python_udfs.staging import Stager, StageSummary, file_outputs

    landing = tmp_path / "landing"
    feed_dir = landing / "h"
    feed_dir.mkdir(parents=True)
    first = b'/* 2024-02-01 09:00:00 */ DELETE FROM "S"."T" WHERE "K"=7;\nCOMMIT;\n'
    other = first.replace(b"7", b"8")  # same size, other bytes: not a duplicate
    (feed_dir / "SQLTXT_SV1_DST1.001").write_bytes(first)
    (feed_dir / "SQLTXT_SV1_DST1.002").write_bytes(first)  # re-delivered in the same batch
    (feed_dir / "SQLTXT_SV1_DST1.003").write_bytes(other)
    (feed_dir / "SQLTXT_SV1_DST1.004").write_bytes(first + b"\n")  # another size
    (feed_dir / "SQLTXT_SV1_DST1.005").write_bytes(b"")
    config = ProjectConfig(
        project_dir=tmp_path,
        landing_root=landing,
        lake_root=tmp_path / "lake",
        feeds={"h": FeedConfig("h", "hirdb_update_sql", feed_dir)},
        catalog={},
        spark_types={},
        table_identifiers={},
    )
    stager = Stager(None, config, lambda *_: None)
    candidates = {c.source_file: c for c in stager.plan({}, StageSummary("b1"))}
    assert {k: c.duplicate_of for k, c in candidates.items() if c.duplicate_of} == {
        "h/SQLTXT_SV1_DST1.002": "h/SQLTXT_SV1_DST1.001"
    }
    ingested = {  # a later batch: .001 was ingested whole before, a copy lands as .006
        ("h", "h/SQLTXT_SV1_DST1.001"): {
            "status": "ingested",
            "byte_end": len(first),
            "file_size": len(first),
            "sha256": hashlib.sha256(first).hexdigest(),
            "mtime_us": 0,
            "byte_start": 0,
            "prefix_sha256": None,
            "record_index_end": 2,
        }
    }
    (feed_dir / "SQLTXT_SV1_DST1.006").write_bytes(first)
    later = {c.source_file: c for c in stager.plan(ingested, StageSummary("b2"))}
    assert later["h/SQLTXT_SV1_DST1.006"].duplicate_of == "h/SQLTXT_SV1_DST1.001"
    candidate = asdict(later["h/SQLTXT_SV1_DST1.006"])
    out = file_outputs(candidate, first, {"options": {}, "catalog": {}})
    assert [o["kind"] for o in out] == ["raw_ingested_files"]
    manifest = out[0]["raw_ingested_files"]
    assert manifest["status"] == "duplicate" and manifest["rows"] == 0
    assert "h/SQLTXT_SV1_DST1.001" in manifest["message"]


def test_a_linkexpress_file_delivered_again_is_a_duplicate_but_a_repeated_truncate_is_not(
    tmp_path,
):
    """issue 14: a Linkexpress differential file landing again under a later name was applied
    again at the later position. It is now a duplicate of the first; a file of empty full
    extracts (a truncate) repeated is two truncates and both apply (staging.py,
    FeedFormat.deduplicated_by_content)."""
    from python_udfs.config import load_project
    from python_udfs.registry import FORMATS
    from python_udfs.staging import Stager, StageSummary
    from simulator.feeds import write_feed
    from tests.spark_project import REPO
    from tests.test_end_to_end import jp_simulation

    landing = tmp_path / "landing"
    shipped = load_project(REPO, {"cdc_landing_root": str(landing)}, check_paths=False)
    feed = shipped.feeds["linkexpress_demo"]
    write_feed(jp_simulation(), feed.format, landing / "linkexpress_demo", feed.options)
    # the shipped configuration with its Linkexpress feed alone (the demo catalog kept)
    config = dataclasses.replace(shipped, feeds={"linkexpress_demo": feed})
    stager = Stager(None, config, lambda *_: None)
    files = sorted((landing / "linkexpress_demo").rglob("*.dat"))
    differential = next(p for p in files if p.name.endswith("_D.dat"))
    spec = FORMATS[feed.format]
    truncates = [p for p in files if stager._applied_when_repeated("linkexpress_demo", spec, p)]
    assert truncates and differential not in truncates
    again = differential.with_name("LX999998_D.dat")
    again.write_bytes(differential.read_bytes())
    truncate_again = truncates[0].with_name("LX999999_F.dat")
    truncate_again.write_bytes(truncates[0].read_bytes())
    planned = {
        c.source_file: c.duplicate_of
        for c in stager.plan({}, StageSummary("b1"))
        if c.feed == "linkexpress_demo"
    }
    relative = lambda p: p.relative_to(landing).as_posix()  # noqa: E731
    assert planned[relative(again)] == relative(differential)
    assert planned[relative(truncate_again)] is None
    assert [k for k, v in planned.items() if v] == [relative(again)]
