"""bench_compress: Table 4.8's shares computed as the dissertation does, the run plan, the
binary targets, and the quick mode end to end (rows written, resumed, reported)."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from benchmarks import bench_compress as bc
from ensel.metrics import METRICS


def _row(problem, hidden, n_pseudo, mimic, ensemble=0.30, ann=0.34, single=0.32):
    def scores(rms):
        return {m: (rms if m == "rms" else 1.0 - rms) for m in METRICS}

    models = {"MIMIC": mimic, "ENSEMBLE": ensemble, "ANN": ann, "SINGLE": single}
    return {
        "problem": problem,
        "hidden": hidden,
        "n_pseudo": n_pseudo,
        "spec": "default",
        "scores": {k: scores(v) for k, v in models.items()},
    }


def test_kept_is_the_share_of_the_gain_and_nan_without_a_gain():
    assert bc.kept(0.34, 0.30, 0.32) == pytest.approx(0.5)
    assert bc.kept(0.34, 0.30, 0.29) == pytest.approx(1.25)
    assert math.isnan(bc.kept(0.30, 0.30, 0.29))
    assert math.isnan(bc.kept(0.30, 0.31, 0.32))  # the ensemble loses: no share of a gain


def test_table_4_8_uses_the_headline_rows_and_the_ratio_of_averages():
    rows = [
        _row("a", 256, 400_000, mimic=0.31),
        _row("a", 16, 400_000, mimic=0.50),  # a sweep row: not in Table 4.8
        _row("a", 256, 25_000, mimic=0.50),
        _row("b", 256, 400_000, mimic=0.36, ensemble=0.35, ann=0.40, single=0.37),
    ]
    table = bc.table_4_8(rows)
    assert list(table.index) == ["a", "b", "AVERAGE"]
    assert table.loc["a", "RATIO"] == pytest.approx((0.34 - 0.31) / (0.34 - 0.30))
    assert table.loc["b", "KEPT"] == pytest.approx((0.37 - 0.36) / (0.37 - 0.35))
    avg = {k: (table.loc["a", k] + table.loc["b", k]) / 2 for k in ("MIMIC", "ENSEMBLE", "ANN")}
    expected = (avg["ANN"] - avg["MIMIC"]) / (avg["ANN"] - avg["ENSEMBLE"])
    assert table.loc["AVERAGE", "RATIO"] == pytest.approx(expected)
    assert table.loc["b", "GAIN"] == pytest.approx(0.37 - 0.35)
    # a metric where greater is better: the same shares (scores are 1 - rms here)
    auc = bc.table_4_8(rows, "roc")
    assert auc.loc["a", "RATIO"] == pytest.approx(table.loc["a", "RATIO"])
    assert "FIDELITY" not in auc and table["FIDELITY"].isna().all()  # rows without the field
    rows[0]["fidelity"], rows[3]["fidelity"] = 0.01, 0.05
    fidelity = bc.table_4_8(rows)["FIDELITY"]
    assert list(fidelity) == pytest.approx([0.01, 0.05, 0.03])


def test_sweep_tables_hold_each_swept_value_at_the_headline_setting():
    rows = [
        _row("a", 256, 400_000, mimic=0.31),
        _row("a", 16, 400_000, mimic=0.33),
        _row("a", 256, 25_000, mimic=0.32),
        _row("b", 256, 400_000, mimic=0.31),
        _row("c", 256, 400_000, mimic=0.31),
        _row("c", 512, 400_000, mimic=0.30),  # c swept hidden units only
    ]
    hidden = bc.sweep_table(rows, "hidden")
    assert list(hidden.columns) == ["a RMSE", "a KEPT", "c RMSE", "c KEPT"]
    hidden = hidden.drop(columns=["c RMSE", "c KEPT"]).dropna()
    assert list(hidden.index) == [16, 256] and list(hidden.columns) == ["a RMSE", "a KEPT"]
    assert hidden.loc[16, "a RMSE"] == pytest.approx(0.33)
    pseudo = bc.sweep_table(rows, "n_pseudo")
    assert list(pseudo.index) == [25_000, 400_000] and list(pseudo.columns) == ["a RMSE", "a KEPT"]
    assert pseudo.loc[25_000, "a KEPT"] == pytest.approx(0.0)


def test_sweep_tables_leave_out_rows_of_another_ensemble():
    rows = [
        {**_row("a", 256, 400_000, mimic=0.31), "ensemble": "e1"},
        {**_row("a", 16, 400_000, mimic=0.33), "ensemble": "e2"},
        {**_row("a", 32, 400_000, mimic=0.34), "ensemble": "e1"},
    ]
    assert list(bc.sweep_table(rows, "hidden").index) == [32, 256]


def test_fingerprint_follows_the_members_and_weights():
    class Fitted:
        def __init__(self, weights):
            self.members_ = pd.DataFrame({"id": ["x", "y"], "weight": weights})

    assert bc.fingerprint(Fitted([0.5, 0.5])) == bc.fingerprint(Fitted([0.5, 0.5]))
    assert bc.fingerprint(Fitted([0.5, 0.5])) != bc.fingerprint(Fitted([0.25, 0.75]))


def test_plan_runs_each_headline_first_and_sweeps_only_the_subset():
    jobs = bc.plan(["a", "b"], ["a"], 400, hidden_sweep=(256, 16), pseudo_sweep=(400, 200, 100))
    assert jobs == [
        ("a", 256, 400),
        ("a", 256, 100),
        ("a", 256, 200),
        ("a", 16, 400),
        ("b", 256, 400),
    ]


def test_every_problem_is_binary():
    X_tr, X_te, y_tr, y_te, _ = bc.load_problem("chile_yes")
    assert set(y_tr) == set(y_te) == {"yes", "not_yes"}
    assert len(X_tr) > 2 * len(X_te)
    for name in bc.PROBLEMS:
        assert bc.load_problem(name)[2].nunique() == 2


def test_a_larger_table_trains_on_the_dissertations_rows_and_tests_on_all_the_rest():
    X_tr, X_te, y_tr, _, groups = bc.load_problem("doctor_contacts")
    assert len(X_tr) == len(y_tr) == len(groups) == bc.TRAIN_ROWS
    assert y_tr.nunique() == 2 and len(X_te) > 6_000  # the whole 30% of 20,186 rows
    ds = bc.datasets.load("doctor_contacts")
    _, test = bc.datasets.protocol_split(ds.y, bc.SEED, groups=ds.groups)
    assert not set(groups) & set(ds.groups.iloc[test])  # no person on both sides


def test_munge_table_sets_the_pair_update_beside_the_own():
    rows = [
        _row("a", 256, 400_000, mimic=0.31),
        {**_row("a", 256, 400_000, mimic=0.315), "munge": "pair"},
        _row("b", 256, 400_000, mimic=0.31),
    ]
    table = bc.munge_table(rows)
    assert list(table.index) == ["a"]
    assert table.loc["a", "pair RMSE"] == pytest.approx(0.315)
    assert table.loc["a", "own KEPT"] == pytest.approx(0.5)
    assert bc.munge_table(rows[:1]).empty
    assert bc.table_4_8(rows).loc["a", "MIMIC"] == pytest.approx(0.31)


def test_report_without_rows_says_how_to_make_them():
    assert "run `python -m benchmarks.bench_compress`" in bc.report([])


@pytest.mark.slow
def test_quick_mode_writes_rows_resumes_and_reports(tmp_path, capsys):
    path = tmp_path / "rows.jsonl"
    bc.main(["--quick", "--results", str(path)])
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    keys = {(r["problem"], r["hidden"], r["n_pseudo"]) for r in rows}
    assert keys == {("pima", 256, 2_000), ("pima", 8, 2_000), ("pima", 256, 1_000)}
    assert all(r["commit"] and r["versions"]["ensel"] and r["peak_mb"] > 0 for r in rows)
    assert all(set(r["scores"]) >= {"MIMIC", "ENSEMBLE", "SINGLE"} for r in rows)
    bc.main(["--quick", "--results", str(path)])  # resumes: nothing left to run
    assert len(path.read_text().splitlines()) == len(rows)
    out = capsys.readouterr().out
    assert "| pima |" in out and "| AVERAGE |" in out and "| hidden |" in out
    bc.main(["--quick", "--results", str(path), "--munge", "pair"])
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert sum(r["munge"] == "pair" for r in rows) == 3 and len(rows) == 6
    assert "| own RMSE | own KEPT | pair RMSE | pair KEPT |" in capsys.readouterr().out
