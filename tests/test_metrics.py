from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn import metrics as skm

from ensel.metrics import (
    METRICS,
    baseline_score,
    greater_is_better,
    make_metric,
    normalized_score,
    normalized_scores,
    score,
    score_batch,
)


@pytest.fixture
def binary():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 300)
    p = np.clip(0.35 * y + 0.3 + rng.normal(0, 0.25, 300), 0, 1).round(2)  # many ties
    return y, p


def test_api_names():
    assert METRICS == ("acc", "fsc", "lft", "roc", "apr", "bep", "rms", "mxe")
    assert [greater_is_better(m) for m in METRICS] == [True] * 6 + [False] * 2


def test_binary_metrics_agree_with_sklearn(binary):
    y, p = binary
    assert score("acc", y, p) == pytest.approx(skm.accuracy_score(y, p >= 0.5))
    assert score("fsc", y, p) == pytest.approx(skm.f1_score(y, p >= 0.5))
    assert score("roc", y, p) == pytest.approx(skm.roc_auc_score(y, p))
    assert score("rms", y, p) == pytest.approx(np.sqrt(skm.mean_squared_error(y, p)))
    clipped = np.clip(p, 1e-15, 1 - 1e-15)
    assert score("mxe", y, p) == pytest.approx(skm.log_loss(y, clipped))


def test_multiclass_metrics_agree_with_sklearn():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 4, 500)
    P = rng.dirichlet(np.ones(4), 500) + 0.6 * np.eye(4)[y]
    P /= P.sum(axis=1, keepdims=True)
    assert score("acc", y, P) == pytest.approx(skm.accuracy_score(y, P.argmax(1)))
    assert score("fsc", y, P) == pytest.approx(skm.f1_score(y, P.argmax(1), average="macro"))
    assert score("roc", y, P) == pytest.approx(skm.roc_auc_score(y, P, multi_class="ovr"))
    assert score("mxe", y, P) == pytest.approx(skm.log_loss(y, P))
    assert score("rms", y, P) == pytest.approx(np.sqrt(((P - np.eye(4)[y]) ** 2).mean()))
    for name in ("lft", "apr", "bep"):  # macro one-vs-rest of the binary metric
        expected = np.mean([score(name, y == c, P[:, c]) for c in range(4)])
        assert score(name, y, P) == pytest.approx(expected)


def test_two_columns_mean_binary(binary):
    y, p = binary
    both = np.column_stack([1 - p, p])
    for name in METRICS:
        assert score(name, y, both) == pytest.approx(score(name, y, p))


def test_rank_metrics_by_hand():
    # ranked: 0.9(+) 0.8(-) 0.7(+) 0.6(+) 0.2(-) 0.1(-)
    y = np.array([1, 0, 1, 1, 0, 0])
    p = np.array([0.9, 0.8, 0.7, 0.6, 0.2, 0.1])
    assert score("roc", y, p) == pytest.approx(7 / 9)  # 3 + 2 + 2 of 9 pairs
    # top 3 (= n_pos) holds 2 positives
    assert score("bep", y, p) == pytest.approx(2 / 3)
    # top 25% = 1.5 cases: 1 positive + half of the 0.8 negative -> 1 positive in 1.5 cases
    assert score("lft", y, p) == pytest.approx((1 / 3) / 0.25)
    # PR points (recall, precision): (1/3, 1), (1/3, 1/2), (2/3, 2/3), (1, 3/4), (1, 3/5), (1, 1/2)
    # interpolated precision: recall 0..0.3 -> 1, 0.4..1.0 -> 3/4
    assert score("apr", y, p) == pytest.approx((4 * 1 + 7 * 0.75) / 11)
    # sklearn's average precision is the step area without interpolation: different value
    assert skm.average_precision_score(y, p) == pytest.approx((1 + 2 / 3 + 3 / 4) / 3)


def test_ties_count_half_and_share_the_cut():
    y = np.array([1, 0, 1, 0])
    p = np.array([0.5, 0.5, 0.5, 0.5])
    assert score("roc", y, p) == 0.5
    assert score("bep", y, p) == 0.5
    assert score("lft", y, p) == 1.0
    assert score("apr", y, p) == 0.5  # one threshold: all positive, precision 0.5


def test_threshold_is_inclusive():
    y = np.array([1, 0])
    assert score("acc", y, np.array([0.5, 0.4])) == 1.0
    assert score("fsc", y, np.array([0.4, 0.4])) == 0.0  # no predicted positives: F = 0


