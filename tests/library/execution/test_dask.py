"""The dask backend: a LocalCluster build equals the local build; a worker killed
mid-build loses nothing; a member that kills its workers fails with the reason; a time limit stops
a run; a restarted client resumes from the store."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer
from threadpoolctl import threadpool_limits

import ensel._imports as optional
from ensel import EnsembleSelectionClassifier
from ensel.cli import main
from ensel.library import build_library, builder
from ensel.library.execution.executor import make_executor
from ensel.library.families import FAMILIES
from ensel.library.planning import build_plan
from ensel.library.planning.budget import Budget

from .._planners import assert_the_tree_waited_out_the_pace, stand_in_planner
from .._tasks import task

distributed = pytest.importorskip("distributed")

from ensel.library.execution.dask_executor import DaskExecutor, local_cluster  # noqa: E402

from .._dask_tasks import CV, QUICK, TEST_FAMILIES, RegisterTestFamilies  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def data():
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    return X.iloc[:200], y.iloc[:200]


def _two_worker_client():
    """Two worker processes; a run is given up after killing two workers."""
    with (
        local_cluster(2, allowed_failures=1) as cluster,
        distributed.Client(cluster, set_as_default=False) as client,
    ):
        client.register_plugin(RegisterTestFamilies())
        client.wait_for_workers(2, timeout=120)
        yield client


@pytest.fixture(scope="module")
def client():
    """The cluster most tests share; tests here kill and restart its workers, and a nanny on a
    loaded machine may not bring one back, so a test that needs both uses ``two_workers``."""
    yield from _two_worker_client()


@pytest.fixture(scope="module")
def two_workers():
    """A cluster of its own whose two workers no test kills."""
    yield from _two_worker_client()


@pytest.fixture(autouse=True)
def _workers_up(request):
    """Tests that use the cluster start once a worker is up again after a kill by the last."""
    if "client" in request.fixturenames:
        request.getfixturevalue("client").wait_for_workers(1, timeout=300)


@pytest.fixture
def our_families(monkeypatch):
    """The test families (tests/library/_dask_tasks.py) registered for the test's build."""
    for name, family in TEST_FAMILIES.items():
        monkeypatch.setitem(FAMILIES, name, family)
    assert all(FAMILIES[name] is family for name, family in TEST_FAMILIES.items())


@pytest.fixture(scope="module")
def local_tiny(data, tmp_path_factory):
    """tiny.yaml built here with one thread, as each dask worker runs."""
    X, y = data
    with threadpool_limits(1):
        store = tmp_path_factory.mktemp("local") / "store"
        return build_library(X, y, spec="tiny", cv=CV, store=store, n_jobs=1, verbose=0)


def test_growth_on_a_cluster_proposes_one_run_per_worker_thread(
    client, data, tmp_path, monkeypatch
):
    X, y = data
    batches = []

    def grow_runs(spec, predictions, runs, y, fit):
        batches.append(spec.batch)
        return []

    monkeypatch.setattr(builder, "grow_runs", grow_runs)
    for grow in ({"trials": 2}, {"trials": 2, "batch": 5}):
        build_library(
            X, y, spec="tiny", cv=CV, store=tmp_path / str(len(batches)), n_jobs=1,
            backend="dask", client=client, grow=grow, verbose=0,
        )  # fmt: skip
    assert batches == [sum(client.nthreads().values()), 5] and batches[0] > 1


def assert_same_library(lib, ref) -> None:
    columns = ["id", "run", "family", "calibration", "stage", "status"]
    pd.testing.assert_frame_equal(lib.members[columns], ref.members[columns])
    np.testing.assert_allclose(lib.predictions, ref.predictions, rtol=0, atol=1e-12)
    statuses = {r: rec["status"] for r, rec in lib.store.records.items()}
    assert statuses == {r: rec["status"] for r, rec in ref.store.records.items()}


