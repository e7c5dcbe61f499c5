#!/usr/bin/env python
"""GPU check of the executor layer: CuPy evaluator vs NumPy, torch ring and CERAR hook on NCCL (gpu_check.sh).

Part 1 (CuPy; skipped with a message when CuPy or its device is missing): the reference workload of
benchmarks/README.md -- PG(2,9) = gcsim.bibd(91, 10, 1), m = 2, RD(0), ``--patterns`` random
straggler patterns with s = 20 -- through :func:`gcsim.executor.arrays.batched_optimal_error` on
NumPy and on CuPy, the *same* patterns.  Both are certified Gram-route values (the evaluator's
accuracy statement: ``|Δ| <= c p u κ(B_F)² mN``), so they may differ by at most the sum of the two
bounds, ``2 · lsq_err_tol(B_F, m, gram=True)`` per pattern (tests/executor_tolerances.py, built
from tests/tolerances.py: ``2 √(mN) · SAFETY · rows · cols · u · κ² · √(mN)``, κ over the
non-zero singular values of ``B_F``, at least that of ``B``); reports the largest difference over
its bound and the NumPy/CuPy time ratio.  Each backend is also checked against the analysis layer
(:func:`gcsim.coding.evaluate.optimal_error`, ≤ 1e-9 relative) and runs one gradient code and one
CERAR ring end to end, and a structured code at 2,257 workers without its dense ``B``
(:func:`structured_executor_check`: PG(2,47), the CuPy path is the array-API gathers).

Part 2 (torch with CUDA; skipped when torch sees no GPU): world size = number of GPUs, backend NCCL,
one rank per GPU: ``dist.all_reduce``, gcsim's ring all-reduce and (world size >= 2) CERAR with the
exact design c = N on d = 1,863,690 float32 (the large MLP's gradient), median times and ratios to
``dist.all_reduce``, and the largest relative difference from it; then (world size >= 2) DDP step
times of the MLP 784-1024-1024-10 at batch 32 per rank, plain DDP against the CERAR hook (exact
design, the hook's defaults, built through the public state API: ``make_hook_state`` and
``register_comm_hook(state, cerar_hook)``), and the hook with the lean schedule of theory §51.4
(``make_hook_state(design, schedule="lean")``, the exact design, c = 1 for N = 2: its measured peak
``peak_packets`` at most ``c + N + 2``, plus one for a partial last component), interleaved, medians of
the slowest rank; the hook's
public state after the steps (``wire_dtype`` float32, ``calls``, bytes, the ``precision`` check
passing), the replicas' drift (:func:`gcsim.executor.replicas.replica_drift`) and 0.0 after
:func:`~gcsim.executor.replicas.resync_parameters`.

Part 3 (torch with CUDA; skipped with part 2): gradient-coded training
(:class:`gcsim.executor.coded_training.CodedTrainer`) on NCCL, one rank per GPU: 13 coded workers
(cyclic repetition, 4 parts each, RD m = 2, from a decoder-table bundle of the patterns with at
most one straggler) over the ranks, the 117,858-parameter CNN on seeded random images,
Bernoulli(0.1) masks for ``--coded-steps`` steps; the replicas must end bit-identical and each
step's ``err(F)/(mN)`` equal NumPy's ``lstsq`` on ``B_F`` (1e-9); reports the step time, the coded
path's own share (encode, decoder, decode) and the bytes a rank sends.

Without any GPU (and without ``--dry-run``) it writes ``{"gpu": false, "status": "skipped", ...}``
and exits 0; with a GPU that neither CuPy nor torch in this venv can use (a CPU build of torch, no
CuPy), ``{"gpu": true, "status": "skipped", "reason": ...}``, exit 0 as well.  ``--dry-run`` runs
part 1 on NumPy only; ``--torch-cpu RANKS`` also runs parts 2 and 3 on gloo with CPU tensors and
RANKS ranks (their code, checked without a GPU).  ``--out DIR`` writes ``DIR/gpu_check.json``.
Exit status 0 = every check that ran passed (or nothing to run), 1 = a mismatch, 2 = CuPy was
explicitly required (``--require-cupy``) but is unusable.

    python benchmarks/gpu_check.py --dry-run --patterns 500     # CPU only (NumPy)
    python benchmarks/gpu_check.py --out /tmp/gpu               # on a GPU machine
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SAFETY = 10.0  # the constant of tests/tolerances.py
D_LARGE = 784 * 1024 + 1024 + 1024 * 1024 + 1024 + 1024 * 10 + 10  # the MLP 784-1024-1024-10


def _time(fn, repeats: int = 1, sync=None):
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        if sync is not None:
            sync()
        best = min(best, time.perf_counter() - t0)
    return out, best


def pattern_bounds(B: np.ndarray, masks: np.ndarray, m: int) -> np.ndarray:
    """Per pattern: the certified Gram-route bound on one computed err(B, F) (tests/executor_tolerances.py).

    ``max(lsq_err_tol(B_F, m, gram=True), lsq_err_tol(B, m, gram=True))``: the formula
    ``2 √(mN) · SAFETY · rows · cols · u · κ² · √(mN)`` with κ over B_F's non-zero singular values.
    """
    tests = str(ROOT / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    from executor_tolerances import lsq_err_tol

    kB = lsq_err_tol(B, m, gram=True)
    return np.array([max(lsq_err_tol(B[:, mk], m, gram=True), kB) for mk in np.asarray(masks, dtype=bool)])


def backends_agree(a: np.ndarray, b: np.ndarray, bound: np.ndarray) -> tuple[bool, float]:
    """Whether ``|a - b| <= 2 bound`` everywhere (both within ``bound`` of the exact value); the worst ratio."""
    a, b, bound = (np.asarray(v, dtype=float) for v in (a, b, bound))
    if a.shape != b.shape or a.shape != bound.shape:
        return False, float("inf")
    diff = np.abs(a - b)
    if not np.all(np.isfinite(diff)):
        return False, float("inf")
    ratio = diff / np.maximum(2.0 * bound, np.finfo(float).tiny)
    return bool(np.all(diff <= 2.0 * bound)), float(np.max(ratio, initial=0.0))


def _cupy_device() -> tuple[bool, str]:
    try:
        import cupy
    except Exception as exc:  # not installed (or its CUDA libraries missing)
        return False, f"CuPy not importable ({type(exc).__name__}: {exc}); CuPy part skipped"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return False, f"CuPy sees no CUDA device ({type(exc).__name__}: {exc}); CuPy part skipped"
    return (n > 0), (f"CuPy {cupy.__version__}, {n} device(s)" if n > 0 else "CuPy sees no CUDA device")


def _nvidia_smi_gpus() -> list[str]:
    """The GPUs ``nvidia-smi -L`` lists (empty when it is missing or fails)."""
    import shutil
    import subprocess

    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    try:
        p = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return []
    return [line for line in p.stdout.splitlines() if line.startswith("GPU")] if p.returncode == 0 else []


def _torch_gpus() -> int:
    try:
        import torch
    except Exception:
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def evaluator_check(args, report: dict, use_cupy: bool) -> None:
    """Part 1: the batched evaluator on NumPy (and CuPy), same patterns, against the bound."""
    import gcsim
    from gcsim.cerar.factory import design
    from gcsim.coding.evaluate import optimal_error
    from gcsim.coding.stragglers import FixedModel
    from gcsim.executor.arrays import batched_optimal_error, get_namespace, run_scheme
    from gcsim.executor.cerar_arrays import run_cerar

    report["workload"] = f"PG(2,9) m={args.m} RD(0), {args.patterns} patterns, s={args.s}"
    sch = gcsim.encode(gcsim.bibd(91, 10, 1), args.m, "rd", eps=0.0, seed=args.seed)
    masks = FixedModel(sch.n, args.s).sample(args.patterns, seed=args.seed + 1)
    ref, t_ref = _time(lambda: optimal_error(sch, masks, progress=False))
    report["analysis_layer_numpy_s"] = t_ref
    values: dict = {}
    for name in ["numpy", "cupy"] if use_cupy else ["numpy"]:
        xp = get_namespace(name)
        sync = None
        if name == "cupy":
            import cupy

            sync = cupy.cuda.Device().synchronize
            batched_optimal_error(sch, masks[:64], xp=xp, chunk=args.chunk)  # CUDA context, kernels
        vals, t = _time(lambda: batched_optimal_error(sch, masks, xp=xp, chunk=args.chunk), repeats=2, sync=sync)
        values[name] = vals
        rel = float(np.max(np.abs(vals - ref) / np.maximum(np.abs(ref), 1e-300)))
        report[f"{name}_batched_s"] = t
        report[f"{name}_max_rel_diff_vs_analysis"] = rel
        report[f"{name}_patterns_per_s"] = args.patterns / t
        if rel > 1e-9:
            report["ok"] = False
        rng = np.random.default_rng(args.seed)  # end to end on real arrays of this backend
        g = xp.asarray(rng.standard_normal((sch.num_parts, 4096)))
        r = run_scheme(sch, g, masks[0], xp=xp)
        report[f"{name}_run_scheme_rel_diff"] = abs(r.error - r.predicted_error) / max(r.error, 1e-300)
        rc = run_cerar(design(4, 8, "perturbation", eps=0.01), xp.asarray(rng.standard_normal((4, 1 << 16))), xp=xp)
        # relative to the largest worker error: worker N-1 decodes exactly (its error is round-off)
        report[f"{name}_run_cerar_rel_diff"] = float(
            np.max(np.abs(rc.errors - rc.predicted_errors)) / max(float(np.max(rc.predicted_errors)), 1e-300)
        )
        if report[f"{name}_run_scheme_rel_diff"] > 1e-9 or report[f"{name}_run_cerar_rel_diff"] > 1e-6:
            report["ok"] = False
        structured_executor_check(name, xp, sync, args.seed, report)
    if "cupy" in values:
        bound = pattern_bounds(sch.B, masks, args.m)
        agree, worst = backends_agree(values["numpy"], values["cupy"], bound)
        report["cupy_vs_numpy_max_abs_diff"] = float(np.max(np.abs(values["numpy"] - values["cupy"])))
        report["cupy_vs_numpy_max_diff_over_bound"] = worst  # <= 1 required
        report["cupy_vs_numpy_bound_formula"] = "2 * max(lsq_err_tol(B_F, m, gram=True), lsq_err_tol(B, m, gram=True))"
        report["cupy_vs_numpy_within_bound"] = agree
        report["speedup_cupy_over_numpy"] = report["numpy_batched_s"] / report["cupy_batched_s"]
        if not agree:
            report["ok"] = False


def structured_executor_check(name: str, xp, sync, seed: int, report: dict) -> None:
    """A structured code with no dense B on this backend: PG(2,47), 2,257 workers, m = 2, d = 1000.

    ``run_scheme`` on the ``StructuredRD`` (NumPy: scipy.sparse products; CuPy: the array-API
    gathers) on 2 Bernoulli(0.1) patterns; its residual ``‖B_F X − T‖²`` must equal the analysis'
    ``StructuredContext.errors`` to 1e-9 relative (Theorem 42.2 allows far less), and the measured
    error the predicted one.
    """
    from gcsim.coding.stragglers import straggler_model
    from gcsim.coding.structured import encode_structured
    from gcsim.combinatorics.geometries import pg_flats
    from gcsim.executor.arrays import run_scheme

    enc = encode_structured(pg_flats(2, 47), 2, seed=seed, points=2257)
    masks = straggler_model("bernoulli", enc.n, p=0.1).sample(2, seed=seed + 2)
    want = enc.context.errors(masks)
    g = xp.asarray(np.random.default_rng(seed).standard_normal((enc.num_parts, 1000)))
    run_scheme(enc, g, masks[0], xp=xp)  # kernels, allocations (not timed)
    runs, t = _time(lambda: [run_scheme(enc, g, mk, xp=xp) for mk in masks], sync=sync)
    rel = max(abs(r.residual - w) / w for r, w in zip(runs, want, strict=True))
    pred = max(abs(r.error - r.predicted_error) / max(r.error, 1e-300) for r in runs)
    report[f"{name}_structured_run_scheme_s_per_pattern"] = t / len(masks)
    report[f"{name}_structured_residual_rel_diff_vs_analysis"] = float(rel)
    report[f"{name}_structured_error_rel_diff_vs_predicted"] = float(pred)
    if rel > 1e-9 or pred > 1e-9:
        report["ok"] = False


def nccl_job(rank: int, world_size: int, spec: dict) -> dict:
    """One rank of part 2: collectives on CUDA tensors over NCCL, then DDP steps (module level: launched)."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    from gcsim.cerar import design
    from gcsim.cerar.ring import check_lean
    from gcsim.errors import InvalidArgumentError
    from gcsim.executor.collectives import cerar_all_reduce, ring_all_reduce
    from gcsim.executor.ddp_hook import cerar_hook, make_hook_state
    from gcsim.executor.replicas import replica_drift, resync_parameters

    cuda = spec.get("device", "cuda") == "cuda"
    dev = torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device("cpu")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    g = torch.randn(spec["d"], generator=torch.Generator().manual_seed(rank)).to(dev)
    algos: dict = {"allreduce": lambda t: (dist.all_reduce(t), t)[1], "ring": ring_all_reduce}
    if world_size >= 2:
        exact = design(world_size, world_size, "exact")
        algos["cerar exact c=N"] = lambda t: cerar_all_reduce(t, exact, out=t)
    times: dict = {n: [] for n in algos}
    outs: dict = {}
    for it in range(spec["warmup"] + spec["repeats"]):
        for n, fn in algos.items():
            t = g.clone()
            sync()
            dist.barrier()
            t0 = time.perf_counter()
            r = fn(t)
            sync()
            if it >= spec["warmup"]:
                times[n].append(time.perf_counter() - t0)
            outs[n] = r
    # every algorithm is a float32 sum of the N gradients (CERAR's exact design too: 0/1 coefficients), each
    # within γ_N Σ_i |g_i| of the exact sum per element (Higham Thm 3.1; SAFETY as in tests/tolerances.py),
    # so two of them differ by at most twice that
    sabs = g.abs().double()
    dist.all_reduce(sabs)
    nu = world_size * 2.0**-24
    bound = 2 * SAFETY * nu / (1 - nu) * sabs
    ref = outs["allreduce"].double()
    res: dict = {
        "collective_seconds": times,
        "max_diff_over_bound": {
            n: float(((o.double() - ref).abs() / bound.clamp_min(1e-300)).max()) for n, o in outs.items()
        },
    }
    if world_size >= 2:
        widths = (784, 1024, 1024, 10)

        def make():
            torch.manual_seed(0)
            layers: list = []
            for a, b in zip(widths[:-1], widths[1:], strict=True):
                layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
            return torch.nn.Sequential(*layers[:-1]).to(dev)

        # the lean schedule needs the shift pattern (theory §51.4): the exact c = N design has it from N = 3;
        # for N = 2 (one peer both ways) the exact c = 1 design
        lean_design = exact
        try:
            check_lean(exact.encoders, exact.decoders)
        except InvalidArgumentError:
            lean_design = design(world_size, 1, "exact")
        variants = {}
        for name in ("plain DDP", "CERAR exact hook", "CERAR lean hook"):
            model = DDP(make(), device_ids=[dev.index] if cuda else None)
            state = None
            if name != "plain DDP":  # the public state API: build the state, register it (a wrapper could) yourself
                lean = name == "CERAR lean hook"
                state = make_hook_state(lean_design if lean else exact, schedule="lean" if lean else "default")
                model.register_comm_hook(state, cerar_hook)
            variants[name] = (model, torch.optim.SGD(model.parameters(), lr=0.01), state)
        gen = torch.Generator().manual_seed(100 + rank)
        x = torch.randn(spec["batch"], widths[0], generator=gen).to(dev)
        y = torch.randint(0, widths[-1], (spec["batch"],), generator=gen).to(dev)
        steps: dict = {n: [] for n in variants}
        names = list(variants)
        for it in range(spec["warmup"] + spec["steps"]):
            for n in names[it % 2 :] + names[: it % 2]:
                model, opt, _ = variants[n]
                sync()
                dist.barrier()
                t0 = time.perf_counter()
                opt.zero_grad()
                torch.nn.functional.cross_entropy(model(x), y).backward()
                opt.step()
                sync()
                if it >= spec["warmup"]:
                    steps[n].append(time.perf_counter() - t0)
        flat = {n: torch.cat([p.detach().reshape(-1) for p in v[0].parameters()]) for n, v in variants.items()}
        res["ddp_step_seconds"] = steps
        res["ddp_max_param_diff"] = float((flat["plain DDP"] - flat["CERAR exact hook"]).abs().max())
        res["hook_state"] = hook_state_summary(variants["CERAR exact hook"][2])
        # the lean schedule (theory §51.4) in the same steps: the same training up to float32 round-off
        res["lean_max_param_diff_vs_default"] = float((flat["CERAR lean hook"] - flat["CERAR exact hook"]).abs().max())
        res["lean_hook_state"] = hook_state_summary(variants["CERAR lean hook"][2])
        hooked = variants["CERAR exact hook"][0]
        res["hook_replica_drift"] = replica_drift(hooked)  # max |θ_i − θ_0| over the ranks, after the steps
        resync_parameters(hooked)
        res["hook_replica_drift_after_resync"] = replica_drift(hooked)  # 0.0: bit-identical
        for _, _, state in variants.values():
            if state is not None:
                state.close()
    return res


