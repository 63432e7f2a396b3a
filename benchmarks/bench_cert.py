"""CERT forest variants on the Sandia report's ridge-mixture problems (SAND2013-2534, §3 and
App. A): pruned against unpruned trees (its Table 1), edge splits (its Table A.1) and the leaf
size (full-size trees, as the report, against ensel's default of five rows per leaf).

    python -m benchmarks.bench_cert [--quick] [--problems 5] [--trees 100]

Each problem (``benchmarks.risk_problems``: a mixture of rotated ridge distributions in
[-10, 10]^d with its exact true risk) trains on 1,000 rows (d = 2) or 4,000 (d = 5, 10) as the
report's Table 1, and tests on a grid (2-D) or line-search points; the figure is the RMSE of
the risk against the true risk, averaged over problems (the report: 20 problems), with the
number of problems where each variant beats the default.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from threadpoolctl import threadpool_limits

from benchmarks import risk_problems as rp
from benchmarks._report import machine_line, write_section
from ensel.risk import CERTForest

SECTION = "## CERT forest variants: pruning (Table 1), edge splits (Table A.1), leaf size"
REPORT = {  # the report's Table 1 and Table A.1 (RMSE, mean over 20 problems)
    "pruned (Table 1)": {2: 0.0944, 5: 0.1916, 10: 0.2436},
    "unpruned (Table 1)": {2: 0.1094, 5: 0.1434, 10: 0.1423},
    "edge splits (Table A.1)": {2: 0.2164, 5: 0.2740, 10: 0.2469},
}
VARIANTS = {
    "default (leaf >= 5, unpruned, no edge splits)": {},
    "full-size trees (leaf >= 1): the report's": {"min_samples_leaf": 1},
    "full-size, pruned (reduced-error, half the rows)": {"min_samples_leaf": 1, "prune": "error"},
    "full-size, edge splits": {"min_samples_leaf": 1, "edge_splits": True},
}
TRAIN = {2: 1000, 5: 4000, 10: 4000}


def one_problem(d: int, seed: int, trees: int, n_train: dict, n_test: int) -> list[dict]:
    with threadpool_limits(1, user_api="blas"):
        problem = rp.make_problem("ridge", d, seed)
        X, _ = problem.sample(n_train[d], random_state=[seed, 2])
        if d == 2:
            T = rp.grid_points(problem, 70)
        else:
            T = rp.line_search_points(problem, n_test, random_state=[seed, 3])
        truth = problem.true_risk(T)
    rows = []
    for name, params in VARIANTS.items():
        det = CERTForest(n_estimators=trees, bounds=problem.bounds, random_state=seed, **params)
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            risk = det.fit(X).risk(T)
        rmse = float(np.sqrt(np.mean((risk - truth) ** 2)))
        rows.append({"d": d, "problem": seed, "variant": name, "rmse": rmse,
                     "seconds": time.perf_counter() - start})  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--problems", type=int, default=None)
    parser.add_argument("--trees", type=int, default=None)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--rows", type=int, default=None, help="training rows for every d")
    args = parser.parse_args()
    problems = args.problems or (1 if args.quick else 5)
    trees = args.trees or (10 if args.quick else 100)
    n_train = {2: 300, 5: 600, 10: 600} if args.quick else TRAIN
    if args.rows:
        n_train = dict.fromkeys(n_train, args.rows)
    n_test = 500 if args.quick else 1500
    start = time.perf_counter()
    out = Parallel(n_jobs=args.n_jobs)(
        delayed(one_problem)(d, s, trees, n_train, n_test)
        for d in (2, 5, 10)
        for s in range(problems)
    )
    frame = pd.DataFrame([r for rows in out for r in rows])
    seconds = time.perf_counter() - start
    table = frame.pivot_table(index="variant", columns="d", values="rmse", sort=False)
    default = frame[frame["variant"] == next(iter(VARIANTS))].set_index(["d", "problem"])["rmse"]
    wins = {
        (v, d): int((part.set_index(["d", "problem"])["rmse"] < default.loc[part.set_index(
            ["d", "problem"]).index]).sum())
        for (v, d), part in frame.groupby(["variant", "d"])
    }  # fmt: skip
    print(table.round(4).to_string())
    command = "python -m benchmarks.bench_cert" + (" --quick" if args.quick else "")
    command += f" --problems {problems} --trees {trees}" + (
        f" --rows {args.rows}" if args.rows else ""
    )
    lines = [
        "",
        machine_line(command)
        + f" Wall time {seconds / 60:.0f} min; load average {os.getloadavg()[0]:.1f} at the end.",
        "",
        f"Ridge-mixture problems of the report (§4.1), {problems} per dimension (the report: "
        f"20), {trees} trees, training rows {n_train}; RMSE of the risk against the exact true "
        "risk, mean over problems (in brackets: problems where the variant is below the "
        "default). The report's own figures below the line.",
        "",
        "| variant | 2-D | 5-D | 10-D |",
        "|---|---|---|---|",
        *[
            f"| {v} | "
            + " | ".join(f"{table.loc[v, d]:.4f} ({wins[v, d]}/{problems})" for d in (2, 5, 10))
            + " |"
            for v in VARIANTS
        ],
        *[
            f"| report: {k} | " + " | ".join(f"{r[d]:.4f}" for d in (2, 5, 10)) + " |"
            for k, r in REPORT.items()
        ],
        "",
    ]
    write_section(SECTION, lines)


if __name__ == "__main__":
    main()
