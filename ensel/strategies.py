"""How a library's members are combined (§4.3.2): ensemble selection (ES), the best single
member (MODSEL) and Bayesian model averaging (BAYESAVG), each from hillclimb predictions to
member weights, so that all three can be compared on the same library."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .library.planning.budget import Budget
from .metrics import greater_is_better, resolve_metric, score, score_batch
from .selection import EnsembleSelection, PredictCost, weighted_average

__all__ = [
    "COST_FRACTIONS",
    "SELECTION_CANDIDATES",
    "STRATEGIES",
    "bayes_average",
    "cheapest_within_noise",
    "choose_selection",
    "drop_costly_runs",
    "ensemble_selection",
    "model_selection",
]

Strategy = Callable[[np.ndarray, np.ndarray, Any, dict], np.ndarray]


def ensemble_selection(P: np.ndarray, y: np.ndarray, metric, options: dict) -> np.ndarray:
    """Weights of ensemble selection (Caruana et al. 2004, §4.1-4.2) for ``metric``."""
    options = dict(options)
    cost = options.pop("cost", None)
    es = EnsembleSelection(metric=metric, **options)
    return (es.fit(P, y) if cost is None else es.fit(P, y, cost=cost)).weights_


def model_selection(P: np.ndarray, y: np.ndarray, metric, options: dict) -> np.ndarray:
    """All weight on the member with the best hillclimb score for ``metric`` (MODSEL)."""
    scores = score_batch(metric, y, P)
    sign = 1.0 if greater_is_better(resolve_metric(metric)) else -1.0
    weights = np.zeros(P.shape[0])
    weights[int(np.argmax(sign * scores))] = 1.0
    return weights


def bayes_average(P: np.ndarray, y: np.ndarray, metric, options: dict) -> np.ndarray:
    """Bayesian model averaging (Domingos 2000, as compared in §4.3.2): uniform prior, weights
    proportional to each member's likelihood of the hillclimb labels, ``exp(-N * MXE)`` (for a
    regression metric, a Gaussian likelihood of the residuals, see
    ``_gaussian_log_likelihood``). The metric does not enter otherwise: BMA weighs by likelihood
    whatever the target metric. Weights below
    ``1e-9`` of the largest are dropped (they cannot change a prediction) to keep the model small.
    """
    if resolve_metric(metric).task == "regression":
        log_likelihood = _gaussian_log_likelihood(P, y)
    else:
        log_likelihood = -y.size * score_batch("mxe", y, P)
    weights = np.exp(log_likelihood - log_likelihood.max())
    weights[weights < 1e-9] = 0.0
    return weights / weights.sum()


def _gaussian_log_likelihood(P: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Each member's log likelihood of real targets under Gaussian noise of its own maximum
    likelihood variance (its hillclimb MSE): ``-N/2 (log(2 pi MSE) + 1)``. A member with zero
    error gets the largest finite value."""
    mse = score_batch("rmse", y, P) ** 2
    mse = np.maximum(mse, np.finfo(float).tiny)
    return -0.5 * y.size * (np.log(2.0 * np.pi * mse) + 1.0)


STRATEGIES: dict[str, Strategy] = {
    "es": ensemble_selection,
    "modsel": model_selection,
    "bayesavg": bayes_average,
}


SELECTION_CANDIDATES: tuple[dict, ...] = (
    {},
    {"prune_fraction": 0.5},
    {"prune_fraction": 0.2},
    {"n_bags": 1},
    {"sorted_init": False},
)
"""Selection settings a nested comparison chooses among, as changes to the caller's options:
as given, the library pruned to its best half or fifth (§4.3.6), no bagging, and no sorted
initialisation (§4.2)."""


