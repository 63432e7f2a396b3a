"""The eight performance metrics of the dissertation (Appendix 4.C), the regression metrics
(RMSE, MAE, R²), exact batch scoring of many prediction vectors at once, and the normalised
scores of §4.3.1.

Binary problems take positive-class probabilities ``(N,)``; a two-column ``(N, 2)`` array is read
as its second column. Multiclass problems take ``(N, C)`` probabilities and integer labels
``0..C-1``. Regression metrics take real targets ``(N,)`` and real predictions ``(N,)``. Batch
functions take ``(M, N)`` or ``(M, N, C)`` and return ``(M,)`` scores.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = [
    "METRICS",
    "REGRESSION_METRICS",
    "TASKS",
    "Metric",
    "baseline_score",
    "greater_is_better",
    "make_metric",
    "normalized_score",
    "normalized_scores",
    "resolve_metric",
    "score",
    "score_batch",
]

METRICS = ("acc", "fsc", "lft", "roc", "apr", "bep", "rms", "mxe")
REGRESSION_METRICS = ("rmse", "mae", "r2")
TASKS = ("classification", "regression")

THRESHOLD = 0.5
"""ACC and FSC call a case positive when its probability is >= 0.5 (App. 4.C)."""
LIFT_FRACTION = 0.25
"""LFT is the lift of the top 25% of cases (§4.3.1)."""
EPS = 1e-15
"""MXE clips probabilities to [EPS, 1 - EPS] before taking the natural log."""
APR_RECALL_LEVELS = 11
"""APR averages interpolated precision at recall 0, 0.1, ..., 1 (App. 4.C)."""

BatchFn = Callable[[np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Metric:
    """A metric: a batch scorer ``(y, Q) -> (M,)``, its direction, its kind and its task."""

    name: str
    batch: BatchFn
    greater_is_better: bool
    kind: str  # "threshold", "rank", "probability", "error" (regression) or "custom"
    task: str = "classification"  # or "regression": real targets and predictions


# --------------------------------------------------------------------------- binary, exact


def _acc(y: np.ndarray, Q: np.ndarray) -> np.ndarray:
    return ((Q >= THRESHOLD) == y).mean(axis=1)


def _fsc(y: np.ndarray, Q: np.ndarray) -> np.ndarray:
    pred = Q >= THRESHOLD
    tp = (pred & y).sum(axis=1)
    denom = pred.sum(axis=1) + y.sum()
    return np.divide(2.0 * tp, denom, out=np.zeros(len(Q)), where=denom > 0)


def _rms(y: np.ndarray, Q: np.ndarray) -> np.ndarray:
    return np.sqrt(((Q - y) ** 2).mean(axis=1))


def _mxe(y: np.ndarray, Q: np.ndarray) -> np.ndarray:
    q = np.clip(Q, EPS, 1.0 - EPS)
    return -np.where(y, np.log(q), np.log1p(-q)).mean(axis=1)


@dataclass(frozen=True)
class _Ranked:
    """Each row of Q sorted in decreasing order, with its labels and tie groups."""

    ys: np.ndarray  # (M, N) labels in sorted order
    start: np.ndarray  # (M, N) first sorted position of each position's tie group
    end: np.ndarray  # (M, N) last sorted position of each position's tie group


def _rank(y: np.ndarray, Q: np.ndarray) -> _Ranked:
    M, N = Q.shape
    order = np.argsort(-Q, axis=1)  # tie groups are found by value, so any sort will do
    Qs = np.take_along_axis(Q, order, axis=1)
    new_group = np.ones((M, N), dtype=bool)
    new_group[:, 1:] = Qs[:, 1:] != Qs[:, :-1]
    idx = np.arange(N)
    start = np.maximum.accumulate(np.where(new_group, idx, 0), axis=1)
    last = np.ones((M, N), dtype=bool)
    last[:, :-1] = new_group[:, 1:]
    end = np.minimum.accumulate(np.where(last, idx, N)[:, ::-1], axis=1)[:, ::-1]
    return _Ranked(ys=y[order], start=start, end=end)


def _roc(y: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """Area under the ROC curve; a tied positive-negative pair counts one half."""
    r = _rank(y, Q)
    n_pos = int(y.sum())
    n_neg = len(y) - n_pos
    neg_cum = np.cumsum(~r.ys, axis=1)
    neg_through_end = np.take_along_axis(neg_cum, r.end, axis=1)
    start_prev = np.maximum(r.start - 1, 0)
    neg_before = np.where(r.start > 0, np.take_along_axis(neg_cum, start_prev, axis=1), 0)
    below = n_neg - neg_through_end
    tied = neg_through_end - neg_before
    return np.where(r.ys, below + 0.5 * tied, 0.0).sum(axis=1) / (n_pos * n_neg)


def _expected_top_positives(r: _Ranked, k: float) -> np.ndarray:
    """Expected positives among the top ``k`` cases when ties are broken at random."""
    size = r.end - r.start + 1
    inside = np.clip((k - r.start) / size, 0.0, 1.0)
    # positives wholly inside, plus those of the one tie group the cut splits times its share:
    # one product, not a sum of fractions, so the compiled exact scorer of the selection engine
    # (``ensel._kernels.rank_exact``) gets the same float64 number
    full = (r.ys & (inside >= 1.0)).sum(axis=1)
    split = r.ys & (inside > 0.0) & (inside < 1.0)
    share = np.where(split, inside, 0.0).max(axis=1)
    return full + split.sum(axis=1) * share


def _lft(y: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """Lift of the top 25%: (fraction of positives in it) / (fraction of cases in it), Eq. 4.3."""
    k = LIFT_FRACTION * len(y)
    return _expected_top_positives(_rank(y, Q), k) / y.sum() / LIFT_FRACTION


def _bep(y: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """Precision at the cut where precision equals recall: the top n_pos cases."""
    n_pos = float(y.sum())
    return _expected_top_positives(_rank(y, Q), n_pos) / n_pos


def _apr(y: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """Eleven-point interpolated average precision (App. 4.C).

    Thresholds sit between distinct predicted values (tied cases enter together). The precision
    at recall level r is the highest precision at any threshold whose recall is >= r.
    """
    r = _rank(y, Q)
    n_pos = int(y.sum())
    tp = np.take_along_axis(np.cumsum(r.ys, axis=1), r.end, axis=1)
    precision = tp / (r.end + 1)
    best_from_here = np.maximum.accumulate(precision[:, ::-1], axis=1)[:, ::-1]
    total = np.zeros(len(Q))
    for level in range(APR_RECALL_LEVELS):
        # first threshold with recall >= level/10, compared in integers
        first = ((APR_RECALL_LEVELS - 1) * tp < level * n_pos).sum(axis=1)
        total += best_from_here[np.arange(len(Q)), first]
    return total / APR_RECALL_LEVELS


# --------------------------------------------------------------------------- multiclass


def _per_class(binary: BatchFn) -> BatchFn:
    """Macro average one-vs-rest of a binary metric over the classes present in y."""

    def batch(y: np.ndarray, Q: np.ndarray) -> np.ndarray:
        present = np.unique(y)
        return np.mean([binary(y == c, Q[..., c]) for c in present], axis=0)

    return batch


def _acc_multi(y: np.ndarray, Q: np.ndarray) -> np.ndarray:
    return (Q.argmax(axis=2) == y).mean(axis=1)


def _fsc_multi(y: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """Macro F-score of the arg-max class over the classes present in y."""
    pred = Q.argmax(axis=2)
    scores = []
    for c in np.unique(y):
        pred_c = pred == c
        tp = (pred_c & (y == c)).sum(axis=1)
        scores.append(2.0 * tp / (pred_c.sum(axis=1) + (y == c).sum()))
    return np.mean(scores, axis=0)


def _rms_multi(y: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """RMSE over all N * C class probabilities (equals binary RMSE for C = 2)."""
    onehot = np.eye(Q.shape[2])[y]
    return np.sqrt(((Q - onehot) ** 2).mean(axis=(1, 2)))


def _mxe_multi(y: np.ndarray, Q: np.ndarray) -> np.ndarray:
    q = np.take_along_axis(Q, y[None, :, None], axis=2)[..., 0]
    return -np.log(np.clip(q, EPS, 1.0)).mean(axis=1)


_BINARY: dict[str, tuple[BatchFn, bool, str]] = {
    "acc": (_acc, True, "threshold"),
    "fsc": (_fsc, True, "threshold"),
    "lft": (_lft, True, "threshold"),
    "roc": (_roc, True, "rank"),
    "apr": (_apr, True, "rank"),
    "bep": (_bep, True, "rank"),
    "rms": (_rms, False, "probability"),
    "mxe": (_mxe, False, "probability"),
}
_MULTI: dict[str, BatchFn] = {
    "acc": _acc_multi,
    "fsc": _fsc_multi,
    "lft": _per_class(_lft),
    "roc": _per_class(_roc),
    "apr": _per_class(_apr),
    "bep": _per_class(_bep),
    "rms": _rms_multi,
    "mxe": _mxe_multi,
}


def _builtin(name: str) -> Metric:
    binary, gib, kind = _BINARY[name]
    multi = _MULTI[name]

    def batch(y: np.ndarray, Q: np.ndarray) -> np.ndarray:
        return binary(y.astype(bool), Q) if Q.ndim == 2 else multi(y, Q)

    return Metric(name=name, batch=batch, greater_is_better=gib, kind=kind)


_REGISTRY: dict[str, Metric] = {name: _builtin(name) for name in METRICS}


# --------------------------------------------------------------------------- regression


def _rmse(y: np.ndarray, Q: np.ndarray) -> np.ndarray:
    return np.sqrt(((Q - y) ** 2).mean(axis=1))


def _mae(y: np.ndarray, Q: np.ndarray) -> np.ndarray:
    return np.abs(Q - y).mean(axis=1)


def _r2(y: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """Coefficient of determination ``1 - SSE / SST``; with a constant target (SST = 0) 1 for a
    perfect prediction and 0 otherwise, as scikit-learn's ``r2_score``. Constant is judged on
    the values, not on SST: the mean of three 0.1s is not 0.1 in floating point, and the
    rounding error's SST (~1e-34) would make R² about -1e31."""
    sse = ((Q - y) ** 2).sum(axis=1)
    if y.min() == y.max():
        return np.where(sse == 0.0, 1.0, 0.0)
    return 1.0 - sse / float(((y - y.mean()) ** 2).sum())


