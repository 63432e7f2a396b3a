"""The suites' quick modes run end to end on small inputs (seconds each): the code a user's
``--quick`` runs, with the data or budgets made smaller where the quick mode itself would take
minutes, and nothing written into the committed rows or pages."""

from __future__ import annotations

import json

import pytest

from benchmarks import _report, report


@pytest.fixture(autouse=True)
def page_elsewhere(tmp_path, monkeypatch):
    """Blocks a suite writes go to a copy of the page in a temporary folder."""
    (tmp_path / "docs").mkdir()
    page = (_report.ROOT / _report.PAGE).read_text()
    (tmp_path / "docs" / "results.md").write_text(page)
    monkeypatch.setattr(_report, "ROOT", tmp_path)
    return tmp_path


def test_selection_quick_records_rows_that_the_report_turns_into_its_block(tmp_path):
    from benchmarks import bench_selection

    rows = tmp_path / "selection.jsonl"
    argv = ["--quick", "--no-peer", "--sizes", "40x200", "--steps", "2", "--results", str(rows)]
    bench_selection.main(argv)
    written = [json.loads(line) for line in rows.read_text().splitlines()]
    assert {r["kind"] for r in written} == {"step", "bagged"}
    assert all(r["commit"] and r["utc"] for r in written)
    block = report.selection_block(tmp_path)["selection-engine"]
    assert "library of 40 members x 200 rows" in block
    assert "\n| roc | " in block and "\n| rms | " in block
    # a quick run never writes the page
    assert (tmp_path / "docs" / "results.md").read_text() == (
        report.ROOT / "docs" / "results.md"
    ).read_text()


def test_automl_quick_fits_and_reports_one_row(tmp_path, monkeypatch, capsys):
    from benchmarks import bench_automl

    monkeypatch.setattr(bench_automl, "config_library", lambda config: "tiny")
    rows = tmp_path / "automl.jsonl"
    argv = ["--quick", "--configs", "ensel", "--budgets", "10", "--results", str(rows)]
    bench_automl.main(argv)
    (row,) = [json.loads(line) for line in rows.read_text().splitlines()]
    assert (row["dataset"], row["config"], row["budget"]) == ("pima", "ensel", 10.0)
    assert 0.5 < row["auc"] <= 1 and row["fit_s"] < 60 and row["predict_us_per_row"] > 0
    assert "pima" in capsys.readouterr().out


def test_scale_quick_records_a_row_per_tool_and_reports_them(tmp_path, capsys):
    from benchmarks import bench_scale

    rows = tmp_path / "scale.jsonl"
    bench_scale.main(["--quick", "--tools", "hgb", "--results", str(rows)])
    (row,) = [json.loads(line) for line in rows.read_text().splitlines()]
    assert (row["tool"], row["table"], row["rows"], row["budget"]) == (
        "hgb",
        "synth20k",
        20_000,
        60.0,
    )
    assert "error" not in row and 0.5 < row["auc"] <= 1 and row["predict_us_per_row"] > 0
    assert "synth20k" in capsys.readouterr().out


def test_regression_quick_fits_ensel_and_its_peers_(tmp_path):
    from benchmarks import bench_regression

    rows = tmp_path / "regression.jsonl"
    argv = ["--quick", "--datasets", "diabetes", "--time-limit", "10", "--spec", "tiny_regression"]
    bench_regression.main([*argv, "--no-autogluon", "--results", str(rows)])
    (record,) = [json.loads(x) for x in rows.open()]
    assert record["dataset"] == "diabetes" and record["ensel"]["rmse"] > 0 and record["commit"]
    assert record["hgb"]["rmse"] > 0 and record["best_member"]["rmse"] > 0


@pytest.mark.slow
def test_dask_data_smoke_fits_from_parquet_and_scores_every_row(capsys):
    from benchmarks import bench_dask_data

    bench_dask_data.main(["--smoke"])
    out = capsys.readouterr().out
    assert "| 1000 | fit from parquet (dask, 2 workers) |" in out
    assert "| 1000 | score in memory (2 threads) |" in out
    assert "client peak while fitting from parquet" in out
