"""Training runs over one link for the CERAR experiments (:mod:`gcsim.learning.cerar_training`).

The rank jobs the launcher runs (:func:`cerar_training_job`: every variant in turn under plain
DDP or the CERAR hook, timing each step and saving parameter snapshots; :func:`design_error_job`),
their evaluation in the launching process (:class:`Evaluator`, :func:`evaluate_run`,
:func:`time_to_target`), the experiment's designs (:data:`VARIANTS`, :func:`experiment_designs`,
:func:`measure_design_errors`) and :func:`run_link`, which trains every variant over one emulated
link in one launch and evaluates the runs.
"""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from .._optional import require
from .._progress import StageProgress
from .._validation import check_bool, check_int, check_real
from ..cerar import errors as cerar_errors
from ..cerar.constructions import r_star
from ..cerar.export import export_design, load_design
from ..cerar.factory import design as cerar_design
from ..errors import InvalidArgumentError
from ..executor.collectives import as_design, cerar_all_reduce
from ..executor.ddp_hook import register_cerar_hook
from ..executor.launcher import launch
from ..executor.netem import NetemTopology
from .cerar_model import (
    CONV_WIDTH,
    _bucket_elements,
    conv_net,
    interface_tx_bytes,
    load_experiment_data,
    write_training_split,
)

__all__ = [
    "run_key",
    "cerar_training_job",
    "design_error_job",
    "theta_digest",
    "Evaluator",
    "evaluate_run",
    "time_to_target",
    "VARIANTS",
    "KAPPAS",
    "OPTIMIZER_OPTIONS",
    "HYPER",
    "experiment_designs",
    "measure_design_errors",
    "run_link",
]


#: The file in a link's snapshot folder where rank 0 writes ``"<steps done> <label>"`` (read by :func:`run_link`).
PROGRESS_FILE = "progress.txt"


def _report_progress(folder: Path, done: int, label: str) -> None:
    """Write ``"<done> <label>"`` into ``folder/PROGRESS_FILE`` atomically (the reader never sees half a line)."""
    tmp = folder / f".{PROGRESS_FILE}.tmp"
    tmp.write_text(f"{done} {label}")
    tmp.replace(folder / PROGRESS_FILE)


def _read_progress(folder: Path) -> tuple[int, str] | None:
    """``(steps done, label)`` from ``folder/PROGRESS_FILE``, or None while there is none."""
    try:
        done, _, label = (folder / PROGRESS_FILE).read_text().partition(" ")
        return int(done), label
    except (OSError, ValueError):
        return None


def run_key(label: str, seed: int) -> str:
    """The key of a run of variant ``label`` with training seed ``seed`` in a multi-seed launch.

    Examples
    --------
    >>> run_key("optimized c=16", 2)
    'optimized c=16 | seed 2'
    """
    return f"{label} | seed {int(seed)}"


