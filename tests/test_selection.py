from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ensel._candidates as candidates
from ensel.metrics import METRICS, greater_is_better, resolve_metric, score
from ensel.selection import EnsembleSelection
from ensel.synthetic import make_library


def reference_selection(P, y, metric, n_iter, sorted_init=False, max_init=25, replacement=True):
    """Forward selection as written in §4.1-4.2, one candidate at a time, no tricks.

    Returns the member counts of the best prefix. The running sum is kept in the same order as
    the engine keeps it, so exact ties resolve identically (first member wins).
    """
    sign = 1.0 if greater_is_better(metric) else -1.0
    M = len(P)
    history = []
    ensemble: list[int] = []
    total = np.zeros(P.shape[1:])
    if sorted_init:
        alone = [sign * score(metric, y, P[m]) for m in range(M)]
        order = sorted(range(M), key=lambda m: -alone[m])
        best_n, best_val, running = 0, -np.inf, np.zeros(P.shape[1:])
        sums = []
        for n in range(1, min(max_init, M) + 1):
            running = running + P[order[n - 1]]
            sums.append(running)
            val = sign * score(metric, y, running / n)
            if val > best_val:
                best_n, best_val = n, val
        ensemble = order[:best_n]
        total = sums[best_n - 1]
        history.append((list(ensemble), best_val))
    for _ in range(n_iter):
        best_m, best_val = None, -np.inf
        for m in range(M):
            if not replacement and m in ensemble:
                continue
            val = sign * score(metric, y, (total + P[m]) / (len(ensemble) + 1))
            if best_m is None or val > best_val:
                best_m, best_val = m, val
        if best_m is None:
            break
        ensemble.append(best_m)
        total = total + P[best_m]
        history.append((list(ensemble), best_val))
    best = max(range(len(history)), key=lambda i: (history[i][1], -i))
    return np.bincount(history[best][0], minlength=M)


def single_run(metric, **kw):
    opts = {"n_iter": 12, "n_bags": 1, "sorted_init": False, "exact": True} | kw
    return EnsembleSelection(metric, **opts)


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("sorted_init", [False, True])
def test_exact_engine_matches_reference_loop(metric, sorted_init):
    P, y = make_library(n_members=25, n_samples=150, random_state=3)
    es = single_run(metric, sorted_init=sorted_init, max_init=6).fit(P, y)
    counts = reference_selection(P, y, metric, 12, sorted_init=sorted_init, max_init=6)
    np.testing.assert_allclose(es.weights_, counts / counts.sum())


@pytest.mark.parametrize("metric", ["acc", "roc", "mxe", "fsc"])
def test_exact_engine_matches_reference_loop_multiclass(metric):
    P, y = make_library(n_members=15, n_samples=120, n_classes=3, random_state=4)
    es = single_run(metric, n_iter=8).fit(P, y)
    counts = reference_selection(P, y, metric, 8)
    np.testing.assert_allclose(es.weights_, counts / counts.sum())


def test_without_replacement_matches_reference_and_uses_each_member_once():
    P, y = make_library(n_members=10, n_samples=150, random_state=5)
    es = single_run("rms", n_iter=20, replacement=False).fit(P, y)
    counts = reference_selection(P, y, "rms", 20, replacement=False)
    np.testing.assert_allclose(es.weights_, counts / counts.sum())
    assert len(es.trajectory_) == 10  # stops when the library is used up
    assert np.all(es.weights_ * counts.sum() <= 1 + 1e-12)


def fast_and_exact(metric, P, y, **opts):
    """The same single-bag selection fitted on the fast path and in exact mode."""
    fast = EnsembleSelection(metric, n_bags=1, exact=False, **opts).fit(P, y)
    exact = EnsembleSelection(metric, n_bags=1, exact=True, **opts).fit(P, y)
    return fast, exact


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("n_classes", [2, 3])
def test_fast_path_selects_what_exact_sorting_selects(metric, n_classes):
    """Float32 and quantised rank levels do not change a selection decision here: realistic
    libraries with strong, weak, correlated and coarse (heavily tied) members."""
    P, y = make_library(n_members=80, n_samples=1500, n_classes=n_classes, random_state=6)
    fast, exact = fast_and_exact(metric, P, y, n_iter=25, sorted_init=True, max_init=5)
    np.testing.assert_allclose(fast.weights_, exact.weights_)


