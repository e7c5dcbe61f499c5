"""The structured route (theory §42): RD on designs with AᵀA = (k − λ)I + λJ.

Every value is checked against a computation that does not use the code under test: exact rationals
(sympy), a per-pattern ``numpy.linalg.lstsq`` on the dense ``B`` (exact rationals or a pivoted QR where
``B_F`` is rank-deficient, tests/exact_lstsq.py), Theorem 4(a) of §45 and the dense
SVD route; tolerances are the proved bound β(f) of Theorem 42.2 plus the reference's own bound
(tests/tolerances.py).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
import sympy

import gcsim
from exact_lstsq import checked_lstsq
from gcsim.coding import structured
from gcsim.coding.bounds import bibd_optimal_error_m1
from gcsim.coding.evaluate import expected_error, optimal_error, optimal_error_all
from gcsim.coding.schemes import Scheme, encode
from gcsim.coding.stragglers import straggler_model
from gcsim.coding.structured import (
    StructuredContext,
    check_pair_gram,
    encode_structured,
    incidence_from_blocks,
    structured_context,
)
from gcsim.errors import InvalidArgumentError, SizeLimitError, VerificationError
from tolerances import lstsq_tol

# symmetric designs: Fano, PG(2,3), the (11,5,2) and (16,6,2) biplanes, PG(3,2) points/planes (λ = 3)
SMALL = [(7, 3, 1), (13, 4, 1), (11, 5, 2), (16, 6, 2), (15, 7, 3)]
# the CI sizes of the acceptance check (PG(2,7), PG(2,11), PG(2,13))
PLANES = [(57, 8, 1), (133, 12, 1), (183, 14, 1)]


def _patterns(rng: np.random.Generator, n: int, count: int) -> np.ndarray:
    """Masks with straggling fractions spread over (0, 1), plus the full and the empty pattern."""
    p = rng.random((count, 1))
    masks = rng.random((count, n)) >= p
    return np.vstack([np.ones(n, dtype=bool), np.zeros(n, dtype=bool), masks])


def _lstsq_error(B: np.ndarray, T: np.ndarray, mask: np.ndarray) -> tuple[float, float]:
    """``min_X ‖B_F X − T‖²`` and κ(B_F) over its non-zero singular values.

    lstsq where ``B_F`` has full column rank; exact rationals or a pivoted QR where lstsq reports a
    deficiency (tests/exact_lstsq.py), where gelsd's answer depended on the OpenBLAS kernel.
    """
    BF = B[:, mask]
    if BF.shape[1] == 0:
        return float(np.sum(T**2)), 1.0
    return checked_lstsq(BF, T)


def _exact_error(B: np.ndarray, T: np.ndarray, mask: np.ndarray) -> Fraction:
    """``mN − ‖P_F T‖²`` in exact rationals (the float entries of ``B`` taken exactly)."""
    BF = sympy.Matrix([[sympy.Rational(Fraction(float(x))) for x in row] for row in B[:, mask]])
    Tm = sympy.Matrix(T.astype(int).tolist())
    if BF.shape[1] == 0 or BF.is_zero_matrix:
        return Fraction(int(np.sum(T**2)))
    # a basis of col(B_F) (exact rank), then the normal equations on it
    cols = BF.columnspace()
    C = sympy.Matrix.hstack(*cols)
    X = (C.T * C).solve(C.T * Tm)
    R = C * X - Tm
    val = sum(x**2 for x in R)
    return Fraction(int(sympy.numer(val)), int(sympy.denom(val)))


@pytest.mark.parametrize("v,k,lam", SMALL)
@pytest.mark.parametrize("m,eps", [(1, 0.0), (2, 0.0), (2, 0.5), (3, 0.25)])
def test_closed_form_equals_exact_rationals(v, k, lam, m, eps):
    D = gcsim.bibd(v, k, lam)
    sch = encode(D, m, "rd", eps=eps, seed=v + m)
    ctx = structured_context(sch)
    assert ctx is not None and (ctx.k, ctx.lam) == (k, lam)
    rng = np.random.default_rng(v * 10 + m)
    masks = _patterns(rng, v, 6)
    got = ctx.errors(masks)
    T = sch.target()
    for mk, g in zip(masks, got, strict=True):
        exact = _exact_error(np.asarray(sch.B), T, mk)
        assert abs(g - float(exact)) <= ctx.bound(int(mk.sum())) + 4 * np.finfo(float).eps * float(exact), (
            mk,
            g,
            exact,
        )


@pytest.mark.parametrize("v,k,lam", PLANES + [(16, 6, 2), (15, 7, 3)])
@pytest.mark.parametrize(
    "m,dist,eps", [(1, "rademacher", 0.0), (2, "rademacher", 0.0), (2, "gaussian", 0.3), (3, "rademacher", 0.5)]
)
def test_matches_lstsq_and_dense_routes_on_random_patterns(v, k, lam, m, dist, eps):
    D = gcsim.bibd(v, k, lam)
    sch = encode(D, m, "rd", eps=eps, seed=3, dist=dist)
    ctx = structured_context(sch)
    assert ctx is not None
    rng = np.random.default_rng(v + 7 * m)
    masks = _patterns(rng, v, 30 if v <= 60 else 6)
    got = ctx.errors(masks)
    svd = optimal_error(sch, masks, method="svd", progress=False)
    B, T = np.asarray(sch.B), sch.target()
    mN = m * v
    for mk, g, ref_svd in zip(masks, got, svd, strict=True):
        ref, kappa = _lstsq_error(B, T, mk)
        f = int(mk.sum())
        tol = ctx.bound(f) + lstsq_tol(kappa, mN, max(f, 1), mN)
        assert abs(g - ref) <= tol, (f, g, ref, tol)
        # acceptance (#22): the structured route equals the dense route to 1e-9 relative
        assert abs(g - ref_svd) <= 1e-9 * max(ref_svd, 1e-300) or abs(g - ref_svd) <= tol


@pytest.mark.parametrize("v,k,lam", SMALL + PLANES[:1])
def test_m1_equals_theorem_4a_of_chapter_45(v, k, lam):
    sch = encode(gcsim.bibd(v, k, lam), 1, "rd", eps=0.7, seed=1, dist="gaussian")
    ctx = structured_context(sch)
    for s in (0, 1, v // 3, v - 1, v):
        mk = np.ones(v, dtype=bool)
        mk[np.random.default_rng(s).permutation(v)[:s]] = False
        exact = bibd_optimal_error_m1(v, k, lam, s, exact=True)
        assert abs(ctx.errors(mk[None])[0] - float(exact)) <= ctx.bound(v - s) + 2 * np.finfo(float).eps * v


def test_zero_diagonals_drop_their_workers():
    """A worker with u_j = 0 has a zero column: err(F) = err(F') exactly (Theorem 42.1)."""
    D = gcsim.bibd(13, 4, 1)
    A = np.asarray(D.assignment)
    rng = np.random.default_rng(0)
    Dg = rng.standard_normal((2, 13))
    Dg[:, [2, 5, 11]] = 0.0
    ctx = StructuredContext(Dg, 13, 4, 1)
    B = (A[None] * Dg[:, None, :]).reshape(26, 13)
    T = np.kron(np.eye(2), np.ones((13, 1)))
    masks = _patterns(rng, 13, 10)
    for mk, g in zip(masks, ctx.errors(masks), strict=True):
        exact = _exact_error(B, T, mk)
        assert abs(g - float(exact)) <= ctx.bound(int(mk.sum())) + 1e-15 * 26


def test_auto_takes_the_structured_route_and_bit_identical_values():
    sch = encode(gcsim.bibd(57, 8, 1), 2, "rd", seed=5)
    ctx = structured_context(sch)
    masks = _patterns(np.random.default_rng(1), 57, 30)
    assert np.array_equal(optimal_error(sch, masks, progress=False), np.clip(ctx.errors(masks), 0, 114))
    allv = optimal_error_all(sch, 2, progress=False)
    ref = optimal_error_all(sch, 2, method="svd", progress=False)
    assert allv.shape == ref.shape == (57 * 56 // 2,)
    assert np.max(np.abs(allv - ref) / ref) <= 1e-9
    single = optimal_error(sch, np.ones(57, dtype=bool), normalized=True, progress=False)
    assert isinstance(single, float) and 0 < single < 1


def test_not_recognised_where_the_theorem_does_not_apply():
    D = gcsim.bibd(13, 4, 1)
    assert structured_context(encode(D, 2, "naive")) is None
    assert structured_context(encode(D, 2, "ns", eps=0.1)) is None
    # a non-symmetric design: AG(2,3) has parallel lines (A^T A has zeros off the diagonal)
    assert structured_context(encode(gcsim.bibd(9, 3, 1), 2, "rd")) is None
    # method 'rd' but B is not the stack of A diag(d_l): a forged scheme
    sch = encode(D, 2, "rd", seed=0)
    B = np.array(sch.B)
    B[0, np.flatnonzero(B[0])[0]] *= 2.0
    forged = Scheme(B=B, assignment=sch.assignment, m=2, method="rd", diagonals=sch.diagonals)
    assert structured_context(forged) is None
    # and auto then gives the dense routes' value
    mk = np.ones(13, dtype=bool)
    mk[:3] = False
    assert optimal_error(forged, mk, progress=False) == pytest.approx(optimal_error(forged, mk, method="svd"), rel=1e-9)


def test_uncertified_design_goes_to_the_dense_routes(monkeypatch):
    sch = encode(gcsim.bibd(13, 4, 1), 2, "rd", seed=2)
    structured._SEEN.clear()
    monkeypatch.setattr(structured, "STRUCTURED_LIMIT", 1e-30)
    assert structured_context(sch) is None
    with pytest.raises(InvalidArgumentError, match="error bound"):
        encode_structured(gcsim.bibd(13, 4, 1), 2)
    structured._SEEN.clear()


def test_encode_structured_has_the_diagonals_of_encode():
    D = gcsim.bibd(57, 8, 1)
    for seed, eps, dist, m in [(0, 0.0, "rademacher", 2), (4, 0.3, "gaussian", 3), (9, 1.0, "rademacher", 1)]:
        enc = encode_structured(D, m, seed=seed, eps=eps, dist=dist)
        sch = encode(D, m, "rd", seed=seed, eps=eps, dist=dist)
        assert np.array_equal(enc.diagonals, sch.diagonals)
        assert np.array_equal(enc.B, sch.B)
        assert enc.verify()
    # from a block list and from a sparse matrix: the same encoder
    a = encode_structured(list(D.blocks), 2, seed=1, points=57)
    b = encode_structured(sp.csr_matrix(np.asarray(D.assignment)), 2, seed=1)
    assert np.array_equal(a.B, b.B)


def test_check_pair_gram_exact_and_its_messages():
    fano = incidence_from_blocks(7, [(0, 1, 3), (1, 2, 4), (2, 3, 5), (3, 4, 6), (0, 4, 5), (1, 5, 6), (0, 2, 6)])
    assert check_pair_gram(fano) == (3, 1)
    bad = fano.toarray()
    bad[0, 0] = 2
    with pytest.raises(VerificationError, match="0/1"):
        check_pair_gram(bad)
    uneven = fano.toarray()
    uneven[6, 0] = 1
    with pytest.raises(VerificationError, match="column 0 holds 4"):
        check_pair_gram(uneven)
    ag = np.asarray(gcsim.bibd(9, 3, 1).assignment)
    with pytest.raises(VerificationError, match="meet in 0 parts"):
        check_pair_gram(ag)
    with pytest.raises(VerificationError, match="a > 0"):
        check_pair_gram(np.ones((4, 4), dtype=int))
    with pytest.raises(InvalidArgumentError, match="block 1"):
        incidence_from_blocks(5, [(0, 1), (1, 1)])
    with pytest.raises(InvalidArgumentError, match="points=v"):
        encode_structured([(0, 1), (1, 2), (0, 2)], 1)


def test_expected_error_structured_equals_dense_estimator():
    """Same masks, same estimator: the structured and the dense expected errors agree to 1e-9."""
    sch = encode(gcsim.bibd(57, 8, 1), 2, "rd", seed=0)
    for model in (straggler_model("bernoulli", 57, p=0.1), straggler_model("fixed", 57, s=6)):
        a = expected_error(sch, model, samples=400, seed=3, progress=False)
        b = expected_error(sch, model, samples=400, seed=3, method="downdate", progress=False)
        assert a.method == b.method and a.count == b.count
        assert a.mean == pytest.approx(b.mean, rel=1e-9)
        assert a.ci == pytest.approx(b.ci, rel=1e-9)


def test_structured_refuses_dense_beyond_the_limit(monkeypatch):
    import gcsim.limits as limits

    enc = encode_structured(gcsim.bibd(57, 8, 1), 2, seed=0)
    monkeypatch.setattr(limits, "MAX_DENSE_ENTRIES", 1000)
    with pytest.raises(SizeLimitError, match="dense"):
        _ = enc.B
    # the evaluators need neither B nor A
    val = optimal_error(enc, np.ones(57, dtype=bool), progress=False)
    assert 0 < val < 114
    with pytest.raises(SizeLimitError):
        optimal_error(enc, np.ones(57, dtype=bool), method="svd", progress=False)


@pytest.mark.slow
def test_structured_equals_dense_at_2257_workers():
    """#22's acceptance bar on its largest size: PG(2,47), m = 2, structured = dense (downdate) to 1e-9."""
    D = gcsim.bibd(2257, 48, 1)
    sch = encode(D, 2, "rd", seed=0)
    ctx = structured_context(sch)
    assert ctx is not None
    masks = straggler_model("bernoulli", 2257, p=0.1).sample(3, 11)
    masks = np.vstack([np.ones((1, 2257), dtype=bool), masks])
    masks[0, :5] = False  # five stragglers
    got = ctx.errors(masks)
    ref = optimal_error(sch, masks, method="downdate", progress=False)
    assert np.all(np.abs(got - ref) <= 1e-9 * np.maximum(ref, 1e-300)), (got, ref)
