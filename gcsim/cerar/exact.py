"""High-precision evaluation of Vandermonde-type CERAR designs: the limit the abstract promises.

The abstract's Vandermonde construction has an error that vanishes as the nodes cluster, with
condition numbers that explode (docs/theory.md §50.3); in float64 the best error therefore gets
*worse* as c grows.  The limit lives in exact arithmetic.  This module builds the ring-indexed
Vandermonde family of §50.3 (real form: B_j[:, tau] = f(j - tau), D_i[:, l] = f(i - 1 - l),
A_j = B_j^{-1}) with mpmath at a working precision chosen from a proved bound on the digits the
encoders can lose (Gautschi's bound on ||V^{-1}||, §53.1), runs the protocol's rounds (§50.1) in
that precision, and compares with the floating-point evaluator (:func:`gcsim.cerar.protocol.simulate`,
float64 / float32 / emulated bfloat16) on the same gradients (§53.2).

Two node families, both at a prescribed exact seam error e (the norm of every seam operator
E_{i,m} = Z^{-N} - I, §50.3 Proposition 3):

* ``"real"``: z_k = 1 + h (k - (c-1)/2), one cluster at 1 (the construction of
  :func:`gcsim.cerar.constructions.vandermonde_design`); kappa ~ h^{-(c-1)};
* ``"circle"``: on the unit circle, the N-th roots of unity and clusters
  omega^s e^{+-i q delta} around them (conjugate-closed, real form as in §50.2); for c <= N the
  design is exact, otherwise kappa grows like delta^{-(cluster size - 1)}.

The spacing (h or delta) is solved in closed form so that the exact seam error is e (§53.1).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import limits
from .._validation import check_bool, check_int, check_real
from ..errors import InvalidArgumentError
from .design import CerarDesign
from .protocol import resolve_dtype, simulate
from .ring import check_host_gradients, num_rounds, packet_size

__all__ = [
    "FAMILIES",
    "ExactDesign",
    "vandermonde_exact",
    "evaluate_exact",
    "VandermondeLimit",
    "vandermonde_limit",
]

FAMILIES = ("real", "circle")
#: Guard digits above the proved loss of the encoders (§53.1): the ring's sums then keep them.
GUARD_DIGITS = 30


def _mp() -> Any:
    import mpmath  # a dependency of sympy, installed with gcsim

    return mpmath.MPContext()


@dataclass(frozen=True, eq=False)
class ExactDesign:
    """A Vandermonde-type design held in high precision (mpmath), with its float64 rounding.

    Attributes
    ----------
    N, c : int
    family : str
        ``"real"`` or ``"circle"``.
    spacing : float
        h (real nodes) or delta (circle clusters); 0 for an exact circle design (c <= N).
    seam_error : float
        max_k |z_k^{-N} - 1|, the exact norm of every seam operator (§50.3), rounded to float.
    dps : int
        Decimal digits of the working precision.
    digits_lost : float
        log10 of the proved bound ||V||_inf ||V^{-1}||_inf on the encoders' condition (§53.1).
    encoders, decoders : list of mpmath matrices
        A_j (c x c) and D_i (c x L) in the working precision.
    ctx : mpmath context
        The context the matrices live in (its ``dps`` is ``dps``).
    """

    N: int
    c: int
    family: str
    spacing: float
    seam_error: float
    dps: int
    digits_lost: float
    encoders: list = field(repr=False)
    decoders: list = field(repr=False)
    ctx: Any = field(repr=False)

    def kappa(self) -> float:
        """max_j kappa_2(A_j), from the singular values in the working precision (mpmath SVD)."""
        ctx = self.ctx
        worst = 0.0
        for A in self.encoders:
            s = ctx.svd_r(A, compute_uv=False)
            worst = max(worst, float(max(s) / min(s)))
        return worst

    def to_float(self) -> CerarDesign:
        """The design rounded to float64 (each coefficient correctly rounded once).

        This is what a float engine can hold at best; :func:`simulate` then rounds it further to
        float32 / bfloat16.  Entries beyond the float64 range raise (an InvalidArgumentError of
        CerarDesign: inf).
        """
        A = np.array([[[float(A[r, k]) for k in range(self.c)] for r in range(self.c)] for A in self.encoders])
        L = num_rounds(self.N, self.c)
        D = np.array([[[float(D[r, k]) for k in range(L)] for r in range(self.c)] for D in self.decoders])
        return CerarDesign(
            self.N,
            self.c,
            A,
            D,
            method="vandermonde" if self.family == "real" else "vandermonde-circle",
            metadata={"family": self.family, "spacing": self.spacing, "rounded_from_dps": self.dps},
        )


def _circle_nodes(N: int, c: int) -> list[tuple[int, int]]:
    """(s, q) of the circle family: node omega^s e^{i q delta}; conjugate pairs adjacent.

    Level 0: N-th roots (all N, or N - 1 when c - N is odd, or a conjugate-closed c-subset when
    c <= N).  Level q >= 1: pairs (omega^s e^{i q delta}, omega^{-s} e^{-i q delta}), s in the
    order 0, 1, N-1, 2, N-2, ... so clusters grow evenly.
    """
    reals = [0] + ([N // 2] if N % 2 == 0 else [])
    pairs = [x for p in range(1, (N + 1) // 2) for x in (p, N - p)]  # (p, N - p) adjacent
    if c <= N:  # an exact design: a conjugate-closed c-subset, 0 only when c is odd, low pairs first
        level = ([0] if c % 2 else []) + pairs[: c - c % 2]
        if len(level) < c:  # c = N even: the two real roots with all pairs
            level = reals + pairs
        return [(s, 0) for s in level]
    base = reals + pairs
    if (c - N) % 2:
        base.remove(N // 2 if N % 2 == 0 else 0)  # keep the level conjugate-closed, pairs adjacent
    out = [(s, 0) for s in base]
    order = [0] + [x for p in range(1, N // 2 + 1) for x in ((p, N - p) if 2 * p != N else (p,))]
    q = 1
    while len(out) < c:
        for s in order:
            if len(out) == c:
                break
            out += [(s, q), ((-s) % N, -q)]
        q += 1
    return out


def _solve_spacing(N: int, c: int, family: str, error: float) -> float:
    """The spacing whose exact seam error max_k |z_k^{-N} - 1| equals ``error`` (§53.1)."""
    if family == "real":
        if c == 1:
            return 0.0
        z_min = (1.0 + error) ** (-1.0 / N)  # the smallest node carries the largest |z^{-N} - 1|
        return 2.0 * (1.0 - z_min) / (c - 1)
    if c <= N:
        return 0.0
    q_max = max(abs(q) for _, q in _circle_nodes(N, c))
    if error >= 2.0:
        raise InvalidArgumentError("error", f"must be < 2 for nodes on the unit circle, got {error}")
    return 2.0 * math.asin(error / 2.0) / (N * q_max)


def vandermonde_exact(N: int, c: int, error: float, *, family: str = "real", dps: int | None = None) -> ExactDesign:
    """The Vandermonde-type design with exact seam error ``error``, held in high precision.

    Parameters
    ----------
    N, c : int
        Ring size (>= 2) and components (>= 1).
    error : float
        Target exact seam error e = ||Z^{-N} - I||_2 in (0, 1) (ignored, and 0, for an exact
        circle design, c <= N).
    family : {"real", "circle"}
    dps : int, optional
        Working precision in decimal digits; default GUARD_DIGITS plus the proved loss
        log10(||V||_inf ||V^{-1}||_inf) (§53.1), so the rounding of the evaluation stays below
        10^-GUARD_DIGITS relative to the gradients.

    Raises
    ------
    SizeLimitError
        ``N c^3`` beyond :data:`gcsim.limits.MAX_EXACT_WORK`, or a precision beyond
        :data:`gcsim.limits.MAX_DPS` digits, before any high-precision work.

    Examples
    --------
    >>> ed = vandermonde_exact(4, 8, 1e-3)
    >>> round(ed.seam_error, 12), ed.dps > 30
    (0.001, True)
    >>> vandermonde_exact(4, 4, 1e-3, family="circle").seam_error
    0.0
    """
    N = check_int("N", N, minimum=2)
    c = check_int("c", c, minimum=1)
    if not isinstance(family, str) or family not in FAMILIES:
        raise InvalidArgumentError("family", f"must be one of {FAMILIES}, got {family!r}")
    limits.check_work(
        "c", N * c**3, f"N c^3 for N = {N}, c = {c}", limit_name="MAX_EXACT_WORK", unit="high-precision operations"
    )
    error = check_real("error", error, minimum=0.0, strict_min=True)
    if error >= 1.0:
        raise InvalidArgumentError("error", f"must be < 1 (a relative seam error), got {error}")
    spacing = _solve_spacing(N, c, family, error)
    # nodes in float64 first, for the precision bound (Gautschi) only
    if family == "real":
        zf = [complex(1.0 + spacing * (k - (c - 1) / 2)) for k in range(c)]
        sq: list[tuple[int, int]] = []
    else:
        sq = _circle_nodes(N, c)
        zf = [np.exp(2j * np.pi * s / N + 1j * q * spacing) for s, q in sq]
    x = [1 / z for z in zf]  # V[k, tau] = x_k^tau
    norm_v = max(sum(abs(xk) ** t for t in range(c)) for xk in x)
    log_inv = max(
        sum(math.log10((1 + abs(x[j])) / abs(x[k] - x[j])) for j in range(c) if j != k) for k in range(c)
    )  # Gautschi: ||V^{-1}||_inf <= max_k prod_{j != k} (1 + |x_j|) / |x_k - x_j|
    lost = math.log10(norm_v) + log_inv
    if dps is None:
        dps = GUARD_DIGITS + math.ceil(max(lost, 0.0)) + len(str(c))
    dps = limits.check_work(
        "dps", check_int("dps", dps, minimum=15), "the working precision", limit_name="MAX_DPS", unit="digits"
    )
    ctx = _mp()
    ctx.dps = dps
    if family == "real":
        h = ctx.mpf(spacing)
        z = [1 + h * (ctx.mpf(2 * k - (c - 1)) / 2) for k in range(c)]
        pairs = [False] * c

        def f(k: int) -> list:
            return [zk**k for zk in z]

    else:
        d = ctx.mpf(spacing)
        z = [ctx.expjpi(ctx.mpf(2 * s) / N) * ctx.expj(q * d) for s, q in sq]
        # the real form (§50.2): a real node (+-1) gives z^k, a pair (z, conj z) sqrt2 (Re, Im)
        pairs = [not (q == 0 and (s == 0 or 2 * s == N)) for s, q in sq]
        root2 = ctx.sqrt(2)

        def f(k: int) -> list:
            out = []
            idx = 0
            while idx < c:
                w = z[idx] ** k
                if pairs[idx]:
                    out += [root2 * ctx.re(w), root2 * ctx.im(w)]
                    idx += 2
                else:
                    out.append(ctx.re(w))
                    idx += 1
            return out

    L = num_rounds(N, c)
    B = [ctx.matrix([f(j - tau) for tau in range(c)]).T for j in range(N)]
    A = [ctx.inverse(b) for b in B]
    D = [ctx.matrix([f(i - 1 - l) for l in range(L)]).T for i in range(N)]
    seam = max(abs(zk ** (-N) - 1) for zk in z)
    return ExactDesign(
        N=N,
        c=c,
        family=family,
        spacing=float(spacing),
        seam_error=float(seam),
        dps=dps,
        digits_lost=float(lost),
        encoders=A,
        decoders=D,
        ctx=ctx,
    )


def evaluate_exact(design: ExactDesign, gradients: Any) -> tuple[np.ndarray, float]:
    """Run the ring's rounds (§50.1) in the design's precision; outputs and relative error.

    Returns ``(outputs, error)``: the outputs g_hat_i (N, d) rounded to float64 at the end, and
    max_i ||g_hat_i - g|| / ||g|| with g = sum_j g_j, both computed in the working precision.
    The float64 gradients are exact in it.

    Examples
    --------
    >>> g = np.random.default_rng(0).standard_normal((4, 16))
    >>> out, err = evaluate_exact(vandermonde_exact(4, 8, 1e-3), g)
    >>> bool(0 < err < 1e-3), out.shape
    (True, (4, 16))
    """
    if not isinstance(design, ExactDesign):
        raise InvalidArgumentError("design", f"must be an ExactDesign, got {type(design).__name__}")
    N, c, ctx = design.N, design.c, design.ctx
    g = check_host_gradients(gradients, N)
    d = g.shape[1]
    if d == 0:
        return np.zeros((N, 0)), 0.0
    w = packet_size(d, c)
    L = num_rounds(N, c)
    padded = np.zeros((N, c * w))
    padded[:, :d] = g
    G = [ctx.matrix(padded[i].reshape(c, w).tolist()) for i in range(N)]
    X = [design.encoders[i] * G[i] for i in range(N)]
    state = [G[i].copy() for i in range(N)]
    u = [ctx.matrix(1, w) for _ in range(N)]
    for t in range(1, L + 1):
        s = [(X[i][t - 1, :] + u[i]) if t <= c else u[i] for i in range(N)]
        for i in range(N):
            r = s[i - 1]
            back = t - N  # 0-based index of the returning own symbol
            u[i] = r - X[i][back, :] if 0 <= back < c - 1 else r
            state[i] += design.decoders[i][:, t - 1] * u[i]
    total = sum((G[j] for j in range(1, N)), G[0])
    nrm = ctx.mnorm(total, "f")
    err = max(ctx.mnorm(state[i] - total, "f") for i in range(N)) / nrm if nrm else ctx.mpf(0)
    out = np.array([[float(state[i][r, k]) for r in range(c) for k in range(w)] for i in range(N)])
    out = out.reshape(N, c * w)[:, :d]
    return out, float(err)


@dataclass(frozen=True, eq=False)
class VandermondeLimit:
    """Outcome of :func:`vandermonde_limit` (arrays indexed by c, then family / dtype).

    Attributes
    ----------
    N : int
    c : ndarray (n,) int
    rate : ndarray (n,)
        1 + (N - 2) / c, the per-worker traffic over d.
    target : ndarray (n,)
        The prescribed exact seam error e(c).
    families : tuple of str
    spacing, seam_error, kappa, exact_error, dps : dict family -> ndarray (n,)
        The solved spacing, the exact seam error, max_j kappa(A_j) (NaN if not computed), the
        high-precision relative error on the gradients and the working precision.
    float_error : dict (family, dtype) -> ndarray (n,)
        The relative error of :func:`simulate` on the float64-rounded design (inf: the design or
        the run overflowed / collapsed to NaN).
    parts_at : dict (family, dtype) -> int or None
        The first c with a non-zero seam error at which the float error is off from the exact
        error by more than the exact error itself (None: never in range).
    """

    N: int
    c: np.ndarray
    rate: np.ndarray
    target: np.ndarray
    families: tuple[str, ...]
    spacing: dict[str, np.ndarray]
    seam_error: dict[str, np.ndarray]
    kappa: dict[str, np.ndarray]
    exact_error: dict[str, np.ndarray]
    dps: dict[str, np.ndarray]
    float_error: dict[tuple[str, str], np.ndarray]
    parts_at: dict[tuple[str, str], int | None]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (lists; inf and NaN as None)."""

        def clean(a: np.ndarray) -> list:
            return [None if not np.isfinite(v) else float(v) for v in np.asarray(a, dtype=float)]

        return {
            "N": self.N,
            "c": self.c.tolist(),
            "rate": clean(self.rate),
            "target": clean(self.target),
            "families": {
                fam: {
                    "spacing": clean(self.spacing[fam]),
                    "seam_error": clean(self.seam_error[fam]),
                    "kappa": clean(self.kappa[fam]),
                    "exact_error": clean(self.exact_error[fam]),
                    "dps": self.dps[fam].astype(int).tolist(),
                    "float_error": {dt: clean(self.float_error[(fam, dt)]) for f2, dt in self.float_error if f2 == fam},
                    "parts_at": {dt: self.parts_at[(fam, dt)] for f2, dt in self.parts_at if f2 == fam},
                }
                for fam in self.families
            },
        }


