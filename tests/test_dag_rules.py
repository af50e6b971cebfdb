"""The DAG runs one way: what dbt's own manifest says about the project's models (issue 45).

``dbt parse`` writes ``manifest.json`` (no Spark, no lake: parsing does not connect); the
tests read the models' dependencies from it.
"""

import json
import os
import subprocess
import sys
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
    assert models["change_log"]["depends_on"]["nodes"] == ["model.cdc_changelog.int_changes_logged"]
    for name in ("int_apply_keys", "int_apply_events", "int_key_changes", "int_table_resets"):
        assert "model.cdc_changelog.int_changes_logged" in models[name]["depends_on"]["nodes"]
