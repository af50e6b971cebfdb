"""Every command of the README and of the pages in docs/ runs as written, in order, after
`make demo` (issues 16 and 74): the README's shell blocks first, then each page's of
:data:`DOC_PAGES`, in that order.

Not part of `make test` (it takes 20 to 30 minutes: the demo, then a dozen runs and builds,
each its own JVM); `make test-readme` runs it and CI runs that after `make test`. The project is
a copy of the repository's tracked files (what a fresh clone holds) with this checkout's
`.venv` linked in, so `make demo` installs nothing again; nothing is exported: the commands
find the demo's lake as a newcomer's would. `make demo` runs on the project's defaults; the
commands after it on the suite's Spark settings for small data (:data:`SUITE_SETTINGS`,
tests/conftest.py), which change how fast Spark plans and runs, not what it computes: the
README's six whole builds of the demo's lake took most of the test's 30 minutes on the
defaults (ADR 0038).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.spark_project import REPO

pytestmark = [pytest.mark.readme, pytest.mark.spark]

#: README commands this test does not run, with the reason (a line starting with the command).
NOT_RUN = {
    "make test": "the suite this test belongs to",
    "make benchmark": "a benchmark: minutes to hours, run by hand (docs/benchmarks.md)",
    ".venv/bin/cdc run --every": "stays running until stopped; the end-to-end test of an "
    "appended file runs it with --runs (tests/test_end_to_end.py)",
}
#: The pages of docs/ whose shell blocks run after the README's, in this order (every page of
#: docs/ is listed: a page added without a place here fails the test).
DOC_PAGES = ("configuration", "operations", "cluster", "benchmarks", "development")
#: The suite's Spark settings (tests/conftest.py), passed to the commands after `make demo`.
SUITE_SETTINGS = ("CDC_SPARK_CONF", "CDC_SHUFFLE_PARTITIONS", "CDC_SPARK_JAVA_OPTIONS")
#: Commands that serve until stopped: run in the background, checked, then stopped.
SERVING = {"make docs": "http://127.0.0.1:8080/"}


def readme_blocks(text: str) -> list[str]:
    """A page's shell blocks (```sh fences), in order, without the lines of NOT_RUN."""
    blocks = []
    for block in re.findall(r"^```sh\n(.*?)^```", text, flags=re.S | re.M):
        lines = [line for line in block.splitlines() if not line.startswith(tuple(NOT_RUN))]
        if any(line.strip() and not line.lstrip().startswith("#") for line in lines):
            blocks.append("\n".join(lines) + "\n")
    return blocks


def fresh_copy(root: Path) -> Path:
    """The repository's tracked files under ``root/project`` (timestamps kept), `.venv` linked."""
    project = root / "project"
    # the checkout's .venv up to date first, so the copy's `make demo` finds nothing to install
    # (it would install the copy, not this checkout, into the linked .venv)
    subprocess.run(["make", "install"], cwd=REPO, check=True, capture_output=True)
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout.split(b"\0")
    for name in filter(None, tracked):
        source = REPO / os.fsdecode(name)
        if source.is_file():
            (project / os.fsdecode(name)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, project / os.fsdecode(name))
    (project / ".venv").symlink_to(REPO / ".venv")
    return project


#: What the first block (`make demo`) printed on standard output.
DEMO_STDOUT: dict[str, str] = {}


def run_block(project: Path, block: str, env: dict) -> str:
    """Run one README block as a bash script (`set -e`, each command echoed); return its output.

    A command of SERVING runs in the background until its address answers, then is stopped.
    """
    served = [(cmd, url) for cmd, url in SERVING.items() if cmd in block]
    script = "set -euxo pipefail\n" + block
    if served:
        cmd, url = served[0]
        before, after = block.split(cmd, 1)
        subprocess.run(
            ["bash", "-c", "set -euxo pipefail\n" + before], cwd=project, env=env, check=True
        )
        server = subprocess.Popen(
            ["bash", "-c", cmd + after],
            cwd=project,
            env=env,
            start_new_session=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:
                assert server.poll() is None, server.stdout.read()
                try:
                    with urllib.request.urlopen(url, timeout=5) as page:
                        body = page.read().decode()
                    with urllib.request.urlopen(url + "catalog.json", timeout=5) as page:
                        catalog = page.read().decode()
                    return body + catalog
                except OSError:
                    time.sleep(2)
            raise AssertionError(f"{cmd} did not serve {url} within 10 minutes")
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=60)
    # output to files, not pipes: a server the block left running (its `kill` not reached
    # after a failure) would hold a pipe open; the block's session is stopped whatever happens
    out, err = project.parent / "block.out", project.parent / "block.err"
    with out.open("w") as stdout, err.open("w") as stderr:
        proc = subprocess.Popen(
            ["bash", "-c", script],
            cwd=project,
            env=env,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
        try:
            code = proc.wait(timeout=3600)
        finally:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    stdout_text, stderr_text = out.read_text(), err.read_text()
    DEMO_STDOUT.setdefault("text", stdout_text)  # the first block is `make demo`'s
    assert code == 0, f"README block failed:\n{block}\n{stdout_text[-6000:]}\n{stderr_text[-6000:]}"
    return stdout_text + stderr_text


def test_every_readme_command_runs_as_written_after_make_demo(tmp_path):
    project = fresh_copy(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CDC_")}
    env["COLUMNS"] = "200"
    pages = [project / "README.md", *(project / "docs" / f"{page}.md" for page in DOC_PAGES)]
    assert sorted(p.stem for p in (project / "docs").glob("*.md")) == sorted(DOC_PAGES)
    blocks = [block for page in pages for block in readme_blocks(page.read_text(encoding="utf-8"))]
    assert blocks[0].lstrip().startswith("make demo")
    suite = {**env, **{k: os.environ[k] for k in SUITE_SETTINGS if k in os.environ}}
    outputs = [run_block(project, blocks[0], env)]
    outputs += [run_block(project, block, suite) for block in blocks[1:]]
    text = "\n".join(outputs)
    # what the commands print: the demo's summary, rows of the history, the rejects listing,
    # the docs site, source freshness, dbt through the Thrift Server
    assert "what the lake holds now" in outputs[0]
    # `make demo` is short and carries no dbt log line (dbt's log is in logs/dbt.log)
    demo = DEMO_STDOUT["text"].splitlines()
    assert len(demo) <= 60, demo
    assert not [line for line in demo if re.match(r"\s*(\x1b\[\d*m)?\d\d:\d\d:\d\d", line)]
    assert "qlik_ct_demo" in text and "Traceback" not in text
    assert '"nodes"' in text and "PASS" in text
