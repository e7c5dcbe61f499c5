"""CERAR (:func:`gcsim.executor.collectives.cerar_all_reduce`), exact design, registered with its cost (§56.5).

The CERAR ring of ``c`` components runs ``L = c + N − 2`` rounds of ``ceil(d/c)`` scalars
(:mod:`gcsim.cerar.traffic`); with the exact design (``c <= N``) its output is the sum.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..._validation import check_int
from ...cerar.design import CerarDesign
from ...cerar.factory import design
from ...cerar.ring import num_rounds, packet_size
from ...cerar.traffic import cerar_bytes
from ..collectives import ByteCounter, cerar_all_reduce
from ._linkmodel import Schedule, ring_pattern
from ._registry import Collective, CollectiveCost, check_sizes, check_straggler, gamma, unit_roundoff

__all__ = ["cerar_cost", "cerar_schedule", "cerar", "cerar_roundoff", "COLLECTIVES"]


@functools.lru_cache(maxsize=16)
def _exact_design(N: int, c: int) -> CerarDesign:
    return design(N, c, "exact")


def _components(N: int, c: Any) -> int:
    return N if c is None else check_int("c", c, minimum=1, maximum=N)


def cerar_cost(N: int, d: int, itemsize: int, *, straggler: Any = None, c: Any = None) -> CollectiveCost:
    """Bytes and rounds of CERAR with ``c`` components (default ``N``): ``L = c + N − 2`` rounds of ``ceil(d/c)``.

    Examples
    --------
    >>> k = cerar_cost(4, 1000, 4, c=2)
    >>> k.bytes_sent[0], k.rounds
    (8000, 4)
    """
    N, d, itemsize = check_sizes(N, d, itemsize)
    check_straggler(straggler, N)
    c = _components(N, c)
    per_round = packet_size(d, c) * itemsize
    return CollectiveCost(
        "cerar", N, d, itemsize, (cerar_bytes(N, c, d, itemsize),) * N, (), (per_round,) * num_rounds(N, c)
    )


def cerar_schedule(N: int, d: int, itemsize: int, *, straggler: Any = None, c: Any = None) -> Schedule:
    """The messages of :func:`cerar`: ``L = c + N − 2`` ring rounds of ``ceil(d/c)`` scalars (whole packets).

    Examples
    --------
    >>> cerar_schedule(4, 1000, 4, c=2).messages
    (4, 4, 4, 4)
    """
    N, d, itemsize = check_sizes(N, d, itemsize)
    check_straggler(straggler, N)
    c = _components(N, c)
    return ring_pattern("cerar", N, num_rounds(N, c), packet_size(d, c) * itemsize)


def cerar_roundoff(g: Any, itemsize: int, *, c: Any = None) -> np.ndarray:
    """Elementwise bound on ``|output − Σ_i g_i|`` of :func:`cerar` on every rank (theory §56.6).

    Rank ``i``'s output is computed by at most ``K = c + 2L + 2`` roundings (encoding ``c`` terms, ``L``
    rounds each adding or removing one symbol, decoding ``L + 1`` terms) on terms bounded by
    ``|G_i| + rowsum|D_i| · V`` with ``V = Σ_j |A_j| |G_j|`` summed over rows: ``γ_K`` times that
    (Higham, Lemma 3.3), the largest over ``i``.

    Examples
    --------
    >>> b = cerar_roundoff(np.ones((2, 3)), 4)
    >>> b.shape, bool(b.max() < 1e-5)
    ((3,), True)
    """
    g = np.asarray(g, dtype=np.float64)
    N, d = g.shape
    k = _components(N, c)
    des = _exact_design(N, k)
    w = packet_size(d, k)
    G = np.zeros((N, k * w))
    G[:, :d] = np.abs(g)
    G = G.reshape(N, k, w)
    V = np.einsum("jab,jbw->w", np.abs(des.encoders), G)
    scale = G + np.abs(des.decoders).sum(axis=2)[:, :, None] * V[None, None, :]
    K = k + 2 * des.L + 2
    return gamma(K, unit_roundoff(int(itemsize))) * scale.max(axis=0).reshape(-1)[:d]


def cerar(tensor, *, group=None, counter: ByteCounter | None = None, straggler: Any = None, c: Any = None):
    """:func:`gcsim.executor.collectives.cerar_all_reduce` with the exact design of ``c`` components (default ``N``)."""
    import torch.distributed as dist

    N = dist.get_world_size(group)
    check_straggler(straggler, N)
    return cerar_all_reduce(tensor, _exact_design(N, _components(N, c)), group=group, counter=counter)


COLLECTIVES = (
    Collective(
        "cerar",
        cerar,
        cerar_cost,
        "CERAR ring with the exact design (c ≤ N components); c + N − 2 rounds of ceil(d/c)",
        "§56.5",
        options=("c",),
        roundoff=cerar_roundoff,
        schedule=cerar_schedule,
        order=50,
    ),
)
