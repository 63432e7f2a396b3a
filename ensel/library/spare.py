"""The spare-time tier: which of a spec's ``spare`` runs to fit in the time the main runs left,
judged by the planner's estimates (:func:`ensel.library.plan.plan_library`) before any of them
starts, so that none is started only to be cut at the deadline.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .estimate import estimate_run
from .plan import KEPT, plan_library
from .views import MAX_LEVELS

__all__ = ["SpareChoice", "choose_spare", "standardized_width"]


@dataclass(frozen=True)
class SpareChoice:
    """The spare runs to fit (``kept``, in the order to start them) and those left out, each
    with the planner's note (``left``: ``[(run, note)]``)."""

    kept: tuple
    left: tuple[tuple[object, str], ...]


def standardized_width(n_numeric: int, n_levels: Sequence[int]) -> int:
    """The width of the standardized view of a table (numeric columns plus one-hot levels, at
    most ``MAX_LEVELS`` kept and an "other" column per categorical), for the estimates."""
    return int(n_numeric + sum(min(n, MAX_LEVELS) + 1 for n in n_levels))


def choose_spare(
    runs: Sequence,
    seconds_left: float | None,
    *,
    n_rows: int,
    n_cols: int,
    n_classes: int,
    n_workers: int,
    n_fits_per_run: int,
    view_width: int | None = None,
    task: str = "classification",
) -> SpareChoice:
    """The spare runs that end within ``seconds_left`` on ``n_workers`` workers by the
    planner's list schedule (every run when ``seconds_left`` is None: no time budget). A run
    the planner would train on a subsample only (a kernel SVM, k-NN on a large table) is left
    out: the builder does not subsample. A family without a fit model is left out under a
    budget (its time cannot be judged)."""
    runs = list(runs)
    if seconds_left is None:
        return SpareChoice(tuple(runs), ())
    if seconds_left <= 0:
        return SpareChoice((), tuple((r, "no time was left after the main runs") for r in runs))
    plannable, unknown = [], []
    for run in runs:
        try:
            estimate_run(run.family, run.param_dict, run.stages, 2, 1, n_classes, task=task)
        except ValueError as exc:
            unknown.append((run, f"not estimated: {exc}"))
        else:
            plannable.append(run)
    plan = plan_library(
        plannable,
        n_rows,
        n_cols,
        n_classes,
        budget_seconds=float(seconds_left),
        n_workers=n_workers,
        n_fits_per_run=n_fits_per_run,
        view_width=view_width,
        task=task,
    )
    kept, left = [], list(unknown)
    for p in plan.runs:
        if p.decision == KEPT and p.rows >= n_rows:
            kept.append(p.run)
        else:
            note = p.note if p.decision != KEPT else f"planned on {p.rows} of {n_rows} rows"
            left.append((p.run, f"spare tier, estimated: {note} ({seconds_left:.0f} s left)"))
    return SpareChoice(tuple(kept), tuple(left))
