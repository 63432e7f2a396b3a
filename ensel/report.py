"""A self-contained static HTML report of a fitted ensemble: the ensemble against the best single
member on all eight metrics, the composition by family, the hillclimb curve with and without
replacement (Figure 4.1), reliability diagrams and prediction histograms of the strongest members
before and after calibration (chapter 3), and the leaderboard. For a regressor: its metrics, and
instead of reliability diagrams, predicted against actual values and residuals against
predictions (out of fold).

Everything is computed when the report is asked for: the comparison, composition and leaderboard
from what the model keeps, the curves and diagrams from its library's hillclimb predictions (the
store the model was built on, or a Library passed in). Plots are drawn by matplotlib (``pip
install 'ensel[report]'``) as inline SVG: no network, no JavaScript library."""

from __future__ import annotations

import html
import io
import os
import re
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.base import is_classifier

from ._imports import optional
from .library import Library
from .library.planning.cost import predict_cost
from .metrics import greater_is_better, resolve_metric, score_batch
from .selection import EnsembleSelection, PredictCost, cost_front

__all__ = ["calibration_data", "cost_front_data", "hillclimb_curves", "render", "write_report"]

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b")
N_STRONGEST = 3
BINS = 10
MIN_BIN_CASES = 20
"""A reliability bin holds at least this many cases (fewer bins on small data)."""
WIDTH, HEIGHT = 5.2, 3.3  # inches of one plot (at 72 points per inch in SVG)
FRONT_FRACTIONS = (0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0)
"""Budgets of the score-vs-cost front, as fractions of the fitted ensemble's predict cost."""


# ------------------------------------------------------------------ data, computed when asked


def hillclimb_curves(model, library: Library) -> dict[str, np.ndarray]:
    """The hillclimb score after each step of plain forward selection for the model's metric
    on ``library`` (one bag, no sorted initialisation), with and without replacement: the two
    curves of Figure 4.1."""
    P = np.asarray(library.predictions)
    metric = resolve_metric(model.metric)
    curves = {}
    for label, replacement in (("with replacement", True), ("without replacement", False)):
        es = EnsembleSelection(
            metric=metric,
            n_iter=model.n_iter if replacement else min(model.n_iter, P.shape[0]),
            replacement=replacement,
            sorted_init=False,
            n_bags=1,
        ).fit(P, library.y)
        curves[label] = np.asarray(es.trajectory_, dtype=float)
    return curves


def cost_front_data(model, library: Library) -> list[dict]:
    """The front of hillclimb score against estimated predict cost (ms per 1,000 rows, from the
    builder's timings; :mod:`ensel.library.planning.cost`): one single-bag selection for the model's
    metric under each budget of ``FRONT_FRACTIONS`` times the fitted ensemble's cost, then the
    fitted ensemble itself (``budget`` None). Empty where the builder recorded no timings."""
    siblings = 1 if model.refit == "full" else library.siblings
    try:
        needs, item_cost, _ = predict_cost(library.members, library.store.records, siblings)
    except ValueError:
        return []
    cost = PredictCost(needs, item_cost)
    weights = model.leaderboard_["weight"].to_numpy()
    full = cost.of(weights > 0)
    if not full > 0:
        return []
    P = np.asarray(library.predictions)
    metric = resolve_metric(model.metric)
    options = {
        "n_iter": model.n_iter,
        "replacement": model.replacement,
        "sorted_init": model.sorted_init,
        "max_init": model.max_init,
        "random_state": model.random_state,
    }
    rows = cost_front(
        P, library.y, cost, [f * full for f in FRONT_FRACTIONS], metric=metric, n_bags=1,
        **options,
    )  # fmt: skip
    score = float(metric.batch(library.y, np.tensordot(weights, P, axes=1)[None])[0])
    rows.append(
        {"budget": None, "cost": full, "score": score, "n_members": int((weights > 0).sum())}
    )
    return rows


