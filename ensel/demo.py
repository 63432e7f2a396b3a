"""The demo (``ensel demo``, ``make demo``): on scikit-learn's breast cancer data, build a library
with the default spec (embedded 5-fold CV), then compare ensemble selection (ES), the best single
member (MODSEL) and Bayesian model averaging (BAYESAVG) on held-out rows on all eight metrics, as
in Table 4.1, and write report.html."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split

from .estimator import EnsembleSelectionClassifier
from .library import build_library
from .metrics import METRICS, greater_is_better, score
from .report import write_report

SEED = 0
STRATEGIES = ("es", "modsel", "bayesavg")


def compare(lib, X_train, y_train, X_test, y_test) -> dict[str, dict[str, float]]:
    """Test-set score of each strategy, selecting for each metric in turn (ES and MODSEL pick
    per metric; BAYESAVG weighs by likelihood whatever the metric)."""
    y_true = np.searchsorted(lib.classes, np.asarray(y_test))
    members_test = lib.predict(X_test)  # every member once; each model is a weighting of them
    table: dict[str, dict[str, float]] = {s: {} for s in STRATEGIES}
    for metric in METRICS:
        for strategy in STRATEGIES:
            model = EnsembleSelectionClassifier(
                library=lib, metric=metric, strategy=strategy, random_state=SEED
            ).fit(X_train, y_train)
            proba = model.combine(members_test)
            table[strategy][metric] = score(metric, y_true, proba)
    return table


def format_table(table: dict[str, dict[str, float]]) -> str:
    lines = ["| strategy | " + " | ".join(METRICS) + " |", "|---" * (len(METRICS) + 1) + "|"]
    best = {
        m: (max if greater_is_better(m) else min)(table[s][m] for s in STRATEGIES) for m in METRICS
    }
    for s in STRATEGIES:
        cells = [
            f"**{table[s][m]:.4f}**" if table[s][m] == best[m] else f"{table[s][m]:.4f}"
            for m in METRICS
        ]
        lines.append(f"| {s.upper()} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="ensel demo", description=__doc__)
    parser.add_argument("--spec", default="default", help="library spec (default: default)")
    parser.add_argument("--report", type=Path, default=Path("report.html"))
    parser.add_argument("--n-jobs", type=int, default=min(os.cpu_count() or 1, 2))
    args = parser.parse_args(argv)

    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    y = y.map({0: "malignant", 1: "benign"})
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.3, stratify=y, random_state=SEED
    )
    print(f"breast cancer: {len(X_train)} training rows, {len(X_test)} held-out rows")
    start = time.perf_counter()
    lib = build_library(
        X_train, y_train, spec=args.spec, cv=5, n_jobs=args.n_jobs, random_state=SEED
    )
    print(
        f"library '{args.spec}': {lib.n_members} members ({len(lib.failures)} failed) "
        f"in {time.perf_counter() - start:.0f} s"
    )
    start = time.perf_counter()
    table = compare(lib, X_train, y_train, X_test, y_test)
    print(f"selection for 8 metrics x 3 strategies in {time.perf_counter() - start:.0f} s")
    print("\nHeld-out scores (rms and mxe: lower is better; best in bold)\n")
    print(format_table(table))
    wins = sum(
        table["es"][m] == (max if greater_is_better(m) else min)(table[s][m] for s in STRATEGIES)
        for m in METRICS
    )
    print(f"\nES is best (or tied) on {wins} of {len(METRICS)} metrics.")
    model = EnsembleSelectionClassifier(library=lib, random_state=SEED).fit(X_train, y_train)
    if lib.detectors is not None:
        shifted = X_test + 2.0 * X_train.std()  # the same rows, 2 sd along every column
        near, far = model.risk(X_test)["combined"], model.risk(shifted)["combined"]
        refused = sum(p is None for p in model.predict(shifted, reject=0.5))
        print(
            f"\nextrapolation risk (combined, {lib.detectors.n_members} detectors): held-out "
            f"rows median {near.median():.2f}; the same rows moved 2 sd median "
            f"{far.median():.2f}, {refused} of {len(shifted)} refused at reject=0.5"
        )
    write_report(model, args.report, library=lib)
    print(f"report: {args.report.resolve()}")


if __name__ == "__main__":
    main()
