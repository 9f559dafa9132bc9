"""The global optimum: Theorem 3.2 and its restatement A.8, on the kit's scalar optimum of the
looped model (``kit.scalar_optimum``): A^opt = a*(n, d, L) Sigma*^{-1}, u^opt = 0, and the
statement's bounds at a* and f(a*)."""
from __future__ import annotations

import sympy

from verify.claim import Claim
from verify.formulas import NamedFormula
from verify.vacuity import Vacuity

from ..kit.scalar_optimum import ScalarOptimum, optimum_values, scalar_optimum
# figures.py trains on the exact loss with the kit's trainer, imported from here
from .common import _D, _DELTA, _L, _N, PAPER, _setting, sec35_delta, single_threaded

OPT_SETTING = _setting({"n": 20, "d": 3, "L": 2}, {"n": 20, "d": 5, "L": 2},
                       {"n": 20, "d": 10, "L": 3}, fixed_sigma="")  # Thm 3.2's numeric tier takes it
_OPT_SYMBOLS = (_N, _D, _L, _DELTA)
# what mutate compares a mutant with: the named quantity at the optimum, f(a*) or |a* - 1|
OPT_VALUES = {"loss_bound": "f", "spectral_bound": "gap", "c": "gap"}

THM32_FORMULAS = (
    NamedFormula("hypothesis", "8*L*d**2/sqrt(n) <= 1/2**(2*L)", _OPT_SYMBOLS,
                 equation="Thm. 3.2", description="the condition on n", weaker="narrower"),
    sec35_delta(),
    NamedFormula("loss_bound", "8*L*d**2*2**(2*L)/sqrt(n)", _OPT_SYMBOLS, equation="Thm. 3.2 (1)",
                 description="upper bound on L(A^opt, u^opt)", weaker="larger"),
    NamedFormula("c", "8*delta*d**(1/(2*L))", _OPT_SYMBOLS, equation="Thm. 3.2 (2)",
                 description="(1 - c) Sigma*^{-1} <= A^opt <= (1 + c) Sigma*^{-1}", weaker="larger"),
    NamedFormula("u_opt", "ZeroMatrix(d, 1)", (_D,), equation="Thm. 3.2 (2)", shape=("d", "1"),
                 description="u^opt"),
)

# (1) f(a*) <= the loss bound; (2) (1 - c) Sigma*^{-1} <= a* Sigma*^{-1} <= (1 + c) Sigma*^{-1}
THM32_BOUNDS = (("loss_bound", lambda v: (v.f, v("loss_bound"))),
                ("A_opt_upper", lambda v: (v.a, 1 + v("c"))),
                ("A_opt_lower", lambda v: (1 - v("c"), v.a)))
THM32_SPEC = ScalarOptimum(THM32_BOUNDS, OPT_SETTING, trace_form=True, tag="thm32",
                           exact=OPT_VALUES)
THM32_CHECKS = scalar_optimum(THM32_SPEC)

# (2)'s lower bound (1 - c) Sigma*^{-1} is positive definite, so says something, only for c < 1
LOWER_BOUND_SAYS_SOMETHING = Vacuity(
    "c < 1", "the lower bound (1 - c) Sigma*^{-1} of (2) is positive definite", vary="n",
    fixed={"L": (1, 2), "d": (1, 5)})

