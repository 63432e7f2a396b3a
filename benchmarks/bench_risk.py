"""Extrapolation-risk detectors on the Sandia protocol (Munson & Kegelmeyer, SAND2013-2534, §4):
how well each detector ranks and estimates the exact true risk on synthetic Gaussian and
rotated-ridge mixtures in d = 2, 5, 10 (§4.1), how well it finds a class withheld at training on
real data (§4.2, AUC), and its fit and predict time on 4,000 x 10 data.

    python -m benchmarks.bench_risk [--quick | --paper] [--table1] [--problems N] [--n-jobs 2]
                                    [--results FILE.jsonl]

``--paper`` runs the report's sizes (``PAPER``: 20 problems per setting, 4,000 training rows in
5-D and 10-D, 3,000 line-search points, a 114 x 114 grid in 2-D, 5 x 2-fold cross-validation on
real data); ``--results`` appends every per-problem row, with its provenance, to a JSON-lines
file (paper_risk.jsonl.gz by convention).

``--table1`` runs only the report's Table 1 (§3): CERT forests with and without reduced-error
pruning on the ridge problems at the report's sizes (``PAPER``; ``--quick``: ``QUICK``), the
same problems, training rows and test points as the Table 3 rows, one row per problem and
forest (paper_risk_table1.jsonl by convention): 240 forests, tens of minutes on 2 cores.

Every registered detector runs with its default parameters (``random_state`` set; ``bounds`` the
known support [-10, 10]^d on synthetic data, as the report's box risk uses, the training range
on real data), beside scikit-learn's isolation forest, LOF and a KDE (registered as peers) and
``CombinedRisk``. Builtin detectors get the class of the mixture component a row came from
(class A or B, §4.1) as its label. Detectors not yet registered are skipped with a note.
The tables are printed; docs/papers.md shows them from the rows (benchmarks.papers_report).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from scipy.stats import spearmanr
from sklearn.isotonic import IsotonicRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import KFold, StratifiedKFold
from threadpoolctl import threadpool_limits

from benchmarks import _record, sandia_tables
from benchmarks import risk_problems as rp
from benchmarks._predict_timing import median_seconds
from benchmarks._record import provenance

ORDER = (
    "box",
    "cert",
    "cert_forest",
    "chaos_forest",
    "fspt",
    "margin",
    "dispersion",
    "openset_forest",
    "isolation_forest",
    "lof",
    "kde",
    "combined",
)
PEERS = ("isolation_forest", "lof", "kde")
FORESTS = ("cert_forest", "chaos_forest")
SETTINGS = tuple((kind, d) for kind in ("gaussian", "ridge") for d in (2, 5, 10))


@dataclass(frozen=True)
class Sizes:
    """Problem sizes, scaled to fit the run in about 15 minutes on 2 cores (``--quick``: about
    2). The report trains on 1,000 rows (d = 2) or 4,000 (d = 5, 10), tests on a grid of about
    13,000 points (d = 2) or 3,000 line-search points, runs 20 problems per setting and 5 x
    2-fold cross-validation on real data. ``combined`` fits every default detector once per
    fold (5 folds), about four times the cost of all of them together, so on synthetic data it
    runs on the first ``combined_problems`` problems of each setting only."""

    problems: int = 10
    n_train: dict[int, int] = field(default_factory=lambda: {2: 1000, 5: 1000, 10: 1000})
    grid_per_axis: int = 70
    n_test: int = 1500
    combined_problems: int = 1
    unknown_repeats: int = 1  # repeats of 2-fold cross-validation
    unknown_sets: tuple[str, ...] = ("iris", "wine", "breast_cancer", "biopsy", "pima")
    withhold_every_class: bool = True  # multi-class sets: each class in turn, else the smallest
    timing_rows: int = 4000
    timing_repeats: int = 3  # predict; fit once (the combined fit alone takes minutes)


FULL = Sizes()
QUICK = Sizes(
    problems=2,
    n_train={2: 300, 5: 400, 10: 400},
    grid_per_axis=40,
    n_test=500,
    combined_problems=0,
    unknown_sets=("iris", "wine", "breast_cancer"),
    withhold_every_class=False,
    timing_rows=1000,
    timing_repeats=1,
)
PAPER = Sizes(
    problems=20,
    n_train={2: 1000, 5: 4000, 10: 4000},
    grid_per_axis=114,
    n_test=3000,
    unknown_repeats=5,
)
"""The report's scale (§4.1-4.2): 20 problems per setting, 1,000 training rows in 2-D and
4,000 in 5-D and 10-D, a grid of about 13,000 points in 2-D (114 per axis) and 3,000
line-search points otherwise, 5 x 2-fold cross-validation on real data."""


def append_rows(
    path: Path, frame: pd.DataFrame, part: str, sizes: Sizes, n_jobs: int | None = None
) -> None:
    """Append each row of ``frame`` (one problem and detector) to ``path`` as JSON, with the
    part of the suite it came from, the sizes, the machine's cores, the processes the run
    used and the run's provenance."""
    extra = {"part": part, "sizes": asdict(sizes), "host": f"{os.cpu_count()} cores"}
    extra |= {"n_jobs": n_jobs, **provenance()}  # provenance names the machine
    rows = frame.astype(object).where(frame.notna(), None).to_dict("records")  # NaN as null
    _record.append_rows(path, [{**row, **extra} for row in rows])


