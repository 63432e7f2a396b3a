"""build_library: out-of-fold predictions, cross-fitted calibrators, test-time averaging of the
siblings, failures recorded, resuming after a kill, and clear errors."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer, load_iris

import ensel.library.builder as builder_module
import ensel.library.execution.runs as runs_module
import ensel.library.model_runs as models_kind
from ensel.calibration import ColumnCalibrator
from ensel.errors import StoreError
from ensel.library import Library, build_library
from ensel.library.families import FAMILIES, Family, Run

SMALL = {
    "families": [
        {"family": "logreg", "params": {"ridge": [1.0]}, "calibration": ["none", "platt"]},
        {"family": "tree", "params": {"max_depth": 3}, "calibration": ["none", "isotonic"]},
        {"family": "adaboost", "stages": [2, 8], "calibration": ["none", "logistic"]},
    ]
}


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    return X, y


# ------------------------------------------------------------------ no point sees itself


@dataclass
class _MemorizerRun(Run):
    seen: dict
    n_classes: int

    def predict(self, X):
        out = np.full((1, len(X), self.n_classes), 1.0 / self.n_classes)
        for i, row in enumerate(X):
            label = self.seen.get(row.tobytes())
            if label is not None:
                out[0, i] = np.eye(self.n_classes)[label]
        return {"none": out}


def _fit_memorizer(X, y, *, n_classes, params, stages, random_state):
    return _MemorizerRun({row.tobytes(): label for row, label in zip(X, y, strict=True)}, n_classes)


@pytest.fixture
def memorizer(monkeypatch):
    family = Family(name="memorizer", fit=_fit_memorizer, params={}, view="native")
    monkeypatch.setitem(FAMILIES, "memorizer", family)
    return {"families": [{"family": "memorizer", "calibration": ["none", "platt", "isotonic"]}]}


@pytest.mark.parametrize("cv", [5, None])
def test_hillclimb_predictions_never_come_from_a_model_that_saw_the_point(cancer, memorizer, cv):
    X, y = cancer
    lib = build_library(X, y, spec=memorizer, cv=cv, verbose=0)
    P = np.asarray(lib.predictions)
    np.testing.assert_array_equal(P[0], 0.5)  # a memorised row would read 0 or 1
    # at test time on training rows the siblings do remember: the average of K siblings
    # of which K-1 saw the row
    test_time = lib.predict(X.iloc[:20], ids=[lib.members["id"][0]])[0]
    if cv == 5:
        expected = (4 * y.iloc[:20].to_numpy() + 0.5) / 5
        np.testing.assert_allclose(test_time, expected)


@pytest.mark.parametrize("cv", [5, None])
def test_a_folds_imputer_never_sees_its_hillclimb_rows(cv, monkeypatch):
    """With missing values everywhere, each sibling's view (median, missing indicators,
    frequent levels) is fitted on its training rows only: the memoriser still reads 0.5 on every
    hillclimb row, and every fitted median and level set is that of the sibling's own training
    rows. A level found only among a sibling's held-out rows gets no column of its own."""
    from ensel.library.data.training import prepare
    from ensel.library.views.base import MIN_LEVEL_ROWS

    rng = np.random.default_rng(0)
    n = 300
    X = pd.DataFrame(
        {
            "a": rng.normal(size=n) + np.arange(n) / 50,
            "b": rng.normal(size=n),
            "k": rng.choice(["u", "v", "w"], size=n).astype(object),
        }
    )
    X.loc[rng.random(n) < 0.2, "a"] = np.nan
    X.loc[rng.random(n) < 0.2, "k"] = None
    y = (rng.random(n) < 0.5).astype(int)
    data = prepare(X, y, cv=cv, random_state=0)
    held_out_only = "only-in-fold-0"
    X.loc[data.folds == 0, "b"] = np.nan  # b missing only in fold 0's rows
    X.loc[np.flatnonzero(data.folds == 0)[:10], "k"] = held_out_only
    family = Family(name="memorizer", fit=_fit_memorizer, params={}, view="standardized")
    monkeypatch.setitem(FAMILIES, "memorizer", family)
    spec = {"families": [{"family": "memorizer", "calibration": ["none", "platt"]}]}
    lib = build_library(X, y, spec=spec, cv=cv, n_jobs=1, verbose=0)
    np.testing.assert_array_equal(np.asarray(lib.predictions)[0], 0.5)
    siblings = lib._fitted(lib.members["run"][0]).siblings
    assert len(siblings) == (5 if cv else 1)
    for k, (view, _) in enumerate(siblings):
        train = X[data.folds != k]
        fill = np.nan_to_num(np.nanmedian(train[["a", "b"]].to_numpy(float), axis=0))
        np.testing.assert_allclose(view.fill, fill)
        counts = train["k"].value_counts()
        assert view.levels[0] == sorted(counts.index[counts >= MIN_LEVEL_ROWS])
        assert (held_out_only in view.levels[0]) == (k != 0)
        has_b_missing = bool(train["b"].isna().any())
        assert (1 in view.indicators) == has_b_missing


