"""Deploying the selected ensemble: the whole ensemble as one ONNX file against Python.

On each table (breast_cancer, Pima, DoctorContacts), a default ensemble fitted with
``exportable=True`` under ``--time-limit`` seconds is exported with ``to_onnx``; the row
records the largest absolute difference between the file under onnxruntime and
``predict_proba`` on every test row, single-row latency (p50 and p99 of one row per call after
warm-up) of ensel's Python ``predict_proba``, its ONNX file and the mimic net's ONNX file, the
batch microseconds per row of each (``_predict_timing.warm_predict``), the file sizes against
the saved model's, and the hillclimb cost of the restriction (``budget_.exportable``).
``--peers autogluon`` adds AutoGluon best_quality fitted in its own venv for as long, with its
batch predict microseconds per row and its single-row p50/p99. Rows go to
benchmarks/results/deploy.jsonl.

    python -m benchmarks.bench_deploy --time-limit 120 [--peers autogluon]
    python -m benchmarks.bench_deploy --quick     # a tiny spec on 200 rows, no peer, < 1 min
"""

from __future__ import annotations

import json
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks._predict_timing import SINGLE_CALLS, single_row_ms, warm_predict
from benchmarks._record import append_row, provenance, results_path, suite_parser
from benchmarks.datasets import load, protocol_split

RESULTS = Path(__file__).resolve().parent / "results" / "deploy.jsonl"
DATASETS = ("breast_cancer", "pima", "doctor_contacts")
QUICK_ROWS = 200
QUICK_SPEC = {
    "name": "deploy_quick",
    "families": [
        {"family": "logreg", "params": {"ridge": [1.0]}, "calibration": ["none", "platt"]},
        {"family": "tree", "params": {"max_depth": [3]}, "calibration": ["none", "isotonic"]},
        {"family": "random_forest", "params": {"max_features": [2]}, "stages": [8]},
        {"family": "knn", "params": {"weighting": "uniform"}, "stages": [5]},
    ],
}
"""``--quick``: every exporting kind of member, and one that does not export (k-NN), so the
restriction is exercised."""
MIMIC = {"n_pseudo": 20_000, "hidden": 64, "epochs": 40}
QUICK_MIMIC = {"n_pseudo": 1_000, "hidden": 8, "epochs": 3}


def onnx_predictor(path: Path, output: str, one_thread: bool = False):
    """``predict(inputs)`` of an ONNX file: onnxruntime alone, on inputs already built (as a
    service in any language holds its arrays; :func:`ensel.estimator.export.feeds`), with
    onnxruntime's default session, or with ``one_thread`` the session docs/deploy.md
    advises for one row per call (one thread, nodes run in order: no thread pool to wake)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    if one_thread:
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return lambda inputs: session.run([output], inputs)[0]


def _mimic_columns(path: Path):
    """The mimic file's column lists, as a ``data.Columns``-like object."""
    import onnx

    from ensel.data import Columns

    props = {p.key: p.value for p in onnx.load(str(path)).metadata_props}
    numeric = tuple(json.loads(props["numeric_columns"]))
    categorical = tuple(json.loads(props["categorical_columns"]))
    return Columns(numeric, categorical, ())


def timings(name: str, predict, batch, rows: list) -> dict:
    """Single-row percentiles of ``predict`` on each of ``rows`` and its batch microseconds
    per row on ``batch`` (all test rows)."""
    _, batch_us = warm_predict(predict, batch, _length(batch))
    single = single_row_ms(predict, rows, calls=SINGLE_CALLS)
    return {f"{name}_p50_ms": single["p50_ms"], f"{name}_p99_ms": single["p99_ms"],
            f"{name}_batch_us_per_row": batch_us}  # fmt: skip


def _length(batch) -> int:
    """Rows in a frame or in a dict of input arrays."""
    return len(next(iter(batch.values()))) if isinstance(batch, dict) else len(batch)


def fit(X, y, seed: int, time_limit: float | None, quick: bool):
    from ensel.estimator import EnsembleSelectionClassifier

    options = {"library": QUICK_SPEC, "cv": 3} if quick else {"time_limit": time_limit}
    return EnsembleSelectionClassifier(exportable=True, random_state=seed, n_jobs=2, **options).fit(
        X, y
    )


