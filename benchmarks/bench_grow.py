"""Growth judged on rows the final selection does not see, as a use of spare time (issue 31,
candidate 5): does ``grow`` help once its choices cannot fit the final selection's noise?

    python -m benchmarks.bench_grow [--quick] [--seeds 0 1] [--datasets ...] [--grow-seconds 60]
    python -m benchmarks.bench_grow --report

``grow`` (``ensel.library.grow``) accepts a proposed run when it raises the cross-selected
score on the hillclimb rows, and the final selection then weights the library on those same
rows: at 60 s it tested no better than no growth (docs/benchmarks.md, "AutoML comparison").
Here, per dataset and seed (``benchmarks.datasets.train_test``, the AutoML protocol's split):

1. the default spec's model runs (no detectors, no spare tier) built with ``cv=5`` and the seed
   the estimator uses, so every training row is a hillclimb row;
2. the hillclimb rows split, stratified by class, into a judging third J and the rest S;
3. four selections (the estimator's options, no predict budget), scored on the test rows:
   - ``no growth`` (the baseline): selection on all hillclimb rows;
   - ``no growth, selection on S``: what leaving J out costs selection alone;
   - ``grow``: growth for ``--grow-seconds`` judged on all rows (ensel's ``grow`` today),
     selection on all rows;
   - ``grow judged on J``: growth for as long, judged on J only (``GrowSpec.rows``), and
     selection on S, which J's noise never reaches.

Each growth runs in its own copy of the built store. Rows record test AUC and log loss, the
members with weight, the grown runs and the weight they got, the seconds, the commit, versions
and load. Report: each variant against the baseline, datasets as the unit
(``benchmarks._stats``).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks._peers import classification_scores
from benchmarks._record import harness_parser, load_results, provenance, quick_results, run_pending
from benchmarks._report import variants_against
from benchmarks.bench_automl import FIRST_DATASETS
from benchmarks.bench_repeats import model_spec

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "grow_judged.jsonl"
BASELINE = "no growth"
JUDGE_SHARE = 1 / 3


def judging_rows(y: np.ndarray, share: float, seed: int) -> np.ndarray:
    """A stratified ``share`` of the positions ``0..len(y)-1``, sorted: the rows growth judges
    on (at least one row of each class stays on either side)."""
    rng = np.random.default_rng(seed)
    chosen = []
    for c in np.unique(y):
        rows = rng.permutation(np.flatnonzero(y == c))
        k = min(max(1, round(share * rows.size)), rows.size - 1)
        chosen.append(rows[:k])
    return np.sort(np.concatenate(chosen))


def run_one(dataset: str, seed: int, spec, n_jobs: int, grow_seconds: float) -> list[dict]:
    """One row per variant on one dataset and seed."""
    from benchmarks.datasets import train_test
    from ensel import EnsembleSelectionClassifier
    from ensel._jobs import as_seed
    from ensel.library import build_library
    from ensel.library.grow import GrowSpec
    from ensel.strategies import ensemble_selection

    X_tr, X_te, y_tr, y_te, _ = train_test(dataset, seed)
    base = as_seed(seed)
    common = {"dataset": dataset, "seed": seed, "n_train": len(X_tr)}
    rows = []

    with tempfile.TemporaryDirectory(prefix="ensel-grow-") as tmp:
        start = time.perf_counter()
        built = Path(tmp) / "built"
        one = build_library(X_tr, y_tr, spec=spec, cv=5, store=built, n_jobs=n_jobs,
                            random_state=base)  # fmt: skip
        build_seconds = time.perf_counter() - start
        clf = EnsembleSelectionClassifier(
            library=one, random_state=seed, n_jobs=n_jobs, max_predict_ms=None
        ).fit(X_tr, y_tr)
        classes, metric = clf.classes_, clf.metric
        options = {k: v for k, v in clf.selection_options_.items() if k != "cost"}
        if not np.allclose(
            ensemble_selection(one.predictions, one.y, metric, options),
            clf.leaderboard_["weight"].to_numpy(),
        ):
            raise AssertionError("selection outside the estimator differs from the estimator's")
        everything = np.arange(one.y.size)
        judge = judging_rows(one.y, JUDGE_SHARE, seed)
        rest = np.setdiff1d(everything, judge)

        def row(variant, lib, test, on, **extra):
            """Select on the hillclimb rows ``on``; score on ``test``, the members' test
            predictions."""
            w = ensemble_selection(np.asarray(lib.predictions)[:, on], one.y[on], metric, options)
            proba = np.tensordot(w, test, axes=1)
            grown = ~lib.members["run"].isin(one.runs).to_numpy()
            rows.append(
                {
                    **common,
                    "variant": variant,
                    **classification_scores(y_te, classes, proba),
                    "members_with_weight": int((w > 0).sum()),
                    "grown_runs": len(set(lib.runs) - set(one.runs)),
                    "grown_weight": float(w[grown].sum()),
                    "selection_rows": int(on.size),
                    "build_seconds": build_seconds,
                    **extra,
                    **provenance(),
                }
            )  # fmt: skip

        test_one = one.predict(X_te)
        row(BASELINE, one, test_one, everything)
        row("no growth, selection on S", one, test_one, rest)
        for variant, judged_on, selected_on in (
            ("grow", None, everything),
            ("grow judged on J", tuple(int(r) for r in judge), rest),
        ):
            store = Path(tmp) / variant.replace(" ", "_")
            shutil.copytree(built, store)
            grow = GrowSpec(trials=None, time=grow_seconds, metric=metric, batch=max(1, n_jobs),
                            seed=seed, rows=judged_on)  # fmt: skip
            start = time.perf_counter()
            lib = build_library(X_tr, y_tr, spec=spec, cv=5, store=store, n_jobs=n_jobs,
                                random_state=base, grow=grow)  # fmt: skip
            seconds = time.perf_counter() - start
            row(variant, lib, lib.predict(X_te), selected_on, grow_seconds=seconds)
    return rows


def report(path: Path) -> list[str]:
    """Every variant against the baseline (no growth, selection on all hillclimb rows), per
    dataset and over datasets (positive differences: the variant is better)."""
    return variants_against(pd.DataFrame(load_results(path)), BASELINE)


def main(argv=None) -> None:
    parser = harness_parser(__doc__, RESULTS, FIRST_DATASETS, (0, 1), quick="pima, seed 0, 10 s")
    parser.add_argument("--grow-seconds", type=float, default=60.0)
    args = parser.parse_args(argv)
    path = Path(args.results)
    if args.quick:
        path, args.datasets, args.seeds = quick_results("grow"), ["pima"], [0]
        args.grow_seconds = 10.0
    if not args.report:
        done = {(r["dataset"], r["seed"]) for r in load_results(path)}
        spec = model_spec()
        run_pending(path, args.datasets, args.seeds, done,
                    lambda d, s: run_one(d, s, spec, args.n_jobs, args.grow_seconds),
                    lambda r: r["variant"])  # fmt: skip
    print("\n".join(report(path)))


if __name__ == "__main__":
    main()
