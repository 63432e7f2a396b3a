from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from ensel.bayesnet import (
    DiscreteNetwork,
    MultitaskStructureLearner,
    edit_distance,
    empirical_kl,
    select_tasks,
)
from ensel.bayesnet._dag import TaskDag, is_dag
from ensel.bayesnet._multitask import (
    branch_and_bound,
    configuration_score,
    edit_costs,
    exhaustive_best,
    log_keep,
    multitask_search,
    pair_penalty,
)
from ensel.bayesnet._score import BDeu
from ensel.bayesnet._search import hill_climb
from ensel.bayesnet.problems import delete_arcs

from .conftest import make_net


def brute_bdeu(codes, cards, child, parents, ess):
    """BDeu by explicit loops over every parent configuration and state (Heckerman 1999)."""
    q = math.prod(int(cards[p]) for p in parents)
    r = int(cards[child])
    total = 0.0
    for cfg in itertools.product(*[range(int(cards[p])) for p in parents]):
        rows = (
            np.all(codes[:, list(parents)] == np.array(cfg, dtype=int), axis=1)
            if parents
            else (np.ones(len(codes), dtype=bool))
        )
        n_j = int(rows.sum())
        total += math.lgamma(ess / q) - math.lgamma(ess / q + n_j)
        for k in range(r):
            n_jk = int((codes[rows, child] == k).sum())
            total += math.lgamma(n_jk + ess / (q * r)) - math.lgamma(ess / (q * r))
    return total


def test_bdeu_matches_brute_force():
    rng = np.random.default_rng(0)
    cards = np.array([2, 3, 2, 4])
    codes = np.column_stack([rng.integers(c, size=40) for c in cards])
    scorer = BDeu(codes, cards, ess=2.5)
    for child, parents in [(0, ()), (1, (0,)), (2, (0, 1)), (3, (0, 1, 2)), (1, (3,))]:
        assert scorer.local(child, parents) == pytest.approx(
            brute_bdeu(codes, cards, child, parents, 2.5), rel=1e-10
        )


def test_bdeu_is_score_equivalent(vstruct_net):
    codes = vstruct_net.sample_codes(300, random_state=1)
    scorer = BDeu(codes, vstruct_net.cards, ess=1.0)

    def total(edges):
        adj = np.zeros((5, 5), dtype=bool)
        for a, b in edges:
            adj[a, b] = True
        return scorer.total(adj)

    chain = total([(0, 2), (2, 3)])
    assert total([(3, 2), (2, 0)]) == pytest.approx(chain, rel=1e-12)
    assert total([(2, 0), (2, 3)]) == pytest.approx(chain, rel=1e-12)
    assert total([(0, 2), (3, 2)]) != pytest.approx(chain, rel=1e-6)  # a v-structure differs
    assert total([(0, 1)]) == pytest.approx(total([(1, 0)]), rel=1e-12)


def test_hill_climbing_recovers_known_structure(vstruct_net):
    df = vstruct_net.sample(4000, random_state=2)
    m = MultitaskStructureLearner(penalty=0.0, restarts=2).fit([df])
    assert edit_distance(m.structures_[0], vstruct_net) == 0


def test_dag_tables_match_acyclicity():
    """Every finite option keeps a DAG; every -inf option (no parent bound) would make a cycle."""
    rng = np.random.default_rng(4)
    n = 6
    codes = np.column_stack([rng.integers(2, size=50) for _ in range(n)])
    dag = TaskDag(BDeu(codes, np.full(n, 2)), np.ones(n, dtype=bool))
    iu, iv = np.triu_indices(n, 1)
    for _ in range(60):
        opts = dag.options(iu, iv)
        for p in range(len(iu)):
            for s in range(3):
                adj = dag.adj.copy()
                adj[iu[p], iv[p]], adj[iv[p], iu[p]] = s == 1, s == 2
                assert np.isfinite(opts[p, s]) == is_dag(adj)
        p = int(rng.integers(len(iu)))
        legal = [s for s in range(3) if np.isfinite(opts[p, s])]
        dag.set_pair(iu[p], iv[p], int(rng.choice(legal)))
        assert is_dag(dag.adj)
        assert dag.score == pytest.approx(dag.scorer.total(dag.adj))


