"""ensel against AutoGluon (best_quality) and against ensel's former fixed grid, at equal time
budgets, on the allowed real classification datasets.

    python -m benchmarks.bench_automl [--quick] [--budgets 60 120 300] [--seeds 5]
        [--datasets ...] [--configs ensel fixed autogluon] [--results FILE.jsonl]

Protocol (the full run): every dataset of ``benchmarks.datasets.CLASSIFICATION`` but iris
(10: binary and multiclass, some with missing values of their own), seeds 0-4 of the fixed
70/30 protocol split, and for each budget B in 60, 120 and 300 s:

- ``ensel``: ``EnsembleSelectionClassifier()`` with its defaults (library ``default``, cv=5,
  selection for log loss), ``time_limit=B``, ``n_jobs=2``;
- ``fixed``: the same with ``library=benchmarks/specs/fixed_grid.yaml`` (the grid ``default``
  now holds: the 2006 families plus xgboost and lightgbm) without a predict-cost budget
  (``max_predict_ms=None``), as ensel shipped it before its predict-cost budget;
- ``ensel_1se`` (rows only, no fits): ``ensel`` as it was before its predict budget's
  tolerance was halved (``max_predict_ms="auto"`` accepting one standard error);
- ``modern``: ``ensel`` with ``library="modern"`` (the modern grid, the default before this
  benchmark replaced it; its rows were fitted with the one-standard-error predict budget);
- ``grow``: ``ensel`` with ``grow=True`` (optuna proposes new members where the ensemble gains,
  in whatever time the build leaves; only runs that raised the cross-selected score join);
- ``pruned``: ``ensel`` with ``prune_fraction=0.2`` (selection from the best fifth of the
  library, §4.3.6's rule of thumb), to set the pruning default from;
- ``grow_all`` (rows only, no fits): ``grow`` as it was first measured, when every proposed run
  joined the library;
- ``autogluon``: ``TabularPredictor(presets="best_quality", eval_metric="log_loss")`` with
  ``time_limit=B`` and ``num_cpus=2`` (``benchmarks/_peers.run_autogluon``, its own venv).

Per pair (dataset, seed): test AUC (one-vs-rest macro for multiclass) and log loss from
scikit-learn, fit seconds and predict seconds per row. The summary pairs ensel with each
opponent at equal budget, and ensel at 120 s with AutoGluon at 300 s (2.5x ensel's budget):
pairs, wins on each metric, mean difference (positive = ensel better) and its standard error.

Each finished fit is appended to ``--results`` (JSON lines; by default
``benchmarks/results/bench_automl.jsonl``, kept in git), so an interrupted run resumes, a later
session adds to the earlier ones' fits, and a partial run is reported for exactly the pairs it
has. The whole grid is 10 x 5 x 3 x 3 fits
(about 20 hours on 2 cores); ``--quick`` runs one small dataset, one seed, 60 s.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import traceback
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import log_loss, roc_auc_score

from benchmarks._report import machine_line, markdown_table, write_section
from benchmarks.datasets import CLASSIFICATION, train_test

SECTION = "## AutoML comparison (bench_automl)"
ROOT = Path(__file__).resolve().parents[1]
FIXED_GRID = ROOT / "benchmarks" / "specs" / "fixed_grid.yaml"
CONFIGS = ("ensel", "fixed", "modern", "autogluon", "grow", "pruned")
DATASETS = tuple(n for n in CLASSIFICATION if n != "iris")
PAIRINGS = (
    ("ensel", "autogluon"),
    ("ensel", "fixed"),
    ("ensel", "modern"),
    ("ensel", "ensel_1se"),
    ("ensel_1se", "autogluon"),
    ("modern", "autogluon"),
    ("grow", "ensel"),
    ("grow", "autogluon"),
    ("grow_all", "ensel"),
    ("pruned", "ensel"),
    ("pruned", "autogluon"),
)
"""Configurations compared at equal budget: (ours, theirs)."""


def pair_scores(y_test: pd.Series, classes, proba: np.ndarray) -> dict[str, float]:
    """Test AUC (one-vs-rest macro for more than two classes) and log loss, scikit-learn's."""
    classes = list(classes)
    proba = np.clip(np.asarray(proba, dtype=float), 1e-15, 1.0)
    proba = proba / proba.sum(axis=1, keepdims=True)
    y = np.asarray(y_test)
    if len(classes) == 2:
        auc = roc_auc_score(y == classes[1], proba[:, 1])
    else:
        auc = roc_auc_score(y, proba, multi_class="ovr", labels=classes)
    return {"auc": float(auc), "logloss": float(log_loss(y, proba, labels=classes))}


