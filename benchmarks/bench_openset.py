"""Open-set forest on Steele's Fig. 1, with scikit-learn's digits in place of MNIST, and on his
Fig. 2, generated data.

    python -m benchmarks.bench_openset --digits [--quick] [--trials 5]
    python -m benchmarks.bench_openset --generated [--quick] [--trials 5]

Digits rows go to paper_openset_digits.jsonl, generated rows to paper_openset_generated.jsonl
(``--quick``: a temporary file). Digits: per trial the ten classes are shuffled into 4 known,
3 validation and 3 test classes; the known classes' rows are split 60/20/20 into training,
validation and test rows; a 40-tree forest is trained; the threshold is trained for accuracy on
the known validation rows against the 3 validation classes (``fit_threshold``); accuracy is
measured on the known test rows plus 0-3 test classes, each adding as many rows as a known class
has test rows. A row counts as right when a known row is accepted and classified correctly or an
unknown row is rejected. The validation classes likewise add as many rows each as a known class
has validation rows (with all their rows, rejecting everything maximises validation accuracy).
Pixels are bounded by their known range 0-16. The original forest (a scikit-learn random forest,
which rejects nothing) classifies for every setting; the open-set forests decide only whether to
reject. Generated (Fig. 2): the same protocol on ``generated_data`` (100 classes) with 30 known,
8 validation and 0-29 of the other 62 as unknown test classes, 20 trees, and only the original
forest against min pertinence, as Steele.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
from sklearn.datasets import load_digits
from sklearn.ensemble import RandomForestClassifier

from benchmarks._record import measured_rows, results_path, suite_parser
from ensel.risk import OpenSetForest
from ensel.risk.openset import STEELE

HERE = Path(__file__).resolve().parent
DIGITS_RESULTS = HERE / "results" / "paper_openset_digits.jsonl"
GENERATED_RESULTS = HERE / "results" / "paper_openset_generated.jsonl"
TREES = 40
"""Trees per forest, Steele's (digits)."""
GENERATED_TREES = 20
"""Trees per forest, Steele's (generated data)."""
DIGITS_BOUNDS = (np.zeros(64), np.full(64, 16.0))
"""The pixels' known range: with the training range instead, a pixel that is blank in every
training row puts most new rows outside the box (risk 1), known or not."""
STEELE_FIG_1 = HERE / "paper_figures" / "steele_fig_1.csv"
"""Steele's Fig. 1 (MNIST): accuracy of each setting by number of unknown classes, 0-3."""
STEELE_FIG_2 = HERE / "paper_figures" / "steele_fig_2.csv"
"""Steele's Fig. 2 (generated data): the points his text states, at 0 and 29 unknown classes."""
REPORTED_UNKNOWN = (0, 1, 2, 5, 10, 20, 29)
"""The numbers of unknown classes the generated table shows (the rows hold all of 0-29)."""


class GeneratedSizes(NamedTuple):
    """The generated experiment's sizes: data set, then the classes of a trial."""

    classes: int
    per_class: int
    features: int
    known: int
    validation: int
    unknown: int


GENERATED = GeneratedSizes(100, 1000, 50, known=30, validation=8, unknown=29)
"""Steele's (§III-IV): 100 classes of 1,000 points, 50 features; 30 known, 8 validation, 0-29
unknown test classes."""
GENERATED_QUICK = GeneratedSizes(20, 100, 10, known=6, validation=3, unknown=8)
"""A run of seconds for ``--quick`` and the tests."""


def _class_split(y: np.ndarray, trial: int, n_known: int, n_validation: int):
    """Steele's split of one trial: (known, validation, other) classes and the known classes'
    (training, validation, test) rows, 60/20/20."""
    rng = np.random.default_rng(trial)
    classes = rng.permutation(np.unique(y))
    known, val_classes = classes[:n_known], classes[n_known : n_known + n_validation]
    rows = rng.permutation(np.flatnonzero(np.isin(y, known)))
    cut = [int(0.6 * rows.size), int(0.8 * rows.size)]
    return (known, val_classes, classes[n_known + n_validation :]), np.split(rows, cut)


def _digits_split(y: np.ndarray, trial: int):
    """The digits split: 4 known, 3 validation and 3 test classes (``_class_split``)."""
    return _class_split(y, trial, 4, 3)


def _sample_classes(y: np.ndarray, classes, per_class: int, rng) -> list[np.ndarray]:
    """``per_class`` rows of each of ``classes``, drawn without replacement."""
    return [rng.choice(np.flatnonzero(y == c), per_class, replace=False) for c in classes]