def test_searches_keep_dags_and_multitask_improves_score():
    rng = np.random.default_rng(5)
    n, k = 7, 3
    cards = np.full(n, 3)
    base = rng.integers(3, size=(200, n))
    base[:, 1] = (base[:, 0] + rng.integers(2, size=200)) % 3
    base[:, 2] = (base[:, 1] + base[:, 3]) % 3
    scorers = [BDeu(np.roll(base, t * 17, axis=0)[: 120 + 30 * t], cards) for t in range(k)]
    dags = [TaskDag(s, np.ones(n, dtype=bool)) for s in scorers]
    for t, d in enumerate(dags):
        hill_climb(d, restarts=2, random_state=t)
        assert is_dag(d.adj)
    for prior in ("edit", "paired"):
        lam = log_keep(0.99)
        run = [
            TaskDag(s, np.ones(n, dtype=bool), d.adj) for s, d in zip(scorers, dags, strict=True)
        ]
        before = configuration_score(run, lam, prior, edit_costs(2))
        multitask_search(run, lam, prior, 2)
        assert configuration_score(run, lam, prior, edit_costs(2)) >= before - 1e-9
        assert all(is_dag(d.adj) for d in run)


def test_prior_values_on_hand_made_cases():
    active = np.ones((3, 1), dtype=bool)
    c2, c1 = edit_costs(2), edit_costs(1)
    same = np.array([[1], [1], [1]])
    assert pair_penalty(same, active, "edit", c2, 3)[0] == 0
    assert pair_penalty(same, active, "paired", c2, 3)[0] == 0
    one_missing = np.array([[1], [1], [0]])
    assert pair_penalty(one_missing, active, "edit", c2, 3)[0] == 1
    assert pair_penalty(one_missing, active, "paired", c2, 3)[0] == pytest.approx(2 / 2)
    mixed = np.array([[1], [2], [0]])
    assert pair_penalty(mixed, active, "edit", c2, 3)[0] == 2  # remove both arcs
    assert pair_penalty(mixed, active, "paired", c2, 3)[0] == pytest.approx((2 + 1 + 1) / 2)
    assert pair_penalty(mixed, active, "edit", c1, 3)[0] == 2
    assert pair_penalty(mixed, active, "paired", c1, 3)[0] == pytest.approx(3 / 2)
    # a task lacking a variable is not charged (§2.3.1)
    partial = np.array([[True], [True], [False]])
    assert pair_penalty(one_missing, partial, "edit", c2, 3)[0] == 0
    assert pair_penalty(one_missing, partial, "paired", c2, 3)[0] == 0
    # four tasks: Edit counts the fewest edits, Paired every pair over k - 1
    four = np.array([[1], [1], [0], [0]])
    assert pair_penalty(four, np.ones((4, 1), bool), "edit", c2, 4)[0] == 2
    assert pair_penalty(four, np.ones((4, 1), bool), "paired", c2, 4)[0] == pytest.approx(4 / 3)


def test_configuration_score_adds_prior_to_bdeu():
    rng = np.random.default_rng(6)
    codes = rng.integers(2, size=(60, 3))
    s = BDeu(codes, np.full(3, 2))
    a = np.zeros((3, 3), dtype=bool)
    b = a.copy()
    b[0, 1] = b[1, 2] = True
    dags = [TaskDag(s, np.ones(3, bool), a), TaskDag(s, np.ones(3, bool), b)]
    lam = log_keep(0.5)
    expected = s.total(a) + s.total(b) + 2 * lam  # two arcs differ; Paired over k-1 = 1
    assert configuration_score(dags, lam, "paired", edit_costs(2)) == pytest.approx(expected)
    assert configuration_score(dags, lam, "edit", edit_costs(2)) == pytest.approx(expected)


@pytest.mark.parametrize("prior", ["edit", "paired"])
@pytest.mark.parametrize("reversal", [1, 2])
def test_branch_and_bound_equals_exhaustive(prior, reversal):
    rng = np.random.default_rng(7 + reversal)
    cost = edit_costs(reversal)
    for trial in range(120):
        k = int(rng.integers(2, 6))
        current = rng.integers(3, size=k)
        options = rng.normal(scale=3.0, size=(k, 3))
        options[rng.random((k, 3)) < 0.2] = -np.inf
        options[np.arange(k), current] = 0.0
        active = rng.random(k) < 0.85
        lam = float(rng.choice([-0.1, -1.0, -5.0, -50.0]))
        stats: dict = {}
        value, states = branch_and_bound(options, current, active, lam, prior, cost, -np.inf, stats)
        ref, _ref_states = exhaustive_best(options, current, active, lam, prior, cost)
        assert value == pytest.approx(ref, abs=1e-9), trial
        got = sum(options[t, s] for t, s in enumerate(states))
        got += lam * (
            pair_penalty(states[:, None], active[:, None], prior, cost, k)[0]
            - pair_penalty(current[:, None], active[:, None], prior, cost, k)[0]
        )
        assert got == pytest.approx(ref, abs=1e-9)
        assert np.all(states[~active] == current[~active])


