"""ensel's matrix-product SVC decision equals scikit-learn's decision_function (libsvm's)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.svm import SVC

from ensel.library.families import svm


def data(n_classes: int, n: int = 240, d: int = 7, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.argmax(X[:, :n_classes] + rng.normal(scale=0.8, size=(n, n_classes)), axis=1)
    return X, y


KERNELS = [
    {"kernel": "rbf", "gamma": 0.3},
    {"kernel": "poly", "degree": 2, "gamma": 1.0, "coef0": 1.0},
    {"kernel": "poly", "degree": 3, "gamma": 1.0, "coef0": 1.0},
]


@pytest.mark.parametrize("n_classes", [2, 3, 5])
@pytest.mark.parametrize("kernel", KERNELS, ids=["rbf", "poly2", "poly3"])
@pytest.mark.parametrize("shape", ["ovr", "ovo"])
def test_decision_equals_libsvm(n_classes, kernel, shape, monkeypatch):
    X, y = data(n_classes)
    model = SVC(C=0.5, decision_function_shape=shape, max_iter=100_000, **kernel).fit(X, y)
    rows = np.random.default_rng(1).normal(size=(97, X.shape[1])) * 1.5
    monkeypatch.setattr(svm, "KERNEL_CELLS", 5 * len(model.support_vectors_))  # 5-row blocks
    expected = model.decision_function(rows)
    got = svm.decision(model, rows)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9)
    assert svm._dense_kernel(model, rows)


def test_a_sibling_that_saw_fewer_classes_and_the_fallbacks():
    X, y = data(4)
    keep = y != 2  # a fold without class 2: the SVC has 3 classes
    model = SVC(kernel="rbf", gamma=0.2).fit(X[keep], y[keep])
    np.testing.assert_allclose(svm.decision(model, X), model.decision_function(X), atol=1e-9)
    scaled = SVC(kernel="rbf", gamma="scale").fit(X, y)
    assert not svm._dense_kernel(scaled, X)  # gamma as a word: sklearn's own path
    assert not svm._dense_kernel(SVC(kernel="sigmoid", gamma=0.1).fit(X, y), X)
    np.testing.assert_allclose(svm._margins(scaled, X), scaled.decision_function(X))


def test_the_family_predicts_with_it(monkeypatch):
    X, y = data(3)
    run = svm.fit_svm(X, y, n_classes=3, params=svm.GRID, stages=None, random_state=0)
    before = run.predict(X)["none"]
    monkeypatch.setattr(svm, "decision", lambda model, X: model.decision_function(X) * 0.0)
    assert not np.allclose(run.predict(X)["none"], before)  # the family goes through decision


@pytest.mark.parametrize("kernel", ["rbf", "poly2"])
def test_svr_predicts_as_libsvm_through_decision(kernel, monkeypatch):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 6))
    y = 3.0 * X[:, 0] - X[:, 1] ** 2 + rng.normal(scale=0.3, size=300) + 10.0
    params = {**svm.GRID, "epsilon": 0.1, "kernel": kernel}
    run = svm.fit_svr(X, y, n_classes=1, params=params, stages=None, random_state=0)
    rows = rng.normal(size=(83, 6)) * 1.5
    monkeypatch.setattr(svm, "KERNEL_CELLS", 7 * len(run.model.support_vectors_))
    expected = run.scale.inverse(run.model.predict(rows))
    got = run.predict(rows)["none"]
    assert got.shape == (1, 83, 1)
    np.testing.assert_allclose(got[0, :, 0], expected, rtol=1e-9, atol=1e-9)
    monkeypatch.setattr(svm, "decision", lambda model, X: np.zeros(len(X)))
    assert np.allclose(run.predict(rows)["none"], run.scale.mean)  # it goes through decision


def test_a_linear_svr_keeps_liblinear():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 4))
    y = X @ np.array([1.0, -2.0, 0.5, 0.0]) + rng.normal(scale=0.1, size=200)
    params = {**svm.GRID, "epsilon": 0.1, "kernel": "linear"}
    run = svm.fit_svr(X, y, n_classes=1, params=params, stages=None, random_state=0)
    assert not svm._dense_kernel(run.model, X)
    np.testing.assert_allclose(
        run.predict(X)["none"][0, :, 0], run.scale.inverse(run.model.predict(X))
    )