# --- detectors ---------------------------------------------------------------------------------


def available_detectors() -> list[str]:
    """Registered detectors in report order (others after them) plus ``combined`` when
    ``ensel.risk.CombinedRisk`` exists; prints a note for each expected one that is missing."""
    import ensel.risk as risk

    risk.load_all()
    names = [n for n in ORDER if n in risk.DETECTORS]
    names += sorted(set(risk.DETECTORS) - set(ORDER))
    try:
        risk.CombinedRisk  # noqa: B018
        names.append("combined")
    except (AttributeError, ImportError):
        pass
    missing = [n for n in ORDER if n not in names]
    if missing:
        print(f"note: not registered yet, skipped: {', '.join(missing)}")
    return names


def requires_y(name: str) -> bool:
    import ensel.risk as risk

    risk.load_all()  # a worker process starts with an empty registry
    return name != "combined" and risk.DETECTORS[name].requires_y


def build(name: str, bounds, seed: int, params: dict | None = None):
    """Detector ``name`` with default parameters (but ``params``), ``random_state=seed`` and
    ``bounds``."""
    import ensel.risk as risk

    risk.load_all()  # a worker process starts with an empty registry
    det = risk.CombinedRisk() if name == "combined" else risk.DETECTORS[name]()
    known = det.get_params()
    if "random_state" in known:
        det.set_params(random_state=seed)
    if "bounds" in known and bounds is not None:
        det.set_params(bounds=bounds)
    return det.set_params(**(params or {}))


def fit_risk(
    name: str, X, y, T, bounds, seed: int, params: dict | None = None
) -> tuple[np.ndarray | None, float, float, str]:
    """Risk of ``T`` from detector ``name`` (with ``params``) fitted on ``X`` (``y`` when it
    reads labels), with fit and predict seconds; on an error, None and the message (the run
    goes on)."""
    det = build(name, bounds, seed, params)
    labels = y if (name == "combined" or requires_y(name)) else None
    try:
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            det.fit(X, labels)
            fit_s = time.perf_counter() - start
            start = time.perf_counter()
            r = np.asarray(det.risk(T), dtype=float)
        return r, fit_s, time.perf_counter() - start, ""
    except Exception as exc:  # a broken detector is reported, not fatal
        return None, float("nan"), float("nan"), f"{type(exc).__name__}: {exc}"


# --- figures -----------------------------------------------------------------------------------


def spearman(score: np.ndarray, truth: np.ndarray) -> float:
    """Spearman correlation; 0 for a constant score (it ranks nothing, e.g. box risk inside
    the box)."""
    if np.ptp(score) == 0:
        return 0.0
    return float(spearmanr(score, truth).statistic)


def rmse(score: np.ndarray, truth: np.ndarray) -> float:
    return float(np.sqrt(np.mean((score - truth) ** 2)))


def isotonic_rmse_report(score: np.ndarray, truth: np.ndarray) -> float:
    """RMSE after an increasing isotonic map from score to true risk fitted on the very test
    points it scores: the Sandia report's evaluation protocol for margin and FDR (§4.1, Tables
    2-3: "this calibration uses the true risk scores from the test set", a best case). Used only
    to reproduce the report's rows; the estimator never calibrates this way."""
    iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip")
    return rmse(iso.fit(score, truth).predict(score), truth)


