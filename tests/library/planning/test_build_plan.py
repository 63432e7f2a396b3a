"""A build under a time budget follows its plan: runs left out are recorded with the reason,
quadratic learners train on a stratified subsample noted in the member table, the estimator
reports the plan; and boosting stops early on its own rows where the builder asks."""

from __future__ import annotations

import dataclasses
import pickle
import time
import types

import numpy as np
import pandas as pd
import pytest

from ensel import EnsembleSelectionClassifier
from ensel.data import stratified_rows
from ensel.library import build_library
from ensel.library.families import get_family
from ensel.library.planning import build_plan

from .._planners import assert_the_tree_waited_out_the_pace, stand_in_planner

SPEC = {
    "families": [
        {"family": "logreg", "params": {"ridge": [0.01, 100.0]}, "calibration": ["none"]},
        {"family": "knn", "stages": [5, 25], "calibration": ["none"]},
        {"family": "tree", "params": {"max_depth": 3}, "calibration": ["none"]},
    ]
}


def _table(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
    X["k"] = pd.Categorical(rng.choice(list("xyz"), n))
    y = (X["a"] + X["b"] * X["c"] + rng.normal(size=n) > 0.3).astype(int)
    return X, y


def test_a_budgeted_build_follows_the_plan(monkeypatch):
    calls: list = []
    monkeypatch.setattr(build_plan, "plan_library", stand_in_planner(calls))
    X, y = _table(600)
    lib = build_library(X, y, spec=SPEC, cv=3, time_limit=120, n_jobs=1, verbose=0)
    n_rows, n_cols, n_classes, kw = calls[0]
    assert (n_rows, n_cols, n_classes) == (600, 4, 2)
    assert kw["n_fits_per_run"] == 3 and kw["view_width"] == 3 + 3 + 1 and kw["budget_seconds"] > 0
    assert set(lib.members["family"]) == {"logreg", "knn"}
    left = lib.failures.drop_duplicates("run")
    assert list(left["status"]) == ["left_out"] and list(left["family"]) == ["tree"]
    assert "left out by the plan: ~900 s would end late" in left["error"].iloc[0]
    knn = lib.members[lib.members["family"] == "knn"]
    assert knn["note"].str.contains("stratified subsample of 120 of 600 rows").all()
    assert (lib.members.loc[lib.members["family"] == "logreg", "note"] == "").all()
    assert set(lib.plan["decision"]) == {"kept", "subsampled", "left out"}
    fitted = lib.subset(knn["id"]).runs[knn["run"].iloc[0]]
    assert fitted.max_train_rows == 120
    assert [model.y.size for _, model in fitted.siblings] == [120, 120, 120]


@pytest.mark.parametrize("estimate", [0.5, 1e6])
def test_a_standby_run_starts_only_if_the_pace_says_it_ends_in_time(monkeypatch, estimate):
    monkeypatch.setattr(build_plan, "plan_library", stand_in_planner([], tree_standby=estimate))
    X, y = _table(400, seed=3)
    lib = build_library(X, y, spec=SPEC, cv=3, time_limit=120, n_jobs=1, verbose=0)
    if estimate < 1:  # the planner's estimate was pessimistic: the tree is built after all
        assert "tree" in set(lib.members["family"]) and lib.failures.empty
    else:
        assert_the_tree_waited_out_the_pace(lib)


def test_the_estimator_reports_the_plan(monkeypatch):
    monkeypatch.setattr(build_plan, "plan_library", stand_in_planner([]))
    X, y = _table(500, seed=1)
    clf = EnsembleSelectionClassifier(
        library=SPEC, cv=3, n_bags=2, time_limit=120, n_jobs=1, refit="full", backend="local"
    ).fit(X, y)
    plan = clf.budget_.plan
    assert plan["runs"] == {"kept": 2, "subsampled": 1, "left out": 1}
    assert list(plan["subsampled"].values()) == [120]
    assert "would end late" in next(iter(plan["left_out"].values()))
    assert np.isfinite(clf.predict_proba(X)).all()


def test_without_a_time_limit_nothing_is_planned(monkeypatch):
    calls: list = []
    monkeypatch.setattr(build_plan, "plan_library", stand_in_planner(calls))
    X, y = _table(300, seed=2)
    lib = build_library(X, y, spec=SPEC, cv=3, n_jobs=1, verbose=0)
    assert (
        not calls and lib.plan is None and set(lib.members["family"]) == {"logreg", "knn", "tree"}
    )


def test_stratified_rows_keeps_class_shares_and_is_seeded():
    y = np.r_[np.zeros(900, int), np.ones(100, int)]
    pick = stratified_rows(y, 200, random_state=3)
    assert pick.size == 200 and np.unique(pick).size == 200
    assert np.bincount(y[pick]).tolist() == [180, 20]
    np.testing.assert_array_equal(pick, stratified_rows(y, 200, random_state=3))
    assert not np.array_equal(pick, stratified_rows(y, 200, random_state=4))
    assert stratified_rows(y[:50], 200, 0).size == 50
    rare = np.r_[np.zeros(999, int), 1]
    assert 1 in rare[stratified_rows(rare, 10, 0)]  # a present class keeps a row
    many = np.arange(30) % 15  # 15 classes, fewer rows asked: never more rows than asked
    assert stratified_rows(many, 10, 0).size == 10
    real = np.linspace(0.0, 1.0, 1000)  # a real target: ten quantile bins keep their share
    deciles = np.minimum((real[stratified_rows(real, 100, 0)] * 10).astype(int), 9)
    assert np.bincount(deciles, minlength=10).tolist() == [10] * 10


@pytest.mark.parametrize("name", ["xgboost", "lightgbm", "hist_gbdt"])
def test_boosting_stops_early_on_its_own_rows(name):
    pytest.importorskip(name if name != "hist_gbdt" else "sklearn")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 5))
    y = (X[:, 0] + rng.normal(scale=2.0, size=3000) > 0).astype(int)  # noisy: overfits soon
    family = get_family(name)
    params = {**family.params, "learning_rate": 0.3}
    stages = (8, 64, 1024)
    run = family.fit(X, y, n_classes=2, params=params, stages=stages, random_state=0,
                     early_stop=0.2)  # fmt: skip
    p = run.predict(X[:200])["none"]
    assert p.shape == (3, 200, 2)
    np.testing.assert_allclose(p[2], p[1], atol=1e-6)  # past the best round: the best model
    full = family.fit(X, y, n_classes=2, params=params, stages=stages, random_state=0)
    q = full.predict(X[:200])["none"]
    assert np.abs(q[2] - q[1]).max() > 1e-3  # without it, 1024 rounds differ from 64


