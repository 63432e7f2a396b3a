"""The run layouts the regressors share: predictions in the target's units as
``(n_stages, n, 1)``, one fitted scikit-learn model, averages of tree prefixes, and a target
standardised on the training fold (SVR and the net learn ``(y - mean) / sd``, so epsilon and the
learning rate mean the same on every dataset)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._base import Run, TreesRun, tree_input, tree_leaves, tree_values
from ._treepack import PACK_CELLS, PacksTrees

__all__ = ["PrefixRun", "SingleRun", "SingleTreeRun", "TargetScale", "column"]


def column(values: np.ndarray) -> np.ndarray:
    """``(n_stages, n)`` predictions in the run layout ``(n_stages, n, 1)``, float64."""
    return np.asarray(values, dtype=np.float64)[..., None]


@dataclass
class TargetScale:
    """A target standardised on the training fold: learn ``(y - mean) / sd``, predict back."""

    mean: float
    sd: float

    @classmethod
    def fit(cls, y: np.ndarray) -> TargetScale:
        sd = float(np.std(y))
        return cls(float(np.mean(y)), sd if sd > 0 else 1.0)

    def forward(self, y: np.ndarray) -> np.ndarray:
        return (y - self.mean) / self.sd

    def inverse(self, z: np.ndarray) -> np.ndarray:
        return z * self.sd + self.mean


@dataclass
class SingleRun(Run):
    """One fitted scikit-learn regressor, one member (optionally on a standardised target)."""

    model: Any
    scale: TargetScale | None = None

    def raw(self, X: np.ndarray) -> np.ndarray:
        """The model's prediction on the scale it learned."""
        return np.asarray(self.model.predict(X), dtype=np.float64)

    def predict(self, X: np.ndarray) -> dict[str, np.ndarray]:
        p = self.raw(X)
        if self.scale is not None:
            p = self.scale.inverse(p)
        return {"none": column(p[None])}


@dataclass
class SingleTreeRun(SingleRun, TreesRun):
    """One fitted scikit-learn regression tree, one member."""

    def fitted_trees(self) -> list:
        return [self.model]


@dataclass
class PrefixRun(PacksTrees, TreesRun):
    """Members are the averages of the first ``s`` fitted trees for each stage ``s``."""

    trees: list
    stages: tuple[int, ...]

    def fitted_trees(self) -> list:
        return self.trees

    def predict(self, X: np.ndarray) -> dict[str, np.ndarray]:
        """A small batch reads every tree's leaves from one walk (:class:`PacksTrees`) and sums
        them in one ``np.add.accumulate``: the sums of the loop over the trees."""
        X = tree_input(X)  # one copy for every tree
        k = len(self.trees)
        if k * X.shape[0] <= PACK_CELLS:
            leaves = self.leaves_of(lambda: self.trees, k, X)
            values = self.at_leaves(leaves, lambda: [tree_values(t)[:, 0] for t in self.trees])
            sums = np.add.accumulate(values, axis=0)
            out = [sums[i - 1] / i for i in range(1, k + 1) if i in self.stages]
            out.extend([sums[k - 1] / k] * (len(self.stages) - len(out)))
            return {"none": column(np.stack(out))}
        out, total = [], np.zeros(X.shape[0])
        for i, tree in enumerate(self.trees, start=1):
            total += tree_values(tree)[tree_leaves(tree, X), 0]
            if i in self.stages:
                out.append(total / i)
        out.extend([total / len(self.trees)] * (len(self.stages) - len(out)))
        return {"none": column(np.stack(out))}
