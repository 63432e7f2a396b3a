"""Executors run training runs and stream their outcomes back as they finish.

An executor takes a function, a list of tasks, the data every task shares (sent once to each
worker) and the build's :class:`~ensel.library.planning.budget.Budget` (its deadline and the
seconds one task may run), and yields an ``Outcome`` per task: ok with its value, failed with
the error, or timeout.
The builder only sees this interface, so another backend plugs in without touching it: it
registers a factory by name (``register_backend``), as dask_executor does for ``"dask"``.

``ProcessExecutor``, the ``"local"`` backend's pool, keeps its own
worker processes instead of joblib's: a run that exceeds its time limit is stopped by killing its
worker (joblib cannot stop one task), and a run that kills its worker (out of memory, a crash in
native code) is recorded as failed while the other workers go on.
"""

from __future__ import annotations

import os
import pickle
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from ..._jobs import n_workers
from ..planning.budget import Budget
from ..planning.memory import MemoryGate, memory_note, process_rss
from ._worker import describe

__all__ = [
    "BACKENDS",
    "BUDGET_NOT_STARTED",
    "Executor",
    "Outcome",
    "ProcessExecutor",
    "SerialExecutor",
    "budget_message",
    "make_executor",
    "register_backend",
    "timeout_message",
]

TaskFn = Callable[[Any, Any], Any]
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
"""Read by the native thread pools when they load, so set before the worker starts."""
START_ATTEMPTS = 3
"""Worker processes that may fail to start in a row before the build stops."""
MEMORY_POLL = 0.2
"""Seconds between two reads of the workers' memory under a ceiling."""


@dataclass
class Outcome:
    """The end of one task: ``status`` is ok, failed or timeout."""

    index: int
    status: str
    value: Any
    error: str
    seconds: float


class Executor(ABC):
    """What runs a build's tasks. Every executor declares what it can do here, so that the
    builder reads attributes instead of probing: the dask ``client`` it runs on (None for a
    local one), whether it runs on this machine (``local_memory``), whether its ``run`` keeps
    a memory ceiling (``gates_memory``) and how many tasks it runs at once (``slots``). The
    time a task may take is the budget's, given to ``run``."""

    local_memory = True
    """Whether tasks run on this machine, under the build's memory ceiling (``max_memory``):
    the plan divides that ceiling over ``slots`` only where they do."""
    gates_memory = True
    """Whether ``run`` takes a ``memory`` gate and holds its tasks under it."""
    client: Any = None
    """The ``distributed.Client`` the tasks run on, or None where they run on this machine."""

    @property
    def slots(self) -> int:
        """How many tasks ``run`` runs at once: the workers a build's plan schedules over."""
        return 1

    @abstractmethod
    def run(
        self,
        fn: TaskFn,
        tasks: Sequence[Any],
        shared: Any,
        budget: Budget | None = None,
        skip: Callable[[int], str | None] | None = None,
        memory: MemoryGate | None = None,
    ) -> Iterator[Outcome]:
        """Call ``fn(task, shared)`` for every task, in the order given as workers free up;
        yield outcomes in completion order. ``budget`` (None: no limits): a task running longer
        than its ``run_limit`` is stopped (status ``timeout``), and its deadline ends the whole
        run: tasks still running then are stopped and tasks not started are not started, each
        with status ``budget``. ``skip(index)``, asked just before a task would
        start, may return a reason not to start it (status ``budget``; the build's pace puts
        its standby runs there). ``memory`` (local executors): a task waits
        until its estimated peak fits under the ceiling beside the tasks in flight, a task
        that never fits is not started, and a task running when the processes' measured memory
        exceeds the ceiling is stopped (status ``memory`` for both)."""

    def close(self) -> None:  # noqa: B027 - most executors hold nothing between runs
        """Release what the executor holds between runs (a client it opened)."""


class _TimeLimit(BaseException):  # not an Exception: library code must not swallow it
    pass


