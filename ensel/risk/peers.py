"""scikit-learn's standard novelty detectors as extrapolation-risk detectors: isolation forest,
local outlier factor (novelty mode) and a kernel density estimate on Hooker's risk scale. Each
one-hot encodes categorical columns, standardises numeric ones, imputes missing values, and maps
its score monotonically into [0, 1]; rows outside the training box get risk 1 (Sandia report
SAND2013-2534, §2.1), as for every other detector."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from scipy.special import expit
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import IsolationForest
from sklearn.impute import SimpleImputer
from sklearn.model_selection import KFold
from sklearn.neighbors import KernelDensity, LocalOutlierFactor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, StandardScaler

from ._base import Detector, FeatureSpace, register

__all__ = [
    "MAX_LEVELS",
    "ONE_HOT_SCALE",
    "IsolationForestRisk",
    "KDERisk",
    "LOFRisk",
    "make_encoder",
]

MAX_LEVELS = 32
"""A categorical column one-hot encodes its most frequent training categories, at most this
many, and pools the rest into one "infrequent" column (as the library's one-hot views do), so
a column with thousands of categories (an id, a zip code) does not make the dense matrix the
peers keep thousands of columns wide."""
ONE_HOT_SCALE = 1.0 / np.sqrt(2.0)
"""One-hot columns are multiplied by this, so two different categories lie at distance 1: as
far apart as one standard deviation of a standardised numeric column."""


def _category_codes(Z: np.ndarray) -> np.ndarray:
    return np.floor(Z)  # encoded categories are code + 0.5; NaN stays NaN


def _scale_one_hot(A: np.ndarray) -> np.ndarray:
    return A * ONE_HOT_SCALE


def make_encoder(space: FeatureSpace) -> ColumnTransformer:
    """Unfitted transformer of encoded rows (see FeatureSpace) into the dense matrix the peers
    see: numeric columns median-imputed and standardised; categorical columns mode-imputed and
    one-hot encoded over the ``MAX_LEVELS`` most frequent training categories plus one column
    for the others (scaled by ``ONE_HOT_SCALE``; an unseen category is all zeros, and lies
    outside the box anyway)."""
    numeric = np.flatnonzero(~space.categorical)
    parts = []
    if numeric.size:
        impute = SimpleImputer(strategy="median", keep_empty_features=True)
        parts.append(("numeric", make_pipeline(impute, StandardScaler()), numeric))
    for j in np.flatnonzero(space.categorical):
        n_categories = len(space.categories[j] or ())
        onehot = OneHotEncoder(
            categories=[np.arange(n_categories, dtype=float)],
            handle_unknown="ignore",
            sparse_output=False,
            max_categories=MAX_LEVELS + 1 if n_categories > MAX_LEVELS + 1 else None,
        )
        pipe = make_pipeline(
            FunctionTransformer(_category_codes),
            SimpleImputer(strategy="most_frequent", keep_empty_features=True),
            onehot,
            FunctionTransformer(_scale_one_hot),
        )
        parts.append((f"categorical_{j}", pipe, [j]))
    return ColumnTransformer(parts, sparse_threshold=0.0)


class _Peer(Detector):
    """A scikit-learn novelty detector fitted on the encoded, standardised rows."""

    one_outside_box = True

    def _fit(self, Z, y):
        self.encoder_ = make_encoder(self.space_).fit(Z)
        self._fit_encoded(self.encoder_.transform(Z))

    def _risk(self, Z):
        return self._risk_encoded(self.encoder_.transform(Z))

    def _fit_encoded(self, E: np.ndarray) -> None:
        raise NotImplementedError

    def _risk_encoded(self, E: np.ndarray) -> np.ndarray:
        raise NotImplementedError


@register("isolation_forest")
class IsolationForestRisk(_Peer):
    """Isolation forest (Liu, Ting and Zhou 2008). Risk is the paper's anomaly score
    ``s(x, n) = 2 ** (-E[h(x)] / c(n))`` (``-score_samples`` in scikit-learn), already in
    (0, 1]: near 1 for isolated rows, at most 0.5 for rows in dense regions."""

    test_params: ClassVar[Mapping[str, Any]] = {"n_estimators": 50}

    def __init__(
        self,
        n_estimators: int = 100,
        max_samples="auto",
        bounds=None,
        random_state=None,
        n_jobs=None,
    ):
        self.n_estimators = n_estimators
        self.max_samples = max_samples
        self.bounds = bounds
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _fit_encoded(self, E):
        self.model_ = IsolationForest(
            n_estimators=self.n_estimators,
            max_samples=self.max_samples,
            random_state=self.random_state,
            n_jobs=self.n_jobs,
        ).fit(E)

    def _risk_encoded(self, E):
        return -self.model_.score_samples(E)


@register("lof")
class LOFRisk(_Peer):
    """Local outlier factor in novelty mode (Breunig et al. 2000). Risk is ``LOF / (1 + LOF)``:
    LOF is the ratio of the neighbours' local density to the row's own, so this is the row's
    chance of coming from its neighbourhood's density rather than its own, Hooker's form with
    the neighbourhood in place of the uniform background; LOF = 1 (as dense as the
    neighbours) gives 0.5."""

    test_params: ClassVar[Mapping[str, Any]] = {}

    def __init__(self, n_neighbors: int = 20, bounds=None, n_jobs=None):
        self.n_neighbors = n_neighbors
        self.bounds = bounds
        self.n_jobs = n_jobs

    def _fit_encoded(self, E):
        k = min(self.n_neighbors, E.shape[0] - 1)
        if k < 1:
            raise ValueError("LOFRisk needs at least two training rows")
        self.model_ = LocalOutlierFactor(n_neighbors=k, novelty=True, n_jobs=self.n_jobs).fit(E)

    def _risk_encoded(self, E):
        lof = -self.model_.score_samples(E)
        return lof / (1.0 + lof)


@register("kde")
class KDERisk(_Peer):
    """Gaussian kernel density estimate on Hooker's risk scale (Sandia report §2.1, Eq. 1):
    ``risk = u / (u + f)`` with ``u`` the uniform density on the box and ``f`` the estimate.

    Both densities live on the mixed space the rows come from: a density over the
    standardised numeric columns times a probability over each categorical column's categories.
    The Gaussian kernel on a one-hot block is, up to a constant, Aitchison and Aitken's kernel
    (same category 1, another ``r = exp(-s**2 / h**2)``, ``s = ONE_HOT_SCALE``); that constant,
    ``(2 pi h**2)**(K/2) / (1 + (K - 1) r)`` per column with K categories, turns scikit-learn's
    density into the mixed one. ``u`` is ``1 / prod(standardised box widths) * prod(1 / K)``.

    ``bandwidth`` (in standard deviations) is a number, ``"scott"`` or ``"silverman"``
    (scikit-learn's rules on the encoded columns), or ``"cv"``: the value on a grid of
    ``0.25 .. 2`` times Scott's factor ``n ** (-1 / (d + 4))`` with the best 5-fold
    cross-validated log-likelihood of the mixed density (at most ``cv_rows`` rows, drawn with
    ``random_state``)."""

    test_params: ClassVar[Mapping[str, Any]] = {"cv_rows": 300}

    def __init__(self, bandwidth="cv", cv_rows: int = 2000, bounds=None, random_state=None):
        self.bandwidth = bandwidth
        self.cv_rows = cv_rows
        self.bounds = bounds
        self.random_state = random_state

    def _fit_encoded(self, E):
        space = self.space_
        numeric = ~space.categorical
        scale = np.ones(space.n_features)
        if numeric.any():
            scale[numeric] = self.encoder_.named_transformers_["numeric"][-1].scale_
        # categories as encoded: a column pooled beyond MAX_LEVELS counts its pool as one
        # category, for the uniform density and the kernel's normalisation alike
        self.n_categories_ = np.array(
            [
                min(len(c), MAX_LEVELS + 1)
                for c, k in zip(space.categories, space.categorical, strict=True)
                if k
            ],
            int,
        )
        self.log_uniform_ = (
            -np.log(space.width[numeric] / scale[numeric]).sum() - np.log(self.n_categories_).sum()
        )
        self.bandwidth_ = self._choose_bandwidth(E)
        self.model_ = KernelDensity(bandwidth=self.bandwidth_).fit(E)

    def _choose_bandwidth(self, E: np.ndarray) -> float:
        bw = self.bandwidth
        if isinstance(bw, int | float | np.number) and not isinstance(bw, bool):
            if not np.isfinite(bw) or bw <= 0:
                raise ValueError(f"bandwidth must be a positive number; got {bw!r}")
            return float(bw)
        if bw in ("scott", "silverman"):
            return float(KernelDensity(bandwidth=bw).fit(E).bandwidth_)
        if bw != "cv":
            raise ValueError(
                f"bandwidth must be a positive number, 'scott', 'silverman' or 'cv'; got {bw!r}"
            )
        rng = np.random.default_rng(self.random_state)
        if E.shape[0] > self.cv_rows:
            E = E[rng.choice(E.shape[0], self.cv_rows, replace=False)]
        if E.shape[0] < 10:
            return float(KernelDensity(bandwidth="scott").fit(E).bandwidth_)
        d = int((~self.space_.categorical).sum()) + self.n_categories_.size
        grid = E.shape[0] ** (-1.0 / (d + 4)) * np.geomspace(0.25, 2.0, 7)
        folds = KFold(5, shuffle=True, random_state=int(rng.integers(2**31 - 1))).split(E)
        folds = list(folds)
        scores = [
            np.mean([self._log_mixed(E[test], E[train], h).mean() for train, test in folds])
            for h in grid
        ]
        return float(grid[int(np.argmax(scores))])

    def _log_correction(self, h: float) -> float:
        """log of the constant turning scikit-learn's density into the mixed density."""
        K = self.n_categories_
        if K.size == 0:
            return 0.0
        r = np.exp(-(ONE_HOT_SCALE**2) / h**2)
        return float(np.sum(K / 2 * np.log(2 * np.pi * h**2) - np.log1p((K - 1) * r)))

    def _log_mixed(self, E: np.ndarray, train: np.ndarray, h: float) -> np.ndarray:
        kde = KernelDensity(bandwidth=h).fit(train)
        return kde.score_samples(E) + self._log_correction(h)

    def log_density(self, X) -> np.ndarray:
        """Log of the mixed-space kernel density estimate at each row of X."""
        E = self.encoder_.transform(self.space_.transform(X))
        return self.model_.score_samples(E) + self._log_correction(self.bandwidth_)

    def _risk_encoded(self, E):
        log_f = self.model_.score_samples(E) + self._log_correction(self.bandwidth_)
        return expit(self.log_uniform_ - log_f)