def case(dataset: str, seed: int, time_limit: float | None, quick: bool, peers=()) -> dict:
    """One table and seed: fit, export, compare, time; the result row."""
    from ensel.compress import compress
    from ensel.estimator.export import feeds
    from ensel.estimator.export.assemble import columns_of

    data = load(dataset)
    X, y = data.X, data.y
    if quick:
        X, y = X.iloc[:QUICK_ROWS], y.iloc[:QUICK_ROWS]
    train, test = protocol_split(y, seed, groups=None if quick else data.groups)
    X_train, X_test = X.iloc[train], X.iloc[test]
    started = time.monotonic()
    clf = fit(X_train, y.iloc[train], seed, time_limit, quick)
    row = {"dataset": dataset, "seed": seed, "time_limit": time_limit, "quick": quick,
           "fit_seconds": time.monotonic() - started, "members": len(clf.members_),
           "test_rows": len(X_test), "exportable": clf.budget_.exportable}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="ensel-deploy-") as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unseen categories in test rows
        tmp = Path(tmp)
        row["max_abs_diff"] = clf.to_onnx(tmp / "ensemble.onnx", X_test)
        clf.save(tmp / "model.pkl")
        mimic = compress(clf, X_train, random_state=seed, **(QUICK_MIMIC if quick else MIMIC))
        mimic.export(tmp / "mimic.onnx")
        frame = clf._frame(X_test)
        rows = [frame.iloc[[i]] for i in range(min(len(frame), SINGLE_CALLS))]
        python_rows = [X_test.iloc[[i]] for i in range(len(rows))]
        row.update(timings("python", clf.predict_proba, X_test, python_rows))
        for name, file, columns, one_thread in (
            ("onnx", "ensemble.onnx", columns_of(clf), False),
            ("onnx_one_thread", "ensemble.onnx", columns_of(clf), True),
            ("mimic_onnx", "mimic.onnx", _mimic_columns(tmp / "mimic.onnx"), False),
        ):
            predict = onnx_predictor(tmp / file, "probabilities", one_thread)
            inputs = [feeds(columns, r) for r in rows]
            row.update(timings(name, predict, feeds(columns, frame), inputs))
        row["onnx_nodes"] = _nodes(tmp / "ensemble.onnx")
        for name in ("ensemble.onnx", "model.pkl", "mimic.onnx"):
            row[f"{name.replace('.', '_')}_bytes"] = (tmp / name).stat().st_size
    row["onnx_over_saved"] = row["ensemble_onnx_bytes"] / row["model_pkl_bytes"]
    row["members_with_weight"] = int((clf.members_["weight"] > 0).sum())
    if "autogluon" in peers:
        row.update(_autogluon(data, X_train, X_test, y.iloc[train], time_limit, seed))
    return {**row, **provenance()}


def _autogluon(data, X_train, X_test, y_train, time_limit: float, seed: int) -> dict:
    """AutoGluon best_quality on the same split: its batch predict microseconds per row and
    its single-row p50/p99 (``predict_proba`` of one row per call, timed in its venv)."""
    from benchmarks._peers import run_autogluon

    train = X_train.assign(**{"__target": np.asarray(y_train)})
    result = run_autogluon(
        train, X_test, "__target", data.problem_type, time_limit, seed=seed,
        single_rows=SINGLE_CALLS,
    )  # fmt: skip
    return {"autogluon_batch_us_per_row": result.info.get("predict_us_per_row"),
            "autogluon_p50_ms": result.info.get("single_p50_ms"),
            "autogluon_p99_ms": result.info.get("single_p99_ms"),
            "autogluon_fit_seconds": result.fit_seconds,
            "autogluon_model_mb": result.model_mb}  # fmt: skip


def _nodes(path: Path) -> int:
    """Nodes of an ONNX file's graph (onnxruntime pays a few microseconds per node a call)."""
    import onnx

    return len(onnx.load(str(path)).graph.node)


