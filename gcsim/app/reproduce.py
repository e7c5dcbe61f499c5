"""``gcsim reproduce``: regenerate the headline results of every layer.

Each *stage* writes into ``<out>/<stage>/`` its tables (CSV/JSON), figures (PNG)
and a ``manifest.json`` (parameters, seed, provenance, timings, status, and the
size and SHA-256 of every output file).  ``<out>/manifest.json`` indexes the stages, and
``<out>/index.md`` (:func:`write_results_index`) lists every figure with one line each, then
the tables and the manifests, stage by stage, linked; the run ends by naming it.

Resuming is safe:

* a stage is skipped only if its manifest says ``"ok"`` for the same parameters
  **and** every output file it lists still exists as a regular file with the
  recorded size and SHA-256; a deleted, truncated or edited output makes the
  stage run again (the reason is printed);
* the stage manifest is the commit record: it is removed *before* a stage runs
  (also with ``force``) and written, atomically, only *after* all its outputs are
  complete, so a run killed at any point never leaves an ``"ok"`` manifest beside
  missing or half-new outputs;
* stage outputs are written through temporary files and atomic renames
  (:func:`gcsim.io.manifest.atomic_path`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import os
import time
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

from .._validation import check_bool, check_int
from ..errors import InvalidArgumentError
from ..io.manifest import (
    FileRefusedError,
    atomic_write_text,
    check_folder,
    dumps,
    provenance,
    read_json_object,
    sha256_file,
)
from ..sweep import check_scheduler, sweep_client
from .common import output_path
from .help_texts import PAPER_ONLY, PAPERS
from .stages import agc, agc_paper, catalogue, cerar, cerar_training, ddp, training

__all__ = [
    "run_reproduce",
    "STAGES",
    "PAPERS",
    "PAPER_ONLY",
    "available_stages",
    "demo_stages",
    "paper_stages",
    "check_stage_outputs",
    "STAGE_MANIFEST_VERSION",
    "INDEX_NAME",
    "closing_lines",
    "write_results_index",
]

#: The stages in execution order: name -> function(out_dir, full, seed, progress[, scheduler=])
#: -> summary dict (``ok``, ``files``, ``text``, optionally ``inputs`` and ``figures``: figure file ->
#: its one-line caption, shown in the results index); a stage with a ``scheduler``
#: keyword gets the run's scheduler (:func:`gcsim.sweep.run_sweep`) for its independent items.  The
#: ddp stage needs torch (an optional dependency).  ``inputs`` names the files of *other* stages a
#: stage read (paths relative to the results folder, e.g. ``"training/claims.csv"``): their checksums
#: are recorded, and the stage is run again when one of them changes, appears or disappears.  A stage
#: reading another's outputs comes after it here.
STAGES: dict[str, Callable[..., dict[str, Any]]] = {
    "catalogue": catalogue.catalogue_stage,
    "agc": agc.agc_stage,
    "cerar": cerar.cerar_stage,
    "training": training.training_stage,
    "agc-paper": agc_paper.agc_paper_stage,  # reads training/claims.csv
    "ddp": ddp.ddp_stage,
    "cerar-training": cerar_training.cerar_training_stage,  # root only (emulated links)
}
_NEEDS_TORCH = ("ddp", "cerar-training")

#: The experiments of each paper (:data:`PAPERS`) and the stages run only when asked for
#: (:data:`PAPER_ONLY`) are defined in :mod:`gcsim.app.help_texts` (the parser shows them).

#: Layout version of the stage manifests; 2 added the per-file checksums (older manifests are rerun).
STAGE_MANIFEST_VERSION = 2
_MAX_MANIFEST_BYTES = 64 << 20
#: The results index, written into the results folder after every run (:func:`write_results_index`).
INDEX_NAME = "index.md"
#: The outputs the index lists as figures (one line each, with the stage's caption).
FIGURE_SUFFIXES = (".png", ".svg", ".pdf")


def available_stages() -> dict[str, Callable[..., dict[str, Any]]]:
    """The stages this installation can run, in order (without torch, the ddp stage is left out)."""
    has_torch = importlib.util.find_spec("torch") is not None  # find_spec does not import torch
    return {name: func for name, func in STAGES.items() if has_torch or name not in _NEEDS_TORCH}


def demo_stages() -> list[str]:
    """The stages plain ``gcsim reproduce`` (``make demo``) runs: the available ones not in :data:`PAPER_ONLY`."""
    return [name for name in available_stages() if name not in PAPER_ONLY]


def paper_stages(papers: list[str] | str) -> list[str]:
    """The stages of the named papers (:data:`PAPERS`), in :data:`STAGES` order.

    A paper stage this installation cannot run (the ddp stage without torch) is refused by
    :func:`run_reproduce`, naming it; an unknown paper is refused here.

    Examples
    --------
    >>> from gcsim.app.reproduce import paper_stages
    >>> paper_stages("cerar")
    ['cerar', 'ddp', 'cerar-training']
    """
    names = [papers] if isinstance(papers, str) else papers
    if not isinstance(names, list) or not names or not all(isinstance(p, str) for p in names):
        raise InvalidArgumentError("paper", f"must be a paper name or a list of them, got {papers!r}")
    unknown = [p for p in names if p not in PAPERS]
    if unknown:
        raise InvalidArgumentError("paper", f"unknown paper(s) {unknown}; known: {sorted(PAPERS)}")
    wanted = {stage for p in names for stage in PAPERS[p]}
    ordered = [stage for stage in STAGES if stage in wanted]
    return ordered + sorted(wanted - set(ordered))  # a listed stage missing from STAGES: refused later


def _output_name(stage_dir: Path, name: Any) -> Path:
    """The output ``name`` of a stage as a path inside ``stage_dir`` (relative, no ``..``)."""
    if not isinstance(name, str) or not name or "\x00" in name or "\\" in name:
        raise ValueError(f"output name {name!r} is not a relative file name")
    pure = PurePosixPath(name)
    if pure.is_absolute() or any(part in ("..", ".", "") for part in pure.parts) or name.endswith("/"):
        raise ValueError(f"output name {name!r} is not a relative path inside the stage folder")
    return stage_dir.joinpath(*pure.parts)


def _checksums(stage_dir: Path, files: list[Any]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """``name -> {sha256, size_bytes}`` of the outputs, and the problems found (missing, not a file, ...)."""
    records: dict[str, dict[str, Any]] = {}
    problems = []
    for name in files:
        try:
            path = _output_name(stage_dir, name)
            size = os.stat(path).st_size
            records[name] = {"sha256": sha256_file(path), "size_bytes": size}
        except FileNotFoundError:
            problems.append(f"output {name} was not written")
        except (ValueError, OSError) as exc:
            problems.append(f"output {name}: {exc}")
    return records, problems


def _input_checksums(out: Path, inputs: list[Any]) -> tuple[dict[str, str | None], list[str]]:
    """``name -> SHA-256`` (``None``: absent) of the other stages' files a stage read, and the problems found."""
    sums: dict[str, str | None] = {}
    problems = []
    for name in inputs:
        try:
            path = _output_name(out, name)
            sums[name] = sha256_file(path) if os.path.lexists(path) else None
        except (ValueError, OSError, FileRefusedError) as exc:
            problems.append(f"input {name}: {exc}")
    return sums, problems


