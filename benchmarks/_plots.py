"""The plots of docs/results.md, drawn with matplotlib from the rows ``benchmarks.report``
reads, written as SVG without a date and with a fixed id salt so that the same rows give the
same bytes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks._stats import standard_error
from benchmarks.report import BUDGETS, METRICS, differences


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "ensel"
    return plt


def _save(fig, path: Path) -> None:
    """Write ``fig`` to ``path`` as SVG without a date, and close it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="svg", metadata={"Date": None}, bbox_inches="tight")
    _pyplot().close(fig)
    print(f"wrote {path}")


def plot_differences(rows: pd.DataFrame, path: Path) -> None:
    """Per dataset (smallest table at the top), ensel's advantage over AutoGluon with one
    standard error over seeds, one panel per metric and budget."""
    plt = _pyplot()
    fig, axes = plt.subplots(2, len(BUDGETS), figsize=(11, 7), sharey=True, sharex="row")
    for i, (metric, called) in enumerate(METRICS):
        for j, budget in enumerate(BUDGETS):
            d = differences(rows, budget, metric)
            ax, y = axes[i, j], np.arange(len(d))
            colours = ["tab:green" if m > 0 else "tab:red" for m in d["mean"]]
            ax.errorbar(d["mean"], y, xerr=d["se"], fmt="none", ecolor="grey", capsize=2)
            ax.scatter(d["mean"], y, c=colours, zorder=3, s=18)
            ax.axvline(0, color="black", lw=0.8)
            names = zip(d.index, d["n_train"], strict=True)
            ax.set_yticks(y, [f"{n} ({r:,})" for n, r in names])
            ax.set_title(f"{called}, {budget:g} s", fontsize=10)
            ax.grid(axis="x", alpha=0.3)
    axes[0, 0].invert_yaxis()  # shared: the smallest table at the top of every panel
    fig.supxlabel("ensel's advantage (± 1 se over seeds); right of 0: ensel better")
    fig.suptitle("ensel against AutoGluon best_quality, per dataset (training rows)")
    _save(fig, path)


def plot_budgets(rows: pd.DataFrame, path: Path) -> None:
    """Mean over datasets of each tool's metric at each budget, relative to ensel at 60 s
    (positive = better than that), with one standard error over datasets."""
    from matplotlib.ticker import NullLocator

    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, (metric, called) in zip(axes, METRICS, strict=True):
        sign = 1.0 if metric == "auc" else -1.0
        means = rows.groupby(["config", "budget", "dataset"])[metric].mean()
        base = means.loc[("ensel", 60.0)]
        for config, marker in (("ensel", "o"), ("autogluon", "s")):
            budgets = sorted(means.loc[config].index.get_level_values(0).unique())
            gain = [sign * (means.loc[(config, b)] - base) for b in budgets]
            mean = [g.mean() for g in gain]
            se = [standard_error(g) for g in gain]
            ax.errorbar(budgets, mean, yerr=se, marker=marker, capsize=3, label=config)
        ax.set_xscale("log")
        ax.xaxis.set_minor_locator(NullLocator())
        budgets = sorted(rows.budget.unique())
        ax.set_xticks(budgets, [f"{b:g}" for b in budgets])
        ax.axhline(0, color="black", lw=0.8)
        ax.set_xlabel("time budget (s)")
        ax.set_ylabel(f"{called} gain over ensel at 60 s")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle("Accuracy against budget (mean over datasets ± 1 se)")
    _save(fig, path)


def plot_costs(rows: pd.DataFrame, scale: pd.DataFrame, path: Path) -> None:
    """Fit seconds and predict µs per row against the training rows: the AutoML tables at
    300 s (mean over seeds) and the large tables (one fit each, their budget)."""
    plt = _pyplot()
    small = rows[rows.budget == 300.0].groupby(["config", "dataset"])
    small = small[["n_train", "fit_s", "predict_us_per_row"]].mean().reset_index()
    small = small.rename(columns={"config": "tool", "n_train": "rows", "fit_s": "fit_seconds"})
    both = pd.concat([small, scale[["tool", "rows", "fit_seconds", "predict_us_per_row"]]])
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, column, called in (
        (axes[0], "fit_seconds", "fit seconds"),
        (axes[1], "predict_us_per_row", "predict µs per row"),
    ):
        for tool, group in both.groupby("tool"):
            ax.scatter(group["rows"], group[column], label=tool, s=20)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("training rows")
        ax.set_ylabel(called)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle("Cost against table size (small tables at 300 s; large at 300-600 s)")
    _save(fig, path)


def write_all(rows: pd.DataFrame, scale: pd.DataFrame, folder: Path) -> None:
    plot_differences(rows, folder / "automl_differences.svg")
    plot_budgets(rows, folder / "accuracy_budget.svg")
    plot_costs(rows, scale, folder / "cost_rows.svg")
