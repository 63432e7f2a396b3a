"""A stand-in for the build's planner (``ensel.library.planning.build_plan.plan_library``), for
tests
of
what a budgeted build does with a plan whatever its estimates."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class Planned:  # the planner's PlannedRun, as far as the builder reads it
    section: str
    run: object
    decision: str
    rows: int
    note: str
    standby: bool = False
    seconds: float = 1.0


@dataclass
class ScriptedPlan:
    runs: tuple

    @property
    def kept(self):
        return [(p.section, p.run) for p in self.runs if p.decision != "left out"]

    @property
    def standby(self):
        return [(p.section, p.run) for p in self.runs if p.standby]

    @property
    def caps(self):
        return {}  # this planner caps nothing

    @property
    def subsample(self):
        return {p.run.run_id: p.rows for p in self.runs if p.decision == "subsampled"}

    def frame(self):
        return pd.DataFrame(
            [
                {"run": p.run.run_id, "family": p.run.family, "decision": p.decision,
                 "rows": p.rows, "seconds": p.seconds, "end": 1.0, "note": p.note}
                for p in self.runs
            ]
        )  # fmt: skip


def stand_in_planner(calls: list, tree_standby: float | None = None):
    """Keeps logreg, subsamples knn to 120 rows, leaves the tree out (on standby, estimated
    at ``tree_standby`` seconds, where given)."""

    def plan(tasks, n_rows, n_cols, n_classes, **kw):
        calls.append((n_rows, n_cols, n_classes, kw))
        runs = []
        for section, run in tasks:
            if run.family == "knn":
                runs.append(Planned(section, run, "subsampled", 120, "~1 s on 120 rows"))
            elif run.family == "tree" and tree_standby is not None:
                note = f"~{tree_standby:.0f} s would end after the budget"
                runs.append(Planned(section, run, "left out", 0, note, True, tree_standby))
            elif run.family == "tree":
                runs.append(Planned(section, run, "left out", 0, "~900 s would end late"))
            else:
                runs.append(Planned(section, run, "kept", n_rows, "~1 s"))
        return ScriptedPlan(tuple(runs))

    return plan


def assert_the_tree_waited_out_the_pace(lib) -> None:
    """The tree ``stand_in_planner`` put on standby at 1e6 s was never started: the store
    records it left out, with the plan's note and the pace that kept it waiting."""
    tree = lib.failures.drop_duplicates("run")
    assert list(tree["family"]) == ["tree"] and list(tree["status"]) == ["left_out"]
    why = tree["error"].iloc[0]
    assert why.startswith("left out by the plan: ~1000000 s would end after the budget")
    assert "at the pace of the runs so far" in why and tree["fit_seconds"].iloc[0] == 0
