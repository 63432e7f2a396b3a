"""Joining detectors with the selection engine (the Sandia report's §5 recommendation, made
concrete): risk is the probability that a point comes from the uniform background rather than
the data (Hooker 2004), so held-out training rows (label 0) against points drawn uniformly from
the bounding box (label 1) form a labelled set. Each detector's out-of-fold scores on it are
Platt-calibrated, and ensemble selection picks the weighted average of calibrated detectors that
minimises cross-entropy on it.

The same pieces serve the library builder (a ``detectors:`` section of a spec, one stored run per
detector) and ``CombinedRisk``, which does it all in memory for a user's own detectors.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, clone
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.utils.validation import check_is_fitted

from .._jobs import n_workers
from ..calibration import PlattCalibrator, cross_fit, cross_fit_groups
from ..data import as_frame, stratified_rows
from ..selection import EnsembleSelection
from ._base import DETECTORS, Detector, FeatureSpace, get_detector, load_all

log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_DETECTORS",
    "DETECTOR_ROWS",
    "Combination",
    "CombinedRisk",
    "DetectorSet",
    "FittedDetector",
    "fit_combination",
    "fit_detector",
]

DEFAULT_DETECTORS = (
    "box",
    "cert_forest",
    "chaos_forest",
    "fspt",
    "isolation_forest",
    "lof",
    "kde",
    "margin",
    "dispersion",
    "openset_forest",
)
"""What ``CombinedRisk`` joins by default (the builtin ones only when labels are given)."""


DETECTOR_ROWS = 5_000
"""A detector's fold sibling is fitted on at most this many of its training rows (a sample
stratified by class where there are labels, drawn with a seed fixed by the fold, so the same
data gives the same detector). Several detectors keep their training rows or grow with them
(LOF, KDE and the dispersion forest keep the rows; CERT, chaos and the builtin forests grow
about one leaf per few rows): on large tables LOF alone held gigabytes, and the saved model's
detectors grew with the data. The detectors' scale (Sandia report §4: a few thousand rows) is
kept, and every held-out row is still scored."""


@dataclass
class FittedDetector:
    """A detector's siblings, one per fold; a new row's risk is their mean (as a library member
    averages its siblings, §4.3.4)."""

    name: str
    siblings: list[Detector]

    def risk(self, X) -> np.ndarray:
        return np.mean([d.risk(X) for d in self.siblings], axis=0)

    def first_sibling(self) -> FittedDetector:
        """This detector answered by its first sibling alone (fitted without fold 0): K times
        smaller and faster. The siblings were needed to score every row out of fold for the
        combination; each data row's out-of-fold score came from one sibling, so one sibling's
        scores are on the scale the combination's calibrators were fitted to."""
        return FittedDetector(self.name, self.siblings[:1])

    def predict(self, X) -> np.ndarray:
        """``(1, n, 2)``: (data, background) probabilities, the library's member layout."""
        r = self.risk(X)
        return np.stack([1.0 - r, r], axis=-1)[None]


def fit_detector(
    detector: Detector,
    X: pd.DataFrame,
    y: np.ndarray | None,
    folds: np.ndarray,
    background: pd.DataFrame,
    max_rows: int | None = DETECTOR_ROWS,
) -> tuple[np.ndarray, FittedDetector]:
    """Out-of-fold risk of ``detector`` on the rows of ``X`` with a fold (``folds >= 0``), then on
    ``background``, concatenated; and the fitted siblings. Sibling ``k`` is fitted without fold
    ``k`` (on at most ``max_rows`` of those rows, see ``DETECTOR_ROWS``; None: all) and scores
    it; background points are scored by every sibling and averaged. Rows with fold -1 only
    train (a held-out hillclimb split)."""
    n_siblings = int(folds.max()) + 1
    scored = np.flatnonzero(folds >= 0)
    oof = np.empty(scored.size)
    back = np.zeros(len(background))
    siblings = []
    for k in range(n_siblings):
        train = np.flatnonzero(folds != k)
        if max_rows is not None and train.size > max_rows:
            strata = np.zeros(train.size, int) if y is None else np.asarray(y)[train]
            train = train[stratified_rows(strata, max_rows, random_state=k)]
        sibling = clone(detector)
        sibling.fit(X.iloc[train], None if y is None or not sibling.requires_y else y[train])
        held = folds[scored] == k
        oof[held] = sibling.risk(X.iloc[scored[held]])
        back += sibling.risk(background) / n_siblings
        siblings.append(sibling)
    return np.concatenate([oof, back]), FittedDetector(type(detector).name, siblings)


