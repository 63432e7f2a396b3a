"""Peers for the benchmarks: AutoGluon-tabular (its own virtual environment, run in a
subprocess) and scikit-learn's HistGradientBoosting (in-process), both returning a
``PeerResult`` with test predictions in a fixed class order and fit/predict wall times;
``run_autogluon_files`` runs AutoGluon on train/test files (CSV or parquet) for benchmarks on
tables too large to pass around as frames, and scores it.

AutoGluon is never an ensel dependency. It runs as its users install it: ``autogluon_python()``
installs, on first use, ``$ENSEL_BENCH_ENVS/autogluon`` (default ``<repo>/.bench-envs``,
gitignored): a venv, then ``torch==2.13.0`` first (the CPU wheel), then
``autogluon.tabular[all]`` at ``AUTOGLUON_VERSION`` (LightGBM, CatBoost, XGBoost, FastAI, its
torch nets and ray), after a ``pip --dry-run --report`` check that refuses anything CUDA
(``nvidia-*``, NCCL, triton) or another torch. AutoGluon 1.6.3 pins ``torch>=2.10,<2.14`` and
uses ``xgboost-cpu`` on Linux. With ray installed, best_quality fits bagged folds in ray workers
and runs its DyStack check (on by default, left at its default here) in a ray sub-process.

Every AutoGluon run records its version and its key packages' versions, the model it chose
(``best_model``), fit wall seconds, predict microseconds per row (``benchmarks._predict_timing``,
after ``predictor.persist()``: warm, the same rows, in the runner's process, as ensel's side is
timed) and the peak resident memory of the runner and all its descendants (ray's raylet and
workers included; ``benchmarks._record.PeakMemory``).
"""

from __future__ import annotations

import fcntl
import json
import os
import pickle
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import log_loss, roc_auc_score

from benchmarks._record import ROOT, PeakMemory

ENV_NAME = "autogluon"
AUTOGLUON_VERSION = "1.6.3"
TORCH_PIN = "torch==2.13.0"
REQUIREMENT = f"autogluon.tabular[all]=={AUTOGLUON_VERSION}"
FORBIDDEN = ("nvidia-", "nccl", "triton", "cuda")
PROBLEM_TYPES = ("binary", "multiclass", "regression")
RUNNER = ROOT / "benchmarks" / "_autogluon_tabular.py"


@dataclass
class PeerResult:
    """One peer's fit and prediction. ``predictions``: ``(n_test, n_classes)`` probabilities
    with columns in ``classes`` order (the sorted training labels) for classification, or
    ``(n_test,)`` values for regression (``classes`` is None). Times are wall seconds;
    ``cpu_seconds`` is the CPU time of the fit and predict together (subprocess for AutoGluon)."""

    peer: str
    predictions: np.ndarray
    classes: list | None
    fit_seconds: float
    predict_seconds: float
    model_mb: float
    cpu_seconds: float
    info: dict = field(default_factory=dict)


def envs_dir() -> Path:
    return Path(os.environ.get("ENSEL_BENCH_ENVS", ROOT / ".bench-envs"))


