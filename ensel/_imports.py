"""Optional dependencies, imported only when a feature needs them, with a message that says which
extra to install (the pattern of optuna's ``_imports.py``)."""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["optional"]

EXTRAS = {
    "torch": "compress",
    "onnx": "compress",
    "onnxruntime": "compress",
    "skl2onnx": "deploy",
    "dask": "dask",
    "distributed": "dask",
    "pyarrow": "dask",
    "pgmpy": "bayesnet",
    "networkx": "bayesnet",
    "matplotlib": "report",
}
"""The ``pip install ensel[extra]`` that provides each optional module."""


def optional(module: str, purpose: str) -> ModuleType:
    """Import ``module`` or raise an ImportError that names ``purpose`` and the extra to install.

    torch is listed in the ``compress`` extra; install its CPU build first
    (``pip install torch --index-url https://download.pytorch.org/whl/cpu``) on machines
    whose default index serves the multi-gigabyte CUDA wheels."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        extra = EXTRAS.get(module.split(".")[0])
        hint = f"pip install 'ensel[{extra}]'" if extra else f"pip install {module}"
        raise ImportError(
            f"{purpose} needs the optional package {module!r}, which is not installed: {hint}"
        ) from exc