@dataclass
class _RowKeyRun(Run):
    def predict(self, X):
        p = X[:, :1]  # each row's unique key in (0, 1): a score that identifies the row
        return {"none": np.hstack([1 - p, p])[None]}


class _Recording(ColumnCalibrator):
    """A calibrator that fails when it predicts a row (a unique score) it was fitted on."""

    seen: list = []  # noqa: RUF012

    def fit(self, f, y):
        self.fitted_on = set(f[:, 1])
        self.seen.append(self)
        return super().fit(f, y)

    def predict(self, f):
        if getattr(self, "checking", True):
            assert not (set(f[:, 1]) & self.fitted_on), "a calibrator predicted a row it saw"
        return super().predict(f)


def test_calibrators_are_cross_fitted(monkeypatch):
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"key": rng.permutation(400) / 400 + 1e-3, "noise": rng.random(400)})
    y = (rng.random(400) < X["key"]).astype(int)
    family = Family(name="rowkey", fit=lambda *a, **k: _RowKeyRun(), params={}, view="native")
    monkeypatch.setitem(FAMILIES, "rowkey", family)
    monkeypatch.setattr(runs_module, "ColumnCalibrator", _Recording)
    seen = _Recording.seen
    spec = {"families": [{"family": "rowkey", "calibration": ["platt", "isotonic"]}]}
    for cv in (5, None):
        seen.clear()
        lib = build_library(X, y, spec=spec, cv=cv, verbose=0)
        assert lib.n_members == 2 and len(lib.failures) == 0
        assert len(seen) == 2 * 5  # one calibrator per method and fold (or hillclimb part)
        # together the calibrators were fitted on every hillclimb row, each on 4/5 of them
        assert sum(len(c.fitted_on) for c in seen[:5]) == 4 * len(lib.y)


def test_calibrated_members_pair_each_calibrator_with_its_sibling(cancer):
    """Test time averages cal_k(sibling_k(x)); hillclimb row i of fold k got cal_k(sibling_k(x_i)).
    Recomputing the hillclimb predictions from the stored bundle checks the pairing."""
    X, y = cancer
    spec = {"families": [{"family": "tree", "params": {"max_depth": 3}, "calibration": ["platt"]}]}
    lib = build_library(X, y, spec=spec, cv=3, verbose=0)
    fitted = lib.store.load_fitted(lib.members["run"][0])
    from ensel.library.data.training import prepare
    from ensel.library.views.base import transform

    folds = prepare(X, y, cv=3).folds
    per_sibling = []
    for k, (view, run) in enumerate(fitted.siblings):
        cal = fitted.calibrators[(0, "platt")][k]
        pred = cal.predict(run.predict(transform(view, X))["none"][0])[:, 1]
        np.testing.assert_allclose(pred[folds == k], lib.predictions[0][folds == k], atol=1e-6)
        per_sibling.append(pred)
    # the siblings differ, so routing every group through one sibling would fail above
    assert np.abs(per_sibling[0] - per_sibling[1]).max() > 1e-3
    np.testing.assert_allclose(lib.predict(X)[0], np.mean(per_sibling, axis=0))


def test_held_out_split_and_calibration_groups_respect_groups():
    from ensel.library.data.training import HOLDOUT, prepare

    rng = np.random.default_rng(1)
    people = np.repeat(np.arange(60), 5)  # panel data: 60 people, 5 rows each
    y = np.repeat(rng.integers(0, 2, 60), 5)
    X = rng.random((300, 3))
    data = prepare(X, y, cv=None, groups=people, hillclimb_fraction=0.3)
    hill = data.folds != HOLDOUT
    assert not set(people[hill]) & set(people[~hill])
    for person in np.unique(people[hill]):
        assert np.unique(data.groups[people[hill] == person]).size == 1
    assert abs(hill.mean() - 0.3) < 0.05
    cv_data = prepare(X, y, cv=4, groups=people)
    for person in range(60):
        assert np.unique(cv_data.folds[people == person]).size == 1


