"""A researcher's own claim of the one-layer global-optimum family, written with the kit in the
lines below ``--- the claim ---``: at the optimum of Ahn et al. (2023) Thm 1, the in-context risk
is tr(Sigma) - tr(Sigma^2 Gamma) with Gamma = ((n+1)/n Sigma + tr(Sigma)/n I)^{-1}.

The closed form was derived by hand, not by the engine: the prediction error is
x_q^T (Gamma S - I) w with S = X X^T / n, and the Wishart moment E[S B S] =
(n+1)/n Sigma B Sigma + tr(B Sigma)/n Sigma gives E[e^2] = tr Sigma - 2 tr(Sigma Gamma Sigma) +
tr(Sigma Gamma Sigma) (Gamma commutes with Sigma); at Sigma = I it is d(d+1)/(n+d+1)."""
import pytest
import sympy

from proofs_checks.kit.layer_optimum import LayerOptimum, layer_optimum
from proofs_checks.kit.linear_icl import LinearICLSetting
from verify.claim import Claim
from verify.formulas import FormulaSymbol, NamedFormula
from verify.runner import check_claim

# --- the claim ---
n, d = FormulaSymbol("n"), FormulaSymbol("d")
Lam = FormulaSymbol("Lambda", "matrix", ("d", "d"), symmetric=True)
U = FormulaSymbol("U", "matrix", ("d", "d"))
GAMMA = "Inverse((n+1)/n*Lambda + trace(Lambda)/n*Identity(d))"
FORMULAS = (
    NamedFormula("A_top", f"-U*{GAMMA}*U.T", (n, d, U, Lam), equation="(8)", shape=("d", "d")),
    NamedFormula("risk", f"trace(Lambda) - trace(Lambda*Lambda*{GAMMA})", (n, d, Lam),
                 equation="(R)"),
)


def point(v):
    """b = [0; 1], A = [A_top; 0]."""
    return v.column(sympy.zeros(v.d, 1), 1), v.column(v("A_top"), sympy.zeros(1, v.d))


SETTING = LinearICLSetting("identity", {b: {"n": 6, "d": 3} for b in ("quick", "default",
                                                                        "paper")})
RISK = Claim(
    id="mydraft2026.thm1", title="The in-context risk at the one-layer optimum",
    paper="mydraft2026",
    statement=r"At $A_{\mathrm{top}} = -\Gamma$, the risk is "
              r"$\mathrm{tr}\,\Sigma - \mathrm{tr}(\Sigma^2\Gamma)$.",
    assumptions=("x ~ N(0, Sigma), w* ~ N(0, I), one LSA layer (Ahn et al. eq. (7))",),
    formulas=FORMULAS, setting=SETTING,
    checks=layer_optimum(LayerOptimum(point, SETTING, what="the stated optimum", risk="risk")))
# --- end of the claim ---


def _verdict(tiers, **overrides):
    return check_claim(RISK, tiers=tiers, overrides=overrides, budget="quick", seed=0)


def test_the_claim_is_verified_by_the_exact_and_float_tiers():
    v = _verdict(("symbolic", "numeric"))
    assert v.verdict == "verified", v.reason
    assert v.tiers["symbolic"].evidence["risk_at_optimum"]["ok"] is True
    assert v.tiers["numeric"].evidence["risk_float64"]["ok"] is True


@pytest.mark.parametrize("tier", ["symbolic", "numeric"])
def test_a_wrong_risk_is_refuted(tier):
    # the isotropic value d(d+1)/(n+d+1) with n + d + 1 -> n + d: wrong for every Sigma
    wrong = "trace(Lambda) - trace(Lambda*Lambda*Inverse(Lambda + trace(Lambda)/n*Identity(d)))"
    v = _verdict((tier,), risk=wrong)
    assert v.verdict == "refuted"
    assert v.counterexample["check"] in ("risk_at_optimum", "risk_float64")


def test_a_point_that_is_not_the_optimum_is_refuted_with_its_risk():
    v = _verdict(("symbolic",), A_top="-U*Inverse(Lambda + trace(Lambda)/n*Identity(d))*U.T")
    assert v.verdict == "refuted"
    assert v.counterexample["check"] in ("derived_optimum", "global_optimality")



def test_an_instance_the_engine_cannot_build_is_a_crash_never_a_refutation():
    """Only the formulas' failures are the point's: a broken instance (here one with no
    spectrum) raises out of ``exact_point`` as itself, which the runner reports as an error."""
    import numpy as np

    from proofs_checks.kit.layer_optimum import exact_point
    from proofs_checks.kit.linear_icl import make_instance
    from proofs_checks.kit.pointwise import Unevaluable

    inst = make_instance(6, 2, None, np.random.default_rng(0))
    broken = type(inst)(inst.n, inst.d, inst.sigma_exact, inst.U_exact, None, inst.spec)
    F = {f.name: f.parse() for f in FORMULAS}
    exact_point(point, F, inst, 6)
    with pytest.raises(TypeError):
        exact_point(point, F, broken, 6)
    with pytest.raises(Unevaluable):
        exact_point(lambda v: point(v)[::-1], F, inst, 6)


def test_a_sigma_matrix_gets_its_spectrum_to_forty_digits():
    import numpy as np

    from proofs_checks.kit.linear_icl import make_instance
    from verify.sigma import parse_sigma

    inst = make_instance(6, 3, parse_sigma("[[3,1,0],[1,3,1/3],[0,1/3,1]]"),
                         np.random.default_rng(0))
    U, eigs = inst.spectral()
    residual = U * sympy.diag(*eigs) * U.T - inst.sigma_exact
    assert max(abs(x) for x in residual) < 1e-35
    assert max(abs(x) for x in U.T * U - sympy.eye(3)) < 1e-35
