"""Distributed builds: the default spec with cv=5 on a 5,000-row real dataset
(Ecdat::DoctorAUS) built with the local process pool (n_jobs=2) and on a dask LocalCluster of 1
and of 2 worker processes on this machine; the per-task cost of dask against the local pool;
and a projection, from the measured per-family fit times, of the caruana2006 build on 1, 8 and
64 workers.

    python -m benchmarks.bench_dask [--quick]

--quick: the tiny spec on 1,000 rows. Wall times compare runs on one machine, so run it on a
quiet one. The table is printed and written to its block of docs/results.md, where the page has one.
"""

from __future__ import annotations

import argparse
import heapq
import operator
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from distributed import Client
from sklearn.model_selection import train_test_split

from benchmarks._report import machine_line, write_section
from benchmarks.datasets import doctor_aus
from ensel.library import build_library, load_spec
from ensel.library.execution.dask_executor import DaskExecutor, local_cluster
from ensel.library.execution.executor import ProcessExecutor

SECTION = "## Distributed builds (dask)"
TARGET_SPEEDUP = 1.7
TARGET_OVERHEAD = 0.05
NOOP_TASKS = 200
PROJECTED_WORKERS = (1, 8, 64)
STAGED_UNITS = {"adaboost", "random_forest", "bagged_trees", "mlp", "xgboost", "lightgbm"}
"""Families whose fit time grows with the largest stage (steps, trees, epochs); a k-NN run
answers every k from one query, so its stages cost nothing extra."""


def timed_build(X, y, spec: str, store: Path, workers: int, **backend) -> tuple[object, dict]:
    """The library and a row: wall seconds, the seconds the workers spent fitting (summed over
    model runs and detectors), their busy share of ``wall x workers``, and the load average at
    the end. Fitting seconds grow when other processes take the CPU; the busy share does not,
    so it tells the backend's idle time apart from a busy machine."""
    start = time.perf_counter()
    lib = build_library(X, y, spec=spec, cv=5, store=store, verbose=0, **backend)
    wall = time.perf_counter() - start
    stores = [lib.store] + ([lib.detectors.store] if lib.detectors is not None else [])
    fitting = sum(r["fit_seconds"] for st in stores for r in st.records.values())
    row = {
        "workers": workers,
        "wall": wall,
        "fitting": fitting,
        "busy": fitting / (wall * workers),
        "load": os.getloadavg()[0],
    }
    print(f"built {spec} with {backend.get('backend', 'joblib')}: {row}", flush=True)
    return lib, row


def per_task_seconds(executor, n_workers: int, shared) -> float:
    """Seconds a worker spends per no-op task: the time between the first and the last of
    ``NOOP_TASKS`` outcomes, times the workers, per task. What dispatching a run and streaming
    its outcome back costs, with nothing to fit and worker start-up left out."""
    # a builtin two-argument no-op: pickled by name, so the local pool's workers find it
    arrivals = [time.perf_counter() for _ in executor.run(operator.is_, [0] * NOOP_TASKS, shared)]
    return (arrivals[-1] - arrivals[0]) * n_workers / (NOOP_TASKS - 1)


ROW_EXPONENT = {"svm": 2.0, "knn": 2.0}
"""Fit time against rows: about quadratic for kernel SVMs and for k-NN (every training row
queried against every other), about linear (n log n) for the rest."""
ROW_FACTOR = 10
"""The projection is also made for data this many times as large."""


def _units(family: str, stages) -> float:
    return float(max(stages)) if family in STAGED_UNITS and stages else 1.0


def per_unit(store) -> pd.DataFrame:
    """Measured seconds and stored bytes (fitted siblings and predictions) per unit of work (one
    run, or one step/tree/epoch of its largest stage) of each family, over its ok runs."""
    frame = pd.DataFrame(r for r in store.records.values() if r["status"] == "ok")
    frame["units"] = [_units(f, s) for f, s in zip(frame["family"], frame["stages"], strict=True)]
    frame["bytes"] = [
        sum((store.path / "runs" / f"{run}{ext}").stat().st_size for ext in (".pkl", ".npy"))
        for run in frame["run"]
    ]
    sums = frame.groupby("family")[["fit_seconds", "bytes", "units"]].sum()
    return pd.DataFrame(
        {"seconds": sums["fit_seconds"] / sums["units"], "bytes": sums["bytes"] / sums["units"]}
    )


