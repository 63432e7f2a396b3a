"""Tables 4.6-4.8 of the dissertation (§4.4) on real data: the mimic net against the ensemble
it mimics, the best neural net of the library and the best single member, on all eight metrics;
Table 4.8's ratio (the share of the ensemble's RMSE gain over the best net that the mimic
keeps); time to predict 10,000 rows and size on disk.

    python -m benchmarks.bench_compress [--quick] [--datasets turnout,pima,...] [--n-pseudo N]

Each dataset is split once 70/30 (stratified). The library (`default` spec with cv=5, `tiny`
with --quick) is built on the 70% into `.bench-cache/compress/` (a rerun reuses it), and the
ensemble is selected for RMS as in §4.4. The ensemble labels MUNGE pseudo rows (cached beside
the library: labelling is the slow part) and a 256-unit mimic is trained on them. The best
net and the best member are chosen by hillclimb (out-of-fold) RMSE. Scores are on the 30%.
"""

from __future__ import annotations

import argparse
import os
import pickle
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.model_selection import GroupShuffleSplit, train_test_split

from benchmarks import datasets
from benchmarks._report import ROOT, machine_line, median_seconds, write_section
from ensel import EnsembleSelectionClassifier
from ensel.compress import fit_mimic, label, munge
from ensel.library import build_library
from ensel.metrics import METRICS, score

SECTION = "## Model compression (Tables 4.6-4.8)"
DATASETS = ("turnout", "participation", "pima", "breast_cancer")
SCAN_DATASET = "participation"
CACHE = ROOT / ".bench-cache" / "compress"
SEED = 0
TIMED_ROWS = 2_000
"""Rows the ensemble and the single members predict per timing (scaled to 10,000: prediction
is linear in the rows); the mimic is timed on 10,000 rows."""


def split(X, y, groups):
    """One 70/30 split, stratified; grouped (one person's rows on one side) for panel data."""
    if groups is None:
        return [*train_test_split(X, y, test_size=0.3, stratify=y, random_state=SEED), None]
    train, test = next(GroupShuffleSplit(1, test_size=0.3, random_state=SEED).split(X, y, groups))
    parts = [X.iloc[train], X.iloc[test], y.iloc[train], y.iloc[test]]
    return [p.reset_index(drop=True) for p in parts] + [groups.iloc[train].reset_index(drop=True)]


def load(name: str):
    got = getattr(datasets, name)()
    X, y, groups = got[0], got[1], got[2] if len(got) > 2 else None
    return split(X, y, groups)


def labelled(clf, X_tr, name: str, spec: str, n_pseudo: int):
    """MUNGE rows and the ensemble's probabilities of them and of the training rows, cached."""
    path = CACHE / f"{name}-{spec}-labels-{n_pseudo}.pkl"
    if path.is_file():
        with open(path, "rb") as fh:
            return pickle.load(fh)
    start = time.perf_counter()
    pseudo = munge(X_tr, size=n_pseudo, p=0.5, s=10.0, random_state=SEED)
    got = (pseudo, label(clf, pseudo), label(clf, X_tr), time.perf_counter() - start)
    with open(path, "wb") as fh:
        pickle.dump(got, fh)
    return got


def best_member(board: pd.DataFrame, family: str | None) -> str:
    """The member with the best hillclimb RMSE (of ``family``; the `tiny` spec has no nets, so
    --quick falls back to the best member overall)."""
    rows = board if family is None else board[board["family"] == family]
    rows = board if rows.empty else rows
    return str(rows.sort_values("rms")["id"].iloc[0])


def positive(proba: np.ndarray) -> np.ndarray:
    return proba[:, 1] if proba.ndim == 2 and proba.shape[1] == 2 else proba


