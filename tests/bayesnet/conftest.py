from __future__ import annotations

import numpy as np
import pytest

from ensel.bayesnet import DiscreteNetwork


def make_net(parents: dict[str, tuple], cards: dict[str, int], seed: int = 0, sharp: float = 0.15):
    """A small network with strong dependencies: each CPT row puts most mass on one state."""
    rng = np.random.default_rng(seed)
    variables = list(parents)
    index = {v: i for i, v in enumerate(variables)}
    states = {v: [f"s{j}" for j in range(cards[v])] for v in variables}
    cpts = []
    for v in variables:
        q = int(np.prod([cards[p] for p in parents[v]])) if parents[v] else 1
        rows = rng.dirichlet(np.full(cards[v], sharp), size=q)
        cpts.append(0.9 * rows + 0.1 / cards[v])
    return DiscreteNetwork(
        variables, states, [tuple(index[p] for p in parents[v]) for v in variables], cpts
    )


@pytest.fixture(scope="session")
def vstruct_net():
    """A -> C <- B, C -> D -> E: the v-structure makes every arc compelled."""
    return make_net(
        {"A": (), "B": (), "C": ("A", "B"), "D": ("C",), "E": ("D",)},
        {"A": 2, "B": 3, "C": 3, "D": 2, "E": 3},
        seed=3,
    )
