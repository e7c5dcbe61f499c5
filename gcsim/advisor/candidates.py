"""Candidate enumeration of the advisor: one generator per family, in a written order.

Every family generator takes the :class:`Question` and yields either a :class:`Structure` (an
assignment gcsim built and verified, with the object that exports it) or a :class:`Dropped`
record that says why a parameter set of the family does not give a candidate: a necessary
condition fails (the existence answers of :func:`gcsim.bibd` / :func:`gcsim.srg`, three-valued),
the existence is unknown to gcsim, gcsim has no construction, the load does not fit, or the
object would exceed :mod:`gcsim.limits`.

The model of the question (docs/theory.md, the advisor chapter):

* ``n`` workers, the columns of the ``N x n`` assignment ``A`` (``A[i, j] = 1`` iff worker ``j``
  holds part ``i``); each family fixes its own number of parts ``N``;
* ``load``: a cap on the data a worker holds. An integer ``L`` allows ``L / n`` of the data (``L``
  parts of an ``n``-part split), and a family with ``N`` parts is built at ``floor(L N / n)`` parts
  per worker (the expanders of fixed degree -- Margulis--Gabber--Galil, the chordal cycle -- keep
  their loads, which must stay within the cap); with ``relax_load`` an integer is the number of
  parts per worker in every family, the column sums of ``A``, whatever ``N``; a float in
  ``(0, 1)`` is the fraction of the data a worker may hold, and a family with ``N`` parts is built
  with ``floor(load * N)`` parts per worker;
* ``m``: the communication reduction of :class:`gcsim.coding.Scheme` (each worker sends
  ``d / m`` numbers).

The families, in order (:data:`FAMILIES`): BIBDs with the workers as blocks (``b = n``,
``k = load``), BIBDs with the workers as points (the dual, ``v = n``, ``r = load``), strongly
regular graphs with ``A = Adj + I`` (``v = n``, ``k = load - 1``) and ``A = Adj`` (``k = load``),
coset bipartite graphs (``n = m_c k_g``, ``k_g`` a prime power, ``delta = load``), seeded
bi-regular graphs (``v = b = n``, ``r = k = load``), cyclic repetition, fractional repetition,
random regular expanders (``A = Adj + I``, degree ``load - 1``), the Margulis--Gabber--Galil
expander (``n = m_g^2``) as a 0/1 assignment and with its multiplicities, and Lubotzky's chordal
cycle (``n`` prime, with multiplicities).

Examples
--------
>>> from gcsim.coding.stragglers import straggler_model
>>> q = Question(13, 4, 2, straggler_model("fixed", 13, s=1))
>>> found = list(bibd_structures(q))
>>> [(x.name, x.assignment.shape) for x in found if isinstance(x, Structure)]
[('2-(13,4,1) design [PG(2,3): points vs lines]', (13, 13))]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import scipy.sparse as sp

from .. import limits
from .._validation import check_bool, check_dense_size, check_int, check_real
from ..coding.load_allocation import optimize_loads
from ..coding.sparse_routes import lattice_graph_sparse, triangular_graph_sparse
from ..coding.straggler_base import StragglerModel
from ..coding.structured import check_pair_gram
from ..combinatorics.baselines import (
    cyclic_repetition,
    fractional_repetition,
    margulis_gabber_galil,
    random_regular_assignment,
)
from ..combinatorics.bibd import bibd
from ..combinatorics.biregular import biregular_from_assignment, biregular_graph
from ..combinatorics.coset import coset_graph
from ..combinatorics.cyclic_design import singer_plane
from ..combinatorics.expanders import chordal_cycle, weighted_margulis_gabber_galil
from ..combinatorics.fields import is_prime, is_prime_power, prime_power
from ..combinatorics.srg import srg
from ..combinatorics.weighted_cyclic import apportion_loads, weighted_cyclic_repetition
from ..errors import GcsimError, InvalidArgumentError

__all__ = [
    "Question",
    "Links",
    "Structure",
    "Dropped",
    "FAMILIES",
    "FAMILY_NAMES",
    "structures",
    "bibd_structures",
    "dual_bibd_structures",
    "srg_structures",
    "coset_structures",
    "biregular_structures",
    "cyclic_structures",
    "fractional_structures",
    "random_regular_structures",
    "mgg_structures",
    "weighted_mgg_structures",
    "chordal_cycle_structures",
    "weighted_cyclic_structures",
    "SYMMETRIC_FAMILIES",
    "check_max_load",
]


@dataclass(frozen=True)
class Links:
    """The network of one iteration: every worker's link to the master (docs/theory.md, advisor chapter).

    Attributes
    ----------
    bandwidth : float
        Bytes per second of each worker's link (``> 0``).
    latency : float
        Seconds before the first byte arrives (``>= 0``).
    gradient_bytes : float
        Bytes of one full gradient (``d`` numbers); a worker of a scheme with ``m`` blocks sends
        ``gradient_bytes / m``.
    compute_time : float
        Seconds one worker needs for the gradient of the *whole* data set (``>= 0``, default 0); a
        worker holding a fraction ``l/N`` of the data computes for ``(l/N) compute_time``.

    Examples
    --------
    >>> Links(bandwidth=1e9, latency=1e-4, gradient_bytes=4e6).transfer_time(2)
    0.0021
    """

    bandwidth: float
    latency: float = 0.0
    gradient_bytes: float = 4e6
    compute_time: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "bandwidth", check_real("links.bandwidth", self.bandwidth, minimum=0.0, strict_min=True)
        )
        object.__setattr__(self, "latency", check_real("links.latency", self.latency, minimum=0.0))
        object.__setattr__(
            self,
            "gradient_bytes",
            check_real("links.gradient_bytes", self.gradient_bytes, minimum=0.0, strict_min=True),
        )
        object.__setattr__(self, "compute_time", check_real("links.compute_time", self.compute_time, minimum=0.0))

    def transfer_time(self, m: int) -> float:
        """``latency + gradient_bytes / (m * bandwidth)``: one transmission of ``d/m`` numbers."""
        return self.latency + self.gradient_bytes / (m * self.bandwidth)

    def as_dict(self) -> dict[str, float]:
        """The four fields (JSON)."""
        return {
            "bandwidth": self.bandwidth,
            "latency": self.latency,
            "gradient_bytes": self.gradient_bytes,
            "compute_time": self.compute_time,
        }


@dataclass(frozen=True)
class Question:
    """What the user asks: ``n`` workers, a load, ``m``, a straggler model, optional links.

    The load is a constraint on the data a worker holds. An int ``L`` means at most ``L / n`` of
    the data (``L`` parts of an ``n``-part split), a float in ``(0, 1)`` at most that fraction; a
    family with ``N`` parts is then built with :meth:`parts_per_worker` ``= floor(fraction N)``
    parts per worker. With ``relax_load`` an int is the number of parts per worker whatever the
    family's ``N`` (a family with few parts then gives each worker a larger share of the data).

    For the non-symmetric ``"weighted-cyclic"`` family (``N = n``) the load is the *average*: its
    loads total ``n l`` part copies, like the symmetric candidates', and one worker may hold more
    than ``l``.  ``max_load`` (an int ``>= l``, parts of the ``n``-part split) caps every worker's
    load there too; None (default) leaves the cap at ``N``.  Symmetric families are unaffected.
    """

    n: int
    load: int | float
    m: int
    model: StragglerModel
    links: Links | None = None
    seed: int = 0
    relax_load: bool = False
    max_load: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "relax_load", check_bool("relax_load", self.relax_load))
        if self.max_load is not None:
            object.__setattr__(self, "max_load", check_max_load(self.max_load, self.parts_per_worker(self.n)))

    @property
    def parts_load(self) -> int | None:
        """The relaxed integer load (parts per worker in every family), or None for a data cap."""
        return self.load if isinstance(self.load, int) and self.relax_load else None

    @property
    def data_cap(self) -> float:
        """The largest fraction of the data a worker may hold (1 with a relaxed integer load)."""
        if self.parts_load is not None:
            return 1.0
        return self.load / self.n if isinstance(self.load, int) else float(self.load)

    def parts_per_worker(self, num_parts: int) -> int:
        """The load a family with ``num_parts`` parts is built at (the most parts within the cap)."""
        if self.parts_load is not None:
            return self.parts_load
        if isinstance(self.load, int):
            return self.load * num_parts // self.n  # exact: floor(L N / n)
        # the 1e-12 keeps floor(0.3 * 10) at 3 (0.3 * 10 = 2.9999999999999996 in binary)
        return int(math.floor(self.load * num_parts + 1e-12))

    @property
    def design_s(self) -> int | None:
        """The straggler count of a subset model (fixed, all, worst) or of a ``"first"`` arrival rule, else None."""
        return self.model.fixed_stragglers()

    def describe_load(self) -> str:
        """The load in words, for the reasons of the dropped items."""
        if self.parts_load is not None:
            return f"{self.load} parts per worker"
        if isinstance(self.load, int):
            return f"at most {self.load}/{self.n} of the data"
        return f"at most a fraction {self.load} of the data"


def check_load(load: Any) -> int | float:
    """``load`` as an int ``>= 1`` (parts) or a float fraction in ``(0, 1)``; names the argument."""
    if isinstance(load, (bool, np.bool_)):
        raise InvalidArgumentError("load", f"must be a number of parts (int) or a fraction in (0, 1), got {load!r}")
    if isinstance(load, (int, np.integer)):
        return check_int("load", load, minimum=1)
    return check_real("load", load, minimum=0.0, maximum=1.0, strict_min=True, strict_max=True)


def check_max_load(max_load: Any, load: int) -> int:
    """``max_load`` as an int ``>= load`` (the question's load in parts of the ``n``-part split); names it.

    >>> check_max_load(4, 3)
    4
    >>> check_max_load(2, 3)
    Traceback (most recent call last):
    ...
    gcsim.errors.InvalidArgumentError: max_load: must be an integer >= the load 3 (a cap on every worker's parts), got 2
    """
    if isinstance(max_load, (bool, np.bool_)) or not isinstance(max_load, (int, np.integer)) or max_load < load:
        raise InvalidArgumentError(
            "max_load", f"must be an integer >= the load {load} (a cap on every worker's parts), got {max_load!r}"
        )
    return int(max_load)


@dataclass(frozen=True)
class Structure:
    """A built and verified assignment: its family, a readable name and the exportable object.

    ``incidence`` is the ``N x n`` assignment as a ``scipy.sparse`` CSC matrix (the object's own
    sparse incidence when it keeps one: a design beyond :data:`gcsim.limits.MAX_DENSE_ENTRIES`,
    such as PG(2, 97)); ``assignment`` is the dense array, made on first use and refused
    (:class:`~gcsim.errors.SizeLimitError`) beyond the limit.
    """

    family: str
    name: str
    obj: Any
    note: str = ""
    incidence: sp.csc_matrix = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        inc = getattr(self.obj, "incidence", None)
        if inc is not None and sp.issparse(inc):
            S = sp.csc_matrix(inc, dtype=np.int64)
        else:
            S = sp.csc_matrix(np.asarray(self.obj.assignment))
        S.sum_duplicates()
        object.__setattr__(self, "incidence", S)
        object.__setattr__(self, "_cache", {})

    @property
    def shape(self) -> tuple[int, int]:
        """``(N, n)``: parts x workers."""
        N, n = self.incidence.shape
        return int(N), int(n)

    @property
    def dense_fits(self) -> bool:
        """Whether the dense ``N x n`` assignment is within :data:`gcsim.limits.MAX_DENSE_ENTRIES`."""
        N, n = self.shape
        return N * n <= limits.MAX_DENSE_ENTRIES

    @property
    def assignment(self) -> np.ndarray:
        """The dense assignment (cached), refused beyond :data:`gcsim.limits.MAX_DENSE_ENTRIES`."""
        cache: dict[str, Any] = self._cache  # type: ignore[attr-defined]
        if "dense" not in cache:
            N, n = self.shape
            check_dense_size("assignment", N, n, f"the dense assignment of {self.name}")
            inc = getattr(self.obj, "incidence", None)
            cache["dense"] = (
                self.incidence.toarray() if inc is not None and sp.issparse(inc) else np.asarray(self.obj.assignment)
            )
        return cache["dense"]

    @property
    def loads(self) -> np.ndarray:
        """Parts per worker (the column sums, multiplicities counted)."""
        return np.asarray(self.incidence.sum(axis=0)).ravel()

    @property
    def replication(self) -> np.ndarray:
        """Workers per part (the row sums)."""
        return np.asarray(self.incidence.sum(axis=1)).ravel()

    def pair_gram(self) -> tuple[int, int] | None:
        """``(k, λ)`` when ``AᵀA = (k − λ)I + λJ`` with ``k > λ`` exactly (theory §42), else None (cached).

        :func:`gcsim.coding.structured.check_pair_gram` on the sparse incidence, in integers.
        """
        cache: dict[str, Any] = self._cache  # type: ignore[attr-defined]
        if "pair_gram" not in cache:
            try:
                cache["pair_gram"] = check_pair_gram(self.incidence, "assignment")
            except GcsimError:
                cache["pair_gram"] = None
        return cache["pair_gram"]


@dataclass(frozen=True)
class Dropped:
    """A parameter set or an encoder that gives no candidate, with the reason.

    ``gram``: for a design left unbuilt whose assignment has ``AᵀA = (k − λ)I + λJ`` by its
    parameters (the dual of a 2-design), ``(N, k, λ)``; the advisor then names it beside an
    evaluated candidate with the same error pattern by pattern (theory §49.5).
    """

    family: str
    name: str
    encoder: str
    reason: str
    gram: tuple[int, int, int] | None = field(default=None, compare=False)

    def as_dict(self) -> dict[str, str]:
        """``family``, ``name``, ``encoder`` and ``reason`` (JSON, a row of ``Advice.dropped``)."""
        return {"family": self.family, "name": self.name, "encoder": self.encoder, "reason": self.reason}


Item = Structure | Dropped


def _why(exc: Exception) -> str:
    text = str(exc)
    return text if len(text) <= 300 else text[:297] + "..."


def _short(text: str, limit: int = 48) -> str:
    """A construction name cut to ``limit`` characters (composite constructions nest deeply)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _guarded(family: str, name: str, build: Callable[[], Any], *, construction: bool = False, note: str = "") -> Item:
    """Build one object; a gcsim refusal (impossible, not constructible, too large) becomes a :class:`Dropped`.

    With ``construction`` the object's construction name is appended to ``name``.
    """
    try:
        obj = build()
        label = f"{name} [{_short(obj.construction)}]" if construction else name
        # a design kept sparse (gcsim.limits.keep_sparse) keeps its sparse incidence: the encoders
        # that need a dense matrix are dropped per encoder, the structured routes evaluate it
        return Structure(family, label, obj, note)
    except GcsimError as exc:
        return Dropped(family, name, "", f"{type(exc).__name__}: {_why(exc)}")


def _singer_order(v: int, k: int, lam: int, n: int) -> int | None:
    """The prime ``q`` when ``(v, k, λ) = (q² + q + 1, q + 1, 1)`` with ``b = n = v`` and the design is too
    large for :func:`gcsim.bibd`'s sparse block lists (:func:`gcsim.limits.keep_sparse`): then
    :func:`~gcsim.combinatorics.cyclic_design.singer_plane` builds it as a :class:`CyclicDesign`
    (theory §10.8, Lemma 9a), with ``v k`` stored entries; None otherwise.

    >>> _singer_order(100807, 318, 1, 100807), _singer_order(91, 10, 1, 91)
    (317, None)
    """
    q = k - 1
    if lam != 1 or n != v or v != q * q + q + 1 or not is_prime(q):
        return None
    if v * v <= limits.MAX_DENSE_ENTRIES or v * k <= limits.MAX_DENSE_ENTRIES // 16:
        return None  # gcsim.bibd builds it: dense, or sparse with its block list (limits.keep_sparse)
    return q


def _dual_design(v: int, k: int, lam: int) -> Any:
    """The transposed incidence matrix of ``bibd(v, k, lam)`` as a bi-regular graph (workers = points)."""
    A = bibd(v, k, lam).assignment.T
    return biregular_from_assignment(A, require_connected=False, construction=f"dual of 2-({v},{k},{lam})")


def _existence_reason(answer: Any, what: str, explain: Callable[[], str]) -> str:
    if answer is False:
        return f"does not exist: {explain()}"
    return f"existence unknown to gcsim ({what}: no construction, no nonexistence result)"


# ----------------------------------------------------------------------------------------------
# the family generators (one per family, in the order of FAMILIES)
# ----------------------------------------------------------------------------------------------


def bibd_structures(q: Question) -> Iterator[Item]:
    """2-(v, k, lam) designs with the workers as blocks: ``b = n``, ``k`` = the load on ``v`` parts.

    Integrality (``r = b k / v`` and ``lam = r (k - 1) / (v - 1)`` integers) and Fisher's
    inequality ``v <= b`` leave few ``v``; each is asked :func:`gcsim.bibd` with ``existence=True``.
    """
    n, found = q.n, False
    for v in range(3, n + 1):
        k = q.parts_per_worker(v)
        if k < 2 or k >= v or (n * k) % v:
            continue
        r = n * k // v
        if (r * (k - 1)) % (v - 1):
            continue
        lam = r * (k - 1) // (v - 1)
        found = True
        name = f"2-({v},{k},{lam}) design"

        def explain(v: int = v, k: int = k, lam: int = lam) -> str:
            try:
                bibd(v, k, lam)
            except GcsimError as exc:
                return _why(exc)
            return "?"  # pragma: no cover - existence said False, so the factory refuses

        singer = _singer_order(v, k, lam, n)
        if singer is not None:  # a plane of prime order beyond the sparse block lists: its difference set
            yield _guarded("bibd", name, partial(singer_plane, singer), construction=True)
            continue
        answer = bibd(v, k, lam, existence=True)
        if answer is not True:
            yield Dropped("bibd", name, "", _existence_reason(answer, name, explain))
            continue
        yield _guarded("bibd", name, partial(bibd, v, k, lam), construction=True)
    if not found:
        yield Dropped(
            "bibd",
            f"2-(v,{q.describe_load()},lam) design with b = {n} blocks",
            "",
            f"no v in [3, {n}] makes r = b k / v and lam = r (k - 1) / (v - 1) integers (b = n = {n} workers)",
        )


def dual_bibd_structures(q: Question) -> Iterator[Item]:
    """The dual of a 2-(v, k, lam) design: workers = the ``v = n`` points, parts = the ``b`` blocks, load ``r``.

    Symmetric designs (``b = v``) are listed once, by :func:`bibd_structures`.
    """
    n = q.n
    found = False
    for k in range(2, n):
        # the load is r parts of b = n r / k: for a fraction, r = floor(load * b) must be consistent;
        # lam = r (k - 1) / (n - 1) is an integer only for r a multiple of (n - 1) / gcd(n - 1, k - 1)
        # (the loop visits those alone: at n ~ 10^4 a loop over every r took a minute)
        step = (n - 1) // math.gcd(n - 1, k - 1)
        r = q.parts_load
        candidates = ([r] if r % step == 0 else []) if r is not None else range(step, n, step)
        for r_ in candidates:
            if (n * r_) % k:
                continue
            lam, b = r_ * (k - 1) // (n - 1), n * r_ // k
            if lam < 1 or b == n or b < n or q.parts_per_worker(b) != r_:
                continue
            found = True
            name = f"dual of the 2-({n},{k},{lam}) design"
            answer = bibd(n, k, lam, existence=True)
            if answer is not True:

                def explain(k: int = k, lam: int = lam) -> str:
                    try:
                        bibd(n, k, lam)
                    except GcsimError as exc:
                        return _why(exc)
                    return "?"  # pragma: no cover

                yield Dropped("bibd-dual", name, "", _existence_reason(answer, name, explain))
                continue
            if b * q.m * n > limits.MAX_DENSE_ENTRIES:
                # sized before building: the b x n incidence is known from (n, k, lam), and building a
                # design only to drop it took most of the enumeration's time at n ~ 10^3; its points
                # meet pairwise in lam blocks (a 2-design), so AᵀA = (r - lam)I + lam J by the parameters
                yield Dropped("bibd-dual", name, "", _oversize(b, q), gram=(b, r_, lam))
                continue
            yield _guarded("bibd-dual", name, partial(_dual_design, n, k, lam))
    if not found:
        yield Dropped(
            "bibd-dual",
            f"dual 2-({n},k,lam) design with r = {q.describe_load()}",
            "",
            f"no non-symmetric k in [2, {n - 1}] makes lam = r (k - 1) / (n - 1) and b = n r / k integers",
        )


def _srg_structures(q: Question, closed: bool) -> Iterator[Item]:
    n = q.n
    family = "srg" if closed else "srg-open"
    k = q.parts_per_worker(n) - (1 if closed else 0)
    label = "A = Adj + I" if closed else "A = Adj"
    if k < 1 or k > n - 2:
        yield Dropped(family, f"SRG({n}, {k}, ., .) with {label}", "", f"degree k = {k} outside [1, v - 2 = {n - 2}]")
        return
    found = False
    for lam in range(0, k):
        if (k * (k - lam - 1)) % (n - k - 1):
            continue
        mu = k * (k - lam - 1) // (n - k - 1)
        if mu > k:
            continue
        found = True
        name = f"SRG({n},{k},{lam},{mu}) with {label}"

        def explain(lam: int = lam, mu: int = mu) -> str:
            try:
                srg(n, k, lam, mu)
            except GcsimError as exc:
                return _why(exc)
            return "?"  # pragma: no cover

        sparse = _sparse_srg(n, k, lam, mu, closed) if n * n > limits.MAX_DENSE_ENTRIES else None
        if sparse is not None:  # beyond the dense limit: a family gcsim builds sparsely (theory §44)
            yield _guarded(family, name, sparse, construction=True)
            continue
        try:
            answer = srg(n, k, lam, mu, existence=True)
        except GcsimError as exc:
            yield Dropped(family, name, "", _why(exc))
            continue
        if answer is not True:
            yield Dropped(family, name, "", _existence_reason(answer, name, explain))
            continue
        yield _guarded(family, name, partial(srg, n, k, lam, mu, closed=closed), construction=True)
    if not found:
        yield Dropped(
            family,
            f"SRG({n},{k},lam,mu) with {label}",
            "",
            f"k (k - lam - 1) = (v - k - 1) mu has no solution with 0 <= lam < k, mu <= k (v = {n}, k = {k})",
        )


def _sparse_srg(v: int, k: int, lam: int, mu: int, closed: bool) -> Callable[[], Any] | None:
    """A builder of SRG(v, k, λ, μ) kept sparse, when it is a lattice ``L(q)`` or a triangular ``T(t)`` graph.

    ``L(q)`` is SRG(q², 2(q − 1), q − 2, 2), ``T(t)`` is SRG(t(t − 1)/2, 2(t − 2), t − 2, 4)
    (:func:`gcsim.coding.sparse_routes.lattice_graph_sparse`,
    :func:`~gcsim.coding.sparse_routes.triangular_graph_sparse`; for ``q = 4`` and ``t = 8`` these
    parameters have other graphs too, and the lattice or triangular one is the one built).

    >>> _sparse_srg(10000, 198, 98, 2, True)().params
    SRGParams(v=10000, k=198, lam=98, mu=2)
    >>> _sparse_srg(10000, 198, 97, 2, True) is None
    True
    """
    q = math.isqrt(v)
    if q >= 2 and q * q == v and (k, lam, mu) == (2 * (q - 1), q - 2, 2):
        return partial(lattice_graph_sparse, q, closed=closed)
    t = (1 + math.isqrt(1 + 8 * v)) // 2
    if t >= 4 and t * (t - 1) // 2 == v and (k, lam, mu) == (2 * (t - 2), t - 2, 4):
        return partial(triangular_graph_sparse, t, closed=closed)
    return None


def srg_structures(q: Question) -> Iterator[Item]:
    """Strongly regular graphs on ``v = n`` vertices with ``A = Adj + I``: degree ``load - 1``."""
    return _srg_structures(q, True)


def open_srg_structures(q: Question) -> Iterator[Item]:
    """Strongly regular graphs on ``v = n`` vertices with ``A = Adj``: degree ``load``."""
    return _srg_structures(q, False)


def coset_structures(q: Question) -> Iterator[Item]:
    """Coset bipartite graphs ``(k_g, m_c, delta)`` with ``n = m_c k_g``, ``k_g = p^a``, ``delta`` = the load."""
    n = q.n
    divisors = [k for k in range(2, n + 1) if n % k == 0]
    powers = [k for k in divisors if is_prime_power(k)]
    if not powers:
        yield Dropped("coset", f"coset graph with n = {n}", "", f"n = {n} has no prime-power divisor k >= 2")
        return
    for k in powers:
        mc = n // k
        delta = q.parts_per_worker(k)
        name = f"coset graph ({k},{mc},{delta})"
        if not 1 <= delta < k:
            yield Dropped("coset", name, "", f"load delta = {delta} must lie in [1, k - 1] (k = {k} parts)")
            continue
        p = prime_power(k)[0]
        note = "" if delta % p else f"p = {p} divides delta = {delta}: the invertibility theorem does not apply"
        yield _guarded("coset", name, partial(coset_graph, k, mc, delta, seed=q.seed), note=note)


def biregular_structures(q: Question) -> Iterator[Item]:
    """A seeded connected bi-regular graph with ``v = b = n`` and ``r = k`` = the load."""
    n = q.n
    k = q.parts_per_worker(n)
    name = f"bi-regular graph ({n},{n},{k},{k}), seed {q.seed}"
    if not 1 <= k <= n:
        yield Dropped("biregular", name, "", f"load {k} outside [1, n = {n}]")
        return
    yield _guarded("biregular", name, partial(biregular_graph, n, n, k, k, seed=q.seed))


def cyclic_structures(q: Question) -> Iterator[Item]:
    """Cyclic repetition: worker ``j`` holds parts ``j..j+load-1 (mod n)`` (the cyclic MDS support)."""
    n = q.n
    ell = q.parts_per_worker(n)
    name = f"cyclic repetition ({n} workers, {ell} parts each)"
    if not 1 <= ell <= n:
        yield Dropped("cyclic", name, "", f"load {ell} outside [1, n = {n}]")
        return
    yield _guarded("cyclic", name, partial(cyclic_repetition, n, ell))


def fractional_structures(q: Question) -> Iterator[Item]:
    """Fractional repetition: groups of ``load`` workers with identical parts; needs ``load | n``."""
    n = q.n
    ell = q.parts_per_worker(n)
    name = f"fractional repetition ({n} workers, groups of {ell})"
    if ell < 1 or n % ell:
        yield Dropped("fractional", name, "", f"the group size load = {ell} does not divide n = {n}")
        return
    yield _guarded("fractional", name, partial(fractional_repetition, n, ell - 1))


def random_regular_structures(q: Question) -> Iterator[Item]:
    """A seeded random ``(load - 1)``-regular graph with ``A = Adj + I`` (an expander w.h.p.)."""
    n = q.n
    d = q.parts_per_worker(n) - 1
    name = f"random {d}-regular graph on {n} vertices, seed {q.seed}"
    if not 0 <= d < n or (n * d) % 2:
        yield Dropped("random-regular", name, "", f"no {d}-regular graph on {n} vertices (needs 0 <= d < n, n d even)")
        return
    yield _guarded("random-regular", name, partial(random_regular_assignment, n, d, seed=q.seed))


def _mgg(q: Question, family: str, label: str, build: Callable[[int], Any]) -> Iterator[Item]:
    n = q.n
    side = math.isqrt(n)
    if side * side != n:
        yield Dropped(family, label, "", f"n = {n} is not a square m^2")
        return
    yield _at_most_load(q, _guarded(family, f"{label} on Z_{side} x Z_{side}", partial(build, side)))


def mgg_structures(q: Question) -> Iterator[Item]:
    """The Margulis--Gabber--Galil expander on ``Z_m x Z_m`` (``n = m^2``; loads 5..9, at most the load)."""
    yield from _mgg(q, "mgg", "Margulis-Gabber-Galil graph", margulis_gabber_galil)


def weighted_mgg_structures(q: Question) -> Iterator[Item]:
    """The Margulis--Gabber--Galil multigraph with its multiplicities (``n = m^2``; the ``"weighted"`` encoder)."""
    yield from _mgg(q, "weighted-mgg", "weighted Margulis-Gabber-Galil graph", weighted_margulis_gabber_galil)


def chordal_cycle_structures(q: Question) -> Iterator[Item]:
    """Lubotzky's chordal cycle on ``Z_p`` with multiplicities (``n = p`` prime; the ``"weighted"`` encoder)."""
    n = q.n
    name = f"chordal cycle on Z_{n}"
    if not is_prime(n):
        yield Dropped("chordal-cycle", "chordal cycle", "", f"n = {n} is not a prime")
        return
    yield _at_most_load(q, _guarded("chordal-cycle", name, partial(chordal_cycle, n)))


def _heterogeneous_weights(model: StragglerModel) -> list[tuple[str, np.ndarray]]:
    """The weightings of the ``"weighted-cyclic"`` family: reliability ``1 - p_j``, and a model's ``speed``.

    Empty for a model whose workers are alike or whose law is not independent per worker (the
    advisor's answers for those models stay the symmetric families').
    """
    p = model.independent_p()
    if p is None or bool(np.all(p == p[0])):
        return []
    # a load-dependent law's p_j belong to one split of the data, not to the code's: its speeds only
    out = [] if model.load_dependent else [("proportional to 1 - p_j", 1.0 - np.asarray(p, dtype=float))]
    speed = getattr(model, "speed", None)
    if speed is not None and not bool(np.all(speed == speed[0])):
        out.append(("proportional to speed s_j", np.asarray(speed, dtype=float)))
    return out


#: Most workers for which the ``"weighted-cyclic"`` family searches the loads (:func:`optimize_loads`).
LOAD_SEARCH_WORKERS = 24


def _weighted_loads(q: Question, ell: int) -> list[tuple[str, np.ndarray, str]]:
    """``(label, loads, note)`` of the family: each weighting apportioned, then the searched loads (§63.6)."""
    n = q.n
    top = n if q.max_load is None else min(n, q.max_load)  # every load in [1, top]
    out = [(label, apportion_loads(w, n * ell, top), "") for label, w in _heterogeneous_weights(q.model)]
    if out and n <= LOAD_SEARCH_WORKERS:
        try:
            plan = optimize_loads(q.model, n * ell, n, max_load=q.max_load)
        except GcsimError:  # no feasible loads (a worker that cannot arrive): the weightings stay
            return out
        out.insert(0, ("the searched optimum", plan.loads, f"loads chosen by {plan.search} of the {plan.objective}"))
    return out


def weighted_cyclic_structures(q: Question) -> Iterator[Item]:
    """Weighted cyclic repetition for independent non-identical stragglers (theory §63).

    ``N = n`` parts and the total load of cyclic repetition (``n l`` part copies, ``l`` =
    :meth:`Question.parts_per_worker`), apportioned to the workers in proportion to ``1 - p_j``
    (and to a model's speeds), each load in ``[1, N]``: the *average* data per worker equals the
    symmetric candidates', the reliable workers hold more.  For ``n <= LOAD_SEARCH_WORKERS`` also
    the loads :func:`gcsim.coding.load_allocation.optimize_loads` finds (theory §63.6).  Nothing for
    a homogeneous model; loads that come out equal are left to the symmetric families.  With
    ``q.max_load`` every load vector (apportioned or searched) stays at or below it.
    """
    n = q.n
    ell = q.parts_per_worker(n)
    if not 1 <= ell < n:
        if _heterogeneous_weights(q.model):
            name = f"weighted cyclic repetition ({n} workers, mean load {ell})"
            yield Dropped("weighted-cyclic", name, "", f"load {ell} outside [1, n - 1 = {n - 1}]")
        return
    seen: set[tuple[int, ...]] = set()
    for label, loads, how in _weighted_loads(q, ell):
        key = tuple(loads.tolist())
        if key in seen or len(set(key)) == 1:  # the same loads twice, or symmetric ones: no new candidate
            continue
        seen.add(key)
        name = f"weighted cyclic repetition ({n} workers, loads {label}, mean {ell})"
        yield _guarded(
            "weighted-cyclic",
            f"{name} {loads.tolist()}",
            partial(weighted_cyclic_repetition, loads, n),
            note="; ".join(
                t
                for t in (
                    f"non-symmetric: worker loads {loads.tolist()} of {n} parts, the same total {n * ell} as the "
                    f"symmetric candidates (the load is an average here"
                    + (")" if q.max_load is None else f", every load capped at max_load = {q.max_load})"),
                    how,
                )
                if t
            ),
        )


def _at_most_load(q: Question, item: Item) -> Item:
    """An irregular assignment is kept when its largest load is at most the load."""
    if isinstance(item, Structure):
        top = int(item.loads.max())
        cap = q.parts_per_worker(item.shape[0])
        if top > cap:
            return Dropped(item.family, item.name, "", f"its largest load {top} exceeds the load {cap}")
    return item


#: The families in the order the advisor enumerates them: (name, generator).
FAMILIES: tuple[tuple[str, Callable[[Question], Iterator[Item]]], ...] = (
    ("bibd", bibd_structures),
    ("bibd-dual", dual_bibd_structures),
    ("srg", srg_structures),
    ("srg-open", open_srg_structures),
    ("coset", coset_structures),
    ("biregular", biregular_structures),
    ("cyclic", cyclic_structures),
    ("fractional", fractional_structures),
    ("random-regular", random_regular_structures),
    ("mgg", mgg_structures),
    ("weighted-mgg", weighted_mgg_structures),
    ("chordal-cycle", chordal_cycle_structures),
    ("weighted-cyclic", weighted_cyclic_structures),
)
#: Names of :data:`FAMILIES`, the values ``families=`` of :func:`gcsim.advisor.advise` accepts.
FAMILY_NAMES: tuple[str, ...] = tuple(name for name, _ in FAMILIES)
#: The families whose workers all hold the same load (every family but the weighted ones).
SYMMETRIC_FAMILIES: tuple[str, ...] = tuple(name for name in FAMILY_NAMES if name != "weighted-cyclic")


def structures(q: Question, families: tuple[str, ...] = FAMILY_NAMES) -> Iterator[Item]:
    """Every family's items, in the order of :data:`FAMILIES`; assignments over the load are dropped.

    An assignment whose dense encoder would pass :data:`gcsim.limits.MAX_DENSE_ENTRIES` stays a
    candidate: :func:`gcsim.advisor.assess.schemes_of` keeps the encoders a structured route
    evaluates without dense matrices and drops the others, each with its reason.
    """
    for name, generate in FAMILIES:
        if name not in families:
            continue
        for item in generate(q):
            if isinstance(item, Structure) and not _fits(q, item):
                N = item.shape[0]
                top = int(item.loads.max())
                item = Dropped(
                    item.family,
                    item.name,
                    "",
                    f"a worker holds {top} of {N} parts ({top / N:.1%} of the data), over the load "
                    f"({q.describe_load()}; relax_load=True, or --relax-load, lifts the cap)",
                )
            yield item


def _oversize(num_parts: int, q: Question) -> str:
    """Why an assignment of ``num_parts`` parts is dropped: its dense ``mN x n`` encoder is over the limit."""
    return f"the encoder would have m N n = {num_parts * q.m * q.n:,} entries, over MAX_DENSE_ENTRIES"


def _fits(q: Question, item: Structure) -> bool:
    if item.family == "weighted-cyclic":  # the load is the average: the total equals the symmetric ones'
        under_cap = q.max_load is None or int(item.loads.max()) <= q.max_load
        return under_cap and int(item.loads.sum()) <= q.parts_per_worker(item.shape[0]) * q.n
    return int(item.loads.max()) <= q.parts_per_worker(item.shape[0])
