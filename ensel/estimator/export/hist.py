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
from .boosted import _derived, add_base, stacked_proba
from .members import register_runs
from .trees import LEAF, MODES, Forest, leaf_values

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


def _predictor_tree(forest: Forest, klass: int, predictor, order, known, width: int) -> None:
    nodes = predictor.nodes
    leaf = nodes["is_leaf"].astype(bool)
    feature = order[nodes["feature_idx"]]
    mode = np.where(leaf, LEAF, MODES["BRANCH_LEQ"])
    threshold = np.where(leaf, 0.0, nodes["num_threshold"])
    for i in np.flatnonzero(~leaf & nodes["is_categorical"].astype(bool)):  # in the set: left
        j = int(nodes["feature_idx"][i])
        words = predictor.raw_left_cat_bitsets[nodes["bitset_idx"][i]]
        categories = np.asarray(known[j], dtype=np.float64)
        positions = _bitset_codes(words)
        codes = categories[positions[positions < categories.size]]
        feature[i] = forest.derived(width, order[j], codes, known=categories)
        mode[i], threshold[i] = MODES["BRANCH_GT"], 0.5
    values = np.zeros((leaf.size, forest.n_values))
    values[:, klass] = np.where(leaf, nodes["value"], 0.0)
    left, right = (np.where(leaf, 0, nodes[k]).astype(int) for k in ("left", "right"))
    missing = np.where(leaf, 0, nodes["missing_go_to_left"]).astype(int)
    forest.add(feature, mode, threshold, left, right, missing, values)


def _hist_forest(g, model, matrix: str, size: int) -> tuple:
    """``(matrix with its derived columns, width, forest)`` of the first ``size`` iterations."""
    order, known = _raw_columns(model)
    width = model.n_features_in_
    predictors = model._predictors[: min(size, model.n_iter_)]
    forest = Forest(len(predictors[0]))
    for trees in predictors:
        for k, predictor in enumerate(trees):
            _predictor_tree(forest, k, predictor, order, known, width)
    return _derived(g, matrix, forest), width + len(forest.sets), forest


def _hist_margins(g, runs, matrices, stage: int, last: int) -> str:
    """The raw predictions of stage ``stage`` of each of ``runs`` on its matrix, side by
    side: ``(n, S)`` with one per round, else ``(n, S, K)``; their iterations up to stage
    ``last`` are one tree ensemble."""
    models = [run.model for run in runs]

    def parts() -> list:
        return [
            _hist_forest(g, run.model, matrix, run.stages[last])
            for run, matrix in zip(runs, matrices, strict=True)
        ]

    key = ("hist", tuple(id(run) for run in runs), tuple(matrices), last)
    per_round = [len(m._predictors[0]) for m in models]
    counts = [min(r.stages[stage], m.n_iter_) * k for r, m, k in zip(runs, models, per_round,
                                                                   strict=True)]  # fmt: skip
    bounds = [[min(r.stages[s], m.n_iter_) * k for s in range(last + 1)]
              for r, m, k in zip(runs, models, per_round, strict=True)]  # fmt: skip
    bases = [np.asarray(m._baseline_prediction, dtype=np.float64).reshape(-1) for m in models]
    return add_base(g, leaf_values(g, key, parts, bounds), counts, bases)


@register_runs("hist_gbdt")
def _hist(g, runs, matrices, stage: int, n_outputs: int, positive: bool, last: int):
    """Stage ``stage`` of HistGradientBoostingClassifiers (``hist_gbdt._HistRun``), the fold
    siblings side by side; None where they saw different classes."""
    if any(isinstance(run, ConstantRun) for run in runs):
        raise ValueError("a hist_gbdt run that saw one class has no converter")
    if len({tuple(run.classes) for run in runs}) > 1:
        return None
    return stacked_proba(g, _hist_margins(g, runs, matrices, stage, last), runs[0], positive)


@register_runs("hist_gbdt", task="regression")
def _hist_regression(g, runs, matrices, stage, n_outputs, positive, last) -> str:
    """Stage ``stage`` of HistGradientBoostingRegressors with an identity link, ``(n, S, 1)``."""
    for run in runs:
        if run.model.loss not in IDENTITY_LOSSES:
            raise ValueError(f"a hist_gbdt regressor with loss {run.model.loss!r} has no converter")
    z = _hist_margins(g, runs, matrices, stage, last)
    return g.node("Unsqueeze", [z, g.const(np.array([2], np.int64))], "hist")
