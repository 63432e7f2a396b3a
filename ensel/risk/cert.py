"""CERT (Hooker 2004) and the CERT forest (Sandia report SAND2013-2534, §2.4 and §3): trees
that tell the training rows from an exact uniform background on the box; a row's risk is the
probability that it comes from the background."""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from ._base import Detector, register
from ._tree import BackgroundForest, fit_background_forest, grow_tree, prune_tree

__all__ = ["CERT", "BackgroundForestDetector", "CERTForest"]


@register("cert")
class CERT(Detector):
    """One confidence-and-extrapolation-risk tree (Hooker 2004, §4).

    A classification tree grown against the exact uniform background (expected counts from
    each node's volume, never sampled points), then pruned by reduced-error pruning on a
    held-out share of the rows with the expected background counts as the held-out background
    (Hooker §4 prunes on test-set misclassification error). Risk is ``bg / (fg + bg)`` in the
    row's leaf, 1 outside the box (report §2.1); a missing value mixes both branches (C4.5).

    Parameters: ``criterion`` "gini" (Hooker) or "entropy"; ``prune`` "error" (Hooker), "brier"
    or None (grow on all rows, no pruning); ``validation_fraction`` of the rows held out to
    prune; ``min_samples_leaf`` data weight on each side of a split; ``max_depth``; ``bounds``
    known numeric ranges (else the training range); ``random_state``."""

    one_outside_box = True
    test_params: ClassVar[dict] = {}
    _parameter_constraints: ClassVar[dict] = {
        "criterion": [StrOptions({"gini", "entropy"})],
        "prune": [StrOptions({"error", "brier"}), None],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "min_samples_leaf": [Interval(Real, 0, None, closed="right")],
        "max_depth": [Interval(Integral, 1, None, closed="left"), None],
        "bounds": "no_validation",
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        criterion: str = "gini",
        prune: str | None = "error",
        validation_fraction: float = 0.25,
        min_samples_leaf: float = 1,
        max_depth: int | None = None,
        bounds=None,
        random_state=None,
    ):
        self.criterion = criterion
        self.prune = prune
        self.validation_fraction = validation_fraction
        self.min_samples_leaf = min_samples_leaf
        self.max_depth = max_depth
        self.bounds = bounds
        self.random_state = random_state

    def _fit(self, Z, y):
        self._validate_params()
        rng = np.random.default_rng(self.random_state)
        n = Z.shape[0]
        w_grow, w_held = np.ones(n), np.zeros(n)
        if self.prune is not None:
            n_held = round(self.validation_fraction * n)
            if n_held < 1 or n_held >= n:
                raise ValueError(
                    f"validation_fraction={self.validation_fraction} leaves {n_held} of {n} rows "
                    "to prune with; pass more rows, another fraction, or prune=None"
                )
            held = rng.permutation(n)[:n_held]
            w_grow[held], w_held[held] = 0.0, 1.0
        space = self.space_
        tree = grow_tree(
            Z, w_grow, space.low, space.high, space.categorical, split=self.criterion,
            max_depth=self.max_depth, min_samples_leaf=self.min_samples_leaf,
            seed=int(rng.integers(2**63)),
        )  # fmt: skip
        if self.prune is not None:
            tree = prune_tree(tree, Z, w_held, self.prune)
        self.tree_ = tree
        self.forest_ = BackgroundForest.stack([tree])

    def _risk(self, Z):
        return self.forest_.risk(Z)


class BackgroundForestDetector(Detector):
    """A forest of trees grown against the exact uniform background (``_tree``): the CERT
    forest and the chaos forest are this, each stating only how its trees grow
    (``_grow_options``) and how rows are drawn for them (``_sampling``). Risk is the mean over
    trees of the leaf's ``bg / (fg + bg)`` (``aggregate="probability"``) or of the density
    ratios (``"density"``), 1 outside the box; ``n_jobs`` grows trees in threads and the forest
    does not depend on it."""

    one_outside_box = True
    test_params: ClassVar[dict] = {"n_estimators": 10}

    def _grow_options(self, d: int) -> dict:
        """The keyword arguments of ``grow_tree`` for data with ``d`` encoded columns."""
        raise NotImplementedError

    def _sampling(self) -> dict:
        """The row sampling of ``fit_background_forest`` (``bootstrap``, ``prune``,
        ``structure_fraction``)."""
        raise NotImplementedError

    def _fit(self, Z, y):
        self._validate_params()
        space = self.space_
        self.forest_, _ = fit_background_forest(
            Z, space.low, space.high, space.categorical, n_estimators=self.n_estimators,
            grow=self._grow_options(Z.shape[1]), aggregate=self.aggregate, n_jobs=self.n_jobs,
            random_state=self.random_state, **self._sampling(),
        )  # fmt: skip

    def _risk(self, Z):
        return self.forest_.risk(Z)


