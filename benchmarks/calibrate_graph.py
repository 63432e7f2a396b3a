"""Measure the constants of the single-row ONNX graph cost model
(``ensel/estimator/export/graph_cost.py``, the prices of ``exportable=True``) and write them
under ``graph`` in ``ensel/library/planning/cost_constants.json``, the file's other keys kept.
Run alone on a quiet machine (about twelve minutes on 2 cores):

    python -m benchmarks.calibrate_graph [--quick] [--out PATH] [--rows PATH]

Pilots: a library of every exporting family at small and large sizes, cv=5 so fold siblings count,
on three tables (breast_cancer's 30 numeric columns; synthetic tables of 2,000 and 20,000 rows with
numeric and categorical columns, so that native and one-hot views and small and large trees occur).
On each, single members and random sets of 2-24 members (``LARGEST_SET``) are exported with the
estimator's graph builder and timed one row per call on one onnxruntime thread (p50 of
``SINGLE_CALLS`` calls). The model's cost is linear in its constants, so each set's features are its
cost under unit constants; the constants are non-negative least squares on the relative error (each
set weighted by one over its time) of four fifths of the sets, and the fit's median and worst
relative error on the fifth held out are written beside them. Each set's time, features, members,
runs and graph nodes go to ``ROWS`` as measured; ``--rows PATH`` fits the constants again from such
rows, timing nothing. ``--quick``: one small table, few sets, temporary files unless ``--out``.
"""

from __future__ import annotations

import argparse
import copy
import json
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import nnls

from benchmarks._predict_timing import single_row_ms
from benchmarks._record import ROOT, append_rows, load_results, machine, provenance, quick_results
from benchmarks.bench_deploy import onnx_predictor
from benchmarks.calibrate_costs import Run
from ensel.estimator import EnsembleSelectionClassifier
from ensel.estimator.export import feeds, sample_rows
from ensel.estimator.export.assemble import build, columns_of
from ensel.estimator.export.graph_cost import CONSTANTS, graph_cost
from ensel.estimator.export.restrict import exportable_mask
from ensel.library import Library

OUT = ROOT / "ensel" / "library" / "planning" / "cost_constants.json"
ROWS = ROOT / "benchmarks" / "results" / "graph_cost_pilots.jsonl"
SPEC = {
    "name": "graph_pilots",
    "families": [
        {"family": "logreg", "params": {"ridge": [0.01, 1.0]}, "calibration": ["none", "platt"]},
        {"family": "tree", "params": {"ccp_alpha": [0.0, 0.01]},
         "calibration": ["none", "isotonic"]},
        {"family": "random_forest", "params": {"max_features": [2, 8]}, "stages": [8, 64]},
        {"family": "bagged_trees", "params": {"criterion": "gini"}, "stages": [10]},
        {"family": "adaboost", "params": {"max_depth": 1}, "stages": [16, 128],
         "calibration": ["none", "logistic"]},
        {"family": "xgboost", "params": {"max_depth": [3, 6], "learning_rate": 0.1},
         "stages": [32, 256]},
        {"family": "lightgbm", "params": {"num_leaves": [7, 63], "learning_rate": 0.1},
         "stages": [32, 256]},
        {"family": "catboost", "params": {"depth": 6, "learning_rate": 0.1}, "stages": [64, 256]},
        {"family": "mlp", "params": {"hidden": [4, 64]}, "stages": [16]},
        {"family": "naive_bayes", "params": {"kind": "normal"}},
        {"family": "svm", "params": {"kernel": "linear", "C": 1.0}},
    ],
}  # fmt: skip
"""Every exporting family, each at a small and a large size where it has one."""
TABLES = {"breast_cancer": 0, "mixed_2k": 2_000, "mixed_20k": 20_000}
SETS, QUICK_SETS = 40, 12
"""Member sets timed per table: one single member per run first, then random sets."""
LARGEST_SET = 24


def table(name: str, rows: int, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    """``breast_cancer`` (rows 0), or a synthetic binary table of ``rows`` rows with six
    numeric and three categorical columns (3, 12 and 40 levels), some cells missing."""
    if rows == 0:
        from sklearn.datasets import load_breast_cancer

        X, y = load_breast_cancer(return_X_y=True, as_frame=True)
        return X, y.to_numpy()
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(rows, 6)), columns=[f"x{j}" for j in range(6)])
    codes = [rng.integers(levels, size=rows) for levels in (3, 12, 40)]
    for j, column in enumerate(codes):
        X[f"c{j}"] = pd.Series([f"l{c}" for c in column], dtype=object)
    X.loc[rng.random(rows) < 0.05, "x1"] = np.nan
    logit = X["x0"] - X["x2"] * X["x3"] + (codes[2] % 3 == 0) + np.nan_to_num(X["x1"].to_numpy())
    y = (logit + rng.logistic(size=rows) > 0).astype(int).to_numpy()
    return X, y