def vandermonde_limit(
    N: int,
    cs: Sequence[int],
    *,
    error: Callable[[int], float] | None = None,
    families: Sequence[str] = FAMILIES,
    dtypes: Sequence[str] = ("float64", "float32", "bfloat16"),
    kappa: bool = True,
    d: int = 480,
    seed: int = 0,
) -> VandermondeLimit:
    """Error versus c of the Vandermonde families, exact and in floating point (§53.2).

    For each c the nodes are spaced so that the exact seam error is ``error(c)`` (default
    1 / c^2: the error vanishes while the rate 1 + (N - 2)/c tends to 1), the design is built and
    run in high precision (:func:`vandermonde_exact`, :func:`evaluate_exact`) and, rounded to
    float64, through :func:`simulate` in each dtype -- on one set of standard normal gradients
    (N x ``d``, ``seed``) for every c, so the curves differ by the designs only.

    Examples
    --------
    >>> lim = vandermonde_limit(4, [6, 8], dtypes=("float64",), kappa=False, d=48)
    >>> bool(lim.exact_error["real"][1] < lim.exact_error["real"][0])
    True
    """
    kappa = check_bool("kappa", kappa)
    N = check_int("N", N, minimum=2)
    cs_arr = np.array([check_int("cs", c, minimum=1) for c in cs], dtype=int)
    if cs_arr.size == 0:
        raise InvalidArgumentError("cs", "must be a non-empty sequence of integers >= 1")
    fams = tuple(families)
    for fam in fams:
        if fam not in FAMILIES:
            raise InvalidArgumentError("families", f"must be a subset of {FAMILIES}, got {fam!r}")
    dts = tuple(resolve_dtype(dt) for dt in dtypes)
    d = check_int("d", d, minimum=1)
    limits.check_entries("d" if d >= N else "N", (N, d), "the test gradients (N x d)")
    err_of = error if error is not None else (lambda c: 1.0 / c**2)
    n = cs_arr.size
    target = np.array([float(err_of(int(c))) for c in cs_arr])
    spacing = {f: np.zeros(n) for f in fams}
    seam = {f: np.zeros(n) for f in fams}
    kap = {f: np.full(n, np.nan) for f in fams}
    exact = {f: np.zeros(n) for f in fams}
    dps = {f: np.zeros(n, dtype=int) for f in fams}
    ferr = {(f, dt): np.full(n, np.inf) for f in fams for dt in dts}
    g = np.random.default_rng(check_int("seed", seed)).standard_normal((N, d))
    total = g.sum(axis=0)
    nrm = np.linalg.norm(total)
    for k, c in enumerate(cs_arr):
        for fam in fams:
            ed = vandermonde_exact(N, int(c), float(target[k]), family=fam)
            spacing[fam][k], seam[fam][k], dps[fam][k] = ed.spacing, ed.seam_error, ed.dps
            exact[fam][k] = evaluate_exact(ed, g)[1]
            if kappa:
                kap[fam][k] = ed.kappa()
            if not dts:
                continue
            try:
                fd = ed.to_float()
            except InvalidArgumentError:  # coefficients beyond the float64 range
                continue
            for dt in dts:
                with warnings.catch_warnings(), np.errstate(all="ignore"):
                    warnings.simplefilter("ignore", RuntimeWarning)  # the collapse is the point
                    try:
                        out = simulate(fd, g, dtype=dt, warn=False, accumulate="rounds").outputs
                    except InvalidArgumentError:  # the run left the dtype's range (inf/NaN)
                        continue
                e = float(np.max(np.linalg.norm(out - total, axis=1)) / nrm)
                ferr[(fam, dt)][k] = e if np.isfinite(e) else np.inf
    parts: dict[tuple[str, str], int | None] = {}
    for (fam, dt), fe in ferr.items():
        # exact designs (seam error 0) have nothing to part from: their exact error is rounding only
        bad = np.nonzero((seam[fam] > 0) & ~(np.abs(fe - exact[fam]) <= exact[fam]))[0]
        parts[(fam, dt)] = int(cs_arr[bad[0]]) if bad.size else None
    return VandermondeLimit(
        N=N,
        c=cs_arr,
        rate=1 + (N - 2) / cs_arr,
        target=target,
        families=fams,
        spacing=spacing,
        seam_error=seam,
        kappa=kap,
        exact_error=exact,
        dps=dps,
        float_error=ferr,
        parts_at=parts,
    )
