"""plan_library: what a time budget holds on a large table, before any run starts."""

from __future__ import annotations

import numpy as np
import pytest

from ensel.library.planning.estimate import estimate_run
from ensel.library.planning.run_plan import (
    LEFT_OUT,
    QUADRATIC_SHARE,
    SUBSAMPLED,
    plan_library,
    stratified_subsample,
)
from ensel.library.spec import load_spec

N, D, C = 200_000, 20, 2


@pytest.fixture(scope="module")
def runs():
    spec = load_spec("default")
    return [run for section, group in spec.sections if section == "families" for run in group]


def test_kept_runs_end_within_the_budget_on_every_worker(runs):
    plan = plan_library(runs, N, D, C, budget_seconds=600, n_workers=2, n_fits_per_run=5)
    kept = [p for p in plan.runs if p.decision != LEFT_OUT]
    assert kept and all(p.end <= 600 + 1e-9 for p in kept)
    # no worker runs two runs at once: at most n_workers runs overlap at any start
    for p in kept:
        overlapping = [q for q in kept if q.start <= p.start < q.end]
        assert len(overlapping) <= 2
    assert plan.seconds <= 600
    # every run is accounted for, each once
    assert sorted(p.run.run_id for p in plan.runs) == sorted(r.run_id for r in runs)


def test_each_family_gets_its_cheapest_run_and_quadratic_learners_are_bounded(runs):
    # with the per-run limit a budgeted build sets (half the budget): boosting estimated
    # past it for all its rounds is kept, capped at the limit
    plan = plan_library(runs, N, D, C, budget_seconds=3_600, n_workers=2, run_limit=1_800.0)
    frame = plan.frame()
    kept = frame[frame["decision"] != LEFT_OUT]
    families = {r.family for r in runs}
    quadratic = {"svm", "knn"}
    # every family that is not quadratic in rows has a run in the plan
    for family in families - quadratic:
        assert family in set(kept["family"]), family
    # kernel SVMs and k-NN never train on all 200k rows: a subsample, or out with a note
    for _, row in frame[frame["family"].isin(["knn"])].iterrows():
        assert row["decision"] in (SUBSAMPLED, LEFT_OUT)
        assert row["rows"] < N
        assert ("rows" in row["note"]) or ("quadratic" in row["note"])
    assert plan.subsample and all(0 < m < N for m in plan.subsample.values())
    # the strong families keep their whole stage ladders (stages are never cut)
    for p in plan.runs:
        if p.decision != LEFT_OUT and p.run.family in ("lightgbm", "xgboost", "hist_gbdt"):
            assert p.run.stages == next(r for r in runs if r.run_id == p.run.run_id).stages


def test_a_run_that_cannot_fit_is_left_out_with_the_reason(runs):
    plan = plan_library(runs, N, D, C, budget_seconds=30, n_workers=1)
    left = [p for p in plan.runs if p.decision == LEFT_OUT]
    assert left and all("budget" in p.note or "quadratic" in p.note for p in left)
    # a larger budget keeps at least as many runs
    more = plan_library(runs, N, D, C, budget_seconds=3_000, n_workers=1)
    assert len(more.kept) >= len(plan.kept) and len(more.kept) > len(plan.kept) - 1
    # the kept runs come first, in the order to start them
    decisions = [p.decision == LEFT_OUT for p in plan.runs]
    assert decisions == sorted(decisions)
    # runs left out by the schedule's end wait on standby; quadratic learners do not
    standby = [p for p in left if p.standby]
    assert standby and all("would end after the budget" in p.note for p in standby)
    assert plan.standby == [(p.section, p.run) for p in standby]
    assert not any(p.standby for p in left if "quadratic" in p.note)


def test_memory_limit_leaves_out_what_a_worker_cannot_hold(runs):
    plan = plan_library(
        runs, N, D, C, budget_seconds=10_000, n_workers=2, max_memory_bytes=2 * 64e6
    )
    for p in plan.runs:
        if p.decision == LEFT_OUT:
            continue
        assert p.peak_bytes <= 64e6
    assert any("GB per fit" in p.note for p in plan.runs if p.decision == LEFT_OUT)
    assert not any(p.standby for p in plan.runs if "GB per fit" in p.note)


