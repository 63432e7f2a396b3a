"""Tables 4.1-4.5 of the dissertation on real data: ES, MODSEL and BAYESAVG on libraries of
uncalibrated (NOCAL), Platt-calibrated (CAL) and both kinds of members (BOTH), with and without
embedded 5-fold cross-validation (CV), as normalised scores per metric and their mean; Table
4.3, the percent loss reduction of ES-CV against MODSEL; Table 4.4's breakdown of
cross-validation's gain (ES-HILL, ES-AVG: ``_paper_libraries``); and Table 4.5, §4.3.5's proxy
metrics.

    python -m benchmarks.bench_paper [--quick] [--datasets pima,biopsy,...] [--store DIR]
                                     [--spec NAME] [--time-limit S] [--results FILE] [--report]

Each dataset is split into ``FOLDS`` stratified outer folds (grouped where rows share a
patient), and for each fold the library (`default` spec unless ``--spec``, `tiny` with
--quick; the whole spec unless ``--time-limit``) is built on the
other folds twice: cv=5, and cv=None (a 20% hillclimb split). CALHC and BOTHHC calibrate the
uncalibrated members on the hillclimb set itself, as §4.3.1 does. Raw test scores are averaged
over folds (a single 70/30 split is too noisy on a few hundred rows), then normalised per
dataset and metric (§4.3.1, App. 4.D): 0 = the best constant prediction, 1 = the best
fold-averaged score of any member or method. Each dataset and fold appends one row to
``--results`` (a rerun skips the folds already there); ``--report`` prints the tables from
the rows, and ``benchmarks.papers_report`` puts them in docs/papers.md.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold

from benchmarks import datasets
from benchmarks._paper_libraries import (
    breakdown_scores,
    hillclimb_folds,
    member_libraries,
    sibling_predictions,
    table_4_4,
)
from benchmarks._record import (
    ROOT,
    PeakMemory,
    append_row,
    load_results,
    provenance,
    results_path,
    suite_parser,
)
from ensel.library import build_library
from ensel.metrics import (
    LIFT_FRACTION,
    METRICS,
    baseline_score,
    greater_is_better,
    score,
    score_batch,
)
from ensel.strategies import STRATEGIES

DATASETS = ("breast_cancer", "pima", "biopsy", "participation", "turnout")
PROXIES = ("rms", "mxe", "roc", "acc")
FOLDS = 5
SEED = 0
RESULTS = ROOT / "benchmarks" / "results" / "paper_tables_4.jsonl.gz"
"""Gzipped: every member's score of every fold keeps the rows a few megabytes as text."""


def outer_folds(y: pd.Series, groups: pd.Series | None, n_folds: int):
    """(train, test) index pairs of stratified outer folds; whole groups stay on one side."""
    if groups is None:
        splitter = StratifiedKFold(n_folds, shuffle=True, random_state=SEED)
        return list(splitter.split(np.zeros(len(y)), y))
    splitter = StratifiedGroupKFold(n_folds, shuffle=True, random_state=SEED)
    return list(splitter.split(np.zeros(len(y)), y, groups))


def fold_library(X, y, groups, cv, spec: str, store: Path, time_limit: float | None = None):
    """The library of one outer fold's training rows, built into ``store`` (or read back from
    it: the stores are resumable, and ``bench_pruning`` reuses them); ``time_limit`` seconds
    where given, else the whole spec."""
    return build_library(
        X, y, spec=spec, cv=cv, groups=groups, store=store, n_jobs=2, time_limit=time_limit,
        random_state=SEED, verbose=0,
    )  # fmt: skip


