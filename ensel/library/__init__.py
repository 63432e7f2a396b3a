"""Model libraries: specs, families, the builder and the prediction store.

The names below load on first use, so that ``ensel.library.kinds`` (which the packages above
plug their kinds of run into) can be imported without the builder, the store or the families.
"""

from __future__ import annotations

import importlib

_PUBLIC = {
    "FittedMembers": "storage.members",
    "Library": "storage.library",
    "LibrarySpec": "spec",
    "PredictionStore": "storage.store",
    "RunSpec": "spec",
    "build_library": "builder",
    "load_spec": "spec",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    if name in _PUBLIC:
        return getattr(importlib.import_module(f"{__name__}.{_PUBLIC[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_PUBLIC])
