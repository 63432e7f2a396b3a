"""FittedMembers: some members of a built library with the fitted runs behind them, which predict
new rows for those members only. It is what a model keeps of its library (it pickles without the
store); ``Library.predict`` is the case of any members of one library."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..._jobs import n_workers
from ...data import Table, as_frame, check_columns, plan_schema, read_table, schema_key
from ..execution.runs import FittedRun, view_key
from ..views.base import View, transform

__all__ = ["BATCH_ROWS", "SMALL_ROWS", "FittedMembers"]

BATCH_ROWS = 10_000
"""Rows predicted at a time: bounds the transformed views and stage outputs held at once."""
SMALL_ROWS = 256
"""DataFrames of at most this many rows take the small-batch path of
:meth:`FittedMembers.predict`, where the per-call work (pandas selections per view, a thread
pool) costs more than the rows' own."""
MAX_SCHEMAS = 16
"""Schemas :meth:`FittedMembers.table` keeps; it starts again past this many."""


@dataclass
class FittedMembers:
    """Members ``ids`` of a library, in that order, and what predicts them.

    ``runs`` maps each run id to its fitted run (an object whose ``predict(frame)`` gives
    ``(members of the run, n, C)`` test-time probabilities, e.g. ``runs.FittedRun``), in the
    order the members first name them; member ``i`` is row ``offsets[i]`` of its run
    ``run_of[i]``. ``columns`` and ``categories`` are the training columns and the categories
    seen in training; ``classes`` the class labels; ``task`` classification or regression.

    The contract of :meth:`predict` (callers rely on it; a faster implementation keeps it): it
    takes X as given to the library (a DataFrame or array with the training columns), returns
    exactly these members' test-time probabilities, ``(len(ids), n)`` positive class for binary
    problems and ``(len(ids), n, C)`` otherwise (``(len(ids), n)`` predicted values for
    regression), in the order of ``ids``, equal to what
    ``Library.predict(X, ids)`` returns. How it gets there is free: it may transform each
    preprocessing view once per fold, compute only the stages and calibrations of these
    members, or predict runs in parallel batches."""

    ids: tuple[str, ...]
    runs: dict[str, Any]
    run_of: np.ndarray
    offsets: np.ndarray
    columns: tuple[str, ...]
    categories: dict[str, list[str]]
    classes: np.ndarray
    task: str = "classification"
    _rows: dict[str, np.ndarray] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.run_of = np.asarray(self.run_of, dtype=object)
        self.offsets = np.asarray(self.offsets, dtype=np.int64)
        self._rows = {r: np.flatnonzero(self.run_of == r) for r in self.runs}

    def rows(self, run_id: str) -> np.ndarray:
        """Positions in ``ids`` of the members of run ``run_id``."""
        return self._rows[run_id]

    @property
    def n_members(self) -> int:
        return len(self.ids)

    def frame(self, X) -> pd.DataFrame:
        """X as a DataFrame of the training columns in training order: a clear error for
        missing columns, a warning for categories never seen in training."""
        return check_columns(as_frame(X), list(self.columns), self.categories)

    def table(self, X, small_rows: int | None = None) -> Table | None:
        """X's rows as a :class:`~ensel.data.Table` when X is a DataFrame of at most
        ``small_rows`` rows (``SMALL_ROWS`` by default) whose schema passes the checks of
        :meth:`frame`, with the same values and warnings; None where :meth:`frame` must
        speak (more rows, an array, a missing column, repeated names) or where a run
        predicts from a DataFrame only. The checks that depend on the column names and
        dtypes alone are made once per schema and kept (not pickled)."""
        limit = SMALL_ROWS if small_rows is None else small_rows
        if not isinstance(X, pd.DataFrame) or not 0 < len(X) <= limit:
            return None
        if not all(isinstance(fitted, FittedRun) for fitted in self.runs.values()):
            return None
        schemas = self.__dict__.setdefault("_schemas", {})
        key = schema_key(X)
        if key not in schemas:
            if len(schemas) >= MAX_SCHEMAS:
                schemas.clear()
            schemas[key] = plan_schema(X, list(self.columns), self.categories)
        schema = schemas[key]
        return None if schema is None else read_table(X, schema, self.categories)

    def predict(
        self, X, n_jobs: int = 1, batch_rows: int = BATCH_ROWS, small_rows: int | None = None
    ) -> np.ndarray:
        """Test-time probabilities of these members on the rows of X (see the class docstring
        for the contract): ``(m, n)`` for binary problems, ``(m, n, C)`` otherwise, ``(m, n)``
        values for regression.

        A DataFrame of at most ``small_rows`` rows (``SMALL_ROWS`` by default; 0 turns this
        off) takes the small-batch path: its columns are read once into a
        :class:`~ensel.data.Table` (:meth:`table`) and the runs predict one after another in
        this thread, with the same results. Other rows go ``batch_rows`` at a time. Within a
        batch each preprocessing view is transformed once per fold and shared by the runs
        that use it, each run computes only the stages and calibrations of these members,
        and runs predict on ``n_jobs`` threads (as joblib reads it: None is 1, -1 every
        available CPU, -k all but k-1; the models' native code releases the GIL)."""
        table = self.table(X, small_rows)
        if table is not None:
            return self._layout(self._predict_batch(table, None))
        frame = self.frame(X)
        out = np.empty((len(self.ids), len(frame), self._width()))
        workers = n_workers(n_jobs)
        pool = ThreadPoolExecutor(workers) if workers > 1 and len(self.runs) > 1 else None
        try:
            for start in range(0, len(frame), max(1, int(batch_rows))):
                part = frame.iloc[start : start + batch_rows]
                out[:, start : start + len(part)] = self._predict_batch(part, pool)
        finally:
            if pool is not None:
                pool.shutdown()
        return self._layout(out)

    def _width(self) -> int:
        """Outputs per member and row in the runs' layout: classes, or 1 for regression."""
        return 1 if self.task == "regression" else self.classes.size

    def _layout(self, out: np.ndarray) -> np.ndarray:
        """``(m, n, width)`` predictions in the layout of :meth:`predict`."""
        if self.task == "regression":
            return out[..., 0]
        return out[..., 1] if self.classes.size == 2 else out

    def __getstate__(self) -> dict:
        """Pickled state, without the schemas :meth:`table` keeps (a cache)."""
        state = dict(self.__dict__)
        state.pop("_schemas", None)
        return state

    def _predict_batch(self, frame: pd.DataFrame | Table, pool) -> np.ndarray:
        """One batch (a checked DataFrame or a Table): the shared views first, then every run
        on them (in ``pool`` if any)."""
        views = _shared_views(self.runs.values(), frame, pool)
        map_ = pool.map if pool is not None else map

        def one(item):
            run_id, fitted = item
            wanted = self.offsets[self._rows[run_id]]
            if isinstance(fitted, FittedRun):  # only these members, on the shared views
                return fitted.predict(frame, wanted, views=views)
            return fitted.predict(frame)[wanted]

        parts = list(map_(one, self.runs.items()))
        out = np.empty((len(self.ids), len(frame), parts[0].shape[-1]))
        for run_id, part in zip(self.runs, parts, strict=True):
            out[self._rows[run_id]] = part
        return out


def _shared_views(runs, frame: pd.DataFrame | Table, pool) -> dict:
    """The transformed matrix of every (view, sibling) the runs need, each computed once, keyed
    as ``FittedRun.predict`` looks them up. Views of one signature (the fold siblings' native
    views) share one matrix: on a few rows the per-view cost is most of a view's, and a
    signature is made once per view and kept."""
    todo = {}
    for fitted in runs:
        if not isinstance(fitted, FittedRun):
            continue  # a detector's or another kind's run computes its own views
        siblings = fitted.siblings
        for k, (view, _) in enumerate(siblings):
            key = view_key(fitted.run.view, view, len(siblings), k, fitted.own_rows)
            todo.setdefault(key, view)
    same, firsts = {}, {}  # key -> the first key of its signature
    for key, view in todo.items():
        if isinstance(view, View):
            same[key] = firsts.setdefault(view.signature(), key)
    keys = [key for key in todo if same.get(key, key) == key]
    map_ = pool.map if pool is not None else map
    views = dict(zip(keys, map_(lambda key: transform(todo[key], frame), keys), strict=True))
    return {key: views[same.get(key, key)] for key in todo}