@pytest.mark.parametrize("metric", ["roc", "apr", "mxe", "acc"])
def test_fast_path_without_replacement_selects_what_exact_selects(metric):
    """Once the best candidates are used up, the pick must still rest on exact scores."""
    P, y = make_library(n_members=30, n_samples=1500, random_state=8)
    fast, exact = fast_and_exact(metric, P, y, n_iter=30, sorted_init=False, replacement=False)
    np.testing.assert_array_equal(fast.order_, exact.order_)


@pytest.mark.parametrize("metric", ["roc", "lft", "mxe", "fsc"])
def test_fast_trajectory_is_the_exact_score_of_each_prefix(metric):
    P, y = make_library(n_members=40, n_samples=800, random_state=9)
    es = EnsembleSelection(metric, n_iter=10, n_bags=1, sorted_init=False).fit(P, y)
    P32 = P.astype(np.float32).astype(np.float64)
    for i, value in enumerate(es.trajectory_):
        members = es.order_[: i + 1]
        assert value == pytest.approx(score(metric, y, P32[members].mean(axis=0)), abs=1e-12)


def test_fast_candidate_scores_track_exact_scores(binary_library):
    P, y = binary_library
    S = P[:7].astype(np.float32).astype(np.float64).sum(axis=0)
    P32 = P.astype(np.float32).astype(np.float64)
    for name in METRICS:
        m = resolve_metric(name)
        fast = candidates.fast_scorer(m, P, y)(S, 7)
        exact = candidates.exact_scorer(m, P32, y)(S, 7)
        if not candidates.quantised(m):
            np.testing.assert_allclose(fast, exact, atol=1e-9, err_msg=name)
            continue
        # rank kernels: exact scores lie within the kernel's bounds; the scorer's best
        # candidate and its score are the exact ones, the others are no higher than exact
        _, low, high = candidates._approx(m, P.astype(np.float32), y)(S, 7)
        assert np.all(low <= exact + 1e-12) and np.all(exact <= high + 1e-12), name
        assert np.argmax(fast) == np.argmax(exact) and fast.max() == exact.max()
        assert np.all(fast <= exact.max())


def crowded_library(n_members: int, n_samples: int, seed: int):
    """Predictions that float32 holds exactly (multiples of 2^-12) packed into [0.35, 0.65]:
    with the kernels' levels over [0, 1], each level holds several cases."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n_samples)
    signal = 0.04 * (y - 0.5)
    strength = rng.uniform(0.2, 1.5, (n_members, 1))
    raw = 0.5 + strength * signal + rng.normal(0.0, 0.05, (n_members, n_samples))
    return np.round(np.clip(raw, 0.35, 0.65) * 4096) / 4096, y


@pytest.mark.parametrize("metric", ["lft", "roc", "bep", "apr"])
def test_every_rank_pick_rests_on_exact_scores_when_levels_hold_several_cases(metric):
    """LFT included: candidates are scored exactly until no bound can beat the best, so the
    fast path and exact sorting select the same weights even where each score level holds
    several cases of both classes."""
    P, y = crowded_library(30, 20_000, seed=3)
    n_bins = candidates.rank_bins(len(y), candidates.RANK_KERNELS[metric])
    levels = np.floor(P[0] * n_bins)
    assert len(y) / len(np.unique(levels)) > 5  # several cases per level
    fast, exact = fast_and_exact(metric, P, y, n_iter=12, sorted_init=False)
    np.testing.assert_array_equal(fast.order_, exact.order_)
    np.testing.assert_array_equal(fast.trajectory_, exact.trajectory_)


@pytest.mark.parametrize("metric", ["lft", "roc", "bep", "apr"])
def test_rank_bounds_hold_and_compiled_exact_scores_match_numpy(metric, binary_library):
    m = resolve_metric(metric)
    for P, y in (binary_library, crowded_library(40, 3000, seed=4)):
        P32 = np.ascontiguousarray(P, dtype=np.float32)
        S = P32[:5].astype(np.float64).sum(axis=0)
        exact = candidates.exact_scorer(m, P32, y).rows(S, 5, np.arange(len(P)))
        compiled = candidates._exact_rows(m, P32, y)(S, 5, np.arange(len(P)))
        np.testing.assert_array_equal(compiled, exact)  # the same float64 numbers
        _, low, high = candidates._approx(m, P32, y)(S, 5)
        assert np.all(low <= exact + 1e-12) and np.all(exact <= high + 1e-12)


@pytest.mark.parametrize("metric", ["roc", "apr"])
def test_rank_kernel_estimate_is_the_exact_score_of_the_levels(metric):
    """The binned kernels' estimate is the exact score of the quantised levels (each level one
    tie group): the one-pass APR maximum and ROC's pair count must agree with sorting."""
    m = resolve_metric(metric)
    P, y = crowded_library(40, 3000, seed=4)
    P32 = np.ascontiguousarray(P, dtype=np.float32)
    S = P32[:5].astype(np.float64).sum(axis=0)
    estimate, _, _ = candidates._approx(m, P32, y)(S, 5)
    n_bins = candidates.rank_bins(len(y), candidates.RANK_KERNELS[metric])
    levels = np.minimum(np.floor((S + P32.astype(np.float64)) / 6.0 * n_bins), n_bins - 1)
    expected = [score(metric, y, level / n_bins) for level in levels]
    np.testing.assert_allclose(estimate, expected, rtol=0, atol=1e-12)