def calibration_data(library: Library, n: int = N_STRONGEST) -> list[dict]:
    """For a binary library, the ``n`` uncalibrated members with the lowest hillclimb RMS:
    ``{"id", "before": predictions, "after": {calibration: predictions}}`` where ``after`` holds
    the calibrated variants of the same run and stage. Empty for more than two classes."""
    if library.classes.size != 2:
        return []
    P = library.predictions
    members = library.members
    uncalibrated = np.flatnonzero(members["calibration"].to_numpy() == "none")
    rms = score_batch("rms", library.y, np.asarray(P[uncalibrated]))
    out = []
    for i in uncalibrated[np.argsort(rms, kind="stable")[:n]]:
        same = (members["run"] == members["run"][i]) & _same_stage(members, i)
        after = {
            c: np.asarray(P[j], dtype=float)
            for j, c in zip(np.flatnonzero(same), members["calibration"][same], strict=True)
            if c != "none"
        }
        out.append(
            {"id": members["id"][i], "before": np.asarray(P[i], dtype=float), "after": after}
        )
    return out


def _same_stage(members: pd.DataFrame, i: int) -> pd.Series:
    stage = members["stage"][i]
    return members["stage"].isna() if pd.isna(stage) else members["stage"] == stage


def _library_of(model, library) -> Library | None:
    """The model's library: the one given (a Library or a store path), else the store the
    model was built on if it still exists; None when there is none to read."""
    if library is None:
        path = model.library_path_
        if path is None or not (Path(path) / "store.json").is_file():
            return None
        library = path
    if not isinstance(library, Library):
        library = Library.open(library)
    ids = model.leaderboard_["id"].tolist()
    if library.members["id"].tolist() != ids:
        raise ValueError(
            f"library={library.store.path}: its {library.n_members} members are not the "
            f"{len(ids)} this model was selected from; pass the library the model was fitted on"
        )
    return library


