"""K-nearest neighbours (App. 4.B), on the standardised view: the classifier and, for numeric
targets, the regressor (means of the k nearest targets, uniform or inverse-distance weighted).

"26 values of K ranging from K = 1 to K = |trainset|", with plain Euclidean distance or Euclidean
distance with each feature weighted by its gain ratio, voting uniformly or by inverse distance;
and locally weighted averaging, a Gaussian kernel over every training point with widths from 2^0
to 2^10 times the minimum distance between two training points. One run answers every stage
(every k, or every width) from a single distance computation per query batch.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._base import Family, Run, check_stages, entropy_bits, register, stratified_rows
from ._nearest import nearest
from ._regression import column
from ._traits import CostModel, FamilyTraits, StageWork
from ._work import FLOAT, unwrap

__all__ = [
    "KNN_ROWS",
    "METRICS",
    "PAPER_LWA_WIDTHS",
    "WEIGHTINGS",
    "fit_knn",
    "fit_knn_regression",
    "gain_ratio_weights",
    "knn_rows",
    "paper_k_values",
    "validate_knn",
    "validate_knn_regression",
]

METRICS = ("euclidean", "gain_ratio")
WEIGHTINGS = ("uniform", "distance", "lwa")
REGRESSION_WEIGHTINGS = ("uniform", "distance")
PAPER_LWA_WIDTHS = tuple(2**i for i in range(11))
"""The paper's kernel widths for locally weighted averaging, in units of the minimum distance
between two training points (App. 4.B): the stages of a ``weighting="lwa"`` spec."""

KNN_ROWS = 10_000
"""``max_rows="auto"``: a k-NN run keeps at most this many training rows of its fold (a
stratified sample, seeded by the run), since prediction needs every row it keeps: without a
bound the fitted run, the saved model and the time per prediction grow with the data."""


def knn_rows(max_rows, n_train: int) -> int:
    """How many of ``n_train`` fold rows a k-NN run keeps: ``max_rows`` (an integer >= 1, None
    for all, ``"auto"`` for ``KNN_ROWS``), at most ``n_train``."""
    if max_rows is None:
        return n_train
    if max_rows == "auto":
        return min(n_train, KNN_ROWS)
    if isinstance(max_rows, bool) or not isinstance(max_rows, int | np.integer) or max_rows < 1:
        raise ValueError(f"knn max_rows={max_rows!r}: use 'auto', None or an integer >= 1")
    return min(n_train, int(max_rows))


_BUDGET = 1 << 22  # elements of each (query rows x training points) array (32 MiB)
_MAX_BATCH = 512  # query rows per batch
_MIN_DISTANCE = 1e-6  # floor of the distance in inverse-distance weights
_MAX_SQUARINGS = 20  # lwa: squarings of one exponential (each doubles its relative error)


def paper_k_values(n_train: int) -> tuple[int, ...]:
    """The paper's 26 values of K from 1 to ``n_train`` (App. 4.B): log-spaced, rounded, and
    pushed up to stay distinct where rounding would merge small ones (1, 2, 3, ... until the
    geometric sequence takes over). All of 1..n_train when ``n_train < 26``."""
    if n_train < 1:
        raise ValueError(f"n_train must be at least 1, got {n_train}")
    ks = np.rint(np.geomspace(1, n_train, 26)).astype(int)
    for i in range(1, len(ks)):
        ks[i] = max(ks[i], ks[i - 1] + 1)
    return tuple(int(k) for k in np.unique(np.minimum(ks, n_train)))


def validate_knn(params: dict[str, Any], stages: tuple[int, ...] | None) -> None:
    """Reject a knn spec that cannot run: unknown metric or weighting, or stages missing or
    below 1 (stages are the values of k, or the lwa width multipliers)."""
    if params.get("metric") not in METRICS:
        raise ValueError(f"knn metric={params.get('metric')!r} is not one of {METRICS}")
    if params.get("weighting") not in WEIGHTINGS:
        raise ValueError(f"knn weighting={params.get('weighting')!r} is not one of {WEIGHTINGS}")
    knn_rows(params.get("max_rows", "auto"), 1)
    what = "width multipliers" if params["weighting"] == "lwa" else "values of k"
    if stages is None or len(stages) == 0:
        raise ValueError(f"knn needs stages: the {what} to predict with")
    bad = [s for s in stages if isinstance(s, bool) or int(s) != s or s < 1]
    if bad:
        raise ValueError(f"knn stages (the {what}) must be integers >= 1, got {bad}")


def gain_ratio_weights(X: np.ndarray, y: np.ndarray, n_classes: int) -> np.ndarray:
    """Each feature's C4.5 gain ratio with respect to ``y``: the information gain of its best
    binary split (a threshold between two distinct values) divided by that split's split
    information. 0 for a constant feature. The weights of the "gain ratio" distance (App. 4.B)."""
    y = np.asarray(y, dtype=int)
    onehot = np.eye(n_classes)[y]
    total = onehot.sum(axis=0)
    h_all = entropy_bits(total)
    n = len(y)
    weights = np.zeros(X.shape[1])
    for j in range(X.shape[1]):
        order = np.argsort(X[:, j], kind="stable")
        x = X[order, j]
        cut = np.flatnonzero(x[1:] > x[:-1])  # split after sorted position cut
        if cut.size == 0:
            continue
        left = np.cumsum(onehot[order], axis=0)[cut]
        frac = (cut + 1.0) / n
        gain = h_all - frac * entropy_bits(left) - (1.0 - frac) * entropy_bits(total - left)
        best = int(np.argmax(gain))
        split_info = entropy_bits(np.array([frac[best], 1.0 - frac[best]]))
        weights[j] = max(float(gain[best]), 0.0) / split_info
    return weights


def _sq_distances(A: np.ndarray, B: np.ndarray, sq_b: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances ``(len(A), len(B))``, clipped at 0 against rounding."""
    sq = A @ B.T
    sq *= -2.0
    sq += np.einsum("ij,ij->i", A, A)[:, None]
    sq += sq_b[None, :]
    return np.maximum(sq, 0.0, out=sq)


