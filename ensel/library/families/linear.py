"""Logistic regression and support vector machines (App. 4.B), on the standardised view."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.svm import SVC, LinearSVC

from ._base import Family, full_proba, min_max_scores, register


@dataclass
class _ProbaRun:
    model: Any
    n_classes: int

    def predict(self, X: np.ndarray, stages=None) -> dict[str, np.ndarray]:
        p = full_proba(self.model.predict_proba(X), self.model.classes_, self.n_classes)
        return {"none": p[None]}


def fit_logreg(X, y, *, n_classes, params, stages, random_state):
    """Unregularised (``ridge: null``) or ridge-penalised logistic regression; ``ridge`` is the
    penalty weight lambda, so scikit-learn's ``C = 1 / lambda``."""
    ridge = params["ridge"]
    model = LogisticRegression(
        C=np.inf if ridge is None else 1.0 / ridge, l1_ratio=0.0, max_iter=params["max_iter"]
    )
    return _ProbaRun(model.fit(X, y), n_classes)


@dataclass
class _MarginRun:
    model: Any
    n_classes: int
    low: np.ndarray
    high: np.ndarray

    def predict(self, X: np.ndarray, stages=None) -> dict[str, np.ndarray]:
        return {"none": self._proba(_margins(self.model, X))[None]}

    def _proba(self, scores: np.ndarray) -> np.ndarray:
        p = min_max_scores(scores, self.low, self.high)
        return full_proba(p, self.model.classes_, self.n_classes)


def _margins(model, X: np.ndarray) -> np.ndarray:
    d = model.decision_function(X)
    return d[:, None] if d.ndim == 1 else d


KERNELS = {
    "linear": {},
    "poly2": {"kernel": "poly", "degree": 2, "gamma": 1.0, "coef0": 1.0},
    "poly3": {"kernel": "poly", "degree": 3, "gamma": 1.0, "coef0": 1.0},
    "rbf": {"kernel": "rbf"},
}
"""SVMLight's kernels (App. 4.B): polynomial ``(a.b + 1)^d``; RBF ``exp(-width |a - b|^2)``."""


def fit_svm(X, y, *, n_classes, params, stages, random_state):
    """An SVM; its uncalibrated output is the decision value scaled by its training range.
    The linear kernel uses liblinear (the same model, far faster than a kernel solver)."""
    kernel = params["kernel"]
    if kernel not in KERNELS:
        raise ValueError(f"svm kernel={kernel!r} is not one of {sorted(KERNELS)}")
    if kernel == "linear":
        model = LinearSVC(C=params["C"], max_iter=params["max_iter"], random_state=random_state)
    else:
        extra = dict(KERNELS[kernel])
        if kernel == "rbf":
            extra["gamma"] = params["width"]
        model = SVC(C=params["C"], max_iter=params["max_iter"], cache_size=500, **extra)
    model.fit(X, y)
    train = _margins(model, X)
    return _MarginRun(model, n_classes, train.min(axis=0), train.max(axis=0))


register(
    Family(
        name="logreg",
        fit=fit_logreg,
        params={"ridge": None, "max_iter": 1000},
        test_params={"ridge": 1.0},
    )
)
register(
    Family(
        name="svm",
        fit=fit_svm,
        params={"kernel": "rbf", "C": 1.0, "width": 0.1, "max_iter": 100_000},
        test_params={"kernel": "rbf", "C": 1.0, "width": 0.1},
    )
)
