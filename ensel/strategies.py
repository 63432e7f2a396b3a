"""How a library's members are combined (§4.3.2): ensemble selection (ES), the best single
member (MODSEL) and Bayesian model averaging (BAYESAVG), each from hillclimb predictions to
member weights, so that all three can be compared on the same library."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .metrics import greater_is_better, resolve_metric, score_batch
from .selection import EnsembleSelection

__all__ = ["STRATEGIES", "bayes_average", "ensemble_selection", "model_selection"]

Strategy = Callable[[np.ndarray, np.ndarray, Any, dict], np.ndarray]


def ensemble_selection(P: np.ndarray, y: np.ndarray, metric, options: dict) -> np.ndarray:
    """Weights of ensemble selection (Caruana et al. 2004, §4.1-4.2) for ``metric``."""
    options = dict(options)
    cost = options.pop("cost", None)
    return EnsembleSelection(metric=metric, **options).fit(P, y, cost=cost).weights_


def model_selection(P: np.ndarray, y: np.ndarray, metric, options: dict) -> np.ndarray:
    """All weight on the member with the best hillclimb score for ``metric`` (MODSEL)."""
    scores = score_batch(metric, y, P)
    sign = 1.0 if greater_is_better(resolve_metric(metric)) else -1.0
    weights = np.zeros(P.shape[0])
    weights[int(np.argmax(sign * scores))] = 1.0
    return weights


def bayes_average(P: np.ndarray, y: np.ndarray, metric, options: dict) -> np.ndarray:
    """Bayesian model averaging (Domingos 2000, as compared in §4.3.2): uniform prior, weights
    proportional to each member's likelihood of the hillclimb labels, ``exp(-N * MXE)`` (for a
    regression metric, a Gaussian likelihood of the residuals, see
    ``_gaussian_log_likelihood``). The metric does not enter otherwise: BMA weighs by likelihood
    whatever the target metric. Weights below
    ``1e-9`` of the largest are dropped (they cannot change a prediction) to keep the model small.
    """
    if resolve_metric(metric).task == "regression":
        log_likelihood = _gaussian_log_likelihood(P, y)
    else:
        log_likelihood = -y.size * score_batch("mxe", y, P)
    weights = np.exp(log_likelihood - log_likelihood.max())
    weights[weights < 1e-9] = 0.0
    return weights / weights.sum()


def _gaussian_log_likelihood(P: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Each member's log likelihood of real targets under Gaussian noise of its own maximum
    likelihood variance (its hillclimb MSE): ``-N/2 (log(2 pi MSE) + 1)``. A member with zero
    error gets the largest finite value."""
    mse = score_batch("rmse", y, P) ** 2
    mse = np.maximum(mse, np.finfo(float).tiny)
    return -0.5 * y.size * (np.log(2.0 * np.pi * mse) + 1.0)


STRATEGIES: dict[str, Strategy] = {
    "es": ensemble_selection,
    "modsel": model_selection,
    "bayesavg": bayes_average,
}
