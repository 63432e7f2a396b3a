"""Ensemble selection (dissertation §4.1-4.2, §4.3.6): greedy forward selection of library
members on cached hillclimb predictions, with replacement, sorted initialisation, bagging and
library pruning. Arrays in, weights out; the engine never trains a model.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, validate_parameter_constraints

from ensel._candidates import (
    CHUNK_BYTES,
    RowView,
    candidate_scorer,
    exact_scorer,
    fast_available,
    streamed_scorer,
)
from ensel.metrics import (
    Metric,
    check_labels,
    check_predictions,
    check_probabilities,
    check_targets,
    positive_class_layout,
    resolve_metric,
)

__all__ = ["EnsembleSelection", "PredictCost", "cost_front", "weighted_average"]

COPY_BYTES = 16
"""Bytes per prediction of the in-memory path's copies: float64, float32, and a bag."""
BLOCK_COPIES = 3
"""A streamed block is held about this many times over (its float32 copy and the kernels'
temporaries)."""


def weighted_average(weights: np.ndarray, P: np.ndarray, task: str) -> np.ndarray:
    """``sum_m w_m P_m``: the ensemble of members ``P`` (members first) under ``weights``,
    through :func:`within_range`."""
    return within_range(np.tensordot(weights, P, axes=1), task)


def within_range(average: np.ndarray, task: str) -> np.ndarray:
    """An average of members' predictions, probabilities clipped to [0, 1] in place (weights
    that sum to one up to rounding make members that all say 1.0 average to
    1.0000000000000002, which ``score`` refuses and whose complement is negative); regression
    values as they are."""
    return average if task == "regression" else np.clip(average, 0.0, 1.0, out=average)


@dataclass(frozen=True)
class PredictCost:
    """What predicting with a set of members costs, when members share work.

    A member needs some *items* (a preprocessing view, the trees of a boosting run up to its
    stage, a net's weight snapshot, ...); a set of members costs the sum of ``item_cost`` over
    the union of the items its members need, so a member whose run is already in the ensemble
    costs only the items it adds (its extra stage), not its run again (hardware-aware ensemble
    selection, Maier, Möller and Purucker 2024, with costs of shared work). ``needs`` is
    ``(n_members, n_items)`` bool, ``item_cost`` ``(n_items,)`` non-negative, in any unit (the
    estimator uses milliseconds per 1,000 rows)."""

    needs: np.ndarray
    item_cost: np.ndarray

    @classmethod
    def additive(cls, member_cost) -> PredictCost:
        """Members that share nothing: each costs its own ``member_cost``."""
        c = np.asarray(member_cost, dtype=float)
        return cls(np.eye(c.size, dtype=bool), c)

    @classmethod
    def coerce(cls, cost, n_members: int) -> PredictCost:
        """``cost`` as a PredictCost: one already, a ``(needs, item_cost)`` pair, or a
        vector of per-member costs; a ValueError says what does not fit ``n_members``."""
        if not isinstance(cost, PredictCost):
            if isinstance(cost, tuple) and len(cost) == 2:
                cost = cls(np.asarray(cost[0], dtype=bool), np.asarray(cost[1], dtype=float))
            else:
                cost = cls.additive(cost)
        needs, item_cost = np.asarray(cost.needs, dtype=bool), np.asarray(cost.item_cost, float)
        if needs.ndim != 2 or needs.shape[0] != n_members or item_cost.shape != needs.shape[1:]:
            raise ValueError(
                f"cost must describe the {n_members} members of P: needs (n_members, n_items) "
                f"and item_cost (n_items,); got needs {needs.shape}, item_cost {item_cost.shape}"
            )
        if not (np.isfinite(item_cost).all() and (item_cost >= 0).all()):
            raise ValueError("cost: item costs must be finite and non-negative")
        return cls(needs, item_cost)

    def of(self, members) -> float:
        """The cost of the set ``members`` (indices or a boolean mask)."""
        used = self.needs[np.asarray(members)]
        return float(self.item_cost[used.any(axis=0)].sum()) if used.size else 0.0

    def member_cost(self) -> np.ndarray:
        """Each member's cost alone."""
        return self.needs.astype(float) @ self.item_cost

    def extra(self, paid: np.ndarray) -> np.ndarray:
        """``(n_members,)``: what adding each member costs on top of the items ``paid``."""
        return self.needs.astype(float) @ np.where(paid, 0.0, self.item_cost)


