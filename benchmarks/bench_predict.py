"""Prediction speed and model size: the old predict path (every sibling and every stage of the
kept runs, each run transforming its own view; ``full_runs_predict`` here) on the ensemble
chosen without a cost budget, against the same ensemble on the new path (one transform per
view and fold, only the kept stages, runs in parallel batches), the new default
(``max_predict_ms="auto"``: the cheapest ensemble within noise), refit-full and two fixed
latency budgets, with test AUC and log loss for each, and AutoGluon best_quality's predict
time on the same rows as the peer.

    python -m benchmarks.bench_predict [--quick] [--datasets doctor_aus,turnout,...]

Each dataset is split by the shared protocol (``datasets.train_test``, seed 0, 70/30). The
library (``default`` spec, cv=5; ``tiny`` with --quick) is built on at most ``MAX_TRAIN``
training rows into ``.bench-cache/predict/`` (a rerun reuses it). Quality is measured on the
test split; speed on ``PREDICT_ROWS`` rows drawn from the test split with replacement (the
test splits hold 450-1,600 rows, so rows repeat; prediction cost does not depend on that).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks import datasets
from benchmarks._report import ROOT, machine_line, write_section

CACHE = ROOT / ".bench-cache" / "predict"
DATASETS = ("doctor_aus", "turnout", "rwm1984_outwork", "medpar_died")
QUICK_DATASETS = ("breast_cancer",)
MAX_TRAIN = 2_000
PREDICT_ROWS = 10_000
SEED = 0
BUDGETS = (0.25, 0.05)
"""Latency budgets as fractions of the unconstrained ensemble's estimated predict cost."""
AUTOGLUON_SECONDS = 120
SECTION = "## Prediction speed and model size"


def problem(name: str, quick: bool):
    """``X_train, y_train, groups_train, X_test, y_test, X_predict`` for ``name``."""
    X_tr, X_te, y_tr, y_te, ds = datasets.train_test(name, SEED)
    groups = None
    if ds.groups is not None:  # train_test resets the index: recover the training groups
        train, _ = datasets.protocol_split(ds.y, SEED, groups=ds.groups)
        groups = ds.groups.iloc[train].reset_index(drop=True)
    if len(X_tr) > MAX_TRAIN:
        rng = np.random.default_rng(SEED)
        keep = np.sort(rng.choice(len(X_tr), MAX_TRAIN, replace=False))
        X_tr, y_tr = X_tr.iloc[keep].reset_index(drop=True), y_tr.iloc[keep].reset_index(drop=True)
        groups = None if groups is None else groups.iloc[keep].reset_index(drop=True)
    rows = np.random.default_rng(SEED).integers(0, len(X_te), 2_000 if quick else PREDICT_ROWS)
    return X_tr, y_tr, groups, X_te, y_te, X_te.iloc[rows].reset_index(drop=True)


def library(name: str, quick: bool, n_jobs: int):
    """The library of ``name``, built into (or reopened from) the cache."""
    from ensel.library import build_library

    X_tr, y_tr, groups, *_ = problem(name, quick)
    spec = "tiny" if quick else "default"
    store = CACHE / f"{name}-{spec}"
    start = time.perf_counter()
    lib = build_library(
        X_tr, y_tr, spec=spec, cv=5, store=store, n_jobs=n_jobs, groups=groups,
        random_state=SEED, verbose=0,
    )  # fmt: skip
    return lib, time.perf_counter() - start


def timed(fn, repeats: int = 1) -> tuple[float, float]:
    """Median wall and CPU seconds (this process, all threads) of ``repeats`` calls of
    ``fn``. The machine is shared: CPU seconds are what a call costs whatever the load."""
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return float(np.median(walls)), float(np.median(cpus))


def full_runs_predict(members, X) -> np.ndarray:
    """The members' predictions the old way: every kept run predicts every sibling, stage and
    calibration after transforming its own views, one run after another, and the members are
    picked from that (``FittedMembers.predict`` computes only what the members need)."""
    frame = members.frame(X)
    out = None
    for run_id, fitted in members.runs.items():
        rows = members.rows(run_id)
        part = fitted.predict(frame)[members.offsets[rows]]
        if out is None:
            out = np.empty((members.n_members, *part.shape[1:]))
        out[rows] = part
    if members.task == "regression":
        return out[..., 0]
    return out[..., 1] if members.classes.size == 2 else out


def old_predict_proba(clf, X) -> np.ndarray:
    """``predict_proba`` on the old path (``full_runs_predict``)."""
    members = full_runs_predict(clf.fitted_members_, clf._named(X))
    return clf._finish(np.tensordot(clf.weights_, members, axes=1))