def hook_state_summary(state) -> dict:
    """The CERAR hook's public state after the steps (:class:`gcsim.executor.ddp_hook.CerarHookState`)."""
    prec = state.precision
    return {
        "wire_dtype": str(state.wire_dtype),
        "compute_dtype": str(state.compute_dtype),
        "calls": state.calls,
        "bytes_sent": state.counter.sent,
        "precision_ok": None if prec is None else bool(prec.ok),
        "precision_ratio": None if prec is None else float(prec.ratio),
        "schedule": state.schedule,
        "peak_packets": state.peak_packets,
        "c": state.design.c,
        "N": state.design.N,
    }


def coded_job(rank: int, world_size: int, spec: dict) -> dict:
    """One rank of part 3: gradient-coded training (:class:`CodedTrainer`) of the 117,858-parameter CNN.

    The code is the decoder-table bundle ``spec["code"]`` (13 coded workers over the ranks), the data
    seeded random 28 x 28 images, the stragglers Bernoulli(0.1) masks (``model.sample(steps, seed)``);
    CUDA tensors on NCCL, CPU tensors on gloo.  Returns each step's ``err(F)/(mN)``, stragglers,
    decoder source, seconds and bytes, and the parameter digest.
    """
    import torch

    from gcsim.coding.stragglers import straggler_model
    from gcsim.executor.coded_training import CodedTrainer
    from gcsim.learning.coded_training import small_cnn

    cuda = spec.get("device", "cuda") == "cuda"
    dev = torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device("cpu")
    torch.manual_seed(0)
    net = small_cnn().to(dev)
    gen = torch.Generator().manual_seed(7)
    count = 13 * 2 * spec["batch"]
    data = torch.utils.data.TensorDataset(
        torch.randn(count, 1, 28, 28, generator=gen), torch.randint(0, 10, (count,), generator=gen)
    )
    trainer = CodedTrainer(
        spec["code"], net, torch.optim.SGD(net.parameters(), lr=0.01), data, batch_size=spec["batch"]
    )
    model = straggler_model("bernoulli", trainer.n, p=0.1)
    report = trainer.train(spec["steps"], model, seed=spec["seed"], expected=False)
    if cuda:
        torch.cuda.synchronize()
    return {
        "digest": report.digest,
        "d": trainer.d,
        "opt_errors": [r.opt_error for r in report.records],
        "stragglers": [r.stragglers for r in report.records],
        "rel_errors": [r.rel_error for r in report.records],
        "seconds": [r.seconds for r in report.records],
        "bytes_sent": [r.bytes_sent for r in report.records],
        "table_lookups": report.table_lookups,
        "fallbacks": report.fallbacks,
    }


