"""Model compression (dissertation §4.4; Bucila, Caruana & Niculescu-Mizil 2006): label MUNGE
pseudo-data with a large model's predicted probabilities (or, for a regressor, its predicted
values) and train one small neural net (the mimic) on those soft targets, so that the net, not
the ensemble, is what ships."""

from __future__ import annotations

import copy
import itertools
import math
import os
import pickle
from contextlib import contextmanager
from dataclasses import dataclass, field
from numbers import Integral, Real

import numpy as np
import pandas as pd

from .._imports import optional
from .._progress import progress_bar
from .encoding import Encoding
from .munge import munge

__all__ = ["MimicClassifier", "MimicRegressor", "compress", "fit_mimic", "label", "label_values"]

LOSSES = ("squared", "cross_entropy")
ACTIVATIONS = ("tanh", "relu", "sigmoid")
PREDICT_BATCH = 65_536


def _torch():
    return optional("torch", "training or running a mimic net")


@dataclass
class History:
    """Per-epoch mean training and held-out loss, the best epoch and the held-out fidelity
    (RMSE between the mimic's and the model's probabilities on held-out pseudo rows)."""

    train_loss: list[float] = field(default_factory=list)
    val_loss: list[float] = field(default_factory=list)
    best_epoch: int = 0
    fidelity_rmse: float = math.nan
    seconds: dict[str, float] = field(default_factory=dict)


