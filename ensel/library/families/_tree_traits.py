"""The traits of the tree families of :mod:`ensel.library.families.trees` (a tree, bagged
trees, random forests, extra trees, AdaBoost): their leaf cap, cost models, ranks and search
spaces, both tasks.

Forest fit work is ``~ trees n log n mtry``; a fitted sibling holds its trees' nodes; a row's
prediction calls every tree and visits a node per level.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ._base import TreesRun
from ._traits import CostModel, FamilyTraits, FitShape, GrowSpace, StageWork
from ._work import FLOAT, NODE_BYTES, unwrap

__all__ = [
    "ADABOOST",
    "BAGGED_TREES",
    "EXTRA_TREES",
    "LEAF_CAP",
    "RANDOM_FOREST",
    "TREE",
    "leaf_cap",
]

LEAF_CAP = 1024
"""``max_leaves="auto"``: at most this many leaves per tree once a fold has more training rows
(below that a tree cannot reach it, and trees stay as Caruana grew them, unpruned). A full
tree has about one leaf per distinct training row, so its size, the memory of a forest's fit
and the saved model would grow with the rows; with the cap a leaf holds about
``rows / 1024`` rows, nodes per tree stay below ``2 * LEAF_CAP`` and the size stops growing
with the data."""
HELD_NODE_BYTES = 80
"""Bytes per node of a fitted scikit-learn tree in memory (the node record and binary leaf
values)."""


def leaf_cap(max_leaves, n_rows: int) -> int | None:
    """The ``max_leaf_nodes`` of a tree fitted on ``n_rows`` rows: ``max_leaves`` as given (an
    integer >= 2, or None: no cap), or for ``"auto"`` ``LEAF_CAP`` once ``n_rows`` exceeds it
    (None below: such a tree has fewer leaves anyway, and grows as without a cap)."""
    if max_leaves == "auto":
        return LEAF_CAP if n_rows > LEAF_CAP else None
    if max_leaves is None:
        return None
    if isinstance(max_leaves, bool) or not isinstance(max_leaves, int | np.integer):
        raise ValueError(f"max_leaves={max_leaves!r}: use 'auto', None or an integer >= 2")
    if max_leaves < 2:
        raise ValueError(f"max_leaves={max_leaves!r}: use 'auto', None or an integer >= 2")
    return int(max_leaves)


# ------------------------------------------------------------------ fit and memory models


def _mtry(s: FitShape) -> float:
    """Columns a forest's split tries: ``max_features`` as a count, a share or sqrt/log2."""
    m = s.params.get("max_features", "sqrt")
    if m in (None, "all"):
        return float(s.d)
    if m == "sqrt":
        return math.sqrt(s.d)
    if m == "log2":
        return max(math.log2(max(s.d, 2)), 1.0)
    share = isinstance(m, float) and m <= 1.0
    return min(float(s.d), max(1.0, float(m) * s.d if share else float(m)))


def _all_columns(s: FitShape) -> float:
    return float(s.d)


def _tree_depth(s: FitShape) -> float:
    """A tree's depth: its cap, else about log2 of its leaves (rows / min leaf), doubled for
    the imbalance of real splits."""
    max_depth = s.params.get("max_depth")
    min_leaf = int(s.params.get("min_samples_leaf", 1))
    grown = 2.0 * math.log2(max(s.n / max(min_leaf, 1), 2.0))
    return float(min(float(max_depth), grown)) if max_depth else grown


def _tree_nodes(s: FitShape) -> float:
    max_depth = s.params.get("max_depth")
    leaves = s.n / max(int(s.params.get("min_samples_leaf", 1)), 1)
    if max_depth:
        leaves = min(leaves, 2.0 ** float(max_depth))
    cap = leaf_cap(s.params.get("max_leaves"), s.n)  # "auto": 1,024 leaves on large folds
    if cap is not None:
        leaves = min(leaves, float(cap))
    return 2.0 * max(leaves, 1.0)


def _n_trees(s: FitShape) -> int:
    return max(s.top, 1)


def _depth(tree: Any) -> int:
    """Depth of one fitted scikit-learn tree (at least 1: a stump's root is a visit)."""
    return max(int(tree.tree_.max_depth), 1)


