"""A multilayer perceptron in NumPy with explicit, batched backpropagation (theory §60).

The model is ``sizes = (f, h_1, ..., h_L, C)``: affine layers
``z_l = a_{l-1} W_l + b_l`` with ``W_l ∈ R^{h_{l-1} x h_l}``, activation
``a_l = φ(z_l)`` (ReLU or tanh) on hidden layers, softmax cross-entropy on the
logits ``z_{L+1}``.  Parameters live in one flat vector ``θ ∈ R^d`` (layer by
layer: ``W_l`` row-major, then ``b_l``), the vector the gradient codes encode.
For the default ``(64, 128, 10)``, ``d = 64·128 + 128 + 128·10 + 10 = 9610``.

Gradients follow backpropagation (Rumelhart, Hinton & Williams 1986): with
``δ_{L+1} = (softmax(z_{L+1}) - onehot(y)) / Z`` and
``δ_l = (δ_{l+1} W_{l+1}ᵀ) ∘ φ'(z_l)``,
``∂/∂W_l = Σ_x a_{l-1,x}ᵀ δ_{l,x}`` and ``∂/∂b_l = Σ_x δ_{l,x}``.
:meth:`MLP.part_gradients` keeps the sum over ``x`` separate for each data
part (a batched matrix product over parts), which gives the partial gradients
``g_i`` of theory §5.1 in one pass: ``Σ_i g_i`` is the gradient of the mean loss.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._validation import check_finite_array, check_int
from ..errors import InvalidArgumentError

__all__ = ["MLP", "cross_entropy", "numerical_gradient"]


def _log_softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def cross_entropy(logits: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per-example softmax cross-entropy ``-log softmax(z)[y]`` (numerically stable).

    Examples
    --------
    >>> round(float(cross_entropy(np.zeros((1, 4)), np.array([2]))[0]), 6) == round(float(np.log(4)), 6)
    True
    """
    logp = _log_softmax(logits)
    return -np.take_along_axis(logp, y[..., None], axis=-1)[..., 0]


