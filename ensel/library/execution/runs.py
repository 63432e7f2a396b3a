"""One training run over every fold: the siblings of §4.3.4, their out-of-fold hillclimb
predictions for every staged and calibrated member, and the fitted bundle that predicts new rows.

No hillclimb prediction comes from a model or a calibrator that saw its point: sibling ``k`` is
trained without fold ``k`` and predicts it; the calibrator applied to group ``g`` of the hillclimb
rows is fitted on the other groups' out-of-sample predictions only (cross-fitting). With ``cv=K``
the groups are the folds; with a held-out split they are 5 stratified parts of it. At test time a
member averages its siblings, each passed through its own group's calibrator.
"""

from __future__ import annotations

import functools
import inspect
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...calibration import CALIBRATORS, ColumnCalibrator, cross_fit
from ...data import stratified_rows
from ..data.training import TrainingData
from ..families import Run, RunWrapper, get_family, missing_requirements
from ..kinds import prediction_dtype, run_seed
from ..planning.cost import structural_predict_ms
from ..planning.predict_work import has_predict_work
from ..spec import RunSpec
from ..views import encoding  # noqa: F401 - registers the view "te"
from ..views.base import make_view, transform

__all__ = [
    "FittedRun",
    "RunResult",
    "TargetTransformRun",
    "fit_run",
    "measure_cost",
    "predict_stages",
    "refit_full",
    "run_seed",
    "structural_cost",
]

COST_ROWS = 1000
"""Rows the builder times a run's prediction on (the held-out rows, repeated where fewer), so
that per-call overhead does not dominate the cost per row of small folds."""
COST_REPEATS = 2
"""Timings per stage; the fastest counts (the machine may be shared)."""
EARLY_STOP_ROWS = 20_000
"""From this many training rows a fit whose family can stop early (boosting: xgboost,
lightgbm, hist_gbdt) is given ``early_stop=EARLY_STOP_FRACTION``: it holds that share of its own
training rows out and stops adding rounds once they stop improving (see the families). Below,
runs train exactly as the spec says, so small-table results do not change."""
EARLY_STOP_FRACTION = 0.1
TIME_CAP_SHARE = 0.8
"""Share of a run's time limit its fits may spend adding stages (``time_cap``); the rest is
left for its views, its out-of-fold predictions and its calibrators."""


def native_categorical(data: TrainingData) -> dict[int, int]:
    """``{column index: number of categories}`` of the categorical columns in the native view
    (numeric columns first, then the categorical ones, as ``make_view`` orders them)."""
    offset = len(data.columns.numeric)
    return {offset + j: len(c) for j, c in enumerate(data.columns.categories)}


