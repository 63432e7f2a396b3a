"""The k nearest training points of each query row, without the full distance matrix.

A compiled kernel. For a block of query rows it computes the squared distances to a tile of
training points (the tile stays in cache across the block). Each row keeps candidates in a
buffer of ``4k``: a point enters only if it is nearer than a bound, first one guessed from a
strided sample of the training points (about 3k points below it), then the k-th nearest kept
so far; a full buffer is cut back to its k nearest by a quickselect. A row whose guess left
fewer than k points is scanned again without one. At the end nested quickselects put, for
every k asked, the k nearest first. So each training point costs a distance and one
comparison, where ``A @ B.T`` then ``np.partition`` wrote and read an n-wide matrix row per
query (docs/decisions.md, "Own kernels": measured against scikit-learn's ``kneighbors``).

Up to 32 columns, distances are summed as ``(x - q)^2`` column by column (exact for
coincident points, none of the cancellation of ``|q|^2 + |x|^2 - 2 q.x``); wider rows take that
expanded form with BLAS dot products, which is faster there. Ties go to the lower training
index, so the result depends on no sort order.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["nearest"]

_TILE_VALUES = 1 << 15  # training values per tile (256 KiB of float64: the tile stays in L2)
_BLOCK = 64  # query rows that share a tile
_SPARE = 4  # a row keeps up to this many times k candidates between quickselects
_DIRECT_COLUMNS = 32  # wider rows: distances from BLAS dot products (see ``nearest``)
_SAMPLE = 256  # training points sampled for a row's first bound
_MARGIN = 3  # the first bound aims at this many times k points below it
_JIT = {"cache": True, "nogil": True}


def nearest(Q: np.ndarray, X: np.ndarray, ks):
    """``(indices, squared distances)``, each ``(len(Q), max(ks))``: for every ``k`` in ``ks``
    the first ``k`` columns of a row are the ``k`` rows of X nearest to that query row (ties
    to the lower training index), in no order within each step of ``ks``: what sums over the
    k nearest need, without sorting them. Each ``k`` is between 1 and ``len(X)``. One thread
    (the ensemble predicts its runs on threads of its own; numba releases the GIL)."""
    Q = np.ascontiguousarray(Q, dtype=np.float64)
    X = np.ascontiguousarray(X, dtype=np.float64)
    ks = np.unique(np.asarray(ks, dtype=np.int64))
    if ks.size == 0 or ks[0] < 1 or ks[-1] > X.shape[0]:
        raise ValueError(f"each k must be between 1 and the {X.shape[0]} training rows: {ks}")
    if Q.ndim != 2 or Q.shape[1] != X.shape[1]:
        raise ValueError(f"queries of shape {Q.shape}; training rows of {X.shape[1]} columns")
    if X.shape[1] > _DIRECT_COLUMNS:  # BLAS on X: a long tile, the squared norms once
        tile, norms, XT = 2048, np.einsum("ij,ij->i", X, X), np.empty((0, 0))
    else:  # direct sums read the columns of X: its transpose, once
        tile = int(np.clip(_TILE_VALUES // max(X.shape[1], 1), 64, 4096))
        norms, XT = np.zeros(0), np.ascontiguousarray(X.T)
    return _nearest(Q, X, XT, norms, ks, tile)


@njit(inline="always", **_JIT)
def _less(da, ia, db, ib):  # pragma: no cover - compiled
    """(da, ia) before (db, ib): nearer, or as near with a lower index."""
    return da < db or (da == db and ia < ib)


@njit(**_JIT)
def _select(d, i, count, k):  # pragma: no cover - compiled
    """Quickselect on the first ``count`` pairs: afterwards the first ``k`` are the k smallest
    (in no order). Keys are unique (the indices are), so every partition step shrinks."""
    lo, hi = 0, count - 1
    target = k - 1
    while lo < hi:
        mid = (lo + hi) >> 1
        a, b, c = lo, mid, hi  # median of three as the pivot
        if _less(d[b], i[b], d[a], i[a]):
            a, b = b, a
        if _less(d[c], i[c], d[b], i[b]):
            b = c
            if _less(d[b], i[b], d[a], i[a]):
                b = a
        pd, pi = d[b], i[b]
        left, right = lo, hi
        while left <= right:
            while _less(d[left], i[left], pd, pi):
                left += 1
            while _less(pd, pi, d[right], i[right]):
                right -= 1
            if left <= right:
                d[left], d[right] = d[right], d[left]
                i[left], i[right] = i[right], i[left]
                left += 1
                right -= 1
        if target <= right:
            hi = right
        elif target >= left:
            lo = left
        else:
            return


@njit(**_JIT)
def _first_bound(q, X, k):  # pragma: no cover - compiled
    """A distance that about ``_MARGIN * k`` training points are nearer than, from a strided
    sample of ``_SAMPLE`` of them (inf when k is a large share of the points): candidates start
    below it instead of filling the buffer with the first points seen."""
    n, n_cols = X.shape
    size = min(n, _SAMPLE)
    m = (_MARGIN * k * size + n - 1) // n
    if m >= size:
        return np.inf
    d = np.empty(size)
    i = np.empty(size, dtype=np.int64)
    for t in range(size):
        j = (t * n) // size
        x = X[j]  # a row of X: contiguous, where a column of XT strides across the table
        total = 0.0
        for f in range(n_cols):
            u = x[f] - q[f]
            total += u * u
        d[t], i[t] = total, j
    _select(d, i, size, m)
    return d[:m].max()


@njit(**_JIT)
def _scan(Q, X, XT, norms, ks, tile, r0, r1, index, dist, guess):  # pragma: no cover - compiled
    """Rows ``r0:r1`` of ``index`` and ``dist`` (see ``nearest``); with ``guess``, each row's
    candidates start below ``_first_bound``. Returns the rows (offsets from ``r0``) whose
    guess was too tight (fewer than k points below it): they need a scan without one."""
    n, n_cols = X.shape
    rows = r1 - r0
    k = ks[-1]
    wide = n_cols > _DIRECT_COLUMNS
    buf = np.empty((rows, tile))
    cand_d = np.empty((rows, _SPARE * k))
    cand_i = np.empty((rows, _SPARE * k), dtype=np.int64)
    count = np.zeros(rows, dtype=np.int64)
    bound = np.full(rows, np.inf)  # candidates must be nearer than this
    if guess:
        for r in range(rows):
            bound[r] = _first_bound(Q[r0 + r], X, k)
    for start in range(0, n, tile):
        stop = min(start + tile, n)
        width = stop - start
        if wide:  # |q|^2 + |x|^2 - 2 q.x, the cross terms by BLAS
            cross = np.dot(Q[r0:r1], X[start:stop].T)
        for r in range(rows):
            b = buf[r, :width]
            q = Q[r0 + r]
            if wide:
                qq = np.dot(q, q)
                for j in range(width):
                    b[j] = max(qq + norms[start + j] - 2.0 * cross[r, j], 0.0)
            else:  # column by column, slice and query value hoisted: LLVM vectorises the sums
                x, qf = XT[0, start:stop], q[0]
                for j in range(width):
                    t = x[j] - qf
                    b[j] = t * t
                for f in range(1, n_cols):
                    x, qf = XT[f, start:stop], q[f]
                    for j in range(width):
                        t = x[j] - qf
                        b[j] += t * t
            cd, ci = cand_d[r], cand_i[r]
            c, limit = count[r], bound[r]
            for j in range(width):
                if b[j] < limit:  # as near as the k-th kept: the later index loses
                    cd[c], ci[c] = b[j], start + j
                    c += 1
                    if c == _SPARE * k:
                        _select(cd, ci, c, k)
                        c = k
                        limit = cd[:k].max()
            count[r], bound[r] = c, limit
    missed = []
    for r in range(rows):
        cd, ci = cand_d[r], cand_i[r]
        size = count[r]
        if size < k:
            missed.append(r)
            continue
        for s in range(len(ks) - 1, -1, -1):  # nested: the first ks[s] are the ks[s] nearest
            if size > ks[s]:
                _select(cd, ci, size, ks[s])
            size = ks[s]
        dist[r0 + r] = cd[:k]
        index[r0 + r] = ci[:k]
    return missed


@njit(**_JIT)
def _block(Q, X, XT, norms, ks, tile, r0, r1, index, dist):  # pragma: no cover - compiled
    """Rows ``r0:r1``: a guessed first bound, and a full scan for the rows it failed."""
    for r in _scan(Q, X, XT, norms, ks, tile, r0, r1, index, dist, True):
        _scan(Q, X, XT, norms, ks, tile, r0 + r, r0 + r + 1, index, dist, False)


@njit(**_JIT)
def _nearest(Q, X, XT, norms, ks, tile):  # pragma: no cover - compiled
    k = ks[-1]
    index = np.empty((Q.shape[0], k), dtype=np.int64)
    dist = np.empty((Q.shape[0], k))
    for start in range(0, Q.shape[0], _BLOCK):
        _block(Q, X, XT, norms, ks, tile, start, min(start + _BLOCK, Q.shape[0]), index, dist)
    return index, dist
