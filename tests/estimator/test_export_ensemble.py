"""The whole ensemble as one ONNX file: every family that exports, on small fitted ensembles
(binary, multiclass, regression; missing values and an unseen category at predict time),
reloaded under onnxruntime and compared with the estimator; the refusal of members that do
not export; and selection restricted to exportable members (``exportable=True``)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")
pytest.importorskip("skl2onnx")

from ensel.estimator import EnsembleSelectionClassifier, EnsembleSelectionRegressor  # noqa: E402
from ensel.estimator.export import TOLERANCE, feeds, unexportable  # noqa: E402
from ensel.estimator.export.assemble import columns_of  # noqa: E402

EXPORTING = [
    {"family": "logreg", "params": {"ridge": [1.0]}, "calibration": ["none", "platt"]},
    {
        "family": "tree",
        "params": {"max_depth": [3], "smoothing": "laplace"},
        "calibration": ["none", "isotonic"],
    },
    {"family": "random_forest", "params": {"max_features": [2]}, "stages": [4, 8]},
    {"family": "extra_trees", "params": {"max_features": 0.5}, "stages": [4]},
    {"family": "bagged_trees", "params": {"max_depth": 4}, "stages": [3]},
    {"family": "mlp", "params": {"hidden": 4, "activation": ["sigmoid", "tanh"]}, "stages": [2, 4]},
    {
        "family": "svm",
        "params": {"kernel": ["linear", "rbf", "poly2"], "C": 1.0, "width": 0.05},
        "calibration": ["none", "platt", "isotonic"],
    },
]


def _table(n_classes: int, n: int = 240, seed: int = 0):
    """Numeric columns with missing cells, a categorical column with missing cells, and a
    label that depends on both."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, 4)), columns=["a", "b", "c", "d"])
    colour = rng.choice(["red", "green", "blue"], n)
    score = X["a"] + 0.5 * X["b"] + (colour == "red")
    X.loc[rng.random(n) < 0.1, "a"] = np.nan
    X["colour"] = pd.Series(colour, dtype=object)
    X.loc[rng.random(n) < 0.08, "colour"] = None
    cuts = np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1])
    return X, np.searchsorted(cuts, score), score.to_numpy()


def _with_unseen(X: pd.DataFrame) -> pd.DataFrame:
    X = X.copy()
    X.loc[X.index[:3], "colour"] = "purple"
    return X


def _run(path, X: pd.DataFrame, estimator, output: str) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame = estimator._frame(X)
    return session.run([output], feeds(columns_of(estimator), frame))[0]


@pytest.mark.parametrize("n_classes", [2, 3])
def test_classifier_file_matches_predict_proba(tmp_path, n_classes):
    X, y, _ = _table(n_classes)
    clf = EnsembleSelectionClassifier(
        library={"name": "x", "families": EXPORTING}, cv=3, calibrate=True, n_jobs=1
    ).fit(X, y)
    held = _with_unseen(_table(n_classes, n=80, seed=1)[0])
    difference = clf.to_onnx(tmp_path / "m.onnx", held)
    assert difference <= TOLERANCE
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = clf.predict_proba(held)
        labels = clf.predict(held)
    got = _run(tmp_path / "m.onnx", held, clf, "probabilities")
    np.testing.assert_allclose(got, expected, atol=TOLERANCE, rtol=0)
    np.testing.assert_array_equal(_run(tmp_path / "m.onnx", held, clf, "label"), labels)
    import onnx

    props = {p.key: p.value for p in onnx.load(tmp_path / "m.onnx").metadata_props}
    assert json.loads(props["classes"]) == list(range(n_classes))
    assert json.loads(props["members"]) == list(clf.members_["id"])


@pytest.mark.parametrize("n_classes", [2, 3])
def test_every_exporting_family_when_all_members_are_kept(tmp_path, n_classes):
    """The weights spread over every member of the library, so each converter, view and
    calibration is in the file and compared (selection alone may keep a few)."""
    X, y, _ = _table(n_classes)
    clf = EnsembleSelectionClassifier(
        library={"name": "x", "families": EXPORTING},
        cv=3,
        calibrate=False,
        n_jobs=1,
        store=tmp_path / "store",
    ).fit(X, y)
    _keep_every_member(clf, tmp_path / "store")
    assert set(clf.members_["family"]) == {e["family"] for e in EXPORTING}
    assert set(clf.members_["calibration"]) == {"none", "platt", "isotonic"}
    held = _with_unseen(_table(n_classes, n=80, seed=2)[0])
    assert clf.to_onnx(tmp_path / "all.onnx", held) <= TOLERANCE


