"""Fits AutoGluon-tabular on a train CSV and predicts a test CSV; executed by
``benchmarks._peers.run_autogluon`` inside the peer's own environment
(``.bench-envs/autogluon-tabular``), never imported by ensel or its benchmarks.

Usage: python _autogluon_tabular.py JOB_DIR  (JOB_DIR holds job.json, train.csv, test.csv).
Writes JOB_DIR/pred.npy and prints one JSON line: fit and predict wall seconds, model size,
the models AutoGluon fitted and the one it chose."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd


def read(path: Path, job: dict) -> pd.DataFrame:
    """The CSV with categorical columns as strings and only empty cells missing."""
    dtypes = {c: str for c in job["categorical"]}
    if job["problem_type"] != "regression":
        dtypes[job["target"]] = str
    return pd.read_csv(path, dtype=dtypes, keep_default_na=False, na_values=[""])


def directory_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


def main() -> None:
    from autogluon.tabular import TabularPredictor

    job_dir = Path(sys.argv[1])
    job = json.loads((job_dir / "job.json").read_text())
    train, test = read(job_dir / "train.csv", job), read(job_dir / "test.csv", job)
    np.random.seed(job["seed"])  # noqa: NPY002 (AutoGluon draws from the global generator)
    predictor = TabularPredictor(
        label=job["target"],
        problem_type=job["problem_type"],
        eval_metric=job["eval_metric"],
        path=str(job_dir / "model"),
        verbosity=job["verbosity"],
    )
    start = time.perf_counter()
    predictor.fit(
        train,
        time_limit=job["time_limit"],
        presets=job["presets"],
        num_cpus=job["num_cpus"],
        num_gpus=0,
        ag_args_ensemble={"model_random_seed": job["seed"]},
        **job["fit_kwargs"],
    )
    fit_seconds = time.perf_counter() - start
    features = test.drop(columns=[job["target"]], errors="ignore")
    start = time.perf_counter()
    if job["problem_type"] == "regression":
        pred = predictor.predict(features).to_numpy(dtype=float)
    else:
        proba = predictor.predict_proba(features)
        proba.columns = [str(c) for c in proba.columns]
        pred = proba[job["classes"]].to_numpy(dtype=float)
        pred /= pred.sum(axis=1, keepdims=True)  # float32 rounding: rows sum to 1 within 1e-7
    predict_seconds = time.perf_counter() - start
    np.save(job_dir / "pred.npy", pred)
    leaderboard = predictor.leaderboard(silent=True)
    record = {
        "fit_seconds": fit_seconds,
        "predict_seconds": predict_seconds,
        "model_mb": directory_mb(job_dir / "model"),
        "best_model": predictor.model_best,
        "models": leaderboard["model"].tolist(),
        "version": __import__("autogluon.tabular").tabular.__version__,
        "cpu_count": os.cpu_count(),
    }
    print("RESULT " + json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
