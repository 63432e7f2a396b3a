"""Kinds of run: what a section of a library spec lists and how the builder fits it.

The builder knows no model and no detector. Each top-level section of a spec (``families``,
``detectors``) belongs to a registered :class:`Kind`, which turns the section's entries into run
specs and fits one run into a :class:`PackedRun` of hillclimb predictions and pickled fitted
siblings; the builder schedules the runs, stores them and resumes them alike.

The kinds are registered by the modules named in ``KIND_MODULES`` (models from
``ensel.library.model_runs``, extrapolation-risk detectors from ``ensel.risk.detector_runs``),
imported by name the first time a spec names a section no loaded kind handles, so the library
never imports the layers that plug into it.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..errors import SpecError

__all__ = [
    "Kind",
    "PackedRun",
    "RunLike",
    "get_kind",
    "kinds",
    "prediction_dtype",
    "register_kind",
    "run_seed",
]

KIND_MODULES = ("ensel.library.model_runs", "ensel.risk.detector_runs")
"""The modules that register ensel's kinds of run (imported on first need)."""


class RunLike(Protocol):
    """What the builder and the store need of a run spec, whatever its kind."""

    family: str
    view: str
    stages: tuple[int, ...] | None
    calibrations: tuple[str, ...]

    @property
    def run_id(self) -> str: ...

    @property
    def param_dict(self) -> dict[str, Any]: ...

    @property
    def members(self) -> list[tuple[int | None, str]]: ...


@dataclass
class PackedRun:
    """A finished run as a worker sends it: hillclimb predictions and the fitted siblings
    already pickled (see :meth:`pack`), so the client only moves and writes bytes."""

    predictions: np.ndarray  # (n_members, n_hillclimb, C), see prediction_dtype
    fitted: bytes
    costs: dict | None = None  # predict cost per sibling (execution.runs.measure_cost)

    @classmethod
    def pack(cls, predictions: np.ndarray, fitted, costs: dict | None = None) -> PackedRun:
        """Pickle ``fitted`` in the store's format (what ``PredictionStore.load_fitted`` reads
        back)."""
        return cls(predictions, pickle.dumps(fitted, protocol=pickle.HIGHEST_PROTOCOL), costs)


@dataclass(frozen=True)
class Kind:
    """One kind of run.

    ``parse(entries, source, seed, task)`` validates a section's entries (``source`` names the
    spec in errors, ``seed`` seeds range samplers, ``task`` is the spec's classification or
    regression) and returns its run specs. ``fit(run, data, context,
    random_state)`` fits one run on the training data (every fold) and returns a PackedRun; it
    runs on a worker, so it must be a module-level function. ``store`` is the sub-directory of
    the library's store that keeps this kind's runs (None: the library's own matrix), with a
    hillclimb set of its own set up by ``prepare(data, header, random_state) -> (context,
    header)``; ``context`` goes to every ``fit``. Kinds with a lower ``order`` start first.
    ``estimate(run, n_rows, n_cols, n_held, n_fits)``: the seconds of one run (all its
    ``n_fits`` fits, each predicting ``n_held`` rows) on a table of that shape, or None where
    it cannot say, so that a build under a time budget plans this kind's runs with the models
    (:mod:`ensel.library.planning.run_plan`); None: the kind's runs are not estimated. ``rank``:
    where
    its
    runs, as one group, enter the anytime order's rotation of families (by the families'
    ranks, :mod:`ensel.library.planning.schedule`). ``peak(run, data)``: the estimated peak bytes
    of one
    run in a worker (:func:`ensel.library.planning.memory.run_peak`); None: a model run's
    estimate."""

    section: str
    parse: Callable[[Any, str, int, str], tuple]
    fit: Callable[[Any, Any, Any, int], PackedRun]
    store: str | None = None
    prepare: Callable[[Any, dict, int], tuple[Any, dict]] | None = None
    order: int = 0
    estimate: Callable[[Any, int, int, int, int], float | None] | None = None
    rank: float = 100.0
    peak: Callable[[Any, Any], int] | None = None


_KINDS: dict[str, Kind] = {}


def register_kind(kind: Kind) -> Kind:
    """Make ``kind`` handle the spec section ``kind.section`` (registering it again replaces
    it, so a module may be reloaded)."""
    if kind.store is not None and kind.prepare is None:
        raise ValueError(f"kind {kind.section!r} keeps a store of its own, so it needs prepare")
    _KINDS[kind.section] = kind
    return kind


def kinds() -> dict[str, Kind]:
    """Every kind of run, by spec section (importing ``KIND_MODULES`` once)."""
    _discover()
    return dict(_KINDS)


def get_kind(section: str) -> Kind:
    """The kind that handles spec section ``section``; a SpecError lists the known sections."""
    if section not in _KINDS:
        _discover()
    try:
        return _KINDS[section]
    except KeyError:
        raise SpecError(
            f"no kind of run handles section {section!r}; known sections: {sorted(_KINDS)}"
        ) from None


@functools.cache
def _discover() -> None:
    """Import every module of ``KIND_MODULES`` (once)."""
    for module in KIND_MODULES:
        importlib.import_module(module)


def prediction_dtype(task: str | None) -> type[np.floating]:
    """The dtype hillclimb predictions are kept in: float32 for probabilities (half the
    memory, and the fast kernels read float32), float64 for regression values, whose offset
    from zero can be far larger than the differences between members (a target of 1e9 +- 10
    rounds to steps of 64 in float32, and every member scored alike)."""
    return np.float64 if task == "regression" else np.float32


def run_seed(run: RunLike, random_state: int) -> int:
    """The seed of a run: fixed by the build's seed and the run's id, shared by its siblings."""
    digest = hashlib.sha256(f"{random_state}:{run.run_id}".encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF
