"""What every ``gcsim`` command shares: exit codes, typed flags, path checks, output.

Exit codes scripts can rely on: 0 success; 1 the command ran and found a failure;
2 bad usage or invalid input; ``gcsim exists`` answers 0 (exists), 3 (does not exist) or
4 (unknown) (see :mod:`gcsim.app.cli`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import textwrap
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..errors import GcsimError

__all__ = [
    "EXIT_OK",
    "EXIT_FAILURE",
    "EXIT_USAGE",
    "EXIT_NO",
    "EXIT_UNKNOWN",
    "UsageError",
    "ERROR_PREFIX",
    "usage_message",
    "Parser",
    "HelpFormatter",
    "show_progress",
    "fmt",
    "table",
    "int_arg",
    "float_arg",
    "path_errors",
    "check_output_dir",
    "check_input_path",
    "check_name",
    "output_path",
    "check_not_exported",
    "parse_integer",
    "emit",
    "object_summary",
    "os_reason",
    "straggler_arg",
    "M_DEFAULT",
    "m_from_args",
    "m_note",
    "straggler_kinds",
    "normalize_stragglers",
]

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2
#: ``gcsim exists``: the object does not exist (3) / existence is not known (4); it exists: 0
EXIT_NO, EXIT_UNKNOWN = 3, 4


class UsageError(GcsimError):
    """Bad command-line usage (exit status 2)."""


#: the one prefix of every line that says why a command stopped: usage errors, refusals, failures
ERROR_PREFIX = "gcsim: error: "


def usage_message(message: str) -> str:
    """argparse's ``argument --load: ...`` as every other refusal spells it, ``--load: ...``.

    >>> usage_message("argument --load: must be a fraction in (0, 1), got '2/3x'")
    "--load: must be a fraction in (0, 1), got '2/3x'"
    >>> usage_message("the following arguments are required: --workers")
    'the following arguments are required: --workers'
    """
    return message.removeprefix("argument ")


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (exit status 2), naming the flag.

    Every command and subcommand prints the same prefix as every other refusal, ``gcsim: error:``
    (``tests/test_cli_flags.py`` walks the parser and checks it), then the flag and what is wrong,
    then where the command's help is.
    """

    def error(self, message: str):  # noqa: D102 - argparse API
        self.exit(EXIT_USAGE, f"{ERROR_PREFIX}{usage_message(message)} (see `{self.prog} --help`)\n")


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the hand-wrapped descriptions and examples, and ends each option's help with its default.

    ``(default: X)`` is added unless the help already states it, the default is ``None`` (nothing is
    set) or the flag is a switch (``store_true``: off unless given).
    """

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            default is None
            or default is argparse.SUPPRESS
            or isinstance(default, bool)
            or isinstance(action, argparse._SubParsersAction)
            or not (action.option_strings or action.nargs in (argparse.OPTIONAL, argparse.ZERO_OR_MORE))
            or "(default" in text
        ):
            return action.help
        shown = ",".join(map(str, default)) if isinstance(default, (list, tuple)) else str(default)
        # argparse expands %-formatting in help texts: a literal % in a default must be doubled
        return f"{text} (default: {shown.replace('%', '%%')})".lstrip()


def show_progress(args: argparse.Namespace) -> bool:
    """Whether a command shows progress: always on stderr, never with ``--json``.

    On a terminal a bar; on a pipe or a file, a ``gcsim: progress: ...`` line every few seconds
    (:mod:`gcsim._progress`, switched to lines by :func:`gcsim.app.cli.main`), so a long command
    that is piped is not silent.
    """
    return not getattr(args, "json", False)


def fmt(x: float, digits: int = 4) -> str:
    """A number as every command prints it: ``digits`` significant digits, exponent without padding.

    >>> fmt(0.000244140625), fmt(1234567.0), fmt(2.0), fmt(1.5e-8, 3)
    ('0.0002441', '1.235e6', '2', '1.5e-8')
    """
    text = f"{float(x):.{digits}g}"
    if "e" in text:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}e{int(exponent)}"
    return text


def table(
    header: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    wrap: dict[str, int] | None = None,
    right: Sequence[str] = (),
) -> str:
    """A plain-text table whose cells are never cut: a long cell wraps at spaces onto more lines.

    Written with the standard library (``textwrap``) rather than pandas or rich because the
    commands that print tables (``gcsim catalogue``, ``gcsim load``) must work in a core-only
    install, which has neither; pandas' ``to_string`` also widens a column instead of wrapping it.

    Parameters
    ----------
    header : sequence of str
        Column titles.
    rows : sequence of sequences
        Cells (``str()`` of each; floats through :func:`fmt`).
    wrap : dict, optional
        Column title -> the width its cells wrap at (a single word longer than that widens the
        column instead of being split).
    right : sequence of str
        Columns aligned right (numbers).

    >>> print(table(["name", "construction"], [["coset", "coset graph over Z_27, random connection sets"]],
    ...             wrap={"construction": 24}))
    name   construction
    -----  ----------------------
    coset  coset graph over Z_27,
           random connection sets
    """
    wrap = wrap or {}
    cells = [[fmt(c) if isinstance(c, float) else str(c) for c in row] for row in rows]
    split = [
        [
            textwrap.wrap(c, wrap[h], break_long_words=False, break_on_hyphens=False) or [""] if h in wrap else [c]
            for h, c in zip(header, row, strict=True)
        ]
        for row in cells
    ]
    widths = [max([len(h)] + [len(line) for row in split for line in row[i]]) for i, h in enumerate(header)]

    def line(parts: Sequence[str]) -> str:
        return "  ".join(
            p.rjust(w) if h in right else p.ljust(w) for p, w, h in zip(parts, widths, header, strict=True)
        ).rstrip()

    out = [line(header), line(["-" * w for w in widths])]
    for row in split:
        for k in range(max(len(c) for c in row)):
            out.append(line([c[k] if k < len(c) else "" for c in row]))
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# argument types: the parser reports "gcsim: error: --d: must be >= 1, got -5" (one line, exit 2)


def _shown(text: str, width: int = 40) -> str:
    """``repr(text)``, cut to about ``width`` characters (a 5000-digit argument is not echoed whole)."""
    return repr(text) if len(text) <= width else f"{text[:width]!r}... ({len(text):,} characters)"


def parse_integer(text: str) -> int:
    """``int(text)``, or a ``ValueError`` whose message says what is wrong.

    An integer longer than Python's limit on integer strings
    (:func:`sys.get_int_max_str_digits`, 4300 digits by default) is *too large*, not "not an
    integer"; the message names the limit.

    >>> parse_integer(" 42 "), parse_integer("-7")
    (42, -7)
    >>> parse_integer("9" * 5000)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: is too large: 5,000 digits, over Python's limit of 4,300 digits for an integer ...
    >>> parse_integer("3.5")
    Traceback (most recent call last):
    ...
    ValueError: must be an integer, got '3.5'
    """
    stripped = text.strip()
    try:
        return int(stripped)
    except ValueError:
        pass
    digits = stripped.lstrip("+-").replace("_", "")
    if digits.isdigit() and digits.isascii():
        limit = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 4300
        raise ValueError(
            f"is too large: {len(digits):,} digits, over Python's limit of {limit:,} digits for an integer "
            "(sys.get_int_max_str_digits)"
        )
    raise ValueError(f"must be an integer, got {_shown(text)}")


def int_arg(minimum: int | None = None, maximum: int | None = None) -> Callable[[str], int]:
    """An argparse ``type`` for an integer in ``[minimum, maximum]``."""

    def parse(text: str) -> int:
        from .._validation import _shown_int

        try:
            value = parse_integer(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        if minimum is not None and value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {_shown_int(value)}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be <= {maximum}, got {_shown_int(value)}")
        return value

    parse.__name__ = "integer"
    return parse


def float_arg(
    minimum: float | None = None, maximum: float | None = None, *, strict_min: bool = False, strict_max: bool = False
) -> Callable[[str], float]:
    """An argparse ``type`` for a finite real number in a range (NaN and inf are refused)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
        if minimum is not None and (value < minimum or (strict_min and value == minimum)):
            raise argparse.ArgumentTypeError(f"must be {'>' if strict_min else '>='} {minimum:g}, got {value:g}")
        if maximum is not None and (value > maximum or (strict_max and value == maximum)):
            raise argparse.ArgumentTypeError(f"must be {'<' if strict_max else '<='} {maximum:g}, got {value:g}")
        return value

    parse.__name__ = "number"
    return parse


