"""The ``xgboost`` and ``lightgbm`` families (``gbdt._BoostedRun``, ``_RoundsRegressionRun``) as
graph nodes, written from the boosters' own tree records (xgboost's JSON model, LightGBM's
``dump_model``), one stage being the first rounds of the booster.

All fold siblings of a member (and the stages of one run) are one tree ensemble giving each
tree's leaf (:mod:`.trees`); the leaf values are gathered in double and summed per sibling and
class, then squashed as the library does (sigmoid for two classes, softmax for more). The
comparisons follow each library: LightGBM reads the input in double and sends ``x <= threshold``
left, NaN the way the split's missing type says (to 0 where the split saw no missing values);
xgboost reads the input as float32 and sends ``x < threshold`` left, NaN to the split's default
child. A categorical split (a set of category codes) is one ``BRANCH_MEMBER`` node testing the
set; a code the view has never seen is missing, as ``gbdt.categorical_codes`` makes it.
(scikit-learn's ``hist_gbdt`` splits, which send a code never seen in fit the missing way, test
a derived column instead: :func:`_derived`.)"""

from __future__ import annotations

import json

import numpy as np

from ...library.families._base import ConstantRun
from ...library.families.gbdt import _CategoricalRun
from .members import _widen, register_runs
from .trees import LEAF, MODES, Forest, LeafValues, leaf_values, stage_sums

__all__: list[str] = []


def _klass_values(value, klass: int, per_round: int) -> np.ndarray:
    """Per-node rows ``(nodes, per_round)``: ``value`` in column ``klass``."""
    values = np.zeros((len(value), per_round))
    values[:, klass] = value
    return values


def _lightgbm_tree(forest: Forest, root: dict, klass: int) -> None:
    """One LightGBM tree (``dump_model``'s ``tree_structure``), numbered depth first; a
    categorical split sends the codes of its set left, NaN and other codes right."""
    rows: list[list] = []
    members: dict[int, list] = {}

    def visit(node: dict) -> int:
        me = len(rows)
        rows.append([])
        if "leaf_value" in node or "split_feature" not in node:
            rows[me] = [0, LEAF, 0.0, 0, 0, 0, float(node.get("leaf_value", 0.0))]
            return me
        j, kind = int(node["split_feature"]), node["missing_type"]
        if node["decision_type"] == "==":
            members[me] = [float(c) for c in str(node["threshold"]).split("||")]
            row = [j, MODES["BRANCH_MEMBER"], 0.0, None, None, 0, 0.0]
        elif kind == "Zero":
            raise ValueError("a LightGBM split with zero as missing has no converter")
        else:
            threshold = float(node["threshold"])
            missing = node["default_left"] if kind == "NaN" else 0.0 <= threshold
            row = [j, MODES["BRANCH_LEQ"], threshold, None, None, int(bool(missing)), 0.0]
        row[3] = visit(node["left_child"])
        row[4] = visit(node["right_child"])
        rows[me] = row
        return me

    visit(root)
    columns = (np.asarray(c) for c in zip(*rows, strict=True))
    feature, mode, threshold, yes, no, missing, value = columns
    values = _klass_values(value, klass, forest.n_values)
    forest.add(feature, mode, threshold, yes, no, missing, values, members)


def _xgboost_tree(forest: Forest, tree: dict, klass: int) -> None:
    """One xgboost tree of its JSON model: node ``i``'s arrays at position ``i``; a
    categorical split sends the codes of its set right."""
    left, right = np.asarray(tree["left_children"]), np.asarray(tree["right_children"])
    leaf = left == -1
    split = np.asarray(tree["split_conditions"], dtype=np.float32).astype(np.float64)
    mode = np.where(leaf, LEAF, MODES["BRANCH_LT"])
    yes, no = np.where(leaf, 0, left), np.where(leaf, 0, right)
    missing = np.where(leaf, 0, np.asarray(tree["default_left"])).astype(int)
    kinds = np.asarray(tree.get("split_type", [0] * leaf.size))
    segments = dict(zip(tree.get("categories_nodes", []), zip(
        tree.get("categories_segments", []), tree.get("categories_sizes", []), strict=True),
        strict=True))  # fmt: skip
    members = {}
    for i in np.flatnonzero(kinds == 1):  # in the set goes right
        start, size = segments.get(int(i), (0, 0))
        members[int(i)] = [float(c) for c in tree["categories"][start : start + size]]
        mode[i] = MODES["BRANCH_MEMBER"]
        yes[i], no[i] = no[i], yes[i]
        missing[i] = 1 - missing[i]
    feature = np.where(leaf, 0, np.asarray(tree["split_indices"]))
    values = _klass_values(np.where(leaf, split, 0.0), klass, forest.n_values)
    forest.add(feature, mode, np.where(leaf, 0.0, split), yes, no, missing, values, members)


