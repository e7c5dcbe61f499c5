"""Size limits: the largest objects gcsim builds and the most patterns it enumerates.

gcsim refuses, *before* allocating anything or reading a file's data, an input whose dense
matrices or enumerations would exceed these limits, with a :class:`~gcsim.errors.SizeLimitError`
(an :class:`~gcsim.errors.InvalidArgumentError`) that names the argument, states the requested
size and the limit, and says where to raise it.  They are sized for a machine with 24 GiB of
memory shared with other work:

``MAX_DENSE_ENTRIES = 2**24`` (16,777,216 entries; a 4096 x 4096 matrix)
    Largest dense matrix gcsim materializes: an incidence / assignment /
    adjacency matrix (``v x b``), an encoding matrix ``B`` (``mN x n``), a
    ``q x q`` finite-field table, a batch of straggler masks (``count x n``), the
    gradients of a simulation (``N x d``), a trace of delays (``workers x iterations``),
    the per-worker parameters of a delay model (``n``).  One int64 copy is 128 MiB; building and
    exactly verifying an object keeps about six such arrays alive (the matrix,
    a float copy, its Gram matrix, the expected Gram matrix, comparison masks),
    so the peak stays near 1 GiB, and the exact Gram product ``A A^T`` costs at
    most ``4096^3 ≈ 6.9e10`` multiply-adds (a few seconds on one core).
``MAX_SPARSE_ENTRIES = 2**26`` (67,108,864 stored entries)
    Most stored entries of a sparse incidence gcsim builds from a formula without a dense
    matrix or a block list (:func:`gcsim.combinatorics.difference_families.circulant_incidence`):
    an int64 value and an int32 row index each, about 0.8 GiB at the limit, and the exact
    checks copy it once.  PG(2, 317), 100,807 workers holding 318 parts each, stores 32,056,626.
``MAX_PATTERNS = 10**7``
    Most straggler patterns an exhaustive enumeration (``AllPatternsModel``)
    walks through: ``C(n, s) <= 10^7`` patterns of one ``s x s`` solve each
    stay within minutes; beyond that use Monte Carlo (the ``"fixed"`` model).  It also bounds
    the tuples of chunk orders :func:`gcsim.coding.partial_stragglers.least_q_max` enumerates.
``MAX_MC_DRAWS = 2**27`` (134,217,728 draws)
    Most Monte Carlo draws of one estimate: ``samples`` of
    :func:`gcsim.coding.evaluate.expected_error`, of :func:`gcsim.advise` (per candidate) and of
    :func:`gcsim.coding.delays.expected_decode_time`, and the patterns of
    :func:`gcsim.coding.sweeps.expected_error_sweep`.  The straggler masks and delays are drawn in
    chunks (never all at once), but one value per draw is kept for the interval (the error and
    its control variate, 16 bytes; a decode time, 8 bytes): 2 GiB at the limit, and one ``s x s``
    solve per draw (hours on one core: use a scheduler).  ``10^8`` draws fit; ``10^12`` never
    start.  Models drawn at once (Markov chains, traces) also hold ``samples x n`` masks, within
    ``MAX_DENSE_ENTRIES``.
``MAX_EXISTENCE_ORDER = MAX_DENSE_ENTRIES``
    Largest group order for which an existence question runs an explicit
    cyclotomic (radical difference family) check: O(q) integer operations and
    memory, no field tables.  Larger orders are answered from number theory
    alone (divisibility, Bruck-Ryser-Chowla, parameter families, theorems).
``MAX_QUAD_TERMS = 5 * 10**7``
    Most work of one evaluation of the survival function ``P(D > t)`` that
    ``expected_decode_time(..., method="quad")`` integrates (a few hundred
    evaluations per integral).  Under the ``"first"`` rule with ``k = n - s``
    arrivals it adds the workers group by group (a group = workers with one delay
    distribution): ``sum over groups of k * min(c_g, k)`` terms plus 5,000 per group (its
    step in Python), about a nanosecond each; i.i.d. workers are one binomial tail (no
    terms).  The other rules cost 500 terms per group.  ``5e7`` terms is tens of seconds;
    beyond that use ``method="monte-carlo"``.
``MAX_STORAGE_WORK = 10**8``
    Most Python-level work of :func:`gcsim.cerar.storage.storage_lower_bound`,
    ``N (L+1) c L (c+L)`` coefficient operations modulo a prime (building every Hankel
    matrix ``H_t``): ``10^8`` is about a minute; ``(N, c) = (8, 16)`` is 2.5e6, ``(16, 32)`` 8.6e7.
``MAX_EXACT_WORK = 2**24``
    Most high-precision operations of :func:`gcsim.cerar.exact.vandermonde_exact`, ``N c^3``
    (``N`` inverses of ``c x c`` Vandermonde blocks): ``2^24`` is minutes at the ~400 digits
    ``c = 64`` needs; ``N = 4, c = 32`` is 131,072.  It also bounds the bits of an exact integer
    computed from a stated size (a Gaussian binomial, ``q^n`` in :mod:`gcsim.combinatorics.geometries`,
    the parameters of a polar space: :func:`check_power`), and the ``(diameter + 1)^3``
    operations of an association scheme's eigenmatrix
    (:func:`gcsim.combinatorics.srg_distance_union.scheme_eigenmatrix`).
``MAX_DPS = 10**4``
    Largest working precision of :func:`gcsim.cerar.exact.vandermonde_exact`, in decimal digits
    (given, or derived from the Gautschi bound of the nodes).
``MAX_MILP_WORKERS = 120``
    Most workers of :func:`gcsim.coding.milp.fixed_decoder_worst_case`: its mixed-integer
    program has ``n + n(n-1)/2`` variables and ``3 n(n-1)/2 + n + 1`` constraints (7,260 and
    21,541 at ``n = 120``).
``MAX_SDP_WORKERS = 400``
    Most workers of the convex encoders (``"slem-circulant"``, ``"fastest-mixing"``): the
    semidefinite program of fastest mixing has ``n^2`` variables (160,000 at ``n = 400``).
``MAX_LP_SUBSETS = 2**16``
    Most subsets of the workers (``2^n``, so ``n <= 16``) of the linear program of
    :func:`gcsim.coding.bounds.equal_load.equal_load_lower_bound` (theory §63.7): one variable and one
    exactly checked rational constraint of its dual per subset.

**Logical size.**  Every limit counts the *logical* size -- the product of the shape -- never
the memory an array happens to occupy: a zero-stride view (``np.broadcast_to(x, (10**9, 7))``)
takes a few bytes but any copy, comparison or result over it takes them all, so it is refused
like the dense array it stands for.  :func:`check_entries` is that one check; :func:`array_shape`
reads the shape of an input without copying it; :func:`check_npy_file` reads the header of a
``.npy`` file (magic, version, dtype, shape) and refuses it before any of its data is read.

Existence questions (``bibd(..., existence=True)``, ``srg(..., existence=True)``)
never build the object nor a ``q x q`` table: they answer for any size.

The limits are module attributes read at call time, so a user with a bigger
machine may raise them, in three ways:

* in Python: ``gcsim.limits.MAX_DENSE_ENTRIES = 2**26``;
* in the environment, read when :mod:`gcsim.limits` is imported: ``GCSIM_MAX_DENSE_ENTRIES=67108864``
  (``GCSIM_`` + the name; the value a positive integer, written ``67108864``, ``67_108_864``,
  ``6.7e7`` when that is a whole number, or ``2**26``);
* on the command line, for one command: ``gcsim --limit MAX_DENSE_ENTRIES=2**26 construct ...``
  (repeatable; see :func:`parse_limit`).

A malformed environment value does not break ``import gcsim``: it is ignored with a
:class:`LimitWarning` naming the variable (the limit keeps its default), and the
``gcsim`` command refuses it (exit 2); :func:`environment_problems` lists them.

>>> MAX_DENSE_ENTRIES == 4096 * 4096
True
>>> import numpy as np
>>> view = np.broadcast_to(np.ones(7, dtype=bool), (10**9, 7))   # 7 bytes of memory
>>> check_entries("masks", array_shape(view), "a batch of straggler masks")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
gcsim.errors.SizeLimitError: masks: a batch of straggler masks of shape (1,000,000,000 x 7) is 7,000,000,000 \
entries, over gcsim's limit of 16,777,216 entries (gcsim.limits.MAX_DENSE_ENTRIES; raise it there on a bigger \
machine)...
"""

