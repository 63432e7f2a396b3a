"""Single-task structure search (dissertation §2.2 and §2.3.4): greedy hill climbing over DAGs
with add, remove and reverse moves, a tabu list, random restarts; and the identical-structure
learner of §2.3.1 (a task node TSK that parents every variable)."""

from __future__ import annotations

from collections import deque

import numpy as np

from ._dag import TaskDag
from ._score import BDeu

__all__ = ["hill_climb", "learn_identical"]

EPS = 1e-9


def _best_move(dag: TaskDag, iu, iv, tabu) -> tuple[float, int, int]:
    opts = dag.options(iu, iv)
    cur = dag.states(iu, iv)
    opts[np.arange(len(iu)), cur] = -np.inf
    for p, s in tabu:
        opts[p, s] = -np.inf
    flat = int(np.argmax(opts))
    p, s = divmod(flat, 3)
    return float(opts[p, s]), p, s


def _climb(dag: TaskDag, iu, iv, tabu_length: int) -> None:
    """Tabu hill climbing from the current DAG: best move each step; up to ``tabu_length``
    non-improving moves in a row are taken (never undoing a move in the tabu list); ends on the
    best DAG seen, then climbs strictly to its local optimum."""
    best_adj, best = dag.adj.copy(), dag.score
    tabu: deque = deque(maxlen=max(tabu_length, 1))
    worse = 0
    while True:
        gain, p, s = _best_move(dag, iu, iv, tabu if tabu_length else ())
        if not np.isfinite(gain):
            break
        if gain <= EPS:
            if worse >= tabu_length:
                break
            worse += 1
        tabu.append((p, dag.pair_state(iu[p], iv[p])))
        dag.set_pair(iu[p], iv[p], s)
        if dag.score > best + EPS:
            best_adj, best, worse = dag.adj.copy(), dag.score, 0
    if not np.array_equal(dag.adj, best_adj):
        dag.set_adjacency(best_adj)
    while True:
        gain, p, s = _best_move(dag, iu, iv, ())
        if gain <= EPS:
            return
        dag.set_pair(iu[p], iv[p], s)


def _perturb(dag: TaskDag, iu, iv, n_moves: int, rng: np.random.Generator) -> None:
    for _ in range(n_moves):
        for _attempt in range(20):
            p = int(rng.integers(len(iu)))
            opts = dag.options(iu[p : p + 1], iv[p : p + 1])[0]
            cur = dag.pair_state(iu[p], iv[p])
            legal = [s for s in range(3) if s != cur and np.isfinite(opts[s])]
            if legal:
                dag.set_pair(iu[p], iv[p], int(rng.choice(legal)))
                break


def hill_climb(
    dag: TaskDag,
    restarts: int = 10,
    tabu_length: int = 100,
    random_state: int | np.random.Generator | None = 0,
) -> np.ndarray:
    """Best DAG found by tabu hill climbing from ``dag`` and from ``restarts`` random
    perturbations of the best so far (about n/4 random arc edits each); leaves ``dag`` on it and
    returns its adjacency matrix. The result is a local optimum of the single-arc neighbourhood."""
    rng = np.random.default_rng(random_state)
    iu, iv = np.triu_indices(dag.n, 1)
    _climb(dag, iu, iv, tabu_length)
    best_adj, best = dag.adj.copy(), dag.score
    n_moves = max(2, int(dag.present.sum()) // 4)
    for _ in range(restarts):
        _perturb(dag, iu, iv, n_moves, rng)
        _climb(dag, iu, iv, tabu_length)
        if dag.score > best + EPS:
            best_adj, best = dag.adj.copy(), dag.score
        else:
            dag.set_adjacency(best_adj)
    if not np.array_equal(dag.adj, best_adj):
        dag.set_adjacency(best_adj)
    return best_adj.copy()


def learn_identical(
    codes: list[np.ndarray],
    cards: np.ndarray,
    ess: float = 1.0,
    restarts: int = 10,
    tabu_length: int = 100,
    max_parents: int | None = None,
    random_state=0,
) -> np.ndarray:
    """One structure for all tasks (§2.3.1): pool the rows with a task column TSK, force TSK into
    every parent set, search the other arcs; the common structure is the result without TSK.
    With TSK in every parent set, BDeu with equivalent sample size k·α equals the sum of the k
    tasks' BDeu scores with α each (the multitask objective at δ = 1); with α it is sparser."""
    n = len(cards)
    pooled = np.vstack(
        [np.column_stack([c, np.full(len(c), t, dtype=np.int64)]) for t, c in enumerate(codes)]
    )
    scorer = BDeu(pooled, np.append(cards, len(codes)), ess, forced=(n,))
    present = np.append(np.ones(n, dtype=bool), False)
    dag = TaskDag(scorer, present, max_parents=max_parents)
    adj = hill_climb(dag, restarts, tabu_length, random_state)
    return adj[:n, :n]
