"""The planner's prior of what each family adds to a large table's ensemble: per family, the
mean share of ensemble weight it earned in final ensembles on the development tables of many
rows (``gain_prior.json``, written by ``benchmarks/gain_prior.py`` from the committed result
rows). The data is keyed by family name; this module names none.

A family the file does not name gets its ``default`` (small: below every family that earned
weight); a family is *strong* where its prior reaches the file's ``strong`` share.
"""

from __future__ import annotations

import functools
import json
from importlib import resources

__all__ = ["expected_gain", "gain_prior", "is_strong"]

PRIOR_FILE = "gain_prior.json"


@functools.cache
def gain_prior() -> dict:
    """The shipped prior: ``families`` (family -> mean weight share), ``default`` (the share of
    a family not named), ``strong`` (the share from which a family is strong), ``min_rows`` and
    ``tables`` (the tables, and rows of each, it was measured on)."""
    text = resources.files("ensel.library.planning").joinpath(PRIOR_FILE).read_text()
    return json.loads(text)


def expected_gain(family: str) -> float:
    """The share of ensemble weight ``family`` is expected to earn on a large table."""
    prior = gain_prior()
    return float(prior["families"].get(family, prior["default"]))


def is_strong(family: str) -> bool:
    """Whether ``family``'s prior reaches the strong share (its runs are planned first)."""
    return expected_gain(family) >= float(gain_prior()["strong"])