def test_batch_equals_rows(binary):
    y, p = binary
    rng = np.random.default_rng(2)
    Q = np.clip(p + rng.normal(0, 0.1, (5, len(p))), 0, 1)
    for name in METRICS:
        batch = score_batch(name, y, Q)
        assert batch == pytest.approx([score(name, y, q) for q in Q])


def test_mxe_is_in_nats_and_clipped():
    y = np.array([1, 0])
    assert score("mxe", y, np.array([0.5, 0.5])) == pytest.approx(np.log(2))
    assert score("mxe", y, np.array([0.0, 0.0])) == pytest.approx(-np.log(1e-15) / 2)


def test_baselines_reproduce_table_4_10_adult():
    """ADULT has 24.8% positives; Table 4.10 lists its bottoms of the scale."""
    y = np.r_[np.ones(248), np.zeros(752)].astype(int)
    assert baseline_score("acc", y) == pytest.approx(0.752)
    assert baseline_score("fsc", y) == pytest.approx(0.398, abs=1e-3)
    assert baseline_score("lft", y) == pytest.approx(1.0)
    assert baseline_score("roc", y) == pytest.approx(0.5)
    assert baseline_score("apr", y) == pytest.approx(0.248)
    assert baseline_score("bep", y) == pytest.approx(0.248)
    assert baseline_score("rms", y) == pytest.approx(0.432, abs=1e-3)
    # the table's MXE is in bits; ours is in nats: 0.808 bits = 0.560 nats
    assert baseline_score("mxe", y) == pytest.approx(0.808 * np.log(2), abs=1e-3)


def test_normalized_scores_span_baseline_to_top(binary):
    y, p = binary
    for name in METRICS:
        bottom = baseline_score(name, y)
        top = score(name, y, p)
        if top == bottom:
            continue
        assert normalized_scores(name, y, [bottom, top], top=top) == pytest.approx([0.0, 1.0])
        assert normalized_score(name, y, p, top=top) == pytest.approx(1.0)


def test_custom_metric_callable(binary):
    y, p = binary

    def brier(y_true, proba):
        return float(np.mean((proba - y_true) ** 2))

    assert score(brier, y, p) == pytest.approx(score("rms", y, p) ** 2)
    loss = make_metric(brier, greater_is_better=False)
    assert not greater_is_better(loss)
    assert greater_is_better(brier)
    assert score_batch(loss, y, np.stack([p, 1 - p])) == pytest.approx(
        [brier(y, p), brier(y, 1 - p)]
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("nope", [0, 1], [0.2, 0.8]), "unknown metric 'nope'"),
        (("acc", [0, 1, 1], [0.2, 0.8]), "3 labels but proba has 2 rows"),
        (("acc", [0, 1], [0.2, np.nan]), "NaN or infinite"),
        (("acc", [0, 1], [0.2, 1.3]), r"probabilities in \[0, 1\]"),
        (("roc", [1, 1], [0.2, 0.8]), "needs both positive and negative"),
        (("acc", ["a", "b"], [0.2, 0.8]), "Encode string labels"),
        (("acc", [0, 2], [0.2, 0.8]), "labels 0..1"),
        (("acc", [0, 1], np.zeros((2, 2, 2))), "shape"),
    ],
)
def test_bad_input_messages(args, message):
    with pytest.raises(ValueError, match=message):
        score(*args)


labels_and_probs = (
    st.integers(4, 60)
    .flatmap(
        lambda n: st.tuples(
            arrays(np.int64, n, elements=st.integers(0, 1)),
            arrays(np.float64, n, elements=st.integers(0, 100).map(lambda i: i / 100)),
        )
    )
    .filter(lambda t: 0 < t[0].sum() < len(t[0]))
)


@settings(max_examples=60, deadline=None)
@given(labels_and_probs, st.randoms(use_true_random=False))
def test_metrics_ignore_case_order(data, rnd):
    y, p = data
    order = list(range(len(y)))
    rnd.shuffle(order)
    for name in METRICS:
        assert score(name, y[order], p[order]) == pytest.approx(score(name, y, p))


@settings(max_examples=60, deadline=None)
@given(labels_and_probs)
def test_rank_metrics_depend_only_on_order(data):
    y, p = data
    squashed = p**2 * 0.5 + 0.25  # strictly increasing on the 0.01 grid, into [0.25, 0.75]
    for name in ("roc", "apr", "bep", "lft"):
        assert score(name, y, squashed) == pytest.approx(score(name, y, p))
    assert score("roc", y, p) == pytest.approx(skm.roc_auc_score(y, p))