def _three_tasks(vstruct_net, n=150):
    nets = [
        vstruct_net,
        delete_arcs(vstruct_net, [(3, 4)], n_integrate=5000),
        delete_arcs(vstruct_net, [(1, 2)], n_integrate=5000),
    ]
    return nets, [net.sample(n, random_state=10 + t) for t, net in enumerate(nets)]


def test_penalty_zero_is_single_task_and_one_is_identical(vstruct_net):
    _, dfs = _three_tasks(vstruct_net)
    mtl0 = MultitaskStructureLearner(penalty=0.0, restarts=1, random_state=3).fit(dfs)
    for df, edges in zip(dfs, mtl0.structures_, strict=True):
        alone = MultitaskStructureLearner(penalty=0.0, restarts=1, random_state=3).fit([df])
        assert sorted(alone.structures_[0]) == sorted(edges)
    for prior in ("edit", "paired"):
        mtl1 = MultitaskStructureLearner(prior=prior, penalty=1.0, restarts=1).fit(dfs)
        assert all(sorted(s) == sorted(mtl1.structures_[0]) for s in mtl1.structures_)
    ident = MultitaskStructureLearner(prior="identical", restarts=1).fit(dfs)
    assert all(sorted(s) == sorted(ident.structures_[0]) for s in ident.structures_)


def test_auto_penalty_uses_grid(vstruct_net):
    _, dfs = _three_tasks(vstruct_net, n=60)
    grid = (0.0, 0.99, 1 - 1e-6)
    m = MultitaskStructureLearner(penalty="auto", penalty_grid=grid, restarts=1).fit(dfs)
    assert set(m.validation_scores_) == set(grid) and m.penalty_ in grid
    ll = m.log_likelihood(dfs)
    assert ll.shape == (3,) and np.all(ll < 0)
    assert m.validation_scores_[m.penalty_] == max(m.validation_scores_.values())


def test_partly_overlapping_tasks(vstruct_net):
    _, dfs = _three_tasks(vstruct_net)
    dfs = [dfs[0], dfs[1].drop(columns=["E"]), dfs[2].drop(columns=["A"])]
    m = MultitaskStructureLearner(penalty=0.999, restarts=1).fit(dfs)
    assert m.variables_[1] == ["A", "B", "C", "D"]
    assert all("E" not in e for e in m.structures_[1])
    assert all("A" not in e for e in m.structures_[2])
    with pytest.raises(ValueError, match="same variables"):
        MultitaskStructureLearner(prior="identical").fit(dfs)


def test_task_selection_ranks_identical_task_first(vstruct_net):
    other = make_net(
        {"A": ("E",), "B": ("A",), "C": (), "D": ("B", "C"), "E": ()},
        {"A": 2, "B": 3, "C": 3, "D": 2, "E": 3},
        seed=9,
    )
    principal = vstruct_net.sample(400, random_state=20)
    candidates = [other.sample(400, random_state=21), vstruct_net.sample(400, random_state=22)]
    for measure in ("direct", "indirect"):
        chosen, scores = select_tasks(
            principal, candidates, measure=measure, restarts=1, return_scores=True, folds=3
        )
        assert chosen[0] == 1, (measure, scores)
    assert select_tasks(principal, candidates, n=1, restarts=0) == [1]


def test_networks_sample_kl_and_edit_distance(vstruct_net):
    assert empirical_kl(vstruct_net, vstruct_net, n_samples=500) == pytest.approx(0.0)
    codes = vstruct_net.sample_codes(20000, random_state=0)
    freq = np.bincount(codes[:, 0], minlength=2) / len(codes)
    assert freq == pytest.approx(vstruct_net.cpts[0][0], abs=0.02)
    assert edit_distance([("A", "B")], [("B", "A")]) == 1
    assert edit_distance([("A", "B")], [("B", "A")], reversal=2) == 2
    assert edit_distance([("A", "B"), ("B", "C")], [("C", "D")]) == 3
    smooth = DiscreteNetwork.fit(
        vstruct_net.variables, vstruct_net.states, np.zeros((5, 5), bool), codes[:100]
    )
    assert empirical_kl(vstruct_net, smooth, n_samples=2000) > 0.05


