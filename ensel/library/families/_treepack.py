"""Many fitted scikit-learn trees walked at once: the leaves of a few rows in every tree of a
run in one vectorised walk over their concatenated node arrays, instead of one compiled
``apply`` per tree, whose fixed cost per call (a few microseconds) is most of a small batch's
predict time when a run has hundreds of trees (five siblings of 1,024 boosted stumps are 5,120
calls a row). The walk takes scikit-learn's decisions (``tree_.apply``): a missing value goes
where the node sends missing values, else left when the float32 value is at most the float64
threshold; so the leaves, and every prediction read from them, are the same."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._base import tree_leaves

try:  # numba is a dependency; the numpy walk stays for where it is not installed
    from numba import njit
except ImportError:  # pragma: no cover - exercised only where numba is not installed
    njit = None

__all__ = ["NODE", "PACK_CELLS", "PacksTrees", "TreePack"]

PACK_CELLS = 1 << 16
"""Rows times trees up to which the walk is used; beyond, each tree's compiled ``apply`` (whose
fixed cost the rows then outweigh) with no arrays of that size."""


NODE = np.dtype(
    [
        ("left", np.int32),
        ("right", np.int32),
        ("feature", np.int32),
        ("missing_left", np.bool_),
        ("threshold", np.float64),
    ],
    align=True,
)
"""One node of a :class:`TreePack`, its fields side by side (24 bytes): a step down a tree
reads one record, where separate arrays cost a cache miss each once the pack outgrows the
cache (a forest's five fold siblings hold over a million nodes)."""


class TreePack:
    """The nodes of ``trees`` (fitted scikit-learn estimators or their ``tree_``), one tree
    after another, as :data:`NODE` records: each leaf points to itself, so a fixed number of
    steps (the depth) ends every walk."""

    def __init__(self, trees: list):
        compiled = [getattr(t, "tree_", t) for t in trees]
        counts = np.array([t.node_count for t in compiled], dtype=np.intp)
        self.offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.intp)
        self.depths = np.array([t.max_depth for t in compiled], dtype=np.intp)
        left = np.concatenate([t.children_left for t in compiled]).astype(np.intp)
        right = np.concatenate([t.children_right for t in compiled]).astype(np.intp)
        leaf = left < 0
        shift = np.repeat(self.offsets, counts)
        own = np.arange(left.size, dtype=np.intp)
        self.nodes = np.empty(left.size, dtype=NODE)
        self.nodes["left"] = np.where(leaf, own, left + shift)
        self.nodes["right"] = np.where(leaf, own, right + shift)
        self.nodes["feature"] = np.where(leaf, 0, np.concatenate([t.feature for t in compiled]))
        self.nodes["threshold"] = np.concatenate([t.threshold for t in compiled])
        self.nodes["missing_left"] = np.concatenate(
            [np.asarray(t.missing_go_to_left, dtype=bool) for t in compiled]
        )

    def leaves(self, X32: np.ndarray, k: int) -> np.ndarray:
        """``(k, n)``: the leaf (a node index of its own tree, as ``apply`` gives) of each row
        of ``X32`` (``tree_input``) in each of the first ``k`` trees: compiled where numba is
        installed (each row walks down each tree as far as its leaf), else :meth:`walk`."""
        return self.leaves_at(X32, np.arange(k, dtype=np.intp))

    def leaves_at(self, X32: np.ndarray, trees: np.ndarray) -> np.ndarray:
        """``(len(trees), n)``: :meth:`leaves` in the trees of index ``trees`` (positions in
        the pack, in that order), in one walk."""
        if _compiled_walk is None:
            return self.walk(X32, trees)
        return _compiled_walk(self.nodes, self.offsets[trees], X32)

    def walk(self, X32: np.ndarray, trees: np.ndarray) -> np.ndarray:
        """:meth:`leaves_at` in numpy: every row and tree one step down at a time, as many
        steps as the deepest of those trees has."""
        n, k = X32.shape[0], len(trees)
        roots = np.repeat(self.offsets[trees], n)
        node = roots
        rows = np.tile(np.arange(n, dtype=np.intp), k)
        for _ in range(int(self.depths[trees].max(initial=0))):
            at = self.nodes[node]
            x = X32[rows, at["feature"]]
            go_left = np.where(np.isnan(x), at["missing_left"], x <= at["threshold"])
            node = np.where(go_left, at["left"], at["right"]).astype(np.intp)
        return (node - roots).reshape(k, n)


