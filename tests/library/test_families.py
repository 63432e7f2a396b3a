"""One contract suite over every registered family: valid probabilities for two and three
classes, staged members equal to separately trained runs, determinism, a missing class."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification

from ensel.library.families import FAMILIES, missing_requirements
from ensel.library.runs import predict_stages


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


@pytest.mark.parametrize("name", sorted(FAMILIES))
@pytest.mark.parametrize("n_classes", [2, 3])
def test_family_yields_valid_probabilities(name, n_classes):
    family = _available(name)
    X, y = _data(n_classes)
    out = _fit(family, X[:180], y[:180], n_classes).predict(X[180:])
    n_stages = len(family.test_stages or (None,))
    assert set(out) == {"none", *family.variants}
    for variant, p in out.items():
        assert p.shape == (n_stages, 60, n_classes), variant
        assert np.isfinite(p).all() and (p >= 0).all() and (p <= 1 + 1e-12).all()
        np.testing.assert_allclose(p.sum(axis=-1), 1.0, atol=1e-9)
    # the best stage learns something: better than the class prior in accuracy
    acc = max((p.argmax(-1) == y[180:]).mean() for p in out["none"])
    assert acc > np.bincount(y[180:]).max() / 60


@pytest.mark.parametrize("name", sorted(n for n, f in FAMILIES.items() if f.stages))
def test_staged_member_equals_separately_trained_run(name):
    family = _available(name)
    X, y = _data(2, seed=1)
    stages = family.test_stages
    many = _fit(family, X[:180], y[:180], 2, stages=stages).predict(X[180:])["none"]
    for i, s in enumerate(stages[:-1]):
        alone = _fit(family, X[:180], y[:180], 2, stages=(s,)).predict(X[180:])["none"]
        np.testing.assert_allclose(many[i], alone[0], atol=1e-6, err_msg=f"{name} stage {s}")


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
def test_family_is_deterministic_by_seed(name):
    family = _available(name)
    X, y = _data(2, seed=3)
    a = _fit(family, X, y, 2, seed=5).predict(X)["none"]
    b = _fit(family, X, y, 2, seed=5).predict(X)["none"]
    np.testing.assert_array_equal(a, b)


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


def _messy(n_classes: int, n: int = 300, seed: int = 0):
    """Numeric and categorical columns with missing cells; the label depends on both, and on
    whether ``a`` is missing (missingness that carries information)."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=n), rng.normal(size=n)
    colour = rng.choice(["red", "green", "blue"], size=n).astype(object)
    score = a + b + (colour == "red")
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    frame = pd.DataFrame({"a": a, "b": b, "c": rng.normal(size=n), "colour": colour})
    frame.loc[rng.random(n) < 0.25, "a"] = np.nan
    frame.loc[rng.random(n) < 0.1, "colour"] = None
    return frame, y


@pytest.mark.parametrize("name", sorted(FAMILIES))
@pytest.mark.parametrize("n_classes", [2, 3])
def test_family_takes_missing_values_through_its_view(name, n_classes):
    """Every family fits and predicts on data with NaN in numeric and categorical columns,
    also where a column had no missing cell in training: natively (NaN reaches the fit
    function) or through its imputing view (no NaN reaches it)."""
    from ensel.data import Columns
    from ensel.library.views import make_view

    family = _available(name)
    frame, y = _messy(n_classes)
    train, test = frame.iloc[:220], frame.iloc[220:].copy()
    test.loc[test.index[:5], "c"] = np.nan  # never missing in training
    view = make_view(family.view, Columns.infer(frame), family.native_missing).fit(train)
    Z = view.transform(train)
    assert np.isnan(Z).any() == family.native_missing
    params = {**family.params, **family.test_params}
    run = family.fit(
        Z, y[:220], n_classes=n_classes, params=params, stages=family.test_stages, random_state=0
    )
    for variant, p in run.predict(view.transform(test)).items():
        assert p.shape[-2:] == (80, n_classes), variant
        assert np.isfinite(p).all()
        np.testing.assert_allclose(p.sum(axis=-1), 1.0, atol=1e-9)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_predicting_some_stages_equals_slicing_all(name):
    """``predict(X, stages=idx)`` computes only the stages asked for, in the order asked,
    and gives what predicting every stage and slicing gives (issue 15: only kept members)."""
    family = _available(name)
    X, y = _data(2, seed=2)
    run = _fit(family, X[:180], y[:180], 2)
    every = run.predict(X[180:])
    n_stages = len(family.test_stages or (None,))
    for idx in ([n_stages - 1], [0], list(range(n_stages))[::-1]):
        some = predict_stages(run, X[180:], idx)  # the run's own, or every stage sliced
        assert set(some) == set(every)
        for variant in every:
            np.testing.assert_allclose(some[variant], every[variant][idx], atol=1e-12)
