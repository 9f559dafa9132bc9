"""The looped linear transformer of gatmiry2024 (Secs. 3.3-3.5), derived with the moment kernel.

Model.  Z_t = Z_{t-1} - (1/n) P Z_{t-1} M (Z_{t-1}^T Q Z_{t-1}) (eqs. (2)-(3)), run L times with
the shared P = [[0, 0], [u^T, 1]], Q = [[A, 0], [0, 0]] of Sec. 3.5; the prediction is
TF_L = -[Z_L]_{d+1,n+1} (eq. (4)).  Data: x_i, x_q ~ N(0, Sigma*), w* ~ N(0, Sigma*^{-1}),
y_i = <w*, x_i> (Sec. 3.2).  S = X X^T / n is the empirical covariance (the paper's Sigma) and
W = X X^T the Wishart matrix of ``moments.wishart``.

Everything below is derived from the forward pass ``models.lsa.lsa_forward`` run on the symbolic
prompt, with the moment kernel (``moments.wick`` and ``moments.wishart``):

- ``model_error`` / ``derived_loss``: TF_L - y_q and L(A, u) = E[(TF_L - y_q)^2] as a polynomial
  in trace words of Sigma*, Sigma*^{-1}, A and u (Isserlis; practical for L <= 3).
- ``residual_form``: the closed form the forward pass reduces to,
  TF_L - y_q = -w*^T prod_i (I - S A_i) x_q + sum_k u_k^T S A_k prod_{j>k} (I - S A_j) x_q,
  checked as an exact polynomial identity by ``residual_identity``.
- ``scalar_loss``: f(a) = L(a I, 0) at Sigma* = I, i.e. E tr (I - a W/n)^{2L}, from the exact
  moments E tr W^k in n and d (any L <= 20); ``a_star`` is its unique minimiser (f is strictly
  convex in a).
- ``hessian_at_scalar``: the Hessian of L(., 0) at a I for Sigma* = I.  By orthogonal invariance
  it has two eigenvalues: f''(a)/d along I, and ``h_perp`` on the traceless symmetric matrices.
  The latter is a sum of E tr(E W^i E W^j) = alpha_ij ||E||_F^2 (E traceless), where alpha_ij
  follows from E tr W^{i+j} and E[tr W^i tr W^j] (``traceless_alpha``).
- ``paper_form``: the form E tr (I - A^{1/2} S A^{1/2})^{2L} of Lemma 4.1 / Cor. A.4 as a
  polynomial in p_j = tr A^j (E tr (A W)^k is the Sigma-general Wishart moment at Sigma = A).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping, Sequence

import mpmath
import numpy as np
import sympy
import torch

from models.lsa import LSAConfig, LinearTransformer, lsa_forward, readout
from models.sampler import PromptLaw, sample_prompts
from moments import wishart, wishart_sympy
from moments.blocks import BlockMat
from moments.letters import space_size
from moments.montecarlo import Estimate, streaming_estimate
from moments.poly import Poly
from moments.tensor import Mat, identity, matrix, scalar, vector, zeros
from moments.wick import canonical, expectation
from verify.formulas import sum_terms

from .linear_icl import SymbolicPrompt, cayley_orthogonal, symbolic_prompt

N = space_size("n")
D = space_size("d")
a_sym = sympy.Symbol("a")
_w = sympy.Symbol("w")
_s = sympy.Symbol("s")


# ==============================================================================================
# The forward pass on the symbolic prompt
# ==============================================================================================
def sec35_weights(A: Mat, u: Mat | None) -> tuple[BlockMat, BlockMat]:
    """P = [[0, 0], [u^T, 1]], Q = [[A, 0], [0, 0]] (Sec. 3.5; eq. (11) per layer)."""
    P = BlockMat([[zeros("d", "d"), zeros("d", "1")],
                  [u.T if u is not None else zeros("1", "d"), scalar(1)]])
    Q = BlockMat([[A, zeros("d", "1")], [zeros("1", "d"), zeros("1", "1")]])
    return P, Q


def layer_letters(L: int, multilayer: bool = False) -> tuple[list[Mat], list[Mat]]:
    """The letters A, u of each layer: shared (looped) or A0, u0, A1, u1, ... (Thm. A.1)."""
    if multilayer:
        return ([matrix(f"A{i}", symmetric=True) for i in range(L)],
                [vector(f"u{i}") for i in range(L)])
    return [matrix("A", symmetric=True)] * L, [vector("u")] * L


def model_error(L: int, isotropic: bool = False, with_u: bool = True,
                multilayer: bool = False) -> tuple[Mat, SymbolicPrompt, list, list]:
    """TF_L(Z_0) - y_q = -[Z_L]_{d+1,n+1} - w*^T x_q from the forward pass (eqs. (2)-(4))."""
    sp = symbolic_prompt("sigma_inverse", isotropic=isotropic)
    As, us = layer_letters(L, multilayer)
    layers = [sec35_weights(A, u if with_u else None) for A, u in zip(As, us)]
    Z = lsa_forward(sp.Z, layers, sp.mask, N, step=-1)
    return -readout(Z) - sp.target, sp, As, us


def residual_form(sp: SymbolicPrompt, As: Sequence[Mat], us: Sequence[Mat] | None) -> Mat:
    """-w*^T prod_i (I - S A_i) x_q + sum_k u_k^T S A_k prod_{j>k} (I - S A_j) x_q."""
    S = sp.X @ sp.X.T / N
    I = identity("d")
    M = I
    for A in As:
        M = M @ (I - S @ A)
    err = -(sp.w.T @ M @ sp.xq)
    if us is not None:
        for k, (A, u) in enumerate(zip(As, us)):
            tail = I
            for A2 in As[k + 1:]:
                tail = tail @ (I - S @ A2)
            err = err + u.T @ S @ A @ tail @ sp.xq
    return err


def residual_identity(L: int, with_u: bool = True, multilayer: bool = False) -> Poly:
    """(forward-pass error) - (residual form), canonical: zero iff the identity holds."""
    err, sp, As, us = model_error(L, with_u=with_u, multilayer=multilayer)
    return canonical(err - residual_form(sp, As, us if with_u else None)).simplify()


@lru_cache(maxsize=None)
def derived_loss(L: int, isotropic: bool = False, with_u: bool = True,
                 multilayer: bool = False) -> Poly:
    """L(A, u) = E[(TF_L - y_q)^2] from the forward pass (letters Sigma, Sigma_inv, A, u)."""
    err = model_error(L, isotropic, with_u, multilayer)[0]
    return expectation(err * err).simplify()


def exact_loss_isotropic(L: int) -> Poly:
    """L(A, 0) at Sigma* = I for a full symmetric A: a polynomial in the letter ``A`` with
    coefficients in ``n`` and ``d`` (for training and benchmarks; L <= 3 in practice)."""
    return derived_loss(L, isotropic=True, with_u=False)


# ==============================================================================================
# Sigma* = I and A = a I: Wishart moments in n and d
# ==============================================================================================
@lru_cache(maxsize=None)
def trace_power(k: int) -> sympy.Expr:
    """E tr W^k for W ~ Wishart(n, I_d) (tr W^0 = d)."""
    return D if k == 0 else wishart_sympy.trace_moment(k, identity=True)


@lru_cache(maxsize=None)
def trace_pair(i: int, j: int) -> sympy.Expr:
    """E[tr W^i tr W^j] for W ~ Wishart(n, I_d)."""
    if i == 0 or j == 0:
        return D * trace_power(i + j)
    return wishart_sympy.trace_product_moment((i, j), identity=True)


@lru_cache(maxsize=None)
def scalar_loss(L: int) -> sympy.Expr:
    """f(a) = L(a I, 0) at Sigma* = I = E tr (I - a W/n)^{2L}, in a, n, d."""
    return sympy.Add(*[sympy.binomial(2 * L, k) * (-a_sym / N) ** k * trace_power(k)
                       for k in range(2 * L + 1)])


@lru_cache(maxsize=None)
def _trace_power_terms(k: int) -> tuple:
    """E tr W^k as ((i, j, c), ...) meaning sum c n^i d^j (exact integer arithmetic later)."""
    return tuple((i, j, sympy.Rational(c)) for (i, j), c in
                 sympy.Poly(sympy.expand(trace_power(k)), N, D).as_dict().items())


@lru_cache(maxsize=None)
def scalar_poly(L: int, n: int, d: int) -> sympy.Poly:
    """f(a) at concrete n, d as an exact polynomial in a: the coefficient of a^k is
    binom(2L, k) (-1/n)^k E tr W^k (evaluated in integers; sympy substitution is slow at large
    n, d; at d = 1 the chi-square moments, so any L)."""
    n, d = sympy.Integer(n), sympy.Integer(d)
    coeffs, chi2 = {}, sympy.Integer(1)
    for k in range(2 * L + 1):
        if d == 1:  # E (chi^2_n)^k = n (n + 2) ... (n + 2k - 2): any L, no trace-power table
            moment = chi2
            chi2 *= n + 2 * k
        else:
            moment = sum((c * n ** i * d ** j for i, j, c in _trace_power_terms(k)),
                         sympy.Integer(0))
        coeffs[(k,)] = sympy.binomial(2 * L, k) * (-1) ** k * moment / n ** k
    return sympy.Poly.from_dict(coeffs, a_sym, domain="QQ")


@lru_cache(maxsize=None)
def a_star(n: int, d: int, L: int) -> sympy.Expr:
    """The unique minimiser of f (f is strictly convex: f'' = E tr 2L(2L-1) S^2 (I-aS)^{2L-2}
    > 0), the unique real root of f'(a); a rational or a ``CRootOf``."""
    roots = scalar_poly(L, n, d).diff(a_sym).real_roots()
    if len(roots) != 1:
        raise ArithmeticError(f"f'(a) has {len(roots)} real roots at n={n}, d={d}, L={L}")
    return roots[0]


