"""Budget planning for a fit under ``time_limit``: how much of the budget the library build
may take, what selection costs on this machine, and the selection options that fit the time
left after the build."""

from __future__ import annotations

import time

import numpy as np

from ..strategies import STRATEGIES

__all__ = [
    "after_build",
    "fit_reserve",
    "plan_summary",
    "selection_seconds",
    "selection_speed",
    "selection_units",
    "selection_within",
    "unused_budget",
]

RESERVE_SHARE = 0.25
"""At most this share of a fit's time budget is kept back from the library build."""
SELECTION_SHARE = 0.15
"""At most this share of a fit's time budget is reserved for selection before the build (a
budget that ends early builds few members, and ``selection_within`` fits selection into the
time left after the build)."""
UNUSED_SHARE = 0.1
"""A fit that ends with more than this share of its ``time_limit`` left says so
(``budget_.unused_seconds`` and an INFO note with the reason)."""
SELECTION_SPEED = 5e-8
"""Seconds per unit of selection work assumed before the build, to reserve time for selection
(deliberately slower than ``selection_speed`` measures after a build, so that the reserve
errs towards selection)."""
STEP_SECONDS = 3e-4
"""Seconds of overhead per selection step (one bag, one step), whatever the library's size."""


def selection_units(n_members: int, n_rows: int, n_classes: int, options: dict) -> float:
    """The work of ensemble selection: members x rows x classes x bags x steps x bag share."""
    share = options["bag_fraction"] if options["n_bags"] > 1 else 1.0
    columns = 1 if n_classes <= 2 else n_classes
    return n_members * n_rows * columns * max(options["n_bags"], 1) * options["n_iter"] * share


def selection_seconds(units: float, options: dict, speed: float) -> float:
    """Estimated seconds of a selection of ``units`` work (``selection_units``)."""
    return speed * units + STEP_SECONDS * max(options["n_bags"], 1) * options["n_iter"]


def selection_speed(strategy: str, metric, options: dict, P: np.ndarray, y) -> float:
    """Seconds per unit of selection work (``selection_units``) on this machine now, from a
    short pilot of the selection itself (2 bags, 10 steps: about 1% of the default's work) on
    the library's own predictions ``P`` once the build has ended, after a tiny one that
    compiles or loads the selection kernels (paid once per process anyway). A pilot on the
    real matrix after the build measures the machine as selection will find it; one beside
    the build's busy workers would price selection far too high."""
    pilot = {**options, "n_bags": 2, "n_iter": min(10, options["n_iter"]), "prune_fraction": 1.0}
    STRATEGIES[strategy](P[: min(4, len(P))], y, metric, {**pilot, "n_iter": 2})
    start = time.monotonic()
    STRATEGIES[strategy](P, y, metric, pilot)
    seconds = time.monotonic() - start - STEP_SECONDS * pilot["n_bags"] * pilot["n_iter"]
    n_classes = P.shape[2] if P.ndim == 3 else 2
    units = selection_units(P.shape[0], P.shape[1], n_classes, pilot)
    return max(seconds, 1e-6) / max(units, 1.0)


def fit_reserve(time_limit: float, selection: float) -> float:
    """Seconds of a fit's ``time_limit`` kept back from the library build for what follows:
    selection (``selection_seconds``, estimated for the whole spec), then the detectors'
    combination, loading the chosen members and the report (1 s + 5% of the budget); at most
    ``RESERVE_SHARE`` of the budget (selection is then fitted into the time left, see
    ``selection_within``)."""
    selection = min(selection, SELECTION_SHARE * time_limit)
    return min(RESERVE_SHARE * time_limit, 1.0 + 0.05 * time_limit + selection)