_REGRESSION: dict[str, tuple[BatchFn, bool]] = {
    "rmse": (_rmse, False),
    "mae": (_mae, False),
    "r2": (_r2, True),
}
for _name, (_fn, _gib) in _REGRESSION.items():
    _REGISTRY[_name] = Metric(_name, _fn, _gib, kind="error", task="regression")


def make_metric(
    func: Callable[[np.ndarray, np.ndarray], float],
    greater_is_better: bool = True,
    name: str | None = None,
    task: str = "classification",
) -> Metric:
    """Wrap ``func(y_true, prediction) -> float`` as a metric usable wherever a metric name is.

    Use ``greater_is_better=False`` for a loss and ``task="regression"`` for a metric of real
    targets and predictions. Batch scoring calls ``func`` once per row.
    """
    if not callable(func):
        raise TypeError(f"make_metric needs a callable func(y_true, prediction); got {func!r}")
    if task not in TASKS:
        raise ValueError(f"make_metric task={task!r}; use one of {TASKS}")

    def batch(y: np.ndarray, Q: np.ndarray) -> np.ndarray:
        return np.array([float(func(y, q)) for q in Q])

    label = name or getattr(func, "__name__", "custom")
    return Metric(label, batch, greater_is_better, kind="custom", task=task)


def resolve_metric(metric: str | Metric | Callable, task: str | None = None) -> Metric:
    """Return the :class:`Metric` for a name, a Metric, or a callable.

    A bare callable ``func(y_true, prediction) -> float`` is maximised unless it carries an
    attribute ``greater_is_better = False``; wrap losses with :func:`make_metric` to be explicit.
    ``task`` ("classification" or "regression"), where given, is the task the metric must serve:
    a bare callable gets it, and a named metric of the other task is refused.
    """
    if task is not None and task not in TASKS:
        raise ValueError(f"task={task!r}; use one of {TASKS}")
    if isinstance(metric, str):
        try:
            metric = _REGISTRY[metric.lower()]
        except KeyError:
            names = REGRESSION_METRICS if task == "regression" else METRICS
            raise ValueError(
                f"unknown metric {metric!r}; choose one of {', '.join(names)} "
                "or pass a callable func(y_true, prediction) -> float"
            ) from None
    elif callable(metric) and not isinstance(metric, Metric):
        gib = bool(getattr(metric, "greater_is_better", True))
        return make_metric(metric, gib, task=task or "classification")
    if not isinstance(metric, Metric):
        raise TypeError(
            f"metric must be a name, a Metric or a callable; got {type(metric).__name__}"
        )
    if task is not None and metric.task != task:
        names = REGRESSION_METRICS if task == "regression" else METRICS
        raise ValueError(
            f"metric {metric.name!r} is a {metric.task} metric; {task} needs one of "
            f"{', '.join(names)} or a callable"
        )
    return metric


