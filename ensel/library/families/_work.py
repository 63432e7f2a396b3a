"""Cost models shared by several families: boosting (histogram boosters), linear models and
neural nets, and the helpers the predict work functions share.

A fit model counts units of fit work from the table's shape (:class:`FitShape`); a predict work
function counts ``(calls, units)`` per row on a fitted run, through its attributes (trees,
weights, support vectors), so the same fitted run costs the same on any machine.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._base import ConstantRun, RoundsRun, RunWrapper, SnapshotRun
from ._traits import CostModel, FitShape, StageWork, WorkFn

__all__ = [
    "FLOAT",
    "NODE_BYTES",
    "booster_leaves",
    "boosting_cost",
    "constant_or",
    "linear_work",
    "mlp_cost",
    "nets_work",
    "unwrap",
]

FLOAT = 8
"""Bytes per float64 value."""
NODE_BYTES = 64
"""Bytes of one tree node (scikit-learn's node record), plus 8 per output value."""


def unwrap(run: Any) -> Any:
    """The family run inside wrappers (a log-target run, a categorical-code adapter)."""
    while isinstance(run, RunWrapper):
        run = run.inner
    return run


def constant_or(fn: WorkFn) -> WorkFn:
    """``fn``, except that a fold with a single class yields a constant run (no model): one
    call, no work."""

    def work(run, params, stages, width, outputs):
        if isinstance(unwrap(run), ConstantRun):
            return [(1.0, 0.0)] * len(stages)
        return fn(run, params, stages, width, outputs)

    work.__doc__ = fn.__doc__
    return work


# ------------------------------------------------------------------ boosting


def _n_trees(s: FitShape) -> int:
    return max(s.top, 1)


def booster_leaves(params: dict) -> float:
    """Leaves of one of a booster's trees: ``num_leaves``/``max_leaf_nodes``, at most
    ``2 ** depth`` (``max_depth``/``depth``, 6 where neither is set)."""
    leaves = params.get("num_leaves") or params.get("max_leaf_nodes")
    depth = params.get("max_depth") or params.get("depth")
    out = float(leaves) if leaves else 2.0 ** float(depth or 6)
    return min(out, 2.0 ** float(depth)) if depth else out


def _levels(s: FitShape) -> float:
    """Levels of a booster's tree: its depth, or about log2 of its leaves (leaf-wise)."""
    return math.log2(max(booster_leaves(s.params), 2.0))


def _booster_depth(params: dict) -> float:
    """Levels a row descends per tree: ``max_depth``/``depth``, else log2 of the leaves."""
    depth = params.get("max_depth") or params.get("depth")
    leaves = params.get("num_leaves") or params.get("max_leaf_nodes")
    by_leaves = math.log2(max(float(leaves), 2.0)) if leaves else None
    if depth and by_leaves:
        return float(min(float(depth), by_leaves))
    return float(depth or by_leaves or 6.0)


def _boosting_work(run, params, stages, width, outputs) -> StageWork:
    """Boosting libraries: one call, ``rounds x trees per round x depth`` node visits (a tree per
    class and round for more than two classes); a stage past the rounds the run kept (early
    stopping, a time cap) costs those rounds."""
    per_round = outputs if outputs > 2 else 1
    depth = _booster_depth(params)
    top = max((s for s in stages if s is not None), default=1)
    boosted: RoundsRun = unwrap(run)
    kept = boosted.best or math.inf
    rounds = [min(float(top if s is None else s), kept) for s in stages]
    return [(1.0, r * per_round * depth) for r in rounds]


def boosting_cost(memory_factor: float) -> CostModel:
    """Histogram boosting: a round builds histograms of the rows in each level of its tree
    (``~ n d`` per level); a row's prediction descends every tree of every round."""
    return CostModel(
        fit=lambda s: s.n * s.d * _n_trees(s) * s.per_round * _levels(s),
        memory=lambda s: (
            s.n * s.d
            + 2 * FLOAT * s.n * s.k  # binned matrix, gradients
            + _n_trees(s) * s.per_round * 2 * booster_leaves(s.params) * NODE_BYTES
        ),
        predict=lambda s: (1.0, _n_trees(s) * s.per_round * _levels(s)),
        predict_work=constant_or(_boosting_work),
        memory_factor=memory_factor,
    )


def boosting_relative_cost(params: dict, stages: tuple[int, ...] | None) -> float:
    """Rounds times leaves (``num_leaves``/``max_leaf_nodes``, 31 by default)."""
    top = max(stages) if stages else 1
    return top * float(params.get("num_leaves") or params.get("max_leaf_nodes") or 31)


def depthwise_relative_cost(params: dict, stages: tuple[int, ...] | None) -> float:
    """Rounds times the leaves of a depth-wise tree (``2 ** depth``, depth 6 by default)."""
    top = max(stages) if stages else 1
    return top * 2.0 ** min(int(params.get("max_depth") or params.get("depth") or 6), 12)


# ------------------------------------------------------------------ linear models


def _margin_model(run: Any) -> Any:
    return unwrap(run).model


def linear_work(run, params, stages, width, outputs) -> StageWork:
    """Logistic/linear regression: one dot product per output."""
    coef = np.asarray(_margin_model(run).coef_)
    return [(1.0, float(max(coef.size, width)))] * len(stages)


def linear_cost() -> CostModel:
    """Linear models: ``~ n d K`` per solver iteration; two copies of the view."""
    return CostModel(
        fit=lambda s: s.n * s.d * s.k,
        memory=lambda s: 2 * FLOAT * s.n * s.d,
        predict=lambda s: (1.0, float(s.d * s.k)),
        predict_work=linear_work,
        memory_factor=3.0,
    )


# ------------------------------------------------------------------ neural nets


def _mlp_weights(s: FitShape) -> float:
    hidden = float(s.params.get("hidden", 8))
    layers = int(s.params.get("layers", 1))
    embed = float(s.params.get("embedding", 0) or 0)
    d = s.d * (1.0 + embed / 4.0) if embed else s.d  # embeddings widen categorical inputs
    return d * hidden + (layers - 1) * hidden * hidden + hidden * s.k


def nets_work(run, params, stages, width, outputs) -> StageWork:
    """Nets: each stage is a weight snapshot, a forward pass of its own
    (:meth:`SnapshotRun.snapshot_weights`); a stage past the snapshots costs the last one."""
    net: SnapshotRun = unwrap(run)
    per = net.snapshot_weights()
    if not per:  # no snapshot: a call that does nothing
        return [(1.0, 1.0)] * len(stages)
    per += [per[-1]] * (len(stages) - len(per))
    return [(1.0, per[i]) for i in range(len(stages))]


def mlp_cost(predict_work: WorkFn, memory_factor: float) -> CostModel:
    """Nets trained by epochs: ``~ n weights epochs``; each stage a weight snapshot."""
    return CostModel(
        fit=lambda s: s.n * _mlp_weights(s) * max(s.top, 1),
        memory=lambda s: (
            FLOAT * s.n * s.d
            + FLOAT * _mlp_weights(s) * (max(s.top, 1) + 4)
            + FLOAT * s.n * float(s.params.get("hidden", 8))
        ),
        predict=lambda s: (1.0, _mlp_weights(s)),
        predict_work=predict_work,
        separate_stages=True,
        memory_factor=memory_factor,
    )


def mlp_relative_cost(params: dict, stages: Sequence[int] | None) -> float:
    """Epochs times hidden units times layers."""
    top = max(stages) if stages else 1
    return top * float(params.get("hidden", 8)) * float(params.get("layers", 1))