def run_dataset(
    name: str,
    spec: str,
    n_folds: int,
    store: Path,
    results: Path | None = None,
    time_limit: float | None = None,
    skip: frozenset[int] = frozenset(),
):
    """Score rows ``{dataset, fold, method, metric, score}`` of every fold of one dataset but
    those in ``skip``; methods starting with ``_member:`` are single library members,
    ``_bottom`` the best constant prediction. Each fold's scores are appended to ``results`` as
    one JSON row with its provenance (commit, versions, machine, load, peak memory)."""
    X, y, groups = getattr(datasets, name)()
    rows, info = [], {"rows": len(X), "test": []}
    for fold, (train, test) in enumerate(outer_folds(y, groups, n_folds)):
        if fold in skip:
            continue
        X_tr, X_te = X.iloc[train].reset_index(drop=True), X.iloc[test].reset_index(drop=True)
        y_tr, y_te = y.iloc[train].reset_index(drop=True), y.iloc[test]
        g_tr = None if groups is None else groups.iloc[train].reset_index(drop=True)
        info["test"].append(len(test))
        got, members = [], {}
        with PeakMemory() as memory:
            for cv in (5, None):
                start = time.perf_counter()
                where = store / f"{name}-f{fold}-cv{cv}"
                lib = fold_library(X_tr, y_tr, g_tr, cv, spec, where, time_limit)
                key = f"build cv={cv}"
                info[key] = info.get(key, 0.0) + time.perf_counter() - start
                members[f"cv={cv}"] = int(lib.n_members)
                y_test = np.searchsorted(lib.classes, np.asarray(y_te))
                P_test = lib.predict(X_te)
                got += [(m, k, v) for m, k, v in _scores(lib, P_test, y_test, cv)]
                if cv:
                    folds = hillclimb_folds(lib, X_tr, y_tr, g_tr, cv)
                    got += list(_breakdown(lib, X_te, P_test, y_test, folds))
        rows += [
            {"dataset": name, "fold": fold, "method": m, "metric": k, "score": v} for m, k, v in got
        ]
        if results is not None:
            setup = {"spec": spec, "time_limit": time_limit, "folds": n_folds, "members": members}
            _append(results, name, fold, setup, got, memory.peak_mb)
    return rows, info


def _breakdown(lib, X_te, P_test, y_test, folds):
    """Table 4.4's ES-HILL and ES-AVG on the cross-validated library's NOCAL members."""
    none = (lib.members["calibration"] == "none").to_numpy()
    ids = list(lib.members["id"][none])
    P = np.asarray(lib.predictions, dtype=np.float64)[none]
    siblings = sibling_predictions(lib, X_te, ids)
    return breakdown_scores(P, lib.y, folds, siblings, P_test[none], y_test)


def _append(path: Path, name, fold, setup: dict, got, peak_mb) -> None:
    """One JSON row per (dataset, outer fold): every score, the run's ``setup`` (spec, time
    limit, folds, library sizes) and its provenance."""
    scores: dict = {}
    for method, metric, value in got:  # 6 decimals: the tables show 3 (percentages 2)
        scores.setdefault(method, {})[metric] = round(float(value), 6)
    row = {
        "dataset": name, "fold": fold, **setup, "scores": scores, "peak_mb": round(peak_mb, 1),
        **provenance(),
    }  # fmt: skip
    append_row(path, row)


def rows_from_results(results: list[dict]) -> list[dict]:
    """The score rows of ``run_dataset`` back from the JSON rows it appended."""
    return [
        {"dataset": r["dataset"], "fold": r["fold"], "method": m, "metric": k, "score": v}
        for r in results
        for m, by_metric in r["scores"].items()
        for k, v in by_metric.items()
    ]


