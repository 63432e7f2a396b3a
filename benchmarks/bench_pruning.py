"""Dissertation §4.3.3, §4.3.4 and §4.3.6 on real data: library pruning (Fig. 4.4-4.5),
hillclimb-set size (Fig. 4.2) and Table 4.3's percent loss reduction of ensemble selection over
model selection, on the cross-validated libraries of ``bench_paper`` (its folds and store
layout; a library in ``--store`` is reused).

    python -m benchmarks.bench_pruning [--quick] [--store DIR] [--datasets a,b] [--folds 0,1]
                                       [--spec default] [--rows N] [--oof N] [--report]

Ensemble selection runs on a fold's out-of-fold hillclimb predictions and is scored on the
outer test fold (``--oof N``: on one stratified half of the out-of-fold predictions, scored on
the other, N times): pruning keeps the best ``fraction`` of members (with 20 bags and without);
the hillclimb size draws 100 to all cases (with and without bagging, MODSEL and BAYESAVG, with
BAYESAVG's effective number of members, 1 / sum of squared weights). Scores are
normalised per dataset, fold and metric (§4.3.1) and averaged. ``--rows N`` subsamples each
dataset first. Each library's scores go to ``RESULTS`` as one row with its provenance
(``--quick``: a temporary file); ``--report`` prints the tables from the rows.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks import datasets
from benchmarks._record import (
    ROOT,
    append_row,
    load_results,
    provenance,
    results_path,
    suite_parser,
)
from benchmarks.bench_paper import (
    DATASETS,
    SEED,
    fold_library,
    outer_folds,
    percent_loss_reduction,
    perfect_score,
)
from ensel.metrics import METRICS, baseline_score, score, score_batch
from ensel.selection import EnsembleSelection
from ensel.strategies import bayes_average, model_selection

RESULTS = ROOT / "benchmarks" / "results" / "pruning.jsonl"
FRACTIONS = (0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0)
SIZES = (100, 250, 500, 1000, None)
BAGGED_FRACTIONS = (0.05, 0.1, 0.2, 0.5, 1.0)
"""Fractions also run with 20 bags (every fraction runs without bagging): bagged runs cost 10x."""
UNBAGGED_SIZES = (250, 1000)
"""Hillclimb sizes run without bagging only."""


def load_fold(name: str, fold: int, spec: str, store: Path, rows: int | None):
    """(library, test predictions, test labels) of one outer fold; built if not in the store."""
    X, y, groups = getattr(datasets, name)()
    if rows is not None and rows < len(X):
        keep = np.sort(np.random.default_rng(SEED).choice(len(X), rows, replace=False))
        X, y = X.iloc[keep].reset_index(drop=True), y.iloc[keep].reset_index(drop=True)
        groups = None if groups is None else groups.iloc[keep].reset_index(drop=True)
    train, test = outer_folds(y, groups, 5)[fold]
    g_tr = None if groups is None else groups.iloc[train].reset_index(drop=True)
    X_tr, y_tr = X.iloc[train].reset_index(drop=True), y.iloc[train].reset_index(drop=True)
    lib = fold_library(X_tr, y_tr, g_tr, 5, spec, store / f"{name}-f{fold}-cv5")
    y_test = np.searchsorted(lib.classes, np.asarray(y.iloc[test]))
    return lib, np.asarray(lib.predict(X.iloc[test].reset_index(drop=True))), y_test


def es_test(P, y, P_test, y_test, metric, **options) -> float:
    es = EnsembleSelection(metric, random_state=SEED, **options).fit(P, y)
    return score(metric, y_test, np.tensordot(es.weights_, P_test, axes=1))


def load_oof(path: Path, split: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A stored library's out-of-fold hillclimb predictions split in two halves (stratified,
    seeded by ``split``): ``(P_hillclimb, y_hillclimb, P_test, y_test)``. Every prediction comes
    from a model that did not train on its row, so the halves are a hillclimb set and a test set
    of fixed models, the non-cross-validated setting of Fig. 4.4, with no refit and no
    prediction pass."""
    meta = json.loads((path / "predictions.json").read_text())
    P = np.asarray(np.load(path / meta["file"]), dtype=np.float64)
    y = np.load(path / "hillclimb.npz")["labels"]
    rng = np.random.default_rng([SEED, split])
    half = np.zeros(len(y), dtype=bool)
    for c in np.unique(y):
        rows = rng.permutation(np.flatnonzero(y == c))
        half[rows[: len(rows) // 2]] = True
    return P[:, half], y[half], P[:, ~half], y[~half]


def run_fold(P, y, P_test, y_test, quick: bool) -> list[dict]:
    """Rows ``{experiment, setting, bagging, metric, score}`` of one library."""
    P = np.asarray(P, dtype=np.float64)
    y = np.asarray(y)
    rows = []
    fractions = (0.1, 0.5, 1.0) if quick else FRACTIONS
    rng = np.random.default_rng(SEED)
    subsets = {
        size: np.sort(rng.choice(len(y), size, replace=False)) if size and size < len(y) else None
        for size in SIZES
    }
    for metric in METRICS:
        for bags in (20, 1):
            for fraction in fractions:
                if bags > 1 and fraction not in BAGGED_FRACTIONS:
                    continue
                value = es_test(P, y, P_test, y_test, metric, n_bags=bags, prune_fraction=fraction)
                rows.append(dict(experiment="prune", setting=fraction, bags=bags, metric=metric,
                                 score=value))  # fmt: skip
            for size, keep in subsets.items():
                if (keep is None and size is not None) or (bags > 1 and size in UNBAGGED_SIZES):
                    continue
                Ps, ys = (P, y) if keep is None else (P[:, keep], y[keep])
                if len(np.unique(ys)) < 2:
                    continue
                value = es_test(Ps, ys, P_test, y_test, metric, n_bags=bags)
                rows.append(dict(experiment="size", setting=size or len(y), bags=bags,
                                 metric=metric, score=value))  # fmt: skip
        for size, keep in subsets.items():
            if keep is None and size is not None:
                continue
            Ps, ys = (P, y) if keep is None else (P[:, keep], y[keep])
            weights = {
                0: model_selection(Ps, ys, metric, {}),
                -1: bayes_average(Ps, ys, metric, {}),
            }
            for bags, w in weights.items():
                value = score(metric, y_test, np.tensordot(w, P_test, axes=1))
                rows.append(dict(experiment="size", setting=size or len(y), bags=bags,
                                 metric=metric, score=value))  # fmt: skip
            effective = float(1.0 / np.sum(weights[-1] ** 2))  # BAYESAVG's members
            rows.append(dict(experiment="_bayes_members", setting=size or len(y), bags=-1,
                             metric=metric, score=effective))  # fmt: skip
        members = score_batch(metric, y_test, P_test)
        best = members.max() if metric not in ("rms", "mxe") else members.min()
        rows.append(dict(experiment="_top_member", setting=0, bags=0, metric=metric,
                         score=float(best)))  # fmt: skip
        rows.append(dict(experiment="_bottom", setting=0, bags=0, metric=metric,
                         score=baseline_score(metric, y_test)))  # fmt: skip
        rows.append(dict(experiment="_loss_floor", setting=0, bags=0, metric=metric,
                         score=perfect_score(metric, y_test)))  # fmt: skip
    return rows


def normalise(frame: pd.DataFrame) -> pd.DataFrame:
    """Normalised score per (dataset, fold, metric): 0 = best constant, 1 = best test score of
    any member or method."""
    out = []
    for _, part in frame.groupby(["dataset", "fold", "metric"]):
        metric = part["metric"].iloc[0]
        bottom = part.loc[part["experiment"] == "_bottom", "score"].iloc[0]
        real = part[~part["experiment"].str.startswith("_")]
        candidates = pd.concat([real["score"], part.loc[part["experiment"] == "_top_member",
                                                        "score"]])  # fmt: skip
        top = candidates.min() if metric in ("rms", "mxe") else candidates.max()
        out.append(real.assign(norm=(real["score"] - bottom) / (top - bottom)))
    return pd.concat(out, ignore_index=True)


def loss_reduction(frame: pd.DataFrame) -> pd.DataFrame:
    """Table 4.3 (its MEAN^cv row, per dataset): percent loss reduction of ES-CV (20 bags, all
    members, all hillclimb cases) against MODSEL-CV, loss = distance to a perfect score."""
    full = frame[(frame["experiment"] == "size")]
    largest = full.groupby(["dataset", "fold"])["setting"].transform("max")
    full = full[full["setting"] == largest]
    floor = frame[frame["experiment"] == "_loss_floor"].set_index(["dataset", "fold", "metric"])
    es = full[full["bags"] == 20].set_index(["dataset", "fold", "metric"])["score"]
    mod = full[full["bags"] == 0].set_index(["dataset", "fold", "metric"])["score"]
    reduction = percent_loss_reduction(es, mod, floor["score"].reindex(es.index))
    table = reduction.groupby(level=["dataset", "metric"]).mean().unstack("metric")[list(METRICS)]
    table.loc["MEAN"] = table.mean()
    table["MEAN"] = table.mean(axis=1)
    return table


def main(argv=None) -> None:
    parser = suite_parser(__doc__, RESULTS)
    parser.add_argument("--store", default=None, help="bench_paper's library store (resumable)")
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--folds", default="0", help="outer folds to use, e.g. 0,1")
    parser.add_argument("--spec", help="library spec (default: default; tiny with --quick)")
    parser.add_argument("--rows", type=int, default=None, help="subsample each dataset first")
    parser.add_argument(
        "--oof",
        type=int,
        default=0,
        help="use the stored libraries' out-of-fold "
        "predictions, split this many times into hillclimb and test halves",
    )
    parser.add_argument("--report", action="store_true", help="fit nothing; tables from rows")
    args = parser.parse_args(argv)
    results = results_path(args, RESULTS, "pruning")
    if not args.report:
        run(args, results)
    report(scores_frame(load_results(results)))


SCORE_FIELDS = ("experiment", "setting", "bags", "metric", "score")
"""A score of ``run_fold``, as a row's ``scores`` lists it."""


def run(args, results: Path) -> None:
    """Every dataset and fold of ``args``: one row per library (and split, with ``--oof``)
    appended to ``results`` with its scores and provenance as it finishes."""
    spec = args.spec or ("tiny" if args.quick else "default")
    store = Path(args.store or f"runs/pruning-{spec}")
    for name in args.datasets.split(","):
        for fold in [int(f) for f in args.folds.split(",")]:
            t = time.perf_counter()
            if args.oof:
                path = store / f"{name}-f{fold}-cv5"
                if not (path / "predictions.json").exists():
                    print(f"{name} fold {fold}: no library in {path}; skipped", flush=True)
                    continue
                parts = [load_oof(path, s) for s in range(args.oof)]
                members, n_rows = parts[0][0].shape[0], len(parts[0][1]) + len(parts[0][3])
            else:
                lib, P_test, y_test = load_fold(name, fold, spec, store, args.rows)
                parts = [(lib.predictions, lib.y, P_test, y_test)]
                members, n_rows = len(lib.members), len(lib.y)
            built = time.perf_counter() - t
            for split, part in enumerate(parts):
                scores = [[r[k] for k in SCORE_FIELDS] for r in run_fold(*part, args.quick)]
                append_row(results, {"dataset": name, "fold": f"{fold}.{split}", "spec": spec,
                                     "rows": args.rows, "members": members,
                                     "hillclimb_rows": n_rows,
                                     "scores": scores, **provenance()})  # fmt: skip
            print(f"{name} fold {fold} ({members} members, {n_rows} hillclimb rows): library "
                  f"{built:.0f} s, selection {time.perf_counter() - t - built:.0f} s, load "
                  f"{os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip


def scores_frame(results: list[dict]) -> pd.DataFrame:
    """The scores of ``run``'s rows, one per line: dataset, fold and ``SCORE_FIELDS``."""
    return pd.DataFrame(
        [
            {"dataset": r["dataset"], "fold": r["fold"], **dict(zip(SCORE_FIELDS, s, strict=True))}
            for r in results
            for s in r["scores"]
        ]
    )


SIZE_METHODS = {20: "ES (20 bags)", 1: "ES (no bags)", 0: "MODSEL", -1: "BAYESAVG"}
"""The hillclimb-size experiment's methods by their ``bags`` code."""


def _size_labels(part: pd.DataFrame) -> list[str]:
    """Each row's hillclimb size as a label: ``"all"`` for its fold's largest (the whole
    out-of-fold set, whose size differs a row or two between folds), else the number."""
    largest = part.groupby(["dataset", "fold"])["setting"].transform("max")
    return [
        "all" if s == top else str(int(s)) for s, top in zip(part["setting"], largest, strict=True)
    ]


def size_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per dataset and hillclimb rows: each method's normalised score (mean over the eight
    metrics and the folds) and BAYESAVG's effective number of members (mean over metrics and
    folds): how selection and averaging fare as the hillclimb set grows."""
    norm = normalise(frame)
    size = norm[norm["experiment"] == "size"]
    size = size.assign(setting=_size_labels(size))
    table = size.pivot_table(index=["dataset", "setting"], columns="bags", values="norm")
    table = table[[b for b in SIZE_METHODS if b in table.columns]].rename(columns=SIZE_METHODS)
    members = frame[frame["experiment"] == "_bayes_members"]
    if not members.empty:
        members = members.assign(setting=_size_labels(members))
        effective = members.groupby(["dataset", "setting"])["score"].mean()
        table["BAYESAVG members"] = effective.reindex(table.index)
    order = sorted(
        table.index, key=lambda k: (k[0], k[1] == "all", int(k[1]) if k[1] != "all" else 0)
    )
    return table.loc[order].rename_axis(index=["dataset", "hillclimb rows"], columns=None)


def report(frame: pd.DataFrame) -> None:
    """Print the pruning (Fig. 4.4) and hillclimb-size (Fig. 4.2) tables, normalised scores
    averaged over folds and datasets, the size table per dataset, and Table 4.3's MEAN^cv row
    per dataset."""
    norm = normalise(frame)
    size = norm[norm["experiment"] == "size"]
    size = size.assign(setting=_size_labels(size))
    for title, part in (("pruning", norm[norm["experiment"] == "prune"]), ("hillclimb size", size)):
        table = part.pivot_table(index=["bags", "setting"], columns="metric", values="norm")
        table = table[list(METRICS)]
        table["MEAN"] = table.mean(axis=1)
        print(f"\n{title} (bags: 20, 1 = none, 0 = MODSEL, -1 = BAYESAVG)\n"
              f"{table.round(3).to_string()}")  # fmt: skip
    print(f"\nhillclimb size per dataset\n{size_table(frame).round(3).to_string()}")
    print(f"\nTable 4.3, MEAN^cv per dataset\n{loss_reduction(frame).round(2).to_string()}")


if __name__ == "__main__":
    main()
