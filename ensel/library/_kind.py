"""The models kind of run: a spec's ``families`` section, fitted by :func:`runs.fit_run` into the
library's own prediction matrix."""

from __future__ import annotations

from .kinds import Kind, PackedRun, register_kind
from .runs import fit_run
from .spec import RunSpec, parse_families
from .training import TrainingData

__all__ = ["MODELS", "fit_models"]


def fit_models(run: RunSpec, data: TrainingData, context: None, random_state: int) -> PackedRun:
    """One model run over its folds, its fitted siblings pickled on the worker."""
    result = fit_run(run, data, random_state)
    return PackedRun.pack(result.predictions, result.fitted, result.costs)


MODELS = register_kind(Kind("families", parse=parse_families, fit=fit_models, order=1))