def cerar_training_job(rank: int, world_size: int, spec: dict) -> dict:
    """One rank of the training runs over one link, every variant in turn (module level, for the launcher).

    ``spec``: ``seed``, ``steps``, ``batch`` (per rank), ``lr``, ``momentum``, ``width``,
    ``eval_every``, ``data_file`` (an ``.npz`` with the training split ``x_train``, ``y_train``:
    :func:`write_training_split`), ``snap_dir`` (folder for the snapshots ``v<variant>_r<rank>_s<step>.npy``),
    ``variants`` (list of ``(label, design)``: design None for plain DDP, else a design path for the
    hook), ``ifname`` (the interface whose transmit counter is read, or None) and optionally
    ``compute_dtype`` (label -> the
    hook's ``compute_dtype``, default ``"auto"``), ``record`` (also save, every step, the rank's
    local gradient from an undistributed copy and the average DDP hands to the optimizer),
    ``seeds`` (train every variant once per seed, seeds outermost, runs keyed :func:`run_key`
    ``(label, seed)``; default: once with ``seed``, keyed by the label) and ``drift_every``
    (ranks other than 0 save their parameters only every ``drift_every`` steps and at the last,
    default ``eval_every``).  Each variant starts from the same initialization
    (``torch.manual_seed(seed)``) and draws the same batches.

    Returns ``{"rank": rank, "runs": {key: run}}``, each run a dict: ``step_seconds`` (list),
    ``load`` (the 1-minute load average before and after the run's steps),
    ``tx_bytes`` (interface bytes sent during the steps, or None), ``hook_bytes``/``hook_calls``
    (None for plain DDP), ``bucket_elements``, ``snapshots`` (step -> file), ``local_grads`` and
    ``averaged`` (step -> file; empty unless ``record``).
    """
    require("torch", "torch", "gcsim.learning.cerar_training.cerar_training_job")
    import copy
    import os

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    with np.load(spec["data_file"]) as data:  # the training split, written once by the launching process
        xtr = torch.tensor(data["x_train"][rank::world_size], dtype=torch.float32).reshape(-1, 1, 28, 28)
        ytr = torch.tensor(data["y_train"][rank::world_size], dtype=torch.long)
    snap_dir = Path(spec["snap_dir"])
    steps, every, batch = int(spec["steps"]), int(spec["eval_every"]), int(spec["batch"])
    ifname = spec.get("ifname")
    # warm the kernels up on a local copy (no communication, no effect on the runs)
    warm = conv_net(int(spec["width"]))
    torch.nn.functional.cross_entropy(warm(xtr[:batch]), ytr[:batch]).backward()
    record = bool(spec.get("record", False))

    def save(tensors, stem: str) -> str:
        path = snap_dir / f"{stem}.npy"
        np.save(path, torch.cat([t.detach().reshape(-1) for t in tensors]).numpy())
        return str(path)

    seeds = spec.get("seeds")
    plan = [(label, des, s) for s in (seeds or [spec["seed"]]) for label, des in spec["variants"]]
    drift_every = int(spec.get("drift_every", every))
    runs: dict[str, dict] = {}
    for v, (label, des, seed) in enumerate(plan):
        torch.manual_seed(int(seed))  # the same initialization on every rank and in every variant
        net = conv_net(int(spec["width"]))
        model = DDP(net)
        dtype = spec.get("compute_dtype", {}).get(label, "auto")
        state = register_cerar_hook(model, des, compute_dtype=dtype) if des is not None else None
        opt = torch.optim.SGD(model.parameters(), lr=float(spec["lr"]), momentum=float(spec["momentum"]))
        gen = torch.Generator().manual_seed(int(seed) * 1000 + rank)
        snapshots: dict[int, str] = {}

        def snapshot(step: int, net=net, snapshots=snapshots, v=v) -> None:
            snapshots[step] = save(net.parameters(), f"v{v}_r{rank}_s{step}")

        snapshot(0)
        dist.barrier()
        load0 = os.getloadavg()[0]
        tx0 = interface_tx_bytes(ifname) if ifname else None
        step_seconds = []
        buckets: list[int] = []
        local_grads: dict[int, str] = {}
        averaged: dict[int, str] = {}
        for step in range(1, steps + 1):
            idx = torch.randint(0, xtr.shape[0], (batch,), generator=gen)
            if record:  # this rank's own gradient, from an undistributed copy (outside the clock)
                copy_ = copy.deepcopy(net)
                loss = torch.nn.functional.cross_entropy(copy_(xtr[idx]), ytr[idx])
                local_grads[step] = save(torch.autograd.grad(loss, list(copy_.parameters())), f"v{v}_r{rank}_g{step}")
            t0 = time.perf_counter()
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(xtr[idx]), ytr[idx]).backward()  # DDP waits for the all-reduce
            opt.step()
            step_seconds.append(time.perf_counter() - t0)
            if record:  # the average DDP handed to the optimizer (the hook's output)
                averaged[step] = save([p.grad for p in net.parameters()], f"v{v}_r{rank}_a{step}")
            if step == 1:
                buckets = _bucket_elements(model)
            if step == steps or step % (every if rank == 0 else drift_every) == 0:
                snapshot(step)  # outside the clock: written here, evaluated by the launching process
            if rank == 0 and (step % every == 0 or step == steps):
                _report_progress(snap_dir, v * steps + step, label)  # outside the clock too
        tx1 = interface_tx_bytes(ifname) if ifname else None
        load1 = os.getloadavg()[0]
        if state is not None:
            state.close()
        runs[label if seeds is None else run_key(label, seed)] = {
            "step_seconds": step_seconds,
            "load": [load0, load1],
            "tx_bytes": None if tx0 is None or tx1 is None else tx1 - tx0,
            "hook_bytes": None if state is None else state.counter.sent,
            "hook_calls": None if state is None else state.calls,
            "bucket_elements": buckets,
            "snapshots": snapshots,
            "local_grads": local_grads,
            "averaged": averaged,
        }
        del model, net, opt
        dist.barrier()
    return {"rank": rank, "runs": runs}


