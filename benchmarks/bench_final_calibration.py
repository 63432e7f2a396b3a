"""A final calibration of the selected ensemble as a use of spare time (issue 31, candidate 8):
does rescaling the ensemble's probabilities, fitted on its out-of-fold predictions, lower test
log loss?

    python -m benchmarks.bench_final_calibration [--quick] [--seeds 0 1] [--datasets ...]
                                                 [--time-limit SECONDS]
    python -m benchmarks.bench_final_calibration --report

A weighted average of probabilities is never sharper than its sharpest member, so an ensemble
may be under-confident; AutoGluon temperature-scales its ensemble for this reason. ensel's
default (``metric="mxe"``, ``calibrate="auto"``) leaves the ensemble as selected. Per dataset
and seed (``benchmarks.datasets.train_test``, the AutoML protocol's split, folds grouped by
``train_groups`` where the data are panel data) one ``EnsembleSelectionClassifier`` is fitted as
``bench_automl`` fits it (default options, ``time_limit``, its library kept in a store). Every
variant then rescales *that fit's* test probabilities, so the comparison is paired within one
fit and free of the build's timing noise. Each calibrator is fitted on the ensemble's
out-of-fold predictions on the hillclimb rows (the rows selection chose its weights on):

- ``none``: the estimator's prediction (the baseline);
- ``temperature``: ``softmax(s * log p)``, one scale ``s`` (binary: the logit times ``s``);
  monotone, so a binary AUC cannot change;
- ``temperature + bias``: the same with one offset per class but the first (binary: Platt's
  sigmoid on the ensemble's logit);
- ``temperature where it helps``: ``temperature`` only where its cross-fitted out-of-fold log
  loss (5 groups) is below the uncalibrated one's, the rule a default would use;
- ``platt``: ``calibrate=True``, Platt's sigmoid on the probabilities themselves
  (``ensel.calibration.ColumnCalibrator``).

Rows record test AUC and log loss per variant, the fitted scale, the out-of-fold log loss
before and after (in-sample and cross-fitted), the fit's seconds, the commit, versions and load.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import minimize, minimize_scalar

from benchmarks._peers import classification_scores
from benchmarks._record import harness_parser, load_results, provenance, quick_results, run_pending
from benchmarks._report import variants_against
from benchmarks.bench_automl import FIRST_DATASETS
from ensel.metrics import EPS, score

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "final_calibration.jsonl"
BASELINE = "none"
DATASETS = (*FIRST_DATASETS, "car")
"""The nine smaller tables: the ones whose fits leave most of a 300 s budget unused."""


def _log(p: np.ndarray) -> np.ndarray:
    """The log of probabilities clipped as ensel's mxe clips them."""
    return np.log(np.clip(p, EPS, 1.0))


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


class Temperature:
    """``softmax(s * log p + b)``: one scale ``s`` (the inverse temperature) and, with ``bias``,
    one offset per class but the first, fitted by maximum likelihood. At ``s = 1, b = 0`` it is
    the identity."""

    def __init__(self, bias: bool = False) -> None:
        self.bias = bias

    def fit(self, p: np.ndarray, y: np.ndarray) -> Temperature:
        logp = _log(p)
        if not self.bias:
            best = minimize_scalar(
                lambda t: score("mxe", y, _softmax(np.exp(t) * logp)),
                bounds=(-3, 3),
                method="bounded",
            )
            self.scale_, self.offsets_ = float(np.exp(best.x)), np.zeros(p.shape[1])
            return self

        def loss(w):
            return score("mxe", y, _softmax(np.exp(w[0]) * logp + np.r_[0.0, w[1:]]))

        w = minimize(loss, np.zeros(p.shape[1]), method="L-BFGS-B").x
        self.scale_, self.offsets_ = float(np.exp(w[0])), np.r_[0.0, w[1:]]
        return self

    def predict(self, p: np.ndarray) -> np.ndarray:
        return _softmax(self.scale_ * _log(p) + self.offsets_)


def cross_fitted_log_loss(make, p: np.ndarray, y: np.ndarray, seed: int) -> float:
    """Log loss of ``make()``'s calibration on rows it was not fitted on (5 random groups,
    ``ensel.calibration.cross_fit``)."""
    from ensel.calibration import cross_fit, cross_fit_groups

    crossed, _ = cross_fit(make, p, y, cross_fit_groups(y.size, seed))
    return score("mxe", y, crossed)


