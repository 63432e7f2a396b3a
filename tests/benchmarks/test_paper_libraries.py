"""bench_paper's libraries calibrated on the hillclimb set and Table 4.4's ES-HILL / ES-AVG,
on hand-made predictions (no library is built)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from benchmarks import bench_paper
from benchmarks._paper_libraries import breakdown_scores, member_libraries, table_4_4
from ensel.calibration import PlattCalibrator
from ensel.metrics import METRICS, score
from ensel.strategies import STRATEGIES


class _FakeLibrary:
    def __init__(self, P, y, calibration):
        self.predictions, self.y = P, y
        self.members = pd.DataFrame(
            {"id": [f"m{i}" for i in range(len(P))], "calibration": calibration}
        )


def _predictions(rng, m, n, y):
    return np.clip(0.5 + 0.3 * (y - 0.5) + rng.normal(0, 0.25, (m, n)), 0.01, 0.99)


def test_member_libraries_calibrate_the_uncalibrated_members_on_the_hillclimb_set():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200)
    P = _predictions(rng, 4, 200, y)
    P_test = rng.uniform(0.01, 0.99, (4, 30))
    libs = member_libraries(_FakeLibrary(P, y, ["none", "platt", "none", "platt"]), P_test)
    assert libs["NOCAL"][2] == ["m0", "m2"] and libs["CAL"][2] == ["m1", "m3"]
    hill, test, ids = libs["CALHC"]
    assert ids == ["hc:m0", "hc:m2"]
    cal = PlattCalibrator().fit(P[2], y)  # one sigmoid fitted on all hillclimb rows
    np.testing.assert_allclose(hill[1], cal.predict(P[2]), atol=1e-12)
    np.testing.assert_allclose(test[1], cal.predict(P_test[2]), atol=1e-12)
    both = libs["BOTHHC"]
    assert both[2] == ["m0", "m2", "hc:m0", "hc:m2"]
    np.testing.assert_allclose(both[0], np.concatenate([P[[0, 2]], hill]))


def test_breakdown_selects_on_all_rows_for_hill_and_on_one_fold_for_avg():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 150)
    folds = np.arange(150) % 3
    P = _predictions(rng, 5, 150, y)
    y_test = rng.integers(0, 2, 40)
    siblings = _predictions(rng, 15, 40, y_test).reshape(3, 5, 40)
    P_test = siblings.mean(axis=0)
    got = {(m, k): v for m, k, v in breakdown_scores(P, y, folds, siblings, P_test, y_test)}
    es = STRATEGIES["es"]
    w = es(P, y, "rms", {"random_state": 0})
    hill = np.mean([score("rms", y_test, w @ s) for s in siblings])
    assert got["ES-HILL", "rms"] == pytest.approx(hill)
    avg = [
        score(
            "rms", y_test, es(P[:, folds == k], y[folds == k], "rms", {"random_state": 0}) @ P_test
        )
        for k in range(3)
    ]
    assert got["ES-AVG", "rms"] == pytest.approx(np.mean(avg))
    assert {k for _, k in got} == set(METRICS)


def test_table_4_4_is_the_share_of_the_cross_validation_gain():
    rows = []
    for method, value in {
        "ES-NOCAL": 0.8,
        "ES-NOCAL-CV": 0.9,
        "ES-HILL": 0.84,
        "ES-AVG": 0.87,
    }.items():
        rows += [{"method": method, "metric": m, "norm": value} for m in METRICS]
    table = table_4_4(pd.DataFrame(rows))
    assert table.loc["ES-HILL", "acc"] == pytest.approx(40.0)
    assert table.loc["ES-AVG", "MEAN"] == pytest.approx(70.0)
    assert table.loc["SUM", "mxe"] == pytest.approx(110.0)


def test_report_reads_the_rows_back(tmp_path, capsys):
    scores = {"_bottom": {}, "_perfect": {}, "_member-CV:a": {}}
    methods = "ES-NOCAL ES-NOCAL-CV ES-HILL ES-AVG ES-BOTH-CV MODSEL-BOTH MODSEL-BOTH-CV"
    for method in methods.split() + [f"proxy:{p}" for p in ("rms", "mxe", "roc", "acc")]:
        scores[method] = {}
    rng = np.random.default_rng(2)
    for m in METRICS:
        lower = m in ("rms", "mxe")
        scores["_bottom"][m] = 0.5 if lower else 0.3
        scores["_perfect"][m] = 0.0 if lower else 1.0
        for method in scores:
            if not method.startswith("_"):
                scores[method][m] = float(
                    rng.uniform(0.35, 0.45) if lower else rng.uniform(0.4, 0.6)
                )
        scores["_member-CV:a"][m] = 0.3 if lower else 0.7
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"dataset": "d", "fold": 0, "scores": scores}) + "\n")
    rows = bench_paper.rows_from_results(bench_paper.load_results(path))
    assert {"dataset": "d", "fold": 0, "method": "ES-HILL", "metric": "acc",
            "score": scores["ES-HILL"]["acc"]} in rows  # fmt: skip
    bench_paper.main(["--report", "--results", str(path)])
    out = capsys.readouterr().out
    assert "Table 4.4" in out and "ES-HILL" in out


def test_a_rerun_skips_the_folds_already_recorded(tmp_path, monkeypatch):
    path = tmp_path / "rows.jsonl"
    rows = [{"dataset": "d", "fold": f, "scores": {}} for f in (0, 2)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    calls = []

    def run_dataset(name, spec, n_folds, store, results, time_limit, skip):
        calls.append((name, spec, time_limit, skip))

    monkeypatch.setattr(bench_paper, "run_dataset", run_dataset)
    monkeypatch.setattr(bench_paper, "tables", lambda rows: {})
    bench_paper.main(["--datasets", "d,e", "--spec", "tiny", "--time-limit", "30",
                      "--results", str(path)])  # fmt: skip
    assert calls == [("d", "tiny", 30.0, frozenset({0, 2})), ("e", "tiny", 30.0, frozenset())]
