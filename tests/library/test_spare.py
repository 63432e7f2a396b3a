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
from ensel.library import plan as plan_module
from ensel.library.estimate import RunEstimate
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


def test_default_spare_is_default_plus_a_spare_tier():
    spare, default = load_spec("default_spare"), load_spec("default")
    assert [r.run_id for r in spare.runs] == [r.run_id for r in default.runs]
    assert len(spare.detectors) == len(default.detectors)
    families = {r.family for r in spare.spare}
    assert {"catboost", "xgboost", "lightgbm", "tabular_mlp", "extra_trees"} <= families
    assert {r.view for r in spare.spare if r.family == "xgboost"} == {"te", "native"}
    # the sampled entries give distinct runs, none of them one the main tier has
    assert len({r.run_id for r in spare.spare}) == len(spare.spare) == 39
    assert not {r.run_id for r in spare.spare} & {r.run_id for r in default.runs}


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


def _tables(statuses=()):
    failures = pd.DataFrame({"run": [f"r{i}" for i in range(len(statuses))], "status": statuses})
    return pd.DataFrame({"run": ["a"], "tier": ["main"]}), failures


def test_unused_budget_says_why_only_when_the_fit_ended_early():
    plain, spare = load_spec({"families": MAIN}), load_spec(_spec())
    members, failures = _tables()
    assert budget.unused_budget(100, 95, plain, members, failures) is None
    assert "has no spare tier" in budget.unused_budget(100, 30, plain, members, failures)
    assert "1 spare run(s) included" in budget.unused_budget(100, 30, spare, members, failures)
    assert "given built" in budget.unused_budget(100, 30, None, members, failures)
    members, failures = _tables(["left_out", "failed"])
    assert "1 run(s) were estimated not to end" in budget.unused_budget(
        100, 30, spare, members, failures
    )


def test_estimator_reports_unused_seconds_as_info(data, caplog):
    with caplog.at_level(logging.INFO, logger="ensel"):
        model = EnsembleSelectionClassifier(
            library={"families": MAIN}, cv=3, time_limit=600, backend="local"
        ).fit(*data)
    unused = model.budget_["unused_seconds"]
    assert unused == pytest.approx(600 - model.fit_seconds_)
    assert "no spare tier" in model.budget_["unused_reason"]
    assert model.budget_["library"] == "<dict>"  # a spec given as a dict: as given
    notes = [r for r in caplog.records if "before its time_limit" in r.getMessage()]
    assert len(notes) == 1 and notes[0].levelno == logging.INFO
    assert np.isfinite(unused)


def test_the_default_takes_its_spare_tier_on_large_tables_under_a_time_limit():
    default = load_spec("default")
    big = budget.SPARE_MIN_ROWS
    chosen = budget.with_spare_tier(default, "default", 300, big)
    assert chosen.name == "default_spare" and len(chosen.spare) == 39
    assert budget.with_spare_tier(default, "default", 300, big - 1) is default
    assert budget.with_spare_tier(default, "default", None, None) is default  # no spare time
    other = load_spec("tiny")
    assert budget.with_spare_tier(other, "tiny", 300, big) is other  # only the default asked


def test_the_estimator_asks_with_its_rows_and_builds_what_it_is_given(data, monkeypatch):
    asked = []
    spare = load_spec(_spec())

    def spy(spec, library, time_limit, rows):
        asked.append((library, time_limit, rows))
        return spare

    monkeypatch.setattr(budget, "with_spare_tier", spy)
    model = EnsembleSelectionClassifier(
        library={"families": MAIN}, cv=3, time_limit=600, backend="local"
    ).fit(*data)
    assert asked == [({"families": MAIN}, 600, len(data[0]))]
    assert model.budget_["library"] == spare.name
    assert "naive_bayes" in set(model.leaderboard_["family"])  # the spare run was built