def fit_ensel(config: str, X_tr, y_tr, X_te, budget: float, seed: int) -> dict:
    """Fit an ensel configuration and predict the test rows."""
    from ensel import EnsembleSelectionClassifier

    extra = {
        "fixed": {"max_predict_ms": None},  # the former default: no predict-cost budget
        "grow": {"grow": True},
        "pruned": {"prune_fraction": 0.2},
    }.get(config, {})
    library = {"fixed": str(FIXED_GRID), "modern": "modern"}.get(config, "default")
    clf = EnsembleSelectionClassifier(
        library=library,
        time_limit=budget,
        n_jobs=2,
        random_state=seed,
        **extra,
    )
    start = time.perf_counter()
    clf.fit(X_tr, y_tr)
    fit_s = time.perf_counter() - start
    start = time.perf_counter()
    proba = clf.predict_proba(X_te)
    predict_s = time.perf_counter() - start
    return {
        "classes": [str(c) for c in clf.classes_],
        "proba": proba,
        "fit_s": fit_s,
        "predict_s": predict_s,
        "members": len(clf.members_),
    }


def fit_autogluon(X_tr, y_tr, X_te, y_te, problem_type: str, budget: float, seed: int) -> dict:
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
    )
    return {
        "classes": [str(c) for c in result.classes],
        "proba": result.predictions,
        "fit_s": result.fit_seconds,
        "predict_s": result.predict_seconds,
        "members": len(result.info.get("models", []) or []),
    }


def run_pair(name: str, seed: int, config: str, budget: float) -> dict:
    X_tr, X_te, y_tr, y_te, ds = train_test(name, seed)
    y_tr, y_te = y_tr.astype(str), y_te.astype(str)
    load = os.getloadavg()[0]
    if config == "autogluon":
        out = fit_autogluon(X_tr, y_tr, X_te, y_te, ds.problem_type, budget, seed)
    else:
        out = fit_ensel(config, X_tr, y_tr, X_te, budget, seed)
    scores = pair_scores(y_te, out["classes"], out["proba"])
    return {
        "dataset": name,
        "seed": seed,
        "config": config,
        "budget": budget,
        **scores,
        "fit_s": out["fit_s"],
        "predict_ms_per_row": 1000.0 * out["predict_s"] / len(y_te),
        "members": out["members"],
        "n_train": len(y_tr),
        "load_1min": load,
    }


def _se(d: np.ndarray) -> float:
    return float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else float("nan")


def compare(rows: pd.DataFrame, ours: tuple[str, float], theirs: tuple[str, float]) -> dict:
    """Paired comparison of configuration ``ours`` with ``theirs`` (each ``(config, budget)``)
    over the (dataset, seed) pairs both have; differences are positive when ours is better."""
    a = rows[(rows.config == ours[0]) & (rows.budget == ours[1])].set_index(["dataset", "seed"])
    b = rows[(rows.config == theirs[0]) & (rows.budget == theirs[1])].set_index(["dataset", "seed"])
    both = a.index.intersection(b.index)
    d_auc = (a.loc[both, "auc"] - b.loc[both, "auc"]).to_numpy()
    d_ll = (b.loc[both, "logloss"] - a.loc[both, "logloss"]).to_numpy()
    n = len(both)
    return {
        "ensel": f"{ours[0]} {ours[1]:g}s",
        "vs": f"{theirs[0]} {theirs[1]:g}s",
        "pairs": n,
        "datasets": len({d for d, _ in both}),
        "AUC wins": f"{int((d_auc > 0).sum())}/{n}" if n else "-",
        "mean dAUC": float(d_auc.mean()) if n else float("nan"),
        "se dAUC": _se(d_auc),
        "LL wins": f"{int((d_ll > 0).sum())}/{n}" if n else "-",
        "mean dLL": float(d_ll.mean()) if n else float("nan"),
        "se dLL": _se(d_ll),
        "predict ms/row (ours, theirs)": (
            f"{a.loc[both, 'predict_ms_per_row'].median():.3f}, "
            f"{b.loc[both, 'predict_ms_per_row'].median():.3f}"
            if n
            else "-"
        ),
    }


def summary(rows: pd.DataFrame) -> pd.DataFrame:
    out = []
    budgets = sorted(rows.budget.unique())
    for budget in budgets:
        for ours, other in PAIRINGS:
            out.append(compare(rows, (ours, budget), (other, budget)))
    if 120 in budgets and 300 in budgets:
        for ours in ("ensel", "ensel_1se", "modern"):
            out.append(compare(rows, (ours, 120), ("autogluon", 300)))
    table = pd.DataFrame(out)
    return table[table["pairs"] > 0]