def _walk(nodes, roots, X32):  # pragma: no cover - compiled
    """The leaves of :meth:`TreePack.leaves`, row by row and tree by tree (compiled): a missing
    value goes where the node sends missing values, else left when the float32 value is at
    most the float64 threshold, down to the node that points to itself."""
    n = X32.shape[0]
    out = np.empty((roots.size, n), dtype=np.intp)
    for t in range(roots.size):
        root = roots[t]
        for i in range(n):
            node = root
            while True:
                at = nodes[node]
                if at.left == node:
                    break
                x = X32[i, at.feature]
                if np.isnan(x):
                    go_left = at.missing_left
                else:
                    go_left = x <= at.threshold
                node = at.left if go_left else at.right
            out[t, i] = node - root
    return out


_compiled_walk = None if njit is None else njit(cache=True, nogil=True)(_walk)


class PacksTrees:
    """For a run's dataclass: :meth:`leaves_of` its trees, walked together for small batches
    (the pack is built on first use and kept, not pickled)."""

    def leaves_of(self, trees: Callable[[], list], k: int, X32: np.ndarray):
        """The leaves of the rows of ``X32`` in the first ``k`` of ``trees()`` (the run's fitted
        scikit-learn trees, in order; called only when the pack is built or the batch is
        large): one array per tree, a list of them or the rows of one ``(k, n)`` array from the
        walk."""
        if k == 0:
            return []
        if k * X32.shape[0] > PACK_CELLS:
            return [tree_leaves(t, X32) for t in trees()[:k]]
        pack = self.__dict__.get("_pack")
        if pack is None:
            pack = self.__dict__["_pack"] = TreePack(trees())
        return pack.leaves(X32, k)

    def at_leaves(self, leaves: list, values: Callable[[], list]) -> np.ndarray:
        """``(k, n, ...)``: each tree's node output at each row's leaf, for the first
        ``k = len(leaves)`` trees, the leaves from the walk of :meth:`leaves_of` (a small
        batch); ``values()`` lists every tree's per-node outputs, read once into one table."""
        pack = self.__dict__.get("_pack")
        if pack is None:  # the leaves came from each tree's apply
            per_tree = values()
            return np.stack([per_tree[i][leaf] for i, leaf in enumerate(leaves)])
        table = self.cached("_node_values", lambda: np.concatenate(values()))
        return table[np.asarray(leaves) + pack.offsets[: len(leaves), None]]

    def siblings_at_leaves(
        self, siblings: list, ks: list[int], X32: np.ndarray, trees: Callable, values: Callable
    ) -> list[np.ndarray]:
        """Per fold sibling ``j`` of ``siblings`` (runs of this class, this one among them, the
        same list on every call): ``(ks[j], n, ...)``, its first ``ks[j]`` trees' node outputs
        at each row's leaf, as :meth:`at_leaves` gives them, from one walk over a pack of every
        sibling's trees (kept on this run): a run's siblings read the same rows, and one
        compiled call instead of one per sibling saves its fixed cost on a few rows.
        ``trees(run)`` lists a run's trees, ``values(run)`` their per-node outputs."""
        key = tuple(id(run) for run in siblings)
        if self.__dict__.get("_siblings_key") != key:
            for name in ("_siblings_pack", "_siblings_values", "_siblings_starts"):
                self.__dict__.pop(name, None)
            self.__dict__["_siblings_key"] = key
            self.__dict__.setdefault("_cached", set()).add("_siblings_key")
        pack = self.cached(
            "_siblings_pack", lambda: TreePack([t for run in siblings for t in trees(run)])
        )
        table = self.cached(
            "_siblings_values", lambda: np.concatenate([v for run in siblings for v in values(run)])
        )
        starts = self.cached(
            "_siblings_starts", lambda: np.cumsum([0] + [len(trees(run)) for run in siblings])
        )
        picked = np.concatenate(
            [
                np.arange(start, start + k, dtype=np.intp)
                for start, k in zip(starts[:-1], ks, strict=True)
            ]
        )
        out = table[pack.leaves_at(X32, picked) + pack.offsets[picked, None]]
        return np.split(out, np.cumsum(ks)[:-1])

    def cached(self, name: str, make: Callable[[], object]):
        """``make()``, computed once and kept under ``name`` (not pickled)."""
        if name not in self.__dict__:
            self.__dict__[name] = make()
            self.__dict__.setdefault("_cached", set()).add(name)
        return self.__dict__[name]

    def __getstate__(self) -> dict:
        """Pickled state, without the pack and what :meth:`cached` keeps."""
        state = dict(self.__dict__)
        for name in [*state.pop("_cached", ()), "_pack"]:
            state.pop(name, None)
        return state
