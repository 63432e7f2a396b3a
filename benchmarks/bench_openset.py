"""Open-set forest on Steele's Fig. 1, with scikit-learn's digits in place of MNIST.

    python -m benchmarks.bench_openset --digits [--quick] [--trials 5]

Rows go to paper_openset_digits.jsonl (``--quick``: a temporary file). Per trial the ten classes
are shuffled into 4 known, 3 validation and 3 test classes; the known classes' rows are split
60/20/20 into training, validation and test rows; a 40-tree forest is trained; the threshold is
trained for accuracy on the known validation rows against the 3 validation classes
(``fit_threshold``); accuracy is measured on the known test rows plus 0-3 test classes, each
adding as many rows as a known class has test rows. A row counts as right when a known row is
accepted and classified correctly or an unknown row is rejected. The validation classes likewise
add as many rows each as a known class has validation rows (with all their rows, rejecting
everything maximises validation accuracy). Pixels are bounded by their known range 0-16. The
original forest (a scikit-learn random forest, which rejects nothing) classifies for every
setting; the open-set forests decide only whether to reject.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.datasets import load_digits
from sklearn.ensemble import RandomForestClassifier

from benchmarks._record import measured_rows, results_path, suite_parser
from ensel.risk import OpenSetForest
from ensel.risk.openset import STEELE

DIGITS_RESULTS = Path(__file__).resolve().parent / "results" / "paper_openset_digits.jsonl"
TREES = 40
"""Trees per forest, Steele's."""
DIGITS_BOUNDS = (np.zeros(64), np.full(64, 16.0))
"""The pixels' known range: with the training range instead, a pixel that is blank in every
training row puts most new rows outside the box (risk 1), known or not."""
STEELE_FIG_1 = Path(__file__).resolve().parent / "paper_figures" / "steele_fig_1.csv"
"""Steele's Fig. 1 (MNIST): accuracy of each setting by number of unknown classes, 0-3."""


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


def digits_trial(trial: int, trees: int = TREES) -> list[dict]:
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
    paper = pd.read_csv(STEELE_FIG_1, index_col="setting").rename(columns=int)
    ours = ours.loc[[s for s in paper.index if s in ours.index]]
    both = pd.concat({"Steele (MNIST)": paper, "ensel (digits)": ours}, names=["source", "setting"])
    return both.rename_axis(columns="unknown classes")


def main(argv=None) -> None:
    parser = suite_parser(__doc__, DIGITS_RESULTS)
    parser.add_argument("--digits", action="store_true", help="Steele's Fig. 1 (the one part)")
    parser.add_argument("--trials", type=int, default=5)
    args = parser.parse_args(argv)
    results = results_path(args, DIGITS_RESULTS, "openset_digits")
    trials, trees = (1, 10) if args.quick else (args.trials, TREES)
    print(run_digits(trials, trees, results).round(3).to_string())


if __name__ == "__main__":
    main()
