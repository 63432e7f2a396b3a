"""TabM (Gorishniy et al. 2025): an MLP that trains ``k`` members at once, sharing their weights
up to a per-member scaling (BatchEnsemble), and predicts their mean probability; early stopping
on a fifth of the training fold. pytabkit's implementation (``pip install pytabkit``).

Not in the paper's grid. It is here because, among the modern tabular nets, it is the one whose
CPU cost fits a small table's spare budget: with ``k = 8`` members of width 256 a fit of 1,400
rows took 5 s on one thread and predicted 40-70 µs a row, against 48 s and ~400 µs for pytabkit's
default ``k = 32`` of width 512 (docs/benchmarks.md, "TabM members"). Numeric columns reach it
median-imputed, with a 0/1 indicator for each column that had missing values in training
(pytabkit then applies its own quantile transform); categorical columns as categories, with
one more level for missing and unseen values.
"""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._base import ConstantRun, Family, encode_labels, full_proba, register

_QUIET = ("lightning", "lightning.pytorch", "pytorch_lightning", "lightning_fabric")


@contextlib.contextmanager
def _quiet(threads: int):
    """Run pytabkit on ``threads`` torch threads (restored after), without its console output.
    For fits only: they run one to a process (or alone), and this swaps process-wide state."""
    import torch

    before = torch.get_num_threads()
    levels = {name: logging.getLogger(name).level for name in _QUIET}
    try:
        torch.set_num_threads(threads)
        for name in _QUIET:
            logging.getLogger(name).setLevel(logging.ERROR)
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        torch.set_num_threads(before)
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


@dataclass
class _Inputs:
    """Median imputation with missing indicators for numeric columns; categorical codes shifted
    by one so that 0 stands for missing and unseen values."""

    numeric: np.ndarray
    categorical: np.ndarray
    median: np.ndarray
    indicate: np.ndarray
    cardinality: np.ndarray

    @classmethod
    def fit(cls, X: np.ndarray, categorical: dict[int, int]) -> _Inputs:
        cat = np.array(sorted(categorical), dtype=int)
        num = np.setdiff1d(np.arange(X.shape[1]), cat)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            median = np.nan_to_num(np.nanmedian(X[:, num], axis=0)) if num.size else np.zeros(0)
        indicate = np.flatnonzero(np.isnan(X[:, num]).any(axis=0)) if num.size else num
        cardinality = np.array([categorical[j] for j in cat], dtype=int)
        return cls(num, cat, median, indicate, cardinality)

    @property
    def width(self) -> int:
        """Inputs the net sees: numeric columns, indicators, one-hot levels."""
        return int(self.numeric.size + self.indicate.size + (self.cardinality + 1).sum())

    def frame(self, X: np.ndarray):
        """A DataFrame pytabkit reads: float columns, then category columns."""
        import pandas as pd

        X = np.asarray(X, dtype=np.float64)
        values = X[:, self.numeric]
        missing = np.isnan(values)
        numeric = np.hstack([np.where(missing, self.median, values), missing[:, self.indicate]])
        columns = {f"x{j}": numeric[:, j] for j in range(numeric.shape[1])}
        codes = X[:, self.categorical]
        valid = np.isfinite(codes) & (codes >= 0) & (codes < self.cardinality)
        index = np.where(valid, np.nan_to_num(codes) + 1, 0).astype(np.int64)
        for j, levels in enumerate(self.cardinality):
            columns[f"c{j}"] = pd.Categorical(index[:, j], categories=range(int(levels) + 1))
        return pd.DataFrame(columns)


@dataclass
class _TabMRun:
    inputs: _Inputs
    model: Any  # pytabkit's fitted TabM_D_Classifier
    classes: np.ndarray
    n_classes: int
    params: dict[str, Any]

    def predict(self, X: np.ndarray, stages=None) -> dict[str, np.ndarray]:
        """The members' mean probability (one stage). Nothing global is touched here (the
        estimator predicts runs on threads); pytabkit sets its own thread count around it."""
        proba = self.model.predict_proba(self.inputs.frame(X))
        out = full_proba(np.asarray(proba, dtype=np.float64), self.classes, self.n_classes)
        bad = ~np.isfinite(out).all(axis=1)
        out[bad] = 1.0 / self.n_classes
        return {"none": out[None]}

    @property
    def weights(self) -> float:
        """Multiply-adds of one row's forward pass: every member runs the shared blocks (inputs
        are the numeric columns, indicators and one-hot categories)."""
        return forward_work(self.params, self.inputs.width, len(self.classes))


def forward_work(params: dict[str, Any], width: float, outputs: int) -> float:
    """Multiply-adds per row of a TabM net on ``width`` inputs: ``k`` members through
    ``n_blocks`` blocks of ``d_block`` units and the output layer."""
    d = float(params.get("d_block", 256))
    blocks = int(params.get("n_blocks", 3))
    return float(params.get("k", 8)) * (width * d + (blocks - 1) * d * d + d * max(outputs, 2))


def fit_tabm(X, y, *, n_classes, params, stages, random_state, categorical=None):
    """Fit TabM on one thread; its early stopping holds out a fifth of these rows (pytabkit's
    ``val_fraction``), never the fold the library predicts out of fold."""
    classes, codes = encode_labels(y)
    if len(classes) == 1:
        return ConstantRun(int(classes[0]), 1, n_classes)
    inputs = _Inputs.fit(np.asarray(X, dtype=np.float64), dict(categorical or {}))
    with _quiet(1):  # pytabkit's import warns about torch.jit
        from pytabkit import TabM_D_Classifier

        model = TabM_D_Classifier(
            random_state=int(random_state) % 2**31,
            n_threads=1,
            verbosity=0,
            device="cpu",
            tabm_k=int(params["k"]),
            d_block=int(params["d_block"]),
            n_blocks=int(params["n_blocks"]),
            dropout=float(params["dropout"]),
            lr=float(params["lr"]),
            n_epochs=int(params["max_epochs"]),
        )
        model.fit(inputs.frame(X), np.asarray(codes))
    return _TabMRun(inputs, model, classes, n_classes, dict(params))


def validate_tabm(params: dict[str, Any], stages: tuple[int, ...] | None) -> None:
    """Reject non-positive sizes, rates outside their ranges, and stages (TabM has none)."""
    for key in ("k", "d_block", "n_blocks", "max_epochs"):
        if int(params[key]) < 1:
            raise ValueError(f"tabm {key} must be at least 1, got {params[key]!r}")
    if not params["lr"] > 0 or not 0 <= params["dropout"] < 1:
        raise ValueError(f"tabm needs lr > 0 and dropout in [0, 1), got {params!r}")
    if stages:
        raise ValueError(f"tabm has no stages (early stopping picks its epoch), got {stages!r}")


register(
    Family(
        name="tabm",
        fit=fit_tabm,
        params={
            "k": 8,
            "d_block": 256,
            "n_blocks": 3,
            "dropout": 0.1,
            "lr": 0.002,
            "max_epochs": 1000,
        },
        view="native",
        native_missing=True,
        requires=("pytabkit",),
        test_params={"k": 2, "d_block": 32, "n_blocks": 2, "max_epochs": 30},
        validate=validate_tabm,
        categorical=True,
    )
)
