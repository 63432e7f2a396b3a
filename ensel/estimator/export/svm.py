"""The ``svm`` family (``svm._MarginRun``) as graph nodes, in double: the decision values
(liblinear's ``X w + b``, or the kernel sums computed as ``svm.decision`` computes them:
RBF ``exp(-gamma |x - s|^2)`` from squared lengths and dot products, polynomial
``(gamma x.s + coef0)^degree``; one-vs-one pairs folded into scikit-learn's one-vs-rest view
with its votes and squashed confidences), then the scaling by the training range
(``families.min_max_scores``) and the classes widened to every class."""

from __future__ import annotations

from itertools import pairwise

import numpy as np

from .members import _widen, register

__all__: list[str] = []


@register("svm")
def _svm(g, run, matrix: str, stage: int, n_outputs: int) -> str:
    model = run.model
    if hasattr(model, "support_vectors_"):
        scores = _kernel_decision(g, model, matrix)
    else:  # LinearSVC: one column for two classes, one per class otherwise
        scores = g.node("MatMul", [matrix, g.const(model.coef_.T.astype(np.float64))])
        scores = g.node("Add", [scores, g.const(model.intercept_.astype(np.float64))], "margins")
    proba = _min_max(g, scores, np.asarray(run.low, float), np.asarray(run.high, float))
    return _widen(g, proba, np.asarray(model.classes_, dtype=int), run.n_classes)


def _kernel_decision(g, model, matrix: str) -> str:
    sv = np.asarray(model.support_vectors_, dtype=np.float64)
    dot = g.node("MatMul", [matrix, g.const(sv.T.copy())])
    if model.kernel == "poly":
        base = g.node("Add", [g.node("Mul", [dot, g.const(np.float64(model.gamma))]),
                              g.const(np.float64(model.coef0))])  # fmt: skip
        K = g.node("Pow", [base, g.const(np.float64(model.degree))], "kernel")
    elif model.kernel == "rbf":
        own = g.node("ReduceSum", [g.node("Mul", [matrix, matrix]),
                                   g.const(np.array([1], np.int64))], keepdims=1)  # fmt: skip
        norms = np.einsum("ij,ij->i", sv, sv)
        squared = g.node("Sub", [g.node("Add", [own, g.const(norms[None, :])]),
                                 g.node("Mul", [dot, g.const(np.float64(2.0))])])  # fmt: skip
        squared = g.node("Max", [squared, g.const(np.float64(0.0))])
        K = g.node("Exp", [g.node("Mul", [squared, g.const(np.float64(-model.gamma))])], "kernel")
    else:
        raise ValueError(f"an svm with kernel {model.kernel!r} has no converter")
    coef, b = np.asarray(model.dual_coef_, float), np.asarray(model.intercept_, float)
    n_classes = len(model.classes_)
    if n_classes == 2:
        return g.node("Add", [g.node("MatMul", [K, g.const(coef[:1].T.copy())]), g.const(b[:1])])
    edges = np.concatenate([[0], np.cumsum(model.n_support_)])
    pairs = [(i, j) for i in range(n_classes) for j in range(i + 1, n_classes)]
    M = np.zeros((sv.shape[0], len(pairs)))  # pair p sums class i's block by coef[j-1] ...
    for p, (i, j) in enumerate(pairs):
        (a, z), (c, e) = list(pairwise(edges))[i], list(pairwise(edges))[j]
        M[a:z, p], M[c:e, p] = coef[j - 1, a:z], coef[i, c:e]  # ... and j's by coef[i]
    ovo = g.node("Add", [g.node("MatMul", [K, g.const(M)]), g.const(b)], "ovo")
    if model.decision_function_shape != "ovr":
        return ovo
    return _ovr(g, ovo, pairs, n_classes)


def _ovr(g, ovo: str, pairs, n_classes: int) -> str:
    """``svm._ovr``: votes plus confidences squashed into (-1/3, 1/3)."""
    from onnx import TensorProto

    first, second = np.zeros((len(pairs), n_classes)), np.zeros((len(pairs), n_classes))
    for p, (i, j) in enumerate(pairs):
        first[p, i], second[p, j] = 1.0, 1.0
    zero = g.const(np.float64(0.0))
    won = g.node("Cast", [g.node("GreaterOrEqual", [ovo, zero])], to=TensorProto.DOUBLE)
    lost = g.node("Cast", [g.node("Less", [ovo, zero])], to=TensorProto.DOUBLE)
    votes = g.node("Add", [g.node("MatMul", [won, g.const(first)]),
                           g.node("MatMul", [lost, g.const(second)])])  # fmt: skip
    confidence = g.node("MatMul", [ovo, g.const(first - second)])
    squash = g.node("Mul", [g.node("Add", [g.node("Abs", [confidence]), g.const(np.float64(1.0))]),
                            g.const(np.float64(3.0))])  # fmt: skip
    return g.node("Add", [votes, g.node("Div", [confidence, squash])], "ovr")


def _min_max(g, scores: str, low: np.ndarray, high: np.ndarray) -> str:
    """``families.min_max_scores``: scaled by the training range, clipped, one column as the
    positive class, several renormalised (uniform where all are 0)."""
    span = np.where(high > low, high - low, 1.0)
    scaled = g.node("Div", [g.node("Sub", [scores, g.const(low[None, :])]), g.const(span[None, :])])
    one = g.const(np.float64(1.0))
    p = g.node("Clip", [scaled, g.const(np.float64(0.0)), one])
    if low.size == 1:
        return g.pair(p, "scores")
    total = g.node("ReduceSum", [p, g.const(np.array([1], np.int64))], keepdims=1)
    positive = g.node("Greater", [total, g.const(np.float64(0.0))])
    shares = g.node("Div", [p, g.node("Where", [positive, total, one])])
    return g.node("Where", [positive, shares, g.const(np.float64(1.0 / low.size))], "scores")
