"""Model families, one small fit function each, registered by name (App. 4.B's model grid).

Importing this package imports every module in it, and each module registers its families, so a
new family is one module here plus a spec entry; ``get_family(name)`` finds one.
"""

from __future__ import annotations

import importlib
import pkgutil

from ._base import (
    FAMILIES,
    REGRESSORS,
    VIEWS,
    Family,
    Run,
    get_family,
    missing_requirements,
    register,
)

__all__ = [
    "FAMILIES",
    "REGRESSORS",
    "VIEWS",
    "Family",
    "Run",
    "get_family",
    "missing_requirements",
    "register",
]

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")):
    importlib.import_module(f"{__name__}.{_module}")
