"""The spare-time tier: parsing a spec's ``spare`` section, choosing its runs by the planner's
estimates of the time left, building them after the main runs (recorded as ``tier ==
"spare"``), skipping families whose package is missing, and the estimator's report of an
unused budget."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_classification

from ensel import EnsembleSelectionClassifier
from ensel.errors import SpecError
from ensel.estimator import budget
from ensel.library import build_library
from ensel.library import builder as builder_module
from ensel.library.planning import run_plan as plan_module
from ensel.library.planning.estimate import RunEstimate
from ensel.library.spec import load_spec

MAIN = [{"family": "logreg", "params": {"ridge": [0.01, 1.0]}}]
SPARE = [
    {"family": "naive_bayes", "params": {"kind": "normal"}},
    {"family": "logreg", "params": {"ridge": 1.0}},  # also a main run: built once, as main
]


def _spec(spare=SPARE):
    return {"families": MAIN, "spare": spare}


@pytest.fixture
def data():
    X, y = make_classification(240, n_features=6, random_state=0)
    return X, y


def test_spare_section_parses_into_its_own_tier_without_the_main_runs():
    spec = load_spec(_spec())
    assert [r.family for r in spec.runs] == ["logreg", "logreg"]
    assert [(r.family, r.tier) for r in spec.spare] == [("naive_bayes", "spare")]
    assert {r.tier for r in spec.runs} == {"main"}
    assert spec.n_members == 2  # the main tier's members


@pytest.mark.parametrize(
    "spare, message",
    [
        ([], "key 'spare' must be a non-empty list"),
        ([{"family": "nope"}], r"spare\[0\]: key 'family'"),
        ([{"family": "logreg", "stage": [1]}], r"spare\[0\]: unknown key\(s\) \['stage'\]"),
    ],
)
def test_bad_spare_entries_are_named(spare, message):
    with pytest.raises(SpecError, match=message):
        load_spec(_spec(spare))


def test_default_spare_is_the_default_with_its_tier_on_any_table():
    spare, default = load_spec("default_spare"), load_spec("default")
    assert [r.run_id for r in spare.runs] == [r.run_id for r in default.runs]
    assert [r.run_id for r in spare.spare] == [r.run_id for r in default.spare]
    assert len(spare.detectors) == len(default.detectors)
    families = {r.family for r in spare.spare}
    assert {"catboost", "xgboost", "lightgbm", "tabular_mlp", "extra_trees"} <= families
    assert {r.view for r in spare.spare if r.family == "xgboost"} == {"te", "native"}
    # the sampled entries give distinct runs, none of them one the main tier has
    assert len({r.run_id for r in spare.spare}) == len(spare.spare) == 39
    assert not {r.run_id for r in spare.spare} & {r.run_id for r in default.runs}
    assert (spare.name, spare.spare_min_rows, default.spare_min_rows) == (
        "default_spare",
        None,
        10_000,
    )


def test_the_default_builds_its_spare_tier_only_under_a_budget_from_10000_rows():
    default, spare = load_spec("default"), load_spec("default_spare")
    assert len(default.spare_for(10_000, budgeted=True)) == 39
    assert default.spare_for(9_999, budgeted=True) == ()
    assert default.spare_for(10**6, budgeted=False) == ()  # no time limit: no spare time
    assert len(spare.spare_for(10, budgeted=False)) == 39  # default_spare: on any table
    assert len(load_spec(_spec()).spare_for(10, budgeted=False)) == 1  # no key: always


@pytest.mark.parametrize(
    "value, message",
    [
        (-1, "'spare_min_rows' must be a whole number"),
        (True, "'spare_min_rows' must be a whole number"),
        (2.5, "'spare_min_rows' must be a whole number"),
    ],
)
def test_a_bad_spare_min_rows_is_named(value, message):
    with pytest.raises(SpecError, match=message):
        load_spec({**_spec(), "spare_min_rows": value})


def test_spare_min_rows_needs_a_spare_section():
    with pytest.raises(SpecError, match="applies to a 'spare' section"):
        load_spec({"families": MAIN, "spare_min_rows": 10})


def _estimates(monkeypatch, seconds_of):
    """The planner's estimates replaced: ``seconds_of(family)`` seconds per fit."""

    def fake(family, *args, **kwargs):
        return RunEstimate(seconds_of(family), 1e6, 0.1)

    monkeypatch.setattr(plan_module, "estimate_run", fake)


def test_spare_runs_are_built_after_the_main_runs_when_the_estimates_fit(data, monkeypatch):
    _estimates(monkeypatch, lambda family: 0.01)
    lib = build_library(*data, spec=_spec(), cv=3, time_limit=600)
    tiers = lib.members.groupby("family")["tier"].agg(set).to_dict()
    assert tiers == {"logreg": {"main"}, "naive_bayes": {"spare"}}
    records = list(lib.store.records.values())
    assert [r.get("tier", "main") for r in records] == ["main", "main", "spare"]


