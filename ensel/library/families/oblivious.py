"""CatBoost (Prokhorenkova et al. 2018) on the native view, staged by boosting round: ordered
target statistics for categorical columns, oblivious trees, missing values as their own split.

An optional family (``pip install catboost``; not in the shipped specs, see
docs/library_specs.md for the measurement behind that). One run trains ``max(stages)`` rounds
with a fixed learning rate (CatBoost's automatic rate depends on the number of rounds), and
stage ``s`` predicts with the first ``s`` trees (``ntree_end``), the same as an ``s``-round run.
One thread; seeded by ``random_state``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ._base import ConstantRun, Family, check_stages, encode_labels, full_proba, register


def _frame(X: np.ndarray, columns: list[int]) -> pd.DataFrame:
    """``X`` as a DataFrame whose categorical columns are integer codes (-1: unseen or
    missing), the only form CatBoost takes categories in besides strings."""
    frame = pd.DataFrame(np.asarray(X, dtype=np.float64))
    for j in columns:
        codes = frame[j].to_numpy()
        frame[j] = np.where(np.isfinite(codes) & (codes >= 0), codes, -1).astype(np.int64)
    return frame


@dataclass
class _CatBoostRun:
    model: Any
    columns: list[int]
    classes: np.ndarray
    stages: tuple[int, ...]
    n_classes: int

    def predict(self, X: np.ndarray, stages=None) -> dict[str, np.ndarray]:
        """Members at the stages of index ``stages`` (all by default)."""
        frame = _frame(X, self.columns)
        wanted = range(len(self.stages)) if stages is None else stages
        out = np.empty((len(wanted), frame.shape[0], self.n_classes))
        for i, s in enumerate(self.stages[j] for j in wanted):
            p = np.asarray(self.model.predict_proba(frame, ntree_end=s), dtype=np.float64)
            out[i] = full_proba(p / p.sum(axis=1, keepdims=True), self.classes, self.n_classes)
        return {"none": out}


def fit_catboost(X, y, *, n_classes, params, stages, random_state, categorical=None):
    """CatBoostClassifier, ``max(stages)`` rounds at a fixed rate, one thread, the native
    view's categorical columns as CatBoost categories."""
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
        rsm=params["rsm"],
        random_strength=params["random_strength"],
        loss_function="Logloss" if len(classes) == 2 else "MultiClass",
        thread_count=1,
        random_seed=int(random_state),
        verbose=False,
        allow_writing_files=False,
    )
    model.fit(_frame(X, columns), codes, cat_features=columns or None)
    return _CatBoostRun(model, columns, classes, stages, n_classes)


def _validate(params: dict[str, Any], stages: tuple[int, ...] | None) -> None:
    """Reject missing rounds, a non-positive rate or depth, ``rsm`` outside (0, 1]."""
    check_stages(stages, "catboost rounds")
    if not params["learning_rate"] > 0 or int(params["depth"]) < 1:
        raise ValueError(f"catboost needs learning_rate > 0 and depth >= 1, got {params!r}")
    if not 0 < params["rsm"] <= 1:
        raise ValueError(f"catboost rsm must be in (0, 1], got {params['rsm']!r}")


register(
    Family(
        name="catboost",
        fit=fit_catboost,
        params={
            "learning_rate": 0.05,
            "depth": 6,
            "l2_leaf_reg": 3.0,
            "rsm": 1.0,
            "random_strength": 1.0,
        },
        view="native",
        native_missing=True,
        stages="boosting rounds",
        requires=("catboost",),
        test_params={"depth": 3, "learning_rate": 0.3},
        test_stages=(2, 5),
        validate=_validate,
        categorical=True,
    )
)
