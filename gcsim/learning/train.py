r"""Training with coded gradients under Bernoulli stragglers (theory §60).

Simulation of one synchronous parameter-server (PS) iteration
--------------------------------------------------------------
1. The (mini-)batch is split into ``N`` equal data parts; the model computes the
   partial gradients ``g_i`` (``Σ_i g_i`` = gradient of the mean batch loss).
2. Each worker ``j`` sends ``g̃_j = Σ_k Σ_i B[kN+i, j] g_i[k] ∈ R^{d/m}``
   (theory §5.1; ``g_i[k]`` = block ``k`` of ``g_i``, zero-padded).
3. Each worker straggles independently with probability ``p`` (Bernoulli,
   theory §5.2); the PS decodes block ``l`` as ``ĝ[l] = Σ_{j∈F} X[j, l] g̃_j``
   with a decoder ``X`` of one of the kinds of :data:`DECODERS`:

   ``"optimal"``
       ``X = B_F⁺ T`` (least squares, theory §5.1): smallest error, biased.
   ``"unbiased"``
       RD (theory §45, Theorem 5): ``X[j, l] = 1[j∈F] d_l[j] / ((1-p) r E d²)``
       — unbiased when the diagonals are redrawn every iteration
       (``redraw=True``); any other encoder with a reference decoder
       ``B X_0 = T`` (NS, the exact family, fractional repetition):
       ``X = 1_F X_0 / (1-p)`` (Theorem 6).  Refused when ``B X_0 ≠ T``.
   ``"fixed"``
       ``X = 1_F X_0 / (1-p)`` for any reference decoder, without the check
       (biased when ``B X_0 ≠ T``, e.g. naive stacking with ``m > 1``).
   ``"arrivals"``
       ``X = 1_F X_0 · n/|F|``; with ``A = I`` and ``m = 1`` this is the
       *uncoded* baseline "ignore the stragglers, sum the arrived parts'
       gradients and rescale by ``n/|F|``".

   Since decoding is linear, ``ĝ = 𝒢 (B_F X_F)`` (theory §5.1): the simulator
   forms the ``mN x m`` matrix ``M = B_F X_F`` and applies it to the blocks,
   which costs ``O(m N d)`` instead of ``O(n N d)``;
   :func:`simulate_transmissions` runs the worker-level path (tests check
   both agree).
4. The optimizer (SGD with momentum, or Adam) steps with ``ĝ``.

Stragglers other than Bernoulli (``train(..., stragglers=model)``)
--------------------------------------------------------------
Any straggler model of :mod:`gcsim.coding.stragglers` can replace the Bernoulli draws (its
``sample(iterations, seed)`` gives the masks).  A delay model with an arrival rule
(:class:`gcsim.coding.delays.DelayStragglerModel`) also gives the clock: worker ``j``'s
transmission arrives ``X_j`` seconds after the iteration starts (compute and transfer), the rule
decides which arrivals are used, and the iteration lasts the decode time ``D`` of the rule
(theory §47); the :class:`WallClockModel` is then not used.

Communication-aware simulated wall clock (:class:`WallClockModel`)
------------------------------------------------------------------
Iteration time ``= max_{j∈F} e_j t_ex + (latency + ⌈d/m⌉ b / β) · (|F| if shared else 1)``
where ``e_j`` is the number of examples worker ``j`` processes (the sizes of
the parts it holds), ``t_ex`` seconds per example gradient, ``b`` bytes per
transmitted scalar and ``β`` the link bandwidth (bytes/s).  Stragglers are not
waited for.  With per-worker links (default) the transmissions overlap;
``shared_link=True`` serializes them on the PS ingress link.  When every
worker straggles the PS waits for the slowest worker (a timeout) and makes no
update.  This is a model, not a measurement (reconstruction).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._optional import require
from .._validation import check_bool, check_finite_array, check_int, check_mask, check_real
from ..cerar.protocol import round_bfloat16
from ..coding.bounds import split_blocks
from ..coding.decoders import arrival_scale, bernoulli_rescaled, optimal_decoders
from ..coding.encoders import get_encoder
from ..coding.schemes import Scheme, encode
from ..coding.straggler_base import StragglerModel
from ..coding.stragglers import BernoulliModel, straggler_model
from ..errors import InvalidArgumentError
from ..limits import check_entries
from .datasets import Dataset
from .models import MLP

__all__ = [
    "DECODERS",
    "CodeSpec",
    "CodedGradient",
    "WallClockModel",
    "SGD",
    "Adam",
    "TrainResult",
    "train",
    "partition",
    "simulate_transmissions",
    "transmissions",
    "PRECISIONS",
    "resolve_precision",
]

DECODERS = ("optimal", "unbiased", "fixed", "arrivals")


# ----------------------------------------------------------------------------------------------
# the code under test
# ----------------------------------------------------------------------------------------------


@dataclass
class CodeSpec:
    """What the PS and the workers run: an assignment, an encoder, a decoder.

    Attributes
    ----------
    label : str
        Legend entry.
    assignment : array_like (N, n) or object with ``.assignment``
    m : int
        Communication reduction (each worker sends ``⌈d/m⌉`` scalars).
    method : str
        Encoder of :func:`gcsim.coding.schemes.encode` (``"naive"``, ``"rd"``,
        ``"ns"``, ``"exact-gaussian"``, ...).
    decoder : str
        One of :data:`DECODERS`.
    redraw : bool
        Re-encode every iteration with a fresh seed (RD/NS randomness).
    options : dict
        ``eps``, ``dist``, ``s``, ... passed to ``encode``.

    Examples
    --------
    >>> spec = CodeSpec("uncoded", np.eye(4, dtype=int), decoder="arrivals")
    >>> spec.n, spec.num_parts
    (4, 4)
    """

    label: str
    assignment: Any
    m: int = 1
    method: str = "naive"
    decoder: str = "optimal"
    redraw: bool = False
    options: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        A = np.asarray(getattr(self.assignment, "assignment", self.assignment))
        if A.ndim != 2:
            raise InvalidArgumentError("assignment", f"must be a 2-D 0/1 matrix, got shape {A.shape}")
        self.assignment = A.astype(np.int64)
        self.m = check_int("m", self.m, minimum=1)
        self.redraw = check_bool("redraw", self.redraw)
        if self.decoder not in DECODERS:
            raise InvalidArgumentError("decoder", f"must be one of {DECODERS}, got {self.decoder!r}")
        self.redraw = bool(self.redraw)
        self.options = dict(self.options)

    @property
    def num_parts(self) -> int:
        """Number of data parts."""
        return int(self.assignment.shape[0])

    @property
    def n(self) -> int:
        """Number of workers."""
        return int(self.assignment.shape[1])


def _straggling_probabilities(p: Any, n: int) -> np.ndarray:
    """``p`` as an ``(n,)`` array of probabilities in [0, 1) (scalar or per worker), naming ``p``."""
    if isinstance(p, (list, tuple, np.ndarray)):
        return BernoulliModel(n, np.asarray(p, dtype=float)).p.copy()
    return np.full(n, check_real("p", p, minimum=0.0, maximum=1.0, strict_max=True))


def _assumed_p(p: Any, stragglers: StragglerModel | None, decoder: str) -> Any:
    """The straggling probability the decoders assume (see :func:`train`'s ``p``)."""
    if stragglers is None:
        return 0.2 if p is None else p
    declared = stragglers.declared_p()  # a Bernoulli model's own p
    if declared is not None:
        if p is not None and not np.array_equal(
            _straggling_probabilities(p, stragglers.n), _straggling_probabilities(declared, stragglers.n)
        ):
            shown = getattr(stragglers.params, "p", declared)
            raise InvalidArgumentError("p", f"differs from the Bernoulli model's p = {shown}; omit it")
        return declared
    if p is None:
        if decoder in ("unbiased", "fixed"):
            raise InvalidArgumentError(
                "p",
                f"the {decoder!r} decoder scales by 1/(1 - p_j): under a {stragglers.model_kind!r} straggler model "
                "pass the straggling probability it should assume",
            )
        return 0.0  # not used by the other decoders
    return p


class CodedGradient:
    """Encoder + straggler-aware decoder of one :class:`CodeSpec`, for a straggling probability ``p``.

    Parameters
    ----------
    spec : CodeSpec
    p : float in [0, 1) or array (n,) of them
        Bernoulli straggling probability of every worker, or per worker
        ``p_j`` (used by the ``"unbiased"`` and ``"fixed"`` decoders, which
        scale row ``j`` by ``1/(1 - p_j)``).  Stored as an ``(n,)`` array.
    seed : int
        Seed of the encoder (draw ``t`` of a redrawn code uses ``seed`` and ``t``).

    Examples
    --------
    >>> A = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
    >>> code = CodedGradient(CodeSpec("rd", A, m=1, method="rd"), p=0.2, seed=0)
    >>> G = np.arange(12.0).reshape(3, 4)                  # N = 3 parts, d = 4
    >>> est = code.estimates(G, np.ones((1, 3), bool))      # B invertible, no straggler: exact
    >>> bool(np.allclose(est[0], G.sum(axis=0)))
    True
    """

    def __init__(self, spec: CodeSpec, p: float = 0.0, seed: int = 0):
        if not isinstance(spec, CodeSpec):
            raise InvalidArgumentError("spec", f"must be a CodeSpec, got {type(spec).__name__}")
        self.spec = spec
        self.p = _straggling_probabilities(p, spec.n)
        self.seed = check_int("seed", seed, minimum=0)
        opts = dict(spec.options)
        self._eps = opts.pop("eps", 0.0)
        self._opts = opts
        self.base = self._encode(self.seed)  # validates method, options and assignment once
        self.r = self.base.replication
        self._T = self.base.target()
        # the encoder's own unbiased decoder (RD's), else the reference decoder rescaled (gcsim.coding.encoders)
        self._unbiased = get_encoder(spec.method).unbiased
        if spec.decoder == "unbiased" and self._unbiased is None:
            self._check_reference(self.base)
        if (
            spec.decoder == "unbiased"
            and self._unbiased is not None
            and self._unbiased.regular
            and not np.all(self.r == self.r[0])
        ):
            raise InvalidArgumentError(
                "decoder", f"the unbiased {self._unbiased.label} decoder needs regular replication r_i = r"
            )

    def _encode(self, seed: int) -> Scheme:
        return encode(self.spec.assignment, self.spec.m, self.spec.method, eps=self._eps, seed=seed, **self._opts)

    def _check_reference(self, scheme: Scheme) -> None:
        X0 = scheme.decoder
        if X0 is None or np.abs(scheme.B @ X0 - self._T).max() > 1e-8 * max(1.0, np.abs(X0).max()):
            raise InvalidArgumentError(
                "decoder",
                f"'unbiased' needs a reference decoder with B X_0 = T; encoder {self.spec.method!r} "
                "has none here (use 'fixed' to run the biased variant, or 'optimal')",
            )

    def draw_seed(self, t: int) -> int:
        """Encoder seed of draw ``t`` (``seed`` itself when the code is not redrawn)."""
        return (
            self.seed if not self.spec.redraw else int(np.random.SeedSequence([self.seed, int(t)]).generate_state(1)[0])
        )

    # -- decoding --------------------------------------------------------------------------------
    def _encoders(self, count: int, draws: np.ndarray | None, rng: np.random.Generator | None):
        """``B`` per sample ``(count, mN, n)`` (or one ``(mN, n)``) and reference decoders / RD diagonals."""
        spec = self.spec
        if not spec.redraw:
            return self.base.B, self.base.decoder, self.base.diagonals
        draw = self._unbiased.draw if self._unbiased is not None else None
        if draw is not None and rng is not None:
            # batched draws (RD: block k of sample s is A diag(D[s, k]))
            B, D = draw(rng, count, spec.assignment, spec.m, self._eps, self._opts)
            return B, None, D
        assert draws is not None  # decoders() always passes the draws
        seeds = [self.draw_seed(int(t)) for t in draws]
        schemes = [self._encode(s) for s in seeds]  # one encoder per draw (NS pseudo-inverses per part)
        B = np.stack([s.B for s in schemes])
        decoders = [s.decoder for s in schemes if s.decoder is not None]
        diagonals = [s.diagonals for s in schemes if s.diagonals is not None]
        # a method gives every draw a reference decoder (diagonals) or none does
        X0 = np.stack(decoders) if len(decoders) == len(schemes) else None
        Ds = np.stack(diagonals) if len(diagonals) == len(schemes) else None
        return B, X0, Ds

    def decoders(
        self, masks: Any, *, draws: Any = None, rng: np.random.Generator | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Encoders and decoders for a batch of non-straggler masks.

        Returns ``(B, X)``: ``B`` of shape ``(mN, n)`` or ``(count, mN, n)``
        (redrawn codes) and ``X`` of shape ``(count, n, m)``, zero on stragglers.
        ``draws`` (default ``0..count-1``) index the encoder draws of a redrawn
        code; ``rng`` (optional) draws RD diagonals in one batch instead.
        """
        masks = check_mask("masks", masks, self.spec.n)
        masks = masks[None] if masks.ndim == 1 else masks
        count, n, m = masks.shape[0], self.spec.n, self.spec.m
        draws = np.arange(count) if draws is None else np.asarray(draws)
        if draws.shape != (count,) or (draws.size and (draws.dtype.kind not in "iu" or draws.min() < 0)):
            raise InvalidArgumentError(
                "draws", f"must be {count} non-negative integers (one per mask), got shape {draws.shape}"
            )
        B, X0, D = self._encoders(count, draws, rng)
        Bs = np.broadcast_to(B, (count,) + B.shape[-2:])
        kind = self.spec.decoder
        mk = masks[:, :, None].astype(float)
        if kind == "optimal":
            X = optimal_decoders(Bs, masks, m)
        elif kind == "unbiased" and self._unbiased is not None:
            X = self._unbiased.decoders(D, masks, int(self.r[0]), self.p, self._eps, self._opts)
        else:
            if X0 is None:
                raise InvalidArgumentError(
                    "decoder", f"encoder {self.spec.method!r} has no reference decoder for the {kind!r} decoder"
                )
            if kind == "unbiased" and X0.ndim == 3:
                for idx in range(X0.shape[0]):
                    self._check_reference(Scheme(B=Bs[idx], assignment=self.spec.assignment, m=m, decoder=X0[idx]))
            X0s = np.broadcast_to(X0, (count, n, m))
            if kind == "arrivals":
                X = mk * X0s * arrival_scale(masks)[:, None, None]
            else:  # unbiased (reference decoder) or fixed
                X = mk * bernoulli_rescaled(X0s, self.p)
        return B, X

    def effective(self, masks: Any, *, draws: Any = None, rng: np.random.Generator | None = None) -> np.ndarray:
        """``M = B_F X_F`` per mask, shape ``(count, mN, m)``: ``ĝ = 𝒢 M`` (theory §5.1)."""
        B, X = self.decoders(masks, draws=draws, rng=rng)
        return np.matmul(B, X)

    def estimates(
        self,
        gradients: Any,
        masks: Any,
        *,
        draws: Any = None,
        rng: np.random.Generator | None = None,
        precision: str = "float64",
    ) -> np.ndarray:
        """Decoded gradients ``ĝ`` (``(count, d)``) for part gradients ``(N, d)`` and masks ``(count, n)``.

        Block ``l`` of sample ``s``: ``ĝ[l] = Σ_{k,i} M_s[kN+i, l] g_i[k]`` in float64.  With
        ``precision="float32"`` or ``"bfloat16"`` the workers hold, encode and send in that
        precision (:func:`transmissions`) and the PS decodes the rounded messages in float64:
        ``ĝ[l] = Σ_{j∈F} X[j, l] fl(g̃_j)`` (theory §60.4 bounds the error this adds by
        ``‖X_F‖₂`` times the rounding of the messages).
        """
        G = check_finite_array("gradients", gradients, ndim=2)
        if G.shape[0] != self.spec.num_parts:
            raise InvalidArgumentError(
                "gradients", f"must have shape (N, d) with N = {self.spec.num_parts}, got {G.shape}"
            )
        precision = resolve_precision(precision)
        m, N = self.spec.m, self.spec.num_parts
        d = G.shape[1]
        # (N, m, w): a view of G when m divides d (split_blocks zero-pads a copy otherwise)
        blocks = G.reshape(N, m, d // m) if d % m == 0 else split_blocks(G, m)
        if precision != "float64":
            B, X = self.decoders(masks, draws=draws, rng=rng)
            sent = transmissions(B, blocks, precision)  # (count, n, w), rounded as sent
            est = np.matmul(np.swapaxes(X, 1, 2), sent)  # the PS decodes in float64
            return est.reshape(est.shape[0], -1)[:, : G.shape[1]]
        M = self.effective(masks, draws=draws, rng=rng)  # (count, mN, m), row kN + i
        count = M.shape[0]
        # row i m + k of the blocks as an (N m, w) matrix is g_i[k]: M's rows in that order, one product a sample
        Mr = M.reshape(count, m, N, m).transpose(0, 2, 1, 3).reshape(count, N * m, m)
        est = np.matmul(np.swapaxes(Mr, 1, 2), blocks.reshape(N * m, -1))  # (count, m, w)
        return est.reshape(count, -1)[:, :d]


#: working precisions of the workers' messages (:func:`transmissions`)
PRECISIONS = ("float64", "float32", "bfloat16")


def resolve_precision(precision: Any) -> str:
    """``precision`` as one of :data:`PRECISIONS`, naming the argument otherwise.

    >>> resolve_precision("float32")
    'float32'
    """
    if isinstance(precision, str) and precision in PRECISIONS:
        return precision
    raise InvalidArgumentError("precision", f"must be one of {PRECISIONS}, got {precision!r}")


def _round(x: np.ndarray, precision: str) -> np.ndarray:
    """``x`` stored in ``precision`` (float32 array; bfloat16 rounded to nearest even, kept in float32)."""
    x32 = np.asarray(x, dtype=np.float32)
    return round_bfloat16(x32) if precision == "bfloat16" else x32


def transmissions(B: Any, blocks: Any, precision: str = "float64") -> np.ndarray:
    """Workers' messages ``g̃_j = Σ_k Σ_i B[kN+i, j] g_i[k]`` computed and sent in ``precision``.

    ``B`` is ``(mN, n)`` or ``(count, mN, n)``, ``blocks`` the ``(N, m, w)`` blocks of the
    part gradients (:func:`gcsim.coding.bounds.split_blocks`).  In ``"float32"`` the encoder,
    the blocks and the sums are float32 (one matrix product); in ``"bfloat16"`` the encoder and
    the blocks are rounded to bfloat16, the products summed in float32 and the message rounded
    to bfloat16 (bfloat16 storage, float32 accumulation, as on accelerators).  Returns float64
    ``(count, n, w)`` holding the rounded values.

    Examples
    --------
    >>> B = np.array([[1.0, 0.0], [1.0, 1.0]]); blocks = np.array([[[1.0]], [[1 + 2.0**-10]]])
    >>> transmissions(B, blocks, "float64")[0, :, 0].tolist()      # g1 + g2 and g2
    [2.0009765625, 1.0009765625]
    >>> transmissions(B, blocks, "bfloat16")[0, :, 0].tolist()     # 2^-10 is below bfloat16's 2^-8
    [2.0, 1.0]
    """
    precision = resolve_precision(precision)
    blocks = check_finite_array("blocks", blocks, ndim=3)
    N, m, w = blocks.shape
    stacked = np.swapaxes(blocks, 0, 1).reshape(m * N, w)  # row kN + i = g_i[k]
    B3 = check_finite_array("B", B)
    if B3.ndim not in (2, 3) or B3.shape[-2] != m * N:
        raise InvalidArgumentError(
            "B", f"must have shape (mN, n) or (count, mN, n) with mN = {m * N} (from blocks), got {B3.shape}"
        )
    B3 = B3[None] if B3.ndim == 2 else B3
    if precision == "float64":
        return np.matmul(np.swapaxes(B3, 1, 2), stacked)
    sent = np.matmul(np.swapaxes(_round(B3, precision), 1, 2), _round(stacked, precision))
    return _round(sent, precision).astype(np.float64)


def simulate_transmissions(scheme: Scheme, gradients: Any, decoder: Any) -> tuple[np.ndarray, np.ndarray]:
    """Worker-level simulation: transmissions ``g̃_j`` and the decoded gradient ``ĝ``.

    ``g̃_j = Σ_k Σ_i B[kN+i, j] g_i[k]`` (``(n, ⌈d/m⌉)``), then
    ``ĝ[l] = Σ_j X[j, l] g̃_j`` (zero rows of ``X`` = stragglers).

    Examples
    --------
    >>> sch = encode(np.eye(2, dtype=int), 1, "naive")
    >>> sent, g = simulate_transmissions(sch, [[1.0, 2.0], [3.0, 4.0]], [[1.0], [0.0]])
    >>> sent.tolist(), g.tolist()
    ([[1.0, 2.0], [3.0, 4.0]], [1.0, 2.0])
    """
    G = check_finite_array("gradients", gradients, ndim=2)
    if G.shape[0] != scheme.num_parts:
        raise InvalidArgumentError("gradients", f"must have shape (N, d) with N = {scheme.num_parts}, got {G.shape}")
    X = check_finite_array("decoder", decoder)
    if X.shape != (scheme.n, scheme.m):
        raise InvalidArgumentError("decoder", f"must have shape (n, m) = {(scheme.n, scheme.m)}, got {X.shape}")
    blocks = split_blocks(G, scheme.m)
    sent = np.einsum("kij,ikw->jw", scheme.B.reshape(scheme.m, scheme.num_parts, scheme.n), blocks)
    est = (X.T @ sent).reshape(-1)[: G.shape[1]]
    return sent, est


# ----------------------------------------------------------------------------------------------
# wall clock
# ----------------------------------------------------------------------------------------------


@dataclass
class WallClockModel:
    """Communication-aware iteration time (see the module docstring).

    Attributes
    ----------
    seconds_per_example : float
        ``t_ex``, compute time of one example's gradient on a worker.
    bandwidth : float
        ``β`` in bytes per second (per worker link, or of the shared PS link).
    bytes_per_scalar : int
        4 (float32 transmissions) by default.
    latency : float
        Per-message latency in seconds.
    shared_link : bool
        Serialize the arrived workers' messages on one PS link.

    Examples
    --------
    >>> wc = WallClockModel(seconds_per_example=1e-3, bandwidth=4e3, latency=0.0)
    >>> wc.iteration_time([10, 20, 30], [True, True, False], d=8, m=2)   # 0.02 + 4*4/4e3
    0.024
    """

    seconds_per_example: float = 1e-5
    bandwidth: float = 1e6
    bytes_per_scalar: int = 4
    latency: float = 1e-3
    shared_link: bool = False

    def __post_init__(self) -> None:
        self.seconds_per_example = check_real("seconds_per_example", self.seconds_per_example, minimum=0.0)
        self.bandwidth = check_real("bandwidth", self.bandwidth, minimum=0.0, strict_min=True)
        self.bytes_per_scalar = check_int("bytes_per_scalar", self.bytes_per_scalar, minimum=1)
        self.latency = check_real("latency", self.latency, minimum=0.0)
        self.shared_link = check_bool("shared_link", self.shared_link)

    def message_time(self, d: int, m: int) -> float:
        """Seconds to send one ``⌈d/m⌉``-scalar message."""
        return self.latency + math.ceil(d / m) * self.bytes_per_scalar / self.bandwidth

    def iteration_time(self, examples: Any, mask: Any, d: int, m: int) -> float:
        """Time of one iteration for per-worker example counts and a non-straggler mask."""
        e = np.asarray(examples, dtype=float)
        mask = check_mask("mask", mask, e.size)
        msg = self.message_time(d, m)
        if not mask.any():  # nobody arrived: the PS times out after the slowest worker
            return float(e.max() * self.seconds_per_example + msg)
        comm = msg * (mask.sum() if self.shared_link else 1)
        return float(e[mask].max() * self.seconds_per_example + comm)

    def iteration_times(self, examples: Any, masks: np.ndarray, d: int, m: int) -> np.ndarray:
        """Vectorized :meth:`iteration_time` over a ``(count, n)`` batch of masks."""
        e = np.asarray(examples, dtype=float)
        msg = self.message_time(d, m)
        arrived = masks.sum(axis=1)
        compute = np.where(masks, e[None, :], -np.inf).max(axis=1)
        comm = msg * (arrived if self.shared_link else 1)
        return np.where(
            arrived > 0, compute * self.seconds_per_example + comm, e.max() * self.seconds_per_example + msg
        )


# ----------------------------------------------------------------------------------------------
# optimizers
# ----------------------------------------------------------------------------------------------


class SGD:
    """SGD with (heavy-ball) momentum: ``v ← μ v + g``, ``θ ← θ - η v``.

    Examples
    --------
    >>> opt = SGD(lr=0.5); opt.step(np.array([1.0]), np.array([2.0])).tolist()
    [0.0]
    """

    def __init__(self, lr: float = 0.1, momentum: float = 0.0):
        self.lr = check_real("lr", lr, minimum=0.0, strict_min=True)
        self.momentum = check_real("momentum", momentum, minimum=0.0, maximum=1.0, strict_max=True)
        self._v: np.ndarray | None = None

    def step(self, theta: np.ndarray, grad: np.ndarray) -> np.ndarray:
        """Return the updated parameters."""
        self._v = grad if self._v is None or self.momentum == 0 else self.momentum * self._v + grad
        return theta - self.lr * self._v


class Adam:
    """Adam (Kingma & Ba 2015) with bias-corrected moments.

    Examples
    --------
    >>> opt = Adam(lr=0.1); bool(abs(opt.step(np.array([1.0]), np.array([3.0]))[0] - 0.9) < 1e-6)
    True
    """

    def __init__(self, lr: float = 1e-3, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8):
        self.lr = check_real("lr", lr, minimum=0.0, strict_min=True)
        self.beta1 = check_real("beta1", beta1, minimum=0.0, maximum=1.0, strict_max=True)
        self.beta2 = check_real("beta2", beta2, minimum=0.0, maximum=1.0, strict_max=True)
        self.eps = check_real("eps", eps, minimum=0.0, strict_min=True)
        self._m: np.ndarray | None = None
        self._v: np.ndarray | None = None
        self._t = 0

    def step(self, theta: np.ndarray, grad: np.ndarray) -> np.ndarray:
        """Return the updated parameters."""
        m_prev = np.zeros_like(theta) if self._m is None else self._m
        v_prev = np.zeros_like(theta) if self._v is None else self._v
        self._t += 1
        self._m = self.beta1 * m_prev + (1 - self.beta1) * grad
        self._v = self.beta2 * v_prev + (1 - self.beta2) * grad * grad
        mhat = self._m / (1 - self.beta1**self._t)
        vhat = self._v / (1 - self.beta2**self._t)
        return theta - self.lr * mhat / (np.sqrt(vhat) + self.eps)


def _optimizer(name: str, lr: float, momentum: float):
    if name == "sgd":
        return SGD(lr, momentum)
    if name == "adam":
        return Adam(lr)
    raise InvalidArgumentError("optimizer", f"must be 'sgd' or 'adam', got {name!r}")


# ----------------------------------------------------------------------------------------------
# training
# ----------------------------------------------------------------------------------------------


def partition(count: int, N: int, seed: int = 0) -> np.ndarray:
    """Seeded split of ``count`` example indices into ``N`` equal parts ``(N, count // N)``.

    The ``count mod N`` examples left over by the shuffle are dropped.

    Examples
    --------
    >>> P = partition(10, 3, seed=0)
    >>> P.shape, len(set(P.ravel().tolist()))
    ((3, 3), 9)
    """
    count = check_int("count", count, minimum=1)
    check_entries("count", (count,), "the permutation of the examples")
    N = check_int("N", N, minimum=1, maximum=count)
    perm = np.random.default_rng(check_int("seed", seed, minimum=0)).permutation(count)
    size = count // N
    return perm[: N * size].reshape(N, size)


@dataclass
class TrainResult:
    """History of one training run.

    Attributes
    ----------
    label : str
    history : pandas.DataFrame
        One row per evaluation: ``iteration``, ``wallclock`` (simulated
        seconds), ``train_loss``, ``train_acc``, ``test_loss``, ``test_acc``,
        ``rel_error`` (mean of ``‖ĝ - g‖²/‖g‖²`` since the last evaluation)
        and ``arrived`` (mean number of non-stragglers since the last one).
    theta : numpy.ndarray
        Final parameters.
    params : dict
    """

    label: str
    history: Any
    theta: np.ndarray
    params: dict

    @property
    def final(self) -> dict:
        """The last row of the history as a dict."""
        return self.history.iloc[-1].to_dict()


def train(
    spec: CodeSpec,
    dataset: Dataset,
    *,
    model: MLP | None = None,
    p: Any = None,
    iterations: int = 200,
    optimizer: str = "sgd",
    lr: float = 0.1,
    momentum: float = 0.0,
    batch_per_part: int | None = None,
    eval_every: int = 10,
    seed: int = 0,
    wallclock: WallClockModel | None = None,
    init_seed: int | None = None,
    stragglers: StragglerModel | None = None,
    precision: str = "float64",
    divergence: str = "raise",
    stop_loss: float | None = None,
) -> TrainResult:
    """Train ``model`` on ``dataset`` with gradients coded by ``spec`` under Bernoulli(p) stragglers
    (or the straggler model ``stragglers``).

    Parameters
    ----------
    spec : CodeSpec
    dataset : Dataset
    model : MLP, optional
        Default ``MLP((features, 128, classes))``.
    p : float in [0, 1) or array (n,) of them, optional
        Straggling probability of every worker (or of worker ``j``) in every iteration: draws the
        Bernoulli masks (default 0.2) and is what the ``"unbiased"`` and ``"fixed"`` decoders
        assume.  With ``stragglers`` given, ``p`` is only the decoders' assumption: it defaults
        to the model's ``p`` for a Bernoulli model and must be given for those two decoders
        under any other model.
    iterations : int >= 1
    optimizer : {"sgd", "adam"}
    lr, momentum : float
    batch_per_part : int, optional
        Examples drawn (without replacement) from each part per iteration;
        default: the whole part (full-batch gradient descent).
    eval_every : int >= 1
        Evaluate train/test loss and accuracy every this many iterations
        (and at iterations 0 and ``iterations``).
    seed : int
        Seeds the partition, the straggler masks (``Bernoulli.sample(iterations, seed)``),
        the mini-batches and the encoder.  Codes with the same ``n`` see the
        same straggler masks (common random numbers).
    wallclock : WallClockModel, optional
        Iteration times from compute and message sizes (module docstring); not allowed with a
        delay model, whose arrival times give the clock.
    init_seed : int, optional
        Seed of the initial parameters (default ``seed``).
    stragglers : StragglerModel, optional
        Draws the non-straggler masks (``stragglers.sample(iterations, seed)``) instead of
        Bernoulli(``p``); a :class:`~gcsim.coding.delays.DelayStragglerModel` also sets each
        iteration's duration to its decode time.
    precision : {"float64", "float32", "bfloat16"}
        Precision in which the workers encode and send their messages (:func:`transmissions`);
        the model, its gradients and the decoding stay float64.
    divergence : {"raise", "stop"}
        What a decoded gradient or parameters that are not finite do: raise
        :class:`FloatingPointError`, or end the run there with a last row whose losses are
        ``inf`` (``params["diverged_at"]`` = the iteration; ``None`` when the run finished).
    stop_loss : float, optional
        End the run at the first evaluation whose training loss is at or below this value (a
        time-to-target run: what follows the first crossing does not change it); by default the
        run lasts ``iterations``.  ``params["stopped_at"]`` is that iteration (``None``: never
        reached, the run lasted ``iterations``).  Such a run evaluates the training set only: its
        history's test loss and accuracy are NaN.

    Returns
    -------
    TrainResult

    Examples
    --------
    >>> from gcsim.learning.datasets import load_digits
    >>> ds = load_digits(seed=0)
    >>> spec = CodeSpec("uncoded", np.eye(4, dtype=int), decoder="arrivals")
    >>> res = train(spec, ds, model=MLP((64, 16, 10)), iterations=20, eval_every=10, lr=0.5)
    >>> list(res.history.iteration), bool(res.final["train_loss"] < res.history.train_loss[0])
    ([0, 10, 20], True)
    """
    require("pandas", "learning", "gcsim.learning.train.train")
    import pandas as pd

    if not isinstance(dataset, Dataset):
        raise InvalidArgumentError("dataset", f"must be a Dataset, got {type(dataset).__name__}")
    n_workers = spec.n if isinstance(spec, CodeSpec) else 1
    _check_stragglers(stragglers, n_workers, wallclock)
    p = _assumed_p(p, stragglers, spec.decoder if isinstance(spec, CodeSpec) else "optimal")
    p_workers = _straggling_probabilities(p, n_workers)
    iterations = check_int("iterations", iterations, minimum=1)
    eval_every = check_int("eval_every", eval_every, minimum=1)
    seed = check_int("seed", seed, minimum=0)
    init_seed = seed if init_seed is None else check_int("init_seed", init_seed, minimum=0)
    model = _check_model(model, dataset)
    wallclock = WallClockModel() if wallclock is None else wallclock
    if not isinstance(wallclock, WallClockModel):
        raise InvalidArgumentError("wallclock", f"must be a WallClockModel, got {type(wallclock).__name__}")
    precision = resolve_precision(precision)
    if divergence not in ("raise", "stop"):
        raise InvalidArgumentError("divergence", f"must be 'raise' or 'stop', got {divergence!r}")
    if stop_loss is not None:
        stop_loss = check_real("stop_loss", stop_loss)
    opt = _optimizer(optimizer, lr, momentum)
    code = CodedGradient(spec, p, seed)
    N, n, m = spec.num_parts, spec.n, spec.m
    parts = partition(dataset.n_train, N, seed)
    size = parts.shape[1]
    b = size if batch_per_part is None else check_int("batch_per_part", batch_per_part, minimum=1, maximum=size)
    examples = spec.assignment.T @ np.full(N, b)  # e_j: examples processed by worker j
    masks, times = _masks_and_times(stragglers, n, p_workers, wallclock, examples, model.d, m, iterations, seed)
    batches = _Batches(dataset, parts, b, np.random.default_rng([seed, 1]))
    theta = model.init(init_seed)
    history = _History(model, dataset, n, stop_loss)
    theta, diverged_at, stopped_at = _iterate(
        code,
        opt,
        history,
        theta,
        batches=batches,
        masks=masks,
        times=times,
        eval_every=eval_every,
        precision=precision,
        divergence=divergence,
        label=spec.label,
    )
    homogeneous = bool(np.all(p_workers == p_workers[0]))
    params = {
        "label": spec.label,
        "method": spec.method,
        "decoder": spec.decoder,
        "redraw": spec.redraw,
        "m": m,
        "N": N,
        "n": n,
        "p": float(p_workers[0]) if homogeneous else p_workers.tolist(),
        "stragglers": "bernoulli" if stragglers is None else stragglers.describe(),
        "iterations": iterations,
        "optimizer": optimizer,
        "lr": lr,
        "momentum": momentum,
        "batch_per_part": b,
        "seed": seed,
        "d": model.d,
        "precision": precision,
        "diverged_at": diverged_at,
        "stopped_at": stopped_at,
        "options": {k: v for k, v in spec.options.items() if np.isscalar(v)},
    }
    return TrainResult(spec.label, pd.DataFrame(history.rows), theta, params)


def _check_stragglers(stragglers: Any, n_workers: int, wallclock: Any) -> None:
    """A straggler model of the code's ``n`` workers; a delay model's clock excludes ``wallclock``."""
    if stragglers is None:
        return
    if not isinstance(stragglers, StragglerModel):
        raise InvalidArgumentError(
            "stragglers", f"must be a straggler model (gcsim.straggler_model), got {type(stragglers).__name__}"
        )
    if stragglers.n != n_workers:
        raise InvalidArgumentError("stragglers", f"has n = {stragglers.n} workers, the code has {n_workers}")
    if stragglers.delay_parts() is not None and wallclock is not None:
        raise InvalidArgumentError(
            "wallclock", "a delay model's arrival times give the iteration times; pass one of the two"
        )


def _check_model(model: Any, dataset: Dataset) -> MLP:
    """``model``, by default ``MLP((features, 128, classes))``, checked against the dataset's shape."""
    model = MLP((dataset.n_features, 128, dataset.n_classes)) if model is None else model
    if not isinstance(model, MLP) or model.sizes[0] != dataset.n_features or model.sizes[-1] < dataset.n_classes:
        raise InvalidArgumentError(
            "model",
            f"must be an MLP with {dataset.n_features} inputs and >= {dataset.n_classes} outputs, got {model!r}",
        )
    return model


def _masks_and_times(
    stragglers: StragglerModel | None,
    n: int,
    p_workers: np.ndarray,
    wallclock: WallClockModel,
    examples: np.ndarray,
    d: int,
    m: int,
    iterations: int,
    seed: int,
) -> tuple[np.ndarray, np.ndarray]:
    """The non-straggler masks ``(iterations, n)`` and each iteration's duration.

    A delay model gives both (its decode times); otherwise the masks are Bernoulli(``p_workers``)
    or the model's, and the durations the wall-clock model's.
    """
    timed = stragglers.delay_parts() if stragglers is not None else None
    if timed is not None:  # the delays give the clock too
        delays, rule = timed
        masks, times = rule.apply(delays.sample_delays(iterations, seed))
        if not np.all(np.isfinite(times)):
            first = int(np.argmin(np.isfinite(times)))
            raise InvalidArgumentError(
                "stragglers", f"iteration {first} never decodes: its rule waits for a worker that never arrives"
            )
        return masks, times
    model_s = straggler_model("bernoulli", n, p=p_workers) if stragglers is None else stragglers
    masks = model_s.sample(iterations, seed)
    return masks, wallclock.iteration_times(examples, masks, d, m)


class _Batches:
    """Each iteration's examples of every part: the whole part, or ``b`` of them drawn without replacement."""

    def __init__(self, dataset: Dataset, parts: np.ndarray, b: int, rng: np.random.Generator):
        self.dataset, self.parts, self.b, self.rng = dataset, parts, b, rng

    def next(self) -> tuple[np.ndarray, np.ndarray]:
        """``(x, y)`` of shape ``(N, b, ...)``."""
        parts = self.parts
        if self.b == parts.shape[1]:
            idx = parts
        else:
            idx = np.take_along_axis(parts, self.rng.random(parts.shape).argsort(axis=1)[:, : self.b], 1)
        return self.dataset.x_train[idx], self.dataset.y_train[idx]


class _History:
    """The rows of a run's history: an evaluation every ``eval_every`` iterations, with the mean relative
    error of the decoded gradient and the mean number of arrivals since the previous row."""

    def __init__(self, model: MLP, dataset: Dataset, n: int, stop_loss: float | None):
        self.model, self.n, self.stop_loss = model, n, stop_loss
        # the evaluation sets, checked once (record() runs every eval_every iterations)
        self.x_train, self.y_train = model._check_data(dataset.x_train, dataset.y_train, 1)
        self.x_test, self.y_test = model._check_data(dataset.x_test, dataset.y_test, 1)
        self.rows: list[dict[str, Any]] = []
        self.errs: list[float] = []
        self.arrived: list[float] = []
        self.clock = 0.0

    def record(self, t: int, theta: np.ndarray) -> None:
        """Evaluate ``theta`` after ``t`` iterations (a time-to-target run: the training loss only)."""
        theta_ok = self.model._check_theta(theta)
        tr_loss, tr_acc = self.model._evaluate_checked(theta_ok, self.x_train, self.y_train)
        te_loss, te_acc = (
            (np.nan, np.nan)
            if self.stop_loss is not None
            else self.model._evaluate_checked(theta_ok, self.x_test, self.y_test)
        )
        self.rows.append(self._row(t, tr_loss, tr_acc, te_loss, te_acc))
        self.errs.clear()
        self.arrived.clear()

    def diverged(self, t: int) -> None:
        """The last row of a run that diverged at iteration ``t - 1``: infinite losses."""
        self.rows.append(self._row(t, np.inf, np.nan, np.inf, np.nan))

    def _row(self, t: int, tr_loss: float, tr_acc: float, te_loss: float, te_acc: float) -> dict[str, Any]:
        return {
            "iteration": t,
            "wallclock": self.clock,
            "train_loss": tr_loss,
            "train_acc": tr_acc,
            "test_loss": te_loss,
            "test_acc": te_acc,
            "rel_error": float(np.mean(self.errs)) if self.errs else np.nan,
            "arrived": float(np.mean(self.arrived)) if self.arrived else float(self.n),
        }


def _iterate(
    code: CodedGradient,
    opt: Any,
    history: _History,
    theta: np.ndarray,
    *,
    batches: _Batches,
    masks: np.ndarray,
    times: np.ndarray,
    eval_every: int,
    precision: str,
    divergence: str,
    label: str,
) -> tuple[np.ndarray, int | None, int | None]:
    """The training iterations from ``theta``: ``(theta, diverged_at, stopped_at)`` (see :func:`train`)."""
    model, stop_loss = history.model, history.stop_loss
    iterations = masks.shape[0]
    history.record(0, theta)
    diverged_at: int | None = None
    stopped_at: int | None = 0 if stop_loss is not None and history.rows[0]["train_loss"] <= stop_loss else None
    for t in range(iterations if stopped_at is None else 0):
        x, y = batches.next()
        with np.errstate(over="ignore", invalid="ignore"):  # a diverging code: caught just below
            G = model.part_gradients(theta, x, y)
            finite_parts = bool(np.all(np.isfinite(G)))
            if finite_parts:
                ghat = code.estimates(G, masks[t : t + 1], draws=[t], precision=precision)[0]
                g = G.sum(axis=0)
                history.errs.append(float(np.sum((ghat - g) ** 2) / max(np.sum(g**2), 1e-300)))
                history.arrived.append(int(masks[t].sum()))
            new_theta = opt.step(theta, ghat) if finite_parts and np.all(np.isfinite(ghat)) else G[0] * np.nan
        if not np.all(np.isfinite(new_theta)):
            what = (
                "part gradients"
                if not finite_parts
                else "decoded gradient"
                if not np.all(np.isfinite(ghat))
                else "parameters"
            )
            if divergence == "raise":
                raise FloatingPointError(f"{label}: {what} not finite at iteration {t}")
            diverged_at = t
            history.clock += float(times[t])
            history.diverged(t + 1)
            break
        theta = new_theta
        history.clock += float(times[t])
        if (t + 1) % eval_every == 0 or t + 1 == iterations:
            with np.errstate(over="ignore", invalid="ignore"):  # huge but finite parameters: inf losses
                history.record(t + 1, theta)
            if stop_loss is not None and history.rows[-1]["train_loss"] <= stop_loss:
                stopped_at = t + 1
                break
    return theta, diverged_at, stopped_at
