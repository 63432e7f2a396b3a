"""Decision trees, bagged trees, random forests, extra trees and AdaBoost (App. 4.B; extra trees
after Geurts et al. 2006) on the native view, each as a classifier and as a regressor.

Classification trees keep their own leaf class counts so that leaves can be Laplace- or
m-estimate-smoothed (Provost & Domingos 2003); bagged trees, forests and boosting yield one
member per prefix of their ensemble (e.g. boosting after 2, 4, ..., 2048 steps) from one
training run, for both tasks. AdaBoost.R2's member is the weighted median of its steps.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.ensemble import (
    AdaBoostClassifier,
    AdaBoostRegressor,
    ExtraTreesClassifier,
    RandomForestClassifier,
)
from sklearn.tree import DecisionTreeClassifier

from ._base import (
    Family,
    TreesRun,
    check_stages,
    full_proba,
    next_ends_past,
    register,
    staged,
    tree_input,
    tree_leaves,
    tree_values,
)
from ._regression import PrefixRun, SingleTreeRun, column
from ._tree_traits import (
    ADABOOST,
    BAGGED_TREES,
    EXTRA_TREES,
    RANDOM_FOREST,
    TREE,
    leaf_cap,
)
from ._treepack import PACK_CELLS, PacksTrees

FOREST_CHUNK = 4
"""Trees a forest under a time cap adds between looks at the clock."""


def grow_forest(forest, n_trees: int, X, y, time_cap: float | None = None):
    """``forest`` (a scikit-learn forest) fitted with ``n_trees`` trees. Under ``time_cap``
    seconds it grows ``FOREST_CHUNK`` trees at a time by warm start (the very trees of one
    fit: scikit-learn draws every tree's seed from the forest's) and stops before a chunk that
    would, at the pace so far, end past the cap: the forest keeps the trees it reached."""
    if not time_cap:
        return forest.set_params(n_estimators=n_trees).fit(X, y)
    start, grown = time.monotonic(), 0
    forest.set_params(warm_start=True)
    while grown < n_trees:
        grown = min(grown + FOREST_CHUNK, n_trees)
        forest.set_params(n_estimators=grown).fit(X, y)
        if next_ends_past(time_cap, start, grown, FOREST_CHUNK):
            break
    return forest.set_params(warm_start=False)


SMOOTHING = ("none", "laplace", "bayes")
"""Leaf estimates: raw frequencies; Laplace ``(n_c + 1) / (n + C)``; Bayesian (m-estimate with
the class prior, m = C): ``(n_c + C prior_c) / (n + C)``."""

TREE_PARAMS = {
    "criterion": "gini",
    "splitter": "best",
    "max_depth": None,
    "min_samples_leaf": 1,
    "ccp_alpha": 0.0,
    "smoothing": "none",
    "max_leaves": "auto",
}


def _tree(
    params: dict, random_state: int | np.random.Generator, n_rows: int = 0
) -> DecisionTreeClassifier:
    if params["smoothing"] not in SMOOTHING:
        raise ValueError(f"smoothing={params['smoothing']!r} is not one of {SMOOTHING}")
    return DecisionTreeClassifier(
        criterion=params["criterion"],
        splitter=params["splitter"],
        max_depth=params["max_depth"],
        min_samples_leaf=params["min_samples_leaf"],
        ccp_alpha=params["ccp_alpha"],
        max_leaf_nodes=leaf_cap(params.get("max_leaves"), n_rows),
        random_state=random_state,
    )


@dataclass
class SmoothedTree:
    """A fitted tree and its leaf probability table ``(n_nodes, C)`` from its own training
    counts, smoothed as asked."""

    tree: DecisionTreeClassifier
    table: np.ndarray

    @classmethod
    def fit(cls, tree, X, y, n_classes: int, smoothing: str) -> SmoothedTree:
        tree.fit(X, y)
        counts = np.zeros((tree.tree_.node_count, n_classes))
        np.add.at(counts, (tree.apply(X), y), 1.0)
        n = counts.sum(axis=1, keepdims=True)
        if smoothing == "laplace":
            table = (counts + 1.0) / (n + n_classes)
        elif smoothing == "bayes":
            prior = np.bincount(y, minlength=n_classes) / y.size
            table = (counts + n_classes * prior) / (n + n_classes)
        else:
            table = counts / np.where(n > 0, n, 1.0)
        return cls(tree, table)

    def node_proba(self) -> np.ndarray:
        """``(n_nodes, C)``: the probabilities a row in each node gets."""
        return self.table

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        return self.table[tree_leaves(self.tree, tree_input(X))]


@dataclass
class _StagedRun(PacksTrees, TreesRun):
    """Members are averages over the first ``s`` trees for each stage ``s``."""

    trees: list
    stages: tuple[int, ...]
    cumulative = True  # a stage needs the trees of every earlier one

    def fitted_trees(self) -> list:
        """The scikit-learn tree inside each smoothed or forest tree."""
        return [t.tree for t in self.trees]

    def predict(self, X: np.ndarray, stages=None) -> dict[str, np.ndarray]:
        """Members at the stages of index ``stages`` (all by default): only the trees up to
        the largest of them are evaluated. A small batch reads every tree's leaves from one
        walk (:class:`PacksTrees`) and sums them in one ``np.add.accumulate``, the sums a
        loop over the trees makes."""
        sizes = self._sizes(stages)
        X = tree_input(X)
        k = max(sizes)
        width = self.trees[0].node_proba().shape[1]
        if k * X.shape[0] * width <= PACK_CELLS:
            leaves = self.leaves_of(self.fitted_trees, k, X)
            proba = self.at_leaves(leaves, lambda: [t.node_proba() for t in self.trees])
            return {"none": _stage_means(proba, sizes)}
        out: list = [None] * len(sizes)
        total = 0.0
        for i, tree in enumerate(self.trees[:k], start=1):
            total = total + tree.predict_proba(X)
            for j, size in enumerate(sizes):
                if size == i:
                    out[j] = total / i
        return {"none": np.stack(out)}

    def _sizes(self, stages) -> list[int]:
        """Trees averaged by each stage of index ``stages`` (all by default)."""
        wanted = range(len(self.stages)) if stages is None else stages
        return [min(self.stages[i], len(self.trees)) for i in wanted]

    @staticmethod
    def predict_siblings(runs: list, X: np.ndarray, stages) -> list[dict] | None:
        """``[run.predict(X, stages) for run in runs]`` for fold siblings reading the same
        ``X``, the same numbers, with every sibling's trees walked in one compiled call
        (:meth:`PacksTrees.siblings_at_leaves`); None where the batch is too large for that."""
        X = tree_input(X)
        sizes = [run._sizes(stages) for run in runs]
        ks = [max(s) for s in sizes]
        width = runs[0].trees[0].node_proba().shape[1]
        if sum(ks) * X.shape[0] * width > PACK_CELLS:
            return None
        parts = runs[0].siblings_at_leaves(
            runs,
            ks,
            X,
            trees=lambda run: run.fitted_trees(),
            values=lambda run: [t.node_proba() for t in run.trees],
        )
        return [{"none": _stage_means(p, s)} for p, s in zip(parts, sizes, strict=True)]


def _stage_means(proba: np.ndarray, sizes: list[int]) -> np.ndarray:
    """``(len(sizes), n, ...)``: the mean of the first ``size`` trees' outputs ``proba``
    (``(k, n, ...)``) for each size, summed tree after tree as a loop over the trees sums."""
    sums = np.add.accumulate(proba, axis=0)
    return np.stack([sums[size - 1] / size for size in sizes])


def fit_tree(X, y, *, n_classes, params, stages, random_state):
    """One decision tree; pruned by cost-complexity (``ccp_alpha`` > 0) or depth/leaf limits
    (``max_leaves``, see ``leaf_cap``: capped on large folds)."""
    tree = _tree(params, random_state, len(y))
    tree = SmoothedTree.fit(tree, X, y, n_classes, params["smoothing"])
    return _StagedRun([tree], (1,))


def fit_bagged_trees(X, y, *, n_classes, params, stages, random_state, time_cap=None):
    """Bagged trees (Breiman 1996): each tree on a bootstrap sample, leaves smoothed on it;
    under ``time_cap`` seconds no tree starts that would, at the pace so far, end past it."""
    rng = np.random.default_rng(random_state)
    trees = []
    start = time.monotonic()
    for _ in range(max(stages)):
        if next_ends_past(time_cap, start, len(trees)):
            break
        idx = rng.integers(0, y.size, y.size)
        seed = int(rng.integers(2**31 - 1))
        tree = _tree(params, seed, y.size)
        trees.append(SmoothedTree.fit(tree, X[idx], y[idx], n_classes, params["smoothing"]))
    return _StagedRun(trees, stages)


@dataclass
class _ForestTree:
    tree: DecisionTreeClassifier
    classes: np.ndarray
    n_classes: int

    def node_proba(self) -> np.ndarray:
        """``(n_nodes, n_classes)``: the probabilities a row in each node gets."""
        return full_proba(tree_values(self.tree), self.classes, self.n_classes)

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        proba = tree_values(self.tree)[tree_leaves(self.tree, tree_input(X))]
        return full_proba(proba, self.classes, self.n_classes)


def fit_random_forest(X, y, *, n_classes, params, stages, random_state, time_cap=None):
    """Breiman's random forest; ``max_features`` features tried per split (clipped to the
    number of features), trees of at most ``leaf_cap`` leaves, members after the first ``s``
    trees (under ``time_cap``: the trees it reached, see ``grow_forest``)."""
    max_features = min(int(params["max_features"]), X.shape[1])
    return _staged_forest(
        RandomForestClassifier,
        max_features,
        X,
        y,
        n_classes,
        params,
        stages,
        random_state,
        time_cap,
    )


class ResamplingTree(ClassifierMixin, BaseEstimator):
    """A tree fitted on a sample drawn with the boosting weights: AdaBoost.M1 *with resampling*
    (§3.3.1), so that full trees are not perfect on their (reweighted) training set.

    AdaBoost.M1 stops when a weak learner's weighted error reaches 1/2, and a learner fitted on
    a resample can do that long before a reweighted one would. Such a step is refitted on the
    weighted full set instead, so boosting runs to the steps the spec asks for (2048 and beyond
    in App. 4.B)."""

    def __init__(
        self, criterion="gini", max_depth=None, min_samples_leaf=1, random_state=None
    ) -> None:
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.random_state = random_state

    def fit(self, X, y, sample_weight=None):
        rng = np.random.default_rng(self.random_state)
        w = np.full(y.size, 1.0 / y.size) if sample_weight is None else sample_weight
        w = w / w.sum()
        idx = rng.choice(y.size, size=y.size, p=w)
        self.tree_model_ = self._tree(int(rng.integers(2**31 - 1))).fit(X[idx], y[idx])
        if w[self.tree_model_.predict(X) != y].sum() >= 0.5:
            self.tree_model_ = self._tree(int(rng.integers(2**31 - 1))).fit(X, y, w)
        self.classes_ = np.unique(y)
        return self

    def _tree(self, seed: int) -> DecisionTreeClassifier:
        return DecisionTreeClassifier(
            criterion=self.criterion,
            max_depth=self.max_depth,
            min_samples_leaf=self.min_samples_leaf,
            random_state=seed,
        )

    def predict(self, X):
        return self.tree_model_.predict(X)


def _fitted_step(estimator) -> DecisionTreeClassifier:
    """The scikit-learn tree of one AdaBoost step: a :class:`ResamplingTree` holds its fitted
    tree, a plain step is one."""
    return estimator.tree_model_ if isinstance(estimator, ResamplingTree) else estimator


@dataclass
class _BoostRun(PacksTrees, TreesRun):
    """Weighted votes of the first ``s`` boosting steps for each stage ``s``."""

    estimators: list
    weights: np.ndarray
    n_classes: int
    stages: tuple[int, ...]
    cumulative = True  # a stage needs the steps of every earlier one

    def fitted_trees(self) -> list:
        """Each step's scikit-learn tree."""
        return [_fitted_step(est) for est in self.estimators]

    def predict(self, X: np.ndarray, stages=None) -> dict[str, np.ndarray]:
        """Members at the stages of index ``stages`` (all by default): only the steps up to
        the largest of them are evaluated."""
        from ensel.calibration import logistic_correction

        wanted = range(len(self.stages)) if stages is None else stages
        sizes = [min(self.stages[i], len(self.estimators)) for i in wanted]
        X = tree_input(X)
        leaves = self.leaves_of(self.fitted_trees, max(sizes), X)
        labels = self.cached("_node_labels", self._node_labels)
        steps = [lab[leaf] for lab, leaf in zip(labels, leaves, strict=False)]
        v = _staged_votes(steps, self.weights, self.n_classes, sizes, X.shape[0])
        total = v.sum(axis=-1, keepdims=True)
        with np.errstate(invalid="ignore"):  # inf / inf where a learner is perfect
            share = np.where(total > 0, v / np.where(total > 0, total, 1.0), 1.0 / self.n_classes)
        perfect = np.isposinf(total[..., 0])  # a perfect learner's vote is the whole share
        share[perfect] = logistic_correction(v[perfect])
        return {"none": share, "logistic": logistic_correction(v)}

    def _node_labels(self) -> list[np.ndarray]:
        """Per step: the class each node of its tree votes for (the rows' values only pick
        the node)."""
        return [
            tree.classes_.take(np.argmax(tree_values(tree), axis=1)).astype(np.intp)
            for tree in self.fitted_trees()
        ]


