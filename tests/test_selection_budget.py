"""Selection over a memory-mapped matrix larger than the memory budget: it reads a
block of members at a time, holds far less than the matrix, and selects exactly what the
in-memory path selects."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from ensel.metrics import make_metric, score
from ensel.selection import EnsembleSelection


def _library(rng, n_members: int, n: int, n_classes: int = 2):
    """Members of varied skill: noisy logits of the truth, as float32 like a store's matrix."""
    y = rng.integers(0, n_classes, n)
    skill = rng.uniform(0.2, 2.0, (n_members, 1, 1))
    logits = skill * np.eye(n_classes)[y][None] + rng.normal(0, 1, (n_members, n, n_classes))
    P = np.exp(logits) / np.exp(logits).sum(axis=2, keepdims=True)
    return (P[..., 1] if n_classes == 2 else P).astype(np.float32), y


def _mapped(tmp_path, P):
    np.save(tmp_path / "P.npy", P)
    return np.load(tmp_path / "P.npy", mmap_mode="r")


def assert_same_selection(a: EnsembleSelection, b: EnsembleSelection) -> None:
    np.testing.assert_array_equal(a.weights_, b.weights_)
    np.testing.assert_array_equal(a.bag_weights_, b.bag_weights_)
    np.testing.assert_array_equal(a.trajectory_, b.trajectory_)
    np.testing.assert_array_equal(a.member_scores_, b.member_scores_)
    for x, z in zip(a.order_, b.order_, strict=True):
        np.testing.assert_array_equal(x, z)
    assert a.score_ == b.score_


CASES = [
    ("roc", 2, {}),
    ("acc", 2, {}),
    ("mxe", 2, {"replacement": False}),
    ("rms", 2, {"prune_fraction": 0.5}),
    ("apr", 2, {"exact": True}),
    ("roc", 3, {}),
    ("mxe", 3, {}),
    ("fsc", 3, {"exact": True}),
]


@pytest.mark.parametrize(("metric", "n_classes", "options"), CASES)
def test_streamed_selection_equals_in_memory(tmp_path, metric, n_classes, options):
    P, y = _library(np.random.default_rng(7), 60, 300, n_classes)
    common = {"metric": metric, "n_iter": 15, "n_bags": 3, "random_state": 0, **options}
    in_memory = EnsembleSelection(**common).fit(P, y)
    streamed = EnsembleSelection(**common, memory_budget=20_000).fit(_mapped(tmp_path, P), y)
    assert streamed.streamed_ and not in_memory.streamed_
    assert_same_selection(streamed, in_memory)
    np.testing.assert_array_equal(streamed.predict_proba(P), in_memory.predict_proba(P))


def test_streamed_selection_with_a_user_metric_and_float64_input(tmp_path):
    rng = np.random.default_rng(3)
    P, y = _library(rng, 40, 200)
    P = np.clip(P.astype(np.float64) + rng.normal(0, 1e-9, P.shape), 0, 1)  # not float32 values
    brier = make_metric(lambda t, p: -np.mean((t - p) ** 2), name="neg_brier")
    for metric in (brier, "roc"):
        common = {"metric": metric, "n_iter": 10, "n_bags": 2, "random_state": 1}
        in_memory = EnsembleSelection(**common).fit(P, y)
        streamed = EnsembleSelection(**common, memory_budget=10_000).fit(_mapped(tmp_path, P), y)
        assert streamed.streamed_
        assert_same_selection(streamed, in_memory)


def test_streamed_selection_holds_far_less_than_the_matrix(tmp_path):
    P, y = _library(np.random.default_rng(0), 400, 20_000)  # 32 MB of float32 on disk
    mapped = _mapped(tmp_path, P)
    del P
    budget = 2 << 20
    es = EnsembleSelection(metric="roc", n_iter=5, n_bags=2, memory_budget=budget, random_state=0)
    tracemalloc.start()
    try:
        es.fit(mapped, y)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert es.streamed_
    # the in-memory path copies it to float64 and float32 (96 MB and more)
    assert peak < 4 * budget < mapped.nbytes / 2
    assert score("roc", y, es.predict_proba(mapped)) > 0.5


def test_memory_budget_is_checked():
    P, y = _library(np.random.default_rng(0), 5, 50)
    with pytest.raises(
        ValueError, match="'memory_budget' parameter of EnsembleSelection must be an int"
    ):
        EnsembleSelection(memory_budget=0).fit(P, y)
