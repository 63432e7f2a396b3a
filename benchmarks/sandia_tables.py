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

from io import StringIO

import numpy as np
import pandas as pd
from scipy import stats

from benchmarks._report import markdown_table
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

REPORT_APPENDIX = """
gaussian 2 1 0.6649 0.2154 0.2281 0.1007 0.1278 0.1045
gaussian 2 2 0.6945 0.2163 0.2102 0.0887 0.1075 0.0862
gaussian 2 3 0.7288 0.2207 0.2225 0.1165 0.1426 0.1097
gaussian 2 4 0.6436 0.2428 0.2446 0.1003 0.1170 0.1071
gaussian 2 5 0.6818 0.2180 0.2171 0.1067 0.1174 0.0971
gaussian 2 6 0.6989 0.2427 0.2431 0.1005 0.1201 0.0939
gaussian 2 7 0.6823 0.2362 0.2376 0.0962 0.1085 0.0916
gaussian 2 8 0.7442 0.2178 0.2172 0.0994 0.1270 0.0883
gaussian 2 9 0.7302 0.2198 0.2196 0.1096 0.1406 0.1112
gaussian 2 10 0.6633 0.2121 0.2064 0.1038 0.1040 0.0928
gaussian 2 11 0.6736 0.2181 0.2172 0.0914 0.1019 0.0812
gaussian 2 12 0.7353 0.2317 0.2353 0.1230 0.1463 0.1147
gaussian 2 13 0.6335 0.2239 0.2246 0.1078 0.1149 0.1015
gaussian 2 14 0.6970 0.2079 0.2210 0.1028 0.1148 0.0891
gaussian 2 15 0.7166 0.2467 0.2484 0.1030 0.1131 0.0885
gaussian 2 16 0.7463 0.2242 0.2317 0.0994 0.1308 0.0853
gaussian 2 17 0.7311 0.1966 0.2078 0.1085 0.1499 0.1082
gaussian 2 18 0.7167 0.2395 0.2400 0.1079 0.1183 0.0902
gaussian 2 19 0.6734 0.2323 0.2352 0.0927 0.1091 0.0956
gaussian 2 20 0.6305 0.2262 0.2263 0.0933 0.1066 0.0989
gaussian 5 1 0.5821 0.2807 0.2812 0.2928 0.4480 0.3664
gaussian 5 2 0.5781 0.2817 0.2828 0.2990 0.4578 0.3782
gaussian 5 3 0.5761 0.2853 0.2860 0.3265 0.4730 0.4118
gaussian 5 4 0.5862 0.2851 0.2853 0.3120 0.4683 0.4001
gaussian 5 5 0.5778 0.2845 0.2849 0.3164 0.4615 0.3951
gaussian 5 6 0.5805 0.2765 0.2785 0.2979 0.4597 0.3823
gaussian 5 7 0.5815 0.2866 0.2877 0.3076 0.4588 0.3954
gaussian 5 8 0.5759 0.2841 0.2846 0.2850 0.4266 0.3467
gaussian 5 9 0.5786 0.2790 0.2802 0.2977 0.4456 0.3711
gaussian 5 10 0.5742 0.2827 0.2823 0.2960 0.4483 0.3779
gaussian 5 11 0.5706 0.2804 0.2818 0.2960 0.4402 0.3622
gaussian 5 12 0.5843 0.2807 0.2816 0.2934 0.4289 0.3652
gaussian 5 13 0.5747 0.2800 0.2814 0.2953 0.4402 0.3628
gaussian 5 14 0.5831 0.2800 0.2809 0.2702 0.4395 0.3536
gaussian 5 15 0.5842 0.2822 0.2828 0.2932 0.4572 0.3728
gaussian 5 16 0.5832 0.2817 0.2839 0.3050 0.4568 0.3733
gaussian 5 17 0.5835 0.2765 0.2780 0.2953 0.4497 0.3639
gaussian 5 18 0.5850 0.2853 0.2859 0.3009 0.4536 0.3867
gaussian 5 19 0.5893 0.2828 0.2838 0.3558 0.4949 0.4409
gaussian 5 20 0.5729 0.2794 0.2793 0.3163 0.4667 0.4041
gaussian 10 1 0.5788 0.2863 0.2867 0.3578 0.5491 0.5286
gaussian 10 2 0.5780 0.2897 0.2901 0.3561 0.5447 0.5192
gaussian 10 3 0.5759 0.2890 0.2891 0.3513 0.5448 0.5217
gaussian 10 4 0.5757 0.2885 0.2889 0.3437 0.5388 0.5198
gaussian 10 5 0.5850 0.2891 0.2894 0.3628 0.5546 0.5327
gaussian 10 6 0.5829 0.2857 0.2859 0.3539 0.5470 0.5212
gaussian 10 7 0.5841 0.2827 0.2829 0.3552 0.5514 0.5279
gaussian 10 8 0.5706 0.2856 0.2865 0.3435 0.5401 0.5153
gaussian 10 9 0.5836 0.2879 0.2890 0.3454 0.5491 0.5185
gaussian 10 10 0.5751 0.2863 0.2867 0.3476 0.5421 0.5158
gaussian 10 11 0.5696 0.2892 0.2900 0.3456 0.5370 0.5142
gaussian 10 12 0.5833 0.2884 0.2887 0.3630 0.5563 0.5306
gaussian 10 13 0.5793 0.2866 0.2870 0.3360 0.5394 0.5116
gaussian 10 14 0.5840 0.2892 0.2900 0.3498 0.5471 0.5190
gaussian 10 15 0.5819 0.2832 0.2834 0.3371 0.5448 0.5133
gaussian 10 16 0.5826 0.2894 0.2895 0.3629 0.5498 0.5267
gaussian 10 17 0.5777 0.2862 0.2867 0.3523 0.5457 0.5233
gaussian 10 18 0.5733 0.2878 0.2880 0.3446 0.5336 0.5093
gaussian 10 19 0.5802 0.2879 0.2886 0.3470 0.5487 0.5224
gaussian 10 20 0.5785 0.2870 0.2871 0.3545 0.5505 0.5248
ridge 2 1 0.6331 0.2504 0.2535 0.1009 0.1056 0.1098
ridge 2 2 0.6006 0.2176 0.2091 0.0988 0.1354 0.1017
ridge 2 3 0.6623 0.2432 0.2344 0.1087 0.1476 0.1035
ridge 2 4 0.6381 0.2452 0.2312 0.0964 0.1164 0.1042
ridge 2 5 0.5991 0.2171 0.2033 0.1133 0.1266 0.1128
ridge 2 6 0.5642 0.1992 0.1906 0.1143 0.1236 0.1156
ridge 2 7 0.6419 0.2396 0.2257 0.1119 0.1437 0.1087
ridge 2 8 0.6524 0.2382 0.2416 0.1128 0.1483 0.1079
ridge 2 9 0.6242 0.2351 0.2360 0.1209 0.1528 0.1121
ridge 2 10 0.5310 0.1761 0.1729 0.1197 0.1040 0.1208
ridge 2 11 0.6742 0.2325 0.2311 0.1052 0.1406 0.0975
ridge 2 12 0.6118 0.2474 0.2218 0.1075 0.1211 0.1142
ridge 2 13 0.6284 0.2334 0.2181 0.1040 0.1309 0.1054
ridge 2 14 0.6549 0.2496 0.2250 0.1117 0.1435 0.1054
ridge 2 15 0.6479 0.2226 0.2363 0.1021 0.1280 0.0984
ridge 2 16 0.6045 0.2246 0.2130 0.1058 0.0740 0.1114
ridge 2 17 0.5853 0.2239 0.2228 0.1104 0.0913 0.1127
ridge 2 18 0.6498 0.2285 0.1979 0.0901 0.1376 0.0923
ridge 2 19 0.6311 0.2173 0.2136 0.0873 0.1245 0.0896
ridge 2 20 0.6269 0.2435 0.2390 0.1264 0.1552 0.1217
ridge 5 1 0.6100 0.1980 0.1980 0.1793 0.3117 0.1601
ridge 5 2 0.5898 0.1693 0.1678 0.1264 0.2553 0.1280
ridge 5 3 0.5916 0.1906 0.1904 0.1480 0.2399 0.1299
ridge 5 4 0.6079 0.1915 0.1842 0.1673 0.3120 0.1427
ridge 5 5 0.5755 0.1770 0.1736 0.1466 0.2749 0.1352
ridge 5 6 0.5587 0.1695 0.1679 0.1470 0.2786 0.1339
ridge 5 7 0.6060 0.1967 0.1952 0.1660 0.2653 0.1416
ridge 5 8 0.6005 0.1932 0.1902 0.1916 0.3402 0.1699
ridge 5 9 0.5554 0.1823 0.1822 0.1429 0.1728 0.1589
ridge 5 10 0.5577 0.1753 0.1699 0.1596 0.2953 0.1511
ridge 5 11 0.5934 0.1876 0.1877 0.1543 0.2427 0.1148
ridge 5 12 0.5817 0.1648 0.1640 0.1634 0.3341 0.1448
ridge 5 13 0.5905 0.2046 0.2032 0.1900 0.3393 0.1818
ridge 5 14 0.6099 0.1912 0.1877 0.1946 0.3316 0.1500
ridge 5 15 0.6124 0.2008 0.2012 0.1521 0.2321 0.1372
ridge 5 16 0.5813 0.1872 0.1859 0.1453 0.2458 0.1322
ridge 5 17 0.5778 0.1935 0.1818 0.1686 0.2608 0.1310
ridge 5 18 0.5703 0.1750 0.1750 0.1359 0.2321 0.1357
ridge 5 19 0.5579 0.1792 0.1791 0.1188 0.1940 0.1262
ridge 5 20 0.5830 0.1922 0.1919 0.1558 0.1966 0.1621
ridge 10 1 0.5803 0.1714 0.1714 0.1527 0.3070 0.1475
ridge 10 2 0.5760 0.1514 0.1465 0.1331 0.3365 0.1277
ridge 10 3 0.5556 0.1558 0.1557 0.1484 0.3313 0.1440
ridge 10 4 0.5696 0.1511 0.1451 0.1309 0.3485 0.1564
ridge 10 5 0.5442 0.1307 0.1270 0.1218 0.2439 0.1242
ridge 10 6 0.5341 0.1409 0.1397 0.1333 0.3551 0.1758
ridge 10 7 0.5363 0.1325 0.1299 0.1186 0.3498 0.1615
ridge 10 8 0.5558 0.1502 0.1491 0.1346 0.2696 0.1247
ridge 10 9 0.5609 0.1609 0.1607 0.1443 0.3221 0.1484
ridge 10 10 0.5527 0.1500 0.1486 0.1435 0.3574 0.1732
ridge 10 11 0.5572 0.1554 0.1511 0.1522 0.2540 0.1477
ridge 10 12 0.5543 0.1416 0.1386 0.1290 0.3520 0.1525
ridge 10 13 0.5657 0.1791 0.1779 0.1566 0.2973 0.1385
ridge 10 14 0.5644 0.1590 0.1571 0.1437 0.3236 0.1412
ridge 10 15 0.5690 0.1653 0.1659 0.1564 0.2285 0.1455
ridge 10 16 0.5649 0.1601 0.1597 0.1457 0.2988 0.1335
ridge 10 17 0.5405 0.1444 0.1446 0.1318 0.2872 0.1259
ridge 10 18 0.5423 0.1294 0.1258 0.1087 0.3101 0.1221
ridge 10 19 0.5543 0.1445 0.1427 0.1285 0.2986 0.1235
ridge 10 20 0.5524 0.1501 0.1464 0.1366 0.3164 0.1328
"""
"""Report Tables A.3-A.8: kind, d, problem, then the RMSE of the six detectors in DETECTORS'
order, one line per problem (20 per setting). Their means are the report's Tables 2-3."""


def report_rows() -> pd.DataFrame:
    """The report's per-problem figures, one row per kind, d, problem and detector."""
    names = ["kind", "d", "problem", *DETECTORS]
    wide = pd.read_csv(StringIO(REPORT_APPENDIX.strip()), sep=" ", names=names)
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
        missing = (
            "No rows yet in `paper_risk.jsonl.gz`: run `python -m benchmarks.bench_risk --paper "
            "--results benchmarks/results/paper_risk.jsonl.gz`."
        )
        return {f"sandia-{name}": missing for name in TABLES}
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
        return {
            "sandia-table-1": f"No rows yet in `{TABLE1_FILE}`: run `python -m "
            f"benchmarks.bench_risk --table1 --results benchmarks/results/{TABLE1_FILE}`."
        }
    frame = pd.DataFrame(rows)
    table = table1_cells(frame)
    same = int((table["as the report"] == "yes").sum())
    body = markdown_table(table, index=False)
    summary = f"The better forest at 95% is the report's in {same} of {len(table)} rows."
    return {"sandia-table-1": f"{provenance_line(frame, TABLE1_FILE)}\n\n{body}\n\n{summary}"}
