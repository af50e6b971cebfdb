"""issue 15: one home per feed format, behind one registry that the rest iterates over.

Each format is a package ``python_udfs/<format>/`` (``decoder.py``, ``spec.py``) listed in
``python_udfs/registry.py``; the staging job names no format, the dbt side's format list agrees
with the registry, and the runtime package imports nothing from the simulator.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from python_udfs.registry import FORMATS
from python_udfs.staging import RAW_TABLES
from tests.spark_project import REPO

PACKAGE = REPO / "python_udfs"


def _macro_list(path: Path, macro: str) -> list[str]:
    """The string literals of the list a one-line ``{{ return([...]) }}`` macro returns."""
    text = path.read_text(encoding="utf-8")
    body = text[text.index("{% macro " + macro + "() %}") :]
    body = body[: body.index("{% endmacro %}")]
    literal = re.search(r"return\(\[(.*?)\]\)", body, re.S).group(1)
    return re.findall(r"'([a-z_]+)'", literal)


def test_the_dbt_format_list_and_raw_tables_are_the_registry_s():
    formats = _macro_list(REPO / "macros" / "cdc_format_names.sql", "cdc_format_names")
    assert formats == list(FORMATS)
    shared = ["raw_ingested_files", "raw_rejects", "raw_metadata"]
    register = (REPO / "macros" / "cdc_raw_table_names.sql").read_text(encoding="utf-8")
    assert all(f"'{name}'" in register for name in shared)
    assert set(RAW_TABLES) == set(shared) | {f"raw_{name}" for name in formats}


@pytest.mark.parametrize("name", list(FORMATS))
def test_everything_about_a_format_is_in_its_folders(name):
    spec = FORMATS[name]
    assert spec.name == name and spec.raw_table == f"raw_{name}"
    # columnar.py: a fast path beside the per-record reference decoder (issue 47)
    assert {p.name for p in (PACKAGE / name).glob("*.py")} - {"columnar.py"} == {
        "__init__.py",
        "decoder.py",
        "spec.py",
    }
    staging = REPO / "models" / "staging" / name
    sources = (staging / f"_{name}__sources.yml").read_text(encoding="utf-8")
    assert f"name: {spec.raw_table}" in sources
    assert (staging / f"stg_{name}__changes.sql").is_file()
    assert (REPO / "simulator" / f"{name}.py").is_file()
    # every option has a default and a choice list (or None), as config checks them
    assert all(len(option) == 2 for option in spec.options.values())
    # the raw table's columns are the sources YAML's: each one documented there
    for column, _type in spec.raw_columns:
        assert re.search(rf"- name: {re.escape(column)}\b", sources), (name, column)


def test_the_staging_job_and_cli_name_no_format():
    staging = sorted(p.relative_to(PACKAGE).as_posix() for p in (PACKAGE / "staging").glob("*.py"))
    assert len(staging) == 8, staging
    for module in (
        *staging,
        "cli.py",
        "run.py",
        "demo.py",
        "scaffold.py",
        "sql_console.py",
        "config.py",
        "spark.py",
        "build_state.py",
    ):
        text = (PACKAGE / module).read_text(encoding="utf-8")
        named = [name for name in FORMATS if name in text]
        assert named == [], f"python_udfs/{module} names {named}"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)  # and `from package import module`:
            out |= {f"{node.module}.{alias.name}" for alias in node.names}
    return out


def test_the_runtime_package_imports_nothing_from_the_simulator_and_decoders_no_spark():
    for path in PACKAGE.rglob("*.py"):
        imports = _imports(path)
        if path.parent.name == "python_udfs" and path.name == "demo.py":
            continue  # `cdc demo` runs the simulator (imported inside the function)
        assert not any(i.split(".")[0] == "simulator" for i in imports), path
        if path.name == "decoder.py":
            assert not any(i.startswith(("pyspark", "python_udfs.staging")) for i in imports)
            assert not any(i.endswith(".spec") for i in imports), path


def test_the_runtime_package_has_no_import_cycle():
    """Every import in python_udfs, at module level or inside a function, drawn as an edge
    between its modules: the graph has no cycle (issue 15: the simulator had one). Importing
    ``a.b.c`` is an edge to ``a.b`` too, unless the importer is inside ``a.b``."""
    modules = {
        ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__"): path
        for path in PACKAGE.rglob("*.py")
    }
    edges = {
        name: {
            target
            for imported in _imports(path)
            for target in modules
            if target != name
            and (imported == target or imported.startswith(target + "."))
            and target != "python_udfs"
            # a module's own package is already being imported when the module runs
            and not name.startswith(target + ".")
        }
        for name, path in modules.items()
    }
    done: set[str] = set()

    def visit(name: str, trail: tuple[str, ...]) -> None:
        assert name not in trail, " -> ".join((*trail, name))
        if name in done:
            return
        for target in edges[name]:
            visit(target, (*trail, name))
        done.add(name)

    for name in modules:
        visit(name, ())


def test_scaffolded_types_come_from_the_feed_s_format():
    """A GoldenGate type code and a Qlik type name each map by their own feed's format; a
    feed whose format carries no types, or that is not configured, gets string."""
    from python_udfs.scaffold import scaffold_rows

    def row(feed, table, name, source_type, scale=None):
        return {
            "feed": feed,
            "source_schema": "S",
            "source_table": table,
            "column_name": name,
            "ordinal": 1,
            "source_type": source_type,
            "length": None,
            "precision": 10,
            "scale": scale,
            "primary_key_position": 1,
            "nullable": False,
            "table_version": 1,
            "ingest_batch_id": "b1",
        }

    rows = [
        row("ogg", "A", "ID", "134", scale=2),
        row("ct", "B", "ID", "NUMERIC", scale=3),
        row("kafka", "C", "ID", "INT4"),
        row("sql", "D", "ID", "INT4"),
        row("gone", "E", "ID", "INT4"),
    ]
    formats = {
        "ogg": "goldengate_trail",
        "ct": "qlik_change_tables",
        "kafka": "qlik_kafka",
        "sql": "hirdb_update_sql",
    }
    columns, _tables, _skipped = scaffold_rows(rows, set(), formats)
    assert {c["feed"]: c["spark_type"] for c in columns} == {
        "ogg": "decimal(38,2)",
        "ct": "decimal(10,3)",
        "kafka": "int",
        "sql": "string",
        "gone": "string",
    }


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_a_format_package_docstring_names_each_of_its_modules(fmt):
    """issue 74: the docstring of ``python_udfs/<format>/__init__.py`` lists every module of the
    package, so a newcomer finds the fast path beside the decoder and the spec."""
    import importlib

    package = importlib.import_module(f"python_udfs.{fmt}")
    folder = Path(package.__file__).parent
    modules = {p.name for p in folder.glob("*.py")} - {"__init__.py"}
    missing = [name for name in sorted(modules) if f"``{name}``" not in package.__doc__]
    assert not missing, (fmt, missing)
