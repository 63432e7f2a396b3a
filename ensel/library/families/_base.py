"""The contract every model family meets, and the registry that finds families by name.

A family is one fit function: it trains on a view of the training fold and returns a run whose
``predict`` gives every staged member at once (boosting steps, epochs, values of k, ...), so one
training run yields several library members ("staged members", see docs/library_specs.md).
"""

from __future__ import annotations

import dataclasses
import importlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ...data import stratified_rows
from ._traits import FamilyTraits

__all__ = [
    "FAMILIES",
    "REGRESSORS",
    "ConstantRun",
    "Family",
    "FamilyTraits",
    "RoundsRun",
    "Run",
    "RunWrapper",
    "SnapshotRun",
    "TreesRun",
    "check_stages",
    "encode_labels",
    "get_family",
    "missing_requirements",
    "register",
    "stratified_rows",
    "traits_of",
    "tree_input",
    "tree_leaves",
    "tree_values",
]

VIEWS = ("standardized", "native", "te")
"""standardized: one-hot categoricals, numeric columns scaled to mean 0, sd 1 (SVM, ANN, KNN,
LOGREG in App. 4.A/4.B); native: numeric columns as given, categoricals as integer codes (trees,
naive Bayes); te: native plus out-of-fold target and count encodings and numeric crosses (a
spec entry's ``view: te``, for boosted trees; ``ensel.library.views.encoding``)."""


class Run(Protocol):
    """A fitted training run.

    A run may set ``cumulative = True`` when a stage needs all the work of the earlier ones
    (boosting steps, trees, one neighbour query for every k): the library then counts the
    predict cost of a set of its stages as that of the largest (see ``Library.predict_cost``).
    Every run class of a family subclasses this protocol, so it has ``cumulative`` (False unless
    it says otherwise)."""

    cumulative: bool = False

    def predict(self, X: np.ndarray, stages=None) -> dict[str, np.ndarray]:
        """Variant name -> ``(n_stages, n, n_classes)`` probabilities. ``"none"`` is always there
        (the model's own probabilities); a family may add analytic variants such as boosting's
        ``"logistic"`` correction. ``stages``: indices of the stages wanted (None: all), so that
        a prediction computes only what the ensemble uses; a run that ignores it is sliced."""
        ...

    @staticmethod
    def predict_siblings(runs: list, X: np.ndarray, stages) -> list[dict] | None:
        """``[run.predict(X, stages) for run in runs]`` for fold siblings of this class reading
        one matrix ``X``, in one pass where the class can (trees walked together); None, as
        here, where it cannot, and each sibling then predicts alone."""
        return None


class RunWrapper(Run):
    """A run that adapts another (a log-target run, a categorical-code adapter): ``inner`` is
    the family's own run, which the cost models read (:func:`~._work.unwrap`)."""

    inner: Run


class RoundsRun(Run):
    """A boosting library's run whose stages count rounds. ``best``: the rounds it kept (early
    stopping, a time cap), a stage past them predicts with those; None where it keeps every
    round it trained."""

    best: int | None = None


class SnapshotRun(Run):
    """A net's run: one weight snapshot per stage (``snapshots``)."""

    snapshots: list

    def snapshot_weights(self) -> list[float]:
        """Multiply-adds of one row's forward pass through each snapshot, in stage order: here
        the sizes of its weight arrays (a snapshot is a tuple of them)."""
        return [float(sum(np.size(a) for a in snap)) for snap in self.snapshots]


class TreesRun(Run):
    """A run of fitted scikit-learn trees (a tree, bagged trees, a forest, AdaBoost)."""

    def fitted_trees(self) -> list:
        """The run's fitted scikit-learn trees, in the order its stages take them (each has
        its compiled ``tree_``); every tree-family run class defines it."""
        raise NotImplementedError(f"{type(self).__name__} does not list its trees")


class FitFn(Protocol):
    def __call__(
        self,
        X: np.ndarray,
        y: np.ndarray,
        *,
        n_classes: int,
        params: dict[str, Any],
        stages: tuple[int, ...] | None,
        random_state: int,
    ) -> Run: ...