def test_rank_levels_are_powers_of_two_within_their_caps():
    assert candidates.rank_bins(5000, 0) == 4096 and candidates.rank_bins(5000, 2) == 2048
    assert candidates.rank_bins(1000, 0) == 1024 and candidates.rank_bins(1000, 1) == 512
    assert candidates.rank_bins(10**6, 0) == candidates.RANK_BINS
    assert candidates.rank_bins(10**6, 1) == candidates.RANK_BINS // 2
    assert candidates.rank_bins(10, 2) == 64


def test_numpy_fallback_without_numba(monkeypatch, binary_library):
    P, y = binary_library
    expected = single_run("roc").fit(P, y).weights_
    monkeypatch.setattr(candidates, "_kernels", None)
    got = single_run("roc", exact=False).fit(P, y).weights_
    np.testing.assert_allclose(got, expected)


def test_best_prefix_is_returned(binary_library):
    P, y = binary_library
    es = single_run("rms", n_iter=40, replacement=False).fit(P, y)
    assert es.score_ == pytest.approx(np.min(es.trajectory_))
    assert np.argmin(es.trajectory_) < len(es.trajectory_) - 1  # it did peak and decline
    assert es.score_ == pytest.approx(score("rms", y, es.predict_proba(P)))


def test_order_records_every_addition(binary_library):
    P, y = binary_library
    es = single_run("mxe", n_iter=15, sorted_init=True, max_init=5).fit(P, y)
    n_init = len(es.order_) - 15
    assert 1 <= n_init <= 5
    best = int(np.argmin(es.trajectory_))
    counts = np.bincount(es.order_[: n_init + best], minlength=len(P))
    np.testing.assert_allclose(es.weights_, counts / counts.sum())


def test_sorted_init_seeds_with_best_members(binary_library):
    P, y = binary_library
    es = single_run("roc", n_iter=1, sorted_init=True, max_init=10).fit(P, y)
    best = np.argsort(-es.member_scores_, kind="stable")[:10]
    top_n = [score("roc", y, P[best[:n]].mean(axis=0)) for n in range(1, 11)]
    assert es.trajectory_.shape == (2,)
    assert es.trajectory_[0] == pytest.approx(max(top_n))  # N chosen on the hillclimb set
    assert len(set(np.flatnonzero(es.weights_)) - set(best)) <= 1  # plus one greedy step


def test_bagging_averages_bags_and_is_seeded(binary_library):
    P, y = binary_library
    a = EnsembleSelection("roc", n_iter=10, n_bags=5, random_state=7).fit(P, y)
    b = EnsembleSelection("roc", n_iter=10, n_bags=5, random_state=7).fit(P, y)
    c = EnsembleSelection("roc", n_iter=10, n_bags=5, random_state=8).fit(P, y)
    np.testing.assert_array_equal(a.weights_, b.weights_)
    np.testing.assert_array_equal(a.trajectory_, b.trajectory_)
    assert not np.array_equal(a.weights_, c.weights_)
    np.testing.assert_allclose(a.weights_, a.bag_weights_.mean(axis=0))
    assert a.trajectory_.shape[0] == 5
    for bag in a.bag_weights_:  # each bag chose only from its half of the library
        assert np.count_nonzero(bag) <= 30


def test_pruning_keeps_only_the_best_members(binary_library):
    P, y = binary_library
    es = EnsembleSelection("rms", n_iter=20, n_bags=3, prune_fraction=0.2, random_state=0)
    es.fit(P, y)
    allowed = set(np.argsort(es.member_scores_, kind="stable")[:12])  # rms: lower is better
    assert set(np.flatnonzero(es.weights_)) <= allowed


