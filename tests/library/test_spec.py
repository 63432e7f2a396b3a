"""Library specs: expansion of grids and ranges, the shipped specs, and validation messages."""

from __future__ import annotations

import pytest

from ensel.errors import SpecError
from ensel.library.spec import BUILTIN_SPECS, load_spec


def test_grids_expand_as_cartesian_product_with_stages_and_calibrations():
    spec = load_spec(
        {
            "families": [
                {
                    "family": "adaboost",
                    "params": {"max_depth": [1, 2], "criterion": ["gini", "entropy"]},
                    "stages": [8, 2, 4],
                    "calibration": ["none", "platt", "logistic"],
                }
            ]
        }
    )
    assert len(spec.runs) == 4
    assert spec.n_members == 4 * 3 * 3
    run = spec.runs[0]
    assert run.stages == (2, 4, 8)
    assert run.param_dict["learning_rate"] == 1.0  # defaults filled in
    assert run.members[:3] == [(2, "none"), (2, "platt"), (2, "logistic")]
    assert len({r.run_id for r in spec.runs}) == 4


def test_ranges_are_sampled_reproducibly_within_bounds():
    doc = {
        "seed": 7,
        "families": [
            {
                "family": "svm",
                "params": {
                    "kernel": "rbf",
                    "C": {"loguniform": [1e-3, 1e3]},
                    "width": {"choice": [0.01, 0.1]},
                },
                "samples": 16,
            }
        ],
    }
    a, b = load_spec(doc), load_spec(doc)
    assert [r.params for r in a.runs] == [r.params for r in b.runs]
    cs = [r.param_dict["C"] for r in a.runs]
    assert len(set(cs)) == 16 and all(1e-3 <= c <= 1e3 for c in cs)
    assert {r.param_dict["width"] for r in a.runs} == {0.01, 0.1}
    other = load_spec({**doc, "seed": 8})
    assert [r.params for r in other.runs] != [r.params for r in a.runs]


def test_random_sampler_and_integer_ranges():
    spec = load_spec(
        {
            "families": [
                {
                    "family": "random_forest",
                    "params": {"max_features": {"logint": [1, 20]}},
                    "samples": 5,
                    "sampler": "random",
                    "stages": [10],
                }
            ]
        }
    )
    values = [r.param_dict["max_features"] for r in spec.runs]
    assert all(isinstance(v, int) and 1 <= v <= 20 for v in values)


@pytest.mark.parametrize("name", BUILTIN_SPECS)
def test_shipped_specs_load(name):
    spec = load_spec(name)
    assert spec.n_members > 0
    families_2006 = {
        "svm", "mlp", "logreg", "naive_bayes", "knn", "tree", "bagged_trees", "adaboost",
        "random_forest",
    }  # fmt: skip
    if name == "default":
        assert spec.n_members >= 250
        assert {r.family for r in spec.runs} == families_2006 | {"xgboost", "lightgbm", "catboost"}
    if name == "modern":
        assert spec.n_members >= 250
        assert {r.family for r in spec.runs} >= families_2006 | {
            "xgboost", "lightgbm", "hist_gbdt", "extra_trees", "tabular_mlp",
        }  # fmt: skip


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"family": "boosting"}, r"families\[0\]: key 'family': unknown family 'boosting'"),
        ({"family": "svm", "params": {"gamma": 1}}, r"unknown parameter\(s\) \['gamma'\]"),
        ({"family": "svm", "stages": [1, 2]}, "svm has no stages"),
        ({"family": "adaboost", "stages": [0, 2]}, "list of positive integers"),
        ({"family": "adaboost"}, "needs stages"),
        ({"family": "svm", "calibration": ["sigmoid"]}, r"allowed values: \['none', 'platt'"),
        ({"family": "svm", "calibration": ["logistic"]}, "allowed values"),
        ({"family": "svm", "params": {"C": {"loguniform": [0, 1]}}, "samples": 2}, "low > 0"),
        ({"family": "svm", "params": {"C": {"loguniform": [1, 10]}}}, "need 'samples: N'"),
        ({"family": "svm", "params": {"C": {"normal": [1, 10]}}, "samples": 2}, "kind in"),
        ({"family": "svm", "view": "raw"}, r"key 'view' is 'raw'"),
        ({"family": "svm", "grid": {}}, r"unknown key\(s\) \['grid'\]"),
    ],
)
def test_validation_errors_name_file_key_and_allowed(tmp_path, entry, message):
    path = tmp_path / "bad.yaml"
    import yaml

    path.write_text(yaml.safe_dump({"families": [entry]}))
    with pytest.raises(SpecError, match=message) as info:
        load_spec(path)
    assert str(path) in str(info.value)


def test_unknown_spec_name_and_bad_yaml(tmp_path):
    with pytest.raises(SpecError, match="neither a built-in spec"):
        load_spec("huge")
    bad = tmp_path / "broken.yaml"
    bad.write_text("families: [\n")
    with pytest.raises(SpecError, match="not valid YAML"):
        load_spec(bad)
    with pytest.raises(SpecError, match="unknown top-level key"):
        load_spec({"familys": []})
    with pytest.raises(SpecError, match=r"unknown top-level key\(s\) \['time_limit'\]"):
        load_spec({"time_limit": 30, "families": [{"family": "logreg"}]})
