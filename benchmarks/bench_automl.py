"""ensel against AutoGluon (best_quality, with ray), and the default against its spare-time
library, at equal time budgets on 12 allowed real classification datasets, tested with
datasets as the unit.

    python -m benchmarks.bench_automl [--quick] [--budgets 60 300 600] [--seeds 0 1 2 3 4]
        [--datasets ...] [--configs ensel autogluon] [--results FILE.jsonl [MORE.jsonl ...]]
    python -m benchmarks.bench_automl --report --seeds 2 3 4     # fit nothing: the tables
    python -m benchmarks.bench_automl --plan --seeds 2 3 4       # fit nothing: what is left

Protocol: ``DATASETS`` (binary and multiclass, some with missing values of their own, three
with groups), seeds of the fixed 70/30 split (``datasets.train_test``), each configuration at
its ``BUDGETS`` (``--budgets`` overrides them): ``ensel``, ``EnsembleSelectionClassifier()``
with its defaults and ``n_jobs=2``; ``autogluon``, ``TabularPredictor(presets="best_quality",
eval_metric="log_loss")`` with ``num_cpus=2``, installed as its users install it
(``benchmarks._peers``); ``spare``, the ``default_spare`` library, on request. Where a dataset
has groups, the fit is grouped as well as the split: ensel's folds by ``groups``, AutoGluon's
bagging folds by ``bagging_folds`` (its DyStack holdout is still drawn by row).

Every row records the fit (dataset, seed, configuration, budget, grouped or not), test AUC
(one-vs-rest macro for multiclass) and log loss, fit wall seconds, predict microseconds per
row (``_predict_timing``: warm, all test rows, the same for both), the peak memory and CPU
seconds of the fitting process tree, the model chosen, ensel's budget left unused and why,
the versions, the load at the start and the end, and when it started (rows of separate
sessions on the larger tables differ by up to 0.004 of log loss with the same code).

Each finished fit is appended to the last of ``--results`` (``RESULTS`` by default), so an
interrupted run resumes; several files are read in order, a fit in a later one replacing the
same fit in an earlier one. The printed report (``_stats``: per-dataset means over the chosen
seeds, then wins, the mean difference, a paired t-test and a sign test over datasets) is what
the docs' tables come from (``benchmarks.report``); defaults are tuned on seeds 0-1 and judged
on seeds 2-4. ``--quick``: ensel and AutoGluon on pima, seed 0, 120 s, into a temporary file.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks._peers import classification_scores
from benchmarks._predict_timing import warm_predict
from benchmarks._record import (
    ROOT,
    PeakMemory,
    append_row,
    git_commit,
    load_average,
    merged_rows,
    utc_now,
    versions,
)
from benchmarks._report import machine_line, markdown_table
from benchmarks._stats import over_datasets, per_dataset, predict_ratios
from benchmarks.datasets import CLASSIFICATION, train_groups, train_test

RESULTS = ROOT / "benchmarks" / "results" / "automl_12tables.jsonl"
CONFIGS = ("ensel", "autogluon", "spare")
FIRST_DATASETS = ("pima", "biopsy_na", "participation", "turnout", "doctor_aus", "chile",
                  "medpar_died", "rwm1984_outwork")  # fmt: skip
DATASETS = (*FIRST_DATASETS, "car", "doctor_contacts", "vietnam_i", "movies_drama")
BUDGETS = {"ensel": (60.0, 120.0, 300.0, 600.0), "autogluon": (60.0, 300.0, 600.0)}
OTHER_BUDGETS = (60.0, 300.0, 600.0)
"""Budgets per configuration in the full protocol (``OTHER_BUDGETS`` for the variants)."""
AUTOGLUON_FOLDS = 8
"""best_quality's ``num_bag_folds``: the grouped bagging folds are made this many."""
PAIRINGS = (("ensel", "autogluon"), ("spare", "ensel"), ("spare", "autogluon"))
"""Configurations compared at equal budget: (ours, theirs)."""
CROSS_BUDGET = ((("ensel", 600.0), ("ensel", 120.0)), (("ensel", 120.0), ("autogluon", 300.0)))
"""Comparisons across budgets: ((ours, budget), (theirs, budget))."""


def _heaviest_member(members: pd.DataFrame) -> str:
    """ensel's counterpart of AutoGluon's best model: the member with the largest weight."""
    top = members.sort_values("weight", ascending=False).iloc[0]
    return f"{top['family']} (weight {top['weight']:.2f} of {len(members)} members)"


def config_library(config: str) -> str:
    """The built-in spec an ensel configuration fits."""
    return "default_spare" if config == "spare" else "default"


