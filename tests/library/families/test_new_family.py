"""A new family is one module and a spec entry: a nearest-centroid family declared here, in the
test's own module, with its traits (rank, relative cost, cost model with first-estimate
constants, predict work), is estimated, ordered, built and priced by the engines, none of which
names it."""

from dataclasses import dataclass

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

from ensel.library import build_library
from ensel.library.families import FAMILIES
from ensel.library.families._base import Family, Run
from ensel.library.families._traits import CostModel, FamilyTraits
from ensel.library.planning.cost import cost_constants
from ensel.library.planning.estimate import estimate_run
from ensel.library.planning.predict_work import predict_work
from ensel.library.planning.schedule import anytime_order, relative_cost

FIT = {"exponent": 1.0, "overhead_s": 0.25, "s_per_unit": 1e-6, "worst_factor": 1.2}
PREDICT = {"ms_per_call": 0.5, "ms_per_unit": 0.01, "worst_factor": 1.2}


@dataclass
class CentroidRun(Run):
    """Class centroids; probabilities a softmax of minus the squared distances."""

    centroids: np.ndarray

    def predict(self, X, stages=None):
        d = ((X[:, None, :] - self.centroids[None]) ** 2).sum(axis=2)
        e = np.exp(-(d - d.min(axis=1, keepdims=True)))
        return {"none": (e / e.sum(axis=1, keepdims=True))[None]}


def fit_centroid(X, y, *, n_classes, params, stages, random_state):
    shrink = params["shrink"]
    centroids = np.stack([X[y == c].mean(axis=0) * (1 - shrink) for c in range(n_classes)])
    return CentroidRun(centroids)


def centroid_work(run, params, stages, width, outputs):
    return [(1.0, float(run.centroids.size))] * len(stages)


CENTROID = Family(
    name="centroid",
    fit=fit_centroid,
    params={"shrink": 0.0},
    view="standardized",
    traits=FamilyTraits(
        rank=0.5,
        relative_cost=lambda params, stages: 1.0 + params["shrink"],
        cost=CostModel(
            fit=lambda s: float(s.n * s.d),
            memory=lambda s: float(8 * s.d * s.k),
            predict=lambda s: (1.0, float(s.d * s.k)),
            predict_work=centroid_work,
            constants={"fit": FIT, "predict": PREDICT},
        ),
    ),
)
SPEC = {
    "families": [
        {"family": "logreg", "calibration": ["none"]},
        {"family": "centroid", "params": {"shrink": [0.0, 0.5]}, "calibration": ["none"]},
    ]
}


@pytest.fixture
def centroid(monkeypatch):
    monkeypatch.setitem(FAMILIES, "centroid", CENTROID)


def test_its_own_constants_estimate_a_run(centroid):
    est = estimate_run("centroid", {"shrink": 0.0}, None, n_rows=1000, n_cols=10, n_classes=2)
    assert est.fit_seconds == pytest.approx(FIT["overhead_s"] + FIT["s_per_unit"] * 1000 * 10)
    assert est.peak_bytes == pytest.approx(8 * 1000 * 10 + 8 * 10 * 2)
    table = cost_constants()["predict"]
    view = table.get("view/standardized") or table["default"]
    own = PREDICT["ms_per_call"] + 10 * 2 * PREDICT["ms_per_unit"]  # one call, d k units
    assert est.predict_ms == pytest.approx(own + view["ms_per_call"] + 2 * 10 * view["ms_per_unit"])


def test_its_rank_and_relative_cost_order_the_runs(centroid):
    assert relative_cost("centroid", {"shrink": 0.5}, None) == 1.5
    from ensel.library.spec import load_spec

    runs = load_spec(SPEC).runs
    tasks = [("families", run) for run in runs]
    order = [runs[i].family for i in anytime_order(tasks, n_rows=500)]
    assert order[0] == "centroid"  # rank 0.5 comes before logreg


def test_it_builds_and_its_predict_work_prices_its_members(centroid):
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    lib = build_library(X.iloc[:300], y.iloc[:300], spec=SPEC, cv=3, verbose=0)
    families = list(lib.members["family"])
    assert families.count("centroid") == 2
    P = np.asarray(lib.predictions)[families.index("centroid")]
    assert np.all((P >= 0) & (P <= 1)) and P.std() > 0
    run = CentroidRun(np.zeros((2, 30)))
    assert predict_work("centroid", run, {}, [None], 30, 2) == [(1.0, 60.0)]
    # the build recorded each run's predict cost from its declared work and constants:
    # one call and 2 x 30 centroid cells per row
    records = [r for r in lib.store.records.values() if r["family"] == "centroid"]
    expected = PREDICT["ms_per_call"] + 60 * PREDICT["ms_per_unit"]
    assert len(records) == 2
    assert all(r["predict_ms"]["stages"] == [pytest.approx(expected)] for r in records)
