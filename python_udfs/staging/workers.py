"""Where a batch's tasks run: this process, worker processes, or a Spark job.

:func:`task_groups` spreads the candidates over tasks by their bytes (:func:`work_bytes`);
:class:`Tasks` runs one task function over them in this process (a batch of at most
:data:`IN_PROCESS_BYTES`), in the worker processes of :mod:`python_udfs.workers` (a local
master, ADR 0031) or as one Spark job on a cluster (:func:`run_on_spark`).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pyarrow as pa

from python_udfs.staging.schemas import CANDIDATE_SCHEMA, Candidate
from python_udfs.workers import local_processes, run_in_processes

#: A batch with at most this many bytes to decode runs its tasks in the driver process, one
#: after the other (the same task functions, the same files): starting Spark's Python workers
#: for a job costs more than decoding a few MiB (a +1 % run's 10,050-row Qlik Parquet file of
#: 0.5 MB: 2.7 s as a Spark job). ``CDC_STAGE_IN_PROCESS_BYTES`` overrides it (0: always Spark).
IN_PROCESS_BYTES = 8 * 2**20


def work_bytes(candidate: Candidate) -> int:
    """Count the bytes of ``candidate`` left to decode: its size (or ``end``) less ``start``.

    A file the driver cannot stat counts as empty (its task reports the error).
    """
    try:
        size = os.stat(candidate.path).st_size
    except OSError:
        size = 0
    end = size if candidate.end is None else min(candidate.end, size)
    return max(0, end - candidate.start)


def task_groups(candidates: list[Candidate], tasks: int) -> list[list[Candidate]]:
    """Spread ``candidates`` over at most ``tasks`` staging tasks of about equal work.

    The work of a file is the bytes left to decode (:func:`work_bytes`). The largest file
    goes to the task with the least work so far (longest processing time first). Each group is
    in feed, file and start order, the order a task decodes and writes in (ADR 0010, ADR
    0014); empty groups are dropped.
    """
    groups: list[list[Candidate]] = [[] for _ in range(max(1, tasks))]
    loads = [0] * len(groups)
    for size, candidate in sorted(
        ((work_bytes(c), c) for c in candidates), key=lambda pair: (-pair[0], pair[1].source_file)
    ):
        lightest = loads.index(min(loads))
        groups[lightest].append(candidate)
        loads[lightest] += size
    order = lambda c: (c.feed, c.source_file, c.start)  # noqa: E731
    return [sorted(group, key=order) for group in groups if group]


def run_on_spark(
    spark, task: Callable, groups: list[pa.RecordBatch], out_schema: pa.Schema
) -> pa.Table:
    """Run ``task`` once per group of candidates as Spark tasks (a cluster's master).

    One Spark job over ``spark.range`` with one partition per group; each task takes its
    group from the function's closure and reads its files itself (:func:`candidate_bytes`),
    so the landing and lake roots must be mounted alike on every executor. Returns the output
    rows in ``out_schema``; a failed task fails the job (raised here).
    """
    from pyspark.sql.pandas.types import from_arrow_schema

    def by_group(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for number in batch.column("id").to_pylist():
                yield from task(iter([groups[number]]))

    spread = spark.range(0, len(groups), 1, max(1, len(groups)))
    return spread.mapInArrow(by_group, from_arrow_schema(out_schema)).toArrow()


class Tasks:
    """Where a batch's candidates are decoded, and the runner of one task function over them.

    In this process for a batch of at most :data:`IN_PROCESS_BYTES` (one task), in worker
    processes on a local master (:func:`~python_udfs.workers.run_in_processes`, ADR 0031), or
    as a Spark job on a cluster's master (:func:`run_on_spark`); twice as many tasks as
    processes or cores, spread by :func:`task_groups`.
    """

    def __init__(
        self, candidates: list[Candidate], lake_root: Path, spark: Callable[[], Any]
    ) -> None:
        """Place ``candidates``; ``spark`` returns a SparkSession, started for a cluster only."""
        from python_udfs.spark import spark_conf

        self.candidates = candidates
        limit = int(os.environ.get("CDC_STAGE_IN_PROCESS_BYTES", IN_PROCESS_BYTES))
        self.in_process = sum(work_bytes(c) for c in candidates) <= limit
        #: Worker processes of the engine's master (``CDC_SPARK_MASTER`` or ``spark.master``
        #: of ``CDC_SPARK_CONF``), or None on a cluster's master.
        self.processes = local_processes(spark_conf(lake_root)["spark.master"])
        self._spark = spark

    @functools.cached_property
    def groups(self) -> list[list[dict[str, Any]]]:
        """The candidates as task groups of :data:`~schemas.CANDIDATE_SCHEMA` rows."""
        if self.in_process:
            tasks = 1
        else:
            tasks = 2 * (self.processes or self._spark().sparkContext.defaultParallelism)
        return [
            [dict(asdict(c), ranges=[{"start": a, "end": b} for a, b in c.ranges]) for c in group]
            for group in task_groups(self.candidates, tasks)
        ]

    @property
    def where(self) -> str:
        """Where the tasks run, for the staging log."""
        if self.in_process:
            return "in this process"
        if self.processes:
            return f"in {min(self.processes, len(self.groups))} worker process(es), {len(self.groups)} task(s)"
        return f"on {len(self.groups)} Spark task(s)"

    def run(self, task: Callable, out_schema: pa.Schema, formats=None) -> pa.Table:
        """Run ``task`` (a task function) over every group; its output rows in ``out_schema``.

        With ``formats``, over the candidates of those formats only.
        """
        chosen = [
            pa.RecordBatch.from_pylist(rows, CANDIDATE_SCHEMA)
            for rows in (
                [r for r in g if formats is None or r["format"] in formats] for g in self.groups
            )
            if rows
        ]
        if self.in_process:  # one group after the other, in this process
            out = [batch for group in chosen for batch in task(iter([group]))]
        elif self.processes:
            out = run_in_processes(task, chosen, self.processes)
        else:
            return run_on_spark(self._spark(), task, chosen, out_schema)
        return pa.Table.from_batches(out, schema=out_schema)
