"""Messages in low precision (theory §60.4): the workers' rounding, the decoder's amplification.

The decoded error added by rounding the messages is checked against Proposition 2's bound with the
exact messages computed in rational arithmetic (Fractions of the float64 encoder and gradients),
never with the code under test; the paper's second claim (the interpolation code fails in float32 at
n = 25 where the structured codes do not notice) is checked on the precision experiment's codes.
"""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest

from gcsim.cerar.protocol import round_bfloat16
from gcsim.coding.bounds import split_blocks
from gcsim.errors import InvalidArgumentError
from gcsim.learning.experiments import PRECISION_S, precision_codes
from gcsim.learning.train import PRECISIONS, CodedGradient, CodeSpec, resolve_precision, transmissions
from tolerances import gamma

#: unit roundoff of the message precision and of the accumulation (float32 in both low precisions)
U = {"float32": 2.0**-24, "bfloat16": 2.0**-8}
U_ACC = 2.0**-24


def _gamma(k: int, u: float) -> float:
    return k * u / (1 - k * u)


def _codes():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the Vandermonde code warns about κ
        return {c.method: CodedGradient(c, p=0.1, seed=0) for c in precision_codes()}


@pytest.fixture(scope="module")
def codes():
    return _codes()


def _masks(n: int, count: int, seed: int) -> np.ndarray:
    """``count`` patterns of exactly PRECISION_S stragglers (the exact family decodes them exactly)."""
    rng = np.random.default_rng(seed)
    masks = np.ones((count, n), bool)
    for t in range(count):
        masks[t, rng.choice(n, PRECISION_S, replace=False)] = False
    return masks


def _exact_messages(B: np.ndarray, stacked: np.ndarray) -> list[list[Fraction]]:
    """``Bᵀ G`` in rational arithmetic (every float64 entry is an exact rational)."""
    mN, n = B.shape
    Bf = [[Fraction(float(B[r, j])) for j in range(n)] for r in range(mN)]
    Gf = [[Fraction(float(v)) for v in row] for row in stacked]
    return [
        [sum((Bf[r][j] * Gf[r][c] for r in range(mN) if B[r, j] != 0), Fraction(0)) for c in range(stacked.shape[1])]
        for j in range(n)
    ]


def test_transmissions_float64_equal_exact_sums():
    rng = np.random.default_rng(0)
    B = rng.standard_normal((6, 4)) * (rng.random((6, 4)) < 0.6)
    blocks = rng.standard_normal((3, 2, 2))  # N = 3, m = 2, w = 2
    stacked = np.swapaxes(blocks, 0, 1).reshape(6, 2)
    exact = np.array([[float(v) for v in row] for row in _exact_messages(B, stacked)])
    got = transmissions(B, blocks, "float64")[0]
    assert np.all(np.abs(got - exact) <= gamma(6) * np.abs(B).T @ np.abs(stacked))


def test_low_precision_messages_are_representable():
    rng = np.random.default_rng(1)
    B = rng.standard_normal((2, 4, 5))  # two encoder draws
    blocks = rng.standard_normal((2, 2, 7))
    bf = transmissions(B, blocks, "bfloat16")
    f32 = transmissions(B, blocks, "float32")
    assert bf.shape == f32.shape == (2, 5, 7)
    assert np.array_equal(round_bfloat16(bf.astype(np.float32)).astype(np.float64), bf)
    assert np.array_equal(bf.astype(np.float32).astype(np.float64), bf)
    assert np.array_equal(f32.astype(np.float32).astype(np.float64), f32)
    with pytest.raises(InvalidArgumentError) as exc:
        transmissions(B, blocks, "float16")
    assert exc.value.argument == "precision"
    assert resolve_precision("bfloat16") == "bfloat16" and PRECISIONS == ("float64", "float32", "bfloat16")


@pytest.mark.parametrize("precision", ["float32", "bfloat16"])
def test_proposition_2_bound_holds_for_every_code(codes, precision):
    """‖Xᵀ(fl(ỹ) − y)‖_F <= η ‖X_F‖₂ ‖ |B_F|ᵀ |G| ‖_F + float64 decode, y exact (theory §60.4)."""
    rng = np.random.default_rng(2)
    w = 2
    for method, code in codes.items():
        N, n, m = code.spec.num_parts, code.spec.n, code.spec.m
        G = rng.standard_normal((N, m * w))
        blocks = split_blocks(G, m)
        stacked = np.swapaxes(blocks, 0, 1).reshape(m * N, w)
        B = code.base.B
        y = _exact_messages(B, stacked)
        k = int((B != 0).sum(axis=0).max())
        eta = (1 + U[precision]) ** 3 * (1 + _gamma(k, U_ACC)) - 1
        for mask in _masks(n, 3, 3):
            X = code.decoders(mask)[1][0]  # (n, m), zero on the stragglers
            est = code.estimates(G, mask, precision=precision)[0].reshape(m, w)
            Xf = [[Fraction(float(v)) for v in row] for row in X]
            exact = np.array(
                [
                    [float(sum((Xf[j][l] * y[j][c] for j in range(n) if X[j, l] != 0), Fraction(0))) for c in range(w)]
                    for l in range(m)
                ]
            )
            F = np.flatnonzero(mask)
            sent = transmissions(B, blocks, precision)[0]
            bound = eta * np.linalg.norm(X[F], 2) * np.linalg.norm(np.abs(B[:, F]).T @ np.abs(stacked))
            bound += gamma(n) * np.linalg.norm(np.abs(X).T @ np.abs(sent))  # the float64 decode
            bound += gamma(1) * np.linalg.norm(exact)  # rounding the exact value to float64
            err = np.linalg.norm(est - exact)
            assert err <= bound, (method, precision, err, bound)