def test_delete_arcs_integrates_out_the_parent():
    net = make_net({"A": (), "C": (), "B": ("A", "C")}, {"A": 2, "C": 3, "B": 2}, seed=1)
    cut = delete_arcs(net, [(1, 2)], n_integrate=200_000)
    assert cut.parents[2] == (0,)
    pc = net.cpts[1][0]  # C is independent of A: P(B | A) = sum_c P(B | A, c) P(c)
    exact = net.cpts[2].reshape(2, 3, 2).transpose(0, 2, 1) @ pc
    assert cut.cpts[2] == pytest.approx(exact, abs=0.01)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda df: [df.assign(A=np.linspace(0, 1, len(df)))], "column 'A' is continuous"),
        (lambda df: [df.assign(B=df["B"].astype(object).where(df.index > 3))], "missing values"),
        (lambda df: [df[["A", "B"]], df[["D", "E"]].rename(columns=str.lower)], "shares no var"),
        (lambda df: df, "list of pandas DataFrames"),
        (lambda df: [], "is empty"),
    ],
)
def test_bad_data_is_refused_with_one_line(vstruct_net, make, message):
    df = vstruct_net.sample(30, random_state=0)
    with pytest.raises((ValueError, TypeError), match=message) as info:
        MultitaskStructureLearner(penalty=0.0).fit(make(df))
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({"prior": "tsk"}, "prior"),
        ({"penalty": 1.5}, "penalty"),
        ({"penalty": "best"}, "penalty"),
        ({"restarts": -1}, "restarts"),
        ({"reversal_cost": 3}, "reversal_cost"),
        ({"validation_fraction": 0.0}, "validation_fraction"),
        ({"equivalent_sample_size": 0}, "equivalent_sample_size"),
        ({"penalty_grid": ()}, "penalty_grid"),
        ({"max_parents": 0}, "max_parents"),
    ],
)
def test_bad_parameters_name_the_argument(vstruct_net, params, name):
    est = MultitaskStructureLearner(**params)
    assert est.get_params() if hasattr(est, "get_params") else True
    for key, value in params.items():
        assert getattr(est, key) is value  # stored untouched
    with pytest.raises(ValueError, match=name):
        est.fit([vstruct_net.sample(20, random_state=0)])


def test_declared_categories_are_states(vstruct_net):
    df = vstruct_net.sample(40, random_state=0)
    df["B"] = pd.Categorical(["s0"] * 40, categories=["s0", "s1", "s2"])
    m = MultitaskStructureLearner(penalty=0.0, restarts=0).fit([df])
    assert m.networks_[0].states["B"] == ["s0", "s1", "s2"]
    assert np.isfinite(m.log_likelihood([vstruct_net.sample(50, random_state=1)])[0])


def test_unfitted_and_unknown_states(vstruct_net):
    df = vstruct_net.sample(50, random_state=0)
    with pytest.raises(ValueError, match="not fitted"):
        MultitaskStructureLearner().log_likelihood([df])
    m = MultitaskStructureLearner(penalty=0.0, restarts=0).fit([df])
    bad = df.astype(object).copy()
    bad.loc[0, "A"] = "zzz"
    with pytest.raises(ValueError, match="'A' has state 'zzz'"):
        m.log_likelihood([bad])
    with pytest.raises(ValueError, match="one frame per task"):
        m.log_likelihood([df, df])


def test_seeded_fit_is_deterministic(vstruct_net):
    _, dfs = _three_tasks(vstruct_net, n=80)
    a = MultitaskStructureLearner(penalty="auto", penalty_grid=(0.0, 0.999), restarts=2).fit(dfs)
    b = MultitaskStructureLearner(penalty="auto", penalty_grid=(0.0, 0.999), restarts=2).fit(dfs)
    assert a.structures_ == b.structures_ and a.penalty_ == b.penalty_


@pytest.mark.slow
def test_bundled_networks_load_and_convert():
    pytest.importorskip("pgmpy")
    from ensel.bayesnet.problems import alarm_comp_tasks, load_network, related_tasks

    alarm = load_network("alarm")
    assert len(alarm.variables) == 37 and len(alarm.edges) == 46
    back = DiscreteNetwork.from_pgmpy(alarm.to_pgmpy())
    assert back.edges == alarm.edges
    assert empirical_kl(alarm, back, n_samples=2000) == pytest.approx(0.0, abs=1e-9)
    tasks = related_tasks(alarm, 3, p_del=0.2, n_integrate=5000, random_state=1)
    assert all(set(t.edges) <= set(alarm.edges) for t in tasks)
    comp = alarm_comp_tasks(alarm, random_state=0)
    assert set(comp[0].edges) == set(alarm.edges) and len(comp) == 5
    assert all(is_dag(_adj(t)) for t in comp) and set(comp[1].edges) != set(alarm.edges)
    insurance = load_network("insurance")
    assert len(insurance.variables) == 27 and len(insurance.edges) == 52


def _adj(net):
    n = len(net.variables)
    adj = np.zeros((n, n), dtype=bool)
    for v, pa in enumerate(net.parents):
        adj[list(pa), v] = True
    return adj
