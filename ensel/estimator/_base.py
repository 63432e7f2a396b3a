"""What the classifier and the regressor share: their parameters, one fit through
:class:`~ensel.estimator.fit_pipeline.FitPipeline`, the weighted sum of the kept members'
test-time predictions, risk, the leaderboard, save and load. The file format lives in
:mod:`ensel.estimator.persistence`."""

from __future__ import annotations

import copy
import logging
import os
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..data import named
from ..library import Library
from ..library.data.sources import is_dask_frame
from ..library.execution.executor import BACKENDS
from ..library.spec import LibrarySpec
from ..metrics import Metric, greater_is_better, resolve_metric, score
from ..risk.reject import RejectRule, reject_mask
from ..selection import weighted_average
from ..strategies import STRATEGIES
from .dask_predict import predict_partitions
from .fit_pipeline import FitPipeline, Selected
from .levels import StackedMembers
from .persistence import read_model, write_model

__all__ = ["EnsembleSelectionBase", "Selected"]

log = logging.getLogger(__name__)

POSITIVE_INT = Interval(Integral, 1, None, closed="left")
FRACTION = Interval(Real, 0, 1, closed="right")
SECONDS = Interval(Real, 0, None, closed="neither")


class EnsembleSelectionBase(BaseEstimator):
    """The shared part of both estimators (see the module docstring). Subclasses set
    ``_task`` and the parameters of their own."""

    _task = "classification"
    _tune_selection = False
    """Whether this estimator has ``tune_selection`` and ``grow`` (the classifier does)."""

    _parameter_constraints: ClassVar[dict] = {
        "library": [str, os.PathLike, dict, LibrarySpec, Library],
        "metric": [str, Metric, callable],
        "cv": [Interval(Integral, 2, None, closed="left"), StrOptions({"auto"}), None],
        "strategy": [StrOptions(set(STRATEGIES))],
        "n_iter": [POSITIVE_INT],
        "n_bags": [POSITIVE_INT],
        "bag_fraction": [FRACTION],
        "replacement": ["boolean"],
        "sorted_init": ["boolean"],
        "max_init": [POSITIVE_INT],
        "prune_fraction": [FRACTION],
        "refit": [StrOptions({"full"}), None],
        "max_predict_ms": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"}), None],
        "store": [str, os.PathLike, None],
        "n_jobs": [
            Interval(Integral, None, -1, closed="right"),
            Interval(Integral, 1, None, closed="left"),
            None,
        ],
        "backend": [StrOptions(set(BACKENDS))],  # the builder registered dask
        "client": [str, HasMethods(["submit"]), None],
        "time_limit": [SECONDS, None],
        "run_time_limit": [SECONDS, None],
        "max_memory": [Interval(Real, 0, None, closed="neither"), str, None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "exportable": ["boolean"],
        "levels": [Interval(Integral, 1, 2, closed="both")],
    }
    """What each parameter takes (scikit-learn's constraints, checked first in ``fit``: an
    InvalidParameterError, a ValueError, names the parameter, the value and what it takes)."""

    def _keep_parameters(self, given: dict) -> None:
        """Store every ``__init__`` argument untouched under its own name, as scikit-learn
        asks; ``given``: the subclass ``__init__``'s ``locals()`` (its signature names the
        parameters, so each estimator lists its own and its defaults once)."""
        for name in self._get_param_names():
            setattr(self, name, given[name])

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # missing values are handled (see docs/library.md)
        return tags

    def _fit_members(self, X, y, groups) -> Selected:
        """Build the library and combine it (:class:`~ensel.estimator.fit_pipeline.FitPipeline`,
        its stages in order); sets the fitted attributes both estimators share. The parameters
        are checked (``_parameter_constraints`` by ``fit``'s ``_fit_context``, then the
        pipeline's check stage) before any run starts."""
        return FitPipeline(self, X, y, groups).run()

    def _compare(self, y, hill: np.ndarray, metric, names) -> None:
        """``hillclimb_score_`` (the ensemble's ``hill`` predictions of ``y`` on ``metric``)
        and ``comparison_`` (on each metric of ``names``, the ensemble against the best
        member)."""
        self.hillclimb_score_ = score(metric, y, hill)
        self.comparison_ = {
            name: {
                "ensemble": score(name, y, hill),
                "best member": _best(self.leaderboard_[name], name),
            }
            for name in names
        }

    def _weighted_sum(self, X) -> np.ndarray:
        """``sum_m w_m * prediction_m(X)`` over the kept members, in the library's layout
        (probabilities within [0, 1])."""
        check_is_fitted(self, "weights_")
        members = self.fitted_members_.predict(self._named(X), n_jobs=self.n_jobs)
        return weighted_average(self.weights_, members, self._task)

    def _finish(self, combined: np.ndarray) -> np.ndarray:
        """The estimator's output from the weighted sum of its members (the regressor's is
        the sum itself; the classifier adds its columns and its Platt step)."""
        return combined

    def combine(self, member_predictions: np.ndarray) -> np.ndarray:
        """The ensemble's prediction (``predict_proba``'s for a classifier, ``predict``'s for
        a regressor) from the predictions of *every* library member (``Library.predict(X)``,
        ``(M, n, ...)`` in library order): for comparing many ensembles of one library
        without predicting its members again."""
        check_is_fitted(self, "weights_")
        weights = self.leaderboard_["weight"].to_numpy()
        if member_predictions.shape[0] != weights.size:
            raise ValueError(
                f"member_predictions has {member_predictions.shape[0]} members; the library "
                f"has {weights.size}"
            )
        return self._finish(weighted_average(weights, member_predictions, self._task))

    def risk(self, X) -> pd.DataFrame:
        """Extrapolation risk of each row: one column per detector of the library spec (its own
        risk in [0, 1]) and ``combined``, the calibrated probability that the row comes from the
        uniform background rather than the training data (see :mod:`ensel.risk.combined`)."""
        check_is_fitted(self, "weights_")
        if is_dask_frame(X) and self.detectors_ is not None:
            return predict_partitions(self, X, "risk")
        if self.detectors_ is None:
            raise ValueError(
                "this model has no detectors: its library had none (list some in the spec's "
                "'detectors:' section; the built-in specs have them) or it was saved with "
                "save(path, risk=False)"
            )
        return self.detectors_.risks(self._frame(X), n_jobs=self.n_jobs)

    def refused_rows(self, X, reject, proba=None, risk=None) -> np.ndarray:
        """Boolean mask of the rows ``predict(X, reject=reject)`` refuses: combined risk above
        the threshold or NaN, or, with ``proba`` and a minimum top-class probability, below
        that. ``risk``: ``self.risk(X)`` if already computed (it is the costly part)."""
        risk = (self.risk(X) if risk is None else risk)["combined"].to_numpy()
        if isinstance(reject, RejectRule):
            return reject.reject(risk, proba)
        min_proba, max_risk = _reject_thresholds(reject)
        return reject_mask(risk, max_risk, proba, min_proba if proba is not None else None)

    def _named(self, X):
        """X as given, or an array as a DataFrame of the training columns (in their order)
        after a check of its width."""
        return named(X, self.input_columns_, who=type(self).__name__)

    def _frame(self, X) -> pd.DataFrame:
        """X as a checked DataFrame of the training columns, in their order."""
        return self.fitted_members_.frame(self._named(X))

    def leaderboard(self) -> pd.DataFrame:
        """Every library member: family, params, calibration, stage, its hillclimb score on
        every metric of the task and its weight in the ensemble, best on ``metric`` first."""
        check_is_fitted(self, "leaderboard_")
        metric = resolve_metric(self.metric, task=self._task)
        key = metric.name if metric.name in self.leaderboard_ else "weight"
        ascending = key != "weight" and not metric.greater_is_better
        return self.leaderboard_.sort_values(key, ascending=ascending).reset_index(drop=True)

    def to_onnx(self, path: str | os.PathLike, X=None, risk: bool = False) -> float:
        """Write the fitted ensemble as one ONNX file (views, members, average, calibration;
        see docs/deploy.md) and return the largest absolute difference between the file under
        onnxruntime and this estimator on ``X`` (default: sampled rows). Refuses, in one line
        naming them, members that cannot be exported (fit with ``exportable=True`` to select
        among exportable members only). ``risk=True`` adds the combined extrapolation risk
        as output ``risk`` where its weighted detectors can be written (bounding boxes,
        isolation forests)."""
        from .export import to_onnx

        check_is_fitted(self, "weights_")
        if isinstance(self.fitted_members_, StackedMembers):
            raise ValueError(
                "to_onnx exports an ensemble of one level; this model has a second level "
                "(levels=2): refit with levels=1 to export it"
            )
        return to_onnx(self, path, X, risk=risk)

    def save(self, path: str | os.PathLike, risk: bool = True, compress: int = 3) -> None:
        """Write the fitted model to ``path`` (a pickle: the C unpickler loads hundreds of trees
        far faster than joblib's Python one). It holds what ``predict`` and ``risk`` need: the
        fitted runs of the members with weight (each run's K fold siblings, or one model after
        ``refit="full"``), their calibrators, the weights, and one fitted copy of each detector
        with the combination over them (``risk=False`` leaves the detectors out: ``risk`` and
        ``predict(reject=...)`` then say so); plus the leaderboard and report data (small).
        ``compress``: zlib level of the pickle (0: a plain pickle; fitted trees shrink about
        fivefold at the default 3). The file is written to a temporary name and renamed, so a
        crash never leaves half a model under ``path`` (docs/estimator.md lists sizes)."""
        check_is_fitted(self, "weights_")
        model = self
        if not risk:
            model = copy.copy(self)
            model.detectors_ = None
        write_model(model, path, compress)

    def __getstate__(self) -> dict:
        """Pickled state; a live dask client (a connection) is left out, an address is kept, and
        a Library given as ``library`` is kept as its store's path (its prediction matrix and
        members are not needed to predict)."""
        state = super().__getstate__()
        if self.client is not None and not isinstance(self.client, str):
            state = {**state, "client": None}
        if isinstance(self.library, Library):
            state = {**state, "library": str(self.library.store.path)}
        return state

    @classmethod
    def load(cls, path: str | os.PathLike):
        """Read a model written by :meth:`save`. This unpickles: load only files you trust. A
        truncated or corrupt file, or one saved by another ensel version, raises
        :class:`ensel.errors.ModelFileError` (a ValueError) with one line that says so."""
        return read_model(path, cls, EnsembleSelectionBase)


def _full(proba: np.ndarray, n_classes: int) -> np.ndarray:
    """``(n, C)`` from the library layout (positive-class ``(n,)`` for binary problems)."""
    return np.column_stack([1.0 - proba, proba]) if proba.ndim == 1 else proba


def _best(scores: pd.Series, metric: str) -> float:
    return float(scores.max() if greater_is_better(metric) else scores.min())


def _refused(predictions: np.ndarray, refuse: np.ndarray) -> np.ndarray:
    """``predictions`` as an object array with None in the refused rows."""
    out = predictions.astype(object)
    out[refuse] = None
    return out


def _reject_thresholds(reject) -> tuple[float, float]:
    """``(min top-class probability, max combined risk)`` from ``predict``'s ``reject``."""
    pair = reject if isinstance(reject, tuple | list) else (0.0, reject)
    try:
        min_proba, max_risk = (float(v) for v in pair)
    except (TypeError, ValueError):
        raise ValueError(
            f"reject={reject!r}: give the largest combined risk to accept (a float in [0, 1]) "
            "or a pair (smallest top-class probability, largest risk)"
        ) from None
    if not (0 <= min_proba <= 1 and 0 <= max_risk <= 1):
        raise ValueError(f"reject={reject!r}: thresholds must lie in [0, 1]")
    return min_proba, max_risk
