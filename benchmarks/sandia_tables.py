"""The Sandia report's Tables 1-3 (Munson & Kegelmeyer, SAND2013-2534, §3 and §4.1) beside ours.
Tables 2-3: each cell as the mean over problems with its standard error, for the report (from the
per-problem figures of its Appendix A, Tables A.3-A.8) and for bench_risk's rows, with a verdict
on whether the two means are within two standard errors of their difference. Table 1: pruned
and unpruned CERT forests on the ridge problems, the report's means beside ours, and which one a
Wilcoxon signed-rank test over the problems finds better, as the report tests it.

Each cell compares the figure the report computed: the RMSE of the raw score against the true
risk for box risk, one CERT tree and the two forests; for margin risk and FDR the RMSE after an
isotonic map fitted on the test points themselves (§4.1, bench_risk's ``iso_rmse_report``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from benchmarks._report import markdown_table, no_rows
from benchmarks._stats import standard_error

DETECTORS = ("box", "margin", "dispersion", "chaos_forest", "cert", "cert_forest")
"""The report's six columns in its order (read as shared/papers/INDEX.md reads the garbled
headers: box, margin, FDR, chaos forest, CERT, CERT forest)."""

FIGURE = {
    "box": "rmse",
    "margin": "iso_rmse_report",
    "dispersion": "iso_rmse_report",
    "chaos_forest": "rmse",
    "cert": "rmse",
    "cert_forest": "rmse",
}
"""Which of bench_risk's figures the report's cell is: raw RMSE, or RMSE after isotonic
calibration on the test points (margin and FDR, §4.1)."""

TABLES = {"table-2": "gaussian", "table-3": "ridge"}
"""Report Table 2 holds the Gaussian mixtures, Table 3 the ridge mixtures."""

REPORT_APPENDIX = Path(__file__).parent / "paper_figures" / "sandia_appendix_a.csv"
"""Report Tables A.3-A.8: kind, d, problem, then the RMSE of the six detectors in DETECTORS'
order, one line per problem (20 per setting). Their means are the report's Tables 2-3."""


def report_rows() -> pd.DataFrame:
    """The report's per-problem figures, one row per kind, d, problem and detector."""
    wide = pd.read_csv(REPORT_APPENDIX)
    return wide.melt(["kind", "d", "problem"], var_name="detector", value_name="value")


def our_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """bench_risk's synthetic rows reduced to the report's figure per problem and detector."""
    rows = rows[rows["detector"].isin(DETECTORS)]
    if "part" in rows:
        rows = rows[rows["part"].fillna("synthetic") == "synthetic"]
    value = [row[FIGURE[row["detector"]]] for _, row in rows.iterrows()]
    out = rows[["kind", "d", "problem", "detector"]].assign(value=np.asarray(value, float))
    return out.dropna(subset=["value"])


def _mean_se(long: pd.DataFrame) -> pd.DataFrame:
    g = long.groupby(["kind", "d", "detector"])["value"]
    return pd.DataFrame({"mean": g.mean(), "se": g.agg(standard_error), "n": g.count()})


def cells(ours: pd.DataFrame, kind: str) -> pd.DataFrame:
    """One row per detector and dimension of ``kind``: the report's mean and standard error,
    ours, the difference (ours minus the report's) and whether it is within two standard
    errors of the difference (the two errors combined as independent: sqrt(se1^2 + se2^2))."""
    paper = _mean_se(report_rows()).loc[kind]
    mine = _mean_se(ours[ours["kind"] == kind]) if len(ours) else None
    out = []
    for d in (2, 5, 10):
        for det in DETECTORS:
            p = paper.loc[(d, det)]
            have = mine is not None and (kind, d, det) in mine.index
            m = mine.loc[(kind, d, det)] if have else None
            diff = m["mean"] - p["mean"] if have else np.nan
            se = np.hypot(m["se"], p["se"]) if have else np.nan
            within = ("yes" if abs(diff) <= 2 * se else "no") if have else "-"
            out.append(
                {
                    "d": f"{d}-D",
                    "detector": det,
                    "report": _fmt(p["mean"], p["se"]),
                    "ensel": _fmt(m["mean"], m["se"]) if have else "-",
                    "problems": int(m["n"]) if have else 0,
                    "difference": diff,
                    "within 2 SE": within,
                }
            )
    return pd.DataFrame(out)


def _fmt(mean: float, se: float) -> str:
    return f"{mean:.4f} ± {se:.4f}"


def provenance_line(rows: pd.DataFrame, name: str = "paper_risk.jsonl.gz") -> str:
    """Rows (of the file ``name``), machine and processes of the run, and its sizes (each row
    records its commit; the page names none)."""

    def values(col: str) -> str:
        if col not in rows:
            return "?"
        return ", ".join(sorted({str(v) for v in rows[col].dropna()})) or "?"

    sizes = (
        rows["sizes"].dropna().iloc[0] if "sizes" in rows and rows["sizes"].notna().any() else {}
    )
    size_text = ""
    if sizes:
        n = sizes.get("n_train", {})
        size_text = (
            f"; sizes: {sizes.get('problems')} problems per setting, training rows "
            f"{n.get('2')} / {n.get('5')} / {n.get('10')} (2-D / 5-D / 10-D), a "
            f"{sizes.get('grid_per_axis')}-per-axis grid in 2-D, {sizes.get('n_test')} "
            "line-search points in 5-D and 10-D"
        )
    return (
        f"Ours: {len(rows)} rows of `{name}` (machine {values('host')}, "
        f"{values('n_jobs')} processes){size_text}."
    )


