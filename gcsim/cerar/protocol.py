"""Round-by-round simulator of the CERAR ring protocol (docs/theory.md §50.1, a reconstruction).

Protocol (indices mod N, rounds t = 1..L, L = c + N - 2, packets of w = ceil(d/c) scalars):

* worker i holds G_i in R^{c x w} (row k = k-th contiguous chunk of its zero-padded
  gradient) and its coded symbols x_i^(tau) = A_i[tau, :] G_i (tau = 1..c; 0 otherwise);
* u_i^(0) = 0; in round t worker i sends s_i^(t) = x_i^(t) + u_i^(t-1) to worker i+1,
  receives r = s_{i-1}^(t), strips its own symbol u_i^(t) = r - x_i^(t-N+1) and
  accumulates D_i[:, t] u_i^(t) into its output, which starts at G_i;
* output g_hat_i = G_i + sum_t D_i[:, t] u_i^(t) = sum_j G_j + sum_m E_{i,m} G_{i-m}.

Invariant: u_i^(t) = sum_{m=1}^{N-1} x_{i-m}^(t-m+1).  All N workers act simultaneously,
so every round is a handful of NumPy operations on (N, w) or (N, c, w) arrays; the only
Python loop is over the L rounds (and over the c encoder columns in bfloat16 emulation).

Memory schedule (what ``peak_buffers`` measures): a worker encodes all c symbols up front
(c packets, each freed when it has been stripped, or right after sending for x^(c), which
never comes back), keeps a c-packet state that starts at G_i and into which decoded
contributions are accumulated, and one communication buffer (receive, strip, accumulate,
then add the next symbol in place and send).  The peak, 2c + 1 packets, is reached in
round 1.  (The abstract's 1 + N/c counts c local + N-1 in flight + 1 receive packets; see
docs/theory/50_cerar.md.)

Decoding: with ``accumulate="batched"`` (float32/float64) the u_i^(t) are stored and
g_hat_i = G_i + D_i U_i is formed with one batched matrix product after the last round;
``accumulate="rounds"`` adds each contribution in its round, as a worker would
(``peak_buffers`` always counts the protocol schedule above, not the simulator's U store).
``accumulate="operator"`` skips the rounds: g_hat = Omega G with the ring's end-to-end operator
Omega (:func:`gcsim.cerar.ring.ring_operator`, docs/theory.md §52), one (Nc x Nc) @ (Nc x w)
product -- the same exact value, within the rounding bound of §52.2 of the ring's outputs.
The default ``"auto"`` takes the operator when nothing but the outputs is asked for (``record``
off), in float64, for ``N c <= 128`` (where one dense product beats the rounds,
benchmarks/README.md) and when rounding cannot be seen at all: ``||Phi||_inf u <= sqrt(u)``
with Phi = |Omega| formed from |D| and |A| (§52.3); otherwise it runs the batched rounds.  So
float32, bfloat16, traces and designs whose outputs are rounding-dominated (the floating-point
studies, §50.5) always get the protocol's own arithmetic.

Floating point: ``dtype="float64"`` / ``"float32"`` compute natively (every operation
rounds to the dtype); ``dtype="bfloat16"`` emulates bfloat16 storage and arithmetic: values
are float32 whose mantissa is rounded to 8 bits (round to nearest even) after *every*
arithmetic step: the inputs G, A, D; each product A[tau,k] G[k] and each partial sum of the
encoding; the send addition x + u; the strip subtraction r - x; each product D[:,t] u and
each accumulation into the output state.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validation import check_bool
from ..errors import InvalidArgumentError
from ..limits import array_shape, check_entries
from .design import CerarDesign
from .ring import (
    apply_ring_operator,
    check_host_gradients,
    encode,
    num_rounds,
    packet_size,
    ring_operator,
    run_ring,
    split_gradients,
)

__all__ = ["simulate", "SimulationResult", "round_bfloat16", "resolve_dtype", "unit_roundoff"]

_DTYPES = {"float64": (np.float64, 8), "float32": (np.float32, 4), "bfloat16": (np.float32, 2)}
_ACCUMULATE = ("auto", "batched", "rounds", "operator")
#: largest finite value of each working precision (bfloat16 has float32's exponent range)
_DTYPE_MAX = {
    "float64": float(np.finfo(np.float64).max),
    "float32": float(np.finfo(np.float32).max),
    "bfloat16": 3.3895313892515355e38,
}


def _check_range(g: np.ndarray, name: str) -> float:
    """Refuse gradients beyond the dtype's range (they would become inf); returns max |g|."""
    big = float(np.max(np.abs(g), initial=0.0))
    if big > _DTYPE_MAX[name]:
        raise InvalidArgumentError(
            "gradients",
            f"entries reach {big:.3g}, beyond {name}'s largest finite value {_DTYPE_MAX[name]:.3g} (they would "
            "become inf); scale the gradients or use dtype='float64'",
        )
    return big