def run_dataset(name: str, spec: str, n_pseudo: int, epochs: int, scan: tuple[int, ...]):
    X_tr, X_te, y_tr, y_te, g_tr = load(name)
    start = time.perf_counter()
    lib = build_library(
        X_tr, y_tr, spec=spec, cv=5, groups=g_tr, store=CACHE / f"{name}-{spec}", n_jobs=2,
        random_state=SEED,
    )  # fmt: skip
    build_s = time.perf_counter() - start
    clf = EnsembleSelectionClassifier(library=lib, metric="rms", random_state=SEED).fit(X_tr, y_tr)
    board = clf.leaderboard_
    ids = {"ANN": best_member(board, "mlp"), "SINGLE": best_member(board, None)}
    y_test = np.searchsorted(clf.classes_, np.asarray(y_te))
    proba = {"ENSEMBLE": clf.predict_proba(X_te)}
    for kind, member in ids.items():
        proba[kind] = lib.predict(X_te, ids=[member])[0]
    pseudo, targets, X_targets, label_s = labelled(clf, X_tr, name, spec, max((n_pseudo, *scan)))
    mimics = {}
    for n in sorted({n_pseudo, *scan}):
        mimics[n] = fit_mimic(
            X_tr, pseudo.iloc[:n], targets[:n], X_targets, classes=clf.classes_, hidden=256,
            epochs=epochs, random_state=SEED,
        )  # fmt: skip
    mimic = mimics[n_pseudo]
    proba["MIMIC"] = mimic.predict_proba(X_te)
    scores = {
        kind: {m: score(m, y_test, positive(p)) for m in METRICS} for kind, p in proba.items()
    }
    scan_rows = {
        n: score("rms", y_test, positive(m.predict_proba(X_te))) for n, m in mimics.items()
    }
    info = {
        "rows": len(X_tr) + len(X_te),
        "train": len(X_tr),
        "members": len(clf.members_),
        "library": lib.n_members,
        "build_s": build_s,
        "label_s": label_s,
        "train_s": mimic.history_.seconds["train"],
        "epochs": mimic.history_.best_epoch,
        "fidelity": mimic.history_.fidelity_rmse,
        "ids": ids,
    }
    info.update(cost(clf, lib, ids, mimic, X_te))
    return scores, info, scan_rows


def cost(clf, lib, ids, mimic, X_te) -> dict:
    """Seconds to predict 10,000 rows and size on disk (MB) of each model."""
    import onnxruntime as ort
    import torch

    rows = X_te.sample(10_000, replace=True, random_state=SEED).reset_index(drop=True)
    few = rows.iloc[:TIMED_ROWS]
    scale = 10_000 / TIMED_ROWS
    out = {
        "time ENSEMBLE": scale * median_seconds(lambda: clf.predict_proba(few), 3),
        "time ANN": scale * median_seconds(lambda: lib.predict(few, ids=[ids["ANN"]]), 3),
        "time SINGLE": scale * median_seconds(lambda: lib.predict(few, ids=[ids["SINGLE"]]), 3),
        "time MIMIC torch": median_seconds(lambda: mimic.predict_proba(rows), 5),
    }
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        clf.save(tmp / "ensemble.pkl")
        mimic.export(tmp / "mimic.onnx")
        torch.save(mimic.module_.state_dict(), tmp / "mimic.pt")
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        session = ort.InferenceSession(
            str(tmp / "mimic.onnx"), options, providers=["CPUExecutionProvider"]
        )
        enc = mimic.encoding_

        def run_onnx():
            feeds = {}
            if enc.numeric:
                feeds["numeric"] = rows[list(enc.numeric)].to_numpy(np.float64)
            if enc.categorical:
                feeds["categorical"] = rows[list(enc.categorical)].astype(str).to_numpy()
            return session.run(None, feeds)

        out["time MIMIC onnx"] = median_seconds(run_onnx, 5)
        mb = 1024**2
        out["size ENSEMBLE"] = os.path.getsize(tmp / "ensemble.pkl") / mb
        out["size MIMIC onnx"] = os.path.getsize(tmp / "mimic.onnx") / mb
        out["size MIMIC torch"] = os.path.getsize(tmp / "mimic.pt") / mb
    return out


