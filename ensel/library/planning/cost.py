"""Predict costs of library members and of sets of them.

The builder records each run's predict cost (:func:`structural_predict_ms`): the work its
fitted structure asks for (:mod:`ensel.library.planning.predict_work`) times per-family constants
measured once (``cost_constants.json``, written by ``benchmarks/calibrate_costs.py``), so the
same data and seed give the same costs, hence the same cost-bounded ensemble, on any machine.

A member needs *items*: its preprocessing view (transformed once per fold and shared by every
run that uses it), and the work of its stage: for a cumulative run (boosting steps, trees, one
neighbour query for every k) the segments of work up to its stage, else its own stage. A set of
members costs the sum over the union of the items they need, so members of one run share its
work. Calibrators (a sigmoid or an interpolation per row) are left out: they cost microseconds.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from importlib import resources
from typing import Any

import numpy as np
import pandas as pd

from ..families import get_family, traits_of
from .predict_work import predict_work, view_work

__all__ = ["cost_constants", "predict_cost", "structural_predict_ms"]

CONSTANTS_FILE = "cost_constants.json"


@functools.cache
def cost_constants() -> dict:
    """The shipped constants (see ``benchmarks/calibrate_costs.py``): ``predict``: per
    ``task/family`` and ``view/kind`` ``{"ms_per_call", "ms_per_unit"}`` (ms per 1,000 rows);
    ``fit``: the fit-time and memory constants of :mod:`ensel.library.planning.estimate`;
    ``measured``:
    where and when they were measured."""
    text = resources.files("ensel.library.planning").joinpath(CONSTANTS_FILE).read_text()
    return json.loads(text)


def _ms(key: str, calls: float, units: float, own: dict | None = None) -> float:
    """Milliseconds per 1,000 rows at the constants of ``key``, else ``own`` (a family's first
    estimate, see ``CostModel.constants``), else the default ones."""
    table = cost_constants()["predict"]
    c = table.get(key) or own or table["default"]
    return round(calls * c["ms_per_call"] + units * c["ms_per_unit"], 4)


def structural_predict_ms(
    family: str,
    task: str,
    params: dict[str, Any],
    stages: Sequence[int | None],
    view: Any,
    family_run: Any,
    width: int,
    outputs: int,
    skips_stages: bool = True,
) -> dict:
    """A run's predict cost per sibling in milliseconds per 1,000 rows, from its fitted
    structure: ``{"view", "stages", "cumulative"}`` as the builder records it (the shape
    :func:`predict_cost` reads). ``view``: the fitted view (``width``: its output columns);
    ``family_run``: the fitted run; ``skips_stages``: whether its predict computes only the
    stages asked. Deterministic: no timing."""
    work = predict_work(family, family_run, params, stages, width, outputs, skips_stages, task=task)
    own = traits_of(family, task).cost.constants.get("predict")
    kind = view.kind
    if f"view/{kind}" not in cost_constants()["predict"]:
        kind = VIEW_RATE_OF.get(kind, kind)
    return {
        "view": _ms(f"view/{kind}", *view_work(view, width)),
        "stages": [_ms(f"{task}/{family}", c, u, own) for c, u in work],
        "cumulative": bool(family_run.cumulative) or not skips_stages,
    }


VIEW_RATE_OF = {"te": "native"}
"""Views priced at another view's calibrated rate until the calibration script times them:
``te`` is the native view plus encoded columns (its work, the columns it writes, is counted
all the same)."""


def predict_cost(
    members: pd.DataFrame, records: dict[str, dict], n_siblings: int
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """``(needs, item_cost, item_names)`` of ``members`` (rows of ``Library.members``, with
    ``run`` and ``stage``): ``needs`` ``(n_members, n_items)`` bool, ``item_cost`` in
    milliseconds per 1,000 rows when each run predicts with ``n_siblings`` models (K under
    ``cv=K``, 1 after a refit on all rows). ``records``: the store's manifest records, whose
    ``predict_ms`` the builder wrote (:func:`structural_predict_ms`). A ValueError names runs
    built without costs."""
    runs = list(dict.fromkeys(members["run"]))
    missing = [r for r in runs if not (records.get(r) or {}).get("predict_ms")]
    if missing:
        raise ValueError(
            f"no predict costs recorded for run(s) {missing[:3]} (a library built before "
            "ensel recorded them); rebuild it into a new store to select under a cost budget"
        )
    view_of = {r: _view_of(records[r]) for r in runs}
    view_ms = {
        v: float(np.median([records[r]["predict_ms"]["view"] for r in runs if view_of[r] == v]))
        for v in dict.fromkeys(view_of.values())
    }
    names = [f"view:{v}" for v in view_ms]  # v: kind, or kind+native-missing
    costs = [view_ms[v] * n_siblings for v in view_ms]
    column = {name: i for i, name in enumerate(names)}
    needs_of: dict[tuple[str, object], list[int]] = {}
    for r in runs:
        rec = records[r]
        ms = rec["predict_ms"]
        stages = rec["stages"] or [None]
        order = sorted(range(len(stages)), key=lambda i: -1 if stages[i] is None else stages[i])
        if ms["cumulative"]:
            upto = np.maximum.accumulate([ms["stages"][i] for i in order])
            segments = np.diff(upto, prepend=0.0)
            items = []
            for pos, i in enumerate(order):
                name = f"{r}:upto{stages[i]}"
                column[name] = len(names)
                names.append(name)
                costs.append(float(segments[pos]) * n_siblings)
                items.append(column[name])
                needs_of[(r, stages[i])] = [column[f"view:{view_of[r]}"], *items]
        else:
            for i in order:
                name = f"{r}:stage{stages[i]}"
                column[name] = len(names)
                names.append(name)
                costs.append(float(ms["stages"][i]) * n_siblings)
                needs_of[(r, stages[i])] = [column[f"view:{view_of[r]}"], column[name]]
    needs = np.zeros((len(members), len(names)), dtype=bool)
    for row, (r, stage) in enumerate(zip(members["run"], members["stage"], strict=True)):
        needs[row, needs_of[(r, None if pd.isna(stage) else int(stage))]] = True
    return needs, np.asarray(costs), names


def _view_of(record: dict) -> str:
    """The view a run's family sees: its kind, and ``+nan`` where NaN passes through (such a
    view differs from the imputing one of the same kind, so the two are not shared)."""
    try:
        native = get_family(record["family"], record.get("task", "classification")).native_missing
    except ValueError:
        native = False
    return f"{record['view']}+nan" if native else record["view"]