def _scores(lib, P_test: np.ndarray, y_test: np.ndarray, cv):
    """(method, metric, test score) of every strategy x library x metric on one fold (the
    libraries of ``member_libraries``, calibration cross-fitted or on the hillclimb set), the
    §4.3.5 proxies (cv only), every member and the best constant prediction."""
    suffix = "-CV" if cv else ""
    libraries = member_libraries(lib, P_test)
    for lib_name, (P, P_te, _) in libraries.items():
        for strategy, combine in STRATEGIES.items():
            for metric in METRICS:
                w = combine(P, lib.y, metric, {"random_state": SEED})
                proba = np.tensordot(w, P_te, axes=1)
                yield f"{strategy.upper()}-{lib_name}{suffix}", metric, score(metric, y_test, proba)
    if cv:  # §4.3.5: select for a proxy metric, score on every target metric
        P, P_te, _ = libraries["BOTH"]
        for proxy in PROXIES:
            w = STRATEGIES["es"](P, lib.y, proxy, {"random_state": SEED})
            proba = np.tensordot(w, P_te, axes=1)
            for metric in METRICS:
                yield f"proxy:{proxy}", metric, score(metric, y_test, proba)
    _, hc_test, hc_ids = libraries["CALHC"]
    ids = np.concatenate([lib.members["id"].to_numpy(), hc_ids])
    P_all = np.concatenate([P_test, hc_test])
    for metric in METRICS:  # every member, for the top of the normalised scale
        for member, value in zip(ids, score_batch(metric, y_test, P_all), strict=True):
            yield f"_member{suffix}:{member}", metric, float(value)
        if cv:
            yield "_bottom", metric, baseline_score(metric, y_test)
            yield "_perfect", metric, perfect_score(metric, y_test)


def perfect_score(metric: str, y: np.ndarray) -> float:
    """The score of a perfect prediction, from which Table 4.3 measures loss (lift's is
    ``min(1 / LIFT_FRACTION, N / positives)``: every positive in the top fraction)."""
    if metric == "lft":
        return min(1.0 / LIFT_FRACTION, len(y) / max(1, int(y.sum()))) if y.ndim == 1 else 0.0
    return 0.0 if metric in ("rms", "mxe") else 1.0


def percent_loss_reduction(ours: pd.Series, theirs: pd.Series, perfect: pd.Series) -> pd.Series:
    """Table 4.3's measure: how much of ``theirs``'s loss ``ours`` removes, in percent, loss =
    distance to the ``perfect`` score (NaN where theirs has no loss)."""
    loss_ours, loss_theirs = (ours - perfect).abs(), (theirs - perfect).abs()
    return 100 * (loss_theirs - loss_ours) / loss_theirs.where(loss_theirs > 0)


def loss_reduction(means: pd.DataFrame, ours: str, theirs: str) -> pd.DataFrame:
    """Table 4.3: percent loss reduction of method ``ours`` against ``theirs`` per (dataset,
    metric), on fold-averaged raw scores."""
    raw = means.pivot_table(index=["dataset", "metric"], columns="method", values="score")
    reduction = percent_loss_reduction(raw[ours], raw[theirs], raw["_perfect"])
    return reduction.unstack("metric")[list(METRICS)]


def _best(metric: str, scores) -> float:
    scores = np.asarray(scores, dtype=np.float64)
    return float(scores.max() if greater_is_better(metric) else scores.min())


def fold_means(rows: list[dict]) -> pd.DataFrame:
    """Raw score of each (dataset, method, metric) averaged over the folds; members missing
    from a fold (a failed run) are left out."""
    frame = pd.DataFrame(rows)
    n_folds = frame.groupby("dataset")["fold"].nunique()
    grouped = frame.groupby(["dataset", "method", "metric"])["score"]
    mean = grouped.mean().reset_index()
    complete = grouped.count().to_numpy() == n_folds.loc[mean["dataset"]].to_numpy()
    return mean[complete].reset_index(drop=True)


def scales(means: pd.DataFrame) -> pd.DataFrame:
    """Bottom and top of the §4.3.1 scale per (dataset, metric), one scale per problem as in
    App. 4.D: the fold-averaged best constant prediction, and the best fold-averaged score of
    any member or method."""
    out = {}
    for (ds, metric), part in means.groupby(["dataset", "metric"]):
        bottom = float(part.loc[part["method"] == "_bottom", "score"].iloc[0])
        top = _best(metric, part.loc[~part["method"].isin(["_bottom", "_perfect"]), "score"])
        if top == bottom:
            raise ValueError(f"cannot normalise {metric} on {ds}: no member beats a constant")
        out[ds, metric] = {"bottom": bottom, "top": top}
    return pd.DataFrame(out).T.rename_axis(["dataset", "metric"])


