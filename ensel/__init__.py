"""ensel: ensemble selection from libraries of models (Caruana & Niculescu-Mizil), with model
compression and extrapolation-risk detectors."""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["EnsembleSelectionClassifier", "__version__"]


def __getattr__(name: str):
    """``from ensel import EnsembleSelectionClassifier`` without importing the library builder
    on ``import ensel``."""
    if name == "EnsembleSelectionClassifier":
        from .estimator import EnsembleSelectionClassifier

        return EnsembleSelectionClassifier
    raise AttributeError(f"module 'ensel' has no attribute {name!r}")
