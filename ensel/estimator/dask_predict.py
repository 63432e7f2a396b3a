"""Predictions of a fitted estimator on a dask DataFrame, partition by partition on the workers
(as dask-ml's ``ParallelPostFit`` does): the results are lazy dask collections, one block per
partition, and nothing is computed until the caller asks (``.compute()``, ``.to_parquet``,
``.to_zarr``, or :func:`iter_blocks` for one partition's predictions at a time here).

The fitted model goes to the cluster once: one task unpickles it and every partition's task
depends on it, so each worker receives it once (from a peer) and the scheduler recomputes it
if the workers holding it are lost. A worker lost while predicting a partition has that
partition predicted again on another (the scheduler's retry of lost tasks); a partition whose
columns do not match the training columns fails with the one-line error a bad frame gets,
prefixed with the partition's number.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Iterator

import numpy as np
import pandas as pd
from sklearn.base import is_classifier

from .._imports import optional
from ..library.data.sources import is_dask_frame

__all__ = ["is_dask_frame", "iter_blocks", "predict_partitions"]


def _load_model(payload: bytes):
    return pickle.loads(payload)


def _apply(part: pd.DataFrame, model, method: str, kwargs: dict, partition_info=None):
    """``model.<method>(part)`` on one partition; a bad partition's error names it. The risk
    frame keeps the partition's index, so it lines up with the input's rows."""
    try:
        out = getattr(model, method)(part, **kwargs)
    except (ValueError, TypeError, KeyError) as exc:
        where = "?" if partition_info is None else partition_info["number"]
        text = " ".join(str(exc).split())
        raise type(exc)(f"partition {where} of X: {text}") from None
    if isinstance(out, pd.DataFrame):
        out.index = part.index
    return out


def _shipped(model):
    """A copy of ``model`` to send to the workers: one thread each (a worker runs one partition
    per thread), no client."""
    model = copy.copy(model)
    model.n_jobs = 1
    model.client = None
    return model


def _meta(model, method: str, kwargs: dict):
    """An empty result of ``method``: its type, dtype and columns."""
    if method == "predict_proba":
        return np.empty((0, model.classes_.size), dtype=np.float64)
    if method == "risk":
        names = [*model.detectors_.combination.names, "combined"]
        return pd.DataFrame({n: pd.Series(dtype=np.float64) for n in names})
    if kwargs.get("reject") is not None:
        return np.empty(0, dtype=object)
    return np.empty(0, dtype=model.classes_.dtype if is_classifier(model) else np.float64)


def _model_task(payload: bytes):
    """The future of a task that unpickles the model on the current dask cluster (None
    without one). A future, not a delayed object, so that dask's graph optimisation never
    fuses it into a partition's task (it would with one partition)."""
    try:
        from distributed import default_client
    except ImportError:
        return None
    try:
        client = default_client()
    except ValueError:
        return None
    # the payload travels inside the task (a "large graph" warning for a big ensemble): a
    # scattered payload would live on one worker only and be lost with it, and a lost worker's
    # partitions must be retried
    return client.submit(_load_model, payload, pure=True)


def predict_partitions(model, X, method: str, **kwargs):
    """``model.<method>`` (``predict_proba``, ``predict`` or ``risk``) of every partition of
    the dask DataFrame ``X``: a dask Array (``predict_proba``: ``(n, n_classes)``; ``predict``:
    ``(n,)``) or, for ``risk``, a dask DataFrame with X's index and divisions."""
    dask = optional("dask", "predicting a dask DataFrame")
    if method == "risk" and model.detectors_ is None:
        model.risk(X.head(0) if hasattr(X, "head") else X)  # raises the usual message
    payload = pickle.dumps(_shipped(model), protocol=pickle.HIGHEST_PROTOCOL)
    fitted = _model_task(payload)
    if fitted is None:  # no dask cluster: the local scheduler takes the model as it is
        fitted = dask.delayed(_load_model, pure=True)(payload)
    meta = _meta(model, method, kwargs)
    return X.map_partitions(_apply, fitted, method, kwargs, meta=meta, align_dataframes=False)


def iter_blocks(collection, client=None) -> Iterator:
    """The blocks of a dask Array or partitions of a dask DataFrame, computed on the cluster,
    in order, one at a time on this machine (the next is computed while the caller handles
    one): for writing the predictions of a table larger than the client's memory."""
    blocks = collection.to_delayed()
    blocks = list(np.ravel(blocks)) if isinstance(blocks, np.ndarray) else list(blocks)
    if client is None:
        distributed = optional("distributed", "predicting on a dask cluster")
        client = distributed.default_client()
    ahead = None
    for i, block in enumerate(blocks):
        current = ahead if ahead is not None else client.compute(block)
        ahead = client.compute(blocks[i + 1]) if i + 1 < len(blocks) else None
        yield current.result()
        current.release()
