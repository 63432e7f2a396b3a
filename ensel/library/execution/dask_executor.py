"""DaskExecutor: training runs as tasks on a dask.distributed cluster, behind the ``Executor``
interface of :mod:`ensel.library.execution.executor`, so the builder's loop is the same for every
backend.

The shared data (training rows, folds) goes to the cluster once, as the input of one task that
unpickles it. Every run task depends on that task, so a worker receives the data once (from a
peer) and the scheduler can recompute it if every worker holding it dies; data sent with
``Client.scatter`` would be lost for good in that case and dask would cancel every run. Outcomes
stream back as runs finish; the builder writes them to the store on the client, so workers never
touch the store.

Under a build's deadline the runs go to the cluster as its workers free up, no more at a time
than its worker threads, and ``skip`` is asked just before each is sent, as the local pool asks
before each start: the build's pace (:mod:`ensel.library.planning.build_plan`) then starts the runs
the plan
put on standby where the finished runs leave time, and leaves out those that would end after the
deadline. Without a deadline every run is sent at once (an adaptive cluster scales on the tasks
it sees queued).

Faults: a worker that dies mid-run has its run retried on another worker by the scheduler; a run
whose attempts kill ``allowed-failures + 1`` workers (``distributed.scheduler.allowed-failures``
of the scheduler, 3 by default) ends with dask's ``KilledWorker`` and is recorded as failed with
that reason. A run past the time limit is cancelled and its worker restarted through its nanny,
the only way to stop a task inside native code.
"""

from __future__ import annotations

import io
import logging
import os
import pickle
import signal
import time
import uuid
import warnings
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..._imports import optional
from ..planning.budget import Budget
from ._worker import describe
from .executor import (
    BUDGET_NOT_STARTED,
    Executor,
    Outcome,
    TaskFn,
    budget_message,
    register_backend,
    timeout_message,
)

__all__ = ["DaskExecutor", "connect", "local_cluster"]

log = logging.getLogger(__name__)

DATA_PREFIX = "ensel-data"
TASK_PREFIX = "ensel-fit"
POLL_SECONDS = 0.05
"""How often the client looks for finished runs while it also watches time limits."""
CHECK_SECONDS = 0.5
"""How often running tasks are checked against the time limit (the scheduler learns their
running times from worker heartbeats, every 0.5 s or more)."""
RESUBMITS = 2
"""Times a run that the cluster cancelled (a scheduler restart, a lost connection) is sent again
before it is recorded as failed."""


def _distributed():
    return optional("distributed", "backend='dask'")


def connect(client) -> tuple[Any, bool]:
    """``(client, owned)``: a ``distributed.Client`` as given, a new one for a scheduler address
    (owned: closed with the executor), or the current default client for ``None``."""
    distributed = _distributed()
    if isinstance(client, distributed.Client):
        return client, False
    if isinstance(client, str):
        try:
            return distributed.Client(client), True
        except OSError as exc:
            raise OSError(
                f"client={client!r}: cannot reach a dask scheduler there ({exc}); start one with "
                "'dask scheduler' and give its address (tcp://HOST:8786)"
            ) from None
    if client is None:
        try:
            return distributed.default_client(), False
        except ValueError:
            raise ValueError(
                "backend='dask' needs a dask cluster: pass client=distributed.Client(...) or a "
                "scheduler address such as 'tcp://HOST:8786', or create a Client first"
            ) from None
    raise TypeError(
        f"client must be a distributed.Client or a scheduler address; got {type(client).__name__}"
    )


class _FuturePickler(pickle.Pickler):
    """Pickles the shared data with each dask future in it replaced by its position in
    ``futures``: the data task takes them as arguments, so the worker receives their values
    (a dask frame's persisted partitions) from the workers that hold them."""

    def __init__(self, file, future_type) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.future_type, self.futures = future_type, []

    def persistent_id(self, obj):
        if isinstance(obj, self.future_type):
            self.futures.append(obj)
            return len(self.futures) - 1
        return None


