"""Scores of all candidate ensembles of one greedy step: ``(S + P[m]) / (k + 1)`` for every m.

Two implementations share one interface, ``scorer(S, k, available) -> (M,) scores``, where
``available`` (a boolean mask, or None for all) marks the members that may still be added:
- exact: float64, the batch metrics of :mod:`ensel.metrics` over chunks of candidates (used for
  ``exact=True``, user metrics, and when numba is missing);
- fast: float32 matrix, one numba pass per step (:mod:`ensel._kernels`); rank metrics (ROC,
  LFT, BEP, APR) quantise the candidate's mean prediction to ``RANK_BINS`` levels instead of
  sorting, with per-candidate bounds on the exact score, and score exactly every candidate whose
  bound reaches the best exact score found: each pick rests on exact scores.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np

from ensel.metrics import EPS, LIFT_FRACTION, Metric

try:  # numba is a dependency, but keep the engine usable (slower) without it
    import numba

    from ensel import _kernels
except ImportError:  # pragma: no cover - exercised only where numba is not installed
    _kernels = None

log = logging.getLogger(__name__)

RANK_BINS = 1 << 12
"""Most score levels for fast rank metrics (fewer when N is small, see ``rank_bins``): their
counters stay in the L1 cache and are read in order. The levels only decide which candidates
are scored exactly, not the pick."""
SERIAL_BELOW = 1 << 20
"""Matrices smaller than this are scored on one thread: a step then takes microseconds, and
waking a second thread costs more (much more when another process holds the other core)."""
REFINE = 8
"""Fast rank metrics score finalists exactly this many at a time, best upper bound first."""
RANK_KERNELS = {"roc": 0, "lft": 1, "bep": 1, "apr": 2}
"""Metrics whose fast kernel quantises scores (and so needs exact finalists), by kernel kind;
LFT is a threshold metric in the dissertation's grouping (App. 4.C), but its top 25% is a rank
cut, scored like BEP."""
BOUND_SLACK = 1e-12
"""Added to every upper bound: the bounds' own float64 rounding is far below it."""
CHUNK_BYTES = 64 << 20
"""Exact scoring works on chunks of candidates of about this many bytes."""

StepScorer = Callable[[np.ndarray, int, np.ndarray | None], np.ndarray]
"""``scorer(S, k, available)``: scores of every candidate; unavailable ones may hold NaN."""


def rank_bins(n_cases: int, kind: int) -> int:
    """Score levels of the rank kernel ``kind`` (0 ROC, 1 top-k, 2 APR) for ``n_cases``.

    Fewer levels make each candidate's pass over them cheaper but its bounds looser, so more
    finalists are scored exactly, and more so as the ensemble grows and candidates draw close.
    ROC's bound (the pairs sharing a level) loosens fastest: it keeps about one level per case
    (up to ``RANK_BINS``); LFT, BEP and APR take about two cases per level (up to half of it).
    Halving ROC's levels makes the early steps faster but the later ones, where candidates
    draw close, dearer; LFT, BEP and APR gain from half as many levels, and APR loses again
    late in a selection from a quarter."""
    if kind == 0:
        levels, cap = 1 << int(np.ceil(np.log2(max(n_cases, 2)))), RANK_BINS
    else:
        levels, cap = 1 << int(np.round(np.log2(max(n_cases, 2) / 2))), RANK_BINS // 2
    return int(min(cap, max(64, levels)))


