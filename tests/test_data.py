"""The input layer: missing values allowed, stray tokens in numeric columns, all-missing and
constant columns left out, id-like columns warned, one-line errors for what cannot be used."""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pandas as pd
import pytest

from ensel.data import (
    as_frame,
    check_columns,
    check_features,
    clean_columns,
    plan_schema,
    read_table,
)
from ensel.library.data.training import prepare


def test_missing_values_pass_the_checks_infinities_do_not():
    frame = pd.DataFrame({"a": [1.0, np.nan], "b": ["x", None], "c": [True, None]})
    check_features(frame)
    with pytest.raises(ValueError, match=r"infinite values in column\(s\) \['a'\]"):
        check_features(pd.DataFrame({"a": [1.0, np.inf]}))


def test_stray_tokens_become_missing_with_a_warning_naming_column_and_tokens():
    frame = pd.DataFrame(
        {"lab": ["1.5", "?", "2.0", "NA", "3", "-"] * 5, "name": list("abcdef") * 5}
    )
    with pytest.warns(UserWarning, match=r"column 'lab' .* token\(s\) \['-', '\?', 'NA'\]"):
        clean, dropped = clean_columns(frame)
    assert clean["lab"].dtype == np.float64 and clean["lab"].isna().sum() == 15
    assert clean["name"].dtype != np.float64 and not dropped  # words are a category


def test_all_missing_columns_dropped_with_a_warning_constant_ones_with_a_note(caplog):
    frame = pd.DataFrame(
        {"x": np.arange(30.0), "empty": [np.nan] * 30, "same": [7] * 30, "flag": [1] * 29 + [None]}
    )
    with caplog.at_level(logging.INFO, logger="ensel.data"):
        with pytest.warns(UserWarning, match=r"\['empty'\] are missing in every training row"):
            clean, dropped = clean_columns(frame)
    assert dropped == {"empty": "missing in every row", "same": "constant"}
    assert list(clean.columns) == ["x", "flag"]  # one value plus missing cells: informative
    assert "constant column(s) ['same']" in caplog.text


def test_id_like_columns_are_warned_and_kept():
    frame = pd.DataFrame({"id": [f"p{i}" for i in range(40)], "x": np.linspace(0, 1, 40)})
    with pytest.warns(UserWarning, match="column 'id' has a distinct value in every row"):
        clean, _ = clean_columns(frame)
    assert "id" in clean  # x is continuous: all distinct values, no warning for it
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clean_columns(frame[["x"]])


def test_predict_time_text_in_a_numeric_column_becomes_missing():
    new = pd.DataFrame({"a": ["1", "?", None], "k": ["x", None, "zz"]})
    with pytest.warns(UserWarning) as record:
        out = check_columns(new, ["a", "k"], {"k": ["x", "y"]})
    messages = " ".join(str(w.message) for w in record)
    assert "column 'a' is numeric but holds the non-numeric token(s) ['?']" in messages
    assert "never seen in training: ['zz']" in messages  # a missing cell is not "unseen"
    assert out["a"].dtype == np.float64 and np.isnan(out["a"][1])


def test_missing_labels_are_a_one_line_error():
    with pytest.raises(ValueError, match=r"y has missing labels \(NaN/None\) in 1 of 4 rows"):
        prepare(np.ones((4, 1)), [0, 1, None, 1], cv=None)


def test_prepare_keeps_the_input_columns_and_what_it_dropped():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"x": rng.normal(size=40), "c": [3.0] * 40})
    data = prepare(X, rng.integers(0, 2, 40), cv=2)
    assert data.input_columns == ("x", "c") and data.dropped == {"c": "constant"}
    assert list(data.X.columns) == ["x"]


