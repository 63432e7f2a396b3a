"""Gradient-boosted trees (XGBoost, LightGBM) on the native view, staged by boosting round, as
classifiers and as regressors (squared error), both registered by one helper over shared grids.

Not in the paper's grid, which predates them; they are today's strongest tabular models and a
library without them would understate what selection has to work with. One run trains
``max(stages)`` rounds, and stage ``s`` predicts with the first ``s`` rounds only, which is
exactly the model trained with ``n_estimators=s`` (boosting never revisits earlier trees).
With ``early_stop=f`` (the builder passes it on large tables, see
``ensel.library.execution.runs.EARLY_STOP_ROWS``) a stratified share ``f`` of the fit's rows is
held out
and boosting stops ``STOP_ROUNDS`` rounds after their log loss last improved; a stage past the
best round predicts with the best round (the stages repeat the best model, and the rounds that
were never trained cost nothing).
With ``time_cap=t`` (seconds; the builder passes it under a per-run time limit, see
``ensel.library.execution.runs.fit_run``) boosting stops adding rounds once ``t`` seconds have
passed and
keeps the rounds it reached: a stage past them predicts with the last round, as after early
stopping, so a run that would outlast its limit returns a shorter ladder instead of nothing.
Both run single-threaded (the builder parallelises across runs) and are seeded by
``random_state``. Both split the native view's categorical columns natively (category subsets,
not ordered codes) and learn where missing values go. xgboost and lightgbm are optional
dependencies, imported when a run trains.
"""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._base import (
    ConstantRun,
    Family,
    RoundsRun,
    RunWrapper,
    check_stages,
    encode_labels,
    full_proba,
    register,
)
from ._native_predict import lightgbm_raw, lightgbm_row, xgboost_value
from ._regression import column
from ._traits import FamilyTraits, GrowSpace
from ._treepack import PACK_CELLS
from ._work import boosting_cost, boosting_relative_cost, depthwise_relative_cost
from ._xgboost_pack import XGBoostPack

STOP_ROUNDS = 50
"""Rounds without improvement on the early-stopping rows after which boosting stops."""


def _lightgbm_time_cap(seconds: float):
    """A LightGBM callback that ends training after ``seconds``, keeping the rounds trained."""
    from lightgbm.callback import EarlyStopException

    start = time.monotonic()

    def stop_in_time(env) -> None:
        if time.monotonic() - start > seconds:
            raise EarlyStopException(env.iteration, env.evaluation_result_list)

    stop_in_time.order = 40  # after the early-stopping callback (30)
    return stop_in_time


def _xgboost_time_cap(seconds: float):
    """An XGBoost callback that ends training after ``seconds``, keeping the rounds trained."""
    from xgboost.callback import TrainingCallback

    class StopInTime(TrainingCallback):
        def before_training(self, model):
            self.start = time.monotonic()
            return model

        def after_iteration(self, model, epoch, evals_log) -> bool:
            return time.monotonic() - self.start > seconds

    return StopInTime()


def _best_round(evals: dict) -> int:
    """The round (from 1) where the first validation metric of a fitted model's eval record was
    lowest, the first of several on a tie: where early stopping keeps the model, whether its
    own callback or the time cap ended training."""
    losses = next(iter(next(iter(evals.values())).values()))
    return int(np.argmin(losses)) + 1