@dataclass
class FittedRun:
    """The fitted siblings of a run (a view and a family run per fold) and the calibrators of its
    calibrated members, one per cross-fitting group."""

    run: RunSpec
    siblings: list  # [(fitted view, family run)]
    sibling_of_group: np.ndarray  # group g's calibrator follows sibling sibling_of_group[g]
    calibrators: dict  # (stage index, method) -> [ColumnCalibrator per group]
    max_train_rows: int | None = None  # a plan's subsample: rows each fit trained on at most

    @property
    def own_rows(self) -> str | None:
        """This run's id where it trained on a subsample of its own (its views are its own)."""
        return self.run.run_id if self.max_train_rows is not None else None

    @property
    def member_keys(self) -> list[tuple[int, str]]:
        """``(stage index, calibration)`` of each member, in ``run.members`` order."""
        stages = self.run.stages or (None,)
        return [(s, m) for s in range(len(stages)) for m in self.run.calibrations]

    def predict(self, X: pd.DataFrame, members=None, views: dict | None = None) -> np.ndarray:
        """``(n_members, n, C)`` test-time probabilities of the members at positions
        ``members`` of ``run.members`` (all by default), in that order. Only their stages are
        computed. ``views``: a dict shared by the runs of one library during one call, which
        keeps each sibling's transformed matrix by ``(view, sibling)`` so that a view is
        transformed once per fold and not once per run (siblings of one library fit a view on
        the same rows, so they agree)."""
        keys = self.member_keys
        wanted = range(len(keys)) if members is None else members
        stage_idx = sorted({keys[m][0] for m in wanted})
        at = {s: i for i, s in enumerate(stage_idx)}
        matrices = []
        for k, (view, _) in enumerate(self.siblings):
            key = view_key(self.run.view, view, len(self.siblings), k, self.own_rows)
            if views is None:
                matrices.append(transform(view, X))
            elif key in views:
                matrices.append(views[key])
            else:
                views[key] = transform(view, X)
                matrices.append(views[key])
        raw = predict_siblings([run for _, run in self.siblings], matrices, stage_idx)
        out = []
        for m in wanted:
            s_idx, method = keys[m]
            if method in CALIBRATORS:
                cals = self.calibrators[(s_idx, method)]
                parts = [
                    cal.predict(raw[self.sibling_of_group[g]]["none"][at[s_idx]])
                    for g, cal in enumerate(cals)
                ]
            else:
                parts = [r[method][at[s_idx]] for r in raw]
            out.append(np.mean(parts, axis=0))
        return np.stack(out)


@dataclass
class RunResult:
    """What a finished run hands back to the builder."""

    predictions: np.ndarray  # (n_members, n_hillclimb, C), see kinds.prediction_dtype
    fitted: FittedRun
    costs: dict = field(default_factory=dict)  # see measure_cost


@dataclass
class TargetTransformRun(RunWrapper):
    """A regression run fitted to ``log1p(y)``: it predicts ``expm1`` of the inner run's output
    (a spec entry's ``target: log1p``)."""

    inner: Run

    @property
    def cumulative(self) -> bool:
        return bool(self.inner.cumulative)

    def predict(self, X, stages=None) -> dict[str, np.ndarray]:
        inner = self.inner.predict(X) if stages is None else predict_stages(self.inner, X, stages)
        with np.errstate(over="ignore"):
            return {k: np.expm1(v) for k, v in inner.items()}


def _target_transform(params: dict, y: np.ndarray, run: RunSpec):
    """``(params without 'target', y as the run learns it, wrapper of its fitted runs)``."""
    target = params.pop("target", "none")
    if target == "none":
        return params, y, lambda fitted: fitted
    if y.min() <= -1:
        raise ValueError(
            f"run {run.run_id}: target log1p needs y > -1, but y goes down to {y.min():g}; "
            "drop 'target: log1p' from the spec entry"
        )
    return params, np.log1p(y), TargetTransformRun


def fit_extra(family, run: RunSpec, data: TrainingData, n_train: int) -> dict:
    """Keyword arguments of a family's fit beyond the spec's parameters: the native view's
    categorical columns, and ``early_stop`` on large tables (``EARLY_STOP_ROWS``) for the
    families that declare it (``Family.early_stops``; ``time_cap`` is added per fit by
    :func:`fit_run`)."""
    extra = {"categorical": native_categorical(data)} if family.categorical else {}
    if extra and run.view != "native":
        extra["categorical"] = {}
    if n_train >= EARLY_STOP_ROWS and family.early_stops:
        extra["early_stop"] = EARLY_STOP_FRACTION
    return extra


