import os
import sys

import pytest

from python_udfs.cli import main
from tests.spark_project import HOSTILE_NAMES, make_project, set_feeds, write_seeds


@pytest.fixture
def project(tmp_path):
    return make_project(tmp_path)


def _run(project, monkeypatch, tmp_path, capsys, *args):
    monkeypatch.setenv("CDC_LANDING_ROOT", str(tmp_path / "landing"))
    monkeypatch.setenv("CDC_LAKE_ROOT", str(tmp_path / "lake"))
    code = main(["--project-dir", str(project), *args])
    return code, capsys.readouterr().err


def test_unknown_format_names_the_file_and_the_fix(project, monkeypatch, tmp_path, capsys):
    set_feeds(project, "  cdc_feeds:\n    f1: {format: qlik_csv, path: f1}\n")
    code, err = _run(project, monkeypatch, tmp_path, capsys, "stage")
    assert code == 2
    assert "dbt_project.yml: vars.cdc_feeds.f1: unknown format 'qlik_csv'" in err
    assert "qlik_change_tables, qlik_kafka" in err
    assert err.count("\n") == 1  # one message, no traceback


def test_missing_landing_folder(project, monkeypatch, tmp_path, capsys):
    code, err = _run(project, monkeypatch, tmp_path, capsys, "stage")
    assert (
        code == 2 and "landing folder" in err and "qlik_ct_demo" in err and "does not exist" in err
    )


def test_table_without_columns_names_the_seed(project, monkeypatch, tmp_path, capsys):
    write_seeds(
        project,
        [],
        [{"feed": "f", "source_schema": "S", "source_table": "T", "table_identifier": ""}],
    )
    for feed in (
        "qlik_ct_demo",
        "qlik_kafka_demo",
        "goldengate_demo/dirdef",
        "hirdb_demo",
        "linkexpress_demo",
    ):
        (tmp_path / "landing" / feed).mkdir(parents=True)
    (tmp_path / "landing" / "goldengate_demo" / "dirdef" / "sim.def").write_text(
        "", encoding="utf-8"
    )
    code, err = _run(project, monkeypatch, tmp_path, capsys, "stage")
    assert (
        code == 2
        and "cdc_tables.csv:2: table S.T of feed f has no columns" in err
        and "cdc_columns.csv" in err
    )


def test_missing_sourcedefs_file_names_the_option(project, monkeypatch, tmp_path, capsys):
    for feed in ("qlik_ct_demo", "qlik_kafka_demo", "goldengate_demo"):
        (tmp_path / "landing" / feed).mkdir(parents=True)
    code, err = _run(project, monkeypatch, tmp_path, capsys, "stage")
    assert (
        code == 2
        and "vars.cdc_demo_feeds.goldengate_demo.options.definitions" in err
        and "sim.def" in err
    )


def test_seed_with_wrong_header(project, monkeypatch, tmp_path, capsys):
    (project / "seeds" / "cdc_tables.csv").write_text("feed,schema,table\n", encoding="utf-8")
    code, err = _run(project, monkeypatch, tmp_path, capsys, "scaffold")
    assert (
        code == 2
        and "cdc_tables.csv: header is" in err
        and "feed,source_schema,source_table,table_identifier" in err
    )


