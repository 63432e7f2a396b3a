import json

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer

from benchmarks import fit_record
from ensel import EnsembleSelectionClassifier
from ensel.library.spec import load_spec


def test_the_family_table_counts_the_stores_runs_and_the_ensembles_weight(tmp_path):
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    rows = np.random.default_rng(0).choice(len(y), 300, replace=False)
    store = tmp_path / "store"
    clf = EnsembleSelectionClassifier(library="tiny", n_jobs=1, n_bags=3, store=str(store))
    clf.fit(X.iloc[rows], y.iloc[rows])
    table = fit_record.family_table(store, clf.members_)
    spec = load_spec("tiny")
    expected = pd.Series([r.family for r in spec.runs]).value_counts()
    assert table.loc[expected.index, "runs"].tolist() == expected.tolist()
    assert (table["ok"] <= table["runs"]).all() and (table["fit_s"] >= 0).all()
    assert table["weight"].sum() == pytest.approx(1.0)
    heaviest = clf.members_.groupby("family")["weight"].sum().idxmax()
    assert table["weight"].idxmax() == heaviest
    assert table["fit_s"].is_monotonic_decreasing


def test_a_fit_refuses_a_store_that_exists_and_the_cli_one_mode(tmp_path, capsys):
    with pytest.raises(SystemExit, match="exists"):
        fit_record.fit("pima", 0, 10.0, "tiny", tmp_path)
    with pytest.raises(SystemExit) as both:
        fit_record.main(["pima", "0", "--store", str(tmp_path), "--reselect", str(tmp_path)])
    assert both.value.code == 2
    assert "not both" in capsys.readouterr().err


def test_a_configuration_name_gives_its_spec():
    for name in fit_record.CONFIG_SPECS:
        spec = fit_record.config_spec(name)
        assert json.dumps(spec)  # a plain dict, as the fit takes
        assert load_spec(spec).name == f"default_{name}"