def _check_plan(pip: list[str], requirement: str) -> list[str]:
    """What ``pip install requirement`` would add, refused where it is CUDA or another torch."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        cmd = [*pip, "install", "--dry-run", "--quiet", "--report", str(report), requirement]
        subprocess.run(cmd, check=True, capture_output=True)
        plan = json.loads(report.read_text())["install"]
    names = [f"{p['metadata']['name']}=={p['metadata']['version']}" for p in plan]
    bad = [n for n in names if n.lower().startswith(FORBIDDEN) or n.lower().startswith("torch==")]
    if bad:
        raise RuntimeError(f"pip would install {', '.join(bad)} for {requirement}")
    return names


def autogluon_python(install: bool = True) -> Path:
    """The AutoGluon environment's python, installing the environment on first use (a file
    lock keeps two benchmarks from installing it at once). Raises ``RuntimeError`` when it is
    missing and ``install`` is false, or when the install would bring CUDA packages."""
    env = envs_dir() / ENV_NAME
    python, marker = env / "bin" / "python", env / ".installed"
    if marker.exists():
        return python
    if not install:
        raise RuntimeError(f"no AutoGluon environment at {env}; call autogluon_python()")
    env.parent.mkdir(parents=True, exist_ok=True)
    with open(env.parent / f".{ENV_NAME}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists():
            return python
        print(f"installing AutoGluon-tabular into {env} (first use only)", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
        pip = [str(python), "-m", "pip"]
        subprocess.run([*pip, "install", "--quiet", TORCH_PIN], check=True)
        _check_plan(pip, REQUIREMENT)
        subprocess.run([*pip, "install", "--quiet", REQUIREMENT], check=True)
        listed = subprocess.run([*pip, "list", "--format=json"], capture_output=True, text=True)
        names = [p["name"].lower() for p in json.loads(listed.stdout)]
        if any(n.startswith(FORBIDDEN) for n in names):
            raise RuntimeError(f"CUDA packages ended up in {env}: remove it and report this")
        marker.write_text(json.dumps({"requirement": REQUIREMENT, "torch": TORCH_PIN}) + "\n")
    return python


def _check(train: pd.DataFrame, target: str, problem_type: str) -> list | None:
    if problem_type not in PROBLEM_TYPES:
        raise ValueError(f"problem_type must be one of {PROBLEM_TYPES}, got {problem_type!r}")
    if target not in train.columns:
        raise ValueError(f"target {target!r} is not a column of train")
    if problem_type == "regression":
        return None
    return np.unique(train[target].to_numpy()).tolist()


def classification_scores(y_test, classes, proba: np.ndarray) -> dict[str, float]:
    """Test AUC (one-vs-rest macro for more than two classes) and log loss, scikit-learn's, of
    probabilities ``proba`` whose columns are ``classes``; probabilities are clipped to
    [1e-15, 1] and renormalised first, the same for every peer. For two classes ``proba`` may
    also be the second class's probability alone, of shape ``(n,)``."""
    classes = list(classes)
    proba = np.asarray(proba, dtype=float)
    if proba.ndim == 1:
        proba = np.column_stack([1 - proba, proba])
    proba = np.clip(proba, 1e-15, 1.0)
    proba = proba / proba.sum(axis=1, keepdims=True)
    y = np.asarray(y_test)
    if len(classes) == 2:
        auc = roc_auc_score(y == classes[1], proba[:, 1])
    else:
        auc = roc_auc_score(y, proba, multi_class="ovr", labels=classes)
    return {"auc": float(auc), "logloss": float(log_loss(y, proba, labels=classes))}


def _runner_env(num_cpus: int | None) -> dict[str, str]:
    env = {
        **os.environ,
        "CUDA_VISIBLE_DEVICES": "",
        "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE"),
        "RAY_USAGE_STATS_ENABLED": "0",  # no phoning home from the benchmark
    }
    if num_cpus is not None:
        threads = str(num_cpus)
        env.update(OMP_NUM_THREADS=threads, MKL_NUM_THREADS=threads, OPENBLAS_NUM_THREADS=threads)
    env.pop("PYTHONPATH", None)
    return env


def _run_job(job_dir: Path, job: dict, timeout: float) -> dict:
    """Run the AutoGluon runner on ``job_dir`` (``job`` written to job.json) while sampling
    the memory of its process tree; its ``RESULT`` record with ``peak_rss_mb`` and
    ``cpu_seconds`` (the sampled process tree, ray workers included) added."""
    (job_dir / "job.json").write_text(json.dumps(job))
    python = autogluon_python()
    out_path, err_path = job_dir / "stdout.txt", job_dir / "stderr.txt"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(out_path, "w") as out, open(err_path, "w") as err:
        proc = subprocess.Popen(
            [str(python), str(RUNNER), str(job_dir)],
            stdout=out,
            stderr=err,
            env=_runner_env(job.get("num_cpus")),
            start_new_session=True,  # its ray processes can be ended as one group on timeout
        )
        with PeakMemory(proc.pid) as memory:
            try:
                returncode = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired as err:
                os.killpg(proc.pid, 9)
                proc.wait()
                raise RuntimeError(f"AutoGluon ran past {timeout:.0f} s and was ended") from err
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    stdout, stderr = out_path.read_text(), err_path.read_text()
    lines = [x for x in stdout.splitlines() if x.startswith("RESULT ")]
    if returncode != 0 or not lines:
        log = stderr + stdout
        if any(m in log for m in ("No models were trained", "already fit", "Not enough time")):
            raise RuntimeError(
                f"AutoGluon fitted no model within time_limit={job['time_limit']} s "
                f"(load average {os.getloadavg()[0]:.1f}; starting ray counts against it); give "
                "it more time or pass "
                "fit_kwargs={'dynamic_stacking': False, 'num_stack_levels': 1}"
            )
        raise RuntimeError(f"AutoGluon runner failed (exit {returncode}):\n{log[-3000:]}")
    record = json.loads(lines[-1].removeprefix("RESULT "))
    record["peak_rss_mb"] = memory.peak_mb
    waited = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    record["cpu_seconds"] = max(waited, memory.cpu_seconds)  # ray workers are not waited for
    if job.get("verbosity", 0) > 0:  # AutoGluon's own log, for checking what it fitted
        record["log"] = stderr + stdout.replace(lines[-1], "")
    return record


