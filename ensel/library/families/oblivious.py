"""CatBoost (Prokhorenkova et al. 2018) on the native view, staged by boosting round: ordered
target statistics for categorical columns, oblivious trees, missing values as their own split.

An optional family (``pip install catboost``, in the ``boost`` extra): one run in the default
spec, skipped where the package is not installed. One run trains ``max(stages)`` rounds
with a fixed learning rate and a fixed number of Newton steps per leaf (CatBoost chooses both by
the number of rounds; for Logloss with catboost 1.2.10, 1 step below 200 rounds and 10 from
200), and stage ``s`` predicts with the first ``s`` trees (``ntree_end``), the same as an
``s``-round run (the time-cap test checks this exactly).
``early_stop`` and ``time_cap`` work as for XGBoost and LightGBM (``ensel.library.families.gbdt``):
boosting stops ``STOP_ROUNDS`` rounds after the log loss of its own held-out rows last improved,
or once ``time_cap`` seconds have passed, and a stage past the rounds kept predicts with the
last kept round. One thread; seeded by ``random_state``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ._base import ConstantRun, Family, RoundsRun, check_stages, encode_labels, full_proba, register
from ._traits import NATIVE_TABLE, FamilyTraits, GrowSpace
from ._work import boosting_cost, depthwise_relative_cost
from .gbdt import STOP_ROUNDS, stopping_split


def _frame(X: np.ndarray, columns: list[int]) -> pd.DataFrame:
    """``X`` as a DataFrame whose categorical columns are integer codes (-1: unseen or
    missing), the only form CatBoost takes categories in besides strings."""
    frame = pd.DataFrame(np.asarray(X, dtype=np.float64))
    for j in columns:
        codes = frame[j].to_numpy()
        frame[j] = np.where(np.isfinite(codes) & (codes >= 0), codes, -1).astype(np.int64)
    return frame


@dataclass
class _CatBoostRun(RoundsRun):
    model: Any
    columns: list[int]
    classes: np.ndarray
    stages: tuple[int, ...]
    n_classes: int
    best: int | None = None  # rounds kept by early stopping or a time cap (None: all)

    def predict(self, X: np.ndarray, stages=None) -> dict[str, np.ndarray]:
        """Members at the stages of index ``stages`` (all by default), each with its own number
        of trees (at most the rounds kept)."""
        frame = _frame(X, self.columns)
        wanted = range(len(self.stages)) if stages is None else stages
        out = np.empty((len(wanted), frame.shape[0], self.n_classes))
        for i, s in enumerate(self.stages[j] for j in wanted):
            s = s if self.best is None else min(s, self.best)
            p = np.asarray(self.model.predict_proba(frame, ntree_end=s), dtype=np.float64)
            out[i] = full_proba(p / p.sum(axis=1, keepdims=True), self.classes, self.n_classes)
        return {"none": out}


class _StopInTime:
    """A CatBoost callback that ends training after ``seconds``, keeping the rounds trained."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.start = seconds, time.monotonic()

    def after_iteration(self, info) -> bool:
        return time.monotonic() - self.start <= self.seconds  # False ends training


def fit_catboost(
    X,
    y,
    *,
    n_classes,
    params,
    stages,
    random_state,
    categorical=None,
    early_stop=0.0,
    time_cap=None,
):
    """CatBoostClassifier, ``max(stages)`` rounds at a fixed rate, one thread, the native
    view's categorical columns as CatBoost categories; ``early_stop`` and ``time_cap``: see
    the module docstring."""
    stages = check_stages(stages, "catboost rounds")
    classes, codes = encode_labels(y)
    if len(classes) == 1:
        return ConstantRun(int(classes[0]), len(stages), n_classes)
    from catboost import CatBoostClassifier

    columns = sorted(categorical or {})
    model = CatBoostClassifier(
        iterations=max(stages),
        learning_rate=params["learning_rate"],
        depth=params["depth"],
        l2_leaf_reg=params["l2_leaf_reg"],
        leaf_estimation_iterations=int(params["leaf_estimation_iterations"]),
        rsm=params["rsm"],
        random_strength=params["random_strength"],
        loss_function="Logloss" if len(classes) == 2 else "MultiClass",
        thread_count=1,
        random_seed=int(random_state),
        verbose=False,
        allow_writing_files=False,
    )
    frame = _frame(X, columns)
    callbacks = [_StopInTime(time_cap)] if time_cap else None
    if early_stop:
        fit, stop = stopping_split(codes, early_stop, random_state)
        model.fit(
            frame.iloc[fit],
            codes[fit],
            cat_features=columns or None,
            eval_set=(frame.iloc[stop], codes[stop]),
            early_stopping_rounds=STOP_ROUNDS,
            use_best_model=False,  # every stage keeps its own trees, capped at the best round
            callbacks=callbacks,
        )
        best = int(model.get_best_iteration()) + 1
    else:
        model.fit(frame, codes, cat_features=columns or None, callbacks=callbacks)
        best = int(model.tree_count_) if time_cap else None
    return _CatBoostRun(model, columns, classes, stages, n_classes, best)


def _validate(params: dict[str, Any], stages: tuple[int, ...] | None) -> None:
    """Reject missing rounds, a non-positive rate or depth, ``rsm`` outside (0, 1]."""
    check_stages(stages, "catboost rounds")
    if not params["learning_rate"] > 0 or int(params["depth"]) < 1:
        raise ValueError(f"catboost needs learning_rate > 0 and depth >= 1, got {params!r}")
    if not 0 < params["rsm"] <= 1:
        raise ValueError(f"catboost rsm must be in (0, 1], got {params['rsm']!r}")


def _space(trial, p):
    return {
        "depth": trial.suggest_int(p + "depth", 3, 8),
        "learning_rate": trial.suggest_float(p + "learning_rate", 0.02, 0.2, log=True),
        "l2_leaf_reg": trial.suggest_float(p + "l2_leaf_reg", 0.5, 30.0, log=True),
        "rsm": trial.suggest_float(p + "rsm", 0.3, 1.0),
    }


register(
    Family(
        name="catboost",
        traits=FamilyTraits(
            rank=3,
            relative_cost=depthwise_relative_cost,
            grow=GrowSpace(_space, (64, 128, 256, 512)),
            cost=boosting_cost(memory_factor=5.0),
        ),
        fit=fit_catboost,
        stops_in_time=True,
        early_stops=True,
        params={
            "learning_rate": 0.05,
            "depth": 6,
            "l2_leaf_reg": 3.0,
            "rsm": 1.0,
            "random_strength": 1.0,
            "leaf_estimation_iterations": 10,
        },
        stages="boosting rounds",
        requires=("catboost",),
        test_params={"depth": 3, "learning_rate": 0.3},
        test_stages=(2, 5),
        validate=_validate,
        **NATIVE_TABLE,
    )
)
