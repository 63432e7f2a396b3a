"""The ``catboost`` family (``oblivious._CatBoostRun``) as graph nodes, from CatBoost's JSON
model, for runs without categorical columns (their ordered target statistics have no graph
here: :func:`numeric_only`). An oblivious tree tests one (feature, border) pair per level, so all
tests are one ``Greater`` of the input rounded to float32 against the float32 borders (NaN
taking the bit its feature's missing-value treatment gives), the leaf index of every tree the
sum of its bits times powers of two (one ``Mul`` and one ``ReduceSum`` over the levels of every
tree, work linear in the splits: a dense matrix of bits by trees grows with their square), and
the leaf values are gathered and summed in double,
scaled and biased as the model says, then squashed (sigmoid, softmax). A member's fold siblings
(and the stages of one run) share one set of these nodes, their matrices side by side."""

from __future__ import annotations

import json
import os
import tempfile

import numpy as np

from ...library.families._base import ConstantRun
from .boosted import stacked_proba
from .members import float32, register_runs
from .trees import LeafValues, stage_sums

__all__ = ["numeric_only"]


def numeric_only(params: dict | None, categorical: bool) -> str | None:
    """Why a CatBoost run has no graph: a table with categorical columns, or None."""
    if categorical:
        return "family 'catboost' on categorical columns has no ONNX converter"
    return None


def _json_model(model) -> dict:
    """CatBoost's model as its JSON format holds it."""
    handle, path = tempfile.mkstemp(suffix=".json")
    os.close(handle)
    try:
        model.save_model(path, format="json")
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    finally:
        os.remove(path)


def _splits(trees: list[dict], nan_bits: dict[int, float], n_trees: int, depth: int):
    """Per level of ``n_trees`` trees of ``depth`` levels each (the trees given, then padding
    trees): the feature, the float32 border, the NaN bit and the bit's weight ``2^level``; a
    level a tree does not have tests feature 0 at weight 0, so it adds nothing to the index."""
    levels = []  # (feature, border, NaN bit, weight) per level
    for t in range(n_trees):
        splits = trees[t]["splits"] if t < len(trees) else []
        for level in range(depth):
            if level >= len(splits):
                levels.append((0, 0.0, 0.0, 0.0))
                continue
            split = splits[level]
            if split.get("split_type", "FloatFeature") != "FloatFeature":
                raise ValueError("a catboost split on categories has no converter")
            j = int(split["float_feature_index"])
            levels.append((j, float(np.float32(split["border"])), nan_bits.get(j, 0.0), 2.0**level))
    return tuple(list(column) for column in zip(*levels, strict=True))


@register_runs("catboost", refuses=numeric_only)
def _catboost(g, runs, matrices, stage: int, n_outputs: int, positive: bool, last: int):
    """Stage ``stage`` of CatBoost classifiers, the fold siblings side by side (their trees up
    to stage ``last`` tested in one set of nodes), ``(n, S)`` or ``(n, S, C)``; None where
    they saw different classes."""
    for run in runs:
        if isinstance(run, ConstantRun):
            raise ValueError("a catboost run that saw one class has no converter")
        if run.columns:
            raise ValueError("a catboost run on categorical columns has no converter")
    if len({tuple(run.classes) for run in runs}) > 1:
        return None
    k = 1 if runs[0].classes.size == 2 else runs[0].classes.size
    models = [_json_model(run.model) for run in runs]
    values = _leaf_values(g, runs, matrices, models, last, k)
    counts = [_rounds(run, stage) for run in runs]
    sums = stage_sums(g, values, counts, flat=k == 1)
    pairs = [m.get("scale_and_bias", [1.0, [0.0] * k]) for m in models]
    scale = np.array([float(scale) for scale, _ in pairs])
    bias = np.array([np.broadcast_to(np.asarray(b, dtype=np.float64), (k,)) for _, b in pairs])
    shape = (1, len(runs)) if k == 1 else (1, len(runs), 1)
    z = g.node("Mul", [sums, g.const(scale.reshape(shape))])
    z = g.node("Add", [z, g.const(bias.reshape(1, -1) if k == 1 else bias[None])], "margins")
    return stacked_proba(g, z, runs[0], positive)


