"""NumPy MLP: backpropagation against complex-step differentiation and torch autograd, batched part gradients.

Tolerances are first-order rounding bounds of the forward and backward passes
(:func:`_backprop_bounds`, Higham 2002 via tests/tolerances.py), never fixed constants.
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.special import logsumexp

from gcsim.errors import InvalidArgumentError
from gcsim.learning.models import MLP, cross_entropy
from mlp_tolerances import backprop_bounds as _backprop_bounds, g_ as _g


def _complex_step_gradient(sizes, activation, theta, X, y, h=1e-40):
    """∂ loss / ∂θ_k = Im loss(θ + i h e_k) / h, by an independent complex forward pass.

    No subtraction, so no cancellation: the rounding is that of the forward-mode chain rule
    (the same magnitudes as backpropagation's, in another order); the truncation error is
    ``h² |∂³ loss| / 6``, below 1e-70 here for any third derivative under 1e10.
    """
    X = np.asarray(X, float)
    B = X.shape[0]
    out = np.empty(theta.size)
    for k in range(theta.size):
        t = theta.astype(complex)
        t[k] += 1j * h
        a, off = X.astype(complex), 0
        for idx, (fi, fo) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
            W = t[off : off + fi * fo].reshape(fi, fo)
            off += fi * fo
            z = a @ W + t[off : off + fo]
            off += fo
            if idx < len(sizes) - 2:
                a = np.tanh(z) if activation == "tanh" else np.where(z.real > 0, z, 0)
        zs = z - z.real.max(axis=1, keepdims=True)
        loss = (np.log(np.exp(zs).sum(axis=1)) - zs[np.arange(B), y]).mean()
        out[k] = loss.imag / h
    return out


def _data(seed, count, features, classes):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((count, features)), rng.integers(0, classes, count)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(1, 9), min_size=2, max_size=5).filter(lambda s: s[-1] >= 2))
def test_parameter_count(sizes):
    expected = sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:], strict=True))
    assert MLP(sizes).d == expected
    assert MLP(sizes).init(0).shape == (expected,)


def test_default_size_is_9610():
    assert MLP().d == 64 * 128 + 128 + 128 * 10 + 10 == 9610


def test_cross_entropy_against_logsumexp():
    rng = np.random.default_rng(0)
    z = rng.standard_normal((7, 5)) * 30  # large logits: stability matters
    y = rng.integers(0, 5, 7)
    expected = logsumexp(z, axis=1) - z[np.arange(7), y]
    # two evaluations of lse(z) − z_y from exact logits: C exponentials, their sum, a log and
    # two subtractions on terms of size <= 1 + 2 max|z| + log C (Higham Thm 3.1)
    tol = 2 * _g(5 + 4) * (1 + 2 * np.abs(z).max(axis=1) + np.log(5))
    assert np.all(np.abs(cross_entropy(z, y) - expected) <= tol)


@pytest.mark.parametrize("activation", ["tanh", "relu"])
@pytest.mark.parametrize("sizes", [(5, 4, 3), (4, 6, 5, 3), (3, 2)])
def test_gradient_matches_complex_step_differentiation(activation, sizes):
    net = MLP(sizes, activation=activation)
    theta = net.init(1)
    X, y = _data(2, 9, sizes[0], sizes[-1])
    _, grad = net.loss_and_grad(theta, X, y)
    ref = _complex_step_gradient(sizes, activation, theta, X, y)
    _, bound = _backprop_bounds(sizes, activation, theta, X, y)
    assert np.all(np.abs(grad - ref) <= 2 * bound)


def test_gradient_matches_torch_autograd():
    torch = pytest.importorskip("torch")
    net = MLP((6, 8, 7, 4), activation="relu")
    theta = net.init(3)
    X, y = _data(4, 11, 6, 4)
    layers = net.unpack(theta)
    params = [torch.tensor(a, requires_grad=True, dtype=torch.float64) for W, b in layers for a in (W, b)]
    h = torch.tensor(X)
    for idx in range(len(layers)):
        h = h @ params[2 * idx] + params[2 * idx + 1]
        if idx < len(layers) - 1:
            h = torch.relu(h)
    loss = torch.nn.functional.cross_entropy(h, torch.tensor(y))
    loss.backward()
    expected = np.concatenate([p.grad.numpy().ravel() for p in params])
    value, grad = net.loss_and_grad(theta, X, y)
    loss_bound, bound = _backprop_bounds(net.sizes, "relu", theta, X, y)
    assert abs(value - loss.item()) <= 2 * loss_bound
    assert np.all(np.abs(grad - expected) <= 2 * bound)


def test_part_gradients_sum_and_blocks():
    net = MLP((5, 7, 3), activation="tanh")
    theta = net.init(0)
    X, y = _data(5, 12, 5, 3)
    Xp, yp = X.reshape(4, 3, 5), y.reshape(4, 3)
    G = net.part_gradients(theta, Xp, yp)
    assert G.shape == (4, net.d)
    # Σ_i g_i (4 more terms) vs the full batch: each within its backprop bound of the exact value
    parts = [_backprop_bounds(net.sizes, "tanh", theta, Xp[i], yp[i], normalizer=12)[1] for i in range(4)]
    full = _backprop_bounds(net.sizes, "tanh", theta, X, y)[1]
    tol = sum(parts) + _g(4) * np.abs(G).sum(axis=0) + full
    assert np.all(np.abs(G.sum(0) - net.loss_and_grad(theta, X, y)[1]) <= tol)
    # part i: gradient of its own mean loss, weighted by its share 3/12 (division by 4 is exact)
    for i in range(4):
        own = _backprop_bounds(net.sizes, "tanh", theta, Xp[i], yp[i])[1] / 4
        assert np.all(np.abs(G[i] - net.loss_and_grad(theta, Xp[i], yp[i])[1] / 4) <= parts[i] + own)


def test_example_gradients_and_weights():
    net = MLP((4, 5, 3))
    theta = net.init(2)
    X, y = _data(6, 6, 4, 3)
    E = net.example_gradients(theta, X, y)
    one = [_backprop_bounds(net.sizes, "relu", theta, X[k : k + 1], y[k : k + 1])[1] for k in range(6)]
    for k in range(6):
        assert np.all(np.abs(E[k] - net.loss_and_grad(theta, X[k : k + 1], y[k : k + 1])[1]) <= 2 * one[k])
    w = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    G = net.part_gradients(theta, X.reshape(2, 3, 4), y.reshape(2, 3), weights=w, normalizer=1.0)
    for part, (a, b) in enumerate([(0, 2), (4, 5)]):
        rows = slice(3 * part, 3 * part + 3)
        bound = _backprop_bounds(net.sizes, "relu", theta, X[rows], y[rows], normalizer=1.0, weights=w[part])[1]
        tol = bound + one[a] + one[b] + _g(1) * (np.abs(E[a]) + np.abs(E[b]))
        assert np.all(np.abs(G[part] - (E[a] + E[b])) <= tol)


def test_accuracy_and_evaluate():
    net = MLP((3, 4, 2))
    theta = net.init(0)
    X, y = _data(1, 20, 3, 2)
    z = net.logits(theta, X)
    assert net.accuracy(theta, X, y) == np.mean(z.argmax(1) == y)
    loss, acc = net.evaluate(theta, X, y)
    # the same operations on the same inputs: bitwise the same numbers
    assert loss == net.loss(theta, X, y) and acc == net.accuracy(theta, X, y)


def test_init_reproducible():
    net = MLP((4, 8, 3))
    assert np.array_equal(net.init(5), net.init(5))
    assert not np.array_equal(net.init(5), net.init(6))
    W1, b1 = net.unpack(net.init(0))[0]
    assert W1.shape == (4, 8) and np.all(b1 == 0)


@pytest.mark.parametrize(
    "kwargs,arg",
    [
        ({"sizes": (4,)}, "sizes"),
        ({"sizes": (4, 1)}, "sizes"),
        ({"sizes": (4, 0, 2)}, "sizes"),
        ({"sizes": 5}, "sizes"),
        ({"sizes": (4, 2), "activation": "sigmoid"}, "activation"),
    ],
)
def test_constructor_validation(kwargs, arg):
    with pytest.raises(InvalidArgumentError, match=arg):
        MLP(**kwargs)


def test_call_validation():
    net = MLP((3, 4, 2))
    theta = net.init(0)
    X, y = _data(0, 5, 3, 2)
    with pytest.raises(InvalidArgumentError, match="theta"):
        net.loss(theta[:-1], X, y)
    with pytest.raises(InvalidArgumentError, match="theta"):
        net.loss(np.full(net.d, np.nan), X, y)
    with pytest.raises(InvalidArgumentError, match="X"):
        net.loss(theta, X[:, :2], y)
    with pytest.raises(InvalidArgumentError, match="y"):
        net.loss(theta, X, y[:-1])
    with pytest.raises(InvalidArgumentError, match="y"):
        net.loss(theta, X, y + 2)
    with pytest.raises(InvalidArgumentError, match="y"):
        net.loss(theta, X, y.astype(float))
    with pytest.raises(InvalidArgumentError, match="X"):
        net.part_gradients(theta, X, y)
    with pytest.raises(InvalidArgumentError, match="normalizer"):
        net.part_gradients(theta, X[None], y[None], normalizer=0)
    with pytest.raises(InvalidArgumentError, match="weights"):
        net.part_gradients(theta, X[None], y[None], weights=np.ones((1, 4)))
