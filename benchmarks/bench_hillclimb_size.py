"""How large a hillclimb set selection needs: with a library's members fixed (trained once on
the same rows), run ensemble selection on held-out hillclimb sets of growing size and score the
chosen ensemble on one fixed test set. Where the test scores stop gaining is how many rows
``cv="auto"`` holds out on a large table (``ensel.library.training.auto_hillclimb_rows``).

    python -m benchmarks.bench_hillclimb_size [--quick] [--rows 80000] [--seeds 0 1]

Each table is split into member-training rows, a hillclimb pool and a test set; the library
is built once with the pool held out (``cv=None``), every hillclimb size draws ``--repeats``
stratified subsets of the pool, and selection (the estimator's defaults: 100 steps, 20 bags of
half the members, sorted init, metric mxe and roc) is scored on the test set. An accuracy
measurement, not a timing: it may run under ``nice``. Synthetic tables from
``benchmarks/_scale_data.py``; the table goes to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import sys
import warnings

import numpy as np
import pandas as pd
from sklearn.metrics import log_loss, roc_auc_score
from sklearn.model_selection import StratifiedShuffleSplit

from benchmarks._report import machine_line, markdown_table, write_section
from benchmarks._scale_data import make_table
from ensel.library import build_library
from ensel.selection import EnsembleSelection

SECTION = "## Hillclimb set size (selection on large tables)"
SPEC = {
    "name": "hillclimb-size",
    "families": [
        {"family": "lightgbm", "params": {"num_leaves": [7, 31], "learning_rate": 0.1},
         "stages": [16, 64, 256], "calibration": ["none", "platt"]},
        {"family": "logreg", "params": {"ridge": [None, 1.0]}, "calibration": ["none", "platt"]},
        {"family": "naive_bayes", "params": {"kind": "normal"},
         "calibration": ["none", "isotonic"]},
        {"family": "tree", "params": {"max_depth": [4, None], "smoothing": "laplace"},
         "calibration": ["none", "isotonic"]},
        {"family": "xgboost", "params": {"max_depth": 6, "learning_rate": 0.1},
         "stages": [32, 128], "calibration": ["none"]},
        {"family": "random_forest", "params": {"max_features": 4}, "stages": [16, 64],
         "calibration": ["none", "platt"]},
    ],
}  # fmt: skip
QUICK_SPEC = {
    "name": "hillclimb-size-quick",
    "families": SPEC["families"][:4],
}


def fixed_library(n_rows: int, seed: int, spec: dict, n_jobs: int):
    """``(P_pool, y_pool, P_test, y_test)``: the members' predictions on the hillclimb pool
    (a quarter of the rows) and on the test set (another quarter), members trained on half."""
    X, y = make_table(n_rows, random_state=seed)
    split = StratifiedShuffleSplit(1, test_size=0.25, random_state=seed)
    fit_rows, test_rows = next(split.split(np.zeros(len(y)), y))
    X_fit, y_fit = X.iloc[fit_rows].reset_index(drop=True), y.iloc[fit_rows].to_numpy()
    lib = build_library(
        X_fit,
        y_fit,
        spec=spec,
        cv=None,
        hillclimb_fraction=1 / 3,
        n_jobs=n_jobs,
        random_state=seed,
        verbose=0,
    )
    P_pool = np.asarray(lib.predictions, dtype=np.float64)
    P_test = np.asarray(lib.predict(X.iloc[test_rows].reset_index(drop=True)), dtype=np.float64)
    return P_pool, lib.y, P_test, y.iloc[test_rows].to_numpy()


def measure(P_pool, y_pool, P_test, y_test, sizes, repeats: int, seed: int) -> list[dict]:
    """One row per (hillclimb size, repeat, metric): the test AUC and log loss of the ensemble
    selected on that many pool rows, and of the single member best on them."""
    rows = []
    for size in sizes:
        for r in range(repeats):
            if size < y_pool.size:
                pick = StratifiedShuffleSplit(1, train_size=size, random_state=1000 * seed + r)
                sub, _ = next(pick.split(np.zeros(y_pool.size), y_pool))
            else:
                sub = np.arange(y_pool.size)
            for metric in ("mxe", "roc"):
                es = EnsembleSelection(metric, random_state=r).fit(P_pool[:, sub], y_pool[sub])
                p = np.clip(es.predict_proba(P_test), 1e-7, 1 - 1e-7)
                rows.append(
                    {
                        "seed": seed,
                        "size": int(sub.size),
                        "repeat": r,
                        "metric": metric,
                        "auc": roc_auc_score(y_test, p),
                        "logloss": log_loss(y_test, p),
                    }
                )
            best = int(
                np.argmin(
                    [log_loss(y_pool[sub], np.clip(q, 1e-7, 1 - 1e-7)) for q in P_pool[:, sub]]
                )
            )
            p = np.clip(P_test[best], 1e-7, 1 - 1e-7)
            rows.append(
                {
                    "seed": seed,
                    "size": int(sub.size),
                    "repeat": r,
                    "metric": "best member",
                    "auc": roc_auc_score(y_test, p),
                    "logloss": log_loss(y_test, p),
                }
            )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a 6,000-row table, few members")
    parser.add_argument("--rows", type=int, default=40_000, help="rows of each synthetic table")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", message=".*never seen in training")
    rows, spec = (6_000, QUICK_SPEC) if args.quick else (args.rows, SPEC)
    sizes = (250, 500, 1000) if args.quick else (500, 1000, 2000, 5000, 10_000)
    results = []
    for seed in args.seeds[:1] if args.quick else args.seeds:
        pool = fixed_library(rows, seed, spec, args.n_jobs)
        results += measure(*pool, [s for s in sizes if s <= pool[1].size], args.repeats, seed)
    frame = pd.DataFrame(results)
    table = frame.groupby(["metric", "size"])[["auc", "logloss"]].agg(["mean", "std"]).round(4)
    print(table.to_string())
    if args.quick or args.no_write:
        return
    command = "python -m benchmarks.bench_hillclimb_size " + " ".join(sys.argv[1:])
    write_section(
        SECTION,
        [
            "",
            machine_line(command),
            "",
            f"Synthetic tables of {rows:,} rows (`benchmarks/_scale_data.py`; seeds "
            f"{', '.join(map(str, args.seeds))}): members trained once on half the rows; "
            f"{args.repeats} stratified draws per size of hillclimb sets from a pool of a "
            "quarter; test AUC and log loss on the last quarter (mean and std over seeds x "
            "draws); selection with the estimator's defaults for mxe and for roc. `best member`: "
            "the single member with the best hillclimb "
            "log loss.",
            "",
            markdown_table(table),
            "",
        ],
    )


if __name__ == "__main__":
    main()