@dataclass(frozen=True)
class Family:
    """A model family: its fit function, the parameters it accepts (name -> default), its view,
    whether it has stages, the analytic calibration variants its runs produce, and whether it
    takes missing values natively (``native_missing``)."""

    name: str
    fit: FitFn
    params: Mapping[str, Any]
    view: str = "standardized"
    stages: str | None = None  # what a stage counts ("boosting steps", "epochs", "k"), or None
    variants: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()  # importable modules the family needs (optional extras)
    test_params: Mapping[str, Any] = field(default_factory=dict)  # small and fast, for tests
    test_stages: tuple[int, ...] | None = None
    validate: Callable[[dict[str, Any], tuple[int, ...] | None], None] | None = None
    native_missing: bool = False
    """True: the fit function takes NaN as it is (numeric NaN passed through; see
    ``ensel.library.views.base``); False: its view imputes the median plus missing indicators,
    fitted on each fold's training rows."""
    categorical: bool = False
    """The family splits (or embeds) categorical columns natively: on the native view its fit
    function also receives ``categorical={column index: number of categories}`` (the codes are
    0..n-1, unseen categories -1, missing NaN)."""
    task: str = "classification"  # or "regression": fitted to a real y, runs predict (s, n, 1)
    traits: FamilyTraits = field(default_factory=FamilyTraits)
    """What the engines read of the family: rank, cost model, search space (see
    :class:`~ensel.library.families._traits.FamilyTraits`)."""
    optional: Mapping[str, Any] = field(default_factory=dict)
    """Parameters a spec may set beyond ``params`` (name -> default): a run holds one only
    where it is set to another value than its default, so that the runs that leave it at
    its default keep their ids (and seeds); the fit function reads it with that default."""
    stops_in_time: bool = False
    """The fit takes ``time_cap`` (seconds): it stops adding stages (boosting rounds, trees,
    epochs) once that much time has passed and keeps the stages it reached, so a per-run time
    limit shortens its run instead of stopping it with nothing."""
    early_stops: bool = False
    """The fit takes ``early_stop`` (a share of its training rows held out to stop adding
    boosting rounds), which a build passes on large tables
    (:data:`ensel.library.execution.runs.EARLY_STOP_ROWS`)."""


def next_ends_past(time_cap, started: float, done: int, more: int = 1) -> bool:
    """Whether ``more`` stages (trees, epochs) after the ``done`` ones trained since
    ``started`` (``time.monotonic()``) would, at the pace so far, end past ``time_cap``
    seconds; False without a cap or before any stage is done."""
    if not time_cap or done < 1:
        return False
    elapsed = time.monotonic() - started
    return elapsed + elapsed / done * more > time_cap


FAMILIES: dict[str, Family] = {}
"""Classification families by name."""
REGRESSORS: dict[str, Family] = {}
"""Regression families by name (each beside the classifier of its algorithm); a name may be in
both registries."""
_REGISTRIES = {"classification": FAMILIES, "regression": REGRESSORS}


def register(family: Family, task: str | None = None) -> Family:
    """Add ``family`` to the registry of its task (``task`` overrides ``family.task``)."""
    if task is not None:
        family = dataclasses.replace(family, task=task)
    if family.view not in VIEWS:
        raise ValueError(f"family {family.name!r}: view {family.view!r} is not one of {VIEWS}")
    if family.categorical and not family.native_missing:
        raise ValueError(
            f"family {family.name!r}: categorical=True needs native_missing=True (a missing "
            "categorical code reaches it as NaN)"
        )
    if family.task not in _REGISTRIES:
        raise ValueError(
            f"family {family.name!r}: task {family.task!r} is not one of {tuple(_REGISTRIES)}"
        )
    _REGISTRIES[family.task][family.name] = family
    return family


def get_family(name: str, task: str = "classification") -> Family:
    """The family registered as ``name`` for ``task``; a ValueError lists the known ones
    otherwise."""
    registry = _REGISTRIES[task]
    try:
        return registry[name]
    except KeyError:
        other = [t for t, r in _REGISTRIES.items() if t != task and name in r]
        hint = f" ({name!r} is a {other[0]} family)" if other else ""
        raise ValueError(
            f"unknown family {name!r}{hint}; known {task} families: {sorted(registry)}"
        ) from None


def traits_of(name: str, task: str = "classification") -> FamilyTraits:
    """The traits of the family registered as ``name`` for ``task``, or the defaults of
    :class:`FamilyTraits` for a name not registered (a run the engines are asked about before
    its module is imported, or a test's stand-in): ranked last, no cost model."""
    family = _REGISTRIES.get(task, FAMILIES).get(name)
    return FamilyTraits() if family is None else family.traits


