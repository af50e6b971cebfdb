"""The one place that builds the SparkSession of the ``cdc`` commands and dbt (``method: session``).

``cdc run`` creates the session here (while it stages, which needs no JVM on a local master:
ADR 0031); dbt-spark's session connection then calls ``SparkSession.builder.getOrCreate()``
and gets this same session, so the run and ``dbt build`` share one JVM. ``profiles.yml`` (target ``local``) repeats the same settings as
``server_side_parameters`` for a plain ``dbt build`` outside the CLI.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import re
import shutil
import sys
import threading
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from python_udfs.records import ConfigError
from python_udfs.workers import configured_master

#: The JVM's log configuration: errors only, on stderr (``CDC_SPARK_LOG_LEVEL`` raises it).
LOG4J2_CONFIG = Path(__file__).with_name("log4j2.properties")


def spark_conf(lake_root: Path) -> dict[str, str]:
    """Return the embedded engine's settings for a lake root (absolute path).

    The Hive metastore is embedded Derby at ``<lake_root>/metastore_db`` and the warehouse is
    ``<lake_root>/warehouse``. Small local settings suit a 2-core, 24 GiB machine: 4 shuffle
    partitions, a heap of :data:`DEFAULT_DRIVER_MEMORY` (``CDC_SPARK_DRIVER_MEMORY``
    overrides), no UI. Timestamps are UTC and ANSI mode is off, as dbt-spark sets it. The JVM
    logs errors only (:data:`LOG4J2_CONFIG`). ``CDC_SPARK_JAVA_OPTIONS`` adds JVM
    options to the driver (for example ``-XX:StartFlightRecording=filename=run.jfr`` to profile
    a run with Java Flight Recorder), and ``CDC_SPARK_CONF`` any other Spark setting
    (:func:`extra_spark_conf`); it comes last, so it overrides these.
    """
    lake = lake_root.resolve()
    return {
        **_engine_conf(lake),
        **extra_spark_conf(os.environ.get("CDC_SPARK_CONF", "")),
    }


def extra_spark_conf(text: str) -> dict[str, str]:
    """Parse ``CDC_SPARK_CONF``: Spark settings as whitespace-separated ``key=value`` pairs.

    For example ``spark.sql.adaptive.enabled=false spark.sql.codegen.wholeStage=false``. A value
    cannot hold whitespace. dbt's session target applies the settings of ``profiles.yml`` to
    the session again: those (shuffle partitions, driver memory, log level) have their own
    ``CDC_`` variables, which both read. Raises ConfigError naming the pair when one has no
    ``=`` or a key that does not start with ``spark.``.
    """
    conf = {}
    for pair in text.split():
        key, sep, value = pair.partition("=")
        if not sep or not key.startswith("spark."):
            raise ConfigError(
                f"CDC_SPARK_CONF: {pair!r} is not a Spark setting; write key=value pairs "
                "separated by spaces, for example spark.sql.adaptive.enabled=false"
            )
        conf[key] = value
    return conf


#: The driver JVM's heap when ``CDC_SPARK_DRIVER_MEMORY`` sets none (ADR 0036). The parallel
#: collector grows the heap to its maximum in a long build, so this bounds the run's resident
#: memory: the JVM held about 0.75 GiB more than its heap on the peer benchmark. 1.5 GiB built
#: 5 million events (benchmarks/peer_compare.py's events); ``profiles.yml`` repeats it.
DEFAULT_DRIVER_MEMORY = "1536m"

#: Steps a recursive CTE may take (Spark's default is 100): int_linked_keys takes one step per
#: key change of the longest chain of key changes (ADR 0026).
CTE_RECURSION_LEVEL_LIMIT = "1000000"


def delta_packages() -> tuple[str, ...]:
    """Return the Maven coordinates (``group:artifact:version``) of the Delta Lake jars.

    Derived from the pinned Python packages (``pyproject.toml``, ``requirements.lock``) as
    ``delta.configure_spark_with_delta_pip`` names them: the ``delta-spark`` release and
    pyspark's major.minor give ``io.delta:delta-spark_4.2_2.13:4.4.0``, so the jars cannot drift
    from the Python packages. ``delta-storage`` is its one runtime dependency pyspark does not
    ship (Delta's pom; ADR 0038).
    """
    import importlib.metadata

    import pyspark

    delta = importlib.metadata.version("delta_spark")
    spark = ".".join(pyspark.__version__.split(".")[:2])
    return (f"io.delta:delta-spark_{spark}_2.13:{delta}", f"io.delta:delta-storage:{delta}")


def jar_folder() -> Path:
    """Return where ``make install`` puts the Delta jars: ``<sys.prefix>/share/cdc_changelog/jars``."""
    return Path(sys.prefix) / "share" / "cdc_changelog" / "jars"


def _jar_name(coordinates: str) -> str:
    """``group:artifact:version`` → ``artifact-version.jar``, the name Maven copies it under."""
    _group, artifact, version = coordinates.split(":")
    return f"{artifact}-{version}.jar"


def _installed_jars(folder: Path, packages: tuple[str, ...], what: str) -> list[Path]:
    """Return the jars of Maven ``packages`` in ``folder``, as ``make install`` copied them.

    Raises ConfigError naming the first missing jar, ``what`` it is, and the fix: ``make
    install`` fetches them once, and runs need no network afterwards.
    """
    jars = [folder / _jar_name(c) for c in packages]
    missing = [j for j in jars if not j.is_file()]
    if missing:
        raise ConfigError(
            f"{missing[0]} not found: {what} fetched by `make install` "
            "(python -m python_udfs.spark --fetch-jars, which needs mvn and Maven Central)"
        )
    return jars


def delta_jars() -> list[Path]:
    """Return the jars of :func:`delta_packages` in :func:`jar_folder`.

    Raises ConfigError naming the missing jar and the fix (:func:`_installed_jars`).
    """
    return _installed_jars(jar_folder(), delta_packages(), "the Delta Lake jars are")


def delta_class_path() -> str:
    """Return :func:`delta_jars` as a Java class path (``:``-separated absolute paths).

    For ``spark.driver.extraClassPath`` and for ``CDC_DELTA_JARS`` (``profiles.yml``). Raises
    ConfigError as :func:`delta_jars` does.
    """
    return ":".join(str(jar) for jar in delta_jars())


def derby_packages() -> tuple[str, ...]:
    """Return the Maven coordinates of Derby's network server and client for pyspark's Derby.

    The version is that of the ``derby-<version>.jar`` pyspark ships (the embedded metastore's
    engine; pyspark also ships ``derbyshared`` and ``derbytools``, which both need): the server
    runs inside the JVM that holds the lake, the client in a reader's JVM
    (:func:`reader_session`, ADR 0038).
    """
    import pyspark

    (engine,) = (Path(pyspark.__file__).parent / "jars").glob("derby-[0-9]*.jar")
    version = engine.stem.removeprefix("derby-")
    return (f"org.apache.derby:derbynet:{version}", f"org.apache.derby:derbyclient:{version}")


def derby_jars() -> list[Path]:
    """Return the jars of :func:`derby_packages` in ``<jar_folder>/derby``.

    Raises ConfigError naming the missing jar and the fix (:func:`_installed_jars`).
    """
    return _installed_jars(
        jar_folder() / "derby", derby_packages(), "Derby's network server and client are"
    )


def fetch_delta_jars() -> list[Path]:
    """Copy the jars of :func:`delta_packages` and :func:`derby_packages` from Maven Central.

    Into :func:`jar_folder` (Derby's into its ``derby`` folder). Runs ``mvn dependency:copy``
    (Maven's own resolution and local repository) for each jar not there yet; ``make install``
    calls it. Returns every jar. Raises RuntimeError with Maven's output when a jar cannot be
    fetched, FileNotFoundError when there is no ``mvn``.
    """
    import subprocess

    wanted = [(jar_folder(), c) for c in delta_packages()]
    wanted += [(jar_folder() / "derby", c) for c in derby_packages()]
    for folder, coordinates in wanted:
        folder.mkdir(parents=True, exist_ok=True)
        if (folder / _jar_name(coordinates)).is_file():
            continue
        command = ["mvn", "--batch-mode", "--quiet", "dependency:copy"]
        command += [f"-Dartifact={coordinates}", f"-DoutputDirectory={folder}"]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"mvn could not fetch {coordinates}:\n{done.stdout[-3000:]}")
    return delta_jars() + derby_jars()


#: Delta Lake's settings (Delta's documentation, "Configure SparkSession"): its SQL extension
#: (MERGE, time travel, ``DESCRIBE DETAIL``, ``table_changes``) and its catalog over Spark's
#: own, so ``using delta`` tables live in the Hive metastore beside the parquet ones. A
#: table's state is computed in 2 partitions instead of 50 (a small lake on 2 cores).
DELTA_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    "spark.databricks.delta.snapshotPartitions": "2",
}


def _engine_conf(lake: Path) -> dict[str, str]:
    """Return the embedded engine's own settings for an absolute lake root (:func:`spark_conf`)."""
    # Delta's jars on the JVM's own class path rather than spark.jars: a Thrift Server's query
    # threads find the delta data source there, and the class archive maps them. Derby's
    # network server and client beside its engine (the system class loader), on the driver.
    class_path = delta_class_path()
    derby = ":".join(str(jar) for jar in derby_jars())
    return {
        "spark.driver.extraClassPath": f"{class_path}:{derby}",
        "spark.executor.extraClassPath": class_path,
        **DELTA_CONF,
        "spark.master": configured_master(),
        "spark.app.name": "cdc_changelog",
        "spark.driver.memory": os.environ.get("CDC_SPARK_DRIVER_MEMORY", DEFAULT_DRIVER_MEMORY),
        "spark.sql.shuffle.partitions": os.environ.get("CDC_SHUFFLE_PARTITIONS", "4"),
        "spark.default.parallelism": "4",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.ansi.enabled": "false",
        "spark.sql.warehouse.dir": str(lake / "warehouse"),
        "spark.sql.catalogImplementation": "hive",
        "spark.hadoop.javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={lake / 'metastore_db'};create=true"
        ),
        "spark.driver.extraJavaOptions": (
            f"-Dderby.system.home={lake} -Dderby.stream.error.file={lake / 'derby.log'} "
            f"-Dlog4j2.configurationFile={LOG4J2_CONFIG} "
            + _metastore_server(lake)
            + _garbage_collector(os.environ.get("CDC_SPARK_JAVA_OPTIONS", ""))
            + _class_sharing(os.environ.get("CDC_SPARK_JAVA_OPTIONS", ""))
            + os.environ.get("CDC_SPARK_JAVA_OPTIONS", "")
        ).strip(),
        "spark.sql.sources.partitionOverwriteMode": "dynamic",
        # int_linked_keys walks chains of key changes one key change a step (a recursive CTE);
        # Spark stops a recursion at 100 steps by default. The walk ends by itself (a path
        # never repeats a key), so a longer chain of key changes must not stop the run.
        "spark.sql.cteRecursionLevelLimit": CTE_RECURSION_LEVEL_LIMIT,
        # A run killed during CREATE TABLE AS SELECT leaves the table folder without a metastore
        # entry; the next run must be able to create the table there again (crash safety).
        "spark.sql.legacy.allowNonEmptyLocationInCTAS": "true",
        "spark.sql.parquet.compression.codec": "snappy",
        "spark.python.worker.reuse": "true",
        # Python workers run the decoders: they must use this interpreter (the venv's).
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
    }


def _metastore_server(lake: Path) -> str:
    """Return the JVM options that serve the lake's Derby metastore to other JVMs ('' if none).

    When this process holds the lake (:func:`lock_lake`), the embedded Derby engine also
    starts its network server on loopback, on the port the lock line names, so that a reader
    in another JVM opens the same metastore while a run works (:func:`reader_session`; Derby's
    documentation, "Starting the Network Server from within an application":
    ``derby.drda.startNetworkServer``). It listens on 127.0.0.1 only, without authentication,
    for the lifetime of the holder.
    """
    held = _LAKE_LOCKS.get(lake)
    if held is None:
        return ""
    return (
        "-Dderby.drda.startNetworkServer=true -Dderby.drda.host=127.0.0.1 "
        f"-Dderby.drda.portNumber={held[1]} "
    )


def _garbage_collector(java_options: str) -> str:
    """Return the JVM option choosing the driver's garbage collector ('' when one is chosen).

    ``java_options`` is ``CDC_SPARK_JAVA_OPTIONS``; when it chooses a collector, this one is
    left out (two choices stop the JVM at start). The parallel collector: a run is a batch of queries on a 2-core machine, where throughput
    counts and pauses do not. On the peer's 1 M events (benchmarks/peer_compare.py) the full
    run took 116.5 s against 138.5 s with the JVM's default (G1), the +1 % run 58.3 s against
    67.2 s, with a lower peak memory.
    """
    return "" if re.search(r"-XX:\+Use\w+GC\b", java_options) else "-XX:+UseParallelGC "


#: JVM option that keeps class-data sharing quiet: CDS names every class it cannot archive
#: (Derby's generated ones) and says so when it cannot map an archive (another Java).
QUIET_CLASS_SHARING = "-Xlog:cds*=off"


def _class_sharing(java_options: str) -> str:
    """Return the JVM options that start the driver from the class archive ('' without one).

    ``java_options`` is ``CDC_SPARK_JAVA_OPTIONS``; when it sets class sharing itself
    (``-XX:SharedArchiveFile``, ``-XX:ArchiveClassesAtExit``, ``-Xshare``), nothing is added.
    """
    if re.search(r"-XX:(SharedArchiveFile|ArchiveClassesAtExit)=|-Xshare:", java_options):
        return ""
    archive = class_archive()
    return f"-XX:SharedArchiveFile={archive} {QUIET_CLASS_SHARING} " if archive else ""


def class_archive() -> Path | None:
    """Return the class-data sharing archive the driver JVM starts from, or None.

    A Java 17 dynamic AppCDS archive of the Spark, Hive and Derby classes a run loads, which
    the JVM maps instead of loading each class from the jars again: about 4 to 6 s less of
    every ``cdc`` command on this machine. ``CDC_SPARK_CLASS_ARCHIVE`` names another file, or
    ``off`` turns it off (:func:`class_archive_path`); ``make install`` writes it
    (:func:`build_class_archive`). None when the file does not exist. A JVM that cannot
    map it (another Java, another pyspark) loads its classes from the jars, as without it
    (ADR 0016).
    """
    archive = class_archive_path()
    return archive if archive is not None and archive.is_file() else None


def class_archive_path() -> Path | None:
    """Return where the class archive is read and written (None: ``off``).

    ``CDC_SPARK_CLASS_ARCHIVE`` when set, else ``<sys.prefix>/share/cdc_changelog/
    spark-driver.jsa``: beside this environment's packages (the venv).
    """
    setting = os.environ.get("CDC_SPARK_CLASS_ARCHIVE", "")
    if setting == "off":
        return None
    if setting:
        return Path(setting)
    return Path(sys.prefix) / "share" / "cdc_changelog" / "spark-driver.jsa"


#: What the JVM that writes the class archive runs before it exits: the kinds of statement a
#: ``cdc run`` sends (a Hive database, partitioned parquet tables created, written with dynamic
#: partition overwrite and repaired, a Delta table with its change feed merged into, read at a
#: version and described, windows over structs and maps, higher-order functions, a
#: broadcast semi-join, an anti-join, views, the catalog listings dbt sends, an Arrow batch
#: through a Python worker). Each class loaded here is one later JVMs map from the archive.
_ARCHIVE_WORKLOAD = (
    "create database if not exists warm",
    "create table warm.a (k string, v map<string, string>, n bigint,"
    " s struct<f: string, o: bigint>, p string) using parquet partitioned by (p)",
    "insert into warm.a select cast(id % 100 as string), map('a', cast(id as string)), id,"
    " named_struct('f', 'x', 'o', id), cast(id % 3 as string) from range(20000)",
    "msck repair table warm.a",
    "refresh table warm.a",
    "show partitions warm.a",
    "create table warm.b using parquet partitioned by (p) as select k, p,"
    " last(named_struct('v', v), true) over w as lv, row_number() over w as rn,"
    " count(*) over (partition by k) as c, size(collect_set(n) over (partition by k)) as cs,"
    " to_json(array_sort(map_entries(v))) as j, transform(map_keys(v), x -> upper(x)) as t,"
    " array_compact(array(named_struct('a', k), null)) as ac,"
    " map_filter(v, (x, y) -> x != 'b') as mf, min(s) over (partition by k) as ms,"
    " first(case when n % 2 = 0 then named_struct('d', v) end, true) over (partition by k"
    " order by n rows between unbounded preceding and unbounded following) as fb,"
    " xxhash64(k) as h, sha2(k, 256) as sh, to_timestamp('2024-01-01 00:00:00') as ts,"
    " regexp_extract(k, '[0-9]+', 0) as rx, conv(substr('0f', 1, 1), 16, 10) as cv,"
    " from_json('{\"a\": \"b\"}', 'map<string, string>') as fj"
    " from warm.a window w as (partition by k order by n)",
    "insert overwrite table warm.b partition (p) select k, lv, rn, c, cs, j, t, ac, mf, ms, fb,"
    " h, sh, ts, rx, cv, fj, p from warm.b where rn > 1",
    "select /*+ BROADCAST(b) */ a.k, count(*), max_by(a.n, a.n), collect_list(a.v)"
    " from warm.a as a left semi join warm.b as b on a.k = b.k group by a.k",
    "select a.k from warm.a as a left anti join warm.b as b on a.k = b.k and a.p = b.p"
    " union all select k from warm.b except select k from warm.a",
    "select * from warm.a where (k, p) in (select k, p from warm.b)",
    "create or replace view warm.v as select * from warm.b",
    "select count(*) from warm.v",
    "show tables in warm",
    "describe table extended warm.b",
    "show table extended in warm like '*'",
    "create table warm.d (k string, v bigint) using delta"
    " tblproperties (delta.enableChangeDataFeed = true)",
    "insert into warm.d select k, max(n) from warm.a group by k",
    "merge into warm.d as t using (select k, n from warm.a where n < 50) as s on t.k = s.k"
    " when matched and s.n < 10 then delete when matched then update set v = s.n"
    " when not matched then insert (k, v) values (s.k, s.n)",
    "select count(*) from warm.d version as of 0",
    "select count(*) from table_changes('warm.d', 1)",
    "describe detail warm.d",
    "drop table warm.d",
    "drop view warm.v",
    "drop table warm.b",
    "drop table warm.a",
)


def _run_archive_workload(lake_root: Path) -> None:
    """Run :data:`_ARCHIVE_WORKLOAD` on a scratch lake, then end the JVM and wait for it.

    The JVM writes the archive as it exits (``-XX:ArchiveClassesAtExit``): closing its standard
    input ends pyspark's gateway JVM, and waiting for it means the archive is whole when this
    returns.
    """
    spark = get_spark(lake_root)
    for statement in _ARCHIVE_WORKLOAD:
        spark.sql(statement).collect()
    spark.range(1000).mapInArrow(lambda batches: batches, "id long").collect()
    gateway = spark.sparkContext._gateway
    spark.stop()
    gateway.shutdown()
    gateway.proc.stdin.close()
    gateway.proc.wait(timeout=600)


def build_class_archive(archive: Path) -> Path | None:
    """Write the class-data sharing archive of this environment's driver JVM; return its path.

    ``archive`` is where (:func:`class_archive_path`). A child process runs
    :data:`_ARCHIVE_WORKLOAD` on a scratch lake with ``-XX:ArchiveClassesAtExit`` (about 35 s
    on this machine, 200 MB); the archive then replaces the old one by a rename, so a run
    never maps a half-written file. Returns None, leaving any old archive, when the JVM wrote
    none (another Java than 17, a folder that cannot be written): runs then load their classes
    from the jars, as without one.
    """
    import subprocess
    import tempfile

    try:
        archive.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    partial = archive.with_name(f".{archive.name}.{os.getpid()}.partial")
    env = {
        **os.environ,
        "CDC_SPARK_JAVA_OPTIONS": f"-XX:ArchiveClassesAtExit={partial} {QUIET_CLASS_SHARING}",
        "CDC_SPARK_CLASS_ARCHIVE": "off",
    }
    with tempfile.TemporaryDirectory(prefix="cdc_class_archive_") as scratch:
        try:
            finished = subprocess.run(
                [sys.executable, "-m", "python_udfs.spark", "--workload", f"{scratch}/lake"],
                env=env,
                capture_output=True,
                timeout=900,
                check=False,
            )
        except subprocess.TimeoutExpired:
            finished = None
    if finished is None or finished.returncode != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        return None
    os.replace(partial, archive)
    return archive


#: Settings of the embedded engine that concern the Python workers of this process only; a Spark
#: Thrift Server (``cdc thrift-server``) takes every other setting of :func:`spark_conf`.
PYTHON_ONLY = ("spark.pyspark.python", "spark.pyspark.driver.python", "spark.python.worker.reuse")


def thrift_server_command(lake_root: Path, port: int, host: str = "127.0.0.1") -> list[str]:
    """Return the command that starts a Spark Thrift Server for ``lake_root`` from this pyspark.

    The server binds ``host``:``port`` (loopback by default) and uses the embedded engine's
    settings (:func:`spark_conf`: same warehouse, Derby metastore, UTC, ANSI off), so dbt's
    ``thrift`` target builds the same tables as the embedded run. Embedded Derby admits one
    JVM: stop the server before ``cdc run``. Raises FileNotFoundError when pyspark has no
    ``bin/spark-submit``.
    """
    import pyspark

    spark_home = Path(pyspark.__file__).parent
    submit = spark_home / "bin" / "spark-submit"
    if not submit.is_file():
        raise FileNotFoundError(f"{submit} not found: reinstall pyspark (make install)")
    conf = {k: v for k, v in spark_conf(lake_root).items() if k not in PYTHON_ONLY}
    conf["spark.app.name"] = "cdc_changelog_thrift"
    conf["spark.hadoop.hive.server2.thrift.port"] = str(port)
    conf["spark.hadoop.hive.server2.thrift.bind.host"] = host
    command = [str(submit), "--class", "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"]
    command += [
        "--master",
        conf.pop("spark.master"),
        "--driver-memory",
        conf.pop("spark.driver.memory"),
    ]
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    return command + ["spark-internal"]


#: Open lock files of the lakes this process holds (kept open until the process exits), with
#: the loopback port of the lake's metastore server: ``lake -> (handle, port)``.
_LAKE_LOCKS: dict[Path, tuple[Any, int]] = {}

#: How a lock line names the holder's metastore server (:func:`lock_lake`).
_METASTORE_SUFFIX = re.compile(r"; metastore on 127\.0\.0\.1:(\d+)$")


class LakeInUse(ConfigError):
    """The lake's lock is held by another process (a ConfigError: the CLI exits 2).

    ``metastore_port`` is the loopback port where that process serves the lake's Derby
    metastore (:func:`reader_session`), or None when its lock line names none.
    """

    def __init__(self, message: str, metastore_port: int | None) -> None:
        super().__init__(message)
        self.metastore_port = metastore_port


def _free_port() -> int:
    """Return a loopback TCP port nothing listens on now (the kernel's choice)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def lock_lake(lake_root: Path, inheritable: bool = False) -> None:
    """Hold ``<lake_root>/.cdc.lock`` (an exclusive ``flock``) until this process exits.

    Two runs writing the same tables would race: a second writing ``cdc`` process on the same
    lake stops at once with one message instead of failing midway. The holder serves the
    lake's Derby metastore on a free loopback port, which its lock line names (``; metastore
    on 127.0.0.1:<port>``), so that readers need no lock (:func:`reader_session`, ``cdc
    sql``). The operating system releases the lock when the process ends, killed or not.
    ``inheritable`` keeps it across ``exec`` (the Thrift Server). Raises :class:`LakeInUse`
    (a ConfigError) naming the lake and the process that holds it.
    """
    import fcntl

    lake = lake_root.resolve()
    if lake in _LAKE_LOCKS:
        return
    lake.mkdir(parents=True, exist_ok=True)
    # read-write without append, so the holder's line is written at the start of the file
    descriptor = os.open(lake / ".cdc.lock", os.O_RDWR | os.O_CREAT, 0o644)
    handle = open(descriptor, "r+", encoding="utf-8")  # noqa: SIM115 - held until exit
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as exc:
        holder = _lock_holder(handle)
        handle.close()
        port = _METASTORE_SUFFIX.search(holder)
        raise LakeInUse(
            f"{lake}: the lake is in use by {_METASTORE_SUFFIX.sub('', holder)}. Wait for it "
            "to finish (or stop the Thrift Server on this lake), then run again.",
            int(port.group(1)) if port else None,
        ) from exc
    port = _free_port()
    # one write, then cut what an earlier holder's longer line left after it: a process that
    # reads while this one holds the lock sees a whole first line, never an empty file
    handle.seek(0)
    handle.write(
        f"cdc process {os.getpid()} ({' '.join(sys.argv[:3])}); metastore on 127.0.0.1:{port}\n"
    )
    handle.flush()
    handle.truncate()
    if inheritable:
        os.set_inheritable(handle.fileno(), True)
    _LAKE_LOCKS[lake] = (handle, port)


def _lock_holder(handle, wait_seconds: float = 2.0) -> str:
    """Return the first line of a held lock file: who holds the lake.

    The holder writes it right after taking the lock, so an empty file is read again for up to
    ``wait_seconds``; "another process" when it stays empty.
    """
    import time

    deadline = time.monotonic() + wait_seconds
    while True:
        handle.seek(0)
        first = handle.readline().strip()
        if first or time.monotonic() > deadline:
            return first or "another process"
        time.sleep(0.05)


def java_executable() -> Path:
    """Return the ``java`` that pyspark will start: ``$JAVA_HOME/bin/java``, else ``java`` on PATH.

    Raises ConfigError with the fix when there is none: without it pyspark fails with a long
    ``JAVA_GATEWAY_EXITED`` traceback (issue 16). The stack is checked with Java 17.
    """
    home = os.environ.get("JAVA_HOME")
    if home:
        java = Path(home) / "bin" / "java"
        if os.access(java, os.X_OK):
            return java
        raise ConfigError(
            f"JAVA_HOME={home}: {java} is not an executable. Point JAVA_HOME at a Java 17 "
            "installation, or unset it to use the java on PATH."
        )
    found = shutil.which("java")
    if found is None:
        raise ConfigError(
            "Java not found (JAVA_HOME is unset and there is no java on PATH): Spark needs "
            "Java 17. Install it (Debian/Ubuntu: apt install openjdk-17-jre-headless) or set "
            "JAVA_HOME."
        )
    return Path(found)


def get_spark(lake_root: Path) -> SparkSession:
    """Create (or return the running) SparkSession with Hive support for ``lake_root``.

    Checks for Java first (:func:`java_executable`), then takes the lake's lock
    (:func:`lock_lake`); both raise ConfigError with one message naming the fix.
    """
    if SparkSession.getActiveSession() is None:
        java_executable()
    lock_lake(lake_root)
    lake_root.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.enableHiveSupport()
    for key, value in spark_conf(lake_root).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("CDC_SPARK_LOG_LEVEL", "ERROR"))
    return spark


def held_metastore_port(lake_root: Path) -> int | None:
    """Return the port of the metastore server of the process that holds the lake, or None.

    Read from the lock line (:func:`lock_lake`) without taking the lock, and checked by a
    connection to the port: a line left by a process that has ended, or one whose JVM has not
    started yet, names a port nothing answers on, which gives None.
    """
    import socket

    try:
        line = (lake_root.resolve() / ".cdc.lock").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    found = _METASTORE_SUFFIX.search(line)
    if not found:
        return None
    port = int(found.group(1))
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return None
    return port


def reader_session(lake_root: Path, metastore_port: int) -> SparkSession:
    """Create a SparkSession that reads the lake while another process holds it (a run).

    The lake's metastore is opened through the holder's Derby network server on loopback port
    ``metastore_port`` (:func:`lock_lake` names it) instead of embedded, so this JVM takes no
    lock and waits for nothing; Delta gives every query the last committed version of each
    table it reads (ADR 0038). The other settings are the embedded engine's
    (:func:`spark_conf`). Meant for reading: a table written from here while a run writes it
    may make one of the two commits fail. Raises ConfigError when there is no Java.
    """
    if SparkSession.getActiveSession() is None:
        java_executable()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    conf = spark_conf(lake_root)
    conf["spark.hadoop.javax.jdo.option.ConnectionURL"] = (
        f"jdbc:derby://127.0.0.1:{metastore_port}/{lake_root.resolve() / 'metastore_db'}"
    )
    conf["spark.hadoop.javax.jdo.option.ConnectionDriverName"] = (
        "org.apache.derby.jdbc.ClientDriver"
    )
    conf["spark.app.name"] = "cdc_changelog_reader"
    builder = SparkSession.builder.enableHiveSupport()
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("CDC_SPARK_LOG_LEVEL", "ERROR"))
    return spark


def _start_metastore(spark: SparkSession) -> None:
    """Open the Hive metastore client (Derby) of ``spark`` by listing its databases."""
    with contextlib.suppress(Exception):  # dbt's first query meets the same error and names it
        spark.sql("show databases").collect()


def start_spark_in_background(lake_root: Path) -> concurrent.futures.Future:
    """Start the SparkSession of ``lake_root`` in a daemon thread; return its future.

    ``cdc run`` stages while the JVM starts: staging needs no JVM (ADR 0031), so the JVM's
    start (a few seconds) overlaps the decoding. The thread then opens the Hive metastore
    (:func:`_start_metastore`), which Spark would open at the first catalog query (several
    seconds): dbt's first query finds it open, or waits for it, since Spark opens its catalog
    once, in lazily initialised fields whose first reader holds the others back; an error
    opening it is left to that query, which raises it. Java is looked for first, here, so a
    missing Java fails the run before it stages (ConfigError).
    ``future.result()`` returns the session, or raises what :func:`get_spark` raised. PySpark
    installs its SIGINT handler from the main thread only, so Ctrl-C still stops the run.
    """
    if SparkSession.getActiveSession() is None:
        java_executable()
    future: concurrent.futures.Future = concurrent.futures.Future()

    def start() -> None:
        try:
            spark = get_spark(lake_root)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's result()
            future.set_exception(exc)
            return
        future.set_result(spark)
        _start_metastore(spark)

    threading.Thread(target=start, name="cdc-spark", daemon=True).start()
    return future


if __name__ == "__main__":  # python -m python_udfs.spark: write the class archive (make install)
    if sys.argv[1:2] == ["--workload"]:
        _run_archive_workload(Path(sys.argv[2]))
    elif sys.argv[1:2] == ["--fetch-jars"]:
        for jar in fetch_delta_jars():
            print(f"jar {jar}")
    else:
        import time

        started = time.monotonic()
        target = class_archive_path()
        written = None if target is None else build_class_archive(target)
        if written is None:
            print(f"no class archive written ({target}): Spark loads its classes from the jars")
        else:
            print(
                f"class archive {written} ({written.stat().st_size / 2**20:.0f} MiB) written in "
                f"{time.monotonic() - started:.0f} s"
            )
