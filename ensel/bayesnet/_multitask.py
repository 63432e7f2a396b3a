"""Multitask structure search (dissertation §2.3.1-2.3.4): the Edit (Eq. 2.7) and Paired (Eq. 2.8)
priors, the configuration neighbourhood (pick two nodes; per task add, remove, reverse or keep
their arc), branch and bound over partial configurations with the bounds of Eq. 2.9-2.10, and
the tabu list and random restarts that §2.3.4 gives the single-task search.

Scores are in log space; the structure prior P(G_s) is uniform, so the exponent
1/(1+(k-1)δ) on it is a constant and drops out. ``lam = log(1 - δ)`` (<= 0) multiplies the
number of edits; δ = 1 is a finite but overwhelming ``LOG_ZERO`` per edit."""

from __future__ import annotations

import itertools
from collections import deque

import numpy as np

from ._dag import TaskDag

__all__ = [
    "PRIORS",
    "branch_and_bound",
    "configuration_score",
    "edit_costs",
    "exhaustive_best",
    "log_keep",
    "multitask_climb",
    "multitask_search",
    "pair_penalty",
]

PRIORS = ("edit", "paired")
LOG_ZERO = -1e9
EPS = 1e-9


def log_keep(delta: float) -> float:
    """log(1 - δ), with δ = 1 mapped to ``LOG_ZERO`` (structures forced identical)."""
    return LOG_ZERO if delta >= 1.0 else max(float(np.log1p(-delta)), LOG_ZERO)


def edit_costs(reversal: int = 2) -> np.ndarray:
    """Edits between the states of a pair (0 none, 1 i->j, 2 j->i): adding or removing an arc is
    one edit, reversing it ``reversal`` (one or two, §2.3.1)."""
    c = np.ones((3, 3))
    np.fill_diagonal(c, 0.0)
    c[1, 2] = c[2, 1] = reversal
    return c


def pair_penalty(states: np.ndarray, active: np.ndarray, prior: str, cost: np.ndarray, k: int):
    """Edits charged for each pair by the prior, given the pair states (tasks, pairs) of the
    tasks that have both variables (``active``). Edit: the fewest edits that make the pair the
    same in all those tasks (Eq. 2.7). Paired: the edits between every two tasks over k - 1
    (Eq. 2.8)."""
    states = np.asarray(states)
    active = np.asarray(active, dtype=bool)
    if k < 2:
        return np.zeros(states.shape[1:])
    if prior == "edit":
        per_target = np.stack(
            [np.where(active, cost[states, s], 0.0).sum(axis=0) for s in range(3)]
        )
        return per_target.min(axis=0)
    total = np.zeros(states.shape[1:])
    for s, t in itertools.combinations(range(states.shape[0]), 2):
        total += np.where(active[s] & active[t], cost[states[s], states[t]], 0.0)
    return total / (k - 1)


