"""gatmiry2024: K. Gatmiry, N. Saunshi, S. Reddi, S. Jegelka, S. Kumar, "Can looped transformers
learn to implement multi-step gradient descent for in-context learning?" (2024).

The looped linear transformer Z_t = Z_{t-1} - (1/n) P Z_{t-1} M (Z_{t-1}^T Q Z_{t-1}) (eqs. (2)-(4))
with the shared P = [[0, 0], [u^T, 1]], Q = [[A, 0], [0, 0]] of Sec. 3.5, on x_i ~ N(0, Sigma*),
w* ~ N(0, Sigma*^{-1}).  ``looped_icl`` derives its population loss from the forward pass; the
claims below compare the paper's closed forms, bounds and experiments with what was derived.

Notation of the formulas: ``Sigma`` is the empirical covariance X X^T / n (the paper's Sigma),
``Sigma_star`` the population covariance Sigma*, ``Sigma_star_half`` = Sigma*^{1/2}, ``A_half`` =
A^{1/2}.  Formulas inside E_X[...] are written without the expectation: the checks take it with
the moment kernel.  Exact instances take Sigma* = R^2 and A = B^2 with rational symmetric R, B, so
that every square root in a formula is rational.

The paper defines delta twice: Sec. 3.5 delta = (8 L d / sqrt(n))^{1/(2L)} (used by Thms. 3.2-4.5
and Lemma 4.2 through delta^k), the remark after Thm. 3.2 and the proof of Lemma A.5 delta =
4 k d / sqrt(n), Lemma A.7 delta^k = 4 k d / sqrt(n).  Each claim names the reading it uses and
reports the others.
"""
from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from functools import lru_cache, wraps
from typing import Callable, Mapping, Sequence

import mpmath
import numpy as np
import sympy
import torch

from models.device import runtime, randn
from models.exact import ExactLoss
from models.lsa import LSAConfig, LinearTransformer, lsa_forward, readout
from models.metrics import dist_to_identity
from models.progress import Progress
from models.sampler import PromptLaw, sample_prompts
from models.trainers import optimise, optimise_batched
from moments import wishart
from moments.montecarlo import Estimate, streaming_estimate
from moments.poly import Poly
from moments.tensor import gaussian_matrix, matrix, vector
from moments.wick import canonical, expectation
from verify.claim import Check, Claim, Context, Correction, ExactValues, TierResult
from verify.evidence import Finding, combine, step
from verify.formulas import (SIZE_NAMES, FormulaSymbol, NamedFormula, compile_formula,
                             formula_value, sum_terms)

from . import looped_icl as li
from .linear_icl import LinearICLSetting, cayley_orthogonal

PAPER = "gatmiry2024"
N, D = li.N, li.D
L_SYM = sympy.Symbol("L", positive=True, integer=True)
K_SYM = sympy.Symbol("k", positive=True, integer=True)
a_sym = li.a_sym


# ==============================================================================================
# Shared: symbols, sizes, exact instances, formulas through the moment kernel
# ==============================================================================================
_N = FormulaSymbol("n", description="number of in-context examples")
_D = FormulaSymbol("d", description="dimension of the covariates")
_L = FormulaSymbol("L", description="number of loops")
_K = FormulaSymbol("k", description="the power of the moment")
_I = FormulaSymbol("i", description="summation index")
_J = FormulaSymbol("j", description="summation index")
_DELTA = FormulaSymbol("delta", description="the accuracy parameter delta", positive=True)
_XI = FormulaSymbol("xi", description="the target loss xi", positive=True)
_EPS = FormulaSymbol("epsilon", description="the loss level epsilon", positive=True)
_ZETA = FormulaSymbol("zeta", description="the margin zeta in (0, 1)", positive=True,
                      unit=True)
_LAM_J = FormulaSymbol("lambda_j", description="the j-th eigenvalue", positive=True,
                       at_most="lambda_1")
_LAM_1 = FormulaSymbol("lambda_1", description="the largest eigenvalue", positive=True)
_LOSS = FormulaSymbol("loss", description="the loss L(A, 0)", positive=True)


def _mat(name: str, shape=("d", "d"), description: str = "", symmetric: bool = False):
    return FormulaSymbol(name, "matrix", shape, description, symmetric=symmetric)


_X = _mat("X", ("d", "n"), "the data matrix [x_1 ... x_n]")
_SIGMA = _mat("Sigma", description="the empirical covariance X X^T / n", symmetric=True)
_SIGMA_STAR = _mat("Sigma_star", description="the population covariance Sigma*", symmetric=True)
_SIGMA_STAR_HALF = _mat("Sigma_star_half", description="Sigma*^{1/2}", symmetric=True)
_SIGMA_STAR_HALF_INV = _mat("Sigma_star_half_inv", description="Sigma*^{-1/2}", symmetric=True)
_SIGMA_STAR_INV = _mat("Sigma_star_inv", description="Sigma*^{-1}", symmetric=True)
_A = _mat("A", description="the preconditioner A (top-left block of Q)", symmetric=True)
_A_HALF = _mat("A_half", description="A^{1/2}", symmetric=True)
_U = _mat("u", ("d", "1"), "the vector u (bottom-left block of P)")
_W = _mat("w", ("d", "1"), "the task vector w* (or a GD iterate)")
_XQ = _mat("x_q", ("d", "1"), "the query x_q")
_Y = _mat("y", ("n", "1"), "the labels y")

BUDGET_LOOPS = {"quick": (1, 2), "default": (1, 2, 3), "paper": (1, 2, 3)}


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


def _by_budget(ctx: Context, quick, default=None, paper=None):
    name = ctx.budget.name
    if name == "quick":
        return quick
    if name == "default" or paper is None:
        return quick if default is None else default
    return paper


def _loops(ctx: Context) -> tuple:
    """Loop counts for which the full-matrix loss is derived by Isserlis (cost grows fast in L)."""
    return BUDGET_LOOPS.get(ctx.budget.name, (1, 2))


def _setting(quick: Mapping, default: Mapping | None = None, paper: Mapping | None = None):
    default = default or quick
    return LinearICLSetting(w_prior="sigma_inverse",
                            sizes={"quick": dict(quick), "default": dict(default),
                                   "paper": dict(paper or default)})


def _size(ctx: Context, setting, name: str) -> int:
    return int({**setting.sizes[ctx.budget.name], **ctx.sizes}[name])


def _q(x) -> str:
    """An exact number as text (rationals exactly; algebraic numbers with 20 digits)."""
    x = sympy.sympify(x)
    if x.is_Rational and max(abs(x.p), x.q).bit_length() <= 1000:
        return str(x)
    if x.is_Rational:  # a power like (2 delta)^(2n) at n = 10^5: printing it would take pages
        return str(sympy.N(x, 20))
    return f"{sympy.N(x, 20)} ({x})" if sympy.count_ops(x) < 30 and len(str(x)) < 120 \
        else str(sympy.N(x, 20))


def _f(x) -> float:
    return float(sympy.N(x, 30))


@dataclass(frozen=True)
class RootInstance:
    """Sigma* = R^2 and A = B^2 with rational symmetric positive definite R, B; a vector u."""

    R: sympy.ImmutableMatrix
    B: sympy.ImmutableMatrix
    u: sympy.ImmutableMatrix
    label: str = ""
    A_exact: sympy.ImmutableMatrix | None = None  # B^2 in simplified form, when B is irrational

    @property
    def d(self) -> int:
        return self.R.shape[0]

    @property
    def A(self) -> sympy.ImmutableMatrix:
        return self.A_exact if self.A_exact is not None else self.B * self.B

    def env(self, extra: Mapping | None = None) -> dict:
        """Values of the kernel letters (Sigma, Sigma_inv, R, R_inv, A, B, u)."""
        S = self.R * self.R
        out = {"Sigma": S, "Sigma_inv": S.inv(), "R": self.R, "R_inv": self.R.inv(),
               "A": self.A, "B": self.B, "u": self.u}
        out.update(extra or {})
        return out

    def as_dict(self) -> dict:
        S = self.R * self.R
        return {"d": self.d, "label": self.label,
                "Sigma_star": [[str(v) for v in row] for row in S.tolist()],
                "Sigma_star_half": [[str(v) for v in row] for row in self.R.tolist()],
                "A": [[str(v) for v in row] for row in self.A.tolist()],
                "A_half": [[str(v) if v.is_Rational else f"{float(v):.12g}" for v in row]
                           for row in self.B.tolist()],
                "u": [str(v) for v in self.u]}


def _spd(d: int, rng: np.random.Generator, values: Sequence[int] = (1, 2, 3),
         dens: Sequence[int] = (1, 2, 3)) -> sympy.ImmutableMatrix:
    U = cayley_orthogonal(d, rng)
    eig = [sympy.Rational(int(rng.choice(values)), int(rng.choice(dens))) for _ in range(d)]
    return sympy.ImmutableMatrix(U * sympy.diag(*eig) * U.T)


def root_instances(ctx: Context, dims: Sequence[int] = (2, 3),
                   isotropic: bool = False) -> list[RootInstance]:
    """Generic exact instances (random rational rotations and spectra), one per dimension."""
    rng = ctx.rng("root-instances", int(isotropic))
    out = []
    for d in dims:
        R = sympy.ImmutableMatrix(sympy.eye(d)) if isotropic else _spd(d, rng)
        B = _spd(d, rng, values=(1, 2, 3, 4), dens=(2, 3))
        u = sympy.ImmutableMatrix([sympy.Rational(int(rng.integers(-3, 4)), 2) for _ in range(d)])
        out.append(RootInstance(R, B, u, f"generic d={d}"))
    return out


def aligned_instance(d: int, c=sympy.Rational(9, 16)) -> RootInstance:
    """A = c Sigma*^{-1} (B = sqrt(c) R^{-1}): the case where the paper's loss form is exact."""
    rng = np.random.default_rng(7)
    R = _spd(d, rng)
    B = sympy.ImmutableMatrix(sympy.sqrt(c) * R.inv())
    return RootInstance(R, B, sympy.ImmutableMatrix([1] + [0] * (d - 1)), f"A = {c} Sigma*^-1")


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


def _exact_value(poly: Poly, env: Mapping, n) -> sympy.Expr:
    val = poly.evaluate(env, {"n": n, "d": env["Sigma"].shape[0]}, exact=True)
    if isinstance(val, sympy.MatrixBase):
        val = val[0, 0]
    return sympy.cancel(sympy.together(sympy.expand(val)))


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


# ==============================================================================================
# The population loss: Lemma 4.1, Lemma A.3, Corollary A.4, Lemma A.6, Theorem A.1, Prop. 3.1
# ==============================================================================================
LOSS_SETTING = _setting({"n": 10, "d": 3, "L": 2})

PAPER_LOSS = "trace((Identity(d) - A_half*Sigma*A_half)**(2*L))"
LEMMA_A3_FORM = ("trace(Sigma_star_half_inv*(Identity(d) - Sigma*A)**L*Sigma_star_half*"
                 "Sigma_star_half*((Identity(d) - Sigma*A)**L).T*Sigma_star_half_inv)")
# || sum_i v_i ||^2 = sum_i sum_j v_i v_j^T with v_i = u^T Sigma A (I - Sigma A)^{L-1-i} Sigma*^{1/2}
SECOND_TERM = ("Sum(Sum(u.T*Sigma*A*(Identity(d) - Sigma*A)**(L-1-i)*Sigma_star_half*"
               "(u.T*Sigma*A*(Identity(d) - Sigma*A)**(L-1-j)*Sigma_star_half).T, "
               "(i, 0, L-1)), (j, 0, L-1))")

LOSS_SYMBOLS = (_N, _D, _L, _A, _A_HALF, _SIGMA, _SIGMA_STAR, _SIGMA_STAR_HALF, _SIGMA_STAR_HALF_INV)
LEMMA41_FORMULAS = (
    NamedFormula("loss_u0", PAPER_LOSS, LOSS_SYMBOLS, equation="Lemma 4.1", exponents=("L",),
                 description="L(A, 0) = E_X tr (I - A^{1/2} Sigma A^{1/2})^{2L} (inside E_X)"),
)


def _loss_formula_check(ctx: Context, name: str, with_u: bool, extra_terms=()) -> tuple:
    """Compare E_X[formula] (sum of the named terms) with the derived loss for each L."""
    findings, steps = [], []
    F = ctx.formulas
    insts = root_instances(ctx) + [aligned_instance(2)]
    for L in _loops(ctx):
        exprs = [F[name]] + [F[t] for t in extra_terms]
        Dv = li.derived_loss(L, with_u=with_u)
        try:
            ok, rows, ce = compare_with_derived(formula_expectation_in(exprs, L), Dv, insts, "loss")
        except ValueError as exc:  # e.g. a negative power at this L only: another L may decide
            findings.append(Finding(f"loss_L{L}", None, {"L": L}, reason=f"E_X[formula] cannot "
                                    f"be taken at L = {L} ({exc})"))
            continue
        if ce is not None:
            ce["L"] = L
        generic = [r for r in rows if r["instance"].startswith("generic")]
        findings.append(Finding(f"loss_L{L}", ok, {"L": L, "instances": rows,
                                                   "derived_terms": len(Dv.terms)}, ce,
                                "" if ok else f"E_X[formula] differs from the loss derived from "
                                              f"the forward pass (L = {L})" if ok is False else
                                f"E_X[formula] cannot be taken at an instance (L = {L})"))
        if L == _loops(ctx)[-1]:
            steps.append(_derived_loss_step(L))
            steps.append(step(f"Derived loss, L = {L}", r"L(A, u) = " + _short_latex(Dv),
                              "E over x_i ~ N(0, Sigma*) (Sigma), w* ~ N(0, Sigma*^{-1}) "
                              "(Sigma_inv), x_q ~ N(0, Sigma*) with the memoised Isserlis "
                              "engine; each closed sample loop gives a factor n."))
            steps.append(step("Comparison", r"\mathbb E_X\big[" + " + ".join(
                sympy.latex(e.subs(L_SYM, L)) for e in exprs) + r"\big]", "The named formula, translated into the moment kernel "
                              "and expected the same way, is evaluated beside the derived loss "
                              "at exact instances Sigma* = R^2, A = B^2 (rational R, B) with n "
                              "symbolic. " + "; ".join(f"{r['instance']}: difference "
                                                       f"{r.get('difference_in_n', r.get('error'))}" for r in generic)))
    return findings, steps


def _short_latex(p: Poly, limit: int = 6) -> str:
    items = sorted(p.terms.items(), key=lambda kv: p.monomial_str(kv[0]))
    shown = Poly(dict(items[:limit]), p.letters, p.rows, p.cols)
    tex = shown.latex()
    return tex + (r" + \dots\ (%d\ \text{terms})" % len(items) if len(items) > limit else "")


@refutes_divergence
def lemma41_symbolic(ctx: Context) -> TierResult:
    findings, steps = _loss_formula_check(ctx, "loss_u0", with_u=False)
    return combine(findings, {"method": "E_X of the named formula and of the squared forward-pass "
                                        "error with the moment kernel, at exact instances"},
                   steps=steps)


# ----- Monte Carlo of the real forward pass ---------------------------------------------------
def looped_model(d: int, L: int, A: np.ndarray, u: np.ndarray | None = None,
                 multilayer: Sequence | None = None) -> LinearTransformer:
    """The torch looped transformer (``sec35``, step -1) with the given weights."""
    cfg = LSAConfig(d=d, layers=L, parametrisation="sec35", looped=multilayer is None, step=-1)
    model = LinearTransformer(cfg)
    with torch.no_grad():
        if multilayer is None:
            model.A.copy_(torch.tensor(A, dtype=torch.float64).unsqueeze(0))
            model.u.copy_(torch.tensor(np.zeros(d) if u is None else u,
                                       dtype=torch.float64).unsqueeze(0))
        else:
            for i, (Ai, ui) in enumerate(multilayer):
                model.A[i].copy_(torch.tensor(Ai))
                model.u[i].copy_(torch.tensor(ui))
    return model


def mc_loss(model: LinearTransformer, sigma: np.ndarray, n: int, samples: int, seed: int,
            w_identity: bool = False, device: str | torch.device = "cpu") -> Estimate:
    """Monte Carlo of E[(TF_L(Z_0) - y_q)^2] with the real forward pass (float64) on `device`;
    the prompts are drawn by a cpu generator, so a seed gives the same estimate on every device."""
    S = torch.tensor(sigma, dtype=torch.float64)
    law = PromptLaw(sigma=S, n=n, w_cov=None if w_identity else torch.linalg.inv(S))
    gen = torch.Generator().manual_seed(seed)
    model = model.to(device)

    def draw(k):
        pr = sample_prompts(law, k, gen, device=device)
        with torch.no_grad():
            err = model.predict(pr.Z()) - pr.yq
        return (err ** 2).reshape(k, 1).cpu().numpy()

    mean, se = streaming_estimate(draw, samples, chunk=20_000)
    return Estimate(float(mean[0]), float(se[0]), samples)


def _float_instance(inst: RootInstance) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    S = np.array((inst.R * inst.R).evalf(30).tolist(), dtype=float)
    A = np.array((inst.B * inst.B).evalf(30).tolist(), dtype=float)
    u = np.array(inst.u.tolist(), dtype=float).ravel()
    return S, A, u


def mc_instance(ctx: Context) -> RootInstance:
    """Sigma* = I and A = U diag(1/20, 3/10, 9/10) U^T: far from a multiple of Sigma*^{-1}, so the
    trace form and the derived loss differ by several standard errors at n = 10, L <= 2."""
    U = cayley_orthogonal(3, np.random.default_rng(1))
    eig = [sympy.Rational(v) for v in ("1/20", "3/10", "9/10")]
    B = U * sympy.diag(*[sympy.sqrt(v) for v in eig]) * U.T
    return RootInstance(sympy.ImmutableMatrix(sympy.eye(3)), sympy.ImmutableMatrix(B),
                        sympy.ImmutableMatrix([sympy.Rational(1, 10), 0, -sympy.Rational(1, 5)]),
                        "Monte Carlo", sympy.ImmutableMatrix(U * sympy.diag(*eig) * U.T))


def _mc_formula_check(ctx: Context, formula_names: Sequence[str], with_u: bool) -> TierResult:
    """The named formula and the derived loss against Monte Carlo of the torch forward pass."""
    L = _size(ctx, LOSS_SETTING, "L")
    n = _size(ctx, LOSS_SETTING, "n")
    inst = mc_instance(ctx)
    S, A, u = _float_instance(inst)
    if L not in (1, 2, 3):
        return combine([Finding("monte_carlo", None, {"L": L}, reason="L must be 1, 2 or 3 here")])
    Fp = formula_expectation_in([ctx.formulas[f] for f in formula_names], L)
    Fp = Fp(3) if callable(Fp) else Fp  # the instance below has d = 3
    Dv = li.derived_loss(L, with_u=with_u)
    env = {k: np.array(v.evalf(30).tolist(), dtype=float) for k, v in inst.env().items()}
    env["u"] = env["u"].reshape(-1, 1)
    paper = float(Fp.evaluate(env, {"n": n, "d": 3}))
    derived = float(Dv.evaluate(env, {"n": n, "d": 3}))
    model = looped_model(3, L, A, u if with_u else None)
    est = mc_loss(model, S, n, ctx.budget.mc_samples, ctx.seed_for("mc-loss", L))
    level, comparisons = 0.999, 2
    d_ok, p_ok = est.agrees(derived, level, comparisons), est.agrees(paper, level, comparisons)
    ev = {"L": L, "n": n, "instance": inst.as_dict(), "derived": derived, "paper": paper,
          "z_derived": est.z_score(derived), "z_paper": est.z_score(paper),
          **est.as_dict(level, comparisons)}
    findings = [Finding("derived_vs_monte_carlo", d_ok, ev, None if d_ok else
                        {"instance": inst.as_dict(), "n": n, "L": L, "derived": derived,
                         "monte_carlo": est.mean, "se": est.se, "seed": ctx.seed},
                        "" if d_ok else "the derived loss is outside the Monte Carlo interval"),
                Finding("formula_vs_monte_carlo", p_ok, {"z": est.z_score(paper)}, None if p_ok else
                        {"instance": inst.as_dict(), "n": n, "L": L, "paper": paper,
                         "monte_carlo": est.mean, "ci": list(est.interval(level, comparisons)),
                         "seed": ctx.seed},
                        "" if p_ok else "the named formula is outside the Monte Carlo interval of "
                                        "the forward pass")]
    return combine(findings, {"samples": ctx.budget.mc_samples})


@refutes_divergence
def lemma41_numeric(ctx: Context) -> TierResult:
    return _mc_formula_check(ctx, ["loss_u0"], with_u=False)


LEMMA41_CORRECTION = Correction(
    description="L(A, 0) = E_X || Sigma*^{-1/2} (I - Sigma A)^L Sigma*^{1/2} ||_F^2 (the paper's "
                "own Lemma A.3 with the outer factors read as Sigma*)",
    reason="the forward pass gives TF_L - y_q = -w*^T (I - Sigma A)^L x_q; the printed trace "
           "form equals this only when A is a multiple of Sigma*^{-1} (it is the lower bound "
           "E tr M^2 <= E tr M M^T, M = (I - A Sigma)^L at Sigma* = I)",
    formulas={"loss_u0": LEMMA_A3_FORM})

LEMMA4_1 = Claim(
    id="gatmiry2024.lemma4_1",
    title="The loss of the looped transformer at u = 0 (trace form)",
    paper=PAPER,
    statement=r"Given $u=0$, $L(A,0)=\mathbb E_X\big[\operatorname{tr}\big((I-A^{1/2}\Sigma "
              r"A^{1/2})^{2L}\big)\big]$ with $\Sigma=\frac1n\sum_i x_ix_i^\top$.",
    assumptions=("x_i, x_q ~ N(0, Sigma*), w* ~ N(0, Sigma*^{-1}), y_i = <w*, x_i>",
                 "P = [[0, 0], [u^T, 1]], Q = [[A, 0], [0, 0]] shared by L loops, u = 0",
                 "A symmetric positive definite"),
    formulas=LEMMA41_FORMULAS,
    checks={"symbolic": lemma41_symbolic, "numeric": single_threaded(lemma41_numeric)},
    setting=LOSS_SETTING,
    correction=LEMMA41_CORRECTION,
    notes="The printed form holds exactly when A is a multiple of Sigma*^{-1} (the aligned "
          "instance in the evidence), in particular at the optimum; elsewhere it is a lower bound.",
)

# ----- Corollary A.4 ---------------------------------------------------------------------------
COR_A4_FORMULAS = (
    NamedFormula("first", PAPER_LOSS, LOSS_SYMBOLS, equation="Cor. A.4", exponents=("L",),
                 description="first term: E_X tr (I - A^{1/2} Sigma A^{1/2})^{2L}"),
    NamedFormula("second", SECOND_TERM, (_N, _D, _L, _I, _J, _A, _U, _SIGMA, _SIGMA_STAR_HALF),
                 exponents=("L", "i", "j"),
                 equation="Cor. A.4",
                 description="second term: E_X || sum_i u^T Sigma A (I - Sigma A)^{L-1-i} "
                             "Sigma^{1/2} ||^2 with the last Sigma^{1/2} read as Sigma*^{1/2}"),
)


@refutes_divergence
def cor_a4_symbolic(ctx: Context) -> TierResult:
    findings, steps = _loss_formula_check(ctx, "first", with_u=True, extra_terms=("second",))
    # the u-part alone: L(A, u) - L(A, 0) against the second term (both readings of Sigma^{1/2})
    insts = root_instances(ctx)
    rows, ce, undecided = [], None, []
    for L in _loops(ctx):
        Dv = (li.derived_loss(L, with_u=True) - li.derived_loss(L, with_u=False)).simplify()
        emp = ctx.formulas["second"].subs(sympy.MatrixSymbol("Sigma_star_half", D, D),
                                          sympy.MatrixSymbol("Sigma", D, D))
        try:
            ok, r, c = compare_with_derived(formula_expectation_in(ctx.formulas["second"], L), Dv,
                                            insts, "u_part")
            ok_emp, r_emp, _ = compare_with_derived(formula_expectation_in(emp, L), Dv, insts,
                                                    "u_part")
        except ValueError as exc:  # this L only; another may decide
            undecided.append(f"L = {L}: {exc}")
            continue
        rows.append({"L": L, "second_term_as_named": ok, "with_empirical_Sigma_half": ok_emp,
                     "instances": r})
        if ok is False and ce is None:
            ce = {**c, "L": L}
        if ok is None:
            undecided.append(f"L = {L}: an instance could not be evaluated")
    ok_all = False if ce is not None else None if undecided else True
    findings.append(Finding("u_part", ok_all, {"by_L": rows, "undecided": undecided, "note": "the "
                            "u-part of the derived loss is u^T E[(I - (I - Sigma A)^L) Sigma* "
                            "(I - (I - A Sigma)^L)] u"},
                            ce, "" if ok_all else
                            "the second term differs from the u-part of the derived loss"
                            if ok_all is False else "; ".join(undecided)))
    return combine(findings, steps=steps)


@refutes_divergence
def cor_a4_numeric(ctx: Context) -> TierResult:
    return _mc_formula_check(ctx, ["first", "second"], with_u=True)


COR_A4 = Claim(
    id="gatmiry2024.cor_a4",
    title="The loss of the looped transformer (trace form plus the u-term)",
    paper=PAPER,
    statement=r"$L(A,u)=\mathbb E_X\big[\operatorname{tr}\big((I-A^{1/2}\Sigma A^{1/2})^{2L}\big)"
              r"\big]+\mathbb E_X\big[\big\|\sum_{i=0}^{L-1}u^\top\Sigma A(I-\Sigma A)^{L-1-i}"
              r"\Sigma^{1/2}\big\|^2\big]$.",
    assumptions=LEMMA4_1.assumptions[:2] + ("A symmetric positive definite, u arbitrary",),
    formulas=COR_A4_FORMULAS,
    checks={"symbolic": cor_a4_symbolic, "numeric": single_threaded(cor_a4_numeric)},
    setting=LOSS_SETTING,
    correction=Correction(
        description="first term E_X || Sigma*^{-1/2} (I - Sigma A)^L Sigma*^{1/2} ||_F^2 (Lemma "
                    "A.3 with the outer factors read as Sigma*); the second term as printed, its "
                    "Sigma^{1/2} read as Sigma*^{1/2}",
        reason="the proof's step E tr((I - Sigma^{1/2} A Sigma^{1/2})^{2L}) replaces Sigma*^{1/2} "
               "by the empirical Sigma^{1/2}; see lemma4_1",
        formulas={"first": LEMMA_A3_FORM}),
)

# ----- Lemma A.3 (multi-layer) ----------------------------------------------------------------
_A0, _A1 = _mat("A0", description="A^{(0)}", symmetric=True), _mat("A1", description="A^{(1)}",
                                                                  symmetric=True)
_U0, _U1 = _mat("u0", ("d", "1"), "d_0 = u^{(0)}"), _mat("u1", ("d", "1"), "d_1 = u^{(1)}")
A3_FIRST = ("trace(Sigma_star_half_inv*(Identity(d) - Sigma*A0)*(Identity(d) - Sigma*A1)*"
            "Sigma_star_half*Sigma_star_half*((Identity(d) - Sigma*A0)*(Identity(d) - Sigma*A1)).T*"
            "Sigma_star_half_inv)")
A3_SECOND = ("(u0.T*Sigma*A0*(Identity(d) - Sigma*A1)*Sigma_star_half + u1.T*Sigma*A1*"
             "Sigma_star_half)*(u0.T*Sigma*A0*(Identity(d) - Sigma*A1)*Sigma_star_half + "
             "u1.T*Sigma*A1*Sigma_star_half).T")
A3_SYMBOLS = (_N, _D, _A0, _A1, _U0, _U1, _SIGMA, _SIGMA_STAR_HALF, _SIGMA_STAR_HALF_INV)
LEMMA_A3_FORMULAS = (
    NamedFormula("first", A3_FIRST, A3_SYMBOLS, equation="Lemma A.3",
                 description="E_X || Sigma^{-1/2} prod_i (I - Sigma A^{(i)}) Sigma^{1/2} ||^2 for "
                             "two layers, the outer Sigma^{+-1/2} read as Sigma*^{+-1/2}"),
    NamedFormula("second", A3_SECOND, A3_SYMBOLS, equation="Lemma A.3", shape=("1", "1"),
                 description="E_X || sum_i d_i^T Sigma A^{(i)} prod_{j>i} (I - Sigma A^{(j)}) "
                             "Sigma^{1/2} ||^2 for two layers (d_i = u^{(i)})"),
)


def _multilayer_instance(ctx: Context, d: int) -> tuple[RootInstance, dict]:
    rng = ctx.rng("multilayer", d)
    base = RootInstance(_spd(d, rng), _spd(d, rng), sympy.ImmutableMatrix([1] * d), f"d={d}")
    extra = {"A0": _spd(d, rng, (1, 2, 3), (2, 3)), "A1": _spd(d, rng, (1, 2, 3), (2, 3)),
             "u0": sympy.ImmutableMatrix([sympy.Rational(int(rng.integers(-3, 4)), 2)
                                          for _ in range(d)]),
             "u1": sympy.ImmutableMatrix([sympy.Rational(int(rng.integers(-3, 4)), 2)
                                          for _ in range(d)])}
    return base, extra


@refutes_divergence
def lemma_a3_symbolic(ctx: Context) -> TierResult:
    F = ctx.formulas
    Dv = li.derived_loss(2, with_u=True, multilayer=True)
    Fp = formula_expectation([F["first"], F["second"]], layers=2)
    # the other reading: the outer Sigma^{+-1/2} empirical; then Sigma^{-1/2} M Sigma^{1/2} =
    # prod (I - Sigma^{1/2} A_i Sigma^{1/2}) and the first term is tr(prod (I - A_i Sigma) prod^T..)
    emp_first = sympy.sympify(
        "trace((Identity(d) - A0*Sigma)*(Identity(d) - A1*Sigma)*(Identity(d) - A1*Sigma)*"
        "(Identity(d) - A0*Sigma))", locals=LEMMA_A3_FORMULAS[0].locals() | {
            "A0": sympy.MatrixSymbol("A0", D, D), "A1": sympy.MatrixSymbol("A1", D, D),
            "Sigma": sympy.MatrixSymbol("Sigma", D, D)})
    Fe = formula_expectation([emp_first, F["second"]], layers=2)
    rows, ce, oks = [], None, []
    emp_rows = []
    for d in (2, 3):
        base, extra = _multilayer_instance(ctx, d)
        ok, r, c = compare_with_derived(Fp, Dv, [base], "loss", extra)
        ok_e, r_e, _ = compare_with_derived(Fe, Dv, [base], "loss", extra)
        rows += r
        emp_rows += r_e
        if not ok and ce is None:
            ce = {**c, "A0": str(extra["A0"].tolist()), "A1": str(extra["A1"].tolist()),
                  "u0": str(list(extra["u0"])), "u1": str(list(extra["u1"]))}
        oks.append(ok)
    # compare_with_derived is None (undecided) where an instance could not be evaluated
    ok_all = False if False in oks else None if None in oks else True
    steps = [step("Forward pass, two layers",
                  r"\mathrm{TF} - y_q = -w_*^\top (I-\Sigma A^{(0)})(I-\Sigma A^{(1)})x_q + "
                  r"u^{(0)\top}\Sigma A^{(0)}(I-\Sigma A^{(1)})x_q + u^{(1)\top}\Sigma A^{(1)}x_q",
                  "Two layers with their own (A^(i), u^(i)) (eq. (11)); checked as a canonical "
                  "polynomial identity."),
             step("Readings of Sigma^{+-1/2}", "",
                  "Read as Sigma*^{+-1/2} (what E over x_q ~ N(0, Sigma*) and w* ~ N(0, "
                  "Sigma*^{-1}) produce) the lemma matches the derived loss; read as the "
                  "empirical Sigma^{+-1/2} the first term becomes E tr(prod (I - A Sigma) ...) "
                  "(Cor. A.4's form), which does not.")]
    return combine([Finding("two_layer_loss", ok_all, {"instances": rows,
                                                      "reading_empirical_Sigma": emp_rows,
                                                      "derived_terms": len(Dv.terms)}, ce,
                            "" if ok_all else "the formula differs from the derived loss"
                            if ok_all is False else "an instance could not be evaluated")],
                   {"reading": "outer Sigma^{+-1/2} = Sigma*^{+-1/2}"}, steps=steps)


