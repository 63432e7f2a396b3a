"""Shared helpers for benchmark reports: the machine line, markdown tables, and writing a
generated block of a docs page between its marker comments (``<!-- generated: NAME -->`` and
``<!-- end generated -->``) so that text a person wrote outside the markers is never touched."""

from __future__ import annotations

import os
import platform
from pathlib import Path

import numpy as np

from benchmarks._record import ROOT as ROOT  # the repository root, for the report modules

PAGE = Path("docs") / "results.md"
"""The page the suites' generated blocks live in (relative to ``ROOT``)."""
END = "<!-- end generated -->"


def machine_line(command: str) -> str:
    """The machine and the command, for a generated block (no date: the rows carry theirs)."""
    return (
        f"Measured on {platform.machine()}, {os.cpu_count()} cores "
        f"({platform.processor() or 'unknown CPU'}), Python {platform.python_version()}; "
        f"command: `{command}`."
    )


def no_rows(file: str, command: str) -> str:
    """A generated block's text while its rows file ``file`` has no rows: the suite ``command``
    (``python -m benchmarks.<command>``) that writes them."""
    return f"No rows yet in `{file}`: run `python -m benchmarks.{command}`."


def marker(name: str) -> str:
    """The opening marker comment of the generated block ``name``."""
    return f"<!-- generated: {name} -->"


def replace_generated(text: str, name: str, body: str) -> str | None:
    """``text`` with the block ``name``'s content (between its markers) replaced by ``body``;
    everything outside the markers is kept byte for byte. None when ``text`` has no such
    block."""
    start = text.find(marker(name))
    if start < 0:
        return None
    inner = start + len(marker(name))
    end = text.find(END, inner)
    if end < 0:
        raise ValueError(f"{marker(name)} has no closing {END}")
    return text[:inner] + "\n" + body.strip("\n") + "\n" + text[end:]


def write_generated(path: Path, name: str, body: str) -> bool:
    """Write ``body`` into the block ``name`` of ``path``; False (and nothing written) when the
    page has no such block, so a suite never writes over text a person wrote."""
    text = path.read_text() if path.exists() else ""
    new = replace_generated(text, name, body)
    if new is None:
        return False
    if new != text:
        path.write_text(new)
    return True


def write_blocks(pages: list[Path], blocks: dict[str, str]) -> None:
    """Write each of ``blocks`` (name: body) into the page of ``pages`` that has its block;
    a block no page has is an error (``SystemExit``), never text written elsewhere."""
    for name, body in blocks.items():
        if not any([write_generated(page, name, body) for page in pages]):
            raise SystemExit(f"no block {marker(name)} in {[str(p) for p in pages]}")


def markdown_table(frame, floatfmt: str = ".4f", index: bool = True) -> str:
    """``frame`` as a GitHub markdown table (no tabulate needed): the index as leading columns
    when ``index``, floats formatted with ``floatfmt``, multi-level column names joined."""
    import pandas as pd

    frame = frame.reset_index() if index else frame
    names = [" ".join(map(str, c)).strip() if isinstance(c, tuple) else str(c) for c in frame]

    def cell(v) -> str:
        if isinstance(v, float | np.floating):
            return "nan" if pd.isna(v) else format(float(v), floatfmt)
        return str(v)

    lines = ["| " + " | ".join(names) + " |", "|" + "---|" * len(names)]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(cell(v) for v in row) + " |")
    return "\n".join(lines)
