"""First-order rounding bounds of the NumPy MLP's loss and backpropagated gradient, for the tests.

Higham, *Accuracy and Stability of Numerical Algorithms* (2002), Lemma 3.3 / Thm 3.1, as in
tests/tolerances.py; built from the inputs only (no gcsim code).
"""

from __future__ import annotations

import numpy as np

from tolerances import SAFETY, gamma


def g_(n):
    """SAFETY · γ_n (Higham Thm 3.1: relative error of n rounded operations)."""
    return SAFETY * gamma(n)


def backprop_bounds(sizes, activation, theta, X, y, normalizer=None, weights=None):
    """First-order rounding bounds of the MLP's loss and of its backpropagated gradient.

    Forward: ``z_l = a_{l-1} W_l + b_l`` is a ``(fan_in + 1)``-term sum, so its error is
    ``γ_{fan_in+1} M_l + E_{l-1}|W_l|`` with magnitudes ``M_l = M_{l-1}|W_l| + |b_l| >= |z_l|``
    (Higham Lemma 3.3) and the propagated input error; ``tanh`` and ``relu`` are 1-Lipschitz.
    Softmax cross-entropy ``lse(z) − z_y``: ``lse`` is 1-Lipschitz in the max-norm, plus the
    rounding of ``C`` exponentials, their sum and one log.  Backward: the same rule for
    ``δ_l = (δ_{l+1} W_{l+1}ᵀ) ∘ φ'(z_l)`` (``|φ'| <= 1``; ``tanh' = 1 − a²`` moves by ``2|Δa|``)
    and for the sums over the batch.  Valid when no ReLU pre-activation lies within its error
    of the kink (checked).  Returns ``(loss bound, gradient bound (d,))``; two implementations
    of the same quantity then differ by at most twice the bound.
    """
    X = np.asarray(X, float)
    B = X.shape[0]
    C = sizes[-1]
    Z = float(B) if normalizer is None else float(normalizer)
    w = np.ones(B) if weights is None else np.abs(np.asarray(weights, float))
    layers, off = [], 0
    for fi, fo in zip(sizes[:-1], sizes[1:], strict=True):
        W = theta[off : off + fi * fo].reshape(fi, fo)
        off += fi * fo
        layers.append((W, theta[off : off + fo]))
        off += fo
    tanh = activation == "tanh"
    acts, mags, errs, hidden = [X], [np.abs(X)], [np.zeros_like(X)], []
    for idx, (W, b) in enumerate(layers):
        z = acts[-1] @ W + b
        Mz = mags[-1] @ np.abs(W) + np.abs(b)
        ez = errs[-1] @ np.abs(W) + g_(W.shape[0] + 1) * Mz
        if idx == len(layers) - 1:
            logits, e_log = z, ez
            break
        a = np.tanh(z) if tanh else np.maximum(z, 0.0)
        if not tanh:
            assert np.all(np.abs(z) > ez), "a ReLU pre-activation within rounding of 0: no bound"
        ea = ez + g_(1) * np.abs(a)
        hidden.append((a, ea))
        acts.append(a)
        mags.append(Mz)
        errs.append(ea)
    zmax = np.abs(logits).max(axis=1)
    ce_err = 2 * e_log.max(axis=1) + g_(C + 4) * (1 + 2 * zmax + np.log(C))
    zs = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(zs) / np.exp(zs).sum(axis=1, keepdims=True)
    ce = np.log(np.exp(zs).sum(axis=1)) - zs[np.arange(B), y]
    loss_bound = float(ce_err.mean() + g_(B) * np.abs(ce).mean())
    onehot = np.zeros_like(p)
    onehot[np.arange(B), y] = 1.0
    D = (p + onehot) * w[:, None] / Z  # |δ| magnitude
    eps = p * (ce_err + g_(1))[:, None] * w[:, None] / Z + g_(3) * D
    grad = np.zeros(theta.size)
    slices, off = [], 0
    for W, b in layers:
        slices.append((slice(off, off + W.size), slice(off + W.size, off + W.size + b.size)))
        off += W.size + b.size
    for idx in range(len(layers) - 1, -1, -1):
        W = layers[idx][0]
        ws, bs = slices[idx]
        grad[ws] = (g_(B + 1) * mags[idx].T @ D + errs[idx].T @ D + mags[idx].T @ eps).reshape(-1)
        grad[bs] = g_(B) * D.sum(axis=0) + eps.sum(axis=0)
        if idx:
            Dt = D @ np.abs(W).T
            et = eps @ np.abs(W).T + g_(W.shape[1] + 1) * Dt
            a, ea = hidden[idx - 1]
            eps = et + (Dt * (2 * ea + g_(3)) if tanh else 0.0)
            D = Dt
    return loss_bound, grad
