"""The estimators' parameters as scikit-learn users expect them: every invalid value refused
before any run starts, ``n_jobs`` and ``random_state`` read as scikit-learn reads them,
reproducible default fits, ``check_estimator`` on the estimators as constructed, and
docstrings that list every parameter and fitted attribute once."""

from __future__ import annotations

import inspect
import os
import re

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.utils.estimator_checks import parametrize_with_checks

import ensel._jobs as jobs
import ensel.library.builder as builder
import ensel.library.execution.executor as executor
from ensel import EnsembleSelectionClassifier, EnsembleSelectionRegressor
from ensel.library import build_library
from ensel.library.execution.executor import ProcessExecutor, SerialExecutor, make_executor
from ensel.selection import EnsembleSelection

CLASSIFICATION = {
    "families": [
        {"family": "logreg", "params": {"ridge": [0.01, 100.0]}},
        {"family": "tree", "params": {"max_depth": [2, 5]}},
    ]
}
REGRESSION = {
    "task": "regression",
    "families": [{"family": "linear", "params": {"ridge": [None, 10.0]}}, {"family": "tree"}],
}


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    return X.iloc[:200, :8], y.to_numpy()[:200]


@pytest.fixture(scope="module")
def diabetes():
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    return X.iloc[:200], y.to_numpy()[:200]


@pytest.fixture
def no_runs(monkeypatch):
    """Make any executor (the thing that starts runs and worker processes) fail loudly."""

    def refuse(*args, **kwargs):
        raise AssertionError("an executor was made: a run would have started")

    monkeypatch.setattr(builder, "make_executor", refuse)
    monkeypatch.setattr(executor, "make_executor", refuse)
    for name in list(executor.BACKENDS):
        monkeypatch.setitem(executor.BACKENDS, name, refuse)


BOTH = {
    "library": [(3, "'library' parameter"), ("no_such_spec", "library spec 'no_such_spec'")],
    "metric": [(3, "'metric' parameter"), ("auc", "unknown metric 'auc'")],
    "cv": [(1, "'cv' parameter"), ("five", "'cv' parameter")],
    "strategy": [("best", "'strategy' parameter")],
    "n_iter": [(0, "'n_iter' parameter"), (2.5, "'n_iter' parameter")],
    "n_bags": [(0, "'n_bags' parameter")],
    "bag_fraction": [(0.0, "'bag_fraction' parameter"), (1.5, "'bag_fraction' parameter")],
    "replacement": [("yes", "'replacement' parameter")],
    "sorted_init": [(2, "'sorted_init' parameter")],
    "max_init": [(0, "'max_init' parameter")],
    "prune_fraction": [(0.0, "'prune_fraction' parameter")],
    "refit": [("partial", "'refit' parameter"), (True, "'refit' parameter")],
    "max_predict_ms": [("fast", "'max_predict_ms' parameter"), (-1, "'max_predict_ms'")],
    "store": [(3, "'store' parameter")],
    "n_jobs": [(0, "'n_jobs' parameter"), (1.5, "'n_jobs' parameter")],
    "backend": [("ray", "'backend' parameter")],
    "client": [(3, "'client' parameter")],
    "time_limit": [(0, "'time_limit' parameter"), ("1h", "'time_limit' parameter")],
    "run_time_limit": [(-1, "'run_time_limit' parameter")],
    "max_memory": [
        (-1, "'max_memory' parameter"),
        ("lots", "max_memory='lots': give a positive number"),
        ("1KB", "max_memory=1.0 KB cannot hold the training data"),
    ],
    "random_state": [("seed", "'random_state' parameter"), (-1, "'random_state' parameter")],
    "verbose": [("loud", "'verbose' parameter")],
    "exportable": [("yes", "'exportable' parameter")],
    "levels": [(3, "'levels' parameter"), ("two", "'levels' parameter")],
}
CLASSIFIER_ONLY = {
    "calibrate": [("sometimes", "'calibrate' parameter")],
    "tune_selection": [("yes", "'tune_selection' parameter")],
    "grow": [(-1, "'grow' parameter"), ("lots", "'grow' parameter"), ({"x": 1}, "grow has")],
}


