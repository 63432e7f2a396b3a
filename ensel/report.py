"""A self-contained static HTML report of a fitted ensemble: the leaderboard, the composition by
family, the hillclimb curve with and without replacement (Figure 4.1), reliability diagrams and
prediction histograms of the strongest members before and after calibration (chapter 3), and the
ensemble against the best single member on all eight metrics. Plots are inline SVG; no network,
no JavaScript library."""

from __future__ import annotations

import html
import os
from datetime import date

import numpy as np
import pandas as pd

from .metrics import METRICS, greater_is_better

__all__ = ["collect", "render", "write_report"]

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b")
N_STRONGEST = 3
BINS = 10


# ------------------------------------------------------------------ data, gathered at fit time


FRONT_FRACTIONS = (0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0)
"""Budgets of the score-vs-cost front, as fractions of the chosen ensemble's predict cost."""


def collect(lib, P: np.ndarray, weights: np.ndarray, metric, options: dict, cost=None) -> dict:
    """What the report needs from a library, computed once when the model is fitted (the
    report can then be written from the saved model alone). ``cost``: a
    :class:`~ensel.selection.PredictCost` of the members, for the front of hillclimb score
    against predict cost (one single-bag selection per budget)."""
    from .selection import EnsembleSelection

    curves = {}
    for label, replacement in (("with replacement", True), ("without replacement", False)):
        es = EnsembleSelection(
            metric=metric,
            n_iter=min(options.get("n_iter", 100), P.shape[0] if not replacement else 10**9),
            replacement=replacement,
            sorted_init=False,
            n_bags=1,
        ).fit(P, lib.y)
        curves[label] = np.asarray(es.trajectory_, dtype=float).tolist()
    members = lib.members
    strongest = []
    if lib.classes.size == 2:
        from .metrics import score_batch

        uncalibrated = np.flatnonzero(members["calibration"].to_numpy() == "none")
        rms = score_batch("rms", lib.y, P[uncalibrated])
        for i in uncalibrated[np.argsort(rms)[:N_STRONGEST]]:
            same = (members["run"] == members["run"][i]) & _same_stage(members, i)
            after = {
                c: P[j].astype(float).tolist()
                for j, c in zip(np.flatnonzero(same), members["calibration"][same], strict=True)
                if c != "none"
            }
            strongest.append(
                {"id": members["id"][i], "before": P[i].astype(float).tolist(), "after": after}
            )
    front = [] if cost is None else _cost_front(P, lib.y, cost, weights, metric, options)
    return {
        "metric": metric.name,
        "cost_front": front,
        "curves": curves,
        "strongest": strongest,
        "y": lib.y.tolist(),
        "n_members": int(P.shape[0]),
    }


def _cost_front(P, y, cost, weights, metric, options: dict) -> list[dict]:
    """Hillclimb score against predict cost (ms per 1,000 rows): single-bag selections under
    budgets from 2% to 100% of the chosen ensemble's cost, and the chosen ensemble itself."""
    from .selection import cost_front

    full = cost.of(weights > 0)
    if not full > 0:
        return []
    keys = ("n_iter", "replacement", "sorted_init", "max_init", "prune_fraction", "random_state")
    chosen = {k: options[k] for k in keys if k in options}
    budgets = [f * full for f in FRONT_FRACTIONS]
    rows = cost_front(P, y, cost, budgets, metric=metric, n_bags=1, **chosen)
    score = float(metric.batch(y, np.tensordot(weights, P, axes=1)[None])[0])
    rows.append(
        {"budget": None, "cost": full, "score": score, "n_members": int((weights > 0).sum())}
    )
    return [{k: (None if v is None else float(v)) for k, v in r.items()} for r in rows]


def _same_stage(members: pd.DataFrame, i: int) -> pd.Series:
    stage = members["stage"][i]
    return members["stage"].isna() if pd.isna(stage) else members["stage"] == stage


# ------------------------------------------------------------------ SVG


