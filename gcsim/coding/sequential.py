"""Sequential gradient coding: coding across iterations under bursty stragglers (theory §62).

A sequence of jobs (one gradient per iteration) runs on ``n`` workers in *rounds*: job ``t`` starts
in round ``t`` and must be decoded by the end of round ``t + T`` (``T`` the *delay*).  A per-iteration
code has ``T = 0``.  Krishnan, Ebrahimi & Khisti, "Sequential Gradient Coding For Straggler
Mitigation" (ICLR 2023), model bursty stragglers by a window condition and show that ``T > 0``
buys a lower load; this module has

* the :math:`(B, W, \\lambda)`-bursty model as a checker of a mask sequence
  (:func:`bursty_violation`, :func:`is_bursty`) and Markov sampling (:func:`markov_masks`);
* the *selective-repeat* scheme (the paper's first scheme) with delay ``T = B``:
  :class:`SelectiveRepeat` and its simulation :func:`simulate_selective_repeat`;
* the per-iteration classic code for comparison, :func:`simulate_classic`;
* the mask sequences of any registered straggler model (:func:`straggler_masks`: a
  :class:`~gcsim.coding.straggler_base.StragglerModel` or a ``KIND:VALUES`` spec such as
  ``"markov:0.05,0.5"``, the Gilbert–Elliott chains of the ``"markov"`` kind) and the workers whose
  task of each job arrived in time (:func:`job_masks`), which a trainer decodes each job from.

Masks follow gcsim's convention (:mod:`gcsim.coding.stragglers`): ``masks[r, j]`` is True when
worker ``j``'s result of round ``r`` arrives.  The forgiveness order of the scheme (oldest debt
first) and its proof for every ``W`` (not only ``B | W - 1``) are gcsim's (theory §62.2); so are the
``"newest"`` order and the proof that on admissible sequences every forgiveness order works (§62.3).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .._validation import check_int, check_mask, check_real
from ..errors import InvalidArgumentError
from .encoders.classic import cyclic_repetition_assignment
from .straggler_base import StragglerModel
from .straggler_models import parse_spec, straggler_model

__all__ = [
    "bursty_violation",
    "is_bursty",
    "markov_masks",
    "straggler_masks",
    "job_masks",
    "FORGIVE",
    "selective_repeat_s",
    "SelectiveRepeat",
    "SequentialRun",
    "simulate_selective_repeat",
    "simulate_classic",
]


def _window(B: Any, W: Any, lam: Any, n: int | None = None) -> tuple[int, int, int]:
    B = check_int("B", B, minimum=1)
    W = check_int("W", W, minimum=1)
    lam = check_int("lam", lam, minimum=0, maximum=n)
    return B, W, lam


def _masks(masks: Any, n: int | None = None) -> np.ndarray:
    arr = np.asarray(masks)
    if arr.ndim != 2:
        raise InvalidArgumentError("masks", f"must be a (rounds, n) array of masks, got shape {arr.shape}")
    return check_mask("masks", arr, arr.shape[1] if n is None else n)


def bursty_violation(masks: Any, B: int, W: int, lam: int) -> int | None:
    """First round at which a mask sequence leaves the :math:`(B, W, \\lambda)`-bursty model (§62.1).

    The sequence is admissible when every window of ``W`` consecutive rounds (the first windows
    cut at round 0) has at most ``lam`` distinct stragglers, and two straggles of one worker in a
    window are fewer than ``B`` rounds apart (each worker's straggles in a window form one burst of
    length at most ``B``).

    Parameters
    ----------
    masks : array_like
        ``(rounds, n)`` boolean non-straggler masks.
    B, W, lam : int
        Burst length ``B >= 1``, window ``W >= 1``, stragglers per window ``0 <= lam <= n``.

    Returns
    -------
    int or None
        The first round ``r`` such that rounds ``0..r`` are not admissible, or None.

    Examples
    --------
    >>> m = np.ones((6, 3), bool); m[0, 0] = m[1, 0] = False
    >>> bursty_violation(m, B=2, W=3, lam=1) is None
    True
    >>> m[3, 0] = False                      # a second burst of worker 0 two rounds later
    >>> bursty_violation(m, B=2, W=3, lam=1)
    3
    """
    arr = _masks(masks)
    B, W, lam = _window(B, W, lam, arr.shape[1])
    strag = ~arr
    for r in range(arr.shape[0]):
        if _window_broken(strag, r, B, W, lam):
            return r
    return None


def _window_broken(strag: np.ndarray, r: int, B: int, W: int, lam: int) -> bool:
    """Whether the window of ``W`` rounds ending at round ``r`` breaks the model (``strag``: stragglers)."""
    lo = max(0, r - W + 1)
    if int(strag[lo : r + 1].any(axis=0).sum()) > lam:
        return True
    # a straggle at r and one in [r-W+1, r-B] are >= B and <= W-1 rounds apart
    early = strag[lo : max(lo, r - B + 1)].any(axis=0)
    return bool((early & strag[r]).any())


def is_bursty(masks: Any, B: int, W: int, lam: int) -> bool:
    """Whether a mask sequence is :math:`(B, W, \\lambda)`-admissible (:func:`bursty_violation` is None).

    Examples
    --------
    >>> is_bursty(np.ones((4, 2), bool), B=1, W=2, lam=0)
    True
    """
    return bursty_violation(masks, B, W, lam) is None


def markov_masks(n: int, rounds: int, p_enter: Any, p_leave: Any, seed: int = 0) -> np.ndarray:
    """``rounds`` consecutive masks of gcsim's ``"markov"`` straggler model (Gilbert–Elliott per worker).

    Examples
    --------
    >>> markov_masks(4, 5, p_enter=0.1, p_leave=0.5, seed=1).shape
    (5, 4)
    """
    rounds = check_int("rounds", rounds, minimum=1)
    model = straggler_model("markov", n, p_enter=p_enter, p_leave=p_leave)
    return np.asarray(model.sample(rounds, seed=seed), dtype=bool)


def straggler_masks(stragglers: Any, n: int, rounds: int, seed: int = 0) -> np.ndarray:
    """``rounds`` consecutive masks ``(rounds, n)`` of a registered straggler model.

    ``stragglers`` is a :class:`~gcsim.coding.straggler_base.StragglerModel` of ``n`` workers or a
    ``KIND:VALUES`` spec of the registry (:func:`gcsim.coding.straggler_models.parse_spec`, the
    grammar of ``--stragglers``); the bursty model of §62 is the ``"markov"`` kind.

    Examples
    --------
    >>> m = straggler_masks("markov:0.1,0.5", 4, 5, seed=1)
    >>> m.shape, bool(np.array_equal(m, markov_masks(4, 5, p_enter=0.1, p_leave=0.5, seed=1)))
    ((5, 4), True)
    """
    n = check_int("n", n, minimum=1)
    rounds = check_int("rounds", rounds, minimum=1)
    model = parse_spec(stragglers, n) if isinstance(stragglers, str) else stragglers
    if not isinstance(model, StragglerModel):
        raise InvalidArgumentError(
            "stragglers", f"must be a straggler model or a KIND:VALUES spec, got {type(stragglers).__name__}"
        )
    if model.n != n:
        raise InvalidArgumentError("stragglers", f"has n = {model.n} workers, expected {n}")
    return np.asarray(model.sample(rounds, seed=seed), dtype=bool)


def selective_repeat_s(B: int, W: int, lam: int) -> int:
    """Stragglers ``s`` the per-round code of the selective-repeat scheme tolerates (Theorem 62.2).

    ``s = ⌈lam / (⌊(W-1)/B⌋ + 1)⌉``; when ``B | W - 1`` this is the paper's
    ``⌈B·lam / (W - 1 + B)⌉``.

    Examples
    --------
    >>> selective_repeat_s(B=2, W=5, lam=3), selective_repeat_s(B=1, W=1, lam=2)
    (1, 2)
    """
    B, W, lam = _window(B, W, lam)
    return -(-lam // ((W - 1) // B + 1))


class SequentialRun(NamedTuple):
    """What a simulation of ``J`` jobs over ``R`` rounds returns.

    ``decoded[t]``: the round in which job ``t`` became decodable, ``-1`` if never (within its
    delay).  ``work[r, j]``: the job worker ``j`` computes in round ``r`` (``-1`` idle).
    ``waited[r]``: the master waited for every worker in round ``r`` (only with a ``wait_cost``).
    ``round_time[r]``: the load of the round's task (0 when every worker is idle) plus
    ``wait_cost`` if it waited.  ``delay``: ``T``.  ``load``: the normalized load per round.
    ``tasks``: tasks per worker per round (1 here; ``W - 1 + B`` mini-tasks of as many jobs for the
    multiplexed scheme of :mod:`gcsim.coding.sequential_multiplexed`, whose ``work[r, j]`` is then the
    newest of them).  ``error[t]`` (the multiplexed scheme only, else None): the normalized error
    of the gradient the master takes for job ``t`` (0 decoded, 1 dropped, the least-squares residual
    of a partly arrived job, theory §62.5).  ``weights[t]`` (its ``partial="least-squares"`` only):
    the least-squares combination's coefficient of each of the job's equal sub-parts, 1 where exact.
    """

    decoded: np.ndarray
    work: np.ndarray
    waited: np.ndarray
    round_time: np.ndarray
    delay: int
    load: float
    tasks: int = 1
    error: np.ndarray | None = None
    weights: np.ndarray | None = None

    @property
    def lost(self) -> int:
        """Jobs not decoded within the delay."""
        return int(np.sum(self.decoded < 0))

    @property
    def recovered_fraction(self) -> float:
        """Fraction of the jobs decoded within their delay."""
        return float(np.mean(self.decoded >= 0)) if self.decoded.size else 1.0

    @property
    def completion_time(self) -> float:
        """Time until the last decoded job is decoded (sum of ``round_time`` up to that round)."""
        done = self.decoded[self.decoded >= 0]
        return float(self.round_time[: int(done.max()) + 1].sum()) if done.size else 0.0


#: The orders in which :class:`SelectiveRepeat` picks the ``s`` forgiven debts (§62.2, §62.3).
FORGIVE = ("oldest", "newest")


class SelectiveRepeat:
    """The selective-repeat sequential gradient code for the :math:`(B, W, \\lambda)` model (§62.2).

    Every round each worker computes one task of a per-round gradient code for ``s`` stragglers
    (:func:`selective_repeat_s`; the cyclic repetition code, load ``(s+1)/n``).  If ``v > s``
    workers did not deliver job ``t`` in round ``t``, ``s`` of them are forgiven and the other
    ``v - s`` repeat their job-``t`` task in round ``t + B`` instead of their new one.  Delay ``T = B``.

    Parameters
    ----------
    n : int
        Workers, ``n > s``.
    B, W, lam : int
        The bursty model.
    forgive : {"oldest", "newest"}
        Which debts are forgiven: ``"oldest"`` (the oldest origins, the order of Theorem 62.2) or
        ``"newest"`` (the workers that just straggled; the repeaters are the ones that arrived).
        Both decode every admissible sequence (Proposition 62.4); outside the model they differ
        (Remark 62.5).  Ties: lower worker index.

    Examples
    --------
    >>> code = SelectiveRepeat(8, B=2, W=5, lam=3)
    >>> code.s, code.delay, code.load, code.classic_load
    (1, 2, 0.25, 0.5)
    """

    def __init__(self, n: int, B: int, W: int, lam: int, forgive: str = "oldest"):
        if forgive not in FORGIVE:
            raise InvalidArgumentError("forgive", f"must be one of {FORGIVE}, got {forgive!r}")
        self.forgive = forgive
        self.n = check_int("n", n, minimum=1)
        self.B, self.W, self.lam = _window(B, W, lam, self.n)
        self.s = selective_repeat_s(self.B, self.W, self.lam)
        if self.s >= self.n:
            raise InvalidArgumentError("lam", f"needs s = {self.s} < n = {self.n}")

    @property
    def delay(self) -> int:
        """``T = B``."""
        return self.B

    @property
    def load(self) -> float:
        """Normalized load ``(s + 1)/n`` (Theorem 62.2)."""
        return (self.s + 1) / self.n

    @property
    def classic_load(self) -> float:
        """Load ``(lam + 1)/n`` of the per-round cyclic code that tolerates the model with ``T = 0``."""
        return (min(self.lam, self.n - 1) + 1) / self.n

    def assignment(self) -> np.ndarray:
        """The per-round ``n x n`` cyclic repetition assignment (parts x workers) for ``s`` stragglers."""
        return cyclic_repetition_assignment(self.n, self.s)

    def __repr__(self) -> str:
        extra = "" if self.forgive == "oldest" else f", forgive={self.forgive!r}"
        return f"SelectiveRepeat(n={self.n}, B={self.B}, W={self.W}, lam={self.lam}{extra})"


def _wait_cost(wait_cost: Any) -> float | None:
    return None if wait_cost is None else check_real("wait_cost", wait_cost, minimum=0.0)


def simulate_selective_repeat(
    code: SelectiveRepeat, masks: Any, *, jobs: int | None = None, wait_cost: float | None = None
) -> SequentialRun:
    """Run the selective-repeat scheme over a mask sequence (§62.2).

    Parameters
    ----------
    code : SelectiveRepeat
        The scheme.
    masks : array_like
        ``(R, n)`` non-straggler masks, one per round.
    jobs : int, optional
        Jobs ``J <= R``; default ``R - B`` (the last ``B`` rounds only finish repeats).
    wait_cost : float, optional
        None: stragglers are lost and a job whose ``n - s`` tasks do not arrive by round ``t + B`` is
        not decoded.  A number ``>= 0``: in a round where a due job would fail the master waits for
        every worker (the round costs ``wait_cost`` more), so every job is decoded.

    Returns
    -------
    SequentialRun

    Examples
    --------
    >>> code = SelectiveRepeat(4, B=1, W=3, lam=2)           # s = 1
    >>> m = np.ones((4, 4), bool); m[0, :2] = False          # two stragglers in round 0
    >>> run = simulate_selective_repeat(code, m)
    >>> run.decoded.tolist(), run.work[1].tolist()           # worker 1 repeats job 0 in round 1
    ([1, 1, 2], [1, 0, 1, 1])
    """
    if not isinstance(code, SelectiveRepeat):
        raise InvalidArgumentError("code", f"must be a SelectiveRepeat, got {type(code).__name__}")
    arr = _masks(masks, code.n)
    wait = _wait_cost(wait_cost)
    R, n, s, B = arr.shape[0], code.n, code.s, code.B
    J = max(0, R - B) if jobs is None else check_int("jobs", jobs, minimum=0, maximum=R)
    decoded = np.full(J, -1, dtype=np.int64)
    work = np.full((R, n), -1, dtype=np.int64)
    waited = np.zeros(R, dtype=bool)
    round_time = np.zeros(R)
    # repeat[r] = {worker: origin round of its debt} for the workers repeating job r - B in round r
    repeat: dict[int, dict[int, int]] = {}
    missing = np.zeros(J, dtype=np.int64)  # |N_t|: workers that did not deliver job t in round t
    for r in range(R):
        rep = repeat.pop(r, {})
        for j in range(n):
            work[r, j] = r - B if j in rep else (r if r < J else -1)
        arrived = arr[r].copy()
        due = r - B
        if wait is not None and 0 <= due < J and decoded[due] < 0:
            if n - missing[due] + sum(bool(arrived[j]) for j in rep) < n - s:
                arrived[:] = True
                waited[r] = True
        if 0 <= due < J and decoded[due] < 0 and n - missing[due] + sum(bool(arrived[j]) for j in rep) >= n - s:
            decoded[due] = r
        if r < J:
            # N_r: repeaters (debt kept, or restarted at r if they straggled) and new stragglers
            owed = {j: (o if arrived[j] else r) for j, o in rep.items()}
            owed.update({j: r for j in range(n) if not arrived[j] and j not in rep})
            missing[r] = len(owed)
            if len(owed) <= s:
                decoded[r] = r
            else:
                # forgive s debts, oldest (or newest) origins first, ties by lower index; the rest repeat
                sign = 1 if code.forgive == "oldest" else -1
                order = sorted(owed, key=lambda j: (sign * owed[j], j))
                repeat[r + B] = {j: owed[j] for j in order[s:]}
        busy = bool((work[r] >= 0).any())
        round_time[r] = code.load * busy + (wait if waited[r] and wait is not None else 0.0)
    return SequentialRun(decoded, work, waited, round_time, B, code.load)


def simulate_classic(n: int, s: int, masks: Any, *, wait_cost: float | None = None) -> SequentialRun:
    """A per-round code for ``s`` stragglers (load ``(s+1)/n``, delay 0) over a mask sequence.

    Job ``t`` is decoded in round ``t`` iff at most ``s`` workers straggle; with a ``wait_cost`` the
    master waits for every worker in the other rounds (:func:`simulate_selective_repeat`).

    Examples
    --------
    >>> m = np.ones((3, 4), bool); m[1, :2] = False
    >>> simulate_classic(4, 1, m).decoded.tolist(), simulate_classic(4, 1, m, wait_cost=2.0).completion_time
    ([0, -1, 2], 3.5)
    """
    n = check_int("n", n, minimum=1)
    s = check_int("s", s, minimum=0, maximum=n - 1)
    arr = _masks(masks, n)
    wait = _wait_cost(wait_cost)
    R = arr.shape[0]
    ok = (~arr).sum(axis=1) <= s
    waited = ~ok if wait is not None else np.zeros(R, dtype=bool)
    decoded = np.where(ok | waited, np.arange(R), -1).astype(np.int64)
    load = (s + 1) / n
    round_time = load + (wait if wait is not None else 0.0) * waited
    work = np.broadcast_to(np.arange(R)[:, None], (R, n)).copy()
    return SequentialRun(decoded, work, waited, np.asarray(round_time, dtype=float), 0, load)


def job_masks(run: SequentialRun, masks: Any) -> np.ndarray:
    """Which workers' task of each job arrived within the delay: ``(J, n)`` booleans.

    ``out[t, j]`` is True when worker ``j`` computed its job-``t`` task in a round ``r <= t + delay``
    (``run.work[r, j] == t``) and that round's result arrived (``masks[r, j]``).  Job ``t`` decodes
    exactly from these workers when at least ``n - s`` are True; a trainer decodes each job from this
    mask (its gradient code's decoder), whatever the scheme.

    Examples
    --------
    >>> code = SelectiveRepeat(4, B=1, W=3, lam=2)
    >>> m = np.ones((4, 4), bool); m[0, :2] = False
    >>> job_masks(simulate_selective_repeat(code, m), m).astype(int).tolist()   # worker 1 repeats job 0
    [[0, 1, 1, 1], [1, 0, 1, 1], [1, 1, 1, 1]]
    """
    if not isinstance(run, SequentialRun):
        raise InvalidArgumentError("run", f"must be a SequentialRun, got {type(run).__name__}")
    if run.tasks != 1:
        raise InvalidArgumentError("run", f"has {run.tasks} mini-tasks per round; job masks need one task per round")
    arr = _masks(masks, run.work.shape[1])
    if arr.shape != run.work.shape:
        raise InvalidArgumentError("masks", f"must have the run's shape {run.work.shape}, got {arr.shape}")
    J = run.decoded.shape[0]
    out = np.zeros((J, arr.shape[1]), dtype=bool)
    rounds, workers = np.nonzero((run.work >= 0) & (run.work < J) & arr)
    jobs = run.work[rounds, workers]
    ok = rounds <= jobs + run.delay
    out[jobs[ok], workers[ok]] = True
    return out
