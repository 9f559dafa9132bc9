"""Shared by the gatmiry2024 claims: symbols, sizes, exact instances, formulas through the
moment kernel, the torch model and its trainers."""
from __future__ import annotations

from functools import lru_cache, wraps
from typing import Callable, Mapping, Sequence

import sympy
import torch

from moments.poly import Poly
from moments.tensor import gaussian_matrix, matrix, vector
from moments.wick import expectation
from verify.claim import Check, Context, TierResult
from verify.evidence import Finding, combine, step
from verify.formulas import FormulaSymbol, NamedFormula, sum_terms

from ..kit import looped_icl as li
from ..kit.linear_icl import LinearICLSetting
# the looped model's budgets and exact instances live in the kit
from ..kit.looped_icl import (BUDGET_LOOPS, RootInstance, aligned_instance,  # noqa: F401
                              root_instances)
from ..kit.looped_icl import by_budget as _by_budget, exact_text as _q  # noqa: F401
from ..kit.looped_icl import exact_value as _exact_value, loops as _loops, spd as _spd  # noqa: F401


PAPER = "gatmiry2024"
N, D = li.N, li.D
L_SYM = sympy.Symbol("L", positive=True, integer=True)
K_SYM = sympy.Symbol("k", positive=True, integer=True)
a_sym = li.a_sym

_N = FormulaSymbol("n")
_D = FormulaSymbol("d")
_L = FormulaSymbol("L")
_K = FormulaSymbol("k")
_I = FormulaSymbol("i")
_J = FormulaSymbol("j")
_DELTA = FormulaSymbol("delta", positive=True)
_XI = FormulaSymbol("xi", positive=True)
_EPS = FormulaSymbol("epsilon", positive=True)
_ZETA = FormulaSymbol("zeta", positive=True, unit=True)
_LAM_J = FormulaSymbol("lambda_j", positive=True, at_most="lambda_1")
_LAM_1 = FormulaSymbol("lambda_1", positive=True)
_LOSS = FormulaSymbol("loss", positive=True)


def _mat(name: str, shape=("d", "d"), symmetric: bool = False):
    """A matrix symbol; what it is lives in the paper's definitions (``definitions.py``)."""
    return FormulaSymbol(name, "matrix", shape, symmetric=symmetric)


_X = _mat("X", ("d", "n"))
_SIGMA = _mat("Sigma", symmetric=True)
_SIGMA_STAR = _mat("Sigma_star", symmetric=True)
_SIGMA_STAR_HALF = _mat("Sigma_star_half", symmetric=True)
_SIGMA_STAR_HALF_INV = _mat("Sigma_star_half_inv", symmetric=True)
_A = _mat("A", symmetric=True)
_A_HALF = _mat("A_half", symmetric=True)
_U = _mat("u", ("d", "1"))
_W = _mat("w", ("d", "1"))
_XQ = _mat("x_q", ("d", "1"))
_Y = _mat("y", ("n", "1"))

class small_torch:
    """Run torch with one CPU thread inside a check: the tensors here are tiny (d <= 10, n <= 100)
    and several threads only contend (10x slower on a loaded 2-core machine).  Restores the
    previous setting on exit; does nothing on cuda."""

    def __enter__(self):
        self.before = torch.get_num_threads()
        torch.set_num_threads(1)
        return self

    def __exit__(self, *exc):
        torch.set_num_threads(self.before)


def single_threaded(check: Callable[[Context], TierResult]) -> Callable[[Context], TierResult]:
    """A tier check run under ``small_torch``."""
    def run(ctx: Context) -> TierResult:
        with small_torch():
            return check(ctx)

    run.__name__ = check.__name__
    run.__doc__ = check.__doc__
    return run


