"""Every family declares what the engines need of it (its traits), and the engines that plan,
schedule, price and grow a library read those declarations and name no family."""

from __future__ import annotations

import ast
import importlib
import inspect

import pytest

from ensel.library.families import (
    FAMILIES,
    REGRESSORS,
    CostModel,
    FamilyTraits,
    FitShape,
    traits_of,
)
from ensel.library.families._traits import UNRANKED

REGISTRIES = {"classification": FAMILIES, "regression": REGRESSORS}
ALL = [(task, name) for task, reg in REGISTRIES.items() for name in sorted(reg)]
ENGINES = (
    "planning.schedule",
    "planning.run_plan",
    "planning.build_plan",
    "planning.estimate",
    "planning.memory",
    "planning.predict_work",
    "planning.cost",
    "planning.grow",
    "planning.gain",
    "builder",
    "execution.runs",
)


@pytest.mark.parametrize(("task", "name"), ALL)
def test_every_registered_family_declares_its_traits(task, name):
    traits = REGISTRIES[task][name].traits
    assert isinstance(traits, FamilyTraits) and isinstance(traits.cost, CostModel)
    assert traits_of(name, task) is traits
    assert traits.rank < UNRANKED  # every shipped family is ranked
    cost = traits.cost
    assert cost.estimates and cost.predict_work is not None and cost.memory_factor > 0
    params = dict(REGISTRIES[task][name].params)
    stages = REGISTRIES[task][name].test_stages
    assert traits.relative_cost(params, stages) > 0
    shape = FitShape(1000, 12, 1 if task == "regression" else 2, 200, params, max(stages or (1,)))
    assert cost.fit(shape) > 0 and cost.memory(shape) > 0
    calls, units = cost.predict(shape)
    assert calls >= 1 and units > 0
    assert cost.held_bytes(params, stages, 1000, 12) > 0
    assert isinstance(traits.deferred(params), bool) and isinstance(traits.quadratic(params), bool)


def test_ranks_order_the_families_and_a_name_not_registered_gets_the_defaults():
    ranks = {name: f.traits.rank for name, f in FAMILIES.items()}
    assert len(set(ranks.values())) == len(ranks)  # a strict order among classifiers
    assert ranks["lightgbm"] < ranks["random_forest"] < ranks["logreg"] < ranks["svm"]
    default = traits_of("not_a_family")
    assert default == FamilyTraits() and default.rank == UNRANKED
    assert not default.cost.estimates and default.cost.predict_work is None
    assert default.relative_cost({}, None) == 1.0 and default.quick is None
    assert traits_of("svr") == FamilyTraits()  # svr is a regression family only
    assert traits_of("svr", "regression").rank > ranks["svm"]


def test_quick_families_and_quadratic_rules_are_declared():
    quick = {name: f.traits.quick for name, f in FAMILIES.items() if f.traits.quick is not None}
    assert set(quick) == {"logreg", "naive_bayes", "tree"}
    assert REGRESSORS["linear"].traits.quick is not None
    svm = FAMILIES["svm"].traits
    assert svm.quadratic({"kernel": "rbf"}) and not svm.quadratic({"kernel": "linear"})
    assert svm.deferred({"kernel": "rbf"}) and not svm.deferred({"kernel": "linear"})
    bayes = FAMILIES["naive_bayes"].traits
    assert bayes.quadratic({"kind": "kernel"}) and not bayes.deferred({"kind": "kernel"})
    assert not bayes.quadratic({"kind": "normal"})


def _family_modules() -> set[str]:
    return {
        f.fit.__module__.rsplit(".", 1)[-1] for reg in REGISTRIES.values() for f in reg.values()
    }


def _family_names() -> set[str]:
    return {name for reg in REGISTRIES.values() for name in reg}


@pytest.mark.parametrize("engine", ENGINES)
def test_the_engines_name_no_family(engine):
    """No string in an engine's code is a family's name (docstrings are prose, not names)."""
    module = importlib.import_module(f"ensel.library.{engine}")
    tree = ast.parse(inspect.getsource(module))
    docstrings = {  # a string standing alone as a statement: a docstring
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    names = _family_names()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) in docstrings:
                continue
            words = set(node.value.replace("/", " ").replace(",", " ").split())
            found += sorted(words & names)
        module_name = node.module if isinstance(node, ast.ImportFrom) else None
        if module_name and module_name.split(".")[-1] in _family_modules():
            found.append(module_name)  # a family's own module
    assert not found, f"ensel.library.{engine} names families: {found}"


def test_the_engines_keep_no_table_keyed_by_family():
    """The tables that once held what each family is are gone from the engines."""
    gone = {
        "planning.schedule": ("STRENGTH", "QUADRATIC"),
        "planning.estimate": ("FIT_MODELS",),
        "planning.memory": ("FAMILY_FACTOR", "DETECTOR_ROWS"),
        "planning.predict_work": ("PREDICT_WORK", "SEPARATE_STAGES"),
        "planning.grow": ("GROW_SPACES", "DEFAULT_FAMILIES"),
        "builder": ("QUICK_FAMILIES",),
    }
    for engine, names in gone.items():
        module = importlib.import_module(f"ensel.library.{engine}")
        assert not [n for n in names if hasattr(module, n)], engine
