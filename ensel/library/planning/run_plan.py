"""A plan for building a library on a large table within a time budget: which runs to train,
which to train on a subsample, which to leave out, before any run starts.

The runs are taken in the anytime order (:func:`ensel.library.planning.schedule.anytime_order`:
round robin over families, strongest first, each family's cheapest runs first), or on a large
table strong first (:func:`ensel.library.planning.schedule.gain_order`: by expected gain per
estimated second, the families that earn little weight there in the time left), and each run's fit
time and memory are estimated from the table's shape
(:func:`ensel.library.planning.estimate.estimate_run`).
A list schedule over ``n_workers`` keeps a run only when it ends before the budget, so no run is
cut at the deadline, and every family's cheapest run comes up in the first round. Stages are
never cut by the plan: a kept boosting run or forest keeps its whole stage ladder, except that
a run of a family that stops in time (boosting, :attr:`Family.stops_in_time`) estimated past
the per-run limit, or past the budget's end from where its worker is free, is kept *capped*
where its first stage fits or it has at least half the per-run limit: planned to stop at the
limit or at the budget's end, it ends with the rounds it reached (on large tables the
default's boosting would otherwise never start). Learners whose fit grows
with the square of the rows (kernel SVMs, k-NN) come last and get at most ``quadratic_share``
of the budget: each trains on a stratified subsample sized so that it fits its share, or is
left out with a note, so they never starve the rest.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..families import get_family, traits_of
from .estimate import estimate_run
from .schedule import anytime_order, gain_order

__all__ = [
    "MIN_SUBSAMPLE",
    "PlannedRun",
    "RunPlan",
    "pace_group",
    "plan_library",
    "stratified_subsample",
]

MIN_SUBSAMPLE = 500
"""Fewest rows a quadratic learner is trained on; below, it is left out."""
QUADRATIC_SHARE = 0.2
"""Share of the budget kernel SVMs, k-NN and kernel naive Bayes get at most, together."""

KEPT, SUBSAMPLED, LEFT_OUT = "kept", "subsampled", "left out"


@dataclass(frozen=True)
class PlannedRun:
    """One run's fate: ``decision`` (``"kept"``, ``"subsampled"`` or ``"left out"``), the rows
    each of its fits trains on (``rows``; 0 when left out), its estimated seconds (all fits)
    and peak bytes (one fit), its estimated start and end on the schedule (seconds from the
    build's start; None when left out), and a ``note`` that says why. ``standby``: left out
    only because the schedule ran past the budget (not for memory, not a quadratic learner),
    so a build that runs faster than estimated may still start it."""

    section: str
    run: Any
    decision: str
    rows: int
    seconds: float
    peak_bytes: float
    start: float | None
    end: float | None
    note: str
    standby: bool = False
    capped: bool = False  # planned to stop adding stages at ``seconds`` (limit, budget's end)
    stops_in_time: bool = False  # of a family that stops adding stages at a time cap


@dataclass(frozen=True)
class RunPlan:
    """The planned runs in the order to start them (kept and subsampled ones first, in anytime
    order; then the left-out ones), and the budget they were planned for."""

    runs: tuple[PlannedRun, ...]
    budget_seconds: float
    n_workers: int

    @property
    def kept(self) -> list[tuple[str, Any]]:
        """``(section, run)`` of the runs to train, in the order to start them."""
        return [(p.section, p.run) for p in self.runs if p.decision != LEFT_OUT]

    @property
    def standby(self) -> list[tuple[str, Any]]:
        """``(section, run)`` of the runs left out only by the schedule's end, in anytime order:
        worth starting if the build runs ahead of its estimates."""
        return [(p.section, p.run) for p in self.runs if p.standby]

    @property
    def subsample(self) -> dict[str, int]:
        """Run id -> rows each fit of that run trains on, for the subsampled runs."""
        return {p.run.run_id: p.rows for p in self.runs if p.decision == SUBSAMPLED}

    @property
    def caps(self) -> dict[str, float]:
        """Run id -> seconds a capped run may take in all (it stops adding stages there)."""
        return {p.run.run_id: p.seconds for p in self.runs if p.capped}

    @property
    def seconds(self) -> float:
        """Estimated wall seconds of the kept runs on ``n_workers`` workers."""
        return max((p.end for p in self.runs if p.end is not None), default=0.0)

    def frame(self) -> pd.DataFrame:
        """One row per run: run id, family, its pace group (:func:`pace_group`), decision,
        rows, seconds, peak MB, start, end, note, whether it is planned capped at the per-run
        limit and whether its family stops in time."""
        return pd.DataFrame(
            [
                {
                    "run": p.run.run_id,
                    "family": p.run.family,
                    "pace": pace_group(p.section, p.run),
                    "decision": p.decision,
                    "rows": p.rows,
                    "seconds": p.seconds,
                    "peak_mb": p.peak_bytes / 1e6,
                    "start": p.start,
                    "end": p.end,
                    "note": p.note,
                    "capped": p.capped,
                    "stops_in_time": p.stops_in_time,
                }
                for p in self.runs
            ]
        )


def plan_library(
    runs: Sequence,
    n_rows: int,
    n_cols: int,
    n_classes: int = 2,
    *,
    budget_seconds: float,
    n_workers: int = 1,
    n_fits_per_run: int = 5,
    max_memory_bytes: float | None = None,
    view_width: int | None = None,
    task: str = "classification",
    quadratic_share: float = QUADRATIC_SHARE,
    min_subsample: int = MIN_SUBSAMPLE,
    n_held: int | None = None,
    run_limit: float | None = None,
    estimators: Mapping[str, Callable] | None = None,
    view_seconds: Mapping[tuple[str, bool], tuple[float, float]] | None = None,
    strong_first: bool = False,
) -> RunPlan:
    """Plan a build of ``runs`` (run specs, or the builder's ``(section, run spec)`` pairs) on
    a table of ``n_rows`` rows and ``n_cols`` columns (``view_width``: its standardized view's
    width, one-hot levels included; ``n_classes``: classes, ignored for regression) within
    ``budget_seconds`` on ``n_workers`` workers. Each run is fitted ``n_fits_per_run`` times
    (the folds, K under ``cv=K``), each fit on ``n_rows (K-1)/K`` rows predicting the other
    ``n_rows/K``; ``max_memory_bytes``: memory shared by the workers (None: no limit). Runs of
    other sections (detectors) are planned like the models where ``estimators`` holds their
    kind's estimate, else kept, where the anytime order puts them (after the families' first
    round), at no estimated cost. ``n_held``: the rows each fit
    predicts, where the builder knows them (a held-out hillclimb set, or ``n_rows/K``): a fit
    then trains on ``n_rows - n_held`` rows, or on the subsample, and always predicts
    ``n_held`` (a subsampled k-NN still queries every hillclimb row). ``estimators``: section
    -> ``estimate(run, n_rows, n_cols, n_held, n_fits)``, seconds or None (see
    :class:`~ensel.library.kinds.Kind`). ``view_seconds``: ``(view, native_missing)`` ->
    ``(seconds per call, seconds per row)`` of its view on this table
    (:func:`~ensel.library.planning.build_plan.view_seconds` times them): each fit pays two
    calls (fitted on the training rows, applied to the held ones) and the rows of both, beside
    the family's own fit (the cost constants leave the view out). ``strong_first``: the runs
    in :func:`~ensel.library.planning.schedule.gain_order` (strong families first, by
    expected gain per estimated second) instead of the anytime order, and no share of the
    budget kept for the learners quadratic in the rows: they get what the other runs leave.
    See the module docstring."""
    if budget_seconds <= 0 or n_workers < 1 or n_fits_per_run < 1:
        raise ValueError(
            f"plan_library: budget_seconds={budget_seconds}, n_workers={n_workers}, "
            f"n_fits_per_run={n_fits_per_run}; give a positive budget and at least one of each"
        )
    tasks = [r if isinstance(r, tuple) else ("families", r) for r in runs]
    per_worker_memory = None if max_memory_bytes is None else max_memory_bytes / n_workers
    costing = _Costing(
        n_rows, n_cols, n_classes, n_fits_per_run, n_held, view_width, task, view_seconds or {}
    )
    cap = budget_seconds if run_limit is None else min(run_limit, budget_seconds)
    order = _order(tasks, costing, cap if strong_first else None)
    quadratic = [i for i in order if tasks[i][0] == "families" and _quadratic(tasks[i][1])]
    is_quadratic = set(quadratic)
    main = [i for i in order if i not in is_quadratic]
    share = 0.0 if strong_first else quadratic_share
    horizon = budget_seconds * (1.0 - share) if quadratic else budget_seconds
    workers = [(0.0, w) for w in range(n_workers)]  # (free at, worker)
    heapq.heapify(workers)
    limits = _Limits(horizon, run_limit, per_worker_memory)
    planned: dict[int, PlannedRun] = {}
    for i in main:
        planned[i] = _plan_main_run(*tasks[i], costing, workers, limits, estimators or {})
    # quadratic learners: what the budget has left, shared equally
    quadratic_runs = [(i, *tasks[i]) for i in quadratic]
    left = sorted(workers)
    planned.update(
        _plan_quadratic(quadratic_runs, costing, left, budget_seconds, limits, min_subsample)
    )
    ordered = [planned[i] for i in order]
    ordered = [p for p in ordered if p.decision != LEFT_OUT] + [
        p for p in ordered if p.decision == LEFT_OUT
    ]
    return RunPlan(tuple(ordered), float(budget_seconds), int(n_workers))


def _order(tasks: list, costing: _Costing, cap: float | None) -> list[int]:
    """The order to plan ``tasks`` in: the anytime order where ``cap`` is None, else strong
    first by expected gain per estimated second, each family run's seconds on all the rows (at
    most ``cap``, the most one run may take, for a family that stops adding stages in time: it
    is planned capped there)."""
    if cap is None:
        return anytime_order(tasks, costing.n_rows)
    seconds = []
    for section, run in tasks:
        if section != "families":
            seconds.append(0.0)
            continue
        full = costing.cost(run, costing.n_rows)[0]
        in_time = get_family(run.family, run.task).stops_in_time
        seconds.append(min(full, cap) if in_time else full)
    return gain_order(tasks, seconds)


def _left(section, run, seconds, peak, note, standby=False, in_time=False) -> PlannedRun:
    return PlannedRun(
        section,
        run,
        LEFT_OUT,
        0,
        seconds,
        peak,
        None,
        None,
        note,
        standby,
        stops_in_time=in_time,
    )


def _plan_quadratic(
    runs: list,
    costing: _Costing,
    left: list,
    budget_seconds: float,
    limits: _Limits,
    min_subsample: int,
) -> dict[int, PlannedRun]:
    """The plans of the learners quadratic in the rows (``runs``: ``(index, section, run)``),
    each on the largest subsample that fits an equal share of what the budget has left on the
    workers (``left``, a heap of ``(free at, worker)``), or left out under ``min_subsample``."""
    n_rows, run_limit, memory = costing.n_rows, limits.run_limit, limits.per_worker_memory
    planned: dict[int, PlannedRun] = {}
    for q, (i, section, run) in enumerate(runs):
        free, w = heapq.heappop(left)
        remaining = (budget_seconds - free) + sum(budget_seconds - f for f, _ in left)
        share = min(budget_seconds - free, remaining / (len(runs) - q))
        share = share if run_limit is None else min(share, run_limit)
        rows = _largest_rows(lambda m, run=run: costing.cost(run, m), n_rows, share, memory)
        if rows < min(min_subsample, n_rows):
            seconds, peak = costing.cost(run, n_rows)
            planned[i] = _left(
                section,
                run,
                seconds,
                peak,
                f"quadratic in rows: even {min(min_subsample, n_rows)} rows would not fit its "
                f"share of the budget ({max(share, 0):.0f} s)",
            )
            heapq.heappush(left, (free, w))
            continue
        seconds, peak = costing.cost(run, rows)
        decision = KEPT if rows >= n_rows else SUBSAMPLED
        note = f"~{seconds:.1f} s" + ("" if decision == KEPT else f" on {rows} of {n_rows} rows")
        planned[i] = PlannedRun(
            section, run, decision, rows, seconds, peak, free, free + seconds, note
        )
        heapq.heappush(left, (free + seconds, w))
    return planned


@dataclass(frozen=True)
class _Costing:
    """The estimated seconds and peak memory of a run on this table (see ``plan_library``)."""

    n_rows: int
    n_cols: int
    n_classes: int
    n_fits: int
    n_held: int | None
    view_width: int | None
    task: str
    view_seconds: Mapping

    def held_of(self, rows: int) -> int:
        """Rows each fit predicts: ``n_held``, else a fold of ``rows`` (a fifth for one fit)."""
        if self.n_held is not None:
            return self.n_held
        return max(rows // self.n_fits, 1) if self.n_fits > 1 else max(rows // 5, 1)

    def cost(self, run, rows: int, stages=None) -> tuple[float, float]:
        """Estimated seconds (all fits) and peak bytes (one fit) of ``run`` on ``rows`` rows,
        up to ``stages`` (default: all of its own)."""
        held = self.held_of(rows)
        if self.n_held is not None:
            train = max(min(rows, self.n_rows - self.n_held), 1)
        else:
            train = rows - held if self.n_fits > 1 else rows
        est = estimate_run(
            run.family,
            run.param_dict,
            run.stages if stages is None else stages,
            train,
            self.n_cols,
            self.n_classes,
            self.view_width,
            task=self.task,
            n_held=held,
        )
        native_missing = get_family(run.family, self.task).native_missing
        per_call, per_row = self.view_seconds.get((run.view, native_missing), (0.0, 0.0))
        view = 2 * per_call + per_row * (train + held)
        return self.n_fits * (est.fit_seconds + view), est.peak_bytes


@dataclass(frozen=True)
class _Limits:
    """What bounds a main-tier run: the horizon of the budget it must end by, the seconds one
    run may take, and the memory of one worker (None: unbounded)."""

    horizon: float
    run_limit: float | None
    per_worker_memory: float | None


def _plan_main_run(
    section: str, run, costing: _Costing, workers: list, limits: _Limits, estimators: Mapping
) -> PlannedRun:
    """The plan of one run of the main tier on the worker free first (``workers``, a heap of
    ``(free at, worker)``, advanced where the run is kept): kept, capped where it stops in
    time, or left out (on standby where time alone leaves it out)."""
    n_rows = costing.n_rows
    if section == "families":
        seconds, peak = costing.cost(run, n_rows)
        in_time = get_family(run.family, run.task).stops_in_time
    else:
        estimate = estimators.get(section)
        args = (run, n_rows, costing.n_cols, costing.held_of(n_rows), costing.n_fits)
        seconds, peak, in_time = None if estimate is None else estimate(*args), 0.0, False
        if seconds is None:
            return PlannedRun(
                section, run, KEPT, n_rows, 0.0, 0.0, None, None,
                "not estimated (no cost model for this kind of run)",
            )  # fmt: skip
    free, w = workers[0]
    horizon, run_limit = limits.horizon, limits.run_limit
    full, capped = seconds, False
    if in_time:  # it stops adding stages where its time ends: the limit, or the horizon
        room = horizon - free if run_limit is None else min(run_limit, horizon - free)
        if seconds > room:  # worth capping where it reaches its first stage or half the limit
            half = run_limit is not None and room >= run_limit / 2
            first = costing.cost(run, n_rows, run.stages[:1])[0] if run.stages else seconds
            capped = half or room >= first
        seconds = room if capped else seconds
    why = _why_left_out(seconds, peak, free, capped, limits)
    if why is not None:
        standby = not why.startswith("needs ~")  # left out by time alone: on standby
        return _left(section, run, seconds, peak, why, standby, in_time)
    heapq.heapreplace(workers, (free + seconds, w))
    note = f"~{seconds:.1f} s"
    if capped:
        where = "the limit" if seconds == run_limit else "the budget's end"
        note = f"~{seconds:.0f} s: stops adding stages at {where} (~{full:.0f} s for all)"
    return PlannedRun(
        section, run, KEPT, n_rows, seconds, peak, free, free + seconds, note,
        capped=capped, stops_in_time=in_time,
    )  # fmt: skip


def _why_left_out(
    seconds: float, peak: float, free: float, capped: bool, limits: _Limits
) -> str | None:
    """Why a run of ``seconds`` and ``peak`` bytes starting at ``free`` does not fit the
    ``limits`` (a memory reason starts "needs ~"), or None."""
    memory, run_limit, horizon = limits.per_worker_memory, limits.run_limit, limits.horizon
    if memory is not None and peak > memory:
        return (
            f"needs ~{peak / 1e9:.2f} GB per fit, more than the {memory / 1e9:.2f} GB a worker has"
        )
    if run_limit is not None and seconds > run_limit:
        return f"~{seconds:.0f} s is more than the {run_limit:.0f} s a run may take"
    if not capped and free + seconds > horizon:  # a capped run ends by the horizon
        return (
            f"~{seconds:.0f} s would end after the budget "
            f"({free:.0f} s + {seconds:.0f} s > {horizon:.0f} s)"
        )
    return None


def pace_group(section: str, run) -> str:
    """The runs whose estimates err alike, so that one's pace counts for the others: a family,
    its learners quadratic in the rows apart. The cost model errs per work model (kernel SVMs
    on subsamples and linear SVMs err in opposite directions), so a linear SVM paced by the
    kernel ones would be cut at the deadline."""
    family = run.family
    return f"{family} (quadratic)" if section == "families" and _quadratic(run) else family


def _quadratic(run) -> bool:
    """Whether the run's family declares its cost quadratic in the rows for these parameters
    (``FamilyTraits.quadratic``: kernel SVMs, k-NN, kernel naive Bayes)."""
    return traits_of(run.family, run.task).quadratic(dict(run.params))


def _largest_rows(cost, n_rows: int, seconds: float, memory: float | None) -> int:
    """The most rows (at most ``n_rows``) whose estimated seconds and memory fit; 0 if none."""

    def fits(m: int) -> bool:
        s, peak = cost(m)
        return s <= seconds and (memory is None or peak <= memory)

    if fits(n_rows):
        return n_rows
    lo, hi = 0, n_rows  # fits(lo) or lo == 0; not fits(hi)
    while hi - lo > max(1, n_rows // 1000):
        mid = (lo + hi) // 2
        if mid > 0 and fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


def stratified_subsample(y, m: int, random_state: int = 0) -> np.ndarray:
    """Sorted indices of ``m`` rows of ``y`` keeping its class shares (for regression, its
    quantile bins): each class gets its share of ``m``, at least one row while it has one."""
    y = np.asarray(y)
    n = len(y)
    if m >= n:
        return np.arange(n)
    rng = np.random.default_rng(random_state)
    if y.dtype.kind == "f" and len(np.unique(y)) > 20:  # regression: 10 quantile bins
        strata = np.searchsorted(np.quantile(y, np.linspace(0, 1, 11)[1:-1]), y)
    else:
        strata = np.unique(y, return_inverse=True)[1]
    groups = [np.flatnonzero(strata == s) for s in np.unique(strata)]
    quota = np.array([len(g) for g in groups], dtype=float) * m / n
    take = np.maximum(np.floor(quota).astype(int), 1)
    for j in np.argsort(-(quota - np.floor(quota)))[: max(m - take.sum(), 0)]:
        take[j] += 1
    return np.sort(
        np.concatenate(
            [
                rng.choice(g, min(t, len(g)), replace=False)
                for g, t in zip(groups, take, strict=True)
            ]
        )
    )
