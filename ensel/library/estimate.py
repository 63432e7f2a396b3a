"""Fit time, peak memory and predict cost of a run before it is fitted, from the shape of the
data (rows, columns, classes) and the run's parameters, so that a library can be planned for a
large table within a time budget (:mod:`ensel.library.plan`).

Each family has a work model (how its fit grows with rows ``n``, view width ``d``, outputs ``K`` and
its parameters: boosting ``~ n d rounds K log2(leaves)`` on histograms, forests ``~ trees n log n
mtry``, kernel SVMs ``~ n^2 d``, k-NN's held-out query ``~ n_held n d``, linear models ``~ n d K``
per iteration, nets ``~ n weights epochs``), the bytes it holds (the view matrix, the model, working
buffers) and the predict work of its expected structure. Seconds are ``overhead + seconds_per_unit x
work`` (``x work ** exponent`` for a family whose pilot fits grew slower than linearly, such as
iterative solvers that converge in fewer iterations on more rows), with per-family constants
measured once on pilot fits of 1,000 to 16,000 rows (more for cheap fits, fewer for quadratic ones)
by ``benchmarks/calibrate_costs.py`` (shipped in ``cost_constants.json``), each family's linear or
power-law form whichever fits its pilots better; memory is counted in bytes from the same shapes
(neither timed nor calibrated: the view matrix, the model's nodes or weights, histograms, kernel
caches, distance blocks). Estimates are for planning, within a small factor on the pilot sizes;
extrapolated to far larger tables they carry the error of the work model's exponent.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .cost import cost_constants
from .families.trees import leaf_cap

__all__ = ["FIT_MODELS", "FitShape", "RunEstimate", "estimate_run", "fit_work"]

FLOAT = 8
"""Bytes per float64 value."""
NODE_BYTES = 64
"""Bytes of one tree node (scikit-learn's node record), plus 8 per output value."""


@dataclass(frozen=True)
class FitShape:
    """What a family's work depends on: ``n`` training rows, ``d`` columns of its view, ``k``
    outputs (classes; 1 for regression), ``n_held`` rows the fit predicts out of fold, its
    parameters and its largest stage (rounds, trees, epochs, k)."""

    n: int
    d: int
    k: int
    n_held: int
    params: Mapping[str, Any]
    top: int

    @property
    def log_n(self) -> float:
        return math.log2(max(self.n, 2))

    @property
    def per_round(self) -> int:
        """Trees per boosting round: one per class beyond two classes."""
        return self.k if self.k > 2 else 1


@dataclass(frozen=True)
class RunEstimate:
    """``fit_seconds`` of one fit (plus its out-of-fold prediction), ``peak_bytes`` it holds at
    once, ``predict_ms`` per 1,000 rows at its largest stage (one model)."""

    fit_seconds: float
    peak_bytes: float
    predict_ms: float


@dataclass(frozen=True)
class FitModel:
    """A family's work models: ``fit`` (units of fit work), ``memory`` (bytes beyond the view
    matrix), ``predict`` (``(calls, units)`` per row at the largest stage, as
    :mod:`ensel.library.predict_work` counts them on a fitted run)."""

    fit: Callable[[FitShape], float]
    memory: Callable[[FitShape], float]
    predict: Callable[[FitShape], tuple[float, float]]


def _mtry(s: FitShape) -> float:
    """Columns a forest's split tries: ``max_features`` as a count, a share or sqrt/log2."""
    m = s.params.get("max_features", "sqrt")
    if m in (None, "all"):
        return float(s.d)
    if m == "sqrt":
        return math.sqrt(s.d)
    if m == "log2":
        return max(math.log2(max(s.d, 2)), 1.0)
    share = isinstance(m, float) and m <= 1.0
    return min(float(s.d), max(1.0, float(m) * s.d if share else float(m)))


def _tree_depth(s: FitShape, max_depth: Any, min_leaf: int = 1) -> float:
    """A tree's depth: its cap, else about log2 of its leaves (rows / min leaf), doubled for
    the imbalance of real splits."""
    grown = 2.0 * math.log2(max(s.n / max(min_leaf, 1), 2.0))
    return float(min(float(max_depth), grown)) if max_depth else grown


def _tree_nodes(s: FitShape, max_depth: Any, min_leaf: int = 1) -> float:
    leaves = s.n / max(min_leaf, 1)
    if max_depth:
        leaves = min(leaves, 2.0 ** float(max_depth))
    cap = leaf_cap(s.params.get("max_leaves"), s.n)  # "auto": 1,024 leaves on large folds
    if cap is not None:
        leaves = min(leaves, float(cap))
    return 2.0 * max(leaves, 1.0)


def _n_trees(s: FitShape) -> int:
    return max(s.top, 1)


def _booster_leaves(s: FitShape) -> float:
    leaves = s.params.get("num_leaves") or s.params.get("max_leaf_nodes")
    depth = s.params.get("max_depth") or s.params.get("depth")
    out = float(leaves) if leaves else 2.0 ** float(depth or 6)
    return min(out, 2.0 ** float(depth)) if depth else out


def _levels(s: FitShape) -> float:
    """Levels of a booster's tree: its depth, or about log2 of its leaves (leaf-wise)."""
    return math.log2(max(_booster_leaves(s), 2.0))


def _boosting() -> FitModel:
    # a round builds histograms of the rows in each level of its tree: ~ n d per level
    return FitModel(
        fit=lambda s: s.n * s.d * _n_trees(s) * s.per_round * _levels(s),
        memory=lambda s: (
            s.n * s.d
            + 2 * FLOAT * s.n * s.k  # binned matrix, gradients
            + _n_trees(s) * s.per_round * 2 * _booster_leaves(s) * NODE_BYTES
        ),
        predict=lambda s: (1.0, _n_trees(s) * s.per_round * _levels(s)),
    )


def _forest(mtry: Callable[[FitShape], float], sample: float = 1.0) -> FitModel:
    def nodes(s):
        return _tree_nodes(s, s.params.get("max_depth"), int(s.params.get("min_samples_leaf", 1)))

    def depth(s):
        return _tree_depth(s, s.params.get("max_depth"), int(s.params.get("min_samples_leaf", 1)))

    return FitModel(
        fit=lambda s: _n_trees(s) * sample * s.n * s.log_n * mtry(s),
        memory=lambda s: 4 * s.n * s.d + _n_trees(s) * nodes(s) * (NODE_BYTES + FLOAT * s.k),
        predict=lambda s: (float(_n_trees(s)), _n_trees(s) * depth(s)),
    )


def _adaboost() -> FitModel:
    def depth(s):
        return _tree_depth(s, s.params.get("max_depth"), int(s.params.get("min_samples_leaf", 1)))

    return FitModel(
        fit=lambda s: _n_trees(s) * s.n * s.log_n * s.d,
        memory=lambda s: 4 * s.n * s.d + FLOAT * s.n * 2,
        predict=lambda s: (float(_n_trees(s)), _n_trees(s) * depth(s)),
    )


def _kernel_svm(s: FitShape) -> bool:
    return s.params.get("kernel", "rbf") != "linear"


SUPPORT_SHARE = 0.5
"""Share of the training rows that end up support vectors (a planning guess; the fitted cost
reads the true count)."""


def _svm() -> FitModel:
    return FitModel(
        fit=lambda s: s.n**2 * s.d if _kernel_svm(s) else 20 * s.n * s.d * s.k,
        memory=lambda s: (
            (min(500e6, FLOAT * s.n**2) if _kernel_svm(s) else 0.0) + FLOAT * s.n * s.d
        ),
        predict=lambda s: (1.0, SUPPORT_SHARE * s.n * s.d if _kernel_svm(s) else s.d * s.k),
    )


KNN_BLOCK = 2048
"""Query rows k-NN holds distances for at once."""


def _knn() -> FitModel:
    return FitModel(
        fit=lambda s: s.n_held * s.n * s.d,
        memory=lambda s: FLOAT * s.n * s.d + FLOAT * min(KNN_BLOCK, max(s.n_held, 1)) * s.n * 2,
        predict=lambda s: (1.0, float(s.n * s.d)),
    )


def _linear() -> FitModel:
    return FitModel(
        fit=lambda s: s.n * s.d * s.k,
        memory=lambda s: 2 * FLOAT * s.n * s.d,
        predict=lambda s: (1.0, float(s.d * s.k)),
    )


def _mlp_weights(s: FitShape) -> float:
    hidden = float(s.params.get("hidden", 8))
    layers = int(s.params.get("layers", 1))
    embed = float(s.params.get("embedding", 0) or 0)
    d = s.d * (1.0 + embed / 4.0) if embed else s.d  # embeddings widen categorical inputs
    return d * hidden + (layers - 1) * hidden * hidden + hidden * s.k


def _mlp() -> FitModel:
    return FitModel(
        fit=lambda s: s.n * _mlp_weights(s) * max(s.top, 1),
        memory=lambda s: (
            FLOAT * s.n * s.d
            + FLOAT * _mlp_weights(s) * (max(s.top, 1) + 4)
            + FLOAT * s.n * float(s.params.get("hidden", 8))
        ),
        predict=lambda s: (1.0, _mlp_weights(s)),
    )


def _tabm() -> FitModel:
    from .families.tabm import forward_work

    # early stopping ends a fit after a data-dependent number of epochs: the calibration's
    # pilots set the epochs a typical fit takes
    return FitModel(
        fit=lambda s: s.n * forward_work(s.params, s.d, s.k),
        memory=lambda s: FLOAT * s.n * s.d + FLOAT * 4 * forward_work(s.params, s.d, s.k),
        predict=lambda s: (1.0, forward_work(s.params, s.d, s.k)),
    )


MDL_SORTS = 14.0
"""Work of Fayyad & Irani's MDL discretisation per value, in sorts: each accepted cut rescans
its segment's cumulative class counts and the entropies of every candidate cut. Measured as a
discretized naive Bayes fit over a normal one (whose work is a sort per column, for Weka's
precision) on the synthetic scale tables, 22 columns: 13.6 at 100,000 rows, 13.9 at 300,000
(CPU seconds, one process). Without it a discretized run was estimated at a fourteenth of its
time; at a million rows one started on standby near the deadline and was cut (c61d175)."""


def _naive_bayes() -> FitModel:
    def kernel(s):
        return s.params.get("kind") == "kernel"

    # every kind sorts each column once (Weka's precision, or the MDL cuts' sort); the MDL
    # recursion costs MDL_SORTS sorts; a kernel estimate sums one kernel per distinct training
    # value within ~9 sd of each query: on continuous columns nearly every value, so its work
    # grows as n_held x n
    return FitModel(
        fit=lambda s: (
            s.n * s.d * s.log_n * (MDL_SORTS if s.params.get("kind") == "discretized" else 1.0)
            + (s.n_held * s.d * s.n if kernel(s) else 0.0)
        ),
        memory=lambda s: FLOAT * s.n * s.d * (2 if kernel(s) else 1),
        predict=lambda s: (1.0, s.n * s.d if kernel(s) else float(s.d * s.k)),
    )


FIT_MODELS: dict[str, FitModel] = {
    "adaboost": _adaboost(),
    "bagged_trees": _forest(lambda s: float(s.d)),
    "tree": _forest(lambda s: float(s.d)),
    "random_forest": _forest(_mtry, sample=0.63),
    "extra_trees": _forest(_mtry),
    "catboost": _boosting(),
    "hist_gbdt": _boosting(),
    "lightgbm": _boosting(),
    "xgboost": _boosting(),
    "knn": _knn(),
    "linear": _linear(),
    "logreg": _linear(),
    "mlp": _mlp(),
    "tabular_mlp": _mlp(),
    "tabm": _tabm(),
    "naive_bayes": _naive_bayes(),
    "svm": _svm(),
    "svr": _svm(),
}
"""Family name -> its work models (both tasks)."""


def fit_work(
    family: str,
    params: Mapping[str, Any],
    stages: Sequence[int] | None,
    n_rows: int,
    width: int,
    n_outputs: int,
    n_held: int | None = None,
) -> float:
    """Units of fit work of one fit of ``family`` (see the module docstring); ``n_held``: rows
    predicted out of fold (a fifth of ``n_rows`` by default)."""
    return _model(family).fit(_shape(params, stages, n_rows, width, n_outputs, n_held))


def estimate_run(
    family: str,
    params: Mapping[str, Any],
    stages: Sequence[int] | None,
    n_rows: int,
    n_cols: int,
    n_classes: int,
    view_width: int | None = None,
    *,
    task: str = "classification",
    n_held: int | None = None,
) -> RunEstimate:
    """Fit seconds, peak bytes and predict ms (per 1,000 rows) of one fit of ``family`` with
    ``params`` (its full parameters, defaults included: ``RunSpec.param_dict``) and ``stages``
    on ``n_rows`` rows. ``n_cols``: the table's columns (what native views see);
    ``view_width``: the standardized view's width (one-hot levels and missing indicators;
    ``n_cols`` where None), which linear, kernel, neighbour and net families see;
    ``n_classes``: classes (ignored for ``task="regression"``). A ValueError names an unknown
    family."""
    from .families import get_family

    view = get_family(family, task).view
    width = int(view_width or n_cols) if view == "standardized" else int(n_cols)
    outputs = 1 if task == "regression" else max(int(n_classes), 2)
    shape = _shape(params, stages, n_rows, width, outputs, n_held)
    model = _model(family)
    constants = cost_constants()
    fit = constants["fit"].get(f"{task}/{family}") or constants["fit"]["default"]
    seconds = fit["overhead_s"] + fit["s_per_unit"] * model.fit(shape) ** fit.get("exponent", 1)
    peak = FLOAT * n_rows * width + model.memory(shape)
    calls, units = model.predict(shape)
    table = constants["predict"]
    pc = table.get(f"{task}/{family}") or table["default"]
    vc = table.get(f"view/{view}") or table["default"]
    predict_ms = (
        calls * pc["ms_per_call"]
        + units * pc["ms_per_unit"]
        + vc["ms_per_call"]
        + 2 * width * vc["ms_per_unit"]
    )
    return RunEstimate(float(seconds), float(peak), float(predict_ms))


def _model(family: str) -> FitModel:
    try:
        return FIT_MODELS[family]
    except KeyError:
        raise ValueError(
            f"family {family!r} has no fit model; add one to ensel.library.estimate.FIT_MODELS"
        ) from None


def _shape(params, stages, n_rows, width, n_outputs, n_held) -> FitShape:
    top = max((int(s) for s in stages or () if s is not None), default=1)
    held = max(n_rows // 5, 1) if n_held is None else int(n_held)
    return FitShape(int(n_rows), max(int(width), 1), int(n_outputs), held, dict(params), top)
