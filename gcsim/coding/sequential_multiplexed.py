"""Multiplexed sequential gradient coding (M-SGC) for bursty stragglers (theory §62.4).

The second scheme of Krishnan, Ebrahimi & Khisti, "Sequential Gradient Coding For Straggler
Mitigation" (ICLR 2023), for the :math:`(B, W, \\lambda)`-bursty model of
:mod:`gcsim.coding.sequential` (``1 <= B <= W - 1``).  Each job's data is split in two classes:

* ``D1``: ``n (W - 1)`` uncoded chunks, ``W - 1`` per worker;
* ``D2``: ``B`` groups, each coded by the cyclic repetition code for ``lam`` stragglers (any
  ``n - lam`` of a group's ``n`` tasks decode it; empty when ``lam = n``).

Every round each worker computes ``W - 1 + B`` equal mini-tasks, one of each of the jobs
``r, r - 1, ..., r - (W - 2 + B)``: in the ``W - 1`` rounds after job ``t`` starts its ``D1`` chunks,
one per round; in the next ``B`` rounds, the ``D2`` group of the round if every one of its ``D1``
chunks has arrived, and a missing ``D1`` chunk again otherwise (the adaptive part).  Delay
``T = W - 2 + B``; normalized load ``(lam + 1)(W - 1 + B) / (n (B + (W - 1)(lam + 1)))``
(``(W - 1 + B) / (n (W - 1))`` when ``lam = n``), Theorem 62.8.  The statement of the scheme and
its load follow the paper; the proof of §62.4 and this implementation are gcsim's.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, NamedTuple

import numpy as np

from .._validation import check_int
from ..errors import InvalidArgumentError
from .decoders import optimal_decoders
from .encoders.classic import cyclic_repetition_assignment
from .schemes import Scheme, encode
from .sequential import SequentialRun, _masks, _wait_cost, _window, _window_broken

__all__ = [
    "MultiplexedParams",
    "MultiplexedSGC",
    "multiplexed_load",
    "simulate_multiplexed",
    "WAIT_RULES",
    "PARTIAL",
]


class MultiplexedParams(NamedTuple):
    """The parameters of :class:`MultiplexedSGC`: ``n`` workers and the bursty model ``(B, W, lam)``."""

    n: int
    B: int
    W: int
    lam: int


def _params(n: Any, B: Any, W: Any, lam: Any) -> MultiplexedParams:
    n = check_int("n", n, minimum=1)
    B, W, lam = _window(B, W, lam, n)
    W = check_int("W", W, minimum=2)
    if B > W - 1:
        raise InvalidArgumentError("B", f"must be at most W - 1 = {W - 1} (a burst shorter than the window), got {B}")
    return MultiplexedParams(n, B, W, lam)


def multiplexed_load(n: int, B: int, W: int, lam: int) -> Fraction:
    """The exact normalized load of M-SGC (Theorem 62.8).

    ``(lam + 1)(W - 1 + B) / (n (B + (W - 1)(lam + 1)))`` for ``lam < n`` and
    ``(W - 1 + B) / (n (W - 1))`` for ``lam = n`` (no coded part).

    Examples
    --------
    >>> multiplexed_load(20, 2, 5, 6), multiplexed_load(4, 1, 2, 4)
    (Fraction(7, 100), Fraction(1, 2))
    """
    n, B, W, lam = _params(n, B, W, lam)
    if lam == n:
        return Fraction(W - 1 + B, n * (W - 1))
    return Fraction((lam + 1) * (W - 1 + B), n * (B + (W - 1) * (lam + 1)))


class MultiplexedSGC:
    """The multiplexed sequential gradient code for the :math:`(B, W, \\lambda)` model (§62.4).

    Immutable: the parameters are fixed at construction (:attr:`params`).

    Parameters
    ----------
    n : int
        Workers.
    B, W, lam : int
        The bursty model, ``1 <= B <= W - 1``, ``0 <= lam <= n``.

    Examples
    --------
    >>> code = MultiplexedSGC(20, B=2, W=5, lam=6)
    >>> code.delay, code.minitasks, code.load_fraction, code.load
    (5, 6, Fraction(7, 100), 0.07)
    >>> code.verify()
    True
    """

    __slots__ = ("_p",)
    _p: MultiplexedParams

    def __init__(self, n: int, B: int, W: int, lam: int):
        object.__setattr__(self, "_p", _params(n, B, W, lam))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"MultiplexedSGC is immutable; cannot set {name!r}")

    @property
    def params(self) -> MultiplexedParams:
        """``(n, B, W, lam)``."""
        return self._p

    @property
    def n(self) -> int:
        """Workers."""
        return self._p.n

    @property
    def B(self) -> int:
        """Burst length."""
        return self._p.B

    @property
    def W(self) -> int:
        """Window."""
        return self._p.W

    @property
    def lam(self) -> int:
        """Distinct stragglers per window."""
        return self._p.lam

    @property
    def delay(self) -> int:
        """``T = W - 2 + B``."""
        return self.W - 2 + self.B

    @property
    def minitasks(self) -> int:
        """Mini-tasks per worker per round, ``W - 1 + B`` (one per live job)."""
        return self.W - 1 + self.B

    @property
    def minitask_fraction(self) -> Fraction:
        """``ℓ``: one mini-task's share of a job's data (a ``D1`` chunk, or one coded ``D2`` task)."""
        return self.load_fraction / self.minitasks

    @property
    def group_fraction(self) -> Fraction:
        """One ``D2`` group's share of a job's data: ``n ℓ / (lam + 1)`` (0 when ``lam = n``)."""
        return Fraction(0) if self.lam == self.n else self.n * self.minitask_fraction / (self.lam + 1)

    @property
    def load_fraction(self) -> Fraction:
        """The normalized load as an exact fraction (:func:`multiplexed_load`)."""
        return multiplexed_load(*self._p)

    @property
    def load(self) -> float:
        """The normalized load per worker per round."""
        return float(self.load_fraction)

    @property
    def classic_load(self) -> float:
        """Load ``(lam + 1)/n`` of the per-round cyclic code that tolerates the model with ``T = 0``."""
        return (min(self.lam, self.n - 1) + 1) / self.n

    def assignment(self) -> np.ndarray:
        """A ``D2`` group's ``n x n`` cyclic repetition assignment (parts x workers) for ``lam`` stragglers."""
        if self.lam >= self.n:
            raise InvalidArgumentError("lam", f"= n = {self.n}: the scheme has no coded part")
        return cyclic_repetition_assignment(self.n, self.lam)

    @property
    def subparts(self) -> int:
        """``N``: a job's equal sub-parts, ``n ((W - 1)(lam + 1) + B)`` (``n (W - 1)`` when ``lam = n``).

        A ``D1`` chunk is ``lam + 1`` consecutive sub-parts (one when ``lam = n``), a ``D2`` group
        ``n`` (its parts); the unit of the least-squares error (§62.5).
        """
        n, B, W, lam = self._p
        return n * (W - 1) if lam == n else n * ((W - 1) * (lam + 1) + B)

    def group_scheme(self, seed: int = 0) -> Scheme:
        """The code of every ``D2`` group: Tandon et al.'s cyclic MDS code for ``lam`` stragglers (§5).

        Any ``n - lam`` of its ``n`` coded tasks give the group's sum; ``seed`` draws its coefficients
        (:func:`gcsim.coding.encode`, ``method="cyclic-mds"``).

        Examples
        --------
        >>> MultiplexedSGC(4, B=1, W=2, lam=1).group_scheme().B.shape
        (4, 4)
        """
        return encode(self.assignment(), 1, "cyclic-mds", seed=seed)

    def verify(self) -> bool:
        """Check the data split exactly: the ``D1`` chunks and ``D2`` groups make up one job, each
        mini-task is ``ℓ`` of it, the load is ``(W - 1 + B) ℓ``, and every ``D2`` part lies on
        ``lam + 1`` workers (so any ``n - lam`` of them see it).  Raises AssertionError otherwise.
        """
        ell, group = self.minitask_fraction, self.group_fraction
        assert self.n * (self.W - 1) * ell + self.B * group == 1, "D1 and D2 must make up the job"
        assert self.load_fraction == self.minitasks * ell, "a round is W - 1 + B mini-tasks"
        if self.lam < self.n:
            A = self.assignment()
            assert np.all(A.sum(axis=0) == self.lam + 1), "a coded task covers lam + 1 of n parts"
            assert np.all(A.sum(axis=1) == self.lam + 1), "every part lies on lam + 1 workers"
            assert (self.lam + 1) * group / self.n == ell, "a coded task is one mini-task"
        return True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MultiplexedSGC) and self._p == other._p

    def __hash__(self) -> int:
        return hash(("MultiplexedSGC", self._p))

    def __repr__(self) -> str:
        return f"MultiplexedSGC(n={self.n}, B={self.B}, W={self.W}, lam={self.lam})"


