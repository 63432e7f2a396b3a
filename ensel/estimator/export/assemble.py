"""The whole fitted ensemble as one ONNX graph: the views of every fold sibling, each selected
member (its siblings averaged as ``FittedMembers`` does, each through its group's calibrator
where the member is calibrated), the weighted average in the library's layout (binary: the
positive class, clipped to [0, 1]), and the estimator's final Platt step if it has one.

A service pays onnxruntime a few microseconds per node on every call, whatever the rows, so
a binary ensemble is written with as few nodes as it needs: each member's siblings' positive
columns side by side, their calibrators applied side by side, and the whole average one
``MatMul``; nodes no output reads are left out of the file."""

from __future__ import annotations

import json

import numpy as np

from ...calibration import CALIBRATORS
from ...compress.export import _class_tensor, _plain
from ...library.execution.runs import TargetTransformRun, view_key
from . import adaboost, boosted, catboost, hist, naive_bayes, svm  # noqa: F401 - register converters
from ._graph import Graph
from .calibration import (
    EXPORTABLE_CALIBRATIONS,
    column_calibrator,
    platt_terms,
    side_by_side,
)
from .members import CONVERTERS, REFUSALS, VARIANTS, convert, convert_runs
from .risk import risk_output
from .views import CATEGORICAL, EXPORTABLE_VIEWS, NUMERIC, view_matrix

__all__ = ["build", "columns_of", "unexportable", "why_not"]


def why_not(
    family: str,
    view: str,
    calibration: str,
    task: str,
    params: dict | None = None,
    categorical: bool = False,
) -> str | None:
    """Why a member of ``family`` on ``view`` with ``calibration`` (and the run's ``params``;
    ``categorical``: whether the table has categorical columns) cannot be exported, or None
    where it can: the declared properties selection with ``exportable=True`` reads."""
    if isinstance(params, dict) and params.get("target", "none") != "none":
        return f"target {params['target']!r} has no ONNX graph"
    if (family, task) not in CONVERTERS:
        return f"family {family!r} has no ONNX converter"
    refused = REFUSALS.get((family, task), lambda params, categorical: None)(params, categorical)
    if refused is not None:
        return refused
    if view not in EXPORTABLE_VIEWS:
        return f"view {view!r} has no ONNX graph"
    if calibration not in EXPORTABLE_CALIBRATIONS | VARIANTS[(family, task)]:
        return f"calibration {calibration!r} has no ONNX graph"
    return None


def unexportable(estimator) -> list[str]:
    """``"member id (reason)"`` for each kept member the graph cannot express."""
    fm = estimator.fitted_members_
    categorical = bool(columns_of(estimator).categorical)
    out = []
    for i, member in enumerate(fm.ids):
        fitted = fm.runs[fm.run_of[i]]
        _, method = fitted.member_keys[fm.offsets[i]]
        run = fitted.run
        reason = why_not(run.family, run.view, method, fm.task, run.param_dict, categorical)
        if reason is None and any(isinstance(r, TargetTransformRun) for _, r in fitted.siblings):
            reason = "a log1p target has no ONNX graph"
        if reason is not None:
            out.append(f"{member} ({reason})")
    return out


def columns_of(estimator):
    """The ``data.Columns`` the members' views read (every view of one library shares them)."""
    fm = estimator.fitted_members_
    fitted = next(iter(fm.runs.values()))
    return fitted.siblings[0][0].columns


def build(estimator, risk: bool = False):
    """The checked ONNX model of ``estimator`` (every member exportable: see
    :func:`unexportable`); with ``risk``, the combined extrapolation risk as output ``risk``
    (see :mod:`.risk`)."""
    from onnx import TensorProto, helper

    fm = estimator.fitted_members_
    regression = fm.task == "regression"
    n_out = 1 if regression else fm.classes.size
    g = Graph()
    columns = columns_of(estimator)
    inputs = []
    if columns.numeric:
        inputs.append(helper.make_tensor_value_info(
            NUMERIC, TensorProto.DOUBLE, ["n", len(columns.numeric)]))  # fmt: skip
    if columns.categorical:
        inputs.append(helper.make_tensor_value_info(
            CATEGORICAL, TensorProto.STRING, ["n", len(columns.categorical)]))  # fmt: skip
    weights = np.asarray(estimator.weights_, dtype=np.float64)
    binary = not regression and fm.classes.size == 2
    g.cache["last stages"] = _last_stages(fm)
    outputs = [
        (_positive_member if binary else _member)(
            g, fm.runs[fm.run_of[i]], fm.offsets[i], n_out, fm.task
        )
        for i in range(len(fm.ids))
    ]
    if regression:
        total = _weighted(g, weights, outputs)
        flat = g.const(np.array([-1], np.int64))
        g.nodes.append(helper.make_node("Reshape", [total, flat], ["prediction"]))
        graph_outputs = [helper.make_tensor_value_info("prediction", TensorProto.DOUBLE, ["n"])]
        props = {}
    else:
        graph_outputs = _classes(g, estimator, weights, outputs, fm.classes)
        props = {"classes": json.dumps([_plain(c) for c in fm.classes])}
    if risk:
        g.nodes.append(helper.make_node("Identity", [risk_output(g, estimator, columns)], ["risk"]))
        graph_outputs.append(helper.make_tensor_value_info("risk", TensorProto.DOUBLE, ["n"]))
    model = g.model(inputs, graph_outputs, "ensel ensemble: raw rows in, the ensemble's output out")
    helper.set_model_props(
        model,
        {
            "numeric_columns": json.dumps(list(columns.numeric)),
            "categorical_columns": json.dumps(list(columns.categorical)),
            "members": json.dumps(list(fm.ids)),
            **props,
        },
    )
    return model


