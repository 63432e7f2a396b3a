"""Spec entries for large tables: a family's optional parameter (LightGBM's extra-trees splits)
leaves the ids of runs without it as they were, and ``min_rows`` keeps a run off smaller
tables; the default spec's LightGBMXT run is built from 20,000 rows only."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification

from ensel.errors import SpecError
from ensel.library.families import FAMILIES
from ensel.library.spec import load_spec

LGBM = {"num_leaves": 7, "learning_rate": 0.1}


def _spec(**extra):
    return load_spec({"families": [{**_entry(), **extra}]})


def _entry(**params):
    return {"family": "lightgbm", "params": {**LGBM, **params}, "stages": [8]}


def test_an_optional_parameter_at_its_default_leaves_the_run_as_it_was():
    plain = _spec().runs[0]
    off = load_spec({"families": [_entry(extra_trees=False)]}).runs[0]
    assert off == plain and off.run_id == plain.run_id and "extra_trees" not in off.param_dict
    on = load_spec({"families": [_entry(extra_trees=True)]}).runs[0]
    assert on.run_id != plain.run_id and on.param_dict["extra_trees"] is True


def test_min_rows_keeps_a_run_off_smaller_tables_and_out_of_its_id():
    spec = load_spec(
        {
            "families": [
                {"family": "logreg"},
                {**_entry(), "min_rows": 1_000},
            ]
        }
    )
    assert spec.runs[1].run_id == _spec().runs[0].run_id  # min_rows is not the run's identity
    assert [r.family for r in spec.for_rows(999).runs] == ["logreg"]
    assert [r.family for r in spec.for_rows(1_000).runs] == ["logreg", "lightgbm"]
    with pytest.raises(SpecError, match="'min_rows' must be a whole number"):
        _spec(min_rows=-1)


def test_the_default_spec_adds_lightgbm_xt_from_20000_rows_only():
    spec = load_spec("default")
    xt = [r for r in spec.runs if r.param_dict.get("extra_trees")]
    assert len(xt) == 1 and xt[0].min_rows == 20_000 and xt[0].family == "lightgbm"
    small = spec.for_rows(19_999)
    assert [r.run_id for r in small.runs] == [r.run_id for r in spec.runs if r not in xt]
    assert not any("extra_trees" in r.param_dict for r in small.runs)
    assert spec.for_rows(20_000).runs == spec.runs
    assert small.spare == spec.spare  # the spare tier is the same


def test_lightgbm_passes_extra_trees_through():
    pytest.importorskip("lightgbm")
    X, y = make_classification(400, 6, random_state=0)
    family = FAMILIES["lightgbm"]
    params = {**family.params, **LGBM}

    def fit(**more):
        run = family.fit(X, y, n_classes=2, params={**params, **more}, stages=(20,), random_state=0)
        return run.predict(X)["none"]

    plain, xt = fit(), fit(extra_trees=True)
    assert np.allclose(plain, fit(extra_trees=False))
    assert not np.allclose(plain, xt)