def _staged_votes(steps, weights, n_classes: int, sizes: list[int], n: int) -> np.ndarray:
    """``(len(sizes), n, n_classes)``: the weighted votes of the first ``size`` steps (each
    step the class it gives every row) for each size, summed step after step. A small batch
    sums all steps in one ``np.add.accumulate`` (adding 0.0 where a step votes for another
    class leaves a sum as it is), a larger one row by row in a loop: the same sums."""
    steps = steps[: max(sizes)]
    weights = np.asarray(weights[: len(steps)], dtype=np.float64)
    steps = steps[: weights.size]
    if steps and len(steps) * n * n_classes <= PACK_CELLS:
        hits = np.stack(steps)[..., None] == np.arange(n_classes)
        sums = np.add.accumulate(np.where(hits, weights[:, None, None], 0.0), axis=0)
        empty = np.zeros((n, n_classes))
        last = len(steps)
        return np.stack([sums[min(size, last) - 1] if size else empty for size in sizes])
    votes = np.zeros((n, n_classes))
    rows = np.arange(n)
    staged: list = [votes.copy() if size == 0 else None for size in sizes]
    for i, (labels, w) in enumerate(zip(steps, weights, strict=True), start=1):
        votes[rows, labels] += w
        for j, size in enumerate(sizes):
            if size == i:
                staged[j] = votes.copy()
    return np.stack(staged)


