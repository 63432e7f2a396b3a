"""Numba kernels that score every candidate of one greedy selection step in a single pass.

Each kernel reads the library matrix ``P`` (float32, members x cases) once, adds each member to
the running ensemble sum ``S`` (float64) and scores the result ``(S + P[m]) / k1`` for every
member ``m`` in parallel. Rank metrics count positives and negatives per quantised score level
instead of sorting each candidate (see ``fill_histogram``).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

_JIT = {"cache": True, "nogil": True}


# --------------------------------------------------------------------------- threshold metrics


@njit(parallel=True, **_JIT)
def acc_binary(P, S, y, k1):  # pragma: no cover - compiled
    """Accuracy at threshold 0.5: ``S + P >= k1 / 2`` is the same test as ``mean >= 0.5``."""
    M, N = P.shape
    out = np.empty(M)
    half = 0.5 * k1
    for m in prange(M):
        c = 0
        for n in range(N):
            c += ((S[n] + P[m, n]) >= half) == y[n]
        out[m] = c / N
    return out


@njit(parallel=True, **_JIT)
def fsc_binary(P, S, y, k1, n_pos):  # pragma: no cover - compiled
    """F-score at threshold 0.5 (0 when nothing is predicted positive and no case is)."""
    M, N = P.shape
    out = np.empty(M)
    half = 0.5 * k1
    for m in prange(M):
        tp = 0
        pp = 0
        for n in range(N):
            hit = np.int64((S[n] + P[m, n]) >= half)
            pp += hit
            tp += hit * y[n]
        denom = pp + n_pos
        out[m] = 2.0 * tp / denom if denom > 0 else 0.0
    return out


@njit(inline="always", **_JIT)
def _argmax_class(P, S, m, n):  # pragma: no cover - compiled
    """Arg-max class of case ``n`` in candidate ``m``'s ensemble (first maximum wins)."""
    best = S[n, 0] + P[m, n, 0]
    arg = 0
    for c in range(1, P.shape[2]):
        v = S[n, c] + P[m, n, c]
        if v > best:
            best = v
            arg = c
    return arg


@njit(parallel=True, **_JIT)
def acc_multi(P, S, y):  # pragma: no cover - compiled
    """Multiclass accuracy of the arg-max class (first maximum wins, as np.argmax)."""
    M, N = P.shape[0], P.shape[1]
    out = np.empty(M)
    for m in prange(M):
        c_ok = 0
        for n in range(N):
            arg = _argmax_class(P, S, m, n)
            c_ok += arg == y[n]
        out[m] = c_ok / N
    return out


@njit(parallel=True, **_JIT)
def fsc_multi(P, S, y, class_counts):  # pragma: no cover - compiled
    """Macro F-score of the arg-max class over classes with ``class_counts > 0``."""
    M, N, C = P.shape
    out = np.empty(M)
    n_present = 0
    for c in range(C):
        n_present += class_counts[c] > 0
    for m in prange(M):
        tp = np.zeros(C, np.int64)
        pp = np.zeros(C, np.int64)
        for n in range(N):
            arg = _argmax_class(P, S, m, n)
            pp[arg] += 1
            tp[arg] += arg == y[n]
        total = 0.0
        for c in range(C):
            if class_counts[c] > 0:
                total += 2.0 * tp[c] / (pp[c] + class_counts[c])
        out[m] = total / n_present
    return out


# --------------------------------------------------------------------------- probability metrics


@njit(parallel=True, fastmath=True, **_JIT)
def mean_squared_error(P, a, inv):  # pragma: no cover - compiled
    """Mean of ``(a + P[m] * inv) ** 2`` per row, where ``a = S / k1 - target``."""
    M, N = P.shape
    out = np.empty(M)
    for m in prange(M):
        s = 0.0
        for n in range(N):
            d = a[n] + P[m, n] * inv
            s += d * d
        out[m] = s / N
    return out


@njit(parallel=True, fastmath=True, **_JIT)
def mean_absolute_error(P, a, inv):  # pragma: no cover - compiled
    """Mean of ``|a + P[m] * inv|`` per row, where ``a = S / k1 - target``."""
    M, N = P.shape
    out = np.empty(M)
    for m in prange(M):
        s = 0.0
        for n in range(N):
            s += abs(a[n] + P[m, n] * inv)
        out[m] = s / N
    return out


@njit(parallel=True, fastmath=True, **_JIT)
def mean_log_loss(P, offset, sign, inv, eps):  # pragma: no cover - compiled
    """Mean of ``-log(clip(offset + sign * P[m] * inv, eps, 1 - eps))`` per row.

    The probability of the true class is ``offset + sign * P * inv``. Sixteen clipped factors
    are multiplied before one log (each factor >= 1e-15, so the product stays above 1e-240 in
    float64): one log per sixteen cases instead of one per case.
    """
    M, N = P.shape
    out = np.empty(M)
    hi = 1.0 - eps
    for m in prange(M):
        total = 0.0
        n = 0
        while n < N:
            stop = min(n + 16, N)
            prod = 1.0
            for j in range(n, stop):
                v = offset[j] + sign[j] * (P[m, j] * inv)
                prod *= min(max(v, eps), hi)
            total += math.log(prod)
            n = stop
        out[m] = -total / N
    return out


# --------------------------------------------------------------------------- rank metrics


_DEBRUIJN = np.uint64(0x03F79D71B4CB0A89)
LOWEST_BIT_TABLE = np.zeros(64, np.int64)
for _i in range(64):  # wrap-around multiplication is the point of the de Bruijn trick
    _slot = (int(_DEBRUIJN) << _i) % (1 << 64) >> 58
    LOWEST_BIT_TABLE[_slot] = _i