def a_star_float(n: int, d: int, L: int) -> float:
    return float(a_star_rational(n, d, L))


@lru_cache(maxsize=None)
def a_star_rational(n: int, d: int, L: int, digits: int = 120) -> sympy.Rational:
    """A rational within 10^-digits of a* (``certified_minimiser`` of f)."""
    return certified_minimiser(scalar_poly(L, n, d), digits)


def certified_minimiser(f: sympy.Poly, digits: int = 120) -> sympy.Rational:
    """A rational within 10^-digits of the minimiser of a strictly convex polynomial f in a with
    f'(0) < 0, certified: f' is strictly increasing and changes sign between a - 10^-digits and
    a + 10^-digits (exact rational evaluation).  Values at it decide signs that are far larger
    than the derivative times 10^-digits."""
    fp = f.diff(f.gens[0])
    with mpmath.workdps(digits + 20):
        mc = [mpmath.mpf(int(c.p)) / int(c.q) for c in fp.all_coeffs()]
        lo, hi = mpmath.mpf(0), mpmath.mpf(1)
        while mpmath.polyval(mc, hi) < 0:  # f'(0) < 0 < f'(large)
            hi *= 2
        for _ in range(60):  # bisection to a good start, then Newton
            mid = (lo + hi) / 2
            if mpmath.polyval(mc, mid) < 0:
                lo = mid
            else:
                hi = mid
        # unverified: at n ~ 10^60 f' has huge coefficients and Newton's last residual can
        # exceed findroot's absolute tolerance; the bracket test below certifies the root
        x = mpmath.findroot(lambda t: mpmath.polyval(mc, t), (lo + hi) / 2, verify=False)
        q = sympy.Rational(mpmath.nstr(x, digits + 10, strip_zeros=False))
    eps = sympy.Rational(1, 10 ** digits)
    if not (fp.eval(q - eps) < 0 < fp.eval(q + eps)):
        roots = fp.real_roots()
        if len(roots) != 1:
            raise ArithmeticError(f"f'(a) has {len(roots)} real roots")
        return sympy.Rational(str(sympy.N(roots[0], digits)))
    return q


