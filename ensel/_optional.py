"""Optional dependencies, imported lazily with a message that says which extra installs them."""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["import_optional"]


def import_optional(module: str, extra: str, purpose: str) -> ModuleType:
    """``module``, or an ImportError that names ``purpose`` and ``pip install ensel[extra]``."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"{purpose} needs the {module.split('.')[0]} package, which is not installed: "
            f'pip install "ensel[{extra}]"'
        ) from exc
