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
