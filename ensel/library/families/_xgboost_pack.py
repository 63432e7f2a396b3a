"""A binary xgboost model's trees walked in compiled code for a few rows. xgboost's own C call
costs a fixed few hundred microseconds per call whatever the rows (most of a fold sibling's
share of one row), where the walk of a few hundred shallow trees takes tens. The walk makes
xgboost's decisions in its arithmetic: the row read as float32, a missing value sent where
the node sends missing values, a numeric split left when the value is below the condition, a
categorical split right when the value's category is in the node's set; the leaf values summed
in float32, tree after tree, from the base margin, then the float32 logistic. A pack is made
only where a probe of rows gives xgboost's own numbers bit for bit; elsewhere (another
objective, another booster, a disagreeing library version) the caller keeps the C call."""

from __future__ import annotations

import json

import numpy as np

try:  # numba is a dependency; without it the C call stays
    from numba import njit
except ImportError:  # pragma: no cover - exercised only where numba is not installed
    njit = None

__all__ = ["XGBoostPack"]

_PROBE_ROWS = 16
"""Rows of the probe a pack must reproduce bit for bit before it is used."""


class XGBoostPack:
    """The nodes of every tree of a ``binary:logistic`` gbtree booster, one tree after another
    (a leaf points to itself), and its base margin."""

    def __init__(self, trees: list[dict], base_margin: np.float32):
        counts = [len(t["left_children"]) for t in trees]
        self.roots = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        self.base_margin = np.float32(base_margin)
        left, right, cat_begin, cat_end, cats = [], [], [], [], []
        for tree, root in zip(trees, self.roots, strict=True):
            own = np.arange(len(tree["left_children"]))
            for side, out in (("left_children", left), ("right_children", right)):
                child = np.asarray(tree[side])
                out.append(np.where(child < 0, own, child) + root)
            begin = np.full(own.size, len(cats), dtype=np.int64)
            end = begin.copy()
            for node, start, size in zip(
                tree["categories_nodes"],
                tree["categories_segments"],
                tree["categories_sizes"],
                strict=True,
            ):
                begin[node] = len(cats)
                cats.extend(tree["categories"][start : start + size])
                end[node] = len(cats)
            cat_begin.append(begin)
            cat_end.append(end)
        self.left = np.concatenate(left).astype(np.int64)
        self.right = np.concatenate(right).astype(np.int64)
        self.feature = np.concatenate([t["split_indices"] for t in trees]).astype(np.int64)
        # a leaf's condition is its value
        self.condition = np.concatenate([t["split_conditions"] for t in trees]).astype(np.float32)
        self.default_left = np.concatenate([t["default_left"] for t in trees]).astype(np.bool_)
        self.categorical = np.concatenate([t["split_type"] for t in trees]).astype(np.bool_)
        self.cat_begin = np.concatenate(cat_begin)
        self.cat_end = np.concatenate(cat_end)
        self.cats = np.asarray(cats, dtype=np.int64)

    @classmethod
    def of(cls, booster, missing: float) -> XGBoostPack | None:
        """The pack of a fitted booster where its trees can be walked so (numba installed, NaN
        as missing, a ``binary:logistic`` gbtree of one tree per round) and the walk gives the
        library's values on a probe of rows (each feature's split conditions, zeros, missing
        values) bit for bit; else None."""
        if _compiled_margins is None or not np.isnan(missing):
            return None
        learner = json.loads(bytes(booster.save_raw("json")))["learner"]
        model = learner["gradient_booster"]
        if learner["objective"]["name"] != "binary:logistic" or model.get("name") != "gbtree":
            return None
        trees = model["model"]["trees"]
        if int(model["model"]["gbtree_model_param"].get("num_parallel_tree", 1)) != 1:
            return None
        base = np.float32(float(learner["learner_model_param"]["base_score"].strip("[]")))
        pack = cls(trees, -np.log(np.float32(1.0) / base - np.float32(1.0)))
        probe = _probe(pack, int(learner["learner_model_param"]["num_feature"]))
        from ._native_predict import xgboost_value

        want = xgboost_value(booster, probe, len(trees), missing)
        return pack if np.array_equal(pack.values(probe, len(trees)), want) else None

    def values(self, X: np.ndarray, rounds: int) -> np.ndarray:
        """Float32 ``(n,)``: the probability of the positive class of each row of ``X`` after
        the first ``rounds`` trees, as ``inplace_predict(..., predict_type="value")``."""
        X32 = np.ascontiguousarray(X, dtype=np.float32)
        return _compiled_margins(
            self.left,
            self.right,
            self.feature,
            self.condition,
            self.default_left,
            self.categorical,
            self.cat_begin,
            self.cat_end,
            self.cats,
            self.roots[:rounds],
            X32,
            self.base_margin,
        )


def _probe(pack: XGBoostPack, n_features: int) -> np.ndarray:
    """Rows that reach many leaves: every feature at a node's condition (the edge of a
    numeric split), a little below or above it, or at a small whole number (a category);
    then a row of zeros and a row of missing values."""
    rng = np.random.default_rng(0)
    rows = np.zeros((_PROBE_ROWS, max(n_features, 1)))
    inner = np.flatnonzero(pack.left != np.arange(pack.left.size))
    for i in range(_PROBE_ROWS - 2):
        if i % 4 == 3 or not inner.size:
            rows[i] = rng.integers(0, 4, size=rows.shape[1])
            continue
        at = pack.condition[rng.choice(inner, size=rows.shape[1])].astype(np.float64)
        rows[i] = at + (i % 4 - 1) * 1e-3 * np.abs(at)
    rows[-1] = np.nan
    return rows


def _margins(left, right, feature, condition, default_left, categorical, cat_begin, cat_end,
             cats, roots, X32, base_margin):  # fmt: skip  # pragma: no cover - compiled
    """The values of :meth:`XGBoostPack.values` (compiled): float32 sums, then the float32
    logistic."""
    n = X32.shape[0]
    out = np.empty(n, dtype=np.float32)
    one = np.float32(1.0)
    for i in range(n):
        total = base_margin
        for t in range(roots.size):
            node = roots[t]
            while left[node] != node:
                x = X32[i, feature[node]]
                if np.isnan(x):
                    go_left = default_left[node]
                elif categorical[node]:
                    go_left = True
                    if x >= 0:
                        code = np.int64(x)
                        for j in range(cat_begin[node], cat_end[node]):
                            if cats[j] == code:
                                go_left = False
                else:
                    go_left = x < condition[node]
                node = left[node] if go_left else right[node]
            total = total + condition[node]
        out[i] = one / (one + np.exp(-total))
    return out


_compiled_margins = None if njit is None else njit(cache=True, nogil=True)(_margins)