def choose_selection(
    P: np.ndarray,
    y: np.ndarray,
    metric,
    options: dict,
    candidates: tuple[dict, ...] = SELECTION_CANDIDATES,
    n_folds: int = 3,
) -> tuple[dict, list[dict]]:
    """The selection options that score best out of fold, and the comparison.

    Nested out-of-fold comparison: the hillclimb rows (already out-of-fold predictions) are cut
    into ``n_folds`` stratified folds; for each candidate (``options`` updated by it) ensemble
    selection is fitted on all folds but one and scored on that one. The candidate with the
    best mean held-out score wins; ties go to the earlier candidate (the options as given come
    first). Returns ``(chosen options, [{"options", "score", "se"} per candidate])``."""
    from sklearn.model_selection import StratifiedKFold

    metric = resolve_metric(metric)
    sign = 1.0 if greater_is_better(metric) else -1.0
    y = np.asarray(y)
    seed = options.get("random_state", 0)
    n_folds = int(min(n_folds, np.bincount(y).min())) if y.dtype.kind in "iu" else n_folds
    if n_folds < 2:
        return dict(options), []
    folds = list(
        StratifiedKFold(n_folds, shuffle=True, random_state=seed).split(np.zeros(y.size), y)
    )
    table = []
    for change in candidates:
        trial = {**options, **change}
        scores = []
        for fit_rows, held in folds:
            es = EnsembleSelection(metric=metric, **trial).fit(P[:, fit_rows], y[fit_rows])
            scores.append(score(metric, y[held], es.predict_proba(P[:, held])))
        scores = np.asarray(scores)
        table.append(
            {
                "options": change or {"as given": True},
                "score": float(scores.mean()),
                "se": float(scores.std(ddof=1) / np.sqrt(scores.size)),
            }
        )
    best = int(np.argmax([sign * row["score"] for row in table]))
    return {**options, **candidates[best]}, table


COST_FRACTIONS: tuple[float, ...] = tuple(2.0**-i for i in range(1, 7))
"""Predict-cost budgets ``max_predict_ms="auto"`` tries, as fractions of the unconstrained
ensemble's cost (1/2 down to 1/64)."""
NEGLIGIBLE_LOSS = 1e-4
"""A cheaper ensemble that loses at most this share of the unconstrained one's hillclimb score
is accepted whatever the standard error: two nearly equal ensembles on many hillclimb rows
have a tiny paired standard error, so a costly member with a sliver of the weight would
otherwise be kept for a difference no test set can tell apart."""