def _booster_forest(run, rounds: int, per_round: int) -> Forest:
    """The first ``rounds`` rounds of ``run``'s booster; tree ``t`` adds to class
    ``t % per_round``. xgboost reads its input rounded to float32."""
    forest = Forest(per_round, rounded=run.kind != "lightgbm")
    if run.kind == "lightgbm":
        trees = run.model.booster_.dump_model(num_iteration=rounds)["tree_info"]
        for t, info in enumerate(trees[: rounds * per_round]):
            _lightgbm_tree(forest, info["tree_structure"], t % per_round)
    else:
        model = json.loads(run.model.get_booster().save_raw("json"))
        trees = model["learner"]["gradient_booster"]["model"]["trees"]
        for t, tree in enumerate(trees[: rounds * per_round]):
            _xgboost_tree(forest, tree, t % per_round)
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
    forest = _booster_forest(run, 1, per_round)
    pairs = enumerate(zip(forest.trees, leaves, strict=True))
    values = [tree[6][int(leaf), k] for k, (tree, leaf) in pairs]
    return np.asarray(margin, dtype=np.float64).reshape(-1) - np.asarray(values)


def _input(g, matrix: str, width: int, columns) -> str:
    """The matrix as the booster reads it: unseen codes (negative) of the categorical
    ``columns`` missing (xgboost's rounding to float32 is the tree ensemble's)."""
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
    return x


def _derived(g, x: str, forest: Forest) -> str:
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


def add_base(g, values: LeafValues, counts: list[int], bases: list) -> str:
    """The sums of the first ``counts[s]`` trees of each part of ``values``
    (:func:`.trees.leaf_values`) plus each part's margin ``bases[s]``: ``(n, S)`` with one
    margin, else ``(n, S, K)``."""
    base = np.asarray(bases, dtype=np.float64)  # (S, K)
    flat = base.shape[1] == 1
    sums = stage_sums(g, values, counts, flat=flat)
    return g.node("Add", [sums, g.const(base.reshape(1, -1) if flat else base[None])], "margins")


def stacked_proba(g, z: str, run, positive: bool) -> str:
    """Class probabilities of stacked margins ``z`` (:func:`add_base`): the sigmoid of one
    margin (two classes; ``positive``: the positive column alone, ``(n, S)``) or the softmax
    of one per class, widened to every class of the library, ``(n, S, C)``."""
    classes = np.asarray(run.classes, dtype=int)
    if classes.size > 2:
        return _widen(g, g.node("Softmax", [z], axis=2), classes, run.n_classes)
    p = g.node("Sigmoid", [z])
    if positive:
        return p
    axis = g.const(np.array([2], np.int64))
    q = g.node("Sub", [g.const(np.float64(1.0)), p])
    pair = [g.node("Unsqueeze", [v, axis]) for v in (q, p)]
    return _widen(g, g.node("Concat", pair, "proba", axis=2), classes, run.n_classes)


def _rounds(run, stage: int) -> int:
    return run.stages[stage] if run.best is None else min(run.stages[stage], run.best)


def _boosted_margins(g, runs, matrices, stage: int, per_round: int, last: int) -> str:
    """The margins of stage ``stage`` of the boosters ``runs`` (``(run, categorical
    columns)``), each on its matrix, side by side (:func:`add_base`); their rounds up to
    stage ``last`` are one tree ensemble."""

    def parts() -> list:
        return [
            (_input(g, matrix, run.model.n_features_in_, columns), run.model.n_features_in_,
             _booster_forest(run, _rounds(run, last), per_round))
            for (run, columns), matrix in zip(runs, matrices, strict=True)
        ]  # fmt: skip

    key = ("boosted", tuple(id(run) for run, _ in runs), tuple(matrices), last)
    counts = [_rounds(run, stage) * per_round for run, _ in runs]
    bounds = [[_rounds(run, s) * per_round for s in range(last + 1)] for run, _ in runs]
    bases = [_base_margin(run, run.model.n_features_in_, per_round) for run, _ in runs]
    return add_base(g, leaf_values(g, key, parts, bounds), counts, bases)


@register_runs("xgboost", "lightgbm")
def _boosted(g, runs, matrices, stage: int, n_outputs: int, positive: bool, last: int):
    """Stage ``stage`` of boosted classifiers (``gbdt._BoostedRun.predict``), the fold
    siblings side by side, ``(n, S)`` or ``(n, S, C)``; None where they saw different
    classes."""
    inner = []
    for run in runs:
        columns = list(run.columns) if isinstance(run, _CategoricalRun) else []
        run = run.inner if isinstance(run, _CategoricalRun) else run
        if isinstance(run, ConstantRun):
            raise ValueError("a boosted run that saw one class has no converter")
        inner.append((run, columns))
    if len({tuple(run.classes) for run, _ in inner}) > 1:
        return None
    first = inner[0][0]
    per_round = 1 if first.classes.size == 2 else first.classes.size
    z = _boosted_margins(g, inner, matrices, stage, per_round, last)
    return stacked_proba(g, z, first, positive)


@register_runs("xgboost", "lightgbm", task="regression")
def _boosted_regression(g, runs, matrices, stage, n_outputs, positive, last) -> str:
    """Stage ``stage`` of boosted regressors: the sum of their rounds' leaves, ``(n, S, 1)``."""
    z = _boosted_margins(g, [(run, []) for run in runs], matrices, stage, 1, last)
    return g.node("Unsqueeze", [z, g.const(np.array([2], np.int64))], "boosted")
