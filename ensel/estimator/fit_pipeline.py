"""The fit of an estimator as one pipeline: one object carries the data, the fit's one
:class:`~ensel.library.planning.budget.Budget`, the built library and the selection through
its stages, run in order (check, prepare, build, second level, time selection, select,
finalise). The estimator calls it once; ``X`` is read by the build (and by the second level
and ``refit="full"``, which train on it) and by nothing else."""

from __future__ import annotations

import logging
import os
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._jobs import as_seed
from ..errors import EmptyLibraryError
from ..library import Library, build_library
from ..library.data.sources import is_source, n_classes, n_rows
from ..library.data.training import resolve_cv
from ..library.planning.budget import Budget, check_grow
from ..library.planning.grow import GrowSpec, parse_grow
from ..library.planning.memory import parse_memory, resolve_max_memory, selection_memory
from ..library.spec import LibrarySpec, load_spec
from ..metrics import resolve_metric
from . import budget, levels
from .budget_report import BudgetReport
from .choose import Chooser
from .keep import kept_attributes
from .persistence import version

__all__ = ["FitPipeline", "Selected", "grow_spec"]

log = logging.getLogger(__name__)

AFTER_SELECTION = (0.5, 0.02, 6e-5)
"""``(seconds, share of time_limit, seconds per hillclimb row)`` kept after selection under a
time budget: the detectors' combination (fitted on every hillclimb row and as many background
points), the leaderboard, loading the chosen members and the report. The per-row term is the
detectors' combination and the leaderboard, which grow with the hillclimb rows (on a bagged
table, every row)."""


@dataclass
class Selected:
    """What selection made of a library: the library, its hillclimb matrix, the metric, one
    weight per library member and the fit's seed (every other seed is derived from it)."""

    library: Any
    P: np.ndarray
    metric: object
    weights: np.ndarray
    seed: int