@pytest.mark.parametrize(
    ("feed", "expected"),
    [
        (
            "f1: {format: linkexpress_extract, path: f1, options: {unit: grp}}",
            "vars.cdc_feeds.f1.options.unit: 'grp' is not one of auto, table, group",
        ),
        (
            "f1: {format: hirdb_update_sql, path: f1, options: {source_time_zone: Mars/Olympus}}",
            "vars.cdc_feeds.f1.options.source_time_zone: unknown time zone 'Mars/Olympus'",
        ),
        (
            "f1: {format: hirdb_update_sql, path: f1, options: {encoding: klingon}}",
            "vars.cdc_feeds.f1.options.encoding: unknown codec 'klingon'",
        ),
        (  # issue 13: a value the format page does not have
            "f1: {format: goldengate_trail, path: f1, options: {byte_order: middle}}",
            "vars.cdc_feeds.f1.options.byte_order: 'middle' is not one of auto, big, little",
        ),
        (  # a misspelled key is not ignored
            "f1: {format: goldengate_trail, path: f1, options: {byte_ordre: big}}",
            "vars.cdc_feeds.f1.options.byte_ordre: goldengate_trail has no option 'byte_ordre'."
            " Did you mean byte_order?",
        ),
        (
            "f1: {format: qlik_change_tables, path: f1, options: {mask_bit_order: msb_first}}",
            "vars.cdc_feeds.f1.options.mask_bit_order: 'msb_first' is not one of lsb_last_hex,"
            " lsb_first_byte",
        ),
        (  # an option of another format
            "f1: {format: qlik_kafka, path: f1, options: {definitions: x.def}}",
            "vars.cdc_feeds.f1.options.definitions: qlik_kafka has no option 'definitions'.",
        ),
        (
            "f1: {format: goldengate_trail, path: f1, options: {char_encoding: klingon}}",
            "vars.cdc_feeds.f1.options.char_encoding: unknown codec 'klingon'",
        ),
    ],
)
def test_bad_decoder_options_fail_fast(project, monkeypatch, tmp_path, capsys, feed, expected):
    set_feeds(project, f"  cdc_feeds:\n    {feed}\n")
    (tmp_path / "landing" / "f1").mkdir(parents=True)
    code, err = _run(project, monkeypatch, tmp_path, capsys, "stage")
    assert code == 2 and expected in err and err.count("\n") == 1


def test_a_second_process_on_the_same_lake_stops_at_once(project, monkeypatch, tmp_path, capsys):
    """issue 14: two `cdc run` on one lake once died after 44 s in Derby errors; the second now
    stops before starting Spark, naming the lake and the process that holds it."""
    import subprocess
    import sys

    lake = tmp_path / "lake"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from python_udfs.spark import lock_lake;"
            f" lock_lake(Path({str(lake)!r})); print('locked', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        for feed in ("qlik_ct_demo", "qlik_kafka_demo", "goldengate_demo", "hirdb_demo"):
            (tmp_path / "landing" / feed).mkdir(parents=True)
        (tmp_path / "landing" / "linkexpress_demo").mkdir(parents=True)
        (tmp_path / "landing" / "goldengate_demo" / "dirdef").mkdir()
        (tmp_path / "landing" / "goldengate_demo" / "dirdef" / "sim.def").write_text("")
        code, err = _run(project, monkeypatch, tmp_path, capsys, "stage")
    finally:
        holder.kill()
        holder.wait()
    assert code == 2 and err.count("\n") == 1
    assert f"{lake.resolve()}: the lake is in use by cdc process {holder.pid}" in err


def test_a_process_that_finds_the_lock_taken_before_its_holder_is_written_names_the_holder(
    tmp_path,
):
    """Two `cdc run` started at once: the loser once read the lock file in the instant between
    the winner's flock and its line, and said "in use by another process" (a crash-test run
    caught it). The loser reads again until the holder's line is there; a longer line left by
    an earlier holder does not survive."""
    import fcntl
    import threading

    from python_udfs.config import ConfigError
    from python_udfs.spark import lock_lake

    lake = tmp_path / "lake"
    lake.mkdir()
    lock_file = lake / ".cdc.lock"
    lock_file.write_text("cdc process 1 (an earlier holder with a much longer line)\n")
    with lock_file.open("r+", encoding="utf-8") as winner:
        fcntl.flock(winner, fcntl.LOCK_EX | fcntl.LOCK_NB)
        winner.truncate()  # the moment before the winner writes its line

        def write_holder():
            winner.write("cdc process 42 (cdc run)\n")
            winner.flush()

        later = threading.Timer(0.3, write_holder)
        later.start()
        with pytest.raises(ConfigError, match=r"in use by cdc process 42 \(cdc run\)\."):
            lock_lake(lake)
        later.join()
    lock_file.write_text("cdc process 7 (" + "x" * 300 + ")\n")
    lock_lake(lake)  # released: this process takes it and writes its own line
    from python_udfs.spark import held_metastore_port

    (line,) = lock_file.read_text(encoding="utf-8").splitlines()
    holder, port = line.rsplit("; metastore on 127.0.0.1:", 1)
    assert holder == f"cdc process {os.getpid()} ({' '.join(sys.argv[:3])})" and port.isdigit()
    assert held_metastore_port(lake) is None  # no JVM of this process serves the metastore