class _ValueUnpickler(pickle.Unpickler):
    def __init__(self, file, values: list) -> None:
        super().__init__(file)
        self.values = values

    def persistent_load(self, pid):
        return self.values[pid]


def _dumps(shared: Any, future_type) -> tuple[bytes, list]:
    """``(payload, futures)``: ``shared`` pickled, the futures in it kept aside."""
    buffer = io.BytesIO()
    pickler = _FuturePickler(buffer, future_type)
    pickler.dump(shared)
    return buffer.getvalue(), pickler.futures


def _load(payload: bytes, values: list | None = None) -> Any:
    return _ValueUnpickler(io.BytesIO(payload), values or []).load()


def _call(fn: TaskFn, task: Any, shared: Any) -> tuple[str, Any, str, float]:
    """Run one task on a worker; an exception is an outcome, not a dask error (no retry)."""
    start = time.perf_counter()
    try:
        return "ok", fn(task, shared), "", time.perf_counter() - start
    except Exception as exc:
        return "failed", None, describe(exc), time.perf_counter() - start


class DaskExecutor(Executor):
    """Runs tasks on the workers of ``client`` (a ``distributed.Client``, a scheduler address,
    or None for the current client). The budget's ``run_limit`` is per task, in seconds of
    running time."""

    local_memory = False  # workers have their own memory (and limits), not the client's
    gates_memory = False  # each worker keeps its own memory limit

    def __init__(self, client=None) -> None:
        self.client, self._owned = connect(client)

    @property
    def slots(self) -> int:
        """The threads of the cluster's workers now (at least 1): the runs it runs at once."""
        return max(sum(self.client.nthreads().values()), 1)

    def close(self) -> None:
        """Close the client if this executor opened it."""
        if self._owned:
            self.client.close()
            self._owned = False

    def run(
        self,
        fn: TaskFn,
        tasks: Sequence[Any],
        shared: Any,
        budget: Budget | None = None,
        skip: Callable[[int], str | None] | None = None,
        memory: None = None,
    ) -> Iterator[Outcome]:
        """See :meth:`Executor.run` (``memory`` does not apply: each worker keeps its own
        limit); under the budget's deadline no more tasks are on the cluster at a time than
        ``slots`` (read again every ``CHECK_SECONDS``), and ``skip`` is asked just before each
        is sent; without one, every task is sent (and asked about) at once."""
        budget = budget or Budget()
        timed, limit = budget.timed, budget.run_limit
        slots = self.slots
        if not self.client.scheduler_info().get("workers"):
            log.warning("the dask cluster has no workers yet; runs wait until one joins")
        session = _Session(self.client, fn, tasks, shared)
        next_check = next_slots = time.monotonic() + CHECK_SECONDS
        try:
            while session.live or session.pending:
                if timed and budget.left() <= 0:
                    yield from self._stop_all(session.live)
                    yield from session.not_started()
                    return
                if timed and session.pending and time.monotonic() >= next_slots:
                    slots, next_slots = self.slots, time.monotonic() + CHECK_SECONDS
                yield from session.send(slots if timed else len(tasks), skip)
                if not session.live:
                    break  # the last tasks were skipped
                batch = session.done.next_batch(block=limit is None and not timed)
                for future, result in batch:
                    outcome = session.finish(future, result)
                    if outcome is not None:
                        yield outcome
                if limit is not None and session.live:
                    if time.monotonic() >= next_check:
                        yield from self._stop_overdue(session.live, limit)
                        next_check = time.monotonic() + CHECK_SECONDS
                if (limit is not None or timed) and not batch:
                    time.sleep(POLL_SECONDS)
        finally:
            session.cancel()

    def _executing(self) -> dict:
        """The tasks running on the workers now: ``{key: (worker address, seconds)}``."""

        def executing(dask_scheduler) -> dict:  # defined here: cloudpickled by value
            return {
                ts.key: (ws.address, seconds)
                for ws in dask_scheduler.workers.values()
                for ts, seconds in ws.executing.items()
            }

        return self.client.run_on_scheduler(executing)

    def _stop_overdue(self, live: dict, limit: float) -> Iterator[Outcome]:
        """Time-outs of the tasks running past ``limit`` seconds; their workers are restarted."""
        running = self._executing()
        overdue = {k: v for k, v in running.items() if k in live and v[1] > limit}
        if not overdue:
            return
        self.client.cancel([live[k][1] for k in overdue])
        self._kill_workers(sorted({address for address, _ in overdue.values()}))
        for key, (_, seconds) in overdue.items():
            i = live.pop(key)[0]
            yield Outcome(i, "timeout", None, timeout_message(limit), seconds)

    def _stop_all(self, live: dict) -> Iterator[Outcome]:
        """The end of the build's time budget: every live task is cancelled (the workers
        running one are restarted) and reported with status ``budget``."""

        running = self._executing()
        self.client.cancel([entry[1] for entry in live.values()])
        busy = {k: v for k, v in running.items() if k in live}
        self._kill_workers(sorted({address for address, _ in busy.values()}))
        for key, (i, *_) in list(live.items()):
            seconds = busy[key][1] if key in busy else 0.0
            message = budget_message(seconds) if key in busy else BUDGET_NOT_STARTED
            yield Outcome(i, "budget", None, message, seconds)
        live.clear()

    def _kill_workers(self, addresses: list[str]) -> None:
        """Kill the processes of these workers from their nannies, which start fresh ones. The
        nanny, not the worker, does it: a worker busy in native code may not answer."""

        async def kill(dask_worker) -> None:  # runs on the nanny; cloudpickled by value
            if dask_worker.pid:
                os.kill(dask_worker.pid, signal.SIGKILL)

        info = self.client.scheduler_info()["workers"]
        nannied = [a for a in addresses if info.get(a, {}).get("nanny")]
        if len(nannied) < len(addresses):
            log.warning(
                "dask worker(s) %s run without a nanny, so their overdue runs cannot be stopped; "
                "they keep computing until the runs end (their results are dropped)",
                ", ".join(sorted(set(addresses) - set(nannied))),
            )
        if nannied:
            self.client.run(kill, workers=nannied, nanny=True, wait=False)


