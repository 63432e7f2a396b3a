"""A fit reads as a short pipeline: followed through the modules it crosses, the control path of
``fit`` two module boundaries deep (calls inside one module do not count, nor calls of the
metric functions, which every stage may score with) goes estimator -> fit pipeline -> selection
and back, without wandering between modules it has already left."""

import sys

from sklearn.datasets import load_breast_cancer

from ensel import EnsembleSelectionClassifier

LEAF_MODULES = {"ensel.metrics"}
"""Pure functions any stage calls; a call into one is not a stop of the path."""


def fit_path(fit, depth_max: int) -> list[str]:
    """The ensel modules ``fit()`` passes through, in order, at most ``depth_max`` module
    boundaries below the first ``fit`` of ``ensel.estimator``; consecutive stops in one module
    collapse into one."""
    stops: list[str] = []
    state = {"stack": None, "mods": None, "depth": 0}

    def profile(frame, event, arg):
        if event == "call":
            mod = frame.f_globals.get("__name__", "")
            ours = mod.startswith("ensel") and mod not in LEAF_MODULES
            if state["stack"] is None:
                if ours and frame.f_code.co_name == "fit" and mod.startswith("ensel.estimator"):
                    state.update(stack=[(True, False)], mods=[mod], depth=0)
                    stops.append(mod)
                return
            crossed = ours and mod != state["mods"][-1]
            state["stack"].append((ours, crossed))
            if ours:
                state["mods"].append(mod)
                state["depth"] += crossed
                if state["depth"] <= depth_max and mod != stops[-1]:
                    stops.append(mod)
        elif event == "return" and state["stack"] is not None:
            ours, crossed = state["stack"].pop()
            if not state["stack"]:
                state["stack"] = None
            elif ours:
                state["mods"].pop()
                state["depth"] -= crossed

    sys.setprofile(profile)
    try:
        fit()
    finally:
        sys.setprofile(None)
    return stops


def returns(stops: list[str]) -> int:
    """How often the path enters a module it had already left."""
    return sum(1 for i, module in enumerate(stops) if module in stops[:i])


def test_fit_is_a_short_pipeline():
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X, y = X.iloc[:240], y.iloc[:240]
    clf = EnsembleSelectionClassifier(library="tiny", cv=3, n_jobs=1, random_state=0)
    stops = fit_path(lambda: clf.fit(X, y), depth_max=2)
    assert stops[:3] == [
        "ensel.estimator.classifier",
        "ensel.estimator._base",
        "ensel.estimator.fit_pipeline",
    ]
    assert len(set(stops)) <= 5, stops
    assert returns(stops) <= 3, stops
