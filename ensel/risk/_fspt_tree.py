"""The feature space partitioning tree of Gu & Easwaran (ICCPS 2019, §3-§4): a CART tree that
separates the training rows from an infinite, exact uniform background ("E-points") of equal
weight at every split, grown on the reduced candidate set of §4.2 with the importance- and
side-length-weighted Gini gain of Eq. 8, and stopped by the counter of §4.1.

Rows are encoded as in :mod:`ensel.risk._base` (categorical columns as ``code + 0.5`` on
``[0, K)``, NaN = missing). A missing value is handled the C4.5 way: the row goes down both
branches with weights in proportion to the known training weight on each side, at fit and at
predict time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PartitionTree", "best_split", "candidate_splits", "gini_gain", "grow", "route"]


def gini_gain(cdf: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Gain in Gini index ``ΔG = G(R) - Ĝ(R, I, s)`` of a split with equal foreground and
    background weight (§4.1, ``|R-| = |R+|``), so ``G(R) = 1/2``.

    ``cdf`` is the fraction of the node's (known) training weight left of the split and ``u``
    the fraction of the node's side length left of it, hence the fraction of the E-points
    (Eq. 6-7). With both normalised, §4.2 gives
    ``Ĝ = cdf·u / (cdf + u) + (1 - cdf)(1 - u) / (2 - cdf - u)``; an empty child adds 0."""
    cdf = np.asarray(cdf, dtype=float)
    u = np.asarray(u, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        left = np.where(cdf + u > 0, cdf * u / (cdf + u), 0.0)
        right = np.where(cdf + u < 2, (1 - cdf) * (1 - u) / (2 - cdf - u), 0.0)
    return 0.5 - left - right


def candidate_splits(
    values: np.ndarray,
    weights: np.ndarray,
    low: float,
    high: float,
    categorical: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The reduced candidate split set of §4.2 for one feature of one node.

    With ``s_1 < ... < s_N`` the distinct known values in the node, the candidates are
    ``{max(low, s_1 - ε), s_1, s_2 - ε, s_2, ..., s_N}``: just below and at every distinct value,
    since between two values the weighted Gini index is monotone or minimised at an end. A
    candidate that would leave a child of zero width (a split at ``low`` or ``high``) is dropped.
    On a categorical axis the value ``c + 0.5`` fills the cell ``[c, c + 1)``, so "just below"
    and "at" become the integer boundaries ``c`` and ``c + 1``.

    Returns ``(boundary, cdf, below)``: where the cell is cut, the fraction of the known
    training weight that goes left, and whether the candidate is ``s_k - ε`` (rows equal to
    ``s_k`` go right) rather than ``s_k`` (they go left)."""
    v = np.asarray(values, dtype=float)
    w = np.asarray(weights, dtype=float)
    known = ~np.isnan(v)
    v, w = v[known], w[known]
    if v.size == 0 or w.sum() <= 0:
        empty = np.empty(0)
        return empty, empty, np.empty(0, dtype=bool)
    s, inverse = np.unique(v, return_inverse=True)
    mass = np.bincount(inverse, weights=w, minlength=s.size)
    after = np.cumsum(mass) / w.sum()
    before = after - mass / w.sum()
    half = 0.5 if categorical else 0.0
    boundary = np.concatenate([s - half, s + half])
    cdf = np.concatenate([before, after])
    below = np.concatenate([np.ones(s.size, bool), np.zeros(s.size, bool)])
    order = np.lexsort((~below, boundary))  # by position, "s - ε" first
    boundary, cdf, below = boundary[order], cdf[order], below[order]
    keep = (boundary > low) & (boundary < high)
    if categorical:  # both kinds meet at integer boundaries: keep one candidate per boundary
        keep &= np.r_[True, boundary[1:] != boundary[:-1]]
    return boundary[keep], cdf[keep], below[keep]


@dataclass(frozen=True)
class Split:
    feature: int
    boundary: float  # where the cell is cut (child boxes meet here)
    threshold: float  # routing: x <= threshold goes left
    cdf: float  # fraction of the node's known training weight that goes left
    gain: float  # ΔG of this split (Eq. 4 term)
    best_gain: float  # the largest ΔG over every candidate of every feature (Eq. 4)


def best_split(
    Z: np.ndarray,
    w: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    root_width: np.ndarray,
    importance: np.ndarray,
    categorical: np.ndarray,
    *,
    use_numba: bool = True,
) -> Split | None:
    """The split of Eq. 8, ``argmax f_I · ΔI(R)/ΔI · ΔG`` over the §4.2 candidates of every
    feature with positive importance; ties go to the first candidate in (feature, value,
    ``s - ε`` before ``s``) order.

    ``ΔG`` of a feature with missing values is the gain on the known rows times their share of
    the weight (C4.5). Returns None when no feature has a valid candidate. The numba kernel and
    the numpy version compute the same thing; numpy is the fallback without numba."""
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    w = np.ascontiguousarray(w, dtype=np.float64)
    args = (low, high, root_width, importance)
    args = tuple(np.ascontiguousarray(a, dtype=np.float64) for a in args)
    cat = np.ascontiguousarray(categorical, dtype=np.bool_)
    if use_numba and _split_kernel is not None:
        found, j, boundary, below, cdf, gain, best_gain = _split_kernel(Z, w, *args, cat)
        if not found:
            return None
    else:
        out = _best_split_numpy(Z, w, *args, cat)
        if out is None:
            return None
        j, boundary, below, cdf, gain, best_gain = out
    # "s - ε": rows equal to s go right; a categorical value never sits on an integer boundary
    threshold = np.nextafter(boundary, -np.inf) if below and not cat[j] else boundary
    return Split(int(j), float(boundary), float(threshold), float(cdf), float(gain),
                 float(best_gain))  # fmt: skip


def _best_split_numpy(Z, w, low, high, root_width, importance, categorical):
    """Vectorised :func:`best_split` over (feature, sorted position, kind) at once."""
    n = Z.shape[0]
    cols = np.flatnonzero(importance > 0)
    if n == 0 or cols.size == 0:
        return None
    Zc = Z[:, cols].T  # (features, rows)
    order = np.argsort(Zc, axis=1, kind="stable")  # NaN sorts last
    A = np.take_along_axis(Zc, order, axis=1)
    known = ~np.isnan(A)
    W = np.where(known, w[order], 0.0)
    cw = np.cumsum(W, axis=1)
    total = cw[:, -1:]
    with np.errstate(invalid="ignore", divide="ignore"):
        after = cw / total
        before = (cw - W) / total
    differs = A[:, 1:] != A[:, :-1]  # NaN compares unequal: the last known value ends its run
    edge = np.ones((cols.size, 1), bool)
    first = known & np.hstack([edge, differs])
    last = known & np.hstack([differs, edge])
    half = np.where(categorical[cols], 0.5, 0.0)[:, None]
    lo, hi = low[cols][:, None], high[cols][:, None]
    span = hi - lo
    boundary = np.stack([A - half, A + half], axis=2)  # (features, rows, kind)
    cdf = np.stack([before, after], axis=2)
    valid = np.stack([first, last], axis=2) & (boundary > lo[..., None])
    valid &= (boundary < hi[..., None]) & (total > 0)[..., None]
    u = (boundary - lo[..., None]) / span[..., None]
    gain = gini_gain(cdf, u) * (total / w.sum())[..., None]
    gain = np.where(valid, gain, -np.inf)
    weight = importance[cols] * span[:, 0] / root_width[cols]  # Eq. 8: f_I · ΔI(R) / ΔI
    crit = weight[:, None, None] * gain
    i = int(np.argmax(crit))
    if not np.isfinite(crit.flat[i]):
        return None
    f, r, kind = np.unravel_index(i, crit.shape)
    return cols[f], boundary[f, r, kind], kind == 0, cdf[f, r, kind], gain[f, r, kind], gain.max()


try:  # numba is a dependency; keep a numpy path for where it is missing
    from numba import njit
except ImportError:  # pragma: no cover - exercised only without numba
    _split_kernel = None
else:

    @njit(cache=True, nogil=True)
    def _split_kernel(Z, w, low, high, root_width, importance, categorical):  # pragma: no cover
        n, d = Z.shape
        wsum = 0.0
        for i in range(n):
            wsum += w[i]
        vals = np.empty(n)
        ww = np.empty(n)
        found = False
        best_crit = -np.inf
        best_gain = -np.inf
        bj, bb, bbelow, bcdf, bg = -1, 0.0, False, 0.0, 0.0
        for j in range(d):
            if importance[j] <= 0:
                continue
            k = 0
            total = 0.0
            for i in range(n):
                x = Z[i, j]
                if not np.isnan(x):
                    vals[k] = x
                    ww[k] = w[i]
                    total += w[i]
                    k += 1
            if k == 0 or total <= 0:
                continue
            order = np.argsort(vals[:k], kind="mergesort")
            share = total / wsum
            lo, hi = low[j], high[j]
            span = hi - lo
            half = 0.5 if categorical[j] else 0.0
            weight = importance[j] * span / root_width[j]
            cum = 0.0
            i = 0
            while i < k:
                v = vals[order[i]]
                mass = 0.0
                while i < k and vals[order[i]] == v:
                    mass += ww[order[i]]
                    i += 1
                for kind in range(2):
                    if kind == 0:
                        b, c = v - half, cum / total
                    else:
                        b, c = v + half, (cum + mass) / total
                    if b <= lo or b >= hi:
                        continue
                    u = (b - lo) / span
                    g_left = c * u / (c + u) if c + u > 0 else 0.0
                    g_right = (1 - c) * (1 - u) / (2 - c - u) if c + u < 2 else 0.0
                    g = (0.5 - g_left - g_right) * share
                    best_gain = max(best_gain, g)
                    crit = weight * g
                    if crit > best_crit:
                        found = True
                        best_crit = crit
                        bj, bb, bbelow, bcdf, bg = j, b, kind == 0, c, g
                cum += mass
        return found, bj, bb, bbelow, bcdf, bg, best_gain


@dataclass(frozen=True)
class PartitionTree:
    """A grown FSPT as flat node arrays (node 0 is the root; ``feature == -1`` marks a leaf).

    ``p_left`` is the share of the known training weight sent left (C4.5 routing of missing
    values); ``n_plus`` the training weight in the node; ``low``/``high`` its box."""

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    p_left: np.ndarray
    n_plus: np.ndarray
    low: np.ndarray
    high: np.ndarray

    @property
    def n_nodes(self) -> int:
        return self.feature.size

    @property
    def leaves(self) -> np.ndarray:
        return np.flatnonzero(self.feature < 0)


def grow(
    Z: np.ndarray,
    w: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    importance: np.ndarray,
    categorical: np.ndarray,
    *,
    epsilon,
    patience: int,
    min_samples_split: float,
    max_depth: int | None,
) -> PartitionTree:
    """Grow an FSPT on rows ``Z`` with weights ``w`` in the box ``[low, high]``.

    Stopping (§4.1): a node whose best gain ``ΔG`` (Eq. 4) is at most ``epsilon`` increments a
    counter ``c`` inherited from its parent, any other node resets it to 0, and a node stops
    once ``c > patience`` (λ). ``epsilon`` is a number or a function of the node's training
    weight (the noise level of ΔG shrinks as 1/n). A node with less training weight than
    ``min_samples_split`` stops at once (§4.1: "if |R+| is very small, the construction
    process can terminate immediately"), as does one at ``max_depth``."""
    root_width = high - low
    feature, threshold, left, right, p_left, n_plus, lows, highs = ([] for _ in range(8))

    def new_node(lo, hi, weight):
        feature.append(-1)
        threshold.append(np.nan)
        left.append(-1)
        right.append(-1)
        p_left.append(np.nan)
        n_plus.append(weight)
        lows.append(lo)
        highs.append(hi)
        return len(feature) - 1

    root = new_node(low.copy(), high.copy(), float(w.sum()))
    stack = [(root, np.arange(Z.shape[0]), w, 0, 0)]
    while stack:
        node, rows, weights, depth, counter = stack.pop()
        total = float(weights.sum())
        if total < min_samples_split or (max_depth is not None and depth >= max_depth):
            continue
        lo, hi = lows[node], highs[node]
        split = best_split(Z[rows], weights, lo, hi, root_width, importance, categorical)
        if split is None:
            continue
        eps = epsilon(total) if callable(epsilon) else epsilon
        counter = counter + 1 if split.best_gain <= eps else 0
        if counter > patience:
            continue
        x = Z[rows, split.feature]
        missing = np.isnan(x)
        go_left = x <= split.threshold
        go_right = ~go_left & ~missing
        wl = np.where(go_left, weights, np.where(missing, weights * split.cdf, 0.0))
        wr = np.where(go_right, weights, np.where(missing, weights * (1 - split.cdf), 0.0))
        hi_left, lo_right = hi.copy(), lo.copy()
        hi_left[split.feature] = lo_right[split.feature] = split.boundary
        keep_l, keep_r = wl > 0, wr > 0
        n_l = new_node(lo.copy(), hi_left, float(wl.sum()))
        n_r = new_node(lo_right, hi.copy(), float(wr.sum()))
        feature[node], threshold[node] = split.feature, split.threshold
        left[node], right[node], p_left[node] = n_l, n_r, split.cdf
        stack.append((n_r, rows[keep_r], wr[keep_r], depth + 1, counter))
        stack.append((n_l, rows[keep_l], wl[keep_l], depth + 1, counter))
    return PartitionTree(
        np.asarray(feature, dtype=np.intp),
        np.asarray(threshold, dtype=float),
        np.asarray(left, dtype=np.intp),
        np.asarray(right, dtype=np.intp),
        np.asarray(p_left, dtype=float),
        np.asarray(n_plus, dtype=float),
        np.asarray(lows, dtype=float),
        np.asarray(highs, dtype=float),
    )


def route(tree: PartitionTree, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Send every row of ``Z`` to its leaf, level by level with index arrays.

    A row missing the split feature goes both ways with weights ``p_left`` and ``1 - p_left``
    (C4.5), so one row may reach several leaves. Returns ``(rows, leaves, weights)``: for each
    (row, leaf) pair the row index, the leaf node and the row's weight there (a row's weights
    sum to 1)."""
    rows = np.arange(Z.shape[0])
    nodes = np.zeros(Z.shape[0], dtype=np.intp)
    weights = np.ones(Z.shape[0])
    done_r, done_n, done_w = [], [], []
    while rows.size:
        f = tree.feature[nodes]
        at_leaf = f < 0
        if at_leaf.any():
            done_r.append(rows[at_leaf])
            done_n.append(nodes[at_leaf])
            done_w.append(weights[at_leaf])
            rows, nodes, weights, f = (
                rows[~at_leaf],
                nodes[~at_leaf],
                weights[~at_leaf],
                f[~at_leaf],
            )
        if not rows.size:
            break
        x = Z[rows, f]
        missing = np.isnan(x)
        go_left = x <= tree.threshold[nodes]
        nxt = np.where(go_left, tree.left[nodes], tree.right[nodes])
        if missing.any():
            m = np.flatnonzero(missing)
            p = tree.p_left[nodes[m]]
            nxt[m] = tree.left[nodes[m]]
            extra_r, extra_n, extra_w = rows[m], tree.right[nodes[m]], weights[m] * (1 - p)
            weights = weights.copy()
            weights[m] *= p
            rows = np.concatenate([rows, extra_r])
            nxt = np.concatenate([nxt, extra_n])
            weights = np.concatenate([weights, extra_w])
        nodes = nxt
    return np.concatenate(done_r), np.concatenate(done_n), np.concatenate(done_w)