#: ``--m`` when it is not given, in every command that builds a code: no communication reduction,
#: every worker sends a full gradient (docs/guides/cli.md, "One meaning per flag")
M_DEFAULT = 1


def m_from_args(args: argparse.Namespace, *, was: int | None = None) -> int:
    """``--m``, or :data:`M_DEFAULT` when it is not given (``args.m`` is None).

    ``was``: the default this command had before the one default; when it differs, the command
    prints a ``gcsim: warning:`` line with its numbers (:func:`m_note`, for one release), so that a
    script that relied on it hears of the change instead of getting other numbers silently.
    """
    if getattr(args, "m", None) is None:
        if was is not None and was != M_DEFAULT:
            args.m_note = (
                f"gcsim: warning: --m not given: m = {M_DEFAULT} (no communication reduction), the default of "
                f"every command; this command's default was {was} before, pass --m {was} for its numbers"
            )
        args.m = M_DEFAULT
    return int(args.m)


def m_note(args: argparse.Namespace) -> None:
    """Print the warning of :func:`m_from_args`, if any: with the numbers it is about, not with a refusal."""
    note = getattr(args, "m_note", None)
    if note:
        print(note, file=sys.stderr)


def straggler_kinds() -> tuple[str, ...]:
    """The kinds of a ``--stragglers KIND:VALUES`` spec (:func:`gcsim.coding.straggler_models.spec_kinds`).

    Imported when a spec names a kind, not when the parser is built (``gcsim --help`` stays light).

    >>> straggler_kinds()[:3]
    ('fixed', 'all', 'worst')
    """
    from ..coding.straggler_models import spec_kinds

    return spec_kinds()