def value(expr, digits: int = 40) -> mpmath.mpf:
    """A real constant (rational, radical, CRootOf) in mpmath at ``digits`` digits."""
    with mpmath.workdps(digits):
        return mpmath.mpf(sympy.N(expr, digits)._to_mpmath(mpmath.mp.prec))


def optimal_loss(n: int, d: int, L: int) -> sympy.Expr:
    """f(a*) exactly (an algebraic number)."""
    return scalar_poly(L, n, d).as_expr().subs(a_sym, a_star(n, d, L))


# ----- the Hessian at a I ---------------------------------------------------------------------
@lru_cache(maxsize=None)
def traceless_alpha(i: int, j: int) -> sympy.Expr:
    """alpha_ij with E tr(E W^i E W^j) = alpha_ij ||E||_F^2 for every traceless symmetric E.

    The invariant quadratic forms on symmetric matrices are ||E||^2 and tr(E)^2, so
    E tr(E W^i E W^j) = alpha ||E||^2 + beta tr(E)^2.  E = I gives alpha d + beta d^2 = T_{i+j};
    summing over an orthonormal basis of symmetric matrices (sum_E E_ab E_cd =
    (delta_ac delta_bd + delta_ad delta_bc)/2) gives alpha d(d+1)/2 + beta d =
    (T_{i+j} + T_{i,j})/2, with T_k = E tr W^k and T_{i,j} = E[tr W^i tr W^j]."""
    Tk, Tij = trace_power(i + j), trace_pair(i, j)
    return (D * (Tk + Tij) - 2 * Tk) / (D * (D + 2) * (D - 1))


