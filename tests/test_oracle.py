"""gcsim's BIBD / SRG existence answers and constructions against the SageMath oracle.

The fixtures ``tests/fixtures/sage_bibd.json`` and ``tests/fixtures/sage_srg.json``
hold SageMath's answers (``scripts/sage_oracle.py``, run in a throw-away
passagemath environment; Sage is never needed here). For every fixture entry:

* gcsim never answers ``False`` where Sage builds the object;
* gcsim never answers ``True`` (nor builds) where Sage proves nonexistence;
* gcsim's True means "builds it, or it is known to exist": building then either
  raises NotConstructibleError or succeeds; False / None must raise
  ImpossibleParametersError / NotConstructibleError;
* every object gcsim builds has the right ``params``, ``verify()`` is True, and
  it passes an *independent* check of the defining identity written here
  (``A A^T = (r-lam) I + lam J`` with column sums ``k``; ``Adj^2 = k I + lam Adj
  + mu (J - I - Adj)``);
* ``docs/coverage.md`` is current (``scripts/coverage_report.py``).

The fixtures themselves are checked against independent computations
(the admissible set, Fisher, Bruck--Ryser--Chowla, the SRG parameter identity)
so that a corrupted fixture cannot make these tests vacuous.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pytest

from gcsim.errors import ImpossibleParametersError, NotConstructibleError
from guards import load_script

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures"
SUSPECT = "handbook-exception-lambda>1(suspect)"

BIBD_FIX = json.loads((FIX / "sage_bibd.json").read_text())
SRG_FIX = json.loads((FIX / "sage_srg.json").read_text())
BIBD = BIBD_FIX["entries"]
SRG = SRG_FIX["entries"]
BIBD_VMAX = BIBD_FIX["header"]["ranges"]["v"][1]  # 130: the oracle's range (scripts/sage_oracle.py)
SRG_VMAX = SRG_FIX["header"]["ranges"]["v"][1]


def _bkey(e):
    return (e["v"], e["k"], e["lambda"])


def _skey(e):
    return (e["v"], e["k"], e["lambda"], e["mu"])


def _sage_builds(e) -> bool:
    return e["sage"] is True and e.get("build") == "ok"


def _sage_impossible(e) -> bool:
    return e["sage"] is False and e.get("reason") != SUSPECT


# --------------------------------------------------------------------------- cached gcsim calls
@functools.cache
def bibd_exist(v, k, lam, existence=True):
    import gcsim

    assert existence is True
    return gcsim.bibd(v, k, lam, existence=True)


@functools.cache
def _bibd_build(v, k, lam):
    import gcsim

    try:
        return gcsim.bibd(v, k, lam), None
    except Exception as exc:  # noqa: BLE001 - re-raised by bibd_build
        return None, exc


def bibd_build(v, k, lam):
    obj, exc = _bibd_build(v, k, lam)
    if exc is not None:
        raise exc
    return obj


@functools.cache
def srg_exist(v, k, lam, mu, existence=True):
    import gcsim

    assert existence is True
    return gcsim.srg(v, k, lam, mu, existence=True)


@functools.cache
def _srg_build(v, k, lam, mu):
    import gcsim

    try:
        return gcsim.srg(v, k, lam, mu), None
    except Exception as exc:  # noqa: BLE001
        return None, exc


def srg_build(v, k, lam, mu):
    obj, exc = _srg_build(v, k, lam, mu)
    if exc is not None:
        raise exc
    return obj


# --------------------------------------------------------------------------- independent checks
def _independent_bibd_check(obj, v, k, lam):
    """A is v x b 0/1, column sums k, A A^T = (r - lam) I + lam J (exact int64)."""
    r = lam * (v - 1) // (k - 1)
    b = v * r // k
    a = np.asarray(obj.assignment)
    assert a.shape == (v, b)
    assert np.all((a == 0) | (a == 1))
    a = a.astype(np.int64)
    assert np.all(a.sum(axis=0) == k)
    assert np.array_equal(a @ a.T, (r - lam) * np.eye(v, dtype=np.int64) + lam)


def _independent_srg_check(obj, v, k, lam, mu):
    """Recover Adj from the assignment (Adj + I by default, or Adj) and check Adj^2."""
    a = np.asarray(obj.assignment).astype(np.int64)
    assert a.shape == (v, v)
    assert np.all((a == 0) | (a == 1))
    d = np.diag(a)
    assert np.all(d == 1) or np.all(d == 0), "diagonal must be all 1 (Adj+I) or all 0 (Adj)"
    eye = np.eye(v, dtype=np.int64)
    adj = a - eye if d[0] == 1 else a
    assert np.array_equal(adj, adj.T)
    rhs = k * eye + lam * adj + mu * (np.ones((v, v), dtype=np.int64) - eye - adj)
    assert np.array_equal(adj @ adj, rhs)


@functools.cache
def _brc_fails(v, k, lam) -> bool:
    """Bruck-Ryser-Chowla for a symmetric (v, k, lam) design, proved independently:
    v even needs k - lam square; v odd needs a nontrivial integer solution of
    x^2 = (k - lam) y^2 + (-1)^((v-1)/2) lam z^2 (sympy decides the ternary form)."""
    from math import isqrt

    from sympy.abc import x, y, z
    from sympy.solvers.diophantine.diophantine import diop_ternary_quadratic

    n = k - lam
    if v % 2 == 0:
        return isqrt(n) ** 2 != n
    sign = -1 if ((v - 1) // 2) % 2 else 1
    sol = diop_ternary_quadratic(x**2 - n * y**2 - sign * lam * z**2)
    return sol[0] is None or all(s == 0 for s in sol)


# --------------------------------------------------------------------------- fixture sanity
def test_bibd_fixture_is_the_admissible_set():
    assert BIBD_VMAX >= 130
    expected = {
        (v, k, lam)
        for v in range(6, BIBD_VMAX + 1)
        for k in range(3, v // 2 + 1)
        for lam in (1, 2, 3)
        if (lam * (v - 1)) % (k - 1) == 0 and (lam * v * (v - 1)) % (k * (k - 1)) == 0
    }
    keys = [_bkey(e) for e in BIBD]
    assert len(keys) == len(set(keys))
    assert set(keys) == expected
    for e in BIBD:
        v, k, lam = _bkey(e)
        assert e["r"] * (k - 1) == lam * (v - 1) and e["b"] * k == v * e["r"]
        assert e["sage"] in (True, False, None)
        if e["sage"] is True:
            # every Sage "True" was built and verified by the oracle, with b blocks
            assert e["build"] == "ok" and e["blocks"] == e["b"], e


def test_bibd_fixture_nonexistence_reasons_are_theorems():
    """Sage's False answers, re-derived: Fisher (b >= v), BRC, or the lambda=1 list."""
    lam1_exceptions = {(36, 6, 1), (46, 6, 1), (43, 7, 1)}  # Handbook of Comb. Designs
    for e in BIBD:
        if e["sage"] is not False:
            continue
        v, k, lam = _bkey(e)
        reason = e["reason"]
        if reason == "fisher":
            assert e["b"] < v
        elif reason == "bruck-ryser-chowla":
            assert e["b"] == v and _brc_fails(v, k, lam)
        elif reason == "handbook-exception":
            assert (v, k, lam) in lam1_exceptions
        else:
            assert reason == SUSPECT and lam > 1, e
    # and conversely every Fisher / BRC failure in range is a Sage False
    for e in BIBD:
        v, k, lam = _bkey(e)
        if e["b"] < v or (e["b"] == v and _brc_fails(v, k, lam)):
            assert e["sage"] is False, e


