"""Recompute the planner's gain prior (``ensel/library/planning/gain_prior.json``) from the
committed result rows: each family's mean share of ensemble weight in ensel's final ensembles
on the real development tables of at least ``MIN_ROWS`` training rows.

A row counts where it is ensel's (``tool``: ``ensel``, or no ``tool``), names the families with
weight (``families_with_weight``: ``[[family, weight], ...]``) and has at least ``MIN_ROWS``
rows (``rows`` or ``n_train``) of a table that is not synthetic (a name starting ``synth``: the
synthetic tables are kept for memory and the 1M-row case, not for choosing defaults). Tables
are the unit: a family's share is averaged over a table's rows first, then over the tables (a
family absent from a row earned 0 there). Families absent from every row get ``DEFAULT``.

    python -m benchmarks.gain_prior            # rewrite the shipped file
    python -m benchmarks.gain_prior --check    # print it, write nothing
"""

from __future__ import annotations

import argparse
import glob
import json
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from benchmarks._record import ROOT, load_results

RESULTS = ROOT / "benchmarks" / "results"
TARGET = ROOT / "ensel" / "library" / "planning" / "gain_prior.json"

MIN_ROWS = 20_000
"""Tables from this many training rows count (where the planner orders runs by gain)."""
DEFAULT = 0.002
"""The prior of a family no counted row names: below every family that earned weight."""
STRONG = 0.05
"""A family is strong where its prior is at least this share of the ensemble's weight."""
DIGITS = 4


def read_rows(paths: Iterable[str | Path]) -> list[dict]:
    """The rows of the JSON-lines files at ``paths``."""
    return [row for path in paths for row in load_results(Path(path))]


def counted(row: dict, min_rows: int = MIN_ROWS) -> bool:
    """Whether ``row`` is one of ensel's fits on a real table of ``min_rows`` rows or more that
    names its families with weight."""
    rows = row.get("rows", row.get("n_train"))
    table = str(row.get("table", row.get("dataset", "")))
    return (
        row.get("tool", "ensel") == "ensel"
        and isinstance(row.get("families_with_weight"), list)
        and rows is not None
        and float(rows) >= min_rows
        and not table.startswith("synth")
    )


def gain_prior(rows: Iterable[dict], min_rows: int = MIN_ROWS) -> dict:
    """The prior file's content from ``rows``: per family its mean weight share over the
    tables (each table's rows averaged first), the tables and rows counted, ``default`` and
    ``strong``."""
    by_table: dict[str, list[dict[str, float]]] = defaultdict(list)
    for row in rows:
        if counted(row, min_rows):
            table = str(row.get("table", row.get("dataset")))
            by_table[table].append({f: float(w) for f, w in row["families_with_weight"]})
    families = sorted({f for fits in by_table.values() for fit in fits for f in fit})
    shares = {}
    for family in families:
        per_table = [
            sum(fit.get(family, 0.0) for fit in fits) / len(fits) for fits in by_table.values()
        ]
        shares[family] = round(sum(per_table) / len(per_table), DIGITS)
    return {
        "about": (
            "Each family's mean share of ensemble weight in ensel's final ensembles on the real "
            f"development tables of at least {min_rows} rows (tables as the unit); written by "
            "python -m benchmarks.gain_prior from benchmarks/results/*.jsonl."
        ),
        "min_rows": min_rows,
        "default": DEFAULT,
        "strong": STRONG,
        "tables": {t: len(fits) for t, fits in sorted(by_table.items())},
        "families": dict(sorted(shares.items(), key=lambda kv: (-kv[1], kv[0]))),
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default=str(RESULTS / "*.jsonl"), help="rows to read")
    parser.add_argument("--out", default=str(TARGET), help="the file to write")
    parser.add_argument("--check", action="store_true", help="print the prior, write nothing")
    args = parser.parse_args(argv)
    prior = gain_prior(read_rows(sorted(glob.glob(args.results))))
    text = json.dumps(prior, indent=2) + "\n"
    print(text, end="")
    if not args.check:
        Path(args.out).write_text(text)
    return prior


if __name__ == "__main__":
    main()
