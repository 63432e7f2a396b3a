"""Regression libraries: specs with ``task: regression``, plain and grouped folds for a real
target, out-of-fold hillclimb predictions, the store (resume, refusal of other data), test-time
averages of siblings, and detectors without labels."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

from ensel.errors import SpecError
from ensel.library import Library, build_library
from ensel.library.data.training import HOLDOUT, prepare
from ensel.library.spec import load_spec

SMALL = {
    "task": "regression",
    "families": [
        {"family": "linear", "params": {"ridge": [None, 10.0]}},
        {"family": "knn", "stages": [1, 5]},
        {"family": "random_forest", "params": {"max_features": 0.5}, "stages": [4, 8]},
    ],
}


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    n = 160
    X = pd.DataFrame(
        {
            "a": rng.normal(size=n),
            "b": rng.normal(size=n),
            "kind": rng.choice(["x", "y", "z"], n),
        }
    )
    y = 50 + 3 * X["a"] - 2 * X["b"] ** 2 + (X["kind"] == "y") * 4 + rng.normal(0, 0.5, n)
    return X, y.to_numpy()


def test_spec_task_families_and_targets():
    spec = load_spec(
        {
            "task": "regression",
            "families": [{"family": "hist_gbdt", "stages": [2, 4], "target": ["none", "log1p"]}],
        }
    )
    assert spec.task == "regression" and len(spec.runs) == 2
    assert {r.task for r in spec.runs} == {"regression"}
    assert [dict(r.params).get("target") for r in spec.runs] == [None, "log1p"]
    assert spec.n_members == 4
    # the same entry as a classification spec is another run
    assert load_spec("regression").task == "regression"
    assert load_spec("tiny_regression").task == "regression"


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"task": "ranking", "families": [{"family": "tree"}]}, "key 'task' is 'ranking'"),
        (
            {"task": "regression", "families": [{"family": "logreg"}]},
            "'logreg' is a classification family",
        ),
        (
            {"task": "regression", "families": [{"family": "tree", "calibration": ["platt"]}]},
            "regression has no calibration variants",
        ),
        (
            {"task": "regression", "families": [{"family": "tree", "target": "sqrt"}]},
            r"key 'target' is \['sqrt'\]; allowed values: \['none', 'log1p'\]",
        ),
        ({"families": [{"family": "tree", "target": "log1p"}]}, "regression specs only"),
    ],
)
def test_spec_errors(tmp_path, doc, message):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(SpecError, match=message):
        load_spec(path)


def test_plain_and_grouped_folds_for_a_real_target(data):
    X, y = data
    d = prepare(X, y, cv=4, random_state=0, task="regression")
    assert d.task == "regression" and d.n_outputs == 1 and d.y.dtype == np.float64
    assert sorted(np.bincount(d.folds)) == [40, 40, 40, 40]
    groups = np.repeat(np.arange(40), 4)
    g = prepare(X, y, cv=4, groups=groups, random_state=0, task="regression")
    for group in range(40):  # a person never straddles folds
        assert np.unique(g.folds[groups == group]).size == 1
    h = prepare(X, y, cv=None, hillclimb_fraction=0.25, random_state=0, task="regression")
    assert (h.folds != HOLDOUT).sum() == 40


@pytest.mark.parametrize(
    ("y", "kwargs", "message"),
    [
        (np.array(["a"] * 160), {}, "y must hold numbers for regression"),
        (np.r_[np.nan, np.ones(159)], {}, "1 missing or infinite target"),
        (np.ones(160), {"cv": 1}, "cv=1: use an integer >= 2"),
    ],
)
def test_bad_targets_are_named(data, y, kwargs, message):
    X, _ = data
    with pytest.raises(ValueError, match=message):
        prepare(X, y, **({"cv": 3} | kwargs), task="regression")


def test_library_hillclimb_is_out_of_fold_and_test_time_averages_siblings(data, tmp_path):
    X, y = data
    lib = build_library(X, y, spec=SMALL, cv=3, store=tmp_path / "s", random_state=0, verbose=0)
    assert lib.task == "regression"
    assert lib.predictions.shape == (2 + 2 + 2, 160)
    np.testing.assert_allclose(lib.y, y[lib.hillclimb_index])
    scores = lib.member_scores()
    assert set(scores) == {"rmse", "mae", "r2"}
    assert scores["r2"].max() > 0.5  # the members learn the target
    # a member's hillclimb prediction of a row comes from the sibling that did not see it:
    # 1-NN out of fold is not the row's own target
    one_nn = lib.members.index[(lib.members["family"] == "knn") & (lib.members["stage"] == 1)][0]
    assert not np.allclose(lib.predictions[one_nn], lib.y)
    # test time: the average of the siblings, in the target's units
    pred = lib.predict(X.iloc[:10])
    assert pred.shape == (6, 10)
    assert np.all(np.abs(pred - 50) < 40)
    # resume: a second build reuses every run
    again = build_library(X, y, spec=SMALL, cv=3, store=tmp_path / "s", verbose=0)
    np.testing.assert_array_equal(np.asarray(again.predictions), np.asarray(lib.predictions))
    assert Library.open(tmp_path / "s").task == "regression"


def test_store_refuses_a_classification_build_of_other_data(data, tmp_path):
    X, y = data
    build_library(X, y, spec=SMALL, cv=3, store=tmp_path / "s", verbose=0)
    from ensel.errors import StoreError

    with pytest.raises(StoreError, match="built for other data"):
        build_library(X, y + 1.0, spec=SMALL, cv=3, store=tmp_path / "s", verbose=0)


def test_log1p_runs_and_a_failing_transform_is_recorded(data):
    X, y = data
    spec = {
        "task": "regression",
        "families": [{"family": "linear", "target": ["none", "log1p"]}],
    }
    lib = build_library(X, y, spec=spec, cv=3, verbose=0)
    assert lib.n_members == 2
    lib_neg = build_library(X, y - 100.0, spec=spec, cv=3, verbose=0)
    assert lib_neg.n_members == 1
    assert "target log1p needs y > -1" in lib_neg.failures["error"].iloc[0]


def test_detectors_without_labels_are_built_and_classifier_only_ones_skipped(data):
    X, y = data
    spec = {
        **SMALL,
        "families": SMALL["families"][:1],
        "detectors": [{"detector": "box"}, {"detector": "margin"}],
    }
    lib = build_library(X, y, spec=spec, cv=3, verbose=0)
    assert list(lib.detectors.members["family"]) == ["box"]
