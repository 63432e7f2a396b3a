"""Chaos forest (Sandia report SAND2013-2534, §2.5 and §3): purely random trees (Fan et al.
2003) that tell the training rows from an exact uniform background, pruned by Brier score."""

from __future__ import annotations

from numbers import Integral, Real
from typing import ClassVar

from sklearn.utils._param_validation import Interval, StrOptions

from ._base import register
from .cert import BackgroundForestDetector

__all__ = ["ChaosForest"]


@register("chaos_forest")
class ChaosForest(BackgroundForestDetector):
    """An ensemble of purely random trees grown against the exact uniform background.

    As the report (§2.5, §3): the rows are split at random for each tree; a bootstrap sample
    of a ``structure_fraction`` (half) of them grows the tree, splitting a random variable at a
    random threshold drawn from the midpoints between the node's sorted values plus, with
    ``edge_splits``, one threshold below and one above all of them; trees grow until the data
    in a node runs out (or ``max_depth``). A bootstrap sample of the other rows (disjoint from
    the first: no row both grows and prunes a tree) prunes it bottom-up wherever a leaf's Brier
    score on them (held-out rows against their exact expected background counts) is strictly
    lower than the subtree's (``prune="brier"``; "error" or None also allowed). Risk is the
    mean over trees of the leaf's ``bg / (fg + bg)``, 1 outside the box; a missing value mixes
    both branches (C4.5)."""

    _parameter_constraints: ClassVar[dict] = {
        "n_estimators": [Interval(Integral, 1, None, closed="left")],
        "edge_splits": ["boolean"],
        "prune": [StrOptions({"brier", "error"}), None],
        "structure_fraction": [Interval(Real, 0, 1, closed="neither")],
        "aggregate": [StrOptions({"probability", "density"})],
        "max_depth": [Interval(Integral, 1, None, closed="left"), None],
        "bounds": "no_validation",
        "n_jobs": [Integral, None],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        n_estimators: int = 100,
        edge_splits: bool = True,
        prune: str | None = "brier",
        structure_fraction: float = 0.5,
        aggregate: str = "probability",
        max_depth: int | None = None,
        bounds=None,
        n_jobs: int | None = None,
        random_state=None,
    ):
        self.n_estimators = n_estimators
        self.edge_splits = edge_splits
        self.prune = prune
        self.structure_fraction = structure_fraction
        self.aggregate = aggregate
        self.max_depth = max_depth
        self.bounds = bounds
        self.n_jobs = n_jobs
        self.random_state = random_state

    def _grow_options(self, d: int) -> dict:
        return {"split": "random", "edge_splits": self.edge_splits, "max_depth": self.max_depth}

    def _sampling(self) -> dict:
        return {"prune": self.prune, "structure_fraction": self.structure_fraction}
