"""Model compression (§4.4): MUNGE pseudo-data, mimic nets trained on an ensemble's
probabilities (or a regressor's predictions), and export to ONNX or TorchScript. torch, onnx
and onnxruntime are optional (``pip install 'ensel[compress]'``) and imported only when
needed."""

from __future__ import annotations

from .mimic import MimicClassifier, MimicRegressor, compress, fit_mimic, label, label_values
from .munge import munge

__all__ = [
    "MimicClassifier",
    "MimicRegressor",
    "compress",
    "fit_mimic",
    "label",
    "label_values",
    "munge",
]