THM3_2 = Claim(
    id="gatmiry2024.thm3_2",
    title="Characterisation of the global minimiser of the looped transformer's loss",
    paper=PAPER,
    statement=r"If $\frac{8Ld^2}{\sqrt n}\le\frac1{2^{2L}}$ then (1) $L(A^{opt},u^{opt})\le\frac{8Ld^2"
              r"2^{2L}}{\sqrt n}$ and (2) $(1-c)\Sigma^{*-1}\preccurlyeq A^{opt}\preccurlyeq(1+c)"
              r"\Sigma^{*-1}$, $c=8\delta d^{1/(2L)}$, $u^{opt}=0$, $\delta=(\frac{8Ld}{\sqrt n})^{"
              r"1/(2L)}$.",
    assumptions=("x_i, x_q ~ N(0, Sigma*), w* ~ N(0, Sigma*^{-1})",
                 "P = [[0, 0], [u^T, 1]], Q = [[A, 0], [0, 0]] shared by the L loops (Sec. 3.5)"),
    formulas=THM32_FORMULAS,
    checks={"symbolic": THM32_CHECKS["symbolic"],
            "numeric": single_threaded(THM32_CHECKS["numeric"]),
            "train": single_threaded(THM32_CHECKS["train"])},
    setting=OPT_SETTING,
    exact=optimum_values(THM32_SPEC),
    vacuity=LOWER_BOUND_SAYS_SOMETHING,
    notes="The optimum is exactly A^opt = a*(n, d, L) Sigma*^{-1}, u^opt = 0, with a* the unique "
          "minimiser of f(a) = E tr (I - a W/n)^{2L}; the bounds hold with a wide margin at "
          "every size checked (and also below the hypothesis).",
)

THM_A8_FORMULAS = (
    NamedFormula("hypothesis", "delta*d**(1/(2*L)) < 1/2", _OPT_SYMBOLS, equation="Thm. A.8",
                 description="the condition on n through delta", weaker="narrower"),
    sec35_delta(),
    NamedFormula("loss_bound", "d*(2*delta)**(2*L)", _OPT_SYMBOLS, equation="Thm. A.8 (1)",
                 description="upper bound on L(A^opt, d^opt)", weaker="larger"),
    NamedFormula("spectral_bound", "4*delta*d**(1/(2*L))", _OPT_SYMBOLS, equation="(22)",
                 description="bound on ||A^{opt 1/2} Sigma* A^{opt 1/2} - I||", weaker="larger"),
    NamedFormula("c", "8*delta*d**(1/(2*L))", _OPT_SYMBOLS, equation="(23)",
                 description="(1 - c) Sigma*^{-1} <= A^opt <= (1 + c) Sigma*^{-1}", weaker="larger"),
    NamedFormula("u_opt", "ZeroMatrix(d, 1)", (_D,), equation="(22)", shape=("d", "1"),
                 description="d^opt (= u^opt)"),
)

# (22): ||A^{opt 1/2} Sigma* A^{opt 1/2} - I|| = |a* - 1|
THM_A8_SPEC = ScalarOptimum(THM32_BOUNDS + (("spectral_bound", lambda v: (
    sympy.Abs(v.a - 1), v("spectral_bound"))),), OPT_SETTING, exact=OPT_VALUES)


THM_A8 = Claim(
    id="gatmiry2024.thm_a8",
    title="Restatement of Theorem 3.2 with δ (optimal loss and spectral closeness)",
    paper=PAPER,
    statement=r"If $\delta d^{1/(2L)}<\frac12$: (1) $L(A^{opt},d^{opt})\le d(2\delta)^{2L}$; (2) "
              r"$\|A^{opt\,1/2}\Sigma^*A^{opt\,1/2}-I\|\le4\delta d^{1/(2L)}$, $d^{opt}=0$; (3) "
              r"$(1-8\delta d^{1/(2L)})\Sigma^{*-1}\preccurlyeq A^{opt}\preccurlyeq(1+8\delta "
              r"d^{1/(2L)})\Sigma^{*-1}$.",
    assumptions=THM3_2.assumptions + ("delta = (8 L d / sqrt(n))^{1/(2L)}",),
    formulas=THM_A8_FORMULAS,
    checks={"symbolic": scalar_optimum(THM_A8_SPEC)["symbolic"]},
    setting=OPT_SETTING,
    exact=optimum_values(THM_A8_SPEC),
    vacuity=LOWER_BOUND_SAYS_SOMETHING,
)

