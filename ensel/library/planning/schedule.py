"""The order of a build under a time budget (anytime building): whatever moment the budget ends,
the runs finished by then should already make a strong, varied library.

So runs are taken round-robin over their families, strongest families first (each family
declares its ``rank``, see :class:`~ensel.library.families.FamilyTraits`), and within a family
cheapest first: after one round every family has its cheapest member in the library, after two
rounds two, and so on. The runs of another kind (detectors) take part as one more family, at
the rank their kind declares. Runs a family defers (fit cost growing with the square of the
rows) go after everything else on large data. Runs on a feature-engineered view (``te``) form a
group of their own, next after their family's: they add a different kind of member, which
should not wait behind the family's whole ladder on the native view. Costs are relative
estimates from each run's parameters (rounds, trees, epochs, hidden units), not seconds.

On a large table a plan may instead take the runs strong first (:func:`gain_order`): by each
run's expected gain per estimated second, the families that earn the ensemble's weight there
(:mod:`ensel.library.planning.gain`) before the others, which get the time that is left.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..families import get_family, traits_of
from ..kinds import get_kind
from .gain import expected_gain, is_strong

__all__ = ["LARGE_ROWS", "anytime_order", "gain_order", "relative_cost"]

LARGE_ROWS = 2_000
"""From this many training rows, the runs their families defer are scheduled after everything
else."""
ENGINEERED_VIEWS = ("te",)
"""Views whose runs are scheduled as a group of their own (see the module docstring)."""


def relative_cost(
    family: str,
    params: dict[str, Any],
    stages: tuple[int, ...] | None,
    task: str = "classification",
) -> float:
    """A relative training cost of one run of ``family`` (per row of data), as the family
    declares it (``FamilyTraits.relative_cost``): the work its parameters ask for, e.g. rounds
    times leaves for boosting, trees for forests. Only comparisons within a family use it; a
    family that declares none costs 1.0."""
    return traits_of(family, task).relative_cost(params, stages)


def anytime_order(tasks: Sequence[tuple[str, Any]], n_rows: int) -> list[int]:
    """Indices of ``tasks`` (``(section, run spec)`` pairs, as the builder holds them) in the
    order to run them under a time budget (see the module docstring)."""
    groups: dict[str, list[tuple[float, int]]] = {}
    ranks: dict[str, float] = {}
    last: list[tuple[float, int]] = []
    for i, (section, run) in enumerate(tasks):
        if section != "families":
            groups.setdefault(f"~{section}", []).append((0.0, i))  # another kind: spec order
            ranks[f"~{section}"] = get_kind(section).rank
            continue
        params = dict(run.params)
        traits = traits_of(run.family, run.task)
        cost = traits.relative_cost(params, run.stages)
        if n_rows >= LARGE_ROWS and traits.deferred(params):
            last.append((cost, i))
        else:
            engineered = run.view in ENGINEERED_VIEWS
            key = f"{run.family}/{run.view}" if engineered else run.family
            groups.setdefault(key, []).append((cost, i))
            ranks[key] = float(traits.rank) + (0.5 if engineered else 0.0)

    queues = [sorted(groups[name]) for name in sorted(groups, key=lambda n: (ranks[n], n))]
    order = []
    for round_ in range(max((len(q) for q in queues), default=0)):
        order += [q[round_][1] for q in queues if round_ < len(q)]
    return order + [i for _, i in sorted(last)]


def _group(run) -> str:
    """The queue a run joins in :func:`gain_order`: its family, or its family on an engineered
    view, or its family with the optional parameters it sets (``Family.optional``, such as
    split rules drawn at random): each of these adds a different kind of member."""
    group = f"{run.family}/{run.view}" if run.view in ENGINEERED_VIEWS else run.family
    optional = sorted(set(get_family(run.family, run.task).optional) & set(run.param_dict))
    return "+".join([group, *optional])


def gain_order(tasks: Sequence[tuple[str, Any]], seconds: Sequence[float]) -> list[int]:
    """Indices of ``tasks`` (``(section, run spec)`` pairs) strong first, by expected gain per
    second: ``seconds[i]`` is task ``i``'s estimated seconds (all its fits). A family's prior
    (:func:`~ensel.library.planning.gain.expected_gain`) is what its runs together are expected
    to add, so within its queue (a family; its runs on an engineered view, or setting one of
    its optional parameters, form queues of their own), cheapest first, the ``k``-th run is
    expected to add ``prior / k`` in its seconds: the first runs of several strong families
    come before one family's fourth. The runs of strong families
    (:func:`~ensel.library.planning.gain.is_strong`) go first in that order; the runs of
    another kind (detectors) follow once every strong queue has started, in spec order; then
    the other families' runs in the same order, those their families defer on large data
    (fit cost growing with the square of the rows) last."""
    queues: dict[str, list[tuple[float, int]]] = {}
    others: list[int] = []
    for i, (section, run) in enumerate(tasks):
        if section != "families":
            others.append(i)
        else:
            queues.setdefault(_group(run), []).append((max(float(seconds[i]), 1e-9), i))
    keyed: list[tuple[bool, bool, float, int]] = []  # (weak, deferred, -gain per s, index)
    for queue in queues.values():
        for k, (cost, i) in enumerate(sorted(queue), start=1):
            run = tasks[i][1]
            deferred = traits_of(run.family, run.task).deferred(dict(run.params))
            gain = expected_gain(run.family) / (k * cost)
            keyed.append((not is_strong(run.family), deferred, -gain, i))
    ranked = sorted(keyed)
    strong = [i for weak, _, _, i in ranked if not weak]
    weak = [i for weak, _, _, i in ranked if weak]
    started, at = set(), len(strong)
    strong_queues = {_group(tasks[i][1]) for i in strong}
    for position, i in enumerate(strong):
        started.add(_group(tasks[i][1]))
        if started == strong_queues:
            at = position + 1
            break
    return strong[:at] + others + strong[at:] + weak
