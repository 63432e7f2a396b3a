"""EnsembleSelectionRegressor: ensemble selection for numeric targets, the same library
machinery, engine and detectors as the classifier."""

from __future__ import annotations

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.utils.validation import check_is_fitted

from ..metrics import REGRESSION_METRICS, score
from ._base import EnsembleSelectionBase, _best, _refused

__all__ = ["EnsembleSelectionRegressor"]


class EnsembleSelectionRegressor(RegressorMixin, EnsembleSelectionBase):
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
    store, n_jobs, backend, client, time_limit, max_memory, random_state, verbose : as for
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
        max_memory=None,
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
        self.max_memory = max_memory
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X, y, groups=None) -> EnsembleSelectionRegressor:
        """Build (or reuse) the regression library, combine its members, keep those with
        weight. ``groups`` keeps the rows of one group (one person in panel data) in one
        fold."""
        fit = self._fit_members(X, y, groups)
        lib, P, metric, weights = fit.library, fit.P, fit.metric, fit.weights
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