def sec35_delta(*more: FormulaSymbol) -> NamedFormula:
    """delta := (8 L d / sqrt(n))^{1/(2L)} (Sec. 3.5), the reading of Thms. 3.2-4.5 and Lemma 4.2's
    delta^k, over n, d, L and the claim's further symbols ``more`` (k in the moment lemmas)."""
    return NamedFormula("delta", "(8*L*d/sqrt(n))**(1/(2*L))", (_N, _D, _L, *more),
                        equation="Sec. 3.5", description="delta := (8 L d / sqrt(n))^{1/(2L)}")


# the checks that take no --sigma, and what they use instead (the engine refuses the option)
OWN_SIGMA = ("its checks choose Sigma* themselves (symbolic Sigma* letters, random rational "
             "positive definite instances, or Sigma* = I where the statement is whitened)")


def _setting(quick: Mapping, default: Mapping | None = None, paper: Mapping | None = None,
             fixed_sigma: str = OWN_SIGMA):
    default = default or quick
    return LinearICLSetting(w_prior="sigma_inverse",
                            sizes={"quick": dict(quick), "default": dict(default),
                                   "paper": dict(paper or default)}, fixed_sigma=fixed_sigma)


def _size(ctx: Context, setting, name: str) -> int:
    return int({**setting.sizes[ctx.budget.name], **ctx.sizes}[name])


def formula_letters(layers: int = 0) -> dict:
    """Kernel letters for the formula symbols: X ~ columns N(0, Sigma*), Sigma = X X^T / n."""
    Sig = matrix("Sigma", symmetric=True)
    X = gaussian_matrix("X", "d", "n", row_cov=Sig)
    out = {"X": X, "Sigma": X @ X.T / N, "Sigma_star": Sig,
           "Sigma_star_inv": matrix("Sigma_inv", symmetric=True),
           "Sigma_star_half": matrix("R", symmetric=True),
           "Sigma_star_half_inv": matrix("R_inv", symmetric=True),
           "A": matrix("A", symmetric=True), "A_half": matrix("B", symmetric=True),
           "u": vector("u")}
    for i in range(layers):
        out[f"A{i}"] = matrix(f"A{i}", symmetric=True)
        out[f"u{i}"] = vector(f"u{i}")
    return out


class DivergentExpectation(ArithmeticError):
    """E_X of a formula is not a finite number (``divergence_at_d1``): the identity it is part
    of fails, since the derived loss is a polynomial in the moments, finite everywhere."""

    def __init__(self, evidence: dict) -> None:
        super().__init__(evidence["reason"])
        self.evidence = evidence


# d = 1, Sigma* = 1 (so every Sigma*^{+-1/2} is 1), A = 1/4, u = 1: Sigma = chi^2_n / n = sigma
_D1_VALUES = {"Sigma_star": 1, "Sigma_star_inv": 1, "Sigma_star_half": 1,
              "Sigma_star_half_inv": 1, "A": sympy.Rational(1, 4), "A_half": sympy.Rational(1, 2),
              "u": 1, "A0": sympy.Rational(1, 4), "A1": sympy.Rational(1, 4), "u0": 1, "u1": 1}
_SIGMA_D1 = sympy.Symbol("sigma", positive=True)


