"""The order of a build under a time budget (anytime building): whatever moment the budget ends,
the runs finished by then should already make a strong, varied library.

So runs are taken round-robin over their families, strongest families first (gradient boosting,
forests, logistic regression, nets, ...), and within a family cheapest first: after one round
every family has its cheapest member in the library, after two rounds two, and so on. The
detectors of the spec take part as one more family. Kernel SVMs and k-NN, whose cost grows with
the square of the rows, go after everything else on large data. Runs on a feature-engineered
view (``te``) form a group of their own, next after their family's: they add a different kind
of member, which should not wait behind the family's whole ladder on the native view. Costs are
relative estimates from each run's parameters (rounds, trees, epochs, hidden units), not
seconds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["LARGE_ROWS", "STRENGTH", "anytime_order", "relative_cost"]

STRENGTH = (
    "lightgbm",
    "xgboost",
    "hist_gbdt",
    "catboost",
    "random_forest",
    "extra_trees",
    "logreg",
    "linear",
    "tabular_mlp",
    "tabm",
    "bagged_trees",
    "mlp",
    "adaboost",
    "naive_bayes",
    "tree",
    "knn",
    "svm",
    "svr",
)
"""Families from the usually strongest to the usually weakest on tabular data; families not
listed come after these, detectors after the first few families."""
DETECTOR_RANK = 6.5
"""Where the detectors, as one group, enter the rotation (after the sixth family)."""
LARGE_ROWS = 2_000
"""From this many training rows, kernel SVMs and k-NN are scheduled after everything else."""
QUADRATIC = ("svm", "svr", "knn")
ENGINEERED_VIEWS = ("te",)
"""Views whose runs are scheduled as a group of their own (see the module docstring)."""


def relative_cost(family: str, params: dict[str, Any], stages: tuple[int, ...] | None) -> float:
    """A relative training cost of one run of ``family`` (per row of data): the work its
    parameters ask for, e.g. rounds times leaves for boosting, trees for forests, epochs times
    hidden units for nets. Only comparisons within a family use it."""
    top = max(stages) if stages else 1
    if family in ("xgboost", "catboost"):
        return top * 2.0 ** min(int(params.get("max_depth") or params.get("depth") or 6), 12)
    if family in ("lightgbm", "hist_gbdt"):
        return top * float(params.get("num_leaves") or params.get("max_leaf_nodes") or 31)
    if family in ("random_forest", "extra_trees", "bagged_trees"):
        return float(top)
    if family == "adaboost":
        depth = params.get("max_depth")
        return top * (1.0 + (8.0 if depth is None else float(depth)))
    if family in ("mlp", "tabular_mlp"):
        return top * float(params.get("hidden", 8)) * float(params.get("layers", 1))
    if family == "tabm":
        return float(params.get("k", 8)) * float(params.get("d_block", 256)) ** 2
    if family in ("svm", "svr"):
        return 1.0 if params.get("kernel") == "linear" else 4.0 + float(params.get("C", 1.0))
    if family == "knn":
        return 2.0 if params.get("metric") == "gain_ratio" else 1.0
    if family == "naive_bayes":
        return {"normal": 1.0, "discretized": 2.0, "kernel": 4.0}.get(params.get("kind"), 2.0)
    if family == "logreg":
        ridge = params.get("ridge")
        return 2.0 if ridge is None else 1.0 + 1.0 / (1.0 + math.log10(1.0 + float(ridge)))
    return 1.0


def _deferred(family: str, params: dict[str, Any], n_rows: int) -> bool:
    if n_rows < LARGE_ROWS or family not in QUADRATIC:
        return False
    return not (family in ("svm", "svr") and params.get("kernel") == "linear")


def anytime_order(tasks: Sequence[tuple[str, Any]], n_rows: int) -> list[int]:
    """Indices of ``tasks`` (``(section, run spec)`` pairs, as the builder holds them) in the
    order to run them under a time budget (see the module docstring)."""
    groups: dict[str, list[tuple[float, int]]] = {}
    last: list[tuple[float, int]] = []
    for i, (section, run) in enumerate(tasks):
        if section != "families":
            groups.setdefault(f"~{section}", []).append((0.0, i))  # detectors: spec order
            continue
        params = dict(run.params)
        cost = relative_cost(run.family, params, run.stages)
        if _deferred(run.family, params, n_rows):
            last.append((cost, i))
        else:
            view = getattr(run, "view", None)
            key = f"{run.family}/{view}" if view in ENGINEERED_VIEWS else run.family
            groups.setdefault(key, []).append((cost, i))

    def rank(name: str) -> tuple[float, str]:
        if name.startswith("~"):
            return DETECTOR_RANK, name
        family, _, view = name.partition("/")
        strength = float(STRENGTH.index(family)) if family in STRENGTH else len(STRENGTH)
        return strength + (0.5 if view else 0.0), name

    queues = [sorted(groups[name]) for name in sorted(groups, key=rank)]
    order = []
    for round_ in range(max((len(q) for q in queues), default=0)):
        order += [q[round_][1] for q in queues if round_ < len(q)]
    return order + [i for _, i in sorted(last)]