def isotonic_rmse(score: np.ndarray, truth: np.ndarray, seed: int, folds: int = 5) -> float:
    """RMSE after an increasing isotonic map from score to true risk, cross-fitted over the
    test points: each fifth is calibrated by a map fitted on the other four fifths. The report
    (§4.1) fits the map on the very points it scores, which flatters the builtin detectors."""
    out = np.empty_like(truth)
    for fit, held in KFold(folds, shuffle=True, random_state=seed).split(score):
        iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip")
        out[held] = iso.fit(score[fit], truth[fit]).predict(score[held])
    return rmse(out, truth)


# --- synthetic problems (§4.1) -----------------------------------------------------------------


def problem_data(kind: str, d: int, seed: int, sizes: Sizes):
    """Problem ``seed`` of a setting, its training rows and labels, its test points and their
    true risk: the same for every part of the suite that runs that problem at those sizes."""
    with threadpool_limits(1, user_api="blas"):
        problem = rp.make_problem(kind, d, seed)
        X, y = problem.sample(sizes.n_train[d], random_state=[seed, 2])
        if d == 2:
            T = rp.grid_points(problem, sizes.grid_per_axis)
        else:
            T = rp.line_search_points(problem, sizes.n_test, random_state=[seed, 3])
        truth = problem.true_risk(T)
    return problem, X, y, T, truth


def synthetic_problem(kind: str, d: int, seed: int, names: list[str], sizes: Sizes) -> list[dict]:
    """Every detector's figures on problem ``seed`` of a setting."""
    problem, X, y, T, truth = problem_data(kind, d, seed, sizes)
    rows = []
    for name in names:
        if name == "combined" and seed >= sizes.combined_problems:
            continue
        r, fit_s, pred_s, error = fit_risk(name, X, y, T, problem.bounds, seed)
        row = {"kind": kind, "d": d, "problem": seed, "detector": name, "error": error}
        row |= {"fit_s": fit_s, "predict_s": pred_s, "floor": float(truth.std())}
        if r is not None:
            row |= {
                "spearman": spearman(r, truth),
                "rmse": rmse(r, truth),
                "iso_rmse": isotonic_rmse(r, truth, seed),
                "iso_rmse_report": isotonic_rmse_report(r, truth),
            }
        rows.append(row)
    return rows


def run_synthetic(names: list[str], sizes: Sizes, n_jobs: int) -> pd.DataFrame:
    tasks = [(kind, d, s) for kind, d in SETTINGS for s in range(sizes.problems)]
    out = Parallel(n_jobs=n_jobs, verbose=0)(
        delayed(synthetic_problem)(kind, d, s, names, sizes) for kind, d, s in tasks
    )
    return pd.DataFrame([row for rows in out for row in rows])


# --- Table 1: pruned and unpruned CERT forests (§3) --------------------------------------------

TABLE1_FORESTS = tuple(
    {"min_samples_leaf": leaf, "prune": prune} for leaf in (1, 5) for prune in ("error", None)
)
"""The CERT forests of report Table 1: pruned by reduced-error pruning (each tree grown on a
bootstrap sample of half the rows, pruned on one of the other half) and unpruned, each with
full-size trees (``min_samples_leaf=1``, as the report grows them) and with CERTForest's
default leaves of at least 5 rows (the unpruned one is the Table 3 rows' ``cert_forest``)."""


def table1_problem(d: int, seed: int, sizes: Sizes) -> list[dict]:
    """The raw RMSE of each Table 1 forest's risk against the true risk (the report's figure)
    on ridge problem ``seed`` in ``d`` dimensions, with its fit and predict seconds."""
    problem, X, _, T, truth = problem_data("ridge", d, seed, sizes)
    rows = []
    for params in TABLE1_FORESTS:
        r, fit_s, pred_s, error = fit_risk("cert_forest", X, None, T, problem.bounds, seed, params)
        row = {"kind": "ridge", "d": d, "problem": seed, "detector": "cert_forest", **params}
        row |= {"error": error, "fit_s": fit_s, "predict_s": pred_s, "floor": float(truth.std())}
        if r is not None:
            row["rmse"] = rmse(r, truth)
        rows.append(row)
    return rows


def run_table1(sizes: Sizes, n_jobs: int) -> pd.DataFrame:
    tasks = [(d, s) for d in (2, 5, 10) for s in range(sizes.problems)]
    out = Parallel(n_jobs=n_jobs, verbose=0)(delayed(table1_problem)(d, s, sizes) for d, s in tasks)
    return pd.DataFrame([row for rows in out for row in rows])


