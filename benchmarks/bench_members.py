"""Which mix of model families wins: one library per (dataset, seed) holding the 2006 grid, the
current boosters and every modern family, then ensemble selection (for log loss) restricted to
family subsets, scored on held-out rows. Selection is cheap, so every mix is compared on the
same fitted members; a mix's build cost is the training seconds of its runs.

    python -m benchmarks.bench_members [--quick] [--seeds 3] [--n-jobs 2]

Protocol: allowed real datasets only (benchmarks/datasets.py), the fixed 70/30 train/test
protocol split per seed, cv=5 inside the training rows. Reported per mix: mean test AUC (one
vs rest, macro, for multiclass) and log loss, the paired difference against the former default
mix with its standard error over (dataset, seed) pairs, wins, and the summed training seconds.
--quick: two small datasets, one seed.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from benchmarks._report import machine_line, markdown_table, write_section
from benchmarks.datasets import CLASSIFICATION, load, protocol_split
from ensel.library import build_library
from ensel.library.spec import load_spec
from ensel.metrics import score
from ensel.selection import EnsembleSelection

SECTION = "## Library members: which family mix wins"
FIXED_GRID = Path(__file__).resolve().parent / "specs" / "fixed_grid.yaml"

OLD = (
    "bagged_trees",
    "random_forest",
    "adaboost",
    "svm",
    "logreg",
    "mlp",
    "knn",
    "naive_bayes",
    "tree",
)
BOOST = ("xgboost", "lightgbm")
MODERN = ("hist_gbdt", "extra_trees", "tabular_mlp")

MODERN_ENTRIES = [
    {
        "family": "hist_gbdt",
        "params": {
            "learning_rate": [0.05],
            "max_leaf_nodes": [7, 31],
            "min_samples_leaf": [5, 40],
            "l2_regularization": [0.0, 1.0],
            "max_features": 0.7,
        },
        "stages": [16, 32, 64, 128, 256, 512],
        "calibration": ["none"],
    },
    {
        "family": "extra_trees",
        "params": {"max_features": ["sqrt", 0.5, 1.0], "min_samples_leaf": [1, 4]},
        "stages": [64, 256],
        "calibration": ["none", "platt"],
    },
    {
        "family": "xgboost",
        "params": {
            "max_depth": [2, 4, 8],
            "learning_rate": 0.05,
            "subsample": 0.8,
            "colsample_bytree": [0.5, 0.9],
            "min_child_weight": [1.0, 5.0],
            "reg_lambda": 3.0,
        },
        "stages": [32, 64, 128, 256, 512],
        "calibration": ["none"],
    },
    {
        "family": "lightgbm",
        "params": {
            "num_leaves": [4, 15, 63],
            "learning_rate": 0.05,
            "subsample": 0.8,
            "colsample_bytree": [0.5, 0.9],
            "min_child_samples": [5, 30],
            "reg_lambda": 1.0,
        },
        "stages": [32, 64, 128, 256, 512],
        "calibration": ["none"],
    },
    {
        "family": "tabular_mlp",
        "params": {"hidden": [128, 256], "dropout": [0.1, 0.3], "weight_decay": [0.01, 0.1]},
        "stages": [2, 6, 14, 30],
        "calibration": ["none"],
    },
]
CATBOOST_ENTRY = {
    "family": "catboost",
    "params": {"depth": [4, 6], "learning_rate": 0.08, "rsm": [0.5, 1.0]},
    "stages": [64, 128, 256, 512],
    "calibration": ["none"],
}


def candidate_spec(with_catboost: bool) -> dict:
    """The former default grid's model entries (benchmarks/specs/fixed_grid.yaml, no detectors)
    plus every modern entry."""
    doc = yaml.safe_load(FIXED_GRID.read_text())
    entries = [dict(e, _tag="old") for e in doc["families"]]
    entries += [dict(e, _tag="modern") for e in MODERN_ENTRIES]
    if with_catboost:
        entries.append(dict(CATBOOST_ENTRY, _tag="modern"))
    return {"name": "candidates", "families": entries}


def _strip(spec: dict) -> tuple[dict, list[str]]:
    tags = [e["_tag"] for e in spec["families"]]
    return {
        **spec,
        "families": [{k: v for k, v in e.items() if k != "_tag"} for e in spec["families"]],
    }, tags


def mixes(lib, spec_doc: dict, tags: list[str]) -> dict[str, np.ndarray]:
    """Boolean member masks of each family mix. The old entries of xgboost/lightgbm (the
    former default) and the modern, wider grids are told apart by run id."""
    tag_of_run = {}
    # runs are expanded entry by entry; recover each run's entry by expanding entries alone
    for entry, tag in zip(spec_doc["families"], tags, strict=True):
        for run in load_spec({"families": [entry]}).runs:
            tag_of_run.setdefault(run.run_id, tag)
    run_tag = lib.members["run"].map(tag_of_run).to_numpy()
    fam = lib.members["family"].to_numpy()
    old = run_tag == "old"
    modern = run_tag == "modern"
    out = {
        "former default (2006 grid + xgb/lgbm)": old,
        "modern only": modern & (fam != "catboost"),
        "default + modern": (old | modern) & (fam != "catboost"),
        "default + modern - tabular_mlp": (old | modern)
        & ~np.isin(fam, ["catboost", "tabular_mlp"]),
        "boosters only (old + modern gbdt)": np.isin(fam, (*BOOST, "hist_gbdt")),
    }
    if (fam == "catboost").any():
        out["default + modern + catboost"] = old | modern
    return out


def run_one(name: str, seed: int, n_jobs: int, with_catboost: bool, store_root: Path) -> list:
    ds = load(name)
    X, y, groups = ds.X, ds.y, ds.groups
    train, test = protocol_split(y, seed, groups=groups)
    spec_doc, tags = _strip(candidate_spec(with_catboost))
    start = time.perf_counter()
    lib = build_library(
        X.iloc[train],
        y.iloc[train],
        spec=spec_doc,
        cv=5,
        n_jobs=n_jobs,
        store=store_root / f"{name}-{seed}",
        random_state=seed,
        verbose=0,
        groups=None if groups is None else groups.iloc[train],
    )
    build = time.perf_counter() - start
    P = np.asarray(lib.predictions, dtype=np.float64)
    P_test = lib.predict(X.iloc[test])
    y_test = np.searchsorted(lib.classes, np.asarray(y.iloc[test]).astype(lib.classes.dtype))
    fit_seconds = lib.members.groupby("run")["fit_seconds"].first()
    rows = []
    for mix, mask in mixes(lib, spec_doc, tags).items():
        if not mask.any():
            continue
        members = np.flatnonzero(mask)
        es = EnsembleSelection(metric="mxe", n_bags=20, random_state=seed).fit(P[members], lib.y)
        proba = es.predict_proba(P_test[members])
        runs = lib.members["run"].to_numpy()[members]
        rows.append(
            {
                "dataset": name,
                "seed": seed,
                "mix": mix,
                "auc": score("roc", y_test, proba),
                "logloss": score("mxe", y_test, proba),
                "train_s": float(fit_seconds.loc[np.unique(runs)].sum()),
                "members": int(members.size),
                "build_s": build,
            }
        )
    return rows


def _se(d: pd.Series) -> float:
    """Standard error of the mean of paired differences (NaN for a single pair)."""
    return float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else float("nan")


def paired(table: pd.DataFrame, base: str) -> pd.DataFrame:
    """Per mix: means, and the paired difference against ``base`` (positive = better)."""
    out = []
    ref = table[table["mix"] == base].set_index(["dataset", "seed"])
    for mix, part in table.groupby("mix", sort=False):
        part = part.set_index(["dataset", "seed"])
        d_auc = part["auc"] - ref["auc"].loc[part.index]
        d_ll = ref["logloss"].loc[part.index] - part["logloss"]
        n = len(part)
        out.append(
            {
                "mix": mix,
                "pairs": n,
                "AUC": part["auc"].mean(),
                "log loss": part["logloss"].mean(),
                "dAUC vs default": d_auc.mean(),
                "se": _se(d_auc),
                "AUC wins": f"{int((d_auc > 0).sum())}/{n}",
                "dLL vs default (+ better)": d_ll.mean(),
                "se ": _se(d_ll),
                "LL wins": f"{int((d_ll > 0).sum())}/{n}",
                "train s (median)": part["train_s"].median(),
            }
        )
    return pd.DataFrame(out)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--datasets", nargs="*", default=None)
    parser.add_argument("--no-catboost", action="store_true")
    parser.add_argument(
        "--store",
        default=None,
        help="keep the libraries here (reused on a rerun) instead of a temporary directory",
    )
    args = parser.parse_args(argv)
    try:
        import catboost  # noqa: F401

        with_catboost = not args.no_catboost
    except ImportError:
        with_catboost = False
    names = args.datasets or (
        ["breast_cancer", "wine"] if args.quick else [n for n in CLASSIFICATION if n != "iris"]
    )
    seeds = range(1 if args.quick else args.seeds)
    load_before = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-members-") as tmp:
        root = Path(args.store) if args.store else Path(tmp)
        for name in names:
            for seed in seeds:
                t = time.perf_counter()
                rows += run_one(name, seed, args.n_jobs, with_catboost, root)
                print(f"{name} seed {seed}: {time.perf_counter() - t:.0f} s", flush=True)
    table = pd.DataFrame(rows)
    summary = paired(table, "former default (2006 grid + xgb/lgbm)")
    load_after = os.getloadavg()
    text = markdown_table(summary, ".4f", index=False)
    print(text)
    command = "python -m benchmarks.bench_members" + (" --quick" if args.quick else "")
    lines = [
        "",
        machine_line(command) + f" Load average (1/5/15 min) {load_before[0]:.1f}/"
        f"{load_before[1]:.1f}/{load_before[2]:.1f} before, {load_after[0]:.1f}/"
        f"{load_after[1]:.1f}/{load_after[2]:.1f} after (shared machine).",
        "",
        f"Datasets: {', '.join(names)}; seeds {list(seeds)}; the fixed 70/30 protocol split "
        "(benchmarks/datasets.py), cv=5, "
        "selection for log loss (20 bags); one library per (dataset, seed), selection restricted "
        "to each mix. Differences are paired over (dataset, seed); se = standard error.",
        "",
        text,
        "",
        "Per pair:",
        "",
        markdown_table(
            table.pivot_table(index=["dataset", "seed"], columns="mix", values="logloss")
        ),
        "",
    ]
    write_section(SECTION + (" (quick)" if args.quick else ""), lines)


if __name__ == "__main__":
    main()