class _StepsInTime:
    """A scikit-learn AdaBoost that starts no step which would, at the pace of its steps so
    far, end past ``time_cap`` seconds (set before ``fit``; None: no cap). scikit-learn's fit
    loop ends where ``_boost`` returns no sample weights, as it does for a step too weak to
    keep, so the steps reached are a whole AdaBoost of that many steps."""

    time_cap: float | None = None

    def fit(self, X, y, sample_weight=None):
        self._started = time.monotonic()
        return super().fit(X, y, sample_weight)

    def _boost(self, iboost, X, y, sample_weight, random_state):
        if next_ends_past(self.time_cap, self._started, iboost):
            return None, None, None
        return super()._boost(iboost, X, y, sample_weight, random_state)


class _AdaBoostInTime(_StepsInTime, AdaBoostClassifier):
    pass


def fit_adaboost(X, y, *, n_classes, params, stages, random_state, time_cap=None):
    """AdaBoost (SAMME, which is AdaBoost.M1 for two classes) of trees or stumps
    (``max_depth: 1``). The uncalibrated member is the weighted vote share
    ``sum_t w_t [h_t = k] / sum_t w_t`` (for two classes ``(1 + F / sum alpha) / 2``); the
    ``logistic`` variant is the logistic correction of §3.3.1. Under ``time_cap`` seconds no
    step starts that would, at the pace so far, end past it: stages beyond the steps reached
    are the last step's."""
    if np.unique(y).size < 2:
        raise ValueError("adaboost needs at least two classes in the training fold")
    base = ResamplingTree if params["resample"] else DecisionTreeClassifier
    model = _AdaBoostInTime(
        estimator=base(
            criterion=params["criterion"],
            max_depth=params["max_depth"],
            min_samples_leaf=params["min_samples_leaf"],
        ),
        n_estimators=max(stages),
        learning_rate=params["learning_rate"],
        random_state=random_state,
    )
    model.time_cap = time_cap
    model.fit(X, y)
    n = len(model.estimators_)
    weights = np.asarray(model.estimator_weights_[:n], dtype=np.float64)
    # a learner with no weighted training error has alpha = inf (scikit-learn stops there and
    # records 1.0): keep the limit, so the logistic correction gives 0/1, not 0.73
    weights[np.asarray(model.estimator_errors_[:n]) <= 0.0] = np.inf
    return _BoostRun(list(model.estimators_), weights, n_classes, stages)