@dataclass
class _Run:
    """One hillclimb: how often each member of the bag is in the best prefix, and the curve."""

    counts: np.ndarray
    trajectory: np.ndarray
    order: np.ndarray  # members in the order they joined: the initial ones, then each step


class EnsembleSelection:
    """Select a weighted average of library members that maximises a metric on hillclimb data.

    Parameters
    ----------
    metric : str, Metric or callable, default="rms"
        One of ``ensel.metrics.METRICS``, a :class:`~ensel.metrics.Metric`, or a callable
        ``func(y_true, proba) -> float`` (maximised; see :func:`ensel.metrics.make_metric`).
        A regression metric (``ensel.metrics.REGRESSION_METRICS``: rmse, mae, r2, or a Metric
        with ``task="regression"``) selects over real predictions ``P`` (M, N) against real
        targets ``y``.
    n_iter : int >= 1, default=100
        Greedy steps after initialisation (per bag).
    replacement : bool, default=True
        Allow a member to be added more than once (§4.2.1).
    sorted_init : bool, default=True
        Start from the best ``N`` members, ``N <= max_init`` chosen on the hillclimb set
        (§4.2.2).
    max_init : int >= 1, default=25
        The most members of the sorted initialisation.
    n_bags : int >= 1, default=20
        Run ``n_bags`` selections, each over a random ``bag_fraction`` of the (pruned)
        library, and average their weights (§4.2.3). ``n_bags=1`` selects from the whole
        library.
    bag_fraction : float in (0, 1], default=0.5
        The share of the (pruned) library each bag selects from.
    prune_fraction : float in (0, 1], default=1.0
        Only the best ``prune_fraction`` of members by the metric take part (§4.3.6; the
        dissertation finds 10-20% a good rule of thumb).
    exact : bool, default=False
        Score candidates in float64 with exact sorting for the rank metrics. The default
        fast path scores in float32; for rank metrics (ROC, LFT, BEP, APR) quantised levels
        with bounds only decide which candidates are scored exactly, so the picks are the
        same.
    memory_budget : int >= 1 or None, default=None
        Bytes the selection may use for copies of ``P`` (None: half the memory available
        now). Where the copies the in-memory path makes (float64 and float32, about 16 bytes
        per prediction) would exceed it, ``P`` (a memory-mapped ``Library.predictions``, say)
        is read a block of members at a time instead; the result is the same.
    max_cost : float >= 0 or None, default=None
        A predict-cost limit (None: no limit). ``fit`` then takes ``cost`` (a
        :class:`PredictCost`, or per-member costs) and each greedy step picks the best
        candidate that keeps the ensemble within ``max_cost`` (sorted initialisation stops
        at the longest prefix that fits). A member whose work is already paid for (its run
        is in the ensemble) costs only what it adds. Bags share one limit: items paid by an
        earlier bag are free to the later ones, so the averaged ensemble stays within it.
    random_state : int, RandomState or None, default=None
        Seed for the bags (scikit-learn's ``check_random_state``).

    Attributes
    ----------
    weights_ : ndarray of shape (n_members,)
        Non-negative weights summing to one.
    bag_weights_ : ndarray of shape (n_bags, n_members)
        The weights found by each bag.
    trajectory_ : ndarray
        Hillclimb score of each ensemble in the nested sequence: the sorted initialisation
        (if any) and then each greedy step. Shape (L,) for ``n_bags == 1``, (n_bags, L)
        otherwise (NaN-padded where a bag stopped early without replacement).
    order_ : ndarray or list of ndarray
        Member indices in the order they joined the ensemble (initial members first), for
        the whole run, not only the returned prefix; a list of such arrays when
        ``n_bags > 1``.
    member_scores_ : ndarray of shape (n_members,)
        Hillclimb score of each member alone.
    score_ : float
        Hillclimb score of the returned ensemble.
    streamed_ : bool
        True if ``P`` was read a block at a time (it exceeded ``memory_budget``).
    cost_ : float
        Predict cost of the returned ensemble (NaN when ``fit`` got no ``cost``).
    n_members_ : int
        The number of members of the ``P`` given to ``fit``.
    """

    _parameter_constraints: ClassVar[dict] = {
        "metric": [str, Metric, callable],
        "n_iter": [Interval(Integral, 1, None, closed="left")],
        "replacement": ["boolean"],
        "sorted_init": ["boolean"],
        "max_init": [Interval(Integral, 1, None, closed="left")],
        "n_bags": [Interval(Integral, 1, None, closed="left")],
        "bag_fraction": [Interval(Real, 0, 1, closed="right")],
        "prune_fraction": [Interval(Real, 0, 1, closed="right")],
        "exact": ["boolean"],
        "memory_budget": [Interval(Integral, 1, None, closed="left"), None],
        "max_cost": [Interval(Real, 0, None, closed="left"), None],
        "random_state": ["random_state"],
    }
    """What each parameter takes (scikit-learn's constraints), checked first in ``fit``."""

    def __init__(
        self,
        metric="rms",
        n_iter: int = 100,
        replacement: bool = True,
        sorted_init: bool = True,
        max_init: int = 25,
        n_bags: int = 20,
        bag_fraction: float = 0.5,
        prune_fraction: float = 1.0,
        exact: bool = False,
        memory_budget: int | None = None,
        max_cost: float | None = None,
        random_state=None,
    ):
        self.metric = metric
        self.n_iter = n_iter
        self.replacement = replacement
        self.sorted_init = sorted_init
        self.max_init = max_init
        self.n_bags = n_bags
        self.bag_fraction = bag_fraction
        self.prune_fraction = prune_fraction
        self.exact = exact
        self.memory_budget = memory_budget
        self.max_cost = max_cost
        self.random_state = random_state

    # ------------------------------------------------------------------ public API

    def fit(self, P, y, cost=None) -> EnsembleSelection:
        """Select from ``P`` ((M, N) positive-class or (M, N, C) probabilities, or (M, N) real
        predictions for a regression metric) against ``y``. ``cost``: what predicting with each
        member costs (a :class:`PredictCost` or per-member costs), needed with ``max_cost``."""
        self._check_params()
        metric = resolve_metric(self.metric)
        P, y, block_rows = self._check_inputs(P, y)
        rng = check_random_state(self.random_state)
        n_members = len(P)
        cost = self._checked_cost(cost, n_members)
        paid = None if cost is None else np.zeros(cost.item_cost.size, dtype=bool)

        # exact scoring reads this much of P at a time (the rank metrics' temporaries take
        # about twenty times as much)
        chunk_bytes = CHUNK_BYTES if block_rows is None else max(1, self._memory_limit // 32)
        self.member_scores_ = exact_scorer(metric, P, y, chunk_bytes)(np.zeros(P.shape[1:]), 0)
        gain = _gain(metric, self.member_scores_)
        by_score = np.argsort(-gain, kind="stable")
        pool = np.sort(by_score[: max(1, math.ceil(self.prune_fraction * n_members))])

        fast = not self.exact and fast_available(metric)
        # the built-in regression metrics do not change when targets and predictions move
        # together: centre both so that float32 keeps the digits that differ between members
        shift = float(y.mean()) if fast and metric.task == "regression" else 0.0
        y_work = y - shift if shift else y
        if block_rows is None:
            # the fast kernels read float32: convert once, not once per bag
            work = (P - shift if shift else P).astype(np.float32) if fast else P
            rows_of, scorer_of = work.__getitem__, partial(candidate_scorer, exact=self.exact)
        else:  # too large for copies: read the bag's rows a block at a time
            dtype = np.float32 if fast else np.float64
            rows_of = partial(RowView, P, dtype=dtype, shift=shift)
            scorer_of = partial(
                streamed_scorer, exact=self.exact, block_rows=block_rows, chunk_bytes=chunk_bytes
            )
        self.streamed_ = block_rows is not None
        bagged = self.n_bags > 1
        bag_size = max(1, round(self.bag_fraction * len(pool))) if bagged else len(pool)
        bag_weights = np.zeros((self.n_bags, n_members))
        curves, orders = [], []
        for b in range(self.n_bags):
            members = np.sort(rng.choice(pool, bag_size, replace=False)) if bagged else pool
            rows = rows_of(members)
            limit = None
            if self.max_cost is not None:
                limit = _CostLimit(cost.needs[members], cost.item_cost, paid, self.max_cost)
            run = self._hillclimb(
                metric, rows, y_work, gain[members], scorer_of, chunk_bytes, limit
            )
            if run.counts.sum():  # else no member of this bag fits the cost limit: it abstains
                bag_weights[b, members] = run.counts / run.counts.sum()
            if paid is not None:
                paid |= cost.needs[members[run.counts > 0]].any(axis=0)
            curves.append(run.trajectory)
            orders.append(members[run.order])

        voted = bag_weights.sum(axis=1) > 0
        if not voted.any():
            raise ValueError(
                f"max_cost={self.max_cost:g}: no member left after pruning fits it (the "
                "cheapest members were pruned away); raise max_cost or prune_fraction"
            )
        self.bag_weights_ = bag_weights
        self.weights_ = bag_weights[voted].mean(axis=0)
        width = max(1, max(len(c) for c in curves))
        padded = np.full((self.n_bags, width), np.nan)
        for b, c in enumerate(curves):
            padded[b, : len(c)] = c
        self.trajectory_ = padded[0] if self.n_bags == 1 else padded
        self.order_ = orders[0] if self.n_bags == 1 else orders
        self.score_ = float(metric.batch(y, self._blend(P, chunk_bytes)[None])[0])
        self.cost_ = np.nan if cost is None else cost.of(self.weights_ > 0)
        self.n_members_ = n_members
        return self

    def _checked_cost(self, cost, n_members: int) -> PredictCost | None:
        """``cost`` as a :class:`PredictCost` of ``n_members`` members (None where not given),
        checked against ``max_cost``: needed with it, and its cheapest member must fit it."""
        cost = None if cost is None else PredictCost.coerce(cost, n_members)
        if self.max_cost is None:
            return cost
        if cost is None:
            raise ValueError("max_cost needs the members' predict costs: call fit(P, y, cost=...)")
        cheapest = float(cost.member_cost().min())
        if cheapest > self.max_cost:
            raise ValueError(
                f"max_cost={self.max_cost:g} is below the cheapest member's cost "
                f"{cheapest:.4g}; raise it to at least that"
            )
        return cost

    def predict_proba(self, P) -> np.ndarray:
        """The ensemble's prediction: the weighted average of the members' rows of ``P``."""
        if not hasattr(self, "weights_"):
            raise AttributeError("this EnsembleSelection is not fitted yet; call fit(P, y) first")
        P = np.asarray(P, dtype=np.float64)
        if P.ndim != self._ndim_ or P.shape[0] != self.n_members_ or P.shape[2:] != self._tail_:
            tail = "".join(f", {c}" for c in self._tail_)
            raise ValueError(
                f"P must have shape ({self.n_members_}, n_samples{tail}) like the matrix given "
                f"to fit; got {P.shape}"
            )
        if self._task_ == "regression":
            check_predictions(P, name="P")
        else:
            check_probabilities(P, name="P")
        return self._blend(P)

    def predict(self, P) -> np.ndarray:
        """The ensemble's prediction (the weighted average of the members' rows of ``P``): real
        values for a regression metric, probabilities otherwise, as :meth:`predict_proba`."""
        return self.predict_proba(P)

    # ------------------------------------------------------------------ internals

    def _blend(self, P: np.ndarray, chunk_bytes: int = CHUNK_BYTES) -> np.ndarray:
        """The weighted average of the used rows, read ``chunk_bytes`` at a time and summed
        row after row: the same numbers whether ``P`` is in memory or read in blocks
        (:func:`within_range`)."""
        used = np.flatnonzero(self.weights_)
        chunk = max(1, chunk_bytes // max(1, P[0].size * 8))
        total = np.zeros(P.shape[1:])
        for start in range(0, len(used), chunk):
            rows = used[start : start + chunk]
            for w, row in zip(self.weights_[rows], np.asarray(P[rows], np.float64), strict=True):
                total += w * row
        return within_range(total, self._task_)

    def _hillclimb(
        self,
        metric: Metric,
        P,
        y: np.ndarray,
        gain: np.ndarray,
        scorer_of: Callable,
        chunk_bytes: int,
        limit: _CostLimit | None = None,
    ) -> _Run:
        """Forward selection over the rows of P; returns the best prefix (§4.1 step 4). With a
        predict-cost ``limit`` only candidates that keep the ensemble within it take part."""
        n = len(P)
        counts = np.zeros(n, dtype=np.int64)
        S = np.zeros(P.shape[1:])
        k = 0
        curve: list[float] = []
        initialised = False
        if self.sorted_init:
            best_first = np.argsort(-gain, kind="stable")[: min(self.max_init, n)]
            if limit is not None:
                best_first = best_first[: limit.fitting_prefix(best_first)]
            if best_first.size:
                init_scores = _prefix_scores(metric, P, y, best_first, chunk_bytes)
                k = int(np.argmax(_gain(metric, init_scores))) + 1
                counts[best_first[:k]] = 1
                for row in P[best_first[:k]]:
                    S = S + row  # the same sequential sum as the prefix scores'
                curve.append(float(init_scores[k - 1]))
                initialised = True
                if limit is not None:
                    limit.add(best_first[:k])
        init_counts = counts.copy()
        scorer = scorer_of(metric, P, y)
        picks: list[int] = []
        for _ in range(self.n_iter):
            available = None if self.replacement else counts == 0
            if limit is not None:
                fits = limit.fits()
                available = fits if available is None else available & fits
            if available is not None and not available.any():
                break
            scores = scorer(S, k, available)
            g = _gain(metric, scores)
            if available is not None:
                g[~available] = -np.inf
            j = int(np.argmax(g))
            counts[j] += 1
            S = S + P[j]
            k += 1
            picks.append(j)
            if limit is not None:
                limit.add([j])
            curve.append(float(scores[j]))  # the score of the ensemble just formed
        trajectory = np.asarray(curve)
        if not trajectory.size:  # nothing fits the cost limit
            return _Run(counts=counts, trajectory=trajectory, order=np.zeros(0, dtype=np.int64))
        best = int(np.argmax(_gain(metric, trajectory)))
        start = 1 if initialised else 0  # the first entry of the curve is the initial ensemble
        best_counts = init_counts + np.bincount(picks[: best + 1 - start], minlength=n)
        order = np.r_[
            np.flatnonzero(init_counts)[np.argsort(-gain[init_counts > 0], kind="stable")], picks
        ]
        return _Run(counts=best_counts, trajectory=trajectory, order=order.astype(np.int64))

    def _check_params(self) -> None:
        """Every parameter against ``_parameter_constraints`` (scikit-learn's
        InvalidParameterError, a ValueError naming the parameter and what it takes), and the
        metric's name."""
        params = {name: getattr(self, name) for name in self._parameter_constraints}
        validate_parameter_constraints(self._parameter_constraints, params, type(self).__name__)
        resolve_metric(self.metric)

    def _check_inputs(self, P, y) -> tuple[np.ndarray, np.ndarray, int | None]:
        """``(P, y, block_rows)``: P as float64 in memory and ``block_rows`` None, or, where
        its copies would exceed ``memory_budget``, P as given (memory-mapped, say) and the
        members to read at a time."""
        P = P if isinstance(P, np.ndarray) and P.dtype.kind == "f" else np.asarray(P, float)
        self._task_ = resolve_metric(self.metric).task
        if self._task_ == "regression":
            return self._check_regression_inputs(P, y)
        if P.ndim not in (2, 3):
            raise ValueError(
                "P must be (n_members, n_samples) positive-class probabilities or "
                f"(n_members, n_samples, n_classes); got shape {P.shape}"
            )
        if P.shape[0] == 0:
            raise ValueError("the library is empty: P has no members; build at least one model")
        self._ndim_, self._tail_ = P.ndim, P.shape[2:]
        memory = self.memory_budget if self.memory_budget is not None else _default_memory()
        self._memory_limit = memory
        streamed = P.size * COPY_BYTES > memory
        if not streamed:
            P = np.asarray(P, dtype=np.float64)
        P, n_classes = positive_class_layout(P, name="P")
        y = check_labels(y, n_classes, name="y")
        if len(y) != P.shape[1]:
            raise ValueError(
                f"P has {P.shape[1]} samples per member but y has {len(y)} labels; "
                "they must describe the same hillclimb cases"
            )
        row = int(np.prod(P.shape[1:]))
        block_rows = max(1, memory // (BLOCK_COPIES * 4 * row)) if streamed else None
        for start in range(0, len(P), block_rows or len(P)):
            check_probabilities(np.asarray(P[start : start + (block_rows or len(P))]), name="P")
        if len(np.unique(y)) < 2:
            raise ValueError(
                f"y holds a single class ({int(y[0]) if len(y) else 'none'}); "
                "selection needs cases of at least two classes"
            )
        return P, y, block_rows

    def _check_regression_inputs(self, P, y) -> tuple[np.ndarray, np.ndarray, int | None]:
        """``_check_inputs`` for a regression metric: real predictions (M, N), real targets."""
        if P.ndim != 2:
            raise ValueError(
                "a regression metric selects over real predictions P of shape "
                f"(n_members, n_samples); got shape {P.shape}"
            )
        if P.shape[0] == 0:
            raise ValueError("the library is empty: P has no members; build at least one model")
        self._ndim_, self._tail_ = 2, ()
        memory = self.memory_budget if self.memory_budget is not None else _default_memory()
        self._memory_limit = memory
        streamed = P.size * COPY_BYTES > memory
        if not streamed:
            P = np.asarray(P, dtype=np.float64)
        y = check_targets(y, name="y")
        if len(y) != P.shape[1]:
            raise ValueError(
                f"P has {P.shape[1]} samples per member but y has {len(y)} targets; "
                "they must describe the same hillclimb cases"
            )
        block_rows = max(1, memory // (BLOCK_COPIES * 4 * P.shape[1])) if streamed else None
        for start in range(0, len(P), block_rows or len(P)):
            check_predictions(np.asarray(P[start : start + (block_rows or len(P))]), name="P")
        return P, y, block_rows


class _CostLimit:
    """The predict-cost items one hillclimb has paid for (with those of earlier bags)
    against ``max_cost``."""

    def __init__(self, needs: np.ndarray, item_cost: np.ndarray, paid: np.ndarray, limit: float):
        self.needs = needs
        self.item_cost = item_cost
        self.paid = paid.copy()
        self.limit = limit * (1 + 1e-9)  # a member that exactly fills the limit fits

    def spent(self) -> float:
        return float(self.item_cost[self.paid].sum())

    def fits(self) -> np.ndarray:
        """Candidates whose extra items keep the cost within the limit."""
        extra = self.needs.astype(float) @ np.where(self.paid, 0.0, self.item_cost)
        return self.spent() + extra <= self.limit

    def add(self, members) -> None:
        self.paid |= self.needs[np.asarray(members)].any(axis=0)

    def fitting_prefix(self, order: np.ndarray) -> int:
        """How many of ``order``, taken in turn, fit together."""
        paid = self.paid.copy()
        for i, m in enumerate(order):
            paid |= self.needs[m]
            if self.item_cost[paid].sum() > self.limit:
                return i
        return len(order)


def cost_front(
    P,
    y,
    cost,
    budgets,
    **options,
) -> list[dict]:
    """The front of hillclimb score against predict cost: one :class:`EnsembleSelection`
    (``options`` as its parameters) per budget in ``budgets`` (``None`` for no budget), each
    row ``{"budget", "cost", "score", "n_members"}``. Budgets below the cheapest member are
    skipped."""
    cost = PredictCost.coerce(cost, len(P))
    cheapest = float(cost.member_cost().min())
    rows = []
    for budget in budgets:
        if budget is not None and budget < cheapest:
            continue
        es = EnsembleSelection(**options, max_cost=budget).fit(P, y, cost=cost)
        rows.append(
            {
                "budget": budget,
                "cost": es.cost_,
                "score": es.score_,
                "n_members": int((es.weights_ > 0).sum()),
            }
        )
    return rows


def _prefix_scores(
    metric: Metric, P, y: np.ndarray, order: np.ndarray, chunk_bytes: int
) -> np.ndarray:
    """Scores of the averages of the first 1, 2, ... members of ``order`` (sorted
    initialisation, §4.2.2), summed row after row and scored ``chunk_bytes`` at a time."""
    chunk = max(1, chunk_bytes // max(1, P[0].size * 8))
    scores = np.empty(len(order))
    S = np.zeros(P.shape[1:])
    for start in range(0, len(order), chunk):
        rows = P[order[start : start + chunk]]
        sums = np.empty((len(rows), *S.shape))
        for j, row in enumerate(rows):
            S = S + row
            sums[j] = S
        sizes = np.arange(start + 1, start + len(rows) + 1).reshape(-1, *([1] * S.ndim))
        scores[start : start + len(rows)] = metric.batch(y, sums / sizes)
    return scores


def _default_memory() -> int:
    """Half the memory available now (psutil where installed, else half the physical memory)."""
    try:
        import psutil

        return psutil.virtual_memory().available // 2
    except ImportError:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2


def _gain(metric: Metric, scores: np.ndarray) -> np.ndarray:
    """Scores turned so that larger is better."""
    return scores if metric.greater_is_better else -scores
