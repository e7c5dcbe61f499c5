"""Huge and malformed inputs get a clear answer, fast (issue #9 §5, the API side).

* existence questions for large v answer from number theory, never building a q x q table;
* constructions beyond :mod:`gcsim.limits` are refused *before* allocating, with an error that
  states the requested size and the limit;
* exhaustive straggler enumeration beyond ``MAX_PATTERNS`` is refused up front;
* bool parameters refuse non-bools (``existence="yes"``).

Every check is an exact integer statement compared with an independent computation (sympy's
factorization, brute-force sums of two squares, ``math.comb``, an explicit enumeration of the
PG/AG parameter sets); no floating-point tolerances are involved.  Each test runs under a
wall-clock deadline and, on Linux, an address-space cap, so a regression shows up as a failure
instead of a hung or out-of-memory CI machine.
"""

from __future__ import annotations

import contextlib
import functools
import math
import re
import resource
import signal
import sys
from itertools import combinations
from typing import Any

import numpy as np
import pytest
import sympy

import gcsim
from gcsim import limits
from gcsim.errors import InvalidArgumentError

posix_only = pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs SIGALRM")


from guards import deadline  # noqa: E402


def _vm_bytes() -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:  # pragma: no cover - not Linux
        return None
    return None  # pragma: no cover


@contextlib.contextmanager
def memory_cap(extra_bytes: int = 2 << 30):
    """Lower the address-space limit to the current size + ``extra_bytes`` while the block runs.

    A regression that allocates a huge array then fails with MemoryError inside the test
    instead of taking the CI machine down.  Linux only (elsewhere a no-op).
    """
    vm = _vm_bytes()
    if vm is None or sys.platform != "linux":  # pragma: no cover
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = vm + extra_bytes
    if hard != resource.RLIM_INFINITY:  # pragma: no cover
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@contextlib.contextmanager
def guarded(seconds: float = 30.0):
    with deadline(seconds), memory_cap():
        yield


def _refused(exc_info, *numbers: int, limit_name: str = "MAX_DENSE_ENTRIES") -> str:
    """The refusal names the limit and states the requested sizes (thousands separators allowed)."""
    msg = str(exc_info.value)
    assert f"gcsim.limits.{limit_name}" in msg, msg
    digits = re.sub(r"(?<=\d),(?=\d)", "", msg)
    assert str(getattr(limits, limit_name)) in digits, msg
    for x in numbers:
        assert str(x) in digits, (x, msg)
    return msg


# ----------------------------------------------------------------------------- number theory, fast


@pytest.mark.parametrize(
    "q", [2**61 - 1, 2**89 - 1, (2**31 - 1) ** 2, 3**40, 1009**5, 10**18 + 9, 10**18 + 10, 1000003 * 1000033, 2**64]
)
def test_prime_power_decomposition_of_huge_numbers_is_instant(q):
    """Trial division up to sqrt(q) (the old method) cannot finish for these; sympy is the oracle."""
    from gcsim.combinatorics.fields import is_prime, prime_power_decomposition

    f = sympy.factorint(q)
    expected = next(iter(f.items())) if len(f) == 1 else None
    with deadline(5):
        assert prime_power_decomposition(q) == expected
        assert is_prime(q) == bool(sympy.isprime(q))


def test_prime_power_decomposition_agrees_with_sympy_on_a_range():
    from gcsim.combinatorics.fields import prime_power_decomposition

    for q in list(range(-2, 3000)) + list(range(10**6 - 200, 10**6 + 200)):
        f = sympy.factorint(q) if q >= 2 else {}
        expected = next(iter(f.items())) if len(f) == 1 else None
        assert prime_power_decomposition(q) == expected, q


def test_sum_of_two_squares_for_huge_n_by_fermat():
    """Old code looped sqrt(n) = 10^9 times; the answers here are known by construction."""
    from gcsim.combinatorics.srg_feasibility import is_sum_of_two_squares

    a, b = 10**9 + 7, 123456789
    with deadline(5):
        assert is_sum_of_two_squares(a * a + b * b) is True
        assert is_sum_of_two_squares(3 * (10**9 + 1) ** 2) is False  # 3 to an odd power
        assert is_sum_of_two_squares(9 * (10**9 + 1) ** 2) is True  # (3 (10^9 + 1))^2 + 0^2


def test_sum_of_two_squares_matches_brute_force_across_the_switch():
    from gcsim.combinatorics.srg_feasibility import is_sum_of_two_squares

    for n in range(10**6 - 300, 10**6 + 300):
        brute = any(math.isqrt(n - a * a) ** 2 == n - a * a for a in range(math.isqrt(n) + 1))
        assert is_sum_of_two_squares(n) == brute, n


# ----------------------------------------------------------------------------- BIBD existence / size


def forbid_field_tables(monkeypatch):
    """Make every binding of the GF(q) table builders raise (modules imported first, so none escapes)."""
    import importlib
    import pkgutil

    import gcsim.combinatorics as comb

    def no_tables(*a, **k):
        raise AssertionError("an existence question built a field table")

    # import every module first: a module imported while patched would keep the fake for good
    mods = [importlib.import_module(f"gcsim.combinatorics.{m.name}") for m in pkgutil.iter_modules(comb.__path__)]
    for mod in mods:
        for attr in ("field_tables", "_tables"):
            if callable(getattr(mod, attr, None)):
                monkeypatch.setattr(mod, attr, no_tables)


@posix_only
def test_bibd_existence_large_v_builds_no_field_table(monkeypatch):
    """(20029, 4, 1) (issue #9): Wilson's radical family in the prime field, by modular arithmetic."""
    forbid_field_tables(monkeypatch)
    with guarded(20):
        assert gcsim.bibd(20029, 4, 1, existence=True) is True
        assert gcsim.bibd(90001, 10, 1, existence=True) in (True, None)
        assert gcsim.bibd(2000, 2, 1, existence=True) is True


def test_radical_family_by_modular_arithmetic_is_a_difference_family():
    """Every nonzero residue occurs exactly lam times as a difference (counted here independently)."""
    from gcsim.combinatorics.difference_families import radical_difference_family

    found = 0
    for q in [p for p in range(5, 400) if sympy.isprime(p)]:
        for k in range(3, 8):
            for lam in (1, 2, 3):
                fam = radical_difference_family(q, k, lam)
                if fam is None:
                    continue
                found += 1
                counts = [0] * q
                for blk in fam:
                    assert len(set(blk)) == k
                    for x in blk:
                        for y in blk:
                            if x != y:
                                counts[(x - y) % q] += 1
                assert counts[0] == 0 and all(c == lam for c in counts[1:]), (q, k, lam)
    assert found > 100


@posix_only
def test_bibd_radical_family_for_a_large_prime_checked_independently():
    """q = 20029: the family returned for existence is verified here by counting differences."""
    from gcsim.combinatorics.difference_families import radical_difference_family

    with guarded(30):
        fam = radical_difference_family(20029, 4, 1)
    q = 20029
    assert len(fam) == (q - 1) // 12
    B = np.array(fam, dtype=np.int64)
    diff = (B[:, :, None] - B[:, None, :]) % q
    counts = np.bincount(diff[:, ~np.eye(4, dtype=bool)].ravel(), minlength=q)
    assert counts[0] == 0 and np.all(counts[1:] == 1)