def _pair_expectation(p: sympy.Expr, q: sympy.Expr) -> sympy.Expr:
    """E tr(E p(S) E q(S)) / ||E||^2 for polynomials p, q in s = S = W/n, E traceless."""
    P, Q = sympy.Poly(sympy.expand(p), _s), sympy.Poly(sympy.expand(q), _s)
    total = sympy.Integer(0)
    for (i,), ci in P.terms():
        for (j,), cj in Q.terms():
            total += ci * cj * traceless_alpha(i, j) / N ** (i + j)
    return total


@lru_cache(maxsize=None)
def hessian_perp(L: int) -> sympy.Expr:
    """d^2/dt^2 L(a I + t E, 0) at t = 0 for a unit traceless symmetric E (Sigma* = I), in a, n, d.

    With R = I - a S, (R - t E S)^L = R^L - t M_1 + t^2 M_2 + ..., and the t^2 coefficient of
    tr(M M^T) is 2 tr(M_2 R^L) + tr(M_1 M_1^T):
      tr(M_2 R^L) = sum_{g=1}^{L-1} (L - g) tr(E S R^{g-1} E S R^{2L-1-g}),
      tr(M_1 M_1^T) = sum_{m=0}^{2L-2} c_m tr(E S^2 R^{2L-2-m} E R^m), c_m = min(m, 2L-2-m) + 1.
    """
    R = 1 - a_sym * _s
    c2 = sympy.Integer(0)
    for g in range(1, L):
        c2 += 2 * (L - g) * _pair_expectation(_s * R ** (g - 1), _s * R ** (2 * L - 1 - g))
    for m in range(2 * L - 1):
        c2 += (min(m, 2 * L - 2 - m) + 1) * _pair_expectation(_s ** 2 * R ** (2 * L - 2 - m),
                                                             R ** m)
    return 2 * c2


@lru_cache(maxsize=None)
def hessian_perp_poly(L: int, n: int, d: int) -> sympy.Poly:
    """``hessian_perp`` at concrete n, d: a polynomial in a with rational coefficients."""
    return sympy.Poly(sympy.expand(hessian_perp(L).subs({N: n, D: d})), a_sym)


def hessian_at_scalar(a, n: int, d: int, L: int) -> tuple[sympy.Expr, sympy.Expr]:
    """(h_I, h_perp): the Hessian eigenvalues of L(., 0) at a I along I/sqrt(d) and along the
    traceless directions (multiplicity d(d+1)/2 - 1), exactly at ``a``."""
    f = scalar_poly(L, n, d)
    h_I = f.diff(a_sym).diff(a_sym).eval(a) / d
    if d == 1:
        return h_I, sympy.nan
    return h_I, hessian_perp_poly(L, n, d).eval(a)


# ==============================================================================================
# The paper's form (Lemma 4.1, Cor. A.4): E tr (I - A^{1/2} S A^{1/2})^{2L} in p_j = tr A^j
# ==============================================================================================
def power_sum(j: int) -> sympy.Symbol:
    return wishart.power_sum(j)