def test_the_plan_prices_every_hillclimb_row_a_subsampled_run_predicts():
    from ensel.library.planning.run_plan import plan_library
    from ensel.library.spec import load_spec

    knn = [r for r in load_spec("default").runs if r.family == "knn"][:1]
    common = {"budget_seconds": 10.0, "n_workers": 2, "n_fits_per_run": 1, "min_subsample": 50}
    few = plan_library(knn, 100_000, 20, 2, n_held=2_000, **common).runs[0]
    many = plan_library(knn, 100_000, 20, 2, n_held=40_000, **common).runs[0]
    assert many.rows < few.rows  # querying 40,000 held-out rows leaves room for fewer


def test_the_builder_asks_for_early_stopping_only_on_large_tables(monkeypatch):
    pytest.importorskip("lightgbm")
    from ensel.library.execution import runs

    spec = {"families": [{"family": "lightgbm", "params": {"learning_rate": 0.3},
                          "stages": [8, 256], "calibration": ["none"]}]}  # fmt: skip
    X, y = _table(1500, seed=3)

    def best_rounds(lib):
        fitted = lib.subset().runs[lib.members["run"].iloc[0]]
        return [getattr(model, "inner", model).best for _, model in fitted.siblings]

    small = build_library(X, y, spec=spec, cv=3, n_jobs=1, verbose=0)
    assert best_rounds(small) == [None, None, None]
    monkeypatch.setattr(runs, "EARLY_STOP_ROWS", 500)
    large = build_library(X, y, spec=spec, cv=3, n_jobs=1, verbose=0)
    assert all(b is not None and b < 256 for b in best_rounds(large))


