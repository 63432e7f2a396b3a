"""EnsembleSelectionClassifier: ensemble selection for class labels, with an optional final
Platt step on the ensemble."""

from __future__ import annotations

from numbers import Integral
from typing import ClassVar

import numpy as np
from sklearn.base import ClassifierMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..calibration import ColumnCalibrator, cross_fit, cross_fit_groups
from ..library.data.sources import is_dask_frame
from ..library.planning.grow import GrowSpec
from ..metrics import METRICS, score
from ..selection import weighted_average
from ._base import EnsembleSelectionBase, _full, _refused
from .dask_predict import predict_partitions

__all__ = ["EnsembleSelectionClassifier"]


class EnsembleSelectionClassifier(ClassifierMixin, EnsembleSelectionBase):
    """Ensemble selection from a library of models (Caruana & Niculescu-Mizil).

    Every parameter is checked when ``fit`` starts, before any model is trained (an invalid
    value raises a ValueError naming the parameter and what it takes).

    Parameters
    ----------
    library : str, path, dict, LibrarySpec or Library, default="default"
        A built-in spec name (``"tiny"``, ``"default"``, ``"default_spare"``, ``"modern"``,
        ``"caruana2006"``), a spec path or dict, a built :class:`~ensel.library.Library`, or
        the path of a prediction store. The default's spare-time tier is built under a
        ``time_limit`` on 10,000 rows or more (its ``spare_min_rows``); ``"default_spare"``
        builds it on any table.
    metric : str, Metric or callable, default="mxe"
        The metric selection optimises (one of ``ensel.metrics.METRICS`` or a callable).
        §4.3.5 finds RMS and MXE competitive proxies for every target metric; MXE also
        rewards calibrated probabilities (docs/decisions.md compares the targets).
    cv : int >= 2, "auto" or None, default="auto"
        ``"auto"``: 5 folds of embedded cross-validation (§4.3.4) at every size, so that
        every member is bagged and selection weighs every row out of fold (see
        docs/library.md, "cv='auto'"); an integer K: K folds; None holds out a hillclimb split
        of a fifth of the rows.
    strategy : {"es", "modsel", "bayesavg"}, default="es"
        Ensemble selection, the best member, or Bayesian model averaging, as compared in
        §4.3.2.
    calibrate : "auto" or bool, default="auto"
        ``"auto"`` Platt-scales the ensemble when ``metric`` does not itself reward
        calibration (a metric whose ``Metric.kind`` is not ``"probability"``, i.e. anything
        but rms and mxe); True always, False never. The calibrator is cross-fitted on the
        hillclimb predictions to report log loss with and without it
        (``calibration_report_``) and then fitted on all of them.
    n_iter : int >= 1, default=100
        Greedy steps of selection after the initialisation (§4.2), per bag.
    n_bags : int >= 1, default=20
        Selections over random subsets of the library whose weights are averaged (§4.2.3).
    bag_fraction : float in (0, 1], default=0.5
        The share of the (pruned) library each bag selects from.
    replacement : bool, default=True
        Whether a member may be added more than once (§4.2.1).
    sorted_init : bool, default=True
        Start from the best members, at most ``max_init`` of them (§4.2.2).
    max_init : int >= 1, default=25
        The most members of the sorted initialisation.
    prune_fraction : float in (0, 1], default=1.0
        Select only from the best ``prune_fraction`` of the library by its members' hillclimb
        scores on ``metric`` (§4.3.6, which finds the top 10-20% a good rule of thumb on its
        ~2000-model libraries). 1.0, the unpruned library of Tables 4.1-4.2, is the default:
        with bagged selection over the default library, pruning to a fifth lowers test AUC
        and log loss more often than it raises them (docs/decisions.md).
    refit : {"full"} or None, default=None
        None keeps each member's K fold siblings (cv=K) for prediction; ``"full"`` trains
        each run of the ensemble once more on all training rows after selection and predicts
        with that one model (AutoGluon's refit_full), its calibrators refitted on the
        out-of-fold predictions selection judged it by (docs/estimator.md has the measured
        speed and quality).
    max_predict_ms : float > 0, "auto" or None, default="auto"
        A prediction-time budget in milliseconds per 1,000 rows as the library's cost model
        counts them (constants calibrated once, so the same members cost the same on any
        machine; None: none). Selection
        (``strategy="es"`` only) then adds only members that keep the ensemble within it,
        counting shared work once (a member of a run already in the ensemble costs only its
        extra stage; a view is transformed once per fold); costs come from
        :mod:`ensel.library.planning.cost`, per sibling times K, or once with ``refit="full"``.
        ``"auto"``: the cheapest ensemble whose hillclimb score is within half a standard
        error of the unconstrained one's, or within 1e-4 of it (budgets of 1/2 to 1/64 of its
        cost, bisected), less the runs that cost most per unit of weight while the score stays
        within that bar (:func:`ensel.strategies.drop_costly_runs`; ``predict_budget_`` shows
        the budgets tried and the runs dropped), so predictions get faster only where the
        hillclimb rows cannot tell the difference; the other strategies ignore it.
    tune_selection : bool, default=False
        Choose the selection options per fit by a nested out-of-fold comparison on the
        hillclimb rows (:func:`ensel.strategies.choose_selection`: the options as given, the
        library pruned to its best half or fifth, no bagging, no sorted initialisation);
        costs 15 extra selections.
    grow : int >= 0, dict, bool, GrowSpec or None, default=None
        After building the library, propose new members where the ensemble gains (optuna;
        :mod:`ensel.library.planning.grow`): a number of trials, or a dict such as ``{"trials": 30,
        "time": 120}``, or True (with ``time_limit``: grow in whatever time the build
        leaves); under ``time_limit`` growth never runs past the build's budget. Growth
        selects for ``metric`` (for log loss when ``metric`` is a callable). None: no growth.
    store : path or None, default=None
        Directory that keeps the library (resumable); None uses a temporary one.
    n_jobs : int or None, default=-1
        As joblib reads it: None is 1, -1 every CPU this process may use (its CPU affinity
        and a container's CPU quota, not the machine's core count), -k all but k-1. It sizes
        the worker processes of the library build and of ``refit="full"``, and the threads
        of ``predict``, ``predict_proba`` and ``risk``.
    backend : {"local", "dask"}, default="local"
        Where the library is built: worker processes on this machine (ensel's own pool),
        or a dask cluster (see docs/distributed.md).
    client : str, distributed.Client or None, default=None
        With ``backend="dask"``: a scheduler address (keeps the estimator clonable), a
        ``distributed.Client``, or None for the current client.
    time_limit : float > 0 or None, default=None
        Seconds for the whole ``fit`` (None: no limit), as AutoML tools take it. The library
        is built in an anytime order within the budget less a reserve for selection, the
        detectors' combination and loading the chosen members (see
        :func:`ensel.library.build_library`); selection is then fitted into the time left
        (``budget_`` says what it changed); ``fit`` returns within about 10% of the budget.
        Timed budgets make the fit depend on the machine's speed.
    run_time_limit : float > 0 or None, default=None
        Seconds per training run (all folds); None takes the spec's cap.
    max_memory : int, str or None, default=None
        A ceiling on the memory of the fit's processes (this one and the build's workers),
        kept like ``time_limit``: bytes or a size such as ``"8GB"``; None allows 80% of what
        this process may use (its cgroup limit, else the physical memory). A one-line error
        before any training when the data alone cannot fit; runs start only when their
        estimated peak fits beside those in flight, a run that cannot fit is skipped and one
        that pushes the measured memory over the ceiling is stopped (``Library.failures``,
        status ``memory``); selection's copies of the prediction matrix stay under it too
        (docs/library.md, "Memory").
    random_state : int, RandomState or None, default=0
        The fit's seed: folds, every run's seed, bags, calibration groups, detectors. An int
        gives the same fit every time; a ``RandomState`` gives a seed drawn from its state
        (it advances: the next fit differs), None one drawn from numpy's global generator.
    verbose : int, default=0
        0 is silent; 1 or more shows a progress bar of the library build on a terminal.
    exportable : bool, default=False
        Select only among members that ``to_onnx`` can express (family, view, calibration;
        see docs/deploy.md), priced by their single-row cost in the exported graph:
        ``max_predict_ms`` is then graph milliseconds per row, "auto" held to 1 ms. What that
        cost on the hillclimb rows is in ``budget_.exportable`` (``score_all``,
        ``score_exportable``, ``score_within_budget``, ``graph_ms``, ``members`` of ``of``).
    levels : {1, 2}, default=1
        1: select among the library's members. 2 (needs K folds: ``cv=K``, or ``"auto"``
        where it chooses K folds): also build a second level, a few strong learners
        (LightGBM, CatBoost where installed, a random forest) on the features plus the
        out-of-fold predictions of the strongest level-one runs, over the same folds, and
        select among the members of both levels together; it takes a fifth of
        ``time_limit`` (see :mod:`ensel.estimator.levels`; ``budget_.level_two`` says what
        it built and what weight it got). Not with ``refit="full"``, ``exportable=True``,
        a number for ``max_predict_ms``, or a library given built.

    Attributes
    ----------
    classes_ : ndarray
        The class labels given to ``fit``, in the order of ``predict_proba``'s columns.
    members_ : DataFrame
        The library members with weight (id, run, family, params, stage, ...) and ``weight``.
    weights_ : ndarray
        The weight of each of ``members_``, summing to one.
    fitted_members_ : FittedMembers
        The members with weight and their fitted runs (:class:`~ensel.library.FittedMembers`).
    leaderboard_ : DataFrame
        Every library member, its hillclimb score on every metric and its weight.
    comparison_ : dict
        The ensemble's out-of-fold hillclimb score on every metric, cross-fitted where
        calibrated, against the best member's.
    hillclimb_score_ : float
        The ensemble's score on ``metric`` on the hillclimb rows.
    calibrator_ : ColumnCalibrator or None
        The final Platt step (None where ``calibrate`` left it out).
    calibration_report_ : dict
        Cross-fitted log loss of the hillclimb predictions before and after ``calibrator_``.
    selection_options_ : dict
        The selection options used (as given, tuned, or cut to fit ``time_limit``).
    selection_comparison_ : list
        The comparison ``tune_selection`` made (empty without it).
    predict_budget_ : dict
        The prediction-time budget used, and under ``"auto"`` the budgets tried and the runs
        dropped.
    predict_cost_ms_ : float
        Estimated milliseconds per 1,000 rows of predicting with the ensemble (NaN where
        unknown).
    budget_ : BudgetReport
        Under ``time_limit``: the build's seconds, the runs finished (``runs_ok``), those
        not finished by status (``runs_not_finished``; ``budget`` counts runs not started
        and runs cut), the runs started and cut by the budget (``runs_cut``, and their ids in
        ``runs_cut_ids``), the same of the risk detectors (``detectors_ok``,
        ``detectors_cut``), the plan, the spec built (``library``) and the spare runs it was
        given (``spare_runs``), and what selection changed to fit the time left
        (``selection_changed``); every field None without ``time_limit``
        (:class:`~ensel.estimator.budget_report.BudgetReport`; ``as_dict()`` for a row).
    detectors_ : DetectorSet or None
        The library's extrapolation-risk detectors and their combination, for ``risk``.
    columns_ : list
        The columns the members use.
    input_columns_ : list
        The columns given to ``fit``.
    dropped_columns_ : dict
        Columns left out (all missing or constant), with the reason.
    categories_ : dict
        The categories of each categorical column.
    n_features_in_ : int
        The number of columns given to ``fit``.
    feature_names_in_ : ndarray
        Their names, only when ``fit`` was given a DataFrame.
    library_path_ : str or None
        The store the library lives in, for :mod:`ensel.report` (None when temporary).
    fit_seconds_ : float
        How long ``fit`` took.
    ensel_version_ : str
        The ensel version that fitted the model.
    """

    def __init__(
        self,
        library="default",
        metric="mxe",
        cv: int | str | None = "auto",
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
        backend: str = "local",
        client=None,
        time_limit: float | None = None,
        run_time_limit: float | None = None,
        max_memory=None,
        random_state: int = 0,
        verbose: int = 0,
        exportable: bool = False,
        levels: int = 1,
    ) -> None:
        self._keep_parameters(locals())

    # ------------------------------------------------------------------ fitting

    _tune_selection = True
    _parameter_constraints: ClassVar[dict] = {
        **EnsembleSelectionBase._parameter_constraints,
        "calibrate": [StrOptions({"auto"}), "boolean"],
        "tune_selection": ["boolean"],
        "grow": [Interval(Integral, 0, None, closed="left"), "boolean", dict, GrowSpec, None],
    }

    @_fit_context(prefer_skip_nested_validation=False)  # a spec's models are checked too
    def fit(self, X, y, groups=None) -> EnsembleSelectionClassifier:
        """Build (or reuse) the library, combine its members, keep those with weight. Every
        parameter is checked before any model is trained."""
        fit = self._fit_members(X, y, groups)
        lib, P, metric, weights = fit.library, fit.P, fit.metric, fit.weights
        self.classes_ = lib.classes
        hill = weighted_average(weights, P, self._task)
        self.calibrator_, self.calibration_report_, hill = self._calibrate(
            hill, lib.y, metric, fit.seed
        )
        self._compare(lib.y, hill, metric, METRICS)
        return self

    def _calibrate(self, hill: np.ndarray, y: np.ndarray, metric, seed: int):
        """Platt-scale the ensemble where ``calibrate`` asks for it; log loss of the hillclimb
        predictions before and after, cross-fitted so the 'after' is honest."""
        wanted = self.calibrate is True or (
            self.calibrate == "auto" and metric.kind != "probability"
        )
        if not wanted:
            return None, {}, _full(hill, self.classes_.size)
        proba = _full(hill, self.classes_.size)
        groups = cross_fit_groups(y.size, seed)
        crossed, _ = cross_fit(lambda: ColumnCalibrator("platt"), proba, y, groups)
        report = {
            "log_loss_before": score("mxe", y, proba),
            "log_loss_after": score("mxe", y, crossed),
        }
        return ColumnCalibrator("platt").fit(proba, y), report, crossed

    # ------------------------------------------------------------------ predicting

    def predict_proba(self, X) -> np.ndarray:
        """``(n, n_classes)`` probabilities of the ensemble (of a dask DataFrame: a dask Array
        computed partition by partition on the workers, see docs/distributed.md)."""
        check_is_fitted(self, "weights_")
        if is_dask_frame(X):
            return predict_partitions(self, X, "predict_proba")
        return self._finish(self._weighted_sum(X))

    def predict(self, X, reject=None) -> np.ndarray:
        """The most probable class of each row, as the labels given to ``fit``.

        ``reject`` adds the reject option of Gu & Easwaran's Eq. 10-11: a float ``r`` refuses rows
        whose combined extrapolation risk exceeds ``r``; a pair ``(p, r)`` also refuses rows whose
        top class probability is below ``p``; a :class:`ensel.risk.reject.RejectRule` (e.g. from
        ``fit_reject_rule`` on validation rows) applies its thresholds. Refused rows hold None
        (the array is then of dtype object), so the caller can hand them to a fallback."""
        if is_dask_frame(X):
            return predict_partitions(self, X, "predict", reject=reject)
        proba = self.predict_proba(X)
        labels = self.classes_[np.argmax(proba, axis=1)]
        if reject is None:
            return labels
        return _refused(labels, self.refused_rows(X, reject, proba))

    def _finish(self, proba: np.ndarray) -> np.ndarray:
        """``(n, n_classes)`` probabilities from the library layout, through the final Platt
        step where there is one."""
        proba = _full(proba, self.classes_.size)
        return proba if self.calibrator_ is None else self.calibrator_.predict(proba)
