"""``gcsim construct / exists / load / catalogue``: the combinatorics layer and the catalogue."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ...errors import CatalogueError, GcsimError
from ..common import (
    EXIT_FAILURE,
    EXIT_NO,
    EXIT_OK,
    EXIT_UNKNOWN,
    UsageError,
    check_name,
    check_not_exported,
    check_output_dir,
    emit,
    int_arg,
    object_summary,
    output_path,
    path_errors,
)
from ..flags import DeprecatedAlias, deprecate
from ..specs import FAMILY_FORMS, FamilySpec, check_family_params, family_form
from .cerar import load_summary


def _build(family: str, numbers: list[int], args: argparse.Namespace, existence: bool = False):
    """The positional ``FAMILY PARAMS...`` of construct/exists, through the one family-spec parser."""
    spec = check_family_params("params", family, numbers, positional=True)
    if family == "biregular" and len(numbers) < 5:  # the seed: a fifth number, else --seed
        spec = FamilySpec(family, spec.params, getattr(args, "seed", 0))
    elif family == "biregular" and getattr(args, "seed", 0) not in (0, spec.seed):
        raise UsageError(f"--seed: {args.seed} disagrees with the seed {spec.seed} given as the fifth parameter")
    return spec.build("params", group=getattr(args, "group", "cyclic"), existence=existence, positional=True)


def _bundle_name(family: str, numbers: list[int]) -> str | None:
    """The name ``export_object`` gives the object ``construct FAMILY NUMBERS`` builds (its parameters), known
    before it is built; None when the numbers admit no design (the construction refuses them)."""
    if family == "bibd":
        v, k, lam = (*numbers, 1)[:3] if len(numbers) == 2 else numbers[:3]
        if k < 2 or (lam * (v - 1)) % (k - 1) or (lam * v * (v - 1)) % (k * (k - 1)):
            return None
        return "_".join(map(str, (v, lam * v * (v - 1) // (k * (k - 1)), lam * (v - 1) // (k - 1), k, lam)))
    return "_".join(map(str, numbers[:4] if family == "biregular" else numbers))


def _cmd_construct(args: argparse.Namespace) -> int:
    if args.out is not None:  # before the (possibly long) construction: the folder, then an earlier export
        check_output_dir("--out", args.out)
        check_name("--name", args.name)
        name = args.name if args.name is not None else _bundle_name(args.family, list(args.params))
        if name is not None:
            target = output_path("--out", args.out, args.family, name, name_flag="--name", suffixes=(".json", ".npz"))
            check_not_exported("--out", target, force=args.force, name_flag="--name")
    check_name("--name", args.name)
    obj = _build(args.family, args.params, args)
    obj.verify()
    payload = object_summary(obj)
    payload["verified"] = True
    if args.out:
        from ...catalogue.objects import export_object

        # the name export_object would choose, given explicitly: the path checked is the path written
        name = args.name if args.name is not None else "_".join(str(p) for p in obj.params)
        output_path("--out", args.out, obj.kind, name, name_flag="--name", suffixes=(".json", ".npz"))
        with path_errors("--out"):
            payload["exported"] = str(export_object(obj, args.out, name=name, overwrite=args.force))
    if args.matrix:
        payload["assignment"] = obj.assignment
    text = (
        f"{payload['kind']} {tuple(obj.params)} via {payload['construction']}: "
        f"{payload['parts']} parts x {payload['workers']} workers, verified"
    )
    if args.out:
        text += f"\nexported to {payload['exported']}"
    if args.matrix:
        text += "\n" + "\n".join("".join(str(int(x)) for x in row) for row in obj.assignment)
    emit(args, payload, text)
    return EXIT_OK


def _cmd_exists(args: argparse.Namespace) -> int:
    answer = _build(args.family, args.params, args, existence=True)
    word = {True: "exists", False: "does not exist", None: "unknown"}[answer]
    reason = None
    if answer is False:
        try:
            _build(args.family, args.params, args)
        except GcsimError as exc:
            reason = str(exc)
    emit(
        args,
        {"family": args.family, "params": args.params, "exists": answer, "reason": reason},
        f"{args.family} {tuple(args.params)}: {word}" + (f" ({reason})" if reason else ""),
    )
    # the answer is the exit status (as `test` and `grep -q`): scripts need not parse the output
    return {True: EXIT_OK, False: EXIT_NO, None: EXIT_UNKNOWN}[answer]


def _code_summary(code: Any, folder: Path) -> tuple[dict[str, Any], str]:
    """What ``gcsim load`` reports for an exported code folder: its three parts and the candidate."""
    from ...io.bundle import load_bundle

    files = code.manifest["files"]
    sha = {part: load_bundle(folder / str(files[part]))[1]["sha256"] for part in files}
    table = code.decoders
    payload: dict[str, Any] = {
        "kind": "code",
        "assignment": object_summary(code.assignment),
        "encoder": {"method": code.scheme.method, "n": code.scheme.n, "m": code.scheme.m},
        "decoders": None if table is None else {"patterns": len(table), "s_max": table.s_max},
        "candidate": code.manifest.get("candidate", {}).get("name"),
        "sha256": sha,
    }
    decoders = "no decoder table" if table is None else f"a decoder table of {len(table):,} patterns"
    text = (
        f"exported code: {code.assignment.kind} {list(code.assignment.params)}, encoder {code.scheme.method} "
        f"(n = {code.scheme.n}, m = {code.scheme.m}), {decoders}"
    )
    return payload, text


def _cmd_load(args: argparse.Namespace) -> int:
    from ...catalogue.codes import is_code_folder
    from ...catalogue.named import catalogue_path
    from ...catalogue.objects import load_object, load_problem
    from ...io.bundle import load_bundle

    if args.path == "":  # Path("") is "." (a name of spaces is a file name like any other)
        raise UsageError("path: is empty; give a bundle path or a name in the packaged catalogue (pg2_9, ...)")
    path = catalogue_path(args.path)  # a file on disk, else a name in the packaged catalogue
    problem = load_problem(path)  # nothing there, or a folder of exported codes: the library's message
    if problem is not None:
        hint = "" if Path(path).exists() else "; it is no name in the packaged catalogue either (gcsim catalogue)"
        raise UsageError(f"path: {problem}{hint}")
    try:
        if is_code_folder(path):  # an exported code: assignment, encoder, decoders, advice.json
            code = load_object(path)
            payload, summary = _code_summary(code, Path(path))
            payload["verified"] = True
            payload["path"] = args.path
            emit(args, payload, f"{args.path}: {summary}; every part loaded and verified")
            return EXIT_OK
        _, manifest = load_bundle(path)
        kind = manifest["metadata"].get("kind")
        obj = load_object(path)  # every kind, CERAR designs included, re-verified from the file
        if kind == "cerar":
            payload, summary = load_summary(obj)
        else:
            payload = object_summary(obj)
            summary = f"{payload.get('kind')} {payload.get('params', '')}"
        payload["verified"] = True
    except CatalogueError as exc:  # a refusal is a diagnostic: stderr (with --json, the JSON object on stdout)
        if args.json:
            emit(args, {"path": args.path, "verified": False, "error": str(exc)}, "")
        print(
            f"gcsim: error: refused: {str(exc).strip().splitlines()[0] if str(exc).strip() else exc}", file=sys.stderr
        )
        return EXIT_FAILURE
    payload["path"] = args.path
    payload["sha256"] = manifest["sha256"]
    emit(args, payload, f"{args.path}: {summary}, loaded and verified (sha256 {manifest['sha256'][:12]}...)")
    return EXIT_OK


#: ``--export`` given without a folder (``--dir DIR --export``, deprecated: ``--out DIR``)
_BARE = "\0bare"


def _cmd_catalogue(args: argparse.Namespace) -> int:
    from ..catalogue_report import catalogue_table, format_table, table_ok
    from ..paths import inside_installed_package, packaged_catalogue

    flag = "--dir"  # the flag that named the folder, for the messages
    if args.out == _BARE:  # `--dir DIR --export`, the spelling before --out DIR: export into --dir
        export = True
    elif args.out is not None:  # --out DIR: check against DIR and write what it lacks
        if args.dir is not None and Path(args.dir) != Path(args.out):
            raise UsageError(f"--out: {args.out!r} differs from --dir {args.dir!r}; give one folder")
        args.dir, export, flag = args.out, True, "--out"
    else:
        export = False
    if (export or args.force) and args.dir is None:  # writes only into a folder named on the command line
        which = "--out" if export else "--force"
        raise UsageError(f"{which}: give the folder to write into, a folder of your own: --out DIR")
    if args.dir is None:
        args.dir = str(packaged_catalogue())
    if (export or args.force) and inside_installed_package(args.dir):
        raise UsageError(
            f"{flag}: {args.dir!r} is inside the installed gcsim package (read-only); "
            "give --out DIR, a folder of your own, to export"
        )
    if export or args.force:
        check_output_dir(flag, args.dir)
    elif Path(args.dir).exists() and not Path(args.dir).is_dir():  # a missing folder: every file "missing"
        raise UsageError(f"{flag}: {args.dir!r} exists and is not a folder")
    with path_errors(flag):
        rows = catalogue_table(directory=args.dir, export=export, force=args.force, flag=flag)
    ok = table_ok(rows)
    emit(args, {"rows": rows, "ok": ok}, lambda: format_table(rows))
    return EXIT_OK if ok else EXIT_FAILURE


def register(sub, add) -> None:
    """Add ``construct``, ``exists``, ``load`` and ``catalogue`` to the ``gcsim`` parser."""
    p = add(
        "construct",
        _cmd_construct,
        "build and verify a combinatorial object",
        "examples:\n  gcsim construct bibd 91 10 1\n  gcsim construct srg 10 3 0 1 --matrix\n"
        "  gcsim construct biregular 40 20 3 6 --seed 1 --out my_designs",
    )
    p.add_argument(
        "family",
        choices=sorted(FAMILY_FORMS),
        help=", ".join(family_form(f, positional=True) for f in FAMILY_FORMS),
    )
    p.add_argument("params", type=int_arg(), nargs="+", help="the family's integer parameters")
    p.add_argument("--group", default="cyclic", choices=["cyclic", "elementary"], help="coset graphs: group")
    p.add_argument("--seed", type=int_arg(0), default=0, help="seed of randomized constructions")
    p.add_argument(
        "--out",
        metavar="DIR",
        help="output folder DIR: the object is exported into it, a catalogue folder (<kind>/<name>)",
    )
    deprecate(p, "--export", "--out", note="--out is the output folder of every command")
    p.add_argument("--name", help="the name of the bundle in the catalogue (default: the parameters)")
    p.add_argument("--force", action="store_true", help="replace an existing catalogue file")
    p.add_argument("--matrix", action="store_true", help="print the 0/1 assignment matrix")

    p = add(
        "exists",
        _cmd_exists,
        "three-valued existence: exists / does not exist / unknown",
        "exit status: 0 exists, 3 does not exist, 4 unknown (2: bad usage)\n"
        "examples:\n  gcsim exists bibd 43 7 1\n  gcsim exists srg 28 9 0 4 --json",
    )
    p.add_argument("family", choices=["bibd", "srg"])
    p.add_argument("params", type=int_arg(), nargs="+")

    p = add(
        "load",
        _cmd_load,
        "load anything gcsim exports and re-verify it from the files alone",
        "examples:\n  gcsim load pg2_9                   # a named instance of the packaged catalogue\n"
        "  gcsim load cerar/optimized_N4_c8_kappa10\n  gcsim load my_designs/coset/27_2_5\n"
        "  gcsim load advice/rank1_bibd_rd      # a folder written by `gcsim advise --out advice`\n"
        "  gcsim load advice/rank1_bibd_rd/encoder   # one of its parts",
    )
    p.add_argument(
        "path",
        help="bundle stem, .json or .npz path (a design, graph, encoder, decoder table or CERAR design); "
        "a folder written by `gcsim advise --out`; or a name in the packaged catalogue (pg2_9, srg/petersen)",
    )

    p = add(
        "catalogue",
        _cmd_catalogue,
        "build, verify (and export) the named instances; print a table",
        "examples:\n  gcsim catalogue                      # against the catalogue shipped with gcsim\n"
        "  gcsim catalogue --out my_designs",
    )
    p.add_argument(
        "--dir",
        default=None,
        help="catalogue folder (default: the catalogue shipped with gcsim, read-only when installed)",
    )
    p.add_argument(
        "--out",
        metavar="DIR",
        default=None,
        help="output folder DIR: the catalogue files it lacks are exported into it (checked against DIR)",
    )
    # before --out DIR: --export DIR, and before that --dir DIR --export (a folder-less switch)
    p.add_argument(
        "--export",
        dest="out",
        nargs="?",
        const=_BARE,
        action=DeprecatedAlias,
        new="--out DIR",
        note="--out is the output folder of every command",
        default=argparse.SUPPRESS,
        help=argparse.SUPPRESS,
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace (rewrite) the catalogue files in the folder (--out DIR or --dir DIR)",
    )
