"""Regressors for numeric targets: the families of App. 4.B (and today's boosted trees) fitted to a
real ``y``, registered under ``task="regression"`` so a spec with ``task: regression`` finds them
by the same plain names (``linear``, ``svr``, ``knn``, ``tree``, ``bagged_trees``,
``random_forest``, ``extra_trees``, ``hist_gbdt``, ``xgboost``, ``lightgbm``, ``adaboost``,
``mlp``).

Every run returns ``{"none": (n_stages, n, 1)}`` predictions in the target's units. Staged
members come from one fit as for the classifiers: k-NN answers every k from one neighbour query,
forests and bagged trees every prefix of their trees, boosting every listed round count, the net
every listed epoch. There are no calibration variants. SVR and the net learn a standardised
target (epsilon and the learning rate then mean the same on every dataset) and predict in the
original units.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._base import Family, register
from .gbdt import validate_boosting
from .neighbors import _BUDGET, _MAX_BATCH, _MIN_DISTANCE, _nearest_first, _sq_distances
from .neural import check_stages
from .trees import leaf_cap

__all__ = [
    "fit_adaboost",
    "fit_bagged_trees",
    "fit_extra_trees",
    "fit_hist_gbdt",
    "fit_knn",
    "fit_lightgbm",
    "fit_linear",
    "fit_mlp",
    "fit_random_forest",
    "fit_svr",
    "fit_tree",
    "fit_xgboost",
]

SVR_KERNELS = ("linear", "rbf", "poly2")
KNN_WEIGHTINGS = ("uniform", "distance")


def _column(values: np.ndarray) -> np.ndarray:
    """``(n_stages, n)`` predictions in the run layout ``(n_stages, n, 1)``, float64."""
    return np.asarray(values, dtype=np.float64)[..., None]


@dataclass
class _Scale:
    """A target standardised on the training fold: learn ``(y - mean) / sd``, predict back."""

    mean: float
    sd: float

    @classmethod
    def fit(cls, y: np.ndarray) -> _Scale:
        sd = float(np.std(y))
        return cls(float(np.mean(y)), sd if sd > 0 else 1.0)

    def forward(self, y: np.ndarray) -> np.ndarray:
        return (y - self.mean) / self.sd

    def inverse(self, z: np.ndarray) -> np.ndarray:
        return z * self.sd + self.mean


@dataclass
class _SingleRun:
    """One fitted scikit-learn regressor, one member (optionally on a standardised target)."""

    model: Any
    scale: _Scale | None = None

    def predict(self, X: np.ndarray) -> dict[str, np.ndarray]:
        p = np.asarray(self.model.predict(X), dtype=np.float64)
        if self.scale is not None:
            p = self.scale.inverse(p)
        return {"none": _column(p[None])}


@dataclass
class _PrefixRun:
    """Members are the averages of the first ``s`` fitted trees for each stage ``s``."""

    trees: list
    stages: tuple[int, ...]

    def predict(self, X: np.ndarray) -> dict[str, np.ndarray]:
        X = np.ascontiguousarray(X, dtype=np.float32)  # what the trees read: one copy, not one each
        out, total = [], np.zeros(X.shape[0])
        for i, tree in enumerate(self.trees, start=1):
            total += tree.predict(X, check_input=False)
            if i in self.stages:
                out.append(total / i)
        out.extend([total / len(self.trees)] * (len(self.stages) - len(out)))
        return {"none": _column(np.stack(out))}


# --------------------------------------------------------------------------- linear, SVR


def fit_linear(X, y, *, n_classes, params, stages, random_state):
    """Least squares (``ridge: null``) or ridge regression with penalty ``ridge``."""
    from sklearn.linear_model import LinearRegression, Ridge

    ridge = params["ridge"]
    model = LinearRegression() if ridge is None else Ridge(alpha=float(ridge))
    return _SingleRun(model.fit(X, y))


def fit_svr(X, y, *, n_classes, params, stages, random_state):
    """Support vector regression on the standardised target; kernels and C as the classifier's
    grid (``linear`` uses liblinear's LinearSVR, the same model, far faster), ``epsilon`` in
    target standard deviations."""
    from sklearn.svm import SVR, LinearSVR

    kernel = params["kernel"]
    scale = _Scale.fit(y)
    if kernel == "linear":
        model = LinearSVR(
            C=params["C"],
            epsilon=params["epsilon"],
            loss="squared_epsilon_insensitive",
            dual=False,
            max_iter=params["max_iter"],
            random_state=random_state,
        )
    else:
        extra = {"kernel": "rbf", "gamma": params["width"]}
        if kernel == "poly2":
            extra = {"kernel": "poly", "degree": 2, "gamma": 1.0, "coef0": 1.0}
        model = SVR(C=params["C"], epsilon=params["epsilon"], max_iter=params["max_iter"], **extra)
    model.fit(X, scale.forward(y))
    return _SingleRun(model, scale)


def validate_svr(params: dict[str, Any], stages: tuple[int, ...] | None) -> None:
    """Reject an unknown kernel or a non-positive C, width or negative epsilon."""
    if params["kernel"] not in SVR_KERNELS:
        raise ValueError(f"svr kernel={params['kernel']!r} is not one of {SVR_KERNELS}")
    if not params["C"] > 0 or not params["width"] > 0 or params["epsilon"] < 0:
        raise ValueError(f"svr needs C > 0, width > 0 and epsilon >= 0, got {params!r}")


# --------------------------------------------------------------------------- k-NN


@dataclass
class _KnnRun:
    """The training fold for distance queries; each stage is a value of k."""

    X: np.ndarray
    y: np.ndarray
    weighting: str
    stages: tuple[int, ...]

    def predict(self, X: np.ndarray) -> dict[str, np.ndarray]:
        """Means of the k nearest targets for every k at once: sort the nearest max-k once
        (ties by training index, as the classifier's k-NN), then cumulative sums of the
        (inverse-distance weighted) targets."""
        X = np.asarray(X, dtype=float)
        n_train = len(self.y)
        ks = np.minimum(np.asarray(self.stages), n_train)
        k_max = int(ks.max())
        out = np.empty((len(ks), len(X)))
        sq_train = np.einsum("ij,ij->i", self.X, self.X)
        rows = int(np.clip(_BUDGET // n_train, 1, _MAX_BATCH))
        for start in range(0, len(X), rows):
            sq = _sq_distances(X[start : start + rows], self.X, sq_train)
            order = _nearest_first(sq, k_max)
            targets = self.y[order]
            if self.weighting == "distance":
                d = np.sqrt(np.take_along_axis(sq, order, axis=1))
                w = 1.0 / np.maximum(d, _MIN_DISTANCE)
            else:
                w = np.ones_like(targets)
            num = np.cumsum(w * targets, axis=1)[:, ks - 1]
            den = np.cumsum(w, axis=1)[:, ks - 1]
            out[:, start : start + rows] = (num / den).T
        return {"none": _column(out)}


def fit_knn(X, y, *, n_classes, params, stages, random_state):
    """Store the training fold; the members are k-NN regressors for every k in ``stages``."""
    validate_knn(params, stages)
    stages = tuple(int(s) for s in stages)
    return _KnnRun(np.asarray(X, float), np.asarray(y, float), params["weighting"], stages)


def validate_knn(params: dict[str, Any], stages: tuple[int, ...] | None) -> None:
    """Reject an unknown weighting or missing values of k."""
    if params["weighting"] not in KNN_WEIGHTINGS:
        raise ValueError(f"knn weighting={params['weighting']!r} is not one of {KNN_WEIGHTINGS}")
    check_stages(stages, "knn stages (the values of k)")


# --------------------------------------------------------------------------- trees


TREE_CRITERIA = ("squared_error", "friedman_mse", "absolute_error", "poisson")


def _tree(params: dict, random_state, n_rows: int = 0) -> Any:
    from sklearn.tree import DecisionTreeRegressor

    return DecisionTreeRegressor(
        criterion=params["criterion"],
        max_depth=params["max_depth"],
        min_samples_leaf=params["min_samples_leaf"],
        ccp_alpha=params["ccp_alpha"],
        max_leaf_nodes=leaf_cap(params.get("max_leaves"), n_rows),
        random_state=random_state,
    )


def fit_tree(X, y, *, n_classes, params, stages, random_state):
    """One regression tree, pruned by cost complexity or limited by depth, leaf size and
    ``max_leaves`` (capped on large folds, see ``trees.leaf_cap``)."""
    return _SingleRun(_tree(params, random_state, len(y)).fit(X, y))


def fit_bagged_trees(X, y, *, n_classes, params, stages, random_state):
    """Bagged regression trees (Breiman 1996): each on a bootstrap sample, every feature tried
    at every split; members after the first ``s`` trees."""
    from sklearn.ensemble import RandomForestRegressor

    forest = RandomForestRegressor(
        n_estimators=max(stages),
        criterion=params["criterion"],
        max_depth=params["max_depth"],
        min_samples_leaf=params["min_samples_leaf"],
        max_leaf_nodes=leaf_cap(params.get("max_leaves"), len(y)),
        max_features=1.0,
        n_jobs=1,
        random_state=random_state,
    ).fit(X, y)
    return _PrefixRun(list(forest.estimators_), stages)


def _forest(cls_name: str):
    def fit(X, y, *, n_classes, params, stages, random_state):
        from sklearn import ensemble

        cls = getattr(ensemble, cls_name)
        max_features = params["max_features"]
        if isinstance(max_features, int) and not isinstance(max_features, bool):
            max_features = min(max_features, X.shape[1])
        forest = cls(
            n_estimators=max(stages),
            max_features=max_features,
            min_samples_leaf=params["min_samples_leaf"],
            max_leaf_nodes=leaf_cap(params.get("max_leaves"), len(y)),
            n_jobs=1,
            random_state=random_state,
        ).fit(X, y)
        return _PrefixRun(list(forest.estimators_), stages)

    fit.__doc__ = (
        f"scikit-learn's {cls_name}; ``max_features`` features tried per split (an integer is "
        "clipped to the number of features, a float is a fraction); members after the first "
        "``s`` trees."
    )
    return fit


fit_random_forest = _forest("RandomForestRegressor")
fit_extra_trees = _forest("ExtraTreesRegressor")


# --------------------------------------------------------------------------- boosting


@dataclass
class _StagedPredictRun:
    """A boosted model whose ``staged_predict`` yields the prediction after every step; the
    members keep the steps in ``stages`` (HistGradientBoosting's sum of trees)."""

    model: Any
    stages: tuple[int, ...]
    single_thread: bool = False  # HistGradientBoosting: predict on one OpenMP thread

    def predict(self, X: np.ndarray) -> dict[str, np.ndarray]:
        from contextlib import nullcontext

        from threadpoolctl import threadpool_limits

        wanted = set(self.stages)
        out, last = {}, None
        limit = threadpool_limits(1, user_api="openmp") if self.single_thread else nullcontext()
        with limit:
            for i, p in enumerate(self.model.staged_predict(X), start=1):
                last = p
                if i in wanted:
                    out[i] = p
        # a model that stopped early (a perfect fit) repeats its last prediction
        return {"none": _column(np.stack([out.get(s, last) for s in self.stages]))}


def fit_hist_gbdt(X, y, *, n_classes, params, stages, random_state, categorical=None):
    """scikit-learn's HistGradientBoostingRegressor, ``max(stages)`` iterations without early
    stopping; a member per listed iteration count (the same model as one trained that long).
    Categorical columns of the native view are split natively (as the classifier's hist_gbdt:
    unseen codes count as missing); one OpenMP thread (the builder parallelises across runs)."""
    from sklearn.ensemble import HistGradientBoostingRegressor
    from threadpoolctl import threadpool_limits

    from .hist_gbdt import MAX_BINS, categorical_mask

    X = np.asarray(X, dtype=np.float64)
    mask = categorical_mask(X.shape[1], categorical)
    if mask.any():
        X = X.copy()
        cat = X[:, mask]
        cat[cat < 0] = np.nan
        X[:, mask] = cat
    model = HistGradientBoostingRegressor(
        loss=params["loss"],
        learning_rate=params["learning_rate"],
        max_iter=max(check_stages(stages, "hist_gbdt iterations")),
        max_leaf_nodes=params["max_leaf_nodes"],
        min_samples_leaf=params["min_samples_leaf"],
        l2_regularization=params["l2_regularization"],
        max_bins=MAX_BINS,
        categorical_features=mask if mask.any() else None,
        early_stopping=False,
        random_state=random_state,
    )
    with threadpool_limits(1, user_api="openmp"):
        model.fit(X, y)
    return _StagedPredictRun(model, stages, single_thread=True)


@dataclass
class _MedianRun:
    """AdaBoost.R2's members: for each stage ``s`` the weighted median of the first ``s``
    estimators' predictions (scikit-learn's ``_get_median_predict`` on a prefix). Every
    estimator predicts once, not once per stage as ``staged_predict`` would."""

    estimators: list
    weights: np.ndarray
    stages: tuple[int, ...]

    def predict(self, X: np.ndarray) -> dict[str, np.ndarray]:
        n_used = min(max(self.stages), len(self.estimators))
        preds = np.stack([e.predict(X) for e in self.estimators[:n_used]], axis=1)  # (n, T)
        rows = np.arange(preds.shape[0])
        out = []
        for s in self.stages:
            p = preds[:, : min(s, n_used)]
            order = np.argsort(p, axis=1, kind="stable")
            cdf = np.cumsum(self.weights[: p.shape[1]][order], axis=1)
            median = np.argmax(cdf >= 0.5 * cdf[:, -1:], axis=1)
            out.append(p[rows, order[rows, median]])
        return {"none": _column(np.stack(out))}


def fit_adaboost(X, y, *, n_classes, params, stages, random_state):
    """AdaBoost.R2 (Drucker 1997) of regression trees; a member per listed number of steps, the
    weighted median of those steps' predictions."""
    from sklearn.ensemble import AdaBoostRegressor
    from sklearn.tree import DecisionTreeRegressor

    model = AdaBoostRegressor(
        estimator=DecisionTreeRegressor(max_depth=params["max_depth"]),
        n_estimators=max(check_stages(stages, "adaboost steps")),
        learning_rate=params["learning_rate"],
        loss=params["loss"],
        random_state=random_state,
    ).fit(X, y)
    n = len(model.estimators_)  # fewer than asked when a step fits perfectly
    weights = np.asarray(model.estimator_weights_[:n], dtype=np.float64)
    return _MedianRun(list(model.estimators_), weights, stages)


@dataclass
class _RoundsRun:
    """An XGBRegressor or LGBMRegressor and the rounds each member keeps."""

    model: Any
    kind: str
    stages: tuple[int, ...]

    def predict(self, X: np.ndarray) -> dict[str, np.ndarray]:
        out = np.empty((len(self.stages), X.shape[0]))
        for i, s in enumerate(self.stages):
            if self.kind == "xgboost":
                out[i] = self.model.predict(X, iteration_range=(0, s))
            else:
                out[i] = self.model.predict(X, num_iteration=s)
        return {"none": _column(out)}


def fit_xgboost(X, y, *, n_classes, params, stages, random_state):
    """XGBoost regression (squared error), histogram trees, ``max(stages)`` rounds, one thread."""
    from xgboost import XGBRegressor

    model = XGBRegressor(
        n_estimators=max(check_stages(stages, "xgboost rounds")),
        max_depth=params["max_depth"],
        learning_rate=params["learning_rate"],
        subsample=params["subsample"],
        colsample_bytree=params["colsample_bytree"],
        min_child_weight=params["min_child_weight"],
        reg_lambda=params["reg_lambda"],
        tree_method="hist",
        n_jobs=1,
        verbosity=0,
        random_state=random_state,
    ).fit(X, y)
    return _RoundsRun(model, "xgboost", stages)


def fit_lightgbm(X, y, *, n_classes, params, stages, random_state):
    """LightGBM regression (L2), ``max(stages)`` rounds, one thread, deterministic."""
    from lightgbm import LGBMRegressor

    model = LGBMRegressor(
        n_estimators=max(check_stages(stages, "lightgbm rounds")),
        num_leaves=params["num_leaves"],
        learning_rate=params["learning_rate"],
        subsample=params["subsample"],
        subsample_freq=1,
        colsample_bytree=params["colsample_bytree"],
        min_child_samples=params["min_child_samples"],
        reg_lambda=params["reg_lambda"],
        n_jobs=1,
        verbosity=-1,
        random_state=random_state % (2**31 - 1),
        deterministic=True,
        force_row_wise=True,
    ).fit(X, y)
    return _RoundsRun(model, "lightgbm", stages)


# --------------------------------------------------------------------------- neural net


@dataclass
class _NetRun:
    """Weight snapshots ``(W1, b1, w2, b2)`` of a one-hidden-layer tanh net with a linear output,
    one per stage, and the target scale it learned on."""

    snapshots: list[tuple[np.ndarray, np.ndarray, np.ndarray, float]]
    scale: _Scale

    def predict(self, X: np.ndarray) -> dict[str, np.ndarray]:
        X = np.asarray(X, dtype=np.float64)
        out = np.empty((len(self.snapshots), X.shape[0]))
        with np.errstate(over="ignore", invalid="ignore"):
            for i, (w1, b1, w2, b2) in enumerate(self.snapshots):
                out[i] = self.scale.inverse(np.tanh(X @ w1 + b1) @ w2 + b2)
        # a diverged net says nothing: the training mean rather than NaN
        out[~np.isfinite(out)] = self.scale.mean
        return {"none": _column(out)}


def fit_mlp(X, y, *, n_classes, params, stages, random_state):
    """One hidden tanh layer, linear output, squared error on the standardised target, trained
    by mini-batch SGD with momentum (``v = m v + g; w -= lr v``, as ``torch.optim.SGD``);
    snapshots after each epoch in ``stages``. Weights start as PyTorch's default Linear layer
    draws them; one ``np.random.default_rng(random_state)`` draws them and each epoch's order."""
    epochs = check_stages(stages, "mlp epochs")
    wanted = set(epochs)
    hidden, batch = int(params["hidden"]), int(params["batch_size"])
    lr, momentum = float(params["lr"]), float(params["momentum"])
    X = np.asarray(X, dtype=np.float64)
    scale = _Scale.fit(np.asarray(y, dtype=np.float64))
    t = scale.forward(np.asarray(y, dtype=np.float64))
    n, d = X.shape
    rng = np.random.default_rng(random_state)
    b_in, b_hid = 1.0 / np.sqrt(max(d, 1)), 1.0 / np.sqrt(hidden)
    w1 = rng.uniform(-b_in, b_in, (hidden, d)).T.copy()
    b1 = rng.uniform(-b_in, b_in, hidden)
    w2 = rng.uniform(-b_hid, b_hid, hidden)
    b2 = float(rng.uniform(-b_hid, b_hid))
    v = [np.zeros_like(w1), np.zeros_like(b1), np.zeros_like(w2), 0.0]
    snaps = {}
    with np.errstate(over="ignore", invalid="ignore"):
        for epoch in range(1, max(epochs) + 1):
            order = rng.permutation(n)
            for start in range(0, n, batch):
                idx = order[start : start + batch]
                Xb, tb = X[idx], t[idx]
                H = np.tanh(Xb @ w1 + b1)
                r = (H @ w2 + b2 - tb) * (2.0 / len(idx))  # d(mean squared error)/d(output)
                dH = np.outer(r, w2) * (1.0 - H * H)
                grads = (Xb.T @ dH, dH.sum(axis=0), H.T @ r, float(r.sum()))
                for j, g in enumerate(grads):
                    v[j] = momentum * v[j] + g
                w1 -= lr * v[0]
                b1 -= lr * v[1]
                w2 -= lr * v[2]
                b2 -= lr * v[3]
            if epoch in wanted:
                snaps[epoch] = (w1.copy(), b1.copy(), w2.copy(), b2)
    return _NetRun([snaps[e] for e in epochs], scale)


def validate_mlp(params: dict[str, Any], stages: tuple[int, ...] | None) -> None:
    """Reject a non-positive size, a bad learning rate or momentum, or missing epochs."""
    for key in ("hidden", "batch_size"):
        if int(params[key]) < 1:
            raise ValueError(f"mlp {key} must be at least 1, got {params[key]!r}")
    if not params["lr"] > 0 or not 0 <= params["momentum"] < 1:
        raise ValueError(f"mlp needs lr > 0 and 0 <= momentum < 1, got {params!r}")
    check_stages(stages, "mlp epochs")


def _staged(what: str):
    def validate(params: dict[str, Any], stages: tuple[int, ...] | None) -> None:
        """Reject missing or non-positive stages."""
        check_stages(stages, what)

    return validate


def _validate_tree(params: dict[str, Any], stages: tuple[int, ...] | None) -> None:
    """Reject an unknown split criterion (and missing stages for bagged trees)."""
    if params["criterion"] not in TREE_CRITERIA:
        raise ValueError(f"criterion={params['criterion']!r} is not one of {TREE_CRITERIA}")


def _validate_bagged(params: dict[str, Any], stages: tuple[int, ...] | None) -> None:
    _validate_tree(params, stages)
    check_stages(stages, "bagged_trees stages (numbers of trees)")


_TREE_PARAMS = {
    "criterion": "squared_error",
    "max_depth": None,
    "min_samples_leaf": 1,
    "max_leaves": "auto",
}
_FOREST_PARAMS = {"max_features": 1.0, "min_samples_leaf": 1, "max_leaves": "auto"}

for _family in (
    Family(
        name="linear",
        fit=fit_linear,
        params={"ridge": None},
        test_params={"ridge": 1.0},
    ),
    Family(
        name="svr",
        fit=fit_svr,
        params={"kernel": "rbf", "C": 1.0, "width": 0.1, "epsilon": 0.1, "max_iter": 100_000},
        test_params={"kernel": "rbf", "C": 1.0, "width": 0.1},
        validate=validate_svr,
    ),
    Family(
        name="knn",
        fit=fit_knn,
        params={"weighting": "uniform"},
        stages="k",
        test_params={"weighting": "distance"},
        test_stages=(1, 5, 25),
        validate=validate_knn,
    ),
    Family(
        name="tree",
        fit=fit_tree,
        params={**_TREE_PARAMS, "ccp_alpha": 0.0},
        view="native",
        native_missing=True,
        test_params={"max_depth": 4},
        validate=_validate_tree,
    ),
    Family(
        name="bagged_trees",
        fit=fit_bagged_trees,
        params=_TREE_PARAMS,
        view="native",
        native_missing=True,
        stages="trees",
        test_params={"max_depth": 4},
        test_stages=(2, 5),
        validate=_validate_bagged,
    ),
    Family(
        name="random_forest",
        fit=fit_random_forest,
        params={**_FOREST_PARAMS, "max_features": 0.33},
        view="native",
        native_missing=True,
        stages="trees",
        test_params={"max_features": 2},
        test_stages=(4, 8),
        validate=_staged("random_forest stages (numbers of trees)"),
    ),
    Family(
        name="extra_trees",
        fit=fit_extra_trees,
        params=_FOREST_PARAMS,
        view="native",
        native_missing=True,
        stages="trees",
        test_params={"max_features": 1.0},
        test_stages=(4, 8),
        validate=_staged("extra_trees stages (numbers of trees)"),
    ),
    Family(
        name="hist_gbdt",
        fit=fit_hist_gbdt,
        params={
            "loss": "squared_error",
            "learning_rate": 0.1,
            "max_leaf_nodes": 31,
            "min_samples_leaf": 20,
            "l2_regularization": 0.0,
        },
        view="native",
        native_missing=True,
        stages="boosting iterations",
        categorical=True,
        test_params={"learning_rate": 0.3, "max_leaf_nodes": 7},
        test_stages=(2, 5),
        validate=_staged("hist_gbdt iterations"),
    ),
    Family(
        name="adaboost",
        fit=fit_adaboost,
        params={"max_depth": 3, "learning_rate": 1.0, "loss": "linear"},
        view="native",
        stages="boosting steps",
        test_params={"max_depth": 2},
        test_stages=(2, 4, 8),
        validate=_staged("adaboost steps"),
    ),
    Family(
        name="xgboost",
        fit=fit_xgboost,
        params={
            "max_depth": 6,
            "learning_rate": 0.1,
            "subsample": 1.0,
            "colsample_bytree": 1.0,
            "min_child_weight": 1.0,
            "reg_lambda": 1.0,
        },
        view="native",
        native_missing=True,
        stages="boosting rounds",
        requires=("xgboost",),
        test_params={"max_depth": 3, "learning_rate": 0.3, "subsample": 0.8},
        test_stages=(2, 5),
        validate=validate_boosting("xgboost"),
    ),
    Family(
        name="lightgbm",
        fit=fit_lightgbm,
        params={
            "num_leaves": 31,
            "learning_rate": 0.1,
            "subsample": 1.0,
            "colsample_bytree": 1.0,
            "min_child_samples": 20,
            "reg_lambda": 0.0,
        },
        view="native",
        native_missing=True,
        stages="boosting rounds",
        requires=("lightgbm",),
        test_params={"num_leaves": 7, "learning_rate": 0.3, "subsample": 0.8},
        test_stages=(2, 5),
        validate=validate_boosting("lightgbm"),
    ),
    Family(
        name="mlp",
        fit=fit_mlp,
        params={"hidden": 16, "momentum": 0.9, "lr": 0.01, "batch_size": 32},
        stages="epochs",
        test_params={"hidden": 4},
        test_stages=(1, 3),
        validate=validate_mlp,
    ),
):
    register(_family, task="regression")
