"""MUNGE (Bucila, Caruana & Niculescu-Mizil 2006, "Model Compression", Algorithm 1): pseudo-data
drawn near the training data, for an ensemble to label and a mimic net to learn from (§4.4 of
the dissertation)."""

from __future__ import annotations

import math
import warnings
from numbers import Integral, Real

import numpy as np
import pandas as pd
from sklearn.neighbors import NearestNeighbors

from ..data import Columns, as_frame, check_features, coerce_numeric_text

__all__ = ["munge", "nearest_neighbours"]

BLOCK_ROWS = 65_536
"""Pseudo rows generated per vectorised block (bounds the temporaries, not the result)."""


def munge(X, size: int, p: float = 0.5, s: float = 10.0, random_state=None, update: str = "own"):
    """``size`` pseudo rows drawn by MUNGE from ``X``, of the same type, columns and dtypes.

    For each example e and its nearest neighbour e' (Euclidean distance on standardised numeric
    columns plus one per mismatching categorical column, Bucila et al. §3), each attribute is
    altered with probability ``p``: a continuous one is redrawn from a normal centred on e'`s
    value with standard deviation ``|e_a - e'_a| / s``, a categorical one takes e'`s value.
    Each pass over the data yields one pseudo row per example; passes repeat until ``size``
    rows (the last pass is a random subset of the examples, kept in their order).

    Deviation from Algorithm 1, for vectorisation: the paper walks the examples one by one and
    alters the neighbour e' too (e'_a from a normal centred on e's new value) inside the same
    pass, so the result depends on the order of the rows. Here every pseudo row is altered
    through its own neighbour only, which is the paper's alteration of e, and a pass is one
    array operation. Integer columns are rounded back to integers; categorical columns (strings,
    pandas categoricals, booleans) keep their dtype and categories.

    Missing values: a swapped attribute takes the neighbour's value, missing or not (a missing
    own value takes a known neighbour value without noise); an attribute left alone keeps its
    own, missing or not. So a pseudo cell is missing about as often as a data cell (exactly
    when the neighbours are missing at the data's rate). Distances read a missing numeric cell
    as the column mean plus a mismatch of 1 on a missing indicator; a missing categorical cell
    is a category of its own.

    ``update="pair"`` runs Algorithm 1 as the paper writes it instead: each pass walks a copy
    of the data in row order and alters both e and e' (e'_a from a normal centred on e's value
    before the alteration), so a row can be altered again as another row's neighbour; a
    Python loop over the rows, slower than the default ``"own"``.

    ``X``: an array (all columns numeric unless the array holds strings) or a DataFrame;
    ``p`` in [0, 1]; ``s`` > 0 (larger = pseudo values closer to the neighbour's).
    """
    size = _check_int(size, "size")
    if isinstance(p, bool) or not isinstance(p, Real) or not 0.0 <= p <= 1.0:
        raise ValueError(f"p={p!r}: the swap probability must be a number in [0, 1]")
    if isinstance(s, bool) or not isinstance(s, Real) or not s > 0 or not math.isfinite(s):
        raise ValueError(f"s={s!r}: the local variance parameter must be a finite number > 0")
    frame = coerce_numeric_text(as_frame(X))
    check_features(frame)
    n = len(frame)
    if n < 2:
        raise ValueError(f"X has {n} row; MUNGE needs at least 2 rows to find neighbours")
    if update not in UPDATES:
        raise ValueError(f"update={update!r}: must be one of {', '.join(UPDATES)}")
    rng = np.random.default_rng(random_state)
    columns = Columns.infer(frame)
    nn = nearest_neighbours(frame, columns)
    numeric = frame[list(columns.numeric)].to_numpy(np.float64, na_value=np.nan)
    new_numeric, taken = UPDATES[update](numeric, nn, size, len(columns.categorical), p, s, rng)
    return _assemble(X, frame, columns, new_numeric, taken)


def _own_update(numeric, nn, size: int, n_categorical: int, p: float, s: float, rng):
    """Pseudo numeric values and, per categorical column, the row whose value each pseudo row
    takes: every pseudo row altered through its own neighbour, in vectorised blocks."""
    source = _rows(len(numeric), size, rng)
    new_numeric = np.empty((size, numeric.shape[1]))
    taken = np.empty((size, n_categorical), dtype=np.int64)
    for start in range(0, size, BLOCK_ROWS):
        rows = source[start : start + BLOCK_ROWS]
        block = slice(start, start + rows.size)
        here, there = numeric[rows], numeric[nn[rows]]
        swap = rng.random(here.shape) < p
        noise = rng.standard_normal(here.shape) * (np.abs(here - there) / s)
        # a missing neighbour value is taken as missing; a missing own value takes the
        # neighbour's as it is (no distance, no noise): missingness stays at the data's rate
        new_numeric[block] = np.where(swap, there + np.nan_to_num(noise), here)
        swap_cat = rng.random(taken[block].shape) < p
        taken[block] = np.where(swap_cat, nn[rows][:, None], rows[:, None])
    return new_numeric, taken


