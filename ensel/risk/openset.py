"""Open-set forest (Steele, "Open Set Forests"): a random forest whose every decision node holds
two extreme-value (Weibull) tail models of the training rows' distances to its threshold, so
that each tree says how pertinent a row is to the data it was grown on; risk = 1 - pertinence,
and a rejection threshold is learnt on held-out rows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from sklearn.model_selection import train_test_split
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ._base import Detector, register
from ._evt import fit_weibull, weibull_log_survival
from ._forest import fit_labelled_forest

__all__ = ["AGGREGATIONS", "STEELE", "OpenSetForest", "accuracy_threshold", "tree_pertinence"]

AGGREGATIONS = ("min", "mean", "product")
"""Ways to combine the node pertinences along a row's path (Steele §II-B)."""
_MIN_TAIL = 3  # a side of a node with fewer training distances gets no tail model
STEELE = {"aggregation": "min", "min_samples_leaf": 1, "reject_rate": None}
"""Steele's own settings: his best aggregation in the unknown-class tests ("min pertinence
seems to be the best metric"), fully grown trees, and a threshold trained for accuracy; pass
validation rows of unknown classes to :meth:`OpenSetForest.fit_threshold` for his threshold
(``OpenSetForest(**STEELE)``; docs/risk.md compares them with the defaults)."""