#: Names nothing can carry (empty, NUL, over config.MAX_NAME_LENGTH characters).
REFUSED_NAMES = ["", "a\x00b", "x" * 513]


def test_scaffold_keeps_names_from_the_data_and_skips_only_what_cannot_be_a_table():
    """issue 14: names from the data (a Kafka MD message, a Qlik folder, a sourcedefs file)
    with quotes, backticks, `;`, a newline, Jinja braces or 300 characters are scaffolded as
    they are (the end-to-end test runs them); a table with an empty, NUL or overlong name, or
    columns a typed view cannot hold, is skipped with one line before anything is appended."""
    from python_udfs.scaffold import scaffold_rows, typed_model_name

    def column(table, name, ordinal, schema="S"):
        return {
            "feed": "k",
            "source_schema": schema,
            "source_table": table,
            "column_name": name,
            "ordinal": ordinal,
            "source_type": "STRING",
            "length": None,
            "precision": None,
            "scale": None,
            "primary_key_position": 1 if ordinal == 1 else 0,
            "nullable": True,
            "table_version": 1,
            "ingest_batch_id": "b1",
        }

    rows = [column("GOOD", "ID", 1), column("顧客", "番号", 1), column("GOOD", "EMP#", 2)]
    for i, name in enumerate(HOSTILE_NAMES):
        rows += [column(f"T{i}", "ID", 1), column(f"T{i}", name, 2)]
    for i, name in enumerate(REFUSED_NAMES):
        rows += [column(f"R{i}", "ID", 1), column(f"R{i}", name, 2)]  # a refused column
        rows += [column(name, "ID", 1)]  # a refused table
    rows += [column("CASE", "ID", 1), column("CASE", "Name", 2), column("CASE", "NAME", 3)]
    rows += [column("SOFT", "ID", 1), column("SOFT", "IS_DELETED", 2)]
    columns, tables, skipped = scaffold_rows(rows, known=set())
    assert {t["source_table"] for t in tables} == {"GOOD", "顧客"} | {
        f"T{i}" for i in range(len(HOSTILE_NAMES))
    }
    assert {c["column_name"] for c in columns} == {"ID", "EMP#", "番号", *HOSTILE_NAMES}
    assert len(skipped) == 2 * len(REFUSED_NAMES) + 2 and all("\n" not in s for s in skipped)
    assert sum("equal in lower case" in s for s in skipped) == 1
    assert sum("typed view column" in s for s in skipped) == 1
    assert typed_model_name("k", "S", "CUSTOMERS") == "k__s__customers"
    # anything but ASCII letters, digits and _ (or a long name) gets a digest: no two collide
    assert typed_model_name("k", "S.X", "A-B C").startswith("k__s_x__a_b_c_")
    assert typed_model_name("k", "S", "A-B") != typed_model_name("k", "S", "A_B")
    assert typed_model_name("k", "S", "顧客").startswith("k__s____")


