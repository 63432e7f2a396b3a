"""Multitask Bayes-net structure learning on the protocol of dissertation §2.3.4 and §2.4.3,
one process, resumable: every finished cell (problem, P_del, rows per task, trial) is appended
to a jsonl file, and a later run skips the cells already there.

    python -m benchmarks.bench_bayesnet --part fig25 [--trials 10] [--restarts 5]
    python -m benchmarks.bench_bayesnet --part fig27 | --part select
    python -m benchmarks.bench_bayesnet --report        # tables from the jsonl into the docs
    python -m benchmarks.bench_bayesnet --quick         # a small check, nothing written

Problems (five related tasks each, rebuilt per trial from the ALARM and INSURANCE networks that
pgmpy ships): ALARM, INSURANCE (arcs deleted with probability P_del, deleted parent integrated
out), ALARM-IND, INSURANCE-IND (random parameters per task first), ALARM-COMP (components
changed). Learners per cell: single-task (STL), identical structures through the task node
(IDENTICAL, BDeu at k·α: the δ = 1 objective; IDENTICAL-α at α as a second reading), pooled
data (one structure and one parameter set from all tasks' rows, POOLED), and multitask learning
with the Paired and the Edit priors, δ chosen on validation likelihood (5% of each task's rows,
the chapter's wrapper; never on test). STL and the IDENTICAL baselines use all rows, as in the
chapter. Results: edit distance to the true structures (reversal = 1 edit) and empirical KL on
held-out rows, averaged over the five tasks; tables give mean ± s.e. over trials. The seed of a
cell is its trial number, and the search does a fixed amount of work (restarts, tabu lengths),
so results do not depend on the machine's load.
"""

from __future__ import annotations

import argparse
import platform
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from benchmarks._record import append_row, git_commit, load_results, provenance, versions
from benchmarks._report import ROOT, write_blocks
from benchmarks._stats import standard_error
from ensel.bayesnet import edit_distance, select_tasks
from ensel.bayesnet._dag import TaskDag
from ensel.bayesnet._multitask import log_keep, multitask_climb
from ensel.bayesnet._network import DiscreteNetwork
from ensel.bayesnet._score import BDeu
from ensel.bayesnet._search import hill_climb, learn_identical
from ensel.bayesnet.problems import alarm_comp_tasks, load_network, related_tasks

RESULTS = ROOT / "benchmarks" / "results" / "bayesnet.jsonl"
GRID = (0.9, 0.99, 0.999, 1 - 1e-5, 1 - 1e-8, 1.0)
PRIORS = ("paired", "edit")
SECTION = "## Multitask Bayes-net structure learning (dissertation ch. 2)"


@dataclass
class Search:
    """The fixed amount of search of every learner (part of a cell's key)."""

    restarts: int = 5
    tabu: int = 100
    mt_restarts: int = 0
    mt_tabu: int = 10


@dataclass
class Cell:
    part: str
    problem: str
    p_del: float
    size: int
    trial: int
    search: Search = field(default_factory=Search)
    test_rows: int = 10_000
    n_integrate: int = 50_000
    grid: str = ""

    def key(self) -> str:
        s = self.search
        return (
            f"{self.part}|{self.problem}|{self.p_del}|{self.size}|{self.trial}|"
            f"r{s.restarts}t{s.tabu}m{s.mt_restarts}u{s.mt_tabu}|{self.test_rows}|{self.grid}"
        )


# --------------------------------------------------------------------------- problems
def make_tasks(problem: str, p_del: float, trial: int, n_integrate: int, bases: dict):
    """The five true networks of one trial (a new draw of the perturbations per trial)."""
    if problem == "ALARM-COMP":
        return alarm_comp_tasks(bases["ALARM"], random_state=trial)
    base = bases[problem.removesuffix("-IND")]
    return related_tasks(
        base, 5, p_del, problem.endswith("-IND"), n_integrate, random_state=1000 + trial
    )


# --------------------------------------------------------------------------- measures
def _kl(true_nets, nets, tests) -> float:
    """Empirical KL of the learnt networks from the true ones on test rows, mean over tasks."""
    pairs = zip(true_nets, nets, tests, strict=True)
    return float(np.mean([np.mean(t.log_prob(c) - n.log_prob(c)) for t, n, c in pairs]))


def _edit(true_nets, adjs, names) -> float:
    """Edit distance of the learnt structures to the true ones, mean over tasks."""
    pairs = zip(adjs, true_nets, strict=True)
    return float(np.mean([edit_distance(_edges(a, names), t) for a, t in pairs]))


def _edges(adj, names):
    return [(names[u], names[v]) for u, v in zip(*np.nonzero(adj), strict=True)]


def _fit_nets(names, states, adjs, codes):
    return [DiscreteNetwork.fit(names, states, a, c) for a, c in zip(adjs, codes, strict=True)]


