"""Predict work counted on fitted runs through what their classes declare (the trees of a tree
run, the rounds a booster kept, a net's snapshots, the run inside a wrapper), checked against
the same counts read straight off the fitted scikit-learn, boosting and weight structures."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from ensel.library.execution.runs import TargetTransformRun
from ensel.library.families import FAMILIES, RunWrapper, missing_requirements
from ensel.library.families._base import ConstantRun, TreesRun
from ensel.library.families._work import unwrap
from ensel.library.planning.predict_work import predict_work

from .test_cost_model import fit


def _work(task, name, run, params, stages, width, outputs):
    return predict_work(name, run, params, list(stages), width, outputs, task=task)


def _prefix(depths: list[int], stages) -> list[tuple[float, float]]:
    """A tree run's ``(calls, node visits)`` for each stage: its first ``s`` trees, each
    called once and visited down to its depth (a stump counts one level)."""
    out = []
    for s in stages:
        n = len(depths) if s is None else min(s, len(depths))
        out.append((float(n), float(sum(max(d, 1) for d in depths[:n]))))
    return out


def test_a_forest_costs_its_trees_depths():
    run, _view, width, outputs, params, _ = fit("classification", "random_forest", stages=(2, 5, 9))
    depths = [t.tree.tree_.max_depth for t in run.trees]  # each _ForestTree's sklearn tree
    stages = (2, 5, 9, None)
    got = _work("classification", "random_forest", run, params, stages, width, outputs)
    assert got == _prefix(depths, stages)


@pytest.mark.parametrize("resample", [True, False])
def test_adaboost_costs_its_steps_trees(resample):
    run, _view, width, outputs, params, stages = fit(
        "classification", "adaboost", params={"resample": resample, "max_depth": 2}
    )
    trees = [e.tree_model_ if resample else e for e in run.estimators]
    assert run.fitted_trees() == trees
    depths = [t.tree_.max_depth for t in trees]
    got = _work("classification", "adaboost", run, params, stages, width, outputs)
    assert got == _prefix(depths, stages)


def test_a_single_tree_costs_its_depth_in_both_tasks_and_through_the_log_target():
    run, _view, width, outputs, params, _ = fit("classification", "tree", stages=None)
    got = _work("classification", "tree", run, params, (None,), width, outputs)
    assert got == [(1.0, float(max(run.trees[0].tree.tree_.max_depth, 1)))]
    run, _view, width, outputs, params, _ = fit("regression", "tree", stages=None)
    expected = [(1.0, float(max(run.model.tree_.max_depth, 1)))]
    assert _work("regression", "tree", run, params, (None,), width, outputs) == expected
    wrapped = TargetTransformRun(run)
    assert _work("regression", "tree", wrapped, params, (None,), width, outputs) == expected


@pytest.mark.parametrize("name", ["random_forest", "adaboost", "bagged_trees"])
def test_regression_tree_runs_cost_their_trees(name):
    run, _view, width, outputs, params, stages = fit("regression", name)
    trees = run.estimators if name == "adaboost" else run.trees
    stages = (*stages, None)
    expected = _prefix([t.tree_.max_depth for t in trees], stages)
    assert _work("regression", name, run, params, stages, width, outputs) == expected


def test_a_booster_costs_the_rounds_it_kept():
    family = FAMILIES["xgboost"]
    if missing_requirements(family):
        pytest.skip(f"needs {missing_requirements(family)}")
    run, _view, width, outputs, params, _ = fit("classification", "xgboost", stages=(2, 5))
    per_round = outputs  # three classes: a tree per class and round
    depth = float(params["max_depth"])
    stages = (2, 5, None)
    assert _work("classification", "xgboost", run, params, stages, width, outputs) == [
        (1.0, r * per_round * depth) for r in (2, 5, 5)
    ]
    stopped = dataclasses.replace(unwrap(run), best=3)  # early stopping kept three rounds
    if isinstance(run, RunWrapper):  # the categorical-code adapter around it
        stopped = dataclasses.replace(run, inner=stopped)
    assert _work("classification", "xgboost", stopped, params, stages, width, outputs) == [
        (1.0, r * per_round * depth) for r in (2, 3, 3)
    ]


def test_a_booster_without_a_kept_round_count_costs_every_stage():
    run, _view, width, outputs, params, _ = fit("classification", "hist_gbdt", stages=(2, 5))
    assert unwrap(run).best is None and params["max_depth"] is None
    depth = math.log2(params["max_leaf_nodes"])  # leaf-wise trees: about log2 of their leaves
    got = _work("classification", "hist_gbdt", run, params, (2, 5), width, outputs)
    assert got == [(1.0, r * outputs * depth) for r in (2, 5)]


def test_a_net_costs_each_snapshots_weights():
    run, _view, width, outputs, params, stages = fit("classification", "mlp")
    sizes = [float(sum(a.size for a in snap)) for snap in run.snapshots]
    got = _work("classification", "mlp", run, params, (*stages, None), width, outputs)
    assert got == [(1.0, sizes[0]), (1.0, sizes[1]), (1.0, sizes[1])]  # past them: the last


def test_a_tabular_net_costs_its_layers_and_an_embedding_lookup_per_column():
    family = FAMILIES["tabular_mlp"]
    if missing_requirements(family):
        pytest.skip(f"needs {missing_requirements(family)}")
    run, _view, width, outputs, params, stages = fit("classification", "tabular_mlp")
    expected = []
    for snap in run.snapshots:
        layers = sum(w.size + b.size for w, b in snap.layers)
        assert snap.embeddings, "the table has a categorical column"
        expected.append((1.0, float(layers + sum(t.shape[1] for t in snap.embeddings))))
    assert _work("classification", "tabular_mlp", run, params, stages, width, outputs) == expected
    constant = ConstantRun(0, len(stages), outputs)
    got = _work("classification", "tabular_mlp", constant, params, stages, width, outputs)
    assert got == [(1.0, 0.0)] * len(stages)


def test_wrappers_declare_the_run_they_hold():
    run, *_ = fit("regression", "tree", stages=None)
    twice = TargetTransformRun(TargetTransformRun(run))
    assert isinstance(twice, RunWrapper) and unwrap(twice) is run
    assert unwrap(run) is run


def test_a_tree_run_that_lists_no_trees_is_named():
    @dataclasses.dataclass
    class Bare(TreesRun):
        stages: tuple

        def predict(self, X, stages=None):
            return {"none": np.zeros((1, len(X), 1))}

    with pytest.raises(NotImplementedError, match="Bare does not list its trees"):
        Bare((1,)).fitted_trees()