def fit_extra_trees(X, y, *, n_classes, params, stages, random_state, time_cap=None):
    """ExtraTreesClassifier (no bootstrap, random thresholds), members after the first ``s``
    trees; ``max_features`` is a fraction of the columns, ``"sqrt"`` or ``"log2"``."""
    max_features = params["max_features"]
    return _staged_forest(
        ExtraTreesClassifier, max_features, X, y, n_classes, params, stages, random_state, time_cap
    )


def _staged_forest(cls, max_features, X, y, n_classes, params, stages, random_state, time_cap):
    """A scikit-learn forest classifier ``cls`` of ``max(stages)`` trees of at most
    ``leaf_cap`` leaves, on one thread; members after the first ``s`` trees."""
    forest = cls(
        max_features=max_features,
        criterion=params["criterion"],
        min_samples_leaf=params["min_samples_leaf"],
        max_leaf_nodes=leaf_cap(params.get("max_leaves"), len(y)),
        n_jobs=1,
        random_state=random_state,
    )
    forest = grow_forest(forest, max(stages), X, y, time_cap)
    trees = [_ForestTree(t, forest.classes_, n_classes) for t in forest.estimators_]
    return _StagedRun(trees, stages)


def _needs_stages(params: dict, stages: tuple[int, ...] | None) -> None:
    if not stages:
        raise ValueError("this family needs stages (numbers of trees or boosting steps)")


