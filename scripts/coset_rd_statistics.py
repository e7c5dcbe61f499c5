"""Recompute the numerical statements about RD on the coset graph (27, 2, 5) in docs/theory.md §30.6.

For ``draws`` random-diagonal draws (the library's own ``_diagonals``, theory §5.4) it reports

* the fraction of draws whose ``B`` (54 x 54 for m = 2, 81 x 81 for m = 3) is invertible, decided
  *exactly* by :func:`gcsim.combinatorics.coset.encoded_matrix_is_invertible` (floats converted to
  exact rationals, rank by modular / Bareiss elimination), with a 95 % Wilson interval;
* for RD(0.1), the median and minimum smallest singular value of ``B`` (numpy SVD; ``B`` has
  entries of size about 1, so these are far above the SVD's error ``~ 54 u ||B||_2``);
* Proposition 5's bound ``Pr[invertible] <= C(2k, k) 4^-k`` for RD(0), m = 2.

Usage::

    .venv/bin/python scripts/coset_rd_statistics.py [--draws 2000] [--seed 0]

Takes one to three minutes for 2000 draws on one core.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from gcsim.coding.schemes import _diagonals
from gcsim.combinatorics.coset import coset_graph, encoded_matrix, encoded_matrix_is_invertible


def wilson(successes: int, total: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """95 % Wilson score interval of a binomial proportion."""
    phat = successes / total
    den = 1 + z * z / total
    centre = (phat + z * z / (2 * total)) / den
    half = z * math.sqrt(phat * (1 - phat) / total + z * z / (4 * total * total)) / den
    return centre - half, centre + half


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    k = 27
    print(f"Proposition 5 bound for RD(0), m = 2: C(2k,k) 4^-k = {math.comb(2 * k, k) / 4**k:.4f}")
    for m, eps in ((2, 0.0), (2, 0.1), (3, 0.0)):
        g = coset_graph(k, m, 5)
        rng = np.random.default_rng([args.seed, m, int(eps * 10)])
        ok, smallest = 0, []
        for _ in range(args.draws):
            d = _diagonals(rng, m, g.num_workers, eps, "rademacher")
            ok += encoded_matrix_is_invertible(g, d)
            if eps > 0:
                smallest.append(np.linalg.svd(encoded_matrix(g, d), compute_uv=False)[-1])
        lo, hi = wilson(ok, args.draws)
        line = (
            f"(27, {m}, 5), RD({eps}): invertible in {ok}/{args.draws} = {ok / args.draws:.3f} "
            f"(95% CI [{lo:.3f}, {hi:.3f}])"
        )
        if smallest:
            line += f"; smallest singular value: median {np.median(smallest):.2e}, min {np.min(smallest):.2e}"
        print(line)


if __name__ == "__main__":
    main()
