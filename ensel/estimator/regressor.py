"""EnsembleSelectionRegressor: ensemble selection for numeric targets, the same library
machinery, engine and detectors as the classifier."""

from __future__ import annotations

import numpy as np
from sklearn.base import RegressorMixin, _fit_context

from ..library.data.sources import is_dask_frame
from ..metrics import REGRESSION_METRICS
from ..selection import weighted_average
from ._base import EnsembleSelectionBase, _refused
from .dask_predict import predict_partitions

__all__ = ["EnsembleSelectionRegressor"]


class EnsembleSelectionRegressor(RegressorMixin, EnsembleSelectionBase):
    """Ensemble selection for numeric targets: the same library builder, store, selection
    engine and detectors as :class:`EnsembleSelectionClassifier`, with regressors (a spec with
    ``task: regression``; the built-in ``"regression"`` by default) and a regression metric.

    Every parameter is checked when ``fit`` starts, before any model is trained (an invalid
    value raises a ValueError naming the parameter and what it takes).

    Parameters
    ----------
    library : str, path, dict, LibrarySpec or Library, default="regression"
        ``"regression"`` (the default regression spec), ``"tiny_regression"``, a spec path or
        dict with ``task: regression``, a built :class:`~ensel.library.Library`, or the path
        of a regression prediction store.
    metric : str, Metric or callable, default="rmse"
        What selection optimises: ``"rmse"``, ``"mae"``, ``"r2"``, a
        :class:`~ensel.metrics.Metric` with ``task="regression"``, or a callable
        ``func(y_true, y_pred) -> float`` (maximised unless it has
        ``greater_is_better=False``; see :func:`ensel.metrics.make_metric`).
    cv : int >= 2, "auto" or None, default="auto"
        As for :class:`EnsembleSelectionClassifier` (``"auto"``: 5 folds at every size),
        with plain (or grouped with ``groups``)
        K folds: there are no classes to stratify by.
    strategy : {"es", "modsel", "bayesavg"}, default="es"
        Ensemble selection, the best member, or Bayesian model averaging with a Gaussian
        likelihood of each member's residuals.
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
        Select only from the best ``prune_fraction`` of the library by hillclimb score
        (§4.3.6; :class:`EnsembleSelectionClassifier` gives the measurement behind 1.0).
    refit : {"full"} or None, default=None
        None keeps each member's K fold siblings for prediction; ``"full"`` trains each run
        of the ensemble once more on all training rows and predicts with that one model.
    max_predict_ms : float > 0, "auto" or None, default="auto"
        A prediction-time budget in milliseconds per 1,000 rows for ``strategy="es"``
        (None: none); ``"auto"``: the cheapest ensemble within half a standard error (or 1e-4)
        of the unconstrained one's hillclimb score (see :class:`EnsembleSelectionClassifier`).
    store : path or None, default=None
        Directory that keeps the library (resumable); None uses a temporary one.
    n_jobs : int or None, default=-1
        As joblib reads it: None is 1, -1 every CPU this process may use (its CPU affinity
        and a container's CPU quota), -k all but k-1. It sizes the worker processes of the
        library build and of ``refit="full"``, and the threads of ``predict`` and ``risk``.
    backend : {"local", "dask"}, default="local"
        Where the library is built: worker processes on this machine, or a dask cluster.
    client : str, distributed.Client or None, default=None
        With ``backend="dask"``: a scheduler address, a client, or None for the current one.
    time_limit : float > 0 or None, default=None
        Seconds for the whole ``fit`` (None: no limit; see
        :class:`EnsembleSelectionClassifier`).
    run_time_limit : float > 0 or None, default=None
        Seconds per training run (all folds); None takes the spec's cap.
    max_memory : int, str or None, default=None
        A ceiling on the memory of the fit's processes (see
        :class:`EnsembleSelectionClassifier`).
    random_state : int, RandomState or None, default=0
        The fit's seed (folds, runs, bags, detectors). An int gives the same fit every time;
        a ``RandomState`` gives a seed drawn from its state, None one drawn from numpy's
        global generator.
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
        (LightGBM, a random forest) on the features plus the
        out-of-fold predictions of the strongest level-one runs, over the same folds, and
        select among the members of both levels together; it takes a fifth of
        ``time_limit`` (see :mod:`ensel.estimator.levels`; ``budget_.level_two`` says what
        it built and what weight it got). Not with ``refit="full"``, ``exportable=True``,
        a number for ``max_predict_ms``, or a library given built.

    Attributes
    ----------
    members_ : DataFrame
        The library members with weight and their ``weight``.
    weights_ : ndarray
        The weight of each of ``members_``, summing to one.
    fitted_members_ : FittedMembers
        The members with weight and their fitted runs.
    leaderboard_ : DataFrame
        Every member's hillclimb RMSE, MAE and R² and its weight.
    comparison_ : dict
        The ensemble's out-of-fold hillclimb score on each regression metric against the
        best member's.
    hillclimb_score_ : float
        The ensemble's score on ``metric`` on the hillclimb rows.
    hillclimb_predictions_ : ndarray
        The ensemble's out-of-fold hillclimb predictions (for residual plots).
    hillclimb_targets_ : ndarray
        The targets of those rows.
    selection_options_ : dict
        The selection options used (as given, or cut to fit ``time_limit``).
    selection_comparison_ : list
        Always empty here (the classifier's ``tune_selection`` fills it).
    predict_budget_ : dict
        The prediction-time budget used, and under ``"auto"`` the budgets tried and the runs
        dropped.
    predict_cost_ms_ : float
        Estimated milliseconds per 1,000 rows of predicting with the ensemble.
    budget_ : BudgetReport
        Under ``time_limit``: what the build and selection spent and changed (all None
        without one; :class:`~ensel.estimator.budget_report.BudgetReport` lists the fields).
    detectors_ : DetectorSet or None
        The library's extrapolation-risk detectors and their combination.
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
        The store the library lives in (None when temporary).
    fit_seconds_ : float
        How long ``fit`` took.
    ensel_version_ : str
        The ensel version that fitted the model.
    """

    _task = "regression"

    def __init__(
        self,
        library="regression",
        metric="rmse",
        cv: int | str | None = "auto",
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

    @_fit_context(prefer_skip_nested_validation=False)  # a spec's models are checked too
    def fit(self, X, y, groups=None) -> EnsembleSelectionRegressor:
        """Build (or reuse) the regression library, combine its members, keep those with
        weight. ``groups`` keeps the rows of one group (one person in panel data) in one
        fold. Every parameter is checked before any model is trained."""
        fit = self._fit_members(X, y, groups)
        lib, P, metric, weights = fit.library, fit.P, fit.metric, fit.weights
        hill = weighted_average(weights, P, self._task)  # float64, as the store keeps it
        self.hillclimb_predictions_ = hill
        self.hillclimb_targets_ = np.asarray(lib.y, dtype=np.float64)
        self._compare(lib.y, hill, metric, REGRESSION_METRICS)
        return self

    def predict(self, X, reject=None) -> np.ndarray:
        """``(n,)`` predicted values: the weighted average of the kept members' predictions.

        ``reject`` adds the reject option of Gu & Easwaran's Eq. 10: a float ``r`` (or a
        :class:`ensel.risk.reject.RejectRule` without ``min_confidence``) refuses rows whose
        combined extrapolation risk exceeds ``r`` or is unknown; refused rows hold None (the
        array is then of dtype object)."""
        if is_dask_frame(X):
            return predict_partitions(self, X, "predict", reject=reject)
        values = self._weighted_sum(X)
        if reject is None:
            return values
        if isinstance(reject, tuple | list):
            raise ValueError(
                f"reject={reject!r}: a regressor has no class probabilities; give the largest "
                "combined risk to accept (a float in [0, 1])"
            )
        return _refused(values, self.refused_rows(X, reject))
