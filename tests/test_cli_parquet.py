"""The ensel command on parquet: fit from a parquet directory (the features read where they
are fitted) gives the model that the same rows in a CSV give; predict streams a parquet file
in batches to parquet or CSV with the predictions of the whole frame."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer

from ensel.cli import main
from ensel.estimator import load_model

pytest.importorskip("pyarrow")

from ensel.estimator import stream

FIT = ["--target", "diagnosis", "--drop", "id", "--library", "tiny", "--cv", "3", "--n-jobs", "1"]
FIT += ["--max-predict-ms", "none"]  # no timed choice: the two fits must agree


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli-parquet")
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    frame = X.iloc[:, :8].assign(diagnosis=y.map({0: "malignant", 1: "benign"}), id=range(len(y)))
    (tmp / "train").mkdir()
    frame.iloc[:200].to_parquet(tmp / "train" / "a.parquet", row_group_size=64)
    frame.iloc[200:400].to_parquet(tmp / "train" / "b.parquet", row_group_size=64)
    pd.read_parquet(tmp / "train").to_csv(tmp / "train.csv", index=False)
    new = frame.iloc[400:].drop(columns="diagnosis")
    new.to_parquet(tmp / "new.parquet", row_group_size=50)
    new.to_csv(tmp / "new.csv", index=False)
    return tmp


def test_fit_from_parquet_equals_fit_from_csv_and_predict_streams(files, monkeypatch):
    argv = ["fit", str(files / "train"), "--out", str(files / "pq"), *FIT]
    assert main(argv) == 0
    assert main(["fit", str(files / "train.csv"), "--out", str(files / "csv"), *FIT]) == 0
    from_parquet = load_model(files / "pq" / "model.pkl")
    from_csv = load_model(files / "csv" / "model.pkl")
    np.testing.assert_array_equal(from_parquet.weights_, from_csv.weights_)
    assert from_parquet.input_columns_ == from_csv.input_columns_  # id and label left out
    monkeypatch.setattr(stream, "BATCH_ROWS", 40)  # several batches per row group
    monkeypatch.setattr(stream.iter_parquet, "__defaults__", (40,))
    model = str(files / "pq")
    assert (
        main(["predict", model, str(files / "new.parquet"), "--out", str(files / "p.parquet")]) == 0
    )
    assert main(["predict", model, str(files / "new.csv"), "--out", str(files / "p.csv")]) == 0
    streamed = pd.read_parquet(files / "p.parquet")
    whole = pd.read_csv(files / "p.csv")
    assert len(streamed) == 169
    pd.testing.assert_frame_equal(streamed, whole, check_dtype=False, rtol=0, atol=1e-15)
    argv = ["predict", model, str(files / "new.parquet"), "--out", str(files / "r.csv")]
    assert main([*argv, "--with-risk"]) == 0
    assert "risk_combined" in pd.read_csv(files / "r.csv").columns


def test_parquet_errors_are_one_line(files, capsys):
    argv = ["fit", str(files / "train"), "--out", str(files / "bad"), *FIT]
    assert main([*argv[:-2], "--target", "nope"]) == 2
    assert "column(s) ['nope'] are not in" in capsys.readouterr().err
    assert (
        main(["predict", str(files / "pq"), str(files / "none-*.parquet"), "--out", "x.csv"]) == 2
    )
    assert "no parquet file there" in capsys.readouterr().err


UNREADABLE = (
    "{path} is not a readable parquet file (Parquet magic bytes not found in footer. Either the "
    "file is corrupted or this is not a parquet file.); check that it was written completely as "
    "parquet, or give a CSV file"
)


def test_an_unreadable_parquet_file_is_one_line_naming_it(files, tmp_path, capsys):
    """A CSV saved as .parquet, and a parquet file cut short inside a directory of good ones:
    one line that names the file and says what to do (was pyarrow's message alone)."""
    bad = tmp_path / "bad.parquet"
    bad.write_text("a,b\n1,2\n")
    argv = ["fit", str(bad), "--target", "b", "--out", str(tmp_path / "m")]
    assert main(argv) == 2
    assert capsys.readouterr().err == f"ensel: error: {UNREADABLE.format(path=bad)}\n"
    train = tmp_path / "train"
    train.mkdir()
    good = (files / "train" / "a.parquet").read_bytes()
    (train / "a.parquet").write_bytes(good)
    (train / "b.parquet").write_bytes(good[: len(good) // 2])
    argv = ["fit", str(train), *FIT, "--out", str(tmp_path / "m")]
    assert main(argv) == 2
    cut = train / "b.parquet"
    assert capsys.readouterr().err == f"ensel: error: {UNREADABLE.format(path=cut)}\n"


def test_predict_names_an_unreadable_parquet_file(tmp_path):
    """``ensel predict`` reads parquet through ``stream.iter_parquet``: the same one line."""
    bad = tmp_path / "new.parquet"
    bad.write_bytes(b"PAR1 not really")
    with pytest.raises(ValueError) as raised:
        list(stream.iter_parquet(bad))
    assert str(raised.value) == UNREADABLE.format(path=bad)
