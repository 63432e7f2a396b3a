"""The select stage of a fit: one weight per library member by the estimator's strategy, under
its predict-cost limit (``max_predict_ms``: a number of milliseconds, or ``"auto"``, the
cheapest ensemble within noise of the unconstrained one), and optionally among the members
``to_onnx`` can express."""

from __future__ import annotations

import numpy as np

from ..library.planning.budget import Budget
from ..library.planning.cost import predict_cost
from ..metrics import score
from ..selection import PredictCost, weighted_average
from ..strategies import STRATEGIES, cheapest_within_noise, choose_selection, drop_costly_runs
from .levels import TwoLevels

__all__ = ["Chooser"]


class Chooser:
    """Selection over one library (``lib``: members, labels, stored timings) and its
    hillclimb matrix ``P`` for ``estimator`` on ``metric``; no selection starts once
    ``budget`` (the fit's, keeping back what follows selection) has run out. ``fitted``
    collects the estimator's attributes of selection (``selection_options_``,
    ``selection_comparison_``, ``predict_budget_``, ``predict_cost_ms_``)."""

    def __init__(self, estimator, lib, P: np.ndarray, metric, budget: Budget) -> None:
        self.estimator, self.lib, self.P = estimator, lib, P
        self.metric, self.budget = metric, budget
        self.task = estimator._task
        self.fitted: dict = {}

    @staticmethod
    def auto_cost(max_predict_ms) -> bool:
        """Whether ``max_predict_ms`` asks for the cheapest ensemble within noise ("auto")."""
        return isinstance(max_predict_ms, str)  # "auto", the one string allowed

    @staticmethod
    def fixed_cost(max_predict_ms) -> bool:
        """Whether ``max_predict_ms`` is a number of milliseconds."""
        return max_predict_ms is not None and not Chooser.auto_cost(max_predict_ms)

    def weights(self, options: dict, lib=None, P: np.ndarray | None = None) -> np.ndarray:
        """One weight per member of ``lib`` (this chooser's library by default), by
        ``strategy`` under the predict-cost limit."""
        est = self.estimator
        lib = self.lib if lib is None else lib
        P = self.P if P is None else P
        auto = self.auto_cost(est.max_predict_ms)
        comparison = []
        if est._tune_selection and est.tune_selection and est.strategy == "es":
            options, comparison = choose_selection(P, lib.y, self.metric, options)
        cost = self._cost(lib)
        chosen = options
        if self.fixed_cost(est.max_predict_ms):
            chosen = {**options, "max_cost": float(est.max_predict_ms), "cost": cost}
        weights = STRATEGIES[est.strategy](P, lib.y, self.metric, chosen)
        limit = {"max_predict_ms": None if auto else est.max_predict_ms}
        if auto and est.strategy == "es" and cost is not None:
            weights, limit = self._cheapest(lib, P, options, cost, weights)
        self.fitted.update(
            selection_comparison_=comparison,
            selection_options_=dict(options),
            predict_budget_=limit,
            predict_cost_ms_=np.nan if cost is None else cost.of(np.flatnonzero(weights > 0)),
        )
        return weights

    def exportable(self, options: dict, unrestricted: np.ndarray) -> tuple[np.ndarray, dict]:
        """Weights selected among the members ``to_onnx`` can express (``exportable=True``),
        under the same options and predict-cost limit, and what the restriction cost: the
        hillclimb score with and without it (before any final calibration) and the members
        it left."""
        from .export.restrict import ExportableMembers, exportable_mask

        lib, P = self.lib, self.P
        mask = exportable_mask(lib.members, self.task, categorical=bool(lib.categories))
        if not mask.any():
            raise ValueError(
                "exportable=True: no member of the library can be exported to ONNX; see "
                "docs/deploy.md for the families, views and calibrations that export"
            )
        weights = np.zeros_like(unrestricted)
        weights[mask] = self.weights(options, ExportableMembers(lib, mask), P[mask])
        with_all = score(self.metric, lib.y, weighted_average(unrestricted, P, self.task))
        exportable = score(self.metric, lib.y, weighted_average(weights, P, self.task))
        return weights, {
            "members": int(mask.sum()),
            "of": int(mask.size),
            "score_all": float(with_all),
            "score_exportable": float(exportable),
        }

    def _cheapest(self, lib, P, options: dict, cost: PredictCost, full: np.ndarray):
        """``max_predict_ms="auto"``: the cheapest weights within noise of ``full``, less the
        runs that cost most per unit of weight while the score stays within that bar; and the
        ``predict_budget_`` record (the limit taken, the limits tried, the runs dropped)."""
        weights, ms, tried = cheapest_within_noise(
            P, lib.y, self.metric, options, cost, full, budget=self.budget
        )
        weights, dropped = drop_costly_runs(
            P,
            lib.y,
            self.metric,
            cost,
            weights,
            full,
            lib.members["run"].to_numpy(),
            seed=options.get("random_state"),
            budget=self.budget,
        )
        return weights, {"max_predict_ms": ms, "tried": tried, "dropped": dropped}

    def _cost(self, lib) -> PredictCost | None:
        """What predicting with each set of members costs (None where the library's builder
        recorded no timings, or the library has a second level, and no limit asks for
        them)."""
        est = self.estimator
        if isinstance(lib, TwoLevels):  # levels=2 takes no limit in milliseconds
            return None
        siblings = 1 if est.refit == "full" else lib.siblings
        try:
            needs, item_cost, _ = predict_cost(lib.members, lib.store.records, siblings)
        except ValueError:
            if self.fixed_cost(est.max_predict_ms):
                raise
            return None
        return PredictCost(needs, item_cost)
