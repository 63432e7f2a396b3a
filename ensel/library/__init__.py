"""Model libraries: specs, families, the builder and the prediction store."""

from __future__ import annotations

from .builder import Library, build_library
from .spec import LibrarySpec, RunSpec, load_spec
from .store import PredictionStore

__all__ = ["Library", "LibrarySpec", "PredictionStore", "RunSpec", "build_library", "load_spec"]
