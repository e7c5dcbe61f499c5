r"""Training with quantized coded messages at equal bits per step (theory §58).

:func:`train_quantized` runs the parameter-server iteration of :mod:`gcsim.learning.train` with one
change: worker ``j`` sends its coded message ``y_j`` (:func:`gcsim.learning.train.transmissions`)
rounded by a quantizer of :mod:`gcsim.coding.quantizers` at ``b_j`` bits per coordinate, optionally
with error feedback (:class:`gcsim.coding.quantize.ErrorFeedback`), and the master decodes the
quantized messages of the non-stragglers with the code's decoder
(:meth:`gcsim.learning.train.CodedGradient.decoders`).  ``bits=None`` sends the messages unquantized
(float64 arithmetic, counted as 32-bit floats).  :func:`equal_bits_codes` builds the comparison of
``docs/results/quantized.md``: codes whose messages cost the same number of bits per step,
:func:`compare_at_equal_bits` runs them over seeds and summarizes with t-intervals over seeds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._optional import require
from .._stats import t_interval
from .._validation import check_bool, check_int, check_real
from ..coding.bounds import split_blocks
from ..coding.quantize import SCALE_BITS, ErrorFeedback, allocate_bits, allocation_weights, decode, message_bits
from ..coding.quantizers import as_bits, get_quantizer
from ..coding.stragglers import straggler_model
from ..errors import InvalidArgumentError
from ..limits import check_entries
from .datasets import Dataset
from .models import MLP
from .train import SGD, CodedGradient, CodeSpec, TrainResult, partition, transmissions

__all__ = [
    "QuantizedCode",
    "bits_per_step",
    "train_quantized",
    "equal_bits_codes",
    "allocated_code",
    "compare_at_equal_bits",
    "summarize",
]


@dataclass
class QuantizedCode:
    """A code and how its messages are sent.

    Attributes
    ----------
    spec : CodeSpec
        Assignment, ``m``, encoder and decoder (:class:`gcsim.learning.train.CodeSpec`).
    bits : int, array_like of int (n,) or None
        Bits per coordinate of each worker's message (``1..32``); None: unquantized 32-bit floats.
    quantizer : str
        A name of :func:`gcsim.coding.quantizers.quantizer_names`.
    error_feedback : bool
        Each worker adds its last rounding residual to its next message (theory §58.4).
    extras : dict
        What built it (the allocation weights of :func:`allocated_code`).

    Examples
    --------
    >>> c = QuantizedCode(CodeSpec("uncoded", np.eye(4, dtype=int), decoder="arrivals"), bits=4)
    >>> c.label, bits_per_step(c, d=100)
    ('uncoded', 1728)
    """

    spec: CodeSpec
    bits: Any = None
    quantizer: str = "maxabs"
    error_feedback: bool = False
    extras: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.spec, CodeSpec):
            raise InvalidArgumentError("spec", f"must be a CodeSpec, got {type(self.spec).__name__}")
        if self.bits is not None:
            self.bits = as_bits(self.bits, (self.spec.n,))
        get_quantizer(self.quantizer)
        self.error_feedback = check_bool("error_feedback", self.error_feedback)
        if self.error_feedback and self.bits is None:
            raise InvalidArgumentError("error_feedback", "needs quantized messages (bits)")

    @property
    def label(self) -> str:
        """The legend entry (the spec's label)."""
        return self.spec.label


def bits_per_step(code: QuantizedCode, d: int) -> int:
    """Bits all ``n`` workers send in one step: ``Σ_j (⌈d/m⌉ b_j + 32)``, or ``32 n ⌈d/m⌉`` unquantized.

    Examples
    --------
    >>> spec = CodeSpec("c", np.eye(2, dtype=int), m=2)
    >>> bits_per_step(QuantizedCode(spec), 10), bits_per_step(QuantizedCode(spec, bits=[2, 4]), 10)
    (320, 94)
    """
    if not isinstance(code, QuantizedCode):
        raise InvalidArgumentError("code", f"must be a QuantizedCode, got {type(code).__name__}")
    m, n = code.spec.m, code.spec.n
    if code.bits is None:
        return n * message_bits(d, m, 32, scale_bits=0)
    return int(sum(message_bits(d, m, int(b), scale_bits=SCALE_BITS) for b in code.bits))


def train_quantized(
    code: QuantizedCode,
    dataset: Dataset,
    *,
    model: MLP | None = None,
    p: Any = 0.2,
    iterations: int = 200,
    lr: float = 0.1,
    momentum: float = 0.0,
    batch_per_part: int | None = None,
    eval_every: int = 10,
    seed: int = 0,
) -> TrainResult:
    """SGD with coded gradients whose messages are quantized (module docstring), under Bernoulli(p) stragglers.

    The partition, the straggler masks, the mini-batches and the initial parameters are seeded as in
    :func:`gcsim.learning.train.train` (same ``seed``: same masks for codes with the same ``n``); the
    roundings use their own generator ``default_rng([seed, 2])``.

    Parameters
    ----------
    code : QuantizedCode
    dataset : Dataset
    model : MLP, optional
        Default ``MLP((features, 32, classes))``.
    p : float in [0, 1) or array (n,) of them
        Straggling probability of each worker.
    iterations, eval_every : int
    lr, momentum : float
        SGD's step size and heavy-ball momentum.
    batch_per_part : int, optional
        Examples drawn from each part per step (default: the whole part).
    seed : int

    Returns
    -------
    TrainResult
        History columns ``iteration``, ``train_loss``, ``train_acc``, ``test_loss``, ``test_acc``,
        ``rel_error`` (mean ``‖ĝ - g‖²/‖g‖²`` since the last row), ``bits`` (cumulative bits sent).

    Examples
    --------
    >>> from gcsim.learning.datasets import load_digits
    >>> code = QuantizedCode(CodeSpec("uncoded 4-bit", np.eye(4, dtype=int), decoder="arrivals"), bits=4)
    >>> res = train_quantized(code, load_digits(), model=MLP((64, 8, 10)), iterations=20, eval_every=10, lr=0.5)
    >>> bool(res.final["train_loss"] < res.history.train_loss[0])
    True
    """
    require("pandas", "learning", "gcsim.learning.quantized_training.train_quantized")
    import pandas as pd

    if not isinstance(code, QuantizedCode):
        raise InvalidArgumentError("code", f"must be a QuantizedCode, got {type(code).__name__}")
    if not isinstance(dataset, Dataset):
        raise InvalidArgumentError("dataset", f"must be a Dataset, got {type(dataset).__name__}")
    spec = code.spec
    iterations = check_int("iterations", iterations, minimum=1)
    eval_every = check_int("eval_every", eval_every, minimum=1)
    seed = check_int("seed", seed, minimum=0)
    model = MLP((dataset.n_features, 32, dataset.n_classes)) if model is None else model
    if not isinstance(model, MLP) or model.sizes[0] != dataset.n_features:
        raise InvalidArgumentError("model", f"must be an MLP with {dataset.n_features} inputs, got {model!r}")
    opt = SGD(check_real("lr", lr, minimum=0.0, strict_min=True), momentum)
    coder = CodedGradient(spec, p, seed)
    N, n, m, d = spec.num_parts, spec.n, spec.m, model.d
    check_entries("iterations", (iterations, n), "the straggler masks (iterations x n)")
    parts = partition(dataset.n_train, N, seed)
    size = parts.shape[1]
    b = size if batch_per_part is None else check_int("batch_per_part", batch_per_part, minimum=1, maximum=size)
    masks = straggler_model("bernoulli", n, p=coder.p).sample(iterations, seed)
    rng = np.random.default_rng([seed, 1])
    q_rng = np.random.default_rng([seed, 2])
    quantizer = get_quantizer(code.quantizer)
    feedback = ErrorFeedback(quantizer, (n, -(-d // m))) if code.error_feedback else None
    per_step = bits_per_step(code, d)
    theta = model.init(seed)
    rows: list[dict[str, Any]] = []
    errs: list[float] = []

    def record(t: int) -> None:
        tr = model.evaluate(theta, dataset.x_train, dataset.y_train)
        te = model.evaluate(theta, dataset.x_test, dataset.y_test)
        rel = float(np.mean(errs)) if errs else np.nan
        rows.append(dict(iteration=t, train_loss=tr[0], train_acc=tr[1], test_loss=te[0], test_acc=te[1],
                         rel_error=rel, bits=t * per_step))  # fmt: skip
        errs.clear()

    record(0)
    for t in range(iterations):
        idx = parts if b == size else np.take_along_axis(parts, rng.random(parts.shape).argsort(axis=1)[:, :b], 1)
        G = model.part_gradients(theta, dataset.x_train[idx], dataset.y_train[idx])
        B, X = coder.decoders(masks[t : t + 1], draws=[t])
        Y = transmissions(B, split_blocks(G, m))[0]  # (n, w) exact messages
        if feedback is not None:
            Y = feedback.send(Y, code.bits, q_rng)
        elif code.bits is not None:
            Y = quantizer.quantize(Y, code.bits, q_rng)
        ghat = decode(X[0], Y, d)
        g = G.sum(axis=0)
        errs.append(float(np.sum((ghat - g) ** 2) / max(float(np.sum(g**2)), 1e-300)))
        theta = opt.step(theta, ghat)
        if not np.all(np.isfinite(theta)):
            raise FloatingPointError(f"{spec.label}: parameters not finite at iteration {t}")
        if (t + 1) % eval_every == 0 or t + 1 == iterations:
            record(t + 1)
    params = {
        "label": spec.label,
        "method": spec.method,
        "decoder": spec.decoder,
        "m": m,
        "N": N,
        "n": n,
        "bits": None if code.bits is None else code.bits.tolist(),
        "quantizer": code.quantizer,
        "error_feedback": code.error_feedback,
        "bits_per_step": per_step,
        "iterations": iterations,
        "lr": lr,
        "momentum": momentum,
        "batch_per_part": b,
        "seed": seed,
        "d": d,
    }
    return TrainResult(spec.label, pd.DataFrame(rows), theta, params)


def equal_bits_codes(assignment: Any, *, budget: int = 4) -> list[QuantizedCode]:
    """Codes on ``assignment`` (``N x n``) whose workers each send about ``budget · d`` bits per step.

    * ``RD m=32/budget, float32``: gradient coding with communication reduction instead of rounding;
    * ``RD m=2, b=budget·2`` and ``RD m=1, b=budget``: quantized codes, the latter also with error
      feedback;
    * ``uncoded b=budget`` (with and without error feedback): ``A = I_n``, ignore the stragglers and
      rescale (quantized SGD);
    * ``uncoded float32``: the reference at ``32/budget`` times the bits.

    Every code uses the optimal decoder except the uncoded ones (``"arrivals"``).

    Examples
    --------
    >>> [c.label for c in equal_bits_codes(np.eye(3, dtype=int))][:3]
    ['RD m=8 float32', 'RD m=2 8-bit', 'RD m=1 4-bit']
    """
    A = np.asarray(getattr(assignment, "assignment", assignment))
    budget = check_int("budget", budget, minimum=1, maximum=16)
    if 32 % budget:
        raise InvalidArgumentError("budget", f"must divide 32 (float32 at m = 32/budget), got {budget}")
    if A.ndim != 2:
        raise InvalidArgumentError("assignment", f"must be a 2-D 0/1 matrix, got shape {A.shape}")
    n = A.shape[1]
    m_float = 32 // budget
    eye = np.eye(n, dtype=np.int64)
    rd, unc = "rd", ("naive", "arrivals")
    b = budget
    return [
        QuantizedCode(CodeSpec(f"RD m={m_float} float32", A, m_float, rd)),
        QuantizedCode(CodeSpec(f"RD m=2 {2 * b}-bit", A, 2, rd), bits=2 * b),
        QuantizedCode(CodeSpec(f"RD m=1 {b}-bit", A, 1, rd), bits=b),
        QuantizedCode(CodeSpec(f"RD m=1 {b}-bit + EF", A, 1, rd), bits=b, error_feedback=True),
        QuantizedCode(CodeSpec(f"uncoded {b}-bit", eye, 1, *unc), bits=b),
        QuantizedCode(CodeSpec(f"uncoded {b}-bit + EF", eye, 1, *unc), bits=b, error_feedback=True),
        QuantizedCode(CodeSpec("uncoded float32", eye, 1, *unc)),
    ]


def allocated_code(assignment: Any, *, budget: int = 4, p: Any = 0.2, max_bits: int = 16) -> QuantizedCode:
    """``RD m=1`` with ``budget · n`` bits shared by :func:`gcsim.coding.quantize.allocate_bits` (theory §58.3).

    The weights are :func:`gcsim.coding.quantize.allocation_weights` of the optimal decoders over every
    Bernoulli(``p``) straggler pattern with its probability (``n ≤ 12``), or over 4096 seeded patterns.

    Examples
    --------
    >>> import gcsim
    >>> A = gcsim.bibd(7, 3, 1).assignment
    >>> allocated_code(A, p=[0.8] + [0.05] * 6).bits.tolist()   # the unreliable worker's decoder weight is small
    [3, 5, 4, 4, 4, 4, 4]
    """
    A = np.asarray(getattr(assignment, "assignment", assignment))
    budget = check_int("budget", budget, minimum=1, maximum=16)
    spec = CodeSpec(f"RD m=1 {budget}-bit allocated", A, 1, "rd")
    coder = CodedGradient(spec, p, 0)
    n = spec.n
    if n <= 12:  # every pattern with its Bernoulli probability
        masks = np.array(np.meshgrid(*[[False, True]] * n, indexing="ij")).reshape(n, -1).T
        pr = np.prod(np.where(masks, 1 - coder.p, coder.p), axis=1)
        weights = allocation_weights(coder.base, masks, probabilities=pr / pr.sum())
    else:
        weights = allocation_weights(coder.base, straggler_model("bernoulli", n, p=coder.p).sample(4096, 0))
    bits = allocate_bits(weights, budget * n, min_bits=1, max_bits=max_bits)
    return QuantizedCode(spec, bits=bits, extras={"weights": weights})


def compare_at_equal_bits(codes: Sequence[QuantizedCode], dataset: Dataset, seeds: Sequence[int], **kwargs: Any) -> Any:
    """Run every code for every seed (:func:`train_quantized`); one row per (code, seed) with the final numbers.

    Returns a :class:`pandas.DataFrame` with columns ``label``, ``seed``, ``bits_per_step``,
    ``train_loss``, ``test_acc`` (final), ``rel_error`` (the median over the run of the evaluation
    windows' mean ``‖ĝ - g‖²/‖g‖²``: a median, since the ratio explodes where ``g`` nearly vanishes at
    the end of a run); :func:`summarize` makes the table.

    Examples
    --------
    >>> from gcsim.learning.datasets import load_digits
    >>> codes = [QuantizedCode(CodeSpec("u", np.eye(2, dtype=int), decoder="arrivals"), bits=2)]
    >>> df = compare_at_equal_bits(codes, load_digits(), [0, 1], model=MLP((64, 4, 10)), iterations=3)
    >>> df.shape
    (2, 6)
    """
    require("pandas", "learning", "gcsim.learning.quantized_training.compare_at_equal_bits")
    import pandas as pd

    if not seeds:
        raise InvalidArgumentError("seeds", "must name at least one seed")
    rows = []
    for code in codes:
        for s in seeds:
            res = train_quantized(code, dataset, seed=int(s), **kwargs)
            h = res.history
            rows.append(
                {
                    "label": code.label,
                    "seed": int(s),
                    "bits_per_step": res.params["bits_per_step"],
                    "train_loss": float(h.train_loss.iloc[-1]),
                    "test_acc": float(h.test_acc.iloc[-1]),
                    "rel_error": float(h.rel_error.iloc[1:].median()),
                }
            )
    return pd.DataFrame(rows)


def summarize(runs: Any, level: float = 0.95) -> Any:
    """Mean and ``level`` t-interval over seeds (the unit is the seed) of each code's final numbers.

    Examples
    --------
    >>> import pandas as pd
    >>> runs = pd.DataFrame({"label": ["a"] * 3, "seed": [0, 1, 2], "bits_per_step": [8] * 3,
    ...                      "train_loss": [1.0, 2.0, 3.0], "test_acc": [0.5] * 3, "rel_error": [0.1] * 3})
    >>> summarize(runs).loc[0, ["train_loss", "train_loss_lo"]].round(3).tolist()
    [2.0, -0.484]
    """
    require("pandas", "learning", "gcsim.learning.quantized_training.summarize")
    import pandas as pd

    out = []
    for label, grp in runs.groupby("label", sort=False):
        row: dict[str, Any] = {"label": label, "seeds": len(grp), "bits_per_step": int(grp.bits_per_step.iloc[0])}
        for col in ("train_loss", "test_acc", "rel_error"):
            x = grp[col].to_numpy(dtype=float)
            mean = float(x.mean())
            se = float(x.std(ddof=1) / np.sqrt(x.size)) if x.size > 1 else float("inf")
            row[col], (row[f"{col}_lo"], row[f"{col}_hi"]) = mean, t_interval(mean, se, x.size - 1, level)
        out.append(row)
    return pd.DataFrame(out)