def selection_within(
    options: dict, seconds: float, speed: float, shape: tuple[int, ...]
) -> tuple[dict, dict]:
    """Selection ``options`` whose work fits in ``seconds`` at ``speed`` on predictions of
    ``shape``, and what was changed: first the library is pruned to its best members by
    hillclimb score (``prune_fraction``, §4.3.6: the top 10-20% lose little), down to 8
    members; then fewer bags, then fewer steps (at least 10)."""
    n_members, n_rows = shape[0], shape[1]
    n_classes = shape[2] if len(shape) == 3 else 2
    out = dict(options)

    def cost(members: int) -> float:
        return selection_seconds(selection_units(members, n_rows, n_classes, out), out, speed)

    report = {"selection_seconds_estimated": cost(n_members), "selection_seconds_allowed": seconds}
    if cost(n_members) <= seconds:
        return out, report
    members = n_members
    while members > min(n_members, 8) and cost(members) > seconds:
        members = max(min(n_members, 8), int(members * 0.8))
    out["prune_fraction"] = min(options["prune_fraction"], members / n_members)
    while cost(members) > seconds and out["n_bags"] > 1:
        out["n_bags"] = max(1, out["n_bags"] // 2)
    while cost(members) > seconds and out["n_iter"] > 10:
        out["n_iter"] = max(10, out["n_iter"] // 2)
    report.update(
        {k: out[k] for k in ("prune_fraction", "n_bags", "n_iter") if out[k] != options[k]}
    )
    return out, report


def after_build(
    time_limit: float, n_members: int, n_rows: int, n_classes: int, options: dict
) -> float:
    """The seconds of ``time_limit`` the library build leaves for what follows it
    (``fit_reserve``, with selection estimated for ``n_members`` members on ``n_rows``
    hillclimb rows at ``SELECTION_SPEED``): the build may take what the fit's budget has left
    less this."""
    units = selection_units(n_members, n_rows, n_classes, options)
    return fit_reserve(time_limit, selection_seconds(units, options, SELECTION_SPEED))


def plan_summary(plan) -> dict:
    """What the build's plan decided (``Library.plan``, one row per run): runs per decision,
    its estimated seconds, and the runs subsampled (run -> rows) or left out (run -> why)."""
    decisions = plan["decision"].value_counts().to_dict() if len(plan) else {}
    end = plan["end"].dropna() if "end" in plan else []
    return {
        "runs": {str(k): int(v) for k, v in decisions.items()},
        "estimated_seconds": float(end.max()) if len(end) else 0.0,
        "subsampled": {
            r: int(n) for r, n in plan.loc[plan["decision"] == "subsampled", ["run", "rows"]].values
        },
        "left_out": dict(plan.loc[plan["decision"] == "left out", ["run", "note"]].values),
    }


def unused_budget(time_limit: float, fit_seconds: float, spec, rows: int, failures) -> str | None:
    """Why a fit under ``time_limit`` left more than ``UNUSED_SHARE`` of it unused (None when
    it did not): the library had nothing left to build. ``spec``: the LibrarySpec built (None
    for a library given built) on ``rows`` rows; ``failures``: the library's failure table."""
    left = time_limit - fit_seconds
    if left <= UNUSED_SHARE * time_limit:
        return None
    if spec is None:
        return "the library was given built, so there was nothing to build"
    waiting = failures["status"].isin(("budget", "left_out"))
    if waiting.any():
        runs = failures.loc[waiting, "run"].nunique()
        return f"{runs} run(s) were estimated not to end before the deadline and not started"
    spare = spec.spare_for(rows, budgeted=True)
    if spare:
        return f"every run of spec {spec.name!r} was built, its {len(spare)} spare run(s) included"
    if spec.spare:
        tier = (
            f"its spare tier is built from {spec.spare_min_rows:,} rows and this table has "
            f"{rows:,} (library='default_spare' builds it on any table)"
        )
    elif spec.task == "classification":
        tier = "it has no spare tier (library='default_spare' has one)"
    else:
        tier = "it has no spare tier"
    return (
        f"every run of spec {spec.name!r} was built and {tier}; on small tables that tier, "
        "repeated cross-validation, ten folds, tune_selection, a second level, growth "
        "judged on held-out rows and TabM members do not improve the default's ensemble"
    )