def check_stage_outputs(stage_dir: str | Path, params: dict[str, Any] | None = None) -> str | None:
    """Why the results in ``stage_dir`` cannot be reused, or ``None`` if they can.

    They can when ``stage_dir/manifest.json`` is a valid stage manifest (of this layout
    version) with status ``"ok"``, the same ``params`` (if given), every output it
    lists is a regular file with the recorded size and SHA-256, and every input it read
    from another stage (``inputs``, relative to ``stage_dir``'s parent) is as it was then.
    """
    stage_dir = Path(stage_dir)
    manifest_path = stage_dir / "manifest.json"
    try:
        old = read_json_object(manifest_path, _MAX_MANIFEST_BYTES)
    except FileNotFoundError:
        return "no manifest (never run, or the last run did not finish)"
    except (OSError, ValueError) as exc:
        return f"manifest unreadable ({exc})"
    if params is not None and old.get("params") != params:
        return f"parameters changed ({old.get('params')} -> {params})"
    if old.get("status") != "ok":
        return f"last status {old.get('status')!r}"
    files, sums = old.get("files"), old.get("checksums")
    if (
        old.get("manifest_version") != STAGE_MANIFEST_VERSION
        or not isinstance(sums, dict)
        or not isinstance(files, list)
        or set(files) != set(sums)
    ):
        return "manifest has no output checksums (written by an older gcsim)"
    for name in files:
        rec = sums[name]
        try:
            path = _output_name(stage_dir, name)
            if not isinstance(rec, dict) or os.stat(path).st_size != rec.get("size_bytes"):
                return f"output {name} was truncated or replaced (size differs from the manifest)"
            if sha256_file(path) != rec.get("sha256"):
                return f"output {name} was modified (checksum differs from the manifest)"
        except FileNotFoundError:
            return f"output {name} is missing"
        except (ValueError, OSError, FileRefusedError) as exc:
            return f"output {name}: {exc}"
    inputs = old.get("inputs", {})
    if not isinstance(inputs, dict):
        return "manifest inputs unreadable"
    now, problems = _input_checksums(stage_dir.parent, list(inputs))
    if problems:
        return problems[0]
    for name, digest in inputs.items():
        if now[name] != digest:
            state = "appeared" if digest is None else "disappeared" if now[name] is None else "changed"
            return f"input {name} {state} since the stage ran"
    return None