def test_dask_build_equals_the_local_build(data, client, local_tiny, tmp_path):
    X, y = data
    lib = build_library(
        X, y, spec="tiny", cv=CV, store=tmp_path / "s", backend="dask", client=client, verbose=0
    )
    assert len(lib.failures) == 0 and lib.n_members == local_tiny.n_members
    assert_same_library(lib, local_tiny)
    # the fitted siblings came back whole: test-time predictions agree too
    X_new = X.iloc[:50]
    np.testing.assert_allclose(lib.predict(X_new), local_tiny.predict(X_new), rtol=0, atol=1e-12)


def test_dask_regression_build_equals_the_local_build(data, client, tmp_path):
    """A regression library (task: regression, plain folds, label-free detectors) builds on
    the cluster exactly as here."""
    X, _ = data
    y = X["mean area"].to_numpy() / 100.0  # a numeric target
    X = X.drop(columns=["mean area", "mean perimeter", "mean radius"])
    spec = {
        "task": "regression",
        "families": [
            {"family": "linear", "params": {"ridge": [None, 1.0]}},
            {"family": "random_forest", "params": {"max_features": 0.5}, "stages": [4, 8]},
        ],
        "detectors": [{"detector": "box"}],
    }
    with threadpool_limits(1):
        ref = build_library(X, y, spec=spec, cv=CV, store=tmp_path / "here", verbose=0)
    lib = build_library(
        X, y, spec=spec, cv=CV, store=tmp_path / "dask", backend="dask", client=client, verbose=0
    )
    assert lib.task == "regression" and lib.n_members == 4
    assert_same_library(lib, ref)
    np.testing.assert_allclose(lib.predict(X.iloc[:20]), ref.predict(X.iloc[:20]), atol=1e-12)


def _kill_a_busy_worker(client, stop: threading.Event, killed: list) -> None:
    """SIGKILL the process of the first worker seen running a task."""
    pids = client.run(os.getpid)

    def executing(dask_scheduler):
        workers = dask_scheduler.workers.values()
        return [(ws.address, ts.key) for ws in workers for ts in ws.executing]

    while not stop.is_set():
        busy = [(a, k) for a, k in client.run_on_scheduler(executing) if k.startswith("ensel-fit")]
        if busy:
            address, key = busy[0]
            os.kill(pids[address], signal.SIGKILL)
            killed.append(key)
            return
        time.sleep(0.02)


def test_a_worker_killed_mid_build_loses_nothing(data, client, local_tiny, tmp_path):
    X, y = data
    stop, killed = threading.Event(), []
    killer = threading.Thread(target=_kill_a_busy_worker, args=(client, stop, killed))
    killer.start()
    try:
        lib = build_library(
            X, y, spec="tiny", cv=CV, store=tmp_path / "s", backend="dask", client=client, verbose=0
        )
    finally:
        stop.set()
        killer.join()
    assert killed, "no worker was killed during the build"
    assert len(lib.failures) == 0
    assert_same_library(lib, local_tiny)


def test_a_member_that_kills_its_workers_fails_with_the_reason(
    data, client, our_families, tmp_path
):
    X, y = data
    ridges = [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]
    # first in the spec, with more runs queued behind it than workers take at once: a worker
    # then holds only the run it runs, so the killer's deaths charge no bystander
    spec = {"families": [{"family": "killer"}, {"family": "logreg", "params": {"ridge": ridges}}]}
    lib = build_library(
        X, y, spec=spec, cv=CV, store=tmp_path / "s", backend="dask", client=client, verbose=0
    )
    assert list(lib.failures["family"]) == ["killer"]
    error = lib.failures["error"].iloc[0]
    assert "killed 2 dask workers" in error and "allowed-failures=1" in error
    assert lib.n_members == len(ridges) and (lib.members["status"] == "ok").all()


