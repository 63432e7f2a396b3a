"""Column checks of a table read in parts: every split of a messy frame gives the decisions,
warnings and errors that ensel.data gives on the whole frame, and a parquet source prepares the
same training data (rows, dtypes, fingerprint) as the frame read into memory."""

from __future__ import annotations

import logging
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest

from ensel.data import Columns, as_frame, check_features, clean_columns
from ensel.library.data.partitions import apply_plan, merge, summarize
from ensel.library.data.sources import SourcedData, parquet_files, prepare_source
from ensel.library.data.training import prepare

pytest.importorskip("pyarrow")


def messy(n: int = 60, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(
        {
            "x": rng.normal(size=n),
            "count": rng.integers(0, 5, n),
            "text_num": rng.normal(size=n).round(3).astype(str).astype(object),
            "colour": rng.choice(["red", "green", "blue"], n).astype(object),
            "flag": rng.random(n) < 0.5,
            "empty": np.full(n, np.nan),
            "const": np.full(n, 7.0),
            "id": np.arange(n) * 3,
            "name": [f"row{i}" for i in range(n)],
        }
    )
    X.loc[[2, 9], "text_num"] = "?"
    X.loc[4, "text_num"] = None
    X.loc[[1, 5], "colour"] = None
    X.loc[3, "x"] = np.nan
    return X


def caught(fn, *args, **kwargs):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = fn(*args, **kwargs)
    return out, [str(w.message) for w in seen]


def whole(X: pd.DataFrame):
    """ensel.data's decisions on the frame in memory."""
    check_features(X)
    frame, dropped = clean_columns(X)
    return frame, dropped, Columns.infer(frame)


def split(X: pd.DataFrame, cuts) -> list[pd.DataFrame]:
    return [X.iloc[a:b] for a, b in zip([0, *cuts], [*cuts, len(X)], strict=True)]


@pytest.mark.parametrize("cuts", [[], [30], [1, 2, 59], [10, 20, 30, 40, 50]])
def test_merged_summaries_decide_as_the_whole_frame(cuts, caplog):
    X = messy()
    with caplog.at_level(logging.INFO, logger="ensel"):
        (frame, dropped, columns), expected = caught(whole, X)
    whole_log = [r.getMessage() for r in caplog.records]
    caplog.clear()
    parts = split(X, cuts)
    with caplog.at_level(logging.INFO, logger="ensel"):
        plan, got = caught(merge, [summarize(p) for p in parts])
    assert got == expected  # the same warnings, in the same order
    assert [r.getMessage() for r in caplog.records] == whole_log  # the constant column note
    assert plan.dropped == dropped == {"empty": "missing in every row", "const": "constant"}
    assert plan.columns == columns
    assert plan.coerced == ("text_num",)
    rows = pd.concat([apply_plan(p, plan) for p in parts], ignore_index=True)
    pd.testing.assert_frame_equal(rows, frame)
    pd.testing.assert_frame_equal(plan.schema(), frame.iloc[:0])


def test_id_check_across_parts():
    """A column distinct within each part but repeated across parts is no id."""
    X = messy()
    X["id"] = np.r_[np.arange(30), np.arange(30)]
    _, expected = caught(whole, X)
    _, got = caught(merge, [summarize(p) for p in split(X, [30])])
    assert got == expected
    assert not any("'id'" in m for m in got) and any("'name'" in m for m in got)


def test_stray_tokens_spread_over_parts_past_the_limit():
    """Four distinct tokens, at most two per part: the merged column is text, as in memory."""
    X = messy()
    X.loc[[2, 9, 40, 50], "text_num"] = ["?", "NA", "-", "n/a"]
    (_, _, columns), expected = caught(whole, X)
    plan, got = caught(merge, [summarize(p) for p in split(X, [30])])
    assert got == expected and plan.coerced == ()
    assert plan.columns == columns and "text_num" in columns.categorical


@pytest.mark.parametrize(
    "change, error, message",
    [
        (lambda X: X.assign(x=X["x"].where(X.index != 45, np.inf)), ValueError, "infinite"),
        # "inf" in a text column read as numbers (its tokens in the other part)
        (
            lambda X: X.assign(text_num=X["text_num"].where(X.index != 45, "inf")),
            ValueError,
            "infinite",
        ),
        (lambda X: X.assign(name=[*X["name"][:45], {"a": 1}, *X["name"][46:]]), TypeError, "dict"),
        (lambda X: X.iloc[:0], ValueError, "0 sample"),
    ],
)
def test_errors_match_the_whole_frame(change, error, message):
    X = change(messy())
    with pytest.raises(error) as whole_error:
        whole(X)
    with pytest.raises(error) as merged:
        merge([summarize(p) for p in split(X, [30] if len(X) else [])])
    assert message in str(merged.value)
    assert str(merged.value) == str(whole_error.value)
    assert "\n" not in str(merged.value)


def test_parquet_source_prepares_the_frame_read_into_memory(tmp_path):
    X = messy(90)
    X["label"] = np.arange(90) % 2
    X.iloc[:40].to_parquet(tmp_path / "a.parquet", row_group_size=15)
    X.iloc[40:].to_parquet(tmp_path / "b.parquet", row_group_size=15)
    full = pd.read_parquet(tmp_path)
    ref, ref_warnings = caught(
        prepare, full.drop(columns="label"), full["label"], cv=3, random_state=1
    )
    data, got_warnings = caught(prepare_source, str(tmp_path), "label", cv=3, random_state=1)
    assert isinstance(data, SourcedData) and len(data.parts) == 3 + 4  # row groups
    assert got_warnings == ref_warnings
    assert data.fingerprint() == ref.fingerprint()
    assert data.columns == ref.columns and data.dropped == ref.dropped
    np.testing.assert_array_equal(data.folds, ref.folds)
    shipped = pickle.loads(pickle.dumps(data))  # what a worker receives: the rows are read there
    assert type(shipped).__name__ == "TrainingData"
    pd.testing.assert_frame_equal(shipped.X, ref.X)
    assert shipped.fingerprint() == ref.fingerprint()
    assert len(pickle.dumps(data)) < len(pickle.dumps(ref)) / 2


@pytest.mark.filterwarnings("ignore::UserWarning")  # the frame's own column warnings
def test_parquet_paths_and_labels_are_checked(tmp_path):
    with pytest.raises(FileNotFoundError, match="no parquet file there"):
        parquet_files(tmp_path / "none-*.parquet")
    messy().assign(label=0).to_parquet(tmp_path / "a.parquet")
    with pytest.raises(ValueError, match=r"y='target': no such column"):
        prepare_source(str(tmp_path), "target", cv=3)
    with pytest.raises(ValueError, match="X has 60 rows but y has 3"):
        prepare_source(str(tmp_path / "a.parquet"), [0, 1, 0], cv=3)
    messy().iloc[:, :3].to_parquet(tmp_path / "b.parquet")
    with pytest.raises(ValueError, match="must share its columns"):
        prepare_source(str(tmp_path), "label", cv=3)


def test_dates_in_parts_are_the_numbers_they_are_in_memory():
    X = messy().assign(
        day=pd.date_range("2020-01-01", periods=60, freq="D", tz="UTC"),
        wait=pd.to_timedelta(np.arange(60), unit="min"),
    )
    X.loc[7, "day"] = pd.NaT
    frame, _, columns = caught(whole, as_frame(X))[0]
    parts = split(X, [30])
    plan = caught(merge, [summarize(p) for p in parts])[0]
    assert plan.columns == columns and {"day", "wait"} <= set(columns.numeric)
    rows = pd.concat([apply_plan(p, plan) for p in parts], ignore_index=True)
    pd.testing.assert_frame_equal(rows, frame)
    assert rows["day"].isna().sum() == 1 and rows["wait"].iloc[-1] == 59 * 60.0
