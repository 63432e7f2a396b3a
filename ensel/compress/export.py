"""Export a mimic net with its input encoding built in, so raw rows go in and class
probabilities come out: ONNX (built node by node with ``onnx.helper``; runs under onnxruntime
with no ensel or torch installed) and TorchScript.

ONNX inputs (only those the data has): ``numeric``, double ``(n, n_numeric)``, the numeric
columns in training order; ``categorical``, string ``(n, n_categorical)``, the categorical
columns in training order as strings (``str(value)``; an unseen category is an all-zero one-hot
block, as in ``MimicClassifier.predict_proba``). Missing values: NaN in ``numeric`` (it becomes
the training mean, plus the missing-indicator inputs the mimic learnt with), the empty string
``""`` in ``categorical`` (its own level where training had missing cells there).
Outputs: ``probabilities``, float ``(n, n_classes)``, and ``label`` (the most probable class).
The column lists and the classes are in the model's metadata (``numeric_columns``,
``categorical_columns``, ``classes``, JSON).
A regression mimic's one output is ``prediction``, double ``(n,)``, in the target's units.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import numpy as np

from .._imports import optional

__all__ = ["EXPORTERS", "export_format", "to_onnx", "to_torchscript"]

OPSET = 17
ML_OPSET = 3
SUFFIXES = {".onnx": "onnx", ".pt": "torchscript", ".ts": "torchscript"}


def export_format(path: str | os.PathLike, format: str | None) -> str:
    """The format to write: ``format`` if given, else the one ``path``'s suffix names."""
    if format is None:
        suffix = Path(path).suffix.lower()
        if suffix not in SUFFIXES:
            raise ValueError(
                f"cannot tell the format of {str(path)!r} from its suffix; pass format= one of "
                f"{sorted(EXPORTERS)} or use a suffix in {sorted(SUFFIXES)}"
            )
        return SUFFIXES[suffix]
    if format not in EXPORTERS:
        raise ValueError(f"format={format!r}: use one of {sorted(EXPORTERS)}")
    return format


def to_onnx(mimic, path: str | os.PathLike) -> None:
    """Write ``mimic`` as one ONNX file: standardisation (``Sub``, ``Div`` in double; ``IsNaN``
    and ``Where`` put a missing cell at the mean and feed the missing indicators), one-hot
    (``ai.onnx.ml.OneHotEncoder`` per categorical column, unknown categories all zeros), the
    MLP (``MatMul``, ``Add``, activation) and ``Softmax``; ``ArgMax`` and a ``Gather`` from the
    class list give the label."""
    onnx = optional("onnx", "exporting a mimic net to ONNX")
    from onnx import TensorProto, helper, numpy_helper

    enc = mimic.encoding_
    nodes, inits = [], []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    inputs, blocks = _input_nodes(enc, nodes, const, helper, TensorProto)
    nodes.append(helper.make_node("Concat", blocks, ["h0"], axis=1))
    activation = {"tanh": "Tanh", "relu": "Relu", "sigmoid": "Sigmoid"}[mimic.activation]
    layers = mimic.layers
    for i, (weight, bias) in enumerate(layers, start=1):
        last = i == len(layers)
        out = "logits" if last else f"h{i}"
        affine = out if last else f"a{i}"
        nodes += [
            helper.make_node("MatMul", [f"h{i - 1}", const(f"W{i}", weight.T.copy())], [f"z{i}"]),
            helper.make_node("Add", [f"z{i}", const(f"b{i}", bias)], [affine]),
        ]
        if not last:
            nodes.append(helper.make_node(activation, [f"a{i}"], [out]))
    if mimic.regression:  # a regression mimic: back to the target's units,
        # in double: a target of 1e9 +- 10 is steps of 64 in float
        nodes, outputs = _regression_outputs(mimic, nodes, const, helper, TensorProto)
        props = {"target_mean": json.dumps(mimic.target_mean_)}
        doc = "ensel regression mimic net: raw rows in, predicted values out"
    else:
        nodes, outputs = _class_outputs(mimic, nodes, const, helper, TensorProto)
        props = {"classes": json.dumps([_plain(c) for c in mimic.classes_])}
        doc = "ensel mimic net (dissertation §4.4): raw rows in, class probabilities out"
    graph = helper.make_graph(nodes, "ensel_mimic", inputs, outputs, initializer=inits)
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid("ai.onnx.ml", ML_OPSET)],
        producer_name="ensel",
        doc_string=doc,
    )
    helper.set_model_props(
        model,
        {
            "numeric_columns": json.dumps(list(enc.numeric)),
            "categorical_columns": json.dumps(list(enc.categorical)),
            **props,
        },
    )
    onnx.checker.check_model(model, full_check=True)
    onnx.save_model(model, os.fspath(path))