@dataclass
class _BoostedRun(RoundsRun):
    """A fitted XGBClassifier or LGBMClassifier, trained on labels ``0..len(classes)-1`` that
    stand for ``classes``, and the rounds each stage keeps."""

    model: Any
    kind: str  # "xgboost" or "lightgbm"
    classes: np.ndarray
    stages: tuple[int, ...]
    n_classes: int
    best: int | None = None  # rounds kept by early stopping (None: all)

    def predict(self, X: np.ndarray, stages=None) -> dict[str, np.ndarray]:
        """Members at the stages of index ``stages`` (all by default), each predicted with its
        own number of rounds (at most the best round where boosting stopped early)."""
        wanted = list(range(len(self.stages)) if stages is None else stages)
        out = np.empty((len(wanted), X.shape[0], self.n_classes))
        for i, s in enumerate(self.stages[j] for j in wanted):
            s = s if self.best is None else min(s, self.best)
            if self.kind == "xgboost":
                p = self._xgboost_proba(X, s)
            else:
                p = lightgbm_proba(self.model, X, s)
            p = np.asarray(p, dtype=np.float64)
            out[i] = full_proba(p / p.sum(axis=1, keepdims=True), self.classes, self.n_classes)
        return {"none": out}

    def _xgboost_proba(self, X: np.ndarray, rounds: int) -> np.ndarray:
        """:func:`xgboost_proba`; for a small batch (rows times rounds at most
        ``PACK_CELLS``) from the compiled walk of the booster's trees
        (:class:`~ensel.library.families._xgboost_pack.XGBoostPack`, made on first use and
        kept, not pickled), the same numbers without the C call's fixed cost."""
        if X.shape[0] * rounds <= PACK_CELLS:
            if "_pack" not in self.__dict__:
                self.__dict__["_pack"] = XGBoostPack.of(
                    self.model.get_booster(), self.model.missing
                )
            pack = self.__dict__["_pack"]
            if pack is not None:
                p = pack.values(X, rounds)
                return np.vstack((1.0 - p, p)).transpose()
        return xgboost_proba(self.model, X, rounds)

    def __getstate__(self) -> dict:
        """Pickled state, without the pack of :meth:`_xgboost_proba` (a cache)."""
        state = dict(self.__dict__)
        state.pop("_pack", None)
        return state


def lightgbm_proba(model, X: np.ndarray, rounds: int) -> np.ndarray:
    """``model.predict_proba(X, num_iteration=rounds)`` of a fitted LGBMClassifier, read from
    its booster's C call (``Booster.predict``'s, with its arguments:
    :func:`~ensel.library.families._native_predict.lightgbm_raw`): the wrappers' input checks,
    predictor object and parameter handling cost more per call than a few rows' trees, and the
    classifier only adds ``1 - p`` beside the booster's ``p`` for two classes (the same
    numbers, tested); one row through the single-row call
    (:func:`~ensel.library.families._native_predict.lightgbm_row`). One thread, as the
    wrapper of these models (``n_jobs=1``) asks: the booster alone would start every core's,
    and on a busy machine their start costs more than the trees."""
    booster = model.booster_
    p = lightgbm_row(booster, X, rounds) if X.shape[0] == 1 else lightgbm_raw(booster, X, rounds)
    return p if p.ndim == 2 else np.vstack((1.0 - p, p)).transpose()


def xgboost_proba(model, X: np.ndarray, rounds: int) -> np.ndarray:
    """``model.predict_proba(X, iteration_range=(0, rounds))`` of a fitted XGBClassifier, read
    from its booster as the wrapper reads it (``inplace_predict``'s C call with the same
    arguments, :func:`~ensel.library.families._native_predict.xgboost_value`; the same float32
    ``1 - p`` beside ``p`` for two classes): the wrappers' Python work costs more per call
    than a few rows' trees."""
    p = xgboost_value(model.get_booster(), X, rounds, model.missing)
    return np.vstack((1.0 - p, p)).transpose() if p.ndim == 1 else p


def stopping_split(codes: np.ndarray, early_stop: float, random_state: int):
    """``(fit rows, stopping rows)``: a seeded stratified share ``early_stop`` of the rows held
    out to stop boosting on (unstratified where a class is too small to split)."""
    from sklearn.model_selection import train_test_split

    rows = np.arange(codes.size)
    try:
        return train_test_split(
            rows, test_size=early_stop, stratify=codes, random_state=random_state % 2**32
        )
    except ValueError:
        return train_test_split(rows, test_size=early_stop, random_state=random_state % 2**32)


def categorical_codes(X: np.ndarray, columns: list[int]) -> np.ndarray:
    """``X`` as float64 with unseen categories (code -1) of ``columns`` turned into NaN: both
    libraries treat a missing category as missing, and xgboost refuses negative codes."""
    X = np.asarray(X, dtype=np.float64)
    if not columns:
        return X
    cat = X[:, columns]
    unseen = cat < 0
    if not unseen.any():  # as it is: the view's matrix, which the boosters only read
        return X
    X = X.copy()
    cat[unseen] = np.nan
    X[:, columns] = cat
    return X


