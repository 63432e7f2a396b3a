"""Fit time, peak memory and predict cost of a run before it is fitted, from the shape of the
data (rows, columns, classes) and the run's parameters, so that a library can be planned for a
large table within a time budget (:mod:`ensel.library.planning.run_plan`).

Each family declares a cost model (:class:`~ensel.library.families.CostModel`): how its fit
grows with rows ``n``, view width ``d``, outputs ``K`` and its parameters (boosting ``~ n d
rounds K log2(leaves)`` on histograms, forests ``~ trees n log n mtry``, kernel SVMs ``~ n^2 d``,
...), the bytes it holds (the view matrix, the model, working buffers) and the predict work of
its expected structure. Seconds are ``overhead + seconds_per_unit x work`` (``x work **
exponent`` for a family whose pilot fits grew slower than linearly, such as iterative solvers
that converge in fewer iterations on more rows), with the constants of the family's
``task/name`` entry measured once on pilot fits by ``benchmarks/calibrate_costs.py`` (shipped in
``cost_constants.json``), each family's linear or power-law form whichever fits its pilots
better; memory is counted in bytes from the same shapes (neither timed nor calibrated).
Estimates are for planning, within a small factor on the pilot sizes; extrapolated to far
larger tables they carry the error of the work model's exponent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..families import CostModel, FitShape, get_family, traits_of
from .cost import cost_constants

__all__ = ["FitShape", "RunEstimate", "cost_model", "estimate_run", "fit_work"]

FLOAT = 8
"""Bytes per float64 value."""


@dataclass(frozen=True)
class RunEstimate:
    """``fit_seconds`` of one fit (plus its out-of-fold prediction), ``peak_bytes`` it holds at
    once, ``predict_ms`` per 1,000 rows at its largest stage (one model)."""

    fit_seconds: float
    peak_bytes: float
    predict_ms: float


def cost_model(family: str, task: str = "classification") -> CostModel:
    """The cost model ``family`` declares for ``task``; a ValueError says when it declares
    none that estimates runs (such a family's runs are fitted after the planned ones)."""
    model = traits_of(family, task).cost
    if not model.estimates:
        raise ValueError(
            f"{task} family {family!r} declares no cost model that estimates a run before it is "
            "fitted (FamilyTraits.cost: fit, memory and predict)"
        )
    return model


def fit_work(
    family: str,
    params: Mapping[str, Any],
    stages: Sequence[int] | None,
    n_rows: int,
    width: int,
    n_outputs: int,
    n_held: int | None = None,
    *,
    task: str = "classification",
) -> float:
    """Units of fit work of one fit of ``family`` (see the module docstring); ``n_held``: rows
    predicted out of fold (a fifth of ``n_rows`` by default)."""
    shape = _shape(params, stages, n_rows, width, n_outputs, n_held)
    return cost_model(family, task).fit(shape)


def estimate_run(
    family: str,
    params: Mapping[str, Any],
    stages: Sequence[int] | None,
    n_rows: int,
    n_cols: int,
    n_classes: int,
    view_width: int | None = None,
    *,
    task: str = "classification",
    n_held: int | None = None,
) -> RunEstimate:
    """Fit seconds, peak bytes and predict ms (per 1,000 rows) of one fit of ``family`` with
    ``params`` (its full parameters, defaults included: ``RunSpec.param_dict``) and ``stages``
    on ``n_rows`` rows. ``n_cols``: the table's columns (what native views see);
    ``view_width``: the standardized view's width (one-hot levels and missing indicators;
    ``n_cols`` where None), which linear, kernel, neighbour and net families see;
    ``n_classes``: classes (ignored for ``task="regression"``). A ValueError names an unknown
    family, or one without a cost model."""
    view = get_family(family, task).view
    width = int(view_width or n_cols) if view == "standardized" else int(n_cols)
    outputs = 1 if task == "regression" else max(int(n_classes), 2)
    shape = _shape(params, stages, n_rows, width, outputs, n_held)
    model = cost_model(family, task)
    constants = cost_constants()
    own = model.constants  # a first estimate, for a family not calibrated yet
    fit = constants["fit"].get(f"{task}/{family}") or own.get("fit") or constants["fit"]["default"]
    seconds = fit["overhead_s"] + fit["s_per_unit"] * model.fit(shape) ** fit.get("exponent", 1)
    peak = FLOAT * n_rows * width + model.memory(shape)
    calls, units = model.predict(shape)
    table = constants["predict"]
    pc = table.get(f"{task}/{family}") or own.get("predict") or table["default"]
    vc = table.get(f"view/{view}") or table["default"]
    predict_ms = (
        calls * pc["ms_per_call"]
        + units * pc["ms_per_unit"]
        + vc["ms_per_call"]
        + 2 * width * vc["ms_per_unit"]
    )
    return RunEstimate(float(seconds), float(peak), float(predict_ms))


def _shape(params, stages, n_rows, width, n_outputs, n_held) -> FitShape:
    top = max((int(s) for s in stages or () if s is not None), default=1)
    held = max(n_rows // 5, 1) if n_held is None else int(n_held)
    return FitShape(int(n_rows), max(int(width), 1), int(n_outputs), held, dict(params), top)
