"""Every benchmark script imports: a helper moved between scripts breaks a benchmark that no
other test runs."""

import importlib
from pathlib import Path

import pytest

SCRIPTS = sorted(p.stem for p in (Path(__file__).parents[2] / "benchmarks").glob("bench_*.py"))


def test_there_are_benchmark_scripts():
    assert {"bench_compress", "bench_dask_data", "bench_risk", "bench_paper"} <= set(SCRIPTS)


@pytest.mark.parametrize("name", SCRIPTS)
def test_benchmark_script_imports(name):
    module = importlib.import_module(f"benchmarks.{name}")
    assert callable(module.main)
