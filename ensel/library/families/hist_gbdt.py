"""scikit-learn's HistGradientBoosting on the native view, as a classifier and as a regressor
(native categorical splits and missing values, staged by boosting iteration).

Not in the paper's grid. HistGradientBoosting is LightGBM's algorithm inside scikit-learn: it
splits categorical columns on category subsets and sends missing values down the learned side of
each split, so it needs no one-hot columns and no imputation. One run trains ``max(stages)``
iterations, and stage ``s`` is the model after ``s`` iterations (``staged_predict_proba`` /
``staged_predict``), the same as a run with ``max_iter=s``; with ``early_stop=f`` (the
classifier on large tables) scikit-learn holds out a share ``f`` and stops after
``STOP_ROUNDS`` iterations without gain, and the stages past the last iteration repeat it. It runs
on one OpenMP thread: the builder parallelises across runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from threadpoolctl import threadpool_limits

from ._base import (
    ConstantRun,
    Family,
    RoundsRun,
    check_stages,
    encode_labels,
    full_proba,
    register,
    staged,
)
from ._regression import column
from ._traits import NATIVE_TABLE, FamilyTraits, GrowSpace
from ._work import boosting_cost, boosting_relative_cost
from .gbdt import STOP_ROUNDS

MAX_BINS = 255


@dataclass
class _HistRun(RoundsRun):
    """A fitted HistGradientBoostingClassifier on labels ``0..len(classes)-1`` and its stages."""

    model: HistGradientBoostingClassifier
    classes: np.ndarray
    stages: tuple[int, ...]
    n_classes: int

    cumulative = True  # staged prediction: a stage needs the iterations of earlier ones

    def predict(self, X: np.ndarray, stages=None) -> dict[str, np.ndarray]:
        """Members at the stages of index ``stages`` (all by default), iterating only up to
        the largest of them."""
        index = range(len(self.stages)) if stages is None else stages
        chosen = [self.stages[i] for i in index]
        out = np.empty((len(chosen), X.shape[0], self.n_classes))
        wanted: dict[int, list[int]] = {}
        for i, s in enumerate(chosen):
            wanted.setdefault(s, []).append(i)
        last = None
        stop = min(max(chosen), self.model.n_iter_)
        with threadpool_limits(1, user_api="openmp"):
            for it, p in enumerate(self.model.staged_predict_proba(X), start=1):
                last = p
                for i in wanted.get(it, []):
                    out[i] = full_proba(p, self.classes, self.n_classes)
                if it >= stop:
                    break
        # stages past the iterations trained (a fold that converged): the last model
        for s, rows in wanted.items():
            if s > self.model.n_iter_:
                for i in rows:
                    out[i] = full_proba(last, self.classes, self.n_classes)
        return {"none": out}


def categorical_mask(
    n_features: int, categorical: dict[int, int] | None, limit: int = MAX_BINS
) -> np.ndarray:
    """Boolean mask of the columns split as categories: the native view's categorical columns
    with at most ``limit`` categories (more are split as ordered codes)."""
    mask = np.zeros(n_features, dtype=bool)
    for j, n in (categorical or {}).items():
        if n <= limit:
            mask[j] = True
    return mask


def _native_categories(X, categorical) -> tuple[np.ndarray, np.ndarray]:
    """``X`` as float64 with unseen categories (code -1) of the split-as-category columns turned
    into missing values, and the mask of those columns."""
    X = np.asarray(X, dtype=np.float64)
    mask = categorical_mask(X.shape[1], categorical)
    if mask.any():
        X = X.copy()
        cat = X[:, mask]
        cat[cat < 0] = np.nan
        X[:, mask] = cat
    return X, mask


def fit_hist_gbdt(
    X, y, *, n_classes, params, stages, random_state, categorical=None, early_stop=0.0
):
    """HistGradientBoostingClassifier, ``max(stages)`` iterations, early stopping only with
    ``early_stop`` (the module docstring), native categorical splits on the view's
    categorical columns, missing values learned per split."""
    stages = check_stages(stages, "hist_gbdt iterations")
    classes, codes = encode_labels(y)
    if len(classes) == 1:
        return ConstantRun(int(classes[0]), len(stages), n_classes)
    X, mask = _native_categories(X, categorical)
    model = HistGradientBoostingClassifier(
        max_iter=max(stages),
        learning_rate=params["learning_rate"],
        max_leaf_nodes=params["max_leaf_nodes"],
        max_depth=params["max_depth"],
        min_samples_leaf=params["min_samples_leaf"],
        l2_regularization=params["l2_regularization"],
        max_features=params["max_features"],
        max_bins=MAX_BINS,
        categorical_features=mask if mask.any() else None,
        early_stopping=bool(early_stop),
        validation_fraction=early_stop or None,
        n_iter_no_change=STOP_ROUNDS,
        random_state=random_state,
    )
    with threadpool_limits(1, user_api="openmp"):
        model.fit(X, codes)
    return _HistRun(model, classes, stages, n_classes)


def _validate_hist(params: dict[str, Any], stages: tuple[int, ...] | None) -> None:
    """Reject missing iterations, a non-positive rate, or fractions outside (0, 1]."""
    check_stages(stages, "hist_gbdt iterations")
    if not params["learning_rate"] > 0:
        raise ValueError(f"hist_gbdt learning_rate must be positive, got {params!r}")
    if not 0 < params["max_features"] <= 1:
        raise ValueError(f"hist_gbdt max_features must be in (0, 1], got {params!r}")
    if int(params["max_leaf_nodes"]) < 2 or int(params["min_samples_leaf"]) < 1:
        raise ValueError(f"hist_gbdt needs max_leaf_nodes >= 2, min_samples_leaf >= 1: {params}")


def _space(trial, p):
    return {
        "learning_rate": trial.suggest_float(p + "learning_rate", 0.02, 0.2, log=True),
        "max_leaf_nodes": trial.suggest_int(p + "max_leaf_nodes", 4, 128, log=True),
        "min_samples_leaf": trial.suggest_int(p + "min_samples_leaf", 2, 100, log=True),
        "l2_regularization": trial.suggest_float(p + "l2_regularization", 1e-3, 10.0, log=True),
        "max_features": trial.suggest_float(p + "max_features", 0.3, 1.0),
    }


HIST_GBDT = FamilyTraits(
    rank=2,
    relative_cost=boosting_relative_cost,
    grow=GrowSpace(_space, (16, 32, 64, 128, 256, 512), default=0),
    cost=boosting_cost(memory_factor=3.0),
)


register(
    Family(
        name="hist_gbdt",
        traits=HIST_GBDT,
        fit=fit_hist_gbdt,
        early_stops=True,
        params={
            "learning_rate": 0.1,
            "max_leaf_nodes": 31,
            "max_depth": None,
            "min_samples_leaf": 20,
            "l2_regularization": 0.0,
            "max_features": 1.0,
        },
        stages="boosting iterations",
        test_params={"max_leaf_nodes": 7, "learning_rate": 0.3, "min_samples_leaf": 5},
        test_stages=(2, 5),
        validate=_validate_hist,
        **NATIVE_TABLE,
    )
)


@dataclass
class _HistRegressionRun(RoundsRun):
    """A HistGradientBoostingRegressor whose ``staged_predict`` yields the prediction after
    every iteration; the members keep the iterations in ``stages``."""

    model: HistGradientBoostingRegressor
    stages: tuple[int, ...]
    single_thread: bool = True  # predict on one OpenMP thread

    def predict(self, X: np.ndarray) -> dict[str, np.ndarray]:
        wanted = set(self.stages)
        out, last = {}, None
        with threadpool_limits(1, user_api="openmp"):
            for i, p in enumerate(self.model.staged_predict(X), start=1):
                last = p
                if i in wanted:
                    out[i] = p
        # a model that stopped early (a perfect fit) repeats its last prediction
        return {"none": column(np.stack([out.get(s, last) for s in self.stages]))}


def fit_hist_gbdt_regression(X, y, *, n_classes, params, stages, random_state, categorical=None):
    """HistGradientBoostingRegressor, ``max(stages)`` iterations without early stopping; a
    member per listed iteration count. Categorical columns split natively, as the
    classifier's."""
    X, mask = _native_categories(X, categorical)
    model = HistGradientBoostingRegressor(
        loss=params["loss"],
        learning_rate=params["learning_rate"],
        max_iter=max(check_stages(stages, "hist_gbdt iterations")),
        max_leaf_nodes=params["max_leaf_nodes"],
        min_samples_leaf=params["min_samples_leaf"],
        l2_regularization=params["l2_regularization"],
        max_bins=MAX_BINS,
        categorical_features=mask if mask.any() else None,
        early_stopping=False,
        random_state=random_state,
    )
    with threadpool_limits(1, user_api="openmp"):
        model.fit(X, y)
    return _HistRegressionRun(model, stages)


register(
    Family(
        name="hist_gbdt",
        traits=HIST_GBDT,
        fit=fit_hist_gbdt_regression,
        params={
            "loss": "squared_error",
            "learning_rate": 0.1,
            "max_leaf_nodes": 31,
            "min_samples_leaf": 20,
            "l2_regularization": 0.0,
        },
        stages="boosting iterations",
        **NATIVE_TABLE,
        test_params={"learning_rate": 0.3, "max_leaf_nodes": 7},
        test_stages=(2, 5),
        validate=staged("hist_gbdt iterations"),
    ),
    task="regression",
)