@register("openset_forest")
class OpenSetForest(Detector):
    """Open-set random forest (Steele §II): EVT node pertinence, tree pertinence by ``"min"``,
    ``"mean"`` or normalised ``"product"``, forest average; ``risk = 1 - pertinence``.

    Node pertinence (§II-A): the rows the forest was fitted on (in-bag and out-of-bag) that
    reach a decision node are reduced to their signed distance ``d = x_f - threshold`` along
    the node's feature. A Weibull (location at the threshold, maximum likelihood) is fitted to
    the ``tail_size`` largest distances on each side, the high end (``d > 0``) and the low end
    (``-d`` for ``d <= 0``); a row's pertinence at the node is the Weibull survival probability
    of its distance on its own side, which is the minimum of the two one-sided models (the
    other side's model says 1). A side with fewer than three training distances, or a missing
    value, gives no evidence and is skipped.

    Tree pertinence (§II-B) over the decision nodes on the row's path: their minimum, their
    mean, or the product normalised by path length, ``log_{10^N} P`` (the mean of the
    ``log10`` pertinences). Forest pertinence (§II-C) is the average over trees; for
    ``"product"`` the trees' log values are averaged and ``10**mean`` is the pertinence, which
    ranks rows exactly as Steele's average of ``log_{10^N} P``.

    Defaults differ from Steele's (scikit-learn's fully grown trees; "min" or "mean" preferred
    in his unknown-class accuracy tests): on the Sandia ridge-mixture protocol (report §4.1),
    "product" ranked risk best at d = 2, 5 and 10 (Spearman 0.62 / 0.35 / 0.31 against 0.33 /
    0.11 / 0.28 for "min"), and leaves of at least 20 rows with 50-row tails beat fully grown
    trees with short tails (0.48 / 0.13 at d = 2 / 5).

    A stratified ``validation_fraction`` of the rows is held out of the forest: ``threshold_``
    is the risk above which a row is rejected (:meth:`reject`). With ``reject_rate`` it is the
    ``1 - reject_rate`` quantile of the held-out risks, so about that fraction of known rows is
    rejected; with ``reject_rate=None`` it maximises accuracy of telling held-out rows from as
    many points drawn uniformly from the box (Steele trains it for accuracy on validation data
    with unknown classes; the uniform background stands in for the unknowns, as in Hooker's
    risk definition). Rows outside the box get risk 1 (Sandia report §2.1)."""

    requires_y = True
    one_outside_box = True
    test_params: ClassVar[Mapping[str, Any]] = {"n_estimators": 15, "min_samples_leaf": 5}

    def __init__(
        self,
        n_estimators: int = 100,
        aggregation: str = "product",
        tail_size: int = 50,
        max_features="sqrt",
        min_samples_leaf: int = 20,
        validation_fraction: float = 0.2,
        reject_rate: float | None = 0.05,
        bounds=None,
        random_state=None,
        n_jobs=None,
    ):
        self.n_estimators = n_estimators
        self.aggregation = aggregation
        self.tail_size = tail_size
        self.max_features = max_features
        self.min_samples_leaf = min_samples_leaf
        self.validation_fraction = validation_fraction
        self.reject_rate = reject_rate
        self.bounds = bounds
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _fit(self, Z, y):
        self._check_params()
        rng = check_random_state(self.random_state)
        split_seed, forest_seed, uniform_seed = rng.randint(np.iinfo(np.int32).max, size=3)
        fit_rows, val_rows = _split(y, self.validation_fraction, split_seed)
        self.forest_ = fit_labelled_forest(
            Z[fit_rows],
            y[fit_rows],
            n_estimators=self.n_estimators,
            max_features=self.max_features,
            min_samples_leaf=self.min_samples_leaf,
            random_state=forest_seed,
            n_jobs=self.n_jobs,
        )
        Zfit = Z[fit_rows]
        self.tails_ = [
            _fit_tree_tails(e.tree_, Zfit, self.tail_size) for e in self.forest_.estimators_
        ]
        known = self._risk(Z[val_rows])
        if self.reject_rate is not None:
            self.threshold_ = float(np.quantile(known, 1.0 - self.reject_rate))
        else:
            unknown = self._risk(self.space_.uniform(val_rows.size, uniform_seed))
            self.threshold_ = accuracy_threshold(known, unknown)
        self.validation_risk_ = known

    def _check_params(self) -> None:
        if self.aggregation not in AGGREGATIONS:
            raise ValueError(f"aggregation must be one of {AGGREGATIONS}; got {self.aggregation!r}")
        if not isinstance(self.tail_size, int | np.integer) or self.tail_size < _MIN_TAIL:
            raise ValueError(f"tail_size must be an integer >= {_MIN_TAIL}; got {self.tail_size!r}")
        if not 0.0 < float(self.validation_fraction) < 1.0:
            raise ValueError(
                f"validation_fraction must lie in (0, 1); got {self.validation_fraction!r}"
            )
        if self.reject_rate is not None and not 0.0 < float(self.reject_rate) < 1.0:
            raise ValueError(
                f"reject_rate must lie in (0, 1) or be None (accuracy threshold); got "
                f"{self.reject_rate!r}"
            )

    def fit_threshold(self, X_known, X_unknown) -> OpenSetForest:
        """Steele's threshold (§II-C): the ``threshold_`` that maximises the accuracy of
        accepting validation rows of the known classes ``X_known`` and rejecting validation rows
        of classes unseen in training ``X_unknown``; returns self. Without such rows, ``fit``
        sets it from ``reject_rate`` (or the uniform background, ``reject_rate=None``)."""
        check_is_fitted(self, "threshold_")
        self.threshold_ = accuracy_threshold(self.risk(X_known), self.risk(X_unknown))
        return self

    def pertinence(self, X) -> np.ndarray:
        """Forest pertinence of each row of X in [0, 1] (1 = like the training data)."""
        return 1.0 - self.risk(X)

    def reject(self, X) -> np.ndarray:
        """True for rows whose risk exceeds the learnt ``threshold_`` (refuse to predict)."""
        check_is_fitted(self, "threshold_")
        return self.risk(X) > self.threshold_

    def _risk(self, Z):
        scores = np.column_stack(
            [
                tree_pertinence(est.tree_, tails, Z, self.aggregation)
                for est, tails in zip(self.forest_.estimators_, self.tails_, strict=True)
            ]
        )
        if self.aggregation == "product":
            return 1.0 - 10.0 ** scores.mean(axis=1)
        return 1.0 - scores.mean(axis=1)


def _split(y: np.ndarray, fraction: float, seed) -> tuple[np.ndarray, np.ndarray]:
    """Stratified split of the row indices into forest rows and validation rows (plain random
    when a class is too small to stratify)."""
    rows = np.arange(y.size)
    if y.size < 4:
        raise ValueError(f"OpenSetForest needs at least 4 rows to hold some out; got {y.size}")
    try:
        return train_test_split(rows, test_size=fraction, stratify=y, random_state=seed)
    except ValueError:
        return train_test_split(rows, test_size=fraction, random_state=seed)