def _single(scorers, search: Search, trial: int) -> list:
    """Each task's single-task structure, searched alone with ``search``'s effort."""
    present = np.ones(len(scorers[0].cards), dtype=bool)
    return [
        hill_climb(TaskDag(sc, present), search.restarts, search.tabu, random_state=[trial, i])
        for i, sc in enumerate(scorers)
    ]


def _states(net: DiscreteNetwork) -> dict:
    return {v: list(net.states[v]) for v in net.variables}


# --------------------------------------------------------------------------- one cell
def run_cell(cell: Cell, bases: dict, priors=PRIORS, grid=GRID) -> dict:
    """Every learner on one trial of one problem; the δ sweep of each prior is kept (validation
    log likelihood, edit distance, KL per δ) so that the tables can also show Figs. 2.2-2.4."""
    s = cell.search
    truth = make_tasks(cell.problem, cell.p_del, cell.trial, cell.n_integrate, bases)
    names, states = truth[0].variables, _states(truth[0])
    cards = truth[0].cards
    k = len(truth)
    seed = 7919 * cell.trial + cell.size
    codes = [t.sample_codes(cell.size, random_state=[seed, i]) for i, t in enumerate(truth)]
    tests = [
        t.sample_codes(cell.test_rows, random_state=[seed, 99, i]) for i, t in enumerate(truth)
    ]
    out: dict = {"key": cell.key(), **asdict(cell), "methods": {}, "sweep": []}
    scorers = [BDeu(c, cards) for c in codes]
    present = np.ones(len(names), dtype=bool)

    def record(method, adjs, nets, **extra):
        measured = {"edit": _edit(truth, adjs, names), "kl": _kl(truth, nets, tests)}
        out["methods"][method] = {**measured, **extra}

    # single-task, all rows
    stl = _single(scorers, s, cell.trial)
    stl_bdeu = sum(sc.total(a) for sc, a in zip(scorers, stl, strict=True))
    record("STL", stl, _fit_nets(names, states, stl, codes), train_bdeu=stl_bdeu)
    # identical structures through TSK, at k·α (the δ = 1 objective) and at α
    for method, ess in (("IDENTICAL", float(k)), ("IDENTICAL-a1", 1.0)):
        adj = learn_identical(codes, cards, ess, s.restarts, s.tabu, None, cell.trial)
        nets = _fit_nets(names, states, [adj] * k, codes)
        record(method, [adj] * k, nets, train_bdeu=sum(sc.total(adj) for sc in scorers))
    # pooled data: one structure and one parameter set from all rows
    pooled = np.vstack(codes)
    padj = hill_climb(TaskDag(BDeu(pooled, cards), present), s.restarts, s.tabu, cell.trial)
    pnet = DiscreteNetwork.fit(names, states, padj, pooled)
    record("POOLED", [padj] * k, [pnet] * k)

    methods, sweep = _multitask(cell, truth, codes, tests, seed, priors, grid)
    out["methods"].update(methods)
    out["sweep"] += sweep
    return out


def _multitask(cell: Cell, truth, codes, tests, seed: int, priors, grid) -> tuple[dict, list]:
    """Multitask learning with each prior: 5% validation rows per task, structures on the rest,
    parameters on all rows; δ chosen by validation likelihood over ``(0, *grid)``. The chosen
    method per prior and every δ's row of the sweep."""
    s = cell.search
    names, states, cards, k = truth[0].variables, _states(truth[0]), truth[0].cards, len(truth)
    present = np.ones(len(names), dtype=bool)
    methods, sweep = {}, []
    rng = np.random.default_rng([seed, 5])
    train, valid = [], []
    for c in codes:
        n_val = max(1, round(0.05 * len(c)))
        perm = rng.permutation(len(c))
        valid.append(c[perm[:n_val]])
        train.append(c[perm[n_val:]])
    tscorers = [BDeu(c, cards) for c in train]
    tstl = _single(tscorers, s, cell.trial)
    tident = learn_identical(train, cards, float(k), s.restarts, s.tabu, None, cell.trial)
    for prior in priors:
        rows = []
        for delta in (0.0, *grid):
            dags = [TaskDag(sc, present, a) for sc, a in zip(tscorers, tstl, strict=True)]
            if delta > 0:
                climb = (s.mt_tabu, s.mt_restarts, [[tident] * k], cell.trial)
                multitask_climb(dags, log_keep(delta), prior, 2, *climb)
            adjs = [d.adj.copy() for d in dags]
            vnets = _fit_nets(names, states, adjs, train)
            vll = float(np.mean([n.log_prob(v).mean() for n, v in zip(vnets, valid, strict=True)]))
            nets = _fit_nets(names, states, adjs, codes)
            bdeu = sum(sc.total(a) for sc, a in zip(tscorers, adjs, strict=True))
            edit, kl = _edit(truth, adjs, names), _kl(truth, nets, tests)
            rows.append({"prior": prior, "delta": delta, "valid_ll": vll, "train_bdeu": bdeu,
                         "edit": edit, "kl": kl})  # fmt: skip
        best = max(rows, key=lambda r: (r["valid_ll"], -r["delta"]))
        methods[f"MTL-{prior.capitalize()}"] = {k: best[k] for k in ("edit", "kl", "delta")}
        sweep += rows
    return methods, sweep


