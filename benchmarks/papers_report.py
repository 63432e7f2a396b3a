"""docs/papers.md's generated tables: each source paper's table beside ours, built from the
result rows of the paper suites, written into the page's generated blocks
(``_report.write_blocks``: everything outside the markers is left as written).

    python -m benchmarks.papers_report        # what `make bench-report` calls
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd

from benchmarks import bench_paper, sandia_tables
from benchmarks._record import ROOT, load_results
from benchmarks._report import markdown_table, no_rows, write_blocks

DOC = ROOT / "docs" / "papers.md"
RESULTS = ROOT / "benchmarks" / "results"

FIGURES = Path(__file__).parent / "paper_figures"
"""The papers' published tables, one CSV each (its README says where each comes from)."""


def paper_frame(name: str, index: str | list[str] = "method") -> pd.DataFrame:
    """The paper's table ``FIGURES/name.csv`` indexed by its ``index`` column (for the
    dissertation's Tables 4.1-4.4: the eight metrics and MEAN as columns)."""
    return pd.read_csv(FIGURES / f"{name}.csv", index_col=index)


def side_by_side(paper: pd.DataFrame, ours: pd.DataFrame, fmt: str, label="method") -> str:
    """Markdown of the paper's rows and ours under them (``source`` column), on the paper's
    columns where we have them, in its order; ``label`` names the rows' column."""
    ours = ours[[c for c in paper.columns if c in ours.columns]]
    parts = [paper.assign(source="paper"), ours.assign(source="ensel")]
    frame = pd.concat(parts).rename_axis(label).reset_index()
    frame = frame[[label, "source", *ours.columns]]
    return markdown_table(frame, fmt, index=False)


def tables_4_blocks(path: Path) -> dict[str, str]:
    """Generated blocks of the dissertation's Tables 4.1-4.5 (``table-4-1`` to ``table-4-5``)
    beside ours, from bench_paper's rows in ``path``."""
    names = [f"table-4-{k}" for k in range(1, 6)]
    results = load_results(path)
    if not results:
        return dict.fromkeys(names, no_rows(path.name, "bench_paper"))
    tables = bench_paper.tables(bench_paper.rows_from_results(results))
    per_method = tables["Tables 4.1-4.2"]
    no_cv = per_method[~per_method.index.str.endswith("-CV")]
    no_cv = no_cv[no_cv.index.str.fullmatch(r"(ES|MODSEL|BAYESAVG)-(NOCAL|CAL|BOTH)(HC)?")]
    cv = per_method[per_method.index.str.endswith("-CV")]
    spec = sorted({r.get("spec", "?") for r in results})
    where = (
        f"Ours: spec `{', '.join(spec)}`, datasets "
        f"{', '.join(sorted({r['dataset'] for r in results}))}, "
        f"{max(r['fold'] for r in results) + 1} outer folds ({len(results)} rows).\n\n"
    )
    blocks = {
        name: where + side_by_side(paper_frame(f"dissertation_4_{k}"), mine, fmt)
        for name, k, mine, fmt in (
            ("table-4-1", 1, no_cv, ".3f"),
            ("table-4-2", 2, cv, ".3f"),
            ("table-4-4", 4, tables["Table 4.4"], ".1f"),
        )
    }
    paper_4_3 = paper_frame("dissertation_4_3", "dataset").loc[["MEAN", "MEAN^cv"]]
    blocks["table-4-3"] = where + side_by_side(paper_4_3, tables["Table 4.3"], ".2f", "dataset")
    proxies = tables["§4.3.5 proxies"]["MEAN"]
    ours_4_5 = pd.DataFrame(
        {"RMS": proxies["rms"], "MXE": proxies["mxe"], "OPTMETRIC": proxies["the target metric"]},
        index=["ES-BOTH-CV"],
    )
    blocks["table-4-5"] = where + side_by_side(paper_frame("dissertation_4_5"), ours_4_5, ".3f")
    return {name: blocks[name] for name in names}