def _cases():
    for cls, table in (
        (EnsembleSelectionClassifier, {**BOTH, **CLASSIFIER_ONLY}),
        (EnsembleSelectionRegressor, BOTH),
    ):
        for name, bad in table.items():
            for value, message in bad:
                yield pytest.param(cls, name, value, message, id=f"{cls.__name__[17:]}-{name}")


@pytest.mark.parametrize("cls", [EnsembleSelectionClassifier, EnsembleSelectionRegressor])
def test_every_parameter_has_an_invalid_value_below(cls):
    """The table of invalid values covers every parameter (a new one needs its row)."""
    table = {**BOTH, **CLASSIFIER_ONLY} if cls is EnsembleSelectionClassifier else BOTH
    assert set(table) == set(cls().get_params())
    assert set(cls._parameter_constraints) == set(cls().get_params())


@pytest.mark.parametrize(("cls", "name", "value", "message"), list(_cases()))
def test_an_invalid_parameter_fails_before_any_run(
    cls, name, value, message, no_runs, tmp_path, cancer, diabetes
):
    X, y = cancer if cls is EnsembleSelectionClassifier else diabetes
    spec = CLASSIFICATION if cls is EnsembleSelectionClassifier else REGRESSION
    params = {"library": spec, "store": tmp_path / "store", "n_jobs": 1, name: value}
    with pytest.raises(ValueError, match=re.escape(message)) as info:
        cls(**params).fit(X, y)
    assert "\n" not in str(info.value)
    assert not (tmp_path / "store").exists()


@pytest.mark.parametrize(
    ("cls", "params", "message"),
    [
        (EnsembleSelectionClassifier, {"strategy": "modsel", "n_bags": 0}, "'n_bags'"),
        (EnsembleSelectionClassifier, {"strategy": "bayesavg", "prune_fraction": 2}, "'prune"),
        (EnsembleSelectionRegressor, {"strategy": "modsel", "n_iter": 0}, "'n_iter'"),
        (EnsembleSelectionClassifier, {"strategy": "modsel", "max_predict_ms": 5}, "strategy='es'"),
        (EnsembleSelectionClassifier, {"library": "tiny_regression"}, "is for regression"),
        (EnsembleSelectionRegressor, {"library": "tiny"}, "is for classification"),
        (EnsembleSelectionRegressor, {"metric": "roc"}, "'roc' is a classification metric"),
        (EnsembleSelectionClassifier, {"grow": True}, "give time_limit"),
    ],
)
def test_options_are_checked_whatever_the_strategy(cls, params, message, no_runs, tmp_path):
    """The selection options are checked for modsel and bayesavg too, and what needs the
    spec (its task) or the metric's task is checked before the build."""
    X, y = np.random.default_rng(0).random((40, 3)), np.arange(40) % 2
    base = {"library": CLASSIFICATION if cls is EnsembleSelectionClassifier else REGRESSION}
    with pytest.raises(ValueError, match=re.escape(message)):
        cls(store=tmp_path / "s", **{**base, **params}).fit(X, y)
    assert not (tmp_path / "s").exists()


