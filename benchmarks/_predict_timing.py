"""The one way benchmarks time prediction, for ensel and its peers alike: warm (one untimed
call first, which loads what is lazy and fills caches), on the same rows (the whole test set
as one batch), in the process that holds the model. Imported by the benchmarks and, by file,
by the AutoGluon runner in its own environment, so it needs only the standard library."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

REPEATS = 3
SINGLE_CALLS = 200
"""Timed one-row calls per predictor in :func:`single_row_ms` (after ``WARM_CALLS`` untimed)."""
WARM_CALLS = 10


def median_seconds(fn: Callable[[], Any], repeats: int) -> float:
    """Median wall seconds of ``repeats`` calls of ``fn``."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def warm_predict(predict: Callable[[Any], Any], rows: Any, n_rows: int, repeats: int = REPEATS):
    """``(predictions, microseconds per row)``: ``predict(rows)`` once untimed (its output is
    returned), then the median wall time of ``repeats`` more calls divided by ``n_rows``."""
    if repeats < 1 or n_rows < 1:
        raise ValueError(f"repeats and n_rows must be at least 1, got {repeats} and {n_rows}")
    out = predict(rows)
    return out, 1e6 * median_seconds(lambda: predict(rows), repeats) / n_rows


def single_row_ms(predict: Callable[[Any], Any], rows: list, calls: int = SINGLE_CALLS) -> dict:
    """``{"p50_ms", "p99_ms"}`` of ``predict(row)``, one row per call, over ``calls`` calls
    cycling through ``rows``, after ``WARM_CALLS`` untimed calls: what a service answering one
    request at a time waits."""
    for i in range(WARM_CALLS):
        predict(rows[i % len(rows)])
    times = []
    for i in range(calls):
        start = time.perf_counter()
        predict(rows[i % len(rows)])
        times.append(1e3 * (time.perf_counter() - start))
    cuts = statistics.quantiles(times, n=100, method="inclusive")
    return {"p50_ms": statistics.median(times), "p99_ms": cuts[98]}
