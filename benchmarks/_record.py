"""What every benchmark result row records about the run (the conventions' list): the commit,
package versions, the machine's load, and the peak memory of a process tree (the process and
all its descendants, e.g. joblib workers or AutoGluon's ray workers) sampled in a thread."""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import subprocess
import tempfile
import threading
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
ENSEL_PACKAGES = (
    "ensel",
    "scikit-learn",
    "numpy",
    "pandas",
    "numba",
    "lightgbm",
    "xgboost",
    "xgboost-cpu",
    "catboost",
    "torch",
    "pytabkit",
)
"""The packages a row's ``versions`` names where installed: the optional ones (catboost, torch,
pytabkit) decide which families a default build fits, so a row says whether they were there."""


UNTRACKED_OUTPUTS = (":!benchmarks/results", ":!docs/results.md", ":!docs/img")
"""What benchmark runs write themselves: changes there do not make the code dirty."""


def git_commit(root: Path = ROOT) -> str:
    """The checkout's commit (short hash), with "-dirty" when tracked files other than the
    benchmarks' own outputs (``UNTRACKED_OUTPUTS``) differ from it; "unknown" outside git."""
    try:
        run = dict(cwd=root, capture_output=True, text=True, check=True)
        head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], **run).stdout.strip()
        status = ["git", "status", "--porcelain", "-uno", "--", ".", *UNTRACKED_OUTPUTS]
        dirty = subprocess.run(status, **run).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("-dirty" if dirty else "")


def versions(packages=ENSEL_PACKAGES) -> dict[str, str]:
    """Installed version of each of ``packages`` that is installed (the others are left out)."""
    out = {}
    for name in packages:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages, rounded to 2 decimals."""
    return [round(x, 2) for x in os.getloadavg()]


def utc_now() -> str:
    """The UTC time to the second (ISO 8601): rows from separate sessions differ by more than
    their code on the larger tables, so a row says when it was measured."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def machine() -> str:
    """The machine a row was measured on: architecture, cores, processor and Python."""
    return (
        f"{platform.machine()}, {os.cpu_count()} cores, {platform.processor() or 'unknown CPU'}, "
        f"Python {platform.python_version()}"
    )


def provenance() -> dict:
    """What every result row records about its run: the commit, the versions, the machine, the
    load and the UTC time it was recorded."""
    return {
        "commit": git_commit(),
        "versions": versions(),
        "machine": machine(),
        "load": load_average(),
        "utc": utc_now(),
    }


def _tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def tree_rss_mb(pid: int) -> float:
    """Resident memory of process ``pid`` and all its descendants, in MiB (pages shared between
    them, such as ray's object store, count once per process: an upper bound)."""
    total = 0
    for proc in _tree(pid):
        try:
            total += proc.memory_info().rss
        except psutil.Error:  # ended between listing and reading
            continue
    return total / 2**20


