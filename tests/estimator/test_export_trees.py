"""The tree-ensemble writer of the exported graph (``estimator.export.trees``): several
forests, each on its own matrix, as one ``TreeEnsemble`` whose targets are the leaves' values
in double where each leaf row has one value, and otherwise the leaves' rows in a table of
leaves only, gathered; summed per forest in double and equal to scikit-learn's sums; float32
thresholds that a float32 input compares with as with the double ones."""

from __future__ import annotations

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

from sklearn.tree import DecisionTreeRegressor  # noqa: E402

from ensel.estimator.export._graph import Graph  # noqa: E402
from ensel.estimator.export.trees import (  # noqa: E402
    Forest,
    float32_threshold,
    leaf_sums,
    leaf_values,
    sklearn_tree,
    stage_sums,
)


def _trees(seed: int, n_trees: int, width: int = 3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(200, width))
    y = X[:, 0] + np.sin(3 * X[:, 1]) + 0.1 * rng.normal(size=200)
    return [
        DecisionTreeRegressor(max_depth=4, random_state=t).fit(X[t::2], y[t::2])
        for t in range(n_trees)
    ]


def _forest(trees, pair: bool = False) -> Forest:
    """The trees' values as one column, or with ``pair`` as two (``v``, ``1 - v``): leaf
    rows of more than one value, which the ensemble cannot give as one target."""
    forest = Forest(2 if pair else 1, rounded=True)
    for tree in trees:
        value = tree.tree_.value[:, 0, :]
        sklearn_tree(forest, tree.tree_, np.hstack([value, 1 - value]) if pair else value)
    return forest


def _attribute(model, name: str):
    return next(
        onnx.numpy_helper.to_array(a.t) if a.type == a.TENSOR else list(a.ints)
        for n in model.graph.node if n.op_type == "TreeEnsemble" for a in n.attribute
        if a.name == name
    )  # fmt: skip


def _run(g: Graph, output: str, feeds: dict, dims=("n", "m")):
    from onnx import TensorProto, helper

    inputs = [helper.make_tensor_value_info(k, TensorProto.DOUBLE, ["n", v.shape[1]])
              for k, v in feeds.items()]  # fmt: skip
    outputs = [helper.make_tensor_value_info(output, TensorProto.DOUBLE, list(dims))]
    g.nodes.append(helper.make_node("Identity", [g.nodes[-1].output[0]], [output]))
    model = g.model(inputs, outputs, "test")
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return model, session.run([output], feeds)[0]


def test_forests_on_their_own_matrices_are_one_tree_ensemble_summing_each():
    """Two forests of unequal sizes, on two matrices: one TreeEnsemble, each forest's sum
    equal to the sum of its trees' predictions; leaf rows of one value are the ensemble's
    own double outputs (one target per tree, the missing tree's target zero with no tree
    written for it): no table of leaves, nothing gathered or cast after it."""
    rng = np.random.default_rng(1)
    a, b = _trees(0, 3), _trees(1, 2)
    xa, xb = rng.normal(size=(50, 3)), rng.normal(size=(50, 3))
    xa[::7, 1] = np.nan
    g = Graph()
    leaf_sums(g, [("a", 3, _forest(a)), ("b", 3, _forest(b))], flat=True)
    model, got = _run(g, "sums", {"a": xa, "b": xb})
    ops = [node.op_type for node in model.graph.node]
    assert ops.count("TreeEnsemble") == 1 and "TreeEnsembleRegressor" not in ops
    assert "Gather" not in ops and ops.count("Cast") == 2  # the inputs rounded, read in double
    expected = np.column_stack([
        sum(t.predict(xa.astype(np.float32)) for t in a),
        sum(t.predict(xb.astype(np.float32)) for t in b),
    ])  # fmt: skip
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    leaves = np.concatenate([t.tree_.value[t.tree_.children_left == -1, 0, 0] for t in a + b])
    assert _attribute(model, "leaf_weights").dtype == np.float64
    np.testing.assert_array_equal(_attribute(model, "leaf_weights"), leaves)
    assert sorted(set(_attribute(model, "leaf_targetids"))) == [0, 1, 2, 3, 4]
    assert len(_attribute(model, "tree_roots")) == 5


def test_a_leaf_row_s_one_value_goes_to_its_own_column():
    """Trees adding to one of two columns each (a boosted multiclass round): each leaf's
    value is the target of its tree and column, summed per column as the trees' sums."""
    rng = np.random.default_rng(8)
    trees = _trees(9, 4)
    x = rng.normal(size=(30, 3))
    forest = Forest(2, rounded=True)
    for t, tree in enumerate(trees):
        values = np.zeros((tree.tree_.node_count, 2))
        values[:, t % 2] = tree.tree_.value[:, 0, 0]
        sklearn_tree(forest, tree.tree_, values)
    g = Graph()
    leaf_sums(g, [("x", 3, forest)])
    model, got = _run(g, "sums", {"x": x}, ("n", "s", "k"))
    assert "Gather" not in [node.op_type for node in model.graph.node]
    for column in (0, 1):
        expected = sum(t.predict(x.astype(np.float32)) for t in trees[column::2])
        np.testing.assert_allclose(got[:, 0, column], expected, rtol=0, atol=1e-12)


