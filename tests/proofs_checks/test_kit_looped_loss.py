"""A researcher's own claims of the closed-form looped loss family, written with the kit in the
lines below ``--- the claims ---``: the looped linear transformer's loss at u = 0 is
E_X tr(Sigma*^{-1} M Sigma* M^T) with M = (I - Sigma A)^L, and the two-layer loss with its u-part.

Derived by hand, not by the engine: the error at u = 0 is -w*^T M x_q; E over w* ~ N(0, Sigma*^{-1})
and x_q ~ N(0, Sigma*) of (w*^T M x_q)^2 is tr(M^T Sigma*^{-1} M Sigma*).  The trace form
tr (I - A^{1/2} Sigma A^{1/2})^{2L} equals it only when A is a multiple of Sigma*^{-1}."""
import math

import pytest
import sympy

from moments.montecarlo import Estimate
from proofs_checks.kit import looped_icl as li
from proofs_checks.kit.linear_icl import LinearICLSetting
from proofs_checks.kit.looped_loss import (ClosedFormLoss, L_SYM, closed_form_loss,
                                           compare_with_derived, derived_loss_at_u0,
                                           derived_u_part, divergence_at_d1, mc_agrees)
from verify.claim import Claim
from verify.formulas import FormulaSymbol, NamedFormula
from verify.runner import check_claim

# --- the claims ---
n, d, L = FormulaSymbol("n"), FormulaSymbol("d"), FormulaSymbol("L")
MATS = tuple(FormulaSymbol(x, "matrix", ("d", "d"), symmetric=True)
             for x in ("A", "A_half", "Sigma", "Sigma_star", "Sigma_star_inv", "Sigma_star_half",
                       "Sigma_star_half_inv", "A0", "A1"))
VECS = tuple(FormulaSymbol(x, "matrix", ("d", "1")) for x in ("u0", "u1"))
SETTING = LinearICLSetting("sigma_inverse", {b: {"n": 10, "d": 3, "L": 2}
                                             for b in ("quick", "default", "paper")})
M = "(Identity(d) - Sigma*A)**L"
LOOPED = Claim(id="mydraft2026.lemma1", title="The looped loss at u = 0", paper="mydraft2026",
               statement=r"$L(A,0)=\mathbb E_X\operatorname{tr}(\Sigma_*^{-1}M\Sigma_*M^\top)$.",
               assumptions=("the looped model of gatmiry2024 Sec. 3.5, u = 0",),
               formulas=(NamedFormula("loss", f"trace(Sigma_star_inv*{M}*Sigma_star*({M}).T)",
                                      (n, d, L, *MATS), equation="(1)", exponents=("L",)),),
               setting=SETTING, checks=closed_form_loss(ClosedFormLoss(
                   ("loss",), SETTING, with_u=False, monte_carlo=True)))
M2 = "(Identity(d) - Sigma*A0)*(Identity(d) - Sigma*A1)"
V = "(u0.T*Sigma*A0*(Identity(d) - Sigma*A1) + u1.T*Sigma*A1)"
TWO = Claim(id="mydraft2026.lemma2", title="The two-layer loss", paper="mydraft2026",
            statement=r"$L=\mathbb E_X\operatorname{tr}(\Sigma_*^{-1}M\Sigma_*M^\top)+"
                      r"\mathbb E_X v\Sigma_*v^\top$.",
            assumptions=("two layers (A_i, u_i), eq. (11) of gatmiry2024",),
            formulas=(NamedFormula("w_part", f"trace(Sigma_star_inv*{M2}*Sigma_star*({M2}).T)",
                                   (n, d, *MATS, *VECS), equation="(2)"),
                      NamedFormula("u_part", f"{V}*Sigma_star*({V}).T", (n, d, *MATS, *VECS),
                                   equation="(2)", shape=("1", "1"))),
            setting=SETTING, checks=closed_form_loss(ClosedFormLoss(
                ("w_part", "u_part"), SETTING, layers=2)))
# --- end of the claims ---

