"""A second level as a use of spare time (issue 31): does a library trained on the original
features plus the selected ensemble's out-of-fold prediction (AutoGluon's stacking), selected
again, make the ensemble better on test rows?

    python -m benchmarks.bench_stacking [--quick] [--seeds 0 1] [--datasets ...]
                                        [--time-limit SECONDS]
    python -m benchmarks.bench_stacking --report

Per dataset and seed (``benchmarks.datasets.train_test``, the AutoML protocol's split, folds
grouped by ``train_groups`` where the data are panel data), each level's build unbudgeted or,
with ``--time-limit``, under that many seconds (the larger tables: their kernel SVMs and k-NN
then train on the subsample the plan sizes, as in a budgeted fit):

1. level 1: the default spec's model runs (no detectors, no spare tier) built with ``cv=5`` and
   the seed the estimator itself uses; ``EnsembleSelectionClassifier`` selects from it, with
   its default predict budget ("auto", the baseline) and with none;
2. the level-1 feature: the unbudgeted ensemble's out-of-fold prediction on each training row
   (its weights applied to the members' out-of-fold predictions), as a logit (binary) or one
   log-probability per class; on test rows the same weights applied to the members' test
   predictions;
3. level 2: the same model runs built again, on the features plus that column, with the same
   folds (the same seed);
4. selection (the estimator's options, no predict budget) over level 2 alone (AutoGluon's
   ``WeightedEnsemble_L3``) and over levels 1 and 2 together.

Rows record test AUC and log loss per variant, the members with weight, both builds' seconds,
the commit, versions and load. The question is accuracy; seconds say what a second level costs
and are only comparable at equal load. Report: each variant against the baseline, datasets as
the unit (``benchmarks._stats``).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks._peers import classification_scores
from benchmarks._record import harness_parser, load_results, provenance, quick_results, run_pending
from benchmarks._report import variants_against
from benchmarks.bench_automl import FIRST_DATASETS
from benchmarks.bench_repeats import model_spec

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "stacking.jsonl"
BASELINE = "level 1, max_predict_ms=auto"
EPS = 1e-6
"""Probabilities are clipped to [EPS, 1 - EPS] before the logit."""


def level_one_feature(proba: np.ndarray, classes: np.ndarray) -> pd.DataFrame:
    """The ensemble's prediction as features: the logit of the positive class for two classes
    (``proba`` of shape ``(n,)``), else one log-probability per class (``(n, C)``)."""
    p = np.clip(np.asarray(proba, dtype=float), EPS, 1 - EPS)
    if p.ndim == 1:
        return pd.DataFrame({"level1_logit": np.log(p) - np.log1p(-p)})
    return pd.DataFrame({f"level1_logp_{c}": np.log(p[:, j]) for j, c in enumerate(classes)})


def with_feature(X: pd.DataFrame, feature: pd.DataFrame) -> pd.DataFrame:
    """``X`` with ``feature``'s columns appended, row for row."""
    return pd.concat([X.reset_index(drop=True), feature.reset_index(drop=True)], axis=1)


def out_of_fold(lib, weights: np.ndarray, n_rows: int) -> np.ndarray:
    """The weighted ensemble's out-of-fold prediction on each training row (``cv=K``: every
    row is a hillclimb row)."""
    hill = np.tensordot(weights, np.asarray(lib.predictions), axes=1)
    if lib.hillclimb_index.size != n_rows:
        raise ValueError("a second level needs out-of-fold predictions on every training row")
    out = np.empty_like(hill)
    out[lib.hillclimb_index] = hill
    return out


