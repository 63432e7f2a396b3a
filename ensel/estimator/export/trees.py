"""Tree ensembles as graph nodes: the trees of several forests (a run's fold siblings, each on
its own input matrix) as one ``ai.onnx.ml.TreeEnsemble`` (ML opset 5), whose outputs are
summed per forest and stage in double. Where each leaf row has one value (a boosted tree's
margin, a binary forest's positive column, a regression tree), the leaf's weight is that
value in double, the input read in double, and the operator itself sums the trees of each
forest's stage segment (given the stages' tree counts; else each tree is its own target):
the sums are Python's up to their order, with nothing to gather per call and a few outputs
per forest. Otherwise (class-probability rows of several classes) each tree's target is its
leaf's row in one table of leaf values, gathered from the table in double.

The table holds the leaves only (one row each, plus a zero row that pads a forest with fewer
trees than the others), and the operator's layout holds the splits only, a split's mode as
one byte; a categorical split is one ``BRANCH_MEMBER`` node testing the set of its codes.
A forest whose model reads its input rounded to float32 (scikit-learn's trees, xgboost) reads
the input cast to float32 once: in double where the targets are values, else held in float32
with float32 thresholds where its leaf rows are exact in float32; the thresholds are the
largest float32 a float32 input compares with alike (:func:`float32_threshold`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

__all__ = [
    "LEAF",
    "MODES",
    "Forest",
    "LeafValues",
    "float32_threshold",
    "leaf_sums",
    "sklearn_tree",
]

LEAF = 255
"""The mode code of a leaf in :class:`Forest` (never written: leaves are not split nodes)."""
MODES = {"BRANCH_LEQ": 0, "BRANCH_LT": 1, "BRANCH_GT": 3, "BRANCH_MEMBER": 6, "LEAF": LEAF}
"""``TreeEnsemble``'s node modes by name."""
EXACT_FLOAT = 2**24
"""Leaf rows below this are exact in float32, the operator's output type on float32 input."""


@dataclass
class Forest:
    """The trees of one model, each as per-node arrays numbered from its root ``0`` (a leaf's
    split fields unused), ``values[i]`` the row of leaf ``i`` (``n_values`` wide), and
    ``members[i]`` the codes a ``BRANCH_MEMBER`` node ``i`` tests. ``rounded``: the model
    reads its input rounded to float32 (its thresholds are float32 values). ``sets``: derived
    columns appended to the input (column, codes, known), see ``boosted._derived``."""

    n_values: int
    rounded: bool = False
    trees: list = field(default_factory=list)
    sets: list = field(default_factory=list)

    def add(self, feature, mode, threshold, yes, no, missing, values, members=None) -> None:
        """One tree: per node its feature, mode code (:data:`MODES`), threshold, children,
        whether NaN goes to ``yes``, and the ``(nodes, n_values)`` rows read at its leaves."""
        arrays = [np.asarray(a) for a in (feature, mode, threshold, yes, no, missing)]
        values = np.asarray(values, dtype=np.float64).reshape(len(arrays[1]), self.n_values)
        self.trees.append((*arrays, values, dict(members or {})))

    def derived(self, width: int, column: int, codes, known=None) -> int:
        """The feature index of the column "code of ``column`` in ``codes``" (missing where
        the code is missing or, with ``known``, not among ``known``)."""
        known = None if known is None else tuple(sorted(float(c) for c in known))
        key = (column, tuple(sorted(float(c) for c in codes)), known)
        if key not in self.sets:
            self.sets.append(key)
        return width + self.sets.index(key)


def float32_threshold(threshold: np.ndarray) -> np.ndarray:
    """The largest float32 at most each double ``threshold``: a float32 ``x`` is ``<=`` one
    exactly where it is ``<=`` the other (scikit-learn compares float32 input with double
    thresholds)."""
    t = np.asarray(threshold, dtype=np.float64)
    rounded = t.astype(np.float32)
    above = rounded.astype(np.float64) > t
    rounded[above] = np.nextafter(rounded[above], np.float32(-np.inf))
    return rounded


def sklearn_tree(forest: Forest, tree, values: np.ndarray) -> None:
    """Add scikit-learn's ``tree_`` (``x <= threshold`` left, NaN the way the split learnt)
    with the per-node rows ``values``, to a forest that reads float32 input."""
    leaf = tree.children_left == -1
    go_left = getattr(tree, "missing_go_to_left", np.zeros(tree.node_count, np.uint8))
    forest.add(
        np.where(leaf, 0, tree.feature),
        np.where(leaf, LEAF, MODES["BRANCH_LEQ"]),
        np.where(leaf, 0.0, float32_threshold(tree.threshold)),
        tree.children_left,
        tree.children_right,
        np.where(leaf, 0, go_left),
        values,
    )


