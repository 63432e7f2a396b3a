"""The work of predicting with a fitted run, counted from its structure (not timed), so that the
same fitted members cost the same on any machine.

Each family declares a work function (``CostModel.predict_work``, see
:class:`~ensel.library.families.CostModel`) that reads the fitted run through its attributes
(trees and their depths, support vectors, training rows, weight snapshots, ...) and returns,
per stage, ``(calls, units)`` for one row: ``calls`` the model calls a prediction makes (a
forest calls each tree, a booster itself once), ``units`` the elementary steps per row (node
visits, multiply-adds, distances). :mod:`ensel.library.planning.cost` turns them into milliseconds
per
1,000 rows with per-family constants measured once (``benchmarks/calibrate_costs.py``, shipped
in ``cost_constants.json``).

For a ``cumulative`` run a stage's work includes every smaller stage (the trees up to it); a run
whose predict cannot skip stages pays for all of them at any stage, as the builder times it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..families import StageWork, traits_of

__all__ = ["StageWork", "has_predict_work", "predict_work", "view_work"]


def has_predict_work(family: str, task: str = "classification") -> bool:
    """Whether ``family`` declares a predict work function for ``task`` (else its runs' predict
    cost is timed)."""
    return traits_of(family, task).cost.predict_work is not None


def predict_work(
    family: str,
    family_run: Any,
    params: dict,
    stages: Sequence[int | None],
    width: int,
    outputs: int,
    skips_stages: bool = True,
    *,
    task: str = "classification",
) -> StageWork:
    """``(calls, units)`` per row for each of ``stages`` of a fitted ``family_run`` that reads a
    view ``width`` columns wide and predicts ``outputs`` columns. ``skips_stages=False``: its
    predict computes every stage whatever is asked, so each stage costs them all. A ValueError
    names a family without a work function."""
    cost = traits_of(family, task).cost
    if cost.predict_work is None:
        raise ValueError(
            f"{task} family {family!r} declares no predict work function "
            "(FamilyTraits.cost.predict_work)"
        )
    work = cost.predict_work(family_run, params, list(stages), int(width), int(outputs))
    if not skips_stages and len(work) > 1:  # one predict computes every stage
        if cost.separate_stages:
            total = (sum(c for c, _ in work), sum(u for _, u in work))
        else:
            total = max(work, key=lambda w: w[1])
        work = [total] * len(work)
    return work


def view_work(view: Any, width: int) -> tuple[float, float]:
    """``(calls, units)`` per row of transforming a row: every input column is read, every
    output column (one-hot levels, missing indicators) written."""
    columns = view.columns
    n_cat = len(columns.categorical)
    return float(1 + n_cat), float(len(columns.numeric) + n_cat + width)
