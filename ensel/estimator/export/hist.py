"""The ``hist_gbdt`` family (scikit-learn's HistGradientBoosting, ``hist_gbdt._HistRun`` and
``_HistRegressionRun``) as graph nodes, written from the fitted predictors' node records.

scikit-learn reads the input in double: ``x <= threshold`` goes left, NaN the way each split
learnt. Its categorical columns pass an ordinal encoder first (categorical columns moved to
the front, each category replaced by its position among the categories seen in fit, an unseen
one missing); a categorical split tests that position against a bitset. Both are written on
the raw codes instead: the split's bitset is turned back into the codes it holds, and the
column "code in the set" is missing where the code is missing or was never seen in fit. The
leaf values are summed in double with the baseline, then squashed (sigmoid, softmax) or not
(regression with an identity link), as scikit-learn does.
"""

from __future__ import annotations

import numpy as np

from ...library.families._base import ConstantRun
from .boosted import _derived, _Forest, _margins
from .members import margin_proba, register

__all__: list[str] = []

IDENTITY_LOSSES = frozenset({"squared_error", "absolute_error", "quantile"})
"""Regression losses whose raw prediction is the prediction."""


def _raw_columns(model) -> tuple[np.ndarray, list]:
    """For each column the predictors read, the input column it is, and for categorical
    ones the categories seen in fit (None for numeric)."""
    pre = getattr(model, "_preprocessor", None)
    if pre is None:
        return np.arange(model.n_features_in_), [None] * model.n_features_in_
    order, known = [], []
    for name, _, mask in pre.transformers_:
        columns = np.flatnonzero(np.asarray(mask, dtype=bool)) if len(mask) else []
        order.extend(columns)
        if name == "encoder":
            known.extend(pre.named_transformers_["encoder"].categories_)
        else:
            known.extend([None] * len(columns))
    return np.asarray(order, dtype=int), known


def _bitset_codes(words: np.ndarray) -> np.ndarray:
    """The positions set in a 256-bit set stored as eight uint32 words."""
    bits = (words.astype(np.uint64)[:, None] >> np.arange(32, dtype=np.uint64)) & 1
    return np.flatnonzero(bits.reshape(-1))


def _predictor_tree(forest: _Forest, t: int, predictor, order, known, width: int) -> None:
    nodes = predictor.nodes
    leaf = nodes["is_leaf"].astype(bool)
    feature = order[nodes["feature_idx"]].tolist()
    mode = ["LEAF" if x else "BRANCH_LEQ" for x in leaf]
    threshold = np.where(leaf, 0.0, nodes["num_threshold"]).tolist()
    left = np.where(leaf, 0, nodes["left"]).astype(int).tolist()
    right = np.where(leaf, 0, nodes["right"]).astype(int).tolist()
    missing = np.where(leaf, 0, nodes["missing_go_to_left"]).astype(int).tolist()
    for i in np.flatnonzero(~leaf & nodes["is_categorical"].astype(bool)):  # in the set: left
        j = int(nodes["feature_idx"][i])
        words = predictor.raw_left_cat_bitsets[nodes["bitset_idx"][i]]
        categories = np.asarray(known[j], dtype=np.float64)
        positions = _bitset_codes(words)
        codes = categories[positions[positions < categories.size]]
        feature[i] = forest.derived(width, order[j], codes, known=categories)
        mode[i], threshold[i] = "BRANCH_GT", 0.5
    value = np.where(leaf, nodes["value"], 0.0).tolist()
    forest.add(t, feature, mode, threshold, left, right, missing, value)


def _hist_margins(g, model, matrix: str, iterations: int) -> tuple[str, int]:
    """The raw prediction of the first ``iterations`` iterations, ``(n, K)`` double, and K."""
    order, known = _raw_columns(model)
    width = model.n_features_in_
    forest = _Forest()
    predictors = model._predictors[: min(iterations, model.n_iter_)]
    per_round = len(predictors[0])
    for r, trees in enumerate(predictors):
        for k, predictor in enumerate(trees):
            _predictor_tree(forest, r * per_round + k, predictor, order, known, width)
    forest.klass = [t % per_round for t in range(len(forest.sizes))]
    base = np.asarray(model._baseline_prediction, dtype=np.float64).reshape(-1)
    x = _derived(g, matrix, forest)
    return _margins(g, x, forest, per_round, base), per_round


@register("hist_gbdt")
def _hist(g, run, matrix: str, stage: int, n_outputs: int) -> str:
    """Stage ``stage`` of a HistGradientBoostingClassifier (``hist_gbdt._HistRun``)."""
    if isinstance(run, ConstantRun):
        raise ValueError("a hist_gbdt run that saw one class has no converter")
    model = run.model
    z, per_round = _hist_margins(g, model, matrix, run.stages[stage])
    return margin_proba(g, z, per_round == 1, run)


@register("hist_gbdt", task="regression")
def _hist_regression(g, run, matrix: str, stage: int, n_outputs: int) -> str:
    """Stage ``stage`` of a HistGradientBoostingRegressor with an identity link."""
    model = run.model
    if model.loss not in IDENTITY_LOSSES:
        raise ValueError(f"a hist_gbdt regressor with loss {model.loss!r} has no converter")
    z, _ = _hist_margins(g, model, matrix, run.stages[stage])
    return z
