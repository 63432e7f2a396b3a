"""The models kinds of run: a spec's ``families`` section and its spare-time tier ``spare``
(scheduled by the builder after the others, in the time left), fitted by
:func:`runs.fit_run` into the library's own prediction matrix."""

from __future__ import annotations

from .data.training import TrainingData
from .execution.runs import fit_run
from .kinds import Kind, PackedRun, register_kind
from .spec import SPARE, RunSpec, parse_families, parse_spare

__all__ = ["MODELS", "SPARE_MODELS", "fit_models"]


def fit_models(
    run: RunSpec, data: TrainingData, context: dict | None, random_state: int
) -> PackedRun:
    """One model run over its folds, its fitted siblings pickled on the worker. ``context``:
    None, or ``{"subsample": {run id: rows}, "caps": {run id: seconds}, "run_limit": seconds,
    "ends_at": time}`` from the build (its plan's subsamples and the seconds of the runs it
    capped, its executor's per-run limit, its deadline as a ``time.time()`` value)."""
    context = context or {}
    rows = (context.get("subsample") or {}).get(run.run_id)
    extra = {} if rows is None else {"max_train_rows": rows}
    limits = [context.get("run_limit"), (context.get("caps") or {}).get(run.run_id)]
    limits = [x for x in limits if x is not None]
    result = fit_run(
        run,
        data,
        random_state,
        time_limit=min(limits) if limits else None,
        ends_at=context.get("ends_at"),
        **extra,
    )
    return PackedRun.pack(result.predictions, result.fitted, result.costs)


MODELS = register_kind(Kind("families", parse=parse_families, fit=fit_models, order=1))
SPARE_MODELS = register_kind(Kind(SPARE, parse=parse_spare, fit=fit_models, order=2))