def design_error_job(rank: int, world_size: int, spec: dict) -> dict:
    """Relative error of one CERAR all-reduce as the hook runs it, for each design (module level, for the launcher).

    Seeded float32 gradients ``(N, d)``; rank ``r`` reduces row ``r`` with
    :func:`gcsim.executor.collectives.cerar_all_reduce` with float32 packets, for every
    ``(label, design, compute_dtype)`` of ``spec["cases"]``, encoding and decoding in the
    ``compute_dtype`` (``"float32"``, ``"float64"`` or ``"auto"``, the hook's rule: float64 unless
    every coefficient is 0 or 1), and returns label -> ``‖ĝ_r − Σ_i g_i‖ / ‖Σ_i g_i‖``.
    """
    require("torch", "torch", "gcsim.learning.cerar_training.design_error_job")
    import torch

    g = np.random.default_rng(int(spec["seed"])).standard_normal((world_size, int(spec["d"]))).astype(np.float32)
    total = g.astype(np.float64).sum(axis=0)
    out = {}
    for label, design, dtype in spec["cases"]:
        des = as_design(design)
        unit = all(np.isin(a, (0.0, 1.0)).all() for a in (des.encoders, des.decoders))
        wide = dtype == "float64" or (dtype == "auto" and not unit)
        res = cerar_all_reduce(torch.from_numpy(g[rank].copy()), des, compute_dtype=torch.float64 if wide else None)
        out[label] = float(np.linalg.norm(res.numpy().astype(np.float64) - total) / np.linalg.norm(total))
    return {"rank": rank, "relative_error": out}


def theta_digest(theta: np.ndarray) -> str:
    """SHA-256 of a parameter vector's float32 bytes (equal digests: bit-identical parameters).

    Examples
    --------
    >>> theta_digest(np.zeros(3)) == theta_digest(np.zeros(3, dtype=np.float32))
    True
    """
    import hashlib

    return hashlib.sha256(np.ascontiguousarray(theta, dtype=np.float32).tobytes()).hexdigest()


class Evaluator:
    """Test accuracy of :func:`conv_net` parameter vectors on the MNIST subset's test split, cached by content.

    The same parameters (a variant trained over two links follows the same arithmetic, so its
    snapshots agree bit for bit) are evaluated once: the cache key is the SHA-256 of the bytes
    (:func:`theta_digest`).  ``mnist``: evaluate on full MNIST's 10,000 test images
    (:func:`load_experiment_data`); ``n_test`` is the number of test images.
    """

    def __init__(
        self, width: int, *, data_seed: int = 0, per_class: int | None = None, mnist: str | Path | None = None
    ):
        require("torch", "torch", "gcsim.learning.cerar_training.Evaluator")
        import torch

        self.width = check_int("width", width, minimum=1)
        data = load_experiment_data(data_seed=data_seed, per_class=per_class, mnist=mnist)
        self.n_test = int(len(data.y_test))
        self._x = torch.tensor(data.x_test, dtype=torch.float32).reshape(-1, 1, 28, 28)
        self._y = torch.tensor(data.y_test, dtype=torch.long)
        self._net = conv_net(self.width)
        self._cache: dict[str, float] = {}
        self.evaluations = 0

    def accuracy(self, theta: np.ndarray) -> float:
        """Share of the test images whose arg-max logit is the label."""
        import torch

        theta = np.ascontiguousarray(theta, dtype=np.float32)

        key = theta_digest(theta)
        if key not in self._cache:
            off = 0
            with torch.no_grad():
                for p in self._net.parameters():
                    p.copy_(torch.from_numpy(theta[off : off + p.numel()]).reshape(p.shape))
                    off += p.numel()
                hits = sum(
                    int((self._net(self._x[i : i + 500]).argmax(1) == self._y[i : i + 500]).sum())
                    for i in range(0, len(self._y), 500)
                )
            self._cache[key] = hits / len(self._y)
            self.evaluations += 1
        return self._cache[key]