def _pair_update(numeric, nn, size: int, n_categorical: int, p: float, s: float, rng):
    """As ``_own_update``, by the paper's Algorithm 1: each pass alters a copy of the data row
    by row, e and its neighbour e' together (e_a near e'_a, e'_a near e_a's old value, one
    standard deviation |e_a - e'_a| / s; categorical values exchanged). The last pass keeps a
    sorted random subset of its rows."""
    n, d = numeric.shape
    passes = []
    for _ in range(-(-size // n)):
        values = numeric.copy()
        taken = np.tile(np.arange(n)[:, None], (1, n_categorical))
        swap, swap_cat = rng.random((n, d)) < p, rng.random((n, n_categorical)) < p
        z_own, z_other = rng.standard_normal((n, d)), rng.standard_normal((n, d))
        for i in range(n):
            j, a, c = nn[i], swap[i], swap_cat[i]
            e, f = values[i, a], values[j, a]
            sd = np.abs(e - f) / s
            values[i, a] = f + np.nan_to_num(z_own[i, a] * sd)
            values[j, a] = e + np.nan_to_num(z_other[i, a] * sd)
            taken[i, c], taken[j, c] = taken[j, c], taken[i, c]
        passes.append((values, taken))
    rest = size - n * (len(passes) - 1)
    keep = np.sort(rng.choice(n, size=rest, replace=False)) if rest < n else np.arange(n)
    passes[-1] = (passes[-1][0][keep], passes[-1][1][keep])
    return np.vstack([v for v, _ in passes]), np.vstack([t for _, t in passes])


UPDATES = {"own": _own_update, "pair": _pair_update}
"""How a pass alters its rows: through each row's own neighbour only (vectorised, the default)
or the paper's sequential pair update."""


def nearest_neighbours(frame: pd.DataFrame, columns: Columns) -> np.ndarray:
    """Index of each row's nearest other row: squared distance = squared Euclidean distance of
    the standardised numeric columns + the number of mismatching categorical columns (one-hot
    columns scaled by 1/sqrt(2) make a mismatch count 1), found with scikit-learn's trees. A
    missing numeric cell sits at the mean and adds a 0/1 indicator; missing is a category."""
    parts = []
    if columns.numeric:
        numeric = frame[list(columns.numeric)].to_numpy(np.float64, na_value=np.nan)
        missing = np.isnan(numeric)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # an all-missing column
            mean, scale = np.nanmean(numeric, axis=0), np.nanstd(numeric, axis=0)
        scale = np.where(np.isfinite(scale) & (scale > 0), scale, 1.0)
        parts.append(np.where(missing, 0.0, (numeric - np.nan_to_num(mean)) / scale))
        if missing.any():
            parts.append(missing[:, missing.any(axis=0)].astype(np.float64))
    for name in columns.categorical:
        codes = pd.factorize(frame[name], use_na_sentinel=False)[0]
        one_hot = np.zeros((codes.size, codes.max() + 1))
        one_hot[np.arange(codes.size), codes] = np.sqrt(0.5)
        parts.append(one_hot)
    embedded = np.hstack(parts)
    _, index = NearestNeighbors(n_neighbors=1).fit(embedded).kneighbors()
    return index[:, 0]


def _rows(n: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """The example behind each pseudo row: whole passes in order, then a sorted random subset."""
    full, rest = divmod(size, n)
    last = np.sort(rng.choice(n, size=rest, replace=False))
    return np.concatenate([np.tile(np.arange(n), full), last])


def _assemble(X, frame: pd.DataFrame, columns: Columns, numeric: np.ndarray, taken: np.ndarray):
    """The pseudo rows in ``X``'s type: numeric values cast back to each column's dtype
    (integers rounded and clipped to the dtype), categorical cells copied from the rows whose
    value they took."""
    out = {}
    for j, name in enumerate(columns.numeric):
        out[name] = _cast(numeric[:, j], frame[name].dtype)
    for j, name in enumerate(columns.categorical):
        out[name] = frame[name].take(taken[:, j]).reset_index(drop=True)
    result = pd.DataFrame(out, columns=frame.columns)
    if isinstance(X, pd.DataFrame):
        result.columns = X.columns
        return result
    return result.to_numpy(dtype=np.asarray(X).dtype)


def _cast(values: np.ndarray, dtype) -> pd.Series:
    numpy_dtype = np.dtype(getattr(dtype, "numpy_dtype", dtype))
    if np.issubdtype(numpy_dtype, np.integer):
        info = np.iinfo(numpy_dtype)
        values = np.clip(np.rint(values), info.min, info.max)
    return pd.Series(values).astype(dtype)


def _check_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ValueError(f"{name}={value!r}: must be a positive integer")
    return int(value)
