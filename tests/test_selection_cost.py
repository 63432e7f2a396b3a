"""Latency-aware selection: a predict-cost budget over members that share work."""

from __future__ import annotations

import numpy as np
import pytest

from ensel.library.planning.budget import Budget
from ensel.selection import EnsembleSelection, PredictCost, cost_front
from ensel.strategies import NEGLIGIBLE_LOSS, cheapest_within_noise, drop_costly_runs


def _library(rng, n_members: int = 30, n: int = 300):
    y = rng.integers(0, 2, n)
    skill = rng.uniform(0.2, 2.0, (n_members, 1))
    logits = skill * (2 * y - 1)[None] + rng.normal(0, 1, (n_members, n))
    return 1 / (1 + np.exp(-logits)), y


def _shared_cost(n_members: int, n_runs: int = 10):
    """Members in runs of three cumulative stages: stage s needs the run's segments 1..s."""
    run = np.arange(n_members) % n_runs
    stage = np.arange(n_members) // n_runs
    n_stages = int(stage.max()) + 1
    needs = np.zeros((n_members, n_runs * n_stages), dtype=bool)
    for m in range(n_members):
        needs[m, run[m] * n_stages : run[m] * n_stages + stage[m] + 1] = True
    item_cost = np.tile(np.arange(1, n_stages + 1, dtype=float), n_runs)
    return PredictCost(needs, item_cost)


def test_cost_of_a_set_counts_shared_items_once():
    cost = _shared_cost(30)
    # members 0 (run 0 stage 0) and 20 (run 0 stage 2): segments 1, 2, 3 of run 0 -> 1 + 2 + 3
    assert cost.of([0, 20]) == 6.0
    assert cost.of([0]) == 1.0
    assert cost.of([20]) == 6.0
    np.testing.assert_array_equal(cost.extra(cost.needs[20])[[0, 1, 21]], [0.0, 1.0, 6.0])
    assert cost.of(np.zeros(30, dtype=bool)) == 0.0


@pytest.mark.parametrize("n_bags", [1, 5])
@pytest.mark.parametrize("replacement", [True, False])
def test_budget_is_kept_and_binds(n_bags, replacement):
    rng = np.random.default_rng(0)
    P, y = _library(rng)
    cost = _shared_cost(len(P))
    options = dict(metric="rms", n_bags=n_bags, replacement=replacement, random_state=0)
    free = EnsembleSelection(**options).fit(P, y, cost=cost)
    budget = free.cost_ / 3
    tight = EnsembleSelection(**options, max_cost=budget).fit(P, y, cost=cost)
    assert tight.cost_ <= budget + 1e-9
    assert cost.of(tight.weights_ > 0) == tight.cost_
    assert tight.cost_ < free.cost_
    np.testing.assert_allclose(tight.weights_.sum(), 1.0)
    # a budget above the free ensemble's cost changes nothing
    loose = EnsembleSelection(**options, max_cost=free.cost_ * 2).fit(P, y, cost=cost)
    np.testing.assert_array_equal(loose.weights_, free.weights_)


def test_greedy_step_matches_a_naive_budgeted_loop():
    """One bag, no init: each step adds the best candidate (by RMSE) whose extra cost fits."""
    rng = np.random.default_rng(1)
    P, y = _library(rng, n_members=12, n=200)
    member_cost = rng.uniform(1, 5, len(P))
    limit = 7.0
    es = EnsembleSelection(
        metric="rms", n_bags=1, sorted_init=False, n_iter=15, max_cost=limit, exact=True
    ).fit(P, y, cost=member_cost)
    counts, S, order = np.zeros(len(P), int), np.zeros(P.shape[1]), []
    for _ in range(15):
        spent = member_cost[counts > 0].sum()
        fits = (counts > 0) | (spent + member_cost <= limit)
        rmse = np.sqrt((((S + P) / (counts.sum() + 1) - y) ** 2).mean(axis=1))
        rmse[~fits] = np.inf
        j = int(np.argmin(rmse))
        counts[j] += 1
        S = S + P[j]
        order.append(j)
    np.testing.assert_array_equal(es.order_, order)
    assert member_cost[es.weights_ > 0].sum() <= limit