def leaf_sums(g, parts: list[tuple[str, int, Forest]], flat: bool = False) -> str:
    """Double ``(n, S, K)``: for each of the ``S`` parts ``(matrix, width, forest)``, the sum
    over the forest's trees of the value rows (``K`` wide) of the leaves the matrix's rows
    reach (``flat`` with ``K == 1``: ``(n, S)``). See :func:`leaf_values`."""
    values = leaf_values(g, None, lambda: parts)
    return stage_sums(g, values, [len(forest.trees) for _, _, forest in parts], flat)


class LeafValues(NamedTuple):
    """Leaf values of several forests as graph nodes: ``name``, double ``(n, S, T, K)`` (part
    ``s``, slot ``t``: a tree, or a stage segment of trees), and ``segments`` where the slots
    are segments: each part's stage tree counts (ascending) and the ensemble's own
    ``(n, S T K)`` output, which :func:`stage_sums` reads by tree counts."""

    name: str
    n_slots: int
    k: int
    segments: tuple[list[list[int]], str] | None = None


def leaf_values(g, key, parts, bounds=None) -> LeafValues:
    """The :class:`LeafValues` of the parts: double ``(n, S, T, K)``, the value row of the
    leaf tree ``t`` of part ``s`` reaches (a zero row past a forest's last tree), for the parts
    ``(matrix, width, forest)`` that the callable ``parts`` builds, written once per ``key``
    (every time where ``key`` is None). One tree ensemble reads every part's matrix side by
    side: where each leaf row has one value (the others zero), the ensemble gives that value
    in double itself (:func:`_leaf_outputs`), else the leaf's row in a table of leaves,
    gathered after it. ``bounds`` (the tree counts of each part's stages, ascending): with
    leaf values the ensemble sums them per stage segment, ``t`` then the segment (the trees
    from the previous bound to this one), which :func:`stage_sums` reads by tree counts."""
    if key is not None and ("leaf values", key) in g.cache:
        return g.cache[("leaf values", key)]
    parts = parts()
    forests = [forest for _, _, forest in parts]
    n_trees = max(len(f.trees) for f in forests)
    k = forests[0].n_values
    leaves = [tree[6][tree[1] == LEAF] for f in forests for tree in f.trees]
    if all((np.count_nonzero(rows, axis=1) <= 1).all() for rows in leaves):
        bounds = None if bounds is None else [[int(c) for c in b] for b in bounds]
        slots = _slots(forests, bounds)
        n_slots = n_trees if bounds is None else max(len(b) for b in bounds)
        values = _leaf_outputs(g, parts, forests, slots, n_slots, k)
    else:
        n_slots, bounds = n_trees, None
        values = _gathered_rows(g, parts, forests, n_trees, np.vstack(leaves))
    shape = np.array([0, len(parts), n_slots, k], np.int64)
    segments = None if bounds is None else (bounds, values)
    out = LeafValues(g.node("Reshape", [values, g.const(shape)]), n_slots, k, segments)
    if key is not None:
        g.cache[("leaf values", key)] = out
    return out


def _slots(forests, bounds) -> list[np.ndarray]:
    """Each part's slot of each tree: the tree itself, or with ``bounds`` its stage segment
    (the first stage whose tree count is past it)."""
    if bounds is None:
        return [np.arange(len(f.trees)) for f in forests]
    out = []
    for forest, ends in zip(forests, bounds, strict=True):
        slot = np.searchsorted(np.asarray(ends), np.arange(len(forest.trees)), side="right")
        if slot.size and slot[-1] >= len(ends):
            raise ValueError(f"a forest of {len(forest.trees)} trees past its stages {ends}")
        out.append(slot)
    return out


def _leaf_outputs(g, parts, forests, slots, n_slots: int, k: int) -> str:
    """Double ``(n, S U K)``: target ``(s U + u) K + j`` is the sum of the values of the
    leaves the trees of slot ``u`` (:func:`_slots`) of part ``s`` reach, where the leaf's row
    has its value in column ``j`` (zero elsewhere); the operator sums in double, the leaves'
    values read where the walks end (no index to cast, no table to gather from: a service
    pays for neither on each call)."""
    x, offsets = _side_by_side(g, parts, forests[0].rounded, False)
    attrs = _attributes(forests, offsets, n_slots, 0, False, k, slots)
    return g.node("TreeEnsemble", [x], "leaves", domain="ai.onnx.ml", **attrs)


