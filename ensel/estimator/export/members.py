"""One converter per family, registered by family name and task: each writes one stage of a
fitted family run (one fold sibling) as graph nodes, from the view's double matrix to the
run's uncalibrated output, double ``(n, C)`` (regression: ``(n, 1)``).

scikit-learn models go through ``skl2onnx`` in double (``DoubleTensorType``), embedded into
the graph. ensel's trees are written as ``ai.onnx.ml.TreeEnsembleRegressor`` from the fitted
scikit-learn tree structure with ensel's own leaf tables (smoothed leaf frequencies that
scikit-learn does not hold, so no converter can emit them): double thresholds compared with
the input rounded to float32, as scikit-learn's trees read it, and NaN sent the way each
split learnt (``missing_go_to_left``), so the leaf reached is the one Python reaches; the
ensemble returns each tree's leaf, whose values are gathered from the tables in double.

A family not registered here is not exportable (see :func:`why_not`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..._imports import optional
from ...library.families._regression import SingleRun

__all__ = ["CONVERTERS", "VARIANTS", "convert", "register"]

CONVERTERS: dict[tuple[str, str], Callable] = {}
"""``(family name, task)`` -> ``converter(graph, family_run, matrix, stage_index, n_outputs)``
returning the name of the stage's double output."""
VARIANTS: dict[tuple[str, str], frozenset[str]] = {}
"""``(family name, task)`` -> the family's own output variants besides ``"none"`` that its
converter writes (called with ``variant=``), e.g. boosting's ``"logistic"`` correction."""


def register(*families: str, task: str = "classification", variants: tuple[str, ...] = ()):
    """Register a converter for ``families`` (names as the library registers them), which
    also writes the output ``variants`` the family produces besides ``"none"``."""

    def wrap(fn: Callable) -> Callable:
        for family in families:
            CONVERTERS[(family, task)] = fn
            VARIANTS[(family, task)] = frozenset(variants)
        return fn

    return wrap


def convert(
    g, family: str, task: str, run, matrix: str, stage: int, n_outputs: int, variant="none"
) -> str:
    """Stage ``stage`` of ``run`` (family ``family``) on ``matrix``, its output ``variant``
    (``"none"``: the plain output), written once per run."""
    key = ("member", id(run), stage, variant)
    if key not in g.cache:
        fn = CONVERTERS[(family, task)]
        extra = {} if variant == "none" else {"variant": variant}
        g.cache[key] = fn(g, run, matrix, stage, n_outputs, **extra)
    return g.cache[key]


def _skl2onnx(model, width: int, **options):
    """``model`` converted by skl2onnx with a double input ``X`` of ``width`` columns."""
    skl2onnx = optional("skl2onnx", "exporting scikit-learn members to ONNX")
    from skl2onnx.common.data_types import DoubleTensorType

    from ...compress.export import ML_OPSET, OPSET

    return skl2onnx.convert_sklearn(
        model,
        initial_types=[("X", DoubleTensorType([None, width]))],
        target_opset={"": OPSET, "ai.onnx.ml": ML_OPSET},
        options={id(model): options} if options else None,
    )


@register("logreg")
def _logreg(g, run, matrix: str, stage: int, n_outputs: int) -> str:
    """scikit-learn's LogisticRegression (skl2onnx), its classes widened to every class."""
    model = run.model
    converted = _skl2onnx(model, model.n_features_in_, zipmap=False)
    names = [o.name for o in converted.graph.output]
    outputs = g.embed(converted, {"X": matrix})
    proba = outputs[names.index("probabilities")]
    return _widen(g, proba, np.asarray(model.classes_, dtype=int), run.n_classes)


def margin_proba(g, z: str, binary: bool, run) -> str:
    """Class probabilities of a boosted model's margins ``z``: the sigmoid of one margin column
    (two classes) or the softmax of one per class, widened to every class of the library
    (``run.classes`` seen by the run, of ``run.n_classes``)."""
    if binary:
        proba = g.pair(g.node("Sigmoid", [z]), "concat")
    else:
        proba = g.node("Softmax", [z], axis=1)
    return _widen(g, proba, np.asarray(run.classes, dtype=int), run.n_classes)


