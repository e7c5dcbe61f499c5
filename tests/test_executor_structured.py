"""run_scheme on StructuredRD / SparseRD encoders without the dense B (docs/guides/executor.md, theory §44.3).

(i) On small designs the structured run equals the dense run of the same B (decoder, decoded
vector, error, residual), to tolerances from cond(B_F), including rank-deficient patterns (zero
diagonals: zero columns of B) and patterns that lose every holder of a part.  (ii) At PG(2, 47)
(2,257 workers) the measured residual equals the analysis' err(B, F) of the structured context and
the measured error equals the prediction.  (iii) A SparseRD on sparse strongly regular graphs against
the dense path.  (iv) Bad inputs.  The operator is also checked against the dense B entry for entry
(its gathers add the same terms as B's rows and columns, so on 0/±1 data it is exact).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from backends import BACKENDS
from executor_tolerances import padded_blocks, target
from gcsim.coding.schemes import Scheme, encode
from gcsim.coding.sparse_routes import encode_sparse, lattice_graph_sparse, triangular_graph_sparse
from gcsim.coding.structured import StructuredRD, check_pair_gram, encode_structured
from gcsim.coding.structured_decoders import RDOperator, rd_operator, structured_decoder
from gcsim.combinatorics.biregular import biregular_graph
from gcsim.combinatorics.geometries import pg_flats
from gcsim.errors import InvalidArgumentError, VerificationError
from gcsim.executor.arrays import run_scheme, to_numpy
from tolerances import SAFETY, cond, unit_roundoff

U = unit_roundoff()


def _dense(enc) -> Scheme:
    return Scheme.from_matrix(np.array(enc.B), np.array(enc.assignment), enc.m, method="rd")


def _masks(n: int, seed: int, A: np.ndarray) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = [np.ones(n, bool), np.zeros(n, bool), rng.random(n) > 0.3, rng.random(n) > 0.7]
    lost = np.ones(n, bool)
    lost[np.flatnonzero(A[0])] = False  # every holder of part 0 straggles
    out.append(lost)
    return out


def _compare(dense: Scheme, a, b, mask: np.ndarray) -> None:
    """Structured run ``a`` against the dense run ``b`` of the same B, tolerances from κ(B_F)."""
    B = np.asarray(dense.B)
    BF = B[:, mask]
    m, mN = dense.m, B.shape[0]
    X = b.decoder[mask]
    kappa = cond(BF, nonzero=True) if mask.any() and np.any(BF) else 1.0
    T = target(m, mN // m)
    nr = float(np.linalg.norm(BF @ X - T)) if mask.any() else float(np.sqrt(mN))
    nx = max(float(np.linalg.norm(X)), 1.0)
    nb = float(np.linalg.norm(BF, 2)) if mask.any() else 1.0
    tol_x = 2 * SAFETY * mN * B.shape[1] * U * (kappa + kappa**2 * nr / (nb * nx)) * nx  # Higham Thm 20.1, both
    assert np.linalg.norm(a.decoder - b.decoder) <= tol_x
    assert not np.any(a.decoder[~mask])
    ta, tb = to_numpy(a.transmissions), to_numpy(b.transmissions)
    assert np.allclose(ta, tb, rtol=0, atol=SAFETY * mN * U * float(np.abs(tb).max() + 1))
    scale = float(np.linalg.norm(tb[mask])) if mask.any() else 0.0
    tol_g = scale * (tol_x + SAFETY * (mN + B.shape[1]) * U * nx) + 1e-300
    assert np.linalg.norm(to_numpy(a.decoded) - to_numpy(b.decoded)) <= tol_g
    tol_r = 2 * np.sqrt(mN) * (tol_x * nb + SAFETY * B.size * U)
    assert abs(a.residual - b.residual) <= tol_r
    assert abs(a.error - b.error) <= 2 * np.sqrt(max(a.error, b.error)) * tol_g + tol_g**2 + 1e-300
    assert abs(a.error - a.predicted_error) <= 1e-9 * max(a.error, 1e-300) + 1e-20
    assert a.route == "structured" and b.route == "dense"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("q", "v", "m"), [(3, 13, 2), (3, 13, 3), (4, 21, 2)])
def test_structured_run_equals_dense_run(q, v, m, backend):
    enc = encode_structured(pg_flats(2, q), m, seed=q, points=v)
    dense = _dense(enc)
    assert np.array_equal(dense.B, encode(np.array(enc.assignment), m, "rd", seed=q).B)  # the same code
    g = np.random.default_rng(m).standard_normal((v, 9))
    for mask in _masks(v, q + m, np.array(enc.assignment)):
        a = run_scheme(enc, g, mask, xp=backend)
        b = run_scheme(dense, g, mask, xp=backend)
        _compare(dense, a, b, mask)


def test_rank_deficient_patterns_zero_diagonals():
    """Workers with u_j = 0 are zero columns of B: the min-norm decoder gives them exact zero rows."""
    inc = sp.csc_matrix(np.array(_dense(encode_structured(pg_flats(2, 3), 2, seed=0, points=13)).assignment))
    k, lam = check_pair_gram(inc)
    D = np.random.default_rng(0).choice([-1.0, 1.0], size=(2, 13))
    D[:, [2, 7, 11]] = 0.0
    enc = StructuredRD(inc, D, k, lam, {})
    dense = _dense(enc)
    g = np.random.default_rng(1).standard_normal((13, 4))
    for mask in _masks(13, 5, np.array(enc.assignment)):
        a = run_scheme(enc, g, mask)
        b = run_scheme(dense, g, mask)
        _compare(dense, a, b, mask)
        assert not np.any(a.decoder[[2, 7, 11]])


@pytest.mark.parametrize("route", ["scipy.sparse", "gathers"])
def test_operator_is_B_entry_for_entry(route):
    enc = encode_structured(pg_flats(2, 4), 3, seed=2, points=21)
    op = RDOperator(enc.incidence, enc.diagonals, budget=512)  # tiny budget: many chunks
    assert op._sparse is not None  # NumPy takes the scipy.sparse products
    if route == "gathers":  # the array-API lines CuPy and torch run, here on NumPy
        op._sparse = None
    B = np.asarray(enc.B)
    assert np.array_equal(op.apply(np.eye(21)), B)
    assert np.array_equal(op.apply_t(np.eye(63)), B.T)
    assert np.array_equal(op.target(), target(3, 21))
    g = np.random.default_rng(0).standard_normal((21, 12))
    GG = padded_blocks(g, 3)
    assert np.allclose(op.apply_t(GG), B.T @ GG, rtol=0, atol=SAFETY * 63 * U * float((np.abs(B).T @ np.abs(GG)).max()))


def test_at_scale_residual_is_the_analysis_error():
    """PG(2, 47), 2,257 workers, m = 2: residual = StructuredContext's err(B, F) (Theorem 42.1), error = prediction."""
    enc = encode_structured(pg_flats(2, 47), 2, seed=0, points=2257)
    ctx = enc.context
    rng = np.random.default_rng(7)
    g = rng.standard_normal((2257, 6))
    masks = np.array([rng.random(2257) > p for p in (0.05, 0.3, 0.8)])
    want = ctx.errors(masks)
    for mask, err in zip(masks, want, strict=True):
        r = run_scheme(enc, g, mask)
        # both within β(f) (Theorem 42.2) + the residual's own rounding of the exact err(B, F)
        tol = 2 * ctx.bound(int(mask.sum())) + SAFETY * 2 * 2257 * 48 * U * max(err, 1.0)
        assert abs(r.residual - err) <= tol, (r.residual, err, tol)
        assert abs(r.error - r.predicted_error) <= 1e-9 * r.error
        assert r.expected_isotropic == r.block_length * r.residual


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("graph", ["lattice5", "triangular7"])
def test_sparse_rd_equals_dense(graph, backend):
    g_ = lattice_graph_sparse(5) if graph == "lattice5" else triangular_graph_sparse(7)
    enc = encode_sparse(g_, 2, seed=3)
    dense = _dense(enc)
    n = enc.n
    g = np.random.default_rng(2).standard_normal((enc.num_parts, 5))
    for mask in _masks(n, 11, np.array(enc.assignment)):
        a = run_scheme(enc, g, mask, xp=backend)
        b = run_scheme(dense, g, mask, xp=backend)
        _compare(dense, a, b, mask)
        want = float(enc.context.errors(mask[None])[0])
        assert abs(a.residual - want) <= 1e-9 * max(want, 1.0)
        assert 0.0 <= a.decoder_gap <= 1e-10 * max(want, 1.0)