def evaluate_run(runs: list[dict], evaluator: Evaluator) -> dict:
    """Test accuracy and replica drift of one run from its ranks' snapshots (in the launching process).

    ``runs``: one run record of :func:`cerar_training_job` per rank, in rank order.  Returns
    ``curve`` (rows ``step``, ``seconds`` -- the cumulative step time of the slowest rank --,
    ``test_acc`` of replica 0, ``drift_max_abs`` = ``max_ij max_k |θ_i[k] − θ_j[k]|`` and
    ``drift_l2`` = ``max_ij ‖θ_i − θ_j‖``; None at steps where not every replica saved its parameters),
    ``final_acc`` (one per replica), ``final_drift_max_abs`` / ``final_drift_l2`` and ``digests``
    (step -> :func:`theta_digest` of replica 0).
    """
    cum = np.max([np.cumsum([0.0, *r["step_seconds"]]) for r in runs], axis=0)
    steps = sorted(runs[0]["snapshots"], key=int)
    curve = []
    digests = {}
    for s in steps:
        theta0 = np.load(runs[0]["snapshots"][s])
        digests[int(s)] = theta_digest(theta0)
        row: dict[str, Any] = {"step": int(s), "seconds": float(cum[int(s)]), "test_acc": evaluator.accuracy(theta0)}
        row.update(drift_max_abs=None, drift_l2=None)
        if all(s in r["snapshots"] for r in runs):  # drift where every replica saved its parameters
            wide = np.stack([theta0] + [np.load(r["snapshots"][s]) for r in runs[1:]]).astype(np.float64)
            diffs = [np.linalg.norm(a - b) for i, a in enumerate(wide) for b in wide[i + 1 :]]
            row["drift_max_abs"] = float((wide.max(axis=0) - wide.min(axis=0)).max())
            row["drift_l2"] = float(max(diffs)) if diffs else 0.0
        curve.append(row)
    last = steps[-1]
    final_acc = [evaluator.accuracy(np.load(r["snapshots"][last])) for r in runs]
    return {
        "curve": curve,
        "final_acc": final_acc,
        "final_drift_max_abs": curve[-1]["drift_max_abs"],
        "final_drift_l2": curve[-1]["drift_l2"],
        "digests": digests,
    }


def time_to_target(curve: list[dict], target: float) -> tuple[float | None, int | None]:
    """``(seconds, step)`` of the first evaluated step whose test accuracy reaches ``target`` (None, None if none).

    Examples
    --------
    >>> curve = [{"step": 0, "seconds": 0.0, "test_acc": 0.1}, {"step": 5, "seconds": 2.5, "test_acc": 0.93}]
    >>> time_to_target(curve, 0.92)
    (2.5, 5)
    """
    target = check_real("target", target, minimum=0.0, maximum=1.0)
    for row in curve:
        if row["test_acc"] >= target:
            return float(row["seconds"]), int(row["step"])
    return None, None


#: The variants of the experiment, in table order: label -> (method, c); ``None`` = plain DDP.
VARIANTS: dict[str, tuple[str | None, int]] = {
    "ring": (None, 4),
    "exact c=4": ("exact", 4),
    "perturbation c=8": ("perturbation", 8),
    "optimized c=8": ("optimized", 8),
    "perturbation c=16": ("perturbation", 16),
    "optimized c=16": ("optimized", 16),
}

#: The κ caps of the optimized designs (c -> κ), chosen in docs/results/cerar_training.md.
KAPPAS: dict[int, float] = {8: 1000.0, 16: 10000.0}
#: How the optimized designs were computed (c -> keyword arguments of ``optimized_design``): at
#: c = 16 SCS's default accuracy (1e-7) ends the first sweep "optimal_inaccurate" under κ <= 1e4, so
#: 1e-5; three sweeps from the best perturbation start (the objective fell 0.529, 0.381, 0.357).
OPTIMIZER_OPTIONS: dict[int, dict[str, Any]] = {
    8: {"max_iter": 12},
    16: {
        "max_iter": 3,
        "init": "perturbation",
        "solver_options": {"eps_abs": 1e-5, "eps_rel": 1e-5, "max_iters": 20000},
    },
}


