"""No module of gcsim loads a pickle (or another code-executing serialization) (issue #19).

Every module under ``gcsim/`` is parsed with :mod:`ast`; a call of any of these fails the test:

* ``pickle.load``/``loads``/``Unpickler`` (and ``_pickle``, ``cPickle``): unpickling calls any
  importable function the bytes name -- reading a pickle is running code;
* ``cloudpickle.load``/``loads``, ``dill.load``/``loads``, ``joblib.load``, ``jsonpickle.decode``:
  pickle underneath (or, for jsonpickle, object construction by name);
* ``marshal.load``/``loads``: code objects, and no guarantee against malformed input;
* ``shelve.open``: a dictionary of pickles;
* ``pandas.read_pickle``: pickle;
* ``torch.load`` without ``weights_only=True`` (a literal): torch's default unpickler;
* any call with ``allow_pickle=`` other than the literal ``False`` (``numpy.load``,
  ``numpy.lib.format.read_array``): NumPy's pickled object arrays;
* ``importlib.import_module``/``__import__`` of one of those modules by a literal name, and
  ``getattr(<one of those modules>, "<a forbidden function>")``, so the rule cannot be dodged
  by spelling.

Names are resolved through the module's imports (``import pickle as p``, ``from pickle import
loads as L``, ``import numpy as np``).  Writing (``pickle.dumps``) is not a load and is allowed:
the executor checks that a rank function can be sent before it starts processes.  Not visible to
an AST and not on disk: ``multiprocessing`` queues unpickle what the launcher's own child
processes send through a pipe (``gcsim/executor/launcher.py``, ``q.get``); nothing is read from a
file there.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "gcsim"

#: module -> functions whose call is a load of code-executing data (None: every call of the module)
FORBIDDEN: dict[str, set[str]] = {
    "pickle": {"load", "loads", "Unpickler"},
    "_pickle": {"load", "loads", "Unpickler"},
    "cPickle": {"load", "loads", "Unpickler"},
    "cloudpickle": {"load", "loads"},
    "dill": {"load", "loads", "Unpickler"},
    "joblib": {"load"},
    "jsonpickle": {"decode", "loads"},
    "marshal": {"load", "loads"},
    "shelve": {"open", "DbfilenameShelf", "Shelf", "BsdDbShelf"},
    "pandas": {"read_pickle"},
}
MODULES = set(FORBIDDEN) - {"pandas"}  # importing pandas is fine; importing pickle by name is suspicious

#: an explicit, commented allow-list of (path relative to gcsim/, line) -- empty: no exception needed
ALLOWED: set[tuple[str, int]] = set()


class _Scanner(ast.NodeVisitor):
    """Collects ``(line, what)`` of every forbidden call in one module."""

    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}  # local name -> dotted origin ("np" -> "numpy")
        self.found: list[tuple[int, str]] = []

    def scan(self, tree: ast.AST) -> list[tuple[int, str]]:
        for node in ast.walk(tree):  # imports anywhere (in functions too) count for every name
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.aliases[a.asname or a.name.partition(".")[0]] = (
                        a.name if a.asname else a.name.partition(".")[0]
                    )
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        self.visit(tree)
        return self.found

    def dotted(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            base = self.dotted(node.value)
            return None if base is None else f"{base}.{node.attr}"
        return None

    def visit_Call(self, node: ast.Call) -> None:
        name = self.dotted(node.func) or ""
        module, _, func = name.rpartition(".")
        top = module.partition(".")[0]
        if top in FORBIDDEN and func in FORBIDDEN[top]:
            self.found.append((node.lineno, f"{name}()"))
        if name == "torch.load":
            weights = [k.value for k in node.keywords if k.arg == "weights_only"]
            if not (weights and isinstance(weights[0], ast.Constant) and weights[0].value is True):
                self.found.append((node.lineno, "torch.load() without weights_only=True"))
        for k in node.keywords:
            if k.arg == "allow_pickle" and not (isinstance(k.value, ast.Constant) and k.value.value is False):
                self.found.append((node.lineno, f"{name or 'a call'}(allow_pickle={ast.unparse(k.value)})"))
        first = node.args[0] if node.args else None
        literal = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None
        if name in ("importlib.import_module", "__import__") and literal and literal.partition(".")[0] in MODULES:
            self.found.append((node.lineno, f"{name}({literal!r})"))
        if name == "getattr" and len(node.args) >= 2:
            target = self.dotted(node.args[0]) or ""
            attr = node.args[1]
            if (
                target.partition(".")[0] in FORBIDDEN
                and isinstance(attr, ast.Constant)
                and attr.value in FORBIDDEN[target.partition(".")[0]]
            ):
                self.found.append((node.lineno, f"getattr({target}, {attr.value!r})"))
        self.generic_visit(node)


def forbidden_calls(source: str) -> list[tuple[int, str]]:
    return _Scanner().scan(ast.parse(source))


def test_no_module_of_gcsim_loads_a_pickle():
    modules = sorted(ROOT.rglob("*.py"))
    assert len(modules) > 50, "the package was not found"
    found = []
    for path in modules:
        rel = path.relative_to(ROOT).as_posix()
        for line, what in forbidden_calls(path.read_text(encoding="utf-8")):
            if (rel, line) not in ALLOWED:
                found.append(f"gcsim/{rel}:{line}: {what}")
    assert not found, "code-executing loads in gcsim:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "source",
    [
        "import pickle\npickle.loads(b'')",
        "import pickle as p\np.load(open('f', 'rb'))",
        "from pickle import loads\nloads(b'')",
        "from pickle import loads as safe\nsafe(b'')",
        "def f():\n    import cloudpickle\n    return cloudpickle.loads(b'')",
        "import _pickle\n_pickle.Unpickler(f).load()",
        "import marshal\nmarshal.loads(b'')",
        "import shelve\nshelve.open('db')",
        "import pandas as pd\npd.read_pickle('x.pkl')",
        "import torch\ntorch.load('m.pt')",
        "import torch\ntorch.load('m.pt', weights_only=False)",
        "import torch\ntorch.load('m.pt', weights_only=flag)",
        "import numpy as np\nnp.load('a.npy', allow_pickle=True)",
        "import numpy as np\nnp.load('a.npy', allow_pickle=flag)",
        "from numpy.lib import format\nformat.read_array(f, allow_pickle=True)",
        "import importlib\nimportlib.import_module('pickle')",
        "__import__('cloudpickle')",
        "import pickle\ngetattr(pickle, 'loads')(b'')",
        "import joblib\njoblib.load('x')",
    ],
)
def test_the_scanner_finds_every_forbidden_form(source):
    assert forbidden_calls(source), source


@pytest.mark.parametrize(
    "source",
    [
        "import pickle\npickle.dumps(1)",
        "import numpy as np\nnp.load('a.npy', allow_pickle=False)",
        "import numpy as np\nnp.load('a.npy')",  # allow_pickle defaults to False (numpy >= 1.16.3)
        "import torch\ntorch.load('m.pt', weights_only=True)",
        "import json\njson.loads('{}')",
        "import pandas as pd\npd.read_csv('x.csv')",
        "from .io import load\nload('x')",
    ],
)
def test_the_scanner_accepts_data_only_loads(source):
    assert forbidden_calls(source) == []