class MLP:
    """Fully connected network with softmax cross-entropy loss.

    Parameters
    ----------
    sizes : sequence of int
        Layer widths ``(features, hidden..., classes)``, at least two entries,
        each ``>= 1`` (``>= 2`` classes).
    activation : {"relu", "tanh"}
        Hidden-layer nonlinearity.

    Examples
    --------
    >>> net = MLP((64, 128, 10))
    >>> net.d
    9610
    >>> theta = net.init(seed=0)
    >>> X = np.random.default_rng(0).standard_normal((5, 64)); y = np.arange(5)
    >>> loss, grad = net.loss_and_grad(theta, X, y)
    >>> grad.shape, bool(loss > 0)
    ((9610,), True)
    """

    def __init__(self, sizes: Sequence[int] = (64, 128, 10), activation: str = "relu"):
        try:
            sizes = tuple(sizes)
        except TypeError:
            raise InvalidArgumentError("sizes", f"must be a sequence of layer widths, got {sizes!r}") from None
        if len(sizes) < 2:
            raise InvalidArgumentError("sizes", f"needs at least input and output widths, got {sizes}")
        self.sizes = tuple(check_int("sizes", s, minimum=1) for s in sizes)
        if self.sizes[-1] < 2:
            raise InvalidArgumentError("sizes", f"needs at least 2 classes, got {self.sizes[-1]}")
        if activation not in ("relu", "tanh"):
            raise InvalidArgumentError("activation", f"must be 'relu' or 'tanh', got {activation!r}")
        self.activation = activation
        # offsets of (W_l, b_l) in the flat parameter vector
        self._slices = []
        start = 0
        for fan_in, fan_out in itertools.pairwise(self.sizes):
            w = slice(start, start + fan_in * fan_out)
            b = slice(w.stop, w.stop + fan_out)
            self._slices.append((w, b, fan_in, fan_out))
            start = b.stop
        self.d = start

    def __repr__(self) -> str:
        return f"MLP(sizes={self.sizes}, activation={self.activation!r}, d={self.d})"

    # -- parameters --------------------------------------------------------------------------
    def init(self, seed: int = 0) -> np.ndarray:
        """He-normal weights (Glorot-normal for tanh), zero biases; reproducible from ``seed``."""
        seed = check_int("seed", seed, minimum=0)
        rng = np.random.default_rng(seed)
        theta = np.zeros(self.d)
        gain = 2.0 if self.activation == "relu" else 1.0
        for w, _, fan_in, fan_out in self._slices:
            scale = np.sqrt(gain / fan_in) if self.activation == "relu" else np.sqrt(2.0 / (fan_in + fan_out))
            theta[w] = rng.standard_normal(fan_in * fan_out) * scale
        return theta

    def unpack(self, theta: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """Views ``[(W_1, b_1), ...]`` into the flat vector ``theta``."""
        return [(theta[w].reshape(fi, fo), theta[b]) for w, b, fi, fo in self._slices]

    def _check_theta(self, theta: Any) -> np.ndarray:
        theta = check_finite_array("theta", theta, ndim=1)
        if theta.shape != (self.d,):
            raise InvalidArgumentError("theta", f"must have shape ({self.d},), got {theta.shape}")
        return theta

    def _check_data(self, X: Any, y: Any, batch_dims: int) -> tuple[np.ndarray, np.ndarray]:
        X = check_finite_array("X", X, ndim=batch_dims + 1)
        if X.shape[-1] != self.sizes[0]:
            raise InvalidArgumentError("X", f"must have {self.sizes[0]} features in the last axis, got {X.shape}")
        y = np.asarray(y)
        if y.shape != X.shape[:-1] or (y.size and y.dtype.kind not in "iu"):
            raise InvalidArgumentError(
                "y", f"must be integer labels of shape {X.shape[:-1]}, got {y.shape} ({y.dtype})"
            )
        if y.size and (y.min() < 0 or y.max() >= self.sizes[-1]):
            raise InvalidArgumentError("y", f"labels must lie in [0, {self.sizes[-1]}), got [{y.min()}, {y.max()}]")
        return X, y.astype(np.int64)

    # -- forward / backward --------------------------------------------------------------------
    def _phi(self, z: np.ndarray) -> np.ndarray:
        return np.maximum(z, 0.0) if self.activation == "relu" else np.tanh(z)

    def _dphi(self, z: np.ndarray, a: np.ndarray) -> np.ndarray:
        return z > 0 if self.activation == "relu" else 1.0 - a * a  # a bool mask multiplies as 0/1

    def _forward(self, theta: np.ndarray, X: np.ndarray):
        acts, pre = [X], []
        layers = self.unpack(theta)
        for idx, (W, b) in enumerate(layers):
            z = acts[-1] @ W + b
            pre.append(z)
            acts.append(z if idx == len(layers) - 1 else self._phi(z))
        return acts, pre

    def logits(self, theta: Any, X: Any) -> np.ndarray:
        """Logits ``z_{L+1}`` for inputs ``X`` of shape ``(..., features)``."""
        theta = self._check_theta(theta)
        X = check_finite_array("X", X)
        if X.ndim < 1 or X.shape[-1] != self.sizes[0]:
            raise InvalidArgumentError("X", f"must have {self.sizes[0]} features in the last axis, got {X.shape}")
        return self._forward(theta, X)[0][-1]

    def loss(self, theta: Any, X: Any, y: Any) -> float:
        """Mean cross-entropy over the examples."""
        theta = self._check_theta(theta)
        X, y = self._check_data(X, y, 1)
        return float(cross_entropy(self._forward(theta, X)[0][-1], y).mean())

    def accuracy(self, theta: Any, X: Any, y: Any) -> float:
        """Share of examples whose arg-max logit is the label."""
        theta = self._check_theta(theta)
        X, y = self._check_data(X, y, 1)
        return float(np.mean(self._forward(theta, X)[0][-1].argmax(axis=-1) == y))

    def evaluate(self, theta: Any, X: Any, y: Any) -> tuple[float, float]:
        """``(mean loss, accuracy)`` from one forward pass."""
        theta = self._check_theta(theta)
        X, y = self._check_data(X, y, 1)
        return self._evaluate_checked(theta, X, y)

    def _evaluate_checked(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> tuple[float, float]:
        """:meth:`evaluate` on arguments already checked (a training loop checks its data once)."""
        z = self._forward(theta, X)[0][-1]
        return float(cross_entropy(z, y).mean()), float(np.mean(z.argmax(axis=-1) == y))

    def part_gradients(
        self, theta: Any, X: Any, y: Any, *, normalizer: float | None = None, weights: Any = None
    ) -> np.ndarray:
        r"""Partial gradients ``g_i = (1/Z) Σ_{x ∈ part i} w_x ∇_θ ℓ(θ; x)``, all parts at once.

        Parameters
        ----------
        X : array (N, b, features)
            ``b`` examples of each of the ``N`` parts.
        y : int array (N, b)
        normalizer : float, optional
            ``Z``; default ``N*b``, so that ``Σ_i g_i`` is the gradient of the
            mean loss over all ``N*b`` examples.
        weights : array (N, b), optional
            Per-example weights ``w_x`` (default 1; use 0 to pad unequal parts).

        Returns
        -------
        numpy.ndarray
            ``(N, d)``; row ``i`` is ``g_i`` in the flat parameter layout.

        Examples
        --------
        >>> net = MLP((3, 4, 2), activation="tanh"); th = net.init(1)
        >>> X = np.random.default_rng(1).standard_normal((2, 3, 3)); y = np.array([[0, 1, 1], [1, 0, 0]])
        >>> G = net.part_gradients(th, X, y)
        >>> bool(np.allclose(G.sum(axis=0), net.loss_and_grad(th, X.reshape(6, 3), y.reshape(6))[1]))
        True
        """
        theta = self._check_theta(theta)
        X, y = self._check_data(X, y, 2)
        N, b = y.shape
        Z = float(N * b) if normalizer is None else float(normalizer)
        if not np.isfinite(Z) or Z <= 0:
            raise InvalidArgumentError("normalizer", f"must be a positive number, got {normalizer!r}")
        acts, pre = self._forward(theta, X)
        probs = np.exp(_log_softmax(acts[-1]))
        probs[np.arange(N)[:, None], np.arange(b)[None, :], y] -= 1.0
        delta = probs / Z
        if weights is not None:
            w = check_finite_array("weights", weights, ndim=2)
            if w.shape != (N, b):
                raise InvalidArgumentError("weights", f"must have shape {(N, b)}, got {w.shape}")
            delta = delta * w[:, :, None]
        out = np.empty((N, self.d))
        layers = self.unpack(theta)
        for idx in range(len(layers) - 1, -1, -1):
            wsl, bsl, fi, fo = self._slices[idx]
            # per-part sums over examples: batched (N, fi, b) @ (N, b, fo)
            out[:, wsl] = np.matmul(acts[idx].transpose(0, 2, 1), delta).reshape(N, fi * fo)
            out[:, bsl] = delta.sum(axis=1)
            if idx:
                delta = (delta @ layers[idx][0].T) * self._dphi(pre[idx - 1], acts[idx])
        return out

    def loss_and_grad(self, theta: Any, X: Any, y: Any) -> tuple[float, np.ndarray]:
        """Mean cross-entropy and its gradient ``(d,)`` over ``X (count, features)``."""
        X, y = self._check_data(X, y, 1)
        theta = self._check_theta(theta)
        loss = float(cross_entropy(self._forward(theta, X)[0][-1], y).mean())
        return loss, self.part_gradients(theta, X[None], y[None])[0]

    def example_gradients(self, theta: Any, X: Any, y: Any) -> np.ndarray:
        """Per-example gradients ``∇ℓ(θ; x)`` as ``(count, d)`` (parts of one example)."""
        X, y = self._check_data(X, y, 1)
        return self.part_gradients(theta, X[:, None, :], y[:, None], normalizer=1.0)


def numerical_gradient(f, theta: np.ndarray, *, h: float = 1e-6, coords: Any = None) -> np.ndarray:
    """Central finite differences ``(f(θ + h e_k) - f(θ - h e_k)) / (2h)`` on chosen coordinates.

    Independent of the backward pass; used to check it.

    Examples
    --------
    >>> numerical_gradient(lambda t: float(t @ t), np.array([1.0, 2.0])).round(6).tolist()
    [2.0, 4.0]
    """
    theta = np.asarray(theta, dtype=float)
    coords = np.arange(theta.size) if coords is None else np.asarray(coords)
    out = np.empty(coords.size)
    for pos, k in enumerate(coords):  # one scalar function per coordinate: nothing to batch
        e = np.zeros_like(theta)
        e[k] = h
        out[pos] = (f(theta + e) - f(theta - e)) / (2 * h)
    return out
