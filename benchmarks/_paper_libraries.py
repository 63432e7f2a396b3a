"""The member libraries and the cross-validation breakdown of bench_paper (dissertation §4.3):
the NOCAL / CAL / BOTH libraries with calibration cross-fitted (ensel's default) or fitted on the
hillclimb set (§4.3.1, suffix HC), and Table 4.4's ES-HILL and ES-AVG.

ES-HILL: the cross-validated library's hillclimb set (every training row, out of fold) chooses
the ensemble, but each test prediction comes from one sibling of every member instead of their
average; one ensemble per sibling, scores averaged. ES-AVG: the hillclimb set of sibling ``k``
alone (the rows of fold ``k``, as large as the held-out split of ES without CV) chooses the
ensemble, and test predictions average the siblings; one ensemble per fold, scores averaged.
Both use the uncalibrated members (NOCAL), whose per-sibling predictions need no calibrator.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ensel.calibration import calibrate_on_hillclimb
from ensel.library.data.training import prepare
from ensel.metrics import METRICS, score
from ensel.strategies import STRATEGIES

LIBRARIES = {"NOCAL": ("none",), "CAL": ("platt",), "BOTH": ("none", "platt")}
HC_LIBRARIES = ("CALHC", "BOTHHC")
SEED = 0


def member_libraries(lib, P_test: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray, list]]:
    """``{library name: (hillclimb predictions, test predictions, member ids)}``: NOCAL, CAL,
    BOTH as the library holds them (calibration cross-fitted), and CALHC / BOTHHC, whose
    calibrated members are the uncalibrated ones Platt-scaled on the whole hillclimb set."""
    P = np.asarray(lib.predictions, dtype=np.float64)
    calibration = lib.members["calibration"].to_numpy()
    ids = lib.members["id"].to_numpy()
    out = {}
    for name, kinds in LIBRARIES.items():
        keep = np.isin(calibration, kinds)
        out[name] = (P[keep], P_test[keep], list(ids[keep]))
    none = calibration == "none"
    hill, test = calibrate_on_hillclimb(P[none], lib.y, P_test[none], "platt")
    hc_ids = [f"hc:{i}" for i in ids[none]]
    out["CALHC"] = (hill, test, hc_ids)
    out["BOTHHC"] = (
        np.concatenate([P[none], hill]),
        np.concatenate([P_test[none], test]),
        list(ids[none]) + hc_ids,
    )
    return out


def sibling_predictions(lib, X: pd.DataFrame, ids) -> np.ndarray:
    """``(K, m, n)`` positive-class test predictions of uncalibrated binary members ``ids``,
    one slice per sibling (``lib.predict`` averages them)."""
    members = lib.subset(ids)
    frame = members.frame(X)
    K = lib.siblings
    out = np.empty((K, len(ids), len(frame)))
    for run_id, fitted in members.runs.items():
        rows = members.rows(run_id)
        for k in range(K):
            alone = dataclasses.replace(fitted, siblings=[fitted.siblings[k]])
            out[k, rows] = alone.predict(frame, list(members.offsets[rows]))[..., 1]
    return out


def hillclimb_folds(lib, X: pd.DataFrame, y: pd.Series, groups, cv: int) -> np.ndarray:
    """The fold of each hillclimb row of a library built with ``cv`` folds and seed ``SEED``
    (its sibling ``k`` never saw fold ``k``)."""
    data = prepare(X, y, cv=cv, groups=groups, random_state=SEED)
    if not np.array_equal(data.y, lib.y):
        raise ValueError("the library's hillclimb rows are not the data's rows in order")
    return data.folds


def breakdown_scores(P: np.ndarray, y: np.ndarray, folds: np.ndarray, siblings, P_test, y_test):
    """(method, metric, test score) of ES-HILL and ES-AVG (module docstring) on NOCAL
    members: ``P`` their out-of-fold hillclimb predictions, ``siblings`` ``(K, m, n)`` and
    ``P_test`` ``(m, n)`` their per-sibling and averaged test predictions."""
    es = STRATEGIES["es"]
    options = {"random_state": SEED}
    for metric in METRICS:
        w = es(P, y, metric, options)
        hill = [score(metric, y_test, np.tensordot(w, s, axes=1)) for s in siblings]
        yield "ES-HILL", metric, float(np.mean(hill))
        avg = []
        for k in range(len(siblings)):
            rows = folds == k
            w_k = es(P[:, rows], y[rows], metric, options)
            avg.append(score(metric, y_test, np.tensordot(w_k, P_test, axes=1)))
        yield "ES-AVG", metric, float(np.mean(avg))


def table_4_4(
    norm: pd.DataFrame, base: str = "ES-NOCAL", full: str = "ES-NOCAL-CV"
) -> pd.DataFrame:
    """Table 4.4: the gain of ES-HILL and ES-AVG over ``base`` as a percentage of the gain of
    ``full`` (cross-validated ES) over ``base``, per metric on the mean normalised score over
    datasets, their SUM, and a MEAN column over the metrics' percentages."""
    mean = norm.groupby(["method", "metric"])["norm"].mean().unstack("metric")[list(METRICS)]
    total = mean.loc[full] - mean.loc[base]
    rows = {m: 100 * (mean.loc[m] - mean.loc[base]) / total for m in ("ES-HILL", "ES-AVG")}
    table = pd.DataFrame(rows).T
    table.loc["SUM"] = table.sum()
    table["MEAN"] = table.mean(axis=1)
    return table
