"""Damaged files of every format through the staging path (issue 14, item 7).

Not the decoder functions alone: each damaged file goes through what a staging task runs, as
Spark hands it over (an Arrow batch of candidate rows; the task reads each file itself): the
Kafka metadata
pre-pass (``make_metadata_udf``), the decoder contexts built from the project's feeds and
seeds (``Stager.contexts``), the decode pass with its manifest row, prefix hash and safety net
(``file_tables`` → ``file_outputs``), and the conversion to each raw table's Arrow schema.

The corpus is every file of the five demo feeds (the simulator writes Qlik change tables as
CSV with a ``.dfm``, CSV with a header line and Parquet; Qlik Kafka dumps as JSON Lines with
JSON envelopes, length-prefixed Avro envelopes and length-prefixed Confluent-framed Avro;
GoldenGate trails; HiRDB update SQL; Linkexpress table and group extracts) and the real
samples (GoldenGate ``tc000000``/``tr000000000``, the Qlik change table, the Kafka dumps).
Hypothesis flips, overwrites, inserts and cuts bytes, then asserts:

- no exception, one manifest row, no ``decoder_error`` reject (the safety net is not hit:
  every decoder and pre-pass turns what it meets into rejects itself);
- every byte up to the manifest's ``byte_end`` is a row's record or inside a reject, and a
  file known to be complete (``is_final``) is consumed to its last byte;
- after one damaged stretch, every record that does not touch it, its neighbours or the
  metadata it depends on lands exactly as from the undamaged file (Parquet excepted: its
  footer describes the whole file, so damage anywhere may reject the whole file).
"""

from __future__ import annotations

import datetime as dt
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st

from python_udfs.config import load_project
from python_udfs.registry import FORMATS
from python_udfs.staging import (
    Stager,
    arrow_schema,
    file_outputs,
    file_tables,
    list_landing_files,
    make_metadata_udf,
    make_write_udf,
    metadata_from_row,
)
from python_udfs.workers import run_in_processes
from simulator.database import simulate
from simulator.feeds import write_feed
from tests.spark_project import REPO
from tests.test_end_to_end import FEEDS, JP_FEEDS, jp_simulation

SAMPLE_FEEDS = {
    "real_gg_tc": {
        "format": "goldengate_trail",
        "path": "real_gg_tc",
        "options": {"definitions": "real_gg_tc/dirdef/tc.def"},
    },
    "real_gg_tr": {"format": "goldengate_trail", "path": "real_gg_tr"},
    "real_ct": {"format": "qlik_change_tables", "path": "real_ct"},
    "real_kafka": {
        "format": "qlik_kafka",
        "path": "real_kafka",
        "options": {
            "topic_tables": {
                "item_master_update_16_columns": "SAPTM.ITEM_MASTER",
                "employees_salaries_md_and_refresh": "employees.salaries",
            }
        },
    },
}


class Corpus:
    """The project's staging contexts and the undamaged files: ``(feed, path, bytes)``."""

    def __init__(self, stager: Stager, files: list[tuple[str, Path, bytes]]) -> None:
        self.stager, self.files = stager, files

    def __repr__(self) -> str:
        return f"Corpus({len(self.files)} files)"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, samples) -> Corpus:
    landing = tmp_path_factory.mktemp("fuzz_landing")
    shipped = load_project(REPO, {"cdc_landing_root": str(landing)}, check_paths=False)
    for feed, fmt in FEEDS.items():
        write_feed(simulate(seed=5), fmt, landing / feed, shipped.feeds[feed].options)
    for feed, fmt in JP_FEEDS.items():
        write_feed(jp_simulation(), fmt, landing / feed, shipped.feeds[feed].options)
    (landing / "real_gg_tc" / "dirdef").mkdir(parents=True)
    shutil.copy(samples / "goldengate" / "tc000000", landing / "real_gg_tc")
    shutil.copy(samples / "goldengate" / "tc.def", landing / "real_gg_tc" / "dirdef")
    (landing / "real_gg_tr").mkdir()
    shutil.copy(samples / "goldengate" / "tr000000000", landing / "real_gg_tr")
    shutil.copytree(samples / "qlik_ct", landing / "real_ct")
    shutil.copytree(samples / "qlik_kafka", landing / "real_kafka")
    # the demo's feeds (the demo is on in the shipped project) and the samples' beside them
    config = load_project(REPO, {"cdc_landing_root": str(landing), "cdc_feeds": SAMPLE_FEEDS})
    files = [
        (name, path, path.read_bytes())
        for name, feed in config.feeds.items()
        for path in list_landing_files(feed.path, feed.format)
    ]
    return Corpus(Stager(None, config), files)


