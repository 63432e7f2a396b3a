"""Shared helpers for benchmark reports: the machine line and replacing one section of
docs/benchmarks.md while keeping the others."""

from __future__ import annotations

import os
import platform
import time
from datetime import date
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def machine_line(command: str) -> str:
    return (
        f"Measured {date.today()} on {platform.machine()}, {os.cpu_count()} cores "
        f"({platform.processor() or 'unknown CPU'}), Python {platform.python_version()}; "
        f"command: `{command}`."
    )


def write_section(section: str, lines: list[str]) -> None:
    """Replace ``section`` (a ``## `` heading) of docs/benchmarks.md with ``lines``."""
    path = ROOT / "docs" / "benchmarks.md"
    text = path.read_text() if path.exists() else "# Benchmarks\n\n"
    body = "\n".join([section, *lines])
    if section in text:
        head, _, rest = text.partition(section)
        tail = rest[rest.find("\n## ") :] if "\n## " in rest else "\n"
        text = head + body + tail
    else:
        text = text.rstrip("\n") + "\n\n" + body + "\n"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    print(f"wrote {path.relative_to(ROOT)}")


def median_seconds(fn, repeats: int) -> float:
    """Median wall time of ``repeats`` calls of ``fn``."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def warm_median_ms(call, repeats: int, threads: int) -> tuple[float, object]:
    """The median milliseconds of ``repeats`` calls of ``call`` at ``threads`` BLAS/OpenMP
    threads, after one untimed call (whose output is returned with it)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(threads):
        out = call()
        return 1e3 * median_seconds(call, repeats), out


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


def variants_against(every, baseline: str, called: str | None = None) -> list[str]:
    """Markdown lines: per metric (log loss, AUC), each ``variant``'s per-dataset mean over
    seeds in a table, then every variant against ``baseline`` with datasets as the unit
    (positive differences: the variant is better). ``every``: rows with ``variant``,
    ``dataset``, ``seed``, ``logloss`` and ``auc``; ``called``: the baseline's name in the
    lines (itself by default)."""
    import pandas as pd

    from benchmarks._stats import paired_over_datasets, per_dataset

    called = called or baseline
    lines = []
    for metric, higher in (("logloss", False), ("auc", True)):
        means = {
            v: per_dataset(every[every["variant"] == v], metric)["mean"]
            for v in sorted(every["variant"].unique())
        }
        lines += [f"Test {metric} per dataset (mean over seeds):", ""]
        lines += [markdown_table(pd.DataFrame(means)), ""]
        for v, m in means.items():
            if v == baseline:
                continue
            st = paired_over_datasets(m, means[baseline], higher)
            lines.append(
                f"- {v} vs {called}, {metric}: better on {st['wins']} of {st['datasets']} "
                f"datasets, mean {st['mean diff']:+.4f} ± {st['se diff']:.4f}, t-test p = "
                f"{st['p (t-test)']:.2f}, sign test p = {st['p (sign test)']:.2f}"
            )
        lines.append("")
    return lines


def write_timing_rows(
    rows: list[dict], results: Path, section: str, command: str, load, detail: str, packages
) -> None:
    """Append ``rows`` with their provenance (commit, versions, the load at the start) to the
    JSON lines ``results``, and write them as ``section`` of docs/benchmarks.md: the machine,
    commit, load and the versions of ``packages``, then ``detail`` (what was timed), then the
    table."""
    import json

    import pandas as pd

    from benchmarks._record import git_commit, utc_now, versions

    record = {"commit": git_commit(), "versions": versions(), "load_start": load, "utc": utc_now()}
    with results.open("a") as out:
        for row in rows:
            out.write(json.dumps({**row, **record}) + "\n")
    named = ", ".join(f"{p} {record['versions'].get(p, '?')}" for p in packages)
    write_section(
        section,
        [
            "",
            machine_line(command),
            f"Commit {record['commit']}; load average at the start "
            f"{', '.join(f'{x:.2f}' for x in load)}; {named}. {detail}",
            "",
            markdown_table(pd.DataFrame(rows), ".3g", index=False),
            "",
        ],
    )
