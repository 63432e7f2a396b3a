"""A time budget for the whole fit, on data with missing values: wall time against the budget,
and test AUC and log loss against the budget, beside HistGradientBoosting (no budget; it takes
seconds) and AutoGluon best_quality given the same budget.

    python -m benchmarks.bench_budget [--quick] [--datasets doctor_aus,chile,biopsy_na]
        [--budgets 30,60,120] [--long 300] [--peers hgb,autogluon] [--seed 0]
        [--records PATH] [--resume] [--report-only]

Protocol: allowed real datasets that have missing values of their own (biopsy_na: V6; chile:
income, education, statusquo, age) and DoctorAUS (none), each as it is ("own") and with 20% of
the cells of every feature column removed at random ("+20%", ``remove_cells``); the fixed 70/30
train/test protocol split of ``benchmarks.datasets`` (grouped by patient for biopsy). ensel is
``EnsembleSelectionClassifier()`` with its defaults (the default spec with its detectors, cv=5,
n_jobs=-1) and ``time_limit=B``; AutoGluon is ``TabularPredictor(presets="best_quality",
eval_metric="log_loss").fit(time_limit=B)`` on 2 CPUs in its own environment
(``benchmarks/_peers.py``). Budgets ``--budgets`` for every (dataset, variant); ``--long``
budgets for the first (dataset, variant) only, run last. The done-when check fits the first
5,000 rows of DoctorAUS with ``time_limit=60`` (5,000 rows on 2 cores must return in 66 s).

Every job is appended to ``--records`` (JSON lines) as it ends, and the table and the plot
(docs/bench_budget.svg) are rewritten after each job, so a run that is stopped still reports
what it measured; ``--resume`` skips the jobs already in the records.
--quick: biopsy_na as it is, a 40 s budget, the tiny spec, HistGradientBoosting only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import log_loss, roc_auc_score

from benchmarks._report import ROOT, machine_line, write_section
from benchmarks.datasets import load, train_test

SECTION = "## Time budget on data with missing values (bench_budget)"
PLOT = ROOT / "docs" / "bench_budget.svg"
DONE_WHEN_ROWS = 5000
DONE_WHEN_BUDGET = 60


def _scores(y_test: pd.Series, proba: np.ndarray, classes: list) -> tuple[float, float]:
    """Test AUC (macro one-vs-rest for more than two classes) and log loss."""
    y = y_test.astype(str).to_numpy()
    labels = [str(c) for c in classes]
    proba = np.clip(np.asarray(proba, dtype=float), 1e-15, 1.0)
    proba = proba / proba.sum(axis=1, keepdims=True)
    if len(labels) == 2:
        auc = roc_auc_score(y == labels[1], proba[:, 1])
    else:
        auc = roc_auc_score(y, proba, multi_class="ovr", average="macro", labels=labels)
    return float(auc), float(log_loss(y, proba, labels=labels))


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.1f}/{five:.1f}/{fifteen:.1f}"


def run_ensel(X_tr, X_te, y_tr, y_te, groups, budget, seed, spec) -> dict:
    from ensel import EnsembleSelectionClassifier

    model = EnsembleSelectionClassifier(
        library=spec, time_limit=budget, random_state=seed, verbose=0
    )
    start = time.monotonic()
    model.fit(X_tr, y_tr, groups=groups)
    wall = time.monotonic() - start
    record = {
        "wall": wall,
        "members": len(model.members_),
        "library": len(model.leaderboard_),
        "budget_cut": model.budget_.as_dict(),
    }
    if X_te is not None and len(X_te):
        proba = model.predict_proba(X_te)
        record["auc"], record["logloss"] = _scores(y_te, proba, list(model.classes_))
    return record


def run_peer(name, X_tr, X_te, y_tr, y_te, budget, seed, problem_type) -> dict:
    from benchmarks._peers import run_peer as peer

    target = "__target__"
    train = X_tr.assign(**{target: y_tr.astype(str).to_numpy()})
    test = X_te.assign(**{target: y_te.astype(str).to_numpy()})
    kwargs = {}
    if name == "autogluon":  # dynamic stacking's sub-fit finds no model in short budgets here
        kwargs = {"eval_metric": "log_loss", "fit_kwargs": {"dynamic_stacking": False}}
    start = time.monotonic()
    result = peer(name, train, test, target, problem_type, budget, seed=seed, **kwargs)
    wall = time.monotonic() - start
    auc, loss = _scores(y_te, result.predictions, result.classes)
    return {"wall": wall, "fit": result.fit_seconds, "auc": auc, "logloss": loss}


def jobs(args) -> list[dict]:
    """The done-when check, then every (dataset, variant): HistGradientBoosting, then ensel and
    AutoGluon at each budget; the ``--long`` budgets of the first cell come last."""
    out = [{"kind": "done_when", "dataset": "doctor_aus", "variant": "first 5000 rows"}]
    cells = [(name, variant) for name in args.datasets for variant in args.variants]
    for name, variant in cells:
        if "hgb" in args.peers:
            out.append({"kind": "hgb", "dataset": name, "variant": variant, "budget": None})
        for budget in args.budgets:
            out.append({"kind": "ensel", "dataset": name, "variant": variant, "budget": budget})
            if "autogluon" in args.peers:
                out.append(
                    {"kind": "autogluon", "dataset": name, "variant": variant, "budget": budget}
                )
    for budget in args.long if cells else []:
        name, variant = cells[0]
        out.append({"kind": "ensel", "dataset": name, "variant": variant, "budget": budget})
        if "autogluon" in args.peers:
            out.append({"kind": "autogluon", "dataset": name, "variant": variant, "budget": budget})
    return out


def key(job: dict) -> str:
    budget = None if job["kind"] == "done_when" else job.get("budget")
    return f"{job['kind']}|{job['dataset']}|{job['variant']}|{budget}"


def run_job(job: dict, args) -> dict:
    load_before = _load()
    if job["kind"] == "done_when":
        ds = load("doctor_aus")
        X, y = ds.X.iloc[:DONE_WHEN_ROWS], ds.y.iloc[:DONE_WHEN_ROWS]
        result = run_ensel(X, None, y, None, None, DONE_WHEN_BUDGET, args.seed, args.spec)
        result["budget"] = DONE_WHEN_BUDGET
    else:
        missing = 0.2 if job["variant"] == "+20%" else 0.0
        X_tr, X_te, y_tr, y_te, ds = train_test(job["dataset"], args.seed, missing=missing)
        groups = None
        if ds.groups is not None:  # the protocol split's training rows, in order
            from benchmarks.datasets import protocol_split

            train, _ = protocol_split(ds.y, args.seed, groups=ds.groups)
            groups = ds.groups.iloc[train].reset_index(drop=True)
        if job["kind"] == "ensel":
            result = run_ensel(X_tr, X_te, y_tr, y_te, groups, job["budget"], args.seed, args.spec)
        else:
            budget = job["budget"] or 60
            result = run_peer(
                job["kind"], X_tr, X_te, y_tr, y_te, budget, args.seed, ds.problem_type
            )
        result["rows"] = len(X_tr)
        result["missing_share"] = float(X_tr.isna().to_numpy().mean())
    return {**job, **result, "load_before": load_before, "load_after": _load()}


def _fmt(value, spec: str = ".3f") -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "-"
    return format(value, spec)


def report(records: list[dict], args, command: str, planned: list[dict] | None = None) -> None:
    lines = [
        "",
        machine_line(command),
        "",
        "The machine is shared with other jobs (load averages 1/5/15 min before and after each "
        "job are in the table): wall times and the quality reached within a budget are "
        "pessimistic for a dedicated 2-core machine. Wall seconds are what the caller waited: "
        "for ensel its `fit`; for the peers their subprocess with data written as CSV, imports "
        "and prediction; own fit s is the peer's own fit time. ensel runs the default spec "
        "(with its detectors); HistGradientBoosting takes no budget; AutoGluon best_quality gets "
        "the same budget and 2 CPUs.",
        "",
    ]
    if planned is not None:
        measured = {key(r) for r in records}
        missing = [key(j) for j in planned if key(j) not in measured]
        lines += [
            f"Jobs run: {len(planned) - len(missing)} of {len(planned)} planned"
            + (f"; not run (the run was stopped): {', '.join(missing)}." if missing else "."),
            "",
        ]
    done = [r for r in records if r["kind"] == "done_when"]
    for r in done:
        if r.get("error"):
            lines += [f"Done-when check (`time_limit=60`, 5,000 rows): failed: {r['error']}", ""]
            continue
        verdict = "met" if r["wall"] <= 1.1 * r["budget"] else "MISSED"
        lines += [
            f"Done-when check: `time_limit={r['budget']}` on the first {DONE_WHEN_ROWS:,} rows "
            f"of DoctorAUS returned in **{r['wall']:.1f} s** (target 66 s: {verdict}) with "
            f"{r['members']} of {r['library']} library members in the ensemble; load "
            f"{r['load_before']} before, {r['load_after']} after.",
            "",
        ]
    lines += [
        "| dataset | variant | rows | missing | budget s | method | wall s | wall/budget "
        "| own fit s | test AUC | test log loss | load before | load after |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        if r["kind"] == "done_when":
            continue
        budget = r.get("budget")
        method = {"ensel": "ensel", "autogluon": "AutoGluon best_quality", "hgb": "HGB"}[r["kind"]]
        if r.get("error"):
            lines.append(
                f"| {r['dataset']} | {r['variant']} | - | - | {budget or '-'} | {method} | "
                f"failed: {r['error']} | - | - | - | - | {r['load_before']} | - |"
            )
            continue
        ratio = r["wall"] / budget if budget else None
        wall = r["wall"]
        lines.append(
            f"| {r['dataset']} | {r['variant']} | {r.get('rows', '-')} | "
            f"{_fmt(r.get('missing_share'), '.1%')} | {budget or '-'} | {method} | "
            f"{wall:.1f} | {_fmt(ratio, '.2f')} | {_fmt(r.get('fit'), '.1f')} | "
            f"{_fmt(r.get('auc'))} | "
            f"{_fmt(r.get('logloss'))} | {r['load_before']} | {r['load_after']} |"
        )
    ensel = [r for r in records if r["kind"] == "ensel" and not r.get("error")]
    if ensel:
        worst = max(r["wall"] / r["budget"] for r in ensel)
        lines += [
            "",
            f"ensel wall time against its budget: at most {worst:.2f} x the budget over "
            f"{len(ensel)} fits (the target is at most 1.10 x).",
        ]
    pairs = _pairs(records)
    if pairs:
        wins = sum(e < a for e, a in pairs)
        lines += [
            f"Test log loss, ensel against AutoGluon best_quality at the same budget: lower in "
            f"{wins} of {len(pairs)} (dataset, variant, budget) cells.",
        ]
    lines += _by_budget(records)
    if PLOT.exists():
        lines += ["", f"![quality against the time budget]({PLOT.name})"]
    write_section(SECTION, lines)


def _by_budget(records: list[dict]) -> list[str]:
    """Per budget: ensel's wall time against it, and in how many cells its test log loss is
    below AutoGluon's (same budget) and below HistGradientBoosting's."""
    ok = [r for r in records if not r.get("error") and r["kind"] != "done_when"]
    hgb = {(r["dataset"], r["variant"]): r for r in ok if r["kind"] == "hgb"}
    ag = {(r["dataset"], r["variant"], r["budget"]): r for r in ok if r["kind"] == "autogluon"}
    lines = []
    for budget in sorted({r["budget"] for r in ok if r["kind"] == "ensel"}):
        mine = [r for r in ok if r["kind"] == "ensel" and r["budget"] == budget]
        vs_ag = [
            (r["logloss"], ag[(r["dataset"], r["variant"], budget)]["logloss"])
            for r in mine
            if (r["dataset"], r["variant"], budget) in ag
        ]
        vs_hgb = [
            (r["logloss"], hgb[(r["dataset"], r["variant"])]["logloss"])
            for r in mine
            if (r["dataset"], r["variant"]) in hgb
        ]
        ratio = max(r["wall"] / budget for r in mine)
        lines.append(
            f"- budget {budget:g} s: ensel's wall time at most {ratio:.2f} x the budget over "
            f"{len(mine)} fit(s); test log loss below AutoGluon's in "
            f"{sum(a < b for a, b in vs_ag)} of {len(vs_ag)} cell(s) (mean difference "
            f"{np.mean([a - b for a, b in vs_ag]) if vs_ag else float('nan'):+.4f}), below "
            f"HistGradientBoosting's in {sum(a < b for a, b in vs_hgb)} of {len(vs_hgb)}."
        )
    return ["", *lines] if lines else []


def _pairs(records: list[dict]) -> list[tuple[float, float]]:
    index = {
        (r["dataset"], r["variant"], r.get("budget")): r
        for r in records
        if r["kind"] == "autogluon" and not r.get("error")
    }
    return [
        (r["logloss"], index[(r["dataset"], r["variant"], r["budget"])]["logloss"])
        for r in records
        if r["kind"] == "ensel"
        and not r.get("error")
        and (r["dataset"], r["variant"], r["budget"]) in index
    ]


def plot(records: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = sorted({(r["dataset"], r["variant"]) for r in records if r["kind"] != "done_when"})
    if not cells:
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for c, (dataset, variant) in enumerate(cells):
        colour = colours[c % len(colours)]
        for kind, style in (("ensel", "-o"), ("autogluon", "--s")):
            rows = sorted(
                (r for r in records if r["kind"] == kind and (r["dataset"], r["variant"]) ==
                 (dataset, variant) and r.get("auc") is not None),
                key=lambda r: r["budget"],
            )  # fmt: skip
            if not rows:
                continue
            label = f"{'ensel' if kind == 'ensel' else 'AutoGluon'} {dataset} {variant}"
            budgets = [r["budget"] for r in rows]
            axes[0].plot(budgets, [r["logloss"] for r in rows], style, color=colour, label=label)
            axes[1].plot(budgets, [r["auc"] for r in rows], style, color=colour)
        for r in records:
            if (
                r["kind"] == "hgb"
                and not r.get("error")
                and (r["dataset"], r["variant"]) == (dataset, variant)
            ):
                axes[0].axhline(r["logloss"], color=colour, linestyle=":", linewidth=1)
                axes[1].axhline(r["auc"], color=colour, linestyle=":", linewidth=1)
    for ax, name in zip(axes, ("test log loss (lower is better)", "test AUC"), strict=True):
        ax.set_xscale("log")
        ax.set_xlabel("time budget (s)")
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, loc="best")
    fig.suptitle("Quality against the time budget (dotted: HistGradientBoosting, no budget)")
    fig.tight_layout()
    fig.savefig(PLOT)
    plt.close(fig)
    print(f"wrote {PLOT.relative_to(ROOT)}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--datasets", default="doctor_aus,chile,biopsy_na")
    parser.add_argument("--variants", default="own,+20%")
    parser.add_argument("--budgets", default="30,60,120")
    parser.add_argument("--long", default="300", help="budgets for the first cell only")
    parser.add_argument("--peers", default="hgb,autogluon")
    parser.add_argument("--spec", default="default")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--records", type=Path, default=Path("/tmp/ensel-bench-budget.jsonl"))
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--no-done-when", action="store_true")
    parser.add_argument(
        "--report-only", action="store_true", help="rewrite the table and plot from --records"
    )
    args = parser.parse_args(argv)
    command = "python -m benchmarks.bench_budget " + " ".join(argv or sys.argv[1:])
    if args.quick:
        args.datasets, args.variants, args.budgets, args.long = "biopsy_na", "own", "40", ""
        args.peers, args.spec, args.no_done_when = "hgb", "tiny", True
    args.datasets = [d for d in args.datasets.split(",") if d]
    args.variants = [v for v in args.variants.split(",") if v]
    args.budgets = [float(b) for b in args.budgets.split(",") if b]
    args.long = [float(b) for b in args.long.split(",") if b]
    args.peers = [p for p in args.peers.split(",") if p]
    todo = jobs(args)
    if args.no_done_when:
        todo = [j for j in todo if j["kind"] != "done_when"]
    records = []
    if args.resume and args.records.exists() and not args.report_only:
        records = [json.loads(line) for line in args.records.read_text().splitlines() if line]
    elif args.records.exists() and not args.report_only:
        args.records.unlink()
    if args.report_only:
        records = [json.loads(line) for line in args.records.read_text().splitlines() if line]
        plot(records)
        report(records, args, "python -m benchmarks.bench_budget", todo)
        return
    finished = {key(r) for r in records}
    for job in todo:
        if key(job) in finished:
            continue
        print(f"{time.strftime('%H:%M:%S')} {key(job)} (load {_load()})", flush=True)
        try:
            record = run_job(job, args)
        except Exception as exc:  # a failed job is reported, the benchmark goes on
            message = " ".join(str(exc).split())
            record = {**job, "error": f"{type(exc).__name__}: {message}"[:200], "wall": None}
            record.update(load_before=_load(), load_after=_load())
            print(f"  failed: {record['error']}", flush=True)
        print(f"  {json.dumps({k: record[k] for k in record if k != 'budget_cut'})}", flush=True)
        records.append(record)
        with open(args.records, "a") as fh:
            fh.write(json.dumps(record, default=str) + "\n")
        plot(records)
        report(records, args, command, todo)
    df = pd.DataFrame([{k: v for k, v in r.items() if k != "budget_cut"} for r in records])
    if df.empty:
        return
    print(df.to_string())


if __name__ == "__main__":
    main()
