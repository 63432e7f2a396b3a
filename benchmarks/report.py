"""Regenerate every table and plot of docs/results.md from the committed rows in
benchmarks/results/ (``make bench-report``).

Tables go between the page's marker comments (``<!-- generated: NAME -->`` ...
``<!-- end generated -->``), so text a person wrote is never touched; plots go to docs/img/ as
SVG files written deterministically (no date, a fixed id salt), so running this twice changes
nothing. Nothing is fitted or timed here.

The AutoML comparison reads the judged protocol's rows (seeds 2-4; seeds 0-1 tuned the
defaults), files later in ``AUTOML_FILES`` replacing the same fit in earlier ones. Differences
are signed so that positive means ensel is better; the verdict over datasets takes each
dataset's mean over seeds as one unit (``benchmarks._stats``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks._report import PAGE, ROOT, markdown_table, write_blocks
from benchmarks._stats import HIGHER_IS_BETTER, over_datasets, predict_ratios, standard_error
from benchmarks.bench_automl import merged_results

RESULTS = ROOT / "benchmarks" / "results"
AUTOML_FILES = (
    "automl_12tables",
    "automl_large_300s_spare_tier",
    "automl_small_120_600s_seed2",
    "automl_large_120_600s",
    "automl_autogluon_large_600s",
    "automl_autogluon_small_600s",
    "automl_small_120_600s_seeds34",
    "automl_300s_judged",
    "automl_large_300s_one_session",
    "automl_60s_judged",
    "automl_large_600s_one_session",
    "automl_60s_ensel_current",
)
SEEDS = (2, 3, 4)
BUDGETS = (60.0, 300.0, 600.0)
METRICS = (("auc", "AUC"), ("logloss", "log loss"))
SCALE_FILE = "scale.jsonl"
REAL_LARGE_FILE = "scale_real_large.jsonl"
SELECTION_FILE = "selection.jsonl"
MEDIUM_FILES = ("automl_medium_300s.jsonl", "scale_insteval_300s.jsonl")
"""The medium tables at 300 s, one session: ``bench_automl`` rows (doctor_contacts, vietnam_i,
movies_drama) and a ``bench_scale`` row pair (insteval)."""


def automl_rows(results: Path = RESULTS) -> pd.DataFrame:
    """The judged AutoML-comparison fits (scored rows of ``SEEDS``), one per fit."""
    rows = pd.DataFrame(merged_results([results / f"{f}.jsonl" for f in AUTOML_FILES]))
    rows = rows[rows["seed"].isin(SEEDS) & rows["auc"].notna()]
    return rows.reset_index(drop=True)


def differences(rows: pd.DataFrame, budget: float, metric: str, theirs: str = "autogluon"):
    """Per dataset: ensel's mean advantage over ``theirs`` at ``budget`` (positive = ensel
    better) over the seeds both have, its standard error over those seeds, and the training
    rows; datasets ordered by size."""
    sign = 1.0 if HIGHER_IS_BETTER[metric] else -1.0
    pick = rows[rows["budget"] == budget]
    a = pick[pick["config"] == "ensel"].set_index(["dataset", "seed"])
    b = pick[pick["config"] == theirs].set_index(["dataset", "seed"])
    both = a.index.intersection(b.index)
    d = sign * (a.loc[both, metric] - b.loc[both, metric])
    grouped = d.groupby(level="dataset")
    out = pd.DataFrame(
        {
            "n_train": a.loc[both, "n_train"].groupby(level="dataset").first(),
            "mean": grouped.mean(),
            "se": grouped.agg(standard_error),
            "seeds": grouped.size(),
        }
    )
    return out.sort_values("n_train")


def verdict_table(rows: pd.DataFrame) -> str:
    """ensel against AutoGluon at each budget with datasets as the unit."""
    lines = []
    for budget in BUDGETS:
        for metric, called in METRICS:
            st = over_datasets(rows, ("ensel", budget), ("autogluon", budget), metric)
            lines.append(
                {
                    "budget": f"{budget:g} s",
                    "metric": called,
                    "ensel better on": f"{st['wins']} of {st['datasets']}",
                    "mean difference ± se": f"{st['mean diff']:+.4f} ± {st['se diff']:.4f}",
                    "t-test p": f"{st['p (t-test)']:.2f}",
                    "sign test p": f"{st['p (sign test)']:.2f}",
                }
            )
    return markdown_table(pd.DataFrame(lines), index=False)


BUDGET_PAIRS = (
    (("ensel", 120.0), ("ensel", 60.0)),
    (("ensel", 300.0), ("ensel", 120.0)),
    (("ensel", 600.0), ("ensel", 120.0)),
    (("autogluon", 300.0), ("autogluon", 60.0)),
    (("autogluon", 600.0), ("autogluon", 300.0)),
)


def budget_table(rows: pd.DataFrame) -> str:
    """What more time buys each tool, with datasets as the unit (positive = the longer
    budget better)."""
    out = []
    for (config, longer), shorter in BUDGET_PAIRS:
        for metric, called in METRICS:
            st = over_datasets(rows, (config, longer), shorter, metric)
            out.append(
                {
                    "tool": config,
                    "budgets": f"{longer:g} s against {shorter[1]:g} s",
                    "metric": called,
                    "better / same / worse": f"{st['wins']} / {st['ties']} / {st['losses']}",
                    "mean gain ± se": f"{st['mean diff']:+.4f} ± {st['se diff']:.4f}",
                    "t-test p": f"{st['p (t-test)']:.2f}",
                }
            )
    return markdown_table(pd.DataFrame(out), index=False)


def per_dataset_table(rows: pd.DataFrame) -> str:
    """Per dataset and budget: ensel's AUC and log-loss advantage over AutoGluon ± se."""
    cells = {}
    for budget in BUDGETS:
        for metric, called in METRICS:
            d = differences(rows, budget, metric)
            cells[f"{called} {budget:g} s"] = [
                f"{m:+.4f} ± {s:.4f}" for m, s in d[["mean", "se"]].itertuples(index=False)
            ]
            index = d.index
            sizes = d["n_train"].astype(int)
    frame = pd.DataFrame(cells, index=index)
    frame.insert(0, "training rows", sizes.map("{:,}".format))
    frame.index.name = "dataset"
    return markdown_table(frame)


