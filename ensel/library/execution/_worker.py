"""The worker process of ProcessExecutor: ``python -m ensel.library.execution._worker FD THREADS``.

It limits native thread pools, receives the shared data once over the socket ``FD``, then runs
``(index, fn, task)`` messages until it receives ``None``. Started as a module, not by
multiprocessing, so it never re-imports the caller's ``__main__`` (scripts without a main guard,
code piped to stdin and notebooks all work).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import pickle
import sys
import time
from multiprocessing.connection import Connection


def describe(exc: BaseException) -> str:
    """One line: the exception's type and message."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@functools.cache
def _malloc_trim():
    """glibc's ``malloc_trim``, looked up once per worker (None elsewhere: macOS, musl)."""
    name = ctypes.util.find_library("c") if sys.platform.startswith("linux") else None
    if name is None:
        return None
    try:
        return ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        return None


def release_memory() -> bool:
    """Hand the memory a finished run freed back to the system: a worker lives for the whole
    build, and glibc keeps freed heap pages, so each run's peak stayed in the worker's resident
    memory and the workers grew over a build. True where glibc's ``malloc_trim`` was called
    (milliseconds; a full garbage collection is not run: with the model libraries loaded it
    costs far more per run, and what a run frees goes with its last reference)."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


def serve(conn: Connection, threads: int) -> None:
    from threadpoolctl import threadpool_limits

    threadpool_limits(threads)
    shared = pickle.loads(conn.recv_bytes())
    conn.send_bytes(pickle.dumps("ready"))
    while True:
        message = pickle.loads(conn.recv_bytes())
        if message is None:
            return
        index, fn, task = message
        start = time.perf_counter()
        try:
            value = fn(task, shared)
            payload = pickle.dumps(
                (index, "ok", value, "", time.perf_counter() - start),
                protocol=pickle.HIGHEST_PROTOCOL,
            )
        except Exception as exc:
            payload = pickle.dumps(
                (index, "failed", None, describe(exc), time.perf_counter() - start)
            )
        conn.send_bytes(payload)
        value = payload = message = task = None  # sent: nothing of the run need stay
        release_memory()


if __name__ == "__main__":  # pragma: no cover - runs in the child process
    serve(Connection(int(sys.argv[1])), int(sys.argv[2]))
    # nothing to tear down (results went over the socket): exit without the interpreter's
    # teardown, slow with the model libraries loaded, paid per worker and per build
    sys.stderr.flush()
    os._exit(0)