from __future__ import annotations

import math
import numbers
import os
import re
import warnings
from typing import Any, NamedTuple

from .errors import InvalidArgumentError, SizeLimitError

__all__ = [
    "MAX_DENSE_ENTRIES",
    "MAX_SPARSE_ENTRIES",
    "MAX_PATTERNS",
    "MAX_MC_DRAWS",
    "MAX_EXISTENCE_ORDER",
    "MAX_QUAD_TERMS",
    "MAX_STORAGE_WORK",
    "MAX_EXACT_WORK",
    "MAX_DPS",
    "MAX_MILP_WORKERS",
    "MAX_SDP_WORKERS",
    "MAX_LP_SUBSETS",
    "logical_entries",
    "array_shape",
    "check_entries",
    "check_work",
    "check_power",
    "keep_sparse",
    "NpyHeader",
    "check_npy_file",
    "DEFAULTS",
    "parse_limit",
    "environment_problems",
    "LimitWarning",
]

#: The limits and their defaults (each a module attribute of the same name).
DEFAULTS: dict[str, int] = {
    "MAX_DENSE_ENTRIES": 2**24,
    "MAX_SPARSE_ENTRIES": 2**26,
    "MAX_PATTERNS": 10**7,
    "MAX_MC_DRAWS": 2**27,
    "MAX_EXISTENCE_ORDER": 2**24,
    "MAX_QUAD_TERMS": 5 * 10**7,
    "MAX_STORAGE_WORK": 10**8,
    "MAX_EXACT_WORK": 2**24,
    "MAX_DPS": 10**4,
    "MAX_MILP_WORKERS": 120,
    "MAX_SDP_WORKERS": 400,
    "MAX_LP_SUBSETS": 2**16,
}
_POWER = re.compile(r"(\d+)\s*\*\*\s*(\d+)", re.ASCII)
_PLAIN = re.compile(r"\d+(?:_\d+)*", re.ASCII)
_SCIENTIFIC = re.compile(r"\d+(?:\.\d+)?[eE]\+?\d+", re.ASCII)