def test_custom_metric_callable(binary_library):
    P, y = binary_library

    def neg_brier(y_true, proba):
        return -float(np.mean((proba - y_true) ** 2))

    custom = single_run(neg_brier, n_iter=6, exact=False).fit(P, y)
    builtin = single_run("rms", n_iter=6).fit(P, y)
    np.testing.assert_allclose(custom.weights_, builtin.weights_)


def test_multiclass_predict_proba_layout(multiclass_library):
    P, y = multiclass_library
    es = EnsembleSelection("mxe", n_iter=10, n_bags=2, random_state=0).fit(P, y)
    proba = es.predict_proba(P)
    assert proba.shape == (P.shape[1], 3)
    np.testing.assert_allclose(proba, np.tensordot(es.weights_, P, axes=1))


def test_two_column_binary_is_read_as_positive_class(binary_library):
    P, y = binary_library
    both = np.stack([1 - P, P], axis=2)
    a = single_run("roc").fit(P, y)
    b = single_run("roc").fit(both, y)
    np.testing.assert_allclose(a.weights_, b.weights_)
    assert b.predict_proba(both).shape == (P.shape[1], 2)


@st.composite
def libraries(draw):
    n_members = draw(st.integers(1, 8))
    n_samples = draw(st.integers(6, 40))
    seed = draw(st.integers(0, 10_000))
    rng = np.random.default_rng(seed)
    y = np.r_[0, 1, rng.integers(0, 2, n_samples - 2)]
    P = rng.random((n_members, n_samples))
    return P, y


@settings(max_examples=40, deadline=None)
@given(
    libraries(),
    st.sampled_from(METRICS),
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
    assert es.score_ == pytest.approx(score(metric, y, es.predict_proba(P)))
    if n_bags == 1:
        best = np.nanmax(es.trajectory_) if greater_is_better(metric) else np.nanmin(es.trajectory_)
        assert es.score_ == pytest.approx(best)


@pytest.mark.parametrize(
    ("P", "y", "kwargs", "message"),
    [
        (np.zeros((0, 4)), [0, 1, 0, 1], {}, "library is empty"),
        (np.full((2, 4), 0.5), [0, 1, 0], {}, "4 samples per member but y has 3"),
        (np.array([[0.1, np.nan, 0.3, 0.4]]), [0, 1, 0, 1], {}, "NaN or infinite"),
        (np.array([[0.1, 1.2, 0.3, 0.4]]), [0, 1, 0, 1], {}, r"probabilities in \[0, 1\]"),
        (np.full((2, 4), 0.5), [1, 1, 1, 1], {}, "single class"),
        (np.full((2, 4), 0.5), [0, 1, 0, 1], {"metric": "auc"}, "unknown metric 'auc'"),
        (np.full((2, 4), 0.5), [0, 1, 0, 1], {"n_iter": 0}, r"'n_iter' .* \[1, inf\)"),
        (
            np.full((2, 4), 0.5),
            [0, 1, 0, 1],
            {"bag_fraction": 0},
            r"'bag_fraction' .* \(0.0, 1.0\]",
        ),
        (np.full(4, 0.5), [0, 1, 0, 1], {}, "n_members, n_samples"),
    ],
)
def test_bad_input_messages(P, y, kwargs, message):
    with pytest.raises(ValueError, match=message):
        EnsembleSelection(**kwargs).fit(P, y)


def test_predict_proba_checks_layout(binary_library):
    P, y = binary_library
    es = single_run("rms").fit(P, y)
    with pytest.raises(ValueError, match="shape"):
        es.predict_proba(P[:-1])
    with pytest.raises(AttributeError, match="not fitted"):
        EnsembleSelection().predict_proba(P)


def test_predict_proba_stays_in_unit_interval_where_every_member_says_one():
    """Bag weights sum to one only up to rounding: averaging members that all predict 1.0 gave
    1.0000000000000002, which ``score`` refused as not a probability."""
    rng = np.random.default_rng(0)
    for seed in range(5):
        y = rng.integers(0, 2, 60)
        y[:2] = [0, 1]
        P = np.clip(y + rng.normal(0, 0.6, (12, 60)), 0.0, 1.0)
        P[:, 0] = 1.0
        es = EnsembleSelection(metric="rms", n_bags=5, random_state=seed).fit(P, y)
        proba = es.predict_proba(P)
        assert proba.max() <= 1.0
        score("mxe", y, proba)  # accepted as probabilities