def _candidate(corpus: Corpus, feed: str, path: Path, final: bool) -> dict:
    """The candidate row staging plans for a new file of ``feed``."""
    config = corpus.stager.config
    fmt = config.feeds[feed].format
    return {
        "feed": feed,
        "format": fmt,
        "path": str(path),
        "source_file": path.relative_to(config.feeds[feed].path).as_posix(),
        "modification_time": dt.datetime(2025, 6, 1, tzinfo=dt.UTC),
        "start": 0,
        "start_index": 0,
        "expected_prefix_sha256": None,
        "sidecar": FORMATS[fmt].sidecar(path),
        "is_final": final,
        "duplicate_of": None,
        "end": None,
        "ranges": [],
    }


def stage_file(corpus: Corpus, feed: str, path: Path, content: bytes, final: bool) -> list[dict]:
    """Run one file through the staging tasks; return the decode-pass rows (``kind`` + row).

    The Kafka metadata of the feed's other (undamaged) files is known, as it is in a batch
    that holds them or follows them.
    """
    config = corpus.stager.config
    fmt = config.feeds[feed].format
    candidate = _candidate(corpus, feed, path, final)
    metadata = []
    if fmt == "qlik_kafka":
        others = [
            {**candidate, "source_file": p.name, "path": str(p)}
            for f, p, _ in corpus.files
            if f == feed and p != path
        ]
        with tempfile.TemporaryDirectory() as folder:  # the task reads the damaged bytes
            damaged = Path(folder) / path.name
            damaged.write_bytes(content)
            batch = pa.RecordBatch.from_pylist([{**candidate, "path": str(damaged)}])
            scan = make_metadata_udf()
            for out in scan([batch, *([pa.RecordBatch.from_pylist(others)] if others else [])]):
                metadata += [(metadata_from_row(r), r["feed"]) for r in out.to_pylist()]
    tables = file_tables(candidate, content, corpus.stager.contexts(metadata)[feed])
    return [
        {"kind": kind, kind: row} for kind, table in tables.items() for row in table.to_pylist()
    ]


def _parts(rows: list[dict]) -> tuple[dict, list[dict], list[dict], list[dict]]:
    """``(manifest, data rows, rejects, metadata rows)`` of one file's decode-pass rows."""
    manifests = [r["raw_ingested_files"] for r in rows if r["kind"] == "raw_ingested_files"]
    assert len(manifests) == 1
    data = [
        r[r["kind"]]
        for r in rows
        if r["kind"].startswith("raw_")
        and r["kind"] not in ("raw_ingested_files", "raw_rejects", "raw_metadata")
    ]
    rejects = [r["raw_rejects"] for r in rows if r["kind"] == "raw_rejects"]
    metadata = [r["raw_metadata"] for r in rows if r["kind"] == "raw_metadata"]
    return manifests[0], data, rejects, metadata


def _starts(data: list[dict], rejects: list[dict], metadata: list[dict]) -> list[int]:
    return sorted(
        {r["record_offset"] for r in data + rejects + metadata if r["record_offset"] is not None}
    )


def _spans(data, rejects, metadata, end: int) -> dict[int, int]:
    """Each record start → where the next record (or reject) starts, or ``end``."""
    starts = _starts(data, rejects, metadata)
    return dict(zip(starts, [*starts[1:], end], strict=True))


