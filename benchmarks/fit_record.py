"""One budgeted ensel fit of a ``bench_automl`` dataset with its store kept, and what its build
did: test scores, members, the spare tier, and fit seconds and ensemble weight per family; or
such a store selected again with other ``prune_fraction`` values. For telling whether the code
or the session moved a benchmark's figure: fit the same dataset and seed from a git worktree of
each commit, one after another on a quiet machine.

    python -m benchmarks.fit_record doctor_contacts 0 --budget 300 --store /tmp/dc0
    python -m benchmarks.fit_record doctor_contacts 0 --reselect /tmp/dc0 --prune 0.1657 1.0
    PYTHONPATH=/tmp/wt_old python benchmarks/fit_record.py doctor_contacts 0 --store /tmp/old0

The last form fits an older commit (a worktree at /tmp/wt_old) with this file: ensel and the
benchmark helpers it imports come from the worktree (they exist from dbb724b on).

``--library`` takes a built-in spec name, a spec path, or ``strong`` / ``tabm`` (the
configurations of ``bench_automl``). Each fit or selection prints one JSON line with the
commit, the versions and the load average at its start; a fit also prints its per-family table.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pandas as pd

from benchmarks._record import load_average, provenance
from benchmarks.bench_automl import pair_scores
from benchmarks.datasets import train_groups, train_test

CONFIG_SPECS = ("strong", "tabm")
"""``bench_automl``'s configurations a fit takes by name (their ``*_spec`` functions)."""


def config_spec(name: str) -> dict:
    """The spec dict of the ``bench_automl`` configuration ``name`` (imported only when asked,
    so that older commits' benchmarks, which lack some, still run the rest)."""
    from benchmarks import bench_automl

    return getattr(bench_automl, f"{name}_spec")()


def _data(dataset: str, seed: int):
    """Training and test rows of the protocol split, labels as text, and the fit's groups."""
    X_tr, X_te, y_tr, y_te, ds = train_test(dataset, seed)
    return X_tr, X_te, y_tr.astype(str), y_te.astype(str), train_groups(ds, seed)


def family_table(store: Path, members: pd.DataFrame) -> pd.DataFrame:
    """Per family of the store's runs (models and detectors): its runs, those that ended ok,
    the fit seconds they took (every fold, as the store records them) and the ensemble's
    weight."""
    rows = [json.loads(line) for path in store.rglob("manifest.jsonl") for line in path.open()]
    runs = pd.DataFrame(rows)
    table = runs.groupby("family").agg(
        runs=("run", "size"),
        ok=("status", lambda s: int((s == "ok").sum())),
        fit_s=("fit_seconds", "sum"),
    )
    table["weight"] = members.groupby("family")["weight"].sum()
    return table.fillna({"weight": 0.0}).sort_values("fit_s", ascending=False)


def _scored(clf, record: dict, data) -> dict:
    """``record`` with the provenance at the start, then ``clf`` fitted on ``data``'s training
    rows (its wall seconds) and scored on its test rows."""
    X_tr, X_te, y_tr, y_te, groups = data
    record.update(provenance())
    start = time.perf_counter()
    clf.fit(X_tr, y_tr, groups=groups)
    record["fit_s"] = time.perf_counter() - start
    record.update(pair_scores(y_te, [str(c) for c in clf.classes_], clf.predict_proba(X_te)))
    record["members"] = len(clf.members_)
    return record


def fit(dataset: str, seed: int, budget: float, library: str, store: Path) -> dict:
    """Fit ``library`` under ``budget`` seconds into ``store`` (which must not exist yet)."""
    from ensel import EnsembleSelectionClassifier

    if store.exists():
        raise SystemExit(f"{store} exists: give a new --store path (a fit here would resume it)")
    spec = config_spec(library) if library in CONFIG_SPECS else library
    clf = EnsembleSelectionClassifier(
        library=spec, time_limit=budget, n_jobs=2, random_state=seed, store=str(store)
    )
    record = {"dataset": dataset, "seed": seed, "budget": budget, "library": library}
    record = _scored(clf, record, _data(dataset, seed))
    members = clf.members_
    tier = members.get("tier", pd.Series("main", index=members.index))
    record.update(
        spare_members=int((tier == "spare").sum()),
        budget_=clf.budget_.as_dict(),
        load_end=load_average(),
    )
    print(json.dumps(record, default=str), flush=True)
    print(family_table(store, members).round(3).to_string(), flush=True)
    return record


def reselect(dataset: str, seed: int, store: Path, prunes: list[float]) -> list[dict]:
    """Select again from ``store`` (no time limit) with each ``prune_fraction`` of ``prunes``."""
    from ensel import EnsembleSelectionClassifier

    data = _data(dataset, seed)
    out = []
    for prune in prunes:
        clf = EnsembleSelectionClassifier(
            library=str(store), random_state=seed, n_jobs=2, prune_fraction=prune
        )
        record = {"dataset": dataset, "seed": seed, "store": str(store), "prune_fraction": prune}
        out.append(_scored(clf, record, data))
        print(json.dumps(out[-1], default=str), flush=True)
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset")
    parser.add_argument("seed", type=int)
    parser.add_argument("--budget", type=float, default=300.0)
    parser.add_argument("--library", default="default")
    parser.add_argument("--store", type=Path, help="where the fit keeps its store (new)")
    parser.add_argument("--reselect", type=Path, help="a kept store to select from again")
    parser.add_argument("--prune", type=float, nargs="+", default=[1.0])
    args = parser.parse_args(argv)
    if (args.store is None) == (args.reselect is None):
        parser.error("give --store (fit) or --reselect (select again), not both")
    if args.reselect is not None:
        reselect(args.dataset, args.seed, args.reselect, args.prune)
    else:
        fit(args.dataset, args.seed, args.budget, args.library, args.store)


if __name__ == "__main__":
    main()