TRACE_FORM = "trace((Identity(d) - A_half*Sigma*A_half)**(2*L))"


def _verdict(claim, tiers=("symbolic",), **overrides):
    return check_claim(claim, tiers=tiers, overrides=overrides, budget="quick", seed=0)


def test_the_toy_looped_loss_is_verified_exactly_and_by_monte_carlo():
    v = _verdict(LOOPED, tiers=("symbolic", "numeric"))
    assert v.verdict == "verified", v.reason
    ev = v.tiers["symbolic"].evidence
    assert ev["loss_L1"]["ok"] is True and ev["loss_L2"]["ok"] is True
    assert v.tiers["numeric"].evidence["formula_vs_monte_carlo"]["ok"] is True


def test_the_trace_form_is_refuted_by_the_kit():
    """A deliberately wrong formula: the trace form is the loss only for A = c Sigma*^{-1}."""
    v = _verdict(LOOPED, loss=TRACE_FORM)
    assert v.verdict in ("refuted", "corrected") and v.verdict != "verified", v.reason
    ev = v.tiers["symbolic"].evidence
    assert ev["loss_L1"]["ok"] is False
    aligned = [r for r in ev["loss_L1"]["instances"] if r["instance"].startswith("A = ")]
    assert aligned and aligned[0]["agree"] is True   # exact where A is a multiple of Sigma*^-1


def test_a_formula_with_a_pole_is_refuted_by_its_infinite_expectation():
    v = _verdict(LOOPED, loss="trace((Identity(d) - Sigma*A)**(-1))")
    assert v.verdict != "verified"
    assert v.tiers["symbolic"].evidence["finite_expectation"]["ok"] is False


def test_the_toy_two_layer_loss_is_verified_and_a_dropped_u_part_refuted():
    assert _verdict(TWO).verdict == "verified"
    v = _verdict(TWO, u_part=f"{V}*Sigma*({V}).T")   # the empirical Sigma for Sigma*
    assert v.tiers["symbolic"].evidence["two_layer_loss"]["ok"] is False


def test_the_derivation_text_agrees_with_the_kit():
    """derive's texts (the loss the forward pass gives) pass the kit's own check."""
    assert _verdict(LOOPED, loss=derived_loss_at_u0(None)).verdict == "verified"
    assert _verdict(TWO, w_part=derived_loss_at_u0(2),
                    u_part=derived_u_part(2)).verdict == "verified"


def test_divergence_at_d1_finds_the_pole_at_4():
    expr = LOOPED.formula("loss").parse("trace((Identity(d) - Sigma*A)**(-2))")
    div = divergence_at_d1(expr)
    assert div["pole"] == "4" and div["order"] == 2
    assert divergence_at_d1(LOOPED.formula("loss").parse(TRACE_FORM).subs(L_SYM, 2)) is None


def test_an_instance_that_cannot_be_evaluated_is_undecided_not_a_pass():
    def at(d):
        raise ValueError("a negative power at this d")

    inst = li.RootInstance(sympy.ImmutableMatrix(sympy.eye(2)), sympy.ImmutableMatrix(
        sympy.eye(2)), sympy.ImmutableMatrix([1, 0]), "identity")
    ok, rows, ce = compare_with_derived(at, li.derived_loss(1, with_u=False), [inst], "loss")
    assert ok is None and ce is None and rows[0]["agree"] is None


@pytest.mark.parametrize("value, mean, se", [(math.nan, 1.0, 0.1), (math.inf, 1.0, 0.1),
                                             (1.0, math.nan, 0.1), (1.0, 1.0, math.inf)])
def test_a_non_finite_monte_carlo_comparison_decides_nothing(value, mean, se):
    assert mc_agrees(Estimate(mean, se, 100), value, 0.999, 2) is None


def test_a_finite_monte_carlo_comparison_decides():
    est = Estimate(1.0, 0.01, 100)
    assert mc_agrees(est, 1.0, 0.999, 2) is True and mc_agrees(est, 2.0, 0.999, 2) is False
