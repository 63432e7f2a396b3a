"""What the classifier and the regressor share: building (or reusing) the library, combining
its members by a strategy, keeping those with weight, the weighted sum of their test-time
predictions, risk, the leaderboard, save and load. Budget planning lives in
:mod:`ensel.estimator.budget`, the file format in :mod:`ensel.estimator.persistence`."""

from __future__ import annotations

import copy
import logging
import os
import time
from dataclasses import dataclass
from numbers import Integral, Real
from pathlib import Path
from typing import ClassVar

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._jobs import as_seed
from ..data import named
from ..library import Library, build_library
from ..library.data.sources import is_dask_frame, is_source, n_classes, n_rows
from ..library.data.training import resolve_cv
from ..library.execution.executor import BACKENDS
from ..library.planning.budget import check_grow
from ..library.planning.cost import predict_cost
from ..library.planning.grow import GrowSpec, parse_grow
from ..library.planning.memory import parse_memory, selection_memory
from ..library.spec import LibrarySpec, load_spec
from ..metrics import Metric, greater_is_better, resolve_metric, score
from ..risk.combined import DetectorSet
from ..risk.reject import RejectRule, reject_mask
from ..selection import PredictCost, weighted_average
from ..strategies import STRATEGIES, cheapest_within_noise, choose_selection, drop_costly_runs
from . import budget
from .budget_report import BudgetReport
from .dask_predict import predict_partitions
from .persistence import read_model, version, write_model

__all__ = ["EnsembleSelectionBase", "Selected"]

log = logging.getLogger(__name__)

POSITIVE_INT = Interval(Integral, 1, None, closed="left")
FRACTION = Interval(Real, 0, 1, closed="right")
SECONDS = Interval(Real, 0, None, closed="neither")


