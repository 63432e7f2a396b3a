"""The memory ceiling of a build (max_memory) and what keeps memory and models bounded at
scale: shared training matrix, float32 memory-mapped predictions, leaf caps, bounded samples."""

from __future__ import annotations

import mmap
import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer

from ensel.library import build_library
from ensel.library import builder as builder_module
from ensel.library.data.training import prepare, share_frame
from ensel.library.execution.executor import ProcessExecutor, SerialExecutor
from ensel.library.families import get_family
from ensel.library.planning.memory import MemoryGate, parse_memory, resolve_max_memory

from .._tasks import hold_memory, log_span


@pytest.fixture(scope="module")
def cancer():
    return load_breast_cancer(return_X_y=True, as_frame=True)


def _table(n: int, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    """Numeric columns with missing cells and a many-level category; noisy labels."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, 6)), columns=[f"x{j}" for j in range(6)])
    X.loc[rng.random(n) < 0.1, "x1"] = np.nan
    X["city"] = pd.Series(rng.integers(0, 300, n)).map("c{}".format)
    y = (X["x0"].fillna(0) + rng.normal(size=n) > 0).astype(int).to_numpy()
    return X, y


def test_parse_memory_reads_bytes_and_sizes():
    assert parse_memory("8GB") == 8 * 2**30
    assert parse_memory("512 MiB") == 512 * 2**20
    assert parse_memory("1.5g") == int(1.5 * 2**30)
    assert parse_memory(1000) == 1000
    assert parse_memory(None) is None
    assert resolve_max_memory(None) > 0
    for bad in ("lots", -1, 0, True, "8XB"):
        with pytest.raises(ValueError, match=r"^max_memory=.*: give"):
            parse_memory(bad)


def test_store_predictions_are_float32_memmaps(cancer, tmp_path):
    X, y = cancer
    lib = build_library(X, y, spec="tiny", cv=3, store=tmp_path / "s", verbose=0)
    assert isinstance(lib.predictions, np.memmap)
    assert lib.predictions.dtype == np.float32
    assert lib.detectors is None or lib.detectors.predictions.dtype == np.float32


def test_workers_get_the_training_matrix_without_pickling_it(tmp_path):
    X, y = _table(20_000)
    data = prepare(X, y, cv=3)
    shared = share_frame(data, tmp_path / "training")
    plain, mapped = len(pickle.dumps(data)), len(pickle.dumps(shared))
    assert mapped < plain / 5  # the payload carries the file's path, not the rows
    back = pickle.loads(pickle.dumps(shared))
    pd.testing.assert_frame_equal(back.X, data.X)
    assert back.fingerprint() == data.fingerprint()
    base = back.X["x0"].to_numpy()
    while getattr(base, "base", None) is not None:
        base = base.base
    assert isinstance(base, mmap.mmap)  # a view of the file, not a copy


def test_too_small_max_memory_fails_in_one_line_before_any_run(tmp_path):
    X, y = _table(50_000)
    with pytest.raises(ValueError) as err:
        build_library(X, y, spec="tiny", cv=3, store=tmp_path / "s", max_memory="1MB", verbose=0)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("max_memory=1.0 MB cannot hold the training data: 50,000 rows")
    assert "give max_memory of at least" in message
    assert not (tmp_path / "s").exists()  # nothing was built


def test_bad_max_memory_names_the_argument(cancer):
    X, y = cancer
    with pytest.raises(ValueError, match=r"max_memory='huge': give a positive number"):
        build_library(X, y, spec="tiny", max_memory="huge", verbose=0)


def test_a_run_too_big_for_the_ceiling_is_skipped_with_a_note(cancer, tmp_path, monkeypatch):
    X, y = cancer
    real = builder_module.run_peak

    def peak(section, run, data):  # as if the svm runs needed a petabyte
        return 2**50 if run.family == "svm" else real(section, run, data)

    monkeypatch.setattr(builder_module, "run_peak", peak)
    lib = build_library(X, y, spec="tiny", cv=3, store=tmp_path / "s", max_memory="64GB", verbose=0)
    skipped = lib.failures[lib.failures["status"] == "memory"]
    assert set(skipped["family"]) == {"svm"}
    assert skipped["error"].str.startswith("skipped: its estimated peak memory 1024 TB").all()
    assert "svm" not in set(lib.members["family"])
    assert lib.n_members > 0


@pytest.mark.parametrize("executor", [SerialExecutor(), ProcessExecutor(2)])
def test_gate_skips_what_never_fits(executor, tmp_path):
    gate = MemoryGate(2**40, [0, 2**41], worker_bytes=0, main=lambda: 0)
    path = str(tmp_path / "log")
    out = {o.index: o for o in executor.run(log_span, ["a", "b"], path, memory=gate)}
    assert out[0].status == "ok"
    assert out[1].status == "memory" and out[1].error.startswith("skipped")


def test_runs_wait_rather_than_overlap_when_both_do_not_fit(tmp_path):
    # each fits alone, not the two together: the second waits for the first to end
    gate = MemoryGate(100 * 2**30, [60 * 2**30, 60 * 2**30], worker_bytes=0, main=lambda: 0)
    path = tmp_path / "log"
    out = list(ProcessExecutor(2).run(log_span, ["a", "b"], str(path), memory=gate))
    assert [o.status for o in out] == ["ok", "ok"]
    assert path.read_text().split("\n")[:4] == ["start a", "end a", "start b", "end b"]


def test_a_run_over_the_measured_ceiling_is_stopped():
    gate = MemoryGate(700 * 2**20, [0], worker_bytes=0, main=lambda: 0)
    (outcome,) = ProcessExecutor(1).run(hold_memory, [1500], None, memory=gate)
    assert outcome.status == "memory"
    assert "reached max_memory=700 MB" in outcome.error


def _pickled(run) -> int:
    return len(pickle.dumps(run, protocol=pickle.HIGHEST_PROTOCOL))


@pytest.mark.parametrize("family", ["random_forest", "bagged_trees", "knn"])
def test_fitted_runs_stop_growing_with_the_rows(family):
    spec = get_family(family)
    params = {**spec.params, **spec.test_params}
    stages = spec.test_stages or (1,)
    sizes = {}
    for n in (12_000, 48_000):
        rng = np.random.default_rng(n)
        X = rng.normal(size=(n, 5))
        y = (X[:, 0] + rng.normal(size=n) > 0).astype(int)
        run = spec.fit(X, y, n_classes=2, params=params, stages=stages, random_state=0)
        sizes[n] = _pickled(run)
    assert sizes[48_000] < 1.3 * sizes[12_000]  # four times the rows, not four times the size


def test_without_the_leaf_cap_a_forest_grows_with_the_rows():
    # the control of the test above: it would fail without the cap
    spec = get_family("random_forest")
    params = {**spec.params, "max_features": 2, "max_leaves": None}
    sizes = {}
    for n in (12_000, 48_000):
        rng = np.random.default_rng(n)
        X = rng.normal(size=(n, 5))
        y = (X[:, 0] + rng.normal(size=n) > 0).astype(int)
        sizes[n] = _pickled(spec.fit(X, y, n_classes=2, params=params, stages=(4,), random_state=0))
    assert sizes[48_000] > 3 * sizes[12_000]


@pytest.mark.slow
def test_saved_forest_ensemble_with_risk_does_not_grow_with_the_rows(tmp_path):
    from ensel import EnsembleSelectionClassifier

    spec = {
        "name": "forests",
        "families": [
            {"family": "random_forest", "params": {"max_features": [2, 4]}, "stages": [8]},
            {"family": "bagged_trees", "stages": [4]},
        ],
        "detectors": [
            {"detector": "lof"},
            {"detector": "cert_forest", "params": {"n_estimators": 5}},
            {"detector": "dispersion", "params": {"n_estimators": 5}},
        ],
    }
    sizes = {}
    for n in (10_000, 40_000):
        X, y = _table(n, seed=1)
        clf = EnsembleSelectionClassifier(library=spec, cv=None, n_jobs=1, n_bags=1)
        clf.fit(X, y)
        clf.save(tmp_path / f"m{n}.pkl")
        sizes[n] = (tmp_path / f"m{n}.pkl").stat().st_size
    assert sizes[40_000] < 1.5 * sizes[10_000]  # four times the rows