def _last_stages(fm) -> dict[int, int]:
    """The largest stage index of each fitted run (by ``id``) that the kept members use: the
    stages of one run share the nodes of that one."""
    out: dict[int, int] = {}
    for i in range(len(fm.ids)):
        fitted = fm.runs[fm.run_of[i]]
        stage = fitted.member_keys[fm.offsets[i]][0]
        out[id(fitted)] = max(out.get(id(fitted), stage), stage)
    return out


def _matrices(g: Graph, fitted) -> list[str]:
    """The view matrix of each fold sibling of ``fitted``."""
    out = []
    for k, (view, _) in enumerate(fitted.siblings):
        key = view_key(fitted.run.view, view, len(fitted.siblings), k, fitted.own_rows)
        out.append(view_matrix(g, view, key))
    return out


def _variant(fitted, method: str, task: str) -> str:
    return method if method in VARIANTS.get((fitted.run.family, task), ()) else "none"


def _stacked(g: Graph, fitted, offset: int, n_out: int, task: str, positive: bool):
    """``(stacked, calibration, stage)`` of one member: its stage of every fold sibling in
    one set of nodes (``members.convert_runs``: ``(n, S)`` positive columns with
    ``positive``, else ``(n, S, C)``), or None where its family writes siblings one by one."""
    s_idx, method = fitted.member_keys[offset]
    if _variant(fitted, method, task) != "none":
        return None, method, s_idx
    runs = [family_run for _, family_run in fitted.siblings]
    last = g.cache["last stages"].get(id(fitted), s_idx)
    matrices = _matrices(g, fitted)
    stacked = convert_runs(
        g, fitted.run.family, task, runs, matrices, s_idx, n_out, positive, max(last, s_idx)
    )
    return stacked, method, s_idx


def _raw(g: Graph, fitted, offset: int, n_out: int, task: str) -> tuple[list[str], str, int]:
    """``(outputs, calibration, stage)`` of one member: its stage of every fold sibling,
    uncalibrated, each on its sibling's view (``(n, C)`` each)."""
    stacked, method, s_idx = _stacked(g, fitted, offset, n_out, task, False)
    if stacked is not None:
        pick = [g.const(np.array(k, np.int64)) for k in range(len(fitted.siblings))]
        return [g.node("Gather", [stacked, k], "sibling", axis=1) for k in pick], method, s_idx
    variant = _variant(fitted, method, task)
    raw = []
    for matrix, (_, family_run) in zip(_matrices(g, fitted), fitted.siblings, strict=True):
        raw.append(convert(g, fitted.run.family, task, family_run, matrix, s_idx, n_out, variant))
    return raw, method, s_idx


def _member(g: Graph, fitted, offset: int, n_out: int, task: str) -> str:
    """One member: its stage of every sibling, calibrated per group where it is, averaged."""
    stacked, method, _ = _stacked(g, fitted, offset, n_out, task, False)
    k = len(fitted.siblings)
    if stacked is not None and method not in CALIBRATORS:  # the siblings' mean in two nodes
        total = g.node("ReduceSum", [stacked, g.const(np.array([1], np.int64))], keepdims=0)
        return g.node("Div", [total, g.const(np.float64(k))], "member")
    raw, method, s_idx = _raw(g, fitted, offset, n_out, task)
    if method in CALIBRATORS:
        cals = fitted.calibrators[(s_idx, method)]
        parts = [
            column_calibrator(g, cal, raw[fitted.sibling_of_group[group]])
            for group, cal in enumerate(cals)
        ]
    else:
        parts = raw
    if len(parts) == 1:
        return parts[0]
    total = g.node("Sum", parts)  # onnxruntime has no double Mean
    return g.node("Div", [total, g.const(np.float64(len(parts)))], "member")