def _gathered_rows(g, parts, forests, n_trees: int, table: np.ndarray) -> str:
    """Double ``(n, S T, K)``: the rows of ``table`` (the forests' leaves in order) of the
    leaves the trees reach, the ensemble giving each tree's leaf row as its target."""
    from onnx import TensorProto

    table = np.vstack([table, np.zeros((1, table.shape[1]))])  # the padding trees' leaf
    single = forests[0].rounded and table.shape[0] < EXACT_FLOAT
    x, offsets = _side_by_side(g, parts, forests[0].rounded, single)
    attrs = _attributes(forests, offsets, n_trees, table.shape[0] - 1, single)
    rows = g.node("TreeEnsemble", [x], "leaves", domain="ai.onnx.ml", **attrs)
    rows = g.node("Cast", [rows], "leaves", to=TensorProto.INT64)
    return g.node("Gather", [g.const(table), rows], "leaf_values", axis=0)


def stage_sums(g, values: LeafValues, counts: list[int], flat: bool = False) -> str:
    """Double ``(n, S, K)`` (``flat`` with ``K == 1``: ``(n, S)``): for each part of
    :func:`leaf_values`' ``values``, the sum over its first ``counts[s]`` trees (segments
    up to the stage of that count where the values are summed per segment)."""
    name, n_trees, k, segments = values
    if segments is not None:
        bounds, flat_values = segments
        counts = [ends.index(int(c)) + 1 for ends, c in zip(bounds, counts, strict=True)]
        if flat and k == 1:  # the segments' outputs (n, S U) times a 0/1 (S U, S): one node
            pick = np.zeros((len(counts), n_trees, len(counts)))
            for s, c in enumerate(counts):
                pick[s, :c, s] = 1.0
            pick = pick.reshape(len(counts) * n_trees, len(counts))
            return g.node("MatMul", [flat_values, g.const(pick)], "sums")
    if len(set(counts)) == 1 and counts[0] < n_trees:  # a prefix of every part
        ends = np.array([counts[0]], np.int64)
        two = np.array([2], np.int64)
        name = g.node("Slice", [name, g.const(np.array([0], np.int64)), g.const(ends),
                                g.const(two)], "stage")  # fmt: skip
    elif len(set(counts)) > 1:
        mask = np.arange(n_trees)[None, :] < np.asarray(counts)[:, None]
        name = g.node("Mul", [name, g.const(mask[None, :, :, None].astype(np.float64))], "stage")
    axes = [2, 3] if flat and k == 1 else [2]
    return g.node("ReduceSum", [name, g.const(np.array(axes, np.int64))], "sums", keepdims=0)


def _side_by_side(g, parts, rounded: bool, single: bool) -> tuple[str, list[int]]:
    """The parts' distinct matrices side by side (as the trees read them: rounded to float32,
    held in float32 when ``single``) and each part's first column in it."""
    from onnx import TensorProto

    names: list[str] = []
    widths: dict[str, int] = {}
    for matrix, width, _ in parts:
        if matrix not in widths:
            names.append(matrix)
            widths[matrix] = width
    starts = dict(zip(names, np.cumsum([0, *[widths[m] for m in names[:-1]]]).tolist(),
                      strict=True))  # fmt: skip
    key = ("trees input", tuple(names), rounded, single)
    if key not in g.cache:
        x = names[0] if len(names) == 1 else g.node("Concat", names, "siblings_x", axis=1)
        if rounded:
            x = g.node("Cast", [x], "x32", to=TensorProto.FLOAT)
            if not single:
                x = g.node("Cast", [x], "x32", to=TensorProto.DOUBLE)
        g.cache[key] = x
    return g.cache[key], [starts[matrix] for matrix, _, _ in parts]


