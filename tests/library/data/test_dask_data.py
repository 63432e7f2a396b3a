"""Data beyond the client's memory on a dask cluster: a library and an estimator fitted from a
parquet directory or a dask DataFrame on a LocalCluster of 2 worker processes equal those fitted
from the same table in memory; predictions of a dask DataFrame, partition by partition on the
workers, equal the in-memory ones bitwise; a lost worker's partition is predicted again; a bad
partition is named in the error."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer
from threadpoolctl import threadpool_limits

from ensel import EnsembleSelectionClassifier
from ensel.library import build_library

distributed = pytest.importorskip("distributed")
dd = pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")

from ensel.estimator.dask_predict import iter_blocks  # noqa: E402
from ensel.library.execution.dask_executor import local_cluster  # noqa: E402

from .._dask_tasks import KillOnce  # noqa: E402

CV = 3
OPTIONS = {"n_bags": 4, "verbose": 0, "max_predict_ms": None}
"""No predict-time budget: "auto" picks from timings, which differ between two fits."""


@pytest.fixture(scope="module")
def client():
    """The default client of this module (predictions send the model to it)."""
    with local_cluster(2) as cluster, distributed.Client(cluster) as client:
        yield client


@pytest.fixture(autouse=True)
def _workers_up(request):
    """Tests that use the cluster start with a worker up (one may have been killed, and a
    nanny on a loaded machine may not bring it back; no test here needs both)."""
    if "client" in request.fixturenames:
        request.getfixturevalue("client").wait_for_workers(1, timeout=120)


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """A messy table in a parquet directory (two files, row groups of 50) and the same table
    read into memory."""
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X = X.iloc[:200, :12].copy()
    X["colour"] = np.where(np.arange(200) % 3 == 0, "red", "blue")
    X.loc[[4, 40], "colour"] = None
    X["reading"] = X["mean radius"].round(2).astype(str)
    X.loc[[3, 7], "reading"] = "?"  # a numeric column with a stray token
    X["label"] = np.where(y.iloc[:200].to_numpy() == 1, "benign", "malignant")
    path = tmp_path_factory.mktemp("table")
    X.iloc[:120].to_parquet(path / "part-0.parquet", row_group_size=50)
    X.iloc[120:].to_parquet(path / "part-1.parquet", row_group_size=50)
    full = pd.read_parquet(path)
    return path, full.drop(columns="label"), full["label"]


@pytest.fixture(scope="module")
def in_memory(table, tmp_path_factory):
    """The library of the table in memory, built here with one thread (as a worker runs)."""
    _, X, y = table
    with threadpool_limits(1), pytest.warns(UserWarning, match="'reading' is numeric"):
        return build_library(
            X, y, spec="tiny", cv=CV, store=tmp_path_factory.mktemp("mem") / "s", verbose=0
        )


def assert_same_library(lib, ref) -> None:
    """Same data (fingerprint), members and predictions; models fitted in two processes may
    differ in the last bits (float32 subnormals, BLAS paths), as in tests/library/test_dask.py."""
    assert lib.store.header["fingerprint"] == ref.store.header["fingerprint"]
    columns = ["id", "run", "family", "calibration", "stage", "status"]
    pd.testing.assert_frame_equal(lib.members[columns], ref.members[columns])
    P, ref_P = np.asarray(lib.predictions), np.asarray(ref.predictions)
    np.testing.assert_allclose(P, ref_P, rtol=0, atol=1e-12)
    assert lib.columns == ref.columns and lib.categories == ref.categories


def test_build_from_parquet_on_the_cluster_equals_the_frame_in_memory(
    table, in_memory, client, tmp_path
):
    path, X, _ = table
    with pytest.warns(UserWarning, match=r"'reading' is numeric .* \['\?'\] in 2 cell"):
        lib = build_library(
            str(path), "label", spec="tiny", cv=CV, store=tmp_path / "s", backend="dask",
            client=client, verbose=0,
        )  # fmt: skip
    assert_same_library(lib, in_memory)
    det, ref_det = lib.detectors, in_memory.detectors
    assert det.store.header["fingerprint"] == ref_det.store.header["fingerprint"]  # background
    got, expected = lib.predict(X.iloc[:30]), in_memory.predict(X.iloc[:30])
    # fitted on a worker and here: float64 test-time outputs agree to ~1e-10 (seen 6e-11)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)


def test_build_from_a_dask_frame_on_the_cluster_equals_its_computed_frame(table, client, tmp_path):
    path, _, _ = table
    ddf = dd.read_parquet(str(path)).repartition(npartitions=3)
    frame = ddf.compute()
    with threadpool_limits(1), pytest.warns(UserWarning):
        ref = build_library(
            frame.drop(columns="label"), frame["label"], spec="tiny", cv=CV,
            store=tmp_path / "mem", verbose=0,
        )  # fmt: skip
    with pytest.warns(UserWarning, match="'reading' is numeric"):
        lib = build_library(
            ddf.drop(columns="label"), ddf["label"], spec="tiny", cv=CV, store=tmp_path / "s",
            backend="dask", client=client, verbose=0,
        )  # fmt: skip
    assert_same_library(lib, ref)


@pytest.fixture(scope="module")
def fitted(table, client):
    """A classifier fitted from the parquet directory on the cluster."""
    path, _, _ = table
    with pytest.warns(UserWarning):
        return EnsembleSelectionClassifier(
            library="tiny", cv=CV, backend="dask", client=client, **OPTIONS
        ).fit(str(path), "label")


def test_estimator_from_parquet_equals_the_estimator_in_memory(table, fitted):
    _, X, y = table
    with threadpool_limits(1), pytest.warns(UserWarning):
        ref = EnsembleSelectionClassifier(library="tiny", cv=CV, n_jobs=1, **OPTIONS)
        ref.fit(X, y)
    np.testing.assert_array_equal(fitted.weights_, ref.weights_)
    assert list(fitted.feature_names_in_) == list(X.columns)
    np.testing.assert_allclose(fitted.predict_proba(X), ref.predict_proba(X), rtol=0, atol=1e-9)


def test_a_budgeted_fit_from_parquet_in_worker_processes(table):
    """Under ``time_limit`` the build is planned before it starts, and its views used to be
    timed on the client's rows, which a parquet source does not hold there (an IndexError)."""
    path, X, _ = table
    with pytest.warns(UserWarning):
        model = EnsembleSelectionClassifier(
            library="tiny", cv=CV, n_jobs=2, time_limit=60, **OPTIONS
        ).fit(str(path), "label")
    assert model.budget_.plan["runs"] and model.budget_.library == "tiny"
    assert model.predict_proba(X).shape == (len(X), 2)