def table1_main(sizes: Sizes, n_jobs: int, results: str | None) -> None:
    """Run Table 1, append its rows to ``results`` (when given) and print the table the docs
    show (``sandia_tables.table1_cells``) and any errors."""
    wall = time.perf_counter()
    frame = run_table1(sizes, n_jobs)
    if results:
        append_rows(Path(results), frame, "table1", sizes, n_jobs)
    print(sandia_tables.table1_cells(frame).to_string(index=False, float_format="{:.4f}".format))
    for r in frame[frame["error"] != ""].itertuples():
        print(f"error: {r.d}-D problem {r.problem}, {r.prune}, {r.min_samples_leaf}: {r.error}")
    print(f"\nwall: {time.perf_counter() - wall:.0f} s")


# --- unknown class (§4.2) ----------------------------------------------------------------------


def load_unknown_set(name: str, every_class: bool = True) -> tuple[pd.DataFrame, np.ndarray, list]:
    """Features, labels and the classes to withhold in turn: every class of a multi-class set
    (or its smallest, ``every_class=False``); the minority class of a binary one (the report
    withholds an infrequent or distinct class)."""
    from benchmarks import datasets

    if name in ("iris", "wine"):
        from sklearn import datasets as skd

        X, y = getattr(skd, f"load_{name}")(return_X_y=True, as_frame=True)
        y = y.to_numpy()
    else:
        X, y, _ = getattr(datasets, name)()
        y = np.asarray(y)
    classes, counts = np.unique(y, return_counts=True)
    every = every_class and len(classes) > 2
    withheld = list(classes) if every else [classes[np.argmin(counts)]]
    return X.reset_index(drop=True), y, withheld


def unknown_task(data: str, X, y, unknown, rep: int, names: list[str]) -> list[dict]:
    """Both folds of one 2-fold split: fit on the training fold without the unknown class,
    AUC of ranking the unknown class first on the other fold."""
    rows = []
    split = StratifiedKFold(2, shuffle=True, random_state=rep).split(X, y)
    for fold, (train, test) in enumerate(split):
        train = train[y[train] != unknown]
        y_train = y[train]
        positive = (y[test] == unknown).astype(int)
        one_class = np.unique(y_train).size < 2
        for name in names:
            row = {"dataset": data, "withheld": str(unknown), "repeat": rep, "fold": fold}
            row["detector"] = name
            if one_class and requires_y(name):
                row["error"] = "one known class: a builtin detector needs two"
                rows.append(row)
                continue
            labels = None if one_class else y_train
            r, fit_s, _, error = fit_risk(
                name, X.iloc[train], labels, X.iloc[test], None, 1000 * rep + fold
            )
            row |= {"error": error, "fit_s": fit_s}
            if r is not None:
                row["auc"] = float(roc_auc_score(positive, r))
            rows.append(row)
    return rows


def run_unknown(names: list[str], sizes: Sizes, n_jobs: int) -> pd.DataFrame:
    tasks = []
    for data in sizes.unknown_sets:
        X, y, withheld = load_unknown_set(data, sizes.withhold_every_class)
        tasks += [(data, X, y, u, rep) for u in withheld for rep in range(sizes.unknown_repeats)]
    out = Parallel(n_jobs=n_jobs, verbose=0)(delayed(unknown_task)(*t, names) for t in tasks)
    return pd.DataFrame([row for rows in out for row in rows])


# --- time on 4,000 x 10 ------------------------------------------------------------------------


def run_timing(names: list[str], sizes: Sizes) -> pd.DataFrame:
    """Fit seconds (one fit) and median predict seconds on ``timing_rows`` training and test rows
    of a 10-D ridge problem, one detector at a time in this process."""
    n = sizes.timing_rows
    with threadpool_limits(1, user_api="blas"):
        problem = rp.make_problem("ridge", 10, 0)
        X, y = problem.sample(n, random_state=0)
        T, _ = problem.sample(n, random_state=1)
    for name in names:  # warm up (numba compiles on first use)
        if name != "combined":
            fit_risk(name, X[:300], y[:300], T[:10], problem.bounds, 0)
    rows = []
    for name in names:
        det = build(name, problem.bounds, 0)
        labels = y if (name == "combined" or requires_y(name)) else None
        row = {"detector": name, "fit_s": np.nan, "predict_s": np.nan, "error": ""}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                start = time.perf_counter()
                det.fit(X, labels)
                row["fit_s"] = time.perf_counter() - start
                row["predict_s"] = median_seconds(lambda d=det: d.risk(T), sizes.timing_repeats)
        except Exception as exc:
            row["error"] = f"{type(exc).__name__}: {exc}"
        rows.append(row)
    return pd.DataFrame(rows)


