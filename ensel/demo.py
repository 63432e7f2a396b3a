"""End-to-end demo on scikit-learn's breast_cancer data: train a small varied model library,
then compare ensemble selection with picking the best single model (MODSEL) for each metric.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import (
    ExtraTreesClassifier,
    GradientBoostingClassifier,
    RandomForestClassifier,
)
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from sklearn.tree import DecisionTreeClassifier

from ensel.metrics import METRICS, greater_is_better, score
from ensel.selection import EnsembleSelection

SEED = 0
N_ITER = 100


@dataclass(frozen=True)
class Splits:
    """Train (50%), hillclimb (25%) and test (25%) parts of one data set, all stratified."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_hill: np.ndarray
    y_hill: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray


@dataclass(frozen=True)
class Row:
    """One metric's result: test scores of ES and MODSEL, ensemble size, MODSEL's member."""

    metric: str
    es_test: float
    modsel_test: float
    n_nonzero: int
    modsel_name: str


def load_splits(random_state: int = SEED) -> Splits:
    """Return breast_cancer split 50/25/25 into train, hillclimb and test (stratified)."""
    X, y = load_breast_cancer(return_X_y=True)
    X_train, X_rest, y_train, y_rest = train_test_split(
        X, y, train_size=0.5, stratify=y, random_state=random_state
    )
    X_hill, X_test, y_hill, y_test = train_test_split(
        X_rest, y_rest, train_size=0.5, stratify=y_rest, random_state=random_state
    )
    return Splits(X_train, y_train, X_hill, y_hill, X_test, y_test)


def _scaled(model: BaseEstimator) -> Pipeline:
    """Standardise the features before ``model`` (for distance- and gradient-based models)."""
    return make_pipeline(StandardScaler(), model)


def _platt(svm: SVC) -> CalibratedClassifierCV:
    """Give an SVM probabilities by Platt scaling on 5-fold out-of-fold margins (§3.2.1)."""
    return CalibratedClassifierCV(svm, method="sigmoid", cv=5, ensemble=False)


def model_library(random_state: int = SEED) -> dict[str, BaseEstimator]:
    """Return a varied library of unfitted scikit-learn classifiers keyed by a short name.

    A miniature of the dissertation's grid (App. 4.B): several families, each at a few settings.
    """
    rs = random_state
    lib: dict[str, BaseEstimator] = {}
    for C in (1e-3, 1e-2, 0.1, 1.0, 10.0, 100.0):
        lib[f"logreg C={C:g}"] = _scaled(LogisticRegression(C=C, max_iter=5000))
    for C in (0.1, 1.0, 10.0):
        for gamma in ("scale", 0.003):
            lib[f"svm rbf C={C:g} g={gamma}"] = _scaled(_platt(SVC(C=C, gamma=gamma)))
    for C in (0.01, 1.0):
        lib[f"svm linear C={C:g}"] = _scaled(_platt(SVC(C=C, kernel="linear")))
    for k in (1, 3, 5, 9, 15, 25, 51):
        lib[f"knn k={k}"] = _scaled(KNeighborsClassifier(n_neighbors=k, weights="distance"))
    for depth in (1, 2, 3, 5, 8, None):
        tree = DecisionTreeClassifier(max_depth=depth, random_state=rs)
        lib[f"tree depth={depth}"] = tree
    for max_features in ("sqrt", 0.5, None):
        forest = RandomForestClassifier(
            n_estimators=200, max_features=max_features, random_state=rs
        )
        lib[f"forest mf={max_features}"] = forest
    lib["forest leaf=5"] = RandomForestClassifier(
        n_estimators=200, min_samples_leaf=5, random_state=rs
    )
    for max_features in ("sqrt", 0.5, None):
        extra = ExtraTreesClassifier(n_estimators=200, max_features=max_features, random_state=rs)
        lib[f"extra mf={max_features}"] = extra
    for depth in (1, 3):
        for n_estimators in (20, 100, 300):
            gb = GradientBoostingClassifier(
                n_estimators=n_estimators, max_depth=depth, random_state=rs
            )
            lib[f"boost depth={depth} n={n_estimators}"] = gb
    lib["naive bayes"] = GaussianNB()
    for hidden in ((8,), (32,), (64, 32)):
        for alpha in (1e-4, 1e-1):
            mlp = MLPClassifier(hidden, alpha=alpha, max_iter=2000, random_state=rs)
            lib[f"mlp {hidden} a={alpha:g}"] = _scaled(mlp)
    return lib


