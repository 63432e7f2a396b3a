"""The work of predicting with a fitted run, counted from its structure (not timed), so that the
same fitted members cost the same on any machine.

A family's work function reads the fitted run through its attributes (trees and their depths,
support vectors, training rows, weight snapshots, ...) and returns, per stage, ``(calls, units)``
for one row: ``calls`` the model calls a prediction makes (a forest calls each tree, a booster
itself once), ``units`` the elementary steps per row (node visits, multiply-adds, distances).
:mod:`ensel.library.cost` turns them into milliseconds per 1,000 rows with per-family constants
measured once (``benchmarks/calibrate_costs.py``, shipped in ``cost_constants.json``).

For a ``cumulative`` run a stage's work includes every smaller stage (the trees up to it); a run
whose predict cannot skip stages pays for all of them at any stage, as the builder times it.
Work functions are keyed by family name and serve both tasks (they read attributes, not types).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["PREDICT_WORK", "StageWork", "predict_work", "view_work"]

StageWork = list[tuple[float, float]]
"""Per stage: ``(calls, units)`` per row."""

WorkFn = Callable[[Any, dict, Sequence[int | None], int, int], StageWork]
"""``(fitted family run, params, stages, view width, outputs) -> StageWork``."""


def _unwrap(run: Any) -> Any:
    """The family run inside wrappers (a log-target run, a categorical-code adapter)."""
    while hasattr(run, "inner"):
        run = run.inner
    return run


def _depth(tree: Any) -> int:
    """Depth of one fitted tree, through the wrappers ensel puts around scikit-learn trees."""
    for _ in range(4):
        structure = getattr(tree, "tree_", None)
        if structure is not None:
            return max(int(structure.max_depth), 1)
        tree = next(
            (getattr(tree, a) for a in ("tree", "tree_model_", "estimator") if hasattr(tree, a)),
            None,
        )
        if tree is None:
            break
    return 1


def _tree_list(run: Any) -> list:
    for name in ("trees", "estimators"):
        trees = getattr(run, name, None)
        if trees is not None:
            return list(trees)
    model = getattr(run, "model", None)  # a single fitted tree
    if model is not None and hasattr(model, "tree_"):
        return [model]
    raise AttributeError(f"{type(run).__name__} has no list of trees")


def _prefix(per_item: list[float], stages: Sequence[int | None]) -> StageWork:
    """Cumulative work of the first ``s`` items (trees, steps) for each stage ``s``."""
    total = np.concatenate([[0.0], np.cumsum(per_item)])
    out = []
    for s in stages:
        n = len(per_item) if s is None else min(int(s), len(per_item))
        out.append((float(n), float(total[n])))
    return out


def _trees(run, params, stages, width, outputs) -> StageWork:
    """Forests, bagged trees, a single tree, AdaBoost: each tree called once, a node per level."""
    run = _unwrap(run)
    return _prefix([float(_depth(t)) for t in _tree_list(run)], stages)


def _booster_depth(params: dict) -> float:
    """Levels a row descends per tree: ``max_depth``/``depth``, else log2 of the leaves."""
    depth = params.get("max_depth") or params.get("depth")
    leaves = params.get("num_leaves") or params.get("max_leaf_nodes")
    by_leaves = math.log2(max(float(leaves), 2.0)) if leaves else None
    if depth and by_leaves:
        return float(min(float(depth), by_leaves))
    return float(depth or by_leaves or 6.0)


def _boosting(run, params, stages, width, outputs) -> StageWork:
    """Boosting libraries: one call, ``rounds x trees per round x depth`` node visits (a tree per
    class and round for more than two classes); a stage past the rounds the run kept (early
    stopping, a time cap) costs those rounds."""
    per_round = outputs if outputs > 2 else 1
    depth = _booster_depth(params)
    top = max((s for s in stages if s is not None), default=1)
    kept = getattr(_unwrap(run), "best", None) or math.inf
    rounds = [min(float(top if s is None else s), kept) for s in stages]
    return [(1.0, r * per_round * depth) for r in rounds]


def _margin_model(run: Any) -> Any:
    return _unwrap(run).model


def _linear(run, params, stages, width, outputs) -> StageWork:
    """Logistic/linear regression: one dot product per output."""
    coef = np.asarray(_margin_model(run).coef_)
    return [(1.0, float(max(coef.size, width)))] * len(stages)


def _svm(run, params, stages, width, outputs) -> StageWork:
    """Kernel SVM: a kernel evaluation per support vector (``width`` each); linear: a dot
    product per output."""
    model = _margin_model(run)
    support = getattr(model, "support_vectors_", None)
    if support is None:
        return _linear(run, params, stages, width, outputs)
    n_sv, d = np.shape(support)
    return [(1.0, float(n_sv * max(d, 1)))] * len(stages)


def _knn(run, params, stages, width, outputs) -> StageWork:
    """k-NN: a distance to every training row; one query serves every k."""
    train = np.shape(_unwrap(run).X)
    return [(1.0, float(train[0] * max(train[1], 1)))] * len(stages)


def _weights(snapshot: Any) -> float:
    """Multiply-adds of one weight snapshot: the sizes of its weight arrays (embedding tables
    cost a lookup per column, counted by their width)."""
    layers = getattr(snapshot, "layers", None)
    if layers is not None:  # a tabular net: embedding tables and (W, b) layers
        tables = getattr(snapshot, "embeddings", None) or getattr(snapshot, "tables", [])
        return float(
            sum(np.size(w) + np.size(b) for w, b in layers)
            + sum(np.shape(t)[-1] for t in tables if np.ndim(t) == 2)
        )
    return float(sum(np.size(a) for a in snapshot))


def _nets(run, params, stages, width, outputs) -> StageWork:
    """Nets: each stage is a weight snapshot, a forward pass of its own."""
    snaps = list(getattr(_unwrap(run), "snapshots", []))
    if not snaps:  # a fold with one class: a constant run
        return [(1.0, 1.0)] * len(stages)
    per = [_weights(s) for s in snaps]
    per += [per[-1]] * (len(stages) - len(per))
    return [(1.0, per[i]) for i in range(len(stages))]


def _tabm(run, params, stages, width, outputs) -> StageWork:
    """TabM: every member's forward pass through the shared blocks (``_TabMRun.weights``)."""
    return [(1.0, float(_unwrap(run).weights))] * len(stages)


