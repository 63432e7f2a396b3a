"""The kernel SVM's decision values at predict time: ensel's matrix-product evaluation
(``ensel.library.families.svm.decision``) against scikit-learn's ``decision_function``
(libsvm, one kernel value at a time), on the same fitted SVCs and rows; and the same for
support vector regression (``fit_svr``'s SVR, against its ``predict``).

    python -m benchmarks.bench_svm_decision [--quick]

Each case fits the svm family's own run (``fit_svm``, its default grid: C 1, RBF width 0.1;
and the degree-2 polynomial kernel) on a synthetic standardised table (``make_classification``,
50 features) of 2,000 or 6,000 rows with 2 or 6 classes (the svr family's run on a
``make_regression`` table of the same sizes, ``classes`` 0), then decides 5,000 new rows both ways:
the median of 5 warm calls, BLAS limited to one thread (libsvm uses one) and at two threads for
ensel's. Reports the time ratio (libsvm's over ensel's) and the largest absolute difference of
the values. A timing: run it alone on a quiet machine. The table goes to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.datasets import make_classification, make_regression
from sklearn.preprocessing import StandardScaler

from benchmarks._record import load_average
from benchmarks._report import warm_median_ms, write_timing_rows
from ensel.library.families import svm

SECTION = "## Kernel SVM decision values (bench_svm_decision)"
RESULTS = Path(__file__).resolve().parent / "results" / "bench_svm_decision.jsonl"
KERNELS = {"rbf": dict(svm.GRID), "poly2": {**svm.GRID, "kernel": "poly2"}}
PREDICT_ROWS = 5_000
REPEATS = 5


def table(n_rows: int, n_classes: int, seed: int = 0):
    """Standardised training rows, their labels and ``PREDICT_ROWS`` new rows of one concept."""
    X, y = make_classification(
        n_rows + PREDICT_ROWS,
        n_features=50,
        n_informative=20,
        n_classes=n_classes,
        n_clusters_per_class=2,
        flip_y=0.05,
        random_state=seed,
    )
    X = StandardScaler().fit_transform(X)
    return X[:n_rows], y[:n_rows], X[n_rows:]


def regression_table(n_rows: int, seed: int = 0):
    """``table``'s counterpart for SVR: a nonlinear target of the standardised rows."""
    X, y = make_regression(n_rows + PREDICT_ROWS, n_features=50, n_informative=20, noise=5.0,
                           random_state=seed)  # fmt: skip
    X = StandardScaler().fit_transform(X)
    y = y + 20.0 * np.sin(X[:, 0])
    return X[:n_rows], y[:n_rows], X[n_rows:]


def case(n_rows: int, n_classes: int, kernel: str) -> dict:
    """One SVC (``n_classes`` > 0) or SVR (``n_classes`` 0) decided both ways."""
    if n_classes:
        X, y, rows = table(n_rows, n_classes)
        run = svm.fit_svm(
            X, y, n_classes=n_classes, params=KERNELS[kernel], stages=None, random_state=0
        )
        libsvm_call = run.model.decision_function
    else:
        X, y, rows = regression_table(n_rows)
        params = {**KERNELS[kernel], "epsilon": 0.1}
        run = svm.fit_svr(X, y, n_classes=1, params=params, stages=None, random_state=0)
        libsvm_call = run.model.predict
    model = run.model
    libsvm, expected = warm_median_ms(lambda: libsvm_call(rows), REPEATS, 1)
    ours_1, got = warm_median_ms(lambda: svm.decision(model, rows), REPEATS, 1)
    ours_2, _ = warm_median_ms(lambda: svm.decision(model, rows), REPEATS, 2)
    diff = np.abs(got - expected).max()
    return {
        "train_rows": n_rows,
        "classes": n_classes,
        "kernel": kernel,
        "support_vectors": len(model.support_vectors_),
        "libsvm_ms": libsvm,
        "ensel_ms_1_thread": ours_1,
        "ensel_ms_2_threads": ours_2,
        "speedup_1_thread": libsvm / ours_1,
        "speedup_2_threads": libsvm / ours_2,
        "max_abs_diff": float(diff),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,000 rows, RBF only")
    args = parser.parse_args(argv)
    sizes, kernels = ((2_000,), ("rbf",)) if args.quick else ((2_000, 6_000), tuple(KERNELS))
    load = load_average()
    rows = [case(n, c, k) for n in sizes for c in (2, 6, 0) for k in kernels]
    frame = pd.DataFrame(rows)
    print(frame.to_string(index=False))
    if args.quick:
        return
    write_timing_rows(
        rows,
        RESULTS,
        SECTION,
        "python -m benchmarks.bench_svm_decision",
        load,
        f"Median of {REPEATS} warm calls on {PREDICT_ROWS:,} rows; speed-up = libsvm's time "
        "over ensel's; classes 0: support vector regression (SVR.predict).",
        ("scikit-learn", "numpy"),
    )


if __name__ == "__main__":
    main(sys.argv[1:])