def test_a_run_past_its_time_limit_is_stopped_with_its_worker(client):
    runs = DaskExecutor(client).run(task, ["sleep", "ok", "raise"], 21, Budget(run_limit=1))
    outcomes = list(runs)
    by_index = {o.index: o for o in outcomes}
    assert [by_index[i].status for i in range(3)] == ["timeout", "ok", "failed"]
    assert "time limit of 1 s" in by_index[0].error and by_index[0].seconds >= 1
    assert by_index[1].value == 42 and by_index[2].error.startswith("RuntimeError: bad param")
    assert [o.value for o in DaskExecutor(client).run(task, ["ok"], 1)] == [2]


@pytest.mark.slow
def test_the_end_of_the_budget_stops_every_live_run(client):
    """A build's time budget that ends with runs on the cluster records each as ``budget``."""
    budget = Budget(deadline=time.monotonic() + 3)
    runs = DaskExecutor(client).run(task, ["sleep", "sleep", "sleep"], 21, budget)
    outcomes = list(runs)
    assert sorted(o.index for o in outcomes) == [0, 1, 2]
    assert {o.status for o in outcomes} == {"budget"}


def test_under_a_deadline_each_run_is_asked_about_just_before_it_is_sent(two_workers):
    """Under a build's deadline the runs go to the cluster as its workers free up and ``skip``
    is asked just before each is sent, as the local pool asks before each start."""
    executor = DaskExecutor(two_workers)
    assert executor.slots == 2
    seen: list = []  # outcomes yielded so far
    asked: dict = {}  # task index -> outcomes seen when it was asked about

    def skip(i: int) -> str | None:
        asked[i] = len(seen)
        return "not started: the pace says no" if i == 3 else None

    budget = Budget(deadline=time.monotonic() + 120)
    for outcome in executor.run(task, ["ok"] * 5, 1, budget, skip=skip):
        seen.append(outcome)
    by_index = {o.index: o for o in seen}
    assert sorted(asked) == sorted(by_index) == [0, 1, 2, 3, 4]
    assert [asked[i] for i in (0, 1)] == [0, 0] and asked[2] >= 1  # two at a time
    assert by_index[3].status == "budget" and by_index[3].error == "not started: the pace says no"
    assert all(by_index[i].value == 2 for i in (0, 1, 2, 4))


@pytest.mark.parametrize("estimate", [0.5, 1e6])
def test_a_budgeted_dask_build_plans_for_its_workers_and_paces_standby_runs(
    data, two_workers, monkeypatch, tmp_path, estimate
):
    """As on the local pool, the plan is made for the cluster's workers and a run it put on
    standby starts where the pace of the finished runs says it ends in time: dask once sent
    the plan's runs all at once, planned for one worker and with no standby runs, and a fit
    of 60 s on 2 workers returned after 36 s with 86 runs not started."""
    calls: list = []
    monkeypatch.setattr(build_plan, "plan_library", stand_in_planner(calls, tree_standby=estimate))
    X, y = data
    spec = {
        "families": [
            {"family": "logreg", "params": {"ridge": [1.0, 10.0]}, "calibration": ["none"]},
            {"family": "tree", "params": {"max_depth": 3}, "calibration": ["none"]},
        ]
    }
    lib = build_library(
        X, y, spec=spec, cv=CV, store=tmp_path / "s", backend="dask", client=two_workers,
        time_limit=120, verbose=0,
    )  # fmt: skip
    plan_options = calls[0][3]
    assert plan_options["n_workers"] == 2
    assert plan_options["max_memory_bytes"] is None  # the workers' memory is not the client's
    if estimate < 1:  # the estimate was pessimistic: the tree is built after all
        assert set(lib.members["family"]) == {"logreg", "tree"} and lib.failures.empty
    else:
        assert_the_tree_waited_out_the_pace(lib)