#: When :func:`simulate_multiplexed` waits for every worker (with a ``wait_cost``), §62.4 Remark 62.9.
WAIT_RULES = ("needed", "model")

#: What :func:`simulate_multiplexed` does with a job not decoded by its deadline (§62.5).
PARTIAL = ("drop", "least-squares")


def _deliver(chunks: np.ndarray, senders: np.ndarray, live: list[tuple[int, int]], got: np.ndarray) -> None:
    """One round's mini-tasks: slot ``m`` of job ``t`` for each ``(m, t)`` in ``live`` (Lemma 62.7)."""
    D1 = chunks.shape[2]
    for m, t in live:
        if m < D1:  # the m-th D1 chunk
            chunks[t, :, m] |= got
        else:  # D2 group m - D1 where the D1 chunks are in, the first missing D1 chunk elsewhere
            done = chunks[t].all(axis=1)
            senders[t, m - D1] |= done & got
            redo = np.flatnonzero(~done & got)
            chunks[t, redo, np.argmin(chunks[t, redo], axis=1)] = True


def _doomed(code: MultiplexedSGC, chunks: np.ndarray, senders: np.ndarray, jobs: list[int], r: int) -> bool:
    """Whether a job of ``jobs`` fails even if every worker arrives from round ``r + 1`` on."""
    n, B, W, lam = code.params
    for t in jobs:
        finish = r + (W - 1 - chunks[t].sum(axis=1))  # the round each worker's last chunk arrives, all arriving
        if bool(np.any(finish > t + code.delay)):
            return True
        for g in range(B if lam < n else 0):
            q = t + W - 1 + g  # group g's round: its senders are fixed once it has passed
            if (int(senders[t, g].sum()) if q <= r else int(np.sum(finish <= q - 1))) < n - lam:
                return True
    return False


