"""``exportable=True`` selection priced by each member's single-row cost in the exported graph:
the cost model ranks members as the graph runs them, a given ``max_predict_ms`` (graph
milliseconds) holds, the file still equals ``predict_proba``, and ``budget_.exportable`` says
what the restriction and the budget cost."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")
pytest.importorskip("skl2onnx")

from ensel.estimator import EnsembleSelectionClassifier
from ensel.estimator.export import TOLERANCE
from ensel.estimator.export.graph_cost import graph_cost, step_ns
from ensel.library import build_library

SPEC = {
    "name": "g",
    "families": [
        {"family": "logreg", "params": {"ridge": [0.1, 1.0]}},
        {"family": "random_forest", "params": {"max_features": [2]}, "stages": [4, 48]},
        {"family": "tree", "params": {"max_depth": [2, 6]}},
        {"family": "knn", "params": {"weighting": "uniform"}, "stages": [5]},
    ],
}


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.normal(size=(300, 5)), columns=list("abcde"))
    y = (X["a"] + X["b"] * X["c"] + rng.normal(scale=0.7, size=300) > 0).astype(int)
    return X, y.to_numpy()


@pytest.fixture(scope="module")
def library(table, tmp_path_factory):
    X, y = table
    store = tmp_path_factory.mktemp("graph") / "store"
    return build_library(X, y, spec=SPEC, cv=3, store=store, verbose=0)


def _member_costs(library) -> pd.Series:
    members = library.members
    keep = members["family"] != "knn"  # no converter, no graph cost
    cost = graph_cost(members[keep].reset_index(drop=True), library, "classification", 3, 2)
    ids = members.loc[keep, "id"].to_numpy()
    return pd.Series(cost.member_cost(), index=ids)


def test_tree_levels_cost_more_in_large_trees():
    assert step_ns(10) < step_ns(500) < step_ns(5000)
    assert step_ns(5000) == step_ns(50000)  # out of cache either way


def test_a_large_forest_costs_more_than_a_small_logreg(library):
    costs = _member_costs(library)
    forest = costs[[i for i in costs.index if i.startswith("random_forest")]]
    logreg = costs[[i for i in costs.index if i.startswith("logreg")]]
    assert forest.max() > logreg.max() + 0.02  # 144 trees' levels beside a few multiply-adds
    assert forest.min() < forest.max()  # 4 trees cost less than 48 of them
    assert (costs > 0).all()


def _between(library, table, share: float) -> float:
    """Graph milliseconds ``share`` of the way from the cheapest member alone to the ensemble
    selected without a budget: a budget that binds and that some member fits."""
    X, y = table
    free = EnsembleSelectionClassifier(
        library=library, exportable=True, max_predict_ms=None, n_bags=5
    ).fit(X, y)
    top, low = free.budget_.exportable["graph_ms"], _member_costs(library).min()
    assert low < top
    return low + share * (top - low)


@pytest.mark.parametrize("share", [0.3, 0.7])
def test_selection_keeps_the_graph_milliseconds_given(library, table, share, tmp_path):
    X, y = table
    limit = _between(library, table, share)
    clf = EnsembleSelectionClassifier(
        library=library, exportable=True, max_predict_ms=limit, n_bags=5
    ).fit(X, y)
    report = clf.budget_.exportable
    assert report["graph_ms"] <= limit < report["graph_ms_exportable"]
    assert clf.predict_cost_ms_ == pytest.approx(report["graph_ms"])
    assert set(clf.members_["family"]) <= {"logreg", "random_forest", "tree"}
    assert np.isfinite(report["score_within_budget"])
    assert clf.to_onnx(tmp_path / "m.onnx", X.iloc[:60]) <= TOLERANCE


def test_auto_holds_the_graph_to_its_default_budget(library, table):
    from ensel.estimator.export.graph_cost import GRAPH_AUTO_MS

    X, y = table
    clf = EnsembleSelectionClassifier(library=library, exportable=True, n_bags=5).fit(X, y)
    report = clf.budget_.exportable
    assert set(report) >= {
        "members",
        "of",
        "score_all",
        "score_exportable",
        "score_within_budget",
        "graph_ms",
        "graph_ms_exportable",
    }
    assert report["graph_ms"] <= GRAPH_AUTO_MS
    assert all(np.isfinite(report[k]) for k in ("score_all", "score_exportable"))


def test_auto_lowers_an_ensemble_over_the_graph_budget(library, table, monkeypatch):
    from ensel.estimator.export import graph_cost as module

    X, y = table
    low = _member_costs(library).min() * 1.01  # below the cheapest ensemble within noise
    monkeypatch.setattr(module, "GRAPH_AUTO_MS", low)
    clf = EnsembleSelectionClassifier(library=library, exportable=True, n_bags=5).fit(X, y)
    assert clf.budget_.exportable["graph_ms"] <= low
    assert clf.predict_budget_["max_predict_ms"] == low


def test_a_regressor_keeps_the_graph_milliseconds_given(table, tmp_path):
    from ensel.estimator import EnsembleSelectionRegressor

    X, _ = table
    target = X["a"] * 2 + X["b"] ** 2
    spec = {
        "name": "r",
        "task": "regression",
        "families": [
            {"family": "linear", "params": {"ridge": 1.0}},
            {"family": "random_forest", "params": {"max_features": [2]}, "stages": [4, 32]},
        ],
    }
    reg = EnsembleSelectionRegressor(
        library=spec, cv=3, n_jobs=1, exportable=True, max_predict_ms=0.1, n_bags=5
    ).fit(X, target)
    report = reg.budget_.exportable
    assert report["graph_ms"] <= 0.1 < report["graph_ms_exportable"]
    assert reg.to_onnx(tmp_path / "m.onnx", X.iloc[:60]) <= TOLERANCE
