"""The import graph of gcsim, read from the source with ``ast`` (nothing is imported).

Layers, bottom to top (a module imports only from its own layer or the layers below it;
the two analysis subpackages do not import each other, nor do the advisor and the executor):

    base (errors, limits, _validation, _discovery, _threads, _version, _array_api, _optional, _html,
          _plotting, io, sweep)
      -> combinatorics
      -> coding | cerar
      -> catalogue
      -> advisor | executor
      -> learning
      -> app

Every import counts, at module level or inside a function.  Below ``gcsim.app``, imports of
gcsim modules sit at module level (a function-level import hides a dependency and, often, a
cycle); the application layer may defer imports of layers with optional dependencies (torch)
so that ``gcsim --help`` starts without them.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "gcsim"

#: (layer name, module prefixes), bottom to top
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "base",
        (
            "gcsim.errors",
            "gcsim.limits",
            "gcsim._validation",
            # the walk over a package's public modules that every registry shares
            "gcsim._discovery",
            "gcsim._threads",
            "gcsim._version",
            "gcsim._array_api",
            "gcsim._optional",
            "gcsim._html",
            "gcsim._plotting",
            "gcsim._stats",
            "gcsim._progress",
            "gcsim.io",
            # seeded task sweeps, serial or on Dask (knows no gcsim layer: callers pass functions)
            "gcsim.sweep",
        ),
    ),
    ("combinatorics", ("gcsim.combinatorics",)),
    ("coding", ("gcsim.coding",)),
    ("cerar", ("gcsim.cerar",)),
    ("catalogue", ("gcsim.catalogue",)),
    # the code advisor: builds candidates, evaluates them, exports the chosen one (beside the executor)
    ("advisor", ("gcsim.advisor",)),
    ("executor", ("gcsim.executor",)),
    ("learning", ("gcsim.learning",)),
    ("app", ("gcsim.app",)),
]
#: rank of each layer; layers of equal rank may not import each other
RANK = {
    "base": 0,
    "combinatorics": 1,
    "coding": 2,
    "cerar": 2,
    "catalogue": 3,
    "advisor": 4,
    "executor": 4,
    "learning": 5,
    "app": 6,
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {module_name(p): p for p in SRC.rglob("*.py")}


def layer_of(module: str) -> str | None:
    for name, prefixes in LAYERS:
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return name
    return None


def _resolve(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def internal_imports() -> list[tuple[str, str, int, bool]]:
    """(importer, imported module, line, inside a function) for every import of a gcsim module."""
    found = []
    for importer, path in MODULES.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        in_function: set[int] = set()
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                in_function.update(id(n) for n in ast.walk(fn) if n is not fn)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(importer, path.name == "__init__.py", node)
                # `from pkg import submodule` imports the submodule
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
            else:
                continue
            for target in targets:
                if target == "gcsim" or target.startswith("gcsim."):
                    found.append((importer, target, node.lineno, id(node) in in_function))
    return found


IMPORTS = internal_imports()


def test_every_module_has_a_layer():
    unplaced = sorted(m for m in MODULES if m != "gcsim" and m != "gcsim.__main__" and layer_of(m) is None)
    assert not unplaced, f"modules outside every layer: {unplaced}"


def test_imports_go_downward_only():
    bad = []
    for importer, target, line, _ in IMPORTS:
        if importer in ("gcsim", "gcsim.__main__"):
            continue
        a, b = layer_of(importer), layer_of(target)
        if b is None:
            bad.append(f"{importer}:{line} imports {target} (the package root: import the module itself)")
        elif a != b and RANK[b] >= RANK[a]:
            bad.append(f"{importer}:{line} ({a}) imports {target} ({b})")
    assert not bad, "upward or sideways imports:\n" + "\n".join(sorted(bad))


def test_nothing_below_app_imports_app():
    bad = [
        f"{i}:{line}"
        for i, t, line, _ in IMPORTS
        if t.startswith("gcsim.app") and layer_of(i) != "app" and i not in ("gcsim", "gcsim.__main__")
    ]
    assert not bad, f"imports of gcsim.app from below: {bad}"


def test_library_imports_sit_at_module_level():
    bad = [f"{i}:{line} imports {t}" for i, t, line, in_fn in IMPORTS if in_fn and layer_of(i) != "app"]
    assert not bad, "function-level imports of gcsim modules below the app layer:\n" + "\n".join(sorted(bad))


def test_import_graph_has_no_cycle():
    graph: dict[str, set[str]] = defaultdict(set)
    for importer, target, _, _ in IMPORTS:
        if importer != target and target in MODULES:
            graph[importer].add(target)
    # Tarjan's strongly connected components (iterative)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    cycles: list[list[str]] = []
    counter = 0
    for root in sorted(MODULES):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    assert not cycles, f"import cycles: {cycles}"


@pytest.mark.parametrize("module", ["gcsim.app.cli", "gcsim.app.reproduce"])
def test_the_checker_sees_the_app_layer(module):
    # the checks above are only as good as the graph: the CLI must be seen importing its command groups
    targets = {t for i, t, _, _ in IMPORTS if i == module}
    assert any(t.startswith("gcsim.app.") for t in targets), targets


@pytest.mark.parametrize("package", ["gcsim", "gcsim.coding", "gcsim.executor", "gcsim.io"])
def test_every_name_of_a_lazy_stub_resolves(package):
    # the .pyi stub is the list of public names (lazy_loader reads it); a stale entry would only
    # fail when a user touches it, so every name is resolved here
    import importlib

    mod = importlib.import_module(package)
    assert mod.__all__, package
    for name in mod.__all__:
        assert getattr(mod, name) is not None, f"{package}.{name}"


def test_import_gcsim_loads_no_layer():
    # `import gcsim` (and the CLI's --help) must stay cheap: no layer, no galois/cvxpy/torch
    import subprocess
    import sys

    code = (
        "import sys, gcsim; heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('torch', 'cvxpy', 'galois', 'pandas', 'matplotlib') or m.startswith('gcsim.')); print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out