@dataclass
class Selected:
    """What selection made of a library: the library, its hillclimb matrix, the metric, one
    weight per library member and the fit's seed (every other seed is derived from it)."""

    library: Library
    P: np.ndarray
    metric: object
    weights: np.ndarray
    seed: int


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
        """Build the library and combine it; sets the fitted attributes both estimators
        share. The parameters are checked (``_parameter_constraints`` by ``fit``'s
        ``_fit_context``, then :meth:`_check_before_work`) before any run starts."""
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None"
            )
        started = time.monotonic()
        metric, source = self._check_before_work()
        # counted once here for the build budget and the spare tier (a dask frame's count is a
        # pass over it; build_library counts again for its folds)
        rows = None if self.time_limit is None else n_rows(X)
        seed = as_seed(self.random_state)  # drawn once: every seed of this fit derives from it
        options = self._selection_options(seed)
        lib = self._library(X, y, groups, started, source, seed, rows)
        P = np.asarray(lib.predictions)
        if self.strategy == "es":  # selection's copies of P stay under the ceiling too
            options["memory_budget"] = selection_memory(self.max_memory)
        deadline, options = self._fit_selection_in_time(lib, P, metric, options, started)
        if self.time_limit is not None and isinstance(source, LibrarySpec):
            self.budget_.library = source.name
            self.budget_.spare_runs = len(source.spare_for(rows, budgeted=True))
        weights = self._select(lib, P, metric, options, deadline)
        if self.exportable:
            weights = self._select_exportable(lib, P, metric, options, deadline, weights)
        self._keep(lib, P, weights, X, y, groups, seed)
        self.fit_seconds_ = time.monotonic() - started
        if self.time_limit is not None:
            self._report_unused(source, lib, rows)
        self.ensel_version_ = version()
        return Selected(lib, P, metric, weights, seed)

    def _select_exportable(self, lib, P, metric, options, deadline, unrestricted):
        """Weights selected among the members ``to_onnx`` can express (``exportable=True``),
        under the same options and predict budget; ``budget_.exportable`` records what the
        restriction cost: the hillclimb score with and without it (before any final
        calibration) and the members it left."""
        from .export.restrict import ExportableMembers, exportable_mask

        mask = exportable_mask(lib.members, self._task, categorical=bool(lib.categories))
        if not mask.any():
            raise ValueError(
                "exportable=True: no member of the library can be exported to ONNX; see "
                "docs/deploy.md for the families, views and calibrations that export"
            )
        weights = np.zeros_like(unrestricted)
        weights[mask] = self._select(
            ExportableMembers(lib, mask), P[mask], metric, options, deadline
        )
        with_all = score(metric, lib.y, weighted_average(unrestricted, P, self._task))
        exportable = score(metric, lib.y, weighted_average(weights, P, self._task))
        self.budget_.exportable = {
            "members": int(mask.sum()),
            "of": int(mask.size),
            "score_all": float(with_all),
            "score_exportable": float(exportable),
        }
        return weights

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

    def _report_unused(self, source, lib, rows: int) -> None:
        """Under ``time_limit``: ``budget_.unused_seconds`` (seconds of the budget left when
        the fit ended) and, where the fit ended early, an INFO note that says why."""
        self.budget_.unused_seconds = max(0.0, self.time_limit - self.fit_seconds_)
        spec = source if isinstance(source, LibrarySpec) else None
        why = budget.unused_budget(self.time_limit, self.fit_seconds_, spec, rows, lib.failures)
        if why is not None:
            self.budget_.unused_reason = why
            log.info(
                "the fit ended %.0f s before its time_limit of %g s: %s",
                self.budget_.unused_seconds,
                self.time_limit,
                why,
            )

    def _check_before_work(self) -> tuple[Metric, Library | LibrarySpec]:
        """``(metric, library or spec)`` once what the constraints cannot say is checked too:
        the metric's name and task, the spec (a built-in name or an existing file) or the
        store and its task, ``max_predict_ms`` against the strategy, ``grow``. Nothing has
        been trained or written yet when any of these raises."""
        parse_memory(self.max_memory)  # a size this cannot read fails here, not in the build
        metric = resolve_metric(self.metric, task=self._task)
        if self._fixed_budget() and self.strategy != "es":
            raise ValueError(
                f"max_predict_ms={self.max_predict_ms!r} works with strategy='es', not "
                f"{self.strategy!r}; use strategy='es' or max_predict_ms=None"
            )
        source = self.library
        if isinstance(source, str | os.PathLike) and (Path(source) / "store.json").is_file():
            source = Library.open(source)
        if not isinstance(source, Library):
            source = load_spec(source)
        if source.task != self._task:
            what = (
                f"library spec {source.name!r} is for"
                if isinstance(source, LibrarySpec)
                else "the library was built for"
            )
            raise ValueError(
                f"{what} {source.task}, but {type(self).__name__} does {self._task}; use a "
                f"{self._task} spec (e.g. "
                f"{'regression' if self._task == 'regression' else 'default'})"
            )
        if isinstance(source, LibrarySpec):
            check_grow(parse_grow(self._grow_spec()), self.time_limit)
        return metric, source

    def _selection_options(self, seed: int) -> dict:
        """The selection options of ``EnsembleSelection`` as this estimator's parameters say."""
        return {
            "n_iter": self.n_iter,
            "n_bags": self.n_bags,
            "bag_fraction": self.bag_fraction,
            "replacement": self.replacement,
            "sorted_init": self.sorted_init,
            "max_init": self.max_init,
            "prune_fraction": self.prune_fraction,
            "random_state": seed,
        }

    def _fit_selection_in_time(self, lib, P, metric, options, started):
        """``(deadline, options)``: under ``time_limit``, the moment selection must end by and
        the selection options that fit the time the build left at the speed a pilot selection
        on ``P`` measures (``budget_`` says what changed); without one, ``(None, options)``."""
        self.budget_ = BudgetReport()
        if self.time_limit is None:
            return None, options
        speed = budget.selection_speed(self.strategy, metric, options, P, lib.y)
        after = 0.5 + 0.02 * self.time_limit  # detectors' combination, members, report
        deadline = started + self.time_limit - after
        left = deadline - time.monotonic()
        # "auto" refits selection under smaller cost budgets: half the time is theirs
        left = left / 2 if self._auto_budget() and self.strategy == "es" else left
        options, report = budget.selection_within(options, left, speed, P.shape)
        self.budget_ = BudgetReport.of_selection(report)
        self.budget_.add_build(lib, time.monotonic() - started)
        if lib.plan is not None:
            self.budget_.plan = budget.plan_summary(lib.plan)
        return deadline, options

    def _select(self, lib, P, metric, options, deadline) -> np.ndarray:
        """One weight per library member, by ``strategy`` under the predict-cost budget."""
        auto = self._auto_budget()
        self.selection_comparison_ = []
        if self._tune_selection and self.tune_selection and self.strategy == "es":
            options, self.selection_comparison_ = choose_selection(P, lib.y, metric, options)
        self.selection_options_ = dict(options)
        cost = self._predict_cost(lib)
        chosen = options
        if self._fixed_budget():
            chosen = {**options, "max_cost": float(self.max_predict_ms), "cost": cost}
        weights = STRATEGIES[self.strategy](P, lib.y, metric, chosen)
        self.predict_budget_ = {"max_predict_ms": None if auto else self.max_predict_ms}
        if auto and self.strategy == "es" and cost is not None:
            full = weights
            weights, ms, tried = cheapest_within_noise(
                P, lib.y, metric, options, cost, full, deadline=deadline
            )
            weights, dropped = drop_costly_runs(
                P,
                lib.y,
                metric,
                cost,
                weights,
                full,
                lib.members["run"].to_numpy(),
                seed=options.get("random_state"),
                deadline=deadline,
            )
            self.predict_budget_ = {"max_predict_ms": ms, "tried": tried, "dropped": dropped}
        self.predict_cost_ms_ = np.nan if cost is None else cost.of(np.flatnonzero(weights > 0))
        return weights

    def _keep(self, lib, P, weights, X, y, groups, seed: int) -> None:
        """The fitted attributes: the members with weight (refitted on all rows where
        ``refit="full"``), the leaderboard, the columns, the detectors."""
        self.leaderboard_ = _leaderboard(lib, P, weights)
        keep = np.flatnonzero(weights > 0)
        self.members_ = lib.members.iloc[keep].assign(weight=weights[keep]).reset_index(drop=True)
        self.weights_ = weights[keep]
        self.fitted_members_ = lib.subset(self.members_["id"])
        if self.refit == "full":
            if is_source(X):
                raise ValueError(
                    "refit='full' needs the training rows in memory; with a parquet path or a "
                    "dask DataFrame use refit=None (the members' fold siblings)"
                )
            self.fitted_members_ = lib.refit_full(
                self.fitted_members_,
                X,
                y,
                groups,
                random_state=seed,
                n_jobs=self.n_jobs,
            )
        self.columns_ = list(lib.columns)  # the columns the members use
        self.input_columns_ = list(lib.input_columns)  # the columns given to fit
        self.dropped_columns_ = dict(lib.dropped)  # left out: all missing or constant
        self.categories_ = dict(lib.categories)
        self.n_features_in_ = len(self.input_columns_)
        if isinstance(X, pd.DataFrame) or is_source(X):
            self.feature_names_in_ = np.asarray(self.input_columns_, dtype=object)
        elif hasattr(self, "feature_names_in_"):  # refitted on an array: no names now
            del self.feature_names_in_
        self.detectors_ = _detector_set(lib, seed)
        self.library_path_ = None if lib.temporary else str(Path(lib.store.path).resolve())

    def _predict_cost(self, lib: Library) -> PredictCost | None:
        """What predicting with each set of members costs (None where the library's builder
        recorded no timings and no budget asks for them)."""
        siblings = 1 if self.refit == "full" else lib.siblings
        try:
            needs, item_cost, _ = predict_cost(lib.members, lib.store.records, siblings)
        except ValueError:
            if self._fixed_budget():
                raise
            return None
        return PredictCost(needs, item_cost)

    def _auto_budget(self) -> bool:
        """Whether ``max_predict_ms`` asks for the cheapest ensemble within noise ("auto")."""
        return isinstance(self.max_predict_ms, str)  # "auto", the one string allowed

    def _fixed_budget(self) -> bool:
        """Whether ``max_predict_ms`` is a number of milliseconds."""
        return self.max_predict_ms is not None and not self._auto_budget()

    def _build_budget(self, spec, X, y, started: float, n: int) -> float | None:
        """The seconds the library build may take (:func:`budget.build_seconds`) on ``X``'s
        ``n`` rows."""
        if self.time_limit is None:
            return None
        labels = None if is_source(X) else y
        rows = resolve_cv(self.cv, n, labels, task=self._task).hillclimb_rows(n)
        classes = 1 if self._task == "regression" else n_classes(X, y)
        options = {"n_bags": self.n_bags, "n_iter": self.n_iter, "bag_fraction": self.bag_fraction}
        return budget.build_seconds(
            self.time_limit,
            spec.n_members,
            rows,
            classes,
            options,
            time.monotonic() - started,
        )

    def _library(self, X, y, groups, started: float, source, seed: int, rows) -> Library:
        """``source`` (from :meth:`_check_before_work`) itself where it is a Library, else
        the library of that spec built (or resumed) on ``X, y`` (``rows`` of them, counted
        under ``time_limit``)."""
        if isinstance(source, Library):
            return source
        spec = source
        return build_library(
            X,
            y,
            spec=spec,
            cv=self.cv,
            store=self.store,
            n_jobs=self.n_jobs,
            backend=self.backend,
            client=self.client,
            random_state=seed,
            groups=groups,
            time_limit=self._build_budget(spec, X, y, started, rows),
            run_time_limit=self.run_time_limit,
            verbose=self.verbose,
            grow=self._grow_spec(),
            max_memory=self.max_memory,
        )

    def _grow_spec(self):
        """``grow`` for the builder (classifiers only), selecting for this estimator's metric."""
        grow = self.grow if self._tune_selection else None
        if grow is None or grow is False or isinstance(grow, GrowSpec):
            return grow
        name = self.metric if isinstance(self.metric, str) else "mxe"
        if grow is True:
            return {"trials": None, "time": None, "metric": name}
        if isinstance(grow, dict):
            return {"metric": name, **grow}
        if isinstance(grow, int) and not isinstance(grow, bool) and grow > 0:
            return {"trials": grow, "metric": name}
        return grow  # the builder's error message names what is wrong

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


def _detector_set(lib: Library, random_state: int):
    """The library's detectors, combined by selection on data rows vs background points."""
    dets = lib.detectors
    if dets is None:
        return None
    fitted = list(dets.subset().runs.values())  # one member per detector run
    detector_set = DetectorSet.fit(fitted, np.asarray(dets.predictions), dets.y, random_state)
    # the fold siblings scored every row out of fold for the combination; risk(X) needs one
    return DetectorSet([f.first_sibling() for f in detector_set.fitted], detector_set.combination)


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


def _leaderboard(lib: Library, P: np.ndarray, weights: np.ndarray) -> pd.DataFrame:
    """Every member's description, its hillclimb score on each metric of the library's task,
    and its weight."""
    board = lib.members[["id", "family", "params", "calibration", "stage"]].copy()
    for name, scores in lib.member_scores(P).items():
        board[name] = scores
    board["weight"] = weights
    return board