def _write_index(out: Path, params: dict[str, Any], stages: dict[str, Any]) -> None:
    """``<out>/manifest.json``: the latest status of every stage ever run into ``out``."""
    index_path = out / "manifest.json"
    merged: dict[str, Any] = {}
    with contextlib.suppress(OSError, ValueError):
        old = read_json_object(index_path, _MAX_MANIFEST_BYTES)
        if old.get("params") == params and isinstance(old.get("stages"), dict):
            merged.update(old["stages"])
    merged.update(stages)
    atomic_write_text(index_path, dumps({"params": params, "stages": merged, "provenance": provenance()}))


def _stage_order(names: list[str]) -> list[str]:
    """``names`` in :data:`STAGES` order, unknown ones (a stage of an older gcsim) last, sorted."""
    return [s for s in STAGES if s in names] + sorted(set(names) - set(STAGES))


def _md_link(text: str, target: str) -> str:
    """A Markdown link whose target survives spaces and parentheses (``<...>``) and whose text its brackets."""
    shown = text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")
    return f"[{shown}](<{target}>)"


def _one_line(text: Any, limit: int = 200) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def closing_lines(out: str | Path, index: str | Path) -> str:
    """The last lines of a run: where the results are, then the index file (what ``make demo`` ends with).

    >>> print(closing_lines("results", "results/index.md"))
    All results and manifests are in results/
    Index of every figure (one line each), table and manifest: results/index.md
    """
    return (
        f"All results and manifests are in {out}/\nIndex of every figure (one line each), table and manifest: {index}"
    )