@dataclass
class FitPipeline:
    """One fit of ``estimator`` on ``X, y`` (``groups``): the stages of :meth:`run` fill the
    fields below them in order, and ``finalise`` sets the estimator's fitted attributes from
    them. ``budget``: the fit's one :class:`Budget` (deadline ``started + time_limit``, the
    reserve kept after the build, the per-run limit and the memory ceiling), handed down to
    the build, the second level and selection, each keeping back what follows it.
    ``level_one``: the library built (or given); ``library``: what selection weighs, that
    library or, with ``levels=2``, both levels (:class:`levels.TwoLevels`)."""

    estimator: Any
    X: Any
    y: Any
    groups: Any = None
    started: float = field(default_factory=time.monotonic)
    metric: Any = None
    source: Library | LibrarySpec | None = None
    rows: int | None = None
    seed: int = 0
    budget: Budget = field(default_factory=Budget)
    selection_budget: Budget = field(default_factory=Budget)
    options: dict = field(default_factory=dict)
    level_one: Library | None = None
    library: Any = None
    level_two_error: str | None = None
    P: np.ndarray | None = None
    report: BudgetReport = field(default_factory=BudgetReport)
    weights: np.ndarray | None = None
    fitted: dict = field(default_factory=dict)

    def run(self) -> Selected:
        """Every stage in order; the estimator's fitted attributes set; what was selected."""
        for stage in (
            self.check,
            self.prepare,
            self.build,
            self.second_level,
            self.time_selection,
            self.select,
            self.finalise,
        ):
            stage()
        return Selected(self.library, self.P, self.metric, self.weights, self.seed)

    # ------------------------------------------------------------------ stages

    def check(self) -> None:
        """What the parameter constraints cannot say: the target, the metric's name and task,
        the spec (a built-in name or an existing file) or the store and its task,
        ``max_predict_ms`` against the strategy, ``grow``, ``levels``. Nothing has been
        trained or written yet when any of these raises."""
        est = self.estimator
        if self.y is None:
            raise ValueError(
                f"{type(est).__name__} requires y to be passed, but the target y is None"
            )
        parse_memory(est.max_memory)  # a size this cannot read fails here, not in the build
        self.metric = resolve_metric(est.metric, task=est._task)
        if Chooser.fixed_cost(est.max_predict_ms) and est.strategy != "es":
            raise ValueError(
                f"max_predict_ms={est.max_predict_ms!r} works with strategy='es', not "
                f"{est.strategy!r}; use strategy='es' or max_predict_ms=None"
            )
        self.source = _source(est.library, est._task, type(est).__name__)
        if isinstance(self.source, LibrarySpec):
            check_grow(parse_grow(grow_spec(est)), est.time_limit is not None)
        levels.check(est, self.source, self.X, self.y)

    def prepare(self) -> None:
        """The fit's seed (drawn once: every seed of the fit derives from it), its one
        budget, the selection options, and under ``time_limit`` the rows counted once (for
        the build's share and the spare tier; a dask frame's count is a pass over it)."""
        est = self.estimator
        self.rows = None if est.time_limit is None else n_rows(self.X)
        self.seed = as_seed(est.random_state)
        ceiling = resolve_max_memory(est.max_memory)
        self.budget = Budget.of(
            est.time_limit, est.run_time_limit, max_memory=ceiling, started=self.started
        )
        if self.budget.timed and isinstance(self.source, LibrarySpec):
            self.budget = self.budget.keep(self._after_build())
        self.options = {
            "n_iter": est.n_iter,
            "n_bags": est.n_bags,
            "bag_fraction": est.bag_fraction,
            "replacement": est.replacement,
            "sorted_init": est.sorted_init,
            "max_init": est.max_init,
            "prune_fraction": est.prune_fraction,
            "random_state": self.seed,
        }

    def build(self) -> None:
        """The level-one library: the one given, or the spec's built (or resumed) on ``X``
        in the build's share of the budget (its reserve and, with ``levels=2``, the second
        level's share kept back, :data:`levels.LEVEL_TWO_SHARE`); its hillclimb matrix."""
        est = self.estimator
        if isinstance(self.source, Library):
            self.library = self.source
        else:
            self.library = build_library(
                self.X,
                self.y,
                spec=self.source,
                cv=est.cv,
                store=est.store,
                n_jobs=est.n_jobs,
                backend=est.backend,
                client=est.client,
                random_state=self.seed,
                groups=self.groups,
                verbose=est.verbose,
                grow=grow_spec(est),
                budget=self.budget.keep(self.budget.reserve + levels.share(est)),
            )
        self.level_one = self.library
        self.P = np.asarray(self.library.predictions)

    def second_level(self) -> None:
        """With ``levels=2``: the level-two library on ``X`` and the strongest level-one runs'
        out-of-fold predictions, built until the budget's deadline less its reserve; from here
        both levels are the library selection weighs (:mod:`ensel.estimator.levels`)."""
        if self.estimator.levels < 2:
            return
        try:
            self.library = levels.build_second_level(
                self.estimator, self.level_one, self.P, self.metric, self.X, self.y, self.groups,
                self.seed, self.budget,
            )  # fmt: skip
        except EmptyLibraryError as exc:  # level one stands alone, as a failed run is skipped
            warnings.warn(
                f"levels=2: no second level, level one alone is selected: {exc}", stacklevel=2
            )
            self.level_two_error = str(exc)
            return
        self.P = self.library.predictions

    def time_selection(self) -> None:
        """Under ``time_limit``: selection's budget (the fit's, keeping ``AFTER_SELECTION``
        back from its deadline) and the selection options that fit the time the build left,
        at the speed a pilot selection on the hillclimb matrix measures (``budget_`` says
        what changed); selection's copies of the matrix stay under the memory ceiling."""
        est, lib = self.estimator, self.level_one
        if est.strategy == "es":
            self.options["memory_budget"] = selection_memory(self.budget.max_memory)
        if not self.budget.timed:
            return
        speed = budget.selection_speed(est.strategy, self.metric, self.options, self.P, lib.y)
        seconds, share, per_row = AFTER_SELECTION
        self.selection_budget = self.budget.keep(
            seconds + share * est.time_limit + per_row * self.P.shape[1]
        )
        left = self.selection_budget.left()
        # "auto" refits selection under smaller predict costs: half the time is theirs
        left = left / 2 if Chooser.auto_cost(est.max_predict_ms) and est.strategy == "es" else left
        self.options, changed = budget.selection_within(self.options, left, speed, self.P.shape)
        self.report = BudgetReport.of_selection(changed)
        self.report.add_build(lib, self.budget.clock() - self.started)
        if lib.plan is not None:
            self.report.plan = budget.plan_summary(lib.plan)
        if isinstance(self.source, LibrarySpec):
            self.report.library = self.source.name
            self.report.spare_runs = len(self.source.spare_for(self.rows, budgeted=True))

    def select(self) -> None:
        """One weight per member by ``strategy`` under the predict-cost limit (and, with
        ``exportable=True``, among the members ``to_onnx`` can express)."""
        chooser = Chooser(self.estimator, self.library, self.P, self.metric, self.selection_budget)
        self.weights = chooser.weights(self.options)
        if self.estimator.exportable:
            self.weights, self.report.exportable = chooser.exportable(self.options, self.weights)
        if isinstance(self.library, levels.TwoLevels):
            self.report.level_two = self.library.summary(self.weights)
        elif self.level_two_error is not None:
            self.report.level_two = {"error": self.level_two_error}
        self.fitted.update(chooser.fitted)

    def finalise(self) -> None:
        """The estimator's fitted attributes: the members with weight (refitted on all rows
        with ``refit="full"``), the leaderboard, the columns, the detectors, ``budget_``,
        ``fit_seconds_`` and, under ``time_limit``, the seconds left unused and why."""
        est = self.estimator
        self.fitted.update(
            kept_attributes(
                est, self.library, self.P, self.weights, self.X, self.y, self.groups, self.seed
            )
        )
        for name, value in self.fitted.items():
            setattr(est, name, value)
        est.budget_ = self.report
        est.fit_seconds_ = time.monotonic() - self.started
        if self.budget.timed:
            self._report_unused()
        est.ensel_version_ = version()

    # ------------------------------------------------------------------ shares of the budget

    def _after_build(self) -> float:
        """Seconds the fit keeps after the build (selection's estimate, then the rest)."""
        est = self.estimator
        n = self.rows
        labels = None if is_source(self.X) else self.y
        hill = resolve_cv(est.cv, n, labels, task=est._task).hillclimb_rows(n)
        classes = 1 if est._task == "regression" else n_classes(self.X, self.y)
        options = {"n_bags": est.n_bags, "n_iter": est.n_iter, "bag_fraction": est.bag_fraction}
        return budget.after_build(est.time_limit, self.source.n_members, hill, classes, options)

    def _report_unused(self) -> None:
        """``budget_.unused_seconds`` (seconds of the budget left when the fit ended) and,
        where the fit ended early, an INFO note that says why."""
        est = self.estimator
        self.report.unused_seconds = max(0.0, est.time_limit - est.fit_seconds_)
        spec = self.source if isinstance(self.source, LibrarySpec) else None
        failures = self.level_one.failures
        why = budget.unused_budget(est.time_limit, est.fit_seconds_, spec, self.rows, failures)
        if why is not None:
            self.report.unused_reason = why
            log.info(
                "the fit ended %.0f s before its time_limit of %g s: %s",
                self.report.unused_seconds,
                est.time_limit,
                why,
            )


