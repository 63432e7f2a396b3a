"""The Sandia Tables 2-3 block: the report's cells from its appendix, ours from bench_risk's rows
(the report's figure for each detector), and the two-standard-error verdict per cell."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmarks import sandia_tables

REPORT_RMSE = pd.DataFrame(
    {
        "Gauss 2-D": [0.6943, 0.2244, 0.2267, 0.1026, 0.1209, 0.0968],
        "Gauss 5-D": [0.5801, 0.2818, 0.2826, 0.3026, 0.4538, 0.3805],
        "Gauss 10-D": [0.5790, 0.2873, 0.2877, 0.3505, 0.5457, 0.5208],
        "ridge 2-D": [0.6231, 0.2293, 0.2208, 0.1074, 0.1275, 0.1073],
        "ridge 5-D": [0.5856, 0.1860, 0.1838, 0.1577, 0.2678, 0.1434],
        "ridge 10-D": [0.5565, 0.1512, 0.1492, 0.1375, 0.3094, 0.1423],
    },
    index=["box", "margin", "dispersion", "chaos_forest", "cert", "cert_forest"],
)
"""The report's Tables 2 and 3 (mean RMSE over 20 problems; columns read as in
shared/papers/INDEX.md; margin and FDR after isotonic calibration)."""


def test_the_appendix_averages_are_the_reports_tables_2_and_3():
    means = sandia_tables.report_rows().groupby(["kind", "d", "detector"])["value"].mean()
    assert sandia_tables.report_rows().groupby(["kind", "d"]).size().eq(20 * 6).all()
    for kind, label in (("gaussian", "Gauss"), ("ridge", "ridge")):
        for d in (2, 5, 10):
            for det in sandia_tables.DETECTORS:
                expected = REPORT_RMSE.loc[det, f"{label} {d}-D"]
                assert means[(kind, d, det)] == pytest.approx(expected, abs=6e-5)


def _fake_rows() -> list[dict]:
    """Ridge 5-D only: cert_forest scores exactly the report's per-problem figures (a perfect
    match), chaos_forest the report's plus 0.05 (far outside two standard errors), margin
    the report's figure in ``iso_rmse_report`` and nonsense in ``rmse`` (the verdict must read
    the calibrated figure), and one row of the unknown-class part that must be ignored."""
    report = sandia_tables.report_rows()
    ridge5 = report[(report["kind"] == "ridge") & (report["d"] == 5)]
    rows = []
    for det, shift in (("cert_forest", 0.0), ("chaos_forest", 0.05), ("margin", 0.0)):
        for _, r in ridge5[ridge5["detector"] == det].iterrows():
            value = r["value"] + shift
            figures = (
                {"rmse": 0.9, "iso_rmse_report": value} if det == "margin" else {"rmse": value}
            )
            rows.append(
                {"kind": "ridge", "d": 5, "problem": int(r["problem"]), "detector": det}
                | figures
                | {"part": "synthetic", "commit": "abc1234", "host": "box: 4 cores", "n_jobs": 4}
            )
    rows.append({"part": "unknown", "detector": "margin", "dataset": "iris", "auc": 0.5})
    return rows


def test_cells_put_ours_beside_the_report_with_a_verdict():
    ours = sandia_tables.our_rows(pd.DataFrame(_fake_rows()))
    assert len(ours) == 60  # the unknown-class row is not a synthetic cell
    table = sandia_tables.cells(ours, "ridge").set_index(["d", "detector"])
    assert len(table) == 18
    forest = table.loc[("5-D", "cert_forest")]
    assert forest["report"] == forest["ensel"] and forest["report"].startswith("0.1434 ± ")
    assert forest["within 2 SE"] == "yes" and forest["difference"] == pytest.approx(0, abs=1e-12)
    chaos = table.loc[("5-D", "chaos_forest")]
    assert chaos["within 2 SE"] == "no" and chaos["difference"] == pytest.approx(0.05)
    assert table.loc[("5-D", "margin"), "within 2 SE"] == "yes"  # iso_rmse_report, not rmse
    missing = table.loc[("10-D", "cert")]
    assert (
        missing["ensel"] == "-"
        and missing["within 2 SE"] == "-"
        and np.isnan(missing["difference"])
    )
    assert (sandia_tables.cells(ours, "gaussian")["within 2 SE"] == "-").all()


def test_the_verdict_uses_both_standard_errors():
    """A shift of 1.9 combined standard errors is within, 2.1 is not."""
    report = sandia_tables.report_rows()
    one = report[(report["kind"] == "ridge") & (report["d"] == 10) & (report["detector"] == "box")]
    se = one["value"].std(ddof=1) / np.sqrt(len(one))
    for factor, verdict in ((1.9, "yes"), (2.1, "no")):
        ours = one.assign(value=one["value"] + factor * np.hypot(se, se))
        table = sandia_tables.cells(ours, "ridge").set_index(["d", "detector"])
        assert table.loc[("10-D", "box"), "within 2 SE"] == verdict


def test_blocks_hold_provenance_table_and_count():
    blocks = sandia_tables.blocks(_fake_rows())
    assert set(blocks) == {"sandia-table-2", "sandia-table-3"}
    t3 = blocks["sandia-table-3"]
    assert t3.startswith("Ours: 61 rows of `paper_risk.jsonl.gz` (machine box: 4 cores")
    assert "abc1234" not in t3  # the page names no commit; the rows keep theirs
    assert "| 5-D | chaos_forest | 0.1577 ± " in t3 and t3.count("| no |") == 1
    assert "| 10-D | cert | 0.3094 ± 0.0085 | - | 0 | - | - |" in t3
    assert t3.endswith("Within two standard errors of the report: 2 of 3 cells.")
    assert blocks["sandia-table-2"].endswith("0 of 0 cells.")
    empty = sandia_tables.blocks([])
    assert all(v.startswith("No rows yet in `paper_risk.jsonl.gz`") for v in empty.values())


def _table1_rows() -> list[dict]:
    """Table 1 rows of full-size forests (leaves 1) on 10 problems per d: in 2-D pruning wins
    every problem (the report's verdict), in 5-D it loses every one (the report's), in 10-D it
    wins and loses alternately (no verdict; the report has one). Problem 9 of 10-D lost its
    pruned forest to an error (its pair is left out) and one Table 3 row must be ignored."""
    rng = np.random.default_rng(0)
    rows = []
    for d, shift in ((2, -0.02), (5, 0.03), (10, None)):
        for problem in range(10):
            base = 0.15 + 0.01 * rng.random()
            delta = shift if shift is not None else (0.01 if problem % 2 else -0.01)
            pruned = {"rmse": base + delta} if (d, problem) != (10, 9) else {"error": "boom"}
            for prune, figures in (("error", pruned), (None, {"rmse": base})):
                rows.append(
                    {"kind": "ridge", "d": d, "problem": problem, "detector": "cert_forest"}
                    | {"min_samples_leaf": 1, "prune": prune, "part": "table1"}
                    | {"host": "box: 4 cores", "n_jobs": 2, "commit": "abc1234"}
                    | figures
                )
    rows.append({"kind": "ridge", "d": 2, "problem": 0, "detector": "cert_forest"} | {
        "part": "synthetic", "rmse": 9.0})  # fmt: skip
    return rows


def test_table1_cells_test_pruned_against_unpruned_per_dimension():
    rows = _table1_rows()
    table = sandia_tables.table1_cells(pd.DataFrame(rows)).set_index("d")
    assert list(table.index) == ["2-D", "5-D", "10-D"] and (table["leaves"] == 1).all()
    assert table["report pruned"].tolist() == ["0.0944*", "0.1916", "0.2436"]
    assert table["report unpruned"].tolist() == ["0.1094", "0.1434*", "0.1423*"]
    assert table["problems"].tolist() == [10, 10, 9]
    assert table["better"].tolist() == ["pruned", "unpruned", "neither"]
    assert table["as the report"].tolist() == ["yes", "yes", "no"]
    # ten pairs all one way: the exact two-sided signed-rank p is 2 / 2^10
    assert table.loc["2-D", "Wilcoxon p"] == table.loc["5-D", "Wilcoxon p"] == "0.002"
    assert float(table.loc["10-D", "Wilcoxon p"]) > 0.05
    five = [r["rmse"] for r in rows if r.get("part") == "table1" and r["d"] == 5]
    pruned = np.array(five[0::2])
    se = pruned.std(ddof=1) / np.sqrt(10)
    assert table.loc["5-D", "ensel pruned"] == f"{pruned.mean():.4f} ± {se:.4f}"


def test_table1_block_holds_provenance_table_and_verdict_count():
    block = sandia_tables.table1_blocks(_table1_rows())["sandia-table-1"]
    assert block.startswith("Ours: 61 rows of `paper_risk_table1.jsonl` (machine box: 4 cores")
    assert "abc1234" not in block
    assert "| d | leaves | report pruned | report unpruned | ensel pruned |" in block
    assert "| 2-D | 1 | 0.0944* | 0.1094 | " in block and "| pruned | yes |" in block
    assert block.endswith("The better forest at 95% is the report's in 2 of 3 rows.")
    empty = sandia_tables.table1_blocks([])["sandia-table-1"]
    assert empty.startswith("No rows yet in `paper_risk_table1.jsonl`: run `python -m")
    assert "--table1" in empty


def test_wilcoxon_p_edge_cases():
    assert np.isnan(sandia_tables.wilcoxon_p(np.array([0.1]), np.array([0.2])))
    assert sandia_tables.wilcoxon_p(np.ones(5), np.ones(5)) == 1.0