def _prefix(per_item: list[float], stages) -> StageWork:
    """Cumulative work of the first ``s`` items (trees, steps) for each stage ``s``."""
    total = np.concatenate([[0.0], np.cumsum(per_item)])
    out = []
    for s in stages:
        n = len(per_item) if s is None else min(int(s), len(per_item))
        out.append((float(n), float(total[n])))
    return out


def trees_work(run, params, stages, width, outputs) -> StageWork:
    """Forests, bagged trees, a single tree, AdaBoost: each tree called once, a node per level
    (the trees of :meth:`TreesRun.fitted_trees`)."""
    trees: TreesRun = unwrap(run)
    return _prefix([float(_depth(t)) for t in trees.fitted_trees()], stages)


def _forest_held(params: dict, stages, n_train: int, width: int) -> float:
    """Tree nodes of a fitted forest, leaves capped (see ``leaf_cap``)."""
    top = max(stages) if stages else 1
    leaves = min(n_train, leaf_cap(params.get("max_leaves", "auto"), n_train) or n_train)
    return top * 2 * leaves * HELD_NODE_BYTES


def _adaboost_held(params: dict, stages, n_train: int, width: int) -> float:
    """Tree nodes of a fitted AdaBoost: its steps' trees, at most ``2 ** (depth + 1)`` nodes."""
    top = max(stages) if stages else 1
    depth = params.get("max_depth") or 20
    return top * min(2 ** (depth + 1), 2 * n_train) * HELD_NODE_BYTES


def _forest(mtry: Callable[[FitShape], float], factor: float, sample: float = 1.0) -> CostModel:
    return CostModel(
        fit=lambda s: _n_trees(s) * sample * s.n * s.log_n * mtry(s),
        memory=lambda s: 4 * s.n * s.d + _n_trees(s) * _tree_nodes(s) * (NODE_BYTES + FLOAT * s.k),
        predict=lambda s: (float(_n_trees(s)), _n_trees(s) * _tree_depth(s)),
        predict_work=trees_work,
        memory_factor=factor,
        held_bytes=_forest_held,
    )


ADABOOST_COST = CostModel(
    fit=lambda s: _n_trees(s) * s.n * s.log_n * s.d,
    memory=lambda s: 4 * s.n * s.d + FLOAT * s.n * 2,
    predict=lambda s: (float(_n_trees(s)), _n_trees(s) * _tree_depth(s)),
    predict_work=trees_work,
    memory_factor=3.0,
    held_bytes=_adaboost_held,
)


# ------------------------------------------------------------------ schedule and growth


def _trees_cost(params: dict, stages: tuple[int, ...] | None) -> float:
    """Trees."""
    return float(max(stages) if stages else 1)


def _adaboost_cost(params: dict, stages: tuple[int, ...] | None) -> float:
    """Steps times one plus the depth of their trees (8 when unbounded)."""
    depth = params.get("max_depth")
    return (max(stages) if stages else 1) * (1.0 + (8.0 if depth is None else float(depth)))


def _space_extra_trees(trial, p):
    return {
        "max_features": trial.suggest_float(p + "max_features", 0.1, 1.0),
        "min_samples_leaf": trial.suggest_int(p + "min_samples_leaf", 1, 16, log=True),
        "criterion": trial.suggest_categorical(p + "criterion", ["gini", "entropy"]),
    }


def _space_random_forest(trial, p):
    return {
        "max_features": trial.suggest_int(p + "max_features", 1, 32, log=True),
        "min_samples_leaf": trial.suggest_int(p + "min_samples_leaf", 1, 16, log=True),
        "criterion": trial.suggest_categorical(p + "criterion", ["gini", "entropy"]),
    }


RANDOM_FOREST = FamilyTraits(
    rank=4,
    relative_cost=_trees_cost,
    grow=GrowSpace(_space_random_forest, (64, 256), ("none", "platt")),
    cost=_forest(_mtry, 2.0, sample=0.63),
)
EXTRA_TREES = FamilyTraits(
    rank=5,
    relative_cost=_trees_cost,
    grow=GrowSpace(_space_extra_trees, (64, 256), ("none", "platt"), default=3),
    cost=_forest(_mtry, 2.0),
)
BAGGED_TREES = FamilyTraits(rank=10, relative_cost=_trees_cost, cost=_forest(_all_columns, 3.0))
ADABOOST = FamilyTraits(rank=12, relative_cost=_adaboost_cost, cost=ADABOOST_COST)
TREE = FamilyTraits(rank=14, quick=2, cost=_forest(_all_columns, 2.0))