RESUME_SCRIPT = """
import sys
from distributed import Client
from sklearn.datasets import load_breast_cancer
from ensel.library import build_library
from ensel.library.families import FAMILIES
from tests.library._dask_tasks import CV, QUICK, TEST_FAMILIES

FAMILIES.update(TEST_FAMILIES)
X, y = load_breast_cancer(return_X_y=True, as_frame=True)
with Client(sys.argv[1]) as client:
    build_library(X.iloc[:200], y.iloc[:200], spec=QUICK, cv=CV, store=sys.argv[2],
                  backend="dask", client=client, verbose=0)
"""


@pytest.mark.slow
def test_a_restarted_client_resumes_from_the_store(data, client, our_families, tmp_path):
    X, y = data
    store = tmp_path / "s"
    manifest = store / "manifest.jsonl"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), *sys.path]))
    first = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(RESUME_SCRIPT), client.scheduler.address, store],
        cwd=ROOT,
        env=env,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 300  # generous: CI machines are slow and shared
        while not (manifest.exists() and manifest.read_text().count("\n") >= 2):
            assert first.poll() is None, "the first client ended before it was killed"
            assert time.monotonic() < deadline, "the first client wrote nothing"
            time.sleep(0.02)
    finally:
        first.kill()
        first.wait()
    before = manifest.read_text()
    n_runs = 8
    assert 2 <= before.count("\n") < n_runs, "kill the client mid-build"
    lib = build_library(
        X, y, spec=QUICK, cv=CV, store=store, backend="dask", client=client, verbose=0
    )
    after = manifest.read_text()
    assert after.startswith(before)  # nothing finished was written again
    run_ids = [line.split('"run": "')[1].split('"')[0] for line in after.splitlines()]
    assert len(run_ids) == len(set(run_ids)) == n_runs
    assert lib.n_members == 6 + 2 * 2 and len(lib.failures) == 0


def test_dask_arguments_are_checked(monkeypatch):
    with pytest.raises(ValueError, match="backend='dask' needs a dask cluster"):
        make_executor(1, "dask", None)  # no client given and none current
    with pytest.raises(ValueError, match="client is for backend='dask'"):
        make_executor(1, "local", "tcp://127.0.0.1:1")
    with pytest.raises(ValueError, match=r"backend='spark': use one of \['dask', 'local'\]"):
        make_executor(1, "spark", None)
    with pytest.raises(TypeError, match=r"client must be a distributed\.Client or a scheduler"):
        make_executor(1, "dask", 42)
    with pytest.raises(ValueError, match="n_workers=0"):
        local_cluster(0)

    # as if dask were not installed; sys.modules stays as it is, for the nannies in this
    # process import from it when they restart a worker
    def import_module(name):
        raise ModuleNotFoundError(f"No module named {name!r}")

    monkeypatch.setattr(optional, "importlib", SimpleNamespace(import_module=import_module))
    with pytest.raises(
        ImportError,
        match=r"backend='dask' needs the optional package 'distributed'.*"
        r"pip install 'ensel\[dask\]'",
    ):
        make_executor(1, "dask", None)


def test_cli_builds_on_a_scheduler(data, client, tmp_path, capsys):
    X, y = data
    X.assign(target=y).to_csv(tmp_path / "train.csv", index=False)
    spec = tmp_path / "small.yaml"
    spec.write_text("families:\n  - family: logreg\n    params: {ridge: [1.0, 100.0]}\n")
    argv = ["fit", str(tmp_path / "train.csv"), "--target", "target", "--out", str(tmp_path / "m")]
    argv += ["--library", str(spec), "--cv", str(CV)]
    assert main([*argv, "--scheduler", client.scheduler.address]) == 0
    assert "members have weight in the ensemble" in capsys.readouterr().out
    model = EnsembleSelectionClassifier.load(tmp_path / "m" / "model.pkl")
    assert model.client == client.scheduler.address and model.backend == "dask"
    assert main([*argv, "--dask-local", "0"]) == 2
    assert "n_workers=0: a LocalCluster needs at least one worker" in capsys.readouterr().err
