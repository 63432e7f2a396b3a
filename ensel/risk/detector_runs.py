"""The detectors kind of run: a spec's ``detectors:`` section. Each detector is built and stored
like a model run (one member, its risk), in the library store's ``detectors`` sub-store, whose
hillclimb set is the held-out training rows (label 0, "data") followed by as many points drawn
uniformly from the data's bounding box (label 1, "background"); see :mod:`ensel.risk.combined`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..errors import SpecError
from ..library.kinds import Kind, PackedRun, register_kind, run_seed
from ..library.planning.cost import cost_constants
from ..library.planning.memory import data_bytes, view_width
from ..library.views.base import MAX_LEVELS
from ._base import FeatureSpace, get_detector
from .combined import DETECTOR_ROWS, fit_detector

__all__ = [
    "DETECTORS_KIND",
    "DetectorSpec",
    "detector_peak",
    "detector_seconds",
    "estimate_detector_run",
    "fit_detector_run",
    "parse_detectors",
]


@dataclass(frozen=True)
class DetectorSpec:
    """One extrapolation-risk detector of a spec's ``detectors:`` section. It is built and
    stored like a run (one member, the detector's risk), so it has a run's fields."""

    family: str  # the detector's registered name
    params: tuple[tuple[str, Any], ...]
    view: str = "raw"
    stages: None = None
    calibrations: tuple[str, ...] = ("none",)
    tier: str = field(default="main", compare=False)
    """A detector is built in the main tier (a field every run of a spec has)."""
    min_rows: None = field(default=None, compare=False)
    """Detectors are built on tables of any size (a field every run of a spec has)."""

    @property
    def param_dict(self) -> dict[str, Any]:
        return dict(self.params)

    @property
    def run_id(self) -> str:
        key = json.dumps([self.family, self.params], sort_keys=True, default=str)
        return f"det-{self.family}-{hashlib.sha1(key.encode()).hexdigest()[:12]}"

    @property
    def members(self) -> list[tuple[None, str]]:
        return [(None, "none")]

    @property
    def requires_y(self) -> bool:
        """True for detectors that need class labels (margin, dispersion, open set)."""
        return bool(get_detector(self.family).requires_y)

    def make(self, random_state: int):
        """The unfitted detector, seeded when it takes a ``random_state``."""
        det = get_detector(self.family)(**self.param_dict)
        if "random_state" in det.get_params():
            det.set_params(random_state=random_state)
        return det


def parse_detectors(entries: Any, source: str, seed: int, task: str) -> tuple[DetectorSpec, ...]:
    """The ``detectors:`` section: entries ``{detector: NAME, params: {...}}`` (``seed`` is not
    used: detectors are seeded per run). A regression spec leaves out the detectors that need
    class labels (margin, dispersion, open set)."""
    if entries is None:
        return ()
    if not isinstance(entries, list):
        raise SpecError(f"{source}: key 'detectors' must be a list of detector entries")
    out = []
    for i, entry in enumerate(entries):
        where = f"{source}: detectors[{i}]"
        if not isinstance(entry, dict) or "detector" not in entry:
            raise SpecError(f"{where}: each entry is a mapping with a 'detector' key")
        unknown = sorted(set(entry) - {"detector", "params"})
        if unknown:
            raise SpecError(f"{where}: unknown key(s) {unknown}; allowed: ['detector', 'params']")
        try:
            cls = get_detector(entry["detector"])
        except ValueError as exc:
            raise SpecError(f"{where}: key 'detector': {exc}") from None
        params = entry.get("params") or {}
        accepted = set(cls().get_params())
        if not isinstance(params, dict) or set(params) - accepted:
            raise SpecError(
                f"{where}: key 'params' must map parameters of {cls.name} "
                f"({sorted(accepted - {'random_state'})}) to values; got {params!r}"
            )
        if task == "regression" and cls.requires_y:
            continue
        out.append(DetectorSpec(cls.name, tuple(sorted(params.items()))))
    return tuple(dict.fromkeys(out))


def prepare_detectors(data, header: dict, random_state: int) -> tuple[pd.DataFrame, dict]:
    """The uniform background points (as many as hillclimb rows, drawn from the bounding box of
    the training data) and the sub-store's header: hillclimb set = held-out rows, then the
    background."""
    space, _ = FeatureSpace.fit(data.box)  # data read in parts: a few rows spanning it
    n_hill = int(data.hillclimb.size)
    background = space.decode(space.uniform(n_hill, random_state))
    header = dict(header, fingerprint=dict(header["fingerprint"]))
    header["fingerprint"]["background"] = str(
        pd.util.hash_pandas_object(background, index=False).sum()
    )
    header.update(
        task="classification",
        classes=["data", "background"],
        n_hillclimb=2 * n_hill,
        hillclimb=np.r_[data.hillclimb, np.full(n_hill, -1)],
        labels=np.r_[np.zeros(n_hill, int), np.ones(n_hill, int)],
    )
    return background, header


def detector_seconds(constants: dict, n_train: int, n_scored: int, n_cols: int) -> float:
    """Seconds of one detector fit on ``n_train`` rows that then scores ``n_scored`` rows of
    ``n_cols`` columns: ``overhead + d (a n_train + b n_scored + c n_train n_scored)``, the
    last term for detectors that compare each scored row with the training rows (KDE, LOF)."""
    d = float(n_cols)
    return constants["overhead_s"] + d * (
        constants["s_per_train"] * n_train
        + constants["s_per_scored"] * n_scored
        + constants["s_per_pair"] * n_train * n_scored
    )


def estimate_detector_run(
    spec: DetectorSpec, n_rows: int, n_cols: int, n_held: int, n_fits: int
) -> float | None:
    """Seconds of one detector run (the kind's ``estimate``): each of its ``n_fits`` siblings
    trains on at most ``DETECTOR_ROWS`` of the rows outside its fold and scores its ``n_held``
    rows and the background (as many rows as the hillclimb set), at the constants
    ``benchmarks/calibrate_costs.py`` measured for the detector; None for a detector it has
    not measured."""
    constants = cost_constants().get("detectors", {}).get(spec.family)
    if constants is None:
        return None
    train = max(min(n_rows - n_held, DETECTOR_ROWS), 1)
    return n_fits * detector_seconds(constants, train, n_held * (1 + n_fits), n_cols)


WORKING_COPIES = 4.0
"""Copies of its standardized sample a detector holds while it fits (scaled matrices, trees or
neighbour structures, scores)."""


def detector_peak(spec: DetectorSpec, data) -> int:
    """Estimated peak bytes of one detector run on ``data`` (the kind's ``peak``): the fold
    copies of the raw frame, ``WORKING_COPIES`` of its standardized view on the at most
    ``DETECTOR_ROWS`` rows it trains on, and its scores of every row."""
    n_rows = len(data.X)
    n_train = n_rows - n_rows // max(data.n_siblings, 2)
    width = view_width("standardized", data.columns, MAX_LEVELS + 2)
    sample = min(n_train, DETECTOR_ROWS)
    return int(2 * data_bytes(data.X) + WORKING_COPIES * 8 * width * sample + 8 * 8 * n_rows)


def fit_detector_run(
    spec: DetectorSpec, data, background: pd.DataFrame, random_state: int
) -> PackedRun:
    """One detector over the folds and the background: its out-of-fold risk on the held-out
    rows, then on the background, as (data, background) probabilities."""
    detector = spec.make(run_seed(spec, random_state))
    y = None if data.task == "regression" else data.y
    risk, fitted = fit_detector(detector, data.X, y, data.folds, background)
    predictions = np.stack([1.0 - risk, risk], axis=-1)[None].astype(np.float32)
    return PackedRun.pack(predictions, fitted)


DETECTORS_KIND = register_kind(
    Kind(
        "detectors",
        parse=parse_detectors,
        fit=fit_detector_run,
        store="detectors",
        prepare=prepare_detectors,
        order=0,
        estimate=estimate_detector_run,
        rank=6.5,
        peak=detector_peak,
    )
)
"""Detectors start before model runs: a few long tasks, started early so no worker waits on one
at the end. In a build under a time budget they enter the families' rotation as one group after
the sixth-ranked family (``rank``)."""