def test_budget_errors_are_one_line():
    rng = np.random.default_rng(2)
    P, y = _library(rng, n_members=5)
    with pytest.raises(ValueError, match="needs the members' predict costs"):
        EnsembleSelection(max_cost=1.0).fit(P, y)
    with pytest.raises(ValueError, match="below the cheapest member's cost"):
        EnsembleSelection(max_cost=0.5).fit(P, y, cost=np.ones(5))
    with pytest.raises(ValueError, match="cost must describe the 5 members"):
        EnsembleSelection().fit(P, y, cost=np.ones(4))
    with pytest.raises(ValueError, match=r"^The 'max_cost' parameter of .*Got -1"):
        EnsembleSelection(max_cost=-1).fit(P, y, cost=np.ones(5))


def test_cost_front_is_monotone_in_budget():
    rng = np.random.default_rng(3)
    P, y = _library(rng)
    cost = _shared_cost(len(P))
    rows = cost_front(P, y, cost, [0.5, 3, 10, None], metric="rms", n_bags=1, random_state=0)
    assert [r["budget"] for r in rows] == [3, 10, None]  # 0.5 is below the cheapest member
    assert all(r["cost"] <= r["budget"] + 1e-9 for r in rows if r["budget"] is not None)
    scores = [r["score"] for r in rows]
    assert scores[0] >= scores[-1]  # rmse: a larger budget does no worse here


def _twins(rng, n=400):
    """A good member that is expensive, its cheap twin (same predictions), and a cheap weak
    member: (P, y, cost)."""
    y = rng.integers(0, 2, n)
    good = np.clip(0.5 + 0.35 * (2 * y - 1) + rng.normal(0, 0.15, n), 0.02, 0.98)
    weak = np.clip(0.5 + 0.05 * (2 * y - 1) + rng.normal(0, 0.3, n), 0.02, 0.98)
    return np.stack([good, good, weak]), y, PredictCost.additive([100.0, 1.0, 1.0])


def test_auto_budget_takes_the_cheapest_ensemble_that_scores_within_noise():
    P, y, cost = _twins(np.random.default_rng(0))
    options = {"n_iter": 10, "n_bags": 1}
    full = EnsembleSelection("mxe", **options).fit(P, y)
    assert full.weights_[0] > 0  # ties go to the lowest index: the expensive twin
    weights, budget, tried = cheapest_within_noise(P, y, "mxe", options, cost, full.weights_)
    assert budget == pytest.approx(100.0 / 64)  # every halving down to 1/64 kept the score
    assert weights[0] == 0 and weights[1] > 0
    assert all(row["accepted"] and row["lost"] <= 0.5 * row["se"] for row in tried)


def test_auto_budget_keeps_the_ensemble_when_cheaper_ones_lose_beyond_noise():
    P, y, cost = _twins(np.random.default_rng(1))
    P, cost = P[[0, 2]], PredictCost.additive([100.0, 1.0])  # no cheap twin: only the weak one
    options = {"n_iter": 10, "n_bags": 1}
    full = EnsembleSelection("roc", **options).fit(P, y)
    weights, budget, tried = cheapest_within_noise(P, y, "roc", options, cost, full.weights_)
    assert budget is None and tried and not any(row["accepted"] for row in tried)
    np.testing.assert_array_equal(weights, full.weights_)
    # past the deadline no selection starts
    _, budget, tried = cheapest_within_noise(
        P, y, "roc", options, cost, full.weights_, budget=Budget(deadline=0.0)
    )
    assert budget is None and tried == []