def old_detector_set(clf, lib):
    """The detectors as models kept them on the old path: every fold sibling of each."""
    from ensel.risk.combined import DetectorSet

    fitted = list(lib.detectors.subset().runs.values())
    return DetectorSet(fitted, clf.detectors_.combination)


def old_risk(detectors, X) -> pd.DataFrame:
    """``risk(X)`` on the old path: each detector's siblings in turn on one thread."""
    R = np.stack([f.risk(X) for f in detectors.fitted])
    out = pd.DataFrame(R.T, columns=detectors.combination.names)
    out["combined"] = detectors.combination.combined(R)
    return out


def mb(obj) -> float:
    """Size of the plain pickle (how ``save`` wrote models on the old path)."""
    return len(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)) / 1e6


def saved_mb(clf, risk: bool) -> float:
    """Size of the file ``clf.save(path, risk=risk)`` writes (compressed, the default)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.pkl")
        clf.save(path, risk=risk)
        return os.path.getsize(path) / 1e6


def quality(y_true, proba, classes) -> tuple[float, float]:
    from sklearn.metrics import log_loss, roc_auc_score

    y = np.asarray(y_true)
    if len(classes) == 2:
        auc = roc_auc_score(y == classes[1], proba[:, 1])
    else:
        auc = roc_auc_score(y, proba, multi_class="ovr", labels=list(classes))
    return float(auc), float(log_loss(y, np.clip(proba, 1e-15, 1), labels=list(classes)))


def run_dataset(name: str, quick: bool, n_jobs: int, peer: bool, sink=None) -> list[dict]:
    """Every variant's row for ``name``; ``sink(rows)`` after each step (a partial run keeps
    what it measured). Steps in order of importance: the default, the old path, refit-full,
    risk, the budgets, the peer."""
    from ensel import EnsembleSelectionClassifier

    X_tr, y_tr, groups, X_te, y_te, X_pr = problem(name, quick)
    lib, build_s = library(name, quick, n_jobs)
    k = 1_000 / len(X_pr)
    rows: list[dict] = []
    extra: dict = {}

    def fit(**kwargs):
        start = time.perf_counter()
        clf = EnsembleSelectionClassifier(
            library=lib, cv=5, n_jobs=n_jobs, random_state=SEED, **kwargs
        ).fit(X_tr, y_tr, groups=groups)
        return clf, time.perf_counter() - start

    def done(row_: dict | None = None) -> None:
        if row_ is not None:
            rows.append(row_)
        for r in rows:
            r.update(extra)
        if sink is not None:
            sink(rows)

    def row(variant, clf, seconds, proba, size, size_risk, fit_s, note=""):
        auc, ll = quality(y_te, proba, clf.classes_)
        done(
            {
                "dataset": name,
                "variant": variant,
                "members": len(clf.weights_),
                "runs": len(clf.fitted_members_.runs),
                "est. ms/1k": clf.predict_cost_ms_,
                "s/1k rows": seconds[0] * k,
                "CPU s/1k": seconds[1] * k,
                "MB": size,
                "MB with risk": size_risk,
                "AUC": auc,
                "log loss": ll,
                "fit s": fit_s,
                "note": note,
            }
        )

    free, fit_s = fit(max_predict_ms=None)  # the ensemble as ensel chose it before
    new_detectors = free.detectors_
    old_detectors = old_detector_set(free, lib)
    free.detectors_ = None
    size_old = mb(free)
    free.detectors_ = old_detectors
    size_old_risk = mb(free)
    free.detectors_ = new_detectors
    size_plain, size_new_risk = _sizes(free)

    new_s = timed(lambda: free.predict_proba(X_pr))
    new_proba = free.predict_proba(X_te)
    old_s = timed(lambda: old_predict_proba(free, X_pr))
    old_proba = old_predict_proba(free, X_te)
    same = float(np.abs(new_proba - old_proba).max())
    row("old path", free, old_s, old_proba, size_old, size_old_risk, fit_s,
        "no budget; old save: plain pickle, every detector sibling")  # fmt: skip
    row("no budget, new path", free, new_s, new_proba, size_plain, size_new_risk, fit_s,
        f"largest difference from the old path {same:.1e}")  # fmt: skip

    default, default_s = fit()
    t = timed(lambda: default.predict_proba(X_pr))
    chosen = default.predict_budget_.get("max_predict_ms")
    note = f"budget {chosen:.0f} ms" if chosen else "no cheaper ensemble within noise"
    row("default (auto budget)", default, t, default.predict_proba(X_te), *_sizes(default),
        default_s, note)  # fmt: skip

    refit, refit_s = fit(refit="full")
    refit_plain, refit_risk = _sizes(refit)
    t = timed(lambda: refit.predict_proba(X_pr))
    row('default + refit="full"', refit, t, refit.predict_proba(X_te), refit_plain, refit_risk,
        refit_s)  # fmt: skip

    risk_new = timed(lambda: free.risk(X_pr))
    risk_old = timed(lambda: old_risk(old_detectors, X_pr))
    old_te, new_te = old_risk(old_detectors, X_te), free.risk(X_te)
    extra["risk s/1k (old)"], extra["risk CPU s/1k (old)"] = risk_old[0] * k, risk_old[1] * k
    extra["risk s/1k (new)"], extra["risk CPU s/1k (new)"] = risk_new[0] * k, risk_new[1] * k
    extra["risk corr"] = float(np.corrcoef(old_te["combined"], new_te["combined"])[0, 1])
    done()

    for fraction in BUDGETS:
        budget = fraction * free.predict_cost_ms_
        tight, tight_s = fit(max_predict_ms=budget)
        plain, risk = _sizes(tight)
        t = timed(lambda c=tight: c.predict_proba(X_pr))
        row(f"budget {fraction:.0%} ({budget:.0f} ms)", tight, t, tight.predict_proba(X_te),
            plain, risk, tight_s)  # fmt: skip
    if peer:
        done(_autogluon(name, X_tr, y_tr, X_te, y_te, X_pr, quick))
    print(f"{name}: library built or reopened in {build_s:.0f} s", flush=True)
    return rows


def _sizes(clf) -> tuple[float, float]:
    """Saved sizes without and with risk."""
    return saved_mb(clf, risk=False), saved_mb(clf, risk=True)


def _autogluon(name, X_tr, y_tr, X_te, y_te, X_pr, quick) -> dict:
    """AutoGluon best_quality on the same training rows; its predict time on the same rows
    (the test split and the predict rows in one call, timed per row)."""
    from benchmarks._peers import run_autogluon

    train = X_tr.assign(__target__=y_tr.to_numpy())
    both = pd.concat([X_te, X_pr], ignore_index=True)
    problem_type = "binary" if y_tr.nunique() == 2 else "multiclass"
    out = {"dataset": name, "variant": "AutoGluon best_quality"}
    try:
        res = run_autogluon(
            train, both, "__target__", problem_type, 30 if quick else AUTOGLUON_SECONDS,
            presets="best_quality", num_cpus=2, seed=SEED, eval_metric="log_loss",
        )  # fmt: skip
    except Exception as exc:  # the peer failing is reported, not fatal
        out["note"] = f"failed: {' '.join(str(exc).split())[:200]}"
        return out
    proba = np.asarray(res.predictions)[: len(X_te)]
    auc, ll = quality(y_te, proba, np.asarray(res.classes, dtype=y_te.dtype))
    out.update(
        {
            "s/1k rows": res.predict_seconds * 1_000 / len(both),
            "MB": res.model_mb,
            "AUC": auc,
            "log loss": ll,
            "fit s": res.fit_seconds,
            "note": f"time_limit={30 if quick else AUTOGLUON_SECONDS} s, 2 cores",
        }
    )
    return out


def table(rows: list[dict]) -> str:
    columns = ["dataset", "variant", "members", "runs", "est. ms/1k", "s/1k rows", "CPU s/1k", "MB",
               "MB with risk", "AUC", "log loss", "fit s", "note"]  # fmt: skip
    frame = pd.DataFrame(rows).reindex(columns=columns)

    def fmt(v, col):
        if isinstance(v, float) and np.isnan(v):
            return ""
        if col in ("AUC", "log loss"):
            return f"{v:.4f}"
        if col in ("s/1k rows", "CPU s/1k"):
            return f"{v:.3f}"
        if col in ("members", "runs"):
            return str(int(v))
        if isinstance(v, float):
            return f"{v:.1f}"
        return str(v)

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for _, r in frame.iterrows():
        lines.append("| " + " | ".join(fmt(r[c], c) for c in columns) + " |")
    return "\n".join(lines)


def ratios(rows: list[dict]) -> list[str]:
    """The issue's targets, per dataset, from one run."""
    frame = pd.DataFrame(rows)
    out = []
    for name, part in frame.groupby("dataset", sort=False):
        by = part.set_index("variant")
        old, free = by.loc["old path"], by.loc["no budget, new path"]
        new, refit = by.loc["default (auto budget)"], by.loc['default + refit="full"']
        line = (
            f"- {name}: default/old speed-up {old['s/1k rows'] / new['s/1k rows']:.1f}x wall "
            f"({old['CPU s/1k'] / new['CPU s/1k']:.1f}x CPU) at AUC {new['AUC'] - old['AUC']:+.4f}"
            f", log loss {new['log loss'] - old['log loss']:+.4f} (new path alone "
            f"{old['s/1k rows'] / free['s/1k rows']:.1f}x, the auto budget "
            f"{free['s/1k rows'] / new['s/1k rows']:.1f}x); "
            f"refit-full a further {new['s/1k rows'] / refit['s/1k rows']:.1f}x wall "
            f"({new['CPU s/1k'] / refit['CPU s/1k']:.1f}x CPU) at AUC "
            f"{refit['AUC'] - new['AUC']:+.4f}; risk(X) "
            f"{old['risk s/1k (old)'] / old['risk s/1k (new)']:.1f}x wall "
            f"({old['risk CPU s/1k (old)'] / old['risk CPU s/1k (new)']:.1f}x CPU) "
            f"faster (corr. of combined risk {old['risk corr']:.3f}); saved model with risk "
            f"{old['MB with risk'] / new['MB with risk']:.1f}x smaller "
            f"({old['MB with risk']:.1f} -> {new['MB with risk']:.1f} MB; no budget "
            f"{free['MB with risk']:.1f} MB; refit-full {refit['MB with risk']:.1f} MB)"
        )
        if "AutoGluon best_quality" in by.index and pd.notna(
            by.loc["AutoGluon best_quality"].get("s/1k rows", np.nan)
        ):
            ag = by.loc["AutoGluon best_quality"]["s/1k rows"]
            line += (
                f"; per row vs AutoGluon best_quality: default {new['s/1k rows'] / ag:.2f}x, "
                f"refit-full {refit['s/1k rows'] / ag:.2f}x its time"
            )
        out.append(line)
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--datasets", default=None)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument("--no-peer", action="store_true", help="skip AutoGluon")
    parser.add_argument("--no-write", action="store_true", help="do not touch docs/")
    parser.add_argument("--rows-out", default=None, help="also write the rows as JSON here")
    parser.add_argument(
        "--from-json",
        default=None,
        help="comma-separated --rows-out files of parallel runs (one dataset each): "
        "print and write their table instead of running",
    )
    args = parser.parse_args(argv)
    if args.from_json:
        parts = [json.loads(Path(p).read_text()) for p in args.from_json.split(",")]
        rows = [r for part in parts for r in part["rows"]]
        loads = [part["load"] for part in parts]
        report(rows, loads, args, parallel=len(parts))
        return
    names = args.datasets.split(",") if args.datasets else (
        QUICK_DATASETS if args.quick else DATASETS
    )  # fmt: skip
    load_before = os.getloadavg()
    rows: list[dict] = []
    for name in names:
        if args.build_only:
            lib, seconds = library(name, args.quick, args.n_jobs)
            print(f"{name}: library of {lib.n_members} members in {seconds:.0f} s", flush=True)
            continue

        before = list(rows)

        def sink(part, before=before):
            if args.rows_out:
                load = [list(load_before), list(os.getloadavg())]
                Path(args.rows_out).write_text(
                    json.dumps({"rows": before + part, "load": load}, default=float)
                )

        rows += run_dataset(name, args.quick, args.n_jobs, peer=not args.no_peer, sink=sink)
        print(table(rows), flush=True)
    if args.build_only:
        return
    load = [list(load_before), list(os.getloadavg())]
    if args.rows_out:
        Path(args.rows_out).write_text(json.dumps({"rows": rows, "load": load}, default=float))
    report(rows, [load], args, parallel=1)


def report(rows: list[dict], loads: list, args, parallel: int) -> None:
    text = table(rows)
    summary = ratios(rows)
    print(text)
    print("\n".join(summary))
    if args.no_write:
        return
    command = "python -m benchmarks.bench_predict" + (" --quick" if args.quick else "")
    if parallel > 1:
        command = (
            f"{parallel} processes, one dataset each: python -m benchmarks.bench_predict "
            "--datasets NAME --no-write --rows-out NAME.json; then --from-json"
        )
    starts = ", ".join(str(tuple(round(v, 1) for v in load[0])) for load in loads)
    ends = ", ".join(str(tuple(round(v, 1) for v in load[1])) for load in loads)
    write_section(
        SECTION,
        [
            "",
            machine_line(command),
            f"Load average (1, 5, 15 min) at the start {starts}, at the end {ends}: the machine "
            "was shared with other jobs, so compare ratios within a dataset (one process), not "
            "absolute times; CPU seconds (this process, all threads) are robust to the load, "
            "wall seconds are what a user waits.",
            "",
            text,
            "",
            *summary,
            "",
        ],
    )


if __name__ == "__main__":
    main()
