"""The kit's pointwise check on a toy identity outside any paper: (A B)^T = B^T A^T, exact at
rational points and in float64 at Gaussian ones; a wrong right side fails both tiers, and an
ill-typed one is a failure, not a crash."""
from dataclasses import dataclass

import numpy as np
import sympy

from proofs_checks.kit.pointwise import Pointwise, Unevaluable, pointwise_checks
from verify.claim import BUDGETS, Context


@dataclass(frozen=True)
class _Point:
    A: object
    B: object
    label: str

    def describe(self) -> dict:
        return {"point": self.label}


def _sides(rhs):
    def sides(p, F):
        try:
            right = rhs(p.A, p.B)
        except (ValueError, sympy.ShapeError) as exc:
            raise Unevaluable(str(exc)) from exc
        return [("transpose_of_product", (p.A @ p.B).T, right)]
    return sides


def _spec(rhs) -> Pointwise:
    rng = np.random.default_rng(0)
    exact = [_Point(sympy.Matrix(2, 3, lambda i, j: sympy.Rational(int(rng.integers(-4, 5)), 3)),
                    sympy.Matrix(3, 2, lambda i, j: sympy.Rational(int(rng.integers(-4, 5)), 2)),
                    f"exact {k}") for k in range(3)]
    floats = [_Point(rng.standard_normal((2, 3)), rng.standard_normal((3, 2)), f"float {k}")
              for k in range(3)]
    return Pointwise(sides=_sides(rhs), points=lambda ctx, F: exact,
                     float_points=lambda ctx, F: floats, what="(A B)^T = B^T A^T")


def _run(rhs):
    ctx = Context(claim_id="kit0000.lemma1", formulas={}, formula_texts={},
                  budget=BUDGETS["quick"], seed=0)
    checks = pointwise_checks(_spec(rhs))
    return {tier: check(ctx) for tier, check in checks.items()}


def test_a_true_identity_passes_both_tiers():
    out = _run(lambda A, B: B.T @ A.T)
    assert [r.status for r in out.values()] == ["pass", "pass"]


def test_a_wrong_side_fails_both_tiers():
    out = _run(lambda A, B: A.T @ B.T)  # 3x3 against 2x2: a shape mismatch is a failure too
    assert [r.status for r in out.values()] == ["fail", "fail"]
    out = _run(lambda A, B: 2 * (B.T @ A.T))
    assert [r.status for r in out.values()] == ["fail", "fail"]


def test_an_unevaluable_side_is_a_failure_not_a_crash():
    def bad(A, B):
        raise ValueError("cannot add shapes (2,2) and (3,3)")
    out = _run(bad)
    assert all(r.status == "fail" for r in out.values())
    assert "ill-typed" in out["symbolic"].reason
