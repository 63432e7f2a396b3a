"""Kinds of run: a spec section handled by a registered kind is built, stored and reopened by the
same builder as the models, in a sub-store of its own; unknown sections are refused by name."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

from ensel.errors import SpecError
from ensel.library import build_library, load_spec
from ensel.library.kinds import Kind, PackedRun, get_kind, kinds, register_kind
from ensel.library.spec import RunSpec


class Mean:
    """A 'fitted run' of the toy kind: predicts the training rate of class 1 for every row."""

    def __init__(self, rate: float) -> None:
        self.rate = rate

    def predict(self, frame):
        p = np.full(len(frame), self.rate)
        return np.stack([1 - p, p], axis=-1)[None]


def parse_toys(entries, source, seed, task):
    if not isinstance(entries, list):
        raise SpecError(f"{source}: key 'toys' must be a list")
    return tuple(RunSpec("toy", (("shift", float(e)),), "raw", None, ("none",)) for e in entries)


def prepare_toys(data, header, random_state):
    return {"offset": 0.0}, header


def fit_toy(run, data, context, random_state):
    rate = float(data.y.mean()) + run.param_dict["shift"] + context["offset"]
    hill = np.full(data.hillclimb.size, rate)
    predictions = np.stack([1 - hill, hill], axis=-1)[None].astype(np.float32)
    return PackedRun.pack(predictions, Mean(rate))


@pytest.fixture(scope="module")
def toys():
    register_kind(Kind("toys", parse_toys, fit_toy, store="toys", prepare=prepare_toys))
    yield
    from ensel.library import kinds as module

    module._KINDS.pop("toys", None)


def test_builtin_kinds_are_found_without_importing_their_packages():
    assert {"families", "detectors"} <= set(kinds())
    assert get_kind("detectors").store == "detectors"


def test_unknown_section_lists_the_known_ones():
    with pytest.raises(SpecError, match=r"unknown top-level key\(s\) \['gadgets'\]; allowed: "):
        load_spec({"families": [{"family": "logreg"}], "gadgets": []})


def test_a_registered_kind_is_built_in_its_own_store_and_reopened(toys, tmp_path):
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    spec = {"families": [{"family": "logreg"}], "toys": [0.0, 0.1]}
    lib = build_library(X, y, spec=spec, cv=3, store=tmp_path / "s", verbose=0)
    toys = lib.parts["toys"]
    assert toys.n_members == 2 and lib.n_members == 1
    np.testing.assert_allclose(toys.predictions[1], y.mean() + 0.1, rtol=1e-6)
    # members of a part predict through the same FittedMembers as models, and pickle
    subset = pickle.loads(pickle.dumps(toys.subset(list(toys.members["id"])[::-1])))
    np.testing.assert_allclose(subset.predict(X.head(3))[0], y.mean() + 0.1)
    assert (tmp_path / "s" / "toys" / "predictions.json").exists()
