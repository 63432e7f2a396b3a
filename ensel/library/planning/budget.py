"""Budget: the time and memory a fit or a build may use, made once and handed down.

A fit (or a build called alone) makes one :class:`Budget`: its deadline, a ``time.monotonic()``
value read on the budget's ``clock``; the seconds kept back after the build (``reserve``: for
selection, the detectors' combination and, with two levels, the second level); the seconds one
run may take; the memory ceiling of this process and its workers; and, once a build has a plan,
the plan's ``pace``. The builder takes its share (:meth:`Budget.for_build`), and the planner, the
executors and selection read that one object instead of each keeping its own form. Runs on other
processes or machines are told the deadline as a wall-clock time (:meth:`Budget.ends_at`), since
a monotonic clock means nothing outside this process.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_RUN_SHARE", "Budget", "check_grow"]

MAX_RUN_SHARE = 0.5
"""Under a time budget no run may take more than this share of the build's seconds."""


@dataclass(frozen=True)
class Budget:
    """The time and memory of one fit or build.

    ``deadline``: the ``clock()`` value the fit must end by (None: no time budget).
    ``run_limit``: seconds one run (all its folds) may take (None: no limit). ``capped``:
    ``run_limit`` is the build's share (``MAX_RUN_SHARE``), not a per-run limit asked for, so
    a run it stops is recorded as cut by the budget (``budget``, built again by a later build)
    rather than as a ``timeout``. ``max_memory``: the ceiling in bytes (None: none).
    ``clock``: where the deadline is read; ``time.monotonic`` except in tests. ``reserve``:
    seconds before the deadline at which the stage holding this budget must end (what the
    stages after it need). ``pace``: the build plan's estimates against the runs' real seconds
    (a :class:`~ensel.library.planning.build_plan.Pace`; None before a plan, or without one)."""

    deadline: float | None = None
    run_limit: float | None = None
    capped: bool = False
    max_memory: int | None = None
    clock: Callable[[], float] = time.monotonic
    reserve: float = 0.0
    pace: Any = None

    @classmethod
    def of(
        cls,
        time_limit: float | None,
        run_limit: float | None = None,
        *,
        max_memory: int | None = None,
        reserve: float = 0.0,
        started: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> Budget:
        """The budget asked for: ``time_limit`` seconds from ``started`` (a ``clock()``
        value; now by default), of which the last ``reserve`` are kept for what follows the
        build, runs of ``run_limit`` seconds each (None: the spec's) and ``max_memory``
        bytes. Not capped yet: a build caps its runs when it takes its share
        (:meth:`for_build`)."""
        if time_limit is None:
            return cls(None, run_limit, False, max_memory, clock, reserve)
        started = clock() if started is None else started
        return cls(started + float(time_limit), run_limit, False, max_memory, clock, reserve)

    def for_build(self, run_limit: float | None = None, now: float | None = None) -> Budget:
        """The budget a build runs under, taken from this one (the budget asked for) at
        ``now`` (a ``clock()`` value: when the build started; the clock now by default). It
        ends ``reserve`` seconds before the deadline (where something is kept after it,
        one second from ``now`` at least: a fit's build always gets a second) and keeps nothing
        after it. Its runs take the per-run limit asked for (else ``run_limit``, the spec's),
        and under a time budget no more than ``MAX_RUN_SHARE`` of the build's seconds (one
        second at least)."""
        asked = self.run_limit if self.run_limit is not None else run_limit
        if not self.timed:
            return dataclasses.replace(self, run_limit=asked, capped=False, reserve=0.0)
        now = self.clock() if now is None else now
        seconds = self.deadline - self.reserve - now
        seconds = max(seconds, 1.0) if self.reserve > 0 else seconds
        cap = max(seconds * MAX_RUN_SHARE, 1.0)
        capped = asked is None or cap < asked
        return dataclasses.replace(
            self,
            deadline=now + seconds,
            run_limit=cap if capped else asked,
            capped=capped,
            reserve=0.0,
        )

    def keep(self, seconds: float) -> Budget:
        """This budget with ``seconds`` kept back before its deadline (its ``reserve``)."""
        return dataclasses.replace(self, reserve=float(seconds))

    def paced(self, pace) -> Budget:
        """This budget with ``pace`` (a plan's :class:`~ensel.library.planning.build_plan.Pace`,
        or None)."""
        return dataclasses.replace(self, pace=pace)

    @property
    def timed(self) -> bool:
        """Whether there is a deadline."""
        return self.deadline is not None

    @property
    def budget_cap(self) -> float | None:
        """The per-run limit where the budget set it, else None."""
        return self.run_limit if self.capped else None

    def left(self) -> float | None:
        """Seconds until this stage must end, ``reserve`` seconds before the deadline
        (negative past it), or None without a deadline."""
        return None if self.deadline is None else self.deadline - self.reserve - self.clock()

    def ends_at(self) -> float | None:
        """When this stage must end as a wall-clock (``time.time()``) value, for runs in other
        processes."""
        return None if self.deadline is None else time.time() + self.left()


def check_grow(grow, timed: bool) -> None:
    """Refuse an open-ended growth (``grow=True``, a :class:`~ensel.library.planning.grow.GrowSpec`
    whose ``is_open``) without a time budget (``timed``: a ``time_limit`` was given) to bound
    it."""
    if grow is not None and not timed and grow.is_open:
        raise ValueError(
            "grow=True grows in the time left under time_limit; give time_limit, or a budget "
            "such as grow={'trials': 20} or grow={'time': 120}"
        )
