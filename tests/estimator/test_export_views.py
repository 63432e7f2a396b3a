"""The native view's categorical codes in the exported graph (``estimator.export.views``):
neighbouring columns whose codes agree are coded by one ``LabelEncoder`` in double, and the
graph's matrix equals the view's own on known, unseen and missing categories."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from ensel.data import Columns  # noqa: E402
from ensel.estimator.export import feeds  # noqa: E402
from ensel.estimator.export._graph import Graph  # noqa: E402
from ensel.estimator.export.views import view_matrix  # noqa: E402
from ensel.library.views.base import make_view, transform  # noqa: E402


def _frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "x": rng.normal(size=n),
        "flag": pd.Series(rng.choice(["no", "yes"], n), dtype=object),
        "other_flag": pd.Series(rng.choice(["no", "yes"], n), dtype=object),
        "level": pd.Series(rng.choice(["high", "low", "mid"], n), dtype=object),
        "reverse": pd.Series(rng.choice(["yes", "zzz"], n), dtype=object),  # "yes" is 0 here
    })  # fmt: skip


def _graph_matrix(view, columns, frame: pd.DataFrame):
    from onnx import TensorProto, helper

    g = Graph()
    out = view_matrix(g, view, "key")
    g.nodes.append(helper.make_node("Identity", [out], ["matrix"]))
    inputs = [
        helper.make_tensor_value_info("numeric", TensorProto.DOUBLE, ["n", 1]),
        helper.make_tensor_value_info("categorical", TensorProto.STRING, ["n", 4]),
    ]
    outputs = [helper.make_tensor_value_info("matrix", TensorProto.DOUBLE, ["n", "m"])]
    model = g.model(inputs, outputs, "test")
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return model, session.run(["matrix"], feeds(columns, frame))[0]


@pytest.mark.parametrize("native_missing", [True, False])
def test_native_codes_of_agreeing_neighbours_are_one_label_encoder(native_missing):
    train = _frame(200, 0)
    columns = Columns.infer(train)
    assert columns.categorical == ("flag", "other_flag", "level", "reverse")
    view = make_view("native", columns, native_missing).fit(train)
    test = _frame(60, 1)
    test.loc[::5, "flag"] = None
    test.loc[1::7, "level"] = "never seen"
    test.loc[2::9, "reverse"] = None
    model, got = _graph_matrix(view, columns, test)
    np.testing.assert_array_equal(got, transform(view, test))
    ops = [node.op_type for node in model.graph.node]
    # flag, other_flag and level agree (one run); "reverse" codes "yes" otherwise. Missing
    # codes agree only where they are NaN: else each column's is the count of its levels.
    expected = 2 if native_missing else 3
    assert ops.count("LabelEncoder") == expected
    assert "Cast" not in ops
