"""A second process that reads a lake while `cdc run` works on it (issue 73, ADR 0038).

``python -m tests.lake_reader LAKE OUT STOP``: waits until a process holds the lake and serves
its metastore (``python_udfs.spark.held_metastore_port``; it takes no lock), opens one reader
session (``python_udfs.spark.reader_session``, what ``cdc sql`` opens then) and, until the file
STOP exists, asks for ``current_state`` and ``history`` in a loop: one JSON line per round to
OUT with both answers (:func:`spark_answer`), or the error a query raised. Each round also
reads both tables by path with delta-rs, as a reader outside Spark does (:func:`delta_answer`).

An answer names each table's rows by what identifies a version of them: ``current_state`` by
key and last change position, ``history`` by version, closing position and current flag. The
two readers give the same answer for the same table version, so a test compares every answer
with :func:`delta_answer` of the lake before and after each run (:func:`check_reading`);
:func:`start` and :func:`finish` run the reader beside a test's run.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

#: The repository root: ``python -m tests.lake_reader`` runs from there.
REPO = Path(__file__).resolve().parents[1]

#: Seconds between two rounds of the reader.
PAUSE_SECONDS = 2.0

#: What identifies a version of each table's rows (Spark SQL over ``cdc.<table>``).
IDENTITIES = {
    "current_state": "concat_ws('|', current_state_id, last_change_position)",
    "history": "concat_ws('|', version_id, coalesce(valid_to_position, ''), cast(is_current as string))",
}


def _digest(identities: list[str]) -> list:
    """``[row count, sha-256 of the sorted identities]``: an answer for one table."""
    joined = "\n".join(sorted(identities)).encode("utf-8")
    return [len(identities), hashlib.sha256(joined).hexdigest()]


def spark_answer(spark) -> dict[str, list]:
    """Both tables' answers (:func:`_digest`) from a Spark session, one query each."""
    answer = {}
    for table, identity in IDENTITIES.items():
        rows = spark.sql(f"select {identity} as i from cdc.{table}").collect()
        answer[table] = _digest([r["i"] for r in rows])
    return answer


def delta_answer(lake: Path) -> dict[str, list]:
    """Both tables' answers (:func:`_digest`) read by path with delta-rs at their last version.

    delta-rs's SQL engine applies the deletion vectors a MERGE writes (ADR 0038).
    """
    from deltalake import DeltaTable, QueryBuilder

    answer = {}
    for table, identity in IDENTITIES.items():
        delta = DeltaTable(str(lake / "warehouse" / "cdc.db" / table))
        query = QueryBuilder().register("t", delta)
        values = query.execute(f"select {identity} as i from t").read_all().column("i")
        answer[table] = _digest(values.to_pylist())
    return answer


def main(lake: Path, out: Path, stop: Path) -> None:
    """Read ``lake`` in a loop until ``stop`` exists; one JSON line per round to ``out``."""
    from python_udfs.spark import held_metastore_port, reader_session

    while (port := held_metastore_port(lake)) is None:  # the run has not started its JVM yet
        if stop.exists():
            return
        time.sleep(0.2)
    spark = reader_session(lake, port)
    with out.open("a", encoding="utf-8") as log:
        while not stop.exists():
            line: dict = {}
            try:
                line["spark"] = spark_answer(spark)
            except Exception as exc:  # noqa: BLE001 - every error is what the test counts
                if held_metastore_port(lake) is None:
                    return  # the run ended: a reader session lasts as long as its holder
                line["error"] = str(exc).strip().splitlines()[0]
            try:
                line["delta"] = delta_answer(lake)
            except Exception as exc:  # noqa: BLE001
                line["error"] = str(exc).strip().splitlines()[0]
            log.write(json.dumps(line) + "\n")
            log.flush()
            time.sleep(PAUSE_SECONDS)  # leave the run most of the machine's two cores


def start(lake: Path, folder: Path, env: dict[str, str]) -> subprocess.Popen:
    """Start :func:`main` on ``lake`` in a process of its own, writing into ``folder``.

    ``env`` is a ``cdc`` subprocess's environment (``tests.spark_project.cli_env``). Call
    :func:`finish` when the run it watches is done.
    """
    folder.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "tests.lake_reader", str(lake)]
    command += [str(folder / "rounds.jsonl"), str(folder / "stop")]
    return subprocess.Popen(command, env=env, cwd=REPO)


def finish(reader: subprocess.Popen, folder: Path) -> list[dict]:
    """Stop the reader :func:`start` started and return its rounds (one dict each)."""
    (folder / "stop").touch()
    reader.wait(timeout=300)
    rounds = folder / "rounds.jsonl"
    if not rounds.is_file():
        return []
    return [json.loads(line) for line in rounds.read_text(encoding="utf-8").splitlines()]


def check_reading(rounds: list[dict], states: list[dict], minimum: int = 25) -> None:
    """Assert that a reader's ``rounds`` read only ``states``, in their order, without error.

    ``states`` are :func:`delta_answer` of the lake before the runs and after each of them.
    Each answer for a table must be that table in one of ``states``, never an earlier one than
    the answer before it. Tables are compared one by one: a run commits ``current_state``,
    then ``history`` (ADR 0038), so a round between the two commits reads the new state and
    the old history. Each round asks each table once through Spark and once through delta-rs,
    so ``minimum`` rounds are twice as many queries of each kind. Raises AssertionError
    naming what differs.
    """
    assert [r for r in rounds if "error" in r] == [], [r for r in rounds if "error" in r][:3]
    assert len(rounds) >= minimum, f"{len(rounds)} rounds"
    for reader in ("spark", "delta"):
        for table in IDENTITIES:
            versions = [state[table] for state in states]
            seen = [
                versions.index(r[reader][table]) if r[reader][table] in versions else None
                for r in rounds
            ]
            assert None not in seen and seen == sorted(seen), (reader, table, seen)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
