"""ensel: ensemble selection from libraries of models (Caruana & Niculescu-Mizil), with model
compression and extrapolation-risk detectors."""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["EnsembleSelectionClassifier", "EnsembleSelectionRegressor", "__version__"]


def __getattr__(name: str):
    """``from ensel import EnsembleSelectionClassifier`` (or ``...Regressor``) without importing
    the library builder on ``import ensel``."""
    if name in ("EnsembleSelectionClassifier", "EnsembleSelectionRegressor"):
        from . import estimator

        return getattr(estimator, name)
    raise AttributeError(f"module 'ensel' has no attribute {name!r}")