LEMMA_A3 = Claim(
    id="gatmiry2024.lemma_a3",
    title="The loss of the multi-layer transformer (two terms)",
    paper=PAPER,
    statement=r"$L(A,u)=\mathbb E_X\big[\big\|\Sigma^{-1/2}\prod_{i=0}^{L-1}(I-\Sigma A^{(i)})"
              r"\Sigma^{1/2}\big\|^2\big]+\mathbb E_X\big[\big\|\sum_{i=0}^{L-1}d_i^\top\Sigma "
              r"A^{(i)}\prod_{j=i+1}^{L-1}(I-\Sigma A^{(j)})\Sigma^{1/2}\big\|^2\big]$ "
              r"(checked for L = 2 layers, the outer $\Sigma^{\pm1/2}$ read as $\Sigma_*^{\pm1/2}$).",
    assumptions=("layer i has Q = [[A^(i), 0], [0, 0]], P = [[0, 0], [d_i^T, 1]] (eq. (11))",
                 "x_i, x_q ~ N(0, Sigma*), w* ~ N(0, Sigma*^{-1})"),
    formulas=LEMMA_A3_FORMULAS,
    checks={"symbolic": lemma_a3_symbolic},
    setting=LOSS_SETTING,
    notes="The symbol Sigma is used for both Sigma* and the empirical covariance; only the "
          "reading Sigma* for the outer factors makes the lemma true.",
)

# ----- Lemma A.6 -------------------------------------------------------------------------------
LEMMA_A6_FORMULAS = (
    NamedFormula("lhs", PAPER_LOSS, LOSS_SYMBOLS, equation="Lemma A.6", exponents=("L",),
                 description="E_X tr (I - A^{1/2} Sigma A^{1/2})^{2L}"),
    NamedFormula("cov_tilde", "A_half*Sigma_star*A_half", (_D, _A_HALF, _SIGMA_STAR),
                 equation="Lemma A.6", shape=("d", "d"),
                 description="the covariance of x~_i = A^{1/2} x_i"),
)


@refutes_divergence
def lemma_a6_symbolic(ctx: Context) -> TierResult:
    """E_X tr(...)^{2L} (Isserlis on the formula) = tr E (I - S~)^{2L} (Wishart at Sigma~)."""
    F = ctx.formulas
    rows, ce = [], None
    for L in _loops(ctx):
        lhs = formula_expectation(F["lhs"], L)
        rhs = li.paper_form(L)
        for inst in root_instances(ctx):
            env = inst.env()
            cov = sympy.Matrix(formula_value(F["cov_tilde"], {"A_half": inst.B, "Sigma_star": env[
                "Sigma"], "d": inst.d}))
            eig_free = {li.power_sum(j): (cov ** j).trace() for j in range(1, 2 * L + 1)}
            r = sympy.cancel(rhs.subs({D: inst.d}).xreplace(eig_free))
            lv = _exact_value(lhs, env, N)
            diff = sympy.factor(sympy.cancel(lv - r))
            rows.append({"L": L, "instance": inst.label, "difference_in_n": str(diff)})
            if diff != 0 and ce is None:
                n0 = _first_n(diff, inst.d + 1)
                ce = {"instance": inst.as_dict(), "L": L, "n": n0,
                      "lhs": str(lv.subs(N, n0)), "rhs": str(r.subs(N, n0)),
                      "difference_in_n": str(diff)}
    ok = ce is None
    steps = [step("Wishart side", r"\operatorname{tr}\mathbb E(I-\tilde\Sigma)^{2L} = \sum_k \binom{2L}{k}"
                  r"(-n)^{-k}\,\mathbb E\operatorname{tr}\tilde W^k,\quad \tilde W\sim W_d(n, "
                  r"A^{1/2}\Sigma_*A^{1/2})",
                  "E tr W~^k in n and p_j = tr(Sigma~^j) from the Wishart engine."),
             step("Isserlis side", r"\mathbb E_X\operatorname{tr}(I-A^{1/2}\Sigma A^{1/2})^{2L}",
                  "The named left side, expected with X ~ N(0, Sigma*) columns; both sides at "
                  "exact instances with n symbolic.")]
    return combine([Finding("change_of_covariance", ok, {"comparisons": rows}, ce,
                            "" if ok else "the two sides differ")], steps=steps)


LEMMA_A6 = Claim(
    id="gatmiry2024.lemma_a6",
    title="Changing the covariance: the trace form as a Wishart moment at A^{1/2} Sigma* A^{1/2}",
    paper=PAPER,
    statement=r"$\mathbb E_X\big[\operatorname{tr}\big((I-A^{1/2}\Sigma A^{1/2})^{2L}\big)\big]="
              r"\operatorname{tr}\big(\mathbb E_X\big[(I-\tilde\Sigma)^{2L}\big]\big)$ with "
              r"$\tilde\Sigma=\frac1n\sum_i\tilde x_i\tilde x_i^\top$, $\tilde x_i\sim\mathcal N(0, "
              r"A^{1/2}\Sigma^*A^{1/2})$.",
    assumptions=("x_i ~ N(0, Sigma*) i.i.d.", "A symmetric positive definite"),
    formulas=LEMMA_A6_FORMULAS,
    checks={"symbolic": lemma_a6_symbolic},
    setting=LOSS_SETTING,
    notes="The lemma's first sentence writes the first part of the loss as E tr((I - A^{1/2} "
          "Sigma A^{1/2})^{2L} Sigma^{1/2}) (a stray Sigma^{1/2}); the identity checked is the "
          "displayed one.",
)

# ----- Theorem A.1: the recursions (12), (13) ---------------------------------------------------
_AL = [_mat(f"A{i}", description=f"A^({i})", symmetric=True) for i in range(3)]
_UL = [_mat(f"u{i}", ("d", "1"), f"u^({i})") for i in range(3)]
_PROD = "(Identity(d) - Sigma*A0)*(Identity(d) - Sigma*A1)*(Identity(d) - Sigma*A2)"
_U_TERMS = ("u0.T*Sigma*A0*(Identity(d) - Sigma*A1)*(Identity(d) - Sigma*A2)*{v} + "
            "u1.T*Sigma*A1*(Identity(d) - Sigma*A2)*{v} + u2.T*Sigma*A2*{v}")
THM_A1_SYMBOLS = (_N, _D, _X, _W, _XQ, _SIGMA, *_AL, *_UL)
THM_A1_FORMULAS = (
    NamedFormula("y_t", f"w.T*{_PROD}*X + " + _U_TERMS.format(v="X"), THM_A1_SYMBOLS,
                 equation="(12), t = 3", shape=("1", "n"),
                 description="y^(3)T = [Z^(3)]_{d+1,1:n} after three layers"),
    NamedFormula("yq_t", f"w.T*x_q - w.T*{_PROD}*x_q - ("
                 + _U_TERMS.format(v="x_q") + ")", THM_A1_SYMBOLS, equation="(13), t = 3",
                 shape=("1", "1"), description="y_q^(3) = -[Z^(3)]_{d+1,n+1} after three layers"),
)


def _thm_a1_letters(sp) -> dict:
    As, us = li.layer_letters(3, multilayer=True)
    out = {"X": sp.X, "w": sp.w, "x_q": sp.xq, "Sigma": sp.X @ sp.X.T / N}
    out.update({f"A{i}": A for i, A in enumerate(As)})
    out.update({f"u{i}": u for i, u in enumerate(us)})
    return out


def _thm_a1_instance(ctx: Context, d: int = 2, n: int = 3) -> dict:
    rng = ctx.rng("thm-a1-instance")

    def q(shape):
        return sympy.Matrix(*shape, lambda i, j: sympy.Rational(int(rng.integers(-3, 4)),
                                                               int(rng.integers(1, 3))))

    vals = {"X": q((d, n)), "w": q((d, 1)), "x_q": q((d, 1)), "n": n, "d": d}
    for i in range(3):
        M = q((d, d))
        vals[f"A{i}"] = (M + M.T) / 2
        vals[f"u{i}"] = q((d, 1))
    vals["Sigma"] = vals["X"] * vals["X"].T / n
    return vals


def _exact_forward(vals: dict, layers: int = 3, u: bool = True) -> sympy.Matrix:
    d, n = vals["d"], vals["n"]
    Z = sympy.zeros(d + 1, n + 1)
    Z[:d, :n] = vals["X"]
    Z[:d, n] = vals["x_q"]
    Z[d, :n] = (vals["X"].T * vals["w"]).T
    M = sympy.zeros(n + 1, n + 1)
    M[:n, :n] = sympy.eye(n)
    ws = []
    for i in range(layers):
        P = sympy.zeros(d + 1, d + 1)
        P[d, d] = 1
        if u:
            P[d, :d] = vals[f"u{i}"].T
        Q = sympy.zeros(d + 1, d + 1)
        Q[:d, :d] = vals[f"A{i}"]
        ws.append((P, Q))
    return lsa_forward(Z, ws, M, n, step=-1)


def thm_a1_symbolic(ctx: Context) -> TierResult:
    F = ctx.formulas
    err, sp, As, us = li.model_error(3, multilayer=True)
    layers = [li.sec35_weights(A, u) for A, u in zip(As, us)]
    Z3 = lsa_forward(sp.Z, layers, sp.mask, N, step=-1)
    letters = _thm_a1_letters(sp)
    findings = []
    vals = _thm_a1_instance(ctx)
    Zx = _exact_forward(vals)
    d, n = vals["d"], vals["n"]
    for name, block, sign, exact in (("y_t", Z3[1, 0], 1, Zx[d, :n]),
                                     ("yq_t", Z3[1, 1], -1, sympy.Matrix([[-Zx[d, n]]]))):
        diff = canonical(block.scale(sign) - li.formula_mat(F[name], letters)).simplify()
        ok = diff.is_zero()
        ce = None
        if not ok:
            paper = sympy.Matrix(formula_value(F[name], vals))
            ce = {"sizes": {"d": d, "n": n, "layers": 3},
                  "instance": {k: str(v.tolist()) if isinstance(v, sympy.MatrixBase) else v
                               for k, v in vals.items() if k != "Sigma"},
                  "forward_pass": str(exact.tolist()), "paper": str(paper.tolist())}
        findings.append(Finding(name, ok, {"difference_terms": len(diff.terms)}, ce,
                                "" if ok else f"eq. ({'12' if name == 'y_t' else '13'}) differs "
                                              f"from the forward pass after three layers"))
    steps = [step("Forward pass, three layers", r"y^{(3)\top} = [Z^{(3)}]_{d+1,1:n},\quad "
                  r"y_q^{(3)} = -[Z^{(3)}]_{d+1,n+1}",
                  "lsa_forward with (P^(i), Q^(i)) of eq. (11), symbolic letters X, w*, x_q, "
                  "A^(i), u^(i); each side is compared with the named formula as a canonical "
                  "polynomial (no expectation)."),
             step("Per layer", r"r_{t+1}^\top = r_t^\top(I-\Sigma A^{(t)}) - u^{(t)\top}\Sigma "
                  r"A^{(t)},\quad y^{(t)\top} = r_t^\top X",
                  "One layer subtracts (1/n)(u^T X X^T + y^T X^T) A [X, x_q] from the last row, "
                  "so u enters with a minus sign in y^(t) and with a plus sign in y_q^(t).")]
    return combine(findings, steps=steps)


def thm_a1_numeric(ctx: Context) -> TierResult:
    """The torch multi-layer model (``sec35``, not looped) against the named formulas, float64."""
    F = ctx.formulas
    d, n, B = 3, 7, 8
    gen = torch.Generator().manual_seed(ctx.seed_for("thm-a1-model"))
    model = LinearTransformer(LSAConfig(d=d, layers=3, parametrisation="sec35", step=-1),
                              init_scale=0.3, generator=gen)
    law = PromptLaw(sigma=torch.eye(d, dtype=torch.float64), n=n)
    pr = sample_prompts(law, B, torch.Generator().manual_seed(ctx.seed_for("thm-a1-prompts")))
    Z3 = model(pr.Z()).detach().numpy()
    sizes = {"n": n, "d": d}
    fy, fq = compile_formula(F["y_t"], sizes), compile_formula(F["yq_t"], sizes)
    worst = 0.0
    for b in range(B):
        vals = {"X": pr.X[b].numpy(), "w": pr.w[b].numpy().reshape(-1, 1),
                "x_q": pr.xq[b].numpy().reshape(-1, 1)}
        vals["Sigma"] = vals["X"] @ vals["X"].T / n
        for i in range(3):
            A = model.A[i].detach().numpy()
            vals[f"A{i}"] = (A + A.T) / 2
            vals[f"u{i}"] = model.u[i].detach().numpy().reshape(-1, 1)
        y = fy(**{k: vals[k] for k in fy.arg_names}).ravel()
        yq = float(fq(**{k: vals[k] for k in fq.arg_names}).ravel()[0])
        scale = max(1.0, np.abs(Z3[b, d]).max())
        worst = max(worst, np.abs(Z3[b, d, :n] - y).max() / scale, abs(-Z3[b, d, n] - yq) / scale)
    tol = 1e-10
    ok = bool(worst <= tol)
    return combine([Finding("forward_pass_vs_recursions", ok, {
        "max_relative_difference": worst, "tolerance": tol, "prompts": B, "d": d, "n": n,
        "why_tolerance": "float64 forward pass against float64 evaluation of the formulas"},
        None if ok else {"max_relative_difference": worst, "seed": ctx.seed},
        "" if ok else "the torch forward pass differs from eqs. (12)-(13)")])


THM_A1 = Claim(
    id="gatmiry2024.thm_a1",
    title="The multi-layer recursions (12)-(13) for y^(t) and y_q^(t)",
    paper=PAPER,
    statement=r"$y^{(t)\top}=w^{*\top}\prod_{i<t}(I-\Sigma A^{(i)})X+\sum_{i<t}u^{(i)\top}\Sigma "
              r"A^{(i)}\prod_{j=i+1}^{t-1}(I-\Sigma A^{(j)})X$ and $y_q^{(t)}=y_q-w^{*\top}\prod_{i<t}"
              r"(I-\Sigma A^{(i)})x_q-\sum_{i<t}u^{(i)\top}\Sigma A^{(i)}\prod_{j=i+1}^{t-1}"
              r"(I-\Sigma A^{(j)})x_q$ (checked at t = 3).",
    assumptions=("layer i: Q^(i) = [[A^(i), 0], [0, 0]], P^(i) = [[0, 0], [u^(i)T, 1]] (eq. (11))",
                 "[Z^(t)]_{d+1,1:n} = y^(t), [Z^(t)]_{d+1,n+1} = -y_q^(t); any prompt"),
    formulas=THM_A1_FORMULAS,
    checks={"symbolic": thm_a1_symbolic, "numeric": single_threaded(thm_a1_numeric)},
    setting=LOSS_SETTING,
    correction=Correction(
        description="the u-terms enter with the opposite sign: minus in (12), plus in (13)",
        reason="the proof drops the u-term of the update y^(t+1)T = y^(t)T - (1/n)(u^T X X^T + "
               "y^(t)T X^T) A X; the loss (Lemma A.3) is even in u, so nothing downstream changes",
        formulas={"y_t": f"w.T*{_PROD}*X - (" + _U_TERMS.format(v="X") + ")",
                  "yq_t": f"w.T*x_q - w.T*{_PROD}*x_q + " + _U_TERMS.format(v="x_q")}),
    notes="The proof's update rule Z^(t) = Z^(t-1) - (1/n) P^(t) M Z^(t) A^(t) Z^(t)T is garbled "
          "(it should read P^(t) Z^(t-1) M Z^(t-1)T Q^(t) Z^(t-1)).",
)

# ----- Proposition 3.1 -------------------------------------------------------------------------
PROP31_FORMULAS = (
    NamedFormula("ell", "(X.T*w - y).T*(X.T*w - y)", (_N, _D, _X, _W, _Y), equation="Sec. 3.2",
                 shape=("1", "1"),
                 description="the least-squares loss l_2^2(w) = ||X^T w - y||^2 (printed with w*)"),
    NamedFormula("grad0", "X*y", (_N, _D, _X, _Y), equation="Sec. 3.4 (proof of Prop. 3.1)",
                 shape=("d", "1"), description="the paper's value of grad l_2^2(0)"),
    NamedFormula("update", "w - A*grad/n", (_N, _D, _W, _A, _mat("grad", ("d", "1"), "gradient")),
                 equation="Sec. 3.4", shape=("d", "1"),
                 description="w_{t+1} = w_t - (1/n) A grad l_2^2(w_t) (step 1/n, preconditioner A)"),
    NamedFormula("w0", "ZeroMatrix(d, 1)", (_D,), equation="Sec. 3.4", shape=("d", "1"),
                 description="the start w_0 = 0"),
    NamedFormula("rows", "y.T - w.T*X", (_N, _D, _X, _W, _Y), equation="(9)", shape=("1", "n"),
                 description="[Z^(t)]_{d+1,1:n} = y^T - w_t^T X"),
    NamedFormula("query", "-w.T*x_q", (_D, _W, _XQ), equation="(9)", shape=("1", "1"),
                 description="[Z^(t)]_{d+1,n+1} = -w_t^T x_q"),
)


def _prop31_iterates(F, vals: dict, T: int) -> list:
    """w_0..w_T from the named start, update and gradient of the named loss (sympy)."""
    d = vals["X"].shape[0]
    ws = sympy.Matrix(sympy.symbols(f"w_0:{d}"))
    ell = formula_value(F["ell"], {**vals, "w": ws})
    ell = ell[0, 0] if isinstance(ell, sympy.MatrixBase) else ell
    grad = sympy.Matrix([sympy.diff(ell, wi) for wi in ws])
    w = sympy.Matrix(formula_value(F["w0"], vals)) if F["w0"] != 0 else sympy.zeros(d, 1)
    if w.shape != (d, 1):
        w = sympy.zeros(d, 1)
    out = [w]
    for _ in range(T):
        g = grad.subs(dict(zip(ws, w)))
        w = sympy.Matrix(formula_value(F["update"], {**vals, "w": w, "grad": g}))
        out.append(sympy.expand(w))
    return out


def _prop31_prompt(d: int, n: int, rng: np.random.Generator | None):
    """X, y, x_q: independent symbols, or random rationals when ``rng`` is given."""
    def entry(name):
        if rng is None:
            return sympy.Symbol(name)
        return sympy.Rational(int(rng.integers(-3, 4)), int(rng.integers(1, 3)))

    X = sympy.Matrix(d, n, lambda i, j: entry(f"x{j}_{i}"))
    y = sympy.Matrix([entry(f"y{i}") for i in range(n)])
    xq = sympy.Matrix([entry(f"xq{i}") for i in range(d)])
    return X, y, xq


def _prop31_compare(F, X, y, xq, A, T: int) -> list:
    """[(t, model rows, model query, GD rows, GD query, top rows unchanged)] for t = 1..T."""
    d, n = X.shape
    vals = {"X": X, "y": y, "x_q": xq, "A": A, "n": n, "d": d}
    Z = sympy.zeros(d + 1, n + 1)
    Z[:d, :n], Z[:d, n], Z[d, :n] = X, xq, y.T
    M = sympy.zeros(n + 1, n + 1)
    M[:n, :n] = sympy.eye(n)
    P = sympy.zeros(d + 1, d + 1)
    P[d, d] = 1
    Q = sympy.zeros(d + 1, d + 1)
    Q[:d, :d] = A
    Zs = lsa_forward(Z, [(P, Q)] * T, M, n, step=-1, keep_all=True)
    ws = _prop31_iterates(F, vals, T)
    out = []
    for t in range(1, T + 1):
        rows = sympy.Matrix(formula_value(F["rows"], {**vals, "w": ws[t]}))
        q = formula_value(F["query"], {**vals, "w": ws[t]})
        q = q[0, 0] if isinstance(q, sympy.MatrixBase) else q
        out.append((t, Zs[t][d, :n], Zs[t][d, n], rows, q, Zs[t][:d, :] == Z[:d, :]))
    return out


def prop31_symbolic(ctx: Context) -> TierResult:
    """Eq. (9) as a polynomial identity: fully symbolic prompts (d = 2, n = 3) for two loops, and
    for three loops with random rational prompts and a symbolic A."""
    F = ctx.formulas
    d, n = 2, 3
    a = sympy.symbols("a00 a01 a11")
    A = sympy.Matrix([[a[0], a[1]], [a[1], a[2]]])
    rng = ctx.rng("prop31-ce")
    subs_prompt = _prop31_prompt(d, n, rng)
    subs = dict(zip(list(_prop31_prompt(d, n, None)[0]) + list(_prop31_prompt(d, n, None)[1])
                    + list(_prop31_prompt(d, n, None)[2]),
                    list(subs_prompt[0]) + list(subs_prompt[1]) + list(subs_prompt[2])))
    subs.update({ai: sympy.Rational(int(rng.integers(-3, 4)), 2) for ai in a})
    findings = []
    cases = [("symbolic prompt", _prop31_prompt(d, n, None), 2),
             ("rational prompt", _prop31_prompt(d, n, ctx.rng("prop31-prompt")), 3)]
    for label, (X, y, xq), T in cases:
        for t, m_rows, m_q, rows, q, top in _prop31_compare(F, X, y, xq, A, T):
            if label == "rational prompt" and t < T:
                continue
            ok = (sympy.expand(m_rows - rows) == sympy.zeros(1, n)
                  and sympy.expand(m_q - q) == 0 and top)
            ce = None
            if not ok:
                ce = {"loop": t, "prompt": label, "sizes": {"d": d, "n": n},
                      "instance": {str(k): str(v) for k, v in subs.items()},
                      "transformer_query": str(sympy.expand(m_q).subs(subs)),
                      "gd_query": str(sympy.expand(q).subs(subs)),
                      "transformer_rows": str(m_rows.subs(subs).tolist()),
                      "gd_rows": str(rows.subs(subs).tolist())}
            findings.append(Finding(f"loop_{t}_{label.split()[0]}", ok, {"loops": t,
                                                                         "prompt": label}, ce,
                                    "" if ok else f"after {t} loops the prompt's last row is not "
                                                  f"eq. (9) at the GD iterate"))
    # the value the paper gives for grad l(0), against the derivative of the named loss
    X, y, xq = _prop31_prompt(d, n, None)
    vals = {"X": X, "y": y, "x_q": xq, "n": n, "d": d}
    ws_sym = sympy.Matrix(sympy.symbols(f"w_0:{d}"))
    ell = formula_value(F["ell"], {**vals, "w": ws_sym})
    ell = ell[0, 0] if isinstance(ell, sympy.MatrixBase) else ell
    g0 = sympy.Matrix([sympy.diff(ell, wi) for wi in ws_sym]).subs({wi: 0 for wi in ws_sym})
    named = sympy.Matrix(formula_value(F["grad0"], vals))
    ok = sympy.expand(g0 - named) == sympy.zeros(d, 1)
    findings.append(Finding("gradient_at_zero", ok, {"derivative_of_ell_at_0": str(g0.T),
                                                     "named_grad0": str(named.T)},
                            None if ok else {"instance": {str(k): str(v) for k, v in subs.items()},
                                             "derivative": str(g0.subs(subs).T),
                                             "paper": str(named.subs(subs).T)},
                            "" if ok else "grad l(0) is not the printed value"))
    steps = [step("Forward pass, P and Q of eq. (5)",
                  r"[Z^{(t)}]_{d+1,:} = [Z^{(t-1)}]_{d+1,:} - \tfrac1n\, y^{(t-1)\top}X^\top A"
                  r"\begin{bmatrix}X & x_q\end{bmatrix}",
                  "lsa_forward (step -1) on sympy matrices with symbolic X, y, x_q and symmetric "
                  "A; the top d rows stay [X, x_q]."),
             step("GD iterates", r"w_{t+1} = w_t - \tfrac1n A\nabla\ell(w_t)",
                  "From the named loss (differentiated by sympy), update and start; eq. (9) is "
                  "compared entrywise: symbolic prompts for t = 1, 2, random rational prompts "
                  "(symbolic A) for t = 3.")]
    return combine(findings, steps=steps)


PROP3_1 = Claim(
    id="gatmiry2024.prop3_1",
    title="Expressivity: the looped transformer with (5) runs preconditioned gradient descent",
    paper=PAPER,
    statement=r"With $Q=\begin{bmatrix}A&0\\0&0\end{bmatrix}$, $P=\begin{bmatrix}0&0\\0&1"
              r"\end{bmatrix}$ (eq. (5)), $[Z^{(t)}]_{d+1,1:n}=y^\top-w_t^\top X$ and "
              r"$[Z^{(t)}]_{d+1,n+1}=-w_t^\top x_q$ (eq. (9)) where $w_{t}=w_{t-1}-\frac1n A"
              r"\nabla_w\ell_2^2(w_{t-1})$, $w_0=0$, $\ell_2^2(w)=\|X^\top w-y\|^2$ and "
              r"$\nabla_w\ell_2^2(0)=Xy$.",
    assumptions=("any prompt Z_0 = [[X, x_q], [y^T, 0]]", "A symmetric"),
    formulas=PROP31_FORMULAS,
    checks={"symbolic": prop31_symbolic},
    setting=LOSS_SETTING,
    correction=Correction(
        description="l(w) = ||X^T w - y||^2 / 2, so that grad l(0) = -X y and w_1 = (1/n) A X y",
        reason="grad ||X^T w - y||^2 = 2 X (X^T w - y) is -2 X y at 0, not X y; with step 1/n "
               "the forward pass is GD on half the squared loss (equivalently step 1/(2n) on "
               "l_2^2)",
        formulas={"ell": "(X.T*w - y).T*(X.T*w - y)/2", "grad0": "-X*y"}),
    notes="Sec. 3.2 prints l_2^2(w) = ||X^T w* - y||^2 (w* for w); eq. (6) omits the 1/n that "
          "eq. (7) has.",
)


# ==============================================================================================
# Moment bounds: Lemmas 4.2, A.2, A.5 (E[(W/n)^k]) and 4.3, A.7 (E[(I - W/n)^k])
# ==============================================================================================
from fractions import Fraction  # noqa: E402


@dataclass(frozen=True)
class BoundCase:
    """One instance of a moment bound: sizes and the spectrum of the covariance (descending)."""

    d: int
    L: int
    k: int
    n: int
    eigs: tuple
    flat: bool = False  # Sigma~ = eigs[0] I: one eigenvalue, d-fold
    counts: tuple | None = None  # how often each of eigs occurs (None: once each)

    def as_dict(self) -> dict:
        if self.flat:
            spectrum = {"eigenvalues": f"{self.eigs[0]} ({self.d}-fold)"}
        elif self.counts:
            spectrum = {"eigenvalues": [f"{v} ({c}-fold)" for v, c in zip(self.eigs, self.counts)]}
        else:
            spectrum = {"eigenvalues": [str(v) for v in self.eigs]}
        return {"d": self.d, "L": self.L, "k": self.k, "n": self.n, **spectrum}


@lru_cache(maxsize=None)
def _moment_terms(k: int) -> tuple:
    return tuple(wishart.moment(k).terms.items())


def _integer_spectrum(eigs: tuple) -> tuple[list[int], int]:
    """eigs = a / q with integers a and one common denominator q."""
    q = math.lcm(*[Fraction(v).denominator for v in eigs])
    return [int(Fraction(v) * q) for v in eigs], q


@lru_cache(maxsize=8192)  # bounded: at n = 10^100 each entry holds integers of thousands of digits
def _moment_numerators(k: int, eigs: tuple, n: int) -> tuple:
    """I_j with alpha_j = I_j / (n q)^k: E[W^k] = sum c n^e p_mu Sigma^s has degree |mu| + s = k,
    so at Sigma = diag(a / q) every term is an integer over q^k."""
    a, q = _integer_spectrum(eigs)
    p: dict = {}
    out = []
    for aj in a:
        total = 0
        for (s_, mu, e), c in _moment_terms(k):
            term = c * n ** e * aj ** s_
            for part in mu:
                if part not in p:
                    p[part] = sum(v ** part for v in a)
                term *= p[part]
            total += term
        out.append(total)
    return tuple(out)


@lru_cache(maxsize=8192)
def moment_eigenvalues(k: int, eigs: tuple, n: int) -> list[Fraction]:
    """The eigenvalues alpha_j of E[(W/n)^k], W ~ Wishart(n, diag(eigs)), exactly: E[W^k] =
    sum c n^e p_mu Sigma^s is a polynomial in Sigma (same eigenvectors)."""
    _, q = _integer_spectrum(eigs)
    den = (n * q) ** k
    return [Fraction(v, den) for v in _moment_numerators(k, eigs, n)]


@lru_cache(maxsize=None)
def _flat_coefficients(k: int, d: int) -> tuple[tuple[int, int], ...]:
    """(e, C_e) with E[W^k] = sum_e C_e n^e I at Sigma = I: p_mu(I) = d^{len(mu)}."""
    out: dict = {}
    for (_, mu, e), c in _moment_terms(k):
        out[e] = out.get(e, 0) + int(c) * d ** len(mu)
    return tuple(sorted(out.items()))


@lru_cache(maxsize=65536)
def _flat_numerator(k: int, d: int, n: int) -> int:
    """n^k alpha_I = sum_e C_e n^e, an integer."""
    return sum(c * n ** e for e, c in _flat_coefficients(k, d)) if k else 1


def flat_alpha(k: int, s: Fraction, d: int, n: int) -> Fraction:
    """The eigenvalue of E[(W/n)^k], W ~ Wishart(n, s I_d), exactly, for any d: s^k alpha_I with
    alpha_I = sum_e C_e n^(e - k) (Lemma A.2's alpha_{n,d,k})."""
    s = Fraction(s)
    return _flat_alpha(k, s.numerator, s.denominator, d, n)


def flat_beta(k: int, s: Fraction, d: int, n: int) -> Fraction:
    """The eigenvalue of E[(I - W/n)^k] at Sigma~ = s I_d: sum_j C(k, j) (-1)^j alpha_j, over the
    common denominator (q n)^k with s = a / q."""
    s = Fraction(s)
    return _flat_beta(k, s.numerator, s.denominator, d, n)


@lru_cache(maxsize=4096)
def _level_coefficients(k: int, a: Fraction, b: Fraction, top: int, d: int) -> tuple:
    """(e, C_e) with the eigenvalue of E[W^k] at eigenvalue b equal to sum_e C_e n^e, for the
    spectrum a (top-fold), b ((d - top)-fold): p_m = top a^m + (d - top) b^m."""
    out: dict = {}
    for (s_, mu, e), c in _moment_terms(k):
        v = Fraction(c) * b ** s_
        for part in mu:
            v *= top * a ** part + (d - top) * b ** part
        out[e] = out.get(e, 0) + v
    return tuple(sorted(out.items()))


def level_alpha(k: int, a: Fraction, b: Fraction, top: int, d: int, n: int) -> Fraction:
    """alpha^(j) at lambda_j = b for Sigma~ with two eigenvalue levels, a (top-fold) and b
    ((d - top)-fold), for any d: sum_e C_e n^(e - k)."""
    if k == 0:
        return Fraction(1)
    return sum(c * n ** e for e, c in _level_coefficients(k, a, b, top, d)) / Fraction(n) ** k


def level_beta(k: int, a: Fraction, b: Fraction, top: int, d: int, n: int) -> Fraction:
    """beta^(j) = sum_i C(k, i) (-1)^i alpha_i^(j) at the same two-level spectrum."""
    return sum(math.comb(k, i) * (-1) ** i * level_alpha(i, a, b, top, d, n) for i in range(k + 1))


# cached on integers: hashing a Fraction key was a visible share of the flat search
@lru_cache(maxsize=65536)
def _flat_alpha(k: int, a: int, q: int, d: int, n: int) -> Fraction:
    return Fraction(a ** k * _flat_numerator(k, d, n), (q * n) ** k)


@lru_cache(maxsize=65536)
def _flat_beta(k: int, a: int, q: int, d: int, n: int) -> Fraction:
    num = sum(math.comb(k, j) * (-a) ** j * (q * n) ** (k - j) * _flat_numerator(j, d, n)
              for j in range(k + 1))
    return Fraction(num, (q * n) ** k)


@lru_cache(maxsize=8192)
def centred_eigenvalues(k: int, eigs: tuple, n: int) -> list[Fraction]:
    """The eigenvalues beta_i of E[(I - W/n)^k] = sum_j C(k, j) (-1)^j E[(W/n)^j]."""
    _, q = _integer_spectrum(eigs)
    nq = n * q
    nums = [nq ** k] * len(eigs)
    for j in range(1, k + 1):
        c = math.comb(k, j) * (-1) ** j * nq ** (k - j)
        nums = [o + c * v for o, v in zip(nums, _moment_numerators(j, eigs, n))]
    return [Fraction(v, nq ** k) for v in nums]


_BOUND_ARGS = ("n", "d", "L", "k", "lambda_j", "lambda_1", "delta")