class SerialExecutor(Executor):
    """Runs tasks one after another in this process. The time limit interrupts Python code by a
    timer signal (main thread only); a long call inside native code ends before it is noticed."""

    def run(
        self,
        fn: TaskFn,
        tasks: Sequence[Any],
        shared: Any,
        budget: Budget | None = None,
        skip: Callable[[int], str | None] | None = None,
        memory: MemoryGate | None = None,
    ) -> Iterator[Outcome]:
        budget = budget or Budget()
        main = threading.current_thread() is threading.main_thread()
        for i, task in enumerate(tasks):
            start = time.perf_counter()
            limit, by_budget = _task_limit(budget)
            if by_budget and limit <= 0:
                yield Outcome(i, "budget", None, BUDGET_NOT_STARTED, 0.0)
                continue
            reason = skip(i) if skip is not None else None
            if reason:
                yield Outcome(i, "budget", None, reason, 0.0)
                continue
            note = memory.never_fits(i, workers=0) if memory is not None else None
            if note:
                yield Outcome(i, "memory", None, note, 0.0)
                continue
            use_alarm = limit is not None and main
            previous = None
            if use_alarm:
                previous = signal.signal(signal.SIGALRM, _raise_time_limit)
                signal.setitimer(signal.ITIMER_REAL, limit)
            try:
                value = fn(task, shared)
                outcome = Outcome(i, "ok", value, "", time.perf_counter() - start)
            except _TimeLimit:
                seconds = time.perf_counter() - start
                outcome = (
                    Outcome(i, "budget", None, budget_message(seconds), seconds)
                    if by_budget
                    else Outcome(i, "timeout", None, timeout_message(budget.run_limit), seconds)
                )
            except Exception as exc:
                outcome = Outcome(i, "failed", None, describe(exc), time.perf_counter() - start)
            finally:
                if use_alarm:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                    signal.signal(signal.SIGALRM, previous)
            yield outcome


def _task_limit(budget: Budget) -> tuple[float | None, bool]:
    """The seconds a task starting now may run, and whether the budget's deadline (not the
    per-run limit) sets them."""
    if not budget.timed:
        return budget.run_limit, False
    left = budget.left()
    if budget.run_limit is None or left < budget.run_limit:
        return left, True
    return budget.run_limit, False


BUDGET_NOT_STARTED = "not started: the build's time budget ran out"


def budget_message(seconds: float) -> str:
    """What a run stopped by the end of the build's time budget says."""
    return f"stopped by the end of the build's time budget after {seconds:.0f} s"


def _raise_time_limit(signum, frame):
    raise _TimeLimit


def timeout_message(limit: float | None) -> str:
    """What an outcome that ran out of time says."""
    return f"stopped after the time limit of {limit:g} s" if limit is not None else ""


class _Worker:
    """A child ``python -m ensel.library.execution._worker`` and the socket to it."""

    def __init__(self, shared_bytes: bytes, threads: int) -> None:
        ours, theirs = socket.socketpair()
        self.stderr = tempfile.TemporaryFile()
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        env.update({var: str(threads) for var in THREAD_VARIABLES})
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ensel.library.execution._worker",
                str(theirs.fileno()),
                str(threads),
            ],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self.stderr,
            env=env,
        )
        theirs.close()
        self.conn = Connection(ours.detach())
        try:
            self.conn.send_bytes(shared_bytes)
        except OSError:
            pass  # the worker died at once; its closed socket tells the pool, which replaces it
        self.ready = False  # set when the worker has loaded the shared data
        self.task: int | None = None
        self.started = 0.0

    def send(self, message) -> None:
        self.conn.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))

    def death_note(self) -> str:
        """Why the worker died: its exit code and the last line it wrote to stderr."""
        code = self.process.wait()
        self.stderr.seek(0)
        lines = self.stderr.read().decode(errors="replace").strip().splitlines()
        last = f"; last words: {lines[-1][:200]}" if lines else ""
        reason = "killed (out of memory?)" if code in (-9, 137) else "a crash in native code?"
        return f"worker process died (exit code {code}, {reason}){last}"

    def stop(self, kill: bool = False) -> None:
        if not kill:
            try:
                self.send(None)
                self.process.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                kill = True
        if kill and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.conn.close()
        self.stderr.close()


