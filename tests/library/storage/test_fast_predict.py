"""FittedMembers.predict (shared views, only the wanted stages and calibrations, batches,
threads) gives what each kept run's full prediction gives for those members."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_iris

from ensel.library import build_library

SPEC = {
    "families": [
        {"family": "logreg", "params": {"ridge": [1.0]}, "calibration": ["none", "platt"]},
        {"family": "tree", "params": {"max_depth": 3}, "calibration": ["none", "isotonic"]},
        {"family": "adaboost", "stages": [2, 8], "calibration": ["none", "logistic", "platt"]},
        {"family": "knn", "stages": [1, 5, 9], "calibration": ["none"]},
        {"family": "mlp", "params": {"hidden": 4}, "stages": [2, 4], "calibration": ["none"]},
    ]
}


@pytest.fixture(scope="module", params=[2, 3], ids=["binary", "multiclass"])
def library(request):
    X, y = load_iris(return_X_y=True, as_frame=True)
    X = X.assign(size=pd.cut(X["petal length (cm)"], 3, labels=["s", "m", "l"]).astype(str))
    if request.param == 2:
        y = (y == 2).astype(int)
    return X, build_library(X, y, spec=SPEC, cv=3, verbose=0)


def full_runs(members, X) -> np.ndarray:
    """The reference: every kept run predicts all its siblings, stages and calibrations on its
    own views, and the members are picked from that afterwards."""
    frame = members.frame(X)
    out = None
    for run_id, fitted in members.runs.items():
        rows = members.rows(run_id)
        part = fitted.predict(frame)[members.offsets[rows]]
        if out is None:
            out = np.empty((members.n_members, *part.shape[1:]))
        out[rows] = part
    if members.classes.size == 2:
        return out[..., 1]
    return out


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_fast_path_equals_each_runs_full_prediction_for_any_subset(library, n_jobs):
    X, lib = library
    rng = np.random.default_rng(0)
    ids = list(lib.members["id"])
    for size in (1, 5, len(ids)):
        chosen = list(rng.choice(ids, size, replace=False))
        members = lib.subset(chosen)
        old = full_runs(members, X)
        new = members.predict(X, n_jobs=n_jobs, batch_rows=37)
        np.testing.assert_allclose(new, old, rtol=0, atol=1e-12)
        assert new.shape[0] == size


def test_fast_path_pickles_and_predicts_after(library, tmp_path):
    import pickle

    X, lib = library
    members = lib.subset(list(lib.members["id"][::3]))
    again = pickle.loads(pickle.dumps(members))
    np.testing.assert_allclose(again.predict(X), full_runs(members, X), rtol=0, atol=1e-12)