@lru_cache(maxsize=None)
def paper_form(L: int) -> sympy.Expr:
    """E tr (I - V)^{2L}, V = A^{1/2} S A^{1/2} ~ Wishart(n, A)/n: sum_k C(2L, k) (-1/n)^k
    E tr W_A^k with E tr W_A^k in n and p_j = tr A^j (p_0 = d)."""
    total = D
    for k in range(1, 2 * L + 1):
        total += sympy.binomial(2 * L, k) * (-1 / N) ** k * wishart_sympy.trace_moment(k)
    return total


def spectral_function(expr: sympy.Expr, n: int, d: int, L: int):
    """A float function of eigenvalue vectors (..., d) for an expression in p_j (numpy)."""
    syms = [power_sum(j) for j in range(1, 2 * L + 1)]
    fn = sympy.lambdify(syms, sympy.expand(expr.subs({N: n, D: d})), "numpy")

    def f(lam: np.ndarray) -> np.ndarray:
        lam = np.asarray(lam, dtype=float)
        return fn(*[(lam ** j).sum(-1) for j in range(1, 2 * L + 1)])

    return f


# ==============================================================================================
# Other exact functions of the scalar model
# ==============================================================================================
@lru_cache(maxsize=None)
def covariance_moment(k: int) -> sympy.Expr:
    """tr(E[W^k] Sigma) for W ~ Wishart(n, Sigma), in n and p_j (E[W^k] = sum c n^e p_mu Sigma^s)."""
    if k == 0:
        return power_sum(1)
    out = sympy.Integer(0)
    for (s, mu, e), c in wishart.moment(k).terms.items():
        term = c * N ** e * power_sum(s + 1)
        for part in mu:
            term *= power_sum(part)
        out += term
    return out


# ==============================================================================================
# Exact comparisons of real constants
# ==============================================================================================
def exact_sign(expr) -> int:
    """The sign of a real constant (rationals, radicals, rational powers, CRootOf), decided by
    interval-free high-precision evaluation with a margin, and exactly when it is zero."""
    expr = sympy.sympify(expr)
    if expr.is_Rational:
        return int(sympy.sign(expr))
    for digits in (30, 120, 500, 2000):
        v = sympy.N(expr, digits)
        if not v.is_finite:
            raise ArithmeticError(f"{_brief(expr)} is not finite")
        if abs(v) > sympy.Float(10) ** (-(digits - 15)):
            return 1 if v > 0 else -1
    x = sympy.Symbol("x")
    try:
        if sympy.minimal_polynomial(expr, x) == x:
            return 0
    except (sympy.polys.polyerrors.BasePolynomialError, NotImplementedError) as exc:
        # e.g. NotAlgebraic: what the evaluations left undecided stays undecided
        raise ArithmeticError(f"cannot decide the sign of {_brief(expr)}: {exc}") from exc
    raise ArithmeticError(f"cannot decide the sign of {_brief(expr)}")


def _brief(expr: sympy.Expr, limit: int = 200) -> str:
    """The constant for a message: cut to ``limit`` characters (delta^n at n = 10^6 holds an
    integer that Python refuses to print)."""
    try:
        text = str(expr)
    except ValueError:
        return f"a constant with {sympy.count_ops(expr)} operations and integers too long to print"
    return text if len(text) <= limit else text[:limit] + " ..."


def exact_le(lhs, rhs) -> bool:
    """lhs <= rhs for real constants, exactly (see ``exact_sign``)."""
    return exact_sign(sympy.sympify(rhs) - sympy.sympify(lhs)) >= 0


