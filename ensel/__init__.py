"""ensel: ensemble selection from libraries of models (Caruana & Niculescu-Mizil), with model
compression and extrapolation-risk detectors."""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["__version__"]
