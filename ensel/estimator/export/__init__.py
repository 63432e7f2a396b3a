"""Export a fitted ensemble (every selected member, its views and calibrators, the weighted
average and the final calibration) as one ONNX file, checked under onnxruntime before it is
written. One module per job: :mod:`.views` (preprocessing), :mod:`.members` (one converter per
family), :mod:`.calibration`, :mod:`.assemble` (the whole graph and what can be exported).
See docs/deploy.md for the inputs and outputs."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pandas as pd

from ..._imports import optional
from .assemble import build, columns_of, unexportable, why_not
from .risk import why_no_risk

__all__ = [
    "TOLERANCE",
    "feeds",
    "sample_rows",
    "to_onnx",
    "unexportable",
    "why_no_risk",
    "why_not",
]

TOLERANCE = 1e-5
"""Largest absolute difference between the file's output and the estimator's own allowed on
the rows checked at export."""
SAMPLE_ROWS = 256
"""Rows drawn by :func:`sample_rows` where ``to_onnx`` is given none."""


def feeds(columns, frame: pd.DataFrame) -> dict[str, np.ndarray]:
    """The inputs of an exported file for the rows of ``frame`` (with the columns named by
    ``columns``, a ``data.Columns``): ``numeric`` double with NaN missing, ``categorical``
    strings (``str`` of each value) with ``""`` missing."""
    out = {}
    if columns.numeric:
        numeric = frame[list(columns.numeric)]
        out["numeric"] = numeric.to_numpy(dtype=np.float64, na_value=np.nan)
    if columns.categorical:
        cells = [
            frame[c].astype(object).where(frame[c].notna()).map(str, na_action="ignore")
            for c in columns.categorical
        ]
        out["categorical"] = np.column_stack(  # all-missing cells map to a float column
            [c.astype(object).fillna("").to_numpy(dtype=object) for c in cells]
        )
    return out


def sample_rows(estimator, n: int = SAMPLE_ROWS, seed: int = 0) -> pd.DataFrame:
    """Rows to check a file on when no rows are given: numeric cells around the training
    means (from a standardised view where there is one), every tenth one missing; categorical
    cells drawn from the training categories, some missing and some never seen."""
    rng = np.random.default_rng(seed)
    columns = columns_of(estimator)
    centre, spread = np.zeros(len(columns.numeric)), np.ones(len(columns.numeric))
    for fitted in estimator.fitted_members_.runs.values():
        view = fitted.siblings[0][0]
        if view.kind == "standardized" and view.mean.size:
            centre, spread = view.mean, view.scale
            break
    data = {}
    for j, name in enumerate(columns.numeric):
        values = centre[j] + spread[j] * rng.standard_normal(n)
        data[name] = np.where(rng.random(n) < 0.1, np.nan, values)
    for j, name in enumerate(columns.categorical):
        levels = [str(c) for c in columns.categories[j]] or ["a"]
        cells = rng.choice(np.array([*levels, None, "\x00unseen"], dtype=object), n)
        data[name] = pd.Series(cells, dtype=object)
    frame = pd.DataFrame(data)
    for name in estimator.input_columns_:
        if name not in frame:
            frame[name] = np.nan
    return frame[list(estimator.input_columns_)]


def to_onnx(estimator, path: str | os.PathLike, X=None, risk: bool = False) -> float:
    """Write ``estimator`` (fitted) to ``path`` as one ONNX file and return the largest absolute
    difference between the file under onnxruntime and the estimator's own predictions on ``X``
    (default: :func:`sample_rows`). Refuses, with one line naming them, when some members
    cannot be expressed, and writes nothing when the difference exceeds ``TOLERANCE``.
    ``risk=True`` adds the output ``risk``, ``estimator.risk(X)["combined"]``, checked the same
    way (refused in one line when a weighted detector has no graph: :func:`why_no_risk`)."""
    refused = unexportable(estimator)
    if refused:
        raise ValueError(
            f"cannot export {len(refused)} member(s): {'; '.join(refused)}; "
            "fit with exportable=True to select among exportable members only"
        )
    reason = why_no_risk(estimator) if risk else None
    if reason is not None:
        raise ValueError(f"cannot export the risk: {reason}; export without risk=True")
    model = build(estimator, risk=risk)
    rows = sample_rows(estimator) if X is None else X
    difference = _difference(estimator, model, rows)
    if risk:
        difference = max(difference, _risk_difference(estimator, model, rows))
    if not difference <= TOLERANCE:
        raise ValueError(
            f"the exported graph differs from predict by {difference:.3g} (more than "
            f"{TOLERANCE:g}) on the rows checked; nothing was written"
        )
    onnx = optional("onnx", "exporting an ensemble to ONNX")
    onnx.save_model(model, os.fspath(path))
    return difference


def _risk_difference(estimator, model, X) -> float:
    """Largest absolute difference between ``model``'s ``risk`` and the estimator's combined
    risk on the rows of ``X``."""
    ort = optional("onnxruntime", "checking an exported ensemble")
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*never seen in training.*")
        frame = estimator._frame(X)
        ours = session.run(["risk"], feeds(columns_of(estimator), frame))[0]
        theirs = estimator.risk(X)["combined"].to_numpy(dtype=np.float64)
    return float(np.max(np.abs(ours - theirs), initial=0.0))


def _difference(estimator, model, X) -> float:
    """Largest absolute difference between ``model`` and ``estimator`` on the rows of ``X``."""
    ort = optional("onnxruntime", "checking an exported ensemble")
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    with warnings.catch_warnings():  # unseen categories are among the rows checked on purpose
        warnings.filterwarnings("ignore", message=".*never seen in training.*")
        frame = estimator._frame(X)
        inputs = feeds(columns_of(estimator), frame)
        if estimator.fitted_members_.task == "regression":
            ours = session.run(["prediction"], inputs)[0]
            theirs = estimator.predict(X)
        else:
            ours = session.run(["probabilities"], inputs)[0]
            theirs = estimator.predict_proba(X)
    return float(np.max(np.abs(ours - np.asarray(theirs, dtype=np.float64)), initial=0.0))
