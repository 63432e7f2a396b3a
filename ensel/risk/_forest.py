"""The labelled tree ensemble that the builtin detectors read (Sandia report §3): bagged,
unpruned, information-gain trees fitted on the class labels, with helpers that turn the fitted
scikit-learn forest into flat arrays (global node ids, Laplace-smoothed leaf probabilities)."""

from __future__ import annotations

import numpy as np
from sklearn.ensemble import RandomForestClassifier

__all__ = ["fit_labelled_forest", "global_leaves", "laplace_leaf_proba", "node_offsets"]


def fit_labelled_forest(
    Z: np.ndarray,
    y: np.ndarray,
    *,
    n_estimators: int,
    max_features,
    min_samples_leaf: int,
    random_state,
    n_jobs,
) -> RandomForestClassifier:
    """A bagged forest of fully grown trees split by information gain on encoded rows ``Z``.

    ``max_features=None`` is plain bagging (the report's synthetic experiments, §4.1); an int,
    float, ``"sqrt"`` or ``"log2"`` gives a random forest (§4.2 uses ``floor(log2 d) + 1``).
    Missing values (NaN) are routed by scikit-learn's learnt missing-value direction."""
    for name, value in (("n_estimators", n_estimators), ("min_samples_leaf", min_samples_leaf)):
        if not isinstance(value, int | np.integer) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive integer; got {value!r}")
    forest = RandomForestClassifier(
        n_estimators=n_estimators,
        criterion="entropy",
        max_features=max_features,
        min_samples_leaf=min_samples_leaf,
        bootstrap=True,
        n_jobs=n_jobs,
        random_state=random_state,
    )
    return forest.fit(Z, y)


def node_offsets(forest: RandomForestClassifier) -> np.ndarray:
    """Start of each tree's nodes in the forest-wide node numbering, plus the total at the end
    (the layout of ``forest.decision_path``)."""
    counts = [est.tree_.node_count for est in forest.estimators_]
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


def global_leaves(forest: RandomForestClassifier, Z: np.ndarray) -> np.ndarray:
    """``(n_rows, n_trees)`` forest-wide id of the leaf each row reaches in each tree."""
    return forest.apply(Z).astype(np.int64) + node_offsets(forest)[:-1]


def laplace_leaf_proba(forest: RandomForestClassifier, n_classes: int) -> np.ndarray:
    """``(n_nodes_total, n_classes)`` Laplace-smoothed class probabilities of every node,
    ``(n_k + 1) / (n + C)`` with ``n_k`` the node's (bootstrap-weighted) count of class k
    (Provost & Domingos 2003, as the Sandia report §3 uses for margin risk)."""
    blocks = []
    for est in forest.estimators_:
        tree = est.tree_
        weight = tree.weighted_n_node_samples[:, None]
        counts = tree.value[:, 0, :] * weight  # scikit-learn stores class fractions
        blocks.append((counts + 1.0) / (weight + n_classes))
    return np.concatenate(blocks, axis=0)
