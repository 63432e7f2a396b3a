"""A build under a time budget follows its plan: runs left out are recorded with the reason,
quadratic learners train on a stratified subsample noted in the member table, the estimator
reports the plan; and boosting stops early on its own rows where the builder asks."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

from ensel import EnsembleSelectionClassifier
from ensel.data import stratified_rows
from ensel.library import build_library, planned
from ensel.library.families import get_family

SPEC = {
    "families": [
        {"family": "logreg", "params": {"ridge": [0.01, 100.0]}, "calibration": ["none"]},
        {"family": "knn", "stages": [5, 25], "calibration": ["none"]},
        {"family": "tree", "params": {"max_depth": 3}, "calibration": ["none"]},
    ]
}


@dataclass(frozen=True)
class _Planned:  # the planner's PlannedRun, as far as the builder reads it
    section: str
    run: object
    decision: str
    rows: int
    note: str
    standby: bool = False
    seconds: float = 1.0


@dataclass
class _Plan:
    runs: tuple

    @property
    def kept(self):
        return [(p.section, p.run) for p in self.runs if p.decision != "left out"]

    @property
    def standby(self):
        return [(p.section, p.run) for p in self.runs if p.standby]

    @property
    def subsample(self):
        return {p.run.run_id: p.rows for p in self.runs if p.decision == "subsampled"}

    def frame(self):
        return pd.DataFrame(
            [
                {"run": p.run.run_id, "family": p.run.family, "decision": p.decision,
                 "rows": p.rows, "seconds": p.seconds, "end": 1.0, "note": p.note}
                for p in self.runs
            ]
        )  # fmt: skip


def stand_in_planner(calls: list, tree_standby: float | None = None):
    """Keeps logreg, subsamples knn to 120 rows, leaves the tree out (on standby, estimated
    at ``tree_standby`` seconds, where given)."""

    def plan(tasks, n_rows, n_cols, n_classes, **kw):
        calls.append((n_rows, n_cols, n_classes, kw))
        runs = []
        for section, run in tasks:
            if run.family == "knn":
                runs.append(_Planned(section, run, "subsampled", 120, "~1 s on 120 rows"))
            elif run.family == "tree" and tree_standby is not None:
                note = f"~{tree_standby:.0f} s would end after the budget"
                runs.append(_Planned(section, run, "left out", 0, note, True, tree_standby))
            elif run.family == "tree":
                runs.append(_Planned(section, run, "left out", 0, "~900 s would end late"))
            else:
                runs.append(_Planned(section, run, "kept", n_rows, "~1 s"))
        return _Plan(tuple(runs))

    return plan


def _table(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
    X["k"] = pd.Categorical(rng.choice(list("xyz"), n))
    y = (X["a"] + X["b"] * X["c"] + rng.normal(size=n) > 0.3).astype(int)
    return X, y


def test_a_budgeted_build_follows_the_plan(monkeypatch):
    calls: list = []
    monkeypatch.setattr(planned, "plan_library", stand_in_planner(calls))
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
    monkeypatch.setattr(planned, "plan_library", stand_in_planner([], tree_standby=estimate))
    X, y = _table(400, seed=3)
    lib = build_library(X, y, spec=SPEC, cv=3, time_limit=120, n_jobs=1, verbose=0)
    if estimate < 1:  # the planner's estimate was pessimistic: the tree is built after all
        assert "tree" in set(lib.members["family"]) and lib.failures.empty
    else:
        tree = lib.failures.drop_duplicates("run")
        assert list(tree["family"]) == ["tree"] and list(tree["status"]) == ["left_out"]
        why = tree["error"].iloc[0]
        assert why.startswith("left out by the plan: ~1000000 s would end after the budget")
        assert "at the pace of the runs so far" in why and tree["fit_seconds"].iloc[0] == 0


def test_the_estimator_reports_the_plan(monkeypatch):
    monkeypatch.setattr(planned, "plan_library", stand_in_planner([]))
    X, y = _table(500, seed=1)
    clf = EnsembleSelectionClassifier(
        library=SPEC, cv=3, n_bags=2, time_limit=120, n_jobs=1, refit="full", backend="local"
    ).fit(X, y)
    plan = clf.budget_["plan"]
    assert plan["runs"] == {"kept": 2, "subsampled": 1, "left out": 1}
    assert list(plan["subsampled"].values()) == [120]
    assert "would end late" in next(iter(plan["left_out"].values()))
    assert np.isfinite(clf.predict_proba(X)).all()


def test_without_a_time_limit_nothing_is_planned(monkeypatch):
    calls: list = []
    monkeypatch.setattr(planned, "plan_library", stand_in_planner(calls))
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
    from ensel.library.plan import plan_library
    from ensel.library.spec import load_spec

    knn = [r for r in load_spec("default").runs if r.family == "knn"][:1]
    common = {"budget_seconds": 10.0, "n_workers": 2, "n_fits_per_run": 1, "min_subsample": 50}
    few = plan_library(knn, 100_000, 20, 2, n_held=2_000, **common).runs[0]
    many = plan_library(knn, 100_000, 20, 2, n_held=40_000, **common).runs[0]
    assert many.rows < few.rows  # querying 40,000 held-out rows leaves room for fewer


def test_the_builder_asks_for_early_stopping_only_on_large_tables(monkeypatch):
    pytest.importorskip("lightgbm")
    from ensel.library import runs

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
    from ensel.library.planned import Pace

    pace = Pace({"a": 10.0, "b": 10.0, "c": 30.0})
    assert pace.too_late("c", 35.0) is None  # nothing finished yet: the plan is trusted
    pace.finished("a", 20.0)  # twice its estimate
    pace.finished("unplanned", 100.0)  # runs without an estimate do not move the pace
    assert pace.ratio == 2.0
    why = pace.too_late("c", 35.0)  # 30 s at twice the estimate is 60 s > 35 s
    assert why is not None and "2.0x" in why and "35 s left" in why
    assert pace.too_late("b", 35.0) is None  # 20 s fits
    assert pace.too_late("unknown", 0.0) is None
    # a run limit stops a run that the deadline alone would allow
    capped = pace.too_late("b", 1_000.0, run_limit=15.0)
    assert capped is not None and "more than the 15 s a run may take" in capped
    assert pace.too_late("b", 1_000.0, run_limit=25.0) is None


def test_a_subsampled_run_keeps_its_own_view_at_predict_time(monkeypatch):
    """A run trained on a subsample fits its view on those rows: a column with a few missing
    cells may get no missing-value indicator there, so its matrix is narrower than the shared
    one of the runs trained on every row, and must not be shared with them."""
    monkeypatch.setattr(planned, "plan_library", stand_in_planner([]))
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
    from ensel.library.views import MAX_LEVELS

    wide = [f"l{i}" for i in range(6_000)]
    columns = Columns(("x",), ("c", "d"), (("a", "b"), tuple(wide)))
    data = type("Data", (), {"columns": columns})()
    # x; c: 2 levels + missing; d: MAX_LEVELS kept + the pool + missing (not 6,000)
    assert planned.view_width(data) == 1 + 3 + MAX_LEVELS + 2