def grow_spec(est):
    """``grow`` for the builder (classifiers only), selecting for the estimator's metric."""
    grow = est.grow if est._tune_selection else None
    if grow is None or grow is False or isinstance(grow, GrowSpec):
        return grow
    name = est.metric if isinstance(est.metric, str) else "mxe"
    if grow is True:
        return {"trials": None, "time": None, "metric": name}
    if isinstance(grow, dict):
        return {"metric": name, **grow}
    if isinstance(grow, int) and not isinstance(grow, bool) and grow > 0:
        return {"trials": grow, "metric": name}
    return grow  # the builder's error message names what is wrong


def _source(library, task: str, who: str) -> Library | LibrarySpec:
    """The built library (a Library, or the path of a store) or the spec ``library`` names,
    checked against the estimator's ``task``."""
    source = library
    if isinstance(source, str | os.PathLike) and (Path(source) / "store.json").is_file():
        source = Library.open(source)
    if not isinstance(source, Library):
        source = load_spec(source)
    if source.task != task:
        what = (
            f"library spec {source.name!r} is for"
            if isinstance(source, LibrarySpec)
            else "the library was built for"
        )
        raise ValueError(
            f"{what} {source.task}, but {who} does {task}; use a {task} spec (e.g. "
            f"{'regression' if task == 'regression' else 'default'})"
        )
    return source
