"""Regression: ensel's default regression library and ensemble selection for RMSE against
scikit-learn's HistGradientBoostingRegressor, the best single library member, and AutoGluon
best_quality at the same time budget, on real datasets with numeric targets.

    python -m benchmarks.bench_regression [--quick] [--datasets medpar,...] [--seeds 5]
                                          [--time-limit 60] [--no-autogluon] [--results F]

Each dataset × seed is the protocol's 70/30 split (``datasets.train_test``: grouped where rows
share a subject). ensel fits ``EnsembleSelectionRegressor(library="regression", metric="rmse",
time_limit=T, n_jobs=2)`` on the 70%; the best single member is the library member with the
lowest hillclimb (out-of-fold) RMSE, predicted from the same library; HGB is ``_peers.run_hgb``
(early stopping on 10% of the training rows); AutoGluon is ``_peers.run_autogluon`` with
``presets="best_quality"``, ``time_limit=T`` and 2 CPUs. Test RMSE and MAE on the 30%.

Every finished pair is appended to ``benchmarks/results/regression.jsonl`` (``--quick``: a
temporary file) with its provenance as it completes, so an interrupted run keeps what it
measured and a rerun skips what is there. The table and the targets (ensel's RMSE below
AutoGluon's on >= 60% of dataset × seed pairs, below the best member's on >= 80%) are printed.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks import datasets
from benchmarks._record import append_row, load_results, provenance, results_path, suite_parser
from benchmarks._report import ROOT, machine_line, markdown_table
from ensel import EnsembleSelectionRegressor
from ensel.library import Library
from ensel.metrics import score

DATASETS = ("workinghours", "treatment", "medpar", "vietnam_h", "rwm1984")
QUICK_DATASETS = ("diabetes", "medpar")
RESULTS = ROOT / "benchmarks" / "results" / "regression.jsonl"
TARGET_VS_AUTOGLUON = 0.6
TARGET_VS_BEST_MEMBER = 0.8


def errors(y: np.ndarray, pred: np.ndarray) -> dict[str, float]:
    return {"rmse": score("rmse", y, pred), "mae": score("mae", y, pred)}


def run_ensel(X_tr, X_te, y_tr, y_te, groups, seed: int, time_limit: float, spec: str) -> dict:
    """ensel's regressor and, from the same library, its best single member."""
    with tempfile.TemporaryDirectory(prefix="ensel-bench-regression-") as tmp:
        store = Path(tmp) / "library"
        model = EnsembleSelectionRegressor(
            library=spec,
            metric="rmse",
            time_limit=time_limit,
            n_jobs=2,
            store=store,
            random_state=seed,
        )
        start = time.perf_counter()
        model.fit(X_tr, y_tr.to_numpy(), groups=groups)
        fit_seconds = time.perf_counter() - start
        pred = model.predict(X_te)
        board = model.leaderboard()  # best hillclimb RMSE first
        best = board.iloc[0]
        best_pred = Library.open(store).predict(X_te, ids=[best["id"]])[0]
    y = y_te.to_numpy()
    return {
        "ensel": {**errors(y, pred), "fit_seconds": fit_seconds},
        "best_member": {**errors(y, best_pred), "member": f"{best['family']}@{best['stage']}"},
        "library": {"members": len(board), "with_weight": len(model.members_)},
    }


def run_peers(X_tr, X_te, y_tr, y_te, seed: int, time_limit: float, autogluon: bool) -> dict:
    from benchmarks._peers import run_autogluon, run_hgb

    target = "__target__"
    train = X_tr.assign(**{target: y_tr.to_numpy()})
    test = X_te.assign(**{target: y_te.to_numpy()})
    y = y_te.to_numpy()
    out = {}
    hgb = run_hgb(train, test, target, "regression", seed=seed)
    out["hgb"] = {**errors(y, hgb.predictions), "fit_seconds": hgb.fit_seconds}
    if autogluon:
        try:
            ag = run_autogluon(
                train, test, target, "regression", time_limit=time_limit,
                presets="best_quality", num_cpus=2, seed=seed,
            )  # fmt: skip
        except RuntimeError as err:  # e.g. no model within the budget on a loaded machine
            out["autogluon_error"] = " ".join(str(err).split())[:300]
            print(f"AutoGluon failed: {out['autogluon_error']}", flush=True)
        else:
            out["autogluon"] = {**errors(y, ag.predictions), "fit_seconds": ag.fit_seconds}
    return out


MODELS = ("ensel", "best_member", "hgb", "autogluon")
TARGETS = {"autogluon": TARGET_VS_AUTOGLUON, "best_member": TARGET_VS_BEST_MEMBER, "hgb": None}


def per_pair(results: list[dict]) -> pd.DataFrame:
    """One row per dataset x seed: each model's test RMSE and MAE, and the fit seconds."""
    return pd.DataFrame(
        [
            {
                "dataset": r["dataset"],
                **{f"{k} {m}": r[k][m] for k in MODELS if k in r for m in ("rmse", "mae")},
                **{f"{k} fit s": r[k]["fit_seconds"] for k in ("ensel", "autogluon") if k in r},
            }
            for r in results
        ]
    )


