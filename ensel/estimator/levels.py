"""A second level (``levels=2``): a small library of strong learners (spec ``stack``, or
``stack_regression``) trained on the original features plus the out-of-fold predictions of the
strongest level-one runs, over the SAME folds as level one. Each level-two fold model thus
trains only on rows whose level-one features are out of fold, and its hillclimb predictions
are out of fold too (the stacking of AutoGluon, Erickson et al. 2020, "multi-layer stack
ensembling"). Selection then weighs the members of both levels together; at predict time the
level-one members' fold-averaged predictions feed the level-two members."""

from __future__ import annotations

import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from ..data import named
from ..library import Library, build_library
from ..library.data.sources import is_source, n_rows
from ..library.data.training import resolve_cv
from ..library.planning.budget import Budget
from ..library.storage.members import FittedMembers
from ..metrics import score, score_batch

__all__ = [
    "INPUT_RUNS",
    "LEVEL_TWO_SHARE",
    "SPECS",
    "StackedMembers",
    "TwoLevels",
    "build_second_level",
    "check",
    "share",
    "with_level_one",
]

LEVEL_TWO_SHARE = 0.2
"""Share of ``time_limit`` kept from the level-one build for the second level. Its spec holds
three runs against the dozens of level one's default spec, but each trains on more columns and
only the strongest learners; a fifth of the budget gives it about the time of three of level
one's boosting runs (a judgement, not yet a measured optimum)."""
INPUT_RUNS = 4
"""How many level-one runs (the strongest by out-of-fold score on the fit's metric, one member
each) give their predictions to level two as features."""
SPECS = {"classification": "stack.yaml", "regression": "stack_regression.yaml"}
"""The level-two spec of each task, files among the library's built-in specs (not listed as
built-in names: they are level two's, not a library to build alone)."""
PREFIX = "level2:"
"""Prefix of a level-two member's and run's id in the two levels' member table (the two
libraries may name a member alike)."""


def check(est, source, X, y) -> None:
    """Refuse, before any work, what a second level cannot do: one held-out split instead of
    K folds, a library given built, data that stays where it is, ``refit="full"``, ONNX export
    and a predict-cost limit in milliseconds."""
    if est.levels < 2:
        return
    who = f"levels={est.levels}"
    if est.cv is None:
        raise ValueError(
            f"{who} needs cv=K or cv='auto' (K folds): level two trains on level one's "
            "out-of-fold predictions, which cv=None (one held-out split) gives only for the "
            "held-out rows"
        )
    if isinstance(source, Library):
        raise ValueError(f"{who} builds both levels: give library= a spec, not a built library")
    if is_source(X):
        raise ValueError(f"{who} needs the training rows in memory, not a parquet path or dask")
    if est.cv == "auto" and resolve_cv("auto", n_rows(X), y, task=est._task).cv is None:
        raise ValueError(
            f"{who}: cv='auto' holds out one hillclimb split on this table of {n_rows(X)} "
            "rows, which gives level two no out-of-fold features; give cv=K"
        )
    for bad, what in (
        (est.refit == "full", "refit='full'"),
        (est.exportable, "exportable=True (to_onnx exports one level)"),
        (est.max_predict_ms not in (None, "auto"), f"max_predict_ms={est.max_predict_ms!r}"),
    ):
        if bad:
            raise ValueError(f"{who} does not work with {what}; use levels=1")


def share(est) -> float:
    """Seconds of ``time_limit`` kept from the level-one build for level two (0 without)."""
    if est.levels < 2 or est.time_limit is None:
        return 0.0
    return LEVEL_TWO_SHARE * est.time_limit


def strongest_runs(lib: Library, P: np.ndarray, metric, k: int = INPUT_RUNS) -> list[str]:
    """The ids of the best member of each of the ``k`` level-one runs that score best out of
    fold on ``metric`` (one member per run, so the features are not k stages of one run)."""
    scores = np.array([score(metric, lib.y, P[i]) for i in range(len(P))])
    gain = scores if metric.greater_is_better else -scores
    order = np.argsort(-gain, kind="stable")
    runs = lib.members["run"].to_numpy()
    chosen: dict = {}
    for i in order:
        if runs[i] not in chosen:
            chosen[runs[i]] = lib.members["id"].iloc[i]
        if len(chosen) == k:
            break
    return list(chosen.values())


def with_level_one(frame: pd.DataFrame, F: np.ndarray) -> pd.DataFrame:
    """``frame`` with the level-one predictions ``F`` (``(m, n)``: a positive-class
    probability or a value per member; ``(m, n, C)``: C class probabilities per member) as
    more columns, ``level1_<i>`` or ``level1_<i>_<c>``."""
    F = np.asarray(F, dtype=np.float64)
    if F.ndim == 2:
        columns = {f"level1_{i}": F[i] for i in range(len(F))}
    else:
        columns = {f"level1_{i}_{c}": F[i, :, c] for i in range(len(F)) for c in range(F.shape[2])}
    extra = pd.DataFrame(columns, index=frame.index)
    return pd.concat([frame, extra], axis=1)