# --------------------------------------------------------------------------- task selection
class _Principal:
    """The principal task's structure learnt with a set of candidate tasks (task selection,
    §2.4.3): each task's scorer and single-task start on a split of its rows, made once per
    split, and the multitask search over δ with the Paired prior."""

    def __init__(self, cell: Cell, principal, codes, perm, test, grid) -> None:
        self.search, self.trial, self.grid = cell.search, cell.trial, grid
        self.principal, self.codes, self.perm, self.test = principal, codes, perm, test
        self.names, self.states = principal.variables, _states(principal)
        self.cards = principal.cards
        self.present = np.ones(len(self.names), dtype=bool)
        self.fitted: dict = {}

    def split(self, t: int, n_val: int, skip: int = 0):
        """Task ``t``'s training and validation rows: ``n_val`` rows after the first ``skip``
        of its permutation validate, the rest train."""
        c, p = self.codes[t], self.perm[t]
        return c[p[skip + n_val :]], c[p[skip : skip + n_val]]

    def single(self, t: int, n_val: int, skip: int):
        """Task ``t``'s scorer and single-task structure on its training split, once per split
        (the learn calls share most tasks; the search is seeded, so this only saves time; the
        scorer keeps its local scores for every later search on the same rows)."""
        key = (t, n_val, skip)
        if key not in self.fitted:
            s = self.search
            sc = BDeu(self.split(t, n_val, skip)[0], self.cards)
            start = hill_climb(TaskDag(sc, self.present), s.restarts, s.tabu, [self.trial, t])
            self.fitted[key] = (sc, start)
        return self.fitted[key]

    def learn(self, tasks, n_val: int, skip: int = 0):
        """Principal's structure for each δ of the grid (and δ = 0): the one validation picks
        and the one with the lowest test KL."""
        train, valid = self.split(0, n_val, skip)
        scs, starts = zip(*(self.single(t, n_val, skip) for t in tasks), strict=True)
        names, states, test = self.names, self.states, self.test
        res = []
        for delta in (0.0, *self.grid) if len(tasks) > 1 else (0.0,):
            dags = [TaskDag(sc, self.present, a) for sc, a in zip(scs, starts, strict=True)]
            if delta > 0:
                climb = (log_keep(delta), "paired", 2, self.search.mt_tabu, 0, (), self.trial)
                multitask_climb(dags, *climb)
            adj = dags[0].adj.copy()
            vll = float(DiscreteNetwork.fit(names, states, adj, train).log_prob(valid).mean())
            net = DiscreteNetwork.fit(names, states, adj, self.codes[0])
            kl = float(np.mean(self.principal.log_prob(test) - net.log_prob(test)))
            edit = edit_distance(_edges(adj, names), self.principal)
            res.append({"delta": delta, "valid_ll": vll, "kl": kl, "edit": edit, "adj": adj})
        chosen = max(res, key=lambda r: (r["valid_ll"], -r["delta"]))
        oracle = min(res, key=lambda r: r["kl"])
        return chosen, oracle