def branch_and_bound(
    options: np.ndarray,
    current: np.ndarray,
    active: np.ndarray,
    lam: float,
    prior: str,
    cost: np.ndarray,
    incumbent: float = EPS,
    stats: dict | None = None,
    old: float | None = None,
    exclude: frozenset | set = frozenset(),
) -> tuple[float, np.ndarray | None]:
    """Best change of configuration score over the assignments of one pair's state in every task.

    ``options[t, s]`` is task t's score change for state s (0 for the current state, -inf when
    illegal); inactive tasks (lacking a variable) keep their state and cost nothing. Depth-first
    over tasks in order; a partial configuration of order l is pruned when its upper bound, the
    exact scores and prior edits of the first l tasks plus the best score change of each
    remaining task (Eq. 2.9 for the Edit prior, Eq. 2.10 for the Paired prior; edits only grow
    as tasks are added), is not above ``incumbent``. Returns (value, states) of the best
    assignment scoring above ``incumbent``, or (incumbent, None). ``old``: the pair's current
    edits when the caller has them; ``exclude``: assignments (tuples over all tasks) that may not
    be returned (the tabu list, and the current assignment when a move is forced)."""
    k = options.shape[0]
    tasks = [t for t in range(k) if active[t]]
    if old is None:
        old = pair_penalty(current[:, None], active[:, None], prior, cost, k)[0]
    sub = options[tasks]
    best_rest = np.zeros(len(tasks) + 1)
    best_rest[:-1] = np.cumsum(sub.max(axis=1)[::-1])[::-1]
    ranked = np.argsort(-sub, axis=1, kind="stable")
    finite = np.isfinite(np.take_along_axis(sub, ranked, axis=1))
    orders = [
        [int(s) for s, ok in zip(r, f, strict=True) if ok]
        for r, f in zip(ranked.tolist(), finite.tolist(), strict=True)
    ]
    opt_rows = sub.tolist()
    cost_rows = cost.tolist()
    scale = 1.0 / (k - 1) if k > 1 else 0.0
    best_value, best_states = incumbent, None
    chosen = np.array(current, copy=True)
    visited = 0

    def dfs(level: int, partial: float, acc: np.ndarray, counts: np.ndarray, pen: float):
        nonlocal best_value, best_states, visited
        visited += 1
        if level == len(tasks):
            value = partial + lam * (pen - old)
            if value > best_value and not (exclude and tuple(chosen.tolist()) in exclude):
                best_value, best_states = value, chosen.copy()
            return
        t = tasks[level]
        row = opt_rows[level]
        for s in orders[level]:
            if prior == "edit":
                acc2 = [a + c for a, c in zip(acc, cost_rows[s], strict=True)]
                pen2 = min(acc2)
                counts2 = counts
            else:
                acc2 = acc
                pen2 = pen + scale * sum(n * c for n, c in zip(counts, cost_rows[s], strict=True))
                counts2 = list(counts)
                counts2[s] += 1
            part2 = partial + row[s]
            bound = part2 + lam * (pen2 - old) + best_rest[level + 1]
            if bound <= best_value:
                continue
            chosen[t] = s
            dfs(level + 1, part2, acc2, counts2, pen2)
        chosen[t] = current[t]

    if k < 2:
        lam = 0.0
    dfs(0, 0.0, [0.0, 0.0, 0.0], [0, 0, 0], 0.0)
    if stats is not None:
        stats["nodes"] = stats.get("nodes", 0) + visited
    return best_value, best_states


def exhaustive_best(options, current, active, lam, prior, cost):
    """Reference for tests: score every assignment of the pair's states (no pruning)."""
    k = options.shape[0]
    best, arg = -np.inf, None
    choices = [range(3) if active[t] else [current[t]] for t in range(k)]
    old = pair_penalty(current[:, None], active[:, None], prior, cost, k)[0]
    for combo in itertools.product(*choices):
        states = np.array(combo)
        value = sum(options[t, s] for t, s in enumerate(combo))
        if not np.isfinite(value):
            continue
        if k > 1:
            value += lam * (pair_penalty(states[:, None], active[:, None], prior, cost, k)[0] - old)
        if value > best:
            best, arg = value, states
    return best, arg


def configuration_score(dags: list[TaskDag], lam: float, prior: str, cost: np.ndarray) -> float:
    """log of Eq. 2.5 up to a constant: the tasks' BDeu scores plus log(1-δ) times the edits."""
    n = dags[0].n
    iu, iv = np.triu_indices(n, 1)
    states = np.stack([d.states(iu, iv) for d in dags])
    active = np.stack([d.pair_ok[iu, iv] for d in dags])
    pen = pair_penalty(states, active, prior, cost, len(dags)).sum()
    return sum(d.score for d in dags) + (lam * pen if len(dags) > 1 else 0.0)


def multitask_search(
    dags: list[TaskDag],
    lam: float,
    prior: str = "paired",
    reversal: int = 2,
    max_steps: int = 100_000,
    stats: dict | None = None,
) -> int:
    """Greedy search over configurations (§2.3.2) from the tasks' current DAGs: each step finds
    the best neighbour by branch and bound (pairs visited in decreasing order of their bound,
    stopping when no pair's bound beats the best found) and moves to it while it improves the
    score. Returns the number of steps taken; the DAGs are left on the result."""
    k = len(dags)
    cost = edit_costs(reversal)
    iu, iv = np.triu_indices(dags[0].n, 1)
    active = np.stack([d.pair_ok[iu, iv] for d in dags])
    lam = lam if k > 1 else 0.0
    steps = 0
    n_pairs = len(iu)
    cached = np.full(n_pairs, np.nan)  # best improving change of each pair (-inf: none)
    cached_states: list = [None] * n_pairs
    prev_opts = prev_cur = None
    while steps < max_steps:
        opts = np.stack([d.options(iu, iv) for d in dags])  # (k, P, 3)
        cur = np.stack([d.states(iu, iv) for d in dags])
        if prev_opts is not None:
            changed = (opts != prev_opts).any(axis=(0, 2)) | (cur != prev_cur).any(axis=0)
            cached[changed] = np.nan
        prev_opts, prev_cur = opts, cur
        old = pair_penalty(cur, active, prior, cost, k)
        best = np.where(active, opts.max(axis=2), 0.0)
        upper = best.sum(axis=0) - lam * old
        incumbent, choice = EPS, None
        known = ~np.isnan(cached)
        if known.any():
            p = int(np.argmax(np.where(known, cached, -np.inf)))
            if cached[p] > incumbent:
                incumbent, choice = float(cached[p]), (p, cached_states[p])
        # pairs whose scores changed since the last step, by decreasing bound; a pair's
        # search is pruned against EPS only so that its result can be reused next step
        for p in np.argsort(-upper, kind="stable"):
            if upper[p] <= incumbent:
                break
            if known[p]:
                continue
            value, states = branch_and_bound(
                opts[:, p, :], cur[:, p], active[:, p], lam, prior, cost, EPS, stats, old[p]
            )
            cached[p] = value if states is not None else -np.inf
            cached_states[p] = states
            if states is not None and value > incumbent:
                incumbent, choice = value, (p, states)
        if choice is None:
            break
        p, states = choice
        for t, d in enumerate(dags):
            if active[t, p] and states[t] != cur[t, p]:
                d.set_pair(iu[p], iv[p], int(states[t]))
        steps += 1
    return steps


