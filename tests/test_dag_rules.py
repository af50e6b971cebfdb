"""The DAG runs one way: what dbt's own manifest says about the project's models (issue 45).

``dbt parse`` writes ``manifest.json`` (no Spark, no lake: parsing does not connect); the
tests read the models' dependencies from it.
"""

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LAYERS = ("staging", "intermediate", "marts")


@pytest.fixture(scope="module")
def manifest(tmp_path_factory) -> dict:
    target = tmp_path_factory.mktemp("dag_rules")
    env = {**os.environ, "CDC_LAKE_ROOT": str(target / "lake")}
    dbt = Path(sys.executable).parent / "dbt"
    subprocess.run(
        [
            str(dbt),
            "parse",
            "--profiles-dir",
            ".",
            "--project-dir",
            ".",
            "--target-path",
            str(target),
        ],
        cwd=REPO,
        env=env,
        check=True,
        capture_output=True,
    )
    return json.loads((target / "manifest.json").read_text(encoding="utf-8"))


def _layer(node: dict) -> str:
    """The layer of a model: the first folder of its path under models/."""
    return Path(node["original_file_path"]).parts[1]


def _models(manifest: dict) -> dict[str, dict]:
    return {uid: n for uid, n in manifest["nodes"].items() if n["resource_type"] == "model"}


def test_every_model_is_in_a_layer(manifest):
    assert {_layer(n) for n in _models(manifest).values()} <= set(LAYERS)


def test_no_staging_or_intermediate_model_depends_on_a_mart(manifest):
    models = _models(manifest)
    wrong = sorted(
        (node["name"], models[parent]["name"])
        for node in models.values()
        if _layer(node) in ("staging", "intermediate")
        for parent in node["depends_on"]["nodes"]
        if parent in models and _layer(models[parent]) == "marts"
    )
    assert wrong == []


def test_the_apply_chain_reads_the_change_log_store_and_readers_the_mart(manifest):
    models = {n["name"]: n for n in _models(manifest).values()}
    assert models["change_log"]["config"]["materialized"] == "view"
    # the catalog too: a change logged before its table was declared is shown keyed (ADR 0021)
    assert sorted(models["change_log"]["depends_on"]["nodes"]) == [
        "model.cdc_changelog.int_catalog_tables",
        "model.cdc_changelog.int_changes_logged",
    ]
    for name in (
        "int_apply_keys",
        "int_apply_events_gathered",
        "int_key_changes",
        "int_table_resets",
    ):
        assert "model.cdc_changelog.int_changes_logged" in models[name]["depends_on"]["nodes"]


def _reads(model: dict, parent: dict) -> bool:
    """Whether ``model`` reads ``parent``: not when its SQL names ``parent`` only in a
    ``-- depends_on:`` line (a dependency declared for the order of the build, as history's on
    current_state). Refs made by macros and loops name no model in the SQL: they are reads."""
    code = re.sub(r"\{#.*?#\}", "", model["raw_code"], flags=re.DOTALL)
    declared = re.findall(r"^-- depends_on:.*$", code, flags=re.MULTILINE)
    rest = re.sub(r"--.*$", "", code, flags=re.MULTILINE)  # comments, depends_on lines too
    name = re.compile(rf"\b{parent['name']}\b")
    return not any(map(name.search, declared)) or name.search(rest) is not None


def _table_chains(models: dict[str, dict], node: str, ends: set[str]) -> list[list[str]]:
    """The tables (table and incremental models) on each path of reads from ``node`` down to
    ``ends``."""
    children: dict[str, list[str]] = {}
    for child, model in models.items():
        for parent in model["depends_on"]["nodes"]:
            if parent in models and _reads(model, models[parent]):
                children.setdefault(parent, []).append(child)
    chains = []

    def walk(at: str, tables: list[str]) -> None:
        if models[at]["name"] in ends:
            chains.append(tables)
        for child in children.get(at, []):
            materialized = models[child]["config"]["materialized"]
            walk(
                child, tables + [models[child]["name"]] * (materialized in ("table", "incremental"))
            )

    walk(node, [])
    return chains