def _brute_geometries(limit: int) -> dict:
    """(v, k, lam) -> first (family, n, q, dim) in the order (q, PG before AG, n, dim), by enumeration."""

    def gauss(n, d, q):  # number of d-dim subspaces of GF(q)^n, from the product formula
        num = den = 1
        for i in range(d):
            num *= q ** (n - i) - 1
            den *= q ** (i + 1) - 1
        return num // den

    out = {}
    for q in range(2, limit + 1):
        if len(sympy.factorint(q)) != 1:
            continue
        n = 2
        while gauss(n + 1, 1, q) <= limit:
            for d in range(1, n):
                out.setdefault((gauss(n + 1, 1, q), gauss(d + 1, 1, q), gauss(n - 1, d - 1, q)), ("PG", n, q, d))
            n += 1
        n = 2
        while q**n <= limit:
            for d in range(1, n):
                out.setdefault((q**n, q**d, gauss(n - 1, d - 1, q)), ("AG", n, q, d))
            n += 1
    return out


def test_geometry_parameters_recognised_by_integer_roots():
    from gcsim.combinatorics.bibd import _geometry_match

    brute = _brute_geometries(5000)
    for key, geo in brute.items():
        assert _geometry_match(*key) == geo, key
    # and nothing else is claimed to be a geometry
    for v in range(3, 160):
        for k in range(2, v):
            for lam in (1, 3, 7):
                assert (_geometry_match(v, k, lam) is not None) == ((v, k, lam) in brute)


@posix_only
@pytest.mark.parametrize("params", [(4161, 65, 1), (16513, 129, 1), (4489, 67, 1)])
def test_geometries_beyond_the_old_index_exist(params):
    """PG(2,64), PG(2,128), AG(2,67): v > 4096 was outside the old geometry index (answer None)."""
    with guarded(10):
        assert gcsim.bibd(*params, existence=True) is True


