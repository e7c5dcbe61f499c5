"""NumPy MLP: backpropagation against finite differences and torch autograd, batched part gradients."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.special import logsumexp

from gcsim.errors import InvalidArgumentError
from gcsim.learning.models import MLP, cross_entropy, numerical_gradient


def _data(seed, count, features, classes):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((count, features)), rng.integers(0, classes, count)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(1, 9), min_size=2, max_size=5).filter(lambda s: s[-1] >= 2))
def test_parameter_count(sizes):
    expected = sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))
    assert MLP(sizes).d == expected
    assert MLP(sizes).init(0).shape == (expected,)


def test_default_size_is_9610():
    assert MLP().d == 64 * 128 + 128 + 128 * 10 + 10 == 9610


def test_cross_entropy_against_logsumexp():
    rng = np.random.default_rng(0)
    z = rng.standard_normal((7, 5)) * 30  # large logits: stability matters
    y = rng.integers(0, 5, 7)
    expected = logsumexp(z, axis=1) - z[np.arange(7), y]
    assert np.allclose(cross_entropy(z, y), expected)


@pytest.mark.parametrize("activation", ["tanh", "relu"])
@pytest.mark.parametrize("sizes", [(5, 4, 3), (4, 6, 5, 3), (3, 2)])
def test_gradient_matches_finite_differences(activation, sizes):
    net = MLP(sizes, activation=activation)
    theta = net.init(1)
    X, y = _data(2, 9, sizes[0], sizes[-1])
    _, grad = net.loss_and_grad(theta, X, y)
    num = numerical_gradient(lambda t: net.loss(t, X, y), theta, h=1e-6)
    assert np.allclose(grad, num, rtol=1e-5, atol=1e-7)


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
    assert np.isclose(value, loss.item())
    assert np.allclose(grad, expected, atol=1e-12)


def test_part_gradients_sum_and_blocks():
    net = MLP((5, 7, 3), activation="tanh")
    theta = net.init(0)
    X, y = _data(5, 12, 5, 3)
    Xp, yp = X.reshape(4, 3, 5), y.reshape(4, 3)
    G = net.part_gradients(theta, Xp, yp)
    assert G.shape == (4, net.d)
    assert np.allclose(G.sum(0), net.loss_and_grad(theta, X, y)[1])
    # part i: gradient of its own mean loss, weighted by its share 3/12
    for i in range(4):
        assert np.allclose(G[i], net.loss_and_grad(theta, Xp[i], yp[i])[1] / 4)


def test_example_gradients_and_weights():
    net = MLP((4, 5, 3))
    theta = net.init(2)
    X, y = _data(6, 6, 4, 3)
    E = net.example_gradients(theta, X, y)
    for k in range(6):
        assert np.allclose(E[k], net.loss_and_grad(theta, X[k:k + 1], y[k:k + 1])[1])
    w = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    G = net.part_gradients(theta, X.reshape(2, 3, 4), y.reshape(2, 3), weights=w, normalizer=1.0)
    assert np.allclose(G[0], E[0] + E[2]) and np.allclose(G[1], E[4] + E[5])


def test_accuracy_and_evaluate():
    net = MLP((3, 4, 2))
    theta = net.init(0)
    X, y = _data(1, 20, 3, 2)
    z = net.logits(theta, X)
    assert net.accuracy(theta, X, y) == np.mean(z.argmax(1) == y)
    loss, acc = net.evaluate(theta, X, y)
    assert loss == pytest.approx(net.loss(theta, X, y)) and acc == net.accuracy(theta, X, y)


def test_init_reproducible():
    net = MLP((4, 8, 3))
    assert np.array_equal(net.init(5), net.init(5))
    assert not np.array_equal(net.init(5), net.init(6))
    W1, b1 = net.unpack(net.init(0))[0]
    assert W1.shape == (4, 8) and np.all(b1 == 0)


@pytest.mark.parametrize("kwargs,arg", [({"sizes": (4,)}, "sizes"), ({"sizes": (4, 1)}, "sizes"),
                                        ({"sizes": (4, 0, 2)}, "sizes"), ({"sizes": 5}, "sizes"),
                                        ({"sizes": (4, 2), "activation": "sigmoid"}, "activation")])
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
