"""build_library: fit every run of a spec over its folds through an executor, commit each run to
a PredictionStore as it finishes, and return the Library (``storage/library.py``) that reads it.

The builder never selects. Runs already in the store are not refitted, so an interrupted build
(even a killed one) resumes where it stopped; a run that crashes or runs out of time is recorded
and skipped.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from numbers import Integral, Real
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.utils._param_validation import (
    Interval,
    StrOptions,
    validate_parameter_constraints,
)

from .._jobs import as_seed, n_workers
from .._progress import progress_bar
from ..data import as_frame
from ..errors import EmptyLibraryError
from .data.sources import is_source, n_rows, prepare_source
from .data.training import TrainingData, prepare, resolve_cv, share_frame
from .execution import dask_executor  # noqa: F401 - registers the backend "dask"
from .execution._worker import describe
from .execution.executor import (
    Executor,
    ProcessExecutor,
    SerialExecutor,
    budget_message,
    make_executor,
)
from .families import get_family, missing_requirements, traits_of
from .kinds import get_kind
from .planning.budget import MAX_RUN_SHARE, Budget, check_grow
from .planning.build_plan import Pace, plan_build
from .planning.grow import GrowSpec, grow_runs, parse_grow
from .planning.memory import MemoryGate, check_data_fits, resolve_max_memory, run_peak
from .planning.schedule import anytime_order, relative_cost
from .spec import SPARE, LibrarySpec, RunSpec, load_spec
from .storage.library import FAILED, Library
from .storage.store import PredictionStore

__all__ = ["build_library"]

log = logging.getLogger(__name__)

RETRIED = ("budget", "memory", "left_out")
"""Statuses of runs a later build into the same store tries again."""
MODEL_SECTIONS = ("families", SPARE)
"""The sections whose runs are models (of a family), not detectors."""
BUILD_PARAMETERS = {
    "cv": [Interval(Integral, 2, None, closed="left"), StrOptions({"auto"}), None],
    "store": [str, os.PathLike, None],
    "n_jobs": [
        Interval(Integral, None, -1, closed="right"),
        Interval(Integral, 1, None, closed="left"),
        None,
    ],
    "backend": [str],
    "random_state": ["random_state"],
    "hillclimb_fraction": [Interval(Real, 0, 1, closed="neither")],
    "time_limit": [Interval(Real, 0, None, closed="neither"), None],
    "run_time_limit": [Interval(Real, 0, None, closed="neither"), None],
    "retry_failed": ["boolean"],
    "verbose": ["verbose"],
}
"""What ``build_library`` accepts (scikit-learn's parameter constraints), checked before any
work; the spec, the backend and ``grow`` are checked by their own parsers right after."""


def build_library(
    X,
    y,
    spec: str | os.PathLike | dict | LibrarySpec = "default",
    cv: int | str | None = "auto",
    store: str | os.PathLike | None = None,
    n_jobs: int | None = 1,
    backend: str = "local",
    client=None,
    random_state=0,
    *,
    groups=None,
    hillclimb_fraction: float = 0.2,
    time_limit: float | None = None,
    run_time_limit: float | None = None,
    retry_failed: bool = False,
    verbose: int = 0,
    grow=None,
    max_memory=None,
    budget: Budget | None = None,
) -> Library:
    """Build (or resume) the library of ``spec`` on ``X, y``.

    ``cv=K``: every member is K siblings and its hillclimb predictions are out-of-fold (§4.3.4);
    ``cv=None``: a stratified ``hillclimb_fraction`` of the rows is held out; ``cv="auto"``
    (the default): 5 folds at every size, so that every run is bagged and selection weighs
    every row (:func:`ensel.library.data.training.resolve_cv`; docs/library.md). A spec with
    ``task: regression`` (``"regression"``, ``"tiny_regression"``) builds regressors for a real
    ``y`` with plain (unstratified) folds; its detectors that need class labels are skipped.
    ``groups`` keeps rows of one group (one person in panel data) in one fold. ``store``: a
    directory that keeps everything (a temporary one if None); building again into it reuses
    every finished run.
    ``max_memory`` (bytes, or a size such as ``"8GB"``; None: ``memory.DEFAULT_SHARE`` of the
    memory this process may use) is a ceiling on this process and its workers
    (:mod:`ensel.library.planning.memory`): the data must fit under it before any run; a run
    starts only when its estimated peak fits beside the runs in flight and is stopped when the
    measured memory passes it (status ``memory``, tried again by the next build).
    ``time_limit`` (seconds, :mod:`ensel.library.planning.budget`) is the budget of the whole
    build: the runs go in an anytime order (:mod:`ensel.library.planning.schedule`), no run may
    take more than half the budget, and when it ends the runs in flight are stopped and the
    others not started (status ``budget``: the next build into the same store builds them).
    ``run_time_limit`` (seconds per run, all folds; default the spec's) stops a run that takes
    too long; such runs, and runs that fail, are recorded in ``Library.failures`` and skipped.
    ``backend="local"`` runs on this machine with ``n_jobs`` processes (ensel's own pool:
    see :mod:`ensel.library.execution.executor`); ``backend="dask"`` runs on every worker of a
    dask cluster (``n_jobs`` does not apply): ``client`` is a ``distributed.Client``, a
    scheduler address (``"tcp://HOST:8786"``) or None for the current client (see
    docs/distributed.md). Either way the client writes the store, and the same seed gives the
    same store (a budget that ends early gives fewer runs).
    ``grow``: after the spec's runs, propose new runs with optuna where the ensemble gains
    (:mod:`ensel.library.planning.grow`): a number of trials, or a dict such as ``{"trials": 30,
    "time": 120, "metric": "mxe", "families": [...]}``; the proposed runs that raised the
    ensemble's cross-selected score join the library (under a ``time_limit``, in the time the
    spec's runs leave; ``grow=True``: as many trials as that time allows).
    ``n_jobs`` as joblib reads it (None: 1; -1: every CPU this process may use; -k: all but
    k-1). ``random_state``: an int, or a ``RandomState`` (or None) to draw one seed from.
    ``verbose``: 0 (the default) is silent, more shows a progress bar on a terminal. Arguments
    are checked before any run starts (a ValueError names the argument and what it takes).
    ``budget``: a :class:`~ensel.library.planning.budget.Budget` in place of ``time_limit``,
    ``run_time_limit`` and ``max_memory`` (an estimator hands down its fit's).
    """
    given = {name: value for name, value in locals().items() if name in BUILD_PARAMETERS}
    started = time.monotonic()
    asked = _asked_budget(budget, time_limit, run_time_limit, max_memory, started)
    validate_parameter_constraints(BUILD_PARAMETERS, given, "build_library")
    random_state = as_seed(random_state)
    library_spec = load_spec(spec).for_rows(n_rows(X))  # runs for large tables only left out
    grow_spec = _grow_spec(grow, random_state, library_spec, asked.timed)
    choice = _choose_cv(X, y, cv, hillclimb_fraction, library_spec.task)
    budget = asked.for_build(library_spec.run_time_limit, started)
    _check_rows_fit(X, budget.max_memory, n_workers(n_jobs) if backend != "dask" else 1)
    executor = make_executor(_jobs_for(n_jobs, backend, X), backend, client)
    try:
        data = _prepare(X, y, groups, choice, random_state, library_spec.task, executor, budget)
        return _build(BuildContext(
            data, library_spec, choice.cv, choice.hillclimb_fraction, executor, budget,
            random_state, retry_failed, verbose, grow_spec,
        ), store)  # fmt: skip
    finally:
        executor.close()


def _asked_budget(budget: Budget | None, time_limit, run_time_limit, max_memory, started) -> Budget:
    """The budget the caller asked for: ``budget`` as given, or one made from ``time_limit``
    (counted from ``started``), ``run_time_limit`` and ``max_memory`` (resolved to bytes:
    None is ``memory.DEFAULT_SHARE`` of what this process may use); not both."""
    if budget is not None:
        if (time_limit, run_time_limit, max_memory) != (None, None, None):
            raise ValueError(
                "build_library takes a budget or time_limit, run_time_limit and max_memory, "
                "not both; give those to the Budget"
            )
        return budget
    ceiling = resolve_max_memory(max_memory)  # a bad value fails before any work
    return Budget.of(time_limit, run_time_limit, max_memory=ceiling, started=started)


def _choose_cv(X, y, cv, hillclimb_fraction: float, task: str):
    """The folds or held-out hillclimb set of the build (:func:`training.resolve_cv`); a
    source's labels are read with its rows, so its size decides alone."""
    labels = None if is_source(X) else y
    return resolve_cv(cv, n_rows(X), labels, hillclimb_fraction=hillclimb_fraction, task=task)


def _check_rows_fit(X, ceiling: int | None, workers: int) -> None:
    """Rows in memory that cannot fit under the memory ceiling fail before anything."""
    if not is_source(X):
        check_data_fits(X if isinstance(X, pd.DataFrame) else as_frame(X), ceiling, workers)


def _grow_spec(grow, seed: int, spec: LibrarySpec, timed: bool) -> GrowSpec | None:
    """``grow`` parsed and checked against the spec's task and whether there is a time
    budget."""
    grow_spec = parse_grow(grow, seed=seed)
    if grow_spec is not None and spec.task != "classification":
        raise ValueError("grow= grows classification libraries only; leave grow=None here")
    check_grow(grow_spec, timed)
    return grow_spec


def _prepare(X, y, groups, choice, random_state: int, task: str, executor, budget) -> TrainingData:
    """The prepare stage: the training data (folds, encoding; a source's rows stay where they
    are unless the runs fit in this process), checked against the memory ceiling."""
    data = (prepare_source if is_source(X) else prepare)(
        X,
        y,
        cv=choice.cv,
        groups=groups,
        hillclimb_fraction=choice.hillclimb_fraction,
        random_state=random_state,
        task=task,
        **({"client": executor.client} if is_source(X) else {}),
    )
    if isinstance(executor, SerialExecutor) and not data.in_memory:
        data = data.load()  # runs fit in this process: the rows are read here
    check_data_fits(data.X, budget.max_memory, executor.slots if executor.local_memory else 1)
    return data


@dataclass(frozen=True)
class RunInputs:
    """What every run of a build shares, sent once to each worker: the training data, each
    section's run context and fit function, and the build's seed."""

    data: TrainingData
    contexts: dict
    fits: dict
    random_state: int


@dataclass
class BuildContext:
    """One build's state, filled in by its stages (prepare, plan, run, spare and grow,
    consolidate): what it was asked (``data`` ... ``grow``; ``budget``, the build's one
    :class:`Budget`, takes the plan's pace), the stores it writes (``writer``, the library's
    own; ``stores``, each section's), the run contexts and fit functions of its sections, the
    tasks each stage runs, and the plan's notes under a time budget."""

    data: TrainingData
    spec: LibrarySpec
    cv: int | None
    hillclimb_fraction: float
    executor: Executor
    budget: Budget
    random_state: int
    retry_failed: bool
    verbose: int
    grow: GrowSpec | None
    writer: PredictionStore | None = None
    sections: list = field(default_factory=list)
    stores: dict = field(default_factory=dict)
    contexts: dict = field(default_factory=dict)
    fits: dict = field(default_factory=dict)
    tasks: list = field(default_factory=list)
    spare: list = field(default_factory=list)
    spare_runs: list = field(default_factory=list)
    notes: dict = field(default_factory=dict)

    @property
    def inputs(self) -> RunInputs:
        return RunInputs(self.data, self.contexts, self.fits, self.random_state)

    @property
    def order(self) -> list[str]:
        """The run ids of the library, in the spec's order, spare tier last."""
        return [r.run_id for r in self.spec.runs] + [r.run_id for r in self.spare_runs]

    def header(self) -> dict:
        return _header(self.data, self.cv, self.hillclimb_fraction)


def _build(build: BuildContext, store) -> Library:
    """Fit the runs of every section of the spec missing from ``store`` through the executor,
    in one pass, kinds of run in their ``order`` (detectors, a few long tasks, start before the
    model runs so that no worker waits on one at the end). Worker processes map the training
    matrix from the store's ``training`` directory (removed at the end) instead of each
    unpickling a copy."""
    tmp = None
    if store is None:
        tmp = tempfile.TemporaryDirectory(prefix="ensel-library-")
        store = Path(tmp.name) / "store"
    build.writer = PredictionStore(store, build.header())
    try:
        _collect(build)
        _plan(build)
        _run(build)
        _check_not_empty(build)
        order = _grow_stage(build) if build.grow is not None else build.order
        _consolidate(build, order)
    finally:
        build.writer.close()
        for part in build.stores.values():
            part.close()
        shutil.rmtree(build.writer.path / TRAINING_DIR, ignore_errors=True)
    return Library(PredictionStore(build.writer.path), _tmp=tmp)


def _collect(build: BuildContext) -> None:
    """Each section's store, run context and fit function, and the runs missing from its
    store (less those whose packages are not installed); the spare tier's runs apart."""
    budget, writer = build.budget, build.writer
    build.sections = sorted(build.spec.sections, key=lambda s: get_kind(s[0]).order)
    tasks = []
    for section, specs in build.sections:
        kind = get_kind(section)
        if not specs:
            continue
        if kind.store is None:
            # the library's own runs: the per-run limit and the deadline, so that a family that
            # stops in time ends with the stages it reached instead of being stopped
            build.stores[section] = writer
            build.contexts[section] = {"run_limit": budget.run_limit, "ends_at": budget.ends_at()}
        else:
            build.contexts[section], header = kind.prepare(
                build.data, build.header(), build.random_state
            )
            build.stores[section] = PredictionStore(writer.path / kind.store, header)
        build.fits[section] = kind.fit
        tasks += [(section, s) for s in _missing(build.stores[section], specs, build.retry_failed)]
    tasks = _installed(tasks)
    build.spare_runs = build.spec.spare_for(build.data.y.size, budget.timed)
    spare_ids = {r.run_id for r in build.spare_runs}  # a run the main tier has is fitted there
    build.spare = [t for t in tasks if t[0] == SPARE and t[1].run_id in spare_ids]
    build.tasks = [t for t in tasks if t[0] != SPARE]


def _plan(build: BuildContext) -> None:
    """The plan stage, under a time budget: the runs in an anytime order, then those the
    planner expects to end in time (the others recorded ``left_out``), on the subsample and
    under the cap it chose for each. A plan strong first (the spec's ``strong_first_rows``)
    takes the spare tier's runs into the same plan, so that its strong runs go before the
    main tier's weak ones (a later tier's strong runs would otherwise wait behind them)."""
    planned = None
    if build.budget.timed:
        options = _plan_options(build)
        if options.get("strong_first") and build.spare:
            build.tasks, build.spare = build.tasks + build.spare, []
        models = [_as_model(task) for task in build.tasks]  # planned as model runs
        tasks = [models[i] for i in anytime_order(models, build.data.y.size)]
        planned = plan_build(tasks, build.data, _plan_budget(build), **options)
        build.tasks, build.notes = [_in_tier(task) for task in planned.tasks], planned.notes
        for section, run, why in planned.left_out:
            section, _ = _in_tier((section, run))
            build.stores[section].write_failure(run, "left_out", why, 0.0)
        for section in MODEL_SECTIONS:
            if section in build.contexts:
                _tell_runs(build.contexts[section], planned)
        if planned.table is not None:
            build.writer.write_plan(planned.table)
    build.budget = build.budget.paced(Pace.of(planned))


def _as_model(task: tuple) -> tuple:
    """A spare-tier task as the planner estimates it: a run of the section ``families``."""
    section, run = task
    return ("families", run) if section == SPARE else task


def _in_tier(task: tuple) -> tuple:
    """A planned task back in its own section: a spare-tier run in ``spare``."""
    section, run = task
    return (SPARE, run) if section == "families" and run.tier == SPARE else task


def _run(build: BuildContext) -> None:
    """The run stage: the planned runs through the executor (the training matrix shared with
    the worker processes, a quick run fitted here meanwhile under a budget), then the spare
    tier's."""
    here = build.data.in_memory  # a quick run fitted here needs the rows here
    if isinstance(build.executor, ProcessExecutor) and build.tasks and here:
        build.data = share_frame(build.data, build.writer.path / TRAINING_DIR)
    inputs = build.inputs
    first = _first_run(build.tasks) if build.budget.timed and here else None
    if first is not None:  # fitted here while the worker processes start
        build.tasks.remove(first)
        first_run = _InProcessRun(_fit_task, first, inputs)
    _run_all(build, build.tasks, build.verbose, build.notes)
    if first is not None:
        first_run.commit(first, build.stores, build.budget)
    if build.spare:
        _run_spare(build)


def _check_not_empty(build: BuildContext) -> None:
    """Refuse a library without one finished run, with the reason."""
    writer, name = build.writer, build.spec.name
    if writer.ok_runs(build.order):
        return
    failed = writer.members(build.order, statuses=FAILED)
    if build.budget.timed and (failed["status"] == "budget").any():
        raise EmptyLibraryError(
            f"no run of spec {name!r} finished within the time budget, so the library is empty; "
            "give a larger time_limit (the finished work is kept in the store, if one was given)"
        )
    reasons = "; ".join(dict.fromkeys(failed["error"].tolist()))[:500]
    raise EmptyLibraryError(
        f"no run of spec {name!r} finished, so the library is empty; "
        f"errors: {reasons or 'none recorded'}"
    )


def _grow_stage(build: BuildContext) -> list[str]:
    """The grow stage: new runs proposed where the ensemble gains, each fitted and stored like
    any other, in the time the spec's runs left under a budget; the library's run ids after."""
    writer, grow_spec = build.writer, build.grow

    def fit(runs: list[RunSpec]) -> dict[str, bool]:
        todo = [("families", r) for r in _missing(writer, runs, build.retry_failed)]
        _run_all(build, todo, 0, budget=build.budget.paced(None))  # no plan paces them
        return {r.run_id: writer.records.get(r.run_id, {}).get("status") == "ok" for r in runs}

    if grow_spec.batch is None:  # one proposal per slot: every worker fits one
        grow_spec = dataclasses.replace(grow_spec, batch=build.executor.slots)
    if build.budget.timed:  # grow in the time the spec's runs left
        left = max(0.0, build.budget.left())
        grow_spec = dataclasses.replace(
            grow_spec, time=left if grow_spec.time is None else min(grow_spec.time, left)
        )
    order = build.order
    return order + _grow(writer, build.data, grow_spec, order, fit)


def _consolidate(build: BuildContext, order: list[str]) -> None:
    """The consolidate stage: each store's finished runs into one file per store."""
    build.writer.consolidate(order)
    for section, specs in build.sections:
        part = build.stores.get(section)
        if part is not None and part is not build.writer:
            part_order = [s.run_id for s in specs]
            if part.ok_runs(part_order):  # the library works without them
                part.consolidate(part_order)


def _plan_budget(build: BuildContext) -> Budget:
    """The build's budget as its plan reads it: the memory ceiling only where the executor's
    runs share this machine's memory (a dask cluster's workers keep their own)."""
    if build.executor.local_memory:
        return build.budget
    return dataclasses.replace(build.budget, max_memory=None)


def _plan_options(build: BuildContext) -> dict:
    """What a plan needs of the executor and the spec: the runs it runs at once and whether
    the runs go strong first (the spec's ``strong_first_rows``, on a table that large)."""
    options = {"n_workers": build.executor.slots}
    if build.spec.strong_first(build.data.y.size):
        options["strong_first"] = True
    return options


def _tell_runs(context: dict, planned) -> None:
    """Put in a section's run ``context`` what its plan decided per run: the subsample each
    fit trains on and the seconds a capped run may take."""
    if planned.subsample:
        context["subsample"] = planned.subsample
    if planned.caps:
        context["caps"] = planned.caps


def _run_spare(build: BuildContext) -> None:
    """Fit the spare tier's runs after the main ones: under a time budget only those the
    build's planner (:func:`ensel.library.planning.build_plan.plan_build`, its estimates of each
    run on this table) says end within the time left, on its subsample where it planned one;
    the others are recorded with status ``left_out`` and the planner's note (a later build
    into the same store tries them again). The plan reads the budget's time only: the memory
    ceiling holds the spare runs at their start, through the gate of :func:`_run_all`."""
    spare, store = build.spare, build.stores[SPARE]
    if not build.budget.timed:
        _run_all(build, spare, build.verbose)
        return
    left = build.budget.left()
    # planned as model runs: the planner estimates the section "families" only
    models = [("families", run) for _, run in spare]
    timed = dataclasses.replace(build.budget, max_memory=None)
    planned = plan_build(models, build.data, timed, **_plan_options(build))
    for _, run, why in planned.left_out:
        store.write_failure(run, "left_out", f"spare tier: {why}", 0.0)
    _tell_runs(build.contexts[SPARE], planned)
    todo = [(SPARE, run) for _, run in planned.tasks]
    paced = build.budget.paced(Pace.of(planned, label="spare tier: "))
    _run_all(build, todo, build.verbose, planned.notes, paced)
    out = sum(store.records.get(r.run_id, {}).get("status") == "left_out" for _, r in spare)
    if out:
        log.info(
            "spare tier: %d of %d runs left out, estimated not to end within the %.0f s left",
            out,
            len(spare),
            max(left, 0.0),
        )


def _grow(writer: PredictionStore, data, grow_spec: GrowSpec, order: list[str], fit) -> list:
    """Run the growth stage over the ok runs of ``order``; the ids of the runs it added."""
    binary = data.n_classes == 2

    def predictions(run_ids: list[str]) -> np.ndarray:
        P = np.concatenate([writer.run_predictions(r) for r in run_ids])
        return P[..., 1] if binary else P

    ok = writer.ok_runs(order)
    added = grow_runs(grow_spec, predictions, ok, data.y[data.hillclimb], fit)
    return [r for r in added if r not in order]


def _installed(tasks: list) -> list:
    """``tasks`` less the model runs of families whose optional package is not installed
    (catboost, torch, ...): skipped with one log line, not failed, so that a library takes the
    members its environment can fit (a later build where the package is installed fits them)."""
    missing = [
        missing_requirements(get_family(run.family, run.task)) if section in MODEL_SECTIONS else []
        for section, run in tasks
    ]
    absent = [(run, modules) for (_, run), modules in zip(tasks, missing, strict=True) if modules]
    if absent:
        log.info(
            "%d run(s) skipped, their packages are not installed (%s): pip install %s",
            len(absent),
            ", ".join(sorted({run.family for run, _ in absent})),
            " ".join(sorted({m for _, modules in absent for m in modules})),
        )
    return [task for task, modules in zip(tasks, missing, strict=True) if not modules]


def _missing(store: PredictionStore, specs, retry_failed: bool) -> list:
    """The runs of ``specs`` that ``store`` has not finished: never tried, cut short by a
    build's time budget or memory ceiling or left out by its plan, or (with ``retry_failed``)
    failed or timed out."""
    done = store.records
    return [
        s
        for s in specs
        if s.run_id not in done
        or done[s.run_id]["status"] in RETRIED
        or (retry_failed and done[s.run_id]["status"] != "ok")
    ]


def _header(data: TrainingData, cv: int | None, hillclimb_fraction: float = 0.2) -> dict:
    return {
        "fingerprint": data.fingerprint(),
        "task": data.task,
        "classes": [c.item() if hasattr(c, "item") else c for c in data.classes],
        "n_hillclimb": int(data.hillclimb.size),
        "cv": cv,
        "hillclimb_fraction": hillclimb_fraction,
        "columns": list(data.X.columns),
        "input_columns": list(data.input_columns or data.X.columns),
        "dropped": dict(data.dropped),
        "categories": {
            col: [str(v) for v in cats]
            for col, cats in zip(data.columns.categorical, data.columns.categories, strict=True)
        },
        "hillclimb": data.hillclimb,
        "labels": data.y[data.hillclimb],
    }


def _fit_task(task: tuple, inputs: RunInputs):
    """One run of any kind over its folds; the fitted siblings come back pickled (the worker
    does that work, not the client)."""
    section, run = task
    return inputs.fits[section](run, inputs.data, inputs.contexts[section], inputs.random_state)


IN_PROCESS_ROWS = 200
"""Below this many rows, ``n_jobs < 0`` (every available CPU, not a number of workers the
caller chose) builds in this process: each run takes milliseconds there, and starting a worker
process (a Python with the fitting stack imported) takes about a second."""


def _jobs_for(n_jobs, backend: str, X) -> int | None:
    """``n_jobs`` as the local executor takes it: 1 on a table of fewer than
    ``IN_PROCESS_ROWS`` rows where ``n_jobs`` asks for every CPU (the runs and their
    predictions are the same in this process and in workers: each run is seeded alone)."""
    if backend == "local" and n_jobs is not None and n_jobs < 0 and n_rows(X) < IN_PROCESS_ROWS:
        return 1
    return n_jobs


def _run_all(
    build: BuildContext,
    todo: list,
    verbose: int,
    notes: dict[str, str] | None = None,
    budget: Budget | None = None,
) -> None:
    """Run every ``(section, run)`` of ``todo`` and commit each outcome, as it arrives, to the
    store of its section (``notes``: run id -> the note kept beside a trained run) under
    ``budget`` (the build's by default). A run the budget's cap stops is recorded as
    ``budget`` (built again by a later build), not ``timeout``. The budget's memory ceiling is
    kept by a local executor through a :class:`~ensel.library.planning.memory.MemoryGate` over
    each run's estimated peak. The budget's ``pace``: the plan's estimates against the runs'
    real seconds; a run that would end after the deadline at that pace is not started."""
    if not todo:
        return
    executor, budget = build.executor, budget or build.budget
    options = {}
    if budget.max_memory is not None and executor.gates_memory:
        peaks = [run_peak(sec, run, build.data) for sec, run in todo]
        options["memory"] = MemoryGate(budget.max_memory, peaks)
    progress = _progress(todo, verbose, budget)
    skip = _Skip(todo, budget)
    start = budget.clock()
    try:
        outcomes = executor.run(_fit_task, todo, build.inputs, budget, skip=skip, **options)
        for done, outcome in enumerate(outcomes, 1):
            section, run = todo[outcome.index]
            _commit(outcome, section, run, build.stores[section], skip, notes or {})
            if progress is not None:
                _advance(progress, done, len(todo), budget, start)
        skipped = sum(
            build.stores[section].records.get(run.run_id, {}).get("status") == "budget"
            for section, run in todo
        )
        if skipped:
            log.info(
                "the time budget ended with %d of %d runs not finished; build again into the "
                "same store to add them",
                skipped,
                len(todo),
            )
    finally:
        if progress is not None:
            progress.close()


class _Skip:
    """Asked by the executor just before a run starts: under a budget, a run is not started
    when a run of its family that costs no more was already cut short by the budget (it would
    not finish either), or when at the budget's pace so far it would end after the deadline
    (any run the plan estimated, detectors too)."""

    def __init__(self, todo: list, budget: Budget) -> None:
        self.todo, self.budget = todo, budget
        self.cut: dict[tuple[str, str], float] = {}  # (section, family) -> cost of a run cut

    def __call__(self, index: int) -> str | None:
        section, run = self.todo[index]
        if not self.budget.timed:
            return None
        limit = self.cut.get((section, run.family)) if section in MODEL_SECTIONS else None
        if limit is not None and _cost(run) >= limit:
            return (
                "not started: a run of its family that costs no more did not finish within "
                "the time budget"
            )
        pace = self.budget.pace
        if pace is not None:
            return pace.too_late(run.run_id, self.budget.left(), self.budget.run_limit)
        return None

    def cut_short(self, section: str, run) -> None:
        """Note that the budget stopped ``run`` of a model section after it started."""
        key = (section, run.family)
        self.cut[key] = min(self.cut.get(key, np.inf), _cost(run))


def _commit(outcome, section: str, run, store, skip: _Skip, notes: dict) -> None:
    """Write one outcome to its section's store: a trained run, or its failure and why."""
    cap, pace = skip.budget.budget_cap, skip.budget.pace
    if outcome.status == "timeout" and cap is not None:
        outcome.status = "budget"
        outcome.error = (
            f"stopped after {cap:g} s: under a time budget no run may take more "
            f"than {MAX_RUN_SHARE:.0%} of it"
        )
    if outcome.status == "budget" and outcome.seconds > 0 and section in MODEL_SECTIONS:
        skip.cut_short(section, run)
    standby = pace.left_out(run.run_id, outcome.error) if pace is not None else None
    if outcome.status == "budget" and outcome.seconds == 0 and standby:
        outcome.status, outcome.error = "left_out", standby
    if outcome.status == "ok":
        if pace is not None:
            pace.finished(run.run_id, outcome.seconds)
        store.write_run(run, outcome.value, outcome.seconds, note=notes.get(run.run_id, ""))
    else:
        store.write_failure(run, outcome.status, outcome.error, outcome.seconds)
        if outcome.status not in ("budget", "left_out"):
            log.warning("run %s %s: %s", run.run_id, outcome.status, outcome.error)


def _advance(progress, done: int, total: int, budget: Budget, start: float) -> None:
    """Move the progress bar: one run, or the seconds spent of the budget."""
    if not budget.timed:
        progress.update(1)
    else:
        progress.set_postfix_str(f"{done}/{total} runs", refresh=False)
        progress.update(min(budget.clock(), budget.deadline) - start - progress.n)


TRAINING_DIR = "training"
"""Store sub-directory that holds the training matrix workers map during a build."""


def _first_run(tasks: list) -> tuple | None:
    """The quick run to fit in this process first, or None: under a time budget the cheapest
    run of the quick family (``FamilyTraits.quick``, lowest first) in the spec is fitted in the
    calling process while the worker processes start, so that even a budget that ends before
    any worker finishes a run leaves a library."""
    quick = {}
    for t in tasks:
        if t[0] == "families":
            order = traits_of(t[1].family, t[1].task).quick
            if order is not None:
                quick.setdefault(order, []).append(t)
    return min(quick[min(quick)], key=lambda t: _cost(t[1])) if quick else None


class _InProcessRun:
    """One task run in a thread of this process while the worker processes start (see
    ``_first_run``); ``commit`` waits for it and stores it."""

    def __init__(self, fn, task, shared) -> None:
        self.outcome: tuple | None = None
        self.seconds: float | None = None  # the fit's own seconds, once it has ended
        self._thread = threading.Thread(target=self._run, args=(fn, task, shared), daemon=True)
        self._start = time.perf_counter()
        self._thread.start()

    def _run(self, fn, task, shared) -> None:
        try:
            self.outcome = ("ok", fn(task, shared), "")
        except Exception as exc:  # recorded like a failed run
            self.outcome = ("failed", None, describe(exc))
        self.seconds = time.perf_counter() - self._start

    def commit(self, task: tuple, stores: dict, budget: Budget) -> None:
        self._thread.join(timeout=max(budget.left(), 0.5))
        seconds = self.seconds if self.seconds is not None else time.perf_counter() - self._start
        section, run = task
        if self._thread.is_alive():  # left to end on its own; its result is not kept
            status, value, error = "budget", None, budget_message(seconds)
        else:
            status, value, error = self.outcome or ("failed", None, "no outcome")
        if status == "ok":
            stores[section].write_run(run, value, seconds)
        else:
            stores[section].write_failure(run, status, error, seconds)
            if status != "budget":
                log.warning("run %s %s: %s", run.run_id, status, error)


def _cost(run) -> float:
    return relative_cost(run.family, dict(run.params), run.stages, run.task)


def _progress(todo: list, verbose: int, budget: Budget):
    """A progress bar (a terminal's or a notebook's, see :mod:`ensel._progress`): runs done,
    or, under a time budget, seconds elapsed against the budget."""
    members = sum(len(r.members) for _, r in todo)
    if not budget.timed:
        return progress_bar(
            verbose, total=len(todo), desc=f"library ({members} members)", unit="run"
        )
    return progress_bar(
        verbose,
        total=round(max(budget.left(), 0.0), 1),
        desc=f"library ({members} members)",
        unit="s",
        bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.0f}/{total:.0f} s of budget {postfix}",
    )