# --- tables and targets ------------------------------------------------------------------------


def setting_label(kind: str, d: int) -> str:
    return f"{'Gauss' if kind == 'gaussian' else 'ridge'} {d}-D"


def synthetic_table(syn: pd.DataFrame, figure: str, names: list[str]) -> pd.DataFrame:
    """Mean of ``figure`` per detector (rows) and setting (columns)."""
    table = syn.pivot_table(index="detector", columns=["kind", "d"], values=figure, aggfunc="mean")
    table = table.reindex(index=names, columns=pd.MultiIndex.from_tuples(SETTINGS))
    table.columns = [setting_label(k, d) for k, d in table.columns]
    return table


def floor_row(syn: pd.DataFrame) -> pd.Series:
    f = syn.groupby(["kind", "d"])["floor"].mean().reindex(pd.MultiIndex.from_tuples(SETTINGS))
    f.index = [setting_label(k, d) for k, d in f.index]
    return f


def unknown_table(unk: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    """Mean AUC per detector (rows) and dataset (columns), and the mean over datasets."""
    if "auc" not in unk:
        unk = unk.assign(auc=np.nan)
    per = unk.groupby(["dataset", "withheld", "detector"])["auc"].mean().reset_index()
    table = per.pivot_table(index="detector", columns="dataset", values="auc", aggfunc="mean")
    order = list(dict.fromkeys(unk["dataset"]))
    table = table.reindex(index=names, columns=order)
    table["mean"] = table.mean(axis=1)  # over the datasets where it ran (see unknown_task)
    return table


def print_tables(syn: pd.DataFrame, unk: pd.DataFrame, timing: pd.DataFrame, names) -> None:
    """The per-setting means of each figure, the unknown-class AUC, the times and the errors,
    printed; the docs' tables come from the rows (``benchmarks.sandia_tables``)."""
    singles = [n for n in names if n != "combined"]
    tables = {}
    for fig in ("spearman", "rmse", "iso_rmse", "iso_rmse_report"):
        tables[fig] = synthetic_table(syn, fig, singles)
        if fig != "spearman":
            tables[fig].loc["no-information floor"] = floor_row(syn)
    tables["unknown class AUC"] = unknown_table(unk, names)
    tables["seconds"] = timing.set_index("detector")[["fit_s", "predict_s"]]
    for title, table in tables.items():
        print(f"\n{title}\n{table.to_string(float_format=lambda v: f'{v:.3f}')}")
    errors = pd.concat([syn, unk, timing], ignore_index=True)
    errors = errors[errors["error"].fillna("").str.len() > 0]
    errors = errors[~errors["error"].str.startswith("one known class")]
    for (det, err), n in errors.groupby(["detector", "error"]).size().items():
        print(f"error: {det}: {n} x {err}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--problems", type=int, default=None, help="problems per setting")
    parser.add_argument("--n-jobs", type=int, default=2, help="processes for the problem loops")
    parser.add_argument("--paper", action="store_true", help="the report's sizes (PAPER)")
    parser.add_argument("--table1", action="store_true", help="only Table 1, at PAPER sizes")
    parser.add_argument("--results", help="JSON-lines file to append the per-problem rows to")
    args = parser.parse_args()
    if args.quick and args.paper:
        parser.error("--quick and --paper are exclusive; give one")
    sizes = QUICK if args.quick else PAPER if (args.paper or args.table1) else FULL
    if args.problems:
        sizes = replace(sizes, problems=args.problems)
    if args.table1:
        table1_main(sizes, args.n_jobs, args.results)
        return
    names = available_detectors()
    wall = time.perf_counter()
    syn = run_synthetic(names, sizes, args.n_jobs)
    unk = run_unknown(names, sizes, args.n_jobs)
    timing = run_timing(names, sizes)
    if args.results:
        for part, frame in (("synthetic", syn), ("unknown", unk), ("timing", timing)):
            append_rows(Path(args.results), frame, part, sizes, args.n_jobs)
    print_tables(syn, unk, timing, names)
    print(f"\nwall: {time.perf_counter() - wall:.0f} s")


if __name__ == "__main__":
    main()