def parse_limit(name: str, text: str) -> int:
    """A limit's value written as text: a positive integer, ``67_108_864``, ``6.7e7`` (whole) or ``2**26``.

    ``name`` (the environment variable or flag) is named in the error.

    >>> parse_limit("GCSIM_MAX_PATTERNS", "2**26"), parse_limit("x", "1e8"), parse_limit("x", "10_000")
    (67108864, 100000000, 10000)
    >>> parse_limit("GCSIM_MAX_PATTERNS", "lots")
    Traceback (most recent call last):
    ...
    gcsim.errors.InvalidArgumentError: GCSIM_MAX_PATTERNS: must be a positive integer (67108864, 67_108_864, \
6.7e7 or 2**26), got 'lots'
    """
    raw = text.strip() if isinstance(text, str) else ""
    value: int | None = None
    if _PLAIN.fullmatch(raw) and len(raw) <= 40:
        value = int(raw)
    elif (power := _POWER.fullmatch(raw)) and int(power.group(2)) <= 128 and len(power.group(1)) <= 20:
        value = int(power.group(1)) ** int(power.group(2))
    elif _SCIENTIFIC.fullmatch(raw) and len(raw) <= 40:
        mantissa, exponent = re.split("[eE]", raw)
        digits = mantissa.replace(".", "")
        shift = int(exponent) - (len(mantissa.split(".")[1]) if "." in mantissa else 0)
        if shift >= 0 and shift <= 128:
            value = int(digits) * 10**shift
    if value is None or value < 1:
        shown = repr(text) if isinstance(text, str) and len(text) <= 40 else f"{str(text)[:40]!r}..."
        raise InvalidArgumentError(
            name, f"must be a positive integer (67108864, 67_108_864, 6.7e7 or 2**26), got {shown}"
        )
    return value


class LimitWarning(UserWarning):
    """A ``GCSIM_MAX_*`` environment variable that is not a positive integer (ignored)."""