def _damage(data: st.DataObject, size: int, single: bool) -> list[tuple[str, int, bytes]]:
    """Draw the damage ``[(kind, position, bytes)]``: with ``single`` one in-place stretch (a
    flipped bit or up to 8 overwritten bytes), else 1 to 4 flips, overwrites, inserts and
    cuts."""
    kinds = (
        [data.draw(st.sampled_from(["flip", "overwrite"]))]
        if single
        else data.draw(
            st.lists(
                st.sampled_from(["flip", "overwrite", "insert", "cut"]), min_size=1, max_size=4
            )
        )
    )
    out = []
    for kind in kinds:
        pos = data.draw(st.sampled_from(range(max(size, 1))))  # uniform, not edge-heavy
        if kind == "flip":
            payload = bytes([1 << data.draw(st.integers(0, 7))])
        elif kind in ("overwrite", "insert"):
            payload = data.draw(st.binary(min_size=1, max_size=8))
        else:
            payload = b""
        out.append((kind, pos, payload))
    return out


def _apply(content: bytes, damages: list[tuple[str, int, bytes]]) -> bytes:
    buf = bytearray(content)
    for kind, pos, payload in damages:
        pos = min(pos, len(buf))
        if kind == "flip" and pos < len(buf):
            buf[pos] ^= payload[0]
        elif kind == "overwrite":
            buf[pos : pos + len(payload)] = payload[: max(len(buf) - pos, 0)]
        elif kind == "insert":
            buf[pos:pos] = payload
        elif kind == "cut":
            del buf[pos:]
    return bytes(buf)


#: Fields that come from the file's other records, not from the record itself: its number;
#: the transaction a Linkexpress full extract's records form (it ends at the last decoded
#: one); a GoldenGate transaction's id and CSN, carried by the tokens of its first record.
CONTEXT_FIELDS = {
    "linkexpress_extract": ("record_index", "transaction_id", "is_transaction_end"),
    "goldengate_trail": ("record_index", "transaction_id", "log_csn"),
}


def _without_context(row: dict, fmt: str) -> dict:
    context = CONTEXT_FIELDS.get(fmt, ("record_index",))
    return {k: v for k, v in row.items() if k not in context}


FUZZ = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,  # the same examples on every run: CI never fails by chance
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _draw_file(corpus: Corpus, data: st.DataObject) -> tuple[str, Path, bytes]:
    feed, path, original = corpus.files[data.draw(st.sampled_from(range(len(corpus.files))))]
    note(f"{feed}/{path.relative_to(corpus.stager.config.feeds[feed].path)}")
    return feed, path, original


def _check_rows_and_rejects(corpus, feed, path, original, damaged, final):
    """Stage ``damaged`` and the undamaged ``original``; assert what every damaged file must
    hold (no exception, no safety-net reject, every byte up to ``byte_end`` a record or inside
    a reject, a final file consumed whole). Returns ``(damaged parts, undamaged parts)``."""
    manifest, rows, rejects, metadata = _parts(stage_file(corpus, feed, path, damaged, final))
    assert not [r["message"] for r in rejects if r["reason"] == "decoder_error"]
    size = len(damaged)
    end = manifest["byte_end"]
    assert manifest["file_size"] == size and 0 <= end <= size
    assert (manifest["rows"], manifest["rejects"]) == (len(rows), len(rejects))
    if final:
        assert end == size and manifest["status"] == "ingested", manifest
    base = _parts(stage_file(corpus, feed, path, original, True))
    _base_manifest, base_rows, base_rejects, base_metadata = base
    base_starts = _starts(base_rows, base_rejects, base_metadata)
    header = base_starts[0] if base_starts else len(original)
    starts = _starts(rows, rejects, metadata)
    assert all(0 <= s <= end for s in starts)
    if starts and end:  # a leading gap: a file header (parsed, or a warning) at most
        first_end = _spans(base_rows, base_rejects, base_metadata, len(original)).get(header, 0)
        assert starts[0] <= max(header, first_end), (starts[:3], header)
    for reject in [] if path.suffix == ".parquet" else rejects:  # offsets: row groups
        reject_end = reject["record_offset"] + reject["record_length"]
        following = [s for s in starts if s > reject["record_offset"]]
        assert reject_end <= end
        assert (following[0] if following else end) <= reject_end, (reject, following[:1], end)
        assert not [r for r in rows if reject["record_offset"] < r["record_offset"] < reject_end], (
            reject
        )
    return (manifest, rows, rejects, metadata), base


