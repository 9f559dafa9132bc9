"""verify.runner: a failure that rests only on Monte Carlo tests refutes only if an
independent redraw of the samples rejects too; otherwise the tier is undecided."""
from dataclasses import replace

import numpy as np

from moments.montecarlo import estimate
from verify.claim import BUDGETS, Claim, Context, TierResult
from verify.evidence import Finding, combine
from verify.formulas import FormulaSymbol, NamedFormula
from verify.runner import check_claim

SAMPLES = 100


def _mean_test(ctx, draw=None) -> TierResult:
    """E[x] = formula m for x ~ N(0, 1) + 0 (the claim: m = 0), by a z-test of SAMPLES draws
    at level 0.999."""
    m = float(ctx.formulas["m"])
    rng = draw(ctx) if draw else ctx.mc_rng("mean")
    est = estimate(rng.standard_normal(SAMPLES))
    ok = est.agrees(m, 0.999)
    return combine([Finding("mean_vs_monte_carlo", ok, est.as_dict(), None if ok else
                            {"z": est.z_score(m)}, sampled=True)])


def _claim(numeric, text="0") -> Claim:
    x = FormulaSymbol("x", positive=True)
    return Claim("demo2026.lemma2", "E x = m", "demo2026", "E x = m", (),
                 (NamedFormula("m", text, (x,)),), {"numeric": numeric})


def _first_rejection_seed() -> int:
    """The first seed whose first sample rejects the true m = 0 and whose redraw does not (a
    false rejection, probability 0.001 per seed)."""
    for seed in range(50_000):
        ctx = Context("demo2026.lemma2", {"m": 0}, {"m": "0"}, BUDGETS["quick"], seed=seed)
        if _mean_test(ctx).status == "fail":
            assert _mean_test(replace(ctx, replicate=1)).status == "pass"
            return seed
    raise AssertionError("no false rejection in 50,000 seeds")


def test_a_false_rejection_is_redrawn_and_leaves_the_claim_undecided():
    seed = _first_rejection_seed()
    v = check_claim(_claim(_mean_test), tiers=("numeric",), budget="quick", device="cpu",
                    seed=seed)
    r = v.tiers["numeric"]
    assert v.verdict == "inconclusive"
    assert r.status == "error" and "redraw" in r.reason and r.counterexample is None
    assert r.evidence["redraw"]["status"] == "pass"
    assert r.evidence["redraw"]["streams"] == ["mean"]
    assert r.evidence["first_counterexample"]["z"]


def test_a_false_statement_is_rejected_twice_and_refuted():
    v = check_claim(_claim(_mean_test, "1"), tiers=("numeric",), budget="quick", device="cpu")
    r = v.tiers["numeric"]
    assert v.verdict == "refuted"
    assert r.status == "fail" and r.evidence["redraw"]["status"] == "fail"
    assert "rejects too" in r.reason
    assert r.counterexample["z"] < -5


def test_a_true_statement_passes_without_a_redraw():
    v = check_claim(_claim(_mean_test), tiers=("numeric",), budget="quick", device="cpu")
    assert v.verdict == "verified" and "redraw" not in v.tiers["numeric"].evidence


def test_a_sample_not_drawn_through_the_context_cannot_refute():
    # the same seed every time: a redraw would repeat the first sample, not test it again
    v = check_claim(_claim(lambda ctx: _mean_test(ctx, lambda c: np.random.default_rng(0)),
                           "1"), tiers=("numeric",), budget="quick", device="cpu")
    r = v.tiers["numeric"]
    assert v.verdict == "inconclusive"
    assert r.status == "error" and "mc_seed" in r.reason
    assert r.evidence["redraw"]["status"] == "not possible"


def test_an_exact_failure_beside_a_sampled_one_refutes_without_a_redraw():
    calls = []

    def both(ctx):
        calls.append(ctx.replicate)
        sampled = _mean_test(ctx)
        exact = Finding("m_is_rational", False, {}, {"m": "1"})
        return combine([exact, Finding("mean_vs_monte_carlo", sampled.status == "pass",
                                       sampled=True)])

    v = check_claim(_claim(both, "1"), tiers=("numeric",), budget="quick", device="cpu")
    assert v.verdict == "refuted" and calls == [0]
    assert not v.tiers["numeric"].sampled


def test_the_first_sample_is_the_seeded_one_and_a_replicate_is_another():
    ctx = Context("demo2026.lemma2", {}, {}, BUDGETS["quick"], seed=3)
    again = Context("demo2026.lemma2", {}, {}, BUDGETS["quick"], seed=3, replicate=1)
    assert ctx.mc_seed("a", 2) == ctx.seed_for("a", 2)
    assert np.array_equal(ctx.mc_rng("a").random(4), ctx.rng("a").random(4))
    assert again.mc_seed("a", 2) != ctx.mc_seed("a", 2)
    assert not np.array_equal(again.mc_rng("a").random(4), ctx.mc_rng("a").random(4))


def test_a_self_check_that_fails_is_undecided_not_a_counterexample():
    """The engine's derivation against the real model reads no formula: a disagreement says the
    engine (or its sample) is wrong, not the statement."""
    f = Finding("derived_vs_model", False, {"z": 9.0}, {"z": 9.0}, "outside the interval",
                sampled=True, self_check=True)
    assert f.ok is None and f.counterexample is None
    assert "derivation and the real model disagree" in f.reason
    assert combine([f, Finding("formula", True)]).status == "error"