def pilot(name: str, rows: int, sets: int, store: Path, rng, results: Path) -> list[dict]:
    """Fit the pilot library on one table, then time member sets' graphs; one row per set (its
    measured p50, its features: its cost under each unit constant), appended to ``results``."""
    X, y = table(name, rows)
    est = EnsembleSelectionClassifier(library=SPEC, cv=5, store=store, exportable=True)
    est.fit(X, y)
    lib = Library.open(store)
    members = lib.members[exportable_mask(lib.members, "classification", bool(lib.categories))]
    members = members.reset_index(drop=True)
    basis = {
        k: graph_cost(members, lib, "classification", lib.siblings, 2, unit_constants(k))
        for k in CONSTANTS
    }
    rows_ = sample_rows(est, 64, seed=1)
    out = []
    for chosen in member_sets(members, sets, rng):
        times, nodes = time_graph(est, lib, list(members["id"].iloc[chosen]), rows_)
        out.append({
            "table": name, "members": len(chosen), "runs": members["run"].iloc[chosen].nunique(),
            "nodes": nodes, **times, "features": {k: c.of(chosen) for k, c in basis.items()},
        })  # fmt: skip
        append_rows(results, [{**out[-1], **provenance()}])
    return out


def unit_constants(key: str) -> dict[str, float]:
    """Constants that price only ``key``'s part of the model, at one unit."""
    return {k: float(k == key) for k in CONSTANTS}


def member_sets(members: pd.DataFrame, sets: int, rng) -> list[np.ndarray]:
    """One member of each run alone (its largest stage), then random sets of 2 to
    ``LARGEST_SET`` members, ``sets`` in all."""
    singles = [int(group.index[-1]) for _, group in members.groupby("run", sort=False)]
    out = [np.array([i]) for i in rng.permutation(singles)[:sets]]
    while len(out) < sets:
        size = int(rng.integers(2, min(LARGEST_SET, len(members)) + 1))
        out.append(np.sort(rng.choice(len(members), size, replace=False)))
    return out


def time_graph(est, lib, ids: list[str], rows: pd.DataFrame) -> tuple[dict, int]:
    """``{"p50_ms", "p99_ms"}`` of one row per call through the graph of the members ``ids``
    (equal weights), on one onnxruntime thread, and the graph's nodes."""
    one = copy.copy(est)
    one.fitted_members_ = lib.subset(ids)
    one.weights_ = np.full(len(ids), 1.0 / len(ids))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "g.onnx"
        model = build(one)
        path.write_bytes(model.SerializeToString())
        predict = onnx_predictor(path, "probabilities", one_thread=True)
        frame = one._frame(rows)
        inputs = [feeds(columns_of(one), frame.iloc[[i]]) for i in range(len(frame))]
        return single_row_ms(predict, inputs), len(model.graph.node)


def fit_constants(rows: list[dict], held_out: np.ndarray) -> tuple[dict, dict]:
    """Non-negative least squares of the constants on the relative error of the rows not
    ``held_out``; the fit's relative errors on the held-out rows, and the median ratio of the
    sets' p99 to their p50."""
    F = np.array([[r["features"][k] for k in CONSTANTS] for r in rows])
    t = np.array([r["p50_ms"] for r in rows])
    train = ~held_out
    coef, _ = nnls(F[train] / t[train, None], np.ones(train.sum()))
    error = np.abs(F[held_out] @ coef - t[held_out]) / t[held_out]
    median, worst = float(np.median(error)), float(error.max())
    tail = float(np.median([r["p99_ms"] / r["p50_ms"] for r in rows]))
    fit = {"median_relative_error": median, "worst_relative_error": worst, "p99_over_p50": tail}
    return dict(zip(CONSTANTS, map(float, coef), strict=True)), fit


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one small table, a temporary file")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--rows", type=Path, default=None, help="fit from these saved rows")
    args = parser.parse_args(argv)
    run = Run("python -m benchmarks.calibrate_graph" + (" --quick" if args.quick else ""))
    tables = {"mixed_2k": 500} if args.quick else TABLES
    rng = np.random.default_rng(0)
    rows = load_results(args.rows) if args.rows else []
    results = quick_results("graph-pilots") if args.quick else ROWS
    with tempfile.TemporaryDirectory() as tmp:
        for name, n in {} if args.rows else tables.items():
            sets = QUICK_SETS if args.quick else SETS
            rows += pilot(name, n, sets, Path(tmp) / name, rng, results)
    if args.rows:
        run.command += f" --rows {args.rows}"
        tables = list(dict.fromkeys(r["table"] for r in rows))
    split = np.random.default_rng(1)  # the same held-out sets when refitted from the rows
    held_out = split.random(len(rows)) < 0.2
    held_out[split.integers(len(rows))] = True
    constants, fit = fit_constants(rows, held_out)
    out = args.out or (Path(tempfile.gettempdir()) / OUT.name if args.quick else OUT)
    shipped = json.loads((out if out.exists() else OUT).read_text())
    shipped["graph"] = {**constants, "measured": {
        **run.record(), "machine": machine(), "sets": len(rows), "held_out": int(held_out.sum()),
        "tables": list(tables), "timer": "p50 of single-row calls, one onnxruntime thread", **fit,
    }}  # fmt: skip
    out.write_text(json.dumps(shipped, indent=1, sort_keys=True) + "\n")
    print(f"wrote {out}: {constants}; held out: {fit}")


if __name__ == "__main__":
    main()
