"""The calibrators of :mod:`ensel.calibration` as graph nodes, on double ``(n, C)``
probabilities: Platt's sigmoid ``1 / (1 + exp(A f + B))`` and the isotonic step function
(the first block whose largest score is >= f: a count of ``Less`` against the block ends and a
``Gather``), per class column as ``ColumnCalibrator`` applies them (binary: the positive column
and its complement; multiclass: every column, rows renormalised)."""

from __future__ import annotations

import numpy as np

from ...calibration import ColumnCalibrator, IsotonicCalibrator, PlattCalibrator

__all__ = ["EXPORTABLE_CALIBRATIONS", "column_calibrator", "platt_terms", "side_by_side"]

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


def side_by_side(g, cals: list, f: str) -> str:
    """Calibrator ``cals[j]`` (one class column's, all of one kind) on column ``j`` of the
    double ``(n, G)`` scores ``f``, in one set of nodes for all ``G`` columns: a binary member's
    cross-fitted calibrators, one per group, cost a service the nodes of one."""
    terms = platt_terms(cals)
    if terms is not None:
        a, b = terms
        return g.node("Sigmoid", [g.node("Add", [g.node("Mul", [f, g.const(a)]), g.const(b)])])
    if all(isinstance(cal, IsotonicCalibrator) for cal in cals):
        from onnx import TensorProto

        sizes = np.array([cal.values_.size for cal in cals])
        upper = np.full((len(cals), sizes.max()), np.inf)  # a padded end is never below f
        for j, cal in enumerate(cals):
            upper[j, : cal.upper_.size] = cal.upper_
        column = g.node("Unsqueeze", [f, g.const(np.array([2], np.int64))])  # (n, G, 1)
        below = g.node("Cast", [g.node("Less", [g.const(upper), column])], to=TensorProto.INT64)
        idx = g.node("ReduceSum", [below, g.const(np.array([2], np.int64))], keepdims=0)
        idx = g.node("Min", [idx, g.const(sizes - 1)])
        idx = g.node("Add", [idx, g.const(np.concatenate([[0], np.cumsum(sizes)[:-1]]))])
        values = np.concatenate([cal.values_ for cal in cals]).astype(np.float64)
        return g.node("Gather", [g.const(values), idx], "isotonic", axis=0)
    kinds = sorted({type(cal).__name__ for cal in cals})
    raise ValueError(f"calibrators {kinds} side by side have no ONNX graph")


def platt_terms(cals: list) -> tuple[np.ndarray, np.ndarray] | None:
    """``(a, b)`` such that calibrator ``cals[j]`` maps ``f`` to ``sigmoid(a[j] f + b[j])``,
    where all of ``cals`` are Platt's (else None): columns of several members calibrated
    this way are one ``Mul``, ``Add`` and ``Sigmoid`` side by side."""
    if not all(isinstance(cal, PlattCalibrator) for cal in cals):
        return None
    # sigmoid(-(a f + b)) = sigmoid(-a f - b), exact
    return np.array([-cal.a_ for cal in cals]), np.array([-cal.b_ for cal in cals])


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