@dataclass
class Combination:
    """Platt calibrators, one per detector, and the selected weights over calibrated risks."""

    names: list[str]
    calibrators: list[PlattCalibrator]
    weights: np.ndarray

    def calibrated(self, R: np.ndarray, which=None) -> np.ndarray:
        """Calibrated risks of the detectors ``which`` (default all) from raw ``(D, n)`` risks."""
        which = range(len(self.calibrators)) if which is None else which
        return np.stack([self.calibrators[i].predict(R[i]) for i in which])

    def combined(self, R: np.ndarray) -> np.ndarray:
        """The weighted average of calibrated risks; 1 where every weighted detector says 1
        (every detector does outside its training box or for an unseen category, Sandia report
        §2.1). The calibrators only saw points inside the box, where a raw risk of 1 is rare
        and mostly held-out data rows at its edge: their fitted map may give such a row 0.9 or,
        with a slope fitted the wrong way, less than an ordinary training row."""
        keep = np.flatnonzero(self.weights > 0)  # a left-out detector's NaN must not leak in
        out = np.clip(self.weights[keep] @ self.calibrated(R, keep), 0.0, 1.0)
        if keep.size:  # (no weighted detector: all() over none would be True everywhere)
            out[(np.asarray(R, dtype=float)[keep] >= 1.0).all(axis=0)] = 1.0
        return out


def fit_combination(
    R: np.ndarray,
    background: np.ndarray,
    names: Sequence[str],
    random_state: int = 0,
) -> Combination:
    """Calibrate each detector's raw risks ``R`` ``(D, n)`` against ``background`` (1 for a
    uniform point, 0 for a held-out data row) and select the mixture that minimises
    cross-entropy. Selection sees cross-fitted calibrated scores (a row's calibrator never saw
    it); the returned calibrators are refitted on all rows."""
    R = np.asarray(R, dtype=float)
    t = np.asarray(background).astype(int)
    groups = cross_fit_groups(t.size, random_state)
    P = np.stack([cross_fit(PlattCalibrator, r, t, groups)[0] for r in R])
    usable = np.isfinite(P).all(axis=1)  # a detector with non-finite risks gets no weight
    if not usable.any():
        raise ValueError(
            f"every detector ({', '.join(names)}) gave non-finite risks; leave the spec's "
            "'detectors:' section out, or save the model with save(path, risk=False)"
        )
    if not usable.all():
        log.warning(
            "detector(s) %s gave non-finite risks: left out of the combined risk",
            [n for n, ok in zip(names, usable, strict=True) if not ok],
        )
    # No model bagging: it guards large libraries against overfitting, but with a handful of
    # detectors half-size bags often hold only weak ones.
    es = EnsembleSelection(metric="mxe", n_bags=1, bag_fraction=1.0, random_state=random_state)
    es.fit(P[usable], t)
    weights = np.zeros(len(R))
    weights[usable] = es.weights_
    calibrators = [PlattCalibrator().fit(r, t) for r in R]
    return Combination(list(names), calibrators, weights)


@dataclass
class DetectorSet:
    """Fitted detectors and the combination over them: what ``risk(X)`` needs at predict time."""

    fitted: list[FittedDetector]
    combination: Combination

    @classmethod
    def fit(cls, fitted: list[FittedDetector], R: np.ndarray, background, random_state=0):
        """Combine detectors whose out-of-fold raw risks on data rows and background points
        are the rows of ``R``."""
        names = _unique([f.name for f in fitted])
        return cls(list(fitted), fit_combination(R, background, names, random_state))

    @property
    def weights(self) -> pd.Series:
        return pd.Series(self.combination.weights, index=self.combination.names)

    def risks(self, X, n_jobs: int = 1, batch_rows: int = 10_000) -> pd.DataFrame:
        """One column per detector (its own raw risk) and ``combined``: detectors on
        ``n_jobs`` threads (None is 1, -1 every available CPU, -k all but k-1), rows
        ``batch_rows`` at a time."""
        frame = as_frame(X)
        workers = n_workers(n_jobs)
        pool = ThreadPoolExecutor(workers) if workers > 1 and len(self.fitted) > 1 else None
        map_ = pool.map if pool is not None else map
        try:
            parts = []
            for start in range(0, len(frame), max(1, int(batch_rows))):
                part = frame.iloc[start : start + batch_rows]
                parts.append(np.stack(list(map_(lambda f, p=part: f.risk(p), self.fitted))))
        finally:
            if pool is not None:
                pool.shutdown()
        R = np.concatenate(parts, axis=1) if parts else np.empty((len(self.fitted), 0))
        out = pd.DataFrame(R.T, columns=self.combination.names)
        out["combined"] = self.combination.combined(R)
        return out


