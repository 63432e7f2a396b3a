"""docs/papers.md's generated tables: each source paper's table beside ours, built from the
result rows of the paper suites. Text between ``<!-- generated: NAME -->`` and
``<!-- end generated -->`` is replaced; everything outside the markers is left as written.

    python -m benchmarks.papers_report        # what `make bench-report` calls
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from benchmarks import bench_paper
from benchmarks._record import ROOT, load_results
from benchmarks._report import markdown_table
from ensel.metrics import METRICS

DOC = ROOT / "docs" / "papers.md"
RESULTS = ROOT / "benchmarks" / "results"
COLUMNS = [*METRICS, "MEAN"]

DISSERTATION_4_1 = {  # Niculescu-Mizil (2008), Table 4.1: 11 problems, 1,000-point hillclimb set
    "ES-BOTH": (0.920, 0.888, 0.967, 0.982, 0.972, 0.964, 0.932, 0.944, 0.946),
    "ES-NOCAL": (0.919, 0.897, 0.967, 0.982, 0.970, 0.965, 0.912, 0.925, 0.942),
    "ES-CAL": (0.912, 0.847, 0.969, 0.981, 0.969, 0.966, 0.935, 0.940, 0.940),
    "BAYESAVG-BOTH": (0.893, 0.814, 0.964, 0.978, 0.963, 0.956, 0.918, 0.934, 0.928),
    "BAYESAVG-CAL": (0.889, 0.820, 0.962, 0.977, 0.960, 0.955, 0.912, 0.925, 0.925),
    "MODSEL-BOTH": (0.871, 0.861, 0.939, 0.973, 0.948, 0.938, 0.901, 0.916, 0.918),
    "MODSEL-CAL": (0.870, 0.819, 0.943, 0.973, 0.948, 0.940, 0.892, 0.910, 0.912),
    "MODSEL-NOCAL": (0.871, 0.858, 0.939, 0.973, 0.948, 0.938, 0.861, 0.871, 0.907),
    "BAYESAVG-NOCAL": (0.875, 0.784, 0.955, 0.968, 0.953, 0.941, 0.874, 0.892, 0.905),
}
DISSERTATION_4_2 = {  # Table 4.2 (libraries of both kinds of members)
    "ES-BOTH-CV": (0.935, 0.926, 0.982, 0.996, 0.992, 0.977, 0.984, 0.989, 0.973),
    "MODSEL-BOTH-CV": (0.907, 0.923, 0.971, 0.985, 0.968, 0.963, 0.945, 0.961, 0.953),
    "ES-BOTH": (0.920, 0.888, 0.967, 0.982, 0.972, 0.964, 0.932, 0.944, 0.946),
    "MODSEL-BOTH": (0.871, 0.861, 0.939, 0.973, 0.948, 0.938, 0.901, 0.916, 0.918),
}
DISSERTATION_4_4 = {  # Table 4.4, percent of the benefit of cross-validation
    "ES-HILL": (32.9, 37.2, 48.0, 38.8, 40.8, 19.4, 55.1, 56.7, 41.1),
    "ES-AVG": (80.5, 13.6, 54.0, 59.0, 55.7, 77.4, 46.8, 51.8, 54.9),
    "SUM": (113.4, 50.8, 102.0, 97.8, 96.5, 96.8, 101.9, 108.5, 96.0),
}


def paper_frame(table: dict) -> pd.DataFrame:
    """A paper's table as a frame with the eight metrics and MEAN as columns."""
    return pd.DataFrame(table, index=COLUMNS).T


def side_by_side(paper: pd.DataFrame, ours: pd.DataFrame, fmt: str) -> str:
    """Markdown of the paper's rows and ours under them (``source`` column), on the paper's
    methods where we have them, then ours alone."""
    ours = ours[[c for c in COLUMNS if c in ours.columns]]
    parts = [paper.assign(source="paper"), ours.assign(source="ensel")]
    frame = pd.concat(parts).rename_axis("method").reset_index()
    frame = frame[["method", "source", *ours.columns]]
    return markdown_table(frame, fmt, index=False)


def tables_4_blocks(path: Path, prefix: str = "") -> dict[str, str]:
    """Generated blocks (``{prefix}table-4-1`` etc.) of the dissertation's Tables 4.1, 4.2 and
    4.4 from bench_paper's rows in ``path``."""
    names = [f"{prefix}table-4-{k}" for k in (1, 2, 4)]
    results = load_results(path)
    if not results:
        missing = f"No rows yet in `{path.name}`: run `python -m benchmarks.bench_paper`."
        return dict.fromkeys(names, missing)
    tables = bench_paper.tables(bench_paper.rows_from_results(results))
    per_method = tables["Tables 4.1-4.2"]
    no_cv = per_method[~per_method.index.str.endswith("-CV")]
    no_cv = no_cv[no_cv.index.str.match(r"^(ES|MODSEL|BAYESAVG)-")]
    cv = per_method[per_method.index.str.endswith("-CV")]
    spec = sorted({r.get("spec", "?") for r in results})
    where = (
        f"Ours: spec `{', '.join(spec)}`, datasets "
        f"{', '.join(sorted({r['dataset'] for r in results}))}, "
        f"{max(r['fold'] for r in results) + 1} outer folds ({len(results)} rows).\n\n"
    )
    papers = (DISSERTATION_4_1, DISSERTATION_4_2, DISSERTATION_4_4)
    ours = (no_cv, cv, tables["Table 4.4"])
    formats = (".3f", ".3f", ".1f")
    return {
        name: where + side_by_side(paper_frame(paper), mine, fmt)
        for name, paper, mine, fmt in zip(names, papers, ours, formats, strict=True)
    }


BLOCKS: dict[str, Callable[[], dict[str, str]]] = {
    "tables-4": lambda: tables_4_blocks(RESULTS / "paper_tables_4.jsonl"),
    "tables-4-pilot": lambda: tables_4_blocks(RESULTS / "paper_tables_4_tiny.jsonl", "pilot-"),
}


def fill(text: str, blocks: dict[str, str]) -> str:
    """``text`` with the body of each ``<!-- generated: NAME -->`` ... ``<!-- end generated
    -->`` pair whose NAME is in ``blocks`` replaced by ``blocks[NAME]``; other text unchanged."""

    def replace(match: re.Match) -> str:
        name = match.group(1)
        if name not in blocks:
            return match.group(0)
        return f"<!-- generated: {name} -->\n{blocks[name].strip()}\n<!-- end generated -->"

    pattern = r"<!-- generated: ([\w-]+) -->\n.*?<!-- end generated -->"
    return re.sub(pattern, replace, text, flags=re.DOTALL)


def write_papers_doc(doc: Path = DOC) -> None:
    """Regenerate every generated block of ``doc`` from the result rows."""
    blocks: dict[str, str] = {}
    for make in BLOCKS.values():
        blocks.update(make())
    doc.write_text(fill(doc.read_text(), blocks))


if __name__ == "__main__":
    write_papers_doc()
