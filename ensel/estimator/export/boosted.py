"""The ``xgboost`` and ``lightgbm`` families (``gbdt._BoostedRun``, ``_RoundsRegressionRun``)
as graph nodes, written from the boosters' own tree records (xgboost's JSON model, LightGBM's
``dump_model``), one stage being the first rounds of the booster.

Each tree is one ``ai.onnx.ml.TreeEnsembleRegressor`` target giving the leaf reached; the leaf
values are gathered in double and summed per class, then squashed as the library does
(sigmoid for two classes, softmax for more). The comparisons follow each library: LightGBM
reads the input in double and sends ``x <= threshold`` left, NaN the way the split's
missing type says (to 0 where the split saw no missing values); xgboost reads the input as
float32 and sends ``x < threshold`` left, NaN to the split's default child. A categorical
split (a set of category codes) becomes a derived column, 1 where the code is in the set, and
a split on it; a code the view has never seen is missing, as ``gbdt.categorical_codes`` makes it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from ...library.families._base import ConstantRun
from ...library.families.gbdt import _CategoricalRun
from .members import margin_proba, register

__all__: list[str] = []


@dataclass
class _Forest:
    """The nodes of several trees, flat (``tree`` says whose), the class each tree adds to,
    and the category sets that derived columns test (column, codes)."""

    tree: list = field(default_factory=list)
    feature: list = field(default_factory=list)
    mode: list = field(default_factory=list)
    threshold: list = field(default_factory=list)
    yes: list = field(default_factory=list)
    no: list = field(default_factory=list)
    missing_yes: list = field(default_factory=list)
    value: list = field(default_factory=list)
    sizes: list = field(default_factory=list)
    klass: list = field(default_factory=list)
    sets: list = field(default_factory=list)

    def derived(self, width: int, column: int, codes, known=None) -> int:
        """The feature index of the column "code of ``column`` in ``codes``" (missing where
        the code is missing or, with ``known``, not among ``known``)."""
        known = None if known is None else tuple(sorted(float(c) for c in known))
        key = (column, tuple(sorted(float(c) for c in codes)), known)
        if key not in self.sets:
            self.sets.append(key)
        return width + self.sets.index(key)

    def add(self, t: int, feature, mode, threshold, yes, no, missing, value) -> None:
        n = len(mode)
        self.tree += [t] * n
        for name, values in (("feature", feature), ("mode", mode), ("threshold", threshold),
                             ("yes", yes), ("no", no), ("missing_yes", missing),
                             ("value", value)):  # fmt: skip
            getattr(self, name).extend(values)
        self.sizes.append(n)


def _lightgbm_tree(forest: _Forest, t: int, root: dict, width: int) -> None:
    """One LightGBM tree (``dump_model``'s ``tree_structure``), numbered depth first."""
    rows: list[list] = []

    def visit(node: dict) -> int:
        me = len(rows)
        rows.append([])
        if "leaf_value" in node or "split_feature" not in node:
            rows[me] = [0, "LEAF", 0.0, 0, 0, 0, float(node.get("leaf_value", 0.0))]
            return me
        j, kind = int(node["split_feature"]), node["missing_type"]
        if node["decision_type"] == "==":  # in the set goes left; NaN and negatives right
            codes = [float(c) for c in str(node["threshold"]).split("||")]
            row = [forest.derived(width, j, codes), "BRANCH_GT", 0.5, None, None, 0, 0.0]
        elif kind == "Zero":
            raise ValueError("a LightGBM split with zero as missing has no converter")
        else:
            threshold = float(node["threshold"])
            missing = node["default_left"] if kind == "NaN" else 0.0 <= threshold
            row = [j, "BRANCH_LEQ", threshold, None, None, int(bool(missing)), 0.0]
        row[3] = visit(node["left_child"])
        row[4] = visit(node["right_child"])
        rows[me] = row
        return me

    visit(root)
    forest.add(t, *(list(c) for c in zip(*rows, strict=True)))


def _xgboost_tree(forest: _Forest, t: int, tree: dict, width: int) -> None:
    """One xgboost tree of its JSON model: node ``i``'s arrays at position ``i``."""
    left, right = np.asarray(tree["left_children"]), np.asarray(tree["right_children"])
    leaf = left == -1
    split = np.asarray(tree["split_conditions"], dtype=np.float32).astype(np.float64)
    feature = np.asarray(tree["split_indices"]).tolist()
    mode = ["LEAF" if x else "BRANCH_LT" for x in leaf]
    threshold = np.where(leaf, 0.0, split).tolist()
    yes, no = np.where(leaf, 0, left).tolist(), np.where(leaf, 0, right).tolist()
    missing = np.where(leaf, 0, np.asarray(tree["default_left"])).astype(int).tolist()
    kinds = tree.get("split_type", [0] * len(mode))
    segments = dict(zip(tree.get("categories_nodes", []), zip(
        tree.get("categories_segments", []), tree.get("categories_sizes", []), strict=True),
        strict=True))  # fmt: skip
    for i in np.flatnonzero(np.asarray(kinds) == 1):  # in the set goes right
        start, size = segments.get(int(i), (0, 0))
        codes = tree["categories"][start : start + size]
        feature[i] = forest.derived(width, feature[i], codes)
        mode[i], threshold[i] = "BRANCH_GT", 0.5
        yes[i], no[i] = no[i], yes[i]
        missing[i] = 1 - missing[i]
    forest.add(t, feature, mode, threshold, yes, no, missing, np.where(leaf, split, 0.0).tolist())


def _booster_forest(run, width: int, rounds: int, per_round: int) -> _Forest:
    """The first ``rounds`` rounds of ``run``'s booster; tree ``t`` adds to class
    ``t % per_round``."""
    forest = _Forest()
    if run.kind == "lightgbm":
        trees = run.model.booster_.dump_model(num_iteration=rounds)["tree_info"]
        for t, info in enumerate(trees[: rounds * per_round]):
            _lightgbm_tree(forest, t, info["tree_structure"], width)
    else:
        model = json.loads(run.model.get_booster().save_raw("json"))
        trees = model["learner"]["gradient_booster"]["model"]["trees"]
        for t, tree in enumerate(trees[: rounds * per_round]):
            _xgboost_tree(forest, t, tree, width)
    forest.klass = [t % per_round for t in range(len(forest.sizes))]
    return forest


def _base_margin(run, width: int, per_round: int) -> np.ndarray:
    """xgboost's intercept in margin space, ``(per_round,)``: the margin after one round
    less that round's leaves, on a row of missing values (LightGBM folds it into its first
    tree: zero)."""
    if run.kind == "lightgbm":
        return np.zeros(per_round)
    import xgboost

    row = np.full((1, width), np.nan)
    margin = run.model.predict(row, output_margin=True, iteration_range=(0, 1))
    booster = run.model.get_booster()
    matrix = xgboost.DMatrix(row, feature_types=booster.feature_types, enable_categorical=True)
    leaves = booster.predict(matrix, pred_leaf=True, iteration_range=(0, 1)).reshape(-1)
    forest = _booster_forest(run, width, 1, per_round)
    offsets = np.cumsum([0, *forest.sizes[:-1]])
    values = np.asarray(forest.value)[offsets + leaves.astype(int)]
    return np.asarray(margin, dtype=np.float64).reshape(-1) - values


def _input(g, run, matrix: str, width: int, columns) -> str:
    """The matrix as the booster reads it: unseen codes (negative) of the categorical
    ``columns`` missing; float32 for xgboost."""
    from onnx import TensorProto

    x = matrix
    if columns:
        key = ("unseen", matrix, tuple(columns))
        if key not in g.cache:
            mask = np.zeros((1, width), bool)
            mask[0, columns] = True
            negative = g.node("Less", [matrix, g.const(np.float64(0.0))])
            unseen = g.node("And", [negative, g.const(mask)], "unseen")
            g.cache[key] = g.node("Where", [unseen, g.const(np.float64(np.nan)), matrix])
        x = g.cache[key]
    if run.kind == "xgboost":
        rounded = g.node("Cast", [x], "x32", to=TensorProto.FLOAT)
        x = g.node("Cast", [rounded], "x32", to=TensorProto.DOUBLE)
    return x


def _derived(g, x: str, forest: _Forest) -> str:
    """``x`` with one column per category set of ``forest``: 1.0 where the code is in it,
    NaN where it is missing (so the split's missing direction applies)."""
    if not forest.sets:
        return x
    blocks = [x]
    nan = g.const(np.float64(np.nan))
    for column, codes, known in forest.sets:
        cell = g.node("Gather", [x, g.const(np.array([column], np.int64))], "code", axis=1)
        hit = _count_in(g, cell, codes)
        absent = g.node("IsNaN", [cell])
        if known is not None:
            unknown = g.node("Equal", [_count_in(g, cell, known), g.const(np.float64(0.0))])
            absent = g.node("Or", [absent, unknown])
        blocks.append(g.node("Where", [absent, nan, hit], "in_set"))
    return g.node("Concat", blocks, "with_sets", axis=1)


def _count_in(g, cell: str, codes) -> str:
    """``(n, 1)`` double: 1.0 where ``cell`` is one of the distinct ``codes``, else 0.0."""
    from onnx import TensorProto

    hit = g.node("Equal", [cell, g.const(np.asarray(codes, np.float64)[None, :])])
    hit = g.node("Cast", [hit], "in_set", to=TensorProto.DOUBLE)
    return g.node("ReduceSum", [hit, g.const(np.array([1], np.int64))], keepdims=1)


def _margins(g, x: str, forest: _Forest, n_margins: int, base: np.ndarray) -> str:
    """The summed leaf values per class, ``(n, n_margins)`` double, plus ``base``."""
    from onnx import TensorProto, numpy_helper

    sizes = np.asarray(forest.sizes)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    local = np.concatenate([np.arange(s) for s in sizes])
    leaf = np.asarray(forest.mode) == "LEAF"
    tree = np.asarray(forest.tree)
    attrs = {
        "n_targets": len(sizes),
        "nodes_treeids": forest.tree,
        "nodes_nodeids": local.tolist(),
        "nodes_featureids": [int(f) for f in forest.feature],
        "nodes_modes": forest.mode,
        "nodes_values_as_tensor": numpy_helper.from_array(np.asarray(forest.threshold, float)),
        "nodes_truenodeids": [int(v) for v in forest.yes],
        "nodes_falsenodeids": [int(v) for v in forest.no],
        "nodes_missing_value_tracks_true": [int(v) for v in forest.missing_yes],
        "target_treeids": tree[leaf].tolist(),
        "target_nodeids": local[leaf].tolist(),
        "target_ids": tree[leaf].tolist(),
        "target_weights_as_tensor": numpy_helper.from_array(local[leaf].astype(np.float64)),
        "aggregate_function": "SUM",
        "post_transform": "NONE",
    }
    ids = g.node("TreeEnsembleRegressor", [x], "leaves", domain="ai.onnx.ml", **attrs)
    ids = g.node("Cast", [ids], "leaves", to=TensorProto.INT64)
    rows = g.node("Add", [ids, g.const(offsets[None, :].astype(np.int64))])
    table = np.zeros((leaf.size, n_margins))
    table[np.arange(leaf.size), np.repeat(forest.klass, sizes)] = forest.value
    values = g.node("Gather", [g.const(table), rows], "leaf_values", axis=0)  # (n, T, K)
    total = g.node("ReduceSum", [values, g.const(np.array([1], np.int64))], keepdims=0)
    return g.node("Add", [total, g.const(base[None, :].astype(np.float64))], "margins")


def _boosted_margins(g, run, matrix: str, rounds: int, per_round: int, columns) -> str:
    width = run.model.n_features_in_
    forest = _booster_forest(run, width, rounds, per_round)
    base = _base_margin(run, width, per_round)
    x = _derived(g, _input(g, run, matrix, width, columns), forest)
    return _margins(g, x, forest, per_round, base)


@register("xgboost", "lightgbm")
def _boosted(g, run, matrix: str, stage: int, n_outputs: int) -> str:
    """Stage ``stage`` of a boosted classifier: its rounds' margins squashed, normalised and
    widened to every class (``gbdt._BoostedRun.predict``)."""
    columns = list(run.columns) if isinstance(run, _CategoricalRun) else []
    run = run.inner if isinstance(run, _CategoricalRun) else run
    if isinstance(run, ConstantRun):
        raise ValueError("a boosted run that saw one class has no converter")
    s = run.stages[stage] if run.best is None else min(run.stages[stage], run.best)
    per_round = 1 if run.classes.size == 2 else run.classes.size
    z = _boosted_margins(g, run, matrix, s, per_round, columns)
    return margin_proba(g, z, per_round == 1, run)


@register("xgboost", "lightgbm", task="regression")
def _boosted_regression(g, run, matrix: str, stage: int, n_outputs: int) -> str:
    """Stage ``stage`` of a boosted regressor: the sum of its rounds' leaves, one column."""
    s = run.stages[stage] if run.best is None else min(run.stages[stage], run.best)
    return _boosted_margins(g, run, matrix, s, 1, [])
