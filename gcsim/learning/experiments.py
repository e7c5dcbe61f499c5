"""The comparisons of theory §60: the codes compared, and one run of each on the same data.

The library pieces (the coded gradient of one iteration, the wall-clock model, the training
loop) are in :mod:`gcsim.learning.train`; this module holds the experiments that the
``gcsim train`` command and the ``training`` stage of ``gcsim reproduce`` use:

* :func:`default_codes` — the schemes of theory §60 on ``n = 16`` workers (the paper's first
  claim: its codes converge faster than the baselines, per iteration and per simulated second);
* :func:`delay_clock` — the delay-model clock of one code (shifted-exponential delays whose
  shift is the worker's compute and message time, the first ``n - s`` arrivals used);
* :func:`precision_codes` — the structured codes and the exact family on ``n = 25`` workers,
  trained with messages in float64 / float32 / bfloat16 (the second claim: the interpolation
  code's decoding breaks in low precision, theory §60.4);
* :func:`compare` — side-by-side runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._optional import require
from .._validation import check_int, check_real
from ..coding.delays import DelayStragglerModel, arrival_rule, delay_model
from ..combinatorics.baselines import fractional_repetition
from ..combinatorics.bibd_geometries import mcfarland_design
from ..combinatorics.coset import coset_graph
from ..combinatorics.srg import srg
from ..combinatorics.srg_graph import StronglyRegularGraph
from ..errors import InvalidArgumentError, NotConstructibleError
from .datasets import Dataset
from .train import CodeSpec, WallClockModel, train

__all__ = ["default_codes", "precision_codes", "delay_clock", "compare", "PRECISION_SRG", "PRECISION_S"]

#: the strongly regular graph of the precision experiment: Paley(25), n = N = 25, each worker holds 12 parts
PRECISION_SRG = (25, 12, 5, 6)
#: stragglers the exact family is built for in the precision experiment (r = 12 >= s + m)
PRECISION_S = 4


def default_codes(n: int = 16) -> list[CodeSpec]:
    """The schemes compared in theory §60, all on ``n = 16`` workers.

    * uncoded: ``A = I_16``, ignore stragglers, rescale by ``n/|F|``;
    * on the McFarland symmetric design (16, 6, 2) (each part on r = 6
      workers, each worker holds 6 parts), ``m = 2``: naive stacking, RD(0)
      (one draw), RD(0) redrawn every iteration with the unbiased decoder,
      NS (Gaussian), the exact family with Gaussian ``H`` (Kadhe et al.) and
      with Vandermonde ``H`` (Ye & Abbe), both for ``s = 4``;
    * the coset graph (8, 2, 3) (N = 8 parts, r = 6, load 3) with RD(0.1), ``m = 2``;
    * fractional repetition for ``s = 3`` (``m = 1``, exact m = 1 code).

    All use the optimal decoder unless stated.

    Examples
    --------
    >>> [c.label for c in default_codes()][:2]
    ['uncoded (ignore stragglers)', 'naive stacking m=2']
    """

    n = check_int("n", n, minimum=16, maximum=16)
    bibd = mcfarland_design(2).assignment
    coset = coset_graph(8, 2, 3).assignment
    return [
        CodeSpec("uncoded (ignore stragglers)", np.eye(n, dtype=np.int64), 1, "naive", "arrivals"),
        CodeSpec("naive stacking m=2", bibd, 2, "naive"),
        CodeSpec("RD(0) m=2", bibd, 2, "rd"),
        CodeSpec("RD(0) redrawn, unbiased m=2", bibd, 2, "rd", "unbiased", redraw=True),
        CodeSpec("NS m=2", bibd, 2, "ns", options={"dist": "gaussian"}),
        CodeSpec("coset (8,2,3) RD(0.1) m=2", coset, 2, "rd", options={"eps": 0.1}),
        CodeSpec("fractional repetition m=1 (s=3)", fractional_repetition(n, 3).assignment, 1, "fractional-repetition"),
        CodeSpec("exact Gaussian m=2 (s=4)", bibd, 2, "exact-gaussian", options={"s": 4}),
        CodeSpec("exact Vandermonde m=2 (s=4)", bibd, 2, "exact-vandermonde", options={"s": 4}),
    ]


def precision_codes() -> list[CodeSpec]:
    """The codes of the precision experiment (theory §60.4), all on Paley(25) with ``m = 2``.

    Paley(25) is the strongly regular graph (25, 12, 5, 6) (over GF(25)): ``n = N = 25``
    workers and parts, worker ``j`` holds the 12 parts adjacent to it.  The structured codes RD(0), NS (Gaussian)
    and Construction 2 (``hadamard-ns``) are compared with the exact family for ``s = 4``
    (:data:`PRECISION_S`) with Gaussian ``H`` (Kadhe et al.) and with Vandermonde ``H`` on
    Chebyshev nodes (Ye & Abbe: polynomial interpolation), whose ``κ(B_F)`` is about ``3e10``
    here (median over 4-straggler patterns): float64 carries it, float32 does not.  All use the optimal decoder.

    Examples
    --------
    >>> [c.label for c in precision_codes()][-1], precision_codes()[0].n
    ('exact Vandermonde m=2 (s=4)', 25)
    """
    graph = srg(*PRECISION_SRG)
    if not isinstance(graph, StronglyRegularGraph):  # srg() returns a bool only with existence=True
        raise NotConstructibleError(f"no construction of the SRG{PRECISION_SRG}")
    A = graph.assignment
    s = PRECISION_S
    return [
        CodeSpec("RD(0) m=2", A, 2, "rd"),
        CodeSpec("NS m=2", A, 2, "ns", options={"dist": "gaussian"}),
        CodeSpec("Construction 2 (hadamard-ns) m=2", A, 2, "hadamard-ns"),
        CodeSpec(f"exact Gaussian m=2 (s={s})", A, 2, "exact-gaussian", options={"s": s}),
        CodeSpec(f"exact Vandermonde m=2 (s={s})", A, 2, "exact-vandermonde", options={"s": s}),
    ]


def delay_clock(
    spec: CodeSpec, d: int, batch_per_part: int, *, s: int, wallclock: WallClockModel | None = None, tail: float = 1.0
) -> DelayStragglerModel:
    """The delay-model clock of one code: shifted-exponential delays, the first ``n - s`` arrivals used.

    Worker ``j``'s delay is ``X_j = c_j + E_j``: the shift ``c_j = e_j t_ex + t_msg`` is its
    compute time (``e_j`` examples at ``t_ex`` seconds each) plus the time of its
    ``⌈d/m⌉``-scalar message, both from ``wallclock`` (:class:`WallClockModel`), and
    ``E_j`` is exponential with mean ``tail · c_j`` (``rate = 1 / (tail c_j)``).  An iteration
    lasts the ``(n - s)``-th arrival (theory §47), so a code that sends shorter messages or
    holds fewer examples per worker runs more iterations per simulated second.

    Examples
    --------
    >>> spec = default_codes()[2]                  # RD(0) m=2: 6 parts of 16 examples per worker
    >>> clock = delay_clock(spec, d=9610, batch_per_part=16, s=3)
    >>> clock.describe().split("; ")[1]            # shift 96e-5 + 1e-3 + 4805 * 4 / 1e6 = 0.02118 s
    'wait for the first n - 3 arrivals'
    """
    if not isinstance(spec, CodeSpec):
        raise InvalidArgumentError("spec", f"must be a CodeSpec, got {type(spec).__name__}")
    wallclock = WallClockModel() if wallclock is None else wallclock
    if not isinstance(wallclock, WallClockModel):
        raise InvalidArgumentError("wallclock", f"must be a WallClockModel, got {type(wallclock).__name__}")
    s = check_int("s", s, minimum=0, maximum=spec.n - 1)
    tail = check_real("tail", tail, minimum=0.0, strict_min=True)
    examples = spec.assignment.T @ np.full(spec.num_parts, check_int("batch_per_part", batch_per_part, minimum=1))
    shift = examples * wallclock.seconds_per_example + wallclock.message_time(check_int("d", d, minimum=1), spec.m)
    dm = delay_model("shifted-exponential", spec.n, shift=shift.tolist(), rate=(1.0 / (tail * shift)).tolist())
    return DelayStragglerModel(dm, arrival_rule("first", s=s))


def compare(codes: Sequence[CodeSpec], dataset: Dataset, **kwargs: Any):
    """Train every code with the same data, initialization and straggler seed; one tidy DataFrame.

    Keyword arguments go to :func:`train`.  The frame has the columns of
    :attr:`TrainResult.history` plus ``label``.
    """
    require("pandas", "learning", "gcsim.learning.experiments.compare")
    import pandas as pd

    frames = []
    for spec in codes:
        res = train(spec, dataset, **kwargs)
        frames.append(res.history.assign(label=spec.label))
    return pd.concat(frames, ignore_index=True)
