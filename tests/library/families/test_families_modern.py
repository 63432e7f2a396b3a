"""The modern families (hist_gbdt, extra_trees, tabular_mlp, and the native-categorical xgboost
and lightgbm): categorical columns split or embedded natively, missing values taken as they
are, unseen categories tolerated, the numpy forward pass of the tabular net equal to torch's,
and the builder handing categorical columns to the families that ask for them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ensel.library import build_library
from ensel.library.families import FAMILIES, get_family, missing_requirements

CATEGORICAL = sorted(n for n, f in FAMILIES.items() if f.categorical)


def _categorical_data(n=600, seed=0):
    """Two numeric columns and one categorical column (codes 0..5) that carries the signal
    non-monotonically: categories 1 and 4 are positive. Columns 0-1 numeric, 2 categorical."""
    rng = np.random.default_rng(seed)
    num = rng.normal(size=(n, 2))
    cat = rng.integers(0, 6, n)
    logit = 0.5 * num[:, 0] + np.where(np.isin(cat, [1, 4]), 2.5, -2.5)
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    return np.column_stack([num, cat]).astype(np.float64), y


def _fit(name, X, y, n_classes=2, **kw):
    family = get_family(name)
    if missing_requirements(family):
        pytest.skip(f"{name} needs {missing_requirements(family)}")
    params = {**family.params, **family.test_params}
    stages = kw.pop("stages", family.test_stages)
    return family.fit(X, y, n_classes=n_classes, params=params, stages=stages, random_state=0, **kw)


def test_the_modern_families_are_registered_with_categorical_support():
    for name in ("hist_gbdt", "xgboost", "lightgbm", "tabular_mlp"):
        assert name in CATEGORICAL
    assert "extra_trees" in FAMILIES


@pytest.mark.parametrize("name", CATEGORICAL)
def test_native_categorical_learns_a_non_monotone_category_effect(name):
    X, y = _categorical_data()
    stages = (64,) if name != "tabular_mlp" else (14,)
    run = _fit(name, X[:400], y[:400], categorical={2: 6}, stages=stages)
    p = run.predict(X[400:])["none"][-1, :, 1]
    acc = ((p > 0.5) == y[400:]).mean()
    assert acc > 0.8, f"{name}: accuracy {acc:.3f} with the category as a category"


@pytest.mark.parametrize("name", CATEGORICAL)
def test_missing_values_and_unseen_categories_are_taken_natively(name):
    X, y = _categorical_data(seed=1)
    rng = np.random.default_rng(2)
    X[rng.random(X.shape) < 0.1] = np.nan
    run = _fit(name, X[:400], y[:400], categorical={2: 6})
    X_new = X[400:].copy()
    X_new[:20, 2] = -1  # a category the view never saw
    p = run.predict(X_new)["none"]
    assert np.isfinite(p).all()
    np.testing.assert_allclose(p.sum(axis=-1), 1.0, atol=1e-9)


def test_extra_trees_take_missing_values():
    X, y = _categorical_data(seed=3)
    X[np.random.default_rng(4).random(X.shape) < 0.1] = np.nan
    p = _fit("extra_trees", X[:400], y[:400]).predict(X[400:])["none"]
    assert np.isfinite(p).all()


def test_hist_gbdt_splits_many_category_columns_as_codes():
    from ensel.library.families.hist_gbdt import MAX_BINS, categorical_mask

    mask = categorical_mask(4, {2: 6, 3: MAX_BINS + 1})
    assert mask.tolist() == [False, False, True, False]


def test_tabular_mlp_numpy_forward_equals_torch():
    torch = pytest.importorskip("torch")
    from ensel.library.families.tabular_mlp import _build

    X, y = _categorical_data(seed=5)
    X[::7, 0] = np.nan
    family = get_family("tabular_mlp")
    params = {**family.params, **family.test_params}
    run = _fit("tabular_mlp", X, y, categorical={2: 6}, stages=(3,))
    snap = run.snapshots[0]
    embeddings, body = _build(torch, run.prep, params, 2)
    with torch.no_grad():
        for e, table in zip(embeddings, snap.embeddings, strict=True):
            e.weight.copy_(torch.from_numpy(table))
        linear = [m for m in body if hasattr(m, "weight")]
        for m, (w, b) in zip(linear, snap.layers, strict=True):
            m.weight.copy_(torch.from_numpy(w))
            m.bias.copy_(torch.from_numpy(b))
        body.eval()
        numeric, index = run.prep.transform(X)
        parts = [torch.from_numpy(numeric)] + [
            e(torch.from_numpy(index[:, j])) for j, e in enumerate(embeddings)
        ]
        expected = torch.softmax(body(torch.cat(parts, 1)), 1).double().numpy()
    np.testing.assert_allclose(run.predict(X)["none"][0], expected, atol=1e-5)


def test_builder_hands_categorical_columns_to_the_families_that_split_them():
    X, y = _categorical_data(n=400, seed=6)
    frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "c": [f"k{int(v)}" for v in X[:, 2]]})
    spec = {
        "families": [
            {"family": "hist_gbdt", "params": {"max_leaf_nodes": 7}, "stages": [8, 32]},
            {"family": "extra_trees", "stages": [8]},
        ]
    }
    lib = build_library(frame, y, spec=spec, cv=3, verbose=0)
    assert len(lib.members) == 3
    assert set(lib.members["family"]) == {"hist_gbdt", "extra_trees"}
    fitted = lib._fitted(lib.members["run"].iloc[0])
    model = fitted.siblings[0][1].model
    assert model.is_categorical_.tolist() == [False, False, True]
    p = lib.predict(frame.iloc[:10])
    assert p.shape == (3, 10)