def test_a_missing_spec_file_fails_before_any_run(no_runs, tmp_path, cancer):
    X, y = cancer
    with pytest.raises(ValueError, match="nor an existing YAML file"):
        EnsembleSelectionClassifier(library=tmp_path / "nope.yaml", store=tmp_path / "s").fit(X, y)
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"n_jobs": 0}, "'n_jobs' parameter of build_library"),
        ({"cv": 1}, "'cv' parameter of build_library"),
        ({"time_limit": 0}, "'time_limit' parameter of build_library"),
        ({"random_state": "x"}, "'random_state' parameter of build_library"),
        ({"hillclimb_fraction": 1.0}, "'hillclimb_fraction' parameter of build_library"),
        ({"spec": "no_such_spec"}, "library spec 'no_such_spec'"),
        ({"backend": "ray"}, "backend='ray'"),
    ],
)
def test_build_library_checks_its_arguments_first(params, message, tmp_path, cancer, monkeypatch):
    if "backend" not in params:  # the backend is looked up by the executor factory
        monkeypatch.setattr(builder, "make_executor", lambda *a, **k: pytest.fail("ran"))
    X, y = cancer
    with pytest.raises(ValueError, match=re.escape(message)):
        build_library(X, y, **{"spec": CLASSIFICATION, "store": tmp_path / "s", **params})
    assert not (tmp_path / "s").exists()


def test_selection_options_are_scikit_learn_constraints():
    P, y = np.full((2, 4), 0.5), [0, 1, 0, 1]
    with pytest.raises(ValueError, match=r"'n_bags' parameter of EnsembleSelection .* \[1, inf\)"):
        EnsembleSelection(n_bags=0).fit(P, y)
    with pytest.raises(ValueError, match="'random_state' parameter of EnsembleSelection"):
        EnsembleSelection(random_state="x").fit(P, y)


# ---------------------------------------------------------------------------------- n_jobs


def test_n_jobs_is_read_as_joblib_reads_it(monkeypatch):
    monkeypatch.setattr(jobs, "cpu_count", lambda only_physical_cores=False: 8)
    assert [jobs.n_workers(n) for n in (None, 1, 3, -1, -2, -8, -20)] == [1, 1, 3, 8, 7, 1, 1]
    for bad in (0, 1.5, True, "2"):
        with pytest.raises(ValueError, match=r"n_jobs=.*-k for all but k-1"):
            jobs.n_workers(bad)


def test_available_cpus_honours_the_affinity_mask():
    assert 1 <= jobs.available_cpus() <= len(os.sched_getaffinity(0)) <= (os.cpu_count() or 1)


def test_the_executor_takes_n_jobs_as_joblib_does(monkeypatch):
    monkeypatch.setattr(jobs, "cpu_count", lambda only_physical_cores=False: 3)
    assert isinstance(make_executor(None), SerialExecutor)
    assert isinstance(make_executor(1), SerialExecutor)
    assert isinstance(make_executor(-3), SerialExecutor)  # all but 2 of 3 CPUs
    for n_jobs, workers in ((-1, 3), (-2, 2), (2, 2)):
        pool = make_executor(n_jobs)
        assert isinstance(pool, ProcessExecutor) and pool.n_workers == workers
        pool.close()


@pytest.mark.parametrize("n_jobs", [None, -1, -2])
def test_fit_predict_and_risk_take_n_jobs_like_scikit_learn(n_jobs, cancer):
    X, y = cancer
    spec = {**CLASSIFICATION, "detectors": [{"detector": "box"}]}
    model = EnsembleSelectionClassifier(library=spec, cv=3, n_bags=2, n_jobs=n_jobs)
    model.fit(X, y)
    reference = EnsembleSelectionClassifier(library=spec, cv=3, n_bags=2, n_jobs=1).fit(X, y)
    np.testing.assert_array_equal(model.predict_proba(X), reference.predict_proba(X))
    assert model.risk(X).shape == (len(X), 2)


# ----------------------------------------------------------------------------- random_state


def test_a_random_state_instance_gives_a_seed_drawn_from_its_state():
    assert jobs.as_seed(7) == 7  # an int is kept: results seeded by an int do not move
    rng = np.random.RandomState(0)
    first, second = jobs.as_seed(rng), jobs.as_seed(rng)
    assert first != second  # the generator advances
    assert first == np.random.RandomState(0).randint(np.iinfo(np.int32).max)


