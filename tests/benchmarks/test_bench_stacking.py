"""bench_stacking's level-1 feature and report on hand-made inputs (no builds)."""

from __future__ import annotations

import json
import types

import numpy as np
import pandas as pd
import pytest

from benchmarks.bench_stacking import (
    BASELINE,
    level_one_feature,
    out_of_fold,
    report,
    with_feature,
)


def test_the_level_one_feature_is_a_logit_or_one_log_probability_per_class():
    binary = level_one_feature(np.array([0.5, 0.9, 0.0]), np.array([0, 1]))
    assert list(binary.columns) == ["level1_logit"]
    assert binary["level1_logit"].iloc[:2].tolist() == pytest.approx([0.0, np.log(9.0)])
    assert np.isfinite(binary["level1_logit"].iloc[2])  # clipped, not -inf
    multi = level_one_feature(np.array([[0.2, 0.3, 0.5]]), np.array(["a", "b", "c"]))
    assert list(multi.columns) == ["level1_logp_a", "level1_logp_b", "level1_logp_c"]
    assert multi.iloc[0].tolist() == pytest.approx(np.log([0.2, 0.3, 0.5]).tolist())


def test_out_of_fold_predictions_go_back_to_their_training_rows():
    lib = types.SimpleNamespace(
        predictions=np.array([[0.1, 0.2, 0.3], [0.3, 0.4, 0.5]]),  # 2 members, 3 rows
        hillclimb_index=np.array([2, 0, 1]),  # hillclimb row j is training row index[j]
    )
    oof = out_of_fold(lib, np.array([0.5, 0.5]), 3)
    assert oof.tolist() == pytest.approx([0.3, 0.4, 0.2])
    with pytest.raises(ValueError, match="every training row"):
        out_of_fold(lib, np.array([0.5, 0.5]), 4)


def test_the_feature_is_appended_row_for_row_whatever_the_index():
    X = pd.DataFrame({"x": [1.0, 2.0]}, index=[10, 3])
    out = with_feature(X, pd.DataFrame({"level1_logit": [5.0, 6.0]}))
    assert out.to_dict("list") == {"x": [1.0, 2.0], "level1_logit": [5.0, 6.0]}


def test_each_variant_is_paired_with_the_baseline_by_dataset(tmp_path):
    rows = []
    for i, d in enumerate("abc"):
        rows.append({"dataset": d, "seed": 0, "variant": BASELINE, "auc": 0.8,
                     "logloss": 0.50 + i / 100})  # fmt: skip
        rows.append({"dataset": d, "seed": 0, "variant": "levels 1 + 2", "auc": 0.7,
                     "logloss": 0.52 + i / 100})  # fmt: skip
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    lines = report(path)
    both = next(x for x in lines if x.startswith("- levels 1 + 2 vs") and "logloss" in x)
    assert "better on 0 of 3 datasets, mean -0.0200" in both
    auc = next(x for x in lines if x.startswith("- levels 1 + 2 vs") and "auc" in x)
    assert "mean -0.1000" in auc