def greater_is_better(metric: str | Metric | Callable) -> bool:
    """True if larger values of ``metric`` are better (False for rms, mxe, rmse and mae)."""
    return resolve_metric(metric).greater_is_better


# --------------------------------------------------------------------------- input checks


def check_labels(y_true: np.ndarray, n_classes: int, *, name: str = "y_true") -> np.ndarray:
    """Return y as int64 after checking it is 1-D with labels in 0..n_classes-1."""
    y = np.asarray(y_true)
    if y.ndim != 1:
        raise ValueError(f"{name} must be 1-D; got shape {y.shape}")
    if y.dtype == bool:
        y = y.astype(np.int64)
    if not np.issubdtype(y.dtype, np.number):
        raise ValueError(
            f"{name} must hold integer labels 0..{n_classes - 1}; got dtype {y.dtype}. "
            "Encode string labels first (e.g. sklearn.preprocessing.LabelEncoder)."
        )
    if not np.all(np.isfinite(y)):
        raise ValueError(f"{name} contains NaN or infinite values; drop those rows")
    yi = y.astype(np.int64)
    if np.any(yi != y) or yi.min(initial=0) < 0 or yi.max(initial=0) >= n_classes:
        found = np.unique(y)[:10]
        raise ValueError(
            f"{name} must hold integer labels 0..{n_classes - 1} to match the "
            f"{n_classes} probability columns; found {found.tolist()}"
        )
    return yi