class _MimicNet:
    """What the classifier and the regressor mimic share: the encoding, the torch net, the
    training history, export, save and load."""

    def __init__(self, encoding: Encoding, module, history: History, n_threads: int = 1) -> None:
        self.n_threads = n_threads
        self.encoding_ = encoding
        self.module_ = module
        self.history_ = history
        self.n_features_in_ = len(encoding.columns)
        if not encoding.from_array:
            self.feature_names_in_ = np.asarray(encoding.columns, dtype=object)

    def _outputs(self, X) -> np.ndarray:
        """The net's raw outputs ``(n, n_out)`` (float32 arithmetic) for raw rows ``X``."""
        torch = _torch()
        features = self.encoding_.transform(X)
        out = None
        self.module_.eval()
        with torch_threads(self.n_threads), torch.inference_mode():
            for start in range(0, features.shape[0], PREDICT_BATCH):
                batch = torch.from_numpy(features[start : start + PREDICT_BATCH])
                z = self._head(self.module_(batch)).numpy()
                if out is None:
                    out = np.empty((features.shape[0], z.shape[1]), dtype=np.float32)
                out[start : start + z.shape[0]] = z
        return out.astype(np.float64)

    def _head(self, logits):
        return logits

    def export(self, path: str | os.PathLike, format: str | None = None) -> None:
        """Write the net with its encoding built in: ``format="onnx"`` (the default, and for a
        ``.onnx`` suffix) or ``"torchscript"`` (default for ``.pt``/``.ts``). See
        docs/compress.md for the inputs each format takes."""
        from .export import EXPORTERS, export_format

        EXPORTERS[export_format(path, format)](self, path)

    def save(self, path: str | os.PathLike) -> None:
        """Pickle the mimic (torch must be installed to load it). Ship ``export``'s ONNX file
        where ensel and torch are absent."""
        with open(path, "wb") as fh:
            pickle.dump(self, fh, protocol=pickle.HIGHEST_PROTOCOL)

    @classmethod
    def load(cls, path: str | os.PathLike):
        """Read a mimic written by :meth:`save` (this unpickles: load only files you trust)."""
        with open(path, "rb") as fh:
            model = pickle.load(fh)
        if not isinstance(model, cls):
            raise TypeError(f"{path} holds a {type(model).__name__}, not a {cls.__name__}")
        return model

    @property
    def layers(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """The net's affine layers as float32 ``(weight (out, in), bias (out,))`` arrays."""
        linear = [m for m in self.module_ if hasattr(m, "weight")]
        return [(m.weight.detach().numpy(), m.bias.detach().numpy()) for m in linear]

    @property
    def activation(self) -> str:
        """The hidden units' activation (one of ``ACTIVATIONS``)."""
        names = {"Tanh": "tanh", "ReLU": "relu", "Sigmoid": "sigmoid"}
        return next(names[type(m).__name__] for m in self.module_ if type(m).__name__ in names)


class MimicRegressor(_MimicNet):
    """A small MLP that mimics a regressor: ``predict`` on raw rows (encoding built in), in the
    target's units; ``export`` to ONNX or TorchScript. Made by :func:`compress` from a model
    with ``predict`` (an :class:`~ensel.EnsembleSelectionRegressor`, say).

    The net learns the model's predictions standardised (``target_mean_``, ``target_scale_``)
    with a linear output unit; ``history_.fidelity_rmse`` is in the target's units.
    Attributes: ``encoding_``, ``module_``, ``history_``, ``target_mean_``, ``target_scale_``,
    ``n_features_in_``, ``feature_names_in_`` (DataFrames)."""

    regression = True
    """Whether the net predicts a numeric target (the exporters add the target's scale)."""

    def __init__(
        self,
        encoding: Encoding,
        module,
        history: History,
        target_mean: float,
        target_scale: float,
        n_threads: int = 1,
    ) -> None:
        super().__init__(encoding, module, history, n_threads)
        self.target_mean_ = float(target_mean)
        self.target_scale_ = float(target_scale)

    def predict(self, X) -> np.ndarray:
        """``(n,)`` predicted values in the target's units."""
        return self._outputs(X)[:, 0] * self.target_scale_ + self.target_mean_


class MimicClassifier(_MimicNet):
    """A small MLP that mimics a classifier: ``predict_proba``/``predict`` on raw rows (the
    encoding of :class:`~ensel.compress.encoding.Encoding` is built in), ``export`` to ONNX or
    TorchScript. Made by :func:`compress`.

    ``n_threads``: torch threads for ``predict_proba`` (default 1; set it freely).
    Attributes: ``classes_``, ``encoding_``, ``module_`` (the torch net, logits out),
    ``history_`` (:class:`History`), ``n_features_in_``, ``feature_names_in_`` (DataFrames)."""

    regression = False
    """Whether the net predicts a numeric target (it predicts class probabilities)."""

    def __init__(
        self, classes, encoding: Encoding, module, history: History, n_threads: int = 1
    ) -> None:
        super().__init__(encoding, module, history, n_threads)
        self.classes_ = np.asarray(classes)

    def _head(self, logits):
        return _torch().softmax(logits, 1)

    def predict_proba(self, X) -> np.ndarray:
        """``(n, n_classes)`` probabilities (softmax of the net's outputs, float32 arithmetic)."""
        return self._outputs(X)

    def predict(self, X) -> np.ndarray:
        """The most probable class of each row, as the model's labels."""
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


def is_regressor(model) -> bool:
    """True for a model to mimic by its ``predict`` values: a scikit-learn estimator tagged as a
    regressor, or any object with ``predict`` and ``_estimator_type = "regressor"``."""
    if not callable(getattr(model, "predict", None)):
        return False
    if getattr(model, "_estimator_type", None) == "regressor":
        return True
    from sklearn.base import BaseEstimator
    from sklearn.base import is_regressor as sk_is_regressor

    return isinstance(model, BaseEstimator) and sk_is_regressor(model)


def label_values(model, X, batch_size: int = 10_000, verbose: int = 0) -> np.ndarray:
    """``model.predict`` of ``X`` as an ``(n,)`` float64 array, in batches of ``batch_size``
    rows (a regressor's labels for MUNGE rows); a clear error for non-finite or misshapen
    output."""
    batch_size = _positive_int(batch_size, "label_batch_size")
    n = len(X)
    out = np.empty(n, dtype=np.float64)
    bar = _bar(n, "labelling", verbose, unit="row")
    try:
        for start in range(0, n, batch_size):
            stop = start + batch_size
            rows = X.iloc[start:stop] if isinstance(X, pd.DataFrame) else X[start:stop]
            values = np.asarray(model.predict(rows), dtype=np.float64)
            if values.shape != (len(rows),) or not np.isfinite(values).all():
                raise ValueError(
                    f"{type(model).__name__}.predict returned shape {values.shape} (or "
                    f"non-finite values) for {len(rows)} rows; a regression mimic learns one "
                    "finite value per row"
                )
            out[start:stop] = values
            if bar is not None:
                bar.update(len(rows))
    finally:
        if bar is not None:
            bar.close()
    return out


def label(model, X, batch_size: int = 10_000, verbose: int = 0) -> np.ndarray:
    """``model.predict_proba`` of ``X`` as an ``(n, C)`` float64 array, in batches of
    ``batch_size`` rows: a large ensemble never predicts (nor holds its members' predictions
    for) more than one batch at a time. ``X`` is passed to the model as given (a DataFrame
    stays a DataFrame). A clear error for a model without ``predict_proba`` or with output
    that is not a probability matrix."""
    _check_model(model)
    batch_size = _positive_int(batch_size, "label_batch_size")
    n = len(X)
    out = None
    bar = _bar(n, "labelling", verbose, unit="row")
    try:
        for start in range(0, n, batch_size):
            stop = start + batch_size
            rows = X.iloc[start:stop] if isinstance(X, pd.DataFrame) else X[start:stop]
            proba = _check_proba(model.predict_proba(rows), len(rows), model)
            if out is None:
                out = np.empty((n, proba.shape[1]), dtype=np.float64)
            out[start : start + len(rows)] = proba
            if bar is not None:
                bar.update(len(rows))
    finally:
        if bar is not None:
            bar.close()
    return out


def compress(
    model,
    X,
    *,
    n_pseudo: int = 400_000,
    hidden: int | tuple[int, ...] = 256,
    p: float = 0.5,
    s: float = 10.0,
    include_training: bool = True,
    loss: str = "squared",
    activation: str = "tanh",
    epochs: int = 200,
    batch_size: int = 512,
    learning_rate: float = 1e-3,
    validation_fraction: float = 0.1,
    patience: int = 8,
    label_batch_size: int = 10_000,
    n_threads: int = 1,
    random_state: int | None = 0,
    verbose: int = 0,
) -> MimicClassifier | MimicRegressor:
    """A :class:`MimicClassifier` trained to reproduce ``model.predict_proba`` (§4.4), or for a
    regressor (see :func:`is_regressor`) a :class:`MimicRegressor` trained to reproduce
    ``model.predict``.

    ``n_pseudo`` MUNGE rows (``p``, ``s``: see :func:`~ensel.compress.munge`) drawn from the
    training data ``X``, plus ``X`` itself when ``include_training``, are labelled by ``model``
    (any fitted classifier with ``predict_proba``, or regressor; batched, see :func:`label`),
    and a net is trained on those soft targets by :func:`fit_mimic` (see it for the other
    options). The dissertation compressed with 400k pseudo rows and 256 hidden units, the
    defaults here. A regression mimic always minimises the squared error (``loss`` applies to
    classifiers).
    """
    _torch()  # fail early, before labelling, when torch is missing
    if is_regressor(model):
        return _compress_regressor(
            model, X, n_pseudo=n_pseudo, hidden=hidden, p=p, s=s,
            include_training=include_training, activation=activation, epochs=epochs,
            batch_size=batch_size, learning_rate=learning_rate,
            validation_fraction=validation_fraction, patience=patience,
            label_batch_size=label_batch_size, n_threads=n_threads,
            random_state=random_state, verbose=verbose,
        )  # fmt: skip
    _check_model(model)
    n_pseudo = _positive_int(n_pseudo, "n_pseudo")
    _check_options(hidden, loss, activation, epochs, batch_size, patience, n_threads)
    _check_split(n_pseudo, validation_fraction, learning_rate)
    Encoding.fit(X)  # checks X before any work: not empty, no infinities
    seeds = np.random.default_rng(random_state).integers(2**31, size=2)
    timer = _Timer()
    pseudo = munge(X, size=n_pseudo, p=p, s=s, random_state=seeds[0])
    timer.lap("munge")
    targets = label(model, pseudo, batch_size=label_batch_size, verbose=verbose)
    X_targets = label(model, X, batch_size=label_batch_size) if include_training else None
    timer.lap("label")
    classes = getattr(model, "classes_", None)
    mimic = fit_mimic(
        X, pseudo, targets, X_targets, classes=classes, hidden=hidden, loss=loss,
        activation=activation, epochs=epochs, batch_size=batch_size,
        learning_rate=learning_rate, validation_fraction=validation_fraction,
        patience=patience, n_threads=n_threads, random_state=int(seeds[1]), verbose=verbose,
    )  # fmt: skip
    mimic.history_.seconds = {**timer.laps, **mimic.history_.seconds}
    return mimic


def _compress_regressor(model, X, *, n_pseudo, p, s, include_training, label_batch_size,
                        random_state, verbose, **train) -> MimicRegressor:  # fmt: skip
    """``compress`` for a regressor: the same MUNGE rows, labelled by ``model.predict``."""
    n_pseudo = _positive_int(n_pseudo, "n_pseudo")
    _check_options(train["hidden"], "squared", train["activation"], train["epochs"],
                   train["batch_size"], train["patience"], train["n_threads"])  # fmt: skip
    _check_split(n_pseudo, train["validation_fraction"], train["learning_rate"])
    Encoding.fit(X)
    seeds = np.random.default_rng(random_state).integers(2**31, size=2)
    timer = _Timer()
    pseudo = munge(X, size=n_pseudo, p=p, s=s, random_state=seeds[0])
    timer.lap("munge")
    targets = label_values(model, pseudo, batch_size=label_batch_size, verbose=verbose)
    X_targets = label_values(model, X, batch_size=label_batch_size) if include_training else None
    timer.lap("label")
    mimic = fit_mimic(
        X, pseudo, targets, X_targets, task="regression", random_state=int(seeds[1]),
        verbose=verbose, **train,
    )  # fmt: skip
    mimic.history_.seconds = {**timer.laps, **mimic.history_.seconds}
    return mimic


def fit_mimic(
    X,
    pseudo,
    pseudo_targets: np.ndarray,
    X_targets: np.ndarray | None = None,
    *,
    classes=None,
    hidden: int | tuple[int, ...] = 256,
    loss: str = "squared",
    activation: str = "tanh",
    epochs: int = 200,
    batch_size: int = 512,
    learning_rate: float = 1e-3,
    validation_fraction: float = 0.1,
    patience: int = 8,
    n_threads: int = 1,
    random_state: int | None = 0,
    verbose: int = 0,
    task: str = "classification",
) -> MimicClassifier | MimicRegressor:
    """A mimic trained on already-labelled rows: ``pseudo`` with ``pseudo_targets`` (``(n, C)``
    probabilities), plus the training rows ``X`` with ``X_targets`` when given (``X`` also
    fixes the encoding). :func:`compress` is MUNGE + :func:`label` + this; call it directly to
    reuse labels (labelling is the slow part with a large ensemble).

    ``task="regression"``: the targets are ``(n,)`` real values; the net has one linear output
    unit trained with the squared error on the standardised targets, and a
    :class:`MimicRegressor` comes back.

    The net: ``hidden`` units per hidden layer (an int: one layer, as the dissertation's
    256-unit nets; a tuple: several), ``activation`` units, a softmax output, trained with Adam
    on the ``loss``: the squared error (``"squared"``, the Brier score, which RMSE measures and
    the SNNS nets of the paper minimised) or the cross-entropy on the probabilities. A
    ``validation_fraction`` of the pseudo rows is held out; training stops when its loss has not
    improved for ``patience`` epochs (the learning rate halves after ``patience // 3``) and the
    best epoch's weights are kept. ``n_threads`` torch threads train the net (default 1: for a
    net this small more threads gain little, and on a busy machine OpenMP threads waiting for
    cores slow every step many times over); torch's global setting is restored afterwards."""
    torch_threads_n = _check_options(
        hidden, loss, activation, epochs, batch_size, patience, n_threads
    )
    encoding = Encoding.fit(X)
    if task not in ("classification", "regression"):
        raise ValueError(f"task={task!r}: use 'classification' or 'regression'")
    regression = task == "regression"
    pseudo_targets = np.asarray(pseudo_targets, dtype=np.float64)
    centre, spread = 0.0, 1.0
    if regression:
        pseudo_targets, X_targets, centre, spread = _standardise(
            pseudo_targets, X_targets, len(pseudo)
        )
        loss = "mse"
    n_pseudo = len(pseudo)
    if pseudo_targets.ndim != 2 or len(pseudo_targets) != n_pseudo:
        raise ValueError(
            f"pseudo_targets has shape {pseudo_targets.shape}; it must be (len(pseudo), "
            f"n_classes) = ({n_pseudo}, C)"
        )
    n_val = _check_split(n_pseudo, validation_fraction, learning_rate)
    features, targets = _training_rows(encoding, pseudo, pseudo_targets, X, X_targets)
    classes = _classes(classes, targets.shape[1], regression)
    rng = np.random.default_rng(random_state)
    val = np.sort(rng.choice(n_pseudo, size=n_val, replace=False))
    train = np.setdiff1d(np.arange(len(features)), val)
    timer = _Timer()
    with torch_threads(torch_threads_n):
        module, history = train_net(
            features[train], targets[train], features[val], targets[val],
            hidden=_hidden(hidden), activation=activation, loss=loss, epochs=epochs,
            batch_size=batch_size, learning_rate=float(learning_rate), patience=patience,
            random_state=int(rng.integers(2**31)), verbose=verbose,
        )  # fmt: skip
    timer.lap("train")
    history.seconds = timer.laps
    if regression:
        history.fidelity_rmse *= spread  # in the target's units
        return MimicRegressor(encoding, module, history, centre, spread, torch_threads_n)
    return MimicClassifier(classes, encoding, module, history, n_threads=torch_threads_n)


def _standardise(pseudo_targets: np.ndarray, X_targets, n_pseudo: int):
    """``(pseudo targets, X targets, centre, spread)`` of a regression mimic: the targets as
    one column standardised by the pseudo targets' mean and standard deviation (1 where they
    are constant), so the net's one linear output trains at unit scale."""
    if pseudo_targets.ndim != 1 or len(pseudo_targets) != n_pseudo:
        raise ValueError(
            f"pseudo_targets has shape {pseudo_targets.shape}; a regression mimic needs "
            f"(len(pseudo),) = ({n_pseudo},) values"
        )
    centre = float(pseudo_targets.mean())
    spread = float(pseudo_targets.std()) or 1.0
    pseudo_targets = ((pseudo_targets - centre) / spread)[:, None]
    if X_targets is not None:
        X_targets = ((np.asarray(X_targets, dtype=np.float64) - centre) / spread)[:, None]
    return pseudo_targets, X_targets, centre, spread


def _training_rows(encoding: Encoding, pseudo, targets: np.ndarray, X, X_targets):
    """``(features, targets)`` the net trains on: the encoded pseudo rows, then the encoded
    training rows ``X`` where their targets ``X_targets`` are given."""
    features = encoding.transform(pseudo)
    if X_targets is None:
        return features, targets
    X_targets = np.asarray(X_targets, dtype=np.float64)
    X_features = encoding.transform(X)
    if X_targets.shape != (len(X_features), targets.shape[1]):
        raise ValueError(
            f"X_targets has shape {X_targets.shape}; it must be (len(X), {targets.shape[1]})"
        )
    return np.vstack([features, X_features]), np.vstack([targets, X_targets])


def _classes(classes, n_columns: int, regression: bool) -> np.ndarray:
    """The class labels of the targets' ``n_columns`` (0 to C-1 where none are given),
    checked against the columns for a classifier."""
    classes = np.arange(n_columns) if classes is None else np.asarray(classes)
    if not regression and classes.size != n_columns:
        raise ValueError(
            f"the targets have {n_columns} columns but classes has {classes.size} "
            "classes; they must match (model.predict_proba and model.classes_ disagree)"
        )
    return classes


def _check_options(hidden, loss, activation, epochs, batch_size, patience, n_threads) -> int:
    """Validate the training options; returns ``n_threads``."""
    _hidden(hidden)
    if loss not in LOSSES:
        raise ValueError(f"loss={loss!r}: use one of {LOSSES}")
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation={activation!r}: use one of {ACTIVATIONS}")
    _positive_int(epochs, "epochs")
    _positive_int(batch_size, "batch_size")
    _positive_int(patience, "patience")
    return _positive_int(n_threads, "n_threads")


def _check_split(n_pseudo: int, validation_fraction, learning_rate) -> int:
    """Validate the learning rate and the held-out share; returns the held-out row count."""
    if isinstance(learning_rate, bool) or not isinstance(learning_rate, Real) or learning_rate <= 0:
        raise ValueError(f"learning_rate={learning_rate!r}: must be a number > 0")
    if not isinstance(validation_fraction, Real) or not 0.0 < validation_fraction < 1.0:
        raise ValueError(f"validation_fraction={validation_fraction!r}: use a number in (0, 1)")
    n_val = round(validation_fraction * n_pseudo)
    if n_val < 1 or n_val >= n_pseudo:
        raise ValueError(
            f"n_pseudo={n_pseudo} with validation_fraction={validation_fraction} holds out "
            f"{n_val} rows; raise n_pseudo so both parts are non-empty"
        )
    return n_val


def train_net(
    X: np.ndarray,
    T: np.ndarray,
    X_val: np.ndarray,
    T_val: np.ndarray,
    *,
    hidden: tuple[int, ...] = (256,),
    activation: str = "tanh",
    loss: str = "squared",
    epochs: int = 200,
    batch_size: int = 512,
    learning_rate: float = 1e-3,
    patience: int = 8,
    random_state: int = 0,
    verbose: int = 0,
):
    """Train an MLP (logits out) on encoded rows ``X`` and target probabilities ``T`` with Adam
    (``loss="mse"``: real targets ``T``, a linear output and the mean squared error),
    stopping early on ``(X_val, T_val)``; returns ``(module, History)`` with the best epoch's
    weights. Initial weights (Glorot uniform, zero biases) and the order of the rows come from
    ``np.random.default_rng(random_state)``; torch's global generator is not used."""
    torch = _torch()
    rng = np.random.default_rng(random_state)
    module = _build(X.shape[1], hidden, T.shape[1], activation, rng)
    X_t, T_t = torch.from_numpy(np.ascontiguousarray(X, np.float32)), _tensor(T)
    Xv, Tv = torch.from_numpy(np.ascontiguousarray(X_val, np.float32)), _tensor(T_val)
    optimiser = torch.optim.Adam(module.parameters(), lr=learning_rate)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(
        optimiser, factor=0.5, patience=max(1, patience // 3)
    )
    history = History()
    best, best_state, waited = math.inf, copy.deepcopy(module.state_dict()), 0
    bar = _bar(epochs, "mimic", verbose, unit="epoch")
    try:
        for epoch in range(1, epochs + 1):
            module.train()
            order = torch.from_numpy(rng.permutation(len(X_t)))
            total = torch.zeros(())
            for start in range(0, len(order), batch_size):
                idx = order[start : start + batch_size]
                batch_loss = _loss(module(X_t[idx]), T_t[idx], loss)
                optimiser.zero_grad(set_to_none=True)
                batch_loss.backward()
                optimiser.step()
                total += batch_loss.detach() * len(idx)
            history.train_loss.append(float(total) / len(order))
            val_loss = _evaluate(module, Xv, Tv, loss)
            history.val_loss.append(val_loss)
            scheduler.step(val_loss)
            if val_loss < best * (1 - 1e-4):
                best, best_state, waited = val_loss, copy.deepcopy(module.state_dict()), 0
                history.best_epoch = epoch
            else:
                waited += 1
            if bar is not None:
                bar.update(1)
                bar.set_postfix(val_loss=f"{val_loss:.5f}")
            if waited >= patience:
                break
    finally:
        if bar is not None:
            bar.close()
    module.load_state_dict(best_state)
    module.eval()
    with torch.inference_mode():
        out = module(Xv) if loss == "mse" else torch.softmax(module(Xv), 1)
        history.fidelity_rmse = float(torch.sqrt(torch.mean((out - Tv) ** 2)))
    return module, history


@contextmanager
def torch_threads(n: int):
    """Run the block with ``n`` torch intra-op threads, then restore the previous number."""
    torch = _torch()
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _build(n_in: int, hidden: tuple[int, ...], n_out: int, activation: str, rng):
    torch = _torch()
    act = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU, "sigmoid": torch.nn.Sigmoid}[activation]
    sizes = [n_in, *hidden, n_out]
    layers = []
    for i, (a, b) in enumerate(itertools.pairwise(sizes)):
        linear = torch.nn.Linear(a, b)
        bound = math.sqrt(6.0 / (a + b))
        with torch.no_grad():
            linear.weight.copy_(torch.from_numpy(rng.uniform(-bound, bound, (b, a))))
            linear.bias.zero_()
        layers.append(linear)
        if i < len(hidden):
            layers.append(act())
    return torch.nn.Sequential(*layers)


def _loss(logits, target, kind: str):
    torch = _torch()
    if kind == "mse":  # regression: a linear output
        return ((logits - target) ** 2).mean()
    if kind == "squared":
        return ((torch.softmax(logits, 1) - target) ** 2).sum(1).mean()
    return -(target * torch.log_softmax(logits, 1)).sum(1).mean()


def _evaluate(module, X, T, kind: str) -> float:
    torch = _torch()
    module.eval()
    total = 0.0
    with torch.inference_mode():
        for start in range(0, len(X), PREDICT_BATCH):
            stop = start + PREDICT_BATCH
            total += float(_loss(module(X[start:stop]), T[start:stop], kind)) * len(X[start:stop])
    return total / len(X)


def _tensor(a: np.ndarray):
    return _torch().from_numpy(np.ascontiguousarray(a, dtype=np.float32))


def _check_model(model) -> None:
    if not callable(getattr(model, "predict_proba", None)):
        raise TypeError(
            f"model must be a fitted classifier with a predict_proba method (or a regressor, "
            f"tagged as one by scikit-learn); got a {type(model).__name__}, which has none"
        )


def _check_proba(proba, n: int, model) -> np.ndarray:
    proba = np.asarray(proba, dtype=np.float64)
    if proba.ndim != 2 or proba.shape[0] != n or proba.shape[1] < 2:
        raise ValueError(
            f"{type(model).__name__}.predict_proba returned shape {proba.shape} for {n} rows; "
            "it must return an (n_rows, n_classes) matrix with at least two classes"
        )
    if not np.isfinite(proba).all() or proba.min() < -1e-6 or proba.max() > 1 + 1e-6:
        raise ValueError(
            f"{type(model).__name__}.predict_proba returned values outside [0, 1] or NaN; "
            "a mimic learns probabilities"
        )
    if np.abs(proba.sum(axis=1) - 1.0).max() > 1e-3:
        raise ValueError(
            f"{type(model).__name__}.predict_proba returned rows that do not sum to 1; "
            "a mimic learns a probability per class"
        )
    return proba


def _hidden(hidden) -> tuple[int, ...]:
    sizes = (hidden,) if isinstance(hidden, Integral) else tuple(hidden)
    if not sizes or any(isinstance(h, bool) or not isinstance(h, Integral) or h < 1 for h in sizes):
        raise ValueError(f"hidden={hidden!r}: use a positive int or a tuple of positive ints")
    return tuple(int(h) for h in sizes)


def _positive_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ValueError(f"{name}={value!r}: must be a positive integer")
    return int(value)


def _bar(total: int, desc: str, verbose: int, unit: str):
    """A tqdm bar on a terminal or in a notebook when ``verbose``; None otherwise."""
    return progress_bar(verbose, total=total, desc=desc, unit=unit, leave=False)


class _Timer:
    def __init__(self) -> None:
        import time

        self._clock = time.perf_counter
        self._last = self._clock()
        self.laps: dict[str, float] = {}

    def lap(self, name: str) -> None:
        now = self._clock()
        self.laps[name] = now - self._last
        self._last = now
