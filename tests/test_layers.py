"""The layering of ``ensel/``: every import (at module level or inside a function, relative or
absolute) goes to the same layer or one below, and no modules import each other in a cycle.

Layers, bottom first (docs/architecture.md): the input layer and the leaf helpers; selection and
the library; risk, compress and bayesnet; the estimator, its strategies and the report; the CLI
and the demo. The check reads the source with ``ast``, so an import inside a function counts as
much as one at the top of a module.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "data",
        "metrics",
        "calibration",
        "errors",
        "_imports",
        "_jobs",
        "_kernels",
        "_progress",
        "_candidates",
        "synthetic",
    ),
    ("selection", "library"),
    ("risk", "compress", "bayesnet"),
    ("estimator", "strategies", "report"),
    ("cli", "demo", "__main__", "__init__"),
)
"""Top-level modules and packages of ``ensel`` by layer; ``__init__`` is ``ensel`` itself (its
lazy ``from ensel import EnsembleSelectionClassifier``), so nothing inside may import it."""


def modules(root: Path, package: str) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file of ``package`` under ``root``."""
    out = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imports(name: str, path: Path, known: dict[str, Path]) -> list[tuple[str, int]]:
    """``(imported module, line)`` for every import of a module of ``known`` in ``path``,
    wherever it stands (module level, function body, ``if TYPE_CHECKING``)."""
    is_package = path.name == "__init__.py"
    here = name if is_package else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            # ``from pkg import sub`` imports the module pkg.sub; ``from pkg import name``, pkg.
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in known:  # ``import a.b.c`` where c is a name
                target = target.rpartition(".")[0]
            if target and target != name:
                found.append((target, node.lineno))
    return found


def layer_of(module: str, package: str, layers) -> tuple[int, str]:
    top = module.split(".")[1] if "." in module else "__init__"
    for i, names in enumerate(layers):
        if top in names:
            return i, top
    raise AssertionError(
        f"{module} has no layer: add {top!r} to the LAYERS of tests/test_layers.py "
        "(and to docs/architecture.md)"
    )


def check(root: Path, package: str, layers) -> list[str]:
    """One line per upward import and per import cycle; empty when the layering holds."""
    known = modules(root, package)
    graph: dict[str, dict[str, int]] = {m: {} for m in known}
    problems = []
    for name, path in known.items():
        src_layer, src_top = layer_of(name, package, layers)
        for target, line in imports(name, path, known):
            graph[name].setdefault(target, line)
            dst_layer, dst_top = layer_of(target, package, layers)
            if dst_layer > src_layer:
                problems.append(
                    f"upward import: {path.relative_to(root)}:{line} imports {target} "
                    f"({dst_top}, layer {dst_layer}) from {src_top} (layer {src_layer})"
                )
    for cycle in cycles(graph):
        steps = " -> ".join([*cycle, cycle[0]])
        where = ", ".join(
            f"{known[a].relative_to(root)}:{graph[a][b]}"
            for a, b in zip(cycle, [*cycle[1:], cycle[0]], strict=True)
        )
        problems.append(f"import cycle: {steps} (at {where})")
    return problems


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """One cycle through each strongly connected component of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(set(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_cycle_in(graph, component) for component in components]


def _cycle_in(graph: dict[str, dict[str, int]], component: set[str]) -> list[str]:
    """A shortest cycle through the first module (by name) of a strongly connected component."""
    start = min(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v]):
                if w == start:
                    return paths[v]
                if w in component and w not in paths:
                    paths[w] = [*paths[v], w]
                    nxt.append(w)
        frontier = nxt
    raise AssertionError("a strongly connected component without a cycle")


# ------------------------------------------------------------------ the checks on ensel


def test_ensel_imports_only_downward_and_has_no_cycle():
    problems = check(ROOT, "ensel", LAYERS)
    assert not problems, "layering broken:\n" + "\n".join(problems)


@pytest.mark.parametrize("package", ["ensel.risk", "ensel.compress", "ensel.library.kinds"])
def test_lower_packages_load_without_the_builder(package):
    """Importing the detectors or compression loads no builder, store, executor or family."""
    code = (
        f"import sys, {package}\n"
        "heavy = {'builder', 'store', 'executor', 'dask_executor', 'families', 'runs'}\n"
        "print(sorted(m for m in sys.modules if m.startswith('ensel.library.') and "
        "heavy & set(m.split('.')[2:])))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert out.stdout.strip() == "[]", f"import {package} loaded {out.stdout.strip()}"


# ------------------------------------------------------------------ the check itself


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


TOY_LAYERS = (("data", "util"), ("library",), ("cli", "__init__"))


def test_check_passes_a_clean_package(tmp_path):
    root = _package(
        tmp_path,
        {
            "__init__.py": "",
            "data.py": "import os\n",
            "util.py": "from .data import x\n",
            "library/__init__.py": "from .core import run\n",
            "library/core.py": "from ..data import x\nfrom pkg.util import y\n",
            "cli.py": "def main():\n    from .library import run\n",
        },
    )
    assert check(root, "pkg", TOY_LAYERS) == []


def test_check_names_an_upward_import_inside_a_function(tmp_path):
    root = _package(
        tmp_path,
        {
            "__init__.py": "",
            "data.py": "def f():\n    from .library.core import run\n",
            "library/__init__.py": "",
            "library/core.py": "import pkg.cli\n",
            "cli.py": "",
        },
    )
    problems = check(root, "pkg", TOY_LAYERS)
    assert any(
        p.startswith("upward import: pkg/data.py:2 imports pkg.library.core (library, layer 1)")
        for p in problems
    ), problems
    assert any("pkg/library/core.py:1 imports pkg.cli" in p for p in problems), problems


def test_check_names_a_cycle_through_a_package_init(tmp_path):
    root = _package(
        tmp_path,
        {
            "__init__.py": "",
            "data.py": "",
            "library/__init__.py": "from ._base import helper\n",
            "library/_base.py": "def helper():\n    from . import other\n",
            "library/a.py": "from .b import g\n",
            "library/b.py": "def g():\n    from pkg.library import a\n",
            "cli.py": "",
        },
    )
    problems = check(root, "pkg", TOY_LAYERS)
    assert "import cycle: pkg.library -> pkg.library._base -> pkg.library" in "\n".join(problems), (
        problems
    )
    assert any(
        p.startswith("import cycle: pkg.library.a -> pkg.library.b -> pkg.library.a")
        and "pkg/library/b.py:2" in p
        for p in problems
    ), problems


def test_check_refuses_a_module_without_a_layer(tmp_path):
    root = _package(tmp_path, {"__init__.py": "", "data.py": "", "extra.py": ""})
    with pytest.raises(AssertionError, match=r"pkg\.extra has no layer: add 'extra'"):
        check(root, "pkg", TOY_LAYERS)
