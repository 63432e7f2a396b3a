"""Synthetic extrapolation-risk problems of the Sandia report (Munson & Kegelmeyer, SAND2013-2534,
§4.1) with their exact true risk: mixtures of Gaussians and of rotated ridge distributions in
the cube [-10, 10]^d, and test points spanning the full risk range (a grid in 2-D, a line
search between a uniform point and a mixture point otherwise). Benchmark-only code.

The true risk is Hooker's (report §2.1, Eq. 1): ``R(x) = f_U(x) / (f_U(x) + f_T(x))`` with
``f_U = 20^-d`` the uniform density on the cube and ``f_T`` the data density, and ``R = 1``
outside the cube. Training points are drawn from the mixture and kept only inside the cube (the
report's training sets "fall in a hyper-cube bounded by (-10, 10)"), so ``f_T`` is the mixture
density divided by the mixture's mass inside the cube. That mass is the one quantity not in
closed form (a Gaussian's mass in a box, a rotated ridge's mass in the cube); it is computed by
stratified Monte Carlo with 2^20 draws (standard error below 5e-4, which moves a risk by at most
1.3e-4 / mass), once per problem, with the problem's seed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit, logsumexp

__all__ = [
    "HALF_WIDTH",
    "GaussianMixture",
    "Mixture",
    "RidgeMixture",
    "grid_points",
    "line_search_points",
    "make_problem",
]

HALF_WIDTH = 10.0
"""The support of every problem is the cube [-HALF_WIDTH, HALF_WIDTH]^d (report §4.1)."""

GAUSSIAN_K = {2: 2, 5: 4, 10: 7}
"""Gaussian components per class for d = 2, 5, 10 (report §4.1)."""

RIDGE_K = {2: 5, 5: 8, 10: 14}
RIDGE_ROTATIONS = {2: 1, 5: 2, 10: 3}
"""Ridge components and planar (Givens) rotations for d = 2, 5, 10 (report §4.1)."""

RIDGE_SIGMA = (0.5, 1.5)
"""Range of a ridge's standard deviation. The report does not give it; this range keeps every
ridge well inside the cube and makes the 2-D and 5-D ridge crests clearly denser than the
background (risk well below 0.5 there)."""

_MC_DRAWS = 2**20
_MC_CHUNK = 2**17


@dataclass(eq=False)
class Mixture:
    """An equal- or given-weight mixture in the cube, truncated to the cube.

    ``labels[k]`` is the class (0 or 1) of component k; a training row's label is the class of
    the component it was drawn from (report §4.1: components belong to class A or B)."""

    d: int
    weights: np.ndarray
    labels: np.ndarray
    seed: int
    log_mass: float = field(init=False)

    def __post_init__(self) -> None:
        # Stratified Monte Carlo for the mass inside the cube: w_k N draws from component k.
        rng = np.random.default_rng([self.seed, 1])
        counts = np.maximum(np.round(self.weights * _MC_DRAWS).astype(int), 1)
        inside = np.zeros(self.n_components)
        for start in range(0, counts.sum(), _MC_CHUNK):
            k = np.repeat(np.arange(self.n_components), counts)[start : start + _MC_CHUNK]
            inside += np.bincount(k, _in_cube(self._draw(k, rng)), self.n_components)
        self.component_mass = inside / counts
        self.log_mass = float(np.log(self.weights @ self.component_mass))

    @property
    def n_components(self) -> int:
        return len(self.weights)

    @property
    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """The known support (report §2.6: box risk and the detectors use it on synthetic data)."""
        return np.full(self.d, -HALF_WIDTH), np.full(self.d, HALF_WIDTH)

    def sample(self, n: int, random_state=None) -> tuple[np.ndarray, np.ndarray]:
        """``n`` rows drawn from the mixture inside the cube, and each row's class label."""
        rng = np.random.default_rng(random_state)
        X, comp = np.empty((0, self.d)), np.empty(0, dtype=int)
        while len(X) < n:
            m = int(1.2 * (n - len(X)) / np.exp(self.log_mass)) + 16
            k = rng.choice(self.n_components, size=m, p=self.weights)
            Z = self._draw(k, rng)
            keep = _in_cube(Z)
            X, comp = np.vstack([X, Z[keep]]), np.concatenate([comp, k[keep]])
        return X[:n], self.labels[comp[:n]]

    def log_density(self, X: np.ndarray) -> np.ndarray:
        """log f_T(x), the data density inside the cube (-inf outside)."""
        X = np.asarray(X, dtype=float)
        with np.errstate(divide="ignore"):
            logw = np.log(self.weights)
        out = logsumexp(self._component_logpdf(X) + logw, axis=1) - self.log_mass
        out[~_in_cube(X)] = -np.inf
        return out

    def true_risk(self, X: np.ndarray) -> np.ndarray:
        """Hooker's risk f_U / (f_U + f_T) with f_U = 20^-d on the cube; 1 outside it."""
        log_ratio = self.log_density(X) + self.d * np.log(2 * HALF_WIDTH)  # log f_T / f_U
        return expit(-log_ratio)

    def _draw(self, k: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError

    def _component_logpdf(self, X: np.ndarray) -> np.ndarray:
        raise NotImplementedError


@dataclass(eq=False)
class GaussianMixture(Mixture):
    """Report §4.1: k Gaussians per class, means uniform on [-5, 5]^d, covariance S'S with S a
    d x d matrix of standard normals."""

    means: np.ndarray = None  # (K, d)
    factors: np.ndarray = None  # (K, d, d): S, so that x = mean + eps @ S has covariance S'S

    def __post_init__(self) -> None:
        # Cholesky factor L of S'S (L L' = S'S) for the log density.
        chol = np.linalg.cholesky(np.einsum("kji,kjl->kil", self.factors, self.factors))
        self._whiten = np.linalg.inv(chol)  # u = L^-1 (x - mean) is standard normal
        self._logdet = 2 * np.log(np.diagonal(chol, axis1=1, axis2=2)).sum(axis=1)
        super().__post_init__()

    def _draw(self, k, rng):
        X = rng.standard_normal((len(k), self.d))
        for c in np.unique(k):  # one matrix product per component
            rows = k == c
            X[rows] = self.means[c] + X[rows] @ self.factors[c]
        return X

    def _component_logpdf(self, X):
        out = np.empty((X.shape[0], self.n_components))
        for k in range(self.n_components):  # a loop over components, never over rows
            u = (X - self.means[k]) @ self._whiten[k].T
            out[:, k] = -0.5 * (u * u).sum(axis=1)
        return out - 0.5 * (self.d * np.log(2 * np.pi) + self._logdet)


@dataclass(eq=False)
class RidgeMixture(Mixture):
    """Report §4.1, Eq. 4-5: component k is Gaussian along axis ``axes[k]`` (mean
    ``centres[k]``, sd ``sigmas[k]``) and uniform on [-10, 10] along every other axis, in a
    basis turned by ``rotation`` (orthogonal, x = rotation @ z): the product of random planar
    Givens rotations."""

    axes: np.ndarray = None
    centres: np.ndarray = None
    sigmas: np.ndarray = None
    rotation: np.ndarray = None

    def _draw(self, k, rng):
        Z = rng.uniform(-HALF_WIDTH, HALF_WIDTH, size=(len(k), self.d))
        Z[np.arange(len(k)), self.axes[k]] = self.centres[k] + self.sigmas[k] * rng.standard_normal(
            len(k)
        )
        return Z @ self.rotation.T

    def _component_logpdf(self, X):
        Z = X @ self.rotation  # back to the ridge basis (the rotation is orthogonal)
        z = Z[:, self.axes]  # (n, K): each component's ridge coordinate
        log_g = -0.5 * ((z - self.centres) / self.sigmas) ** 2 - np.log(
            self.sigmas * np.sqrt(2 * np.pi)
        )
        log_uniform = -(self.d - 1) * np.log(2 * HALF_WIDTH)
        # the uniform factors hold only inside the unrotated cube (ridge axis excepted)
        out_k = np.abs(Z) > HALF_WIDTH  # (n, d)
        others = np.eye(self.d, dtype=bool)[self.axes]  # (K, d): True on the ridge axis
        outside = (out_k[:, None, :] & ~others[None, :, :]).any(axis=2)  # (n, K)
        return np.where(outside, -np.inf, log_g + log_uniform)


def givens_rotations(d: int, r: int, rng: np.random.Generator) -> np.ndarray:
    """The product of ``r`` planar rotations, each of a random pair of axes by a uniform angle
    (report §4.1)."""
    R = np.eye(d)
    for _ in range(r):
        i, j = rng.choice(d, size=2, replace=False)
        c, s = np.cos(t := rng.uniform(0, 2 * np.pi)), np.sin(t)
        G = np.eye(d)
        G[i, i], G[j, j], G[i, j], G[j, i] = c, c, -s, s
        R = G @ R
    return R


def make_problem(kind: str, d: int, seed: int) -> Mixture:
    """Problem number ``seed`` of family ``kind`` ("gaussian" or "ridge") in ``d`` dimensions,
    with the report's component counts (§4.1); any d >= 2 works (counts interpolated)."""
    if kind not in ("gaussian", "ridge"):
        raise ValueError(f"kind must be 'gaussian' or 'ridge', got {kind!r}")
    if int(d) != d or d < 2:
        raise ValueError(f"d must be an integer >= 2, got {d!r}")
    rng = np.random.default_rng([seed, d, kind == "ridge"])
    if kind == "gaussian":
        k = GAUSSIAN_K.get(d, max(2, round(0.7 * d)))
        K = 2 * k
        return GaussianMixture(
            d=d,
            weights=np.full(K, 1 / K),
            labels=np.repeat([0, 1], k),
            seed=seed,
            means=rng.uniform(-5, 5, size=(K, d)),
            factors=rng.standard_normal((K, d, d)),
        )
    K = RIDGE_K.get(d, d + 4)
    labels = rng.integers(0, 2, size=K)
    if labels.min() == labels.max():  # both classes must be present for the builtin detectors
        labels[rng.integers(K)] ^= 1
    return RidgeMixture(
        d=d,
        weights=np.full(K, 1 / K),
        labels=labels,
        seed=seed,
        axes=rng.integers(0, d, size=K),
        centres=rng.uniform(-5, 5, size=K),
        sigmas=rng.uniform(*RIDGE_SIGMA, size=K),
        rotation=givens_rotations(d, RIDGE_ROTATIONS.get(d, max(1, d // 3)), rng),
    )


def grid_points(problem: Mixture, per_axis: int) -> np.ndarray:
    """A regular grid of cell centres over the cube (the report's 2-D test set, §4.1)."""
    if problem.d != 2:
        raise ValueError(f"a grid test set is for d = 2 only; this problem has d = {problem.d}")
    edges = np.linspace(-HALF_WIDTH, HALF_WIDTH, per_axis + 1)
    centres = 0.5 * (edges[1:] + edges[:-1])
    a, b = np.meshgrid(centres, centres, indexing="ij")
    return np.column_stack([a.ravel(), b.ravel()])


def line_search_points(
    problem: Mixture, n: int, random_state=None, max_rounds: int = 200, tol: float = 0.01
) -> np.ndarray:
    """``n`` test points whose true risks span [0, 1] (report §4.1): draw a target risk t
    uniformly, a uniform point a and a mixture point b; when R(b) <= t <= R(a), bisect the
    segment from b to a for a point of risk t; otherwise draw again. Vectorised over a batch
    of lines. Where the risk jumps past t (the edge of a rotated ridge's support, where it
    steps to 1) no point of the segment has risk t and bisection ends at the jump; such a
    search has failed and is drawn again, as the report retries a failed search, so every
    point returned has risk within ``tol`` of its target."""
    rng = np.random.default_rng(random_state)
    lo_box, hi_box = problem.bounds
    found: list[np.ndarray] = []
    have = 0
    for _ in range(max_rounds):
        m = 2 * (n - have) + 64
        t = rng.random(m)
        a = rng.uniform(lo_box, hi_box, size=(m, problem.d))
        b, _ = problem.sample(m, rng)
        ok = (problem.true_risk(b) <= t) & (t <= problem.true_risk(a))
        a, b, t = a[ok], b[ok], t[ok]
        lo, hi = np.zeros(len(t)), np.ones(len(t))  # R(b + lo (a-b)) <= t <= R(b + hi (a-b))
        for _ in range(40):
            mid = 0.5 * (lo + hi)
            below = problem.true_risk(b + mid[:, None] * (a - b)) <= t
            lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
        x = b + (0.5 * (lo + hi))[:, None] * (a - b)
        x = x[np.abs(problem.true_risk(x) - t) <= tol]
        found.append(x)
        have += len(x)
        if have >= n:
            return np.vstack(found)[:n]
    raise RuntimeError(
        f"line search found {have} of {n} test points in {max_rounds} rounds; the problem's "
        "risk range is too narrow (its mixture points are all riskier than most targets, or its "
        "searches end at jumps of the risk)"
    )


def _in_cube(X: np.ndarray) -> np.ndarray:
    return (np.abs(X) <= HALF_WIDTH).all(axis=1)