def cost_table(rows: pd.DataFrame) -> str:
    """Per budget and tool, over every judged fit: fit seconds (median, max), predict µs per
    row (median, max) and peak resident memory (median); then per budget ensel's predict time
    over AutoGluon's per table (``_stats.predict_ratios``)."""
    out = []
    for (budget, config), g in rows.groupby(["budget", "config"]):
        fit, pred = g["fit_s"], g["predict_us_per_row"].dropna()
        out.append(
            {
                "budget": f"{budget:g} s",
                "tool": config,
                "fits": len(g),
                "fit s median (max)": f"{fit.median():.0f} ({fit.max():.0f})",
                "predict µs/row median (max)": f"{pred.median():.0f} ({pred.max():.0f})",
                "peak MB median": f"{g['peak_rss_mb'].median():.0f}",
            }
        )
    lines = [markdown_table(pd.DataFrame(out), index=False), ""]
    for budget in BUDGETS:
        ratio = predict_ratios(rows, budget)
        lines.append(
            f"- {budget:g} s: ensel's predict time over AutoGluon's per table, median "
            f"{ratio.median():.2f}x, largest {ratio.max():.2f}x ({ratio.idxmax()})"
        )
    return "\n".join(lines)


def scale_rows(results: Path = RESULTS) -> pd.DataFrame:
    return pd.read_json(results / SCALE_FILE, lines=True)


def scale_table(scale: pd.DataFrame) -> str:
    """The large tables: one row per (table, budget, tool)."""
    frame = scale.sort_values(["rows", "budget", "tool"])
    out = pd.DataFrame(
        {
            "table": frame["table"],
            "rows": frame["rows"].map("{:,}".format),
            "budget s": frame["budget"],
            "tool": frame["tool"],
            "AUC": frame["auc"].map("{:.4f}".format),
            "log loss": frame["logloss"].map("{:.4f}".format),
            "fit s": frame["fit_seconds"].map("{:.0f}".format),
            "peak GB": (frame["peak_mb"] / 1024).map("{:.2f}".format),
            "saved MB": frame["saved_mb"].map("{:.1f}".format),
            "predict µs/row": frame["predict_us_per_row"].map("{:.0f}".format),
        }
    )
    return markdown_table(out, index=False)


def _ahead(pairs: list[tuple[float, float]], unit: str = "") -> str:
    """ "k of n; mean difference ...": the pairs (ΔAUC, Δlog loss, positive where ensel is
    better) where ensel is ahead on both, and the mean of each difference."""
    both = sum(1 for da, dl in pairs if da > 0 and dl > 0)
    auc, ll = np.mean([p[0] for p in pairs]), np.mean([p[1] for p in pairs])
    return f"{both} of {len(pairs)}{unit}; mean difference AUC {auc:+.4f}, log loss {ll:+.4f}"


