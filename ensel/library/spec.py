"""Library specs: YAML files that list model families with parameter grids or sampled ranges,
stages and calibration variants, expanded into the training runs a library is built from.

A spec looks like::

    name: example
    seed: 0                # seeds the range samplers
    run_time_limit: 300    # seconds per training run (all folds); optional
    families:
      - family: adaboost
        params: {max_depth: [1, 2]}          # lists expand as a cartesian product
        stages: [2, 4, 8, 16]                # members from one run
        calibration: [none, platt, isotonic, logistic]
      - family: mlp
        params:
          hidden: {logint: [1, 128]}         # ranges: uniform, loguniform, int, logint, choice
          momentum: {uniform: [0, 0.9]}
        samples: 20                          # 20 draws, quasi-Monte Carlo by default
        stages: [16, 64, 256]

A ``spare:`` section (entries as in ``families``) is the spare-time tier: runs the builder fits
only after every run of ``families`` is done, and under a ``time_limit`` only those the
planner's estimates (:mod:`ensel.library.planning.run_plan`) say will end before the deadline;
without a
``time_limit`` they are built like any other runs. Their members carry ``tier == "spare"`` in
``Library.members``. A top-level ``spare_min_rows: N`` makes the tier spare-time work only: it
is built under a ``time_limit`` and on tables of at least N rows, and not otherwise (the
default spec's tier was measured to pay from 10,000 rows: docs/decisions.md). A top-level
``strong_first_rows: N`` has a build under a ``time_limit`` on a table of at least N rows plan
its runs strong first, by each family's expected gain per second
(:func:`ensel.library.planning.schedule.gain_order`), instead of round robin over the families,
the spare tier's runs in the same plan.

An entry's ``min_rows: N`` builds its runs only on tables of at least N rows
(:meth:`LibrarySpec.for_rows`; the default spec's LightGBM with extra-trees splits), leaving
every other run, and its id, as it is on smaller tables.

A regression spec says ``task: regression``; its families are the regressors registered beside
each algorithm's classifier (by the same plain names), it has no calibration variants, and an
entry may declare ``target: [none, log1p]`` (runs that learn ``log1p(y)`` and predict back).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import warnings
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from ..errors import SpecError
from .families import VIEWS, Family, get_family
from .kinds import get_kind, kinds

__all__ = [
    "BUILTIN_SPECS",
    "SPARE",
    "LibrarySpec",
    "RunSpec",
    "SpecError",
    "load_spec",
    "parse_families",
    "parse_spare",
]

BUILTIN_SPECS = (
    "tiny",
    "default",
    "default_spare",
    "modern",
    "caruana2006",
    "regression",
    "tiny_regression",
)
DERIVED_SPECS = {"default_spare": "default"}
"""Built-in names for another built-in spec with its spare tier built whenever the spec is
(``spare_min_rows`` lifted): ``default_spare`` is the default with its tier on every table."""
SPARE = "spare"
"""The section (and the ``tier`` of its runs) of the spare-time tier."""
CALIBRATIONS = ("none", "platt", "isotonic")
RANGE_KINDS = ("uniform", "loguniform", "int", "logint", "choice")
SAMPLERS = ("qmc", "random")
ENTRY_KEYS = (
    "family",
    "params",
    "stages",
    "calibration",
    "view",
    "samples",
    "sampler",
    "target",
    "min_rows",
)
TOP_KEYS = (
    "name",
    "description",
    "seed",
    "run_time_limit",
    "task",
    "spare_min_rows",
    "strong_first_rows",
)
"""Top-level keys about the spec itself; every other key is a section of runs (see kinds.py)."""
TASKS = ("classification", "regression")
TARGET_TRANSFORMS = ("none", "log1p")
"""A regression entry's ``target:``: the run learns ``log1p(y)`` and predicts ``expm1`` of its
output; the choice is stored as the run's parameter ``target`` (so it shows on the leaderboard
and changes the run id)."""


@dataclass(frozen=True)
class RunSpec:
    """One training run: a family with fixed parameters on a view; it yields one member per
    (stage, calibration) pair."""

    family: str
    params: tuple[tuple[str, Any], ...]
    view: str
    stages: tuple[int, ...] | None
    calibrations: tuple[str, ...]

    task: str = "classification"
    tier: str = field(default="main", compare=False)
    """``"main"`` or ``"spare"`` (the spec section it came from); not part of the run's
    identity: the same run in both tiers is one run."""
    min_rows: int | None = field(default=None, compare=False)
    """Where set, the run is built only on tables of at least this many rows (the entry's
    ``min_rows``); not part of the run's identity."""

    @property
    def param_dict(self) -> dict[str, Any]:
        return dict(self.params)

    @property
    def run_id(self) -> str:
        """A stable id from everything that defines the run (a changed entry is a new run)."""
        parts = [self.family, self.params, self.view, self.stages, self.calibrations]
        if self.task != "classification":  # classification ids stay as they were
            parts.append(self.task)
        key = json.dumps(parts, sort_keys=True, default=str)
        return f"{self.family}-{hashlib.sha1(key.encode()).hexdigest()[:12]}"

    @property
    def members(self) -> list[tuple[int | None, str]]:
        """The (stage, calibration) pairs of this run's members, stage-major."""
        stages = self.stages or (None,)
        return [(s, c) for s in stages for c in self.calibrations]