def test_binary_file_on_a_held_out_split_holds_only_nodes_it_reads(tmp_path):
    """cv=None: one sibling per run and five cross-fitted calibrators on it, each reading the
    same positive column; the file agrees with predict_proba and every node's output is read
    (the two-class pairs whose positive column members read directly are dropped)."""
    import onnx

    X, y, _ = _table(2, n=400)
    clf = EnsembleSelectionClassifier(
        library={"name": "x", "families": EXPORTING},
        cv=None,
        calibrate=False,
        n_jobs=1,
        store=tmp_path / "store",
    ).fit(X, y)
    _keep_every_member(clf, tmp_path / "store")
    assert {"platt", "isotonic"} <= set(clf.members_["calibration"])
    held = _with_unseen(_table(2, n=80, seed=3)[0])
    assert clf.to_onnx(tmp_path / "held.onnx", held) <= TOLERANCE
    graph = onnx.load(tmp_path / "held.onnx").graph
    read = {name for node in graph.node for name in node.input}
    read |= {o.name for o in graph.output}
    unread = [o for node in graph.node for o in node.output if o not in read]
    assert unread == []
    platt = [o for node in graph.node for o in node.output if o.startswith("platt_")]
    assert len(platt) == 1  # every Platt-calibrated member's columns in one Sigmoid


def _keep_every_member(estimator, store) -> None:
    """Give every member of the library in ``store`` an equal weight."""
    from ensel.library import Library

    library = Library.open(store)
    n = library.n_members
    estimator.weights_ = np.full(n, 1.0 / n)
    estimator.members_ = library.members.assign(weight=estimator.weights_)
    estimator.fitted_members_ = library.subset(library.members["id"])


def test_regressor_file_matches_predict(tmp_path):
    X, _, target = _table(2)
    spec = {
        "name": "r",
        "task": "regression",
        "families": [
            {"family": "linear", "params": {"ridge": [None, 1.0]}},
            {"family": "tree", "params": {"max_depth": [3]}},
            {"family": "bagged_trees", "params": {"max_depth": 4}, "stages": [3]},
            {"family": "random_forest", "params": {"max_features": 0.5}, "stages": [4, 8]},
            {"family": "extra_trees", "params": {"max_features": 1.0}, "stages": [4]},
        ],
    }
    reg = EnsembleSelectionRegressor(library=spec, cv=3, n_jobs=1, store=tmp_path / "s")
    _keep_every_member(reg.fit(X, 1e4 * target), tmp_path / "s")
    assert set(reg.members_["family"]) == {e["family"] for e in spec["families"]}
    held = _with_unseen(_table(2, n=60, seed=3)[0])
    assert reg.to_onnx(tmp_path / "r.onnx", held) <= TOLERANCE
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = reg.predict(held)
    got = _run(tmp_path / "r.onnx", held, reg, "prediction")
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, atol=TOLERANCE, rtol=0)


def test_refusal_names_the_members_in_one_line(tmp_path):
    X, y, _ = _table(2)
    spec = {
        "name": "k",
        "families": [
            {"family": "knn", "params": {"weighting": "uniform"}, "stages": [5]},
            {"family": "logreg", "params": {"ridge": 1.0}},
        ],
    }
    clf = EnsembleSelectionClassifier(library=spec, cv=3, n_jobs=1, store=tmp_path / "s")
    _keep_every_member(clf.fit(X, y), tmp_path / "s")
    knn = [m for m in clf.members_["id"] if m.startswith("knn")]
    assert unexportable(clf) == [f"{m} (family 'knn' has no ONNX converter)" for m in knn]
    with pytest.raises(ValueError) as err:
        clf.to_onnx(tmp_path / "m.onnx")
    message = str(err.value)
    assert "\n" not in message and all(m in message for m in knn)
    assert not (tmp_path / "m.onnx").exists()


def test_exportable_selects_only_exportable_members(tmp_path):
    X, y, _ = _table(2)
    spec = {
        "name": "k",
        "families": [
            {"family": "knn", "params": {"weighting": "uniform"}, "stages": [5, 25]},
            {"family": "logreg", "params": {"ridge": 1.0}},
            {"family": "tree", "params": {"max_depth": 2}, "calibration": ["none", "platt"]},
        ],
    }
    clf = EnsembleSelectionClassifier(library=spec, cv=3, n_jobs=1, exportable=True).fit(X, y)
    assert set(clf.members_["family"]) <= {"logreg", "tree"}
    report = clf.budget_.exportable
    assert report["members"] == 3 and report["of"] == 5
    assert np.isfinite(report["score_all"]) and np.isfinite(report["score_exportable"])
    assert clf.to_onnx(tmp_path / "m.onnx") <= TOLERANCE


