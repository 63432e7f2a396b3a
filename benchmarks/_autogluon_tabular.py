"""Fits AutoGluon-tabular on a train table and predicts a test table; executed by
``benchmarks._peers`` inside the peer's own environment (``$ENSEL_BENCH_ENVS/autogluon``),
never imported by ensel or its benchmarks.

Usage: python _autogluon_tabular.py JOB_DIR  (JOB_DIR holds job.json, which names the train and
test files, CSV or parquet, relative to JOB_DIR or absolute). Writes JOB_DIR/pred.npy and prints
one JSON line: fit and warm predict wall times (``_predict_timing``, the benchmarks' one way),
model size, the models AutoGluon fitted and the one it chose, and the versions of AutoGluon and
the packages its models come from."""

from __future__ import annotations

import json
import os
import sys
import time
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd
from _predict_timing import single_row_ms, warm_predict  # this file's folder is sys.path[0]

PACKAGES = ("autogluon.tabular", "lightgbm", "catboost", "xgboost-cpu", "torch", "fastai", "ray")


def read(path: Path, job: dict) -> pd.DataFrame:
    """The table, classification targets as strings. CSV: categorical columns as strings and
    only empty cells missing; parquet: its own types."""
    if path.suffix == ".parquet":
        frame = pd.read_parquet(path)
    else:
        dtypes = {c: str for c in job["categorical"]}
        if job["problem_type"] != "regression":
            dtypes[job["target"]] = str
        frame = pd.read_csv(path, dtype=dtypes, keep_default_na=False, na_values=[""])
    if job["problem_type"] != "regression" and job["target"] in frame:
        frame[job["target"]] = frame[job["target"]].astype(str)
    return frame


def directory_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


def versions() -> dict[str, str]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def main() -> None:
    from autogluon.tabular import TabularPredictor

    job_dir = Path(sys.argv[1])
    job = json.loads((job_dir / "job.json").read_text())
    train = read(job_dir / job["train"], job)
    np.random.seed(job["seed"])  # noqa: NPY002 (AutoGluon draws from the global generator)
    predictor = TabularPredictor(
        label=job["target"],
        problem_type=job["problem_type"],
        eval_metric=job["eval_metric"],
        path=str(job_dir / "model"),
        verbosity=job["verbosity"],
        groups=job.get("groups"),  # a column of bagging fold ids, not a feature
    )
    cpus = {} if job["num_cpus"] is None else {"num_cpus": job["num_cpus"]}
    start = time.perf_counter()
    predictor.fit(
        train,
        time_limit=job["time_limit"],
        presets=job["presets"],
        num_gpus=0,
        ag_args_ensemble={"model_random_seed": job["seed"]},
        **cpus,
        **job["fit_kwargs"],
    )
    fit_seconds = time.perf_counter() - start
    del train
    test = read(job_dir / job["test"], job)
    features = test.drop(columns=[job["target"]], errors="ignore")
    predictor.persist()  # models in memory, as a served predictor keeps them
    if job["problem_type"] == "regression":
        predict = predictor.predict
    else:
        predict = predictor.predict_proba
    out, us_per_row = warm_predict(predict, features, len(features))
    if job["problem_type"] == "regression":
        pred = out.to_numpy(dtype=float)
    else:
        out.columns = [str(c) for c in out.columns]
        pred = out[job["classes"]].to_numpy(dtype=float)
        pred /= pred.sum(axis=1, keepdims=True)  # float32 rounding: rows sum to 1 within 1e-7
    np.save(job_dir / "pred.npy", pred)
    leaderboard = predictor.leaderboard(silent=True)
    record = {
        "fit_seconds": fit_seconds,
        "predict_seconds": us_per_row * len(features) / 1e6,  # one warm call
        "predict_us_per_row": us_per_row,
        "model_mb": directory_mb(job_dir / "model"),
        "best_model": predictor.model_best,
        "models": leaderboard["model"].tolist(),
        "version": metadata.version("autogluon.tabular"),
        "versions": versions(),
        "cpu_count": os.cpu_count(),
    }
    if job.get("single_rows"):
        rows = [features.iloc[[i]] for i in range(min(len(features), job["single_rows"]))]
        single = single_row_ms(predict, rows, calls=job["single_rows"])
        record.update(single_p50_ms=single["p50_ms"], single_p99_ms=single["p99_ms"])
    print("RESULT " + json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
