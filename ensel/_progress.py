"""Progress bars for long library code (builds, mimic training): ``tqdm.auto`` so a notebook
shows a widget and a terminal a text bar; off when ``verbose`` is 0 or nobody is watching."""

from __future__ import annotations

import sys

__all__ = ["progress_bar", "watched"]


def watched() -> bool:
    """True on a terminal (stderr is a TTY) or inside a Jupyter/IPython kernel, whose stderr is
    no TTY but whose front end draws ``tqdm.auto``'s widget."""
    if sys.stderr.isatty():
        return True
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    return shell is not None and "ipykernel" in sys.modules


def progress_bar(verbose: int, **options):
    """A ``tqdm.auto`` bar built from ``options`` when ``verbose`` and :func:`watched`; None
    otherwise (also when tqdm is not installed)."""
    if not verbose or not watched():
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(**options)
