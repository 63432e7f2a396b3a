"""benchmarks/report.py: `make bench-report` rebuilds the page's generated blocks and plots from
the committed rows, leaves hand-written text alone, and a second run changes nothing."""

import shutil
from pathlib import Path

import pytest

from benchmarks import report
from benchmarks._report import ROOT

pytest.importorskip("matplotlib")


@pytest.fixture
def copy(tmp_path) -> Path:
    (tmp_path / "docs").mkdir()
    shutil.copy(ROOT / "docs" / "results.md", tmp_path / "docs" / "results.md")
    shutil.copy(ROOT / "docs" / "deploy.md", tmp_path / "docs" / "deploy.md")
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    return tmp_path


def _snapshot(root: Path) -> dict[str, bytes]:
    files = sorted(p for p in root.rglob("*") if p.is_file())
    return {str(p.relative_to(root)): p.read_bytes() for p in files}


def test_the_committed_page_is_what_the_rows_give_and_a_rerun_changes_nothing(copy):
    report.main(["--root", str(copy)])
    first = _snapshot(copy)
    assert first["docs/results.md"] == (ROOT / "docs" / "results.md").read_bytes()
    assert first["README.md"] == (ROOT / "README.md").read_bytes()
    assert first["docs/deploy.md"] == (ROOT / "docs" / "deploy.md").read_bytes()
    for name in ("automl_differences", "accuracy_budget", "cost_rows"):
        assert first[f"docs/img/{name}.svg"] == (ROOT / "docs" / "img" / f"{name}.svg").read_bytes()
    report.main(["--root", str(copy)])
    assert _snapshot(copy) == first


def test_text_outside_the_markers_is_untouched(copy):
    page = copy / "docs" / "results.md"
    text = page.read_text().replace("## In short", "## In short\n\nA person's note.")
    text = text.replace("| 60 s | AUC |", "| stale |", 1)
    page.write_text(text)
    report.main(["--root", str(copy)])
    again = page.read_text()
    assert "A person's note." in again and "| stale |" not in again
    assert again.replace("\n\nA person's note.", "") == (ROOT / "docs" / "results.md").read_text()


def test_a_page_missing_a_block_is_an_error(copy):
    page = copy / "docs" / "results.md"
    page.write_text(page.read_text().replace("<!-- generated: automl-verdict -->", ""))
    with pytest.raises(SystemExit):
        report.main(["--root", str(copy)])


def test_the_verdict_counts_datasets_not_seeds():
    rows = report.automl_rows()
    assert set(rows.seed) == set(report.SEEDS)
    table = report.verdict_table(rows)
    assert table.count(" of 12 |") == 2 * len(report.BUDGETS)


def test_papers_report_on_the_committed_rows_changes_nothing_in_the_committed_page(tmp_path):
    from benchmarks import papers_report

    doc = tmp_path / "papers.md"
    shutil.copy(ROOT / "docs" / "papers.md", doc)
    papers_report.write_papers_doc(doc)
    assert doc.read_bytes() == (ROOT / "docs" / "papers.md").read_bytes()


def test_the_medium_block_pairs_each_table_s_latest_fits_across_both_suites(tmp_path):
    """bench_automl rows (dataset/config) and bench_scale rows (table/tool) give one table; the
    verdict counts tables where ensel is ahead on both metrics, signed so positive is better."""
    import json

    automl = ("dataset", "config", "n_train", "fit_s")
    scale = ("table", "tool", "rows", "fit_seconds")

    def fit(names, table, tool, rows, auc, logloss, fit_s, us):
        return {**dict(zip(names, (table, tool, rows, fit_s), strict=True)), "auc": auc,
                "logloss": logloss, "predict_us_per_row": us}  # fmt: skip

    automl = [fit(automl, "a", "ensel", 1000, 0.80, 0.40, 299.0, 10.0),
              fit(automl, "a", "autogluon", 1000, 0.79, 0.41, 310.0, 20.0)]  # fmt: skip
    scale = [fit(scale, "b", "ensel", 5000, 0.70, 0.60, 290.0, 5.0),
             fit(scale, "b", "autogluon", 5000, 0.71, 0.59, 320.0, 50.0)]  # fmt: skip
    for name, rows in zip(report.MEDIUM_FILES, (automl, scale), strict=True):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    block = report.medium_block(tmp_path)["medium-tables"]
    assert "| a | 1,000 | 0.8000 / 0.7900 | +0.0100 | 0.4000 / 0.4100 | +0.0100 |" in block
    assert "| b | 5,000 | 0.7000 / 0.7100 | -0.0100 | 0.6000 / 0.5900 | -0.0100 |" in block
    assert "on both AUC and log loss on 1 of 2 tables" in block
    assert report.medium_block(tmp_path / "none") == {}
