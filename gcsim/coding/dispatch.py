"""``gcsim.encode``: one call for every size, the dense encoder or RD without dense matrices (theory §42, §44).

:func:`gcsim.coding.encode` builds the dense encoding matrix ``B`` (``m N x n``) and refuses a
``B`` or an assignment beyond :data:`gcsim.limits.MAX_DENSE_ENTRIES`.  For RD (the encoders whose
``B`` stacks ``A diag(d_l)``, :attr:`~gcsim.coding.encoders.Encoder.diagonal_stack`) two encoders
never form ``B`` and draw the same diagonals for the same seed; the command line takes them by
itself beyond the limit.  :func:`encode` here, exported as ``gcsim.encode``, picks the route the
same way (:func:`encode_route`):

* ``"dense"``: ``B`` fits the limit (``m N n <= MAX_DENSE_ENTRIES``), or the method is not RD:
  :func:`gcsim.coding.encode` (a :class:`~gcsim.coding.Scheme`; its refusal beyond the limit
  names the routes below);
* ``"structured"``: RD beyond the limit on an assignment with ``AᵀA = (k − λ)I + λJ``, ``k > λ``
  (every symmetric BIBD, checked exactly in integers):
  :func:`gcsim.coding.structured.encode_structured` (theory §42);
* ``"sparse"``: RD beyond the limit on any other 0/1 assignment:
  :func:`gcsim.coding.sparse_routes.encode_sparse` (theory §44; it refuses, naming why, when it
  proves no lower bound ``c > 0``).

Within the limit nothing changes: ``gcsim.encode`` and :func:`gcsim.coding.encode` return the same
:class:`~gcsim.coding.Scheme`.  Beyond it the returned encoder is taken by
:func:`gcsim.expected_error`, :func:`gcsim.optimal_error` and the decoder tables as the CLI takes it.

Examples
--------
>>> import gcsim
>>> from gcsim import limits
>>> d = gcsim.bibd(13, 4)                                 # B: 26 x 13 = 338 entries at m = 2
>>> encode_route(d, 2), type(encode(d, 2, seed=3)).__name__
('dense', 'Scheme')
>>> old, limits.MAX_DENSE_ENTRIES = limits.MAX_DENSE_ENTRIES, 300
>>> encode_route(d, 2), type(encode(d, 2, seed=3)).__name__
('structured', 'StructuredRD')
>>> limits.MAX_DENSE_ENTRIES = old
"""

from __future__ import annotations

from typing import Any

import scipy.sparse as sp

from .. import limits
from .._validation import check_int, check_real
from ..errors import GcsimError, InvalidArgumentError, VerificationError
from .encoders import get_encoder
from .schemes import Scheme, encode as encode_dense
from .sparse_routes import encode_sparse
from .structured import StructuredRD, _as_incidence, check_pair_gram, encode_structured

__all__ = ["ROUTES", "encode", "encode_route"]

#: the routes of :func:`encode`, in the order they are considered
ROUTES = ("dense", "structured", "sparse")

#: the options the RD encoders without dense matrices take (those of the dense ``"rd"`` encoder)
_RD_OPTIONS = ("dist",)


def _shape(design: Any) -> tuple[int, int] | None:
    """``(N, n)`` of a design or a matrix, read without a dense array (None: unknown)."""
    if hasattr(design, "num_parts") and hasattr(design, "num_workers"):
        return int(design.num_parts), int(design.num_workers)
    shape = getattr(design, "shape", None)
    if shape is not None and len(shape) == 2:
        return int(shape[0]), int(shape[1])
    incidence = getattr(design, "incidence", None)  # a design kept as a difference set: made sparse on request
    if incidence is not None and sp.issparse(incidence):
        return int(incidence.shape[0]), int(incidence.shape[1])
    return None


def encode_route(assignment_or_design: Any, m: int, method: str = "rd") -> str:
    """Which of :data:`ROUTES` :func:`encode` takes for this design, ``m`` and method.

    ``"dense"`` when the method is not RD or the dense ``B`` (``m N x n``) fits
    :data:`gcsim.limits.MAX_DENSE_ENTRIES` (read at call time) or the design's shape cannot be
    read without building it; beyond the limit ``"structured"`` when the sparse incidence has
    ``AᵀA = (k − λ)I + λJ`` with ``k > λ`` (:func:`gcsim.coding.structured.check_pair_gram`,
    exact), else ``"sparse"``.

    Parameters
    ----------
    assignment_or_design : design, 0/1 matrix (dense or ``scipy.sparse``)
        As for :func:`encode`.
    m : int
        Communication reduction ``m >= 1``.
    method : str
        A registered encoder (:func:`gcsim.coding.get_encoder`).

    Returns
    -------
    str
        ``"dense"``, ``"structured"`` or ``"sparse"``.

    Raises
    ------
    InvalidArgumentError
        ``m < 1`` or an unknown method.

    Examples
    --------
    >>> import numpy as np
    >>> encode_route(np.eye(3, dtype=int), 2), encode_route(np.eye(3, dtype=int), 2, "ns")
    ('dense', 'dense')
    """
    m = check_int("m", m, minimum=1)
    if not _beyond_dense(assignment_or_design, m, method):
        return "dense"
    try:
        check_pair_gram(_as_incidence(assignment_or_design, None), "design")
    except GcsimError:  # not AᵀA = aI + λJ (or not 0/1): the certified sparse route
        return "sparse"
    return "structured"


