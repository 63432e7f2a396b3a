"""Support vector machines on the standardised view: the classifier of App. 4.B (SVMLight's
kernels, its uncalibrated output the decision value scaled by its training range) and support
vector regression over the same kernels and C on a standardised target."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.svm import SVC, SVR, LinearSVC, LinearSVR

from ._base import Family, full_proba, min_max_scores, register
from ._regression import SingleRun, TargetScale

SVR_KERNELS = ("linear", "rbf", "poly2")


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


def fit_svr(X, y, *, n_classes, params, stages, random_state):
    """Support vector regression on the standardised target; kernels and C as the classifier's
    grid (``linear`` uses liblinear's LinearSVR, the same model, far faster), ``epsilon`` in
    target standard deviations."""
    kernel = params["kernel"]
    scale = TargetScale.fit(y)
    if kernel == "linear":
        model = LinearSVR(
            C=params["C"],
            epsilon=params["epsilon"],
            loss="squared_epsilon_insensitive",
            dual=False,
            max_iter=params["max_iter"],
            random_state=random_state,
        )
    else:
        extra = {"kernel": "rbf", "gamma": params["width"]}
        if kernel == "poly2":
            extra = dict(KERNELS["poly2"])
        model = SVR(C=params["C"], epsilon=params["epsilon"], max_iter=params["max_iter"], **extra)
    model.fit(X, scale.forward(y))
    return SingleRun(model, scale)


def validate_svr(params: dict[str, Any], stages: tuple[int, ...] | None) -> None:
    """Reject an unknown kernel or a non-positive C, width or negative epsilon."""
    if params["kernel"] not in SVR_KERNELS:
        raise ValueError(f"svr kernel={params['kernel']!r} is not one of {SVR_KERNELS}")
    if not params["C"] > 0 or not params["width"] > 0 or params["epsilon"] < 0:
        raise ValueError(f"svr needs C > 0, width > 0 and epsilon >= 0, got {params!r}")


GRID = {"kernel": "rbf", "C": 1.0, "width": 0.1, "max_iter": 100_000}
"""The parameters the classifier and the regressor share (the regressor adds ``epsilon``)."""
TEST_PARAMS = {"kernel": "rbf", "C": 1.0, "width": 0.1}

register(Family(name="svm", fit=fit_svm, params=GRID, test_params=TEST_PARAMS))
register(
    Family(
        name="svr",
        fit=fit_svr,
        params={**GRID, "epsilon": 0.1},
        test_params=TEST_PARAMS,
        validate=validate_svr,
        task="regression",
    )
)
