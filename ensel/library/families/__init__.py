"""Model families, one small fit function each, registered by name (App. 4.B's model grid).

One module per algorithm holds its classifier and, where there is one, its regressor (both
registered by the same name, one per task). Importing this package imports every module in it,
and each module registers its families, so a new family is one module here plus a spec entry;
``get_family(name, task)`` finds one.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import types

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


_MOVED = {
    "_Scale": "_regression.TargetScale",
    "_SingleRun": "_regression.SingleRun",
    "_PrefixRun": "_regression.PrefixRun",
    "_KnnRun": "neighbors._KnnRegressionRun",
    "_StagedPredictRun": "hist_gbdt._HistRegressionRun",
    "_MedianRun": "trees._MedianRun",
    "_RoundsRun": "gbdt._RoundsRegressionRun",
    "_NetRun": "neural._NetRegressionRun",
}
"""The fitted-run classes of the former ``families/regression.py`` and where they live now:
stores and models pickled before the regressors joined their algorithms' modules name the old
module, which this alias answers for."""


def _moved(name: str):
    if name not in _MOVED:
        raise AttributeError(f"{__name__}.regression has no attribute {name!r}")
    module, attr = _MOVED[name].split(".")
    return getattr(importlib.import_module(f"{__name__}.{module}"), attr)


_old = types.ModuleType(f"{__name__}.regression", "Where the regressors lived; see _MOVED.")
_old.__getattr__ = _moved
sys.modules.setdefault(_old.__name__, _old)
