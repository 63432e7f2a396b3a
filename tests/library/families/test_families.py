"""Classification families beyond the shared contract (test_family_contract.py): a training fold
without one class, and AdaBoost's stages and perfect learners."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification

from ensel.library.families import FAMILIES, missing_requirements


def _data(n_classes: int, seed: int = 0):
    X, y = make_classification(
        n_samples=240,
        n_features=6,
        n_informative=4,
        n_redundant=0,
        n_classes=n_classes,
        random_state=seed,
    )
    return X, y


def _fit(family, X, y, n_classes, stages=None, seed=0):
    params = {**family.params, **family.test_params}
    stages = stages if stages is not None else family.test_stages
    return family.fit(X, y, n_classes=n_classes, params=params, stages=stages, random_state=seed)


def _available(name):
    family = FAMILIES[name]
    if missing_requirements(family):
        pytest.skip(f"{name} needs {missing_requirements(family)}")
    return family


def test_adaboost_stage_8_equals_n_estimators_8_in_sklearn_terms():
    family = FAMILIES["adaboost"]
    X, y = _data(2, seed=2)
    run = _fit(family, X, y, 2, stages=(8, 64))
    assert len(run.estimators) <= 64
    alone = _fit(family, X, y, 2, stages=(8,))
    assert len(alone.estimators) == 8
    for a, b in zip(run.estimators[:8], alone.estimators, strict=True):
        np.testing.assert_array_equal(a.predict(X), b.predict(X))


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_family_handles_a_fold_without_one_class(name):
    family = _available(name)
    X, y = _data(3, seed=4)
    keep = y != 1  # the middle class is missing: columns must still be placed by label
    out = _fit(family, X[keep], y[keep], 3).predict(X)["none"]
    assert out.shape[-1] == 3
    np.testing.assert_allclose(out.sum(axis=-1), 1.0, atol=1e-9)
    assert out[..., 1].mean() < 0.15  # only smoothing puts mass on the unseen class
    assert out[..., 2].mean() > 0.2  # the last class keeps its own column


def test_adaboost_with_a_perfect_first_learner_predicts_zero_or_one():
    # one stump separates the classes: alpha is infinite, boosting stops after it, and both the
    # logistic correction and the vote share are 0/1 (they were 0.73 / 1 with alpha recorded as 1)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] > 0.1).astype(int)
    run = _fit(FAMILIES["adaboost"], X, y, 2, stages=(1, 4))
    assert len(run.estimators) == 1
    out = run.predict(X)
    for variant in ("none", "logistic"):
        np.testing.assert_array_equal(out[variant][..., 1], np.broadcast_to(y, (2, 200)))


# ------------------------------------------------------------------ missing values