def _rounds(run, stage: int) -> int:
    return run.stages[stage] if run.best is None else min(run.stages[stage], run.best)


def _leaf_values(g, runs, matrices, models, last: int, k: int) -> LeafValues:
    """:class:`.trees.LeafValues` as :func:`.trees.leaf_values` gives them: double ``(n, S, T, K)``,
    the leaf values of the first trees (up to stage ``last``) of each sibling, every
    sibling's tests one ``Greater`` and each tree's leaf index its bits times powers of two
    summed over its levels."""
    from onnx import TensorProto

    key = ("catboost", tuple(id(run) for run in runs), tuple(matrices), last)
    if key in g.cache:
        return g.cache[key]
    pairs = zip(runs, models, strict=True)
    trees = [m["oblivious_trees"][: _rounds(run, last)] for run, m in pairs]
    n_trees = max(len(t) for t in trees)
    depth = max((len(tree["splits"]) for own in trees for tree in own), default=1) or 1
    x, starts = _side_by_side(g, matrices, [run.model.n_features_in_ for run in runs])
    feature, border, nan, weight, tables = [], [], [], [], []
    for s, (model, own) in enumerate(zip(models, trees, strict=True)):
        info = model["features_info"].get("float_features", [])
        nan_bits = {f["flat_feature_index"]: float(f.get("nan_value_treatment") == "AsTrue")
                    for f in info}  # fmt: skip
        f, b, n, w = _splits(own, nan_bits, n_trees, depth)
        feature += [j + starts[s] for j in f]
        border, nan, weight = border + b, nan + n, weight + w
        tables += [np.asarray(tree["leaf_values"], dtype=np.float64).reshape(-1, k) for tree in own]
        tables += [np.zeros((1, k))] * (n_trees - len(own))  # padding: one zero leaf
    picked = g.node("Gather", [x, g.const(np.asarray(feature, np.int64))], axis=1)
    bits = g.node("Cast", [g.node("Greater", [picked, g.const(np.asarray(border)[None, :])])],
                  to=TensorProto.DOUBLE)  # fmt: skip
    bits = g.node("Where", [g.node("IsNaN", [picked]), g.const(np.asarray(nan)[None, :]), bits])
    weighted = g.node("Mul", [bits, g.const(np.asarray(weight)[None, :])])
    levels = np.array([0, len(runs) * n_trees, depth], np.int64)
    per_tree = g.node("Reshape", [weighted, g.const(levels)])
    index = g.node("ReduceSum", [per_tree, g.const(np.array([2], np.int64))], keepdims=0)
    index = g.node("Cast", [index], to=TensorProto.INT64)
    offsets = np.cumsum([0, *[t.shape[0] for t in tables[:-1]]])
    rows = g.node("Add", [index, g.const(offsets[None, :].astype(np.int64))])
    values = g.node("Gather", [g.const(np.vstack(tables)), rows], "leaf_values", axis=0)
    shape = np.array([0, len(runs), n_trees, k], np.int64)
    g.cache[key] = LeafValues(g.node("Reshape", [values, g.const(shape)]), n_trees, k)
    return g.cache[key]


def _side_by_side(g, matrices: list[str], widths: list[int]) -> tuple[str, list[int]]:
    """The distinct ``matrices`` side by side, rounded to float32 (held in double), and each
    sibling's first column in it."""
    names = list(dict.fromkeys(matrices))
    width = dict(zip(matrices, widths, strict=True))
    first = dict(zip(names, np.cumsum([0, *[width[m] for m in names[:-1]]]).tolist(),
                     strict=True))  # fmt: skip
    x = names[0] if len(names) == 1 else g.node("Concat", names, "siblings_x", axis=1)
    return float32(g, x), [first[m] for m in matrices]
