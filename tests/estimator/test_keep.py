"""The finalise stage's leaderboard: every member scored on every metric, on at most
``LEADERBOARD_ROWS`` hillclimb rows."""

from types import SimpleNamespace

import numpy as np
import pandas as pd

import ensel.estimator.keep as keep
from ensel.metrics import score_batch


def _library(n_rows: int, n_members: int = 3):
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, n_rows)
    P = np.clip(y * 0.6 + rng.random((n_members, n_rows)) * 0.4, 0.01, 0.99)
    members = pd.DataFrame(
        {
            "id": [f"m{i}" for i in range(n_members)],
            "family": "f",
            "params": "{}",
            "calibration": "none",
            "stage": None,
        }
    )
    full = {name: score_batch(name, y, P) for name in ("roc", "rms")}
    lib = SimpleNamespace(members=members, y=y, metric_names=("roc", "rms"))
    lib.member_scores = lambda P=None: full
    return lib, P, full


def test_a_small_hillclimb_set_is_scored_on_every_row():
    lib, P, full = _library(300)
    board = keep.leaderboard(lib, P, np.array([1.0, 0.0, 0.0]))
    np.testing.assert_array_equal(board["roc"], full["roc"])
    assert board["weight"].tolist() == [1.0, 0.0, 0.0]


def test_a_large_hillclimb_set_is_scored_on_a_fixed_sample(monkeypatch):
    monkeypatch.setattr(keep, "LEADERBOARD_ROWS", 100)
    lib, P, full = _library(1000)
    first = keep.leaderboard(lib, P, np.zeros(3))
    again = keep.leaderboard(lib, P, np.zeros(3))
    pd.testing.assert_frame_equal(first, again)  # the same sample each time
    assert not np.allclose(first["rms"], full["rms"])  # not the all-row scores
    assert first["roc"].between(0.5, 1.0).all()  # still the members' real ranking quality