def _at_d1(expr: sympy.Basic) -> sympy.Expr:
    """A formula at d = 1 (``_D1_VALUES``, Sigma = sigma) as a scalar expression; every matrix is
    1 x 1, so products commute and a power with a negative exponent is a reciprocal."""
    if isinstance(expr, sympy.Sum):
        return sympy.Add(*[_at_d1(t) for t in sum_terms(expr.function, list(expr.limits))])
    if isinstance(expr, sympy.MatrixSymbol):
        if expr.name == "Sigma":
            return _SIGMA_D1
        if expr.name not in _D1_VALUES:
            raise KeyError(expr.name)
        return sympy.sympify(_D1_VALUES[expr.name])
    if isinstance(expr, sympy.Identity):
        return sympy.Integer(1)
    if isinstance(expr, sympy.ZeroMatrix):
        return sympy.Integer(0)
    if isinstance(expr, (sympy.MatMul, sympy.Mul)):
        return sympy.Mul(*[_at_d1(a) for a in expr.args])
    if isinstance(expr, (sympy.MatAdd, sympy.Add)):
        return sympy.Add(*[_at_d1(a) for a in expr.args])
    if isinstance(expr, (sympy.MatPow, sympy.Pow)):
        return _at_d1(expr.args[0]) ** _at_d1(expr.args[1])
    if isinstance(expr, (sympy.Transpose, sympy.Trace)):
        return _at_d1(expr.args[0])
    if isinstance(expr, sympy.Inverse):
        return 1 / _at_d1(expr.args[0])
    if isinstance(expr, sympy.Symbol) and expr.name == "d":
        return sympy.Integer(1)
    if expr.is_Atom:
        return expr
    return expr.func(*[_at_d1(a) for a in expr.args])


def divergence_at_d1(expr: sympy.Basic) -> dict | None:
    """Evidence that E_X[expr] is not a finite number, or None.  At d = 1, Sigma* = 1, A = 1/4,
    u = 1 the formula is a rational function R(sigma) of sigma = chi^2_n / n, whose density is
    positive and continuous on (0, oo) for every n >= 1.  A pole of R at sigma_0 > 0 (in lowest
    terms, of order m >= 1) makes |R| ~ c / |sigma - sigma_0|^m there, so E|R| = oo: the
    expectation is +oo (m even, c > 0) or does not exist.  A negative power of I - Sigma A has
    such a pole at sigma_0 = 4."""
    expr = expr.xreplace({x: sympy.Integer(1) for x in expr.free_symbols if x.name == "d"})
    try:
        R = sympy.cancel(sympy.together(_at_d1(expr)))
    except (KeyError, ValueError, TypeError):
        return None
    if {x.name for x in R.free_symbols} - {"sigma", "n"}:
        return None
    den = sympy.fraction(R)[1]
    if not den.has(_SIGMA_D1):
        return None
    poles = {r: m for r, m in sympy.roots(sympy.Poly(den, _SIGMA_D1), filter="R").items()
             if r.is_positive}
    if not poles:
        return None
    s0, m = min(poles.items(), key=lambda kv: kv[0])
    return {"d": 1, "Sigma_star": "1", "A": "1/4", "u": "1", "sigma": "chi^2_n / n",
            "formula_at_d1": str(R), "pole": str(s0), "order": int(m),
            "reason": f"E_X of the formula is not a finite number: at d = 1, Sigma* = 1, A = 1/4, "
                      f"u = 1 it is {R}, with a pole of order {m} at sigma = {s0}, where the "
                      f"density of sigma = chi^2_n/n is positive (the derived loss is finite)"}


def formula_expectation(exprs, L: int | None = None, layers: int = 0,
                        d: int | None = None) -> Poly:
    """E_X of a formula, or of the sum of several (the paper's expressions inside E_X[...]),
    with the moment kernel (at a concrete ``d`` when given, for a sum over a range in d);
    ``DivergentExpectation`` when it is not finite (a negative power of a matrix in Sigma,
    ``divergence_at_d1``)."""
    letters = formula_letters(layers)
    total = None
    for expr in (exprs if isinstance(exprs, (list, tuple)) else [exprs]):
        e = expr.subs(L_SYM, L) if L is not None else expr
        try:
            at_d = e if d is None else e.xreplace({x: sympy.Integer(d) for x in e.free_symbols
                                                   if x.name == "d"})
            mat = li.formula_mat(at_d, letters)
        except ValueError:
            div = divergence_at_d1(e)
            if div is None:
                raise
            raise DivergentExpectation({**div, "L": L}) from None
        total = mat if total is None else total + mat
    return expectation(total).simplify()


