"""bench_risk's report-scale sizes and its result rows (one small synthetic problem)."""

from __future__ import annotations

import json
import sys

from benchmarks import bench_risk


def test_paper_sizes_are_the_reports():
    sizes = bench_risk.PAPER
    assert sizes.problems == 20
    assert sizes.n_train == {2: 1000, 5: 4000, 10: 4000}
    assert sizes.n_test == 3000
    assert 12_000 <= sizes.grid_per_axis**2 <= 14_000  # the report's grid of about 13,000
    assert sizes.unknown_repeats == 5  # 5 x 2-fold cross-validation


def test_a_synthetic_problem_writes_rows_with_provenance(tmp_path):
    sizes = bench_risk.Sizes(problems=1, n_train={2: 200}, grid_per_axis=12)
    kind, d = bench_risk.SETTINGS[0][0], 2
    rows = bench_risk.synthetic_problem(kind, d, 0, ["box"], sizes)
    assert len(rows) == 1 and rows[0]["detector"] == "box" and not rows[0]["error"]
    assert -1 <= rows[0]["spearman"] <= 1 and rows[0]["rmse"] >= 0
    path = tmp_path / "paper_risk.jsonl"
    frame = bench_risk.pd.DataFrame(rows).assign(missing=float("nan"))
    bench_risk.append_rows(path, frame, "synthetic", sizes)
    got = json.loads(path.read_text().splitlines()[0])
    assert got["part"] == "synthetic" and got["missing"] is None
    assert got["sizes"]["n_train"] == {"2": 200}
    assert {"commit", "versions", "load", "machine"} <= set(got)


def test_table1_rows_are_the_four_forests_on_the_table_3_problem(tmp_path):
    """Table 1 runs pruned and unpruned forests, full-size and with default leaves, on the very
    problem, rows and test points of the Table 3 rows: its unpruned default forest scores what
    the Table 3 ``cert_forest`` row scores."""
    sizes = bench_risk.Sizes(problems=1, n_train={2: 200}, grid_per_axis=12)
    rows = bench_risk.table1_problem(2, 0, sizes)
    assert [(r["min_samples_leaf"], r["prune"]) for r in rows] == [
        (1, "error"), (1, None), (5, "error"), (5, None)
    ]  # fmt: skip
    assert all(not r["error"] and 0 < r["rmse"] < 1 for r in rows)
    (table3,) = bench_risk.synthetic_problem("ridge", 2, 0, ["cert_forest"], sizes)
    assert rows[3]["rmse"] == table3["rmse"]
    assert rows[2]["rmse"] != rows[3]["rmse"]  # pruning changed the forest
    path = tmp_path / "paper_risk_table1.jsonl"
    bench_risk.append_rows(path, bench_risk.pd.DataFrame(rows), "table1", sizes, 2)
    got = [json.loads(line) for line in path.read_text().splitlines()]
    assert [g["prune"] for g in got] == ["error", None, "error", None]
    assert got[0]["part"] == "table1" and got[0]["n_jobs"] == 2 and got[0]["host"].endswith("cores")
    assert {"commit", "versions", "load", "machine"} <= set(got[0])


def test_table1_command_writes_rows_and_prints_the_docs_table(tmp_path, monkeypatch, capsys):
    tiny = bench_risk.Sizes(problems=1, n_train={2: 120, 5: 120, 10: 120}, grid_per_axis=8)
    monkeypatch.setattr(bench_risk, "QUICK", bench_risk.replace(tiny, n_test=60))
    path = tmp_path / "paper_risk_table1.jsonl"
    argv = ["bench_risk", "--table1", "--quick", "--n-jobs", "1", "--results", str(path)]
    monkeypatch.setattr(sys, "argv", argv)
    bench_risk.main()
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(rows) == 3 * len(bench_risk.TABLE1_FORESTS)
    assert {(r["d"], r["part"], r["sizes"]["n_test"]) for r in rows} == {
        (2, "table1", 60), (5, "table1", 60), (10, "table1", 60)
    }  # fmt: skip
    out = capsys.readouterr().out
    assert "report pruned" in out and "0.0944*" in out and "wall:" in out
