"""Decoder tables of structured RD encoders, without a dense ``B`` (theory §47.7, a corollary of §42).

The implementation lives in :mod:`gcsim.coding.decoder_table` (one module, so that
:meth:`~gcsim.coding.decoder_table.DecoderTable.from_arrays` and
:func:`~gcsim.coding.decoder_table.decoder_table` dispatch to it without an import cycle); this module
is its public name.

For an RD encoder on a design with ``AᵀA = aI + λJ`` (:class:`~gcsim.coding.structured.StructuredRD`)
the minimum-norm optimal decoder of the non-stragglers ``F`` is (Corollary 47.7)

.. math::  X^*(F) = B_F^{+} T = \\Delta_{F'}^{+}\\, U\\, G_F,\\qquad
           G_F = k\\,(aI_m + \\lambda M_F)^{-1} \\in \\mathbb R^{m \\times m},

``U`` the ``n x m`` diagonals, ``Δ = diag(‖u_j‖²)`` (its pseudo-inverse restricted to
``F' = {j ∈ F: u_j ≠ 0}``) and ``M_F`` the ``m x m`` matrix of theory §42.1.  So a table stores,
per pattern, the ``m x m`` *gain* ``G_F`` and the error, and once the sparse incidence and the
diagonals: at PG(2, 97) (9,507 workers, ``m = 2``) a pattern costs 32 bytes of gains plus its
packed mask (1,189 bytes), where a dense decoder would be 152 kB.  Decoders are made on request,
one pattern at a time (:meth:`StructuredDecoderTable.decoder`); :meth:`~StructuredDecoderTable.decode`
never forms one.

:func:`structured_decoder_table` builds a table (all patterns with ``|S| <= s_max``, or an explicit
list), :meth:`StructuredDecoderTable.export` writes it as a gcsim bundle (``layout``
``"structured-rd"``), and :func:`gcsim.coding.decoder_table.load_decoder_table` reads it back and
re-checks every row with the certificate of Theorem 47.7b (:meth:`~StructuredDecoderTable.verification_report`):
no row is skipped -- the structured route has no rank decision (theory §42.1, Remark (i)).
"""

from __future__ import annotations

from .decoder_table import (
    STRUCTURED_FORMAT_VERSION,
    STRUCTURED_LAYOUT,
    StructuredDecoderTable,
    gains,
    structured_decoder_table,
)

__all__ = [
    "STRUCTURED_LAYOUT",
    "STRUCTURED_FORMAT_VERSION",
    "StructuredDecoderTable",
    "structured_decoder_table",
    "gains",
]