def check_probabilities(P: np.ndarray, *, name: str) -> None:
    """Raise a ValueError if P holds NaN, inf or values outside [0, 1]."""
    if not np.all(np.isfinite(P)):
        raise ValueError(f"{name} contains NaN or infinite values; fix or drop those predictions")
    lo, hi = float(P.min(initial=0.0)), float(P.max(initial=0.0))
    if lo < 0.0 or hi > 1.0:
        raise ValueError(f"{name} must hold probabilities in [0, 1]; found values in [{lo}, {hi}]")


def positive_class_layout(Q: np.ndarray, *, name: str) -> tuple[np.ndarray, int]:
    """Return ``(Q, n_classes)`` for a batch ``(M, N)`` or ``(M, N, C)``; a two-column binary
    batch ``(M, N, 2)`` becomes its positive column ``(M, N)``."""
    if Q.ndim == 3 and Q.shape[2] == 2:
        return Q[..., 1], 2
    if Q.ndim == 3 and Q.shape[2] < 2:
        raise ValueError(f"{name} needs at least two class columns; got {Q.shape[2]}")
    return Q, 2 if Q.ndim == 2 else Q.shape[2]


def _check_rows(y: np.ndarray, Q: np.ndarray, cases: str, what: str) -> None:
    """Raise a ValueError unless ``y`` has one case per row of the batch ``Q`` and at least one."""
    if len(y) != Q.shape[1]:
        raise ValueError(
            f"y_true has {len(y)} {cases} but {what} has {Q.shape[1]} rows; they must match"
        )
    if len(y) == 0:
        raise ValueError("y_true is empty; a metric needs at least one case")


def _as_batch(y_true, proba, *, batch: bool) -> tuple[np.ndarray, np.ndarray]:
    Q = np.asarray(proba, dtype=np.float64)
    base_ndim = Q.ndim - (1 if batch else 0)
    if base_ndim not in (1, 2):
        layout = "(M, N) or (M, N, C)" if batch else "(N,) or (N, C)"
        raise ValueError(f"proba must have shape {layout}; got {Q.shape}")
    if not batch:
        Q = Q[None]
    Q, n_classes = positive_class_layout(Q, name="proba")
    y = check_labels(y_true, n_classes)
    _check_rows(y, Q, "labels", "proba")
    check_probabilities(Q, name="proba")
    return y, Q


def _needs_both_classes(m: Metric, y: np.ndarray, n_classes: int) -> None:
    if m.kind != "custom" and m.name in ("lft", "roc", "apr", "bep", "fsc"):
        if len(np.unique(y)) < 2 and (n_classes == 2 or m.name != "fsc"):
            raise ValueError(
                f"metric {m.name!r} needs both positive and negative cases in y_true; "
                f"all labels are {int(y[0])}"
            )


def check_targets(y_true, *, name: str = "y_true") -> np.ndarray:
    """Return real targets as float64 after checking they are 1-D, numeric and finite."""
    y = np.asarray(y_true)
    if y.ndim != 1:
        raise ValueError(f"{name} must be 1-D; got shape {y.shape}")
    if not (np.issubdtype(y.dtype, np.number) or y.dtype == bool):
        raise ValueError(f"{name} must hold numbers for a regression metric; got dtype {y.dtype}")
    y = y.astype(np.float64)
    if not np.all(np.isfinite(y)):
        raise ValueError(f"{name} contains NaN or infinite values; drop those rows")
    return y