def _rejects(X, y, split, aggregations, trees: int, trial: int, bounds) -> dict:
    """The reject rule of each setting: ``"original"`` rejects nothing; an open-set forest per
    aggregation, fitted on the training rows, its threshold trained (``fit_threshold``) on the
    known validation rows against the validation classes' rows. ``split`` is (train, val,
    unknown_val) row indices."""
    train, val, unknown_val = split
    rejects = {"original": lambda Z: np.zeros(len(Z), dtype=bool)}
    for aggregation in aggregations:
        params = {**STEELE, "aggregation": aggregation, "bounds": bounds}
        det = OpenSetForest(trees, **params, random_state=trial)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            det.fit(X[train], y[train])
            det.fit_threshold(X[val], X[unknown_val])
        rejects[aggregation] = det.reject
    return rejects


def _accuracy_rows(X, y, known, test, unknown_test, forest, rejects, trial: int, trees: int):
    """One row per number of unknown test classes (0 to ``len(unknown_test)``) and setting:
    the accuracy on the known ``test`` rows plus the first classes of ``unknown_test``, a known
    row right when accepted and classified correctly by ``forest``, an unknown row when
    rejected. Each rule is applied once to all rows; the counts take prefixes."""
    rows_t = np.concatenate([test, *unknown_test])
    ends = test.size + np.cumsum([0, *map(len, unknown_test)])
    is_known = np.isin(y[rows_t], known)
    right_class = forest.predict(X[rows_t]) == y[rows_t]
    refused = {setting: reject(X[rows_t]) for setting, reject in rejects.items()}
    rows = []
    for n_unknown, end in enumerate(ends):
        for setting, out in refused.items():
            right = np.where(is_known[:end], ~out[:end] & right_class[:end], out[:end])
            rows.append(
                {"trial": trial, "setting": setting, "unknown_classes": n_unknown,
                 "accuracy": float(right.mean()), "trees": trees}
            )  # fmt: skip
    return rows