def fit_library(
    library: dict[str, BaseEstimator], X: np.ndarray, y: np.ndarray
) -> dict[str, BaseEstimator]:
    """Return a fitted clone of every library model (convergence warnings silenced)."""
    fitted = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for name, model in library.items():
            fitted[name] = clone(model).fit(X, y)
    return fitted


def predict_library(fitted: dict[str, BaseEstimator], X: np.ndarray) -> np.ndarray:
    """Return the ``(n_members, n_samples)`` positive-class probabilities of every member."""
    return np.stack([model.predict_proba(X)[:, 1] for model in fitted.values()])


def compare(
    metric: str, names: list[str], P_hill: np.ndarray, P_test: np.ndarray, splits: Splits
) -> Row:
    """Fit ensemble selection for ``metric`` on the hillclimb set; score it and MODSEL on test."""
    es = EnsembleSelection(metric=metric, n_iter=N_ITER, random_state=SEED)
    es.fit(P_hill, splits.y_hill)
    # MODSEL: the member with the best hillclimb score alone (first one wins)
    alone = es.member_scores_
    best = int(np.argmax(alone) if greater_is_better(metric) else np.argmin(alone))
    return Row(
        metric=metric,
        es_test=score(metric, splits.y_test, es.predict_proba(P_test)),
        modsel_test=score(metric, splits.y_test, P_test[best]),
        n_nonzero=int(np.count_nonzero(es.weights_)),
        modsel_name=names[best],
    )


def verdict(row: Row) -> str:
    """'yes' if ES beats MODSEL on test in the metric's direction, 'tie' if equal, else 'no'."""
    if row.es_test == row.modsel_test:
        return "tie"
    es_wins = row.es_test > row.modsel_test
    return "yes" if es_wins == greater_is_better(row.metric) else "no"


def format_table(rows: list[Row]) -> str:
    """Return the results as a plain-text table, one line per metric."""
    header = (
        f"{'metric':<7}{'ES test':>10}{'MODSEL test':>13}{'members':>9}{'ES better':>11}"
        f"  MODSEL model"
    )
    lines = [header, "-" * len(header)]
    for r in rows:
        lines.append(
            f"{r.metric:<7}{r.es_test:>10.4f}{r.modsel_test:>13.4f}{r.n_nonzero:>9d}"
            f"{verdict(r):>11}  {r.modsel_name}"
        )
    wins = sum(verdict(r) == "yes" for r in rows)
    lines.append(f"ES better than MODSEL on {wins} of {len(rows)} metrics")
    return "\n".join(lines)


def main() -> None:
    """Run the demo and print the comparison table."""
    start = time.perf_counter()
    splits = load_splits()
    print(
        f"breast_cancer: {len(splits.y_train)} train, {len(splits.y_hill)} hillclimb, "
        f"{len(splits.y_test)} test cases (positive class = benign)"
    )
    fitted = fit_library(model_library(), splits.X_train, splits.y_train)
    names = list(fitted)
    P_hill = predict_library(fitted, splits.X_hill)
    P_test = predict_library(fitted, splits.X_test)
    trained = time.perf_counter()
    print(f"trained {len(names)} library members in {trained - start:.1f} s")
    print(
        f"ensemble selection: {N_ITER} steps, sorted init, 20 bags of 50%, "
        "selected on the hillclimb set, scored on the test set\n"
    )
    rows = [compare(m, names, P_hill, P_test, splits) for m in METRICS]
    print(format_table(rows))
    done = time.perf_counter()
    print(f"\nselection took {done - trained:.1f} s; total {done - start:.1f} s")


if __name__ == "__main__":
    main()
