"""The fingerprints of what the last successful ``dbt build`` of ``cdc run`` read.

A build's inputs are the dbt project (its own files: models, macros, seeds, tests,
``dbt_project.yml``, ``profiles.yml``; the ``--vars`` override, the dbt target and schema) and
the committed ingest batches (the partition folders of ``raw_ingested_files``, written last by
staging, ADR 0002). Two SHA-256 fingerprints are read from file names and bytes only (no Spark
job, no dbt parse): the project's (:func:`project_fingerprint`) and the build's
(:func:`build_fingerprint`, the project's and the batches).

A run whose build fingerprint equals the last successful build's skips dbt (nothing new). A
run whose project fingerprint equals it has new data only, and ``cdc run`` builds what holds
data and runs every test, leaving out what only the project defines (seeds and views,
ADR 0009). ``cdc run`` deletes the stored build fingerprint before it starts dbt and writes it
only after a build without extra dbt arguments succeeded, so a run killed or failed in between
never leaves a record that claims a build that did not happen. Before a data-only build the
project fingerprint stays: a run killed during it is followed by a data-only build; a failed
build removes the record whole, so the build after it is a whole one.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: The dbt project's folders and files whose content a build depends on.
PROJECT_INPUTS = ("dbt_project.yml", "profiles.yml", "models", "macros", "seeds", "tests/dbt")
#: Where the fingerprint of the last successful build lives, under the lake root.
STATE_FILE = Path("cdc_state") / "last_build.json"


def committed_batches(lake_root: Path) -> list[str]:
    """Return the sorted ids of committed ingest batches.

    They are the partition folders of the manifest
    (``<lake>/raw/raw_ingested_files/ingest_batch_id=<id>``) that hold a parquet file.
    """
    manifest = lake_root / "raw" / "raw_ingested_files"
    if not manifest.is_dir():
        return []
    return sorted(
        folder.name.split("=", 1)[1]
        for folder in manifest.glob("ingest_batch_id=*")
        if any(folder.glob("*.parquet"))
    )


def project_fingerprint(project_dir: Path, extra_vars: Mapping[str, Any]) -> str:
    """Return the hex SHA-256 of the dbt project a build runs: its files, vars and target.

    Files (``PROJECT_INPUTS``) are hashed by path relative to ``project_dir`` and content
    (bytes). Environment: ``CDC_DBT_TARGET`` and ``CDC_DBT_SCHEMA`` choose where dbt builds, so
    they count.
    """
    digest = hashlib.sha256()

    def add(label: str, data: bytes) -> None:
        digest.update(label.encode("utf-8") + b"\0" + len(data).to_bytes(8, "big") + data)

    for name in PROJECT_INPUTS:
        path = project_dir / name
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        for file in files:
            if "__pycache__" in file.parts or file.suffix == ".pyc":
                continue
            add(file.relative_to(project_dir).as_posix(), file.read_bytes())
    add("vars", json.dumps(dict(extra_vars), sort_keys=True, default=str).encode("utf-8"))
    for env in ("CDC_DBT_TARGET", "CDC_DBT_SCHEMA"):
        add(env, os.environ.get(env, "").encode("utf-8"))
    return digest.hexdigest()


def build_fingerprint(project_dir: Path, lake_root: Path, extra_vars: Mapping[str, Any]) -> str:
    """Return the hex SHA-256 of everything a ``dbt build`` of this project reads.

    That is the :func:`project_fingerprint` and the ids of the committed ingest batches.
    """
    digest = hashlib.sha256(project_fingerprint(project_dir, extra_vars).encode("ascii"))
    digest.update(b"\0batches\0" + "\n".join(committed_batches(lake_root)).encode("ascii"))
    return digest.hexdigest()


def _record(lake_root: Path) -> dict[str, Any]:
    try:
        record = json.loads((lake_root / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def last_build(lake_root: Path) -> str | None:
    """Return the build fingerprint of the last successful build, or None when none is recorded."""
    value = _record(lake_root).get("fingerprint")
    return value if isinstance(value, str) else None


def last_project(lake_root: Path) -> str | None:
    """Return the project fingerprint of the last successful build, or None.

    None when no build is recorded, and for a record written before there were two
    fingerprints (the next build is then a whole one).
    """
    value = _record(lake_root).get("project_fingerprint")
    return value if isinstance(value, str) else None


def forget_build(lake_root: Path, *, keep_project: bool = False) -> None:
    """Remove the recorded build fingerprint (before a build starts, and after one failed).

    ``keep_project`` (before a data-only build): the project fingerprint stays, alone, so a run
    killed during the build is followed by a data-only build, not a whole one (a data-only
    build writes no seed or view, so what the last whole build created is still there). The
    build fingerprint goes either way: the next run never skips dbt. Without ``keep_project``
    the record goes whole, and the next build is a whole one.
    """
    path = lake_root / STATE_FILE
    project = last_project(lake_root) if keep_project else None
    if project is None:
        path.unlink(missing_ok=True)
        return
    _write_record(path, {"project_fingerprint": project})


def record_build(lake_root: Path, fingerprint: str, project: str, built_at: str) -> None:
    """Record the build and project fingerprints of the last successful build.

    ``built_at`` is the ingest batch id staged by that run. Written to a temporary file, then
    renamed, so a reader never sees half a file.
    """
    _write_record(
        lake_root / STATE_FILE,
        {"fingerprint": fingerprint, "project_fingerprint": project, "built_at": built_at},
    )


def _write_record(path: Path, record: dict[str, str]) -> None:
    """Write ``record`` as JSON to a scratch file beside ``path``, then rename it to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_suffix(".tmp")
    scratch.write_text(json.dumps(record), encoding="utf-8")
    scratch.replace(path)