def real_large_block(results: Path = RESULTS) -> dict[str, str]:
    """The real tables of 100k-500k rows (``bench_scale`` on ``LARGE_CLASSIFICATION``): per
    table and budget, the latest back-to-back fits of ensel and AutoGluon best_quality
    (differences positive where ensel is better) and LightGBM's defaults, with the cost
    columns; then the verdict the targets ask for, on the latest pairs per budget and on every
    pair the rows hold (the k-th ensel fit of a table with its k-th AutoGluon fit: each run of
    the suite fits both, one after the other); nothing while there are no rows."""
    path = results / REAL_LARGE_FILE
    if not path.exists():
        return {}
    rows = pd.read_json(path, lines=True)
    rows = rows[rows.get("error", pd.Series(index=rows.index)).isna()]
    out, latest, every = [], {}, []
    for (table, budget), r in rows.groupby(["table", "budget"], sort=False):
        ens, ag = r[r.tool == "ensel"], r[r.tool == "autogluon"]
        n = min(len(ens), len(ag))
        if n == 0:
            continue
        both = zip(ens.iloc[-n:].itertuples(), ag.iloc[-n:].itertuples(), strict=True)
        pairs = [(d.auc - a.auc, a.logloss - d.logloss) for d, a in both]
        every += pairs
        latest.setdefault(budget, []).append(pairs[-1])
        e, a = ens.iloc[-1], ag.iloc[-1]
        d_auc, d_ll = pairs[-1]
        top = ", ".join(f"{f} {w:.2f}" for f, w in list(e["families_with_weight"])[:3])
        lgbm = r[r.tool == "lightgbm"]
        lgbm = f"{lgbm.auc.iloc[-1]:.4f}" if len(lgbm) else "-"
        off = e.get("without_predict_budget")
        off = (f"{off['auc'] - e.auc:+.4f} / {e.logloss - off['logloss']:+.4f}"
               if isinstance(off, dict) else "-")  # fmt: skip
        out.append({
            "table": table, "rows": f"{int(e.rows):,}", "budget s": f"{budget:g}",
            "AUC ensel / AG": f"{e.auc:.4f} / {a.auc:.4f}", "Δ AUC": f"{d_auc:+.4f}",
            "log loss ensel / AG": f"{e.logloss:.4f} / {a.logloss:.4f}",
            "Δ log loss": f"{d_ll:+.4f}",
            "LightGBM AUC": lgbm,
            "fit s ensel (unused) / AG": f"{e.fit_seconds:.0f} "
                f"({e.get('unused_seconds', np.nan):.0f}) / {a.fit_seconds:.0f}",
            "ensel members; top families": f"{e.get('members_with_weight', np.nan):.0f}; {top}",
            "predict budget off: Δ AUC / Δ log loss": off,
            "peak GB ensel / AG": f"{e.peak_mb / 1024:.2f} / {a.peak_mb / 1024:.2f}",
            "saved MB ensel / AG": f"{e.saved_mb:.0f} / {a.saved_mb:.0f}",
            "µs/row ensel / AG": f"{e.predict_us_per_row:.0f} / {a.predict_us_per_row:.0f}",
        })  # fmt: skip
    if not out:
        return {}

    per_budget = "; ".join(f"at {b:g} s {_ahead(p, ' tables')}" for b, p in latest.items())
    lines = [
        markdown_table(pd.DataFrame(out), index=False),
        "",
        f"ensel ahead of AutoGluon on both AUC and log loss, latest pairs: {per_budget}; "
        f"every pair in the rows: {_ahead(every)} (positive: ensel better).",
    ]
    return {"real-large-tables": "\n".join(lines)}


def _medium_rows(results: Path) -> pd.DataFrame:
    """The medium tables' fits in one shape: table, tool, rows, auc, logloss, fit_s, µs/row."""
    frames = []
    for name in MEDIUM_FILES:
        if not (results / name).exists():
            continue
        rows = pd.read_json(results / name, lines=True)
        rows = rows.rename(columns={"dataset": "table", "config": "tool", "n_train": "rows",
                                    "fit_seconds": "fit_s"})  # fmt: skip
        frames.append(rows[["table", "tool", "rows", "auc", "logloss", "fit_s",
                            "predict_us_per_row"]])  # fmt: skip
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def medium_block(results: Path = RESULTS) -> dict[str, str]:
    """The medium tables (13k-55k training rows) at 300 s: per table the latest fits of ensel
    and AutoGluon best_quality, fitted back to back, the differences (positive where ensel is
    better) and the verdict the large-table targets ask for; nothing while there are no rows."""
    rows = _medium_rows(results)
    out, pairs = [], []
    for table, r in rows.groupby("table", sort=False) if len(rows) else []:
        ens, ag = r[r.tool == "ensel"], r[r.tool == "autogluon"]
        if not (len(ens) and len(ag)):
            continue
        e, a = ens.iloc[-1], ag.iloc[-1]
        pairs.append((e.auc - a.auc, a.logloss - e.logloss))
        out.append({
            "table": table, "training rows": f"{int(e.rows):,}",
            "AUC ensel / AG": f"{e.auc:.4f} / {a.auc:.4f}", "Δ AUC": f"{pairs[-1][0]:+.4f}",
            "log loss ensel / AG": f"{e.logloss:.4f} / {a.logloss:.4f}",
            "Δ log loss": f"{pairs[-1][1]:+.4f}",
            "fit s ensel / AG": f"{e.fit_s:.0f} / {a.fit_s:.0f}",
            "µs/row ensel / AG": f"{e.predict_us_per_row:.0f} / {a.predict_us_per_row:.0f}",
        })  # fmt: skip
    if not out:
        return {}
    verdict = (f"ensel ahead of AutoGluon on both AUC and log loss on {_ahead(pairs, ' tables')} "
               "(positive: ensel better).")  # fmt: skip
    return {"medium-tables": markdown_table(pd.DataFrame(out), index=False) + "\n\n" + verdict}


