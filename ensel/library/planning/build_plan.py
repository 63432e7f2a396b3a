"""A build under a time budget, planned before any run starts: the planner
(:func:`ensel.library.planning.run_plan.plan_library`) estimates every run's cost on this table and
says
which runs to train, which on a stratified subsample of their rows (learners quadratic in the
rows: kernel SVMs, k-NN) and which to leave out, so that no run is cut at the deadline and
the cheap strong runs are not starved. This module turns its plan into the builder's work:
the tasks to run, the subsample of each, the notes the store keeps, and the plan's table.

The estimates are for planning and err both ways: runs the plan leaves out only because its
schedule ran past the budget wait on standby after the planned ones, and :class:`Pace` starts
each only if, at the pace of the runs finished so far, it would end before the deadline (every
executor asks before each start: the local pool, and dask's under a deadline)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..data.training import TrainingData
from ..families import traits_of
from ..kinds import get_kind
from ..views.base import MAX_LEVELS
from .budget import Budget
from .run_plan import LEFT_OUT, plan_library

__all__ = ["BuildPlan", "Pace", "plan_build", "view_seconds"]


@dataclass
class BuildPlan:
    """``tasks``: the ``(section, run)`` pairs to run, in the order to start them;
    ``left_out``: ``(section, run, why)`` of the runs the plan drops; ``subsample``: run id ->
    rows each fit trains on; ``caps``: run id -> seconds a capped run (one that stops adding
    stages in time) may take; ``notes``: run id -> what the store notes beside a trained run;
    ``table``: the plan, one row per run (run, family, decision, rows, seconds, ...).
    ``tasks`` ends with the standby runs, left out by the schedule's end but started if the
    build runs ahead of its estimates (``left_out`` does not hold them; ``standby``: run id ->
    the plan's note on each)."""

    tasks: list
    left_out: list = field(default_factory=list)
    standby: dict[str, str] = field(default_factory=dict)
    subsample: dict[str, int] = field(default_factory=dict)
    caps: dict[str, float] = field(default_factory=dict)  # run id -> seconds it may take
    notes: dict[str, str] = field(default_factory=dict)
    table: pd.DataFrame | None = None
    seconds: float = 0.0  # the time the plan was made for


PACE_PRIOR_SHARE = 0.05
"""Every pace starts from this share of the plan's seconds of work at the estimates' own pace,
so that one short run far off its estimate (a cheap run that spends its time reading its rows)
does not set the pace alone and keep every later run from starting."""


PACE_FAMILIES = 3
"""Families with finished runs from which the median family's pace counts for a family's
first run (one family alone may be far off its estimates)."""
UNTESTED_PACE = 1.0
"""The fastest pace a family's first run is given: the other families' pace says how this
machine runs their work, not that this family's estimate errs as theirs do."""


PACE_MARGIN = 1.3
"""A run that cannot stop in time starts only where this multiple of its expected seconds is
left: runs take a few times their estimates at worst (a cheap one more), and a run cut at the
deadline keeps nothing (one that stops in time keeps the stages it reached)."""


class Pace:
    """The plan's estimates against the build's own clock: after each finished run, the wall
    seconds of the finished runs over their estimated seconds. A run is not started when, at
    that pace, it would end after the deadline, so that a machine slower than the cost model's
    (another load, another CPU) leaves runs out instead of cutting them at the deadline. Where
    a run's family (its pace group, ``plan.pace_group``: a family, its learners quadratic in the
    rows apart; ``families`` maps run ids to these) has finished runs, their pace counts for it
    (the cost model errs per family: on a large table early-stopped boosting can end well
    before its estimate while trees run past theirs), else the slowest of all finished runs'
    pace, the median family's and its own estimate (``UNTESTED_PACE``)."""

    def __init__(
        self,
        estimates: dict[str, float],
        standby: dict[str, str] | None = None,
        label: str = "",
        capped: set[str] | frozenset[str] = frozenset(),
        in_time: set[str] | frozenset[str] = frozenset(),
        families: dict[str, str] | None = None,
        prior: float = 0.0,
    ) -> None:
        self.estimates = {k: float(v) for k, v in estimates.items() if v and v > 0}
        self.standby = dict(standby or {})  # run id -> why the plan left it out
        self.label = label  # what a standby run's note starts with
        self.capped = set(capped)  # runs planned at the per-run limit (not paced by it)
        self.in_time = set(in_time) | self.capped  # runs that stop adding stages at the limit
        self.families = dict(families or {})  # run id -> its family
        self.prior = float(prior)  # seconds of work at ratio 1 every pace starts from
        self.totals: dict[str | None, list[float]] = {}  # family (None: all) -> [wall, planned]
        self.estimated_of: dict[str | None, float] = {None: sum(self.estimates.values())}
        for run_id, seconds in self.estimates.items():  # family -> its estimated seconds
            family = self.families.get(run_id)
            if family is not None:
                self.estimated_of[family] = self.estimated_of.get(family, 0.0) + seconds

    @classmethod
    def of(cls, plan: BuildPlan | None, label: str = "") -> Pace:
        """The pace of ``plan``'s runs (none known without a plan), starting from
        ``PACE_PRIOR_SHARE`` of the plan's seconds at the estimates' own pace."""
        table = None if plan is None else plan.table
        standby = None if plan is None else plan.standby
        if table is None or table.empty or not {"run", "seconds"} <= set(table.columns):
            return cls({}, standby, label)

        def runs(column: str) -> set[str]:
            return set(table["run"][table[column].astype(bool)]) if column in table else set()

        estimates = dict(zip(table["run"], table["seconds"], strict=True))
        families = dict(zip(table["run"], table["pace"], strict=True)) if "pace" in table else {}
        prior = PACE_PRIOR_SHARE * float(plan.seconds or 0.0)
        return cls(
            estimates, standby, label, runs("capped"), runs("stops_in_time"), families, prior
        )

    def left_out(self, run_id: str, why: str) -> str | None:
        """For a standby run not started (``why``, from ``too_late``): what the store records
        as its ``left_out`` note; None for a planned run."""
        plan = self.standby.get(run_id)
        return None if plan is None else f"{self.label}left out by the plan: {plan}; {why}"

    @property
    def ratio(self) -> float:
        """Wall over estimated seconds of the finished runs (1 before any has finished)."""
        return self._ratio(None) if self.totals.get(None, (0.0, 0.0))[1] > 0 else 1.0

    def ratio_of(self, run_id: str | None) -> float:
        """The pace that counts for ``run_id``: its family's (its pace group's,
        :func:`~ensel.library.planning.run_plan.pace_group`) where one of its runs finished, else
        the
        largest of all finished runs' pace, the median family's (once ``PACE_FAMILIES``
        families have finished runs) and, for a run of a known family, ``UNTESTED_PACE`` (1
        before any run has finished). The
        pace of all starts from ``prior``, a family's from the part of it that is the
        family's share of the estimated seconds: a whole ``prior`` would swamp the seconds of a
        cheap family's runs, so that their pace said nothing. The median family counts
        because the pace of all runs is mostly the boosters' (most of the seconds), while a
        family's first run errs like a family."""
        family = self.families.get(run_id)
        if family is not None and self.totals.get(family, (0.0, 0.0))[1] > 0:
            return self._ratio(family)
        if self.totals.get(None, (0.0, 0.0))[1] <= 0:
            return 1.0
        families = [self._ratio(f) for f, (_, planned) in self.totals.items() if f and planned]
        typical = float(np.median(families)) if len(families) >= PACE_FAMILIES else 0.0
        untested = UNTESTED_PACE if family is not None else 0.0
        return max(self._ratio(None), typical, untested)

    def _ratio(self, key: str | None) -> float:
        """Wall over estimated seconds of the finished runs of family ``key`` (None: all), from
        its share of ``prior``."""
        wall, planned = self.totals[key]
        total, own = self.estimated_of[None], self.estimated_of.get(key, 0.0)
        prior = self.prior * (own / total if key is not None and total else 1.0)
        return (wall + prior) / (planned + prior)

    def finished(self, run_id: str, seconds: float) -> None:
        if run_id in self.estimates and run_id not in self.capped and seconds > 0:
            for key in {None, self.families.get(run_id)}:
                total = self.totals.setdefault(key, [0.0, 0.0])
                total[0] += seconds
                total[1] += self.estimates[run_id]

    def too_late(
        self, run_id: str, seconds_left: float, run_limit: float | None = None
    ) -> str | None:
        """Why ``run_id`` should not start with ``seconds_left`` to the deadline and runs
        stopped after ``run_limit`` seconds, or None. A run that stops in time takes the
        limit at most."""
        estimate = self.estimates.get(run_id)
        if estimate is None:
            return None
        ratio = self.ratio_of(run_id)
        expected = estimate * ratio
        if run_id in self.capped:  # it stops adding stages at its planned seconds
            expected = min(expected, estimate)
        if run_id in self.in_time and run_limit is not None:
            expected = min(expected, run_limit)
        # a run that cannot stop in time needs a margin: the pace is a mean, runs scatter
        needed = expected if run_id in self.in_time else expected * PACE_MARGIN
        if run_limit is not None and run_limit < seconds_left:  # the limit binds first
            if needed <= run_limit:
                return None
            why = f"is more than the {run_limit:.0f} s a run may take"
        elif needed <= seconds_left:
            return None
        else:
            why = f"would end after the budget ({seconds_left:.0f} s left)"
        return (
            f"not started: ~{expected:.0f} s at the pace of the runs so far "
            f"({ratio:.1f}x their estimates) {why}"
        )


def view_width(data: TrainingData) -> int:
    """Columns of the one-hot view: numeric columns plus, per categorical column, its levels as
    the view keeps them (at most ``MAX_LEVELS``, the rest pooled into one column) and one for a
    missing cell (a bound: some columns have none)."""
    levels = (min(len(c), MAX_LEVELS) + (len(c) > MAX_LEVELS) + 1 for c in data.columns.categories)
    return len(data.columns.numeric) + sum(levels)


VIEW_PILOT_ROWS = (8_000, 64_000)
"""Rows each view is timed on, at two sizes, before a build is planned: what a view costs per
call (per category of its columns, say) and what it costs per row."""


def view_seconds(tasks: list, data: TrainingData) -> dict[tuple[str, bool], tuple[float, float]]:
    """``(view, native_missing)`` -> ``(seconds per call, seconds per row)`` of each view the
    model runs of ``tasks`` see, timed on this table at the two sizes of ``VIEW_PILOT_ROWS``
    (on a smaller table, all per row). A view's cost is the table's (its columns' types, the
    levels of its categories), not the family's: on a table with a many-level column a cheap
    family's run is nearly all its view. Timing two sizes separates the cost per call (per
    level of the categories, most of a call on a small sample) from the cost per row; the
    pace of the finished runs corrects what the extrapolation misses. A parquet or dask
    source is not timed (empty): its rows are read where its runs fit, not here."""
    from ..execution.runs import label_classes
    from ..families import get_family
    from ..views.base import make_view

    kinds = {
        (run.view, get_family(run.family, run.task).native_missing)
        for section, run in tasks
        if section == "families"
    }
    n = len(data.y)
    small, large = (min(n, rows) for rows in VIEW_PILOT_ROWS)
    if not kinds or large < 2 or not data.in_memory:
        return {}  # a parquet or dask source's rows are read by the workers, not here
    order = np.random.default_rng(0).permutation(n)[:large]
    classes = label_classes(data)

    def timed(kind: tuple[str, bool], m: int) -> float:
        take = np.sort(order[:m])
        start = time.perf_counter()
        view = make_view(kind[0], data.columns, kind[1])
        view.fit_transform(data.X.iloc[take], data.y[take], classes)
        return time.perf_counter() - start

    def best(kind: tuple[str, bool], m: int) -> float:
        """The faster of two timings: a first call at a size can pay for first-touch memory
        (on many-level categorical columns enough to make the per-call share negative, which
        would clip it to 0)."""
        return min(timed(kind, m), timed(kind, m))

    out = {}
    for kind in sorted(kinds):
        timed(kind, min(small, 200))  # the first call pays for imports and caches
        t_small, t_large = best(kind, small), best(kind, large)
        if large - small < small:  # a small table: too few rows to tell the two apart
            out[kind] = (0.0, t_large / large)
            continue
        per_row = max(t_large - t_small, 0.0) / (large - small)
        out[kind] = (max(t_small - per_row * small, 0.0), per_row)
    return out


def _estimators(tasks: list) -> dict:
    """Section -> its kind's ``estimate``, for the sections of ``tasks`` that have one."""
    kinds = {section: get_kind(section) for section, _ in tasks if section != "families"}
    return {s: k.estimate for s, k in kinds.items() if k.estimate is not None}


def plan_build(
    tasks: list,
    data: TrainingData,
    budget: Budget,
    n_workers: int,
    planner=None,
    strong_first: bool = False,
) -> BuildPlan:
    """The plan of ``tasks`` on ``data`` within the seconds ``budget`` has left on
    ``n_workers`` workers (sharing its ``max_memory`` bytes; None: no ceiling), each run
    stopped after its ``run_limit`` (None: no limit), by ``planner`` (default
    :func:`~ensel.library.planning.run_plan.plan_library`).
    Each run is fitted once per sibling (``data.n_siblings``). The runs left out by the
    schedule's end are queued after the others, on standby (see the module docstring);
    ``strong_first``: the planner orders the runs strong first, by expected gain per second
    (passed only where set, so that a planner without the option plans as before)."""
    planner = planner or plan_library
    seconds = budget.left()
    # a family registered without a cost model is not planned: it runs after the planned ones
    unplanned = [
        t
        for t in tasks
        if t[0] == "families" and not traits_of(t[1].family, t[1].task).cost.estimates
    ]
    tasks = [t for t in tasks if t not in unplanned]
    if not tasks:
        return BuildPlan(unplanned)
    plan = planner(
        tasks,
        len(data.y),
        data.X.shape[1],
        max(data.n_classes, 1),
        budget_seconds=max(seconds, 1e-3),
        n_workers=max(int(n_workers), 1),
        n_fits_per_run=data.n_siblings,
        max_memory_bytes=budget.max_memory,
        view_width=view_width(data),
        task=data.task,
        n_held=max(data.hillclimb.size // data.n_siblings, 1),
        run_limit=budget.run_limit,
        estimators=_estimators(tasks),
        view_seconds=view_seconds(tasks, data),
        **({"strong_first": True} if strong_first else {}),
    )
    n_rows = len(data.y)
    out = BuildPlan([*plan.kept, *unplanned, *plan.standby], table=plan.frame(), seconds=seconds)
    out.subsample = dict(plan.subsample)
    out.caps = dict(plan.caps)
    for p in plan.runs:
        if p.decision == LEFT_OUT and p.standby:
            out.standby[p.run.run_id] = p.note
        elif p.decision == LEFT_OUT:
            out.left_out.append((p.section, p.run, f"left out by the plan: {p.note}"))
        elif p.run.run_id in out.subsample:
            rows = out.subsample[p.run.run_id]
            out.notes[p.run.run_id] = (
                f"trained on a stratified subsample of {rows} of {n_rows} rows per fit: its "
                f"cost grows with the square of the rows ({p.note})"
            )
    return out
