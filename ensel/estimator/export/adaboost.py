"""The ``adaboost`` family (``trees._BoostRun``) as graph nodes: each step's tree gives its leaf
(one tree ensemble on the input rounded to float32, as scikit-learn's trees read it:
:func:`.trees.leaf_sums`), whose class and step weight are gathered in double and summed into
the votes of every class; the plain output is each class's share of the votes (uniform with no
step), the ``"logistic"`` variant their softmax (``calibration.logistic_correction``, Friedman
et al.)."""

from __future__ import annotations

import numpy as np

from ...library.families._base import tree_values
from .members import register
from .trees import Forest, leaf_sums, sklearn_tree

__all__: list[str] = []


@register("adaboost", variants=("logistic",))
def _adaboost(g, run, matrix: str, stage: int, n_outputs: int, variant: str = "none") -> str:
    size = min(run.stages[stage], len(run.estimators))
    weights = np.asarray(run.weights[:size], dtype=np.float64)
    if not np.isfinite(weights).all():
        raise ValueError("an adaboost step without training error has no converter")
    if size == 0:
        raise ValueError("an adaboost stage with no step has no converter")
    votes = _votes(g, run, matrix, size, weights)
    if variant == "logistic":
        return g.node("Softmax", [votes], "logistic", axis=1)
    total = g.node("ReduceSum", [votes, g.const(np.array([1], np.int64))], keepdims=1)
    positive = g.node("Greater", [total, g.const(np.float64(0.0))])
    shares = g.node("Div", [votes, g.node("Where", [positive, total, g.const(np.float64(1.0))])])
    uniform = g.const(np.float64(1.0 / run.n_classes))
    return g.node("Where", [positive, shares, uniform], "adaboost")


def _votes(g, run, matrix: str, size: int, weights: np.ndarray) -> str:
    """``(n, n_classes)`` double: each class's summed step weight."""
    trees = run.fitted_trees()[:size]
    forest = Forest(run.n_classes, rounded=True)
    for tree, w in zip(trees, weights, strict=True):
        labels = tree.classes_.take(np.argmax(tree_values(tree), axis=1)).astype(int)
        table = np.zeros((tree.tree_.node_count, run.n_classes))
        table[np.arange(labels.size), labels] = w
        sklearn_tree(forest, tree.tree_, table)
    votes = leaf_sums(g, [(matrix, trees[0].tree_.n_features, forest)])  # (n, 1, C)
    return g.node("Gather", [votes, g.const(np.array(0, np.int64))], "votes", axis=1)
