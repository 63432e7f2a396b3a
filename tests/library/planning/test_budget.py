"""The fit's and the build's Budget: one deadline on one clock, the reserve kept after the
build, the per-run limit a build caps, the pace it carries, the grow check."""

import time

import pytest

from ensel.library.planning.budget import MAX_RUN_SHARE, Budget, check_grow
from ensel.library.planning.grow import parse_grow


class FakeClock:
    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_without_a_time_limit_there_is_no_deadline_and_the_run_limit_stands():
    budget = Budget.of(None, 30.0, max_memory=2**30)
    assert not budget.timed and budget.deadline is None
    assert budget.left() is None and budget.ends_at() is None
    assert budget.run_limit == 30.0 and budget.budget_cap is None
    assert budget.max_memory == 2**30


def test_the_deadline_is_read_on_the_budgets_clock():
    clock = FakeClock()
    budget = Budget.of(60, None, clock=clock)
    assert budget.deadline == 160.0 and budget.left() == 60.0
    clock.now = 150.0
    assert budget.left() == 10.0
    clock.now = 170.0
    assert budget.left() == -10.0  # past it


def test_a_run_may_take_at_most_its_share_of_the_build():
    clock = FakeClock()
    asked = Budget.of(60, 100.0, clock=clock)
    assert asked.run_limit == 100.0 and not asked.capped  # capped by the build that takes it
    capped = asked.for_build()  # the share is smaller: the budget caps
    assert capped.run_limit == 60 * MAX_RUN_SHARE and capped.budget_cap == capped.run_limit
    own = Budget.of(60, 10.0, clock=clock).for_build()  # the limit asked for is smaller
    assert own.run_limit == 10.0 and own.budget_cap is None
    unlimited = Budget.of(60, None, clock=clock).for_build()
    assert unlimited.capped and unlimited.run_limit == 30.0
    assert Budget.of(1, None, clock=clock).for_build().run_limit == 1.0  # one second at least


def test_a_build_counts_its_share_from_when_it_started():
    clock = FakeClock(now=105.0)  # the build takes its share a little after it started
    budget = Budget.of(60, None, started=100.0, clock=clock).for_build(None, now=100.0)
    assert budget.deadline == 160.0 and budget.run_limit == 60 * MAX_RUN_SHARE


def test_the_spec_limit_counts_only_where_none_was_asked_for():
    clock = FakeClock()
    assert Budget.of(None, None, clock=clock).for_build(20.0).run_limit == 20.0
    assert Budget.of(None, 5.0, clock=clock).for_build(20.0).run_limit == 5.0
    spec = Budget.of(60, None, clock=clock).for_build(20.0)  # below the build's share
    assert spec.run_limit == 20.0 and not spec.capped


def test_a_build_ends_its_reserve_before_the_deadline():
    clock = FakeClock()
    fit = Budget.of(60, None, clock=clock).keep(15.0)
    assert fit.deadline == 160.0 and fit.left() == 45.0  # the stage ends 15 s early
    clock.now = 110.0
    build = fit.for_build()
    assert build.deadline == 145.0 and build.reserve == 0.0 and build.left() == 35.0
    assert build.run_limit == 35.0 * MAX_RUN_SHARE and build.capped
    clock.now = 150.0  # past the build's end: a fit's build still gets one second
    late = fit.for_build()
    assert late.deadline == 151.0 and late.left() == 1.0
    alone = Budget.of(60, None, started=100.0, clock=clock)  # nothing kept after it: no floor
    clock.now = 170.0
    assert alone.for_build().deadline == 160.0 and alone.for_build().left() == -10.0


def test_the_memory_ceiling_and_the_clock_go_down_with_the_budget():
    clock = FakeClock()
    build = Budget.of(60, None, max_memory=2**30, clock=clock).keep(5.0).for_build(10.0)
    assert build.max_memory == 2**30 and build.clock is clock
    assert build.paced("pace").pace == "pace" and build.pace is None


