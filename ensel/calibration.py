"""Post-training calibration of a model's outputs into probabilities (dissertation ch. 3).

Platt scaling (§3.2.1) and isotonic regression by pool-adjacent violators (§3.2.2) are fitted on
held-out predictions; logistic correction for boosting (§3.3.1) needs no data and is produced by
the boosting family itself. Multiclass outputs are calibrated one class against the rest and the
rows renormalised (Zadrozny & Elkan 2002).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = [
    "CALIBRATORS",
    "CROSS_FIT_GROUPS",
    "ColumnCalibrator",
    "IsotonicCalibrator",
    "PlattCalibrator",
    "calibrate_on_hillclimb",
    "cross_fit",
    "cross_fit_groups",
    "logistic_correction",
    "pav",
]


class PlattCalibrator:
    """Sigmoid ``1 / (1 + exp(A f + B))`` fitted by maximum likelihood on Platt's smoothed
    targets ``(N+ + 1) / (N+ + 2)`` and ``1 / (N- + 2)`` (Eq. 3.4), by Newton's method with
    backtracking (Lin, Lin & Weng 2007, the numerically safe form of Platt's algorithm)."""

    def fit(self, f: np.ndarray, y: np.ndarray) -> PlattCalibrator:
        f = np.asarray(f, dtype=np.float64)
        y = np.asarray(y)
        n_pos = int((y == 1).sum())
        n_neg = y.size - n_pos
        t = np.where(y == 1, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
        a, b = 0.0, np.log((n_neg + 1.0) / (n_pos + 1.0))
        loss = _platt_loss(f, t, a, b)
        for _ in range(100):
            p = _sigmoid_neg(a * f + b)  # P(y=1) = 1 / (1 + exp(A f + B))
            w = np.maximum(p * (1.0 - p), 1e-12)
            d = t - p  # gradient of the loss wrt (A f + B) is (t - p)
            g = np.array([np.dot(f, d), d.sum()])
            if np.abs(g).max() < 1e-7:
                break
            h = np.array(
                [[np.dot(f * f, w) + 1e-12, np.dot(f, w)], [np.dot(f, w), w.sum() + 1e-12]]
            )
            step = np.linalg.solve(h, -g)
            lam = 1.0
            while lam >= 1e-10:
                a_new, b_new = a + lam * step[0], b + lam * step[1]
                new_loss = _platt_loss(f, t, a_new, b_new)
                if new_loss < loss + 1e-4 * lam * np.dot(g, step):
                    a, b, loss = a_new, b_new, new_loss
                    break
                lam /= 2.0
            else:
                break
        self.a_, self.b_ = float(a), float(b)
        return self

    def predict(self, f: np.ndarray) -> np.ndarray:
        """Calibrated probability of the positive class."""
        return _sigmoid_neg(self.a_ * np.asarray(f, dtype=np.float64) + self.b_)


def _sigmoid_neg(z: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(z))`` without overflow."""
    return np.exp(-np.logaddexp(0.0, z))


def _platt_loss(f: np.ndarray, t: np.ndarray, a: float, b: float) -> float:
    z = a * f + b  # log(1 - p) = -logaddexp(0, -z); log p = -logaddexp(0, z)
    return float(np.sum(t * np.logaddexp(0.0, z) + (1.0 - t) * np.logaddexp(0.0, -z)))


def pav(y: np.ndarray, w: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Pool adjacent violators (Table 3.1) on targets already sorted by score.

    Returns ``(values, ends)``: the value of each pooled block and the index one past its end.
    """
    y = np.asarray(y, dtype=np.float64)
    w = np.ones_like(y) if w is None else np.asarray(w, dtype=np.float64)
    values, weights, ends = [], [], []
    for i in range(y.size):
        v, wt = y[i], w[i]
        while values and values[-1] >= v:  # a violator (or a tie) pools with its left block
            wl = weights.pop()
            v = (values.pop() * wl + v * wt) / (wl + wt)
            wt += wl
            ends.pop()
        values.append(v)
        weights.append(wt)
        ends.append(i + 1)
    return np.asarray(values), np.asarray(ends)


class IsotonicCalibrator:
    """Isotonic regression by PAV (§3.2.2). Equal scores are pooled first, so the fitted map is a
    function of the score; it is the step function ``m(f) = m_ij for f_i < f <= f_j``, constant
    beyond the ends of the calibration set."""

    def fit(self, f: np.ndarray, y: np.ndarray) -> IsotonicCalibrator:
        f = np.asarray(f, dtype=np.float64)
        order = np.argsort(f, kind="stable")
        fs, ys = f[order], np.asarray(y, dtype=np.float64)[order]
        levels, start, counts = np.unique(fs, return_index=True, return_counts=True)
        means = np.add.reduceat(ys, start) / counts
        values, ends = pav(means, counts.astype(np.float64))
        self.upper_ = levels[ends - 1]  # largest score in each block
        self.values_ = values
        return self

    def predict(self, f: np.ndarray) -> np.ndarray:
        """Calibrated probability: the value of the first block whose largest score is >= f."""
        idx = np.searchsorted(self.upper_, np.asarray(f, dtype=np.float64), side="left")
        return self.values_[np.minimum(idx, self.values_.size - 1)]


CALIBRATORS = {"platt": PlattCalibrator, "isotonic": IsotonicCalibrator}
"""Calibrators fitted on held-out predictions, by the name a library spec uses."""


class ColumnCalibrator:
    """A calibrator per class column for ``(n, C)`` probabilities. Binary: the positive column is
    calibrated and the other is its complement. Multiclass: one calibrator per class against the
    rest, rows renormalised (Zadrozny & Elkan 2002)."""

    def __init__(self, method: str) -> None:
        if method not in CALIBRATORS:
            raise ValueError(
                f"calibration={method!r} is not known; use one of {sorted(CALIBRATORS)}"
            )
        self.method = method

    def fit(self, f: np.ndarray, y: np.ndarray) -> ColumnCalibrator:
        self.n_classes_ = f.shape[1]
        columns = [1] if self.n_classes_ == 2 else range(self.n_classes_)
        self.calibrators_ = {
            c: CALIBRATORS[self.method]().fit(f[:, c], (y == c).astype(np.int8)) for c in columns
        }
        return self

    def predict(self, f: np.ndarray) -> np.ndarray:
        """Calibrated ``(n, C)`` probabilities."""
        out = np.empty(f.shape, dtype=np.float64)
        for c, cal in self.calibrators_.items():
            out[:, c] = cal.predict(f[:, c])
        if self.n_classes_ == 2:
            out[:, 0] = 1.0 - out[:, 1]
            return out
        total = out.sum(axis=1, keepdims=True)
        np.divide(out, total, out=out, where=total > 0)
        out[total[:, 0] <= 0] = 1.0 / self.n_classes_
        return out


CROSS_FIT_GROUPS = 5
"""Groups of cross-fitted calibration wherever no folds are given: a library's held-out
hillclimb split, the estimator's final Platt step and the combination of risk detectors."""


def cross_fit_groups(n: int, random_state=None) -> np.ndarray:
    """A random assignment of ``n`` rows to ``CROSS_FIT_GROUPS`` groups of (nearly) equal size."""
    return np.random.default_rng(random_state).permutation(n) % CROSS_FIT_GROUPS


def cross_fit(make: Callable[[], object], f: np.ndarray, y: np.ndarray, groups: np.ndarray):
    """Cross-fitted calibration: for each group ``g`` of ``groups`` (ids 0..G-1), a calibrator
    ``make()`` fitted on the rows of the other groups predicts the rows of ``g``, so no row's
    calibrated prediction comes from a calibrator that saw it.

    Returns ``(predictions, calibrators)``: the out-of-group predictions (the shape of ``f``,
    float64) and the calibrator of each group, in group order (a member of a library predicts
    new rows through them, §4.3.4)."""
    f = np.asarray(f, dtype=np.float64)
    y = np.asarray(y)
    out = np.empty_like(f)
    calibrators = []
    for g in range(int(groups.max()) + 1):
        inside = groups == g
        cal = make().fit(f[~inside], y[~inside])
        out[inside] = cal.predict(f[inside])
        calibrators.append(cal)
    return out, calibrators


def calibrate_on_hillclimb(
    P_hill: np.ndarray, y: np.ndarray, P_test: np.ndarray, method: str = "platt"
) -> tuple[np.ndarray, np.ndarray]:
    """Members calibrated as the dissertation's libraries are (§4.3.1: "the ensemble selection
    hillclimb set is used for calibration as well"): one calibrator per member, fitted on all
    of its hillclimb predictions ``P_hill`` against ``y`` and applied to those same rows and to
    the test predictions ``P_test``.

    The alternative to a library's cross-fitted calibration (:func:`cross_fit`), whose
    hillclimb predictions never come from a calibrator that saw their row; here they do, so
    selection sees calibrated members slightly optimistically. Binary predictions are
    ``(m, n)`` positive-class matrices, multiclass ``(m, n, C)``. Returns ``(calibrated
    P_hill, calibrated P_test)`` in the input layout, float64."""
    P_hill = np.asarray(P_hill, dtype=np.float64)
    P_test = np.asarray(P_test, dtype=np.float64)
    if P_hill.ndim not in (2, 3) or P_hill.shape[0] != P_test.shape[0]:
        raise ValueError(
            f"P_hill {P_hill.shape} and P_test {P_test.shape} must be (m, n) or (m, n, C) "
            "with the same number of members m"
        )
    binary = P_hill.ndim == 2
    hill_out, test_out = np.empty_like(P_hill), np.empty_like(P_test)
    for m in range(P_hill.shape[0]):
        f_hill, f_test = P_hill[m], P_test[m]
        if binary:
            f_hill, f_test = np.c_[1 - f_hill, f_hill], np.c_[1 - f_test, f_test]
        cal = ColumnCalibrator(method).fit(f_hill, np.asarray(y))
        got_hill, got_test = cal.predict(f_hill), cal.predict(f_test)
        hill_out[m] = got_hill[:, 1] if binary else got_hill
        test_out[m] = got_test[:, 1] if binary else got_test
    return hill_out, test_out


def logistic_correction(votes: np.ndarray) -> np.ndarray:
    """Logistic correction for boosting (§3.3.1, Friedman et al. 2000): ``P(y=1|x) =
    1 / (1 + exp(-2 F(x)))`` with ``F = sum_t alpha_t h_t(x)``, ``h_t`` in {-1, +1}.

    ``votes`` (..., C) holds each class's summed boosting weight ``s_k = sum_t w_t [h_t = k]``,
    with SAMME's weights ``w_t = 2 alpha_t``; for two classes ``2F = s_1 - s_0``, so the
    correction is the softmax of the votes, which is also how it extends to several classes.

    A learner with no training error has ``alpha = log((1 - err) / err) = inf`` (the boosting
    family passes an infinite weight; scikit-learn stops boosting there and records 1): its
    classes' votes are infinite and the correction is its limit, probability 1 on the
    infinite class (shared if several), 0 elsewhere, not the softmax of a finite stand-in
    (``1 / (1 + e^-1) = 0.73``)."""
    votes = np.asarray(votes, dtype=np.float64)
    top = votes.max(axis=-1, keepdims=True)
    infinite = np.isposinf(top)
    z = np.where(infinite, np.where(votes == top, 0.0, -np.inf), votes - np.where(infinite, 0, top))
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)
