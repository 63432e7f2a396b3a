"""Support vector machines on the standardised view: the classifier of App. 4.B (SVMLight's
kernels, its uncalibrated output the decision value scaled by its training range) and support
vector regression over the same kernels and C on a standardised target."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np
from sklearn.svm import SVC, SVR, LinearSVC, LinearSVR

from ._base import Family, Run, full_proba, min_max_scores, register
from ._regression import SingleRun, TargetScale
from ._traits import CostModel, FamilyTraits, StageWork
from ._work import FLOAT, linear_work, unwrap

SVR_KERNELS = ("linear", "rbf", "poly2")


@dataclass
class _MarginRun(Run):
    model: Any
    n_classes: int
    low: np.ndarray
    high: np.ndarray

    def predict(self, X: np.ndarray, stages=None) -> dict[str, np.ndarray]:
        return {"none": self._proba(_margins(self.model, X))[None]}

    def _proba(self, scores: np.ndarray) -> np.ndarray:
        p = min_max_scores(scores, self.low, self.high)
        return full_proba(p, self.model.classes_, self.n_classes)


def _margins(model, X: np.ndarray) -> np.ndarray:
    d = decision(model, X) if _dense_kernel(model, X) else model.decision_function(X)
    return d[:, None] if d.ndim == 1 else d


KERNEL_CELLS = 1 << 22
"""Kernel values (rows x support vectors) computed at a time: 32 MB of float64."""


def _dense_kernel(model, X) -> bool:
    """Whether ``decision`` can stand in for ``model.decision_function`` (an SVC's) or
    ``model.predict`` (an SVR's): a kernel model fitted on dense rows with a numeric gamma
    (ensel's always are), asked about dense rows."""
    return (
        isinstance(model, SVC | SVR)
        and model.kernel in ("rbf", "poly")
        and isinstance(X, np.ndarray)
        and isinstance(model.support_vectors_, np.ndarray)
        and isinstance(model.gamma, int | float)
    )


def decision(model: SVC | SVR, X: np.ndarray) -> np.ndarray:
    """``model.decision_function(X)`` (an SVR's ``predict(X)``) computed with matrix products:
    the kernel values of a block of rows against every support vector at once, then each
    one-vs-one pair's sum from per-class blocks. libsvm evaluates the kernel one (row, support
    vector) pair at a time; this gives the same values to rounding, faster on one core, SVC
    and SVR (docs/decisions.md, "Own kernels")."""
    X = np.asarray(X, dtype=float)
    sv, coef, b = model.support_vectors_, model.dual_coef_, model.intercept_
    edges = np.concatenate([[0], np.cumsum(model.n_support_)])
    n_classes = 2 if isinstance(model, SVR) else len(model.classes_)  # SVR: one sum, as binary
    pairs = [(i, j) for i in range(n_classes) for j in range(i + 1, n_classes)]
    out = np.empty((len(X), len(pairs)))
    sv_norms = np.einsum("ij,ij->i", sv, sv)  # once per call, not per block
    step = max(1, KERNEL_CELLS // max(len(sv), 1))
    for start in range(0, len(X), step):
        K = _kernel(model, X[start : start + step], sv, sv_norms)
        if n_classes == 2:  # sklearn's binary sign (and SVR's): the public coef and intercept
            out[start : start + step, 0] = K @ coef[0] + b[0]
            continue
        blocks = [K[:, a:z] @ coef[:, a:z].T for a, z in pairwise(edges)]
        for p, (i, j) in enumerate(pairs):
            out[start : start + step, p] = blocks[i][:, j - 1] + blocks[j][:, i] + b[p]
    if n_classes == 2:
        return out[:, 0]
    return _ovr(out, pairs, n_classes) if model.decision_function_shape == "ovr" else out


def _kernel(model: SVC | SVR, X: np.ndarray, sv: np.ndarray, sv_norms: np.ndarray) -> np.ndarray:
    """SVMLight's kernels as libsvm computes them: RBF ``exp(-gamma |x - s|^2)`` (``sv_norms``:
    each support vector's squared length), polynomial ``(gamma x.s + coef0)^degree``."""
    dot = X @ sv.T
    if model.kernel == "poly":
        return (model.gamma * dot + model.coef0) ** model.degree
    squared = np.einsum("ij,ij->i", X, X)[:, None] + sv_norms - 2.0 * dot
    return np.exp(-model.gamma * np.maximum(squared, 0.0))


def _ovr(ovo: np.ndarray, pairs, n_classes: int) -> np.ndarray:
    """scikit-learn's one-vs-rest view of one-vs-one decisions: each class's votes plus its
    summed confidence squashed into (-1/3, 1/3), so ties in votes break by confidence."""
    votes = np.zeros((len(ovo), n_classes))
    confidence = np.zeros((len(ovo), n_classes))
    for p, (i, j) in enumerate(pairs):
        d = ovo[:, p]
        votes[:, i] += d >= 0
        votes[:, j] += d < 0
        confidence[:, i] += d
        confidence[:, j] -= d
    return votes + confidence / (3.0 * (np.abs(confidence) + 1.0))


KERNELS = {
    "linear": {},
    "poly2": {"kernel": "poly", "degree": 2, "gamma": 1.0, "coef0": 1.0},
    "poly3": {"kernel": "poly", "degree": 3, "gamma": 1.0, "coef0": 1.0},
    "rbf": {"kernel": "rbf"},
}
"""SVMLight's kernels (App. 4.B): polynomial ``(a.b + 1)^d``; RBF ``exp(-width |a - b|^2)``."""


def fit_svm(X, y, *, n_classes, params, stages, random_state):
    """An SVM; its uncalibrated output is the decision value scaled by its training range.
    The linear kernel uses liblinear (the same model, far faster than a kernel solver)."""
    kernel = params["kernel"]
    if kernel not in KERNELS:
        raise ValueError(f"svm kernel={kernel!r} is not one of {sorted(KERNELS)}")
    if kernel == "linear":
        model = LinearSVC(C=params["C"], max_iter=params["max_iter"], random_state=random_state)
    else:
        extra = dict(KERNELS[kernel])
        if kernel == "rbf":
            extra["gamma"] = params["width"]
        model = SVC(C=params["C"], max_iter=params["max_iter"], cache_size=500, **extra)
    model.fit(X, y)
    train = _margins(model, X)
    return _MarginRun(model, n_classes, train.min(axis=0), train.max(axis=0))


def fit_svr(X, y, *, n_classes, params, stages, random_state):
    """Support vector regression on the standardised target; kernels and C as the classifier's
    grid (``linear`` uses liblinear's LinearSVR, the same model, far faster), ``epsilon`` in
    target standard deviations."""
    kernel = params["kernel"]
    scale = TargetScale.fit(y)
    if kernel == "linear":
        model = LinearSVR(
            C=params["C"],
            epsilon=params["epsilon"],
            loss="squared_epsilon_insensitive",
            dual=False,
            max_iter=params["max_iter"],
            random_state=random_state,
        )
    else:
        extra = {"kernel": "rbf", "gamma": params["width"]}
        if kernel == "poly2":
            extra = dict(KERNELS["poly2"])
        model = SVR(C=params["C"], epsilon=params["epsilon"], max_iter=params["max_iter"], **extra)
    model.fit(X, scale.forward(y))
    return _SvrRun(model, scale)


@dataclass
class _SvrRun(SingleRun):
    """A fitted SVR: a kernel one predicts through :func:`decision`, not libsvm."""

    def raw(self, X: np.ndarray) -> np.ndarray:
        return decision(self.model, X) if _dense_kernel(self.model, X) else super().raw(X)


def validate_svr(params: dict[str, Any], stages: tuple[int, ...] | None) -> None:
    """Reject an unknown kernel or a non-positive C, width or negative epsilon."""
    if params["kernel"] not in SVR_KERNELS:
        raise ValueError(f"svr kernel={params['kernel']!r} is not one of {SVR_KERNELS}")
    if not params["C"] > 0 or not params["width"] > 0 or params["epsilon"] < 0:
        raise ValueError(f"svr needs C > 0, width > 0 and epsilon >= 0, got {params!r}")


GRID = {"kernel": "rbf", "C": 1.0, "width": 0.1, "max_iter": 100_000}
"""The parameters the classifier and the regressor share (the regressor adds ``epsilon``)."""
TEST_PARAMS = {"kernel": "rbf", "C": 1.0, "width": 0.1}

SUPPORT_SHARE = 0.5
"""Share of the training rows that end up support vectors (a planning guess; the fitted cost
reads the true count)."""


def _is_kernel(params: dict[str, Any]) -> bool:
    """A kernel SVM (not linear): its fit grows with the square of the rows."""
    return params.get("kernel", "rbf") != "linear"


def _work(run, params, stages, width, outputs) -> StageWork:
    """Kernel SVM: a kernel evaluation per support vector (``width`` each); linear: a dot
    product per output."""
    model = unwrap(run).model
    support = getattr(model, "support_vectors_", None)
    if support is None:
        return linear_work(run, params, stages, width, outputs)
    n_sv, d = np.shape(support)
    return [(1.0, float(n_sv * max(d, 1)))] * len(stages)


def _relative_cost(params: dict[str, Any], stages: tuple[int, ...] | None) -> float:
    """A linear SVM costs least; a kernel one more with a larger C."""
    return 1.0 if params.get("kernel") == "linear" else 4.0 + float(params.get("C", 1.0))


def _deferred(params: dict[str, Any]) -> bool:
    return params.get("kernel") != "linear"


COST = CostModel(
    fit=lambda s: s.n**2 * s.d if _is_kernel(s.params) else 20 * s.n * s.d * s.k,
    memory=lambda s: (
        (min(500e6, FLOAT * s.n**2) if _is_kernel(s.params) else 0.0) + FLOAT * s.n * s.d
    ),
    predict=lambda s: (1.0, SUPPORT_SHARE * s.n * s.d if _is_kernel(s.params) else s.d * s.k),
    predict_work=_work,
    memory_factor=4.0,
)


def _traits(rank: int) -> FamilyTraits:
    return FamilyTraits(
        rank=rank,
        relative_cost=_relative_cost,
        deferred=_deferred,
        quadratic=_is_kernel,
        cost=COST,
    )


register(Family(name="svm", traits=_traits(16), fit=fit_svm, params=GRID, test_params=TEST_PARAMS))
register(
    Family(
        name="svr",
        traits=_traits(17),
        fit=fit_svr,
        params={**GRID, "epsilon": 0.1},
        test_params=TEST_PARAMS,
        validate=validate_svr,
        task="regression",
    )
)
