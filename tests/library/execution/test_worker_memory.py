"""A build's worker hands back the memory a finished run freed."""

from __future__ import annotations

import subprocess
import sys

import pytest

CODE = """
import os
import numpy as np
from ensel.library.execution._worker import release_memory

def rss_mb():
    pages = int(open("/proc/self/statm").read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20

blocks = [np.ones(128) for _ in range(200_000)]  # 1 KB each: glibc's heap, not mmap
kept = blocks[::64]  # a few survivors keep the freed pages from the heap's top
del blocks
before = rss_mb()
trimmed = release_memory()
print(trimmed, before - rss_mb())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_freed_heap_pages_go_back_to_the_system_after_a_run():
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, check=True)
    trimmed, released_mb = out.stdout.split()
    if trimmed != "True":
        pytest.skip("no glibc malloc_trim here (musl): nothing to trim")
    assert float(released_mb) > 100  # of about 200 MB freed; without the trim, about 0


def test_a_worker_releases_memory_after_every_run_failed_or_not(monkeypatch):
    import pickle
    import threading
    from multiprocessing import Pipe

    from ensel.library.execution import _worker

    calls = []
    monkeypatch.setattr(_worker, "release_memory", lambda: calls.append(1) or True)
    ours, theirs = Pipe()
    server = threading.Thread(target=_worker.serve, args=(theirs, 1))
    server.start()
    ours.send_bytes(pickle.dumps(10))  # the shared data, passed to every task
    assert pickle.loads(ours.recv_bytes()) == "ready"
    tasks = [(0, max, 3), (1, int, "x"), (2, max, 30)]  # max(3, 10); int("x", 10) fails
    for message in tasks:
        ours.send_bytes(pickle.dumps(message))
    replies = [pickle.loads(ours.recv_bytes())[:3] for _ in tasks]
    ours.send_bytes(pickle.dumps(None))
    server.join(10.0)
    assert replies == [(0, "ok", 10), (1, "failed", None), (2, "ok", 30)]
    assert len(calls) == len(tasks)