@dataclass
class _CategoricalRun(RunWrapper):
    """A boosted run whose categorical columns need unseen codes turned into NaN first."""

    inner: _BoostedRun
    columns: list[int]

    def predict(self, X: np.ndarray, stages=None) -> dict[str, np.ndarray]:
        return self.inner.predict(categorical_codes(X, self.columns), stages=stages)


def _xgboost_options(params: dict, rounds: int, random_state: int) -> dict:
    """XGBoost's options both tasks read from their parameters: histogram trees, one thread."""
    return {
        "n_estimators": rounds,
        "max_depth": params["max_depth"],
        "learning_rate": params["learning_rate"],
        "subsample": params["subsample"],
        "colsample_bytree": params["colsample_bytree"],
        "min_child_weight": params["min_child_weight"],
        "reg_lambda": params["reg_lambda"],
        "tree_method": "hist",
        "n_jobs": 1,
        "verbosity": 0,
        "random_state": random_state,
    }


def _lightgbm_options(params: dict, rounds: int, random_state: int) -> dict:
    """LightGBM's options both tasks read from their parameters: bagging redrawn every round,
    one thread, deterministic row-wise histograms; ``extra_trees`` (optional, default off):
    each split's threshold drawn at random per feature, as AutoGluon's LightGBMXT."""
    return {
        "n_estimators": rounds,
        "num_leaves": params["num_leaves"],
        "learning_rate": params["learning_rate"],
        "subsample": params["subsample"],
        "subsample_freq": 1,
        "colsample_bytree": params["colsample_bytree"],
        "min_child_samples": params["min_child_samples"],
        "reg_lambda": params["reg_lambda"],
        "n_jobs": 1,
        "verbosity": -1,
        "random_state": random_state % (2**31 - 1),  # LightGBM seeds are C ints
        "deterministic": True,
        "force_row_wise": True,
        **({"extra_trees": True} if params.get("extra_trees", False) else {}),
    }


