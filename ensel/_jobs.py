"""``n_jobs`` and ``random_state`` as scikit-learn and joblib read them, in one place for the
builder, the executors, the fitted members' predict and the detectors' risk."""

from __future__ import annotations

from numbers import Integral

import numpy as np
from joblib import cpu_count
from sklearn.utils import check_random_state

__all__ = ["as_seed", "available_cpus", "n_workers"]

SEED_HIGH = np.iinfo(np.int32).max
"""Seeds drawn from a generator lie in ``[0, SEED_HIGH)``, as scikit-learn draws them."""


def available_cpus() -> int:
    """The CPUs this process may use: its CPU affinity and the cgroup CPU quota of a container
    (``/sys/fs/cgroup/cpu.max``) as joblib's loky reads them, not the machine's core count."""
    return max(1, int(cpu_count(only_physical_cores=False)))


def n_workers(n_jobs: int | None, name: str = "n_jobs") -> int:
    """The number of workers ``n_jobs`` asks for, as joblib reads it: None is 1, a positive
    number is itself, -1 is every available CPU and ``-k`` all but ``k - 1`` of them (at least
    one); 0 is refused."""
    if n_jobs is None:
        return 1
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, Integral) or n_jobs == 0:
        raise ValueError(
            f"{name}={n_jobs!r}: use None or 1 (one worker), a positive number of workers, -1 "
            "for every available CPU or -k for all but k-1 of them"
        )
    if n_jobs > 0:
        return int(n_jobs)
    return max(1, available_cpus() + 1 + int(n_jobs))


def as_seed(random_state) -> int:
    """One integer seed from ``random_state``: an int is itself (so results seeded by an int
    never move), a ``RandomState`` gives a seed drawn from its current state (it advances), and
    None a seed drawn from numpy's global generator. Draw once per fit and derive every other
    seed from the result."""
    if isinstance(random_state, Integral) and not isinstance(random_state, bool):
        return int(random_state)
    return int(check_random_state(random_state).randint(SEED_HIGH))