def test_subsample_rows_fit_the_share(runs):
    plan = plan_library(runs, N, D, C, budget_seconds=1_200, n_workers=1, n_fits_per_run=5)
    for p in plan.runs:
        if p.decision == SUBSAMPLED:
            m = p.rows
            held = m // 5
            est = estimate_run(
                p.run.family, p.run.param_dict, p.run.stages, m - held, D, C, n_held=held
            )
            assert 5 * est.fit_seconds == pytest.approx(p.seconds)
            assert p.end <= 1_200 + 1e-9


def test_bad_budget_is_named(runs):
    with pytest.raises(ValueError, match="budget_seconds=0"):
        plan_library(runs, N, D, C, budget_seconds=0)


def test_stratified_subsample_keeps_class_shares():
    y = np.r_[np.zeros(900, int), np.ones(90, int), np.full(10, 2)]
    idx = stratified_subsample(y, 100, random_state=0)
    assert len(idx) == 100 and len(np.unique(idx)) == 100
    assert np.bincount(y[idx]).tolist() == [90, 9, 1]
    assert np.array_equal(idx, stratified_subsample(y, 100, random_state=0))
    assert len(stratified_subsample(y, 5_000)) == len(y)


def test_runs_estimated_past_the_per_run_limit_wait_on_standby(runs):
    free = plan_library(runs, N, D, C, budget_seconds=10_000, n_workers=2)
    limited = plan_library(runs, N, D, C, budget_seconds=10_000, n_workers=2, run_limit=10.0)
    over = [p for p in limited.runs if "a run may take" in p.note]
    assert over and all(p.decision == LEFT_OUT and p.standby for p in over)
    assert all(p.seconds > 10.0 for p in over)
    kept = [p for p in limited.runs if p.decision != LEFT_OUT and p.rows == N]
    assert kept and all(p.seconds <= 10.0 for p in kept)
    # runs of families that stop in time are kept, capped at the limit, instead
    assert not any(p.stops_in_time for p in over)
    capped = [p for p in limited.runs if p.capped]
    assert capped and all(p.decision != LEFT_OUT and p.seconds == 10.0 for p in capped)
    # no limit: a run is capped only where the budget ends (less the quadratic learners' share)
    end = 10_000 * (1 - QUADRATIC_SHARE)
    assert all(p.end == pytest.approx(end) and "budget's end" in p.note
               for p in free.runs if p.capped)  # fmt: skip


def test_kernel_naive_bayes_is_planned_as_quadratic_in_rows(runs):
    plan = plan_library(runs, N, D, C, budget_seconds=600, n_workers=2)
    kernel = [p for p in plan.runs if p.run.family == "naive_bayes"
              and dict(p.run.params).get("kind") == "kernel"]  # fmt: skip
    assert kernel and all(p.decision in (SUBSAMPLED, LEFT_OUT) and p.rows < N for p in kernel)
    small = estimate_run("naive_bayes", {"kind": "kernel"}, None, 1_000, D, C, n_held=250)
    large = estimate_run("naive_bayes", {"kind": "kernel"}, None, 100_000, D, C, n_held=25_000)
    assert large.fit_seconds > 1_000 * small.fit_seconds  # 100x the rows, ~10,000x the work


def test_a_forest_with_capped_leaves_is_estimated_with_bounded_memory():
    shape = ({"max_features": 4, "min_samples_leaf": 1}, (256,), 1_000_000, 22, 2)
    uncapped = estimate_run("random_forest", {**shape[0], "max_leaves": None}, *shape[1:])
    capped = estimate_run("random_forest", {**shape[0], "max_leaves": "auto"}, *shape[1:])
    # 256 trees of 1,024 leaves beside the matrix, not the 20 GB of trees grown to purity
    assert capped.peak_bytes < 1e9 < 10e9 < uncapped.peak_bytes