def run_selection(cell: Cell, bases: dict, ns=(0, 1, 2, 4, 8, 15), grid=(0.99, 0.999, 1 - 1e-5)):
    """§2.4.3 on ALARM-COMP: the original ALARM as principal, the fifteen ALARM-COMP tasks as
    candidates. Rankings by the direct, the indirect and the true measure; the principal learnt
    (Paired prior) with its N most related tasks, δ chosen on 5% validation rows and, as the
    chapter's lower group of lines, the best δ on test KL ("optimal"). Fig. 2.11's lines: all
    tasks (10% validation for δ), task selection (5% to pick N, 5% for δ), two tasks, and the
    optimal N."""
    s = cell.search
    pool = alarm_comp_tasks(bases["ALARM"], changed="all", random_state=cell.trial)
    principal, extras = pool[0], pool[1:]
    names, states, cards = principal.variables, _states(principal), principal.cards
    seed = 7919 * cell.trial + cell.size + 1
    codes = [t.sample_codes(cell.size, random_state=[seed, i]) for i, t in enumerate(pool)]
    test = principal.sample_codes(cell.test_rows, random_state=[seed, 99])
    frames = [t.to_frame(c) for t, c in zip(pool, codes, strict=True)]
    options = {"restarts": s.restarts, "random_state": cell.trial}
    rank_direct, d_scores = select_tasks(
        frames[0], frames[1:], "direct", return_scores=True, **options
    )
    rank_indirect = select_tasks(frames[0], frames[1:], "indirect", **options)
    true_dist = [edit_distance(e, principal) for e in extras]
    rank_true = [int(i) for i in np.argsort(true_dist, kind="stable")]
    present = np.ones(len(names), dtype=bool)
    rng = np.random.default_rng([seed, 5])
    perm = [rng.permutation(len(c)) for c in codes]
    n5 = max(1, round(0.05 * cell.size))
    learn = _Principal(cell, principal, codes, perm, test, grid).learn
    # STL on all rows
    stl = hill_climb(TaskDag(BDeu(codes[0], cards), present), s.restarts, s.tabu, cell.trial)
    stl_net = DiscreteNetwork.fit(names, states, stl, codes[0])
    out = {
        "key": cell.key(),
        **asdict(cell),
        "stl": {
            "edit": edit_distance(_edges(stl, names), principal),
            "kl": float(np.mean(principal.log_prob(test) - stl_net.log_prob(test))),
        },
        "direct_distance": [float(-d) for d in d_scores],
        "true_distance": [float(d) for d in true_dist],
        "rankings": {"direct": rank_direct, "indirect": rank_indirect, "true": rank_true},
        "curves": [],
        "fig211": {},
    }
    for measure, rank in out["rankings"].items():
        for n in ns:
            tasks = [0, *[i + 1 for i in rank[:n]]]
            chosen, oracle = learn(tasks, n5)
            out["curves"].append({"measure": measure, "N": n, "valid": chosen, "optimal": oracle})
    # Fig. 2.11 (direct measure): all tasks with 10% validation for δ; two tasks; task selection
    # (5% picks N, a separate 5% picks δ); the optimal N (δ still on 5%)
    direct = [c for c in out["curves"] if c["measure"] == "direct"]
    out["fig211"]["all_tasks"] = learn([0, *[i + 1 for i in rank_direct]], 2 * n5)[0]["edit"]
    out["fig211"]["two_tasks"] = next(c["valid"]["edit"] for c in direct if c["N"] == 2)
    out["fig211"]["optimal_n"] = min(c["valid"]["edit"] for c in direct)
    first5 = codes[0][perm[0][:n5]]
    trials = []
    for n in ns:
        chosen, _ = learn([0, *[i + 1 for i in rank_direct[:n]]], n5, skip=n5)
        # N is picked by the log likelihood of the first 5% of the principal's rows, which no
        # learn(..., skip=n5) call trains on or picks δ with
        net = DiscreteNetwork.fit(names, states, chosen["adj"], codes[0][perm[0][2 * n5 :]])
        trials.append((float(net.log_prob(first5).mean()), -n, n, chosen["edit"]))
    best = max(trials)
    out["fig211"]["task_selection"] = best[3]
    out["fig211"]["task_selection_n"] = best[2]
    for c in out["curves"]:
        c["valid"].pop("adj", None)
        c["optimal"].pop("adj", None)
    return out


# --------------------------------------------------------------------------- io
def _meta(commit: str) -> dict:
    """What a cell's row records about its run: ``provenance()`` with the commit read once when
    the run started (the code it imported), and the versions the search depends on."""
    search = versions(("numpy", "scipy", "pgmpy"))
    return {**provenance(), "commit": commit, "python": platform.python_version(), **search}


PARTS = {
    "fig25": dict(
        problems=("ALARM", "ALARM-IND", "INSURANCE", "INSURANCE-IND", "ALARM-COMP"),
        p_dels=(0.05, 0.20),
        sizes=(250, 1000),
    ),
    "fig27": dict(problems=("ALARM-COMP",), p_dels=(0.0,), sizes=(250, 500, 1000, 2000, 4000)),
    "select": dict(problems=("ALARM-COMP-SELECT",), p_dels=(0.0,), sizes=(250, 500, 1000)),
}


def cells_of(part: str, trials: int, search: Search, args) -> list[Cell]:
    spec = PARTS[part]
    problems = spec["problems"]
    sizes = args.sizes or spec["sizes"]
    p_dels = args.p_del or spec["p_dels"]
    grid = ",".join(f"{d:.8g}" for d in args.grid) + "|" + ",".join(args.priors)
    out = []
    for trial in range(trials):  # trial-major: every cell gets its first trials first
        for size in sizes:
            for problem in problems:
                for p in p_dels if not problem.startswith("ALARM-COMP") else (0.0,):
                    out.append(Cell(part, problem, p, size, trial, search, grid=grid))
    # ALARM-COMP does not use P_del: one cell per size and trial
    seen, unique = set(), []
    for c in out:
        if c.key() not in seen:
            seen.add(c.key())
            unique.append(c)
    return unique


