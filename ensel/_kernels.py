"""Numba kernels that score every candidate of one greedy selection step in a single pass.

Each kernel reads the library matrix ``P`` (float32, members x cases) once, adds each member to
the running ensemble sum ``S`` (float64) and scores the result ``(S + P[m]) / k1`` for every
member ``m`` in parallel. Rank metrics count positives and negatives per quantised score level
instead of sorting each candidate (see ``fill_histogram``), with bounds on the exact score;
``rank_exact`` scores the finalists exactly (a counting sort, then each level sorted).
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


@njit(inline="always", **_JIT)
def fill_histogram(Pm, S, y, k1, n_bins, idx, counts):  # pragma: no cover - compiled
    """Count negatives (``counts[2b]``) and positives (``counts[2b + 1]``) per score level ``b``
    (interleaved, so one level's two counters share a cache line).

    Level ``b = floor(q * n_bins)`` of the candidate's mean prediction ``q = (S + P) / k1``,
    computed exactly as the float64 exact scorer computes it, so levels are monotone in the
    values that scorer sorts: cases in different levels are ordered as it orders them, and only
    cases sharing a level can be misordered. ``n_bins`` is at most a few thousand (the counters
    stay in the L1 cache), so later passes read every level in order.
    """
    N = S.shape[0]
    top = n_bins - 1
    for n in range(N):  # vectorisable: no stores that depend on data
        idx[n] = min(np.int64((S[n] + Pm[n]) / k1 * n_bins), top)
    for n in range(N):
        counts[2 * idx[n] + y[n]] += 1


@njit(inline="always", **_JIT)
def _roc_from_histogram(counts, n_bins, n_pos, n_neg, bound):  # pragma: no cover - compiled
    """AUC with the cases of one level counted as tied; clears the histogram as it reads it.

    ``bound[0]`` gets the largest possible error: half the positive-negative pairs that share a
    level (the exact order counts each 0, 1/2 or 1; the levels count it 1/2).
    """
    below = 0
    twice = 0
    mixed = 0
    for b in range(n_bins):
        neg = counts[2 * b]
        pos = counts[2 * b + 1]
        twice += np.int64(pos) * (2 * below + neg)
        mixed += np.int64(pos) * neg
        below += neg
        counts[2 * b] = 0
        counts[2 * b + 1] = 0
    bound[0] = mixed / (2.0 * n_pos * n_neg)
    return twice / (2.0 * n_pos * n_neg)


@njit(inline="always", **_JIT)
def _top_k_from_histogram(counts, n_bins, k, bound):  # pragma: no cover - compiled
    """Expected positives among the ``k`` highest cases (a level's cases shared as ties); clears
    the histogram. ``bound`` gets the least and most positives the exact order can put there:
    only the level that straddles the cut is uncertain."""
    seen = 0
    seen_pos = 0
    result = -1.0
    for b in range(n_bins - 1, -1, -1):
        neg = counts[2 * b]
        pos = counts[2 * b + 1]
        h = pos + neg
        if result < 0.0 and h > 0 and seen + h >= k:
            need = k - seen
            result = seen_pos + need * pos / h
            bound[0] = seen_pos + max(0.0, need - neg)
            bound[1] = seen_pos + min(float(pos), need)
        seen += h
        seen_pos += pos
        counts[2 * b] = 0
        counts[2 * b + 1] = 0
    return result


@njit(inline="always", **_JIT)
def _apr_from_histogram(counts, n_bins, N, n_pos, interp, bound):  # pragma: no cover
    """Eleven-point interpolated average precision with one threshold per level; clears the
    histogram. The exact order has these thresholds and more, so this is a lower bound;
    ``bound[0]`` gets an upper one: each level's precision as if its positives came first.

    One pass from the lowest level up: the thresholds then come in falling recall, so the
    interpolated precision at recall r (the best precision at recall r or beyond) is the
    running maximum just before the first threshold below r. ``interp`` (22,) is scratch.
    No branch depends on the data but the eleven recall crossings: an empty level repeats the
    threshold below it, which changes no maximum, so it is not skipped (skipping it was a
    branch the CPU mispredicted often). Rounding a quotient is monotone, so the maximum of the
    rounded precisions is the rounded best precision (the same float as exact fractions)."""
    below = 0
    below_pos = 0
    p = 0.0
    u = 0.0
    level = 10
    for b in range(n_bins):
        neg = np.int64(counts[2 * b])
        pos = np.int64(counts[2 * b + 1])
        seen = N - below  # cases at this level or above: the threshold below this level
        seen_pos = n_pos - below_pos
        while level >= 0 and 10 * seen_pos < level * n_pos:
            interp[level] = p
            interp[11 + level] = u
            level -= 1
        p = max(p, seen_pos / max(seen, 1))
        first = seen - neg * (pos > 0)  # the level's positives first
        u = max(u, seen_pos / max(first, 1))
        below += pos + neg
        below_pos += pos
        counts[2 * b] = 0
        counts[2 * b + 1] = 0
    while level >= 0:
        interp[level] = p
        interp[11 + level] = u
        level -= 1
    total = 0.0
    upper = 0.0
    for level in range(11):
        total += interp[level]
        upper += interp[11 + level]
    bound[0] = upper / 11.0
    return total / 11.0


@njit(parallel=True, **_JIT)
def rank_binary(P, S, y, k1, kind, k_top, histograms):  # pragma: no cover - compiled
    """ROC (kind 0), expected top-k positives (kind 1: LFT/BEP) or APR (kind 2) per row, with
    the least and most the exact score can be: ``(estimate, low, high)``, each ``(M,)``.

    Rows are split into ``len(histograms)`` runs, each with its own zeroed histogram row of
    ``2 * n_bins`` counters (uint16 when N < 65536: half the cache footprint), run in parallel.
    """
    M, N = P.shape
    out = np.empty(M)
    low = np.empty(M)
    high = np.empty(M)
    n_pos = 0
    for n in range(N):
        n_pos += y[n]
    n_neg = N - n_pos
    n_chunks, n_bins = histograms.shape[0], histograms.shape[1] // 2
    for ch in prange(n_chunks):
        counts = histograms[ch]
        idx = np.empty(N, np.int64)
        interp = np.empty(22)
        bound = np.empty(2)
        for m in range(ch * M // n_chunks, (ch + 1) * M // n_chunks):
            fill_histogram(P[m], S, y, k1, n_bins, idx, counts)
            if kind == 0:
                v = _roc_from_histogram(counts, n_bins, n_pos, n_neg, bound)
                out[m], low[m], high[m] = v, v - bound[0], v + bound[0]
            elif kind == 1:
                out[m] = _top_k_from_histogram(counts, n_bins, k_top, bound)
                low[m], high[m] = bound[0], bound[1]
            else:
                v = _apr_from_histogram(counts, n_bins, N, n_pos, interp, bound)
                out[m], low[m], high[m] = v, v, bound[0]
    return out, low, high


@njit(inline="always", **_JIT)
def _sorted_decreasing(q, n_bins, order, start, fill):  # pragma: no cover - compiled
    """Case indices in decreasing order of ``q`` (values in [0, 1]) into ``order``: a counting
    sort on ``n_bins`` levels, then each level's few cases sorted by value (insertion sort;
    a sort call for crowded levels). ``start``/``fill``: scratch of ``n_bins + 1`` ints."""
    N = q.shape[0]
    top = n_bins - 1
    start[:] = 0
    for n in range(N):
        start[top - min(np.int64(q[n] * n_bins), top) + 1] += 1
    for b in range(n_bins):
        start[b + 1] += start[b]
    fill[:] = start
    for n in range(N):
        b = top - min(np.int64(q[n] * n_bins), top)
        order[fill[b]] = n
        fill[b] += 1
    for b in range(n_bins):
        lo, hi = start[b], start[b + 1]
        if hi - lo > 32:
            seg = order[lo:hi].copy()
            keys = np.empty(hi - lo)
            for i in range(hi - lo):
                keys[i] = -q[seg[i]]
            perm = np.argsort(keys)
            for i in range(hi - lo):
                order[lo + i] = seg[perm[i]]
        else:
            for i in range(lo + 1, hi):
                v = order[i]
                j = i - 1
                while j >= lo and q[order[j]] < q[v]:
                    order[j + 1] = order[j]
                    j -= 1
                order[j + 1] = v


@njit(parallel=True, **_JIT)
def rank_exact(P, rows, S, y, k1, kind, k_top):  # pragma: no cover - compiled
    """Exact rank scores of the rows ``rows`` of ``P``: each candidate's mean ``(S + P) / k1``
    sorted, equal values one tie group, with the arithmetic of :mod:`ensel.metrics` (the same
    float64 numbers): ROC (kind 0), expected top-``k_top`` positives (kind 1), APR (kind 2)."""
    N = S.shape[0]
    out = np.empty(len(rows))
    n_pos = 0
    for n in range(N):
        n_pos += y[n]
    n_neg = N - n_pos
    n_bins = 1 << max(6, min(16, int(math.log2(N + 1))))
    for i in prange(len(rows)):
        m = rows[i]
        q = np.empty(N)
        for n in range(N):
            q[n] = (S[n] + P[m, n]) / k1
        order = np.empty(N, np.int64)
        start = np.empty(n_bins + 1, np.int64)
        fill = np.empty(n_bins + 1, np.int64)
        _sorted_decreasing(q, n_bins, order, start, fill)  # tie groups are found by value
        if kind == 0:
            above = 0  # negatives above the group
            twice = 0
            g = 0
            while g < N:
                e = g
                pos = 0
                while e < N and q[order[e]] == q[order[g]]:
                    pos += y[order[e]]
                    e += 1
                neg = e - g - pos
                # each positive: the negatives below it, plus half the tied ones
                twice += np.int64(pos) * (2 * (n_neg - above - neg) + neg)
                above += neg
                g = e
            out[i] = (0.5 * twice) / (n_pos * n_neg)
        elif kind == 1:
            full = 0
            part = 0.0
            g = 0
            while g < N and g < k_top:
                e = g
                pos = 0
                while e < N and q[order[e]] == q[order[g]]:
                    pos += y[order[e]]
                    e += 1
                inside = (k_top - g) / (e - g)
                if inside >= 1.0:
                    full += pos
                else:
                    part = pos * inside
                g = e
            out[i] = full + part
        else:
            total = 0.0
            best = np.empty(N)
            tps = np.empty(N, np.int64)
            n_groups = 0
            g = 0
            tp = 0
            while g < N:
                e = g
                while e < N and q[order[e]] == q[order[g]]:
                    tp += y[order[e]]
                    e += 1
                tps[n_groups] = tp
                best[n_groups] = tp / e
                n_groups += 1
                g = e
            for j in range(n_groups - 2, -1, -1):
                best[j] = max(best[j], best[j + 1])
            j = 0
            for level in range(11):
                while 10 * tps[j] < level * n_pos:
                    j += 1
                total += best[j]
            out[i] = total / 11.0
    return out
