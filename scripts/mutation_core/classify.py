"""Sorting mutmut's mutants: its exit codes as outcomes, and number-changing vs message-only by ``ast``."""

from __future__ import annotations

import ast
import difflib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from .targets import TEXT_FUNCTIONS, Target

# gcsim.errors classes whose first argument (or this keyword) is a field callers inspect, not text
_FIELD_ARGUMENT = {
    "InvalidArgumentError": "argument",
    "SizeLimitError": "argument",
    "ImpossibleParametersError": "condition",
}
# functions whose argument at this position (or these keywords) is only the text of the error they may
# raise: gcsim.limits.check_entries(name, shape, what, hint=...), registry.not_applicable(name, why)
_TEXT_ARGUMENTS: dict[str, tuple[int, tuple[str, ...]]] = {
    "check_entries": (2, ("what", "hint")),
    "not_applicable": (1, ("why",)),
}
# keyword arguments of gcsim's errors that are data, not message text
_DATA_KEYWORDS = {"argument", "condition", "requested", "limit", "limit_name", "suggestions"}

# mutmut's exit codes (mutmut.stats.status_by_exit_code) folded into the outcomes used here: a failed
# test, a crash, a timeout (SIGXCPU) or a type-check failure kill; "suspicious" and "skipped" survive
_KILLED_CODES = {1, 3, 36, 37, -24, 24, 152, 255, -11, -9}
_NO_TESTS_CODES = {5, 33}


_TIMEOUT_CODES = {36, -24, 24, 152, 255}


def _status(code: int | None) -> str:
    if code is None:
        return "not run"
    if code in _TIMEOUT_CODES:
        return "timeout"
    if code in _KILLED_CODES:
        return "killed"
    if code in _NO_TESTS_CODES:
        return "no tests"
    return "survived"


# --- classification -----------------------------------------------------------------------------


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """mutmut's copies of each function: ``x_name__mutmut_orig`` and ``x_name__mutmut_<n>``."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and "__mutmut_" in node.name:
            out[node.name] = node
    return out


def _differences(a: ast.AST, b: ast.AST, trail: tuple[ast.AST, ...]) -> list[tuple[ast.AST, tuple[ast.AST, ...]]]:
    """The smallest nodes of ``a`` where ``b`` differs, each with its ancestors in ``a``."""
    if type(a) is not type(b):
        return [(a, trail)]
    out: list[tuple[ast.AST, tuple[ast.AST, ...]]] = []
    for name, value_a in ast.iter_fields(a):
        if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef)) and name == "name":
            continue
        value_b = getattr(b, name, None)
        if isinstance(value_a, ast.AST):
            out += _differences(value_a, value_b, (*trail, a))  # type: ignore[arg-type]
        elif isinstance(value_a, list):
            if not isinstance(value_b, list) or len(value_a) != len(value_b):
                return [(a, trail)]
            for item_a, item_b in zip(value_a, value_b, strict=True):
                if isinstance(item_a, ast.AST):
                    out += _differences(item_a, item_b, (*trail, a))
                elif item_a != item_b:
                    return [(a, trail)]
        elif value_a != value_b or type(value_a) is not type(value_b):
            return [(a, trail)]
    return out


def _callee(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _in_message(node: ast.AST, trail: tuple[ast.AST, ...], text_functions: dict[str, str]) -> bool:
    """Whether ``node`` (with ancestors ``trail``) lies in text that no computation reads."""
    chain = (*trail, node)
    function = next((n for n in chain if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    base = re.sub(r"__mutmut_.*$", "", function.name).split("ǁ")[-1] if function is not None else ""
    base = base.removeprefix("x_")
    if base.endswith(("__repr__", "__str__")) or text_functions.get(base) == "all":
        return True
    for i, parent in enumerate(chain[:-1]):
        child = chain[i + 1]
        if text_functions.get(base) == "pairs" and isinstance(parent, ast.Tuple) and len(parent.elts) == 2:
            if child is parent.elts[1]:
                return True
        # a docstring: the first statement of a body, a string expression
        if isinstance(parent, ast.Expr) and isinstance(parent.value, ast.Constant) and isinstance(child, ast.Constant):
            return isinstance(parent.value.value, str)
        if isinstance(parent, ast.Raise) and child is parent.exc and isinstance(child, ast.Call):
            call = child
            below = chain[i + 2] if i + 2 < len(chain) else None
            if below is None or below is call.func:
                return False
            if isinstance(below, ast.keyword):
                return below.arg not in _DATA_KEYWORDS
            if below in call.args:
                return not (_callee(call) in _FIELD_ARGUMENT and call.args.index(below) == 0)
            return False
        if isinstance(parent, ast.Call) and _callee(parent) in _TEXT_ARGUMENTS:
            index, keywords = _TEXT_ARGUMENTS[_callee(parent)]
            if child in parent.args[index : index + 1]:
                return True
            if isinstance(child, ast.keyword):
                return child.arg in keywords
        if isinstance(parent, ast.Call) and _callee(parent) == "warn":
            if child in parent.args[:1]:
                return True
            if isinstance(child, ast.keyword):
                return child.arg in ("message", "stacklevel")
            return False
    return False


@dataclass
class Mutant:
    name: str
    status: str
    kind: str  # "number" or "message"
    diff: str = ""
    lines: list[str] = field(default_factory=list)


def _classify(work: Path, target: Target) -> list[Mutant]:
    return [m for path in target.paths for m in _classify_module(work, path)]


def _classify_module(work: Path, path: str) -> list[Mutant]:
    mutated = work / "mutants" / path
    meta = Path(f"{mutated}.meta")
    if not meta.exists():
        return []
    codes: dict[str, int | None] = json.loads(meta.read_text())["exit_code_by_key"]
    source = mutated.read_text()
    functions = _functions(ast.parse(source))
    out = []
    for name, code in codes.items():
        local = name.rsplit(".", 1)[-1]
        base = re.sub(r"__mutmut_\d+$", "", local)
        original, mutant = functions.get(f"{base}__mutmut_orig"), functions.get(local)
        kind, diff, changed = "number", "", []
        if original is not None and mutant is not None:
            found = _differences(original, mutant, ())
            text_functions = TEXT_FUNCTIONS.get(path, {})
            if found and all(_in_message(node, trail, text_functions) for node, trail in found):
                kind = "message"
            # the def line stays in (a mutated default argument is on it), under one name
            a = ast.unparse(original).replace(original.name, base, 1)
            b = ast.unparse(mutant).replace(mutant.name, base, 1)
            delta = list(difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm="", n=0))
            diff = "\n".join(line for line in delta[2:] if not line.startswith("@@"))
            changed = [line[1:].strip() for line in delta[2:] if line.startswith("+")]
        out.append(Mutant(name, _status(code), kind, diff, changed))
    return out
