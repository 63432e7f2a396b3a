"""The graph under construction: nodes, constants and fresh names, shared by the parts that
write a piece of the exported ensemble (views, members, calibration, the average)."""

from __future__ import annotations

import itertools

import numpy as np

from ..._imports import optional
from ...compress.export import OPSET

__all__ = ["ML_OPSET", "Graph"]

ML_OPSET = 5
"""The ``ai.onnx.ml`` opset of the file: 5 for ``TreeEnsemble`` (compact attributes and
set-membership splits); the converters' own nodes (skl2onnx's) are valid in it."""


class Graph:
    """Nodes and initializers of one ONNX graph. ``name(stem)`` gives a name no other value
    has; ``const(value)`` adds a constant; ``node(op, inputs, **attrs)`` adds a node of one
    output and returns that output's name; ``embed(model, feeds)`` copies another ONNX model's
    graph in (a converter's output), its names prefixed so they cannot clash."""

    def __init__(self) -> None:
        optional("onnx", "exporting an ensemble to ONNX")
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.nodes: list = []
        self.inits: list = []
        self.cache: dict = {}  # what a part computed once, by a key of its choosing
        self._count = itertools.count()

    def name(self, stem: str) -> str:
        return f"{stem}_{next(self._count)}"

    def const(self, value, stem: str = "c") -> str:
        name = self.name(stem)
        self.inits.append(self.numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op: str, inputs: list[str], stem: str | None = None, **attrs) -> str:
        out = self.name(stem or op.lower())
        domain = attrs.pop("domain", "")
        self.nodes.append(self.helper.make_node(op, inputs, [out], domain=domain, **attrs))
        return out

    def pair(self, p: str, stem: str) -> str:
        """The two-class probabilities ``(1 - p, p)`` of the ``(n, 1)`` positive column ``p``;
        :meth:`positive` of the result is ``p`` itself, so a binary ensemble that needs only
        the positive column reads it without a ``Gather`` (the pair is then left unused and
        :meth:`model` drops it)."""
        one = self.const(np.float64(1.0))
        out = self.node("Concat", [self.node("Sub", [one, p]), p], stem, axis=1)
        self.cache[("positive", out)] = p
        return out

    def positive(self, proba: str) -> str:
        """The ``(n, 1)`` positive column of the two-class probabilities ``proba``."""
        key = ("positive", proba)
        if key not in self.cache:
            pick = self.const(np.array([1], np.int64))
            self.cache[key] = self.node("Gather", [proba, pick], "positive", axis=1)
        return self.cache[key]

    def embed(self, model, feeds: dict[str, str]) -> list[str]:
        """Copy ``model``'s graph in: its inputs read the values named in ``feeds`` (its input
        name -> a name here); returns the names of its outputs, in order."""
        from onnx import compose

        prefix = self.name("sub") + "_"
        model = compose.add_prefix(model, prefix)
        graph = model.graph
        renames = {prefix + k: v for k, v in feeds.items()}
        for node in graph.node:
            node.input[:] = [renames.get(i, i) for i in node.input]
            self.nodes.append(node)
        self.inits.extend(graph.initializer)
        return [o.name for o in graph.output]

    def model(self, inputs, outputs, doc: str):
        """The finished, checked ONNX model."""
        onnx = optional("onnx", "exporting an ensemble to ONNX")
        helper = self.helper
        nodes, inits = _live(self.nodes, self.inits, [o.name for o in outputs])
        graph = helper.make_graph(nodes, "ensel_ensemble", inputs, outputs, inits)
        model = helper.make_model(
            graph,
            opset_imports=[
                helper.make_opsetid("", OPSET),
                helper.make_opsetid("ai.onnx.ml", ML_OPSET),
            ],
            producer_name="ensel",
            doc_string=doc,
        )
        onnx.checker.check_model(model, full_check=True)
        return model


def _live(nodes: list, inits: list, outputs: list[str]) -> tuple[list, list]:
    """The nodes (in their order) and initializers that ``outputs`` depend on: a part may
    write values that a later part reads differently (a two-class pair whose positive column
    is read directly), and every node left in the file costs a service time on each call."""
    needed, kept = set(outputs), []
    for node in reversed(nodes):
        if not needed.intersection(node.output):
            continue
        kept.append(node)
        needed.update(node.input)
        for attr in node.attribute:  # a node with a subgraph reads names inside it too
            for sub in [attr.g, *attr.graphs] if attr.HasField("g") or attr.graphs else []:
                needed.update(name for inner in sub.node for name in inner.input)
    return kept[::-1], [t for t in inits if t.name in needed]