def ratio(ann: float, ensemble: float, mimic: float) -> float:
    """Table 4.8: (ANN - MIMIC) / (ANN - ENSEMBLE) on RMSE."""
    return (ann - mimic) / (ann - ensemble)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--n-pseudo", type=int, default=None)
    args = parser.parse_args()
    spec = "tiny" if args.quick else "default"
    n_pseudo = args.n_pseudo or (2_000 if args.quick else 20_000)
    epochs = 20 if args.quick else 200
    names = args.datasets.split(",")
    CACHE.mkdir(parents=True, exist_ok=True)
    results = {}
    for name in names:
        scan = () if args.quick or name != SCAN_DATASET else (n_pseudo // 4, n_pseudo // 2)
        start = time.perf_counter()
        results[name] = run_dataset(name, spec, n_pseudo, epochs, scan)
        print(f"{name}: {time.perf_counter() - start:.0f} s", flush=True)
    write(results, args, spec, n_pseudo)


def write(results: dict, args, spec: str, n_pseudo: int) -> None:
    kinds = ("MIMIC", "ENSEMBLE", "ANN", "SINGLE")
    command = "python -m benchmarks.bench_compress" + (" --quick" if args.quick else "")
    rms = {n: {k: s[k]["rms"] for k in kinds} for n, (s, _, _) in results.items()}
    mean = {k: float(np.mean([r[k] for r in rms.values()])) for k in kinds}
    table48 = [
        f"| {n} | " + " | ".join(f"{r[k]:.4f}" for k in kinds)
        + f" | {ratio(r['ANN'], r['ENSEMBLE'], r['MIMIC']):.2f} |"
        for n, r in rms.items()
    ]  # fmt: skip
    mean_ratio = ratio(mean["ANN"], mean["ENSEMBLE"], mean["MIMIC"])
    table48.append(
        "| AVERAGE | " + " | ".join(f"{mean[k]:.4f}" for k in kinds) + f" | {mean_ratio:.2f} |"
    )
    metrics = []
    for kind in kinds:
        values = [np.mean([s[kind][m] for s, _, _ in results.values()]) for m in METRICS]
        metrics.append(f"| {kind} | " + " | ".join(f"{v:.4f}" for v in values) + " |")
    costs = []
    for n, (_, info, _) in results.items():
        costs.append(
            f"| {n} | {info['time ENSEMBLE']:.2f} | {info['time SINGLE']:.3f} | "
            f"{info['time ANN']:.3f} | {info['time MIMIC torch']:.3f} | "
            f"{info['time MIMIC onnx']:.3f} | "
            f"{info['time ENSEMBLE'] / info['time MIMIC onnx']:.0f}x | "
            f"{info['size ENSEMBLE']:.2f} | {info['size MIMIC torch']:.3f} | "
            f"{info['size MIMIC onnx']:.3f} | "
            f"{info['size ENSEMBLE'] / info['size MIMIC onnx']:.0f}x |"
        )
    setup = [
        f"| {n} | {i['rows']} | {i['library']} | {i['members']} | {i['build_s']:.0f} | "
        f"{i['label_s']:.0f} | {i['train_s']:.0f} | {i['epochs']} | {i['fidelity']:.4f} |"
        for n, (_, i, _) in results.items()
    ]
    scans = {n: sc for n, (_, _, sc) in results.items() if len(sc) > 1}
    lines = [
        "",
        machine_line(command),
        "",
        f"Spec `{spec}` with cv=5, ensemble selected for RMS; mimic: one hidden layer of 256 "
        f"tanh units, squared error, Adam, early stopping on 10% of the pseudo rows, trained on "
        f"{n_pseudo:,} MUNGE rows (p=0.5, s=10) plus the training rows, all labelled by the "
        "ensemble. The dissertation used 400k pseudo rows; labelling them here would take "
        "about 30 minutes per dataset (our ensembles predict about 4 ms per row on this "
        "machine), so the run is scaled down to fit in about 15 minutes on 2 cores; see the "
        "n_pseudo scan below. Test RMSE (Table 4.8; RATIO = (ANN - MIMIC) / (ANN - ENSEMBLE), "
        "the AVERAGE row's ratio is that of the average RMSEs, as in the paper):",
        "",
        "| dataset | MIMIC | ENSEMBLE | ANN | SINGLE | RATIO |",
        "|---|---|---|---|---|---|",
        *table48,
        "",
        "Mean test score over the datasets on all eight metrics:",
        "",
        "| model | " + " | ".join(METRICS) + " |",
        "|---" * (len(METRICS) + 1) + "|",
        *metrics,
        "",
        f"Seconds to predict 10,000 rows (Table 4.6; ensemble, single member and net timed on "
        f"{TIMED_ROWS:,} rows and scaled; the mimic with torch and with onnxruntime, one "
        "thread, on 10,000 rows; medians) and size on disk in MB (Table 4.7; the ensemble's "
        "pickle written by `save`, which keeps only members with weight; the mimic's torch "
        "state dict and ONNX file):",
        "",
        "| dataset | ENSEMBLE s | SINGLE s | ANN s | MIMIC torch s | MIMIC onnx s | speed-up | "
        "ENSEMBLE MB | MIMIC torch MB | MIMIC onnx MB | smaller |",
        "|---" * 11 + "|",
        *costs,
        "",
        "Setup per dataset (rows in all; library members and members with weight; seconds to "
        "build the library (0 when cached), to munge and label, to train the mimic; best "
        "epoch; fidelity = RMSE between mimic and ensemble probabilities on held-out pseudo "
        "rows):",
        "",
        "| dataset | rows | library | ensemble | build s | label s | train s | epoch | fidelity |",
        "|---" * 9 + "|",
        *setup,
        "",
    ]
    for n, sc in scans.items():
        r = rms[n]
        lines += [
            f"How the mimic's test RMSE moves with n_pseudo on {n} (same pseudo rows, "
            "prefixes; ensemble "
            f"{r['ENSEMBLE']:.4f}, best net {r['ANN']:.4f}):",
            "",
            "| n_pseudo | MIMIC RMSE | RATIO |",
            "|---|---|---|",
            *[
                f"| {k:,} | {v:.4f} | {ratio(r['ANN'], r['ENSEMBLE'], v):.2f} |"
                for k, v in sorted(sc.items())
            ],
            "",
        ]
    print("\n".join(lines))
    write_section(SECTION, lines)


if __name__ == "__main__":
    main()
