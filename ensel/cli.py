"""The ``ensel`` command: fit an ensemble on a CSV file, predict with it, run the demo.

    ensel fit TRAIN.csv --target COL --out DIR [--task auto|classification|regression]
              [--library default|regression|PATH] [--metric mxe|rmse] [--cv auto]
              [--time-limit SECONDS] [--run-time-limit SECONDS]
              [--n-jobs N | --scheduler tcp://HOST:8786 | --dask-local N]
    ensel predict DIR DATA.csv --out preds.csv [--with-risk] [--reject R]
    ensel report DIR --html report.html
    ensel compress DIR --train TRAIN.csv --out mimic.onnx [--n-pseudo 400000] [--hidden 256]
    ensel export DIR --out model.onnx [--rows DATA.csv] [--risk]
    ensel demo

Errors are one line on stderr (exit status 2), not a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
import warnings
from pathlib import Path

MODEL_FILE = "model.pkl"
LEADERBOARD_FILE = "leaderboard.csv"
LIBRARY_DIR = "library"
TASKS = ("auto", "classification", "regression")
REGRESSION_MIN_DISTINCT = 20
"""``--task auto`` fits a regressor when the target is numeric with more distinct values than
this; otherwise a classifier (class labels, or a few numeric codes)."""
DEFAULTS = {
    "classification": {"library": "default", "metric": "mxe"},
    "regression": {"library": "regression", "metric": "rmse"},
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ensel", description="Ensemble selection from libraries of models."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    _fit_arguments(commands)
    _predict_arguments(commands)
    _model_arguments(commands)
    demo = commands.add_parser("demo", help="the demo on a real dataset")
    demo.add_argument("--spec", default="default", help="library spec")
    demo.add_argument("--report", default="report.html", help="where to write the report")
    return parser


def _fit_arguments(commands) -> None:
    """``ensel fit``'s arguments."""
    fit = commands.add_parser("fit", help="build a library on a CSV file and select an ensemble")
    fit.add_argument(
        "train", type=Path, help="training data: a CSV with a header, or parquet (file, directory)"
    )
    fit.add_argument("--target", required=True, help="the column to predict")
    fit.add_argument("--out", required=True, type=Path, help="directory for the model and library")
    fit.add_argument(
        "--task",
        default="auto",
        choices=TASKS,
        help="auto: regression for a numeric target with many distinct values, else classification",
    )
    fit.add_argument(
        "--library",
        help="spec name (tiny, default, caruana2006; regression, tiny_regression) or YAML path; "
        "default: 'default', or 'regression' for a regression task",
    )
    fit.add_argument(
        "--metric",
        help="metric to select for (acc fsc lft roc apr bep rms mxe; regression: rmse mae r2); "
        "default mxe, or rmse for regression",
    )
    fit.add_argument("--strategy", default="es", help="es, modsel or bayesavg")
    fit.add_argument(
        "--cv",
        default="auto",
        help="'auto' (5 folds at every size: every run bagged), folds of embedded "
        "cross-validation, or 'none' (a held-out hillclimb split)",
    )
    fit.add_argument("--drop", nargs="*", default=[], help="columns to leave out (ids, leaks)")
    fit.add_argument("--groups", help="column whose rows must stay in one fold (e.g. a person id)")
    fit.add_argument(
        "--n-jobs", type=int, default=-1, help="worker processes (default -1: all cores)"
    )
    cluster = fit.add_mutually_exclusive_group()
    cluster.add_argument(
        "--scheduler", metavar="ADDRESS", help="build on a dask cluster (tcp://HOST:8786)"
    )
    cluster.add_argument(
        "--dask-local",
        metavar="N",
        type=int,
        help="build on a dask LocalCluster of N worker processes here",
    )
    fit.add_argument(
        "--time-limit", type=float, help="seconds for the whole fit (default: no limit)"
    )
    fit.add_argument(
        "--run-time-limit", type=float, help="seconds per training run (default: the spec's)"
    )
    fit.add_argument(
        "--max-predict-ms",
        type=_predict_budget,
        default="auto",
        help="prediction-time budget in ms per 1,000 rows; 'auto' (default): the cheapest "
        "ensemble within half a standard error (or 1e-4) of the best; 'none': no budget",
    )
    fit.add_argument(
        "--exportable",
        action="store_true",
        help="select only among members that 'ensel export' can write as ONNX",
    )
    fit.add_argument("--seed", type=int, default=0)