def test_leaf_rows_of_several_values_are_gathered_from_a_table_of_leaves():
    """Leaf rows of two values: the ensemble gives each tree's leaf row, gathered from a
    table of leaves only (and one zero row for the padding tree), summed per forest."""
    rng = np.random.default_rng(7)
    a, b = _trees(0, 3), _trees(1, 2)
    xa, xb = rng.normal(size=(50, 3)), rng.normal(size=(50, 3))
    g = Graph()
    leaf_sums(g, [("a", 3, _forest(a, pair=True)), ("b", 3, _forest(b, pair=True))])
    model, got = _run(g, "sums", {"a": xa, "b": xb}, ("n", "s", "k"))
    assert "Gather" in [node.op_type for node in model.graph.node]
    for s, (trees, x) in enumerate(((a, xa), (b, xb))):
        value = sum(t.predict(x.astype(np.float32)) for t in trees)
        np.testing.assert_allclose(got[:, s, 0], value, rtol=0, atol=1e-12)
        np.testing.assert_allclose(got[:, s, 1], len(trees) - value, rtol=0, atol=1e-12)
    n_leaves = sum(int((t.tree_.children_left == -1).sum()) for t in a + b)
    tables = [t for t in model.graph.initializer if t.name.startswith("c") and len(t.dims) == 2]
    assert sorted(tuple(t.dims) for t in tables) == [(n_leaves + 1, 2)]


def test_a_stage_sums_a_prefix_of_each_forest_from_the_same_tree_ensemble():
    rng = np.random.default_rng(2)
    trees = _trees(3, 4)
    x = rng.normal(size=(40, 3))
    g = Graph()
    values = leaf_values(g, "key", lambda: [("x", 3, _forest(trees))])
    assert leaf_values(g, "key", lambda: pytest.fail("built twice")) == values
    stage_sums(g, values, [2], flat=True)
    model, got = _run(g, "sums", {"x": x})
    assert [n.op_type for n in model.graph.node].count("TreeEnsemble") == 1
    expected = sum(t.predict(x.astype(np.float32)) for t in trees[:2])
    np.testing.assert_allclose(got[:, 0], expected, rtol=0, atol=1e-12)


def test_stage_segments_are_summed_in_the_tree_ensemble():
    """With the stages' tree counts, the ensemble sums each stage segment of each forest
    (one target per part and segment, not per tree), and a stage's sum, read by its tree
    count (its segments summed by one MatMul), equals the sum of its trees; forests of
    unequal stages alike."""
    rng = np.random.default_rng(3)
    a, b = _trees(10, 5), _trees(11, 3)
    xa, xb = rng.normal(size=(40, 3)), rng.normal(size=(40, 3))
    g = Graph()
    parts = [("a", 3, _forest(a)), ("b", 3, _forest(b))]
    values = leaf_values(g, "key", lambda: parts, bounds=[[2, 5], [3, 3]])
    assert values[1] == 2  # two segments a part
    stage_sums(g, values, [2, 3], flat=True)
    model, got = _run(g, "sums", {"a": xa, "b": xb})
    targets = next(
        a.i for n in model.graph.node if n.op_type == "TreeEnsemble" for a in n.attribute
        if a.name == "n_targets"
    )  # fmt: skip
    assert targets == 4
    ops = [node.op_type for node in model.graph.node]
    assert "ReduceSum" not in ops and ops.count("MatMul") == 1  # a stage's segments: one node
    expected = np.column_stack([
        sum(t.predict(xa.astype(np.float32)) for t in a[:2]),
        sum(t.predict(xb.astype(np.float32)) for t in b),
    ])  # fmt: skip
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    g = Graph()
    values = leaf_values(g, "key", lambda: parts, bounds=[[2, 5], [3, 3]])
    stage_sums(g, values, [5, 3], flat=True)
    _, got = _run(g, "sums", {"a": xa, "b": xb})
    full = sum(t.predict(xa.astype(np.float32)) for t in a)
    np.testing.assert_allclose(got[:, 0], full, rtol=0, atol=1e-12)


def test_float32_thresholds_compare_as_the_double_ones():
    rng = np.random.default_rng(4)
    thresholds = rng.normal(size=2000) * 10.0 ** rng.integers(-3, 4, 2000)
    rounded = float32_threshold(thresholds)
    assert rounded.dtype == np.float32
    near = np.concatenate([rounded, np.nextafter(rounded, np.float32(np.inf))])
    for x in near.reshape(2, -1):
        assert np.array_equal(x <= thresholds, x <= rounded)


def test_leaf_rows_past_float32_s_exact_integers_are_read_in_double(monkeypatch):
    """Where the table has too many rows for float32 leaf rows, the trees read the rounded
    input in double and give the same sums."""
    import ensel.estimator.export.trees as trees_module

    rng = np.random.default_rng(5)
    trees = _trees(6, 3)
    x = rng.normal(size=(40, 3))
    monkeypatch.setattr(trees_module, "EXACT_FLOAT", 4)
    g = Graph()
    leaf_sums(g, [("x", 3, _forest(trees, pair=True))])
    model, got = _run(g, "sums", {"x": x}, ("n", "s", "k"))
    assert _attribute(model, "nodes_splits").dtype == np.float64
    expected = sum(t.predict(x.astype(np.float32)) for t in trees)
    np.testing.assert_allclose(got[:, 0, 0], expected, rtol=0, atol=1e-12)
