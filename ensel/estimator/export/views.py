"""Each preprocessing view of :mod:`ensel.library.views.base` as graph nodes: from the inputs
``numeric`` (double ``(n, n_numeric)``, NaN missing) and ``categorical`` (string
``(n, n_categorical)``, ``""`` missing) to the double matrix the family saw.

- numeric: median imputation where the family does not take NaN (``Where(IsNaN, fill, x)``),
  standardisation (``Sub``, ``Div``) in the standardised view;
- native categorical codes: ``ai.onnx.ml.LabelEncoder`` from the category strings to their
  position among the training categories (an unseen one: -1; missing: NaN or the code after
  the known ones, as the view does), one for each run of neighbouring columns whose codes
  agree;
- one-hot: ``ai.onnx.ml.OneHotEncoder`` over the kept levels, then the pooled "other" column
  (neither a kept level nor missing) and the missing level's column where the view has them;
- missing indicators (``Gather`` of ``IsNaN``) last.

The ``te`` view (target encodings, crosses) has no graph here: members on it are not
exportable.
"""

from __future__ import annotations

import numpy as np

from ...library.views.base import View

__all__ = ["CATEGORICAL", "EXPORTABLE_VIEWS", "NUMERIC", "view_matrix"]

NUMERIC, CATEGORICAL = "numeric", "categorical"
"""The graph's input names (those of the mimic's ONNX file)."""
EXPORTABLE_VIEWS = frozenset({"standardized", "native"})
"""The view kinds this module writes."""


def view_matrix(g, view: View, key) -> str:
    """The name of ``view``'s double ``(n, width)`` matrix in graph ``g``, written once per
    ``key`` (the view's identity among the library's runs, ``runs.view_key``)."""
    if ("view", key) not in g.cache:
        if not isinstance(view, View) or view.kind not in EXPORTABLE_VIEWS:
            raise ValueError(f"the view {view.kind!r} has no ONNX graph")
        content = ("view content", _content(view))
        if content not in g.cache:
            g.cache[content] = _write(g, view)
        g.cache[("view", key)] = g.cache[content]
    return g.cache[("view", key)]


def _content(view: View) -> tuple:
    """What :func:`_write` reads of ``view``: fold siblings' views alike in it (a native view
    with missing values passed through is the same on every fold) share one matrix, so the
    siblings' trees read one input."""
    columns = view.columns
    out = [view.kind, bool(view.native_missing), tuple(columns.numeric), tuple(columns.categorical),
           tuple(tuple(str(c) for c in cats) for cats in columns.categories)]  # fmt: skip
    if not view.native_missing:
        out += [view.fill.tobytes(), np.asarray(view.indicators).tobytes()]
    if view.kind == "standardized":
        out += [view.mean.tobytes(), view.scale.tobytes(), repr(view.levels), repr(view.pooled),
                repr(view.missing_level)]  # fmt: skip
    return tuple(out)


def _write(g, view: View) -> str:
    columns = view.columns
    blocks = []
    if columns.numeric:
        missing = _missing_numeric(g)
        x = NUMERIC
        if not view.native_missing and view.fill.size:
            x = g.node("Where", [missing, g.const(view.fill[None, :]), x], "imputed")
        if view.kind == "standardized":
            x = g.node("Sub", [x, g.const(view.mean[None, :])], "centred")
            x = g.node("Div", [x, g.const(view.scale[None, :])], "scaled")
        blocks.append(x)
    if view.kind == "native":
        width = len(columns.categorical)
        blocks += [_codes(g, group, codes, width) for group, codes in _code_groups(view)]
    else:
        for j in range(len(columns.categorical)):
            index = g.const(np.array(j, np.int64))
            column = g.node("Gather", [CATEGORICAL, index], "cat", axis=1)
            blocks.extend(_one_hot(g, view, j, column))
    indicators = view.indicators if not view.native_missing else np.zeros(0, int)
    if indicators.size:
        picked = g.node(
            "Gather", [_missing_numeric(g), g.const(indicators.astype(np.int64))], axis=1
        )
        blocks.append(g.node("Cast", [picked], "indicators", to=_DOUBLE()))
    if len(blocks) == 1:
        return blocks[0]
    return g.node("Concat", blocks, "view", axis=1)


def _DOUBLE() -> int:
    from onnx import TensorProto

    return TensorProto.DOUBLE