def fit_ensel(config: str, X_tr, y_tr, X_te, budget: float, seed: int, groups=None) -> dict:
    """Fit an ensel configuration (its folds grouped by ``groups``, where given) and predict the
    test rows (warm, ``_predict_timing``), with the peak memory of this process and its workers
    over both."""
    from ensel import EnsembleSelectionClassifier

    clf = EnsembleSelectionClassifier(
        library=config_library(config),
        time_limit=budget,
        n_jobs=2,
        random_state=seed,
    )
    with PeakMemory() as memory:
        start = time.perf_counter()
        clf.fit(X_tr, y_tr, groups=groups)
        fit_s = time.perf_counter() - start
        proba, us_per_row = warm_predict(clf.predict_proba, X_te, len(X_te))
    return {
        "classes": [str(c) for c in clf.classes_],
        "proba": proba,
        "fit_s": fit_s,
        "predict_us_per_row": us_per_row,
        "peak_rss_mb": memory.peak_mb,
        "cpu_s": memory.cpu_seconds,
        "members": len(clf.members_),
        "best_model": _heaviest_member(clf.members_),
        "unused_s": clf.budget_.unused_seconds,
        "unused_reason": clf.budget_.unused_reason,
        "spare_members": int((clf.members_.get("tier", pd.Series(dtype=str)) == "spare").sum()),
    }


def bagging_folds(groups: pd.Series, y: pd.Series, seed: int) -> np.ndarray:
    """AutoGluon's bagging folds for grouped rows: ``AUTOGLUON_FOLDS`` folds, each group in one,
    classes stratified as far as the groups allow. (Its ``groups`` argument makes one fold per
    value, so the groups themselves, thousands of people, would mean thousands of folds.)"""
    from sklearn.model_selection import StratifiedGroupKFold

    folds = np.empty(len(y), dtype=int)
    splitter = StratifiedGroupKFold(AUTOGLUON_FOLDS, shuffle=True, random_state=seed)
    for fold, (_, rows) in enumerate(splitter.split(np.zeros((len(y), 1)), y, groups)):
        folds[rows] = fold
    return folds


def fit_autogluon(
    X_tr, y_tr, X_te, y_te, problem_type: str, budget: float, seed: int, groups=None
) -> dict:
    """Fit AutoGluon best_quality in its venv (bagging folds grouped by ``groups``, where
    given: ``bagging_folds``) and predict the test rows the way ``fit_ensel`` does."""
    from benchmarks._peers import run_autogluon

    result = run_autogluon(
        X_tr.assign(__y=y_tr.to_numpy()),
        X_te.assign(__y=y_te.to_numpy()),
        "__y",
        problem_type,
        time_limit=budget,
        presets="best_quality",
        num_cpus=2,
        seed=seed,
        eval_metric="log_loss",
        folds=None if groups is None else bagging_folds(groups, y_tr, seed),
    )
    return {
        "classes": [str(c) for c in result.classes],
        "proba": result.predictions,
        "fit_s": result.fit_seconds,
        "predict_us_per_row": result.info["predict_us_per_row"],
        "peak_rss_mb": result.info["peak_rss_mb"],
        "cpu_s": result.cpu_seconds,
        "members": len(result.info.get("models", []) or []),
        "best_model": result.info["best_model"],
        "autogluon_version": result.info["version"],
        "peer_versions": result.info["versions"],
    }


def run_pair(name: str, seed: int, config: str, budget: float) -> dict:
    """Fit one configuration on one dataset and seed; the result row (see the module doc)."""
    X_tr, X_te, y_tr, y_te, ds = train_test(name, seed)
    groups = train_groups(ds, seed)
    y_tr, y_te = y_tr.astype(str), y_te.astype(str)
    load, started = load_average(), utc_now()
    if config == "autogluon":
        out = fit_autogluon(X_tr, y_tr, X_te, y_te, ds.problem_type, budget, seed, groups)
    else:
        out = fit_ensel(config, X_tr, y_tr, X_te, budget, seed, groups)
    scores = classification_scores(y_te, out.pop("classes"), out.pop("proba"))
    return {
        "dataset": name,
        "seed": seed,
        "config": config,
        "budget": budget,
        **scores,
        **out,
        "n_train": len(y_tr),
        "n_test": len(y_te),
        "grouped_fit": groups is not None,
        "commit": git_commit(),
        "versions": versions(),
        "load_start": load,
        "load_1min": load[0],
        "load_1min_end": load_average()[0],
        "started_utc": started,
    }


def protocol(configs, budgets, seeds, datasets) -> list[tuple[str, int, str, float]]:
    """The fits to run, budget by budget (so a cut-off run has whole budgets first):
    ``(dataset, seed, config, budget)``; ``budgets`` None gives each configuration its
    ``BUDGETS`` (``OTHER_BUDGETS`` for the variants)."""
    plan = []
    for config in configs:
        for budget in budgets or BUDGETS.get(config, OTHER_BUDGETS):
            for seed in seeds:
                for name in datasets:
                    plan.append((name, seed, config, float(budget)))
    return sorted(
        plan, key=lambda k: (k[3], k[1], DATASETS.index(k[0]) if k[0] in DATASETS else 99)
    )