def fit_run(
    run: RunSpec,
    data: TrainingData,
    random_state: int,
    max_train_rows: int | None = None,
    time_limit: float | None = None,
    ends_at: float | None = None,
) -> RunResult:
    """Fit ``run`` on every fold and return its out-of-fold hillclimb predictions.
    ``max_train_rows``: each fit trains on a seeded stratified subsample of at most that many
    of its training rows (a plan's choice for learners quadratic in the rows); every
    hillclimb row is still predicted. ``time_limit``: seconds the run may take in all (its
    executor stops it after them); ``ends_at``: the build's deadline (a ``time.time()``
    value), where its executor stops every run in flight. A family that stops in time
    (:attr:`~ensel.library.families.Family.stops_in_time`) gets each fit an equal share of
    ``TIME_CAP_SHARE`` of what is left of either, so the run ends with the stages it reached
    instead of being stopped with nothing."""
    started = time.monotonic()
    family = get_family(run.family, run.task)
    missing = missing_requirements(family)
    if missing:
        raise ImportError(
            f"family {family.name!r} needs {', '.join(missing)}: pip install {' '.join(missing)}"
        )
    seed = run_seed(run, random_state)
    target = _target_transform(run.param_dict, data.y, run)
    hill = data.hillclimb
    hill_folds = data.folds[hill]
    n_stages = len(run.stages or (None,))
    n_train = int((data.folds != 0).sum())
    extra = fit_extra(family, run, data, min(n_train, max_train_rows or n_train))
    variants = ["none", *[c for c in run.calibrations if c in family.variants]]
    oof = {v: np.empty((n_stages, hill.size, data.n_outputs)) for v in variants}
    siblings = []
    for k in range(data.n_siblings):
        train = np.flatnonzero(data.folds != k)
        if max_train_rows is not None:
            train = train[stratified_rows(data.y[train], max_train_rows, seed + k)]
        if family.stops_in_time:
            extra["time_cap"] = _time_cap(time_limit, ends_at, started, data.n_siblings - k)
        view, fitted = _fit_on_rows(family, run, data, train, target, seed, extra)
        held = hill_folds == k
        matrix = transform(view, data.X.iloc[hill[held]])
        predicted = fitted.predict(matrix)
        for v in variants:
            oof[v][:, held] = predicted[v]
        siblings.append((view, fitted))
        if k == 0:  # counted from the structure; timed only where it cannot be counted
            costs = structural_cost(run, view, fitted, matrix.shape[1], data.n_outputs)
            if costs is None:
                costs = measure_cost(view, fitted, data.X.iloc[hill[held]], n_stages)

    n_groups = int(data.groups.max()) + 1
    sibling_of_group = np.arange(n_groups) if data.n_siblings > 1 else np.zeros(n_groups, int)
    predictions, calibrators = _members(run, oof, data.y[hill], data.groups, n_stages)
    fitted = FittedRun(run, siblings, sibling_of_group, calibrators, max_train_rows)
    return RunResult(predictions, fitted, costs)


def _fit_on_rows(family, run: RunSpec, data: TrainingData, rows, target, seed: int, extra: dict):
    """``(view, model)``: ``run``'s view fitted on the training ``rows`` and the family's model
    fitted on what it makes of them; ``target`` is ``_target_transform``'s ``(params, y_fit,
    wrap)``, so the model learns the transformed target and predicts in the original one."""
    params, y_fit, wrap = target
    view = make_view(run.view, data.columns, family.native_missing)
    matrix = view.fit_transform(data.X.iloc[rows], data.y[rows], label_classes(data))
    model = family.fit(
        matrix,
        y_fit[rows],
        n_classes=data.n_classes,
        params=params,
        stages=run.stages,
        random_state=seed,
        **extra,
    )
    return view, wrap(model)


def _members(run: RunSpec, oof: dict, y_hill, groups, n_stages: int) -> tuple[np.ndarray, dict]:
    """The hillclimb predictions of every member of ``run`` (stage x calibration) from its
    siblings' out-of-fold predictions ``oof`` (by variant), and the calibrators cross-fitted
    over the calibration ``groups`` for the calibrated members."""
    calibrators: dict = {}
    members = []
    for s_idx in range(n_stages):
        for method in run.calibrations:
            if method not in CALIBRATORS:
                members.append(oof[method][s_idx])
                continue
            pred, cals = cross_fit(
                functools.partial(ColumnCalibrator, method), oof["none"][s_idx], y_hill, groups
            )
            calibrators[(s_idx, method)] = cals
            members.append(pred)
    predictions = np.stack(members).astype(prediction_dtype(run.task))
    if not np.isfinite(predictions).all():
        raise FloatingPointError(f"run {run.run_id} produced non-finite predictions")
    return predictions, calibrators