def write_results_index(out: str | Path) -> Path:
    """Write ``<out>/index.md``: every figure of every stage with one line each, then its tables and manifest.

    Read from the results folder itself: the stages ``<out>/manifest.json`` lists (in
    :data:`STAGES` order) and each stage's own manifest (its status, its output files, and the
    captions its stage gave its figures; a figure without one gets a line naming its stage).  A
    stage whose manifest is missing or unreadable gets one line saying so.  Links are relative, so
    the index opens in any Markdown viewer (an editor, GitHub) from the results folder.

    Parameters
    ----------
    out : path
        The results folder of :func:`run_reproduce`.

    Returns
    -------
    pathlib.Path
        The index, ``<out>/index.md`` (written atomically).

    Examples
    --------
    >>> import json, tempfile
    >>> from pathlib import Path
    >>> out = Path(tempfile.mkdtemp())
    >>> (out / "cerar").mkdir()
    >>> record = {"status": "ok", "seconds": 1.5, "files": ["pareto.csv", "pareto.png"],
    ...           "figures": {"pareto.png": "error vs condition-number cap"}}
    >>> _ = (out / "cerar" / "manifest.json").write_text(json.dumps(record))
    >>> _ = (out / "manifest.json").write_text(json.dumps({"stages": {"cerar": {"status": "ok"}}}))
    >>> text = write_results_index(out).read_text()
    >>> print(text[text.index("## cerar"):].strip())  # doctest: +NORMALIZE_WHITESPACE
    ## cerar
    <BLANKLINE>
    Status: ok (1.5 s); [manifest](<cerar/manifest.json>)
    <BLANKLINE>
    Figures:
    <BLANKLINE>
    - [cerar/pareto.png](<cerar/pareto.png>): error vs condition-number cap
    <BLANKLINE>
    Tables and other files:
    <BLANKLINE>
    - [cerar/pareto.csv](<cerar/pareto.csv>)
    """
    out = Path(out)
    try:
        top = read_json_object(out / "manifest.json", _MAX_MANIFEST_BYTES)
        names = list(top.get("stages", {})) if isinstance(top.get("stages"), dict) else []
    except (OSError, ValueError, FileRefusedError):
        names = []
    figures_total = 0
    body: list[str] = []
    for name in _stage_order(names):
        body += [f"## {name}", ""]
        try:
            record = read_json_object(out / name / "manifest.json", _MAX_MANIFEST_BYTES)
        except (OSError, ValueError, FileRefusedError) as exc:
            body += [f"No stage manifest ({_one_line(exc)}): the stage did not finish; run it again.", ""]
            continue
        listed, given = record.get("files"), record.get("figures")
        files = [f for f in listed if isinstance(f, str)] if isinstance(listed, list) else []
        captions: dict[str, Any] = given if isinstance(given, dict) else {}
        seconds = record.get("seconds")
        took = f" ({seconds:.1f} s)" if isinstance(seconds, (int, float)) else ""
        body += [
            f"Status: {record.get('status', 'unknown')}{took}; {_md_link('manifest', f'{name}/manifest.json')}",
            "",
        ]
        figures = [f for f in files if f.lower().endswith(FIGURE_SUFFIXES)]
        others = [f for f in files if f not in figures]
        figures_total += len(figures)
        if figures:
            body += ["Figures:", ""]
            for f in figures:
                caption = captions.get(f) or f"a figure of the {name} stage"
                body.append(f"- {_md_link(f'{name}/{f}', f'{name}/{f}')}: {_one_line(caption)}")
            body.append("")
        if others:
            body += ["Tables and other files:", ""]
            body += [f"- {_md_link(f'{name}/{f}', f'{name}/{f}')}" for f in others]
            body.append("")
    head = [
        "# Results of gcsim reproduce",
        "",
        f"{figures_total} figures from {len(names)} stages, stage by stage: each figure with one line, then the "
        f"tables and other files, then the stage's manifest (parameters, timings, SHA-256 of every file). "
        f"{_md_link('manifest.json', 'manifest.json')} indexes the stages.",
        "",
    ]
    path = out / INDEX_NAME
    atomic_write_text(path, "\n".join(head + body).rstrip() + "\n")
    return path


def _takes_scheduler(stage: Callable[..., Any]) -> bool:
    try:
        return "scheduler" in inspect.signature(stage).parameters
    except (TypeError, ValueError):  # a callable without a signature
        return False


def _print_now(line: str) -> None:
    print(line, flush=True)