# --------------------------------------------------------------------------------------------
# reporting
# --------------------------------------------------------------------------------------------


def comparisons(rows: pd.DataFrame) -> list[tuple[tuple[str, float], tuple[str, float]]]:
    """Every (ours, theirs) of ``PAIRINGS`` at each budget both have, then ``CROSS_BUDGET``."""
    have = set(zip(rows.config, rows.budget, strict=True))
    out = []
    for budget in sorted(rows.budget.unique()):
        for ours, theirs in PAIRINGS:
            if (ours, budget) in have and (theirs, budget) in have:
                out.append(((ours, budget), (theirs, budget)))
    out += [(a, b) for a, b in CROSS_BUDGET if a in have and b in have]
    return out


def datasets_table(rows: pd.DataFrame) -> pd.DataFrame:
    """``over_datasets`` on AUC and log loss for every comparison."""
    out = [
        over_datasets(rows, a, b, metric)
        for a, b in comparisons(rows)
        for metric in ("auc", "logloss")
    ]
    return pd.DataFrame(out)


def per_dataset_table(rows: pd.DataFrame, metric: str) -> pd.DataFrame:
    """One row per dataset, one column per (config, budget): "mean +- se (seeds)" of
    ``metric`` over the seeds in ``rows``."""
    cells = {}
    for (config, budget), group in rows.groupby(["config", "budget"]):
        stats = per_dataset(group, metric)
        cells[f"{config} {budget:g}s"] = [
            f"{m:.4f} +- {se:.4f} ({n})" if n > 1 else f"{m:.4f} (1)"
            for m, se, n in stats[["mean", "se", "seeds"]].itertuples(index=False)
        ]
        cells[f"{config} {budget:g}s"] = pd.Series(cells[f"{config} {budget:g}s"], stats.index)
    return pd.DataFrame(cells).fillna("-")


OVERHEAD_S = 30.0
"""Per fit beyond its budget, for ``plan_lines``: loading, starting ray, predicting 4 times."""


def plan_lines(plan, done: set) -> list[str]:
    """The fits of ``plan`` not in ``done``, counted per configuration and budget, with an upper
    bound on their wall time (each fit its whole budget plus ``OVERHEAD_S``; ensel often
    finishes its library early, AutoGluon spends its budget)."""
    todo = pd.DataFrame(
        [k for k in plan if k not in done], columns=["dataset", "seed", "config", "budget"]
    )
    if not len(todo):
        return ["nothing left to fit"]
    counts = todo.groupby(["config", "budget"]).size()
    lines = [f"{c} {b:g} s: {n} fits" for (c, b), n in counts.items()]
    hours = (todo.budget + OVERHEAD_S).sum() / 3600
    return [*lines, f"{len(todo)} fits, at most {hours:.1f} h"]


KEY = ("dataset", "seed", "config", "budget")
"""What names a fit: a results file holds at most one row for each."""


def merged_results(paths: list[Path]) -> list[dict]:
    """The fits of ``paths`` (``_record.merged_rows`` by ``KEY``)."""
    return merged_rows(paths, KEY)


def finished(paths: list[Path]) -> set[tuple]:
    """The fits (``KEY``) any of ``paths`` holds, scored or failed."""
    return {tuple(r[k] for k in KEY) for r in merged_results(paths)}


def run_plan(plan, paths: list[Path]) -> None:
    """Fit every key of ``plan`` in none of ``paths``, appending each row (or its error) to the
    last of them."""
    done = finished(paths)
    path = paths[-1]
    for key in plan:
        if key in done:
            continue
        name, seed, config, budget = key
        t, started = time.perf_counter(), utc_now()
        try:
            row = run_pair(name, seed, config, budget)
        except Exception as exc:  # recorded, the grid goes on
            row = {
                "dataset": name,
                "seed": seed,
                "config": config,
                "budget": budget,
                "error": f"{type(exc).__name__}: {exc}"[:300],
                "commit": git_commit(),
                "started_utc": started,
            }
            traceback.print_exc()
        append_row(path, row)
        print(
            f"{name} seed {seed} {config} {budget:g}s: {time.perf_counter() - t:.0f} s wall, "
            + (f"AUC {row['auc']:.4f} LL {row['logloss']:.4f}" if "auc" in row else row["error"]),
            flush=True,
        )