class BoundForms:
    """The named bounds (``lower``, ``upper``, ``delta``, ``hypothesis``) of a moment lemma, in
    float64 over a grid of n (numpy) and exactly (to decide a case and print a counterexample)."""

    def __init__(self, F: Mapping[str, sympy.Basic]) -> None:
        self.F = F
        syms = {name: sympy.Symbol(name, positive=True) for name in _BOUND_ARGS}
        for size in ("n", "d", "L", "k"):
            syms[size] = sympy.Symbol(size, positive=True, integer=True)
        self.syms = syms
        order = [syms[a] for a in _BOUND_ARGS]
        self._delta = sympy.lambdify(order[:4], F["delta"], "numpy") if "delta" in F else None
        self._lower = sympy.lambdify(order, F["lower"], "numpy")
        self._upper = sympy.lambdify(order, F["upper"], "numpy")
        h = F.get("hypothesis")
        self._hyp = sympy.lambdify(order[:4], h, "numpy") if h is not None else None
        self._mp = {name: sympy.lambdify(order if name != "delta" else order[:4], F[name],
                                         "mpmath")
                    for name in ("lower", "upper", "delta") if name in F}
        # exact values through sympy functions: much faster than .subs on the expression tree
        self._exact = {name: sympy.lambdify(order if name != "delta" else order[:4], F[name],
                                            "sympy")
                       for name in ("lower", "upper", "delta") if name in F}

    def _mp_at(self, c: BoundCase, j: int, side: str):
        """The bound on ``side`` at the case, at the caller's mpmath precision."""
        vals = [mpmath.mpf(c.n), mpmath.mpf(c.d), mpmath.mpf(c.L), mpmath.mpf(c.k),
                mpmath.mpf(c.eigs[j].numerator) / c.eigs[j].denominator,
                mpmath.mpf(c.eigs[0].numerator) / c.eigs[0].denominator]
        delta = self._mp["delta"](*vals[:4]) if "delta" in self._mp else mpmath.mpf(0)
        return self._mp[side](*vals, delta)

    def mp_slack(self, c: BoundCase, j: int, v: Fraction, side: str, digits: int = 60):
        """The slack (upper - v or v - lower) in mpmath at ``digits`` digits, and its scale."""
        with mpmath.workdps(digits):
            bound = self._mp_at(c, j, side)
            vm = mpmath.mpf(v.numerator) / v.denominator
            slack = bound - vm if side == "upper" else vm - bound
            return slack, max(abs(bound), abs(vm), mpmath.mpf(10) ** (-digits))

    def mp_value(self, c: BoundCase, j: int, side: str, digits: int = 30):
        """The bound on ``side`` in mpmath (an mpc where it is not a real number)."""
        with mpmath.workdps(digits):
            return self._mp_at(c, j, side)

    def mp_bounds(self, c: BoundCase, j: int, digits: int = 30) -> tuple[str, str]:
        """(lower, upper) at the case to ``digits`` digits, as text."""
        with mpmath.workdps(digits + 10):
            return tuple(mpmath.nstr(self._mp_at(c, j, side), digits)
                         for side in ("lower", "upper"))

    def hypothesis(self, ns: np.ndarray, d: int, L: int, k: int) -> np.ndarray:
        if self._hyp is None:
            return np.ones(len(ns), dtype=bool)
        return np.broadcast_to(np.asarray(self._hyp(ns, d, L, k), dtype=bool), ns.shape)

    def float_bounds(self, ns: np.ndarray, d: int, L: int, k: int, lam_j: float, lam_1: float):
        # numpy scalars: lambda_1^d at lambda_1 = 10, d = 10^8 is inf, where a float raises
        lam_j, lam_1 = np.float64(lam_j), np.float64(lam_1)
        with np.errstate(all="ignore"):
            delta = self._delta(ns, d, L, k) if self._delta is not None else 0.0
            lo = np.broadcast_to(np.asarray(self._lower(ns, d, L, k, lam_j, lam_1, delta),
                                            dtype=float), ns.shape)
            up = np.broadcast_to(np.asarray(self._upper(ns, d, L, k, lam_j, lam_1, delta),
                                            dtype=float), ns.shape)
        return lo, up

    def exact_holds(self, c: BoundCase, j: int, value: sympy.Rational, side: str) -> bool | None:
        """Whether the bound on ``side`` holds for ``value``, for a case within 10^-50: at 400
        digits when that settles it, else exactly (that side only: the other may hold a radical
        whose exact form makes sympy factor 20-digit integers); None when neither can (a power
        too large to expand, a sign exact_sign cannot settle), counted as undecided, never as a
        violation."""
        slack, scale = self.mp_slack(c, j, Fraction(int(value.p), int(value.q)), side, digits=400)
        if abs(slack) > scale * mpmath.mpf(10) ** -370:
            return bool(slack > 0)
        bound = self.exact_bound(c, j, side)
        if bound is None:
            return None
        try:
            return li.exact_le(value, bound) if side == "upper" else li.exact_le(bound, value)
        except ArithmeticError:
            return None

    def exact_bound(self, c: BoundCase, j: int, side: str) -> sympy.Expr | None:
        """The bound on ``side`` exactly, or None when it raises an irrational number to a power
        beyond EXACT_MAX_EXPONENT (delta^n at n = 2^40: sympy would expand it for hours)."""
        lam_j, lam_1 = c.eigs[j], c.eigs[0]
        vals = [sympy.Integer(c.n), sympy.Integer(c.d), sympy.Integer(c.L), sympy.Integer(c.k),
                sympy.Rational(lam_j.numerator, lam_j.denominator),
                sympy.Rational(lam_1.numerator, lam_1.denominator)]
        uses_delta = self.syms["delta"] in self.F[side].free_symbols and "delta" in self.F

        def value(evaluate: bool) -> sympy.Expr:
            with sympy.evaluate(evaluate):
                delta = self._exact["delta"](*vals[:4]) if uses_delta else sympy.Integer(0)
                return sympy.sympify(self._exact[side](*vals, delta))

        return None if _huge_power(value(False)) else value(True)


EXACT_MAX_EXPONENT = 4096


def _huge_power(expr: sympy.Basic) -> bool:
    """A power of a non-integer base with a numeric exponent beyond EXACT_MAX_EXPONENT."""
    for p in expr.atoms(sympy.Pow):
        e = p.exp
        if e.is_number and not p.base.is_Integer and abs(float(sympy.N(e, 15))) > EXACT_MAX_EXPONENT:
            return True
    return False


def _n_grid(d: int, k: int, L: int) -> list[int]:
    """Every n from 1 to 48, powers of 2 up to 2^40, and the paper's thresholds."""
    pts = set(range(1, 49)) | {2 ** e for e in range(6, 41)}
    for t in (4 * k * k * d * d, 16 * k * k * d * d, 64 * L * L * d * d, (8 * L * d * d * 4 ** L) ** 2):
        pts |= {t, t + 1}
    return sorted(pts)


WIDE_DIMS = (1, 2, 3, 5, 10, 100, 10 ** 4, 10 ** 8)
WIDE_LOOPS = (*range(1, 9), 16)  # k = 1..min(2L, WIDE_K) at each
WIDE_K = 16


def _wide_n_grid(d: int, k: int, L: int) -> list[int]:
    """``_n_grid`` and powers of 10 up to 10^40, for ``flat_search`` at d up to 10^8 (not beyond
    10^40: the threshold (8 L d^2 4^L)^2 at L = 16, d = 10^8 is 10^55)."""
    grid = set(_n_grid(d, k, L)) | {10 ** e for e in (*range(1, 13), *range(13, 41, 3))}
    return sorted(n for n in grid if n <= 10 ** 40)


def _spectra(d: int, scales: Sequence = (Fraction(1),), rng: np.random.Generator | None = None):
    """Spectra with lambda_1 = scale: flat (the worst case of the upper bounds of Lemma 4.2),
    geometric, and one random rational spectrum."""
    base = [tuple(Fraction(1) for _ in range(d)),
            tuple(Fraction(1, 2 ** i) for i in range(d)),
            tuple(Fraction(1, 10 ** i) for i in range(d))]
    if rng is not None and d > 1:
        base.append(tuple(sorted([Fraction(1)] + [Fraction(int(rng.integers(1, 10)), 10)
                                                  for _ in range(d - 1)], reverse=True)))
    out = []
    for sc in scales:
        for b in dict.fromkeys(base):
            out.append(tuple(sc * v for v in b))
    return out


@dataclass
class BoundSearch:
    """What a search over (d, L, k, n, spectrum) found for one set of named bounds."""

    checked: int = 0
    skipped_by_hypothesis: int = 0
    violations: int = 0
    first: dict | None = None
    closest: tuple | None = None  # (relative slack, case, j, side)
    holds_from: dict = None  # "d,L,k" -> smallest grid n from which every larger grid n holds
    undecided: int = 0  # cases within 10^-50 whose exact bound is a power too large to evaluate
    float_only: int = 0  # violations after the first counted in float64 (relative slack < -1e-6)

    def as_dict(self) -> dict:
        out = {"instances_checked": self.checked, "skipped_by_hypothesis": self.skipped_by_hypothesis,
               "violations": self.violations}
        if self.float_only:
            out["violations_counted_in_float64_after_the_first"] = self.float_only
        if self.undecided:
            out["undecided_not_counted"] = self.undecided
        if self.closest is not None:
            slack, case, j, side = self.closest
            out["closest_approach"] = {"relative_slack": float(slack), "side": side, "j": j + 1,
                                       **case.as_dict()}
        if self.holds_from is not None:
            out["smallest_n_from_which_it_holds_on_the_grid"] = self.holds_from
        return out


_moment_cache: dict = {}


def _quantity(quantity: Callable, k: int, eigs: tuple, n: int) -> list:
    key = (quantity.__name__, k, eigs, n)
    if key not in _moment_cache:
        _moment_cache[key] = quantity(k, eigs, n)
    return _moment_cache[key]


def bound_search(forms: BoundForms, quantity: Callable, dims: Sequence[int], loops: Sequence[int],
                 ks: Callable[[int], Sequence[int]], spectra: Callable[[int], list],
                 grid: Callable = _n_grid) -> BoundSearch:
    """Check lower <= quantity_j <= upper at every case the hypothesis admits: float64 over the
    grid, and exactly (``looped_icl.exact_sign``) wherever the relative slack is below 1e-9."""
    res = BoundSearch(holds_from={})
    for d in dims:
        specs = spectra(d)
        for L in loops:
            for k in ks(L):
                ns = _admitted(res, forms, grid(d, k, L), d, L, k, len(specs))
                if not ns:
                    continue
                bad = np.zeros(len(ns), dtype=bool)
                for eigs in specs:
                    vals = [_quantity(quantity, k, eigs, n) for n in ns]
                    res.checked += len(ns)
                    for j in range(d):
                        bad |= _check_row(res, forms, [BoundCase(d, L, k, n, eigs) for n in ns],
                                          [v[j] for v in vals], j)
                _holds_from(res, ns, bad, f"d={d},L={L},k={k}")
    return res


def flat_search(forms: BoundForms, flat: Callable, dims: Sequence[int], loops: Sequence[int],
                scales: Sequence) -> BoundSearch:
    """``bound_search`` at flat spectra Sigma~ = s I (lambda_j = lambda_1 = s) of any size d: the
    moment is then a polynomial in n and d (``flat(k, s, d, n)``), so d may be 10^8 and n 10^40,
    where a condition on n, d and k that differs from the printed one first admits a case."""
    res = BoundSearch()
    for d in dims:
        for L in loops:
            for k in range(1, min(2 * L, WIDE_K) + 1):
                ns = _admitted(res, forms, _wide_n_grid(d, k, L), d, L, k, len(scales))
                if not ns:
                    continue
                for s in scales:
                    res.checked += len(ns)
                    _check_row(res, forms, [BoundCase(d, L, k, n, (s,), flat=True) for n in ns],
                               [flat(k, s, d, n) for n in ns], 0)
    return res


LEVEL_DIMS = (2, 3, 10, 1000)
LEVEL_LOOPS = (1, 2, 3)
# (lambda_1, lambda_j): a large top eigenvalue over a small one, where the terms in the traces
# p_mu (the other eigenvalues) outweigh a slack written in lambda_j
LEVEL_PAIRS = ((Fraction(1000), Fraction(10)), (Fraction(100), Fraction(1)),
               (Fraction(1000), Fraction(1, 10)))


def level_search(forms: BoundForms, level: Callable, dims: Sequence[int] = LEVEL_DIMS,
                 loops: Sequence[int] = LEVEL_LOOPS, pairs: Sequence = LEVEL_PAIRS) -> BoundSearch:
    """``bound_search`` at spectra with two levels, lambda_1 = a (once, or d - 1 times) and
    lambda_j = b (the rest), ``level(k, a, b, top, d, n)`` the eigenvalue at b: exact for any d,
    with lambda_1 / lambda_j up to 10^4, beyond the small grid's spectra (lambda_1 <= 4)."""
    res = BoundSearch()
    for d in dims:
        tops = sorted({1, d - 1})
        for L in loops:
            for k in range(1, 2 * L + 1):
                ns = _admitted(res, forms, _n_grid(d, k, L), d, L, k, len(pairs) * len(tops))
                if not ns:
                    continue
                for a, b in pairs:
                    for top in tops:
                        res.checked += len(ns)
                        _check_row(res, forms, [BoundCase(d, L, k, n, (a, b), counts=(top, d - top))
                                                for n in ns],
                                   [level(k, a, b, top, d, n) for n in ns], 1)
    return res


def _admitted(res: BoundSearch, forms: BoundForms, grid: list[int], d: int, L: int, k: int,
              spectra: int) -> list[int]:
    """The grid's n that the hypothesis admits; the others are counted as skipped."""
    ns_all = np.array(grid, dtype=float)
    admit = forms.hypothesis(ns_all, d, L, k)
    res.skipped_by_hypothesis += int((~admit).sum()) * spectra
    return [n for n, a in zip(grid, admit) if a]


def _holds_from(res: BoundSearch, ns: list[int], bad: np.ndarray, key: str) -> None:
    last_bad = max((n for n, b in zip(ns, bad) if b), default=None)
    after = [n for n in ns if last_bad is None or n > last_bad]
    res.holds_from[key] = after[0] if after else None


FLOAT_CLEAR = 1e-6  # a relative slack float64 cannot get wrong in sign (bounds of a few terms)


def _check_row(res: BoundSearch, forms: BoundForms, cases: list[BoundCase], vals: list,
               j: int) -> np.ndarray:
    """Check lower <= vals[i] <= upper for eigenvalue j of cases[i] (cases of one d, L, k and
    spectrum over n): float64, then at 60 digits and exactly near a tie.  Records the closest
    approach and the first violation in ``res``; returns which cases fail."""
    c0 = cases[0]
    ns = np.array([c.n for c in cases], dtype=float)
    bad = np.zeros(len(cases), dtype=bool)
    q = np.array([float(v) for v in vals])
    lo, up = forms.float_bounds(ns, c0.d, c0.L, c0.k, float(c0.eigs[j]), float(c0.eigs[0]))
    for side, slack, bound in (("upper", up - q, up), ("lower", q - lo, lo)):
        # the scale of this side only: a huge bound on the other side would make every entry
        # here look like a near tie and send it to mpmath
        scale = np.maximum.reduce([np.abs(q), np.abs(bound), np.full(len(q), 1e-300)])
        with np.errstate(all="ignore"):
            rel = np.where(np.isfinite(slack), slack / scale, np.inf)
            # a bound past float64 keeps its side (an upper bound of -inf fails); a bound that is
            # nan may not be a real number: both are decided in mpmath below
            rel = np.where(np.isinf(slack), np.sign(slack) * np.inf, rel)
            rel = np.where(np.isnan(slack), -np.inf, rel)
        finite = np.flatnonzero(np.isfinite(rel))
        if len(finite):
            i_min = int(finite[np.argmin(rel[finite])])
            if res.closest is None or rel[i_min] < res.closest[0]:
                res.closest = (float(rel[i_min]), cases[i_min], j, side)
        for i in np.flatnonzero(rel <= 1e-9):
            c, v = cases[i], vals[i]
            if res.first is not None and rel[i] < -FLOAT_CLEAR:
                # one violation is confirmed already: a clear float64 one is counted unconfirmed
                bad[i] = True
                res.violations += 1
                res.float_only += 1
                continue
            slack_mp, scale_mp = forms.mp_slack(c, j, v, side)
            slack_mp = _finite_real(slack_mp)
            if slack_mp is None:  # the bound is complex or nan here (float64 may not show it)
                bad[i] = True
                res.violations += 1
                if res.first is None:
                    res.first = {**c.as_dict(), "j": j + 1, "side": side, "quantity": str(v),
                                 "quantity_float": float(v),
                                 "bound": mpmath.nstr(forms.mp_value(c, j, side), 15),
                                 "not_a_real_number": True}
                continue
            tol = scale_mp * mpmath.mpf(10) ** -50
            if slack_mp > tol:
                continue
            ev = sympy.Rational(v.numerator, v.denominator)
            if slack_mp >= -tol:  # within 10^-50: decided exactly
                holds = forms.exact_holds(c, j, ev, side)
                if holds is None:
                    res.undecided += 1
                    continue
                if holds:
                    continue
            bad[i] = True
            res.violations += 1
            if res.first is None:
                lo_mp, up_mp = forms.mp_bounds(c, j)
                res.first = {**c.as_dict(), "j": j + 1, "side": side, "quantity": str(ev),
                             "quantity_float": float(ev), "lower": lo_mp, "upper": up_mp,
                             "slack_60_digits": mpmath.nstr(slack_mp, 15)}
    return bad


def _finite_real(x):
    """x as a finite mpf, or None when it is complex, nan or infinite."""
    if isinstance(x, mpmath.mpc):
        if x.imag != 0:
            return None
        x = x.real
    return x if mpmath.isfinite(x) else None


def _search_finding(name: str, res: BoundSearch, what: str) -> Finding:
    ok = res.violations == 0
    if res.checked == 0:
        return Finding(name, None, res.as_dict(), reason="the hypothesis admits no case of the grid")
    return Finding(name, ok, res.as_dict(), None if ok else {"instance": res.first,
                                                            "violations": res.violations},
                   "" if ok else f"{what} fails at n = {res.first['n']}, d = {res.first['d']}, "
                                 f"k = {res.first['k']}"
                                 + (" (the bound is not a real number there)"
                                    if res.first.get("not_a_real_number") else ""))


def _reading_summary(F, readings: Mapping[str, str], search: Callable) -> dict:
    """Run the search once per reading of delta; how many violations each gives."""
    out = {}
    for label, text in readings.items():
        G = dict(F)
        G["delta"] = sympy.sympify(text, locals={"n": sympy.Symbol("n", positive=True, integer=True),
                                                 "d": sympy.Symbol("d", positive=True, integer=True),
                                                 "L": sympy.Symbol("L", positive=True, integer=True),
                                                 "k": sympy.Symbol("k", positive=True, integer=True)})
        res = search(BoundForms(G))
        out[label] = {"delta": text, "violations": res.violations, "checked": res.checked,
                      "first_violation": res.first}
    return out


DELTA_READINGS = {
    "Sec. 3.5: delta = (8 L d / sqrt(n))^(1/(2L))": "(8*L*d/sqrt(n))**(1/(2*L))",
    "remark after Thm. 3.2: delta = 4 k d / sqrt(n)": "4*k*d/sqrt(n)",
    "Lemma A.7: delta^k = 4 k d / sqrt(n)": "(4*k*d/sqrt(n))**(1/k)",
}

MOMENT_SETTING = _setting({"n": 16, "d": 3, "L": 2})
_BOUND_SYMBOLS = (_N, _D, _L, _K, _LAM_J, _LAM_1, _DELTA)


def _moment_dims(ctx) -> tuple:
    return _by_budget(ctx, (1, 2, 3), (1, 2, 3, 4), (1, 2, 3, 4, 5))


def _moment_loops(ctx) -> tuple:
    return _by_budget(ctx, (1, 2), (1, 2, 3), (1, 2, 3, 4))


FLAT_SCALES = (Fraction(1, 10), Fraction(1), Fraction(10))


def _moment_symbolic(ctx: Context, quantity, what: str, flat: Callable, scales=(Fraction(1),),
                     flat_scales=FLAT_SCALES, readings: bool = False,
                     identity_only: bool = False, proofs: Sequence[Finding] = (),
                     level: Callable | None = None) -> TierResult:
    """The moment lemmas' symbolic tier: ``bound_search`` over small d and several spectra, then
    ``flat_search`` at flat spectra Sigma~ = s I (``flat``: the eigenvalue at s I_d) with d up to
    10^8, L up to 16, k up to 16 and n up to 10^40, scales ``flat_scales``; ``proofs`` are
    findings that rebuild a bound's proof (``lower_envelope_finding``)."""
    F = ctx.formulas
    forms = BoundForms(F)
    rng = ctx.rng("spectra")
    specs_cache: dict = {}

    def spectra(d):
        if d not in specs_cache:
            specs_cache[d] = ([tuple(sc for _ in range(d)) for sc in scales] if identity_only
                              else _spectra(d, scales, rng))
        return specs_cache[d]

    def search(fm):
        return bound_search(fm, quantity, _moment_dims(ctx), _moment_loops(ctx),
                            lambda L: range(1, 2 * L + 1), spectra)

    res = search(forms)
    wide = flat_search(forms, flat, WIDE_DIMS, WIDE_LOOPS, flat_scales)
    findings = [_search_finding("bound_search", res, what),
                _search_finding("flat_spectrum_search", wide, what), *proofs]
    if level is not None:
        findings.append(_search_finding("two_level_search", level_search(forms, level), what))
    extra = {"grid": "d in %s, L in %s, k = 1..2L, n = 1..48, powers of 2 up to 2^40 and the "
                     "thresholds 4k^2d^2, 16k^2d^2, 64L^2d^2, (8Ld^2 4^L)^2; spectra with "
                     "lambda_1 = %s" % (list(_moment_dims(ctx)), list(_moment_loops(ctx)),
                                        [str(s) for s in scales]),
             "flat_grid": "Sigma~ = s I_d with s in %s, d in %s, L in %s, k = 1..min(2L, 16), the "
                          "grid's n "
                          "and the powers of 10 up to 10^40" % (
                              [str(s) for s in flat_scales], list(WIDE_DIMS), list(WIDE_LOOPS))}
    if readings:
        extra["delta_readings"] = _reading_summary(F, DELTA_READINGS, search)
    return combine(findings, extra)


LOWER_ENVELOPE_SOURCE = ("alpha^(j) >= lambda_j^k (the Wishart moments' coefficients are "
                         "non-negative: the symbolic tier's lower_envelope)")


MOMENT_EXACT_MAX_K = 10


def _sizes_of(point: Mapping, names: Sequence[str]) -> tuple[int, ...] | None:
    """Integer sizes of an ExactValues point (None if one is not a positive integer)."""
    out = []
    for name in names:
        v = point[name]
        if v != int(v) or v < 1:
            return None
        out.append(int(v))
    return tuple(out)


def _term_ranges(k: int, n, d: int, lam_j, lam_1):
    """(c n^(e-k) lambda_j^s, low, top) for each term of alpha^(j) = sum c n^(e-k) p_mu(Sigma~)
    lambda_j^s, with p_mu between its values at the d - 2 other eigenvalues at 0 (low) and at
    lambda_1 (top): p_mu grows with every eigenvalue (when lambda_j = lambda_1 it may be
    lambda_1 itself, j = 1, with all d - 1 others at 0)."""
    alone = lam_j == lam_1
    for (s_, mu, e), c in _moment_terms(k):
        coef, top, low = c * n ** (e - k) * lam_j ** s_, mpmath.mpf(1), mpmath.mpf(1)
        for part in mu:
            top *= lam_j ** part + (d - 1) * lam_1 ** part
            low *= lam_j ** part + (0 if alone else lam_1 ** part)
        yield coef, low, top


def _alpha_extremes(k: int, n: int, d: int, lam_j, lam_1) -> tuple:
    """(sup, inf) of alpha^(j) over spectra of size d with lambda_1 the largest eigenvalue and
    lambda_j the j-th: every coefficient is >= 0, so the sup has the others at lambda_1 and the
    inf at 0 (``_term_ranges``)."""
    with mpmath.workdps(mpmath.mp.dps + 30):
        lam_j, lam_1, nn = mpmath.mpf(lam_j), mpmath.mpf(lam_1), mpmath.mpf(n)
        hi = lo = mpmath.mpf(0)
        for coef, low, top in _term_ranges(k, nn, d, lam_j, lam_1):
            hi += coef * top
            lo += coef * low
        return +hi, +lo


def _beta_extremes(k: int, n: int, d: int, lam_j, lam_1) -> tuple:
    """Lemmas 4.3 and A.7: beta^(j) = sum_i C(k, i) (-1)^i alpha_i^(j) over the same spectra.
    Its coefficients have both signs, so it is not monotone in the other eigenvalues: returns
    (attained max, enclosure max, attained min, enclosure min), the attained values at the two
    spectra with the others at lambda_1 and at 0, the enclosure by taking each term at its
    worse end (a sound bound on the sup and inf over every spectrum)."""
    with mpmath.workdps(mpmath.mp.dps + 30):
        lam_j, lam_1, nn = mpmath.mpf(lam_j), mpmath.mpf(lam_1), mpmath.mpf(n)
        at_top = at_low = env_hi = env_lo = mpmath.mpf(0)
        for i in range(k + 1):
            sign = math.comb(k, i) * (-1) ** i
            for coef, low, top in ([(mpmath.mpf(1), mpmath.mpf(1), mpmath.mpf(1))] if i == 0
                                   else _term_ranges(i, nn, d, lam_j, lam_1)):
                c = sign * coef
                at_top, at_low = at_top + c * top, at_low + c * low
                env_hi += c * (top if c > 0 else low)
                env_lo += c * (low if c > 0 else top)
        return +max(at_top, at_low), +env_hi, +min(at_top, at_low), +env_lo


def _moment_point(point: dict) -> tuple | None:
    """(k, n, d, lambda_j, lambda_1) of an ExactValues point of the moment lemmas, or None where
    their exact values are not computed (k > MOMENT_EXACT_MAX_K, lambda_j > lambda_1, or d = 1
    with two eigenvalues)."""
    sizes = _sizes_of(point, ("n", "d", "k"))
    if sizes is None:
        return None
    n, d, k = sizes
    lam_j, lam_1 = point["lambda_j"], point["lambda_1"]
    if k > MOMENT_EXACT_MAX_K or lam_j > lam_1 or (d == 1 and lam_j != lam_1):
        return None
    return k, n, d, lam_j, lam_1


def moment_exact(point: dict) -> dict | None:
    """Lemmas 4.2 and A.5: the sup and inf of alpha^(j) at (n, d, k, lambda_j, lambda_1) for
    k <= MOMENT_EXACT_MAX_K (Lemma 4.2's k <= 2L is its Claim.ranges)."""
    args = _moment_point(point)
    if args is None:
        return None
    hi, lo = _alpha_extremes(*args)
    return {"upper": hi, "lower": lo}


def centred_exact(point: dict) -> dict | None:
    """Lemmas 4.3 and A.7: beta^(j) at (n, d, k, lambda_j, lambda_1), as (attained, enclosure)
    pairs (``_beta_extremes``), for k <= MOMENT_EXACT_MAX_K."""
    args = _moment_point(point)
    if args is None:
        return None
    att_hi, env_hi, att_lo, env_lo = _beta_extremes(*args)
    return {"upper": (att_hi, env_hi), "lower": (att_lo, env_lo)}


MOMENT_EXACT = ExactValues(moment_exact, "the sup and inf of alpha^(j) over the spectra with "
                                         "these lambda_j <= lambda_1, from the Wishart moments, at "
                                         f"k <= {MOMENT_EXACT_MAX_K}")


def identity_moment_exact(point: dict) -> dict | None:
    """Lemma A.2: alpha_{n,d,k} at Sigma = I, exactly, for k <= MOMENT_EXACT_MAX_K."""
    sizes = _sizes_of(point, ("n", "d", "k"))
    if sizes is None or sizes[2] > MOMENT_EXACT_MAX_K:
        return None
    n, d, k = sizes
    a = flat_alpha(k, Fraction(1), d, n)
    v = mpmath.mpf(a.numerator) / a.denominator
    return {"upper": v, "lower": v}


CENTRED_EXACT = ExactValues(centred_exact, "beta^(j) from the Wishart moments at the spectra with "
                                           "the other eigenvalues at lambda_1 and at 0, and an "
                                           "enclosure over every spectrum, at k <= "
                                           f"{MOMENT_EXACT_MAX_K}")


IDENTITY_EXACT = ExactValues(identity_moment_exact, "alpha_{n,d,k} at Sigma = I from the Wishart "
                                                    f"moments, k <= {MOMENT_EXACT_MAX_K}")


def _lower_envelope() -> sympy.Expr:
    """alpha^(j) >= lambda_j^k, as ``lower_envelope_finding`` derives it."""
    return sympy.Symbol("lambda_j", positive=True) ** sympy.Symbol("k", positive=True, integer=True)


# ----- Lemma A.2 -------------------------------------------------------------------------------
LEMMA_A2_FORMULAS = (
    NamedFormula("hypothesis", "n >= 4*k**2*d**2", (_N, _D, _K), equation="Lemma A.2",
                 description="the sample size condition", weaker="narrower"),
    NamedFormula("lower", "1", _BOUND_SYMBOLS, equation="Lemma A.2",
                 description="lower bound on alpha_{n,d,k}", weaker="smaller"),
    NamedFormula("upper", "1 + 4*k*d/sqrt(n)", _BOUND_SYMBOLS, equation="Lemma A.2",
                 description="upper bound on alpha_{n,d,k}", weaker="larger"),
)


def _identity_alpha(k: int, eigs, n: int) -> list[Fraction]:
    return moment_eigenvalues(k, eigs, n)


def lemma_a2_symbolic(ctx: Context) -> TierResult:
    """E[(W/n)^k] = alpha I at Sigma = I, alpha exact; the bounds on the grid, then for every real
    n above the hypothesis: (alpha - 1)^2 n <= 16 k^2 d^2 is a polynomial inequality in n."""
    r = _moment_symbolic(ctx, _identity_alpha, "the bound on alpha", flat_alpha,
                         flat_scales=(Fraction(1),), identity_only=True)
    steps = [step("Moments at the identity", r"\mathbb E[W^k] = \alpha_{n,d,k}\, n^k I,\quad "
                  r"\alpha_{n,d,2} = 1 + \tfrac{d+1}{n}",
                  "E[W^k] from the Wishart engine at Sigma = I: a polynomial in n and d times I."),
             step("Grid", "", "alpha exact (rational), the bounds in 40-digit arithmetic and "
                  "exactly near the boundary, at every n of the grid the hypothesis admits.")]
    r.steps = steps
    return r


LEMMA_A2 = Claim(
    id="gatmiry2024.lemma_a2",
    title="Moments of the Gaussian covariance at Sigma = I",
    paper=PAPER,
    statement=r"For $n\ge4k^2d^2$ and $x_i\sim\mathcal N(0,I)$, $\mathbb E[(\frac1n\sum_i "
              r"x_ix_i^\top)^k]=\alpha_{n,d,k}I$ with $1\le\alpha_{n,d,k}\le1+\frac{4kd}{\sqrt n}$.",
    assumptions=("x_i ~ N(0, I_d) i.i.d.", "n >= 4 k^2 d^2"),
    formulas=LEMMA_A2_FORMULAS,
    checks={"symbolic": lemma_a2_symbolic},
    setting=MOMENT_SETTING,
    exact=IDENTITY_EXACT,
    notes="The display prints E[(1/n) sum x_i x_i^T] without the power k.",
)

# ----- Lemma 4.2 and its restatement A.5 --------------------------------------------------------
LEMMA42_FORMULAS = (
    NamedFormula("hypothesis", "n > d", (_N, _D, _K, _L), equation="Sec. 3.2",
                 description="the paper's standing assumption (the lemma states none)",
                 weaker="narrower"),
    NamedFormula("delta", "(8*L*d/sqrt(n))**(1/(2*L))", (_N, _D, _L, _K), equation="Sec. 3.5",
                 description="delta := (8 L d / sqrt(n))^{1/(2L)}"),
    NamedFormula("lower", "lambda_j**k - delta**k*lambda_1**k", _BOUND_SYMBOLS,
                 equation="Lemma 4.2", description="lower bound on alpha^(j)", weaker="smaller",
                 proof=_lower_envelope, proof_source=LOWER_ENVELOPE_SOURCE),
    NamedFormula("upper", "lambda_j**k + delta**k*lambda_1**k", _BOUND_SYMBOLS,
                 equation="Lemma 4.2", description="upper bound on alpha^(j)", weaker="larger"),
)
HYPOTHESIS_A2 = "n >= 4*k**2*d**2"


def lemma42_symbolic(ctx: Context) -> TierResult:
    r = _moment_symbolic(ctx, moment_eigenvalues, "the bound on alpha^(j)", flat_alpha,
                         readings=True, proofs=(lower_envelope_finding(),))
    r.steps = [step("Eigenvalues", r"\mathbb E[(W/n)^k] = \sum_{s,\mu,e} c\, n^{e-k} p_\mu "
                    r"\tilde\Sigma^s \Rightarrow \alpha^{(j)} = \sum c\, n^{e-k} p_\mu \lambda_j^s",
                    "E[W^k] is a polynomial in Sigma~ with non-negative coefficients (Wishart "
                    "engine), so it has Sigma~'s eigenvectors, alpha^(j) >= lambda_j^k, and "
                    "alpha^(j) - lambda_j^k <= lambda_1^k (alpha(I) - 1): the flat spectrum is the "
                    "worst case of the upper bound."),
               step("Grid and readings of delta", "",
                    "Every case the hypothesis admits is checked (40-digit arithmetic, exact near "
                    "the boundary); the same grid is run with each of the paper's definitions of "
                    "delta.")]
    return r