def experiment_designs(N: int, cache: Path | None, *, kappas: dict[int, float] | None = None, log=print) -> dict:
    """The CERAR designs of :data:`VARIANTS` for ``N`` ranks: label -> (CerarDesign, description).

    Perturbation designs use the float32 rule ``ε = u^{1/(r*+1)}`` (theory §50.5; the wire is
    float32).  Optimized designs (:func:`gcsim.cerar.optimize.optimized_design`, κ caps from
    ``kappas``, default :data:`KAPPAS`) are read from ``cache/optimized_N<N>_c<c>_kappa<κ>.json``
    when there, else computed (minutes) and written there.
    """

    kappas = dict(KAPPAS if kappas is None else kappas)
    u = 2.0**-24
    out: dict[str, Any] = {}
    for label, (method, c) in VARIANTS.items():
        if method is None:
            continue
        if method == "exact":
            out[label] = (cerar_design(N, c, "exact"), "exact design (0/1 coefficients)")
        elif method == "perturbation":
            eps = u ** (1.0 / (r_star(N, c) + 1))
            out[label] = (cerar_design(N, c, "perturbation", eps=eps), f"perturbation, eps = u^(1/(r*+1)) = {eps:.3g}")
        else:
            kappa = float(kappas[c])
            name = f"optimized_N{N}_c{c}_kappa{kappa:g}"
            path = None if cache is None else Path(cache) / f"{name}.json"
            if path is not None and path.exists():
                des = load_design(path)
            else:
                log(f"optimizing the N = {N}, c = {c} design under kappa <= {kappa:g} (minutes)")
                des = cerar_design(N, c, "optimized", kappa=kappa, progress=False, **OPTIMIZER_OPTIONS.get(c, {}))
                if path is not None:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    export_design(des, path.parent, name=name)
            out[label] = (des, f"kappa-optimized, kappa(A), kappa(D) <= {kappa:g}")
    return out


def measure_design_errors(
    designs: dict, N: int, *, d: int = 100_000, seed: int = 0, timeout: float = 600.0, compute_dtype: str = "auto"
) -> dict:
    """label -> max over ranks of :func:`design_error_job`'s relative error (float32 gradients of length ``d``).

    One launch for all designs.
    """

    spec = {"cases": [(k, v, compute_dtype) for k, v in designs.items()], "d": d, "seed": seed}
    res = launch(design_error_job, N, (spec,), timeout=timeout).raise_on_failure()
    return {k: max(r["relative_error"][k] for r in res.results) for k in designs}


class _ProgressWatch:
    """While a launch runs, move ``progress`` on by the steps rank 0 reports in ``folder`` (polled each second).

    On exit the launch's remaining steps are counted, so a link always adds ``total`` steps.
    """

    def __init__(self, folder: Path, rate: str, total: int, progress: StageProgress | None) -> None:
        self.folder, self.rate, self.total, self.progress = folder, rate, int(total), progress
        self.counted = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _poll(self) -> None:
        assert self.progress is not None
        state = _read_progress(self.folder)
        if state is not None and state[0] > self.counted:
            self.progress.working_on(f"{self.rate}: {state[1]}")
            self.progress.update(min(state[0], self.total) - self.counted)
            self.counted = min(state[0], self.total)

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            self._poll()

    def __enter__(self) -> _ProgressWatch:
        if self.progress is not None:
            self.progress.working_on(f"{self.rate}: starting {self.total} steps")
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            if self.progress is not None and self.total > self.counted:
                self.progress.update(self.total - self.counted)