def verdicts(pairs: pd.DataFrame) -> list[str]:
    """Per other model: the pairs where ensel's RMSE is lower, the median RMSE ratio, and the
    target where there is one."""
    lines = []
    for other, target in TARGETS.items():
        col = f"{other} rmse"
        if col not in pairs or pairs[col].isna().all():
            lines.append(f"- ensel vs {other}: not run.")
            continue
        both = pairs[pairs[col].notna()]
        beat, n = int((both["ensel rmse"] < both[col]).sum()), len(both)
        ratio = float(np.median(both["ensel rmse"] / both[col]))
        verdict = "" if target is None else (
            f"; target >= {target:.0%}: {'met' if beat / n >= target else 'NOT met'}"
        )  # fmt: skip
        lines.append(
            f"- ensel's test RMSE below {other}'s on {beat} of {n} pairs ({beat / n:.0%})"
            f"{verdict}; median RMSE ratio ensel / {other} {ratio:.3f}."
        )
    return lines


def report_lines(results: list[dict], command: str, time_limit: float, expected: int) -> list[str]:
    """The regression block: the machine, the medians per dataset, AutoGluon's failures and
    the verdicts."""
    pairs = per_pair(results)
    medians = pairs.groupby("dataset", sort=False).median(numeric_only=True)
    medians.insert(0, "pairs", pairs.groupby("dataset", sort=False).size())
    loads = [r["load"][0] for r in results]
    failed = [f"{r['dataset']} seed {r['seed']}" for r in results if "autogluon_error" in r]
    return [
        "",
        machine_line(command),
        f"Load average (1 min) when each pair finished: median {np.median(loads):.1f}, max "
        f"{max(loads):.1f}. Time budget {time_limit:g} s per fit for ensel and AutoGluon; "
        f"{len(results)} of {expected} dataset x seed pairs ran.",
        "",
        "Medians over seeds of test RMSE and MAE (70/30 splits), and of fit wall seconds:",
        "",
        markdown_table(medians, ".4g"),
        "",
        *(
            [f"AutoGluon fitted no model within the budget on {', '.join(failed)}; left out.", ""]
            if failed
            else []
        ),
        *verdicts(pairs),
    ]


def run(names, seeds, time_limit: float, spec: str, autogluon: bool, path: Path) -> list[dict]:
    """Every dataset x seed not yet in ``path``, each appended as it finishes; all the rows of
    ``names`` and ``seeds``."""
    results = load_results(path)
    done = {(r["dataset"], r["seed"]) for r in results}
    for seed in seeds:  # seed-major: a run cut short still covers every dataset
        for name in names:
            if (name, seed) in done:
                continue
            X_tr, X_te, y_tr, y_te, ds = datasets.train_test(name, seed)
            groups = datasets.train_groups(ds, seed)
            record = {"dataset": name, "seed": seed, "n_train": len(X_tr), "n_test": len(X_te)}
            record.update(run_ensel(X_tr, X_te, y_tr, y_te, groups, seed, time_limit, spec))
            record.update(run_peers(X_tr, X_te, y_tr, y_te, seed, time_limit, autogluon))
            record.update(provenance())
            append_row(path, record)
            results.append(record)
            line = "  ".join(f"{k} {record[k]['rmse']:.4g}" for k in MODELS if k in record)
            print(f"{name} seed {seed}: RMSE {line}", flush=True)
    return [r for r in results if r["dataset"] in names and r["seed"] in seeds]


def main(argv=None) -> None:
    parser = suite_parser(__doc__, RESULTS)
    parser.add_argument("--datasets", help="comma-separated names from datasets.REGRESSION")
    parser.add_argument("--seeds", type=int, help="seeds 0..N-1 (default 5, quick 1)")
    parser.add_argument("--time-limit", type=float, help="seconds per fit (default 60, quick 30)")
    parser.add_argument("--spec", default="regression", help="ensel library spec")
    parser.add_argument("--no-autogluon", action="store_true", help="skip the AutoGluon peer")
    args = parser.parse_args(argv)
    default = QUICK_DATASETS if args.quick else DATASETS
    names = args.datasets.split(",") if args.datasets else default
    unknown = [n for n in names if n not in datasets.REGRESSION]
    if unknown:
        parser.error(f"unknown dataset(s) {unknown}; choose from {sorted(datasets.REGRESSION)}")
    seeds = range(args.seeds or (1 if args.quick else 5))
    time_limit = args.time_limit or (30.0 if args.quick else 60.0)
    path = results_path(args, RESULTS, "regression")
    results = run(names, seeds, time_limit, args.spec, not args.no_autogluon, path)
    command = "python -m benchmarks.bench_regression" + (" --quick" if args.quick else "")
    print("\n".join(report_lines(results, command, time_limit, len(names) * len(seeds))))


if __name__ == "__main__":
    main()