def straggler_arg(text: str) -> str:
    """The argparse ``type`` of ``--stragglers`` in every command: ``S`` (that many stragglers) or ``KIND:VALUES``.

    ``S`` is ``fixed:S``; the values are checked by the command, which knows n.

    >>> straggler_arg("2"), straggler_arg("bernoulli:0.1")
    ('2', 'bernoulli:0.1')
    >>> try:
    ...     straggler_arg("often")
    ... except argparse.ArgumentTypeError as exc:
    ...     print(str(exc)[:72], "...", str(exc)[-13:])
    must be S (a number of stragglers) or KIND:VALUES with KIND one of fixed ... got 'often'
    """
    stripped = text.strip()
    if stripped.isascii() and stripped.lstrip("+-").isdigit():
        return str(int_arg(0)(stripped))  # "-1": must be >= 0; 5000 digits: too large
    kind, sep, _ = stripped.partition(":")
    if not sep or kind not in straggler_kinds():
        raise argparse.ArgumentTypeError(
            f"must be S (a number of stragglers) or KIND:VALUES with KIND one of {', '.join(straggler_kinds())} "
            f"(fixed:2, bernoulli:0.1), got {_shown(text)}"
        )
    return stripped


straggler_arg.__name__ = "straggler spec"


def normalize_stragglers(args: argparse.Namespace, kinds: Sequence[str] | None = None) -> None:
    """``--stragglers`` as ``args.stragglers`` (int S) and ``args.model`` / ``args.p`` (commands with ``--model``).

    ``S`` keeps ``--model`` (default fixed); ``KIND:VALUE`` sets the model, refused when ``--model`` names
    another, or when the command does not run ``KIND`` (``kinds``; None: every registered kind with a
    spec).  A kind whose one value is ``S`` or ``P`` sets ``args.stragglers`` or ``args.p``; any other
    leaves its spec in ``args.straggler_spec`` for the command to build over its ``n`` workers.
    """
    from ..coding.straggler_models import model_class

    args.straggler_spec = None
    text = str(args.stragglers)
    if text.isdigit():
        args.stragglers = parse_integer(text)
        return
    kind, _, values = text.partition(":")
    runs = straggler_kinds() if kinds is None else tuple(kinds)
    if kind not in runs:
        raise UsageError(f"--stragglers: {kind} is not one of the models this command runs ({', '.join(runs)})")
    model = getattr(args, "model", "fixed")
    if model not in ("fixed", kind):
        raise UsageError(f"--stragglers: {text!r} disagrees with --model {model}; give one of them")
    cls = model_class(kind)
    grammar = cls.spec_values or ()
    parts = [v for v in values.split(",") if v.strip()]
    if not cls.spec_takes(len(parts)):
        takes = "one value" if len(grammar) == 1 else f"{len(grammar)} values"
        if cls.spec_takes(len(grammar) + 1):  # per-worker values: say which
            takes = f"{','.join(name for name, _ in grammar)}{cls.spec_note}, got {len(parts)} value(s)"
        raise UsageError(f"--stragglers: {kind} takes {takes}, e.g. {kind}:{cls.cli_example}")
    args.model = kind
    names = tuple(name for name, _ in grammar)
    one = len(parts) == 1 and "*" not in parts[0]  # else per-worker values: the model's grammar reads them
    try:
        if names == ("P",) and one:  # one probability: the flag's own check, then the model's
            args.p = float_arg(0.0, 1.0, strict_max=True)(parts[0])
            args.stragglers = 0
        elif names == ("S",) and one:
            args.stragglers = int_arg(0)(parts[0])
        else:
            args.straggler_spec = text
            args.stragglers = 0
    except argparse.ArgumentTypeError as exc:
        raise UsageError(f"--stragglers: {kind}: {exc}") from None