LOWER_ENVELOPE_K = 16


def lower_envelope_finding() -> Finding:
    """alpha^(j) >= lambda_j^k: E[W^k] = sum c n^e p_mu Sigma^s has c >= 0 for every term and the
    term n^k Sigma^k has c = 1, so alpha^(j) = sum c n^(e-k) p_mu lambda_j^s >= lambda_j^k
    (checked on the Wishart engine's coefficients for k <= LOWER_ENVELOPE_K)."""
    negative, leading = [], []
    for k in range(1, LOWER_ENVELOPE_K + 1):
        terms = dict(_moment_terms(k))
        negative += [(k, key) for key, c in terms.items() if c < 0]
        if terms.get((k, (), k)) != 1:
            leading.append(k)
    ok = not negative and not leading
    ev = {"k": f"1..{LOWER_ENVELOPE_K}", "negative_coefficients": len(negative),
          "leading_term_not_one": leading}
    return Finding("lower_envelope", ok, ev, None if ok else {"negative": str(negative[:5]),
                                                              "leading": leading},
                   "" if ok else "a Wishart coefficient is negative or the n^k Sigma^k term is "
                                 "not 1: alpha^(j) >= lambda_j^k does not follow")


def _moment_numeric(ctx: Context, k_max: int = 4) -> TierResult:
    """E[(W/n)^k] from the engine against Monte Carlo of sampled Wishart matrices."""
    rng = ctx.rng("moment-mc")
    d, n = 3, _size(ctx, MOMENT_SETTING, "n")
    eigs = (Fraction(1), Fraction(1, 2), Fraction(1, 5))
    U = np.array(cayley_orthogonal(d, rng).tolist(), dtype=float)
    S = U @ np.diag([float(v) for v in eigs]) @ U.T
    samples = ctx.budget.mc_samples
    gen = np.random.default_rng(ctx.seed_for("moment-mc-draws"))
    rows, ok = [], True
    comps = k_max * d
    sums = np.zeros((k_max, d))
    sq = np.zeros((k_max, d))
    done = 0
    chol = np.linalg.cholesky(S)
    while done < samples:
        m = min(20_000, samples - done)
        X = chol @ gen.standard_normal((m, d, n))
        Wn = X @ np.swapaxes(X, 1, 2) / n
        P = np.eye(d)[None].repeat(m, 0)
        for k in range(k_max):
            P = P @ Wn
            vals = np.einsum("ij,mjk,ki->mi", U.T, P, U)  # u_j^T (W/n)^k u_j
            sums[k] += vals.sum(0)
            sq[k] += (vals ** 2).sum(0)
        done += m
    for k in range(1, k_max + 1):
        exact = moment_eigenvalues(k, eigs, n)
        for j in range(d):
            mean = sums[k - 1, j] / samples
            se = math.sqrt(max(sq[k - 1, j] / samples - mean ** 2, 0) / samples)
            est = Estimate(mean, se, samples)
            agree = est.agrees(float(exact[j]), 0.999, comps)
            ok &= agree
            rows.append({"k": k, "j": j + 1, "exact": float(exact[j]), "mean": mean, "se": se,
                         "z": est.z_score(float(exact[j]))})
    return combine([Finding("moments_vs_monte_carlo", bool(ok), {
        "n": n, "d": d, "eigenvalues": [str(v) for v in eigs], "samples": samples,
        "comparisons": comps, "rows": rows}, None if ok else {"rows": rows, "seed": ctx.seed},
        "" if ok else "an exact moment eigenvalue is outside its Monte Carlo interval")])


LEMMA4_2 = Claim(
    id="gatmiry2024.lemma4_2",
    title="Moment controls: eigenvalues of E[(S~)^k] within delta^k lambda_1^k of lambda_j^k",
    paper=PAPER,
    statement=r"For $\tilde x_i\sim\mathcal N(0,\tilde\Sigma)$, $\tilde\Sigma=\sum_j\lambda_ju_ju_j^\top$ "
              r"($\lambda_1\ge\dots\ge\lambda_d$) and $1\le k\le2L$, $\mathbb E[(\frac1n\sum_i\tilde "
              r"x_i\tilde x_i^\top)^k]=\sum_j\alpha^{(j)}_{n,d,k}u_ju_j^\top$ with $\lambda_j^k-\delta^k"
              r"\lambda_1^k\le\alpha^{(j)}_{n,d,k}\le\lambda_j^k+\delta^k\lambda_1^k$.",
    assumptions=("x~_i ~ N(0, Sigma~) i.i.d.", "delta = (8 L d / sqrt(n))^{1/(2L)} (Sec. 3.5)",
                 "n > d (Sec. 3.2); the lemma states no condition on n"),
    formulas=LEMMA42_FORMULAS,
    checks={"symbolic": lemma42_symbolic, "numeric": _moment_numeric},
    setting=MOMENT_SETTING,
    exact=MOMENT_EXACT,
    ranges=("k <= 2*L",),
    correction=Correction(
        description="add Lemma A.2's sample-size condition n >= 4 k^2 d^2",
        reason="without a condition on n the bound fails at small n (e.g. d = 1, L = 2, k = 4: "
               "E[chi^2_n^4]/n^4 = 1 + 12/n + 44/n^2 + 48/n^3 exceeds 1 + 16/sqrt(n) for n <= 3)",
        formulas={"hypothesis": HYPOTHESIS_A2}),
)

LEMMA_A5_FORMULAS = (
    NamedFormula("hypothesis", "n > d", (_N, _D, _K, _L), equation="Sec. 3.2",
                 description="the paper's standing assumption (the lemma states none)",
                 weaker="narrower"),
    NamedFormula("delta", "4*k*d/sqrt(n)", (_N, _D, _L, _K), equation="proof of Lemma A.5",
                 description="delta = 4 k d / sqrt(n), the value the proof ends with"),
    NamedFormula("lower", "lambda_j**k - delta*lambda_1**k", _BOUND_SYMBOLS, equation="Lemma A.5",
                 description="lower bound on alpha^(j) (delta, not delta^k)", weaker="smaller",
                 proof=_lower_envelope, proof_source=LOWER_ENVELOPE_SOURCE),
    NamedFormula("upper", "lambda_j**k + delta*lambda_1**k", _BOUND_SYMBOLS, equation="Lemma A.5",
                 description="upper bound on alpha^(j)", weaker="larger"),
)


def lemma_a5_symbolic(ctx: Context) -> TierResult:
    r = _moment_symbolic(ctx, moment_eigenvalues, "the bound on alpha^(j)", flat_alpha,
                         readings=True, proofs=(lower_envelope_finding(),))
    r.steps = [step("Eigenvalues", r"\alpha^{(j)} = \sum c\, n^{e-k} p_\mu \lambda_j^s",
                    "As for Lemma 4.2, with delta lambda_1^k in place of delta^k lambda_1^k.")]
    return r


LEMMA_A5 = Claim(
    id="gatmiry2024.lemma_a5",
    title="Restatement of Lemma 4.2 (bound delta lambda_1^k)",
    paper=PAPER,
    statement=r"$\mathbb E[(\frac1n\sum_i\tilde x_i\tilde x_i^\top)^k]=\sum_j\alpha^{(j)}_{n,d,k}u_j"
              r"u_j^\top$ with $\lambda_j^k-\delta\lambda_1^k\le\alpha^{(j)}_{n,d,k}\le\lambda_j^k+"
              r"\delta\lambda_1^k$ ($\delta$ undefined in the statement; the proof ends with "
              r"$4kd/\sqrt n$).",
    assumptions=("x~_i ~ N(0, Sigma*) i.i.d.", "n > d (Sec. 3.2)"),
    formulas=LEMMA_A5_FORMULAS,
    checks={"symbolic": lemma_a5_symbolic, "numeric": _moment_numeric},
    setting=MOMENT_SETTING,
    exact=MOMENT_EXACT,
    correction=Correction(
        description="add Lemma A.2's sample-size condition n >= 4 k^2 d^2",
        reason="the proof runs Lemma A.2's argument, which needs it; without it the bound fails "
               "at small n",
        formulas={"hypothesis": HYPOTHESIS_A2}),
    notes="The proof's lower bound n^k alpha >= n^k lambda_j^k (1 - 4kd/sqrt(n)) is a third "
          "variant; alpha^(j) >= lambda_j^k always holds (non-negative coefficients).",
)

# ----- Lemma 4.3 and its restatement A.7 --------------------------------------------------------
LEMMA43_FORMULAS = (
    NamedFormula("hypothesis", "n > d", (_N, _D, _K, _L), equation="Sec. 3.2",
                 description="the paper's standing assumption (the lemma states none)",
                 weaker="narrower"),
    NamedFormula("delta", "(8*L*d/sqrt(n))**(1/(2*L))", (_N, _D, _L, _K), equation="Sec. 3.5",
                 description="delta := (8 L d / sqrt(n))^{1/(2L)}"),
    NamedFormula("lower", "(1 - lambda_j)**k - delta**k*(lambda_1 + 1)**k", _BOUND_SYMBOLS,
                 equation="Lemma 4.3", description="lower bound on beta_i", weaker="smaller"),
    NamedFormula("upper", "(1 - lambda_j)**k + delta**k*(lambda_1 + 1)**k", _BOUND_SYMBOLS,
                 equation="Lemma 4.3", description="upper bound on beta_i", weaker="larger"),
)
_BETA_SCALES = (Fraction(1, 4), Fraction(1), Fraction(2), Fraction(4))


def _eigvec_finding(ctx: Context, k_max: int = 3) -> Finding:
    """E[(I - A^{1/2} S A^{1/2})^k] by Isserlis equals the Wishart polynomial in
    Sigma~ = A^{1/2} Sigma* A^{1/2} (so it has Sigma~'s eigenvectors), tested against a probe C."""
    letters = formula_letters()
    B, S, C = letters["A_half"], letters["Sigma"], matrix("C", symmetric=True)
    inst = root_instances(ctx, dims=(2,))[0]
    Cv = sympy.Matrix([[1, sympy.Rational(1, 3)], [sympy.Rational(1, 3), -2]])
    env = inst.env({"C": Cv})
    cov = inst.B * env["Sigma"] * inst.B
    rows, ok = [], True
    from moments.tensor import identity as _identity
    for k in range(1, k_max + 1):
        M = _identity("d")
        for _ in range(k):
            M = M @ (_identity("d") - B @ S @ B)
        iss = _exact_value(expectation((M @ C).trace()).simplify(), env, N)
        wis = sympy.Integer(0)
        for j in range(k + 1):
            Ej = sympy.eye(2) if j == 0 else sympy.Matrix(wishart.evaluate_wishart(
                wishart.moment(j), sigma=cov, n=N, mode="exact")) if False else None
            if j == 0:
                Ej = sympy.eye(2)
            else:
                Ej = sympy.zeros(2, 2)
                for (s_, mu, e), c in wishart.moment(j).terms.items():
                    term = c * N ** e * cov ** s_
                    for part in mu:
                        term = term * (cov ** part).trace()
                    Ej += term
                Ej = Ej / N ** j
            wis += math.comb(k, j) * (-1) ** j * (Ej * Cv).trace()
        diff = sympy.cancel(iss - wis)
        rows.append({"k": k, "difference_in_n": str(diff)})
        ok &= diff == 0
    return Finding("eigenvectors", bool(ok), {"probe": "tr(E[(I - A^{1/2} Sigma A^{1/2})^k] C)",
                                              "instance": inst.as_dict(), "rows": rows},
                   None if ok else {"rows": rows}, "" if ok else "Isserlis and Wishart disagree")


def lemma43_symbolic(ctx: Context) -> TierResult:
    r = _moment_symbolic(ctx, centred_eigenvalues, "the bound on beta_i", flat_beta,
                         scales=_BETA_SCALES, flat_scales=_BETA_SCALES, readings=True,
                         level=level_beta)
    f = _eigvec_finding(ctx)
    r2 = combine([f])
    if r2.status == "fail":
        return r2
    r.evidence["eigenvectors"] = r2.evidence["eigenvectors"]
    r.steps = [step("Change of covariance", r"A^{1/2}\Sigma A^{1/2}\sim \tfrac1n W_d(n, A^{1/2}"
                    r"\Sigma_*A^{1/2})",
                    "So E[(I - A^{1/2} Sigma A^{1/2})^k] = sum_j C(k,j)(-1)^j E[(W~/n)^j], a "
                    "polynomial in Sigma~ = A^{1/2} Sigma* A^{1/2} (checked against Isserlis on "
                    "the formula for k <= 3); beta_i = sum_j C(k,j)(-1)^j alpha^(j)(lambda_i)."),
               step("Grid", "", "The bounds at every case the hypothesis admits, spectra with "
                    "lambda_1 in {1/4, 1, 2, 4}, and with each reading of delta.")]
    return r


LEMMA4_3 = Claim(
    id="gatmiry2024.lemma4_3",
    title="Eigenvalue approximation: E[(I - A^{1/2} Sigma A^{1/2})^k] near (1 - lambda_i)^k",
    paper=PAPER,
    statement=r"With $A^{1/2}\Sigma^*A^{1/2}=\sum_i\lambda_iu_iu_i^\top$ and $k\le2L$, "
              r"$\mathbb E[(I-A^{1/2}\Sigma A^{1/2})^k]=\sum_i\beta_i^{(k)}u_iu_i^\top$ with "
              r"$(1-\lambda_i)^k-\delta^k(\lambda_1+1)^k\le\beta_i^{(k)}\le(1-\lambda_i)^k+\delta^k"
              r"(\lambda_1+1)^k$.",
    assumptions=("x_i ~ N(0, Sigma*), A symmetric positive definite",
                 "delta = (8 L d / sqrt(n))^{1/(2L)} (Sec. 3.5)", "n > d (Sec. 3.2)"),
    formulas=LEMMA43_FORMULAS,
    checks={"symbolic": lemma43_symbolic},
    setting=MOMENT_SETTING,
    exact=CENTRED_EXACT,
    ranges=("k <= 2*L",),
    correction=Correction(
        description="add Lemma A.2's sample-size condition n >= 4 k^2 d^2",
        reason="the bound inherits Lemma 4.2's failure at small n: at d = 1, n = 2, L = 3, k = 4 "
               "and Sigma~ = 4, beta = E[(1 - 4E)^4] = 4785 (E ~ Exp(1)) exceeds 81 + 625 "
               "(24/sqrt(2))^(2/3) = 4208.4",
        formulas={"hypothesis": HYPOTHESIS_A2}),
    notes="The decomposition sums i = 1..n (for d); the lemma's preamble speaks of A^{1/2} E[(I - "
          "Sigma A)^k] A^{-1/2}, a similar matrix with the same eigenvalues.",
)

LEMMA_A7_FORMULAS = (
    NamedFormula("hypothesis", "n > d", (_N, _D, _K, _L), equation="Sec. 3.2",
                 description="the paper's standing assumption (the lemma states none)",
                 weaker="narrower"),
    NamedFormula("delta", "(4*k*d/sqrt(n))**(1/k)", (_N, _D, _L, _K), equation="Lemma A.7",
                 description="delta^k = 4 k d / sqrt(n)"),
    NamedFormula("lower", "(1 - lambda_j)**k - delta**k*(lambda_1 + 1)**k", _BOUND_SYMBOLS,
                 equation="Lemma A.7",
                 description="lower bound on the eigenvalue of E[(I - A^{1/2} Sigma A^{1/2})^k] "
                             "(the lemma writes (lambda_i - 1)^k for (A^{1/2} Sigma A^{1/2} - I)^k)",
                 weaker="smaller"),
    NamedFormula("upper", "(1 - lambda_j)**k + delta**k*(lambda_1 + 1)**k", _BOUND_SYMBOLS,
                 equation="Lemma A.7", description="upper bound", weaker="larger"),
)

LEMMA_A7 = Claim(
    id="gatmiry2024.lemma_a7",
    title="Restatement of Lemma 4.3 (delta^k = 4kd / sqrt(n))",
    paper=PAPER,
    statement=r"$\mathbb E[(A^{1/2}\Sigma A^{1/2}-I)^k]=\sum_i\beta_i^{(k)}u_iu_i^\top$ with "
              r"$(\lambda_i-1)^k-\delta^k(\lambda_1+1)^k\le\beta_i^{(k)}\le(\lambda_i-1)^k+\delta^k"
              r"(\lambda_1+1)^k$, $\delta^k=\frac{4kd}{\sqrt n}$ (checked in the equivalent form "
              r"for $(I-A^{1/2}\Sigma A^{1/2})^k$, both sides times $(-1)^k$).",
    assumptions=LEMMA4_3.assumptions[:1] + ("delta^k = 4 k d / sqrt(n)", "n > d (Sec. 3.2)"),
    formulas=LEMMA_A7_FORMULAS,
    checks={"symbolic": lambda ctx: _moment_symbolic(ctx, centred_eigenvalues,
                                                     "the bound on beta_i", flat_beta,
                                                     scales=_BETA_SCALES,
                                                     flat_scales=_BETA_SCALES,
                                                     level=level_beta)},
    setting=MOMENT_SETTING,
    exact=CENTRED_EXACT,
    correction=Correction(
        description="add Lemma A.2's sample-size condition n >= 4 k^2 d^2",
        reason="the proof goes through Lemma 4.2, which needs it; without it the bound fails: at "
               "d = 1, n = 2, k = 5 and Sigma~ = 4, beta = E[(1 - 4E)^5] = -95699 (E ~ Exp(1)) is "
               "below -243 - 3125 * 20/sqrt(2) = -44437.2",
        formulas={"hypothesis": HYPOTHESIS_A2}),
    notes="The statement opens with E[A^{-1/2}(A^{1/2} Sigma A^{1/2} - I)^k A^{1/2}] and then "
          "writes E[(A^{1/2} Sigma A^{1/2} - I)^k]; the second is the one with eigenvectors u_i.",
)

# ==============================================================================================
# The global optimum: Theorem 3.2 and its restatement A.8
# ==============================================================================================
OPT_SETTING = _setting({"n": 20, "d": 3, "L": 2}, {"n": 20, "d": 5, "L": 2},
                       {"n": 20, "d": 10, "L": 3})
_OPT_SYMBOLS = (_N, _D, _L, _DELTA)


def _opt_grid(ctx: Context) -> tuple[tuple, tuple]:
    """(dimensions, loops) at which the optimum is computed exactly at the threshold sizes."""
    return (_by_budget(ctx, (1, 2, 3, 10), (1, 2, 3, 5, 10), (1, 2, 3, 5, 10)),
            _by_budget(ctx, (1, 2, 3), (1, 2, 3, 4), (1, 2, 3, 4, 5)))


def _sizes_env(n, d, L) -> dict:
    return {N: sympy.Integer(n), D: sympy.Integer(d), L_SYM: sympy.Integer(L)}


def _named_at(F, name: str, n, d, L, **extra) -> sympy.Expr:
    """A scalar named formula at sizes (delta substituted from its own formula)."""
    expr = F[name]
    sub = _sizes_env(n, d, L)
    if "delta" in F and name != "delta":
        sub[sympy.Symbol("delta", positive=True)] = F["delta"].subs(sub)
    for k, v in extra.items():
        sub[sympy.Symbol(k, positive=True)] = v
    with sympy.evaluate(False):
        held = expr.xreplace(sub)
    if _huge_power(held):  # (2 delta)^(2n) at n = 10^6: sympy would expand it for minutes
        return sympy.N(held, 80)
    return held.doit()  # the held tree, evaluated: the sizes are substituted once


def _condition(F, name: str, d: int, L: int) -> Callable[[int], bool]:
    """The named condition as a function of n: 60-digit arithmetic, exact when within 10^-40."""
    expr = F[name]
    if "delta" in F and name != "delta":  # delta first: it is written in d and L
        expr = expr.subs(sympy.Symbol("delta", positive=True), F["delta"])
    expr = expr.subs({D: d, L_SYM: L})
    if isinstance(expr, sympy.logic.boolalg.BooleanAtom):
        return lambda n: bool(expr)
    lhs, rhs = expr.lhs, expr.rhs
    fl, fr = sympy.lambdify(N, lhs, "mpmath"), sympy.lambdify(N, rhs, "mpmath")

    def holds(n: int) -> bool:
        with mpmath.workdps(60):
            x, y = fl(mpmath.mpf(n)), fr(mpmath.mpf(n))
            if abs(x - y) > mpmath.mpf(10) ** -40 * max(abs(x), abs(y), 1):
                return bool(expr.func(sympy.Float(x, 60), sympy.Float(y, 60)))
        return bool(expr.subs(N, n))

    return holds


def smallest_n(F, d: int, L: int, name: str = "hypothesis", start: int = 1) -> int | None:
    """The smallest integer n at which the named condition holds (it is monotone in n for the
    paper's conditions: exponential search, then bisection)."""
    holds = _condition(F, name, d, L)

    hi = max(start, 1)
    while not holds(hi):
        hi *= 2
        if hi > 10 ** 60:
            return None
    lo = hi // 2
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        if holds(mid):
            hi = mid
        else:
            lo = mid
    return hi if hi == start or not holds(hi - 1) else hi


def _u_structure(L: int, inst: RootInstance, ns: Sequence[int]) -> dict:
    """L(A, u) - L(A, 0) = u^T M(A) u: no term of degree 1 in u, and M(A) at the instance."""
    full = li.derived_loss(L, with_u=True)
    base = li.derived_loss(L, with_u=False)
    linear = [k for k in full.terms if _u_degree(k) % 2 == 1]
    part = (full - base).simplify()
    d = inst.d
    us = sympy.symbols(f"u_0:{d}")
    Ms = {}
    for n in ns:
        val = sympy.expand(part.evaluate({**inst.env(), "u": sympy.Matrix(us)}, {"n": n, "d": d},
                                         exact=True))
        Ms[n] = sympy.Matrix(d, d, lambda i, j: sympy.diff(val, us[i], us[j]) / 2)
    return {"odd_terms_in_u": len(linear), "M": Ms}


def _u_degree(key) -> int:
    cycles, chains = key
    return sum(1 for w in cycles + chains for name, _ in w if name == "u")


def _pd(M: sympy.Matrix) -> bool:
    return all(M[:k, :k].det() > 0 for k in range(1, M.shape[0] + 1))


def _opt_structure_findings(ctx: Context, F) -> tuple[list, list]:
    """u^opt = 0 and the reduction L_{Sigma*}(A) = L_I(Sigma*^{1/2} A Sigma*^{1/2})."""
    findings, rows_u, rows_red = [], [], []
    ok_u, ok_red, ce_u, ce_red = True, True, None, None
    u_named = F.get("u_opt")
    for L in _loops(ctx):
        for inst in root_instances(ctx):
            ns = [inst.d + 1, 50]
            st = _u_structure(L, inst, ns)
            pd = all(_pd(M) for M in st["M"].values())
            ok = st["odd_terms_in_u"] == 0 and pd
            named_zero = True
            if u_named is not None:
                uv = formula_value(u_named, {"d": inst.d})
                uv = sympy.zeros(inst.d, 1) if uv == 0 else sympy.Matrix(uv)
                named_zero = uv == sympy.zeros(inst.d, 1)
                if not named_zero:
                    quad = (uv.T * st["M"][ns[0]] * uv)[0, 0]
                    ok = False
                    ce_u = ce_u or {"instance": inst.as_dict(), "L": L, "n": ns[0],
                                    "named_u_opt": str(list(uv)),
                                    "loss_increase_at_named_u": str(quad)}
            rows_u.append({"L": L, "instance": inst.label, "odd_terms_in_u": st["odd_terms_in_u"],
                           "M_positive_definite_at_n": ns if pd else False})
            if not ok and ce_u is None:
                ce_u = {"instance": inst.as_dict(), "L": L,
                        "M": {n: str(M.tolist()) for n, M in st["M"].items()}}
            ok_u &= ok
            # the reduction to Sigma* = I
            iso = li.derived_loss(L, isotropic=True, with_u=False)
            gen = li.derived_loss(L, with_u=False)
            env = inst.env()
            lhs = _exact_value(gen, env, N)
            Bp = inst.R * env["A"] * inst.R
            rhs = _exact_value(iso, {"A": Bp, "Sigma": sympy.eye(inst.d)}, N)
            diff = sympy.cancel(lhs - rhs)
            rows_red.append({"L": L, "instance": inst.label, "difference": str(diff)})
            if diff != 0:
                ok_red = False
                ce_red = ce_red or {"instance": inst.as_dict(), "L": L, "lhs": str(lhs),
                                    "rhs": str(rhs)}
    findings.append(Finding("u_opt", ok_u, {"rows": rows_u, "statement": "L(A, u) = L(A, 0) + "
                            "u^T M(A) u with M(A) positive definite, so u^opt = 0"}, ce_u,
                            "" if ok_u else "u^opt = 0 fails"))
    findings.append(Finding("reduction_to_identity", ok_red, {"rows": rows_red}, ce_red,
                            "" if ok_red else "L_{Sigma*}(A) != L_I(Sigma*^{1/2} A Sigma*^{1/2})"))
    return findings, rows_u


def _c_ge_p_finding(ctx: Context) -> Finding:
    """C(A) - P(A) = E||M - M^T||^2 / 2 >= 0 (M = (I - A S)^L, Sigma* = I), zero at A = a I."""
    rows, ok, ce = [], True, None
    for L in _loops(ctx):
        C = li.derived_loss(L, isotropic=True, with_u=False)
        P = li.paper_form(L)
        for inst in root_instances(ctx, isotropic=True) + [aligned_instance(2)]:
            if inst.label.startswith("A ="):
                inst = RootInstance(sympy.ImmutableMatrix(sympy.eye(2)),
                                    sympy.ImmutableMatrix(sympy.eye(2) * sympy.Rational(3, 4)),
                                    inst.u, "A = 9/16 I")
            A = inst.A
            cv = _exact_value(C, {"A": A, "Sigma": sympy.eye(inst.d)}, N)
            pv = sympy.cancel(li.at_spectrum(P, [sympy.nsimplify(x) for x in A.eigenvals(
                multiple=True)], N, inst.d)) if False else sympy.cancel(P.subs(D, inst.d).xreplace(
                {li.power_sum(j): (A ** j).trace() for j in range(1, 2 * L + 1)}))
            gap = sympy.factor(sympy.cancel(cv - pv))
            n_check = [inst.d, inst.d + 1, 10, 1000]
            nonneg = all(sympy.cancel(gap.subs(N, n)) >= 0 for n in n_check)
            scalar = inst.label.endswith("I")
            rows.append({"L": L, "instance": inst.label, "C_minus_P": str(gap)})
            if not nonneg or (scalar and gap != 0):
                ok = False
                ce = ce or {"L": L, "instance": inst.as_dict(), "C_minus_P": str(gap)}
    return Finding("true_loss_above_trace_form", ok, {"rows": rows}, ce,
                   "" if ok else "C(A) >= P(A) fails")


OPT_N_MULTIPLES = (1, 10, 1000, 10 ** 6)  # n / (the smallest n of the hypothesis)


def _optimum_rows(ctx: Context, F, bounds: Sequence[tuple]) -> tuple[Finding, Finding, dict]:
    """At each (d, L) and n = the smallest n the hypothesis admits times OPT_N_MULTIPLES (a bound
    of another order in n, (8Ld/sqrt(n))^(3/2) for delta, first fails a thousand times above the
    threshold): a*, f(a*), the Hessian at a* I, and the named bounds.  ``bounds``: (label,
    value(a*, f*, n, d, L) -> (lhs, rhs))."""
    dims, loops = _opt_grid(ctx)
    rows, ce, ok_b, ok_h, ce_h = [], None, True, True, None
    hyp_n = {}
    for L in loops:
        for d in dims:
            n0 = smallest_n(F, d, L)
            hyp_n[f"d={d},L={L}"] = n0
            if n0 is None:
                continue
            holds = _condition(F, "hypothesis", d, L)
            for n in (n0 * m for m in OPT_N_MULTIPLES):
                if not holds(n):
                    continue
                a = li.a_star_rational(n, d, L)  # within 10^-120 of a*
                fa = li.scalar_poly(L, n, d).eval(a)
                h_I, h_p = li.hessian_at_scalar(a, n, d, L)
                pos = h_I > 0 and (d == 1 or h_p > 0)
                row = {"d": d, "L": L, "n": n, "a_star": _q(sympy.N(a, 25)),
                       "optimal_loss": float(sympy.N(fa, 20)),
                       "hessian_I": float(sympy.N(h_I, 20)),
                       "hessian_traceless": None if d == 1 else float(sympy.N(h_p, 20))}
                if not pos:
                    ok_h = False
                    ce_h = ce_h or row
                for label, fn in bounds:
                    lhs, rhs = fn(a, fa, n, d, L)
                    good = _le_with_margin(lhs, rhs)
                    row[label] = {"value": float(sympy.N(lhs, 20)), "bound": float(sympy.N(rhs, 20)),
                                  "holds": good}
                    if not good:
                        ok_b = False
                        ce = ce or {"d": d, "L": L, "n": n, "bound": label, "value": _q(lhs),
                                    "paper_bound": _q(rhs), "a_star": _q(sympy.N(a, 30))}
                rows.append(row)
    fb = Finding("bounds_at_threshold_sizes", ok_b if rows else None,
                 {"rows": rows, "smallest_n_of_the_hypothesis": hyp_n}, ce,
                 "" if ok_b and rows else "a bound of the statement fails at the optimum" if rows
                 else "the hypothesis admits no (d, L) of the grid up to n = 10^60")
    fh = Finding("hessian_at_a_star_I", ok_h, {"note": "eigenvalues f''(a*)/d along I and h_perp "
                                                       "on the traceless directions"}, ce_h,
                 "" if ok_h else "a* I is not a strict local minimum")
    return fb, fh, hyp_n


def _opt_steps() -> list:
    return [
        step("Loss", r"L(A,u) = \mathbb E\,\|\Sigma_*^{-1/2}(I-\Sigma A)^L\Sigma_*^{1/2}\|_F^2 + u^\top"
             r"\mathbb E\big[(I-(I-\Sigma A)^L)\Sigma_*(I-(I-A\Sigma)^L)\big]u",
             "From the forward pass (residual identity) and the moment kernel; the cross term is "
             "odd in w* and vanishes (no term of degree 1 in u), the u-part is positive definite: "
             "u^opt = 0."),
        step("Reduction", r"L_{\Sigma_*}(A, 0) = L_I(\Sigma_*^{1/2}A\Sigma_*^{1/2}, 0)",
             "X = Sigma*^{1/2} G with G standard: checked exactly at rational instances."),
        step("Global minimum at Sigma* = I",
             r"C(A) = \mathbb E\operatorname{tr}(MM^\top) \ge \mathbb E\operatorname{tr}(M^2) = "
             r"P(A) = \mathbb E\operatorname{tr}\, h(S^{1/2}AS^{1/2}),\ M = (I-AS)^L,\ h(x) = (1-x)^{2L}",
             "tr(MM^T) - tr(M^2) = ||M - M^T||^2/2 >= 0 with equality at A = a I; P is convex in A "
             "(trace of a convex function of the linear map A -> S^{1/2} A S^{1/2}) and invariant "
             "under A -> O A O^T, so by Jensen over O, P(A) >= P(tr(A)/d I). Hence min C = min_a "
             "f(a) with f(a) = E tr(I - a S)^{2L}, strictly convex: A^opt = a* I, unique when "
             "n >= d."),
        step("Scalar optimum", r"f(a) = \sum_{k=0}^{2L}\binom{2L}{k}\Big(-\frac an\Big)^k "
             r"\mathbb E\operatorname{tr}W^k,\quad f'(a^*) = 0",
             "E tr W^k exactly in n and d (Wishart engine); a* is the unique real root of f', "
             "computed exactly (CRootOf) at each size."),
        step("Hessian at a* I", r"h_I = f''(a^*)/d,\quad h_\perp = \sum \alpha_{ij}(\dots),\ "
             r"\mathbb E\operatorname{tr}(EW^iEW^j) = \alpha_{ij}\|E\|_F^2",
             "alpha_ij = (d(T_{i+j} + T_{i,j}) - 2 T_{i+j}) / (d(d+2)(d-1)) from E tr W^{i+j} and "
             "E[tr W^i tr W^j] (orthogonal invariance); cross-checked against the Poly Hessian."),
    ]


THM32_FORMULAS = (
    NamedFormula("hypothesis", "8*L*d**2/sqrt(n) <= 1/2**(2*L)", _OPT_SYMBOLS,
                 equation="Thm. 3.2", description="the condition on n", weaker="narrower"),
    NamedFormula("delta", "(8*L*d/sqrt(n))**(1/(2*L))", (_N, _D, _L), equation="Sec. 3.5",
                 description="delta := (8 L d / sqrt(n))^{1/(2L)}"),
    NamedFormula("loss_bound", "8*L*d**2*2**(2*L)/sqrt(n)", _OPT_SYMBOLS, equation="Thm. 3.2 (1)",
                 description="upper bound on L(A^opt, u^opt)", weaker="larger"),
    NamedFormula("c", "8*delta*d**(1/(2*L))", _OPT_SYMBOLS, equation="Thm. 3.2 (2)",
                 description="(1 - c) Sigma*^{-1} <= A^opt <= (1 + c) Sigma*^{-1}", weaker="larger"),
    NamedFormula("u_opt", "ZeroMatrix(d, 1)", (_D,), equation="Thm. 3.2 (2)", shape=("d", "1"),
                 description="u^opt"),
)