def report_lines(rows: pd.DataFrame, failed: pd.DataFrame, seeds, label: str, command: str):
    """The printed report of the scored ``rows`` (already restricted to ``seeds``) and of the
    ``failed`` fits."""
    lines = ["", f"**{label}.** " + machine_line(command)]
    if len(rows):
        lines += _scored_lines(rows, seeds)
    if len(failed):
        failures = markdown_table(failed[[*KEY, "error"]], index=False)
        lines += ["Fits that failed (recorded, not scored):", "", failures]
    return lines


def _scored_lines(rows: pd.DataFrame, seeds) -> list[str]:
    commits = sorted(rows["commit"].dropna().unique()) if "commit" in rows else []
    ag = sorted(rows["autogluon_version"].dropna().unique()) if "autogluon_version" in rows else []
    lines = [
        f"Seeds {', '.join(map(str, seeds))}; {rows.dataset.nunique()} datasets; ensel commit(s) "
        f"{', '.join(commits) or 'not recorded'}; AutoGluon {', '.join(ag) or 'not recorded'}.",
        "",
        "Over datasets (per-dataset means over seeds; differences positive when the first is "
        "better; paired t-test and sign test, two-sided):",
        "",
        markdown_table(datasets_table(rows), ".4g", index=False),
        "",
    ]
    for metric, name in (("auc", "test AUC"), ("logloss", "test log loss")):
        table = markdown_table(per_dataset_table(rows, metric), index=True)
        lines += [f"Per dataset, {name} (mean +- standard error over seeds, seed count):", ""]
        lines += [table, ""]
    ratios = [r for r in (predict_ratios(rows, b) for b in sorted(rows.budget.unique())) if len(r)]
    timing = [c for c in ("fit_s", "predict_us_per_row", "peak_rss_mb", "load_1min") if c in rows]
    return [
        *lines,
        "Predict time per row, ensel over AutoGluon (per-dataset means, warm, all test rows):",
        "",
        markdown_table(pd.concat(ratios, axis=1), ".2f") if ratios else "(none)",
        "",
        "Median fit seconds, predict microseconds per row, peak memory (MiB, the process tree) "
        "and 1-minute load average at the start of each fit:",
        "",
        markdown_table(rows.groupby(["config", "budget"])[timing].median(), ".3f"),
        "",
    ]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--budgets", type=float, nargs="*", default=None, help="default: each config's BUDGETS"
    )
    parser.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2, 3, 4])
    parser.add_argument("--datasets", nargs="*", default=list(DATASETS))
    parser.add_argument("--configs", nargs="*", default=None, help="default: ensel autogluon")
    parser.add_argument(
        "--results",
        nargs="+",
        default=None,
        help=f"JSON lines of finished fits (default benchmarks/results/{RESULTS.name}, in git);"
        " several are read in order, a fit in a later file replacing the same fit in an earlier"
        " one, and new fits are appended to the last",
    )
    parser.add_argument(
        "--report", action="store_true", help="fit nothing: report the fits in --results"
    )
    parser.add_argument(
        "--plan", action="store_true", help="fit nothing: count the fits left and their time"
    )
    args = parser.parse_args(argv)
    tmp = None
    if args.quick:  # one fit per configuration; --configs and --budgets still choose
        args.budgets, args.seeds, args.datasets = args.budgets or [120.0], [0], ["pima"]
    if args.configs is None:
        args.configs = ["ensel", "autogluon"]
    if args.quick and args.results is None:  # a quick run never touches the protocol's rows
        tmp = tempfile.TemporaryDirectory(prefix="bench-automl-quick-")
        args.results = [str(Path(tmp.name) / "quick.jsonl")]
    unknown = sorted(set(args.datasets) - set(CLASSIFICATION)) + sorted(
        set(args.configs) - set(CONFIGS)
    )
    if unknown:
        raise SystemExit(f"unknown dataset(s) or config(s) {unknown}")
    paths = [Path(p) for p in args.results] if args.results else [RESULTS]
    paths[-1].parent.mkdir(parents=True, exist_ok=True)
    plan = protocol(args.configs, args.budgets, args.seeds, args.datasets)
    if args.plan:
        print("\n".join(plan_lines(plan, finished(paths))))
        return
    if not args.report:
        run_plan(plan, paths)
    rows = pd.DataFrame(merged_results(paths))
    if len(rows):
        rows = rows[rows.seed.isin(args.seeds) & rows.dataset.isin(args.datasets)]
    failed = rows[rows["error"].notna()] if "error" in rows else rows.iloc[:0]
    rows = rows[rows["auc"].notna()] if "auc" in rows else rows.iloc[:0]
    names = " + ".join(p.name for p in paths)
    label = "quick run" if args.quick else f"{len(rows)} fits from {names}"
    given = sys.argv[1:] if argv is None else argv
    command = ("python -m benchmarks.bench_automl " + " ".join(given)).strip()
    lines = report_lines(rows, failed, args.seeds, label, command)
    print("\n".join(lines))
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