# ---------------------------------------------------------------------------------------------
# paths: check a flag's path before any work, and turn OS errors into one line naming the flag


def os_reason(exc: OSError) -> str:
    """``"Not a directory: 'afile/bibd'"`` from an OSError, without the errno noise."""
    reason = exc.strerror or type(exc).__name__
    where = exc.filename if exc.filename is not None else None
    if where is None:
        return str(exc) or reason
    text = f"{reason}: {str(where)!r}"
    if getattr(exc, "filename2", None) is not None:
        text += f" -> {str(exc.filename2)!r}"
    return text


@contextlib.contextmanager
def path_errors(flag: str, action: str = "write") -> Iterator[None]:
    """Turn an OSError raised inside the block into a :class:`UsageError` naming ``flag``.

    >>> with path_errors("--out"):
    ...     open("/proc/no/such/file", "w")
    Traceback (most recent call last):
    ...
    gcsim.app.common.UsageError: --out: cannot write: No such file or directory: '/proc/no/such/file'
    """
    try:
        yield
    except MemoryError:
        raise
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):
            raise
        raise UsageError(f"{flag}: cannot {action}: {os_reason(exc)}") from None


def check_output_dir(flag: str, path: str | os.PathLike) -> Path:
    """A folder the command may create or write into, checked before any work.

    Refused (naming ``flag``): an existing non-folder, a path below a regular
    file, an existing ancestor that cannot be written.  Nothing is created here.

    >>> check_output_dir("--out", "/dev/null/x")
    Traceback (most recent call last):
    ...
    gcsim.app.common.UsageError: --out: cannot create '/dev/null/x': '/dev/null' is not a folder
    """
    p = Path(path)
    if str(path) == "":
        raise UsageError(f"{flag}: the folder name is empty")
    if p.exists() and not p.is_dir():
        raise UsageError(f"{flag}: {str(path)!r} exists and is not a folder")
    anc = p
    while not anc.exists() and anc != anc.parent:
        if anc.is_symlink():  # a dangling link: mkdir through it fails
            raise UsageError(f"{flag}: {str(anc)!r} is a broken symbolic link")
        anc = anc.parent
    if not anc.is_dir():
        raise UsageError(f"{flag}: cannot create {str(path)!r}: {str(anc)!r} is not a folder")
    if not os.access(anc, os.W_OK | os.X_OK):
        raise UsageError(f"{flag}: cannot write into {str(anc)!r}: permission denied")
    return p