def missing_requirements(family: Family) -> list[str]:
    """The modules ``family`` needs that cannot be imported here."""
    missing = []
    for module in family.requires:
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(module)
    return missing


def check_stages(stages: tuple[int, ...] | None, what: str) -> tuple[int, ...]:
    """``stages`` as a non-empty tuple of positive ints; a ValueError says what is wrong."""
    if not stages:
        raise ValueError(f"{what} must be a non-empty list of positive integers, got {stages!r}")
    out = tuple(int(s) for s in stages)
    if any(s < 1 or s != t for s, t in zip(out, stages, strict=True)):
        raise ValueError(f"{what} must be positive integers, got {stages!r}")
    return out


def staged(what: str):
    """A ``validate`` that only rejects missing or non-positive stages (``what`` they count)."""

    def validate(params: dict[str, Any], stages: tuple[int, ...] | None) -> None:
        """Reject missing or non-positive stages."""
        check_stages(stages, what)

    return validate


@dataclass
class ConstantRun(Run):
    """A training fold with one class: probability 1 for that class at every stage."""

    label: int
    n_stages: int
    n_classes: int

    def predict(self, X: np.ndarray, stages=None) -> dict[str, np.ndarray]:
        n = self.n_stages if stages is None else len(stages)
        out = np.zeros((n, X.shape[0], self.n_classes))
        out[:, :, self.label] = 1.0
        return {"none": out}


def encode_labels(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The classes present in ``y`` and ``y`` recoded to ``0..len(classes)-1`` (both libraries
    want consecutive labels; a fold may lack a class)."""
    classes = np.unique(y)
    return classes, np.searchsorted(classes, y)


def full_proba(proba: np.ndarray, classes: np.ndarray, n_classes: int) -> np.ndarray:
    """Widen ``(n, len(classes))`` probabilities to ``(n, n_classes)``: a training fold may lack
    a rare class, and the library's layout must not depend on the fold."""
    if proba.shape[1] == n_classes:
        return proba
    out = np.zeros((proba.shape[0], n_classes))
    out[:, np.asarray(classes, dtype=int)] = proba
    return out


def tree_input(X: np.ndarray) -> np.ndarray:
    """``X`` as scikit-learn's fitted trees read it (C-ordered float32; itself when it already
    is), converted once per run rather than once per tree."""
    return np.ascontiguousarray(X, dtype=np.float32)


def tree_leaves(tree, X32: np.ndarray) -> np.ndarray:
    """The leaf of each row of ``X32`` (``tree_input``) in a fitted scikit-learn tree, read from
    its compiled tree directly: the estimator's own ``apply`` / ``predict`` check the input and
    the fit on every call, most of a boosted stump's predict time."""
    return tree.tree_.apply(X32)


def tree_values(tree) -> np.ndarray:
    """Per node of a fitted scikit-learn tree: its class fractions ``(nodes, classes)`` (what
    ``predict_proba`` returns for the rows in that leaf) or its value ``(nodes, 1)``."""
    return tree.tree_.value[:, 0, :]  # one output: its classes, or one value


def min_max_scores(scores: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Map decision values ``(n, C)`` into probabilities by the training range of each column,
    clipped to [0, 1] and renormalised: the uncalibrated output of a margin classifier (an SVM's
    "normalised distance to the decision surface", §4.3.1); Platt scaling then fits the sigmoid."""
    span = np.where(high > low, high - low, 1.0)
    p = np.clip((scores - low) / span, 0.0, 1.0)
    if p.shape[1] == 1:  # binary decision value: the positive class
        return np.hstack([1.0 - p, p])
    total = p.sum(axis=1, keepdims=True)
    return np.where(total > 0, p / np.where(total > 0, total, 1.0), 1.0 / p.shape[1])


def entropy_bits(counts: np.ndarray) -> np.ndarray:
    """Entropy in bits of class counts along the last axis (0 for an empty row)."""
    counts = np.asarray(counts, dtype=float)
    total = counts.sum(axis=-1, keepdims=True)
    p = counts / np.where(total > 0, total, 1.0)
    return -(p * np.log2(np.where(p > 0, p, 1.0))).sum(axis=-1)