def _missing_numeric(g) -> str:
    if "missing_numeric" not in g.cache:
        g.cache["missing_numeric"] = g.node("IsNaN", [NUMERIC], "missing")
    return g.cache["missing_numeric"]


def _absent(g, j: int, column: str) -> str:
    """Whether categorical column ``j``'s cell is missing (the empty string), as a bool."""
    key = ("absent", j)
    if key not in g.cache:
        from onnx import TensorProto

        # string Equal needs opset 19; a one-key LabelEncoder says the same in the ML domain
        flag = g.node(
            "LabelEncoder",
            [column],
            "absent",
            domain="ai.onnx.ml",
            keys_strings=[""],
            values_floats=[1.0],
            default_float=0.0,
        )
        g.cache[key] = g.node("Cast", [flag], "absent", to=TensorProto.BOOL)
    return g.cache[key]


def _column(g, values: str) -> str:
    """``(n,)`` double as ``(n, 1)``."""
    return g.node("Unsqueeze", [values, g.const(np.array([1], np.int64))], "col")


def _code_groups(view: View) -> list[tuple[list[int], dict]]:
    """The native view's categorical columns in runs of neighbours whose codes agree (a
    string both know has one code in each, the missing one included), each run with its
    codes: column ``j``'s code of a category is its position among the training categories,
    NaN or ``len(known)`` missing (the empty string, whatever it was in training). One
    ``LabelEncoder`` then codes a whole run (columns of yes/no flags, or of disjoint levels,
    are one run): a service pays per node."""
    groups: list[tuple[list[int], dict]] = []
    for j, categories in enumerate(view.columns.categories):
        known = [str(c) for c in categories]
        codes = {key: float(i) for i, key in enumerate(known) if key != ""}
        codes[""] = np.nan if view.native_missing else float(len(known))
        if groups and all(
            _same(groups[-1][1][key], code) for key, code in codes.items() if key in groups[-1][1]
        ):
            groups[-1][0].append(j)
            groups[-1][1].update(codes)
        else:
            groups.append(([j], codes))
    return groups


def _same(a: float, b: float) -> bool:
    return a == b or (np.isnan(a) and np.isnan(b))


def _codes(g, group: list[int], codes: dict, width: int) -> str:
    """The native view's codes of the categorical columns ``group`` (neighbours, see
    :func:`_code_groups`) of the ``width`` there are, ``(n, len(group))`` double, -1 for a
    category never seen; one ``LabelEncoder`` (ML opset 4's tensors: double codes, no
    ``Cast``) on those columns (on the input itself where they are all of them)."""
    from onnx import numpy_helper

    if len(group) == width:
        cells = CATEGORICAL
    else:
        index = g.const(np.asarray(group, np.int64))
        cells = g.node("Gather", [CATEGORICAL, index], "cat", axis=1)
    return g.node(
        "LabelEncoder",
        [cells],
        "codes",
        domain="ai.onnx.ml",
        keys_tensor=numpy_helper.from_array(np.array(list(codes), dtype=object)),
        values_tensor=numpy_helper.from_array(np.array(list(codes.values()), np.float64)),
        default_tensor=numpy_helper.from_array(np.array([-1.0])),
    )


def _one_hot(g, view: View, j: int, column: str) -> list[str]:
    """The standardised view's block of categorical column ``j``: kept levels, then "other"
    (pooled) and the missing level where the view has them."""
    kept = [str(level) for level in view.levels[j]]
    absent = g.node("Cast", [_absent(g, j, column)], to=_DOUBLE())
    blocks, hot_sum = [], None
    if kept:
        hot = g.node(
            "OneHotEncoder",
            [column],
            "onehot",
            domain="ai.onnx.ml",
            cats_strings=kept,
            zeros=1,
        )
        hot = g.node("Cast", [hot], "onehot", to=_DOUBLE())
        blocks.append(hot)
        axes = g.const(np.array([1], np.int64))
        hot_sum = g.node("ReduceSum", [hot, axes], keepdims=0)
    if view.pooled[j]:
        other = g.node("Sub", [g.const(np.float64(1.0)), absent])
        if hot_sum is not None:
            other = g.node("Sub", [other, hot_sum])
        blocks.append(_column(g, other))
    if view.missing_level[j]:
        blocks.append(_column(g, absent))
    return blocks
