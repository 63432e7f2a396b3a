"""Progress bars: shown on a terminal or in a notebook kernel, never when verbose=0 or when
nobody watches (a log file, a batch job)."""

from __future__ import annotations

import io
import sys
import types

import pytest

from ensel._progress import progress_bar, watched


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


@pytest.fixture
def no_kernel(monkeypatch):
    monkeypatch.delitem(sys.modules, "ipykernel", raising=False)
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: None))


def test_no_bar_when_nobody_watches_or_verbose_is_zero(monkeypatch, no_kernel):
    monkeypatch.setattr(sys, "stderr", _Stream(tty=False))
    assert not watched()
    assert progress_bar(1, total=3) is None
    monkeypatch.setattr(sys, "stderr", _Stream(tty=True))
    assert watched()
    assert progress_bar(0, total=3) is None


def test_a_bar_on_a_terminal(monkeypatch, no_kernel):
    stream = _Stream(tty=True)
    monkeypatch.setattr(sys, "stderr", stream)
    bar = progress_bar(1, total=3, desc="runs", file=stream)
    bar.update(3)
    bar.close()
    assert "runs" in stream.getvalue() and "3/3" in stream.getvalue()


def test_a_notebook_kernel_counts_as_watched_though_its_stderr_is_no_tty(monkeypatch):
    monkeypatch.setattr(sys, "stderr", _Stream(tty=False))
    shell = types.SimpleNamespace(config={})
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    monkeypatch.setitem(sys.modules, "ipykernel", types.ModuleType("ipykernel"))
    assert watched()
    monkeypatch.delitem(sys.modules, "ipykernel")
    assert not watched()  # a plain IPython terminal with stderr redirected
