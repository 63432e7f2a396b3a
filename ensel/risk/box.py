"""Box risk (Sandia report §2.6): a row is an extrapolation exactly when it leaves the training
data's bounding box (or the known ``bounds``), or holds a category never seen in training."""

from __future__ import annotations

import numpy as np

from ._base import Detector, register

__all__ = ["BoxRisk"]


@register("box")
class BoxRisk(Detector):
    """Risk 1 outside the bounding box, 0 inside. ``bounds=(low, high)`` gives known numeric
    ranges; missing values never leave the box."""

    one_outside_box = True

    def __init__(self, bounds=None):
        self.bounds = bounds

    def _fit(self, Z, y):
        pass

    def _risk(self, Z):
        return np.zeros(Z.shape[0])