def _time_cap(
    time_limit: float | None, ends_at: float | None, started: float, fits_left: int
) -> float | None:
    """Seconds the next of ``fits_left`` fits may spend adding stages: an equal share of
    ``TIME_CAP_SHARE`` of what is left of the run's limit (``started``: its
    ``time.monotonic()`` start) or of the time to the build's deadline ``ends_at``, whichever
    ends first; None without either."""
    left = []
    if time_limit is not None:
        left.append(TIME_CAP_SHARE * time_limit - (time.monotonic() - started))
    if ends_at is not None:
        left.append(TIME_CAP_SHARE * (ends_at - time.time()))
    return max(min(left) / fits_left, 0.0) if left else None


def label_classes(data: TrainingData) -> int:
    """What a view that learns from the labels is told of them: the classes, 0 for a real
    target."""
    return 0 if data.task == "regression" else data.n_classes


def view_key(kind: str, view, n_siblings: int, k: int, own_rows: str | None = None) -> tuple:
    """What identifies a fitted view among the runs of one library: its kind, how it treats
    missing values, the sibling (fold) it was fitted for, and ``own_rows``: the run id of a run
    trained on its own subsample of the fold (its view saw other rows: other levels, other
    missing-value indicators, so it is never shared)."""
    return (kind, view.native_missing, n_siblings, k, own_rows)


def predict_stages(family_run, X: np.ndarray, stages: list[int]) -> dict[str, np.ndarray]:
    """A family run's prediction of the stages of index ``stages`` only: through its
    ``predict(X, stages=...)`` where it has one, else every stage, sliced."""
    if _takes_stages(type(family_run)):
        return family_run.predict(X, stages=stages)
    return {v: p[stages] for v, p in family_run.predict(X).items()}


def predict_siblings(family_runs: list, matrices: list, stages: list[int]) -> list[dict]:
    """``predict_stages`` of each fold sibling on its matrix: in one call where the siblings
    are runs of one class and read one matrix (a shared view), and the class's
    :meth:`Run.predict_siblings` does not decline with None."""
    first = family_runs[0]
    if (
        len(family_runs) > 1
        and all(type(run) is type(first) for run in family_runs)
        and all(m is matrices[0] for m in matrices)
    ):
        raw = type(first).predict_siblings(family_runs, matrices[0], stages)
        if raw is not None:
            return raw
    return [predict_stages(run, m, stages) for run, m in zip(family_runs, matrices, strict=True)]


_TAKES_STAGES: dict[type, bool] = {}


def _takes_stages(cls: type) -> bool:
    if cls not in _TAKES_STAGES:
        _TAKES_STAGES[cls] = "stages" in inspect.signature(cls.predict).parameters
    return _TAKES_STAGES[cls]


def structural_cost(run: RunSpec, view, family_run, width: int, outputs: int) -> dict | None:
    """The deterministic predict cost of one sibling of ``run`` (ms per 1,000 rows, counted
    from its fitted structure: :func:`ensel.library.planning.cost.structural_predict_ms`), the
    ``predict_ms`` the store records. None for a family without a work function (one a user
    registered): its timing (:func:`measure_cost`) is recorded instead, reproducible only on
    the same machine. The timing is not taken where the count exists: timing each stage alone
    can cost most of a run's seconds (a k-NN run with many stages on large data)."""
    if not has_predict_work(run.family, run.task):
        return None
    return structural_predict_ms(
        run.family,
        run.task,
        run.param_dict,
        run.stages or (None,),
        view,
        family_run,
        width,
        outputs,
        skips_stages=_takes_stages(type(family_run)),
    )