def test_sparse_decoder_certificate_is_honest():
    """The certified bound on ‖X − X*‖_F holds against numpy's pinv (independent), and CG needs > 0 steps."""
    enc = encode_sparse(lattice_graph_sparse(6), 2, seed=0)
    B = np.asarray(enc.B)
    mask = np.random.default_rng(0).random(enc.n) > 0.25
    res = structured_decoder(enc, mask)
    X_ref = np.linalg.pinv(B * mask) @ target(2, enc.num_parts)
    kappa = cond(B[:, mask])
    slack = SAFETY * B.size * U * kappa * float(np.linalg.norm(X_ref))  # pinv's own error
    assert res.route == "cg" and res.iterations > 0
    assert np.linalg.norm(res.decoder - X_ref) <= res.bound + slack


def test_operator_on_a_read_only_incidence():
    """A SparseRD whose incidence arrays are read-only (a bi-regular graph's) gets its operator and
    decoder: RDOperator cleans a copy (it raised 'WRITEBACKIFCOPY base is read-only'), and leaves
    the caller's matrix untouched."""
    enc = encode_sparse(biregular_graph(12, 6, 2, 4, seed=1).incidence, 2, seed=6)
    before = enc.incidence.copy()
    mask = np.ones(enc.n, bool)
    mask[[0, 5]] = False
    res = structured_decoder(enc, mask)
    B = np.asarray(enc.B)
    X_ref = np.linalg.pinv(B * mask) @ target(2, enc.num_parts)
    slack = SAFETY * B.size * U * cond(B[:, mask]) * float(np.linalg.norm(X_ref))
    assert np.linalg.norm(res.decoder - X_ref) <= res.bound + slack
    assert (enc.incidence != before).nnz == 0