def test_exportable_is_checked_as_a_parameter():
    X, y, _ = _table(2, n=60)
    with pytest.raises(ValueError, match="exportable"):
        EnsembleSelectionClassifier(library="tiny", exportable="yes").fit(X, y)


def test_cli_export_writes_a_checked_file(tmp_path, capsys):
    from ensel.cli import MODEL_FILE, main

    X, y, _ = _table(2, n=120)
    spec = {"name": "l", "families": [{"family": "logreg", "params": {"ridge": 1.0}}]}
    clf = EnsembleSelectionClassifier(library=spec, cv=3, n_jobs=1).fit(X, y)
    clf.save(tmp_path / MODEL_FILE)
    rows = tmp_path / "rows.csv"
    X.to_csv(rows, index=False)
    out = tmp_path / "m.onnx"
    assert main(["export", str(tmp_path), "--out", str(out), "--rows", str(rows)]) == 0
    assert out.is_file() and "largest difference from predict" in capsys.readouterr().out
    assert main(["export", str(tmp_path / "nowhere"), "--out", str(out)]) == 2


def test_refit_full_members_export(tmp_path):
    """After ``refit="full"`` a member is one model with one calibrator per calibrated stage."""
    X, y, _ = _table(2)
    clf = EnsembleSelectionClassifier(
        library={"name": "x", "families": EXPORTING[:3]}, cv=3, refit="full", n_jobs=1
    ).fit(X, y)
    assert all(len(f.siblings) == 1 for f in clf.fitted_members_.runs.values())
    held = _with_unseen(_table(2, n=60, seed=4)[0])
    assert clf.to_onnx(tmp_path / "m.onnx", held) <= TOLERANCE


BOOSTED = {
    "lightgbm": {"num_leaves": 7, "learning_rate": 0.3, "subsample": 0.8},
    "xgboost": {"max_depth": 3, "learning_rate": 0.3, "subsample": 0.8},
    "hist_gbdt": {"max_leaf_nodes": 7, "learning_rate": 0.3, "min_samples_leaf": 5},
}
NEEDS = {"lightgbm": "lightgbm", "xgboost": "xgboost", "hist_gbdt": "sklearn"}


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("family", sorted(BOOSTED))
def test_boosted_members_match_predict_proba(tmp_path, family, n_classes):
    """Every staged member (a prefix of rounds) of a booster that splits the colour natively,
    on rows with missing numeric cells, missing and unseen colours."""
    pytest.importorskip(NEEDS[family])
    X, y, _ = _table(n_classes)
    spec = {"name": "b", "families": [
        {"family": family, "params": BOOSTED[family], "stages": [1, 4, 12]}]}  # fmt: skip
    clf = EnsembleSelectionClassifier(
        library=spec, cv=2, calibrate=False, n_jobs=1, store=tmp_path / "s"
    ).fit(X, y)
    _keep_every_member(clf, tmp_path / "s")
    assert len(clf.members_) == 3 and unexportable(clf) == []
    held = _with_unseen(_table(n_classes, n=80, seed=5)[0])
    assert clf.to_onnx(tmp_path / "b.onnx", held) <= TOLERANCE
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = clf.predict_proba(held)
    got = _run(tmp_path / "b.onnx", held, clf, "probabilities")
    np.testing.assert_allclose(got, expected, atol=TOLERANCE, rtol=0)
    assert np.ptp(got[:, 0]) > 0.1  # the trees split: not a constant prediction
    import onnx

    nodes = onnx.load(tmp_path / "b.onnx").graph.node
    ensembles = [node for node in nodes if node.op_type == "TreeEnsemble"]
    assert len(ensembles) == 1  # both fold siblings and all three stages: one tree ensemble
    modes = onnx.numpy_helper.to_array(
        next(a.t for a in ensembles[0].attribute if a.name == "nodes_modes")
    )
    if family == "hist_gbdt":  # an unseen code goes the missing way: a derived column
        assert "Equal" in {node.op_type for node in nodes}
    else:
        assert 6 in modes  # the colour is split as a set of categories (BRANCH_MEMBER)


@pytest.mark.parametrize("family", sorted(BOOSTED))
def test_boosted_regressor_matches_predict(tmp_path, family):
    pytest.importorskip(NEEDS[family])
    X, _, target = _table(2)
    spec = {"name": "r", "task": "regression", "families": [
        {"family": family, "params": BOOSTED[family], "stages": [2, 8]}]}  # fmt: skip
    reg = EnsembleSelectionRegressor(library=spec, cv=2, n_jobs=1, store=tmp_path / "s")
    _keep_every_member(reg.fit(X, target), tmp_path / "s")
    held = _with_unseen(_table(2, n=60, seed=6)[0])
    assert reg.to_onnx(tmp_path / "r.onnx", held) <= TOLERANCE
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = reg.predict(held)
    np.testing.assert_allclose(
        _run(tmp_path / "r.onnx", held, reg, "prediction"), expected, atol=TOLERANCE, rtol=0
    )