def test_interpolation_code_fails_in_float32_where_structured_codes_do_not(codes):
    """The paper's claim (b) at n = 25: rounding the messages costs the Vandermonde decode ~κu, the others ~u.

    ``added`` is ``‖ĝ_P − ĝ_float64‖ / ‖g‖``, the error the precision adds (median over 20 Bernoulli(0.1)
    patterns, as in the training runs); Proposition 2 bounds it by ``η ‖X_F‖₂ ‖|B_F|ᵀ|G|‖ / ‖g‖``.
    """
    rng = np.random.default_rng(4)
    masks = rng.random((20, 25)) > 0.1
    added: dict[tuple[str, str], float] = {}
    for method, code in codes.items():
        G = rng.standard_normal((code.spec.num_parts, 64)) + 0.5  # correlated parts, like real gradients
        g = G.sum(axis=0)
        ref = code.estimates(G, masks, precision="float64")
        for precision in ("float32", "bfloat16"):
            est = code.estimates(G, masks, precision=precision)
            added[method, precision] = float(np.median(np.linalg.norm(est - ref, axis=1) / np.linalg.norm(g)))
    structured = ("rd", "ns", "hadamard-ns", "exact-gaussian")
    for method in structured:
        # a well-conditioned decode: a few hundred units of roundoff at most
        assert added[method, "float32"] <= 300 * U["float32"], (method, added[method, "float32"])
        assert added[method, "bfloat16"] <= 3 * U["bfloat16"], (method, added[method, "bfloat16"])
    vander = "exact-vandermonde"
    worst = max(added[m, "float32"] for m in structured)
    assert added[vander, "float32"] > 1e3 * worst, (added[vander, "float32"], worst)
    assert added[vander, "bfloat16"] > 1.0  # the decoded gradient is further from g than 0 is


# ---------------------------------------------------------------------------------------------- training


@pytest.fixture(scope="module")
def digits():
    pytest.importorskip("sklearn")
    from gcsim.learning.datasets import load_digits

    return load_digits(seed=0)


def test_train_in_float32_records_the_precision_and_matches_float64_on_a_stable_code(digits):
    from gcsim.learning.models import MLP
    from gcsim.learning.train import train

    spec = CodeSpec("uncoded", np.eye(4, dtype=int), decoder="arrivals")
    kw = dict(model=MLP((64, 8, 10)), iterations=10, eval_every=5, lr=0.3, seed=1)
    a = train(spec, digits, precision="float64", **kw)
    b = train(spec, digits, precision="float32", **kw)
    assert a.params["precision"] == "float64" and b.params["precision"] == "float32"
    assert a.params["diverged_at"] is None and b.params["diverged_at"] is None
    # identity code: the float32 messages are the float32-rounded gradients, a relative change ~u per step
    np.testing.assert_allclose(b.history.train_loss, a.history.train_loss, rtol=1e-4)
    assert not np.array_equal(a.theta, b.theta)
    with pytest.raises(InvalidArgumentError) as exc:
        train(spec, digits, precision="half", **kw)
    assert exc.value.argument == "precision"
    with pytest.raises(InvalidArgumentError) as exc:
        train(spec, digits, divergence="ignore", **kw)
    assert exc.value.argument == "divergence"


def test_divergence_stops_or_raises(digits):
    from gcsim.learning.models import MLP
    from gcsim.learning.train import train

    spec = CodeSpec("uncoded", np.eye(4, dtype=int), decoder="arrivals")
    kw = dict(model=MLP((64, 8, 10)), iterations=20, eval_every=5, lr=1e300, seed=0)  # overflows at once
    res = train(spec, digits, divergence="stop", **kw)
    t = res.params["diverged_at"]
    assert t is not None and t < 20
    last = res.history.iloc[-1]
    assert last.iteration == t + 1 and np.isinf(last.train_loss) and np.isnan(last.test_acc)
    assert np.all(np.isfinite(res.history.train_loss.iloc[:-1]))
    with pytest.raises(FloatingPointError, match="not finite at iteration"):
        train(spec, digits, **kw)


