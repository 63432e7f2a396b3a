"""The HTML report: every section and plot is there, and the plots render in headless Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess
from types import SimpleNamespace

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_iris

from ensel import EnsembleSelectionClassifier
from ensel.cli import main
from ensel.library import Library
from ensel.metrics import METRICS, greater_is_better
from ensel.report import (
    LOWER_NOTE,
    MIN_BIN_CASES,
    _comparison_plot,
    _reliability,
    cost_front_data,
    hillclimb_curves,
    render,
    write_report,
)

SPEC = {
    "families": [
        {"family": "logreg", "params": {"ridge": [0.01, 100.0]}, "calibration": ["none", "platt"]},
        {"family": "tree", "params": {"max_depth": [2, 5]}, "calibration": ["none", "isotonic"]},
        {"family": "adaboost", "stages": [4, 16], "calibration": ["none", "platt", "logistic"]},
    ]
}


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    y = y.map({0: "malignant", 1: "benign"})
    store = tmp_path_factory.mktemp("report") / "library"
    return EnsembleSelectionClassifier(
        library=SPEC, n_jobs=1, metric="roc", cv=3, n_bags=5, store=store
    ).fit(X, y)


def test_report_has_every_section(model):
    page = render(model)
    for title in (
        "Ensemble vs the best single member",
        "Composition by family",
        "Hillclimb curve (Figure 4.1)",
        "Calibration of the strongest members",
        "Leaderboard",
    ):
        assert title in page
    # the comparison table: one row per metric, the ensemble's and the best member's scores as
    # the model computed them, and the verdict
    rows = re.findall(
        r"<tr><td>(\w+)</td><td>(\w+)</td><td>(-?[\d.]+)</td><td>(-?[\d.]+)</td><td>(\w+)</td>"
        r"</tr>",
        page,
    )
    assert [r[0] for r in rows] == list(model.comparison_) and set(METRICS) <= {r[0] for r in rows}
    for name, way, ours, best, mark in rows:
        want = model.comparison_[name]
        assert way == ("higher" if greater_is_better(name) else "lower")
        assert float(ours) == pytest.approx(want["ensemble"], abs=5e-5)
        assert float(best) == pytest.approx(want["best member"], abs=5e-5)
        assert mark in ("better", "worse", "tie")
    assert "with replacement" in page and "without replacement" in page
    # 3 strongest uncalibrated members x (reliability, histogram) + comparison, composition,
    # curve, and the front of score against predict cost (the builder timed the runs)
    assert page.count('<svg class="plot"') == 2 * 3 + 4
    assert "Hillclimb score vs predict cost" in page
    assert "http" not in re.sub(r"http://www\.w3\.org/[\w/.]+", "", page)  # self-contained
    assert "classes: benign, malignant;" in page  # labels as written, not np.str_('benign')
    # categorical axes: the metric names label the bars, the families the composition
    assert all(f">{m}</text>" in page for m in METRICS)
    assert all(f">{f}</text>" in page for f in model.members_["family"].unique())
    curves = hillclimb_curves(model, Library.open(model.library_path_))
    assert len(curves["without replacement"]) <= len(model.leaderboard_)
    front = cost_front_data(model, Library.open(model.library_path_))
    budgeted = [r for r in front if r["budget"] is not None]
    assert len(budgeted) >= 2 and front[-1]["budget"] is None
    assert all(r["cost"] <= r["budget"] * (1 + 1e-9) for r in budgeted)


def test_fit_runs_one_selection_and_keeps_no_report_rows(monkeypatch):
    from ensel.selection import EnsembleSelection

    calls = []
    real_fit = EnsembleSelection.fit

    def counting_fit(self, P, y, **kwargs):
        calls.append(P.shape)
        return real_fit(self, P, y, **kwargs)

    monkeypatch.setattr(EnsembleSelection, "fit", counting_fit)
    X, y = load_breast_cancer(return_X_y=True)
    clf = EnsembleSelectionClassifier(
        library=SPEC, n_jobs=1, cv=3, n_bags=3, max_predict_ms=None
    ).fit(X, y)
    assert len(calls) == 1  # the ensemble's own selection; the report selects when asked
    rows = {k: len(v) for k, v in vars(clf).items() if isinstance(v, list | np.ndarray)}
    assert max(rows.values()) < len(y), rows  # nothing per hillclimb row is kept
    calls.clear()
    auto = EnsembleSelectionClassifier(library=SPEC, n_jobs=1, cv=3, n_bags=3).fit(X, y)
    assert len(calls) == 1 + len(auto.predict_budget_["tried"])  # and one per budget tried


def test_report_without_the_library_says_how_to_get_curves():
    X, y = load_breast_cancer(return_X_y=True)
    clf = EnsembleSelectionClassifier(library=SPEC, n_jobs=1, cv=3, n_bags=3).fit(X, y)
    assert clf.library_path_ is None  # built in a temporary store, gone after fit
    page = render(clf)
    assert "Hillclimb curves need the library" in page
    assert page.count('<svg class="plot"') == 2  # comparison and composition


def test_the_ensemble_comparison_is_out_of_fold(model):
    board = model.leaderboard_
    for name in METRICS:
        best = board[name].max() if greater_is_better(name) else board[name].min()
        assert model.comparison_[name]["best member"] == pytest.approx(best)


def test_multiclass_report_says_reliability_is_binary(tmp_path):
    X, y = load_iris(return_X_y=True)
    clf = EnsembleSelectionClassifier(library=SPEC, n_jobs=1, cv=3, n_bags=3, store=tmp_path / "s")
    assert "drawn for binary problems" in render(clf.fit(X, y))


@pytest.mark.slow
def test_plots_render_in_headless_chromium(model, tmp_path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium is not installed (make test installs Debian's package)")
    path = tmp_path / "report.html"
    write_report(model, path)
    shot = tmp_path / "report.png"
    subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--window-size=1280,3000", f"--screenshot={shot}", path.as_uri()],
        capture_output=True,
        timeout=120,
    )  # fmt: skip
    assert shot.is_file() and shot.stat().st_size > 20_000, "no screenshot of the report"
    dom = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", path.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    plots = re.search(r'data-plots="(\d+)"', dom)
    rendered = re.search(r'data-rendered="(\d+)"', dom)
    assert plots and rendered, "the report's check script did not run"
    assert int(plots.group(1)) == 10
    assert int(rendered.group(1)) == int(plots.group(1))  # every plot laid out with content


def test_cli_report(model, tmp_path, capsys):
    model.save(tmp_path / "model.pkl")
    assert main(["report", str(tmp_path), "--html", str(tmp_path / "r.html")]) == 0
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")
    assert np.isfinite(model.hillclimb_score_)


def test_regression_report_plots_residuals(tmp_path, capsys):
    from sklearn.datasets import load_diabetes

    from ensel import EnsembleSelectionRegressor

    X, y = load_diabetes(return_X_y=True, as_frame=True)
    spec = {
        "task": "regression",
        "families": [{"family": "linear"}, {"family": "knn", "stages": [5, 20]}],
    }
    reg = EnsembleSelectionRegressor(library=spec, cv=3, n_bags=3, store=tmp_path / "lib")
    reg.fit(X, y)
    page = render(reg)
    for title in ("Ensemble vs the best single member", "Hillclimb curve (Figure 4.1)",
                  "Predicted against actual, and residuals", "Leaderboard"):  # fmt: skip
        assert title in page
    assert "Calibration of the strongest members" not in page
    assert "a numeric target" in page and all(f"<td>{m}</td>" in page for m in ("rmse", "mae"))
    assert 'aria-label="predicted against actual values"' in page
    assert 'aria-label="residuals against predictions"' in page
    # comparison, composition, curve, score vs cost, predicted vs actual, residuals
    assert page.count('<svg class="plot"') == 6
    reg.save(tmp_path / "model.pkl")
    (tmp_path / "m").mkdir()
    (tmp_path / "model.pkl").rename(tmp_path / "m" / "model.pkl")
    assert main(["report", str(tmp_path / "m"), "--html", str(tmp_path / "r.html")]) == 0
    assert "Predicted against actual" in (tmp_path / "r.html").read_text()


def test_reliability_bins_hold_enough_cases_when_predictions_pile_up_at_0_and_1():
    # make demo's shape: 569 rows, most predictions near 0 or 1, few in between
    rng = np.random.default_rng(0)
    y = rng.random(569) < 0.63
    pred = np.where(y, rng.beta(12, 1, 569), rng.beta(1, 12, 569))
    pred[:6] = rng.uniform(0.3, 0.7, 6)
    xs, ys, counts = _reliability(pred, y.astype(float))
    assert counts.sum() == 569 and counts.min() >= MIN_BIN_CASES
    assert counts.max() - counts.min() <= 1  # equal-count (quantile) bins
    assert np.all(np.diff(xs) > 0)  # bins ordered by prediction
    # with equal-width bins a middle bin holds a handful of cases; here every fraction is an
    # average over at least MIN_BIN_CASES labels, and the curve follows the diagonal's order
    assert ys[0] < 0.2 and ys[-1] > 0.9
    small_x, small_y, small_counts = _reliability(pred[:30], y[:30].astype(float))
    assert small_counts.tolist() == [30] and len(small_x) == len(small_y) == 1


def test_the_comparison_chart_says_which_way_is_better_for_loss_metrics():
    model = SimpleNamespace(
        comparison_={
            "roc": {"ensemble": 0.99, "best member": 0.98},
            "mxe": {"ensemble": 0.10, "best member": 0.13},  # lower: the ensemble is better
        }
    )
    svg = _comparison_plot(model, ["roc", "mxe"])
    assert "lower is better" in LOWER_NOTE and "lower is better" in svg
    assert re.search(r"font-style: ?italic[^>]*>mxe</text>", svg)
    assert not re.search(r"font-style: ?italic[^>]*>roc</text>", svg)
