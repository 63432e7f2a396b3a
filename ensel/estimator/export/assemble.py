"""The whole fitted ensemble as one ONNX graph: the views of every fold sibling, each selected
member (its siblings averaged as ``FittedMembers`` does, each through its group's calibrator
where the member is calibrated), the weighted average in the library's layout (binary: the
positive class, clipped to [0, 1]), and the estimator's final Platt step if it has one."""

from __future__ import annotations

import json

import numpy as np

from ...calibration import CALIBRATORS
from ...compress.export import _class_tensor, _plain
from ...library.execution.runs import TargetTransformRun, view_key
from . import adaboost, boosted, hist, svm  # noqa: F401 - register these families' converters
from ._graph import Graph
from .calibration import EXPORTABLE_CALIBRATIONS, column_calibrator
from .catboost import NUMERIC_ONLY
from .members import CONVERTERS, VARIANTS, convert
from .naive_bayes import why_not_params
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
    if categorical and family in NUMERIC_ONLY:
        return f"family {family!r} on categorical columns has no ONNX converter"
    if family == "naive_bayes" and why_not_params(params) is not None:
        return why_not_params(params)
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
    outputs = [_member(g, fm.runs[fm.run_of[i]], fm.offsets[i], n_out, fm.task)
               for i in range(len(fm.ids))]  # fmt: skip
    columns = columns_of(estimator)
    inputs = []
    if columns.numeric:
        inputs.append(helper.make_tensor_value_info(
            NUMERIC, TensorProto.DOUBLE, ["n", len(columns.numeric)]))  # fmt: skip
    if columns.categorical:
        inputs.append(helper.make_tensor_value_info(
            CATEGORICAL, TensorProto.STRING, ["n", len(columns.categorical)]))  # fmt: skip
    weights = np.asarray(estimator.weights_, dtype=np.float64)
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


def _member(g: Graph, fitted, offset: int, n_out: int, task: str) -> str:
    """One member: its stage of every sibling, calibrated per group where it is, averaged."""
    s_idx, method = fitted.member_keys[offset]
    family = fitted.run.family
    variant = method if method in VARIANTS.get((family, task), ()) else "none"
    raw = []
    for k, (view, family_run) in enumerate(fitted.siblings):
        key = view_key(fitted.run.view, view, len(fitted.siblings), k, fitted.own_rows)
        matrix = view_matrix(g, view, key)
        raw.append(convert(g, family, task, family_run, matrix, s_idx, n_out, variant))
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


def _weighted(g: Graph, weights: np.ndarray, outputs: list[str]) -> str:
    pairs = zip(weights, outputs, strict=True)
    terms = [g.node("Mul", [out, g.const(np.float64(w))]) for w, out in pairs]
    return terms[0] if len(terms) == 1 else g.node("Sum", terms, "average")


def _classes(g: Graph, estimator, weights, outputs, classes) -> list:
    """The average in the library's layout, the final calibration, ``probabilities`` (double
    ``(n, C)``) and ``label``."""
    from onnx import TensorProto, helper

    zero, one = g.const(np.float64(0.0)), g.const(np.float64(1.0))
    if classes.size == 2:
        pick = g.const(np.array(1, np.int64))
        positive = [g.node("Gather", [out, pick], "positive", axis=1) for out in outputs]
        p = g.node("Clip", [_weighted(g, weights, positive), zero, one])
        axis = g.const(np.array([1], np.int64))
        parts = [g.node("Unsqueeze", [v, axis]) for v in (g.node("Sub", [one, p]), p)]
        proba = g.node("Concat", parts, "proba", axis=1)
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