@FUZZ
@given(st.data())
def test_damaged_files_of_every_format_stage_to_rows_and_rejects(corpus, data):
    """Flips, overwrites, inserts and cuts anywhere, in a file final or still being written."""
    feed, path, original = _draw_file(corpus, data)
    damages = _damage(data, len(original), single=False)
    final = data.draw(st.booleans(), label="is_final")
    _check_rows_and_rejects(corpus, feed, path, original, _apply(original, damages), final)


@FUZZ
@given(st.data())
def test_records_after_one_damaged_stretch_still_land(corpus, data):
    """One damaged stretch in a final file: every record that does not touch it, its
    neighbours or the metadata it depends on lands as from the undamaged file (Parquet
    excepted: its footer describes the whole file)."""
    feed, path, original = _draw_file(corpus, data)
    damages = _damage(data, len(original), single=True)
    damaged, base = _check_rows_and_rejects(
        corpus, feed, path, original, _apply(original, damages), True
    )
    _manifest, rows, rejects, _metadata = damaged
    _base_manifest, base_rows, base_rejects, base_metadata = base
    if path.suffix == ".parquet":
        event("Parquet: checked for rows and rejects only")
        return
    _kind, at, payload = damages[0]
    stretch = (at, at + len(payload))
    spans = _spans(base_rows, base_rejects, base_metadata, len(original))
    header = min(spans, default=len(original))
    touched = [s for s, e in spans.items() if s < stretch[1] and stretch[0] < e]
    if not touched or stretch[0] < spans.get(header, header):
        # the file header, a header line or the first record (Linkexpress detects the byte
        # order and log type from it): everything after it may depend on it
        event("damage in the header or first record")
        return
    if any(m["record_offset"] is not None and m["record_offset"] in touched for m in base_metadata):
        event("damage in metadata")
        return  # metadata (an MD message, a TDR): the records it describes may not decode
    ordered = sorted(spans)
    last = ordered.index(max(touched))
    first = ordered.index(min(touched))
    keep = ordered[: max(first - 1, 0)] + ordered[last + 2 :]
    fmt = corpus.stager.config.feeds[feed].format
    expected = [_without_context(r, fmt) for r in base_rows if r["record_offset"] in keep]
    event(f"{fmt}: records after the damage checked" if expected else f"{fmt}: none after")
    landed = [_without_context(r, fmt) for r in rows]
    missing = [r for r in expected if r not in landed]
    assert not missing, (damages, len(missing), missing[0]["record_offset"], rejects[:3])


#: A Spark job of staging tasks on one machine (:func:`run_on_spark`, the runner of a cluster's
#: master), in a subprocess with its own JVM: ``argv[1]`` a pickle of ``(contexts, raw root,
#: stamp, groups)``, ``argv[2]`` the lake, ``argv[3]`` where the pickled output rows go.
SPARK_RUNNER = """
import pickle, sys
from pathlib import Path
from python_udfs.spark import get_spark
from python_udfs.staging import make_write_udf, run_on_spark, written_schema
contexts, raw, stamp, groups = pickle.loads(Path(sys.argv[1]).read_bytes())
spark = get_spark(Path(sys.argv[2]))
task = make_write_udf(contexts, raw, "B1", stamp)
rows = run_on_spark(spark, task, groups, written_schema()).to_pylist()
Path(sys.argv[3]).write_bytes(pickle.dumps(rows))
"""


