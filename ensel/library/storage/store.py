"""PredictionStore: a directory that keeps a library's hillclimb predictions and fitted runs.

Layout::

    store.json         format, fingerprint of the data and folds, classes, hillclimb size
    hillclimb.npz      hillclimb row indices and their encoded labels
    manifest.jsonl     one line per finished run (ok, failed or timeout): the commit record
    runs/<id>.npy      a run's hillclimb predictions, (members, N, C) float32 (float64 for
                       regression, see kinds.prediction_dtype)
    runs/<id>.pkl      a run's fitted siblings and calibrators (pickle: open trusted stores only)
    predictions-<token>.npy   all ok members' predictions, (M, N) or (M, N, C), memory-mapped
    predictions.json   which matrix file is current, and its run order
    lock               held by the one build that may write the store

The store is created in a temporary directory and renamed into place. Every file is written to
a temporary name, flushed, fsynced and renamed; a run counts as finished only once its manifest
line is complete, and a matrix only once predictions.json names it, so a build killed at any
point resumes without losing finished runs and without reading half-written files.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import pickle
import shutil
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...errors import StoreError
from ..kinds import PackedRun, RunLike, prediction_dtype

__all__ = ["PackedRun", "PredictionStore", "member_id"]

FORMAT = 1
STATUSES = ("ok", "failed", "timeout", "budget", "memory", "left_out")
"""budget: stopped or never started because the build's time budget ran out (resumed later);
memory: not started or stopped because it did not fit under the build's ``max_memory`` (tried
again by a later build); left_out: a build's plan left the run out before it started, as it
would not fit the budget (its ``error`` says why; planned again by the next build)."""


def member_id(run_id: str, stage: int | None, calibration: str) -> str:
    """``<run id>[/s<stage>]/<calibration>``, e.g. ``adaboost-0a1b2c3d4e5f/s64/platt``."""
    return f"{run_id}/s{stage}/{calibration}" if stage is not None else f"{run_id}/{calibration}"


def _atomic_write(path: Path, write: Callable[[Any], None], mode: str = "wb") -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, mode) as fh:
        write(fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class PredictionStore:
    """Open (or create) the store at ``path``.

    With ``header`` (what the builder computed from the data) the store is opened for writing:
    it is created if missing (atomically: built in a temporary directory, then renamed), an
    existing one must match the header, else a StoreError says what differs, and an exclusive
    lock keeps a second build out until ``close()``. Without it the store is opened read-only."""

    def __init__(self, path: str | os.PathLike, header: dict | None = None) -> None:
        self.path = Path(path)
        self._lock = None
        if not (self.path / "store.json").exists():
            if header is None:
                raise StoreError(f"{self.path} is not a prediction store (no store.json)")
            self._create(dict(header))
        self.header = self._read_header()
        if header is not None:
            self._acquire_lock()
            self._check_same(header)
        self._records = self._read_manifest(repair=header is not None)

    def _create(self, header: dict) -> None:
        if self.path.exists() and any(self.path.iterdir()):
            raise StoreError(
                f"{self.path} exists and is not a prediction store; choose an empty or new path"
            )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.creating")
        shutil.rmtree(tmp, ignore_errors=True)
        (tmp / "runs").mkdir(parents=True)
        hill = {k: np.asarray(header.pop(k)) for k in ("hillclimb", "labels")}
        _atomic_write(tmp / "hillclimb.npz", lambda fh: np.savez(fh, **hill))
        text = json.dumps({"format": FORMAT, **header}, indent=1)
        _atomic_write(tmp / "store.json", lambda fh: fh.write(text), mode="w")
        os.replace(tmp, self.path)  # onto a missing or empty directory: the store appears whole
        _fsync_dir(self.path.parent)

    def _read_header(self) -> dict:
        header_file = self.path / "store.json"
        try:
            header = json.loads(header_file.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise StoreError(
                f"{header_file} is corrupt ({exc}); delete the store directory to rebuild"
            ) from None
        if header.get("format") != FORMAT:
            raise StoreError(f"{header_file}: unknown store format {header.get('format')}")
        return header

    def _acquire_lock(self) -> None:
        fh = open(self.path / "lock", "w")  # held until close()
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.close()
            raise StoreError(
                f"another build is writing to {self.path}; wait for it to end or use another "
                "store path"
            ) from None
        self._lock = fh

    def close(self) -> None:
        """Release the write lock (a no-op for a read-only store)."""
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    # ------------------------------------------------------------------ header and manifest

    def _check_same(self, header: dict) -> None:
        ours, theirs = self.header.get("fingerprint", {}), header.get("fingerprint", {})
        differ = [k for k in theirs if ours.get(k) != theirs[k]]
        differ += [
            k for k in ("classes", "n_hillclimb", "cv") if self.header.get(k) != header.get(k)
        ]
        if self.header.get("task", "classification") != header.get("task", "classification"):
            differ.append("task")
        if differ:
            raise StoreError(
                f"the store at {self.path} was built for other data or folds (differs in: "
                f"{', '.join(dict.fromkeys(differ))}); use a new store path, or delete this one "
                "to rebuild"
            )

    @property
    def manifest_path(self) -> Path:
        return self.path / "manifest.jsonl"

    def _read_manifest(self, repair: bool) -> dict[str, dict]:
        """The manifest's records. An unterminated last line is a commit that never finished
        (the build died while appending it): a writer cuts it off, a reader ignores it."""
        if not self.manifest_path.exists():
            return {}
        raw = self.manifest_path.read_bytes()
        lines = raw.split(b"\n")
        if lines and lines[-1] != b"":
            if repair:
                with open(self.manifest_path, "r+b") as fh:
                    fh.truncate(len(raw) - len(lines[-1]))
            lines = lines[:-1]
        records = {}
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                run_id, status = record["run"], record["status"]
            except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError):
                raise StoreError(
                    f"{self.manifest_path} line {number} is corrupt; delete the store to "
                    "rebuild, or remove that line to refit its run"
                ) from None
            if status not in STATUSES:
                raise StoreError(f"{self.manifest_path} line {number}: unknown status {status!r}")
            records[run_id] = record
        return records

    def _append(self, record: dict) -> None:
        with open(self.manifest_path, "a") as fh:
            fh.write(json.dumps(record, default=str) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        self._records[record["run"]] = record

    @property
    def records(self) -> dict[str, dict]:
        """Run id -> manifest record of every finished run."""
        return dict(self._records)

    @property
    def _task(self) -> str:
        return self.header.get("task", "classification")

    # ------------------------------------------------------------------ writing runs

    def write_run(self, run: RunLike, result: PackedRun, seconds: float, note: str = "") -> None:
        """Commit a finished run: predictions and fitted bundle first, the manifest line last.
        ``note``: how the build trained it where that differs from the spec (a subsample)."""
        rid = run.run_id
        preds = np.ascontiguousarray(result.predictions, dtype=prediction_dtype(self._task))
        fitted = result.fitted
        _atomic_write(self.path / "runs" / f"{rid}.npy", lambda fh: np.save(fh, preds))
        _atomic_write(self.path / "runs" / f"{rid}.pkl", lambda fh: fh.write(fitted))
        record = _record(run, "ok", "", seconds, result.costs)
        self._append({**record, "note": note} if note else record)

    def write_failure(self, run: RunLike, status: str, error: str, seconds: float) -> None:
        """Record a run that failed or ran out of time, so the build goes on without it."""
        self._append(_record(run, status, error, seconds))

    def write_plan(self, plan: pd.DataFrame) -> None:
        """Keep the plan of the last build under a time budget (one row per run: what it
        decided and why) as ``plan.json``, written atomically."""
        text = plan.to_json(orient="records")
        _atomic_write(self.path / "plan.json", lambda fh: fh.write(text), mode="w")

    def plan(self) -> pd.DataFrame | None:
        """The plan ``write_plan`` kept, or None where no build was planned."""
        path = self.path / "plan.json"
        if not path.exists():
            return None
        return pd.DataFrame(json.loads(path.read_text()))

    # ------------------------------------------------------------------ reading

    def hillclimb(self) -> tuple[np.ndarray, np.ndarray]:
        """Hillclimb row indices into the training data, and their encoded labels."""
        try:
            with np.load(self.path / "hillclimb.npz") as z:
                return z["hillclimb"], z["labels"]
        except (OSError, ValueError, KeyError) as exc:
            raise StoreError(
                f"{self.path / 'hillclimb.npz'} is missing or corrupt: {exc}"
            ) from None

    def run_predictions(self, run_id: str) -> np.ndarray:
        path = self.path / "runs" / f"{run_id}.npy"
        try:
            return np.load(path, mmap_mode="r")
        except (OSError, ValueError) as exc:
            raise StoreError(
                f"{path} is missing or corrupt ({exc}); remove run {run_id}'s line from "
                f"{self.manifest_path.name} to refit it"
            ) from None

    def load_fitted(self, run_id: str):
        """The fitted siblings of a run. This unpickles: open only stores you trust."""
        path = self.path / "runs" / f"{run_id}.pkl"
        try:
            with open(path, "rb") as fh:
                return pickle.load(fh)
        except Exception as exc:
            raise StoreError(f"{path} cannot be loaded ({exc}); refit run {run_id}") from None

    def ok_runs(self, order: Iterable[str] | None = None) -> list[str]:
        """Ids of the ok runs, in ``order`` where given (else in manifest order)."""
        ids = list(order) if order is not None else list(self._records)
        return [r for r in ids if self._records.get(r, {}).get("status") == "ok"]

    def members(self, runs: Iterable[str], statuses: tuple[str, ...] = ("ok",)) -> pd.DataFrame:
        """One row per member of ``runs`` whose status is in ``statuses``."""
        rows = []
        for rid in runs:
            rec = self._records.get(rid)
            if rec is None or rec["status"] not in statuses:
                continue
            for stage, cal in _member_keys(rec):
                alone = _member_predict_ms(rec, stage)
                rows.append(
                    {
                        "id": member_id(rid, stage, cal),
                        "run": rid,
                        "family": rec["family"],
                        "params": rec["params"],
                        "view": rec["view"],
                        "calibration": cal,
                        "stage": stage,
                        "status": rec["status"],
                        "error": rec["error"],
                        "fit_seconds": rec["fit_seconds"],
                        "predict_ms": alone,
                        "note": rec.get("note", ""),
                        "tier": rec.get("tier", "main"),
                    }
                )
        columns = ["id", "run", "family", "params", "view", "calibration", "stage", "status"]
        extra = ["error", "fit_seconds", "predict_ms", "note", "tier"]
        frame = pd.DataFrame(rows, columns=[*columns, *extra])
        return frame.astype({"stage": "Int64"})

    # ------------------------------------------------------------------ the matrix

    def consolidate(self, order: list[str]) -> None:
        """Write the matrix of the ok runs in ``order``: a new ``predictions-<token>.npy`` first,
        then ``predictions.json`` naming it and its runs (the commit), then old matrices go."""
        runs = self.ok_runs(order)
        parts = [self.run_predictions(r) for r in runs]
        n_hill = int(self.header["n_hillclimb"])
        n_classes = len(self.header["classes"])
        regression = self.header.get("task") == "regression"  # one real value per member
        n_members = sum(p.shape[0] for p in parts)
        flat = n_classes == 2 or regression
        shape = (n_members, n_hill) if flat else (n_members, n_hill, n_classes)
        token = hashlib.sha1(json.dumps([runs, n_members, time.time_ns()]).encode()).hexdigest()
        final = self.path / f"predictions-{token[:12]}.npy"
        tmp = final.with_name(f".{final.stem}.tmp.npy")
        dtype = prediction_dtype(self._task)
        matrix = np.lib.format.open_memmap(tmp, mode="w+", dtype=dtype, shape=shape)
        row = 0
        for p in parts:
            matrix[row : row + p.shape[0]] = p[..., 0] if regression else p[..., 1] if flat else p
            row += p.shape[0]
        matrix.flush()
        del matrix
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, final)
        index = {"file": final.name, "runs": runs, "n_members": n_members}
        _atomic_write(
            self.path / "predictions.json", lambda fh: fh.write(json.dumps(index)), mode="w"
        )
        for old in self.path.glob("predictions-*.npy"):
            if old != final:
                old.unlink(missing_ok=True)

    def matrix(self) -> tuple[np.ndarray, list[str]]:
        """The memory-mapped prediction matrix and its run order."""
        try:
            index = json.loads((self.path / "predictions.json").read_text())
            runs, name, n_members = index["runs"], index["file"], index["n_members"]
        except (OSError, json.JSONDecodeError, KeyError, TypeError):
            raise StoreError(
                f"{self.path} has no prediction matrix yet (its build did not finish); run "
                "build_library again with the same data and store to finish it"
            ) from None
        if runs != self.ok_runs(runs):
            raise StoreError(
                f"{self.path / 'predictions.json'} lists runs the manifest does not have as ok; "
                "run build_library again to rebuild the matrix"
            )
        try:
            matrix = np.load(self.path / name, mmap_mode="r")
        except (OSError, ValueError) as exc:
            raise StoreError(f"{self.path / name} is missing or corrupt: {exc}") from None
        if matrix.shape[0] != n_members:
            raise StoreError(f"{self.path / name} has {matrix.shape[0]} rows, not {n_members}")
        return matrix, runs


def _record(
    run: RunLike, status: str, error: str, seconds: float, costs: dict | None = None
) -> dict:
    record = {
        "run": run.run_id,
        "family": run.family,
        "params": run.param_dict,
        "view": run.view,
        "stages": list(run.stages) if run.stages else None,
        "calibrations": list(run.calibrations),
        "status": status,
        "error": error,
        "fit_seconds": round(seconds, 3),
        "predict_ms": dict(costs or {}) or None,
    }
    tier = run.tier
    if tier != "main":  # main runs' records stay as they were
        record["tier"] = tier
    return record


def _member_predict_ms(record: dict, stage: int | None) -> float:
    """Milliseconds per 1,000 rows for one sibling to predict this member alone (its view and
    its stage, with the smaller ones for a cumulative run); NaN where the build recorded none."""
    costs = record.get("predict_ms")
    if not costs:
        return float("nan")
    stages = record["stages"] or [None]
    i = stages.index(stage)
    if costs["cumulative"]:
        upto = [c for s, c in zip(stages, costs["stages"], strict=True) if _le(s, stage)]
        return costs["view"] + max(upto)
    return costs["view"] + costs["stages"][i]


def _le(a, b) -> bool:
    return a is None or b is None or a <= b


def _member_keys(record: dict) -> list[tuple[int | None, str]]:
    stages = record["stages"] or [None]
    return [(s, c) for s in stages for c in record["calibrations"]]
