"""build_library: fit every run of a spec over its folds through an executor, commit each run to
a PredictionStore as it finishes, and return the Library of cached hillclimb predictions.

The builder never selects. Runs already in the store are not refitted, so an interrupted build
(even a killed one) resumes where it stopped; a run that crashes or runs out of time is recorded
and skipped.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from ..data import as_frame, check_columns
from ..errors import StoreError
from ..metrics import METRICS, REGRESSION_METRICS, score_batch
from .executor import Executor, make_executor
from .runs import fit_run, run_seed
from .spec import DetectorSpec, LibrarySpec, RunSpec, load_spec
from .store import PackedRun, PredictionStore
from .training import TrainingData, prepare

__all__ = ["Library", "build_library"]

log = logging.getLogger(__name__)

DETECTOR_STORE = "detectors"
"""Sub-directory of a store holding the spec's detectors: a store of its own whose hillclimb
set is the held-out rows (label 0, "data") followed by uniform background points (label 1)."""


class Library:
    """A built library: the hillclimb predictions of its ok members, their descriptions, and
    test-time predictions from their fitted siblings."""

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
        self.failures = store.members(others, statuses=("failed", "timeout"))
        self.hillclimb_index, self.y = store.hillclimb()
        self.task = store.header.get("task", "classification")
        self.classes = np.asarray(store.header["classes"])
        self._columns = store.header["columns"]
        self._categories = store.header.get("categories", {})
        self._loaded: dict = {}
        self._scores: dict | None = None
        self.detectors = _detector_library(store.path / DETECTOR_STORE)

    @classmethod
    def open(cls, path: str | os.PathLike) -> Library:
        """The library in an existing store (its fitted runs are unpickled on ``predict``: open
        only stores you trust)."""
        return cls(PredictionStore(path))

    @property
    def n_members(self) -> int:
        return len(self.members)

    def predict(self, X, ids=None) -> np.ndarray:
        """Test-time probabilities of the members ``ids`` (all by default): ``(m, n)`` positive
        class for binary problems, ``(m, n, C)`` otherwise, members in the order given; for
        regression ``(m, n)`` predicted values."""
        frame = check_columns(as_frame(X), self._columns, self._categories)
        wanted = list(self.members["id"]) if ids is None else list(ids)
        index = pd.Index(self.members["id"])
        unknown = [i for i in wanted if i not in index]
        if unknown:
            raise ValueError(f"unknown member id(s) {unknown[:5]}; see Library.members['id']")
        rows = index.get_indexer(wanted)
        regression = self.task == "regression"
        out = np.empty((len(wanted), len(frame), 1 if regression else self.classes.size))
        for run_id, positions in pd.Series(range(len(wanted))).groupby(
            self.members["run"].to_numpy()[rows]
        ):
            fitted = self._fitted(run_id)
            offsets = rows[positions.to_numpy()] - self._first_row(run_id)
            out[positions.to_numpy()] = fitted.predict(frame)[offsets]
        if regression:
            return out[..., 0]
        return out[..., 1] if self.classes.size == 2 else out

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

    def _first_row(self, run_id: str) -> int:
        return int(np.flatnonzero(self.members["run"].to_numpy() == run_id)[0])


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
    retry_failed: bool = False,
    verbose: int = 1,
) -> Library:
    """Build (or resume) the library of ``spec`` on ``X, y``.

    ``cv=K``: every member is K siblings and its hillclimb predictions are out-of-fold (§4.3.4);
    ``cv=None``: a stratified ``hillclimb_fraction`` of the rows is held out. A spec with
    ``task: regression`` (``"regression"``, ``"tiny_regression"``) builds regressors for a real
    ``y`` with plain (unstratified) folds; its detectors that need class labels are skipped.
    ``groups`` keeps rows of one group (one person in panel data) in one fold. ``store``: a
    directory that keeps everything (a temporary one if None); building again into it reuses
    every finished run.
    ``time_limit`` (seconds per run, all folds; default the spec's) stops runs that take too
    long; they, and runs that fail, are recorded in ``Library.failures`` and skipped.
    ``backend="joblib"`` (alias ``"local"``) runs on this machine with ``n_jobs`` processes;
    ``backend="dask"`` runs on every worker of a dask cluster (``n_jobs`` does not apply):
    ``client`` is a ``distributed.Client``, a scheduler address (``"tcp://HOST:8786"``) or None
    for the current client (see docs/distributed.md). Either way the client writes the store,
    and the same seed gives the same store.
    """
    library_spec = load_spec(spec)
    limit = time_limit if time_limit is not None else library_spec.time_limit
    executor = make_executor(n_jobs, limit, backend, client)
    try:
        data = prepare(
            X,
            y,
            cv=cv,
            groups=groups,
            hillclimb_fraction=hillclimb_fraction,
            random_state=random_state,
            task=library_spec.task,
        )
        return _build(data, library_spec, cv, store, executor, random_state, retry_failed, verbose)
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
) -> Library:
    """Fit the runs and detectors of ``library_spec`` missing from ``store`` through
    ``executor``, in one pass: detectors first (a few long tasks, started early so no worker
    waits on one at the end), then the model runs."""
    tmp = None
    if store is None:
        tmp = tempfile.TemporaryDirectory(prefix="ensel-library-")
        store = Path(tmp.name) / "store"
    writer = PredictionStore(store, _header(data, cv))
    detectors, background = None, None
    detector_specs = library_spec.detectors
    if data.task == "regression":  # margin, dispersion and open-set detectors need classes
        detector_specs = tuple(d for d in detector_specs if not d.requires_y)
    try:
        if detector_specs:
            detectors, background = _detector_store(data, writer.path, random_state)
        tasks = _missing(detectors, detector_specs, retry_failed) if detectors else []
        tasks += _missing(writer, library_spec.runs, retry_failed)

        def store_for(task):
            return detectors if isinstance(task, DetectorSpec) else writer

        _run_all(executor, tasks, (data, background, random_state), store_for, verbose)
        order = [r.run_id for r in library_spec.runs]
        if not writer.ok_runs(order):
            failed = writer.members(order, statuses=("failed", "timeout"))
            reasons = "; ".join(dict.fromkeys(failed["error"].tolist()))[:500]
            raise ValueError(
                f"no run of spec {library_spec.name!r} finished, so the library is empty; "
                f"errors: {reasons or 'none recorded'}"
            )
        writer.consolidate(order)
        if detectors is not None:
            detector_order = [d.run_id for d in detector_specs]
            if detectors.ok_runs(detector_order):  # the library works without them
                detectors.consolidate(detector_order)
    finally:
        writer.close()
        if detectors is not None:
            detectors.close()
    return Library(PredictionStore(writer.path), _tmp=tmp)


def _missing(store: PredictionStore, specs, retry_failed: bool) -> list:
    """The runs (or detectors) of ``specs`` that ``store`` has not finished."""
    done = store.records
    return [
        s
        for s in specs
        if s.run_id not in done or (retry_failed and done[s.run_id]["status"] != "ok")
    ]


def _detector_store(data, path: Path, random_state: int) -> tuple[PredictionStore, pd.DataFrame]:
    """The store of the spec's detectors (``path/detectors``) and their background: detectors
    are fitted over the same folds as the models and score the held-out rows, then as many
    uniform background points. Detectors that fail are recorded and skipped."""
    from ..risk import FeatureSpace

    space, _ = FeatureSpace.fit(data.X)
    n_hill = int(data.hillclimb.size)
    background = space.decode(space.uniform(n_hill, random_state))
    header = _header(data, data.n_siblings if data.n_siblings > 1 else None)
    header["fingerprint"]["background"] = str(
        pd.util.hash_pandas_object(background, index=False).sum()
    )
    header.update(
        task="classification",
        classes=["data", "background"],
        n_hillclimb=2 * n_hill,
        hillclimb=np.r_[data.hillclimb, np.full(n_hill, -1)],
        labels=np.r_[np.zeros(n_hill, int), np.ones(n_hill, int)],
    )
    return PredictionStore(path / DETECTOR_STORE, header), background


def _detector_library(path: Path) -> Library | None:
    """The detectors built beside a library's models, or None if it has none."""
    if not (path / "predictions.json").exists():
        return None
    return Library(PredictionStore(path))


def _header(data: TrainingData, cv: int | None) -> dict:
    return {
        "fingerprint": data.fingerprint(),
        "task": data.task,
        "classes": [c.item() if hasattr(c, "item") else c for c in data.classes],
        "n_hillclimb": int(data.hillclimb.size),
        "cv": cv,
        "columns": list(data.X.columns),
        "categories": {
            col: [str(v) for v in cats]
            for col, cats in zip(data.columns.categorical, data.columns.categories, strict=True)
        },
        "hillclimb": data.hillclimb,
        "labels": data.y[data.hillclimb],
    }


def _fit_task(task: RunSpec | DetectorSpec, shared: tuple):
    """One model run over its folds, or one detector over the folds and the background. The
    fitted siblings come back pickled (the worker does that work, not the client)."""
    data, background, random_state = shared
    if isinstance(task, DetectorSpec):
        from ..risk.combined import fit_detector

        detector = task.make(run_seed(task, random_state))
        y = None if data.task == "regression" else data.y
        risk, fitted = fit_detector(detector, data.X, y, data.folds, background)
        predictions = np.stack([1.0 - risk, risk], axis=-1)[None].astype(np.float32)
        return PackedRun.pack(predictions, fitted)
    result = fit_run(task, data, random_state)
    return PackedRun.pack(result.predictions, result.fitted, result.costs)


def _run_all(executor: Executor, todo: list, shared, store_for, verbose: int) -> None:
    """Run every task of ``todo`` and commit each outcome, as it arrives, to ``store_for(task)``."""
    if not todo:
        return
    progress = _progress(todo, verbose)
    try:
        for outcome in executor.run(_fit_task, todo, shared):
            run = todo[outcome.index]
            store = store_for(run)
            if outcome.status == "ok":
                store.write_run(run, outcome.value, outcome.seconds)
            else:
                store.write_failure(run, outcome.status, outcome.error, outcome.seconds)
                log.warning("run %s %s: %s", run.run_id, outcome.status, outcome.error)
            if progress is not None:
                progress.update(1)
    finally:
        if progress is not None:
            progress.close()


def _progress(todo: list, verbose: int):
    if not verbose or not sys.stderr.isatty():
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    members = sum(len(r.members) for r in todo)
    return tqdm(total=len(todo), desc=f"library ({members} members)", unit="run")