def normalise(frame: pd.DataFrame, scale: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (columns dataset, metric, score) with ``norm`` on the dataset's scale; rows of
    members and the constant (methods starting with ``_``) dropped."""
    frame = frame[~frame["method"].str.startswith("_")]
    s = scale.loc[pd.MultiIndex.from_frame(frame[["dataset", "metric"]])].to_numpy()
    return frame.assign(norm=(frame["score"].to_numpy() - s[:, 0]) / (s[:, 1] - s[:, 0]))


def main(argv=None) -> None:
    parser = suite_parser(__doc__, RESULTS)
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--store", help="directory that keeps the libraries (resumable)")
    parser.add_argument("--spec", help="library spec (default: `default`; `tiny` with --quick)")
    parser.add_argument("--time-limit", type=float, help="seconds per fold library (default: none)")
    parser.add_argument("--report", action="store_true", help="fit nothing; tables from rows")
    args = parser.parse_args(argv)
    spec = args.spec or ("tiny" if args.quick else "default")
    results = results_path(args, RESULTS, "paper_tables_4")
    if not args.report:
        done = {(r["dataset"], r["fold"]) for r in load_results(results)}
        with tempfile.TemporaryDirectory() as tmp:
            store = Path(args.store or tmp)
            for name in args.datasets.split(","):
                start = time.perf_counter()
                skip = frozenset(fold for ds, fold in done if ds == name)
                run_dataset(name, spec, FOLDS, store, results, args.time_limit, skip)
                print(f"{name}: {time.perf_counter() - start:.0f} s", flush=True)
    for title, table in tables(rows_from_results(load_results(results))).items():
        print(f"\n{title}\n{table.round(3).to_string()}")


def tables(rows: list[dict]) -> dict[str, pd.DataFrame]:
    """Tables 4.1-4.4 and §4.3.5's proxy table from score rows: mean normalised score per
    method and metric (sorted by MEAN), per dataset, the proxies, Table 4.3 and Table 4.4."""
    means = fold_means(rows)
    full = normalise(means, scales(means))
    table = full[~full["method"].str.startswith("proxy:")]
    per_method = table.pivot_table(index="method", columns="metric", values="norm")[list(METRICS)]
    per_method["MEAN"] = per_method.mean(axis=1)
    per_method = per_method.sort_values("MEAN", ascending=False)
    per_dataset = table.groupby(["dataset", "method"])["norm"].mean().unstack("dataset")
    return {
        "Tables 4.1-4.2": per_method,
        "per dataset": per_dataset.loc[per_method.index],
        "§4.3.5 proxies": _proxy_table(full),
        "Table 4.3": table_4_3(means),
        "Table 4.4": table_4_4(table),
    }


def table_4_3(means: pd.DataFrame) -> pd.DataFrame:
    """Table 4.3's layout: per dataset, ES-CV's percent loss reduction against MODSEL without
    cross-validation; their MEAN; and MEAN^cv, the mean reduction against MODSEL-CV (on the
    library of both kinds of members, as the dissertation's holds every model)."""
    table = loss_reduction(means, "ES-BOTH-CV", "MODSEL-BOTH")
    table.loc["MEAN"] = table.mean()
    table.loc["MEAN^cv"] = loss_reduction(means, "ES-BOTH-CV", "MODSEL-BOTH-CV").mean()
    table["MEAN"] = table.mean(axis=1)
    return table


def _proxy_table(full: pd.DataFrame) -> pd.DataFrame:
    """Mean normalised score per target metric of ES-BOTH-CV selecting for the target itself
    and for each proxy metric (§4.3.5)."""
    direct = full[full["method"] == "ES-BOTH-CV"].groupby("metric")["norm"].mean()
    rows = {"the target metric": direct}
    for proxy in PROXIES:
        part = full[full["method"] == f"proxy:{proxy}"]
        rows[proxy] = part.groupby("metric")["norm"].mean()
    table = pd.DataFrame(rows).T[list(METRICS)]
    table["MEAN"] = table.mean(axis=1)
    return table


if __name__ == "__main__":
    main()