def _check_outputs(out: np.ndarray, name: str, big: float, N: int) -> np.ndarray:
    """Refuse outputs that overflowed to inf/NaN (instead of returning them after numpy warnings)."""
    if not np.all(np.isfinite(out)):
        raise InvalidArgumentError(
            "gradients",
            f"the {name} simulation overflowed: the outputs hold inf/NaN (entries up to {big:.3g}, summed over "
            f"N = {N} workers through the design's coefficients, leave {name}'s range {_DTYPE_MAX[name]:.3g}); "
            "scale the gradients" + (" or use dtype='float64'" if name != "float64" else ""),
        )
    return out


#: Largest N c for which "auto" applies the dense (Nc x Nc) operator: its N^2 c^2 w flops beat the
#: rounds' N c (c + L) w flops plus their ~6L passes over (N, w) arrays up to about here (measured
#: with benchmarks/bench_cerar.py, float64: 3.8x faster at (4, 8), d = 1e5; 1.0x at (8, 16), d = 1e5,
#: 2.1x at d = 1e6; 0.7x at (16, 32), d = 1e5).
OPERATOR_MAX_NC = 128


def round_bfloat16(x: np.ndarray) -> np.ndarray:
    """Round float32 values to bfloat16 precision (8-bit mantissa), round to nearest even.

    Returns float32.  NaN stays NaN; values beyond the bfloat16 range round to +-inf.

    Examples
    --------
    >>> round_bfloat16(np.array([1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-7 + 2**-9], dtype=np.float32)).tolist()
    [1.0, 1.015625, 1.0078125]
    """
    a = np.ascontiguousarray(x, dtype=np.float32)
    bits = a.view(np.uint32)
    # round-to-nearest-even on the 16 dropped bits: add 0x7FFF plus the lowest kept bit
    rounded = (bits + (np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1)))) & np.uint32(0xFFFF0000)
    out = rounded.view(np.float32)
    nan = np.isnan(a)
    if nan.any():
        out = np.where(nan, a, out)
    return out


def resolve_dtype(dtype: Any) -> str:
    """Normalise a dtype argument to "float64", "float32" or "bfloat16" (None -> float64)."""
    if dtype is None:
        return "float64"
    if isinstance(dtype, str) and dtype in _DTYPES:
        return dtype
    try:
        name = np.dtype(dtype).name
    except TypeError:
        name = None
    if name in ("float64", "float32"):
        return name
    raise InvalidArgumentError("dtype", f"must be 'float64', 'float32' or 'bfloat16', got {dtype!r}")


def unit_roundoff(dtype: Any) -> float:
    """u = 2^-p: 2^-53 (float64), 2^-24 (float32), 2^-8 (bfloat16)."""
    return {"float64": 2.0**-53, "float32": 2.0**-24, "bfloat16": 2.0**-8}[resolve_dtype(dtype)]


@dataclass(frozen=True, eq=False)
class SimulationResult:
    """Outcome of :func:`simulate`.

    Attributes
    ----------
    outputs : ndarray (N, d)
        g_hat_i of every worker (float64 copy of the working-precision values).
    rounds : int
        Number of communication rounds L = c + N - 2.
    bytes_sent, packets_sent : ndarray (N,) int64
        Per worker: L packets of w = ceil(d/c) scalars of ``itemsize`` bytes each.
    peak_buffers : ndarray (N,) int64
        Measured peak number of live packet buffers per worker (see module docstring).
    packet_size : int
        w = ceil(d / c).
    dtype : str
        Working precision.
    traces : dict or None
        With ``record=True``: ``"u"`` (L, N, w) the stripped sums u_i^(t), ``"sent"``
        (L, N, w) the packets s_i^(t), ``"live"`` (L,) live buffers per worker per round.
    """

    outputs: np.ndarray
    rounds: int
    bytes_sent: np.ndarray
    packets_sent: np.ndarray
    peak_buffers: np.ndarray
    packet_size: int
    dtype: str
    traces: dict[str, np.ndarray] | None = field(default=None, repr=False)


