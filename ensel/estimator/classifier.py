"""EnsembleSelectionClassifier: ensemble selection for class labels, with an optional final
Platt step on the ensemble."""

from __future__ import annotations

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from ..calibration import ColumnCalibrator, cross_fit, cross_fit_groups
from ..metrics import METRICS, score
from ._base import EnsembleSelectionBase, _best, _full, _refused

__all__ = ["EnsembleSelectionClassifier"]

CALIBRATE = ("auto", True, False)


class EnsembleSelectionClassifier(ClassifierMixin, EnsembleSelectionBase):
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
    max_predict_ms : a prediction-time budget, milliseconds per 1,000 rows on the machine
        that built the library (None: none). Selection (``strategy="es"``) then only adds
        members that keep the ensemble within it, counting shared work once (a member of a
        run already in the ensemble costs only its extra stage; a view is transformed once
        per fold); the costs are those the builder timed (``Library.members["predict_ms"]``),
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
    max_memory : a ceiling on the memory of the fit's processes (this one and the build's
        workers), kept like ``time_limit``: bytes or a size such as ``"8GB"``; None allows 80%
        of what this process may use (its cgroup limit, else the physical memory). A clear
        error before any training when the data alone cannot fit; runs start only when their
        estimated peak fits, and runs that cannot fit are skipped (see
        :func:`ensel.library.build_library` and docs/library.md, "Memory").
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
        max_memory=None,
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
        self.max_memory = max_memory
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ fitting

    _tune_selection = True

    def fit(self, X, y, groups=None) -> EnsembleSelectionClassifier:
        """Build (or reuse) the library, combine its members, keep those with weight."""
        if self.calibrate not in CALIBRATE:
            raise ValueError(f"calibrate={self.calibrate!r}: use one of {CALIBRATE}")
        fit = self._fit_members(X, y, groups)
        lib, P, metric, weights = fit.library, fit.P, fit.metric, fit.weights
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
