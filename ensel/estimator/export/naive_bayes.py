"""The ``naive_bayes`` family (``bayes._NaiveBayesRun``) as graph nodes, in double, for its
``normal`` and ``discretized`` kinds: the class log priors plus each feature's log likelihood
(a Gaussian per class and feature; or the log table of the feature's bin, the bin being the
count of cut points at or below the value, as ``searchsorted(side="right")``), normalised by a
softmax as ``predict`` normalises in log space. The ``kernel`` kind keeps every training value
and is refused (:data:`REFUSED_KINDS`)."""

from __future__ import annotations

import numpy as np

from .members import _widen, register

__all__ = ["REFUSED_KINDS", "why_not_params"]

REFUSED_KINDS = frozenset({"kernel"})
_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)


def why_not_params(params: dict | None, categorical: bool = False) -> str | None:
    """Why a naive_bayes run with ``params`` has no graph, or None (categorical columns are
    written as any other)."""
    kind = params.get("kind") if isinstance(params, dict) else None
    if kind in REFUSED_KINDS:
        return f"naive_bayes kind {kind!r} has no ONNX converter"
    return None


@register("naive_bayes", refuses=why_not_params)
def _naive_bayes(g, run, matrix: str, stage: int, n_outputs: int) -> str:
    if run.kind in REFUSED_KINDS:
        raise ValueError(f"naive_bayes kind {run.kind!r} has no converter")
    if run.kind == "normal":
        likelihood = _normal(g, run, matrix)
    else:
        likelihood = _discretized(g, run, matrix)
    joint = g.node("Add", [likelihood, g.const(np.asarray(run.log_prior, np.float64)[None, :])])
    proba = g.node("Softmax", [joint], "naive_bayes", axis=1)
    return _widen(g, proba, np.asarray(run.classes, dtype=int), run.n_classes)


def _normal(g, run, matrix: str) -> str:
    """``(n, C)``: the sum over features of each class's Gaussian log density."""
    mean, sd = np.asarray(run.mean, np.float64), np.asarray(run.sd, np.float64)
    x = g.node("Unsqueeze", [matrix, g.const(np.array([1], np.int64))])  # (n, 1, F)
    z = g.node("Div", [g.node("Sub", [x, g.const(mean[None])]), g.const(sd[None])])
    half = g.node("Mul", [g.node("Mul", [z, z]), g.const(np.float64(0.5))])
    terms = g.node("Add", [half, g.const((np.log(sd) + _LOG_SQRT_2PI)[None])])
    total = g.node("ReduceSum", [terms, g.const(np.array([2], np.int64))], keepdims=0)
    return g.node("Neg", [total], "normal")


def _discretized(g, run, matrix: str) -> str:
    """``(n, C)``: the sum over features of each class's log share of the feature's bin."""
    from onnx import TensorProto

    constant = np.zeros(len(run.classes))
    parts = []
    for j, (cuts, table) in enumerate(zip(run.cuts, run.log_tables, strict=True)):
        table = np.asarray(table, np.float64)
        if len(cuts) == 0:
            constant += table[:, 0]
            continue
        x = g.node("Gather", [matrix, g.const(np.array([j], np.int64))], axis=1)  # (n, 1)
        at_or_below = g.node("GreaterOrEqual", [x, g.const(np.asarray(cuts, np.float64)[None])])
        count = g.node("Cast", [at_or_below], to=TensorProto.INT64)
        bins = g.node("ReduceSum", [count, g.const(np.array([1], np.int64))], keepdims=0)
        parts.append(g.node("Gather", [g.const(table.T.copy()), bins], "bin", axis=0))
    total = g.const(constant[None, :])
    for part in parts:
        total = g.node("Add", [total, part])
    return total
