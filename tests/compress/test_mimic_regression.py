"""Regression mimics: ``compress`` of a regressor trains a net on MUNGE rows labelled by its
``predict``; the net tracks the model in the target's units, and its ONNX and TorchScript exports
reproduce it."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")

from ensel.compress import MimicRegressor, compress, fit_mimic  # noqa: E402
from ensel.compress.mimic import is_regressor  # noqa: E402


class Smooth:
    """A fixed regressor on mixed columns: far from 0, not unit scale."""

    _estimator_type = "regressor"

    def predict(self, X):
        colour = (X["colour"] == "red").to_numpy() * 30.0
        return 500.0 + 40.0 * np.sin(X["a"].to_numpy()) + 10.0 * X["b"].to_numpy() + colour


def frame(n: int = 400, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {"a": rng.normal(size=n), "b": rng.normal(size=n), "colour": rng.choice(["red", "blue"], n)}
    )


@pytest.fixture(scope="module")
def mimic():
    return compress(
        Smooth(), frame(), n_pseudo=4000, hidden=32, epochs=60, patience=6, random_state=0
    )


def test_regressor_mimic_tracks_the_model_in_target_units(mimic):
    assert isinstance(mimic, MimicRegressor)
    X = frame(300, seed=1)
    pred = mimic.predict(X)
    truth = Smooth().predict(X)
    assert pred.shape == (300,)
    spread = truth.std()
    rmse = np.sqrt(np.mean((pred - truth) ** 2))
    assert rmse < 0.3 * spread  # the net follows the model (R² > 0.9), not just its mean
    assert 0 < mimic.history_.fidelity_rmse < 0.3 * spread


def test_same_seed_same_mimic():
    kwargs = {"n_pseudo": 600, "hidden": 8, "epochs": 5, "random_state": 3}
    a = compress(Smooth(), frame(120), **kwargs).predict(frame(20, 2))
    b = compress(Smooth(), frame(120), **kwargs).predict(frame(20, 2))
    np.testing.assert_array_equal(a, b)


def test_is_regressor_tells_by_tags_and_methods():
    from sklearn.linear_model import LinearRegression, LogisticRegression

    assert is_regressor(Smooth()) and is_regressor(LinearRegression())
    assert not is_regressor(LogisticRegression())


def test_fit_mimic_checks_regression_targets():
    X = frame(50)
    with pytest.raises(ValueError, match=r"a regression mimic needs \(len\(pseudo\),\)"):
        fit_mimic(X, X, np.zeros((50, 2)), task="regression")
    with pytest.raises(ValueError, match="task='ranking'"):
        fit_mimic(X, X, np.zeros(50), task="ranking")


def test_onnx_and_torchscript_reproduce_the_regression_mimic(mimic, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    X = frame(50, seed=4)
    mimic.export(tmp_path / "m.onnx")
    session = ort.InferenceSession(str(tmp_path / "m.onnx"))
    (prediction,) = session.run(
        None,
        {
            "numeric": X[["a", "b"]].to_numpy(np.float64),
            "categorical": X[["colour"]].astype(str).to_numpy(object),
        },
    )
    assert prediction.shape == (50,)
    np.testing.assert_allclose(prediction, mimic.predict(X), rtol=1e-5, atol=1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mimic.export(tmp_path / "m.pt")
        scripted = torch.jit.load(str(tmp_path / "m.pt"))
    out = scripted(torch.from_numpy(X[["a", "b"]].to_numpy()), [X["colour"].astype(str).tolist()])
    np.testing.assert_allclose(out.numpy(), mimic.predict(X), rtol=1e-5, atol=1e-3)
    mimic.save(tmp_path / "m.pkl")
    np.testing.assert_array_equal(
        MimicRegressor.load(tmp_path / "m.pkl").predict(X), mimic.predict(X)
    )


class FarFromZero(Smooth):
    """Smooth's values a billion up: float32 holds them only to steps of 64."""

    def predict(self, X):
        return 1e9 + super().predict(X)


def test_exports_keep_a_target_far_from_zero(tmp_path):
    """The ONNX graph put the mean back in float32, so every row came out in steps of 64
    (1e9 + 512 where mimic.predict said 1e9 + 541); TorchScript likewise."""
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    mimic = compress(FarFromZero(), frame(200), n_pseudo=600, hidden=8, epochs=5, random_state=0)
    X = frame(20, seed=5)
    expected = mimic.predict(X) - 1e9
    assert np.ptp(expected) > 10
    mimic.export(tmp_path / "m.onnx")
    session = ort.InferenceSession(str(tmp_path / "m.onnx"))
    feeds = {"numeric": X[["a", "b"]].to_numpy(np.float64), "categorical": X[["colour"]].to_numpy()}
    (prediction,) = session.run(None, feeds)
    np.testing.assert_allclose(prediction - 1e9, expected, atol=1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mimic.export(tmp_path / "m.pt")
        scripted = torch.jit.load(str(tmp_path / "m.pt"))
    out = scripted(torch.from_numpy(X[["a", "b"]].to_numpy()), [X["colour"].tolist()])
    np.testing.assert_allclose(out.numpy() - 1e9, expected, atol=1e-3)