def test_bad_inputs():
    enc = encode_structured(pg_flats(2, 3), 2, seed=0, points=13)
    with pytest.raises(InvalidArgumentError, match=r"gradients: must have shape \(N, d\) = \(13, d\)"):
        run_scheme(enc, np.ones((12, 4)), np.ones(13, bool))
    with pytest.raises(InvalidArgumentError, match=r"gradients: must have shape"):
        run_scheme(enc, np.ones(13), np.ones(13, bool))
    with pytest.raises(InvalidArgumentError, match=r"nonstragglers: must have shape \(13,\)"):
        run_scheme(enc, np.ones((13, 4)), np.ones(12, bool))
    with pytest.raises(InvalidArgumentError, match="nonstragglers: must be one mask"):
        run_scheme(enc, np.ones((13, 4)), np.ones((2, 13), bool))
    with pytest.raises(InvalidArgumentError, match="gradients: contains NaN"):
        run_scheme(enc, np.full((13, 4), np.nan), np.ones(13, bool))
    with pytest.raises(InvalidArgumentError, match="decoder: scheme 'rd' has no reference decoder"):
        run_scheme(enc, np.ones((13, 4)), np.ones(13, bool), decoder="fixed")
    with pytest.raises(InvalidArgumentError, match=r"decoder: must be a finite \(n, m\) = \(13, 2\) array"):
        run_scheme(enc, np.ones((13, 4)), np.ones(13, bool), decoder=np.ones((13, 3)))
    with pytest.raises(InvalidArgumentError, match="scheme: must be an RD encoder kept sparse"):
        rd_operator(encode(np.eye(3, dtype=int), 1, "naive"))
    with pytest.raises(InvalidArgumentError, match=r"nonstragglers: must have shape \(13,\)"):
        structured_decoder(enc, np.ones(5, bool))
    with pytest.raises(InvalidArgumentError, match="diagonals: must be a finite"):
        RDOperator(enc.incidence, np.ones((2, 5)))


@pytest.mark.parametrize("kind", ["structured", "sparse"])
def test_same_lines_in_another_namespace(kind):
    """The structured path is array-API code: torch (CPU) runs it and agrees with NumPy (no GPU needed)."""
    torch = pytest.importorskip("torch")
    if kind == "structured":
        enc = encode_structured(pg_flats(2, 4), 2, seed=1, points=21)
    else:
        enc = encode_sparse(lattice_graph_sparse(5), 2, seed=1)
    dense = _dense(enc)
    g = np.random.default_rng(5).standard_normal((enc.num_parts, 7))
    for mask in _masks(enc.n, 9, np.array(enc.assignment)):
        a = run_scheme(enc, g, mask, xp=torch)
        b = run_scheme(dense, g, mask)
        assert "torch" in a.backend and isinstance(a.decoded, torch.Tensor)
        _compare(dense, a, b, mask)


def test_cg_refuses_an_uncertified_decoder():
    """One CG step cannot reach the certified target on L(6): VerificationError names the bound."""
    enc = encode_sparse(lattice_graph_sparse(6), 2, seed=0)
    mask = np.random.default_rng(0).random(enc.n) > 0.25
    with pytest.raises(VerificationError, match=r"certified decoder error bound of .* after 1 iterations"):
        structured_decoder(enc, mask, max_iter=1)
    with pytest.raises(InvalidArgumentError, match="rtol"):
        structured_decoder(enc, mask, rtol=0.0)
    loose = structured_decoder(enc, mask, rtol=1e-3)  # a looser target stops earlier, still within its bound
    tight = structured_decoder(enc, mask)
    assert loose.iterations <= tight.iterations
    assert np.linalg.norm(loose.decoder - tight.decoder) <= loose.bound + tight.bound