def test_a_change_passes_through_at_most_four_tables_to_current_state_and_history(manifest):
    # issue 73: change_log's store, the keys the run applies, their events, and each of the two
    # Delta tables merged from the versions computed from them (ADR 0038)
    models = _models(manifest)
    starts = [k for k, m in models.items() if re.fullmatch(r"stg_\w+__changes", m["name"])]
    assert len(starts) == 5
    chains = [c for s in starts for c in _table_chains(models, s, {"current_state", "history"})]
    assert chains and max(map(len, chains)) <= 4, max(chains, key=len)
    assert {tuple(c) for c in chains if len(c) == 4} == {
        ("int_changes_logged", "int_apply_keys", "int_apply_events", end)
        for end in ("current_state", "history")
    }


def test_history_merges_after_current_state_and_reads_nothing_of_it(manifest):
    # the state (history's current rows, the watermark) moves last: a run killed between the two
    # MERGEs applies the same keys again (ADR 0038)
    models = _models(manifest)
    history = models["model.cdc_changelog.history"]
    current_state = models["model.cdc_changelog.current_state"]
    assert "model.cdc_changelog.current_state" in history["depends_on"]["nodes"]
    assert not _reads(history, current_state)


def test_no_staging_model_depends_on_an_intermediate_model(manifest):
    # the working set comes in from `cdc run` (CDC_WORKING_SET), not from int_working_set
    models = _models(manifest)
    wrong = sorted(
        (node["name"], models[parent]["name"])
        for node in models.values()
        if _layer(node) == "staging"
        for parent in node["depends_on"]["nodes"]
        if parent in models and _layer(models[parent]) != "staging"
    )
    assert wrong == []


def test_the_previous_key_state_is_a_declared_source(manifest):
    # read by the models that plan the apply (ADR 0025): the history the previous runs merged;
    # current_state reads the other keys' current rows from it when it is built whole
    models = {n["name"]: n for n in _models(manifest).values()}
    state = "source.cdc_changelog.cdc_state.history"
    assert state in manifest["sources"]
    readers = sorted(name for name, node in models.items() if state in node["depends_on"]["nodes"])
    assert readers == ["current_state", "int_apply_events_gathered", "int_apply_keys"]
    assert manifest["sources"][state]["identifier"] == models["history"]["alias"]


#: Calls that read the lake's tables when SQL compiles (``load_relation`` is dbt's wrapper of
#: ``adapter.get_relation``).
COMPILE_TIME_READS = (
    "run_query(",
    "adapter.get_relation(",
    "load_relation(",
)

#: The models, macros and data tests that still read a table when they compile, and why each is
#: still here (issue 45 keeps the rest open). A new entry fails the test below: state of earlier
#: runs is a declared source or ``this``, and a run's plan is not chosen from data.
REMAINING_COMPILE_TIME_READS = {
    # lake upkeep in on-run-start: orphan table folders of the parquet lake (gone with Delta),
    # and history dropped on a full refresh (a write, not a read; the check of an earlier
    # release's history lists no row)
    "cdc_clear_orphan_table_folders",
    "cdc_prepare_history",
    # registers the raw tables (sources), which the rule allows
    "register_raw_tables",
}


def test_no_new_model_macro_or_data_test_reads_tables_when_it_compiles(manifest):
    # models, macros and singular data tests (tests/dbt; generic tests are macros)
    readers = {
        node["name"]
        for node in manifest["nodes"].values()
        if node["resource_type"] in ("model", "test")
        and any(c in node["raw_code"] for c in COMPILE_TIME_READS)
    } | {
        macro["name"]
        for macro in manifest["macros"].values()
        if macro["package_name"] == "cdc_changelog"
        and any(c in macro["macro_sql"] for c in COMPILE_TIME_READS)
    }
    assert readers - REMAINING_COMPILE_TIME_READS == set()
    # an entry whose reads are gone is taken off the list
    assert REMAINING_COMPILE_TIME_READS - readers == set()