def test_predictions_of_a_dask_frame_equal_the_frame_in_memory_bitwise(table, fitted, client):
    path, _, _ = table
    ddf = dd.read_parquet(str(path)).drop(columns="label").repartition(npartitions=4)
    frame = ddf.compute()
    proba = fitted.predict_proba(ddf)
    assert type(proba).__module__.startswith("dask.array")  # lazy, one block per partition
    assert proba.numblocks == (4, 1)
    np.testing.assert_array_equal(client.compute(proba).result(), fitted.predict_proba(frame))
    labels = client.compute(fitted.predict(ddf)).result()
    np.testing.assert_array_equal(labels, fitted.predict(frame))
    risk = fitted.risk(ddf)
    expected = fitted.risk(frame)
    got = client.compute(risk).result()
    pd.testing.assert_frame_equal(got.reset_index(drop=True), expected)
    # one partition's predictions at a time on this machine, in order
    blocks = list(iter_blocks(proba, client))
    assert len(blocks) == 4
    np.testing.assert_array_equal(np.concatenate(blocks), fitted.predict_proba(frame))


def test_a_worker_lost_while_predicting_a_partition_is_retried(table, fitted, client, tmp_path):
    path, _, _ = table
    ddf = dd.read_parquet(str(path)).drop(columns="label").repartition(npartitions=2)
    frame = ddf.compute()
    expected = fitted.predict_proba(frame)
    members = fitted.fitted_members_
    first = next(iter(members.runs))
    marker = tmp_path / "killed"
    runs = {**members.runs, first: KillOnce(members.runs[first], str(marker))}
    fitted.fitted_members_ = dataclasses.replace(members, runs=runs)
    try:
        got = client.compute(fitted.predict_proba(ddf)).result()
    finally:
        fitted.fitted_members_ = members
    assert marker.exists()  # a worker died predicting a partition
    np.testing.assert_array_equal(got, expected)


def test_a_partition_with_a_bad_column_is_named_in_the_error(table, fitted, client):
    _, X, _ = table
    parts = [X.iloc[:70], X.iloc[70:140].drop(columns=["mean texture"]), X.iloc[140:]]
    ddf = dd.from_map(lambda i: parts[i], range(3), meta=X.iloc[:0], enforce_metadata=False)
    with pytest.raises(ValueError) as error:
        client.compute(fitted.predict_proba(ddf)).result()
    message = str(error.value)
    assert message.startswith("partition 1 of X: X lacks column(s) ['mean texture']")
    assert "\n" not in message