def _positive_member(g: Graph, fitted, offset: int, n_out: int, task: str) -> tuple:
    """One member of a binary ensemble as ``(columns, k, platt)``: its siblings' positive-class
    columns side by side, ``(n, k)``, whose mean (after ``platt``, ``(a, b)`` of
    ``sigmoid(a f + b)`` per column, where not None) is the member's positive probability.
    One block per member, and Platt steps left to :func:`_classes`, so that the average of
    the whole ensemble is a few nodes: a service pays per node, not per sibling."""
    columns, method, s_idx = _stacked(g, fitted, offset, n_out, task, True)
    if columns is None:
        raw, method, s_idx = _raw(g, fitted, offset, n_out, task)
        columns = _side_by_side(g, [g.positive(r) for r in raw])
    k = len(fitted.siblings)
    if method not in CALIBRATORS:
        return columns, k, None
    cals = fitted.calibrators[(s_idx, method)]
    order = [fitted.sibling_of_group[group] for group in range(len(cals))]
    if order != list(range(k)):
        columns = g.node("Gather", [columns, g.const(np.array(order, np.int64))], axis=1)
    ones = [cal.calibrators_[1] for cal in cals]
    terms = platt_terms(ones)
    if terms is not None:
        return columns, len(cals), terms
    return side_by_side(g, ones, columns), len(cals), None


def _side_by_side(g: Graph, columns: list[str]) -> str:
    """``(n, 1)`` columns as one ``(n, k)`` matrix, written once per set of columns."""
    key = ("side_by_side", tuple(columns))
    if key not in g.cache:
        one = len(columns) == 1
        g.cache[key] = columns[0] if one else g.node("Concat", columns, "siblings", axis=1)
    return g.cache[key]


def _weighted(g: Graph, weights: np.ndarray, outputs: list[str]) -> str:
    pairs = zip(weights, outputs, strict=True)
    terms = [g.node("Mul", [out, g.const(np.float64(w))]) for w, out in pairs]
    return terms[0] if len(terms) == 1 else g.node("Sum", terms, "average")


def _classes(g: Graph, estimator, weights, outputs, classes) -> list:
    """The average in the library's layout, the final calibration, ``probabilities`` (double
    ``(n, C)``) and ``label``."""
    from onnx import TensorProto, helper

    zero, one = g.const(np.float64(0.0)), g.const(np.float64(1.0))
    if classes.size == 2:  # outputs: (columns, k, platt) per member (_positive_member)
        columns, scale = _binary_columns(g, weights, outputs)
        p = g.node("MatMul", [columns, g.const(scale[:, None])])
        proba = g.pair(g.node("Clip", [p, zero, one]), "proba")
    else:
        proba = g.node("Clip", [_weighted(g, weights, outputs), zero, one], "proba")
    if estimator.calibrator_ is not None:
        proba = column_calibrator(g, estimator.calibrator_, proba)
    g.nodes.append(helper.make_node("Identity", [proba], ["probabilities"]))
    values, label_type = _class_tensor(classes)
    argmax = g.node("ArgMax", ["probabilities"], axis=1, keepdims=0)
    g.nodes.append(helper.make_node("Gather", [g.const(values), argmax], ["label"], axis=0))
    return [
        helper.make_tensor_value_info("probabilities", TensorProto.DOUBLE, ["n", classes.size]),
        helper.make_tensor_value_info("label", label_type, ["n"]),
    ]


def _binary_columns(g: Graph, weights, outputs) -> tuple[str, np.ndarray]:
    """Every member's (calibrated) columns side by side and each column's weight in the
    average: the columns of Platt-calibrated members calibrated together (one ``Mul``,
    ``Add`` and ``Sigmoid``), then the others."""
    blocks, scales, platt = [], [], []
    for w, (columns, k, terms) in zip(weights, outputs, strict=True):
        if terms is None:
            blocks.append(columns)
            scales.append(np.full(k, w / k))
        else:
            platt.append((columns, np.full(k, w / k), terms))
    if platt:
        f = _side_by_side(g, [columns for columns, _, _ in platt])
        a, b = (np.concatenate([terms[i] for _, _, terms in platt]) for i in (0, 1))
        z = g.node("Add", [g.node("Mul", [f, g.const(a)]), g.const(b)])
        blocks.insert(0, g.node("Sigmoid", [z], "platt"))
        scales.insert(0, np.concatenate([scale for _, scale, _ in platt]))
    columns = blocks[0] if len(blocks) == 1 else g.node("Concat", blocks, "members", axis=1)
    return columns, np.concatenate(scales)
