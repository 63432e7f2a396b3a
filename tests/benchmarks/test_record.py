"""What benchmark rows record (benchmarks/_record.py) and the shared predict timing
(benchmarks/_predict_timing.py)."""

import subprocess
import sys

import numpy as np
import pytest

from benchmarks._predict_timing import warm_predict
from benchmarks._record import PeakMemory, git_commit, load_average, tree_rss_mb, versions


def test_git_commit_names_the_checkout_head():
    head = subprocess.run(
        ["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert git_commit().removesuffix("-dirty") == head


def test_versions_and_load():
    got = versions(("numpy", "no-such-package-here"))
    assert got == {"numpy": np.__version__}
    load = load_average()
    assert len(load) == 3 and all(x >= 0 for x in load)


def test_peak_memory_counts_a_child_process():
    # a child that holds ~200 MiB for a while; the tree's peak must include it
    code = "import time; b = bytearray(200 * 2**20); b[::4096] = b'x' * len(b[::4096]); "
    code += "time.sleep(3)"
    child = subprocess.Popen([sys.executable, "-c", code])
    with PeakMemory(interval=0.05) as mem:
        child.wait()
    alone = tree_rss_mb(child.pid) if child.poll() is None else 0.0
    assert alone == 0.0  # ended: nothing left to count
    assert mem.peak_mb >= 200


def test_warm_predict_calls_once_untimed_then_repeats():
    calls = []

    def predict(rows):
        calls.append(len(rows))
        return np.asarray(rows) * 2

    out, us = warm_predict(predict, [1, 2, 3], 3, repeats=3)
    assert calls == [3, 3, 3, 3]
    assert list(out) == [2, 4, 6] and us > 0
    with pytest.raises(ValueError, match="repeats"):
        warm_predict(predict, [1], 1, repeats=0)