def _svg_plot(
    series, *, xlim, ylim, xlabel, ylabel, kind="line", width=420, height=280, markers=False
):
    """An SVG chart: ``series`` is a list of (label, xs, ys, colour); kind line, bar or step;
    ``markers`` draws a dot at every point."""
    left, right, top, bottom = 52, 12, 12, 40
    w, h = width - left - right, height - top - bottom
    x0, x1 = xlim
    y0, y1 = ylim
    if y1 <= y0:
        y1 = y0 + 1.0

    def sx(x):
        return left + (x - x0) / (x1 - x0 or 1.0) * w

    def sy(y):
        return top + h - (y - y0) / (y1 - y0) * h

    parts = [
        f'<svg class="plot" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">',
        f'<rect x="{left}" y="{top}" width="{w}" height="{h}" fill="#fafafa" stroke="#999"/>',
    ]
    for t in np.linspace(y0, y1, 5):
        parts.append(
            f'<text x="{left - 4}" y="{sy(t) + 4:.1f}" font-size="10" text-anchor="end">'
            f"{t:.3g}</text>"
        )
    for t in np.linspace(x0, x1, 5):
        parts.append(
            f'<text x="{sx(t):.1f}" y="{top + h + 14}" font-size="10" text-anchor="middle">'
            f"{t:.3g}</text>"
        )
    parts.append(
        f'<text x="{left + w / 2}" y="{height - 4}" font-size="11" text-anchor="middle">'
        f"{html.escape(xlabel)}</text>"
    )
    parts.append(
        f'<text x="12" y="{top + h / 2}" font-size="11" text-anchor="middle" '
        f'transform="rotate(-90 12 {top + h / 2})">{html.escape(ylabel)}</text>'
    )
    for k, (label, xs, ys, colour) in enumerate(series):
        if kind == "bar" and k == 0:
            bar = w / max(len(xs), 1) * 0.8
            for x, y in zip(xs, ys, strict=True):
                parts.append(
                    f'<rect x="{sx(x) - bar / 2:.1f}" y="{sy(y):.1f}" width="{bar:.1f}" '
                    f'height="{max(sy(y0) - sy(y), 0):.1f}" fill="{colour}"/>'
                )
        else:
            points = " ".join(
                f"{sx(x):.1f},{sy(y):.1f}" for x, y in zip(xs, ys, strict=True) if np.isfinite(y)
            )
            dash = ' stroke-dasharray="4 3"' if colour == "#777" else ""
            parts.append(
                f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="1.8"'
                f"{dash}/>"
            )
            if markers:
                parts.extend(
                    f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{colour}"/>'
                    for x, y in zip(xs, ys, strict=True)
                    if np.isfinite(y)
                )
        parts.append(
            f'<text x="{left + 8}" y="{top + 14 + 13 * k}" font-size="11" fill="{colour}">'
            f"{html.escape(label)}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _reliability(pred: np.ndarray, y: np.ndarray) -> tuple[list, list]:
    """Mean prediction and fraction of positives in ten equal-width bins (§3.3)."""
    bins = np.minimum((pred * BINS).astype(int), BINS - 1)
    xs, ys = [], []
    for b in range(BINS):
        inside = bins == b
        if inside.any():
            xs.append(float(pred[inside].mean()))
            ys.append(float(y[inside].mean()))
    return xs, ys


def _histogram(pred: np.ndarray) -> tuple[list, list]:
    counts, _ = np.histogram(pred, bins=BINS, range=(0.0, 1.0))
    centres = (np.arange(BINS) + 0.5) / BINS
    return centres.tolist(), (counts / max(pred.size, 1)).tolist()


# ------------------------------------------------------------------ the page


def render(model) -> str:
    """The report of a fitted EnsembleSelectionClassifier, as one HTML string."""
    data = model.report_data_
    board = model.leaderboard()
    sections = [
        _section("Ensemble vs the best single member", _comparison(model)),
        _section("Composition by family", _composition(model)),
        _section("Hillclimb curve (Figure 4.1)", _curves(data)),
        *(
            [_section("Hillclimb score vs predict cost", _front(data))]
            if data.get("cost_front")
            else []
        ),
        _section("Calibration of the strongest members", _calibration(data)),
        _section(
            f"Leaderboard ({len(board)} members, {len(model.members_)} with weight)",
            _leaderboard(board),
        ),
    ]
    title = f"ensel report: {model.strategy} for {data['metric']}"
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><p class='meta'>{date.today()}; library of "
        f"{data['n_members']} members; classes {html.escape(str(list(model.classes_)))}; "
        "scores are on the out-of-fold hillclimb predictions.</p>"
        + "".join(sections)
        + f"<script>{CHECK_SCRIPT}</script></body></html>"
    )


