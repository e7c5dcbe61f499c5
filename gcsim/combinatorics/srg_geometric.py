"""Strongly regular graphs from finite geometry (docs/theory.md §20).

Lattice graphs L2(n) and Latin-square graphs LS_m(n) (from the parallel classes of AG(2, n)
for m > 3), collinearity
graphs of the finite classical polar spaces (Sp, O, O+, O-, U), the
symplectic graph Sp(2m, 2), generalized quadrangles GQ(s, t), Cayley graphs of projective
two-intersection sets, affine polar graphs VO^eps(2m, q) and the hyperoval graphs
T2*(O) = GQ(q-1, q+1).  Field arithmetic: :func:`gcsim.combinatorics.fields.field_tables`.
"""

from __future__ import annotations

from math import isqrt

import numpy as np

from .._validation import check_dense_size, check_int, check_int_array
from ..errors import InvalidArgumentError, NotConstructibleError, VerificationError
from ..limits import check_power
from .fields import field_tables, is_prime_power, prime_power, prime_power_decomposition
from .geometries import projective_points
from .srg_cayley import (
    _cayley_adjacency,
    _form_values,
    _quadratic_values,
    _vector_index,
)
from .srg_combinatorial import (
    complete_multipartite_graph,
)
from .srg_graph import StronglyRegularGraph, _make, srg_parameters_of

__all__ = [
    "lattice_graph",
    "latin_square_graph",
    "polar_graph_parameters",
    "polar_graph",
    "symplectic_graph",
    "generalized_quadrangle_graph",
    "two_intersection_graph",
    "affine_polar_graph",
    "hyperoval_gq_graph",
]


def lattice_graph(n: int) -> StronglyRegularGraph:
    """Lattice (rook's) graph L2(n) = K_n x K_n: cells of an n x n grid, adjacent iff same row or column.

    SRG(n^2, 2(n-1), n-2, 2) for n >= 2 (BvM §1.1.6).  Vertex ``(i, j)`` is ``i*n + j``.

    >>> lattice_graph(4).params
    SRGParams(v=16, k=6, lam=2, mu=2)
    """
    n = check_int("n", n, minimum=2)
    return latin_square_graph(2, n)


#: Tabulated mutually orthogonal Latin squares for orders that are not prime powers: order -> squares.
#: Order 10: a pair found for gcsim by a search (a Jacobson-Matthews random Latin square whose 856
#: transversals contain 10 disjoint ones, which give its orthogonal mate); ``tests/test_family_registry.py``
#: checks that both are Latin squares and that they are orthogonal, from the numbers alone.
MOLS_TABLE: dict[int, tuple[tuple[tuple[int, ...], ...], ...]] = {
    10: (
        (
            (2, 6, 7, 3, 4, 0, 5, 1, 8, 9),
            (9, 2, 0, 8, 7, 1, 4, 5, 3, 6),
            (0, 3, 6, 2, 9, 8, 7, 4, 1, 5),
            (4, 8, 3, 9, 2, 7, 1, 6, 5, 0),
            (3, 4, 9, 0, 6, 5, 8, 2, 7, 1),
            (6, 0, 1, 7, 5, 4, 3, 9, 2, 8),
            (1, 5, 8, 6, 3, 2, 9, 7, 0, 4),
            (8, 9, 2, 5, 1, 3, 6, 0, 4, 7),
            (5, 7, 4, 1, 8, 9, 0, 3, 6, 2),
            (7, 1, 5, 4, 0, 6, 2, 8, 9, 3),
        ),
        (
            (0, 1, 2, 3, 4, 5, 6, 7, 8, 9),
            (5, 8, 0, 6, 3, 2, 1, 9, 7, 4),
            (1, 4, 5, 2, 6, 0, 7, 8, 9, 3),
            (7, 2, 8, 1, 9, 4, 5, 3, 0, 6),
            (6, 3, 4, 7, 2, 8, 9, 5, 1, 0),
            (8, 9, 3, 5, 7, 6, 2, 0, 4, 1),
            (4, 5, 7, 9, 0, 1, 8, 6, 3, 2),
            (3, 7, 6, 4, 1, 9, 0, 2, 5, 8),
            (2, 0, 9, 8, 5, 3, 4, 1, 6, 7),
            (9, 6, 1, 0, 8, 7, 3, 4, 2, 5),
        ),
    ),
}


