"""MultitaskStructureLearner (dissertation §2.3) and task selection (§2.4): scikit-learn style
front ends over the BDeu scores, the single-task and multitask searches and the networks."""

from __future__ import annotations

import numbers

import numpy as np
import pandas as pd

from ._dag import TaskDag
from ._data import Encoding, encode_tasks
from ._multitask import PRIORS, log_keep, multitask_climb, multitask_search
from ._network import DiscreteNetwork
from ._score import BDeu
from ._search import hill_climb, learn_identical

__all__ = [
    "DEFAULT_PENALTY_GRID",
    "MultitaskStructureLearner",
    "adjacency_edit_distance",
    "select_tasks",
]

DEFAULT_PENALTY_GRID = (0.0, 0.9, 0.99, 0.999, 1 - 1e-5, 1 - 1e-8, 1.0)
"""δ values the wrapper tries (1 - δ spread on a log scale, as in Figures 2.2-2.3): 0 is
single-task learning, 1 forces identical structures."""

MEASURES = ("direct", "indirect")


def _check_int(name: str, value, low: int, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def _check_delta(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value <= 1:
        raise ValueError(f"{name} must be a float in [0, 1] (δ of Eq. 2.7-2.8), got {value!r}")
    return float(value)


class MultitaskStructureLearner:
    """Learn one Bayes-net structure per task, jointly (Niculescu-Mizil & Caruana, dissertation
    ch. 2).

    Parameters
    ----------
    prior : "paired" (Eq. 2.8, the chapter's default), "edit" (Eq. 2.7), or "identical" (one
        structure for all tasks through the task node TSK, §2.3.1; needs equal variable sets).
        TSK's BDeu uses the equivalent sample size times the number of tasks: with TSK in every
        parent set that is exactly the sum of the tasks' own BDeu scores, so "identical" and
        the multitask objective at δ = 1 score structures the same way.
    penalty : δ in [0, 1] charged per edit between the tasks' structures, or "auto" to choose it
        from ``penalty_grid`` by mean log likelihood on a validation split of
        ``validation_fraction`` of each task's rows (§2.3.4's wrapper). 0 is single-task
        learning, 1 forces identical structures.
    restarts : random restarts of the single-task and identical-structure tabu hill climbing.
    multitask_restarts : random restarts of the multitask configuration search (None: as
        ``restarts``). The multitask search starts from the single-task structures and, when all
        tasks have the same variables, from the identical structure too, and keeps the better.
    reversal_cost : edits a reversed arc counts for in the prior (2: "double", 1: "single").
    equivalent_sample_size : BDeu's equivalent sample size.
    tabu_length : length of the tabu list, and the number of non-improving moves allowed in a row
        (100, pgmpy's default tabu length; a shorter one is faster and scores lower).
    max_parents : optional bound on the parents of a node (None: unbounded).
    pseudocount : Dirichlet pseudo-count per CPT cell for the parameters (Bayesian updating).
    random_state : seed of the restarts and the validation split.

    Attributes (after ``fit``)
    --------------------------
    structures_ : one list of (parent, child) arcs per task.
    networks_ : one fitted ``DiscreteNetwork`` per task (``.to_pgmpy()`` converts it).
    penalty_ : δ used; ``validation_scores_``: {δ: mean validation log likelihood} when "auto".
    variables_ : the variables per task; ``search_steps_``: branch-and-bound nodes the
        multitask search visited (0 for single-task and identical learning).
    encoding_, adjacencies_ : the variables and states of all tasks and, per task, the boolean
        adjacency matrix over ``encoding_.variables``.
    """

    def __init__(
        self,
        prior: str = "paired",
        penalty: float | str = "auto",
        restarts: int = 10,
        multitask_restarts: int | None = None,
        reversal_cost: int = 2,
        penalty_grid=None,
        validation_fraction: float = 0.05,
        equivalent_sample_size: float = 1.0,
        tabu_length: int = 100,
        max_parents: int | None = None,
        pseudocount: float = 1.0,
        random_state: int | None = 0,
    ):
        self.prior = prior
        self.penalty = penalty
        self.restarts = restarts
        self.multitask_restarts = multitask_restarts
        self.reversal_cost = reversal_cost
        self.penalty_grid = penalty_grid
        self.validation_fraction = validation_fraction
        self.equivalent_sample_size = equivalent_sample_size
        self.tabu_length = tabu_length
        self.max_parents = max_parents
        self.pseudocount = pseudocount
        self.random_state = random_state

    # ------------------------------------------------------------------ checks
    def _validate(self) -> None:
        valid = (*PRIORS, "identical")
        if self.prior not in valid:
            raise ValueError(f"prior={self.prior!r} is not valid; choose one of {valid}")
        if not (isinstance(self.penalty, str) and self.penalty == "auto"):
            _check_delta("penalty", self.penalty)
        _check_int("restarts", self.restarts, 0)
        _check_int("multitask_restarts", self.multitask_restarts, 0, allow_none=True)
        _check_int("tabu_length", self.tabu_length, 0)
        _check_int("max_parents", self.max_parents, 1, allow_none=True)
        if self.reversal_cost not in (1, 2):
            raise ValueError(f"reversal_cost must be 1 or 2, got {self.reversal_cost!r}")
        for name in ("equivalent_sample_size", "pseudocount"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or value <= 0:
                raise ValueError(f"{name} must be a positive number, got {value!r}")
        vf = self.validation_fraction
        if isinstance(vf, bool) or not isinstance(vf, numbers.Real) or not 0 < vf < 1:
            raise ValueError(f"validation_fraction must be in (0, 1), got {vf!r}")
        if self.penalty_grid is not None:
            grid = list(self.penalty_grid)
            if not grid:
                raise ValueError("penalty_grid is empty; pass δ values in [0, 1] or None")
            for d in grid:
                _check_delta("penalty_grid entries", d)

    # ------------------------------------------------------------------ pieces
    def _dag(self, scorer: BDeu, present, adjacency=None) -> TaskDag:
        return TaskDag(scorer, present, adjacency, self.max_parents)

    def _single_task(self, scorers, present) -> list[np.ndarray]:
        return [
            hill_climb(self._dag(s, p), self.restarts, self.tabu_length, self.random_state)
            for s, p in zip(scorers, present, strict=True)
        ]

    def _identical(self, codes, cards, present) -> list:
        """The identical-structure start of the multitask search (empty when the tasks' variable
        sets differ, where TSK pooling does not apply)."""
        if len(codes) < 2 or any(not np.array_equal(p, present[0]) for p in present):
            return []
        adj = learn_identical(
            codes,
            cards,
            self.equivalent_sample_size * len(codes),
            self.restarts,
            self.tabu_length,
            self.max_parents,
            self.random_state,
        )
        return [[adj.copy() for _ in codes]]

    def _multitask(self, scorers, present, starts, delta, extra=()) -> tuple[list, int]:
        dags = [self._dag(s, p, a) for s, p, a in zip(scorers, present, starts, strict=True)]
        stats: dict = {}
        if delta > 0 and len(dags) > 1:
            restarts = self.restarts if self.multitask_restarts is None else self.multitask_restarts
            multitask_climb(
                dags,
                log_keep(delta),
                self.prior,
                self.reversal_cost,
                self.tabu_length,
                restarts,
                extra,
                self.random_state,
                stats,
            )
        return [d.adj.copy() for d in dags], int(stats.get("nodes", 0))

    def _networks(self, enc: Encoding, adjs, codes) -> list[DiscreteNetwork]:
        nets = []
        for adj, c, present in zip(adjs, codes, enc.present, strict=True):
            idx = np.flatnonzero(present)
            nets.append(
                DiscreteNetwork.fit(
                    [enc.variables[i] for i in idx],
                    enc.states,
                    adj[np.ix_(idx, idx)],
                    c[:, idx],
                    self.pseudocount,
                )
            )
        return nets

    # ------------------------------------------------------------------ fit
    def fit(self, dfs) -> MultitaskStructureLearner:
        """Learn the structures and parameters of every task; ``dfs``: one DataFrame per task,
        discrete columns, no missing values; variable sets may overlap only partly."""
        self._validate()
        enc = encode_tasks(dfs)
        k = len(enc.codes)
        cards = enc.cards
        ess = self.equivalent_sample_size
        self.validation_scores_ = None
        self.search_steps_ = 0
        if self.prior == "identical":
            if any(not np.array_equal(p, enc.present[0]) for p in enc.present):
                raise ValueError(
                    "prior='identical' needs every task to have the same variables (§2.3.1); "
                    "use prior='paired' with penalty=1.0 for partly overlapping tasks"
                )
            adj = learn_identical(
                enc.codes,
                cards,
                ess * k,
                self.restarts,
                self.tabu_length,
                self.max_parents,
                self.random_state,
            )
            adjs = [adj.copy() for _ in range(k)]
            self.penalty_ = 1.0
        elif isinstance(self.penalty, str):
            rng = np.random.default_rng(self.random_state)
            train, valid = [], []
            for t, c in enumerate(enc.codes):
                n_val = max(1, round(self.validation_fraction * len(c)))
                if len(c) - n_val < 2:
                    raise ValueError(
                        f"task {t} has {len(c)} rows, too few for penalty='auto' to hold out a "
                        "validation split; pass a float penalty"
                    )
                perm = rng.permutation(len(c))
                valid.append(c[perm[:n_val]])
                train.append(c[perm[n_val:]])
            scorers = [BDeu(c, cards, ess) for c in train]
            starts = self._single_task(scorers, enc.present)
            extra = self._identical(train, cards, enc.present)
            grid = DEFAULT_PENALTY_GRID if self.penalty_grid is None else self.penalty_grid
            scores, results = {}, {}
            for delta in grid:
                adjs_d, steps = self._multitask(scorers, enc.present, starts, float(delta), extra)
                nets = self._networks(enc, adjs_d, train)
                scores[float(delta)] = float(
                    np.mean(
                        [
                            n.log_prob(v[:, _idx(enc, t)]).mean()
                            for t, (n, v) in enumerate(zip(nets, valid, strict=True))
                        ]
                    )
                )
                results[float(delta)] = (adjs_d, steps)
            best = max(scores, key=lambda d: (scores[d], -d))
            adjs, self.search_steps_ = results[best]
            self.penalty_ = best
            self.validation_scores_ = scores
        else:
            scorers = [BDeu(c, cards, ess) for c in enc.codes]
            starts = self._single_task(scorers, enc.present)
            self.penalty_ = float(self.penalty)
            extra = self._identical(enc.codes, cards, enc.present) if self.penalty_ > 0 else []
            adjs, self.search_steps_ = self._multitask(
                scorers, enc.present, starts, self.penalty_, extra
            )
        self.encoding_ = enc
        self.adjacencies_ = [a.copy() for a in adjs]
        self.networks_ = self._networks(enc, adjs, enc.codes)
        self.structures_ = [n.edges for n in self.networks_]
        self.variables_ = [n.variables for n in self.networks_]
        return self

    # ------------------------------------------------------------------ use
    def _check_fitted(self) -> None:
        if not hasattr(self, "networks_"):
            raise ValueError("this MultitaskStructureLearner is not fitted yet; call fit first")

    def log_likelihood(self, dfs) -> np.ndarray:
        """Mean log likelihood per row (nats) of each task's frame under its network: an array
        with one entry per task. Frames must hold the task's variables (others are ignored)."""
        self._check_fitted()
        if isinstance(dfs, pd.DataFrame) or not isinstance(dfs, list | tuple):
            raise TypeError(f"dfs must be a list of DataFrames, got {type(dfs).__name__}")
        if len(dfs) != len(self.networks_):
            raise ValueError(
                f"dfs has {len(dfs)} frames but the learner was fitted on "
                f"{len(self.networks_)} tasks; pass one frame per task"
            )
        out = []
        for t, (net, df) in enumerate(zip(self.networks_, dfs, strict=True)):
            if not isinstance(df, pd.DataFrame):
                raise TypeError(f"dfs[{t}] must be a DataFrame, got {type(df).__name__}")
            if df.isna().any().any():
                col = df.columns[df.isna().any()][0]
                raise ValueError(f"dfs[{t}], column {col!r} has missing values; pass complete rows")
            out.append(float(net.log_prob(net.encode(df)).mean()))
        return np.array(out)


def adjacency_edit_distance(a: np.ndarray, b: np.ndarray) -> int:
    """Arc additions, deletions and reversals (one edit each) between the DAGs with boolean
    adjacency matrices ``a`` and ``b`` over the same variables: a pair counts once when its
    skeleton differs or when both have its arc, in opposite directions (whichever index is the
    parent, so the count does not depend on the variables' order)."""
    a, b = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    diff = (a | a.T) != (b | b.T)
    rev = (a & b.T) & ~(a & b)
    return int(np.triu(diff | rev | rev.T, 1).sum())


def _idx(enc: Encoding, t: int) -> np.ndarray:
    return np.flatnonzero(enc.present[t])


def select_tasks(
    principal: pd.DataFrame,
    candidates,
    measure: str = "direct",
    n: int | None = None,
    penalty: float = 0.9,
    prior: str = "paired",
    restarts: int = 10,
    folds: int = 10,
    equivalent_sample_size: float = 1.0,
    random_state: int | None = 0,
    return_scores: bool = False,
):
    """Indices of the ``n`` candidate tasks most related to ``principal`` (all when None), most
    related first (§2.4).

    ``measure="direct"`` (§2.4.1): structures learnt by multitask learning with a small penalty
    (``penalty``, 0.9 in the chapter) from the single-task ones; relatedness is minus the edit
    distance between the principal's structure and the candidate's (over shared variables).
    Each candidate is learnt together with the principal (k = 2) rather than all at once.
    ``measure="indirect"`` (§2.4.2): the candidate's single-task structure (restricted to the
    principal's variables) gets parameters from the principal's data; relatedness is the mean
    log likelihood over ``folds``-fold cross-validation on the principal's rows.
    With ``return_scores=True`` returns (indices, relatedness of every candidate)."""
    if measure not in MEASURES:
        raise ValueError(f"measure={measure!r} is not valid; choose one of {MEASURES}")
    if not isinstance(candidates, list | tuple) or not candidates:
        raise ValueError("candidates must be a non-empty list of DataFrames (one per task)")
    _check_int("n", n, 0, allow_none=True)
    _check_int("folds", folds, 2)
    penalty = _check_delta("penalty", penalty)
    enc = encode_tasks([principal, *candidates], arg="[principal, *candidates]")
    cards = enc.cards
    scorers = [BDeu(c, cards, equivalent_sample_size) for c in enc.codes]
    helper = MultitaskStructureLearner(prior=prior, restarts=restarts, random_state=random_state)
    stl = helper._single_task(scorers, enc.present)
    scores = np.zeros(len(candidates))
    p_idx = np.flatnonzero(enc.present[0])
    if measure == "direct":
        for c in range(1, len(enc.codes)):
            dags = [TaskDag(scorers[t], enc.present[t], stl[t]) for t in (0, c)]
            multitask_search(dags, log_keep(penalty), prior, 2)
            shared = enc.present[0] & enc.present[c]
            a, b = (d.adj[np.ix_(shared, shared)] for d in dags)
            scores[c - 1] = -adjacency_edit_distance(a, b)
    else:
        rng = np.random.default_rng(random_state)
        rows = enc.codes[0][:, p_idx]
        fold = rng.permutation(len(rows)) % folds
        names = [enc.variables[i] for i in p_idx]
        for c in range(1, len(enc.codes)):
            adj = stl[c][np.ix_(p_idx, p_idx)] & np.outer(
                enc.present[c][p_idx], enc.present[c][p_idx]
            )
            ll = []
            for f in range(folds):
                net = DiscreteNetwork.fit(names, enc.states, adj, rows[fold != f])
                ll.append(net.log_prob(rows[fold == f]).mean())
            scores[c - 1] = float(np.mean(ll))
    order = np.argsort(-scores, kind="stable")
    chosen = order if n is None else order[:n]
    chosen = [int(i) for i in chosen]
    return (chosen, scores) if return_scores else chosen