def run_one(
    dataset: str, seed: int, spec, n_jobs: int, time_limit: float | None = None
) -> list[dict]:
    """One row per variant on one dataset and seed; each level's build under ``time_limit``
    seconds (None: unbudgeted)."""
    from benchmarks.datasets import train_groups, train_test
    from ensel import EnsembleSelectionClassifier
    from ensel._jobs import as_seed
    from ensel.library import build_library
    from ensel.strategies import ensemble_selection

    X_tr, X_te, y_tr, y_te, ds = train_test(dataset, seed)
    groups = train_groups(ds, seed)  # panel data: a person's rows in one fold, both levels
    base = as_seed(seed)
    build = {"cv": 5, "n_jobs": n_jobs, "random_state": base, "groups": groups,
             "time_limit": time_limit}  # fmt: skip
    common = {
        "dataset": dataset,
        "seed": seed,
        "n_train": len(X_tr),
        "build_time_limit": time_limit,
    }
    rows = []

    def row(variant, proba, weights, **extra):
        rows.append(
            {
                **common,
                "variant": variant,
                **classification_scores(y_te, classes, proba),
                "members_with_weight": int((np.asarray(weights) > 0).sum()),
                **extra,
                **provenance(),
            }
        )

    with tempfile.TemporaryDirectory(prefix="ensel-stacking-") as tmp:
        start = time.perf_counter()
        one = build_library(X_tr, y_tr, spec=spec, store=Path(tmp) / "l1", **build)
        seconds_one = time.perf_counter() - start
        chosen = {}
        for budget in ("auto", None):
            clf = EnsembleSelectionClassifier(
                library=one, random_state=seed, n_jobs=n_jobs, max_predict_ms=budget
            ).fit(X_tr, y_tr)
            chosen[budget] = clf
        classes = chosen[None].classes_
        row(BASELINE, chosen["auto"].predict_proba(X_te), chosen["auto"].weights_)
        clf = chosen[None]
        w1 = clf.leaderboard_["weight"].to_numpy()
        test_one = one.predict(X_te)
        proba_one = clf.combine(test_one)
        row("level 1, max_predict_ms=None", proba_one, w1)
        options = {k: v for k, v in clf.selection_options_.items() if k != "cost"}
        metric = clf.metric  # the estimator's own: the variants select for it too
        if not np.allclose(ensemble_selection(one.predictions, one.y, metric, options), w1):
            raise AssertionError("selection outside the estimator differs from the estimator's")

        feature_tr = level_one_feature(out_of_fold(one, w1, len(X_tr)), classes)
        feature_te = level_one_feature(np.tensordot(w1, test_one, axes=1), classes)
        start = time.perf_counter()
        two = build_library(
            with_feature(X_tr, feature_tr), y_tr, spec=spec, store=Path(tmp) / "l2", **build
        )
        seconds_two = time.perf_counter() - start
        if not np.array_equal(two.hillclimb_index, one.hillclimb_index):
            raise AssertionError("the second level's folds differ from the first's")
        test_two = two.predict(with_feature(X_te, feature_te))
        costs = {"build_seconds": [seconds_one, seconds_two]}
        for variant, P, T in (
            ("level 2 alone", np.asarray(two.predictions), test_two),
            (
                "levels 1 + 2",
                np.concatenate([np.asarray(one.predictions), np.asarray(two.predictions)]),
                np.concatenate([test_one, test_two]),
            ),
        ):
            w = ensemble_selection(P, one.y, metric, options)
            p = np.tensordot(w, T, axes=1)
            row(variant, p, w, level2_weight=float(w[-two.n_members :].sum()), **costs)
    return rows


def report(path: Path) -> list[str]:
    """Every variant against the baseline (level 1 with the estimator's defaults), per dataset
    and over datasets (positive differences: the variant is better)."""
    return variants_against(pd.DataFrame(load_results(path)), BASELINE)


def main(argv=None) -> None:
    parser = harness_parser(__doc__, RESULTS, FIRST_DATASETS, (0, 1), quick="pima, seed 0")
    parser.add_argument("--time-limit", type=float, default=None, help="seconds per level's build")
    args = parser.parse_args(argv)
    path = Path(args.results)
    if args.quick:
        path, args.datasets, args.seeds = quick_results("stacking"), ["pima"], [0]
    if not args.report:
        done = {(r["dataset"], r["seed"]) for r in load_results(path)}
        spec = model_spec()
        run_pending(path, args.datasets, args.seeds, done,
                    lambda d, s: run_one(d, s, spec, args.n_jobs, args.time_limit),
                    lambda r: r["variant"])  # fmt: skip
    print("\n".join(report(path)))


if __name__ == "__main__":
    main()
