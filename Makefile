# Each target installs what it needs into the current Python environment, then runs.
PYTHON ?= python
PIP := $(PYTHON) -m pip

.PHONY: install install-dev demo test lint bench bench-quick

install:
	$(PIP) install --quiet -e .

install-dev:
	$(PIP) install --quiet -e ".[dev]"

demo: install
	$(PYTHON) -m ensel.demo

lint: install-dev
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .

test: lint
	$(PYTHON) -m pytest -q

bench: install-dev
	$(PYTHON) -m benchmarks.bench_selection

bench-quick: install-dev
	$(PYTHON) -m benchmarks.bench_selection --quick
