"""What one row costs in the exported ONNX graph, member by member, before anything is exported:
the price ``exportable=True`` selection puts on members, in milliseconds per single row under
onnxruntime (one thread).

A member costs its graph nodes (a fixed cost each: onnxruntime's per-node dispatch dominates
small members) and its work per row: for trees the steps down (node visits, counted by the
family's predict work function from the fitted run), whose cost grows with the size of the
tree (a large tree does not stay in cache), and for linear models, kernels and nets their
multiply-adds. A run's fold siblings are each paid for: the graph keeps every sibling.

The constants are first estimates, read off one one-thread onnxruntime profile of a default
exported ensemble (per-node times, one row per call); docs/deploy.md sets the model's
predictions beside measured latencies.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...library.families._base import RoundsRun, TreesRun
from ...library.families._work import booster_leaves, unwrap
from ...library.planning.cost import predict_cost
from ...library.planning.predict_work import predict_work
from ...selection import PredictCost

__all__ = ["GRAPH_AUTO_MS", "graph_cost", "run_graph_ms", "step_ns"]

NODE_MS = 0.010
"""Milliseconds of one graph node's dispatch on one row (its work aside)."""
VIEW_NODES = 2
"""Graph nodes of one fold sibling's view (its fitted imputation, scaling, encodings)."""
RUN_NODES = 3
"""Graph nodes a run adds beside its work, whatever its siblings (the graph packs a run's
siblings into one model node; its columns and weights)."""
SMALL_STEP_NS, LARGE_STEP_NS = 22.0, 61.0
"""Nanoseconds per level of a tree of ``SMALL_TREE`` nodes or fewer (in cache) and of
``LARGE_TREE`` nodes or more (out of cache); in between interpolated on log nodes."""
SMALL_TREE, LARGE_TREE = 64.0, 2048.0
MULADD_NS = 1.0
"""Nanoseconds per multiply-add of a linear model, kernel or net (one row, in a MatMul)."""
GRAPH_AUTO_MS = 1.0
"""``max_predict_ms="auto"`` with ``exportable=True``: the single-row graph milliseconds the
cheapest ensemble within noise is held to at most."""


def step_ns(tree_nodes: float) -> float:
    """Nanoseconds per step down a tree of ``tree_nodes`` nodes."""
    lo, hi = math.log(SMALL_TREE), math.log(LARGE_TREE)
    at = (math.log(max(tree_nodes, 1.0)) - lo) / (hi - lo)
    return SMALL_STEP_NS + (LARGE_STEP_NS - SMALL_STEP_NS) * min(max(at, 0.0), 1.0)


def _unit_ns(family_run, params: dict) -> float:
    """Nanoseconds per unit of the family's predict work: a level of a tree of the run's
    size (a boosting run's trees are as large as its depth or leaves allow), else a
    multiply-add."""
    run = unwrap(family_run)
    if isinstance(run, TreesRun):
        trees = run.fitted_trees()
        nodes = np.mean([t.tree_.node_count for t in trees]) if trees else 1.0
        return step_ns(float(nodes))
    if isinstance(run, RoundsRun):
        return step_ns(2.0 * booster_leaves(params))
    return MULADD_NS


def run_graph_ms(record: dict, fitted, task: str, outputs: int, siblings: int) -> dict:
    """One sibling's single-row graph cost of a stored run (``record``: its manifest record;
    ``fitted``: its fitted siblings; ``siblings``: how many the graph holds), shaped as the
    store's ``predict_ms`` record (``{"view", "stages", "cumulative"}``) so
    :func:`predict_cost` shares views and stages as it does for stored costs."""
    view, family_run = fitted.siblings[0]
    params = dict(fitted.run.param_dict)
    width = len(view.columns.numeric) + len(view.columns.categorical)
    stages = list(fitted.run.stages or (None,))
    work = predict_work(record["family"], family_run, params, stages, width, outputs, task=task)
    unit_ms = _unit_ns(family_run, params) * 1e-6
    return {
        "view": VIEW_NODES * NODE_MS,
        "stages": [RUN_NODES * NODE_MS / siblings + units * unit_ms for _, units in work],
        "cumulative": bool(record["predict_ms"]["cumulative"]),
    }


def graph_cost(members: pd.DataFrame, library, task: str, siblings: int, outputs: int):
    """A :class:`~ensel.selection.PredictCost` of ``members`` (rows of ``Library.members``)
    whose item costs are single-row graph milliseconds: each run's fitted siblings are read
    from ``library``'s store once (a family without a predict work function raises
    :func:`predict_work`'s ValueError)."""
    records = library.store.records
    graph = {}
    for run_id in dict.fromkeys(members["run"]):
        fitted = library.store.load_fitted(run_id)
        graph[run_id] = {
            **records[run_id],
            "predict_ms": run_graph_ms(records[run_id], fitted, task, outputs, siblings),
        }
    needs, item_cost, _ = predict_cost(members, graph, siblings)  # times every sibling
    return PredictCost(needs, item_cost)