def test_the_pace_of_finished_runs_keeps_a_run_that_would_end_late_from_starting():
    from ensel.library.planning.build_plan import Pace

    pace = Pace({"a": 10.0, "b": 10.0, "c": 30.0})
    assert pace.too_late("c", 40.0) is None  # nothing finished yet: the plan is trusted
    pace.finished("a", 20.0)  # twice its estimate
    pace.finished("unplanned", 100.0)  # runs without an estimate do not move the pace
    assert pace.ratio == 2.0
    why = pace.too_late("c", 40.0)  # 30 s at twice the estimate is 60 s > 40 s
    assert why is not None and "2.0x" in why and "40 s left" in why
    assert pace.too_late("b", 40.0) is None  # 20 s fits, with its margin
    assert pace.too_late("unknown", 0.0) is None
    # a run limit stops a run that the deadline alone would allow
    capped = pace.too_late("b", 1_000.0, run_limit=15.0)
    assert capped is not None and "more than the 15 s a run may take" in capped
    assert pace.too_late("b", 1_000.0, run_limit=30.0) is None


def test_a_subsampled_run_keeps_its_own_view_at_predict_time(monkeypatch):
    """A run trained on a subsample fits its view on those rows: a column with a few missing
    cells may get no missing-value indicator there, so its matrix is narrower than the shared
    one of the runs trained on every row, and must not be shared with them."""
    monkeypatch.setattr(build_plan, "plan_library", stand_in_planner([]))
    X, y = _table(600, seed=4)
    X.loc[[5, 300], "a"] = np.nan  # 2 of 600 rows: a 120-row subsample likely has neither
    lib = build_library(X, y, spec=SPEC, cv=3, time_limit=120, n_jobs=1, verbose=0)
    knn = lib.members[lib.members["family"] == "knn"]
    assert knn["note"].str.contains("subsample of 120").all()
    together = lib.subset(lib.members["id"]).predict(X)
    for family in ("logreg", "knn"):
        ids = lib.members.loc[lib.members["family"] == family, "id"]
        rows = np.flatnonzero(lib.members["family"].to_numpy() == family)
        np.testing.assert_allclose(together[rows], lib.subset(ids).predict(X))


def test_the_one_hot_width_counts_the_levels_the_view_keeps():
    from ensel.data import Columns
    from ensel.library.views.base import MAX_LEVELS

    wide = [f"l{i}" for i in range(6_000)]
    columns = Columns(("x",), ("c", "d"), (("a", "b"), tuple(wide)))
    data = type("Data", (), {"columns": columns})()
    # x; c: 2 levels + missing; d: MAX_LEVELS kept + the pool + missing (not 6,000)
    assert build_plan.view_width(data) == 1 + 3 + MAX_LEVELS + 2


def test_the_plan_times_each_view_on_the_table_and_charges_every_fit_for_it(monkeypatch):
    calls: list = []
    monkeypatch.setattr(build_plan, "plan_library", stand_in_planner(calls))
    X, y = _table(600)
    build_library(X, y, spec=SPEC, cv=3, time_limit=120, n_jobs=1, verbose=0)
    per_row = calls[0][3]["view_seconds"]
    # logreg and knn see the standardized view with imputation; the tree the native one, NaN
    assert set(per_row) == {("standardized", False), ("native", True)}
    assert all(call >= 0 and 0 < row < 1e-3 for call, row in per_row.values())
    # the planner adds the view's seconds per row, for the rows each fit reads, to every fit
    from ensel.library.planning.run_plan import plan_library
    from ensel.library.spec import load_spec

    runs = [run for run in load_spec(SPEC).runs if run.family == "logreg"][:1]
    common = dict(budget_seconds=1e6, n_workers=1, n_fits_per_run=5, view_width=40)
    plain = plan_library(runs, 100_000, 30, 2, **common).runs[0]
    viewed = plan_library(
        runs, 100_000, 30, 2, view_seconds={("standardized", False): (0.1, 2e-5)}, **common
    ).runs[0]
    # five fits, each fitting its view on 80,000 rows and applying it to 20,000: two calls
    # and 100,000 rows
    assert viewed.seconds == pytest.approx(plain.seconds + 5 * (2 * 0.1 + 2e-5 * 100_000))