def _range_in_d(exprs: Sequence[sympy.Basic]) -> sympy.Symbol | None:
    """The formulas' symbol d when a sum's range depends on it (i = 0..d - 1), else None."""
    for e in exprs:
        for total in e.atoms(sympy.Sum):
            for lim in total.limits:
                for x in sympy.Tuple(*lim[1:]).free_symbols:
                    if x.name == "d":
                        return x
    return None


def formula_expectation_in(exprs, L: int | None = None, layers: int = 0):
    """``formula_expectation``, or a function of d (memoised) giving it at a concrete d when a
    sum's range depends on d: such a sum has d terms, so it is expanded per instance."""
    exprs = list(exprs) if isinstance(exprs, (list, tuple)) else [exprs]
    if _range_in_d(exprs) is None:
        return formula_expectation(exprs, L, layers)

    @lru_cache(maxsize=None)
    def at(d: int) -> Poly:
        return formula_expectation(exprs, L, layers, d)

    return at


def refutes_divergence(check: Check) -> Check:
    """A tier that computes E_X of the named formulas, failing (not erring) with the evidence
    when one of those expectations is not finite."""

    @wraps(check)
    def run(ctx: Context) -> TierResult:
        try:
            return check(ctx)
        except DivergentExpectation as exc:
            return combine([Finding("finite_expectation", False, exc.evidence,
                                    exc.evidence, exc.evidence["reason"])])

    return run


def _first_n(diff: sympy.Expr, start: int) -> int:
    """The first integer n >= start where a rational function of n is non-zero."""
    for n in range(start, start + 50):
        if sympy.cancel(diff.subs(N, n)) != 0:
            return n
    return start


def compare_with_derived(F: Poly | Callable[[int], Poly], Dv: Poly,
                         instances: Sequence[RootInstance], what: str,
                         extra_env: Mapping | None = None) -> tuple[bool, list, dict | None]:
    """The formula's expectation against the derived loss at exact instances (n symbolic):
    (True, False, or None when no instance differs but one could not be evaluated), rows, and
    the counterexample."""
    rows, ce, undecided = [], None, False
    for inst in instances:
        env = inst.env(extra_env)
        try:
            Fd = F(inst.d) if callable(F) else F  # formula_expectation_in: per d
        except ValueError as exc:  # at this d only (a sum over 0..d-1 reaching a negative power)
            rows.append({"instance": inst.label, "d": inst.d, "agree": None, "error": str(exc)})
            undecided = True
            continue
        fv, dv = _exact_value(Fd, env, N), _exact_value(Dv, env, N)
        diff = sympy.factor(sympy.cancel(fv - dv))
        agree = diff == 0
        rows.append({"instance": inst.label, "d": inst.d, "agree": agree,
                     "difference_in_n": str(diff)})
        if not agree and ce is None:
            n0 = _first_n(diff, inst.d + 1)
            ce = {"instance": inst.as_dict(), "n": n0, f"paper_{what}": str(fv.subs(N, n0)),
                  f"derived_{what}": str(dv.subs(N, n0)), "difference_in_n": str(diff)}
    return (False if ce is not None else None if undecided else True), rows, ce


def _derived_loss_step(L: int) -> dict:
    err, sp, As, us = li.model_error(L)
    return step(f"Forward pass, L = {L}",
                r"\mathrm{TF}_L - y_q = -w_*^\top (I - \Sigma A)^L x_q + u^\top\big(I - (I - \Sigma A)^L"
                r"\big) x_q,\qquad \Sigma = \tfrac1n X X^\top",
                "lsa_forward (step -1, eq. (3)) on the symbolic prompt Z_0 = [[X, x_q], [y^T, 0]] "
                "with P = [[0, 0], [u^T, 1]], Q = [[A, 0], [0, 0]] shared by the L loops; the "
                "prediction -[Z_L]_{d+1,n+1} minus y_q equals this residual form exactly "
                "(canonical polynomial identity in X, w*, x_q, A, u).")


