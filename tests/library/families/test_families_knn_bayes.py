"""KNN and naive Bayes families: valid probabilities, agreement with scikit-learn, and the
behaviour App. 4.B describes (all k from one query, lwa widths, Weka's three NB kinds)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from scipy.spatial.distance import pdist
from scipy.special import logsumexp
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier

from ensel.library.families import get_family
from ensel.library.families.bayes import _kernel_log_density, mdl_cut_points
from ensel.library.families.neighbors import gain_ratio_weights, paper_k_values


def _data(n=120, p=4, n_classes=2, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % n_classes
    X = rng.normal(size=(n, p)) + 0.8 * y[:, None]
    return X, y


def _fit(name, X, y, n_classes, stages=None, **params):
    family = get_family(name)
    full = {**family.params, **params}
    return family.fit(X, y, n_classes=n_classes, params=full, stages=stages, random_state=0)


KNN_SPECS = [
    {"metric": m, "weighting": w}
    for m in ("euclidean", "gain_ratio")
    for w in ("uniform", "distance", "lwa")
]
NB_SPECS = [{"kind": k} for k in ("normal", "kernel", "discretized")]


def _check_proba(p, n_stages, n, n_classes):
    assert p.shape == (n_stages, n, n_classes)
    assert p.dtype == np.float64
    assert np.all(np.isfinite(p)) and np.all(p >= 0)
    np.testing.assert_allclose(p.sum(axis=2), 1.0, atol=1e-12)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize(
    ("name", "params", "stages"),
    [("knn", s, (1, 5, 25, 500)) for s in KNN_SPECS] + [("naive_bayes", s, None) for s in NB_SPECS],
)
def test_probabilities_valid(name, params, stages, n_classes):
    X, y = _data(n_classes=n_classes)
    X[:, 1] = 3.0  # a constant feature must not crash anything
    X[:, 2] = np.round(X[:, 2])  # a few distinct values, like categorical codes
    run = _fit(name, X[:90], y[:90], n_classes + 1, stages, **params)  # one class never seen
    p = run.predict(X[90:])["none"]
    _check_proba(p, len(stages) if stages else 1, 30, n_classes + 1)
    assert np.all(p[..., n_classes] == 0)
    again = pickle.loads(pickle.dumps(run)).predict(X[90:])["none"]
    np.testing.assert_array_equal(again, p)


@pytest.mark.parametrize("weights", ["uniform", "distance"])
def test_knn_matches_sklearn(weights):
    X, y = _data(n=150, n_classes=3, seed=1)
    stages = (1, 3, 7, 40, 149, 1000)
    run = _fit("knn", X[:100], y[:100], 3, stages, weighting=weights)
    p = run.predict(X[100:])["none"]
    for s, k in enumerate(stages):
        ref = KNeighborsClassifier(n_neighbors=min(k, 100), weights=weights).fit(X[:100], y[:100])
        np.testing.assert_allclose(p[s], ref.predict_proba(X[100:]), atol=1e-10)


@pytest.mark.parametrize("metric", ["euclidean", "gain_ratio"])
@pytest.mark.parametrize("weighting", ["uniform", "distance", "lwa"])
def test_knn_one_neighbour_reproduces_training_labels(metric, weighting):
    X, y = _data(n=80, n_classes=3, seed=2)
    run = _fit("knn", X, y, 3, (1,), metric=metric, weighting=weighting)
    p = run.predict(X)["none"][0]
    np.testing.assert_array_equal(p.argmax(axis=1), y)
    if weighting != "lwa":
        np.testing.assert_allclose(p.max(axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("weighting", ["uniform", "distance"])
def test_knn_ties_break_by_training_index(weighting):
    rng = np.random.default_rng(10)
    X = rng.integers(0, 3, size=(200, 3)).astype(float)  # many tied distances
    y = rng.integers(0, 3, size=200)
    Q = rng.integers(0, 3, size=(40, 3)).astype(float)
    stages = (1, 2, 7, 30, 150, 200)
    p = _fit("knn", X, y, 3, stages, weighting=weighting).predict(Q)["none"]
    d = np.sqrt(((Q[:, None, :] - X[None, :, :]) ** 2).sum(axis=2))
    order = np.argsort(d, axis=1, kind="stable")
    w = np.ones_like(d) if weighting == "uniform" else 1.0 / np.maximum(d, 1e-6)
    for s, k in enumerate(stages):
        idx = order[:, :k]
        votes = np.zeros((40, 3))
        np.add.at(
            votes, (np.arange(40)[:, None].repeat(k, 1), y[idx]), np.take_along_axis(w, idx, 1)
        )
        np.testing.assert_allclose(p[s], votes / votes.sum(axis=1, keepdims=True), atol=1e-12)


def test_lwa_matches_direct_kernel_sums():
    X, y = _data(n=100, n_classes=3, seed=11)
    stages = (1, 2, 3, 4, 8, 16, 64, 1024)
    run = _fit("knn", X, y, 3, stages, weighting="lwa")
    assert run.unit == pytest.approx(pdist(X).min(), rel=1e-12)
    p = run.predict(X[:30] + 0.3)["none"]
    sq = ((X[:30, None, :] + 0.3 - X[None, :, :]) ** 2).sum(axis=2)
    sq -= sq.min(axis=1, keepdims=True)
    for s, m in enumerate(stages):
        k = np.exp(-sq / (2 * (m * run.unit) ** 2)) @ np.eye(3)[y]
        np.testing.assert_allclose(p[s], k / k.sum(axis=1, keepdims=True), rtol=1e-8, atol=1e-12)


def test_lwa_huge_width_tends_to_class_prior():
    X, y = _data(n=90, n_classes=3, seed=3)
    y[:10] = 0  # an unbalanced prior
    run = _fit("knn", X, y, 3, (1, 10**7), weighting="lwa")
    p = run.predict(X[:20])["none"]
    prior = np.bincount(y, minlength=3) / len(y)
    np.testing.assert_allclose(p[1], np.broadcast_to(prior, (20, 3)), atol=1e-6)
    assert np.abs(p[0] - prior).max() > 0.1  # the narrow width is local


def test_knn_validate_and_paper_values():
    family = get_family("knn")
    with pytest.raises(ValueError, match="stages"):
        family.validate(dict(family.params), None)
    with pytest.raises(ValueError, match=">= 1"):
        family.validate(dict(family.params), (0, 5))
    with pytest.raises(ValueError, match="weighting"):
        family.validate({"metric": "euclidean", "weighting": "tricube"}, (1,))
    ks = paper_k_values(1000)
    assert len(ks) == 26 and ks[0] == 1 and ks[-1] == 1000 and list(ks) == sorted(set(ks))
    assert paper_k_values(10) == tuple(range(1, 11))


def test_gain_ratio_weights_prefer_the_informative_feature():
    rng = np.random.default_rng(4)
    y = np.arange(200) % 2
    X = np.column_stack([y + 0.1 * rng.normal(size=200), rng.normal(size=200), np.ones(200)])
    w = gain_ratio_weights(X, y, 2)
    assert w[0] == pytest.approx(1.0) and 0 < w[1] < 0.2 and w[2] == 0


def test_mdl_finds_the_step_and_ignores_noise():
    rng = np.random.default_rng(5)
    x = rng.uniform(size=400)
    step = (x > 0.3).astype(int)
    cuts = mdl_cut_points(x, step, 2)
    assert len(cuts) == 1 and cuts[0] == pytest.approx(0.3, abs=0.01)
    assert len(mdl_cut_points(rng.normal(size=400), rng.integers(0, 2, size=400), 2)) == 0
    assert len(mdl_cut_points(np.ones(50), np.arange(50) % 2, 2)) == 0


def test_discretized_nb_uses_the_cut():
    rng = np.random.default_rng(6)
    X = np.column_stack([rng.uniform(size=300), rng.normal(size=300)])
    y = (X[:, 0] > 0.5).astype(int)
    p = _fit("naive_bayes", X, y, 2, kind="discretized").predict(X)["none"][0]
    assert np.mean(p.argmax(axis=1) == y) == 1.0


def test_normal_nb_matches_sklearn():
    X, y = _data(n=200, p=5, n_classes=3, seed=7)
    X *= np.array([1.0, 10.0, 0.1, 3.0, 1.0])
    counts = np.bincount(y[:150])
    ref = GaussianNB(priors=(counts + 1.0) / (150 + 3), var_smoothing=1e-12).fit(X[:150], y[:150])
    p = _fit("naive_bayes", X[:150], y[:150], 3, kind="normal").predict(X[150:])["none"][0]
    np.testing.assert_allclose(p, ref.predict_proba(X[150:]), atol=1e-8)


def test_kernel_log_density_is_exact_and_finite_far_away():
    rng = np.random.default_rng(9)
    v, counts = np.unique(np.round(rng.normal(size=3000), 2), return_counts=True)
    w = counts / counts.sum()
    queries = np.sort(np.concatenate([rng.normal(size=700) * 2, [-1e3, -40.0, 55.0, 1e4]]))
    sd = 0.05
    got = _kernel_log_density(queries, v, w, sd)
    z = (queries[:, None] - v[None, :]) / sd
    ref = logsumexp(-0.5 * z**2, b=w, axis=1) - np.log(sd) - 0.5 * np.log(2 * np.pi)
    with np.errstate(divide="ignore"):
        plain = np.log(np.exp(-0.5 * z**2) @ w)
    assert np.isinf(plain).any()  # far from every value the plain density underflows to 0
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-9)


def test_kernel_nb_beats_normal_on_bimodal_classes():
    rng = np.random.default_rng(8)
    n = 400
    y = np.arange(n) % 2
    modes = np.where(rng.random(n) < 0.5, -3.0, 3.0)
    x = np.where(y == 0, modes, 0.0) + 0.6 * rng.normal(size=n)
    X = x[:, None]

    def log_loss(kind):
        p = _fit("naive_bayes", X[:300], y[:300], 2, kind=kind).predict(X[300:])["none"][0]
        return -np.mean(np.log(np.clip(p[np.arange(100), y[300:]], 1e-15, None)))

    assert log_loss("kernel") < 0.5 * log_loss("normal")


def test_nb_rejects_bad_specs():
    family = get_family("naive_bayes")
    with pytest.raises(ValueError, match="kind"):
        family.validate({"kind": "multinomial"}, None)
    with pytest.raises(ValueError, match="no stages"):
        family.validate({"kind": "normal"}, (1,))
