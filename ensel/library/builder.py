"""build_library: fit every run of a spec over its folds through an executor, commit each run to
a PredictionStore as it finishes, and return the Library (``library.py``) that reads it.

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
from . import dask_executor  # noqa: F401 - registers the backend "dask"
from ._worker import describe
from .executor import Executor, ProcessExecutor, SerialExecutor, budget_message, make_executor
from .families import get_family, missing_requirements
from .grow import GrowSpec, grow_runs, parse_grow
from .kinds import get_kind
from .library import FAILED, Library
from .memory import MemoryGate, check_data_fits, parse_memory, resolve_max_memory, run_peak
from .planned import Pace, plan_build
from .schedule import anytime_order, relative_cost
from .sources import is_source, n_rows, prepare_source
from .spec import SPARE, LibrarySpec, RunSpec, load_spec
from .store import PredictionStore
from .training import TrainingData, prepare, resolve_cv, share_frame

__all__ = ["build_library"]

log = logging.getLogger(__name__)

RETRIED = ("budget", "memory", "left_out")
"""Statuses of runs a later build into the same store tries again."""
MODEL_SECTIONS = ("families", SPARE)
"""The sections whose runs are models (of a family), not detectors."""
MAX_RUN_SHARE = 0.5
"""Under a time budget no run may take more than this share of it."""
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
) -> Library:
    """Build (or resume) the library of ``spec`` on ``X, y``.

    ``cv=K``: every member is K siblings and its hillclimb predictions are out-of-fold (§4.3.4);
    ``cv=None``: a stratified ``hillclimb_fraction`` of the rows is held out; ``cv="auto"``
    (the default): 5 folds on a small table, a held-out hillclimb set of a few thousand rows on
    a large one (:func:`ensel.library.training.resolve_cv`; docs/library.md). A spec with
    ``task: regression`` (``"regression"``, ``"tiny_regression"``) builds regressors for a real
    ``y`` with plain (unstratified) folds; its detectors that need class labels are skipped.
    ``groups`` keeps rows of one group (one person in panel data) in one fold. ``store``: a
    directory that keeps everything (a temporary one if None); building again into it reuses
    every finished run.
    ``max_memory`` (bytes, or a size such as ``"8GB"``; None: ``memory.DEFAULT_SHARE`` of the
    memory this process may use) is a ceiling on the memory of this process and its workers,
    kept like the time budget (:mod:`ensel.library.memory`, docs/library.md "Memory"): a clear
    error before any run when the training data alone cannot fit; a run starts only when its
    estimated peak fits beside the runs in flight, a run that can never fit is skipped, and a
    run in flight when the measured memory passes the ceiling is stopped (both recorded in
    ``Library.failures`` with status ``memory`` and tried again by the next build).
    ``time_limit`` (seconds) is the budget of the whole build: the runs go in an anytime order
    (``ensel.library.schedule``: round-robin over the families, strongest first, cheapest run
    of each first; kernel SVMs and k-NN last on large data), no run may take more than half the
    budget, and when the budget ends the runs in flight are stopped and the others not started;
    they are recorded with status ``budget`` and built by the next build into the same store.
    ``run_time_limit`` (seconds per run, all folds; default the spec's ``run_time_limit``)
    stops a run that takes too long; such runs, and runs that fail, are recorded in
    ``Library.failures`` and skipped.
    ``backend="local"`` runs on this machine with
    ``n_jobs`` processes (ensel's own pool, not joblib's: see :mod:`ensel.library.executor`);
    ``backend="dask"`` runs on every worker of a dask cluster (``n_jobs`` does not apply):
    ``client`` is a ``distributed.Client``, a scheduler address (``"tcp://HOST:8786"``) or None
    for the current client (see docs/distributed.md). Either way the client writes the store,
    and the same seed gives the same store (a budget that ends early gives fewer runs).
    ``grow``: after the spec's runs, propose new runs with optuna where the ensemble gains
    (:mod:`ensel.library.grow`): a number of trials, or a dict such as ``{"trials": 30,
    "time": 120, "metric": "mxe", "families": [...]}``; every proposed run is stored like any
    other, and those that raised the ensemble's cross-selected score join the library (under a
    ``time_limit`` growth gets the time the spec's runs leave, at most its own ``time``;
    ``grow=True``: as many trials as that time allows).
    ``n_jobs`` as joblib reads it (None: 1; -1: every CPU this process may use; -k: all but
    k-1). ``random_state``: an int, or a ``RandomState`` (or None) to draw one seed from.
    ``verbose``: 0 (the default) is silent, more shows a progress bar on a terminal. Arguments
    are checked before any run starts (a ValueError names the argument and what it takes).
    """
    parse_memory(max_memory)  # a bad value fails before any work
    started = time.monotonic()
    given = {
        "cv": cv,
        "store": store,
        "n_jobs": n_jobs,
        "backend": backend,
        "random_state": random_state,
        "hillclimb_fraction": hillclimb_fraction,
        "time_limit": time_limit,
        "run_time_limit": run_time_limit,
        "retry_failed": retry_failed,
        "verbose": verbose,
    }
    validate_parameter_constraints(BUILD_PARAMETERS, given, "build_library")
    random_state = as_seed(random_state)
    library_spec = load_spec(spec)
    grow_spec = parse_grow(grow, seed=random_state)
    if grow_spec is not None and library_spec.task != "classification":
        raise ValueError("grow= grows classification libraries only; leave grow=None here")
    if grow_spec is not None and time_limit is None and grow_spec.is_open:
        raise ValueError(
            "grow=True grows in the time left under time_limit; give time_limit, or a budget "
            "such as grow={'trials': 20} or grow={'time': 120}"
        )
    limit = run_time_limit if run_time_limit is not None else library_spec.run_time_limit
    deadline, capped = None, False
    if time_limit is not None:
        deadline = started + float(time_limit)
        cap = max(float(time_limit) * MAX_RUN_SHARE, 1.0)
        capped = limit is None or cap < limit
        limit = cap if capped else limit
    choice = resolve_cv(  # a source's labels are read with its rows: its size decides alone
        cv,
        n_rows(X),
        None if is_source(X) else y,
        hillclimb_fraction=hillclimb_fraction,
        task=library_spec.task,
    )
    ceiling = resolve_max_memory(max_memory)
    if not is_source(X):  # rows in memory: a ceiling they cannot fit under fails before anything
        frame = X if isinstance(X, pd.DataFrame) else as_frame(X)
        check_data_fits(frame, ceiling, n_workers(n_jobs) if backend != "dask" else 1)
    executor = make_executor(n_jobs, limit, backend, client)
    try:
        data = (prepare_source if is_source(X) else prepare)(
            X,
            y,
            cv=choice.cv,
            groups=groups,
            hillclimb_fraction=choice.hillclimb_fraction,
            random_state=random_state,
            task=library_spec.task,
            **({"client": executor.client} if is_source(X) else {}),
        )
        if isinstance(executor, SerialExecutor) and not data.in_memory:
            data = data.load()  # runs fit in this process: the rows are read here
        check_data_fits(data.X, ceiling, executor.slots if executor.local_memory else 1)
        return _build(
            data,
            library_spec,
            choice.cv,
            store,
            executor,
            random_state,
            retry_failed,
            verbose,
            grow_spec,
            deadline,
            limit if capped else None,
            hillclimb_fraction=choice.hillclimb_fraction,
            ceiling=ceiling,
        )
    finally:
        executor.close()


def _build(
    data: TrainingData,
    library_spec: LibrarySpec,
    cv: int | None,
    store,
    executor: Executor,
    random_state: int,
    retry_failed: bool,
    verbose: int,
    grow_spec: GrowSpec | None = None,
    deadline: float | None = None,
    budget_cap: float | None = None,
    hillclimb_fraction: float = 0.2,
    ceiling: int | None = None,
) -> Library:
    """Fit the runs of every section of ``library_spec`` missing from ``store`` through
    ``executor``, in one pass, kinds of run in their ``order`` (detectors, a few long tasks,
    start before the model runs so that no worker waits on one at the end). Worker processes
    map the training matrix from the store's ``training`` directory (removed at the end)
    instead of each unpickling a copy."""
    tmp = None
    if store is None:
        tmp = tempfile.TemporaryDirectory(prefix="ensel-library-")
        store = Path(tmp.name) / "store"
    writer = PredictionStore(store, _header(data, cv, hillclimb_fraction))
    stores = {}  # section -> its store: the library's own, or a sub-store of its kind
    contexts, fits, tasks = {}, {}, []
    try:
        sections = sorted(library_spec.sections, key=lambda s: get_kind(s[0]).order)
        for section, specs in sections:
            kind = get_kind(section)
            if not specs:
                continue
            if kind.store is None:
                # the library's own runs: the executor's per-run limit and the deadline, so
                # that a family that stops in time ends with the stages it reached instead of
                # being stopped (a wall-clock time: workers may be other processes, machines)
                limit = executor.time_limit
                ends_at = None if deadline is None else time.time() + deadline - time.monotonic()
                stores[section] = writer
                contexts[section] = {"run_limit": limit, "ends_at": ends_at}
            else:
                contexts[section], header = kind.prepare(
                    data, _header(data, cv, hillclimb_fraction), random_state
                )
                stores[section] = PredictionStore(writer.path / kind.store, header)
            fits[section] = kind.fit
            tasks += [(section, s) for s in _missing(stores[section], specs, retry_failed)]
        tasks = _installed(tasks)
        spare_runs = library_spec.spare_for(data.y.size, deadline is not None)
        spare_ids = {r.run_id for r in spare_runs}  # a run the main tier has is fitted there
        spare = [t for t in tasks if t[0] == SPARE and t[1].run_id in spare_ids]
        tasks = [t for t in tasks if t[0] != SPARE]
        notes: dict[str, str] = {}
        planned = None
        if deadline is not None:
            tasks = [tasks[i] for i in anytime_order(tasks, data.y.size)]
            planned = plan_build(
                tasks,
                data,
                deadline - time.monotonic(),
                max_memory=ceiling if executor.local_memory else None,
                **_plan_options(executor),
            )
            tasks, notes = planned.tasks, planned.notes
            for section, run, why in planned.left_out:
                stores[section].write_failure(run, "left_out", why, 0.0)
            _tell_runs(contexts["families"], planned)
            if planned.table is not None:
                writer.write_plan(planned.table)
        shared = (data, contexts, fits, random_state)
        # a quick run fitted here needs the rows here: not for data read where it is fitted
        here = data.in_memory
        if isinstance(executor, ProcessExecutor) and tasks and here:
            data = share_frame(data, writer.path / TRAINING_DIR)
            shared = (data, contexts, fits, random_state)
        first = _first_run(tasks) if deadline is not None and here else None
        if first is not None:  # fitted here while the worker processes start
            tasks.remove(first)
            first_run = _InProcessRun(_fit_task, first, shared)
        pace = Pace.of(planned)
        _run_all(
            executor, tasks, shared, stores, verbose, deadline, budget_cap, ceiling, notes, pace
        )
        if first is not None:
            first_run.commit(first, stores, deadline)
        if spare:
            _run_spare(executor, spare, shared, stores, verbose, deadline, budget_cap, ceiling)
        order = [r.run_id for r in library_spec.runs]
        order += [r.run_id for r in spare_runs]
        if not writer.ok_runs(order):
            failed = writer.members(order, statuses=FAILED)
            if deadline is not None and (failed["status"] == "budget").any():
                raise ValueError(
                    f"no run of spec {library_spec.name!r} finished within the time budget, so "
                    "the library is empty; give a larger time_limit (the finished work is kept "
                    "in the store, if one was given)"
                )
            reasons = "; ".join(dict.fromkeys(failed["error"].tolist()))[:500]
            raise ValueError(
                f"no run of spec {library_spec.name!r} finished, so the library is empty; "
                f"errors: {reasons or 'none recorded'}"
            )
        if grow_spec is not None:

            def fit(runs: list[RunSpec]) -> dict[str, bool]:
                todo = [("families", r) for r in _missing(writer, runs, retry_failed)]
                _run_all(executor, todo, shared, stores, 0, deadline, budget_cap, ceiling)
                return {
                    r.run_id: writer.records.get(r.run_id, {}).get("status") == "ok" for r in runs
                }

            if grow_spec.batch is None:  # one proposal per slot: every worker fits one
                grow_spec = dataclasses.replace(grow_spec, batch=executor.slots)
            if deadline is not None:  # grow in the time the spec's runs left
                left = max(0.0, deadline - time.monotonic())
                grow_spec = dataclasses.replace(
                    grow_spec, time=left if grow_spec.time is None else min(grow_spec.time, left)
                )
            order += _grow(writer, data, grow_spec, order, fit)
        writer.consolidate(order)
        for section, specs in sections:
            part = stores.get(section)
            if part is not None and part is not writer:
                part_order = [s.run_id for s in specs]
                if part.ok_runs(part_order):  # the library works without them
                    part.consolidate(part_order)
    finally:
        writer.close()
        for part in stores.values():
            part.close()
        shutil.rmtree(writer.path / TRAINING_DIR, ignore_errors=True)
    return Library(PredictionStore(writer.path), _tmp=tmp)


def _plan_options(executor: Executor) -> dict:
    """What a plan needs of the executor: the runs it runs at once and the seconds it lets one
    run take."""
    return {"n_workers": executor.slots, "run_limit": executor.time_limit}


def _tell_runs(context: dict, planned) -> None:
    """Put in a section's run ``context`` what its plan decided per run: the subsample each
    fit trains on and the seconds a capped run may take."""
    if planned.subsample:
        context["subsample"] = planned.subsample
    if planned.caps:
        context["caps"] = planned.caps


def _run_spare(
    executor: Executor,
    spare: list,
    shared,
    stores: dict,
    verbose: int,
    deadline: float | None,
    budget_cap: float | None,
    ceiling: int | None,
) -> None:
    """Fit the spare tier's runs after the main ones: under a time budget only those the
    build's planner (:func:`ensel.library.planned.plan_build`, its estimates of each run on
    this table) says end within the time left, on its subsample where it planned one; the
    others are recorded with status ``left_out`` and the planner's note (a later build into
    the same store tries them again)."""
    data, contexts = shared[0], shared[1]
    notes: dict[str, str] = {}
    todo = spare
    if deadline is not None and spare:
        left = deadline - time.monotonic()
        # planned as model runs: the planner estimates the section "families" only
        planned = plan_build(
            [("families", run) for _, run in spare],
            data,
            left,
            **_plan_options(executor),
        )
        todo, notes = [(SPARE, run) for _, run in planned.tasks], planned.notes
        for _, run, why in planned.left_out:
            stores[SPARE].write_failure(run, "left_out", f"spare tier: {why}", 0.0)
        _tell_runs(contexts[SPARE], planned)
    pace = Pace.of(planned, label="spare tier: ") if deadline is not None and spare else None
    _run_all(executor, todo, shared, stores, verbose, deadline, budget_cap, ceiling, notes, pace)
    if deadline is not None and spare:
        records = stores[SPARE].records
        out = sum(records.get(r.run_id, {}).get("status") == "left_out" for _, r in spare)
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


def _fit_task(task: tuple, shared: tuple):
    """One run of any kind over its folds; the fitted siblings come back pickled (the worker
    does that work, not the client)."""
    section, run = task
    data, contexts, fits, random_state = shared
    return fits[section](run, data, contexts[section], random_state)


def _run_all(
    executor: Executor,
    todo: list,
    shared,
    stores: dict,
    verbose: int,
    deadline: float | None = None,
    budget_cap: float | None = None,
    ceiling: int | None = None,
    notes: dict[str, str] | None = None,
    pace: Pace | None = None,
) -> None:
    """Run every ``(section, run)`` of ``todo`` and commit each outcome, as it arrives, to the
    store of its section (``notes``: run id -> the note kept beside a trained run).
    ``budget_cap``: the per-run limit comes from the time budget, so a run it stops is
    recorded as ``budget`` (built again by a later build), not ``timeout``.
    ``ceiling``: the build's ``max_memory`` in bytes, kept by a local executor through a
    :class:`~ensel.library.memory.MemoryGate` over each run's estimated peak. ``pace``: the
    plan's estimates against the runs' real seconds; a run that would end after the deadline
    at that pace is not started."""
    if not todo:
        return
    options = {}
    if ceiling is not None and executor.gates_memory:
        data = shared[0]
        options["memory"] = MemoryGate(ceiling, [run_peak(run, data) for _, run in todo])
    progress = _progress(todo, verbose, deadline)
    run_limit = executor.time_limit
    start = time.monotonic()
    done = 0
    cut: dict[tuple[str, str], float] = {}  # (section, family) -> cost of a run cut short

    def skip(index: int) -> str | None:
        """Under a budget, a run is not started when a run of its family that costs no more
        was already cut short by the budget (it would not finish either), or when at the
        pace so far it would end after the deadline (any run the plan estimated, detectors
        too)."""
        section, run = todo[index]
        if deadline is None:
            return None
        limit = cut.get((section, run.family)) if section in MODEL_SECTIONS else None
        if limit is not None and _cost(run) >= limit:
            return (
                "not started: a run of its family that costs no more did not finish within "
                "the time budget"
            )
        if pace is not None:
            return pace.too_late(run.run_id, deadline - time.monotonic(), run_limit)
        return None

    try:
        for outcome in executor.run(
            _fit_task, todo, shared, deadline=deadline, skip=skip, **options
        ):
            section, run = todo[outcome.index]
            store = stores[section]
            if outcome.status == "timeout" and budget_cap is not None:
                outcome.status = "budget"
                outcome.error = (
                    f"stopped after {budget_cap:g} s: under a time budget no run may take more "
                    f"than {MAX_RUN_SHARE:.0%} of it"
                )
            if outcome.status == "budget" and outcome.seconds > 0 and section in MODEL_SECTIONS:
                key = (section, run.family)
                cut[key] = min(cut.get(key, np.inf), _cost(run))
            standby = pace.left_out(run.run_id, outcome.error) if pace is not None else None
            if outcome.status == "budget" and outcome.seconds == 0 and standby:
                outcome.status, outcome.error = "left_out", standby
            if outcome.status == "ok":
                if pace is not None:
                    pace.finished(run.run_id, outcome.seconds)
                note = (notes or {}).get(run.run_id, "")
                store.write_run(run, outcome.value, outcome.seconds, note=note)
            else:
                store.write_failure(run, outcome.status, outcome.error, outcome.seconds)
                if outcome.status not in ("budget", "left_out"):
                    log.warning("run %s %s: %s", run.run_id, outcome.status, outcome.error)
            done += 1
            if progress is not None:
                if deadline is None:
                    progress.update(1)
                else:
                    progress.set_postfix_str(f"{done}/{len(todo)} runs", refresh=False)
                    progress.update(min(time.monotonic(), deadline) - start - progress.n)
        skipped = sum(
            stores[section].records.get(run.run_id, {}).get("status") == "budget"
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


TRAINING_DIR = "training"
"""Store sub-directory that holds the training matrix workers map during a build."""
QUICK_FAMILIES = ("logreg", "naive_bayes", "tree", "linear")
"""Under a time budget the cheapest run of the first of these families in the spec is fitted in
the calling process while the worker processes start, so that even a budget that ends before
any worker finishes a run leaves a library."""


def _first_run(tasks: list) -> tuple | None:
    """The quick run to fit in this process first (see ``QUICK_FAMILIES``), or None."""
    for family in QUICK_FAMILIES:
        runs = [t for t in tasks if t[0] == "families" and t[1].family == family]
        if runs:
            return min(runs, key=lambda t: _cost(t[1]))
    return None


class _InProcessRun:
    """One task run in a thread of this process while the worker processes start (see
    ``QUICK_FAMILIES``); ``commit`` waits for it and stores it."""

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

    def commit(self, task: tuple, stores: dict, deadline: float) -> None:
        self._thread.join(timeout=max(deadline - time.monotonic(), 0.5))
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
    return relative_cost(run.family, dict(run.params), run.stages)


def _progress(todo: list, verbose: int, deadline=None):
    """A progress bar (a terminal's or a notebook's, see :mod:`ensel._progress`): runs done,
    or, under a time budget, seconds elapsed against the budget."""
    members = sum(len(r.members) for _, r in todo)
    if deadline is None:
        return progress_bar(
            verbose, total=len(todo), desc=f"library ({members} members)", unit="run"
        )
    budget = max(deadline - time.monotonic(), 0.0)
    return progress_bar(
        verbose,
        total=round(budget, 1),
        desc=f"library ({members} members)",
        unit="s",
        bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.0f}/{total:.0f} s of budget {postfix}",
    )
