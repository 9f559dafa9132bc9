"""ahn2023: K. Ahn, X. Cheng, H. Daneshmand, S. Sra, "Transformers learn to implement
preconditioned gradient descent for in-context learning" (2023).

Linear self-attention Z_{l+1} = Z_l + (1/n) P_l Z_l M (Z_l^T Q_l Z_l) (eqs. (3)-(4)) on the prompt
of eq. (1), trained on the in-context loss (5) whose prediction is -[Z_k]_{(d+1),(n+1)}.

Claims here: Theorem 1 (the global optimum of one layer, eq. (8), its rescalings and the
isotropic special case), checked by the kit's one-layer global-optimum check; Lemma 2 is in
``gd_layers``.
"""
from __future__ import annotations

import sympy

from verify.claim import Claim
from verify.formulas import FormulaSymbol, NamedFormula

from ..kit.layer_optimum import LayerOptimum, SpecialCase, layer_optimum
from ..kit.linear_icl import LinearICLSetting

PAPER = "ahn2023"
d_sym = sympy.Symbol("d", positive=True, integer=True)

# ==============================================================================================
# Theorem 1: the global optimum of a single layer
# ==============================================================================================
THM1_SETTING = LinearICLSetting(
    w_prior="identity",
    sizes={"quick": {"n": 6, "d": 3}, "default": {"n": 20, "d": 5}, "paper": {"n": 20, "d": 5}},
)

_N = FormulaSymbol("n")
_D = FormulaSymbol("d")
_U = FormulaSymbol("U", "matrix", ("d", "d"))
_LAM = FormulaSymbol("Lambda", "matrix", ("d", "d"),
                     symmetric=True)  # diagonal, so Lambda^T = Lambda is the same statement
_GAMMA = FormulaSymbol("gamma")

THM1_FORMULAS = (
    NamedFormula(
        "A_top", "-U*Inverse((n+1)/n*Lambda + trace(Lambda)/n*Identity(d))*U.T",
        (_N, _D, _U, _LAM), equation="(8)",
        description="first d rows of the optimal A: -U diag({1/((n+1)/n lambda_i + "
                    "(sum_k lambda_k)/n)}) U^T, written with Lambda = diag(lambda)",
        shape=("d", "d")),
    NamedFormula("A_bottom", "ZeroMatrix(1, d)", (_D,), equation="(8)",
                 description="last row of the optimal A", shape=("1", "d")),
    NamedFormula("b_x", "ZeroMatrix(d, 1)", (_D,), equation="(8)",
                 description="first d entries of the optimal b (b^T = [0 ... 0 1])",
                 shape=("d", "1")),
    NamedFormula("b_y", "1", (), equation="(8)", description="last entry of the optimal b"),
    NamedFormula("A_scale", "1/gamma", (_GAMMA,), equation="Thm. 1",
                 description="the factor on A that keeps the optimum when b is scaled by gamma"),
    NamedFormula("A_iso", "-1/((n-1)/n + (d+2)/n)", (_N, _D), equation="Thm. 1, Sigma = I",
                 description="the isotropic optimum is A_iso * [I_d; 0]"),
)


def thm1_point(v):
    """(b, A) of eq. (8): b = [b_x; b_y], A = [A_top; A_bottom]."""
    return v.column(v("b_x"), v("b_y")), v.column(v("A_top"), v("A_bottom"))


def isotropic_point(v):
    """Sigma = I: b = [0; 1], A = A_iso [I_d; 0]."""
    return v.column(sympy.zeros(v.d, 1), 1), v.column(v("A_iso") * sympy.eye(v.d),
                                                     sympy.zeros(1, v.d))


THM1_CHECK = LayerOptimum(thm1_point, THM1_SETTING, what="eq. (8)", rescaling="A_scale",
                          special_cases=(SpecialCase("isotropic", isotropic_point),),
                          refs={"forward": "eqs. (3)-(4)", "reduction": "App. A.1",
                                "loss": "eq. (6)"})

THM1 = Claim(
    id="ahn2023.thm1",
    title="Global optimum of one linear attention layer (non-isotropic prompts)",
    paper=PAPER,
    statement=(r"For $x^{(i)}\sim\mathcal N(0,\Sigma)$, $\Sigma=U\Lambda U^\top$, "
               r"$w_\star\sim\mathcal N(0,I_d)$ and the parametrisation (7), "
               r"$b^\top=[0\,\cdots\,0\;1]$, "
               r"$A=-\begin{bmatrix}U\,\mathrm{diag}\big(\{\frac{1}{\frac{n+1}{n}\lambda_i+"
               r"\frac1n\sum_k\lambda_k}\}_i\big)U^\top\\ 0\end{bmatrix}$ is a global minimum of "
               r"$f(b,A)$, and so is its rescaling $b\leftarrow\gamma b$, $A\leftarrow\gamma^{-1}A$; "
               r"for $\Sigma=I$, $A=-\frac{1}{\frac{n-1}{n}+\frac{d+2}{n}}[I_d;0]$."),
    assumptions=("x^(i) ~ N(0, Sigma) i.i.d., Sigma = U Lambda U^T positive definite",
                 "w* ~ N(0, I_d), y^(i) = <w*, x^(i)>, no label noise",
                 "one layer, P = [0; b^T], Q = [A 0] (eq. (7)); prediction -[Z_1]_{d+1,n+1}"),
    formulas=THM1_FORMULAS,
    checks=layer_optimum(THM1_CHECK),
    setting=THM1_SETTING,
)


CLAIMS = [THM1]