@pytest.mark.parametrize("n_classes", [2, 3])
def test_adaboost_with_logistic_correction_matches_predict_proba(tmp_path, n_classes):
    """Vote shares, the logistic correction and Platt on top, every stage kept."""
    from ensel.estimator.export.assemble import why_not

    X, y, _ = _table(n_classes)
    spec = {"name": "a", "families": [{
        "family": "adaboost", "params": {"max_depth": [1, 2]}, "stages": [1, 4, 8],
        "calibration": ["none", "logistic", "platt"]}]}  # fmt: skip
    clf = EnsembleSelectionClassifier(
        library=spec, cv=2, calibrate=False, n_jobs=1, store=tmp_path / "s"
    ).fit(X, y)
    _keep_every_member(clf, tmp_path / "s")
    assert set(clf.members_["calibration"]) == {"none", "logistic", "platt"}
    assert why_not("adaboost", "native", "logistic", "classification") is None
    assert why_not("tree", "native", "logistic", "classification") is not None
    held = _with_unseen(_table(n_classes, n=80, seed=7)[0])
    assert clf.to_onnx(tmp_path / "a.onnx", held) <= TOLERANCE
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = clf.predict_proba(held)
    got = _run(tmp_path / "a.onnx", held, clf, "probabilities")
    np.testing.assert_allclose(got, expected, atol=TOLERANCE, rtol=0)


def _boxed(detectors) -> dict:
    families = [{"family": "logreg", "params": {"ridge": 1.0}}]
    return {"name": "d", "families": families, "detectors": [{"detector": d} for d in detectors]}


def test_risk_output_matches_combined_risk(tmp_path):
    """Rows inside the box, far outside it, with an unseen colour and with missing cells."""
    X, y, _ = _table(2)
    clf = EnsembleSelectionClassifier(library=_boxed(["box"]), cv=3, n_jobs=1).fit(X, y)
    held = _with_unseen(_table(2, n=80, seed=8)[0])
    held.loc[held.index[5:10], "b"] = 9.0
    held.loc[held.index[10:12], "c"] = -9.0
    assert clf.to_onnx(tmp_path / "r.onnx", held, risk=True) <= TOLERANCE
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = clf.risk(held)["combined"].to_numpy()
    got = _run(tmp_path / "r.onnx", held, clf, "risk")
    np.testing.assert_allclose(got, expected, atol=TOLERANCE, rtol=0)
    assert np.unique(np.round(got, 6)).size >= 2 and got.max() == 1.0
    from ensel.cli import MODEL_FILE, main

    clf.save(tmp_path / MODEL_FILE)
    assert main(["export", str(tmp_path), "--out", str(tmp_path / "c.onnx"), "--risk"]) == 0
    outputs = ort.InferenceSession(str(tmp_path / "c.onnx")).get_outputs()
    assert "risk" in [o.name for o in outputs]


def test_risk_output_with_an_isolation_forest(tmp_path):
    """Box and isolation forest both weighted; missing numeric and categorical cells, rows
    outside the box and unseen colours."""
    X, y, _ = _table(2)
    spec = _boxed(["box", "isolation_forest"])
    spec["detectors"][1]["params"] = {"n_estimators": 20}
    clf = EnsembleSelectionClassifier(library=spec, cv=3, n_jobs=1).fit(X, y)
    clf.detectors_.combination.weights[:] = [0.3, 0.7]  # both in, whatever selection chose
    held = _with_unseen(_table(2, n=80, seed=11)[0])
    held.loc[held.index[5:10], "b"] = 9.0
    held.loc[held.index[20:30], "colour"] = None
    assert clf.to_onnx(tmp_path / "i.onnx", held, risk=True) <= TOLERANCE
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = clf.risk(held)["combined"].to_numpy()
    got = _run(tmp_path / "i.onnx", held, clf, "risk")
    np.testing.assert_allclose(got, expected, atol=TOLERANCE, rtol=0)
    assert np.unique(np.round(got, 6)).size > 10  # the forest's scores, not only the box's