# ==============================================================================================
# Formulas as moment-kernel expressions
# ==============================================================================================
def formula_mat(expr: sympy.Basic, letters: Mapping[str, Mat]) -> Mat:
    """A sympy matrix/scalar expression over ``MatrixSymbol``s as a moments ``Mat`` (1 x 1 for
    scalars): products, sums, integer powers, transposes, traces, sums over an index."""
    if isinstance(expr, sympy.Sum):  # expanded by hand: sympy's doit misses nested matrix sums
        out = None
        for term in sum_terms(expr.function, list(expr.limits)):
            mat = formula_mat(term, letters)
            out = mat if out is None else out + mat
        if out is None:  # an empty range: the sum is zero, of the summand's shape
            rows, cols = getattr(expr.function, "shape", (1, 1))
            return zeros("1" if rows == 1 else "d", "1" if cols == 1 else "d")
        return out
    if isinstance(expr, sympy.MatrixSymbol):
        if expr.name not in letters:
            raise KeyError(f"no letter for {expr.name}")
        return letters[expr.name]
    if isinstance(expr, sympy.Identity):
        return identity("d")
    if isinstance(expr, sympy.ZeroMatrix):
        return zeros("d" if expr.rows != 1 else "1", "d" if expr.cols != 1 else "1")
    if isinstance(expr, sympy.MatAdd):
        out = None
        for arg in expr.args:
            term = formula_mat(arg, letters)
            out = term if out is None else out + term
        return out
    if isinstance(expr, sympy.MatMul):
        coeff, mats = expr.as_coeff_matrices()
        out = None
        for m in mats:
            term = formula_mat(m, letters)
            out = term if out is None else out @ term
        return out.scale(coeff) if coeff != 1 else out
    if isinstance(expr, sympy.MatPow):
        base, exp = expr.args
        if not (exp.is_Integer and exp >= 0):
            raise ValueError(f"only non-negative integer matrix powers, got {exp}")
        out = identity("d")
        b = formula_mat(base, letters)
        for _ in range(int(exp)):
            out = out @ b
        return out
    if isinstance(expr, sympy.Transpose):
        return formula_mat(expr.arg, letters).T
    if isinstance(expr, sympy.Trace):
        return formula_mat(expr.arg, letters).trace()
    if isinstance(expr, sympy.Add):
        out = None
        for arg in expr.args:
            term = formula_mat(arg, letters)
            out = term if out is None else out + term
        return out
    if isinstance(expr, sympy.Mul):
        coeff = sympy.Integer(1)
        out = None
        for arg in expr.args:
            if arg.free_symbols <= {N, D} and not arg.atoms(sympy.MatrixSymbol, sympy.Trace):
                coeff *= arg
                continue
            term = formula_mat(arg, letters)
            out = term if out is None else out * term
        return scalar(coeff) if out is None else out.scale(coeff)
    if isinstance(expr, sympy.Pow) and expr.exp.is_Integer and expr.exp >= 0:
        out = scalar(1)
        base = formula_mat(expr.base, letters)
        for _ in range(int(expr.exp)):
            out = out * base
        return out
    if isinstance(expr, sympy.Expr) and expr.free_symbols <= {N, D}:
        return scalar(expr)
    raise ValueError(f"cannot translate {type(expr).__name__} {expr} into the moment kernel")


# ==============================================================================================
# Budgets and exact instances Sigma* = R^2, A = B^2
# ==============================================================================================
BUDGET_LOOPS = {"quick": (1, 2), "default": (1, 2, 3), "paper": (1, 2, 3)}


def by_budget(ctx, quick, default=None, paper=None):
    """The value for the context's budget (default falls back to quick, paper to default)."""
    name = ctx.budget.name
    if name == "quick":
        return quick
    if name == "default" or paper is None:
        return quick if default is None else default
    return paper


def loops(ctx) -> tuple:
    """Loop counts for which the full-matrix loss is derived by Isserlis (cost grows fast in L)."""
    return BUDGET_LOOPS.get(ctx.budget.name, (1, 2))


def exact_text(x) -> str:
    """An exact number as text (rationals exactly; algebraic numbers with 20 digits)."""
    x = sympy.sympify(x)
    if x.is_Rational and max(abs(x.p), x.q).bit_length() <= 1000:
        return str(x)
    if x.is_Rational:  # a power like (2 delta)^(2n) at n = 10^5: printing it would take pages
        return str(sympy.N(x, 20))
    return f"{sympy.N(x, 20)} ({x})" if sympy.count_ops(x) < 30 and len(str(x)) < 120 \
        else str(sympy.N(x, 20))


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


def spd(d: int, rng: np.random.Generator, values: Sequence[int] = (1, 2, 3),
        dens: Sequence[int] = (1, 2, 3)) -> sympy.ImmutableMatrix:
    """A rational symmetric positive definite matrix U diag(eig) U^T (U a Cayley rotation)."""
    U = cayley_orthogonal(d, rng)
    eig = [sympy.Rational(int(rng.choice(values)), int(rng.choice(dens))) for _ in range(d)]
    return sympy.ImmutableMatrix(U * sympy.diag(*eig) * U.T)


