"""Discrete Bayes nets as arrays: conditional probability tables, parameters by Bayesian
updating, log likelihood, forward sampling, edit distance and empirical KL divergence; with
conversion to and from pgmpy models."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._imports import optional

__all__ = ["DiscreteNetwork", "as_network", "edit_distance", "empirical_kl"]


def _topological(parents: list[tuple]) -> list[int]:
    order, done = [], set()
    pending = list(range(len(parents)))
    while pending:
        rest = []
        for v in pending:
            if all(p in done for p in parents[v]):
                order.append(v)
                done.add(v)
            else:
                rest.append(v)
        if len(rest) == len(pending):
            raise ValueError("the network's arcs form a cycle; a Bayes net needs a DAG")
        pending = rest
    return order


def _config(codes: np.ndarray, parents: tuple, cards: np.ndarray) -> np.ndarray:
    cfg = np.zeros(len(codes), dtype=np.int64)
    for p in parents:
        cfg = cfg * int(cards[p]) + codes[:, p]
    return cfg


@dataclass
class DiscreteNetwork:
    """A discrete Bayes net: ``parents[v]`` are variable indices, ``cpts[v]`` has shape
    (q, r): one row per parent configuration (mixed radix, last parent fastest), one column per
    state of v; ``states[name]`` lists the state labels."""

    variables: list[str]
    states: dict[str, list]
    parents: list[tuple]
    cpts: list[np.ndarray]

    def __post_init__(self):
        self.order = _topological(self.parents)

    @property
    def cards(self) -> np.ndarray:
        return np.array([len(self.states[v]) for v in self.variables], dtype=np.int64)

    @property
    def edges(self) -> list[tuple[str, str]]:
        return [
            (self.variables[p], self.variables[v]) for v, pa in enumerate(self.parents) for p in pa
        ]

    @classmethod
    def fit(
        cls,
        variables: list[str],
        states: dict[str, list],
        adjacency: np.ndarray,
        codes: np.ndarray,
        pseudocount: float = 1.0,
    ) -> DiscreteNetwork:
        """Parameters by Bayesian updating (Cooper & Herskovits 1992): the posterior mean under
        a Dirichlet prior with ``pseudocount`` per cell, (N_jk + a) / (N_j + r a)."""
        cards = np.array([len(states[v]) for v in variables], dtype=np.int64)
        parents, cpts = [], []
        for v in range(len(variables)):
            pa = tuple(np.flatnonzero(adjacency[:, v]).tolist())
            q = int(np.prod([cards[p] for p in pa])) if pa else 1
            r = int(cards[v])
            cell = _config(codes, pa, cards) * r + codes[:, v]
            counts = np.bincount(cell, minlength=q * r).reshape(q, r).astype(float)
            counts += pseudocount
            parents.append(pa)
            cpts.append(counts / counts.sum(axis=1, keepdims=True))
        return cls(list(variables), dict(states), parents, cpts)

    def log_prob(self, codes: np.ndarray) -> np.ndarray:
        """Log probability of each row of ``codes`` (columns in ``variables`` order)."""
        cards = self.cards
        out = np.zeros(len(codes))
        for v, pa in enumerate(self.parents):
            out += np.log(self.cpts[v][_config(codes, pa, cards), codes[:, v]])
        return out

    def encode(self, df: pd.DataFrame) -> np.ndarray:
        """Codes of a frame's columns named like this network's variables."""
        missing = [v for v in self.variables if v not in df.columns]
        if missing:
            raise ValueError(f"data lacks the network's variable {missing[0]!r}")
        codes = np.empty((len(df), len(self.variables)), dtype=np.int64)
        for j, v in enumerate(self.variables):
            values = list(df[v].astype(object))
            coded = pd.Index(self.states[v]).get_indexer(values)
            if (coded < 0).any():
                bad = values[int(np.flatnonzero(coded < 0)[0])]
                raise ValueError(f"column {v!r} has state {bad!r} unknown to the network")
            codes[:, j] = coded
        return codes

    def sample_codes(self, n: int, random_state=0) -> np.ndarray:
        """Forward sampling in topological order, vectorised over rows."""
        rng = np.random.default_rng(random_state)
        cards = self.cards
        codes = np.zeros((n, len(self.variables)), dtype=np.int64)
        for v in self.order:
            probs = self.cpts[v][_config(codes, self.parents[v], cards)]
            cum = np.cumsum(probs, axis=1)
            u = rng.random(n)[:, None] * cum[:, -1:]
            codes[:, v] = np.minimum((u >= cum).sum(axis=1), cards[v] - 1)
        return codes

    def to_frame(self, codes: np.ndarray) -> pd.DataFrame:
        return pd.DataFrame(
            {
                v: pd.Categorical.from_codes(codes[:, j], categories=self.states[v])
                if all(isinstance(s, str) for s in self.states[v])
                else np.asarray(self.states[v], dtype=object)[codes[:, j]]
                for j, v in enumerate(self.variables)
            }
        )

    def sample(self, n: int, random_state=0) -> pd.DataFrame:
        return self.to_frame(self.sample_codes(n, random_state))

    @classmethod
    def from_pgmpy(cls, model) -> DiscreteNetwork:
        variables = list(model.nodes())
        index = {v: i for i, v in enumerate(variables)}
        states, parents, cpts = {}, [], []
        for v in variables:
            cpd = model.get_cpds(v)
            states[v] = list(cpd.state_names[v])
        for v in variables:
            cpd = model.get_cpds(v)
            evidence = list(cpd.variables[1:])
            for e in evidence:
                if list(cpd.state_names[e]) != states[e]:
                    raise ValueError(f"state order of {e!r} differs between CPDs")
            parents.append(tuple(index[e] for e in evidence))
            values = np.asarray(cpd.get_values(), dtype=float)
            cpts.append((values / values.sum(axis=0, keepdims=True)).T.copy())
        return cls(variables, states, parents, cpts)

    def to_pgmpy(self):
        """This network as a pgmpy ``DiscreteBayesianNetwork`` with ``TabularCPD`` s."""
        optional("pgmpy", "Converting a network to pgmpy")
        from pgmpy.factors.discrete import TabularCPD
        from pgmpy.models import DiscreteBayesianNetwork

        model = DiscreteBayesianNetwork()
        model.add_nodes_from(self.variables)
        model.add_edges_from(self.edges)
        cards = self.cards
        for v, name in enumerate(self.variables):
            ev = [self.variables[p] for p in self.parents[v]]
            model.add_cpds(
                TabularCPD(
                    name,
                    int(cards[v]),
                    self.cpts[v].T,
                    evidence=ev or None,
                    evidence_card=[int(cards[p]) for p in self.parents[v]] or None,
                    state_names={x: list(self.states[x]) for x in [name, *ev]},
                )
            )
        return model


def as_network(model) -> DiscreteNetwork:
    """A DiscreteNetwork from itself or a pgmpy model."""
    if isinstance(model, DiscreteNetwork):
        return model
    if hasattr(model, "get_cpds"):
        return DiscreteNetwork.from_pgmpy(model)
    raise TypeError(
        f"expected a DiscreteNetwork or a pgmpy DiscreteBayesianNetwork, got {type(model).__name__}"
    )


def _edge_set(g) -> set[tuple]:
    if isinstance(g, DiscreteNetwork):
        return set(g.edges)
    if hasattr(g, "edges") and callable(g.edges):
        return {tuple(e) for e in g.edges()}
    return {tuple(e) for e in g}


def edit_distance(a, b, reversal: int = 1) -> int:
    """Arc additions, deletions and reversals (each reversal ``reversal`` edits) that turn DAG
    ``a`` into DAG ``b`` (footnote 6 of §2.3.4). ``a``, ``b``: edge lists of (parent, child),
    networkx DiGraphs, pgmpy models or DiscreteNetworks."""
    ea, eb = _edge_set(a), _edge_set(b)
    pairs = {frozenset(e) for e in ea | eb}
    dist = 0
    for pair in pairs:
        x, y = sorted(pair, key=str)
        sa = 1 if (x, y) in ea else 2 if (y, x) in ea else 0
        sb = 1 if (x, y) in eb else 2 if (y, x) in eb else 0
        if sa != sb:
            dist += reversal if sa and sb else 1
    return dist


def empirical_kl(
    true, learned, data: pd.DataFrame | None = None, n_samples: int = 20_000, random_state=0
) -> float:
    """Empirical KL divergence KL(true || learned) in nats: the mean of log p_true(x) -
    log p_learned(x) over ``data`` (or ``n_samples`` rows drawn from ``true``), §2.3.4."""
    true, learned = as_network(true), as_network(learned)
    if data is None:
        codes = true.sample_codes(n_samples, random_state)
        data = true.to_frame(codes)
    else:
        codes = true.encode(data)
    return float(np.mean(true.log_prob(codes) - learned.log_prob(learned.encode(data))))
