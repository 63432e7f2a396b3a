"""Library builder: wall time and members per minute for a spec with cv=5 on a 5,000-row real
dataset (Ecdat::DoctorAUS) and on 5,000 x 30 synthetic features (the default spec's budget: 10
minutes on 2 cores), the time share of each family, a second (cached) build, and whether
ensemble selection on the built library beats the best single member on held-out rows.

    python -m benchmarks.bench_library [--quick] [--spec default] [--n-jobs 2]

--quick: the tiny spec on 1,000 rows. The table is printed and written to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.datasets import make_classification
from sklearn.model_selection import train_test_split

from benchmarks._report import machine_line, write_section
from benchmarks.datasets import doctor_aus
from ensel.library import build_library
from ensel.metrics import METRICS, greater_is_better, score
from ensel.selection import EnsembleSelection

SECTION = "## Library builder"


def timed_build(X, y, spec: str, n_jobs: int, store: Path) -> tuple[object, float]:
    start = time.perf_counter()
    lib = build_library(X, y, spec=spec, cv=5, store=store, n_jobs=n_jobs, verbose=1)
    return lib, time.perf_counter() - start


def family_shares(lib) -> pd.DataFrame:
    """Seconds of training (all folds, summed over runs) per family and its share."""
    records = pd.DataFrame(lib.store.records.values())
    per_family = records.groupby("family").agg(runs=("run", "size"), seconds=("fit_seconds", "sum"))
    members = lib.members.groupby("family").size().rename("members")
    table = per_family.join(members).fillna(0).sort_values("seconds", ascending=False)
    table["share"] = table["seconds"] / table["seconds"].sum()
    return table


def es_vs_best(lib, X_test, y_test) -> list[dict]:
    """ES (20 bags) vs the best member on the hillclimb set (MODSEL), scored on held-out rows."""
    P = np.asarray(lib.predictions, dtype=np.float64)
    P_test = lib.predict(X_test)
    y_enc = np.searchsorted(lib.classes, np.asarray(y_test))
    rows = []
    for metric in METRICS:
        es = EnsembleSelection(metric=metric, n_bags=20, random_state=0).fit(P, lib.y)
        best = int(
            np.argmax(es.member_scores_ if greater_is_better(metric) else -es.member_scores_)
        )
        ours = score(metric, y_enc, es.predict_proba(P_test))
        single = score(metric, y_enc, P_test[best])
        better = ours > single if greater_is_better(metric) else ours < single
        rows.append({"metric": metric, "es": ours, "modsel": single, "es_better": better})
    return rows


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--spec", default=None)
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args()
    spec = args.spec or ("tiny" if args.quick else "default")
    X, y = doctor_aus()
    if args.quick:
        X, _, y, _ = train_test_split(X, y, train_size=1000, stratify=y, random_state=0)
    with tempfile.TemporaryDirectory() as tmp:
        lib, first = timed_build(X, y, spec, args.n_jobs, Path(tmp) / "timing")
        _, second = timed_build(X, y, spec, args.n_jobs, Path(tmp) / "timing")
        shares = family_shares(lib)
        n_rows = 1000 if args.quick else 5000
        X_syn, y_syn = make_classification(
            n_samples=n_rows, n_features=30, n_informative=12, n_redundant=6, random_state=0
        )
        syn_lib, syn_wall = timed_build(X_syn, y_syn, spec, args.n_jobs, Path(tmp) / "synthetic")
        syn_shares = family_shares(syn_lib)
        X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
        held_lib, _ = timed_build(X_tr, y_tr, spec, args.n_jobs, Path(tmp) / "quality")
        quality = es_vs_best(held_lib, X_te, y_te)

    n = lib.n_members
    print(f"{spec}: {n} members ({len(lib.failures)} failed) on {X.shape} in {first:.1f} s")
    print(shares.to_string())
    print(pd.DataFrame(quality).to_string(index=False))
    command = "python -m benchmarks.bench_library" + (" --quick" if args.quick else "")
    if args.spec:
        command += f" --spec {args.spec}"
    lines = [
        "",
        machine_line(command),
        "",
        f"Spec `{spec}`, cv=5, n_jobs={args.n_jobs}, Ecdat::DoctorAUS ({X.shape[0]} rows, "
        f"{X.shape[1]} columns, 2 categorical; target: consulted a doctor).",
        "",
        "| data | members | failed | wall (s) | members per minute | second build (cached, s) |",
        "|---|---|---|---|---|---|",
        f"| DoctorAUS {X.shape[0]} x {X.shape[1]} | {n} | {len(lib.failures)} | {first:.1f} "
        f"| {60 * n / first:.0f} | {second:.2f} |",
        f"| synthetic {n_rows} x 30 | {syn_lib.n_members} | {len(syn_lib.failures)} "
        f"| {syn_wall:.1f} | {60 * syn_lib.n_members / syn_wall:.0f} | - |",
        "",
        "Training time per family (seconds summed over runs and folds, in the workers):",
        "",
        "| family | runs | members | DoctorAUS (s) | share | synthetic (s) | share |",
        "|---|---|---|---|---|---|---|",
        *[
            f"| {f} | {int(r.runs)} | {int(r.members)} | {r.seconds:.1f} | {r.share:.1%} "
            f"| {syn_shares.seconds.get(f, 0):.1f} | {syn_shares.share.get(f, 0):.1%} |"
            for f, r in shares.iterrows()
        ],
        "",
        f"Ensemble selection (20 bags) on a library built from 70% of the rows, scored on the "
        f"other 30%, against the member with the best hillclimb score (MODSEL); "
        f"ES better on {sum(r['es_better'] for r in quality)} of 8 metrics:",
        "",
        "| metric | ES | MODSEL | ES better |",
        "|---|---|---|---|",
        *[
            f"| {r['metric']} | {r['es']:.4f} | {r['modsel']:.4f} | {_yes(r['es_better'])} |"
            for r in quality
        ],
        "",
    ]
    write_section(SECTION, lines)


if __name__ == "__main__":
    main()