def report_block(results: Path = RESULTS) -> dict[str, str]:
    """docs/deploy.md's measured table: the latest full row of each table, and the targets
    (file within 1e-5 of ``predict_proba``, ONNX single-row p99 <= 1 ms, Python p99 <= 10 ms,
    file <= 2x the saved model) met on how many tables."""
    import pandas as pd

    from benchmarks._report import markdown_table

    if not results.exists():
        return {}
    rows = pd.read_json(results, lines=True)
    rows = rows[~rows["quick"]].sort_values("utc").groupby("dataset", sort=False).tail(1)
    if rows.empty:
        return {}

    def pair(r, name: str, digits: int) -> str:
        p50, p99 = r.get(f"{name}_p50_ms"), r.get(f"{name}_p99_ms")
        return "-" if pd.isna(p99) else f"{p50:.{digits}f} / {p99:.{digits}f} ms"

    records = rows.to_dict("records")
    table = pd.DataFrame([{
        "table (test rows)": f"{r['dataset']} ({r['test_rows']:,})",
        "largest difference": f"{r['max_abs_diff']:.1g}",
        "Python p50 / p99": pair(r, "python", 1),
        "ONNX p50 / p99": pair(r, "onnx", 2),
        "ONNX one thread p50 / p99": pair(r, "onnx_one_thread", 2),
        "mimic ONNX p99": f"{r['mimic_onnx_p99_ms']:.2f} ms",
        "AutoGluon p50 / p99": pair(r, "autogluon", 0),
        "batch µs/row Python / ONNX / AutoGluon": " / ".join(
            "-" if pd.isna(r.get(f"{k}_batch_us_per_row")) else
            f"{r[f'{k}_batch_us_per_row']:.0f}" for k in ("python", "onnx", "autogluon")),
        "hillclimb score all / exportable / within graph budget": " / ".join(
            "-" if r["exportable"].get(k) is None else f"{r['exportable'][k]:.4f}"
            for k in ("score_all", "score_exportable", "score_within_budget")),
        "graph ms predicted": "-" if r["exportable"].get("graph_ms") is None else
            f"{r['exportable']['graph_ms']:.2f}",
        "nodes": "-" if pd.isna(r.get("onnx_nodes")) else f"{r['onnx_nodes']:.0f}",
        "file / saved model": f"{r['onnx_over_saved']:.2f}",
    } for r in records])  # fmt: skip
    targets = {
        "file within 1e-5 of predict_proba": ("max_abs_diff", 1e-5),
        "ONNX p99 <= 1 ms": ("onnx_p99_ms", 1.0),
        "ONNX one thread p99 <= 1 ms": ("onnx_one_thread_p99_ms", 1.0),
        "Python p99 <= 10 ms": ("python_p99_ms", 10.0),
        "file <= 2x the saved model": ("onnx_over_saved", 2.0),
    }
    met = []
    for target, (column, most) in targets.items():
        measured = rows[column].dropna() if column in rows else rows.iloc[:0, 0]
        if len(measured):
            met.append(f"{target}: {(measured <= most).sum()} of {len(measured)}")
    verdict = "; ".join(met)
    return {"deploy-measured": markdown_table(table, index=False) + f"\n\nTargets met: {verdict}."}


def main(argv=None) -> None:
    parser = suite_parser(__doc__, RESULTS)
    parser.add_argument("--time-limit", type=float, default=120.0)
    parser.add_argument("--datasets", nargs="*", default=list(DATASETS))
    parser.add_argument("--seeds", nargs="*", type=int, default=[0])
    parser.add_argument("--peers", nargs="*", default=[], choices=["autogluon"])
    args = parser.parse_args(argv)
    datasets = ["breast_cancer"] if args.quick else args.datasets
    results = results_path(args, RESULTS, "deploy")
    for dataset in datasets:
        for seed in args.seeds:
            row = case(dataset, seed, None if args.quick else args.time_limit, args.quick,
                       () if args.quick else args.peers)  # fmt: skip
            append_row(results, row)
            print(dataset, seed, f"diff {row['max_abs_diff']:.2g}",
                  f"python p99 {row['python_p99_ms']:.2f} ms",
                  f"onnx p99 {row['onnx_p99_ms']:.3f} ms",
                  f"size x{row['onnx_over_saved']:.2f}", f"-> {results}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