def test_a_store_has_one_writer(cancer, tmp_path):
    from ensel.library.data.training import prepare
    from ensel.library.storage.store import PredictionStore

    X, y = cancer
    header = builder_module._header(prepare(X, y, cv=3), 3)
    writer = PredictionStore(tmp_path / "s", dict(header))
    with pytest.raises(StoreError, match="another build is writing"):
        PredictionStore(tmp_path / "s", dict(header))
    writer.close()
    PredictionStore(tmp_path / "s", dict(header)).close()


# ------------------------------------------------------------------ predictions and layout


def test_library_layout_and_test_time_average_of_siblings(cancer, tmp_path):
    X, y = cancer
    lib = build_library(X, y, spec=SMALL, cv=3, store=tmp_path / "s", verbose=0)
    assert lib.predictions.shape == (lib.n_members, len(y))
    assert lib.n_members == 2 + 2 + 4
    assert list(lib.members.columns[:8]) == [
        "id", "run", "family", "params", "view", "calibration", "stage", "status"
    ]  # fmt: skip
    np.testing.assert_array_equal(lib.y, y.to_numpy()[lib.hillclimb_index])
    assert lib.members["stage"].tolist()[4:] == [2, 2, 8, 8]
    new = X.iloc[:7]
    P = lib.predict(new)
    assert P.shape == (lib.n_members, 7) and ((P >= 0) & (P <= 1)).all()
    # a member's test-time prediction is the mean of its siblings (here: logistic regressions)
    fitted = lib.store.load_fitted(lib.members["run"][0])
    from ensel.library.views.base import transform

    siblings = [run.predict(transform(view, new))["none"][0, :, 1] for view, run in fitted.siblings]
    np.testing.assert_allclose(P[0], np.mean(siblings, axis=0))
    # asking for some members, in any order
    ids = list(lib.members["id"][[5, 0]])
    np.testing.assert_allclose(lib.predict(new, ids=ids), P[[5, 0]])
    reopened = Library.open(tmp_path / "s")
    np.testing.assert_array_equal(np.asarray(reopened.predictions), np.asarray(lib.predictions))


def test_multiclass_library_with_categorical_columns():
    X, y = load_iris(return_X_y=True, as_frame=True)
    X = X.assign(size=pd.cut(X["petal length (cm)"], 3, labels=["s", "m", "l"]).astype(str))
    labels = np.array(["setosa", "versicolor", "virginica"])[y]
    lib = build_library(X, labels, spec=SMALL, cv=3, verbose=0)
    assert lib.predictions.shape == (lib.n_members, 150, 3)
    np.testing.assert_allclose(np.asarray(lib.predictions).sum(-1), 1.0, atol=1e-5)
    assert list(lib.classes) == list(np.unique(labels))
    unseen = X.iloc[:3].assign(size="huge")  # an unseen category is handled, not a crash
    with pytest.warns(
        UserWarning, match=r"'size' has categories never seen in training: \['huge'\]"
    ):
        assert lib.predict(unseen).shape == (lib.n_members, 3, 3)
    with pytest.raises(ValueError, match=r"X lacks column\(s\) \['size'\] seen in training"):
        lib.predict(X.drop(columns="size"))


def test_same_seed_same_library_and_joblib_processes_agree(cancer, tmp_path):
    X, y = cancer
    a = build_library(X, y, spec="tiny", cv=3, n_jobs=1, verbose=0)
    b = build_library(X, y, spec="tiny", cv=3, n_jobs=2, verbose=0)
    assert list(a.members["id"]) == list(b.members["id"])
    np.testing.assert_array_equal(np.asarray(a.predictions), np.asarray(b.predictions))


def test_a_failing_run_is_recorded_and_the_build_goes_on(cancer):
    X, y = cancer
    spec = {
        "families": [
            {"family": "logreg"},
            {"family": "svm", "params": {"kernel": "sigmoid"}},  # raises inside the run
        ]
    }
    lib = build_library(X, y, spec=spec, cv=3, verbose=0)
    assert lib.n_members == 1
    assert lib.failures["status"].tolist() == ["failed"]
    assert "kernel='sigmoid' is not one of" in lib.failures["error"][0]