def test_a_view_on_many_categories_is_timed_dearer_per_row():
    from ensel.library.data.training import prepare
    from ensel.library.spec import load_spec

    rng = np.random.default_rng(0)
    n = 40_000
    narrow = pd.DataFrame(rng.normal(size=(n, 4)), columns=list("abcd"))
    wide = narrow.assign(**{f"k{j}": pd.Categorical(rng.choice([f"l{i}" for i in range(3000)], n))
                            for j in range(6)})  # fmt: skip
    y = rng.integers(0, 2, n)
    runs = [("families", run) for run in load_spec(SPEC).runs if run.family == "logreg"][:1]
    narrow_data, wide_data = prepare(narrow, y, cv=None), prepare(wide, y, cv=None)
    for _ in range(3):  # wall-clock pilots: a busy moment can split a call's time wrongly
        cheap = build_plan.view_seconds(runs, narrow_data)
        dear = build_plan.view_seconds(runs, wide_data)
        # per call (the levels of its categories) and per row (six more columns to code)
        (cheap_call, cheap_row), (dear_call, dear_row) = (
            cheap[("standardized", False)],
            dear[("standardized", False)],
        )
        if dear_call > 3 * cheap_call + 1e-3 and dear_row > 2 * cheap_row:
            break
    assert dear_call > 3 * cheap_call + 1e-3 and dear_row > 2 * cheap_row