def _fit_tree_tails(tree, Z: np.ndarray, tail_size: int) -> np.ndarray:
    """``(n_nodes, 4)`` Weibull ``(shape_high, scale_high, shape_low, scale_low)`` per node of
    one fitted scikit-learn tree, from the rows ``Z`` routed through it (NaN: no model)."""
    n_nodes = tree.node_count
    path = _path(tree, Z)
    rows = np.repeat(np.arange(Z.shape[0]), np.diff(path.indptr))
    nodes = path.indices.astype(np.int64)
    feature = tree.feature
    internal = feature[nodes] >= 0
    rows, nodes = rows[internal], nodes[internal]
    d = Z[rows, feature[nodes]] - tree.threshold[nodes]
    known = ~np.isnan(d)
    nodes, d = nodes[known], d[known]
    order = np.lexsort((d, nodes))
    nodes, d = nodes[order], d[order]
    start = np.searchsorted(nodes, np.arange(n_nodes), side="left")
    end = np.searchsorted(nodes, np.arange(n_nodes), side="right")
    n_low = np.bincount(nodes[d <= 0], minlength=n_nodes)
    j = np.arange(tail_size)
    # high tail: the largest positive distances, read backwards from the segment's end
    high_idx = end[:, None] - 1 - j
    high_ok = j < (end - start - n_low)[:, None]
    # low tail: the most negative distances, read forwards from the segment's start
    low_idx = start[:, None] + j
    low_ok = j < n_low[:, None]
    high = np.where(high_ok, d[np.where(high_ok, high_idx, 0)] if d.size else 0.0, np.nan)
    low = np.where(low_ok, -d[np.where(low_ok, low_idx, 0)] if d.size else 0.0, np.nan)
    low = np.where(low > 0, low, np.nan)  # a row exactly on the threshold carries no distance
    out = np.full((n_nodes, 4), np.nan)
    for col, tail in ((0, high), (2, low)):
        fit = np.flatnonzero(np.isfinite(tail).sum(axis=1) >= _MIN_TAIL)
        if fit.size:
            out[fit, col], out[fit, col + 1] = fit_weibull(tail[fit], _MIN_TAIL)
    return out


def tree_pertinence(tree, tails: np.ndarray, Z: np.ndarray, aggregation: str) -> np.ndarray:
    """Per row of ``Z``, one tree's pertinence (``"min"``, ``"mean"``) or ``log_{10^N} P``
    (``"product"``) over the decision nodes on its path that give evidence; 1 (or 0 for the
    log) when none does. Vectorised over rows via the tree's sparse decision path."""
    path = _path(tree, Z)
    nodes = path.indices.astype(np.int64)
    rows = np.repeat(np.arange(Z.shape[0]), np.diff(path.indptr))
    feature = tree.feature[nodes]
    with np.errstate(invalid="ignore"):
        d = np.where(feature >= 0, Z[rows, np.maximum(feature, 0)] - tree.threshold[nodes], np.nan)
    t = tails[nodes]
    high = d > 0
    log_p = weibull_log_survival(
        np.abs(d), np.where(high, t[:, 0], t[:, 2]), np.where(high, t[:, 1], t[:, 3])
    )
    has = ~np.isnan(log_p)
    count = np.bincount(rows[has], minlength=Z.shape[0])
    if aggregation == "min":
        low = np.zeros(Z.shape[0])
        np.minimum.at(low, rows[has], log_p[has])
        return np.exp(low)
    if aggregation == "mean":
        total = np.bincount(rows[has], np.exp(log_p[has]), minlength=Z.shape[0])
        return np.where(count > 0, total / np.maximum(count, 1), 1.0)
    total = np.bincount(rows[has], log_p[has], minlength=Z.shape[0]) / np.log(10.0)
    return np.where(count > 0, total / np.maximum(count, 1), 0.0)


def accuracy_threshold(known: np.ndarray, unknown: np.ndarray) -> float:
    """The risk threshold ``t`` (reject when risk > t) that maximises the accuracy of calling
    ``known`` rows pertinent and ``unknown`` rows not; the smallest such ``t``."""
    known, unknown = np.sort(np.asarray(known, float)), np.sort(np.asarray(unknown, float))
    candidates = np.unique(np.concatenate([known, unknown, [0.0]]))
    kept = np.searchsorted(known, candidates, side="right")  # known rows with risk <= t
    caught = unknown.size - np.searchsorted(unknown, candidates, side="right")
    return float(candidates[np.argmax(kept + caught)])


def _path(tree, Z: np.ndarray):
    """The sparse (rows x nodes) decision path of a low-level scikit-learn ``Tree``."""
    return tree.decision_path(np.ascontiguousarray(Z, dtype=np.float32))