CHAPTER_FIG25 = (
    "Fig. 2.5 (text, 1,000 rows, P_del = 0.05, 50 trials): MTL has 10-54% fewer edits and 2-13% "
    "lower KL than STL (all .95 significant except KL on the -IND problems); against IDENTICAL, "
    "4-60% fewer incorrect arcs and 7-32% lower KL (all significant except edits on ALARM-IND); "
    "pooling is much worse on both measures except on ALARM, where its edit distance is about "
    "IDENTICAL's."
)
CHAPTER_FIG27 = (
    "Fig. 2.7 (text, ALARM-COMP, 250 to 16,000 rows, MTL with 5% of the rows to pick δ): the "
    "benefit of multitask learning is largest when data is scarce and diminishes as data grows; "
    "at the smaller sizes MTL needs about half as much data as STL for the same edit distance, "
    "and it saves less data in KL."
)
METHODS = ("STL", "IDENTICAL", "IDENTICAL-a1", "POOLED", "MTL-Paired", "MTL-Paired+0", "MTL-Edit")


def _ms(values) -> str:
    v = np.asarray(values, dtype=float)
    if len(v) < 2:
        return f"{v.mean():.2f}" if len(v) else "-"
    return f"{v.mean():.2f} ± {standard_error(v):.2f}"


def _paired(a, b) -> str:
    """Mean ± s.e. of the per-trial difference a - b, and how many s.e. from zero."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if len(d) < 2:
        return f"{d.mean():+.2f} (1 trial)" if len(d) else "-"
    se = standard_error(d)
    z = d.mean() / se if se > 0 else (np.inf * np.sign(d.mean()) if d.mean() else 0.0)
    return f"{d.mean():+.2f} ± {se:.2f} ({z:+.1f} s.e.)"


def _load(path) -> list[dict]:
    """The records, with the wrapper's choice re-derived from each stored sweep: "MTL-<Prior>"
    picks δ among the multitask penalties of the grid (δ > 0) by validation likelihood, and
    "MTL-<Prior>+0" also lets it pick δ = 0 (single-task learning on 95% of the rows), the
    choice recorded when the cell ran."""
    records = load_results(path)
    for r in records:
        for prior in PRIORS:
            rows = [x for x in r.get("sweep", []) if x["prior"] == prior]
            if not rows:
                continue
            name = f"MTL-{prior.capitalize()}"
            r["methods"][name + "+0"] = r["methods"][name]
            best = max(
                (x for x in rows if x["delta"] > 0), key=lambda x: (x["valid_ll"], -x["delta"])
            )
            r["methods"][name] = {"edit": best["edit"], "kl": best["kl"], "delta": best["delta"]}
    return records


def _groups(records, part):
    out: dict = {}
    for r in records:
        if r["part"] != part:
            continue
        s = r["search"]
        g = (r["problem"], r["p_del"], r["size"], s["restarts"], s["mt_tabu"], r.get("grid", ""))
        out.setdefault(g, []).append(r)
    return out


def _mtl(rs_list) -> str:
    """The multitask method a group of cells ran: "MTL-Paired" where every cell has it, else
    "MTL-Edit" (a group is one prior: the prior is part of its grid)."""
    for prior in PRIORS:
        name = f"MTL-{prior.capitalize()}"
        if all(name in r["methods"] for r in rs_list):
            return name
    return "MTL-Paired"


def _row(cells) -> str:
    """A markdown table row."""
    return "| " + " | ".join(map(str, cells)) + " |"


def _head(cells) -> list[str]:
    """A markdown table's header and rule."""
    return [_row(cells), _row(["---"] * len(cells))]


def report_lines(path) -> list[str]:
    """The chapter's tables from the cells in ``path``: the run's provenance, Fig. 2.5, the
    penalty sweep, Fig. 2.7, the restarts check and task selection."""
    records = _load(path)
    lines = []
    metas = [r["meta"] for r in records]
    if metas:
        loads = [m["load"][0] for m in metas]
        m0 = metas[-1]
        lines += [
            f"Results file `{path.relative_to(ROOT)}`: {len(records)} cells (each row names its "
            f"commit and date), one "
            f"process under `nice -n 19` on {m0['machine']} shared with other jobs (1-minute "
            f"load {min(loads):.1f}-{max(loads):.1f}); Python {m0['python']}, numpy "
            f"{m0['numpy']}, scipy {m0['scipy']}, pgmpy {m0['pgmpy']}. Mean ± standard error "
            "over trials; differences are paired by trial.",
            "",
        ]
    groups = _groups(records, "fig25")
    if groups:
        lines += [*_fig25_lines(groups), *_sweep_lines(groups)]
    return [*lines, *_fig27_lines(records), *_restarts_lines(records), *_select_lines(records)]


