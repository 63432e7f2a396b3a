"""TabM (Gorishniy et al. 2025): an MLP that trains ``k`` members at once, sharing their weights
up to a per-member scaling (BatchEnsemble), and predicts their mean probability; early stopping
on a fifth of the training fold. pytabkit's implementation (``pip install pytabkit``).

Not in the paper's grid. It is here because, among the modern tabular nets, it is the one whose
CPU cost fits a small table's spare budget, with ``k = 8`` members of width 256 rather than
pytabkit's default ``k = 32`` of width 512 (docs/decisions.md, "Spare time").
Numeric columns reach it median-imputed, with a 0/1 indicator for each column that had missing
values in training (pytabkit then applies its own quantile transform); categorical columns as
categories, with one more level for missing and unseen values.
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
from ._traits import CostModel, FamilyTraits, StageWork
from ._work import FLOAT, constant_or, unwrap
from .tabular_mlp import _Preprocess

_QUIET = ("lightning", "lightning.pytorch", "pytorch_lightning", "lightning_fabric")


@contextlib.contextmanager
def _quiet():
    """pytabkit without its console output (it sets torch's thread count itself, from
    ``n_threads``, and restores it). For fits only: they run one to a process (or alone), and
    this swaps process-wide state."""
    levels = {name: logging.getLogger(name).level for name in _QUIET}
    try:
        for name in _QUIET:
            logging.getLogger(name).setLevel(logging.ERROR)
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


def _frame(prep: _Preprocess, X: np.ndarray):
    """A DataFrame pytabkit reads: the numeric columns median-filled, then a 0/1 indicator for
    each that had missing values in training, then category columns whose level 0 stands for
    missing and unseen values (``_Preprocess.impute``, tabular_mlp's own)."""
    import pandas as pd

    filled, missing, index = prep.impute(X)
    numeric = np.hstack([filled, missing[:, prep.indicate]])
    columns = {f"x{j}": numeric[:, j] for j in range(numeric.shape[1])}
    for j, levels in enumerate(prep.cardinality):
        columns[f"c{j}"] = pd.Categorical(index[:, j], categories=range(int(levels) + 1))
    return pd.DataFrame(columns)


@dataclass
class _TabMRun:
    prep: _Preprocess
    model: Any  # pytabkit's fitted TabM_D_Classifier
    classes: np.ndarray
    n_classes: int
    params: dict[str, Any]

    def predict(self, X: np.ndarray, stages=None) -> dict[str, np.ndarray]:
        """The members' mean probability (one stage). Nothing global is touched here (the
        estimator predicts runs on threads); pytabkit sets its own thread count around it."""
        proba = self.model.predict_proba(_frame(self.prep, X))
        out = full_proba(np.asarray(proba, dtype=np.float64), self.classes, self.n_classes)
        bad = ~np.isfinite(out).all(axis=1)
        out[bad] = 1.0 / self.n_classes
        return {"none": out[None]}

    @property
    def weights(self) -> float:
        """Multiply-adds of one row's forward pass: every member runs the shared blocks (inputs
        are the numeric columns, indicators and one-hot categories)."""
        width = self.prep.n_numeric + int((self.prep.cardinality + 1).sum())
        return forward_work(self.params, width, len(self.classes))


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
    with _quiet():  # pytabkit's import warns about torch.jit; an all-missing column's median
        from pytabkit import TabM_D_Classifier

        prep = _Preprocess.fit(np.asarray(X, dtype=np.float64), dict(categorical or {}))
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
        model.fit(_frame(prep, X), np.asarray(codes))
    return _TabMRun(prep, model, classes, n_classes, dict(params))


def validate_tabm(params: dict[str, Any], stages: tuple[int, ...] | None) -> None:
    """Reject non-positive sizes, rates outside their ranges, and stages (TabM has none)."""
    for key in ("k", "d_block", "n_blocks", "max_epochs"):
        if int(params[key]) < 1:
            raise ValueError(f"tabm {key} must be at least 1, got {params[key]!r}")
    if not params["lr"] > 0 or not 0 <= params["dropout"] < 1:
        raise ValueError(f"tabm needs lr > 0 and dropout in [0, 1), got {params!r}")
    if stages:
        raise ValueError(f"tabm has no stages (early stopping picks its epoch), got {stages!r}")


def _work(run, params, stages, width, outputs) -> StageWork:
    """TabM: every member's forward pass through the shared blocks (``_TabMRun.weights``)."""
    return [(1.0, float(unwrap(run).weights))] * len(stages)


def _relative_cost(params: dict[str, Any], stages: tuple[int, ...] | None) -> float:
    """Members times the square of the block width."""
    return float(params.get("k", 8)) * float(params.get("d_block", 256)) ** 2


# early stopping ends a fit after a data-dependent number of epochs: the calibration's pilots
# set the epochs a typical fit takes, so the fit work counts one pass over the rows
TABM = FamilyTraits(
    rank=9,
    relative_cost=_relative_cost,
    cost=CostModel(
        fit=lambda s: s.n * forward_work(s.params, s.d, s.k),
        memory=lambda s: FLOAT * s.n * s.d + FLOAT * 4 * forward_work(s.params, s.d, s.k),
        predict=lambda s: (1.0, forward_work(s.params, s.d, s.k)),
        predict_work=constant_or(_work),
        memory_factor=4.0,
    ),
)


register(
    Family(
        name="tabm",
        traits=TABM,
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
