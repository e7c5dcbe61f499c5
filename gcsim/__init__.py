"""gcsim: coding theory for distributed learning.

Layers, bottom to top (each imports only from the ones below it; ``tests/test_architecture.py``
checks this from the source):

* :mod:`gcsim.io` -- the generic bundle format (arrays + JSON manifest), atomic files;
  :mod:`gcsim.sweep` -- seeded sweeps of independent tasks, serially or on Dask;
* :mod:`gcsim.combinatorics` -- BIBDs, strongly regular graphs, coset bipartite
  graphs, bi-regular graphs, finite fields (exact, verified, three-valued existence);
* :mod:`gcsim.coding` -- approximate gradient coding: encoders, straggler
  models, the optimal-error kernel, decoders, bounds;
* :mod:`gcsim.cerar` -- ring-based coded approximate all-reduce;
* :mod:`gcsim.catalogue` -- objects of every kind as verified bundles, named instances;
* :mod:`gcsim.advisor` -- which code for n workers, a load, stragglers and links (``gcsim.advise``);
* :mod:`gcsim.executor` -- the same codes on real arrays (NumPy, CuPy, torch) and on torch.distributed;
* :mod:`gcsim.learning` -- training with coded gradients;
* :mod:`gcsim.app` -- the ``gcsim`` command line and ``gcsim reproduce``.

The public names are listed in ``__init__.pyi`` (type checkers and tab completion read it)
and imported on first use, so ``import gcsim`` stays fast (galois, cvxpy and torch are
imported only when needed).

Examples
--------
>>> import gcsim
>>> gcsim.bibd(7, 3, 1).params
BIBDParams(v=7, b=7, r=3, k=3, lam=1)
"""

import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
