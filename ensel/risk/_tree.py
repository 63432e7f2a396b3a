"""Array trees that separate training rows from an exact uniform background (Hooker 2004, §4;
Sandia report SAND2013-2534, §2.4-2.5): growth by information gain or Gini on expected
background counts, or by purely random splits; C4.5-style missing values; reduced-error pruning
on held-out rows; and compiled routing of many rows through many trees.

The background is never sampled. A node is an axis-aligned box; its expected background count is
``n_bg * volume(node) / volume(root)`` (report §2.4), where a categorical axis (encoded
``code + 0.5`` on ``[0, K)``) contributes the fraction of categories the node holds. A node's
risk is ``bg / (fg + bg)``, the probability that a point in it comes from the background (no
Laplace smoothing, report §3).

Missing values follow C4.5 as Hooker (§5) states it: a row missing the split variable goes down
both branches, weighted by the share of total (data plus expected background) weight on each
side; in training the same fractions split the row's weight.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from joblib import Parallel, delayed
from numba import njit

__all__ = [
    "BackgroundForest",
    "BackgroundTree",
    "fit_background_forest",
    "grow_tree",
    "node_weights",
    "prune_tree",
]

_JIT = {"cache": True, "nogil": True}

SPLITS = {"entropy": 0, "gini": 1, "random": 2}
"""Split rules: information gain (Quinlan 1986), Gini gain (CART, Hooker), purely random."""

LOSSES = {"error": 0, "brier": 1}
"""Pruning losses: misclassification error (Hooker §4, Quinlan 1987) and Brier score (report §3)."""

F32_MAX = float(np.finfo(np.float32).max)
"""A leaf's density ratio is kept at most this (``fg / bg`` with no background is about 1e300,
infinite as float32, and a row sent down a branch with weight 0 would then add 0 x inf = NaN)."""

_MIN_WEIGHT = 1e-9  # a row's share below this is dropped when a missing value splits it


@dataclass(frozen=True)
class BackgroundTree:
    """One tree as flat arrays indexed by node id (children always have larger ids).

    ``left``/``right`` are -1 at a leaf; ``fg`` is the data weight in the node, ``bg`` its
    expected background count, ``p_left`` the share of total weight on the left (C4.5 routing
    of missing values), ``value`` the node's risk ``bg / (fg + bg)``."""

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    fg: np.ndarray
    bg: np.ndarray
    p_left: np.ndarray
    depth: int

    @property
    def value(self) -> np.ndarray:
        total = self.fg + self.bg
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(total > 0, self.bg / total, 1.0)

    @property
    def ratio(self) -> np.ndarray:
        """The node's density ratio estimate ``f_data / f_uniform = fg / bg``."""
        with np.errstate(divide="ignore"):
            return self.fg / np.maximum(self.bg, 1e-300)

    @property
    def n_nodes(self) -> int:
        return self.left.shape[0]

    @property
    def n_leaves(self) -> int:
        return int((self.left < 0).sum())


