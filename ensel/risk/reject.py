"""Reject options of Gu & Easwaran (ICCPS 2019, §5): refuse to answer where training data is
lacking (Eq. 10) or, for a classifier, unless both its top-class probability and the evidence
clear their thresholds (Eq. 11); and the choice of those thresholds on validation rows.

The paper states the rules with FSPT's score φ_F (higher = more training evidence): answer when
``φ_F(x) >= t``. Every ensel detector gives a risk instead (higher = riskier), so here a row is
answered when ``risk <= max_risk``; for FSPT the risk is a decreasing function of φ_F, so the
two read the same.
"""

from __future__ import annotations

import logging
import numbers
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["RejectRule", "confidence", "fit_reject_rule", "reject_mask"]

log = logging.getLogger(__name__)


def confidence(proba) -> np.ndarray:
    """The model's confidence ``φ_M(x) = max_c φ_M^c(x)`` (§5): the top class probability of each
    row of ``proba``, shape ``(n, C)``, or ``max(p, 1 - p)`` for a 1-D positive-class ``p``."""
    p = np.asarray(proba, dtype=float)
    if p.ndim == 1:
        p = np.column_stack([1.0 - p, p])
    if p.ndim != 2 or p.shape[1] < 2:
        raise ValueError(
            f"proba must be (n,) positive-class or (n, C) class probabilities; got shape {p.shape}"
        )
    if not np.isfinite(p).all():
        raise ValueError("proba holds NaN or infinite values; pass probabilities in [0, 1]")
    return p.max(axis=1)


def reject_mask(risk, max_risk: float, proba=None, min_confidence: float | None = None):
    """Rows to reject (True) under Eq. 10 or Eq. 11.

    Eq. 10 (``proba`` is None): reject when ``risk > max_risk``. Eq. 11: also reject when the
    top class probability is below ``min_confidence``, i.e. answer only when
    ``φ_M(x) >= t1`` and the risk clears its threshold. NaN risk is rejected."""
    r = _check_risk(risk)
    out = ~(r <= max_risk)
    if min_confidence is not None:
        if proba is None:
            raise ValueError("min_confidence (Eq. 11) needs proba, the model's probabilities")
        conf = confidence(proba)
        if conf.shape[0] != r.shape[0]:
            raise ValueError(f"risk has {r.shape[0]} rows but proba has {conf.shape[0]}")
        out |= conf < min_confidence
    return out


@dataclass(frozen=True)
class RejectRule:
    """Thresholds of Eq. 10 (``min_confidence`` None) or Eq. 11: answer a row only when its
    risk is at most ``max_risk`` and, for Eq. 11, its top class probability at least
    ``min_confidence``. ``coverage`` and ``loss`` are the share of validation rows answered and
    their mean loss when the rule was fitted (NaN when set by hand)."""

    max_risk: float
    min_confidence: float | None = None
    coverage: float = float("nan")
    loss: float = float("nan")

    def reject(self, risk, proba=None) -> np.ndarray:
        """Bool mask of the rows to reject (True = refuse to predict)."""
        if self.min_confidence is not None and proba is None:
            raise ValueError("this rule is Eq. 11 (it has min_confidence): pass proba as well")
        return reject_mask(risk, self.max_risk, proba, self.min_confidence)


