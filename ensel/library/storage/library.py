"""Library: the read side of a built model library. It opens a PredictionStore and serves the
cached hillclimb predictions, the member table, member scores and the fitted members that
predict at test time (``subset``, ``refit_full``)."""

from __future__ import annotations

import dataclasses
import os
import tempfile

import numpy as np
import pandas as pd

from ..._jobs import as_seed
from ...errors import StoreError
from ...metrics import METRICS, REGRESSION_METRICS, score_batch
from ..data.training import prepare
from ..execution.executor import make_executor
from ..execution.runs import refit_full
from .members import FittedMembers
from .store import PredictionStore

__all__ = ["FAILED", "Library"]

FAILED = ("failed", "timeout", "budget", "memory", "left_out")
"""Statuses of the runs a library lists in ``failures`` (budget: cut short by a time budget;
memory: did not fit under ``max_memory``; left_out: left out by the plan of a build under a
time budget)."""


class Library:
    """A built library: the hillclimb predictions of its ok members, their descriptions, and
    test-time predictions from their fitted siblings.

    ``parts`` holds the libraries of other kinds of run built beside the models, by store
    sub-directory (``parts["detectors"]``, also ``detectors``: the spec's extrapolation-risk
    detectors); ``columns`` and ``categories`` are the training columns and the categories of
    the categorical ones."""

    def __init__(self, store: PredictionStore, _tmp: tempfile.TemporaryDirectory | None = None):
        self.store = store
        self._tmp = _tmp  # keeps a temporary store alive as long as the library
        self.predictions, self.runs = store.matrix()
        self.members = store.members(self.runs).reset_index(drop=True)
        if len(self.members) != self.predictions.shape[0]:
            raise StoreError(
                f"{store.path}: the prediction matrix has {self.predictions.shape[0]} rows for "
                f"{len(self.members)} members; run build_library again to rebuild it"
            )
        others = [r for r in store.records if store.records[r]["status"] != "ok"]
        self.failures = store.members(others, statuses=FAILED)
        self.plan = store.plan()  # the plan of a build under a time budget, or None
        self.hillclimb_index, self.y = store.hillclimb()
        self.task = store.header.get("task", "classification")
        self.classes = np.asarray(store.header["classes"])
        self.columns: list[str] = list(store.header["columns"])
        self.input_columns = list(store.header.get("input_columns", self.columns))
        self.dropped = dict(store.header.get("dropped", {}))  # column -> why it was left out
        self.categories: dict[str, list[str]] = dict(store.header.get("categories", {}))
        self._loaded: dict = {}
        self._scores: dict | None = None
        self.parts = {
            sub.name: Library(PredictionStore(sub))
            for sub in sorted(store.path.iterdir())
            if (sub / "predictions.json").exists()
        }

    @classmethod
    def open(cls, path: str | os.PathLike) -> Library:
        """The library in an existing store (its fitted runs are unpickled on ``predict``: open
        only stores you trust)."""
        return cls(PredictionStore(path))

    @property
    def n_members(self) -> int:
        return len(self.members)

    @property
    def siblings(self) -> int:
        """Fitted models behind each member's test-time prediction: K under ``cv=K``, 1 for a
        held-out hillclimb set."""
        return int(self.store.header.get("cv") or 1)

    @property
    def temporary(self) -> bool:
        """True when the store lives in a temporary directory that goes with this object."""
        return self._tmp is not None

    @property
    def detectors(self) -> Library | None:
        """The detectors built beside the models (a spec's ``detectors:`` section), or None."""
        return self.parts.get("detectors")

    def subset(self, ids=None) -> FittedMembers:
        """The members ``ids`` (all by default) with their fitted runs (unpickled once per
        library object): an object that predicts only those members, in the order given, and
        pickles without the store (see :class:`~ensel.library.storage.members.FittedMembers`)."""
        wanted = list(self.members["id"]) if ids is None else list(ids)
        index = pd.Index(self.members["id"])
        unknown = [i for i in wanted if i not in index]
        if unknown:
            raise ValueError(f"unknown member id(s) {unknown[:5]}; see Library.members['id']")
        rows = index.get_indexer(wanted)
        run_of = self.members["run"].to_numpy()
        first = {r: i for i, r in reversed(list(enumerate(run_of)))}
        chosen = run_of[rows]
        runs = {r: self._fitted(r) for r in dict.fromkeys(chosen)}
        offsets = np.array([row - first[r] for row, r in zip(rows, chosen, strict=True)], int)
        return FittedMembers(
            tuple(wanted),
            runs,
            chosen,
            offsets,
            tuple(self.columns),
            self.categories,
            self.classes,
            self.task,
        )

    def refit_full(
        self,
        members: FittedMembers,
        X,
        y,
        groups=None,
        *,
        random_state=0,
        hillclimb_fraction: float = 0.2,
        n_jobs: int | None = 1,
    ) -> FittedMembers:
        """``members`` (from :meth:`subset`) with each of their runs trained once on all of
        ``X, y`` (the data this library was built on, with its ``groups`` and build seed
        ``random_state``) instead of K siblings: see
        :func:`ensel.library.execution.runs.refit_full`.
        A ValueError says so when ``X, y`` are not the library's data."""
        random_state = as_seed(random_state)
        data = prepare(
            X,
            y,
            cv=self.store.header.get("cv"),
            groups=groups,
            hillclimb_fraction=self.store.header.get("hillclimb_fraction", hillclimb_fraction),
            random_state=random_state,
            task=self.task,
        )
        built = self.store.header.get("fingerprint", {})
        if any(built.get(k) != v for k, v in data.fingerprint().items()):
            raise ValueError(
                "refit needs the data, groups and random_state the library was built with; "
                f"these differ from those of the store at {self.store.path}"
            )
        tasks = [(fitted, members.offsets[members.rows(r)]) for r, fitted in members.runs.items()]
        executor = make_executor(n_jobs)
        runs = dict.fromkeys(members.runs)
        try:
            for outcome in executor.run(_refit_task, tasks, (data, random_state)):
                if outcome.status != "ok":
                    raise RuntimeError(f"refitting a run on all rows failed: {outcome.error}")
                runs[list(members.runs)[outcome.index]] = outcome.value
        finally:
            executor.close()
        return dataclasses.replace(members, runs=runs)

    def predict(self, X, ids=None) -> np.ndarray:
        """Test-time probabilities of the members ``ids`` (all by default): ``(m, n)`` positive
        class for binary problems, ``(m, n, C)`` otherwise, members in the order given; for
        regression ``(m, n)`` predicted values."""
        return self.subset(ids).predict(X)

    @property
    def metric_names(self) -> tuple[str, ...]:
        """The metrics members are scored on: the eight, or rmse, mae and r2 for regression."""
        return REGRESSION_METRICS if self.task == "regression" else METRICS

    def member_scores(self, P: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Every member's hillclimb score on each of ``metric_names`` (computed once)."""
        if self._scores is None:
            P = np.asarray(self.predictions) if P is None else P
            self._scores = {name: score_batch(name, self.y, P) for name in self.metric_names}
        return self._scores

    def _fitted(self, run_id: str):
        """A run's fitted siblings, unpickled once per library object."""
        if run_id not in self._loaded:
            self._loaded[run_id] = self.store.load_fitted(run_id)
        return self._loaded[run_id]


def _refit_task(task: tuple, shared: tuple):
    fitted, members = task
    data, random_state = shared
    return refit_full(fitted, data, random_state, members)
