"""Executors run training runs and stream their outcomes back as they finish.

An executor takes a function, a list of tasks and the data every task shares (sent once to each
worker), and yields an ``Outcome`` per task: ok with its value, failed with the error, or timeout.
The builder only sees this interface, so another backend plugs in without touching it: it
registers a factory by name (``register_backend``), as dask_executor does for ``"dask"``.

``ProcessExecutor`` keeps its own pool of worker processes instead of joblib's: a run that exceeds
its time limit is stopped by killing its worker (joblib cannot stop one task), and a run that
kills its worker (out of memory, a crash in native code) is recorded as failed while the other
workers go on.
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

from ._worker import describe

__all__ = [
    "BACKENDS",
    "Executor",
    "Outcome",
    "ProcessExecutor",
    "SerialExecutor",
    "make_executor",
    "register_backend",
    "timeout_message",
]

TaskFn = Callable[[Any, Any], Any]
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
"""Read by the native thread pools when they load, so set before the worker starts."""
START_ATTEMPTS = 3
"""Worker processes that may fail to start in a row before the build stops."""


@dataclass
class Outcome:
    """The end of one task: ``status`` is ok, failed or timeout."""

    index: int
    status: str
    value: Any
    error: str
    seconds: float


class Executor(ABC):
    @abstractmethod
    def run(self, fn: TaskFn, tasks: Sequence[Any], shared: Any) -> Iterator[Outcome]:
        """Call ``fn(task, shared)`` for every task; yield outcomes in completion order."""

    def close(self) -> None:  # noqa: B027 - most executors hold nothing between runs
        """Release what the executor holds between runs (a client it opened)."""


class _TimeLimit(BaseException):  # not an Exception: library code must not swallow it
    pass


class SerialExecutor(Executor):
    """Runs tasks one after another in this process. The time limit interrupts Python code by a
    timer signal (main thread only); a long call inside native code ends before it is noticed."""

    def __init__(self, time_limit: float | None = None) -> None:
        self.time_limit = time_limit

    def run(self, fn: TaskFn, tasks: Sequence[Any], shared: Any) -> Iterator[Outcome]:
        use_alarm = (
            self.time_limit is not None and threading.current_thread() is threading.main_thread()
        )
        for i, task in enumerate(tasks):
            start = time.perf_counter()
            previous = None
            limit_message = timeout_message(self.time_limit)
            if use_alarm:
                previous = signal.signal(signal.SIGALRM, _raise_time_limit)
                signal.setitimer(signal.ITIMER_REAL, self.time_limit)
            try:
                value = fn(task, shared)
                outcome = Outcome(i, "ok", value, "", time.perf_counter() - start)
            except _TimeLimit:
                outcome = Outcome(i, "timeout", None, limit_message, time.perf_counter() - start)
            except Exception as exc:
                outcome = Outcome(i, "failed", None, describe(exc), time.perf_counter() - start)
            finally:
                if use_alarm:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                    signal.signal(signal.SIGALRM, previous)
            yield outcome


def _raise_time_limit(signum, frame):
    raise _TimeLimit


def timeout_message(limit: float | None) -> str:
    """What an outcome that ran out of time says."""
    return f"stopped after the time limit of {limit:g} s" if limit is not None else ""


class _Worker:
    """A child ``python -m ensel.library._worker`` and the socket to it."""

    def __init__(self, shared_bytes: bytes, threads: int) -> None:
        ours, theirs = socket.socketpair()
        self.stderr = tempfile.TemporaryFile()
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        env.update({var: str(threads) for var in THREAD_VARIABLES})
        self.process = subprocess.Popen(
            [sys.executable, "-m", "ensel.library._worker", str(theirs.fileno()), str(threads)],
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
    A task over ``time_limit`` seconds is killed with its worker; a worker that dies fails its
    task; a fresh worker replaces either."""

    def __init__(self, n_workers: int, time_limit: float | None = None, threads: int = 1) -> None:
        if n_workers < 1:
            raise ValueError(f"n_workers={n_workers}: need at least one worker")
        self.n_workers = n_workers
        self.time_limit = time_limit
        self.threads = threads

    def run(self, fn: TaskFn, tasks: Sequence[Any], shared: Any) -> Iterator[Outcome]:
        shared_bytes = pickle.dumps(shared, protocol=pickle.HIGHEST_PROTOCOL)
        self._failed_starts = 0
        pending = deque(enumerate(tasks))
        n = min(self.n_workers, len(pending))
        workers = [_Worker(shared_bytes, self.threads) for _ in range(n)]
        try:
            while pending or any(w.task is not None for w in workers):
                for w in workers:
                    if w.ready and w.task is None and pending:
                        w.task, task = pending.popleft()
                        w.started = time.perf_counter()
                        w.send((w.task, fn, task))
                waiting = [w for w in workers if w.task is not None or not w.ready]
                busy = [w for w in waiting if w.task is not None]
                wait([w.conn for w in waiting], timeout=self._poll_timeout(busy))
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
                        message = timeout_message(self.time_limit)
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
            for w in workers:
                w.stop(kill=w.task is not None)

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

    def _poll_timeout(self, busy: list[_Worker]) -> float | None:
        if self.time_limit is None or not busy:
            return None
        now = time.perf_counter()
        return max(0.0, min(w.started + self.time_limit - now for w in busy)) + 0.01

    def _overdue(self, w: _Worker) -> bool:
        return self.time_limit is not None and time.perf_counter() - w.started > self.time_limit


def _local(n_jobs: int, time_limit: float | None, client) -> Executor:
    """``n_jobs=1``: in this process; otherwise a process pool (``-1``: one worker per core)."""
    if client is not None:
        raise ValueError(
            "client is for backend='dask'; pass backend='dask' to build on a dask cluster, or "
            "leave client None"
        )
    if n_jobs == 0 or n_jobs < -1:
        raise ValueError(f"n_jobs={n_jobs}: use a positive number of workers, or -1 for all cores")
    workers = (os.cpu_count() or 1) if n_jobs == -1 else n_jobs
    return SerialExecutor(time_limit) if workers == 1 else ProcessExecutor(workers, time_limit)


Backend = Callable[[int, float | None, Any], Executor]
"""A backend makes an executor from ``(n_jobs, time_limit, client)``."""

BACKENDS: dict[str, Backend] = {}
"""Backends by the name ``build_library(backend=...)`` takes. Each registers itself from its own
module: joblib/local here, dask from :mod:`ensel.library.dask_executor`."""


def register_backend(name: str, backend: Backend) -> Backend:
    """Make ``backend`` available as ``build_library(backend=name)``."""
    BACKENDS[name] = backend
    return backend


register_backend("joblib", _local)
register_backend("local", _local)


def make_executor(
    n_jobs: int, time_limit: float | None, backend: str = "joblib", client=None
) -> Executor:
    """The executor of ``backend``: ``"joblib"`` (alias ``"local"``) runs on this machine with
    ``n_jobs`` processes; ``"dask"`` on the cluster of ``client`` (a ``distributed.Client``, a
    scheduler address, or None for the current client; registered when
    :mod:`ensel.library.dask_executor` is imported, as the builder does)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r}: use one of {sorted(BACKENDS)}")
    return BACKENDS[backend](n_jobs, time_limit, client)
