"""RealMLP (Holzmüller et al. 2024, "Better by default"): an MLP with tuned defaults (robust
scaling and smooth clipping of numeric columns, periodic (PBLD) embeddings of numeric features,
one-hot or embedded categoricals, a parametric SELU activation, scheduled dropout, weight decay
and learning rate, label smoothing), pytabkit's implementation (``pip install pytabkit``).

It trains on the training fold with a fifth held out to pick the best epoch (pytabkit's
``val_fraction``), never the fold the library predicts out of fold. Inputs reach it as they
reach TabM: numeric columns median-imputed with a 0/1 indicator for each column that had
missing values in training, categorical columns as categories with one more level for missing
and unseen values.
"""

from __future__ import annotations

from typing import Any

from ._base import Family, register
from ._traits import CostModel, FamilyTraits
from ._work import FLOAT, constant_or
from .tabm import PYTABKIT, check_sizes_no_stages, fit_pytabkit, pytabkit_params, pytabkit_work

__all__ = ["fit_realmlp", "forward_work", "validate_realmlp"]

EMBED_HIDDEN, EMBED_OUT = 16, 4
"""Widths of the periodic embedding of one numeric feature (pytabkit's ``plr_hidden_1``,
``plr_hidden_2``): each input column becomes ``EMBED_OUT`` values."""


def forward_work(params: dict[str, Any], width: float, outputs: int) -> float:
    """Multiply-adds per row of a RealMLP on ``width`` inputs: the embedding of each input,
    ``n_hidden_layers`` layers of ``hidden_width`` units and the output layer."""
    hidden = float(params.get("hidden_width", 256))
    layers = int(params.get("n_hidden_layers", 3))
    embed = width * (EMBED_HIDDEN + EMBED_HIDDEN * EMBED_OUT)
    first = width * EMBED_OUT * hidden
    return embed + first + (layers - 1) * hidden * hidden + hidden * max(outputs, 2)


MODEL = "RealMLP_TD_Classifier"
"""pytabkit's class that fits RealMLP."""

SIZES = ("hidden_width", "n_hidden_layers", "n_epochs")
"""RealMLP's integer params, each at least 1."""


def fit_realmlp(X, y, *, n_classes, params, stages, random_state, categorical=None):
    """Fit RealMLP on one thread for ``n_epochs`` epochs, keeping the epoch best on its own
    validation fifth."""
    hyper = pytabkit_params(params, SIZES, ("lr", "p_drop", "wd", "ls_eps"), {})
    return fit_pytabkit(
        MODEL, hyper, forward_work, X, y, n_classes, params, random_state, categorical
    )


def validate_realmlp(params: dict[str, Any], stages: tuple[int, ...] | None) -> None:
    """Reject non-positive sizes, stages (one net per run) and rates outside their ranges."""
    check_sizes_no_stages("realmlp", params, SIZES, stages, "it keeps its best epoch")
    if not params["lr"] > 0 or params["wd"] < 0:
        raise ValueError(f"realmlp needs lr > 0 and wd >= 0, got {params!r}")
    if not 0 <= params["p_drop"] < 1 or not 0 <= params["ls_eps"] < 1:
        raise ValueError(f"realmlp p_drop and ls_eps must be in [0, 1), got {params!r}")


def _relative_cost(params: dict[str, Any], stages: tuple[int, ...] | None) -> float:
    """Epochs times the hidden layers' weights."""
    hidden = float(params.get("hidden_width", 256))
    return float(params.get("n_epochs", 256)) * float(params.get("n_hidden_layers", 3)) * hidden**2


def _fit_work(s) -> float:
    """Forward and backward passes (about three forward passes) over the rows, every epoch."""
    return 3.0 * s.n * float(s.params.get("n_epochs", 256)) * forward_work(s.params, s.d, s.k)


FIRST_ESTIMATE = {
    "fit": {"overhead_s": 1.0, "s_per_unit": 2.2e-10},
    "predict": {"ms_per_call": 0.0, "ms_per_unit": 5.1e-05},
}
"""Cost constants until ``benchmarks/calibrate_costs.py`` measures the family: the fit's from
one default fit on a small table (pytabkit's setup, then the epochs' work), the predict's
TabM's (the same kind of torch forward pass)."""


register(
    Family(
        name="realmlp",
        traits=FamilyTraits(
            rank=9.5,  # beside TabM, after the tabular MLP
            relative_cost=_relative_cost,
            cost=CostModel(
                fit=_fit_work,
                memory=lambda s: FLOAT * s.n * s.d + FLOAT * 4 * forward_work(s.params, s.d, s.k),
                predict=lambda s: (1.0, forward_work(s.params, s.d, s.k)),
                predict_work=constant_or(pytabkit_work),
                memory_factor=4.0,
                constants=FIRST_ESTIMATE,
            ),
        ),
        fit=fit_realmlp,
        params={
            "hidden_width": 256,
            "n_hidden_layers": 3,
            "n_epochs": 256,
            "lr": 0.04,
            "p_drop": 0.15,
            "wd": 0.02,
            "ls_eps": 0.1,
        },
        test_params={"hidden_width": 16, "n_hidden_layers": 2, "n_epochs": 4},
        validate=validate_realmlp,
        **PYTABKIT,
    )
)