def _input_nodes(enc, nodes, const, helper, TensorProto):
    """The inputs and the nodes from them to the MLP's first layer: standardised numeric
    columns (a missing cell at the mean) and missing indicators, one-hot categorical blocks.
    Appends to ``nodes``; returns ``(inputs, blocks)``, the blocks to concatenate."""
    inputs, blocks = [], []
    if enc.numeric:
        inputs.append(
            helper.make_tensor_value_info("numeric", TensorProto.DOUBLE, ["n", len(enc.numeric)])
        )
        nodes += [
            helper.make_node("IsNaN", ["numeric"], ["missing"]),
            helper.make_node("Sub", ["numeric", const("mean", enc.mean)], ["centred"]),
            helper.make_node("Div", ["centred", const("scale", enc.scale)], ["numeric_z"]),
            helper.make_node(
                "Where", ["missing", const("zero", np.zeros(1)), "numeric_z"], ["standardised"]
            ),
            helper.make_node("Cast", ["standardised"], ["numeric_f"], to=TensorProto.FLOAT),
        ]
        blocks.append("numeric_f")
        if enc.indicators:
            indicators = const("indicator_columns", np.asarray(enc.indicators, dtype=np.int64))
            nodes += [
                helper.make_node("Gather", ["missing", indicators], ["missing_some"], axis=1),
                helper.make_node("Cast", ["missing_some"], ["indicators"], to=TensorProto.FLOAT),
            ]
            blocks.append("indicators")
    if enc.categorical:
        inputs.append(
            helper.make_tensor_value_info(
                "categorical", TensorProto.STRING, ["n", len(enc.categorical)]
            )
        )
        for j in range(len(enc.categorical)):
            column = const(f"column_{j}", np.array(j, dtype=np.int64))
            nodes += [
                helper.make_node("Gather", ["categorical", column], [f"cat_{j}"], axis=1),
                helper.make_node(
                    "OneHotEncoder",
                    [f"cat_{j}"],
                    [f"onehot_{j}"],
                    domain="ai.onnx.ml",
                    cats_strings=list(enc.block_categories(j)),
                    zeros=1,
                ),
            ]
            blocks.append(f"onehot_{j}")
    return inputs, blocks


def _regression_outputs(mimic, nodes, const, helper, TensorProto):
    """A regression mimic's output back in the target's units, in double (a target of
    1e9 +- 10 is steps of 64 in float): ``prediction``, double ``(n,)``."""
    nodes += [
        helper.make_node("Cast", ["logits"], ["logits_double"], to=TensorProto.DOUBLE),
        helper.make_node(
            "Mul",
            ["logits_double", const("target_scale", np.float64([mimic.target_scale_]))],
            ["scaled"],
        ),
        helper.make_node(
            "Add", ["scaled", const("target_mean", np.float64([mimic.target_mean_]))],
            ["prediction_column"],
        ),
        helper.make_node(
            "Reshape", ["prediction_column", const("flat", np.array([-1], np.int64))],
            ["prediction"],
        ),
    ]  # fmt: skip
    outputs = [helper.make_tensor_value_info("prediction", TensorProto.DOUBLE, ["n"])]
    return nodes, outputs


def _class_outputs(mimic, nodes, const, helper, TensorProto):
    """A classifier mimic's ``Softmax`` probabilities and arg-max ``label`` outputs."""
    classes, label_type = _class_tensor(mimic.classes_)
    nodes += [
        helper.make_node("Softmax", ["logits"], ["probabilities"], axis=1),
        helper.make_node("ArgMax", ["probabilities"], ["argmax"], axis=1, keepdims=0),
        helper.make_node("Gather", [const("classes", classes), "argmax"], ["label"], axis=0),
    ]
    outputs = [
        helper.make_tensor_value_info(
            "probabilities", TensorProto.FLOAT, ["n", mimic.classes_.size]
        ),
        helper.make_tensor_value_info("label", label_type, ["n"]),
    ]
    return nodes, outputs


def _class_tensor(classes: np.ndarray):
    """The classes as an int64 tensor when they are integers, else as strings."""
    from onnx import TensorProto

    if np.issubdtype(classes.dtype, np.integer) or classes.dtype == bool:
        return classes.astype(np.int64), TensorProto.INT64
    return np.array([str(c) for c in classes], dtype=object), TensorProto.STRING


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


def to_torchscript(mimic, path: str | os.PathLike) -> None:
    """Write ``mimic`` as a TorchScript module (see ``_torchscript.ScriptedMimic``):
    ``forward(numeric, categorical)`` takes a double tensor ``(n, n_numeric)`` and a list of
    the categorical columns, each a list of n strings, and returns ``(n, n_classes)`` float
    probabilities (a regression mimic: double ``(n,)`` values). torch 2.9+ marks TorchScript
    deprecated (its successor, ``torch.export``, takes no string inputs); its warnings are
    silenced here, and ONNX is the format to ship."""
    torch = optional("torch", "exporting a mimic net to TorchScript")
    from ._torchscript import ScriptedMimic

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*deprecated.*", category=DeprecationWarning)
        warnings.filterwarnings("ignore", message=r".*torch\.jit.*deprecated.*")
        torch.jit.save(torch.jit.script(ScriptedMimic(mimic)), os.fspath(path))


EXPORTERS = {"onnx": to_onnx, "torchscript": to_torchscript}
