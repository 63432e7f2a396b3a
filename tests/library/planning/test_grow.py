"""Library growth (ensel/library/planning/grow.py): optuna proposes runs, scored by the
out-of-sample
score of the ensemble with them added; grown runs are stored, reused on a rerun, and bounded by
the budget; bad ``grow=`` arguments get one-line errors."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification

from ensel.library import build_library
from ensel.library.planning.grow import (
    GrowSpec,
    _CrossSelection,
    grow_runs,
    grow_spaces,
    parse_grow,
)

pytest.importorskip("optuna")

SPEC = {"families": [{"family": "logreg", "params": {"ridge": [1.0]}}]}


def _data(n=300, seed=0):
    X, y = make_classification(
        n_samples=n, n_features=6, n_informative=4, n_redundant=0, random_state=seed
    )
    return X, y


def test_parse_grow_accepts_ints_dicts_and_none():
    assert parse_grow(None) is None and parse_grow(0) is None and parse_grow(False) is None
    assert parse_grow(5).trials == 5
    spec = parse_grow({"time": 30, "trials": None, "families": ["extra_trees"]})
    assert spec.time == 30 and spec.trials is None
    assert spec.batch is None  # the build proposes one run per slot of its executor
    assert parse_grow({"batch": 3}).batch == 3
    assert spec.families == ("extra_trees",)


@pytest.mark.parametrize(
    ("grow", "message"),
    [
        ("lots", "grow='lots': use a number of trials"),
        ({"trails": 3}, "grow has unknown key(s) ['trails']"),
        ({"families": ["svm"]}, "grow families ['svm'] have no search space"),
        (-1, "must be positive"),
    ],
)
def test_parse_grow_errors_say_what_is_wrong(grow, message):
    with pytest.raises(ValueError) as info:
        parse_grow(grow)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_every_search_space_proposes_valid_runs():
    import optuna

    from ensel.library.families import get_family
    from ensel.library.planning.grow import _propose

    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    spaces = grow_spaces()
    assert {"hist_gbdt", "xgboost", "lightgbm", "extra_trees", "tabular_mlp"} <= set(spaces)
    for name, space in spaces.items():
        family = get_family(name)
        drawn = []
        for _ in range(5):
            trial = study.ask()
            run = _propose(_Fixed(trial, name), (name,), lambda f: f.view)
            family.validate(run.param_dict, run.stages)  # raises on an invalid run
            assert run.family == name and run.view == family.view
            assert run.stages == space.stages and run.calibrations == space.calibrations
            assert set(run.param_dict) == set(family.params)  # the family's full parameters
            drawn.append(run.run_id)
            study.tell(trial, 0.0)
        assert len(set(drawn)) == 5, name  # the space is sampled, not fixed


class _Fixed:
    """A trial that answers ``family`` with a fixed name and samples everything else."""

    def __init__(self, trial, name):
        self.trial, self.name = trial, name

    def suggest_categorical(self, key, choices):
        if key == "family":
            return self.name
        return self.trial.suggest_categorical(key, choices)

    def __getattr__(self, attr):
        return getattr(self.trial, attr)


def test_cross_selection_rewards_a_complementary_member():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 400)
    signal = np.where(y == 1, 0.7, 0.3)
    weak = np.clip(signal + rng.normal(0, 0.35, 400), 0.01, 0.99)
    strong = np.clip(signal + rng.normal(0, 0.1, 400), 0.01, 0.99)
    noise = rng.uniform(0.01, 0.99, 400)
    cross = _CrossSelection(y, "mxe", 0, {})
    base = cross.value(weak[None])
    assert cross.value(np.stack([weak, strong])) > base
    assert cross.value(np.stack([weak, strong])) > cross.value(np.stack([weak, noise]))


def _grow_with(y, quality, ok=lambda i: True, trials=4, informs=None, judge_rows=None):
    """grow_runs over fake runs: the i-th proposed run predicts ``quality(i)`` signal plus
    noise (the base run is weak) on the rows ``informs`` marks (all: None) and noise on the
    others, and fits when ``ok(i)``; growth judges on ``judge_rows``; (fitted ids, added ids)."""
    informs = np.ones(y.size, bool) if informs is None else informs
    rng = np.random.default_rng(1)
    signal = np.where(y == 1, 0.75, 0.25)
    fitted, rows = [], {"base": np.clip(signal + rng.normal(0, 0.45, y.size), 0.01, 0.99)}

    def predictions(ids):
        return np.stack([rows[i] for i in ids])

    def fit(runs):
        status = {}
        for r in runs:
            i = len(fitted)
            fitted.append(r.run_id)
            q = np.where(informs, quality(i), 0.0)
            rows[r.run_id] = np.clip(q * signal + (1 - q) * rng.uniform(0, 1, y.size), 0.01, 0.99)
            status[r.run_id] = ok(i)
        return status

    spec = GrowSpec(trials=trials, families=("extra_trees",), batch=2, seed=0, rows=judge_rows)
    return fitted, grow_runs(spec, predictions, ["base"], y, fit)


def test_grow_runs_stops_on_the_trial_budget_and_tells_failures():
    y = np.random.default_rng(1).integers(0, 2, 400)
    fitted, added = _grow_with(y, lambda i: 0.9, ok=lambda i: i % 2 == 0)
    assert len(fitted) == 4
    assert set(added) <= set(fitted[0::2])  # failed runs never join
    assert fitted[0] in added  # a strong run over a weak library raises the score


def test_only_runs_that_raise_the_ensemble_score_join_the_library():
    """A run of pure noise after a strong one cannot raise the cross-selected score: it is
    fitted (and stored) but left out of the library."""
    y = np.random.default_rng(2).integers(0, 2, 400)
    fitted, added = _grow_with(y, lambda i: 0.9 if i == 0 else 0.0)
    assert len(fitted) == 4
    assert added == [fitted[0]]


def test_growth_judges_runs_on_the_rows_it_is_given_only():
    """Judged on the first half of the hillclimb rows, growth adds the same runs whatever they
    predict on the second half; judged on all rows, runs that are noise there fare otherwise."""
    y = np.random.default_rng(3).integers(0, 2, 400)
    first_half = np.arange(400) < 200
    judged = {
        (informs is None, rows is None): _grow_with(y, lambda i: 0.9, informs=informs,
                                                    judge_rows=rows)[1]
        for informs in (None, first_half)
        for rows in (None, tuple(range(200)))
    }  # fmt: skip
    assert judged[(True, False)] == judged[(False, False)]
    assert judged[(True, True)] != judged[(False, True)]
    assert parse_grow({"rows": np.arange(3)}).rows == (0, 1, 2)


def test_build_library_grows_stores_and_resumes(tmp_path):
    X, y = _data()
    grow = {"trials": 3, "families": ["extra_trees"]}
    store = tmp_path / "lib"
    lib = build_library(X, y, spec=SPEC, cv=3, store=store, verbose=0, grow=grow)
    grown = lib.members[lib.members["family"] == "extra_trees"]
    assert 1 <= grown["run"].nunique() <= 3  # trees beat the linear run on this data
    assert len(lib.members) == 1 + len(grown)
    assert lib.predict(X[:5]).shape == (len(lib.members), 5)
    records = dict(lib.store.records)
    again = build_library(X, y, spec=SPEC, cv=3, store=store, verbose=0, grow=grow)
    assert list(again.members["id"]) == list(lib.members["id"])
    assert dict(again.store.records) == records  # nothing refitted
    np.testing.assert_array_equal(np.asarray(again.predictions), np.asarray(lib.predictions))


def test_a_zero_time_budget_grows_nothing():
    X, y = _data(seed=2)
    lib = build_library(X, y, spec=SPEC, cv=3, verbose=0, grow={"time": 0.0, "trials": None})
    assert set(lib.members["family"]) == {"logreg"}


def test_grow_refuses_regression_libraries():
    X, y = _data(seed=3)
    with pytest.raises(ValueError, match="grows classification libraries only"):
        build_library(X, y.astype(float) + 0.5, spec="tiny_regression", grow=2, verbose=0)


def test_open_growth_needs_the_build_time_budget():
    X, y = _data(seed=4)
    assert parse_grow(True).is_open and parse_grow({"trials": None}).is_open
    with pytest.raises(ValueError, match="grows in the time left under time_limit"):
        build_library(X, y, spec=SPEC, cv=3, verbose=0, grow=True)


def test_growth_under_a_time_budget_stops_at_the_deadline():
    X, y = _data(seed=5)
    lib = build_library(
        X,
        y,
        spec=SPEC,
        cv=3,
        verbose=0,
        time_limit=30,
        grow={"families": ["extra_trees"], "trials": 2},
    )
    assert "logreg" in set(lib.members["family"])  # the spec's run first, growth after
    assert lib.members["run"].nunique() <= 3