def project(spec: str, unit: pd.DataFrame, overhead: float, rows: float = 1.0) -> dict:
    """Makespan of ``spec`` on 1, 8 and 64 workers: each run's time from its family's measured
    time per unit, runs given longest first to the least loaded worker (LPT), plus the measured
    per-task dask cost; and the store's size and largest run result, likewise. ``rows``: data
    ``rows`` times as large, fit times scaled by ``rows ** ROW_EXPONENT`` (a rough rule), sizes
    by ``rows``."""
    runs = load_spec(spec).runs
    known = [r for r in runs if r.family in unit.index]
    units = [_units(r.family, r.stages) for r in known]
    seconds = sorted(
        (
            unit.seconds[r.family] * u * rows ** ROW_EXPONENT.get(r.family, 1.0) + overhead
            for r, u in zip(known, units, strict=True)
        ),
        reverse=True,
    )
    sizes = [unit.bytes[r.family] * u * rows for r, u in zip(known, units, strict=True)]
    makespans = {}
    for workers in PROJECTED_WORKERS:
        loads = [0.0] * workers
        for s in seconds:
            heapq.heapreplace(loads, loads[0] + s)
        makespans[workers] = max(loads)
    return {
        "runs": len(runs),
        "members": sum(len(r.members) for r in runs),
        "unmeasured": sorted({r.family for r in runs} - set(unit.index)),
        "store_gb": sum(sizes) / 1e9,
        "largest_mb": max(sizes, default=0) / 1e6,
        "cpu_hours": sum(seconds) / 3600,
        "longest": seconds[0] if seconds else 0.0,
        "makespans": makespans,
    }


def measure(X, y, spec: str, tmp: Path) -> dict:
    """Builds with the local pool and on dask clusters of 2 and 1 workers, and per-task costs."""
    rows, libs = [], {}
    local, row = timed_build(X, y, spec, tmp / "local", 2, n_jobs=2)
    rows.append({"backend": "joblib, 2 processes", **row, "start": None})
    local_cost = per_task_seconds(ProcessExecutor(2), 2, (X, y))
    print(f"local pool: {1000 * local_cost:.1f} ms per no-op task", flush=True)
    dask_cost = None
    for n_workers in (2, 1):
        start = time.perf_counter()
        with local_cluster(n_workers) as cluster, Client(cluster) as client:
            client.wait_for_workers(n_workers)
            started = time.perf_counter() - start
            print(f"dask cluster of {n_workers} started in {started:.1f} s", flush=True)
            lib, row = timed_build(
                X, y, spec, tmp / f"dask{n_workers}", n_workers, backend="dask", client=client
            )
            if n_workers == 2:
                dask_cost = per_task_seconds(DaskExecutor(client), 2, (X, y))
        name = f"dask, {n_workers} worker" + ("s" if n_workers > 1 else "")
        rows.append({"backend": name, **row, "start": started})
        libs[n_workers] = lib
    P = np.asarray(local.predictions)
    difference = max(float(np.abs(np.asarray(b.predictions) - P).max()) for b in libs.values())
    return {
        "rows": rows,
        "members": local.n_members,
        "runs": len(local.store.records),
        "median_fit": float(np.median([r["fit_seconds"] for r in local.store.records.values()])),
        "per_unit": per_unit(local.store),
        "difference": difference,
        "local_cost": local_cost,
        "dask_cost": dask_cost,
    }


