"""Linear models on the standardised view: logistic regression for classes (App. 4.B) and least
squares or ridge regression for numeric targets."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge

from ._base import Family, Run, full_proba, register
from ._regression import SingleRun
from ._traits import FamilyTraits
from ._work import linear_cost


@dataclass
class _ProbaRun(Run):
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


def _logreg_cost(params: dict[str, Any], stages: tuple[int, ...] | None) -> float:
    """Unregularised fits iterate longest; a larger ridge converges sooner."""
    ridge = params.get("ridge")
    return 2.0 if ridge is None else 1.0 + 1.0 / (1.0 + math.log10(1.0 + float(ridge)))


register(
    Family(
        name="logreg",
        traits=FamilyTraits(rank=6, quick=0, relative_cost=_logreg_cost, cost=linear_cost()),
        fit=fit_logreg,
        params={"ridge": None, "max_iter": 1000},
        test_params={"ridge": 1.0},
    )
)


def fit_linear(X, y, *, n_classes, params, stages, random_state):
    """Least squares (``ridge: null``) or ridge regression with penalty ``ridge``."""
    ridge = params["ridge"]
    model = LinearRegression() if ridge is None else Ridge(alpha=float(ridge))
    return SingleRun(model.fit(X, y))


register(
    Family(
        name="linear",
        traits=FamilyTraits(rank=7, quick=3, cost=linear_cost()),
        fit=fit_linear,
        params={"ridge": None},
        test_params={"ridge": 1.0},
    ),
    task="regression",
)
