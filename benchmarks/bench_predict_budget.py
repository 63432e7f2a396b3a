"""What the predict-cost budget costs in accuracy (issue 31): on the tables where ensel trails
AutoGluon, does ``max_predict_ms="auto"`` (the cheapest ensemble within noise of the
unconstrained one, then :func:`ensel.strategies.drop_costly_runs`) give away test accuracy, and
would a narrower noise bar for the drops keep it?

    python -m benchmarks.bench_predict_budget [--quick] [--seeds 0 1] [--datasets ...]
    python -m benchmarks.bench_predict_budget --report

Per dataset and seed (``benchmarks.datasets.train_test``, the AutoML protocol's split and
grouped folds): the estimator is fitted as ``bench_automl`` fits it (``library="default"``,
``time_limit`` ``--budget``, ``n_jobs=2``), into a store, and predicts the test rows: the row
"fit". Then ``EnsembleSelectionClassifier`` selects again from that store, with no time limit,
once per variant:

- ``auto``: the default, the noise bar at 0.5 standard errors for both steps (the baseline:
  every variant selects from the same library under the same conditions);
- ``auto, drops at 0.25 se`` and ``auto, drops at 0 se``: the drops held to a narrower bar (0:
  only what loses no more than ``NEGLIGIBLE_LOSS``);
- ``auto, no drops``: the cheapest budget within noise only;
- ``none``: no predict budget (``max_predict_ms=None``).

The drops' bar is not an estimator parameter: the harness wraps the function the estimator
calls. Rows record test AUC and log loss, members with weight, the predict cost the estimator
priced and the warm predict time per row, with the commit, versions and load. Fits at one
budget depend on the load (a busy machine builds fewer runs): run alone.
"""

from __future__ import annotations

import contextlib
import functools
import tempfile
import time
from pathlib import Path

import pandas as pd

from benchmarks._peers import classification_scores
from benchmarks._predict_timing import warm_predict
from benchmarks._record import harness_parser, load_results, provenance, quick_results, run_pending
from benchmarks._report import variants_against

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "predict_budget.jsonl"
DATASETS = ("doctor_contacts", "vietnam_i", "movies_drama")
"""The three larger tables of the AutoML protocol, where ensel trailed AutoGluon."""
BASELINE = "auto"
VARIANTS = {
    "auto": ("auto", 0.5),
    "auto, drops at 0.25 se": ("auto", 0.25),
    "auto, drops at 0 se": ("auto", 0.0),
    "auto, no drops": ("auto", None),
    "none": (None, None),
}
"""Variant -> (``max_predict_ms``, the drops' noise bar in standard errors; None: no drops)."""


@contextlib.contextmanager
def drops_at(n_se: float | None):
    """The estimator's ``drop_costly_runs`` held to ``n_se`` standard errors while the block
    runs (None: it drops nothing)."""
    import ensel.estimator._base as base

    original = base.drop_costly_runs

    def nothing(P, y, metric, cost, weights, *args, **kwargs):
        return weights / weights.sum(), []

    base.drop_costly_runs = nothing if n_se is None else functools.partial(original, n_se=n_se)
    try:
        yield
    finally:
        base.drop_costly_runs = original


def _row(dataset, seed, variant, clf, X_te, y_te, n_train, extra) -> dict:
    proba, us_per_row = warm_predict(clf.predict_proba, X_te, len(X_te))
    return {
        "dataset": dataset,
        "seed": seed,
        "variant": variant,
        **classification_scores(y_te, clf.classes_, proba),
        "members_with_weight": int((clf.weights_ > 0).sum()),
        "predict_cost_ms": float(clf.predict_cost_ms_),
        "predict_us_per_row": us_per_row,
        "n_train": n_train,
        **extra,
        **provenance(),
    }


def run_one(dataset: str, seed: int, budget: float, n_jobs: int) -> list[dict]:
    """The fit's row and one row per variant on one dataset and seed."""
    from benchmarks.datasets import train_groups, train_test
    from ensel import EnsembleSelectionClassifier

    X_tr, X_te, y_tr, y_te, ds = train_test(dataset, seed)
    groups = train_groups(ds, seed)
    y_tr, y_te = y_tr.astype(str), y_te.astype(str)
    rows = []
    with tempfile.TemporaryDirectory(prefix="ensel-predict-budget-") as tmp:
        store = Path(tmp) / "store"
        clf = EnsembleSelectionClassifier(
            library="default", time_limit=budget, n_jobs=n_jobs, random_state=seed, store=store
        )
        start = time.perf_counter()
        clf.fit(X_tr, y_tr, groups=groups)
        fit = {
            "fit_s": time.perf_counter() - start,
            "budget": budget,
            "spare_runs": clf.budget_.spare_runs,
        }
        rows.append(_row(dataset, seed, "fit", clf, X_te, y_te, len(X_tr), fit))
        for variant, (max_predict_ms, n_se) in VARIANTS.items():
            clf = EnsembleSelectionClassifier(
                library=str(store), max_predict_ms=max_predict_ms, n_jobs=n_jobs, random_state=seed
            )
            start = time.perf_counter()
            with drops_at(n_se):
                clf.fit(X_tr, y_tr, groups=groups)
            extra = {"selection_s": time.perf_counter() - start, "budget": budget}
            rows.append(_row(dataset, seed, variant, clf, X_te, y_te, len(X_tr), extra))
    return rows


def report(path: Path) -> list[str]:
    """Every variant against ``auto`` reselected, per dataset and over datasets (positive
    differences: the variant is better), and the members and predict times per variant."""
    every = pd.DataFrame(load_results(path))
    lines = variants_against(every, BASELINE, called="auto")
    summary = every.groupby("variant")[["members_with_weight", "predict_us_per_row"]].median()
    lines += ["", "Median members with weight and predict microseconds per row:", ""]
    lines += [
        f"- {v}: {r.members_with_weight:.0f} members, {r.predict_us_per_row:.1f} us/row"
        for v, r in summary.iterrows()
    ]
    return lines


def main(argv=None) -> None:
    parser = harness_parser(__doc__, RESULTS, DATASETS, (0, 1), quick="pima, seed 0, 60 s")
    parser.add_argument("--budget", type=float, default=300.0)
    args = parser.parse_args(argv)
    path = Path(args.results)
    if args.quick:
        path, args.datasets, args.seeds, args.budget = (
            quick_results("predict_budget"),
            ["pima"],
            [0],
            60.0,
        )
    if not args.report:
        done = {(r["dataset"], r["seed"]) for r in load_results(path) if r["budget"] == args.budget}
        run_pending(path, args.datasets, args.seeds, done,
                    lambda d, s: run_one(d, s, args.budget, args.n_jobs),
                    lambda r: r["variant"])  # fmt: skip
    print("\n".join(report(path)))


if __name__ == "__main__":
    main()
