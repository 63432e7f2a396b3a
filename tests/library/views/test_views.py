"""Views: imputation with missing indicators, missing as a level, frequent-level pooling, and
NaN passed through for families that take it natively."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ensel.data import Columns
from ensel.library.views.base import MAX_LEVELS, MIN_LEVEL_ROWS, make_view


def _frame():
    return pd.DataFrame(
        {
            "a": [1.0, np.nan, 3.0, 10.0, np.nan, 5.0],
            "b": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
            "k": ["x", "y", None, "x", "x", "y"],
        }
    )


def test_imputing_native_view_medians_indicators_and_a_missing_code():
    frame = _frame()
    view = make_view("native", Columns.infer(frame)).fit(frame)
    Z = view.transform(frame)
    # a (median 4 of 1, 3, 10, 5), b, k's code (missing = code 2, after x and y), and last
    # a's indicator (after the codes, so categorical columns keep their native index)
    np.testing.assert_array_equal(Z[:, 0], [1, 4, 3, 10, 4, 5])
    np.testing.assert_array_equal(Z[:, 1], frame["b"])
    np.testing.assert_array_equal(Z[:, 2], [0, 1, 2, 0, 0, 1])
    np.testing.assert_array_equal(Z[:, 3], [0, 1, 0, 0, 1, 0])
    # b had no missing cell in training: imputed by its median, no indicator column
    new = pd.DataFrame({"a": [np.nan], "b": [np.nan], "k": ["never"]})
    np.testing.assert_array_equal(view.transform(new), [[4.0, 3.5, -1.0, 1.0]])


def test_native_missing_view_passes_nan_through():
    frame = _frame()
    Z = make_view("native", Columns.infer(frame), native_missing=True).fit(frame).transform(frame)
    assert Z.shape == (6, 3)
    np.testing.assert_array_equal(np.isnan(Z[:, 0]), frame["a"].isna())
    np.testing.assert_array_equal(np.isnan(Z[:, 2]), frame["k"].isna())


def test_standardized_view_scales_imputed_values_and_one_hots_missing():
    frame = pd.concat([_frame()] * 5, ignore_index=True)  # every level seen >= 5 times
    view = make_view("standardized", Columns.infer(frame)).fit(frame)
    Z = view.transform(frame)
    # a, b standardised; k: x, y, missing; a's indicator
    assert Z.shape == (30, 6)
    np.testing.assert_allclose(Z[:, :2].mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(Z[:, :2].std(axis=0), 1.0)
    np.testing.assert_array_equal(Z[:, 2:5].sum(axis=1), 1.0)
    np.testing.assert_array_equal(Z[:, 4], frame["k"].isna())
    np.testing.assert_array_equal(Z[:, 5], frame["a"].isna())


def test_one_hot_view_pools_rare_levels_and_unseen_ones():
    n = 400
    rng = np.random.default_rng(0)
    ids = [f"id{i}" for i in range(n)]  # a level per row, like an id
    common = rng.choice(["a", "b"], size=n)
    frame = pd.DataFrame({"id": ids, "common": common})
    view = make_view("standardized", Columns.infer(frame)).fit(frame)
    Z = view.transform(frame)
    assert Z.shape == (n, 1 + 2)  # id: only "other"; common: a, b
    np.testing.assert_array_equal(Z[:, 0], 1.0)
    many = pd.DataFrame({"z": [f"z{i % 50}" for i in range(50 * MIN_LEVEL_ROWS)]})
    view = make_view("standardized", Columns.infer(many)).fit(many)
    assert view.transform(many).shape[1] == MAX_LEVELS + 1
    unseen = view.transform(pd.DataFrame({"z": ["never"]}))
    assert unseen[0, -1] == 1.0 and unseen.sum() == 1.0


def test_a_view_learns_only_from_the_rows_it_is_fitted_on():
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0, 100.0, 200.0, np.nan]})
    view = make_view("native", Columns.infer(frame)).fit(frame.iloc[:3])
    assert view.transform(frame.iloc[5:])[0, 0] == 2.0  # median of the first three rows


def _levels_table(n: int = 3000) -> pd.DataFrame:
    """A wide categorical column (some levels tied in count, some rare), missing cells, and a
    category no row has."""
    rng = np.random.default_rng(3)
    names = [f"v{i}" for i in range(60)]
    values = rng.choice(names, n, p=np.r_[np.full(20, 0.045), np.full(40, 0.1 / 40)])
    frame = pd.DataFrame({"x": rng.normal(size=n), "k": values})
    frame.loc[rng.random(n) < 0.05, "k"] = None
    return frame


def test_a_categorical_column_and_the_same_column_as_text_give_one_view():
    text = _levels_table()
    coded = text.assign(
        k=pd.Categorical(text["k"], categories=[*sorted(set(text["k"].dropna())), "none"])
    )
    unseen = pd.DataFrame({"x": [0.0, 1.0], "k": ["never", None]})
    for kind in ("standardized", "native"):
        a = make_view(kind, Columns.infer(text)).fit(text)
        b = make_view(kind, Columns.infer(coded)).fit(coded)
        for rows in (text, unseen):
            as_coded = rows.assign(k=rows["k"].astype("category"))
            np.testing.assert_array_equal(a.transform(rows), b.transform(as_coded))
            np.testing.assert_array_equal(a.transform(rows), a.transform(as_coded))


def test_the_one_hot_levels_do_not_depend_on_the_order_of_the_rows():
    frame = _levels_table()
    shuffled = frame.sample(frac=1.0, random_state=0)
    a = make_view("standardized", Columns.infer(frame)).fit(frame)
    b = make_view("standardized", Columns.infer(frame)).fit(shuffled)
    counts = frame["k"].value_counts()
    assert (counts == counts.iloc[MAX_LEVELS - 1]).sum() > 1  # a tie at the cut
    assert a.levels == b.levels and len(a.levels[0]) == MAX_LEVELS
    # the most frequent levels, ties broken by name
    cut = sorted(zip(-counts.to_numpy(), counts.index, strict=True))[:MAX_LEVELS]
    assert a.levels[0] == sorted(level for _, level in cut)


def test_views_of_equal_signatures_give_the_same_matrix():
    """Native views that pass missing values through learn nothing from their fold but the
    columns: two folds give one signature (and one matrix); an imputing or a standardised
    view learns medians and scales, so its folds' signatures differ."""
    frame = _frame()
    columns = Columns.infer(frame)
    first, second = frame.iloc[:3], frame.iloc[3:]
    for kind, native_missing, shared in [
        ("native", True, True),
        ("native", False, False),
        ("standardized", False, False),
    ]:
        a = make_view(kind, columns, native_missing).fit(first)
        b = make_view(kind, columns, native_missing).fit(second)
        assert (a.signature() == b.signature()) is shared
        if shared:
            np.testing.assert_array_equal(a.transform(frame), b.transform(frame))
        assert a.signature() is a.signature()  # made once
        again = make_view(kind, columns, native_missing).fit(first)
        assert again.signature() == a.signature()
        again.fit(second)
        assert again.signature() == b.signature()  # a refit forgets the old one
