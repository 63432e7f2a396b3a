"""build_library: fit every run of a spec over its folds through an executor, commit each run to
a PredictionStore as it finishes, and return the Library of cached hillclimb predictions.

The builder never selects. Runs already in the store are not refitted, so an interrupted build
(even a killed one) resumes where it stopped; a run that crashes or runs out of time is recorded
and skipped.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import StoreError
from ..metrics import METRICS, REGRESSION_METRICS, score_batch
from . import dask_executor  # noqa: F401 - registers the backend "dask"
from ._worker import describe
from .executor import Executor, SerialExecutor, budget_message, make_executor
from .grow import GrowSpec, grow_runs, parse_grow
from .kinds import get_kind
from .members import FittedMembers
from .runs import refit_full
from .schedule import anytime_order, relative_cost
from .sources import is_source, prepare_source
from .spec import LibrarySpec, RunSpec, load_spec
from .store import PredictionStore
from .training import TrainingData, prepare

__all__ = ["Library", "build_library"]

log = logging.getLogger(__name__)

FAILED = ("failed", "timeout", "budget")
"""Statuses of the runs a library lists in ``failures`` (budget: cut short by a time budget)."""
MAX_RUN_SHARE = 0.5
"""Under a time budget no run may take more than this share of it."""


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
        pickles without the store (see :class:`~ensel.library.members.FittedMembers`)."""
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
        random_state: int = 0,
        hillclimb_fraction: float = 0.2,
        n_jobs: int = 1,
    ) -> FittedMembers:
        """``members`` (from :meth:`subset`) with each of their runs trained once on all of
        ``X, y`` (the data this library was built on, with its ``groups`` and build seed
        ``random_state``) instead of K siblings: see :func:`ensel.library.runs.refit_full`.
        A ValueError says so when ``X, y`` are not the library's data."""
        data = prepare(
            X,
            y,
            cv=self.store.header.get("cv"),
            groups=groups,
            hillclimb_fraction=hillclimb_fraction,
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
        executor = make_executor(n_jobs, None)
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


def build_library(
    X,
    y,
    spec: str | os.PathLike | dict | LibrarySpec = "default",
    cv: int | None = 5,
    store: str | os.PathLike | None = None,
    n_jobs: int = 1,
    backend: str = "joblib",
    client=None,
    random_state: int = 0,
    *,
    groups=None,
    hillclimb_fraction: float = 0.2,
    time_limit: float | None = None,
    run_time_limit: float | None = None,
    retry_failed: bool = False,
    verbose: int = 1,
    grow=None,
) -> Library:
    """Build (or resume) the library of ``spec`` on ``X, y``.

    ``cv=K``: every member is K siblings and its hillclimb predictions are out-of-fold (§4.3.4);
    ``cv=None``: a stratified ``hillclimb_fraction`` of the rows is held out. A spec with
    ``task: regression`` (``"regression"``, ``"tiny_regression"``) builds regressors for a real
    ``y`` with plain (unstratified) folds; its detectors that need class labels are skipped.
    ``groups`` keeps rows of one group (one person in panel data) in one fold. ``store``: a
    directory that keeps everything (a temporary one if None); building again into it reuses
    every finished run.
    ``time_limit`` (seconds) is the budget of the whole build: the runs go in an anytime order
    (``ensel.library.schedule``: round-robin over the families, strongest first, cheapest run
    of each first; kernel SVMs and k-NN last on large data), no run may take more than half the
    budget, and when the budget ends the runs in flight are stopped and the others not started;
    they are recorded with status ``budget`` and built by the next build into the same store.
    ``run_time_limit`` (seconds per run, all folds; default the spec's ``run_time_limit``)
    stops a run that takes too long; such runs, and runs that fail, are recorded in
    ``Library.failures`` and skipped.
    ``backend="joblib"`` (alias ``"local"``) runs on this machine with ``n_jobs`` processes;
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
    """
    started = time.monotonic()
    if time_limit is not None and (
        isinstance(time_limit, bool) or not isinstance(time_limit, int | float) or time_limit <= 0
    ):
        raise ValueError(f"time_limit={time_limit!r}: give the build's budget in seconds (> 0)")
    library_spec = load_spec(spec)
    grow_spec = parse_grow(grow, n_jobs=n_jobs if n_jobs > 0 else 2, seed=random_state)
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
    executor = make_executor(n_jobs, limit, backend, client)
    try:
        data = (prepare_source if is_source(X) else prepare)(
            X,
            y,
            cv=cv,
            groups=groups,
            hillclimb_fraction=hillclimb_fraction,
            random_state=random_state,
            task=library_spec.task,
            **({"client": getattr(executor, "client", None)} if is_source(X) else {}),
        )
        if isinstance(executor, SerialExecutor) and not getattr(data, "in_memory", True):
            data = data.load()  # runs fit in this process: the rows are read here
        return _build(
            data,
            library_spec,
            cv,
            store,
            executor,
            random_state,
            retry_failed,
            verbose,
            grow_spec,
            deadline,
            limit if capped else None,
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
) -> Library:
    """Fit the runs of every section of ``library_spec`` missing from ``store`` through
    ``executor``, in one pass, kinds of run in their ``order`` (detectors, a few long tasks,
    start before the model runs so that no worker waits on one at the end)."""
    tmp = None
    if store is None:
        tmp = tempfile.TemporaryDirectory(prefix="ensel-library-")
        store = Path(tmp.name) / "store"
    writer = PredictionStore(store, _header(data, cv))
    stores = {}  # section -> its store: the library's own, or a sub-store of its kind
    contexts, fits, tasks = {}, {}, []
    try:
        sections = sorted(library_spec.sections, key=lambda s: get_kind(s[0]).order)
        for section, specs in sections:
            kind = get_kind(section)
            if not specs:
                continue
            if kind.store is None:
                stores[section], contexts[section] = writer, None
            else:
                contexts[section], header = kind.prepare(data, _header(data, cv), random_state)
                stores[section] = PredictionStore(writer.path / kind.store, header)
            fits[section] = kind.fit
            tasks += [(section, s) for s in _missing(stores[section], specs, retry_failed)]
        if deadline is not None:
            tasks = [tasks[i] for i in anytime_order(tasks, data.y.size)]
        shared = (data, contexts, fits, random_state)
        # a quick run fitted here needs the rows here: not for data read where it is fitted
        here = getattr(data, "in_memory", True)
        first = _first_run(tasks) if deadline is not None and here else None
        if first is not None:  # fitted here while the worker processes start
            tasks.remove(first)
            first_run = _Background(_fit_task, first, shared)
        _run_all(executor, tasks, shared, stores, verbose, deadline, budget_cap)
        if first is not None:
            first_run.commit(first, stores, deadline)
        order = [r.run_id for r in library_spec.runs]
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
                _run_all(executor, todo, shared, stores, 0, deadline, budget_cap)
                return {
                    r.run_id: writer.records.get(r.run_id, {}).get("status") == "ok" for r in runs
                }

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
    return Library(PredictionStore(writer.path), _tmp=tmp)


def _refit_task(task: tuple, shared: tuple):
    fitted, members = task
    data, random_state = shared
    return refit_full(fitted, data, random_state, members)


def _grow(writer: PredictionStore, data, grow_spec: GrowSpec, order: list[str], fit) -> list:
    """Run the growth stage over the ok runs of ``order``; the ids of the runs it added."""
    binary = data.n_classes == 2

    def predictions(run_ids: list[str]) -> np.ndarray:
        P = np.concatenate([writer.run_predictions(r) for r in run_ids])
        return P[..., 1] if binary else P

    ok = writer.ok_runs(order)
    added = grow_runs(grow_spec, predictions, ok, data.y[data.hillclimb], fit)
    return [r for r in added if r not in order]


def _missing(store: PredictionStore, specs, retry_failed: bool) -> list:
    """The runs of ``specs`` that ``store`` has not finished: never tried, cut short by a
    build's time budget, or (with ``retry_failed``) failed or timed out."""
    done = store.records
    return [
        s
        for s in specs
        if s.run_id not in done
        or done[s.run_id]["status"] == "budget"
        or (retry_failed and done[s.run_id]["status"] != "ok")
    ]


def _header(data: TrainingData, cv: int | None) -> dict:
    return {
        "fingerprint": data.fingerprint(),
        "task": data.task,
        "classes": [c.item() if hasattr(c, "item") else c for c in data.classes],
        "n_hillclimb": int(data.hillclimb.size),
        "cv": cv,
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
) -> None:
    """Run every ``(section, run)`` of ``todo`` and commit each outcome, as it arrives, to the
    store of its section. ``budget_cap``: the per-run limit comes from the time budget, so a
    run it stops is recorded as ``budget`` (built again by a later build), not ``timeout``."""
    if not todo:
        return
    progress = _progress(todo, verbose, deadline)
    start = time.monotonic()
    done = 0
    cut: dict[tuple[str, str], float] = {}  # (section, family) -> cost of a run cut short

    def skip(index: int) -> str | None:
        """Under a budget, a run is not started when a run of its family that costs no more
        was already cut short by the budget: it would not finish either."""
        section, run = todo[index]
        if deadline is None or section != "families":
            return None
        limit = cut.get((section, run.family))
        if limit is not None and _cost(run) >= limit:
            return (
                "not started: a run of its family that costs no more did not finish within "
                "the time budget"
            )
        return None

    try:
        for outcome in executor.run(_fit_task, todo, shared, deadline=deadline, skip=skip):
            section, run = todo[outcome.index]
            store = stores[section]
            if outcome.status == "timeout" and budget_cap is not None:
                outcome.status = "budget"
                outcome.error = (
                    f"stopped after {budget_cap:g} s: under a time budget no run may take more "
                    f"than {MAX_RUN_SHARE:.0%} of it"
                )
            if outcome.status == "budget" and outcome.seconds > 0 and section == "families":
                key = (section, run.family)
                cut[key] = min(cut.get(key, np.inf), _cost(run))
            if outcome.status == "ok":
                store.write_run(run, outcome.value, outcome.seconds)
            else:
                store.write_failure(run, outcome.status, outcome.error, outcome.seconds)
                if outcome.status != "budget":
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


class _Background:
    """One task run in a thread of this process; ``commit`` waits for it and stores it."""

    def __init__(self, fn, task, shared) -> None:
        self.outcome: tuple | None = None
        self._thread = threading.Thread(target=self._run, args=(fn, task, shared), daemon=True)
        self._start = time.perf_counter()
        self._thread.start()

    def _run(self, fn, task, shared) -> None:
        try:
            self.outcome = ("ok", fn(task, shared), "")
        except Exception as exc:  # recorded like a failed run
            self.outcome = ("failed", None, describe(exc))

    def commit(self, task: tuple, stores: dict, deadline: float) -> None:
        self._thread.join(timeout=max(deadline - time.monotonic(), 0.5))
        seconds = time.perf_counter() - self._start
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
    """A progress bar on stderr (a terminal only): runs done, or, under a time budget, seconds
    elapsed against the budget."""
    if not verbose or not sys.stderr.isatty():
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    members = sum(len(r.members) for _, r in todo)
    if deadline is None:
        return tqdm(total=len(todo), desc=f"library ({members} members)", unit="run")
    budget = max(deadline - time.monotonic(), 0.0)
    return tqdm(
        total=round(budget, 1),
        desc=f"library ({members} members)",
        unit="s",
        bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.0f}/{total:.0f} s of budget {postfix}",
    )