def load_results(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--budgets", type=float, nargs="*", default=[60, 120, 300])
    parser.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2, 3, 4])
    parser.add_argument("--datasets", nargs="*", default=list(DATASETS))
    parser.add_argument("--configs", nargs="*", default=list(CONFIGS))
    parser.add_argument(
        "--results",
        default=str(ROOT / "benchmarks" / "results" / "bench_automl.jsonl"),
        help="JSON lines of finished fits (tracked in git, so runs add up across sessions)",
    )
    parser.add_argument(
        "--label", default=None, help="what this run is, for the docs (e.g. 'subset: ...')"
    )
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument(
        "--report", action="store_true", help="fit nothing: report the fits in --results"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.budgets, args.seeds, args.datasets = [60.0], [0], ["pima"]
    unknown = sorted(set(args.datasets) - set(CLASSIFICATION)) + sorted(
        set(args.configs) - set(CONFIGS)
    )
    if unknown:
        raise SystemExit(f"unknown dataset(s) or config(s) {unknown}")
    path = Path(args.results)
    path.parent.mkdir(parents=True, exist_ok=True)
    done = {(r["dataset"], r["seed"], r["config"], r["budget"]) for r in load_results(path)}
    load_before = os.getloadavg()
    started = time.strftime("%H:%M UTC", time.gmtime())
    for budget in [] if args.report else args.budgets:
        for seed in args.seeds:
            for name in args.datasets:
                for config in args.configs:
                    key = (name, seed, config, float(budget))
                    if key in done:
                        continue
                    t = time.perf_counter()
                    try:
                        row = run_pair(name, seed, config, float(budget))
                    except Exception as exc:  # recorded, the grid goes on
                        row = {
                            "dataset": name,
                            "seed": seed,
                            "config": config,
                            "budget": float(budget),
                            "error": f"{type(exc).__name__}: {exc}"[:300],
                        }
                        traceback.print_exc()
                    with open(path, "a") as fh:
                        fh.write(json.dumps(row) + "\n")
                    print(
                        f"{name} seed {seed} {config} {budget:g}s: "
                        f"{time.perf_counter() - t:.0f} s wall, "
                        + (
                            f"AUC {row['auc']:.4f} LL {row['logloss']:.4f}"
                            if "auc" in row
                            else row["error"]
                        ),
                        flush=True,
                    )
    rows = pd.DataFrame(load_results(path))
    failed = rows[rows["error"].notna()] if "error" in rows else rows.iloc[:0]
    rows = rows[rows["auc"].notna()] if "auc" in rows else rows.iloc[:0]
    table = summary(rows) if len(rows) else pd.DataFrame()
    per_pair = (
        rows.pivot_table(
            index=["dataset", "seed", "budget"], columns="config", values=["auc", "logloss"]
        )
        if len(rows)
        else pd.DataFrame()
    )
    timing = (
        rows.groupby(["config", "budget"])[["fit_s", "predict_ms_per_row", "load_1min"]].median()
        if len(rows)
        else pd.DataFrame()
    )
    text = markdown_table(table, ".4f", index=False) if len(table) else "(no pairs)"
    print(text)
    print(timing.to_string() if len(timing) else "")
    load_after = os.getloadavg()
    full = len(DATASETS) * 5 * 3 * 3
    label = args.label or (
        "quick run" if args.quick else f"{len(rows)} of the full protocol's {full} fits"
    )
    command = "python -m benchmarks.bench_automl " + " ".join(argv or [])
    lines = [
        "",
        f"**{label}.** " + machine_line(command.strip()),
        (
            f"Reported {started} from {path.name}; its fits ran earlier (the load at the start "
            "of each fit is in the timing table: above 2, a fit shared the 2 cores with other "
            "work)."
            if args.report
            else f"Started {started}; load average (1/5/15 min) {load_before[0]:.1f}/"
            f"{load_before[1]:.1f}/{load_before[2]:.1f} at the start, {load_after[0]:.1f}/"
            f"{load_after[1]:.1f}/{load_after[2]:.1f} at the end (the load at the start of each "
            "fit is in the timing table: above 2, a fit shared the 2 cores with other work)."
        ),
        "",
        "Paired over (dataset, seed); differences positive when ensel is better; se = standard "
        "error of the mean difference.",
        "",
        text,
        "",
        "Median fit seconds, predict milliseconds per row and 1-minute load average at the start "
        "of each fit:",
        "",
        markdown_table(timing, ".3f") if len(timing) else "(none)",
        "",
        "Per pair (test AUC and log loss):",
        "",
        markdown_table(per_pair, ".4f") if len(per_pair) else "(none)",
        "",
    ]
    if len(failed):
        lines += [
            "Fits that failed (recorded, not scored):",
            "",
            markdown_table(failed[["dataset", "seed", "config", "budget", "error"]], index=False),
            "",
        ]
    if not args.no_write:
        write_section(SECTION + (" (quick)" if args.quick else ""), lines)


if __name__ == "__main__":
    main()