@dataclass(frozen=True)
class LibrarySpec:
    """A parsed spec: its run specs by section (``families`` first, then the sections of other
    kinds of run, such as ``detectors``) and its task."""

    name: str
    sections: tuple[tuple[str, tuple], ...]
    run_time_limit: float | None  # seconds per training run (all folds), or None
    source: str
    task: str = "classification"
    spare_min_rows: int | None = None
    """Where set, the spare tier is built only under a time budget and from this many rows."""
    strong_first_rows: int | None = None
    """Where set, a build under a time budget of this many rows or more plans its runs strong
    first, by expected gain per second (:func:`~ensel.library.planning.schedule.gain_order`)."""

    def strong_first(self, rows: int) -> bool:
        """Whether a budgeted build of ``rows`` rows plans its runs strong first."""
        return self.strong_first_rows is not None and rows >= self.strong_first_rows

    def section(self, name: str) -> tuple:
        """The run specs of section ``name`` (empty if the spec has no such section)."""
        return dict(self.sections).get(name, ())

    @property
    def runs(self) -> tuple[RunSpec, ...]:
        """The model runs (the ``families`` section)."""
        return self.section("families")

    @property
    def spare(self) -> tuple[RunSpec, ...]:
        """The spare-time tier (the ``spare`` section), without the runs ``families`` has."""
        main = {r.run_id for r in self.runs}
        return tuple(r for r in self.section(SPARE) if r.run_id not in main)

    def for_rows(self, rows: int) -> LibrarySpec:
        """The spec a build on ``rows`` rows takes: without the runs whose ``min_rows`` it
        does not reach (every other run, and its id, as it is)."""
        sections = tuple(
            (name, tuple(r for r in runs if (r.min_rows or 0) <= rows))
            for name, runs in self.sections
        )
        return replace(self, sections=sections)

    def spare_for(self, rows: int, budgeted: bool) -> tuple[RunSpec, ...]:
        """The spare tier a build of ``rows`` rows fits: :attr:`spare`, or none where the spec
        sets ``spare_min_rows`` and the build has no time budget (``budgeted``) or fewer rows."""
        if self.spare_min_rows is not None and (not budgeted or rows < self.spare_min_rows):
            return ()
        return self.spare

    @property
    def detectors(self) -> tuple:
        """The extrapolation-risk detectors (the ``detectors`` section, a kind ensel.risk
        registers)."""
        return self.section("detectors")

    @property
    def n_members(self) -> int:
        return sum(len(r.members) for r in self.runs)


