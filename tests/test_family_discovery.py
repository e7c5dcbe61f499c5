"""Families and encoders are found by discovery, and a forgotten declaration is an error (#35).

A new family is one module in ``gcsim.combinatorics`` declaring ``FAMILIES``: no import line in
another file.  These tests drop modules into a temporary folder added to the package's search path
(nothing is written inside the installed package) and check what the registry, ``gcsim.srg``,
``gcsim.bibd`` and the existence answers then say, against the objects' own exact verification.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import gcsim
import gcsim.combinatorics as comb_pkg
from gcsim.coding.encoders import _registry as enc_registry
from gcsim.combinatorics import families
from gcsim.combinatorics.srg_graph import StronglyRegularGraph
from gcsim.errors import InvalidArgumentError
from toy_families import DROP_IN_BIBD, DROP_IN_SRG, TOY_DESIGNS, TOY_GRAPHS

# the package itself (``gcsim.coding.encoders`` the attribute is the listing function)
encoders_pkg = sys.modules["gcsim.coding.encoders"]

FORGOTTEN = textwrap.dedent(
    """
    from gcsim.combinatorics.families import SRGFamily


    class Forgotten(SRGFamily):
        name = "forgotten family (test)"
        example = (5, 2, 0, 1)

        def members(self, max_v):
            return iter(())


    FAMILY = (Forgotten(),)  # misspelt: FAMILIES
    """
)


_TOY_MODULES = {"srg_toy", "bibd_toy", "srg_forgotten", "srg_badlist"}


@pytest.fixture
def fresh_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The family registry as it was, restored after the test (modules added are unloaded)."""
    saved = dict(families._REGISTRY)
    before = set(sys.modules)
    yield
    families._REGISTRY.clear()
    families._REGISTRY.update(saved)
    families._changed()
    for name in set(sys.modules) - before:  # only the modules the tests dropped in
        if name.split(".")[-1] in _TOY_MODULES or name.startswith("famdisc_"):
            del sys.modules[name]


def _rediscover(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    monkeypatch.setattr(comb_pkg, "__path__", [*comb_pkg.__path__, str(folder)])
    monkeypatch.setattr(families, "_discovered", False)
    families.discover_families()


def test_every_family_class_in_the_package_is_registered() -> None:
    """A family class defined in a gcsim.combinatorics module without a registered instance would be
    a family the registry silently misses: every concrete one has its instance registered."""
    registered = {type(f) for f in families.registered_families()}
    defined = set()
    for info in pkgutil.iter_modules(comb_pkg.__path__):
        module = importlib.import_module(f"gcsim.combinatorics.{info.name}")
        for obj in vars(module).values():
            if (
                inspect.isclass(obj)
                and issubclass(obj, families.Family)
                and obj.__module__ == module.__name__
                and obj.name
            ):
                defined.add(obj)
    assert defined, "no family classes found: the walk is broken"
    assert defined <= registered, sorted(c.__name__ for c in defined - registered)
    # and discovery order is the old registration order: priorities decide, none tie within a kind
    for kind in families.FAMILY_KINDS:
        prios = [f.priority for f in families.registered_families(kind)]
        assert prios == sorted(prios) and len(set(prios)) == len(prios)


def test_a_new_module_is_a_new_family_with_no_import_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_registry: None
) -> None:
    (tmp_path / "srg_toy.py").write_text(DROP_IN_SRG)
    (tmp_path / "bibd_toy.py").write_text(DROP_IN_BIBD)
    _rediscover(monkeypatch, tmp_path)
    names = [f.name for f in families.registered_families()]
    assert TOY_GRAPHS in names and TOY_DESIGNS in names
    # priorities below the built-ins': they now name the constructions (the factories' caches were cleared)
    from gcsim.combinatorics.srg import srg_construction_name

    assert srg_construction_name(126, 25, 8, 4) == "toy graph"
    g = gcsim.srg(126, 25, 8, 4)
    assert isinstance(g, StronglyRegularGraph)
    g.verify()
    # independent check of the built graph: the SRG identity A^2 = k I + lam A + mu (J - I - A)
    A = np.asarray(g.adjacency, dtype=np.int64)
    J, eye = np.ones((126, 126), dtype=np.int64), np.eye(126, dtype=np.int64)
    assert np.array_equal(A @ A, 25 * eye + 8 * A + 4 * (J - eye - A))
    d = gcsim.bibd(7, 3, 1)
    assert d.construction == "toy Fano plane"
    inc = np.zeros((7, 7), dtype=np.int64)  # from the blocks, independently of the object's matrix
    for j, block in enumerate(d.blocks):
        inc[list(block), j] = 1
    assert np.array_equal(inc @ inc.T, 2 * np.eye(7, dtype=np.int64) + np.ones((7, 7), dtype=np.int64))
    assert gcsim.bibd(7, 3, 1, existence=True) is True