def test_an_empty_library_is_an_error(cancer):
    X, y = cancer
    spec = {"families": [{"family": "svm", "params": {"kernel": "sigmoid"}}]}
    with pytest.raises(ValueError, match="library is empty; errors: ValueError: svm kernel"):
        build_library(X, y, spec=spec, cv=3, verbose=0)


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("X", "y", "kwargs", "message"),
    [
        (np.ones((10, 2)), np.arange(9) % 2, {}, "X has 10 rows but y has 9"),
        (np.ones((10, 2)), np.zeros(10), {}, "single class"),
        (np.array([[np.inf, 1.0]] * 10), np.arange(10) % 2, {}, "infinite values"),
        (np.ones((10, 2)), np.arange(10) % 2, {"cv": 6}, "fewer than cv=6 folds"),
        (
            np.ones((10, 2)),
            np.arange(10) % 2,
            {"cv": 1},
            r"^The 'cv' parameter of build_library must be an int in the range \[2, inf\), a str "
            r"among \{'auto'\} or None\. Got 1 instead\.$",
        ),
        (
            np.ones((10, 2)),
            np.arange(10) % 2,
            {"n_jobs": 0},
            r"^The 'n_jobs' parameter of build_library must be .*\[1, inf\) or None\. Got 0 inst",
        ),
        (np.ones((10, 2)), np.arange(10) % 2, {"backend": "ray"}, "backend='ray'"),
    ],
)
def test_bad_input_is_named(X, y, kwargs, message):
    with pytest.raises(ValueError, match=message):
        build_library(X, y, spec="tiny", **{"cv": 2, "verbose": 0, **kwargs})


@pytest.mark.parametrize("cv", ["auto", None, 3])
def test_a_class_of_one_row_is_named_with_what_to_do(cv):
    """A count target with one value seen once: one message that names the class as written
    (10, not np.int64(10) nor its code 2) for every cv; it used to say 'use cv=None' for K
    folds, and cv=None failed in scikit-learn naming codes, not classes."""
    X, y = np.arange(21.0)[:, None], np.array([0, 1] * 10 + [10])
    message = r"^class\(es\) \[10\] of y have a single row; .*\(or --task regression\)$"
    with pytest.raises(ValueError, match=message):
        build_library(X, y, spec="tiny", cv=cv, verbose=0)


@pytest.mark.parametrize("cv", ["auto", None, 3])
def test_no_rows_is_named(cv):
    """A CSV with only a header: 0 samples, not cv="auto"'s 'cannot convert float NaN to
    integer'."""
    X = pd.DataFrame({"a": [], "b": []}, dtype=float)
    with pytest.raises(ValueError, match=r"^X has 0 sample\(s\) \(shape=\(0, 2\)\)"):
        build_library(X, pd.Series([], dtype=object), spec="tiny", cv=cv, verbose=0)


