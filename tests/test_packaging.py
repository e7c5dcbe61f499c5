"""Packaging: the wheel's contents, the packaged catalogue, and one clear line per missing extra.

The full acceptance check (a fresh venv, ``pip install gcsim-*.whl`` with the core
dependencies only, then bibd(91,10,1) and ``gcsim catalogue``) downloads the core
dependencies and takes about two minutes: it is ``scripts/check_wheel.sh``.  Here the wheel
is built and its file list checked, and the core paths run in a subprocess in which every
optional module is blocked (``sys.modules[name] = None`` makes ``import name`` fail exactly
as if it were not installed).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import gcsim
from gcsim._optional import EXTRAS, extra_for, require, require_installed
from gcsim.app import paths
from gcsim.app.catalogue_report import catalogue_table
from gcsim.app.cli import main
from gcsim.catalogue.named import NAMED_INSTANCES, catalogue_path, packaged_catalogue
from gcsim.errors import GcsimError, InvalidArgumentError, MissingDependencyError

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "designs"
OPTIONAL = ("cvxpy", "scs", "torch", "pandas", "matplotlib", "sklearn", "ipywidgets")

#: the pyproject extras, read independently of gcsim._optional
PYPROJECT = (ROOT / "pyproject.toml").read_text()


def _blocked_run(code: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter where every optional dependency is blocked."""
    prelude = f"import sys\nfor _m in {OPTIONAL!r}:\n    sys.modules[_m] = None\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + code, *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


