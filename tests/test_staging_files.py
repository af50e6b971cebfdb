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
    extracts (a truncate) repeated is two truncates and both apply (staging/landing.py,
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


KAFKA_FEEDS = """  cdc_feeds:
    k:
      format: qlik_kafka
      path: k
      options:
        mask_bit_order: lsb_last_hex
        schema_dir: schemas
"""


def _kafka_project(tmp_path):
    """A project of one simulated Qlik Kafka feed ``k`` (the demo's three tables and framings:
    JSON envelopes in ``.jsonl``, Avro envelopes and Confluent values in ``.lpv``)."""
    from simulator.database import catalog_rows, simulate
    from simulator.feeds import write_feed

    landing, lake = tmp_path / "landing", tmp_path / "lake"
    write_feed(simulate(seed=5), "qlik_kafka", landing / "k")
    project = make_project(tmp_path, KAFKA_FEEDS, catalog_rows({"k": "qlik_kafka"}))
    return project, landing, lake


def _avro_container(lpv: bytes, schema_text: str) -> bytes:
    """The Confluent-framed values of an ``.lpv`` dump as an Avro object container file."""
    import io
    import struct

    import fastavro

    schema = fastavro.parse_schema(json.loads(schema_text))
    records, pos = [], 0
    while pos < len(lpv):
        (length,) = struct.unpack_from(">I", lpv, pos)
        value = lpv[pos + 4 : pos + 4 + length]
        records.append(fastavro.schemaless_reader(io.BytesIO(value[5:]), schema, None))
        pos += 4 + length
    out = io.BytesIO()
    fastavro.writer(out, schema, records, codec="deflate", sync_interval=200)
    return out.getvalue()


def _renamed(name: str, partition: int, ext: str) -> str:
    """``<topic>-<p>-<offset>.<x>`` → ``<topic>-<partition>-<offset>.<ext>``."""
    topic, _p, rest = name.rsplit("-", 2)
    return f"{topic}-{partition}-{rest.split('.', 1)[0]}.{ext}"


def _decoded(rows):
    """Raw rows without what names their file and batch, in file and offset order."""
    skip = {"feed", "source_file", "ingest_batch_id", "ingested_at"}
    return [
        {k: v for k, v in r.items() if k not in skip}
        for r in sorted(rows, key=lambda r: (r["source_file"], r["record_offset"]))
    ]


def test_gzip_compressed_dumps_land_what_the_plain_dumps_land_and_random_bytes_are_one_reject(
    tmp_path,
):
    """issue 48: a Kafka dump ending in .gz (.jsonl.gz, .json.gz, .lpv.gz, .avro.gz) is
    decompressed before framing; its rows, metadata and offsets (in the decompressed stream)
    equal the plain dump's. A .gz of random bytes is one bad_gzip reject, and the run goes on."""
    import gzip
    import random

    project, landing, lake = _kafka_project(tmp_path)
    folder = landing / "k"
    simulated = sorted(p for p in folder.glob("*-0-*") if p.is_file())
    assert {p.suffix for p in simulated} == {".jsonl", ".lpv"}
    plain = {p.name: p.read_bytes() for p in simulated}
    jsonl = next(p for p in simulated if p.suffix == ".jsonl")
    plain[_renamed(jsonl.name, 1, "json")] = jsonl.read_bytes()  # the same framing as .jsonl
    confluent = next(p for p in simulated if p.suffix == ".lpv" and p.read_bytes()[4:5] == b"\x00")
    schema_text = (folder / "schemas" / "1.avsc").read_text(encoding="utf-8")
    plain[_renamed(confluent.name, 1, "avro")] = _avro_container(
        confluent.read_bytes(), schema_text
    )
    pairs = {}  # plain dump -> its gzip copy, under partition 2
    for name, data in plain.items():
        (folder / name).write_bytes(data)
        partition = int(name.rsplit("-", 2)[1])
        copy = _renamed(name, partition + 2, name.rsplit(".", 1)[1] + ".gz")
        (folder / copy).write_bytes(gzip.compress(data))
        pairs[f"k/{name}"] = f"k/{copy}"
    assert {name.rsplit(".", 2)[-2] for name in pairs.values()} == {"jsonl", "json", "lpv", "avro"}
    noise = random.Random(48).randbytes(4096)
    assert noise[:2] != b"\x1f\x8b"
    (folder / "orders-9-00000000000000000000.jsonl.gz").write_bytes(noise)

    cdc(project, "stage", landing=landing, lake=lake)
    rows = _raw(lake, "raw_qlik_kafka")
    metadata = _raw(lake, "raw_metadata")
    manifests = {m["source_file"]: m for m in _raw(lake, "raw_ingested_files")}
    for name, copy in pairs.items():
        original = _decoded(r for r in rows if r["source_file"] == name)
        assert original, name
        assert _decoded(r for r in rows if r["source_file"] == copy) == original, copy
        assert _decoded(m for m in metadata if m["source_file"] == copy) == _decoded(
            m for m in metadata if m["source_file"] == name
        )
        plain_row, gz_row = manifests[name], manifests[copy]
        assert gz_row["file_size"] == (folder / copy.split("/", 1)[1]).stat().st_size
        for field in ("status", "byte_end", "sha256", "prefix_sha256", "rows", "rejects"):
            assert gz_row[field] == plain_row[field], (copy, field)
    (reject,) = _raw(lake, "raw_rejects")
    assert (reject["source_file"], reject["reason"]) == (
        "k/orders-9-00000000000000000000.jsonl.gz",
        "bad_gzip",
    )
    assert reject["excerpt_hex"] == noise[:200].hex().upper()
    bad = manifests["k/orders-9-00000000000000000000.jsonl.gz"]
    assert (bad["status"], bad["rows"], bad["rejects"]) == ("ingested", 0, 1)


def test_a_truncated_gzip_dump_lands_the_messages_before_the_cut_and_rejects_the_cut_once_final(
    tmp_path,
):
    """issue 48: a .gz dump cut short (a consumer still writing it) lands the whole messages
    before the cut and holds the rest as an incomplete tail (status partial); once a later dump
    of its topic partition makes it final, the cut is one truncated_gzip reject."""
    import gzip
    import zlib

    project, landing, lake = _kafka_project(tmp_path)
    folder = landing / "k"
    first, second = sorted(folder.glob("SALES.CUSTOMERS-0-*.jsonl"))
    data, later_dump = first.read_bytes(), second.read_bytes()
    for path in folder.glob("*-0-*"):
        path.unlink()  # this test's feed is the one cut dump and, later, the dump after it
    compressed = gzip.compress(data)
    cut = compressed[: len(compressed) * 2 // 3]
    held = zlib.decompressobj(wbits=31).decompress(cut)  # what the cut bytes decompress to
    whole = held[: held.rindex(b"\n") + 1]  # the messages before the cut
    assert 0 < len(whole) < len(held) < len(data)
    cut_name = _renamed(first.name, 4, "jsonl.gz")
    (folder / cut_name).write_bytes(cut)

    cdc(project, "stage", landing=landing, lake=lake)
    rows = _raw(lake, "raw_qlik_kafka")
    offsets, expected = 0, []  # the byte offset of each data message before the cut
    for line in whole.splitlines(keepends=True):
        if json.loads(line)["type"] == "DT":
            expected.append(offsets)
        offsets += len(line)
    assert expected and sorted(r["record_offset"] for r in rows) == expected
    (manifest,) = _raw(lake, "raw_ingested_files")
    assert (manifest["status"], manifest["byte_end"]) == ("partial", len(whole))
    assert manifest["file_size"] == len(cut)
    assert _raw(lake, "raw_rejects") == []

    (folder / _renamed(second.name, 4, "jsonl")).write_bytes(later_dump)
    cdc(project, "stage", landing=landing, lake=lake)
    (reject,) = _raw(lake, "raw_rejects")
    assert (reject["source_file"], reject["reason"]) == (f"k/{cut_name}", "truncated_gzip")
    assert (reject["record_offset"], reject["record_length"]) == (
        len(whole),
        len(held) - len(whole),
    )
    assert reject["excerpt_hex"] == held[len(whole) : len(whole) + 200].hex().upper()
    tail = [m for m in _raw(lake, "raw_ingested_files") if m["byte_start"] == len(whole)]
    assert [(m["status"], m["rows"], m["byte_end"]) for m in tail] == [("ingested", 0, len(held))]
    later = [r for r in _raw(lake, "raw_qlik_kafka") if r["source_file"] != f"k/{cut_name}"]
    assert len(later) == len(later_dump.splitlines())


def test_gunzip_reads_concatenated_members_and_says_where_a_stream_stops_short(tmp_path):
    """issue 48: gunzip_file reads every member of a gzip file in order (RFC 1952 §2.2) and
    skips zero padding after one, as gzip.decompress does; bytes after a member that are not a
    member are a bad_gzip cut, a member without its trailer a truncated_gzip cut, and what
    decompressed before either is kept."""
    import gzip

    from python_udfs.staging import GZIP_CHUNK_BYTES, gunzip_file

    body = b"".join(_line(n) for n in range(1, 4000))  # several chunks of compressed bytes
    first = gzip.compress(body, compresslevel=0)
    assert len(first) > GZIP_CHUNK_BYTES  # no one chunk holds the member whole
    path = tmp_path / "t-0-00000000000000000000.jsonl.gz"
    path.write_bytes(first + b"\0" * 7 + gzip.compress(_line(9)))
    got = gunzip_file(path)
    assert (bytes(got.data), got.file_size, got.cut) == (body + _line(9), path.stat().st_size, None)

    path.write_bytes(first + b"trailing text")
    got = gunzip_file(path)
    assert bytes(got.data) == body and got.cut[0] == "bad_gzip"
    assert got.cut[2] == b"trailing text".hex().upper()

    path.write_bytes(first[:-5])  # the trailer's CRC-32 and size cut
    got = gunzip_file(path)
    assert bytes(got.data) == body and got.cut[0] == "truncated_gzip"
    path.write_bytes(b"")
    assert gunzip_file(path) == type(got)(bytearray(), 0, None)


def test_a_fast_path_that_raises_is_counted_per_feed_and_reason_and_its_file_named(
    tmp_path, monkeypatch
):
    """issue 74: a fast-path fallback is never silent. The file lands as the reference reads
    it, its manifest row says why, the summary counts it per feed and reason, and the per-file
    lines (``cdc run --verbose``) name it."""
    from python_udfs.config import FeedConfig, ProjectConfig
    from python_udfs.hirdb_update_sql import columnar
    from python_udfs.staging import Stager, fallback_reason

    def failing(*args, **kwargs):
        raise IndexError("a bug")

    monkeypatch.setattr(columnar, "decode_or_decline", failing)
    feed_dir = tmp_path / "landing" / "h"
    feed_dir.mkdir(parents=True)
    statement = b'/* 2024-02-01 09:00:00 */ DELETE FROM "S"."T" WHERE "K"=%d;\nCOMMIT;\n'
    for n in (1, 2):
        (feed_dir / f"SQLTXT_SV1_DST1.00{n}").write_bytes(statement % n)
    config = ProjectConfig(
        project_dir=tmp_path,
        landing_root=tmp_path / "landing",
        lake_root=tmp_path / "lake",
        feeds={"h": FeedConfig("h", "hirdb_update_sql", feed_dir)},
        catalog={},
        spark_types={},
        table_identifiers={},
    )
    log, detail = [], []
    summary = Stager(None, config, log.append, detail.append).stage()
    assert summary.files_ingested == 2
    assert summary.fallbacks == {"h": {"IndexError: a bug": 2}}
    assert [fallback_reason(info) for info in summary.per_file] == ["IndexError: a bug"] * 2
    assert any(
        "left 2 file(s) to the per-record decoder (IndexError: a bug: 2" in line for line in log
    )
    named = [line for line in detail if "fast path fell back: IndexError: a bug" in line]
    assert len(named) == 2 and "h/SQLTXT_SV1_DST1.002" in named[1]