def _predict_arguments(commands) -> None:
    """``ensel predict``'s arguments."""
    predict = commands.add_parser("predict", help="predict a CSV file with a fitted model")
    predict.add_argument("model_dir", type=Path, help="the --out directory of 'ensel fit'")
    predict.add_argument(
        "data", type=Path, help="rows to predict: CSV with a header, or parquet (read in batches)"
    )
    predict.add_argument(
        "--out",
        required=True,
        type=Path,
        help="probabilities and labels (or predictions): parquet if it ends in .parquet, else CSV",
    )
    predict.add_argument(
        "--with-risk",
        action="store_true",
        help="add a risk_<detector> column per detector and risk_combined (extrapolation risk)",
    )
    predict.add_argument(
        "--reject",
        type=float,
        metavar="R",
        help="leave the prediction empty where the combined risk exceeds R (0 to 1)",
    )


def _model_arguments(commands) -> None:
    """The arguments of the commands that read a fitted model: report, compress, export."""
    report = commands.add_parser("report", help="write the HTML report of a fitted model")
    report.add_argument("model_dir", type=Path, help="the --out directory of 'ensel fit'")
    report.add_argument("--html", required=True, type=Path, help="where to write the report")

    comp = commands.add_parser(
        "compress", help="compress a fitted model into one small mimic net (ONNX or TorchScript)"
    )
    comp.add_argument("model_dir", type=Path, help="the --out directory of 'ensel fit'")
    comp.add_argument("--train", required=True, type=Path, help="the training CSV (for MUNGE)")
    comp.add_argument(
        "--out", required=True, type=Path, help="the file to write: .onnx, or .pt (TorchScript)"
    )
    comp.add_argument("--n-pseudo", type=int, default=400_000, help="MUNGE pseudo rows")
    comp.add_argument("--hidden", type=int, default=256, help="hidden units of the mimic net")
    comp.add_argument("--epochs", type=int, default=200, help="most epochs (early stopping)")
    comp.add_argument(
        "--loss", default="squared", help="squared or cross_entropy (classifiers only)"
    )
    comp.add_argument("--seed", type=int, default=0)

    export = commands.add_parser(
        "export", help="write the fitted ensemble itself as one ONNX file (see docs/deploy.md)"
    )
    export.add_argument("model_dir", type=Path, help="the --out directory of 'ensel fit'")
    export.add_argument("--out", required=True, type=Path, help="the .onnx file to write")
    export.add_argument(
        "--rows",
        type=Path,
        help="CSV rows to check the file on (default: rows sampled around the training data)",
    )
    export.add_argument(
        "--risk",
        action="store_true",
        help="add the combined extrapolation risk as output 'risk' (box, isolation forest)",
    )


def _read_csv(path: Path):
    """The CSV file at ``path`` (comma-separated, UTF-8, a header row); what cannot be read
    that way is one ValueError that names the file and says what to do."""
    import pandas as pd

    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    try:
        frame = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise ValueError(f"{path} is empty; give a CSV file with a header row") from None
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{path} is not UTF-8 text ({exc.reason}); save it as a UTF-8 CSV file"
        ) from None
    except pd.errors.ParserError as exc:
        raise ValueError(
            f"{path} is not a well-formed CSV file ({str(exc).strip()}); check the quoting and "
            "that every row has as many fields as the header"
        ) from None
    if frame.shape[1] == 1:
        name = str(frame.columns[0])
        sep = next((s for s in (";", "\t", "|") if s in name), None)
        if sep is not None:
            raise ValueError(
                f"{path} reads as one column {name[:60]!r}: its fields look separated by "
                f"{sep!r}; ensel reads comma-separated files, so save it with ',' separators"
            )
    return frame


def _is_parquet(path: Path) -> bool:
    from .library.data.sources import is_source

    return is_source(path)


def _parquet_training(args: argparse.Namespace):
    """``(X, y, groups)`` of a parquet training path: the features stay on disk (read where
    they are fitted), the label and group columns are read here."""
    from .library.data.sources import ParquetParts, ParquetTable, parquet_files, read_columns

    names = ParquetParts.open(parquet_files(args.train)).columns
    extra = [args.target, *([args.groups] if args.groups else [])]
    labels = read_columns(args.train, extra)
    absent = [c for c in args.drop if c not in names]
    if absent:
        raise ValueError(f"column(s) {absent} are not in {args.train}")
    features = tuple(c for c in names if c not in {*extra, *args.drop})
    groups = labels[args.groups].to_numpy() if args.groups else None
    return ParquetTable(str(args.train), features), labels[args.target], groups