def _projections(B: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """``B_F X*`` for each row of ``masks``: the projection of the all-ones vector on the columns of ``B``
    the mask keeps (``X*`` the optimal decoder, §5.1).  One solve per distinct mask, shared by the rows
    that repeat it: the same stacked solve, so the same numbers as one solve per row."""
    seen, which = np.unique(masks, axis=0, return_inverse=True)
    X = np.asarray(optimal_decoders(B, seen, 1))
    return ((B[None] * seen[:, None, :]) @ X)[:, :, 0][which.reshape(-1)]


def _least_squares(
    code: MultiplexedSGC, chunks: np.ndarray, senders: np.ndarray, ok: np.ndarray, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Each job's least-squares error and sub-part weights from what arrived (Proposition 62.10).

    The job's matrix is block diagonal (a chunk's ``f`` sub-parts, a group's ``n`` parts), so a chunk
    weighs 1 if it arrived and 0 otherwise, and a group takes the optimal decoder of its code on the
    workers that sent it; decoded jobs (``ok``) are exact, weights 1 and error 0.
    """
    n, B, W, lam = code.params
    J, f, N = chunks.shape[0], (lam + 1 if lam < n else 1), code.subparts
    weights = np.ones((J, N))
    error = np.zeros(J)
    part = np.flatnonzero(~ok)
    if part.size == 0:
        return error, weights
    weights[part, : n * (W - 1) * f] = np.repeat(chunks[part].reshape(part.size, -1), f, axis=1)
    error[part] = f * (n * (W - 1) - chunks[part].sum(axis=(1, 2)))
    if lam < n:
        proj = _projections(code.group_scheme(seed).B, senders[part].reshape(-1, n))
        weights[part, n * (W - 1) * f :] = proj.reshape(part.size, B * n)
        # the decoder's residual ||B_F X* - 1||^2 is err(B, F) (§5.1): read off the projection, no second
        # solve for the error; clipped to [0, n] as optimal_error clips it
        resid = np.clip(np.sum((proj - 1.0) ** 2, axis=1), 0.0, n)
        error[part] += resid.reshape(part.size, B).sum(axis=1)
    return error / N, weights


def simulate_multiplexed(
    code: MultiplexedSGC,
    masks: Any,
    *,
    jobs: int | None = None,
    wait_cost: float | None = None,
    wait_rule: str = "needed",
    partial: str = "drop",
    code_seed: int = 0,
) -> SequentialRun:
    """Run M-SGC over a mask sequence (§62.4).

    Parameters
    ----------
    code : MultiplexedSGC
        The scheme.
    masks : array_like
        ``(R, n)`` non-straggler masks, one per round.
    jobs : int, optional
        Jobs ``J <= R``; default ``R - T`` (the last ``T`` rounds only finish started jobs).
    wait_cost : float, optional
        None: stragglers are lost, and a job is decoded only if every worker's ``D1`` chunks and
        ``n - lam`` tasks of each ``D2`` group arrive by round ``t + T``.  A number ``>= 0``: in the
        rounds that ``wait_rule`` picks the master waits for every worker (the round costs
        ``wait_cost`` more); either rule decodes every job (Remark 62.9).
    wait_rule : {"needed", "model"}
        ``"needed"``: wait in a round whose stragglers would make some job fail even if every worker
        arrived afterwards (never inside the model).  ``"model"`` (the authors' simulator): wait in
        every round whose stragglers, after the rounds as the master saw them, leave the
        :math:`(B, W, \\lambda)` model.
    partial : {"drop", "least-squares"}
        A job not decoded by round ``t + T``: ``"drop"`` it (``error`` 1), or take the least-squares
        combination of its mini-tasks that arrived (§62.5, Proposition 62.10: ``error`` the optimal
        decoding residual, ``weights`` its sub-part coefficients).  ``decoded`` is -1 for it either way.
    code_seed : int
        Seed of the groups' cyclic MDS coefficients (:meth:`MultiplexedSGC.group_scheme`), used by
        ``"least-squares"``.

    Returns
    -------
    SequentialRun
        ``round_time[r]``: the load times the fraction of the ``W - 1 + B`` mini-task slots that hold a
        job (the first and last ``T`` rounds are partial), plus ``wait_cost`` if it waited;
        ``tasks = W - 1 + B``; ``work[r, j]`` the newest job of round ``r`` (``-1`` if none);
        ``error[t]`` the normalized error of job ``t``'s gradient; ``weights`` (``"least-squares"``
        only) ``(J, N)`` its sub-part coefficients.

    Examples
    --------
    >>> code = MultiplexedSGC(3, B=1, W=2, lam=1)              # T = 1, two mini-tasks per round
    >>> m = np.ones((3, 3), bool); m[0, 0] = False             # worker 0 misses its D1 chunk of job 0
    >>> simulate_multiplexed(code, m).decoded.tolist()         # ... and redoes it in round 1
    [1, 2]
    >>> m[1, 1] = False                                         # a second straggler in the window
    >>> simulate_multiplexed(code, m).decoded.tolist(), simulate_multiplexed(code, m, wait_cost=1.0).waited.tolist()
    ([-1, 2], [False, True, False])
    >>> simulate_multiplexed(code, m).error.tolist()            # job 0 dropped
    [1.0, 0.0]
    >>> run = simulate_multiplexed(code, m, partial="least-squares")
    >>> run.error.round(4).tolist()                 # chunks in, group 0 from worker 2 only: its LS residual
    [0.2335, 0.0]
    >>> run.weights[0, :6].tolist()                 # the six sub-parts of the three chunks, all arrived
    [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    """
    if not isinstance(code, MultiplexedSGC):
        raise InvalidArgumentError("code", f"must be a MultiplexedSGC, got {type(code).__name__}")
    if wait_rule not in WAIT_RULES:
        raise InvalidArgumentError("wait_rule", f"must be one of {WAIT_RULES}, got {wait_rule!r}")
    if partial not in PARTIAL:
        raise InvalidArgumentError("partial", f"must be one of {PARTIAL}, got {partial!r}")
    code_seed = check_int("code_seed", code_seed, minimum=0)
    arr = _masks(masks, code.n)
    wait = _wait_cost(wait_cost)
    n, B, W, lam = code.params
    R, T, D1, M = arr.shape[0], code.delay, W - 1, code.minitasks
    J = max(0, R - T) if jobs is None else check_int("jobs", jobs, minimum=0, maximum=R)
    chunks = np.zeros((J, n, D1), dtype=bool)  # D1 chunk c of worker j of job t arrived
    senders = np.zeros((J, B, n), dtype=bool)  # worker j delivered D2 group g of job t
    d1_round = np.full(J, -1, dtype=np.int64)  # the round job t's last D1 chunk arrived
    seen = np.zeros((R, n), dtype=bool)  # the stragglers as the master saw them
    work = np.full((R, n), -1, dtype=np.int64)
    waited = np.zeros(R, dtype=bool)
    round_time = np.zeros(R)
    for r in range(R):
        live = [(m, r - m) for m in range(M) if 0 <= r - m < J]
        ts = [t for _, t in live]
        seen[r] = ~arr[r]
        if wait is not None and wait_rule == "model":
            waited[r] = _window_broken(seen, r, B, W, lam)
        kept = (chunks[ts].copy(), senders[ts].copy())
        _deliver(chunks, senders, live, ~seen[r])
        if wait is not None and wait_rule == "needed":
            waited[r] = _doomed(code, chunks, senders, ts, r)
        if waited[r]:  # the round again, every worker arriving
            chunks[ts], senders[ts] = kept
            seen[r] = False
            _deliver(chunks, senders, live, ~seen[r])
        for t in ts:
            if d1_round[t] < 0 and bool(chunks[t].all()):
                d1_round[t] = r
        work[r] = live[0][1] if live else -1
        round_time[r] = code.load * len(live) / M + (wait if waited[r] and wait is not None else 0.0)
    ok = (d1_round >= 0) & (np.all(senders.sum(axis=2) >= n - lam, axis=1) if lam < n else True)
    # with a coded part the last D2 group arrives in round t + T; without, the last D1 chunk decides
    last = np.arange(J) + T if lam < n else d1_round
    decoded = np.where(ok, last, -1).astype(np.int64)
    if partial == "drop":
        return SequentialRun(decoded, work, waited, round_time, T, code.load, M, (~ok).astype(float))
    error, weights = _least_squares(code, chunks, senders, ok, code_seed)
    return SequentialRun(decoded, work, waited, round_time, T, code.load, M, error, weights)