def _select_stages(stages: Any, papers: list[str] | str | None, known: dict[str, Any]) -> list[str]:
    """The stages :func:`run_reproduce` runs, in order, for its ``stages`` and ``papers`` (each name checked)."""
    if stages is not None and (isinstance(stages, str) or not all(isinstance(s, str) for s in stages)):
        raise InvalidArgumentError("stage", f"must be a list of stage names, got {stages!r}")
    if papers is not None:
        of_papers = paper_stages(papers)
        named = ", ".join([papers] if isinstance(papers, str) else papers)
        if stages:
            unknown = [s for s in stages if s not in known and s not in of_papers]
            if unknown:
                raise InvalidArgumentError("stage", f"unknown stage(s) {unknown}; known: {list(known)}")
            foreign = [s for s in stages if s not in of_papers]
            if foreign:
                raise InvalidArgumentError(
                    "stage",
                    f"stage(s) {foreign} are not experiments of paper {named} (its stages: {of_papers}); "
                    "drop the paper to run them",
                )
        chosen = list(stages) if stages else of_papers
        missing = [s for s in chosen if s not in known]
        if missing:
            why = "torch is not installed" if set(missing) <= set(_NEEDS_TORCH) else "not registered"
            raise InvalidArgumentError(
                "paper", f"stage(s) {missing} of paper {named} cannot run on this installation ({why})"
            )
    else:
        chosen = demo_stages() if not stages else list(stages)
    unknown = [s for s in chosen if s not in known]
    if unknown:
        raise InvalidArgumentError("stage", f"unknown stage(s) {unknown}; known: {list(known)}")
    return chosen


def _reused(name: str, stage_dir: Path) -> tuple[dict[str, Any], str]:
    """The summary entry and text of a stage whose valid results exist (:func:`check_stage_outputs`)."""
    manifest_path = stage_dir / "manifest.json"
    old = read_json_object(manifest_path, _MAX_MANIFEST_BYTES)
    files = [str(stage_dir / f) for f in old["files"]]
    entry = {
        "status": "skipped (results exist; --force to redo)",
        "ok": True,
        "files": files,
    }
    return entry, f"[{name}] results exist in {stage_dir} (skipped; use --force)\n" + str(old.get("text", ""))


def _run_stage(
    name: str,
    stage: Callable[..., dict[str, Any]],
    stage_dir: Path,
    out: Path,
    params: dict[str, Any],
    say: Callable[[str], Any] | None,
    scheduler: Callable[[], Any],
    args: tuple[bool, int, bool],
) -> tuple[dict[str, Any], str]:
    """Run one stage (``stage(stage_dir, full, seed, progress)``) and commit its manifest last.

    Returns its summary entry and its text: the status line and the stage's summary.  ``scheduler``
    gives the stages' scheduler (starting a cluster at the first call) to a stage that takes one.
    """
    manifest_path = stage_dir / "manifest.json"
    stage_dir.mkdir(parents=True, exist_ok=True)
    # the manifest goes first: a run killed from here on leaves no "ok" record behind
    with contextlib.suppress(FileNotFoundError):
        os.unlink(manifest_path)
    if say is not None:
        say(f"[{name}] running ...")
    t0 = time.perf_counter()
    # a stage that takes ``scheduler`` runs its independent items as tasks there
    extra = {"scheduler": scheduler()} if _takes_scheduler(stage) else {}
    result = stage(stage_dir, *args, **extra)
    seconds = time.perf_counter() - t0
    files = list(result.get("files", []))
    checksums, problems = _checksums(stage_dir, files)
    inputs, input_problems = _input_checksums(out, list(result.get("inputs", [])))
    problems += input_problems
    status = "ok" if result.get("ok", True) and not problems else "failed"
    text = result.get("text", "") + "".join(f"\n{p}" for p in problems)
    record = {
        "stage": name,
        "manifest_version": STAGE_MANIFEST_VERSION,
        "params": params,
        "status": status,
        "seconds": round(seconds, 3),
        "files": files,
        "checksums": checksums,
        "inputs": inputs,
        "figures": {f: _one_line(c) for f, c in dict(result.get("figures", {})).items() if f in files},
        "text": text,
        "provenance": provenance(),
    }
    atomic_write_text(manifest_path, dumps(record))  # last: commits the stage's results
    entry = {
        "status": status,
        "seconds": round(seconds, 2),
        "ok": status == "ok",
        "files": [str(stage_dir / f) for f in files],
    }
    return entry, f"[{name}] {status} in {seconds:.1f} s -> {stage_dir}\n{text}"


