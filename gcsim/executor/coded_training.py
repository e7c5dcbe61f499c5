"""Gradient-coded data-parallel training on torch.distributed: an exported code, any model, any stragglers.

A gradient code (theory §5.1) over ``n`` coded workers and ``N`` data parts is run on ``k <= n``
torch.distributed ranks (gloo or NCCL; started by :func:`gcsim.executor.launch` or ``torchrun``):

* **layout** -- rank ``r`` simulates the coded workers ``W_r`` (the ``n`` workers cut into ``k``
  contiguous runs, sizes differing by at most one: ``numpy.array_split``); it computes the
  partial gradient ``g_i`` of every part ``i`` its workers hold (once, however many of them hold
  it) on that part's mini-batch;
* **data** -- the data set is cut into the ``N`` parts (``numpy.array_split`` of the indices, or
  one loader per part that you give); part ``i`` draws its batches from its own seeded
  ``DataLoader``, so every rank holding it sees the same batches;
* **encode** -- coded worker ``j`` sends ``g̃_j = Σ_{k,i} B_{kN+i,j} g_i[k]`` (``m`` blocks of
  ``w = ceil(d/m)`` numbers: :func:`gcsim.coding.bounds.split_blocks`), one GEMM per rank;
* **stragglers** -- a non-straggler mask per step, from any gcsim straggler model (fixed,
  Bernoulli, Markov, delay models, traces: ``model.sample(steps, seed)``, identical on every
  rank) or from a deadline on the measured compute time of each coded worker (the sum of its
  parts' gradient times, gathered from every rank);
* **decode** -- the decoder of the pattern from the code's decoder table, or, for a pattern
  outside it (or a code without a table), the certified fallback
  (:meth:`gcsim.coding.decoder_table.DecoderTable.lookup`,
  :func:`gcsim.coding.decoder_table.certified_decoder`: the minimum-norm optimal decoder
  ``B_F⁺ T`` by least squares, certified by its normal equations and residual), counted;
* **collective** -- ``"all-gather"`` (default): every rank receives every coded message and
  decodes ``ĝ[l] = Σ_{j∈F} X_{jl} g̃_j`` itself, in float64, in the same order, so the replicas
  stay bit-identical by construction; ``"all-reduce"``: each rank decodes its own workers'
  messages and one all-reduce sums the ``m w ≈ d`` partial estimates (the bytes of plain DDP;
  identical replicas then rest on the backend giving every rank the same sum, as DDP does);
* **update** -- the gradient ``ĝ / N`` (the estimate of the mean of the parts' mean-loss
  gradients) is written to every parameter's ``.grad`` and ``optimizer.step()`` runs on every
  rank.

Every step records the pattern's optimal-decoding error ``err(F)/(mN)`` (theory §5.2) and, on
logging steps, the relative error ``‖ĝ − g‖² / ‖g‖²`` of the decoded sum against the true sum
``g = Σ_i g_i`` (each part summed by the lowest rank holding it, one all-reduce).  The report
compares the mean ``err(F)/(mN)`` over the steps, with its 95% interval, with the analysis'
expected error (:func:`gcsim.coding.evaluate.expected_error`, ``normalized=True``).

Examples
--------
One rank, three coded workers (a process group of one gloo rank; a real job has several):

>>> import os, tempfile, torch, torch.distributed as dist
>>> from gcsim.coding.schemes import encode
>>> from gcsim.coding.stragglers import straggler_model
>>> store = tempfile.mkdtemp()
>>> dist.init_process_group("gloo", init_method=f"file://{store}/s", rank=0, world_size=1)
>>> A = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
>>> torch.manual_seed(0)  # doctest: +ELLIPSIS
<torch._C.Generator object at ...>
>>> net = torch.nn.Linear(4, 2)
>>> data = torch.utils.data.TensorDataset(torch.randn(30, 4), torch.randint(0, 2, (30,)))
>>> trainer = CodedTrainer(encode(A, 2, "rd", eps=0.1, seed=0), net, torch.optim.SGD(net.parameters(), lr=0.1),
...                        data, batch_size=5, loss_fn=torch.nn.functional.cross_entropy)
>>> report = trainer.train(4, straggler_model("fixed", 3, s=1), seed=0, expected=False)
>>> len(report.records), report.fallbacks, report.records[0].source
(4, 4, 'fallback')
>>> all(0 <= r.opt_error <= 1 and r.rel_error >= 0 for r in report.records), len(report.digest)
(True, 64)
>>> dist.destroy_process_group()
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._optional import require
from .._validation import check_bool, check_int, check_mask, check_real
from ..catalogue.codes import ExportedCode
from ..catalogue.objects import load_object
from ..coding.decoder_table import DecoderLookup, DecoderTable, certified_decoder
from ..coding.evaluate import expected_error
from ..coding.schemes import Scheme
from ..coding.straggler_base import StragglerModel
from ..errors import InvalidArgumentError
from ..limits import check_entries

__all__ = [
    "COLLECTIVES",
    "CodedTrainer",
    "CodedStep",
    "CodedTrainingReport",
    "load_training_code",
    "code_arrays",
    "worker_layout",
    "parameter_digest",
    "coded_training_job",
]

#: Values of ``collective``.
COLLECTIVES = ("all-gather", "all-reduce")


#: ``format`` of :func:`code_arrays`' dictionaries.
CODE_ARRAYS_FORMAT = "gcsim-code-arrays"


def code_arrays(code: Any) -> dict[str, Any]:
    """A dense scheme or decoder table as plain arrays and metadata: what a bundle holds, without a file.

    The form in which a code built in memory reaches the ranks of a launch (``gcsim gc run --design``):
    NumPy arrays and JSON-ready metadata (``to_arrays`` / ``bundle_metadata``, as
    :func:`gcsim.catalogue.export_object` writes them), which :func:`load_training_code` rebuilds and
    checks with the class's ``from_arrays`` -- the same objects an export holds and a load returns.

    Examples
    --------
    >>> from gcsim.coding.schemes import encode
    >>> from gcsim.coding.decoder_table import decoder_table
    >>> A = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
    >>> packed = code_arrays(decoder_table(encode(A, 1, "rd", seed=0), 1))
    >>> packed["kind"], sorted(packed["arrays"])
    ('decoder-table', ['B', 'assignment', 'decoders', 'errors'])
    >>> scheme, table = load_training_code(packed)
    >>> len(table), bool(np.array_equal(scheme.B, encode(A, 1, "rd", seed=0).B))
    (4, True)
    """
    if isinstance(code, DecoderTable) and type(code) is DecoderTable:
        kind = "decoder-table"
    elif isinstance(code, Scheme) and type(code) is Scheme:
        kind = "scheme"
    else:
        raise InvalidArgumentError(
            "code", f"must be a dense Scheme or DecoderTable, got {type(code).__name__} (no array form here)"
        )
    return {
        "format": CODE_ARRAYS_FORMAT,
        "kind": kind,
        "arrays": dict(code.to_arrays()),
        "metadata": dict(code.bundle_metadata()),
    }


def _from_arrays(packed: dict[str, Any]) -> Any:
    """The scheme or table of a :func:`code_arrays` dictionary (checked by ``from_arrays``)."""
    kind = packed.get("kind")
    arrays, metadata = packed.get("arrays"), packed.get("metadata")
    if kind not in ("scheme", "decoder-table") or not isinstance(arrays, dict) or not isinstance(metadata, dict):
        raise InvalidArgumentError(
            "code", "a code_arrays dictionary needs kind 'scheme' or 'decoder-table', arrays and metadata"
        )
    cls = DecoderTable if kind == "decoder-table" else Scheme
    return cls.from_arrays(arrays, metadata)


def load_training_code(code: Any, *, verify: bool = True) -> tuple[Scheme, DecoderTable | None]:
    """The dense encoder and the decoder table (or None) of an exported code, a table bundle or a scheme.

    Accepted: an exported code's folder (``gcsim advise --out``, :meth:`gcsim.advisor.Advice.export`),
    a decoder-table bundle (``gcsim decoder-table --out``, :meth:`DecoderTable.export`), a
    ``"scheme"`` bundle (:func:`gcsim.catalogue.export_object`), those objects already loaded
    (:class:`~gcsim.catalogue.codes.ExportedCode`, :class:`DecoderTable`, :class:`Scheme`), or a
    scheme or table as arrays (:func:`code_arrays`).  Paths are read by
    :func:`gcsim.catalogue.load_object`, which re-verifies every part from the files; arrays are
    rebuilt and checked by the class's ``from_arrays``.

    Raises
    ------
    InvalidArgumentError
        Anything else, or an encoder without a dense ``B`` (a structured encoder beyond
        :data:`gcsim.limits.MAX_DENSE_ENTRIES`: no training at that size).
    CatalogueError
        A file that does not load or verify.
    """
    verify = check_bool("verify", verify)
    if isinstance(code, dict) and code.get("format") == CODE_ARRAYS_FORMAT:
        obj = _from_arrays(code)
    elif isinstance(code, (str, Path)):
        obj = load_object(Path(code), verify=verify)
    else:
        obj = code
    table: DecoderTable | None = None
    if isinstance(obj, ExportedCode):
        scheme, table = obj.scheme, obj.decoders
    elif isinstance(obj, DecoderTable):
        scheme, table = obj.scheme, obj
    else:
        scheme = obj
    if not isinstance(scheme, Scheme):
        kind = getattr(type(obj), "kind", type(obj).__name__)
        raise InvalidArgumentError(
            "code",
            f"must be an exported code folder, a decoder table or a dense scheme (a {kind!r} is not; a structured "
            "encoder beyond MAX_DENSE_ENTRIES has no dense B to train with)",
        )
    return scheme, table


def worker_layout(n: int, ranks: int) -> list[np.ndarray]:
    """The coded workers of each rank: ``n`` workers in ``ranks`` contiguous runs (``numpy.array_split``).

    Examples
    --------
    >>> [w.tolist() for w in worker_layout(13, 4)]
    [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9], [10, 11, 12]]
    """
    n = check_int("n", n, minimum=1)
    check_entries("n", (n,), "the worker indices")
    ranks = check_int("ranks", ranks, minimum=1)
    if ranks > n:
        raise InvalidArgumentError(
            "ranks", f"must be <= the {n} coded workers (each rank runs at least one), got {ranks}"
        )
    return [np.asarray(w, dtype=np.int64) for w in np.array_split(np.arange(n), ranks)]


def parameter_digest(module: Any) -> str:
    """SHA-256 of a module's parameters (names, dtypes, shapes and bytes, in ``named_parameters`` order).

    Two replicas with the same digest hold bit-identical parameters.
    """
    h = hashlib.sha256()
    for name, p in module.named_parameters():
        t = p.detach().cpu().contiguous()
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)};".encode())
        h.update(t.view(-1).view(_byte_dtype()).numpy().tobytes())
    return h.hexdigest()


def _byte_dtype() -> Any:
    import torch

    return torch.uint8


@dataclass(frozen=True)
class CodedStep:
    """One step of :class:`CodedTrainer`.

    Attributes
    ----------
    step : int
    stragglers : list of int
        The straggling coded workers of the step.
    source : str
        Where the decoder came from: ``"table"`` or ``"fallback"``.
    opt_error : float
        ``err(F)/(mN)``, the pattern's optimal-decoding error (normalized).
    rel_error : float
        ``‖ĝ − g‖² / ‖g‖²`` of the decoded sum against the true sum (NaN when not logged).
    loss : float
        Mean over the parts of their mini-batch losses (NaN when not logged).
    seconds : dict
        Wall seconds of ``gradients``, ``encode``, ``decoder`` (lookup), ``communicate``,
        ``decode``, ``update`` and ``log`` on this rank.
    bytes_sent : int
        Bytes this rank sent in the step's gradient collective (ring algorithm count: all-gather
        ``(k−1) c``, all-reduce ``2 (k−1)/k c``, ``c`` the bytes of its contribution).
    """

    step: int
    stragglers: list[int]
    source: str
    opt_error: float
    rel_error: float
    loss: float
    seconds: dict[str, float]
    bytes_sent: int


@dataclass
class CodedTrainingReport:
    """What :meth:`CodedTrainer.train` returns: the steps and the comparison with the analysis.

    Attributes
    ----------
    records : list of CodedStep
    mean_opt_error : float
        Mean of ``err(F)/(mN)`` over the steps.
    opt_error_ci : tuple of float
        Its Student-t interval (``confidence`` of :meth:`CodedTrainer.train`, default 95%), the
        steps taken as independent draws (a Markov model's steps are correlated: the interval is
        then too narrow).
    mean_rel_error : float
        Mean of the logged ``‖ĝ − g‖²/‖g‖²`` (NaN when no step was logged).
    expected : float or None
        The analysis' expected error ``E[err(F)]/(mN)`` (:func:`gcsim.coding.evaluate.expected_error`),
        None when not computed.
    expected_ci : tuple of float or None
        Its 95% interval (zero width when exact).
    expected_method : str
    agrees : bool or None
        Whether the two intervals overlap (None without the analysis).
    table_lookups, fallbacks : int
        Decoders answered by the table and by the certified fallback.
    digest : str
        :func:`parameter_digest` of the model after the last step (equal on every rank).
    stragglers_model : str
        ``model.describe()`` (or how the masks were made).
    """

    records: list[CodedStep]
    mean_opt_error: float
    opt_error_ci: tuple[float, float]
    mean_rel_error: float
    expected: float | None
    expected_ci: tuple[float, float] | None
    expected_method: str
    agrees: bool | None
    table_lookups: int
    fallbacks: int
    digest: str
    stragglers_model: str
    extra: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> str:
        """Two lines: the observed mean with its interval, and the analysis' expected error with its own."""
        lo, hi = self.opt_error_ci
        text = (
            f"{len(self.records)} steps ({self.stragglers_model}): mean err(F)/(mN) {self.mean_opt_error:.5g} "
            f"(interval {lo:.5g} .. {hi:.5g}); mean relative gradient error {self.mean_rel_error:.4g}; "
            f"decoders: {self.table_lookups} from the table, {self.fallbacks} by the certified fallback"
        )
        if self.expected is not None and self.expected_ci is not None:
            elo, ehi = self.expected_ci
            verdict = (
                "agrees" if self.agrees else "lies outside it (asymptotic t-interval: few steps miss rare patterns)"
            )
            text += (
                f"\nanalysis: expected err/(mN) {self.expected:.5g} (interval {elo:.5g} .. {ehi:.5g}, "
                f"{self.expected_method}): the observed mean {verdict}"
            )
        return text

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the summary numbers and one row per step."""
        return {
            "steps": len(self.records),
            "stragglers": self.stragglers_model,
            "mean_opt_error": self.mean_opt_error,
            "opt_error_ci": list(self.opt_error_ci),
            "mean_rel_error": self.mean_rel_error,
            "expected": self.expected,
            "expected_ci": None if self.expected_ci is None else list(self.expected_ci),
            "expected_method": self.expected_method,
            "agrees": self.agrees,
            "table_lookups": self.table_lookups,
            "fallbacks": self.fallbacks,
            "digest": self.digest,
            "records": [
                {
                    "step": r.step,
                    "stragglers": r.stragglers,
                    "source": r.source,
                    "opt_error": r.opt_error,
                    "rel_error": None if math.isnan(r.rel_error) else r.rel_error,
                    "loss": None if math.isnan(r.loss) else r.loss,
                    "bytes_sent": r.bytes_sent,
                    "seconds": r.seconds,
                }
                for r in self.records
            ],
            **self.extra,
        }


def _cycle(loader: Iterable) -> Iterator:
    """Batches of ``loader`` forever (a new pass when one ends)."""
    while True:
        empty = True
        for batch in loader:
            empty = False
            yield batch
        if empty:
            raise InvalidArgumentError("data", "a part's loader yields no batch")


def _mean_interval(values: np.ndarray, confidence: float = 0.95) -> tuple[float, tuple[float, float]]:
    """Mean and Student-t interval of ``values`` at ``confidence`` (zero width for fewer than 2 or equal values)."""
    mean = float(values.mean()) if values.size else math.nan
    if values.size < 2:
        return mean, (mean, mean)
    from scipy import stats

    half = float(stats.t.ppf(0.5 + confidence / 2, values.size - 1) * values.std(ddof=1) / math.sqrt(values.size))
    return mean, (mean - half, mean + half)


class CodedTrainer:
    """Gradient-coded data-parallel training of a torch module on the current process group (module docstring).

    Build one on every rank, with the same arguments, after ``torch.distributed.init_process_group``
    (``torchrun`` or :func:`gcsim.executor.launch`); the constructor broadcasts rank 0's parameters.

    Parameters
    ----------
    code : path, ExportedCode, DecoderTable, Scheme or a :func:`code_arrays` dictionary
        The code (:func:`load_training_code`): ``n`` coded workers, ``N`` parts, ``m`` blocks.
    module : torch.nn.Module
        Any model; its parameters (with ``requires_grad``) form the gradient of length ``d``.
    optimizer : torch.optim.Optimizer
        Any optimizer over ``module``'s parameters.
    data : torch Dataset, or a sequence of N iterables
        A map-style data set of ``(input, target)`` pairs, cut into the ``N`` parts
        (``numpy.array_split`` of its indices) with one seeded shuffling ``DataLoader`` of
        ``batch_size`` per part; or your own ``N`` loaders, one per part (each must give the same
        batches on every rank that iterates it).
    batch_size : int
        Mini-batch of each part (with a data set).
    loss_fn : callable
        ``loss_fn(module(input), target)`` -> scalar mean loss of a batch (default cross-entropy).
    seed : int
        Seed of the parts' shuffling.
    collective : {"all-gather", "all-reduce"}
        How the coded messages meet (module docstring).
    message_dtype : torch.dtype, optional
        Dtype of the coded messages on the wire (default the parameters' dtype).
    fallback : {"optimal", "raise"}
        Patterns outside the decoder table: the certified optimal decoder, or an error.
    group : process group, optional
        Default: the world.

    Raises
    ------
    InvalidArgumentError
        More ranks than coded workers, a model without trainable parameters, ``N`` loaders
        expected and another count given, a bad ``collective``/``fallback``/``batch_size``.
    """

    def __init__(
        self,
        code: Any,
        module: Any,
        optimizer: Any,
        data: Any,
        *,
        batch_size: int = 8,
        loss_fn: Callable | None = None,
        seed: int = 0,
        collective: str = "all-gather",
        message_dtype: Any = None,
        fallback: str = "optimal",
        group: Any = None,
    ):
        torch = require("torch", "torch", "gcsim.executor.coded_training.CodedTrainer")
        import torch.distributed as dist

        if not dist.is_initialized():
            raise InvalidArgumentError("group", "torch.distributed is not initialized (init_process_group first)")
        if collective not in COLLECTIVES:
            raise InvalidArgumentError("collective", f"must be one of {COLLECTIVES}, got {collective!r}")
        if fallback not in ("optimal", "raise"):
            raise InvalidArgumentError("fallback", f"must be 'optimal' or 'raise', got {fallback!r}")
        self.torch, self.dist, self.group = torch, dist, group
        self.scheme, self.table = load_training_code(code)
        self.n, self.m, self.N = self.scheme.n, self.scheme.m, self.scheme.num_parts
        self.rank, self.world = dist.get_rank(group), dist.get_world_size(group)
        self.layout = worker_layout(self.n, self.world)
        self.workers = self.layout[self.rank]
        A = np.asarray(self.scheme.assignment) != 0
        self.parts = np.flatnonzero(A[:, self.workers].any(axis=1))
        holders = [np.flatnonzero(A[:, w].any(axis=1)) for w in self.layout]
        owner = np.full(self.N, -1)
        for r in reversed(range(self.world)):
            owner[holders[r]] = r
        self.owned = np.flatnonzero(owner == self.rank)  # parts this rank sums into the true gradient
        self.module, self.optimizer = module, optimizer
        self.params = [p for p in module.parameters() if p.requires_grad]
        if not self.params:
            raise InvalidArgumentError("module", "has no parameter with requires_grad")
        self.d = int(sum(p.numel() for p in self.params))
        self.w = -(-self.d // self.m)
        self.dtype = self.params[0].dtype
        self.device = self.params[0].device
        self.message_dtype = self.dtype if message_dtype is None else message_dtype
        self.loss_fn = torch.nn.functional.cross_entropy if loss_fn is None else loss_fn
        self.collective, self.fallback = collective, fallback
        self.batch_size = check_int("batch_size", batch_size, minimum=1)
        self.seed = check_int("seed", seed, minimum=0)
        # B restricted to (block k, part i of this rank) x (this rank's workers), ordered (k, i)
        B = np.asarray(self.scheme.B, dtype=np.float64)
        rows = (np.arange(self.m)[:, None] * self.N + self.parts[None, :]).ravel()
        self._B_local = torch.as_tensor(B[np.ix_(rows, self.workers)].T.copy(), device=self.device)  # (|W_r|, m|P_r|)
        self._loaders = self._part_loaders(data)
        self._cache: dict[bytes, DecoderLookup] = {}
        self.fallbacks = 0
        self.table_lookups = 0
        self._step = 0
        with torch.no_grad():  # every replica starts from rank 0's parameters
            for p in module.parameters():
                dist.broadcast(p.data, src=dist.get_global_rank(group, 0) if group is not None else 0, group=group)

    # -- data -------------------------------------------------------------------------------------
    def _part_loaders(self, data: Any) -> dict[int, Iterator]:
        torch = self.torch
        if isinstance(data, Sequence) and not isinstance(data, torch.utils.data.Dataset):
            if len(data) != self.N:
                raise InvalidArgumentError("data", f"needs one loader per part ({self.N}), got {len(data)}")
            return {int(i): _cycle(data[int(i)]) for i in self.parts}
        if not hasattr(data, "__getitem__") or not hasattr(data, "__len__"):
            raise InvalidArgumentError("data", "must be a map-style torch Dataset or a sequence of one loader per part")
        if len(data) < self.N:
            raise InvalidArgumentError("data", f"has {len(data)} examples, fewer than the code's {self.N} parts")
        split = np.array_split(np.arange(len(data)), self.N)
        loaders = {}
        for i in self.parts:
            gen = torch.Generator().manual_seed(self.seed * 1_000_003 + int(i))
            subset = torch.utils.data.Subset(data, split[int(i)].tolist())
            loader = torch.utils.data.DataLoader(subset, batch_size=self.batch_size, shuffle=True, generator=gen)
            loaders[int(i)] = _cycle(loader)
        return loaders

    # -- decoders ---------------------------------------------------------------------------------
    def decoder(self, mask: np.ndarray) -> DecoderLookup:
        """The decoder of a pattern: the table's row, else the certified fallback (cached, counted)."""
        if self.table is not None:
            found = self.table.lookup(mask, fallback=self.fallback)
        else:
            if self.fallback == "raise":
                raise InvalidArgumentError("fallback", "the code has no decoder table and fallback='raise'")
            key = np.packbits(mask).tobytes()
            found = self._cache.get(key) or certified_decoder(self.scheme, mask)
            self._cache[key] = found
        if found.source == "table":
            self.table_lookups += 1
        else:
            self.fallbacks += 1
        return found

    # -- one step ---------------------------------------------------------------------------------
    def _gradients(self) -> tuple[Any, np.ndarray, np.ndarray]:
        """Flattened part gradients of this rank's parts ``(|P_r|, d)``, their losses and seconds."""
        torch = self.torch
        G = torch.empty((self.parts.size, self.d), dtype=self.dtype, device=self.device)
        losses, secs = np.zeros(self.parts.size), np.zeros(self.parts.size)
        self.module.train()
        for a, i in enumerate(self.parts):
            t0 = time.perf_counter()
            x, y = next(self._loaders[int(i)])
            x, y = x.to(self.device), y.to(self.device)
            self.optimizer.zero_grad(set_to_none=False)
            for p in self.params:
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
            loss = self.loss_fn(self.module(x), y)
            loss.backward()
            torch.cat([p.grad.reshape(-1) for p in self.params], out=G[a])
            losses[a] = float(loss.detach())
            secs[a] = time.perf_counter() - t0
        return G, losses, secs

    def _encode(self, G: Any) -> Any:
        """Messages ``(|W_r|, w)`` of this rank's coded workers: ``B_localᵀ`` times the (k, i)-ordered blocks."""
        torch = self.torch
        blocks = torch.zeros((self.parts.size, self.m * self.w), dtype=torch.float64, device=self.device)
        blocks[:, : self.d] = G
        blocks = blocks.reshape(self.parts.size, self.m, self.w).transpose(0, 1).reshape(-1, self.w)  # rows (k, i)
        return (self._B_local @ blocks).to(self.message_dtype)

    def _deadline_mask(self, secs: np.ndarray, deadline: float) -> np.ndarray:
        """Coded workers whose compute time (the sum of their parts' gradient times) is within ``deadline``."""
        torch = self.torch
        A = np.asarray(self.scheme.assignment)[self.parts][:, self.workers] != 0
        # on the parameters' device: NCCL moves CUDA tensors only
        local = torch.full((len(self.layout[0]),), math.inf, dtype=torch.float64, device=self.device)
        local[: self.workers.size] = torch.as_tensor(A.T.astype(np.float64) @ secs, device=self.device)
        gathered = [torch.empty_like(local) for _ in range(self.world)]
        self.dist.all_gather(gathered, local, group=self.group)
        times = np.concatenate([g.cpu().numpy()[: w.size] for g, w in zip(gathered, self.layout, strict=True)])
        return times <= deadline

    def _check_same_mask(self, mask: np.ndarray) -> None:
        torch = self.torch
        t = torch.as_tensor(np.concatenate([mask, ~mask]).astype(np.int64), device=self.device)  # NCCL: on CUDA
        self.dist.all_reduce(t, op=self.dist.ReduceOp.MIN, group=self.group)
        if not bool((t[: self.n] + t[self.n :] == 1).all()):  # min(x) + min(1 - x) = 1 iff x agrees everywhere
            raise InvalidArgumentError("mask", f"step {self._step}: the ranks were given different straggler masks")

    def _communicate(self, msgs: Any, X: np.ndarray, mask: np.ndarray) -> tuple[Any, int, float]:
        """The decoded estimate ``(m, w)`` in float64, the bytes sent and the decode seconds."""
        torch, dist = self.torch, self.dist
        k, item = self.world, torch.empty((), dtype=self.message_dtype).element_size()
        if self.collective == "all-gather":
            width = len(self.layout[0])
            send = torch.zeros((width, self.w), dtype=self.message_dtype, device=self.device)
            send[: self.workers.size] = msgs
            got = [torch.empty_like(send) for _ in range(k)]
            dist.all_gather(got, send, group=self.group)
            t0 = time.perf_counter()
            full = torch.cat([g[: w.size] for g, w in zip(got, self.layout, strict=True)])  # (n, w), worker order
            F = torch.as_tensor(np.flatnonzero(mask), device=self.device)
            XF = torch.as_tensor(X[mask], dtype=torch.float64, device=self.device)
            est = XF.T @ full.index_select(0, F).to(torch.float64)
            return est, (k - 1) * send.numel() * item, time.perf_counter() - t0
        t0 = time.perf_counter()
        mine = mask[self.workers]
        Xl = torch.as_tensor(X[self.workers][mine], dtype=torch.float64, device=self.device)
        part = (Xl.T @ msgs[torch.as_tensor(np.flatnonzero(mine), device=self.device)].to(torch.float64)).to(
            self.message_dtype
        )
        seconds = time.perf_counter() - t0
        dist.all_reduce(part, group=self.group)
        return part.to(torch.float64), int(2 * (k - 1) * part.numel() * item / k), seconds

    def step(
        self, mask: Any = None, *, deadline: float | None = None, log: bool = True, check: bool = True
    ) -> CodedStep:
        """One coded step: gradients, encode, decode, update (identically on every rank).

        Parameters
        ----------
        mask : array_like of bool, shape (n,), optional
            The non-stragglers (True = arrived): must be the same on every rank (checked with a
            tiny all-reduce when ``check``).  Omit it to use ``deadline``.
        deadline : float, optional
            Real stragglers: a coded worker whose measured compute time (the sum of its parts'
            gradient times on its rank) exceeds ``deadline`` seconds straggles.
        log : bool
            Compute the true gradient sum (one extra all-reduce of ``d`` float64) for ``rel_error``
            and the loss.
        """
        torch = self.torch
        log = check_bool("log", log)
        check = check_bool("check", check)
        secs: dict[str, float] = {}
        t0 = time.perf_counter()
        G, losses, part_secs = self._gradients()
        secs["gradients"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        msgs = self._encode(G)
        secs["encode"] = time.perf_counter() - t0
        if (mask is None) == (deadline is None):
            raise InvalidArgumentError("mask", "give the step's non-straggler mask or a deadline, not both")
        if deadline is not None:
            mk = self._deadline_mask(part_secs, check_real("deadline", deadline, minimum=0.0))
        else:
            mk = check_mask("mask", mask, self.n)
            if mk.ndim != 1:
                raise InvalidArgumentError("mask", f"must be one mask of shape ({self.n},)")
            if check:
                self._check_same_mask(mk)
        t0 = time.perf_counter()
        found = self.decoder(mk)
        secs["decoder"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        est, sent, secs["decode"] = self._communicate(msgs, found.decoder, mk)
        secs["communicate"] = time.perf_counter() - t0 - secs["decode"]
        t0 = time.perf_counter()
        flat = est.reshape(-1)[: self.d]
        with torch.no_grad():
            a = 0
            for p in self.params:
                p.grad.copy_((flat[a : a + p.numel()] / self.N).reshape(p.shape))
                a += p.numel()
        self.optimizer.step()
        secs["update"] = time.perf_counter() - t0
        rel, loss = math.nan, math.nan
        if log:
            t0 = time.perf_counter()
            own = np.isin(self.parts, self.owned)
            true = torch.zeros(self.d + 1, dtype=torch.float64, device=self.device)
            if own.any():
                true[: self.d] = G[torch.as_tensor(np.flatnonzero(own), device=self.device)].to(torch.float64).sum(0)
                true[self.d] = float(losses[own].sum())
            self.dist.all_reduce(true, group=self.group)
            g = true[: self.d]
            rel = float(((flat - g) ** 2).sum() / (g**2).sum()) if float((g**2).sum()) > 0 else math.nan
            loss = float(true[self.d]) / self.N
            secs["log"] = time.perf_counter() - t0
        record = CodedStep(
            self._step,
            np.flatnonzero(~mk).tolist(),
            found.source,
            found.error / (self.m * self.N),
            rel,
            loss,
            secs,
            int(sent),
        )
        self._step += 1
        return record

    # -- a run ------------------------------------------------------------------------------------
    def train(
        self,
        steps: int,
        stragglers: Any = None,
        *,
        seed: int = 0,
        deadline: float | None = None,
        log_every: int = 1,
        expected: bool = True,
        confidence: float = 0.95,
        callback: Callable[[CodedStep], None] | None = None,
    ) -> CodedTrainingReport:
        """Run ``steps`` coded steps and compare the observed decoding error with the analysis.

        Parameters
        ----------
        steps : int >= 1
        stragglers : StragglerModel or array_like of bool (steps, n), optional
            A gcsim straggler model (its masks: ``model.sample(steps, seed)``, the same on every
            rank; a Markov model's consecutive iterations), or the masks themselves.  Omit it to
            use ``deadline`` (real stragglers).
        seed : int
            Seed of the model's masks.
        deadline : float, optional
            Real stragglers (see :meth:`step`).
        log_every : int >= 0
            Log the true gradient (``rel_error``, loss) every ``log_every`` steps (0: never).
        expected : bool
            Compute the analysis' expected error of a model (on every rank: a deterministic
            function of the code and the model).
        confidence : float in (0, 1)
            Level of the observed mean's Student-t interval (``opt_error_ci``).
        callback : callable, optional
            Called with each :class:`CodedStep`.
        """
        steps = check_int("steps", steps, minimum=1)
        log_every = check_int("log_every", log_every, minimum=0)
        seed = check_int("seed", seed, minimum=0)
        confidence = check_real("confidence", confidence, minimum=0.0, maximum=1.0, strict_min=True, strict_max=True)
        model = stragglers if isinstance(stragglers, StragglerModel) else None
        masks: np.ndarray | None
        if (stragglers is None) == (deadline is None):
            raise InvalidArgumentError("stragglers", "give a straggler model (or masks) or a deadline, not both")
        if model is not None:
            if model.n != self.n:
                raise InvalidArgumentError("stragglers", f"is a model over {model.n} workers; the code has {self.n}")
            masks = np.asarray(model.sample(steps, seed), dtype=bool)
            described = model.describe()
        elif stragglers is not None:
            masks = check_mask("stragglers", stragglers, self.n)
            masks = masks[None] if masks.ndim == 1 else masks
            if masks.shape[0] != steps:
                raise InvalidArgumentError("stragglers", f"holds {masks.shape[0]} masks for {steps} steps")
            described = "given masks"
        else:
            masks, described = None, f"deadline {deadline} s on measured compute times"
        expected = check_bool("expected", expected)
        records = []
        for t in range(steps):
            log = log_every > 0 and t % log_every == 0
            rec = self.step(None if masks is None else masks[t], deadline=deadline if masks is None else None, log=log)
            records.append(rec)
            if callback is not None:
                callback(rec)
        opt = np.array([r.opt_error for r in records])
        rels = np.array([r.rel_error for r in records if not math.isnan(r.rel_error)])
        mean, ci = _mean_interval(opt, confidence)
        exp_mean: float | None = None
        exp_ci: tuple[float, float] | None = None
        method = ""
        agrees = None
        if expected and model is not None:
            res = expected_error(self.scheme, model, normalized=True, progress=False)
            exp_mean, exp_ci, method = float(res.mean), (float(res.ci[0]), float(res.ci[1])), str(res.method)
            agrees = bool(ci[0] <= exp_ci[1] and exp_ci[0] <= ci[1])
        return CodedTrainingReport(
            records,
            mean,
            ci,
            float(rels.mean()) if rels.size else math.nan,
            exp_mean,
            exp_ci,
            method,
            agrees,
            sum(r.source == "table" for r in records),
            sum(r.source == "fallback" for r in records),
            parameter_digest(self.module),
            described,
        )


def coded_training_job(rank: int, world_size: int, spec: dict) -> dict:
    """A :func:`gcsim.executor.launch` job: build the model, data and trainer from ``spec`` and train.

    ``spec`` keys: ``code`` (path), ``make`` (a module-level callable ``make(rank) -> (module,
    optimizer, data, loss_fn)``), ``steps``, ``stragglers`` (a model), ``seed``, ``batch_size``,
    ``collective``, ``log_every``, ``expected``, ``torch_seed``.  Returns the report's
    :meth:`~CodedTrainingReport.to_dict` and the rank.
    """
    import torch

    torch.manual_seed(int(spec.get("torch_seed", 0)))
    module, optimizer, data, loss_fn = spec["make"](rank)
    trainer = CodedTrainer(
        spec["code"],
        module,
        optimizer,
        data,
        batch_size=int(spec.get("batch_size", 8)),
        loss_fn=loss_fn,
        seed=int(spec.get("seed", 0)),
        collective=spec.get("collective", "all-gather"),
    )
    report = trainer.train(
        int(spec["steps"]),
        spec.get("stragglers"),
        seed=int(spec.get("seed", 0)),
        deadline=spec.get("deadline"),
        log_every=int(spec.get("log_every", 1)),
        expected=bool(spec.get("expected", True)),
        confidence=float(spec.get("confidence", 0.95)),
    )
    return {"rank": rank, **report.to_dict()}
