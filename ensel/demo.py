"""The demo (``ensel demo``, ``make demo``): on scikit-learn's breast cancer data, build a library
with the default spec (embedded 5-fold CV), then compare ensemble selection (ES), the best single
member (MODSEL) and Bayesian model averaging (BAYESAVG) on all eight metrics, as in Table 4.1,
with every one of the 569 rows held out once, and say how large each difference is against its
noise; then write report.html.

Every row is held out once without building the library more than once: under embedded
cross-validation each row's member predictions come from siblings that never saw it, so the
demo cuts the rows into outer folds and, for each fold, selects (ES, MODSEL, BAYESAVG) on the
other folds' predictions and scores on this one. The differences ES minus each other strategy
are paired by fold; their mean and standard error over the folds say whether noise could
decide them (a difference beyond two standard errors is marked).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import StratifiedKFold

from .estimator import EnsembleSelectionClassifier
from .library import build_library
from .metrics import METRICS, greater_is_better, score
from .report import write_report
from .strategies import STRATEGIES as COMBINE

SEED = 0
STRATEGIES = ("es", "modsel", "bayesavg")
OUTER_FOLDS = 5
OPTIONS = {"n_iter": 100, "n_bags": 20, "random_state": SEED}


def compare(lib, n_folds: int = OUTER_FOLDS) -> dict[str, dict[str, np.ndarray]]:
    """Held-out score of each strategy on each outer fold, selecting for each metric in turn
    (ES and MODSEL pick per metric; BAYESAVG weighs by likelihood whatever the metric):
    ``table[strategy][metric]`` is an array of ``n_folds`` scores."""
    P = np.asarray(lib.predictions, dtype=np.float64)
    y = lib.y
    folds = StratifiedKFold(n_folds, shuffle=True, random_state=SEED).split(np.zeros(y.size), y)
    table = {s: {m: np.empty(n_folds) for m in METRICS} for s in STRATEGIES}
    for k, (train, test) in enumerate(folds):
        for metric in METRICS:
            for strategy in STRATEGIES:
                weights = COMBINE[strategy](P[:, train], y[train], metric, OPTIONS)
                proba = np.tensordot(weights, P[:, test], axes=1)
                table[strategy][metric][k] = score(metric, y[test], proba)
    return table


def differences(table) -> dict[str, dict[str, tuple[float, float]]]:
    """``(mean, standard error)`` over folds of ES minus each other strategy, signed so that
    positive means ES is better (lower is better for rms and mxe)."""
    out = {}
    for other in STRATEGIES[1:]:
        out[other] = {}
        for m in METRICS:
            d = table["es"][m] - table[other][m]
            d = d if greater_is_better(m) else -d
            out[other][m] = (float(d.mean()), float(d.std(ddof=1) / np.sqrt(d.size)))
    return out


def format_table(table) -> str:
    """Mean held-out score over the outer folds; the best per metric in bold (ties as shown,
    to four decimals, all bold)."""
    mean = {s: {m: round(float(np.mean(table[s][m])), 4) for m in METRICS} for s in STRATEGIES}
    lines = ["| strategy | " + " | ".join(METRICS) + " |", "|---" * (len(METRICS) + 1) + "|"]
    best = {
        m: (max if greater_is_better(m) else min)(mean[s][m] for s in STRATEGIES) for m in METRICS
    }
    for s in STRATEGIES:
        cells = [
            f"**{mean[s][m]:.4f}**" if mean[s][m] == best[m] else f"{mean[s][m]:.4f}"
            for m in METRICS
        ]
        lines.append(f"| {s.upper()} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def format_differences(diffs) -> str:
    """ES minus each other strategy per metric: mean +- standard error over the folds, with
    ``*`` where the mean is beyond two standard errors."""
    lines = ["| ES minus | " + " | ".join(METRICS) + " |", "|---" * (len(METRICS) + 1) + "|"]
    for other, row in diffs.items():
        cells = []
        for m in METRICS:
            mean, se = row[m]
            mark = "*" if abs(mean) > 2 * se else ""
            cells.append(f"{mean:+.4f} ± {se:.4f}{mark}")
        lines.append(f"| {other.upper()} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="ensel demo", description=__doc__)
    parser.add_argument("--spec", default="default", help="library spec (default: default)")
    parser.add_argument("--report", type=Path, default=Path("report.html"))
    parser.add_argument("--n-jobs", type=int, default=min(os.cpu_count() or 1, 2))
    args = parser.parse_args(argv)

    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    y = y.map({0: "malignant", 1: "benign"})
    print(
        f"breast cancer: {len(X)} rows, each held out once ({OUTER_FOLDS} outer folds over the "
        "library's out-of-fold predictions)"
    )
    start = time.perf_counter()
    lib = build_library(X, y, spec=args.spec, cv=5, n_jobs=args.n_jobs, random_state=SEED)
    print(
        f"library '{args.spec}': {lib.n_members} members ({len(lib.failures)} failed) "
        f"in {time.perf_counter() - start:.0f} s"
    )
    start = time.perf_counter()
    table = compare(lib)
    print(
        f"selection for 8 metrics x 3 strategies x {OUTER_FOLDS} folds in "
        f"{time.perf_counter() - start:.0f} s"
    )
    print("\nHeld-out scores, mean over the folds (rms and mxe: lower is better; best in bold)\n")
    print(format_table(table))
    diffs = differences(table)
    print(
        "\nES minus each other strategy (positive: ES better), mean ± standard error over the "
        f"{OUTER_FOLDS} folds; * beyond two standard errors\n"
    )
    print(format_differences(diffs))
    for other, row in diffs.items():
        ahead = sum(mean > 2 * se for mean, se in row.values())
        behind = sum(mean < -2 * se for mean, se in row.values())
        print(
            f"ES vs {other.upper()}: ahead beyond noise on {ahead}, behind beyond noise on "
            f"{behind}, within noise on {len(METRICS) - ahead - behind} of {len(METRICS)} metrics"
        )
    model = EnsembleSelectionClassifier(library=lib, random_state=SEED).fit(X, y)
    if lib.detectors is not None:
        shifted = X + 2.0 * X.std()  # the same rows, 2 sd along every column
        near, far = model.risk(X)["combined"], model.risk(shifted)["combined"]
        refused = sum(p is None for p in model.predict(shifted, reject=0.5))
        print(
            f"\nextrapolation risk (combined, {lib.detectors.n_members} detectors): the data's "
            f"rows median {near.median():.2f}; the same rows moved 2 sd median "
            f"{far.median():.2f}, {refused} of {len(shifted)} refused at reject=0.5"
        )
    write_report(model, args.report, library=lib)
    print(f"report: {args.report.resolve()}")


if __name__ == "__main__":
    main()
