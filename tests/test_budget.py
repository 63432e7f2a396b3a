"""The selection budget: a pilot selection on the library's own predictions prices the
selection, and the options are cut only as far as the time left requires."""

import numpy as np
import pytest

from ensel.estimator import budget
from ensel.metrics import resolve_metric

OPTIONS = {
    "n_iter": 100,
    "n_bags": 20,
    "bag_fraction": 0.5,
    "replacement": True,
    "sorted_init": True,
    "max_init": 25,
    "prune_fraction": 1.0,
    "random_state": 0,
}


def library(n_classes: int, members: int = 30, rows: int = 600) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    y = rng.integers(0, n_classes, rows)
    if n_classes == 2:
        P = np.clip(0.5 + 0.3 * (y - 0.5) + 0.3 * rng.standard_normal((members, rows)), 0.01, 0.99)
    else:
        P = rng.dirichlet(np.ones(n_classes), size=(members, rows))
    return P.astype(np.float32), y


@pytest.mark.parametrize("n_classes", [2, 3])
def test_selection_speed_is_measured_on_the_library_itself(n_classes):
    P, y = library(n_classes)
    speed = budget.selection_speed("es", resolve_metric("mxe"), OPTIONS, P, y)
    assert 0 < speed < 1e-5  # seconds per member x row x class x bag x step


def test_selection_within_keeps_the_whole_library_when_the_time_suffices():
    options, report = budget.selection_within(OPTIONS, 1e6, 1e-8, (30, 600))
    assert options == OPTIONS and set(report) == {
        "selection_seconds_estimated",
        "selection_seconds_allowed",
    }


def test_selection_within_prunes_first_then_bags_then_steps():
    options, report = budget.selection_within(OPTIONS, 0.5, 1e-6, (200, 5000))
    assert options["prune_fraction"] < 1.0
    assert report["prune_fraction"] == options["prune_fraction"]
    tight, _ = budget.selection_within(OPTIONS, 0.05, 1e-6, (200, 5000))
    assert tight["prune_fraction"] == 8 / 200 and tight["n_bags"] < 20


def test_budget_report_keeps_what_selection_changed_and_the_build_counted():
    import pandas as pd

    from ensel.estimator.budget_report import BudgetReport

    report = BudgetReport.of_selection(
        {"selection_seconds_estimated": 9.0, "selection_seconds_allowed": 3.0, "n_bags": 5}
    )
    assert report.selection_changed == {"n_bags": 5} and report.selection_seconds_allowed == 3.0

    from types import SimpleNamespace

    lib = SimpleNamespace(  # what add_build reads of a Library
        members=pd.DataFrame({"run": ["a", "a", "b"]}),
        failures=pd.DataFrame(
            {"run": ["c", "c", "d"], "status": ["budget"] * 3, "fit_seconds": [2.0, 2.0, 0.0]}
        ),
        parts={},
    )
    report.add_build(lib, 7.5)
    assert (report.runs_ok, report.runs_cut, report.runs_cut_ids) == (2, 1, ["c"])
    assert report.runs_not_finished == {"budget": 2} and report.detectors_ok is None
    # a row holds the fields that apply, flat, in the order the record declares them
    assert list(report.as_dict()) == [
        "selection_seconds_estimated",
        "selection_seconds_allowed",
        "n_bags",
        "build_seconds",
        "runs_ok",
        "runs_not_finished",
        "runs_cut_ids",
        "runs_cut",
    ]
    assert BudgetReport().as_dict() == {}  # no time_limit: nothing to say
