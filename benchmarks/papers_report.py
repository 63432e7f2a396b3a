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
from benchmarks._report import markdown_table, write_blocks
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


GU_TABLES_5_7 = """
NN 0.80 0.00 1.00 0.892 0.990 0.00 nan nan
NN 0.80 0.20 0.75 0.916 0.992 0.25 0.821 0.981
NN 0.80 0.40 0.48 0.907 0.994 0.52 0.879 0.986
NN 0.80 0.60 0.26 0.926 0.993 0.74 0.881 0.988
NN 0.90 0.00 1.00 0.899 0.994 0.00 nan nan
NN 0.90 0.20 0.76 0.914 0.996 0.24 0.849 0.990
NN 0.90 0.40 0.48 0.905 0.997 0.52 0.892 0.992
NN 0.90 0.60 0.26 0.924 0.997 0.74 0.890 0.993
SVM 0.80 0.00 1.00 0.988 0.936 0.00 nan nan
SVM 0.80 0.20 0.77 0.995 0.938 0.23 0.966 0.928
SVM 0.80 0.40 0.47 0.992 0.942 0.53 0.985 0.930
SVM 0.80 0.60 0.27 0.985 0.944 0.73 0.989 0.933
SVM 0.90 0.00 1.00 0.995 0.964 0.00 nan nan
SVM 0.90 0.20 0.78 1.000 0.966 0.22 0.976 0.959
SVM 0.90 0.40 0.48 1.000 0.971 0.52 0.990 0.958
SVM 0.90 0.60 0.28 1.000 0.969 0.72 0.993 0.962
GP 0.55 0.00 1.00 0.940 0.914 0.00 nan nan
GP 0.55 0.20 0.76 0.944 0.913 0.24 0.925 0.920
GP 0.55 0.40 0.48 0.943 0.899 0.52 0.937 0.928
GP 0.55 0.60 0.25 0.964 0.912 0.75 0.932 0.915
GP 0.60 0.00 1.00 0.948 0.923 0.00 nan nan
GP 0.60 0.20 0.76 0.955 0.922 0.24 0.924 0.924
GP 0.60 0.40 0.47 0.954 0.910 0.53 0.942 0.934
GP 0.60 0.60 0.25 0.975 0.925 0.75 0.939 0.922
"""
"""Gu & Easwaran (2019), Tables 5-7 (Breast Cancer Diagnosis): model, t1, t2, then G1's
share, accuracy and mean φ_M, and G2's."""
GROUP_COLUMNS = ["G1_share", "G1_acc", "G1_phi_m", "G2_share", "G2_acc", "G2_phi_m"]


def fspt_blocks(path: Path) -> dict[str, str]:
    """Gu & Easwaran's Tables 5-7 beside ours, and our accuracy-coverage curves."""
    rows = load_results(path)
    if not rows:
        missing = f"No rows yet in `{path.name}`: run `python -m benchmarks.bench_fspt`."
        return {"fspt-tables": missing, "fspt-curves": missing}
    from benchmarks import bench_fspt

    ours, curves = bench_fspt.tables(rows)
    paper = pd.DataFrame(
        [line.split() for line in GU_TABLES_5_7.strip().splitlines()],
        columns=["model", "t1", "t2", *GROUP_COLUMNS],
    )
    paper = paper.astype({c: float for c in ["t1", "t2", *GROUP_COLUMNS]})
    paper = paper.set_index(["model", "t1", "t2"])
    both = paper.add_suffix(" paper").join(ours.add_suffix(" ensel"))
    keep = [f"{c} {who}" for c in ("G1_share", "G1_acc", "G2_acc") for who in ("paper", "ensel")]
    seeds = len({r["seed"] for r in rows})
    where = f"Ours: mean over {seeds} splits.\n\n"
    return {
        "fspt-tables": where + markdown_table(both[keep], ".3f"),
        "fspt-curves": where + markdown_table(curves, ".3f"),
    }


def openset_blocks(path: Path) -> dict[str, str]:
    """Steele's Fig. 1 (MNIST) beside our digits rows."""
    rows = load_results(path)
    if not rows:
        missing = (
            f"No rows yet in `{path.name}`: run `python -m benchmarks.bench_openset --digits`."
        )
        return {"openset-digits": missing}
    from benchmarks import bench_openset

    table = bench_openset.digits_table(pd.DataFrame(rows))
    where = f"Ours: mean over {len({r['trial'] for r in rows})} trials.\n\n"
    return {"openset-digits": where + markdown_table(table, ".3f")}


DISSERTATION_4_8 = """
ADULT 0.325 0.317 0.328 0.319 0.29
COVTYPE 0.340 0.334 0.378 0.349 0.84
HS 0.204 0.213 0.231 0.231 1.47
LETTER.P1 0.075 0.075 0.092 0.092 1.01
LETTER.P2 0.179 0.178 0.228 0.203 0.98
MEDIS 0.277 0.278 0.279 0.279 2.29
MG 0.288 0.287 0.295 0.290 0.88
SLAC 0.422 0.424 0.428 0.427 1.69
AVERAGE 0.264 0.263 0.282 0.274 0.97
"""
"""Niculescu-Mizil (2008), Table 4.8: test RMSE of the mimic (256 units, 400k MUNGE rows), the
ensemble, the best net and the best single member, and RATIO (the share of the ensemble's gain
over the best net that the mimic keeps; the AVERAGE row's is that of the averaged RMSEs)."""


def compression_blocks(path: Path) -> dict[str, str]:
    """The dissertation's Table 4.8 and bench_compress's tables from the rows in ``path``."""
    from benchmarks import bench_compress

    paper = pd.DataFrame(
        [line.split() for line in DISSERTATION_4_8.strip().splitlines()],
        columns=["problem", "MIMIC", "ENSEMBLE", "ANN", "SINGLE", "RATIO"],
    ).set_index("problem")
    paper = paper.astype(float)
    rows = load_results(path)
    ours = bench_compress.report(rows) if rows else (
        f"No rows yet in `{path.name}`: run `python -m benchmarks.bench_compress`."
    )  # fmt: skip
    return {
        "compression-paper": markdown_table(paper, ".3f"),
        "compression": ours,
    }


BLOCKS: dict[str, Callable[[], dict[str, str]]] = {
    "tables-4": lambda: tables_4_blocks(RESULTS / "paper_tables_4.jsonl"),
    "tables-4-pilot": lambda: tables_4_blocks(RESULTS / "paper_tables_4_tiny.jsonl", "pilot-"),
    "fspt": lambda: fspt_blocks(RESULTS / "paper_fspt.jsonl"),
    "openset": lambda: openset_blocks(RESULTS / "paper_openset_digits.jsonl"),
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