def test_risk_output_refuses_a_detector_without_graph_in_one_line(tmp_path):
    X, y, _ = _table(2)
    clf = EnsembleSelectionClassifier(library=_boxed(["box", "kde"]), cv=3, n_jobs=1).fit(X, y)
    clf.detectors_.combination.weights[:] = [0.5, 0.5]  # kde weighted, whatever selection chose
    with pytest.raises(ValueError) as err:
        clf.to_onnx(tmp_path / "r.onnx", risk=True)
    assert "kde" in str(err.value) and "\n" not in str(err.value)
    assert not (tmp_path / "r.onnx").exists()
    assert clf.to_onnx(tmp_path / "plain.onnx") <= TOLERANCE  # without the risk it exports


@pytest.mark.parametrize("n_classes", [2, 3])
def test_catboost_on_numeric_columns_matches_predict_proba(tmp_path, n_classes):
    """Every staged member of two depths, with missing cells in every column at predict time
    (CatBoost treats a column that had none in training its own way)."""
    pytest.importorskip("catboost")
    X, y, _ = _table(n_classes)
    spec = {"name": "c", "families": [{
        "family": "catboost", "params": {"depth": [2, 4], "learning_rate": 0.3},
        "stages": [1, 4, 12]}]}  # fmt: skip
    clf = EnsembleSelectionClassifier(
        library=spec, cv=2, calibrate=False, n_jobs=1, store=tmp_path / "s"
    ).fit(X.drop(columns="colour"), y)
    _keep_every_member(clf, tmp_path / "s")
    held = _table(n_classes, n=80, seed=9)[0].drop(columns="colour")
    rng = np.random.default_rng(0)
    for c in "bcd":
        held.loc[rng.random(len(held)) < 0.1, c] = np.nan
    assert clf.to_onnx(tmp_path / "c.onnx", held) <= TOLERANCE
    expected = clf.predict_proba(held)
    got = _run(tmp_path / "c.onnx", held, clf, "probabilities")
    np.testing.assert_allclose(got, expected, atol=TOLERANCE, rtol=0)
    import onnx

    model = onnx.load(tmp_path / "c.onnx")
    ops = [node.op_type for node in model.graph.node]
    assert ops.count("Greater") == 2  # per run: both fold siblings and all three stages
    # a tree's leaf index from its own levels: no constant grows with the square of the trees
    # (2 siblings x 12 trees x 16 leaves x K values is the largest table the graph needs)
    largest = max(int(np.prod(t.dims)) for t in model.graph.initializer)
    assert largest <= 2 * 12 * 16 * (1 if n_classes == 2 else n_classes)


def test_catboost_with_categorical_columns_is_not_exportable(tmp_path):
    pytest.importorskip("catboost")
    X, y, _ = _table(2)
    spec = {"name": "c", "families": [
        {"family": "catboost", "params": {"depth": 2}, "stages": [4]},
        {"family": "logreg", "params": {"ridge": 1.0}}]}  # fmt: skip
    clf = EnsembleSelectionClassifier(library=spec, cv=2, n_jobs=1, exportable=True).fit(X, y)
    assert set(clf.members_["family"]) == {"logreg"}
    report = clf.budget_.exportable
    assert report["members"] == 1 and report["of"] == 2  # catboost left out before selection
    assert clf.to_onnx(tmp_path / "m.onnx") <= TOLERANCE


@pytest.mark.parametrize("n_classes", [2, 3])
def test_naive_bayes_matches_predict_proba(tmp_path, n_classes):
    """The normal and discretized kinds export; the kernel kind is refused by name."""
    from ensel.estimator.export.assemble import why_not

    X, y, _ = _table(n_classes)
    spec = {"name": "n", "families": [
        {"family": "naive_bayes", "params": {"kind": ["normal", "discretized"]}}]}  # fmt: skip
    clf = EnsembleSelectionClassifier(
        library=spec, cv=2, calibrate=False, n_jobs=1, store=tmp_path / "s"
    ).fit(X, y)
    _keep_every_member(clf, tmp_path / "s")
    runs = {f.run.param_dict["kind"]: f.siblings[0][1] for f in clf.fitted_members_.runs.values()}
    assert any(len(c) for c in runs["discretized"].cuts)  # some feature is cut into bins
    held = _with_unseen(_table(n_classes, n=80, seed=10)[0])
    assert clf.to_onnx(tmp_path / "n.onnx", held) <= TOLERANCE
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = clf.predict_proba(held)
    got = _run(tmp_path / "n.onnx", held, clf, "probabilities")
    np.testing.assert_allclose(got, expected, atol=TOLERANCE, rtol=0)
    kernel = why_not("naive_bayes", "native", "none", "classification", {"kind": "kernel"})
    assert kernel is not None and "kernel" in kernel