def test_arrays_take_the_training_names_after_one_width_check():
    from ensel.compress.encoding import Encoding
    from ensel.data import named, select_columns
    from ensel.risk import FeatureSpace

    frame = named(np.zeros((2, 3)), ["a", "b", "c"], who="the thing")
    assert list(frame.columns) == ["a", "b", "c"]
    with pytest.raises(ValueError, match=r"^X has 2 features, but the thing is expecting 3 "):
        named(np.zeros((2, 2)), ["a", "b", "c"], who="the thing")
    given = pd.DataFrame({"b": [1], "a": [2], "z": [0]})
    assert named(given, ["a", "b"], who="the thing") is given  # a DataFrame goes by name
    assert list(select_columns(given, ["a", "b"]).columns) == ["a", "b"]
    with pytest.raises(ValueError, match=r"X lacks column\(s\) \['c'\] seen in training"):
        select_columns(given, ["a", "c"])
    # the detectors and the mimic encoding say it the same way
    space, _ = FeatureSpace.fit(np.random.default_rng(0).random((5, 3)))
    with pytest.raises(ValueError, match="X has 2 features, but the detector is expecting 3"):
        space.transform(np.zeros((2, 2)))
    encoding = Encoding.fit(np.random.default_rng(0).random((5, 3)))
    with pytest.raises(ValueError, match="X has 4 features, but the mimic net is expecting 3"):
        encoding.frame(np.zeros((2, 4)))


def test_duplicate_column_names_are_a_one_line_error():
    """A repeated name (also one that repeats once read as a string) failed deep inside with
    AttributeError: 'DataFrame' object has no attribute 'dtype'."""
    X = pd.DataFrame(np.arange(8.0).reshape(4, 2), columns=["a", "a"])
    with pytest.raises(ValueError, match=r"duplicate column name\(s\) \['a'\]"):
        prepare(X, np.array([0, 1, 0, 1]), cv=None)
    with pytest.raises(ValueError, match=r"duplicate column name\(s\) \['0'\]"):
        as_frame(pd.DataFrame(np.zeros((2, 2)), columns=[0, "0"]))
    with pytest.raises(ValueError, match=r"duplicate column name\(s\) \['a'\]"):  # predict time
        check_columns(as_frame(pd.concat([X, X[["a"]]], axis=1)), ["a"], {})


def test_infinity_in_a_numeric_text_column_is_the_infinity_error():
    """'inf' in a column read as text because of a '?' passed the infinity check (it runs before
    the text is parsed); every run then failed with sklearn's misleading 'contains NaN'."""
    X = pd.DataFrame({"x": ["1.5", "?", "inf", "2.0", "3.5", "0.5"], "z": np.arange(6.0)})
    with pytest.raises(ValueError, match=r"infinite values in column\(s\) \['x'\]"):
        prepare(X, np.array([0, 1] * 3), cv=None)