def _widen(g, proba: str, classes: np.ndarray, n_classes: int) -> str:
    """``(n, len(classes))`` probabilities as ``(n, n_classes)`` (``families.full_proba``)."""
    if classes.size == n_classes:
        return proba
    spread = np.zeros((classes.size, n_classes))
    spread[np.arange(classes.size), classes] = 1.0
    return g.node("MatMul", [proba, g.const(spread)], "widened")


@register("linear", task="regression")
def _linear(g, run, matrix: str, stage: int, n_outputs: int) -> str:
    """Least squares or ridge (skl2onnx), one column; a standardised target is refused."""
    if run.scale is not None:
        raise ValueError("a linear run on a standardised target has no converter")
    converted = _skl2onnx(run.model, run.model.n_features_in_)
    (out,) = g.embed(converted, {"X": matrix})
    return g.node("Reshape", [out, g.const(np.array([-1, 1], np.int64))], "linear")


@register("mlp")
def _mlp(g, run, matrix: str, stage: int, n_outputs: int) -> str:
    """ensel's numpy net (``neural._MLPRun``), in double: one hidden layer, a sigmoid output
    unit for two classes, a softmax for more. Two classes: every stage of the run in one net
    (the stages' hidden layers side by side, each output unit reading its own block), whose
    output column ``stage`` is this stage's, so a run's stages cost the nodes of one."""
    snapshots = [[np.asarray(a, dtype=np.float64) for a in snap] for snap in run.snapshots]
    if not all(np.isfinite(a).all() for a in snapshots[stage]):
        raise ValueError("a diverged net (non-finite weights) has no ONNX graph")
    if run.n_classes != 2:
        return _net(g, run, matrix, *snapshots[stage], "Softmax")
    key = ("mlp stages", id(run), matrix)
    if key not in g.cache and not all(np.isfinite(a).all() for snap in snapshots for a in snap):
        # a stage that diverged stays out of the file: this stage alone
        return g.pair(g.node("Sigmoid", [_net(g, run, matrix, *snapshots[stage], None)]), "mlp")
    if key not in g.cache:
        w1, b1 = (np.concatenate([snap[i] for snap in snapshots]) for i in (0, 1))
        hidden = snapshots[0][0].shape[0]
        w2 = np.zeros((len(snapshots), hidden * len(snapshots)))  # block j: stage j's unit
        for j, snap in enumerate(snapshots):
            w2[j, j * hidden : (j + 1) * hidden] = snap[2][0]
        b2 = np.concatenate([snap[3] for snap in snapshots])
        g.cache[key] = g.node("Sigmoid", [_net(g, run, matrix, w1, b1, w2, b2, None)])
    column = g.const(np.array([stage], np.int64))
    return g.pair(g.node("Gather", [g.cache[key], column], axis=1), "mlp")


def _net(g, run, matrix: str, w1, b1, w2, b2, output: str | None) -> str:
    """The net's margins (``output`` None), or ``output`` of them (``"Softmax"``); weights in
    torch's ``(out, in)`` layout."""
    pre = g.node("Add", [g.node("MatMul", [matrix, g.const(w1.T.copy())]), g.const(b1)])
    hidden = g.node("Sigmoid" if run.activation == "sigmoid" else "Tanh", [pre], "hidden")
    z = g.node("Add", [g.node("MatMul", [hidden, g.const(w2.T.copy())]), g.const(b2)])
    return z if output is None else g.node(output, [z], "mlp", axis=1)


