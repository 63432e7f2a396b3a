"""benchmarks/calibrate_costs.py --families: only the named families' constants change."""

import json

import pytest

from benchmarks import calibrate_costs


def test_recalibrating_one_family_keeps_the_others(tmp_path, monkeypatch):
    path = tmp_path / "constants.json"
    path.write_text(calibrate_costs.OUT.read_text())
    before = json.loads(path.read_text())
    monkeypatch.setattr(calibrate_costs, "SIZES", calibrate_costs.QUICK_SIZES)
    monkeypatch.setattr(calibrate_costs, "QUADRATIC_SIZES", calibrate_costs.QUICK_SIZES)
    calibrate_costs.main(["--families", "svm", "--out", str(path)])
    after = json.loads(path.read_text())
    changed = {k for k in after["predict"] if after["predict"][k] != before["predict"][k]}
    assert changed == {"classification/svm"}
    assert {k for k in after["fit"] if after["fit"][k] != before["fit"][k]} <= {
        "classification/svm"
    }
    assert after["detectors"] == before["detectors"]
    assert after["measured"]["reruns"][-1]["families"] == ["svm"]
    with pytest.raises(SystemExit, match="unknown families"):
        calibrate_costs.main(["--families", "svn", "--out", str(path)])