def _tabu_walk(
    dags: list[TaskDag], lam: float, prior: str, cost: np.ndarray, tabu_length: int, stats
) -> None:
    """Tabu phase of the configuration search (§2.3.4's tabu lists, carried over from the
    single-task search): take the best neighbour that is not in the tabu list even when it scores
    lower, up to ``tabu_length`` non-improving moves in a row; the tabu list holds the last
    ``tabu_length`` (pair, previous states) so that no move is undone while it is listed. Ends on
    the best configuration seen. A pair's best move is exact (branch and bound with the pair's own
    incumbent only) and reused until the pair's options, states or tabu entries change; pairs are
    visited by decreasing upper bound (the best change of each task, less the smallest loss of
    leaving its current state, since a move changes at least one task) and the scan stops at the
    first pair whose bound is not above the best move found."""
    k = len(dags)
    iu, iv = np.triu_indices(dags[0].n, 1)
    active = np.stack([d.pair_ok[iu, iv] for d in dags])
    n_pairs = len(iu)
    score = configuration_score(dags, lam, prior, cost)
    best, best_adjs = score, [d.adj.copy() for d in dags]
    tabu: deque = deque()
    banned: dict[int, set] = {}
    cache: dict[int, tuple] = {}
    worse = 0
    prev_opts = prev_cur = None
    tk = np.arange(k)[:, None]
    tp = np.arange(n_pairs)[None, :]
    while True:
        opts = np.stack([d.options(iu, iv) for d in dags])
        cur = np.stack([d.states(iu, iv) for d in dags])
        if prev_opts is not None:
            changed = (opts != prev_opts).any(axis=(0, 2)) | (cur != prev_cur).any(axis=0)
            for p in np.flatnonzero(changed):
                cache.pop(int(p), None)
        prev_opts, prev_cur = opts, cur
        old = pair_penalty(cur, active, prior, cost, k)
        top = np.where(active, opts.max(axis=2), 0.0)
        moved = opts.copy()
        moved[tk, tp, cur] = -np.inf
        second = moved.max(axis=2)
        gap = np.where(active, top - second, np.inf).min(axis=0)
        upper = top.sum(axis=0) - gap - lam * old
        search = (lam, prior, cost, stats)
        incumbent, choice = _best_move(opts, cur, active, old, upper, cache, banned, search)
        if choice is None:
            break
        if incumbent <= EPS:
            if worse >= tabu_length:
                break
            worse += 1
        p, states = choice
        _list_tabu(tabu, banned, cache, (p, tuple(cur[:, p].tolist())), tabu_length)
        for t, d in enumerate(dags):
            if active[t, p] and states[t] != cur[t, p]:
                d.set_pair(iu[p], iv[p], int(states[t]))
        score = configuration_score(dags, lam, prior, cost)  # not summed: δ = 1 adds ±1e9
        if score > best + EPS:
            best, best_adjs, worse = score, [d.adj.copy() for d in dags], 0
    for d, a in zip(dags, best_adjs, strict=True):
        if not np.array_equal(d.adj, a):
            d.set_adjacency(a)