def _settings(target, problem_type, eval_metric, time_limit, presets, num_cpus, seed) -> dict:
    """The fit settings of an AutoGluon job, as the runner reads them from job.json."""
    return {"target": target, "problem_type": problem_type, "eval_metric": eval_metric,
            "time_limit": time_limit, "presets": presets, "num_cpus": num_cpus,
            "seed": seed}  # fmt: skip


FOLD_COLUMN = "__fold"
"""The train column that carries the bagging fold ids given to ``run_autogluon``."""


def run_autogluon(
    train: pd.DataFrame,
    test: pd.DataFrame,
    target: str,
    problem_type: str,
    time_limit: float,
    presets: str = "best_quality",
    num_cpus: int | None = 2,
    seed: int = 0,
    *,
    eval_metric: str | None = None,
    fit_kwargs: dict | None = None,
    folds: pd.Series | None = None,
    verbosity: int = 0,
    single_rows: int = 0,
) -> PeerResult:
    """Fit ``TabularPredictor(presets=presets)`` on ``train`` within ``time_limit`` seconds with
    ``num_cpus`` cores (None: AutoGluon's default, all of them) and no GPU, and predict
    ``test`` (its ``target`` column, if any, is ignored). ``eval_metric`` None is AutoGluon's
    default (accuracy for classes, RMSE for regression); pass e.g. "log_loss" or "roc_auc" to
    match what you compare. AutoGluon has no global seed: ``seed`` sets numpy's and the models'
    ``model_random_seed``. ``folds`` (one bagging fold id per train row) makes the bagging
    folds those given, for grouped rows (``TabularPredictor(groups=...)``: one fold per
    value, the column not a feature). Data travel as CSV (categorical columns read back as
    strings, only empty cells missing); the saved predictor is measured and deleted. ``info``
    holds the version, ``best_model``, ``predict_us_per_row``, ``peak_rss_mb`` and the
    fitted models; with ``single_rows`` > 0 also ``single_p50_ms`` and ``single_p99_ms``, the
    latency of one test row per ``predict_proba`` call over that many calls."""
    classes = _check(train, target, problem_type)
    features = [c for c in train.columns if c != target]
    categorical = [
        c for c in features if not pd.api.types.is_numeric_dtype(train[c].dtype)
    ]  # bool counts as numeric and is written as True/False
    job = {
        "train": "train.csv",
        "test": "test.csv",
        **_settings(target, problem_type, eval_metric, time_limit, presets, num_cpus, seed),
        "categorical": categorical,
        "classes": None if classes is None else [str(c) for c in classes],
        "fit_kwargs": fit_kwargs or {},
        "groups": None if folds is None else FOLD_COLUMN,
        "verbosity": verbosity,
        "single_rows": single_rows,
    }
    if folds is not None:
        if FOLD_COLUMN in train or len(folds) != len(train):
            raise ValueError(f"folds: one id per train row, and no column named {FOLD_COLUMN}")
        train = train.assign(**{FOLD_COLUMN: np.asarray(folds)})
    with tempfile.TemporaryDirectory(prefix="ensel-autogluon-") as tmp:
        job_dir = Path(tmp)
        train.to_csv(job_dir / "train.csv", index=False)
        test[features].to_csv(job_dir / "test.csv", index=False)
        record = _run_job(job_dir, job, timeout=3 * time_limit + 600)
        predictions = np.load(job_dir / "pred.npy")
    return PeerResult(
        peer=f"autogluon-{presets}",
        predictions=predictions,
        classes=classes,
        fit_seconds=record.pop("fit_seconds"),
        predict_seconds=record.pop("predict_seconds"),
        model_mb=record.pop("model_mb"),
        cpu_seconds=record.pop("cpu_seconds"),
        info=record,
    )


def _read_column(path: Path, column: str) -> pd.Series:
    if path.suffix == ".parquet":
        return pd.read_parquet(path, columns=[column])[column]
    return pd.read_csv(path, usecols=[column], dtype={column: str})[column]