@register("cert_forest")
class CERTForest(BackgroundForestDetector):
    """A bagged forest of unpruned CERT trees (Sandia report §2.4 and §3).

    As the report: each tree grows unpruned on a bootstrap sample by information gain, with no
    Laplace smoothing and no edge splits (both hurt, report §3 and Table A.1); the forest's risk
    is the mean of the trees' leaf risks, 1 outside the box.

    One departure: a split must leave ``min_samples_leaf`` (default 5) data weight on each side.
    Grown down to single rows, a leaf's volume is size-biased at a new point (it lands in large
    leaves more often), so on data filling the box uniformly the forest's risk between the
    rows lies above the 0.5 it should be; a few rows per leaf bring it closer, and on the
    report's ridge mixtures they lower the raw RMSE (docs/risk.md has the figures).
    ``min_samples_leaf=1`` gives the report's full-size trees.
    ``prune="error"`` grows each tree on a bootstrap sample of half the rows and prunes it by
    reduced-error pruning on one of the other half (the report's Table 1 "pruned" column;
    "brier" prunes by Brier score); ``edge_splits=True`` also offers the thresholds between a
    node's extreme values and its box edges (Table A.1). The report found both worse above 2-D
    and leaves them off, as the defaults do; docs/risk.md gives our measurements.
    ``aggregate="density"`` averages the trees' density ratios ``fg / bg`` instead.

    ``max_features`` (None: all, as bagging; "log2": ``floor(log2 d) + 1`` as the report's
    random forests in §4.2; "sqrt"; an int or a fraction) picks the variables tried at each
    split. ``n_jobs`` grows trees in threads; the forest does not depend on it."""

    _parameter_constraints: ClassVar[dict] = {
        "n_estimators": [Interval(Integral, 1, None, closed="left")],
        "criterion": [StrOptions({"gini", "entropy"})],
        "max_features": [
            Interval(Integral, 1, None, closed="left"),
            Interval(Real, 0, 1, closed="right"),
            StrOptions({"sqrt", "log2"}),
            None,
        ],
        "min_samples_leaf": [Interval(Real, 0, None, closed="right")],
        "max_depth": [Interval(Integral, 1, None, closed="left"), None],
        "bootstrap": ["boolean"],
        "prune": [StrOptions({"error", "brier"}), None],
        "edge_splits": ["boolean"],
        "aggregate": [StrOptions({"probability", "density"})],
        "bounds": "no_validation",
        "n_jobs": [Integral, None],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        n_estimators: int = 100,
        criterion: str = "entropy",
        max_features: int | float | str | None = None,
        min_samples_leaf: float = 5,
        max_depth: int | None = None,
        bootstrap: bool = True,
        prune: str | None = None,
        edge_splits: bool = False,
        aggregate: str = "probability",
        bounds=None,
        n_jobs: int | None = None,
        random_state=None,
    ):
        self.n_estimators = n_estimators
        self.criterion = criterion
        self.prune = prune
        self.edge_splits = edge_splits
        self.max_features = max_features
        self.min_samples_leaf = min_samples_leaf
        self.max_depth = max_depth
        self.bootstrap = bootstrap
        self.aggregate = aggregate
        self.bounds = bounds
        self.n_jobs = n_jobs
        self.random_state = random_state

    def _grow_options(self, d: int) -> dict:
        return {
            "split": self.criterion,
            "max_depth": self.max_depth,
            "min_samples_leaf": self.min_samples_leaf,
            "max_features": n_features_to_try(self.max_features, d),
            "edge_splits": self.edge_splits,
        }

    def _sampling(self) -> dict:
        return {"bootstrap": self.bootstrap, "prune": self.prune}


def n_features_to_try(max_features, d: int) -> int:
    """How many variables a split tries: all for None, ``floor(log2 d) + 1`` for "log2" (report
    §4.2), ``floor(sqrt d)`` for "sqrt", a count, or a fraction of ``d`` (at least one)."""
    if max_features is None:
        return d
    if max_features == "log2":
        return min(d, math.floor(math.log2(d)) + 1)
    if max_features == "sqrt":
        return max(1, int(math.sqrt(d)))
    if isinstance(max_features, Integral):
        return min(d, int(max_features))
    return max(1, int(max_features * d))
