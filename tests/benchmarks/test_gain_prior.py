"""benchmarks/gain_prior.py: the planner's gain prior recomputed from result rows (tables as the
unit, small, synthetic and peers' rows skipped), and as a command on the committed rows."""

from __future__ import annotations

import json

import pytest

from benchmarks import gain_prior as script
from ensel.library.planning import gain


def _row(table, rows, weights, tool="ensel"):
    return {"tool": tool, "table": table, "rows": rows, "families_with_weight": weights}


def test_the_script_averages_over_tables_and_skips_other_rows():
    rows = [
        _row("a", 50_000, [["x", 0.8], ["y", 0.2]]),
        _row("a", 50_000, [["x", 0.6], ["z", 0.4]]),  # table a: x 0.7, y 0.1, z 0.2
        _row("b", 30_000, [["y", 1.0]]),  # table b: y 1.0
        _row("small", 5_000, [["w", 1.0]]),  # too few rows
        _row("synth100k", 100_000, [["w", 1.0]]),  # synthetic
        _row("b", 30_000, [["w", 1.0]], tool="autogluon"),  # a peer's row
        {"dataset": "c", "n_train": "40000", "auc": 0.7},  # no families named
    ]
    prior = script.gain_prior(rows)
    assert prior["tables"] == {"a": 2, "b": 1}
    assert prior["families"] == pytest.approx({"x": 0.35, "y": 0.55, "z": 0.1})
    assert list(prior["families"]) == ["y", "x", "z"]  # largest share first
    assert prior["default"] == script.DEFAULT and prior["strong"] == script.STRONG


def test_the_script_recomputes_the_shipped_prior_from_the_committed_rows(tmp_path):
    """Run as a command on the committed rows, the script writes a prior of the shipped form
    over at least the tables the shipped one counts (rows added since may move the shares:
    rerun it to take them in)."""
    out = tmp_path / "gain_prior.json"
    prior = script.main(["--out", str(out)])
    assert json.loads(out.read_text()) == prior
    shipped = gain.gain_prior()
    assert set(prior) == set(shipped)
    assert set(prior["tables"]) >= set(shipped["tables"])
    assert all(0.0 <= share <= 1.0 for share in prior["families"].values())
    assert sum(prior["families"].values()) == pytest.approx(1.0, abs=0.01)
