"""EnsembleSelectionClassifier and EnsembleSelectionRegressor: the whole method as scikit-learn
estimators. A shared base wires the library builder and a combination strategy together and
keeps only the members with non-zero weight, so the fitted model is compact; the classifier adds
class labels and an optional final Platt step, the regressor predicts real values."""

from __future__ import annotations

import copy
import os
import pickle
import threading
import time
import warnings
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from .calibration import ColumnCalibrator, cross_fit, cross_fit_groups
from .data import named
from .errors import ModelFileError
from .library import Library, build_library
from .library.cost import predict_cost
from .library.grow import GrowSpec
from .library.spec import load_spec
from .metrics import METRICS, REGRESSION_METRICS, greater_is_better, resolve_metric, score
from .risk.combined import DetectorSet
from .risk.reject import RejectRule, reject_mask
from .selection import PredictCost
from .strategies import STRATEGIES, cheapest_within_noise, choose_selection

__all__ = ["EnsembleSelectionClassifier", "EnsembleSelectionRegressor", "load_model"]

CALIBRATE = ("auto", True, False)
REFIT = (None, "full")
COMPRESSED_MAGIC = b"ENSEL-ZLIB-PICKLE\n"
"""First bytes of a model saved with ``compress`` > 0 (a zlib stream of the pickle follows)."""


class _Sink:
    """A file-like target that compresses what pickle writes into ``fh``."""

    def __init__(self, fh, packer) -> None:
        self.fh, self.packer = fh, packer

    def write(self, data) -> int:
        view = memoryview(data)  # pickle hands large arrays over as PickleBuffers
        self.fh.write(self.packer.compress(view))
        return view.nbytes


