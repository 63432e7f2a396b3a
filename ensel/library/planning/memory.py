"""The memory ceiling of a build (``max_memory``), kept like the time budget.

Before the build, :func:`check_data_fits` says in one line when the training data alone cannot
fit under the ceiling. During the build a :class:`MemoryGate` tells the executor which runs may
start: each run has an estimated peak (:func:`run_peak`), a run starts only while the estimates
of the runs in flight, the idle workers and this process stay under the ceiling (it waits
otherwise), a run whose estimate alone exceeds what the ceiling leaves is skipped with a note
(status ``memory``), and a run that pushes the measured memory of all processes over the
ceiling anyway is stopped, as a run over its time limit is.

The estimates are deliberately simple (documented in docs/library.md, "Memory"): the float64
matrix of the run's view on its training rows, times the factor its family declares for its
working copies (solver temporaries, boosting's binned copy, a forest's per-tree samples), plus
what the fitted siblings hold as the family declares it (tree nodes of a forest, the stored rows
of k-NN), twice (the objects and their pickled bytes), plus the fold copies of the raw frame.
Another kind of run (detectors) declares its own estimate on its kind.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..families import traits_of
from ..kinds import get_kind

__all__ = [
    "DEFAULT_SHARE",
    "WORKER_BYTES",
    "MemoryGate",
    "check_data_fits",
    "data_bytes",
    "format_bytes",
    "memory_limit",
    "parse_memory",
    "process_rss",
    "resolve_max_memory",
    "run_peak",
    "selection_memory",
    "view_width",
]

DEFAULT_SHARE = 0.8
"""``max_memory=None`` allows this share of the memory this process may use (its cgroup's
``memory.max`` where set, else the machine's physical memory)."""
WORKER_BYTES = 250 * 2**20
"""Resident memory of an idle worker process (Python, numpy, scikit-learn and the family
libraries loaded) before it fits anything."""
DATA_COPIES = 3
"""The training data is held about this many times over before any run starts (the frame, its
checked copy, the folds and fingerprint temporaries); ``check_data_fits`` counts these."""
_UNITS = {"": 1, "b": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def parse_memory(value, name: str = "max_memory") -> int | None:
    """``value`` in bytes: None, a positive number of bytes, or a string such as ``"8GB"``,
    ``"512 MiB"`` or ``"1.5g"`` (K, M, G, T as powers of 1024). A ValueError names ``name``."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError(f"{name}={value!r}: give bytes (a number) or a size such as '8GB'")
    if isinstance(value, int | float | np.integer | np.floating):
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"{name}={value!r}: give a positive number of bytes or e.g. '8GB'")
        return int(value)
    if isinstance(value, str):
        match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kmgt]?)(i?b)?\s*", value.lower())
        if match and float(match.group(1)) > 0:
            return int(float(match.group(1)) * _UNITS[match.group(2)])
    raise ValueError(
        f"{name}={value!r}: give a positive number of bytes or a size such as '8GB' or '512MB'"
    )


def memory_limit() -> int:
    """Bytes this process may use: its cgroup's limit (v2 ``memory.max``, v1
    ``memory.limit_in_bytes``) where one is set, else the physical memory."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for path in _cgroup_limit_files():
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text.isdigit() and 0 < int(text) < total:
            return int(text)
    return int(total)


def _cgroup_limit_files() -> list[Path]:
    files = []
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, where = line.split(":", 2)
            root = Path("/sys/fs/cgroup")
            if controllers == "":
                files.append(root / where.lstrip("/") / "memory.max")
            elif "memory" in controllers.split(","):
                files.append(root / "memory" / where.lstrip("/") / "memory.limit_in_bytes")
    except (OSError, ValueError):
        pass
    return [*files, Path("/sys/fs/cgroup/memory.max")]


def resolve_max_memory(value) -> int:
    """The ceiling in bytes: ``value`` parsed (:func:`parse_memory`), or ``DEFAULT_SHARE`` of
    :func:`memory_limit` for None."""
    parsed = parse_memory(value)
    return parsed if parsed is not None else int(DEFAULT_SHARE * memory_limit())


def selection_memory(max_memory) -> int:
    """Bytes selection may use for its copies of the prediction matrix under ``max_memory``:
    what the ceiling leaves beside this process, at most half the memory available now (the
    selection's own default), at least 64 MB (below that it reads the matrix in blocks)."""
    room = resolve_max_memory(max_memory) - (process_rss() or 0)
    try:
        import psutil

        room = min(room, psutil.virtual_memory().available // 2)
    except ImportError:
        pass
    return int(max(room, 64 * 2**20))


def format_bytes(n: float) -> str:
    """``n`` bytes as a short size (``"1.5 GB"``, ``"320 MB"``), powers of 1024."""
    for unit, size in (("TB", 2**40), ("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}" if n < 10 * size else f"{n / size:.0f} {unit}"
    return f"{int(n)} bytes"


def process_rss(pid: int | None = None) -> int | None:
    """Resident memory of process ``pid`` (this one by default) in bytes, from ``/proc``
    (psutil elsewhere); None where neither can tell."""
    pid = os.getpid() if pid is None else pid
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        pass
    try:
        import psutil

        return int(psutil.Process(pid).memory_info().rss)
    except Exception:
        return None


def data_bytes(X: pd.DataFrame) -> int:
    """Bytes of the training frame in memory (numeric cells as float64)."""
    return int(X.memory_usage(deep=True, index=False).sum())


def check_data_fits(X: pd.DataFrame, max_memory: int | None, n_workers: int) -> None:
    """Raise a one-line ValueError when the training data alone cannot fit under
    ``max_memory`` (None: no ceiling): this process as it is now, ``DATA_COPIES`` copies of
    the data and one worker with its own view of it (``n_workers`` only says whether there
    are workers)."""
    if max_memory is None:
        return
    here = process_rss() or 0
    data = data_bytes(X)
    need = here + DATA_COPIES * data + (WORKER_BYTES + data if n_workers > 1 else 0)
    if need > max_memory:
        raise ValueError(
            f"max_memory={format_bytes(max_memory)} cannot hold the training data: "
            f"{len(X):,} rows x {X.shape[1]} columns take {format_bytes(data)}, held about "
            f"{DATA_COPIES} times over, beside this process ({format_bytes(here)})"
            f"{' and one worker' if n_workers > 1 else ''}; give max_memory of at least "
            f"{format_bytes(need * 1.1)}, or fewer rows"
        )


def view_width(view: str, columns, levels_cap: int = 34, native_missing: bool = False) -> int:
    """Columns of a run's view matrix: numeric columns (with missing indicators unless the
    family takes NaN), and per categorical column one code (native view) or at most
    ``levels_cap`` one-hot columns (standardized view, see ``views.MAX_LEVELS``)."""
    numeric = len(columns.numeric) * (1 if native_missing else 2)
    if view == "native":
        return numeric + len(columns.categorical)
    return numeric + sum(min(len(c) + 2, levels_cap) for c in columns.categories)


def run_peak(section: str, run, data) -> int:
    """Estimated peak bytes of one run of section ``section`` (its kind) on ``data`` (a
    ``TrainingData``), in a worker on top of ``WORKER_BYTES`` (see the module docstring): the
    kind's own estimate where it declares one, else a model run's."""
    kind = get_kind(section)
    if kind.peak is not None:
        return int(kind.peak(run, data))
    n_rows = len(data.X)
    n_train = n_rows - n_rows // max(data.n_siblings, 2)
    raw = data_bytes(data.X)
    params = run.param_dict
    width = view_width(run.view, data.columns)
    view = 8 * width * n_train
    cost = traits_of(run.family, run.task).cost
    held = data.n_siblings * cost.held_bytes(params, run.stages, n_train, width)
    hill = 8 * int(data.hillclimb.size) * max(data.n_outputs, 1) * 2 * len(run.members)
    return int(2 * raw + cost.memory_factor * view + 2 * held + hill)


@dataclass
class MemoryGate:
    """Which runs may start under a memory ceiling, for an executor.

    ``ceiling``: bytes all processes of the build may hold; ``peaks[i]``: the estimated peak of
    task ``i`` (on top of an idle worker's ``worker_bytes``); ``main``: a callable giving this
    process's resident bytes now. The executor asks :meth:`never_fits` once per task,
    :meth:`fits` before it starts one, and :meth:`over` while runs are in flight."""

    ceiling: int
    peaks: Sequence[int]
    worker_bytes: int = WORKER_BYTES
    main: Callable[[], int | None] = process_rss

    def workers(self, wanted: int) -> int:
        """How many worker processes to start: at most ``wanted``, and no more than the
        ceiling holds with each running the smallest run (at least one)."""
        room = self.ceiling - (self.main() or 0)
        smallest = min(self.peaks, default=0)
        return max(1, min(wanted, int(room // max(self.worker_bytes + smallest, 1))))

    def never_fits(self, index: int, workers: int = 1) -> str | None:
        """Why task ``index`` cannot run under the ceiling even alone (beside this process and
        ``workers`` idle workers: 0 when it runs in this process), or None."""
        here = self.main() or 0
        room = self.ceiling - here - workers * self.worker_bytes
        if self.peaks[index] > room:
            return (
                f"skipped: its estimated peak memory {format_bytes(self.peaks[index])} does "
                f"not fit in max_memory={format_bytes(self.ceiling)} beside this process "
                f"({format_bytes(here)}); give a larger max_memory or fewer rows"
            )
        return None

    def fits(self, index: int, running: Sequence[int], n_workers: int) -> bool:
        """Whether task ``index`` may start now beside the tasks ``running`` on a pool of
        ``n_workers`` processes (each holding at least ``worker_bytes``)."""
        if not running:
            return True  # alone it fits (never_fits said so): never wait on nothing
        used = (self.main() or 0) + n_workers * self.worker_bytes
        used += sum(self.peaks[i] for i in running)
        return used + self.peaks[index] <= self.ceiling

    def over(self, worker_rss: Sequence[int]) -> bool:
        """Whether this process and workers of resident sizes ``worker_rss`` exceed the
        ceiling now."""
        return (self.main() or 0) + sum(worker_rss) > self.ceiling


def memory_note(ceiling: int, seconds: float) -> str:
    """What a run stopped for exceeding the ceiling says."""
    return (
        f"stopped after {seconds:.0f} s: the build's processes reached "
        f"max_memory={format_bytes(ceiling)} while it ran; give a larger max_memory, fewer "
        "rows, or n_jobs=1"
    )