class ProcessExecutor(Executor):
    """A pool of ``n_workers`` worker processes, each limited to ``threads`` native threads.
    A task over the budget's ``run_limit`` is killed with its worker; a worker that dies fails
    its task; a fresh worker replaces either."""

    def __init__(self, n_workers: int, threads: int = 1) -> None:
        if n_workers < 1:
            raise ValueError(f"n_workers={n_workers}: need at least one worker")
        self.n_workers = n_workers
        self.threads = threads
        self._budget = Budget()
        self._memory: MemoryGate | None = None
        self._failed_starts = 0

    @property
    def slots(self) -> int:
        return self.n_workers

    def run(
        self,
        fn: TaskFn,
        tasks: Sequence[Any],
        shared: Any,
        budget: Budget | None = None,
        skip: Callable[[int], str | None] | None = None,
        memory: MemoryGate | None = None,
    ) -> Iterator[Outcome]:
        shared_bytes = pickle.dumps(shared, protocol=pickle.HIGHEST_PROTOCOL)
        self._failed_starts = 0
        self._budget = budget = budget or Budget()
        self._memory = memory
        pending = deque(enumerate(tasks))
        n = min(self.n_workers, len(pending))
        if memory is not None:
            n = memory.workers(n)
        workers = [_Worker(shared_bytes, self.threads) for _ in range(n)]
        try:
            while pending or any(w.task is not None for w in workers):
                if budget.timed and budget.left() <= 0:
                    for w in workers:  # no time to wait for a worker to end on its own
                        if w.task is None:
                            w.stop(kill=True)
                    yield from _out_of_budget(workers, pending)
                    return
                yield from self._dispatch(workers, pending, fn, skip)
                if not pending and all(w.task is None for w in workers):
                    break  # the last tasks were skipped
                waiting = [w for w in workers if w.task is not None or not w.ready]
                busy = [w for w in waiting if w.task is not None]
                wait([w.conn for w in waiting], timeout=self._poll_timeout(busy))
                if memory is not None and busy:
                    yield from self._hold_ceiling(workers, shared_bytes)
                for i, w in enumerate(workers):
                    if not w.ready:
                        if w.conn.poll():
                            workers[i] = self._start(w, shared_bytes)
                        continue
                    if w.task is None:
                        continue
                    outcome, replace = None, False
                    if w.conn.poll():  # polled now, not before the last yield: no stale view
                        try:
                            outcome = Outcome(*pickle.loads(w.conn.recv_bytes()))
                        except (EOFError, OSError):
                            elapsed = time.perf_counter() - w.started
                            outcome = Outcome(w.task, "failed", None, w.death_note(), elapsed)
                            replace = True
                    elif self._overdue(w):
                        elapsed = time.perf_counter() - w.started
                        message = timeout_message(budget.run_limit)
                        outcome = Outcome(w.task, "timeout", None, message, elapsed)
                        replace = True
                    if outcome is None:
                        continue
                    w.task = None
                    if replace:
                        w.stop(kill=True)
                        workers[i] = _Worker(shared_bytes, self.threads)
                    yield outcome
        finally:
            for w in workers:  # a worker still starting holds nothing: no need to wait for it
                w.stop(kill=w.task is not None or not w.ready)

    def _dispatch(
        self, workers: list[_Worker], pending: deque, fn: TaskFn, skip
    ) -> Iterator[Outcome]:
        """Send pending tasks to the idle ready workers; a task ``skip`` or the memory gate
        turns away is reported at once, one that waits for memory stays first in line."""
        memory = self._memory
        for w in workers:
            while w.ready and w.task is None and pending:
                index, task = pending.popleft()
                reason = skip(index) if skip is not None else None
                if reason:
                    yield Outcome(index, "budget", None, reason, 0.0)
                    continue
                if memory is not None:
                    note = memory.never_fits(index)
                    if note:
                        yield Outcome(index, "memory", None, note, 0.0)
                        continue
                    running = [x.task for x in workers if x.task is not None]
                    if not memory.fits(index, running, len(workers)):
                        pending.appendleft((index, task))  # waits for memory
                        break
                w.task, w.started = index, time.perf_counter()
                w.send((w.task, fn, task))

    def _start(self, w: _Worker, shared_bytes: bytes) -> _Worker:
        """Take a new worker's ready message. A worker that dies starting is replaced; after
        ``START_ATTEMPTS`` such deaths in a row the build stops with the reason."""
        try:
            pickle.loads(w.conn.recv_bytes())
        except (EOFError, OSError):
            note = w.death_note()
            w.stop(kill=True)
            self._failed_starts += 1
            if self._failed_starts >= START_ATTEMPTS:
                raise RuntimeError(f"worker processes cannot start: {note}") from None
            return _Worker(shared_bytes, self.threads)
        self._failed_starts = 0
        w.ready = True
        return w

    def _hold_ceiling(self, workers: list[_Worker], shared_bytes: bytes) -> Iterator[Outcome]:
        """Stop the largest running task while the processes' measured memory exceeds the
        ceiling (its worker is killed and replaced, as for a task over its time limit)."""
        memory = self._memory
        rss = [process_rss(w.process.pid) or 0 for w in workers]
        while memory.over(rss):
            busy = [i for i, w in enumerate(workers) if w.task is not None]
            if not busy:
                return
            i = max(busy, key=lambda j: rss[j])
            w = workers[i]
            elapsed = time.perf_counter() - w.started
            outcome = Outcome(w.task, "memory", None, memory_note(memory.ceiling, elapsed), elapsed)
            w.task = None
            w.stop(kill=True)
            workers[i] = _Worker(shared_bytes, self.threads)
            rss[i] = 0
            yield outcome

    def _poll_timeout(self, busy: list[_Worker]) -> float | None:
        waits = []
        if self._memory is not None and busy:
            waits.append(MEMORY_POLL)
        limit = self._budget.run_limit
        if limit is not None and busy:
            now = time.perf_counter()
            waits.append(min(w.started + limit - now for w in busy))
        if self._budget.timed:
            waits.append(self._budget.left())
        return max(0.0, min(waits)) + 0.01 if waits else None

    def _overdue(self, w: _Worker) -> bool:
        limit = self._budget.run_limit
        return limit is not None and time.perf_counter() - w.started > limit