def test_dates_and_durations_are_numbers_at_fit_and_at_predict():
    """A date read as a category made every later date unseen at predict time; as days since
    1970 (UTC for a zoned column) and durations as seconds, later dates are numbers too."""
    X = pd.DataFrame(
        {
            "day": pd.to_datetime(["1970-01-02", None, "2020-01-01"]),
            "zoned": pd.to_datetime(["1970-01-01 01:00"] * 3).tz_localize("Europe/Berlin"),
            "wait": pd.to_timedelta([90, None, 1], unit="s"),
            "x": [1.0, 2.0, 3.0],
        }
    )
    frame = as_frame(X)
    assert frame.dtypes.map(str).tolist() == ["float64"] * 4
    np.testing.assert_array_equal(frame["day"], [1.0, np.nan, 18262.0])
    np.testing.assert_array_equal(frame["zoned"], [0.0] * 3)  # 01:00 in Berlin is 00:00 UTC
    np.testing.assert_array_equal(frame["wait"], [90.0, np.nan, 1.0])
    data = prepare(pd.concat([X] * 4), np.array([0, 1] * 6), cv=2)
    assert pd.api.types.is_float_dtype(data.X["day"]) and data.dropped == {"zoned": "constant"}
    later = as_frame(X.assign(day=pd.to_datetime(["2030-05-01"] * 3)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "categories never seen in training"
        checked = check_columns(later, list(X.columns), {})
    assert (checked["day"] > 18262.0).all()


@pytest.mark.parametrize("integers", ["Int64", "int64"])
def test_a_table_reads_what_check_columns_reads_once_per_schema(integers):
    """Every kind of column the predict checks treat (plain, nullable and float32 numbers,
    numbers as text with a stray token, dates, booleans and categories as text or a pandas
    Categorical with a category no row holds, an extra column and another column order): the
    Table's numeric block and categorical cells hold check_columns' values, with its warnings,
    in its order. With plain integers every number read as it is has a numpy dtype: the frame
    is read as one object array."""
    frame = pd.DataFrame(
        {
            "extra": ["unused", "x", "y"],
            "k": pd.Categorical(["a", None, "zz"], categories=["a", "zz", "never used"]),
            "n": pd.array([1, None, 3] if integers == "Int64" else [1, 2, 3], dtype=integers),
            "f": np.array([0.1, np.nan, 2.5], dtype=np.float32),
            "t": ["1.5", "?", "2"],
            "when": pd.to_datetime(["2020-01-01", None, "2021-06-30"]),
            "b": [True, False, None],
            "s": ["u", None, "new"],
        }
    )
    columns = ["f", "n", "k", "t", "when", "b", "s"]
    categories = {"k": ["a", "b"], "b": ["False", "True"], "s": ["u", "v"]}
    with warnings.catch_warnings(record=True) as full_warnings:
        warnings.simplefilter("always")
        checked = check_columns(as_frame(frame), columns, categories)
    schema = plan_schema(frame, columns, categories)
    assert schema.boxed == (integers == "int64")
    assert schema.reads == {
        "f": "number",
        "n": "number",
        "k": "cells",
        "t": "text",
        "when": "time",
        "b": "cells",
        "s": "cells",
    }
    with warnings.catch_warnings(record=True) as table_warnings:
        warnings.simplefilter("always")
        table = read_table(frame, schema, categories)
    numeric = ["f", "n", "t", "when"]
    expected = checked[numeric].to_numpy(dtype=np.float64, na_value=np.nan)
    np.testing.assert_array_equal(table.numeric(numeric), expected)
    np.testing.assert_array_equal(table.numeric(["when", "f"]), expected[:, [3, 0]])
    for name in categories:  # the same levels as text, the missing cells missing
        as_text = (
            checked[name].astype(object).where(checked[name].notna()).map(str, na_action="ignore")
        )
        coded = table[name]
        cells = [None if c < 0 else coded.text[c] for c in coded.codes]
        assert cells == [None if pd.isna(v) else v for v in as_text]
    assert [str(w.message) for w in table_warnings] == [str(w.message) for w in full_warnings]
    assert len(full_warnings) == 3  # the token '?', the unseen 'zz' and 'new'
    with pytest.raises(ValueError, match="read-only"):
        table.block[0, 0] = 1.0


def test_what_the_full_checks_must_say_has_no_schema():
    frame = pd.DataFrame({"a": [1.0], "b": [2.0]})
    assert plan_schema(frame, ["a", "c"], {}) is None  # a missing column
    assert plan_schema(frame.set_axis(["a", "a"], axis=1), ["a"], {}) is None  # repeated names
    assert plan_schema(frame.set_axis([0, "0"], axis=1), ["0"], {}) is None  # repeated as text
    assert plan_schema(frame, ["b"], {}).whole


def test_a_few_cells_are_coded_as_pandas_codes_them():
    """Equal values (by hash and ``==``: True, 1 and 1.0; 0, False and -0.0) share a code in
    the order first seen, every kind of missing cell is -1, and the text of a code is its
    first value's: as ``pd.factorize`` makes them, which codes more cells."""
    from ensel.data import FEW_CELLS, Coded

    cells = [True, 1, 1.0, "1", None, np.nan, pd.NA, pd.NaT, "a", "a", 0, False, -0.0, 0.0]
    cells = np.array(cells, dtype=object)
    assert len(cells) <= FEW_CELLS
    codes, uniques = pd.factorize(cells, use_na_sentinel=True)
    coded = Coded.of(cells)
    np.testing.assert_array_equal(coded.codes, codes)
    assert coded.text == [str(v) for v in uniques]
    many = Coded.of(np.concatenate([cells] * 2))  # past FEW_CELLS: pandas itself
    np.testing.assert_array_equal(many.codes, np.concatenate([codes] * 2))
