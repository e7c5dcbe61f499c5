"""Approximate gradient coding: encoders, straggler models, error evaluators, bounds (theory §5, §40–§48).

* :mod:`gcsim.coding.schemes` -- :func:`encode` and :class:`Scheme`; :mod:`gcsim.coding.encoders` -- the
  registry of encoders (naive, RD(ε), NS, NS-worker, Construction 2, the exact family, classic codes,
  weighted graph codes; :func:`register_encoder`); :mod:`gcsim.coding.partial` -- partial gradient coding;
* :mod:`gcsim.coding.stragglers`, :mod:`gcsim.coding.delays` -- straggler and delay models, arrival rules;
* :mod:`gcsim.coding.kernels` -- the optimal-error kernel (array API: NumPy, CuPy, torch);
* :mod:`gcsim.coding.evaluate` -- optimal / fixed-decoder error, expected and worst case;
* :mod:`gcsim.coding.decoders` -- every decoder once (optimal, unbiased RD, rescales);
* :mod:`gcsim.coding.bounds`, :mod:`gcsim.coding.verify` -- the proved bounds and their verification engine;
* :mod:`gcsim.coding.decoder_table` -- precomputed decoders for deployment;
* :mod:`gcsim.coding.quantize`, :mod:`gcsim.coding.quantizers` -- quantized messages: the exact expected
  error and its bounds, bit allocation, error feedback (theory §58);
* :mod:`gcsim.coding.sweeps` -- Monte Carlo in seeded chunks, serially or on Dask;
* :mod:`gcsim.coding.experiments` -- the named error-curve experiments of ``gcsim reproduce``.

Names are loaded on first use (``import gcsim.coding`` imports none of the modules).
"""

import lazy_loader as _lazy

# public names listed in __init__.pyi, imported on first use
__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
