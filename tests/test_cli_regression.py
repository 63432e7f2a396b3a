"""The ensel command on a numeric target: the task is inferred (and said), --task overrides;
fit, predict, report and compress work for regression."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_diabetes

from ensel.cli import infer_task, main

SPEC = """
task: regression
families:
  - family: linear
    params: {ridge: [null, 10]}
  - family: knn
    stages: [5, 15]
detectors:
  - detector: box
"""


@pytest.fixture(scope="module")
def csvs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli_regression")
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    frame = X.iloc[:, :6].assign(progression=y, id=range(len(y)))
    frame.iloc[:350].to_csv(tmp / "train.csv", index=False)
    frame.iloc[350:].drop(columns="progression").to_csv(tmp / "new.csv", index=False)
    (tmp / "spec.yaml").write_text(SPEC)
    return tmp


def test_task_inference():
    assert infer_task(pd.Series(np.linspace(0, 1, 50)))[0] == "regression"
    assert infer_task(pd.Series(np.arange(100) % 40))[0] == "regression"  # a count
    assert infer_task(pd.Series([0, 1, 2] * 20))[0] == "classification"  # a few codes
    assert infer_task(pd.Series(["a", "b"] * 30))[0] == "classification"
    assert infer_task(pd.Series([True, False] * 30))[0] == "classification"
    task, why = infer_task(pd.Series(np.linspace(0, 1, 50)), "classification")
    assert (task, why) == ("classification", "--task")


def test_fit_predict_on_a_numeric_target(csvs, capsys):
    out = csvs / "model"
    argv = ["fit", str(csvs / "train.csv"), "--target", "progression", "--drop", "id",
            "--out", str(out), "--library", str(csvs / "spec.yaml"), "--cv", "3"]  # fmt: skip
    assert main(argv) == 0
    said = capsys.readouterr().out
    assert "task: regression (numeric target with" in said and "hillclimb rmse" in said
    board = pd.read_csv(out / "leaderboard.csv")
    assert {"rmse", "mae", "r2", "weight"} <= set(board.columns)
    assert main(["predict", str(out), str(csvs / "new.csv"), "--out", str(csvs / "p.csv")]) == 0
    preds = pd.read_csv(csvs / "p.csv")
    assert list(preds.columns) == ["prediction"] and len(preds) == 92
    assert preds["prediction"].between(0, 400).all()
    far = pd.read_csv(csvs / "new.csv")
    far.iloc[:5, :6] *= 20.0
    far.to_csv(csvs / "far.csv", index=False)
    argv = ["predict", str(out), str(csvs / "far.csv"), "--out", str(csvs / "r.csv")]
    assert main([*argv, "--with-risk", "--reject", "0.9"]) == 0
    risky = pd.read_csv(csvs / "r.csv")
    assert (risky["risk_box"].iloc[:5] == 1.0).all()
    assert risky["prediction"].iloc[:5].isna().all()


def test_task_override_refuses_a_mismatched_spec(csvs, capsys):
    argv = ["fit", str(csvs / "train.csv"), "--target", "progression", "--drop", "id",
            "--out", str(csvs / "m2"), "--library", str(csvs / "spec.yaml"),
            "--task", "classification"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "is for regression, but EnsembleSelectionClassifier" in err and err.count("\n") == 1


@pytest.mark.slow
def test_compress_a_regressor_to_onnx(csvs, capsys):
    pytest.importorskip("torch")
    ort = pytest.importorskip("onnxruntime")
    out = csvs / "model_c"
    argv = ["fit", str(csvs / "train.csv"), "--target", "progression", "--drop", "id",
            "--out", str(out), "--library", str(csvs / "spec.yaml"), "--cv", "3"]  # fmt: skip
    assert main(argv) == 0
    path = csvs / "mimic.onnx"
    argv = ["compress", str(out), "--train", str(csvs / "train.csv"), "--out", str(path),
            "--n-pseudo", "3000", "--hidden", "16", "--epochs", "5"]  # fmt: skip
    capsys.readouterr()
    assert main(argv) == 0
    assert "(target units)" in capsys.readouterr().out
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    rows = pd.read_csv(csvs / "new.csv").drop(columns="id").to_numpy()
    (prediction,) = session.run(None, {"numeric": rows})
    assert prediction.shape == (92,) and np.isfinite(prediction).all()