class PeakMemory:
    """Peak of ``tree_rss_mb(pid)`` while the context is open, sampled every ``interval``
    seconds in a daemon thread (``pid`` None: this process, with its children; ``children``
    False: the process alone), and the CPU seconds the tree spent meanwhile (``cpu_seconds``:
    each process's user + system time at its last sample, less what it had at the start; a
    process's last ``interval`` can be missed).

    >>> with PeakMemory() as mem:
    ...     fit()
    >>> mem.peak_mb, mem.cpu_seconds
    """

    def __init__(self, pid: int | None = None, interval: float = 0.25, children: bool = True):
        self.pid = os.getpid() if pid is None else pid
        self.interval, self.children = interval, children
        self.peak_mb = 0.0
        self._cpu0: dict[int, float] = {}
        self._cpu: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _read(self) -> tuple[float, dict[int, float]]:
        rss, cpu = 0, {}
        for proc in _tree(self.pid)[: None if self.children else 1]:
            try:
                with proc.oneshot():
                    rss += proc.memory_info().rss
                    times = proc.cpu_times()
                    cpu[proc.pid] = times.user + times.system
            except psutil.Error:
                continue
        return rss / 2**20, cpu

    def _sample(self) -> None:
        while True:
            rss, cpu = self._read()
            self.peak_mb = max(self.peak_mb, rss)
            self._cpu.update(cpu)
            if self._stop.wait(self.interval):
                return

    @property
    def cpu_seconds(self) -> float:
        return sum(t - self._cpu0.get(pid, 0.0) for pid, t in self._cpu.items())

    def start(self) -> PeakMemory:
        self.peak_mb, self._cpu0 = self._read()
        self._thread.start()
        return self

    def stop(self) -> float:
        """Stop sampling (after one last sample) and return the peak in MiB."""
        if self._thread.is_alive():
            self._stop.set()
            self._thread.join()
        rss, cpu = self._read()
        self.peak_mb = max(self.peak_mb, rss)
        self._cpu.update(cpu)
        return self.peak_mb

    def __enter__(self) -> PeakMemory:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def open_results(path: Path, mode: str = "r"):
    """A JSON-lines results file opened as text; gzip-compressed where its name ends in
    ``.gz`` (a suite of thousands of rows stays small in git; appending adds a gzip member,
    which readers take as one stream)."""
    return gzip.open(path, mode + "t") if path.suffix == ".gz" else open(path, mode)


def load_results(path: Path) -> list[dict]:
    """The rows of a JSON-lines results file, plain or ``.gz`` (none where it does not exist
    yet)."""
    if not path.exists():
        return []
    with open_results(path) as fh:
        return [json.loads(line) for line in fh if line.strip()]


def append_rows(path: Path, rows: list[dict]) -> None:
    """Append ``rows`` to the JSON-lines file ``path`` and sync it to disk, so that a run stopped
    at any moment keeps every row it finished (the resumable suites skip those)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open_results(path, "a") as fh:
        fh.writelines(json.dumps(row, default=str) + "\n" for row in rows)
        fh.flush()
        os.fsync(fh.fileno())


def append_row(path: Path, row: dict) -> None:
    """``append_rows`` of one row."""
    append_rows(path, [row])


def merged_rows(paths: list[Path], key: tuple[str, ...]) -> list[dict]:
    """The rows of ``paths`` read in order, a row in a later file replacing the row with the same
    ``key`` fields in an earlier one: rows of several runs side by side without a combined copy
    of them."""
    rows = {}
    for path in paths:
        for row in load_results(path):
            rows[tuple(row[k] for k in key)] = row
    return list(rows.values())


def measured_rows(results: Path, measure) -> list[dict]:
    """``measure()``'s rows, each appended to the JSON-lines file ``results`` with the peak
    memory of the call and the provenance (commit, versions, machine, load); returns them
    without those fields."""
    with PeakMemory() as memory:
        rows = measure()
    extra = {"peak_mb": round(memory.peak_mb, 1), **provenance()}
    append_rows(results, [{**row, **extra} for row in rows])
    return rows


def quick_results(name: str) -> Path:
    """A fresh results file for a ``--quick`` run, in the temporary directory."""
    path = Path(tempfile.gettempdir()) / f"ensel-{name}-quick.jsonl"
    path.unlink(missing_ok=True)
    return path


def suite_parser(doc: str, results: Path) -> argparse.ArgumentParser:
    """A suite's command line with the two options every suite has: ``--quick`` (a small
    end-to-end run into a temporary file) and ``--results`` (default ``results``)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small run, a temporary file")
    parser.add_argument("--results", type=Path, default=None, help=f"default {results.name}")
    return parser


def results_path(args: argparse.Namespace, results: Path, name: str) -> Path:
    """Where a run of ``suite_parser``'s ``args`` appends its rows: ``--results``, else a fresh
    temporary file for ``--quick`` (``quick_results(name)``), else the suite's ``results``."""
    if args.results is not None:
        return Path(args.results)
    return quick_results(name) if args.quick else results
