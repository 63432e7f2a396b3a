"""What one row costs in the exported ONNX graph, member by member, before anything is exported:
the price ``exportable=True`` selection puts on members, in milliseconds per single row under
onnxruntime (one thread).

The cost is linear in constants (``cost_constants.json``'s ``graph``; ``python -m
benchmarks.calibrate_graph`` fits them to the single-row times of exported member sets and says
how well they explain them): ``view_ms`` per fold sibling's view (its imputation and scaling
nodes) and ``category_ms`` per categorical column it encodes, ``run_ms`` per run whose
converter writes all its fold siblings as one model (trees, boosting), ``sibling_ms`` per fold
sibling of any other run (one model each), ``member_ms`` per member (its calibration, its column
of the average), the run's work per row per fold sibling (the graph keeps every sibling), and
``fixed_ms`` for the graph's own nodes (inputs, average, outputs), paid once by any ensemble.
The work is the family's predict work function's count on the fitted run: for trees the steps
down (node visits), at ``small_step_ns`` a step in a tree of ``SMALL_TREE`` nodes or fewer (in
cache) and ``large_step_ns`` from ``LARGE_TREE`` nodes (out of cache), interpolated on log
nodes between; for linear models, kernels and nets their multiply-adds at ``muladd_ns``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...library.families._base import RoundsRun, TreesRun
from ...library.families._work import booster_leaves, unwrap
from ...library.planning.cost import cost_constants, predict_cost
from ...library.planning.predict_work import predict_work
from ...selection import PredictCost
from . import assemble  # noqa: F401 - registers every family's converter
from .members import RUN_CONVERTERS

__all__ = ["CONSTANTS", "GRAPH_AUTO_MS", "graph_constants", "graph_cost", "run_graph_ms", "step_ns"]

CONSTANTS = (
    "view_ms", "category_ms", "run_ms", "sibling_ms", "member_ms", "small_step_ns",
    "large_step_ns", "muladd_ns", "fixed_ms",
)  # fmt: skip
"""The graph cost model's constants, in the order ``benchmarks/calibrate_graph.py`` fits them."""
SMALL_TREE, LARGE_TREE = 64.0, 2048.0
"""Tree sizes (nodes) at and below which a step down costs ``small_step_ns``, at and above
which it costs ``large_step_ns``."""
GRAPH_AUTO_MS = 1.0
"""``max_predict_ms="auto"`` with ``exportable=True``: the single-row graph milliseconds the
cheapest ensemble within noise is held to at most."""


def graph_constants() -> dict[str, float]:
    """The shipped constants of the graph cost model (``cost_constants.json``'s ``graph``)."""
    return {k: float(cost_constants()["graph"][k]) for k in CONSTANTS}


def step_ns(tree_nodes: float, constants: dict | None = None) -> float:
    """Nanoseconds per step down a tree of ``tree_nodes`` nodes."""
    c = constants or graph_constants()
    lo, hi = math.log(SMALL_TREE), math.log(LARGE_TREE)
    at = min(max((math.log(max(tree_nodes, 1.0)) - lo) / (hi - lo), 0.0), 1.0)
    return c["small_step_ns"] * (1.0 - at) + c["large_step_ns"] * at


def _unit_ns(family_run, params: dict, constants: dict) -> float:
    """Nanoseconds per unit of the family's predict work: a level of a tree of the run's
    size (a boosting run's trees are as large as its depth or leaves allow), else a
    multiply-add."""
    run = unwrap(family_run)
    if isinstance(run, TreesRun):
        trees = run.fitted_trees()
        nodes = np.mean([t.tree_.node_count for t in trees]) if trees else 1.0
        return step_ns(float(nodes), constants)
    if isinstance(run, RoundsRun):
        return step_ns(2.0 * booster_leaves(params), constants)
    return constants["muladd_ns"]


def run_graph_ms(
    record: dict, fitted, task: str, outputs: int, siblings: int, constants: dict | None = None
) -> dict:
    """One sibling's single-row graph cost of a stored run (``record``: its manifest record;
    ``fitted``: its fitted siblings; ``siblings``: how many the graph holds), shaped as the
    store's ``predict_ms`` record (``{"view", "stages", "cumulative"}``) so
    :func:`predict_cost` shares views and stages as it does for stored costs."""
    c = constants or graph_constants()
    view, family_run = fitted.siblings[0]
    params = dict(fitted.run.param_dict)
    width = len(view.columns.numeric) + len(view.columns.categorical)
    stages = list(fitted.run.stages or (None,))
    work = predict_work(record["family"], family_run, params, stages, width, outputs, task=task)
    unit_ms = _unit_ns(family_run, params, c) * 1e-6
    packed = (record["family"], task) in RUN_CONVERTERS  # one model for all its siblings
    model_ms = c["run_ms"] / siblings if packed else c["sibling_ms"]
    return {
        "view": c["view_ms"] + c["category_ms"] * len(view.columns.categorical),
        "stages": [model_ms + units * unit_ms for _, units in work],
        "cumulative": bool(record["predict_ms"]["cumulative"]),
    }


def graph_cost(
    members: pd.DataFrame, library, task: str, siblings: int, outputs: int,
    constants: dict | None = None,
) -> PredictCost:  # fmt: skip
    """A :class:`~ensel.selection.PredictCost` of ``members`` (rows of ``Library.members``)
    whose item costs are single-row graph milliseconds, each member's own nodes an item of its
    own and the graph's fixed part an item every member needs. Each run's fitted siblings are
    read from ``library``'s store once (a family without a predict work function raises
    :func:`predict_work`'s ValueError). ``constants``: the model's (default: the shipped ones)."""
    c = constants or graph_constants()
    records = library.store.records
    graph = {}
    for run_id in dict.fromkeys(members["run"]):
        fitted = library.store.load_fitted(run_id)
        graph[run_id] = {
            **records[run_id],
            "predict_ms": run_graph_ms(records[run_id], fitted, task, outputs, siblings, c),
        }
    needs, item_cost, _ = predict_cost(members, graph, siblings)  # times every sibling
    n = len(members)
    needs = np.hstack([needs, np.eye(n, dtype=bool), np.ones((n, 1), dtype=bool)])
    own = np.full(n, c["member_ms"])
    return PredictCost(needs, np.concatenate([item_cost, own, [c["fixed_ms"]]]))
