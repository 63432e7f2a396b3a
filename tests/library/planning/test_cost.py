"""Predict costs recorded by the builder and the cost of sets of members."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

from ensel.library import build_library
from ensel.library.execution.runs import FittedRun
from ensel.library.families import FAMILIES
from ensel.library.planning.cost import predict_cost
from ensel.selection import PredictCost

SPEC = {
    "families": [
        {"family": "logreg", "params": {"ridge": [1.0]}, "calibration": ["none", "platt"]},
        {"family": "adaboost", "stages": [2, 64], "calibration": ["none", "logistic"]},
        {"family": "mlp", "params": {"hidden": 4}, "stages": [2, 4], "calibration": ["none"]},
    ]
}


@pytest.fixture(scope="module")
def library():
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    return X, build_library(X, y, spec=SPEC, cv=3, verbose=0)


def test_builder_records_each_members_predict_cost(library):
    _, lib = library
    ms = lib.members["predict_ms"].to_numpy()
    assert np.isfinite(ms).all() and (ms > 0).all()
    boost = lib.members[lib.members["family"] == "adaboost"]
    # 64 boosting steps cost more than 2 (cumulative: stage 64 includes stage 2's work)
    assert (
        boost.loc[boost["stage"] == 64, "predict_ms"].min()
        > boost.loc[boost["stage"] == 2, "predict_ms"].max()
    )
    record = lib.store.records[boost["run"].iloc[0]]["predict_ms"]
    assert record["cumulative"] is True and len(record["stages"]) == 2


def test_two_builds_record_the_same_costs(library, tmp_path):
    """Costs are counted from the fitted structure, not timed: the same data and seed give the
    same records."""
    X, lib = library
    _, y = load_breast_cancer(return_X_y=True, as_frame=True)
    again = build_library(X, y, spec=SPEC, cv=3, verbose=0, store=tmp_path / "again")
    first, second = lib.store.records, again.store.records
    assert set(first) == set(second)
    for run in first:
        assert first[run]["predict_ms"] == second[run]["predict_ms"]
    assert lib.members["predict_ms"].tolist() == again.members["predict_ms"].tolist()
    # so the default predict budget ("auto") picks the same ensemble from either build
    from ensel import EnsembleSelectionClassifier

    fits = [EnsembleSelectionClassifier(library=b, cv=3, n_bags=3).fit(X, y) for b in (lib, again)]
    np.testing.assert_array_equal(fits[0].weights_, fits[1].weights_)
    assert fits[0].predict_budget_ == fits[1].predict_budget_
    assert fits[0].predict_cost_ms_ == fits[1].predict_cost_ms_


def test_set_cost_shares_views_and_earlier_stages(library):
    _, lib = library
    needs, item_cost, names = predict_cost(lib.members, lib.store.records, n_siblings=3)
    cost = PredictCost(needs, item_cost)
    members = lib.members.reset_index(drop=True)
    boost = members.index[members["family"] == "adaboost"].to_numpy()
    small = boost[members.loc[boost, "stage"].to_numpy() == 2]
    large = boost[members.loc[boost, "stage"].to_numpy() == 64]
    # every member of the boosting run together costs what its largest stage costs
    assert cost.of(boost) == pytest.approx(cost.of(large[:1]))
    assert cost.of(small[:1]) < cost.of(large[:1])
    # two runs on the same view pay for it once; the view item is shared
    logreg = members.index[members["family"] == "logreg"].to_numpy()
    mlp = members.index[members["family"] == "mlp"].to_numpy()
    view = names.index("view:standardized")
    assert needs[logreg, view].all() and needs[mlp, view].all()
    together = cost.of(np.r_[logreg, mlp])
    assert together == pytest.approx(cost.of(logreg) + cost.of(mlp) - item_cost[view])
    # a net's snapshots are separate work: two cost more than one
    assert cost.of(mlp) > cost.of(mlp[:1])
    # costs scale with the number of siblings that predict
    _, single, _ = predict_cost(lib.members, lib.store.records, n_siblings=1)
    np.testing.assert_allclose(single * 3, item_cost)


def test_a_library_without_costs_is_named():
    import pandas as pd

    members = pd.DataFrame({"run": ["r1"], "stage": [None]})
    with pytest.raises(ValueError, match=r"no predict costs recorded for run\(s\) \['r1'\]"):
        predict_cost(members, {"r1": {"predict_ms": None}}, 5)


def test_fitted_run_predicts_a_subset_of_members_sharing_views(library):
    X, lib = library
    new = X.iloc[:20]
    for run_id in lib.members["run"].unique():
        fitted: FittedRun = lib.store.load_fitted(run_id)
        every = fitted.predict(new)
        views: dict = {}
        for members in ([0], [len(every) - 1, 0]):
            np.testing.assert_allclose(fitted.predict(new, members, views=views), every[members])
        assert len(views) == 3  # one transformed matrix per sibling, kept for the other runs


def test_a_run_is_timed_only_where_its_cost_cannot_be_counted(monkeypatch):
    from ensel.library.data.training import prepare
    from ensel.library.execution import runs
    from ensel.library.spec import load_spec

    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    data = prepare(X, y, cv=3)
    run = next(r for r in load_spec("default").runs if r.family == "logreg")
    timings = []
    measure = runs.measure_cost
    monkeypatch.setattr(runs, "measure_cost", lambda *a: timings.append(1) or measure(*a))
    counted = runs.fit_run(run, data, 0).costs
    assert timings == [] and counted["stages"]
    family = FAMILIES["logreg"]  # as a family without a work function
    cost = dataclasses.replace(family.traits.cost, predict_work=None)
    traits = dataclasses.replace(family.traits, cost=cost)
    monkeypatch.setitem(FAMILIES, "logreg", dataclasses.replace(family, traits=traits))
    timed = runs.fit_run(run, data, 0).costs
    assert timings == [1] and set(timed) == {"view", "stages", "cumulative"}
    assert len(timed["stages"]) == len(counted["stages"])
