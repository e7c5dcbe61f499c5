r"""Monte Carlo expected error with very many samples, in seeded chunks (serially or on Dask).

:func:`expected_error_sweep` estimates ``E_S[err(B, F)]`` from ``samples`` i.i.d. straggler
patterns split into chunks of ``chunk`` patterns.  Chunk ``i`` draws its patterns from its own
seed (:func:`gcsim.sweep.task_seed`\ ``(seed, i)``), evaluates them with
:func:`gcsim.coding.evaluate.optimal_error` and returns three numbers: its count ``n_i``, mean
``μ_i`` and sum of squared deviations ``M_i = Σ (x - μ_i)²``.  The chunks are merged in chunk
order with the pairwise update of Chan, Golub & LeVeque (1979): for two groups ``a``, ``b``
with ``n = n_a + n_b`` and ``δ = μ_b - μ_a``,

.. math::

    μ = μ_a + δ\,n_b/n, \qquad M = M_a + M_b + δ^2\,n_a n_b / n .

*Proof.* ``Σ_a (x-μ)^2 = M_a + n_a (μ_a-μ)^2`` (the cross term vanishes since
``Σ_a (x-μ_a) = 0``), likewise for ``b``; with ``μ_a-μ = -δ n_b/n`` and ``μ_b-μ = δ n_a/n``
the two extra terms add up to ``δ^2 (n_a n_b^2 + n_b n_a^2)/n^2 = δ^2 n_a n_b / n``. ∎

So the merged mean and variance are those of all ``samples`` values at once (up to rounding:
each chunk's statistics are computed in two passes, and the update never subtracts large
sums), and the 95% interval is the Student-``t`` interval of :func:`expected_error`'s Monte
Carlo path, ``μ ± t_{0.975, n-1} \sqrt{M/(n-1)}/\sqrt{n}``.  The memory is that of one chunk
per worker, whatever ``samples`` is.

**Same seed, same numbers.** The patterns depend on ``seed`` and ``chunk`` only (not on the
scheduler, the workers or the order in which chunks finish), so a Dask run equals the serial
run bit for bit.  They are not the patterns of ``expected_error(..., samples=samples,
seed=seed)``, which draws one stream: the two agree within their intervals, not to the bit.
"""

from __future__ import annotations

import functools
import math
import os
from typing import Any

import numpy as np

from .. import limits
from .._stats import t_interval
from .._validation import check_bool, check_dense_size, check_int
from ..errors import InvalidArgumentError
from ..sweep import check_scheduler, int_seed, run_sweep
from .evaluate import MIN_MC_SAMPLES, ExpectedErrorResult, _check_method, optimal_error
from .schemes import Scheme
from .straggler_base import StragglerModel

__all__ = ["expected_error_sweep", "merge_moments", "DEFAULT_CHUNK"]

#: patterns per chunk by default (a chunk of masks is ``chunk x n`` booleans)
DEFAULT_CHUNK = 65_536


def merge_moments(parts: list[tuple[int, float, float]]) -> tuple[int, float, float]:
    """Merge ``(count, mean, M2)`` triples in the order given (Chan, Golub & LeVeque 1979).

    ``M2`` is the sum of squared deviations from the mean; the result is the triple of the
    union of the groups.  Groups with count 0 are skipped.

    >>> merge_moments([(2, 1.0, 2.0), (2, 3.0, 2.0)])  # values 0, 2 and 2, 4
    (4, 2.0, 8.0)
    """
    n, mean, m2 = 0, 0.0, 0.0
    for count, mu, dev in parts:
        if count == 0:
            continue
        if n == 0:
            n, mean, m2 = count, mu, dev
            continue
        total = n + count
        delta = mu - mean
        mean = mean + delta * count / total
        m2 = m2 + dev + delta * delta * (n * count / total)
        n = total
    return n, float(mean), float(m2)


def _chunk_moments(
    scheme: Scheme, model: StragglerModel, method: str, normalized: bool, size: int, seq: np.random.SeedSequence
) -> tuple[int, float, float]:
    """One chunk: draw ``size`` patterns from ``seq``, evaluate them, return (count, mean, M2)."""
    masks = model.sample(size, int_seed(seq))
    values = np.asarray(optimal_error(scheme, masks, normalized=normalized, method=method, progress=False), float)
    mean = float(values.mean())
    return int(values.size), mean, float(np.sum((values - mean) ** 2))