@dataclass
class StackedMembers:
    """What a two-level model keeps to predict: the level-one members with weight
    (``first``, or None), the level-one members whose predictions are level two's features
    (``inputs``), and the level-two members with weight (``second``, or None). ``predict``
    returns the kept members' predictions, level one's then level two's, in the layout of
    :meth:`FittedMembers.predict`."""

    first: FittedMembers | None
    inputs: FittedMembers
    second: FittedMembers | None

    @property
    def ids(self) -> tuple[str, ...]:
        first = () if self.first is None else self.first.ids
        second = () if self.second is None else tuple(PREFIX + i for i in self.second.ids)
        return first + second

    @property
    def n_members(self) -> int:
        return len(self.ids)

    def frame(self, X) -> pd.DataFrame:
        """X checked against level one's training columns (what the detectors read)."""
        return self.inputs.frame(X)

    def predict(self, X, n_jobs: int = 1, **options) -> np.ndarray:
        """The kept members' test-time predictions on X (level one's fold-averaged
        predictions feed level two's members)."""
        parts = []
        if self.first is not None:
            parts.append(self.first.predict(X, n_jobs=n_jobs, **options))
        if self.second is not None:
            F = self.inputs.predict(X, n_jobs=n_jobs, **options)
            frame = self.inputs.frame(X).reset_index(drop=True)
            parts.append(self.second.predict(with_level_one(frame, F), n_jobs=n_jobs, **options))
        return np.concatenate(parts, axis=0)


class TwoLevels:
    """Both levels as the one library the later stages weigh and keep: the hillclimb matrix
    and member table of level one then level two, the labels, columns and detectors of level
    one, and :meth:`subset`, which gives a :class:`StackedMembers`."""

    def __init__(self, first: Library, second: Library, inputs: list[str], seconds: float):
        if not np.array_equal(first.y, second.y):
            raise RuntimeError("the two levels' hillclimb rows differ; they must share folds")
        self.first, self.second, self.inputs, self.seconds = first, second, inputs, seconds
        self.predictions = np.concatenate(
            [np.asarray(first.predictions), np.asarray(second.predictions)], axis=0
        )
        top = second.members.assign(
            id=PREFIX + second.members["id"].astype(str),
            run=PREFIX + second.members["run"].astype(str),
            level=2,
        )
        self.members = pd.concat([first.members.assign(level=1), top], ignore_index=True)
        self.y, self.classes, self.task = first.y, first.classes, first.task
        self.columns, self.input_columns = first.columns, first.input_columns
        self.dropped, self.categories = first.dropped, first.categories
        self.detectors, self.temporary, self.store = first.detectors, first.temporary, first.store
        self.siblings = first.siblings

    @property
    def metric_names(self) -> tuple[str, ...]:
        """The metrics both levels' members are scored on: level one's."""
        return self.first.metric_names

    def member_scores(self, P: np.ndarray) -> dict[str, np.ndarray]:
        """Every member's hillclimb score on each of :attr:`metric_names`."""
        return {name: score_batch(name, self.y, P) for name in self.metric_names}

    def subset(self, ids) -> StackedMembers:
        """What predicts the members ``ids`` (level one's first, then level two's)."""
        ids = [str(i) for i in ids]
        first = [i for i in ids if not i.startswith(PREFIX)]
        second = [i[len(PREFIX) :] for i in ids if i.startswith(PREFIX)]
        return StackedMembers(
            self.first.subset(first) if first else None,
            self.first.subset(self.inputs),
            self.second.subset(second) if second else None,
        )

    def summary(self, weights: np.ndarray) -> dict:
        """``budget_.level_two``: its seconds, its runs and members, those with weight, and
        the level-one members that fed it."""
        top = self.members["level"].to_numpy() == 2
        return {
            "seconds": self.seconds,
            "runs": int(self.second.members["run"].nunique()),
            "members": int(top.sum()),
            "members_with_weight": int((weights[top] > 0).sum()),
            "weight": float(weights[top].sum()),
            "inputs": list(self.inputs),
        }


def spec_path(task: str) -> Path:
    """The path of ``task``'s level-two spec file."""
    return Path(str(resources.files("ensel.library") / "specs" / SPECS[task]))


def build_second_level(
    est, lib: Library, P, metric, X, y, groups, seed: int, budget: Budget
) -> TwoLevels:
    """Level two of ``est``'s fit over level one ``lib`` (hillclimb matrix ``P``): built on
    ``X`` and the strongest level-one runs' out-of-fold predictions with level one's folds
    (same ``cv``, ``y``, ``groups`` and seed give the same folds; the store's fingerprint is
    checked), under the fit's ``budget`` (until its deadline less its reserve)."""
    started = time.monotonic()
    inputs = strongest_runs(lib, P, metric)
    rows = np.asarray(lib.hillclimb_index)
    n = n_rows(X)
    if rows.size != n:
        raise RuntimeError("level one holds out rows; a second level needs every row out of fold")
    frame = named(X, list(lib.input_columns), who=type(est).__name__).reset_index(drop=True)
    order = pd.Index(lib.members["id"]).get_indexer(inputs)
    F = np.empty((len(inputs), n, *P.shape[2:]))
    F[:, rows] = P[order]
    second = build_library(
        with_level_one(frame, F),
        y,
        spec=spec_path(est._task),
        cv=lib.siblings,
        store=None if est.store is None else Path(est.store) / "level2",
        n_jobs=est.n_jobs,
        backend=est.backend,
        client=est.client,
        random_state=seed,
        groups=groups,
        verbose=est.verbose,
        budget=budget,
    )
    folds = ("fingerprint", "folds")
    one, two = (lib_.store.header.get(folds[0], {}).get(folds[1]) for lib_ in (lib, second))
    if one != two:
        raise RuntimeError("level two was built on other folds than level one")
    return TwoLevels(lib, second, inputs, time.monotonic() - started)
