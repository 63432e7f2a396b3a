"""Task functions for executor tests; importable by worker processes."""

from __future__ import annotations

import os
import signal
import time


class StartupBomb:
    """Shared data whose unpickling kills the worker: a worker that cannot start."""

    def __reduce__(self):
        return (os._exit, (3,))


def task(kind, shared):
    if kind == "ok":
        return shared * 2
    if kind == "raise":
        raise RuntimeError("bad parameters\nsecond line")
    if kind == "sleep":
        time.sleep(30)
    if kind == "spin":
        while True:
            pass
    if kind == "crash":
        os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError(kind)


def crash_once(marker: str, shared):
    """Kill the worker the first time (``marker`` does not exist yet), then succeed."""
    if not os.path.exists(marker):
        open(marker, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    return shared * 2


def hold_memory(megabytes: int, shared):
    """Hold ``megabytes`` of touched memory for a while (a run that outgrows a ceiling)."""
    import numpy as np

    block = np.ones(megabytes * 2**20 // 8)
    time.sleep(20)
    return float(block[0])


def log_span(name: str, path: str):
    """Append ``start name`` and, a moment later, ``end name`` to the file ``path``."""
    with open(path, "a") as fh:
        fh.write(f"start {name}\n")
    time.sleep(0.5)
    with open(path, "a") as fh:
        fh.write(f"end {name}\n")
    return name
