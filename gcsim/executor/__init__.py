"""Executor layer: run codes on real arrays (NumPy / CuPy) and on a real engine (torch.distributed).

* :mod:`gcsim.executor.arrays` -- :func:`run_scheme` (encode -> drop stragglers -> decode on
  real gradients, measured vs predicted error), :func:`run_cerar` (the CERAR ring over N
  buffers), :func:`batched_optimal_error` (Gram-identity evaluator in any array namespace);
* :mod:`gcsim.executor.launcher` -- launcher with timeouts (no hang, no orphan, named stalled ranks);
* :mod:`gcsim.executor.collectives` -- CERAR over isend/irecv (the rounds of
  :mod:`gcsim.cerar.ring`), own ring all-reduce, ``dist.all_reduce`` baseline, byte counters;
* :mod:`gcsim.executor.parameter_server` -- parameter-server gradient coding of a least-squares toy
  on a simulated clock (same seed, same numbers): a test fixture of the launcher's fault paths;
* :mod:`gcsim.executor.experiments` -- the runners: :func:`run_collectives` (byte formulas from
  :mod:`gcsim.cerar.traffic`) and :func:`run_parameter_server` (the test fixture);
* :mod:`gcsim.executor.ddp_hook` -- a DDP communication hook running a CERAR design, its public
  state (:func:`make_hook_state`, :class:`CerarHookState`);
* :mod:`gcsim.executor.replicas` -- replica drift and periodic re-synchronisation (:class:`ReplicaSync`);
* :mod:`gcsim.executor.coded_training` -- gradient-coded data-parallel training of any torch model
  with an exported gradient code (:class:`CodedTrainer`);
* :mod:`gcsim.executor.netem` -- rate-limited network namespaces (root only).

Names are loaded lazily: ``import gcsim.executor`` does not import torch.
"""

import lazy_loader as _lazy

# public names listed in __init__.pyi, imported on first use
__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
