"""The ensel command: fit and predict on CSV files, and one-line errors."""

from __future__ import annotations

import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer

from ensel.cli import main
from ensel.library import Library


@pytest.fixture(scope="module")
def csvs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli")
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    frame = X.iloc[:, :8].assign(diagnosis=y.map({0: "malignant", 1: "benign"}), id=range(len(y)))
    frame.iloc[:400].to_csv(tmp / "train.csv", index=False)
    frame.iloc[400:].drop(columns="diagnosis").to_csv(tmp / "new.csv", index=False)
    return tmp


def test_fit_then_predict(csvs, capsys):
    out = csvs / "model"
    code = main(
        ["fit", str(csvs / "train.csv"), "--target", "diagnosis", "--drop", "id",
         "--out", str(out), "--library", "tiny", "--metric", "roc", "--cv", "3"]
    )  # fmt: skip
    assert code == 0
    said = capsys.readouterr().out
    model = pd.read_csv(out / "leaderboard.csv")
    n_weighted = int((model["weight"] > 0).sum())
    n_members = Library.open(out / "library").n_members  # what the tiny spec built here
    assert f"{n_weighted} of the library's {n_members} members have weight in the ensemble" in said
    assert "hillclimb roc" in said
    assert (out / "model.pkl").is_file() and (out / "library" / "store.json").is_file()
    board = pd.read_csv(out / "leaderboard.csv")
    assert len(board) == n_members and {"roc", "rms", "weight"} <= set(board.columns)
    assert main(["predict", str(out), str(csvs / "new.csv"), "--out", str(csvs / "p.csv")]) == 0
    preds = pd.read_csv(csvs / "p.csv")
    assert list(preds.columns) == ["proba_benign", "proba_malignant", "prediction"]
    assert len(preds) == 169 and set(preds["prediction"]) <= {"benign", "malignant"}
    # risk columns (the tiny spec has a box detector) and the reject option
    far = pd.read_csv(csvs / "new.csv")
    far.iloc[:5, :8] *= 10.0
    far.to_csv(csvs / "far.csv", index=False)
    argv = ["predict", str(out), str(csvs / "far.csv"), "--out", str(csvs / "r.csv")]
    assert main([*argv, "--with-risk", "--reject", "0.9"]) == 0
    assert "refused" in capsys.readouterr().out
    risky = pd.read_csv(csvs / "r.csv")
    assert {"risk_box", "risk_combined"} <= set(risky.columns)
    assert (risky["risk_box"].iloc[:5] == 1.0).all()
    refused = risky["risk_combined"] > 0.9
    assert refused.iloc[:5].all() and (risky["prediction"].isna() == refused).all()
    # the reject threshold is checked by the model's reject option
    assert main([*argv, "--reject", "1.5"]) == 2
    assert "thresholds must lie in [0, 1]" in capsys.readouterr().err
    # predicting rows without a training column is a one-line error
    pd.read_csv(csvs / "new.csv").drop(columns="mean radius").to_csv(csvs / "bad.csv")
    assert main(["predict", str(out), str(csvs / "bad.csv"), "--out", str(csvs / "q.csv")]) == 2
    assert "X lacks column(s) ['mean radius']" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["fit", "{d}/train.csv", "--target", "nope", "--out", "{d}/m"], "--target 'nope' is not"),
        (["fit", "{d}/missing.csv", "--target", "y", "--out", "{d}/m"], "no such file"),
        (["fit", "{d}/train.csv", "--target", "diagnosis", "--drop", "zz", "--out", "{d}/m"],
         "column(s) ['zz'] are not in"),
        (["fit", "{d}/train.csv", "--target", "diagnosis", "--library", "huge", "--out", "{d}/m"],
         "neither a built-in spec"),
        (["predict", "{d}/nowhere", "{d}/new.csv", "--out", "{d}/p.csv"], "no model here"),
    ],
)  # fmt: skip
def test_errors_are_one_line(csvs, capsys, argv, message):
    assert main([a.format(d=csvs) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ensel: error: ") and message in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "bad.csv is empty; give a CSV file with a header row"),
        (b"a;b;y\n1;2;x\n3;4;z\n", "bad.csv reads as one column 'a;b;y': its fields look separa"),
        (b"a\tb\ty\n1\t2\tx\n", "look separated by '\\t'; ensel reads comma-separated files"),
        (b"a,b,y\n1,caf\xe9,x\n", "bad.csv is not UTF-8 text"),
        (b"a,b,y\n1,2,x\n3,4,z,5\n", "bad.csv is not a well-formed CSV file (Error tokenizing"),
    ],
)
def test_an_unreadable_csv_is_one_line_naming_the_file(capsys, tmp_path, content, message):
    """An empty file, ';' or tab separators, latin-1 text, a ragged row: one line that names
    the file and says what to do (was pandas' bare 'No columns to parse from file', a missing
    --target, a codec error). 'ensel predict' and 'compress' read through the same function."""
    (tmp_path / "bad.csv").write_bytes(content)
    argv = ["fit", str(tmp_path / "bad.csv"), "--target", "y", "--out", str(tmp_path / "m")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("ensel: error: ") and message in err and err.count("\n") == 1


@pytest.mark.slow
def test_compress_writes_an_onnx_file(csvs, capsys):
    pytest.importorskip("torch")
    ort = pytest.importorskip("onnxruntime")
    out = csvs / "model_c"
    fit_args = ["fit", str(csvs / "train.csv"), "--target", "diagnosis", "--drop", "id",
                "--out", str(out), "--library", "tiny", "--cv", "3"]  # fmt: skip
    assert main(fit_args) == 0
    onnx_path = csvs / "mimic.onnx"
    argv = ["compress", str(out), "--train", str(csvs / "train.csv"), "--out", str(onnx_path),
            "--n-pseudo", "3000", "--hidden", "16", "--epochs", "3"]  # fmt: skip
    capsys.readouterr()
    assert main(argv) == 0
    message = capsys.readouterr().out
    assert "3000 pseudo rows" in message and "fidelity RMSE" in message and "mimic.onnx" in message
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    rows = pd.read_csv(csvs / "new.csv").drop(columns="id").to_numpy()
    proba, label = session.run(None, {"numeric": rows})
    assert proba.shape == (169, 2) and set(label) <= {"benign", "malignant"}
    # a training file without the model's columns, and an unknown suffix: one-line errors
    pd.read_csv(csvs / "train.csv").drop(columns="mean area").to_csv(csvs / "short.csv")
    for args, text in [
        (["--train", str(csvs / "short.csv"), "--out", str(onnx_path)], "lacks the model's col"),
        (["--train", str(csvs / "train.csv"), "--out", str(csvs / "m.bin")], "cannot tell the"),
    ]:
        assert main(["compress", str(out), *args]) == 2
        err = capsys.readouterr().err
        assert err.startswith("ensel: error: ") and text in err and err.count("\n") == 1


def test_a_corrupt_model_file_is_one_line(csvs, capsys, tmp_path):
    (tmp_path / "model.pkl").write_bytes(b"\x80\x05garbage")
    assert (
        main(["predict", str(tmp_path), str(csvs / "new.csv"), "--out", str(csvs / "z.csv")]) == 2
    )
    err = capsys.readouterr().err
    assert err.startswith("ensel: error: ") and "not a readable ensel model" in err
    assert err.count("\n") == 1


def test_a_csv_with_missing_values_fits_and_predicts_as_it_is(tmp_path, capsys):
    """Empty cells, NA and a stray '?' in a numeric column: fit and predict from the command
    line, with a one-line warning naming the column (``warning: <message>``, not Python's
    format with a source path of the package and a line of its code)."""
    import numpy as np

    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    frame = X.iloc[:300, :6].copy()
    rng = np.random.default_rng(0)
    for col in frame.columns[:4]:
        frame.loc[rng.random(len(frame)) < 0.2, col] = np.nan
    frame["smoker"] = rng.choice(["yes", "no", None], size=len(frame))
    frame["lab"] = frame["mean radius"].round(2).astype(object)
    frame.loc[::9, "lab"] = "?"
    frame["diagnosis"] = y.iloc[:300].map({0: "malignant", 1: "benign"}).to_numpy()
    frame.iloc[:220].to_csv(tmp_path / "train.csv", index=False)
    frame.iloc[220:].drop(columns="diagnosis").to_csv(tmp_path / "new.csv", index=False)
    out = tmp_path / "model"
    argv = ["fit", str(tmp_path / "train.csv"), "--target", "diagnosis", "--out", str(out),
            "--library", "tiny", "--cv", "3", "--n-jobs", "1", "--time-limit", "60",
            "--max-predict-ms", "none"]  # fmt: skip
    assert main(argv) == 0
    said = capsys.readouterr()
    assert "hillclimb mxe" in said.out
    lab = "column 'lab' is numeric but holds the non-numeric token(s) ['?'] in {} cell(s); those "
    lab += "cells are treated as missing"
    assert f"warning: {lab.format(25)}" in said.err.splitlines()  # 25 of the 220 rows hold '?'
    from ensel.estimator import load_model

    model = load_model(out / "model.pkl")
    assert model.max_predict_ms is None and "tried" not in model.predict_budget_
    assert (
        main(["predict", str(out), str(tmp_path / "new.csv"), "--out", str(tmp_path / "p.csv")])
        == 0
    )
    assert capsys.readouterr().err == f"warning: {lab.format(9)}\n"  # one line, nothing else
    preds = pd.read_csv(tmp_path / "p.csv")
    assert len(preds) == 80 and preds["prediction"].notna().all()


def test_a_bad_predict_budget_is_refused_before_any_work(csvs, capsys):
    out = csvs / "m_budget"
    argv = ["fit", str(csvs / "train.csv"), "--target", "diagnosis", "--out", str(out)]
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--max-predict-ms", "0"])
    assert exit_.value.code == 2
    assert "give milliseconds (> 0), 'auto' or 'none'" in capsys.readouterr().err
    assert not out.exists()


def test_warnings_print_as_one_line_and_python_s_format_is_restored(capsys):
    """Every warning of a command is ``warning: <message>`` on one line of stderr (a message
    over several lines joined); after ``main`` returns, warnings show as before."""
    import warnings

    from ensel import cli

    def warn(args):
        warnings.warn("first line\n   second   line", UserWarning, stacklevel=1)
        warnings.warn("another", RuntimeWarning, stacklevel=1)
        return "done"

    before = warnings.showwarning
    with pytest.MonkeyPatch.context() as patched:
        patched.setitem(cli.COMMANDS, "demo", warn)
        assert main(["demo"]) == 0
    said = capsys.readouterr()
    assert said.err == "warning: first line second line\nwarning: another\n"
    assert said.out == "done\n"
    assert warnings.showwarning is before
