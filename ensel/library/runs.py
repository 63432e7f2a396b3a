"""One training run over every fold: the siblings of §4.3.4, their out-of-fold hillclimb
predictions for every staged and calibrated member, and the fitted bundle that predicts new rows.

No hillclimb prediction comes from a model or a calibrator that saw its point: sibling ``k`` is
trained without fold ``k`` and predicts it; the calibrator applied to group ``g`` of the hillclimb
rows is fitted on the other groups' out-of-sample predictions only (cross-fitting). With ``cv=K``
the groups are the folds; with a held-out split they are 5 stratified parts of it. At test time a
member averages its siblings, each passed through its own group's calibrator.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..calibration import CALIBRATORS, ColumnCalibrator
from .families import get_family, missing_requirements
from .spec import RunSpec
from .training import TrainingData
from .views import make_view, transform

__all__ = ["FittedRun", "RunResult", "TargetTransformRun", "fit_run", "run_seed"]


def run_seed(run: RunSpec, random_state: int) -> int:
    """The seed of a run: fixed by the build's seed and the run's id, shared by its siblings."""
    digest = hashlib.sha256(f"{random_state}:{run.run_id}".encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


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

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        """``(n_members, n, C)`` test-time probabilities, members in ``run.members`` order."""
        raw = [family_run.predict(transform(view, X)) for view, family_run in self.siblings]
        stages = self.run.stages or (None,)
        out = []
        for s_idx in range(len(stages)):
            for method in self.run.calibrations:
                if method in CALIBRATORS:
                    cals = self.calibrators[(s_idx, method)]
                    parts = [
                        cal.predict(raw[self.sibling_of_group[g]]["none"][s_idx])
                        for g, cal in enumerate(cals)
                    ]
                else:
                    parts = [r[method][s_idx] for r in raw]
                out.append(np.mean(parts, axis=0))
        return np.stack(out)


@dataclass
class RunResult:
    """What a finished run hands back to the builder."""

    predictions: np.ndarray  # (n_members, n_hillclimb, C) float32
    fitted: FittedRun


@dataclass
class TargetTransformRun:
    """A regression run fitted to ``log1p(y)``: it predicts ``expm1`` of the inner run's output
    (a spec entry's ``target: log1p``)."""

    inner: object

    def predict(self, X) -> dict[str, np.ndarray]:
        with np.errstate(over="ignore"):
            return {k: np.expm1(v) for k, v in self.inner.predict(X).items()}


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


def fit_run(run: RunSpec, data: TrainingData, random_state: int) -> RunResult:
    """Fit ``run`` on every fold and return its out-of-fold hillclimb predictions."""
    family = get_family(run.family, run.task)
    missing = missing_requirements(family)
    if missing:
        raise ImportError(
            f"family {family.name!r} needs {', '.join(missing)}: pip install {' '.join(missing)}"
        )
    seed = run_seed(run, random_state)
    params, y_fit, wrap = _target_transform(run.param_dict, data.y, run)
    hill = data.hillclimb
    hill_folds = data.folds[hill]
    n_stages = len(run.stages or (None,))
    extra = {"categorical": native_categorical(data)} if family.categorical else {}
    if extra and run.view != "native":
        extra["categorical"] = {}
    variants = ["none", *[c for c in run.calibrations if c in family.variants]]
    oof = {v: np.empty((n_stages, hill.size, data.n_outputs)) for v in variants}
    siblings = []
    for k in range(data.n_siblings):
        train = np.flatnonzero(data.folds != k)
        view = make_view(run.view, data.columns).fit(data.X.iloc[train])
        fitted = wrap(
            family.fit(
                transform(view, data.X.iloc[train]),
                y_fit[train],
                n_classes=data.n_classes,
                params=params,
                stages=run.stages,
                random_state=seed,
                **extra,
            )
        )
        held = hill_folds == k
        predicted = fitted.predict(transform(view, data.X.iloc[hill[held]]))
        for v in variants:
            oof[v][:, held] = predicted[v]
        siblings.append((view, fitted))

    y_hill = data.y[hill]
    groups = data.groups
    n_groups = int(groups.max()) + 1
    sibling_of_group = np.arange(n_groups) if data.n_siblings > 1 else np.zeros(n_groups, int)
    calibrators: dict = {}
    members = []
    for s_idx in range(n_stages):
        for method in run.calibrations:
            if method not in CALIBRATORS:
                members.append(oof[method][s_idx])
                continue
            f = oof["none"][s_idx]
            pred = np.empty_like(f)
            cals = []
            for g in range(n_groups):
                inside = groups == g
                cal = ColumnCalibrator(method).fit(f[~inside], y_hill[~inside])
                pred[inside] = cal.predict(f[inside])
                cals.append(cal)
            calibrators[(s_idx, method)] = cals
            members.append(pred)
    predictions = np.stack(members).astype(np.float32)
    if not np.isfinite(predictions).all():
        raise FloatingPointError(f"run {run.run_id} produced non-finite predictions")
    return RunResult(predictions, FittedRun(run, siblings, sibling_of_group, calibrators))