def load_spec(spec: str | Path | dict | LibrarySpec) -> LibrarySpec:
    """A validated spec from a built-in name (``tiny``, ``default``, ``default_spare``,
    ``modern``, ``caruana2006``, and for numeric targets ``regression`` and
    ``tiny_regression``), a YAML path, or an already-parsed dict."""
    if isinstance(spec, LibrarySpec):
        return spec
    if isinstance(spec, dict):
        return _parse(spec, "<dict>")
    if isinstance(spec, str) and spec in DERIVED_SPECS:
        return replace(load_spec(DERIVED_SPECS[spec]), name=spec, spare_min_rows=None)
    if isinstance(spec, str) and spec in BUILTIN_SPECS:
        text = resources.files("ensel.library").joinpath("specs", f"{spec}.yaml").read_text()
        return _parse(_yaml(text, f"{spec}.yaml"), f"{spec}.yaml")
    path = Path(spec)
    if not path.is_file():
        raise SpecError(
            f"library spec {str(spec)!r} is neither a built-in spec {BUILTIN_SPECS} "
            "nor an existing YAML file"
        )
    return _parse(_yaml(path.read_text(), str(path)), str(path))


def _yaml(text: str, source: str) -> dict:
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SpecError(f"{source}: not valid YAML: {exc}") from None
    if not isinstance(doc, dict):
        raise SpecError(f"{source}: a spec is a mapping with a 'families' list at the top")
    return doc


def _parse(doc: dict, source: str) -> LibrarySpec:
    sections = [k for k in doc if k not in TOP_KEYS]
    unknown = [k for k in sections if k not in kinds()]
    if unknown:
        allowed = [*TOP_KEYS, *sorted(kinds())]
        raise SpecError(f"{source}: unknown top-level key(s) {sorted(unknown)}; allowed: {allowed}")
    entries = doc.get("families")
    if not isinstance(entries, list) or not entries:
        raise SpecError(f"{source}: key 'families' must be a non-empty list of family entries")
    seed = doc.get("seed", 0)
    if not isinstance(seed, int):
        raise SpecError(f"{source}: key 'seed' must be an integer, got {seed!r}")
    run_time_limit = doc.get("run_time_limit")
    if run_time_limit is not None and (
        isinstance(run_time_limit, bool)
        or not isinstance(run_time_limit, int | float)
        or run_time_limit <= 0
    ):
        raise SpecError(
            f"{source}: key 'run_time_limit' must be a positive number of seconds (per run)"
        )
    task = doc.get("task", "classification")
    if task not in TASKS:
        raise SpecError(f"{source}: key 'task' is {task!r}; allowed: {list(TASKS)}")
    spare_min_rows = doc.get("spare_min_rows")
    whole = isinstance(spare_min_rows, int) and not isinstance(spare_min_rows, bool)
    if spare_min_rows is not None and not (whole and spare_min_rows >= 0):
        raise SpecError(f"{source}: key 'spare_min_rows' must be a whole number of rows (>= 0)")
    if spare_min_rows is not None and SPARE not in doc:
        raise SpecError(f"{source}: key 'spare_min_rows' applies to a 'spare' section; add one")
    strong_first_rows = doc.get("strong_first_rows")
    whole = isinstance(strong_first_rows, int) and not isinstance(strong_first_rows, bool)
    if strong_first_rows is not None and not (whole and strong_first_rows >= 0):
        raise SpecError(f"{source}: key 'strong_first_rows' must be a whole number of rows (>= 0)")
    order = ["families", *(k for k in sections if k != "families")]
    return LibrarySpec(
        name=str(doc.get("name", Path(source).stem)),
        sections=tuple((k, get_kind(k).parse(doc[k], source, seed, task)) for k in order),
        run_time_limit=run_time_limit,
        source=source,
        task=task,
        spare_min_rows=spare_min_rows,
        strong_first_rows=strong_first_rows,
    )


def parse_families(
    entries: Any, source: str, seed: int, task: str, section: str = "families"
) -> tuple[RunSpec, ...]:
    """The runs of a ``families`` section: every entry expanded (grids as cartesian products,
    ranges sampled with seed ``seed + i`` for entry ``i``), duplicates dropped."""
    if not isinstance(entries, list) or not entries:
        raise SpecError(f"{source}: key {section!r} must be a non-empty list of family entries")
    runs: list[RunSpec] = []
    for i, entry in enumerate(entries):
        runs.extend(_expand(entry, f"{source}: {section}[{i}]", seed + i, task))
    return tuple(dict.fromkeys(runs))


