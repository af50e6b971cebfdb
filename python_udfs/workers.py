"""Staging's worker processes on a local Spark master (ADR 0031): a forkserver and a pool.

A batch that a local master stages is decoded in worker processes, not in Spark: they fork from
a ``forkserver`` that has imported the decoders once (:func:`start_worker_server`), and run the
staging task functions (:func:`run_in_processes`). This module imports only the standard
library when it loads, so that ``cdc stage`` can start the server before it imports the
decoders itself.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

#: The Spark master of the embedded engine when ``CDC_SPARK_MASTER`` names none.
DEFAULT_MASTER = "local[*]"


def configured_master() -> str:
    """Return this process's Spark master: ``CDC_SPARK_MASTER``, else :data:`DEFAULT_MASTER`."""
    return os.environ.get("CDC_SPARK_MASTER", DEFAULT_MASTER)


def local_processes(master: str) -> int | None:
    """Return how many worker processes stage a batch on Spark master ``master``.

    ``local`` → 1, ``local[N]`` (or ``local[N,F]``) → N, ``local[*]`` → the cores this
    process may use; None for any other master (a cluster), whose batches run as a Spark job.
    """
    match = re.fullmatch(r"local(?:\[(\*|\d+)(?:,\s*\d+)?\])?", master.strip())
    if match is None:
        return None
    if match[1] and match[1] != "*":
        return max(1, int(match[1]))
    if match[1] is None:
        return 1
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _run_task(task: bytes, batch: pa.RecordBatch) -> list[pa.RecordBatch]:
    """Run one staging task (``cloudpickle``'d) over its candidates, in a worker process."""
    import pickle

    return list(pickle.loads(task)(iter([batch])))


#: The modules the worker processes' ``forkserver`` imports once, before any worker forks from
#: it: staging (with every decoder), cloudpickle, and pandas, which pyarrow imports the first
#: time it builds an array from Python values; a module that is not installed is skipped.
WORKER_PRELOAD = ("python_udfs.staging", "pyspark.cloudpickle", "pandas")


#: The environment the workers' server starts with, where the caller's sets none of it: freed
#: memory stays with a worker for its next file, instead of going back to the kernel and
#: faulting in again 4 KiB at a time (a third of a worker's page faults on the benchmark's
#: Kafka dumps). glibc ``malloc``'s trim threshold and top pad (numpy's arrays, Python's
#: bytes), mimalloc's purge delay (Arrow's buffers).
WORKER_ENVIRONMENT = {
    "MALLOC_TRIM_THRESHOLD_": str(2**32),
    "MALLOC_TOP_PAD_": str(2**30),
    "MIMALLOC_PURGE_DELAY": "-1",
}


def start_worker_server():
    """Start the ``forkserver`` of the staging workers, if it is not running; its context.

    Does not wait for the server to import :data:`WORKER_PRELOAD` (about half a second): that
    runs beside the caller's own work, and the first worker waits for it. ``cdc stage`` calls
    this before it imports anything else, ``Stager.stage`` once it has planned a batch that
    the workers decode. The server lives until :func:`stop_worker_server` or the end of this
    process, so later batches of ``cdc run --every`` fork from it too.
    """
    import multiprocessing
    import multiprocessing.forkserver

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(WORKER_PRELOAD))
    added = {k: v for k, v in WORKER_ENVIRONMENT.items() if k not in os.environ}
    os.environ.update(added)  # the server's environment; this process's allocators are set
    try:
        multiprocessing.forkserver.ensure_running()
    finally:
        for name in added:
            del os.environ[name]
    return context


def stop_worker_server() -> None:
    """Stop the staging workers' ``forkserver`` if it runs; the next batch starts it again.

    The server holds the decoders it preloaded (about 120 MiB of resident memory on the peer
    benchmark) for as long as this process lives. A ``cdc run`` that stages once and then
    builds stops it after staging (``run.run``), so the dbt build's peak memory does not carry
    it; ``cdc run --every`` keeps it for its next batches. Uses the standard library's own stop
    (``ForkServer._stop``, which CPython's tests call); where a Python lacks it, nothing is
    stopped.
    """
    import multiprocessing.forkserver

    stop = getattr(multiprocessing.forkserver._forkserver, "_stop", None)
    if stop is not None:
        stop()


def run_in_processes(
    task: Callable, groups: list[pa.RecordBatch], processes: int
) -> list[pa.RecordBatch]:
    """Run ``task`` once per group of candidates, ``processes`` at a time; the output batches.

    ``task`` is a task function (``staging.make_write_udf``, ``staging.make_metadata_udf``), sent to
    the workers with ``cloudpickle`` as Spark sends its tasks (the decoder contexts hold
    functions); each group is an Arrow batch of ``staging.Candidate`` fields. The workers fork
    from a ``forkserver`` process that has imported staging once (a fresh process: no
    thread of the caller's, such as a SparkSession's, is copied into a worker), and read and
    write the files themselves: only the task, the candidates and the small output batches
    are pickled between processes. Outputs come in group order. An exception of a task is
    raised here (the batch fails, and nothing is committed).
    """
    from concurrent.futures import ProcessPoolExecutor

    from pyspark import cloudpickle

    if not groups:
        return []

    context = start_worker_server()
    workers = max(1, min(processes, len(groups)))
    payload = cloudpickle.dumps(task)
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        outputs = list(pool.map(_run_task, [payload] * len(groups), groups))
    return [batch for output in outputs for batch in output]
