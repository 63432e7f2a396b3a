"""Grow a built library where the ensemble gains: optuna proposes new training runs (TPE,
multivariate, one study over families with a conditional space), and a candidate's objective is
the out-of-fold score of the current ensemble with the candidate's members added, not the
candidate's own score, so the library grows where ensemble selection can use it. Only the runs
that raised that score join the library: the others stay in the store (a rerun finds them) but
would only give the final selection more ways to fit noise in the hillclimb rows.

The objective is cross-selected: the hillclimb rows (already out-of-fold predictions) are split
in two stratified halves; ensemble selection over the current ensemble's members plus the
candidate's is fitted on one half and scored on the other, and the two scores are averaged.
Every proposed run is stored like any other run (a rerun with the same seed proposes the same
runs and finds them in the store), and growth stops when its time or trial budget is spent.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..metrics import greater_is_better, resolve_metric, score
from ..selection import EnsembleSelection
from .families import get_family, missing_requirements
from .spec import RunSpec

__all__ = ["GROW_SPACES", "GrowSpec", "grow_runs", "parse_grow"]

log = logging.getLogger(__name__)


def _space_hist_gbdt(trial, p):
    return {
        "learning_rate": trial.suggest_float(p + "learning_rate", 0.02, 0.2, log=True),
        "max_leaf_nodes": trial.suggest_int(p + "max_leaf_nodes", 4, 128, log=True),
        "min_samples_leaf": trial.suggest_int(p + "min_samples_leaf", 2, 100, log=True),
        "l2_regularization": trial.suggest_float(p + "l2_regularization", 1e-3, 10.0, log=True),
        "max_features": trial.suggest_float(p + "max_features", 0.3, 1.0),
    }


def _space_xgboost(trial, p):
    return {
        "max_depth": trial.suggest_int(p + "max_depth", 2, 10),
        "learning_rate": trial.suggest_float(p + "learning_rate", 0.01, 0.2, log=True),
        "subsample": trial.suggest_float(p + "subsample", 0.5, 1.0),
        "colsample_bytree": trial.suggest_float(p + "colsample_bytree", 0.3, 1.0),
        "min_child_weight": trial.suggest_float(p + "min_child_weight", 0.5, 20.0, log=True),
        "reg_lambda": trial.suggest_float(p + "reg_lambda", 0.1, 30.0, log=True),
        "reg_alpha": trial.suggest_float(p + "reg_alpha", 1e-3, 5.0, log=True),
    }


def _space_lightgbm(trial, p):
    return {
        "num_leaves": trial.suggest_int(p + "num_leaves", 4, 128, log=True),
        "learning_rate": trial.suggest_float(p + "learning_rate", 0.01, 0.2, log=True),
        "subsample": trial.suggest_float(p + "subsample", 0.5, 1.0),
        "colsample_bytree": trial.suggest_float(p + "colsample_bytree", 0.3, 1.0),
        "min_child_samples": trial.suggest_int(p + "min_child_samples", 3, 100, log=True),
        "reg_lambda": trial.suggest_float(p + "reg_lambda", 1e-3, 30.0, log=True),
        "reg_alpha": trial.suggest_float(p + "reg_alpha", 1e-3, 5.0, log=True),
    }


def _space_extra_trees(trial, p):
    return {
        "max_features": trial.suggest_float(p + "max_features", 0.1, 1.0),
        "min_samples_leaf": trial.suggest_int(p + "min_samples_leaf", 1, 16, log=True),
        "criterion": trial.suggest_categorical(p + "criterion", ["gini", "entropy"]),
    }


def _space_random_forest(trial, p):
    return {
        "max_features": trial.suggest_int(p + "max_features", 1, 32, log=True),
        "min_samples_leaf": trial.suggest_int(p + "min_samples_leaf", 1, 16, log=True),
        "criterion": trial.suggest_categorical(p + "criterion", ["gini", "entropy"]),
    }


def _space_tabular_mlp(trial, p):
    return {
        "hidden": trial.suggest_categorical(p + "hidden", [64, 128, 256, 512]),
        "layers": trial.suggest_int(p + "layers", 1, 3),
        "dropout": trial.suggest_float(p + "dropout", 0.0, 0.5),
        "lr": trial.suggest_float(p + "lr", 1e-3, 1e-2, log=True),
        "weight_decay": trial.suggest_float(p + "weight_decay", 1e-4, 0.3, log=True),
        "label_smoothing": trial.suggest_float(p + "label_smoothing", 0.0, 0.1),
    }


def _space_catboost(trial, p):
    return {
        "depth": trial.suggest_int(p + "depth", 3, 8),
        "learning_rate": trial.suggest_float(p + "learning_rate", 0.02, 0.2, log=True),
        "l2_leaf_reg": trial.suggest_float(p + "l2_leaf_reg", 0.5, 30.0, log=True),
        "rsm": trial.suggest_float(p + "rsm", 0.3, 1.0),
    }


@dataclass(frozen=True)
class GrowSpace:
    """A family's search space: a function ``(trial, prefix) -> params``, the stages and the
    calibrations every proposed run gets."""

    suggest: Callable[[Any, str], dict[str, Any]]
    stages: tuple[int, ...]
    calibrations: tuple[str, ...] = ("none",)


GROW_SPACES: dict[str, GrowSpace] = {
    "hist_gbdt": GrowSpace(_space_hist_gbdt, (16, 32, 64, 128, 256, 512)),
    "xgboost": GrowSpace(_space_xgboost, (32, 64, 128, 256, 512)),
    "lightgbm": GrowSpace(_space_lightgbm, (32, 64, 128, 256, 512)),
    "extra_trees": GrowSpace(_space_extra_trees, (64, 256), ("none", "platt")),
    "random_forest": GrowSpace(_space_random_forest, (64, 256), ("none", "platt")),
    "tabular_mlp": GrowSpace(_space_tabular_mlp, (2, 6, 14, 30)),
    "catboost": GrowSpace(_space_catboost, (64, 128, 256, 512)),
}
"""Search spaces of the families growth proposes from (a family whose optional dependency is
missing is left out)."""

DEFAULT_FAMILIES = ("hist_gbdt", "xgboost", "lightgbm", "extra_trees", "tabular_mlp")


@dataclass(frozen=True)
class GrowSpec:
    """How to grow: at most ``trials`` proposed runs and ``time`` seconds (None: no limit on
    that), from ``families``, selecting for ``metric``; ``batch`` runs are proposed at a time
    (None: one per slot of the build's executor, its worker processes or the cluster's
    threads); ``seed`` seeds the sampler. ``rows``: positions in the hillclimb set that
    growth judges runs on (None: all of them); giving it rows a later selection leaves out keeps
    growth's choices from fitting that selection's noise."""

    trials: int | None = 20
    time: float | None = None
    families: tuple[str, ...] = DEFAULT_FAMILIES
    metric: str = "mxe"
    batch: int | None = None
    seed: int = 0
    selection: Mapping[str, Any] = field(default_factory=dict)
    rows: tuple[int, ...] | None = None

    @property
    def is_open(self) -> bool:
        """No budget of its own (``grow=True``): it needs the build's time budget."""
        return self.trials is None and self.time is None


