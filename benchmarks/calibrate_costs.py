"""Measure the constants of ensel's cost model and write
``ensel/library/planning/cost_constants.json`` (read by ``planning/cost.py`` and
``planning/estimate.py``; builders count costs, never time them, so rerun this only to
recalibrate, on a quiet machine: about five minutes on 2 cores).

Per registered family (both tasks), pilot runs on a synthetic table at a few sizes give:
predict, CPU milliseconds per 1,000 rows of each stage against the work its structure counts
(``ms = calls x ms_per_call + units x ms_per_unit``, non-negative least squares, also per view
kind); fit, the family's own CPU seconds against ``estimate.fit_work`` (``overhead_s + units x
s_per_unit``, or a power law where that is nearer the pilot furthest off); detectors, the CPU
seconds of a fit and its scoring against the rows it trains on and scores.

    nice python -m benchmarks.calibrate_costs [--quick] [--out PATH]
    python -m benchmarks.calibrate_costs --families svm svr    # after a change to their code

``--quick``: two small sizes, a temporary file unless ``--out``. ``--families``: only those
families, their constants replaced in the file, the others kept (``measured.reruns``).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
from scipy.optimize import nnls
from threadpoolctl import threadpool_limits

from benchmarks._record import ROOT, machine
from ensel.data import Columns
from ensel.library.execution.runs import _takes_stages, measure_cost, native_categorical
from ensel.library.families import FAMILIES, REGRESSORS, missing_requirements
from ensel.library.planning.estimate import fit_work
from ensel.library.planning.predict_work import predict_work, view_work
from ensel.library.views.base import make_view, transform

OUT = ROOT / "ensel" / "library" / "planning" / "cost_constants.json"
SIZES = (1000, 4000, 16000)
"""Pilot rows: up to 16,000, because per-row costs change with size (caches, tree depth,
per-round overheads): pilots of at most 2,000 rows put CatBoost at a fifth and LightGBM at
three times what they took on 80,000 rows."""
QUADRATIC_SIZES = (500, 1000, 2000)
"""Pilot rows of the families whose cost grows with the square of the rows, which the planner
trains on subsamples of a few thousand rows."""
QUADRATIC = ("svm", "svr", "knn", "naive_bayes")
QUICK_SIZES = (200, 400)
N_NUMERIC, N_CATEGORICAL, N_CLASSES = 10, 2, 3
PILOT = {
    "adaboost": ({"max_depth": 2}, (5, 20)),
    "bagged_trees": ({"max_depth": 6}, (3, 10)),
    "random_forest": ({}, (5, 20)),
    "extra_trees": ({}, (5, 20)),
    "tree": ({"max_depth": 8}, None),
    "catboost": ({"depth": 4}, (10, 40)),
    "hist_gbdt": ({"max_leaf_nodes": 15}, (10, 40)),
    "lightgbm": ({"num_leaves": 15}, (10, 40)),
    "xgboost": ({"max_depth": 4}, (10, 40)),
    "knn": ({}, (1, 5, 25)),
    "mlp": ({"hidden": 8}, (2, 5)),
    "tabular_mlp": ({"hidden": 32, "layers": 2, "batch_size": 64}, (2, 4)),
    "svm": ({"kernel": "rbf"}, None),
    "svr": ({"kernel": "rbf"}, None),
    "naive_bayes": ({"kind": "kernel"}, None),
}
"""Pilot parameters and stages per family (others: defaults, no stages)."""
EXTRA = {
    "svm": [({"kernel": "linear"}, None)],
    "svr": [({"kernel": "linear"}, None)],
    "naive_bayes": [({"kind": "normal"}, None), ({"kind": "discretized"}, None)],
    "logreg": [({"ridge": 1.0}, None)],
}
"""Further pilot settings, so a family's constants cover its cheap and its costly variants."""
SIZE_SCALE = {"linear": 20, "logreg": 10, "naive_bayes": 5, "tree": 5, "mlp": 2}
"""Cheap fits are timed on more rows, so that their growth shows above the fixed overhead."""