def variants(hill: np.ndarray, y_hill: np.ndarray, test: np.ndarray, seed: int) -> dict:
    """Each variant's test probabilities, and what the rows record of the fitted calibrators:
    ``{variant: (test probabilities, extra fields)}``."""
    from ensel.calibration import ColumnCalibrator

    before = score("mxe", y_hill, hill)
    temp = Temperature().fit(hill, y_hill)
    crossed = cross_fitted_log_loss(Temperature, hill, y_hill, seed)
    fitted = {"temperature": temp, "temperature + bias": Temperature(bias=True).fit(hill, y_hill)}
    fitted["platt"] = ColumnCalibrator("platt").fit(hill, y_hill)
    out = {BASELINE: (test, {"oof_logloss": before})}
    for name, cal in fitted.items():
        out[name] = (cal.predict(test), {"oof_logloss": score("mxe", y_hill, cal.predict(hill))})
    out["temperature"][1].update(scale=temp.scale_, oof_logloss_crossed=crossed)
    helps = crossed < before
    out["temperature where it helps"] = (out["temperature"][0] if helps else test,
                                         {"adopted": bool(helps)})  # fmt: skip
    return out


def run_one(dataset: str, seed: int, n_jobs: int, time_limit: float | None) -> list[dict]:
    """One row per variant on one dataset and seed."""
    from benchmarks.datasets import train_groups, train_test
    from ensel import EnsembleSelectionClassifier
    from ensel.library import Library

    X_tr, X_te, y_tr, y_te, ds = train_test(dataset, seed)
    groups = train_groups(ds, seed)
    y_tr, y_te = y_tr.astype(str), y_te.astype(str)
    with tempfile.TemporaryDirectory(prefix="ensel-final-calibration-") as tmp:
        clf = EnsembleSelectionClassifier(
            time_limit=time_limit, n_jobs=n_jobs, random_state=seed, store=Path(tmp) / "lib"
        )
        start = time.perf_counter()
        clf.fit(X_tr, y_tr, groups=groups)
        fit_s = time.perf_counter() - start
        lib = Library.open(Path(tmp) / "lib")
        hill = clf.combine(np.asarray(lib.predictions))  # out of fold: the hillclimb rows
        y_hill = np.asarray(lib.y)
        test = clf.predict_proba(X_te)
    if not np.isclose(score("mxe", y_hill, hill), clf.hillclimb_score_, rtol=1e-6, atol=1e-9):
        raise AssertionError("the out-of-fold ensemble differs from the one the estimator scored")
    classes = [str(c) for c in clf.classes_]
    common = {"dataset": dataset, "seed": seed, "n_train": len(X_tr), "n_hillclimb": y_hill.size,
              "time_limit": time_limit, "fit_s": fit_s}  # fmt: skip
    return [
        {
            **common,
            "variant": name,
            **classification_scores(y_te, classes, proba),
            **extra,
            **provenance(),
        }
        for name, (proba, extra) in variants(hill, y_hill, test, seed).items()
    ]


def report(path: Path) -> list[str]:
    """Every variant against the uncalibrated ensemble, per dataset and over datasets (positive
    differences: the variant is better), then the fitted scales."""
    rows = pd.DataFrame(load_results(path))
    lines = variants_against(rows, BASELINE)
    temp = rows[rows["variant"] == "temperature"]
    if len(temp):
        lines.append(
            f"Fitted scales s (above 1 sharpens): median {temp['scale'].median():.3f}, "
            f"range {temp['scale'].min():.3f}-{temp['scale'].max():.3f}; adopted by the rule "
            f"in {int(rows.loc[rows['variant'] == 'temperature where it helps', 'adopted'].sum())}"
            f" of {len(temp)} fits."
        )
    return lines


def main(argv=None) -> None:
    parser = harness_parser(__doc__, RESULTS, DATASETS, (0, 1), quick="pima, seed 0, 30 s")
    parser.add_argument("--time-limit", type=float, default=300.0, help="the fit's seconds")
    args = parser.parse_args(argv)
    path = Path(args.results)
    if args.quick:
        path, args.datasets, args.seeds, args.time_limit = (
            quick_results("final-calibration"), ["pima"], [0], 30.0)  # fmt: skip
    if not args.report:
        done = {(r["dataset"], r["seed"]) for r in load_results(path)}
        run_pending(path, args.datasets, args.seeds, done,
                    lambda d, s: run_one(d, s, args.n_jobs, args.time_limit),
                    lambda r: r["variant"])  # fmt: skip
    print("\n".join(report(path)))


if __name__ == "__main__":
    main()
