"""bench_fspt: Eq. 11's groups, the accuracy-coverage curve, and one split end to end."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import bench_fspt


def test_group_rows_split_the_confident_rows_by_the_fspt_score():
    phi_m = np.array([0.95, 0.95, 0.95, 0.95, 0.5])
    phi_f = np.array([0.9, 0.7, 0.1, 0.0, 1.0])
    right = np.array([True, True, False, True, True])
    got = bench_fspt.group_rows(phi_m, phi_f, right, t1=0.9, t2=0.5)
    assert got["G1_share"] == 0.5 and got["G1_acc"] == 1.0  # the 0.5-confidence row is out
    assert got["G2_share"] == 0.5 and got["G2_acc"] == 0.5
    assert got["G1_phi_m"] == pytest.approx(0.95)
    empty = bench_fspt.group_rows(phi_m, phi_f, right, t1=0.9, t2=0.0)
    assert empty["G1_share"] == 1.0 and np.isnan(empty["G2_acc"])


def test_coverage_curve_answers_the_lowest_risk_rows():
    risk = np.array([0.1, 0.9, 0.2, 0.8])
    right = np.array([True, False, True, True])
    assert bench_fspt.coverage_curve(risk, right, (1.0, 0.75, 0.5)) == [0.75, 1.0, 1.0]


def test_one_split_writes_groups_and_curves(tmp_path):
    path = tmp_path / "rows.jsonl"
    rows = bench_fspt.run(1, False, path)
    assert len(path.read_text().splitlines()) == len(rows)
    groups, curves = bench_fspt.tables(rows)
    assert len(groups) == 3 * 2 * 4  # models x t1 x t2
    assert (groups.xs(0.0, level="t2")["G1_share"] == 1.0).all()
    assert set(curves.index.get_level_values("rule")) == {"fspt", "confidence"}
    assert curves[1.0].between(0.8, 1.0).all()  # every model is accurate on breast cancer