def fit_reject_rule(
    risk,
    *,
    proba=None,
    y=None,
    classes=None,
    loss=None,
    coverage: float | None = None,
    max_loss: float | None = None,
    n_grid: int = 64,
) -> RejectRule:
    """Choose the thresholds of Eq. 10 or 11 on validation rows. Give exactly one target:

    - ``max_loss``: answer as many rows as possible while their mean loss stays at or below
      ``max_loss`` (e.g. ``max_loss=0.05`` for at most 5% errors). Needs per-row losses.
    - ``coverage``: answer at least this share of the rows. With risk alone (Eq. 10) the
      threshold is the ``coverage`` quantile of the risk and needs no labels; with ``proba``
      (Eq. 11) the pair of thresholds with the lowest mean loss among those answering at least
      that share is chosen, which needs per-row losses.

    Per-row losses are ``loss`` (any per-row loss, e.g. absolute error for a regressor, Eq. 10),
    or, given ``proba`` and labels ``y``, the 0/1 error of the top class (``y`` holds column
    indices of ``proba``, or labels named by ``classes``). With ``proba`` the rule is Eq. 11 and
    ``min_confidence`` is searched over ``n_grid`` quantiles of the confidence (the paper sets
    both thresholds by hand; this picks them by the target). Ties in risk are never split: a
    threshold answers every row at or below it. When no threshold meets ``max_loss`` the rule
    rejects everything (logged as a warning)."""
    r = _check_risk(risk)
    if np.isnan(r).any():
        raise ValueError("risk has NaN values; validation rows need a risk each")
    if (coverage is None) == (max_loss is None):
        raise ValueError("give exactly one target: coverage (share answered) or max_loss")
    if coverage is not None and not (isinstance(coverage, numbers.Real) and 0 < coverage <= 1):
        raise ValueError(f"coverage must be a number in (0, 1]; got {coverage!r}")
    if not isinstance(n_grid, numbers.Integral) or n_grid < 1:
        raise ValueError(f"n_grid must be a positive integer; got {n_grid!r}")
    conf = None if proba is None else confidence(proba)
    if conf is not None and conf.shape[0] != r.shape[0]:
        raise ValueError(f"risk has {r.shape[0]} rows but proba has {conf.shape[0]}")
    losses = _losses(loss, proba, y, classes, r.shape[0])
    if losses is None and (max_loss is not None or conf is not None):
        raise ValueError(
            "choosing thresholds by max_loss, or the two thresholds of Eq. 11, needs per-row "
            "losses: pass loss=..., or proba and the labels y"
        )
    n = r.shape[0]
    order = np.argsort(r, kind="stable")
    rs = r[order]
    cut = np.r_[rs[1:] != rs[:-1], True]  # a threshold may fall only after a run of ties
    if conf is None and coverage is not None:  # Eq. 10 by coverage: a quantile, no labels
        t = float(rs[int(np.ceil(coverage * n)) - 1])
        answered = r <= t
        mean = float(losses[answered].mean()) if losses is not None else float("nan")
        return RejectRule(t, None, float(answered.mean()), mean)
    grid = (
        np.array([-np.inf])
        if conf is None
        else np.unique(np.quantile(conf, np.linspace(0.0, 1.0, n_grid + 1)[:-1]))
    )
    # rows answered by (confidence threshold g, first i rows in risk order): cumulative sums
    keep = np.ones((1, n), bool) if conf is None else conf[order][None, :] >= grid[:, None]
    answered = np.cumsum(keep, axis=1)
    total_loss = np.cumsum(np.where(keep, losses[order][None, :], 0.0), axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_loss = total_loss / answered
    share = answered / n
    ok = cut[None, :] & (answered > 0)
    if max_loss is not None:
        ok &= mean_loss <= max_loss
        key = np.where(ok, share - 1e-12 * mean_loss, -np.inf)  # most answered, then least loss
    else:
        ok &= share >= coverage - 1e-12
        key = np.where(ok, -mean_loss + 1e-12 * share, -np.inf)  # least loss, then most answered
    best = int(np.argmax(key))
    if not np.isfinite(key.flat[best]):
        log.warning("no thresholds meet max_loss=%s on these rows: the rule rejects all", max_loss)
        return RejectRule(-np.inf, None if conf is None else float(np.inf), 0.0, float("nan"))
    g, i = np.unravel_index(best, key.shape)
    t1 = None if conf is None else float(grid[g])
    return RejectRule(float(rs[i]), t1, float(share[g, i]), float(mean_loss[g, i]))


def _check_risk(risk) -> np.ndarray:
    r = np.asarray(risk, dtype=float)
    if r.ndim != 1:
        raise ValueError(f"risk must be 1-D, one score per row; got shape {r.shape}")
    return r


def _losses(loss, proba, y, classes, n: int) -> np.ndarray | None:
    """Per-row validation losses: ``loss`` as given, or the 0/1 error of the top class."""
    if loss is not None:
        out = np.asarray(loss, dtype=float)
        if out.shape != (n,) or not np.isfinite(out).all():
            raise ValueError(f"loss must hold {n} finite numbers, one per row; got {out.shape}")
        return out
    if y is None or proba is None:
        return None
    p = np.asarray(proba, dtype=float)
    pred = (p >= 0.5).astype(int) if p.ndim == 1 else p.argmax(axis=1)
    y = np.asarray(y)
    if y.shape != (n,):
        raise ValueError(f"y must hold {n} labels, one per row; got shape {y.shape}")
    if classes is not None:
        codes = pd.Index(np.asarray(classes)).get_indexer(y)
        if (codes < 0).any():
            unknown = pd.unique(y[codes < 0])[:5].tolist()
            raise ValueError(f"y has labels {unknown} that are not in classes")
        y = codes
    elif not np.issubdtype(y.dtype, np.integer):
        raise ValueError("y must hold column indices of proba (integers), or pass classes=")
    return (pred != y).astype(float)
