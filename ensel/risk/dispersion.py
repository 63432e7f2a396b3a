"""Forest dispersion risk, FDR (Sandia report SAND2013-2534, §2.3): Breiman and Cutler's
forest-proximity outlier score of a new row against each class, normalised per class by the
training rows' median and mean absolute deviation, minimum over classes. Only the leaf table
(leaf id of every training row in every tree) and the class of each row are kept."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from ._base import Detector, register
from ._forest import fit_labelled_forest, global_leaves, node_offsets

__all__ = ["ForestDispersionRisk", "class_proximity", "dispersion_to_risk"]

_PAIRS = 20_000_000  # (row, training row) pairs per block: bounds the sparse product's size


def _chunk(n_train: int) -> int:
    """Rows per block so that a block's shared-leaf matrix has at most ``_PAIRS`` entries."""
    return max(16, _PAIRS // max(n_train, 1))


def class_proximity(
    leaves: np.ndarray, table: np.ndarray, labels: np.ndarray, n_classes: int, n_nodes: int
) -> np.ndarray:
    """``(n_rows, n_classes)`` sums of squared forest proximity, ``sum_{x' in D_c}
    prox(x, x')**2``, between rows with forest-wide leaf ids ``leaves`` and the training rows
    of ``table`` (labels ``labels``). ``prox`` is the fraction of trees in which two rows share a
    leaf (report §2.3); the shared-leaf counts come from one sparse product."""
    n_trees = table.shape[1]
    A = _indicator(leaves, n_nodes)
    B = _indicator(table, n_nodes)
    shared = (A @ B.T).tocsr()  # shared[i, j]: trees in which row i and training row j meet
    shared.data = (shared.data / n_trees) ** 2
    onehot = sp.csr_matrix(
        (np.ones(labels.size), (np.arange(labels.size), labels)), shape=(labels.size, n_classes)
    )
    return np.asarray((shared @ onehot).todense())


def dispersion_to_risk(fdr: np.ndarray) -> np.ndarray:
    """Map the report's FDR in ``[0, inf]`` into ``[0, 1]`` monotonically: ``fdr / (1 + fdr)``.

    0 (at most the median class outlierness) maps to 0, one mean absolute deviation above the
    median to 0.5, an infinite score (no shared leaf with any class) to 1. The report
    calibrates FDR by isotonic regression on the true risk (§4.1); any such calibration (or
    ranking) is unchanged by this map."""
    fdr = np.asarray(fdr, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.where(np.isinf(fdr), 1.0, fdr / (1.0 + fdr))


@register("dispersion")
class ForestDispersionRisk(Detector):
    """Forest dispersion risk (report §2.3, Eq. 3) from a bagged, unpruned, information-gain
    forest fitted on ``(X, y)``.

    For a row z and class c, ``rawOut_c(z) = 1 / sum_{x' in D_c} prox(z, x')**2``;
    ``outlier_c(z) = max(0, (rawOut_c(z) - mu_c) / sigma_c)`` with ``mu_c`` the median and
    ``sigma_c`` the mean absolute deviation around it of the training rows' own-class scores
    (each leaving itself out); ``FDR(z) = min_c outlier_c(z)``, mapped into [0, 1] by
    :func:`dispersion_to_risk`. Training rows that share no leaf with any other row of their
    class (an infinite raw score) are left out of ``mu_c`` and ``sigma_c``, which would
    otherwise be infinite. Rows outside the box get risk 1 (report §2.1)."""

    requires_y = True
    one_outside_box = True
    test_params: ClassVar[Mapping[str, Any]] = {"n_estimators": 15}

    def __init__(
        self,
        n_estimators: int = 100,
        max_features=None,
        min_samples_leaf: int = 1,
        bounds=None,
        random_state=None,
        n_jobs=None,
    ):
        self.n_estimators = n_estimators
        self.max_features = max_features
        self.min_samples_leaf = min_samples_leaf
        self.bounds = bounds
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _fit(self, Z, y):
        forest = fit_labelled_forest(
            Z,
            y,
            n_estimators=self.n_estimators,
            max_features=self.max_features,
            min_samples_leaf=self.min_samples_leaf,
            random_state=self.random_state,
            n_jobs=self.n_jobs,
        )
        n_classes = self.classes_.size
        self.forest_ = forest
        self.n_nodes_ = int(node_offsets(forest)[-1])
        self.leaf_table_ = global_leaves(forest, Z)
        self.leaf_class_ = y.astype(np.int64)
        # each row against its own class, leaving itself out (it meets itself in every tree)
        own = np.empty(y.size)
        step = _chunk(y.size)
        for start in range(0, y.size, step):
            rows = np.arange(start, min(start + step, y.size))
            table = self.leaf_table_
            s = class_proximity(table[rows], table, y, n_classes, self.n_nodes_)
            own[rows] = s[np.arange(rows.size), y[rows]] - 1.0
        with np.errstate(divide="ignore"):
            raw = np.where(own > 1e-12, 1.0 / np.maximum(own, 1e-12), np.inf)
        self.median_, self.deviation_ = _class_statistics(raw, y, n_classes)

    def dispersion(self, X) -> np.ndarray:
        """The report's FDR score of each row of X, in ``[0, inf]`` (before the [0, 1] map)."""
        return self._dispersion(self.space_.transform(X))

    def _dispersion(self, Z: np.ndarray) -> np.ndarray:
        known = np.isfinite(self.median_)
        out = np.empty(Z.shape[0])
        step = _chunk(self.leaf_class_.size)
        for start in range(0, Z.shape[0], step):
            leaves = global_leaves(self.forest_, Z[start : start + step])
            s = class_proximity(
                leaves, self.leaf_table_, self.leaf_class_, self.classes_.size, self.n_nodes_
            )[:, known]
            with np.errstate(divide="ignore", invalid="ignore"):
                raw = np.where(s > 0, 1.0 / s, np.inf)
                z = (raw - self.median_[known]) / self.deviation_[known]
            out[start : start + step] = np.maximum(z, 0.0).min(axis=1)
        return out

    def _risk(self, Z):
        return dispersion_to_risk(self._dispersion(Z))


def _indicator(leaves: np.ndarray, n_nodes: int) -> sp.csr_matrix:
    """Rows x nodes 0/1 matrix with a one at each (row, leaf) pair of ``leaves``."""
    n, t = leaves.shape
    indptr = np.arange(0, n * t + 1, t)
    return sp.csr_matrix((np.ones(n * t), leaves.ravel(), indptr), shape=(n, n_nodes))


def _class_statistics(raw: np.ndarray, y: np.ndarray, n_classes: int):
    """Per class: median of the finite raw scores and mean absolute deviation around it
    (NaN for a class without any finite score; it then takes no part in the minimum)."""
    median = np.full(n_classes, np.nan)
    deviation = np.full(n_classes, np.nan)
    for c in range(n_classes):  # a loop over classes, not rows
        r = raw[(y == c) & np.isfinite(raw)]
        if r.size:
            median[c] = np.median(r)
            dev = np.mean(np.abs(r - median[c]))
            deviation[c] = dev if dev > 0 else max(abs(median[c]), 1.0) * 1e-12
    if not np.isfinite(median).any():
        raise ValueError(
            "no training row shares a leaf with another row of its class; FDR needs classes "
            "with at least two rows (use more rows or fewer classes)"
        )
    return median, deviation
