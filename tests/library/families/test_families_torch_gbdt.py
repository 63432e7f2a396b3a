"""The staged families beyond scikit-learn: mlp (numpy backprop, checked against torch), and the
optional-dependency xgboost and lightgbm, staged by epoch/round."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_blobs, make_classification

from ensel.library.families import get_family

REQUIRES = {"mlp": None, "xgboost": "xgboost", "lightgbm": "lightgbm"}


def _fit(name, X, y, n_classes, *, stages=None, seed=0, **override):
    if REQUIRES[name]:
        pytest.importorskip(REQUIRES[name])
    family = get_family(name)
    params = {**family.params, **family.test_params, **override}
    stages = family.test_stages if stages is None else stages
    family.validate(params, stages)
    return family.fit(X, y, n_classes=n_classes, params=params, stages=stages, random_state=seed)


def _data(n_classes, n=240, seed=0):
    X, y = make_classification(
        n_samples=n,
        n_features=6,
        n_informative=4,
        n_redundant=0,
        n_classes=n_classes,
        n_clusters_per_class=1,
        random_state=seed,
    )
    return X.astype(np.float64), y


def _assert_proba(p, n_stages, n, n_classes):
    assert p.shape == (n_stages, n, n_classes)
    assert p.dtype == np.float64
    assert np.isfinite(p).all()
    assert (p >= 0).all() and (p <= 1).all()
    np.testing.assert_allclose(p.sum(axis=2), 1.0, atol=1e-9)


@pytest.mark.parametrize("name", sorted(REQUIRES))
def test_fold_missing_classes(name):
    X, y = _data(3)
    keep = y < 2  # class 2 absent from the training fold
    p = _fit(name, X[keep], y[keep], 3).predict(X)["none"]
    _assert_proba(p, 2, len(X), 3)
    one = _fit(name, X[y == 1], y[y == 1], 3).predict(X)["none"]
    _assert_proba(one, 2, len(X), 3)
    if name != "mlp":  # boosting on one class: that class, surely
        assert (p[:, :, 2] == 0).all()
        assert (one[:, :, 1] == 1).all()


@pytest.mark.parametrize("name", sorted(REQUIRES))
def test_the_seed_matters(name):
    X, y = _data(3)
    a = _fit(name, X, y, 3, seed=3).predict(X)["none"]
    c = _fit(name, X, y, 3, seed=4).predict(X)["none"]  # test_params subsample, so seeds matter
    assert not np.array_equal(a, c)


def test_mlp_learns_separable_problem_and_keeps_global_rng():
    X, y = make_blobs(n_samples=400, centers=3, n_features=5, cluster_std=1.0, random_state=0)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    before = np.random.get_state()  # noqa: NPY002  (the legacy global generator stays untouched)
    p = _fit("mlp", X, y, 3, stages=(20,), hidden=8).predict(X)["none"][0]
    after = np.random.get_state()  # noqa: NPY002
    np.testing.assert_array_equal(before[1], after[1])
    assert before[2:] == after[2:]
    assert (p.argmax(axis=1) == y).mean() > 0.9


def _torch_sgd_net(X, y, n_classes, params, epochs, seed):
    """The reference: the same net trained by torch autograd and ``torch.optim.SGD`` in float64,
    from the initial weights and batch orders that ``fit_mlp`` documents (one
    ``np.random.default_rng(seed)``: layer 1 weights and biases, layer 2's, each
    U(-1/sqrt(fan_in), 1/sqrt(fan_in)), then one permutation per epoch)."""
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    rng = np.random.default_rng(seed)
    n, d = X.shape
    n_out = 1 if n_classes == 2 else n_classes
    shapes = [(params["hidden"], d), (params["hidden"],), (n_out, params["hidden"]), (n_out,)]
    weights = []
    for shape, fan_in in zip(shapes, (d, d, params["hidden"], params["hidden"]), strict=True):
        bound = 1 / np.sqrt(fan_in)
        weights.append(torch.tensor(rng.uniform(-bound, bound, shape), requires_grad=True))
    w1, b1, w2, b2 = weights
    opt = torch.optim.SGD(weights, lr=params["lr"], momentum=params["momentum"])
    Xt, yt = torch.tensor(X), torch.tensor(y)
    target = yt.double()[:, None] if n_out == 1 else F.one_hot(yt, n_classes).double()
    act = torch.sigmoid if params["activation"] == "sigmoid" else torch.tanh
    snaps = []
    for _ in range(max(epochs)):
        order = torch.as_tensor(rng.permutation(n))
        for start in range(0, n, params["batch_size"]):
            idx = order[start : start + params["batch_size"]]
            z = act(Xt[idx] @ w1.T + b1) @ w2.T + b2
            if params["loss"] == "squared":
                p = torch.sigmoid(z) if n_out == 1 else torch.softmax(z, dim=1)
                loss = (p - target[idx]).square().sum(dim=1).mean()
            elif n_out == 1:
                loss = F.binary_cross_entropy_with_logits(z, target[idx])
            else:
                loss = F.cross_entropy(z, yt[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        snaps.append([w.detach().numpy().copy() for w in weights])  # after each epoch
    return [snaps[e - 1] for e in epochs]


@pytest.mark.parametrize(
    ("n_classes", "loss", "activation", "momentum"),
    [
        (2, "squared", "sigmoid", 0.5),
        (2, "cross_entropy", "tanh", 0.9),
        (3, "squared", "tanh", 0.9),
        (3, "cross_entropy", "sigmoid", 0.0),
    ],
)
def test_mlp_matches_torch_sgd(n_classes, loss, activation, momentum):
    X, y = _data(n_classes, n=250)  # 250 rows: the last batch of each epoch is short
    override = {"hidden": 5, "batch_size": 16, "loss": loss, "activation": activation}
    override |= {"momentum": momentum, "lr": 0.5}
    run = _fit("mlp", X, y, n_classes, stages=(1, 4), seed=13, **override)
    params = {**get_family("mlp").params, **override}
    reference = _torch_sgd_net(X, y, n_classes, params, (1, 4), seed=13)
    for ours, theirs in zip(run.snapshots, reference, strict=True):
        for a, b in zip(ours, theirs, strict=True):
            assert a.shape == b.shape
            np.testing.assert_allclose(a, b, atol=1e-6, rtol=0)
    torch = pytest.importorskip("torch")
    Xt = torch.tensor(X)
    p = run.predict(X)["none"]
    for i, (w1, b1, w2, b2) in enumerate(reference):
        act = torch.sigmoid if activation == "sigmoid" else torch.tanh
        logits = act(Xt @ torch.tensor(w1).T + torch.tensor(b1)) @ torch.tensor(w2).T
        logits = logits + torch.tensor(b2)
        if n_classes == 2:
            q = torch.sigmoid(logits[:, 0]).numpy()
            expected = np.column_stack([1 - q, q])
        else:
            expected = torch.softmax(logits, dim=1).numpy()
        np.testing.assert_allclose(p[i], expected, atol=1e-6, rtol=0)


@pytest.mark.parametrize("loss", ["squared", "cross_entropy"])
@pytest.mark.parametrize("activation", ["sigmoid", "tanh"])
def test_mlp_variants(loss, activation):
    X, y = _data(2)
    run = _fit("mlp", X, y, 2, stages=(10,), loss=loss, activation=activation)
    p = run.predict(X)["none"]
    _assert_proba(p, 1, len(X), 2)
    assert (p[0].argmax(axis=1) == y).mean() > 0.8


def test_mlp_rejects_bad_params():
    family = get_family("mlp")
    with pytest.raises(ValueError, match="activation"):
        family.validate({**family.params, "activation": "relu"}, (1,))
    with pytest.raises(ValueError, match="epochs"):
        family.validate(dict(family.params), (0, 2))


@pytest.mark.parametrize("n_classes", [2, 3])
def test_xgboost_stage_equals_library_model(n_classes):
    xgboost = pytest.importorskip("xgboost")
    X, y = _data(n_classes)
    family = get_family("xgboost")
    params = {**family.params, **family.test_params}
    p = _fit("xgboost", X, y, n_classes, stages=(2, 5), seed=11).predict(X)["none"]
    own = xgboost.XGBClassifier(
        n_estimators=2, tree_method="hist", n_jobs=1, random_state=11, **params
    ).fit(X, y)
    np.testing.assert_allclose(p[0], own.predict_proba(X), atol=1e-6, rtol=0)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_lightgbm_stage_equals_library_model(n_classes):
    lightgbm = pytest.importorskip("lightgbm")
    X, y = _data(n_classes)
    family = get_family("lightgbm")
    params = {**family.params, **family.test_params}
    p = _fit("lightgbm", X, y, n_classes, stages=(2, 5), seed=11).predict(X)["none"]
    own = lightgbm.LGBMClassifier(
        n_estimators=2,
        subsample_freq=1,
        n_jobs=1,
        verbosity=-1,
        random_state=11,
        deterministic=True,
        force_row_wise=True,
        **params,
    ).fit(X, y)
    np.testing.assert_allclose(p[0], own.predict_proba(X), atol=1e-6, rtol=0)