class _EnsembleSelectionBase(BaseEstimator):
    """What the classifier and the regressor share: building (or reusing) the library,
    combining its members by a strategy, keeping those with weight, the weighted sum of their
    test-time predictions, risk, the leaderboard, save and load. Subclasses set ``_task``."""

    _task = "classification"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # missing values are handled (see docs/library.md)
        return tags

    def _fit_members(self, X, y, groups):
        """Build the library and combine it: sets the fitted attributes both estimators share
        and returns ``(library, P, metric, weights, options)``."""
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None"
            )
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy={self.strategy!r}: use one of {sorted(STRATEGIES)}")
        started = time.monotonic()
        metric = resolve_metric(self.metric, task=self._task)
        options = {
            "n_iter": self.n_iter,
            "n_bags": self.n_bags,
            "bag_fraction": self.bag_fraction,
            "replacement": self.replacement,
            "sorted_init": self.sorted_init,
            "max_init": self.max_init,
            "prune_fraction": self.prune_fraction,
            "random_state": self.random_state,
        }
        speed = None
        if self.time_limit is not None:
            if (
                isinstance(self.time_limit, bool)
                or not isinstance(self.time_limit, int | float)
                or not self.time_limit > 0
            ):
                raise ValueError(
                    f"time_limit={self.time_limit!r}: give the fit's budget in seconds (> 0)"
                )
            speed = _Background(selection_speed, self.strategy, metric, options)
        lib = self._library(X, y, groups, started)
        if lib.task != self._task:
            raise ValueError(
                f"the library was built for {lib.task}, but {type(self).__name__} does "
                f"{self._task}; use a {self._task} spec (e.g. "
                f"{'regression' if self._task == 'regression' else 'default'})"
            )
        P = np.asarray(lib.predictions)
        self.budget_ = {}
        auto = self._auto_budget()
        deadline = None
        if speed is not None:
            speed = speed.result(default=SELECTION_SPEED)
            after = 0.5 + 0.02 * self.time_limit  # detectors' combination, members, report
            deadline = started + self.time_limit - after
            left = deadline - time.monotonic()
            # "auto" refits selection under smaller cost budgets: half the time is theirs
            left = left / 2 if auto and self.strategy == "es" else left
            options, self.budget_ = selection_within(options, left, speed, P.shape)
            runs = lib.failures.drop_duplicates("run")
            self.budget_.update(
                build_seconds=time.monotonic() - started,
                runs_ok=int(lib.members["run"].nunique()),
                runs_not_finished=runs["status"].value_counts().to_dict(),
            )
        self.selection_comparison_ = []
        if getattr(self, "tune_selection", False) and self.strategy == "es":
            options, self.selection_comparison_ = choose_selection(P, lib.y, metric, options)
        self.selection_options_ = dict(options)
        if self.refit not in REFIT:
            raise ValueError(f"refit={self.refit!r}: use one of {REFIT}")
        cost = self._predict_cost(lib)
        chosen = options
        if self.max_predict_ms is not None and not auto:
            if self.strategy != "es":
                raise ValueError(f"max_predict_ms works with strategy='es', not {self.strategy!r}")
            chosen = {**options, "max_cost": float(self.max_predict_ms), "cost": cost}
        weights = STRATEGIES[self.strategy](P, lib.y, metric, chosen)
        self.predict_budget_ = {"max_predict_ms": None if auto else self.max_predict_ms}
        if auto and self.strategy == "es" and cost is not None:
            weights, ms, tried = cheapest_within_noise(
                P, lib.y, metric, options, cost, weights, deadline=deadline
            )
            self.predict_budget_ = {"max_predict_ms": ms, "tried": tried}
        self.leaderboard_ = _leaderboard(lib, P, weights)
        keep = np.flatnonzero(weights > 0)
        self.members_ = lib.members.iloc[keep].assign(weight=weights[keep]).reset_index(drop=True)
        self.weights_ = weights[keep]
        self.fitted_members_ = lib.subset(self.members_["id"])
        self.predict_cost_ms_ = np.nan if cost is None else cost.of(keep)
        if self.refit == "full":
            self.fitted_members_ = lib.refit_full(
                self.fitted_members_,
                X,
                y,
                groups,
                random_state=self.random_state,
                n_jobs=self.n_jobs,
            )
        self.columns_ = list(lib.columns)  # the columns the members use
        self.input_columns_ = list(lib.input_columns)  # the columns given to fit
        self.dropped_columns_ = dict(lib.dropped)  # left out: all missing or constant
        self.categories_ = dict(lib.categories)
        self.n_features_in_ = len(self.input_columns_)
        if isinstance(X, pd.DataFrame):
            self.feature_names_in_ = np.asarray(self.input_columns_, dtype=object)
        self.detectors_ = _detector_set(lib, self.random_state)
        self.library_path_ = None if lib.temporary else str(Path(lib.store.path).resolve())
        self.fit_seconds_ = time.monotonic() - started
        self.ensel_version_ = _version()
        return lib, P, metric, weights, options

    def _predict_cost(self, lib: Library) -> PredictCost | None:
        """What predicting with each set of members costs (None where the library's builder
        recorded no timings and no budget asks for them)."""
        siblings = 1 if self.refit == "full" else int(lib.store.header.get("cv") or 1)
        try:
            needs, item_cost, _ = predict_cost(lib.members, lib.store.records, siblings)
        except ValueError:
            if self.max_predict_ms is not None and not self._auto_budget():
                raise
            return None
        return PredictCost(needs, item_cost)

    def _auto_budget(self) -> bool:
        """Whether ``max_predict_ms`` asks for the cheapest ensemble within noise ("auto")."""
        if isinstance(self.max_predict_ms, str):
            if self.max_predict_ms != "auto":
                raise ValueError(
                    f"max_predict_ms={self.max_predict_ms!r}: give milliseconds per 1,000 rows, "
                    "'auto' or None"
                )
            return True
        return False

    def _build_budget(self, spec, X, y, started: float) -> float | None:
        """The seconds the library build may take: ``time_limit`` less what ``fit`` has spent
        and the reserve for what follows the build (``fit_reserve``)."""
        if self.time_limit is None:
            return None
        n_rows = len(X) if self.cv is not None else max(1, int(0.2 * len(X)))
        n_classes = 1 if self._task == "regression" else int(pd.Series(np.ravel(y)).nunique())
        options = {"n_bags": self.n_bags, "n_iter": self.n_iter, "bag_fraction": self.bag_fraction}
        units = _selection_units(spec.n_members, n_rows, n_classes, options)
        selection = selection_seconds(units, options, SELECTION_SPEED)
        reserve = fit_reserve(self.time_limit, selection)
        return max(self.time_limit - reserve - (time.monotonic() - started), 1.0)

    def _library(self, X, y, groups, started: float | None = None) -> Library:
        if isinstance(self.library, Library):
            return self.library
        if (
            isinstance(self.library, str | os.PathLike)
            and (Path(self.library) / "store.json").is_file()
        ):
            return Library.open(self.library)
        spec = load_spec(self.library)
        if spec.task != self._task:  # say so before any training
            raise ValueError(
                f"library spec {spec.name!r} is for {spec.task}, but {type(self).__name__} "
                f"does {self._task}; use a {self._task} spec (e.g. "
                f"{'regression' if self._task == 'regression' else 'default'})"
            )
        return build_library(
            X,
            y,
            spec=spec,
            cv=self.cv,
            store=self.store,
            n_jobs=self.n_jobs,
            backend=self.backend,
            client=self.client,
            random_state=self.random_state,
            groups=groups,
            time_limit=self._build_budget(
                spec, X, y, time.monotonic() if started is None else started
            ),
            run_time_limit=getattr(self, "run_time_limit", None),
            verbose=self.verbose,
            grow=self._grow_spec(),
        )

    def _grow_spec(self):
        """``grow`` for the builder (classifiers only), selecting for this estimator's metric."""
        grow = getattr(self, "grow", None)
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
        """``sum_m w_m * prediction_m(X)`` over the kept members, in the library's layout."""
        check_is_fitted(self, "weights_")
        members = self.fitted_members_.predict(self._named(X), n_jobs=self.n_jobs)
        return np.tensordot(self.weights_, members, axes=1)

    def risk(self, X) -> pd.DataFrame:
        """Extrapolation risk of each row: one column per detector of the library spec (its own
        risk in [0, 1]) and ``combined``, the calibrated probability that the row comes from the
        uniform background rather than the training data (see :mod:`ensel.risk.combined`)."""
        check_is_fitted(self, "weights_")
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
        columns = getattr(self, "input_columns_", self.columns_)  # older saved models
        return named(X, columns, who=type(self).__name__)

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
        path = Path(path)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            with open(tmp, "wb") as fh:
                if compress:
                    fh.write(COMPRESSED_MAGIC)
                    packer = zlib.compressobj(int(compress))
                    sink = _Sink(fh, packer)
                    pickle.dump(model, sink, protocol=pickle.HIGHEST_PROTOCOL)
                    fh.write(packer.flush())
                else:
                    pickle.dump(model, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)

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
        truncated or corrupt file raises :class:`ensel.errors.ModelFileError` (a ValueError)
        with one line that says so."""
        with open(path, "rb") as fh:
            try:
                if fh.read(len(COMPRESSED_MAGIC)) == COMPRESSED_MAGIC:
                    model = pickle.loads(zlib.decompress(fh.read()))
                else:
                    fh.seek(0)
                    model = pickle.load(fh)
            except ImportError as exc:
                raise ModelFileError(
                    f"{path}: the model needs a module this Python lacks ({exc}); install it "
                    "(e.g. the same ensel extras as where the model was saved)"
                ) from None
            except Exception as exc:  # truncated, corrupt, or not a pickle at all
                reason = " ".join(str(exc).split())[:120]
                raise ModelFileError(
                    f"{path} is not a readable ensel model: the file is truncated or corrupt "
                    f"({type(exc).__name__}: {reason}); save the model again or use the "
                    "original file"
                ) from None
        if not isinstance(model, cls):
            raise TypeError(f"{path} holds a {type(model).__name__}, not a {cls.__name__}")
        _check_version(model, path)
        return model


class EnsembleSelectionClassifier(ClassifierMixin, _EnsembleSelectionBase):
    """Ensemble selection from a library of models (Caruana & Niculescu-Mizil).

    Parameters
    ----------
    library : a built-in spec name (``"tiny"``, ``"default"``, ``"caruana2006"``), a spec path
        or dict, a built :class:`~ensel.library.Library`, or the path of a prediction store.
    metric : the metric selection optimises (one of ``ensel.metrics.METRICS`` or a callable).
        Default ``"mxe"``: §4.3.5 finds RMS and MXE competitive proxies for every target metric;
        in the first (single-split, noisy) run of our benchmark (docs/benchmarks.md, five real
        datasets) selecting for MXE had the best mean normalised score over all eight targets;
        it also rewards calibrated probabilities.
    cv : folds of embedded cross-validation (§4.3.4); None holds out a hillclimb split.
    strategy : ``"es"`` (ensemble selection), ``"modsel"`` (the best member) or ``"bayesavg"``
        (Bayesian model averaging), as compared in §4.3.2.
    calibrate : ``"auto"`` Platt-scales the ensemble when ``metric`` does not itself reward
        calibration (a metric whose ``Metric.kind`` is not ``"probability"``, i.e. anything
        but rms and mxe); True always, False never. The calibrator is
        cross-fitted on the hillclimb predictions to report log loss with and without it
        (``calibration_report_``) and then fitted on all of them.

    Attributes: ``members_`` (members with weight), ``weights_``, ``classes_``,
    ``leaderboard_``, ``comparison_`` (the ensemble's out-of-fold hillclimb score on every
    metric, cross-fitted where calibrated, against the best member's), ``hillclimb_score_``,
    ``calibrator_``, ``calibration_report_``, ``fitted_members_`` (the members with weight and
    their fitted runs, :class:`~ensel.library.FittedMembers`), ``library_path_`` (the store the
    library lives in, for :mod:`ensel.report`; None when it was temporary).
    n_iter, n_bags, bag_fraction, replacement, sorted_init, max_init : selection options (§4.2);
        the defaults are the dissertation's (20 bags of half the library, sorted
        initialisation, selection with replacement).
    prune_fraction : select only from the best ``prune_fraction`` of the library by its
        members' hillclimb scores on ``metric`` (§4.3.6, which finds the top 10-20% a good rule
        of thumb on its ~2000-model libraries). Default 1.0, the unpruned library of Tables
        4.1-4.2, set from a measurement of this estimator (docs/benchmarks.md, "AutoML
        comparison": 8 datasets x 3 seeds, 60 s budgets): ``prune_fraction=0.2`` was better in
        test AUC on only 5 of 24 pairs (-0.0013 +- 0.0005), in log loss on 7 (-0.0020 +-
        0.0007). Selection alone ("Library pruning" there) leans the paper's way on the
        1,874-member caruana2006 library (keeping 10% with 20 bags: 0.757 against 0.738
        unpruned, one small dataset) and is level on the 439-member default library with
        bagging (0.887 against 0.880, better on 2 of 5 datasets).
    tune_selection : choose the selection options per fit by a nested out-of-fold comparison on
        the hillclimb rows (:func:`ensel.strategies.choose_selection`: the options as given, the
        library pruned to its best half or fifth, no bagging, no sorted initialisation); the
        comparison is kept in ``selection_comparison_`` and the chosen options in
        ``selection_options_``. Costs 15 extra selections.
    grow : after building the library, propose new members where the ensemble gains (optuna;
        :mod:`ensel.library.grow`): a number of trials, or a dict such as ``{"trials": 30,
        "time": 120}``, or True (with ``time_limit``: grow in whatever time the build leaves);
        under ``time_limit`` growth never runs past the build's budget. Growth selects for
        ``metric`` (for log loss when ``metric`` is a callable). None: no growth.
    refit : None keeps each member's K fold siblings (cv=K) for prediction; ``"full"`` trains
        each run of the ensemble once more on all training rows after selection and predicts
        with that one model (AutoGluon's refit_full), its calibrators refitted on the
        out-of-fold predictions selection judged it by (docs/estimator.md has the measured
        speed and quality).
    max_predict_ms : a prediction-time budget, milliseconds per 1,000 rows as the library's
        cost model counts them (constants calibrated once, so the same members cost the same on
        any machine; None: none). Selection (``strategy="es"``) then only adds
        members that keep the ensemble within it, counting shared work once (a member of a
        run already in the ensemble costs only its extra stage; a view is transformed once
        per fold); the costs are those the builder counted (``Library.members["predict_ms"]``),
        per sibling times K, or once with ``refit="full"``. ``predict_cost_ms_`` is the
        estimate for the chosen ensemble. ``"auto"`` (the default): the cheapest ensemble
        whose hillclimb score is within half a standard error of the unconstrained one's
        (budgets of 1/2 to 1/64 of its cost, bisected; ``predict_budget_`` shows what was
        tried), so predictions get faster only where the hillclimb rows cannot tell the
        difference (docs/estimator.md has the measured speed and quality).
    store : directory that keeps the library (resumable); None uses a temporary one.
    time_limit : seconds for the whole ``fit`` (None: no limit), as AutoML tools take it. The
        library is built in an anytime order within the budget less a reserve for selection,
        the detectors' combination and loading the chosen members (see
        :func:`ensel.library.build_library`); selection is then fitted into the time left
        (``budget_`` says what it changed); ``fit`` returns within about 10% of the budget.
    run_time_limit : seconds per training run (all folds); None takes the spec's cap.
    n_jobs : worker processes for the build; -1 (the default) uses every core.
    backend, client, random_state, verbose : as in :func:`ensel.library.build_library`;
        ``backend="dask"`` builds on a dask cluster (``client``: a scheduler address keeps the
        estimator clonable, or a ``distributed.Client``; see docs/distributed.md).
    """

    def __init__(
        self,
        library="default",
        metric="mxe",
        cv: int | None = 5,
        strategy: str = "es",
        calibrate="auto",
        n_iter: int = 100,
        n_bags: int = 20,
        bag_fraction: float = 0.5,
        replacement: bool = True,
        sorted_init: bool = True,
        max_init: int = 25,
        prune_fraction: float = 1.0,
        refit: str | None = None,
        max_predict_ms: float | str | None = "auto",
        tune_selection: bool = False,
        grow=None,
        store=None,
        n_jobs: int = -1,
        backend: str = "joblib",
        client=None,
        time_limit: float | None = None,
        run_time_limit: float | None = None,
        random_state: int = 0,
        verbose: int = 0,
    ) -> None:
        self.library = library
        self.metric = metric
        self.cv = cv
        self.strategy = strategy
        self.calibrate = calibrate
        self.n_iter = n_iter
        self.n_bags = n_bags
        self.bag_fraction = bag_fraction
        self.replacement = replacement
        self.sorted_init = sorted_init
        self.max_init = max_init
        self.prune_fraction = prune_fraction
        self.refit = refit
        self.max_predict_ms = max_predict_ms
        self.tune_selection = tune_selection
        self.grow = grow
        self.store = store
        self.n_jobs = n_jobs
        self.backend = backend
        self.client = client
        self.time_limit = time_limit
        self.run_time_limit = run_time_limit
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ fitting

    def fit(self, X, y, groups=None) -> EnsembleSelectionClassifier:
        """Build (or reuse) the library, combine its members, keep those with weight."""
        if self.calibrate not in CALIBRATE:
            raise ValueError(f"calibrate={self.calibrate!r}: use one of {CALIBRATE}")
        lib, P, metric, weights, _ = self._fit_members(X, y, groups)
        self.classes_ = lib.classes
        hill = np.tensordot(weights, P, axes=1)
        self.calibrator_, self.calibration_report_, hill = self._calibrate(hill, lib.y, metric)
        self.hillclimb_score_ = score(metric, lib.y, hill)
        self.comparison_ = {
            name: {
                "ensemble": score(name, lib.y, hill),
                "best member": _best(self.leaderboard_[name], name),
            }
            for name in METRICS
        }
        return self

    def _calibrate(self, hill: np.ndarray, y: np.ndarray, metric):
        """Platt-scale the ensemble where ``calibrate`` asks for it; log loss of the hillclimb
        predictions before and after, cross-fitted so the 'after' is honest."""
        wanted = self.calibrate is True or (
            self.calibrate == "auto" and metric.kind != "probability"
        )
        if not wanted:
            return None, {}, _full(hill, self.classes_.size)
        proba = _full(hill, self.classes_.size)
        groups = cross_fit_groups(y.size, self.random_state)
        crossed, _ = cross_fit(lambda: ColumnCalibrator("platt"), proba, y, groups)
        report = {
            "log_loss_before": score("mxe", y, proba),
            "log_loss_after": score("mxe", y, crossed),
        }
        return ColumnCalibrator("platt").fit(proba, y), report, crossed

    # ------------------------------------------------------------------ predicting

    def predict_proba(self, X) -> np.ndarray:
        """``(n, n_classes)`` probabilities of the ensemble."""
        check_is_fitted(self, "weights_")
        return self._finish(self._weighted_sum(X))

    def combine(self, member_predictions: np.ndarray) -> np.ndarray:
        """The ensemble's ``(n, n_classes)`` probabilities from the predictions of *every*
        library member (``Library.predict(X)``, in library order): for comparing many
        ensembles of one library without predicting its members again."""
        check_is_fitted(self, "weights_")
        weights = self.leaderboard_["weight"].to_numpy()
        if member_predictions.shape[0] != weights.size:
            raise ValueError(
                f"member_predictions has {member_predictions.shape[0]} members; the library "
                f"has {weights.size}"
            )
        return self._finish(np.tensordot(weights, member_predictions, axes=1))

    def predict(self, X, reject=None) -> np.ndarray:
        """The most probable class of each row, as the labels given to ``fit``.

        ``reject`` adds the reject option of Gu & Easwaran's Eq. 10-11: a float ``r`` refuses rows
        whose combined extrapolation risk exceeds ``r``; a pair ``(p, r)`` also refuses rows whose
        top class probability is below ``p``; a :class:`ensel.risk.reject.RejectRule` (e.g. from
        ``fit_reject_rule`` on validation rows) applies its thresholds. Refused rows hold None
        (the array is then of dtype object), so the caller can hand them to a fallback."""
        proba = self.predict_proba(X)
        labels = self.classes_[np.argmax(proba, axis=1)]
        if reject is None:
            return labels
        return _refused(labels, self.refused_rows(X, reject, proba))

    def _finish(self, proba: np.ndarray) -> np.ndarray:
        proba = _full(proba, self.classes_.size)
        return proba if self.calibrator_ is None else self.calibrator_.predict(proba)


class EnsembleSelectionRegressor(RegressorMixin, _EnsembleSelectionBase):
    """Ensemble selection for numeric targets: the same library builder, store, selection
    engine and detectors as :class:`EnsembleSelectionClassifier`, with regressors (a spec with
    ``task: regression``; the built-in ``"regression"`` by default) and a regression metric.

    Parameters
    ----------
    library : ``"regression"`` (the default regression spec), ``"tiny_regression"``, a spec
        path or dict with ``task: regression``, a built :class:`~ensel.library.Library`, or the
        path of a regression prediction store.
    metric : what selection optimises: ``"rmse"`` (default), ``"mae"``, ``"r2"``, a
        :class:`~ensel.metrics.Metric` with ``task="regression"``, or a callable
        ``func(y_true, y_pred) -> float`` (maximised unless it has ``greater_is_better=False``;
        see :func:`ensel.metrics.make_metric`).
    strategy : ``"es"`` (ensemble selection), ``"modsel"`` (the best member) or ``"bayesavg"``
        (Bayesian model averaging with a Gaussian likelihood of each member's residuals).
    cv, n_iter, n_bags, bag_fraction, replacement, sorted_init, max_init, prune_fraction,
    store, n_jobs, backend, client, time_limit, random_state, verbose : as for
        :class:`EnsembleSelectionClassifier`. Folds are plain (or grouped with ``groups``) K
        folds: there are no classes to stratify by.

    Attributes: ``members_``, ``weights_``, ``leaderboard_`` (every member's hillclimb RMSE, MAE
    and R² and its weight), ``comparison_`` (the ensemble's out-of-fold hillclimb score on each
    regression metric against the best member's), ``hillclimb_score_``,
    ``hillclimb_predictions_`` and ``hillclimb_targets_`` (for residual plots),
    ``detectors_``.
    """

    _task = "regression"

    def __init__(
        self,
        library="regression",
        metric="rmse",
        cv: int | None = 5,
        strategy: str = "es",
        n_iter: int = 100,
        n_bags: int = 20,
        bag_fraction: float = 0.5,
        replacement: bool = True,
        sorted_init: bool = True,
        max_init: int = 25,
        prune_fraction: float = 1.0,
        refit: str | None = None,
        max_predict_ms: float | str | None = "auto",
        store=None,
        n_jobs: int = -1,
        backend: str = "joblib",
        client=None,
        time_limit: float | None = None,
        run_time_limit: float | None = None,
        random_state: int = 0,
        verbose: int = 0,
    ) -> None:
        self.library = library
        self.metric = metric
        self.cv = cv
        self.strategy = strategy
        self.n_iter = n_iter
        self.n_bags = n_bags
        self.bag_fraction = bag_fraction
        self.replacement = replacement
        self.sorted_init = sorted_init
        self.max_init = max_init
        self.prune_fraction = prune_fraction
        self.refit = refit
        self.max_predict_ms = max_predict_ms
        self.store = store
        self.n_jobs = n_jobs
        self.backend = backend
        self.client = client
        self.time_limit = time_limit
        self.run_time_limit = run_time_limit
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X, y, groups=None) -> EnsembleSelectionRegressor:
        """Build (or reuse) the regression library, combine its members, keep those with
        weight. ``groups`` keeps the rows of one group (one person in panel data) in one
        fold."""
        lib, P, metric, weights, _ = self._fit_members(X, y, groups)
        hill = np.tensordot(weights, P.astype(np.float64), axes=1)
        self.hillclimb_predictions_ = hill
        self.hillclimb_targets_ = np.asarray(lib.y, dtype=np.float64)
        self.hillclimb_score_ = score(metric, lib.y, hill)
        self.comparison_ = {
            name: {
                "ensemble": score(name, lib.y, hill),
                "best member": _best(self.leaderboard_[name], name),
            }
            for name in REGRESSION_METRICS
        }
        return self

    def predict(self, X, reject=None) -> np.ndarray:
        """``(n,)`` predicted values: the weighted average of the kept members' predictions.

        ``reject`` adds the reject option of Gu & Easwaran's Eq. 10: a float ``r`` (or a
        :class:`ensel.risk.reject.RejectRule` without ``min_confidence``) refuses rows whose
        combined extrapolation risk exceeds ``r`` or is unknown; refused rows hold None (the
        array is then of dtype object)."""
        values = self._weighted_sum(X)
        if reject is None:
            return values
        if isinstance(reject, tuple | list):
            raise ValueError(
                f"reject={reject!r}: a regressor has no class probabilities; give the largest "
                "combined risk to accept (a float in [0, 1])"
            )
        return _refused(values, self.refused_rows(X, reject))

    def combine(self, member_predictions: np.ndarray) -> np.ndarray:
        """The ensemble's ``(n,)`` prediction from the predictions of *every* library member
        (``Library.predict(X)``, ``(M, n)`` in library order)."""
        check_is_fitted(self, "weights_")
        weights = self.leaderboard_["weight"].to_numpy()
        if member_predictions.shape[0] != weights.size:
            raise ValueError(
                f"member_predictions has {member_predictions.shape[0]} members; the library "
                f"has {weights.size}"
            )
        return np.tensordot(weights, member_predictions, axes=1)


RESERVE_SHARE = 0.25
"""At most this share of a fit's time budget is kept back from the library build."""
SELECTION_SHARE = 0.15
"""At most this share of a fit's time budget is reserved for selection before the build (a
budget that ends early builds few members, and ``selection_within`` fits selection into the
time left after the build)."""
SELECTION_SPEED = 5e-8
"""Seconds per unit of selection work assumed before it is measured (``selection_speed``
measured 3.7e-8 to 4.6e-8 on a shared 2-core machine under load)."""
STEP_SECONDS = 3e-4
"""Seconds of overhead per selection step (one bag, one step), whatever the library's size."""


def _selection_units(n_members: int, n_rows: int, n_classes: int, options: dict) -> float:
    """The work of ensemble selection: members x rows x classes x bags x steps x bag share."""
    share = options["bag_fraction"] if options["n_bags"] > 1 else 1.0
    columns = 1 if n_classes <= 2 else n_classes
    return n_members * n_rows * columns * max(options["n_bags"], 1) * options["n_iter"] * share


class _Background:
    """``fn(*args)`` run in a thread; ``result`` waits for it (``default`` if it raised)."""

    def __init__(self, fn, *args) -> None:
        self._out: list = []
        self._thread = threading.Thread(target=self._run, args=(fn, *args), daemon=True)
        self._thread.start()

    def _run(self, fn, *args) -> None:
        try:
            self._out.append(fn(*args))
        except Exception:
            pass

    def result(self, default):
        self._thread.join()
        return self._out[0] if self._out else default


def selection_seconds(units: float, options: dict, speed: float) -> float:
    """Estimated seconds of a selection of ``units`` work (``_selection_units``)."""
    return speed * units + STEP_SECONDS * max(options["n_bags"], 1) * options["n_iter"]


def selection_speed(strategy: str, metric, options: dict) -> float:
    """Seconds per unit of selection work (``_selection_units``) on this machine now, from a
    small selection after a tiny one that compiles or loads the selection kernels (paid once
    per process anyway). ``fit`` runs it in a thread beside the library build."""
    rng = np.random.default_rng(0)
    P = (0.01 + 0.98 * rng.random((32, 2000))).astype(np.float32)
    y = rng.integers(0, 2, 2000)
    small = {**options, "n_bags": 2, "n_iter": 10, "prune_fraction": 1.0}
    STRATEGIES[strategy](P[:4, :100], y[:100], metric, {**small, "n_iter": 2})  # warm up
    start = time.monotonic()
    STRATEGIES[strategy](P, y, metric, small)
    return (time.monotonic() - start) / _selection_units(32, 2000, 2, small)


def fit_reserve(time_limit: float, selection: float) -> float:
    """Seconds of a fit's ``time_limit`` kept back from the library build for what follows:
    selection (``selection_seconds``, estimated for the whole spec), then the detectors'
    combination, loading the chosen members and the report (1 s + 5% of the budget); at most
    ``RESERVE_SHARE`` of the budget (selection is then fitted into the time left, see
    ``selection_within``)."""
    selection = min(selection, SELECTION_SHARE * time_limit)
    return min(RESERVE_SHARE * time_limit, 1.0 + 0.05 * time_limit + selection)


def selection_within(
    options: dict, seconds: float, speed: float, shape: tuple[int, ...]
) -> tuple[dict, dict]:
    """Selection ``options`` whose work fits in ``seconds`` at ``speed`` on predictions of
    ``shape``, and what was changed: first the library is pruned to its best members by
    hillclimb score (``prune_fraction``, §4.3.6: the top 10-20% lose little), down to 8
    members; then fewer bags, then fewer steps (at least 10)."""
    n_members, n_rows = shape[0], shape[1]
    n_classes = shape[2] if len(shape) == 3 else 2
    out = dict(options)

    def cost(members: int) -> float:
        return selection_seconds(_selection_units(members, n_rows, n_classes, out), out, speed)

    report = {"selection_seconds_estimated": cost(n_members), "selection_seconds_allowed": seconds}
    if cost(n_members) <= seconds:
        return out, report
    members = n_members
    while members > min(n_members, 8) and cost(members) > seconds:
        members = max(min(n_members, 8), int(members * 0.8))
    out["prune_fraction"] = min(options["prune_fraction"], members / n_members)
    while cost(members) > seconds and out["n_bags"] > 1:
        out["n_bags"] = max(1, out["n_bags"] // 2)
    while cost(members) > seconds and out["n_iter"] > 10:
        out["n_iter"] = max(10, out["n_iter"] // 2)
    report.update(
        {k: out[k] for k in ("prune_fraction", "n_bags", "n_iter") if out[k] != options[k]}
    )
    return out, report


def _version() -> str:
    """The installed ensel version (stamped on fitted models)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ensel")
    except PackageNotFoundError:
        return "unknown"


def _check_version(model, path) -> None:
    """Warn when ``model`` was saved by another ensel version than this one."""
    saved = getattr(model, "ensel_version_", "before 0.1.0")
    if saved != _version():
        warnings.warn(
            f"{path} was saved by ensel {saved} and is loaded by ensel {_version()}: a "
            "saved model is a pickle and is only guaranteed to load and predict the same "
            "with the ensel (and scikit-learn, xgboost, lightgbm) versions that saved it; "
            "refit it if predictions fail",
            UserWarning,
            stacklevel=3,
        )


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


def load_model(path: str | os.PathLike) -> EnsembleSelectionClassifier | EnsembleSelectionRegressor:
    """Read a classifier or a regressor written by ``save`` (this unpickles: load only files
    you trust)."""
    return _EnsembleSelectionBase.load(path)