def latin_square_graph(m: int, n: int) -> StronglyRegularGraph:
    """Latin square graph LS_m(n) from m-2 mutually orthogonal Latin squares of order n.

    Vertices are the n^2 cells ``(i, j)``; two cells are adjacent iff they share
    a row, a column, or a symbol in one of the m-2 squares.  It is an
    SRG(n^2, m(n-1), (m-1)(m-2) + n - 2, m(m-1)) for 2 <= m <= n (BvM §1.1.6;
    Bose 1963).  gcsim uses: m = 2 (the lattice graph), m = 3 with the cyclic
    square ``L[i, j] = i + j mod n`` (any n), the squares of :data:`MOLS_TABLE`
    (m = 4 for n = 10), and for a prime power n the
    ``m`` parallel classes of lines of AG(2, n) with slopes ``inf, 0, 1, a, ...``
    (i.e. the Desarguesian complete set of MOLS).

    Parameters
    ----------
    m : int
        Number of "directions" (2 <= m <= n).
    n : int
        Order of the squares.

    Raises
    ------
    NotConstructibleError
        If ``m >= 4`` and ``n`` is not a prime power.

    Examples
    --------
    >>> latin_square_graph(3, 6).params
    SRGParams(v=36, k=15, lam=6, mu=6)
    >>> latin_square_graph(4, 5).params
    SRGParams(v=25, k=16, lam=9, mu=12)
    """
    n = check_int("n", n, minimum=2)
    m = check_int("m", m, minimum=2, maximum=n)
    check_dense_size("n", n * n, n * n, f"the adjacency matrix of LS_{m}({n})")
    expected = (n * n, m * (n - 1), (m - 1) * (m - 2) + n - 2, m * (m - 1))
    if m <= 3:
        i, j = np.divmod(np.arange(n * n), n)
        labels = [i, j, (i + j) % n][:m]
        adj = np.zeros((n * n, n * n), dtype=np.int64)
        for lab in labels:
            adj |= (lab[:, None] == lab[None, :]).astype(np.int64)
        adj[np.diag_indices(n * n)] = 0
        name = f"lattice graph L2({n})" if m == 2 else f"Latin square graph LS_3({n}) (cyclic square)"
        return _make(adj, name, expected, m=m, n=n)
    if not is_prime_power(n) and m - 2 <= len(MOLS_TABLE.get(n, ())):
        i, j = np.divmod(np.arange(n * n), n)
        labels = [i, j] + [np.asarray(sq, dtype=np.int64)[i, j] for sq in MOLS_TABLE[n][: m - 2]]
        adj = np.zeros((n * n, n * n), dtype=np.int64)
        for lab in labels:
            adj |= (lab[:, None] == lab[None, :]).astype(np.int64)
        adj[np.diag_indices(n * n)] = 0
        return _make(adj, f"Latin square graph LS_{m}({n}) (tabulated MOLS)", expected, m=m, n=n)
    if not is_prime_power(n):
        raise NotConstructibleError(
            f"LS_{m}({n}) needs {m - 2} MOLS of order {n}; gcsim only has them "
            f"for prime powers n, m <= 3 for any n, and MOLS_TABLE",
            [(n * n, mm * (n - 1), (mm - 1) * (mm - 2) + n - 2, mm * (mm - 1)) for mm in (2, 3)],
        )
    # m points of PG(1, n): (0,1) [vertical], (1,0), (1,1), (1,2), ...
    pts = np.array([[0, 1]] + [[1, t] for t in range(m - 1)], dtype=np.int64)
    g = two_intersection_graph(n, pts)
    return StronglyRegularGraph(
        g.adjacency, expected, f"Latin square graph LS_{m}({n}) from AG(2,{n})", metadata={"m": m, "n": n}
    )