def blocks(rows: list[dict]) -> dict[str, str]:
    """The generated blocks ``sandia-table-2`` and ``sandia-table-3`` from bench_risk's rows."""
    if not rows:
        command = "bench_risk --paper --results benchmarks/results/paper_risk.jsonl.gz"
        return {f"sandia-{name}": no_rows("paper_risk.jsonl.gz", command) for name in TABLES}
    frame = pd.DataFrame(rows)
    ours = our_rows(frame)
    where = provenance_line(frame)
    out = {}
    for name, kind in TABLES.items():
        table = cells(ours, kind)
        ran = table[table["within 2 SE"] != "-"]
        held = int((ran["within 2 SE"] == "yes").sum())
        summary = f"Within two standard errors of the report: {held} of {len(ran)} cells."
        body = markdown_table(table, ".4f", index=False).replace("| nan |", "| - |")
        out[f"sandia-{name}"] = f"{where}\n\n{body}\n\n{summary}"
    return out


REPORT_TABLE_1 = {
    2: (0.0944, 0.1094, "pruned"),
    5: (0.1916, 0.1434, "unpruned"),
    10: (0.2436, 0.1423, "unpruned"),
}
"""Report Table 1 (§3): per d, the mean RMSE over 20 ridge problems of the pruned and the
unpruned CERT forest, and the column the Wilcoxon signed-rank test at 95% marks better."""

TABLE1_FILE = "paper_risk_table1.jsonl"
ALPHA = 0.05  # the report's 95% confidence level


def wilcoxon_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p-value of paired figures ``a`` and ``b`` (scipy's);
    1.0 where every pair ties, NaN below two pairs."""
    if len(a) < 2:
        return float("nan")
    if not np.any(np.asarray(a) - np.asarray(b)):
        return 1.0
    return float(stats.wilcoxon(a, b).pvalue)


def table1_cells(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per d and leaf size of bench_risk's Table 1 rows: the report's means (``*`` on
    the one its test marks better), ours as mean ± standard error over the problems where
    both forests ran, the Wilcoxon p-value between them, the better one at 95% ("neither" when
    p >= 0.05 or untested) and whether that verdict is the report's."""
    if "part" in rows:
        rows = rows[rows["part"].fillna("table1") == "table1"]
    rows = rows.dropna(subset=["rmse"]).assign(pruned=lambda f: f["prune"].notna())
    out = []
    for (d, leaf), group in rows.groupby(["d", "min_samples_leaf"]):
        pairs = group.pivot_table(index="problem", columns="pruned", values="rmse")
        pairs = pairs.reindex(columns=[True, False]).dropna()  # problems where both ran
        pruned, unpruned = pairs[True], pairs[False]
        p = wilcoxon_p(pruned.to_numpy(), unpruned.to_numpy())
        better = "neither"
        if p < ALPHA:
            better = "pruned" if pruned.mean() < unpruned.mean() else "unpruned"
        paper = REPORT_TABLE_1[int(d)]
        star = {k: "*" if paper[2] == k else "" for k in ("pruned", "unpruned")}
        ours = {k: _fmt(v.mean(), standard_error(v)) if len(v) else "-" for k, v in
                (("pruned", pruned), ("unpruned", unpruned))}  # fmt: skip
        out.append(
            {
                "d": f"{int(d)}-D",
                "leaves": int(leaf),
                "report pruned": f"{paper[0]:.4f}{star['pruned']}",
                "report unpruned": f"{paper[1]:.4f}{star['unpruned']}",
                "ensel pruned": ours["pruned"],
                "ensel unpruned": ours["unpruned"],
                "problems": len(pairs),
                "Wilcoxon p": "-" if np.isnan(p) else f"{p:.2g}",
                "better": better,
                "as the report": "yes" if better == paper[2] else "no",
            }
        )
    return pd.DataFrame(out)


def table1_blocks(rows: list[dict]) -> dict[str, str]:
    """The generated block ``sandia-table-1`` from bench_risk's ``--table1`` rows."""
    if not rows:
        command = f"bench_risk --table1 --results benchmarks/results/{TABLE1_FILE}"
        return {"sandia-table-1": no_rows(TABLE1_FILE, command)}
    frame = pd.DataFrame(rows)
    table = table1_cells(frame)
    same = int((table["as the report"] == "yes").sum())
    body = markdown_table(table, index=False)
    summary = f"The better forest at 95% is the report's in {same} of {len(table)} rows."
    return {"sandia-table-1": f"{provenance_line(frame, TABLE1_FILE)}\n\n{body}\n\n{summary}"}