# ---------------------------------------------------------------------------
# the wheel


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> tuple[Path, str]:
    """The wheel built from a clean copy of the source tree, and the verbose build log."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    # a copy without caches or a stale build/ folder, which setuptools would pack
    for folder in ("gcsim", "designs"):
        shutil.copytree(ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--no-build-isolation", "-w", str(tmp / "dist"), "."],
        cwd=src,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (whl,) = (tmp / "dist").glob("gcsim-*.whl")
    return whl, proc.stdout + proc.stderr


@pytest.mark.slow
def test_wheel_holds_the_package_data_stubs_and_license(wheel):
    whl, _ = wheel
    names = set(zipfile.ZipFile(whl).namelist())
    # every catalogue file of the source tree, found by walking it (not through gcsim)
    data = {f"gcsim/designs/{p.relative_to(DATA).as_posix()}" for p in DATA.rglob("*") if p.is_file()}
    data = {n for n in data if "__pycache__" not in n}
    assert data and data <= names, sorted(data - names)
    assert any(n.endswith("designs/bibd/pg2_9.npz") for n in data) and any("/cerar/" in n for n in data)
    stubs = {f"gcsim/{p.relative_to(ROOT / 'gcsim').as_posix()}" for p in (ROOT / "gcsim").rglob("*.pyi")}
    assert stubs and stubs <= names, sorted(stubs - names)
    assert "gcsim/py.typed" in names
    assert any(re.fullmatch(r"gcsim-[^/]+\.dist-info/licenses/LICENSE", n) for n in names)
    # nothing but the package and its metadata: no tests, notebooks, docs, scripts
    assert all(n.startswith(("gcsim/", "gcsim-")) for n in names), sorted(n for n in names if not n.startswith("gcsim"))
    modules = {n for n in names if n.endswith(".py")}
    assert "gcsim/_optional.py" in modules and "gcsim/app/cli.py" in modules


@pytest.mark.slow
def test_wheel_metadata_core_dependencies_and_extras(wheel):
    whl, _ = wheel
    with zipfile.ZipFile(whl) as zf:
        (meta_name,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        meta = zf.read(meta_name).decode()
        entry = zf.read(meta_name.replace("METADATA", "entry_points.txt")).decode()
    requires = [line.split(":", 1)[1].strip() for line in meta.splitlines() if line.startswith("Requires-Dist:")]
    core = {re.split(r"[<>=!~ ;\[]", r)[0].lower() for r in requires if "extra ==" not in r}
    assert {"numpy", "scipy", "sympy", "galois", "networkx"} <= core
    assert not core & {"cvxpy", "scs", "torch", "pandas", "matplotlib", "scikit-learn", "jupyterlab", "ipywidgets"}
    extras = {line.split(":", 1)[1].strip() for line in meta.splitlines() if line.startswith("Provides-Extra:")}
    assert {"optimize", "plots", "torch", "learning", "notebooks", "all"} <= extras
    assert f"Version: {gcsim.__version__}" in meta
    assert "gcsim = gcsim.app.cli:main" in entry


@pytest.mark.slow
def test_wheel_builds_without_setuptools_warnings(wheel):
    _, log = wheel
    bad = [
        line
        for line in log.splitlines()
        if re.search(r"deprecat|SetuptoolsWarning|BuildBackendWarning|UserWarning|absent from", line, re.I)
        # with PYTHONDONTWRITEBYTECODE set, setuptools says it skips byte-compiling: not a defect
        and "byte-compiling is disabled" not in line
    ]
    assert not bad, "\n".join(bad)


def test_the_extras_of_optional_match_pyproject():
    # every extra named in an error message is one that pyproject.toml defines, holding that module
    pip_names = {"sklearn": "scikit-learn"}
    for module, extra in EXTRAS.items():
        block = re.search(rf"^{extra} = \[(.*?)\]$", PYPROJECT, re.M | re.S)
        assert block, f"extra {extra!r} missing from pyproject.toml"
        assert f'"{pip_names.get(module, module)}' in block.group(1), (module, extra)


# ---------------------------------------------------------------------------
# missing extras: one line naming the extra


def test_require_and_its_error():
    assert require("numpy").__name__ == "numpy"
    with pytest.raises(MissingDependencyError) as info:
        require("no_such_module_xyz.sub", "plots", "my_plot")
    exc = info.value
    assert str(exc) == "my_plot needs no_such_module_xyz: pip install 'gcsim[plots]'"
    assert isinstance(exc, ImportError) and isinstance(exc, GcsimError)
    assert (exc.module, exc.extra, exc.what, exc.name) == (
        "no_such_module_xyz",
        "plots",
        "my_plot",
        "no_such_module_xyz",
    )
    assert extra_for("matplotlib.pyplot") == "plots" and extra_for("cvxpy") == "optimize"
    assert extra_for("unknown_thing") == "all"
    require_installed("numpy")
    with pytest.raises(MissingDependencyError, match=r"gcsim\[torch\]"):
        require_installed("no_such_module_xyz", "torch", "launch")


def test_a_broken_install_keeps_the_import_error(tmp_path, monkeypatch):
    # the package is there but fails to import: the message says so instead of "pip install"
    pkg = tmp_path / "ha_broken_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("import ha_missing_inner_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(MissingDependencyError, match="installed but failed to import.*ha_missing_inner_dependency"):
        require("ha_broken_pkg", "plots", "x")


@pytest.mark.parametrize(
    ("call", "extra"),
    [
        ("gcsim.cerar.design(4, 8, 'optimized', kappa=20)", "optimize"),
        ("import gcsim.coding.experiments", "plots"),
        ("gcsim.learning.datasets.load_digits()", "learning"),
        ("gcsim.executor.launcher.launch(print, 2)", "torch"),
        ("gcsim.cerar.pareto.pareto_front(4, 8, [10.0])", "plots"),
    ],
)
def test_a_call_that_needs_an_extra_names_it(tmp_path, call, extra):
    code = (
        "import gcsim, gcsim.learning.datasets, gcsim.executor.launcher, gcsim.cerar.pareto\n"
        f"try:\n    {call}\nexcept gcsim.MissingDependencyError as exc:\n    print('MISSING', exc)\n"
        "else:\n    print('RAN')\n"
    )
    proc = _blocked_run(code, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = proc.stdout.strip().splitlines()[-1]
    assert line.startswith("MISSING ") and f"pip install 'gcsim[{extra}]'" in line, proc.stdout


def test_core_paths_run_with_every_extra_blocked(tmp_path):
    code = """
import json
import gcsim
from gcsim.app.cli import main
d = gcsim.bibd(91, 10, 1)
d.verify()
assert d.params == (91, 91, 10, 10, 1)
assert main(["catalogue", "--json"]) == 0
assert main(["load", "pg2_9"]) == 0
for m in ("cvxpy", "scs", "torch", "pandas", "matplotlib", "sklearn"):
    assert sys.modules[m] is None, m