def test_spare_runs_estimated_past_the_deadline_are_not_started(data, monkeypatch, caplog):
    _estimates(monkeypatch, lambda family: 1e6 if family == "naive_bayes" else 0.01)
    with caplog.at_level(logging.INFO, logger="ensel"):
        lib = build_library(*data, spec=_spec(), cv=3, time_limit=600)
    assert set(lib.members["family"]) == {"logreg"}
    failure = lib.failures.drop_duplicates("run").set_index("family").loc["naive_bayes"]
    # 3e6 s is past the deadline and past the 300 s one run may take; the limit says so first
    assert failure["status"] == "left_out" and "a run may take" in failure["error"]
    assert failure["error"].startswith("spare tier: left out by the plan")
    assert failure["fit_seconds"] == 0.0
    assert any("spare tier: 1 of 1 runs left out" in r.getMessage() for r in caplog.records)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_without_a_time_limit_spare_runs_are_built_like_any_other(data, monkeypatch):
    _estimates(monkeypatch, lambda family: 1e9)  # estimates do not matter without a budget
    lib = build_library(*data, spec=_spec(), cv=3)
    assert "naive_bayes" in set(lib.members["family"])


@pytest.mark.parametrize(
    ("absent", "built", "message"),
    [
        ("naive_bayes", {"logreg"}, "not installed (naive_bayes)"),  # a spare run
        ("logreg", {"naive_bayes"}, "3 run(s) skipped"),  # 2 main runs and 1 spare
    ],
)
def test_runs_of_a_family_whose_package_is_missing_are_skipped(
    data, monkeypatch, caplog, absent, built, message
):
    monkeypatch.setattr(
        builder_module,
        "missing_requirements",
        lambda family: ["nonexistent"] if family.name == absent else [],
    )
    with caplog.at_level(logging.INFO, logger="ensel"):
        lib = build_library(*data, spec=_spec(), cv=3)
    assert set(lib.members["family"]) == built
    assert lib.failures.empty  # skipped, not failed
    assert any(message in r.getMessage() for r in caplog.records)


def _failures(statuses=()):
    return pd.DataFrame({"run": [f"r{i}" for i in range(len(statuses))], "status": statuses})


def test_unused_budget_says_why_only_when_the_fit_ended_early():
    plain, spare = load_spec({"families": MAIN}), load_spec(_spec())
    gated = load_spec({**_spec(), "spare_min_rows": 500})
    none = _failures()
    assert budget.unused_budget(100, 95, plain, 240, none) is None
    assert "has no spare tier" in budget.unused_budget(100, 30, plain, 240, none)
    assert "1 spare run(s) included" in budget.unused_budget(100, 30, spare, 240, none)
    assert "built from 500 rows and this table has 240" in budget.unused_budget(
        100, 30, gated, 240, none
    )
    assert "1 spare run(s) included" in budget.unused_budget(100, 30, gated, 500, none)
    assert "given built" in budget.unused_budget(100, 30, None, 240, none)
    regression = budget.unused_budget(100, 30, load_spec("tiny_regression"), 240, none)
    assert "has no spare tier" in regression and "default_spare" not in regression
    assert "1 run(s) were estimated not to end" in budget.unused_budget(
        100, 30, spare, 240, _failures(["left_out", "failed"])
    )


def test_estimator_reports_unused_seconds_as_info(data, caplog):
    with caplog.at_level(logging.INFO, logger="ensel"):
        model = EnsembleSelectionClassifier(
            library={"families": MAIN}, cv=3, time_limit=600, backend="local"
        ).fit(*data)
    unused = model.budget_.unused_seconds
    assert unused == pytest.approx(600 - model.fit_seconds_)
    assert "no spare tier" in model.budget_.unused_reason
    assert model.budget_.library == "<dict>"  # a spec given as a dict: as given
    notes = [r for r in caplog.records if "before its time_limit" in r.getMessage()]
    assert len(notes) == 1 and notes[0].levelno == logging.INFO
    assert np.isfinite(unused)


@pytest.mark.parametrize(
    ("min_rows", "time_limit", "spare_built"),
    [(240, 600, True), (241, 600, False), (240, None, False)],
)
def test_a_gated_spare_tier_is_built_by_the_rows_and_the_budget(
    data, monkeypatch, min_rows, time_limit, spare_built
):
    _estimates(monkeypatch, lambda family: 0.01)
    spec = {**_spec(), "spare_min_rows": min_rows}  # the data has 240 rows
    model = EnsembleSelectionClassifier(
        library=spec, cv=3, time_limit=time_limit, backend="local"
    ).fit(*data)
    assert ("naive_bayes" in set(model.leaderboard_["family"])) == spare_built
    if time_limit is not None:
        assert model.budget_.spare_runs == int(spare_built)
