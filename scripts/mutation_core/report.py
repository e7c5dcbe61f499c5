"""The sample's draw, its exact interval and the per-module report lines of ``scripts/mutation.py``."""

from __future__ import annotations

import hashlib
import math

from .classify import Mutant
from .targets import EQUIVALENT

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


def _report_sample(
    name: str,
    mutants: list[Mutant],
    sample: list[str],
    *,
    threshold: float,
    list_survivors: bool,
    scope: str = "module's",
) -> float | None:
    """The kill fraction on the finished prefix of the drawn sample, with its 95 % interval.

    ``mutants``: the population drawn from (the module's, or the selected functions'; ``scope`` names
    it in the report). Returns the interval's lower end: a module reaches ``threshold`` only where that
    end does.
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
        f"{name}: sample of {len(prefix)} (of {len(sample)} drawn) from the {scope} {population} number-changing "
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