print("CORE OK")
"""
    proc = _blocked_run(code, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "CORE OK" in proc.stdout
    rows = json.loads(proc.stdout.splitlines()[0])["rows"]
    assert len(rows) == len(NAMED_INSTANCES) and all(r["file"] == "matches" for r in rows), rows


def test_cli_prints_one_line_and_exits_2_for_a_missing_extra(tmp_path):
    code = "from gcsim.app.cli import main\nraise SystemExit(main(sys.argv[1:]))"
    proc = _blocked_run(code, "cerar", "optimize", "--workers", "4", "--c", "8", "--kappa", "20", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and "needs cvxpy: pip install 'gcsim[optimize]'" in err[0], proc.stderr
    assert "Traceback" not in proc.stderr


# ---------------------------------------------------------------------------
# the packaged catalogue


def test_packaged_catalogue_is_the_package_data_folder():
    assert packaged_catalogue() == DATA
    assert paths.repo_designs_dir() == DATA
    stems = sorted(p.relative_to(DATA).with_suffix("").as_posix() for p in DATA.glob("*/*.json"))
    assert "bibd/pg2_9" in stems and "cerar/optimized_N4_c8_kappa10" in stems


def test_catalogue_path_resolution(tmp_path, monkeypatch):
    assert catalogue_path("pg2_9") == DATA / "bibd" / "pg2_9"
    assert catalogue_path("srg/petersen") == DATA / "srg" / "petersen"
    assert catalogue_path("cerar/optimized_N4_c8_kappa10.json") == DATA / "cerar" / "optimized_N4_c8_kappa10"
    assert catalogue_path("no_such_design") == Path("no_such_design")
    assert catalogue_path("../bibd/pg2_9") == Path("../bibd/pg2_9")  # never climbs out of the catalogue
    # a file on disk wins over the packaged one of the same name
    monkeypatch.chdir(tmp_path)
    (tmp_path / "srg").mkdir()
    (tmp_path / "srg" / "petersen.json").write_text("{}")
    assert catalogue_path("srg/petersen") == Path("srg/petersen")


def test_gcsim_load_finds_a_packaged_name(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no catalogue folder here
    assert main(["load", "cerar/optimized_N4_c8_kappa10", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    manifest = json.loads((DATA / "cerar" / "optimized_N4_c8_kappa10.json").read_text())
    assert payload["kind"] == "cerar" and payload["sha256"] == manifest["sha256"]


def _fake_install(tmp_path: Path, checkout: bool) -> Path:
    root = tmp_path / ("checkout" if checkout else "site-packages") / "gcsim"
    (root / "designs").mkdir(parents=True)
    if checkout:
        (root.parent / "pyproject.toml").write_text('[project]\nname = "gcsim"\n')
    return root


def test_exports_never_write_into_an_installed_package(tmp_path, monkeypatch, capsys):
    root = _fake_install(tmp_path, checkout=False)
    monkeypatch.setattr(paths, "_package_root", lambda: root)
    target = root / "designs"
    assert paths.inside_installed_package(target) and paths.inside_installed_package(root)
    assert not paths.inside_installed_package(tmp_path / "elsewhere")
    with pytest.raises(InvalidArgumentError, match="read-only"):
        catalogue_table(target, export=True, names=["petersen"])
    assert main(["catalogue", "--dir", str(target / "x"), "--force"]) == 2
    assert "read-only" in capsys.readouterr().err
    assert not any(target.rglob("*.json"))
    # the default folder is the packaged catalogue, so a bare --export is refused too
    monkeypatch.setattr(paths, "packaged_catalogue", lambda: target)
    assert main(["catalogue", "--export"]) == 2
    assert "--out DIR" in capsys.readouterr().err


def test_a_source_checkout_may_regenerate_its_catalogue(tmp_path, monkeypatch):
    root = _fake_install(tmp_path, checkout=True)
    monkeypatch.setattr(paths, "_package_root", lambda: root)
    target = root / "designs"
    assert not paths.inside_installed_package(target)
    rows = catalogue_table(target, export=True, names=["petersen"])
    assert rows[0]["file"] == "exported" and (target / "srg" / "petersen.json").is_file()


def test_user_folder_export_and_compare(tmp_path, capsys):
    folder = tmp_path / "mine"
    assert main(["catalogue", "--out", str(folder), "--json"]) == 0
    capsys.readouterr()
    assert sorted(p.relative_to(folder).as_posix() for p in folder.glob("*/*.json")) == sorted(
        p.relative_to(DATA).as_posix() for p in DATA.glob("*/*.json") if p.parent.name != "cerar"
    )
    assert main(["catalogue", "--dir", str(folder), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert all(r["file"] == "matches" for r in rows)


def test_pyproject_lists_every_package_of_the_tree():
    """The flat layout lists its packages by hand (designs/ is mapped to gcsim.designs): none forgotten."""
    import tomllib

    config = tomllib.loads(PYPROJECT)["tool"]["setuptools"]
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "gcsim").rglob("__init__.py")} | {
        "gcsim.designs"
    }
    # the catalogue's data folders are packages too (else setuptools warns once for each)
    found |= {f"gcsim.designs.{p.name}" for p in (ROOT / "designs").iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert set(config["packages"]) == found, sorted(set(config["packages"]) ^ found)
    assert config["package-dir"] == {"gcsim.designs": "designs"}
    assert (ROOT / "designs" / "bibd" / "pg2_9.json").is_file() and not (ROOT / "src").exists()