def _identity(a: np.ndarray) -> np.ndarray:
    return a


def _live_buffers(N: int, c: int) -> np.ndarray:
    """Live packet buffers of a worker after each round of the schedule (module docstring).

    State (c packets) + the symbols not yet freed + one communication buffer: symbol x^(c) is
    freed right after it is sent (round c), symbol x^(k+1) when it has been stripped (round
    N + k, k = 0..c-2).  Before round 1 all 2c + 1 are live.
    """
    L = num_rounds(N, c)
    t = np.arange(1, L + 1)
    freed = (t >= c).astype(np.int64) + np.clip(t - N + 1, 0, c - 1)
    return (c + c - freed + 1).astype(np.int64)


def _check_design(design: Any) -> CerarDesign:
    if not isinstance(design, CerarDesign):
        raise InvalidArgumentError("design", f"must be a CerarDesign, got {type(design).__name__}")
    return design


def _operator_is_invisible(design: CerarDesign, dtype: str) -> bool:
    """Whether "auto" may apply the end-to-end operator: float64, N c <= OPERATOR_MAX_NC, and a
    rounding bound below sqrt(u): ||Phi||_inf u <= sqrt(u) with Phi = |Omega| formed from |D| and
    |A| (docs/theory.md §52.3), i.e. the routes agree to about 8 digits relative to max |G|."""
    if dtype != "float64" or design.N * design.c > OPERATOR_MAX_NC:
        return False
    Phi = ring_operator(np.abs(design.encoders), np.abs(design.decoders))
    u = unit_roundoff(dtype)
    return bool(np.max(Phi.sum(axis=1)) * u <= np.sqrt(u))