def _le_with_margin(lhs, rhs, digits: int = 60) -> bool:
    """lhs <= rhs for constants where lhs is within 10^-100 of the exact value (a* replaced by
    a 120-digit rational): decided at 60 digits when the gap exceeds 10^-40, else exactly."""
    diff = sympy.N(sympy.sympify(rhs) - sympy.sympify(lhs), digits)
    if abs(diff) > sympy.Float(10) ** -40:
        return bool(diff > 0)
    return li.exact_le(lhs, rhs)


def _thm32_bounds(F):
    return [("loss_bound", lambda a, fa, n, d, L: (fa, _named_at(F, "loss_bound", n, d, L))),
            ("A_opt_upper", lambda a, fa, n, d, L: (a, 1 + _named_at(F, "c", n, d, L))),
            ("A_opt_lower", lambda a, fa, n, d, L: (1 - _named_at(F, "c", n, d, L), a))]


def thm32_symbolic(ctx: Context) -> TierResult:
    F = ctx.formulas
    findings, _ = _opt_structure_findings(ctx, F)
    findings.append(_c_ge_p_finding(ctx))
    fb, fh, hyp_n = _optimum_rows(ctx, F, _thm32_bounds(F))
    findings += [fh, fb]
    return combine(findings, {"A_opt": "a*(n, d, L) Sigma*^{-1} (a* the minimiser of f)",
                              "smallest_n_of_the_hypothesis": hyp_n}, steps=_opt_steps())


# ----- numeric: Monte Carlo at the optimum and a global search over spectra -------------------
def _opt_instance(ctx: Context):
    inst = OPT_SETTING.instance(ctx.budget.name, ctx.sizes, ctx.sigma, ctx.rng("opt-instance"))
    L = int(inst.extra.get("L", 2))
    return inst, L


def _spectral_search(ctx: Context, n: int, d: int, L: int, starts: int) -> dict:
    """Minimise the trace form P (any L) and the true loss C (L <= 3) over spectra of A from
    random starts (L-BFGS-B); report the best values found against f(a*)."""
    from scipy.optimize import minimize

    f_star = float(sympy.N(li.optimal_loss(n, d, L), 30))
    a_star = li.a_star_float(n, d, L)
    P = li.spectral_function(li.paper_form(L), n, d, L)
    out = {"n": n, "d": d, "L": L, "a_star": a_star, "optimal_loss": f_star, "starts": starts}
    rng = ctx.rng("spectral-search", n, d, L)
    fns = {"trace_form_P": lambda lam: float(P(lam))}
    if L in _loops(ctx):
        C = li.derived_loss(L, isotropic=True, with_u=False)
        fns["true_loss_C"] = lambda lam: float(C.evaluate({"A": np.diag(lam)}, {"n": n, "d": d}))
    for name, fn in fns.items():
        best, best_x, evals = math.inf, None, 0
        for s in range(starts):
            x0 = np.exp(rng.uniform(np.log(0.05), np.log(3.0), d)) * rng.choice([1, 1, 1, -1], d)
            r = minimize(fn, x0, method="L-BFGS-B", options={"maxiter": 200})
            evals += int(r.nfev)
            if r.fun < best:
                best, best_x = float(r.fun), np.sort(r.x)
        out[name] = {"best_loss": best, "at_eigenvalues": best_x.tolist(), "evaluations": evals,
                     "relative_gap_to_optimum": (best - f_star) / f_star}
    return out


def thm32_numeric(ctx: Context) -> TierResult:
    inst, L = _opt_instance(ctx)
    d, n = inst.d, inst.n
    S = inst.sigma
    a = li.a_star_float(n, d, L)
    A_opt = a * np.linalg.inv(S)
    rng = ctx.rng("opt-random-point")
    M = rng.standard_normal((d, d)) * 0.3
    A_rand, u_rand = (M + M.T) / 2 + 0.5 * np.eye(d), rng.standard_normal(d) * 0.3
    poly = li.derived_loss(L, with_u=True) if L in _loops(ctx) else None
    findings, rows = [], []
    level, comps = 0.999, 2
    if poly is not None:
        ok = True
        for label, (A, u) in (("optimum", (A_opt, np.zeros(d))), ("random", (A_rand, u_rand))):
            env = {"A": A, "u": u.reshape(-1, 1), "Sigma": S, "Sigma_inv": np.linalg.inv(S)}
            exact = float(poly.evaluate(env, {"n": n}))
            est = mc_loss(looped_model(d, L, A, u), S, n, ctx.budget.mc_samples,
                          ctx.seed_for("opt-mc", label))
            agree = est.agrees(exact, level, comps)
            ok &= agree
            rows.append({"point": label, "exact": exact, "z": est.z_score(exact),
                         **est.as_dict(level, comps)})
        findings.append(Finding("derived_loss_vs_monte_carlo", bool(ok), {"rows": rows}, None if ok
                                else {"instance": inst.as_dict(), "rows": rows, "seed": ctx.seed},
                                "" if ok else "the derived loss is outside the Monte Carlo interval"))
    starts = _by_budget(ctx, 8, 20, 50)
    search = [_spectral_search(ctx, n, dd, LL, starts) for dd, LL in
              ((min(d, 3), L), (2, 1), (3, 3))]
    tol = 1e-9
    worst = min(r[k]["relative_gap_to_optimum"] for r in search for k in
                ("trace_form_P", "true_loss_C") if k in r)
    ok = worst >= -tol
    findings.append(Finding("global_search_over_spectra", bool(ok), {
        "searches": search, "tolerance": tol,
        "why_tolerance": "float64 evaluation of polynomials of size O(1)",
        "closest_relative_gap": worst}, None if ok else {"searches": search},
        "" if ok else "a spectrum with a lower loss than a* I was found"))
    return combine(findings, {"instance": inst.as_dict(), "a_star": a})


# ----- train: the torch model on the exact loss and on sampled prompts ---------------------------
def exact_loss_closure(poly: Poly, A: torch.Tensor, u: torch.Tensor | None, sigma: np.ndarray,
                       n: int) -> ExactLoss:
    """The derived loss of batched (A, u) (shapes (B, d, d), (B, d)) as a torch closure."""
    d = A.shape[-1]
    S = torch.tensor(sigma, dtype=A.dtype, device=A.device)
    Sinv = torch.linalg.inv(S)
    compiled = _compiled(poly)

    def bind():
        env = {"A": (A + A.mT) / 2, "Sigma": S, "Sigma_inv": Sinv}
        if u is not None:
            env["u"] = u.unsqueeze(-1)
        return env, {"n": n, "d": d}

    return ExactLoss(compiled, bind)


_COMPILED: dict = {}


def _compiled(poly: Poly):
    key = id(poly)
    if key not in _COMPILED:
        _COMPILED[key] = poly.compile()
    return _COMPILED[key]


def train_exact(ctx: Context, L: int, d: int, n: int, sigma: np.ndarray, with_u: bool, tag: str,
                init_scale: float = 0.1, steps: int | None = None, method: str = "lbfgs",
                lr: float = 1.0, restarts: int | None = None):
    """Train B seeds of the looped model on the derived loss (``optimise_batched``)."""
    rt = runtime(ctx.device)
    B = restarts or ctx.budget.restarts
    gen = rt.generator(ctx.seed_for(tag))
    M = randn(B, d, d, generator=gen, dtype=rt.dtype, device=rt.device) * init_scale
    A = ((M + M.mT) / 2).requires_grad_()
    u = (randn(B, d, generator=gen, dtype=rt.dtype, device=rt.device) * init_scale
         ).requires_grad_() if with_u else None
    iso = bool(np.allclose(sigma, np.eye(d)))
    poly = li.derived_loss(L, isotropic=iso, with_u=with_u)
    params = [A] + ([u] if u is not None else [])
    loss = exact_loss_closure(poly, A, u, sigma, n)
    steps = steps or _by_budget(ctx, 150, 300, 1000)
    with Progress(steps, f"{ctx.claim_id} exact-loss {method}", ctx.progress) as bar:
        results = optimise_batched(loss, params, method=method, steps=steps, lr=lr,
                                   progress=bar.callback())
    A_sym = ((A + A.mT) / 2).detach().cpu().double().numpy()
    u_out = u.detach().cpu().double().numpy() if u is not None else None
    return results, A_sym, u_out, rt


def thm32_train(ctx: Context) -> TierResult:
    inst, L = _opt_instance(ctx)
    d, n = inst.d, inst.n
    if L not in _loops(ctx):
        return combine([Finding("exact_loss_training", None, {"L": L},
                                reason=f"the full-matrix loss is derived for L in {_loops(ctx)}")])
    S = inst.sigma
    a = li.a_star_float(n, d, L)
    A_opt = a * np.linalg.inv(S)
    f_star = float(sympy.N(li.optimal_loss(n, d, L), 30))
    results, A, u, rt = train_exact(ctx, L, d, n, S, True, "thm32-train",
                                    restarts=_by_budget(ctx, 3, ctx.budget.restarts))
    poly = li.derived_loss(L, with_u=True)
    runs, below = [], None
    loss_tol = rt.tolerance(1e-9, 1e3)
    for r, res in enumerate(results):
        env = {"A": A[r], "u": u[r].reshape(-1, 1), "Sigma": S, "Sigma_inv": np.linalg.inv(S)}
        f = float(poly.evaluate(env, {"n": n}))
        err = float(np.linalg.norm(A[r] - A_opt) / np.linalg.norm(A_opt))
        runs.append({"restart": r, "trained_loss": f, "relative_loss_gap": (f - f_star) / f_star,
                     "relative_error_A": err, "norm_u": float(np.linalg.norm(u[r])),
                     **res.summary(curve_points=40)})
        if res.status == "converged" and (f - f_star) / f_star < -loss_tol and below is None:
            below = {"restart": r, "trained_A": A[r].tolist(), "trained_u": u[r].tolist(),
                     "trained_loss": f, "optimal_loss": f_star}
    weight_tol = 1e-3
    at_opt = [x for x in runs if x["relative_error_A"] <= weight_tol and x["norm_u"] <= weight_tol]
    ev = {"runs": runs, "a_star": a, "optimal_loss": f_star, "weight_threshold": weight_tol,
          "metric": "||A - a* Sigma*^{-1}||_F / ||a* Sigma*^{-1}||_F and ||u||",
          "why": "L-BFGS on the exact loss reaches float64 stationarity; 1e-3 leaves room for "
                 "the conditioning of the loss", "reached_optimum": len(at_opt)}
    if below is not None:
        f1 = Finding("exact_loss_training", False, ev, {"instance": inst.as_dict(), **below},
                     "training found a lower loss than at a* Sigma*^{-1}")
    elif at_opt:
        f1 = Finding("exact_loss_training", True, ev)
    elif any(x["status"] == "diverged" for x in runs):
        f1 = Finding("exact_loss_training", None, ev, reason="training diverged")
    else:
        f1 = Finding("exact_loss_training", None, ev, reason="no restart reached a* Sigma*^{-1} "
                                                             "within the budget")
    # sampled prompts with the real forward pass (evidence; a counterexample if it beats f*)
    gen = rt.generator(ctx.seed_for("thm32-sampled"))
    model = LinearTransformer(LSAConfig(d=d, layers=L, parametrisation="sec35", looped=True,
                                        step=-1), init_scale=0.1, generator=gen, dtype=rt.dtype,
                              device=rt.device)
    law = PromptLaw(sigma=torch.tensor(S), n=n, w_cov=torch.linalg.inv(torch.tensor(S)))
    data = rt.generator(ctx.seed_for("thm32-data"))
    steps, batch = _by_budget(ctx, (150, 1024), (400, 2048), (2000, 8192))

    def sampled():
        pr = sample_prompts(law, batch, data, dtype=rt.dtype, device=rt.device)
        return ((model.predict(pr.Z()) - pr.yq) ** 2).mean()

    with Progress(steps, "gatmiry2024.thm3_2 sampled-prompt Adam", ctx.progress) as bar:
        res = optimise(sampled, model.parameters(), method="adam", steps=steps, lr=0.01,
                       progress=bar.callback())
    Am = model.A[0].detach().cpu().double().numpy()
    Am = (Am + Am.T) / 2
    um = model.u[0].detach().cpu().double().numpy()
    f = float(poly.evaluate({"A": Am, "u": um.reshape(-1, 1), "Sigma": S,
                             "Sigma_inv": np.linalg.inv(S)}, {"n": n}))
    sampled_ev = {"batch": batch, "trained_loss": f, "relative_loss_gap": (f - f_star) / f_star,
                  "relative_error_A": float(np.linalg.norm(Am - A_opt) / np.linalg.norm(A_opt)),
                  **res.summary()}
    if res.status == "diverged":
        f2 = Finding("sampled_prompt_training", None, sampled_ev, reason=res.reason)
    elif (f - f_star) / f_star < -loss_tol:
        f2 = Finding("sampled_prompt_training", False, sampled_ev,
                     {"instance": inst.as_dict(), "trained_A": Am.tolist(), **sampled_ev},
                     "sampled training found a lower exact loss than a* Sigma*^{-1}")
    else:
        f2 = Finding("sampled_prompt_training", True, sampled_ev,
                     reason="evidence only: finite-batch Adam approaches the optimum")
    return combine([f1, f2], {"instance": inst.as_dict(), "runtime": rt.describe()})


OPT_EXACT_MAX_L = 6


OPT_EXACT_DIGITS = 200


@lru_cache(maxsize=4096)
def _optimum_exact(n: int, d: int, L: int) -> tuple:
    """(|a* - 1|, f(a*)) at OPT_EXACT_DIGITS digits: a* by bisection on f' (increasing, f'(0) < 0
    < f'(1)) to 2^-640.  Not ``a_star_rational``: its 10^-100 certificate fails at L = 6 and
    n = 10^29, where f'' at a* is below 10^-25, and it then refines a CRootOf for seconds."""
    poly = li.scalar_poly(L, n, d)
    with mpmath.workdps(OPT_EXACT_DIGITS):
        f = [mpmath.mpf(int(c.p)) / int(c.q) for c in poly.all_coeffs()]
        fp = [mpmath.mpf(int(c.p)) / int(c.q) for c in poly.diff(li.a_sym).all_coeffs()]
        lo, hi = mpmath.mpf(0), mpmath.mpf(1)
        if not (mpmath.polyval(fp, lo) < 0 < mpmath.polyval(fp, hi)):
            return None
        for _ in range(640):
            mid = (lo + hi) / 2
            if mpmath.polyval(fp, mid) < 0:
                lo = mid
            else:
                hi = mid
        a = (lo + hi) / 2
        return abs(a - 1), mpmath.polyval(f, a)


def optimum_exact(point: dict) -> dict | None:
    """Thms 3.2 and A.8: A^opt = a* Sigma*^{-1}, so ||A^{opt 1/2} Sigma* A^{opt 1/2} - I|| and the
    least c of (1 - c) Sigma*^{-1} <= A^opt <= (1 + c) Sigma*^{-1} are |a* - 1|, and the optimal
    loss is f(a*) (L <= OPT_EXACT_MAX_L)."""
    sizes = _sizes_of(point, ("n", "d", "L"))
    if sizes is None or sizes[2] > OPT_EXACT_MAX_L or sizes[1] > 10 ** 6:
        return None
    values = _optimum_exact(*sizes)
    if values is None:
        return None
    gap, loss = (+x for x in values)  # rounded to the caller's precision
    return {"loss_bound": loss, "spectral_bound": gap, "c": gap}


OPTIMUM_EXACT = ExactValues(optimum_exact, "a* and f(a*) of the derived loss, the optimum "
                                           f"A^opt = a* Sigma*^(-1) (L <= {OPT_EXACT_MAX_L}, "
                                           "d <= 10^6)")

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
    checks={"symbolic": thm32_symbolic, "numeric": single_threaded(thm32_numeric),
            "train": single_threaded(thm32_train)},
    setting=OPT_SETTING,
    exact=OPTIMUM_EXACT,
    notes="The optimum is exactly A^opt = a*(n, d, L) Sigma*^{-1}, u^opt = 0, with a* the unique "
          "minimiser of f(a) = E tr (I - a W/n)^{2L}; the bounds hold with a wide margin at "
          "every size checked (and also below the hypothesis).",
)

THM_A8_FORMULAS = (
    NamedFormula("hypothesis", "delta*d**(1/(2*L)) < 1/2", _OPT_SYMBOLS, equation="Thm. A.8",
                 description="the condition on n through delta", weaker="narrower"),
    NamedFormula("delta", "(8*L*d/sqrt(n))**(1/(2*L))", (_N, _D, _L), equation="Sec. 3.5",
                 description="delta := (8 L d / sqrt(n))^{1/(2L)}"),
    NamedFormula("loss_bound", "d*(2*delta)**(2*L)", _OPT_SYMBOLS, equation="Thm. A.8 (1)",
                 description="upper bound on L(A^opt, d^opt)", weaker="larger"),
    NamedFormula("spectral_bound", "4*delta*d**(1/(2*L))", _OPT_SYMBOLS, equation="(22)",
                 description="bound on ||A^{opt 1/2} Sigma* A^{opt 1/2} - I||", weaker="larger"),
    NamedFormula("c", "8*delta*d**(1/(2*L))", _OPT_SYMBOLS, equation="(23)",
                 description="(1 - c) Sigma*^{-1} <= A^opt <= (1 + c) Sigma*^{-1}", weaker="larger"),
    NamedFormula("u_opt", "ZeroMatrix(d, 1)", (_D,), equation="(22)", shape=("d", "1"),
                 description="d^opt (= u^opt)"),
)


def thm_a8_symbolic(ctx: Context) -> TierResult:
    F = ctx.formulas
    bounds = _thm32_bounds(F) + [("spectral_bound", lambda a, fa, n, d, L: (
        sympy.Abs(a - 1), _named_at(F, "spectral_bound", n, d, L)))]
    findings, _ = _opt_structure_findings(ctx, F)
    fb, fh, hyp_n = _optimum_rows(ctx, F, bounds)
    return combine(findings + [fh, fb], {"smallest_n_of_the_hypothesis": hyp_n},
                   steps=_opt_steps())


THM_A8 = Claim(
    id="gatmiry2024.thm_a8",
    title="Restatement of Theorem 3.2 with delta (optimal loss and spectral closeness)",
    paper=PAPER,
    statement=r"If $\delta d^{1/(2L)}<\frac12$: (1) $L(A^{opt},d^{opt})\le d(2\delta)^{2L}$; (2) "
              r"$\|A^{opt\,1/2}\Sigma^*A^{opt\,1/2}-I\|\le4\delta d^{1/(2L)}$, $d^{opt}=0$; (3) "
              r"$(1-8\delta d^{1/(2L)})\Sigma^{*-1}\preccurlyeq A^{opt}\preccurlyeq(1+8\delta "
              r"d^{1/(2L)})\Sigma^{*-1}$.",
    assumptions=THM3_2.assumptions + ("delta = (8 L d / sqrt(n))^{1/(2L)}",),
    formulas=THM_A8_FORMULAS,
    checks={"symbolic": thm_a8_symbolic},
    setting=OPT_SETTING,
    exact=OPTIMUM_EXACT,
)

# ==============================================================================================
# Gradient dominance: Theorem 3.4, its restatement A.11, and Lemma A.10
# ==============================================================================================
GD_SETTING = _setting({"n": 20, "d": 3, "L": 2})
_GD_SYMBOLS = (_N, _D, _L, _DELTA, _LOSS, _EPS)
GD_N = 10 ** 100  # a sample size at which every hypothesis of the section holds for d <= 2^20


def scalar_point(L: int, n: int, d: int, a) -> tuple[sympy.Rational, sympy.Rational]:
    """(L(aI, 0), ||grad_A L(aI, 0)||_F^2) at Sigma* = I, exactly: by orthogonal invariance the
    gradient at a I is (f'(a)/d) I, so its squared norm is f'(a)^2 / d."""
    f = li.scalar_poly(L, n, d)
    return f.eval(a), f.diff(li.a_sym).eval(a) ** 2 / d


def _gd_expr(F, name: str) -> sympy.Expr:
    """A named formula of the section in n, d, L, loss, epsilon (delta replaced by its formula)."""
    expr = F[name]
    if "delta" in F:
        expr = expr.subs(sympy.Symbol("delta", positive=True), F["delta"])
    return expr


def _gd_env(n, d, L, loss=None, eps=None) -> dict:
    env = {"n": sympy.Integer(n), "d": sympy.Integer(d), "L": sympy.Integer(L)}
    if loss is not None:
        env["loss"] = sympy.sympify(loss)
    if eps is not None:
        env["epsilon"] = sympy.sympify(eps)
    return env


@lru_cache(maxsize=None)
def _mp_function(expr: sympy.Expr) -> tuple[Callable, tuple[str, ...]]:
    syms = sorted(expr.free_symbols, key=lambda s: s.name)
    return sympy.lambdify(syms, expr, "mpmath"), tuple(s.name for s in syms)


def _mpf(x) -> mpmath.mpf:
    x = sympy.sympify(x)
    if x.is_Rational:
        return mpmath.mpf(int(x.p)) / int(x.q)
    return mpmath.mpf(str(sympy.N(x, mpmath.mp.dps + 10)))


def _mp_value(expr: sympy.Expr, env: Mapping) -> mpmath.mpf:
    fn, names = _mp_function(sympy.sympify(expr))
    return fn(*[_mpf(env[k]) for k in names])


def _exact_at(expr: sympy.Expr, env: Mapping) -> sympy.Expr:
    return sympy.sympify(expr).subs({s: env[s.name] for s in sympy.sympify(expr).free_symbols})


def _gd_le(lhs, rhs, env: Mapping, strict: bool = False) -> bool:
    """lhs <= rhs (or <) at exact values: decided at 80, 400 or 2000 digits when the relative gap
    exceeds 10^(30 - digits) (fast: sympy would factor 300-digit rationals raised to rational
    powers, and d^(1/n) at n = 10^100 exactly exhausts memory), exactly otherwise."""
    for digits in (80, 400, 2000):
        with mpmath.workdps(digits):
            x, y = _mp_value(lhs, env), _mp_value(rhs, env)
            if abs(y - x) > mpmath.mpf(10) ** (30 - digits) * max(1, abs(x), abs(y)):
                return bool(x < y)
    sgn = li.exact_sign(_exact_at(rhs, env) - _exact_at(lhs, env))
    return sgn > 0 or (sgn == 0 and not strict)


def _holds(expr, env: Mapping) -> bool:
    """A named condition (a relation or a conjunction/disjunction of them) at exact values."""
    if isinstance(expr, sympy.logic.boolalg.BooleanAtom):
        return bool(expr)
    if isinstance(expr, (sympy.And, sympy.Or)):
        parts = (_holds(a, env) for a in expr.args)
        return all(parts) if isinstance(expr, sympy.And) else any(parts)
    lhs, rhs = expr.lhs, expr.rhs
    if isinstance(expr, (sympy.GreaterThan, sympy.StrictGreaterThan)):
        lhs, rhs = rhs, lhs  # lhs <= rhs form
    return _gd_le(lhs, rhs, env, strict=isinstance(expr, (sympy.StrictLessThan,
                                                          sympy.StrictGreaterThan)))


def _mp_str(expr, env) -> str:
    with mpmath.workdps(30):
        return mpmath.nstr(_mp_value(expr, env), 20)


@dataclass(frozen=True)
class GDForm:
    """How a gradient-dominance statement reads: hypothesis on (loss, epsilon) and the bound the
    squared gradient norm must exceed."""

    uses_eps: bool  # Lemma A.10: the conclusion holds for every admissible epsilon

    def violated(self, F, n, d, L, loss, grad_sq) -> tuple[bool, dict]:
        hyp, rhs = _gd_expr(F, "hypothesis"), _gd_expr(F, "rhs")
        if not self.uses_eps:
            env = _gd_env(n, d, L, loss)
            if not _holds(hyp, env):
                return False, {"admissible": False}
        else:
            eps = _largest_eps(F, n, d, L, loss)
            if eps is None:
                return False, {"admissible": False}
            env = _gd_env(n, d, L, loss, eps)
        env = {**env, "grad_sq": sympy.sympify(grad_sq)}
        bad = not _gd_le(rhs, sympy.Symbol("grad_sq"), env)
        info = {"rhs": _mp_str(rhs, env), "admissible": True}
        if self.uses_eps:
            info["epsilon"] = env["epsilon"]
        return bad, info


def _largest_eps(F, n, d, L, loss, bits: int = 40):
    """The largest rational epsilon (to ``bits`` bits of bisection) that the hypothesis admits,
    assuming the admissible epsilons form an interval inside (0, 16]."""
    hyp = _gd_expr(F, "hypothesis")
    grid = [sympy.Rational(2) ** -k for k in range(40, -5, -1)]
    ok = [e for e in grid if _holds(hyp, _gd_env(n, d, L, loss, e))]
    if not ok:
        return None
    lo = max(ok)
    hi = lo * 2
    if _holds(hyp, _gd_env(n, d, L, loss, hi)):
        return hi
    for _ in range(bits):
        mid = (lo + hi) / 2
        if _holds(hyp, _gd_env(n, d, L, loss, mid)):
            lo = mid
        else:
            hi = mid
    return lo


def _family_point(L: int, d: int, uses_eps: bool) -> sympy.Rational:
    """A = a I with a = 1/2, or (for Lemma A.10) with d (1 - a)^{2L} = (9/10)^{2L} so that the
    admissible epsilon is just below 1."""
    if not uses_eps:
        return sympy.Rational(1, 2)
    e = sympy.Rational(str(sympy.N(sympy.Rational(9, 10) * sympy.Integer(d) ** sympy.Rational(
        -1, 2 * L), 30)))
    return 1 - e


def _scan_failure(L: int, d: int, n: int, A: str, loss, g2, info: dict, **extra) -> dict:
    """The exact numbers of a failure at A (Sigma* = I) for the counterexample of a scan."""
    out = {"L": L, "d": d, "n": _n_text(n), "A": A, "Sigma_star": "I_d", "loss": _digits(loss),
           "grad_norm_sq": _digits(g2), "rhs": info["rhs"], **extra}
    if "epsilon" in info:
        out["epsilon"] = str(info["epsilon"])
    return out


def large_d_scan(F, form: GDForm, loops: Sequence[int], n: int = GD_N, d_max: int = 2 ** 20):
    """Per L, the smallest d (bisection; failures are monotone in d in the large-n limit, where
    ||grad||^2 / L^{(2L-1)/L} = 64 L^2 d^{(1-L)/L} for A = a I) at which the statement fails at
    A = a I; with the exact numbers of the first failure."""
    rows, first = {}, None
    for L in loops:
        def fails(d):
            a = _family_point(L, d, form.uses_eps)
            loss, g2 = scalar_point(L, n, d, a)
            bad, info = form.violated(F, n, d, L, loss, g2)
            return bad, a, loss, g2, info

        if not fails(d_max)[0]:
            rows[f"L={L}"] = {"smallest_failing_d": None, "checked_up_to_d": d_max}
            continue
        lo, hi = 1, d_max
        if fails(1)[0]:
            hi = 1
        while lo + 1 < hi:
            mid = (lo + hi) // 2
            if fails(mid)[0]:
                hi = mid
            else:
                lo = mid
        bad, a, loss, g2, info = fails(hi)
        row = {"smallest_failing_d": hi, "n": _n_text(n), "a": str(a), "loss": _mp_str(loss, {}),
               "grad_norm_sq": _mp_str(g2, {}), "rhs": info["rhs"]}
        if "epsilon" in info:
            row["epsilon"] = _q(info["epsilon"])
        rows[f"L={L}"] = row
        if first is None or hi < first["d"]:
            first = _scan_failure(L, hi, n, f"{a} * I_d", loss, g2, info,
                                  grad_norm_sq_float=float(g2),
                                  hypothesis_parts=_relation_values(
                                      _gd_expr(F, "hypothesis"),
                                      _gd_env(n, hi, L, loss, info.get("epsilon"))))
    return rows, first


LEVEL_DIMS = (1, 2, 5, 40)  # d of the loss-level scan
LEVEL_EXPONENTS = (1, 2, 4, 8, 16, 32, 64)  # |1 - a| = 2^-j: the loss runs from ~d to ~d 2^(-128 L)


def loss_level_scan(F, form: GDForm, loops: Sequence[int], n: int = GD_N) -> tuple[dict, dict | None]:
    """The statement along the family A = a I at n = GD_N, from a large loss (a = -1, 3) to a
    tiny one (|1 - a| = 2^-64) and both sides of a = 1.  At large n the ratio ||grad||^2 /
    L^{(2L-1)/L} is the same at every a (4 L^2 d^{(1-L)/L}), so one a decides the printed
    exponent; a bound with another power of the loss fails at one end of the range the
    hypothesis admits.  Returns the rows per (L, d) and the first failure (exact numbers)."""
    points = [sympy.Integer(-1), sympy.Integer(3)] + [
        1 + sgn * sympy.Rational(1, 2 ** j) for j in LEVEL_EXPONENTS for sgn in (-1, 1)]
    rows, first = {}, None
    for L in loops:
        for d in LEVEL_DIMS:
            admitted, bad_at = 0, None
            for a in points:
                loss, g2 = scalar_point(L, n, d, a)
                bad, info = form.violated(F, n, d, L, loss, g2)
                admitted += info["admissible"]
                if bad:
                    bad_at = _scan_failure(L, d, n, f"{a} * I_d", loss, g2, info)
                    break
            rows[f"L={L},d={d}"] = {"points": len(points), "admitted": admitted,
                                    "fails_at": bad_at["A"] if bad_at else None}
            first = first or bad_at
    return rows, first


MINIMISER_NS = (1, 2, 4, 16, 256, 10 ** 4, 10 ** 8)
MINIMISER_DIMS = (1, 10, 100, 1000)


def minimiser_scan(F, form: GDForm, loops: Sequence[int]) -> tuple[dict, dict | None]:
    """At A = a* I, the global minimiser for Sigma* = I (Thm. 3.2), the gradient vanishes, so the
    statement holds there only if its hypothesis excludes the minimal loss f(a*): a sharp test of
    the threshold, at sample sizes n from 1 (far below d, where f(a*) >= d - n) to 10^8.  a* is
    certified to 10^-120, so the squared gradient there is below 10^-200."""
    rows, first = {}, None
    for L in loops:
        for d in MINIMISER_DIMS:
            for n in MINIMISER_NS:
                a = li.a_star_rational(n, d, L)
                loss, g2 = scalar_point(L, n, d, a)
                bad, info = form.violated(F, n, d, L, loss, g2)
                if info["admissible"]:
                    rows[f"L={L},d={d},n={_n_text(n)}"] = {"min_loss": _digits(loss, 12),
                                                          "rhs": info["rhs"], "fails": bad}
                if bad and first is None:
                    first = _scan_failure(L, d, n, "a* I_d (the minimiser)", loss, g2, info,
                                          a_star=_digits(a, 30))
    return rows, first


def _relation_values(expr, env: Mapping) -> list:
    """Each relation of a (conjunction of) condition(s) with both sides to 6 digits."""
    parts = expr.args if isinstance(expr, sympy.And) else [expr]
    out = []
    with mpmath.workdps(30):
        for r in parts:
            if hasattr(r, "lhs"):
                out.append(f"{mpmath.nstr(_mp_value(r.lhs, env), 6)} {r.rel_op} "
                           f"{mpmath.nstr(_mp_value(r.rhs, env), 6)}")
    return out


def _digits(x, digits: int = 40) -> str:
    """An exact rational (hundreds of digits at n = 10^100) to ``digits`` significant digits; the
    exact inputs next to it reproduce it."""
    with mpmath.workdps(digits + 10):
        return mpmath.nstr(_mpf(x), digits)


def _n_text(n: int) -> str:
    k = len(str(n)) - 1
    return f"10^{k}" if n == 10 ** k else str(n)


def _gradient_cross_check(ctx: Context) -> Finding:
    """The full-matrix gradient of the derived loss at a I is (f'(a)/d) I (float64, torch)."""
    rows, worst = [], 0.0
    for L in _loops(ctx):
        C = li.derived_loss(L, isotropic=True, with_u=False)
        for d, n, a in ((2, 5, 0.6), (3, 7, 1.3)):
            A = torch.tensor(a * np.eye(d), requires_grad=True)
            val = C.evaluate({"A": A}, {"n": n, "d": d})
            g, = torch.autograd.grad(val, A)
            G = ((g + g.T) / 2).numpy()
            expect = float(li.scalar_poly(L, n, d).diff(li.a_sym).eval(sympy.nsimplify(a))) / d
            err = float(np.abs(G - expect * np.eye(d)).max() / max(abs(expect), 1e-300))
            worst = max(worst, err)
            rows.append({"L": L, "d": d, "n": n, "a": a, "f_prime_over_d": expect,
                         "max_relative_deviation": err})
    ok = worst <= 1e-10
    return Finding("gradient_at_scalar_points", ok, {"rows": rows, "tolerance": 1e-10}, None if ok
                   else {"rows": rows}, "" if ok else "the gradient at a I is not (f'(a)/d) I")