def test_srg_fixture_parameters():
    keys = {_skey(e) for e in SRG}
    assert len(keys) == len(SRG) and SRG_VMAX >= 130
    for e in SRG:
        v, k, lam, mu = _skey(e)
        assert v <= SRG_VMAX and 0 < mu < k < v - 1 and 0 <= lam < k
        assert k * (k - lam - 1) == mu * (v - k - 1)
        comp = (v, v - k - 1, v - 2 * k + mu - 2, v - 2 * k + lam)
        assert tuple(e["complement"]) == comp and comp in keys  # closed under complement
        assert e["sage"] in (True, False, None)
        if e["sage"] is True:
            assert e["build"] == "ok", e
    # the named classics are in the list and built by Sage
    by = {_skey(e): e for e in SRG}
    for p in [
        (10, 3, 0, 1),
        (16, 5, 0, 2),
        (16, 6, 2, 2),
        (27, 16, 10, 8),
        (50, 7, 0, 1),
        (13, 6, 2, 3),
        (25, 12, 5, 6),
        (126, 25, 8, 4),
    ]:
        assert _sage_builds(by[p]), p
    assert by[(49, 16, 3, 6)]["sage"] is False and by[(57, 14, 1, 4)]["sage"] is False


# --------------------------------------------------------------------------- gcsim vs Sage: BIBD
@pytest.mark.parametrize("e", BIBD, ids=lambda e: "bibd-{}-{}-{}".format(*_bkey(e)))
def test_bibd_against_sage(e):
    v, k, lam = _bkey(e)
    ans = bibd_exist(v, k, lam)
    assert ans is True or ans is False or ans is None, ans
    if _sage_builds(e):
        assert ans is not False, "gcsim says impossible, Sage builds it"
    if _sage_impossible(e):
        assert ans is not True, f"gcsim says it exists, Sage: impossible ({e['reason']})"
    if ans is True:
        # True also means "known to exist" (a reference), which gcsim may not build
        try:
            obj = bibd_build(v, k, lam)
        except NotConstructibleError:
            return
        r = lam * (v - 1) // (k - 1)
        assert tuple(obj.params) == (v, v * r // k, r, k, lam)
        assert obj.verify() is True
        _independent_bibd_check(obj, v, k, lam)
    else:
        # gcsim must not build what it does not claim: False -> impossible, None -> not constructible
        expected = ImpossibleParametersError if ans is False else NotConstructibleError
        with pytest.raises(expected):
            bibd_build(v, k, lam)


# --------------------------------------------------------------------------- gcsim vs Sage: SRG
@pytest.mark.parametrize("e", SRG, ids=lambda e: "srg-{}-{}-{}-{}".format(*_skey(e)))
def test_srg_against_sage(e):
    v, k, lam, mu = _skey(e)
    ans = srg_exist(v, k, lam, mu)
    assert ans is True or ans is False or ans is None, ans
    if _sage_builds(e):
        assert ans is not False, "gcsim says impossible, Sage builds it"
    if _sage_impossible(e):
        assert ans is not True, f"gcsim says it exists, Sage: impossible ({e['sage_source']})"
    if ans is True:
        # True also means "known to exist" (a reference), which gcsim may not build
        try:
            obj = srg_build(v, k, lam, mu)
        except NotConstructibleError:
            return
        assert tuple(obj.params) == (v, k, lam, mu)
        assert obj.verify() is True
        _independent_srg_check(obj, v, k, lam, mu)
    else:
        expected = ImpossibleParametersError if ans is False else NotConstructibleError
        with pytest.raises(expected):
            srg_build(v, k, lam, mu)


def _load_report():
    return load_script("scripts/coverage_report.py", "coverage_report")


def test_srg_rejected_by_sage_feasibility_is_not_claimed():
    """Tuples with v <= 130, 0 < mu < k, k(k-lam-1) = mu(v-k-1) missing from Sage's list fail
    Sage's feasibility conditions (integrality, Krein, absolute/claw bound, ...): gcsim must
    not say True."""
    off = _load_report().srg_off_list(SRG)
    assert len(off) > 100  # many tuples pass the counting identity only
    claimed = [p for p in off if srg_exist(*p) is True]
    assert claimed == []


# --------------------------------------------------------------------------- the coverage doc
def test_coverage_doc_is_current():
    rep = _load_report()
    data = rep.collect(bibd_exist, bibd_build, srg_exist, srg_build, FIX)
    # (conflicts themselves fail the parametrized tests above; here only staleness)
    fresh = rep.render(data, "now")
    doc = ROOT / "docs" / "coverage.md"
    assert doc.exists(), "run: .venv/bin/python scripts/coverage_report.py"
    assert rep.strip_generated(doc.read_text()) == rep.strip_generated(fresh), (
        "docs/coverage.md is stale: run .venv/bin/python scripts/coverage_report.py"
    )


def test_coverage_report_detects_disagreements():
    """The report's conflict finder on a deliberately wrong fake gcsim (so it is not vacuous)."""
    rep = _load_report()

    def says_false(*args, existence=False):
        if existence:
            return False
        raise ImpossibleParametersError("fake", "always impossible")

    def says_true_builds_nothing(*args, existence=False):
        if existence:
            return True
        raise RuntimeError("no construction")

    data = rep.collect(says_false, says_false, says_true_builds_nothing, says_true_builds_nothing, FIX)
    bad = rep.conflicts(data)
    n_sage_bibd = sum(_sage_builds(e) for e in BIBD)
    n_srg_false = sum(_sage_impossible(e) for e in SRG)
    assert sum("bibd" in x and "Sage builds it" in x for x in bad) == n_sage_bibd
    assert sum("srg" in x and "Sage says impossible" in x for x in bad) == n_srg_false
    assert sum("srg" in x and "building gives: raises RuntimeError" in x for x in bad) == len(SRG)
    assert sum("feasibility conditions reject" in x for x in bad) == len(data["srg_off_list"])
    summ = rep.summary(data)
    assert summ["bibd_gcsim_builds"] == 0 and summ["srg_gcsim_builds"] == 0
    assert summ["bibd_sage_builds"] == n_sage_bibd > 0