def test_scaffold_adds_the_columns_a_known_table_gained_at_the_source():
    """issue 46 item 3: a table of the project's seeds whose latest metadata (table version 2)
    has a column the seeds lack gets it appended after its last ordinal, as a non-key column;
    columns of older versions and of the seeds are left alone, and a table of other seeds (the
    demo's: known, but not the project's own) gets nothing."""
    from python_udfs.scaffold import scaffold_rows

    def column(table, name, ordinal, version, key=0):
        return {
            "feed": "k",
            "source_schema": "S",
            "source_table": table,
            "column_name": name,
            "ordinal": ordinal,
            "source_type": "STRING",
            "length": 10,
            "precision": None,
            "scale": None,
            "primary_key_position": key,
            "nullable": True,
            "table_version": version,
            "ingest_batch_id": "b1",
        }

    rows = [column("T", "ID", 1, 1, key=1), column("T", "OLD", 2, 1)]
    rows += [column("T", "ID", 1, 2, key=1), column("T", "TIER", 3, 2), column("T", "NOTE", 4, 2)]
    rows += [column("DEMO", "ID", 1, 2, key=1), column("DEMO", "NEW", 2, 2)]
    known = {("k", "S", "T"), ("k", "S", "DEMO")}
    own = {("k", "S", "T"): {"ID": 1, "OLD": 2}}
    columns, tables, skipped = scaffold_rows(rows, known, own_columns=own)
    assert tables == [] and skipped == []
    assert [(c["source_table"], c["column_name"], c["ordinal"]) for c in columns] == [
        ("T", "TIER", 3),
        ("T", "NOTE", 4),
    ]
    assert {c["primary_key_position"] for c in columns} == {0}
    assert scaffold_rows(rows, known)[0] == []  # without the own seeds' columns: nothing


@pytest.mark.parametrize("name", REFUSED_NAMES[1:])
def test_a_seed_row_with_a_name_nothing_can_carry_names_its_line(
    project, monkeypatch, tmp_path, capsys, name
):
    write_seeds(
        project,
        [
            {
                "feed": "f",
                "source_schema": "S",
                "source_table": name,
                "column_name": "ID",
                "ordinal": 1,
                "source_type": "STRING",
                "length": "",
                "precision": "",
                "scale": "",
                "primary_key_position": 1,
                "nullable": "false",
                "spark_type": "string",
            }
        ],
        [],
    )
    code, err = _run(project, monkeypatch, tmp_path, capsys, "sql", "select 1")
    assert code == 2 and err.count("\n") == 1
    assert "cdc_columns.csv:2: source_table" in err and "Remove the row" in err


def test_without_java_the_cli_says_so_in_one_line(project, monkeypatch, tmp_path, capsys):
    """issue 16: without Java, `cdc sql` ended in a 28-line JAVA_GATEWAY_EXITED traceback; now one
    line names the fix, before any JVM starts and before the lake is locked."""
    from python_udfs import spark

    # as in a fresh `cdc` process, whatever session an earlier test started in this one
    monkeypatch.setattr(spark.SparkSession, "getActiveSession", staticmethod(lambda: None))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "no-java-here"))
    code, err = _run(project, monkeypatch, tmp_path, capsys, "sql", "select 1")
    assert code == 2 and err.count("\n") == 1
    assert "Java not found" in err and "JAVA_HOME" in err and "openjdk-17" in err
    assert not (tmp_path / "lake" / ".cdc.lock").exists()
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    code, err = _run(project, monkeypatch, tmp_path, capsys, "sql", "select 1")
    assert code == 2 and f"JAVA_HOME={tmp_path / 'jdk'}: " in err and err.count("\n") == 1


def test_sql_rows_for_a_pipe_are_tab_separated_one_line_each():
    """issue 16: `cdc sql` piped or redirected printed a wrapped rich table; it now prints a header
    line and one tab-separated line per row, NULL as NULL, maps as JSON, tabs and newlines escaped."""
    from python_udfs.sql_console import tab_separated

    text = tab_separated(
        ["feed", "row", "note"],
        [("f1", {"ID": "1", "NAME": None}, "two\nlines\tand a \\"), ("f2", None, "")],
    )
    assert text.splitlines() == [
        "feed\trow\tnote",
        'f1\t{"ID": "1", "NAME": null}\ttwo\\nlines\\tand a \\\\',
        "f2\tNULL\t",
    ]