def test_transmissions_and_delay_clock_refuse_bad_input():
    from gcsim.learning.experiments import default_codes, delay_clock

    blocks = np.ones((3, 2, 4))
    for bad, arg in (
        ((np.ones((5, 2)), blocks), "B"),  # mN = 6 rows needed
        ((np.full((6, 2), np.nan), blocks), "B"),
        ((np.ones((6, 2)), np.ones((3, 8))), "blocks"),
    ):
        with pytest.raises(InvalidArgumentError) as exc:
            transmissions(*bad)
        assert exc.value.argument == arg
    spec = default_codes()[2]
    for kwargs, arg in (
        ({"spec": "rd", "d": 10, "batch_per_part": 2, "s": 1}, "spec"),
        ({"spec": spec, "d": 10, "batch_per_part": 2, "s": 16}, "s"),
        ({"spec": spec, "d": 10, "batch_per_part": 0, "s": 1}, "batch_per_part"),
        ({"spec": spec, "d": 10, "batch_per_part": 2, "s": 1, "tail": 0.0}, "tail"),
        ({"spec": spec, "d": 10, "batch_per_part": 2, "s": 1, "wallclock": 3}, "wallclock"),
    ):
        with pytest.raises(InvalidArgumentError) as exc:
            delay_clock(**kwargs)
        assert exc.value.argument == arg


def test_delay_clock_shift_is_compute_plus_message_time():
    from gcsim.coding.delays import ShiftedExponentialDelays
    from gcsim.learning.experiments import default_codes, delay_clock
    from gcsim.learning.train import WallClockModel

    spec = default_codes()[2]  # McFarland (16, 6, 2): every worker holds 6 parts
    wc = WallClockModel(seconds_per_example=1e-4, bandwidth=2e5, latency=0.01)
    clock = delay_clock(spec, d=1001, batch_per_part=5, s=3, wallclock=wc, tail=2.0)
    delays = clock.delays
    assert isinstance(delays, ShiftedExponentialDelays)
    want = 6 * 5 * 1e-4 + 0.01 + 501 * 4 / 2e5  # 30 examples, ceil(1001 / 2) float32 scalars
    np.testing.assert_allclose(delays.shift, want, rtol=1e-15)
    np.testing.assert_allclose(delays.rate, 1 / (2.0 * want), rtol=1e-15)
    masks = clock.sample(50, seed=0)
    assert np.all(masks.sum(axis=1) == 13)  # the first n - 3 arrivals


def test_claims_rules_on_made_up_tables():
    """The claims' verdicts follow their stated rules (a table where each claim fails, one where all hold).

    Claim 1's intervals over seeds are checked against scipy in tests/test_training_claims.py.
    """
    pd = pytest.importorskip("pandas")
    from gcsim.app.stages.training import (
        EXACT_M2,
        INTERPOLATION,
        M1_BASELINES,
        M2_BASELINES,
        PAPER_CODES,
        STRUCTURED,
        _claims,
    )

    def ttt(paper_time):
        rows = []
        for clock in ("bernoulli", "delay"):
            for c in (*PAPER_CODES, *M1_BASELINES, *M2_BASELINES, *EXACT_M2):
                for seed in range(5):
                    t = paper_time + 0.1 * seed if c in PAPER_CODES else 10.0 + 0.2 * seed
                    rows.append(
                        {
                            "clock": clock,
                            "label": c,
                            "bytes_per_step": 100 if c in M1_BASELINES else 50,
                            "seed": seed,
                            "wallclock_to_target": t,
                            "end_clock": 20.0,
                        }
                    )
        return pd.DataFrame(rows)

    def precision(growth, bf16, drift, diverged):
        rows = []
        for c in (*STRUCTURED, INTERPOLATION):
            base = 1e-3 if c == INTERPOLATION else 0.02
            for pr, e in (
                ("float64", base),
                ("float32", base * (growth if c == INTERPOLATION else 1 + drift)),
                ("bfloat16", bf16 if c == INTERPOLATION else base * (1 + drift)),
            ):
                rows.append(
                    {
                        "label": c,
                        "precision": pr,
                        "mean_rel_error": e,
                        "diverged": int(diverged and c == INTERPOLATION and pr == "bfloat16"),
                    }
                )
        return pd.DataFrame(rows)

    good = _claims(ttt(5.0), precision(80.0, 1e6, 1e-4, True))
    assert good.holds.all() and (good.verdict == "holds").all() and len(good) == 9
    bad = _claims(ttt(15.0), precision(2.0, 0.5, 0.02, False))
    assert not bad.holds.any() and set(bad.verdict) == {"does not hold"}
    # a paper code that never reaches the target (censored at its run's end, 20 s): later than every baseline
    never = ttt(5.0)
    never.loc[never.label == PAPER_CODES[0], "wallclock_to_target"] = np.nan
    assert set(_claims(never, precision(80.0, 1e6, 1e-4, True)).verdict[:6]) == {"does not hold"}
    # ... and one whose run ended early (at 4 s, a lower bound below the baselines' times): not shown
    never["end_clock"] = 4.0
    assert set(_claims(never, precision(80.0, 1e6, 1e-4, True)).verdict[:6]) == {"not shown"}
