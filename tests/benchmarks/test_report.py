"""benchmarks/_report.py: a timing table written to its results file and its docs section."""

import json

from benchmarks import _report


def test_timing_rows_go_to_the_results_and_replace_their_section(tmp_path, monkeypatch):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "benchmarks.md").write_text("# B\n\n## Kept\nold\n\n## T\nstale\n")
    monkeypatch.setattr(_report, "ROOT", tmp_path)
    results = tmp_path / "rows.jsonl"
    rows = [{"case": "a", "ms": 1.5}, {"case": "b", "ms": 2.25}]
    _report.write_timing_rows(rows, results, "## T", "cmd", [0.5, 0.4, 0.3], "Timed.", ("numpy",))
    written = [json.loads(line) for line in results.read_text().splitlines()]
    assert [r["case"] for r in written] == ["a", "b"]
    assert written[0]["load_start"] == [0.5, 0.4, 0.3] and "numpy" in written[0]["versions"]
    text = (tmp_path / "docs" / "benchmarks.md").read_text()
    assert "## Kept\nold" in text and "stale" not in text
    assert "load average at the start 0.50, 0.40, 0.30; numpy " in text and "Timed." in text
    assert "| a | 1.5 |" in text and "| b | 2.25 |" in text
