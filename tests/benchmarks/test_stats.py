"""The statistics of benchmark reports (benchmarks/_stats.py) against values computed by hand."""

import math

import numpy as np
import pandas as pd
import pytest

from benchmarks._stats import paired_over_datasets, per_dataset, sign_test_p, standard_error


def test_standard_error_by_hand():
    # values 1, 2, 4: mean 7/3, sample variance ((4/3)^2 + (1/3)^2 + (5/3)^2) / 2 = 7/3
    assert standard_error([1.0, 2.0, 4.0]) == pytest.approx(math.sqrt(7 / 3) / math.sqrt(3))
    assert math.isnan(standard_error([1.0]))


def test_per_dataset_means_over_seeds_with_standard_error():
    rows = pd.DataFrame(
        {
            "dataset": ["a", "a", "a", "b", "b"],
            "seed": [0, 1, 2, 0, 1],
            "auc": [0.8, 0.9, 0.7, 0.6, 0.6],
        }
    )
    out = per_dataset(rows, "auc")
    assert out.loc["a", "mean"] == pytest.approx(0.8)
    assert out.loc["a", "se"] == pytest.approx(0.1 / math.sqrt(3))  # sd 0.1 over 3 seeds
    assert out.loc["b", "se"] == pytest.approx(0.0)
    assert out["seeds"].to_dict() == {"a": 3, "b": 2}


def test_sign_test_exact_binomial_by_hand():
    # 10 wins of 12: P(X >= 10) = (66 + 12 + 1) / 4096, doubled
    assert sign_test_p(10, 2) == pytest.approx(2 * 79 / 4096)
    # 9 of 12: (220 + 66 + 12 + 1) / 4096, doubled
    assert sign_test_p(9, 3) == pytest.approx(2 * 299 / 4096)
    assert sign_test_p(3, 3) == pytest.approx(1.0)
    assert sign_test_p(0, 0) == 1.0


def test_paired_over_datasets_by_hand():
    ours = pd.Series({"a": 0.90, "b": 0.80, "c": 0.70, "d": 0.60, "only_ours": 0.5})
    theirs = pd.Series({"a": 0.88, "b": 0.79, "c": 0.71, "d": 0.60, "only_theirs": 0.1})
    out = paired_over_datasets(ours, theirs, higher_is_better=True)
    d = np.array([0.02, 0.01, -0.01, 0.0])  # only the 4 shared datasets
    assert out["datasets"] == 4
    assert (out["wins"], out["ties"], out["losses"]) == (2, 1, 1)
    assert out["mean diff"] == pytest.approx(0.005)
    sd = math.sqrt(((d - 0.005) ** 2).sum() / 3)  # sqrt(0.0005 / 3)
    assert out["se diff"] == pytest.approx(sd / 2)
    t = 0.005 / (sd / 2)
    assert out["t"] == pytest.approx(t)
    # two-sided p of Student's t with 3 degrees of freedom, from its closed-form CDF
    theta = math.atan(t / math.sqrt(3))
    cdf_upper = 0.5 + (theta + math.sin(theta) * math.cos(theta)) / math.pi
    assert out["p (t-test)"] == pytest.approx(2 * (1 - cdf_upper))
    assert out["p (sign test)"] == pytest.approx(sign_test_p(2, 1))  # the tie is left out


def test_paired_over_datasets_lower_is_better_flips_the_sign():
    ours = pd.Series({"a": 0.30, "b": 0.50, "c": 0.40})
    theirs = pd.Series({"a": 0.35, "b": 0.52, "c": 0.39})
    out = paired_over_datasets(ours, theirs, higher_is_better=False)
    assert (out["wins"], out["losses"]) == (2, 1)
    assert out["mean diff"] == pytest.approx((0.05 + 0.02 - 0.01) / 3)
    assert out["t"] > 0
    same = paired_over_datasets(ours, ours, higher_is_better=False)
    assert same["ties"] == 3 and math.isnan(same["p (t-test)"])
