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


def warm_predict(predict: Callable[[Any], Any], rows: Any, n_rows: int, repeats: int = REPEATS):
    """``(predictions, microseconds per row)``: ``predict(rows)`` once untimed (its output is
    returned), then the median wall time of ``repeats`` more calls divided by ``n_rows``."""
    if repeats < 1 or n_rows < 1:
        raise ValueError(f"repeats and n_rows must be at least 1, got {repeats} and {n_rows}")
    out = predict(rows)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        predict(rows)
        times.append(time.perf_counter() - start)
    return out, 1e6 * statistics.median(times) / n_rows
