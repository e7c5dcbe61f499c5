"""All-reduce collectives side by side, each with its alpha-beta cost (docs/guides/collectives.md, theory §56).

A registry (:mod:`gcsim.executor.allreduce._registry`) discovers every public module of this package
that exposes ``COLLECTIVES``:

* :mod:`~gcsim.executor.allreduce.ring` -- the classic ring (reduce-scatter + all-gather);
* :mod:`~gcsim.executor.allreduce.tree` -- binomial-tree reduce + broadcast;
* :mod:`~gcsim.executor.allreduce.halving_doubling` -- recursive halving-doubling (Rabenseifner);
* :mod:`~gcsim.executor.allreduce.straggler_aware` -- StragglAR-style: reduce-scatter among the ready
  ranks while a persistent straggler is late, then a short completion phase;
* :mod:`~gcsim.executor.allreduce.cerar_ring` -- the CERAR ring with the exact design.

Each runs over ``torch.distributed`` point-to-point operations (gloo; NCCL untested) and counts the
bytes it sends; :func:`get_collective` gives the implementation and the prediction together.
"""

from ._linkmodel import Post, Recv, Schedule, Send, max_min_rates, simulate, wire_bytes
from ._p2p import CollectiveFailureError
from ._registry import (
    Collective,
    CollectiveCost,
    collective_names,
    collectives,
    cost_table,
    get_collective,
    predicted_time,
    summation_bound,
)

__all__ = [
    "Collective",
    "CollectiveCost",
    "CollectiveFailureError",
    "collectives",
    "collective_names",
    "get_collective",
    "cost_table",
    "summation_bound",
    "predicted_time",
    "Schedule",
    "Send",
    "Recv",
    "Post",
    "simulate",
    "max_min_rates",
    "wire_bytes",
]