def _run_on_spark_in_subprocess(contexts, raw: Path, stamp, groups, tmp_path: Path) -> list:
    """Run the write task over ``groups`` as a Spark job (:data:`SPARK_RUNNER`); its rows."""
    import pickle
    import subprocess
    import sys

    from pyspark import cloudpickle

    from tests.spark_project import cli_env

    arguments, out = tmp_path / "spark_runner.pickle", tmp_path / "spark_runner_out.pickle"
    arguments.write_bytes(cloudpickle.dumps((contexts, str(raw), stamp, groups)))
    env = cli_env(tmp_path / "landing", tmp_path / "lake")
    subprocess.run(
        [sys.executable, "-c", SPARK_RUNNER, str(arguments), str(tmp_path / "lake"), str(out)],
        env=env,
        check=True,
        timeout=300,
    )
    return pickle.loads(out.read_bytes())


@pytest.mark.parametrize("runner", ["this process", "worker processes", "Spark tasks"])
def test_staging_tasks_write_what_the_reference_decoders_give_once_and_a_retry_replaces_it(
    corpus, tmp_path, runner
):
    """The decode-and-write pass (make_write_udf) as staging runs its tasks: in this process
    (a small batch), in worker processes (a local master, ADR 0031) and as a Spark job (a
    cluster's master), over every file of the corpus (the simulator's files of the five formats
    and the real samples), against the reference: each file decoded record by record
    (file_outputs without the columnar paths). Every raw table gets one parquet file per task
    holding exactly the reference rows, in feed, file and offset order, ingested_at set; the
    manifest rows come back instead of being written; no temporary file is left; a task run
    again (a retry) writes the same files under the same names."""
    records = sorted(
        (_candidate(corpus, f, p, True) for f, p, _ in corpus.files),
        key=lambda r: (r["feed"], r["source_file"]),
    )
    content = {str(p): b for _, p, b in corpus.files}
    scanned = [
        (column, r["feed"])
        for r in records
        if FORMATS[r["format"]].scan_metadata is not None
        for column in FORMATS[r["format"]].scan_metadata(content[r["path"]], r["source_file"], 0)
    ]
    contexts = corpus.stager.contexts(scanned)
    stamp = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    reference: dict[str, list[dict]] = {}
    for record in records:
        for item in file_outputs(record, content[record["path"]], contexts[record["feed"]]):
            reference.setdefault(item["kind"], []).append(item[item["kind"]])
    reference = {  # through each table's schema, as the files hold them
        kind: pa.Table.from_pylist(rows, schema=arrow_schema(kind)).to_pylist()
        for kind, rows in reference.items()
    }
    assert {"raw_qlik_change_tables", "raw_goldengate_trail", "raw_qlik_kafka"} <= set(reference)

    halves = (records[: len(records) // 2], records[len(records) // 2 :])  # two tasks

    def run_tasks() -> tuple[list[dict], dict[str, list[Path]]]:
        back = []
        task = make_write_udf(contexts, str(tmp_path / "raw"), "B1", stamp)
        groups = [pa.RecordBatch.from_pylist(half) for half in halves]
        if runner == "worker processes":
            back = [row for out in run_in_processes(task, groups, 2) for row in out.to_pylist()]
        elif runner == "Spark tasks":
            back = _run_on_spark_in_subprocess(contexts, tmp_path / "raw", stamp, groups, tmp_path)
        else:
            for half in halves:
                batches = [
                    pa.RecordBatch.from_pylist(half[i : i + 4]) for i in range(0, len(half), 4)
                ]
                back += [row for out in task(batches) for row in out.to_pylist()]
        files: dict[str, list[Path]] = {}
        for p in sorted((tmp_path / "raw").rglob("*")):
            if p.is_file() and not p.name.endswith(".crc"):
                files.setdefault(p.parent.parent.name, []).append(p)
        return back, files

    back, files = run_tasks()
    assert [r["raw_ingested_files"] for r in back] == reference["raw_ingested_files"]
    assert "raw_ingested_files" not in files  # the driver writes the manifest: the commit
    assert set(files) == set(reference) - {"raw_ingested_files"}
    for name, paths in files.items():
        assert len(paths) <= 2 and all(p.suffix == ".parquet" for p in paths), paths
        assert not any(p.name.startswith(("_", ".")) for p in paths)
        tables = [pq.read_table(p) for p in paths]
        rows = [row for t in tables for row in t.to_pylist()]
        assert {r["ingested_at"] for r in rows} == {stamp}
        key = lambda r: (r["feed"], r["source_file"], r["record_offset"] or 0)  # noqa: E731
        for table in tables:  # each file in feed, file and offset order
            order = [key(r) for r in table.to_pylist()]
            assert order == sorted(order)
        want = [{**r, "ingested_at": stamp} for r in reference[name]]
        assert sorted(rows, key=key) == sorted(want, key=key)
    if runner != "Spark tasks":  # the same task functions; a JVM less in the suite
        again, files_again = run_tasks()
        assert again == back and files_again == files


def test_task_groups_balance_the_bytes_to_decode_and_keep_file_order(tmp_path):
    """Staging spreads the batch's files over its tasks by the bytes each has left to decode
    (largest first onto the lightest task), drops empty tasks, and hands every task its files
    in feed, file and start order; a file read from an offset counts only what is left."""
    from python_udfs.staging import Candidate, task_groups

    def candidate(name: str, size: int, start: int = 0, feed: str = "f") -> Candidate:
        path = tmp_path / name
        path.write_bytes(b"x" * size)
        stamp = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
        return Candidate(feed, "qlik_kafka", str(path), name, stamp, start, 0, None, None)

    files = [
        candidate("a", 900),
        candidate("b", 500),
        candidate("c", 400),
        candidate("d", 1000, start=700),  # 300 bytes left
        candidate("e", 100, feed="e"),
    ]
    groups = task_groups(files, 2)
    # a 900, b 500, c 400 + b, d 300 + a (a tie goes to the first), e 100 + the lighter
    assert [[c.source_file for c in g] for g in groups] == [["a", "d"], ["e", "b", "c"]]
    assert task_groups(files[:1], 4) == [[files[0]]]
    for group in task_groups(files, 3):
        keys = [(c.feed, c.source_file, c.start) for c in group]
        assert keys == sorted(keys)


def test_the_workers_start_with_their_allocator_settings_and_leave_the_callers_environment():
    """The workers' server starts with :data:`WORKER_ENVIRONMENT` where the caller sets none of
    it; the caller's own environment is as it was (a JVM started later inherits nothing)."""
    import os

    from python_udfs.workers import WORKER_ENVIRONMENT

    before = {name: os.environ.get(name) for name in WORKER_ENVIRONMENT}

    def environment(batches):
        for _batch in batches:
            yield pa.RecordBatch.from_pylist(
                [{"name": name, "value": os.environ.get(name)} for name in WORKER_ENVIRONMENT]
            )

    (out,) = run_in_processes(environment, [pa.RecordBatch.from_pylist([{"x": 1}])], 1)
    seen = {row["name"]: row["value"] for row in out.to_pylist()}
    assert seen == {n: before[n] or value for n, value in WORKER_ENVIRONMENT.items()}
    assert {name: os.environ.get(name) for name in WORKER_ENVIRONMENT} == before


def test_a_stopped_worker_server_is_gone_and_the_next_batch_starts_another():
    """:func:`stop_worker_server` ends the ``forkserver`` process (a one-shot ``cdc run`` frees
    its memory before the build); the next batch forks from a new server and still decodes."""
    import multiprocessing.forkserver
    import os

    from python_udfs.workers import stop_worker_server

    def pid_of(batches):
        for _batch in batches:
            yield pa.RecordBatch.from_pylist([{"parent": os.getppid()}])

    one = [pa.RecordBatch.from_pylist([{"x": 1}])]
    (first,) = run_in_processes(pid_of, one, 1)
    server = multiprocessing.forkserver._forkserver._forkserver_pid
    assert first.to_pylist() == [{"parent": server}]
    stop_worker_server()
    stop_worker_server()  # stopping a stopped server is harmless
    with pytest.raises(ProcessLookupError):
        os.kill(server, 0)
    (second,) = run_in_processes(pid_of, one, 1)
    assert second.to_pylist()[0]["parent"] not in (server, None)
