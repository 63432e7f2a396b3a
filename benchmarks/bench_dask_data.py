"""Data beyond one machine: a synthetic parquet table (``_scale_data``) of 1M rows (more with
``--rows``) fitted from its parquet directory on a dask LocalCluster of 2 single-thread worker
processes under a time budget, then scored whole as a dask DataFrame, a partition at a time;
against the in-memory path (a pandas frame, the local pool of 2 processes) where it fits in
memory, and, with ``--autogluon``, AutoGluon's ``predict`` (fitted on a sample, in its venv).

    python -m benchmarks.bench_dask_data [--quick] [--rows 1000000 3000000] [--time-limit 300]
                                         [--autogluon] [--results F]

Each block's row (``RESULTS``, with its provenance) holds the peak resident memory of the
client and of each worker (each process alone), wall seconds, rows scored per second, and the
runs each fit built and did not. Targets: the client's peak at most 1 GB while fitting 1M rows
from parquet; dask scoring throughput within 20% of the in-memory path's. --quick: 8,000 rows,
the tiny spec, a 240 s budget, a temporary file; --smoke: 1,000 rows, 2 folds and no budget
(the tests' run of this code path in seconds).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks._record import (
    ROOT,
    PeakMemory,
    append_rows,
    load_average,
    provenance,
    results_path,
    suite_parser,
)
from benchmarks._report import machine_line, markdown_table
from benchmarks._scale_data import make_table

RESULTS = ROOT / "benchmarks" / "results" / "dask_data.jsonl"
CHUNK_ROWS = 100_000
"""Rows per parquet file (and row group) of the synthetic table; written a file at a time."""
IN_MEMORY_MAX_ROWS = 1_000_000
"""The in-memory comparison runs up to this many rows (beyond, the frame and its copies
would crowd a 2-core benchmark machine)."""
TARGET_CLIENT_MB = 1024
TARGET_THROUGHPUT = 0.8


def write_table(path: Path, n_rows: int) -> list[str]:
    """The synthetic table in ``path`` (one parquet file per ``CHUNK_ROWS`` rows, label column
    ``label``); the feature names."""
    path.mkdir(parents=True, exist_ok=True)
    features = []
    for i, start in enumerate(range(0, n_rows, CHUNK_ROWS)):
        X, y = make_table(min(CHUNK_ROWS, n_rows - start), random_state=i)
        features = list(X.columns)
        X.assign(label=np.asarray(y)).to_parquet(path / f"part-{i:04d}.parquet", index=False)
    return features


class Phase:
    """Wall seconds and the peaks of the client and of each worker process during a block, each
    process alone (the cluster's processes are children of the client here)."""

    def __init__(self, worker_pids: dict[str, int]) -> None:
        self.client = PeakMemory(children=False)
        self.workers = {a: PeakMemory(pid, children=False) for a, pid in worker_pids.items()}

    def __enter__(self) -> Phase:
        self.client.start()
        for w in self.workers.values():
            w.start()
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        self.wall = time.perf_counter() - self.start
        self.client.stop()
        for w in self.workers.values():
            w.stop()

    def row(self, what: str, n_rows: int, rows_scored: int | None = None) -> dict:
        peaks = sorted(w.peak_mb for w in self.workers.values())
        return {
            "rows": n_rows,
            "block": what,
            "wall_s": self.wall,
            "client_peak_mb": self.client.peak_mb,
            "worker_peaks_mb": " / ".join(f"{p:.0f}" for p in peaks) or "-",
            "rows_per_s": (rows_scored / self.wall) if rows_scored else np.nan,
            "load": load_average()[0],
        }


def runs_of(model) -> dict:
    """What a budgeted fit built: runs with members, and runs not finished (not started, cut
    at the deadline, left out by the plan, failed)."""
    return {
        "runs_built": model.budget_.runs_ok,
        "runs_not_built": sum((model.budget_.runs_not_finished or {}).values()),
    }


def dask_blocks(path: Path, features: list[str], n_rows: int, args) -> tuple[list[dict], object]:
    """Fit from the parquet directory on a LocalCluster of 2 workers, then score the table as
    a dask DataFrame one partition at a time; the rows and the fitted model."""
    import dask.dataframe as dd
    from distributed import Client

    from ensel import EnsembleSelectionClassifier
    from ensel.estimator.dask_predict import iter_blocks
    from ensel.library.execution.dask_executor import local_cluster

    rows = []
    with local_cluster(2) as cluster, Client(cluster) as client:
        pids = client.run(os.getpid)
        with Phase(pids) as fit:
            model = EnsembleSelectionClassifier(
                library=args.spec,
                backend="dask",
                client=client,
                time_limit=args.time_limit,
                cv=args.cv,
                random_state=0,
                verbose=0,
            ).fit(str(path), "label")
        rows.append({**fit.row("fit from parquet (dask, 2 workers)", n_rows), **runs_of(model)})
        ddf = dd.read_parquet(str(path), columns=features)
        client.wait_for_workers(2)  # the end of the budget restarts the workers it stops
        pids = client.run(os.getpid)
        with Phase(pids) as score:
            scored = sum(len(block) for block in iter_blocks(model.predict_proba(ddf), client))
        assert scored == n_rows, (scored, n_rows)
        rows.append(score.row("score the dask DataFrame (2 workers)", n_rows, scored))
    return rows, model


def in_memory_blocks(path: Path, features: list[str], n_rows: int, args, model) -> list[dict]:
    """The same fit with the table as a pandas frame and the local pool of 2 processes, and
    scoring with the dask-fitted model on 2 threads (the same fitted members)."""
    from ensel import EnsembleSelectionClassifier

    frame = pd.read_parquet(path)
    y = frame.pop("label")
    with Phase({}) as fit:
        local = EnsembleSelectionClassifier(
            library=args.spec,
            n_jobs=2,
            time_limit=args.time_limit,
            cv=args.cv,
            random_state=0,
            verbose=0,
        ).fit(frame, y)
    rows = [{**fit.row("fit in memory (local pool, 2 processes)", n_rows), **runs_of(local)}]
    model.n_jobs = 2
    with Phase({}) as score:
        model.predict_proba(frame[features])
    rows.append(score.row("score in memory (2 threads)", n_rows, len(frame)))
    return rows


def autogluon_block(path: Path, tmp: Path, n_rows: int, args) -> list[dict]:
    """AutoGluon best_quality fitted on a 50,000-row sample within the same budget, its
    throughput timed on one chunk of ``CHUNK_ROWS`` rows of the table (the first file) in its
    own venv, as a user scores a large table chunk by chunk. Predicting every row instead ran
    past the peer's 45-minute limit on 2 cores: the timing calls ``predict`` four times (one
    untimed, three timed) at about 600 µs per row."""
    from benchmarks._peers import run_autogluon_files

    frame = pd.read_parquet(path)
    frame["label"] = frame["label"].astype(str)
    frame.sample(min(50_000, len(frame)), random_state=0).to_parquet(tmp / "ag-train.parquet")
    frame.iloc[:CHUNK_ROWS].to_parquet(tmp / "ag-test.parquet")
    del frame
    run = run_autogluon_files(
        tmp / "ag-train.parquet", tmp / "ag-test.parquet", "label", args.time_limit, num_cpus=2
    )
    return [
        {
            "rows": n_rows,
            "block": (
                f"AutoGluon {run['version']} predict, timed on {CHUNK_ROWS:,} rows "
                f"(best model {run['best_model']})"
            ),
            "wall_s": run["predict_us_per_row"] * n_rows / 1e6,  # at that pace, every row
            "client_peak_mb": run["peak_rss_mb"],
            "worker_peaks_mb": "-",
            "rows_per_s": 1e6 / run["predict_us_per_row"],
            "load": load_average()[0],
        }
    ]


def main(argv=None) -> None:
    parser = suite_parser(__doc__, RESULTS)
    parser.add_argument("--smoke", action="store_true", help="1,000 rows, no budget, for tests")
    parser.add_argument("--rows", type=int, nargs="+", help="default 1,000,000 (quick 8,000)")
    parser.add_argument("--time-limit", type=float, help="seconds a fit (default 300, quick 240)")
    parser.add_argument("--spec", help="library spec (default `default`, quick `tiny`)")
    parser.add_argument("--autogluon", action="store_true", help="add AutoGluon's predict")
    args = parser.parse_args(argv)
    args.quick = args.quick or args.smoke
    args.rows = args.rows or ([1_000] if args.smoke else [8_000] if args.quick else [1_000_000])
    args.cv = 2 if args.smoke else "auto"
    if not args.smoke:
        args.time_limit = args.time_limit or (240.0 if args.quick else 300.0)
    args.spec = args.spec or ("tiny" if args.quick else "default")
    results, rows = results_path(args, RESULTS, "dask_data"), []
    base = Path(tempfile.mkdtemp(prefix="ensel-dask-data-"))
    try:
        for n in args.rows:
            need = n * 250  # bytes of parquet per row, generously
            if shutil.disk_usage(base).free < 3 * need:
                print(f"skipping {n:,} rows: not enough free disk under {base}")
                continue
            path = base / f"table-{n}"
            features = write_table(path, n)
            found, model = dask_blocks(path, features, n, args)
            rows += found
            if n <= IN_MEMORY_MAX_ROWS:
                rows += in_memory_blocks(path, features, n, args, model)
            if args.autogluon:
                rows += autogluon_block(path, base, n, args)
            shutil.rmtree(path)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    run = {"spec": args.spec, "time_limit": args.time_limit, "cv": args.cv, **provenance()}
    append_rows(results, [{**row, **run} for row in rows])
    print("\n".join(report_lines(pd.DataFrame(rows), args)))


def report_lines(table: pd.DataFrame, args) -> list[str]:
    """The printed table of the blocks' rows and the two targets, checked."""
    command = "python -m benchmarks.bench_dask_data " + " ".join(
        ["--quick"] if args.quick else [f"--rows {' '.join(map(str, args.rows))}"]
    )
    lines = [
        "",
        machine_line(command),
        "",
        f"Spec `{args.spec}`, time budget {args.time_limit or 0:g} s per fit (0: none), "
        f"cv={args.cv!r} ('auto': 5 folds "
        "below 20,000 rows, else a held-out hillclimb set). Peaks are resident memory in MiB "
        "of the client process alone and of each worker process; a fit's runs are those "
        "built and those not (not started, cut at the deadline, left out by the plan, failed).",
        "",
        markdown_table(table.set_index(["rows", "block"]), floatfmt=".1f"),
        "",
    ]
    for n in table["rows"].unique():
        t = table[table["rows"] == n].set_index("block")
        fit = t.loc["fit from parquet (dask, 2 workers)", "client_peak_mb"]
        lines.append(
            f"- {n:,} rows: client peak while fitting from parquet {fit:.0f} MiB "
            f"(target <= {TARGET_CLIENT_MB}: {'met' if fit <= TARGET_CLIENT_MB else 'missed'})"
        )
        if "score in memory (2 threads)" in t.index:
            ratio = (
                t.loc["score the dask DataFrame (2 workers)", "rows_per_s"]
                / t.loc["score in memory (2 threads)", "rows_per_s"]
            )
            verdict = "met" if ratio >= TARGET_THROUGHPUT else "missed"
            lines.append(
                f"- {n:,} rows: dask scoring throughput {ratio:.2f}x the in-memory path's "
                f"(target >= {TARGET_THROUGHPUT}: {verdict})"
            )
    return lines


if __name__ == "__main__":
    main()
