"""Ensemble selection for numeric targets: the engine against a plain loop, the fast kernels
against exact scoring, and the invariants of tests/test_selection.py."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ensel._candidates as candidates
from ensel.metrics import REGRESSION_METRICS, greater_is_better, resolve_metric, score
from ensel.selection import EnsembleSelection
from ensel.synthetic import make_regression_library


def reference_selection(P, y, metric, n_iter, sorted_init=False, max_init=25, replacement=True):
    """Forward selection (§4.1-4.2) one candidate at a time with plain Python sums: returns the
    member counts of the best prefix (first candidate wins ties, as in the engine)."""
    sign = 1.0 if greater_is_better(metric) else -1.0
    M, N = P.shape

    def value(pred):
        errors = [pred[n] - y[n] for n in range(N)]
        if metric == "rmse":
            return -((sum(e * e for e in errors) / N) ** 0.5)
        if metric == "mae":
            return -sum(abs(e) for e in errors) / N
        mean = sum(y) / N
        return 1.0 - sum(e * e for e in errors) / sum((t - mean) ** 2 for t in y)

    assert sign == (1.0 if metric == "r2" else -1.0)
    history = []
    ensemble: list[int] = []
    total = np.zeros(N)
    if sorted_init:
        order = sorted(range(M), key=lambda m: -value(P[m]))
        best_n, best_val, running, sums = 0, -np.inf, np.zeros(N), []
        for n in range(1, min(max_init, M) + 1):
            running = running + P[order[n - 1]]
            sums.append(running)
            if value(running / n) > best_val:
                best_n, best_val = n, value(running / n)
        ensemble, total = order[:best_n], sums[best_n - 1]
        history.append((list(ensemble), best_val))
    for _ in range(n_iter):
        best_m, best_val = None, -np.inf
        for m in range(M):
            if not replacement and m in ensemble:
                continue
            val = value((total + P[m]) / (len(ensemble) + 1))
            if best_m is None or val > best_val:
                best_m, best_val = m, val
        if best_m is None:
            break
        ensemble.append(best_m)
        total = total + P[best_m]
        history.append((list(ensemble), best_val))
    best = max(range(len(history)), key=lambda i: (history[i][1], -i))
    return np.bincount(history[best][0], minlength=M)


@pytest.mark.parametrize("metric", REGRESSION_METRICS)
@pytest.mark.parametrize("sorted_init", [False, True])
def test_exact_engine_matches_reference_loop(metric, sorted_init):
    P, y = make_regression_library(n_members=20, n_samples=120, random_state=3)
    opts = {"n_iter": 12, "n_bags": 1, "sorted_init": sorted_init, "max_init": 6, "exact": True}
    es = EnsembleSelection(metric, **opts).fit(P, y)
    counts = reference_selection(P, y, metric, 12, sorted_init=sorted_init, max_init=6)
    np.testing.assert_allclose(es.weights_, counts / counts.sum())


@pytest.mark.parametrize("metric", REGRESSION_METRICS)
def test_without_replacement_matches_reference(metric):
    P, y = make_regression_library(n_members=10, n_samples=100, random_state=5)
    es = EnsembleSelection(metric, n_iter=20, n_bags=1, sorted_init=False, replacement=False)
    es.fit(P, y)
    counts = reference_selection(P, y, metric, 20, replacement=False)
    np.testing.assert_allclose(es.weights_, counts / counts.sum())
    assert len(es.trajectory_) == 10


@pytest.mark.parametrize("metric", REGRESSION_METRICS)
@pytest.mark.parametrize("offset", [0.0, 1e5])
def test_fast_path_selects_what_exact_selects(metric, offset):
    """Float32 kernels pick the members float64 picks, even for targets far from zero (the
    engine centres targets and predictions before converting)."""
    P, y = make_regression_library(n_members=80, n_samples=1500, random_state=6, offset=offset)
    opts = {"n_iter": 25, "n_bags": 1, "sorted_init": True, "max_init": 5}
    fast = EnsembleSelection(metric, exact=False, **opts).fit(P, y)
    exact = EnsembleSelection(metric, exact=True, **opts).fit(P, y)
    np.testing.assert_allclose(fast.weights_, exact.weights_)
    np.testing.assert_allclose(fast.trajectory_, exact.trajectory_, rtol=1e-5)
    assert fast.score_ == pytest.approx(exact.score_)


def test_fast_candidate_scores_track_exact_scores():
    P, y = make_regression_library(n_members=30, n_samples=500, random_state=2)
    S = P[:7].astype(np.float32).astype(np.float64).sum(axis=0)
    P32 = P.astype(np.float32).astype(np.float64)
    for name in REGRESSION_METRICS:
        m = resolve_metric(name)
        fast = candidates.fast_scorer(m, P, y)(S, 7)
        exact = candidates.exact_scorer(m, P32, y)(S, 7)
        np.testing.assert_allclose(fast, exact, rtol=1e-9, atol=1e-9, err_msg=name)


def test_numpy_fallback_without_numba(monkeypatch):
    P, y = make_regression_library(n_members=20, n_samples=200, random_state=1)
    opts = {"n_iter": 10, "n_bags": 1}
    expected = EnsembleSelection("mae", exact=True, **opts).fit(P, y).weights_
    monkeypatch.setattr(candidates, "_kernels", None)
    got = EnsembleSelection("mae", exact=False, **opts).fit(P, y).weights_
    np.testing.assert_allclose(got, expected)


def test_streamed_selection_equals_in_memory():
    P, y = make_regression_library(n_members=40, n_samples=300, random_state=4, offset=50.0)
    opts = {"n_iter": 15, "n_bags": 3, "random_state": 0}
    whole = EnsembleSelection("rmse", **opts).fit(P, y)
    streamed = EnsembleSelection("rmse", memory_budget=P[0].nbytes * 8, **opts).fit(P, y)
    assert streamed.streamed_ and not whole.streamed_
    np.testing.assert_allclose(streamed.weights_, whole.weights_)


def test_custom_regression_metric_matches_builtin():
    P, y = make_regression_library(n_members=20, n_samples=200, random_state=7)

    def neg_mse(y_true, pred):
        return -float(np.mean((pred - y_true) ** 2))

    from ensel.metrics import make_metric

    custom = make_metric(neg_mse, task="regression")
    a = EnsembleSelection(custom, n_iter=8, n_bags=1).fit(P, y)
    b = EnsembleSelection("rmse", n_iter=8, n_bags=1).fit(P, y)
    np.testing.assert_allclose(a.weights_, b.weights_)


def test_ensemble_beats_best_member_and_predicts():
    P, y = make_regression_library(n_members=40, n_samples=400, random_state=8)
    es = EnsembleSelection("rmse", n_iter=30, random_state=0).fit(P, y)
    assert es.score_ < es.member_scores_.min()
    np.testing.assert_allclose(es.predict(P), np.tensordot(es.weights_, P, axes=1))
    assert es.score_ == pytest.approx(score("rmse", y, es.predict(P)))


@st.composite
def libraries(draw):
    n_members = draw(st.integers(1, 8))
    n_samples = draw(st.integers(3, 40))
    rng = np.random.default_rng(draw(st.integers(0, 10_000)))
    y = rng.normal(0, 1, n_samples) * draw(st.sampled_from([1.0, 1e3]))
    P = y + rng.normal(0, 1, (n_members, n_samples)) * np.abs(y).mean()
    return P, y


@settings(max_examples=40, deadline=None)
@given(
    libraries(),
    st.sampled_from(REGRESSION_METRICS),
    st.booleans(),
    st.booleans(),
    st.integers(1, 3),
    st.integers(0, 99),
)
def test_selection_invariants(lib, metric, replacement, sorted_init, n_bags, seed):
    P, y = lib
    opts = {
        "n_iter": 6,
        "replacement": replacement,
        "sorted_init": sorted_init,
        "n_bags": n_bags,
        "random_state": seed,
    }
    es = EnsembleSelection(metric, **opts).fit(P, y)
    assert np.all(es.weights_ >= 0)
    assert es.weights_.sum() == pytest.approx(1.0)
    again = EnsembleSelection(metric, **opts).fit(P, y)
    np.testing.assert_array_equal(es.weights_, again.weights_)
    assert es.score_ == pytest.approx(score(metric, y, es.predict(P)))
    if n_bags == 1:
        best = np.nanmax(es.trajectory_) if greater_is_better(metric) else np.nanmin(es.trajectory_)
        assert es.score_ == pytest.approx(best, rel=1e-5, abs=1e-9)


@pytest.mark.parametrize(
    ("P", "y", "message"),
    [
        (np.zeros((0, 4)), [0.5, 1, 2, 3], "library is empty"),
        (np.ones((2, 4)), [0.5, 1, 2], "4 samples per member but y has 3 targets"),
        (np.array([[0.1, np.nan, 3.0, 4.0]]), [0.5, 1, 2, 3], "NaN or infinite"),
        (np.ones((2, 4)), [0.5, np.inf, 2, 3], "y contains NaN or infinite"),
        (np.ones((2, 4, 2)), [0.5, 1, 2, 3], r"\(n_members, n_samples\)"),
    ],
)
def test_bad_input_messages(P, y, message):
    with pytest.raises(ValueError, match=message):
        EnsembleSelection("rmse").fit(P, y)


def test_predictions_outside_unit_interval_are_fine():
    P = np.array([[10.0, 20.0, 30.0], [12.0, 18.0, 33.0]])
    y = np.array([11.0, 19.0, 31.0])
    es = EnsembleSelection("mae", n_iter=3, n_bags=1).fit(P, y)
    assert es.predict(P).shape == (3,)