def _fig25_lines(groups) -> list[str]:
    """Fig. 2.5: edit distance and KL of every method per problem, MTL against the others."""
    lines = ["### Fig. 2.5: edit distance and KL per problem", "", CHAPTER_FIG25, ""]
    lines += _head(
        ["problem", "P_del", "rows/task", "restarts", "trials", *(f"{m} edit" for m in METHODS),
         "MTL - STL", "MTL - IDENTICAL", "MTL - POOLED"]
    )  # fmt: skip
    for (prob, p, size, rs, _mt, _grid), rs_list in sorted(groups.items()):
        m = {k: [r["methods"][k]["edit"] for r in rs_list if k in r["methods"]] for k in METHODS}
        mtl = m[_mtl(rs_list)]
        lines.append(
            _row([prob, f"{p:g}", size, rs, len(rs_list),
                  *(_ms(m[k]) if m[k] else "-" for k in METHODS),
                  *(_paired(mtl, m[k]) for k in ("STL", "IDENTICAL", "POOLED"))])
        )  # fmt: skip
    lines += ["", *_head(["problem", "P_del", "rows/task", *(f"{m} KL" for m in METHODS),
                          "MTL - STL", "MTL - IDENTICAL", "δ chosen"])]  # fmt: skip
    for (prob, p, size, _rs, _mt, _grid), rs_list in sorted(groups.items()):
        m = {k: [r["methods"][k]["kl"] for r in rs_list if k in r["methods"]] for k in METHODS}
        name = _mtl(rs_list)
        deltas = [r["methods"][name]["delta"] for r in rs_list]
        dtxt = ", ".join(f"{1 - d:.0e}" if d < 1 else "1" for d in deltas)
        lines.append(
            _row([prob, f"{p:g}", size, *(_ms(m[k]) if m[k] else "-" for k in METHODS),
                  _paired(m[name], m["STL"]), _paired(m[name], m["IDENTICAL"]), f"1-δ: {dtxt}"])
        )  # fmt: skip
    return lines


def _sweep_lines(groups) -> list[str]:
    """Figs. 2.2-2.4: edit distance for every δ of the grid and the δ = 1 check."""
    lines = [
        "",
        "### Penalty sweep (Figs. 2.2-2.4) and the δ = 1 check",
        "",
        "Edit distance for every δ of the grid (structures learnt on 95% of the rows, as in "
        "the wrapper; the δ = 1 column is the multitask search's answer to IDENTICAL, whose "
        "structure on the same 95% is its start), and the number of (trial, δ) results "
        "whose training BDeu falls below both ends (δ = 0 and δ = 1); the chapter's Figs. "
        "2.2-2.3 show the gain rising with δ and falling at δ = 1.",
        "",
    ]
    rows = []
    for (prob, p, size, _rs, _mt, _grid), rs_list in sorted(groups.items()):
        for prior in PRIORS:
            sw = [[x for x in r["sweep"] if x["prior"] == prior] for r in rs_list]
            sw = [x for x in sw if x]
            if not sw:
                continue
            deltas = [x["delta"] for x in sw[0]]
            cells = [_ms([x[i]["edit"] for x in sw]) for i in range(len(deltas))]
            below = 0
            for x in sw:
                lo = min(x[0]["train_bdeu"], x[-1]["train_bdeu"])
                below += sum(y["train_bdeu"] < lo - 1e-6 for y in x[1:-1])
            one = [x[-1]["edit"] for x in sw]
            ident = [r["methods"]["IDENTICAL"]["edit"] for r in rs_list][: len(one)]
            cells.append(_paired(one, ident) if deltas[-1] == 1.0 else "-")
            head = ["δ=0" if d == 0 else "δ=1" if d == 1 else f"1-δ={1 - d:.0e}" for d in deltas]
            rows.append((prob, p, size, prior, head, cells, below, len(sw)))
    if rows:
        lines += _head(["problem", "P_del", "rows/task", "prior", "trials", *rows[0][4],
                        "δ=1 - IDENTICAL", "below both ends"])  # fmt: skip
        for prob, p, size, prior, _h, cells, below, n in rows:
            lines.append(_row([prob, f"{p:g}", size, prior, n, *cells, below]))
    return lines


