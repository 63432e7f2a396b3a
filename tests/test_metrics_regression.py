from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn import metrics as skm

from ensel.metrics import (
    METRICS,
    REGRESSION_METRICS,
    baseline_score,
    greater_is_better,
    make_metric,
    normalized_scores,
    resolve_metric,
    score,
    score_batch,
)


@pytest.fixture
def targets():
    rng = np.random.default_rng(0)
    y = rng.normal(10.0, 3.0, 200)
    pred = y + rng.normal(0.0, 1.5, 200)
    return y, pred


def test_names_and_directions():
    assert REGRESSION_METRICS == ("rmse", "mae", "r2")
    assert METRICS == ("acc", "fsc", "lft", "roc", "apr", "bep", "rms", "mxe")  # unchanged
    assert [greater_is_better(m) for m in REGRESSION_METRICS] == [False, False, True]
    assert {resolve_metric(m).task for m in REGRESSION_METRICS} == {"regression"}
    assert {resolve_metric(m).task for m in METRICS} == {"classification"}


def test_agree_with_sklearn(targets):
    y, pred = targets
    assert score("rmse", y, pred) == pytest.approx(np.sqrt(skm.mean_squared_error(y, pred)))
    assert score("mae", y, pred) == pytest.approx(skm.mean_absolute_error(y, pred))
    assert score("r2", y, pred) == pytest.approx(skm.r2_score(y, pred))


def test_by_hand():
    y = np.array([1.0, 2.0, 3.0, 4.0])
    pred = np.array([1.0, 3.0, 3.0, 2.0])  # errors 0, 1, 0, -2
    assert score("rmse", y, pred) == pytest.approx(np.sqrt(5 / 4))
    assert score("mae", y, pred) == pytest.approx(3 / 4)
    assert score("r2", y, pred) == pytest.approx(1 - 5 / 5)  # SST = 2.25 + .25 + .25 + 2.25
    flat = np.full(4, 7.0)
    assert score("r2", flat, flat) == 1.0  # constant target: sklearn's convention
    assert score("r2", flat, flat + 1) == 0.0
    # three 0.1s average to 0.10000000000000002: a rounding SST must not read as a target
    tenths = np.full(3, 0.1)
    assert score("r2", tenths, np.array([0.1, 0.1, 0.2])) == 0.0


def test_batch_equals_rows(targets):
    y, pred = targets
    rng = np.random.default_rng(1)
    Q = pred + rng.normal(0, 1.0, (6, len(y)))
    for name in REGRESSION_METRICS:
        assert score_batch(name, y, Q) == pytest.approx([score(name, y, q) for q in Q])


def test_baseline_is_the_best_constant(targets):
    y, _ = targets
    assert baseline_score("rmse", y) == pytest.approx(np.std(y))
    assert baseline_score("mae", y) == pytest.approx(np.mean(np.abs(y - np.median(y))))
    assert baseline_score("r2", y) == pytest.approx(0.0)
    assert normalized_scores("rmse", y, [np.std(y), 1.0], top=1.0) == pytest.approx([0, 1])


def test_user_callable_for_regression(targets):
    y, pred = targets

    def max_error(y_true, p):
        return float(np.max(np.abs(p - y_true)))

    m = make_metric(max_error, greater_is_better=False, task="regression")
    assert m.task == "regression"
    assert score(m, y, pred) == pytest.approx(skm.max_error(y, pred))
    assert score(m, y, pred + 1e6) > 1e5  # no probability check on real predictions
    assert resolve_metric(max_error, task="regression").task == "regression"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("rmse", [1.0, 2.0, 3.0], [1.0, 2.0]), "3 targets but the prediction has 2 rows"),
        (("rmse", [1.0, np.nan], [1.0, 2.0]), "NaN or infinite"),
        (("mae", [1.0, 2.0], [1.0, np.inf]), "NaN or infinite"),
        (("r2", ["a", "b"], [1.0, 2.0]), "must hold numbers"),
        (("rmse", [1.0, 2.0], np.zeros((2, 2))), r"shape \(N,\)"),
        (("rmsee", [1.0, 2.0], [1.0, 2.0]), "unknown metric 'rmsee'"),
    ],
)
def test_bad_input_messages(args, message):
    with pytest.raises(ValueError, match=message):
        score(*args)


def test_task_mismatch_is_refused():
    with pytest.raises(ValueError, match="'roc' is a classification metric; regression needs"):
        resolve_metric("roc", task="regression")
    with pytest.raises(ValueError, match="'rmse' is a regression metric"):
        resolve_metric("rmse", task="classification")


grid = st.integers(-10_000, 10_000).map(lambda i: i / 10)  # no sub-normal sums of squares
cases = st.integers(2, 50).flatmap(
    lambda n: st.tuples(arrays(np.float64, n, elements=grid), arrays(np.float64, n, elements=grid))
)


@settings(max_examples=60, deadline=None)
@given(cases, grid, st.randoms(use_true_random=False))
def test_properties(data, shift, rnd):
    y, pred = data
    order = list(range(len(y)))
    rnd.shuffle(order)
    for name in REGRESSION_METRICS:
        value = score(name, y, pred)
        assert score(name, y[order], pred[order]) == pytest.approx(value, rel=1e-9, abs=1e-9)
        # all three measure the residual only: moving both by the same amount changes nothing
        assert score(name, y + shift, pred + shift) == pytest.approx(value, rel=1e-6, abs=1e-6)
    rmse, mae = score("rmse", y, pred), score("mae", y, pred)
    assert 0.0 <= mae <= rmse + 1e-9  # the mean absolute error never exceeds the RMSE
    assert score("r2", y, pred) <= 1.0
    assert score("rmse", y, y) == 0.0 and score("mae", y, y) == 0.0
