"""Export: the ONNX file reproduces the torch mimic to 1e-5 under onnxruntime (also in a process
where ensel and torch cannot be imported), for mixed, numeric-only and categorical-only data;
TorchScript round-trips; unknown formats get a clear error."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

from ensel.compress import compress  # noqa: E402


class Scores:
    """A fixed probability model on any columns: softmax of a random linear map of the one-hot,
    standardised rows, with a sine so it is not linear."""

    def __init__(self, X, n_classes: int, classes=None) -> None:
        from ensel.compress.encoding import Encoding

        self.encoding = Encoding.fit(X)
        rng = np.random.default_rng(0)
        self.W = rng.normal(size=(self.encoding.n_features, n_classes))
        self.classes_ = np.arange(n_classes) if classes is None else np.asarray(classes)

    def predict_proba(self, X):
        z = np.sin(self.encoding.transform(X).astype(float) @ self.W)
        e = np.exp(z - z.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)


def mixed(n: int = 300, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "income": rng.lognormal(10, 1, n),
            "colour": rng.choice(["red", "green", "blue"], n),
            "age": rng.integers(18, 90, n),
            "member": rng.random(n) < 0.5,
        }
    )


def inputs_for(session, X: pd.DataFrame) -> dict:
    meta = session.get_modelmeta().custom_metadata_map
    feeds = {}
    numeric, categorical = (json.loads(meta[k]) for k in ("numeric_columns", "categorical_columns"))
    if numeric:
        feeds["numeric"] = X[numeric].to_numpy(np.float64)
    if categorical:  # a missing categorical cell is the empty string
        feeds["categorical"] = X[categorical].astype(object).fillna("").astype(str).to_numpy()
    return feeds


def small_mimic(X, model, **kwargs):
    return compress(model, X, n_pseudo=2000, hidden=16, epochs=3, random_state=0, **kwargs)


@pytest.mark.parametrize("activation", ["tanh", "relu", "sigmoid"])
def test_onnx_matches_torch_on_mixed_data(tmp_path, activation):
    X = mixed()
    mimic = small_mimic(X, Scores(X, 3, ["low", "mid", "high"]), activation=activation)
    path = tmp_path / "mimic.onnx"
    mimic.export(path)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["numeric", "categorical"]
    fresh = mixed(500, seed=1)
    fresh.loc[:4, "colour"] = "purple"  # unseen: an all-zero block on both paths
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        expected = mimic.predict_proba(fresh)
        labels = mimic.predict(fresh)
    proba, label = session.run(None, inputs_for(session, fresh))
    np.testing.assert_allclose(proba, expected, atol=1e-5, rtol=0)
    assert list(label) == list(labels)
    meta = session.get_modelmeta().custom_metadata_map
    assert json.loads(meta["classes"]) == ["low", "mid", "high"]


def test_onnx_numeric_array_and_integer_classes(tmp_path):
    X = np.random.default_rng(0).normal(size=(200, 4))
    mimic = small_mimic(X, Scores(X, 2))
    mimic.export(tmp_path / "m.onnx")
    session = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["numeric"]
    proba, label = session.run(None, {"numeric": X})
    np.testing.assert_allclose(proba, mimic.predict_proba(X), atol=1e-5, rtol=0)
    assert label.dtype == np.int64 and np.array_equal(label, mimic.predict(X))


def test_onnx_categorical_only(tmp_path):
    X = mixed()[["colour", "member"]]
    mimic = small_mimic(X, Scores(X, 2))
    mimic.export(tmp_path / "m.onnx")
    session = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["categorical"]
    proba, _ = session.run(None, inputs_for(session, X))
    np.testing.assert_allclose(proba, mimic.predict_proba(X), atol=1e-5, rtol=0)


def with_missing(X: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """``X`` with a fifth of its income, colour and member cells missing."""
    rng = np.random.default_rng(seed)
    X = X.astype({"member": object})
    for name in ("income", "colour", "member"):
        X.loc[rng.random(len(X)) < 0.2, name] = None if X[name].dtype == object else np.nan
    return X


def test_onnx_and_torchscript_take_missing_values_as_the_torch_mimic_does(tmp_path):
    X = with_missing(mixed())
    mimic = small_mimic(X, Scores(X, 2))
    mimic.export(tmp_path / "m.onnx")
    session = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    fresh = with_missing(mixed(400, seed=1), seed=1)
    fresh.loc[:30, "age"] = np.nan  # never missing in training: at the mean, no indicator
    expected = mimic.predict_proba(fresh)
    assert np.isfinite(expected).all()
    proba, _ = session.run(None, inputs_for(session, fresh))
    np.testing.assert_allclose(proba, expected, atol=1e-5, rtol=0)
    # missing values matter to the mimic: not the same as the rows with their values
    assert np.abs(expected - mimic.predict_proba(mixed(400, seed=1))).max() > 1e-3
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        mimic.export(tmp_path / "m.pt")
        scripted = torch.jit.load(str(tmp_path / "m.pt"))
    numeric = torch.from_numpy(fresh[scripted.numeric_columns].to_numpy(np.float64))
    categorical = [
        fresh[c].astype(object).fillna("").astype(str).tolist()
        for c in scripted.categorical_columns
    ]
    got = scripted(numeric, categorical).numpy()
    np.testing.assert_allclose(got, expected, atol=1e-6, rtol=0)


def test_onnx_runs_where_ensel_cannot_be_imported(tmp_path):
    X = with_missing(mixed())
    mimic = small_mimic(X, Scores(X, 3))
    mimic.export(tmp_path / "m.onnx")
    X.to_csv(tmp_path / "rows.csv", index=False)
    script = textwrap.dedent(
        f"""
        import sys
        sys.modules["ensel"] = None  # import ensel raises ImportError
        sys.modules["torch"] = None
        try:
            import ensel
        except ImportError:
            pass
        else:
            raise SystemExit("ensel was importable")
        import csv, json
        import numpy as np
        import onnxruntime as ort
        session = ort.InferenceSession({str(tmp_path / "m.onnx")!r})
        meta = session.get_modelmeta().custom_metadata_map
        rows = list(csv.DictReader(open({str(tmp_path / "rows.csv")!r})))
        num = [
            [float(r[c]) if r[c] else float("nan") for c in json.loads(meta["numeric_columns"])]
            for r in rows
        ]
        cat = [[r[c] for c in json.loads(meta["categorical_columns"])] for r in rows]
        proba, _ = session.run(None, {{"numeric": np.array(num), "categorical": np.array(cat)}})
        np.save({str(tmp_path / "out.npy")!r}, proba)
        """
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    got = np.load(tmp_path / "out.npy")
    np.testing.assert_allclose(got, mimic.predict_proba(X), atol=1e-5, rtol=0)


@pytest.mark.filterwarnings("ignore:.*torch.jit.*deprecated:DeprecationWarning")
def test_torchscript_round_trip(tmp_path):
    X = mixed()
    mimic = small_mimic(X, Scores(X, 3))
    mimic.export(tmp_path / "m.pt")
    scripted = torch.jit.load(str(tmp_path / "m.pt"))
    numeric = torch.from_numpy(X[scripted.numeric_columns].to_numpy(np.float64))
    categorical = [X[c].astype(str).tolist() for c in scripted.categorical_columns]
    got = scripted(numeric, categorical).numpy()
    np.testing.assert_allclose(got, mimic.predict_proba(X), atol=1e-6, rtol=0)


def test_unknown_format(tmp_path):
    X = mixed(50)
    mimic = small_mimic(X, Scores(X, 2))
    with pytest.raises(ValueError, match=r"cannot tell the format of .*model\.bin"):
        mimic.export(tmp_path / "model.bin")
    with pytest.raises(ValueError, match="format='pmml': use one of"):
        mimic.export(tmp_path / "model.onnx", format="pmml")
