"""One contract over every registered family, classifiers and regressors alike: it fits on a
small messy frame through its own view (missing numbers, a categorical column with missing
cells, a category unseen in training, a column missing only at test time), its run subclasses
``Run``, and its predictions have the run layout, are finite and (for classes) probabilities
summing to one; it learns something; staged members equal separately trained runs; a seed fixes
the run; predicting some stages equals slicing all; a pickled run predicts the same after
loading; and it declares the keywords its fit takes (``stops_in_time``: ``time_cap``;
``early_stops``: ``early_stop``), which the builder reads instead of the fit's signature."""

from __future__ import annotations

import inspect
import pickle

import numpy as np
import pandas as pd
import pytest

from ensel.data import Columns
from ensel.library.execution.runs import predict_stages
from ensel.library.families import FAMILIES, REGRESSORS, Run, missing_requirements
from ensel.library.views.base import make_view

N_TRAIN, N_TEST = 220, 80
CASES = [
    *[pytest.param("classification", n, c, id=f"{n}-{c}class") for n in FAMILIES for c in (2, 3)],
    *[pytest.param("regression", n, 0, id=f"{n}-regression") for n in REGRESSORS],
]


def messy(task: str, n_classes: int, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    """Numeric and categorical columns with missing cells; the target depends on both and on
    whether ``a`` is missing (missingness that carries information). The test rows hold a
    colour never seen in training and missing cells in ``c``, complete in training."""
    rng = np.random.default_rng(seed)
    n = N_TRAIN + N_TEST
    a, b = rng.normal(size=n), rng.normal(size=n)
    colour = rng.choice(["red", "green", "blue"], size=n).astype(object)
    score = a + b + (colour == "red")
    frame = pd.DataFrame({"a": a, "b": b, "c": rng.normal(size=n), "colour": colour})
    gone = rng.random(n) < 0.25
    frame.loc[gone, "a"] = np.nan
    score = np.where(gone, score + 1.0, score)
    frame.loc[rng.random(n) < 0.1, "colour"] = None
    frame.loc[N_TRAIN + np.arange(5), "colour"] = "purple"  # unseen in training
    frame.loc[N_TRAIN + np.arange(5, 10), "c"] = np.nan  # never missing in training
    if task == "regression":
        return frame, 100.0 + 10.0 * score  # far from 0, not unit scale: units must survive
    return frame, np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))


class Case:
    """One family on the messy frame, transformed by its view as the builder does."""

    def __init__(self, task: str, name: str, n_classes: int) -> None:
        self.family = (REGRESSORS if task == "regression" else FAMILIES)[name]
        if missing_requirements(self.family):
            pytest.skip(f"{name} needs {missing_requirements(self.family)}")
        self.task, self.n_classes = task, n_classes
        frame, self.y = messy(task, n_classes)
        train, test = frame.iloc[:N_TRAIN], frame.iloc[N_TRAIN:]
        columns = Columns.infer(train)
        view = make_view(self.family.view, columns, self.family.native_missing).fit(train)
        self.Z, self.Z_test = view.transform(train), view.transform(test)
        self.extra = {}
        if self.family.categorical:
            native = self.family.view == "native"
            offset = len(columns.numeric)
            self.extra["categorical"] = (
                {offset + j: len(c) for j, c in enumerate(columns.categories)} if native else {}
            )

    def fit(self, stages=None, seed: int = 0):
        params = {**self.family.params, **self.family.test_params}
        stages = self.family.test_stages if stages is None else stages
        if self.family.validate is not None:
            self.family.validate(params, stages)
        return self.family.fit(
            self.Z, self.y[:N_TRAIN], n_classes=self.n_classes, params=params, stages=stages,
            random_state=seed, **self.extra,
        )  # fmt: skip

    @property
    def n_stages(self) -> int:
        return len(self.family.test_stages or (None,))

    @property
    def n_outputs(self) -> int:
        return 1 if self.task == "regression" else self.n_classes