def coded_check(args, report: dict, ranks: int, *, cpu: bool = False) -> None:
    """Part 3: :class:`gcsim.executor.coded_training.CodedTrainer` on NCCL (one rank per GPU) or gloo (``cpu``).

    13 coded workers (cyclic repetition, 4 parts each, RD m = 2, a decoder table of the patterns
    with at most one straggler) over ``ranks`` ranks.  Checks: every rank ends with the same
    parameter digest (bit-identical replicas), and each step's ``err(F)/(mN)`` equals NumPy's
    ``lstsq`` on ``B_F`` for the same Bernoulli(0.1) mask (1e-9 absolute: both are optimal errors
    of a well-conditioned ``B_F``).  Reports the median step time of the slowest rank, the coded
    path's own share (encode, decoder, decode) and the bytes a rank sends.
    """
    import tempfile

    import gcsim
    from gcsim.coding.decoder_table import decoder_table
    from gcsim.coding.schemes import cyclic_repetition_assignment
    from gcsim.coding.stragglers import straggler_model
    from gcsim.executor.launcher import launch

    sch = gcsim.encode(cyclic_repetition_assignment(13, 4), 2, "rd", eps=0.1, seed=args.seed)
    table = decoder_table(sch, s_max=1)
    backend = "gloo" if cpu else "nccl"
    with tempfile.TemporaryDirectory(prefix="gpu-check-code-") as tmp:
        path = str(table.export(Path(tmp) / "decoders_s1"))
        spec = {
            "code": path,
            "steps": args.coded_steps,
            "batch": 8,
            "seed": args.seed,
            "device": "cpu" if cpu else "cuda",
        }
        res = launch(coded_job, ranks, (spec,), backend=backend, timeout=args.nccl_timeout).raise_on_failure()
    rows = res.results
    masks = straggler_model("bernoulli", sch.n, p=0.1).sample(args.coded_steps, args.seed)
    T = np.kron(np.eye(sch.m), np.ones((sch.num_parts, 1)))
    want = []
    for mk in masks:
        X = np.linalg.lstsq(sch.B[:, mk], T, rcond=None)[0]
        want.append(float(np.sum((sch.B[:, mk] @ X - T) ** 2)) / (sch.m * sch.num_parts))
    diff = max(abs(a - b) for a, b in zip(rows[0]["opt_errors"], want, strict=True))
    same_masks = rows[0]["stragglers"] == [np.flatnonzero(~mk).tolist() for mk in masks]
    identical = len({r["digest"] for r in rows}) == 1
    step = np.max([[sum(s.values()) for s in r["seconds"]] for r in rows], axis=0)
    own = np.max([[s["encode"] + s["decoder"] + s["decode"] for s in r["seconds"]] for r in rows], axis=0)
    out = {
        "backend": backend,
        "world_size": ranks,
        "coded_workers": sch.n,
        "m": sch.m,
        "d": rows[0]["d"],
        "steps": args.coded_steps,
        "replicas_identical": identical,
        "masks_as_the_model": same_masks,
        "max_opt_error_diff_vs_lstsq": diff,
        "max_rel_gradient_error": float(np.nanmax(rows[0]["rel_errors"])),
        "table_lookups": rows[0]["table_lookups"],
        "fallbacks": rows[0]["fallbacks"],
        "median_step_seconds": float(np.median(step)),
        "coded_overhead_fraction": float(np.median(own / step)),
        "bytes_sent_per_step": rows[0]["bytes_sent"][-1],
    }
    if not (identical and same_masks and diff <= 1e-9 and np.isfinite(out["max_rel_gradient_error"])):
        report["ok"] = False
    report["coded_cpu" if cpu else "coded_nccl"] = out