@pytest.mark.parametrize("shrink, accepted", [(0.99995, True), (0.999, False)])
def test_auto_budget_accepts_a_loss_too_small_to_matter_however_small_its_noise(shrink, accepted):
    # the cheap member is the expensive one pulled slightly towards 0.5: worse on every row by
    # a hair, so the paired standard error is far below the loss
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 5000)
    good = np.clip(0.5 + 0.3 * (2 * y - 1) + rng.normal(0, 0.15, y.size), 0.02, 0.98)
    dull = 1 / (1 + np.exp(-shrink * np.log(good / (1 - good))))
    P, cost = np.stack([good, dull]), PredictCost.additive([100.0, 1.0])
    options = {"n_iter": 10, "n_bags": 1}
    full = EnsembleSelection("mxe", **options).fit(P, y)
    assert full.weights_[1] == 0
    weights, budget, tried = cheapest_within_noise(P, y, "mxe", options, cost, full.weights_)
    assert tried and all(row["lost"] > 50 * row["se"] for row in tried)  # beyond any noise
    score = tried[0]["score"] - tried[0]["lost"]  # the unconstrained log loss
    if accepted:  # 1e-5 lost of a log loss of 0.25: below NEGLIGIBLE_LOSS of it
        assert all(row["lost"] <= NEGLIGIBLE_LOSS * score for row in tried)
        assert budget is not None and weights[0] == 0 and weights[1] > 0
    else:  # 2e-4 lost: kept
        assert all(row["lost"] > NEGLIGIBLE_LOSS * score for row in tried)
        assert budget is None and weights[0] > 0


def test_a_bag_with_no_member_within_the_budget_abstains():
    rng = np.random.default_rng(2)
    y = rng.integers(0, 2, 300)
    noise = np.r_[0.4, np.full(9, 0.1)][:, None]  # member 0: cheap and the weakest
    P = np.clip(0.5 + 0.3 * (2 * y - 1) + rng.normal(0, 1, (10, 300)) * noise, 0.02, 0.98)
    cost = PredictCost.additive([1.0] + [50.0] * 9)  # only member 0 fits a budget of 2
    es = EnsembleSelection("mxe", n_iter=5, n_bags=12, bag_fraction=0.3, max_cost=2.0)
    es.fit(P, y, cost=cost)
    abstained = es.bag_weights_.sum(axis=1) == 0
    assert abstained.any() and not abstained.all()  # the check needs both kinds of bag
    np.testing.assert_allclose(es.weights_, np.eye(10)[0])
    assert es.cost_ == 1.0
    with pytest.raises(ValueError, match="no member left after pruning"):
        EnsembleSelection("mxe", n_iter=5, max_cost=2.0, prune_fraction=0.5).fit(P, y, cost=cost)


def test_a_costly_run_whose_loss_is_within_noise_is_dropped_and_the_others_renormalised():
    P, y, cost = _twins(np.random.default_rng(0))  # 0: good and costly, 1: its cheap twin
    weights = np.array([0.6, 0.4, 0.0])
    w, dropped = drop_costly_runs(P, y, "mxe", cost, weights, weights, ["a", "b", "c"])
    np.testing.assert_allclose(w, [0.0, 1.0, 0.0])  # the twin alone: the same predictions
    assert [row["run"] for row in dropped] == ["a"]
    assert dropped[0]["saved"] == 100.0 and dropped[0]["cost"] == 1.0
    assert dropped[0]["accepted"] and dropped[0]["lost"] == pytest.approx(0.0, abs=1e-12)


def test_a_run_that_carries_the_ensemble_stays():
    P, y, cost = _twins(np.random.default_rng(1))
    P, cost = P[[0, 2]], PredictCost.additive([100.0, 1.0])  # the costly one is the good one
    weights = np.array([0.8, 0.2])
    w, dropped = drop_costly_runs(P, y, "roc", cost, weights, weights, ["good", "weak"])
    assert w[0] > 0 and "good" not in [row["run"] for row in dropped]
    # past the deadline nothing is tried
    past = Budget(deadline=0.0)
    w, dropped = drop_costly_runs(P, y, "roc", cost, weights, weights, ["a", "b"], budget=past)
    np.testing.assert_array_equal(w, weights)
    assert dropped == []


def test_the_members_of_a_run_go_together():
    """Two members of one run share its cost: dropping either alone saves nothing, the run
    together saves it all."""
    P, y, _ = _twins(np.random.default_rng(2))
    P = P[[0, 0, 1]]  # run "k": two stages of the costly good model; run "c": its cheap twin
    cost = PredictCost(np.array([[1, 0], [1, 0], [0, 1]], bool), np.array([100.0, 1.0]))
    weights = np.array([0.4, 0.4, 0.2])
    w, dropped = drop_costly_runs(P, y, "mxe", cost, weights, weights, ["k", "k", "c"])
    np.testing.assert_allclose(w, [0.0, 0.0, 1.0])
    assert [row["run"] for row in dropped] == ["k"] and dropped[0]["cost"] == 1.0