def fspt_blocks(path: Path) -> dict[str, str]:
    """Gu & Easwaran's Tables 5-7 beside ours, and our accuracy-coverage curves."""
    rows = load_results(path)
    if not rows:
        return dict.fromkeys(["fspt-tables", "fspt-curves"], no_rows(path.name, "bench_fspt"))
    from benchmarks import bench_fspt

    ours, curves = bench_fspt.tables(rows)
    paper = paper_frame("gu_tables_5_7", ["model", "t1", "t2"])
    both = paper.add_suffix(" paper").join(ours.add_suffix(" ensel"))
    keep = [f"{c} {who}" for c in ("G1_share", "G1_acc", "G2_acc") for who in ("paper", "ensel")]
    seeds = len({r["seed"] for r in rows})
    where = f"Ours: mean over {seeds} splits.\n\n"
    return {
        "fspt-tables": where + markdown_table(both[keep], ".3f"),
        "fspt-curves": where + markdown_table(curves, ".3f"),
    }


def openset_blocks(digits: Path, generated: Path) -> dict[str, str]:
    """Steele's Fig. 1 (MNIST) beside our digits rows, and his Fig. 2's stated points beside
    our generated-data rows."""
    from benchmarks import bench_openset

    parts = {
        "openset-digits": (digits, "--digits", bench_openset.digits_table),
        "openset-generated": (generated, "--generated", bench_openset.generated_table),
    }
    blocks = {}
    for name, (rows_path, flag, table) in parts.items():
        rows = load_results(rows_path)
        if not rows:
            blocks[name] = no_rows(rows_path.name, f"bench_openset {flag}")
            continue
        frame = table(pd.DataFrame(rows))
        frame = frame.astype(object).where(frame.notna(), "")  # the paper's unstated points
        where = f"Ours: mean over {len({r['trial'] for r in rows})} trials.\n\n"
        blocks[name] = where + markdown_table(frame, ".3f")
    return blocks


def compression_blocks(path: Path) -> dict[str, str]:
    """The dissertation's Table 4.8 and bench_compress's tables from the rows in ``path``."""
    from benchmarks import bench_compress

    paper = paper_frame("dissertation_4_8", "problem")
    rows = load_results(path)
    ours = bench_compress.report(rows) if rows else no_rows(path.name, "bench_compress")
    return {
        "compression-paper": markdown_table(paper, ".3f"),
        "compression": ours,
    }


def hillclimb_size_block(path: Path) -> dict[str, str]:
    """bench_pruning's hillclimb-size table (ES, MODSEL, BAYESAVG by hillclimb rows, per
    dataset) from the rows in ``path``."""
    rows = load_results(path)
    if not rows:
        return {"hillclimb-size": no_rows(path.name, "bench_pruning")}
    from benchmarks import bench_pruning

    table = bench_pruning.size_table(bench_pruning.scores_frame(rows))
    folds = pd.Series([r["dataset"] for r in rows]).value_counts().sort_index()
    where = "Ours: outer folds per dataset: " + ", ".join(f"{d} {n}" for d, n in folds.items())
    return {"hillclimb-size": where + ".\n\n" + markdown_table(table, ".3f")}


BLOCKS: dict[str, Callable[[], dict[str, str]]] = {
    "tables-4": lambda: tables_4_blocks(RESULTS / "paper_tables_4.jsonl.gz"),
    "hillclimb-size": lambda: hillclimb_size_block(RESULTS / "pruning.jsonl"),
    "fspt": lambda: fspt_blocks(RESULTS / "paper_fspt.jsonl"),
    "openset": lambda: openset_blocks(
        RESULTS / "paper_openset_digits.jsonl", RESULTS / "paper_openset_generated.jsonl"
    ),
    "compression": lambda: compression_blocks(RESULTS / "paper_compression.jsonl"),
    "sandia": lambda: sandia_tables.blocks(load_results(RESULTS / "paper_risk.jsonl.gz")),
    "sandia-table-1": lambda: sandia_tables.table1_blocks(
        load_results(RESULTS / sandia_tables.TABLE1_FILE)
    ),
}


def write_papers_doc(doc: Path = DOC) -> None:
    """Regenerate every generated block of ``doc`` from the result rows."""
    blocks: dict[str, str] = {}
    for make in BLOCKS.values():
        blocks.update(make())
    write_blocks([doc], blocks)


if __name__ == "__main__":
    write_papers_doc()