def check_input_path(flag: str, path: str | os.PathLike, *, folder_ok: bool = True) -> Path:
    """An existing file or folder to read (``folder_ok=False``: a regular file only)."""
    from .._validation import file_kind

    p = Path(path)
    if str(path) == "":
        raise UsageError(f"{flag}: the path is empty")
    kind = file_kind(p)
    if kind is not None:  # a FIFO would block the read, a link to /dev/zero read endless zeros
        via = " (through a symbolic link)" if p.is_symlink() else ""
        raise UsageError(f"{flag}: {str(path)!r} is {kind}{via}, not a regular file or folder")
    if not p.exists():
        if p.is_symlink():
            raise UsageError(f"{flag}: {str(path)!r} is a broken symbolic link")
        raise UsageError(f"{flag}: no such file or folder: {str(path)!r}")
    if not folder_ok and p.is_dir():
        raise UsageError(f"{flag}: {str(path)!r} is a folder, a file is expected")
    if not os.access(p, os.R_OK):
        raise UsageError(f"{flag}: cannot read {str(path)!r}: permission denied")
    return p


def _name_problem(name: str) -> str | None:
    """What keeps ``name`` from being one plain path component, or None."""
    if name == "":
        return "is empty"
    if name in (".", ".."):
        return f"{name!r} is a folder, not a file name"
    if "/" in name or "\\" in name or (os.altsep and os.altsep in name):
        return "must be a plain file name (no folders)"
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
        return "must be a plain file name (a NUL or control character in it)"
    return None


def check_name(flag: str, name: str | None) -> str | None:
    """A user's file name (``--name``): one path component (no separators, not empty, not '.' or '..').

    >>> check_name("--name", "fano")
    'fano'
    >>> check_name("--name", "../x")
    Traceback (most recent call last):
    ...
    gcsim.app.common.UsageError: --name: must be a plain file name (no folders), got '../x'
    """
    if name is None:
        return None
    problem = _name_problem(name)
    if problem is not None:
        raise UsageError(f"{flag}: {problem}, got {_shown(name)}")
    return name


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def output_path(
    flag: str,
    folder: str | os.PathLike,
    *parts: str,
    name_flag: str | None = None,
    suffixes: Sequence[str] = ("",),
) -> Path:
    """The one rule for where a command may write: ``folder/parts...``, checked before anything is written.

    Every command that writes (``--out``, ``--dir``, with ``--name``) asks this
    function for each file or subfolder it will create, and writes only there.  Refused, in one
    line naming the flag (``name_flag`` for the last part, the user's ``--name``, else ``flag``):

    * a ``folder`` that cannot be a folder (:func:`check_output_dir`);
    * a part that is not one plain path component: empty, ``.``, ``..``, a separator (so
      ``--name ../x`` and ``--name /abs/x`` are refused), a NUL or control character;
    * a path that leaves the folder through a symbolic link: each part that exists (or is a
      link, dangling or not) must resolve inside the resolved ``folder``, and so must the final
      file with each of ``suffixes`` (``(".json", ".npz")`` for a bundle), so a link planted in
      the folder cannot redirect a write, or an overwrite with ``--force``, outside it.

    The folder itself may be a link (it is what the user named).  Returns
    ``Path(folder, *parts)`` (the suffixes are the caller's).

    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> output_path("--out", folder, "decoders_s2", suffixes=(".json", ".npz")).name
    'decoders_s2'
    >>> output_path("--out", folder, "../x", name_flag="--name")
    Traceback (most recent call last):
    ...
    gcsim.app.common.UsageError: --name: must be a plain file name (no folders), got '../x'
    >>> os.symlink("/etc", os.path.join(folder, "bibd"))
    >>> output_path("--out", folder, "bibd", "fano", suffixes=(".json", ".npz"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gcsim.app.common.UsageError: --out: '...bibd' is a symbolic link to '/etc', outside ...
    """
    check_output_dir(flag, folder)
    if not parts:
        raise ValueError("output_path: name at least one file or subfolder")
    for i, part in enumerate(parts):
        part_flag = name_flag if (name_flag is not None and i == len(parts) - 1) else flag
        if not isinstance(part, str):
            raise UsageError(f"{part_flag}: must be a file name, got {type(part).__name__}")
        check_name(part_flag, part)
    root = Path(folder).resolve()  # no expanduser: the writers write to Path(folder) as given
    target = Path(folder).joinpath(*parts)
    candidates = [Path(folder).joinpath(*parts[: i + 1]) for i in range(len(parts) - 1)]
    candidates += [target.with_name(target.name + suffix) for suffix in suffixes]
    for candidate in candidates:
        if not (candidate.is_symlink() or candidate.exists()):
            continue
        try:
            resolved = candidate.resolve()
        except (OSError, RuntimeError):  # a loop of links (RuntimeError before Python 3.13)
            raise UsageError(f"{flag}: {str(candidate)!r} is a loop of symbolic links") from None
        if not _inside(resolved, root):
            raise UsageError(
                f"{flag}: {str(candidate)!r} is a symbolic link to {str(resolved)!r}, outside "
                f"{str(folder)!r}; remove it or choose another folder"
            )
    return target