def parse_grow(grow, metric: str = "mxe", seed: int = 0) -> GrowSpec | None:
    """``grow`` as a GrowSpec: None/False/0 (no growth), True (as long as the build's time budget
    allows), an int (that many trials), a number of seconds as ``{"time": s}``, a dict of
    GrowSpec fields, or a GrowSpec."""
    if grow is None or grow is False or (isinstance(grow, int) and grow == 0):
        return None
    if isinstance(grow, GrowSpec):
        return grow
    base = {"metric": metric, "seed": seed}
    if grow is True:  # as long as the build's time budget allows
        return GrowSpec(trials=None, time=None, **base)
    if isinstance(grow, bool) or not isinstance(grow, int | dict):
        raise ValueError(
            f"grow={grow!r}: use a number of trials (int), a dict such as "
            "{'trials': 20, 'time': 120, 'families': ['hist_gbdt', 'xgboost']}, or None"
        )
    if isinstance(grow, int):
        if grow < 0:
            raise ValueError(f"grow={grow}: the number of trials must be positive")
        return GrowSpec(trials=grow, **base)
    unknown = sorted(set(grow) - set(GrowSpec.__dataclass_fields__))
    if unknown:
        raise ValueError(
            f"grow has unknown key(s) {unknown}; allowed: {sorted(GrowSpec.__dataclass_fields__)}"
        )
    spec = GrowSpec(**{**base, **grow})
    bad = [f for f in spec.families if f not in GROW_SPACES]
    if bad:
        raise ValueError(f"grow families {bad} have no search space; known: {sorted(GROW_SPACES)}")
    rows = None if spec.rows is None else tuple(int(r) for r in spec.rows)
    return GrowSpec(**{**spec.__dict__, "families": tuple(spec.families), "rows": rows})