def _select_lines(records) -> list[str]:
    """Task selection (Figs. 2.10-2.12) per rows per task."""
    sel = [r for r in records if r["part"] == "select"]
    if not sel:
        return []
    lines = ["", "### Task selection (Figs. 2.10-2.12)", ""]
    by_size: dict = {}
    for r in sel:
        by_size.setdefault(r["size"], []).append(r)
    for size, rs in sorted(by_size.items()):
        ns = sorted({c["N"] for c in rs[0]["curves"]})
        lines += [
            f"Fig. 2.10 at {size} rows per task ({len(rs)} trials): principal's KL vs N.",
            "",
            *_head(["measure", "δ by", *(f"N={n}" for n in ns)]),
        ]
        for measure in ("direct", "indirect", "true"):
            for how in ("valid", "optimal"):
                curves = [c for r in rs for c in r["curves"] if c["measure"] == measure]
                vals = [_ms([c[how]["kl"] for c in curves if c["N"] == n]) for n in ns]
                lines.append(_row([measure, how, *vals]))
        stl = [r["stl"]["edit"] for r in rs]
        order = np.argsort(rs[0]["direct_distance"], kind="stable")
        lines += [
            "",
            f"Fig. 2.11 at {size} rows: edit-distance improvement over STL "
            f"(STL {_ms(stl)} edits): "
            + "; ".join(
                f"{k} {_ms([100 * (1 - r['fig211'][k] / r['stl']['edit']) for r in rs])}%"
                for k in ("all_tasks", "task_selection", "two_tasks", "optimal_n")
            )
            + ".",
            "",
            "Fig. 2.12 (trial 0): direct distance of the fifteen extra tasks, sorted: "
            + ", ".join(f"{d:.0f}" for d in sorted(rs[0]["direct_distance"]))
            + "; true distances in the same order: "
            + ", ".join(f"{rs[0]['true_distance'][i]:.0f}" for i in order)
            + ".",
            "",
        ]
    return lines


def _fig27_lines(records) -> list[str]:
    """Fig. 2.7: STL and MTL against rows per task on ALARM-COMP, with STL at twice the rows
    beside MTL (the chapter's "about half as much data")."""
    groups = _groups(records, "fig27")
    if not groups:
        return []
    lines = [
        "",
        "### Fig. 2.7: ALARM-COMP as the training set grows",
        "",
        CHAPTER_FIG27,
        "",
        *_head(
            "rows/task|restarts|trials|STL edit|MTL edit|MTL - STL edit|STL edit at 2x rows|"
            "IDENTICAL edit|STL KL|MTL KL|MTL - STL KL".split("|")
        ),
    ]
    stl_at = {(g[2], g[3]): [r["methods"]["STL"]["edit"] for r in rs] for g, rs in groups.items()}
    for (_prob, _p, size, rs, _mt, _grid), rs_list in sorted(groups.items()):
        name = _mtl(rs_list)
        e = {k: [r["methods"][k]["edit"] for r in rs_list] for k in ("STL", name, "IDENTICAL")}
        kl = {k: [r["methods"][k]["kl"] for r in rs_list] for k in ("STL", name)}
        double = stl_at.get((2 * size, rs))
        edits = [_ms(e["STL"]), _ms(e[name]), _paired(e[name], e["STL"])]
        edits += [_ms(double) if double else "-", _ms(e["IDENTICAL"])]
        kls = [_ms(kl["STL"]), _ms(kl[name]), _paired(kl[name], kl["STL"])]
        lines.append(_row([size, rs, len(rs_list), *edits, *kls]))
    return lines


def _restarts_lines(records) -> list[str]:
    """The restarts check: cells run at two search efforts (same problem, P_del, rows, trial and
    grid), MTL's gain over STL and over IDENTICAL at each, paired by trial."""
    by: dict = {}
    for r in records:
        if r["part"] != "fig25":
            continue
        s = r["search"]
        key = (r["problem"], r["p_del"], r["size"], r.get("grid", ""), s["tabu"], s["mt_tabu"])
        by.setdefault(key, {}).setdefault(r["trial"], {})[s["restarts"]] = r
    rows = []
    for (prob, p, size, _grid, _t, _mt), trials in sorted(by.items()):
        efforts = sorted({k for t in trials.values() for k in t})
        if len(efforts) < 2:
            continue
        lo, hi = efforts[0], efforts[-1]
        both = [t for t in trials.values() if lo in t and hi in t]
        if len(both) < 2:
            continue
        name = _mtl([t[lo] for t in both])

        def gain(t, effort, base, name=name):
            m = t[effort]["methods"]
            return m[name]["edit"] - m[base]["edit"]

        cells = []
        for base in ("STL", "IDENTICAL"):
            g_lo = [gain(t, lo, base) for t in both]
            g_hi = [gain(t, hi, base) for t in both]
            cells += [_ms(g_lo), _ms(g_hi), _paired(g_hi, g_lo)]
        stl = [_ms([t[e]["methods"]["STL"]["edit"] for t in both]) for e in (lo, hi)]
        rows.append(_row([prob, f"{p:g}", size, f"{lo} vs {hi}", len(both), *stl, *cells]))
    if not rows:
        return []
    return [
        "",
        "### Restarts check: does more search change the picture?",
        "",
        "The same cells (problem, P_del, rows, trial, δ grid) searched with more restarts for "
        "every learner; MTL's edit-distance gain over STL and over IDENTICAL at each effort, "
        "and the change in that gain (more restarts minus fewer, paired by trial).",
        "",
        *_head(
            "problem|P_del|rows/task|restarts|trials|STL edit (fewer)|STL edit (more)|"
            "MTL - STL (fewer)|MTL - STL (more)|change|MTL - IDENTICAL (fewer)|"
            "MTL - IDENTICAL (more)|change".split("|")
        ),
        *rows,
    ]