def _naive_bayes(run, params, stages, width, outputs) -> StageWork:
    """Naive Bayes: a term per feature and class; a kernel estimate sums over its kernel points
    (the distinct training values of the feature in the class)."""
    run = _unwrap(run)
    values = getattr(run, "values", None)
    n_classes = len(getattr(run, "classes", [])) or outputs
    if values:
        units = float(sum(np.size(v) for per_class in values for v, _ in per_class))
    else:
        units = float(width * n_classes)
    return [(1.0, units)] * len(stages)


def _constant_or(fn: WorkFn) -> WorkFn:
    """A fold with a single class yields a constant run (no model): one call, no work."""

    def work(run, params, stages, width, outputs):
        inner = _unwrap(run)
        if not any(hasattr(inner, a) for a in ("model", "trees", "estimators", "snapshots")):
            return [(1.0, 0.0)] * len(stages)
        return fn(run, params, stages, width, outputs)

    work.__doc__ = fn.__doc__
    return work


PREDICT_WORK: dict[str, WorkFn] = {
    "adaboost": _trees,
    "bagged_trees": _trees,
    "extra_trees": _trees,
    "random_forest": _trees,
    "tree": _trees,
    "catboost": _constant_or(_boosting),
    "hist_gbdt": _constant_or(_boosting),
    "lightgbm": _constant_or(_boosting),
    "xgboost": _constant_or(_boosting),
    "knn": _knn,
    "linear": _linear,
    "logreg": _linear,
    "mlp": _nets,
    "tabular_mlp": _constant_or(_nets),
    "tabm": _constant_or(_tabm),
    "naive_bayes": _naive_bayes,
    "svm": _svm,
    "svr": _svm,
}
"""Family name -> its predict work function (both tasks)."""
SEPARATE_STAGES = frozenset({"mlp", "tabular_mlp"})
"""Families whose stages are separate work (weight snapshots); the other families' stage work
already includes every smaller stage (trees, rounds, one neighbour query)."""


def predict_work(
    family: str,
    family_run: Any,
    params: dict,
    stages: Sequence[int | None],
    width: int,
    outputs: int,
    skips_stages: bool = True,
) -> StageWork:
    """``(calls, units)`` per row for each of ``stages`` of a fitted ``family_run`` that reads a
    view ``width`` columns wide and predicts ``outputs`` columns. ``skips_stages=False``: its
    predict computes every stage whatever is asked, so each stage costs them all. A ValueError
    names a family without a work function."""
    try:
        fn = PREDICT_WORK[family]
    except KeyError:
        raise ValueError(
            f"family {family!r} has no predict work function; add one to "
            "ensel.library.predict_work.PREDICT_WORK"
        ) from None
    work = fn(family_run, params, list(stages), int(width), int(outputs))
    if not skips_stages and len(work) > 1:  # one predict computes every stage
        if family in SEPARATE_STAGES:
            total = (sum(c for c, _ in work), sum(u for _, u in work))
        else:
            total = max(work, key=lambda w: w[1])
        work = [total] * len(work)
    return work


def view_work(view: Any, width: int) -> tuple[float, float]:
    """``(calls, units)`` per row of transforming a row: every input column is read, every
    output column (one-hot levels, missing indicators) written."""
    columns = getattr(view, "columns", None)
    n_in = (
        len(getattr(columns, "numeric", ())) + len(getattr(columns, "categorical", ()))
        if columns is not None
        else width
    )
    n_cat = len(getattr(columns, "categorical", ())) if columns is not None else 0
    return float(1 + n_cat), float(n_in + width)
