"""Model families, one small fit function each, registered by name (App. 4.B's model grid).

One module per algorithm holds its classifier and, where there is one, its regressor (both
registered by the same name, one per task). Importing this package imports every module in it,
and each module registers its families, so a new family is one module here plus a spec entry;
``get_family(name, task)`` finds one.
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
    RunWrapper,
    get_family,
    missing_requirements,
    register,
    traits_of,
)
from ._traits import CostModel, FamilyTraits, FitShape, GrowSpace, StageWork

__all__ = [
    "FAMILIES",
    "REGRESSORS",
    "VIEWS",
    "CostModel",
    "Family",
    "FamilyTraits",
    "FitShape",
    "GrowSpace",
    "Run",
    "RunWrapper",
    "StageWork",
    "get_family",
    "missing_requirements",
    "register",
    "traits_of",
]

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")):
    importlib.import_module(f"{__name__}.{_module}")