def _validate_extra(params: dict[str, Any], stages: tuple[int, ...] | None) -> None:
    """Reject missing stages and a ``max_features`` that is no fraction, sqrt or log2."""
    _needs_stages(params, stages)
    mf = params["max_features"]
    if not (mf in ("sqrt", "log2") or (isinstance(mf, int | float) and 0 < mf <= 1)):
        raise ValueError(f"extra_trees max_features must be in (0, 1], 'sqrt' or 'log2': {mf!r}")


register(
    Family(
        name="tree",
        traits=TREE,
        native_missing=True,
        fit=fit_tree,
        params=TREE_PARAMS,
        view="native",
        test_params={"max_depth": 4, "smoothing": "laplace"},
    )
)
register(
    Family(
        name="bagged_trees",
        traits=BAGGED_TREES,
        native_missing=True,
        fit=fit_bagged_trees,
        stops_in_time=True,
        params=TREE_PARAMS,
        view="native",
        stages="trees",
        test_params={"max_depth": 4},
        test_stages=(2, 5),
        validate=_needs_stages,
    )
)
register(
    Family(
        name="random_forest",
        traits=RANDOM_FOREST,
        native_missing=True,
        fit=fit_random_forest,
        stops_in_time=True,
        params={
            "max_features": 4,
            "criterion": "gini",
            "min_samples_leaf": 1,
            "max_leaves": "auto",
        },
        view="native",
        stages="trees",
        test_params={"max_features": 2},
        test_stages=(4, 8),
        validate=_needs_stages,
    )
)
register(
    Family(
        name="adaboost",
        traits=ADABOOST,
        fit=fit_adaboost,
        stops_in_time=True,
        params={
            "max_depth": 1,
            "criterion": "gini",
            "min_samples_leaf": 1,
            "learning_rate": 1.0,
            "resample": True,
        },
        view="native",
        stages="boosting steps",
        variants=("logistic",),
        test_params={"max_depth": 1},
        test_stages=(2, 4, 8),
        validate=_needs_stages,
    )
)
register(
    Family(
        name="extra_trees",
        traits=EXTRA_TREES,
        fit=fit_extra_trees,
        stops_in_time=True,
        params={
            "max_features": "sqrt",
            "criterion": "gini",
            "min_samples_leaf": 1,
            "max_leaves": "auto",
        },
        view="native",
        native_missing=True,
        stages="trees",
        test_params={"max_features": 0.5},
        test_stages=(4, 8),
        validate=_validate_extra,
    )
)