def _dask(n_jobs: int, client) -> Executor:
    """Every worker of the dask cluster (``n_jobs`` does not apply)."""
    return DaskExecutor(client)


register_backend("dask", _dask)


def local_cluster(n_workers: int, allowed_failures: int = 3, **options) -> Any:
    """A new ``distributed.LocalCluster`` of ``n_workers`` processes with one thread each (like
    ``n_jobs`` worker processes; use it as a context manager). Its scheduler hands a worker only
    the task it runs (worker-saturation 1.0), so a worker that dies takes no queued bystander
    with it, and gives up on a run that killed ``allowed_failures + 1`` workers."""
    distributed = _distributed()
    dask = optional("dask", "backend='dask'")
    if not isinstance(n_workers, int) or isinstance(n_workers, bool) or n_workers < 1:
        raise ValueError(f"n_workers={n_workers!r}: a LocalCluster needs at least one worker")
    settings = {"threads_per_worker": 1, "processes": True, "dashboard_address": None}
    config = {
        "distributed.scheduler.worker-saturation": 1.0,
        "distributed.scheduler.allowed-failures": allowed_failures,
    }
    with dask.config.set(config):
        return distributed.LocalCluster(n_workers=n_workers, **{**settings, **options})


class _Session:
    """The tasks of one ``run`` on the cluster: sends the data, then the tasks as ``send`` is
    asked to, sends again what the cluster lost, and turns finished futures into outcomes."""

    def __init__(self, client, fn: TaskFn, tasks: Sequence[Any], shared: Any) -> None:
        self.distributed = _distributed()
        self.client, self.fn, self.tasks = client, fn, tasks
        self.token = uuid.uuid4().hex[:8]
        self.payload, self.inputs = _dumps(shared, self.distributed.Future)
        self.data_sends = 0
        self.data = self._send_data()
        self.done = self.distributed.as_completed(
            loop=client.loop, with_results=True, raise_errors=False
        )
        self.live: dict = {}  # task key -> (task index, future, cancellations, data key)
        self.pending = deque(range(len(tasks)))  # indices of the tasks not sent yet
        self._serial = 0

    def send(self, window: int, skip: Callable[[int], str | None] | None) -> Iterator[Outcome]:
        """Send pending tasks, in order, until ``window`` are live; ``skip`` is asked before
        each is sent, and a task it gives a reason for is not sent (status ``budget``)."""
        while self.pending and len(self.live) < window:
            i = self.pending.popleft()
            reason = skip(i) if skip is not None else None
            if reason:
                yield Outcome(i, "budget", None, reason, 0.0)
            else:
                self.submit(i, 0)

    def not_started(self) -> Iterator[Outcome]:
        """The end of the budget for the tasks never sent."""
        while self.pending:
            yield Outcome(self.pending.popleft(), "budget", None, BUDGET_NOT_STARTED, 0.0)

    def _send_data(self):
        key = f"{DATA_PREFIX}-{self.token}-{self.data_sends}"
        with warnings.catch_warnings():  # the data is one task, sent once: not a large graph
            warnings.filterwarnings("ignore", message="Sending large graph")
            return self.client.submit(_load, self.payload, self.inputs, key=key, pure=False)

    def submit(self, i: int, cancellations: int) -> None:
        key = f"{TASK_PREFIX}-{self.token}-{i}-{self._serial}"
        self._serial += 1
        future = self.client.submit(_call, self.fn, self.tasks[i], self.data, key=key, pure=False)
        self.live[key] = (i, future, cancellations, self.data.key)
        self.done.add(future)

    def finish(self, future, result) -> Outcome | None:
        """The outcome of a finished future, or None when there is none yet (sent again) or no
        longer (stopped at its time limit, already reported)."""
        entry = self.live.pop(future.key, None)
        # Read the status before releasing: a released key may be forgotten by the scheduler,
        # and the client would then report a run that finished as cancelled.
        status = future.status
        future.release()
        if entry is None:
            return None
        i, _, cancellations, data_key = entry
        if status == "finished":
            return Outcome(i, *result)
        if status == "error":
            exc = result[1]
            if isinstance(exc, self.distributed.KilledWorker) and exc.task == data_key:
                return self._data_lost(i, cancellations, data_key, exc)
            return Outcome(i, "failed", None, _describe_error(exc, self.distributed), 0.0)
        if cancellations < RESUBMITS:  # cancelled by the cluster, not by us
            self.submit(i, cancellations + 1)
            return None
        reason = f"cancelled by the dask cluster {cancellations + 1} times: {result}"
        return Outcome(i, "failed", None, reason, 0.0)

    def _data_lost(self, i: int, cancellations: int, data_key: str, exc) -> Outcome | None:
        """The data task was charged with the deaths of workers it sat on, waiting, while
        another run killed them: send the data again (a bounded number of times), then the run."""
        if data_key == self.data.key:
            if self.data_sends >= RESUBMITS:
                message = f"the training data could not be kept on the cluster: {exc}"
                return Outcome(i, "failed", None, message, 0.0)
            self.data.release()
            self.data_sends += 1
            self.data = self._send_data()
        self.submit(i, cancellations)
        return None

    def cancel(self) -> None:
        """Cancel what is still on the cluster (the build stopped early or finished)."""
        if self.live:
            self.client.cancel([future for _, future, _, _ in self.live.values()])
        self.data.release()


def _describe_error(exc: BaseException, distributed) -> str:
    if isinstance(exc, distributed.KilledWorker):
        return (
            f"the run killed {exc.allowed_failures + 1} dask workers (out of memory, or a crash "
            "in native code?); the scheduler gives up on a task after "
            f"distributed.scheduler.allowed-failures={exc.allowed_failures} retries; last "
            f"worker {exc.last_worker.address}"
        )
    return describe(exc)
