"""The comparison of theory §60: the codes compared, and one run of each on the same data.

The library pieces (the coded gradient of one iteration, the wall-clock model, the training
loop) are in :mod:`gcsim.learning.train`; this module holds the experiment: the schemes of
theory §60 (:func:`default_codes`) and the side-by-side runs (:func:`compare`) that the
``gcsim train`` command and the ``training`` stage of ``gcsim reproduce`` use.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._optional import require
from .._validation import check_int
from ..combinatorics.baselines import fractional_repetition
from ..combinatorics.bibd_geometries import mcfarland_design
from ..combinatorics.coset import coset_graph
from .datasets import Dataset
from .train import CodeSpec, train

__all__ = ["default_codes", "compare"]


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