@posix_only
@pytest.mark.parametrize(
    "params,b",
    [
        ((20029, 4, 1), 20029 * 20028 // 12),
        ((90001, 10, 1), 90001 * 90000 // 90),
        ((2000, 2, 1), 2000 * 1999 // 2),
        ((10**12 + 39, 3, 1), (10**12 + 39) * (10**12 + 38) // 6),
    ],
)
def test_bibd_construction_beyond_the_limit_is_refused_up_front(params, b):
    with guarded(10), pytest.raises(InvalidArgumentError) as exc:
        gcsim.bibd(*params)
    v = params[0]
    if v * b < 10**15:
        _refused(exc, v, b, v * b)
    else:
        _refused(exc)


@posix_only
def test_large_lambda_has_no_recursion_error():
    """lam = 2000 used to recurse 2000 levels deep (RecursionError)."""
    with guarded(30):
        assert gcsim.bibd(7, 3, 2000, existence=True) is True
        assert gcsim.bibd(13, 4, 3000, existence=True) is True
        D = gcsim.bibd(7, 3, 2000)
    assert D.params == (7, 14000, 6000, 3, 2000)
    A = D.assignment.astype(np.int64)
    assert np.array_equal(A @ A.T, 4000 * np.eye(7, dtype=np.int64) + 2000)  # (r - lam) I + lam J


# ----------------------------------------------------------------------------- SRG existence / size


@posix_only
def test_srg_paley_10009_answers_existence_and_refuses_construction_fast(monkeypatch):
    """Paley(10009) took 65 s and 5.9 GB (issue #9)."""
    from gcsim.combinatorics import srg_cayley

    def no_build(*a, **k):
        raise AssertionError("built something for an existence question / a refused construction")

    forbid_field_tables(monkeypatch)
    monkeypatch.setattr(srg_cayley, "paley_graph", no_build)
    with guarded(30):
        assert gcsim.srg(10009, 5004, 2501, 2502, existence=True) is True
        with pytest.raises(InvalidArgumentError) as exc:
            gcsim.srg(10009, 5004, 2501, 2502)
    _refused(exc, 10009, 10009 * 10009)


@posix_only
def test_srg_existence_for_astronomical_v():
    """Conference parameters with v = 10^21 + 1 = 7^2 11 13 127 ...: 11 to an odd power, not a sum of two squares."""
    v = 10**21 + 1
    assert not all(p % 4 != 3 or e % 2 == 0 for p, e in sympy.factorint(v).items())  # the oracle
    with guarded(30):
        assert gcsim.srg(v, (v - 1) // 2, (v - 5) // 4, (v - 1) // 4, existence=True) is False
        q = 10**12 + 61  # a prime = 1 mod 4: the Paley graph exists
        assert sympy.isprime(q) and q % 4 == 1
        assert gcsim.srg(q, (q - 1) // 2, (q - 5) // 4, (q - 1) // 4, existence=True) is True


def test_srg_lookup_per_v_equals_the_full_catalogue():
    """Solving each family for v gives exactly the catalogue's entries (and names) for that v."""
    from gcsim.combinatorics import srg as S

    cat = S._catalogue_upto(1024)
    for v in range(3, 1025):
        want = {p: e.name for p, e in cat.items() if p[0] == v}
        got = {p: e.name for p, e in S._catalogue_v(v).items()}
        assert got == want, v


def test_unitary_polar_graph_u4_16_is_found_and_correct():
    """SRG(1105, 80, 15, 5) = U(4,16): v = 1105 < 16^3 was missed by the old catalogue bound."""
    from gcsim.combinatorics.srg_graph import srg_parameters_of

    g = gcsim.srg(1105, 80, 15, 5)
    assert srg_parameters_of(g.adjacency) == (1105, 80, 15, 5)  # brute-force common-neighbour counts


_HUGE_CONSTRUCTIONS = [
    ("gcsim.combinatorics.srg_cayley", "paley_graph", (10009,), 10009**2),
    ("gcsim.combinatorics.srg_combinatorial", "triangular_graph", (5000,), (5000 * 4999 // 2) ** 2),
    ("gcsim.combinatorics.srg_geometric", "latin_square_graph", (2, 5000), 5000**4),
    ("gcsim.combinatorics.srg_combinatorial", "complete_multipartite_graph", (100, 100), 10**8),
    ("gcsim.combinatorics.srg_geometric", "polar_graph", ("Sp", 8, 7), ((7**8 - 1) // 6) ** 2),
    ("gcsim.combinatorics.srg_geometric", "affine_polar_graph", (1, 4, 4), 4**16),
    ("gcsim.combinatorics.srg_geometric", "hyperoval_gq_graph", (32,), 32**6),
    ("gcsim.combinatorics.srg_geometric", "generalized_quadrangle_graph", (64, 64), (65 * 4097) ** 2),
    ("gcsim.combinatorics.srg_geometric", "symplectic_graph", (7,), (4**7 - 1) ** 2),
    ("gcsim.combinatorics.bibd_geometries", "projective_geometry_design", (2, 128), 16513**2),
    ("gcsim.combinatorics.bibd_geometries", "affine_geometry_design", (2, 128), 128**2 * 128 * 129),
    ("gcsim.combinatorics.bibd_elementary", "steiner_triple_system", (99999,), 99999 * (99999 * 99998 // 6)),
    ("gcsim.combinatorics.bibd_elementary", "complete_design", (100, 50), None),
    ("gcsim.combinatorics.bibd_difference", "five_q_design", (4001,), 20005 * (20005 * 20004 // 20)),
    ("gcsim.combinatorics.bibd_geometries", "hermitian_unital", (64,), (64**3 + 1) * 64**2 * (64**2 - 64 + 1)),
    ("gcsim.combinatorics.bibd_geometries", "mcfarland_design", (16, 2), None),
    ("gcsim.combinatorics.bibd_difference", "paley_design", (10007,), 10007**2),
    ("gcsim.combinatorics.fields", "field_tables", (10007,), 10007**2),
    ("gcsim.combinatorics.steiner", "steiner_triple_system_blocks", (99999,), None),
    ("gcsim.combinatorics.steiner", "triple_system_hill_climb", (9999, 1), 9999**2),
    ("gcsim.combinatorics.biregular", "biregular_graph", (100000, 100000, 3, 3), 10**10),
    ("gcsim.combinatorics.baselines", "fractional_repetition", (100000, 0), 10**10),
    ("gcsim.combinatorics.baselines", "cyclic_repetition", (100000, 3), 10**10),
    ("gcsim.combinatorics.baselines", "random_regular_assignment", (100000, 3), 10**10),
    ("gcsim.combinatorics.baselines", "margulis_gabber_galil", (100,), 10**8),
]


@posix_only
@pytest.mark.parametrize(
    "module,name,args,entries", _HUGE_CONSTRUCTIONS, ids=[f"{c[1]}{c[2]}" for c in _HUGE_CONSTRUCTIONS]
)
def test_constructions_refuse_before_allocating(module, name, args, entries):
    import importlib

    fn = getattr(importlib.import_module(module), name)
    with guarded(20), pytest.raises(InvalidArgumentError) as exc:
        fn(*args)
    if entries is not None and entries < 10**15:
        _refused(exc, entries)
    else:
        _refused(exc)


@posix_only
def test_union_of_many_copies_is_refused():
    from gcsim.combinatorics.bibd_design import union_design

    D = gcsim.bibd(7, 3, 1)
    with guarded(20), pytest.raises(InvalidArgumentError) as exc:
        union_design(*([D] * 3_000_000))
    _refused(exc, 7 * 7 * 3_000_000)


def test_limits_can_be_raised_by_the_user(monkeypatch):
    """The limit is read at call time: below it things build, above it they are refused."""
    monkeypatch.setattr(limits, "MAX_DENSE_ENTRIES", 90)
    with pytest.raises(InvalidArgumentError):
        gcsim.bibd(13, 4, 1)  # 13 x 13 = 169 entries > 90
    assert gcsim.bibd(7, 3, 1).params == (7, 7, 3, 3, 1)  # 49 entries


# ----------------------------------------------------------------------------- encoders / stragglers


@posix_only
def test_encode_refuses_a_huge_m():
    from gcsim.coding.schemes import encode, target_matrix

    A = gcsim.bibd(91, 10, 1)
    with guarded(10), pytest.raises(InvalidArgumentError, match=r"^m: ") as exc:
        encode(A, 10**9)
    _refused(exc, 91 * 10**9, 91 * 10**9 * 91)
    with guarded(10), pytest.raises(InvalidArgumentError, match=r"^m: "):
        target_matrix(10**9, 91)


def test_all_patterns_model_refuses_more_than_max_patterns():
    from gcsim.coding.stragglers import AllPatternsModel, FixedModel, straggler_model

    total = math.comb(91, 20)
    with pytest.raises(InvalidArgumentError, match=r"^s: ") as exc:
        straggler_model("all", 91, s=20)
    _refused(exc, total, limit_name="MAX_PATTERNS")
    with pytest.raises(InvalidArgumentError):
        AllPatternsModel(91, 20)
    with pytest.raises(InvalidArgumentError):
        FixedModel(91, 20).enumerate()  # the whole enumeration
    with pytest.raises(InvalidArgumentError):
        next(FixedModel(91, 20).iter_chunks())
    # a slice, and sampling, stay available
    sl = FixedModel(91, 20).enumerate(0, 5)
    assert sl.shape == (5, 91) and np.all((~sl).sum(axis=1) == 20)
    assert FixedModel(91, 20).sample(3, seed=0).shape == (3, 91)
    # the limit is exact: C(n, s) == MAX_PATTERNS passes, one more is refused
    small = AllPatternsModel(10, 3)
    assert small.count == math.comb(10, 3) and small.enumerate().shape == (120, 10)


def test_all_patterns_limit_is_inclusive(monkeypatch):
    from gcsim.coding.stragglers import AllPatternsModel

    monkeypatch.setattr(limits, "MAX_PATTERNS", math.comb(10, 3))
    assert AllPatternsModel(10, 3).count == 120
    with pytest.raises(InvalidArgumentError):
        AllPatternsModel(10, 4)  # 210 > 120


@posix_only
@pytest.mark.parametrize(
    "kind,params", [("fixed", {"s": 3}), ("bernoulli", {"p": 0.1}), ("markov", {"p_enter": 0.1, "p_leave": 0.5})]
)
def test_sampling_refuses_an_absurd_count(kind, params):
    from gcsim.coding.stragglers import straggler_model

    m = straggler_model(kind, 100, **params)
    with guarded(10), pytest.raises(InvalidArgumentError, match="^count: "):
        m.sample(10**12)


# ----------------------------------------------------------------------------- bool parameters


def _bool_calls():
    from gcsim.combinatorics.biregular import biregular_from_assignment
    from gcsim.combinatorics.srg_graph import StronglyRegularGraph
    from gcsim.combinatorics.srg_sporadic import petersen_graph

    pet = petersen_graph()
    A = np.ones((3, 3), dtype=int)
    return [
        ("existence", lambda x: gcsim.bibd(7, 3, 1, existence=x)),
        ("existence", lambda x: gcsim.srg(10, 3, 0, 1, existence=x)),
        ("closed", lambda x: gcsim.srg(10, 3, 0, 1, closed=x)),
        ("closed", lambda x: StronglyRegularGraph(pet.adjacency, pet.params, "p", closed=x)),
        ("closed", lambda x: pet.with_closed(x)),
        ("require_connected", lambda x: biregular_from_assignment(A, require_connected=x)),
    ]


@pytest.mark.parametrize("value", ["yes", "False", 1, 0, None, 1.0, [True]])
def test_bool_parameters_refuse_non_bools(value):
    for name, call in _bool_calls():
        with pytest.raises(InvalidArgumentError, match=f"^{name}: must be True or False"):
            call(value)


def test_bool_parameters_accept_numpy_bools():
    assert gcsim.bibd(7, 3, 1, existence=np.bool_(True)) is True
    assert gcsim.srg(10, 3, 0, 1, closed=np.bool_(False)).assignment.trace() == 0


def test_check_bool_helper():
    from gcsim._validation import check_bool

    assert check_bool("flag", True) is True and check_bool("flag", np.False_) is False
    with pytest.raises(InvalidArgumentError, match="^flag: "):
        check_bool("flag", "true")


# ----------------------------------------------------------------------------- small inputs still work


def test_exhaustive_listing_unchanged_for_small_designs():
    """The planner answers exactly as the brute-force definition for tiny parameters:
    a (v, k, 1) design with k = 2 is the complete graph, and the complete design is all k-subsets."""
    D = gcsim.bibd(6, 2, 1)
    assert sorted(D.blocks) == sorted(combinations(range(6), 2))
    assert gcsim.bibd(5, 3, 3).b == math.comb(5, 3)


# ----------------------------------------------------------------------------- listings stay bounded


@posix_only
def test_buildable_srgs_for_a_huge_max_v_is_the_buildable_range():
    """Graphs over the size limit are never built, so the listing stops at isqrt(MAX_DENSE_ENTRIES)."""
    from gcsim.combinatorics.srg import buildable_srgs

    with guarded(60):
        huge = buildable_srgs(10**9)
    cap = math.isqrt(limits.MAX_DENSE_ENTRIES)
    assert max(p[0] for p in huge) <= cap
    assert (cap, cap - cap // 2, 0, cap - cap // 2) in huge  # K_{2 x 2048}: complete bipartite


def test_buildable_bibds_lists_only_what_builds_within_the_limit(monkeypatch):
    from gcsim.combinatorics.bibd import buildable_bibds

    monkeypatch.setattr(limits, "MAX_DENSE_ENTRIES", 400)
    listed = buildable_bibds(30, lam_range=[1, 2])
    assert listed
    for v, k, lam in listed:
        b = lam * v * (v - 1) // (k * (k - 1))
        assert v * b <= 400, (v, k, lam)
        D = gcsim.bibd(v, k, lam)
        assert D.params[:2] == (v, b) and D.verify()


def test_integer_roots_are_exact_beyond_float_precision():
    """Integer roots (sympy's) are exact where a float guess is off by 10^30: huge prime powers and planes."""
    from gcsim.combinatorics.fields import prime_power_decomposition

    with deadline(10):
        assert prime_power_decomposition(3**700) == (3, 700)
        assert prime_power_decomposition((2**127 - 1) ** 3) == (2**127 - 1, 3)
        assert gcsim.bibd((2**127 - 1) ** 2 + (2**127 - 1) + 1, 2**127, 1, existence=True) is True  # PG(2, q)


def test_srg_lookup_with_parameters_equals_the_full_lookup():
    """The targeted lookup (K from mu, n from v - k) answers every parameter set as the full one does."""
    from gcsim.combinatorics import srg as S

    for v in range(5, 700):
        full = S._catalogue_v(v)
        for p, e in full.items():
            got = S._catalogue_v(v, p).get(p)
            assert got is not None and got.name == e.name, (p, e.name)
        for p in [(v, k, lam, mu) for k in (3, v // 3) for lam in (0, 1) for mu in (1, 4, 9)]:
            if p not in full and 1 <= p[1] <= v - 2:
                assert S._catalogue_v(v, p).get(p) is None, p


@posix_only
def test_srg_existence_does_not_factor_v_or_loop_over_block_sizes():
    """v = p q with two 25-digit primes: factoring v would take hours, the lookup needs no divisors."""
    p_, q_ = sympy.nextprime(10**24), sympy.nextprime(3 * 10**24)
    v = p_ * q_
    with guarded(20):
        # K_{p x q}: complete multipartite, n = v - k = q
        assert gcsim.srg(v, v - q_, v - 2 * q_, v - q_, existence=True) is True
        assert gcsim.srg(v, q_ - 1, q_ - 2, 0, existence=True) is True  # its complement p K_q


@posix_only
@pytest.mark.parametrize(
    "params,expected",
    [
        ((7, 3, 10**18), True),  # 10^18 copies of the Fano plane
        ((13, 4, 2**61 - 1), True),  # a prime lambda: copies of PG(2,3)
        ((10**12 + 39, 10**6, 1), False),  # divisibility
        ((10**15 + 37, 10**7 + 1, 3), False),
    ],
)
def test_bibd_existence_with_huge_lambda_or_k_is_instant(params, expected):
    """lambda = 10^18 needs its divisors: from the factorization, not a loop to sqrt(lambda)."""
    v, k, lam = params
    # the oracle: the basic divisibility conditions, then (for True) lam copies of a known design
    admissible = (lam * (v - 1)) % (k - 1) == 0 and (lam * v * (v - 1)) % (k * (k - 1)) == 0
    assert admissible == expected
    with guarded(20):
        assert gcsim.bibd(v, k, lam, existence=True) is expected


# ----------------------------------------------------------------------------- every public bool parameter (#19)


def public_bool_parameters() -> set[tuple[str, str]]:
    """``(qualified name, parameter)`` of every parameter annotated ``bool`` in the public API.

    Public: a function or class named in a public module's ``__all__`` (with a class's public
    methods and its constructor); modules, classes and functions without a leading underscore.
    """
    import importlib
    import inspect
    import pkgutil

    found: set[tuple[str, str]] = set()
    for info in pkgutil.walk_packages(gcsim.__path__, "gcsim."):
        if any(part.startswith("_") for part in info.name.split(".")[1:]):
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional dependency (torch, dask) is missing
            continue
        for attr in getattr(module, "__all__", []):
            obj = getattr(module, attr, None)
            targets = []
            if inspect.isfunction(obj):
                targets.append(obj)
            elif inspect.isclass(obj):
                targets.append(obj)
                for key, member in vars(obj).items():
                    if isinstance(member, (staticmethod, classmethod)):
                        member = member.__func__
                    if not key.startswith("_") and inspect.isfunction(member):
                        targets.append(member)
            for target in targets:
                qual = f"{getattr(target, '__module__', '')}.{target.__qualname__}"
                if not qual.startswith("gcsim.") or any(part.startswith("_") for part in qual.split(".")):
                    continue
                try:
                    parameters = inspect.signature(target).parameters.values()
                except (TypeError, ValueError):
                    continue
                found |= {(qual, p.name) for p in parameters if p.annotation in (bool, "bool", "bool | None")}
    return found


#: parameters that are not arguments a user passes: result records gcsim fills in itself, the
#: CLI's own helpers (called with literals by the commands), internal protocol hooks
BOOL_EXEMPT = {
    "gcsim.coding.bounds.worst_case.WorstCaseResult": "a result record (filled in by worst_case_bound)",
    "gcsim.coding.expected_routes.ExpectedErrorResult": "a result record (filled in by expected_error)",
    "gcsim.coding.evaluate.WorstCaseErrorResult": "a result record (filled in by worst_case_error)",
    "gcsim.combinatorics.coset.InvertibilityCertificate": "a result record (filled in by the certificate check)",
    "gcsim.combinatorics.srg_feasibility.SRGCondition": "a result record (holds is True/False/None by design)",
    "gcsim.combinatorics.srg_feasibility.SRGFeasibility": "a result record (filled in by srg_feasibility)",
    "gcsim.executor.launcher.LaunchResult": "a result record (filled in by launch)",
    "gcsim.coding.milp.FixedWorstCase": "a result record (filled in by fixed_decoder_worst_case)",
    "gcsim.advisor.core.Progress": "advise's progress reporter, built by advise (which checks progress)",
    "gcsim.learning.unbiased.UnbiasednessResult": "a result record (filled in by the unbiasedness test)",
    "gcsim.executor.ddp_hook.CerarHookState": "the hook's state, built by register_cerar_hook (which checks overlap)",
    "gcsim.combinatorics.base.require": "an assertion helper: its condition is any truth value gcsim computed",
    "gcsim.cerar.ring.RollTransport.close": "transport protocol, called by the ring engine itself",
    "gcsim.executor.collectives.RingTransport.close": "transport protocol, called by the ring engine itself",
    "gcsim.cerar.ring.strip": "a ring kernel, reached through simulate / the executors",
    "gcsim.cerar.ring.run_ring": "a ring kernel, reached through simulate / the executors",
    "gcsim.coding.kernels.errors_for_group": "an evaluator kernel, reached through optimal_error & co.",
    "gcsim.coding.kernels.optimal_errors": "an evaluator kernel, reached through optimal_error & co.",
    "gcsim.app.common.check_input_path": "a CLI helper, called with literals by the commands",
    "gcsim.app.common.float_arg": "a CLI helper, called with literals by the commands",
    "gcsim.app.common.check_not_exported": "a CLI helper, called with args.force by the commands (parsed bool)",
    "gcsim.app.specs.FamilySpec.build": "a CLI helper, called with literals by the commands",
    "gcsim.app.specs.check_family_params": "a CLI helper, called with literals by the commands",
    "gcsim.app.specs.family_form": "a CLI helper, called with literals by the commands",
    "gcsim.app.stages.training.run_training_stage": "a reproduce stage, called by run_reproduce (which checks)",
    "gcsim.learning.cerar_runs.run_link": "an experiment step of cerar_training_experiment (root: emulated links)",
    "gcsim.executor.coded_training.CodedTrainingReport": "a result record (filled in by CodedTrainer.train)",
    "gcsim.executor.coded_training.CodedTrainer.step": "a method of a trainer bound to a torch.distributed group "
    "(check_bool on log, check; run by tests/test_coded_training.py)",
    "gcsim.executor.coded_training.CodedTrainer.train": "a method of a trainer bound to a torch.distributed group "
    "(check_bool on expected; run by tests/test_coded_training.py)",
}


def _bool_fixtures():
    from gcsim.coding.schemes import encode
    from gcsim.coding.stragglers import straggler_model

    design = gcsim.bibd(7, 3, 1)
    scheme = encode(design, 2, "rd", seed=0)
    mask = np.ones(7, dtype=bool)
    mask[0] = False
    return design, scheme, straggler_model("fixed", 7, s=1), mask


def _load_code(folder, verify):
    from gcsim.catalogue.codes import load_code

    return load_code(folder, verify=verify)


def _load_training_code(folder, verify):
    from gcsim.executor.coded_training import load_training_code

    return load_training_code(folder, verify=verify)


@functools.cache
def _mnist_80():
    """80 MNIST images, loaded once (with torch's import) outside the refusal's 30 s deadline."""
    from gcsim.learning.coded_training import torch_dataset
    from gcsim.learning.datasets import load_dataset

    return torch_dataset, load_dataset("mnist", per_class=8)


def _torch_dataset(images):
    torch_dataset, data = _mnist_80()
    return torch_dataset(data, images=images)


def _export_at(obj, stem, overwrite):
    from gcsim.catalogue.objects import export_object_at

    return export_object_at(obj, stem, overwrite=overwrite)


def _milp_worst_case(scheme, **kw):
    from gcsim.coding.milp import fixed_decoder_worst_case

    return fixed_decoder_worst_case(scheme, 1, **kw)


def bool_calls(tmp) -> dict[tuple[str, str], Any]:
    """A call per public bool parameter: ``call(value)`` passes ``value`` to it and valid arguments elsewhere."""
    from gcsim.advisor import advise
    from gcsim.advisor.advice import pareto_point
    from gcsim.advisor.candidates import Question
    from gcsim.app.catalogue_report import catalogue_table
    from gcsim.app.reproduce import run_reproduce
    from gcsim.catalogue.named import build_family
    from gcsim.catalogue.objects import export_object, load_object
    from gcsim.catalogue.sweeps import verify_catalogue_bounds
    from gcsim.cerar import design as cerar_design
    from gcsim.cerar.export import export_design
    from gcsim.cerar.optimize import optimized_design
    from gcsim.cerar.pareto import pareto_front
    from gcsim.cerar.protocol import simulate
    from gcsim.coding import bounds
    from gcsim.coding.decoder_table import decoder_table
    from gcsim.coding.delays import arrival_rule, delay_model, expected_decode_time
    from gcsim.coding.evaluate import (
        expected_error,
        fixed_decoder_error,
        optimal_error,
        optimal_error_all,
        worst_case_error,
    )
    from gcsim.coding.experiments import InstanceSpec, error_curves, named_experiments
    from gcsim.coding.partial import partial_error, partial_error_all, partial_scheme
    from gcsim.coding.sweeps import expected_error_sweep
    from gcsim.coding.verify import verify_bounds
    from gcsim.combinatorics.bibd import buildable_bibds
    from gcsim.combinatorics.biregular import biregular_from_assignment
    from gcsim.combinatorics.coset import coset_graph
    from gcsim.combinatorics.families import register_family
    from gcsim.combinatorics.srg_graph import StronglyRegularGraph
    from gcsim.combinatorics.srg_sporadic import petersen_graph
    from gcsim.io.bundle import save_bundle
    from gcsim.learning.datasets import load_digits, load_mnist, load_mnist_subset, write_idx
    from gcsim.learning.mnist_full import fetch_mnist_full, load_mnist_full
    from gcsim.learning.quantized_training import QuantizedCode
    from gcsim.learning.train import CodeSpec, WallClockModel
    from gcsim.sweep import run_sweep

    design, scheme, model, mask = _bool_fixtures()
    pet = petersen_graph()
    A = design.assignment
    cd = cerar_design(3, 3, "exact")
    g = np.ones((3, 4))
    ps = partial_scheme(gcsim.srg(10, 3, 0, 1), 1, "rd", seed=0)  # closed: worker i owns part i
    mask10 = np.ones(10, dtype=bool)
    mask10[0] = False
    report = verify_bounds(scheme, model, samples=20, seed=0, progress=False)
    table = decoder_table(scheme, s_max=1)
    spec = named_experiments()[0]
    row = {"error": 0.0, "communication": 1.0, "data_fraction": 0.5, "time": 1.0}
    digits = tmp / "digits.npz"
    np.savez(
        digits,
        x_train=np.zeros((4, 2, 2), np.uint8),
        y_train=np.arange(4, dtype=np.uint8),
        x_test=np.zeros((2, 2, 2), np.uint8),
        y_test=np.arange(2, dtype=np.uint8),
    )
    exported = export_object(design, tmp / "cat", name="fano")
    adv = advise(7, 3, 1, model, families=["bibd"], samples=100, progress=False)
    fam = None
    try:
        from gcsim.combinatorics.families import registered_families

        fam = next(iter(registered_families("bibd")))
    except (ImportError, StopIteration):
        pass
    from gcsim.coding import mc_stream, sparse_routes

    lattice = sparse_routes.lattice_graph_sparse(3)
    return {
        ("gcsim.coding.sparse_evaluator.srg_gram_lower", "closed"): lambda x: sparse_routes.srg_gram_lower(
            9, 4, 1, 2, x
        ),
        ("gcsim.coding.sparse_routes.lattice_graph_sparse", "closed"): lambda x: sparse_routes.lattice_graph_sparse(
            3, closed=x
        ),
        ("gcsim.coding.sparse_routes.triangular_graph_sparse", "closed"): lambda x: (
            sparse_routes.triangular_graph_sparse(5, closed=x)
        ),
        ("gcsim.coding.sparse_routes.SparseSRG", "closed"): lambda x: sparse_routes.SparseSRG(
            lattice.adjacency, lattice.params, "L(3)", x
        ),
        ("gcsim.coding.sparse_routes.encode_sparse", "fallback"): lambda x: sparse_routes.encode_sparse(
            lattice, 2, fallback=x
        ),
        ("gcsim.coding.sparse_routes.SparseRD", "fallback"): lambda x: sparse_routes.SparseRD(
            lattice.incidence, np.ones((1, 9)), 1.0, "test", {}, x
        ),
        ("gcsim.coding.mc_stream.evaluate_draws", "progress"): lambda x: mc_stream.evaluate_draws(
            mc_stream.ChunkEvaluator.optimal(scheme, "auto"), [mc_stream.Draw(model, 4, 0)], progress=x
        ),
        ("gcsim.advisor.advice.Advice.export", "overwrite"): lambda x: adv.export(tmp / "adv", overwrite=x),
        ("gcsim.advisor.core.advise", "adaptive"): lambda x: advise(
            7, 3, 1, model, families=["bibd"], progress=False, adaptive=x
        ),
        ("gcsim.catalogue.codes.load_code", "verify"): lambda x: _load_code(adv.export(tmp / "lc", overwrite=True), x),
        ("gcsim.executor.coded_training.load_training_code", "verify"): lambda x: _load_training_code(
            adv.export(tmp / "ltc", overwrite=True), x
        ),
        ("gcsim.learning.coded_training.torch_dataset", "images"): lambda x: _torch_dataset(x),
        ("gcsim.catalogue.objects.export_object_at", "overwrite"): lambda x: _export_at(design, tmp / "at" / "fano", x),
        ("gcsim.coding.milp.fixed_decoder_worst_case", "normalized"): lambda x: _milp_worst_case(scheme, normalized=x),
        ("gcsim.advisor.advice.pareto_point", "with_time"): lambda x: pareto_point(row, x),
        ("gcsim.advisor.candidates.Question", "relax_load"): lambda x: Question(7, 3, 1, model, relax_load=x),
        ("gcsim.advisor.core.advise", "progress"): lambda x: advise(7, 3, 1, model, families=["bibd"], progress=x),
        ("gcsim.learning.cerar_links.links_experiment", "progress"): lambda x: _links_experiment(tmp, x),
        ("gcsim.advisor.core.advise", "relax_load"): lambda x: advise(
            7, 3, 1, model, families=["bibd"], progress=False, relax_load=x
        ),
        ("gcsim.advisor.core.advise", "relax_comm"): lambda x: advise(
            7, 3, 1, model, families=["bibd"], progress=False, relax_comm=x
        ),
        ("gcsim.app.catalogue_report.catalogue_table", "export"): lambda x: catalogue_table(tmp / "c1", export=x),
        ("gcsim.app.catalogue_report.catalogue_table", "force"): lambda x: catalogue_table(tmp / "c2", force=x),
        ("gcsim.app.reproduce.run_reproduce", "full"): lambda x: run_reproduce(
            tmp / "r1", full=x, progress=False, stages=["catalogue"]
        ),
        ("gcsim.app.reproduce.run_reproduce", "force"): lambda x: run_reproduce(
            tmp / "r2", force=x, progress=False, stages=["catalogue"]
        ),
        ("gcsim.app.reproduce.run_reproduce", "progress"): lambda x: run_reproduce(
            tmp / "r3", progress=x, stages=["catalogue"]
        ),
        ("gcsim.catalogue.named.build_family", "existence"): lambda x: build_family("bibd", [7, 3], existence=x),
        ("gcsim.catalogue.objects.export_object", "overwrite"): lambda x: export_object(
            design, tmp / "cat2", overwrite=x
        ),
        ("gcsim.catalogue.objects.load_object", "verify"): lambda x: load_object(exported, verify=x),
        ("gcsim.catalogue.sweeps.verify_catalogue_bounds", "progress"): lambda x: verify_catalogue_bounds(
            ["petersen"], stragglers=[1], samples=10, draws=2, progress=x
        ),
        ("gcsim.cerar.export.export_design", "overwrite"): lambda x: export_design(cd, tmp / "cerar", overwrite=x),
        ("gcsim.cerar.optimize.optimized_design", "progress"): lambda x: optimized_design(3, 4, max_iter=1, progress=x),
        ("gcsim.cerar.optimize.optimized_design", "verbose"): lambda x: optimized_design(
            3, 4, max_iter=1, progress=False, verbose=x
        ),
        ("gcsim.cerar.pareto.pareto_front", "progress"): lambda x: pareto_front(3, 4, [5.0], max_iter=1, progress=x),
        ("gcsim.cerar.pareto.pareto_front", "return_designs"): lambda x: pareto_front(
            3, 4, [5.0], max_iter=1, progress=False, return_designs=x
        ),
        ("gcsim.cerar.exact.vandermonde_limit", "kappa"): lambda x: _vandermonde_limit(x),
        ("gcsim.cerar.protocol.simulate", "record"): lambda x: simulate(cd, g, record=x),
        ("gcsim.cerar.protocol.simulate", "warn"): lambda x: simulate(cd, g, warn=x),
        ("gcsim.coding.bounds.spectral.arrival_decoder_mean_error", "exact"): lambda x: (
            bounds.arrival_decoder_mean_error(A, 1, exact=x)
        ),
        ("gcsim.coding.bounds.bibd_closed_forms.bibd_naive_error", "exact"): lambda x: bounds.bibd_naive_error(
            7, 3, 1, 1, 1, exact=x
        ),
        ("gcsim.coding.bounds.bibd_closed_forms.bibd_optimal_error_m1", "exact"): lambda x: (
            bounds.bibd_optimal_error_m1(7, 3, 1, 1, exact=x)
        ),
        ("gcsim.coding.bounds.diagonal_dominance.diagonal_dominance_upper_bound", "normalized"): lambda x: (
            bounds.diagonal_dominance_upper_bound(scheme, mask, normalized=x)
        ),
        ("gcsim.coding.bounds.variance.ns_estimator_variance", "padded"): lambda x: bounds.ns_estimator_variance(
            scheme, 0.1, np.ones((7, 2)), padded=x
        ),
        ("gcsim.coding.bounds.variance.rd_estimator_variance", "padded"): lambda x: bounds.rd_estimator_variance(
            A, 2, 0.1, np.ones((7, 2)), padded=x
        ),
        ("gcsim.coding.bounds.rd_upper.rd_upper_bound", "normalized"): lambda x: bounds.rd_upper_bound(
            A, 2, mask, normalized=x
        ),
        ("gcsim.coding.bounds.spectral.spectral_rd_upper_bound", "normalized"): lambda x: (
            bounds.spectral_rd_upper_bound(A, 2, 1, normalized=x)
        ),
        ("gcsim.coding.bounds.spectral.spectral_upper_bound", "normalized"): lambda x: bounds.spectral_upper_bound(
            A, 1, normalized=x
        ),
        ("gcsim.coding.bounds.rd_closed_forms.srg_rd_upper_bound", "include_self"): lambda x: bounds.srg_rd_upper_bound(
            10, 3, 0, 1, 2, 1, include_self=x
        ),
        ("gcsim.coding.dense_table.DecoderTable.export", "overwrite"): lambda x: table.export(tmp / "t", overwrite=x),
        ("gcsim.coding.decode_time.expected_decode_time", "keep_values"): lambda x: expected_decode_time(
            delay_model("shifted-exponential", 3, shift=1, rate=1), arrival_rule("first", s=1), keep_values=x
        ),
        ("gcsim.coding.evaluate.expected_error", "keep_values"): lambda x: expected_error(
            scheme, model, progress=False, keep_values=x
        ),
        ("gcsim.coding.evaluate.expected_error", "normalized"): lambda x: expected_error(
            scheme, model, progress=False, normalized=x
        ),
        ("gcsim.coding.evaluate.expected_error", "progress"): lambda x: expected_error(scheme, model, progress=x),
        ("gcsim.coding.pattern_errors.fixed_decoder_error", "normalized"): lambda x: fixed_decoder_error(
            scheme, mask, normalized=x
        ),
        ("gcsim.coding.pattern_errors.optimal_error", "normalized"): lambda x: optimal_error(
            scheme, mask, progress=False, normalized=x
        ),
        ("gcsim.coding.pattern_errors.optimal_error", "progress"): lambda x: optimal_error(scheme, mask, progress=x),
        ("gcsim.coding.pattern_errors.optimal_error_all", "normalized"): lambda x: optimal_error_all(
            scheme, 1, progress=False, normalized=x
        ),
        ("gcsim.coding.pattern_errors.optimal_error_all", "progress"): lambda x: optimal_error_all(
            scheme, 1, progress=x
        ),
        ("gcsim.coding.evaluate.worst_case_error", "normalized"): lambda x: worst_case_error(
            scheme, 1, progress=False, normalized=x
        ),
        ("gcsim.coding.evaluate.worst_case_error", "progress"): lambda x: worst_case_error(scheme, 1, progress=x),
        ("gcsim.coding.experiments.InstanceSpec", "exact_family"): lambda x: InstanceSpec(
            spec.name, spec.title, spec.assignment, spec.m, spec.schemes, spec.s_values, spec.p_values, exact_family=x
        ),
        ("gcsim.coding.experiments.error_curves", "progress"): lambda x: error_curves(
            spec, samples=2, seeds=1, progress=x
        ),
        ("gcsim.coding.experiments.named_experiments", "full"): lambda x: named_experiments(full=x),
        ("gcsim.coding.partial.partial_error", "normalized"): lambda x: partial_error(ps, mask10, normalized=x),
        ("gcsim.coding.partial.partial_error_all", "normalized"): lambda x: partial_error_all(ps, 1, normalized=x),
        ("gcsim.coding.sweeps.expected_error_sweep", "normalized"): lambda x: expected_error_sweep(
            scheme, model, samples=200, chunk=100, progress=False, normalized=x
        ),
        ("gcsim.coding.sweeps.expected_error_sweep", "progress"): lambda x: expected_error_sweep(
            scheme, model, samples=200, chunk=100, progress=x
        ),
        ("gcsim.coding.verify.BoundCheck.to_dict", "include_values"): lambda x: report.checks[0].to_dict(x),
        ("gcsim.coding.verify.BoundReport.to_dict", "include_values"): lambda x: report.to_dict(x),
        ("gcsim.coding.verify.verify_bounds", "progress"): lambda x: verify_bounds(
            scheme, model, samples=20, progress=x
        ),
        ("gcsim.combinatorics.bibd.bibd", "existence"): lambda x: gcsim.bibd(7, 3, 1, existence=x),
        ("gcsim.combinatorics.bibd.buildable_bibds", "progress"): lambda x: buildable_bibds(15, progress=x),
        ("gcsim.combinatorics.biregular.biregular_from_assignment", "require_connected"): lambda x: (
            biregular_from_assignment(A, require_connected=x)
        ),
        ("gcsim.combinatorics.coset.coset_graph", "require_invertible"): lambda x: coset_graph(
            27, 2, 5, require_invertible=x
        ),
        ("gcsim.combinatorics.families.register_family", "replace"): lambda x: register_family(fam, replace=x),
        ("gcsim.combinatorics.srg.srg", "closed"): lambda x: gcsim.srg(10, 3, 0, 1, closed=x),
        ("gcsim.combinatorics.srg.srg", "existence"): lambda x: gcsim.srg(10, 3, 0, 1, existence=x),
        ("gcsim.combinatorics.srg_graph.StronglyRegularGraph", "closed"): lambda x: StronglyRegularGraph(
            pet.adjacency, pet.params, "p", closed=x
        ),
        ("gcsim.combinatorics.srg_graph.StronglyRegularGraph.to_networkx", "incidence"): lambda x: pet.to_networkx(
            incidence=x
        ),
        ("gcsim.combinatorics.srg_graph.StronglyRegularGraph.with_closed", "closed"): lambda x: pet.with_closed(x),
        ("gcsim.executor.ddp_hook.register_cerar_hook", "overlap"): lambda x: _register_hook(cd, x),
        ("gcsim.executor.collectives_bench.predict", "rendezvous"): lambda x: _bench("predict", x),
        ("gcsim.executor.collectives_bench.summarize", "rendezvous"): lambda x: _bench("summarize", x),
        ("gcsim.executor.collectives_bench.resummarize", "rendezvous"): lambda x: _bench("resummarize", x),
        ("gcsim.executor.collectives_bench.collectives_table", "rendezvous"): lambda x: _bench("table", x),
        ("gcsim.executor.ddp_hook.register_cerar_hook", "check_precision"): lambda x: _register_hook(
            cd, True, check_precision=x
        ),
        ("gcsim.executor.ddp_hook.make_hook_state", "overlap"): lambda x: _make_state(cd, overlap=x),
        ("gcsim.executor.ddp_hook.make_hook_state", "check_precision"): lambda x: _make_state(cd, check_precision=x),
        ("gcsim.cerar.floating.precision_check", "warn"): lambda x: _precision_check(cd, x),
        ("gcsim.executor.experiments.run_collectives", "return_outputs"): lambda x: _run_collectives(x),
        ("gcsim.executor.launcher.launch", "verbose"): lambda x: _launch(x),
        ("gcsim.io.bundle.save_bundle", "overwrite"): lambda x: save_bundle(
            tmp / "b", {"a": np.zeros(2)}, {}, overwrite=x
        ),
        ("gcsim.learning.datasets.load_digits", "standardized"): lambda x: load_digits(standardized=x),
        ("gcsim.learning.datasets.load_mnist_subset", "standardized"): lambda x: load_mnist_subset(
            standardized=x, per_class=10
        ),
        ("gcsim.learning.datasets.load_mnist", "standardized"): lambda x: load_mnist(digits, standardized=x),
        # refused before the cache folder is looked at (nothing is downloaded)
        ("gcsim.learning.mnist_full.fetch_mnist_full", "download"): lambda x: fetch_mnist_full(
            cache_dir=tmp / "mnist-full", download=x
        ),
        ("gcsim.learning.mnist_full.load_mnist_full", "download"): lambda x: load_mnist_full(
            cache_dir=tmp / "mnist-full", download=x
        ),
        ("gcsim.learning.mnist_full.load_mnist_full", "standardized"): lambda x: load_mnist_full(
            cache_dir=tmp / "mnist-full", standardized=x
        ),
        ("gcsim.learning.datasets.write_idx", "compress"): lambda x: write_idx(
            tmp / "x.idx", np.zeros(3, np.uint8), compress=x
        ),
        ("gcsim.learning.ddp_cerar.ddp_cerar_experiment", "record"): lambda x: _ddp_experiment(cd, x),
        ("gcsim.learning.train.CodeSpec", "redraw"): lambda x: CodeSpec("c", A, redraw=x),
        ("gcsim.learning.quantized_training.QuantizedCode", "error_feedback"): lambda x: QuantizedCode(
            CodeSpec("c", A), bits=2, error_feedback=x
        ),
        ("gcsim.learning.train.WallClockModel", "shared_link"): lambda x: WallClockModel(shared_link=x),
        ("gcsim.sweep.run_sweep", "progress"): lambda x: run_sweep(abs, [1, 2], progress=x),
    }


def _vandermonde_limit(kappa):
    from gcsim.cerar.exact import vandermonde_limit

    return vandermonde_limit(4, [6], dtypes=("float64",), kappa=kappa)


def _register_hook(design, overlap, **kw):
    torch = pytest.importorskip("torch")
    from gcsim.executor.ddp_hook import register_cerar_hook

    return register_cerar_hook(torch.nn.Linear(2, 2), design, overlap=overlap, **kw)


def _bench(what, value):
    from gcsim.executor import collectives_bench as cb

    row = {"collective": "ring", "options": {}, "N": 2, "d": 4, "itemsize": 4, "delay": 0.0, "seconds": [0.01] * 7}
    row.update(bytes_sent=[16, 16], predicted_bytes=[16, 16], link="1mbit", link_delay="5ms")
    if what == "predict":
        return cb.predict(row, 0.005, 8000.0, rendezvous=value)
    if what == "summarize":
        return cb.summarize([row], alpha=0.005, beta=8000.0, rendezvous=value)
    if what == "resummarize":
        return cb.resummarize({"rows": [row]}, rendezvous=value)
    return cb.collectives_table(2, [4], rendezvous=value)  # refused before the links are looked at


def _make_state(design, **kw):
    from gcsim.executor.ddp_hook import make_hook_state

    return make_hook_state(design, **kw)


def _precision_check(design, warn):
    from gcsim.cerar.floating import precision_check

    return precision_check(design, "float32", warn=warn)


def _run_collectives(value):
    from gcsim.executor.experiments import run_collectives

    return run_collectives(3, 8, algorithms=["ring"], timeout=30, return_outputs=value)


def _launch(value):
    from gcsim.executor.launcher import launch

    return launch(abs, 2, timeout=30, verbose=value)


def _links_experiment(tmp, value):
    from gcsim.learning.cerar_training import links_experiment

    return links_experiment(tmp / "links", progress=value)  # progress is checked before the links


def _ddp_experiment(design, value):
    from gcsim.learning.ddp_cerar import ddp_cerar_experiment

    return ddp_cerar_experiment({"cerar": design}, N=3, steps=1, eval_every=1, timeout=60, record=value)


def test_every_public_bool_parameter_has_a_call_or_a_reason(tmp_path):
    """Enumerated from the signatures: a new bool parameter needs a call here (or a stated reason)."""
    enumerated = public_bool_parameters()
    assert len(enumerated) > 80  # the walk found the API (it did not silently skip modules)
    calls = {k for k in bool_calls(tmp_path) if isinstance(k, tuple)}
    exempt = {(q, p) for q, p in enumerated if q in BOOL_EXEMPT}
    assert enumerated - exempt - calls == set(), "give these a call in bool_calls (or a reason in BOOL_EXEMPT)"
    assert calls - enumerated == set(), "calls for parameters that are no longer public bools"
    assert set(BOOL_EXEMPT) <= {q for q, _ in enumerated}, "reasons for names that no longer exist"


@pytest.fixture(scope="module")
def _calls(tmp_path_factory):
    _mnist_80()  # the data and torch's import are not what the deadline times
    return bool_calls(tmp_path_factory.mktemp("bools"))


@pytest.mark.parametrize("value", ["yes", "no", 1, 0])
def test_every_public_bool_parameter_refuses_a_non_bool(value, _calls):
    """``normalized='yes'``, ``normalized=1``, ``progress='no'``: refused naming the parameter, before any work."""
    accepted = []
    for (qual, name), call in ((k, c) for k, c in _calls.items() if isinstance(k, tuple)):
        try:
            with deadline(30):
                call(value)
        except InvalidArgumentError as exc:
            if not str(exc).startswith(f"{name}: must be True or False"):
                accepted.append((qual, name, f"another error first: {exc}"))
        except pytest.skip.Exception:
            continue
        else:
            accepted.append((qual, name, "accepted"))
    assert accepted == []