def test_runs_of_other_sections_are_planned_where_their_kind_estimates_them():
    spec = load_spec("default")
    tasks = [(section, run) for section, group in spec.sections for run in group]
    dets = [run for section, run in tasks if section == "detectors"]
    seconds = {run.run_id: 5.0 + i for i, run in enumerate(dets)}
    asked = []

    def estimate(run, n_rows, n_cols, n_held, n_fits):
        asked.append((n_rows, n_cols, n_held, n_fits))
        return seconds[run.run_id]

    common = dict(n_workers=2, n_fits_per_run=1, n_held=10_000)
    plan = plan_library(tasks, N, D, C, budget_seconds=600, estimators={"detectors": estimate},
                        **common)  # fmt: skip
    planned = [p for p in plan.runs if p.section == "detectors"]
    assert asked and set(asked) == {(N, D, 10_000, 1)}
    assert all(p.seconds == seconds[p.run.run_id] for p in planned)
    kept = [p for p in plan.runs if p.decision != LEFT_OUT]
    assert all(p.end <= 600 for p in kept if p.section == "detectors")
    # each takes its seconds of a worker: with the models, never more than 2 runs at once
    timed = [p for p in kept if p.start is not None]
    assert any(p.section == "detectors" for p in timed)
    for p in timed:
        assert p.end == pytest.approx(p.start + p.seconds)
        assert sum(q.start <= p.start < q.end for q in timed) <= 2
    # they take time on the schedule: the models' runs around them start later
    plain = plan_library(tasks, N, D, C, budget_seconds=600, **common)
    assert all(p.seconds == 0 and p.decision != LEFT_OUT for p in plain.runs
               if p.section == "detectors")  # fmt: skip
    assert sum(p.section == "families" and p.decision != LEFT_OUT for p in plan.runs) <= sum(
        p.section == "families" and p.decision != LEFT_OUT for p in plain.runs
    )
    # a budget too short for one leaves it out with the plan's reason, on standby
    short = plan_library(tasks, N, D, C, budget_seconds=4, estimators={"detectors": estimate},
                         **common)  # fmt: skip
    out = [p for p in short.runs if p.section == "detectors"]
    assert out and all(p.decision == LEFT_OUT and p.standby and "budget" in p.note for p in out)


def test_a_booster_past_the_budgets_end_is_kept_capped_where_its_first_stage_fits(runs):
    # two LightGBM runs on one worker: the second starts where the first ends, and the budget
    # ends halfway through its rounds; boosting stops in time, so it takes the rest
    boosters = [r for r in runs if r.family == "lightgbm"][:2]
    shape = dict(n_rows=1_000_000, n_cols=D, n_classes=C, n_workers=1, n_fits_per_run=1)
    solo = [plan_library([r], **shape, budget_seconds=1e6).runs[0].seconds for r in boosters]
    first_stage = estimate_run(
        "lightgbm", boosters[1].param_dict, boosters[1].stages[:1], 800_000, D, C, n_held=200_000
    ).fit_seconds
    assert first_stage < solo[1] / 2
    budget = solo[0] + solo[1] / 2
    plan = plan_library(boosters, **shape, budget_seconds=budget)
    second = next(p for p in plan.runs if p.run is boosters[1])
    assert second.decision != LEFT_OUT and second.capped
    assert second.seconds == pytest.approx(budget - solo[0]) and second.end == pytest.approx(budget)
    assert "the budget's end" in second.note
    assert plan.caps == {boosters[1].run_id: pytest.approx(budget - solo[0])}
    # where not even its first stage fits, it waits on standby instead
    short = plan_library(boosters, **shape, budget_seconds=solo[0] + first_stage / 2)
    second = next(p for p in short.runs if p.run is boosters[1])
    assert second.decision == LEFT_OUT and second.standby and not second.capped
    assert short.caps == {}
    # under a per-run limit shorter than its first stage, it is kept capped at the limit all
    # the same (half the limit or more is a run worth having), but not on a quarter of it
    limit = first_stage / 2
    long = plan_library(boosters, **shape, budget_seconds=1e6, run_limit=limit)
    second = next(p for p in long.runs if p.run is boosters[1])
    assert second.capped and second.seconds == pytest.approx(limit)
    end = next(p for p in long.runs if p.run is boosters[0]).end
    tail = plan_library(boosters, **shape, budget_seconds=end + limit / 4, run_limit=limit)
    second = next(p for p in tail.runs if p.run is boosters[1])
    assert second.decision == LEFT_OUT and not second.capped