@pytest.mark.parametrize(("task", "name", "n_classes"), CASES)
def test_family_fits_messy_data_and_predicts_in_the_run_layout(task, name, n_classes):
    case = Case(task, name, n_classes)
    assert np.isnan(case.Z).any() == case.family.native_missing  # natively, or imputed
    run = case.fit()
    assert Run in type(run).__mro__ and isinstance(run.cumulative, bool)  # what cost reads
    out = run.predict(case.Z_test)
    variants = {"none", *case.family.variants}
    assert set(out) == variants
    for variant, p in out.items():
        assert p.shape == (case.n_stages, N_TEST, case.n_outputs), variant
        assert p.dtype == np.float64 and np.isfinite(p).all(), variant
        if task == "classification":
            assert (p >= 0).all() and (p <= 1 + 1e-12).all(), variant
            np.testing.assert_allclose(p.sum(axis=-1), 1.0, atol=1e-9, err_msg=variant)
    truth = case.y[N_TRAIN:]
    if task == "classification":  # the best stage beats the majority class
        accuracy = max((p.argmax(-1) == truth).mean() for p in out["none"])
        assert accuracy > np.bincount(truth).max() / N_TEST
    else:  # the best stage beats the training mean
        rmse = np.sqrt(((out["none"][..., 0] - truth) ** 2).mean(axis=1))
        assert rmse.min() < np.sqrt(((case.y[:N_TRAIN].mean() - truth) ** 2).mean())


@pytest.mark.parametrize(("task", "name", "n_classes"), CASES)
def test_staged_members_equal_separately_trained_runs(task, name, n_classes):
    case = Case(task, name, n_classes)
    if not case.family.stages:
        pytest.skip(f"{name} has no stages")
    stages = case.family.test_stages
    many = case.fit(stages, seed=3).predict(case.Z_test)["none"]
    for i, s in enumerate(stages[:-1]):
        alone = case.fit((s,), seed=3).predict(case.Z_test)["none"]
        np.testing.assert_allclose(many[i], alone[0], rtol=1e-6, atol=1e-6, err_msg=f"stage {s}")


@pytest.mark.parametrize(("task", "name", "n_classes"), CASES)
def test_a_seed_fixes_the_run_and_a_pickled_run_predicts_the_same(task, name, n_classes):
    case = Case(task, name, n_classes)
    run = case.fit(seed=5)
    first = run.predict(case.Z_test)
    again = case.fit(seed=5).predict(case.Z_test)
    loaded = pickle.loads(pickle.dumps(run)).predict(case.Z_test)
    for variant, p in first.items():
        np.testing.assert_array_equal(again[variant], p, err_msg=variant)
        np.testing.assert_array_equal(loaded[variant], p, err_msg=variant)


@pytest.mark.parametrize(("task", "name", "n_classes"), CASES)
def test_predicting_some_stages_equals_slicing_all(task, name, n_classes):
    """A prediction computes only the stages asked for, in the order asked, and gives what
    predicting every stage and slicing gives."""
    case = Case(task, name, n_classes)
    run = case.fit()
    every = run.predict(case.Z_test)
    for idx in ([case.n_stages - 1], [0], list(range(case.n_stages))[::-1]):
        some = predict_stages(run, case.Z_test, idx)
        assert set(some) == set(every)
        for variant in every:
            np.testing.assert_allclose(some[variant], every[variant][idx], atol=1e-12)


@pytest.mark.parametrize(("task", "name", "n_classes"), CASES)
def test_a_family_declares_the_keywords_its_fit_takes(task, name, n_classes):
    family = (FAMILIES if task == "classification" else REGRESSORS)[name]
    takes = inspect.signature(family.fit).parameters
    assert family.stops_in_time == ("time_cap" in takes)
    assert family.early_stops == ("early_stop" in takes)