def _from_environment() -> dict[str, str]:
    """Set each limit from ``GCSIM_<NAME>`` where given; returns the problems (variable -> message)."""
    problems = {}
    for limit, default in DEFAULTS.items():
        variable = f"GCSIM_{limit}"
        text = os.environ.get(variable)
        value = default
        if text is not None:
            try:
                value = parse_limit(variable, text)
            except InvalidArgumentError as exc:
                problems[variable] = str(exc)
        globals()[limit] = value
    return problems


MAX_DENSE_ENTRIES: int = DEFAULTS["MAX_DENSE_ENTRIES"]
MAX_SPARSE_ENTRIES: int = DEFAULTS["MAX_SPARSE_ENTRIES"]
MAX_PATTERNS: int = DEFAULTS["MAX_PATTERNS"]
MAX_MC_DRAWS: int = DEFAULTS["MAX_MC_DRAWS"]
MAX_EXISTENCE_ORDER: int = DEFAULTS["MAX_EXISTENCE_ORDER"]
MAX_QUAD_TERMS: int = DEFAULTS["MAX_QUAD_TERMS"]
MAX_STORAGE_WORK: int = DEFAULTS["MAX_STORAGE_WORK"]
MAX_EXACT_WORK: int = DEFAULTS["MAX_EXACT_WORK"]
MAX_DPS: int = DEFAULTS["MAX_DPS"]
MAX_MILP_WORKERS: int = DEFAULTS["MAX_MILP_WORKERS"]
MAX_SDP_WORKERS: int = DEFAULTS["MAX_SDP_WORKERS"]
MAX_LP_SUBSETS: int = DEFAULTS["MAX_LP_SUBSETS"]
_ENV_PROBLEMS = _from_environment()
for _message in _ENV_PROBLEMS.values():  # an import never fails on a typo in a variable: warn, keep the default
    # one line, no source line quoted: the variable is the culprit, not a line of gcsim
    warnings.warn_explicit(f"{_message}; ignored (the limit keeps its default)", LimitWarning, "gcsim.limits", 0)


def environment_problems() -> dict[str, str]:
    """The malformed ``GCSIM_MAX_*`` variables seen at import: variable -> message (empty when none)."""
    return dict(_ENV_PROBLEMS)


def _fmt(x: int) -> str:
    """A count as a message prints it: with separators below 10^15, else in three digits.

    >>> _fmt(16_777_216), _fmt(10**24 - 10**12), _fmt(3 * 10**400)
    ('16,777,216', '1e+24', '3e+400')
    """
    if x < 10**15:
        return f"{x:,}"
    e = math.floor(math.log10(x))  # float(x) overflows past 1.8e308; log10 of an int does not
    e += (10 ** (e + 1) <= x) - (10**e > x)  # log10 rounds: the exact exponent
    mantissa = float(f"{x // 10 ** (e - 3) / 1000:.3g}")  # leading digits, rounded
    if mantissa >= 10:  # 9.995... rounds up to the next power of ten
        mantissa, e = mantissa / 10, e + 1
    return f"{mantissa:g}e+{e}"


def keep_sparse(rows: int, cols: int, nonzeros: int) -> bool:
    """True when a 0/1 incidence is kept sparse: dense over ``MAX_DENSE_ENTRIES``, ``nonzeros`` within 1/16 of it.

    A design kept sparse (``gcsim.combinatorics.BIBD``) holds its blocks as Python tuples (about
    40 bytes a non-zero, against 8 a dense int64 entry) and verifies through chunked sparse
    products, so ``MAX_DENSE_ENTRIES // 16`` non-zeros keep it within the dense limit's memory:
    1,048,576 by default (PG(2, 97): 931,686).  Read at call time, like the limits.

    >>> keep_sparse(8011, 8011, 8011 * 90), keep_sparse(91, 91, 910), keep_sparse(2000, 1999000, 3998000)
    (True, False, False)
    """
    return int(rows) * int(cols) > MAX_DENSE_ENTRIES and int(nonzeros) <= MAX_DENSE_ENTRIES // 16


