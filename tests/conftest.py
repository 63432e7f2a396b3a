"""Shared fixtures: synthetic libraries of cached predictions that look like real ones."""

from __future__ import annotations

import pytest

from ensel.synthetic import make_library


@pytest.fixture
def binary_library():
    return make_library()


@pytest.fixture
def multiclass_library():
    return make_library(n_members=40, n_samples=300, n_classes=3, random_state=1)
