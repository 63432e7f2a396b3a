"""The Bayes-net benchmark's report tables, on hand-made records (no search runs)."""

from __future__ import annotations

import pytest

from benchmarks.bench_bayesnet import _fig27_lines, _restarts_lines


def _record(part, size, trial, restarts, stl, mtl, ident=30.0, kl=(1.0, 0.9), problem="ALARM"):
    return {
        "part": part,
        "problem": problem,
        "p_del": 0.05 if part == "fig25" else 0.0,
        "size": size,
        "trial": trial,
        "grid": "0.99,1|paired",
        "search": {"restarts": restarts, "tabu": 100, "mt_restarts": 0, "mt_tabu": 10},
        "methods": {
            "STL": {"edit": stl, "kl": kl[0]},
            "IDENTICAL": {"edit": ident, "kl": 1.2},
            "MTL-Paired": {"edit": mtl, "kl": kl[1], "delta": 0.99},
        },
    }


def _row(lines, first_cell):
    rows = [x for x in lines if x.startswith(f"| {first_cell} |")]
    assert len(rows) == 1, lines
    return [c.strip() for c in rows[0].strip("|").split("|")]


def test_fig27_puts_stl_at_twice_the_rows_beside_mtl():
    records = [
        _record("fig27", size, t, 2, stl=stl + t, mtl=mtl + t)
        for t in range(3)
        for size, stl, mtl in ((250, 30.0, 20.0), (500, 24.0, 16.0), (1000, 18.0, 15.0))
    ]
    lines = _fig27_lines(records)
    row = _row(lines, "250")
    assert row[2] == "3"  # trials
    assert row[3].startswith("31.00")  # STL mean over trials 30, 31, 32
    assert row[4].startswith("21.00")
    assert row[5].startswith("-10.00 ± 0.00")  # paired by trial: always 10 fewer edits
    assert row[6].startswith("25.00")  # STL's edits at 500 rows
    assert _row(lines, "1000")[6] == "-"  # no 2,000-row cells


def test_fig27_is_empty_without_its_cells():
    assert _fig27_lines([_record("fig25", 250, 0, 2, 30.0, 20.0)]) == []


def test_restarts_check_pairs_the_same_trials_at_two_efforts():
    records = []
    for t in range(4):
        records.append(_record("fig25", 250, t, 2, stl=30.0 + t, mtl=20.0 + t))
        records.append(_record("fig25", 250, t, 5, stl=28.0 + t, mtl=20.0 + t))
    records.append(_record("fig25", 250, 9, 2, stl=40.0, mtl=10.0))  # no 5-restart partner
    row = _row(_restarts_lines(records), "ALARM")
    assert row[3] == "2 vs 5"
    assert row[4] == "4"  # only the trials run at both efforts
    assert row[7].startswith("-10.00")  # MTL - STL with fewer restarts: 20 - 30
    assert row[8].startswith("-8.00")  # with more: 20 - 28
    assert row[9].startswith("+2.00 ± 0.00")  # the gain shrank by 2 edits in every trial
    assert row[12].startswith("+0.00 ± 0.00 (+0.0 s.e.)")  # MTL - IDENTICAL unchanged


@pytest.mark.parametrize("efforts", [(2,), (2, 5)])
def test_restarts_check_needs_two_efforts_on_two_trials(efforts):
    records = [_record("fig25", 250, 0, r, 30.0, 20.0) for r in efforts]
    assert _restarts_lines(records) == []
