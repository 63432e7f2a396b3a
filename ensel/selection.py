"""Ensemble selection (dissertation §4.1-4.2, §4.3.6): greedy forward selection of library
members on cached hillclimb predictions, with replacement, sorted initialisation, bagging and
library pruning. Arrays in, weights out; the engine never trains a model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state

from ensel._candidates import candidate_scorer, exact_scorer, fast_available
from ensel.metrics import (
    Metric,
    check_labels,
    check_probabilities,
    positive_class_layout,
    resolve_metric,
)

__all__ = ["EnsembleSelection"]


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
    metric : one of ``ensel.metrics.METRICS``, a :class:`~ensel.metrics.Metric`, or a callable
        ``func(y_true, proba) -> float`` (maximised; see :func:`ensel.metrics.make_metric`).
    n_iter : greedy steps after initialisation (per bag).
    replacement : allow a member to be added more than once (§4.2.1).
    sorted_init : start from the best ``N`` members, ``N <= max_init`` chosen on the hillclimb
        set (§4.2.2).
    n_bags, bag_fraction : run ``n_bags`` selections, each over a random ``bag_fraction`` of the
        (pruned) library, and average their weights (§4.2.3). ``n_bags=1`` selects from the whole
        library.
    prune_fraction : only the best ``prune_fraction`` of members by the metric take part (§4.3.6;
        the dissertation finds 10-20% a good rule of thumb).
    exact : score candidates in float64 with exact sorting for the rank metrics. The default
        fast path scores in float32 and quantises rank metrics to ``RANK_BINS`` levels.
    random_state : seed for the bags.

    Attributes
    ----------
    weights_ : (n_members,) non-negative weights summing to one.
    bag_weights_ : (n_bags, n_members) the weights found by each bag.
    trajectory_ : hillclimb score of each ensemble in the nested sequence: the sorted
        initialisation (if any) and then each greedy step. Shape (L,) for ``n_bags == 1``,
        (n_bags, L) otherwise (NaN-padded where a bag stopped early without replacement).
    order_ : member indices in the order they joined the ensemble (initial members first), for
        the whole run, not only the returned prefix; a list of such arrays when ``n_bags > 1``.
    member_scores_ : (n_members,) hillclimb score of each member alone.
    score_ : hillclimb score of the returned ensemble.
    """

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
        self.random_state = random_state

    # ------------------------------------------------------------------ public API

    def fit(self, P, y) -> EnsembleSelection:
        """Select from ``P`` ((M, N) positive-class or (M, N, C) probabilities) against ``y``."""
        self._check_params()
        metric = resolve_metric(self.metric)
        P, y = self._check_inputs(P, y)
        rng = check_random_state(self.random_state)
        n_members = len(P)

        self.member_scores_ = exact_scorer(metric, P, y)(np.zeros(P.shape[1:]), 0)
        gain = _gain(metric, self.member_scores_)
        by_score = np.argsort(-gain, kind="stable")
        pool = np.sort(by_score[: max(1, math.ceil(self.prune_fraction * n_members))])

        # the fast kernels read float32: convert once, not once per bag
        work = P if self.exact or not fast_available(metric) else P.astype(np.float32)
        bagged = self.n_bags > 1
        bag_size = max(1, round(self.bag_fraction * len(pool))) if bagged else len(pool)
        bag_weights = np.zeros((self.n_bags, n_members))
        curves, orders = [], []
        for b in range(self.n_bags):
            members = np.sort(rng.choice(pool, bag_size, replace=False)) if bagged else pool
            run = self._hillclimb(metric, work[members], y, gain[members])
            bag_weights[b, members] = run.counts / run.counts.sum()
            curves.append(run.trajectory)
            orders.append(members[run.order])

        self.bag_weights_ = bag_weights
        self.weights_ = bag_weights.mean(axis=0)
        width = max(len(c) for c in curves)
        padded = np.full((self.n_bags, width), np.nan)
        for b, c in enumerate(curves):
            padded[b, : len(c)] = c
        self.trajectory_ = padded[0] if self.n_bags == 1 else padded
        self.order_ = orders[0] if self.n_bags == 1 else orders
        self.score_ = float(metric.batch(y, self._blend(P)[None])[0])
        self.n_members_ = n_members
        return self

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
        check_probabilities(P, name="P")
        return self._blend(P)

    # ------------------------------------------------------------------ internals

    def _blend(self, P: np.ndarray) -> np.ndarray:
        used = np.flatnonzero(self.weights_)
        return np.tensordot(self.weights_[used], P[used], axes=1)

    def _hillclimb(self, metric: Metric, P: np.ndarray, y: np.ndarray, gain: np.ndarray) -> _Run:
        """Forward selection over the rows of P; returns the best prefix (§4.1 step 4)."""
        n = len(P)
        counts = np.zeros(n, dtype=np.int64)
        S = np.zeros(P.shape[1:])
        k = 0
        curve: list[float] = []
        if self.sorted_init:
            best_first = np.argsort(-gain, kind="stable")[: min(self.max_init, n)]
            sizes = np.arange(1, len(best_first) + 1).reshape(-1, *([1] * (P.ndim - 1)))
            sums = np.cumsum(P[best_first], axis=0, dtype=np.float64)
            init_scores = metric.batch(y, sums / sizes)
            k = int(np.argmax(_gain(metric, init_scores))) + 1
            counts[best_first[:k]] = 1
            S = sums[k - 1]
            curve.append(float(init_scores[k - 1]))
        init_counts = counts.copy()
        scorer = candidate_scorer(metric, P, y, self.exact)
        picks: list[int] = []
        for _ in range(self.n_iter):
            available = None if self.replacement else counts == 0
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
            curve.append(float(scores[j]))  # the score of the ensemble just formed
        trajectory = np.asarray(curve)
        best = int(np.argmax(_gain(metric, trajectory)))
        start = 1 if self.sorted_init else 0  # the first entry of the curve is the initial ensemble
        best_counts = init_counts + np.bincount(picks[: best + 1 - start], minlength=n)
        order = np.r_[
            np.flatnonzero(init_counts)[np.argsort(-gain[init_counts > 0], kind="stable")], picks
        ]
        return _Run(counts=best_counts, trajectory=trajectory, order=order.astype(np.int64))

    def _check_params(self) -> None:
        def check(name: str, ok: bool, allowed: str) -> None:
            if not ok:
                raise ValueError(f"{name} must be {allowed}; got {getattr(self, name)!r}")

        def is_int(v) -> bool:
            return isinstance(v, Integral) and not isinstance(v, bool)

        check("n_iter", is_int(self.n_iter) and self.n_iter >= 1, "an integer >= 1")
        check("max_init", is_int(self.max_init) and self.max_init >= 1, "an integer >= 1")
        check("n_bags", is_int(self.n_bags) and self.n_bags >= 1, "an integer >= 1")
        for name in ("bag_fraction", "prune_fraction"):
            v = getattr(self, name)
            check(name, isinstance(v, Real) and 0.0 < v <= 1.0, "a fraction in (0, 1]")

    def _check_inputs(self, P, y) -> tuple[np.ndarray, np.ndarray]:
        P = np.asarray(P, dtype=np.float64)
        if P.ndim not in (2, 3):
            raise ValueError(
                "P must be (n_members, n_samples) positive-class probabilities or "
                f"(n_members, n_samples, n_classes); got shape {P.shape}"
            )
        if P.shape[0] == 0:
            raise ValueError("the library is empty: P has no members; build at least one model")
        self._ndim_, self._tail_ = P.ndim, P.shape[2:]
        P, n_classes = positive_class_layout(P, name="P")
        y = check_labels(y, n_classes, name="y")
        if len(y) != P.shape[1]:
            raise ValueError(
                f"P has {P.shape[1]} samples per member but y has {len(y)} labels; "
                "they must describe the same hillclimb cases"
            )
        check_probabilities(P, name="P")
        if len(np.unique(y)) < 2:
            raise ValueError(
                f"y holds a single class ({int(y[0]) if len(y) else 'none'}); "
                "selection needs cases of at least two classes"
            )
        return P, y


def _gain(metric: Metric, scores: np.ndarray) -> np.ndarray:
    """Scores turned so that larger is better."""
    return scores if metric.greater_is_better else -scores