@pytest.fixture(scope="module")
def small_library(cancer):
    X, y = cancer
    return build_library(X, y, spec=CLASSIFICATION, cv=3)


def test_a_random_state_instance_seeds_the_fit_as_the_drawn_int(cancer, small_library):
    X, y = cancer
    options = {"library": small_library, "n_bags": 5, "max_predict_ms": None}
    drawn = jobs.as_seed(np.random.RandomState(3))
    by_instance = EnsembleSelectionClassifier(random_state=np.random.RandomState(3), **options)
    by_int = EnsembleSelectionClassifier(random_state=drawn, **options)
    np.testing.assert_array_equal(
        by_instance.fit(X, y).leaderboard_["weight"], by_int.fit(X, y).leaderboard_["weight"]
    )
    # the same instance, fitted again, has moved on: another seed, other bags
    shared = EnsembleSelectionClassifier(random_state=np.random.RandomState(3), **options)
    weights = [shared.fit(X, y).leaderboard_["weight"].to_numpy() for _ in range(3)]
    assert any(not np.array_equal(weights[0], w) for w in weights[1:])


def test_build_library_takes_a_random_state_instance(cancer):
    X, y = cancer
    drawn = jobs.as_seed(np.random.RandomState(5))
    a = build_library(X, y, spec=CLASSIFICATION, cv=3, random_state=np.random.RandomState(5))
    b = build_library(X, y, spec=CLASSIFICATION, cv=3, random_state=drawn)
    c = build_library(X, y, spec=CLASSIFICATION, cv=3, random_state=np.random.RandomState(6))
    np.testing.assert_array_equal(np.asarray(a.predictions), np.asarray(b.predictions))
    assert not np.array_equal(np.asarray(a.predictions), np.asarray(c.predictions))


# ----------------------------------------------------------------------- attributes and docs


def test_a_refit_on_an_array_forgets_the_feature_names(cancer, small_library):
    X, y = cancer
    model = EnsembleSelectionClassifier(library=small_library, n_bags=2).fit(X, y)
    assert list(model.feature_names_in_) == list(X.columns)
    model.fit(X.to_numpy(), y)
    assert not hasattr(model, "feature_names_in_")
    assert model.n_features_in_ == X.shape[1]


def test_verbose_defaults_agree():
    build = inspect.signature(build_library).parameters["verbose"].default
    assert EnsembleSelectionClassifier().verbose == EnsembleSelectionRegressor().verbose == build


def _section(doc: str, title: str) -> list[str]:
    """The names documented in the numpydoc section ``title`` of ``doc``."""
    lines = inspect.cleandoc(doc).splitlines()
    start = lines.index(title) + 2
    assert set(lines[start - 1]) == {"-"}
    names = []
    for line in lines[start:]:
        if line and not line.startswith(" "):
            if re.fullmatch(r"[A-Za-z][A-Za-z ]*", line):  # the next section's title
                break
            head = line.split(" : ")[0]
            names += [n.strip() for n in head.split(",")]
    return names


@pytest.mark.parametrize(
    ("cls", "data", "spec"),
    [
        (EnsembleSelectionClassifier, "cancer", CLASSIFICATION),
        (EnsembleSelectionRegressor, "diabetes", REGRESSION),
    ],
)
def test_docstrings_list_every_parameter_and_attribute_once(cls, data, spec, request):
    doc = cls.__doc__
    params = _section(doc, "Parameters")
    assert sorted(params) == sorted(cls().get_params()), "each parameter once"
    attributes = _section(doc, "Attributes")
    assert len(attributes) == len(set(attributes))
    assert doc.index("Parameters\n") < doc.index("Attributes\n")
    X, y = request.getfixturevalue(data)
    model = cls(library={**spec, "detectors": [{"detector": "box"}]}, cv=3, n_bags=2, n_jobs=1)
    fitted = {k for k in vars(model.fit(pd.DataFrame(X), y)) if k.endswith("_")}
    fitted = {k for k in fitted if not k.startswith("_")}
    assert sorted(attributes) == sorted(fitted)