def test_the_budget_counts_from_when_the_build_started():
    clock = FakeClock(now=200.0)
    budget = Budget.of(60, None, started=190.0, clock=clock)
    assert budget.deadline == 250.0 and budget.left() == 50.0


def test_other_processes_are_told_the_deadline_on_the_wall_clock():
    clock = FakeClock()
    budget = Budget.of(60, None, clock=clock)
    clock.now = 130.0  # 30 s left
    before = time.time()
    ends_at = budget.ends_at()
    assert before + 30.0 <= ends_at <= time.time() + 30.0


def test_open_growth_needs_a_time_limit():
    check_grow(None, False)
    check_grow(parse_grow(5, seed=0), False)  # a number of trials bounds itself
    check_grow(parse_grow(True, seed=0), True)
    with pytest.raises(ValueError, match="grows in the time left under time_limit"):
        check_grow(parse_grow(True, seed=0), False)


def _xgboost_runs():
    from ensel.library.builder import _cost
    from ensel.library.spec import load_spec

    runs = sorted((r for r in load_spec("default").runs if r.family == "xgboost"), key=_cost)
    return runs[0], runs[-1]


def test_a_run_dearer_than_one_the_budget_cut_short_is_not_started():
    from ensel.library.builder import _Skip

    cheap, dear = _xgboost_runs()
    todo = [("families", cheap), ("families", dear), ("detectors", dear)]
    skip = _Skip(todo, Budget.of(60, None, clock=FakeClock()).for_build())
    assert skip(0) is None and skip(1) is None
    skip.cut_short("families", cheap)
    assert "did not finish within the time budget" in skip(1)
    assert skip(2) is None  # another section's runs are not judged by the models'
    assert _Skip(todo, Budget.of(None).for_build())(1) is None  # no budget, nothing skipped


def test_the_pace_is_asked_with_the_seconds_left_on_the_budgets_clock():
    from ensel.library.builder import _Skip

    class Pace:
        def too_late(self, run_id, left, run_limit):
            self.asked = (run_id, left, run_limit)
            return "late" if left < 10 else None

    cheap, _ = _xgboost_runs()
    clock, pace = FakeClock(), Pace()
    budget = Budget.of(60, None, clock=clock).for_build(30.0).paced(pace)
    skip = _Skip([("families", cheap)], budget)
    clock.now = 140.0
    assert skip(0) is None and pace.asked == (cheap.run_id, 20.0, 30.0)
    clock.now = 155.0
    assert skip(0) == "late"


def test_build_library_takes_a_budget_or_its_arguments_not_both():
    import numpy as np

    from ensel.library import build_library

    X, y = np.zeros((10, 2)), np.arange(10) % 2
    with pytest.raises(ValueError, match="takes a budget or time_limit"):
        build_library(X, y, budget=Budget.of(None), time_limit=5)


def test_the_estimator_hands_its_one_budget_to_the_build(monkeypatch):
    from sklearn.datasets import load_breast_cancer

    from ensel import EnsembleSelectionClassifier
    from ensel.estimator import fit_pipeline

    handed = []

    class Stop(Exception):
        pass

    def spy(X, y, **kwargs):
        handed.append(kwargs)
        raise Stop

    monkeypatch.setattr(fit_pipeline, "build_library", spy)
    X, y = load_breast_cancer(return_X_y=True)
    est = EnsembleSelectionClassifier(
        library="tiny", time_limit=60, run_time_limit=7, max_memory="2GB", random_state=0
    )
    started = time.monotonic()
    with pytest.raises(Stop):
        est.fit(X, y)
    (kwargs,) = handed
    assert not {"time_limit", "run_time_limit", "max_memory"} & set(kwargs)
    budget = kwargs["budget"]
    assert started <= budget.deadline - 60 <= time.monotonic()  # the fit's deadline
    assert 0 < budget.reserve < 60 * 0.25 + 1e-9  # kept for selection and the detectors
    assert budget.run_limit == 7 and not budget.capped  # the build caps it when it takes it
    assert budget.max_memory == 2 * 2**30
