"""Strong first on large tables: the gain prior (data beside the cost constants, recomputed by
``benchmarks/gain_prior.py``: tests/benchmarks/test_gain_prior.py), the order it gives a plan,
and the spare tier planned the same way under K folds."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from ensel.library.planning import gain
from ensel.library.planning.run_plan import LEFT_OUT, plan_library
from ensel.library.planning.schedule import anytime_order, gain_order
from ensel.library.spec import SPARE, load_spec

N, D, C, K = 100_000, 26, 2, 5


@pytest.fixture(scope="module")
def default():
    return load_spec("default")


@pytest.fixture(scope="module")
def tasks(default):
    return [("families", run) for run in default.runs]


def test_the_prior_file_loads_and_names_strong_families():
    shipped = json.loads(
        resources.files("ensel.library.planning").joinpath("gain_prior.json").read_text()
    )
    assert gain.gain_prior() == shipped
    for family, share in shipped["families"].items():
        assert gain.expected_gain(family) == share
        assert gain.is_strong(family) == (share >= shipped["strong"])
    assert gain.expected_gain("not_a_family") == shipped["default"] < shipped["strong"]
    assert not gain.is_strong("not_a_family")
    strong = {f for f in shipped["families"] if gain.is_strong(f)}
    assert "lightgbm" in strong and not strong & {"tree", "knn", "svm", "logreg", "adaboost"}


def test_gain_order_puts_strong_families_first_and_weak_ones_last(tasks):
    seconds = [1.0] * len(tasks)
    order = gain_order(tasks, seconds)
    assert sorted(order) == list(range(len(tasks)))
    strong = [gain.is_strong(tasks[i][1].family) for i in order]
    assert strong == sorted(strong, reverse=True)  # every strong run before every weak one
    first = tasks[order[0]][1].family
    assert gain.expected_gain(first) == max(gain.expected_gain(r.family) for _, r in tasks)


def test_gain_order_weighs_gain_against_seconds_and_shares_a_family_prior(tasks):
    strong = [i for i, (_, r) in enumerate(tasks) if gain.is_strong(r.family)]
    by_family: dict[str, list[int]] = {}
    for i in strong:
        run = tasks[i][1]
        if run.view == "native":
            by_family.setdefault(run.family, []).append(i)
    top = max((f for f in by_family if len(by_family[f]) > 1), key=gain.expected_gain)
    seconds = [1.0] * len(tasks)
    order = gain_order(tasks, seconds)
    second_top = [i for i in order if i in by_family[top]][1]
    # equal seconds: the top family's second run is worth half its prior, so another family's
    # first run comes before it exactly where that family's prior is more than half the top's
    checked = set()
    for other in set(by_family) - {top}:
        first_other = next(i for i in order if i in by_family[other])
        half = gain.expected_gain(top) / 2 < gain.expected_gain(other)
        assert (order.index(first_other) < order.index(second_top)) == half
        checked.add(half)
    assert checked == {True, False}  # both sides are tested
    first_other = next(i for i in order if i in by_family[max(set(by_family) - {top})])
    seconds[by_family[top][0]] = 1e6  # one very slow run of the top family goes behind
    slow = gain_order(tasks, seconds)
    assert slow.index(by_family[top][0]) > slow.index(first_other)


def test_a_large_plan_keeps_strong_runs_first_and_cuts_weak_ones_first(tasks):
    plan = plan_library(
        tasks, N, D, C, budget_seconds=190, n_workers=2, n_fits_per_run=K, strong_first=True
    )
    kept = [p for p in plan.runs if p.decision != LEFT_OUT]
    assert kept and all(gain.is_strong(p.run.family) for p in kept)
    assert all(p.end <= 190 + 1e-6 for p in kept)
    weak = [p for p in plan.runs if not gain.is_strong(p.run.family)]
    assert weak and all(p.decision == LEFT_OUT for p in weak)
    anytime = plan_library(tasks, N, D, C, budget_seconds=190, n_workers=2, n_fits_per_run=K)
    assert any(not gain.is_strong(p.run.family) for p in anytime.runs if p.decision != LEFT_OUT)


def test_with_time_for_all_weak_runs_follow_the_strong_ones(tasks):
    plan = plan_library(tasks, 25_000, D, C, budget_seconds=20_000, n_workers=2, strong_first=True)
    starts = {
        strong: [
            p.start
            for p in plan.runs
            if p.start is not None and gain.is_strong(p.run.family) == strong
        ]
        for strong in (True, False)
    }
    assert starts[True] and starts[False]
    assert min(starts[False]) >= min(starts[True])
    order = [gain.is_strong(p.run.family) for p in plan.runs if p.decision != LEFT_OUT]
    assert order == sorted(order, reverse=True)


def test_small_tables_keep_the_anytime_order(default, tasks):
    assert not default.strong_first(19_999) and default.strong_first(20_000)
    assert load_spec("tiny").strong_first_rows is None
    plan = plan_library(tasks, 10_000, D, C, budget_seconds=600, n_workers=2)
    explicit = plan_library(
        tasks, 10_000, D, C, budget_seconds=600, n_workers=2, strong_first=False
    )
    assert plan == explicit
    order = [tasks[i][1].run_id for i in anytime_order(tasks, 10_000)]
    assert [r.run_id for _, r in plan.kept] == [r for r in order if r in plan_ids(plan)]


def plan_ids(plan) -> set[str]:
    return {r.run_id for _, r in plan.kept}


def test_the_spare_tier_is_planned_and_cut_under_k_folds(default):
    spare = [
        ("families", r)
        for r in default.section(SPARE)
        if r.run_id not in {x.run_id for x in default.runs}
    ]
    sampled = {r.run_id for _, r in spare}
    for budget in (60, 600, 6_000):
        plan = plan_library(
            spare,
            N,
            D,
            C,
            budget_seconds=budget,
            n_workers=2,
            n_fits_per_run=K,
            n_held=N // K,
            run_limit=min(240, budget / 2),
            strong_first=True,
        )
        kept = [p for p in plan.runs if p.decision != LEFT_OUT]
        assert all(p.end <= budget + 1e-6 for p in kept)
        assert {p.run.run_id for p in plan.runs} == sampled
        out = [p for p in plan.runs if p.decision == LEFT_OUT]
        assert all(p.standby or p.note.startswith("needs") for p in out)
    assert kept and len(kept) > 2  # the largest budget keeps many sampled runs
    assert out  # and still leaves some out at 100,000 rows under 5 folds


def test_runs_setting_an_optional_parameter_form_a_queue_of_their_own(tasks):
    xt = [i for i, (_, r) in enumerate(tasks) if r.param_dict.get("extra_trees")]
    native = [
        i
        for i, (_, r) in enumerate(tasks)
        if r.family == tasks[xt[0]][1].family and r.view == "native" and i not in xt
    ]
    assert len(xt) == 1 and len(native) > 1
    order = gain_order(tasks, [1.0] * len(tasks))
    second_native = [i for i in order if i in native][1]
    assert order.index(xt[0]) < order.index(second_native)  # its queue's first run