# --------------------------------------------------------------------------- regressors

TREE_CRITERIA = ("squared_error", "friedman_mse", "absolute_error", "poisson")
REGRESSION_TREE_PARAMS = {
    "criterion": "squared_error",
    "max_depth": None,
    "min_samples_leaf": 1,
    "max_leaves": "auto",
}
FOREST_PARAMS = {"max_features": 1.0, "min_samples_leaf": 1, "max_leaves": "auto"}


def _regression_tree(params: dict, random_state, n_rows: int = 0):
    from sklearn.tree import DecisionTreeRegressor

    return DecisionTreeRegressor(
        criterion=params["criterion"],
        max_depth=params["max_depth"],
        min_samples_leaf=params["min_samples_leaf"],
        ccp_alpha=params["ccp_alpha"],
        max_leaf_nodes=leaf_cap(params.get("max_leaves"), n_rows),
        random_state=random_state,
    )


def fit_tree_regression(X, y, *, n_classes, params, stages, random_state):
    """One regression tree, pruned by cost complexity or limited by depth, leaf size and
    ``max_leaves`` (capped on large folds, see ``leaf_cap``)."""
    return SingleTreeRun(_regression_tree(params, random_state, len(y)).fit(X, y))


def fit_bagged_trees_regression(X, y, *, n_classes, params, stages, random_state, time_cap=None):
    """Bagged regression trees (Breiman 1996): each on a bootstrap sample, every feature tried
    at every split; members after the first ``s`` trees (under ``time_cap``: see
    ``grow_forest``)."""
    from sklearn.ensemble import RandomForestRegressor

    forest = RandomForestRegressor(
        criterion=params["criterion"],
        max_depth=params["max_depth"],
        min_samples_leaf=params["min_samples_leaf"],
        max_leaf_nodes=leaf_cap(params.get("max_leaves"), len(y)),
        max_features=1.0,
        n_jobs=1,
        random_state=random_state,
    )
    forest = grow_forest(forest, max(stages), X, y, time_cap)
    return PrefixRun(list(forest.estimators_), stages)


def _forest_regression(cls_name: str):
    def fit(X, y, *, n_classes, params, stages, random_state, time_cap=None):
        from sklearn import ensemble

        cls = getattr(ensemble, cls_name)
        max_features = params["max_features"]
        if isinstance(max_features, int) and not isinstance(max_features, bool):
            max_features = min(max_features, X.shape[1])
        forest = cls(
            max_features=max_features,
            min_samples_leaf=params["min_samples_leaf"],
            max_leaf_nodes=leaf_cap(params.get("max_leaves"), len(y)),
            n_jobs=1,
            random_state=random_state,
        )
        forest = grow_forest(forest, max(stages), X, y, time_cap)
        return PrefixRun(list(forest.estimators_), stages)

    fit.__doc__ = (
        f"scikit-learn's {cls_name}; ``max_features`` features tried per split (an integer is "
        "clipped to the number of features, a float is a fraction); members after the first "
        "``s`` trees (under ``time_cap``: the trees it reached, see ``grow_forest``)."
    )
    return fit


fit_random_forest_regression = _forest_regression("RandomForestRegressor")
fit_extra_trees_regression = _forest_regression("ExtraTreesRegressor")


