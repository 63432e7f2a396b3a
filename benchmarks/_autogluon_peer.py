"""Runs AutoGluon's EnsembleSelection on a saved library; executed inside the benchmark's own
AutoGluon environment (never imported by ensel). Prints one JSON line per metric."""

from __future__ import annotations

import json
import sys
import time

import numpy as np
from autogluon.core import metrics
from autogluon.core.models.greedy_ensemble.ensemble_selection import EnsembleSelection

SCORERS = {
    "roc": metrics.roc_auc,
    "acc": metrics.accuracy,
    "mxe": metrics.log_loss,
    "fsc": metrics.f1,
}


def main() -> None:
    path, steps = sys.argv[1], int(sys.argv[2])
    data = np.load(path)
    P, y = data["P"], data["y"]
    predictions = list(P)
    for name in sys.argv[3:]:
        es = EnsembleSelection(
            ensemble_size=steps,
            problem_type="binary",
            metric=SCORERS[name],
            random_state=np.random.RandomState(0),
        )
        start_cpu, start = time.process_time(), time.perf_counter()
        es.fit(predictions, y)
        cpu, wall = time.process_time() - start_cpu, time.perf_counter() - start
        record = {
            "metric": name,
            "cpu_per_step": cpu / steps,
            "wall_per_step": wall / steps,
            "indices": [int(i) for i in es.indices_],
        }
        print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