def _gd_symbolic(ctx: Context, form: GDForm) -> TierResult:
    F = ctx.formulas
    loops = _by_budget(ctx, (1, 2, 3, 4, 5, 6), (1, 2, 3, 4, 5, 6, 8), (1, 2, 3, 4, 5, 6, 8, 10))
    rows, first = large_d_scan(F, form, loops)
    findings = [_gradient_cross_check(ctx)]
    level_rows, level_first = loss_level_scan(F, form, loops[:3])
    findings.append(Finding("loss_levels_exact", level_first is None, {
        "family": f"Sigma* = I, A = a I, n = {_n_text(GD_N)}, d in {list(LEVEL_DIMS)}, a in "
                  f"{{-1, 3, 1 -+ 2^-j for j in {list(LEVEL_EXPONENTS)}}}: the loss from ~d 2^(2L) "
                  f"down to ~d 2^(-128 L), wherever the hypothesis admits it", "by_L_d": level_rows},
        level_first, "" if level_first is None else
        f"fails at L = {level_first['L']}, d = {level_first['d']}, A = {level_first['A']}"))
    min_rows, min_first = minimiser_scan(F, form, loops[:3])
    findings.append(Finding("minimiser_excluded", min_first is None, {
        "points": "A = a* I for d in %s, n in %s: the gradient vanishes, so the hypothesis must "
                  "exclude the minimal loss" % (list(MINIMISER_DIMS),
                                                [_n_text(x) for x in MINIMISER_NS]),
        "admitted": min_rows}, min_first,
        "" if min_first is None else
        f"the hypothesis admits the minimiser a* I (zero gradient) at L = {min_first['L']}, "
        f"d = {min_first['d']}, n = {min_first['n']}"))
    ok = first is None
    findings.append(Finding("scalar_family_exact", ok, {
        "family": "Sigma* = I, A = a I (a = 1/2; for Lemma A.10 a with d(1-a)^{2L} = (9/10)^{2L}), "
                  f"n = {_n_text(GD_N)}; per L the smallest d at which the statement fails "
                  "(bisection "
                  f"over d <= 2^20)", "by_L": rows}, first,
        "" if ok else f"fails at L = {first['L']}, d = {first['d']}, n = {first['n']}, "
                      f"A = {first['A']}"))
    steps = [step("Gradient at a I",
                  r"\nabla_A L(aI,0) = \frac{f'(a)}{d} I,\quad \|\nabla_A L\|_F^2"
                  r" = \frac{f'(a)^2}{d}",
                  "L(., 0) is invariant under A -> O A O^T at Sigma* = I, so its gradient at a I "
                  "commutes with every O; checked against autograd of the derived loss."),
             step("Large n", r"f(a) \to d(1-a)^{2L},\ \frac{\|\nabla\|^2}{L(A,0)^{(2L-1)/L}} \to "
                  r"4L^2 d^{(1-L)/L}",
                  "So the ratio falls below any constant once d is large; the exact polynomials in "
                  f"n and d are evaluated at n = {_n_text(GD_N)} and the smallest failing d "
                  "found by bisection. The ratio is the same at every a, so the power of the "
                  "loss is checked apart: at a = -1, 3 and 1 -+ 2^-j (j <= 64), the loss from "
                  "about d 2^(2L) down to d 2^(-128 L), wherever the hypothesis admits it."),
             step("The minimiser", r"\nabla_A L(a^*I, 0) = 0 \Rightarrow L(a^*I, 0) < "
                  r"\text{threshold}",
                  "a* I is the global minimiser (Thm. 3.2), so the hypothesis must exclude its "
                  "loss f(a*); checked at n from 1 (below d, where f(a*) >= d - n) to 10^8 and d "
                  "up to 1000, with a* certified to 10^-120."),
             step("Where the proof breaks",
                  r"\sum_i x_i^{4L-2} \ge d^{-(L-1)/L}\Big(\sum_i x_i^{2L}"
                  r"\Big)^{(2L-1)/L}",
                  "Hoelder gives this exponent (the proof of Lemma A.10 writes (L-1)/(2L-1)) and "
                  "then drops the factor d^{-(L-1)/L}; the corrections restore it.")]
    return combine(findings, steps=steps)