def _best_move(opts, cur, active, old, upper, cache: dict, banned: dict, search: tuple):
    """``(value, (pair, states))`` of the best move not in the tabu list (``(-inf, None)``
    when there is none): pairs in decreasing ``upper`` bound, each pair's exact best move
    from ``cache`` or branch and bound (``search``: ``(lam, prior, cost, stats)``), stopping
    at the first pair whose bound is not above the best move found."""
    lam, prior, cost, stats = search
    incumbent, choice = -np.inf, None
    for p in np.argsort(-upper, kind="stable"):
        if upper[p] <= incumbent:
            break
        p = int(p)
        if p not in cache:
            exclude = {tuple(cur[:, p].tolist())} | banned.get(p, set())
            cache[p] = branch_and_bound(
                opts[:, p, :],
                cur[:, p],
                active[:, p],
                lam,
                prior,
                cost,
                -np.inf,
                stats,
                old[p],
                exclude,
            )
        value, states = cache[p]
        if states is not None and value > incumbent:
            incumbent, choice = value, (p, states)
    return incumbent, choice


def _list_tabu(tabu: deque, banned: dict, cache: dict, entry: tuple, tabu_length: int) -> None:
    """Put ``entry`` (pair, previous states) on the tabu list, ban its states for its pair,
    and drop the oldest entry beyond ``tabu_length``; the cached best moves of the pairs
    whose bans changed are dropped."""
    p = entry[0]
    tabu.append(entry)
    banned.setdefault(p, set()).add(entry[1])
    if len(tabu) > tabu_length:
        q, st = tabu.popleft()
        if (q, st) not in tabu:
            banned[q].discard(st)
        cache.pop(q, None)
    cache.pop(p, None)


def _perturb(dags: list[TaskDag], n_moves: int, rng: np.random.Generator) -> None:
    """``n_moves`` random pair changes, each put in every task where it is legal (the same new
    state in all tasks, so a restart does not start by paying for edits it made up)."""
    iu, iv = np.triu_indices(dags[0].n, 1)
    for _ in range(n_moves):
        for _attempt in range(20):
            p = int(rng.integers(len(iu)))
            s = int(rng.integers(3))
            done = False
            for d in dags:
                if not d.pair_ok[iu[p], iv[p]] or d.pair_state(iu[p], iv[p]) == s:
                    continue
                if np.isfinite(d.options(iu[p : p + 1], iv[p : p + 1])[0, s]):
                    d.set_pair(iu[p], iv[p], s)
                    done = True
            if done:
                break


def multitask_climb(
    dags: list[TaskDag],
    lam: float,
    prior: str = "paired",
    reversal: int = 2,
    tabu_length: int = 100,
    restarts: int = 0,
    starts=(),
    random_state=0,
    stats: dict | None = None,
) -> float:
    """Best configuration found by the configuration search (§2.3.2) with a tabu list and random
    restarts (§2.3.4), from the tasks' current DAGs and from each extra start in ``starts`` (one
    adjacency list per start, e.g. the identical structure, so that as δ -> 1 the search can reach
    the identical optimum instead of having to merge the single-task structures arc by arc).
    Each climb is greedy branch-and-bound steps, then the tabu walk, then greedy steps again; a
    restart applies about n/4 random shared pair changes to the best configuration so far and
    climbs again. Leaves the DAGs on the best configuration and returns its score (log Eq. 2.5)."""
    rng = np.random.default_rng(random_state)
    cost = edit_costs(reversal)
    lam = lam if len(dags) > 1 else 0.0

    def climb() -> float:
        multitask_search(dags, lam, prior, reversal, stats=stats)
        if tabu_length:
            _tabu_walk(dags, lam, prior, cost, tabu_length, stats)
            multitask_search(dags, lam, prior, reversal, stats=stats)
        return configuration_score(dags, lam, prior, cost)

    best = climb()
    best_adjs = [d.adj.copy() for d in dags]
    for start in starts:
        for d, a in zip(dags, start, strict=True):
            d.set_adjacency(np.asarray(a, dtype=bool) & d.pair_ok)
        value = climb()
        if value > best + EPS:
            best, best_adjs = value, [d.adj.copy() for d in dags]
    n_moves = max(2, int(dags[0].present.sum()) // 4)
    for _ in range(restarts):
        for d, a in zip(dags, best_adjs, strict=True):
            d.set_adjacency(a)
        _perturb(dags, n_moves, rng)
        value = climb()
        if value > best + EPS:
            best, best_adjs = value, [d.adj.copy() for d in dags]
    for d, a in zip(dags, best_adjs, strict=True):
        if not np.array_equal(d.adj, a):
            d.set_adjacency(a)
    return best
