"""The scikit-learn estimators: :class:`EnsembleSelectionClassifier` and
:class:`EnsembleSelectionRegressor` (their shared base in ``_base``), the budget planning of a
fit under ``time_limit`` (``budget``) and the saved-model format (``persistence``)."""

from __future__ import annotations

from ._base import EnsembleSelectionBase
from .classifier import EnsembleSelectionClassifier
from .regressor import EnsembleSelectionRegressor

__all__ = ["EnsembleSelectionClassifier", "EnsembleSelectionRegressor", "load_model"]


def load_model(path) -> EnsembleSelectionClassifier | EnsembleSelectionRegressor:
    """Read a classifier or a regressor written by ``save`` (this unpickles: load only files
    you trust)."""
    return EnsembleSelectionBase.load(path)