class _CrossSelection:
    """Score of ensemble selection over a pool of members, fitted on one half of the hillclimb
    rows and scored on the other (both ways, averaged): an out-of-sample ensemble score."""

    def __init__(self, y: np.ndarray, metric, seed: int, options: Mapping[str, Any]):
        self.y = y
        self.metric = resolve_metric(metric)
        self.sign = 1.0 if greater_is_better(self.metric) else -1.0
        rng = np.random.default_rng(seed)
        half = np.zeros(y.size, dtype=bool)
        for c in np.unique(y):  # stratified halves
            rows = rng.permutation(np.flatnonzero(y == c))
            half[rows[: rows.size // 2]] = True
        self.halves = (np.flatnonzero(half), np.flatnonzero(~half))
        self.options = {"n_iter": 40, "n_bags": 1, "sorted_init": True, "max_init": 5}
        self.options.update(options)
        self.seed = seed

    def value(self, P: np.ndarray) -> float:
        """The cross-selected score (larger is better: negated for losses)."""
        scores = []
        for fit_rows, test_rows in (self.halves, self.halves[::-1]):
            es = EnsembleSelection(metric=self.metric, random_state=self.seed, **self.options)
            es.fit(P[:, fit_rows], self.y[fit_rows])
            scores.append(score(self.metric, self.y[test_rows], es.predict_proba(P[:, test_rows])))
        return self.sign * float(np.mean(scores))

    def keep(self, P: np.ndarray) -> np.ndarray:
        """Indices of the members ensemble selection on all rows gives weight."""
        es = EnsembleSelection(metric=self.metric, random_state=self.seed, **self.options)
        return np.flatnonzero(es.fit(P, self.y).weights_ > 0)


def _study(spec: GrowSpec):
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        sampler = optuna.samplers.TPESampler(
            seed=spec.seed,
            multivariate=True,
            group=True,
            constant_liar=True,
            n_startup_trials=min(8, max(2, (spec.trials or 16) // 3)),
        )
        return optuna.create_study(direction="maximize", sampler=sampler)


def _propose(trial, families: tuple[str, ...], view_of) -> RunSpec:
    name = trial.suggest_categorical("family", list(families))
    space = GROW_SPACES[name]
    family = get_family(name)
    params = {**family.params, **space.suggest(trial, f"{name}.")}
    if family.validate is not None:
        family.validate(params, space.stages)
    return RunSpec(
        name, tuple(sorted(params.items())), view_of(family), space.stages, space.calibrations
    )


def grow_runs(
    spec: GrowSpec,
    predictions: Callable[[list[str]], np.ndarray],
    runs: list[str],
    y: np.ndarray,
    fit: Callable[[list[RunSpec]], dict[str, bool]],
) -> list[str]:
    """Propose, fit and score new runs until the budget is spent; return the ids of the runs
    that raised the cross-selected score when they were scored, in order.

    ``predictions(run_ids)`` gives the hillclimb predictions ``(m, n[, C])`` of stored runs'
    members; ``runs`` are the library's ok runs; ``fit(run_specs)`` fits and stores runs not yet
    in the store (reusing stored ones) and says which are ok."""
    families = tuple(f for f in spec.families if not missing_requirements(get_family(f)))
    if not families:
        log.warning("grow: no family of %s can be imported; nothing to grow", spec.families)
        return []
    start = time.perf_counter()
    if spec.rows is not None:
        predictions, y = _on_rows(predictions, y, np.asarray(spec.rows, dtype=np.intp))
    cross = _CrossSelection(y, spec.metric, spec.seed, spec.selection)
    P = np.asarray(predictions(runs), dtype=np.float64)
    pool = P[cross.keep(P)]
    best = cross.value(pool)
    log.info("grow: start from %d members (%d selected), score %.5f", len(P), len(pool), best)
    study = _study(spec)
    added: list[str] = []
    n_trials = 0

    def budget_left() -> bool:
        if spec.trials is not None and n_trials >= spec.trials:
            return False
        return spec.time is None or time.perf_counter() - start < spec.time

    while budget_left():
        batch = spec.batch or 1
        k = batch if spec.trials is None else min(batch, spec.trials - n_trials)
        trials, proposed = [], []
        for _ in range(k):
            trial = study.ask()
            try:
                proposed.append(_propose(trial, families, lambda f: f.view))
                trials.append(trial)
            except ValueError as exc:  # an invalid draw: tell optuna and move on
                study.tell(trial, state=_pruned())
                log.info("grow: invalid proposal skipped: %s", exc)
        n_trials += k
        if not proposed:
            continue
        status = fit(proposed)
        for trial, run in zip(trials, proposed, strict=True):
            if not status.get(run.run_id):
                study.tell(trial, state=_failed())
                continue
            candidate = np.concatenate([pool, np.asarray(predictions([run.run_id]), float)])
            value = cross.value(candidate)
            study.tell(trial, value)
            if value > best:
                best = value
                pool = candidate[cross.keep(candidate)]
                if run.run_id not in added and run.run_id not in runs:
                    added.append(run.run_id)
            log.info("grow: trial %d %s -> %.5f (best %.5f)", trial.number, run.run_id, value, best)
    return added


def _on_rows(predictions, y, rows):
    """``predictions`` and ``y`` restricted to the hillclimb rows ``rows``."""

    def restricted(run_ids):
        return np.asarray(predictions(run_ids))[:, rows]

    return restricted, y[rows]


def _pruned():
    import optuna

    return optuna.trial.TrialState.PRUNED


def _failed():
    import optuna

    return optuna.trial.TrialState.FAIL
