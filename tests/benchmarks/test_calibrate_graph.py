"""benchmarks/calibrate_graph.py: the graph cost is linear in its constants (the features the
fit reads are costs under unit constants), the fit recovers known constants, and a quick run
writes a ``graph`` block beside the file's other keys."""

import json

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("skl2onnx")

from benchmarks import calibrate_graph
from ensel.estimator.export.graph_cost import CONSTANTS, graph_constants, graph_cost
from ensel.library import build_library

SPEC = {
    "name": "g",
    "families": [
        {"family": "logreg", "params": {"ridge": [1.0]}},
        {"family": "random_forest", "params": {"max_features": [2]}, "stages": [4, 32]},
        {"family": "tree", "params": {"ccp_alpha": [0.0]}},
    ],
}


def test_graph_cost_is_its_features_times_its_constants(tmp_path):
    X, y = calibrate_graph.table("mixed", 300)
    lib = build_library(X, y, spec=SPEC, cv=3, store=tmp_path / "s", verbose=0)
    members, rng = lib.members, np.random.default_rng(0)
    constants = dict(zip(CONSTANTS, rng.uniform(0.5, 2.0, len(CONSTANTS)).tolist(), strict=True))
    cost = graph_cost(members, lib, "classification", 3, 2, constants)
    basis = {
        k: graph_cost(members, lib, "classification", 3, 2, calibrate_graph.unit_constants(k))
        for k in CONSTANTS
    }
    for chosen in ([0], [0, 1], list(range(len(members)))):
        features = np.array([basis[k].of(chosen) for k in CONSTANTS])
        assert cost.of(chosen) == pytest.approx(features @ np.array(list(constants.values())))
    assert basis["fixed_ms"].of([0]) == basis["fixed_ms"].of([0, 1]) == 1.0  # paid once
    assert basis["view_ms"].of([0]) == 3.0  # one view per fold sibling
    assert basis["member_ms"].of([0, 1]) == 2.0
    assert basis["category_ms"].of([0]) == 3.0 * 3  # three categorical columns per view
    twice = {k: 2 * v for k, v in constants.items()}
    doubled = graph_cost(members, lib, "classification", 3, 2, twice)
    assert doubled.of([0, 1]) == pytest.approx(2 * cost.of([0, 1]))


def test_the_fit_recovers_known_constants():
    rng = np.random.default_rng(1)
    truth = dict(zip(CONSTANTS, [0.05, 0.01, 0.02, 0.03, 0.01, 30.0, 80.0, 2.0, 0.1], strict=True))
    rows = []
    for _ in range(80):
        features = {k: float(rng.uniform(0, 10) * (1e-3 if "ns" in k else 1)) for k in CONSTANTS}
        features["fixed_ms"] = 1.0
        ms = sum(truth[k] * features[k] for k in CONSTANTS) * rng.uniform(0.98, 1.02)
        rows.append({"features": features, "p50_ms": ms, "p99_ms": 1.5 * ms})
    held_out = np.arange(80) % 5 == 0
    constants, fit = calibrate_graph.fit_constants(rows, held_out)
    for k in CONSTANTS:
        assert constants[k] == pytest.approx(truth[k], rel=0.1)
    assert fit["worst_relative_error"] < 0.05
    assert fit["p99_over_p50"] == pytest.approx(1.5)


@pytest.mark.slow
def test_a_quick_run_writes_the_graph_block_only(tmp_path, monkeypatch):
    path = tmp_path / "constants.json"
    path.write_text(calibrate_graph.OUT.read_text())
    before = json.loads(path.read_text())
    monkeypatch.setattr(calibrate_graph, "QUICK_SETS", 6)
    calibrate_graph.main(["--quick", "--out", str(path)])
    after = json.loads(path.read_text())
    assert {k: v for k, v in after.items() if k != "graph"} == {
        k: v for k, v in before.items() if k != "graph"
    }
    assert set(CONSTANTS) <= set(after["graph"])
    assert all(after["graph"][k] >= 0 for k in CONSTANTS)
    assert after["graph"]["measured"]["sets"] == 6
    assert graph_constants() == {k: before["graph"][k] for k in CONSTANTS}  # the shipped file
