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


def test_rows_name_the_optional_packages_that_decide_the_defaults_families():
    from importlib import metadata

    got = versions()
    assert got["numpy"] == np.__version__ and got["pandas"] == metadata.version("pandas")
    for name in ("catboost", "torch", "pytabkit"):
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            installed = None
        assert got.get(name) == installed


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


def test_git_commit_is_dirty_for_code_not_for_results(tmp_path):
    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    (tmp_path / "code.py").write_text("x = 1\n")
    (tmp_path / "benchmarks" / "results" / "rows.jsonl").write_text("{}\n")
    git("init", "-q")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    clean = git_commit(tmp_path)
    assert len(clean) == 12 and not clean.endswith("-dirty")
    (tmp_path / "benchmarks" / "results" / "rows.jsonl").write_text("{}\n{}\n")
    assert git_commit(tmp_path) == clean
    (tmp_path / "code.py").write_text("x = 2\n")
    assert git_commit(tmp_path) == clean + "-dirty"
    assert git_commit(tmp_path.parent / "not-a-repo-here") == "unknown"


def test_peak_memory_adds_up_the_tree_cpu_time():
    # a child that spends 0.5 s of its own CPU time, then idles so its total is sampled
    code = "import time\nwhile time.process_time() < 0.5: pass\ntime.sleep(1)"
    with PeakMemory(interval=0.05) as mem:
        subprocess.run([sys.executable, "-c", code], check=True)
    assert mem.cpu_seconds >= 0.5


def test_provenance_says_when_in_utc():
    from datetime import UTC, datetime

    from benchmarks._record import provenance

    before = datetime.now(UTC).replace(microsecond=0)
    stamp = datetime.fromisoformat(provenance()["utc"])
    assert stamp.tzinfo is not None and stamp.utcoffset().total_seconds() == 0
    assert before <= stamp <= datetime.now(UTC)


def test_a_gzip_results_file_takes_appended_rows_and_reads_back(tmp_path):
    import gzip

    from benchmarks._record import append_row, load_results

    path = tmp_path / "rows.jsonl.gz"
    append_row(path, {"a": 1})
    append_row(path, {"a": 2})  # a second gzip member
    assert load_results(path) == [{"a": 1}, {"a": 2}]
    with gzip.open(path, "rt") as fh:  # compressed on disk, readable by any gzip reader
        assert fh.read().splitlines() == ['{"a": 1}', '{"a": 2}']
