"""The combined extrapolation risk (``risk.combined.Combination``) as an extra ``risk`` output
of the exported graph, for combinations whose weighted detectors all have a writer
(``WRITERS``: the bounding box, whose test on the raw inputs is a numeric cell outside the
training range or a category never seen, missing cells never leaving the box; the isolation
forest): each detector's fold siblings averaged, Platt-calibrated, weighted, clipped to [0, 1]
and 1 where every weighted detector says 1. Any other weighted detector is refused."""

from __future__ import annotations

import numpy as np

from .calibration import _one
from .risk_isolation import isolation_sibling
from .views import CATEGORICAL, NUMERIC

__all__ = ["risk_output", "why_no_risk"]


def why_no_risk(estimator) -> str | None:
    """Why the estimator's combined risk cannot be written (one line), or None."""
    detectors = estimator.detectors_
    if detectors is None:
        return "the model has no detectors (its library listed none, or it was saved without)"
    combination = detectors.combination
    bad = [
        name
        for name, fitted, w in zip(
            combination.names, detectors.fitted, combination.weights, strict=True
        )
        if w > 0 and fitted.name not in WRITERS
    ]
    if bad:
        have = ", ".join(sorted(WRITERS))
        return f"detector(s) {', '.join(bad)} in the combined risk have no ONNX graph ({have} have)"
    return None


def risk_output(g, estimator, columns) -> str:
    """The name of the combined risk, double ``(n,)``, for the inputs of ``columns``."""
    combination = estimator.detectors_.combination
    detectors = estimator.detectors_.fitted
    keep = np.flatnonzero(combination.weights > 0)
    raws = [_detector(g, detectors[i], columns) for i in keep]
    terms = [
        g.node(
            "Mul",
            [_one(g, combination.calibrators[i], raw), g.const(np.float64(combination.weights[i]))],
        )
        for i, raw in zip(keep, raws, strict=True)
    ]
    total = terms[0] if len(terms) == 1 else g.node("Sum", terms)
    one = g.const(np.float64(1.0))
    clipped = g.node("Clip", [total, g.const(np.float64(0.0)), one])
    certain = [g.node("GreaterOrEqual", [raw, one]) for raw in raws]
    every = certain[0]
    for flag in certain[1:]:
        every = g.node("And", [every, flag])
    return g.node("Where", [every, one, clipped], "combined_risk")


def _detector(g, fitted, columns) -> str:
    """One detector (``WRITERS``): the mean over its siblings of each sibling's risk."""
    risks = [WRITERS[fitted.name](g, sibling, columns) for sibling in fitted.siblings]
    total = risks[0] if len(risks) == 1 else g.node("Sum", risks)
    return g.node("Div", [total, g.const(np.float64(len(risks)))], "detector")


def _box_sibling(g, sibling, columns) -> str:
    """``BoxRisk``: 1.0 outside the sibling's box, else 0.0."""
    from onnx import TensorProto

    return g.node("Cast", [_outside(g, sibling.space_, columns)], "box", to=TensorProto.DOUBLE)


def _isolation_sibling(g, sibling, columns) -> str:
    """``IsolationForestRisk`` (:mod:`.risk_isolation`)."""
    return isolation_sibling(g, sibling, columns, _outside(g, sibling.space_, columns))


WRITERS = {"box": _box_sibling, "isolation_forest": _isolation_sibling}
"""Detector name -> ``writer(graph, fitted sibling, columns)`` giving its risk, double ``(n,)``."""


def _outside(g, space, columns) -> str:
    """``(n,)`` bool: a numeric cell outside ``space``'s range or an unseen category."""
    numeric, categorical = list(columns.numeric), list(columns.categorical)
    parts = []
    num = [(numeric.index(n), j) for j, n in enumerate(space.names) if not space.categorical[j]]
    missing = [n for n in space.names if n not in numeric and n not in categorical]
    if missing:
        raise ValueError(f"the detectors read column(s) {missing} that the file has no input for")
    if num:
        at, js = (np.array(v, dtype=np.int64) for v in zip(*num, strict=True))
        x = g.node("Gather", [NUMERIC, g.const(at)], "risk_x", axis=1)
        low, high = g.const(space.low[js][None, :]), g.const(space.high[js][None, :])
        out = g.node("Or", [g.node("Less", [x, low]), g.node("Greater", [x, high])])
        parts.append(_any(g, out))
    for j, name in enumerate(space.names):
        if space.categorical[j]:
            parts.append(_unseen(g, categorical.index(name), space.categories[j]))
    flag = parts[0]
    for p in parts[1:]:
        flag = g.node("Or", [flag, p])
    return flag


def _any(g, flags: str) -> str:
    from onnx import TensorProto

    count = g.node("Cast", [flags], to=TensorProto.DOUBLE)
    total = g.node("ReduceSum", [count, g.const(np.array([1], np.int64))], keepdims=0)
    return g.node("Greater", [total, g.const(np.float64(0.0))])


def _unseen(g, at: int, categories) -> str:
    """``(n,)`` bool: the cell of categorical input ``at`` is present and not in ``categories``."""
    from onnx import TensorProto

    cell = g.node("Gather", [CATEGORICAL, g.const(np.array(at, np.int64))], "risk_cat", axis=1)
    keys = [str(c) for c in categories]
    known = g.node("LabelEncoder", [cell], "seen", domain="ai.onnx.ml", keys_strings=[*keys, ""],
                   values_floats=[1.0] * (len(keys) + 1), default_float=0.0)  # fmt: skip
    return g.node("Not", [g.node("Cast", [known], to=TensorProto.BOOL)], "unseen")