def check_predictions(P: np.ndarray, *, name: str) -> None:
    """Raise a ValueError if the real predictions ``P`` hold NaN or inf."""
    if not np.all(np.isfinite(P)):
        raise ValueError(f"{name} contains NaN or infinite values; fix or drop those predictions")


def _as_regression_batch(y_true, pred, *, batch: bool) -> tuple[np.ndarray, np.ndarray]:
    Q = np.asarray(pred, dtype=np.float64)
    if Q.ndim != (2 if batch else 1):
        layout = "(M, N)" if batch else "(N,)"
        raise ValueError(f"a regression prediction must have shape {layout}; got {Q.shape}")
    Q = Q if batch else Q[None]
    y = check_targets(y_true)
    _check_rows(y, Q, "targets", "the prediction")
    check_predictions(Q, name="prediction")
    return y, Q


def score_batch(metric: str | Metric | Callable, y_true, P) -> np.ndarray:
    """Score every row of ``P`` ((M, N) or (M, N, C)) against ``y_true``; returns (M,)."""
    m = resolve_metric(metric)
    if m.task == "regression":
        return m.batch(*_as_regression_batch(y_true, P, batch=True))
    y, Q = _as_batch(y_true, P, batch=True)
    _needs_both_classes(m, y, 2 if Q.ndim == 2 else Q.shape[2])
    return m.batch(y, Q)


def score(metric: str | Metric | Callable, y_true, proba) -> float:
    """Score one prediction: ``proba`` is ``(N,)`` (binary, or real predictions for a
    regression metric) or ``(N, C)``. Natural units: rms is the RMSE of the probabilities, mxe
    the mean cross-entropy in nats, rmse and mae are in the target's units."""
    m = resolve_metric(metric)
    if m.task == "regression":
        return float(m.batch(*_as_regression_batch(y_true, proba, batch=False))[0])
    y, Q = _as_batch(y_true, proba, batch=False)
    _needs_both_classes(m, y, 2 if Q.ndim == 2 else Q.shape[2])
    return float(m.batch(y, Q)[0])


# --------------------------------------------------------------------------- normalised scores


def baseline_score(metric: str | Metric | Callable, y_true, n_classes: int = 2) -> float:
    """Bottom of the normalised scale (§4.3.1): the best score of a constant prediction
    (for a regression metric, the better of the target's mean and median).

    The constants are the class prior and each certain prediction (all 0 / all 1 for binary,
    each one-hot vector for multiclass). For every metric but FSC the prior wins, which is the
    dissertation's "predict p for every case"; for FSC the prior predicts no positives at the 0.5
    threshold, and all-positive reproduces Table 4.10's FSC bottoms (e.g. ADULT 0.398).
    """
    m = resolve_metric(metric)
    if m.task == "regression":
        # the best constant for squared error is the mean, for absolute error the median
        y = check_targets(y_true)
        constants = np.array([y.mean(), np.median(y)])[:, None] * np.ones(len(y))
        values = m.batch(y, constants)
        return float(values.max() if m.greater_is_better else values.min())
    y = check_labels(y_true, n_classes)
    N = len(y)
    prior = np.bincount(y, minlength=n_classes) / N
    if n_classes == 2:
        constants = np.array([prior[1], 0.0, 1.0])[:, None] * np.ones(N)
    else:
        rows = np.vstack([prior, np.eye(n_classes)])
        constants = np.repeat(rows[:, None, :], N, axis=1)
    values = m.batch(y, constants)
    return float(values.max() if m.greater_is_better else values.min())


def normalized_scores(
    metric: str | Metric | Callable, y_true, scores, top: float | None = None, n_classes: int = 2
) -> np.ndarray:
    """Put raw scores on the §4.3.1 scale: 0 = best constant prediction, 1 = ``top``.

    ``top`` defaults to the best of ``scores`` (the best model or ensemble among those compared).
    """
    m = resolve_metric(metric)
    s = np.asarray(scores, dtype=np.float64)
    bottom = baseline_score(m, y_true, n_classes)
    if top is None:
        top = float(s.max() if m.greater_is_better else s.min())
    if top == bottom:
        raise ValueError(
            f"cannot normalise {m.name}: the top of the scale ({top}) equals the baseline; "
            "no model beats a constant prediction"
        )
    return (s - bottom) / (top - bottom)


def normalized_score(metric: str | Metric | Callable, y_true, proba, top: float) -> float:
    """Normalised score (§4.3.1) of one prediction, given the top of the scale."""
    Q = np.asarray(proba)
    n_classes = 2 if Q.ndim == 1 or Q.shape[-1] == 2 else Q.shape[-1]
    return float(
        normalized_scores(metric, y_true, [score(metric, y_true, proba)], top, n_classes)[0]
    )
