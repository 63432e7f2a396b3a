"""Mimic nets: a mimic of a known function fits it, labelling is batched, results are seeded,
bad input gets clear errors, and a missing torch names the extra to install."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("torch")

from ensel._imports import optional
from ensel.compress import MimicClassifier, compress, label


class KnownFunction:
    """A 'model' whose probabilities are a fixed smooth function of two numeric columns and one
    categorical column: softmax of three scores. It records the batch sizes it is asked for."""

    classes_ = np.array(["a", "b", "c"])

    def __init__(self) -> None:
        self.calls: list[int] = []

    def predict_proba(self, X: pd.DataFrame) -> np.ndarray:
        self.calls.append(len(X))
        u, v = X["u"].to_numpy(), X["v"].to_numpy()
        shift = X["kind"].map({"p": 1.0, "q": -1.0}).to_numpy()
        scores = np.column_stack([2 * u + shift, np.sin(2 * v), -u - v])
        e = np.exp(scores - scores.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)


def known_data(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {"u": rng.normal(size=n), "v": rng.uniform(-2, 2, n), "kind": rng.choice(["p", "q"], n)}
    )


@pytest.fixture(scope="module")
def fitted():
    model = KnownFunction()
    X = known_data(500, seed=0)
    mimic = compress(
        model, X, n_pseudo=8000, hidden=32, epochs=40, batch_size=128, learning_rate=3e-3,
        label_batch_size=3000, random_state=0,
    )  # fmt: skip
    return model, X, mimic


def test_mimic_fits_a_known_function(fitted):
    model, _, mimic = fitted
    fresh = known_data(2000, seed=1)
    truth = model.predict_proba(fresh)
    got = mimic.predict_proba(fresh)
    assert got.shape == (2000, 3)
    np.testing.assert_allclose(got.sum(1), 1.0, atol=1e-5)
    assert np.sqrt(np.mean((got - truth) ** 2)) < 0.03
    assert np.mean(mimic.predict(fresh) == model.classes_[truth.argmax(1)]) > 0.95
    assert mimic.history_.fidelity_rmse < 0.03
    assert mimic.history_.best_epoch >= 1 and len(mimic.history_.val_loss) >= 1


def test_labelling_is_batched(fitted):
    model, X, _ = fitted
    # the fixture labelled 8000 pseudo rows in batches of at most 3000, then the 500 rows
    assert max(model.calls) <= 3000
    assert model.calls[:3] == [3000, 3000, 2000] and model.calls[3] == 500
    direct = label(model, X, batch_size=128)
    np.testing.assert_allclose(direct, model.predict_proba(X))


def test_seeded_and_saved(fitted, tmp_path):
    model, X, mimic = fitted
    runs = [compress(model, X, n_pseudo=1000, epochs=3, random_state=s) for s in (5, 5, 6)]
    first, same, other = (m.predict_proba(X) for m in runs)
    np.testing.assert_array_equal(first, same)
    assert not np.array_equal(first, other)
    mimic.save(tmp_path / "mimic.pkl")
    loaded = MimicClassifier.load(tmp_path / "mimic.pkl")
    np.testing.assert_array_equal(loaded.predict_proba(X), mimic.predict_proba(X))


def test_predict_checks_its_input(fitted):
    _, X, mimic = fitted
    with pytest.raises(ValueError, match=r"X lacks column\(s\) \['v'\]"):
        mimic.predict_proba(X.drop(columns="v"))
    missing = mimic.predict_proba(X.assign(u=np.nan))  # missing cells sit at the mean
    assert np.isfinite(missing).all()
    with pytest.warns(UserWarning, match="never seen in training"):
        mimic.predict_proba(X.assign(kind="r"))


class NoProba:
    def predict(self, X):
        return np.zeros(len(X))


class PositiveOnly:
    def predict_proba(self, X):
        return np.full(len(X), 0.5)


class NotNormalised:
    def predict_proba(self, X):
        return np.full((len(X), 2), 0.9)


@pytest.mark.parametrize(
    ("model", "X", "kwargs", "error", "message"),
    [
        (NoProba(), np.ones((10, 2)), {}, TypeError, "NoProba, which has none"),
        (KnownFunction(), known_data(0, 0), {}, ValueError, "X has 0 sample(s)"),
        (KnownFunction(), known_data(20, 0).assign(u=np.inf), {}, ValueError, "infinite"),
        (PositiveOnly(), np.ones((10, 2)), {}, ValueError, "returned shape (400,) for 400 rows"),
        (NotNormalised(), np.ones((10, 2)), {}, ValueError, "do not sum to 1"),
        (KnownFunction(), known_data(20, 0), {"hidden": 0}, ValueError, "hidden=0"),
        (KnownFunction(), known_data(20, 0), {"loss": "hinge"}, ValueError, "loss='hinge'"),
        (KnownFunction(), known_data(20, 0), {"n_pseudo": 5}, ValueError, "holds out 0 rows"),
    ],
)
def test_bad_input(model, X, kwargs, error, message):
    options = {"n_pseudo": 400, "epochs": 1, "label_batch_size": 400, **kwargs}
    with pytest.raises(error) as info:
        compress(model, X, **options)
    assert message in str(info.value)


def test_missing_optional_package_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # makes the import fail
    with pytest.raises(ImportError) as info:
        optional("onnxruntime", "running a mimic")
    assert "running a mimic needs the optional package 'onnxruntime'" in str(info.value)
    assert "pip install 'ensel[compress]'" in str(info.value)