def _unique(names: list[str]) -> list[str]:
    """Column names: a detector listed twice gets ``_2``, ``_3``, ... after its name."""
    seen: dict[str, int] = {}
    out = []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n}_{seen[n]}")
    return out


class CombinedRisk(BaseEstimator):
    """Detectors joined by selection: ``risk(X)`` is the calibrated probability that a row was
    drawn from the uniform background rather than the data, as a selected weighted average of
    Platt-calibrated detectors (see the module docstring).

    ``detectors``: names or Detector instances (default: ``DEFAULT_DETECTORS`` that are
    registered; builtin ones only when ``fit`` gets ``y``). ``cv`` folds give out-of-fold scores;
    ``n_background`` uniform points (default: as many as rows) come from the box of ``X`` or
    ``bounds``."""

    def __init__(self, detectors=None, cv: int = 5, n_background=None, bounds=None, random_state=0):
        self.detectors = detectors
        self.cv = cv
        self.n_background = n_background
        self.bounds = bounds
        self.random_state = random_state

    def fit(self, X, y=None):
        frame = as_frame(X)
        space, _ = FeatureSpace.fit(X, self.bounds)
        if not isinstance(self.cv, int) or self.cv < 2 or self.cv > len(frame):
            raise ValueError(f"cv={self.cv!r}: need an integer from 2 to the number of rows")
        detectors = _instances(self.detectors, with_labels=y is not None, seed=self.random_state)
        seed = int(np.random.default_rng(self.random_state).integers(2**31))
        n_bg = len(frame) if self.n_background is None else int(self.n_background)
        background = space.decode(space.uniform(n_bg, seed))
        if y is not None:
            y = np.asarray(y)
            split = StratifiedKFold(self.cv, shuffle=True, random_state=seed).split(frame, y)
        else:
            split = KFold(self.cv, shuffle=True, random_state=seed).split(frame)
        folds = np.empty(len(frame), dtype=int)
        for k, (_, held) in enumerate(split):
            folds[held] = k
        rows, fitted = [], []
        for det in detectors:
            r, f = fit_detector(det, frame, y, folds, background)
            rows.append(r)
            fitted.append(f)
        labels = np.r_[np.zeros(len(frame)), np.ones(n_bg)]
        self.detectors_ = DetectorSet.fit(fitted, np.stack(rows), labels, seed)
        self.weights_ = self.detectors_.weights
        return self

    def risks(self, X) -> pd.DataFrame:
        """One column per detector (its own raw risk) and ``combined``."""
        check_is_fitted(self, "detectors_")
        return self.detectors_.risks(X)

    def risk(self, X) -> np.ndarray:
        return self.risks(X)["combined"].to_numpy()


def _instances(detectors, with_labels: bool, seed) -> list[Detector]:
    if detectors is None:
        load_all()
        detectors = [n for n in DEFAULT_DETECTORS if n in DETECTORS]
        if not with_labels:
            detectors = [n for n in detectors if not DETECTORS[n].requires_y]
    out = []
    for d in detectors:
        det = get_detector(d)() if isinstance(d, str) else d
        if not isinstance(det, Detector):
            raise TypeError(f"detectors must be names or ensel.risk Detector instances; got {d!r}")
        if det.requires_y and not with_labels:
            raise ValueError(f"detector {det.name!r} needs labels: call fit(X, y)")
        if "random_state" in det.get_params() and det.get_params()["random_state"] is None:
            det = clone(det).set_params(random_state=seed)
        out.append(det)
    if not out:
        raise ValueError("no detectors to combine; pass detectors=[...] with at least one")
    return out
