"""The kit's identity in a symbolic size on a toy identity outside any paper:
||A u + v||^2 = u^T A^T A u + 2 v^T A u + v^T v for A (m x n), u (n), v (m), every m and n.

Proved for every size through the moment kernel's letters; a wrong formula (the 2 dropped) is
refuted there with a rational counterexample; a formula without a kernel form (a ones block)
falls back to exact points at concrete sizes; non-finite floats decide nothing."""
from dataclasses import dataclass, replace

import numpy as np
import sympy

from proofs_checks.kit.evaluate import torch_value
from proofs_checks.kit.matrices import to_mat
from proofs_checks.kit.pointwise import Pointwise, Unevaluable
from proofs_checks.kit.size_identity import SizeIdentity, size_identity
from verify.claim import BUDGETS, Context
from moments.tensor import matrix, vector
from verify.formulas import FormulaSymbol, NamedFormula, formula_value

SYMBOLS = {"A": ("m", "n"), "u": ("n", "1"), "v": ("m", "1")}
TRUE = "u.T*A.T*A*u + 2*v.T*A*u + v.T*v"
RHS = NamedFormula("rhs", TRUE, (FormulaSymbol("m"), FormulaSymbol("n"), *(
    FormulaSymbol(k, "matrix", shape) for k, shape in SYMBOLS.items())), shape=("1", "1"))


@dataclass(frozen=True)
class _Point:
    values: dict
    exact: bool
    label: str

    def describe(self) -> dict:
        return {"point": self.label}


def _letters(F):
    A, u, v = matrix("A", "m", "n"), vector("u", "n"), vector("v", "m")
    return [("norm_expansion", (A @ u + v).T @ (A @ u + v), to_mat(F["rhs"]))]


def _sides(p, F):
    A, u, v = (p.values[k] for k in SYMBOLS)
    lhs = (A @ u + v).T @ (A @ u + v)
    try:
        sizes = {"m": A.shape[0], "n": A.shape[1]}
        if p.exact:
            rhs = sympy.Matrix(formula_value(F["rhs"], {**p.values, **sizes}))
            rhs = rhs.applyfunc(sympy.expand)
        else:
            rhs = torch_value(F["rhs"], p.values, sizes).numpy()
    except (ValueError, TypeError, sympy.ShapeError, RuntimeError) as exc:
        raise Unevaluable(str(exc)) from exc
    return [("norm_expansion", lhs.applyfunc(sympy.expand) if p.exact else lhs, rhs)]


def _exact_points(ctx, F):
    out = []
    for m, n in ((2, 3), (3, 2)):
        vals = {k: sympy.Matrix(*(m if s == "m" else n if s == "n" else 1 for s in shape),
                                lambda i, j, k=k: sympy.Symbol(f"{k}{i}_{j}"))
                for k, shape in SYMBOLS.items()}
        out.append(_Point(vals, True, f"m = {m}, n = {n}"))
    return out


def _float_points(scale=1.0):
    def points(ctx, F):
        rng = np.random.default_rng(0)
        return [_Point({"A": scale * rng.standard_normal((3, 2)), "u": rng.standard_normal((2, 1)),
                        "v": rng.standard_normal((3, 1))}, False, f"float {k}") for k in range(4)]
    return points


def _spec(float_scale=1.0, letters=_letters) -> SizeIdentity:
    def counterexample(ctx, F, name):
        return {"m": 1, "n": 1, "A": 1, "u": 1, "v": 1, "lhs": 4,
                "rhs": str(formula_value(F["rhs"], {k: sympy.Matrix([[1]]) for k in SYMBOLS}))}
    return SizeIdentity(letters, Pointwise(_sides, _exact_points, _float_points(float_scale),
                                            what="||A u + v||^2"), counterexample)


def _run(text: str, float_scale=1.0, letters=_letters) -> dict:
    ctx = Context(claim_id="kit0000.norm", formulas={"rhs": RHS.parse(text)}, formula_texts={},
                  budget=BUDGETS["quick"], seed=0)
    return {tier: check(ctx) for tier, check in size_identity(_spec(float_scale, letters)).items()}


def test_a_true_identity_is_proved_for_every_size():
    out = _run(TRUE)
    assert [r.status for r in out.values()] == ["pass", "pass"]
    ev = out["symbolic"].evidence
    assert ev["norm_expansion"]["exact_in"] == "every size (symbolic)"
    assert ev["for_every_size"] == ["norm_expansion"]


def test_a_wrong_formula_is_refuted_in_every_tier():
    out = _run("u.T*A.T*A*u + v.T*A*u + v.T*v")
    assert [r.status for r in out.values()] == ["fail", "fail"]
    assert out["symbolic"].counterexample["rhs"] == "Matrix([[3]])"


def test_without_a_kernel_form_the_exact_points_decide():
    ones = "u.T*A.T*A*u + 2*v.T*A*u + v.T*OneMatrix(m, 1)*OneMatrix(1, m)*v"
    out = _run(ones)
    ev = out["symbolic"].evidence
    assert "no_kernel_form" in ev and ev["for_every_size"] == []
    assert out["symbolic"].status == "fail"  # v^T 1 1^T v is not v^T v
    out = _run(TRUE, letters=_no_kernel_form)  # the true formula, decided at m, n = 2, 3 and 3, 2
    assert out["symbolic"].status == "pass"
    assert out["symbolic"].evidence["norm_expansion"]["exact"] is True
    assert out["symbolic"].evidence["norm_expansion"]["points"] == 2


def _no_kernel_form(F):
    raise NotImplementedError("no kernel form")


def test_non_finite_floats_decide_nothing():
    out = _run(TRUE, float_scale=np.inf)
    assert out["numeric"].status != "pass"
    assert out["numeric"].evidence["norm_expansion"]["ok"] is None


def test_the_exact_points_take_the_claims_zero_test_and_explanation():
    """Pointwise's optional ``zero`` (expand: canonical for polynomial sides) and ``explain``
    (more about a failure, in the finding's evidence and counterexample)."""
    spec = _spec(letters=_no_kernel_form)
    seen = []
    pw = replace(spec.at_sizes, zero=lambda e: seen.append(e) or sympy.expand(e),
                 explain=lambda name, p, F, lhs, rhs: {"difference": str(sympy.factor(
                     (lhs - rhs)[0, 0]))})
    spec = replace(spec, at_sizes=pw)
    for text, status in ((TRUE, "pass"), ("u.T*A.T*A*u + v.T*A*u + v.T*v", "fail")):
        ctx = Context(claim_id="kit0000.norm", formulas={"rhs": RHS.parse(text)},
                      formula_texts={}, budget=BUDGETS["quick"], seed=0)
        out = size_identity(spec)["symbolic"](ctx)
        assert out.status == status and seen
    assert out.evidence["norm_expansion"]["difference"] == out.counterexample["difference"]
    assert "A0_0" in out.counterexample["difference"]  # v^T A u, factored
