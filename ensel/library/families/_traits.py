"""What a family declares about itself beside its fit function: where it stands in a build
under a time budget, what its runs cost (fit time, memory, predict work), how growth searches
its parameters and whether it is quick enough to fit first.

The engines (:mod:`ensel.library.planning.schedule`, :mod:`~ensel.library.planning.run_plan`,
:mod:`~ensel.library.planning.estimate`, :mod:`~ensel.library.planning.memory`,
:mod:`~ensel.library.planning.predict_work`, :mod:`~ensel.library.planning.grow`) read these
records and name no
family. The defaults are right for an ordinary family: ranked after the ranked ones, linear in
the rows, not quick, no search space, no cost model (its runs are fitted after the planned
ones and their predict cost is timed).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "UNRANKED",
    "CostModel",
    "FamilyTraits",
    "FitShape",
    "GrowSpace",
    "StageWork",
    "WorkFn",
]

UNRANKED = 100.0
"""The rank of a family that declares none: after every ranked family."""

StageWork = list[tuple[float, float]]
"""Per stage: ``(calls, units)`` per row."""

WorkFn = Callable[[Any, dict, Sequence[int | None], int, int], StageWork]
"""``(fitted family run, params, stages, view width, outputs) -> StageWork``."""


NATIVE_TABLE = {"view": "native", "native_missing": True, "categorical": True}
"""The declarations of a family that reads the table as it is: numeric NaN passed through and
categorical columns as codes (``categorical`` needs the other two, checked on registering)."""


@dataclass(frozen=True)
class FitShape:
    """What a family's work depends on: ``n`` training rows, ``d`` columns of its view, ``k``
    outputs (classes; 1 for regression), ``n_held`` rows the fit predicts out of fold, its
    parameters and its largest stage (rounds, trees, epochs, k)."""

    n: int
    d: int
    k: int
    n_held: int
    params: Mapping[str, Any]
    top: int

    @property
    def log_n(self) -> float:
        return math.log2(max(self.n, 2))

    @property
    def per_round(self) -> int:
        """Trees per boosting round: one per class beyond two classes."""
        return self.k if self.k > 2 else 1


def _no_held_bytes(params: dict, stages, n_train: int, width: int) -> float:
    """What a fitted sibling of a family that keeps little holds: a small weight matrix."""
    return 8 * width * 64


@dataclass(frozen=True)
class CostModel:
    """A family's cost model, for both tasks.

    ``fit``: units of fit work of one fit (seconds follow from the calibrated constants of the
    family's ``task/name`` entry in ``cost_constants.json``, see
    :mod:`ensel.library.planning.estimate`);
    ``memory``: bytes it holds beyond the view matrix; ``predict``: ``(calls, units)`` per row
    at the largest stage, expected from the table's shape. None for the three: the family is not
    planned (its runs go after the planned ones). ``predict_work``: ``(calls, units)`` per stage
    counted on a fitted run (None: its predict cost is timed instead);
    ``separate_stages``: its stages are separate work (weight snapshots) rather than prefixes of
    one another. ``memory_factor``: working copies of its view matrix a fit makes;
    ``held_bytes(params, stages, n_train, width)``: what one fitted sibling holds.
    ``constants``: ``{"fit": {...}, "predict": {...}}`` in the form of ``cost_constants.json``'s
    entries, a first estimate used only where that file has no entry for the family (a new
    family before ``benchmarks/calibrate_costs.py`` measures it); empty: the default entry."""

    fit: Callable[[FitShape], float] | None = None
    memory: Callable[[FitShape], float] | None = None
    predict: Callable[[FitShape], tuple[float, float]] | None = None
    predict_work: WorkFn | None = None
    separate_stages: bool = False
    memory_factor: float = 4.0
    held_bytes: Callable[[dict, Any, int, int], float] = _no_held_bytes
    constants: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    @property
    def estimates(self) -> bool:
        """Whether the model estimates a run before it is fitted (fit, memory and predict)."""
        return None not in (self.fit, self.memory, self.predict)


@dataclass(frozen=True)
class GrowSpace:
    """A family's search space for growth: a function ``(trial, prefix) -> params``, the
    stages and the calibrations every proposed run gets; ``default``: the family's place among
    those growth proposes from when none are named (lower first; None: only when named)."""

    suggest: Callable[[Any, str], dict[str, Any]]
    stages: tuple[int, ...]
    calibrations: tuple[str, ...] = ("none",)
    default: int | None = None


def _one(params: dict[str, Any], stages: tuple[int, ...] | None) -> float:
    return 1.0


def _never(params: dict[str, Any]) -> bool:
    return False


@dataclass(frozen=True)
class FamilyTraits:
    """What the engines need to know of a family.

    ``rank``: its place in a build under a time budget, from the usually strongest family on
    tabular data (0) down; ``relative_cost(params, stages)``: the work a run asks for, compared
    only within the family to take its cheapest runs first; ``deferred(params)``: on large data
    the run goes after everything else (fit cost growing with the square of the rows);
    ``quadratic(params)``: the run's cost grows with the square of the rows, so it is planned
    within the quadratic share and paced apart from the family's other runs; ``quick``: where
    set, the family is cheap and reliable enough to be fitted first, in the builder's own
    process, while its workers start (of several such families in a spec, the lowest
    ``quick`` goes); ``grow``: growth's search space (None: growth does not propose it);
    ``cost``: its cost model."""

    rank: float = UNRANKED
    relative_cost: Callable[[dict[str, Any], tuple[int, ...] | None], float] = _one
    deferred: Callable[[dict[str, Any]], bool] = _never
    quadratic: Callable[[dict[str, Any]], bool] = _never
    quick: int | None = None
    grow: GrowSpace | None = None
    cost: CostModel = field(default_factory=CostModel)
