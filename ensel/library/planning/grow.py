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

from ...metrics import greater_is_better, resolve_metric, score
from ...selection import EnsembleSelection
from ..families import FAMILIES, GrowSpace, get_family, missing_requirements
from ..spec import RunSpec

__all__ = ["GrowSpec", "default_families", "grow_runs", "grow_spaces", "parse_grow"]

log = logging.getLogger(__name__)


def grow_spaces() -> dict[str, GrowSpace]:
    """The search spaces the classification families declare (``FamilyTraits.grow``), by
    family name."""
    return {name: f.traits.grow for name, f in FAMILIES.items() if f.traits.grow is not None}


def default_families() -> tuple[str, ...]:
    """The families growth proposes from when none are named: those whose search space says
    so (``GrowSpace.default``), in that order."""
    chosen = [(space.default, name) for name, space in grow_spaces().items()]
    return tuple(name for order, name in sorted(c for c in chosen if c[0] is not None))


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
    families: tuple[str, ...] = field(default_factory=default_families)
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
    spaces = grow_spaces()
    bad = [f for f in spec.families if f not in spaces]
    if bad:
        raise ValueError(f"grow families {bad} have no search space; known: {sorted(spaces)}")
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
    family = get_family(name)
    space = family.traits.grow
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