def plot_fig25(path, out_png) -> None:
    """Bar chart of Fig. 2.5's edit distances (mean ± s.e.) per problem."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = _groups(_load(path), "fig25")
    keys = sorted(g for g in groups if _mtl(groups[g]) == "MTL-Paired")  # the Paired prior's
    if not keys:
        return
    methods = ("STL", "IDENTICAL", "POOLED", "MTL-Paired")
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(keys)), 3.6))
    width = 0.8 / len(methods)
    for j, meth in enumerate(methods):
        means, ses = [], []
        for g in keys:
            v = np.array([r["methods"][meth]["edit"] for r in groups[g] if meth in r["methods"]])
            means.append(v.mean())
            ses.append(np.nan_to_num(standard_error(v)))
        x = np.arange(len(keys)) + (j - (len(methods) - 1) / 2) * width
        ax.bar(x, means, width, yerr=ses, capsize=2, label=meth)
    ax.set_xticks(np.arange(len(keys)))
    ax.set_xticklabels(
        [
            f"{g[0]}\n{g[2]} rows" + (f", P_del {g[1]:g}" if g[0] != "ALARM-COMP" else "")
            for g in keys
        ],
        fontsize=7,
    )
    ax.set_ylabel("edit distance (mean over 5 tasks)")
    ax.set_title("Fig. 2.5 reproduced: STL, IDENTICAL, POOLED and MTL (Paired)", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out_png, dpi=110)
    plt.close(fig)


def report(path) -> None:
    """The tables into docs/bayesnet.md's generated block and Fig. 2.5's bar chart."""
    body = "\n".join(x.replace("### ", "#### ") for x in report_lines(path))
    write_blocks([ROOT / "docs" / "bayesnet.md"], {"bayesnet": body})
    plot_fig25(path, ROOT / "docs" / "bayesnet_fig25.png")


def quick(bases: dict, smoke: bool = False) -> None:
    """A small end-to-end check of both kinds of cell, printed and never written: one
    INSURANCE cell (every learner) and one task-selection cell; ``smoke`` shrinks the rows and
    the search so that a test runs it in seconds."""
    rows, test_rows, integrate = (100, 200, 1_000) if smoke else (150, 2_000, 10_000)
    search = Search(0, 5, 0, 2) if smoke else Search(1, 20, 0, 5)
    cell = Cell("quick", "INSURANCE", 0.05, rows, 0, search, test_rows, integrate)
    res = run_cell(cell, bases, grid=(0.99, 1.0))
    for m, r in res["methods"].items():
        print(f"{m:12s} edit {r['edit']:6.2f}  KL {r['kl']:.4f}  δ {r.get('delta', '')}")
    search = Search(0, 5, 0, 2) if smoke else Search(0, 10, 0, 5)
    sel = Cell("quick", "ALARM-COMP-SELECT", 0.0, rows, 0, search, test_rows)
    out = run_selection(sel, bases, ns=(0, 2), grid=(0.999,))
    print("selection", out["stl"], out["fig211"], out["rankings"]["direct"][:4])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=sorted(PARTS), default="fig25")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="the quick check, smaller: tests")
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--restarts", type=int, default=5)
    parser.add_argument("--sizes", nargs="*", type=int)
    parser.add_argument("--p-del", nargs="*", type=float)
    parser.add_argument("--priors", nargs="*", choices=PRIORS, default=list(PRIORS))
    parser.add_argument("--grid", nargs="*", type=float, default=list(GRID))
    parser.add_argument("--results", default=str(RESULTS))
    parser.add_argument("--report", action="store_true")
    args = parser.parse_args(argv)
    from pathlib import Path

    path = Path(args.results).resolve()
    if args.report:
        report(path)
        return
    bases = {"ALARM": load_network("alarm"), "INSURANCE": load_network("insurance")}
    if args.quick or args.smoke:
        quick(bases, smoke=args.smoke)
        return
    search = Search(restarts=args.restarts)
    done = {r["key"] for r in load_results(path)}
    cells = cells_of(args.part, args.trials, search, args)
    cells = [c for c in cells if c.key() not in done]
    commit = git_commit()
    print(f"{len(cells)} cells to run ({len(done)} already in {path})", flush=True)
    for cell in cells:
        start = time.time()
        if cell.problem == "ALARM-COMP-SELECT":
            res = run_selection(cell, bases)
        else:
            priors = tuple(args.priors) if args.part == "fig25" else ("paired",)
            res = run_cell(cell, bases, priors=priors, grid=tuple(args.grid))
        res["meta"] = _meta(commit)
        append_row(path, res)
        brief = {m: round(r["edit"], 1) for m, r in res.get("methods", {}).items()}
        print(f"{cell.key()} {brief} ({time.time() - start:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
