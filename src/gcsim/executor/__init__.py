"""Executor layer: run codes on real arrays (NumPy / CuPy) and on a real engine (torch.distributed).

* :mod:`gcsim.executor.arrays` -- :func:`run_scheme` (encode -> drop stragglers -> decode on
  real gradients, measured vs predicted error), :func:`run_cerar` (the CERAR ring over N
  buffers), :func:`batched_optimal_error` (Gram-identity evaluator in any array namespace);
* :mod:`gcsim.executor.launcher` -- launcher with timeouts (no hang, no orphan, named stalled ranks);
* :mod:`gcsim.executor.collectives` -- CERAR over isend/irecv (the rounds of
  :mod:`gcsim.cerar.ring`), own ring all-reduce, ``dist.all_reduce`` baseline, byte counters;
* :mod:`gcsim.executor.parameter_server` -- parameter-server gradient coding on a simulated clock
  (same seed, same numbers);
* :mod:`gcsim.executor.experiments` -- the runners: :func:`run_collectives`,
  :func:`run_parameter_server` (byte formulas from :mod:`gcsim.cerar.traffic`);
* :mod:`gcsim.executor.ddp_hook` -- a DDP communication hook running a CERAR design;
* :mod:`gcsim.executor.netem` -- rate-limited network namespaces (root only).

Names are loaded lazily: ``import gcsim.executor`` does not import torch.
"""
from __future__ import annotations

import importlib

_LAZY = {
    "run_scheme": "arrays", "SchemeRun": "arrays", "batched_optimal_error": "arrays", "get_namespace": "arrays",
    "run_cerar": "cerar_arrays", "CerarRun": "cerar_arrays",
    "launch": "launcher", "LaunchResult": "launcher", "RankFailure": "launcher", "LaunchTimeoutError": "launcher",
    "free_port": "launcher",
    "RingFailureError": "collectives", "ByteCounter": "collectives", "cerar_all_reduce": "collectives",
    "ring_all_reduce": "collectives", "library_all_reduce": "collectives", "as_design": "collectives",
    "simulated_schedule": "parameter_server", "seeded_delays": "parameter_server",
    "parameter_server_job": "parameter_server",
    "run_collectives": "experiments", "collectives_job": "experiments", "run_parameter_server": "experiments",
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