def _irreducible_quadratic_c(q: int) -> int:
    """Smallest c in GF(q) (integer repr) with t^2 + t + c irreducible over GF(q)."""
    add, mul = field_tables(q)
    t = np.arange(q)
    tt = add[mul[t, t], t]
    for c in range(1, q):
        if not np.any(add[tt, c] == 0):
            return c
    raise VerificationError(f"no irreducible t^2 + t + c over GF({q})")  # pragma: no cover


#: polar space types -> (description, e) in the convention of BvM §2.5 / Brouwer's tables
_POLAR_E = {"Sp": 1.0, "O": 1.0, "O+": 0.0, "O-": 2.0, "U": None}


def polar_graph_parameters(kind: str, n: int, q: int) -> tuple[int, int, int, int]:
    """Parameters of the collinearity graph of a classical polar space of rank d >= 2.

    With the standard exponent ``e`` (O+(2d, q): 0; Sp(2d, q), O(2d+1, q): 1;
    O-(2d+2, q): 2; U(2d, q): 1/2; U(2d+1, q): 3/2, for U the field has order
    ``q`` = a square), the graph is SRG(v, k, lam, mu) with
    ``v = (q^d - 1)(q^{d+e-1} + 1)/(q - 1)``,
    ``k = q (q^{d-1} - 1)(q^{d+e-2} + 1)/(q - 1)``,
    ``lam = q^2 (q^{d-2} - 1)(q^{d+e-3} + 1)/(q - 1) + q - 1``,
    ``mu = (q^{d-1} - 1)(q^{d+e-2} + 1)/(q - 1)`` (BvM Thm 2.2.12).

    >>> polar_graph_parameters("Sp", 4, 3), polar_graph_parameters("U", 4, 4)
    ((40, 12, 2, 4), (45, 12, 3, 3))
    """
    kind, n, q, d, e2 = _polar_check(kind, n, q)
    r = isqrt(q)

    # q^(x/2) for integer x (e2 = 2e), exact
    def qh(x2: int) -> int:
        if x2 < 0:  # only multiplies a vanishing factor (d = 2)
            return 0
        return q ** (x2 // 2) if x2 % 2 == 0 else r**x2

    v = (q**d - 1) * (qh(2 * d + e2 - 2) + 1) // (q - 1)
    k = q * (q ** (d - 1) - 1) * (qh(2 * d + e2 - 4) + 1) // (q - 1)
    lam = q * q * (q ** (d - 2) - 1) * (qh(2 * d + e2 - 6) + 1) // (q - 1) + q - 1
    mu = (q ** (d - 1) - 1) * (qh(2 * d + e2 - 4) + 1) // (q - 1)
    return (v, k, lam, mu)


def _polar_check(kind, n, q):
    if kind not in _POLAR_E:
        raise InvalidArgumentError("kind", f"must be one of {sorted(_POLAR_E)}, got {kind!r}")
    n = check_int("n", n, minimum=3)
    q = check_int("q", q, minimum=2)
    if not is_prime_power(q):
        raise InvalidArgumentError("q", f"must be a prime power, got {q}")
    if kind == "Sp":
        if n % 2:
            raise InvalidArgumentError("n", f"Sp(n, q) needs even n, got {n}")
        d, e2 = n // 2, 2
    elif kind == "O":
        if n % 2 == 0:
            raise InvalidArgumentError("n", f"O(n, q) (parabolic) needs odd n, got {n}")
        d, e2 = (n - 1) // 2, 2
    elif kind == "O+":
        if n % 2:
            raise InvalidArgumentError("n", f"O+(n, q) needs even n, got {n}")
        d, e2 = n // 2, 0
    elif kind == "O-":
        if n % 2:
            raise InvalidArgumentError("n", f"O-(n, q) needs even n, got {n}")
        d, e2 = n // 2 - 1, 4
    else:  # unitary: field GF(q), q a square
        r = isqrt(q)
        if r * r != q:
            raise InvalidArgumentError("q", f"U(n, q) needs a square field order q, got {q}")
        d, e2 = (n // 2, 1) if n % 2 == 0 else ((n - 1) // 2, 3)
    if d < 2:
        raise InvalidArgumentError("n", f"{kind}({n}, {q}) has rank {d} < 2 (no lines; graph trivial)")
    check_power("n", q, n, "q^n, the vectors of the polar space")  # its parameters are exact integers below q^n
    return kind, n, q, d, e2


def _quadratic_terms(kind: str, n: int, q: int) -> list[tuple[int, int, int]]:
    """Terms (a, b, c) of the quadratic form Q(x) = sum c x_a x_b of type O+, O- or O."""
    h = n // 2 if kind == "O+" else (n // 2 - 1 if kind == "O-" else (n - 1) // 2)
    terms = [(2 * i, 2 * i + 1, 1) for i in range(h)]
    if kind == "O-":
        terms += [(n - 2, n - 2, 1), (n - 2, n - 1, 1), (n - 1, n - 1, _irreducible_quadratic_c(q))]
    elif kind == "O":
        terms += [(n - 1, n - 1, 1)]
    return terms


def _polarize(terms) -> list[tuple[int, int, int]]:
    """Terms of the bilinear form B(x, y) = Q(x + y) - Q(x) - Q(y): c x_a y_b + c x_b y_a."""
    return [t for a, b, c in terms for t in ((a, b, c), (b, a, c))]


def polar_graph(kind: str, n: int, q: int) -> StronglyRegularGraph:
    """Collinearity graph of a finite classical polar space of rank >= 2.

    Points are the singular (isotropic) points of PG(n-1, q) for the form below;
    two distinct points are adjacent iff they are orthogonal (equivalently, the
    line joining them is totally singular).  Forms on ``x = (x_0, ..., x_{n-1})``:

    * ``"Sp"`` (n even): symplectic ``B(x,y) = sum_i x_{2i} y_{2i+1} - x_{2i+1} y_{2i}``.
    * ``"O+"`` (n even): ``Q(x) = sum_{i<n/2} x_{2i} x_{2i+1}`` (hyperbolic).
    * ``"O-"`` (n even): ``Q(x) = sum_{i<n/2-1} x_{2i} x_{2i+1} + x_{n-2}^2 + x_{n-2} x_{n-1} + c x_{n-1}^2``
      with ``t^2 + t + c`` irreducible (elliptic).
    * ``"O"`` (n odd): ``Q(x) = x_{n-1}^2 + sum_{i<(n-1)/2} x_{2i} x_{2i+1}`` (parabolic).
    * ``"U"``: Hermitian ``H(x, y) = sum_i x_i y_i^r`` over GF(q), q = r^2.

    Parameters are given by :func:`polar_graph_parameters` (BvM §2.5; Hubaut 1975).
    Examples: ``("Sp", 4, q)`` is GQ(q, q); ``("O-", 6, q)`` is GQ(q, q^2);
    ``("U", 4, r^2)`` is GQ(r^2, r); ``("Sp", 6, 2)`` is SRG(63, 30, 13, 15).

    >>> polar_graph("Sp", 4, 2).params
    SRGParams(v=15, k=6, lam=1, mu=3)
    >>> polar_graph("O-", 6, 2).params
    SRGParams(v=27, k=10, lam=1, mu=5)
    """
    kind, n, q, d, e2 = _polar_check(kind, n, q)
    v = polar_graph_parameters(kind, n, q)[0]  # the form is evaluated on pairs of singular points only
    check_dense_size("q", v, v, f"the collinearity graph of the polar space {kind}({n},{q})")
    add, mul = field_tables(q)
    P = projective_points(n, q)
    if kind == "Sp":
        minus_one = int(np.flatnonzero(add[1] == 0)[0])
        terms = [t for i in range(n // 2) for t in ((2 * i, 2 * i + 1, 1), (2 * i + 1, 2 * i, minus_one))]
        pts = np.arange(len(P))
        gram = _form_values(q, P, P, terms)
    elif kind == "U":
        r = isqrt(q)
        frob = np.arange(q)
        for _ in range(r - 1):  # y -> y^r
            frob = mul[frob, np.arange(q)]
        PF = frob[P]
        # isotropic points first (H(x, x) = 0), then the form on pairs of them only
        norm = np.zeros(len(P), dtype=np.int64)
        for i in range(n):
            norm = add[norm, mul[P[:, i], PF[:, i]]]
        pts = np.flatnonzero(norm == 0)
        gram = _form_values(q, P[pts], PF[pts], [(i, i, 1) for i in range(n)])
    else:
        qterms = _quadratic_terms(kind, n, q)
        pts = np.flatnonzero(_quadratic_values(q, P, qterms) == 0)
        S = P[pts]
        gram = _form_values(q, S, S, _polarize(qterms))
    adj = (np.asarray(gram) == 0).astype(np.int64)
    adj[np.diag_indices(len(pts))] = 0
    names = {"Sp": "W", "O": "Q", "O+": "Q+", "O-": "Q-", "U": "H"}
    return _make(
        adj,
        f"polar graph {kind}({n},{q}) (collinearity graph of {names[kind]}({n - 1},{q}))",
        polar_graph_parameters(kind, n, q),
        kind=kind,
        n=n,
        q=q,
    )


def symplectic_graph(m: int) -> StronglyRegularGraph:
    """Symplectic graph Sp(2m, 2): nonzero vectors of GF(2)^{2m}, ``x ~ y`` iff ``B(x, y) = 1``.

    ``B`` is the standard symplectic form.  SRG(2^{2m} - 1, 2^{2m-1},
    2^{2m-2}, 2^{2m-2}); it is the complement of :func:`polar_graph` ``("Sp", 2m, 2)``
    (over GF(2) projective points are nonzero vectors).  m >= 2.

    >>> symplectic_graph(2).params
    SRGParams(v=15, k=8, lam=4, mu=4)
    """
    m = check_int("m", m, minimum=2)
    v = check_power("m", 4, m, "4^m, the vectors of GF(2)^(2m)") - 1
    check_dense_size("m", v, v, f"the adjacency matrix of Sp({2 * m},2)")
    g = polar_graph("Sp", 2 * m, 2).complement()
    return StronglyRegularGraph(g.adjacency, g.params, f"symplectic graph Sp({2 * m},2)", metadata={"m": m})


def generalized_quadrangle_graph(s: int, t: int) -> StronglyRegularGraph:
    """Collinearity graph of a generalized quadrangle GQ(s, t): SRG((s+1)(st+1), s(t+1), s-1, t+1).

    Supported orders (Payne & Thas, *Finite Generalized Quadrangles*, 2009):
    ``(q, q)`` = W(3, q); ``(q, q^2)`` = Q^-(5, q); ``(q^2, q)`` = H(3, q^2);
    ``(q - 1, q + 1)`` = T2*(O) for q a power of 2 (:func:`hyperoval_gq_graph`);
    ``(s, 1)`` = the grid, i.e. L2(s+1); ``(1, t)`` = the dual grid K_{t+1,t+1}.

    >>> generalized_quadrangle_graph(2, 4).params
    SRGParams(v=27, k=10, lam=1, mu=5)
    >>> generalized_quadrangle_graph(3, 5).params
    SRGParams(v=64, k=18, lam=2, mu=6)
    """
    s = check_int("s", s, minimum=1)
    t = check_int("t", t, minimum=1)
    expected = ((s + 1) * (s * t + 1), s * (t + 1), s - 1, t + 1)
    check_dense_size("s", expected[0], expected[0], f"the collinearity graph of GQ({s},{t})")
    rs = isqrt(s)
    if s == t and is_prime_power(s):
        g = polar_graph("Sp", 4, s)
    elif t == s * s and is_prime_power(s):
        g = polar_graph("O-", 6, s)
    elif rs * rs == s and t == rs and is_prime_power(t):
        g = polar_graph("U", 4, s)
    elif t == s + 2 and is_prime_power(s + 1) and (s + 1) % 2 == 0 and s >= 3:
        g = hyperoval_gq_graph(s + 1)
    elif t == 1 and s >= 1:
        g = lattice_graph(s + 1)
    elif s == 1:  # dual grid: complete bipartite K_{t+1, t+1}
        g = complete_multipartite_graph(2, t + 1)
    else:
        raise NotConstructibleError(
            f"gcsim cannot build GQ({s},{t})",
            [((x + 1) * (x * x + 1), x * (x + 1), x - 1, x + 1) for x in (2, 3, 4, 5, 7) if x != s],
        )
    if g.params != expected:  # pragma: no cover - guarded by tests
        raise VerificationError(f"GQ({s},{t}) built with parameters {g.params}, expected {expected}")
    return StronglyRegularGraph(g.adjacency, g.params, f"GQ({s},{t}): {g.construction}", metadata={"s": s, "t": t})


def two_intersection_graph(q: int, points, *, name: str | None = None) -> StronglyRegularGraph:
    """Cayley graph on GF(q)^n whose connection set is the set of nonzero multiples of ``points``.

    If ``O`` is a set of points of PG(n-1, q) met by every hyperplane in either
    ``h1`` or ``h2`` points (a projective two-intersection set), the graph with
    vertices GF(q)^n and ``x ~ y`` iff ``x - y`` spans a point of ``O`` is
    strongly regular with eigenvalues ``k = |O|(q-1)``, ``q h_i - |O|``
    (Delsarte 1972; Calderbank & Kantor 1986, Thm 3.2; BvM §7.1).

    Parameters
    ----------
    q : int
        Prime power.
    points : array_like of shape (m, n)
        Representatives of distinct projective points (galois integer
        representations of GF(q) elements), n >= 2.

    Raises
    ------
    InvalidArgumentError
        If the points are not distinct projective points or the graph is not
        strongly regular (``O`` is not a two-intersection set).

    Examples
    --------
    >>> two_intersection_graph(3, [[0, 1], [1, 0]]).params      # L2(3)
    SRGParams(v=9, k=4, lam=1, mu=2)
    """
    q = check_int("q", q, minimum=2)
    if not is_prime_power(q):
        raise InvalidArgumentError("q", f"must be a prime power, got {q}")
    P = check_int_array("points", points, ndim=2, what="the points")  # integers, counted before they are read
    if P.ndim != 2 or P.shape[1] < 2 or len(P) < 1 or np.any(P < 0) or np.any(P >= q):
        raise InvalidArgumentError("points", f"must be an (m, n) array of field elements 0..{q - 1}, n >= 2")
    n = P.shape[1]
    v = check_power("points", q, n, f"q^n, the vertices of the Cayley graph on GF({q})^n")
    check_dense_size("points", v, v, f"the Cayley graph on GF({q})^{n}")
    _, mul = field_tables(q)
    p, a = prime_power(q)
    mult = mul[np.arange(1, q)[:, None, None], P.astype(np.int64)[None, :, :]]  # (q-1, m, n)
    idx = _vector_index(mult, q).ravel()
    if np.any(np.all(P == 0, axis=1)) or len(np.unique(idx)) != len(idx):
        raise InvalidArgumentError("points", "must be nonzero vectors spanning distinct projective points")
    adj = _cayley_adjacency(p, a * n, idx)
    params = srg_parameters_of(adj)
    if params is None:
        raise InvalidArgumentError(
            "points", "is not a projective two-intersection set: the Cayley graph is not strongly regular"
        )
    return StronglyRegularGraph(
        adj,
        params,
        name or f"two-intersection graph over GF({q})^{n} (|O| = {len(P)})",
        metadata={"q": q, "n": n, "O": P.tolist()},
    )


def affine_polar_graph(eps: int, m: int, q: int) -> StronglyRegularGraph:
    """Affine polar graph VO^eps(2m, q): GF(q)^{2m}, ``x ~ y`` iff ``Q(x - y) = 0`` (x != y).

    ``Q`` is the hyperbolic (eps = +1) or elliptic (eps = -1) quadratic form of
    :func:`polar_graph`.  SRG(q^{2m}, (q^m - eps)(q^{m-1} + eps),
    q(q^{m-1} - eps)(q^{m-2} + eps) + q - 2, q^{m-1}(q^{m-1} + eps)) (BvM §3.3.1).
    The connection set is the quadric, a projective two-intersection set.

    >>> affine_polar_graph(-1, 2, 2).params   # the Clebsch graph
    SRGParams(v=16, k=5, lam=0, mu=2)
    >>> affine_polar_graph(-1, 3, 2).params
    SRGParams(v=64, k=27, lam=10, mu=12)
    """
    eps = check_int("eps", eps)
    if eps not in (1, -1):
        raise InvalidArgumentError("eps", f"must be +1 or -1, got {eps}")
    m = check_int("m", m, minimum=2)
    q = check_int("q", q, minimum=2)
    if not is_prime_power(q):
        raise InvalidArgumentError("q", f"must be a prime power, got {q}")
    n = 2 * m
    v = check_power("m", q, n, f"q^(2m), the vertices of VO({n},{q})")
    check_dense_size("q", v, v, f"the adjacency matrix of VO({n},{q})")
    P = projective_points(n, q)
    O = P[_quadratic_values(q, P, _quadratic_terms("O+" if eps == 1 else "O-", n, q)) == 0]
    expected = (
        q**n,
        (q**m - eps) * (q ** (m - 1) + eps),
        q * (q ** (m - 1) - eps) * (q ** (m - 2) + eps) + q - 2,
        q ** (m - 1) * (q ** (m - 1) + eps),
    )
    g = two_intersection_graph(q, O)
    if g.params != expected:
        raise VerificationError(f"VO^{eps}({n},{q}): got {g.params}, expected {expected}")
    sign = "+" if eps == 1 else "-"
    return StronglyRegularGraph(
        g.adjacency, g.params, f"affine polar graph VO{sign}({n},{q})", metadata={"eps": eps, "m": m, "q": q}
    )


def hyperoval_gq_graph(q: int) -> StronglyRegularGraph:
    """Collinearity graph of the generalized quadrangle T2*(O), q = 2^h >= 4: GQ(q-1, q+1).

    O = conic ``{(1, t, t^2)} u {(0, 0, 1)}`` plus its nucleus ``(0, 1, 0)``, a
    hyperoval of PG(2, q) (every line meets it in 0 or 2 points).  Points of
    the GQ are the vectors of GF(q)^3, collinear iff their difference spans a
    point of O (Payne & Thas 3.1.3), giving SRG(q^3, (q-1)(q+2), q-2, q+2).

    >>> hyperoval_gq_graph(4).params
    SRGParams(v=64, k=18, lam=2, mu=6)
    """
    q = check_int("q", q, minimum=4)
    pp = prime_power_decomposition(q)
    if pp is None or pp[0] != 2:
        raise InvalidArgumentError("q", f"must be a power of 2 (>= 4), got {q}")
    check_dense_size("q", q**3, q**3, f"the collinearity graph of T2*(O) over GF({q})")
    _, mul = field_tables(q)
    t = np.arange(q)
    conic = np.stack([np.ones(q, dtype=np.int64), t, mul[t, t]], axis=1)
    O = np.concatenate([conic, [[0, 0, 1], [0, 1, 0]]])
    g = two_intersection_graph(q, O)
    expected = (q**3, (q - 1) * (q + 2), q - 2, q + 2)
    if g.params != expected:
        raise VerificationError(f"T2*(O) over GF({q}): got {g.params}, expected {expected}")
    return StronglyRegularGraph(
        g.adjacency, g.params, f"GQ({q - 1},{q + 1}) = T2*(O), hyperoval in PG(2,{q})", metadata={"q": q}
    )