@njit(inline="always", **_JIT)
def fill_histogram(Pm, S, y, scale, n_bins, idx, counts, bits, occupied, table):  # pragma: no cover
    """Count negatives (``counts[2b]``) and positives (``counts[2b + 1]``) per score level ``b``.

    Level ``b = floor((S + P) * scale)`` with ``scale = n_bins / k1`` quantises the candidate's
    mean prediction to ``n_bins`` equal steps of [0, 1]; cases in one level count as tied. The
    occupied levels are written to ``occupied`` in increasing order through a bitmap (64 levels
    a word, de Bruijn lowest-bit lookup), so later passes touch at most N levels, not n_bins.
    Returns the number of occupied levels; ``bits`` is left cleared.
    """
    N = S.shape[0]
    top = n_bins - 1
    for n in range(N):  # vectorisable: no stores that depend on data
        idx[n] = min(np.int64((S[n] + Pm[n]) * scale), top)
    for n in range(N):
        b = idx[n]
        counts[2 * b + y[n]] += 1
        bits[b >> 6] |= np.uint64(1) << np.uint64(b & 63)
    n_occ = 0
    one = np.uint64(1)
    for w in range(bits.shape[0]):
        word = bits[w]
        while word != 0:
            low = word & (~word + one)
            occupied[n_occ] = (w << 6) + table[(low * _DEBRUIJN) >> np.uint64(58)]
            n_occ += 1
            word ^= low
        bits[w] = 0
    return n_occ


@njit(inline="always", **_JIT)
def _roc_from_histogram(counts, occupied, n_occ, n_pos, n_neg):  # pragma: no cover - compiled
    """AUC with ties counted half; clears the histogram as it reads it."""
    below = 0
    twice = 0
    for i in range(n_occ):
        b = occupied[i]
        neg = counts[2 * b]
        pos = counts[2 * b + 1]
        twice += np.int64(pos) * (2 * below + neg)
        below += neg
        counts[2 * b] = 0
        counts[2 * b + 1] = 0
    return twice / (2.0 * n_pos * n_neg)


@njit(inline="always", **_JIT)
def _top_k_from_histogram(counts, occupied, n_occ, k):  # pragma: no cover - compiled
    """Expected positives among the ``k`` highest cases (ties shared); clears the histogram."""
    seen = 0
    seen_pos = 0
    result = -1.0
    for i in range(n_occ - 1, -1, -1):
        b = occupied[i]
        neg = counts[2 * b]
        pos = counts[2 * b + 1]
        h = pos + neg
        if result < 0.0 and seen + h >= k:
            result = seen_pos + (k - seen) * pos / h
        seen += h
        seen_pos += pos
        counts[2 * b] = 0
        counts[2 * b + 1] = 0
    return result


@njit(inline="always", **_JIT)
def _apr_from_histogram(counts, occupied, n_occ, n_pos, tp_buf, prec_buf):  # pragma: no cover
    """Eleven-point interpolated average precision; each occupied level is a threshold."""
    seen = 0
    seen_pos = 0
    n = 0
    for i in range(n_occ - 1, -1, -1):
        b = occupied[i]
        neg = counts[2 * b]
        pos = counts[2 * b + 1]
        seen += pos + neg
        seen_pos += pos
        tp_buf[n] = seen_pos
        prec_buf[n] = seen_pos / seen
        n += 1
        counts[2 * b] = 0
        counts[2 * b + 1] = 0
    for i in range(n - 2, -1, -1):  # best precision at this recall or beyond
        prec_buf[i] = max(prec_buf[i], prec_buf[i + 1])
    total = 0.0
    i = 0
    for level in range(11):
        while 10 * tp_buf[i] < level * n_pos:
            i += 1
        total += prec_buf[i]
    return total / 11.0


@njit(parallel=True, **_JIT)
def rank_binary(P, S, y, k1, kind, k_top, histograms, table):  # pragma: no cover
    """ROC (kind 0), expected top-k positives (kind 1: LFT/BEP) or APR (kind 2) per row.

    Rows are split into ``len(histograms)`` runs, each with its own zeroed histogram row of
    ``2 * n_bins`` counters (uint16 when N < 65536: half the cache footprint), run in parallel.
    ``n_bins`` must be a multiple of 64; ``table`` is ``LOWEST_BIT_TABLE``.
    """
    M, N = P.shape
    out = np.empty(M)
    n_pos = 0
    for n in range(N):
        n_pos += y[n]
    n_neg = N - n_pos
    n_chunks, n_bins = histograms.shape[0], histograms.shape[1] // 2
    scale = n_bins / k1
    for ch in prange(n_chunks):
        counts = histograms[ch]
        bits = np.zeros(n_bins // 64, np.uint64)
        idx = np.empty(N, np.int64)
        occupied = np.empty(N, np.int64)
        tp_buf = np.empty(N, np.int64)
        prec_buf = np.empty(N)
        for m in range(ch * M // n_chunks, (ch + 1) * M // n_chunks):
            n_occ = fill_histogram(P[m], S, y, scale, n_bins, idx, counts, bits, occupied, table)
            if kind == 0:
                out[m] = _roc_from_histogram(counts, occupied, n_occ, n_pos, n_neg)
            elif kind == 1:
                out[m] = _top_k_from_histogram(counts, occupied, n_occ, k_top)
            else:
                out[m] = _apr_from_histogram(counts, occupied, n_occ, n_pos, tp_buf, prec_buf)
    return out
