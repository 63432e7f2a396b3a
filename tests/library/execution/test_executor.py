"""Executors: outcomes stream back; failures, time-outs and dying workers are recorded and the
other tasks go on."""

from __future__ import annotations

import pytest

from ensel.library.execution.executor import ProcessExecutor, SerialExecutor, make_executor
from ensel.library.planning.budget import Budget

from .._tasks import StartupBomb, task


@pytest.mark.slow
def test_serial_executor_records_failures_and_time_limit():
    tasks = ["ok", "raise", "spin", "ok"]
    outcomes = list(SerialExecutor().run(task, tasks, 21, Budget(run_limit=0.3)))
    assert [o.status for o in outcomes] == ["ok", "failed", "timeout", "ok"]
    assert outcomes[0].value == 42
    assert outcomes[1].error == "RuntimeError: bad parameters second line"
    assert "time limit of 0.3 s" in outcomes[2].error
    assert outcomes[2].seconds >= 0.3  # it ran until the limit stopped it


@pytest.mark.slow
def test_process_executor_survives_crashes_and_kills_overdue_tasks():
    tasks = ["ok", "crash", "sleep", "raise", "ok", "ok"]
    outcomes = {o.index: o for o in ProcessExecutor(2).run(task, tasks, 5, Budget(run_limit=3))}
    assert sorted(outcomes) == list(range(len(tasks)))
    status = [outcomes[i].status for i in range(len(tasks))]
    assert status == ["ok", "failed", "timeout", "failed", "ok", "ok"]
    assert all(outcomes[i].value == 10 for i in (0, 4, 5))
    assert "worker process died (exit code -9" in outcomes[1].error
    assert outcomes[3].error.startswith("RuntimeError: bad parameters")


def test_make_executor_checks_n_jobs():
    assert isinstance(make_executor(1), SerialExecutor)
    assert isinstance(make_executor(2), ProcessExecutor)
    with pytest.raises(ValueError, match="n_jobs=0"):
        make_executor(0)


def test_local_backend_is_the_only_name_of_the_local_pool():
    assert isinstance(make_executor(1, "local"), SerialExecutor)
    assert isinstance(make_executor(2, "local"), ProcessExecutor)
    with pytest.raises(ValueError, match="client is for backend='dask'"):
        make_executor(1, "local", "tcp://127.0.0.1:1")
    with pytest.raises(ValueError, match=r"backend='joblib': use one of \['dask', 'local'\]"):
        make_executor(1, "joblib")


def test_executors_declare_what_they_can_do():
    serial, pool = make_executor(1), make_executor(2)
    assert (serial.slots, pool.slots) == (1, 2)
    assert serial.client is None and pool.client is None
    assert serial.gates_memory and pool.gates_memory and serial.local_memory


@pytest.mark.slow
def test_workers_that_cannot_start_stop_the_build_with_the_reason():
    with pytest.raises(RuntimeError, match=r"cannot start: worker process died \(exit code 3"):
        list(ProcessExecutor(1).run(task, ["ok"], StartupBomb()))


@pytest.mark.slow
def test_serial_executor_stops_at_the_deadline_and_starts_nothing_after():
    import time

    tasks = ["ok", "spin", "ok", "ok"]  # "spin" would spin for ever: the deadline stops it
    budget = Budget(deadline=time.monotonic() + 0.5, run_limit=30)
    outcomes = list(SerialExecutor().run(task, tasks, 21, budget))
    assert [o.status for o in outcomes] == ["ok", "budget", "budget", "budget"]
    assert [o.seconds for o in outcomes[2:]] == [0.0, 0.0]  # never started
    assert "stopped by the end of the build's time budget" in outcomes[1].error
    assert outcomes[2].error == "not started: the build's time budget ran out"


@pytest.mark.slow
def test_process_executor_kills_running_tasks_at_the_deadline():
    import time

    start = time.monotonic()
    tasks = ["ok", "sleep", "spin", "ok", "ok"]
    budget = Budget(deadline=start + 6, run_limit=60)
    outcomes = {o.index: o for o in ProcessExecutor(2).run(task, tasks, 5, budget)}
    elapsed = time.monotonic() - start
    assert 6 <= elapsed < 10  # the budget, not the per-run limit, ended the run
    assert sorted(outcomes) == list(range(len(tasks)))
    assert outcomes[0].status == "ok" and outcomes[0].value == 10
    assert [outcomes[i].status for i in (1, 2)] == ["budget", "budget"]
    assert all("stopped by the end" in outcomes[i].error for i in (1, 2))
    assert all(outcomes[i].status == "budget" and outcomes[i].seconds == 0 for i in (3, 4))