def nccl_check(args, report: dict, gpus: int, *, cpu: bool = False) -> None:
    """Part 2: launch one rank per GPU on NCCL and summarise (medians of the slowest rank).

    ``cpu``: the same job on gloo with CPU tensors and ``gpus`` ranks (``--torch-cpu``: exercises
    this code where there is no GPU; the report goes under ``"torch_cpu"``, not ``"nccl"``).
    """
    from gcsim.executor.launcher import launch

    spec = {
        "d": args.d,
        "repeats": args.repeats,
        "warmup": 1 if cpu else 3,
        "steps": args.steps,
        "batch": args.batch,
        "device": "cpu" if cpu else "cuda",
    }
    backend = "gloo" if cpu else "nccl"
    res = launch(nccl_job, gpus, (spec,), backend=backend, timeout=args.nccl_timeout).raise_on_failure()
    out: dict = {"world_size": gpus, "backend": backend, "d": args.d, "dtype": "float32"}
    if gpus < 2:
        out["cerar"] = "skipped: CERAR needs a ring of at least 2 ranks (one rank per GPU on NCCL)"
    coll = {}
    base = None
    for n in res.results[0]["collective_seconds"]:
        med = float(np.median(np.max([r["collective_seconds"][n] for r in res.results], axis=0)))
        base = med if n == "allreduce" else base
        worst = max(r["max_diff_over_bound"][n] for r in res.results)
        coll[n] = {"median_seconds": med, "ratio_to_allreduce": med / base, "max_diff_vs_allreduce_over_bound": worst}
        if not worst <= 1.0:  # the bound: 2 SAFETY γ_N Σ_i |g_i| per element (float32)
            report["ok"] = False
    out["collectives"] = coll
    if "ddp_step_seconds" in res.results[0]:
        st = {
            n: float(np.median(np.max([r["ddp_step_seconds"][n] for r in res.results], axis=0)))
            for n in res.results[0]["ddp_step_seconds"]
        }
        out["ddp"] = {
            "model": "MLP 784-1024-1024-10",
            "batch_per_rank": args.batch,
            "median_step_seconds": st,
            "ratio_hook_to_plain": st["CERAR exact hook"] / st["plain DDP"],
            "max_param_diff_after_steps": max(r["ddp_max_param_diff"] for r in res.results),
            "hook_state": res.results[0]["hook_state"],
            "hook_replica_drift": max(r["hook_replica_drift"] for r in res.results),
            "hook_replica_drift_after_resync": max(r["hook_replica_drift_after_resync"] for r in res.results),
            "ratio_lean_hook_to_plain": st["CERAR lean hook"] / st["plain DDP"],
            "lean_max_param_diff_vs_default": max(r["lean_max_param_diff_vs_default"] for r in res.results),
            "lean_hook_state": res.results[0]["lean_hook_state"],
        }
        lean = res.results[0]["lean_hook_state"]
        # theory §51.4: at most c + N + 2 packets of ceil(d/c), the bucket's own included (+1: a partial last one)
        if lean["calls"] < 1 or not 0 < max(r["lean_hook_state"]["peak_packets"] for r in res.results) <= (
            lean["c"] + lean["N"] + 3
        ):
            report["ok"] = False
        hs = res.results[0]["hook_state"]
        if (
            hs["wire_dtype"] != "torch.float32"
            or hs["calls"] < 1
            or hs["bytes_sent"] <= 0
            or hs["precision_ok"] is not True
            or out["ddp"]["hook_replica_drift_after_resync"] != 0.0
        ):
            report["ok"] = False
    report["torch_cpu" if cpu else "nccl"] = out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--patterns", type=int, default=10_000)
    ap.add_argument("--s", type=int, default=20)
    ap.add_argument("--m", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--chunk", type=int, default=4096)
    ap.add_argument("--repeats", type=int, default=10, help="timed collectives per algorithm (part 2)")
    ap.add_argument("--steps", type=int, default=30, help="timed DDP steps per variant (part 2)")
    ap.add_argument("--batch", type=int, default=32, help="per-rank batch of the DDP steps (part 2)")
    ap.add_argument("--d", type=int, default=D_LARGE, help="gradient length of the collectives (part 2)")
    ap.add_argument(
        "--torch-cpu",
        type=int,
        default=0,
        metavar="RANKS",
        help="also run part 2 on gloo with CPU tensors and RANKS ranks (a check of its code without a GPU)",
    )
    ap.add_argument(
        "--coded-steps", type=int, default=20, help="steps of the gradient-coded training (part 3, CodedTrainer)"
    )
    ap.add_argument("--nccl-timeout", type=float, default=240.0, help="seconds for the whole NCCL launch")
    ap.add_argument("--dry-run", action="store_true", help="part 1 on NumPy only (no GPU needed)")
    ap.add_argument("--require-cupy", action="store_true", help="exit 2 when CuPy is unusable (default: skip)")
    ap.add_argument("--out", default=None, help="folder to write gpu_check.json into")
    ap.add_argument("--json", action="store_true", help="print the report as one JSON object")
    args = ap.parse_args(argv)

    report: dict = {"ok": True, "argv": list(sys.argv[1:] if argv is None else argv)}
    status = 0
    if args.dry_run:
        report["gpu"] = None
        evaluator_check(args, report, use_cupy=False)
    else:
        cupy_ok, cupy_msg = _cupy_device()
        gpus = _torch_gpus()
        report["cupy"] = cupy_msg
        report["torch_cuda_devices"] = gpus
        visible = _nvidia_smi_gpus()
        report["nvidia_smi"] = visible
        report["gpu"] = cupy_ok or gpus > 0 or bool(visible)
        if not (cupy_ok or gpus > 0):
            report["status"] = "skipped"
            if visible:  # a GPU, but nothing in this venv that can use it
                report["reason"] = (
                    f"{len(visible)} GPU(s) visible to nvidia-smi, but no GPU software in this venv: {cupy_msg}; "
                    "torch sees 0 CUDA devices (a CPU build of torch?): install cupy-cuda12x and a CUDA build "
                    "of torch into the venv to run the check"
                )
            else:
                report["reason"] = f"no GPU: {cupy_msg}; torch sees 0 CUDA devices"
        else:
            if cupy_ok:
                evaluator_check(args, report, use_cupy=True)
            else:
                print(cupy_msg, file=sys.stderr)
                if args.require_cupy:
                    report["ok"] = False
                    status = 2
            if gpus > 0:
                nccl_check(args, report, gpus)
                coded_check(args, report, gpus)
            else:
                report["nccl"] = "skipped: torch sees no CUDA device (a CPU build of torch?)"
                report["coded_nccl"] = "skipped: torch sees no CUDA device (a CPU build of torch?)"
            report["status"] = "ran"
    if args.torch_cpu > 0:
        nccl_check(args, report, args.torch_cpu, cpu=True)
        coded_check(args, report, args.torch_cpu, cpu=True)
    if status == 0 and not report["ok"]:
        status = 1
    _write(report, args.out)
    _print(report, args.json)
    return status


def _write(report: dict, out: str | None) -> None:
    if out is None:
        return
    from gcsim.io.manifest import atomic_write_text, dumps, provenance

    os.makedirs(out, exist_ok=True)
    atomic_write_text(os.path.join(out, "gpu_check.json"), dumps({**report, "provenance": provenance()}))


def _print(report: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(report, sort_keys=True, default=str))
        return
    print(f"gcsim GPU check -- {report.get('workload', report.get('reason', ''))}")
    for k in sorted(report):
        v = report[k]
        if k in ("nccl", "torch_cpu", "coded_nccl", "coded_cpu") and isinstance(v, dict):
            print(f"  {k:34s} {json.dumps(v, sort_keys=True)}")
        elif k != "workload":
            print(f"  {k:34s} {v:.4g}" if isinstance(v, float) else f"  {k:34s} {v}")


if __name__ == "__main__":
    sys.exit(main())
