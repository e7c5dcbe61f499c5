#!/usr/bin/env python
"""Mutation testing of the analysis core with mutmut (``make mutation``; issue #32 item 7).

For each module of :data:`TARGETS` this runs ``mutmut run`` in its own work directory
``.mutation/<name>/`` (git-ignored, inside the repository): a ``pyproject.toml`` written there
selects the module to mutate and only the test files that test it, and mutmut's copy of the
package (``mutants/``), its caches and its results stay in that directory.  ``gcsim``, ``tests``
and ``designs`` are symbolic links to the repository's, so a run always sees the current code.

Every mutant is then classified by comparing its function with the original, node by node
(Python's ``ast``):

* **message-only** -- the change lies inside text a user reads and no computation uses: the
  message of a raised exception (for gcsim's errors: not the ``argument`` / ``condition`` field,
  which callers and tests inspect), the text arguments of :data:`_TEXT_ARGUMENTS` (what
  ``check_entries`` calls the array in its size error), the text or the ``stacklevel`` value of ``warnings.warn``, a
  docstring, the body of ``__repr__`` / ``__str__``, or the functions of :data:`TEXT_FUNCTIONS`
  (the explanation texts ``bibd_existence`` builds for its errors);
* **number-changing** -- every other mutant: it can change a returned value, a raised error's
  type or field, a warning's category, or whether something is raised at all.

The score printed per module is number-changing killed / number-changing total (a mutant that
times out counts as killed, one no selected test reaches counts as survived).  Message-only
mutants are counted apart, and so are the equivalent mutants of :data:`EQUIVALENT` (mutants that
cannot change any output, each with its reason); an entry whose mutant no longer changes the
recorded line is reported as stale and not applied.

Runs are slow (each mutant reruns the tests that reach its function), so mutmut runs under
``nice -n 19`` with at most ``--max-children`` (default 2) test processes.  ``--functions
GLOB,...`` restricts a run to the functions whose names match (a glob ``f`` also takes the
functions whose names extend it: ``optimal_error`` takes ``optimal_error_all``); the report then
says how many of the module's mutants ran.  ``--tests FILE,...`` replaces the module's test files.
The large modules (``coding.evaluate``, ``coding.bounds``, ``coding.partial``, ``coding.quantize``:
thousands of mutants) are measured on a random sample by default (``Target.sample``: 100
number-changing mutants of ``--seed`` 0's draw, with an exact 95 % interval, then every message-only
mutant apart); ``--sample K`` sets the size (``0``: every mutant).
Results are kept between runs with ``--resume``; the default starts fresh.  After a module changed,
``--resume`` drops mutmut's stale map from functions to tests (:func:`_refresh_test_map`) and runs by
name the mutants mutmut left unrun (:func:`_run_left_unrun`); a mutant still unrun is not counted.
Each worker is forked from mutmut's process; a pytest plugin (``_PLUGIN``) empties gcsim's function caches before every
test.

Example (each of the two small modules took about a quarter of an hour with one test process on
a loaded two-core machine)::

    .venv/bin/python scripts/mutation.py cerar.constructions combinatorics.bibd_existence
    .venv/bin/python scripts/mutation.py --list-survivors cerar.constructions   # the survivors' diffs

Exit status 0 when every module that ran reaches ``--threshold`` (default 0.85), 1 otherwise.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import fnmatch
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / ".mutation"


@dataclass(frozen=True)
class Target:
    """The modules mutated together (one module, or those of a package) and the test files that test them."""

    paths: tuple[str, ...]
    tests: tuple[str, ...]
    #: mutants ``make mutation`` runs without ``--sample``: 0 every one, K a random sample of K (large modules)
    sample: int = 0

    @property
    def modules(self) -> list[str]:
        """The dotted names of :attr:`paths` (``gcsim/coding/evaluate.py`` -> ``gcsim.coding.evaluate``)."""
        return [p.removesuffix(".py").replace("/", ".") for p in self.paths]


def _package_modules(folder: str) -> tuple[str, ...]:
    """The modules of a package (``folder/*.py`` but ``__init__.py``, which only re-exports): found, not listed."""
    return tuple(
        sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / folder).glob("*.py") if p.name != "__init__.py")
    )


TARGETS: dict[str, Target] = {
    "cerar.constructions": Target(
        ("gcsim/cerar/constructions.py",),
        ("tests/test_cerar_constructions.py", "tests/test_cerar_constructions_mutants.py"),
    ),
    "combinatorics.bibd_existence": Target(
        ("gcsim/combinatorics/bibd_existence.py",),
        ("tests/test_bibd.py", "tests/test_bibd_existence_mutants.py"),
    ),
    # evaluate.py was split (session 12): the per-pattern kernels and the expectation routes moved out
    "coding.evaluate": Target(
        ("gcsim/coding/evaluate.py", "gcsim/coding/pattern_errors.py", "gcsim/coding/expected_routes.py"),
        ("tests/test_evaluate.py", "tests/test_evaluate_adversarial.py", "tests/test_evaluate_mutants.py"),
        sample=100,
    ),
    # the package gcsim/coding/bounds/, one module per theorem: mutated together, with the bounds' tests
    "coding.bounds": Target(
        _package_modules("gcsim/coding/bounds"),
        ("tests/test_bounds.py", "tests/test_spectral_bounds.py", "tests/test_bounds_mutants.py"),
        sample=100,
    ),
    # issue #36: partial stragglers (chunk orders, q_max) and quantized gradient coding
    "coding.partial": Target(
        ("gcsim/coding/partial_stragglers.py", "gcsim/coding/partial.py"),
        (
            "tests/test_partial_stragglers.py",
            "tests/test_partial_qmax.py",
            "tests/test_partial_coding.py",
            "tests/test_partial_mutants.py",
        ),
        sample=100,
    ),
    "coding.quantize": Target(
        ("gcsim/coding/quantize.py", *_package_modules("gcsim/coding/quantizers")),
        ("tests/test_quantize.py", "tests/test_quantize_mutants.py"),
        sample=100,
    ),
}

# Functions whose output is text for people only, by module: a change inside them is message-only.
# "pairs" marks functions that return (name, message) pairs: only the message (element 1) is text.
TEXT_FUNCTIONS: dict[str, dict[str, str]] = {
    "gcsim/combinatorics/bibd_existence.py": {
        "_ternary_form_text": "all",  # the equation quoted in a Bruck-Ryser-Chowla error message
        "_violations_list": "pairs",  # (condition, message): the message of ImpossibleParametersError
    },
}

# Equivalent mutants: mutant name -> (the mutated line as mutmut writes it, why no output can change).
EQUIVALENT: dict[str, tuple[str, str]] = {
    "gcsim.combinatorics.bibd_existence.x_bruck_ryser_chowla__mutmut_55": (
        "sign = 1 if (v - 1) / 2 % 2 == 0 else -1",
        "v is odd on this line (even v returned above): (v - 1) / 2 is a whole float, the same parity",
    ),
    "gcsim.combinatorics.bibd_existence.x_bruck_ryser_chowla__mutmut_69": (
        "if a == 1 and b == 1:",
        "a shortcut: z^2 = x^2 + b y^2 and z^2 = a x^2 + y^2 are always isotropic, so "
        "ternary_form_isotropic returns the same True",
    ),
    "gcsim.combinatorics.bibd_existence.x_ternary_form_isotropic__mutmut_28": (
        "if a <= 0 and b < 0:",
        "a and b are checked nonzero above, and on integers a <= 0 and a < 1 are a < 0 (b likewise)",
    ),
    "gcsim.combinatorics.bibd_existence.x_ternary_form_isotropic__mutmut_29": ("if a < 1 and b < 0:", "as _28"),
    "gcsim.combinatorics.bibd_existence.x_ternary_form_isotropic__mutmut_30": ("if a < 0 and b <= 0:", "as _28"),
    "gcsim.combinatorics.bibd_existence.x_ternary_form_isotropic__mutmut_31": ("if a < 0 and b < 1:", "as _28"),
    "gcsim.combinatorics.bibd_existence.x_ternary_form_isotropic__mutmut_46": (
        "return all((_hilbert_symbol(a, b, p) == 1 for p in set(_prime_factors(3 * a * b))))",
        "Hilbert's product formula: with (a, b)_inf = 1 and (a, b)_p = 1 at every odd p, (a, b)_2 = 1 too, "
        "so dropping 2 changes nothing; an added 3 not dividing ab gives (a, b)_3 = 1",
    ),
    "gcsim.cerar.constructions.x_perturbation_nodes__mutmut_60": (
        "z += [rho / w] if kind == 'r' else [rho * w, rho * np.conj(w)]",
        "a real block has w = +-1, so rho / w = rho * w (the imaginary round-off of exp(i pi), 1e-16, "
        "changes sign only)",
    ),
    "gcsim.combinatorics.bibd_existence.x__hilbert_symbol__mutmut_50": (
        "return (x * x + 1) // 8 % 2",
        "x is a 2-adic unit (odd), x^2 = 1 mod 8, so (x^2 + 1) // 8 = (x^2 - 1) / 8",
    ),
    "gcsim.combinatorics.bibd_existence.x__hilbert_symbol__mutmut_59": (
        "return (-1) ** ((e2(u) * e2(w) + alpha * w2(w) - beta * w2(u)) % 2)",
        "- t and + t have the same parity, and the sum is taken mod 2",
    ),
    "gcsim.combinatorics.bibd_existence.x__hilbert_symbol__mutmut_60": (
        "return (-1) ** ((e2(u) * e2(w) - alpha * w2(w) + beta * w2(u)) % 2)",
        "as _59",
    ),
    "gcsim.cerar.constructions.x__roots_kappa__mutmut_10": (
        "V = z[:, None] ** (+np.arange(c))[None, :]",
        "|z| = 1, so z^tau = conj(z^-tau): the matrix is the conjugate, with the same singular values",
    ),
    "gcsim.cerar.constructions.x_perturbation_design__mutmut_63": (
        "f = lambda k: _column_function(None, blocks, k)",
        "_column_function does not read its N argument",
    ),
    "gcsim.combinatorics.bibd_existence.x__violations_list__mutmut_33": (
        "r = lam * (v - 1) / (k - 1)",
        "divisibility holds on this line, so r is whole: the float has the same value in every comparison "
        "and in b (only the text of a message would show 7.0 for 7)",
    ),
    "gcsim.combinatorics.bibd_existence.x__violations_list__mutmut_40": (
        "b = v * r / k",
        "as _33: b = lam v (v - 1) / (k (k - 1)) is whole once divisibility holds",
    ),
    "gcsim.combinatorics.bibd_existence.x__violations_list__mutmut_51": (
        "if k <= v and b == v and (bruck_ryser_chowla(v, k, lam) is False):",
        "k = v: bruck_ryser_chowla returns None for k >= v, never False",
    ),
    "gcsim.combinatorics.bibd_existence.x__violations_list__mutmut_88": (
        "if k <= v and r == k + lam and (lam <= 2):",
        "k = v gives r = lam, and r == k + lam would need k = 0",
    ),
    "gcsim.cerar.constructions.x__blocks__mutmut_4": (
        "for s in sorted(exponents, key=None):",
        "plain ascending order already visits 0, then each pair by its smaller member t, then N/2: "
        "the same blocks in the same order",
    ),
    "gcsim.cerar.constructions.x__blocks__mutmut_6": ("for s in sorted(exponents):", "as _4"),
    "gcsim.cerar.constructions.x__blocks__mutmut_8": (
        "for s in sorted(exponents, key=lambda s: (min(s, N - s) if s and False else -1, s)):",
        "as _4: every key (-1, s) sorts by s",
    ),
    "gcsim.cerar.constructions.x__blocks__mutmut_9": (
        "for s in sorted(exponents, key=lambda s: (min(s, N - s) if s or True else -1, s)):",
        "as _4: 0 still sorts first (key (0, 0))",
    ),
    "gcsim.cerar.constructions.x__blocks__mutmut_14": (
        "for s in sorted(exponents, key=lambda s: (min(s, N + s) if s else -1, s)):",
        "as _4: the key becomes (s, s)",
    ),
    "gcsim.cerar.constructions.x__blocks__mutmut_15": (
        "for s in sorted(exponents, key=lambda s: (min(s, N - s) if s else +1, s)):",
        "as _4: 0 ties with t = 1 and sorts first by s",
    ),
    "gcsim.cerar.constructions.x__blocks__mutmut_16": (
        "for s in sorted(exponents, key=lambda s: (min(s, N - s) if s else -2, s)):",
        "as _4",
    ),
    "gcsim.cerar.constructions.x__blocks__mutmut_28": (
        "seen.add(None)",
        "every caller passes distinct exponents, so a real exponent is never met twice",
    ),
    "gcsim.cerar.constructions.x__blocks__mutmut_34": (
        "t = min(s, N + s)",
        "in ascending order a pair is first met at its smaller member, so t = s = min(s, N - s)",
    ),
    "gcsim.cerar.constructions.x__column_function__mutmut_3": (
        "k = np.asarray(k, dtype=None)",
        "k is an integer array: rho ** k and cos(theta k) are the same float64 values",
    ),
    "gcsim.cerar.constructions.x__column_function__mutmut_5": ("k = np.asarray(k)", "as _3"),
    "gcsim.cerar.constructions.x__column_function__mutmut_13": (
        "rows.append(mag / np.cos(theta * k))",
        "a real block has theta in {0, pi}: cos(theta k) = +-1, dividing equals multiplying",
    ),
    "gcsim.cerar.constructions.x__column_function__mutmut_36": (
        "return np.array(rows).reshape(-2, k.size)",
        "NumPy reads any negative size as 'the rest', like -1",
    ),
    "gcsim.cerar.constructions.x_exact_design__mutmut_100": (
        "basis = 'unit' if N % c == 0 else 'XXrootsXX'",
        "any basis but 'unit' takes the roots branch, whose metadata names 'roots' itself",
    ),
    "gcsim.cerar.constructions.x_exact_design__mutmut_101": ("basis = 'unit' if N % c == 0 else 'ROOTS'", "as _100"),
    "gcsim.cerar.constructions.x_exact_design__mutmut_153": (
        "f = lambda k: _column_function(None, blocks, k)",
        "_column_function does not read its N argument",
    ),
    "gcsim.coding.bounds.variance.x_split_blocks__mutmut_24": (
        "w = -(-d // m) if d or True else 0",
        "for d = 0 the ceiling -(-0 // m) is 0 as well",
    ),
    "gcsim.coding.bounds.rd_worst_case.x__coverage_relaxation__mutmut_34": (
        "gram = A.T.astype(np.int64) @ A.astype(None)",
        "A is a 0/1 assignment: the float64 Gram matrix holds the same small integers exactly, and every "
        "use (int() of sums, comparisons, the float copy G) sees the same values",
    ),
    "gcsim.coding.bounds.rd_worst_case.x__srg_of_assignment__mutmut_61": (
        "return (v, k, int(lam_vals[1]), int(mu_vals[0]), include_self)",
        "the edge mask is symmetric and not empty (k >= 1 is checked above), so lam_vals has at least two "
        "entries, and the line above returned unless they are all equal",
    ),
    "gcsim.coding.bounds.worst_case.x__enumerate_masks__mutmut_12": (
        "combos = list(itertools.islice(it, None))",
        "one batch instead of chunks of 8192: the same masks in the same order; the maximizer keeps the first "
        "maximum either way (argmax within a batch, a strict > across batches), and verify concatenates them",
    ),
    "gcsim.coding.bounds.rd_upper.x__rd_bound_from_sums__mutmut_18": (
        "Q = _rd_quadratic(mu2, mu4, m, S1, np.asarray(S2, dtype=None))",
        "mu2 is a float, so mu2**2 * S2 converts integer sums to float64 first anyway: the same products",
    ),
    "gcsim.coding.bounds.spectral.x_spectral_upper_bound__mutmut_34": (
        "loads = A.sum(axis=None)",
        "loads feeds only the text of the InvalidArgumentError raised next (its min and max)",
    ),
    # evaluate (pattern_errors.py since the split): progress bars and chunk sizes (display and batching only)
    "gcsim.coding.pattern_errors.x_optimal_error__mutmut_4": (
        "def x_optimal_error(scheme: Scheme, nonstragglers: Any, *, normalized: bool=False, method: str='auto', rtol: float | None=None, progress: bool=False) -> float | np.ndarray:",  # noqa: E501
        "progress only shows or hides a tqdm bar on stderr; no value changes",
    ),
    "gcsim.coding.pattern_errors.x_optimal_error__mutmut_91": (
        "raw = optimal_errors(ctx, masks2, method=method, rtol=rtol, report=report, progress=_progress_bar if progress and False else None)",  # noqa: E501
        "as above: only the progress bar",
    ),
    "gcsim.coding.pattern_errors.x_optimal_error__mutmut_92": (
        "raw = optimal_errors(ctx, masks2, method=method, rtol=rtol, report=report, progress=_progress_bar if progress or True else None)",  # noqa: E501
        "as above: only the progress bar",
    ),
    "gcsim.coding.pattern_errors.x_optimal_error_all__mutmut_4": (
        "def x_optimal_error_all(scheme: Scheme, s: int, *, normalized: bool=False, method: str='auto', rtol: float | None=None, chunk: int | None=None, progress: bool=False) -> np.ndarray:",  # noqa: E501
        "progress only shows or hides a tqdm bar on stderr; no value changes",
    ),
    "gcsim.coding.pattern_errors.x_optimal_error_all__mutmut_81": (
        "step = check_int('chunk', chunk, minimum=1) if chunk is not None else max(1, 2 ** 22 // ctx.n) if st is not None or True else min(chunk_rows(per_row_bytes(ctx, method, s, f, rtol)), 1 << 16)",  # noqa: E501
        "the chunk size only batches the enumeration; every pattern is evaluated on its own, the same values",
    ),
    "gcsim.coding.pattern_errors.x_optimal_error_all__mutmut_86": (
        "step = check_int('chunk', chunk, minimum=1) if chunk is not None else max(2, 2 ** 22 // ctx.n) if st is not None else min(chunk_rows(per_row_bytes(ctx, method, s, f, rtol)), 1 << 16)",  # noqa: E501
        "the chunk size only batches the enumeration; every pattern is evaluated on its own, the same values",
    ),
    "gcsim.coding.pattern_errors.x_optimal_error_all__mutmut_88": (
        "step = check_int('chunk', chunk, minimum=1) if chunk is not None else max(1, 2 * 22 // ctx.n) if st is not None else min(chunk_rows(per_row_bytes(ctx, method, s, f, rtol)), 1 << 16)",  # noqa: E501
        "the chunk size only batches the enumeration; every pattern is evaluated on its own, the same values",
    ),
    "gcsim.coding.pattern_errors.x_optimal_error_all__mutmut_89": (
        "step = check_int('chunk', chunk, minimum=1) if chunk is not None else max(1, 3 ** 22 // ctx.n) if st is not None else min(chunk_rows(per_row_bytes(ctx, method, s, f, rtol)), 1 << 16)",  # noqa: E501
        "the chunk size only batches the enumeration; every pattern is evaluated on its own, the same values",
    ),
    "gcsim.coding.pattern_errors.x_optimal_error_all__mutmut_90": (
        "step = check_int('chunk', chunk, minimum=1) if chunk is not None else max(1, 2 ** 23 // ctx.n) if st is not None else min(chunk_rows(per_row_bytes(ctx, method, s, f, rtol)), 1 << 16)",  # noqa: E501
        "the chunk size only batches the enumeration; every pattern is evaluated on its own, the same values",
    ),
    "gcsim.coding.pattern_errors.x_optimal_error_all__mutmut_98": (
        "step = check_int('chunk', chunk, minimum=1) if chunk is not None else max(1, 2 ** 22 // ctx.n) if st is not None else min(chunk_rows(per_row_bytes(ctx, None, s, f, rtol)), 1 << 16)",  # noqa: E501
        "the chunk size only batches the enumeration; every pattern is evaluated on its own, the same values",
    ),
    "gcsim.coding.pattern_errors.x_optimal_error_all__mutmut_101": (
        "step = check_int('chunk', chunk, minimum=1) if chunk is not None else max(1, 2 ** 22 // ctx.n) if st is not None else min(chunk_rows(per_row_bytes(ctx, method, s, f, None)), 1 << 16)",  # noqa: E501
        "the chunk size only batches the enumeration; every pattern is evaluated on its own, the same values",
    ),
    "gcsim.coding.pattern_errors.x_optimal_error_all__mutmut_106": (
        "step = check_int('chunk', chunk, minimum=1) if chunk is not None else max(1, 2 ** 22 // ctx.n) if st is not None else min(chunk_rows(per_row_bytes(ctx, method, s, f)), 1 << 16)",  # noqa: E501
        "the chunk size only batches the enumeration; every pattern is evaluated on its own, the same values",
    ),
    "gcsim.coding.pattern_errors.x_optimal_error_all__mutmut_108": (
        "step = check_int('chunk', chunk, minimum=1) if chunk is not None else max(1, 2 ** 22 // ctx.n) if st is not None else min(chunk_rows(per_row_bytes(ctx, method, s, f, rtol)), 2 << 16)",  # noqa: E501
        "the chunk size only batches the enumeration; every pattern is evaluated on its own, the same values",
    ),
    "gcsim.coding.pattern_errors.x_optimal_error_all__mutmut_109": (
        "step = check_int('chunk', chunk, minimum=1) if chunk is not None else max(1, 2 ** 22 // ctx.n) if st is not None else min(chunk_rows(per_row_bytes(ctx, method, s, f, rtol)), 1 << 17)",  # noqa: E501
        "the chunk size only batches the enumeration; every pattern is evaluated on its own, the same values",
    ),
    "gcsim.coding.pattern_errors.x_optimal_error_all__mutmut_123": (
        "for a in _progress(starts, len(starts), None, progress):",
        "only the label or visibility of the progress bar",
    ),
    "gcsim.coding.pattern_errors.x_optimal_error_all__mutmut_124": (
        "for a in _progress(starts, len(starts), f'all C({ctx.n},{s}) patterns', None):",
        "only the label or visibility of the progress bar",
    ),
    "gcsim.coding.pattern_errors.x_optimal_error_all__mutmut_127": (
        "for a in _progress(starts, len(starts), progress):",
        "only the label or visibility of the progress bar",
    ),
    "gcsim.coding.pattern_errors.x_optimal_error_all__mutmut_128": (
        "for a in _progress(starts, len(starts), f'all C({ctx.n},{s}) patterns'):",
        "only the label or visibility of the progress bar",
    ),
    "gcsim.coding.pattern_errors.x_optimal_error_all__mutmut_133": (
        "S = straggler_sets(ctx.n, s, a, None)",
        "the chunk runs to the end of the enumeration; later chunks rewrite the same values",
    ),
    "gcsim.coding.pattern_errors.x_optimal_error_all__mutmut_137": (
        "S = straggler_sets(ctx.n, s, a)",
        "the chunk runs to the end of the enumeration; later chunks rewrite the same values",
    ),
    "gcsim.coding.pattern_errors.x_fixed_decoder_error__mutmut_98": (
        "mode = ''",
        "mode is only compared with 'arrivals' and 'optimal' (and set to one of them): '' and None match neither",
    ),
    "gcsim.coding.expected_routes.xǁExpectationRoutesǁdraw_pairs__mutmut_50": (
        "self.report.patterns -= patterns",
        "report.patterns is read only by ErrorReport.warn: its truthiness (in a streamed call this line is its "
        "only writer, so -sum is nonzero exactly when sum is) and the text of the warning",
    ),
    "gcsim.cerar.constructions.x__best_roots__mutmut_34": (
        "for nr in range(len(reals) + 2):",
        "the added nr = len(reals) + 1 has comb(len(reals), nr) = 0: no candidate, and the size test 0 > "
        "max_subsets returns the default only where every earlier nr (none fit) left cands empty, as the original does",
    ),
    "gcsim.cerar.constructions.x__best_roots__mutmut_1": (
        "def _best_roots(N: int, c: int, max_subsets: int=4097) -> list[int]:",
        "differs only where comb(len(reals), nr) * comb(len(pairs), k) = 4097 = 17 * 241: comb(len(reals), nr) is 1 "
        "or 2 and the only binomial equal to 4097 is C(4097, 1) (= C(4097, 4096)), so N >= 8195; the only caller, "
        "exact_design, refuses N (N - 1) c^2 > MAX_DENSE_ENTRIES = 2^24 before it (8195 * 8194 > 2^24)",
    ),
    "gcsim.cerar.constructions.x_vandermonde_design__mutmut_77": (
        "f = lambda k: z[:, None] ** np.asarray(k, dtype=None)[None, :]",
        "z is float64: float64 ** an integer array is the same float64 array, negative exponents included",
    ),
    "gcsim.cerar.constructions.x_vandermonde_design__mutmut_79": (
        "f = lambda k: z[:, None] ** np.asarray(k)[None, :]",
        "as _77",
    ),
    "gcsim.cerar.constructions.x_vandermonde_design__mutmut_44": (
        "if c >= 1 and eps * (c - 1) / 2 >= 1:",
        "for c = 1 the second operand is 0 >= 1, false either way",
    ),
    "gcsim.cerar.constructions.x_vandermonde_design__mutmut_51": (
        "if c > 1 and eps * (c - 1) / 2 > 1:",
        "at eps = 2/(c-1) exactly one node is 0, its negative powers are inf and _design_from_f "
        "refuses with the same InvalidArgumentError('eps'); only the message differs",
    ),
    "gcsim.coding.partial_stragglers.x_regular_q_max_bound__mutmut_54": (
        "types = np.array(list(itertools.combinations_with_replacement(range(delta + 1), delta)))",
        "the added types hold a 0: summing the delta count rows gives sum_t x_t (delta - zeros(t)) = delta with "
        "sum_t x_t = 1, x >= 0, so every such type has weight 0 and each program is feasible exactly when before",
    ),
    "gcsim.coding.quantize.xǁErrorFeedbackǁsend__mutmut_4": (
        "y = check_finite_array('messages', messages, ndim=None)",
        "a y that is not 2-D fails the next check y.shape != residual.shape (2-D) with the same "
        "InvalidArgumentError('messages'); only the message differs",
    ),
    "gcsim.coding.quantizers._registry.xǁQuantizerǁoutcomes__mutmut_91": (
        "upper = np.where(delta > 0, lower + delta, 1.0)",
        "where delta <= 0, frac is 0.0, and the next line sets upper = lower wherever frac == 0",
    ),
    "gcsim.coding.quantizers._registry.xǁ_Tableǁ_scan__mutmut_4": (
        "package = __package__ or 'GCSIM.CODING.QUANTIZERS'",
        "__package__ of a package's module is its package name, never empty: the fallback is never read",
    ),
}

# gcsim.errors classes whose first argument (or this keyword) is a field callers inspect, not text
_FIELD_ARGUMENT = {
    "InvalidArgumentError": "argument",
    "SizeLimitError": "argument",
    "ImpossibleParametersError": "condition",
}
# functions whose argument at this position (or these keywords) is only the text of the error they may
# raise: gcsim.limits.check_entries(name, shape, what, hint=...), registry.not_applicable(name, why)
_TEXT_ARGUMENTS: dict[str, tuple[int, tuple[str, ...]]] = {
    "check_entries": (2, ("what", "hint")),
    "not_applicable": (1, ("why",)),
}
# keyword arguments of gcsim's errors that are data, not message text
_DATA_KEYWORDS = {"argument", "condition", "requested", "limit", "limit_name", "suggestions"}

# mutmut's exit codes (mutmut.stats.status_by_exit_code) folded into the outcomes used here: a failed
# test, a crash, a timeout (SIGXCPU) or a type-check failure kill; "suspicious" and "skipped" survive
_KILLED_CODES = {1, 3, 36, 37, -24, 24, 152, 255, -11, -9}
_NO_TESTS_CODES = {5, 33}


_TIMEOUT_CODES = {36, -24, 24, 152, 255}


def _status(code: int | None) -> str:
    if code is None:
        return "not run"
    if code in _TIMEOUT_CODES:
        return "timeout"
    if code in _KILLED_CODES:
        return "killed"
    if code in _NO_TESTS_CODES:
        return "no tests"
    return "survived"


# A pytest plugin loaded in every test run of mutmut: it empties the caches of gcsim's functions
# (functools.lru_cache / cache) before each test.  Without it a test meets values cached by an
# earlier test, so mutmut's map from functions to the tests that reach them (made in one process)
# misses tests, and a mutant behind a cache (bibd_existence._violations_list) looks unreached.
_PLUGIN = """
import sys

import pytest


@pytest.fixture(autouse=True)
def _gcsim_fresh_caches():
    for name, module in list(sys.modules.items()):
        if name == "gcsim" or name.startswith("gcsim."):
            for value in list(vars(module).values()):
                clear = getattr(value, "cache_clear", None)
                if callable(clear) and hasattr(value, "cache_info"):
                    clear()
    yield
"""


def _write_config(work: Path, target: Target) -> None:
    # the project's own pyproject.toml (pytest's options), with mutmut's section for this module
    lines = [
        (ROOT / "pyproject.toml").read_text(),
        "",
        "[tool.mutmut]",
        'source_paths = ["gcsim"]',
        f"only_mutate = {json.dumps(list(target.paths))}",
        f"pytest_add_cli_args_test_selection = {json.dumps([t for t in target.tests if (ROOT / t).exists()])}",
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-p", "no:randomly", "-p", "mutation_fresh_caches", "-q"]',
        'also_copy = ["mutation_fresh_caches.py"]',
        "use_git_change_detection = false",
        # workers fork from mutmut's own process (fast); the plugin below empties gcsim's caches
        # before each test, so nothing cached by the stats run reaches a mutant
        'process_isolation = "fork"',
        # a test run is stopped after (estimated seconds + 10) x 5 of wall time: mutmut's default (+1) x 15
        # stops healthy runs on a loaded machine under nice 19, and a stopped run counts as a kill
        "timeout_multiplier = 5.0",
        "timeout_constant = 10.0",
        "",
    ]
    (work / "pyproject.toml").write_text("\n".join(lines))
    (work / "mutation_fresh_caches.py").write_text(_PLUGIN.lstrip())


def _prepare(name: str, target: Target, *, resume: bool) -> Path:
    work = WORK / name
    if not resume and work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    for link in ("gcsim", "tests", "designs"):
        if not (work / link).exists():
            (work / link).symlink_to(ROOT / link)
    _write_config(work, target)
    return work


def _function_globs(modules: list[str], functions: list[str]) -> list[str]:
    # mutmut names a function module.x_name (a method module.xǁClassǁname) and its mutants
    # <that>__mutmut_<n>; one glob <that>* selects both (and any function whose name extends it)
    names = []
    for f in functions:
        for mangled in (f"x_{f}", f"xǁ*ǁ{f}") if "." not in f else (f"xǁ{f.replace('.', 'ǁ')}",):
            names += [f"{module}.{mangled}*" for module in modules]
    return names


def _matches(name: str, globs: list[str]) -> bool:
    """Whether mutmut's ``mutmut run GLOB ...`` selects the mutant ``name`` (its own test: fnmatch)."""
    return any(fnmatch.fnmatch(name, g) for g in globs)


_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}


def _run_mutmut(work: Path, names: list[str], max_children: int, *, log_mode: str = "w") -> int:
    """``mutmut run`` in ``work`` on the mutants ``names`` (globs or exact names; none: all)."""
    mutmut = Path(sys.executable).with_name("mutmut")
    cmd = ["nice", "-n", "19", str(mutmut), "run", "--max-children", str(max_children), *names]
    # mutmut redraws a progress line many times a second: its output goes to a log, not the terminal
    with open(work / "mutmut.log", log_mode) as log:
        return subprocess.run(
            cmd, cwd=work, env=dict(os.environ, **_ENV), stdout=log, stderr=subprocess.STDOUT
        ).returncode


# mutmut's own first step (``mutmut run`` before it runs any test): copy the package, write the
# mutants and their ``.meta`` files.  The sample mode needs the list of mutants before it runs any.
_GENERATE = """
import os
import mutmut.__main__ as m
from mutmut.mutation.trampoline import set_mutant_under_test
set_mutant_under_test("mutant_generation")
os.makedirs("mutants", exist_ok=True)
m.copy_src_dir()
m.copy_also_copy_files()
m.setup_source_paths()
m.store_lines_covered_by_tests()
m.create_mutants(1)
"""


def _generate(work: Path) -> int:
    cmd = ["nice", "-n", "19", sys.executable, "-c", _GENERATE]
    with open(work / "mutmut.log", "w") as log:
        return subprocess.run(
            cmd, cwd=work, env=dict(os.environ, **_ENV), stdout=log, stderr=subprocess.STDOUT
        ).returncode


def _generate_or_exit(work: Path) -> None:
    rc = _generate(work)
    if rc != 0:
        raise SystemExit(f"mutant generation failed (status {rc}); its output: {work / 'mutmut.log'}")


# --- after a module changed: mutmut's map from functions to tests, and the mutants it left unrun ---
#
# mutmut maps each function to the tests that reach it once (``mutants/mutmut-stats.json``) and on a
# later run maps only tests that are new.  After a module changes, the regenerated mutants of a new or
# changed function (the generation resets their results) find no tests, or stale ones, in that map:
# mutmut records "no tests" without running them, or leaves them "not checked".  And the first
# ``mutmut run`` after the generation saves the new function hashes into the map, so the change cannot
# be seen afterwards: it is checked right after the generation, before any run.


def _function_hashes(work: Path, target: Target) -> dict[str, str]:
    """mutmut's hash of each mutated function's source as generated now, by ``module.x_name``."""
    out: dict[str, str] = {}
    for path, module in zip(target.paths, target.modules, strict=True):
        meta = work / "mutants" / f"{path}.meta"
        if meta.exists():
            hashes = json.loads(meta.read_text()).get("hash_by_function_name", {})
            out |= {f"{module}.{function}": digest for function, digest in hashes.items()}
    return out


def _stale_map(current: dict[str, str], recorded: dict[str, str], mutants: list[Mutant], names: list[str]) -> list[str]:
    """Why mutmut's map from functions to tests must be collected again before ``names`` run (empty: it need not).

    ``current``: the functions' hashes now (:func:`_function_hashes`); ``recorded``: those the map
    was saved with (its ``function_hashes``).  A function new or changed since then may be reached by
    tests the map does not list; a mutant of ``names`` recorded "no tests" may have been judged
    with such a map (its function's change is no longer visible once a run saved the new hashes).
    """
    changed = sorted(f for f, digest in current.items() if recorded.get(f) != digest)
    wanted = set(names)
    no_tests = sorted(m.name for m in mutants if m.name in wanted and m.status == "no tests")
    reasons = []
    if changed:
        reasons.append(
            f"{len(changed)} functions new or changed since it was collected ({', '.join(changed[:3])}, ...)"
        )
    if no_tests:
        reasons.append(f"{len(no_tests)} mutants to run recorded 'no tests' ({', '.join(no_tests[:3])}, ...)")
    return reasons


def _refresh_test_map(work: Path, target: Target, mutants: list[Mutant], names: list[str]) -> bool:
    """Drop mutmut's map from functions to tests where :func:`_stale_map` says it is stale; True if dropped.

    The next ``mutmut run`` then maps every test afresh (the module's tests run once, as in a fresh
    run); the results already recorded stay.
    """
    stats = work / "mutants" / "mutmut-stats.json"
    if not stats.exists():
        return False
    recorded = json.loads(stats.read_text()).get("function_hashes", {})
    reasons = _stale_map(_function_hashes(work, target), recorded, mutants, names)
    if reasons:
        print("mutmut's map from functions to tests is collected again: " + "; ".join(reasons))
        stats.unlink()
    return bool(reasons)


def _unrun(mutants: list[Mutant], names: list[str]) -> list[str]:
    """The mutants of ``names`` (in their order) that mutmut has not run."""
    status = {m.name: m.status for m in mutants}
    return [n for n in names if status.get(n) == "not run"]


def _run_by_name(work: Path, names: list[str], batch: int, max_children: int) -> int:
    """``mutmut run`` on ``names``, ``batch`` per call, in their order; the first failing status, else 0."""
    for i in range(0, len(names), batch):
        rc = _run_mutmut(work, names[i : i + batch], max_children, log_mode="a")
        if rc != 0:
            print(f"mutmut exited with status {rc}; its output: {work / 'mutmut.log'}")
            return rc
    return 0


def _run_left_unrun(work: Path, target: Target, names: list[str], batch: int, max_children: int) -> list[str]:
    """Run by name the mutants of ``names`` mutmut left "not checked"; return those still unrun.

    A report counts a mutant only once it ran: one still unrun is neither killed nor survived.
    """
    left = _unrun(_classify(work, target), names)
    if not left:
        return []
    print(f"{len(left)} mutants left unrun by mutmut; running them by name")
    if _run_by_name(work, left, batch, max_children) == 0:
        left = _unrun(_classify(work, target), left)
    if left:
        print(f"  {len(left)} still not run (not counted): {', '.join(left[:5])}" + (", ..." if len(left) > 5 else ""))
    return left


# --- the sample mode ------------------------------------------------------------------------------


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The exact (Clopper-Pearson) two-sided interval of a binomial proportion, ``k`` of ``n``.

    Each end is where a binomial tail equals ``(1 - level) / 2``; found by bisection on the tail,
    summed in log space (exact enough for any ``n`` of a mutation run).
    """
    if not 0 <= k <= n or n < 1:
        raise ValueError(f"need 0 <= k <= n, n >= 1; got k={k}, n={n}")
    alpha = (1 - level) / 2

    def tail_at_least(p: float, j: int) -> float:  # P(X >= j), X ~ Bin(n, p)
        if p <= 0:
            return 1.0 if j <= 0 else 0.0
        if p >= 1:
            return 1.0
        terms = [
            math.lgamma(n + 1)
            - math.lgamma(i + 1)
            - math.lgamma(n - i + 1)
            + i * math.log(p)
            + (n - i) * math.log1p(-p)
            for i in range(j, n + 1)
        ]
        top = max(terms)
        return math.exp(top) * sum(math.exp(t - top) for t in terms)

    def solve(f: object, target: float) -> float:  # f increasing in p on [0, 1]
        lo, hi = 0.0, 1.0
        for _ in range(200):
            mid = (lo + hi) / 2
            if f(mid) < target:  # type: ignore[operator]
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2

    lower = 0.0 if k == 0 else solve(lambda p: tail_at_least(p, k), alpha)
    # upper end: P(X <= k) = alpha, i.e. P(X >= k + 1) = 1 - alpha
    upper = 1.0 if k == n else solve(lambda p: tail_at_least(p, k + 1), 1 - alpha)
    return lower, upper


def _draw(mutants: list[Mutant], seed: int) -> list[str]:
    """The number-changing mutants in a seeded random order: the first K are a uniform sample of size K.

    Each mutant's place is a hash of the seed and its name, so the order of two mutants does not
    depend on the others: a change of the classification (a mutant found message-only, an entry
    added to :data:`EQUIVALENT`) leaves the draw of every other mutant where it was.
    """

    def key(name: str) -> str:
        return hashlib.sha256(f"{seed}/{name}".encode()).hexdigest()

    return sorted((m.name for m in mutants if m.kind == "number"), key=key)


def _run_sample(
    work: Path, target: Target, size: int, seed: int, batch: int, max_children: int, *, resume: bool
) -> list[str]:
    """Draw ``size`` number-changing mutants, run them in batches of ``batch`` in the drawn order.

    Then every message-only mutant of the module (a few dozen): they are counted apart, not sampled.
    """
    _generate_or_exit(work)
    mutants = _classify(work, target)
    # the population: every number-changing mutant, the listed equivalents included (one drawn is then
    # not counted: the rest is a uniform sample of the others)
    sample = _draw(mutants, seed)[:size]
    (work / "sample.json").write_text(json.dumps({"seed": seed, "size": size, "names": sample}, indent=1))
    # --resume keeps the kills and reruns the survivors (tests may have been added since)
    # (and does not rerun a listed equivalent mutant: it is not counted)
    done = {m.name for m in mutants if m.status in ("killed", "timeout") or m.name in EQUIVALENT} if resume else set()
    todo = [n for n in sample if n not in done]
    message = [m.name for m in mutants if m.kind == "message" and m.name not in done]
    if resume:  # the module may have changed since the map from functions to tests was made
        _refresh_test_map(work, target, mutants, todo + message)
    # batches in the drawn order: an interrupted run still leaves a finished prefix of the draw,
    # itself a uniform sample (mutmut runs the mutants of one call fastest first, not in our order)
    if _run_by_name(work, todo, batch, max_children) == 0 and _run_by_name(work, message, batch, max_children) == 0:
        _run_left_unrun(work, target, todo + message, batch, max_children)
    return sample


def _report_sample(
    name: str, mutants: list[Mutant], sample: list[str], *, threshold: float, list_survivors: bool
) -> float | None:
    """The kill fraction on the finished prefix of the drawn sample, with its 95 % interval.

    Returns the interval's lower end: a module reaches ``threshold`` only where that end does.
    """
    by_name = {m.name: m for m in mutants}
    prefix = []
    for n in sample:
        m = by_name.get(n)
        # a listed equivalent is not run by --resume (it is not counted either way)
        listed = m is not None and n in EQUIVALENT and EQUIVALENT[n][0] in m.lines
        if m is None or (m.status == "not run" and not listed):
            break
        prefix.append(m)
    equivalent: list[Mutant] = []
    stale: list[Mutant] = []
    for m in prefix:
        if m.name in EQUIVALENT:
            (equivalent if EQUIVALENT[m.name][0] in m.lines else stale).append(m)
    skipped = {m.name for m in equivalent}
    counted = [m for m in prefix if m.name not in skipped]
    killed = [m for m in counted if m.status in ("killed", "timeout")]
    timeouts = [m for m in counted if m.status == "timeout"]
    no_tests = [m for m in counted if m.status == "no tests"]
    population = sum(m.kind == "number" for m in mutants)
    message = [m for m in mutants if m.kind == "message"]
    message_ran = [m for m in message if m.status != "not run"]
    message_survived = [m for m in message_ran if m.status not in ("killed", "timeout")]
    line = (
        f"{name}: sample of {len(prefix)} (of {len(sample)} drawn) from the module's {population} number-changing "
        f"mutants ({len(mutants)} in all); {len(killed)}/{len(counted)} killed"
    )
    score = None
    if counted:
        lo, hi = clopper_pearson(len(killed), len(counted))
        line += (
            f" ({100 * len(killed) / len(counted):.1f} %,"
            f" 95 % Clopper-Pearson interval {100 * lo:.1f}-{100 * hi:.1f} %;"
            f" >= {100 * threshold:g} % {'shown' if lo >= threshold else 'not shown'})"
        )
        score = lo
    line += (
        (f", {len(timeouts)} of them by timeout" if timeouts else "")
        + f"; equivalent (skip list) {len(equivalent)}"
        + (f"; reached by no selected test {len(no_tests)}" if no_tests else "")
        + f"; message-only mutants {len(message)} (not drawn: run apart, {len(message_ran)} ran,"
        f" {len(message_survived)} survived)"
    )
    print(line)
    if len(prefix) < len(sample):
        print(
            f"  the run stopped after {len(prefix)} of the {len(sample)} drawn (the prefix is still a uniform sample)"
        )
    _print_stale_and_survivors(stale, counted, list_survivors=list_survivors)
    return score


# --- classification -----------------------------------------------------------------------------


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """mutmut's copies of each function: ``x_name__mutmut_orig`` and ``x_name__mutmut_<n>``."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and "__mutmut_" in node.name:
            out[node.name] = node
    return out


def _differences(a: ast.AST, b: ast.AST, trail: tuple[ast.AST, ...]) -> list[tuple[ast.AST, tuple[ast.AST, ...]]]:
    """The smallest nodes of ``a`` where ``b`` differs, each with its ancestors in ``a``."""
    if type(a) is not type(b):
        return [(a, trail)]
    out: list[tuple[ast.AST, tuple[ast.AST, ...]]] = []
    for name, value_a in ast.iter_fields(a):
        if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef)) and name == "name":
            continue
        value_b = getattr(b, name, None)
        if isinstance(value_a, ast.AST):
            out += _differences(value_a, value_b, (*trail, a))  # type: ignore[arg-type]
        elif isinstance(value_a, list):
            if not isinstance(value_b, list) or len(value_a) != len(value_b):
                return [(a, trail)]
            for item_a, item_b in zip(value_a, value_b, strict=True):
                if isinstance(item_a, ast.AST):
                    out += _differences(item_a, item_b, (*trail, a))
                elif item_a != item_b:
                    return [(a, trail)]
        elif value_a != value_b or type(value_a) is not type(value_b):
            return [(a, trail)]
    return out


def _callee(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _in_message(node: ast.AST, trail: tuple[ast.AST, ...], text_functions: dict[str, str]) -> bool:
    """Whether ``node`` (with ancestors ``trail``) lies in text that no computation reads."""
    chain = (*trail, node)
    function = next((n for n in chain if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    base = re.sub(r"__mutmut_.*$", "", function.name).split("ǁ")[-1] if function is not None else ""
    base = base.removeprefix("x_")
    if base.endswith(("__repr__", "__str__")) or text_functions.get(base) == "all":
        return True
    for i, parent in enumerate(chain[:-1]):
        child = chain[i + 1]
        if text_functions.get(base) == "pairs" and isinstance(parent, ast.Tuple) and len(parent.elts) == 2:
            if child is parent.elts[1]:
                return True
        # a docstring: the first statement of a body, a string expression
        if isinstance(parent, ast.Expr) and isinstance(parent.value, ast.Constant) and isinstance(child, ast.Constant):
            return isinstance(parent.value.value, str)
        if isinstance(parent, ast.Raise) and child is parent.exc and isinstance(child, ast.Call):
            call = child
            below = chain[i + 2] if i + 2 < len(chain) else None
            if below is None or below is call.func:
                return False
            if isinstance(below, ast.keyword):
                return below.arg not in _DATA_KEYWORDS
            if below in call.args:
                return not (_callee(call) in _FIELD_ARGUMENT and call.args.index(below) == 0)
            return False
        if isinstance(parent, ast.Call) and _callee(parent) in _TEXT_ARGUMENTS:
            index, keywords = _TEXT_ARGUMENTS[_callee(parent)]
            if child in parent.args[index : index + 1]:
                return True
            if isinstance(child, ast.keyword):
                return child.arg in keywords
        if isinstance(parent, ast.Call) and _callee(parent) == "warn":
            if child in parent.args[:1]:
                return True
            if isinstance(child, ast.keyword):
                return child.arg in ("message", "stacklevel")
            return False
    return False


@dataclass
class Mutant:
    name: str
    status: str
    kind: str  # "number" or "message"
    diff: str = ""
    lines: list[str] = field(default_factory=list)


def _classify(work: Path, target: Target) -> list[Mutant]:
    return [m for path in target.paths for m in _classify_module(work, path)]


def _classify_module(work: Path, path: str) -> list[Mutant]:
    mutated = work / "mutants" / path
    meta = Path(f"{mutated}.meta")
    if not meta.exists():
        return []
    codes: dict[str, int | None] = json.loads(meta.read_text())["exit_code_by_key"]
    source = mutated.read_text()
    functions = _functions(ast.parse(source))
    out = []
    for name, code in codes.items():
        local = name.rsplit(".", 1)[-1]
        base = re.sub(r"__mutmut_\d+$", "", local)
        original, mutant = functions.get(f"{base}__mutmut_orig"), functions.get(local)
        kind, diff, changed = "number", "", []
        if original is not None and mutant is not None:
            found = _differences(original, mutant, ())
            text_functions = TEXT_FUNCTIONS.get(path, {})
            if found and all(_in_message(node, trail, text_functions) for node, trail in found):
                kind = "message"
            # the def line stays in (a mutated default argument is on it), under one name
            a = ast.unparse(original).replace(original.name, base, 1)
            b = ast.unparse(mutant).replace(mutant.name, base, 1)
            delta = list(difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm="", n=0))
            diff = "\n".join(line for line in delta[2:] if not line.startswith("@@"))
            changed = [line[1:].strip() for line in delta[2:] if line.startswith("+")]
        out.append(Mutant(name, _status(code), kind, diff, changed))
    return out


def _print_stale_and_survivors(stale: list[Mutant], counted: list[Mutant], *, list_survivors: bool) -> None:
    for m in stale:
        print(f"  stale skip-list entry (the mutant changed): {m.name}")
    if list_survivors:
        for m in counted:
            if m.status not in ("killed", "timeout"):
                print(f"  -- {m.name} [{m.status}]\n" + "\n".join("     " + ln for ln in m.diff.splitlines()))


def _report(name: str, mutants: list[Mutant], *, list_survivors: bool) -> float | None:
    ran = [m for m in mutants if m.status != "not run"]
    equivalent: list[Mutant] = []
    stale: list[Mutant] = []
    for m in ran:
        if m.name in EQUIVALENT:
            line, _reason = EQUIVALENT[m.name]
            (equivalent if line in m.lines else stale).append(m)
    skipped = {m.name for m in equivalent}
    number = [m for m in ran if m.kind == "number" and m.name not in skipped]
    message = [m for m in ran if m.kind == "message"]
    killed = [m for m in number if m.status in ("killed", "timeout")]
    timeouts = [m for m in number if m.status == "timeout"]
    no_tests = [m for m in number if m.status == "no tests"]
    score = len(killed) / len(number) if number else None
    message_survived = [m for m in message if m.status not in ("killed", "timeout")]
    print(
        f"{name}: {len(ran)} of {len(mutants)} mutants ran; number-changing {len(killed)}/{len(number)} killed"
        + (f" ({100 * score:.1f} %)" if score is not None else "")
        + (f", {len(timeouts)} of them by timeout" if timeouts else "")
        + f"; message-only {len(message)} ({len(message_survived)} survived); equivalent (skip list) {len(equivalent)}"
        + (f"; reached by no selected test {len(no_tests)}" if no_tests else "")
    )
    _print_stale_and_survivors(stale, number, list_survivors=list_survivors)
    return score


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help=f"modules to mutate (default: all): {', '.join(TARGETS)}")
    parser.add_argument("--functions", default="", metavar="GLOB,...", help="only these functions (globs)")
    parser.add_argument("--tests", default="", metavar="FILE,...", help="these test files instead of the module's own")
    parser.add_argument("--max-children", type=int, default=2, help="parallel test processes (default 2)")
    parser.add_argument("--resume", action="store_true", help="keep the results of the last run, run the rest")
    parser.add_argument("--report-only", action="store_true", help="print the last run's scores, run nothing")
    parser.add_argument("--list-survivors", action="store_true", help="print each number-changing survivor's diff")
    parser.add_argument("--threshold", type=float, default=0.85, help="score each module must reach (default 0.85)")
    parser.add_argument(
        "--sample",
        type=int,
        default=None,
        metavar="K",
        help="run K number-changing mutants drawn at random (0: all; default: 100 for coding.evaluate, "
        "coding.bounds, coding.partial and coding.quantize, all for the others)",
    )
    parser.add_argument("--seed", type=int, default=0, help="the seed of --sample's draw (default 0)")
    parser.add_argument(
        "--batch", type=int, default=20, help="--sample, and mutants run by name: mutants per mutmut call (default 20)"
    )
    args = parser.parse_args(argv)
    unknown = [m for m in args.modules if m not in TARGETS]
    if unknown:
        parser.error(f"modules: unknown {unknown}; known: {', '.join(TARGETS)}")
    if args.max_children < 1:
        parser.error(f"--max-children must be >= 1, got {args.max_children}")
    if not 0 <= args.threshold <= 1:
        parser.error(f"--threshold must be in [0, 1], got {args.threshold}")
    tests = tuple(t for t in args.tests.split(",") if t)
    missing = [t for t in tests if not (ROOT / t).is_file()]
    if missing:
        parser.error(f"--tests: no such file {missing}")
    if (args.sample is not None and args.sample < 0) or args.batch < 1:
        parser.error(f"--sample must be >= 0 and --batch >= 1, got {args.sample} and {args.batch}")
    functions = [f for f in args.functions.split(",") if f]
    if args.sample is not None and args.sample > 0 and functions:
        parser.error("--sample draws from the whole module: it does not take --functions")
    scores = {}
    for name in args.modules or list(TARGETS):
        target = TARGETS[name]
        if tests:
            target = Target(target.paths, tests)
        work = WORK / name
        # --functions runs every mutant of those functions; otherwise the module's own default (a sample
        # of the two large modules) unless --sample says
        size = args.sample if args.sample is not None else (0 if functions else target.sample)
        if size:
            if args.report_only:
                drawn = json.loads((work / "sample.json").read_text()) if (work / "sample.json").exists() else {}
                if (drawn.get("seed"), drawn.get("size")) != (args.seed, size):
                    parser.error(f"{name}: the last run drew no sample of {size} with seed {args.seed}")
                sample = drawn["names"]
            else:
                work = _prepare(name, target, resume=args.resume)
                sample = _run_sample(work, target, size, args.seed, args.batch, args.max_children, resume=args.resume)
            scores[name] = _report_sample(
                name, _classify(work, target), sample, threshold=args.threshold, list_survivors=args.list_survivors
            )
            continue
        if not args.report_only:
            work = _prepare(name, target, resume=args.resume)
            globs = _function_globs(target.modules, functions)
            if args.resume:  # generate first: a change of the module is seen before mutmut's map is saved
                _generate_or_exit(work)
                _refresh_test_map(work, target, _classify(work, target), [])
            rc = _run_mutmut(work, globs, args.max_children)
            if rc != 0:
                print(f"{name}: mutmut exited with status {rc}; its output: {work / 'mutmut.log'}")
            else:
                selected = [m.name for m in _classify(work, target) if not globs or _matches(m.name, globs)]
                _run_left_unrun(work, target, selected, args.batch, args.max_children)
        scores[name] = _report(name, _classify(work, target), list_survivors=args.list_survivors)
    failing = [n for n, s in scores.items() if s is None or s < args.threshold]
    if failing:
        print(f"below {100 * args.threshold:.0f} % (or no mutant ran): {', '.join(failing)}")
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