def table(n: int, task: str, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    """A synthetic table: numeric columns (5% missing), categorical ones with 6 levels."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, N_NUMERIC))
    X[rng.random(X.shape) < 0.05] = np.nan
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(N_NUMERIC)])
    for j in range(N_CATEGORICAL):
        frame[f"c{j}"] = pd.Series(rng.choice(list("abcdef"), n)).astype("category")
    signal = np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) * np.nan_to_num(X[:, 2])
    if task == "regression":
        return frame, signal + rng.normal(scale=0.5, size=n)
    cuts = np.quantile(signal, np.linspace(0, 1, N_CLASSES + 1)[1:-1])
    return frame, np.searchsorted(cuts, signal)


def pilot(family, task, params, stages, n, seed=0) -> dict:
    """Fit one pilot run on ``n`` rows; its fit seconds and work, per-stage predict points."""
    X, y = table(n + 1000, task, seed)
    train, held = np.arange(n), np.arange(n, n + 1000)
    columns = Columns.infer(X)
    full = {**family.params, **params}
    view = make_view(family.view, columns, family.native_missing).fit(X.iloc[train])
    extra = {}
    if family.categorical:  # native_categorical reads only the data's columns
        native = family.view == "native"
        data = SimpleNamespace(columns=columns)
        extra["categorical"] = native_categorical(data) if native else {}
    outputs = 1 if task == "regression" else N_CLASSES
    # the family's own work: its view is timed on the user's table when a build is planned
    matrix = transform(view, X.iloc[train])
    held_matrix = transform(view, X.iloc[held[: max(n // 5, 1)]])
    start = time.process_time()
    options = {"n_classes": outputs, "params": full, "stages": stages, "random_state": seed}
    run = family.fit(matrix, y[train], **options, **extra)
    run.predict(held_matrix)  # out-of-fold prediction
    seconds = time.process_time() - start
    width, staged = matrix.shape[1], stages or (None,)
    timed = measure_cost(view, run, X.iloc[held], len(staged))
    takes = _takes_stages(type(run))
    work = predict_work(family.name, run, full, staged, width, outputs, takes, task=family.task)
    held_rows = max(n // 5, 1)
    fitted = fit_work(family.name, full, stages, n, width, outputs, held_rows, task=family.task)
    return {
        "fit": (fitted, seconds),
        "predict": [(c, u, ms) for (c, u), ms in zip(work, timed["stages"], strict=True)],
        "view": (view.kind, *view_work(view, width), timed["view"]),
    }


def relative_nnls(A, target) -> np.ndarray:
    """Non-negative ``coef`` with ``target ~ A @ coef``, relative errors weighted equally (each
    row divided by its target)."""
    A, t = np.asarray(A, dtype=float), np.asarray(target, dtype=float)
    w = 1.0 / np.maximum(t, 1e-9)
    return nnls(A * w[:, None], t * w)[0]


def fit_two(points: list[tuple[float, float, float]]) -> tuple[float, float]:
    """Non-negative ``(a, b)`` with ``target ~ a * x1 + b * x2`` (``relative_nnls``)."""
    a, b = relative_nnls([p[:2] for p in points], [p[2] for p in points])
    return float(a), float(b)


def power_law(points: list[tuple[float, float, float]]) -> tuple[float, float]:
    """``(c, e)`` with ``target ~ c * x2 ** e`` by least squares on logs, ``e`` kept within
    [0.5, 1.2]: growth slower than linear (iterations that fall as rows grow) or a little
    faster (caches), never so far from linear that one pilot's noise, extrapolated a
    hundredfold, decides a plan."""
    x = np.log([max(p[1], 1e-12) for p in points])
    t = np.log([max(p[2], 1e-9) for p in points])
    e = float(np.clip(np.polyfit(x, t, 1)[0], 0.5, 1.2))
    return float(np.exp(np.mean(t - e * x))), round(e, 3)


def worst_factor(points, a: float, b: float) -> float:
    """The largest factor between a point's measure and the fitted model's value, either way."""
    return furthest([p[2] for p in points], [a * p[0] + b * p[1] for p in points])


def furthest(measured, fitted) -> float:
    """The largest factor between a measure and its fitted value, either way (positive
    measures only)."""
    ratios = [max(m, 1e-9) / max(f, 1e-9) for m, f in zip(measured, fitted, strict=True) if m > 0]
    return round(float(max(max(r, 1 / r) for r in ratios)), 2) if ratios else 1.0


LINEAR_WORST = 1.3
"""The linear fit form stands while no pilot is further than this factor from it."""


def fit_seconds(points: list[tuple[float, float, float]], linear_only: bool = False) -> dict:
    """The fit constants of one family from its ``(1, work, seconds)`` points: ``overhead +
    per x work``, or ``per x work ** exponent`` where the linear form is more than
    ``LINEAR_WORST`` off at some pilot and the power law is nearer (``linear_only``: linear
    always, for the quadratic families, whose work model already holds their growth). A power
    law is the exception: its exponent, fitted within a few pilots' noise and extrapolated a
    hundredfold, once put a LightGBM fit that took 105 s at 3 s."""
    overhead, per = fit_two(points)
    linear = worst_factor(points, overhead, per) if per > 0 else np.inf
    form = {"overhead_s": overhead, "s_per_unit": per, "exponent": 1.0, "worst_factor": linear}
    if per > 0 and (linear_only or linear <= LINEAR_WORST):
        return form
    c, e = power_law(points)
    power = worst_factor([(p[0], p[1] ** e, p[2]) for p in points], 0.0, c)
    if linear <= power:
        return form
    return {"overhead_s": 0.0, "s_per_unit": c, "exponent": e, "worst_factor": power}


def predict_constants(points: list[tuple[float, float, float]]) -> dict:
    """``ms_per_call`` and ``ms_per_unit`` fitted to ``(calls, units, ms)`` points, and the
    largest factor between a point and the fit."""
    call, unit = fit_two(points)
    worst = worst_factor(points, call, unit)
    return {"ms_per_call": call, "ms_per_unit": unit, "worst_factor": worst}


def calibrate(sizes: tuple[int, ...], quadratic_sizes: tuple[int, ...], only=None) -> dict:
    """Predict and fit constants of every family (of those named in ``only``, if given:
    then without the views' constants and the defaults, which need every family)."""
    predict, fit, views = {}, {}, {}
    for task, registry in (("classification", FAMILIES), ("regression", REGRESSORS)):
        for name, family in sorted(registry.items()):
            if only is not None and name not in only:
                continue
            if missing_requirements(family):
                print(f"skip {task}/{name}: needs {missing_requirements(family)}")
                continue
            settings = [PILOT.get(name, ({}, family.test_stages)), *EXTRA.get(name, [])]
            for params, stages in settings:  # warm up: first calls load libraries, JIT, ...
                pilot(family, task, params, stages, sizes[0], seed=1)
            p_points, f_points = [], []
            for params, stages in settings:
                for n in quadratic_sizes if name in QUADRATIC else sizes:
                    out = pilot(family, task, params, stages, n * SIZE_SCALE.get(name, 1))
                    p_points += out["predict"]
                    work, seconds = out["fit"]
                    f_points.append((1.0, work, seconds))
                    kind, calls, units, ms = out["view"]
                    views.setdefault(kind, []).append((calls, units, ms))
            p = predict[f"{task}/{name}"] = predict_constants(p_points)
            f = fit[f"{task}/{name}"] = fit_seconds(f_points, linear_only=name in QUADRATIC)
            print(
                f"{task}/{name}: predict {p['ms_per_call']:.4g} ms/call + {p['ms_per_unit']:.4g}"
                f" ms/unit (worst x{p['worst_factor']}); fit {f['overhead_s']:.4g} s + "
                f"{f['s_per_unit']:.4g} s/unit^{f['exponent']} (worst x{f['worst_factor']})",
                flush=True,
            )
    if only is not None:
        return {"predict": predict, "fit": fit}
    families = list(predict.values())
    for kind, points in views.items():
        predict[f"view/{kind}"] = predict_constants(points)
    predict["default"] = {
        k: float(np.median([v[k] for v in families])) for k in ("ms_per_call", "ms_per_unit")
    }
    fit["default"] = {
        k: float(np.median([v[k] for v in fit.values() if v["exponent"] == 1.0]))
        for k in ("overhead_s", "s_per_unit")
    }
    return {"predict": predict, "fit": fit}


DETECTOR_GRID = ((1000, 2000), (1000, 20000), (5000, 2000), (5000, 20000), (2500, 8000))
"""``(training rows, scored rows)`` of the detector pilots: a detector trains on at most
``DETECTOR_ROWS`` (5,000) rows and scores its held-out rows and as many background points."""
QUICK_DETECTOR_GRID = ((200, 400), (400, 400), (200, 800), (400, 800))


def calibrate_detectors(grid) -> dict:
    """Per detector, ``detector_seconds``'s constants (``ensel.risk.detector_runs``): NNLS of
    the CPU seconds of a fit plus the scoring against ``[1, d n_train, d n_scored, d n_train
    n_scored]``, relative errors weighted equally."""
    from ensel.risk._base import DETECTORS, load_all
    from ensel.risk.detector_runs import detector_seconds

    load_all()
    out = {}
    n_max = max(t + s for t, s in grid)
    X, y = table(n_max, "classification", seed=2)
    d = X.shape[1]
    for name in sorted(DETECTORS):
        cls = DETECTORS[name]
        points = []
        for n_train, n_scored in (grid[0], *grid):  # the first pilot twice: a warm-up
            det = cls()
            if "random_state" in det.get_params():
                det.set_params(random_state=0)
            start = time.process_time()
            det.fit(X.iloc[:n_train], y[:n_train] if cls.requires_y else None)
            det.risk(X.iloc[n_max - n_scored :])
            points.append((n_train, n_scored, time.process_time() - start))
        points = points[1:]
        A = [[1.0, d * t, d * sc, d * t * sc] for t, sc, _ in points]
        coef = relative_nnls(A, [p[2] for p in points])
        keys = ("overhead_s", "s_per_train", "s_per_scored", "s_per_pair")
        constants = {k: float(c) for k, c in zip(keys, coef, strict=True)}
        fitted = [detector_seconds(constants, t, sc, d) for t, sc, _ in points]
        constants["worst_factor"] = furthest([p[2] for p in points], fitted)
        out[name] = constants
        timed = ", ".join(f"{t}x{sc}: {sec:.2f} s" for t, sc, sec in points)
        print(f"detector/{name}: {timed} (worst x{constants['worst_factor']})", flush=True)
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two small sizes, a temporary file")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--families", nargs="+", help="only these; the file's others are kept")
    args = parser.parse_args(argv)
    if args.families:
        return recalibrate(args.families, args.out or OUT)
    sizes = QUICK_SIZES if args.quick else SIZES
    quadratic_sizes = QUICK_SIZES if args.quick else QUADRATIC_SIZES
    run = Run("python -m benchmarks.calibrate_costs" + (" --quick" if args.quick else ""))
    with threadpool_limits(1):  # as the builder's workers: CPU time of idle BLAS threads is noise
        constants = calibrate(sizes, quadratic_sizes)
        grid = QUICK_DETECTOR_GRID if args.quick else DETECTOR_GRID
        constants["detectors"] = calibrate_detectors(grid)
    constants["measured"] = {
        **run.record(),
        "machine": machine(),
        "sizes": list(sizes),
        "quadratic_sizes": {"families": list(QUADRATIC), "sizes": list(quadratic_sizes)},
        "size_scale": SIZE_SCALE,
        "timer": "CPU time of this process (time.process_time), BLAS/OpenMP limited to one thread",
    }
    out = args.out or (Path(tempfile.gettempdir()) / OUT.name if args.quick else OUT)
    constants["graph"] = json.loads(OUT.read_text())["graph"]  # benchmarks.calibrate_graph's
    out.write_text(json.dumps(constants, indent=1, sort_keys=True) + "\n")
    print(f"wrote {out}")


class Run:
    """When a calibration ran, its 1-minute load average at the start and at the end, and its
    command, as the constants file records them."""

    def __init__(self, command: str) -> None:
        self.command, self.load = command, os.getloadavg()[0]
        self.date = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")

    def record(self) -> dict:
        loads = [round(self.load, 2), round(os.getloadavg()[0], 2)]
        return {"date": self.date, "load_average_1m": loads, "command": self.command}


def recalibrate(families: list[str], out: Path) -> None:
    """Measure ``families`` again (both tasks, the full sizes) and replace their predict and
    fit constants in ``out``, the rest as they were; ``measured`` lists each partial rerun."""
    unknown = sorted(set(families) - set(FAMILIES) - set(REGRESSORS))
    if unknown:
        raise SystemExit(f"unknown families {unknown}; known: {sorted({*FAMILIES, *REGRESSORS})}")
    constants = json.loads(out.read_text())
    run = Run("python -m benchmarks.calibrate_costs --families " + " ".join(families))
    with threadpool_limits(1):
        fresh = calibrate(SIZES, QUADRATIC_SIZES, only=set(families))
    for part in ("predict", "fit"):
        constants[part].update(fresh[part])
    rerun = {"families": sorted(families), **run.record()}
    constants["measured"].setdefault("reruns", []).append(rerun)
    out.write_text(json.dumps(constants, indent=1, sort_keys=True) + "\n")
    print(f"wrote {out}: {', '.join(sorted(fresh['predict']))}")


if __name__ == "__main__":
    main()
