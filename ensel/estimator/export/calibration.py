"""The calibrators of :mod:`ensel.calibration` as graph nodes, on double ``(n, C)``
probabilities: Platt's sigmoid ``1 / (1 + exp(A f + B))`` and the isotonic step function
(the first block whose largest score is >= f: a count of ``Less`` against the block ends and a
``Gather``), per class column as ``ColumnCalibrator`` applies them (binary: the positive column
and its complement; multiclass: every column, rows renormalised)."""

from __future__ import annotations

import numpy as np

from ...calibration import ColumnCalibrator, IsotonicCalibrator, PlattCalibrator

__all__ = ["EXPORTABLE_CALIBRATIONS", "column_calibrator"]

EXPORTABLE_CALIBRATIONS = frozenset({"none", "platt", "isotonic"})
"""Member calibrations this module writes (a family's own variants, such as boosting's
"logistic" correction, are written by its converter: ``members.VARIANTS``)."""


def column_calibrator(g, cal: ColumnCalibrator, proba: str) -> str:
    """``cal.predict`` of the double ``(n, C)`` probabilities named ``proba``."""
    n_classes = cal.n_classes_
    columns = {}
    for c, one in cal.calibrators_.items():
        f = g.node("Gather", [proba, g.const(np.array(c, np.int64))], "class", axis=1)
        columns[c] = _one(g, one, f)
    unsqueeze = g.const(np.array([1], np.int64))
    if n_classes == 2:
        p = columns[1]
        q = g.node("Sub", [g.const(np.float64(1.0)), p])
        parts = [g.node("Unsqueeze", [v, unsqueeze]) for v in (q, p)]
        return g.node("Concat", parts, "calibrated", axis=1)
    parts = [g.node("Unsqueeze", [columns[c], unsqueeze]) for c in range(n_classes)]
    out = g.node("Concat", parts, "calibrated", axis=1)
    total = g.node("ReduceSum", [out, unsqueeze], keepdims=1)
    positive = g.node("Greater", [total, g.const(np.float64(0.0))])
    safe = g.node("Where", [positive, total, g.const(np.float64(1.0))])
    shares = g.node("Div", [out, safe])
    return g.node("Where", [positive, shares, g.const(np.float64(1.0 / n_classes))], "calibrated")


def _one(g, cal, f: str) -> str:
    """One column's calibrator on ``(n,)`` scores."""
    if isinstance(cal, PlattCalibrator):
        z = g.node(
            "Add", [g.node("Mul", [f, g.const(np.float64(cal.a_))]), g.const(np.float64(cal.b_))]
        )
        return g.node("Sigmoid", [g.node("Neg", [z])], "platt")
    if isinstance(cal, IsotonicCalibrator):
        from onnx import TensorProto

        column = g.node("Unsqueeze", [f, g.const(np.array([1], np.int64))])
        below = g.node("Less", [g.const(cal.upper_[None, :]), column])
        count = g.node("Cast", [below], to=TensorProto.INT64)
        idx = g.node("ReduceSum", [count, g.const(np.array([1], np.int64))], keepdims=0)
        idx = g.node("Min", [idx, g.const(np.int64(cal.values_.size - 1))])
        return g.node("Gather", [g.const(cal.values_), idx], "isotonic", axis=0)
    raise ValueError(f"the calibrator {type(cal).__name__} has no ONNX graph")