def _reliability(pred: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean prediction, fraction of positives and case count per bin, the bins holding equal
    numbers of cases (quantile bins on the sorted predictions): up to ``BINS`` bins of at least
    ``MIN_BIN_CASES`` each. Equal-width bins (§3.3) leave a few cases in the middle bins when
    most predictions sit near 0 or 1, and their fractions then jump between 0 and 1 on noise."""
    order = np.argsort(pred, kind="stable")
    n_bins = int(np.clip(pred.size // MIN_BIN_CASES, 1, BINS)) if pred.size else 0
    groups = np.array_split(order, n_bins) if n_bins else []
    mean_pred = np.array([pred[g].mean() for g in groups])
    positives = np.array([y[g].mean() for g in groups])
    counts = np.array([g.size for g in groups])
    return mean_pred, positives, counts


# ------------------------------------------------------------------ plots (matplotlib to SVG)


def _figure(width: float = WIDTH, height: float = HEIGHT):
    figure = optional("matplotlib.figure", "the HTML report's plots")
    fig = figure.Figure(figsize=(width, height), layout="constrained")
    ax = fig.add_subplot()
    ax.grid(True, color="#e5e5e5", linewidth=0.8)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return fig, ax


def _svg(fig, title: str) -> str:
    """The figure as an inline ``<svg class="plot">`` with text kept as text."""
    matplotlib = optional("matplotlib", "the HTML report's plots")
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "ensel"}):
        fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    text = buffer.getvalue()
    text = text[text.index("<svg") :]
    text = re.sub(r"\s*<metadata>.*?</metadata>", "", text, count=1, flags=re.DOTALL)
    label = html.escape(title, quote=True)
    return re.sub(r"^<svg ", f'<svg class="plot" role="img" aria-label="{label}" ', text, count=1)


LOWER_NOTE = "metric (italic: lower is better; its bar is the best member's score / the ensemble's)"
"""The comparison chart's axis label: which way its bars point for loss-like metrics."""


def _comparison_plot(model, names: list[str]) -> str:
    ratios = np.array([_ratio(model, m) for m in names])
    fig, ax = _figure()
    better = ratios >= 1.0
    for mask, colour, label in (
        (better, PALETTE[2], "ensemble better"),
        (~better, PALETTE[1], "ensemble worse"),
    ):
        if mask.any():
            ax.bar(np.flatnonzero(mask), ratios[mask], color=colour, width=0.6, label=label)
    ax.axhline(1.0, color="#555", linestyle="--", linewidth=1.2, label="best member (= 1)")
    ax.set_xticks(np.arange(len(names)), names)
    for tick, name in zip(ax.get_xticklabels(), names, strict=True):
        if not greater_is_better(name):
            tick.set_fontstyle("italic")
    low, high = min(ratios.min(), 1.0), max(ratios.max(), 1.0)
    pad = 0.1 * (high - low) + 0.005
    ax.set_ylim(low - pad, high + pad)
    ax.set_xlabel(LOWER_NOTE)
    ax.set_ylabel("ensemble's advantage (above 1: better)")
    ax.legend(
        loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=3, fontsize="small", frameon=False
    )
    return _svg(fig, "ensemble score over the best member's, per metric (above 1: better)")


def _composition_plot(weights: pd.Series) -> str:
    fig, ax = _figure(height=max(1.6, 0.45 * len(weights) + 1.0))
    ax.barh(list(weights.index)[::-1], weights.to_numpy()[::-1], color=PALETTE[0], height=0.6)
    ax.set_xlabel("total weight in the ensemble")
    ax.set_ylabel("family")
    ax.set_xlim(0, max(1e-9, float(weights.max())) * 1.1)
    return _svg(fig, "total weight of each model family")


def _curves_plot(curves: dict[str, np.ndarray], metric: str) -> str:
    fig, ax = _figure(width=6.0)
    for k, (label, ys) in enumerate(curves.items()):
        ax.plot(np.arange(1, ys.size + 1), ys, color=PALETTE[k], linewidth=1.8, label=label)
    ax.set_xlabel("models added")
    ax.set_ylabel(f"hillclimb {metric}")
    ax.legend(fontsize="small")
    return _svg(fig, f"hillclimb {metric} as models are added")


def _front_plot(front: list[dict], metric: str) -> str:
    fig, ax = _figure(width=6.0)
    budgeted = [r for r in front if r["budget"] is not None]
    chosen = [r for r in front if r["budget"] is None]
    ax.plot(
        [r["cost"] for r in budgeted], [r["score"] for r in budgeted], marker="o", markersize=4,
        color=PALETTE[0], linewidth=1.5, label="best under a budget (one bag)",
    )  # fmt: skip
    ax.plot(
        [r["cost"] for r in chosen], [r["score"] for r in chosen], marker="*", markersize=11,
        linestyle="none", color=PALETTE[1], label="the fitted ensemble",
    )  # fmt: skip
    ax.set_xlim(left=0)
    ax.set_xlabel("estimated predict cost (CPU ms per 1,000 rows)")
    ax.set_ylabel(f"hillclimb {metric}")
    ax.legend(fontsize="small")
    return _svg(fig, f"hillclimb {metric} against estimated predict cost")


def _reliability_plot(variants: dict[str, np.ndarray], y: np.ndarray) -> str:
    fig, ax = _figure(width=4.4, height=3.6)
    ax.plot([0, 1], [0, 1], color="#777", linestyle="--", linewidth=1.0, label="ideal")
    for k, (label, pred) in enumerate(variants.items()):
        xs, ys, counts = _reliability(pred, y)
        ax.plot(xs, ys, marker="o", markersize=3, color=PALETTE[k], linewidth=1.5, label=label)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel(f"mean prediction in bin (bins of {int(counts.min())}+ cases each)")
    ax.set_ylabel("fraction positive")
    ax.legend(fontsize="small", loc="upper left")
    return _svg(fig, "reliability diagram, equal-count bins")


def _histogram_plot(variants: dict[str, np.ndarray]) -> str:
    fig, ax = _figure(width=4.4, height=3.6)
    edges = np.linspace(0.0, 1.0, BINS + 1)
    for k, (label, pred) in enumerate(variants.items()):
        counts, _ = np.histogram(pred, bins=edges)
        share = counts / max(pred.size, 1)
        ax.stairs(share, edges, color=PALETTE[k], linewidth=1.6, label=label)
    ax.set_xlim(0, 1)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("predicted probability of the positive class")
    ax.set_ylabel("fraction of cases")
    ax.legend(fontsize="small")
    return _svg(fig, "histogram of predictions")


def _predicted_vs_actual_plot(pred: np.ndarray, y: np.ndarray) -> str:
    fig, ax = _figure(width=4.4, height=3.8)
    ax.scatter(y, pred, s=6, alpha=0.5, color=PALETTE[0], linewidths=0, label="hillclimb rows")
    low, high = float(min(y.min(), pred.min())), float(max(y.max(), pred.max()))
    ax.plot([low, high], [low, high], color="#555", linestyle="--", linewidth=1.0, label="ideal")
    ax.set_xlabel("actual value")
    ax.set_ylabel("ensemble prediction (out of fold)")
    ax.legend(fontsize="small", loc="upper left")
    return _svg(fig, "predicted against actual values")


def _residual_plot(pred: np.ndarray, y: np.ndarray) -> str:
    fig, ax = _figure(width=4.4, height=3.8)
    residual = y - pred
    ax.scatter(pred, residual, s=6, alpha=0.5, color=PALETTE[3], linewidths=0, label="residual")
    ax.axhline(0.0, color="#555", linestyle="--", linewidth=1.0)
    order = np.argsort(pred)
    if pred.size >= 20:  # the residuals' running mean shows a bias that depends on the level
        window = max(5, pred.size // 20)
        smooth = np.convolve(residual[order], np.ones(window) / window, mode="valid")
        centre = pred[order][window // 2 : window // 2 + smooth.size]
        ax.plot(centre, smooth, color=PALETTE[1], linewidth=1.6, label=f"mean of {window}")
    ax.set_xlabel("ensemble prediction (out of fold)")
    ax.set_ylabel("actual - predicted")
    ax.legend(fontsize="small", loc="upper left")
    return _svg(fig, "residuals against predictions")


def _residuals(model) -> str:
    """A regressor's out-of-fold ensemble predictions against the hillclimb targets (kept by the
    model, so no library is needed)."""
    pred = np.asarray(model.hillclimb_predictions_, dtype=float)
    y = np.asarray(model.hillclimb_targets_, dtype=float)
    rmse = float(np.sqrt(np.mean((y - pred) ** 2)))
    bias = float(np.mean(y - pred))
    note = (
        f"<p>{y.size} hillclimb rows; RMSE {rmse:.4g}, mean residual {bias:.4g} "
        "(each row predicted by members that did not see it).</p>"
    )
    return note + (
        "<div class='row'>"
        + _predicted_vs_actual_plot(pred, y)
        + _residual_plot(pred, y)
        + "</div>"
    )


# ------------------------------------------------------------------ the page


def render(model, library: Library | str | os.PathLike | None = None) -> str:
    """The report of a fitted EnsembleSelectionClassifier or EnsembleSelectionRegressor, as one
    HTML string.

    ``library``: the library the model was selected from (a Library or its store path); by
    default the store the model was built on, if it still exists. Without one the hillclimb
    curves and reliability diagrams are left out, with a note that says how to get them."""
    lib = _library_of(model, library)
    board = model.leaderboard()
    metric = resolve_metric(model.metric).name
    sections = [
        _section("Ensemble vs the best single member", _comparison(model)),
        _section("Composition by family", _composition(model)),
        _section("Hillclimb curve (Figure 4.1)", _curves(model, lib, metric)),
        *_front(model, lib, metric),
        (
            _section("Calibration of the strongest members", _calibration(lib))
            if is_classifier(model)
            else _section("Predicted against actual, and residuals", _residuals(model))
        ),
        _section(
            f"Leaderboard ({len(board)} members, {len(model.members_)} with weight)",
            _leaderboard(board),
        ),
    ]
    title = f"ensel report: {model.strategy} for {metric}"
    if is_classifier(model):
        target = "classes: " + ", ".join(str(c) for c in model.classes_)
    else:
        target = "a numeric target"
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><p class='meta'>{date.today()}; library of "
        f"{len(board)} members; {html.escape(target)}; scores are on the "
        "out-of-fold hillclimb predictions.</p>"
        + "".join(sections)
        + f"<script>{CHECK_SCRIPT}</script></body></html>"
    )


def write_report(model, path: str | os.PathLike, library=None) -> None:
    """Write the report of ``model`` to ``path`` (``library`` as in :func:`render`)."""
    page = render(model, library)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(page)


def _section(title: str, body: str) -> str:
    return f"<section><h2>{html.escape(title)}</h2>{body}</section>"


def _comparison(model) -> str:
    rows = model.comparison_
    names = list(rows)
    values = []
    for name in names:
        ours, best = rows[name]["ensemble"], rows[name]["best member"]
        better = ours > best if greater_is_better(name) else ours < best
        mark = "tie" if np.isclose(ours, best) else ("better" if better else "worse")
        way = "higher" if greater_is_better(name) else "lower"
        values.append(
            f"<tr><td>{name}</td><td>{way}</td><td>{ours:.4f}</td><td>{best:.4f}</td>"
            f"<td>{mark}</td></tr>"
        )
    table = (
        "<table><tr><th>metric</th><th>better when</th><th>ensemble</th><th>best member</th>"
        "<th></th></tr>" + "".join(values) + "</table>"
    )
    return f"<div class='row'>{table}{_comparison_plot(model, names)}</div>"


def _ratio(model, metric: str) -> float:
    """The ensemble's score over the best member's, oriented so that above 1 is better."""
    ours, best = model.comparison_[metric]["ensemble"], model.comparison_[metric]["best member"]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = ours / best if greater_is_better(metric) else best / ours
    return float(ratio) if np.isfinite(ratio) else 0.0


def _composition(model) -> str:
    weights = model.members_.groupby("family")["weight"].sum().sort_values(ascending=False)
    table = "".join(
        f"<tr><td>{html.escape(str(f))}</td><td>{w:.3f}</td></tr>" for f, w in weights.items()
    )
    header = "<tr><th>family</th><th>weight</th></tr>"
    return f"<div class='row'><table>{header}{table}</table>{_composition_plot(weights)}</div>"


NO_LIBRARY = (
    "<p class='note'>{what} need the library the model was selected from, and its store is "
    "gone (a model fitted with <code>store=None</code> builds in a temporary directory). Fit "
    "with <code>store=PATH</code>, or pass <code>library=</code> to <code>write_report</code>."
    "</p>"
)


def _curves(model, lib: Library | None, metric: str) -> str:
    if lib is None:
        return NO_LIBRARY.format(what="Hillclimb curves")
    return _curves_plot(hillclimb_curves(model, lib), metric)


def _front(model, lib: Library | None, metric: str) -> list[str]:
    """The section of score against predict cost, where the library's builder timed its runs
    (none otherwise)."""
    front = [] if lib is None else cost_front_data(model, lib)
    if not front:
        return []
    lines = []
    for r in front:
        label = "the fitted ensemble" if r["budget"] is None else f"{r['budget']:.3g}"
        lines.append(
            f"<tr><td>{label}</td><td>{r['cost']:.3g}</td><td>{r['score']:.4f}</td>"
            f"<td>{int(r['n_members'])}</td></tr>"
        )
    table = (
        "<table><tr><th>budget (ms / 1k rows)</th><th>cost</th><th>hillclimb "
        f"{html.escape(metric)}</th><th>members</th></tr>{''.join(lines)}</table>"
    )
    note = (
        "<p class='note'>What each millisecond buys: selection under a predict-time budget "
        "(<code>max_predict_ms</code>). Costs are counted from each fitted run's structure (a "
        "view once, a boosting run by its largest stage) times the siblings that predict; see "
        "docs/estimator.md.</p>"
    )
    body = f"<div class='row'>{table}{_front_plot(front, metric)}</div>{note}"
    return [_section("Hillclimb score vs predict cost", body)]


def _calibration(lib: Library | None) -> str:
    if lib is None:
        return NO_LIBRARY.format(what="Reliability diagrams")
    strongest = calibration_data(lib)
    if not strongest:
        return "<p>Reliability diagrams are drawn for binary problems.</p>"
    y = np.asarray(lib.y, dtype=float)
    blocks = []
    for member in strongest:
        variants = {"uncalibrated": member["before"], **member["after"]}
        blocks.append(
            f"<h3>{html.escape(member['id'])}</h3><div class='row'>"
            + _reliability_plot(variants, y)
            + _histogram_plot(variants)
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
.meta, .note { color: #555; }
.row { display: flex; gap: 2em; align-items: flex-start; flex-wrap: wrap; }
table { border-collapse: collapse; font-size: 0.85em; }
td, th { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
.board td:nth-child(1), .board td:nth-child(2), .board td:nth-child(3) { text-align: left; }
svg.plot { font-family: sans-serif; }
"""

CHECK_SCRIPT = """
const plots = Array.from(document.querySelectorAll('svg.plot'));
document.body.dataset.plots = plots.length;
document.body.dataset.rendered = plots.filter(s => {
  const b = s.getBoundingClientRect();
  return b.width > 50 && b.height > 50 && s.querySelectorAll('path').length > 4 &&
         s.querySelectorAll('text').length > 2; }).length;
"""