def run_autogluon_files(
    train_path: str | os.PathLike,
    test_path: str | os.PathLike,
    target: str,
    time_limit: float,
    *,
    presets: str = "best_quality",
    eval_metric: str = "log_loss",
    num_cpus: int | None = None,
    seed: int = 0,
    verbosity: int = 0,
) -> dict:
    """AutoGluon ``presets`` (best_quality: bagging, stacking, DyStack at its default, ray) fitted
    on the classification table at ``train_path`` and scored on ``test_path`` (each CSV or
    parquet, ``target`` a column of both; categorical columns as the file gives them) within
    ``time_limit`` seconds, in its own venv (``autogluon_python()``). ``num_cpus`` None lets
    AutoGluon use every core, as users run it. The runner reads the files itself, so nothing
    large passes through this process; only the target columns are read here, to score.
    Returns the runner's record (``fit_seconds``, ``predict_us_per_row``, ``peak_rss_mb``,
    ``best_model``, ``version``, ``model_mb``, ...) with test ``auc`` and ``logloss``
    (``classification_scores``) and the ``classes``."""
    paths = [Path(train_path), Path(test_path)]
    for name, path in zip(("train_path", "test_path"), paths, strict=True):
        if path.suffix not in (".csv", ".parquet") or not path.is_file():
            raise ValueError(f"{name} must be an existing .csv or .parquet file, got {path}")
    y_train = _read_column(paths[0], target).astype(str)
    classes = sorted(y_train.unique().tolist())
    if len(classes) < 2:
        raise ValueError(f"target {target!r} has one class in {paths[0]}; need at least 2")
    kind = "binary" if len(classes) == 2 else "multiclass"
    job = {
        "train": str(paths[0].resolve()),
        "test": str(paths[1].resolve()),
        **_settings(target, kind, eval_metric, time_limit, presets, num_cpus, seed),
        "categorical": [],
        "classes": classes,
        "fit_kwargs": {},
        "verbosity": verbosity,
    }
    with tempfile.TemporaryDirectory(prefix="ensel-autogluon-") as tmp:
        record = _run_job(Path(tmp), job, timeout=3 * time_limit + 1800)
        predictions = np.load(Path(tmp) / "pred.npy")
    scores = classification_scores(_read_column(paths[1], target).astype(str), classes, predictions)
    return {**record, **scores, "classes": classes}


def _hgb_frame(X: pd.DataFrame, levels: dict[str, list] | None = None):
    """Numeric and boolean columns as float (NaN kept); the others as pandas categoricals with
    the training levels (at most 255, the rest pooled into "__other__"), NaN kept."""
    out = pd.DataFrame(index=X.index)
    learned = {} if levels is None else levels
    for col in X.columns:
        values = X[col]
        present = values.dropna()
        if pd.api.types.is_numeric_dtype(values.dtype):
            out[col] = values.astype(float)
        elif len(present) and present.map(lambda v: isinstance(v, bool | np.bool_)).all():
            out[col] = values.map({True: 1.0, False: 0.0}).astype(float)
        else:
            text = values.astype(object).where(values.isna(), values.astype(str))
            if levels is None:
                counts = text.value_counts()
                learned[col] = (
                    [*counts.index[:254].tolist(), "__other__"]
                    if len(counts) > 255
                    else counts.index.tolist()
                )
            known = learned[col]
            if "__other__" in known:
                text = text.where(text.isna() | text.isin(known), "__other__")
            out[col] = pd.Categorical(text, categories=known)
    return out, learned


def run_hgb(
    train: pd.DataFrame,
    test: pd.DataFrame,
    target: str,
    problem_type: str,
    time_limit: float | None = None,
    seed: int = 0,
    num_cpus: int = 2,
    **params,
) -> PeerResult:
    """scikit-learn's HistGradientBoostingClassifier/Regressor with native categoricals and
    missing values, early stopping on a 10% validation split (up to 1,000 rounds, learning
    rate 0.05, stop after 30 rounds without improvement of the loss); ``params`` override
    these. ``num_cpus`` caps its OpenMP threads. ``time_limit`` is accepted for a common
    signature and not used (a fit takes seconds)."""
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
    from threadpoolctl import threadpool_limits

    classes = _check(train, target, problem_type)
    X_train, levels = _hgb_frame(train.drop(columns=target))
    X_test, _ = _hgb_frame(test.drop(columns=target, errors="ignore")[X_train.columns], levels)
    settings = {
        "max_iter": 1000,
        "learning_rate": 0.05,
        "early_stopping": True,
        "validation_fraction": 0.1,
        "n_iter_no_change": 30,
        "categorical_features": "from_dtype",
        "random_state": seed,
        **params,
    }
    kind = HistGradientBoostingRegressor if classes is None else HistGradientBoostingClassifier
    model = kind(**settings)
    with threadpool_limits(limits=num_cpus, user_api="openmp"):
        cpu0 = time.process_time()
        start = time.perf_counter()
        model.fit(X_train, train[target].to_numpy())
        fit_seconds = time.perf_counter() - start
        start = time.perf_counter()
        predictions = model.predict(X_test) if classes is None else model.predict_proba(X_test)
        predict_seconds = time.perf_counter() - start
        cpu = time.process_time() - cpu0
    return PeerResult(
        peer="hgb",
        predictions=np.asarray(predictions, dtype=float),
        classes=classes,
        fit_seconds=fit_seconds,
        predict_seconds=predict_seconds,
        model_mb=len(pickle.dumps(model)) / 2**20,
        cpu_seconds=cpu,
        info={"n_iter": int(model.n_iter_)},
    )