def test_ensemble_selection_docstring_lists_every_parameter_once():
    params = _section(EnsembleSelection.__doc__, "Parameters")
    assert sorted(params) == sorted(inspect.signature(EnsembleSelection).parameters)
    attributes = _section(EnsembleSelection.__doc__, "Attributes")
    P = np.random.default_rng(0).random((6, 40))
    model = EnsembleSelection(n_bags=2).fit(P, np.arange(40) % 2)
    fitted = {k for k in vars(model) if k.endswith("_") and not k.startswith("_")}
    assert sorted(attributes) == sorted(fitted)


# ------------------------------------------------------------------------------ determinism


@pytest.mark.slow
@pytest.mark.parametrize("cls", [EnsembleSelectionClassifier, EnsembleSelectionRegressor])
def test_two_default_fits_predict_bit_identically(cls, cancer, diabetes):
    """As constructed (``max_predict_ms="auto"``, every core), only a small library."""
    X, y = cancer if cls is EnsembleSelectionClassifier else diabetes
    library = "tiny" if cls is EnsembleSelectionClassifier else "tiny_regression"
    first = cls(library=library).fit(X, y)
    second = cls(library=library).fit(X, y)
    predict = "predict_proba" if cls is EnsembleSelectionClassifier else "predict"
    np.testing.assert_array_equal(getattr(first, predict)(X), getattr(second, predict)(X))
    np.testing.assert_array_equal(first.weights_, second.weights_)
    assert first.predict_budget_ == second.predict_budget_


SMALL_CLASSIFICATION = {
    "families": [{"family": "logreg"}, {"family": "tree", "params": {"max_depth": 3}}]
}
SMALL_REGRESSION = {
    "task": "regression",
    "families": [{"family": "linear"}, {"family": "tree", "params": {"max_depth": 3}}],
}


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore")
@parametrize_with_checks(
    [
        EnsembleSelectionClassifier(library=SMALL_CLASSIFICATION),
        EnsembleSelectionRegressor(library=SMALL_REGRESSION),
    ]
)
def test_check_estimator_passes_as_constructed(estimator, check):
    """scikit-learn's own checks, one test each, on the estimator as a user makes it (a small
    library of two families, every other parameter at its default: ``max_predict_ms="auto"``,
    ``cv="auto"``, every core); ``check_array_api_input`` is skipped by scikit-learn itself
    unless SCIPY_ARRAY_API is set. The checks fit about a hundred times, so the library is
    small."""
    check(estimator)


class _ArrayOnly:
    """An array-like that numpy can read (``__array__``) but without ``len``."""

    def __init__(self, data):
        self.data = np.asarray(data)

    def __array__(self, dtype=None, copy=None):
        return self.data if dtype is None else self.data.astype(dtype)


def test_fit_takes_an_array_like_without_len(cancer):
    X, y = cancer
    spec = {"families": [{"family": "logreg"}]}
    model = EnsembleSelectionClassifier(library=spec, cv=3, n_bags=2, n_jobs=1)
    model.fit(_ArrayOnly(X.to_numpy()), _ArrayOnly(y))
    assert model.predict(X.to_numpy()).shape == (len(X),)


def test_default_cv_fits_a_class_of_three_rows():
    """``cv="auto"`` on a tiny table takes no more folds than the rarest class has rows."""
    X = 3 * np.random.RandomState(0).uniform(size=(10, 1))
    y = X[:, 0].astype(int)
    assert np.unique(y, return_counts=True)[1].min() == 3
    spec = {"families": [{"family": "logreg"}]}
    model = EnsembleSelectionClassifier(library=spec, n_bags=2, n_jobs=1).fit(X, y)
    assert model.predict(X).shape == (10,)
