"""The built-in stochastic-rounding quantizers: max-abs scale and Euclidean-norm scale (theory §58.1).

``maxabs``: ``s = max_c |y_c|`` (the largest coordinate lands on the top level; the finest grid
that covers the message).  ``norm``: ``s = ‖y‖₂`` (QSGD's scale, Alistarh et al. 2017: coarser,
but the bound of Lemma 58.1 is then in terms of the message norm directly).
"""

from __future__ import annotations

import numpy as np

from ._registry import Quantizer

__all__ = ["QUANTIZERS", "max_abs_scale", "norm_scale"]


def max_abs_scale(y: np.ndarray) -> np.ndarray:
    """``max_c |y_c|`` of each message (last axis).

    >>> max_abs_scale(np.array([[3.0, -4.0]])).tolist()
    [4.0]
    """
    return np.abs(y).max(axis=-1, initial=0.0)


def norm_scale(y: np.ndarray) -> np.ndarray:
    """``‖y‖₂`` of each message (last axis), never below ``max_c |y_c|`` after round-off.

    >>> norm_scale(np.array([[3.0, -4.0]])).tolist()
    [5.0]
    """
    return np.maximum(np.linalg.norm(y, axis=-1), max_abs_scale(y))


QUANTIZERS = (
    Quantizer("maxabs", max_abs_scale, "stochastic rounding to 2^b levels on [-max|y|, max|y|]", order=0),
    Quantizer("norm", norm_scale, "stochastic rounding to 2^b levels on [-‖y‖₂, ‖y‖₂] (QSGD's scale)", order=1),
)