def run_reproduce(
    out: str | Path = "results",
    *,
    full: bool = False,
    force: bool = False,
    seed: int = 0,
    stages: list[str] | None = None,
    papers: list[str] | str | None = None,
    progress: bool = True,
    echo: Callable[[str], Any] | None = None,
    scheduler: Any = "serial",
    workers: int | None = None,
) -> dict[str, Any]:
    """Run the stages; returns a summary dict (``text``, ``ok``, per-stage status).

    Parameters
    ----------
    out : path
        Results folder (created); each stage writes into ``out/<stage>/``.
    full : bool
        Paper-scale runs instead of the quick ones.
    force : bool
        Run the stages even if valid results exist.
    seed : int
        Seed passed to every stage.
    stages : list of str, optional
        Stages to run, in this order (default: :func:`demo_stages`, every available stage not in
        :data:`PAPER_ONLY`).  With ``papers``, each must be one of those papers' stages: it narrows
        the papers' stages to these (a stage of no named paper is refused).
    papers : str or list of str, optional
        Papers (:data:`PAPERS`) whose stages to run, in :data:`STAGES` order.
    progress : bool
        Show the stages' progress bars; without ``echo``, also print one line per stage as it
        starts (and why existing results are not reused).
    echo : callable, optional
        Called with each line of news as it happens: the stage starting, why existing results are
        not reused, and each stage's summary text as soon as the stage ends (``summary["text"]``
        still collects them all).
    scheduler : "serial", "local", a Dask address ("tcp://host:8786") or a distributed.Client
        Where the stages run their independent items (experiments, fronts, training runs) as tasks
        (:func:`gcsim.sweep.run_sweep`); one cluster serves every stage and is started only if a
        stage runs.  The results are the same on every scheduler (every item carries its own seed),
        so results written by one scheduler are reused by another.
    workers : int, optional
        Worker processes of the ``"local"`` cluster (default: the CPU count).
    """
    full = check_bool("full", full)
    force = check_bool("force", force)
    progress = check_bool("progress", progress)
    out = check_folder("out", out)
    known = available_stages()
    chosen = _select_stages(stages, papers, known)
    check_scheduler(scheduler)
    if workers is not None:
        workers = check_int("workers", workers, minimum=1)
        if scheduler != "local":
            raise InvalidArgumentError("workers", "applies to scheduler='local' only")
    say = echo if echo is not None else (_print_now if progress else None)
    params = {"full": full, "seed": seed}
    summary: dict[str, Any] = {"out": str(out), "stages": {}, "ok": True}
    texts = []
    with contextlib.ExitStack() as stack:
        opened: list[Any] = []

        def stage_scheduler() -> Any:
            """The scheduler for the stages: a cluster is started when the first stage runs."""
            if not opened:
                client = stack.enter_context(sweep_client(scheduler, workers))
                opened.append("serial" if client is None else client)
            return opened[0]

        for name in chosen:
            stage_dir = output_path("out", out, name)  # no link planted in out may lead a stage outside it
            manifest_path = stage_dir / "manifest.json"
            if stage_dir.exists() and not stage_dir.is_dir():
                raise InvalidArgumentError("out", f"{stage_dir} exists and is not a folder")
            if os.path.lexists(manifest_path) and not (manifest_path.is_file() or manifest_path.is_symlink()):
                raise InvalidArgumentError("out", f"{manifest_path} exists and is not a file")
            if not force and os.path.lexists(manifest_path):
                reason = check_stage_outputs(stage_dir, params)
                if reason is None:
                    summary["stages"][name], text = _reused(name, stage_dir)
                    texts.append(text)
                    if echo is not None:
                        echo(texts[-1] + "\n")
                    _write_index(out, params, {name: summary["stages"][name]})
                    continue
                if say is not None:
                    say(f"[{name}] existing results not reused: {reason}")
            summary["stages"][name], text = _run_stage(
                name, known[name], stage_dir, out, params, say, stage_scheduler, (full, seed, progress)
            )
            summary["ok"] &= summary["stages"][name]["ok"]
            texts.append(text)
            if echo is not None:
                echo(texts[-1] + "\n")
            _write_index(out, params, {name: summary["stages"][name]})
    output_path("out", out, INDEX_NAME)  # no link planted in out may redirect the index
    index = write_results_index(out)
    summary["index"] = str(index)
    summary["text"] = "\n\n".join(texts) + f"\n\n{closing_lines(out, index)}"
    return summary