def root_instances(ctx, dims: Sequence[int] = (2, 3),
                   isotropic: bool = False) -> list[RootInstance]:
    """Generic exact instances (random rational rotations and spectra), one per dimension."""
    rng = ctx.rng("root-instances", int(isotropic))
    out = []
    for d in dims:
        R = sympy.ImmutableMatrix(sympy.eye(d)) if isotropic else spd(d, rng)
        B = spd(d, rng, values=(1, 2, 3, 4), dens=(2, 3))
        u = sympy.ImmutableMatrix([sympy.Rational(int(rng.integers(-3, 4)), 2) for _ in range(d)])
        out.append(RootInstance(R, B, u, f"generic d={d}"))
    return out


def aligned_instance(d: int, c=sympy.Rational(9, 16)) -> RootInstance:
    """A = c Sigma*^{-1} (B = sqrt(c) R^{-1}): the case where the paper's loss form is exact."""
    rng = np.random.default_rng(7)
    R = spd(d, rng)
    B = sympy.ImmutableMatrix(sympy.sqrt(c) * R.inv())
    return RootInstance(R, B, sympy.ImmutableMatrix([1] + [0] * (d - 1)), f"A = {c} Sigma*^-1")


def exact_value(poly: Poly, env: Mapping, n) -> sympy.Expr:
    """A derived scalar polynomial at exact letter values (n may stay symbolic), simplified."""
    val = poly.evaluate(env, {"n": n, "d": env["Sigma"].shape[0]}, exact=True)
    if isinstance(val, sympy.MatrixBase):
        val = val[0, 0]
    return sympy.cancel(sympy.together(sympy.expand(val)))


# ==============================================================================================
# The torch model and Monte Carlo of its loss
# ==============================================================================================
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


# ==============================================================================================
# d = 1 at any L: the optimum by quadrature
# ==============================================================================================
QUAD_DIGITS = 30


def _chi2_mean_density(n: int):
    """The density of s = chi^2_n / n (the 1 x 1 Wishart W/n at d = 1)."""
    k = mpmath.mpf(n) / 2
    c = k ** k / mpmath.gamma(k)
    return lambda s: c * s ** (k - 1) * mpmath.exp(-k * s)


def scalar_optimum_d1(n: int, L: int) -> tuple[mpmath.mpf, mpmath.mpf]:
    """(a*, f(a*)) at d = 1 for any L, by quadrature: f(a) = E (1 - a s)^{2L} with s ~ chi^2_n/n
    (a positive integrand: no cancellation, unlike the degree-2L polynomial in the moments,
    whose terms reach 10^6500 at L = 2048), f convex and f'(a) = -2L E s (1 - a s)^{2L-1}, so a*
    is the one root of f' (bisection in a bracket), at QUAD_DIGITS digits."""
    p = _chi2_mean_density(n)
    with mpmath.workdps(QUAD_DIGITS + 10):
        def cuts(a):
            # the bulk within 1/(2 L a) of 0, the sign change at 1/a, and the far peak of
            # |1 - a s|^{2L} e^{-n s/2} at a s - 1 = 4 L a / n, which outgrows the bulk past a*
            peak = (1 + 4 * L * a / n) / a
            return sorted({mpmath.mpf(0), 1 / (a * 2 * L), 1 / a, 2 / a, peak / 2, peak,
                           2 * peak}) + [mpmath.inf]

        def fp(a):
            return -2 * L * mpmath.quad(lambda s: s * (1 - a * s) ** (2 * L - 1) * p(s), cuts(a))

        lo, hi = mpmath.mpf(1) / (64 * L), mpmath.mpf(8) / L  # a* L -> a constant
        while fp(lo) > 0:
            lo /= 8
        while fp(hi) < 0:
            hi *= 8
        # bisection: f' jumps from -4e2 to 4e15 between a = 0.00043 and 0.00044 at n = 1,
        # L = 2048 (the far peak switches on), where a secant step goes astray
        for i in range(64):
            mid = mpmath.sqrt(lo * hi) if i < 12 else (lo + hi) / 2
            lo, hi = (mid, hi) if fp(mid) < 0 else (lo, mid)
        a = (lo + hi) / 2
        return a, mpmath.quad(lambda s: (1 - a * s) ** (2 * L) * p(s), cuts(a))