def _attributes(
    forests, offsets, n_trees: int, padding: int, single: bool, k=None, slots=None
) -> dict:
    """``TreeEnsemble``'s attributes. Without ``k``: target ``s * n_trees + i`` is tree ``i``
    of forest ``s`` (or a padding tree whose leaf is row ``padding``), its leaf weight the
    leaf's row in the table of leaves. With ``k`` (leaf rows of ``k`` values, one of them
    not zero) and ``slots`` (each forest's slot of each tree, ``n_trees`` slots):
    target ``(s * n_trees + slots[s][i]) * k + j``, its leaf weight the value in column
    ``j``; a slot no tree fills stays zero."""
    from onnx import numpy_helper

    out: dict[str, list] = {k: [] for k in ("feature", "mode", "split", "true", "false",
                                            "true_leaf", "false_leaf", "missing", "roots",
                                            "target", "weight", "members")}  # fmt: skip
    count = {"splits": 0, "leaves": 0, "rows": 0}
    for s, (forest, offset) in enumerate(zip(forests, offsets, strict=True)):
        for i, tree in enumerate(forest.trees):
            target = s * n_trees + (i if slots is None else int(slots[s][i]))
            _tree(out, tree, offset, _leaf_entries(tree, target, k, count), count)
        if k is None:
            for i in range(len(forest.trees), n_trees):
                _stump(out, s * n_trees + i, padding, count)
    dtype = np.float32 if single else np.float64
    members = {}
    if out["members"]:
        values = numpy_helper.from_array(np.asarray(out["members"], dtype))
        members = {"membership_values": values}
    return {
        "n_targets": len(forests) * n_trees * (1 if k is None else k),
        "aggregate_function": 1,  # SUM: one leaf per target
        "post_transform": 0,
        "tree_roots": out["roots"],
        "nodes_featureids": out["feature"],
        "nodes_modes": numpy_helper.from_array(np.asarray(out["mode"], np.uint8)),
        "nodes_splits": numpy_helper.from_array(np.asarray(out["split"], dtype)),
        "nodes_truenodeids": out["true"],
        "nodes_falsenodeids": out["false"],
        "nodes_trueleafs": out["true_leaf"],
        "nodes_falseleafs": out["false_leaf"],
        "nodes_missing_value_tracks_true": out["missing"],
        "leaf_targetids": out["target"],
        "leaf_weights": numpy_helper.from_array(np.asarray(out["weight"], dtype)),
        **members,
    }


def _leaf_entries(tree, target: int, k, count: dict) -> tuple[list, list]:
    """``(targets, weights)`` of a tree's leaves in node order (see :func:`_attributes`);
    ``count["rows"]``: the table rows taken so far (without ``k``)."""
    rows = tree[6][tree[1] == LEAF]
    if k is None:
        first = count["rows"]
        count["rows"] += len(rows)
        return [target] * len(rows), list(range(first, first + len(rows)))
    column = np.argmax(rows != 0, axis=1)
    weights = rows[np.arange(len(rows)), column]
    return (target * k + column).tolist(), weights.tolist()


def _tree(out: dict, tree, offset: int, leaves: tuple[list, list], count: dict) -> None:
    """Append one tree's splits and its leaves' ``(targets, weights)`` to ``out``;
    ``count``: the splits and leaves written so far."""
    feature, mode, split, yes, no, missing, _, members = tree
    leaf = mode == LEAF
    targets, weights = leaves
    if leaf[0]:  # a tree of one leaf: its root a split whose both sides are that leaf
        _stump(out, targets[0], weights[0], count)
        return
    n_splits, n_leaves = count["splits"], count["leaves"]
    rank = np.where(leaf, np.cumsum(leaf) - 1 + n_leaves, np.cumsum(~leaf) - 1 + n_splits)
    inner = np.flatnonzero(~leaf)
    out["roots"].append(n_splits)
    out["feature"] += (feature[inner].astype(np.int64) + offset).tolist()
    out["mode"] += mode[inner].tolist()
    out["split"] += split[inner].tolist()
    out["true"] += rank[yes[inner]].tolist()
    out["false"] += rank[no[inner]].tolist()
    out["true_leaf"] += leaf[yes[inner]].astype(int).tolist()
    out["false_leaf"] += leaf[no[inner]].astype(int).tolist()
    out["missing"] += missing[inner].astype(int).tolist()
    for i in inner[mode[inner] == MODES["BRANCH_MEMBER"]]:
        out["members"] += [*members[int(i)], np.nan]
    out["target"] += targets
    out["weight"] += weights
    count["splits"] += inner.size
    count["leaves"] += len(targets)


def _stump(out: dict, target: int, weight, count: dict) -> None:
    """Append a tree of one leaf of ``weight`` (a table row, or a value) for ``target``: a
    split whose both sides are it."""
    out["roots"].append(count["splits"])
    for key, value in (("feature", 0), ("mode", MODES["BRANCH_LEQ"]), ("split", 0.0),
                       ("true", count["leaves"]), ("false", count["leaves"]),
                       ("true_leaf", 1), ("false_leaf", 1), ("missing", 0),
                       ("target", target), ("weight", weight)):  # fmt: skip
        out[key].append(value)
    count["splits"] += 1
    count["leaves"] += 1
