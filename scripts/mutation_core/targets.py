"""What ``scripts/mutation.py`` mutates: the targets, their test files, text-only functions, equivalents."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / ".mutation"


@dataclass(frozen=True)
class Target:
    """The modules mutated together (one module, or those of a package) and the test files that test them."""

    paths: tuple[str, ...]
    tests: tuple[str, ...]
    #: mutants ``make mutation`` runs without ``--sample``: 0 every one, K a random sample of K (large modules)
    sample: int = 0
    #: the functions mutated without ``--functions`` (globs as for ``--functions``; empty: every function)
    functions: tuple[str, ...] = ()

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
    # the package gcsim/coding/bounds/, one module per theorem: mutated together, with the bounds' tests;
    # but equal_load.py, which is its own target with its own tests (coding.equal_load)
    "coding.bounds": Target(
        tuple(p for p in _package_modules("gcsim/coding/bounds") if not p.endswith("/equal_load.py")),
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
    # Lemma 63.7's certified bound on its own, with its own tests (coding.bounds leaves it out); a
    # sample of 60: each mutant reruns an LP
    "coding.equal_load": Target(
        ("gcsim/coding/bounds/equal_load.py",),
        ("tests/test_equal_load_bound.py", "tests/test_equal_load_mutants.py"),
        sample=60,
    ),
    # the multiplexed sequential code (theory §62.4-§62.5): simulator and least-squares partial decoding
    "coding.sequential_multiplexed": Target(
        ("gcsim/coding/sequential_multiplexed.py",),
        (
            "tests/test_sequential_multiplexed.py",
            "tests/test_sequential_partial.py",
            "tests/test_sequential_multiplexed_mutants.py",
        ),
        sample=60,
    ),
    # issue #36 item 5: the per-iteration sequential code (selective repeat, theory §62.1-§62.3), its
    # bursty-pattern test and the Markov / fixed-straggler masks
    "coding.sequential": Target(
        ("gcsim/coding/sequential.py",),
        ("tests/test_sequential.py", "tests/test_sequential_mutants.py"),
        sample=60,
    ),
    # issue #36 item 2: heterogeneous workers' loads (theory §63) and the speed models they are planned on
    "coding.load_allocation": Target(
        (
            "gcsim/coding/load_allocation.py",
            "gcsim/coding/straggler_models/speed.py",
            "gcsim/coding/straggler_models/load_speed.py",
        ),
        ("tests/test_load_allocation.py", "tests/test_speed_model.py", "tests/test_load_allocation_mutants.py"),
        sample=60,
    ),
    # the link-level time model of the collectives (theory §56.7, §56.10, §56.13: ports, buckets, framing,
    # rendezvous), against its hand computations
    "executor.linkmodel": Target(
        ("gcsim/executor/allreduce/_linkmodel.py",),
        ("tests/test_linkmodel.py", "tests/test_linkmodel_mutants.py"),
        sample=100,
    ),
    # the straggler-aware collective's plan, cost, schedule and window (theory §56.4, §56.13, §56.14); its
    # run function is tested by spawned gloo ranks, which mutmut's map from functions to tests cannot see
    "executor.straggler_aware": Target(
        ("gcsim/executor/allreduce/straggler_aware.py",),
        ("tests/test_linkmodel.py", "tests/test_straggler_aware_mutants.py"),
        functions=(
            "_check_gate",
            "_check_window",
            "_lag",
            "_plan",
            "_roles",
            "straggler_aware_cost",
            "straggler_aware_schedule",
            "straggler_aware_window",
        ),
    ),
    # the bulk-synchronous collectives' costs and schedules (theory §56.1-§56.5): their run functions are
    # tested by spawned gloo ranks (tests/test_collectives_side_by_side.py), which mutmut's map cannot see
    "executor.collectives": Target(
        (
            "gcsim/executor/allreduce/ring.py",
            "gcsim/executor/allreduce/tree.py",
            "gcsim/executor/allreduce/halving_doubling.py",
            "gcsim/executor/allreduce/cerar_ring.py",
        ),
        ("tests/test_linkmodel.py", "tests/test_collectives_mutants.py"),
        functions=(
            "ring_cost",
            "ring_schedule",
            "tree_levels",
            "tree_children",
            "tree_cost",
            "_parent",
            "tree_schedule",
            "_layout",
            "_actual",
            "halving_doubling_cost",
            "halving_doubling_schedule",
            "_components",
            "cerar_cost",
            "cerar_schedule",
        ),
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
    "gcsim.executor.allreduce._linkmodel.x_simulate__mutmut_130": (
        "moved = False",
        "run()'s 'moved' only asks settle() for another pass, and nothing a rank does in run() can let "
        "another rank move at the same instant except through a delivery, a 0-byte transfer or a released "
        "held message, which the later loops of the same pass handle and flag themselves",
    ),
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
    **{
        f"gcsim.coding.quantize.x_allocate_bits__mutmut_{k}": (
            line,
            "min_bits is a Python int (check_int): np.full of it is int64 already (NumPy's default integer on "
            "64-bit Linux and macOS, and on every platform since NumPy 2)",
        )
        for k, line in ((48, "b = np.full(n, min_bits, dtype=None)"), (51, "b = np.full(n, min_bits)"))
    },
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
    # equal_load (Lemma 63.7's certificate)
    "gcsim.coding.bounds.equal_load.x__solve__mutmut_28": (
        "weights = 1 << np.arange(n)",
        "NumPy's default integer (int64, at least int32) holds 1 << (n - 1): n <= 16 under MAX_LP_SUBSETS, "
        "and 2^31 subsets could not be allocated anyway",
    ),
    "gcsim.coding.bounds.equal_load.x__probabilities__mutmut_17": (
        "for j, v in enumerate(np.asarray(p).ravel().tolist() if isinstance(p, np.ndarray) else p):",
        "np.asarray of an ndarray is that array; .tolist() yields the same Python scalars as from its "
        "object-dtype copy (floats, ints, Fractions, bools alike)",
    ),
    "gcsim.coding.bounds.equal_load.x__check_scaled__mutmut_14": (
        "if Y[T - top] * S > K[T] * Q:",
        "Y has 2 top entries (y_0 appended last to n workers' sums), so for 0 <= T < top the negative "
        "index T - top is the entry T + top",
    ),
    "gcsim.coding.sequential_multiplexed.x__least_squares__mutmut_58": (
        "proj = _projections(code.group_scheme(seed).B, senders[part].reshape(-2, n))",
        "numpy's reshape reads a negative size as the one unknown dimension (-2 as -1; NumPy 2.4, no warning), "
        "so the stack has the same (part.size * B, n) shape",
    ),
    "gcsim.coding.sequential_multiplexed.x__least_squares__mutmut_35": (
        "weights[part, :n * (W - 1) * f] = np.repeat(chunks[part].reshape(part.size, -2), f, axis=1)",
        "as _58: -2 is read as the one unknown dimension, the same (part.size, n * (W - 1)) shape",
    ),
    "gcsim.coding.sequential_multiplexed.x__least_squares__mutmut_71": (
        "resid = np.clip(np.sum((proj - 1.0) ** 2, axis=1), None, n)",
        "a sum of squares of floats is never negative, so the lower clip at 0 never acts",
    ),
    "gcsim.coding.sequential_multiplexed.x__projections__mutmut_21": (
        "return (B[None] * seen[:, None, :] @ X)[:, :, 0][which.reshape(None)]",
        "np.unique(..., axis=0, return_inverse=True) returns a 1-D inverse (NumPy 1.26 and >= 2.0.1; 2.0.0 gave "
        "it the input's shape, which the reshape(-1) is for), and reshape(None) of a 1-D array is itself",
    ),
    "gcsim.coding.sequential_multiplexed.x__projections__mutmut_23": (
        "return (B[None] * seen[:, None, :] @ X)[:, :, 0][which.reshape(-2)]",
        "as _21, and -2 is read as -1 (NumPy 2.4)",
    ),
    "gcsim.coding.sequential_multiplexed.xǁMultiplexedSGCǁ__hash____mutmut_3": (
        "return hash(('multiplexedsgc', self._p))",
        "a hash value is unspecified: equal codes still hash equal (same string, same params), and __eq__, "
        "which decides set and dict membership, is unchanged",
    ),
    # sequential (selective repeat, §62.2)
    "gcsim.coding.sequential.x_simulate_selective_repeat__mutmut_96": (
        "if wait is not None and 0 <= due < J and (decoded[due] <= 0):",
        "decoded[due] >= 0 only for a job decoded in its own round, whose n - missing[due] >= n - s tasks make "
        "the count tested next >= n - s: the master never waits for it",
    ),
    "gcsim.coding.sequential.x_simulate_selective_repeat__mutmut_97": (
        "if wait is not None and 0 <= due < J and (decoded[due] < 1):",
        "as _96",
    ),
    "gcsim.coding.sequential.x_simulate_selective_repeat__mutmut_137": (
        "sign = 2 if code.forgive == 'oldest' else -1",
        "the forgiveness order sorts by (sign * origin, worker): a positive factor keeps the order",
    ),
    "gcsim.coding.sequential.x_simulate_selective_repeat__mutmut_142": (
        "sign = 1 if code.forgive == 'oldest' else -2",
        "as _137: a negative factor gives the same reversed order",
    ),
    "gcsim.coding.sequential.x_simulate_selective_repeat__mutmut_55": (
        "work = np.full((R, n), +1, dtype=np.int64)",
        "the loop assigns every entry (each round, each worker) before anything reads it",
    ),
    "gcsim.coding.sequential.x_simulate_selective_repeat__mutmut_56": (
        "work = np.full((R, n), -2, dtype=np.int64)",
        "as _55",
    ),
    "gcsim.coding.sequential.x_simulate_selective_repeat__mutmut_42": (
        "decoded = np.full(J, -1, dtype=None)",
        "np.full of a Python int takes NumPy's default integer, int64 (NumPy >= 2, every 64-bit platform)",
    ),
    "gcsim.coding.sequential.x_simulate_selective_repeat__mutmut_45": ("decoded = np.full(J, -1)", "as _42"),
    "gcsim.coding.sequential.x_simulate_selective_repeat__mutmut_51": (
        "work = np.full((R, n), -1, dtype=None)",
        "as _42",
    ),
    "gcsim.coding.sequential.x_simulate_selective_repeat__mutmut_54": ("work = np.full((R, n), -1)", "as _42"),
    "gcsim.coding.sequential.x_simulate_selective_repeat__mutmut_67": (
        "missing = np.zeros(J, dtype=None)",
        "float64 counts of at most n workers are exact integers; they are only compared and subtracted from n",
    ),
    "gcsim.coding.sequential.x_simulate_selective_repeat__mutmut_69": ("missing = np.zeros(J)", "as _67"),
    "gcsim.coding.sequential.x_simulate_classic__mutmut_70": (
        "round_time = load + (wait if wait is not None else 1.0) * waited",
        "with wait None, waited is all False, so the product is 0 whatever the factor",
    ),
    "gcsim.coding.sequential.x_simulate_classic__mutmut_90": (
        "return SequentialRun(decoded, work, waited, np.asarray(round_time, dtype=None), 0, load)",
        "round_time is already a float64 array (a float plus a float times a boolean array)",
    ),
    "gcsim.coding.sequential.x_simulate_classic__mutmut_92": (
        "return SequentialRun(decoded, work, waited, np.asarray(round_time), 0, load)",
        "as _90",
    ),
    "gcsim.coding.sequential.x_job_masks__mutmut_19": (
        "arr = _masks(masks, None)",
        "the next check compares the masks' shape with the run's and refuses with the same argument 'masks'",
    ),
    "gcsim.coding.sequential.x_job_masks__mutmut_21": ("arr = _masks(masks)", "as _19"),
    # heterogeneous loads (§63.6)
    "gcsim.coding.load_allocation.x__starts__mutmut_53": (
        "named['symmetric'] = np.full(n, total / n, dtype=np.int64)",
        "only when total % n == 0: total / n is then an integer-valued float, and int64 takes it exactly",
    ),
    "gcsim.coding.load_allocation.x__starts__mutmut_24": (
        "named['proportional to speed'] = apportion_loads(np.asarray(speed), total, parts)",
        "a model's speed is already a float64 array (law_inputs), and apportion_loads converts to float itself",
    ),
    "gcsim.coding.load_allocation.x_optimize_loads__mutmut_39": (
        "total = check_int('total', total, minimum=n, maximum=None)",
        "a total above n N then fails the feasibility check (caps at most N each) with the same argument "
        "'total'; only the message differs",
    ),
    "gcsim.coding.straggler_models.load_speed.xǁLoadSpeedModelǁmax_load__mutmut_8": (
        "return np.full(self.n, int(parts))",
        "np.full of a Python int takes NumPy's default integer, int64 (NumPy >= 2, every 64-bit platform)",
    ),
    # the bulk-synchronous collectives (§56.1-§56.5)
    **{
        f"gcsim.executor.allreduce.tree.x_tree_children__mutmut_{k}": (
            line,
            "the elif only ends the loop early: once bit k of r is set no later k can add a child "
            "(r % 2^(k'+1) != 0), and once r + 2^k >= N none can either (r + 2^k' is larger)",
        )
        for k, line in (
            (20, "elif r / (1 << k + 1) != 0:"),
            (22, "elif r % (2 << k + 1) != 0:"),
            (24, "elif r % (1 << k + 2) != 0:"),
            (25, "elif r % (1 << k + 1) == 0:"),
            (26, "elif r % (1 << k + 1) != 1:"),
        )
    },
    "gcsim.executor.allreduce.tree.x_tree_schedule__mutmut_39": (
        "prog += [Send(parent, b, (r | -r).bit_length() - 1), Recv(parent, levels)]",
        "for r > 0, r | -r is -(r & -r) in two's complement, and -2^j has the bit length of 2^j",
    ),
    "gcsim.executor.allreduce.halving_doubling.x_halving_doubling_schedule__mutmut_58": (
        "x = r // 2 if r <= 2 * extra else r - extra",
        "at r = 2 extra both branches give extra",
    ),
    **{
        f"gcsim.executor.allreduce.halving_doubling.x_halving_doubling_schedule__mutmut_{k}": (
            line,
            "a schedule's tags only pair each send with its receive: the rounds' tags stay distinct from "
            "each other and from the fold's for every pair of ranks (Schedule refuses a repeated (src, dst, "
            "tag)), so the schedule is the same up to relabelling and plays the same",
        )
        for k, line in (
            (77, "rounds = [(k, 1 - k) for k in range(steps)] + [(k, 2 * steps - k) for k in reversed(range(steps))]"),
            (80, "rounds = [(k, 1 + k) for k in range(steps)] + [(k, 2 * steps + k) for k in reversed(range(steps))]"),
            (82, "rounds = [(k, 1 + k) for k in range(steps)] + [(k, 3 * steps - k) for k in reversed(range(steps))]"),
        )
    },
}
