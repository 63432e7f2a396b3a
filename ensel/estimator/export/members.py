"""One converter per family, registered by family name and task: each writes one stage of a
fitted family run (one fold sibling) as graph nodes, from the view's double matrix to the
run's uncalibrated output, double ``(n, C)`` (regression: ``(n, 1)``). Tree families register
a converter of all of a member's fold siblings at once instead (:func:`register_runs`), which
also serves one sibling: their trees are one tree ensemble.

scikit-learn models go through ``skl2onnx`` in double (``DoubleTensorType``), embedded into
the graph. ensel's trees are written by :mod:`.trees` from the fitted scikit-learn tree
structure with ensel's own leaf tables (smoothed leaf frequencies that scikit-learn does not
hold, so no converter can emit them): the input rounded to float32, as scikit-learn's trees
read it, and NaN sent the way each split learnt (``missing_go_to_left``), so the leaf reached
is the one Python reaches; the ensemble returns each tree's leaf, whose values are gathered
from the tables in double.

A family not registered here is not exportable (see :func:`why_not`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..._imports import optional
from ...library.families._regression import SingleRun

__all__ = [
    "CONVERTERS",
    "REFUSALS",
    "RUN_CONVERTERS",
    "VARIANTS",
    "convert",
    "convert_runs",
    "register",
    "register_runs",
]

CONVERTERS: dict[tuple[str, str], Callable] = {}
"""``(family name, task)`` -> ``converter(graph, family_run, matrix, stage_index, n_outputs)``
returning the name of the stage's double output."""
VARIANTS: dict[tuple[str, str], frozenset[str]] = {}
"""``(family name, task)`` -> the family's own output variants besides ``"none"`` that its
converter writes (called with ``variant=``), e.g. boosting's ``"logistic"`` correction."""
REFUSALS: dict[tuple[str, str], Callable[[dict | None, bool], str | None]] = {}
"""``(family name, task)`` -> ``refuses(params, categorical)``: why a run of the family with
``params`` (on a table with categorical columns where ``categorical``) has no graph, or None;
declared by the converters that cannot write every run of their family."""
RUN_CONVERTERS: dict[tuple[str, str], Callable] = {}
"""``(family name, task)`` -> ``converter(graph, family_runs, matrices, stage_index,
n_outputs, positive, last)``: one stage of all of a member's fold siblings at once (see
:func:`register_runs`)."""


def register(
    *families: str,
    task: str = "classification",
    variants: tuple[str, ...] = (),
    refuses: Callable[[dict | None, bool], str | None] | None = None,
):
    """Register a converter for ``families`` (names as the library registers them), which
    also writes the output ``variants`` the family produces besides ``"none"``; ``refuses``:
    the runs it cannot write (:data:`REFUSALS`)."""

    def wrap(fn: Callable) -> Callable:
        for family in families:
            CONVERTERS[(family, task)] = fn
            VARIANTS[(family, task)] = frozenset(variants)
            if refuses is not None:
                REFUSALS[(family, task)] = refuses
        return fn

    return wrap


def register_runs(
    *families: str,
    task: str = "classification",
    refuses: Callable[[dict | None, bool], str | None] | None = None,
):
    """Register a converter that writes one stage of several fold siblings (each on its own
    matrix) in one set of nodes, returning double ``(n, S)`` positive-class columns where
    called with ``positive`` (two classes), else ``(n, S, C)``, or None where these siblings
    cannot be written together; ``last``, the largest stage of these runs the graph holds,
    lets the stages of one run share one tree ensemble. It also serves as the family's
    one-sibling converter."""

    def wrap(fn: Callable) -> Callable:
        def one(g, run, matrix: str, stage: int, n_outputs: int) -> str:
            stacked = fn(g, [run], [matrix], stage, n_outputs, False, stage)
            return g.node("Gather", [stacked, g.const(np.array(0, np.int64))], axis=1)

        for family in families:
            RUN_CONVERTERS[(family, task)] = fn
        register(*families, task=task, refuses=refuses)(one)
        return fn

    return wrap


