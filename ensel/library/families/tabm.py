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
import importlib
import io
import logging
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._base import ConstantRun, Family, Run, encode_labels, full_proba, register
from ._traits import NATIVE_TABLE, CostModel, FamilyTraits, StageWork
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
class PytabkitRun(Run):
    """A fitted pytabkit classifier behind the preprocessing its inputs need; ``forward`` is
    its family's multiply-adds per row (``forward_work(params, width, outputs)``)."""

    prep: _Preprocess
    model: Any  # pytabkit's fitted classifier
    classes: np.ndarray
    n_classes: int
    params: dict[str, Any]
    forward: Callable[[dict[str, Any], float, int], float]

    def predict(self, X: np.ndarray, stages=None) -> dict[str, np.ndarray]:
        """The model's probabilities (one stage); a row it cannot score gets the uniform one.
        Nothing global is touched here (the estimator predicts runs on threads); pytabkit sets
        its own thread count around it."""
        proba = self.model.predict_proba(_frame(self.prep, X))
        out = full_proba(np.asarray(proba, dtype=np.float64), self.classes, self.n_classes)
        bad = ~np.isfinite(out).all(axis=1)
        out[bad] = 1.0 / self.n_classes
        return {"none": out[None]}

    @property
    def weights(self) -> float:
        """Multiply-adds of one row's forward pass (inputs: the numeric columns, indicators and
        one-hot categories)."""
        width = self.prep.n_numeric + int((self.prep.cardinality + 1).sum())
        return self.forward(self.params, width, len(self.classes))


def pytabkit_params(
    params: dict[str, Any], sizes: tuple[str, ...], rates: tuple[str, ...], rename: dict[str, str]
) -> dict[str, int | float]:
    """pytabkit's keyword arguments from a family's params: ``sizes`` as ints, ``rates`` as
    floats, each under its pytabkit name (``rename``, else the same name)."""
    cast = [(key, int) for key in sizes] + [(key, float) for key in rates]
    return {rename.get(key, key): kind(params[key]) for key, kind in cast}


def fit_pytabkit(model: str, hyper: dict, forward, X, y, n_classes, params, seed, categorical):
    """Fit pytabkit's classifier ``model`` (its class name) with the keyword arguments ``hyper``
    on one CPU thread, seeded by ``seed``; a single-class fold gets a constant run."""
    classes, codes = encode_labels(y)
    if len(classes) == 1:
        return ConstantRun(int(classes[0]), 1, n_classes)
    with _quiet():  # pytabkit's import warns about torch.jit, an all-missing column's median
        # about an all-NaN slice
        model_class = getattr(importlib.import_module("pytabkit"), model)
        prep = _Preprocess.fit(np.asarray(X, dtype=np.float64), dict(categorical or {}))
        fitted = model_class(
            random_state=int(seed) % 2**31, n_threads=1, verbosity=0, device="cpu", **hyper
        )
        fitted.fit(_frame(prep, X), np.asarray(codes))
    return PytabkitRun(prep, fitted, classes, n_classes, dict(params), forward)


PYTABKIT = {**NATIVE_TABLE, "requires": ("pytabkit",)}
"""What every pytabkit family declares to the registry: ``fit_pytabkit`` reads the native table,
missing values and categories included (``_frame``), and needs pytabkit installed."""


def check_sizes_no_stages(family: str, params, sizes: tuple[str, ...], stages, why: str) -> None:
    """Raise a ValueError naming ``family`` for a size in ``sizes`` below 1, or for any stages
    (one net per run; ``why`` says what picks its epoch)."""
    for key in sizes:
        if int(params[key]) < 1:
            raise ValueError(f"{family} {key} must be at least 1, got {params[key]!r}")
    if stages:
        raise ValueError(f"{family} has no stages ({why}), got {stages!r}")


def pytabkit_work(run, params, stages, width, outputs) -> StageWork:
    """One forward pass of the fitted net per stage (``PytabkitRun.weights``: for TabM every
    member's pass through the shared blocks)."""
    return [(1.0, float(unwrap(run).weights))] * len(stages)


def forward_work(params: dict[str, Any], width: float, outputs: int) -> float:
    """Multiply-adds per row of a TabM net on ``width`` inputs: ``k`` members through
    ``n_blocks`` blocks of ``d_block`` units and the output layer."""
    d = float(params.get("d_block", 256))
    blocks = int(params.get("n_blocks", 3))
    return float(params.get("k", 8)) * (width * d + (blocks - 1) * d * d + d * max(outputs, 2))


MODEL = "TabM_D_Classifier"
"""pytabkit's class that fits TabM."""

SIZES = ("k", "d_block", "n_blocks", "max_epochs")
"""TabM's integer params, each at least 1."""


def fit_tabm(X, y, *, n_classes, params, stages, random_state, categorical=None):
    """Fit TabM on one thread; its early stopping holds out a fifth of these rows (pytabkit's
    ``val_fraction``), never the fold the library predicts out of fold."""
    hyper = pytabkit_params(
        params, SIZES, ("dropout", "lr"), {"k": "tabm_k", "max_epochs": "n_epochs"}
    )
    return fit_pytabkit(
        MODEL, hyper, forward_work, X, y, n_classes, params, random_state, categorical
    )


def validate_tabm(params: dict[str, Any], stages: tuple[int, ...] | None) -> None:
    """Reject non-positive sizes, stages (TabM has none) and rates outside their ranges."""
    check_sizes_no_stages("tabm", params, SIZES, stages, "early stopping picks its epoch")
    if not params["lr"] > 0 or not 0 <= params["dropout"] < 1:
        raise ValueError(f"tabm needs lr > 0 and dropout in [0, 1), got {params!r}")


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
        predict_work=constant_or(pytabkit_work),
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
        test_params={"k": 2, "d_block": 32, "n_blocks": 2, "max_epochs": 30},
        validate=validate_tabm,
        **PYTABKIT,
    )
)
