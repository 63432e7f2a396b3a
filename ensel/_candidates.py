"""Scores of all candidate ensembles of one greedy step: ``(S + P[m]) / (k + 1)`` for every m.

Two implementations share one interface, ``scorer(S, k, available) -> (M,) scores``, where
``available`` (a boolean mask, or None for all) marks the members that may still be added:
- exact: float64, the batch metrics of :mod:`ensel.metrics` over chunks of candidates (used for
  ``exact=True``, user metrics, and when numba is missing);
- fast: float32 matrix, one numba pass per step (:mod:`ensel._kernels`); rank metrics quantise
  the candidate's mean prediction to ``RANK_BINS`` levels instead of sorting.
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

RANK_BINS = 1 << 14
"""Score levels for fast rank metrics: steps of 6e-5 in probability (tests/test_selection.py
shows selections identical to exact sorting on realistic libraries)."""
SERIAL_BELOW = 1 << 20
"""Matrices smaller than this are scored on one thread: a step then takes microseconds, and
waking a second thread costs more (much more when another process holds the other core)."""
REFINE = 8
"""Fast rank metrics re-score this many best candidates per step by exact sorting."""
CHUNK_BYTES = 64 << 20
"""Exact scoring works on chunks of candidates of about this many bytes."""

StepScorer = Callable[[np.ndarray, int, np.ndarray | None], np.ndarray]
"""``scorer(S, k, available)``: scores of every candidate; unavailable ones may hold NaN."""


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


def fast_scorer(metric: Metric, P: np.ndarray, y: np.ndarray) -> StepScorer:
    """Score candidates with the compiled kernels; ``P`` is converted to float32 once.

    For rank metrics the ``REFINE`` best available candidates by the quantised score are scored
    again by exact sorting (of the same float32 predictions), so the step's decision and the
    chosen candidate's score do not rest on the quantisation; the other candidates keep their
    quantised scores, capped strictly below every refined one.
    """
    P = np.ascontiguousarray(P, dtype=np.float32)
    approx = _approx(metric, P, y)
    return _refined(metric, approx, exact_scorer(metric, P, y)) if metric.kind == "rank" else approx


def _approx(metric: Metric, P: np.ndarray, y: np.ndarray) -> StepScorer:
    """The compiled kernel's scores of every row of the float32 matrix ``P``."""
    if metric.task == "regression":
        approx = _regression(metric.name, P, y)
    elif P.ndim == 2:
        approx = _binary(metric.name, P, y.astype(np.bool_))
    else:
        approx = _multiclass(metric.name, P, y)
    if P.size < SERIAL_BELOW:
        approx = _serial(approx)
    return lambda S, k, available=None: approx(S, k)


def _refined(metric: Metric, approx: StepScorer, exact: exact_scorer) -> StepScorer:
    """Rank metrics: the ``REFINE`` best available candidates re-scored exactly."""
    sign = 1.0 if metric.greater_is_better else -1.0

    def refined(S: np.ndarray, k: int, available: np.ndarray | None = None) -> np.ndarray:
        gain = sign * approx(S, k)
        if available is not None:
            gain[~available] = -np.inf
        best = np.sort(np.argsort(-gain, kind="stable")[:REFINE])
        exact_gain = sign * exact.rows(S, k, best)
        np.minimum(gain, np.nextafter(exact_gain.min(), -np.inf), out=gain)
        gain[best] = exact_gain
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

    def approx(S: np.ndarray, k: int, available: np.ndarray | None = None) -> np.ndarray:
        out = np.empty(len(rows))
        for start in starts:
            block = np.ascontiguousarray(rows[start : start + block_rows], dtype=np.float32)
            out[start : start + len(block)] = _approx(metric, block, y)(S, k)
        return out

    if metric.kind != "rank":
        return approx
    return _refined(metric, approx, exact_scorer(metric, rows, y, chunk_bytes))


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
    histograms = np.zeros((n_chunks, 2 * RANK_BINS), counter)  # kernels leave them zeroed
    table = k.LOWEST_BIT_TABLE
    return lambda S, n: (
        k.rank_binary(P, S, y8, float(n + 1), kind, top, histograms, table) / divisor
    )


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
        var = float(y.var())
        if var == 0.0:  # the metric's own rule for a constant target
            return lambda S, n: np.where(mse(S, n) == 0.0, 1.0, 0.0)
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
    per_class = [(c, _binary(name, np.ascontiguousarray(P[:, :, c]), y == c)) for c in np.unique(y)]
    return lambda S, n: np.mean(
        [score(np.ascontiguousarray(S[:, c]), n) for c, score in per_class], axis=0
    )