def convert_runs(
    g, family: str, task: str, runs: list, matrices: list[str], stage: int, n_outputs: int,
    positive: bool, last: int,
) -> str | None:  # fmt: skip
    """Stage ``stage`` of the fold siblings ``runs`` on ``matrices`` in one set of nodes
    (:func:`register_runs`; ``last``: the largest stage of these runs the graph holds),
    written once per set of runs; None where the family has no such converter or these
    siblings cannot be written together."""
    if (family, task) not in RUN_CONVERTERS:
        return None
    key = ("runs", tuple(id(r) for r in runs), tuple(matrices), stage, positive)
    if key not in g.cache:
        fn = RUN_CONVERTERS[(family, task)]
        g.cache[key] = fn(g, runs, matrices, stage, n_outputs, positive, last)
    return g.cache[key]


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


@register_runs("tree", "bagged_trees", "random_forest", "extra_trees")
@register_runs("tree", "bagged_trees", "random_forest", "extra_trees", task="regression")
def _trees(g, runs, matrices, stage: int, n_outputs: int, positive: bool, last: int) -> str:
    """The average of the first ``stages[stage]`` trees' leaf tables of each sibling
    (``trees._StagedRun``; for regression ``PrefixRun``, or one tree's value in a
    ``SingleRun``), every sibling's trees up to stage ``last`` in one tree ensemble
    (:mod:`.trees`); ``positive``: the positive column of two classes only."""
    from .trees import leaf_values, stage_sums

    def parts() -> list:
        return [
            _sklearn_forest(run, matrix, _tree_count(run, last), n_outputs, positive)
            for run, matrix in zip(runs, matrices, strict=True)
        ]

    key = ("trees", tuple(id(r) for r in runs), tuple(matrices), last, positive)
    sizes = [_tree_count(run, stage) for run in runs]
    bounds = [[_tree_count(run, s) for s in range(last + 1)] for run in runs]
    sums = stage_sums(g, leaf_values(g, key, parts, bounds), sizes, flat=positive)
    shape = (1, len(sizes)) if positive else (1, len(sizes), 1)
    return g.node("Div", [sums, g.const(np.asarray(sizes, np.float64).reshape(shape))], "trees")


def _tree_count(run, stage: int) -> int:
    """How many trees stage ``stage`` of a tree run averages."""
    if isinstance(run, SingleRun):  # one regression tree
        return 1
    return min(run.stages[stage], len(run.trees))


def _sklearn_forest(run, matrix: str, size: int, n_outputs: int, positive: bool) -> tuple:
    """``(matrix, width, forest)`` of the first ``size`` trees of a tree run."""
    from .trees import Forest, sklearn_tree

    single = isinstance(run, SingleRun)
    if single and run.scale is not None:
        raise ValueError("a tree on a standardised target has no converter")
    forest = Forest(1 if positive else n_outputs, rounded=True)
    for t in ([run.model] if single else run.trees)[:size]:
        tree, table = _leaf_table(t, n_outputs)
        sklearn_tree(forest, tree, table[:, 1:2] if positive else table)
    return matrix, tree.n_features, forest


def float32(g, matrix: str) -> str:
    """``matrix`` as scikit-learn's trees read it: rounded to float32, held in double (the
    thresholds are compared in double), written once per matrix."""
    from onnx import TensorProto

    if ("float32", matrix) not in g.cache:
        rounded = g.node("Cast", [matrix], "x32", to=TensorProto.FLOAT)
        g.cache[("float32", matrix)] = g.node("Cast", [rounded], "x32", to=TensorProto.DOUBLE)
    return g.cache[("float32", matrix)]


def _leaf_table(tree, n_outputs: int):
    """``(scikit-learn tree_, per-node (nodes, n_outputs) table)`` of a tree: a scikit-learn
    regression tree's values, or the ``node_proba`` of ensel's classification trees (a smoothed
    tree, a forest's tree), which wrap a scikit-learn tree as ``tree``."""
    from sklearn.tree import BaseDecisionTree

    from ...library.families._base import tree_values

    if isinstance(tree, BaseDecisionTree):
        return tree.tree_, tree_values(tree)
    return tree.tree.tree_, tree.node_proba()
