# Each target installs what it needs into the current Python environment, then runs.
PYTHON ?= python
PIP := $(PYTHON) -m pip
# torch's CPU build (the tests compare our numpy backprop with torch.optim.SGD; the `compress`
# extra, mimic nets and ONNX export, needs torch too): install-dev installs it *before* the extras,
# so pip finds torch already there and never resolves it itself. On a machine whose index serves
# CUDA builds by default, set TORCH_INDEX=https://download.pytorch.org/whl/cpu (never pull the
# multi-gigabyte CUDA wheels); do the same by hand before `pip install ensel[compress]`.
TORCH_INDEX ?=
TORCH := torch==2.13.0 $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX),)

.PHONY: install install-dev demo test lint browser bench bench-quick bench-report

# The demo's default library has a torch family (tabular_mlp) and its report draws with matplotlib.
install:
	$(PIP) install --quiet $(TORCH)
	$(PIP) install --quiet -e ".[boost,search,nets,report]"

install-dev:
	$(PIP) install --quiet $(TORCH)
	$(PIP) install --quiet -e ".[all,dev]"

demo: install
	$(PYTHON) -m ensel.cli demo

lint: install-dev
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .

# Debian's chromium renders the HTML report in a test; without it that test is skipped.
browser:
	@command -v chromium >/dev/null 2>&1 || (apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || \
		echo "chromium could not be installed: the report rendering test will be skipped"

# Two test processes (pytest-xdist), work stolen as each finishes: CI has two cores.
test: lint browser
	$(PYTHON) -m pytest -q -n 2 --dist worksteal

bench: install-dev
	$(PYTHON) -m benchmarks.bench_selection

bench-quick: install-dev
	$(PYTHON) -m benchmarks.bench_selection --quick

# Every table and plot of docs/results.md (and the README's headline) from the committed rows in
# benchmarks/results/; nothing is fitted or timed, and only the generated blocks change.
bench-report:
	$(PYTHON) -m benchmarks.report
	$(PYTHON) -m benchmarks.papers_report
	$(PYTHON) -m benchmarks.bench_bayesnet --report