@dataclass
class _MedianRun(TreesRun):
    """AdaBoost.R2's members: for each stage ``s`` the weighted median of the first ``s``
    estimators' predictions (scikit-learn's ``_get_median_predict`` on a prefix). Every
    estimator predicts once, not once per stage as ``staged_predict`` would."""

    estimators: list
    weights: np.ndarray
    stages: tuple[int, ...]

    def fitted_trees(self) -> list:
        return self.estimators

    def predict(self, X: np.ndarray) -> dict[str, np.ndarray]:
        n_used = min(max(self.stages), len(self.estimators))
        X = tree_input(X)
        preds = np.stack(
            [tree_values(e)[tree_leaves(e, X), 0] for e in self.estimators[:n_used]], axis=1
        )  # (n, T)
        rows = np.arange(preds.shape[0])
        out = []
        for s in self.stages:
            p = preds[:, : min(s, n_used)]
            order = np.argsort(p, axis=1, kind="stable")
            cdf = np.cumsum(self.weights[: p.shape[1]][order], axis=1)
            median = np.argmax(cdf >= 0.5 * cdf[:, -1:], axis=1)
            out.append(p[rows, order[rows, median]])
        return {"none": column(np.stack(out))}


class _AdaBoostR2InTime(_StepsInTime, AdaBoostRegressor):
    pass


def fit_adaboost_regression(X, y, *, n_classes, params, stages, random_state, time_cap=None):
    """AdaBoost.R2 (Drucker 1997) of regression trees; a member per listed number of steps, the
    weighted median of those steps' predictions (``time_cap``: as ``fit_adaboost``)."""
    from sklearn.tree import DecisionTreeRegressor

    model = _AdaBoostR2InTime(
        estimator=DecisionTreeRegressor(max_depth=params["max_depth"]),
        n_estimators=max(check_stages(stages, "adaboost steps")),
        learning_rate=params["learning_rate"],
        loss=params["loss"],
        random_state=random_state,
    )
    model.time_cap = time_cap
    model.fit(X, y)
    n = len(model.estimators_)  # fewer than asked when a step fits perfectly
    weights = np.asarray(model.estimator_weights_[:n], dtype=np.float64)
    return _MedianRun(list(model.estimators_), weights, stages)


def _validate_regression_tree(params: dict, stages: tuple[int, ...] | None) -> None:
    """Reject an unknown split criterion (and missing stages for bagged trees)."""
    if params["criterion"] not in TREE_CRITERIA:
        raise ValueError(f"criterion={params['criterion']!r} is not one of {TREE_CRITERIA}")


def _validate_bagged_regression(params: dict, stages: tuple[int, ...] | None) -> None:
    _validate_regression_tree(params, stages)
    check_stages(stages, "bagged_trees stages (numbers of trees)")


_NATIVE = {"view": "native", "native_missing": True}


def _forest_family(name: str, fit, params: dict, test_max_features, traits) -> Family:
    """A regression forest: native view, members after the first ``s`` trees of ``stages``."""
    return Family(
        name=name,
        traits=traits,
        fit=fit,
        params=params,
        stages="trees",
        stops_in_time=True,
        test_params={"max_features": test_max_features},
        test_stages=(4, 8),
        validate=staged(f"{name} stages (numbers of trees)"),
        **_NATIVE,
    )


for _family in (
    Family(
        name="tree",
        traits=TREE,
        fit=fit_tree_regression,
        params={**REGRESSION_TREE_PARAMS, "ccp_alpha": 0.0},
        test_params={"max_depth": 4},
        validate=_validate_regression_tree,
        **_NATIVE,
    ),
    Family(
        name="bagged_trees",
        traits=BAGGED_TREES,
        fit=fit_bagged_trees_regression,
        stops_in_time=True,
        params=REGRESSION_TREE_PARAMS,
        stages="trees",
        test_params={"max_depth": 4},
        test_stages=(2, 5),
        validate=_validate_bagged_regression,
        **_NATIVE,
    ),
    _forest_family(
        "random_forest",
        fit_random_forest_regression,
        {**FOREST_PARAMS, "max_features": 0.33},
        2,
        RANDOM_FOREST,
    ),
    _forest_family("extra_trees", fit_extra_trees_regression, FOREST_PARAMS, 1.0, EXTRA_TREES),
    Family(
        name="adaboost",
        traits=ADABOOST,
        fit=fit_adaboost_regression,
        stops_in_time=True,
        params={"max_depth": 3, "learning_rate": 1.0, "loss": "linear"},
        view="native",
        stages="boosting steps",
        test_params={"max_depth": 2},
        test_stages=(2, 4, 8),
        validate=staged("adaboost steps"),
    ),
):
    register(_family, task="regression")