SPARE_SEED_OFFSET = 1000
"""The spare tier's range samplers draw from ``seed + SPARE_SEED_OFFSET + i``, not the seeds of
the ``families`` entries."""


def parse_spare(entries: Any, source: str, seed: int, task: str) -> tuple[RunSpec, ...]:
    """The runs of a ``spare`` section (entries as in ``families``), marked ``tier="spare"``."""
    runs = parse_families(entries, source, seed + SPARE_SEED_OFFSET, task, section=SPARE)
    return tuple(replace(r, tier=SPARE) for r in runs)


def _expand(entry: Any, where: str, seed: int, task: str = "classification") -> list[RunSpec]:
    if not isinstance(entry, dict) or "family" not in entry:
        raise SpecError(f"{where}: each entry is a mapping with a 'family' key")
    unknown = sorted(set(entry) - set(ENTRY_KEYS))
    if unknown:
        raise SpecError(f"{where}: unknown key(s) {unknown}; allowed: {list(ENTRY_KEYS)}")
    try:
        family = get_family(entry["family"], task)
    except ValueError as exc:
        raise SpecError(f"{where}: key 'family': {exc}") from None
    where = f"{where} ({family.name})"
    params = entry.get("params") or {}
    if not isinstance(params, dict):
        raise SpecError(f"{where}: key 'params' must be a mapping of parameter names to values")
    bad = sorted(set(params) - set(family.params) - set(family.optional))
    if bad:
        raise SpecError(
            f"{where}: key 'params' has unknown parameter(s) {bad}; "
            f"{family.name} accepts {sorted({*family.params, *family.optional})}"
        )
    min_rows = _min_rows(entry.get("min_rows"), where)
    view = entry.get("view", family.view)
    if view not in VIEWS:
        raise SpecError(f"{where}: key 'view' is {view!r}; allowed: {list(VIEWS)}")
    stages = _stages(entry.get("stages"), family, where)
    calibrations = _calibrations(entry.get("calibration", ["none"]), family, where)
    targets = _targets(entry.get("target"), task, where)
    if task == "regression" and calibrations != ("none",):
        raise SpecError(
            f"{where}: key 'calibration': regression has no calibration variants; remove the "
            "key or give [none]"
        )
    grid = {k: v for k, v in params.items() if not isinstance(v, dict)}
    ranges = {k: v for k, v in params.items() if isinstance(v, dict)}
    draws = _draws(ranges, entry, where, seed)
    runs = []
    names = list(grid)
    values = [v if isinstance(v, list) else [v] for v in grid.values()]
    for draw, combo, target in itertools.product(draws, itertools.product(*values), targets):
        full = dict(family.params)
        full.update(zip(names, combo, strict=True))
        full.update(draw)
        for name, default in family.optional.items():  # held only where not the default
            if full.get(name, default) == default:
                full.pop(name, None)
        if family.validate is not None:
            try:
                family.validate(full, stages)
            except ValueError as exc:
                raise SpecError(f"{where}: {exc}") from None
        if target not in (None, "none"):  # absent means none: ids of plain runs stay short
            full["target"] = target
        params_ = tuple(sorted(full.items()))
        runs.append(
            RunSpec(family.name, params_, view, stages, calibrations, task, min_rows=min_rows)
        )
    return runs


def _min_rows(min_rows: Any, where: str) -> int | None:
    """An entry's ``min_rows``: None, or a whole number of rows (>= 0)."""
    whole = isinstance(min_rows, int) and not isinstance(min_rows, bool)
    if min_rows is not None and not (whole and min_rows >= 0):
        raise SpecError(f"{where}: key 'min_rows' must be a whole number of rows (>= 0)")
    return min_rows


