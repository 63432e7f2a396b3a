"""Multitask Bayes-net structure learning (Niculescu-Mizil, dissertation ch. 2): BDeu scores,
single-task tabu hill climbing, the Edit and Paired multitask priors searched with branch and
bound, identical structures through a task node, task selection, and related-task problems from
the ALARM and INSURANCE networks. Optional extra: ``pip install 'ensel[bayesnet]'``."""

from __future__ import annotations

from ._learner import DEFAULT_PENALTY_GRID, MultitaskStructureLearner, select_tasks
from ._network import DiscreteNetwork, edit_distance, empirical_kl

__all__ = [
    "DEFAULT_PENALTY_GRID",
    "DiscreteNetwork",
    "MultitaskStructureLearner",
    "edit_distance",
    "empirical_kl",
    "select_tasks",
]
