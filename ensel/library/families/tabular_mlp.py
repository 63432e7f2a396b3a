"""A modern tabular MLP (torch): robust-scaled numeric columns with missing-value indicators,
learned embeddings for categorical columns, SiLU layers with dropout, AdamW, and a cosine
learning-rate schedule with warm restarts; staged by epoch.

Not in the paper's grid; the recipe follows today's strong tabular nets (RealMLP, Holzmüller et
al. 2024: robust scaling with smooth clipping, embeddings, AdamW with a decaying schedule). The
schedule restarts (SGDR, Loshchilov & Hutter 2017) after 1, 2, 4, ... cycles of ``cycle`` epochs,
so it does not depend on how long the run is: the snapshot after ``s`` epochs is exactly the net
of a run trained for ``s`` epochs, and snapshots at the end of cycles (``cycle`` x 1, 3, 7, 15,
... epochs) are the converged, diverse members of a snapshot ensemble (Huang et al. 2017).
Training is on one thread (the builder parallelises across runs); prediction is plain numpy, so
a fitted run needs no torch. torch is imported when a run trains (``pip install torch``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import expit, softmax

from ._base import (
    ConstantRun,
    Family,
    SnapshotRun,
    check_stages,
    encode_labels,
    full_proba,
    register,
)
from ._traits import NATIVE_TABLE, FamilyTraits, GrowSpace
from ._work import constant_or, mlp_cost, mlp_relative_cost, nets_work

CLIP = 3.0
"""Smooth clipping ``x / sqrt(1 + (x / CLIP)^2)`` after robust scaling (RealMLP's)."""


@dataclass
class _Preprocess:
    """Numeric columns: median-imputed (with a 0/1 indicator for each column that had missing
    values in training), centred on the median, scaled by the interquartile range (the sd when
    that is 0), smoothly clipped. Categorical columns: code + 1, with 0 for unseen or missing."""

    numeric: np.ndarray  # column indices
    categorical: np.ndarray
    median: np.ndarray
    scale: np.ndarray
    indicate: np.ndarray  # numeric positions that get a missing indicator
    cardinality: np.ndarray

    @classmethod
    def fit(cls, X: np.ndarray, categorical: dict[int, int]) -> _Preprocess:
        cat = np.array(sorted(categorical), dtype=int)
        num = np.setdiff1d(np.arange(X.shape[1]), cat)
        Xn = X[:, num]
        with np.errstate(all="ignore"):
            median = np.nan_to_num(np.nanmedian(Xn, axis=0)) if num.size else np.zeros(0)
            q75, q25 = np.nanpercentile(Xn, [75, 25], axis=0) if num.size else (np.zeros(0),) * 2
            sd = np.nan_to_num(np.nanstd(Xn, axis=0)) if num.size else np.zeros(0)
        scale = np.nan_to_num(q75 - q25) / 1.349
        scale = np.where(scale > 1e-12, scale, np.where(sd > 1e-12, sd, 1.0))
        indicate = np.flatnonzero(np.isnan(Xn).any(axis=0)) if num.size else np.zeros(0, int)
        cardinality = np.array([categorical[j] for j in cat], dtype=int)
        return cls(num, cat, median, scale, indicate, cardinality)

    def impute(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Numeric columns median-filled, their missing-value mask, and int64 category indices
        ``(n, n_categorical)`` (0: missing or unseen). The ``tabm`` family reads these too."""
        X = np.asarray(X, dtype=np.float64)
        Xn = X[:, self.numeric]
        missing = np.isnan(Xn)
        codes = X[:, self.categorical]
        valid = np.isfinite(codes) & (codes >= 0) & (codes < self.cardinality)
        index = np.where(valid, np.nan_to_num(codes) + 1, 0).astype(np.int64)
        return np.where(missing, self.median, Xn), missing, index

    def transform(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Float32 numeric inputs ``(n, d)`` and int64 category indices ``(n, n_categorical)``."""
        filled, missing, index = self.impute(X)
        z = (filled - self.median) / self.scale
        z = z / np.sqrt(1.0 + (z / CLIP) ** 2)
        numeric = np.hstack([z, missing[:, self.indicate].astype(np.float64)])
        return numeric.astype(np.float32), index

    @property
    def n_numeric(self) -> int:
        return self.numeric.size + self.indicate.size


@dataclass
class _NetWeights:
    """One snapshot in numpy: embedding tables, then (weight ``(out, in)``, bias) per layer."""

    embeddings: list[np.ndarray]
    layers: list[tuple[np.ndarray, np.ndarray]]


@dataclass
class _TabularRun(SnapshotRun):
    prep: _Preprocess
    snapshots: list[_NetWeights]
    classes: np.ndarray  # the labels the net's outputs stand for (a fold may lack one)
    n_classes: int

    def predict(self, X: np.ndarray, stages=None) -> dict[str, np.ndarray]:
        """Members at the snapshots of index ``stages`` (all by default)."""
        numeric, index = self.prep.transform(X)
        snapshots = self.snapshots if stages is None else [self.snapshots[i] for i in stages]
        out = np.empty((len(snapshots), numeric.shape[0], self.n_classes))
        for i, snap in enumerate(snapshots):
            h = np.hstack(
                [numeric] + [table[index[:, j]] for j, table in enumerate(snap.embeddings)]
            ).astype(np.float32)
            for k, (w, b) in enumerate(snap.layers):
                h = h @ w.T + b
                if k < len(snap.layers) - 1:
                    h = h * expit(h)  # SiLU
            p = softmax(h.astype(np.float64), axis=1)
            out[i] = full_proba(p, self.classes, self.n_classes)
        bad = ~np.isfinite(out).all(axis=2)
        out[bad] = 1.0 / self.n_classes
        return {"none": out}

    def snapshot_weights(self) -> list[float]:
        """Multiply-adds of one row's forward pass through each snapshot: the sizes of its
        layers' weights and biases, and a lookup per categorical column counted by its
        embedding's width."""
        return [
            float(
                sum(np.size(w) + np.size(b) for w, b in snap.layers)
                + sum(np.shape(t)[-1] for t in snap.embeddings if np.ndim(t) == 2)
            )
            for snap in self.snapshots
        ]


def _embedding_dim(cardinality: int, limit: int) -> int:
    """fastai's rule of thumb ``1.6 n^0.56``, at most ``limit``."""
    return int(max(1, min(limit, round(1.6 * (cardinality + 1) ** 0.56))))


def _build(torch, prep: _Preprocess, params: dict, n_classes: int):
    nn = torch.nn
    embeddings = nn.ModuleList(
        nn.Embedding(int(c) + 1, _embedding_dim(int(c), int(params["embedding"])))
        for c in prep.cardinality
    )
    width = prep.n_numeric + sum(e.embedding_dim for e in embeddings)
    body: list = []
    for _ in range(int(params["layers"])):
        body += [nn.Linear(width, int(params["hidden"])), nn.SiLU(), nn.Dropout(params["dropout"])]
        width = int(params["hidden"])
    body.append(nn.Linear(width, n_classes))
    return embeddings, nn.Sequential(*body)


def _snapshot(embeddings, body) -> _NetWeights:
    tables = [e.weight.detach().numpy().copy() for e in embeddings]
    layers = [
        (m.weight.detach().numpy().copy(), m.bias.detach().numpy().copy())
        for m in body
        if hasattr(m, "weight")
    ]
    return _NetWeights(tables, layers)


def fit_tabular_mlp(X, y, *, n_classes, params, stages, random_state, categorical=None):
    """Train one net with AdamW and a warm-restart cosine schedule (stepped every batch, its
    first cycle ``cycle`` epochs, each next one twice as long, down to 1% of ``lr``); snapshot
    it after each epoch in ``stages``. Cross-entropy with optional ``label_smoothing``. One
    thread; the seed fixes the initial weights, the batches and dropout (torch's global
    generator is forked, not touched)."""
    epochs = check_stages(stages, "tabular_mlp epochs")
    classes, codes = encode_labels(y)
    if len(classes) == 1:
        return ConstantRun(int(classes[0]), len(epochs), n_classes)
    import torch

    X = np.asarray(X, dtype=np.float64)
    prep = _Preprocess.fit(X, dict(categorical or {}))
    numeric, index = prep.transform(X)
    numeric_t, index_t = torch.from_numpy(numeric), torch.from_numpy(index)
    target = torch.from_numpy(np.asarray(codes, dtype=np.int64))
    n = numeric.shape[0]
    batch = int(min(params["batch_size"], n))
    steps_per_epoch = int(np.ceil(n / batch))
    threads = torch.get_num_threads()
    snaps: dict[int, _NetWeights] = {}
    try:
        torch.set_num_threads(1)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(random_state))
            embeddings, body = _build(torch, prep, params, len(classes))
            model = torch.nn.ModuleDict({"embeddings": embeddings, "body": body})
            optimizer = torch.optim.AdamW(
                model.parameters(), lr=float(params["lr"]), weight_decay=params["weight_decay"]
            )
            schedule = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(
                optimizer,
                T_0=int(params["cycle"]) * steps_per_epoch,
                T_mult=2,
                eta_min=0.01 * float(params["lr"]),
            )
            loss_fn = torch.nn.CrossEntropyLoss(label_smoothing=float(params["label_smoothing"]))
            order_rng = torch.Generator().manual_seed(int(random_state))
            model.train()
            for epoch in range(1, max(epochs) + 1):
                order = torch.randperm(n, generator=order_rng)
                for start in range(0, n, batch):
                    rows = order[start : start + batch]
                    parts = [numeric_t[rows]] + [
                        e(index_t[rows, j]) for j, e in enumerate(embeddings)
                    ]
                    logits = body(torch.cat(parts, dim=1))
                    loss = loss_fn(logits, target[rows])
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    optimizer.step()
                    schedule.step()
                if epoch in epochs:
                    snaps[epoch] = _snapshot(embeddings, body)
    finally:
        torch.set_num_threads(threads)
    return _TabularRun(prep, [snaps[e] for e in epochs], classes, n_classes)


def validate_tabular_mlp(params: dict[str, Any], stages: tuple[int, ...] | None) -> None:
    """Reject non-positive sizes or rates, dropout outside [0, 1), missing epochs."""
    for key in ("hidden", "layers", "batch_size", "embedding", "cycle"):
        if int(params[key]) < 1:
            raise ValueError(f"tabular_mlp {key} must be at least 1, got {params[key]!r}")
    if not params["lr"] > 0 or params["weight_decay"] < 0:
        raise ValueError(f"tabular_mlp needs lr > 0 and weight_decay >= 0, got {params!r}")
    if not 0 <= params["dropout"] < 1 or not 0 <= params["label_smoothing"] < 1:
        raise ValueError(f"tabular_mlp dropout and label_smoothing must be in [0, 1): {params}")
    check_stages(stages, "tabular_mlp epochs")


def _space(trial, p):
    return {
        "hidden": trial.suggest_categorical(p + "hidden", [64, 128, 256, 512]),
        "layers": trial.suggest_int(p + "layers", 1, 3),
        "dropout": trial.suggest_float(p + "dropout", 0.0, 0.5),
        "lr": trial.suggest_float(p + "lr", 1e-3, 1e-2, log=True),
        "weight_decay": trial.suggest_float(p + "weight_decay", 1e-4, 0.3, log=True),
        "label_smoothing": trial.suggest_float(p + "label_smoothing", 0.0, 0.1),
    }


register(
    Family(
        name="tabular_mlp",
        traits=FamilyTraits(
            rank=8,
            relative_cost=mlp_relative_cost,
            grow=GrowSpace(_space, (2, 6, 14, 30), default=4),
            cost=mlp_cost(constant_or(nets_work), memory_factor=4.0),
        ),
        fit=fit_tabular_mlp,
        params={
            "hidden": 256,
            "layers": 2,
            "dropout": 0.1,
            "lr": 0.003,
            "weight_decay": 0.01,
            "batch_size": 256,
            "embedding": 16,
            "cycle": 2,
            "label_smoothing": 0.0,
        },
        stages="epochs",
        requires=("torch",),
        test_params={"hidden": 32, "batch_size": 32},
        test_stages=(2, 6),
        validate=validate_tabular_mlp,
        **NATIVE_TABLE,
    )
)
