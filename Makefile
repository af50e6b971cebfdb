# cdc_changelog: `make demo` and `make test` work on a fresh clone (they create .venv first).
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
ARCHIVE := $(VENV)/.class-archive-stamp

.PHONY: install demo test test-readme lint format docs lock clean benchmark benchmark-scale benchmark-peer benchmark-catalog

$(STAMP): requirements.lock pyproject.toml python_udfs/spark.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.lock
	$(BIN)/python -m pip install --quiet --no-deps -e .
	$(BIN)/python -m python_udfs.spark --fetch-jars  # the Delta Lake jars, once (ADR 0038)
	touch $(STAMP)

# the Spark driver's class archive (docs/operations.md, "Spark settings"); `make test` writes it beside the lint
$(ARCHIVE): $(STAMP)
	$(BIN)/python -m python_udfs.spark
	touch $(ARCHIVE)

install: $(STAMP) $(ARCHIVE)

## Simulate files of all five feed formats, stage them, dbt build, print a summary.
demo: install
	$(BIN)/cdc demo

## Lint (ruff, sqlfluff) and the whole test suite, including dbt build on the embedded engine,
## on two pytest-xdist workers (tests/conftest.py groups the tests sharing a built project).
test: $(STAMP)
	$(MAKE) -j2 lint $(ARCHIVE)
	$(BIN)/pytest -n 2

## Every command of README.md, then of docs/*.md, in order, after `make demo`, in a copy of the project (about 20 min).
test-readme: install
	$(BIN)/pytest -m readme tests/test_readme.py

lint: $(STAMP)
	$(BIN)/ruff check python_udfs simulator tests benchmarks
	$(BIN)/ruff format --check python_udfs simulator tests benchmarks
	CDC_LAKE_ROOT=$(CURDIR)/target/lint_lake $(BIN)/sqlfluff lint --processes 2 models tests/dbt

format: $(STAMP)
	$(BIN)/ruff format python_udfs simulator tests benchmarks
	$(BIN)/ruff check --fix python_udfs simulator tests benchmarks
	CDC_LAKE_ROOT=$(CURDIR)/target/lint_lake $(BIN)/sqlfluff fix models tests/dbt

## Generate and serve the dbt docs site of the demo project (run `make demo` first).
docs: install
	$(BIN)/dbt docs generate --profiles-dir . --project-dir .
	$(BIN)/dbt docs serve --profiles-dir . --project-dir . --port 8080

## Re-pin every dependency after changing pyproject.toml.
lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/python -m pip install --quiet ".[dev]"
	.lock-venv/bin/python -m pip freeze --exclude-editable | grep -v '^cdc.changelog' > requirements.lock
	rm -rf .lock-venv

## Decoder throughput: every format alone on one core and through cdc stage, 1M records each
## (issue 15), then the per-format detail scripts (not part of the tests).
benchmark: install
	$(BIN)/python benchmarks/format_throughput.py
	$(BIN)/python benchmarks/goldengate_throughput.py
	$(BIN)/python benchmarks/japanese_throughput.py

## Scale benchmark (issues 5, 11): histories of 0.5M and 5M events, the same new batch on each.
benchmark-scale: install
	$(BIN)/python benchmarks/apply_scale.py

## Issue 12: the cost of a run per catalog table (15 tables against 500).
benchmark-catalog: install
	$(BIN)/python benchmarks/catalog_scale.py

## Issue 12: Spark's Auto CDC flow (../shared/peer) and cdc_changelog on the same 1M events.
benchmark-peer: install
	$(BIN)/python benchmarks/peer_compare.py

clean:
	rm -rf demo target logs lake landing .pytest_cache
