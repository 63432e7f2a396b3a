"""Extrapolation-risk detectors: each says, for a row, how far it lies from the training data
(risk in [0, 1], higher = riskier). Builtin detectors read a classifier (margin, forest
dispersion, open-set forest); auxiliary ones model the data alone (box, CERT, chaos forest, FSPT,
and scikit-learn's isolation forest, LOF and kernel density as peers).
"""

from __future__ import annotations

import importlib

from ._base import DETECTORS, Detector, FeatureSpace, get_detector, load_all, register

_PUBLIC = {
    "BoxRisk": "box",
    "MarginRisk": "margin",
    "ForestDispersionRisk": "dispersion",
    "CERT": "cert",
    "CERTForest": "cert",
    "ChaosForest": "chaos",
    "FSPT": "fspt",
    "OpenSetForest": "openset",
    "IsolationForestRisk": "peers",
    "LOFRisk": "peers",
    "KDERisk": "peers",
    "CombinedRisk": "combined",
}

__all__ = [
    "DETECTORS",
    "Detector",
    "FeatureSpace",
    "get_detector",
    "load_all",
    "register",
    *_PUBLIC,
]


def __getattr__(name: str):
    if name in _PUBLIC:
        return getattr(importlib.import_module(f"{__name__}.{_PUBLIC[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