@dataclass(frozen=True)
class BackgroundForest:
    """Trees stacked into one set of arrays (child ids are global), for one compiled pass,
    in the narrowest types that answer alike: node ids and variables as int32, the leaves'
    values and missing-value shares as float32 (thresholds stay float64, so every row takes
    the branch it took in training). Only the leaf value its ``aggregate`` reads is kept (the
    risk ``bg / (fg + bg)`` or the density ratio ``fg / bg``), so a node takes 28 bytes, not
    56: a forest of millions of nodes is most of a saved model's size."""

    roots: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    p_left: np.ndarray
    leaf: np.ndarray
    aggregate: str
    depth: int

    @classmethod
    def stack(cls, trees: list[BackgroundTree], aggregate: str = "probability") -> BackgroundForest:
        """The trees as one forest that answers by ``aggregate`` ("probability" or
        "density", as ``risk``)."""
        if aggregate not in ("probability", "density"):
            raise ValueError(f"aggregate={aggregate!r}: use 'probability' or 'density'")
        sizes = np.array([t.n_nodes for t in trees])
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])

        if sizes.sum() >= np.iinfo(np.int32).max:
            raise ValueError(f"{sizes.sum()} nodes are more than int32 node ids can hold")

        def shift(a, off):
            return np.where(a >= 0, a + off, -1).astype(np.int32)

        def joined(arrays, dtype):
            return np.concatenate(arrays).astype(dtype, copy=False)

        pairs = list(zip(trees, offsets, strict=True))
        if aggregate == "probability":
            leaf = [t.value for t in trees]
        else:
            leaf = [np.minimum(t.ratio, F32_MAX) for t in trees]
        return cls(
            roots=offsets.astype(np.int64),
            feature=joined([t.feature for t in trees], np.int32),
            threshold=joined([t.threshold for t in trees], np.float64),
            left=np.concatenate([shift(t.left, o) for t, o in pairs]),
            right=np.concatenate([shift(t.right, o) for t, o in pairs]),
            p_left=joined([t.p_left for t in trees], np.float32),
            leaf=joined(leaf, np.float32),
            aggregate=aggregate,
            depth=max(t.depth for t in trees),
        )

    @property
    def n_trees(self) -> int:
        return self.roots.shape[0]

    def risk(self, Z: np.ndarray) -> np.ndarray:
        """Each row's risk from the leaves it reaches (a C4.5 mix of leaves where a value is
        missing). ``aggregate="probability"`` averages the trees' leaf risks ``bg / (fg + bg)``
        (report §2.5); ``"density"`` averages their density ratios ``fg / bg`` (each tree a
        density estimate) and returns ``1 / (1 + mean ratio)``."""
        Z = np.ascontiguousarray(Z, dtype=np.float64)
        mean = _route(
            Z, self.roots, self.feature, self.threshold, self.left, self.right,
            self.p_left, self.leaf, self.depth,
        )  # fmt: skip
        return mean if self.aggregate == "probability" else 1.0 / (1.0 + mean)


# --------------------------------------------------------------------------- public helpers


def grow_tree(
    Z: np.ndarray,
    w: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    categorical: np.ndarray,
    *,
    split: str = "entropy",
    edge_splits: bool = False,
    max_depth: int | None = None,
    min_samples_leaf: float = 1.0,
    max_features: int | None = None,
    seed: int = 0,
) -> BackgroundTree:
    """Grow one tree on rows ``Z`` with weights ``w`` (bootstrap counts) against a uniform
    background of ``w.sum()`` expected points on the box ``[low, high]``.

    ``split`` is "entropy" (information gain, report §3), "gini" (Hooker §4) or "random" (a random
    variable and a random candidate threshold, report §2.5 and §3). Candidate thresholds are the
    midpoints between consecutive distinct values in the node (integers between categories);
    ``edge_splits`` adds one threshold below and one above all the node's values (halfway to the
    node's box edge), which cuts off empty space (report §3 and Table A.1; for the gain splits
    the side with data keeps ``min_samples_leaf``, the other holds background only). A node is
    split while some variable has two distinct values, both children keep ``min_samples_leaf``
    data weight and the gain is positive (random splits need no gain)."""
    keep = w > 0
    rows = np.flatnonzero(keep)
    depth_cap = -1 if max_depth is None else int(max_depth)
    k = Z.shape[1] if max_features is None else int(max_features)
    out = _grow(
        np.ascontiguousarray(Z, dtype=np.float64),
        rows.astype(np.int64),
        np.asarray(w, dtype=np.float64)[rows],
        np.asarray(low, dtype=np.float64),
        np.asarray(high, dtype=np.float64),
        np.asarray(categorical, dtype=np.bool_),
        float(np.asarray(w, dtype=np.float64).sum()),
        SPLITS[split],
        bool(edge_splits),
        depth_cap,
        float(min_samples_leaf),
        k,
        np.uint64(seed),
    )
    feature, threshold, left, right, fg, bg, p_left, depth = out
    return BackgroundTree(feature, threshold, left, right, fg, bg, p_left, int(depth))


