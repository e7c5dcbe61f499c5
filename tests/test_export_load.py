"""One export/load contract (#23 item 3): everything gcsim exports, ``gcsim load`` and ``load_object`` load.

The exporters are found by introspection -- every public function named ``export`` or
``export_*`` and every public class's method of that name, in the ``__all__`` of every gcsim
module -- so a new exporter fails :func:`test_every_exporter_has_a_round_trip` until it has a
round trip below.  Each round trip writes with the exporter, loads the result with
:func:`gcsim.load_object` (equal arrays) and with ``gcsim load PATH`` (exit 0, ``--json``).
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import gcsim
from gcsim.app.cli import main as cli_main
from gcsim.catalogue import KINDS, ExportedCode, export_object, export_object_at, load_object
from gcsim.errors import CatalogueError

SRC = Path(gcsim.__file__).resolve().parent


def _public_modules() -> list[Any]:
    out = []
    for info in pkgutil.walk_packages([str(SRC)], prefix="gcsim."):
        if info.name == "gcsim.__main__" or any(p.startswith("_") for p in info.name.split(".")[1:]):
            continue
        if info.name.startswith("gcsim.app"):  # the command line, not the Python API
            continue
        try:
            out.append(importlib.import_module(info.name))
        except ImportError:  # an optional dependency this environment lacks
            continue
    return out


def _is_exporter(name: str) -> bool:
    return name == "export" or name.startswith("export_")


def discovered_exporters() -> set[str]:
    """``module.function`` / ``module.Class.method`` of every public exporter."""
    found = set()
    for module in _public_modules():
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name, None)
            if inspect.isfunction(obj) and _is_exporter(name):
                found.add(f"{obj.__module__}.{obj.__qualname__}")
            elif inspect.isclass(obj) and obj.__module__.startswith("gcsim."):
                for attr, member in vars(obj).items():
                    if _is_exporter(attr) and callable(member):
                        found.add(f"{obj.__module__}.{obj.__qualname__}.{attr}")
    return found


# ---------------------------------------------------------------------------------------------
# one round trip per exporter: write, then return (path given to the loaders, original, check)


def _same_arrays(a: Any, b: Any) -> None:
    assert type(a) is type(b)
    left, right = a.to_arrays(), b.to_arrays()
    assert sorted(left) == sorted(right)
    for key in left:
        assert np.array_equal(np.asarray(left[key]), np.asarray(right[key])), key


def _objects() -> list[Any]:
    """One object of every catalogue kind (the conformance battery's examples)."""
    import test_conformance as battery

    seen: dict[str, Any] = {}
    for _, factory in battery.instances():
        obj = factory()
        seen.setdefault(type(obj).kind, obj)
    assert set(seen) >= set(KINDS), f"no example of {sorted(set(KINDS) - set(seen))} in tests/test_conformance.py"
    return [seen[k] for k in sorted(KINDS)]


def _via_export_object(tmp: Path) -> list[tuple[Path, Callable[[Any], None]]]:
    out = []
    for i, obj in enumerate(_objects()):
        path = export_object(obj, tmp, f"o{i}").with_suffix("")
        out.append((path, lambda back, obj=obj: _same_arrays(obj, back)))
    return out


def _via_export_object_at(tmp: Path) -> list[tuple[Path, Callable[[Any], None]]]:
    obj = gcsim.encode(gcsim.bibd(7, 3, 1).assignment, 2, "exact-gaussian", s=1, seed=0)
    path = export_object_at(obj, tmp / "encoder").with_suffix("")
    return [(path, lambda back: _same_arrays(obj, back))]


def _via_export_design(tmp: Path) -> list[tuple[Path, Callable[[Any], None]]]:
    from gcsim.cerar import design
    from gcsim.cerar.export import export_design

    d = design(3, 5, "perturbation", eps=0.1)
    path = export_design(d, tmp).with_suffix("")
    return [(path, lambda back: _same_arrays(d, back))]


def _via_decoder_table_export(tmp: Path) -> list[tuple[Path, Callable[[Any], None]]]:
    table = gcsim.decoder_table(gcsim.encode(gcsim.bibd(7, 3, 1).assignment, 1, "naive"), s_max=2)
    path = table.export(tmp / "table").with_suffix("")
    return [(path, lambda back: _same_arrays(table, back))]


def _via_advice_export(tmp: Path) -> list[tuple[Path, Callable[[Any], None]]]:
    adv = gcsim.advise(13, 4, 2, "fixed:1", families=["bibd"], progress=False)
    folder = adv.export(tmp)
    scheme = adv.schemes[0]

    def check(back: Any) -> None:
        assert isinstance(back, ExportedCode) and back.kind == "code"
        _same_arrays(scheme, back.scheme)
        assert back.decoders is not None and len(back.decoders) == 1 + 13
        assert back.manifest["candidate"]["name"] == adv.rows[0]["name"]

    parts = [(folder / "encoder", lambda back: _same_arrays(scheme, back)), (folder / "decoders", lambda b: None)]
    return [(folder, check), *parts]


ROUND_TRIPS: dict[str, Callable[[Path], list[tuple[Path, Callable[[Any], None]]]]] = {
    "gcsim.catalogue.objects.export_object": _via_export_object,
    "gcsim.catalogue.objects.export_object_at": _via_export_object_at,
    "gcsim.cerar.export.export_design": _via_export_design,
    "gcsim.coding.dense_table.DecoderTable.export": _via_decoder_table_export,
    "gcsim.advisor.advice.Advice.export": _via_advice_export,
}


def test_every_exporter_has_a_round_trip():
    found = discovered_exporters()
    assert "gcsim.advisor.advice.Advice.export" in found and "gcsim.cerar.export.export_design" in found
    missing = sorted(found - set(ROUND_TRIPS))
    assert not missing, f"add a round trip to ROUND_TRIPS in tests/test_export_load.py for {missing}"
    assert not sorted(set(ROUND_TRIPS) - found), "ROUND_TRIPS names an exporter that no longer exists"


@pytest.mark.parametrize("exporter", sorted(ROUND_TRIPS))
def test_every_export_loads_with_load_object_and_gcsim_load(exporter, tmp_path, capsys):
    cases = ROUND_TRIPS[exporter](tmp_path)
    assert cases
    for path, check in cases:
        check(load_object(path))
        check(gcsim.load_object(str(path)))
        capsys.readouterr()
        assert cli_main(["load", str(path), "--json"]) == 0, path
        payload = json.loads(capsys.readouterr().out)
        assert payload["verified"] is True, payload


def test_an_advice_folder_loads_in_text_and_names_its_parts(tmp_path, capsys):
    folder = gcsim.advise(13, 4, 2, "fixed:1", families=["bibd"], progress=False).export(tmp_path)
    assert cli_main(["load", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "exported code: bibd [13, 13, 4, 4, 1]" in out and "decoder table of 14 patterns" in out, out
    assert "every part loaded and verified" in out


def test_a_tampered_part_of_an_advice_folder_is_refused(tmp_path, capsys):
    folder = gcsim.advise(13, 4, 2, "fixed:1", families=["bibd"], progress=False).export(tmp_path)
    data = (folder / "encoder.npz").read_bytes()
    (folder / "encoder.npz").write_bytes(data[:-40] + bytes(40))
    with pytest.raises(CatalogueError):
        load_object(folder)
    assert cli_main(["load", str(folder)]) == 1
    assert "gcsim: error: refused:" in capsys.readouterr().err


@pytest.mark.parametrize("entry", ["../../etc/passwd", "/etc/passwd", "", 7])
def test_a_manifest_naming_a_file_outside_its_folder_is_refused(tmp_path, entry):
    folder = gcsim.advise(13, 4, 2, "fixed:1", families=["bibd"], progress=False).export(tmp_path)
    manifest = json.loads((folder / "advice.json").read_text())
    manifest["files"]["encoder"] = entry
    (folder / "advice.json").write_text(json.dumps(manifest))
    with pytest.raises(CatalogueError, match="files.encoder"):
        load_object(folder)


def test_a_folder_that_is_no_export_is_refused_naming_what_it_lacks(tmp_path, capsys):
    export_object(gcsim.bibd(7, 3, 1), tmp_path, "fano")
    with pytest.raises(CatalogueError, match="advice.json"):
        load_object(tmp_path)
    assert cli_main(["load", str(tmp_path)]) == 2
    assert "is a folder holding none of ['advice.json']" in capsys.readouterr().err


def test_an_encoder_written_before_its_array_map_still_loads_in_its_folder(tmp_path):
    """Exports of earlier versions wrote ``extras.H`` as ``extras__H`` without ``bundle_arrays``."""
    from gcsim.io.bundle import load_bundle, save_bundle

    folder = gcsim.advise(13, 4, 2, "fixed:1", families=["bibd"], progress=False).export(tmp_path)
    stored, man = load_bundle(folder / "encoder")
    meta = {k: v for k, v in man["metadata"].items() if k not in ("bundle_arrays", "class", "verified")}
    save_bundle(folder / "encoder", stored, meta, overwrite=True)
    code = load_object(folder)
    assert code.scheme.method == json.loads((folder / "advice.json").read_text())["candidate"]["encoder"]
