"""docs/papers.md's generator: only the marked blocks change, and the Tables 4.x blocks hold the
paper's rows beside ours."""

from __future__ import annotations

import json

import numpy as np

from benchmarks import papers_report
from ensel.metrics import METRICS

METHODS = (
    "ES-NOCAL ES-NOCAL-CV ES-HILL ES-AVG ES-BOTH ES-BOTH-CV MODSEL-BOTH MODSEL-BOTH-CV "
    "BAYESAVG-BOTH proxy:rms proxy:mxe proxy:roc proxy:acc"
).split()


def _write_rows(path, folds=2):
    rng = np.random.default_rng(0)
    with path.open("w") as f:
        for fold in range(folds):
            scores = {m: {} for m in ("_bottom", "_perfect", "_member-CV:a", *METHODS)}
            for metric in METRICS:
                lower = metric in ("rms", "mxe")
                scores["_bottom"][metric] = 0.5 if lower else 0.3
                scores["_perfect"][metric] = 0.0 if lower else 1.0
                scores["_member-CV:a"][metric] = 0.3 if lower else 0.7
                for m in METHODS:
                    value = rng.uniform(0.35, 0.45) if lower else rng.uniform(0.4, 0.6)
                    scores[m][metric] = float(value)
            row = {"dataset": "d", "fold": fold, "spec": "tiny", "scores": scores}
            f.write(json.dumps(row) + "\n")


def test_tables_4_blocks_put_the_paper_beside_ours(tmp_path):
    path = tmp_path / "rows.jsonl"
    missing = papers_report.tables_4_blocks(path)
    assert set(missing) == {f"table-4-{k}" for k in range(1, 6)}
    assert "No rows yet" in missing["table-4-1"]
    _write_rows(path)
    blocks = papers_report.tables_4_blocks(path)
    t41 = blocks["table-4-1"]
    assert "| ES-BOTH | paper | 0.920 |" in t41 and "| ES-BOTH | ensel |" in t41
    assert "-CV" not in t41.split("ensel", 1)[1]  # no cross-validated row in Table 4.1
    assert "ES-HILL" not in t41  # Table 4.4's rows are not Table 4.1's
    assert "| ES-BOTH-CV | ensel |" in blocks["table-4-2"]
    assert "| ES-HILL | paper | 32.9 |" in blocks["table-4-4"]
    assert "spec `tiny`" in t41 and "2 outer folds" in t41
    t43 = blocks["table-4-3"]
    assert "| dataset | source |" in t43 and "| MEAN^cv | paper | 2.89 |" in t43
    assert "| d | ensel |" in t43 and "| MEAN^cv | ensel |" in t43
    t45 = blocks["table-4-5"]
    assert "| ES-BOTH-CV | paper | 0.969 | 0.968 | 0.973 |" in t45
    rows = papers_report.bench_paper.rows_from_results(papers_report.load_results(path))
    tables = papers_report.bench_paper.tables(rows)
    proxies = tables["§4.3.5 proxies"]["MEAN"]
    target = tables["Tables 4.1-4.2"].loc["ES-BOTH-CV", "MEAN"]  # OPTMETRIC is Table 4.2's row
    assert proxies["the target metric"] == target
    ours = f"| ES-BOTH-CV | ensel | {proxies['rms']:.3f} | {proxies['mxe']:.3f} | {target:.3f} |"
    assert ours in t45


def test_write_papers_doc_keeps_hand_text(tmp_path, monkeypatch):
    doc = tmp_path / "papers.md"
    doc.write_text("intro\n<!-- generated: t -->\n<!-- end generated -->\noutro\n")
    monkeypatch.setattr(papers_report, "BLOCKS", {"x": lambda: {"t": "TABLE"}})
    papers_report.write_papers_doc(doc)
    assert doc.read_text() == "intro\n<!-- generated: t -->\nTABLE\n<!-- end generated -->\noutro\n"


def test_openset_and_fspt_blocks_from_rows(tmp_path):
    from benchmarks import bench_fspt, bench_openset

    none = tmp_path / "none.jsonl"
    assert "No rows yet" in papers_report.openset_blocks(none, none)["openset-digits"]
    bench_openset.run_digits(1, 5, tmp_path / "digits.jsonl")
    block = papers_report.openset_blocks(tmp_path / "digits.jsonl", none)["openset-digits"]
    assert "| source | setting |" in block and "| Steele (MNIST) | original | 0.960 |" in block
    rows = [
        {"seed": 0, "part": "groups", "model": "NN", "t1": 0.8, "t2": 0.2, "G1_share": 0.7,
         "G1_acc": 0.9, "G1_phi_m": 0.99, "G2_share": 0.3, "G2_acc": 0.8, "G2_phi_m": 0.98},
        {"seed": 0, "part": "curve", "model": "NN", "rule": "fspt",
         "accuracy": [0.9] * len(bench_fspt.COVERAGES)},
    ]  # fmt: skip
    path = tmp_path / "fspt.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    blocks = papers_report.fspt_blocks(path)
    assert (
        "| NN | 0.800 | 0.200 | 0.750 | 0.700 | 0.916 | 0.900 | 0.821 | 0.800 |"
        in (blocks["fspt-tables"])
    )
    assert "| NN | fspt | 0.900 |" in blocks["fspt-curves"]


def test_compression_blocks_hold_table_4_8_and_ours_from_rows(tmp_path):
    blocks = papers_report.compression_blocks(tmp_path / "none.jsonl")
    assert "| ADULT | 0.325 | 0.317 | 0.328 | 0.319 | 0.290 |" in blocks["compression-paper"]
    assert "| AVERAGE | 0.264 | 0.263 | 0.282 | 0.274 | 0.970 |" in blocks["compression-paper"]
    assert "No rows yet" in blocks["compression"]
    scores = {
        kind: {m: (rms if m == "rms" else 1 - rms) for m in METRICS}
        for kind, rms in (("MIMIC", 0.32), ("ENSEMBLE", 0.30), ("ANN", 0.34), ("SINGLE", 0.31))
    }
    row = {"problem": "pima", "hidden": 256, "n_pseudo": 400_000, "spec": "default"}
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({**row, "scores": scores}) + "\n")
    block = papers_report.compression_blocks(path)["compression"]
    assert "| pima | 0.3200 | 0.3000 | 0.3400 | 0.3100 | 0.5000 | -1.0000 | 0.0100 |" in block
