"""Naive Bayes (App. 4.B), on the native view, with Weka's three models of a feature given the
class: a normal distribution, a kernel density estimate (John & Langley 1995), or supervised
discretisation (Fayyad & Irani 1993) followed by a categorical model.

Every column is treated as numeric (categorical codes included: the fit is not told which are
categorical). Classes absent from the training fold get probability 0; class priors are
Laplace-smoothed over the classes present. Posteriors are normalised in log space.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._base import Family, Run, entropy_bits, full_proba, register
from ._traits import CostModel, FamilyTraits, StageWork
from ._work import FLOAT, unwrap

__all__ = ["KINDS", "fit_naive_bayes", "mdl_cut_points", "validate_naive_bayes"]

KINDS = ("normal", "kernel", "discretized")
_BUDGET = 1 << 22  # float64 elements of the largest per-batch kernel matrix (32 MiB)
_DEFAULT_PRECISION = 0.01  # Weka's precision of a feature with fewer than two distinct values
_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)
_SKIP_EXPONENT = 40.0  # kernel terms below exp(-40) of the nearest one's are skipped
_KERNEL_BATCH = 256  # sorted queries per batch: small batches keep each band of values narrow


def validate_naive_bayes(params: dict[str, Any], stages: tuple[int, ...] | None) -> None:
    """Reject an unknown ``kind``, or stages (naive Bayes has none)."""
    if params.get("kind") not in KINDS:
        raise ValueError(f"naive_bayes kind={params.get('kind')!r} is not one of {KINDS}")
    if stages is not None:
        raise ValueError(f"naive_bayes has no stages, got {stages}")


def _mdl_split(x: np.ndarray, onehot: np.ndarray) -> int | None:
    """The best binary split of a sorted segment (the size of its left part) if Fayyad & Irani's
    MDL criterion accepts it, else None. All candidate cuts are scored at once from cumulative
    class counts; the one with the least class-information entropy is tested."""
    n = len(x)
    sizes = np.flatnonzero(x[1:] > x[:-1]) + 1  # left-part sizes at each change of value
    if sizes.size == 0:
        return None
    cum = np.cumsum(onehot, axis=0)
    total = cum[-1]
    k = np.count_nonzero(total)
    if k < 2:
        return None
    left = cum[sizes - 1]
    right = total - left
    h_left, h_right = entropy_bits(left), entropy_bits(right)
    frac = sizes / n
    info = frac * h_left + (1.0 - frac) * h_right
    b = int(np.argmin(info))
    h = float(entropy_bits(total))
    gain = h - info[b]
    k1, k2 = np.count_nonzero(left[b]), np.count_nonzero(right[b])
    log2_3k_minus_2 = k * np.log2(3.0) + np.log2(1.0 - 2.0 / 3.0**k)  # log2(3^k - 2), no overflow
    delta = log2_3k_minus_2 - (k * h - k1 * h_left[b] - k2 * h_right[b])
    if gain > (np.log2(n - 1) + delta) / n:
        return int(sizes[b])
    return None


def mdl_cut_points(x: np.ndarray, y: np.ndarray, n_classes: int) -> np.ndarray:
    """Fayyad & Irani's (1993) supervised discretisation of one feature: split recursively at
    the cut of least class entropy while the MDL criterion accepts it (Weka's default for
    ``NaiveBayes -D``). Returns the sorted cut points (midpoints between adjacent values); a
    value equal to a cut goes to the bin above. Empty for a constant or uninformative feature."""
    order = np.argsort(x, kind="stable")
    xs = np.asarray(x, dtype=float)[order]
    onehot = np.eye(n_classes)[np.asarray(y, dtype=int)[order]]
    cuts = []
    pending = [(0, len(xs))]
    while pending:
        lo, hi = pending.pop()
        size = _mdl_split(xs[lo:hi], onehot[lo:hi])
        if size is None:
            continue
        i = lo + size
        cuts.append(xs[i - 1] + (xs[i] - xs[i - 1]) / 2.0)
        pending += [(lo, i), (i, hi)]
    return np.sort(np.asarray(cuts, dtype=float))


def _precision(X: np.ndarray) -> np.ndarray:
    """Weka's per-feature precision: the mean gap between sorted distinct values (range over
    the number of gaps), 0.01 for a constant feature. A sixth of it floors the standard
    deviation of the normal and kernel estimators ("at most 3 sds within one interval")."""
    out = np.full(X.shape[1], _DEFAULT_PRECISION)
    for j in range(X.shape[1]):
        distinct = np.unique(X[:, j])
        if len(distinct) > 1:
            out[j] = (distinct[-1] - distinct[0]) / (len(distinct) - 1)
    return out


@dataclass
class _NaiveBayesRun(Run):
    """Class priors and per-(class, feature) models; ``kind`` says which fields are set."""

    kind: str
    n_classes: int
    classes: np.ndarray  # the classes present in the training fold
    log_prior: np.ndarray  # (n_present,)
    mean: np.ndarray | None = None  # normal: (n_present, n_features)
    sd: np.ndarray | None = None  # normal and kernel: (n_present, n_features)
    # kernel: [feature][class] -> (sorted distinct training values, their shares in the class)
    values: list[list[tuple[np.ndarray, np.ndarray]]] | None = None
    cuts: list[np.ndarray] | None = None  # discretized: per feature
    log_tables: list[np.ndarray] | None = None  # discretized: per feature (n_present, n_bins)

    def predict(self, X: np.ndarray, stages=None) -> dict[str, np.ndarray]:
        X = np.asarray(X, dtype=float)
        joint = self.log_prior + self._log_likelihood(X)
        joint -= joint.max(axis=1, keepdims=True)
        p = np.exp(joint)
        p /= p.sum(axis=1, keepdims=True)
        return {"none": full_proba(p, self.classes, self.n_classes)[None]}

    def _log_likelihood(self, X: np.ndarray) -> np.ndarray:
        out = np.zeros((len(X), len(self.classes)))
        if self.kind == "normal":
            for c in range(len(self.classes)):
                z = (X - self.mean[c]) / self.sd[c]
                out[:, c] = -(0.5 * z**2 + np.log(self.sd[c]) + _LOG_SQRT_2PI).sum(axis=1)
        elif self.kind == "kernel":
            for j, per_class in enumerate(self.values):
                queries, inverse = np.unique(X[:, j], return_inverse=True)
                for c, (v, w) in enumerate(per_class):
                    out[:, c] += _kernel_log_density(queries, v, w, self.sd[c, j])[inverse]
        else:
            for j, (cuts, table) in enumerate(zip(self.cuts, self.log_tables, strict=True)):
                out += table[:, np.searchsorted(cuts, X[:, j], side="right")].T
        return out


def _kernel_log_density(queries: np.ndarray, v: np.ndarray, w: np.ndarray, sd: float) -> np.ndarray:
    """Log of the Gaussian kernel density with one kernel of width ``sd`` per training value
    (sorted distinct values ``v`` weighted by their shares ``w``) at sorted ``queries``.

    A logsumexp shifted by each query's nearest value: that term is exp(0) and every other
    exponent is at most 0, so the sum lies in [min share, 1], never overflowing or underflowing.
    Terms with a shifted exponent below -40 (each under 4e-18 of the nearest one's kernel) are
    skipped: batches of consecutive queries evaluate only the band of values their windows span.
    """
    pos = np.searchsorted(v, queries)
    below = np.abs(queries - v[np.maximum(pos - 1, 0)])
    above = np.abs(queries - v[np.minimum(pos, len(v) - 1)])
    near2 = np.minimum(below, above) ** 2
    reach = np.sqrt(near2 + 2.0 * _SKIP_EXPONENT * sd**2)
    lo = np.searchsorted(v, queries - reach, side="left")
    hi = np.searchsorted(v, queries + reach, side="right")
    scale = -0.5 / sd**2
    out = np.empty(len(queries))
    rows = int(np.clip(_BUDGET // len(v), 1, _KERNEL_BATCH))
    for start in range(0, len(queries), rows):
        block = slice(start, start + rows)
        band = slice(lo[block].min(), hi[block].max())  # the union of the block's windows
        z = np.subtract.outer(queries[block], v[band])
        np.multiply(z, z, out=z)
        z -= near2[block, None]
        z *= scale
        out[block] = np.log(np.exp(z, out=z) @ w[band])
    return out + scale * near2 - np.log(sd) - _LOG_SQRT_2PI


def fit_naive_bayes(X, y, *, n_classes, params, stages, random_state):
    """Naive Bayes of the given ``kind``:

    - ``normal``: a Gaussian per class and feature (mean and population sd, as scikit-learn's
      GaussianNB), the sd floored at Weka's precision / 6;
    - ``kernel``: John & Langley's estimator, one Gaussian kernel per training value, with
      Weka's KernelEstimator bandwidth per class and feature,
      ``max(range_c / sqrt(n_c), precision / 6)``;
    - ``discretized``: Fayyad & Irani MDL bins per feature, then per-class bin frequencies with
      Laplace smoothing ``(count + 1) / (n_c + n_bins)``.

    Priors are ``(count + 1) / (n + n_present)`` over the classes in the fold.
    """
    validate_naive_bayes(params, stages)
    kind = params["kind"]
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=int)
    classes, y_idx, counts = np.unique(y, return_inverse=True, return_counts=True)
    n_present = len(classes)
    log_prior = np.log((counts + 1.0) / (len(y) + n_present))
    run = _NaiveBayesRun(kind, n_classes, classes, log_prior)
    if kind == "discretized":
        run.cuts = [mdl_cut_points(X[:, j], y_idx, n_present) for j in range(X.shape[1])]
        run.log_tables = []
        for j, cuts in enumerate(run.cuts):
            bins = np.searchsorted(cuts, X[:, j], side="right")
            table = np.zeros((n_present, len(cuts) + 1))
            np.add.at(table, (y_idx, bins), 1.0)
            run.log_tables.append(np.log((table + 1.0) / (counts[:, None] + table.shape[1])))
        return run
    floor = _precision(X) / 6.0
    members = [X[y_idx == c] for c in range(n_present)]
    if kind == "normal":
        run.mean = np.array([m.mean(axis=0) for m in members])
        run.sd = np.maximum(np.array([m.std(axis=0) for m in members]), floor)
        return run
    spread = np.array([(m.max(axis=0) - m.min(axis=0)) / np.sqrt(len(m)) for m in members])
    run.sd = np.maximum(spread, floor)
    run.values = []
    for j in range(X.shape[1]):
        per_class = []
        for m in members:
            v, n_v = np.unique(m[:, j], return_counts=True)
            per_class.append((v, n_v / len(m)))
        run.values.append(per_class)
    return run


MDL_SORTS = 14.0
"""Work of Fayyad & Irani's MDL discretisation per value, in sorts: each accepted cut rescans
its segment's cumulative class counts and the entropies of every candidate cut (a discretized
fit measured against a normal one, whose work is a sort per column)."""


def _is_kernel(params: dict[str, Any]) -> bool:
    """A kernel estimate: its work grows with held-out rows times training rows."""
    return params.get("kind") == "kernel"


def _fit_work(s) -> float:
    """Every kind sorts each column once (Weka's precision, or the MDL cuts' sort); the MDL
    recursion costs ``MDL_SORTS`` sorts; a kernel estimate sums one kernel per distinct training
    value within ~9 sd of each query: on continuous columns nearly every value, so its work
    grows as ``n_held x n``."""
    sorts = MDL_SORTS if s.params.get("kind") == "discretized" else 1.0
    return s.n * s.d * s.log_n * sorts + (s.n_held * s.d * s.n if _is_kernel(s.params) else 0.0)


def _work(run, params, stages, width, outputs) -> StageWork:
    """Naive Bayes: a term per feature and class; a kernel estimate sums over its kernel points
    (the distinct training values of the feature in the class)."""
    run = unwrap(run)
    if not isinstance(run, _NaiveBayesRun):  # a fold with one class: a constant run
        return [(1.0, float(width * outputs))] * len(stages)
    if run.values:
        units = float(sum(np.size(v) for per_class in run.values for v, _ in per_class))
    else:
        units = float(width * (len(run.classes) or outputs))
    return [(1.0, units)] * len(stages)


def _relative_cost(params: dict[str, Any], stages: tuple[int, ...] | None) -> float:
    """Normal, discretized, kernel: in that order of work."""
    return {"normal": 1.0, "discretized": 2.0, "kernel": 4.0}.get(params.get("kind"), 2.0)


register(
    Family(
        name="naive_bayes",
        traits=FamilyTraits(
            rank=13,
            quick=1,
            relative_cost=_relative_cost,
            quadratic=_is_kernel,
            cost=CostModel(
                fit=_fit_work,
                memory=lambda s: FLOAT * s.n * s.d * (2 if _is_kernel(s.params) else 1),
                predict=lambda s: (1.0, s.n * s.d if _is_kernel(s.params) else float(s.d * s.k)),
                predict_work=_work,
                memory_factor=3.0,
            ),
        ),
        fit=fit_naive_bayes,
        params={"kind": "normal"},
        view="native",
        test_params={"kind": "kernel"},
        validate=validate_naive_bayes,
    )
)
