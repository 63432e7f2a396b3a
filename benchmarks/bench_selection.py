"""Selection speed: seconds per greedy step for all eight metrics on synthetic libraries, against
the floor (one numpy pass over the float64 matrix) and AutoGluon's EnsembleSelection.

    python -m benchmarks.bench_selection [--quick] [--no-peer] [--results FILE]

AutoGluon runs in the peers' environment (``benchmarks._peers.autogluon_python``, installed on
first use; never a dependency of ensel). Each timed row (``kind`` "step": one library size and
metric; "bagged": a full bagged run) is appended to ``--results`` (``RESULTS`` by default; a
quick run goes to a temporary file) with the run's provenance, and the table is printed; the
"selection-engine" block of docs/results.md is made from the rows by ``benchmarks.report``.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from benchmarks._peers import autogluon_python
from benchmarks._predict_timing import median_seconds
from benchmarks._record import ROOT, append_rows, provenance, results_path, suite_parser
from ensel._candidates import candidate_scorer
from ensel.metrics import METRICS, resolve_metric
from ensel.selection import EnsembleSelection
from ensel.synthetic import make_library

PEER_METRICS = ("roc", "acc", "mxe", "fsc")  # where AutoGluon's metric is ours
RESULTS = ROOT / "benchmarks" / "results" / "selection.jsonl"


def floor_seconds(P: np.ndarray) -> float:
    """One numpy pass over the float64 matrix: the least any step can cost."""
    return median_seconds(lambda: P.sum(axis=1), 7)


def seconds_per_step(metric: str, P: np.ndarray, y: np.ndarray, steps: int) -> float:
    """Median seconds of one greedy step: every member scored as a candidate against the
    ensemble of a 10-step hillclimb, as ``EnsembleSelection.fit`` does it (float32 matrix, the
    fast scorer). Setup paid once per fit (the members' own scores, the float32 copy) is left
    out; ``steps`` timed calls."""
    order = EnsembleSelection(metric, n_iter=10, n_bags=1, sorted_init=False).fit(P, y).order_
    work = P.astype(np.float32)
    S = np.zeros(P.shape[1:])
    for j in order:
        S = S + work[j]  # the running sum, as fit keeps it
    scorer = candidate_scorer(resolve_metric(metric), work, y, exact=False)
    scorer(S, len(order))  # compile (cached on disk after the first time)
    return median_seconds(lambda: scorer(S, len(order)), steps)


def picks(metric: str, P: np.ndarray, y: np.ndarray, steps: int) -> list[int]:
    es = EnsembleSelection(metric, n_iter=steps, n_bags=1, sorted_init=False).fit(P, y)
    return es.order_.tolist()


def run_peer(python: Path, P: np.ndarray, y: np.ndarray, steps: int) -> dict[str, dict]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "library.npz"
        np.savez(path, P=P, y=y)
        script = ROOT / "benchmarks" / "_autogluon_peer.py"
        cmd = [str(python), str(script), str(path), str(steps), *PEER_METRICS]
        env = {**os.environ, "OMP_NUM_THREADS": "2"}
        out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env).stdout
    return {r["metric"]: r for r in map(json.loads, out.splitlines())}


def common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, z in zip(a, b, strict=False):
        if x != z:
            break
        n += 1
    return n


def bagged_run_seconds(metric: str, P: np.ndarray, y: np.ndarray) -> float:
    es = EnsembleSelection(metric, n_iter=100, n_bags=20, bag_fraction=0.5, random_state=0)
    return median_seconds(lambda: es.fit(P, y), 1)


def record(rows: list[dict], bagged: dict[str, float], size: tuple[int, int], path: Path) -> None:
    """Append the step rows and the bagged runs to ``path``, each with one run's provenance
    (the same ``utc`` marks the rows of one run)."""
    run = provenance()
    runs = [
        {"kind": "bagged", "M": size[0], "N": size[1], "metric": m, "seconds": s, **run}
        for m, s in bagged.items()
    ]
    append_rows(path, [{"kind": "step", **row, **run} for row in rows] + runs)


def main(argv=None) -> None:
    parser = suite_parser(__doc__, RESULTS)
    parser.add_argument("--no-peer", action="store_true", help="skip AutoGluon")
    parser.add_argument("--sizes", help="only these libraries, e.g. 2000x5000")
    parser.add_argument("--steps", type=int, help="greedy steps timed per metric")
    args = parser.parse_args(argv)
    results = results_path(args, RESULTS, "selection")

    sizes = (
        [(200, 1000), (2000, 5000)]
        if args.quick
        else [(200, 1000), (200, 5000), (2000, 1000), (2000, 5000)]
    )
    if args.sizes:
        sizes = [tuple(int(v) for v in s.split("x")) for s in args.sizes.split(",")]
    steps = args.steps or (20 if args.quick else 100)
    python = None if args.no_peer else autogluon_python()

    rows = []
    print(HEADER, flush=True)
    for M, N in sizes:
        P, y = make_library(n_members=M, n_samples=N, random_state=0)
        floor = floor_seconds(P)
        peer_steps = 3 if M * N >= 10_000_000 else 10
        peer = run_peer(python, P, y, peer_steps) if python else {}
        for metric in METRICS:
            ours = seconds_per_step(metric, P, y, steps)
            row = {"M": M, "N": N, "metric": metric, "ours": ours, "floor": floor}
            if metric in peer:
                ag = peer[metric]
                mine = picks(metric, P, y, peer_steps)
                row |= {
                    "peer": ag["cpu_per_step"],
                    "agree": f"{common_prefix(mine, ag['indices'])}/{len(ag['indices'])}",
                }
            rows.append(row)
            print(format_row(row), flush=True)

    M, N = sizes[-1]
    P, y = make_library(n_members=M, n_samples=N, random_state=0)
    bagged_metrics = ("rms", "roc") if args.quick else METRICS
    bagged = {m: bagged_run_seconds(m, P, y) for m in bagged_metrics}
    for m, s in bagged.items():
        print(f"bagged 20 x 100 steps, M={M} N={N}, {m}: {s:.1f} s", flush=True)
    record(rows, bagged, (M, N), results)
    print("\n" + "\n".join(report_lines(rows, bagged, (M, N))))


HEADER = (
    "| M | N | metric | ours s/step | floor s | ours / floor | AutoGluon s/step | AutoGluon / ours "
    "| same picks |\n|---|---|---|---|---|---|---|---|---|"
)


def format_row(r: dict) -> str:
    peer = (
        f"{r['peer']:.4f} | {r['peer'] / r['ours']:.0f}x | {r['agree']}"
        if "peer" in r
        else "- | - | -"
    )
    return (
        f"| {r['M']} | {r['N']} | {r['metric']} | {r['ours']:.4f} | {r['floor']:.4f} "
        f"| {r['ours'] / r['floor']:.2f} | {peer} |"
    )


def report_lines(rows: list[dict], bagged: dict[str, float], size: tuple[int, int]) -> list[str]:
    """The page's table: per metric, a step at the largest size ``size`` against the floor and
    AutoGluon, and the full bagged run (every size's row is printed as it is measured)."""
    ratios = [r["ours"] / r["floor"] for r in rows]
    largest = [r for r in rows if (r["M"], r["N"]) == size]
    lines = [
        f"Seconds per greedy step on a synthetic library of {size[0]:,} members x {size[1]:,} "
        "rows (`ensel.synthetic.make_library`; median of one step's candidate scoring, setup "
        "left out; ours: float32 on both cores). Floor: one numpy pass over the float64 matrix; "
        f"over the {len({(r['M'], r['N']) for r in rows})} sizes measured a step costs "
        f"{min(ratios):.2f}-{max(ratios):.1f} floors. AutoGluon: `autogluon.core` "
        "EnsembleSelection, CPU seconds per step; *same picks*: leading steps where both chose "
        "the same member (it rounds scores to 6 decimals and breaks ties at random).",
        "",
        "| metric | ours s/step | ours / floor | AutoGluon s/step | AutoGluon / ours | same picks "
        "| 20 bags x 100 steps, s |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in largest:
        peer = (
            f"{r['peer']:.4f} | {r['peer'] / r['ours']:.0f}x | {r['agree']}"
            if "peer" in r
            else "- | - | -"
        )
        seconds = f"{bagged[r['metric']]:.1f}" if r["metric"] in bagged else "-"
        lines.append(
            f"| {r['metric']} | {r['ours']:.4f} | {r['ours'] / r['floor']:.2f} | {peer} "
            f"| {seconds} |"
        )
    return lines


if __name__ == "__main__":
    main()
