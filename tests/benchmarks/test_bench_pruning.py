"""benchmarks/bench_pruning.py: a library's scores go to one row and come back for the tables
(a small synthetic library, no build)."""

import numpy as np
import pytest

from benchmarks import bench_pruning
from benchmarks._record import append_row, load_results


@pytest.mark.slow  # selection on every metric compiles its kernels: tens of seconds
def test_scores_round_trip_through_a_row_into_the_tables(tmp_path, capsys):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 240)
    P = np.clip(y * 0.3 + rng.uniform(0, 0.7, (6, 240)), 0.01, 0.99)
    P_test, y_test = P[:, :120], y[:120]
    got = bench_pruning.run_fold(P[:, 120:], y[120:], P_test, y_test, quick=True)
    scores = [[r[k] for k in bench_pruning.SCORE_FIELDS] for r in got]
    path = tmp_path / "pruning.jsonl"
    append_row(path, {"dataset": "toy", "fold": "0.0", "scores": scores})
    frame = bench_pruning.scores_frame(load_results(path))
    assert len(frame) == len(got) and set(frame["experiment"]) >= {"prune", "size", "_bottom"}
    assert frame.drop(columns=["dataset", "fold"]).to_dict("records") == got
    bench_pruning.report(frame)
    out = capsys.readouterr().out
    assert "pruning (bags: 20, 1 = none, 0 = MODSEL, -1 = BAYESAVG)" in out and "Table 4.3" in out
    bayes = frame[(frame["experiment"] == "size") & (frame["bags"] == -1)]
    assert set(bayes["metric"]) == set(bench_pruning.METRICS)
    members = frame[frame["experiment"] == "_bayes_members"]["score"]
    assert ((members >= 1.0) & (members <= 6.0)).all()  # 1 / sum w^2 of six members
    assert "hillclimb size per dataset" in out
    table = bench_pruning.size_table(frame)
    assert list(table.columns) == ["ES (20 bags)", "ES (no bags)", "MODSEL", "BAYESAVG",
                                   "BAYESAVG members"]  # fmt: skip
    assert list(table.index.get_level_values("hillclimb rows")) == ["100", "all"]
    norm = bench_pruning.normalise(frame)
    modsel_all = norm[(norm["experiment"] == "size") & (norm["bags"] == 0)
                      & (norm["setting"] == 120)]["norm"].mean()  # fmt: skip
    assert table.loc[("toy", "all"), "MODSEL"] == pytest.approx(modsel_all)