@register("tree", "bagged_trees", "random_forest", "extra_trees")
@register("tree", "bagged_trees", "random_forest", "extra_trees", task="regression")
def _trees(g, run, matrix: str, stage: int, n_outputs: int) -> str:
    """The average of the first ``stages[stage]`` trees' leaf tables (``trees._StagedRun``;
    for regression ``PrefixRun``, or one tree's value in a ``SingleRun``).
    The tree ensemble gives each tree's leaf (its node id, exact in float); the leaf values
    are then gathered from the tables in double, so a calibrator's step sees the very value
    Python computes, not its float rounding."""
    from onnx import TensorProto

    single = isinstance(run, SingleRun)  # one regression tree
    if single and run.scale is not None:
        raise ValueError("a tree on a standardised target has no converter")
    trees = [run.model] if single else run.trees
    size = 1 if single else min(run.stages[stage], len(trees))
    leaves = [_leaf_table(t, n_outputs) for t in trees[:size]]
    ids = g.node("TreeEnsembleRegressor", [float32(g, matrix)], "leaves", domain="ai.onnx.ml",
                 **_ensemble_attributes([tree for tree, _ in leaves]))  # fmt: skip
    ids = g.node("Cast", [ids], "leaves", to=TensorProto.INT64)
    offsets = np.cumsum([0] + [tree.node_count for tree, _ in leaves[:-1]])
    rows = g.node("Add", [ids, g.const(offsets[None, :].astype(np.int64))])
    table = np.vstack([np.asarray(t, dtype=np.float64) for _, t in leaves])
    values = g.node("Gather", [g.const(table), rows], "leaf_values", axis=0)  # (n, T, C)
    total = g.node("ReduceSum", [values, g.const(np.array([1], np.int64))], keepdims=0)
    return g.node("Div", [total, g.const(np.float64(size))], "trees")


def float32(g, matrix: str) -> str:
    """``matrix`` as scikit-learn's trees read it: rounded to float32, held in double (the
    thresholds are compared in double), written once per matrix."""
    from onnx import TensorProto

    if ("float32", matrix) not in g.cache:
        rounded = g.node("Cast", [matrix], "x32", to=TensorProto.FLOAT)
        g.cache[("float32", matrix)] = g.node("Cast", [rounded], "x32", to=TensorProto.DOUBLE)
    return g.cache[("float32", matrix)]


def _leaf_table(tree, n_outputs: int):
    """``(scikit-learn tree_, per-node (nodes, n_outputs) table)`` of a smoothed or forest tree."""
    from ...library.families._base import full_proba, tree_values

    if hasattr(tree, "table"):  # SmoothedTree
        return tree.tree.tree_, tree.table
    if hasattr(tree, "tree_"):  # a scikit-learn regression tree: its value
        return tree.tree_, tree_values(tree)
    return tree.tree.tree_, full_proba(tree_values(tree.tree), tree.classes, tree.n_classes)


def _ensemble_attributes(trees) -> dict:
    """The attributes of one ``TreeEnsembleRegressor`` whose target ``t`` is the node id of
    the leaf tree ``t`` reaches."""
    from onnx import numpy_helper

    a: dict = {k: [] for k in ("ids", "nodes", "features", "modes", "values", "true", "false",
                               "missing", "t_tree", "t_node", "t_weight")}  # fmt: skip
    for t, tree in enumerate(trees):
        nodes = np.arange(tree.node_count)
        leaf = tree.children_left == -1
        a["ids"] += [t] * tree.node_count
        a["nodes"] += nodes.tolist()
        a["features"] += np.where(leaf, 0, tree.feature).tolist()
        a["modes"] += ["LEAF" if x else "BRANCH_LEQ" for x in leaf]
        a["values"] += np.where(leaf, 0.0, tree.threshold).tolist()
        a["true"] += np.where(leaf, 0, tree.children_left).tolist()
        a["false"] += np.where(leaf, 0, tree.children_right).tolist()
        go_left = getattr(tree, "missing_go_to_left", np.zeros(tree.node_count, np.uint8))
        a["missing"] += np.where(leaf, 0, go_left).astype(int).tolist()
        a["t_tree"] += [t] * int(leaf.sum())
        a["t_node"] += nodes[leaf].tolist()
        a["t_weight"] += nodes[leaf].astype(np.float64).tolist()
    return {
        "n_targets": len(trees),
        "nodes_treeids": a["ids"],
        "nodes_nodeids": a["nodes"],
        "nodes_featureids": a["features"],
        "nodes_modes": a["modes"],
        "nodes_values_as_tensor": numpy_helper.from_array(np.asarray(a["values"], np.float64)),
        "nodes_truenodeids": a["true"],
        "nodes_falsenodeids": a["false"],
        "nodes_missing_value_tracks_true": a["missing"],
        "target_treeids": a["t_tree"],
        "target_nodeids": a["t_node"],
        "target_ids": a["t_tree"],
        "target_weights_as_tensor": numpy_helper.from_array(np.asarray(a["t_weight"])),
        "aggregate_function": "SUM",
        "post_transform": "NONE",
    }