def test_store_refuses_other_data_and_reports_corruption(cancer, tmp_path):
    X, y = cancer
    path = tmp_path / "store"
    build_library(X, y, spec=SMALL, cv=3, store=path, verbose=0)
    with pytest.raises(StoreError, match="built for other data or folds"):
        build_library(X.iloc[:300], y.iloc[:300], spec=SMALL, cv=3, store=path, verbose=0)
    with pytest.raises(StoreError, match=r"differs in: folds"):
        build_library(X, y, spec=SMALL, cv=3, store=path, random_state=1, verbose=0)
    lines = (path / "manifest.jsonl").read_text().splitlines()
    lines[1] = lines[1][:20]  # a corrupt line in the middle
    (path / "manifest.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(StoreError, match=r"manifest\.jsonl line 2 is corrupt"):
        Library.open(path)
    (path / "store.json").write_text("{not json")
    with pytest.raises(StoreError, match=r"store\.json is corrupt"):
        Library.open(path)
    with pytest.raises(StoreError, match="not a prediction store"):
        Library.open(tmp_path)


def test_a_torn_last_manifest_line_is_dropped_and_its_run_refitted(cancer, tmp_path):
    X, y = cancer
    path = tmp_path / "store"
    first = build_library(X, y, spec=SMALL, cv=3, store=path, verbose=0)
    text = (path / "manifest.jsonl").read_text()
    last = text.splitlines()[-1]
    (path / "manifest.jsonl").write_text(text[: len(text) - len(last) - 1] + last[:15])
    again = build_library(X, y, spec=SMALL, cv=3, store=path, verbose=0)
    assert (path / "manifest.jsonl").read_text() == text.replace(last, _refit_line(path, last))
    np.testing.assert_array_equal(np.asarray(first.predictions), np.asarray(again.predictions))


def _refit_line(path, old_line):
    """The refitted run's manifest line (its fit time differs)."""
    rid = json.loads(old_line)["run"]
    for line in (path / "manifest.jsonl").read_text().splitlines():
        if json.loads(line)["run"] == rid:
            return line
    raise AssertionError(rid)


# ------------------------------------------------------------------ resume after a kill

KILLED_BUILD = """
import sys
from sklearn.datasets import load_breast_cancer
from ensel.library import build_library
X, y = load_breast_cancer(return_X_y=True)
build_library(X, y, spec="tiny", cv=3, store=sys.argv[1], n_jobs=1, verbose=0)
"""


@pytest.mark.slow
def test_resume_after_a_killed_build_loses_and_refits_nothing(tmp_path, monkeypatch):
    path = tmp_path / "store"
    proc = subprocess.Popen([sys.executable, "-c", KILLED_BUILD, str(path)])
    manifest = path / "manifest.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if manifest.exists() and len(manifest.read_text().splitlines()) >= 3:
            break
        time.sleep(0.02)
    proc.kill()
    proc.wait()
    before = manifest.read_text().splitlines()
    assert 3 <= len(before) < 10, "the build was not killed midway"
    stamps = {p.name: p.stat().st_mtime_ns for p in (path / "runs").glob("*.npy")}

    fitted = []
    real_fit_run = models_kind.fit_run

    def counting_fit_run(run, data, random_state, **options):
        fitted.append(run.run_id)
        return real_fit_run(run, data, random_state, **options)

    monkeypatch.setattr(models_kind, "fit_run", counting_fit_run)
    X, y = load_breast_cancer(return_X_y=True)
    resumed = build_library(X, y, spec="tiny", cv=3, store=path, n_jobs=1, verbose=0)
    finished = {json.loads(line)["run"] for line in before}
    assert not finished & set(fitted), "a finished run was fitted again"
    assert len(fitted) == 10 - len(before)
    after = manifest.read_text().splitlines()
    assert after[: len(before)] == before
    for name, stamp in stamps.items():
        if name.removesuffix(".npy") in finished:
            assert (path / "runs" / name).stat().st_mtime_ns == stamp
    fresh = build_library(X, y, spec="tiny", cv=3, n_jobs=1, verbose=0)
    np.testing.assert_array_equal(np.asarray(resumed.predictions), np.asarray(fresh.predictions))


# ------------------------------------------------------------------ time budget


@dataclass
class _PriorRun(Run):
    p: np.ndarray

    def predict(self, X, stages=None):
        return {"none": np.tile(self.p, (1, len(X), 1))}


FITTED: list = []


def _fit_fast(X, y, *, n_classes, params, stages, random_state):
    FITTED.append(params["k"])
    return _PriorRun(
        (np.bincount(y, minlength=n_classes) + params["k"]) / (y.size + 2 * params["k"])
    )


SLEPT: list[float] = []
"""The sleeps of ``_fit_slow`` that ran to their end (none may, under a shorter budget)."""


def _fit_slow(X, y, *, n_classes, params, stages, random_state):
    if params["seconds"]:
        time.sleep(params["seconds"])  # interrupted by the budget's alarm (n_jobs=1)
        SLEPT.append(params["seconds"])
    return _fit_fast(X, y, n_classes=n_classes, params={"k": 1.0}, stages=None, random_state=0)


@pytest.fixture
def fast_and_slow(monkeypatch):
    for name, fit, params in (
        ("fast", _fit_fast, {"k": 1.0}),
        ("slow", _fit_slow, {"seconds": 60}),
    ):
        monkeypatch.setitem(
            FAMILIES, name, Family(name=name, fit=fit, params=params, view="native")
        )
    FITTED.clear()
    SLEPT.clear()
    return {
        "families": [
            {"family": "fast", "params": {"k": [1.0, 2.0, 3.0, 4.0]}},
            {"family": "slow", "params": {"seconds": [60, 61]}},
        ]
    }


@pytest.mark.slow
def test_a_time_budget_ends_the_build_on_time_and_a_later_build_resumes(
    cancer, fast_and_slow, tmp_path
):
    """A slow family cannot finish within the budget: the build returns on time with the fast
    members, the slow runs are recorded as cut short by the budget, and a second build into the
    same store fits only them (the fast ones are reused)."""
    X, y = cancer
    lib = build_library(
        X, y, spec=fast_and_slow, cv=3, store=tmp_path / "s", n_jobs=1, time_limit=5, verbose=0
    )
    assert SLEPT == []  # the budget interrupted both 60 s sleeps: the build did not wait
    assert set(lib.members["family"]) == {"fast"} and len(lib.members) == 4
    assert sorted(lib.failures["status"]) == ["budget", "budget"]
    assert all("time budget" in e for e in lib.failures["error"])
    assert len(FITTED) == 4 * 3  # four fast runs of three folds each
    FITTED.clear()
    # the slow family now returns at once for the same parameters (the same run ids)
    FAMILIES["slow"] = Family(
        name="slow", fit=_fit_quick_slow, params={"seconds": 60}, view="native"
    )
    again = build_library(X, y, spec=fast_and_slow, cv=3, store=tmp_path / "s", n_jobs=1, verbose=0)
    assert len(again.members) == 6 and len(again.failures) == 0
    assert FITTED == [1.0] * 2 * 3  # only the two slow runs were fitted, over three folds


def _fit_quick_slow(X, y, *, n_classes, params, stages, random_state):
    return _fit_fast(X, y, n_classes=n_classes, params={"k": 1.0}, stages=None, random_state=0)


def test_budget_order_is_round_robin_over_families_strongest_and_cheapest_first():
    from ensel.library.families import traits_of
    from ensel.library.planning.schedule import anytime_order, relative_cost
    from ensel.library.spec import load_spec

    spec = load_spec("default")
    tasks = [("families", r) for r in spec.runs]
    tasks += [("detectors", d) for d in spec.section("detectors")]
    order = [tasks[i] for i in anytime_order(tasks, n_rows=5000)]
    assert sorted(map(id, order)) == sorted(map(id, tasks))  # a permutation

    def name(task):
        if task[0] != "families":
            return task[0]
        return task[1].family + ("/te" if task[1].view == "te" else "")

    def strength(group):
        family, _, view = group.partition("/")
        return traits_of(family).rank + (0.5 if view else 0.0)

    def deferred(task):
        _, run = task
        return run.family in ("svm", "knn") and dict(run.params).get("kernel") != "linear"

    kept = [t for t in order if not deferred(t)]
    families = sorted({name(t) for t in kept if t[0] == "families"}, key=strength)
    assert "lightgbm/te" in families  # the te runs are a group of their own, after lightgbm's
    first_round = [name(t) for t in kept[: len(families) + 1]]
    assert [f for f in first_round if f != "detectors"] == families  # strongest first
    assert "detectors" in first_round  # the detectors take part from the first round
    for family in families:  # cheapest run of each family first
        costs = [
            relative_cost(r.family, dict(r.params), r.stages)
            for s, r in order
            if s == "families" and name((s, r)) == family
        ]
        assert costs == sorted(costs), family
    last = [i for i, t in enumerate(order) if deferred(t)]
    assert last and min(last) == len(order) - len(last)  # kernel SVMs and k-NN last
    small = [tasks[i] for i in anytime_order(tasks, n_rows=500)]
    groups = {name(t) for t in small}  # on small data they take their turn in the first round
    assert min(i for i, t in enumerate(small) if deferred(t)) < len(groups)


@pytest.mark.parametrize(
    ("rows", "n_jobs", "expected"),
    [(60, -1, 1), (60, 2, 2), (60, None, None), (builder_module.IN_PROCESS_ROWS, -1, -1)],
)
def test_every_cpu_on_a_tiny_table_builds_in_this_process(monkeypatch, rows, n_jobs, expected):
    """``n_jobs < 0`` below ``IN_PROCESS_ROWS`` rows asks the local backend for one worker (this
    process); a number of workers the caller chose, and larger tables, are left as given."""
    asked = []
    real = builder_module.make_executor

    def recording(jobs, *args, **kwargs):
        asked.append(jobs)
        return real(1, *args, **kwargs)  # build in this process whatever was asked

    monkeypatch.setattr(builder_module, "make_executor", recording)
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    spec = {"families": [{"family": "logreg"}]}
    build_library(X.iloc[:rows], y.iloc[:rows], spec=spec, cv=2, n_jobs=n_jobs, verbose=0)
    assert asked == [expected]
