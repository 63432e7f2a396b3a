"""The HTML report: every section and plot is there, and the plots render in headless Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_iris

from ensel import EnsembleSelectionClassifier
from ensel.cli import main
from ensel.metrics import METRICS
from ensel.report import render, write_report

SPEC = {
    "families": [
        {"family": "logreg", "params": {"ridge": [0.01, 100.0]}, "calibration": ["none", "platt"]},
        {"family": "tree", "params": {"max_depth": [2, 5]}, "calibration": ["none", "isotonic"]},
        {"family": "adaboost", "stages": [4, 16], "calibration": ["none", "platt", "logistic"]},
    ]
}


@pytest.fixture(scope="module")
def model():
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    return EnsembleSelectionClassifier(library=SPEC, metric="roc", cv=3, n_bags=5).fit(X, y)


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
    assert all(f"<td>{m}</td>" for m in METRICS)
    assert "with replacement" in page and "without replacement" in page
    # 3 strongest uncalibrated members x (reliability, histogram) + comparison, composition, curve
    # ... and the front of score against predict cost, where the builder timed the runs
    front = model.report_data_["cost_front"]
    assert page.count('<svg class="plot"') == 2 * 3 + 3 + bool(front)
    assert front and "Hillclimb score vs predict cost" in page
    budgeted = [r for r in front if r["budget"] is not None]
    assert all(r["cost"] <= r["budget"] * (1 + 1e-9) for r in budgeted)
    assert "http" not in page.replace("http://www.w3.org/2000/svg", "")  # self-contained
    curves = model.report_data_["curves"]
    assert len(curves["without replacement"]) <= model.report_data_["n_members"]


def test_the_ensemble_comparison_is_out_of_fold(model):
    board = model.leaderboard_
    for name in METRICS:
        best = board[name].max() if name not in ("rms", "mxe") else board[name].min()
        assert model.comparison_[name]["best member"] == pytest.approx(best)


def test_multiclass_report_says_reliability_is_binary():
    X, y = load_iris(return_X_y=True)
    clf = EnsembleSelectionClassifier(library=SPEC, cv=3, n_bags=3).fit(X, y)
    assert "drawn for binary problems" in render(clf)


@pytest.mark.slow
def test_plots_render_in_headless_chromium(model, tmp_path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium is not installed (make test installs Debian's package)")
    path = tmp_path / "report.html"
    write_report(model, path)
    dom = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", path.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    plots = re.search(r'data-plots="(\d+)"', dom)
    rendered = re.search(r'data-rendered="(\d+)"', dom)
    assert plots and rendered, "the report's check script did not run"
    assert int(plots.group(1)) == 9 + bool(model.report_data_["cost_front"])
    assert int(rendered.group(1)) == int(plots.group(1))  # every plot laid out with content


def test_cli_report(model, tmp_path, capsys):
    model.save(tmp_path / "model.pkl")
    assert main(["report", str(tmp_path), "--html", str(tmp_path / "r.html")]) == 0
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")
    assert np.isfinite(model.hillclimb_score_)
