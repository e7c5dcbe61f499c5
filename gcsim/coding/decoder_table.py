"""Decoder tables for deployment: the optimal decoder of every straggler pattern, precomputed.

A master that must decode within microseconds cannot solve a least-squares problem per
iteration.  A :class:`DecoderTable` stores, for every straggler set ``S`` with ``|S| <= s_max``
(or for an explicit list of patterns), the minimum-norm optimal decoder

.. math::  X^*(F) = B_F^{+} T \\in \\mathbb R^{n \\times m}\\quad(\\text{zero rows off } F = [n] \\setminus S),

and an index from a pattern to its row (Tandon et al. ship the same thing for their exact codes as
``getA`` + ``calculate_indexA``).  The table travels with its encoder: :meth:`DecoderTable.export`
writes ``B``, the assignment and the decoders as one checksummed gcsim bundle
(:func:`gcsim.io.bundle.save_bundle`), and :func:`load_decoder_table` reads it back bit-exactly.

Modules: :mod:`gcsim.coding.table_patterns` (the pattern -> row index and its documented row
order: by ``|S|``, then lexicographic ``S``), :mod:`gcsim.coding.table_solve` (the batched SVD
solves and the certified fallback), :mod:`gcsim.coding.dense_table` (:class:`DecoderTable`) and
:mod:`gcsim.coding.structured_tables` (:class:`StructuredDecoderTable`, gains instead of dense
decoders); this module builds (:func:`decoder_table`) and loads (:func:`load_decoder_table`) either
and re-exports their public names.  A bundle names its table class by its ``layout`` (none: dense;
``"structured-rd"``: structured), which :meth:`DecoderTable.from_arrays` dispatches on.

Sizes are refused up front: more than :data:`gcsim.limits.MAX_PATTERNS` patterns, or more than
:data:`gcsim.limits.MAX_DENSE_ENTRIES` stored decoder entries (``patterns x n x m``).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from .._validation import check_int
from ..errors import CatalogueError, InvalidArgumentError, VerificationError
from ..io.bundle import DEFAULT_MAX_BYTES, load_bundle
from .dense_table import TABLE_FORMAT_VERSION, TABLE_KIND, DecoderTable, DecoderTableParams, _dense_decoder_table
from .schemes import Scheme
from .structured import StructuredRD
from .structured_tables import (
    STRUCTURED_FORMAT_VERSION,
    STRUCTURED_LAYOUT,
    StructuredDecoderTable,
    gains,
    structured_decoder_table,
)
from .table_patterns import pattern_count, pattern_of_row, pattern_row
from .table_solve import FALLBACKS, DecoderLookup, certified_decoder

__all__ = [
    "STRUCTURED_LAYOUT",
    "STRUCTURED_FORMAT_VERSION",
    "StructuredDecoderTable",
    "structured_decoder_table",
    "gains",
    "TABLE_KIND",
    "TABLE_FORMAT_VERSION",
    "DecoderTable",
    "DecoderTableParams",
    "decoder_table",
    "load_decoder_table",
    "SampledVerificationWarning",
    "pattern_count",
    "pattern_row",
    "pattern_of_row",
    "DecoderLookup",
    "FALLBACKS",
    "certified_decoder",
]


def decoder_table(
    scheme: Scheme,
    s_max: int | None = None,
    *,
    patterns: Any = None,
    stragglers: Any = None,
    rcond: float | None = None,
) -> DecoderTable:
    """Precompute the minimum-norm optimal decoder of every pattern with ``|S| <= s_max`` (or a given list).

    Parameters
    ----------
    scheme : Scheme
        The encoder (see :func:`gcsim.coding.encode`).
    s_max : int, optional
        Every straggler set with at most ``s_max`` stragglers, in the order of the module docstring.
    patterns : array_like of bool, shape (count, n), optional
        Explicit non-straggler masks (True = arrived), kept in the order given.
    stragglers : sequence of sequences of int, optional
        Explicit straggler sets (worker indices), kept in the order given.
    rcond : float, optional
        Relative singular-value cutoff of ``B_F`` (default ``max(mN, |F|) eps``, as
        ``numpy.linalg.lstsq(rcond=None)``).

    Raises
    ------
    InvalidArgumentError
        Not exactly one of ``s_max``/``patterns``/``stragglers``; a table of more than
        :data:`gcsim.limits.MAX_PATTERNS` patterns or :data:`gcsim.limits.MAX_DENSE_ENTRIES` stored
        entries (refused before anything is computed, naming the count and the limit); duplicate patterns.

    Examples
    --------
    >>> import numpy as np
    >>> from gcsim.coding.schemes import encode
    >>> sch = encode(np.ones((4, 4), dtype=int), 2, "exact-gaussian", s=2, seed=0)
    >>> t = decoder_table(sch, s_max=2)         # 1 + 4 + 6 patterns, exact for |S| <= 2
    >>> len(t), t.decoders.shape, round(float(t.errors.max()), 12)
    (11, (11, 4, 2), 0.0)
    >>> decoder_table(sch, s_max=2, stragglers=[[0]])
    Traceback (most recent call last):
    ...
    gcsim.errors.InvalidArgumentError: s_max: give exactly one of s_max, patterns or stragglers
    """
    if isinstance(scheme, StructuredRD):  # no dense B: the gains of theory §47.7
        if rcond is not None:
            raise InvalidArgumentError("rcond", "a structured RD table has no rank cutoff (theory §42.1, Remark (i))")
        return structured_decoder_table(scheme, s_max, patterns=patterns, stragglers=stragglers)
        return structured_decoder_table(scheme, s_max, patterns=patterns, stragglers=stragglers)
    return _dense_decoder_table(scheme, s_max, patterns=patterns, stragglers=stragglers, rcond=rcond)


class SampledVerificationWarning(UserWarning):
    """A decoder table was loaded with ``verify="sample"``: only some rows were re-solved.

    The message says how many rows were checked and that the others were not.
    """


def load_decoder_table(
    path: str | Path, *, verify: bool | str = True, sample: int | None = None, max_bytes: int | None = None
) -> DecoderTable:
    """Load a table written by :meth:`DecoderTable.export`: checksum, shapes, invariants and every decoder checked.

    Parameters
    ----------
    path : path
        Bundle stem, ``.json`` or ``.npz`` path.
    verify : True, "all", "sample" or False
        ``True`` or ``"all"`` (default): re-solve **every** pattern and compare it with its stored
        decoder and error (:meth:`DecoderTable.verification_report`: batched SVDs, about the cost
        of building the table).  ``"sample"`` (or ``sample=k``): an explicit opt-in to re-solve only
        ``k`` random rows (default 256) besides the first and the last; the decoders and errors of
        the other rows are not checked (a table whose other rows were changed and re-checksummed
        loads), and a :class:`SampledVerificationWarning` says so.  ``False``: no re-solve (the
        checksum and the structural checks only: shapes, dtypes, finite values, zero weights on
        stragglers, errors in ``[0, mN]``).
    sample : int, optional
        Rows re-solved by a sampled check; giving it opts in to sampling (refused with
        ``verify=False`` or ``verify="all"``).
    max_bytes : int, optional
        Size bound passed to :func:`gcsim.io.bundle.load_bundle` (default its ``DEFAULT_MAX_BYTES``).

    Raises
    ------
    InvalidArgumentError
        ``verify`` not one of the values above, or ``sample`` with ``verify=False`` or ``"all"``.
    CatalogueError
        Anything :func:`~gcsim.io.bundle.load_bundle` refuses (missing, tampered, truncated files),
        a bundle that is not a decoder table, malformed arrays, or decoders that do not verify.

    Examples
    --------
    >>> import tempfile
    >>> import numpy as np
    >>> from gcsim.coding.schemes import encode
    >>> A = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
    >>> path = decoder_table(encode(A, 1, "naive"), s_max=2).export(tempfile.mkdtemp() + "/t")
    >>> len(load_decoder_table(path))          # every one of the 1 + 3 + 3 rows re-solved
    7
    >>> load_decoder_table(path, verify="all", sample=3)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gcsim.errors.InvalidArgumentError: sample: asks for a sampled check, but verify='all' (sampling: ...)
    """
    if not isinstance(verify, (bool, str)) or verify not in (True, False, "all", "sample"):
        raise InvalidArgumentError("verify", f"must be True, 'all', 'sample' or False, got {verify!r}")
    if sample is not None and verify in (False, "all"):
        raise InvalidArgumentError(
            "sample", f"asks for a sampled check, but verify={verify!r} (sampling: sample=k, or verify='sample')"
        )
    if sample is not None or verify == "sample":  # the explicit opt-in: sample=k, or verify="sample" (256)
        verify = "sample"
        sample = 256 if sample is None else check_int("sample", sample, minimum=1)
    arrays, manifest = load_bundle(path, max_bytes=DEFAULT_MAX_BYTES if max_bytes is None else max_bytes)
    metadata = manifest.get("metadata") or {}
    try:
        table = DecoderTable.from_arrays(arrays, metadata)  # the class of the bundle's layout
    except CatalogueError as exc:
        raise CatalogueError(f"{path}: {exc}") from None
    if verify is not False:
        try:
            table.scheme.verify()
            report = table.verification_report(sample if verify == "sample" else None)
        except VerificationError as exc:
            raise CatalogueError(f"{path}: stored decoders do not verify: {exc}") from None
        if report["unchecked"]:
            warnings.warn(
                SampledVerificationWarning(
                    f"{path}: verify='sample' re-solved {len(table) - report['unchecked']} of the table's "
                    f"{len(table)} rows; the decoders and errors of the other {report['unchecked']} rows were "
                    "NOT checked (only their shapes, finiteness, zero weights on stragglers and error range): "
                    "a changed row among them loads; use verify=True to check every row"
                ),
                stacklevel=2,
            )
    return table
