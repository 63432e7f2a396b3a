"""bench_grow's judging split (no builds): growth's rows and the final selection's never
overlap, and each keeps every class."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.bench_grow import judging_rows


def test_the_judging_rows_are_a_stratified_share():
    y = np.array([0] * 90 + [1] * 30)
    judge = judging_rows(y, 1 / 3, seed=0)
    assert np.array_equal(judge, np.unique(judge))  # sorted, no repeats
    assert (y[judge] == 0).sum() == 30 and (y[judge] == 1).sum() == 10
    assert not np.array_equal(judge, judging_rows(y, 1 / 3, seed=1))


@pytest.mark.parametrize("share", [0.0, 0.99])
def test_both_sides_keep_every_class(share):
    y = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2])
    judge = judging_rows(y, share, seed=0)
    rest = np.setdiff1d(np.arange(y.size), judge)
    assert set(y[judge]) == set(y[rest]) == {0, 1, 2}