def expected_error_sweep(
    scheme: Scheme,
    model: StragglerModel,
    *,
    samples: int = 10**8,
    chunk: int = DEFAULT_CHUNK,
    seed: int = 0,
    method: str = "auto",
    normalized: bool = False,
    scheduler: Any = "serial",
    workers: int | None = None,
    progress: bool = True,
    checkpoint: str | os.PathLike | None = None,
) -> ExpectedErrorResult:
    r"""Monte Carlo ``E_S[err]`` over ``samples`` patterns in seeded chunks (module docstring).

    Parameters
    ----------
    scheme : Scheme
        The encoder (optimal decoding).
    model : straggler model
        An i.i.d. model: ``"fixed"`` (uniform ``s``-subsets) or ``"bernoulli"`` (plain Monte
        Carlo, also for homogeneous ``p``, where :func:`expected_error` stratifies).
    samples : int >= MIN_MC_SAMPLES
        Patterns in all.
    chunk : int >= 1
        Patterns per task (the last task gets the rest).  Part of the random stream: the same
        ``(seed, chunk)`` gives the same numbers on every scheduler.  ``chunk x n`` must fit
        :data:`gcsim.limits.MAX_DENSE_ENTRIES`.
    seed : int >= 0
        Seed of the sweep; chunk ``i`` uses :func:`gcsim.sweep.task_seed` ``(seed, i)``.
    method : str
        Evaluation route of :func:`~gcsim.coding.evaluate.optimal_error`.
    normalized : bool
        Errors divided by ``mN``.
    scheduler, workers, progress, checkpoint
        As in :func:`gcsim.sweep.run_sweep`: where the chunks run, a progress bar over chunks, a
        folder of finished chunks that a rerun reuses.

    Returns
    -------
    ExpectedErrorResult
        ``mean``, Student-``t`` 95% ``ci``, ``stderr``, ``count == samples`` and ``method``
        ``"monte-carlo n=<samples> in <k> chunks of <chunk>"``; ``values`` is ``None``.

    Examples
    --------
    >>> import numpy as np
    >>> from gcsim.coding.schemes import encode
    >>> from gcsim.coding.stragglers import straggler_model
    >>> sch = encode(np.eye(4, dtype=int), 1, "naive")
    >>> res = expected_error_sweep(sch, straggler_model("fixed", 4, s=1), samples=1000, chunk=300, progress=False)
    >>> res.mean, res.count, res.method  # every pattern loses exactly one part: error 1
    (1.0, 1000, 'monte-carlo n=1000 in 4 chunks of 300')
    """
    progress = check_bool("progress", progress)
    if not isinstance(scheme, Scheme):
        raise InvalidArgumentError("scheme", f"must be a Scheme (see gcsim.coding.encode), got {type(scheme).__name__}")
    if not isinstance(model, StragglerModel) or not model.streamable:  # i.i.d. rows of one stream
        raise InvalidArgumentError(
            "model",
            "must be a 'fixed' or 'bernoulli' straggler model (i.i.d. patterns); use expected_error for "
            "exact averages, Markov chains and traces",
        )
    if model.n != scheme.n:
        raise InvalidArgumentError("model", f"has n = {model.n} workers, the scheme has n = {scheme.n}")
    samples = check_int("samples", samples, minimum=MIN_MC_SAMPLES)
    # one task per chunk is listed up front and one s x s solve made per pattern: bounded first
    limits.check_work("samples", samples, "Monte Carlo patterns", limit_name="MAX_MC_DRAWS", unit="draws")
    chunk = check_int("chunk", chunk, minimum=1)
    check_dense_size("chunk", min(chunk, samples), scheme.n, "one chunk of straggler masks")
    seed = check_int("seed", seed, minimum=0)
    method = _check_method(method)
    normalized = check_bool("normalized", normalized)
    check_scheduler(scheduler)
    sizes = [chunk] * (samples // chunk) + ([samples % chunk] if samples % chunk else [])
    task = functools.partial(_chunk_moments, scheme, model, method, normalized)
    parts = run_sweep(
        task,
        sizes,
        seed=seed,
        scheduler=scheduler,
        workers=workers,
        progress=progress,
        checkpoint=checkpoint,
        desc=f"Monte Carlo chunks of {chunk}",
    )
    n, mean, m2 = merge_moments(parts)
    se = math.sqrt(m2 / (n - 1)) / math.sqrt(n)
    return ExpectedErrorResult(
        mean,
        t_interval(mean, se, n - 1),
        f"monte-carlo n={n} in {len(sizes)} chunks of {chunk}",
        n,
        se,
        normalized,
        model.describe(),
        None,
    )
