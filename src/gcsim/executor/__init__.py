"""Executor layer: run codes on real arrays (NumPy / CuPy) and on a real engine (torch.distributed).

* :mod:`gcsim.executor.arrays` -- :func:`run_scheme` (encode -> drop stragglers -> decode on
  real gradients, measured vs predicted error), :func:`run_cerar` (the CERAR ring over N
  buffers), :func:`batched_optimal_error` (Gram-identity evaluator in any array namespace);
* :mod:`gcsim.executor.torchdist` -- launcher with timeouts (no hang, no orphan, named stalled
  ranks), parameter-server gradient coding on a simulated clock (same seed, same numbers),
  CERAR over isend/irecv, own ring all-reduce, ``dist.all_reduce`` baseline, byte counters;
* :mod:`gcsim.executor.ddp_hook` -- a DDP communication hook running a CERAR design;
* :mod:`gcsim.executor.netem` -- rate-limited network namespaces (root only).

Names are loaded lazily: ``import gcsim.executor`` does not import torch.
"""
from __future__ import annotations

import importlib

_LAZY = {
    "run_scheme": "arrays", "SchemeRun": "arrays", "run_cerar": "cerar_arrays", "CerarRun": "cerar_arrays",
    "batched_optimal_error": "arrays", "get_namespace": "arrays",
    "launch": "torchdist", "LaunchResult": "torchdist", "RankFailure": "torchdist",
    "LaunchTimeoutError": "torchdist", "simulated_schedule": "torchdist", "seeded_delays": "torchdist",
    "RingFailureError": "torchdist", "ByteCounter": "torchdist", "cerar_all_reduce": "torchdist",
    "ring_all_reduce": "torchdist", "library_all_reduce": "torchdist", "run_collectives": "torchdist",
    "run_parameter_server": "torchdist", "cerar_bytes": "torchdist", "ring_bytes": "torchdist",
    "predicted_byte_ratio": "torchdist",
    "register_cerar_hook": "ddp_hook", "cerar_hook": "ddp_hook", "CerarHookState": "ddp_hook",
    "NetemTopology": "netem", "netem_available": "netem",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(f"gcsim.executor.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'gcsim.executor' has no attribute {name!r}")


def __dir__():
    return __all__
