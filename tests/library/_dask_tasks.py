"""Families for dask tests, registered on every worker (and again on restarted ones) by a
worker plugin: one that kills its worker, one that takes its time."""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass

import numpy as np
from distributed.diagnostics.plugin import WorkerPlugin

from ensel.library.families import FAMILIES, Family, Run


def _fit_killer(X, y, *, n_classes, params, stages, random_state):
    os.kill(os.getpid(), signal.SIGKILL)  # what the OOM killer does to a memory blow-up


@dataclass
class _ConstantRun(Run):
    n_classes: int

    def predict(self, X):
        return {"none": np.full((1, len(X), self.n_classes), 1.0 / self.n_classes)}


def _fit_sleeper(X, y, *, n_classes, params, stages, random_state):
    time.sleep(params["seconds"])
    return _ConstantRun(n_classes)


TEST_FAMILIES = {
    "killer": Family(name="killer", fit=_fit_killer, params={}, view="native"),
    "sleeper": Family(name="sleeper", fit=_fit_sleeper, params={"seconds": 0.1}, view="native"),
}


class RegisterTestFamilies(WorkerPlugin):
    """Adds TEST_FAMILIES to the registry of each worker."""

    def setup(self, worker) -> None:
        FAMILIES.update(TEST_FAMILIES)


CV = 3
QUICK = {  # runs that take their time (six of them) and fast ones, for builds to interrupt
    "families": [
        {"family": "sleeper", "params": {"seconds": [0.3, 0.31, 0.32, 0.33, 0.34, 0.35]}},
        {"family": "logreg", "params": {"ridge": [1.0, 10.0]}, "calibration": ["none", "platt"]},
    ]
}


class KillOnce:
    """A fitted run that kills its worker the first time it predicts (it leaves ``marker``
    behind) and predicts as ``inner`` afterwards: a worker lost while predicting a partition."""

    def __init__(self, inner, marker: str) -> None:
        self.inner, self.marker = inner, marker

    def __getattr__(self, name):
        if name in ("inner", "marker"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    def predict(self, *args, **kwargs):
        try:
            fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return self.inner.predict(*args, **kwargs)
        os.close(fd)
        os.kill(os.getpid(), signal.SIGKILL)