class exact_scorer:
    """Score candidates with the exact float64 batch metric, a chunk of members at a time."""

    def __init__(
        self, metric: Metric, P: np.ndarray, y: np.ndarray, chunk_bytes: int = CHUNK_BYTES
    ):
        self.metric, self.P, self.y = metric, P, y
        self.chunk = max(1, chunk_bytes // max(1, int(np.prod(P.shape[1:])) * 8))

    def __call__(self, S: np.ndarray, k: int, available: np.ndarray | None = None) -> np.ndarray:
        if available is None:
            return self.rows(S, k, np.arange(len(self.P)))
        out = np.full(len(self.P), np.nan)
        out[available] = self.rows(S, k, np.flatnonzero(available))
        return out

    def rows(self, S: np.ndarray, k: int, members: np.ndarray) -> np.ndarray:
        """Scores of the candidates ``members`` only."""
        out = np.empty(len(members))
        for start in range(0, len(members), self.chunk):
            block = members[start : start + self.chunk]
            Q = (S + self.P[block].astype(np.float64)) / (k + 1)
            out[start : start + self.chunk] = self.metric.batch(self.y, Q)
        return out


def fast_available(metric: Metric) -> bool:
    """True if ``metric`` has a compiled kernel here."""
    return _kernels is not None and metric.kind != "custom"


def quantised(metric: Metric) -> bool:
    """True if the fast kernel of ``metric`` scores on quantised levels (rank kernels)."""
    return (
        metric.kind != "custom" and metric.task == "classification" and metric.name in RANK_KERNELS
    )


def fast_scorer(metric: Metric, P: np.ndarray, y: np.ndarray) -> StepScorer:
    """Score candidates with the compiled kernels; ``P`` is converted to float32 once.

    Rank kernels (ROC, LFT, BEP, APR) give each candidate a quantised score and the least and
    most its exact score can be; candidates are then scored exactly (the same float64 numbers
    as :mod:`ensel.metrics`, on the same float32 predictions), best upper bound first, until no
    candidate left can reach the best exact score. The pick is the one exact scoring of every
    candidate would make; the others keep their quantised scores, capped strictly below every
    exact one.
    """
    P = np.ascontiguousarray(P, dtype=np.float32)
    if not quantised(metric):
        return _approx(metric, P, y)
    return _refined(metric, _approx(metric, P, y), _exact_rows(metric, P, y))


def _approx(metric: Metric, P: np.ndarray, y: np.ndarray) -> StepScorer:
    """The compiled kernel's scores of every row of the float32 matrix ``P`` (for rank kernels,
    a tuple ``(estimate, low, high)``)."""
    if metric.task == "regression":
        approx = _regression(metric.name, P, y)
    elif P.ndim == 2:
        approx = _binary(metric.name, P, y.astype(np.bool_))
    else:
        approx = _multiclass(metric.name, P, y)
    if P.size < SERIAL_BELOW:
        approx = _serial(approx)
    return lambda S, k, available=None: approx(S, k)


def _exact_rows(metric: Metric, P: np.ndarray, y: np.ndarray, chunk_bytes: int = CHUNK_BYTES):
    """``rows(S, k, members)``: exact scores of some candidates; compiled for binary rank
    metrics (one sort per candidate), the batch metric otherwise."""
    if P.ndim == 3 or metric.name not in RANK_KERNELS:
        return exact_scorer(metric, P, y).rows
    y8 = y.astype(np.int8)
    kind = RANK_KERNELS[metric.name]
    n_pos = int(y8.sum())
    top, divide = {
        "roc": (0.0, None),
        "lft": (LIFT_FRACTION * len(y), lambda v: v / n_pos / LIFT_FRACTION),
        "bep": (float(n_pos), lambda v: v / float(n_pos)),
        "apr": (0.0, None),
    }[metric.name]

    def rows(S: np.ndarray, k: int, members: np.ndarray) -> np.ndarray:
        if not isinstance(P, RowView):
            out = _kernels.rank_exact(P, members.astype(np.int64), S, y8, float(k + 1), kind, top)
        else:  # read the finalists' rows a chunk at a time
            step = max(1, chunk_bytes // (4 * len(y)))
            out = np.concatenate([
                _kernels.rank_exact(
                    np.ascontiguousarray(P[part], dtype=np.float32), np.arange(len(part)), S, y8,
                    float(k + 1), kind, top,
                )
                for part in np.array_split(members, range(step, len(members), step))
            ])  # fmt: skip
        return out if divide is None else divide(out)

    return rows


def _refined(metric: Metric, bounds: StepScorer, exact_rows) -> StepScorer:
    """Rank metrics: exact scores for every candidate whose upper bound reaches the best exact
    score (branch and bound, ``REFINE`` candidates at a time); the rest capped below them."""
    sign = 1.0 if metric.greater_is_better else -1.0

    def refined(S: np.ndarray, k: int, available: np.ndarray | None = None) -> np.ndarray:
        estimate, low, high = bounds(S, k)
        gain = sign * estimate
        upper = sign * (high if sign > 0 else low) + BOUND_SLACK
        if available is not None:
            gain[~available] = -np.inf
            upper[~available] = -np.inf
        by_upper = np.argsort(-upper, kind="stable")
        lower = sign * (low if sign > 0 else high)
        # the first batch: every candidate whose upper bound reaches the best lower bound (one
        # parallel call), at least REFINE
        size = max(REFINE, int((upper >= lower[np.isfinite(upper)].max()).sum()))
        best, at = -np.inf, 0
        scored, exact_gain = [], []
        while at < len(by_upper) and upper[by_upper[at]] >= best:
            batch = by_upper[at : at + size]
            batch = np.sort(batch[(upper[batch] >= best) & np.isfinite(upper[batch])])
            at += size
            size = REFINE
            if len(batch):
                scored.append(batch)
                exact_gain.append(sign * exact_rows(S, k, batch))
                best = max(best, float(exact_gain[-1].max()))
        scored, exact_gain = np.concatenate(scored), np.concatenate(exact_gain)
        np.minimum(gain, np.nextafter(exact_gain.min(), -np.inf), out=gain)
        gain[scored] = exact_gain
        return sign * gain

    return refined


class RowView:
    """Rows ``index`` of ``base`` (a memory-mapped matrix, say), read only when asked for, less
    ``shift``, converted to ``dtype``: a bag of a large library without a copy of it."""

    def __init__(self, base: np.ndarray, index: np.ndarray, dtype, shift: float = 0.0) -> None:
        self.base, self.index, self.dtype = base, np.asarray(index), np.dtype(dtype)
        self.shift = shift
        self.shape = (len(self.index), *base.shape[1:])
        self.ndim = base.ndim

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, key) -> np.ndarray:
        rows = self.base[self.index[key]]
        if self.shift:
            rows = np.asarray(rows, dtype=np.float64) - self.shift
        return np.asarray(rows, dtype=self.dtype)


def streamed_scorer(
    metric: Metric, rows: RowView, y: np.ndarray, exact: bool, block_rows: int, chunk_bytes: int
) -> StepScorer:
    """``candidate_scorer`` over rows read ``block_rows`` at a time by the kernels and
    ``chunk_bytes`` at a time by exact scoring: the same score for every candidate (each is
    scored on its own row alone), in bounded memory."""
    if exact or not fast_available(metric):
        return exact_scorer(metric, rows, y, chunk_bytes)
    starts = range(0, len(rows), block_rows)
    ranked = quantised(metric)

    def approx(S: np.ndarray, k: int, available: np.ndarray | None = None):
        out = np.empty((3 if ranked else 1, len(rows)))
        for start in starts:
            block = np.ascontiguousarray(rows[start : start + block_rows], dtype=np.float32)
            out[:, start : start + len(block)] = _approx(metric, block, y)(S, k)
        return tuple(out) if ranked else out[0]

    if not ranked:
        return approx
    if rows.ndim == 3:
        return _refined(metric, approx, exact_scorer(metric, rows, y, chunk_bytes).rows)
    return _refined(metric, approx, _exact_rows(metric, rows, y, chunk_bytes))


def candidate_scorer(metric: Metric, P: np.ndarray, y: np.ndarray, exact: bool) -> StepScorer:
    """The fast scorer where possible, else the exact one."""
    if exact or not fast_available(metric):
        if not exact and metric.kind != "custom":
            log.warning("numba is not installed: selection falls back to exact numpy scoring")
        return exact_scorer(metric, P, y)
    return fast_scorer(metric, P, y)


def _serial(scorer: StepScorer) -> StepScorer:
    def run(S: np.ndarray, k: int) -> np.ndarray:
        threads = numba.get_num_threads()
        numba.set_num_threads(1)
        try:
            return scorer(S, k)
        finally:
            numba.set_num_threads(threads)

    return run


def _binary(name: str, P: np.ndarray, y: np.ndarray) -> StepScorer:
    k = _kernels
    yi = y.astype(np.int64)
    n_pos = int(yi.sum())
    if name == "acc":
        return lambda S, n: k.acc_binary(P, S, y, float(n + 1))
    if name == "fsc":
        return lambda S, n: k.fsc_binary(P, S, y, float(n + 1), n_pos)
    if name == "rms":
        return lambda S, n: np.sqrt(k.mean_squared_error(P, S / (n + 1) - yi, 1.0 / (n + 1)))
    if name == "mxe":
        sign = np.where(y, 1.0, -1.0)

        def mxe(S: np.ndarray, n: int) -> np.ndarray:
            inv = 1.0 / (n + 1)
            offset = np.where(y, S * inv, 1.0 - S * inv)
            return k.mean_log_loss(P, offset, sign, inv, EPS)

        return mxe
    kind, top, divisor = {
        "roc": (0, 0.0, 1.0),
        "lft": (1, LIFT_FRACTION * len(y), n_pos * LIFT_FRACTION),
        "bep": (1, float(n_pos), float(n_pos)),
        "apr": (2, 0.0, 1.0),
    }[name]
    y8 = y.astype(np.int8)
    n_chunks = min(len(P), 4 * numba.get_num_threads())
    counter = np.uint16 if len(y) < (1 << 16) else np.int64
    n_bins = rank_bins(len(y), kind)
    histograms = np.zeros((n_chunks, 2 * n_bins), counter)  # kernels leave them zeroed

    def ranks(S: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        scores = k.rank_binary(P, S, y8, float(n + 1), kind, top, histograms)
        return tuple(v / divisor for v in scores)

    return ranks


def _regression(name: str, P: np.ndarray, y: np.ndarray) -> StepScorer:
    """RMSE and R² from one squared-error pass (R² = 1 - MSE / Var(y)), MAE from an absolute-error
    pass; the residual ``S / k1 - y`` is formed once per step in float64."""
    k = _kernels
    y = np.asarray(y, dtype=np.float64)
    if name == "mae":
        return lambda S, n: k.mean_absolute_error(P, S / (n + 1) - y, 1.0 / (n + 1))
    mse = lambda S, n: k.mean_squared_error(P, S / (n + 1) - y, 1.0 / (n + 1))  # noqa: E731
    if name == "rmse":
        return lambda S, n: np.sqrt(mse(S, n))
    if name == "r2":
        if y.min() == y.max():  # the metric's own rule for a constant target (on the values)
            return lambda S, n: np.where(mse(S, n) == 0.0, 1.0, 0.0)
        var = float(y.var())
        return lambda S, n: 1.0 - mse(S, n) / var
    raise ValueError(f"no compiled kernel for regression metric {name!r}")


def _multiclass(name: str, P: np.ndarray, y: np.ndarray) -> StepScorer:
    k = _kernels
    M, N, C = P.shape
    if name == "acc":
        return lambda S, n: k.acc_multi(P, S, y)
    if name == "fsc":
        counts = np.bincount(y, minlength=C).astype(np.int64)
        return lambda S, n: k.fsc_multi(P, S, y, counts)
    if name == "rms":
        flat = P.reshape(M, N * C)
        onehot = np.eye(C)[y].ravel()
        return lambda S, n: np.sqrt(
            k.mean_squared_error(flat, S.ravel() / (n + 1) - onehot, 1 / (n + 1))
        )
    if name == "mxe":
        rows = np.arange(N)
        true_col = np.ascontiguousarray(P[:, rows, y])
        sign = np.ones(N)
        return lambda S, n: k.mean_log_loss(true_col, S[rows, y] / (n + 1), sign, 1 / (n + 1), EPS)
    # rank metrics: macro average of one-vs-rest binary scorers on contiguous class columns
    # (and of their bounds)
    per_class = [(c, _binary(name, np.ascontiguousarray(P[:, :, c]), y == c)) for c in np.unique(y)]

    def ranks(S: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        parts = [score(np.ascontiguousarray(S[:, c]), n) for c, score in per_class]
        return tuple(np.mean([p[i] for p in parts], axis=0) for i in range(3))

    return ranks
