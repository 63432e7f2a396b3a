"""Latency-aware selection (issue 15): a predict-cost budget over members that share work."""

from __future__ import annotations

import numpy as np
import pytest

from ensel.selection import EnsembleSelection, PredictCost, cost_front


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
    with pytest.raises(ValueError, match="max_cost must be"):
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