@np.errstate(over="ignore", invalid="ignore")  # an overflow is refused below, not warned about
def simulate(
    design: CerarDesign,
    gradients: Any,
    *,
    dtype: Any = None,
    record: bool = False,
    warn: bool = True,
    accumulate: str = "auto",
) -> SimulationResult:
    """Simulate the CERAR ring on real arrays, round by round, all workers at once.

    Parameters
    ----------
    design : CerarDesign
        Encoders A_j (N, c, c) and decoders D_i (N, c, L).
    gradients : array (N, d)
        Local gradient g_i of worker i; any d >= 0 (zero-padded to c * ceil(d/c)).
    dtype : {"float64", "float32", "bfloat16"}, optional
        Working precision (default float64); bfloat16 is emulated (module docstring).
    record : bool
        Keep per-round traces (u, sent packets, live buffers) for inspection.
    accumulate : {"auto", "batched", "rounds", "operator"}
        How the outputs are formed: "rounds" adds D_i[:, t] u_i^(t) to the output state in
        every round (the protocol's order; always used for bfloat16); "batched" stores the
        u_i^(t) and forms G_i + D_i U_i with one batched matrix product at the end; "operator"
        applies the end-to-end operator, g_hat = Omega G, without running the rounds (float32 /
        float64, ``record`` off).  All equal in exact arithmetic; the rounding of each is bounded
        in docs/theory.md §52.  "auto" = operator where rounding is invisible (module
        docstring: float64, N c <= 128, ||Phi||_inf u <= sqrt(u), no ``record``), else batched
        (float32/float64) or rounds (bfloat16).
    warn : bool
        Warn (RuntimeWarning) when max kappa(A_j) * u > 0.1, i.e. the dtype cannot carry
        the design's conditioning.

    Returns
    -------
    SimulationResult

    Raises
    ------
    InvalidArgumentError
        Gradients that are not a finite real (N, d) array, entries beyond the dtype's largest
        finite value, or outputs that overflow it (inf/NaN) on the way: a clear error instead
        of inf/NaN and numpy's warnings.

    Examples
    --------
    >>> from gcsim.cerar import design
    >>> g = np.arange(12.0).reshape(3, 4)
    >>> res = simulate(design(3, 2, "exact"), g)
    >>> np.allclose(res.outputs, g.sum(0))
    True
    >>> res.rounds, res.bytes_sent.tolist(), res.packet_size
    (3, [48, 48, 48], 2)
    """
    record = check_bool("record", record)
    warn = check_bool("warn", warn)
    design = _check_design(design)
    N, c, L = design.N, design.c, design.L
    # the logical size (a zero-stride view counts every entry), before the float64 copy
    check_entries("gradients", array_shape(gradients), "the gradients (N x d)")
    g = check_host_gradients(gradients, N)
    name = resolve_dtype(dtype)
    big = _check_range(g, name)
    if accumulate not in _ACCUMULATE:
        raise InvalidArgumentError(
            "accumulate", f"must be 'auto', 'batched', 'rounds' or 'operator', got {accumulate!r}"
        )
    work, itemsize = _DTYPES[name]
    bf16 = name == "bfloat16"
    rnd = round_bfloat16 if bf16 else _identity
    d = g.shape[1]
    w = packet_size(d, c)

    if warn and name != "float64":
        kappa = float(np.max(np.linalg.cond(design.encoders)))
        if kappa * unit_roundoff(name) > 0.1:
            warnings.warn(
                f"max kappa(A_j) = {kappa:.3g} exceeds what {name} can carry "
                f"(kappa * u = {kappa * unit_roundoff(name):.2g}); outputs are unreliable",
                RuntimeWarning,
                stacklevel=2,
            )

    if accumulate == "operator" and (bf16 or record):
        raise InvalidArgumentError(
            "accumulate",
            "'operator' forms the outputs without running the rounds: it has no bfloat16 emulation "
            "and no per-round traces (record=True); use 'batched' or 'rounds'",
        )
    live = _live_buffers(N, c)
    packets = np.full(N, L, dtype=np.int64)
    peak = int(max(2 * c + 1, live.max(initial=0)))
    if accumulate == "operator" or (accumulate == "auto" and not record and _operator_is_invisible(design, name)):
        Omega = ring_operator(design.encoders.astype(work), design.decoders.astype(work))
        # no padding needed: the rows of g are already the c chunks (read only, never written)
        G = g.reshape(N, c, w) if d == c * w and g.dtype == work else split_gradients(g, c, work)
        state = apply_ring_operator(Omega, G)
        out = state.reshape(N, c * w)[:, :d]
        return SimulationResult(
            outputs=_check_outputs(
                out if d == c * w and out.dtype == np.float64 else out.astype(np.float64), name, big, N
            ),
            rounds=L,
            bytes_sent=packets * w * itemsize,
            packets_sent=packets,
            peak_buffers=np.full(N, peak, dtype=np.int64),
            packet_size=w,
            dtype=name,
            traces=None,
        )
    G = rnd(split_gradients(g, c, work))
    A = rnd(design.encoders.astype(work))
    D = rnd(design.decoders.astype(work))
    # encode all c symbols up front: X[:, tau] = A_i[tau, :] G_i
    X = encode(A, G, xp=np, rnd=rnd if bf16 else None)
    shape = (L if record else 0, N, w)  # traces are kept only with record=True
    tr_u, tr_s = np.zeros(shape), np.zeros(shape)

    def trace(t: int, s: np.ndarray, u: np.ndarray) -> None:
        tr_s[t - 1] = s
        tr_u[t - 1] = u

    state = run_ring(
        X, G, D, xp=np, rnd=rnd, per_round=bf16 or accumulate == "rounds", on_round=trace if record else None
    )
    out = state.reshape(N, c * w)[:, :d].astype(np.float64)
    traces = {"u": tr_u, "sent": tr_s, "live": live} if record else None
    return SimulationResult(
        outputs=_check_outputs(out, name, big, N),
        rounds=L,
        bytes_sent=packets * w * itemsize,
        packets_sent=packets,
        peak_buffers=np.full(N, peak, dtype=np.int64),
        packet_size=w,
        dtype=name,
        traces=traces,
    )
