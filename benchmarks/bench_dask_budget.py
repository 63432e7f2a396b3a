"""A budgeted build on the local pool and on a dask LocalCluster of as many workers: the same
table, seed and ``time_limit``, so the two builds differ only in how their runs are sent.

    python -m benchmarks.bench_dask_budget [--rows 12000] [--time-limit 60] [--repeats 2]

For each backend: the runs built and not built, the seconds the build took, the workers' busy
share (the seconds the model runs report fitting over build seconds x workers: the rest is the
detectors' fits, which the default spec also builds, start-up, dispatch, waiting and idle time;
a run the build fits in the client while its workers start counts too), and, over the runs both
builds trained, the median ratio of a run's fit seconds on dask to the same run's on the local
pool (above 1: the runs themselves are slower on the dask workers). The backends alternate,
``--repeats`` times each; each dask fit gets a new cluster (started outside the fit), so its
workers import the model libraries anew, as the local pool's workers do inside the build.
Timings: run it alone on a quiet machine. Rows go to ``--results`` (JSON lines).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

from benchmarks._record import load_average, provenance
from benchmarks._scale_data import make_table

WORKERS = 2
BACKENDS = ("local", "dask", "dask frame")
"""The local pool, dask with the table in memory, and dask with a dask DataFrame."""
FRAME_PARTITIONS = 4


def build_row(model, store: Path, wall: float) -> tuple[dict, dict[str, float]]:
    """A fitted estimator's row and ``{run id: fit seconds}`` of its ok runs (from its store)."""
    from ensel.library import Library

    records = Library.open(store).store.records.values()
    fitting = sum(r["fit_seconds"] for r in records)
    build = model.budget_.build_seconds
    plan = model.budget_.plan
    statuses = dict(Counter(r["status"] for r in records))
    row = {
        "wall_s": round(wall, 1),
        "build_s": round(build, 1),
        "runs_built": model.budget_.runs_ok,
        "not_built": model.budget_.runs_not_finished,
        "statuses": statuses,
        "fitting_s": round(fitting, 1),
        "busy": round(fitting / (build * WORKERS), 3),
        "unused_s": round(model.budget_.unused_seconds or 0.0, 1),
        "plan": {k: plan[k] for k in ("runs", "estimated_seconds")} if plan else None,
    }
    ok = {r["run"]: r["fit_seconds"] for r in records if r["status"] == "ok"}
    return row, ok


def fit_once(X, y, backend: str, store: Path, time_limit: float, client=None):
    from ensel import EnsembleSelectionClassifier

    options = {"n_jobs": WORKERS} if backend == "local" else {"backend": "dask", "client": client}
    if backend == "dask frame":  # the table as the cluster holds it, the label a column
        import dask.dataframe as dd

        X, y = dd.from_pandas(X.assign(label=y), npartitions=FRAME_PARTITIONS), "label"
    model = EnsembleSelectionClassifier(
        time_limit=time_limit, store=str(store), random_state=0, verbose=0, **options
    )
    load = load_average()[0]
    start = time.perf_counter()
    model.fit(X, y)
    row, ok = build_row(model, store, time.perf_counter() - start)
    return {"backend": backend, "load_1min": round(load, 2), **row}, ok


def main() -> None:
    from distributed import Client

    from ensel.library.dask_executor import local_cluster

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=12_000)
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--results", default="benchmarks/results/dask_budget.jsonl")
    args = parser.parse_args()
    X, y = make_table(args.rows, random_state=0)
    where = provenance()
    print(where, flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(args.repeats):
            fitted = {}
            for backend in BACKENDS:
                store = Path(tmp) / f"{backend}-{repeat}"
                if backend == "local":
                    row, fitted[backend] = fit_once(X, y, backend, store, args.time_limit)
                else:  # a new cluster each fit: its workers import the model libraries anew,
                    # as the local pool's do (the cluster's start is not in the fit)
                    with local_cluster(WORKERS) as cluster, Client(cluster) as client:
                        client.wait_for_workers(WORKERS)
                        row, fitted[backend] = fit_once(
                            X, y, backend, store, args.time_limit, client
                        )
                row["cluster"] = None if backend == "local" else "a new cluster per dask fit"
                rows.append({"repeat": repeat, "rows": args.rows, **row, "commit": where["commit"]})
                print(json.dumps(rows[-1]), flush=True)
            for row, backend in zip(rows[-len(BACKENDS) :], BACKENDS, strict=True):
                common = sorted(set(fitted["local"]) & set(fitted[backend]))
                local = fitted["local"]
                ratios = [fitted[backend][r] / local[r] for r in common if local[r]]
                row["common_runs"] = len(common)
                median = round(float(np.median(ratios)), 3) if ratios else None
                row["median_fit_ratio_to_local"] = median
                print(
                    f"{backend}: {len(common)} runs also built locally, median fit-seconds "
                    f"ratio to the local pool's {median}",
                    flush=True,
                )
    with open(args.results, "a") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
