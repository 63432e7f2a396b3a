"""Repeated cross-validation: one library from several builds of the same spec on the same rows
with different fold assignments. Each member's hillclimb prediction is the mean of its
out-of-fold predictions over the builds that have its run (every row is still predicted only by
models that did not train on it), and its test-time prediction the mean over all their fold
siblings, so selection sees less fold noise and the ensemble averages more models."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .library import Library

__all__ = ["RepeatedLibrary", "RepeatedRun"]


@dataclass
class RepeatedRun:
    """One run fitted in several builds (``fits``, one fitted run per build, the first build's
    first): it predicts the mean of their predictions. ``repeats`` names the build of each fit,
    so that each build's transformed views are shared only among that build's runs (two builds'
    sibling k trained on different rows)."""

    fits: list
    repeats: tuple[int, ...]

    @property
    def run(self):
        return self.fits[0].run

    @property
    def member_keys(self) -> list[tuple[int, str]]:
        return self.fits[0].member_keys

    def predict(self, X: pd.DataFrame, members=None, views: dict | None = None) -> np.ndarray:
        """``(n_members, n, C)``: the mean of every build's prediction of these members."""
        out = None
        for fit, repeat in zip(self.fits, self.repeats, strict=True):
            own = (
                views if views is None or repeat == 0 else views.setdefault(("repeat", repeat), {})
            )
            part = fit.predict(X, members, views=own)
            out = part if out is None else out + part
        return out / len(self.fits)


class RepeatedLibrary(Library):
    """The first library with every member's predictions averaged over ``libraries`` (builds of
    the same spec on the same rows, each with its own folds: ``build_library`` with another
    ``random_state``). Members are the first library's; a member whose run another build lacks
    (failed, or left out by a budget) keeps the builds that have it. Detectors, failures and the
    plan are the first library's. ``repeats``: how many builds there are."""

    def __init__(self, libraries: list[Library]):
        if len(libraries) < 2:
            raise ValueError(f"RepeatedLibrary needs at least 2 libraries, got {len(libraries)}")
        first = libraries[0]
        for other in libraries[1:]:
            if not np.array_equal(other.hillclimb_index, first.hillclimb_index) or not (
                np.array_equal(other.y, first.y)
            ):
                raise ValueError(
                    "RepeatedLibrary: the libraries were built on different rows or labels; "
                    "build each on the same X and y with cv=K and its own random_state"
                )
            if other.store.header.get("cv") is None:
                raise ValueError(
                    "RepeatedLibrary repeats K-fold builds; a library with a held-out hillclimb "
                    "set (cv=None) has no folds to repeat"
                )
        self.__dict__.update(first.__dict__)
        self._libraries = list(libraries)
        self._loaded = {}
        self._scores = None
        self.repeats = len(libraries)
        ids = first.members["id"].to_numpy()
        total = np.asarray(first.predictions, dtype=np.float64).copy()
        count = np.ones(len(ids))
        for other in libraries[1:]:
            where = pd.Index(other.members["id"]).get_indexer(ids)
            have = np.flatnonzero(where >= 0)
            total[have] += np.asarray(other.predictions)[where[have]]
            count[have] += 1
        shape = (-1,) + (1,) * (total.ndim - 1)
        self.predictions = (total / count.reshape(shape)).astype(first.predictions.dtype)

    @property
    def siblings(self) -> int:
        """K fold siblings in each of the builds."""
        return self._libraries[0].siblings * self.repeats

    def _fitted(self, run_id: str):
        """The run's fitted siblings in every build that has it (a RepeatedRun where more than
        one does)."""
        if run_id not in self._loaded:
            fits, repeats = [], []
            for r, lib in enumerate(self._libraries):
                if lib.store.records.get(run_id, {}).get("status") == "ok":
                    fits.append(lib._fitted(run_id))
                    repeats.append(r)
            self._loaded[run_id] = fits[0] if len(fits) == 1 else RepeatedRun(fits, tuple(repeats))
        return self._loaded[run_id]

    def refit_full(self, *args, **kwargs):
        raise ValueError(
            "refit='full' retrains on all rows once: it has nothing to repeat; use "
            "the first library of the RepeatedLibrary"
        )