def _spectra_grad(C: Poly, lam: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Loss and ||grad||_F^2 at A = diag(lam) (a batch (B, d)): at a diagonal A the gradient of an
    orthogonally invariant loss is diagonal, so ||grad||^2 = sum_i (dL/dlambda_i)^2."""
    t = torch.tensor(lam, dtype=torch.float64, requires_grad=True)
    A = torch.diag_embed(t)
    val = C.evaluate({"A": A}, {"n": n, "d": lam.shape[1]})
    g, = torch.autograd.grad(val.sum(), t)
    return val.detach().numpy(), (g ** 2).sum(1).numpy()


class _FloatGD:
    """The named hypothesis and bound in float64 (numpy) for the search."""

    def __init__(self, F, form: GDForm) -> None:
        syms = [sympy.Symbol(x, positive=True) for x in ("loss", "epsilon")]
        dl = sympy.Symbol("delta", positive=True)
        sizes = [N, D, L_SYM]
        sub = {dl: F["delta"]} if "delta" in F else {}
        self.hyp = sympy.lambdify(sizes + syms, F["hypothesis"].subs(sub), "numpy")
        self.rhs = sympy.lambdify(sizes + syms, F["rhs"].subs(sub), "numpy")
        self.form = form

    def ratio(self, n, d, L, loss: float, g2: float) -> float | None:
        """||grad||^2 / rhs at the most demanding admissible epsilon (None: not admissible).
        In float64 throughout: a threshold that overflows (4^n at n = 10^8) is inf, not an
        OverflowError, and a vanishing rhs gives an infinite ratio."""
        n, d, L = np.float64(n), np.float64(d), np.float64(L)
        with np.errstate(all="ignore"):
            return self._ratio(n, d, L, np.float64(loss), np.float64(g2))

    def _ratio(self, n, d, L, loss, g2) -> float | None:
        if not self.form.uses_eps:
            if not bool(self.hyp(n, d, L, loss, 1.0)):
                return None
            return g2 / float(self.rhs(n, d, L, loss, 1.0))
        grid = [2.0 ** -k for k in range(40, -5, -1)]
        ok = [e for e in grid if bool(self.hyp(n, d, L, loss, e))]
        if not ok:
            return None
        lo, hi = max(ok), max(ok) * 2
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if bool(self.hyp(n, d, L, loss, mid)) else (lo, mid)
        return g2 / float(self.rhs(n, d, L, loss, lo))


def _gd_numeric(ctx: Context, form: GDForm) -> TierResult:
    """Search at practical sizes: random spectra of A, the ratio ||grad||^2 / rhs over the
    admissible points (float64; a ratio below 1 is confirmed exactly); its minimum is the closest
    approach."""
    F = ctx.formulas
    fl = _FloatGD(F, form)
    rng = ctx.rng("gd-search")
    samples = _by_budget(ctx, 400, 2000, 10000)
    rows, closest, viol = [], None, None
    for L in _loops(ctx):
        C = li.derived_loss(L, isotropic=True, with_u=False)
        for d in (1, 2, 3):
            for n in (d + 1, 10, 100, 10 ** 4, 10 ** 8):
                lam = np.exp(rng.uniform(np.log(0.01), np.log(4.0), (samples, d)))
                lam *= np.where(rng.random((samples, d)) < 0.2, -1.0, 1.0)
                loss, g2 = _spectra_grad(C, lam, n)
                best, admitted = None, 0
                order = np.argsort(g2 / np.maximum(loss, 1e-300) ** ((2 * L - 1) / L))
                for i in order[:60]:
                    r = fl.ratio(n, d, L, float(loss[i]), float(g2[i]))
                    if r is None:
                        continue
                    admitted += 1
                    if best is None or r < best[0]:
                        best = (r, i)
                if best is None:
                    continue
                r, i = best
                row = {"L": L, "d": d, "n": n, "min_ratio": float(r) if np.isfinite(r) else str(r),
                       "at_eigenvalues": lam[i].tolist(),
                       "loss": float(loss[i]), "grad_sq": float(g2[i])}
                rows.append(row)
                if closest is None or r < closest_ratio:
                    closest, closest_ratio = row, r
                if r < 1 - 1e-9 and viol is None:
                    lam_q = [sympy.nsimplify(v, rational=True) for v in lam[i]]
                    lq = _exact_value(C, {"A": sympy.diag(*lam_q), "Sigma": sympy.eye(d)}, n)
                    bad, info = form.violated(F, n, d, L, lq, sympy.nsimplify(float(g2[i]),
                                                                              rational=True))
                    if bad:
                        viol = {**row, "exact_loss": str(lq), "rhs": info["rhs"]}
    ok = viol is None
    return combine([Finding("search_at_practical_sizes", ok, {
        "samples_per_size": samples, "searched": rows, "closest_approach": closest,
        "ratio": "||grad||^2 / rhs at admissible points (< 1 violates)"}, viol,
        "" if ok else "a violation at practical sizes")])


THM34_FORMULAS = (
    NamedFormula("hypothesis", "loss >= 16*L*d*4**L/sqrt(n)", _GD_SYMBOLS, equation="Thm. 3.4",
                 description="L(A, 0) >= 16 L d 4^L / sqrt(n)", weaker="narrower"),
    NamedFormula("rhs", "loss**((2*L - 1)/L)/16", _GD_SYMBOLS, equation="Thm. 3.4",
                 description="||grad_A L(A, 0)||^2 >= L(A, 0)^{(2L-1)/L} / 16", weaker="smaller"),
)
GD_CORRECTION_RHS = "loss**((2*L - 1)/L)/(16*d**((L - 1)/L))"

THM3_4 = Claim(
    id="gatmiry2024.thm3_4",
    title="Gradient dominance of the loss at u = 0 (Sigma* = I)",
    paper=PAPER,
    statement=r"For $\Sigma^*=I$ and any $A$ with $L(A,0)\ge\frac{16Ld4^L}{\sqrt n}$, "
              r"$\|\nabla_AL(A,0)\|^2\ge\frac1{16}L(A,0)^{(2L-1)/L}$.",
    assumptions=("Sigma* = I, u = 0", "A symmetric (the gradient on symmetric matrices, "
                                      "Frobenius norm)"),
    formulas=THM34_FORMULAS,
    checks={"symbolic": lambda ctx: _gd_symbolic(ctx, GDForm(False)),
            "numeric": single_threaded(lambda ctx: _gd_numeric(ctx, GDForm(False)))},
    setting=GD_SETTING,
    correction=Correction(
        description="||grad_A L(A, 0)||^2 >= L(A, 0)^{(2L-1)/L} / (16 d^{(L-1)/L})",
        reason="Hoelder's inequality in the proof of Lemma A.10 gives the factor d^{-(L-1)/L}, "
               "which the proof drops; at A = a I and large n the ratio is 64 L^2 d^{(1-L)/L}",
        formulas={"rhs": GD_CORRECTION_RHS}),
)

THM_A11_FORMULAS = (
    NamedFormula("hypothesis", "loss >= 2*(4*delta)**(2*L)", _GD_SYMBOLS, equation="Thm. A.11",
                 description="L(A, 0) >= 2 (4 delta)^{2L}", weaker="narrower"),
    NamedFormula("delta", "(8*L*d/sqrt(n))**(1/(2*L))", (_N, _D, _L), equation="Sec. 3.5",
                 description="delta := (8 L d / sqrt(n))^{1/(2L)}"),
    NamedFormula("rhs", "loss**((2*L - 1)/L)/16", _GD_SYMBOLS, equation="Thm. A.11",
                 description="||grad L(A, 0)||^2 >= L(A, 0)^{(2L-1)/L} / 16", weaker="smaller"),
)

THM_A11 = Claim(
    id="gatmiry2024.thm_a11",
    title="Restatement of Theorem 3.4 (threshold 2 (4 delta)^{2L})",
    paper=PAPER,
    statement=r"For any $A$ with $L(A,0)\ge2(4\delta)^{2L}$, $\|\nabla_AL(A,0)\|^2\ge\frac1{16}"
              r"L(A,0)^{(2L-1)/L}$.",
    assumptions=("Sigma* = I (as in Thm. 3.4; the restatement omits it), u = 0",
                 "delta = (8 L d / sqrt(n))^{1/(2L)}"),
    formulas=THM_A11_FORMULAS,
    checks={"symbolic": lambda ctx: _gd_symbolic(ctx, GDForm(False)),
            "numeric": single_threaded(lambda ctx: _gd_numeric(ctx, GDForm(False)))},
    setting=GD_SETTING,
    correction=Correction(description=THM3_4.correction.description,
                          reason=THM3_4.correction.reason, formulas={"rhs": GD_CORRECTION_RHS}),
    notes="The threshold 2(4 delta)^{2L} = 16 L d 16^L / sqrt(n) differs from Thm. 3.4's "
          "16 L d 4^L / sqrt(n).",
)

LEMMA_A10_FORMULAS = (
    NamedFormula("hypothesis", "(8*delta*d**(3/(4*L)) <= epsilon) & (epsilon <= 1) & "
                 "(4*d*delta**(4*L - 2) <= 1) & "
                 "(loss >= epsilon**(2*L) + d*delta**(2*L)*(epsilon + 2)**(2*L))", _GD_SYMBOLS,
                 equation="Lemma A.10", description="the conditions on epsilon, delta and L(A, 0)",
                 weaker="narrower"),
    NamedFormula("delta", "(8*L*d/sqrt(n))**(1/(2*L))", (_N, _D, _L), equation="Sec. 3.5",
                 description="delta := (8 L d / sqrt(n))^{1/(2L)}"),
    NamedFormula("rhs", "epsilon**(4*L - 2)/4", _GD_SYMBOLS, equation="Lemma A.10",
                 description="||grad L(A, 0)||^2 >= epsilon^{4L-2} / 4", weaker="smaller"),
)

LEMMA_A10 = Claim(
    id="gatmiry2024.lemma_a10",
    title="Gradient dominance in terms of epsilon",
    paper=PAPER,
    statement=r"If $8\delta d^{3/(4L)}\le\epsilon\le1$, $4d\delta^{4L-2}\le1$ and $L(A,0)\ge"
              r"\epsilon^{2L}+d\delta^{2L}(\epsilon+2)^{2L}$, then $\|\nabla L(A,0)\|^2\ge\frac14"
              r"\epsilon^{4L-2}$.",
    assumptions=("Sigma* = I, u = 0", "delta = (8 L d / sqrt(n))^{1/(2L)}"),
    formulas=LEMMA_A10_FORMULAS,
    checks={"symbolic": lambda ctx: _gd_symbolic(ctx, GDForm(True)),
            "numeric": single_threaded(lambda ctx: _gd_numeric(ctx, GDForm(True)))},
    setting=GD_SETTING,
    correction=Correction(
        description="||grad L(A, 0)||^2 >= epsilon^{4L-2} / (4 d^{(L-1)/L})",
        reason="the proof's Hoelder step has the exponent (L-1)/(2L-1) for (L-1)/L and then drops "
               "the factor d^{-(L-1)/L}",
        formulas={"rhs": "epsilon**(4*L - 2)/(4*d**((L - 1)/L))"}),
    notes="The proof cites 'Lemma ??' twice (dangling references).",
)

# ==============================================================================================
# Gradient flow: Theorem 3.3 and its restatement A.12
# ==============================================================================================
FLOW_SETTING = _setting({"n": 20, "d": 3, "L": 2})
_FLOW_SYMBOLS = (_N, _D, _L, _DELTA, _XI)
FLOW_XI = sympy.Rational(1, 10 ** 6)  # the target loss of the large-d scan (any xi << d works)
CLOSE_XI = sympy.Rational(1, 10 ** 12)  # small enough that c < 1 in Thm. 3.3 (2) for L = 2, 3


def _flow_named(F, name: str, n, d, L, xi) -> mpmath.mpf:
    """A named formula of the section at (n, d, L, xi) in mpmath (delta from its own formula);
    nan where it divides by zero (a time in 1/(L - 2) at L = 2), which every comparison fails."""
    try:
        return _mp_value(_gd_expr(F, name), {**_gd_env(n, d, L), "xi": sympy.sympify(xi)})
    except ZeroDivisionError:
        return mpmath.nan


def _mp_coeffs(poly: sympy.Poly) -> list:
    return [mpmath.mpf(int(c.p)) / int(c.q) for c in poly.all_coeffs()]


def scalar_flow_time(L: int, n: int, d: int, xi, a0=0) -> tuple[mpmath.mpf, mpmath.mpf]:
    """Time for the flow dA/dt = -grad_A L(A, 0) from A(0) = a0 I (Sigma* = I) to reach
    L = xi, and the level a_xi where it does.  By orthogonal invariance A(t) = a(t) I with
    da/dt = -f'(a)/d, so t = int_{a0}^{a_xi} d / (-f'(a)) da (f(a_xi) = xi, a0 <= a_xi < a*);
    mpmath quadrature on the exact polynomial (30 digits)."""
    f = li.scalar_poly(L, n, d)
    fp = f.diff(li.a_sym)
    with mpmath.workdps(30):
        cf, cp = _mp_coeffs(f), _mp_coeffs(fp)
        x = mpmath.mpf(xi)
        lo, hi = mpmath.mpf(a0), _mp_a_star(L, n, d)
        if mpmath.polyval(cf, lo) <= x:
            return mpmath.mpf(0), lo
        for _ in range(200):  # f decreases on [a0, a*]
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if mpmath.polyval(cf, mid) > x else (lo, mid)
        a_xi = (lo + hi) / 2
        t = mpmath.quad(lambda a: d / -mpmath.polyval(cp, a), [mpmath.mpf(a0), a_xi])
    return t, a_xi


def scalar_flow_position(L: int, n: int, d: int, t, a0=0) -> mpmath.mpf:
    """a(t) of the scalar flow (A(0) = a0 I, a0 < a*): the root of
    int_{a0}^{a} d / (-f'(b)) db = t (increasing in a, infinite at a*), by safeguarded Newton
    (dt/da = d / (-f'(a))) at 30 digits; f' Taylor-shifted to a* (``Inflow``), so that it does
    not cancel to 0 near a*.  Within 10^FARTHEST_FLOOR of a* (a time of 10^10^12, or infinite) it
    stops there."""
    with mpmath.workdps(30):
        flow = Inflow.at(L, n, d)
        a_opt = flow.a_opt
        t = mpmath.mpf(t)
        lo, hi = mpmath.mpf(a0), a_opt
        rate = lambda b: d / -mpmath.polyval(flow.fp_shift, b - a_opt)  # noqa: E731
        a, t_a = lo, mpmath.mpf(0)
        for _ in range(200):
            if abs(t_a - t) <= mpmath.mpf(10) ** -20 * max(1, t):
                break
            if a_opt - a < mpmath.mpf(10) ** FARTHEST_FLOOR:
                break
            lo, hi = (a, hi) if t_a < t else (lo, a)
            nxt = a + (t - t_a) / rate(a) if mpmath.isfinite(t) else hi
            if not lo < nxt < hi:
                nxt = (lo + hi) / 2
            t_a = t_a + mpmath.quad(rate, [a, nxt])
            a = nxt
        return a


def _mp_a_star(L: int, n: int, d: int, digits: int = 30) -> mpmath.mpf:
    """a*(n, d, L) by bisection on f' (strictly increasing) at ``digits`` digits; works at any n
    (``looped_icl.a_star_rational`` certifies 120 digits and is slower at n = 10^100)."""
    with mpmath.workdps(digits):
        cp = _mp_coeffs(li.scalar_poly(L, n, d).diff(li.a_sym))
        lo, hi = mpmath.mpf(0), mpmath.mpf(1)
        while mpmath.polyval(cp, hi) < 0:
            hi *= 2
        for _ in range(int(digits * 3.4) + 10):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if mpmath.polyval(cp, mid) < 0 else (lo, mid)
        return (lo + hi) / 2


def scalar_flow_ivp(L: int, n: int, d: int, xi: float | None, t_end: float,
                    a0: float = 0.0) -> dict:
    """The same flow with scipy's solve_ivp (float64): the time the loss reaches xi (an event;
    none when xi is None) and a(t_end)."""
    from scipy.integrate import solve_ivp

    f = np.array([float(c) for c in li.scalar_poly(L, n, d).all_coeffs()])
    fp = np.polyder(f)
    # in s = log(1 + t) the power-law approach a* - a ~ t^{-1/(2L-2)} takes O(1) steps per decade
    hit = lambda s, y: np.polyval(f, y[0]) - xi  # noqa: E731
    sol = solve_ivp(lambda s, y: [-np.expm1(s) * np.polyval(fp, y[0]) / d
                                  - np.polyval(fp, y[0]) / d], (0.0, np.log1p(t_end)), [a0],
                    method="LSODA", events=hit if xi is not None else None, rtol=1e-10,
                    atol=1e-13)
    t_hit = float(np.expm1(sol.t_events[0][0])) if xi is not None and len(sol.t_events[0]) \
        else None
    return {"t_hit": t_hit, "a_at_t_end": float(sol.y[0, -1]), "status": sol.status,
            "rhs_evaluations": int(sol.nfev)}


@dataclass(frozen=True)
class FlowForm:
    with_closeness: bool  # Thm. 3.3 (2): (1 - c) A^opt <= A(t) <= (1 + c) A^opt


def _flow_case(F, L: int, n: int, d: int, xi) -> dict:
    """At the scalar start A(0) = 0: the true hitting time vs the named time bound."""
    t_true, a_xi = scalar_flow_time(L, n, d, xi)
    with mpmath.workdps(30):
        bound = _flow_named(F, "time", n, d, L, xi)
        return {"t_true": t_true, "t_bound": bound, "ok": t_true <= bound, "a_xi": a_xi}


def flow_large_d_scan(F, loops: Sequence[int], n: int = GD_N, xi=FLOW_XI, d_max: int = 2 ** 20):
    """Per L, the smallest d at which the flow from A(0) = 0 has not reached xi by the named
    time (bisection: t_true / t_bound grows like d^{(L-1)/L} at large n)."""
    rows, first = {}, None
    for L in loops:
        if not _holds(_gd_expr(F, "hypothesis"), {**_gd_env(n, d_max, L), "xi": xi}):
            rows[f"L={L}"] = {"hypothesis_fails_at_d_max": True}
            continue
        if _flow_case(F, L, n, d_max, xi)["ok"]:
            rows[f"L={L}"] = {"smallest_failing_d": None, "checked_up_to_d": d_max}
            continue
        lo, hi = 1, d_max
        if not _flow_case(F, L, n, 1, xi)["ok"]:
            hi = 1
        while lo + 1 < hi:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if not _flow_case(F, L, n, mid, xi)["ok"] else (mid, hi)
        c = _flow_case(F, L, n, hi, xi)
        row = {"smallest_failing_d": hi, "t_true": mpmath.nstr(c["t_true"], 15),
               "t_bound": mpmath.nstr(c["t_bound"], 15)}
        if hi > 1:
            prev = _flow_case(F, L, n, hi - 1, xi)
            row["at_d_minus_1"] = {"t_true": mpmath.nstr(prev["t_true"], 15),
                                   "t_bound": mpmath.nstr(prev["t_bound"], 15)}
        rows[f"L={L}"] = row
        if first is None or hi < first["d"]:
            ivp = scalar_flow_ivp(L, n, hi, float(xi), 4 * float(c["t_true"]))
            first = {"L": L, "d": hi, "n": _n_text(n), "xi": str(xi), "A0": "0",
                     "Sigma_star": "I_d", "t_to_reach_xi_quadrature": mpmath.nstr(c["t_true"], 20),
                     "t_to_reach_xi_solve_ivp": ivp["t_hit"],
                     "named_time_bound": mpmath.nstr(c["t_bound"], 20),
                     "loss_at_named_time": _loss_at_time(L, n, hi, float(c["t_bound"]))}
    return rows, first


def _loss_at_time(L: int, n: int, d: int, t: float) -> float:
    a = scalar_flow_position(L, n, d, t)
    with mpmath.workdps(30):
        return float(mpmath.polyval(_mp_coeffs(li.scalar_poly(L, n, d)), a))


def _closeness_finding(F, loops: Sequence[int], dims: Sequence[int], n: int = GD_N,
                       xi=FLOW_XI) -> Finding:
    """Thm. 3.3 (2) at the named time: (1 - c) a* <= a(t) <= (1 + c) a* (A(0) = 0)."""
    rows, bad = [], None
    for L in loops:
        for d in dims:
            with mpmath.workdps(30):
                t = _finite_real(_flow_named(F, "time", n, d, L, xi))
                c = _finite_real(_flow_named(F, "c", n, d, L, xi))
            if t is None or c is None:
                row = {"L": L, "d": d, "ok": False,
                       "why": "the named time or radius is not a real number"}
            else:
                a_t = scalar_flow_position(L, n, d, max(t, 0))
                a_opt = _mp_a_star(L, n, d)
                ok = (1 - c) * a_opt <= a_t <= (1 + c) * a_opt
                row = {"L": L, "d": d, "t": mpmath.nstr(t, 15), "a_t": float(a_t),
                       "a_star": float(a_opt), "c": float(c), "ok": bool(ok)}
            rows.append(row)
            if not row["ok"] and bad is None:
                bad = row
    return Finding("closeness_at_the_named_time", bad is None, {"n": _n_text(n), "xi": str(xi),
                   "rows": rows}, bad,
                   "" if bad is None else bad.get("why", "A(t) is outside (1 +- c) A^opt"))


def _taylor_shift(coeffs: Sequence, a) -> list:
    """The coefficients (highest first) of p(a + u), from those of p: repeated synthetic division
    by (x - a), so that p near a is evaluated without cancellation."""
    rest, out = list(coeffs), []
    while rest:
        acc, quotient = mpmath.mpf(0), []
        for c in rest:
            acc = acc * a + c
            quotient.append(acc)
        out.append(quotient.pop())
        rest = quotient
    return out[::-1]


FARTHEST_FLOOR = -25  # log10 of the smallest |a - a*| the probes from infinity resolve


@dataclass(frozen=True)
class Inflow:
    """The scalar flow da/dt = -f'(a)/d (Sigma* = I, A = a I) coming in from a = side * oo: it
    arrives in finite time (f' grows like a^{2L-1}), and a flow from any finite start on that
    side is nearer a* at every t, so it is the supremum over the starts a0 I.  Positions are
    a* + side e^y; ``time_to(y)`` = int_{a* + side e^y}^{side oo} d / |f'(b)| db, taken over y,
    where the integrand is smooth at both ends (f' is Taylor-shifted to a*: no cancellation)."""

    L: int
    n: int
    d: int
    side: int
    a_opt: mpmath.mpf
    f_shift: tuple  # f(a* + u), highest coefficient first
    fp_shift: tuple  # f'(a* + u)

    @classmethod
    @lru_cache(maxsize=256)  # a probe row asks for it two or three times
    def at(cls, L: int, n: int, d: int, side: int = -1, digits: int = 30) -> "Inflow":
        with mpmath.workdps(digits):
            a_opt = _mp_a_star(L, n, d, digits + 15)
            f = li.scalar_poly(L, n, d)
            return cls(L, n, d, side, a_opt, tuple(_taylor_shift(_mp_coeffs(f), a_opt)),
                       tuple(_taylor_shift(_mp_coeffs(f.diff(li.a_sym)), a_opt)))

    def position(self, y) -> mpmath.mpf:
        return self.a_opt + self.side * mpmath.exp(y)

    def speed(self, y) -> mpmath.mpf:
        """d(time)/dy = d e^y / |f'(a* + side e^y)|."""
        u = mpmath.exp(y)
        return self.d * u / abs(mpmath.polyval(self.fp_shift, self.side * u))

    def time_to(self, y) -> mpmath.mpf:
        return mpmath.quad(self.speed, [y, y + 10, mpmath.inf])

    def loss(self, y) -> mpmath.mpf:
        return mpmath.polyval(self.f_shift, self.side * mpmath.exp(y))


def scalar_flow_from_infinity(L: int, n: int, d: int, t, side: int = -1,
                              digits: int = 30) -> mpmath.mpf | None:
    """a(t) of the scalar flow from a = side * oo (``Inflow``): solves time_to(y) = t for
    y = log|a - a*| (Newton, safeguarded).  None when |a(t) - a*| is below 10^FARTHEST_FLOOR."""
    with mpmath.workdps(digits):
        flow = Inflow.at(L, n, d, side, digits)
        t = mpmath.mpf(t)
        lo, hi = FARTHEST_FLOOR * mpmath.log(10), mpmath.inf  # time_to(lo) > t >= time_to(hi)
        if flow.time_to(lo) < t:
            return None
        # the large-n start: |a - a*|^{-(2L-2)} = 4 L (L - 1) t
        y = max(lo, -mpmath.log(4 * L * (L - 1) * t) / (2 * L - 2))
        tau = flow.time_to(y)
        for _ in range(200):
            if abs(tau - t) <= mpmath.mpf(10) ** (8 - digits) * t:
                break
            lo, hi = (max(lo, y), hi) if tau > t else (lo, min(hi, y))
            nxt = y + (tau - t) / flow.speed(y)
            if not lo < nxt < hi:
                nxt = (lo + hi) / 2 if hi < mpmath.inf else y + 1
            tau = flow.time_to(nxt) if abs(nxt - y) > 5 else tau - mpmath.quad(flow.speed, [y, nxt])
            y = nxt
        return flow.position(y)


def hitting_time_from_infinity(L: int, n: int, d: int, xi, side: int = -1,
                               digits: int = 30) -> mpmath.mpf | None:
    """The time the flow from a = side * oo takes to reach loss xi (the supremum of the hitting
    times over the starts a0 I on that side): the level a_xi = a* + side e^y with f(a_xi) = xi
    by bisection on y, then time_to(y).  None when xi is not above f(a*) + the floor's loss."""
    with mpmath.workdps(digits):
        flow = Inflow.at(L, n, d, side, digits)
        xi = _mpf(xi)
        lo, hi = FARTHEST_FLOOR * mpmath.log(10), mpmath.mpf(0)
        if not flow.loss(lo) < xi:
            return None
        while flow.loss(hi) <= xi:
            hi += 10
        for _ in range(digits * 4):  # f increases in y on either side
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if flow.loss(mid) <= xi else (lo, mid)
        return flow.time_to(hi)  # f(a* + side e^hi) >= xi: a lower bound on the hitting time


# d = 10^12 with xi = 10^3 (d >> xi >> 1): a time that is ~ constant for xi >> L but should grow
# like (d/xi)^{(L-1)/L} fails only there
FARTHEST_PROBE_SIZES = tuple((L, n, d) for L in (2, 3) for n in (10 ** 12, 10 ** 40)
                             for d in (1, 16, 10 ** 12))
FARTHEST_PROBE_XI = tuple(sympy.Integer(10) ** k for k in (-12, 0, 3, 12, 40))
RADIUS_START_FRACTION = mpmath.mpf(10) ** -6  # the concrete start: the flow from -oo at 1e-6 T


def _admitted_targets(F, sizes: Sequence, xis: Sequence):
    """(L, n, d, xi) over the sizes and targets xi that the hypothesis admits."""
    hyp = _gd_expr(F, "hypothesis")
    for L, n, d in sizes:
        for xi in xis:
            if _holds(hyp, {**_gd_env(n, d, L), "xi": xi}):
                yield L, n, d, xi


def _farthest_finding(name: str, starts: str, rows: list, say: Callable[[dict], str]) -> Finding:
    """A farthest-start probe's finding: its first failing row is the counterexample, told by
    its own ``why`` or by ``say``, after the instance."""
    bad = next((r for r in rows if not r["ok"]), None)
    return Finding(name, bad is None, {"family": f"Sigma* = I, A(0) = a0 I with {starts}; xi in "
                                                 "10^-12 .. 10^40 where the hypothesis admits it",
                                       "rows": rows}, bad,
                   "" if bad is None else f"at L = {bad['L']}, n = {bad['n']}, d = {bad['d']}, "
                                          f"xi = {bad['xi']} {bad.get('why') or say(bad)}")


def flow_radius_probe(F, sizes: Sequence = FARTHEST_PROBE_SIZES,
                      xis: Sequence = FARTHEST_PROBE_XI) -> Finding:
    """Thm. 3.3 (2) against the worst scalar start: at the named time T the flow from
    A(0) = a0 I with a0 -> -oo is the farthest below A^opt (1 - a(T)/a* grows like
    xi^{1/(2L)} (4 L (L - 1) K)^{-1/(2L-2)} when T = K xi^{-(L-1)/L}), at every xi the hypothesis
    admits from 10^-12 to 10^40.  The closeness check at one xi from A(0) = 0 passed radii in
    another power of xi, or constant in xi.  A violation is confirmed at a concrete start."""
    rows = []
    for L, n, d, xi in _admitted_targets(F, sizes, xis):
        with mpmath.workdps(30):
            T, c = _flow_named(F, "time", n, d, L, xi), _flow_named(F, "c", n, d, L, xi)
        row = {"L": L, "n": _n_text(n), "d": d, "xi": str(xi), "t": mpmath.nstr(T, 15),
               "c": mpmath.nstr(c, 15)}
        T, c = _finite_real(T), _finite_real(c)
        if T is None or T <= 0 or c is None:
            row.update(ok=False, why=f"the named time {row['t']} or radius {row['c']} is not a "
                                     "positive real number")
        else:
            a_t = scalar_flow_from_infinity(L, n, d, T)
            a_opt = Inflow.at(L, n, d).a_opt
            dev = mpmath.mpf(0) if a_t is None else 1 - a_t / a_opt
            row.update(sup_deviation=("< 1e-25" if a_t is None else mpmath.nstr(dev, 15)),
                       ok=bool(dev <= c))
            if not row["ok"] and all(r["ok"] for r in rows) and c > 0:
                # the first violation, at a finite start: a0 = a(eps T) of the flow from -oo;
                # at T it is a((1 + eps) T)
                a0 = scalar_flow_from_infinity(L, n, d, RADIUS_START_FRACTION * T)
                a_end = scalar_flow_from_infinity(L, n, d, (1 + RADIUS_START_FRACTION) * T)
                if a_end is not None:  # else within 1e-25 of a* at T: not confirmed, kept
                    dev_end = 1 - a_end / a_opt
                    row.update(A0=f"{mpmath.nstr(a0, 15)} I", a_at_t=mpmath.nstr(a_end, 15),
                               deviation_at_t=mpmath.nstr(dev_end, 15), ok=bool(dev_end <= c))
        rows.append(row)
    return _farthest_finding(
        "closeness_from_the_farthest_start", "a0 -> -oo (the farthest scalar start)", rows,
        lambda b: f"the flow from A(0) = {b.get('A0', '-oo I')} is "
                  f"{b.get('deviation_at_t', b['sup_deviation'])} below A^opt at the named time "
                  f"> c = {b['c']}")


def flow_farthest_time_probe(F, sizes: Sequence = FARTHEST_PROBE_SIZES,
                             xis: Sequence = FARTHEST_PROBE_XI) -> Finding:
    """The time bound against the farthest scalar starts: the flow from A(0) = a0 I with
    a0 -> +-oo takes a finite time, the supremum over those starts, to reach loss xi; at every
    xi the hypothesis admits from 10^-12 to 10^40.  From A(0) = 0 the loss starts at f(0) <= d,
    so at xi >= d that start says nothing and a time too short at large xi passed.  A violation
    is confirmed at a concrete start."""
    rows = []
    for L, n, d, xi in _admitted_targets(F, sizes, xis):
        with mpmath.workdps(30):
            T = _flow_named(F, "time", n, d, L, xi)
        row = {"L": L, "n": _n_text(n), "d": d, "xi": str(xi), "t_named": mpmath.nstr(T, 15)}
        T = _finite_real(T)
        times = {side: hitting_time_from_infinity(L, n, d, xi, side) for side in (-1, 1)}
        side = max(times, key=lambda k: times[k] or 0)
        t_sup = times[side]
        if t_sup is None:  # xi within 10^-25 of f(a*): flow_xi_probe's ground
            continue
        row["t_sup_over_starts"] = mpmath.nstr(t_sup, 15)
        if T is None:
            row.update(ok=False, why=f"the named time {row['t_named']} is not a real number")
        else:
            row["ok"] = bool(t_sup <= T)
            if not row["ok"] and all(r["ok"] for r in rows):
                # a finite start, tau0 in from the side: it needs t_sup - tau0 > T
                tau0 = (t_sup - max(T, 0)) / 2
                a0 = scalar_flow_from_infinity(L, n, d, tau0, side)
                row.update(A0=f"{mpmath.nstr(a0, 15)} I",
                           t_from_A0=mpmath.nstr(t_sup - tau0, 15))
        rows.append(row)
    return _farthest_finding(
        "hitting_time_from_the_farthest_start", "a0 -> -oo or +oo (the farthest scalar starts)",
        rows, lambda b: f"the flow from A(0) = {b['A0']} needs {b['t_from_A0']} > "
                        f"{b['t_named']} to reach xi")


FLOW_PROBE_SIZES = tuple((L, n, d) for L in (2, 3) for n in (10 ** 6, 10 ** 12) for d in (1, 16))
FLOW_PROBE_MULTIPLES = (sympy.Rational(1, 2), 2, 10 ** 6)  # xi as multiples of the optimal loss


def _optimal_loss(L: int, n: int, d: int, digits: int = 60) -> mpmath.mpf:
    """f(a*), the least loss on the line A = a I (Sigma* = I), at ``digits`` digits (30 lose it to
    cancellation at n = 10^12)."""
    with mpmath.workdps(digits):
        a = _mp_a_star(L, n, d, digits)
        return mpmath.polyval(_mp_coeffs(li.scalar_poly(L, n, d)), a)


def _smallest_admitted_xi(admits: Callable, lo: mpmath.mpf, hi: mpmath.mpf) -> mpmath.mpf | None:
    """The smallest xi in [lo, hi] the hypothesis admits (bisection on log xi, 60 steps), when
    it admits hi but not lo; None otherwise."""
    as_xi = lambda v: sympy.Float(mpmath.nstr(v, 40), 40)  # noqa: E731
    if admits(as_xi(lo)) or not admits(as_xi(hi)):
        return None
    a, b = mpmath.log(lo), mpmath.log(hi)
    for _ in range(60):
        mid = (a + b) / 2
        a, b = (a, mid) if admits(as_xi(mpmath.exp(mid))) else (mid, b)
    return mpmath.exp(b)


def flow_xi_probe(F, sizes: Sequence = FLOW_PROBE_SIZES,
                  multiples: Sequence = FLOW_PROBE_MULTIPLES) -> Finding:
    """The time bound where the hypothesis admits xi near the optimal loss f(a*): half of it,
    which the flow from A(0) = 0 never reaches (A(t) = a(t) I has loss >= f(a*)), twice and 10^6
    times it, and the smallest xi it admits (the true hitting time against the named time).
    The large-d scan uses one xi only, so a hypothesis that admits every xi, or a time in
    another power of xi, passed it."""
    rows, bad = [], None
    hyp = _gd_expr(F, "hypothesis")
    for L, n, d in sizes:
        f_star = _optimal_loss(L, n, d)
        if not f_star > 0:  # not resolved at 60 digits: no xi relative to it
            rows.append({"L": L, "n": _n_text(n), "d": d, "skipped": "f(a*) not resolved"})
            continue
        admits = lambda x: _holds(hyp, {**_gd_env(n, d, L), "xi": x})  # noqa: E731
        candidates = [f_star * m for m in multiples]
        edge = _smallest_admitted_xi(admits, 2 * f_star, mpmath.mpf(d))
        if edge is not None:
            candidates.append(edge)
        for value in candidates:
            m = value / f_star
            xi = sympy.Float(mpmath.nstr(value, 40), 40)
            if not admits(xi):
                continue
            row = {"L": L, "n": _n_text(n), "d": d, "xi": mpmath.nstr(value, 15),
                   "optimal_loss": mpmath.nstr(f_star, 15), "edge": value is edge}
            if m <= 1:
                row.update(ok=False, why="the hypothesis admits xi below the optimal loss, which "
                                         "the flow from A(0) = 0 never reaches")
            else:
                t_true, _ = scalar_flow_time(L, n, d, value)
                with mpmath.workdps(30):
                    bound = _flow_named(F, "time", n, d, L, xi)
                row.update(t_true=mpmath.nstr(t_true, 15), t_bound=mpmath.nstr(bound, 15),
                           ok=bool(t_true <= bound))
            rows.append(row)
            if not row["ok"] and bad is None:
                bad = row
    return Finding("hitting_time_near_the_optimal_loss", bad is None,
                   {"family": "Sigma* = I, A(0) = 0; xi = 1/2, 2, 10^6 times f(a*) and the "
                              "smallest xi the hypothesis admits, where it admits them",
                    "rows": rows}, bad,
                   "" if bad is None else (bad.get("why") or f"at L = {bad['L']}, n = {bad['n']}, "
                                           f"d = {bad['d']}, xi = {bad['xi']} the flow needs "
                                           f"{bad['t_true']} > {bad['t_bound']}"))


def _flow_steps() -> list:
    return [step("Scalar flow", r"A(0)=a_0I\Rightarrow A(t)=a(t)I,\quad \dot a=-\frac{f'(a)}{d},"
                 r"\quad t_\xi=\int_{a_0}^{a_\xi}\frac{d\,da}{-f'(a)}",
                 "L(., 0) is invariant under A -> O A O^T at Sigma* = I, so the flow from a I "
                 "stays "
                 "on the line; f is the exact loss on it (Wishart moments in n and d)."),
            step("Large n", r"\dot x=-2Lx^{2L-1},\ f=dx^{2L}\ \Rightarrow\ t_\xi\approx"
                 r"\frac{(d/\xi)^{(L-1)/L}}{4L(L-1)}",
                 "with x = 1 - a; the named bound does not grow with d, so it fails for large d."),
            step("The paper's ODE", r"g'=-\kappa g^{\frac{2L-1}{L}}\Rightarrow g(t)\le\Big("
                 r"\frac{L}{\kappa(L-1)t}\Big)^{L/(L-1)}",
                 "the proof of Thm. A.12 writes the exponents L/(2L-1) and (L-1)/(2L-1) and omits "
                 "the minus sign of g'; with kappa = 1/(16 d^{(L-1)/L}) (the corrected gradient "
                 "dominance) the time is 16 L d^{(L-1)/L} xi^{-(L-1)/L} / (L-1).")]


def _flow_symbolic(ctx: Context, form: FlowForm) -> TierResult:
    F = ctx.formulas
    loops = _by_budget(ctx, (2, 3, 4), (2, 3, 4, 5, 6), (2, 3, 4, 5, 6, 8))
    rows, first = flow_large_d_scan(F, loops)
    ok = first is None
    findings = [Finding("hitting_time_large_d", ok, {
        "family": f"Sigma* = I, A(0) = 0, n = {_n_text(GD_N)}, xi = {FLOW_XI}; per L the smallest "
                  "d at which L(A(t), 0) > xi at the named time (bisection over d <= 2^20)",
        "by_L": rows, "L_1": "excluded: the named time divides by L - 1"}, first,
        "" if ok else f"at L = {first['L']}, d = {first['d']} the flow needs "
                      f"{first['t_to_reach_xi_quadrature']} > {first['named_time_bound']}")]
    findings += [flow_xi_probe(F), flow_farthest_time_probe(F)]
    if form.with_closeness:
        findings += [_closeness_finding(F, loops[:2], (1, 10, 1000), xi=CLOSE_XI),
                     flow_radius_probe(F)]
    return combine(findings, steps=_flow_steps())


def _diag_flow(C: Poly, lam0: np.ndarray, n: int, xi: float, t_end: float) -> dict:
    """The full-matrix flow from A(0) = diag(lam0) (it stays diagonal: the loss is invariant under
    sign flips of coordinates), integrated by solve_ivp on the eigenvalues with the derived loss
    (torch autograd, float64)."""
    from scipy.integrate import solve_ivp

    d = len(lam0)

    def loss_grad(lam):
        t = torch.tensor(lam, dtype=torch.float64, requires_grad=True)
        val = C.evaluate({"A": torch.diag(t)}, {"n": n, "d": d})
        g, = torch.autograd.grad(val, t)
        return float(val.detach()), g.numpy()

    # in s = log(1 + t) (as scalar_flow_ivp): a named time of 10^50 is 115 units of s, not
    # 10^50 of t, which solve_ivp never finished
    hit = lambda s, y: loss_grad(y)[0] - xi  # noqa: E731
    s_end = float(np.log1p(t_end))
    sol = solve_ivp(lambda s, y: -np.exp(s) * loss_grad(y)[1], (0.0, s_end), lam0,
                    method="LSODA", events=hit, rtol=1e-9, atol=1e-12)
    t_hit = float(np.expm1(sol.t_events[0][0])) if len(sol.t_events[0]) else None
    return {"t_hit": t_hit, "lam_end": sol.y[:, -1].tolist(), "status": int(sol.status),
            "loss0": loss_grad(lam0)[0]}


FLOW_T_CAP = 1e6  # the numeric flows stop here: a named time of 10^50 took solve_ivp forever


def _flow_numeric(ctx: Context, form: FlowForm) -> TierResult:
    """Full-matrix flows at small d: random diagonal starts (every symmetric start is a rotation of
    one), n large enough that the hypothesis admits xi; the hitting time vs the named time."""
    F = ctx.formulas
    rng = ctx.rng("flow")
    starts = _by_budget(ctx, 2, 6, 12)
    n = 10 ** 12
    rows, bad = [], None
    for L in [L for L in _loops(ctx) if L >= 2]:
        C = li.derived_loss(L, isotropic=True, with_u=False)
        for d in _by_budget(ctx, (2,), (1, 2, 3)):
            with mpmath.workdps(30):
                thr = float(_mp_value(_gd_expr(F, "hypothesis").rhs if hasattr(
                    _gd_expr(F, "hypothesis"), "rhs") else 0, {**_gd_env(n, d, L), "xi": 1}))
            for s in range(starts):
                lam0 = rng.uniform(-1.0, 2.5, d) if s else np.zeros(d)
                xi = max(1.01 * thr, 1e-3)
                with mpmath.workdps(30):
                    T = float(_flow_named(F, "time", n, d, L, sympy.Rational(repr(xi))))
                if not np.isfinite(T):  # solve_ivp never ends on a nan interval
                    row = {"L": L, "d": d, "n": n, "xi": xi, "named_time": str(T), "ok": False,
                           "why": "the named time is not a real number"}
                    rows.append(row)
                    bad = bad or row
                    continue
                out = _diag_flow(C, lam0, n, xi, min(max(T, 1e-9), FLOW_T_CAP))
                if out["loss0"] <= xi:
                    continue
                # not reached by the cap < T: undecided (the farthest-start probe has that ground)
                ok = (out["t_hit"] <= T if out["t_hit"] is not None
                      else None if T > FLOW_T_CAP else False)
                row = {"L": L, "d": d, "n": n, "xi": xi, "A0_eigenvalues": lam0.tolist(),
                       "loss0": out["loss0"], "t_hit": out["t_hit"], "named_time": T,
                       "ok": ok}
                if T > FLOW_T_CAP:
                    row["integrated_to"] = FLOW_T_CAP
                elif form.with_closeness:
                    with mpmath.workdps(30):
                        c = float(_flow_named(F, "c", n, d, L, sympy.Rational(repr(xi))))
                    a_opt = float(_mp_a_star(L, n, d))
                    lam_T = np.array(out["lam_end"])
                    close = bool(np.all(((1 - c) * a_opt <= lam_T) & (lam_T <= (1 + c) * a_opt)))
                    row.update({"c": c, "eigenvalues_at_named_time": lam_T.tolist(),
                                "close": close})
                    ok = ok and close
                row["ok"] = ok
                rows.append(row)
                if ok is False and bad is None:
                    bad = row
    undecided = any(r["ok"] is None for r in rows)
    return combine([Finding("flows_at_small_d", False if bad else None if undecided else True,
                            {"flows": rows, "integrated_up_to": FLOW_T_CAP}, bad,
                            "" if bad is None and not undecided else "a flow misses the named bound"
                            if bad else f"a flow has not reached xi by t = {FLOW_T_CAP:g}, below "
                            "the named time")])


THM_A12_FORMULAS = (
    NamedFormula("hypothesis", "xi >= 2*(4*delta)**(2*L)", _FLOW_SYMBOLS, equation="Thm. A.12",
                 description="xi >= 2 (4 delta)^{2L}", weaker="narrower"),
    NamedFormula("delta", "(8*L*d/sqrt(n))**(1/(2*L))", (_N, _D, _L), equation="Sec. 3.5",
                 description="delta := (8 L d / sqrt(n))^{1/(2L)}"),
    NamedFormula("time", "(1/xi)**((L - 1)/L)*(16*L/(L - 1))**((L - 1)/(2*L - 1))", _FLOW_SYMBOLS,
                 equation="Thm. A.12", description="after this time L(A(t), 0) <= xi", weaker="larger"),
)
FLOW_CORRECTION = {"time": "(d/xi)**((L - 1)/L)*16*L/(L - 1)"}
FLOW_REASON = ("the corrected gradient dominance (Thm. 3.4 with the factor d^{-(L-1)/L}) and the "
               "correct solution of g' = -kappa g^{(2L-1)/L}; the paper's ODE solution has the "
               "exponents L/(2L-1), (L-1)/(2L-1) for L/(L-1), 1")

THM_A12 = Claim(
    id="gatmiry2024.thm_a12",
    title="Convergence of the gradient flow (time to reach loss xi)",
    paper=PAPER,
    statement=r"For $\xi\ge2(4\delta)^{2L}$, after $t\ge(1/\xi)^{(L-1)/L}(\frac{16L}{L-1})^{(L-1)/"
              r"(2L-1)}$ the flow $\dot A=-\nabla_AL(A,0)$ has $L(A(t),0)\le\xi$.",
    assumptions=("Sigma* = I, u = 0", "L >= 2 (the time divides by L - 1)",
                 "delta = (8 L d / sqrt(n))^{1/(2L)}"),
    formulas=THM_A12_FORMULAS,
    ranges=("L >= 2",),
    checks={"symbolic": lambda ctx: _flow_symbolic(ctx, FlowForm(False)),
            "numeric": single_threaded(lambda ctx: _flow_numeric(ctx, FlowForm(False)))},
    setting=FLOW_SETTING,
    correction=Correction(description="t >= 16 L d^{(L-1)/L} xi^{-(L-1)/L} / (L - 1)",
                          reason=FLOW_REASON, formulas=FLOW_CORRECTION),
    notes="The proof writes f' <= (1/16) f^{(2L-1)/L} for f' <= -(1/16) f^{(2L-1)/L}.",
)

THM3_3 = Claim(
    id="gatmiry2024.thm3_3",
    title="Convergence of the gradient flow (loss and closeness to A^opt)",
    paper=PAPER,
    statement=r"For $\xi\ge2(4\delta)^{2L}$, after $t\ge(1/\xi)^{(L-1)/L}(\frac{16L}{L-1})^{(L-1)/"
              r"(2L-1)}$: (1) $L(A(t))\le\xi$; (2) $(1-8(1+4d^{1/(2L)})\xi^{1/(2L)})A^{opt}"
              r"\preccurlyeq A\preccurlyeq(1+8(1+4d^{1/(2L)})\xi^{1/(2L)})A^{opt}$.",
    assumptions=THM_A12.assumptions + ("A^opt = a*(n, d, L) I (Thm. 3.2 check)",),
    formulas=THM_A12_FORMULAS + (
        NamedFormula("c", "8*(1 + 4*d**(1/(2*L)))*xi**(1/(2*L))", _FLOW_SYMBOLS,
                     equation="Thm. 3.3 (2)",
                     description="(1 - c) A^opt <= A(t) <= (1 + c) A^opt", weaker="larger"),),
    ranges=THM_A12.ranges,
    checks={"symbolic": lambda ctx: _flow_symbolic(ctx, FlowForm(True)),
            "numeric": single_threaded(lambda ctx: _flow_numeric(ctx, FlowForm(True)))},
    setting=FLOW_SETTING,
    correction=Correction(description=THM_A12.correction.description, reason=FLOW_REASON,
                          formulas=FLOW_CORRECTION),
    notes="Item (2) is printed with a lost minus sign ('(1 8(1 + ...')); read as 1 - c.",
)


# ==============================================================================================
# Small loss implies closeness to A^opt: Theorem 4.4 and Lemma A.9
# ==============================================================================================
CLOSE_SETTING = _setting({"n": 20, "d": 2, "L": 2})
_CLOSE_SYMBOLS = (_N, _D, _L, _DELTA, _LOSS, _EPS)
CLOSE_NS = (10 ** 4, 10 ** 12, 10 ** 40, 10 ** 100)


def _smallest_eps(F, n, d, L, loss) -> sympy.Rational | None:
    """The smallest admissible epsilon (the radius grows with epsilon, so it is the most
    demanding one), to 40 bits: the admissible epsilons of Thm. 4.4 / Lemma A.9 are an interval
    [eps_0, infinity) (the upper end of the grid is 64)."""
    hyp = _gd_expr(F, "hypothesis")
    grid = [sympy.Rational(2) ** -k for k in range(400, -7, -1)]
    ok = lambda e: _holds(hyp, _gd_env(n, d, L, loss, e))  # noqa: E731
    if not ok(grid[-1]):
        return None
    if ok(grid[0]):
        return grid[0]
    i_lo, i_hi = 0, len(grid) - 1  # not admissible at i_lo, admissible at i_hi
    while i_lo + 1 < i_hi:
        mid = (i_lo + i_hi) // 2
        i_lo, i_hi = (i_lo, mid) if ok(grid[mid]) else (mid, i_hi)
    lo, hi = grid[i_lo], grid[i_hi]
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if _holds(hyp, _gd_env(n, d, L, loss, mid)) else (mid, hi)
    return hi


def _close_ratio(F, n, d, L, lam: Sequence, loss, a_opt) -> dict | None:
    """max_i |lambda_i / a* - 1| / radius(eps_0) at the most demanding admissible epsilon (> 1
    violates (1 - r) A^opt <= A <= (1 + r) A^opt; a radius <= 0 admits no A at all, so its ratio
    is infinite); None when no epsilon is admissible."""
    eps = _smallest_eps(F, n, d, L, loss)
    if eps is None:
        return None
    env = _gd_env(n, d, L, loss, eps)
    with mpmath.workdps(40):
        r = _mp_value(_gd_expr(F, "radius"), env)
        dev = max(abs(_mpf(x) / a_opt - 1) for x in lam)
        ratio = dev / r if r > 0 else mpmath.inf
        return {"ratio": ratio, "deviation": dev, "radius": r, "epsilon": eps}


def _ratio_out(ratio) -> float | str:
    """A ratio for the JSON evidence (JSON has no infinity)."""
    return float(ratio) if mpmath.isfinite(ratio) else "inf (the radius is not positive)"


def _close_points(L: int, n: int, d: int, a_opt: mpmath.mpf) -> list:
    """Diagonal A: the scalar family a* (1 + s) I, and (d = 2, 3) one eigenvalue moved, as exact
    rationals (with the exact loss).  The shifts run from 10^-16 to 99 and down to -3 (a negative
    eigenvalue): far from A^opt the loss is large and so is the admissible epsilon, and a
    hypothesis that no longer ties epsilon to the loss is caught there."""
    a_q = sympy.Rational(mpmath.nstr(a_opt, 40))
    shifts = [sympy.Rational(sg, 10 ** k) for k in (1, 2, 4, 8, 16) for sg in (1, -1)] + [
        sympy.Integer(-1), sympy.Rational(-1, 2), sympy.Rational(1, 2), sympy.Integer(1),
        sympy.Integer(9), sympy.Integer(99), sympy.Integer(-3)]
    pts = [("scalar", [a_q * (1 + sh)] * d) for sh in shifts]
    if d in (2, 3):
        pts += [("one_moved", [a_q * (1 + sh)] + [a_q] * (d - 1)) for sh in shifts]
    return pts


def _close_loss(L: int, n: int, lam: Sequence) -> sympy.Rational:
    d = len(lam)
    if len(set(lam)) == 1:
        return li.scalar_poly(L, n, d).eval(lam[0])
    C = li.derived_loss(L, isotropic=True, with_u=False)
    return _exact_value(C, {"A": sympy.diag(*lam), "Sigma": sympy.eye(d)}, n)


def _close_symbolic(ctx: Context) -> TierResult:
    """Exact search: Sigma* = I (the statement is invariant under A -> Sigma*^{1/2} A Sigma*^{1/2}),
    A^opt = a* I, diagonal A (the loss is orthogonally invariant)."""
    F = ctx.formulas
    loops = _loops(ctx)
    dims = _by_budget(ctx, (1, 2, 10), (1, 2, 3, 10, 1000))
    ns = _by_budget(ctx, CLOSE_NS[1::2], CLOSE_NS)
    rows, closest, bad, count = [], None, None, 0
    for L in loops:
        for d in dims:
            for n in ns:
                a_opt = _mp_a_star(L, n, d, 40)
                best = None
                for kind, lam in _close_points(L, n, d, a_opt):
                    loss = _close_loss(L, n, lam)
                    r = _close_ratio(F, n, d, L, lam, loss, a_opt)
                    if r is None:
                        continue
                    count += 1
                    if best is None or r["ratio"] > best["ratio"]:
                        best = {**r, "kind": kind, "lam": lam, "loss": loss}
                if best is None:
                    continue
                row = {"L": L, "d": d, "n": _n_text(n), "max_ratio": _ratio_out(best["ratio"]),
                       "at": best["kind"], "A_eigenvalues_over_a_star": [
                           mpmath.nstr(_mpf(x) / a_opt, 12) for x in best["lam"]]}
                rows.append(row)
                if closest is None or best["ratio"] > closest_ratio:
                    closest, closest_ratio = row, best["ratio"]
                if best["ratio"] > 1 and bad is None:
                    bad = {**row, "loss": str(best["loss"]), "epsilon": str(best["epsilon"]),
                           "deviation": mpmath.nstr(best["deviation"], 20),
                           "radius": mpmath.nstr(best["radius"], 20), "A_opt": "a* I",
                           "a_star": mpmath.nstr(a_opt, 30), "Sigma_star": "I_d"}
    ok = bad is None
    return combine([Finding("exact_search", ok, {
        "instances": count, "ns": [_n_text(n) for n in ns], "dims": list(dims),
        "loops": list(loops), "ratio": "max_i |lambda_i/a* - 1| / radius at the smallest "
        "admissible epsilon (> 1 violates)", "closest_approach": closest, "rows": rows}, bad,
        "" if ok else "an admissible A lies outside the named sandwich")],
        steps=[step("Most demanding epsilon", r"\epsilon_0=\inf\{\epsilon: \text{hypothesis}\}",
                    "the radius grows with epsilon, so the statement holds for every admissible "
                    "epsilon iff it holds at the smallest one (found by bisection, exact "
                    "comparisons at 80 digits)")])


def _close_numeric(ctx: Context) -> TierResult:
    """Random diagonal spectra at practical n (float64 loss, the ratio at the smallest admissible
    epsilon in mpmath): where the hypothesis admits epsilon at all."""
    F = ctx.formulas
    rng = ctx.rng("close")
    samples = _by_budget(ctx, 60, 300, 2000)
    rows, closest, bad = [], None, None
    for L in _loops(ctx):
        C = li.derived_loss(L, isotropic=True, with_u=False)
        for d in (2, 3):
            for n in (10, 100, 10 ** 4):
                a_opt = _mp_a_star(L, n, d, 30)
                lam = float(a_opt) * (1 + rng.uniform(-0.5, 0.5, (samples, d)))
                with small_torch():
                    t = torch.tensor(lam, dtype=torch.float64)
                    loss = C.evaluate({"A": torch.diag_embed(t)}, {"n": n, "d": d}).numpy()
                best, admitted = None, 0
                score = np.abs(lam / float(a_opt) - 1).max(1) / loss ** (1 / (2 * L))
                for i in np.argsort(-score)[:20]:
                    lam_q = [sympy.Rational(repr(float(x))) for x in lam[i]]
                    r = _close_ratio(F, n, d, L, lam_q, sympy.Rational(repr(float(loss[i]))),
                                     a_opt)
                    if r is None:
                        continue
                    admitted += 1
                    if best is None or r["ratio"] > best[0]:
                        best = (r["ratio"], i)
                if best is None:
                    continue
                row = {"L": L, "d": d, "n": n, "max_ratio": _ratio_out(best[0]),
                       "A_eigenvalues": lam[best[1]].tolist(), "loss": float(loss[best[1]])}
                rows.append(row)
                if closest is None or best[0] > closest_ratio:
                    closest, closest_ratio = row, best[0]
                if best[0] > 1 and bad is None:
                    bad = row
    return combine([Finding("search_at_practical_sizes", bad is None, {
        "samples_per_size": samples, "closest_approach": closest, "rows": rows}, bad,
        "" if bad is None else "an admissible A lies outside the named sandwich")])


THM4_4 = Claim(
    id="gatmiry2024.thm4_4",
    title="Small loss implies closeness to the optimum",
    paper=PAPER,
    statement=r"For $\epsilon>4\delta$, if $L(A,0)\le\epsilon^{2L}/2$ then, for "
              r"$c=4+16d^{1/(2L)}$, "
              r"$(1-c\epsilon)A^{opt}\preccurlyeq A\preccurlyeq(1+c\epsilon)A^{opt}$.",
    assumptions=("u = 0; checked at Sigma* = I (the statement is invariant under A -> "
                 "Sigma*^{1/2} A Sigma*^{1/2}), A^opt = a* I", "A symmetric",
                 "delta = (8 L d / sqrt(n))^{1/(2L)}"),
    formulas=(
        NamedFormula("hypothesis", "(epsilon > 4*delta) & (loss <= epsilon**(2*L)/2)",
                     _CLOSE_SYMBOLS, equation="Thm. 4.4", description="epsilon > 4 delta and "
                     "L(A, 0) <= epsilon^{2L} / 2", weaker="narrower"),
        NamedFormula("delta", "(8*L*d/sqrt(n))**(1/(2*L))", (_N, _D, _L), equation="Sec. 3.5",
                     description="delta := (8 L d / sqrt(n))^{1/(2L)}"),
        NamedFormula("radius", "(4 + 16*d**(1/(2*L)))*epsilon", _CLOSE_SYMBOLS,
                     equation="Thm. 4.4", description="c epsilon", weaker="larger"),
    ),
    checks={"symbolic": _close_symbolic, "numeric": single_threaded(_close_numeric)},
    setting=CLOSE_SETTING,
)

LEMMA_A9 = Claim(
    id="gatmiry2024.lemma_a9",
    title="Small loss implies closeness to the optimum (appendix form)",
    paper=PAPER,
    statement=r"For $\epsilon>2\delta$, if $L(A,0)\le\epsilon^{2L}-\delta^{2L}(\epsilon+2)^{2L}$ "
              r"then $(1-(4\epsilon+16\delta d^{1/(2L)}))A^{opt}\preccurlyeq A\preccurlyeq"
              r"(1+(4\epsilon+16\delta d^{1/(2L)}))A^{opt}$.",
    assumptions=THM4_4.assumptions,
    formulas=(
        NamedFormula("hypothesis", "(epsilon > 2*delta) & "
                     "(loss <= epsilon**(2*L) - delta**(2*L)*(epsilon + 2)**(2*L))",
                     _CLOSE_SYMBOLS, equation="Lemma A.9",
                     description="the conditions on epsilon and L(A, 0)", weaker="narrower"),
        NamedFormula("delta", "(8*L*d/sqrt(n))**(1/(2*L))", (_N, _D, _L), equation="Sec. 3.5",
                     description="delta := (8 L d / sqrt(n))^{1/(2L)}"),
        NamedFormula("radius", "4*epsilon + 16*delta*d**(1/(2*L))", _CLOSE_SYMBOLS,
                     equation="Lemma A.9", description="the radius of the sandwich",
                     weaker="larger"),
    ),
    checks={"symbolic": _close_symbolic, "numeric": single_threaded(_close_numeric)},
    setting=CLOSE_SETTING,
    notes="The proof ends with 'Combining this with Equation (??)' (a dangling reference).",
)


# ==============================================================================================
# Out-of-distribution instances: Theorem 4.5 and its restatement A.13
# ==============================================================================================
OOD_SETTING = _setting({"n": 20, "d": 2, "L": 2})
_S_MIN = FormulaSymbol("s_min", description="the smallest eigenvalue of Sigma^out (Sigma* = I)",
                       positive=True)
_S_MAX = FormulaSymbol("s_max", description="the largest eigenvalue of Sigma^out (Sigma* = I)",
                       positive=True)
_XQ2 = FormulaSymbol("xq_norm2", description="||x_q^out||^2_{Sigma*}", positive=True)
_W2 = FormulaSymbol("w_norm2", description="||w^{out,*}||^2_{Sigma*^{-1}}", positive=True)
_GRAM = _mat("XXt", description="the Gram matrix X^out X^out^T of the OOD instance", symmetric=True)
_OOD_SYMBOLS = (_N, _D, _L, _DELTA, _ZETA, _S_MIN, _S_MAX, _XQ2, _W2)
OOD_BOUND = ("(1 + 16*delta*d**(1/(2*L)))**2*(1 + 16*delta*d**(1/(2*L)) - zeta)**(2*L)"
             "*xq_norm2*w_norm2")
OOD_NS = (10 ** 4, 10 ** 8, 10 ** 40, 10 ** 100)
_OOD_R = (sympy.Rational(1, 10), sympy.Rational(1, 2), sympy.Rational(9, 10), sympy.Integer(1),
          sympy.Rational(11, 10), sympy.Rational(13, 10), sympy.Rational(7, 5))


def _largest_zeta(F, s_min, s_max, n, d, L):
    """The largest zeta in (0, 1) the named condition admits (the bound decreases in zeta), to 40
    bits; None if none."""
    cond = _gd_expr(F, "condition")
    env = lambda z: {**_gd_env(n, d, L), "s_min": s_min, "s_max": s_max, "zeta": z}  # noqa: E731
    grid = [sympy.Rational(k, 64) for k in range(63, 0, -1)]
    top = next((z for z in grid if _holds(cond, env(z))), None)
    if top is None:
        return None
    lo, hi = top, min(top + sympy.Rational(1, 64), 1 - sympy.Rational(1, 2 ** 40))
    if _holds(cond, env(hi)):
        return hi
    for _ in range(34):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _holds(cond, env(mid)) else (lo, mid)
    return lo


def _ood_error_exact(x: Sequence, n: int, L: int, a_opt: sympy.Rational, i: int) -> sympy.Expr:
    """(TF_L - y_q)^2 from the forward pass (eqs. (2)-(4), u = 0, A = a* I) on the instance
    X^out = [diag(x), 0, ..., 0] (n columns: the zero examples add nothing to the attention, so
    the pass runs on the d nonzero ones with the 1/n of eq. (3)), w = x_q = e_i."""
    d = len(x)
    X = sympy.diag(*x)
    e = sympy.zeros(d, 1)
    e[i] = 1
    Z = sympy.zeros(d + 1, d + 1)
    Z[:d, :d], Z[:d, d], Z[d, :d] = X, e, (X.T * e).T
    M = sympy.diag(*([1] * d + [0]))
    P = sympy.zeros(d + 1, d + 1)
    P[d, d] = 1
    Q = sympy.zeros(d + 1, d + 1)
    Q[:d, :d] = a_opt * sympy.eye(d)
    pred = -readout(lsa_forward(Z, [(P, Q)] * L, M, sympy.Integer(n), step=-1))
    return (sympy.Rational(pred) - (e.T * e)[0, 0]) ** 2


def _ood_symbolic(ctx: Context) -> TierResult:
    """Exact instances: Sigma* = I, X^out = diag(x) (plus zero examples), w = x_q = e_i at the
    eigenvalue farthest from 1 / a*; the ratio error^2 / bound at the largest admissible zeta."""
    F = ctx.formulas
    rows, worst, bad, count = [], None, None, 0
    ns = _by_budget(ctx, OOD_NS[1:], OOD_NS)
    rs = _by_budget(ctx, _OOD_R[1::2] + _OOD_R[-1:], _OOD_R)
    for L in _loops(ctx):
        for n in ns:
            root = sympy.Integer(10) ** (len(str(n)) // 2)  # sqrt(n) for n = 10^{2k}
            digits = len(str(n)) + 40  # a* = 1 - O(1/n): resolved to 10^-40 beyond 1/n
            a_opt = sympy.Rational(mpmath.nstr(_mp_a_star(L, n, 2, digits), digits))
            for r1 in rs:
                for r2 in [r for r in rs if r >= r1]:
                    for scale in (1, root):
                        x = [r1 * scale, r2 * scale]
                        gram = sympy.diag(*[v ** 2 for v in x])
                        sig = sympy.Matrix(formula_value(F["sigma_out"], {"XXt": gram, "n": n}))
                        ev = [sig[0, 0], sig[1, 1]]
                        zeta = _largest_zeta(F, min(ev), max(ev), n, 2, L)
                        if zeta is None:
                            continue
                        count += 1
                        S = [v ** 2 / n for v in x]  # the model's X X^T / n
                        i = max(range(2), key=lambda j: abs(1 - a_opt * S[j]))
                        err2 = _ood_error_exact(x, n, L, a_opt, i)
                        env = {**_gd_env(n, 2, L), "zeta": zeta, "s_min": min(ev),
                               "s_max": max(ev), "xq_norm2": 1, "w_norm2": 1}
                        with mpmath.workdps(40):
                            bound = _mp_value(_gd_expr(F, "bound"), env)
                            ratio = _mpf(err2) / bound
                        row = {"L": L, "n": _n_text(n), "X_diag": [str(v) for v in x],
                               "Sigma_out_eigs": [mpmath.nstr(_mpf(v), 8) for v in ev],
                               "zeta": str(zeta) if zeta.q < 10 ** 6 else float(zeta),
                               "error_sq": mpmath.nstr(_mpf(err2), 12),
                               "bound": mpmath.nstr(bound, 12), "ratio": float(ratio)}
                        if worst is None or row["ratio"] > worst["ratio"]:
                            worst = row
                        if ratio > 1 and not _gd_le(sympy.Symbol("e"), sympy.Symbol("b"), {
                                "e": err2, "b": sympy.Float(mpmath.nstr(bound, 40), 40)}):
                            if bad is None:
                                with mpmath.workdps(len(str(n)) + 30):
                                    a_txt = mpmath.nstr(_mpf(a_opt), len(str(n)) + 20)
                                    e_txt = mpmath.nstr(_mpf(err2), len(str(n)) + 20)
                                bad = {**row, "error_sq_digits": e_txt, "a_star": a_txt,
                                       "w": f"e_{i + 1}", "x_q": f"e_{i + 1}",
                                       "Sigma_star": "I_2"}
                            rows.append(row)
    ok = bad is None
    return combine([Finding("exact_instances", ok, {
        "instances": count, "d": 2, "ns": [_n_text(n) for n in ns],
        "X_diag_values": "r * 10^j, r in " + ", ".join(str(r) for r in rs) + ", j in {0, k/2}",
        "ratio": "(TF_L - y_q)^2 / bound at the largest admissible zeta (> 1 violates)",
        "worst": worst, "violations_shown": rows[:5]}, bad,
        "" if ok else "an admissible OOD instance exceeds the bound")],
        steps=[step("Error of the optimal looped model", r"\mathrm{TF}_L-y_q=-w^\top(I-a^*S)^Lx_q,"
                    r"\quad S=\tfrac1n X^{out}X^{out\top}",
                    "from the forward pass at u = 0, A = a* I; the condition of the theorem is on "
                    "Sigma^out, and the bound needs Sigma^out = S (the 1/n of the model's "
                    "empirical covariance).")])


def _ood_numeric(ctx: Context) -> TierResult:
    """Random instances at practical n with the torch forward pass: X^out with the named
    Sigma^out spectrum placed inside the window, random w and x_q."""
    F = ctx.formulas
    rng = ctx.rng("ood")
    trials = _by_budget(ctx, 12, 200, 1000)
    worst, bad = None, None
    for L in _loops(ctx):
        for d in _by_budget(ctx, (2,), (2, 3)):
            for n in _by_budget(ctx, (d + 2, 200), (d + 2, 20, 200)):
                a_opt = float(_mp_a_star(L, n, d))
                model = looped_model(d, L, a_opt * np.eye(d))
                for _ in range(trials):
                    X = rng.standard_normal((d, n))
                    target = rng.uniform(0.05, 1.95, d)
                    U, sv, Vt = np.linalg.svd(X, full_matrices=False)
                    gram_unit = U @ np.diag(target) @ U.T  # the wanted Sigma^out
                    sig_of_gram = float(formula_value(F["sigma_out"], {"XXt": sympy.eye(d),
                                                                         "n": n})[0, 0])
                    X = U @ np.diag(np.sqrt(target / sig_of_gram)) @ Vt
                    ev = np.linalg.eigvalsh(gram_unit)
                    zeta = _largest_zeta(F, sympy.Rational(repr(float(ev.min()))),
                                         sympy.Rational(repr(float(ev.max()))), n, d, L)
                    if zeta is None:
                        continue
                    w, xq = rng.standard_normal(d), rng.standard_normal(d)
                    Z = np.zeros((d + 1, n + 1))
                    Z[:d, :n], Z[:d, n], Z[d, :n] = X, xq, w @ X
                    with torch.no_grad():
                        pred = float(model.predict(torch.tensor(Z).unsqueeze(0))[0])
                    err2 = (pred - w @ xq) ** 2
                    env = {**_gd_env(n, d, L), "zeta": zeta, "s_min": 1, "s_max": 1,
                           "xq_norm2": sympy.Rational(repr(float(xq @ xq))),
                           "w_norm2": sympy.Rational(repr(float(w @ w)))}
                    with mpmath.workdps(30):
                        bound = float(_mp_value(_gd_expr(F, "bound"), env))
                    ratio = err2 / bound
                    row = {"L": L, "d": d, "n": n, "zeta": float(zeta), "ratio": ratio,
                           "Sigma_out_eigs": ev.tolist()}
                    if worst is None or ratio > worst["ratio"]:
                        worst = row
                    if ratio > 1 + 1e-9 and bad is None:
                        bad = {**row, "error_sq": err2, "bound": bound}
    return combine([Finding("random_instances", bad is None, {
        "trials_per_size": trials, "worst": worst}, bad,
        "" if bad is None else "an admissible OOD instance exceeds the bound")])


def _ood_claim(cid: str, title: str, lower: str, equation: str, statement: str) -> Claim:
    return Claim(
        id=cid, title=title, paper=PAPER, statement=statement,
        assumptions=("u = 0, A = A^opt = a*(n, d, L) I (Sigma* = I: the statement is invariant "
                     "under x -> Sigma*^{-1/2} x, w -> Sigma*^{1/2} w)",
                     "delta = (8 L d / sqrt(n))^{1/(2L)}", "y_q^out = <w^{out,*}, x_q^out>"),
        formulas=(
            NamedFormula("sigma_out", "XXt", (_N, _D, _GRAM), equation=equation, shape=("d", "d"),
                         description="Sigma^out := X^out X^out^T"),
            NamedFormula("condition", f"(s_min >= {lower}) & (s_max <= 2 - zeta)", _OOD_SYMBOLS,
                         equation=equation, description="the window of Sigma^out",
                         weaker="narrower"),
            NamedFormula("delta", "(8*L*d/sqrt(n))**(1/(2*L))", (_N, _D, _L), equation="Sec. 3.5",
                         description="delta := (8 L d / sqrt(n))^{1/(2L)}"),
            NamedFormula("bound", OOD_BOUND, _OOD_SYMBOLS, equation=equation,
                         description="the bound on (TF_L(Z_0^out) - y_q^out)^2", weaker="larger"),
        ),
        checks={"symbolic": _ood_symbolic, "numeric": single_threaded(_ood_numeric)},
        setting=OOD_SETTING,
        correction=Correction(
            description="Sigma^out := X^out X^out^T / n (the model's empirical covariance)",
            reason="the model attends with 1/n (eq. (3)), so the error is w^T (I - A X X^T/n)^L "
                   "x_q; with Sigma^out = X X^T the window forces X X^T / n -> 0 and the error "
                   "to ||w|| ||x_q||, above the bound once 16 delta d^{1/(2L)} < zeta",
            formulas={"sigma_out": "XXt/n"}),
    )


THM4_5 = _ood_claim(
    "gatmiry2024.thm4_5", "Out-of-distribution bound for the optimal looped model", "1",
    "Thm. 4.5 (10)",
    r"If $\Sigma^*\preccurlyeq\Sigma^{out}\preccurlyeq(2-\zeta)\Sigma^*$, $(TF_L(Z_0^{out})-"
    r"y_q^{out})^2\le(1+16\delta d^{1/(2L)})^2(1+16\delta d^{1/(2L)}-\zeta)^{2L}\|x_q^{out}\|"
    r"^2_{\Sigma^*}\|w^{out,*}\|^2_{\Sigma^{*-1}}$, with $\Sigma^{out}=X^{out}X^{out\top}$.")
THM_A13 = _ood_claim(
    "gatmiry2024.thm_a13", "Restatement of Theorem 4.5 (window zeta Sigma* .. (2 - zeta) Sigma*)",
    "zeta", "Thm. A.13 (30)",
    r"If $\zeta\Sigma^*\preccurlyeq\Sigma^{out}\preccurlyeq(2-\zeta)\Sigma^*$, the same bound as "
    r"Thm. 4.5.")


# ==============================================================================================
# Figures 1-4 (Sec. 5: Sigma* = I, d = 5 for Fig. 1, d = 10 otherwise), from the exact loss
# ==============================================================================================
FIG_SETTING = _setting({"n": 20, "d": 10, "L": 2})
FIG1_NS = (2, 3, 4, 5, 10, 20)
_DIST = FormulaSymbol("Dist", description="Dist(A, I) = min_a ||A - a I||_F / ||A||_F")


def _a_rational(n: int, d: int, L: int) -> sympy.Rational:
    return sympy.Rational(mpmath.nstr(_mp_a_star(L, n, d, 60), 60))


def fig1_symbolic(ctx: Context) -> TierResult:
    """At d = 5 and every n (n < d included) a* I is a strict local minimum of L(., 0) whose
    Hessian is positive in every traceless direction, so trained iterates near it have
    Dist(A, I) -> 0; the scale a* itself is far from 1 for small n."""
    F = ctx.formulas
    target = float(F["limit_dist"])
    rows, bad = [], None
    for L in _by_budget(ctx, (1, 2, 3), (1, 2, 3, 5), (1, 2, 3, 5, 10)):
        for n in FIG1_NS:
            a = _a_rational(n, 5, L)
            h_I, h_p = li.hessian_at_scalar(a, n, 5, L)
            ok = bool(h_I > 0 and h_p > 0) and target == 0.0
            rows.append({"L": L, "n": n, "a_star": float(a), "hessian_along_I": float(h_I),
                         "hessian_traceless": float(h_p), "Dist_at_optimum": 0.0,
                         "relative_distance_to_I": float(abs(1 - a))})
            if not ok and bad is None:
                bad = {**rows[-1], "named_limit_dist": target}
    return combine([Finding("scalar_optimum_is_a_strict_local_minimum", bad is None, {
        "d": 5, "rows": rows, "note": "Dist is scale invariant (ahn2023 Sec. 5.3): the optimum "
        "a* I has Dist = 0 for every n, but ||a* I - I|| / ||I|| = 1 - a* is large for n <= d"},
        bad, "" if bad is None else "the named limit of Dist(A, I) is not that of the optimum")])


def fig1_train(ctx: Context) -> TierResult:
    """L-BFGS on the exact loss (d = 5, n < d included): Dist(A, I) of the trained A and its
    scale against a*(n, 5, L)."""
    F = ctx.formulas
    target = float(F["limit_dist"])
    runs, bad, undecided = [], None, None
    L = 2
    for n in _by_budget(ctx, (2, 5, 20), FIG1_NS):
        results, A, _, rt = train_exact(ctx, L, 5, n, np.eye(5), False, f"fig1-{n}",
                                        restarts=_by_budget(ctx, 2, 4, 8))
        a = li.a_star_float(n, 5, L)
        for r, res in enumerate(results):
            dist = dist_to_identity(torch.tensor(A[r]))
            scale = float(np.trace(A[r]) / 5)
            row = {"n": n, "restart": r, "Dist_to_I": dist, "trained_scale": scale,
                   "a_star": a, "status": res.status}
            runs.append(row)
            if res.status == "diverged" and undecided is None:
                undecided = res.reason
            elif res.status == "converged" and abs(dist - target) > 1e-3 and bad is None:
                bad = {**row, "trained_A": A[r].tolist(), "named_limit_dist": target}
    if bad is None and undecided is not None:
        return combine([Finding("exact_loss_training", None, {"runs": runs}, reason=undecided)])
    return combine([Finding("exact_loss_training", bad is None, {
        "L": L, "d": 5, "runs": runs, "tolerance": 1e-3}, bad,
        "" if bad is None else "a converged run ends away from the named Dist"),
        _fig1_sampled(ctx, L)])


def _fig1_sampled(ctx: Context, L: int, n: int = 3, d: int = 5) -> Finding:
    """Evidence: Adam on sampled prompts (n = 3 < d = 5, Sigma* = I), the real forward pass;
    Dist(A, I) and the scale tr A / d against a*(n, d, L)."""
    rt = runtime(ctx.device)
    gen = rt.generator(ctx.seed_for("fig1-sampled"))
    model = LinearTransformer(LSAConfig(d=d, layers=L, parametrisation="sec35", looped=True,
                                        step=-1), init_scale=0.1, generator=gen, dtype=rt.dtype,
                              device=rt.device)
    with torch.no_grad():
        model.u.zero_()
    model.u.requires_grad_(False)
    law = PromptLaw(sigma=torch.eye(d, dtype=torch.float64), n=n,
                    w_cov=torch.eye(d, dtype=torch.float64))
    data = rt.generator(ctx.seed_for("fig1-data"))
    steps, batch = _by_budget(ctx, (300, 1024), (1000, 2048), (4000, 8192))

    def sampled():
        pr = sample_prompts(law, batch, data, dtype=rt.dtype, device=rt.device)
        return ((model.predict(pr.Z()) - pr.yq) ** 2).mean()

    res = optimise(sampled, [model.A], method="adam", steps=steps, lr=0.01)
    A = model.A[0].detach().cpu().double()
    A = (A + A.T) / 2
    ev = {"n": n, "d": d, "L": L, "batch": batch, "Dist_to_I": dist_to_identity(A),
          "scale": float(torch.trace(A) / d), "a_star": li.a_star_float(n, d, L),
          **res.summary(curve_points=10)}
    if res.status == "diverged":
        return Finding("sampled_prompt_training", None, ev, reason=res.reason)
    return Finding("sampled_prompt_training", True, ev,
                   reason="evidence only: finite-batch Adam approaches a* I")


FIG1 = Claim(
    id="gatmiry2024.fig1",
    title="Fig. 1: the trained A converges to (a multiple of) I, even for n < d",
    paper=PAPER,
    statement=r"For $d=5$ and every $n$, including $n<d$, training the looped model drives "
              r"$\mathrm{Dist}(A,I)$ to (nearly) 0.",
    assumptions=("Sigma* = I, u = 0, exact population loss", "Dist(A, I) = min_a ||A - a I||_F / "
                 "||A||_F (scale invariant, the metric of ahn2023 Sec. 5.3)"),
    formulas=(NamedFormula("limit_dist", "0", (_DIST,), equation="Fig. 1",
                           description="the value Dist(A, I) converges to"),),
    checks={"symbolic": fig1_symbolic, "train": single_threaded(fig1_train)},
    setting=FIG_SETTING,
)


def fig2_symbolic(ctx: Context) -> TierResult:
    """The optimal loss f(a*(n, 10, L)) of the looped model decreases strictly in L (d = 10)."""
    rows, bad = [], None
    for n in (20, 40):
        prev = None
        for L in range(1, _by_budget(ctx, 7, 9, 11)):
            a = _a_rational(n, 10, L)
            f = li.scalar_poly(L, n, 10).eval(a)
            rows.append({"n": n, "L": L, "a_star": float(a), "optimal_loss": float(f)})
            if prev is not None and not f < prev and bad is None:
                bad = {"n": n, "L": L, "optimal_loss": str(f), "previous": str(prev)}
            prev = f
    return combine([Finding("optimal_loss_decreases_with_loops", bad is None, {
        "d": 10, "rows": rows}, bad, "" if bad is None else "more loops do not lower the loss")])


def fig2_train(ctx: Context) -> TierResult:
    """L-BFGS on the exact loss (d = 10, n = 20): the looped model for L = 1, 2 reaches f(a*)
    and the loss drops with L; a 2-layer model with separate (A0, A1) (multilayer loss of Thm.
    A.1, u = 0) is trained too and its loss reported next to the looped one (evidence)."""
    d, n = 10, 20
    rows, bad, undecided = [], None, None
    prev = None
    for L in (1, 2):
        results, A, _, rt = train_exact(ctx, L, d, n, np.eye(d), False, f"fig2-{L}", restarts=1)
        f = float(li.scalar_poly(L, n, d).eval(_a_rational(n, d, L)))
        C = li.derived_loss(L, isotropic=True, with_u=False)
        got = float(C.evaluate({"A": A[0]}, {"n": n, "d": d}))
        rows.append({"L": L, "trained_loss": got, "optimal_loss": f,
                     "status": results[0].status})
        if results[0].status == "diverged":
            undecided = results[0].reason
        elif (abs(got - f) > 1e-6 * f or (prev is not None and not got < prev)) and bad is None:
            bad = rows[-1]
        prev = got
    # 2 separate layers
    C2 = li.derived_loss(2, isotropic=True, with_u=False, multilayer=True)
    gen = torch.Generator().manual_seed(ctx.seed_for("fig2-multilayer"))
    Ms = [(0.1 * randn(d, d, generator=gen, dtype=torch.float64)).requires_grad_()
          for _ in range(2)]

    def multilayer_loss():
        env = {f"A{i}": (M + M.T) / 2 for i, M in enumerate(Ms)}
        return C2.evaluate(env, {"n": n, "d": d})

    res = optimise(multilayer_loss, Ms, method="lbfgs", steps=_by_budget(ctx, 60, 200))
    multi = {"layers": 2, "trained_loss": float(multilayer_loss().detach()), **res.summary()}
    ev = {"d": d, "n": n, "looped": rows, "multilayer": multi,
          "looped_over_multilayer_at_2": rows[1]["trained_loss"] / multi["trained_loss"]}
    if bad is None and undecided is not None:
        return combine([Finding("exact_loss_training", None, ev, reason=undecided)])
    return combine([Finding("exact_loss_training", bad is None, ev, bad,
                            "" if bad is None else "training misses f(a*) or more loops do not "
                                                   "lower the loss")])


FIG2 = Claim(
    id="gatmiry2024.fig2",
    title="Fig. 2: more loops give a lower loss",
    paper=PAPER,
    statement=r"Increasing the number of loops $L$ lowers the (optimal) in-context loss.",
    assumptions=("Sigma* = I, u = 0, d = 10, the optimum A = a*(n, d, L) I of the exact loss",
                 "the comparison with a 2-layer model is reported (train tier), not decided"),
    formulas=(),
    checks={"symbolic": fig2_symbolic, "train": single_threaded(fig2_train)},
    setting=FIG_SETTING,
)


def fig3_symbolic(ctx: Context) -> TierResult:
    """Loop extrapolation: the model optimal for L_train loops, run with L_test loops, has loss
    f_{L_test}(a*(n, d, L_train)) = E tr (I - a* W/n)^{2 L_test}; with finite n the Wishart
    spectrum is unbounded, so it eventually grows: the first L_test at which it increases."""
    rows, bad = [], None
    for n in (20, 40):
        for L_train in (2, 5):
            a = _a_rational(n, 10, L_train)
            vals = [li.scalar_poly(Lt, n, 10).eval(a) for Lt in range(1, _by_budget(ctx, 11, 13))]
            up = next((i + 1 for i in range(1, len(vals)) if vals[i] > vals[i - 1]), None)
            row = {"n": n, "L_train": L_train, "a_star": float(a),
                   "loss_by_L_test": [float(v) for v in vals], "first_increase_at_L_test": up}
            rows.append(row)
            if up is not None and bad is None:
                bad = {"d": 10, "n": n, "L_train": L_train, "L_test": up,
                       "loss_at_L_test": mpmath.nstr(_mpf(vals[up - 1]), 30),
                       "loss_at_L_test_minus_1": mpmath.nstr(_mpf(vals[up - 2]), 30),
                       "a_star_L_train": mpmath.nstr(_mpf(a), 30),
                       "exact": "E tr (I - a* W/n)^{2 L_test}, W ~ Wishart(n, I_10), as exact "
                                "rationals at the 60-digit rational a*"}
    return combine([Finding("extrapolation_keeps_decreasing", bad is None, {"d": 10, "rows": rows},
                            bad, "" if bad is None else
                            f"the loss increases from L_test = {bad['L_test'] - 1} to "
                            f"{bad['L_test']}")],
                   steps=[step("Divergence", r"\mathbb E\,\mathrm{tr}(I-aW/n)^{2L}\ge "
                               r"\Pr(\lambda_{\max}(W/n)>2/a)\,1^{2L}\cdots\to\infty",
                               "for any a > 0 the event lambda_max(W/n) > 2/a has positive "
                               "probability, on which |1 - a lambda|^{2L} grows geometrically")])


FIG3_OOD = np.diag(np.linspace(0.5, 1.5, 10))  # an OOD test covariance (Sec. 5.3: Sigma != I)


def fig3_train(ctx: Context) -> TierResult:
    """The real model: trained with L_train = 2 loops (L-BFGS on the exact loss, d = 10, n = 20),
    then run with more loops.  Decided exactly: the trained A is a I up to Dist(A, I) ~ 1e-9
    (1e-5 in float32), and
    its loss with L_test loops is f_{L_test}(tr A / d) (exact Wishart moments); the statement
    fails at the first L_test where that loss increases.  Evidence: Monte Carlo of the real
    forward pass (weights shared over L_test loops) in distribution and out of distribution
    (Sigma = diag(0.5 .. 1.5), w ~ N(0, Sigma^{-1})) at small L_test (the loss is heavy-tailed
    at large L_test, so sampling cannot see the growth there)."""
    d, n, L_train = 10, 20, 2
    results, A, _, rt = train_exact(ctx, L_train, d, n, np.eye(d), False, "fig3-train",
                                    restarts=1)
    if results[0].status == "diverged":
        return combine([Finding("loop_extrapolation", None, results[0].summary(),
                                reason=results[0].reason)])
    A0 = A[0]
    dist = dist_to_identity(torch.tensor(A0))
    a_tr = sympy.Rational(repr(float(np.trace(A0) / d)))
    vals = [li.scalar_poly(Lt, n, d).eval(a_tr) for Lt in range(1, _by_budget(ctx, 11, 13))]
    up = next((i + 1 for i in range(1, len(vals)) if vals[i] > vals[i - 1]), None)
    mc_tests = _by_budget(ctx, (1, 3, 5), (1, 2, 3, 4, 5, 6))
    samples = _by_budget(ctx, 10_000, 100_000, 400_000)
    comparisons = 2 * len(mc_tests)
    mc = {}
    for label, sigma in (("in_distribution", np.eye(d)), ("out_of_distribution", FIG3_OOD)):
        mc[label] = {str(Lt): mc_loss(looped_model(d, Lt, A0), sigma, n, samples, ctx.seed_for(
            "fig3", label, Lt), device=rt.device).as_dict(comparisons=comparisons) for Lt in mc_tests}
    dist_tol = rt.tolerance(1e-6, 1e3)
    ok = up is None and dist < dist_tol
    ev = {"trained": {"Dist_to_I": dist, "scale": float(a_tr), "a_star": li.a_star_float(n, d,
                                                                                      L_train),
                      **results[0].summary(curve_points=10)},
          "exact_loss_by_L_test_at_trained_scale": [float(v) for v in vals],
          "first_increase_at_L_test": up, "monte_carlo_real_forward_pass": mc,
          "ood_sigma_eigenvalues": np.diag(FIG3_OOD).tolist()}
    if dist >= dist_tol:
        return combine([Finding("loop_extrapolation", None, ev,
                                reason=f"the trained A is not a multiple of I to {dist_tol:.1g}")])
    bad = None if up is None else {
        "d": d, "n": n, "L_train": L_train, "trained_scale": str(a_tr), "Dist_to_I": dist,
        "L_test": up, "loss_at_L_test": float(vals[up - 1]),
        "loss_at_L_test_minus_1": float(vals[up - 2])}
    return combine([Finding("loop_extrapolation", ok, ev, bad,
                            "" if ok else f"the trained model's loss increases from L_test = "
                                          f"{up - 1} to {up}")], {"runtime": rt.describe()})


FIG3 = Claim(
    id="gatmiry2024.fig3",
    title="Fig. 3: evaluating with more loops than trained keeps lowering the loss",
    paper=PAPER,
    statement=r"A looped model trained with 2 (or 5) loops, evaluated with arbitrarily many loops, "
              r"keeps decreasing the in-distribution loss.",
    assumptions=("Sigma* = I, u = 0, d = 10; symbolic: the trained model is the exact optimum "
                 "a*(n, d, L_train) I; train: L-BFGS on the exact loss, then Monte Carlo with the "
                 "real forward pass", "OOD panel (train tier): Sigma = diag(0.5 .. 1.5), "
                 "w ~ N(0, Sigma^{-1})"),
    formulas=(),
    checks={"symbolic": fig3_symbolic, "train": single_threaded(fig3_train)},
    setting=FIG_SETTING,
)


def fig4_symbolic(ctx: Context) -> TierResult:
    """Gradient flow from A(0) = 0 on the exact loss (d = 10, n = 20): the time to close 99% of
    the gap f(0) - f(a*) for each L; converges for every L, more slowly for more loops."""
    rows, bad = [], None
    n, d = 20, 10
    prev = None
    for L in range(1, _by_budget(ctx, 6, 8)):  # monotonicity from L = 2 (Thm. 3.3's rate)
        a = _a_rational(n, d, L)
        f = li.scalar_poly(L, n, d)
        f0, fs = f.eval(0), f.eval(a)
        xi = fs + (f0 - fs) / 100
        t, _ = scalar_flow_time(L, n, d, xi)
        rows.append({"L": L, "a_star": float(a), "time_to_99_percent": float(t)})
        if prev is not None and L > 2 and not t > prev and bad is None:
            bad = {"L": L, "time": float(t), "previous": float(prev)}
        prev = t
    return combine([Finding("flow_converges_slower_with_more_loops", bad is None, {
        "d": d, "n": n, "A0": "0", "rows": rows,
        "note": "monotone from L = 2 (the rate of Thm. 3.3 needs L >= 2); the exact population "
                "flow converges for L = 1 too, slightly more slowly than L = 2 (the figure's "
                "remark that 1 loop does not converge concerns the paper's finite-sample "
                "training)"},
        bad, "" if bad is None else "more loops do not slow the flow")])


FIG4 = Claim(
    id="gatmiry2024.fig4",
    title="Fig. 4: A converges to I for every number of loops, more slowly for more loops",
    paper=PAPER,
    statement=r"The iterate $A$ converges to (a multiple of) $I$ for all numbers of loops; the "
              r"convergence is slower for more loops.",
    assumptions=("Sigma* = I, u = 0, d = 10, n = 20, gradient flow on the exact loss from A = 0",
                 "'slower for more loops' compared for L >= 2 (Thm. 3.3's rate; the figure's "
                 "1-loop run does not converge)"),
    formulas=(),
    checks={"symbolic": fig4_symbolic},
    setting=FIG_SETTING,
)


def _own_symbols(claim: Claim) -> Claim:
    """The claim with each formula's scalar symbols narrowed to those some formula of the claim
    (as printed or corrected) uses, or that size a matrix of the formula.  The symbol tuples are shared by a section's
    claims, so Thm. 3.4 declared delta and epsilon of Lemma A.10: a swap into them made mutants no
    tier could evaluate (inconclusive survivors), and ``--set`` should reject them as symbols the
    claim does not have."""
    texts = [f.text for f in claim.formulas] + list(claim.correction.formulas.values()
                                                    if claim.correction else [])
    used = {w for t in texts for w in re.findall(r"[A-Za-z_]\w*", t)}

    def keep(f: NamedFormula, s: FormulaSymbol) -> bool:
        shapes = {x for m in f.symbols if m.kind != "scalar" for x in m.shape} | set(f.shape or ())
        return s.kind != "scalar" or s.name in used or (s.name in SIZE_NAMES and s.name in shapes)

    formulas = tuple(dataclasses.replace(f, symbols=tuple(s for s in f.symbols if keep(f, s)),
                                         _cache={}) for f in claim.formulas)
    return dataclasses.replace(claim, formulas=formulas)


CLAIMS = [_own_symbols(c) for c in (
    PROP3_1, LEMMA4_1, COR_A4, LEMMA_A3, LEMMA_A6, THM_A1, LEMMA_A2, LEMMA4_2, LEMMA_A5,
    LEMMA4_3, LEMMA_A7, THM3_2, THM_A8, THM3_4, THM_A11, LEMMA_A10, THM3_3, THM_A12,
    THM4_4, LEMMA_A9, THM4_5, THM_A13, FIG1, FIG2, FIG3, FIG4)]


# ==============================================================================================
# Bench hook
# ==============================================================================================
def bench_exact_loss(L: int, n: int, d: int) -> tuple[Poly, float]:
    """For bench/train.py: the exact population loss L(A, 0) of the looped model at Sigma* = I
    (derived from the forward pass; a Poly in the letter ``A`` with coefficients in n, d:
    ``poly.evaluate({"A": A}, {"n": n, "d": d})`` on numpy or torch, ``poly.compile()`` for
    ``models.exact.ExactLoss``) and the optimal scalar a*(n, d, L) (A^opt = a* I, Thm. 3.2)."""
    return li.exact_loss_isotropic(L), li.a_star_float(n, d, L)
