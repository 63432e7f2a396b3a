"""Open-set forest: ensel's defaults against Steele's settings on the unknown-class benchmark of
``bench_risk`` (one class withheld from training; the report's §4.2 protocol).

    python -m benchmarks.bench_openset [--quick] [--repeats 1]
    python -m benchmarks.bench_openset --digits [--quick] [--trials 5]

For each data set and withheld class, a stratified 2-fold split: the forest trains on the
training fold's known classes; the test fold is split in half, one half validates (Steele
trains his threshold for accuracy on validation rows that include unknown classes), the other
tests. Figures: AUC of ranking the unknown class first (the threshold does not enter) and the
accuracy of accepting known and rejecting unknown test rows, with the threshold each setting
learns: ensel's default (the 95% quantile of held-out known rows' risk), Steele's (trained for
accuracy on validation rows with the unknown class: ``fit_threshold``) and the uniform-background
stand-in (``reject_rate=None``, no unknown rows needed).

``--digits`` runs Steele's Fig. 1 with scikit-learn's digits in place of MNIST (rows:
paper_openset_digits.jsonl): per trial the ten classes are shuffled into 4 known, 3 validation
and 3 test classes; the known classes' rows are split 60/20/20 into training, validation and
test rows; a 40-tree forest is trained; the threshold is trained for accuracy on the known
validation rows against the 3 validation classes (``fit_threshold``); accuracy is measured on
the known test rows plus 0-3 test classes, each adding as many rows as a known class has test
rows. A row counts as right when a known row is accepted and classified correctly or an unknown
row is rejected. The validation classes likewise add as many rows each as a known class has
validation rows (with all their rows, rejecting everything maximises validation accuracy).
Pixels are bounded by their known range 0-16. The original forest (a scikit-learn random
forest, which rejects nothing) classifies for every setting; the open-set forests decide only
whether to reject.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from sklearn.datasets import load_digits
from sklearn.ensemble import RandomForestClassifier
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold

from benchmarks._record import measured_rows, quick_results
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


DIGITS_RESULTS = Path(__file__).resolve().parent / "results" / "paper_openset_digits.jsonl"
DIGITS_BOUNDS = (np.zeros(64), np.full(64, 16.0))
"""The pixels' known range: with the training range instead, a pixel that is blank in every
training row puts most new rows outside the box (risk 1), known or not."""
STEELE_FIG_1 = {  # accuracy by number of unknown classes (Steele, Fig. 1, MNIST)
    "original": (0.96, 0.76, 0.64, 0.55),
    "min": (0.71, 0.69, 0.69, 0.67),
    "mean": (0.78, 0.72, 0.68, 0.64),
    "product": (0.71, 0.68, 0.67, 0.65),
}


def _digits_split(y: np.ndarray, trial: int):
    """Steele's split of one trial: (known, validation, test) classes and the known classes'
    (training, validation, test) rows."""
    rng = np.random.default_rng(trial)
    classes = rng.permutation(10)
    known, val_classes, test_classes = classes[:4], classes[4:7], classes[7:]
    rows = rng.permutation(np.flatnonzero(np.isin(y, known)))
    cut = [int(0.6 * rows.size), int(0.8 * rows.size)]
    return (known, val_classes, test_classes), np.split(rows, cut)


def _sample_classes(y: np.ndarray, classes, per_class: int, rng) -> list[np.ndarray]:
    """``per_class`` rows of each of ``classes``, drawn without replacement."""
    return [rng.choice(np.flatnonzero(y == c), per_class, replace=False) for c in classes]


def digits_trial(trial: int, trees: int = 40) -> list[dict]:
    """Accuracy of the original forest and of open-set forests (min, mean, product) with 0-3
    unknown test classes on one trial (module docstring)."""
    X, y = load_digits(return_X_y=True)
    (known, val_classes, test_classes), (train, val, test) = _digits_split(y, trial)
    rng = np.random.default_rng([trial, 1])
    unknown_val = np.concatenate(_sample_classes(y, val_classes, val.size // known.size, rng))
    unknown_test = _sample_classes(y, test_classes, test.size // known.size, rng)
    forest = RandomForestClassifier(trees, random_state=trial).fit(X[train], y[train])
    rejects = {"original": lambda Z: np.zeros(len(Z), dtype=bool)}
    for aggregation in ("min", "mean", "product"):
        params = {**STEELE, "aggregation": aggregation, "bounds": DIGITS_BOUNDS}
        det = OpenSetForest(trees, **params, random_state=trial)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            det.fit(X[train], y[train])
            det.fit_threshold(X[val], X[unknown_val])
        rejects[aggregation] = det.reject
    rows = []
    for n_unknown in range(4):
        rows_t = np.concatenate([test, *unknown_test[:n_unknown]])
        is_known = np.isin(y[rows_t], known)
        right_class = forest.predict(X[rows_t]) == y[rows_t]
        for setting, reject in rejects.items():
            refused = reject(X[rows_t])
            right = np.where(is_known, ~refused & right_class, refused)
            rows.append(
                {"trial": trial, "setting": setting, "unknown_classes": n_unknown,
                 "accuracy": float(right.mean()), "trees": trees}
            )  # fmt: skip
    return rows


def run_digits(trials: int, trees: int, results: Path) -> pd.DataFrame:
    """Every trial's rows, appended to ``results`` with provenance; the mean accuracy table
    (settings x unknown classes) beside Steele's."""
    frame = []
    for trial in range(trials):
        frame += measured_rows(results, lambda trial=trial: digits_trial(trial, trees))
    return digits_table(pd.DataFrame(frame))


def digits_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean accuracy per setting and number of unknown classes, ours and Steele's (Fig. 1)."""
    ours = frame.pivot_table(index="setting", columns="unknown_classes", values="accuracy")
    ours = ours.loc[[s for s in STEELE_FIG_1 if s in ours.index]]
    paper = pd.DataFrame(STEELE_FIG_1, index=range(4)).T
    both = pd.concat({"Steele (MNIST)": paper, "ensel (digits)": ours}, names=["source", "setting"])
    return both.rename_axis(columns="unknown classes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--trees", type=int, default=None)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--digits", action="store_true", help="Steele's Fig. 1 on digits")
    parser.add_argument("--trials", type=int, default=5, help="--digits trials")
    args = parser.parse_args()
    if args.digits:
        results = quick_results("openset_digits") if args.quick else DIGITS_RESULTS
        trials, trees = (1, 10) if args.quick else (args.trials, args.trees or 40)
        print(run_digits(trials, trees, results).round(3).to_string())
        return
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
