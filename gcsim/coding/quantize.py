r"""Quantized gradient coding: the expected error of quantized coded messages, its bound, bit allocation
and error feedback (theory §58).

Worker ``j`` sends ``Q(y_j)`` instead of its coded message ``y_j = Σ_k Σ_i B[kN+i, j] g_i[k] ∈ R^w``
(theory §5.1), with ``Q`` a stochastic-rounding quantizer of :mod:`gcsim.coding.quantizers` at
``b_j`` bits per coordinate (plus its 32-bit scale).  The master decodes the quantized messages of the
non-stragglers ``F`` with a decoder ``X`` (default: the optimal one, ``X = B_F⁺ T``):
``ĝ[l] = Σ_{j∈F} X[j, l] Q(y_j)``.  Theorem 58.2 splits the expected squared error exactly,

``E‖ĝ - g‖² = ‖𝒢 (B_F X_F - T)‖²  +  Σ_{j∈F} Σ_l X[j, l]² Σ_c Var Q(y_j)_c``
(decoding term + quantization term; the second summed over the coordinates kept, not the padding),

and bounds the quantization term by ``Σ_j ‖X_j‖² w s_j² / (2^{b_j} - 1)²`` (``s_j`` the scale) and
the whole error by ``‖𝒢‖₂² (‖B_F X_F - T‖_F² + w Σ_j ‖X_j‖² ‖B_{:,j}‖² / (2^{b_j} - 1)²)``.

* :func:`quantized_error` -- both terms exactly and both bounds, for one pattern;
  :func:`expected_quantized_error` -- averaged over the straggler patterns;
* :func:`coded_messages`, :func:`decode` -- the messages ``y_j`` and the decoded gradient;
* :func:`allocate_bits` -- the integer bit allocation minimizing ``Σ_j a_j / (2^{b_j} - 1)²`` under a
  total budget (greedy, optimal by Theorem 58.3); :func:`allocation_weights` gives the ``a_j`` of the
  expected code-level bound over straggler patterns;
* :class:`ErrorFeedback` -- per-worker residuals added to the next message (theory §58.4);
* :func:`message_bits` -- the bits one worker sends per step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import check_finite_array, check_int, check_mask
from ..errors import InvalidArgumentError
from ..limits import check_entries
from .bounds import split_blocks
from .decoders import optimal_decoder
from .quantizers import MAX_BITS, Quantizer, as_bits, get_quantizer
from .schemes import target_matrix

__all__ = [
    "SCALE_BITS",
    "TIE_RTOL",
    "QuantizedError",
    "coded_messages",
    "decode",
    "quantized_error",
    "expected_quantized_error",
    "bound_objective",
    "allocate_bits",
    "allocation_weights",
    "message_bits",
    "ErrorFeedback",
]

#: Bits of the scale sent with every quantized message (a float32).
SCALE_BITS = 32


def _scheme_arrays(scheme: Any) -> tuple[np.ndarray, int]:
    B = getattr(scheme, "B", None)
    m = getattr(scheme, "m", None)
    if B is None or m is None:
        raise InvalidArgumentError("scheme", "must be a Scheme (see gcsim.coding.encode)")
    B = check_finite_array("scheme.B", B, ndim=2)
    m = check_int("scheme.m", m, minimum=1)
    if B.shape[0] % m:
        raise InvalidArgumentError("scheme", f"B has {B.shape[0]} rows, not a multiple of m = {m}")
    return B, m


def _blocks(gradients: Any, N: int, m: int) -> np.ndarray:
    G = check_finite_array("gradients", gradients, ndim=2)
    if G.shape[0] != N or G.shape[1] == 0:
        raise InvalidArgumentError("gradients", f"must have shape (N, d) with N = {N} and d >= 1, got {G.shape}")
    return split_blocks(G, m)


def coded_messages(scheme: Any, gradients: Any) -> np.ndarray:
    """The workers' exact messages ``y_j = Σ_k Σ_i B[kN+i, j] g_i[k]``, shape ``(n, w)``, ``w = ⌈d/m⌉``.

    Examples
    --------
    >>> from gcsim.coding.schemes import encode
    >>> sch = encode(np.array([[1, 1], [0, 1]]), 1, "naive")
    >>> coded_messages(sch, [[1.0, 2.0], [3.0, 4.0]]).tolist()     # worker 1 holds both parts
    [[1.0, 2.0], [4.0, 6.0]]
    """
    B, m = _scheme_arrays(scheme)
    N = B.shape[0] // m
    blocks = _blocks(gradients, N, m)
    return np.einsum("kij,ikw->jw", B.reshape(m, N, B.shape[1]), blocks)


def decode(decoder: Any, messages: Any, d: int) -> np.ndarray:
    """``ĝ`` of length ``d`` from messages ``(n, w)`` (exact or quantized): block ``l`` is ``Σ_j X[j, l] y_j``.

    Examples
    --------
    >>> decode([[1.0], [1.0]], [[1.0, 2.0], [3.0, 4.0]], 2).tolist()
    [4.0, 6.0]
    """
    X = check_finite_array("decoder", decoder, ndim=2)
    Y = check_finite_array("messages", messages, ndim=2)
    d = check_int("d", d, minimum=1)
    if X.shape[0] != Y.shape[0] or X.shape[1] * Y.shape[1] < d:
        raise InvalidArgumentError(
            "decoder", f"shape {X.shape} does not fit messages of shape {Y.shape} and d = {d} (need n rows, m w >= d)"
        )
    return (X.T @ Y).reshape(-1)[:d]


def _kept(m: int, w: int, d: int) -> np.ndarray:
    """``(m, w)`` 1.0 where block ``l``, coordinate ``c`` is a gradient coordinate (``l w + c < d``), 0.0 on padding."""
    return (np.arange(m * w).reshape(m, w) < d).astype(float)


@dataclass(frozen=True)
class QuantizedError:
    """The expected squared error of one straggler pattern with quantized messages (theory §58.2).

    Attributes
    ----------
    decoding : float
        ``‖ĝ₀ - g‖²``, ``ĝ₀`` decoded from the exact messages.
    quantization : float
        ``Σ_j Σ_l X[j, l]² Σ_c Var Q(y_j)_c`` over the kept coordinates (exact, closed form).
    total : float
        ``decoding + quantization = E‖ĝ - g‖²`` (Theorem 58.2).
    quantization_bound : float
        ``Σ_j ‖X_j‖² w s_j² / (2^{b_j} - 1)² ≥ quantization`` (Theorem 58.2 (ii)).
    code_bound : float
        ``‖𝒢‖₂² (‖B_F X_F - T‖_F² + w Σ_j ‖X_j‖² ‖B_{:,j}‖² / (2^{b_j} - 1)²) ≥ total`` (Theorem 58.2 (iii)).
    matrix_error : float
        ``‖B_F X_F - T‖_F²`` (``err(B, F)`` for the optimal decoder).
    gradient_norm2 : float
        ``‖𝒢‖₂²``, the squared spectral norm of the ``w x mN`` matrix of padded blocks.
    """

    decoding: float
    quantization: float
    total: float
    quantization_bound: float
    code_bound: float
    matrix_error: float
    gradient_norm2: float


def quantized_error(
    scheme: Any,
    gradients: Any,
    nonstragglers: Any,
    bits: Any,
    *,
    quantizer: str | Quantizer = "maxabs",
    decoder: Any = None,
) -> QuantizedError:
    """Exact ``E‖ĝ - g‖²`` over the stochastic rounding of the messages, and its bounds (Theorem 58.2).

    Parameters
    ----------
    scheme : Scheme
        The encoder ``B`` (``mN x n``) and ``m``.
    gradients : array_like (N, d)
        The part gradients ``g_i``.
    nonstragglers : array_like of bool (n,)
        The workers heard from.
    bits : int or array_like of int (n,)
        Bits per coordinate of each worker's message, in ``1..32``.
    quantizer : str or Quantizer
        A name of :func:`gcsim.coding.quantizers.quantizer_names` (``"maxabs"``, ``"norm"``).
    decoder : array_like (n, m), optional
        Default: the optimal decoder ``B_F⁺ T``; its rows off ``F`` are set to zero.

    Returns
    -------
    QuantizedError

    Examples
    --------
    >>> from gcsim.coding.schemes import encode
    >>> sch = encode(np.eye(2, dtype=int), 1, "naive")              # uncoded, both arrive
    >>> r = quantized_error(sch, [[1.0, 0.0], [0.5, -1.0]], [True, True], 1)
    >>> r.decoding, r.quantization                                  # 1 bit: levels ±s
    (0.0, 1.75)
    >>> r.quantization <= r.quantization_bound <= r.code_bound
    True
    """
    B, m = _scheme_arrays(scheme)
    mN, n = B.shape
    N = mN // m
    blocks = _blocks(gradients, N, m)
    d = int(np.asarray(gradients).shape[1])
    w = blocks.shape[2]
    mask = check_mask("nonstragglers", nonstragglers, n)
    if mask.ndim != 1:
        raise InvalidArgumentError("nonstragglers", "must be a single mask of shape (n,)")
    b = as_bits(bits, (n,))
    q = get_quantizer(quantizer)
    if decoder is None:
        X = optimal_decoder(scheme, mask)
    else:
        X = check_finite_array("decoder", decoder, ndim=2).copy()
        if X.shape != (n, m):
            raise InvalidArgumentError("decoder", f"must have shape (n, m) = {(n, m)}, got {X.shape}")
    X[~mask] = 0.0  # a decoder uses the arrived messages only
    Y = np.einsum("kij,ikw->jw", B.reshape(m, N, n), blocks)
    g = blocks.sum(axis=0).reshape(-1)[:d]
    decoding = float(np.sum((decode(X, Y, d) - g) ** 2))
    var = q.variance(Y, b)  # (n, w)
    quantization = float(np.sum(X**2 * (var @ _kept(m, w, d).T)))
    row_norm2 = np.sum(X**2, axis=1)
    quantization_bound = float(np.sum(row_norm2 * q.variance_bound(Y, b)))
    stacked = np.swapaxes(blocks, 0, 1).reshape(mN, w)  # row kN + i = g_i[k]: 𝒢ᵀ
    gradient_norm2 = float(np.linalg.norm(stacked, 2) ** 2)
    matrix_error = float(np.sum((B @ X - target_matrix(m, N)) ** 2))
    phi = 1.0 / (2.0**b - 1.0) ** 2
    code_bound = gradient_norm2 * (matrix_error + w * float(np.sum(row_norm2 * np.sum(B**2, axis=0) * phi)))
    return QuantizedError(
        decoding=decoding,
        quantization=quantization,
        total=decoding + quantization,
        quantization_bound=quantization_bound,
        code_bound=code_bound,
        matrix_error=matrix_error,
        gradient_norm2=gradient_norm2,
    )


def _pattern_probabilities(probabilities: Any, count: int) -> np.ndarray:
    """``π(F)`` of ``count`` patterns: equal by default, else non-negative and summing to 1."""
    if probabilities is None:
        return np.full(count, 1.0 / count)
    pi = check_finite_array("probabilities", probabilities, ndim=1)
    if pi.shape != (count,) or np.any(pi < 0) or abs(pi.sum() - 1.0) > 1e-9:
        raise InvalidArgumentError("probabilities", f"must be {count} non-negative numbers summing to 1")
    return pi


def expected_quantized_error(
    scheme: Any,
    gradients: Any,
    masks: Any,
    bits: Any,
    *,
    probabilities: Any = None,
    quantizer: str | Quantizer = "maxabs",
) -> QuantizedError:
    """:func:`quantized_error` averaged over straggler patterns ``F`` with probabilities ``π(F)``.

    Every field is ``Σ_F π(F) · field(F)`` (optimal decoder per pattern): ``total`` is then the exact
    ``E_F E_Q ‖ĝ - g‖²`` when the patterns and ``π`` are the whole straggler law (e.g. every Bernoulli
    pattern with its probability), and the bounds stay bounds of it.

    Parameters
    ----------
    scheme, gradients, bits, quantizer
        As :func:`quantized_error`.
    masks : array_like of bool (count, n)
        The non-straggler patterns.
    probabilities : array_like (count,), optional
        ``π(F)`` (default: equal weights, the mean over the masks); non-negative, summing to 1.

    Examples
    --------
    >>> from gcsim.coding.schemes import encode
    >>> sch = encode(np.eye(2, dtype=int), 1, "naive")
    >>> G = [[1.0, 0.0], [0.5, -1.0]]
    >>> both, one = quantized_error(sch, G, [True, True], 1), quantized_error(sch, G, [True, False], 1)
    >>> r = expected_quantized_error(sch, G, [[True, True], [True, False]], 1, probabilities=[0.75, 0.25])
    >>> bool(np.isclose(r.total, 0.75 * both.total + 0.25 * one.total))
    True
    """
    B, _ = _scheme_arrays(scheme)
    mk = check_mask("masks", masks, B.shape[1])
    mk = mk[None] if mk.ndim == 1 else mk
    pi = _pattern_probabilities(probabilities, mk.shape[0])
    rows = [quantized_error(scheme, gradients, row, bits, quantizer=quantizer) for row in mk]
    fields = QuantizedError.__dataclass_fields__
    mean = {f: float(sum(p * getattr(r, f) for p, r in zip(pi, rows, strict=True))) for f in fields}
    mean["gradient_norm2"] = rows[0].gradient_norm2  # the same for every pattern
    return QuantizedError(**mean)


def _weights(weights: Any) -> np.ndarray:
    a = check_finite_array("weights", weights, ndim=1)
    if a.size == 0 or np.any(a < 0):
        raise InvalidArgumentError("weights", "must be a non-empty vector of non-negative numbers")
    return a


def bound_objective(weights: Any, bits: Any) -> float:
    """``Σ_j a_j / (2^{b_j} - 1)²``, the quantity :func:`allocate_bits` minimizes.

    Examples
    --------
    >>> bound_objective([1.0, 9.0], [1, 2])
    2.0
    """
    a = _weights(weights)
    b = as_bits(bits, a.shape)
    return float(np.sum(a / (2.0**b - 1.0) ** 2))


#: Relative gap below which two of :func:`allocate_bits`'s per-bit gains are one tie: weights that are equal
#: in exact arithmetic (symmetric workers) differ by round-off that depends on the BLAS kernel, and must
#: not decide which worker gets the bit.
TIE_RTOL = 1e-9


def allocate_bits(weights: Any, total: int, *, min_bits: int = 1, max_bits: int = 16) -> np.ndarray:
    """Integer bits per worker minimizing ``Σ_j a_j / (2^{b_j} - 1)²`` with ``Σ_j b_j = total`` (Theorem 58.3).

    Greedy: start every worker at ``min_bits`` and give the remaining bits one at a time to the
    worker whose term drops most.  The per-bit decrease of each term shrinks as its bits grow (the map
    ``b ↦ (2^b - 1)^{-2}`` is convex), so the greedy choice is optimal, and it takes the
    ``total - n min_bits`` largest of all the per-bit decreases.  Decreases within a relative
    :data:`TIE_RTOL` of the next larger one count as a tie, won by the lowest index: round-off in the
    weights does not pick the worker (a decrease taken in a tie group of ``L`` is at least
    ``(1 - TIE_RTOL)^(L-1)`` times any it displaces; theory §58.3).

    Parameters
    ----------
    weights : array_like (n,)
        ``a_j ≥ 0`` (e.g. :func:`allocation_weights`).
    total : int
        The budget ``Σ_j b_j``, between ``n min_bits`` and ``n max_bits``.
    min_bits, max_bits : int
        Bounds on every ``b_j`` (``1 ≤ min_bits ≤ max_bits ≤ 32``).

    Returns
    -------
    numpy.ndarray of int64 (n,)

    Examples
    --------
    >>> allocate_bits([1.0, 4.0, 16.0], 9).tolist()     # 4x the weight: about one more bit
    [2, 3, 4]
    >>> allocate_bits([1.0, 1.0 + 1e-15, 1.0], 4).tolist()     # equal up to round-off: the lowest index
    [2, 1, 1]
    """
    a = _weights(weights)
    min_bits = check_int("min_bits", min_bits, minimum=1, maximum=MAX_BITS)
    max_bits = check_int("max_bits", max_bits, minimum=min_bits, maximum=MAX_BITS)
    n = a.size
    total = check_int("total", total, minimum=n * min_bits, maximum=n * max_bits)
    extra = total - n * min_bits
    b = np.full(n, min_bits, dtype=np.int64)
    if extra == 0:
        return b
    # the decrease of worker j's term when its bits go from k to k + 1, for k = min_bits .. max_bits - 1
    k = np.arange(min_bits, max_bits)
    step = 1.0 / (2.0**k - 1.0) ** 2 - 1.0 / (2.0 ** (k + 1) - 1.0) ** 2
    gain = (a[:, None] * step[None, :]).ravel()  # (j, k) row-major: index j * len(k) + (k - min_bits)
    order = np.argsort(-gain)  # equal gains in any order: a tie group is sorted by worker below
    sorted_gain = gain[order]
    # a new tie group starts where a decrease falls more than TIE_RTOL below the previous one
    starts = sorted_gain[1:] < sorted_gain[:-1] * (1.0 - TIE_RTOL)
    group = np.concatenate(([0], np.cumsum(starts)))
    # within a group, by worker then by bit (a worker's decreases shrink ~4x per bit, so only zero
    # decreases share a group with another of the same worker, and they are taken bit by bit)
    taken = order[np.lexsort((order, group))][:extra]
    np.add.at(b, taken // k.size, 1)
    return b


def allocation_weights(scheme: Any, masks: Any, *, probabilities: Any = None, decoders: Any = None) -> np.ndarray:
    """``a_j = Σ_F π(F) ‖X_j(F)‖² ‖B_{:,j}‖²``: the weights of the expected code-level bound (Theorem 58.3).

    With these weights :func:`allocate_bits` minimizes the expectation over the patterns ``F`` (with
    probabilities ``π``) of the quantization part of Theorem 58.2 (iii), the part that depends on the bits.

    Parameters
    ----------
    scheme : Scheme
    masks : array_like of bool (count, n)
        The straggler patterns (non-straggler masks), e.g. every pattern of a
        :class:`gcsim.coding.stragglers.AllPatternsModel`, or samples.
    probabilities : array_like (count,), optional
        ``π(F)`` (default: equal, the mean over the masks); they must sum to 1.
    decoders : array_like (count, n, m), optional
        The decoder of each pattern (default: the optimal one).

    Examples
    --------
    >>> from gcsim.coding.schemes import encode
    >>> sch = encode(np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]]), 1, "naive")
    >>> allocation_weights(sch, [[True, True, True]]).round(6).tolist()
    [0.5, 0.5, 0.5]
    """
    B, m = _scheme_arrays(scheme)
    n = B.shape[1]
    mk = check_mask("masks", masks, n)
    mk = mk[None] if mk.ndim == 1 else mk
    count = mk.shape[0]
    pi = _pattern_probabilities(probabilities, count)
    if decoders is None:
        X = np.stack([optimal_decoder(scheme, row) for row in mk])
    else:
        X = check_finite_array("decoders", decoders, ndim=3)
        if X.shape != (count, n, m):
            raise InvalidArgumentError("decoders", f"must have shape {(count, n, m)}, got {X.shape}")
        X = X * mk[:, :, None]
    return (pi @ np.sum(X**2, axis=2)) * np.sum(B**2, axis=0)


def message_bits(d: int, m: int, bits: int, *, scale_bits: int = SCALE_BITS) -> int:
    """Bits one worker sends per step: ``⌈d/m⌉ b`` plus the scale (``scale_bits``; 0 for unquantized floats).

    Examples
    --------
    >>> message_bits(1000, 4, 8), message_bits(1000, 1, 32, scale_bits=0)
    (2032, 32000)
    """
    d = check_int("d", d, minimum=1)
    m = check_int("m", m, minimum=1)
    bits = check_int("bits", bits, minimum=1, maximum=64)
    scale_bits = check_int("scale_bits", scale_bits, minimum=0)
    return -(-d // m) * bits + scale_bits


class ErrorFeedback:
    """Per-worker error feedback: send ``Q(y_j + e_j)``, keep ``e_j ← y_j + e_j - Q(y_j + e_j)`` (theory §58.4).

    Every worker updates its residual whether or not its message arrives (a worker does not know it
    straggled).  After ``T`` steps from ``e = 0``, ``Σ_t Q_t + e_T = Σ_t y_t`` for every worker.

    Parameters
    ----------
    quantizer : str or Quantizer
    shape : tuple of int
        ``(n, w)``: the workers' messages.

    Examples
    --------
    >>> ef = ErrorFeedback("maxabs", (1, 2))
    >>> rng = np.random.default_rng(0)
    >>> sent = [ef.send([[0.3, -1.0]], 1, rng) for _ in range(3)]
    >>> bool(np.allclose(sum(sent) + ef.residual, 3 * np.array([[0.3, -1.0]])))
    True
    """

    def __init__(self, quantizer: str | Quantizer, shape: tuple[int, int]):
        self.quantizer = get_quantizer(quantizer)
        if not (isinstance(shape, tuple) and len(shape) == 2):
            raise InvalidArgumentError("shape", f"must be a tuple (n, w), got {shape!r}")
        n = check_int("shape[0]", shape[0], minimum=1)
        w = check_int("shape[1]", shape[1], minimum=1)
        check_entries("shape", (n, w), "the residuals (n x w)")
        self.residual = np.zeros((n, w))

    def send(self, messages: Any, bits: Any, rng: Any) -> np.ndarray:
        """The quantized messages to send this step; updates :attr:`residual`."""
        y = check_finite_array("messages", messages, ndim=2)
        if y.shape != self.residual.shape:
            raise InvalidArgumentError("messages", f"must have shape {self.residual.shape}, got {y.shape}")
        z = y + self.residual
        q = self.quantizer.quantize(z, bits, rng)
        self.residual = z - q
        return q
