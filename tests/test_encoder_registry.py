"""The encoder registry (issue #24 items 1 and 3) and the authors' Construction 2 (issue #20 item 1).

* a toy encoder registered at run time through :func:`gcsim.coding.register_encoder` is seen by
  ``encode``, the CLI's ``--method``, the advisor's candidates, export/load and the conformance
  battery, with no other edit;
* no module compares a string with a registered method name outside that encoder's own module
  (read from the source with ``ast``);
* every class of gcsim with the object contract is a loadable catalogue kind, and an exported
  object of each loads (``gcsim.load_object`` and ``gcsim load PATH``);
* ``"hadamard-ns"`` is the authors' per-part normalization, exact at ``s = 0`` on square, tall and
  wide assignments, against an independent computation (their loops re-written here, numpy's lstsq).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import pkgutil
import re
from pathlib import Path

import numpy as np
import pytest

import gcsim
from exact_lstsq import lstsq_error
from gcsim.app.cli import main as cli_main
from gcsim.catalogue import export_object, load_object
from gcsim.catalogue.kinds import KINDS
from gcsim.coding import Encoder, encode, get_encoder, register_encoder, unregister_encoder
from gcsim.coding.encoders import METHODS, encoders, method_names, method_table
from gcsim.coding.encoders.hadamard_ns import hadamard_blocks
from gcsim.coding.schemes import Scheme, cyclic_repetition_assignment
from gcsim.errors import CatalogueError, InvalidArgumentError, NotConstructibleError, VerificationError

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "gcsim"
U = np.finfo(float).eps


# ---------------------------------------------------------------------------------------------
# a toy encoder, registered at run time


def _toy_signs(n: int, m: int) -> np.ndarray:
    return np.array([[(-1.0) ** (j + k) for j in range(n)] for k in range(m)])


def _toy_build(A, m, rng, eps, opts):
    D = _toy_signs(A.shape[1], m)
    B = (A[None, :, :] * D[:, None, :]).reshape(m * A.shape[0], A.shape[1])
    return B, D.T / A.sum(axis=1).mean(), D, {}, {}


def _toy_verify(scheme, name):
    D = _toy_signs(scheme.n, scheme.m)
    A = np.asarray(scheme.assignment, dtype=float)
    if not np.array_equal(scheme.B, (A[None] * D[:, None, :]).reshape(scheme.B.shape)):
        raise VerificationError(f"{name}: B is not the alternating-sign stack")


TOY = Encoder(
    "toy-signs",
    _toy_build,
    "alternating signs: block k is A diag((-1)^(j+k)) (a test encoder)",
    theory="§5.4",
    stores="diagonals",
    randomized=False,
    verify=_toy_verify,
    advisor=99,
    example=lambda: (cyclic_repetition_assignment(6, 2), 2, {}),
)


@pytest.fixture
def toy():
    register_encoder(TOY)
    try:
        yield TOY
    finally:
        unregister_encoder(TOY.name)


def test_toy_encoder_is_seen_by_encode_cli_advisor_export_and_conformance(toy, tmp_path, capsys):
    A = gcsim.bibd(7, 3, 1).assignment
    # encode, METHODS, the stored diagonals
    sch = encode(A, 2, "toy-signs")
    assert "toy-signs" in METHODS and "toy-signs" in method_names()
    assert sch.method == "toy-signs" and np.array_equal(sch.diagonals, _toy_signs(7, 2)) and sch.verify()
    # the CLI: --method accepts it and its help lists it
    code = cli_main(["error", "--design", "bibd:7,3,1", "--m", "2", "--method", "toy-signs", "-s", "1", "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 0 and payload["method"] == "toy-signs", payload
    try:
        code = cli_main(["error", "--help"])
    except SystemExit as exc:  # argparse's own exit after printing the help
        code = exc.code
    help_text = re.sub(r"-\s+", "-", " ".join(capsys.readouterr().out.split()))  # argparse wraps at hyphens
    assert code == 0 and "toy-signs" in help_text
    # the advisor tries it on every assignment
    from gcsim.advisor import ENCODERS, advise

    assert "toy-signs" in ENCODERS
    adv = advise(7, 3, 2, gcsim.straggler_model("fixed", 7, s=1), families=["bibd"], progress=False)
    assert "toy-signs" in {r["encoder"] for r in adv.rows}
    # export and load: the loaded scheme is re-verified by the toy's own verify
    path = export_object(sch, tmp_path, "toy")
    back = load_object(path.with_suffix(""))
    assert back.method == "toy-signs" and np.array_equal(back.B, sch.B)
    arrays, meta = dict(sch.to_arrays()), sch.bundle_metadata()
    arrays["B"] = -np.asarray(arrays["B"])  # still on the support: only the toy's verify can tell
    with pytest.raises(CatalogueError, match="alternating-sign"):
        Scheme.from_arrays(arrays, meta)
    # the conformance battery lists its example and every check passes on it
    import test_conformance as battery

    labels = dict(battery.instances())
    assert "encoder toy-signs" in labels
    obj = labels["encoder toy-signs"]()
    for check in battery.CHECKS:
        check(obj)
    # the guide's table is generated from the registry: with the toy it gains its row
    assert "| `toy-signs` |" in method_table()


def test_registration_refuses_bad_encoders(toy):
    with pytest.raises(InvalidArgumentError, match="already registered"):
        register_encoder(TOY)
    assert register_encoder(TOY, replace=True) is TOY
    with pytest.raises(InvalidArgumentError, match="built-in"):
        register_encoder(Encoder("rd", _toy_build, "x"))
    with pytest.raises(InvalidArgumentError, match="built-in"):
        unregister_encoder("rd")
    for bad in ("Toy", "toy_signs", "custom", "", "-x"):
        with pytest.raises(InvalidArgumentError, match="name"):
            register_encoder(Encoder(bad, _toy_build, "x"))
    with pytest.raises(InvalidArgumentError, match="stores"):
        register_encoder(Encoder("toy-two", _toy_build, "x", stores="weights"))
    with pytest.raises(InvalidArgumentError, match="encoder"):
        register_encoder("rd")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match=r"^method: must be one of"):
        encode(np.eye(2, dtype=int), 1, "toy-two")


def test_an_encoder_that_forgets_to_declare_what_it_stores_is_refused():
    # the diagonals of an encoder declaring stores=None would be dropped silently (issue #24)
    register_encoder(Encoder("toy-undeclared", _toy_build, "toy without stores", randomized=False))
    try:
        with pytest.raises(InvalidArgumentError, match="declares stores=None"):
            encode(np.eye(2, dtype=int), 1, "toy-undeclared")
    finally:
        unregister_encoder("toy-undeclared")


def test_every_builtin_encoder_builds_its_example_and_verifies():
    for enc in encoders():
        M, m, options = enc.example()
        sch = encode(M, m, enc.name, **options)
        assert sch.method == enc.name and sch.verify()
        # what it stores is where the registry says
        assert (sch.diagonals is not None) == (enc.stores == "diagonals"), enc.name
        assert ("vectors" in sch.extras) == (enc.stores == "vectors"), enc.name
        if not enc.depends_on_seed():  # a deterministic encoder ignores the seed
            assert np.array_equal(encode(M, m, enc.name, **{**options, "seed": 7}).B, sch.B), enc.name


def test_depends_on_seed_answers_for_every_registered_encoder():
    # the method other layers ask (bound engine, experiments, the AGC stage) answers the declaration,
    # and what it says is true of the example: a seeded encoder's B moves with the seed
    for enc in encoders():
        assert enc.depends_on_seed() is bool(enc.randomized), enc.name
        M, m, options = enc.example()
        first = encode(M, m, enc.name, **options).B
        others = [encode(M, m, enc.name, **{**options, "seed": sd}).B for sd in (7, 8, 9)]
        moved = any(not np.array_equal(first, B) for B in others)
        assert moved == enc.depends_on_seed(), enc.name


def test_guide_method_table_is_the_registry():
    text = (ROOT / "docs" / "guides" / "coding.md").read_text(encoding="utf-8")
    start = "<!-- method table: generated by gcsim.coding.encoders.method_table() -->\n"
    assert start in text
    block = text.split(start, 1)[1].split("<!-- end of method table -->", 1)[0]
    assert block == method_table(), "docs/guides/coding.md: regenerate the table with method_table()"


# ---------------------------------------------------------------------------------------------
# no comparison with a method name outside its encoder's module

#: comparisons with a string that happens to be a method name but means something else
_NOT_A_METHOD = {
    ("gcsim/coding/experiments.py", "spec_scheme.upper == 'rd'"),  # the RD scaled-sign *bound* of a curve
}


def _strings(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [s for e in node.elts for s in _strings(e)]
    return []


def _own_module(name: str) -> str:
    module = inspect.getmodule(get_encoder(name).build)
    assert module is not None and module.__file__ is not None
    return Path(module.__file__).resolve().relative_to(ROOT).as_posix()


def method_name_comparisons(root: Path) -> list[str]:
    """``file:line: source`` of every comparison (``==``, ``in``, ...) or ``startswith``/``endswith``
    of a string constant that is a registered method name (or its prefix), outside its own module."""
    names = set(method_names())
    owner = {name: _own_module(name) for name in names}
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.resolve().relative_to(ROOT).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                hits = {s for part in (node.left, *node.comparators) for s in _strings(part) if s in names}
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("startswith", "endswith")
            ):
                hits = {n for a in node.args for s in _strings(a) for n in names if s and n.startswith(s)}
            else:
                continue
            source = ast.unparse(node)
            if any(owner[h] != rel for h in hits) and (rel, source) not in _NOT_A_METHOD:
                found.append(f"{rel}:{node.lineno}: {source}")
    return found


def test_no_method_name_comparison_outside_its_encoder():
    found = method_name_comparisons(SRC)
    assert not found, "compare encoders through the registry (gcsim.coding.get_encoder):\n" + "\n".join(found)


def test_the_scan_finds_a_comparison(tmp_path):
    # the scan is only worth something if it fails on the pattern it forbids
    (tmp_path / "bad.py").write_text('def f(method):\n    return method == "rd" or method.startswith("exact")\n')
    original = ROOT
    try:
        globals()["ROOT"] = tmp_path
        _owner = _own_module
        globals()["_own_module"] = lambda name: "gcsim/coding/encoders/x.py"
        found = method_name_comparisons(tmp_path)
    finally:
        globals()["ROOT"] = original
        globals()["_own_module"] = _owner
    assert len(found) == 2, found


# ---------------------------------------------------------------------------------------------
# every exported kind loads


def _contract_classes() -> list[type]:
    """Every class of gcsim declaring a ``kind`` and the whole object contract (the catalogue's subjects)."""
    out = []
    for info in pkgutil.walk_packages([str(SRC)], prefix="gcsim."):
        if info.name == "gcsim.__main__":  # runs the command line when imported
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional dependency (torch, ...) that this environment lacks
            continue
        for cls in vars(module).values():
            if not isinstance(cls, type) or cls.__module__ != module.__name__:
                continue
            kind = cls.__dict__.get("kind")
            if not isinstance(kind, str) or kind == "object":  # "object": the abstract base of the designs
                continue
            if all(callable(getattr(cls, a, None)) for a in ("to_arrays", "bundle_metadata", "from_arrays", "verify")):
                out.append(cls)
    return out


def test_every_class_with_the_contract_is_a_loadable_kind():
    classes = _contract_classes()
    assert {c.kind for c in classes} >= {"scheme", "partial_scheme", "decoder_table", "straggler_model", "bibd"}
    missing = [f"{c.__module__}.{c.__qualname__} ({c.kind!r})" for c in classes if c.kind not in KINDS]
    assert not missing, "add to gcsim/catalogue/kinds.py: " + ", ".join(missing)
    for c in classes:
        assert issubclass(c, KINDS[c.kind]) or issubclass(KINDS[c.kind], c), c


def test_every_exported_kind_loads(tmp_path, capsys):
    import test_conformance as battery

    exportable = {c.kind for c in _contract_classes()}
    loaded: set[str] = set()
    for i, (label, factory) in enumerate(battery.instances()):
        obj = factory()
        kind = type(obj).kind
        if kind not in exportable:
            continue
        path = export_object(obj, tmp_path, f"o{i}").with_suffix("")
        back = load_object(path)
        assert type(back) is type(obj) and tuple(back.params) == tuple(obj.params), label
        for key, value in obj.to_arrays().items():
            assert np.array_equal(back.to_arrays()[key], value), (label, key)
        assert cli_main(["load", str(path)]) == 0, label
        assert "loaded and verified" in capsys.readouterr().out
        loaded.add(kind)
    assert loaded == exportable, f"no example of {sorted(exportable - loaded)} in tests/test_conformance.py"


def test_a_bundle_whose_array_names_do_not_match_is_refused(tmp_path):
    from gcsim.io.bundle import save_bundle

    sch = encode(cyclic_repetition_assignment(6, 2), 2, "exact-gaussian", s=1, seed=0)
    stored = {k.replace(".", "__"): v for k, v in sch.to_arrays().items()}
    meta = {"kind": "scheme", **sch.bundle_metadata(), "bundle_arrays": {"B": "B"}}  # maps one array of five
    save_bundle(tmp_path / "scheme" / "x", stored, meta)
    with pytest.raises(CatalogueError, match="bundle_arrays"):
        load_object(tmp_path / "scheme" / "x")


# ---------------------------------------------------------------------------------------------
# defects the registry fixed


def test_default_redraw_of_a_weighted_scheme_keeps_its_weights():
    # the bound engine's default redraw encoded the support A, dropping the multiplicities W
    from gcsim.coding.verify import _default_redraw

    W = np.array([[2, 1, 0], [1, 0, 2], [0, 2, 1]])
    sch = encode(W, 2, "weighted", eps=0.1, seed=1)
    again = _default_redraw(sch)(5)
    assert np.array_equal(again.extras["weights"], W) and again.method == "weighted"
    assert np.array_equal(again.B, encode(W, 2, "weighted", eps=0.1, seed=5).B)


def test_default_redraw_needs_a_randomized_encoder():
    from gcsim.coding.verify import _default_redraw

    A = cyclic_repetition_assignment(6, 2)
    with pytest.raises(InvalidArgumentError, match="randomized"):
        _default_redraw(encode(A, 2, "exact-vandermonde", s=1))  # deterministic nodes: nothing to redraw
    mds = _default_redraw(encode(A, 1, "cyclic-mds", seed=0))  # its H_c is drawn from the seed
    assert not np.array_equal(mds(1).B, mds(2).B)


# ---------------------------------------------------------------------------------------------
# Construction 2 (hadamard-ns)


def authors_blocks(A: np.ndarray, vectors: list[np.ndarray]) -> np.ndarray:
    """Munim & Ramamoorthy's normalization, row by row as in their script: P[k, nz] = v[nz] / ‖v[nz]‖²."""
    blocks = []
    for v in vectors:
        P = np.zeros(A.shape)
        for k in range(A.shape[0]):
            nz = np.nonzero(A[k, :])
            P[k, :][nz] = v[nz] / np.linalg.norm(v[nz]) ** 2
        blocks.append(P)
    return np.vstack(blocks)


def full_error(B: np.ndarray, m: int) -> float:
    """``min_X ‖B X - T‖_F²`` on every worker, by numpy's least squares (not gcsim's evaluator)."""
    return lstsq_error(B, np.ones(B.shape[1], dtype=bool), m)


def _assignments():
    pg23 = gcsim.bibd(13, 4, 1).assignment  # square, invertible
    ag23 = gcsim.bibd(9, 3, 1).assignment  # 9 parts x 12 workers: wide
    bireg = gcsim.biregular_graph(40, 20, 3, 6, seed=0).assignment  # 40 parts x 20 workers: tall
    return {"PG(2,3) square": pg23, "AG(2,3) wide": ag23, "biregular tall": bireg, "biregular wide": bireg.T}


@pytest.mark.parametrize("dist", ["gaussian", "rademacher"])
@pytest.mark.parametrize("label", list(_assignments()))
def test_hadamard_ns_is_exact_at_s0(label, dist):
    A = _assignments()[label]
    sch = encode(A, 2, "hadamard-ns", dist=dist, seed=3)
    assert sch.verify()
    V = sch.extras["vectors"]
    # the authors' normalization, re-computed by their loop from the same vectors
    assert np.allclose(sch.B, authors_blocks(A, list(V)), rtol=4 * U, atol=0)
    assert full_error(sch.B, 2) <= 1e-20
    # the null-space constraint itself: A (v_1 ∘ v_2) = 0
    assert np.abs(A @ (V[0] * V[1])).max() <= 64 * A.sum(axis=1).max() * U * np.abs(V).max() ** 2
    # wide: the authors' full-support vectors; square and tall (A of full column rank): split supports
    assert sch.options["support"] == ("full" if "wide" in label else "split")
    if dist == "rademacher" and sch.options["support"] == "full":
        Vi = V.astype(np.int64)
        assert np.array_equal(np.abs(V), np.ones_like(V)) and not np.any(A @ (Vi[0] * Vi[1]))  # exact integers


def test_hadamard_ns_with_the_authors_vectors_is_their_encoder():
    # their setup: bi-regular graph, 20 parts x 40 workers (d1 = 6, d2 = 3), v1 Gaussian, v2 = the last
    # right singular vector of P
    A = gcsim.biregular_graph(40, 20, 3, 6, seed=0).assignment.T
    v1 = np.random.default_rng(43).standard_normal(A.shape[1])
    P = authors_blocks(A, [v1])
    v2 = np.linalg.svd(P)[2][-1]
    theirs = authors_blocks(A, [v1, v2])
    sch = encode(A, 2, "hadamard-ns", vectors=np.vstack([v1, v2]))
    assert np.allclose(sch.B, theirs, rtol=4 * U, atol=0) and sch.options["vectors_given"]
    assert full_error(theirs, 2) <= 1e-20 and sch.options["residual"] <= 1e-20


def test_hadamard_ns_m3_on_a_wide_assignment():
    A = gcsim.biregular_graph(40, 20, 3, 6, seed=0).assignment.T  # 20 x 40: null spaces of dim 20, then 0
    sch = encode(A, 3, "hadamard-ns", seed=1)
    assert sch.verify() and full_error(sch.B, 3) <= 1e-20


def test_hadamard_ns_refusals_name_the_reason():
    fano = gcsim.bibd(7, 3, 1).assignment
    # the Fano plane has no 2-colouring (every split of its points leaves a monochromatic line)
    with pytest.raises(NotConstructibleError, match="no split"):
        encode(fano, 2, "hadamard-ns")
    with pytest.raises(NotConstructibleError, match="trivial"):
        encode(gcsim.bibd(13, 4, 1).assignment, 2, "hadamard-ns", support="full")
    # odd replication: no ±1 vector has A (v_1 ∘ v) = 0 (each row sums r_i = 3 signs)
    odd = np.array([[1, 1, 1, 0], [0, 1, 1, 1]])
    with pytest.raises(NotConstructibleError, match="±1"):
        encode(odd, 2, "hadamard-ns", dist="rademacher", support="full")
    assert encode(odd, 2, "hadamard-ns", dist="rademacher").options["support"] == "split"
    with pytest.raises(NotConstructibleError, match="r_i"):
        encode(np.array([[1, 0], [1, 1]]), 2, "hadamard-ns", support="split")
    with pytest.raises(InvalidArgumentError, match="^eps:"):
        encode(odd, 2, "hadamard-ns", dist="rademacher", support="full", eps=0.1)
    with pytest.raises(InvalidArgumentError, match="^support:"):
        encode(odd, 2, "hadamard-ns", support="half")
    with pytest.raises(InvalidArgumentError, match="^vectors:"):
        encode(odd, 2, "hadamard-ns", vectors=np.ones((3, 4)))
    with pytest.raises(NotConstructibleError, match="vanishes"):
        hadamard_blocks(odd, np.array([[1.0, 0.0, 0.0, 0.0]]))


def test_hadamard_ns_is_reproducible_and_verify_catches_tampering():
    A = gcsim.bibd(13, 4, 1).assignment
    a, b = encode(A, 2, "hadamard-ns", seed=5), encode(A, 2, "hadamard-ns", seed=5)
    assert np.array_equal(a.B, b.B) and not np.array_equal(a.B, encode(A, 2, "hadamard-ns", seed=6).B)
    arrays, meta = dict(a.to_arrays()), a.bundle_metadata()
    V = np.array(arrays["extras.vectors"])
    V[0, np.flatnonzero(V[0])[0]] *= 2.0  # B no longer the normalized stack of the vectors
    arrays["extras.vectors"] = V
    with pytest.raises(CatalogueError, match="Λ_k"):
        Scheme.from_arrays(arrays, meta)


def _two_colourable(A: np.ndarray) -> bool:
    """Whether some 2-colouring of the workers gives every part a holder of each colour (all 2^n tried)."""
    n = A.shape[1]
    colours = ((np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1).astype(bool)  # (2^n, n)
    red = (A[None, :, :] & colours[:, None, :]).any(axis=2)
    blue = (A[None, :, :] & ~colours[:, None, :]).any(axis=2)
    return bool((red & blue).all(axis=1).any())


def test_no_two_colouring_by_brute_force():
    # theory §41.2: on these the split construction is impossible, and the encoder says so
    fano = gcsim.bibd(7, 3, 1).assignment.astype(bool)
    ag23_lines = gcsim.bibd(9, 3, 1).assignment.T.astype(bool)  # parts = the 12 lines, workers = the 9 points
    for A in (fano, ag23_lines):
        assert not _two_colourable(A)
        with pytest.raises(NotConstructibleError, match="no split"):
            encode(A.astype(int), 2, "hadamard-ns")
    pg23 = gcsim.bibd(13, 4, 1).assignment.astype(bool)  # 2-colourable (a blocking set exists)
    assert _two_colourable(pg23) and encode(pg23.astype(int), 2, "hadamard-ns").options["support"] == "split"


def test_diagonal_stack_encoders_are_the_stack_of_their_diagonals():
    for enc in encoders():
        if enc.diagonal_stack:
            M, m, options = enc.example()
            sch = encode(M, m, enc.name, **options)
            A = np.asarray(sch.assignment, dtype=float)
            assert np.array_equal(sch.B, (A[None] * sch.diagonals[:, None, :]).reshape(sch.B.shape)), enc.name