class _NoiseBar:
    """The unconstrained ensemble's hillclimb score, and whether another ensemble is within
    noise of it: it loses no more than ``n_se`` standard errors of the paired difference (a
    bootstrap over the hillclimb rows, ``n_boot`` draws seeded by ``seed``), or no more than
    ``NEGLIGIBLE_LOSS`` of the score."""

    def __init__(self, P, y, metric, weights, seed, n_boot: int = 50, n_se: float = 0.5):
        self.P, self.y, self.metric, self.n_se = P, np.asarray(y), metric, n_se
        self.sign = 1.0 if greater_is_better(metric) else -1.0
        rng = np.random.default_rng(seed)
        self.boot = rng.integers(0, self.y.size, size=(n_boot, self.y.size))
        self.full, self.full_boot = self._gains(weights)

    def _gains(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        pred = weighted_average(w / w.sum(), self.P, self.metric.task)
        y, sign = self.y, self.sign
        return sign * score(self.metric, y, pred), np.array(
            [sign * score(self.metric, y[b], pred[b]) for b in self.boot]
        )

    def check(self, w: np.ndarray) -> dict:
        """``{"score", "lost", "se", "accepted"}`` of the ensemble of weights ``w``."""
        gain, gain_boot = self._gains(w)
        lost, se = self.full - gain, float(np.std(self.full_boot - gain_boot, ddof=1))
        accepted = bool(lost <= max(self.n_se * se, NEGLIGIBLE_LOSS * abs(self.full)))
        return {"score": self.sign * gain, "lost": lost, "se": se, "accepted": accepted}


def cheapest_within_noise(
    P: np.ndarray,
    y: np.ndarray,
    metric,
    options: dict,
    cost,
    weights: np.ndarray,
    budget: Budget | None = None,
    fractions: tuple[float, ...] = COST_FRACTIONS,
    n_boot: int = 50,
    n_se: float = 0.5,
) -> tuple[np.ndarray, float | None, list[dict]]:
    """The cheapest ensemble whose hillclimb score is within noise of the unconstrained one.

    ``weights`` is the unconstrained selection. Budgets are ``fractions`` of its predict cost;
    for each one tried, ensemble selection (``options``) is refitted under it, and the score
    lost against the unconstrained ensemble is compared with the standard error of that
    difference (a paired bootstrap over the hillclimb rows): a budget whose ensemble loses no
    more than ``n_se`` standard errors, or no more than ``NEGLIGIBLE_LOSS`` of the score, is
    accepted (with 1, the one-standard-error rule of Breiman et al. 1984, ESL §7.10; the
    default 0.5 is stricter, to keep test scores level with the unconstrained ensemble:
    docs/decisions.md). The budgets are bisected, assuming a smaller budget never scores
    better (3 selections for 6 fractions); no selection starts when the time ``budget`` has
    less left than the last one took. Returns ``(weights, predict-cost budget or None, rows
    tried)``, the unconstrained ``weights`` and None when no budget is accepted."""
    metric = resolve_metric(metric)
    cost = PredictCost.coerce(cost, len(P))
    bar = _NoiseBar(P, y, metric, weights, options.get("random_state"), n_boot, n_se)
    full_cost = cost.of(np.flatnonzero(weights > 0))
    cheapest = float(cost.member_cost().min())
    chosen, chosen_budget, rows = weights, None, []
    lo, hi, took = 0, len(fractions), 0.0
    while lo < hi:
        if budget is not None and budget.timed and budget.left() < took:
            break
        mid = (lo + hi) // 2
        max_cost = fractions[mid] * full_cost
        if max_cost < cheapest:
            hi = mid
            continue
        started = time.monotonic()
        try:
            es = EnsembleSelection(metric=metric, **options, max_cost=max_cost).fit(P, y, cost=cost)
        except ValueError:  # pruning left no member within this budget
            hi = mid
            continue
        finally:
            took = time.monotonic() - started
        row = bar.check(es.weights_)
        rows.append({"fraction": fractions[mid], "budget": max_cost, "cost": es.cost_, **row})
        if row["accepted"]:
            chosen, chosen_budget, lo = es.weights_, max_cost, mid + 1
        else:
            hi = mid
    return chosen, chosen_budget, rows


def drop_costly_runs(
    P: np.ndarray,
    y: np.ndarray,
    metric,
    cost,
    weights: np.ndarray,
    full_weights: np.ndarray,
    runs,
    seed=None,
    budget: Budget | None = None,
    n_boot: int = 50,
    n_se: float = 0.5,
) -> tuple[np.ndarray, list[dict]]:
    """``weights`` less the runs that cost most per unit of weight, while the hillclimb score
    stays within noise of the unconstrained ensemble (``full_weights``; the bar of
    :func:`cheapest_within_noise`, so the two together lose no more than it allows).

    A budget's selection keeps whatever helps within its budget: a k-NN run of five siblings
    holding 0.006 of the weight, which costs as much as a dozen boosted models. Here each kept
    run (``runs``: the run of each member; its members go together, since they share its
    work) is priced by the cost its removal saves over the weight it holds; the costliest run
    whose removal (the others' weights renormalised) stays within noise goes, and the search
    starts again, until no run can go or the time ``budget`` runs out. Returns
    ``(weights, rows of the runs dropped)``."""
    metric = resolve_metric(metric)
    cost = PredictCost.coerce(cost, len(P))
    runs = np.asarray(runs)
    bar = _NoiseBar(P, y, metric, full_weights, seed, n_boot, n_se)
    w = np.asarray(weights, dtype=float) / np.sum(weights)
    dropped = []
    while budget is None or not budget.timed or budget.left() > 0:
        kept = np.flatnonzero(w > 0)
        total = cost.of(kept)
        candidates = []
        for run in dict.fromkeys(runs[kept]):
            rest = kept[runs[kept] != run]
            if rest.size:
                saved = total - cost.of(rest)
                candidates.append((saved / w[kept[runs[kept] == run]].sum(), saved, run))
        for _, saved, run in sorted(candidates, key=lambda c: -c[0]):
            trial = np.where(runs == run, 0.0, w)
            row = bar.check(trial)
            if row["accepted"]:
                w = trial / trial.sum()
                dropped.append({"run": str(run), "saved": saved, "cost": total - saved, **row})
                break
        else:
            break
    return w, dropped
