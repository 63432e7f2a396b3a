"""bench_final_calibration's calibrators, variants and report on hand-made inputs (no fits)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from benchmarks.bench_final_calibration import (
    BASELINE,
    Temperature,
    report,
    variants,
)
from ensel.metrics import score


def _draws(n: int, seed: int, classes: int = 3):
    """True probabilities of ``classes`` classes and labels drawn from them."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(scale=2.0, size=(n, classes))
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    y = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
    return p, y


def _soften(p: np.ndarray, s: float) -> np.ndarray:
    q = p**s
    return q / q.sum(axis=1, keepdims=True)


def test_temperature_recovers_the_scale_that_undoes_a_softening():
    p, y = _draws(20_000, 0)
    soft = _soften(p, 0.5)  # under-confident: the true probabilities to the power 1/2
    cal = Temperature().fit(soft, y)
    assert cal.scale_ == pytest.approx(2.0, rel=0.05)
    assert score("mxe", y, cal.predict(soft)) < score("mxe", y, soft) - 0.01
    assert np.allclose(cal.predict(soft).sum(axis=1), 1.0)


def test_the_bias_recovers_a_shift_of_the_binary_logit():
    rng = np.random.default_rng(1)
    logit = rng.normal(scale=2.0, size=20_000)
    y = (rng.random(logit.size) < 1 / (1 + np.exp(-logit))).astype(int)
    shifted = 1 / (1 + np.exp(-(logit - 1.0)))
    p = np.column_stack([1 - shifted, shifted])
    cal = Temperature(bias=True).fit(p, y)
    assert cal.scale_ == pytest.approx(1.0, abs=0.05)
    assert cal.offsets_ == pytest.approx([0.0, 1.0], abs=0.08)


def test_variants_keep_the_baseline_and_adopt_temperature_where_it_helps():
    p, y = _draws(4_000, 2, classes=2)
    soft = _soften(p, 1 / 3)
    test, y_test = _draws(1_000, 3, classes=2)
    test = _soften(test, 1 / 3)
    out = variants(soft, y, test, seed=0)
    assert set(out) == {BASELINE, "temperature", "temperature + bias", "temperature where it helps",
                        "platt"}  # fmt: skip
    assert out[BASELINE][0] is test
    assert out["temperature where it helps"][1]["adopted"]
    assert np.array_equal(out["temperature where it helps"][0], out["temperature"][0])
    assert out["temperature"][1]["scale"] == pytest.approx(3.0, rel=0.1)
    assert score("mxe", y_test, out["temperature"][0]) < score("mxe", y_test, test)
    auc = roc_auc_score(y_test, test[:, 1])  # monotone: a binary AUC cannot move
    assert roc_auc_score(y_test, out["temperature"][0][:, 1]) == pytest.approx(auc, abs=1e-12)


def test_the_rule_keeps_an_already_calibrated_ensemble_as_it_is():
    p, y = _draws(4_000, 0, classes=2)  # the true probabilities: nothing to gain
    test, _ = _draws(1_000, 10, classes=2)
    out = variants(p, y, test, seed=0)
    assert not out["temperature where it helps"][1]["adopted"]
    assert out["temperature where it helps"][0] is test
    assert out["temperature"][1]["oof_logloss_crossed"] > out[BASELINE][1]["oof_logloss"]


def test_the_report_pairs_variants_by_dataset_and_summarises_the_scales(tmp_path):
    rows = []
    for i, d in enumerate("abc"):
        base = {"dataset": d, "seed": 0, "auc": 0.8, "logloss": 0.50 + i / 100}
        rows.append({**base, "variant": BASELINE})
        rows.append({**base, "variant": "temperature", "logloss": 0.49 + i / 100,
                     "scale": 1.0 + i / 10})  # fmt: skip
        rows.append({**base, "variant": "temperature where it helps", "adopted": i > 0})
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    lines = report(path)
    temp = next(x for x in lines if x.startswith("- temperature vs") and "logloss" in x)
    assert "better on 3 of 3 datasets, mean +0.0100" in temp
    assert "median 1.100, range 1.000-1.200; adopted by the rule in 2 of 3 fits" in lines[-1]