def node_weights(tree: BackgroundTree, Z: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The weight of rows ``Z`` (weights ``w``) reaching every node, missing values split C4.5
    style."""
    return _node_weights(
        np.ascontiguousarray(Z, dtype=np.float64), np.asarray(w, dtype=np.float64),
        tree.feature, tree.threshold, tree.left, tree.right, tree.p_left, tree.depth,
    )  # fmt: skip


def prune_tree(
    tree: BackgroundTree, Z: np.ndarray, w: np.ndarray, loss: str = "brier"
) -> BackgroundTree:
    """Reduced-error pruning (Quinlan 1987) on held-out rows ``Z`` with weights ``w``.

    The held-out background is exact too: a node expects ``w.sum() * bg / bg[root]`` background
    points. Bottom-up, a subtree becomes a leaf when that lowers the loss on the held-out data:
    strictly for "brier" (chaos forest, report §3: a split stays unless removing it improves
    the Brier score), and when it is no larger for "error" (misclassification, Hooker §4, as
    Quinlan's reduced-error pruning)."""
    held_fg = node_weights(tree, Z, w)
    held_bg = float(np.sum(w)) * tree.bg / tree.bg[0]
    left, right = _prune(tree.left, tree.right, tree.value, held_fg, held_bg, LOSSES[loss])
    return _compact(tree, left, right)


def fit_background_forest(
    Z: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    categorical: np.ndarray,
    *,
    n_estimators: int,
    grow: dict,
    prune: str | None = None,
    structure_fraction: float = 0.5,
    bootstrap: bool = True,
    aggregate: str = "probability",
    n_jobs: int | None = None,
    random_state=None,
) -> tuple[BackgroundForest, list[BackgroundTree]]:
    """Bagged trees (Breiman 1996; report §4.1): each tree sees a bootstrap sample of the rows
    as weights. With ``prune``, the rows are split at random: a bootstrap sample of a
    ``structure_fraction`` of the rows grows the tree, one of the other rows prunes it (report
    §3: "half of the training data in each bootstrap sample are used for constructing the tree
    structure ... the half not used for tree construction is used to estimate the error"), so
    no row both grows a tree and judges its pruning. All random draws are made here,
    in order, so that the forest does not depend on ``n_jobs``."""
    rng = np.random.default_rng(random_state)
    n = Z.shape[0]
    jobs = []
    for _ in range(n_estimators):
        if prune is None:
            sample = rng.integers(0, n, n) if bootstrap else np.arange(n)
            w_grow, w_prune = np.bincount(sample, minlength=n).astype(float), None
        else:  # rows, not draws, are split: no row both grows and prunes
            n_grow = min(max(1, round(structure_fraction * n)), n - 1) if n > 1 else 1
            rows = rng.permutation(n)
            grows, prunes = rows[:n_grow], rows[n_grow:]
            if bootstrap:  # each half a bootstrap sample of its own rows, of its own size
                grows = grows[rng.integers(0, len(grows), len(grows))]
                prunes = prunes[rng.integers(0, len(prunes), len(prunes))]
            w_grow = np.bincount(grows, minlength=n).astype(float)
            w_prune = np.bincount(prunes, minlength=n).astype(float)
        jobs.append((w_grow, w_prune, int(rng.integers(2**63))))

    def one(w_grow, w_prune, seed):
        tree = grow_tree(Z, w_grow, low, high, categorical, seed=seed, **grow)
        if prune is not None and w_prune.sum() > 0:
            tree = prune_tree(tree, Z, w_prune, prune)
        return tree

    trees = Parallel(n_jobs=n_jobs, prefer="threads")(delayed(one)(*job) for job in jobs)
    return BackgroundForest.stack(trees, aggregate), trees


def _compact(tree: BackgroundTree, left: np.ndarray, right: np.ndarray) -> BackgroundTree:
    """Drop the nodes a pruning cut off and renumber the rest (still parents before children)."""
    reach, node_depth = _reach(left, right)
    new_id = np.cumsum(reach) - 1
    keep = np.flatnonzero(reach)
    lft, rgt = left[keep], right[keep]
    lft = np.where(lft >= 0, new_id[np.maximum(lft, 0)], -1)
    rgt = np.where(rgt >= 0, new_id[np.maximum(rgt, 0)], -1)
    return BackgroundTree(
        tree.feature[keep], tree.threshold[keep], lft, rgt, tree.fg[keep], tree.bg[keep],
        tree.p_left[keep], int(node_depth[keep].max()),
    )  # fmt: skip


# --------------------------------------------------------------------------- compiled kernels


@njit(inline="always", **_JIT)
def _rand(state):  # pragma: no cover - compiled
    """splitmix64: a small, explicit random stream per tree (same seed, same tree, any thread)."""
    z = state[0] + np.uint64(0x9E3779B97F4A7C15)
    state[0] = z
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(inline="always", **_JIT)
def _randint(state, n):  # pragma: no cover - compiled
    return np.int64(_rand(state) % np.uint64(n))


@njit(inline="always", **_JIT)
def _impurity(a, b, criterion):  # pragma: no cover - compiled
    t = a + b
    if t <= 0.0:
        return 0.0
    p = a / t
    q = b / t
    if criterion == 1:
        return 2.0 * p * q
    h = 0.0
    if p > 0.0:
        h -= p * math.log(p)
    if q > 0.0:
        h -= q * math.log(q)
    return h


@njit(**_JIT)
def _reach(left, right):  # pragma: no cover - compiled
    """Which nodes the root still reaches, and each node's depth (parents precede children)."""
    n = left.shape[0]
    reach = np.zeros(n, dtype=np.bool_)
    depth = np.zeros(n, dtype=np.int64)
    reach[0] = True
    for i in range(n):
        if reach[i] and left[i] >= 0:
            reach[left[i]] = True
            reach[right[i]] = True
            depth[left[i]] = depth[i] + 1
            depth[right[i]] = depth[i] + 1
    return reach, depth


@njit(inline="always", **_JIT)
def _children(fg_l, bg_l, fg, bg, criterion):  # pragma: no cover - compiled
    """Size-weighted impurity of a split's two children: ``fg_l``/``bg_l`` data and background
    weight on the left of ``fg``/``bg`` in all."""
    fg_r, bg_r = fg - fg_l, bg - bg_l
    left = (fg_l + bg_l) * _impurity(fg_l, bg_l, criterion)
    return left + (fg_r + bg_r) * _impurity(fg_r, bg_r, criterion)


@njit(inline="always", **_JIT)
def _share(t, lo, hi):  # pragma: no cover - compiled
    """Fraction of the node's extent ``[lo, hi]`` below threshold ``t`` (a flat extent holds no
    background, so any share will do)."""
    if hi <= lo:
        return 0.5
    s = (t - lo) / (hi - lo)
    return min(max(s, 0.0), 1.0)


@njit(**_JIT)
def _best_split(
    Z, idx, ww, lo, hi, is_cat, bgc, criterion, min_leaf, order, edge
):  # pragma: no cover
    """Best (gain, feature, threshold) over the features in ``order`` (gain -1: none).

    C4.5 gain with missing values: the gain on rows that know the variable (plus the background,
    which always does), scaled by their share of the node's total weight. With ``edge``, a
    numeric variable also offers the thresholds halfway between the box edge and the node's
    lowest (highest) value: an empty side of background only (report Table A.1)."""
    best_gain = -1.0
    best_f = -1
    best_t = 0.0
    for f in order:
        vals = Z[idx, f]
        known = ~np.isnan(vals)
        kv = vals[known]
        kw = ww[known]
        if kv.shape[0] < 2:
            continue
        srt = np.argsort(kv)
        kv = kv[srt]
        kw = kw[srt]
        k_tot = kw.sum()
        miss = ww.sum() - k_tot
        total = k_tot + bgc
        scale = total / (total + miss)
        parent = _impurity(k_tot, bgc, criterion)
        cum = 0.0
        for i in range(kv.shape[0] - 1):
            cum += kw[i]
            a = kv[i]
            b = kv[i + 1]
            if b <= a or cum < min_leaf or k_tot - cum < min_leaf:
                continue
            if is_cat[f]:
                t0 = math.floor(a) + 1.0
                t1 = math.floor(b)
            else:
                t0 = 0.5 * (a + b)
                if t0 >= b:  # a and b adjacent floats
                    t0 = a
                t1 = t0
            t = t0
            while t <= t1:
                bg_l = bgc * _share(t, lo[f], hi[f])
                gain = scale * (parent - _children(cum, bg_l, k_tot, bgc, criterion) / total)
                if gain > best_gain:
                    best_gain = gain
                    best_f = f
                    best_t = t
                t += 1.0
        if edge and not is_cat[f] and k_tot >= min_leaf:
            for side in range(2):
                if side == 0:
                    if kv[0] <= lo[f]:
                        continue
                    t = 0.5 * (lo[f] + kv[0])
                    fg_l = 0.0
                else:
                    if kv[-1] >= hi[f]:
                        continue
                    t = 0.5 * (kv[-1] + hi[f])
                    fg_l = k_tot
                bg_l = bgc * _share(t, lo[f], hi[f])
                gain = scale * (parent - _children(fg_l, bg_l, k_tot, bgc, criterion) / total)
                if gain > best_gain:
                    best_gain = gain
                    best_f = f
                    best_t = t
    return best_gain, best_f, best_t


@njit(**_JIT)
def _random_split(Z, idx, lo, hi, is_cat, edge, state):  # pragma: no cover - compiled
    """A random variable among those with a candidate threshold, then a random candidate
    threshold (report §3: midpoints between sorted values, plus edge splits). Feature -1 when no
    variable has two distinct values (the data in the node has run out). Whether a variable has
    a candidate needs only its range; only the chosen one is sorted (edge splits on discrete data
    make long chains of nodes that all hold the same rows, so this is most of the growth cost)."""
    d = Z.shape[1]
    has_cand = np.zeros(d, dtype=np.bool_)
    splittable = False
    for f in range(d):
        vmin = np.inf
        vmax = -np.inf
        for i in idx:
            v = Z[i, f]
            if v < vmin:
                vmin = v
            if v > vmax:
                vmax = v
        if vmin > vmax:  # all missing
            continue
        if vmax > vmin:
            splittable = True
        if is_cat[f]:
            a = lo[f] if edge else vmin
            b = hi[f] if edge else vmax
            has_cand[f] = np.int64(math.ceil(b)) - np.int64(math.floor(a)) - 1 > 0
        else:
            has_cand[f] = vmax > vmin or (edge and (vmin > lo[f] or vmax < hi[f]))
    if not splittable:
        return -1, 0.0
    n_ok = 0
    for f in range(d):
        n_ok += has_cand[f]
    pick = _randint(state, n_ok)
    f = 0
    for g in range(d):
        if has_cand[g]:
            if pick == 0:
                f = g
                break
            pick -= 1
    vals = Z[idx, f]
    vals = vals[~np.isnan(vals)]
    if is_cat[f]:
        a = lo[f] if edge else vals.min()
        b = hi[f] if edge else vals.max()
        c = _randint(state, np.int64(math.ceil(b)) - np.int64(math.floor(a)) - 1)
        return f, math.floor(a) + 1.0 + c
    u = np.unique(vals)
    n_cand = u.shape[0] - 1
    if edge:
        n_cand += (u[0] > lo[f]) + (u[-1] < hi[f])
    c = _randint(state, n_cand)
    if edge and u[0] > lo[f]:
        if c == 0:
            return f, 0.5 * (lo[f] + u[0])
        c -= 1
    if c < u.shape[0] - 1:
        t = 0.5 * (u[c] + u[c + 1])
        return f, (u[c] if t >= u[c + 1] else t)
    return f, 0.5 * (u[-1] + hi[f])


@njit(**_JIT)
def _grow(
    Z, rows, w, low, high, is_cat, n_bg, mode, edge, max_depth, min_leaf, max_features, seed
):  # pragma: no cover - compiled
    """Depth-first growth with explicit stacks; see :func:`grow_tree`."""
    d = Z.shape[1]
    state = np.empty(1, dtype=np.uint64)
    state[0] = seed
    cap = 64
    feature = np.full(cap, -1, dtype=np.int64)
    left = np.full(cap, -1, dtype=np.int64)
    right = np.full(cap, -1, dtype=np.int64)
    threshold, fg, bg, p_left = np.zeros(cap), np.zeros(cap), np.zeros(cap), np.full(cap, 0.5)
    bg[0] = n_bg
    n_nodes = 1
    max_seen = 0
    s_idx = [rows]
    s_w = [w]
    s_lo = [low.copy()]
    s_hi = [high.copy()]
    s_node = [0]
    s_depth = [0]
    perm = np.arange(d)
    while len(s_node) > 0:
        idx, ww, lo, hi = s_idx.pop(), s_w.pop(), s_lo.pop(), s_hi.pop()
        node, depth = s_node.pop(), s_depth.pop()
        max_seen = max(max_seen, depth)
        fgw = ww.sum()
        fg[node] = fgw
        bgc = bg[node]
        if idx.shape[0] < 2 or (max_depth >= 0 and depth >= max_depth):
            continue
        if mode == 2:
            f, t = _random_split(Z, idx, lo, hi, is_cat, edge, state)
            if f < 0:
                continue
        else:
            if fgw < 2.0 * min_leaf:
                continue
            gain, f, t = _gain_split(
                Z, idx, ww, lo, hi, is_cat, bgc, mode, min_leaf, max_features, edge, perm, state
            )
            if f < 0 or gain <= 1e-12:
                continue
        miss, go_left, go_right, bg_l, bg_r, pl = _partition(Z, idx, ww, f, t, lo, hi, bgc)
        if n_nodes + 2 > cap:
            cap *= 2
            feature, left, right, threshold, fg, bg, p_left = _grown(
                cap, feature, left, right, threshold, fg, bg, p_left
            )
        li = n_nodes
        ri = n_nodes + 1
        n_nodes += 2
        feature[node] = f
        threshold[node] = t
        left[node] = li
        right[node] = ri
        p_left[node] = pl
        bg[li] = bg_l
        bg[ri] = bg_r
        lo_r = lo.copy()
        hi_l = hi.copy()
        hi_l[f] = min(max(t, lo[f]), hi[f])
        lo_r[f] = hi_l[f]
        for side in range(2):  # right first, so that the left child is grown first
            if side == 0:
                mask, frac, node_c, box_lo, box_hi = go_right, 1.0 - pl, ri, lo_r, hi
            else:
                mask, frac, node_c, box_lo, box_hi = go_left, pl, li, lo, hi_l
            wm = ww * frac
            take = mask | (miss & (wm > _MIN_WEIGHT))
            s_idx.append(idx[take])
            s_w.append(np.where(miss, wm, ww)[take])
            s_lo.append(box_lo)
            s_hi.append(box_hi)
            s_node.append(node_c)
            s_depth.append(depth + 1)
    return (
        feature[:n_nodes], threshold[:n_nodes], left[:n_nodes], right[:n_nodes],
        fg[:n_nodes], bg[:n_nodes], p_left[:n_nodes], max_seen,
    )  # fmt: skip


@njit(**_JIT)
def _gain_split(
    Z, idx, ww, lo, hi, is_cat, bgc, mode, min_leaf, max_features, edge, perm, state
):  # pragma: no cover - compiled
    """``(gain, feature, threshold)`` of the best gain split over the first ``max_features``
    variables, in an order ``perm`` shuffled in place (Fisher-Yates from ``state``), that
    can split the node at all; feature -1 where none can."""
    d = Z.shape[1]
    for i in range(d - 1, 0, -1):  # Fisher-Yates: which features, in which order
        j = _randint(state, i + 1)
        tmp = perm[i]
        perm[i] = perm[j]
        perm[j] = tmp
    gain = -1.0
    f = -1
    t = 0.0
    seen = 0
    for i in range(d):  # the first max_features features that can split at all
        g = perm[i]
        gi, fi, ti = _best_split(
            Z, idx, ww, lo, hi, is_cat, bgc, mode, min_leaf, perm[i : i + 1], edge
        )
        if fi < 0:
            continue
        seen += 1
        if gi > gain:
            gain = gi
            f = g
            t = ti
        if seen >= max_features:
            break
    return gain, f, t


@njit(**_JIT)
def _partition(Z, idx, ww, f, t, lo, hi, bgc):  # pragma: no cover - compiled
    """The split of a node's rows on variable ``f`` at ``t``: known rows by the threshold,
    missing rows to both sides (C4.5). Returns ``(missing, left, right)`` row masks, the
    background expected on each side (the box's volume share) and the share sent left,
    ``(fg + bg)`` of the left child over both."""
    vals = Z[idx, f]
    miss = np.isnan(vals)
    go_left = vals <= t  # False for NaN
    go_right = ~go_left & ~miss
    bg_l = bgc * _share(t, lo[f], hi[f])
    bg_r = bgc - bg_l
    fg_l = ww[go_left].sum()
    fg_r = ww[go_right].sum()
    pl = (fg_l + bg_l) / (fg_l + bg_l + fg_r + bg_r)
    return miss, go_left, go_right, bg_l, bg_r, pl


@njit(**_JIT)
def _grown(cap, feature, left, right, threshold, fg, bg, p_left):  # pragma: no cover - compiled
    """The node arrays of :func:`_grow` widened to ``cap`` nodes, the new ones empty."""
    return (
        _grow_array_i(feature, cap, -1), _grow_array_i(left, cap, -1),
        _grow_array_i(right, cap, -1), _grow_array_f(threshold, cap, 0.0),
        _grow_array_f(fg, cap, 0.0), _grow_array_f(bg, cap, 0.0),
        _grow_array_f(p_left, cap, 0.5),
    )  # fmt: skip


@njit(**_JIT)
def _grow_array_i(a, cap, fill):  # pragma: no cover - compiled
    out = np.full(cap, fill, dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


@njit(**_JIT)
def _grow_array_f(a, cap, fill):  # pragma: no cover - compiled
    out = np.full(cap, fill, dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


@njit(**_JIT)
def _route(Z, roots, feature, threshold, left, right, p_left, value, depth):  # pragma: no cover
    """Mean leaf risk over trees for every row; a missing split variable sends the row both ways
    with weights ``p_left`` and ``1 - p_left`` (one explicit stack, at most ``depth`` deep)."""
    n = Z.shape[0]
    out = np.zeros(n)
    st_node = np.empty(depth + 2, dtype=np.int64)
    st_w = np.empty(depth + 2)
    for i in range(n):
        acc = 0.0
        for r in range(roots.shape[0]):
            st_node[0] = roots[r]
            st_w[0] = 1.0
            top = 1
            while top > 0:
                top -= 1
                nd = st_node[top]
                wt = st_w[top]
                while left[nd] >= 0:
                    x = Z[i, feature[nd]]
                    if np.isnan(x):
                        st_node[top] = right[nd]
                        st_w[top] = wt * (1.0 - p_left[nd])
                        top += 1
                        wt *= p_left[nd]
                        nd = left[nd]
                    elif x <= threshold[nd]:
                        nd = left[nd]
                    else:
                        nd = right[nd]
                acc += wt * value[nd]
        out[i] = acc / roots.shape[0]
    return out


@njit(**_JIT)
def _node_weights(Z, w, feature, threshold, left, right, p_left, depth):  # pragma: no cover
    """Weight reaching each node of one tree (root 0), missing values split as in ``_route``."""
    out = np.zeros(left.shape[0])
    st_node = np.empty(depth + 2, dtype=np.int64)
    st_w = np.empty(depth + 2)
    for i in range(Z.shape[0]):
        if w[i] <= 0.0:
            continue
        st_node[0] = 0
        st_w[0] = w[i]
        top = 1
        while top > 0:
            top -= 1
            nd = st_node[top]
            wt = st_w[top]
            out[nd] += wt
            while left[nd] >= 0:
                x = Z[i, feature[nd]]
                if np.isnan(x):
                    st_node[top] = right[nd]
                    st_w[top] = wt * (1.0 - p_left[nd])
                    top += 1
                    wt *= p_left[nd]
                    nd = left[nd]
                elif x <= threshold[nd]:
                    nd = left[nd]
                else:
                    nd = right[nd]
                out[nd] += wt
    return out


@njit(**_JIT)
def _prune(left, right, value, held_fg, held_bg, loss):  # pragma: no cover - compiled
    """Bottom-up reduced-error pruning; returns the pruned ``left``/``right`` arrays."""
    n = left.shape[0]
    left = left.copy()
    right = right.copy()
    sub = np.zeros(n)  # loss of the (pruned) subtree under each node
    for i in range(n - 1, -1, -1):  # children have larger ids than parents
        p = value[i]
        if loss == 1:
            as_leaf = held_fg[i] * p * p + held_bg[i] * (1.0 - p) * (1.0 - p)
        else:
            as_leaf = held_fg[i] if p >= 0.5 else held_bg[i]
        if left[i] < 0:
            sub[i] = as_leaf
            continue
        below = sub[left[i]] + sub[right[i]]
        if as_leaf < below or (loss == 0 and as_leaf == below):
            left[i] = -1
            right[i] = -1
            sub[i] = as_leaf
        else:
            sub[i] = below
    return left, right
