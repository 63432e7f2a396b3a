"""The finalise stage of a fit: what a fitted estimator keeps of its library once selection
has weighed it (the members with weight and their fitted runs, the leaderboard, the columns,
the detectors and their combination)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..library.data.sources import is_source
from ..metrics import score_batch
from ..risk.combined import DetectorSet

__all__ = ["kept_attributes"]

LEADERBOARD_ROWS = 20_000
"""The leaderboard scores every member on every metric on at most this many hillclimb rows (a
fixed sample of them beyond): scoring a hundred members on eight metrics over every row of a
bagged large table takes seconds per 10,000 rows, and a ranking needs no more rows than this."""


def kept_attributes(est, lib, P: np.ndarray, weights: np.ndarray, X, y, groups, seed: int) -> dict:
    """The fitted attributes of ``est`` (by name) from the library ``lib``, its hillclimb
    matrix ``P`` and the selected ``weights``: the members with weight (refitted on all of
    ``X, y`` where ``refit="full"``), the leaderboard, the columns, the detectors."""
    keep = np.flatnonzero(weights > 0)
    members = lib.members.iloc[keep].assign(weight=weights[keep]).reset_index(drop=True)
    fitted = lib.subset(members["id"])
    if est.refit == "full":
        if is_source(X):
            raise ValueError(
                "refit='full' needs the training rows in memory; with a parquet path or a "
                "dask DataFrame use refit=None (the members' fold siblings)"
            )
        fitted = lib.refit_full(fitted, X, y, groups, random_state=seed, n_jobs=est.n_jobs)
    out = {
        "leaderboard_": leaderboard(lib, P, weights),
        "members_": members,
        "weights_": weights[keep],
        "fitted_members_": fitted,
        "columns_": list(lib.columns),  # the columns the members use
        "input_columns_": list(lib.input_columns),  # the columns given to fit
        "dropped_columns_": dict(lib.dropped),  # left out: all missing or constant
        "categories_": dict(lib.categories),
        "n_features_in_": len(lib.input_columns),
        "detectors_": detector_set(lib, seed),
        "library_path_": None if lib.temporary else str(Path(lib.store.path).resolve()),
    }
    if isinstance(X, pd.DataFrame) or is_source(X):
        out["feature_names_in_"] = np.asarray(out["input_columns_"], dtype=object)
    elif hasattr(est, "feature_names_in_"):  # refitted on an array: no names now
        del est.feature_names_in_
    return out


def detector_set(lib, random_state: int):
    """The library's detectors, combined by selection on data rows vs background points."""
    dets = lib.detectors
    if dets is None:
        return None
    fitted = list(dets.subset().runs.values())  # one member per detector run
    combined = DetectorSet.fit(fitted, np.asarray(dets.predictions), dets.y, random_state)
    # the fold siblings scored every row out of fold for the combination; risk(X) needs one
    return DetectorSet([f.first_sibling() for f in combined.fitted], combined.combination)


def leaderboard(lib, P: np.ndarray, weights: np.ndarray) -> pd.DataFrame:
    """Every member's description, its hillclimb score on each metric of the library's task
    (on at most ``LEADERBOARD_ROWS`` of the hillclimb rows), and its weight."""
    board = lib.members[["id", "family", "params", "calibration", "stage"]].copy()
    n_rows = P.shape[1]
    if n_rows <= LEADERBOARD_ROWS:
        scores = lib.member_scores(P)
    else:  # a fixed sample of the rows, in their order
        rows = np.sort(np.random.default_rng(0).choice(n_rows, LEADERBOARD_ROWS, replace=False))
        y, sample = np.asarray(lib.y)[rows], P[:, rows]
        scores = {name: score_batch(name, y, sample) for name in lib.metric_names}
    for name, values in scores.items():
        board[name] = values
    board["weight"] = weights
    return board