def test_the_demo_switched_off_leaves_only_the_projects_own_feeds_and_tables(
    project, monkeypatch, tmp_path, capsys
):
    """issue 16: `cdc_demo: false` switches off the demo's feeds and catalog (and `cdc demo`
    says so); a project of one's own starts with no feed, no table, and one line saying what
    to declare."""
    from python_udfs.config import load_project

    assert load_project(project, check_paths=False).demo_feeds == {
        "qlik_ct_demo",
        "qlik_kafka_demo",
        "goldengate_demo",
        "hirdb_demo",
        "linkexpress_demo",
    }
    set_feeds(project, "  cdc_feeds: {}\n")
    code, err = _run(project, monkeypatch, tmp_path, capsys, "stage")
    assert code == 2 and err.count("\n") == 1
    assert "vars.cdc_feeds is empty and the demo is off (cdc_demo: false)" in err
    set_feeds(project, "  cdc_feeds:\n    mine: {format: qlik_change_tables, path: mine}\n")
    code, err = _run(project, monkeypatch, tmp_path, capsys, "demo")
    assert code == 2 and "the demo is switched off (vars.cdc_demo: false)" in err
    config = load_project(project, check_paths=False)
    assert (list(config.feeds), config.catalog, config.demo_feeds) == (["mine"], {}, frozenset())
    # with the demo on again, a feed of one's own may not take a demo feed's name
    path = project / "dbt_project.yml"
    path.write_text(
        path.read_text(encoding="utf-8")
        .replace("cdc_demo: false", "cdc_demo: true")
        .replace("    mine: {", "    hirdb_demo: {"),
        encoding="utf-8",
    )
    code, err = _run(project, monkeypatch, tmp_path, capsys, "stage")
    assert code == 2 and "feed hirdb_demo is in vars.cdc_feeds and in vars.cdc_demo_feeds" in err


def test_extra_spark_settings_are_parsed_and_a_bad_one_names_itself(
    project, monkeypatch, tmp_path, capsys
):
    """CDC_SPARK_CONF adds Spark settings (key=value pairs) after the engine's own; a pair
    without '=' or a key outside spark.* stops the CLI with one line naming the pair."""
    from python_udfs.spark import spark_conf

    monkeypatch.setenv("CDC_SPARK_CONF", " spark.sql.adaptive.enabled=false  spark.x.y=a=b ")
    conf = spark_conf(tmp_path / "lake")
    assert conf["spark.sql.adaptive.enabled"] == "false" and conf["spark.x.y"] == "a=b"
    assert conf["spark.sql.session.timeZone"] == "UTC"
    monkeypatch.setenv("CDC_SPARK_CONF", "spark.sql.session.timeZone=Asia/Tokyo")
    assert spark_conf(tmp_path / "lake")["spark.sql.session.timeZone"] == "Asia/Tokyo"
    monkeypatch.setenv("CDC_SPARK_CONF", "spark.ui.enabled=false shuffle.partitions=2")
    code, err = _run(project, monkeypatch, tmp_path, capsys, "sql", "select 1")
    assert code == 2 and err.count("\n") == 1
    assert "CDC_SPARK_CONF: 'shuffle.partitions=2' is not a Spark setting" in err


def test_the_driver_collects_garbage_in_parallel_unless_the_java_options_choose(
    monkeypatch, tmp_path
):
    """The embedded engine's JVM uses the parallel collector; CDC_SPARK_JAVA_OPTIONS that
    choose a collector replace it (two choices would stop the JVM), other options add to it."""
    from python_udfs.spark import spark_conf

    def options() -> list[str]:
        return spark_conf(tmp_path / "lake")["spark.driver.extraJavaOptions"].split()

    monkeypatch.delenv("CDC_SPARK_JAVA_OPTIONS", raising=False)
    assert "-XX:+UseParallelGC" in options()
    monkeypatch.setenv("CDC_SPARK_JAVA_OPTIONS", "-XX:SharedArchiveFile=spark.jsa")
    assert {"-XX:+UseParallelGC", "-XX:SharedArchiveFile=spark.jsa"} <= set(options())
    monkeypatch.setenv("CDC_SPARK_JAVA_OPTIONS", "-Xss4m -XX:+UseG1GC")
    assert [o for o in options() if o.endswith("GC")] == ["-XX:+UseG1GC"]


