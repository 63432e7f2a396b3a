"""Open-set forest: ensel's defaults against Steele's settings on the unknown-class benchmark of
``bench_risk`` (one class withheld from training; the report's §4.2 protocol).

    python -m benchmarks.bench_openset [--quick] [--repeats 1]

For each data set and withheld class, a stratified 2-fold split: the forest trains on the
training fold's known classes; the test fold is split in half, one half validates (Steele
trains his threshold for accuracy on validation rows that include unknown classes), the other
tests. Figures: AUC of ranking the unknown class first (the threshold does not enter) and the
accuracy of accepting known and rejecting unknown test rows, with the threshold each setting
learns: ensel's default (the 95% quantile of held-out known rows' risk), Steele's (trained for
accuracy on validation rows with the unknown class: ``fit_threshold``) and the uniform-background
stand-in (``reject_rate=None``, no unknown rows needed).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold

from benchmarks._report import machine_line, write_section
from benchmarks.bench_risk import load_unknown_set
from ensel.risk import OpenSetForest
from ensel.risk.openset import STEELE

SECTION = "## Open-set forest: defaults against Steele's settings (unknown classes)"
SETTINGS = {"ensel default (product, leaf >= 20)": {}, "Steele (min, full trees)": STEELE}
SETS = ("iris", "wine")
"""bench_risk's multi-class sets: its binary ones keep a single known class, and the open-set
forest, a classifier, needs two."""


def _accuracy(risk: np.ndarray, unknown: np.ndarray, threshold: float) -> float:
    """Share of rows accepted when known and rejected (risk above ``threshold``) when not."""
    return float(np.mean((risk > threshold) == unknown))


def one_task(data: str, X, y, unknown, rep: int, trees: int) -> list[dict]:
    rows = []
    split = StratifiedKFold(2, shuffle=True, random_state=rep).split(X, y)
    for fold, (train, test) in enumerate(split):
        train = train[y[train] != unknown]
        if np.unique(y[train]).size < 2:  # a binary set less one class: nothing to classify
            continue
        rng = np.random.default_rng([rep, fold])
        test = rng.permutation(test)
        val, test = test[: len(test) // 2], test[len(test) // 2 :]
        is_unknown = y == unknown
        Xv, Xt = X.iloc[val], X.iloc[test]
        for name, params in SETTINGS.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                det = OpenSetForest(n_estimators=trees, random_state=rep, **params)
                det.fit(X.iloc[train], y[train])
                risk = det.risk(Xt)
                row = {"dataset": data, "withheld": str(unknown), "fold": fold, "setting": name}
                row["auc"] = float(roc_auc_score(is_unknown[test], risk))

                truth = is_unknown[test]
                row["acc_own"] = _accuracy(risk, truth, det.threshold_)  # its own threshold
                quantile = float(np.quantile(det.validation_risk_, 0.95))
                row["acc_q95"] = _accuracy(risk, truth, quantile)
                det.fit_threshold(Xv[~is_unknown[val]], Xv[is_unknown[val]])
                row["acc_steele"] = _accuracy(risk, truth, det.threshold_)
                row["unknown_share"] = float(is_unknown[test].mean())
            rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--trees", type=int, default=None)
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args()
    sets = ("iris", "wine") if args.quick else SETS
    trees = args.trees or (20 if args.quick else 100)
    tasks = []
    for data in sets:
        X, y, withheld = load_unknown_set(data, every_class=True)
        tasks += [(data, X, y, u, rep) for u in withheld for rep in range(args.repeats)]
    start = time.perf_counter()
    out = Parallel(n_jobs=args.n_jobs)(delayed(one_task)(*t, trees) for t in tasks)
    frame = pd.DataFrame([r for rows in out for r in rows])
    seconds = time.perf_counter() - start
    cols = ["auc", "acc_own", "acc_q95", "acc_steele"]
    table = frame.groupby("setting", sort=False)[cols].mean()
    per_set = frame.pivot_table(index="dataset", columns="setting", values="auc", sort=False)
    print(table.round(3).to_string())
    print(per_set.round(3).to_string())
    command = "python -m benchmarks.bench_openset" + (" --quick" if args.quick else "")
    command += f" --repeats {args.repeats} --trees {trees}"
    share = frame["unknown_share"].mean()
    lines = [
        "",
        machine_line(command)
        + f" Wall time {seconds / 60:.0f} min; load average {os.getloadavg()[0]:.1f} at the end.",
        "",
        f"{len(tasks)} tasks (data set x withheld class x repeat, 2 folds each; {trees} trees); "
        f"unknown rows are {share:.0%} of the test rows on average. AUC: ranking the unknown "
        "class first. Accuracy of accepting known and rejecting unknown test rows with the "
        "setting's own threshold (ensel: 95% quantile of held-out known rows; Steele's "
        "settings without unknown rows: the uniform-background stand-in), with the 95% "
        "quantile, and with Steele's threshold trained on validation rows that include the "
        "unknown class (`fit_threshold`).",
        "",
        "| setting | AUC | accuracy, own threshold | accuracy, 95% quantile "
        "| accuracy, Steele's threshold |",
        "|---|---|---|---|---|",
        *[
            f"| {s} | " + " | ".join(f"{v:.3f}" for v in r.to_numpy()) + " |"
            for s, r in table.iterrows()
        ],
        "",
        "AUC per data set:",
        "",
        "| data set | " + " | ".join(per_set.columns) + " |",
        "|---" * (len(per_set.columns) + 1) + "|",
        *[
            f"| {d} | " + " | ".join(f"{v:.3f}" for v in r.to_numpy()) + " |"
            for d, r in per_set.iterrows()
        ],
        "",
    ]
    write_section(SECTION, lines)


if __name__ == "__main__":
    main()