def logical_entries(shape: Any) -> int:
    """Number of entries of an array of ``shape`` (exact Python integer: no overflow).

    >>> logical_entries((10**6, 10**6)), logical_entries(()), logical_entries((3, 0))
    (1000000000000, 1, 0)
    """
    return math.prod(int(s) for s in shape)


def array_shape(value: Any) -> tuple[int, ...] | None:
    """The shape of an array-like input, read without copying an array (None when it has none).

    An array (NumPy, CuPy, torch, a zero-stride view) reports its ``shape`` attribute as is;
    a nested list or a scalar is measured by NumPy (its entries are in memory already); a
    ragged or non-numeric input gives None (its own validation then names the problem).

    >>> import numpy as np
    >>> array_shape(np.broadcast_to(np.zeros(3), (10**12, 3))), array_shape([[1, 2], [3, 4]])
    ((1000000000000, 3), (2, 2))
    """
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple) and all(isinstance(s, int) or hasattr(s, "__index__") for s in shape):
        return tuple(int(s) for s in shape)
    import numpy as np

    try:
        return tuple(int(s) for s in np.shape(value))
    except (TypeError, ValueError, OverflowError):
        return None


def check_entries(
    name: str,
    shape: Any,
    what: str,
    *,
    limit_name: str = "MAX_DENSE_ENTRIES",
    hint: str = "",
) -> int:
    """Refuse an array of ``shape`` whose logical size exceeds ``gcsim.limits.<limit_name>``.

    Returns the number of entries.  ``name`` is the argument that makes the array this large,
    ``what`` says what the array is; ``shape`` None (an input without a shape) passes.  Called
    before the array is copied, converted, compared or allocated.

    >>> check_entries("assignment", (91, 91), "the assignment matrix")
    8281
    >>> check_entries("d", (7, 10**12), "the gradients (N x d)")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gcsim.errors.SizeLimitError: d: the gradients (N x d) of shape (7 x 1,000,000,000,000) is 7,000,000,000,000 ...
    """
    if shape is None:
        return 0
    dims = tuple(int(s) for s in shape)
    entries = logical_entries(dims)
    limit = int(globals()[limit_name])
    if entries > limit:
        shown = " x ".join(_fmt(s) for s in dims) if dims else "scalar"
        raise SizeLimitError(
            name,
            f"{what} of shape ({shown}) is {_fmt(entries)} entries, over gcsim's limit of {_fmt(limit)} entries "
            f"(gcsim.limits.{limit_name}; raise it there on a bigger machine)" + (f"; {hint}" if hint else ""),
            requested=entries,
            limit=limit,
            limit_name=limit_name,
        )
    return entries


def check_work(name: str, requested: int, what: str, *, limit_name: str, unit: str = "", hint: str = "") -> int:
    """Refuse ``requested`` (a count of operations, workers, digits) beyond ``gcsim.limits.<limit_name>``.

    Returns ``requested``.  ``name`` is the argument that makes it this large, ``what`` says
    what is counted, ``unit`` follows the numbers; called before the work starts.  The message
    names the limit and where to raise it (the ``gcsim`` command adds its ``--limit`` flag and
    the ``GCSIM_`` variable).

    >>> check_work("c", 131_072, "N c^3 high-precision operations", limit_name="MAX_EXACT_WORK")
    131072
    >>> check_work("n", 500, "the workers of the SDP", limit_name="MAX_SDP_WORKERS", unit="workers")
    Traceback (most recent call last):
    ...
    gcsim.errors.SizeLimitError: n: the workers of the SDP: 500 workers, over gcsim's limit of 400 workers \
(gcsim.limits.MAX_SDP_WORKERS; raise it there for a longer run)
    """
    limit = int(globals()[limit_name])
    requested = int(requested)
    if requested > limit:
        unit_text = f" {unit}" if unit else ""
        raise SizeLimitError(
            name,
            f"{what}: {_fmt(requested)}{unit_text}, over gcsim's limit of {_fmt(limit)}{unit_text} "
            f"(gcsim.limits.{limit_name}; raise it there for a longer run)" + (f"; {hint}" if hint else ""),
            requested=requested,
            limit=limit,
            limit_name=limit_name,
        )
    return requested


