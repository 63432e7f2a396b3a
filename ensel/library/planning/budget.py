"""Budget: the time and memory a build may use, made once and handed down.

A build under ``time_limit`` has one deadline, a ``time.monotonic()`` value read on the budget's
``clock``; the seconds one run may take (the spec's or the caller's per-run limit, or a share of
the budget where that is smaller); and the memory ceiling of this process and its workers. The
builder, the planner and the executors read these here instead of each keeping its own form.
Runs on other processes or machines are told the deadline as a wall-clock time
(:meth:`Budget.ends_at`), since a monotonic clock means nothing outside this process.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["MAX_RUN_SHARE", "Budget", "check_grow"]

MAX_RUN_SHARE = 0.5
"""Under a time budget no run may take more than this share of it."""


@dataclass(frozen=True)
class Budget:
    """The time and memory of one build.

    ``deadline``: the ``clock()`` value the build must end by (None: no time budget).
    ``run_limit``: seconds one run (all its folds) may take (None: no limit). ``capped``:
    ``run_limit`` is the budget's share (``MAX_RUN_SHARE``), not a per-run limit asked for, so
    a run it stops is recorded as cut by the budget (``budget``, built again by a later build)
    rather than as a ``timeout``. ``max_memory``: the ceiling in bytes (None: none).
    ``clock``: where the deadline is read; ``time.monotonic`` except in tests."""

    deadline: float | None = None
    run_limit: float | None = None
    capped: bool = False
    max_memory: int | None = None
    clock: Callable[[], float] = time.monotonic

    @classmethod
    def of(
        cls,
        time_limit: float | None,
        run_limit: float | None = None,
        *,
        max_memory: int | None = None,
        started: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> Budget:
        """The budget of a build of ``time_limit`` seconds from ``started`` (a ``clock()``
        value; now by default) whose runs may take ``run_limit`` seconds each: under a time
        budget no run may take more than ``MAX_RUN_SHARE`` of it (one second at least)."""
        if time_limit is None:
            return cls(None, run_limit, False, max_memory, clock)
        started = clock() if started is None else started
        cap = max(float(time_limit) * MAX_RUN_SHARE, 1.0)
        capped = run_limit is None or cap < run_limit
        return cls(
            started + float(time_limit), cap if capped else run_limit, capped, max_memory, clock
        )

    @property
    def timed(self) -> bool:
        """Whether the build has a deadline."""
        return self.deadline is not None

    @property
    def budget_cap(self) -> float | None:
        """The per-run limit where the budget set it, else None."""
        return self.run_limit if self.capped else None

    def left(self) -> float | None:
        """Seconds to the deadline (negative past it), or None without one."""
        return None if self.deadline is None else self.deadline - self.clock()

    def ends_at(self) -> float | None:
        """The deadline as a wall-clock (``time.time()``) value, for runs in other processes."""
        return None if self.deadline is None else time.time() + self.left()


def check_grow(grow, time_limit: float | None) -> None:
    """Refuse an open-ended growth (``grow=True``, a :class:`~ensel.library.planning.grow.GrowSpec`
    whose ``is_open``) without a ``time_limit`` to bound it."""
    if grow is not None and time_limit is None and grow.is_open:
        raise ValueError(
            "grow=True grows in the time left under time_limit; give time_limit, or a budget "
            "such as grow={'trials': 20} or grow={'time': 120}"
        )
