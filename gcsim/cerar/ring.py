"""The CERAR ring protocol, written once against the array API (docs/theory.md §50).

Every implementation of the ring runs these lines: the simulator
(:func:`gcsim.cerar.protocol.simulate`, NumPy with optional bfloat16 emulation), the executor on
real arrays (:func:`gcsim.executor.cerar_arrays.run_cerar`, NumPy, CuPy or torch) and the
torch.distributed collective (:func:`gcsim.executor.collectives.cerar_all_reduce`, one rank at a
time).  They differ only in the array namespace passed and in the *transport*, how a packet
travels: :class:`RollTransport` (all N workers in memory, a roll over the worker axis) or a
transport posting real ``isend``/``irecv`` (:mod:`gcsim.executor.collectives`).

Protocol (indices mod N, rounds t = 1..L, L = c + N - 2, packets of w = ceil(d/c) scalars):

* worker i holds G_i in R^{c x w} (row k = k-th contiguous chunk of its zero-padded gradient)
  and its coded symbols x_i^(tau) = A_i[tau, :] G_i (tau = 1..c);
* u_i^(0) = 0; in round t worker i sends s_i^(t) = x_i^(t) + u_i^(t-1) (just u_i^(t-1) once
  t > c) to worker i+1, receives r = s_{i-1}^(t) and strips its own symbol,
  u_i^(t) = r - x_i^(t-N+1) (when 1 <= t-N+1 <= c-1; x^(c) never comes back);
* output g_hat_i = G_i + sum_t D_i[:, t] u_i^(t) = G_i + D_i U_i.

Invariant: u_i^(t) = sum_{m=1}^{N-1} x_{i-m}^(t-m+1), so that
g_hat_i = G_i + sum_m (D_i S_{m-1} A_{i-m}) G_{i-m} (:func:`ring_operator`, docs/theory.md §52)
= sum_j G_j + sum_m E_{i,m} G_{i-m} with E_{i,m} = D_i S_{m-1} A_{i-m} - I_c.

Arrays carry the symbol axis second to last: ``X[..., tau, :]`` is symbol tau + 1, for one
worker (shape (c, w)) or all N at once (shape (N, c, w)).  ``rnd`` is applied after every
arithmetic step (identity in native precision; bfloat16 rounding in the simulator's emulation).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._validation import check_dense_size, check_finite_array, check_int
from ..errors import InvalidArgumentError

__all__ = [
    "RollTransport",
    "num_rounds",
    "packet_size",
    "shift_matrix",
    "check_host_gradients",
    "split_gradients",
    "encode",
    "encode_symbol",
    "packet",
    "strip",
    "decode",
    "combine",
    "accumulate_round",
    "run_ring",
    "run_ring_lean",
    "lean_residual",
    "check_lean",
    "SCHEDULES",
    "segment_bounds",
    "ring_operator",
    "apply_ring_operator",
]

Rounding = Callable[[Any], Any]

#: The schedules of a worker: "default" (every symbol encoded from G, the stripped sums decoded at the
#: end, docs/theory.md §51.3) and "lean" (packets formed from the output state, §51.4).
SCHEDULES = ("default", "lean")

#: A design runs the lean schedule when its products (A_i D_i)[tau, k], k < tau, equal the shift
#: pattern to within LEAN_SAFETY c u (|A_i||D_i|)[tau, k] (u = 2^-53): structured to rounding (§51.4).
LEAN_SAFETY = 64.0


def _identity(a: Any) -> Any:
    return a


def num_rounds(N: int, c: int) -> int:
    """L = c + N - 2, the number of communication rounds (ring size N >= 2, c >= 1 components).

    Examples
    --------
    >>> num_rounds(4, 8)
    10
    """
    return check_int("c", c, minimum=1) + check_int("N", N, minimum=2) - 2


def packet_size(d: int, c: int) -> int:
    """w = ceil(d / c), the scalars per packet (the gradient is zero-padded to c w)."""
    return -(-int(d) // int(c))


def shift_matrix(L: int, c: int, s: int) -> np.ndarray:
    """S_s in {0,1}^{L x c} with (S_s)[tau + s, tau] = 1 for tau = 0..c-1 (0-based).

    Examples
    --------
    >>> shift_matrix(4, 3, 1).astype(int)
    array([[0, 0, 0],
           [1, 0, 0],
           [0, 1, 0],
           [0, 0, 1]])
    """
    L = check_int("L", L, minimum=1)
    c = check_int("c", c, minimum=1)
    s = check_int("s", s, minimum=0)
    check_dense_size("L", L, c, "the shift matrix S_s (L x c)")
    S = np.zeros((L, c))
    tau = np.arange(c)
    rows = tau + s
    ok = rows < L
    S[rows[ok], tau[ok]] = 1.0
    return S


def check_host_gradients(gradients: Any, N: int) -> np.ndarray:
    """Validate host gradients: a finite real array of shape (N, d), returned as float64."""
    try:
        g = np.asarray(gradients)
    except (TypeError, ValueError) as exc:  # ragged nested lists, objects numpy cannot read
        raise InvalidArgumentError("gradients", f"cannot be read as an array ({exc})") from None
    if g.dtype == object or np.iscomplexobj(g) or not (np.issubdtype(g.dtype, np.number) or g.dtype == bool):
        raise InvalidArgumentError("gradients", f"must be a real numeric array, got dtype {g.dtype}")
    g = check_finite_array("gradients", g, dtype=np.float64)
    if g.ndim != 2 or g.shape[0] != N:
        raise InvalidArgumentError("gradients", f"must have shape (N, d) = ({N}, d), got {g.shape}")
    return g


def split_gradients(g: np.ndarray, c: int, dtype: Any = np.float64) -> np.ndarray:
    """G (N, c, w): each row of the host array ``g`` (N, d) zero-padded to c w and cut into c chunks."""
    N, d = g.shape
    w = packet_size(d, c)
    G = np.zeros((N, c * w), dtype=dtype)
    G[:, :d] = g
    return G.reshape(N, c, w)


def encode(A: Any, G: Any, *, xp: Any = None, rnd: Rounding | None = None) -> Any:
    """All c coded symbols X = A G (x^(tau) = A[tau, :] G), for one worker or stacked workers.

    With ``rnd`` (emulated low precision) the product is formed column by column, rounding each
    product ``A[tau, k] G[k]`` and each partial sum; ``xp`` (the namespace) is then needed for
    the zero start.

    Examples
    --------
    >>> encode(np.eye(2), np.arange(4.0).reshape(2, 2)).tolist()
    [[0.0, 1.0], [2.0, 3.0]]
    """
    if rnd is None:
        return A @ G
    c = A.shape[-1]
    X = xp.zeros((*A.shape[:-1], G.shape[-1]), dtype=G.dtype)
    for k in range(c):  # one rounded product and one rounded add per column k
        X = rnd(X + rnd(A[..., :, k, None] * G[..., None, k, :]))
    return X


def encode_symbol(A: Any, G: Any, tau: int) -> Any:
    """The one coded symbol x^(tau) = A[tau, :] G (1-based tau), for one worker or stacked workers.

    What a worker encodes while the previous packet travels (``run_ring(..., encoder=A)``).

    Examples
    --------
    >>> encode_symbol(np.array([[1.0, 2.0], [3.0, 4.0]]), np.eye(2), 2).tolist()
    [3.0, 4.0]
    """
    return (A[..., tau - 1 : tau, :] @ G)[..., 0, :]


def _symbol(X: Any, k: int) -> Any:
    """Symbol k + 1 of X: an array (..., c, w), or a list of the c symbol arrays (..., w)."""
    return X[k] if isinstance(X, list) else X[..., k, :]


def packet(X: Any, u: Any, t: int, rnd: Rounding = _identity) -> Any:
    """The packet sent in round t: s^(t) = x^(t) + u^(t-1) for t <= c, else u^(t-1).

    ``X`` is the symbol array (..., c, w) or the list of its c symbols.  ``u`` None stands for
    u^(0) = 0: the packet is x^(1) itself (no addition, no copy).

    Examples
    --------
    >>> X = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> packet(X, np.array([10.0, 10.0]), 2).tolist(), packet(list(X), None, 1).tolist()
    ([13.0, 14.0], [1.0, 2.0])
    """
    t = check_int("t", t)
    c = len(X) if isinstance(X, list) else X.shape[-2]
    if t > c:
        return u
    x = _symbol(X, t - 1)
    return x if u is None else rnd(x + u)


def strip(r: Any, X: Any, t: int, N: int, rnd: Rounding = _identity, *, in_place: bool = False) -> Any:
    """u^(t) from the received packet r: r - x^(t-N+1) when the own symbol comes back, else r.

    ``X`` as in :func:`packet`.  ``in_place`` subtracts into ``r`` (a buffer the caller owns;
    native precision only: ``rnd`` must be the identity) instead of allocating the difference.

    Examples
    --------
    >>> r = np.array([5.0, 5.0])
    >>> strip(r, [np.array([1.0, 2.0]), np.zeros(2)], 3, 3, in_place=True) is r, r.tolist()
    (True, [4.0, 3.0])
    """
    t, N = check_int("t", t), check_int("N", N)
    c = len(X) if isinstance(X, list) else X.shape[-2]
    k = t - N  # 0-based index of the returning symbol x^(t-N+1)
    if not 0 <= k < c - 1:
        return r
    if in_place:
        r -= _symbol(X, k)
        return r
    return rnd(r - _symbol(X, k))


def decode(G: Any, D: Any, U: Any) -> Any:
    """g_hat = G + D U with U (..., L, w) the stripped sums of every round (one batched product)."""
    return G + D @ U


def combine(coefficients: np.ndarray, rows: Any, start: Any = None) -> Any:
    """start + sum_k a_k rows[k] over the nonzero host coefficients a_k, term by term.

    The product of a sparse coefficient row (host NumPy) with the rows of an array: zero terms
    are skipped and a coefficient 1 multiplies nothing (exact either way), so a sum of ``nnz``
    terms is formed with ``nnz`` rounded additions at most -- the same bound as the dense
    product, fewer operations.  May return one of ``rows`` (or ``start``) itself: a caller that
    writes into the result copies it first.

    Examples
    --------
    >>> combine(np.array([0.0, 1.0, 2.0]), np.arange(6.0).reshape(3, 2), start=np.ones(2)).tolist()
    [11.0, 14.0]
    """
    acc = start
    for k, a in enumerate(np.asarray(coefficients).tolist()):
        if a == 0:
            continue
        term = rows[k] if a == 1 else a * rows[k]
        acc = term if acc is None else acc + term
    return rows[0] * 0 if acc is None else acc


def accumulate_round(state: Any, D: Any, u: Any, t: int, rnd: Rounding = _identity) -> Any:
    """Add round t's decoded contribution D[:, t] u^(t) to the output state (the protocol's order)."""
    return rnd(state + rnd(D[..., :, t - 1, None] * u[..., None, :]))


class RollTransport:
    """The in-memory ring of all N workers at once: worker i receives what worker i - 1 sent.

    A transport moves packets: ``send(k, s)`` posts packet number k (it may return before the
    packet has arrived), ``recv(k)`` returns packet k as received from the previous worker
    (waiting for it), ``close(failed)`` waits until every send has completed (or, after a
    failure, drops them).  Packets are numbered ``k = (t - 1) S + j + 1`` for segment j of
    round t (S segments per round; :func:`run_ring`).  Here the packets of all workers are one
    array (worker axis first) and a packet moves by a roll.

    Examples
    --------
    >>> tr = RollTransport(np)
    >>> tr.send(1, np.array([[1.0], [2.0], [3.0]]))
    >>> tr.recv(1).ravel().tolist()
    [3.0, 1.0, 2.0]
    """

    def __init__(self, xp: Any):
        self.xp = xp
        self._sent: dict[int, Any] = {}

    def send(self, k: int, s: Any) -> None:
        self._sent[k] = s

    def recv(self, k: int) -> Any:
        return self.xp.roll(self._sent.pop(k), 1, axis=0)  # worker i receives from i-1

    def close(self, failed: bool = False) -> None:
        self._sent.clear()


def segment_bounds(w: int, segments: int) -> list[tuple[int, int]]:
    """Column ranges [a, b) of ``segments`` near-equal contiguous pieces of a packet of w scalars.

    Examples
    --------
    >>> segment_bounds(10, 3)
    [(0, 3), (3, 6), (6, 10)]
    """
    S = max(1, min(int(segments), max(int(w), 1)))
    edges = [(j * int(w)) // S for j in range(S + 1)]
    return [(edges[j], edges[j + 1]) for j in range(S)]


def run_ring(
    X: Any,
    G: Any,
    D: Any,
    *,
    xp: Any,
    rnd: Rounding = _identity,
    per_round: bool = False,
    on_round: Callable[[int, Any, Any], None] | None = None,
    transport: Any = None,
    N: int | None = None,
    encoder: Any = None,
    segments: int = 1,
    host_coefficients: tuple[np.ndarray, np.ndarray] | None = None,
) -> Any:
    """The rounds of the ring: encode, send, strip, decode, over a transport (docs/theory.md §50.1).

    Round t's packet of a worker is computed as soon as round t - 1's has been received and
    stripped, and posted at once: ``send`` may return before the packet has arrived.  With
    ``segments`` S > 1 each packet travels as S pieces of contiguous columns, each piece
    forwarded as soon as it has arrived (the protocol acts on every column separately, so the
    arithmetic is the same, column by column): transfers of a round pipeline with the
    stripping and sending of its earlier pieces.

    Parameters
    ----------
    X : array (..., c, w) or None
        Coded symbols (:func:`encode`), in the wire dtype (the packets' dtype).  With
        ``encoder`` an uninitialized buffer of that shape: symbol x^(t+1) is encoded into it
        while round t's packets travel (:func:`encode_symbol`).  See ``host_coefficients``.
    G : array (..., c, w)
        The split gradients (the output state starts there), in the compute dtype.
    D : array (..., c, L)
        Decoders, in the compute dtype.
    xp : namespace
        Array namespace of the arrays (NumPy, CuPy, torch through array-api-compat).
    rnd : callable
        Rounding after every arithmetic step (identity for native precision).
    per_round : bool
        Accumulate D_i[:, t] u_i^(t) in every round (:func:`accumulate_round`), as a worker would;
        otherwise store the u_i^(t) and :func:`decode` once at the end (same value in exact
        arithmetic).  Needs ``segments=1``.
    on_round : callable, optional
        ``on_round(t, s, u)`` after round t with the packets sent and the stripped sums
        (``segments=1``).
    transport : optional
        How packets travel (``send``/``recv``/``close``, see :class:`RollTransport`); default
        the in-memory ring of all workers stacked on axis 0.
    N : int, optional
        Ring size; default ``G.shape[0]`` (all workers stacked).  Needed for one rank.
    encoder : array (..., c, c), optional
        A_i: encode the symbols round by round into ``X`` (see ``X``).
    segments : int
        Pieces per packet (:func:`segment_bounds`); packet k = (t-1) S + j + 1 on the transport.
    host_coefficients : (A_i, D_i) as host NumPy arrays, optional
        One worker with a sparse design (e.g. the exact design's permutation encoders and 0/1
        decoders): each symbol is formed term by term over the nonzero coefficients
        (:func:`combine`; a permutation row's symbol *is* a row of G, no copy), received packets
        are stripped in place, and the decoder's nonzero terms are added into G's rows, in the
        order of the rounds, instead of matrix products.  Same exact values, at most as many
        roundings.  ``G`` may be a list of its c rows (views of the caller's buffer) and is
        overwritten with g_hat; ``X`` (wire dtype) is only written where a symbol's dtype
        differs from it (None: never); ``rnd`` must be the identity.

    Returns
    -------
    array (..., c, w)
        g_hat of every worker held, in the compute dtype (with ``host_coefficients``: ``G``).

    Examples
    --------
    >>> A = D = np.ones((2, 1, 1))
    >>> G = np.array([[[1.0, 2.0]], [[3.0, 4.0]]])
    >>> run_ring(encode(A, G), G, D, xp=np).tolist() == run_ring(encode(A, G), G, D, xp=np, segments=2).tolist()
    True
    """
    sparse = host_coefficients is not None
    A_host, D_host = host_coefficients if host_coefficients is not None else (np.zeros((0, 0)), np.zeros((0, 0)))
    if sparse:
        c, w = (len(G), G[0].shape[-1]) if isinstance(G, list) else (G.shape[-2], G.shape[-1])
    else:
        c, w = G.shape[-2], G.shape[-1]
    N = G.shape[0] if N is None else int(N)
    L = num_rounds(N, c)
    pieces = segment_bounds(w, segments)
    S = len(pieces)
    if S > 1 and (per_round or on_round is not None):
        raise InvalidArgumentError("segments", f"must be 1 with per_round or on_round, got {segments}")
    transport = RollTransport(xp) if transport is None else transport
    state = G if per_round else None
    U: list[list[Any]] = []  # sparse path: U[t-1][j], segment j of u^(t)
    # dense batched path: the stripped sums go straight into one (..., L, w) buffer for the decode
    # (no list of L packets and no stacked copy of it: L packets less at the peak, same values)
    Us: Any = None
    if not sparse and not per_round:
        Us = xp.concat([xp.zeros_like(X[..., :1, :])] * L, axis=-2)
    sent: list[Any] = [None] * S
    # Xp[j]: the symbols' columns of piece j (views); the sparse path fills its lists symbol by symbol
    Xp: list[Any] = [[None] * c for _ in pieces] if sparse else [X[..., a:b] for a, b in pieces]
    failed = True
    try:
        if sparse:

            def next_symbol(tau: int) -> None:
                # a permutation row selects a row of G: the symbol is that row itself, no copy
                x = combine(A_host[tau - 1], G)
                if X is not None and x.dtype != X.dtype:  # a compute dtype wider than the wire's
                    X[tau - 1] = x
                    x = X[tau - 1]
                for j, (a, b) in enumerate(pieces):
                    Xp[j][tau - 1] = x[..., a:b]

        elif encoder is not None:

            def next_symbol(tau: int) -> None:
                X[..., tau - 1, :] = encode_symbol(encoder, G, tau)

        lazy = sparse or encoder is not None
        if lazy:
            next_symbol(1)
        for j, (a, b) in enumerate(pieces):  # round 1: u^(0) = 0
            sent[j] = packet(Xp[j], None, 1) if sparse else packet(Xp[j], xp.zeros_like(X[..., 0, a:b]), 1, rnd)
            transport.send(j + 1, sent[j])
        for t in range(1, L + 1):
            if lazy and t < c:  # symbol t + 1, while round t's packets travel
                next_symbol(t + 1)
            row = []
            for j in range(S):
                # the sparse path strips into the received buffer (the transport hands over fresh ones)
                u = strip(transport.recv((t - 1) * S + j + 1), Xp[j], t, N, rnd, in_place=sparse)
                if sparse:
                    row.append(u)
                elif Us is not None:
                    Us[..., t - 1, pieces[j][0] : pieces[j][1]] = u
                s_t = sent[j]
                if t < L:  # forward at once: the next round's packet of this piece
                    sent[j] = packet(Xp[j], u, t + 1, rnd)
                    transport.send(t * S + j + 1, sent[j])
                if per_round:
                    state = accumulate_round(state, D, u, t, rnd)
                if on_round is not None:
                    on_round(t, s_t, u)
            if sparse:
                U.append(row)
        failed = False
    finally:
        transport.close(failed=failed)  # after a failure: no waiting for sends
    if per_round:
        return state
    if sparse:  # g_hat[k] = G[k] + sum_t D[k, t] u^(t): the nonzero terms added into G's rows, in order
        for k in range(c):
            for t, a in enumerate(np.asarray(D_host[k]).tolist()):
                if a == 0:
                    continue
                for j, (lo, hi) in enumerate(pieces):
                    target = G[k] if S == 1 else G[k][..., lo:hi]
                    u = U[t][j]
                    if u.dtype != target.dtype:  # a wire dtype narrower than the compute dtype: the
                        u = xp.astype(u, target.dtype)  # product a * u is formed in the compute dtype
                    target += u if a == 1 else a * u
        return G
    if Us.dtype != D.dtype:  # a wire dtype narrower than the compute dtype
        Us = xp.astype(Us, D.dtype)
    out = D @ Us  # g_hat = G + D U (decode), the sum formed in place: one c-packet result, no temporary
    out += G
    return out


def ring_operator(encoders: np.ndarray, decoders: np.ndarray) -> np.ndarray:
    """The ring's end-to-end operator Omega in R^{Nc x Nc}: g_hat = Omega G (docs/theory.md §52.1).

    Block (i, i) is I_c, block (i, i - m) is M_{i,m} = D_i S_{m-1} A_{i-m} = D_i[:, m-1 : m-1+c]
    A_{i-m} (m = 1..N-1), so that g_hat_i = G_i + sum_m M_{i,m} G_{i-m} (Lemma 1 of §50.1 and the
    output formula); E_{i,m} = M_{i,m} - I_c are the error operators.  Each entry of M is one
    length-c dot product, in the encoders' dtype.

    Examples
    --------
    >>> ring_operator(np.ones((2, 1, 1)), 2 * np.ones((2, 1, 1))).tolist()
    [[1.0, 2.0], [2.0, 1.0]]
    """
    N, c, _ = encoders.shape
    m = np.arange(1, N)
    cols = (m - 1)[:, None] + np.arange(c)[None, :]  # (N-1, c): the column window of D_i S_{m-1}
    src = (np.arange(N)[:, None] - m[None, :]) % N  # (N, N-1): worker i - m
    blocks = np.moveaxis(decoders[:, :, cols], 2, 1) @ encoders[src]  # (N, N-1, c, c)
    Omega = np.zeros((N, c, N, c), dtype=blocks.dtype)
    workers = np.arange(N)
    Omega[workers, :, workers, :] = np.eye(c, dtype=blocks.dtype)
    Omega[workers[:, None], :, src, :] = blocks
    return Omega.reshape(N * c, N * c)


def apply_ring_operator(Omega: Any, G: Any) -> Any:
    """g_hat = Omega G for all workers at once: one (Nc x Nc) @ (Nc x w) product, shape (N, c, w).

    Examples
    --------
    >>> apply_ring_operator(np.array([[1.0, 2.0], [2.0, 1.0]]), np.array([[[1.0]], [[2.0]]])).ravel().tolist()
    [5.0, 4.0]
    """
    N, c, w = G.shape
    return (Omega @ G.reshape(N * c, w)).reshape(N, c, w)


def lean_residual(encoders: Any, decoders: Any) -> np.ndarray:
    """How far each worker is from the lean schedule's condition, in units of its own rounding (§51.4).

    The lean schedule forms the packet of round t <= c from the output state, s^(t) = A_i[t, :] a,
    which is the protocol's packet for every input iff (1-based)
    ``(A_i D_i)[tau, k] = 1 if tau = k + 1 else 0`` for all ``1 <= k < tau <= c``
    (Proposition 6 of docs/theory.md §51.4).  Returns, per worker, the largest
    ``|(A_i D_i)[tau, k] - delta_{tau, k+1}|`` over those pairs divided by
    ``c u (|A_i||D_i|)[tau, k]`` (u = 2^-53; 0 where both are 0, inf where only the residual is not):
    about 1 for a design that is structured to rounding, huge for a generic one.

    Examples
    --------
    >>> A = np.stack([np.eye(2)[::-1]] * 3)  # design(3, 2, "exact") has other encoders; any works here
    >>> D = np.zeros((3, 2, 3)); D[:, 0, 0] = 1.0  # (A D)[1, 0] = D[0, 0] = 1: the shift pattern
    >>> lean_residual(A, D).tolist()
    [0.0, 0.0, 0.0]
    """
    A = np.asarray(encoders, dtype=float)
    D = np.asarray(decoders, dtype=float)
    c = A.shape[-1]
    if c < 2:
        return np.zeros(A.shape[0])
    P = A @ D[..., : c - 1]  # (N, c, c-1): column k-1 is A_i D_i[:, k] (1-based k)
    scale = np.abs(A) @ np.abs(D[..., : c - 1])
    tau, k = np.nonzero(np.tril(np.ones((c, c - 1)), -1))  # 0-based tau > k: the pairs k < tau
    target = (tau == k + 1).astype(float)
    diff = np.abs(P[..., tau, k] - target)
    unit = c * 2.0**-53 * scale[..., tau, k]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(diff == 0, 0.0, diff / unit)
    return ratio.max(axis=-1)


def check_lean(encoders: Any, decoders: Any) -> None:
    """Refuse a design the lean schedule does not apply to (``lean_residual`` above LEAN_SAFETY).

    Raises
    ------
    InvalidArgumentError
        Naming the first worker whose products A_i D_i miss the shift pattern, and the designs
        that have it (docs/theory.md §51.4).

    Examples
    --------
    >>> check_lean(np.ones((3, 2, 2)), np.ones((3, 2, 3)))
    Traceback (most recent call last):
    ...
    gcsim.errors.InvalidArgumentError: ...
    """
    res = lean_residual(encoders, decoders)
    bad = np.nonzero(~(res <= LEAN_SAFETY))[0]
    if bad.size:
        i = int(bad[0])
        raise InvalidArgumentError(
            "schedule",
            f"'lean' forms each packet from the output state, which needs (A_i D_i)[tau, k] = [tau = k + 1] for "
            f"k < tau <= c (docs/theory.md §51.4); worker {i} misses it by {res[i]:.3g} times its rounding. "
            "The designs built from a column function have it (exact, vandermonde, perturbation); generic and "
            "kappa-optimized designs do not: use schedule='default'",
        )


def _axpy(y: Any, a: Any, x: Any) -> None:
    """y += a x in place: ``a`` a host scalar (one worker), or a host (N,) array (row i of y and x)."""
    if np.ndim(a) == 0:
        if a == 0:
            return
        if hasattr(y, "add_"):  # torch: in place, no temporary
            y.add_(x, alpha=float(a))
        elif a == 1:
            y += x
        else:
            y += a * x
        return
    for i, ai in enumerate(np.asarray(a).tolist()):
        if ai != 0:
            _axpy(y[i], ai, x[i])


def run_ring_lean(
    rows: list[Any],
    A: Any,
    D: Any,
    *,
    xp: Any,
    transport: Any = None,
    N: int | None = None,
    probe: Callable[[list[Any]], None] | None = None,
) -> list[Any]:
    """The rounds of the ring in the lean schedule (docs/theory.md §51.4): packets formed from the state.

    A worker holds its output state ``a`` (starting at G, every decoded contribution added in place),
    the own symbols that will come back and the last received buffer.  In round t it forms the packet
    ``s^(t) = A[t, :] a`` (t <= c; for a design with the shift pattern this is x^(t) + u^(t-1),
    :func:`lean_residual`) and, when x^(t) comes back (t <= c - 1), keeps ``x^(t) = s^(t) - u^(t-1)``
    in u^(t-1)'s buffer; for t > c it forwards u^(t-1) itself.  It receives r, strips in the receive
    buffer (``u^(t) = r - x^(t-N+1)``, freeing that symbol), adds ``D[:, t] u^(t)`` to ``a`` and waits
    for its send (``transport.flush`` when the transport has one).  So between rounds it holds
    ``c + N`` packets at most (the state, at most N - 1 own symbols, the receive buffer), during the
    transfer of a round ``c + N + 2`` (with the packet sent and the one received): Proposition 7.

    Parameters
    ----------
    rows : list of c arrays (..., w)
        The state: G's rows (one worker, or all workers stacked on axis 0), overwritten with g_hat.
    A, D : host NumPy arrays (c, c), (c, L) or stacked (N, c, c), (N, c, L)
        Encoders and decoders; products are formed term by term over their nonzero entries.
    xp : namespace
        Array namespace of ``rows`` (NumPy, CuPy, torch through array-api-compat).
    transport : optional
        As :func:`run_ring`; default the in-memory ring of stacked workers.  Its receive buffers
        should not be posted in advance (that would hold one more packet).
    N : int, optional
        Ring size; default ``rows[0].shape[0]`` (stacked workers).
    probe : callable, optional
        ``probe(held)`` with the arrays the schedule holds (state rows, kept symbols, the packet sent,
        the packet received) after each receive and after each round: where the live set is largest
        (storage accounting, :class:`gcsim.executor.collectives.StorageMeter`).

    Returns
    -------
    list of c arrays
        ``rows``, now holding g_hat.

    Examples
    --------
    >>> from gcsim.cerar import design
    >>> des = design(3, 3, "exact")  # permutation encoders, 0/1 decoders: the shift pattern
    >>> G = np.arange(9.0).reshape(3, 3, 1)  # 3 workers, c = 3 components of w = 1
    >>> out = run_ring_lean([G[:, k].copy() for k in range(3)], des.encoders, des.decoders, xp=np)
    >>> np.stack(out, axis=1)[..., 0].tolist(), G.sum(axis=0)[:, 0].tolist()
    ([[9.0, 12.0, 15.0], [9.0, 12.0, 15.0], [9.0, 12.0, 15.0]], [9.0, 12.0, 15.0])
    """
    A = np.asarray(A)
    D = np.asarray(D)
    c = len(rows)
    N = rows[0].shape[0] if N is None else int(N)
    L = num_rounds(N, c)
    transport = RollTransport(xp) if transport is None else transport
    flush = getattr(transport, "flush", None)
    kept: dict[int, Any] = {}  # tau -> x^(tau), own symbols that will come back
    u: Any = None  # u^(t-1), in the buffer it was received in
    failed = True
    try:
        for t in range(1, L + 1):
            if t <= c:  # s^(t) = A[t, :] a = x^(t) + u^(t-1): one new buffer, sums formed in place
                s = xp.zeros_like(rows[0])
                for k in range(c):
                    _axpy(s, A[..., t - 1, k], rows[k])
                if t <= c - 1:  # x^(t) comes back in round t + N - 1: keep it, in u^(t-1)'s buffer
                    if u is None:
                        kept[t] = s  # u^(0) = 0: the packet is x^(1) itself (never written)
                    else:
                        u *= -1
                        u += s  # x^(t) = s^(t) - u^(t-1), one rounding
                        kept[t] = u
            else:
                s = u  # t > c: forward u^(t-1)
            u = None
            transport.send(t, s)
            r = transport.recv(t)
            if probe is not None:  # the fullest moment: state, kept symbols, packet sent, packet received
                probe([*rows, *kept.values(), s, r])
            s = None
            back = kept.pop(t - N + 1, None)  # the own symbol x^(t-N+1) comes back now (if it does)
            if back is not None:
                r -= back
                back = None
            for k in range(c):
                _axpy(rows[k], D[..., k, t - 1], r)
            # u^(t) is needed again for x^(t+1) (t <= c - 2) or as the next packet (c <= t < L)
            u = r if t < L and t != c - 1 else None
            r = None
            if flush is not None:
                flush()  # round t's send has completed: its buffer is free
            if probe is not None:
                probe([*rows, *kept.values()] + ([] if u is None else [u]))
        failed = False
    finally:
        transport.close(failed=failed)
    return rows