def write_report(model, path: str | os.PathLike) -> None:
    """Write the report of ``model`` to ``path``."""
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(render(model))


def _section(title: str, body: str) -> str:
    return f"<section><h2>{html.escape(title)}</h2>{body}</section>"


def _comparison(model) -> str:
    rows = model.comparison_
    values = []
    for name in METRICS:
        ours, best = rows[name]["ensemble"], rows[name]["best member"]
        better = ours > best if greater_is_better(name) else ours < best
        mark = "better" if better else ("tie" if np.isclose(ours, best) else "worse")
        values.append(
            f"<tr><td>{name}</td><td>{ours:.4f}</td><td>{best:.4f}</td><td>{mark}</td></tr>"
        )
    ratios = [_ratio(model, m) for m in METRICS]
    series = [
        ("ensemble / best member", list(range(8)), ratios, PALETTE[0]),
        ("best member = 1", [-0.5, 7.5], [1.0, 1.0], "#777"),
    ]
    low, high = min([*ratios, 1.0]), max([*ratios, 1.0])
    chart = _svg_plot(
        series,
        xlim=(-0.5, 7.5),
        ylim=(low - 0.02 * (high - low + 0.01), high + 0.02 * (high - low + 0.01)),
        xlabel=" ".join(METRICS),
        ylabel="score ratio, higher is better",
        kind="bar",
        width=460,
    )
    table = (
        "<table><tr><th>metric</th><th>ensemble</th><th>best member</th><th></th></tr>"
        + "".join(values)
        + "</table>"
    )
    return f"<div class='row'>{table}{chart}</div>"


def _ratio(model, metric: str) -> float:
    """The ensemble's score over the best member's, oriented so that above 1 is better."""
    ours, best = model.comparison_[metric]["ensemble"], model.comparison_[metric]["best member"]
    ratio = ours / best if greater_is_better(metric) else best / ours
    return float(ratio) if np.isfinite(ratio) else 0.0


def _composition(model) -> str:
    weights = model.members_.groupby("family")["weight"].sum().sort_values(ascending=False)
    series = [("weight", list(range(len(weights))), weights.tolist(), PALETTE[2])]
    chart = _svg_plot(
        series,
        xlim=(-0.5, len(weights) - 0.5),
        ylim=(0.0, float(weights.max())),
        xlabel=", ".join(weights.index),
        ylabel="total weight",
        kind="bar",
        width=520,
    )
    table = "".join(
        f"<tr><td>{html.escape(f)}</td><td>{w:.3f}</td></tr>" for f, w in weights.items()
    )
    header = "<tr><th>family</th><th>weight</th></tr>"
    return f"<div class='row'><table>{header}{table}</table>{chart}</div>"


def _curves(data: dict) -> str:
    series, values = [], []
    for k, (label, ys) in enumerate(data["curves"].items()):
        series.append((label, list(range(1, len(ys) + 1)), ys, PALETTE[k]))
        values.extend(y for y in ys if np.isfinite(y))
    longest = max(len(s[1]) for s in series)
    chart = _svg_plot(
        series,
        xlim=(1, max(longest, 2)),
        ylim=(min(values), max(values)),
        xlabel="models added",
        ylabel=f"hillclimb {data['metric']}",
        width=560,
    )
    return chart