def fit_xgboost(
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
    """XGBoost with the histogram tree method, ``max(stages)`` rounds, one thread; the native
    view's categorical columns are split natively (``enable_categorical``); ``early_stop`` and
    ``time_cap``: see the module docstring."""
    stages = check_stages(stages, "xgboost rounds")
    classes, codes = encode_labels(y)
    if len(classes) == 1:
        return ConstantRun(int(classes[0]), len(stages), n_classes)
    from xgboost import XGBClassifier

    columns = sorted(categorical or {})
    X = categorical_codes(X, columns)
    feature_types = ["c" if j in set(columns) else "q" for j in range(X.shape[1])]
    model = XGBClassifier(
        **_xgboost_options(params, max(stages), random_state),
        reg_alpha=params["reg_alpha"],
        gamma=params["gamma"],
        feature_types=feature_types if columns else None,
        enable_categorical=bool(columns),
        max_cat_to_onehot=4,
        early_stopping_rounds=STOP_ROUNDS if early_stop else None,
        callbacks=[_xgboost_time_cap(time_cap)] if time_cap else None,
    )
    if early_stop:
        fit, stop = stopping_split(codes, early_stop, random_state)
        model.fit(X[fit], codes[fit], eval_set=[(X[stop], codes[stop])], verbose=False)
    else:
        model.fit(X, codes)
    best = _xgboost_rounds(model, early_stop, time_cap)
    run = _BoostedRun(model, "xgboost", classes, stages, n_classes, best)
    return _CategoricalRun(run, columns) if columns else run


def _xgboost_rounds(model, early_stop: float, time_cap) -> int | None:
    """Rounds a fitted XGBoost model keeps (None: all it was asked for)."""
    if time_cap:
        model.set_params(callbacks=None)  # the fitted model need not pickle its callback
    if early_stop:
        return _best_round(model.evals_result())
    return int(model.get_booster().num_boosted_rounds()) if time_cap else None


def _lightgbm_rounds(model, early_stop: float, time_cap) -> int | None:
    """Rounds a fitted LightGBM model keeps (None: all it was asked for)."""
    if early_stop:
        return _best_round(model.evals_result_)
    if time_cap:
        return int(model.booster_.current_iteration())
    return None


def fit_lightgbm(
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
    """LightGBM, ``max(stages)`` rounds, one thread, deterministic row-wise histograms;
    ``subsample`` is bagging redrawn every round; the native view's categorical columns are
    split natively (``categorical_feature``); ``early_stop`` and ``time_cap``: see the module
    docstring."""
    stages = check_stages(stages, "lightgbm rounds")
    classes, codes = encode_labels(y)
    if len(classes) == 1:
        return ConstantRun(int(classes[0]), len(stages), n_classes)
    from lightgbm import LGBMClassifier

    columns = sorted(categorical or {})
    X = categorical_codes(X, columns)

    model = LGBMClassifier(
        **_lightgbm_options(params, max(stages), random_state),
        reg_alpha=params["reg_alpha"],
        min_split_gain=params["min_split_gain"],
    )
    features = columns if columns else "auto"
    callbacks = [_lightgbm_time_cap(time_cap)] if time_cap else []
    if early_stop:
        from lightgbm import early_stopping

        fit, stop = stopping_split(codes, early_stop, random_state)
        if "eval_X" in inspect.signature(model.fit).parameters:  # lightgbm >= 4.7
            held = {"eval_X": (X[stop],), "eval_y": (codes[stop],)}
        else:
            held = {"eval_set": [(X[stop], codes[stop])]}
        model.fit(
            X[fit],
            codes[fit],
            **held,
            categorical_feature=features,
            callbacks=[early_stopping(STOP_ROUNDS, verbose=False), *callbacks],
        )
    else:
        model.fit(X, codes, categorical_feature=features, callbacks=callbacks)
    best = _lightgbm_rounds(model, early_stop, time_cap)
    run = _BoostedRun(model, "lightgbm", classes, stages, n_classes, best)
    return _CategoricalRun(run, columns) if columns else run


def validate_boosting(name: str):
    def validate(params: dict[str, Any], stages: tuple[int, ...] | None) -> None:
        """Reject missing or non-positive rounds and sampling fractions outside (0, 1]."""
        check_stages(stages, f"{name} rounds")
        for key in ("subsample", "colsample_bytree"):
            if not 0 < params[key] <= 1:
                raise ValueError(f"{name} {key} must be in (0, 1], got {params[key]!r}")
        if not params["learning_rate"] > 0:
            raise ValueError(f"{name} learning_rate must be positive, got {params!r}")

    return validate


@dataclass
class _RoundsRegressionRun(RoundsRun):
    """An XGBRegressor or LGBMRegressor and the rounds each member keeps."""

    model: Any
    kind: str  # "xgboost" or "lightgbm"
    stages: tuple[int, ...]
    best: int | None = None  # rounds trained within a time cap (None: all)

    def predict(self, X: np.ndarray) -> dict[str, np.ndarray]:
        out = np.empty((len(self.stages), X.shape[0]))
        for i, s in enumerate(self.stages):
            s = s if self.best is None else min(s, self.best)
            if self.kind == "xgboost":
                out[i] = self.model.predict(X, iteration_range=(0, s))
            else:
                out[i] = self.model.predict(X, num_iteration=s)
        return {"none": column(out)}


def fit_xgboost_regression(X, y, *, n_classes, params, stages, random_state, time_cap=None):
    """XGBoost regression (squared error), histogram trees, ``max(stages)`` rounds, one thread;
    ``time_cap``: see the module docstring."""
    from xgboost import XGBRegressor

    model = XGBRegressor(
        **_xgboost_options(params, max(check_stages(stages, "xgboost rounds")), random_state),
        callbacks=[_xgboost_time_cap(time_cap)] if time_cap else None,
    ).fit(X, y)
    return _RoundsRegressionRun(model, "xgboost", stages, _xgboost_rounds(model, 0.0, time_cap))


def fit_lightgbm_regression(X, y, *, n_classes, params, stages, random_state, time_cap=None):
    """LightGBM regression (L2), ``max(stages)`` rounds, one thread, deterministic;
    ``time_cap``: see the module docstring."""
    from lightgbm import LGBMRegressor

    model = LGBMRegressor(
        **_lightgbm_options(params, max(check_stages(stages, "lightgbm rounds")), random_state)
    )
    model.fit(X, y, callbacks=[_lightgbm_time_cap(time_cap)] if time_cap else None)
    best = _lightgbm_rounds(model, 0.0, time_cap)
    return _RoundsRegressionRun(model, "lightgbm", stages, best)


def register_boosting(
    name: str,
    *,
    classifier,
    regressor,
    params: dict[str, Any],
    classifier_params: dict[str, Any],
    test_params: dict[str, Any],
    traits: FamilyTraits,
    optional: dict[str, Any] | None = None,
) -> None:
    """Register the classifier and the regressor of one boosting library: both on the native
    view with missing values learned per split, staged by round, seeded, the grid ``params``
    shared (the classifier adds ``classifier_params``; it alone splits categories natively),
    with the same ``traits`` and ``optional`` parameters (:attr:`Family.optional`)."""
    common = {
        "traits": traits,
        "optional": dict(optional or {}),
        "view": "native",
        "native_missing": True,
        "stages": "boosting rounds",
        "requires": (name,),
        "test_params": test_params,
        "test_stages": (2, 5),
        "validate": validate_boosting(name),
        "stops_in_time": True,
    }
    register(
        Family(
            name=name,
            fit=classifier,
            params={**params, **classifier_params},
            categorical=True,
            early_stops=True,
            **common,
        )
    )
    register(Family(name=name, fit=regressor, params=params, **common), task="regression")


def _space_xgboost(trial, p):
    return {
        "max_depth": trial.suggest_int(p + "max_depth", 2, 10),
        "learning_rate": trial.suggest_float(p + "learning_rate", 0.01, 0.2, log=True),
        "subsample": trial.suggest_float(p + "subsample", 0.5, 1.0),
        "colsample_bytree": trial.suggest_float(p + "colsample_bytree", 0.3, 1.0),
        "min_child_weight": trial.suggest_float(p + "min_child_weight", 0.5, 20.0, log=True),
        "reg_lambda": trial.suggest_float(p + "reg_lambda", 0.1, 30.0, log=True),
        "reg_alpha": trial.suggest_float(p + "reg_alpha", 1e-3, 5.0, log=True),
    }


def _space_lightgbm(trial, p):
    return {
        "num_leaves": trial.suggest_int(p + "num_leaves", 4, 128, log=True),
        "learning_rate": trial.suggest_float(p + "learning_rate", 0.01, 0.2, log=True),
        "subsample": trial.suggest_float(p + "subsample", 0.5, 1.0),
        "colsample_bytree": trial.suggest_float(p + "colsample_bytree", 0.3, 1.0),
        "min_child_samples": trial.suggest_int(p + "min_child_samples", 3, 100, log=True),
        "reg_lambda": trial.suggest_float(p + "reg_lambda", 1e-3, 30.0, log=True),
        "reg_alpha": trial.suggest_float(p + "reg_alpha", 1e-3, 5.0, log=True),
    }


register_boosting(
    "xgboost",
    classifier=fit_xgboost,
    regressor=fit_xgboost_regression,
    params={
        "max_depth": 6,
        "learning_rate": 0.1,
        "subsample": 1.0,
        "colsample_bytree": 1.0,
        "min_child_weight": 1.0,
        "reg_lambda": 1.0,
    },
    classifier_params={"reg_alpha": 0.0, "gamma": 0.0},
    test_params={"max_depth": 3, "learning_rate": 0.3, "subsample": 0.8},
    traits=FamilyTraits(
        rank=1,
        relative_cost=depthwise_relative_cost,
        grow=GrowSpace(_space_xgboost, (32, 64, 128, 256, 512), default=1),
        cost=boosting_cost(memory_factor=4.0),
    ),
)
register_boosting(
    "lightgbm",
    classifier=fit_lightgbm,
    regressor=fit_lightgbm_regression,
    params={
        "num_leaves": 31,
        "learning_rate": 0.1,
        "subsample": 1.0,
        "colsample_bytree": 1.0,
        "min_child_samples": 20,
        "reg_lambda": 0.0,
    },
    classifier_params={"reg_alpha": 0.0, "min_split_gain": 0.0},
    test_params={"num_leaves": 7, "learning_rate": 0.3, "subsample": 0.8},
    optional={"extra_trees": False},
    traits=FamilyTraits(
        rank=0,
        relative_cost=boosting_relative_cost,
        grow=GrowSpace(_space_lightgbm, (32, 64, 128, 256, 512), default=2),
        cost=boosting_cost(memory_factor=3.0),
    ),
)
