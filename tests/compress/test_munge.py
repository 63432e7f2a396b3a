"""MUNGE: types and categories kept, p = 0 reproduces the data, values stay near the neighbour,
neighbours match a brute-force reference, bad input gets clear errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ensel.compress import munge
from ensel.compress.munge import nearest_neighbours
from ensel.data import Columns


def mixed_frame(n: int = 300, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "x": rng.normal(size=n),
            "big": rng.normal(1000.0, 50.0, size=n).astype(np.float32),
            "count": rng.integers(0, 10, size=n).astype(np.int16),
            "colour": rng.choice(["red", "green", "blue"], size=n).astype(object),
            "size": pd.Categorical(rng.choice(["S", "M", "L"], size=n), categories=["S", "M", "L"]),
            "flag": rng.random(n) < 0.3,
        }
    )


def test_output_keeps_columns_dtypes_and_categories():
    X = mixed_frame()
    out = munge(X, size=1000, p=0.5, s=10.0, random_state=0)
    assert out.shape == (1000, X.shape[1])
    assert list(out.columns) == list(X.columns)
    assert (out.dtypes == X.dtypes).all()
    assert list(out["size"].cat.categories) == ["S", "M", "L"]
    assert set(out["colour"]) <= set(X["colour"])
    assert set(out["flag"]) <= {True, False}
    assert out["count"].between(X["count"].min() - 1, X["count"].max() + 1).all()
    assert isinstance(out.index, pd.RangeIndex)


def test_array_in_array_out():
    X = np.random.default_rng(0).normal(size=(50, 3))
    out = munge(X, size=120, random_state=0)
    assert isinstance(out, np.ndarray) and out.shape == (120, 3) and out.dtype == X.dtype
    ints = np.arange(100).reshape(50, 2)
    assert munge(ints, size=60, random_state=0).dtype == ints.dtype


def test_p_zero_reproduces_the_data():
    X = mixed_frame(40)
    pd.testing.assert_frame_equal(munge(X, size=40, p=0.0, random_state=3), X)
    out = munge(X, size=100, p=0.0, random_state=3)  # two passes and a subset of a third
    pd.testing.assert_frame_equal(out.iloc[:80], pd.concat([X, X], ignore_index=True))
    merged = out.iloc[80:].merge(X.drop_duplicates(), how="left", indicator=True)
    assert (merged["_merge"] == "both").all()


def test_values_stay_near_their_neighbourhood():
    """One pass: row i comes from example i and its neighbour j. A continuous value is either
    unchanged or drawn from N(x_j, |x_i - x_j| / s); a categorical one is x_i's or x_j's."""
    X = mixed_frame(400, seed=1)
    s, p = 5.0, 0.5
    out = munge(X, size=len(X), p=p, s=s, random_state=0)
    nn = nearest_neighbours(X, Columns.infer(X))
    here, there, new = X["x"].to_numpy(), X["x"].to_numpy()[nn], out["x"].to_numpy()
    changed = new != here
    assert abs(changed.mean() - p) < 0.08  # about p of the attributes are swapped
    z = (new[changed] - there[changed]) / (np.abs(here - there)[changed] / s)
    assert np.abs(z).max() < 6.0
    assert 0.8 < z.std() < 1.2  # the spread is |difference| / s
    colour = out["colour"].to_numpy()
    assert np.all((colour == X["colour"].to_numpy()) | (colour == X["colour"].to_numpy()[nn]))


def test_neighbours_match_brute_force():
    X = mixed_frame(120, seed=2)
    cols = Columns.infer(X)
    numeric = X[list(cols.numeric)].to_numpy(float)
    z = (numeric - numeric.mean(0)) / numeric.std(0)
    d2 = ((z[:, None, :] - z[None, :, :]) ** 2).sum(-1)
    for name in cols.categorical:
        values = X[name].to_numpy()
        d2 += values[:, None] != values[None, :]
    np.fill_diagonal(d2, np.inf)
    nn = nearest_neighbours(X, cols)
    np.testing.assert_allclose(d2[np.arange(len(X)), nn], d2.min(axis=1))


def test_seeded():
    X = mixed_frame(60)
    pd.testing.assert_frame_equal(munge(X, 200, random_state=7), munge(X, 200, random_state=7))
    assert not munge(X, 200, random_state=7).equals(munge(X, 200, random_state=8))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"X": pd.DataFrame({"a": []}), "size": 5}, "X has 0 sample(s)"),
        ({"X": pd.DataFrame({"a": [1.0, np.inf]}), "size": 5}, "infinite values"),
        ({"X": pd.DataFrame({"a": [1.0]}), "size": 5}, "at least 2 rows"),
        ({"X": np.ones((4, 2)), "size": 0}, "size=0: must be a positive integer"),
        ({"X": np.ones((4, 2)), "size": 5, "p": 1.5}, "p=1.5"),
        ({"X": np.ones((4, 2)), "size": 5, "s": 0}, "s=0"),
    ],
)
def test_bad_input(kwargs, message):
    with pytest.raises(ValueError) as info:
        munge(**kwargs)
    assert message in str(info.value)


def test_missingness_is_kept_at_the_rate_of_the_data():
    rng = np.random.default_rng(0)
    n = 2000
    X = pd.DataFrame(
        {
            "a": rng.normal(size=n),
            "b": rng.normal(size=n),
            "k": rng.choice(["x", "y", "z"], size=n).astype(object),
        }
    )
    X.loc[rng.random(n) < 0.3, "a"] = np.nan
    X.loc[rng.random(n) < 0.1, "k"] = None
    pseudo = munge(X, 20_000, p=0.5, random_state=0)
    assert abs(pseudo["a"].isna().mean() - 0.3) < 0.03
    assert abs(pseudo["k"].isna().mean() - 0.1) < 0.02
    assert pseudo["b"].notna().all()
    # a missing cell's pseudo value is known only when taken from a known neighbour value
    assert set(pseudo["k"].dropna()) == {"x", "y", "z"}


def test_pair_update_alters_the_neighbour_too_in_row_order():
    # two rows, each the other's neighbour, every attribute altered, no noise (s huge): the
    # own update swaps them; the paper's pair update swaps them at row 0 and back at row 1
    X = pd.DataFrame({"a": [0.0, 10.0], "k": ["x", "y"]})
    own = munge(X, 2, p=1.0, s=1e12, random_state=0)
    pair = munge(X, 2, p=1.0, s=1e12, random_state=0, update="pair")
    assert own["a"].tolist() == pytest.approx([10.0, 0.0], abs=1e-9) and own["k"].tolist() == [
        "y",
        "x",
    ]
    assert pair["a"].tolist() == pytest.approx([0.0, 10.0], abs=1e-9) and pair["k"].tolist() == [
        "x",
        "y",
    ]


def test_pair_update_keeps_the_frame_and_is_seeded():
    X = mixed_frame(60)
    pseudo = munge(X, 150, random_state=1, update="pair")
    assert pseudo.shape == (150, X.shape[1]) and list(pseudo.dtypes) == list(X.dtypes)
    pd.testing.assert_frame_equal(pseudo, munge(X, 150, random_state=1, update="pair"))
    unchanged = munge(X, 120, p=0.0, random_state=1, update="pair")
    pd.testing.assert_frame_equal(unchanged, pd.concat([X, X], ignore_index=True))


def test_unknown_update_is_refused_with_the_valid_names():
    with pytest.raises(ValueError, match="update='both': must be one of own, pair"):
        munge(np.ones((4, 2)), 5, update="both")