def _front(data: dict) -> str:
    """The score each predict-time budget buys: selections under budgets (one bag each) and
    the chosen ensemble, with a table of the points."""
    front = data["cost_front"]
    budgeted = [r for r in front if r["budget"] is not None]
    chosen = [r for r in front if r["budget"] is None]
    series = [
        ("best under a budget (one bag)", [r["cost"] for r in budgeted],
         [r["score"] for r in budgeted], PALETTE[0]),
        ("the fitted ensemble", [r["cost"] for r in chosen], [r["score"] for r in chosen],
         PALETTE[1]),
    ]  # fmt: skip
    costs = [r["cost"] for r in front]
    scores = [r["score"] for r in front]
    chart = _svg_plot(
        series,
        xlim=(0.0, max(costs) * 1.05),
        ylim=(min(scores), max(scores)),
        xlabel="estimated predict cost, ms per 1,000 rows",
        ylabel=f"hillclimb {data['metric']}",
        width=560,
        markers=True,
    )
    rows = "".join(
        f"<tr><td>{_budget_label(r['budget'])}</td><td>{r['cost']:.3g}</td>"
        f"<td>{r['score']:.4f}</td><td>{int(r['n_members'])}</td></tr>"
        for r in front
    )
    table = (
        "<table><tr><th>budget (ms/1k rows)</th><th>cost</th><th>hillclimb "
        f"{html.escape(data['metric'])}</th><th>members</th></tr>{rows}</table>"
    )
    note = (
        "<p>Costs are the builder's CPU timings of each run (a view once, a boosting run by "
        "its largest stage), times the siblings that predict; see docs/estimator.md.</p>"
    )
    return chart + table + note


def _budget_label(budget) -> str:
    return "the fitted ensemble" if budget is None else f"{budget:.3g}"


def _calibration(data: dict) -> str:
    if not data["strongest"]:
        return "<p>Reliability diagrams are drawn for binary problems.</p>"
    y = np.asarray(data["y"])
    blocks = []
    for member in data["strongest"]:
        variants = {"uncalibrated": member["before"], **member["after"]}
        rel = [("ideal", [0, 1], [0, 1], "#777")]
        hist = []
        for k, (label, pred) in enumerate(variants.items()):
            pred = np.asarray(pred)
            xs, ys = _reliability(pred, y)
            rel.append((label, xs, ys, PALETTE[k]))
            hist.append((label, *_histogram(pred), PALETTE[k]))
        top = max(max(h[2]) for h in hist)
        blocks.append(
            f"<h3>{html.escape(member['id'])}</h3><div class='row'>"
            + _svg_plot(
                rel, xlim=(0, 1), ylim=(0, 1), xlabel="mean prediction", ylabel="fraction positive"
            )
            + _svg_plot(
                hist, xlim=(0, 1), ylim=(0, top), xlabel="prediction", ylabel="fraction of cases"
            )
            + "</div>"
        )
    return "".join(blocks)


def _leaderboard(board: pd.DataFrame) -> str:
    shown = board.assign(params=board["params"].map(_short_params))
    return shown.to_html(
        index=False, float_format=lambda v: f"{v:.4g}", classes="board", escape=True
    )


def _short_params(params) -> str:
    return ", ".join(f"{k}={v}" for k, v in dict(params).items())


CSS = """
body { font-family: sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 2em; } h3 { font-size: 1em; }
.meta { color: #555; } .row { display: flex; gap: 2em; align-items: flex-start; flex-wrap: wrap; }
table { border-collapse: collapse; font-size: 0.85em; }
td, th { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
.board td:nth-child(1), .board td:nth-child(2), .board td:nth-child(3) { text-align: left; }
"""

CHECK_SCRIPT = """
document.body.dataset.plots = document.querySelectorAll('svg.plot').length;
document.body.dataset.rendered = Array.from(document.querySelectorAll('svg.plot')).filter(
  s => { const b = s.getBBox(); return b.width > 50 && b.height > 50 &&
         s.querySelectorAll('polyline, rect').length > 1; }).length;
"""
