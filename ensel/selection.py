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

import numpy as np
from sklearn.utils import check_random_state

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

__all__ = ["EnsembleSelection"]

COPY_BYTES = 16
"""Bytes per prediction of the in-memory path's copies: float64, float32, and a bag."""
BLOCK_COPIES = 3
"""A streamed block is held about this many times over (its float32 copy and the kernels'
temporaries)."""


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
        A regression metric (``ensel.metrics.REGRESSION_METRICS``: rmse, mae, r2, or a Metric
        with ``task="regression"``) selects over real predictions ``P`` (M, N) against real
        targets ``y``.
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
    memory_budget : bytes the selection may use for copies of ``P`` (None: half the memory
        available now). Where the copies the in-memory path makes (float64 and float32, about
        16 bytes per prediction) would exceed it, ``P`` (a memory-mapped ``Library.predictions``,
        say) is read a block of members at a time instead; the result is the same.
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
    streamed_ : True if ``P`` was read a block at a time (it exceeded ``memory_budget``).
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
        memory_budget: int | None = None,
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
        self.random_state = random_state

    # ------------------------------------------------------------------ public API

    def fit(self, P, y) -> EnsembleSelection:
        """Select from ``P`` ((M, N) positive-class or (M, N, C) probabilities, or (M, N) real
        predictions for a regression metric) against ``y``."""
        self._check_params()
        metric = resolve_metric(self.metric)
        P, y, block_rows = self._check_inputs(P, y)
        rng = check_random_state(self.random_state)
        n_members = len(P)

        # exact scoring reads this much of P at a time (the rank metrics' temporaries take
        # about twenty times as much)
        chunk_bytes = CHUNK_BYTES if block_rows is None else max(1, self._budget // 32)
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
            run = self._hillclimb(metric, rows, y_work, gain[members], scorer_of, chunk_bytes)
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
        self.score_ = float(metric.batch(y, self._blend(P, chunk_bytes)[None])[0])
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
        row after row: the same numbers whether ``P`` is in memory or read in blocks."""
        used = np.flatnonzero(self.weights_)
        chunk = max(1, chunk_bytes // max(1, P[0].size * 8))
        total = np.zeros(P.shape[1:])
        for start in range(0, len(used), chunk):
            rows = used[start : start + chunk]
            for w, row in zip(self.weights_[rows], np.asarray(P[rows], np.float64), strict=True):
                total += w * row
        return total

    def _hillclimb(
        self,
        metric: Metric,
        P,
        y: np.ndarray,
        gain: np.ndarray,
        scorer_of: Callable,
        chunk_bytes: int,
    ) -> _Run:
        """Forward selection over the rows of P; returns the best prefix (§4.1 step 4)."""
        n = len(P)
        counts = np.zeros(n, dtype=np.int64)
        S = np.zeros(P.shape[1:])
        k = 0
        curve: list[float] = []
        if self.sorted_init:
            best_first = np.argsort(-gain, kind="stable")[: min(self.max_init, n)]
            init_scores = _prefix_scores(metric, P, y, best_first, chunk_bytes)
            k = int(np.argmax(_gain(metric, init_scores))) + 1
            counts[best_first[:k]] = 1
            for row in P[best_first[:k]]:
                S = S + row  # the same sequential sum as the prefix scores'
            curve.append(float(init_scores[k - 1]))
        init_counts = counts.copy()
        scorer = scorer_of(metric, P, y)
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

        check(
            "memory_budget",
            self.memory_budget is None or (is_int(self.memory_budget) and self.memory_budget >= 1),
            "None or a number of bytes >= 1",
        )
        check("n_iter", is_int(self.n_iter) and self.n_iter >= 1, "an integer >= 1")
        check("max_init", is_int(self.max_init) and self.max_init >= 1, "an integer >= 1")
        check("n_bags", is_int(self.n_bags) and self.n_bags >= 1, "an integer >= 1")
        for name in ("bag_fraction", "prune_fraction"):
            v = getattr(self, name)
            check(name, isinstance(v, Real) and 0.0 < v <= 1.0, "a fraction in (0, 1]")

    def _check_inputs(self, P, y) -> tuple[np.ndarray, np.ndarray, int | None]:
        """``(P, y, block_rows)``: P as float64 in memory and ``block_rows`` None, or, where
        its copies would exceed the memory budget, P as given (memory-mapped, say) and the
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
        budget = self.memory_budget if self.memory_budget is not None else _default_budget()
        self._budget = budget
        streamed = P.size * COPY_BYTES > budget
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
        block_rows = max(1, budget // (BLOCK_COPIES * 4 * row)) if streamed else None
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
        budget = self.memory_budget if self.memory_budget is not None else _default_budget()
        self._budget = budget
        streamed = P.size * COPY_BYTES > budget
        if not streamed:
            P = np.asarray(P, dtype=np.float64)
        y = check_targets(y, name="y")
        if len(y) != P.shape[1]:
            raise ValueError(
                f"P has {P.shape[1]} samples per member but y has {len(y)} targets; "
                "they must describe the same hillclimb cases"
            )
        block_rows = max(1, budget // (BLOCK_COPIES * 4 * P.shape[1])) if streamed else None
        for start in range(0, len(P), block_rows or len(P)):
            check_predictions(np.asarray(P[start : start + (block_rows or len(P))]), name="P")
        return P, y, block_rows


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


def _default_budget() -> int:
    """Half the memory available now (psutil where installed, else half the physical memory)."""
    try:
        import psutil

        return psutil.virtual_memory().available // 2
    except ImportError:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2


def _gain(metric: Metric, scores: np.ndarray) -> np.ndarray:
    """Scores turned so that larger is better."""
    return scores if metric.greater_is_better else -scores
