"""Repeated cross-validation as a use of spare time (issue 31): does averaging each member over
two or three fold assignments make the selected ensemble better on test rows?

    python -m benchmarks.bench_repeats [--quick] [--seeds 0] [--datasets ...] [--repeats 3]
    python -m benchmarks.bench_repeats --report

Per dataset and seed (``benchmarks.datasets.train_test``, the AutoML protocol's split): the
default spec's model runs (no detectors, no spare tier) are built ``--repeats`` times with
``cv=5`` on the training rows, each build with its own ``random_state`` and so its own folds
(the first with the seed the estimator itself uses); then ``EnsembleSelectionClassifier``
with its defaults selects from the first build alone, and from
``ensel.library.repeated.RepeatedLibrary`` over the first 2, 3, ... builds (each member's
out-of-fold predictions averaged over the builds, its test prediction over every build's
siblings). Rows record test AUC and log loss, the members with weight, each build's seconds, the
commit, versions and load. The question is accuracy, not time: build seconds are recorded to
say what a repeat costs, and are only comparable where the load was the same. Report: each
repeat count against one build, datasets as the unit (``benchmarks._stats``).
"""

from __future__ import annotations

import dataclasses
import itertools
import tempfile
import time
from pathlib import Path

import pandas as pd

from benchmarks._peers import classification_scores
from benchmarks._record import harness_parser, load_results, provenance, quick_results, run_pending
from benchmarks._report import variants_against
from benchmarks.bench_automl import FIRST_DATASETS

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "repeats.jsonl"
DATASETS = FIRST_DATASETS  # the AutoML protocol's first eight
PREDICT_BUDGETS = ("auto", None)
"""The estimator's default predict budget, and none (a repeat doubles each member's predict
cost, so "auto" may trade it for a cheaper ensemble: None shows the repeats' effect alone)."""
TUNE = (False, True)
"""``tune_selection`` off (the default) and on: the nested out-of-fold choice of selection
options (pruning, bagging, initialisation) is another way to spend spare time."""
OTHER_SEED = 7919
"""Added to the seed once per further build: its folds and its models' seeds."""


def model_spec(name: str = "default"):
    """The spec's model runs only (its ``families``): repeats are about the models."""
    from ensel.library import load_spec

    spec = load_spec(name)
    return dataclasses.replace(spec, sections=(("families", spec.runs),))


def run_one(dataset: str, seed: int, repeats: int, spec, n_jobs: int) -> list[dict]:
    """One row per repeat count 1..``repeats`` on one dataset and seed."""
    from benchmarks.datasets import train_test
    from ensel import EnsembleSelectionClassifier
    from ensel._jobs import as_seed
    from ensel.library import build_library
    from ensel.library.repeated import RepeatedLibrary

    X_tr, X_te, y_tr, y_te, _ = train_test(dataset, seed)
    base = as_seed(seed)  # the seed the estimator's own build would use
    rows = []
    with tempfile.TemporaryDirectory(prefix="ensel-repeats-") as tmp:
        libs, seconds = [], []
        for r in range(repeats):
            start = time.perf_counter()
            libs.append(
                build_library(
                    X_tr, y_tr, spec=spec, cv=5, store=Path(tmp) / f"b{r}", n_jobs=n_jobs,
                    random_state=base + r * OTHER_SEED,
                )
            )  # fmt: skip
            seconds.append(time.perf_counter() - start)
        for r, budget, tune in itertools.product(range(1, repeats + 1), PREDICT_BUDGETS, TUNE):
            lib = libs[0] if r == 1 else RepeatedLibrary(libs[:r])
            clf = EnsembleSelectionClassifier(
                library=lib,
                random_state=seed,
                n_jobs=n_jobs,
                max_predict_ms=budget,
                tune_selection=tune,
            )
            start = time.perf_counter()
            clf.fit(X_tr, y_tr)
            select_seconds = time.perf_counter() - start
            proba = clf.predict_proba(X_te)
            rows.append(
                {
                    "dataset": dataset,
                    "seed": seed,
                    "repeats": r,
                    "max_predict_ms": budget,
                    "tune_selection": tune,
                    "selection_seconds": select_seconds,
                    "selection_chosen": {
                        k: v
                        for k, v in clf.selection_options_.items()
                        if k in ("prune_fraction", "n_bags", "sorted_init")
                    },
                    **classification_scores(y_te, clf.classes_, proba),
                    "members_with_weight": int((clf.weights_ > 0).sum()),
                    "predict_cost_ms": float(clf.predict_cost_ms_),
                    "build_seconds": seconds[:r],
                    "n_train": len(X_tr),
                    **provenance(),
                }
            )
    return rows


def _variant(row) -> str:
    budget = row.get("max_predict_ms", "auto")
    budget = None if budget is None or budget != budget else budget  # NaN: None read back
    tune = " + tune_selection" if row.get("tune_selection") else ""
    return f"{row['repeats']} build(s), max_predict_ms={budget}{tune}"


def report(path: Path) -> list[str]:
    """Every variant against one build with the estimator's defaults, per dataset and over
    datasets (positive differences: the variant is better)."""
    every = pd.DataFrame(load_results(path))
    every["variant"] = [_variant(r) for r in every.to_dict("records")]
    base = _variant({"repeats": 1, "max_predict_ms": "auto", "tune_selection": False})
    return variants_against(every, base, called="the default")


def main(argv=None) -> None:
    parser = harness_parser(__doc__, RESULTS, DATASETS, (0,), quick="pima, seed 0, 2 builds")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    path = Path(args.results)
    if args.quick:
        path, args.datasets, args.seeds = quick_results("repeats"), ["pima"], [0]
        args.repeats = 2
    if not args.report:
        done = {
            (r["dataset"], r["seed"]) for r in load_results(path) if r["repeats"] == args.repeats
        }
        spec = model_spec()
        run_pending(path, args.datasets, args.seeds, done,
                    lambda d, s: run_one(d, s, args.repeats, spec, args.n_jobs),
                    lambda r: r["repeats"])  # fmt: skip
    print("\n".join(report(path)))


if __name__ == "__main__":
    main()
