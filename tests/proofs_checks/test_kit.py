"""The kit's pieces: a formula's torch value agrees with its exact value, the kit's gradient is
the derivative (exact and by autograd), and a forward identity refutes a wrong claimed side in
both tiers and decides nothing on non-finite numbers."""
import numpy as np
import pytest
import sympy
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from proofs_checks.kit import Exact, Floats, ForwardIdentity, forward_identity, torch_value
from verify.claim import BUDGETS, Context
from verify.formulas import FormulaSymbol, NamedFormula, formula_value

SYMS = (FormulaSymbol("d"), FormulaSymbol("N"), FormulaSymbol("eta"),
        FormulaSymbol("A", "matrix", ("d", "d")), FormulaSymbol("X", "matrix", ("d", "N")),
        FormulaSymbol("W", "matrix", ("d", "d")))
TEXTS = ["trace(A*A.T)/N", "trace((W*X - X).T*(W*X - X))/(2*N)", "Inverse(A + 3*Identity(d))",
         "A**3 - 2*A + eta*Identity(d)", "BlockMatrix([[A, ZeroMatrix(d, d)], [W, Identity(d)]])",
         "sqrt(eta)*trace(A)"]


def _parse(text):
    shape = None if text.startswith(("trace", "sqrt")) else (
        ("2*d", "2*d") if text.startswith("Block") else ("d", "d"))
    return NamedFormula("f", text, SYMS, shape=shape).parse()


def _values(rng, d, N):
    r = lambda *s: sympy.Matrix(*s, lambda i, j: sympy.Rational(int(rng.integers(-4, 5)), 3))  # noqa: E731
    return {"A": r(d, d), "X": r(d, N), "W": r(d, d), "eta": sympy.Rational(2, 3)}


@settings(max_examples=12, deadline=None)
@given(st.sampled_from(TEXTS), st.integers(1, 3), st.integers(1, 4), st.integers(0, 10**6))
def test_torch_value_is_the_exact_value(text, d, N, seed):
    rng = np.random.default_rng(seed)
    values = _values(rng, d, N)
    expr = _parse(text)
    try:
        exact = formula_value(expr, {**values, "d": d, "N": N})
    except ZeroDivisionError:
        return
    floats = {k: torch.tensor(np.array(v.tolist(), dtype=float)) if isinstance(v, sympy.MatrixBase)
              else float(v) for k, v in values.items()}
    got = torch_value(expr, floats, {"d": d, "N": N}).numpy()
    want = np.array(sympy.Matrix(exact).tolist() if isinstance(exact, sympy.MatrixBase)
                    else float(exact), dtype=float)
    assert np.allclose(got, want, rtol=1e-10, atol=1e-10), (text, got, want)


def test_a_batch_of_matrices_is_refused_not_multiplied_entrywise():
    """torch_value evaluates one instance: a (batch, d, d) operand of a product or a sum is an
    error, never treated as a scalar factor (that would give wrong numbers silently)."""
    batch = torch.randn(5, 2, 2, dtype=torch.float64)
    for text in ("A*W", "A + W"):
        with pytest.raises(ValueError, match="batch of matrices"):
            torch_value(_parse(text), {"A": batch, "W": torch.eye(2, dtype=torch.float64)},
                        {"d": 2, "N": 1})


def test_the_kits_gradient_is_the_derivative_in_both_number_systems():
    rng = np.random.default_rng(1)
    values = _values(rng, 2, 3)
    formulas = {"L": _parse("trace((W*X - X).T*(W*X - X))/(2*N)")}
    sizes = {"d": 2, "N": 3}
    exact = Exact(dict(values), formulas, sizes).grad("L", "W", values["W"])
    X, W = values["X"], values["W"]
    assert exact == (W * X - X) * X.T / 3      # the textbook gradient, derived independently
    floats = Floats({k: torch.tensor(np.array(v.tolist(), dtype=float))
                     if isinstance(v, sympy.MatrixBase) else float(v) for k, v in values.items()},
                    formulas, sizes)
    g = floats.grad("L", "W", floats["W"])
    assert np.allclose(g.numpy(), np.array(exact.tolist(), dtype=float), atol=1e-12)


def _spec(claimed, scale=1.0):
    return ForwardIdentity(model=lambda a: a["X"] * scale + a["X"], claimed=claimed,
                           inputs={"X": ("d", "N")}, exact_sizes=({"d": 2, "N": 2},),
                           sizes={"quick": {"d": 3, "N": 4}}, prompts={"quick": 8})


def _ctx():
    return Context(claim_id="kit0000.thm1", formulas={}, formula_texts={},
                   budget=BUDGETS["quick"], seed=0)


def test_a_wrong_claimed_side_fails_in_both_tiers_and_a_right_one_passes():
    right = forward_identity(_spec(lambda a: 2 * a["X"]))
    wrong = forward_identity(_spec(lambda a: 3 * a["X"]))
    for tier in ("symbolic", "numeric"):
        assert right[tier](_ctx()).status == "pass"
        r = wrong[tier](_ctx())
        assert r.status == "fail" and r.counterexample, (tier, r.reason)
    ce = wrong["symbolic"](_ctx()).counterexample
    assert ce["difference"] != "0" and "X" in ce["inputs"]   # a rational instance


def test_non_finite_numbers_decide_nothing():
    nan = forward_identity(_spec(lambda a: 2 * a["X"], scale=float("inf")))
    r = nan["numeric"](_ctx())
    assert r.status in ("skipped", "error") and r.status != "pass", r.reason