def _inverse(sq: np.ndarray) -> np.ndarray:
    """Inverse-distance weights ``1 / max(d, 1e-6)`` from squared distances."""
    return 1.0 / np.maximum(np.sqrt(sq), _MIN_DISTANCE)


def _queries(X: np.ndarray, train: np.ndarray, ks: np.ndarray):
    """``(first row, neighbour indices, squared distances)`` per batch of query rows (a batch
    holds at most ``_BUDGET`` neighbours): ``_nearest.nearest`` for every k in ``ks``."""
    rows = int(max(1, _BUDGET // int(np.max(ks))))
    for start in range(0, len(X), rows):
        index, sq = nearest(X[start : start + rows], train, ks)
        yield start, index, sq


def _min_distance(X: np.ndarray) -> float:
    """The smallest non-zero distance between two training points (exact duplicates ignored);
    1.0 when all points coincide, where any width gives the class prior."""
    U = np.unique(X, axis=0)
    if len(U) < 2:
        return 1.0
    sq_u = np.einsum("ij,ij->i", U, U)
    rows = int(np.clip(_BUDGET // len(U), 1, _MAX_BATCH))
    best, pair = np.inf, (0, 1)
    for start in range(0, len(U), rows):
        sq = _sq_distances(U[start : start + rows], U, sq_u)
        own = np.arange(sq.shape[0])
        sq[own, start + own] = np.inf
        i, j = np.unravel_index(int(np.argmin(sq)), sq.shape)
        if sq[i, j] < best:
            best, pair = sq[i, j], (start + int(i), int(j))
    d = float(np.linalg.norm(U[pair[0]] - U[pair[1]]))  # exact, not the expanded form
    return d if d > 0 else 1.0


@dataclass
class _KnnRun(Run):
    """The training points (already scaled by ``sqrt(gain ratio)`` for that metric) and what
    each stage means: k for uniform and distance voting, the width multiplier for lwa."""

    X: np.ndarray
    y: np.ndarray
    n_classes: int
    weighting: str
    stages: tuple[int, ...]
    scale: np.ndarray | None  # per-feature factor of the gain-ratio metric
    unit: float  # lwa width unit: the minimum distance between two training points

    cumulative = True  # one neighbour query serves every k up to the largest

    def predict(self, X: np.ndarray, stages=None) -> dict[str, np.ndarray]:
        """Members at the stages of index ``stages`` (all by default), from one query."""
        if stages is not None:
            subset = tuple(self.stages[i] for i in stages)
            return dataclasses.replace(self, stages=subset).predict(X)
        X = np.asarray(X, dtype=float)
        if self.scale is not None:
            X = X * self.scale
        onehot = np.eye(self.n_classes)[self.y]
        if self.weighting != "lwa":
            return {"none": self._vote(X, onehot)}
        out = np.empty((len(self.stages), len(X), self.n_classes))
        sq_train = np.einsum("ij,ij->i", self.X, self.X)
        rows = int(np.clip(_BUDGET // len(self.y), 1, _MAX_BATCH))
        for start in range(0, len(X), rows):
            sq = _sq_distances(X[start : start + rows], self.X, sq_train)
            out[:, start : start + rows] = self._lwa(sq, onehot)
        return {"none": out}

    def _vote(self, X: np.ndarray, onehot: np.ndarray) -> np.ndarray:
        """Vote fractions of the k nearest for every k at once (ties by training index): one
        nearest-neighbour query for the largest k (``_nearest.nearest``, which leaves every
        smaller k's neighbours first), then cumulative sums of (weighted) class indicators; a k
        that takes the whole training set needs no query. Inverse-distance weights are
        ``1 / max(d, 1e-6)``: a query on top of training points gives them (nearly) all the
        weight, shared equally among coincident ones, as scikit-learn does for zero distances."""
        n_train = len(self.y)
        ks = np.minimum(np.asarray(self.stages), n_train)
        distance = self.weighting == "distance"
        out = np.zeros((len(ks), len(X), self.n_classes))
        every = ks == n_train
        if every.any():
            out[every] = onehot.sum(axis=0) if not distance else self._all_inverse(X, onehot)
        partial = ks[~every]
        if partial.size:
            where = np.flatnonzero(~every)
            for start, index, sq in _queries(X, self.X, partial):
                labels = self.y[index]
                weights = _inverse(sq) if distance else None
                for c in np.unique(self.y):  # one cumulative sum per class present
                    hits = labels == c
                    hits = hits if weights is None else np.where(hits, weights, 0)
                    totals = np.cumsum(hits, axis=1)
                    out[where, start : start + len(index), c] = totals[:, partial - 1].T
        return out / out.sum(axis=2, keepdims=True)

    def _all_inverse(self, X: np.ndarray, onehot: np.ndarray) -> np.ndarray:
        """Class totals of inverse-distance weights over every training point (k = all)."""
        sq_train = np.einsum("ij,ij->i", self.X, self.X)
        rows = int(np.clip(_BUDGET // len(self.y), 1, _MAX_BATCH))
        totals = np.empty((len(X), self.n_classes))
        for start in range(0, len(X), rows):
            sq = _sq_distances(X[start : start + rows], self.X, sq_train)
            totals[start : start + rows] = _inverse(sq) @ onehot
        return totals

    def _lwa(self, sq: np.ndarray, onehot: np.ndarray) -> np.ndarray:
        """Locally weighted averaging: class shares of the Gaussian kernel weights
        ``exp(-d^2 / (2 w^2))`` over all training points, measured from the nearest one (the
        nearest weighs 1, so narrow widths tend to 1-NN instead of underflowing to 0/0).
        Widest first: a width 2^j times narrower is the wider kernel squared 2j times, which
        spares the exponentials of the paper's doubling widths (relative error < 1e-9)."""
        sq = sq - sq.min(axis=1, keepdims=True)
        kernel = np.empty_like(sq)
        out = np.empty((len(self.stages), sq.shape[0], self.n_classes))
        previous, squarings = 0, 0
        for s in np.argsort(self.stages, kind="stable")[::-1]:
            multiplier = self.stages[s]
            ratio = previous // multiplier if previous % multiplier == 0 else 0
            steps = 2 * (ratio.bit_length() - 1)
            if ratio > 1 and ratio & (ratio - 1) == 0 and squarings + steps <= _MAX_SQUARINGS:
                for _ in range(steps):
                    np.multiply(kernel, kernel, out=kernel)
                squarings += steps
            elif ratio != 1:
                w2 = max((multiplier * self.unit) ** 2, np.finfo(float).tiny)
                np.exp(np.multiply(sq, -0.5 / w2, out=kernel), out=kernel)
                squarings = 0
            previous = multiplier
            totals = kernel @ onehot
            out[s] = totals / totals.sum(axis=1, keepdims=True)
        return out


def fit_knn(X, y, *, n_classes, params, stages, random_state):
    """Store the training fold (at most ``max_rows`` of it, see ``knn_rows``; scaled for the
    gain-ratio metric) for distance queries. With
    ``metric="gain_ratio"`` the distance is Euclidean on features times ``sqrt(gain ratio)``,
    the ratios computed on this fold (plain Euclidean if every ratio is 0, e.g. one class)."""
    validate_knn(params, stages)
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=int)
    keep = knn_rows(params.get("max_rows", "auto"), len(y))
    rows = stratified_rows(y, keep, random_state) if keep < len(y) else None
    scale = None
    if params["metric"] == "gain_ratio":  # the ratios still come from the whole fold
        weights = gain_ratio_weights(X, y, n_classes)
        scale = np.sqrt(weights) if weights.any() else np.ones(X.shape[1])
        X = X * scale
    if rows is not None:
        X, y = X[rows], y[rows]
    unit = _min_distance(X) if params["weighting"] == "lwa" else 1.0
    stages = tuple(int(s) for s in stages)
    return _KnnRun(X, y, n_classes, params["weighting"], stages, scale, unit)


@dataclass
class _KnnRegressionRun(Run):
    """The training fold for distance queries; each stage is a value of k."""

    X: np.ndarray
    y: np.ndarray
    weighting: str
    stages: tuple[int, ...]

    def predict(self, X: np.ndarray) -> dict[str, np.ndarray]:
        """Means of the k nearest targets for every k at once: one nearest-neighbour query
        for the largest k (ties by training index, as the classifier), then cumulative sums of
        the (inverse-distance weighted) targets."""
        X = np.asarray(X, dtype=float)
        ks = np.minimum(np.asarray(self.stages), len(self.y))
        out = np.empty((len(ks), len(X)))
        for start, index, sq in _queries(X, self.X, ks):
            targets = self.y[index]
            if self.weighting == "distance":
                w = _inverse(sq)
            else:
                w = np.ones_like(targets)
            num = np.cumsum(w * targets, axis=1)[:, ks - 1]
            den = np.cumsum(w, axis=1)[:, ks - 1]
            out[:, start : start + len(index)] = (num / den).T
        return {"none": column(out)}


def fit_knn_regression(X, y, *, n_classes, params, stages, random_state):
    """Store the training fold; the members are k-NN regressors for every k in ``stages``."""
    validate_knn_regression(params, stages)
    stages = tuple(int(s) for s in stages)
    return _KnnRegressionRun(
        np.asarray(X, float), np.asarray(y, float), params["weighting"], stages
    )


def validate_knn_regression(params: dict[str, Any], stages: tuple[int, ...] | None) -> None:
    """Reject an unknown weighting (no lwa for regression) or missing values of k."""
    if params["weighting"] not in REGRESSION_WEIGHTINGS:
        raise ValueError(
            f"knn weighting={params['weighting']!r} is not one of {REGRESSION_WEIGHTINGS}"
        )
    check_stages(stages, "knn stages (the values of k)")


KNN_BLOCK = 2048
"""Query rows k-NN holds distances for at once."""


def _work(run, params, stages, width, outputs) -> StageWork:
    """k-NN: a distance to every training row; one query serves every k."""
    train = np.shape(unwrap(run).X)
    return [(1.0, float(train[0] * max(train[1], 1)))] * len(stages)


def _held_bytes(params: dict, stages, n_train: int, width: int) -> float:
    """The training rows a fitted k-NN keeps (see ``knn_rows``)."""
    return 8 * width * knn_rows(params.get("max_rows", "auto"), n_train)


def _relative_cost(params: dict[str, Any], stages: tuple[int, ...] | None) -> float:
    """The gain-ratio metric weighs every distance: twice the work."""
    return 2.0 if params.get("metric") == "gain_ratio" else 1.0


def _always(params: dict[str, Any]) -> bool:
    return True


KNN = FamilyTraits(
    rank=15,
    relative_cost=_relative_cost,
    deferred=_always,
    quadratic=_always,
    cost=CostModel(
        fit=lambda s: s.n_held * s.n * s.d,
        memory=lambda s: FLOAT * s.n * s.d + FLOAT * min(KNN_BLOCK, max(s.n_held, 1)) * s.n * 2,
        predict=lambda s: (1.0, float(s.n * s.d)),
        predict_work=_work,
        memory_factor=3.0,
        held_bytes=_held_bytes,
    ),
)


register(
    Family(
        name="knn",
        traits=KNN,
        fit=fit_knn,
        params={"metric": "euclidean", "weighting": "uniform", "max_rows": "auto"},
        view="standardized",
        stages="k",
        test_params={"metric": "euclidean", "weighting": "uniform"},
        test_stages=(1, 5, 25),
        validate=validate_knn,
    )
)
register(
    Family(
        name="knn",
        traits=KNN,
        fit=fit_knn_regression,
        params={"weighting": "uniform"},
        stages="k",
        test_params={"weighting": "distance"},
        test_stages=(1, 5, 25),
        validate=validate_knn_regression,
    ),
    task="regression",
)