def fit(args: argparse.Namespace) -> str:
    if _is_parquet(args.train):
        X, y, groups = _parquet_training(args)
        return _fit_and_save(args, X, y, groups)
    frame = _read_csv(args.train)
    if args.target not in frame.columns:
        raise ValueError(
            f"--target {args.target!r} is not a column of {args.train}: {list(frame.columns)[:20]}"
        )
    absent = [
        c for c in [*args.drop, *([args.groups] if args.groups else [])] if c not in frame.columns
    ]
    if absent:
        raise ValueError(f"column(s) {absent} are not in {args.train}")
    y = frame.pop(args.target)
    groups = frame.pop(args.groups) if args.groups else None
    X = frame.drop(columns=args.drop)
    return _fit_and_save(args, X, y, groups)


def _fit_and_save(args: argparse.Namespace, X, y, groups) -> str:
    cv = _cv_argument(args.cv)
    task, reason = infer_task(y, args.task)
    print(f"task: {task} ({reason})")
    args.library = args.library or DEFAULTS[task]["library"]
    args.metric = args.metric or DEFAULTS[task]["metric"]
    args.out.mkdir(parents=True, exist_ok=True)
    with _cluster(args) as client:
        model = _fit_model(args, task, X, y, groups, cv, client)
    model.save(args.out / MODEL_FILE)
    model.leaderboard().to_csv(args.out / LEADERBOARD_FILE, index=False)
    return (
        f"{len(model.members_)} of the library's {len(model.leaderboard_)} members have weight "
        f"in the ensemble; hillclimb {args.metric} {model.hillclimb_score_:.4f}; model in "
        f"{args.out / MODEL_FILE}"
    )


def infer_task(y, task: str = "auto") -> tuple[str, str]:
    """``(task, why)``: ``task`` unless it is ``"auto"``; then regression for a numeric (not
    boolean) target with more than ``REGRESSION_MIN_DISTINCT`` distinct values, else
    classification."""
    import pandas as pd

    if task != "auto":
        return task, "--task"
    y = pd.Series(y)
    distinct = y.nunique(dropna=True)
    numeric = pd.api.types.is_numeric_dtype(y) and not pd.api.types.is_bool_dtype(y)
    if numeric and distinct > REGRESSION_MIN_DISTINCT:
        return "regression", (
            f"numeric target with {distinct} distinct values; --task classification overrides"
        )
    kind = "numeric target" if numeric else "target"
    return "classification", (
        f"{kind} with {distinct} distinct values; --task regression overrides"
    )


@contextlib.contextmanager
def _cluster(args: argparse.Namespace):
    """The scheduler address of --scheduler, or of a LocalCluster of --dask-local workers
    (closed afterwards), or None. The builder connects to it (and the saved model keeps only
    the address)."""
    if args.dask_local is None:
        yield args.scheduler
        return
    from .library.execution.dask_executor import local_cluster

    with local_cluster(args.dask_local) as cluster:
        yield cluster.scheduler_address


def _cv_argument(text: str) -> int | str | None:
    """``--cv``: 'auto', 'none' or a number of folds."""
    if text.lower() in ("auto", "none"):
        return None if text.lower() == "none" else "auto"
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"--cv {text!r}: use auto, none or a number of folds >= 2") from None


def _fit_model(args: argparse.Namespace, task: str, X, y, groups, cv, client):
    from .estimator import EnsembleSelectionClassifier, EnsembleSelectionRegressor

    cls = EnsembleSelectionRegressor if task == "regression" else EnsembleSelectionClassifier
    return cls(
        library=args.library,
        metric=args.metric,
        strategy=args.strategy,
        cv=cv,
        store=args.out / LIBRARY_DIR,
        n_jobs=args.n_jobs,
        backend="local" if client is None else "dask",
        client=client,
        time_limit=args.time_limit,
        run_time_limit=args.run_time_limit,
        max_predict_ms=args.max_predict_ms,
        random_state=args.seed,
        verbose=1,
        exportable=args.exportable,
    ).fit(X, y, groups=groups)


def _predict_budget(text: str) -> float | str | None:
    """``--max-predict-ms``: milliseconds (> 0), 'auto' or 'none'."""
    if text.lower() in ("auto", "none"):
        return None if text.lower() == "none" else "auto"
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give milliseconds (> 0), 'auto' or 'none'")
    return value


def _load(model_dir: Path):
    from .estimator import load_model

    path = model_dir / MODEL_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no model here; run 'ensel fit ... --out {model_dir}'")
    return load_model(path)


