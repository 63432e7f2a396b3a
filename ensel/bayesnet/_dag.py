"""One task's DAG during search: adjacency, reachability and the score change of every single-arc
edit (add, remove, reverse), kept up to date after each move so that a neighbour's score is a
table lookup (the per-task precomputation of dissertation §2.3.3)."""

from __future__ import annotations

import numpy as np

from ._score import BDeu

__all__ = ["KEEP", "TaskDag", "is_dag", "reachability"]

NEG = -np.inf
KEEP = 0.0


def reachability(adjacency: np.ndarray) -> np.ndarray:
    """Reflexive transitive closure: R[u, v] is True when v can be reached from u."""
    n = adjacency.shape[0]
    reach = adjacency.astype(np.int64) | np.eye(n, dtype=np.int64)
    while True:
        nxt = ((reach @ reach) > 0).astype(np.int64)
        if np.array_equal(nxt, reach):
            return reach.astype(bool)
        reach = nxt


def is_dag(adjacency: np.ndarray) -> bool:
    reach = reachability(adjacency)
    np.fill_diagonal(reach, False)
    return not np.any(reach & reach.T)


class TaskDag:
    """DAG over the variables ``present`` (others never get arcs), scored by ``scorer``.

    ``gain[u, v]`` is the score change of toggling u in the parents of v; ``to_none`` and
    ``to_arc`` give, for every pair, the score change of making the pair unconnected or of
    having the arc u -> v (by adding or reversing), -inf where that would make a cycle or break
    ``max_parents``; 0 where it is the current state."""

    def __init__(
        self,
        scorer: BDeu,
        present: np.ndarray,
        adjacency: np.ndarray | None = None,
        max_parents: int | None = None,
    ):
        self.scorer = scorer
        self.present = np.asarray(present, dtype=bool)
        self.n = len(self.present)
        self.max_parents = max_parents
        self.adj = np.zeros((self.n, self.n), dtype=bool) if adjacency is None else adjacency.copy()
        self.pair_ok = np.outer(self.present, self.present)
        np.fill_diagonal(self.pair_ok, False)
        self.local = np.zeros(self.n)
        self.gain = np.full((self.n, self.n), NEG)
        for v in np.flatnonzero(self.present):
            self._refresh_column(v)
        self._refresh_paths()

    # ----------------------------------------------------------------- bookkeeping
    def parents(self, v: int) -> tuple:
        return tuple(np.flatnonzero(self.adj[:, v]).tolist())

    @property
    def score(self) -> float:
        return float(self.local[self.present].sum())

    def _refresh_column(self, v: int) -> None:
        pa = self.parents(v)
        base = self.scorer.local(v, pa)
        self.local[v] = base
        col = np.full(self.n, NEG)
        full = self.max_parents is not None and len(pa) >= self.max_parents
        for u in np.flatnonzero(self.present):
            if u == v:
                continue
            if self.adj[u, v]:
                new = tuple(p for p in pa if p != u)
            elif full:
                continue
            else:
                new = tuple(sorted((*pa, int(u))))
            col[u] = self.scorer.local(v, new) - base
        self.gain[:, v] = col

    def _refresh_paths(self) -> None:
        self.reach = reachability(self.adj)
        # another directed path u ~> v besides the arc u -> v itself (blocks reversing it)
        via = self.adj.astype(np.int64) @ self.reach.astype(np.int64)
        self.other_path = (via - self.adj) > 0
        adj, g = self.adj, self.gain
        to_none = np.where(adj, g, np.where(adj.T, g.T, KEEP))
        rev = np.where(self.other_path.T, NEG, g.T + g)  # reverse v -> u into u -> v
        add = np.where(self.reach.T, NEG, g)  # add u -> v: no path v ~> u
        to_arc = np.where(adj, KEEP, np.where(adj.T, rev, add))
        self.to_none = np.where(self.pair_ok, to_none, NEG)
        self.to_arc = np.where(self.pair_ok, to_arc, NEG)

    # ----------------------------------------------------------------- pair states
    def pair_state(self, u: int, v: int) -> int:
        """0: no arc, 1: u -> v, 2: v -> u."""
        return 1 if self.adj[u, v] else 2 if self.adj[v, u] else 0

    def options(self, iu: np.ndarray, iv: np.ndarray) -> np.ndarray:
        """(pairs, 3) score changes of putting each pair (iu < iv) in state 0, 1 or 2."""
        return np.stack([self.to_none[iu, iv], self.to_arc[iu, iv], self.to_arc[iv, iu]], axis=1)

    def states(self, iu: np.ndarray, iv: np.ndarray) -> np.ndarray:
        return np.where(self.adj[iu, iv], 1, np.where(self.adj[iv, iu], 2, 0))

    def set_pair(self, u: int, v: int, state: int) -> None:
        """Put pair (u, v) in ``state`` (the caller checked it is legal) and update the tables."""
        old = self.pair_state(u, v)
        if old == state:
            return
        self.adj[u, v] = state == 1
        self.adj[v, u] = state == 2
        changed = (
            {v}
            if (old, state) in ((0, 1), (1, 0))
            else {u}
            if (old, state)
            in (
                (0, 2),
                (2, 0),
            )
            else {u, v}
        )
        for w in changed:
            self._refresh_column(w)
        self._refresh_paths()

    def set_adjacency(self, adjacency: np.ndarray) -> None:
        self.adj = adjacency.copy()
        for v in np.flatnonzero(self.present):
            self._refresh_column(v)
        self._refresh_paths()
