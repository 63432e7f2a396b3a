"""Model families, one small fit function each, registered by name (App. 4.B's model grid).

Importing this package registers every family; ``get_family(name)`` finds one.
"""

from __future__ import annotations

from . import bayes, gbdt, linear, neighbors, neural, trees  # noqa: F401  (each module registers its families on import)
from ._base import FAMILIES, VIEWS, Family, Run, get_family, missing_requirements, register

__all__ = ["FAMILIES", "VIEWS", "Family", "Run", "get_family", "missing_requirements", "register"]