def predict(args: argparse.Namespace) -> str:
    from .estimator.stream import iter_parquet, write_batches

    model = _load(args.model_dir)
    if _is_parquet(args.data):
        batches = iter_parquet(args.data)
    elif not args.data.is_file():
        raise FileNotFoundError(f"{args.data}: no such file")
    else:
        batches = iter([_read_csv(args.data)])
    refused = [0]

    def score(frame):
        out, n_refused = _score(model, frame, args)
        refused[0] += n_refused
        return out

    n = write_batches(batches, score, args.out)
    note = ""
    if args.reject is not None:
        note = f" ({refused[0]} refused: combined risk above {args.reject} or unknown)"
    return f"wrote {n} predictions to {args.out}{note}"


def _score(model, frame, args: argparse.Namespace):
    """``(predictions of frame, rows refused)``: probabilities and labels, or values, and the
    risk columns and reject option that ``args`` ask for."""
    import pandas as pd
    from sklearn.base import is_classifier

    if is_classifier(model):
        proba = model.predict_proba(frame)
        out = pd.DataFrame(proba, columns=[f"proba_{c}" for c in model.classes_])
    else:  # a regressor: one predicted value per row
        out = pd.DataFrame(index=range(len(frame)))
    if is_classifier(model):
        out["prediction"] = model.classes_[proba.argmax(axis=1)]
    else:
        out["prediction"] = model.predict(frame)
    # risk once for both options (it costs more than the prediction)
    risk = model.risk(frame) if args.with_risk or args.reject is not None else None
    n_refused = 0
    if args.reject is not None:  # the model's reject option: thresholds checked, NaN risk refused
        refuse = model.refused_rows(frame, args.reject, risk=risk)
        out["prediction"] = out["prediction"].astype(object).where(~refuse, None)
        n_refused = int(refuse.sum())
    if args.with_risk:
        out = pd.concat([out, risk.add_prefix("risk_")], axis=1)
    return out, n_refused


def report(args: argparse.Namespace) -> str:
    from .report import write_report

    store = args.model_dir / LIBRARY_DIR  # where 'ensel fit' put the library, if it is there
    library = store if (store / "store.json").is_file() else None
    write_report(_load(args.model_dir), args.html, library=library)
    return f"wrote {args.html}"


def compress(args: argparse.Namespace) -> str:
    from sklearn.base import is_classifier

    from .compress import compress as compress_model
    from .compress.export import export_format

    export_format(args.out, None)  # an unknown suffix fails before any work
    model = _load(args.model_dir)
    frame = _read_csv(args.train)
    missing = [c for c in model.columns_ if c not in frame.columns]
    if missing:
        raise ValueError(f"{args.train} lacks the model's column(s) {missing[:10]}")
    mimic = compress_model(
        model,
        frame[model.columns_],
        n_pseudo=args.n_pseudo,
        hidden=args.hidden,
        epochs=args.epochs,
        loss=args.loss,
        random_state=args.seed,
        verbose=1,
    )
    mimic.export(args.out)
    history = mimic.history_
    return (
        f"mimic of {len(model.members_)} members: {args.n_pseudo} pseudo rows, "
        f"{history.best_epoch} epochs, fidelity RMSE {history.fidelity_rmse:.4g} on held-out "
        f"pseudo rows{'' if is_classifier(model) else ' (target units)'}; wrote "
        f"{args.out} ({args.out.stat().st_size / 1024:.0f} KB)"
    )


def export(args: argparse.Namespace) -> str:
    model = _load(args.model_dir)
    rows = None if args.rows is None else _read_csv(args.rows)
    difference = model.to_onnx(args.out, rows, risk=args.risk)
    return (
        f"ensemble of {len(model.members_)} members: wrote {args.out} "
        f"({args.out.stat().st_size / 1024:.0f} KB); largest difference from predict "
        f"{difference:.2g} on the rows checked"
    )


def demo(args: argparse.Namespace) -> str:
    from . import demo as demo_module

    demo_module.main(["--spec", args.spec, "--report", args.report])
    return ""


COMMANDS = {
    "fit": fit,
    "predict": predict,
    "report": report,
    "compress": compress,
    "export": export,
    "demo": demo,
}


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """``warnings.showwarning`` for the command line: ``warning: <message>`` on one line of
    stderr, without the source path and code line of Python's format (which point into the
    installed package, not at anything the user can change)."""
    print(f"warning: {' '.join(str(message).split())}", file=sys.stderr if file is None else file)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="ensel: %(message)s")
    with warnings.catch_warnings():  # restores the caller's showwarning on the way out
        warnings.showwarning = _one_line_warning
        try:
            message = COMMANDS[args.command](args)
        except (ValueError, TypeError, OSError, KeyError, ImportError) as exc:
            print(f"ensel: error: {' '.join(str(exc).split())}", file=sys.stderr)
            return 2
    if message:
        print(message)
    return 0


if __name__ == "__main__":
    sys.exit(main())
