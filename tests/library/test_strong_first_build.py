"""A budgeted build strong first (a spec's ``strong_first_rows``): one plan over both tiers, the
spare tier's strong runs ahead of the main tier's weak ones, each run stored in its own tier;
below the spec's rows the build plans as before."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ensel.library import build_library
from ensel.library.planning.gain import is_strong
from ensel.library.spec import load_spec

pytest.importorskip("lightgbm")

SPEC = {
    "strong_first_rows": 500,
    "families": [
        {"family": "logreg", "params": {"ridge": [0.01, 1.0]}},
        {"family": "tree", "params": {"max_depth": [2, 4]}},
    ],
    "spare": [
        {
            "family": "lightgbm",
            "params": {"num_leaves": 7, "learning_rate": 0.1},
            "stages": [8, 16],
        }
    ],
}


def _table(n: int):
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(n, 4)), columns=list("abcd"))
    return X, (X["a"] + X["b"] ** 2 + rng.normal(size=n) > 1).astype(int)


def test_a_large_table_plans_both_tiers_strong_first():
    X, y = _table(800)
    lib = build_library(X, y, spec=SPEC, time_limit=60, n_jobs=1, verbose=0)
    spec = load_spec(SPEC)
    spare = {r.run_id for r in spec.spare}
    plan = lib.plan
    assert spare <= set(plan["run"])  # one plan holds the spare tier's runs too
    strong = [is_strong(f) for f in plan["family"]]
    assert strong == sorted(strong, reverse=True) and strong[0]
    members = lib.members
    tiers = members.drop_duplicates("run").set_index("run")["tier"]
    assert all(tiers[r] == "spare" for r in spare if r in tiers.index)
    assert set(members["run"]) >= spare  # the spare run was built, in its tier


def test_a_smaller_table_plans_the_main_tier_alone():
    X, y = _table(400)
    lib = build_library(X, y, spec=SPEC, time_limit=60, n_jobs=1, verbose=0)
    spare = {r.run_id for r in load_spec(SPEC).spare}
    assert not spare & set(lib.plan["run"])  # the spare tier is planned after, apart
