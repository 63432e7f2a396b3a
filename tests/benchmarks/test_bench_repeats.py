"""bench_repeats' report on hand-made rows (no builds)."""

from __future__ import annotations

import json

from benchmarks.bench_repeats import report


def _row(dataset, repeats, logloss, tune=False, budget="auto"):
    return {"dataset": dataset, "seed": 0, "repeats": repeats, "max_predict_ms": budget,
            "tune_selection": tune, "auc": 1 - logloss, "logloss": logloss}  # fmt: skip


def test_each_variant_is_paired_with_the_default_by_dataset(tmp_path):
    rows = [_row(d, 1, 0.50 + i / 100) for i, d in enumerate("abc")]
    rows += [_row(d, 2, 0.49 + i / 100) for i, d in enumerate("abc")]  # 0.01 better on each
    rows += [_row(d, 1, 0.52 + i / 100, tune=True) for i, d in enumerate("abc")]
    rows += [_row("a", 1, 0.40, budget=None)]  # None comes back as NaN from the file
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    lines = report(path)
    two = next(x for x in lines if x.startswith("- 2 build(s), max_predict_ms=auto vs") and
               "logloss" in x)  # fmt: skip
    assert "better on 3 of 3 datasets, mean +0.0100" in two
    tuned = next(x for x in lines if "tune_selection vs" in x and "logloss" in x)
    assert "better on 0 of 3 datasets, mean -0.0200" in tuned
    assert any(x.startswith("- 1 build(s), max_predict_ms=None vs") for x in lines)