def check_power(name: str, base: int, exponent: int, what: str) -> int:
    """``base**exponent`` for an exponent a caller states, refused beyond ``MAX_EXACT_WORK`` bits first.

    A size such as ``q^n`` (the points of a geometry, the vertices of a graph on ``GF(q)^n``) is
    an exact integer computed from the arguments: ``2**(10**12)`` would never finish, so its
    bit length (``exponent`` times the bits of ``base``) is checked against
    :data:`MAX_EXACT_WORK` before the power is taken; the caller then checks the object it
    would build against its own limit.  ``name`` is the argument that states the exponent.

    >>> check_power("n", 3, 4, "q^n")
    81
    >>> check_power("n", 2, 10**12, "q^(n+1), the points of PG(n, q)")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gcsim.errors.SizeLimitError: n: bits of q^(n+1), the points of PG(n, q): 2,000,000,000,000 bits, over ...
    """
    for arg, value in (("base", base), ("exponent", exponent)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise InvalidArgumentError(arg, f"must be an integer, got {type(value).__name__}")
    base, exponent = int(base), int(exponent)
    if exponent > 0 and abs(base) > 1:
        check_work(name, exponent * abs(base).bit_length(), f"bits of {what}", limit_name="MAX_EXACT_WORK", unit="bits")
    return base**exponent


class NpyHeader(NamedTuple):
    """What the header of a ``.npy`` file declares: ``shape``, ``fortran_order``, ``dtype`` and
    ``offset`` (the byte where the data starts)."""

    shape: tuple
    fortran_order: bool
    dtype: Any
    offset: int


def check_npy_file(
    name: str, path: str | os.PathLike, what: str, *, limit_name: str = "MAX_DENSE_ENTRIES"
) -> NpyHeader:
    """Read the header of the ``.npy`` file ``path`` and refuse it before reading any data.

    Refused with an :class:`~gcsim.errors.InvalidArgumentError` naming ``name``: a file that is
    not a ``.npy`` array (bad magic string, unknown format version, unreadable header), pickled
    (object) data, and a file shorter than the data its header declares; with a
    :class:`~gcsim.errors.SizeLimitError`: a declared shape beyond ``gcsim.limits.<limit_name>``
    entries (the logical size: a sparse file of that length costs no disk but would be read
    whole).  Only the header -- at most a few kilobytes -- is read.

    >>> import numpy as np, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "t.npy")
    >>> np.save(path, np.zeros((3, 4)))
    >>> check_npy_file("delays", path, "a trace of delays").shape
    (3, 4)
    """
    import stat

    import numpy as np
    from numpy.lib import format as npy

    shown = repr(os.fspath(path))
    try:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise InvalidArgumentError(name, f"{shown} is not a regular file")
            try:
                version = npy.read_magic(fh)
            except ValueError as exc:
                raise InvalidArgumentError(name, f"{shown} is not a .npy file ({exc})") from None
            if version == (1, 0):
                shape, fortran, dtype = npy.read_array_header_1_0(fh)
            elif version == (2, 0):
                shape, fortran, dtype = npy.read_array_header_2_0(fh)
            else:
                raise InvalidArgumentError(name, f"{shown}: .npy format version {version} is not supported (1.0, 2.0)")
            offset = fh.tell()
    except (ValueError, SyntaxError) as exc:  # a header numpy cannot parse
        raise InvalidArgumentError(name, f"{shown} has an unreadable .npy header ({exc})") from None
    except OSError as exc:
        raise InvalidArgumentError(name, f"cannot read {shown}: {exc.strerror or exc}") from None
    dtype = np.dtype(dtype)
    if dtype.hasobject:
        raise InvalidArgumentError(name, f"{shown} holds pickled (object) data, not numbers; refused")
    check_entries(name, shape, f"{what} in {shown}", limit_name=limit_name)
    need = offset + logical_entries(shape) * dtype.itemsize
    if st.st_size < need:
        raise InvalidArgumentError(
            name, f"{shown} is truncated: its header declares {need:,} bytes, the file has {st.st_size:,}"
        )
    return NpyHeader(tuple(int(s) for s in shape), bool(fortran), dtype, int(offset))
