"""No module of gcsim over 1,000 lines, no function over 100 lines of code (issue #35 item 3).

Lines of code: non-blank, non-comment lines of the function, its docstrings excluded. The numba
kernels of ``gcsim/coding/_compiled.py`` are exempt (compiled loops kept in one piece on purpose).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXEMPT = {"gcsim/coding/_compiled.py"}
MAX_MODULE_LINES, MAX_FUNCTION_CODE_LINES = 1000, 100


def _docstring_lines(tree: ast.AST) -> set[int]:
    out: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                out.update(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    return out


def _offenders(root: Path = ROOT) -> list[str]:
    found = []
    for path in sorted((root / "gcsim").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel in EXEMPT:
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        if len(lines) > MAX_MODULE_LINES:
            found.append(f"{rel}: {len(lines)} lines")
        tree = ast.parse("\n".join(lines))
        docs = _docstring_lines(tree)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                span = range(node.lineno, (node.end_lineno or node.lineno) + 1)
                code = [
                    i
                    for i in span
                    if i not in docs and lines[i - 1].strip() and not lines[i - 1].strip().startswith("#")
                ]
                if len(code) > MAX_FUNCTION_CODE_LINES:
                    found.append(f"{rel}:{node.name}: {len(code)} lines of code")
    return found


def test_no_module_or_function_over_its_size():
    assert _offenders() == []


def test_the_scan_finds_a_planted_long_function_and_module(tmp_path):
    # the check can fail: a 101-line function (its docstring and comments not counted) and a long module
    (tmp_path / "gcsim").mkdir()
    body = "\n".join(f"    x{i} = {i}  # c" for i in range(100))
    (tmp_path / "gcsim" / "long_function.py").write_text(f'def f():\n    """doc."""\n    # a comment\n{body}\n')
    (tmp_path / "gcsim" / "long_module.py").write_text("x = 1\n" * 1001)
    assert _offenders(tmp_path) == ["gcsim/long_function.py:f: 101 lines of code", "gcsim/long_module.py: 1001 lines"]
