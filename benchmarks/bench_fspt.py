"""Gu & Easwaran (ICCPS 2019) Tables 5-7 on breast cancer, and the reject rules as accuracy-
coverage curves against ensel's combined risk.

    python -m benchmarks.bench_fspt [--quick] [--seeds 5]

Per seed, a stratified 70/30 split of scikit-learn's breast cancer data (the paper's Breast
Cancer Diagnosis set); a neural net, an SVM (Platt probabilities) and a Gaussian process are
trained on the standardised training rows, FSPT (default parameters) on the raw ones. Eq. 11's
groups: of the test rows with model confidence ``φ_M >= t1``, G1 holds those with FSPT score
``φ_F >= t2`` and G2 the rest; each group's share, accuracy and mean ``φ_M`` as in the paper's
tables. ``φ_F`` is Eq. 9's score divided by its largest value on the training rows (the paper
only says it is normalised into [0, 1]). Curves: accuracy of the answered test rows when the
rows with the highest risk are refused, at coverages 1.0 down to 0.3, for FSPT's risk, the
model's own confidence, and ``CombinedRisk`` (skipped with --quick). Rows:
benchmarks/results/paper_fspt.jsonl.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.datasets import load_breast_cancer
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from benchmarks._record import measured_rows, results_path, suite_parser
from ensel.risk import FSPT, CombinedRisk
from ensel.risk.reject import confidence

RESULTS = Path(__file__).resolve().parent / "results" / "paper_fspt.jsonl"
THRESHOLDS = {"NN": (0.8, 0.9), "SVM": (0.8, 0.9), "GP": (0.55, 0.6)}  # t1 per the paper
T2 = (0.0, 0.2, 0.4, 0.6)
COVERAGES = (1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3)


def models(seed: int) -> dict:
    """The paper's three model kinds, each behind a standard scaler."""
    return {
        "NN": MLPClassifier((64,), max_iter=1000, random_state=seed),
        "SVM": SVC(probability=True, random_state=seed),
        "GP": GaussianProcessClassifier(random_state=seed),
    }


def group_rows(phi_m, phi_f, right, t1: float, t2: float) -> dict:
    """Eq. 11's groups among rows with ``phi_m >= t1``: G1 ``phi_f >= t2``, G2 the rest; each
    group's share of those rows, accuracy and mean ``phi_m`` (NaN when empty)."""
    sure = phi_m >= t1
    out = {}
    for name, part in (("G1", sure & (phi_f >= t2)), ("G2", sure & (phi_f < t2))):
        n = int(part.sum())
        out[f"{name}_share"] = n / max(1, int(sure.sum()))
        out[f"{name}_acc"] = float(right[part].mean()) if n else float("nan")
        out[f"{name}_phi_m"] = float(phi_m[part].mean()) if n else float("nan")
    return out


def coverage_curve(risk, right, coverages=COVERAGES) -> list[float]:
    """Accuracy of the ``coverage`` share of rows with the lowest ``risk`` (ties by order)."""
    order = np.argsort(risk, kind="stable")
    return [float(right[order[: max(1, round(c * risk.size))]].mean()) for c in coverages]


def one_seed(seed: int, combined: bool) -> list[dict]:
    """The group rows and the curve rows of one split."""
    X, y = load_breast_cancer(return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, stratify=y, random_state=seed)
    fspt = FSPT(random_state=seed).fit(X_tr, y_tr)
    phi_f = np.clip(fspt.score_samples(X_te) / fspt.score_samples(X_tr).max(), 0.0, 1.0)
    risks = {"fspt": fspt.risk(X_te)}
    if combined:
        risks["combined"] = CombinedRisk(random_state=seed).fit(X_tr, y_tr).risk(X_te)
    rows = []
    for name, model in models(seed).items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fitted = make_pipeline(StandardScaler(), model).fit(X_tr, y_tr)
        proba = fitted.predict_proba(X_te)
        right = proba.argmax(axis=1) == y_te
        phi_m = confidence(proba)
        for t1 in THRESHOLDS[name]:
            for t2 in T2:
                got = group_rows(phi_m, phi_f, right, t1, t2)
                rows.append({"part": "groups", "model": name, "t1": t1, "t2": t2, **got})
        for rule, risk in {**risks, "confidence": 1.0 - phi_m}.items():
            curve = coverage_curve(risk, right)
            rows.append({"part": "curve", "model": name, "rule": rule, "accuracy": curve})
    return [{"seed": seed, **r} for r in rows]


def run(seeds: int, combined: bool, results: Path) -> list[dict]:
    """Every seed's rows, appended to ``results`` with provenance."""
    out = []
    for seed in range(seeds):
        out += measured_rows(results, lambda seed=seed: one_seed(seed, combined))
    return out


def tables(rows: list[dict]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the paper's Tables 5-7 layout, mean over seeds; the accuracy-coverage table, mean over
    seeds, per model and rule)."""
    frame = pd.DataFrame(rows)
    groups = frame[frame["part"] == "groups"]
    cols = [c for c in groups.columns if c.startswith(("G1", "G2"))]
    table = groups.groupby(["model", "t1", "t2"])[cols].mean()
    curves = frame[frame["part"] == "curve"]
    acc = pd.DataFrame(curves["accuracy"].tolist(), columns=COVERAGES, index=curves.index)
    curve = acc.groupby([curves["model"], curves["rule"]]).mean().rename_axis(columns="coverage")
    return table, curve


def main(argv=None) -> None:
    parser = suite_parser(__doc__, RESULTS)
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args(argv)
    results = results_path(args, RESULTS, "fspt")
    rows = run(1 if args.quick else args.seeds, not args.quick, results)
    for table in tables(rows):
        print(table.round(3).to_string(), end="\n\n")


if __name__ == "__main__":
    main()