def measure_cost(view, family_run, X: pd.DataFrame, n_stages: int) -> dict:
    """What predicting with one sibling costs, in CPU milliseconds per 1,000 rows (CPU time of
    this process, so a busy machine does not inflate it; the builder's workers run one
    thread each), timed on
    ``COST_ROWS`` rows (``X`` repeated where shorter): ``view`` (the preprocessing), ``stages``
    (per stage index: that stage alone, or, for a ``cumulative`` run, that stage with every
    smaller one) and ``cumulative``. A run whose predict cannot skip stages costs all of them
    for any stage. The estimator turns these into the costs of a set of members
    (:func:`ensel.library.planning.cost.predict_cost`)."""
    if len(X) == 0:
        return {}
    rows = X.iloc[np.resize(np.arange(len(X)), max(COST_ROWS, min(len(X), 2 * COST_ROWS)))]
    per_k = 1e6 / len(rows)  # seconds per call -> ms per 1,000 rows

    def fastest(fn):
        best = np.inf
        for _ in range(COST_REPEATS):
            start = time.process_time()  # CPU time: what the work costs, whatever the load
            value = fn()
            best = min(best, time.process_time() - start)
        return best, value

    view_s, matrix = fastest(lambda: transform(view, rows))
    skips = _takes_stages(type(family_run))
    if skips:
        stage_s = [
            fastest(lambda i=i: family_run.predict(matrix, stages=[i]))[0] for i in range(n_stages)
        ]
    else:
        stage_s = [fastest(lambda: family_run.predict(matrix))[0]] * n_stages
    return {
        "view": round(view_s * per_k, 4),
        "stages": [round(t * per_k, 4) for t in stage_s],
        "cumulative": bool(family_run.cumulative) or not skips,
    }


def refit_full(fitted: FittedRun, data: TrainingData, random_state: int, members=None) -> FittedRun:
    """``fitted``'s run trained once on every training row (one model instead of K siblings,
    as AutoGluon's refit_full), with the same seed and parameters. Each calibrated member among
    ``members`` (positions in ``run.members``; all by default) gets one calibrator fitted on the
    out-of-fold predictions of the siblings on the hillclimb rows, the predictions selection
    judged the member by; analytic variants (logistic correction) apply as before."""
    run = fitted.run
    family = get_family(run.family, run.task)
    target = _target_transform(run.param_dict, data.y, run)
    limit = fitted.max_train_rows  # a planned subsample stays one
    seed = run_seed(run, random_state)
    rows = np.arange(len(data.y))
    if limit is not None:
        rows = stratified_rows(data.y, limit, seed)
    # early stopping on or off as the siblings had it (decided by their training rows)
    extra = fit_extra(family, run, data, min(int((data.folds != 0).sum()), rows.size))
    view, model = _fit_on_rows(family, run, data, rows, target, seed, extra)
    keys = fitted.member_keys
    wanted = {keys[m] for m in (range(len(keys)) if members is None else members)}
    needed = sorted(k for k in fitted.calibrators if k in wanted)
    calibrators: dict = {}
    if needed:
        hill = data.hillclimb
        hill_folds = data.folds[hill]
        stage_idx = sorted({s for s, _ in needed})
        at = {s: i for i, s in enumerate(stage_idx)}
        raw = np.empty((len(stage_idx), hill.size, data.n_outputs))
        for k, (sibling_view, sibling) in enumerate(fitted.siblings):
            held = hill_folds == k
            matrix = transform(sibling_view, data.X.iloc[hill[held]])
            raw[:, held] = predict_stages(sibling, matrix, stage_idx)["none"]
        for s_idx, method in needed:
            cal = ColumnCalibrator(method).fit(raw[at[s_idx]], data.y[hill])
            calibrators[(s_idx, method)] = [cal]
    return FittedRun(run, [(view, model)], np.zeros(1, dtype=int), calibrators, limit)
