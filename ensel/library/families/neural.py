"""Neural nets (App. 4.B): one hidden layer trained by backprop with momentum, staged by epoch,
as a classifier (sigmoid or softmax outputs) and as a regressor (a linear output on the
standardised target); both train through one SGD core, ``sgd_backprop``.

"We train neural nets with gradient descent backprop and vary the number of hidden units
{1, 2, 4, 8, 32, 128} and the momentum {0, 0.2, 0.5, 0.9}. We halt training the nets at many
different epochs": one training run snapshots its weights after every epoch listed in ``stages``,
and each snapshot is a library member.

Training is hand-written backprop in numpy (see ``sgd_backprop``): for nets this small it is faster
per step than torch, and it needs no torch at all. A test checks it against
``torch.optim.SGD`` on the same initial weights and batches.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import expit, softmax

from ._base import Family, SnapshotRun, check_stages, next_ends_past, register
from ._regression import TargetScale, column
from ._traits import FamilyTraits
from ._work import mlp_cost, mlp_relative_cost, nets_work

ACTIVATIONS = ("sigmoid", "tanh")
LOSSES = ("squared", "cross_entropy")
"""``squared`` (default) is the classic backprop net's error, the sum over output units of the
squared difference from the one-hot target (the Brier score); the nets of the era minimised it,
and it gives softer, less overconfident probabilities than cross-entropy on small data.
``cross_entropy`` is the log loss of the same outputs."""


def validate_mlp(params: dict[str, Any], stages: tuple[int, ...] | None) -> None:
    """Reject an unknown activation or loss (the classifier's), a non-positive size, a bad
    learning rate or momentum, or missing epochs."""
    if params.get("activation", "tanh") not in ACTIVATIONS:
        raise ValueError(f"mlp activation={params['activation']!r} is not one of {ACTIVATIONS}")
    if params.get("loss", "squared") not in LOSSES:
        raise ValueError(f"mlp loss={params['loss']!r} is not one of {LOSSES}")
    for key in ("hidden", "batch_size"):
        if int(params[key]) < 1:
            raise ValueError(f"mlp {key} must be at least 1, got {params[key]!r}")
    if not params["lr"] > 0 or not 0 <= params["momentum"] < 1:
        raise ValueError(f"mlp needs lr > 0 and 0 <= momentum < 1, got {params!r}")
    check_stages(stages, "mlp epochs")


@dataclass
class _MLPRun(SnapshotRun):
    """Weight snapshots ``(W1, b1, W2, b2)``, one per stage, in torch's ``(out, in)`` layout
    (float64).
    Two classes use one sigmoid output unit (the positive class); more use a softmax."""

    snapshots: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]
    activation: str
    n_classes: int

    def predict(self, X: np.ndarray, stages=None) -> dict[str, np.ndarray]:
        """Members at the stages (snapshots) of index ``stages`` (all by default)."""
        X = np.asarray(X, dtype=np.float64)
        wanted = range(len(self.snapshots)) if stages is None else stages
        snapshots = [self.snapshots[j] for j in wanted]
        out = np.empty((len(snapshots), X.shape[0], self.n_classes))
        for i, (w1, b1, w2, b2) in enumerate(snapshots):
            pre = X @ w1.T.astype(np.float64) + b1
            hidden = expit(pre) if self.activation == "sigmoid" else np.tanh(pre)
            z = hidden @ w2.T.astype(np.float64) + b2
            if self.n_classes == 2:
                p = expit(z[:, 0])
                out[i, :, 0], out[i, :, 1] = 1.0 - p, p
            else:
                out[i] = softmax(z, axis=1)
        # a diverged net (non-finite weights) says nothing: uniform rather than NaN
        bad = ~np.isfinite(out).all(axis=2)
        out[bad] = 1.0 / self.n_classes
        return {"none": out}


def _init_weights(rng: np.random.Generator, n_in: int, n_out: int) -> np.ndarray:
    """A ``(n_in + 1, n_out)`` layer, the last row its bias, drawn as PyTorch's default Linear
    layer draws it: weights, then biases, each U(-1/sqrt(n_in), 1/sqrt(n_in))."""
    bound = 1.0 / np.sqrt(n_in) if n_in else 0.0
    layer = np.empty((n_in + 1, n_out))
    layer[:n_in] = rng.uniform(-bound, bound, size=(n_out, n_in)).T
    layer[n_in] = rng.uniform(-bound, bound, size=n_out)
    return layer


def sgd_backprop(
    X: np.ndarray,
    target: np.ndarray,
    *,
    output: str,
    loss: str,
    activation: str,
    hidden: int,
    batch: int,
    lr: float,
    momentum: float,
    epochs: tuple[int, ...],
    random_state,
    time_cap: float | None = None,
) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Train one net with mini-batch SGD and momentum; its weights after each epoch in
    ``epochs``, as ``(W1, b1, W2, b2)`` in torch's ``(out, in)`` layout. Under ``time_cap``
    seconds no epoch starts that would, at the pace so far, end past it, and the weights of
    the last epoch reached are kept too (``snapshots`` gives them to the epochs not reached).

    ``target`` is ``(n, n_out)``: 0/1 for ``output="sigmoid"`` (one unit, the positive class),
    one-hot for ``"softmax"``, real values for ``"linear"`` (the regressor, squared error).
    ``loss`` "squared" or "cross_entropy" (the classifier's; a linear output takes squared).

    Plain numpy in float64, with the update of ``torch.optim.SGD(momentum=m)`` (no dampening, no
    Nesterov): ``v = m * v + grad; w -= lr * v``, the gradient that of the batch's mean loss. For
    nets this small numpy's per-call cost is a fraction of torch's. float64, not float32: it
    matches a float64 torch run to rounding, while float32 runs drift apart from any other
    float32 implementation (summation order), the more at high momentum, and float32 would save
    under half the time of a step. One
    ``np.random.default_rng(random_state)`` draws the initial weights (PyTorch's default Linear
    init, see ``_init_weights``: layer 1, then layer 2) and then each epoch's order of the rows
    (``rng.permutation``), so a seed fixes the run; the global numpy generator is not used.
    """
    n, d = X.shape
    Xa = np.empty((n, d + 1))  # float64, and a column of ones carries the first layer's bias
    Xa[:, :d] = X
    Xa[:, d] = 1.0
    rng = np.random.default_rng(random_state)
    net = _Net(rng, d, hidden, target.shape[1], batch)
    rule = _Rule(output, loss == "squared", activation == "sigmoid")
    wanted = set(epochs)
    snaps = {}
    started = time.monotonic()
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # a diverging net: NaN
        for epoch in range(1, max(epochs) + 1):
            order = rng.permutation(n)
            for start in range(0, n, batch):  # each batch gathered alone: no shuffled copy
                rows = order[start : start + batch]
                net.gradient(Xa[rows], target[rows], rule)
                net.step(lr, momentum)
            stop = next_ends_past(time_cap, started, epoch)
            if epoch in wanted or stop:
                snaps[epoch] = _torch_layout(net.theta, d, hidden, target.shape[1])
            if stop:
                break
    return snaps


@dataclass(frozen=True)
class _Rule:
    """What a net computes: its ``output`` function (sigmoid, softmax or linear), whether its
    loss is ``squared`` (else cross-entropy), whether its hidden units are ``sigmoid`` (else
    tanh)."""

    output: str
    squared: bool
    sigmoid: bool


class _Net:
    """One hidden layer's net in training: every parameter (and gradient, and velocity) in one
    flat vector, the layers views of it, so the momentum step is three vector operations; and
    the work buffers of one batch, allocated once."""

    def __init__(self, rng: np.random.Generator, d: int, hidden: int, n_out: int, batch: int):
        self.theta = np.concatenate(
            [_init_weights(rng, d, hidden).ravel(), _init_weights(rng, hidden, n_out).ravel()]
        )
        self.grad = np.zeros_like(self.theta)
        self.velocity, self.delta = np.zeros_like(self.theta), np.empty_like(self.theta)
        cut = (d + 1) * hidden

        def layers(flat):
            w1 = flat[:cut].reshape(d + 1, hidden)  # (in + bias, out)
            w2 = flat[cut:].reshape(hidden + 1, n_out)
            return w1, w2[:hidden], w2[hidden]

        self.w1, self.w2, self.b2 = layers(self.theta)
        self.g1, self.g2, self.gb2 = layers(self.grad)
        self.buffers = [np.empty((batch, hidden)) for _ in range(3)]
        self.buffers += [np.empty((batch, n_out)), np.empty((batch, n_out))]

    def gradient(self, Xb: np.ndarray, T: np.ndarray, rule: _Rule) -> None:
        """The gradient of the batch's mean loss into ``grad`` (``Xb`` with its column of
        ones, ``T`` its targets)."""
        b = Xb.shape[0]
        H, DH, tmp, Z, P = (buf[:b] for buf in self.buffers)
        np.matmul(Xb, self.w1, out=H)
        _activate(H, rule.sigmoid)
        np.matmul(H, self.w2, out=Z)
        Z += self.b2
        _output_delta(Z, P, T, rule)
        np.matmul(H.T, Z, out=self.g2)
        np.sum(Z, axis=0, out=self.gb2)
        np.matmul(Z, self.w2.T, out=DH)
        np.multiply(H, H, out=tmp)
        if rule.sigmoid:  # h (1 - h)
            np.subtract(H, tmp, out=tmp)
        else:  # 1 - h^2
            np.subtract(1.0, tmp, out=tmp)
        DH *= tmp
        np.matmul(Xb.T, DH, out=self.g1)

    def step(self, lr: float, momentum: float) -> None:
        """torch.optim.SGD: ``v = m v + g`` (``v = g`` on the first step); ``w -= lr v``."""
        self.velocity *= momentum
        self.velocity += self.grad
        np.multiply(self.velocity, lr, out=self.delta)
        self.theta -= self.delta


def _activate(H: np.ndarray, sigmoid: bool) -> None:
    """The hidden units' activation, in place: the logistic function, or tanh as
    ``2 expit(2x) - 1`` (numpy's float64 tanh is twice as slow)."""
    if sigmoid:
        expit(H, out=H)
    else:
        H *= 2.0
        expit(H, out=H)
        H *= 2.0
        H -= 1.0


def _output_delta(Z: np.ndarray, P: np.ndarray, T: np.ndarray, rule: _Rule) -> None:
    """``Z`` (the outputs before the output function) <- d(mean loss)/dZ, in place; ``P`` is
    scratch for the output probabilities."""
    b = Z.shape[0]
    if rule.output == "linear":  # squared error: 2 (z - t)
        Z -= T
        Z *= 2.0 / b
        return
    if rule.output == "sigmoid":
        expit(Z, out=P)
    else:
        Z -= Z.max(axis=1, keepdims=True)
        np.exp(Z, out=P)
        P /= P.sum(axis=1, keepdims=True)
    np.subtract(P, T, out=Z)  # cross-entropy: p - t
    if rule.squared and rule.output == "sigmoid":  # d(p - t)^2/dz = 2 (p - t) p (1 - p)
        Z *= P
        np.subtract(1.0, P, out=P)
        Z *= P
        Z *= 2.0 / b
    elif rule.squared:  # softmax Jacobian: p * (g - <g, p>), g = 2 (p - t)
        Z -= (Z * P).sum(axis=1, keepdims=True)
        Z *= P
        Z *= 2.0 / b
    else:
        Z *= 1.0 / b


def snapshots(snaps: dict, epochs: tuple[int, ...]) -> list:
    """The snapshot of each epoch in ``epochs``: its own, or, past the last epoch a time cap
    let the net reach, that epoch's."""
    last = max(snaps)
    return [snaps[e] if e in snaps else snaps[last] for e in epochs]


def _sgd_options(params: dict) -> dict:
    """The options of ``sgd_backprop`` both nets read from their parameters."""
    return {
        "hidden": int(params["hidden"]),
        "batch": int(params["batch_size"]),
        "lr": float(params["lr"]),
        "momentum": float(params["momentum"]),
    }


def fit_mlp(X, y, *, n_classes, params, stages, random_state, time_cap=None):
    """Train one classification net (``sgd_backprop``: a sigmoid output unit for two classes, a
    softmax otherwise) and snapshot it after each epoch in ``stages`` (under ``time_cap``: the
    epochs it reached)."""
    epochs = check_stages(stages, "mlp epochs")
    binary = n_classes == 2
    y = np.asarray(y, dtype=np.int64)
    target = y[:, None].astype(np.float64) if binary else np.eye(n_classes)[y]
    snaps = sgd_backprop(
        X,
        target,
        output="sigmoid" if binary else "softmax",
        loss=params["loss"],
        activation=params["activation"],
        epochs=epochs,
        random_state=random_state,
        time_cap=time_cap,
        **_sgd_options(params),
    )
    return _MLPRun(snapshots(snaps, epochs), params["activation"], n_classes)


def _torch_layout(theta, d, hidden, n_out):
    """``(W1, b1, W2, b2)`` copies in torch's ``(out, in)`` layout, from the flat vector."""
    cut = (d + 1) * hidden
    w1 = theta[:cut].reshape(d + 1, hidden)
    w2 = theta[cut:].reshape(hidden + 1, n_out)
    return (w1[:d].T.copy(), w1[d].copy(), w2[:hidden].T.copy(), w2[hidden].copy())


MLP = FamilyTraits(
    rank=11, relative_cost=mlp_relative_cost, cost=mlp_cost(nets_work, memory_factor=3.0)
)


register(
    Family(
        name="mlp",
        traits=MLP,
        fit=fit_mlp,
        stops_in_time=True,
        params={
            "hidden": 8,
            "momentum": 0.5,
            "lr": 0.5,
            "batch_size": 32,
            "activation": "sigmoid",
            "loss": "squared",
        },
        view="standardized",
        stages="epochs",
        test_params={"hidden": 4, "momentum": 0.5, "lr": 0.5, "batch_size": 32},
        test_stages=(1, 3),
        validate=validate_mlp,
    )
)


# --------------------------------------------------------------------------- regressor


@dataclass
class _NetRegressionRun(SnapshotRun):
    """Weight snapshots ``(W1, b1, w2, b2)`` of a one-hidden-layer tanh net with a linear output,
    ``(in, out)`` layout, one per stage, and the target scale it learned on."""

    snapshots: list[tuple[np.ndarray, np.ndarray, np.ndarray, float]]
    scale: TargetScale

    def predict(self, X: np.ndarray) -> dict[str, np.ndarray]:
        X = np.asarray(X, dtype=np.float64)
        out = np.empty((len(self.snapshots), X.shape[0]))
        with np.errstate(over="ignore", invalid="ignore"):
            for i, (w1, b1, w2, b2) in enumerate(self.snapshots):
                out[i] = self.scale.inverse(np.tanh(X @ w1 + b1) @ w2 + b2)
        # a diverged net says nothing: the training mean rather than NaN
        out[~np.isfinite(out)] = self.scale.mean
        return {"none": column(out)}


def fit_mlp_regression(X, y, *, n_classes, params, stages, random_state, time_cap=None):
    """One hidden tanh layer, linear output, squared error on the standardised target, trained
    by ``sgd_backprop`` (the classifier's core); snapshots after each epoch in ``stages``
    (under ``time_cap``: the epochs it reached)."""
    epochs = check_stages(stages, "mlp epochs")
    scale = TargetScale.fit(np.asarray(y, dtype=np.float64))
    target = scale.forward(np.asarray(y, dtype=np.float64))[:, None]
    snaps = sgd_backprop(
        X,
        target,
        output="linear",
        loss="squared",
        activation="tanh",
        epochs=epochs,
        random_state=random_state,
        time_cap=time_cap,
        **_sgd_options(params),
    )
    flat = {
        e: (w1.T.copy(), b1, w2[0].copy(), float(b2[0])) for e, (w1, b1, w2, b2) in snaps.items()
    }
    return _NetRegressionRun(snapshots(flat, epochs), scale)


register(
    Family(
        name="mlp",
        traits=MLP,
        fit=fit_mlp_regression,
        stops_in_time=True,
        params={"hidden": 16, "momentum": 0.9, "lr": 0.01, "batch_size": 32},
        stages="epochs",
        test_params={"hidden": 4},
        test_stages=(1, 3),
        validate=validate_mlp,
    ),
    task="regression",
)