def _targets(target: Any, task: str, where: str) -> list[str | None]:
    """The entry's target transforms (regression only); ``[None]`` for a classification entry."""
    if task != "regression":
        if target is not None:
            raise SpecError(f"{where}: key 'target' applies to regression specs only")
        return [None]
    target = ["none"] if target is None else [target] if isinstance(target, str) else target
    if (
        not isinstance(target, list)
        or not target
        or any(t not in TARGET_TRANSFORMS for t in target)
    ):
        raise SpecError(
            f"{where}: key 'target' is {target!r}; allowed values: {list(TARGET_TRANSFORMS)}"
        )
    return list(dict.fromkeys(target))


def _stages(stages: Any, family: Family, where: str) -> tuple[int, ...] | None:
    if stages is None:
        return None
    if family.stages is None:
        raise SpecError(f"{where}: key 'stages': {family.name} has no stages; remove the key")
    if (
        not isinstance(stages, list)
        or not stages
        or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 1 for s in stages)
    ):
        raise SpecError(
            f"{where}: key 'stages' must be a list of positive integers ({family.stages})"
        )
    return tuple(sorted(set(stages)))


def _calibrations(cal: Any, family: Family, where: str) -> tuple[str, ...]:
    allowed = CALIBRATIONS + family.variants
    cal = [cal] if isinstance(cal, str) else cal
    if not isinstance(cal, list) or not cal or any(c not in allowed for c in cal):
        raise SpecError(f"{where}: key 'calibration' is {cal!r}; allowed values: {list(allowed)}")
    return tuple(dict.fromkeys(cal))


def _draws(ranges: dict, entry: dict, where: str, seed: int) -> list[dict[str, Any]]:
    """``samples`` draws of the ranged parameters by an optuna sampler (one empty draw if the
    entry has no ranges)."""
    samples = entry.get("samples")
    if not ranges:
        if samples is not None:
            raise SpecError(f"{where}: key 'samples' needs parameters given as ranges")
        return [{}]
    if not isinstance(samples, int) or isinstance(samples, bool) or samples < 1:
        raise SpecError(
            f"{where}: parameters given as ranges need 'samples: N' (a positive integer)"
        )
    sampler_name = entry.get("sampler", "qmc")
    if sampler_name not in SAMPLERS:
        raise SpecError(f"{where}: key 'sampler' is {sampler_name!r}; allowed: {list(SAMPLERS)}")
    distributions = {k: _distribution(k, v, where) for k, v in ranges.items()}
    try:
        import optuna
    except ImportError:
        raise SpecError(
            f"{where}: sampling parameter ranges needs optuna: pip install optuna"
        ) from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        if sampler_name == "qmc":
            sampler = optuna.samplers.QMCSampler(
                seed=seed, scramble=True, warn_independent_sampling=False
            )
        else:
            sampler = optuna.samplers.RandomSampler(seed=seed)
        study = optuna.create_study(sampler=sampler)
        draws = []
        for _ in range(samples):
            trial = study.ask(distributions)
            draws.append(dict(trial.params))
            study.tell(trial, 0.0)
    return draws


def _distribution(name: str, spec: dict, where: str):
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    if len(spec) != 1 or next(iter(spec)) not in RANGE_KINDS:
        raise SpecError(
            f"{where}: parameter {name!r}: a range is one of {{kind: [low, high]}} with kind in "
            f"{list(RANGE_KINDS)} (choice takes a list of values), got {spec!r}"
        )
    kind, arg = next(iter(spec.items()))
    if kind == "choice":
        if not isinstance(arg, list) or not arg:
            raise SpecError(f"{where}: parameter {name!r}: choice needs a non-empty list")
        return CategoricalDistribution(arg)
    if not (
        isinstance(arg, list) and len(arg) == 2 and all(isinstance(a, int | float) for a in arg)
    ):
        raise SpecError(f"{where}: parameter {name!r}: {kind} needs [low, high]")
    low, high = arg
    if low >= high or (kind.startswith("log") and low <= 0):
        raise SpecError(
            f"{where}: parameter {name!r}: {kind} needs low < high"
            + (" and low > 0" if kind.startswith("log") else "")
        )
    if kind in ("int", "logint"):
        return IntDistribution(int(low), int(high), log=kind == "logint")
    return FloatDistribution(float(low), float(high), log=kind == "loguniform")
