"""The isolation-forest detector (``risk.peers.IsolationForestRisk``) as graph nodes: the
detector's encoding of the raw inputs (numeric cells median-imputed and standardised,
categorical cells mode-imputed and one-hot encoded, scaled), scikit-learn's isolation trees on
it rounded to float32 (each tree's leaf from one tree ensemble, its path length gathered in
double: :func:`.trees.leaf_sums`), the score ``2 ** (-mean path / c(max_samples))`` clipped to
[0, 1], and 1 outside the sibling's box."""

from __future__ import annotations

import numpy as np

from .trees import Forest, leaf_sums, sklearn_tree
from .views import CATEGORICAL, NUMERIC

__all__ = ["isolation_sibling"]


def isolation_sibling(g, sibling, columns, outside: str) -> str:
    """One fitted ``IsolationForestRisk``'s risk, double ``(n,)``; ``outside``: its box test."""
    encoded = _encoded(g, sibling, columns)
    model = sibling.model_
    if model._max_features != model.n_features_in_:
        raise ValueError("an isolation forest on a subset of features has no converter")
    trees = [est.tree_ for est in model.estimators_]
    forest = Forest(1, rounded=True)
    for tree, d, a in zip(trees, model._decision_path_lengths,
                          model._average_path_length_per_tree, strict=True):  # fmt: skip
        lengths = np.asarray(d, np.float64) + np.asarray(a, np.float64) - 1.0
        sklearn_tree(forest, tree, lengths[:, None])
    depth = leaf_sums(g, [(encoded, trees[0].n_features, forest)], flat=True)  # (n, 1)
    depth = g.node("Reshape", [depth, g.const(np.array([-1], np.int64))], "depth")
    denominator = len(trees) * _average_path_length(model._max_samples)
    if denominator == 0:
        raise ValueError("an isolation forest on one row has no converter")
    exponent = g.node("Div", [depth, g.const(np.float64(-denominator))])
    score = g.node("Pow", [g.const(np.float64(2.0)), exponent])
    one = g.const(np.float64(1.0))
    risk = g.node("Clip", [score, g.const(np.float64(0.0)), one])
    return g.node("Where", [outside, one, risk], "isolation")


def _average_path_length(n: float) -> float:
    """``c(n)`` of Liu, Ting and Zhou (2008), as scikit-learn computes it."""
    if n <= 1:
        return 0.0
    if n == 2:
        return 1.0
    return 2.0 * (np.log(n - 1.0) + np.euler_gamma) - 2.0 * (n - 1.0) / n


def _encoded(g, sibling, columns) -> str:
    """The matrix the isolation trees read, from the raw ``numeric``/``categorical`` inputs."""
    space, encoder = sibling.space_, sibling.encoder_
    numeric, categorical = list(columns.numeric), list(columns.categorical)
    blocks = []
    for name, pipe, cols in encoder.transformers_:
        if name == "remainder" or len(cols) == 0:
            continue
        steps = dict(pipe.steps)
        if name == "numeric":
            at = np.array([numeric.index(space.names[j]) for j in cols], np.int64)
            x = g.node("Gather", [NUMERIC, g.const(at)], "iso_x", axis=1)
            median = steps["simpleimputer"].statistics_
            x = g.node("Where", [g.node("IsNaN", [x]), g.const(median[None, :]), x])
            scaler = steps["standardscaler"]
            mean = scaler.mean_ if scaler.mean_ is not None else np.zeros(len(cols))
            x = g.node("Sub", [x, g.const(np.asarray(mean, np.float64)[None, :])])
            blocks.append(g.node("Div", [x, g.const(np.asarray(scaler.scale_)[None, :])]))
        else:
            blocks.append(_one_hot(g, space, int(cols[0]), steps, categorical))
    return blocks[0] if len(blocks) == 1 else g.node("Concat", blocks, "iso_encoded", axis=1)


def _one_hot(g, space, j: int, steps, categorical) -> str:
    from onnx import TensorProto

    from ...risk.peers import ONE_HOT_SCALE

    onehot = steps["onehotencoder"]
    if getattr(onehot, "infrequent_categories_", None) and any(
        c is not None for c in onehot.infrequent_categories_
    ):
        raise ValueError("an isolation forest with pooled categories has no converter")
    cats = [str(c) for c in space.categories[j]]
    cell = g.node("Gather", [CATEGORICAL, g.const(np.array([categorical.index(space.names[j])],
                                                            np.int64))], axis=1)  # fmt: skip
    mode = float(np.floor(steps["simpleimputer"].statistics_[0]))
    code = g.node("LabelEncoder", [cell], "iso_code", domain="ai.onnx.ml",
                  keys_strings=[*cats, ""], values_floats=[*map(float, range(len(cats))), mode],
                  default_float=float(len(cats)))  # fmt: skip
    code = g.node("Cast", [code], to=TensorProto.DOUBLE)
    levels = np.asarray(onehot.categories_[0], dtype=np.float64)[None, :]
    hot = g.node("Cast", [g.node("Equal", [code, g.const(levels)])], to=TensorProto.DOUBLE)
    return g.node("Mul", [hot, g.const(np.float64(ONE_HOT_SCALE))], "iso_onehot")