def run_link(
    rate: str,
    variants: list[tuple[str, str | None]],
    *,
    N: int,
    spec: dict,
    work: Path,
    evaluator: Evaluator,
    port: int = 29631,
    netem: bool = True,
    timeout: float = 3600.0,
    keep: bool = False,
    progress: StageProgress | None = None,
    delay: str | None = None,
    seeds: list[int] | None = None,
) -> dict:
    """Train every variant over one link (inside a :class:`~gcsim.executor.netem.NetemTopology` of
    ``rate`` and one-way ``delay`` when ``netem``) in one launch, then evaluate them; label -> cell
    (``(label, seed)`` -> cell with ``seeds``: every variant once per seed, in the same launch).

    A cell holds the ranks' run records (``results``, rank order), :func:`evaluate_run`'s record
    (``eval``), and the launch's wall time and load averages (shared by the link's cells).  The
    snapshot files are deleted afterwards unless ``keep``.  With ``progress``, the launch's SGD steps
    (``len(variants) * spec["steps"]``) are counted on it while the ranks train, as rank 0 reports
    them every ``eval_every`` steps (:data:`PROGRESS_FILE`), the variant in training named; then
    each run's scoring is timed on it (:meth:`~gcsim._progress.StageProgress.following`, its
    ``spec["steps"]`` steps), which its time left counts.
    """
    netem, keep = check_bool("netem", netem), check_bool("keep", keep)
    import os
    import shutil

    if seeds is not None:
        seeds = [check_int("seeds", x, minimum=0) for x in seeds]
        if not seeds:
            raise InvalidArgumentError("seeds", "must name at least one seed")
    snap = work / (f"snap-{rate}" if delay is None else f"snap-{rate}-{delay}")
    shutil.rmtree(snap, ignore_errors=True)
    snap.mkdir(parents=True)
    data_file = work / "train_split.npz"
    if not data_file.exists():
        write_training_split(
            data_file, data_seed=spec.get("data_seed", 0), per_class=spec.get("per_class"), mnist=spec.get("mnist")
        )
    spec = {**spec, "variants": list(variants), "snap_dir": str(snap), "data_file": str(data_file)}
    if seeds is not None:
        spec["seeds"] = list(seeds)
    runs_per_launch = len(variants) * (1 if seeds is None else len(seeds))
    load_before = os.getloadavg()
    t0 = time.time()
    where = rate if delay is None else f"{rate} + {delay}"
    with _ProgressWatch(snap, where, runs_per_launch * int(spec["steps"]), progress):
        if netem:
            with NetemTopology(N, rate=rate, delay=delay) as topo:
                spec["ifname"] = topo.ifname
                res = launch(cerar_training_job, N, (spec,), timeout=timeout, **topo.launch_kwargs(port))
            stats = topo.delay_stats  # the delayers' lateness, reported when the topology closed
            link_delay = {
                "backend": topo.delay_backend_used,
                "late_mean_s": float(np.mean([d["late_mean_s"] for d in stats])) if stats else None,
                "late_max_s": max(d["late_max_s"] for d in stats) if stats else None,
                "congestion": topo.congestion_used,  # the host's TCP congestion control, as the ranks had it
            }
        else:
            res = launch(cerar_training_job, N, (spec,), timeout=timeout)
            link_delay = {"backend": None, "late_mean_s": None, "late_max_s": None, "congestion": None}
    wall = time.time() - t0
    load_after = os.getloadavg()
    ranks = sorted(res.raise_on_failure().results, key=lambda r: r["rank"])
    cells: dict[Any, dict] = {}
    keys: list[tuple[Any, str]] = [(label, label) for label, _ in variants]
    if seeds is not None:
        keys = [((label, x), run_key(label, x)) for x in seeds for label, _ in variants]
    for key, name in keys:
        runs = [r["runs"][name] for r in ranks]
        # scoring the snapshots takes minutes after the last step: named, and timed for the time left
        scoring = f"scoring {name}'s snapshots on the test set"
        with progress.following(int(spec["steps"]), scoring) if progress is not None else contextlib.nullcontext():
            evaluated = evaluate_run(runs, evaluator)
        cells[key] = {
            "results": runs,
            "eval": evaluated,
            "wall_seconds": wall,
            "delay": link_delay,
            "load_before": load_before,
            "load_after": load_after,
        }
    if not keep:
        shutil.rmtree(snap, ignore_errors=True)
    return cells


#: Training hyper-parameters (both scales): SGD with momentum on batches of 32 images per rank.
HYPER: dict[str, Any] = {"batch": 32, "lr": 0.1, "momentum": 0.9, "width": CONV_WIDTH, "seed": 0, "data_seed": 0}


def _prepare_designs(designs: dict, work: Path, N: int, log) -> tuple[dict, dict, dict]:
    """Export the designs into ``work``, measure their errors on ``N`` ranks; ``(paths, dtypes, rows)``."""
    paths = {k: str(export_design(d, work, name=f"design{i}")) for i, (k, (d, _)) in enumerate(designs.items())}
    log(f"measuring the {len(designs)} designs' errors on {N} ranks (float64, then float32 arithmetic)")
    errs = measure_design_errors({k: paths[k] for k in designs}, N)
    errs32 = measure_design_errors({k: paths[k] for k in designs}, N, compute_dtype="float32")
    design_rows = {}
    dtypes = {}
    for k, (d, what) in designs.items():
        e = cerar_errors(d)
        # float32 arithmetic when it costs no accuracy (within 10 % of the float64 error): half the
        # memory traffic of the encoding and decoding, which compete with the link for the step time
        dtypes[k] = "float32" if errs32[k] <= 1.1 * errs[k] else "auto"
        design_rows[k] = {
            "c": d.c,
            "method": d.method,
            "description": what,
            "relative_error": errs32[k] if dtypes[k] == "float32" else errs[k],
            "relative_error_float64_compute": errs[k],
            "relative_error_float32_compute": errs32[k],
            "compute_dtype": dtypes[k],
            "kappa_A_max": float(np.max(e.kappa_encoders)),
            "kappa_D_max": float(np.max(e.kappa_decoders)),
            "worst_case": float(e.worst_case),
        }
        log(f"{k}: {what}; relative error {errs[k]:.3g} (float64 arithmetic), {errs32[k]:.3g} (float32)")
    return paths, dtypes, design_rows