def check_not_exported(
    flag: str,
    target: str | os.PathLike,
    *,
    force: bool,
    suffixes: Sequence[str] = (".json", ".npz"),
    name_flag: str | None = None,
) -> Path:
    """Refuse, before any work, a bundle (``target`` + each of ``suffixes``) an earlier export left, unless ``--force``.

    The writers refuse it too (:func:`gcsim.io.bundle.save_bundle`), but only when the work is
    done; a command asks here first, so that an hour of optimization does not end in a refusal.
    Refused in one line naming ``flag`` and the way out.

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "decoders_s2.json").write_text("{}")
    >>> check_not_exported("--out", folder / "decoders_s2", force=False, name_flag="--name")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gcsim.app.common.UsageError: --out: '...decoders_s2' is an earlier export: pass --force to replace it, or ...
    >>> check_not_exported("--out", folder / "decoders_s2", force=True).name
    'decoders_s2'
    """
    stem = Path(target)
    if not force and any(os.path.lexists(f"{stem}{suffix}") for suffix in suffixes):
        other = f"another folder or {name_flag}" if name_flag else "another folder"
        raise UsageError(f"{flag}: {str(stem)!r} is an earlier export: pass --force to replace it, or choose {other}")
    return stem


def emit(args: argparse.Namespace, payload: dict[str, Any], text: str | Callable[[], str]) -> None:
    if getattr(args, "json", False):
        from ..io.manifest import to_jsonable

        print(json.dumps(to_jsonable(payload), sort_keys=True))
    else:
        print(text() if callable(text) else text)


def object_summary(obj: Any) -> dict[str, Any]:
    out = {
        "kind": getattr(obj, "kind", type(obj).__name__),
        "params": list(obj.params),
        "construction": getattr(obj, "construction", None),
    }
    shape = _assignment_shape(obj)  # straggler models and decoder tables have none
    if shape is not None:
        out.update(parts=int(shape[0]), workers=int(shape[1]))
    return out


def _assignment_shape(obj: Any) -> tuple[int, int] | None:
    """The assignment's (parts, workers) without forming a dense matrix beyond the limit."""
    from ..combinatorics.cyclic_design import CyclicDesign
    from ..errors import SizeLimitError

    try:
        assignment = getattr(obj, "assignment", None)
    except SizeLimitError:  # beyond the dense limit: a cyclic design is v x v, others keep a sparse incidence
        if isinstance(obj, CyclicDesign):
            return (obj.v, obj.v)
        parts, workers = obj.incidence.shape
        return (int(parts), int(workers))
    return None if assignment is None else (int(assignment.shape[0]), int(assignment.shape[1]))