def headline(rows: pd.DataFrame, scale: pd.DataFrame) -> str:
    """Three lines for the README, every figure from the rows."""
    parts = []
    sizes = differences(rows, 300.0, "auc")["n_train"]
    tables = f"{len(sizes)} tables of {sizes.min():,}-{sizes.max():,} training rows"
    st = {m: over_datasets(rows, ("ensel", 300.0), ("autogluon", 300.0), m) for m, _ in METRICS}
    parts.append(
        f"- Against AutoGluon best_quality at 300 s on {tables} "
        f"(seeds 2-4): better AUC on {st['auc']['wins']} of 12 (t-test p "
        f"{st['auc']['p (t-test)']:.2f}), better log loss on {st['logloss']['wins']} of 12 "
        f"(p {st['logloss']['p (t-test)']:.2f}): level within noise."
    )
    r = rows[rows.budget == 300.0]
    e, a = r[r.config == "ensel"], r[r.config == "autogluon"]
    parts.append(
        f"- At 300 s: fit {e.fit_s.median():.0f} s median (AutoGluon {a.fit_s.median():.0f} s), "
        f"predict {e.predict_us_per_row.median():.0f} µs a row median (AutoGluon "
        f"{a.predict_us_per_row.median():.0f})."
    )
    big = scale[(scale.table == "synth1m")].set_index("tool")
    parts.append(
        f"- A synthetic table of 1M rows at 600 s: AUC {big.auc['ensel']:.4f} against AutoGluon's "
        f"{big.auc['autogluon']:.4f} and LightGBM's {big.auc['lightgbm']:.4f}; saved "
        f"{big.saved_mb['ensel']:.0f} MB (AutoGluon {big.saved_mb['autogluon']:.0f}), predict "
        f"{big.predict_us_per_row['ensel']:.0f} µs a row (AutoGluon "
        f"{big.predict_us_per_row['autogluon']:.0f})."
    )
    return "\n".join(parts)


def selection_block(results: Path = RESULTS) -> dict[str, str]:
    """The selection-speed block from the latest full run's rows (``bench_selection``), or
    nothing while there are none (the page's slot then says so)."""
    from benchmarks.bench_selection import report_lines

    path = results / SELECTION_FILE
    if not path.exists():
        return {}
    rows = pd.read_json(path, lines=True)
    rows = rows[rows["utc"] == rows["utc"].max()]
    steps = [
        {k: v for k, v in r.items() if not (isinstance(v, float) and np.isnan(v))}
        for r in rows[rows["kind"] == "step"].to_dict("records")
    ]
    bagged = rows[rows["kind"] == "bagged"]
    size = (int(bagged["M"].iloc[0]), int(bagged["N"].iloc[0])) if len(bagged) else (0, 0)
    lines = report_lines(steps, dict(zip(bagged["metric"], bagged["seconds"], strict=True)), size)
    return {"selection-engine": "\n".join(lines)}


def blocks(rows: pd.DataFrame, scale: pd.DataFrame) -> dict[str, str]:
    """Every generated block of the page and the README, by name."""
    return {
        "headline": headline(rows, scale),
        "automl-verdict": verdict_table(rows),
        "automl-per-dataset": per_dataset_table(rows),
        "automl-cost": cost_table(rows),
        "automl-budgets": budget_table(rows),
        "large-tables": scale_table(scale),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="where docs/ and README are")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    from benchmarks import _plots, bench_deploy

    rows, scale = automl_rows(args.results), scale_rows(args.results)
    pages = [args.root / PAGE, args.root / "README.md", args.root / "docs" / "deploy.md"]
    generated = {
        **blocks(rows, scale),
        **selection_block(args.results),
        **real_large_block(args.results),
        **medium_block(args.results),
        **bench_deploy.report_block(args.results / "deploy.jsonl"),
    }
    write_blocks(pages, generated)
    _plots.write_all(rows, scale, args.root / "docs" / "img")


if __name__ == "__main__":
    main()
