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
        ``strategy`` under the predict-cost limit; with ``exportable=True`` under none (the
        limit is then graph milliseconds, for :meth:`exportable`'s selection)."""
        est = self.estimator
        lib = self.lib if lib is None else lib
        P = self.P if P is None else P
        limit = None if est.exportable else est.max_predict_ms
        return self._select(options, lib, P, self._cost(lib), limit)

    def _select(self, options: dict, lib, P, cost, max_predict_ms, tune: bool = True):
        """Weights of ``lib``'s members priced by ``cost`` under ``max_predict_ms`` (None, a
        number in ``cost``'s unit, or "auto"); ``tune``: choose the selection options first
        where the estimator asks."""
        est = self.estimator
        auto = self.auto_cost(max_predict_ms)
        comparison = []
        if tune and est._tune_selection and est.tune_selection and est.strategy == "es":
            options, comparison = choose_selection(P, lib.y, self.metric, options)
        chosen = options
        if self.fixed_cost(max_predict_ms):
            chosen = {**options, "max_cost": float(max_predict_ms), "cost": cost}
        weights = STRATEGIES[est.strategy](P, lib.y, self.metric, chosen)
        limit = {"max_predict_ms": None if auto else max_predict_ms}
        if auto and est.strategy == "es" and cost is not None:
            weights, limit = self._cheapest(lib, P, options, cost, weights)
        if tune:  # a selection that reuses tuned options keeps their comparison
            self.fitted.update(selection_comparison_=comparison, selection_options_=dict(options))
        self.fitted.update(
            predict_budget_=limit,
            predict_cost_ms_=np.nan if cost is None else cost.of(np.flatnonzero(weights > 0)),
        )
        return weights

    def exportable(self, options: dict, unrestricted: np.ndarray) -> tuple[np.ndarray, dict]:
        """Weights selected among the members ``to_onnx`` can express (``exportable=True``),
        priced by their single-row cost in the exported graph (:mod:`.export.graph_cost`):
        ``max_predict_ms`` is then graph milliseconds per row, and "auto" the cheapest
        ensemble within noise held to ``GRAPH_AUTO_MS``. Reports what the restriction and
        the budget cost: the hillclimb score with every member, with the exportable ones,
        and within the graph budget (before any final calibration), the members left, and
        the predicted graph milliseconds."""
        from .export.graph_cost import graph_cost
        from .export.restrict import ExportableMembers, exportable_mask

        lib, P, est = self.lib, self.P, self.estimator
        mask = exportable_mask(lib.members, self.task, categorical=bool(lib.categories))
        if not mask.any():
            raise ValueError(
                "exportable=True: no member of the library can be exported to ONNX; see "
                "docs/deploy.md for the families, views and calibrations that export"
            )
        sub, Pm = ExportableMembers(lib, mask), P[mask]
        siblings = 1 if est.refit == "full" else lib.siblings
        outputs = P.shape[2] if P.ndim == 3 else 1
        cost = graph_cost(sub.members, lib, self.task, siblings, outputs)
        free = self._select(options, sub, Pm, cost, None)
        options = self.fitted["selection_options_"]
        chosen = self._graph_budget(options, sub, Pm, cost, free)
        weights = np.zeros_like(unrestricted)
        weights[mask] = chosen
        free_all = np.zeros_like(unrestricted)
        free_all[mask] = free
        return weights, {
            "members": int(mask.sum()),
            "of": int(mask.size),
            "score_all": self._score(unrestricted),
            "score_exportable": self._score(free_all),
            "score_within_budget": self._score(weights),
            "graph_ms": cost.of(np.flatnonzero(chosen > 0)),
            "graph_ms_exportable": cost.of(np.flatnonzero(free > 0)),
        }

    def _graph_budget(self, options: dict, lib, P, cost: PredictCost, free: np.ndarray):
        """Exportable weights under the estimator's ``max_predict_ms`` in graph milliseconds
        (``free`` where it sets none); "auto": the cheapest within noise, then, where that
        is over ``GRAPH_AUTO_MS``, the best ensemble within it (the cheapest within noise
        where no member fits it)."""
        from .export.graph_cost import GRAPH_AUTO_MS

        est = self.estimator
        limit = est.max_predict_ms
        if limit is None:
            return free
        if not self.auto_cost(limit):
            return self._select(options, lib, P, cost, limit, tune=False)
        weights, record = free, {"max_predict_ms": None}
        if est.strategy == "es":  # "auto" from the selection already made, not a second one
            weights, record = self._cheapest(lib, P, options, cost, free)
        if cost.of(np.flatnonzero(weights > 0)) > GRAPH_AUTO_MS:
            try:
                weights = self._select(options, lib, P, cost, GRAPH_AUTO_MS, tune=False)
                record = {**record, "max_predict_ms": GRAPH_AUTO_MS}
            except ValueError:  # no member fits the graph budget alone
                pass
        self.fitted.update(
            predict_budget_=record, predict_cost_ms_=cost.of(np.flatnonzero(weights > 0))
        )
        return weights

    def _score(self, weights: np.ndarray) -> float:
        """The hillclimb score of ``weights`` over this chooser's library."""
        return float(score(self.metric, self.lib.y, weighted_average(weights, self.P, self.task)))

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
