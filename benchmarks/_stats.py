"""Comparing two configurations over several datasets with datasets as the unit (the
conventions: seeds of one dataset are not independent pairs): per-dataset means over seeds with
their standard errors, then wins, the mean difference, a paired t-test and a sign test over the
datasets. Differences are signed so that positive means the first configuration is better.
``over_datasets`` and ``predict_ratios`` read AutoML rows (columns dataset, seed, config,
budget and the metrics), ``bench_automl``'s and the results page's."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

HIGHER_IS_BETTER = {"auc": True, "logloss": False, "predict_us_per_row": False}


def standard_error(values) -> float:
    """Standard error of the mean (sample standard deviation / sqrt(n)); NaN below 2 values."""
    v = np.asarray(values, dtype=float)
    return float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else float("nan")


def per_dataset(rows: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Mean over seeds of ``metric`` per dataset, with its standard error and the seed count,
    from ``rows`` (one configuration at one budget: columns dataset, seed and ``metric``)."""
    grouped = rows.groupby("dataset")[metric]
    return pd.DataFrame(
        {"mean": grouped.mean(), "se": grouped.agg(standard_error), "seeds": grouped.size()}
    )


def sign_test_p(wins: int, losses: int) -> float:
    """Two-sided exact sign test (binomial, p = 1/2) of ``wins`` against ``losses``; ties are
    left out beforehand. 1.0 when there is nothing to test."""
    n = wins + losses
    return float(stats.binomtest(wins, n, 0.5).pvalue) if n else 1.0


def paired_over_datasets(ours: pd.Series, theirs: pd.Series, higher_is_better: bool) -> dict:
    """Datasets in both ``ours`` and ``theirs`` (per-dataset means indexed by dataset): the
    count, wins, ties and losses of ours, the mean difference (positive = ours better) and its
    standard error, the two-sided paired t-test's t and p (scipy's ``ttest_rel``) and the
    two-sided sign test's p."""
    both = ours.index.intersection(theirs.index)
    a, b = ours.loc[both].to_numpy(float), theirs.loc[both].to_numpy(float)
    d = a - b if higher_is_better else b - a
    wins, losses = int((d > 0).sum()), int((d < 0).sum())
    if len(d) > 1 and np.ptp(d) > 0:
        t, p = stats.ttest_rel(a, b) if higher_is_better else stats.ttest_rel(b, a)
    else:
        t, p = float("nan"), float("nan")
    return {
        "datasets": len(d),
        "wins": wins,
        "ties": len(d) - wins - losses,
        "losses": losses,
        "mean diff": float(d.mean()) if len(d) else float("nan"),
        "se diff": standard_error(d),
        "t": float(t),
        "p (t-test)": float(p),
        "p (sign test)": sign_test_p(wins, losses),
    }


def select(rows: pd.DataFrame, config: str, budget: float) -> pd.DataFrame:
    """The rows of one configuration at one budget."""
    return rows[(rows.config == config) & (rows.budget == budget)]


def over_datasets(rows: pd.DataFrame, ours, theirs, metric: str) -> dict:
    """``ours`` against ``theirs`` on ``metric`` with datasets as the unit: per-dataset means
    over the seeds both have (pairs only), then ``paired_over_datasets``; ``ours`` and
    ``theirs`` are (configuration, budget) pairs of ``rows``."""
    a = select(rows, *ours).set_index(["dataset", "seed"])
    b = select(rows, *theirs).set_index(["dataset", "seed"])
    both = a.index.intersection(b.index)
    a, b = a.loc[both].reset_index(), b.loc[both].reset_index()
    return {
        "ensel": f"{ours[0]} {ours[1]:g}s",
        "vs": f"{theirs[0]} {theirs[1]:g}s",
        "metric": metric,
        "pairs": len(both),
        **paired_over_datasets(
            per_dataset(a, metric)["mean"],
            per_dataset(b, metric)["mean"],
            HIGHER_IS_BETTER[metric],
        ),
    }


def predict_ratios(rows: pd.DataFrame, budget: float) -> pd.Series:
    """Per dataset, ensel's mean predict microseconds per row over AutoGluon's at ``budget``
    (rows measured the warm way only, seeds both have)."""
    rows = rows[rows["predict_us_per_row"].notna()] if "predict_us_per_row" in rows else rows[:0]
    a = select(rows, "ensel", budget).set_index(["dataset", "seed"])
    b = select(rows, "autogluon", budget).set_index(["dataset", "seed"])
    both = a.index.intersection(b.index)
    if not len(both):
        return pd.Series(dtype=float)
    mean_a = a.loc[both, "predict_us_per_row"].groupby(level="dataset").mean()
    mean_b = b.loc[both, "predict_us_per_row"].groupby(level="dataset").mean()
    return (mean_a / mean_b).rename(f"ensel/autogluon {budget:g}s")
