"""What a fit under ``time_limit`` spent and what its budget changed: the estimators'
``budget_`` record, filled from the built library and the selection options fitted into the
time left."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

__all__ = ["BudgetReport", "cut_runs"]


@dataclass
class BudgetReport:
    """The estimators' ``budget_``. Every field is None without ``time_limit``, and each
    stays None where it does not apply (no detectors, no plan, a library given built).

    Fields
    ------
    selection_seconds_estimated : the seconds the selection options as given were estimated
        to take at the speed a pilot selection measured.
    selection_seconds_allowed : the seconds selection was given (the time the build left).
    selection_changed : the selection options cut to fit that time (``prune_fraction``,
        ``n_bags``, ``n_iter``), each with its new value; empty when none was cut.
    build_seconds : seconds from the start of ``fit`` to the end of the library build.
    runs_ok : training runs that finished.
    runs_not_finished : runs not finished, counted by status (``budget`` counts the runs not
        started and the runs cut).
    runs_cut_ids : the ids of the runs that started and were stopped by the budget.
    runs_cut : how many those are.
    detectors_ok, detectors_cut : the same two counts for the risk detectors.
    plan : what the build's plan decided (:func:`ensel.estimator.budget.plan_summary`).
    library : the name of the spec built.
    spare_runs : the spare runs that spec was given on this table.
    unused_seconds : seconds of ``time_limit`` left when the fit ended.
    unused_reason : why the fit ended early, where it left more than a tenth of the budget.
    exportable : with ``exportable=True`` (with or without ``time_limit``), what selecting
        among the members ``to_onnx`` can express, within the single-row graph budget, cost on
        the hillclimb rows: ``members`` (exportable), ``of`` (all), ``score_all`` and
        ``score_exportable`` (no budget), ``score_within_budget``, and the predicted single-row
        graph milliseconds ``graph_ms`` (``graph_ms_exportable`` without the budget).
    level_two : with ``levels=2`` (with or without ``time_limit``), the second level:
        ``seconds`` (its build), ``runs`` and ``members`` (built), ``members_with_weight``
        and ``weight`` (their share of the ensemble), ``inputs`` (the level-one members whose
        out-of-fold predictions it was given); or ``error`` alone where no level-two run
        finished (level one was then selected alone, with a warning).
    """

    selection_seconds_estimated: float | None = None
    selection_seconds_allowed: float | None = None
    selection_changed: dict = field(default_factory=dict)
    build_seconds: float | None = None
    runs_ok: int | None = None
    runs_not_finished: dict | None = None
    runs_cut_ids: list[str] | None = None
    runs_cut: int | None = None
    detectors_ok: int | None = None
    detectors_cut: int | None = None
    plan: dict | None = None
    library: str | None = None
    spare_runs: int | None = None
    unused_seconds: float | None = None
    unused_reason: str | None = None
    exportable: dict | None = None
    level_two: dict | None = None

    @classmethod
    def of_selection(cls, report: dict) -> BudgetReport:
        """The record of :func:`ensel.estimator.budget.selection_within`'s report: the two
        estimates and the options it changed."""
        report = dict(report)
        estimated = report.pop("selection_seconds_estimated")
        allowed = report.pop("selection_seconds_allowed")
        return cls(estimated, allowed, selection_changed=report)

    def add_build(self, lib, build_seconds: float) -> None:
        """The build's counts from the library ``lib``: runs finished, not finished and cut,
        the same of its detectors, and its plan."""
        runs = lib.failures.drop_duplicates("run")
        self.build_seconds = build_seconds
        self.runs_ok = int(lib.members["run"].nunique())
        self.runs_not_finished = runs["status"].value_counts().to_dict()
        self.runs_cut_ids = cut_runs(runs)
        self.runs_cut = len(self.runs_cut_ids)
        detectors = lib.parts.get("detectors")
        if detectors is not None:
            self.detectors_ok = int(detectors.members["run"].nunique())
            self.detectors_cut = len(cut_runs(detectors.failures.drop_duplicates("run")))

    def as_dict(self) -> dict:
        """The fields that apply, as one flat dict (the options selection changed at the top
        level), for result rows and JSON."""
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "selection_changed":
                out.update(value)
            elif value is not None:
                out[f.name] = value
        return out


def cut_runs(runs) -> list[str]:
    """The ids (``<family>-<hash>``) of the runs in a store's failure table ``runs`` (one row
    a run) that started and were stopped by the budget, so a user can see which kinds of run
    the budget stopped."""
    cut = (runs["status"] == "budget") & (runs["fit_seconds"] > 0)
    return sorted(runs.loc[cut, "run"].astype(str))