def test_the_driver_starts_from_the_class_archive_when_there_is_one(monkeypatch, tmp_path):
    """The driver JVM maps the class archive (python_udfs/spark.py class_archive) when its file
    exists: CDC_SPARK_CLASS_ARCHIVE names it, `off` turns it off, and Java options that set
    class sharing themselves replace it. No file, no option (the JVM loads from the jars)."""
    from python_udfs.spark import spark_conf

    def sharing() -> list[str]:
        options = spark_conf(tmp_path / "lake")["spark.driver.extraJavaOptions"].split()
        return [o for o in options if "Archive" in o or o.startswith(("-Xshare", "-Xlog:cds"))]

    archive = tmp_path / "spark.jsa"
    monkeypatch.delenv("CDC_SPARK_JAVA_OPTIONS", raising=False)
    monkeypatch.setenv("CDC_SPARK_CLASS_ARCHIVE", str(archive))
    assert sharing() == []
    archive.write_bytes(b"an archive")
    assert sharing() == [f"-XX:SharedArchiveFile={archive}", "-Xlog:cds*=off"]
    monkeypatch.setenv("CDC_SPARK_JAVA_OPTIONS", "-Xss4m")
    assert sharing() == [f"-XX:SharedArchiveFile={archive}", "-Xlog:cds*=off"]
    monkeypatch.setenv("CDC_SPARK_JAVA_OPTIONS", "-XX:ArchiveClassesAtExit=new.jsa")
    assert sharing() == ["-XX:ArchiveClassesAtExit=new.jsa"]
    monkeypatch.setenv("CDC_SPARK_JAVA_OPTIONS", "-Xshare:off")
    assert sharing() == ["-Xshare:off"]
    monkeypatch.delenv("CDC_SPARK_JAVA_OPTIONS")
    monkeypatch.setenv("CDC_SPARK_CLASS_ARCHIVE", "off")
    assert sharing() == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--runs", "2"], "--runs N needs --every SECONDS"),
        (["--every", "5", "--runs", "0"], "--runs N needs --every SECONDS and N of 1 or more"),
        (["--every", "-1"], "--every: give the seconds to wait between runs, 0 or more"),
    ],
)
def test_run_every_arguments_fail_fast_with_usage(project, capsys, args, message):
    """`cdc run --every/--runs` mistakes stop before any Spark starts: argparse's usage line
    and one message, exit status 2."""
    with pytest.raises(SystemExit) as stopped:
        main(["--project-dir", str(project), "run", *args])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and message in err and "Traceback" not in err


def test_the_driver_heap_is_bounded_alike_in_the_cli_and_the_profile(monkeypatch, tmp_path):
    """The CLI's session and dbt's profile start the driver with the same heap, 1.5 GiB unless
    CDC_SPARK_DRIVER_MEMORY says otherwise (ADR 0036): the heap bounds a run's memory."""
    from python_udfs.spark import DEFAULT_DRIVER_MEMORY, spark_conf
    from tests.spark_project import REPO

    monkeypatch.delenv("CDC_SPARK_DRIVER_MEMORY", raising=False)
    assert spark_conf(tmp_path / "lake")["spark.driver.memory"] == DEFAULT_DRIVER_MEMORY == "1536m"
    profile = (REPO / "profiles.yml").read_text(encoding="utf-8")
    assert f"env_var('CDC_SPARK_DRIVER_MEMORY', '{DEFAULT_DRIVER_MEMORY}')" in profile
    monkeypatch.setenv("CDC_SPARK_DRIVER_MEMORY", "3g")
    assert spark_conf(tmp_path / "lake")["spark.driver.memory"] == "3g"
