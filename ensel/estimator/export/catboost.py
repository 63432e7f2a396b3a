"""The ``catboost`` family (``oblivious._CatBoostRun``) as graph nodes, from CatBoost's JSON
model, for runs without categorical columns (their ordered target statistics have no graph
here: ``NUMERIC_ONLY``). An oblivious tree tests one (feature, border) pair per level, so all
tests are one ``Greater`` of the input rounded to float32 against the float32 borders (NaN
taking the bit its feature's missing-value treatment gives), the leaf index of every tree one
``MatMul`` of the bits by powers of two, and the leaf values are gathered and summed in double,
scaled and biased as the model says, then squashed (sigmoid, softmax)."""

from __future__ import annotations

import json
import os
import tempfile

import numpy as np

from ...library.families._base import ConstantRun
from .members import float32, margin_proba, register

__all__ = ["NUMERIC_ONLY"]

NUMERIC_ONLY = frozenset({"catboost"})
"""Families that export only when the table has no categorical columns."""


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


def _splits(trees: list[dict], nan_bits: dict[int, float]):
    """Per split of every tree: the feature, the float32 border, the NaN bit, the tree and
    the bit's weight ``2^level``."""
    feature, border, nan, tree, weight = [], [], [], [], []
    for t, one in enumerate(trees):
        for level, split in enumerate(one["splits"]):
            if split.get("split_type", "FloatFeature") != "FloatFeature":
                raise ValueError("a catboost split on categories has no converter")
            j = int(split["float_feature_index"])
            feature.append(j)
            border.append(float(np.float32(split["border"])))
            nan.append(nan_bits.get(j, 0.0))
            tree.append(t)
            weight.append(2.0**level)
    return feature, border, nan, tree, weight


@register("catboost")
def _catboost(g, run, matrix: str, stage: int, n_outputs: int) -> str:
    from onnx import TensorProto

    if isinstance(run, ConstantRun):
        raise ValueError("a catboost run that saw one class has no converter")
    if run.columns:
        raise ValueError("a catboost run on categorical columns has no converter")
    model = _json_model(run.model)
    s = run.stages[stage] if run.best is None else min(run.stages[stage], run.best)
    trees = model["oblivious_trees"][:s]
    info = model["features_info"].get("float_features", [])
    nan_bits = {f["flat_feature_index"]: float(f.get("nan_value_treatment") == "AsTrue")
                for f in info}  # fmt: skip
    feature, border, nan, tree, weight = _splits(trees, nan_bits)
    x = g.node("Gather", [float32(g, matrix), g.const(np.asarray(feature, np.int64))], axis=1)
    bits = g.node("Cast", [g.node("Greater", [x, g.const(np.asarray(border)[None, :])])],
                  to=TensorProto.DOUBLE)  # fmt: skip
    bits = g.node("Where", [g.node("IsNaN", [x]), g.const(np.asarray(nan)[None, :]), bits])
    powers = np.zeros((len(feature), len(trees)))
    powers[np.arange(len(feature)), tree] = weight
    index = g.node("Cast", [g.node("MatMul", [bits, g.const(powers)])], to=TensorProto.INT64)
    K = 1 if run.classes.size == 2 else run.classes.size
    tables = [np.asarray(t["leaf_values"], dtype=np.float64).reshape(-1, K) for t in trees]
    offsets = np.cumsum([0, *[t.shape[0] for t in tables[:-1]]])
    rows = g.node("Add", [index, g.const(offsets[None, :].astype(np.int64))])
    values = g.node("Gather", [g.const(np.vstack(tables)), rows], "leaf_values", axis=0)
    total = g.node("ReduceSum", [values, g.const(np.array([1], np.int64))], keepdims=0)
    scale, bias = model.get("scale_and_bias", [1.0, [0.0] * K])
    bias = np.broadcast_to(np.asarray(bias, dtype=np.float64), (K,))
    z = g.node("Add", [g.node("Mul", [total, g.const(np.float64(scale))]), g.const(bias[None, :])])
    return margin_proba(g, z, K == 1, run)
