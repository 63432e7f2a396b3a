"""One boosted model per encoding of the categoricals, on the scale benchmarks' 100k-row table:
the measurement behind the default's LightGBM runs on the target-encoded view ``te``.

    python -m benchmarks.bench_te_view [--rows 100000]

Each model trains on 80% of ``make_table(rows, 0)`` and stops early on the other 20% (50 rounds
without gain), then scores 50,000 rows of ``make_table(50_000, 1)``: LightGBM on ensel's native
view (categoricals as codes), LightGBM with its own categorical splits, LightGBM on the ``te``
view (each at 31 leaves / rate 0.1 and 63 leaves / rate 0.05), and CatBoost (depth 6, rate
0.08, its ordered target statistics) when installed. Two threads each. Rows are appended to
``benchmarks/results/te_view.jsonl`` with the commit, versions and load.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from sklearn.metrics import log_loss, roc_auc_score

from benchmarks._record import ROOT, git_commit, load_average, versions
from benchmarks._scale_data import make_table
from ensel.data import Columns
from ensel.library.encoding import TargetEncodedView
from ensel.library.views import make_view

RESULTS = ROOT / "benchmarks" / "results" / "te_view.jsonl"
STOP_ROUNDS = 50


def _lightgbm(leaves: float, rate: float):
    import lightgbm as lgb

    return lgb.LGBMClassifier(
        n_estimators=5000,
        num_leaves=leaves,
        learning_rate=rate,
        subsample=0.8,
        subsample_freq=1,
        colsample_bytree=0.7,
        n_jobs=2,
        verbose=-1,
    )


def _fit_lightgbm(model, train, y, held, y_held) -> int:
    import lightgbm as lgb

    model.fit(
        train,
        y,
        eval_set=[(held, y_held)],
        callbacks=[lgb.early_stopping(STOP_ROUNDS, verbose=False)],
    )
    return int(model.best_iteration_)


def _as_text(frame, categorical):
    """CatBoost takes categories as strings; a missing cell becomes the level "NA"."""
    frame = frame.copy()
    for c in categorical:
        frame[c] = frame[c].astype(object).where(frame[c].notna(), "NA").astype(str)
    return frame


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args()
    X, y = make_table(args.rows, random_state=0)
    X_test, y_test = make_table(50_000, random_state=1)
    y, y_test = y.to_numpy(), y_test.to_numpy()
    held = np.random.default_rng(0).random(len(X)) < 0.2
    columns = Columns.infer(X)
    meta = {
        "rows": args.rows,
        "commit": git_commit(),
        "versions": versions(("lightgbm", "catboost")),
        "load_before": load_average(),
    }
    out = []

    def record(name, started, rounds, proba):
        row = {
            "model": name,
            "fit_s": round(time.monotonic() - started, 1),
            "rounds": rounds,
            "auc": roc_auc_score(y_test, proba),
            "logloss": log_loss(y_test, proba),
            **meta,
        }
        print(
            f"{name}: {row['fit_s']} s, {rounds} rounds, AUC {row['auc']:.4f}, "
            f"log loss {row['logloss']:.4f}",
            flush=True,
        )
        out.append(row)

    for kind in ("native", "te"):
        view = make_view(kind, columns, native_missing=True)
        if isinstance(view, TargetEncodedView):
            train = view.fit_transform(X[~held], y[~held], n_classes=2)
        else:
            train = view.fit(X[~held]).transform(X[~held])
        parts = view.transform(X[held]), view.transform(X_test)
        for leaves, rate in ((31, 0.1), (63, 0.05)):
            started, model = time.monotonic(), _lightgbm(leaves, rate)
            rounds = _fit_lightgbm(model, train, y[~held], parts[0], y[held])
            record(
                f"lightgbm {kind} view, {leaves} leaves",
                started,
                rounds,
                model.predict_proba(parts[1])[:, 1],
            )
    started, model = time.monotonic(), _lightgbm(31, 0.1)  # pandas categories, native splits
    rounds = _fit_lightgbm(model, X[~held], y[~held], X[held], y[held])
    record(
        "lightgbm own categorical splits, 31 leaves",
        started,
        rounds,
        model.predict_proba(X_test)[:, 1],
    )
    try:
        from catboost import CatBoostClassifier
    except ImportError:
        print("catboost is not installed: its row is left out")
    else:
        cats = list(columns.categorical)
        started = time.monotonic()
        model = CatBoostClassifier(
            iterations=5000,
            learning_rate=0.08,
            depth=6,
            thread_count=2,
            verbose=0,
            od_type="Iter",
            od_wait=STOP_ROUNDS,
            allow_writing_files=False,
            random_seed=0,
        )
        model.fit(
            _as_text(X[~held], cats),
            y[~held],
            cat_features=cats,
            eval_set=(_as_text(X[held], cats), y[held]),
            use_best_model=True,
        )
        record(
            "catboost depth 6",
            started,
            int(model.get_best_iteration()),
            model.predict_proba(_as_text(X_test, cats))[:, 1],
        )
    load_after = load_average()
    with RESULTS.open("a") as f:
        for row in out:
            f.write(json.dumps({**row, "load_after": load_after}) + "\n")
    print(f"appended {len(out)} rows to {RESULTS}")


if __name__ == "__main__":
    main()