def test_no_macro_builds_a_model_relation_behind_ref(manifest):
    # issue 73: a model or test reads another model only through ref() (so dbt orders it and
    # the lineage shows it), never through a relation made from the graph's schema and alias
    # (the former cdc_model_relation, which the scoped tests used). The on-run-start upkeep
    # hooks write, they read no model.
    builders = {
        macro["name"]
        for macro in manifest["macros"].values()
        if macro["package_name"] == "cdc_changelog"
        and "graph.nodes" in macro["macro_sql"]
        and ("api.Relation.create" in macro["macro_sql"] or ".schema" in macro["macro_sql"])
    }
    assert builders <= {"cdc_clear_orphan_table_folders", "cdc_prepare_history"}
    # the scoped test predicates read only the relation they are given
    scoped = [m for m in manifest["macros"].values() if m["name"].endswith("_predicate")]
    assert scoped and all("graph" not in m["macro_sql"] for m in scoped)
    # and a singular test scoped to the touched keys refs the history it reads
    for node in manifest["nodes"].values():
        if node["resource_type"] == "test" and "cdc_touched_keys_predicate" in node["raw_code"]:
            assert "model.cdc_changelog.history" in node["depends_on"]["nodes"], node["name"]


#: Issue 45, item 4: each model is a CTE chain an analytics engineer reads in one sitting.
MAX_MODEL_LINES = 150


def test_no_model_is_over_150_lines(manifest):
    long = sorted(
        (node["name"], len(node["raw_code"].splitlines()))
        for node in _models(manifest).values()
        if len(node["raw_code"].splitlines()) > MAX_MODEL_LINES
    )
    assert long == []


def test_the_key_change_plans_are_read_from_the_lake_by_no_model(manifest):
    """ADR 0026: the key-change closure and the rows key changes carry are planned on every
    run (no partition listing decides them), in ephemeral models that the lineage shows."""
    models = {n["name"]: n for n in _models(manifest).values()}
    for name in ("int_linked_keys", "int_key_change_rows"):
        assert models[name]["config"]["materialized"] == "ephemeral"
        assert "with recursive" in models[name]["raw_code"]
    assert "model.cdc_changelog.int_linked_keys" in models["int_apply_keys"]["depends_on"]["nodes"]
    assert (
        "model.cdc_changelog.int_key_change_rows" in models["int_event_rows"]["depends_on"]["nodes"]
    )


#: A timing or a ratio as benchmarks print them: "8.6 s", "120 ms", "2.1×".
FIGURE = re.compile(r"\b\d+(?:\.\d+)? ?(?:s|ms|min)\b|\d×")


def test_benchmark_figures_live_in_decision_records_not_in_models_or_macros():
    """Issue 45, item 4: model and macro comments say what the SQL does and why; what it cost
    on a benchmark goes in docs/decisions/ (it changes with every machine and release)."""
    found = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for folder in ("models", "macros")
        for path in sorted((REPO / folder).rglob("*"))
        if path.suffix in (".sql", ".yml", ".md")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if FIGURE.search(line)
    ]
    assert found == []


def _folder_materialization(path: Path) -> str:
    """The materialization dbt_project.yml gives the models of ``path``'s folder: the deepest
    ``+materialized`` on the way from the project down to it (dbt's default, view, if none)."""
    import yaml

    config = yaml.safe_load((REPO / "dbt_project.yml").read_text(encoding="utf-8"))
    level = config["models"]["cdc_changelog"]
    materialized = level.get("+materialized", "view")
    for folder in path.parent.parts[1:]:
        level = level.get(folder) or {}
        materialized = level.get("+materialized", materialized)
    return materialized


def test_a_model_sets_its_materialization_only_where_it_differs_from_its_folder(manifest):
    # issue 73: dbt_project.yml's defaults are what the models are
    same = sorted(
        node["original_file_path"]
        for node in _models(manifest).values()
        if re.search(r"materialized\s*=", node["raw_code"])
        and node["config"]["materialized"]
        == _folder_materialization(Path(node["original_file_path"]))
    )
    assert same == []
    # and each folder's default is its models' commonest materialization (a tie allowed)
    models = list(_models(manifest).values())
    for folder in {Path(n["original_file_path"]).parent for n in models}:
        counts = Counter(
            n["config"]["materialized"]
            for n in models
            if Path(n["original_file_path"]).parent == folder
        )
        default = _folder_materialization(folder / "model.sql")
        assert counts[default] == max(counts.values()), (folder, default, counts)
