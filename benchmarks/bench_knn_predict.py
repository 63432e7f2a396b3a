"""The k-NN family's neighbour query at predict time: ensel's kernel
(``ensel.library.families._nearest.nearest``: distances a tile at a time, a bounded candidate
buffer, nested quickselects) against scikit-learn's ``kneighbors`` (brute force: a distance
matrix in chunks, then a partial sort; and ``algorithm="auto"``, a KD-tree on these widths),
on the same training rows and queries.

    python -m benchmarks.bench_knn_predict [--quick]

Each case draws a standardised synthetic table (``make_classification``) of 2,000 or 10,000
training rows (``KNN_ROWS``, the most a default k-NN run keeps) and 11, 40 or 150 columns, and
asks for the neighbours of 5,000 new rows at the nine values of k a default k-NN run predicts
with (1 to 257): ensel's query serves all nine at once; scikit-learn's gives the 257 nearest,
sorted, which serve them too. Median of 5 warm calls, one thread each (the ensemble predicts
its runs on threads of its own). The neighbour sets at k = 257 are compared (continuous data:
no ties). A timing: run it alone on a quiet machine. The table goes to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.datasets import make_classification
from sklearn.neighbors import NearestNeighbors
from sklearn.preprocessing import StandardScaler

from benchmarks._record import load_average
from benchmarks._report import warm_median_ms, write_timing_rows
from ensel.library.families._nearest import nearest

SECTION = "## k-NN neighbour queries (bench_knn_predict)"
RESULTS = Path(__file__).resolve().parent / "results" / "bench_knn_predict.jsonl"
STAGES = (1, 3, 5, 9, 17, 33, 65, 129, 257)
PREDICT_ROWS = 5_000
REPEATS = 5


def table(n_rows: int, n_columns: int, seed: int = 0):
    """Standardised training rows and ``PREDICT_ROWS`` new rows of one concept."""
    X, _ = make_classification(
        n_rows + PREDICT_ROWS,
        n_features=n_columns,
        n_informative=min(n_columns, 8),
        n_redundant=0,
        random_state=seed,
    )
    X = StandardScaler().fit_transform(X)
    return X[:n_rows], X[n_rows:]


def same_sets(a: np.ndarray, b: np.ndarray) -> float:
    """Share of query rows whose neighbour sets agree."""
    return float(np.mean(np.all(np.sort(a, axis=1) == np.sort(b, axis=1), axis=1)))


def case(n_rows: int, n_columns: int) -> dict:
    X, rows = table(n_rows, n_columns)
    k = max(STAGES)
    ours, (index, _) = warm_median_ms(lambda: nearest(rows, X, STAGES), REPEATS, 1)
    row = {"train_rows": n_rows, "columns": n_columns, "ensel_ms": ours}
    for algorithm in ("brute", "auto"):
        peer = NearestNeighbors(n_neighbors=k, algorithm=algorithm, n_jobs=1).fit(X)
        took, theirs = warm_median_ms(
            lambda peer=peer: peer.kneighbors(rows, return_distance=False), REPEATS, 1
        )
        row[f"sklearn_{algorithm}_ms"] = took
        row[f"speedup_vs_{algorithm}"] = took / ours
        row[f"same_sets_{algorithm}"] = same_sets(index, theirs)
    return row


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,000 rows, 11 columns")
    args = parser.parse_args(argv)
    sizes, widths = ((2_000,), (11,)) if args.quick else ((2_000, 10_000), (11, 40, 150))
    load = load_average()
    rows = [case(n, d) for n in sizes for d in widths]
    frame = pd.DataFrame(rows)
    print(frame.to_string(index=False))
    if args.quick:
        return
    write_timing_rows(
        rows,
        RESULTS,
        SECTION,
        "python -m benchmarks.bench_knn_predict",
        load,
        f"Median of {REPEATS} warm calls on {PREDICT_ROWS:,} rows, one thread; the neighbours "
        f"for k = {', '.join(map(str, STAGES))} (scikit-learn: the 257 nearest, sorted); "
        "speed-up = scikit-learn's time over ensel's; same sets: share of rows with the same "
        "257 neighbours.",
        ("scikit-learn", "numba"),
    )


if __name__ == "__main__":
    main(sys.argv[1:])