def _out_of_budget(workers: list[_Worker], pending: deque) -> Iterator[Outcome]:
    """The end of the budget: the running tasks are stopped (their workers killed, so even a
    long call in native code ends now) and the tasks not started are reported unstarted."""
    for w in workers:
        if w.task is not None:
            elapsed = time.perf_counter() - w.started
            index, w.task = w.task, None
            w.stop(kill=True)
            yield Outcome(index, "budget", None, budget_message(elapsed), elapsed)
    while pending:
        index, _ = pending.popleft()
        yield Outcome(index, "budget", None, BUDGET_NOT_STARTED, 0.0)


def _local(n_jobs: int, client) -> Executor:
    """The ``"local"`` backend, on this machine: ``n_jobs`` None or 1 runs in this process
    (``SerialExecutor``), otherwise ensel's own process pool (``ProcessExecutor``; -1: one
    worker per available CPU, -k: all but k-1; see :func:`ensel._jobs.n_workers`)."""
    if client is not None:
        raise ValueError(
            "client is for backend='dask'; pass backend='dask' to build on a dask cluster, or "
            "leave client None"
        )
    workers = n_workers(n_jobs)
    return SerialExecutor() if workers == 1 else ProcessExecutor(workers)


Backend = Callable[[int, Any], Executor]
"""A backend makes an executor from ``(n_jobs, client)``."""

BACKENDS: dict[str, Backend] = {}
"""Backends by the name ``build_library(backend=...)`` takes. Each registers itself from its own
module: local here, dask from :mod:`ensel.library.execution.dask_executor`."""


def register_backend(name: str, backend: Backend) -> Backend:
    """Make ``backend`` available as ``build_library(backend=name)``."""
    BACKENDS[name] = backend
    return backend


register_backend("local", _local)


def make_executor(n_jobs: int, backend: str = "local", client=None) -> Executor:
    """The executor of ``backend``: ``"local"`` runs on this machine
    with ``n_jobs`` processes; ``"dask"`` on the cluster of ``client`` (a
    ``distributed.Client``, a scheduler address, or None for the current client; registered
    when :mod:`ensel.library.execution.dask_executor` is imported, as the builder does)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r}: use one of {sorted(BACKENDS)}")
    return BACKENDS[backend](n_jobs, client)