def _met(ok: bool) -> str:
    return "met" if ok else "**not met**"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    spec = "tiny" if args.quick else "default"
    X, y = doctor_aus()
    if args.quick:
        X, _, y, _ = train_test_split(X, y, train_size=1000, stratify=y, random_state=0)
    with tempfile.TemporaryDirectory() as tmp:
        m = measure(X, y, spec, Path(tmp))
    by = {r["backend"]: r for r in m["rows"]}
    rows = by["joblib, 2 processes"], by["dask, 1 worker"], by["dask, 2 workers"]
    local, one, two = (r["wall"] for r in rows)
    speedup, overhead = one / two, (two - local) / local
    n = m["members"]
    projection = project("caruana2006", m["per_unit"], m["dask_cost"])
    larger = project("caruana2006", m["per_unit"], m["dask_cost"], rows=ROW_FACTOR)
    print(m["per_unit"].to_string())
    table = pd.DataFrame(m["rows"]).assign(members_per_minute=lambda t: 60 * n / t["wall"])
    print(table.to_string(index=False))
    print(f"speedup {speedup:.2f}, overhead {overhead:+.1%}, largest difference {m['difference']}")
    print(projection)

    command = "python -m benchmarks.bench_dask" + (" --quick" if args.quick else "")
    hours = projection["makespans"]
    unmeasured = projection["unmeasured"]
    lines = [
        "",
        machine_line(command),
        "",
        f"Spec `{spec}` ({n} members, {m['runs']} runs), cv=5, Ecdat::DoctorAUS "
        f"({X.shape[0]} rows, {X.shape[1]} columns). Dask: a LocalCluster of worker processes "
        "with one thread each (`ensel.library.execution.dask_executor.local_cluster`), "
        "started before "
        "the build (its start is listed apart); the local pool starts its processes inside the "
        "build. The same seed gave the same library on every backend (largest difference in "
        f"the prediction matrix: {m['difference']:.1e}).",
        "",
        "| backend | wall (s) | members per minute | fitting (worker s) | busy share "
        "| load average | cluster start (s) |",
        "|---|---|---|---|---|---|---|",
        *[
            f"| {r['backend']} | {r['wall']:.1f} | {60 * n / r['wall']:.0f} | "
            f"{r['fitting']:.0f} | {r['busy']:.0%} | {r['load']:.1f} | "
            + ("-" if r["start"] is None else f"{r['start']:.1f}")
            + " |"
            for r in m["rows"]
        ],
        "",
        "Fitting: seconds the workers spent in fits, summed over model runs and detectors (they "
        "grow when other processes take the CPU); busy share: fitting / (wall x workers), the "
        "rest is worker start-up, dispatch and idle time; load average: 1-minute, at the end of "
        "the build.",
        "",
        f"- 2 dask workers against 1: {speedup:.2f}x faster (target >= {TARGET_SPEEDUP}x: "
        f"{_met(speedup >= TARGET_SPEEDUP)}).",
        f"- Dask against the local pool at equal parallelism (2 processes): {overhead:+.1%} of "
        f"the local wall time, {1000 * (two - local) / n:+.0f} ms per member (target "
        f"< {TARGET_OVERHEAD:.0%}: {_met(overhead < TARGET_OVERHEAD)}); busy share: dask "
        f"{rows[2]['busy']:.0%}, local pool {rows[0]['busy']:.0%}.",
        f"- Per-task cost with nothing to fit ({NOOP_TASKS} no-op tasks, worker seconds per "
        f"task): dask {1000 * m['dask_cost']:.1f} ms, local pool {1000 * m['local_cost']:.1f} "
        f"ms; the median run of this spec fits for {m['median_fit']:.2f} s.",
        "",
        f"Projection of `caruana2006` ({projection['runs']} runs, {projection['members']} "
        "members) with cv=5 on data like this: each run takes its family's measured seconds "
        "per run (or per boosting step, tree or epoch of its largest stage) plus the dask cost "
        "per task; runs go longest first to the least loaded worker. "
        f"{projection['cpu_hours']:.1f} CPU hours; longest run "
        f"{projection['longest'] / 60:.1f} min; store about {projection['store_gb']:.1f} GB "
        f"(fitted siblings and predictions, scaled the same way), largest run result about "
        f"{projection['largest_mb']:.0f} MB."
        + (f" Families not measured (left out): {', '.join(unmeasured)}." if unmeasured else ""),
        "",
        f"For {ROW_FACTOR}x the rows ({ROW_FACTOR * X.shape[0]:,}), scaling fit times by "
        f"rows^2 for SVMs and k-NN and rows for the rest (a rough rule, not a measurement): "
        f"{larger['cpu_hours']:.0f} CPU hours, longest run {larger['longest'] / 3600:.1f} h, "
        f"store about {larger['store_gb']:.0f} GB, largest run result about "
        f"{larger['largest_mb'] / 1000:.1f} GB.",
        "",
        f"| workers | projected wall (h), {X.shape[0]:,} rows | {ROW_FACTOR * X.shape[0]:,} rows |",
        "|---|---|---|",
        *[
            f"| {w} | {hours[w] / 3600:.2f} | {larger['makespans'][w] / 3600:.1f} |"
            for w in PROJECTED_WORKERS
        ],
        "",
        "Seconds and stored bytes per unit of work (a run, or a step, tree or epoch of its "
        "largest stage) measured here, per family:",
        "",
        "| family | seconds | MB |",
        "|---|---|---|",
        *[
            f"| {f} | {r.seconds:.3g} | {r.bytes / 1e6:.3g} |"
            for f, r in m["per_unit"].sort_values("seconds", ascending=False).iterrows()
        ],
        "",
    ]
    write_section(SECTION, lines)


if __name__ == "__main__":
    main()