def _trial(X, y, classes, n_unknown: int, aggregations, trial: int, trees: int, bounds):
    """The rows of one trial of Steele's protocol (module docstring) on the split ``classes``
    (``_class_split``'s), with up to ``n_unknown`` unknown test classes."""
    (known, val_classes, test_classes), (train, val, test) = classes
    rng = np.random.default_rng([trial, 1])
    unknown_val = np.concatenate(_sample_classes(y, val_classes, val.size // known.size, rng))
    unknown_test = _sample_classes(y, test_classes[:n_unknown], test.size // known.size, rng)
    forest = RandomForestClassifier(trees, random_state=trial).fit(X[train], y[train])
    split = (train, val, unknown_val)
    rejects = _rejects(X, y, split, aggregations, trees, trial, bounds)
    return _accuracy_rows(X, y, known, test, unknown_test, forest, rejects, trial, trees)


def digits_trial(trial: int, trees: int = TREES) -> list[dict]:
    """Accuracy of the original forest and of open-set forests (min, mean, product) with 0-3
    unknown test classes on one trial (module docstring)."""
    X, y = load_digits(return_X_y=True)
    aggregations = ("min", "mean", "product")
    return _trial(X, y, _digits_split(y, trial), 3, aggregations, trial, trees, DIGITS_BOUNDS)


def generated_data(
    classes: int = 100, per_class: int = 1000, features: int = 50, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Steele's generated data (§III): ``(X, y)``, ``per_class`` rows of each class, whose
    features are drawn independently from a normal distribution (half the classes, chosen at
    random) or a gamma distribution (the other half).

    The parameters are ours (the paper gives none): per class and feature a mean drawn from
    U(2, 10) and a standard deviation from U(1, 2); a gamma class has shape (mean / sd)^2 and
    scale sd^2 / mean, so both kinds share these means and spreads and differ in skew (shape
    1-100; positive values). Two classes' means along a feature differ by 8/3 on average,
    about 1.8 of their spreads, so every feature overlaps (no class is separable along one) but
    over 50 features the classes are nearly separable, as Steele supposes of his."""
    rng = np.random.default_rng(seed)
    mean = rng.uniform(2.0, 10.0, (classes, features))
    sd = rng.uniform(1.0, 2.0, (classes, features))
    is_gamma = rng.permutation(classes) < classes // 2
    X = np.empty((classes * per_class, features))
    for c in range(classes):
        block = slice(c * per_class, (c + 1) * per_class)
        if is_gamma[c]:
            shape, scale = (mean[c] / sd[c]) ** 2, sd[c] ** 2 / mean[c]
            X[block] = rng.gamma(shape, scale, (per_class, features))
        else:
            X[block] = rng.normal(mean[c], sd[c], (per_class, features))
    return X, np.repeat(np.arange(classes), per_class)


def generated_trial(
    trial: int, trees: int = GENERATED_TREES, sizes: GeneratedSizes = GENERATED
) -> list[dict]:
    """Accuracy of the original forest and of the min-pertinence open-set forest with 0 to
    ``sizes.unknown`` unknown test classes on one trial of Steele's Fig. 2 protocol (module
    docstring) on ``generated_data`` (the same data set every trial; the trials differ in the
    classes' roles and the rows' split)."""
    X, y = generated_data(sizes.classes, sizes.per_class, sizes.features)
    classes = _class_split(y, trial, sizes.known, sizes.validation)
    # The box is the whole data set's range, so that no row lies outside it and rejection is
    # the pertinence's alone (Steele's forest has no box). Normal and gamma are unbounded, so
    # there is no known range as for the digits' pixels; the training range would hand the
    # box unknown rows beyond it, and refuse known test rows beyond it.
    bounds = (X.min(axis=0), X.max(axis=0))
    return _trial(X, y, classes, sizes.unknown, ("min",), trial, trees, bounds)


def run_digits(trials: int, trees: int, results: Path) -> pd.DataFrame:
    """Every trial's rows, appended to ``results`` with provenance; the mean accuracy table
    (settings x unknown classes) beside Steele's."""
    frame = []
    for trial in range(trials):
        frame += measured_rows(results, lambda trial=trial: digits_trial(trial, trees))
    return digits_table(pd.DataFrame(frame))


def run_generated(
    trials: int, trees: int, results: Path, sizes: GeneratedSizes = GENERATED
) -> pd.DataFrame:
    """Every trial's rows, appended to ``results`` with provenance; the mean accuracy table at
    ``REPORTED_UNKNOWN`` unknown classes beside Steele's stated points."""
    frame = []
    for trial in range(trials):
        frame += measured_rows(results, lambda trial=trial: generated_trial(trial, trees, sizes))
    return generated_table(pd.DataFrame(frame))


def _beside_paper(frame: pd.DataFrame, figure: Path, paper: str, ours: str) -> pd.DataFrame:
    """Mean accuracy per setting and number of unknown classes of ``frame``'s rows under the
    paper's ``figure`` (settings in the paper's order)."""
    mine = frame.pivot_table(index="setting", columns="unknown_classes", values="accuracy")
    fig = pd.read_csv(figure, index_col="setting").rename(columns=int)
    mine = mine.loc[[s for s in fig.index if s in mine.index]]
    return pd.concat({paper: fig, ours: mine}, names=["source", "setting"])


def digits_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean accuracy per setting and number of unknown classes, ours and Steele's (Fig. 1)."""
    both = _beside_paper(frame, STEELE_FIG_1, "Steele (MNIST)", "ensel (digits)")
    return both.rename_axis(columns="unknown classes")


def generated_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean accuracy per setting at the ``REPORTED_UNKNOWN`` numbers of unknown classes that
    the rows have, ours and Steele's (Fig. 2; NaN where his text states no figure)."""
    both = _beside_paper(frame, STEELE_FIG_2, "Steele (generated)", "ensel (generated)")
    counts = [k for k in REPORTED_UNKNOWN if k in set(frame["unknown_classes"])]
    return both[counts].rename_axis(columns="unknown classes")


def main(argv=None) -> None:
    parser = suite_parser(__doc__, DIGITS_RESULTS)
    part = parser.add_mutually_exclusive_group()
    part.add_argument("--digits", action="store_true", help="Steele's Fig. 1 (the default)")
    part.add_argument("--generated", action="store_true", help="Steele's Fig. 2")
    parser.add_argument("--trials", type=int, default=5)
    args = parser.parse_args(argv)
    if args.generated:
        results = results_path(args, GENERATED_RESULTS, "openset_generated")
        trials, trees = (1, 5) if args.quick else (args.trials, GENERATED_TREES)
        sizes = GENERATED_QUICK if args.quick else GENERATED
        print(run_generated(trials, trees, results, sizes).round(3).to_string())
        return
    results = results_path(args, DIGITS_RESULTS, "openset_digits")
    trials, trees = (1, 10) if args.quick else (args.trials, TREES)
    print(run_digits(trials, trees, results).round(3).to_string())


if __name__ == "__main__":
    main()