def test_a_forgotten_declaration_is_an_error_not_silence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_registry: None
) -> None:
    (tmp_path / "srg_forgotten.py").write_text(FORGOTTEN)
    monkeypatch.setattr(comb_pkg, "__path__", [*comb_pkg.__path__, str(tmp_path)])
    monkeypatch.setattr(families, "_discovered", False)
    with pytest.raises(InvalidArgumentError, match=r"srg_forgotten defines the family class\(es\) \['Forgotten'\]"):
        families.discover_families()


def test_families_must_be_instances(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_registry: None) -> None:
    (tmp_path / "srg_badlist.py").write_text("FAMILIES = ('Paley graphs',)\n")
    monkeypatch.setattr(comb_pkg, "__path__", [*comb_pkg.__path__, str(tmp_path)])
    monkeypatch.setattr(families, "_discovered", False)
    with pytest.raises(InvalidArgumentError, match="FAMILIES must be a tuple of family instances"):
        families.discover_families()


def test_discovery_of_a_third_party_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_registry: None
) -> None:
    pkg = tmp_path / "famdisc_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "toy.py").write_text(DROP_IN_SRG)
    (pkg / "_private.py").write_text(FORGOTTEN)  # private modules are not scanned
    monkeypatch.syspath_prepend(str(tmp_path))
    found = families.discover_families("famdisc_pkg")
    assert [f.name for f in found] == [TOY_GRAPHS]
    assert families.get_family(TOY_GRAPHS) is found[0]
    assert families.discover_families("famdisc_pkg")[0].name == found[0].name  # again: replaced in place
    with pytest.raises(InvalidArgumentError, match="package"):
        families.discover_families("famdisc_no_such_package")
    with pytest.raises(InvalidArgumentError, match="not a package"):
        families.discover_families("famdisc_pkg.toy")


def test_an_encoder_module_without_encoders_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "misnamed.py").write_text("ENCODER = ()  # misspelt: ENCODERS\n")
    saved = (dict(enc_registry._registry), set(enc_registry._builtin))
    monkeypatch.setattr(encoders_pkg, "__path__", [*encoders_pkg.__path__, str(tmp_path)])
    monkeypatch.setattr(enc_registry, "_loaded", False)
    try:
        with pytest.raises(InvalidArgumentError, match="misnamed declares no ENCODERS"):
            enc_registry._ensure_loaded()
    finally:
        enc_registry._registry.clear()
        enc_registry._registry.update(saved[0])
        enc_registry._builtin.clear()
        enc_registry._builtin.update(saved[1])
        sys.modules.pop("gcsim.coding.encoders.misnamed", None)
    monkeypatch.undo()
    assert "rd" in enc_registry.method_names()  # the real package loads again


def test_eps_is_recorded_only_by_the_encoders_that_read_it() -> None:
    """``encode(eps=...)`` used to record ε for an encoder that ignores it (#35): the options now
    hold ``eps`` exactly when ``B`` depends on it (checked against the built matrices)."""
    from gcsim.coding.encoders import encoders

    A = gcsim.bibd(7, 3)
    for enc in encoders():
        if enc.example is None or enc.m1_only:
            continue
        source, m, options = enc.example()
        seed = options.get("seed", 1)
        options = {k: v for k, v in options.items() if k not in ("eps", "seed")}
        b = gcsim.encode(source, m, enc.name, eps=0.3, seed=seed, **options)
        assert ("eps" in b.options) == enc.uses_eps, enc.name
        if not enc.uses_eps:  # it ignores eps indeed: the same B as without it
            a = gcsim.encode(source, m, enc.name, seed=seed, **options)
            assert np.array_equal(a.B, b.B), enc.name
    assert "eps" not in gcsim.encode(A, 1, "naive", eps=0.5).options
    assert gcsim.encode(A, 2, "rd", eps=0.5, seed=2).options["eps"] == 0.5
