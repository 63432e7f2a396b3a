"""Margin risk (Sandia report SAND2013-2534, §2.2): one minus the gap between the two most
probable classes, read from a classifier's class probabilities. A builtin detector: it is free
given the classifier, but it flags class overlap as much as extrapolation (report §4.2)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from ._base import Detector, FeatureSpace, register
from ._forest import fit_labelled_forest, global_leaves, laplace_leaf_proba

__all__ = ["MarginRisk", "margin_risk"]

_CHUNK = 8192  # rows per block at predict time: bounds the (rows, trees, classes) temporary


def margin_risk(proba: np.ndarray) -> np.ndarray:
    """``1 - (p_1 - p_2)`` per row of class probabilities ``proba`` (report Eq. 2), with
    ``p_1 >= p_2`` the two largest. A 1-D ``proba`` is read as the positive-class probability
    of a binary problem; a single column has no runner-up (risk ``1 - p_1``)."""
    P = np.asarray(proba, dtype=float)
    if P.ndim == 1:
        P = np.column_stack([1.0 - P, P])
    if P.ndim != 2:
        raise ValueError(f"proba must be (n_rows, n_classes); got shape {P.shape}")
    if P.shape[1] == 1:
        return 1.0 - P[:, 0]
    top2 = np.partition(P, P.shape[1] - 2, axis=1)[:, -2:]
    return 1.0 - (top2[:, 1] - top2[:, 0])


@register("margin")
class MarginRisk(Detector):
    """Margin risk from a bagged, unpruned, information-gain tree ensemble with
    Laplace-smoothed leaves ``(n_k + 1) / (n + C)`` (report §2.2 and §3), or from any fitted
    classifier with ``predict_proba`` given as ``estimator``.

    With ``estimator`` the detector trains nothing: ``fit(X)`` only records the columns and the
    box (``y`` is optional), and ``risk(X)`` calls ``estimator.predict_proba`` on the raw rows.
    Rows outside the box (or with an unseen category) get risk 1, the report's definition
    (§2.1); the estimator is not called on them.

    ``max_features=None`` grows bagged trees (report §4.1); ``"sqrt"``, ``"log2"``, an int or a
    fraction grows a random forest (§4.2)."""

    requires_y = True
    one_outside_box = True
    test_params: ClassVar[Mapping[str, Any]] = {"n_estimators": 15}

    def __init__(
        self,
        estimator=None,
        n_estimators: int = 100,
        max_features=None,
        min_samples_leaf: int = 1,
        bounds=None,
        random_state=None,
        n_jobs=None,
    ):
        self.estimator = estimator
        self.n_estimators = n_estimators
        self.max_features = max_features
        self.min_samples_leaf = min_samples_leaf
        self.bounds = bounds
        self.random_state = random_state
        self.n_jobs = n_jobs

    def fit(self, X, y=None):
        """Fit the own forest on ``(X, y)``, or, with ``estimator``, record X's columns and box."""
        if self.estimator is None:
            return super().fit(X, y)
        _check_estimator(self.estimator)
        self.space_, Z = FeatureSpace.fit(X, self.bounds)
        self.n_features_in_ = self.space_.n_features
        if y is not None and len(y) != Z.shape[0]:
            raise ValueError(f"X has {Z.shape[0]} rows but y has {len(y)}; they must match")
        self.classes_ = np.asarray(getattr(self.estimator, "classes_", []))
        return self

    def _fit(self, Z, y):
        self.forest_ = fit_labelled_forest(
            Z,
            y,
            n_estimators=self.n_estimators,
            max_features=self.max_features,
            min_samples_leaf=self.min_samples_leaf,
            random_state=self.random_state,
            n_jobs=self.n_jobs,
        )
        self.leaf_proba_ = laplace_leaf_proba(self.forest_, self.classes_.size)

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities the margin is read from: the average over trees of the
        Laplace-smoothed leaf probabilities, or the given estimator's ``predict_proba``."""
        check_is_fitted(self, "space_")
        if self.estimator is not None:
            self.space_.transform(X)
            return np.asarray(self.estimator.predict_proba(X), dtype=float)
        return self._proba(self.space_.transform(X))

    def _proba(self, Z: np.ndarray) -> np.ndarray:
        out = np.empty((Z.shape[0], self.classes_.size))
        for start in range(0, Z.shape[0], _CHUNK):
            leaves = global_leaves(self.forest_, Z[start : start + _CHUNK])
            out[start : start + _CHUNK] = self.leaf_proba_[leaves].mean(axis=1)
        return out

    def _risk(self, Z):
        return margin_risk(self._proba(Z))

    def risk(self, X) -> np.ndarray:
        """Margin risk of each row of X in [0, 1]; 1 outside the training box."""
        if self.estimator is None:
            return super().risk(X)
        check_is_fitted(self, "space_")
        Z = self.space_.transform(X)  # column checks and the box
        outside = self.space_.outside(Z)
        r = np.ones(Z.shape[0])
        inside = np.flatnonzero(~outside)
        if inside.size:
            rows = X if inside.size == Z.shape[0] else _take_rows(X, inside)
            r[inside] = margin_risk(self.estimator.predict_proba(rows))
        return np.clip(r, 0.0, 1.0)


def _check_estimator(estimator) -> None:
    if not hasattr(estimator, "predict_proba"):
        raise TypeError(
            f"estimator must be a fitted classifier with predict_proba; got "
            f"{type(estimator).__name__}, which has none"
        )
    try:
        check_is_fitted(estimator)
    except NotFittedError:
        raise ValueError(
            f"estimator ({type(estimator).__name__}) is not fitted; fit it first, MarginRisk "
            "reads a fitted classifier and never trains it"
        ) from None
    except TypeError:  # not a scikit-learn estimator: trust it
        pass


def _take_rows(X, index: np.ndarray):
    if isinstance(X, pd.DataFrame):
        return X.iloc[index]
    return np.asarray(X)[index]
