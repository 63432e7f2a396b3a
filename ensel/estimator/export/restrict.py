"""Selection among exportable members only (``exportable=True``): which library members the
graph can express (declared by family, view, calibration and target, never found out by
trying), and the library as selection sees it with only those members."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .assemble import why_not

__all__ = ["ExportableMembers", "exportable_mask"]


def exportable_mask(members: pd.DataFrame, task: str, categorical: bool = False) -> np.ndarray:
    """Whether each row of ``Library.members`` can be exported (:func:`why_not` is None) from
    a table with (``categorical``) or without categorical columns."""
    return np.array(
        [
            why_not(row.family, row.view, row.calibration, task, row.params, categorical) is None
            for row in members.itertuples(index=False)
        ],
        dtype=bool,
    )


@dataclass
class ExportableMembers:
    """What the estimator's selection reads of a library (members, labels, store records,
    siblings), restricted to the members of ``mask``: selection and its predict-cost budget
    then see the exportable members only, priced as before."""

    library: object
    mask: np.ndarray

    @property
    def members(self) -> pd.DataFrame:
        return self.library.members[self.mask].reset_index(drop=True)

    @property
    def y(self) -> np.ndarray:
        return self.library.y

    @property
    def store(self):
        return self.library.store

    @property
    def siblings(self) -> int:
        return self.library.siblings