def _beyond_dense(design: Any, m: int, method: str) -> bool:
    """RD whose dense ``B`` (``m N x n``) would pass :data:`gcsim.limits.MAX_DENSE_ENTRIES` (read at call time)."""
    shape = _shape(design)
    if get_encoder(method).structured_route(m) != "diagonals" or shape is None:
        return False
    return m * shape[0] * shape[1] > limits.MAX_DENSE_ENTRIES


def encode(
    assignment_or_design: Any, m: int, method: str = "rd", *, eps: float = 0.0, seed: int = 0, **options: Any
) -> Scheme | StructuredRD:
    """Build an encoder at any size: the dense :class:`~gcsim.coding.Scheme`, or RD without dense matrices.

    The route is :func:`encode_route`'s (the module docstring gives the rule): within
    :data:`gcsim.limits.MAX_DENSE_ENTRIES` this is :func:`gcsim.coding.encode` (theory §5.4); beyond
    it, for ``method="rd"``, :func:`gcsim.coding.structured.encode_structured` (theory §42) or
    :func:`gcsim.coding.sparse_routes.encode_sparse` (theory §44), whose diagonals are those the
    dense encoder draws for the same ``seed``, ``eps`` and ``dist``.

    Parameters
    ----------
    assignment_or_design : array_like, scipy.sparse matrix or design
        ``N x n`` 0/1 assignment (parts x workers), or an object with ``.assignment`` (a design kept
        sparse is read through its ``.incidence``); ``method="weighted"`` reads ``.weights``.
    m : int
        Communication reduction ``m >= 1``.
    method : str
        A registered encoder (:func:`gcsim.coding.get_encoder`); beyond the dense limit only the RD
        encoders have a route.
    eps : float
        Perturbation ``ε >= 0`` of the random diagonals.
    seed : int
        Seed of every random choice.
    **options
        The encoder's options (:func:`gcsim.coding.encode`); beyond the dense limit RD takes ``dist``.

    Returns
    -------
    Scheme or StructuredRD
        A :class:`~gcsim.coding.Scheme` on the dense route; a
        :class:`~gcsim.coding.structured.StructuredRD` (structured) or a
        :class:`~gcsim.coding.sparse_routes.SparseRD` (sparse) beyond the limit.  All three are
        taken by :func:`gcsim.expected_error` and :func:`gcsim.optimal_error`.

    Raises
    ------
    InvalidArgumentError
        Bad ``m``, ``eps``, ``seed``, method or option; beyond the limit, an option RD's routes
        without dense matrices do not take, or a design neither route certifies (the message says why).
    SizeLimitError
        A method other than RD beyond the limit (the message names the RD routes), or the routes'
        own ``n x m²`` work arrays beyond the limit.
    VerificationError
        A matrix that is not 0/1.

    Examples
    --------
    >>> import numpy as np
    >>> from gcsim import limits
    >>> from gcsim.coding.evaluate import optimal_error
    >>> A = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
    >>> dense = encode(A, 2, seed=1)
    >>> old, limits.MAX_DENSE_ENTRIES = limits.MAX_DENSE_ENTRIES, 12     # B: 6 x 3 = 18 entries
    >>> big = encode(A, 2, seed=1)
    >>> limits.MAX_DENSE_ENTRIES = old
    >>> type(dense).__name__, type(big).__name__
    ('Scheme', 'StructuredRD')
    >>> mask = [True, False, True]
    >>> bool(abs(optimal_error(dense, mask) - optimal_error(big, mask)) < 1e-12)
    True
    """
    m = check_int("m", m, minimum=1)
    if not _beyond_dense(assignment_or_design, m, method):
        return encode_dense(assignment_or_design, m, method, eps=eps, seed=seed, **options)
    eps = check_real("eps", eps, minimum=0.0)
    seed = check_int("seed", seed, minimum=0)
    unknown = sorted(set(options) - set(_RD_OPTIONS))
    if unknown:
        raise InvalidArgumentError(
            "options",
            f"unknown option(s) for method {method!r} beyond gcsim.limits.MAX_DENSE_ENTRIES (its routes without "
            f"dense matrices take {', '.join(_RD_OPTIONS)}): {unknown}",
        )
    try:  # encode_structured checks AᵀA = aI + λJ exactly, as encode_route does (a circulant one in O(nnz + k²))
        return encode_structured(assignment_or_design, m, eps=eps, seed=seed, **options)
    except VerificationError:  # not AᵀA = aI + λJ: the certified sparse route (encode_route's "sparse")
        return encode_sparse(assignment_or_design, m, eps=eps, seed=seed, **options)
