"""App. B.3, line 879: the C(C-1) terms i != k of E[w^T (sum_i x_i x_i[j]) (sum_k x_k x_k^T) w].

Line 879 writes their contribution twice, "C(C-1) w[j] w = C(C-1) e_j". The first member is the
moment kernel's C(C-1) E[x_1 x_1^T w w^T x_2 x_2^T] e_j = C(C-1) w_j w (``b3_case_sum.derived``);
the second holds only where w_j w = e_j, i.e. w = +-e_j. Both members are compared exactly with
the derived term at rational w (d = 2, 3; j = 1 and j = d; C symbolic), and in float64 at
Gaussian w, with the kit's pointwise check."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy

from verify.claim import Claim, Correction
from verify.evidence import step
from verify.formulas import NamedFormula, formula_value

from ..kit.pointwise import Pointwise, Unevaluable, pointwise_checks, pointwise_truth
from .b3_case_sum import DV, PAPER, _C, _D, _E, _W, _WJ, _values, derived
from .setting import SETTING

FORMULAS = (
    NamedFormula("cross_term", "C*(C - 1)*w_j*w", (_D, _C, _W, _WJ, _E),
                 "line 879's first member: the C(C-1) terms i != k", "App. B.3, line 879", DV),
    NamedFormula("cross_value", "C*(C - 1)*e", (_D, _C, _W, _WJ, _E),
                 "line 879's second member, C(C-1) e_j", "App. B.3, line 879", DV),
)


@dataclass(frozen=True)
class _Point:
    d: int
    j: int
    w: object
    C: object
    label: str
    exact: bool = True

    def describe(self) -> dict:
        return {"d": self.d, "j": self.j + 1, "w": str(list(self.w)), "C": str(self.C)}


def _sides(p: _Point, F) -> list:
    vals = _values(p.d, p.j, p.w, p.C)
    cross = derived()["cross"].evaluate({"w": vals["w"], "e": vals["e"]}, {"d": p.d}, exact=True)
    term = sympy.Matrix(cross) * p.C * (p.C - 1)
    value = (lambda m: m) if p.exact else (  # a float point compares float64 numbers
        lambda m: np.asarray(sympy.Matrix(m).evalf(), dtype=float))
    out = []
    for name in ("cross_term", "cross_value"):
        try:
            named = formula_value(F[name], vals)
        except Exception as exc:  # noqa: BLE001 - an ill-typed member has no value
            raise Unevaluable(f"{name}: {type(exc).__name__}: {exc}") from exc
        out.append((name, value(named), value(term)))
    return out


def _points(ctx, F, rng_tag: str = "b3-cross", exact: bool = True) -> list:
    rng = ctx.rng(rng_tag)
    C = sympy.Symbol("C", positive=True, integer=True) if exact else 6
    out = []
    for d, j in ((2, 0), (2, 1), (3, 0), (3, 2)):
        w = sympy.Matrix([sympy.Rational(int(rng.integers(-5, 6)), int(rng.integers(1, 4)))
                          if exact else sympy.Float(rng.standard_normal()) for _ in range(d)])
        out.append(_Point(d, j, w, C, f"d={d}, j={j + 1}", exact))
    return out


SPEC = Pointwise(
    sides=_sides, points=lambda ctx, F: _points(ctx, F),
    float_points=lambda ctx, F: _points(ctx, F, "b3-cross-float", exact=False),
    what="line 879's two members against the derived i != k contribution C(C-1) w_j w",
    steps=(step("The i != k terms", r"C(C-1)\,\mathbb E[x_1x_1^\top ww^\top x_2x_2^\top]e_j"
                r" = C(C-1)\,w_jw", "Isserlis over x_1, x_2 (moment kernel)."),
           step("Line 879", r"C(C-1)\,w[j]\,w = C(C-1)\,e_j",
                "Each member compared exactly at rational w, C symbolic.")))

B3_CROSS_CASE = Claim(
    id="xie2025.eq_b3_cross_case",
    title="Thm. 4's proof (App. B.3, line 879): the i ≠ k terms contribute C(C-1) w[j] w = "
          "C(C-1) e_j",
    paper=PAPER,
    statement=(r"For fixed $w$ and $x_1,\dots,x_C\sim\mathcal N(0,I_d)$ independent, the "
               r"$C(C-1)$ terms $i\ne k$ contribute $C(C-1)\,w[j]\,w = C(C-1)\,e_j$."),
    assumptions=("x_1, ..., x_C ~ N(0, I_d) independent; w fixed, w_j = w[j], e_j the j-th "
                 "basis vector",),
    formulas=FORMULAS,
    checks=pointwise_checks(SPEC),
    setting=SETTING,
    exact=pointwise_truth(SPEC, FORMULAS, lambda ctx, F: _points(ctx, F, "b3-cross-more"),
                          base={"cross_value": "C*(C - 1)*w_j*w"}),
    correction=Correction(
        description="the second member is the first: C(C-1) w_j w, not C(C-1) e_j",
        reason="w_j w = e_j only for w = +-e_j; line 875 derives w[j] w per term",
        formulas={"cross_value": "C*(C - 1)*w_j*w"}),
)