def _signal(n: int, seed: int, task: str):
    """``n`` rows of 5 normal columns and a noisy target on the first: real or 0/1."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    signal = X[:, 0] + rng.normal(size=n)
    return X, signal if task == "regression" else (signal > 0).astype(int)


@pytest.mark.parametrize(
    ("name", "task"),
    [(n, t) for n in ("xgboost", "lightgbm") for t in ("classification", "regression")]
    + [("catboost", "classification")],
)
def test_boosting_stops_adding_rounds_at_its_time_cap(name, task):
    pytest.importorskip(name)
    X, y = _signal(3000, 1, task)
    family = get_family(name, task)
    assert family.stops_in_time
    stages = (4, 100_000)  # far more rounds than the cap lets it train
    run = family.fit(X, y, n_classes=2, params=dict(family.params), stages=stages,
                     random_state=0, time_cap=0.3)  # fmt: skip
    assert run.best is not None and 4 < run.best < 100_000
    p = run.predict(X[:50])["none"]
    reached = family.fit(X, y, n_classes=2, params=dict(family.params), stages=(run.best,),
                         random_state=0)  # fmt: skip
    # the last stage is the model with the rounds reached, exactly
    np.testing.assert_allclose(p[1], reached.predict(X[:50])["none"][0], atol=1e-6)
    pickle.loads(pickle.dumps(run))  # no callback left in the fitted model


def test_catboost_stops_early_on_its_own_rows_and_later_stages_repeat_the_best():
    pytest.importorskip("catboost")
    X, y = _signal(3000, 3, "classification")
    family = get_family("catboost")
    params = {**family.params, "learning_rate": 0.3}
    run = family.fit(X, y, n_classes=2, params=params, stages=(4, 5_000), random_state=0,
                     early_stop=0.2)  # fmt: skip
    assert run.best is not None and 4 < run.best < 5_000
    losses = run.model.get_evals_result()["validation"]["Logloss"]
    assert run.best == int(np.argmin(losses)) + 1  # the round its held-out loss was lowest
    # early stopping trains past the best round by its patience; the last stage keeps the best
    assert run.model.tree_count_ > run.best
    best = run.model.predict_proba(pd.DataFrame(X[:50]), ntree_end=run.best)
    np.testing.assert_allclose(run.predict(X[:50])["none"][1], best)


@pytest.mark.parametrize("task", ["classification", "regression"])
@pytest.mark.parametrize("name", ["random_forest", "extra_trees", "bagged_trees"])
def test_a_forest_under_a_time_cap_keeps_the_trees_it_reached(name, task):
    X, y = _signal(400, 2, task)
    family = get_family(name, task)
    assert family.stops_in_time
    params = {**family.params, **family.test_params}

    def fit(stages, cap=None):
        return family.fit(X, y, n_classes=2, params=params, stages=stages, random_state=3,
                          time_cap=cap)  # fmt: skip

    whole = fit((8, 12)).predict(X[:30])["none"]
    chunked = fit((8, 12), cap=1e6).predict(X[:30])["none"]  # grown 4 trees at a time
    np.testing.assert_allclose(chunked, whole)  # the very trees of one fit
    short = fit((2, 100_000), cap=1e-9)  # one chunk, then the clock says stop
    p = short.predict(X[:30])["none"]
    assert 1 <= len(short.trees) < 100_000
    np.testing.assert_allclose(p[1], fit((len(short.trees),)).predict(X[:30])["none"][0])


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_adaboost_under_a_time_cap_keeps_the_steps_it_reached(task):
    X, y = _signal(3000, 6, task)
    family = get_family("adaboost", task)
    assert family.stops_in_time
    params = dict(family.params)

    def fit(stages, cap=None):
        return family.fit(X, y, n_classes=2, params=params, stages=stages, random_state=3,
                          time_cap=cap)  # fmt: skip

    whole = fit((4, 8)).predict(X[:30])["none"]
    np.testing.assert_allclose(fit((4, 8), cap=1e6).predict(X[:30])["none"], whole)
    short = fit((4, 100_000), cap=0.2)
    reached = len(short.estimators)
    assert 4 < reached < 100_000
    p = short.predict(X[:30])["none"]  # the last stage: the AdaBoost of the steps reached
    np.testing.assert_allclose(p[1], fit((reached,)).predict(X[:30])["none"][0])


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_a_net_under_a_time_cap_keeps_the_epochs_it_reached(task):
    X, y = _signal(300, 5, task)
    family = get_family("mlp", task)
    params = {**family.params, **family.test_params}

    def fit(stages, cap=None):
        return family.fit(X, y, n_classes=2, params=params, stages=stages, random_state=3,
                          time_cap=cap)  # fmt: skip

    short = fit((1, 3, 100_000), cap=1e-9).predict(X[:20])["none"]  # stops after epoch 1
    np.testing.assert_allclose(short[2], short[0])  # epochs not reached: the last one reached
    np.testing.assert_allclose(short[0], fit((1,)).predict(X[:20])["none"][0])
    whole = fit((1, 3)).predict(X[:20])["none"]
    np.testing.assert_allclose(fit((1, 3), cap=1e6).predict(X[:20])["none"], whole)


@pytest.mark.slow
def test_a_run_under_a_time_limit_gives_its_fits_a_time_cap(monkeypatch):
    from ensel.library.data.training import prepare
    from ensel.library.execution import runs
    from ensel.library.spec import load_spec

    seen = []
    family = get_family("logreg")

    def fit(X, y, *, n_classes, params, stages, random_state, time_cap=None):
        seen.append(time_cap)
        return family.fit(X, y, n_classes=n_classes, params=params, stages=stages,
                          random_state=random_state)  # fmt: skip

    capped = dataclasses.replace(family, fit=fit, stops_in_time=True)
    monkeypatch.setattr(runs, "get_family", lambda name, task="classification": capped)
    X, y = _table(600, seed=4)
    data = prepare(X, y, cv=3, random_state=0)
    run = next(r for r in load_spec("default").runs if r.family == "logreg")
    runs.fit_run(run, data, 0)
    assert seen == [None, None, None]  # no limit: no cap
    seen.clear()
    runs.fit_run(run, data, 0, time_limit=30.0)
    share = runs.TIME_CAP_SHARE * 30.0  # 24 s for three fits: 8 s each at most at first
    assert len(seen) == 3 and 0 < seen[0] <= share / 3
    # what a fit leaves unused goes to the ones after it: the last may take all that is left
    assert seen[0] < seen[1] <= share / 2 < seen[2] <= share
    seen.clear()  # the build's deadline binds first where it is nearer than the run's limit
    runs.fit_run(run, data, 0, time_limit=30.0, ends_at=time.time() + 6.0)
    assert len(seen) == 3 and 0 < seen[0] <= runs.TIME_CAP_SHARE * 6.0 / 3
    assert seen[2] <= runs.TIME_CAP_SHARE * 6.0
    seen.clear()
    runs.fit_run(run, data, 0, ends_at=time.time() - 1.0)  # past the deadline: no time at all
    assert seen == [0.0, 0.0, 0.0]


def test_a_run_the_plan_capped_is_fitted_under_its_cap(monkeypatch):
    from ensel.library import model_runs as _kind
    from ensel.library.spec import load_spec

    seen = []

    def spy(*args, **kw):
        seen.append(kw["time_limit"])
        return types.SimpleNamespace(predictions=None, fitted=None, costs=None)

    monkeypatch.setattr(_kind, "fit_run", spy)
    monkeypatch.setattr(_kind.PackedRun, "pack", staticmethod(lambda *a: None))
    run = next(r for r in load_spec("default").runs if r.family == "lightgbm")
    _kind.fit_models(run, None, {"caps": {run.run_id: 5.0}, "run_limit": 100.0}, 0)
    _kind.fit_models(run, None, {"caps": {"another": 5.0}, "run_limit": 100.0}, 0)
    _kind.fit_models(run, None, {"caps": {run.run_id: 500.0}, "run_limit": 100.0}, 0)
    _kind.fit_models(run, None, {"caps": {run.run_id: 5.0}}, 0)
    _kind.fit_models(run, None, None, 0)
    assert seen == [5.0, 100.0, 100.0, 5.0, None]
    # the pace expects a capped run to take its cap at most, however slow the build runs
    pace = build_plan.Pace({"slow": 10.0, run.run_id: 5.0}, capped={run.run_id})
    pace.finished("slow", 30.0)
    assert pace.too_late(run.run_id, 6.0) is None
    assert pace.too_late(run.run_id, 4.0) is not None


def test_a_budgeted_build_fits_the_runs_its_plan_capped_under_their_caps(monkeypatch):
    from ensel.library import model_runs as _kind
    from ensel.library.planning.budget import MAX_RUN_SHARE

    real = build_plan.plan_library

    class Capping:  # the real plan, with its first kept run capped at 7 s
        def __init__(self, *args, **kw):
            self.plan = real(*args, **kw)

        def __getattr__(self, name):
            return getattr(self.plan, name)

        @property
        def caps(self):
            return {self.plan.kept[0][1].run_id: 7.0}

    seen = {}
    fit_run = _kind.fit_run

    def spy(run, *args, **kw):
        seen[run.run_id] = kw.get("time_limit")
        return fit_run(run, *args, **kw)

    monkeypatch.setattr(build_plan, "plan_library", Capping)
    monkeypatch.setattr(_kind, "fit_run", spy)
    X, y = _table(300)
    spec = {"families": [{"family": "logreg", "calibration": ["none"]},
                         {"family": "tree", "calibration": ["none"]}]}  # fmt: skip
    build_library(X, y, spec=spec, cv=3, time_limit=60, n_jobs=1, verbose=0)
    assert sorted(seen.values()) == [7.0, 60 * MAX_RUN_SHARE]


@pytest.mark.slow
def test_a_budgeted_build_tells_its_runs_the_deadline(monkeypatch):
    from ensel.library import model_runs as _kind

    seen = []
    fit_run = _kind.fit_run

    def spy(*args, **kw):
        seen.append(kw.get("ends_at"))
        return fit_run(*args, **kw)

    monkeypatch.setattr(_kind, "fit_run", spy)
    X, y = _table(300)
    spec = {"families": [{"family": "logreg", "calibration": ["none"]}]}
    before = time.time()
    build_library(X, y, spec=spec, cv=3, time_limit=60, n_jobs=1, verbose=0)
    assert len(seen) == 1 and before + 50 < seen[0] <= time.time() + 60  # as a wall-clock time
    build_library(X, y, spec=spec, cv=3, n_jobs=1, verbose=0)
    assert seen[1] is None  # no budget, no deadline


def test_boosting_past_the_run_limit_is_planned_capped_and_paced_at_the_limit():
    from ensel.library.planning.build_plan import Pace
    from ensel.library.planning.run_plan import plan_library
    from ensel.library.spec import load_spec

    runs_ = [r for r in load_spec("default").runs if r.family in ("lightgbm", "tree")]
    plan = plan_library(runs_, 1_000_000, 26, 2, budget_seconds=10_000, n_workers=2,
                        n_fits_per_run=1, run_limit=40.0)  # fmt: skip
    boosting = [p for p in plan.runs if p.run.family == "lightgbm"]
    trees = [p for p in plan.runs if p.run.family == "tree"]
    assert boosting and all(p.capped and p.decision == "kept" for p in boosting)
    assert all(p.seconds == 40.0 and "stops adding stages" in p.note for p in boosting)
    # a single tree (~49 s) cannot stop in time: past the limit it waits on standby as before
    assert trees and all(p.decision == "left out" and p.standby for p in trees)
    assert not any(p.capped for p in trees)
    pace = Pace.of(build_plan.BuildPlan([], table=plan.frame()))
    run = boosting[0].run.run_id
    pace.finished("other", 1.0)  # an unplanned run does not move the pace
    pace.estimates["slow"] = 10.0
    pace.finished("slow", 30.0)  # the build runs at 3x its estimates
    assert pace.too_late(run, 1_000.0, run_limit=40.0) is None  # capped: ends at the limit
    assert pace.too_late(run, 20.0, run_limit=40.0) is not None  # but not after the deadline
    pace.finished(run, 40.0)
    assert pace.ratio == 3.0  # a capped run's seconds say nothing of the estimates


def test_the_pace_of_a_run_is_its_familys_where_one_of_its_runs_finished():
    from ensel.library.planning.build_plan import Pace

    families = {"gbm1": "lightgbm", "gbm2": "lightgbm", "rf1": "forest", "rf2": "forest",
                "nb": "naive_bayes"}  # fmt: skip
    pace = Pace({r: 40.0 for r in families}, families=families)
    pace.finished("gbm1", 10.0)  # boosting ran at a quarter of its estimate
    pace.finished("rf1", 80.0)  # trees at twice theirs
    assert pace.ratio == 90.0 / 80.0  # all finished runs together
    assert pace.ratio_of("gbm2") == 0.25 and pace.ratio_of("rf2") == 2.0
    assert pace.ratio_of("nb") == pace.ratio  # no run of its family finished yet
    assert pace.too_late("gbm2", 15.0) is None  # ~10 s at its family's pace
    why = pace.too_late("rf2", 60.0)  # ~80 s at its family's pace
    assert why is not None and "2.0x" in why
    assert pace.too_late("nb", 60.0) is None  # 45 s at the pace of all


def test_a_familys_first_run_is_paced_no_faster_than_the_median_family():
    from ensel.library.planning.build_plan import PACE_FAMILIES, Pace

    families = {"gbm": "lightgbm", "lr": "logreg", "tree": "tree", "knn": "knn"}
    pace = Pace({"gbm": 100.0, "lr": 5.0, "tree": 10.0, "knn": 10.0}, families=families)
    pace.finished("gbm", 100.0)  # most of the seconds, on its estimate
    pace.finished("lr", 10.0)  # the cheaper families at twice and three times theirs
    assert pace.ratio_of("knn") == pace.ratio == 110.0 / 105.0  # two families: too few
    assert PACE_FAMILIES == 3
    pace.finished("tree", 30.0)
    assert pace.ratio == 140.0 / 115.0 and pace.ratio_of("knn") == 2.0  # the median family
    assert pace.too_late("knn", 20.0) is not None  # ~20 s and a margin: not started
    assert pace.ratio_of("lr") == 2.0 and pace.ratio_of("gbm") == 1.0  # their own


def test_one_short_run_far_off_its_estimate_does_not_set_the_pace_alone():
    from ensel.library.planning.build_plan import PACE_PRIOR_SHARE, BuildPlan, Pace

    table = pd.DataFrame({"run": ["nb", "tree"], "pace": ["naive_bayes", "tree"],
                          "seconds": [0.4, 39.0]})  # fmt: skip
    pace = Pace.of(BuildPlan([], table=table, seconds=400.0))
    assert pace.prior == PACE_PRIOR_SHARE * 400.0
    pace.finished("nb", 7.0)  # 17.5x its estimate: it spent its time reading the rows
    assert 1.0 < pace.ratio < 1.5  # (7 + 20) / (0.4 + 20)
    assert pace.too_late("tree", 300.0, run_limit=240.0) is None  # ~53 s, not ~680 s
    bare = Pace({"nb": 0.4, "tree": 39.0})  # without a prior the one run sets the pace
    bare.finished("nb", 7.0)
    assert bare.too_late("tree", 300.0, run_limit=240.0) is not None


def test_a_run_that_cannot_stop_in_time_starts_only_with_a_margin_left():
    from ensel.library.planning.build_plan import PACE_MARGIN, Pace

    pace = Pace({"tree": 50.0, "forest": 50.0}, in_time={"forest"})
    left = 50.0 * (1 + PACE_MARGIN) / 2  # more than its estimate, less than the margin asks
    why = pace.too_late("tree", left)
    assert why is not None and "would end after the budget" in why
    assert pace.too_late("tree", 50.0 * PACE_MARGIN) is None
    # a run that stops in time keeps the stages it reached: it needs no margin
    assert pace.too_late("forest", left) is None


def test_a_familys_pace_starts_from_its_share_of_the_prior():
    from ensel.library.planning.build_plan import Pace

    families = {"lr1": "logreg", "lr2": "logreg", "gbm": "lightgbm"}
    pace = Pace({"lr1": 1.0, "lr2": 1.0, "gbm": 98.0}, families=families, prior=10.0)
    pace.finished("lr1", 3.0)  # three times its estimate
    # the prior of logreg's pace is its 2% share of the 10 s: the pace says what the runs did
    assert pace.ratio_of("lr2") == (3.0 + 0.2) / (1.0 + 0.2)
    assert pace.ratio == (3.0 + 10.0) / (1.0 + 10.0)  # the pace of all keeps the whole prior


def test_a_linear_svm_is_not_paced_by_the_kernel_svms_before_it():
    from ensel.library.planning.build_plan import Pace
    from ensel.library.planning.run_plan import plan_library
    from ensel.library.spec import load_spec

    svms = [r for r in load_spec("default").runs if r.family == "svm"]
    plan = plan_library(svms, 1_000_000, 22, 2, budget_seconds=100_000, n_workers=2,
                        n_fits_per_run=1)  # fmt: skip
    table = plan.frame()
    linear = [p.run.run_id for p in plan.runs if dict(p.run.params)["kernel"] == "linear"]
    kernel = [p.run.run_id for p in plan.runs if dict(p.run.params)["kernel"] != "linear"]
    groups = dict(zip(table["run"], table["pace"], strict=True))
    assert {groups[r] for r in linear} == {"svm"}
    assert {groups[r] for r in kernel} == {"svm (quadratic)"}
    pace = Pace.of(build_plan.BuildPlan([], table=table))
    for run in kernel[:3]:  # kernel SVMs on subsamples end far inside their estimates
        pace.finished(run, 0.2 * pace.estimates[run])
    assert pace.ratio_of(kernel[3]) == pytest.approx(0.2, rel=0.1)
    assert pace.ratio_of(linear[0]) >= 1.0  # their pace is not the linear SVM's
    pace.finished(linear[0], 1.5 * pace.estimates[linear[0]])
    assert pace.ratio_of(linear[1]) > 1.2  # the linear SVMs' own pace, once one finished


def test_a_familys_first_run_is_not_paced_faster_than_its_estimate():
    from ensel.library.planning.build_plan import UNTESTED_PACE, Pace

    families = {"gbm": "lightgbm", "rf": "forest", "nb": "naive_bayes", "lr": "logreg"}
    pace = Pace({r: 10.0 for r in families}, families=families)
    for run in ("gbm", "rf", "nb"):  # every finished family ran at half its estimates
        pace.finished(run, 5.0)
    assert pace.ratio_of("gbm") == 0.5 and pace.ratio == 0.5
    assert UNTESTED_PACE == 1.0 and pace.ratio_of("lr") == 1.0
    assert pace.too_late("lr", 12.0) is not None  # 10 s and the margin do not fit in 12 s
    unknown = Pace({"a": 10.0, "b": 10.0})  # runs of no known family: the pace of all
    unknown.finished("a", 5.0)
    assert unknown.ratio_of("b") == 0.5
