"""ahn2023 App. A: the displayed steps of the proof of Theorem 1 (one layer), each re-derived.

C = (1/n) sum_{i<=n} z^(i) z^(i)T (eq. (15)) and f(b, A) = E[(b^T C A + w*^T) x^(n+1)]^2.

- App. A.2 Step 1 (``eq15_components``): at Sigma = I, f = sum_j f_j with
  f_j = E[Tr(C a_j b^T) + w*[j]]^2 (the cross terms vanish);
- proof of Lemma 6 (``lemma6_convex``): the gradient 2E[<C,X>C] + 2E[w*[j]C] of the convex f_j;
- C in blocks (``eq15_c_blocks``), and <C, E_{d+1,j}> (``eq17_inner``);
- eq. (18) and its App. A.3 generalisation (``eq18``): the per-pair fourth moments;
- Step 3 of A.2 / end of Step 1 of A.3 (``lemma6_unique``): "X_j is the unique global minimum";
- App. A.3's diagonal optimum (``lemma7_diag``) and its change of coordinates
  (``thm1_rotation``).

Pointwise identities use the kit's forward-identity check (every input entry a symbol, then
float64 draws); moments come from the moment kernel on the symbolic prompt of eq. (1).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

import sympy
import torch

from models.lsa import lsa_forward, readout
from moments.blocks import BlockMat
from moments.spectral import LAMBDA, power_sum, spectral_value
from moments.tensor import gaussian_vector, matrix, scalar, vector
from moments.wick import expectation
from verify.claim import Claim, Context, Correction, TierResult
from verify.evidence import Finding, combine, step
from verify.formulas import FormulaSymbol, NamedFormula, formula_value

from ..kit import ForwardIdentity, forward_identity
from ..kit.arrays import Exact
from ..kit.forward_identity import identity_truth
from ..kit.layer_optimum import layer_weights, n_sym
from ..kit.linear_icl import LinearICLSetting, cayley_orthogonal, symbolic_prompt
from .one_layer import PAPER, _D, _N

_C = FormulaSymbol("C_z", "matrix", ("d+1", "d+1"), symmetric=True)
_BV = FormulaSymbol("b", "matrix", ("d+1", "1"))
_AV = FormulaSymbol("a", "matrix", ("d+1", "1"))
_WJ = FormulaSymbol("w_j")
_LJ = FormulaSymbol("lambda_j", positive=True)
_P1 = FormulaSymbol("p_1", positive=True)
R = sympy.Rational


# ----------------------------------------------------------------------------------------------
# helpers shared by the claims of this module (and remarks.py)
# ----------------------------------------------------------------------------------------------
def own_sigma(why: str, w_prior: str = "identity", n: int = 7, d: int = 3) -> LinearICLSetting:
    """The setting of a claim whose checks choose their own covariances (``--sigma`` is refused,
    saying ``why``)."""
    sizes = {"n": n, "d": d}
    return LinearICLSetting(w_prior=w_prior, sizes={b: sizes for b in ("quick", "default",
                                                                        "paper")},
                            fixed_sigma=why)


def one(a, value) -> Any:
    """A scalar as a 1 x 1 matrix in the number system of ``a`` (Exact: sympy, else torch)."""
    if isinstance(a, Exact):
        v = value[0, 0] if isinstance(value, sympy.MatrixBase) else value
        return sympy.Matrix([[v]])
    return torch.as_tensor(value, dtype=torch.float64).reshape(1, 1)


def unit(a, d: int, j: int) -> Any:
    """e_j in R^d as a column, exact or float64."""
    if isinstance(a, Exact):
        return sympy.Matrix([int(i == j) for i in range(d)])
    e = torch.zeros(d, 1, dtype=torch.float64)
    e[j, 0] = 1.0
    return e


def hcat(a, parts) -> Any:
    return a.blocks([list(parts)])


def extended(result: TierResult, extra: list[Finding], name: str = "identity",
             summary: str = "") -> TierResult:
    """A kit tier's result together with further findings (fail if any failed)."""
    ok = {"pass": True, "fail": False}.get(result.status)
    head = Finding(name, ok, dict(result.evidence), result.counterexample, result.reason,
                   summary=summary if ok else "")
    out = combine([head, *extra])
    out.steps = list(result.steps)
    return out


def exact_value(expr: sympy.Basic, values: dict) -> Any:
    """``formula_value`` with explicit block matrices (each block evaluated first): sympy's own
    way through a BlockMatrix sums entries symbolically and is slow."""
    sub = {}
    for B in expr.atoms(sympy.BlockMatrix):
        rows = [[sympy.Matrix(formula_value(blk, values)) for blk in row]
                for row in B.blocks.tolist()]
        sub[B] = sympy.ImmutableMatrix(sympy.Matrix(sympy.BlockMatrix(rows)))
    return formula_value(expr.xreplace(sub) if sub else expr, values)


def sym_matrix(name: str, r: int, c: int) -> sympy.Matrix:
    """An r x c matrix of symbols name_i_j."""
    return sympy.Matrix(r, c, lambda i, j: sympy.Symbol(f"{name}_{i}_{j}"))


def first_difference(diff: sympy.Matrix) -> tuple | None:
    for i in range(diff.rows):
        for j in range(diff.cols):
            if sympy.simplify(diff[i, j]) != 0:
                return i, j
    return None


@lru_cache(maxsize=None)
def restricted_loss(w_prior: str):
    """f(b, A) at b = [0; beta], A = [A_top; 0] (beta = p_yy, A_top = Q_xx): E[e^2] of one layer
    (eq. (6) squared) by the moment kernel on the prompt of eq. (1), n and d symbolic."""
    sp = symbolic_prompt(w_prior)
    P, Q = layer_weights(restricted=True)
    err = readout(lsa_forward(sp.Z, [(P, Q)], sp.mask, n_sym)) + sp.target
    return expectation(err * err).simplify()


@lru_cache(maxsize=None)
def optimal_top_block(w_prior: str) -> tuple[sympy.Expr, sympy.Expr]:
    """(g(lambda), the stationarity equation): grad_{A_top} f = 0 at A_top = g(Sigma), beta = 1.

    The loss is a convex quadratic in A_top, so the stationary A_top is its minimiser over A_top
    (b = e_{d+1}, A's last row 0: the structure of (8))."""
    g = sympy.Symbol("g")
    funcs = {"Sigma": LAMBDA, "Q_xx": g}
    if w_prior == "sigma_inverse":
        funcs["Sigma_inv"] = 1 / LAMBDA
    grad = restricted_loss(w_prior).diff("Q_xx")
    eq = sympy.factor(spectral_value(grad, funcs).subs(sympy.Symbol("p_yy"), 1))
    sols = sympy.solve(eq, g)
    if len(sols) != 1:
        raise ValueError(f"the stationarity equation {eq} = 0 has {len(sols)} solutions")
    return sympy.simplify(sols[0]), eq


def top_block_at(g: sympy.Expr, U: sympy.Matrix, eigs, n) -> sympy.Matrix:
    """U diag(g(lambda_i)) U^T with p_k = sum lambda^k."""
    sub = {power_sum(k): sum(e ** k for e in eigs) for k in (1, 2, 3)}
    vals = [g.subs({LAMBDA: lam, **sub, n_sym: n}) for lam in eigs]
    return U * sympy.diag(*vals) * U.T


# ==============================================================================================
# App. A.2, Step 1: f(b, A) = sum_j f_j at Sigma = I
# ==============================================================================================
COMPONENT_FORMULAS = (
    NamedFormula("f_j", "(trace(C_z*a*b.T) + w_j)**2", (_C, _AV, _BV, _WJ, _D),
                 equation="App. A.2, Step 1",
                 description="the integrand of f_j: (Tr(C a_j b^T) + w*[j])^2 = "
                             "(<C, b a_j^T> + w*[j])^2 = (b^T C a_j + w*[j])^2"),
    NamedFormula("x_weight", "1", (), equation="App. A.2, Step 1",
                 description="E[x^(n+1)[j]^2] at Sigma = I, the weight of f_j in f = sum_j f_j"),
)


def components_model(a):
    """E over x_q of the integrand of (15): with v = b^T C A + w*^T (independent of x_q) and
    E[x_q x_q^T] = Sigma = I, E[(v x_q)^2] = v Sigma v^T."""
    d = a.sizes["d"]
    v = a["b"].T @ a["C_z"] @ a["A"] + a["w_star"].T
    return v @ a.eye(d) @ v.T


def components_claimed(a):
    """sum_j x_weight * f_j(C, a_j, b, w*[j]) with a_j the j-th column of A."""
    d = a.sizes["d"]
    total = None
    for j in range(d):
        fj = a.formula("f_j", a=a["A"][:, j:j + 1], w_j=a["w_star"][j, 0])
        term = one(a, a.formula("x_weight")) @ one(a, fj)
        total = term if total is None else total + term
    return total


COMPONENTS_IDENTITY = ForwardIdentity(
    components_model, components_claimed,
    inputs={"C_z": ("d+1", "d+1", "symmetric"), "A": ("d+1", "d"), "b": ("d+1", "1"),
            "w_star": ("d", "1")},
    exact_sizes=({"d": 1}, {"d": 2}, {"d": 3}),
    sizes={"quick": {"d": 3}, "default": {"d": 5}, "paper": {"d": 5}},
    what="E_{x_q}[((b^T C A + w*^T) x_q)^2] at Sigma = I",
    model_latex=r"\mathbb E_{x_q}\big[((b^\top C A + w_\star^\top)x_q)^2\big] = v\,I\,v^\top,\ "
                r"v = b^\top C A + w_\star^\top",
    claimed_latex=r"\sum_j 1\cdot(\mathrm{Tr}(C a_j b^\top) + w_\star[j])^2")

EQ15_COMPONENTS = Claim(
    id="ahn2023.eq15_components",
    title="App. A.2 Step 1: the isotropic loss splits into the components f_j",
    paper=PAPER,
    statement=(r"For $x^{(n+1)}\sim\mathcal N(0,I_d)$ independent of $C$ and $w_\star$, "
               r"$f(b,A)=\sum_j\mathbf E[b^\top Ca_j+w_\star[j]]^2\,\mathbf E[x^{(n+1)}[j]^2]="
               r"\sum_j\mathbf E[\mathrm{Tr}(Ca_jb^\top)+w_\star[j]]^2$, "
               r"$\mathrm{Tr}(Ca_jb^\top)=\langle C,ba_j^\top\rangle$."),
    assumptions=("x^(n+1) ~ N(0, I_d) independent of (C, w*)", "C symmetric (eq. (15))"),
    formulas=COMPONENT_FORMULAS,
    checks=forward_identity(COMPONENTS_IDENTITY),
    setting=COMPONENTS_IDENTITY,
    exact=identity_truth(COMPONENTS_IDENTITY, COMPONENT_FORMULAS),
    notes="The display writes A = [a_1 a_1 ... a_d] (a typo for [a_1 a_2 ... a_d]); the identity "
          "holds pointwise in (C, w*), so for any law of them.",
)


# ==============================================================================================
# Proof of Lemma 6: f_j is convex with gradient 2E[<C,X>C] + 2E[w*[j]C]
# ==============================================================================================
_XARG = FormulaSymbol("X", "matrix", ("d+1", "d+1"))
CONVEX_FORMULAS = (
    NamedFormula("grad_fj", "2*trace(C_z*X.T)*C_z + 2*w_j*C_z", (_C, _XARG, _WJ, _D),
                 equation="proof of Lemma 6", shape=("d+1", "d+1"),
                 description="the integrand of grad f_j(X) = 2E[<C, X> C] + 2E[w*[j] C]"),
)


def convex_model(a):
    """The derivative in X of the integrand (<C, X> + w*[j])^2, <C, X> = Tr(C X^T): entry by
    entry in sympy, by autograd in float64 (no formula for the gradient)."""
    C, X, w = a["C_z"], a["X"], a["w_j"]
    if isinstance(a, Exact):
        g = ((C @ X.T).trace() + w) ** 2
        return X.applyfunc(lambda s: sympy.diff(g, s))
    Xv = X.clone().requires_grad_(True)
    g = (torch.trace(C @ Xv.T) + w) ** 2
    (grad,) = torch.autograd.grad(g, Xv)
    return grad


def convex_claimed(a):
    return a.formula("grad_fj")


CONVEX_IDENTITY = ForwardIdentity(
    convex_model, convex_claimed,
    inputs={"C_z": ("d+1", "d+1", "symmetric"), "X": ("d+1", "d+1")}, scalars=("w_j",),
    exact_sizes=({"d": 1}, {"d": 2}),
    sizes={"quick": {"d": 3}, "default": {"d": 5}, "paper": {"d": 5}},
    what="the gradient in X of (<C, X> + w*[j])^2",
    model_latex=r"\nabla_X\big(\langle C, X\rangle + w_\star[j]\big)^2",
    claimed_latex=r"2\langle C,X\rangle C + 2 w_\star[j] C")


def _convexity(d: int) -> Finding:
    """The Hessian of the integrand in vec(X) is 2 vec(C) vec(C)^T (positive semi-definite for
    every C), so f_j = E[...] is convex; exact with C a symmetric symbol matrix."""
    C = sympy.Matrix(d + 1, d + 1, lambda i, j: sympy.Symbol(f"C_{min(i, j)}_{max(i, j)}"))
    X = sympy.Matrix(d + 1, d + 1, lambda i, j: sympy.Symbol(f"X_{i}_{j}"))
    w = sympy.Symbol("w_j")
    g = ((C @ X.T).trace() + w) ** 2
    xs = list(X)
    H = sympy.hessian(g, xs)
    c = sympy.Matrix(list(C))
    ok = sympy.expand(H - 2 * c * c.T) == sympy.zeros(len(xs), len(xs))
    return Finding("convex_in_X", ok, {"d": d, "hessian": "2 vec(C) vec(C)^T" if ok else
                                       "not 2 vec(C) vec(C)^T"},
                   None if ok else {"d": d}, "" if ok else "the Hessian is not PSD",
                   summary=f"the Hessian of the integrand in vec(X) is 2 vec(C) vec(C)^T (PSD) "
                           f"at d = {d}: f_j is convex")


_CONVEX_CHECKS = forward_identity(CONVEX_IDENTITY)


def convex_symbolic(ctx: Context) -> TierResult:
    return extended(_CONVEX_CHECKS["symbolic"](ctx), [_convexity(1), _convexity(2)],
                    "gradient_identity", "the stated gradient = the derivative of "
                    "(<C, X> + w*[j])^2 in X exactly (d = 1, 2)")


LEMMA6_CONVEX = Claim(
    id="ahn2023.lemma6_convex",
    title="Proof of Lemma 6: f_j is convex, grad f_j(X) = 2E[<C,X>C] + 2E[w*[j]C]",
    paper=PAPER,
    statement=(r"$f_j(X)=\mathbf E[\langle C,X\rangle+w_\star[j]]^2$ is convex in $X$ and "
               r"$\nabla f_j(X)=2\mathbf E[\langle C,X\rangle C]+2\mathbf E[w_\star[j]C]$."),
    assumptions=("C symmetric (eq. (15)); the identity holds pointwise in (C, w*), so under "
                 "the expectation",),
    formulas=CONVEX_FORMULAS,
    checks={"symbolic": convex_symbolic, "numeric": _CONVEX_CHECKS["numeric"]},
    setting=CONVEX_IDENTITY,
    exact=identity_truth(CONVEX_IDENTITY, CONVEX_FORMULAS),
)


# ==============================================================================================
# App. A.2 (and A.3, line 585): C in blocks
# ==============================================================================================
_XV = FormulaSymbol("x", "matrix", ("d", "1"))
_YS = FormulaSymbol("y")
C_BLOCK_FORMULAS = (
    NamedFormula("C_xx", "x*x.T", (_XV, _D), equation="App. A.2 (C in blocks)", shape=("d", "d"),
                 description="top-left block of z^(i) z^(i)T"),
    NamedFormula("C_xy", "y*x", (_XV, _YS, _D), equation="App. A.2 (C in blocks)",
                 shape=("d", "1"), description="top-right block of z^(i) z^(i)T"),
    NamedFormula("C_yx", "y*x.T", (_XV, _YS, _D), equation="App. A.2 (C in blocks)",
                 shape=("1", "d"), description="bottom-left block of z^(i) z^(i)T"),
    NamedFormula("C_yy", "y", (_YS,), equation="App. A.2 (C in blocks)",
                 description="bottom-right block of z^(i) z^(i)T, printed y^(i)T (the transpose "
                             "of the scalar y^(i))"),
)


def c_blocks_model(a):
    """z z^T for the token z = [x; y] of eq. (1) (one summand of C = (1/n) sum_i z z^T)."""
    z = a.blocks([[a["x"]], [one(a, a["y"])]])
    return z @ z.T


def c_blocks_claimed(a):
    return a.blocks([[a.formula("C_xx"), a.formula("C_xy")],
                     [a.formula("C_yx"), one(a, a.formula("C_yy"))]])


C_BLOCKS_IDENTITY = ForwardIdentity(
    c_blocks_model, c_blocks_claimed, inputs={"x": ("d", "1")}, scalars=("y",),
    exact_sizes=({"d": 1}, {"d": 3}),
    sizes={"quick": {"d": 3}, "default": {"d": 5}, "paper": {"d": 5}},
    what="z^(i) z^(i)T",
    model_latex=r"z z^\top,\ z = [x; y]",
    claimed_latex=r"\begin{bmatrix} xx^\top & yx\\ yx^\top & C_{yy}\end{bmatrix}")

EQ15_C_BLOCKS = Claim(
    id="ahn2023.eq15_c_blocks",
    title="App. A.2: C = (1/n) sum_i [[x xᵀ, y x], [y xᵀ, yᵀ]] in blocks",
    paper=PAPER,
    statement=(r"$C=\frac1n\sum_i\begin{bmatrix}x^{(i)}x^{(i)\top}&y^{(i)}x^{(i)}\\"
               r"y^{(i)}x^{(i)\top}&y^{(i)\top}\end{bmatrix}$ (displayed in the proofs of "
               r"Lemmas 6 and 7)."),
    assumptions=("z^(i) = [x^(i); y^(i)] (eq. (1)); C = (1/n) sum_i z^(i) z^(i)T (eq. (15))",),
    formulas=C_BLOCK_FORMULAS,
    checks=forward_identity(C_BLOCKS_IDENTITY),
    setting=C_BLOCKS_IDENTITY,
    exact=identity_truth(C_BLOCKS_IDENTITY, C_BLOCK_FORMULAS),
    correction=Correction(
        description="the bottom-right block of z z^T is y^(i)2, not y^(i)T",
        reason="z z^T has (d+1, d+1) entry y^2; the proofs use E[<C, E_{d+1,j}> sum_i y^(i)2] "
               "(App. A.2), i.e. the squared label",
        formulas={"C_yy": "y**2"}),
)


# ==============================================================================================
# App. A.2: <C, E_{d+1,j}> = sum_i <w*, x^(i)> x^(i)[j]
# ==============================================================================================
_XDN = FormulaSymbol("X", "matrix", ("d", "n"))
_WSTAR = FormulaSymbol("w_star", "matrix", ("d", "1"))
_U1 = FormulaSymbol("u", "matrix", ("d", "1"))
INNER_FORMULAS = (
    NamedFormula("C_E", "u.T*X*X.T*w_star", (_U1, _XDN, _WSTAR, _N, _D),
                 equation="App. A.2 (<C, E_{d+1,j}>)", shape=("1", "1"),
                 description="<C, E_{d+1,j}> = sum_i <w*, x^(i)> x^(i)[j], written "
                             "e_j^T X X^T w* (u = e_j)"),
)


def inner_model(a):
    """<C, E_{d+1,j}> = Tr(C E_{d+1,j}^T) = C[d+1, j] for j = 1..d, C = Z_0 M Z_0^T / n
    (eq. (15)) on the prompt Z_0 = [[X, x_q], [w*^T X, 0]] of eq. (1)."""
    n, d = a.sizes["n"], a.sizes["d"]
    Z = a.blocks([[a["X"], a["x_q"]], [a["w_star"].T @ a["X"], a.zeros(1, 1)]])
    C = Z @ a.mask(n) @ Z.T / n
    return hcat(a, [one(a, C[d:d + 1, j:j + 1]) for j in range(d)])


def inner_claimed(a):
    d = a.sizes["d"]
    return hcat(a, [one(a, a.formula("C_E", u=unit(a, d, j))) for j in range(d)])


INNER_IDENTITY = ForwardIdentity(
    inner_model, inner_claimed,
    inputs={"X": ("d", "n"), "w_star": ("d", "1"), "x_q": ("d", "1")},
    exact_sizes=({"d": 2, "n": 2}, {"d": 2, "n": 3}),
    sizes={"quick": {"d": 3, "n": 6}, "default": {"d": 5, "n": 20}, "paper": {"d": 5, "n": 20}},
    what="<C, E_{d+1,j}>, j = 1..d",
    model_latex=r"\langle C, E_{d+1,j}\rangle,\ C = \tfrac1n Z_0 M Z_0^\top",
    claimed_latex=r"e_j^\top X X^\top w_\star")

EQ17_INNER = Claim(
    id="ahn2023.eq17_inner",
    title="App. A.2: <C, E_{d+1,j}> = sum_i <w*, x^(i)> x^(i)[j]",
    paper=PAPER,
    statement=r"$\langle C,E_{d+1,j}\rangle=\sum_i\langle w_\star,x^{(i)}\rangle x^{(i)}[j]$.",
    assumptions=("C = (1/n) sum_{i<=n} z^(i) z^(i)T (eq. (15)), y^(i) = <w*, x^(i)>",),
    formulas=INNER_FORMULAS,
    checks=forward_identity(INNER_IDENTITY),
    setting=INNER_IDENTITY,
    exact=identity_truth(INNER_IDENTITY, INNER_FORMULAS),
    correction=Correction(
        description="<C, E_{d+1,j}> = (1/n) sum_i <w*, x^(i)> x^(i)[j]",
        reason="C carries the factor 1/n of (15); the display drops it, and (19) puts it back "
               "as the 1/n^2 in front of n(n-1) + (d+2)n",
        formulas={"C_E": "u.T*X*X.T*w_star/n"}),
)


# ==============================================================================================
# Eq. (18) and its App. A.3 generalisation: per-pair fourth moments
# ==============================================================================================
EQ18_FORMULAS = (
    NamedFormula("iso_diff", "1", (), equation="(18), i != i'",
                 description="E[<w*,x^(i)> x^(i)[j] <w*,x^(i')> x^(i')[j]], i != i', Sigma = I"),
    NamedFormula("iso_same", "d + 2", (_D,), equation="(18), i = i'",
                 description="E[<w*,x^(i)>^2 x^(i)[j]^2] = E[||x||^2 x[j]^2], Sigma = I"),
    NamedFormula("iso_cross", "0", (), equation="App. A.2 (before (18)), j != j'",
                 description="E[<w*,x^(i)> x^(i)[j] <w*,x^(i')> x^(i')[j']], j != j', both "
                             "i = i' and i != i', Sigma = I"),
    NamedFormula("lam_diff", "lambda_j**2", (_LJ,), equation="App. A.3 (moments), i != i'",
                 description="the i != i' moment of (18) at Sigma = Lambda"),
    NamedFormula("lam_same", "lambda_j*p_1 + 2*lambda_j**2", (_LJ, _P1),
                 equation="App. A.3 (moments), i = i'",
                 description="the i = i' moment of (18) at Sigma = Lambda (p_1 = sum_k lambda_k)"),
)


@lru_cache(maxsize=None)
def pair_moments():
    """E[(w^T x)(u^T x)(w^T x')(v^T x')] (two samples) and E[(w^T x)^2 (u^T x)(v^T x)] (one),
    x, x' ~ N(0, Sigma) independent, w* ~ N(0, I): by Isserlis, as polynomials in Sigma, u, v."""
    S = matrix("Sigma", symmetric=True)
    x1 = gaussian_vector("x", cov=S)
    x2 = gaussian_vector("x2", cov=S)
    w = gaussian_vector("w")
    u, v = vector("u"), vector("v")
    diff = expectation((w.T @ x1) * (u.T @ x1) * (w.T @ x2) * (v.T @ x2)).simplify()
    same = expectation((w.T @ x1) * (w.T @ x1) * (u.T @ x1) * (v.T @ x1)).simplify()
    return diff, same


def _moment(poly, Sigma, j, k) -> sympy.Expr:
    d = Sigma.shape[0]
    e = lambda i: sympy.Matrix([int(t == i) for t in range(d)])  # noqa: E731
    return sympy.factor(sympy.expand(poly.evaluate({"Sigma": Sigma, "u": e(j), "v": e(k)}, {},
                                                   exact=True)))


def eq18_symbolic(ctx: Context) -> TierResult:
    """The moments at Sigma = I_d (d = 2..5) against (18), and at Sigma = diag(l_1, l_2, l_3)
    (symbolic eigenvalues) against App. A.3's generalisation."""
    F = ctx.formulas
    diff, same = pair_moments()
    findings, rows = [], []

    def compare(name, derived, value, where):
        value = sympy.sympify(value)
        ok = sympy.simplify(derived - value) == 0
        rows.append({"formula": name, **where, "derived": str(derived), "paper": str(value),
                     "agree": ok})
        if not ok and not any(f.name == name for f in findings):
            findings.append(Finding(name, False, {}, {**where, "derived": str(derived),
                                                      "paper": str(value)},
                                    f"{name} differs from the derived moment"))

    for d in (2, 3, 4, 5):
        I = sympy.eye(d)
        for j, k in ((0, 0), (d - 1, d - 1), (0, 1)):
            where = {"Sigma": f"I_{d}", "j": j + 1, "j'": k + 1}
            if j == k:
                compare("iso_diff", _moment(diff, I, j, k), F["iso_diff"], where)
                compare("iso_same", _moment(same, I, j, k),
                        formula_value(F["iso_same"], {"d": d}), where)
            else:
                compare("iso_cross", _moment(diff, I, j, k), F["iso_cross"], where)
                compare("iso_cross", _moment(same, I, j, k), F["iso_cross"], where)
    ls = sympy.symbols("l1:4", positive=True)
    Lam = sympy.diag(*ls)
    for j in range(3):
        where = {"Sigma": "diag(l1, l2, l3)", "j": j + 1}
        vals = {"lambda_j": ls[j], "p_1": sum(ls), "d": 3}
        compare("lam_diff", _moment(diff, Lam, j, j), formula_value(F["lam_diff"], vals), where)
        compare("lam_same", _moment(same, Lam, j, j), formula_value(F["lam_same"], vals), where)
    if not findings:
        findings = [Finding("pair_moments", True, {"rows": len(rows)},
                            summary=f"all {len(rows)} moments agree with (18) and App. A.3 "
                                    f"(Sigma = I_d, d = 2..5; Sigma = diag(l1, l2, l3) symbolic)")]
    steps = [step("Moments", r"\mathbb E[(w^\top x)(u^\top x)(w^\top x')(v^\top x')],\ "
                  r"\mathbb E[(w^\top x)^2(u^\top x)(v^\top x)]",
                  "Isserlis' theorem by the moment kernel, x, x' ~ N(0, Sigma) independent, "
                  "w* ~ N(0, I), then u = e_j, v = e_j'.")]
    return combine(findings, {"rows": rows}, steps=steps)


EQ18 = Claim(
    id="ahn2023.eq18",
    title="Eq. (18) and App. A.3: the per-pair fourth moments",
    paper=PAPER,
    statement=(r"$\mathbf E[\langle w_\star,x^{(i)}\rangle x^{(i)}[j]\langle w_\star,x^{(i')}"
               r"\rangle x^{(i')}[j']]$ is $0$ for $j\neq j'$, and for $j=j'$ equals $1$ "
               r"($i\neq i'$) and $d+2$ ($i=i'$) at $\Sigma=I$ (18); $\lambda_j^2$ and "
               r"$\lambda_j\sum_k\lambda_k+2\lambda_j^2$ at $\Sigma=\Lambda$ (App. A.3)."),
    assumptions=("x^(i) ~ N(0, Lambda) i.i.d. (Lambda = I in (18)), w* ~ N(0, I_d)",),
    formulas=EQ18_FORMULAS,
    checks={"symbolic": eq18_symbolic},
    setting=own_sigma("its moments are exact at Sigma = I_d (d = 2..5) and at a symbolic "
                      "diagonal Lambda"),
)


# ==============================================================================================
# Step 3 of App. A.2 (and end of Step 1 of A.3): "X_j is the unique global minimum of f_j"
# ==============================================================================================
UNIQUE_FORMULAS = (
    NamedFormula("dim_minimisers", "0", (_D,), equation="App. A.2 Step 3, App. A.3 Step 1",
                 description="the dimension of the set of global minimisers of f_j(X) over "
                             "X in R^{(d+1) x (d+1)}: 'unique' says 0"),
)


@lru_cache(maxsize=None)
def c_second_moment():
    """E[(p^T C q)(r^T C s)] with C = Z_0 M Z_0^T / n (eq. (15)), probes p, q, r, s in R^{d+1},
    x ~ N(0, Sigma), w* ~ N(0, I): the Hessian of f_j in X is twice this bilinear form."""
    sp = symbolic_prompt("identity")
    probes = [BlockMat([[vector(f"{c}_x")], [scalar(sympy.Symbol(f"{c}_y"))]]) for c in "pqrs"]
    C = sp.Z @ sp.mask @ sp.Z.T
    pq = (probes[0].T @ C @ probes[1])[0, 0] / n_sym
    rs = (probes[2].T @ C @ probes[3])[0, 0] / n_sym
    return expectation(pq * rs).simplify()


def hessian_fj(Sigma: sympy.Matrix, n) -> sympy.Matrix:
    """2 E[vec(C) vec(C)^T], the Hessian of f_j(X) = E[<C, X> + w*[j]]^2 in vec(X)."""
    d = Sigma.shape[0]
    m = d + 1
    poly = c_second_moment()
    basis = [(a, b) for a in range(m) for b in range(m)]

    def probe(i):
        e = sympy.zeros(m, 1)
        e[i] = 1
        return e[:d, :], e[d, 0]

    H = sympy.zeros(m * m, m * m)
    for I, (a, b) in enumerate(basis):
        for J, (c, e) in enumerate(basis):
            if J < I:
                continue
            env, sc = {"Sigma": Sigma}, {"n": n}
            for name, idx in zip("pqrs", (a, b, c, e)):
                x, y = probe(idx)
                env[f"{name}_x"] = x
                sc[f"{name}_y"] = y
            H[I, J] = H[J, I] = 2 * poly.evaluate(env, sc, exact=True)
    return H


def unique_symbolic(ctx: Context) -> TierResult:
    """The nullity of the Hessian of the convex quadratic f_j is the dimension of its set of
    minimisers (an affine space): computed exactly at d = 1, 2, 3 (Sigma = I and diagonal
    Lambda; n = 1, 2, 3, 7); an antisymmetric direction lies in its null space."""
    F = ctx.formulas
    rows, findings = [], []
    for d, Sigma, n in ((1, sympy.eye(1), 1), (2, sympy.eye(2), 3),
                        (2, sympy.diag(R(1, 2), 3), 7), (3, sympy.diag(1, R(1, 3), 2), 2)):
        if True:
            H = hessian_fj(Sigma, n)
            nullity = H.shape[0] - H.rank()
            m = d + 1
            K = sympy.zeros(m, m)  # an antisymmetric direction: f_j(X_j + t K) = f_j(X_j)
            K[0, m - 1], K[m - 1, 0] = 1, -1
            flat = sympy.Matrix(list(K))
            antisym_null = (H * flat).is_zero_matrix
            stated = sympy.sympify(formula_value(F["dim_minimisers"], {"d": d}))
            row = {"d": d, "n": n, "Sigma": str(Sigma.tolist()), "derived_dimension": nullity,
                   "stated": str(stated), "antisymmetric_direction_in_null_space": antisym_null}
            rows.append(row)
            if stated != nullity and not findings:
                findings.append(Finding(
                    "minimiser_set", False, {}, {**row, "direction": "K = E_{1,d+1} - E_{d+1,1}",
                                                 "f_j(X_j + tK) - f_j(X_j)": "0 for every t"},
                    f"the global minimisers of f_j form an affine space of dimension {nullity} "
                    f"(X_j + antisymmetric K), not {stated}"))
    if not findings:
        findings = [Finding("minimiser_set", True, {"rows": len(rows)},
                            summary="the minimisers of f_j form X_j + {antisymmetric K}, of the "
                                    "stated dimension, at every instance")]
    steps = [step("Second moment of C", r"\mathbb E[(p^\top Cq)(r^\top Cs)]",
                  "Isserlis on C = Z_0 M Z_0^T / n, n symbolic, then probes at unit vectors: "
                  "the Hessian 2 E[vec(C) vec(C)^T] of f_j in vec(X)."),
             step("Minimiser set", r"\dim\{X:\ f_j(X)=\min f_j\} = \dim\ker \nabla^2 f_j",
                  "f_j is a convex quadratic with a minimiser (Lemmas 6, 7), so its minimisers "
                  "are X_j + ker H; <C, K> = 0 for every antisymmetric K since C is symmetric.")]
    return combine(findings, {"rows": rows}, steps=steps)


LEMMA6_UNIQUE = Claim(
    id="ahn2023.lemma6_unique",
    title="App. A.2 Step 3 / A.3 Step 1: X_j is the unique global minimum of f_j",
    paper=PAPER,
    statement=(r"$X_j=-\frac{1}{\frac{n-1}{n}+\frac{d+2}{n}}E_{d+1,j}$ (resp. Lemma 7's "
               r"$X_j$) is the unique global minimum of $f_j(X)=\mathbf E[\langle C,X\rangle+"
               r"w_\star[j]]^2$."),
    assumptions=("x ~ N(0, Lambda) (Lambda = I in App. A.2), w* ~ N(0, I_d)",
                 "X ranges over all (d+1) x (d+1) matrices (Lemma 6's f_j(X))"),
    formulas=UNIQUE_FORMULAS,
    checks={"symbolic": unique_symbolic},
    setting=own_sigma("it is checked at Sigma = I and diagonal Lambda of its own (d = 1, 2, 3)"),
    correction=Correction(
        description="the minimisers of f_j are X_j + K, K antisymmetric: an affine space of "
                    "dimension d(d+1)/2; X_j is unique only up to its antisymmetric part (its "
                    "symmetric part is unique)",
        reason="C is symmetric, so <C, K> = 0 for antisymmetric K and f_j(X_j + K) = f_j(X_j); "
               "the Hessian 2E[vec(C) vec(C)^T] is definite on the symmetric matrices",
        formulas={"dim_minimisers": "d*(d + 1)/2"}),
    notes="A.3's 'From Lemma 6' should cite Lemma 7 (not checkable).  The conclusion that "
          "b a_j^T = X_j for all j gives a global minimum of f(b, A) stands (ahn2023.thm1).",
)


# ==============================================================================================
# App. A.3 Step 1: the diagonal optimum
# ==============================================================================================
_LAM = FormulaSymbol("Lambda", "matrix", ("d", "d"), symmetric=True)
DIAG_FORMULAS = (
    NamedFormula("A_top_diag", "-(Lambda/(n+1) + trace(Lambda)/n*Identity(d))",
                 (_N, _D, _LAM), equation="App. A.3 (diagonal optimum)", shape=("d", "d"),
                 description="the displayed A = -[diag({(1/(n+1)) lambda_j + (1/n) sum_k "
                             "lambda_k}_j)] (the fraction is printed without a denominator)"),
)


def diag_symbolic(ctx: Context) -> TierResult:
    """The displayed A against the derived optimal top block g(Lambda) (b = e_{d+1}) at
    diagonal rational Lambda, d = 2, 3, n symbolic."""
    g, eq = optimal_top_block("identity")
    rows = []
    for eigs in ((R(1, 2), 3), (1, R(1, 3), 2), (1, 1)):
        d = len(eigs)
        Lam = sympy.diag(*eigs)
        derived = top_block_at(g, sympy.eye(d), eigs, n_sym)
        stated = sympy.Matrix(formula_value(ctx.formulas["A_top_diag"],
                                            {"Lambda": Lam, "n": n_sym, "d": d}))
        where = first_difference(stated - derived)
        rows.append({"Lambda": [str(e) for e in eigs], "agree": where is None})
        if where is not None:
            i, j = where
            return combine([Finding("diagonal_optimum", False, {"derived_g": str(g)}, {
                "Lambda": [str(e) for e in eigs], "entry": [i, j],
                "derived_in_n": str(sympy.factor(derived[i, j])),
                "stated_in_n": str(sympy.factor(stated[i, j])),
                "derived_at_n_7": str(derived[i, j].subs(n_sym, 7)),
                "stated_at_n_7": str(stated[i, j].subs(n_sym, 7))},
                f"the displayed A differs from the derived optimum at entry {(i, j)}")])
    return combine([Finding("diagonal_optimum", True, {"derived_g": str(g), "rows": rows},
                            summary="the displayed A = the derived optimal top block at 3 "
                                    "diagonal Lambda, n symbolic")],
                   steps=[step("Stationarity", sympy.latex(eq) + " = 0",
                               "grad_{A_top} of the restricted one-layer loss (b = [0; 1], "
                               "A = [A_top; 0]) by the moment kernel, A_top = g(Lambda)."),
                          step("Solution", r"g(\lambda) = " + sympy.latex(g), "")])


LEMMA7_DIAG = Claim(
    id="ahn2023.lemma7_diag",
    title="App. A.3 Step 1: the optimum for diagonal covariance",
    paper=PAPER,
    statement=(r"For $x\sim\mathcal N(0,\Lambda)$, $w_\star\sim\mathcal N(0,I)$: $b=e_{d+1}$, "
               r"$A=-[\mathrm{diag}(\{\frac{\frac{1}{n+1}\lambda_j+\frac1n(\sum_k\lambda_k)}{}"
               r"\}_j)]$ (as printed)."),
    assumptions=("x ~ N(0, Lambda) diagonal, w* ~ N(0, I_d)", "b = e_{d+1}, A's last row 0"),
    formulas=DIAG_FORMULAS,
    checks={"symbolic": diag_symbolic},
    setting=own_sigma("the display is about diagonal covariance: it is checked at diagonal "
                      "rational Lambda of its own (n symbolic)"),
    correction=Correction(
        description="A = -[diag(1/((n+1)/n lambda_j + (1/n) sum_k lambda_k)); 0], i.e. (8) at "
                    "U = I (the a_j of the line above)",
        reason="the display lost the fraction 1/(...) (its denominator is empty) and the zero "
               "last row; a_j = -1/((n+1)/n lambda_j + sum_k lambda_k / n) e_j two lines above "
               "and the derived optimum agree",
        formulas={"A_top_diag": "-Inverse((n+1)/n*Lambda + trace(Lambda)/n*Identity(d))"}),
)


# ==============================================================================================
# App. A.3 Step 2: the change of coordinates x~ = U^T x
# ==============================================================================================
_U = FormulaSymbol("U", "matrix", ("d", "d"))
_AM = FormulaSymbol("A", "matrix", ("d+1", "d"))
ROTATION_FORMULAS = (
    NamedFormula("x_tilde", "U.T*x", (_U, _XV, _D), equation="App. A.3 Step 2", shape=("d", "1"),
                 description="x~^(i) := U^T x^(i)"),
    NamedFormula("w_tilde", "U.T*w_star", (_U, _WSTAR, _D), equation="App. A.3 Step 2",
                 shape=("d", "1"), description="w~* := U^T w*"),
    NamedFormula("b_tilde", "BlockMatrix([[U.T, ZeroMatrix(d, 1)], [ZeroMatrix(1, d), "
                            "Identity(1)]])*b", (_U, _BV, _D), equation="App. A.3 Step 2",
                 shape=("d+1", "1"), description="b~ with b~^T := b^T [[U, 0], [0, 1]]"),
    NamedFormula("A_tilde", "BlockMatrix([[U.T, ZeroMatrix(d, 1)], [ZeroMatrix(1, d), "
                            "Identity(1)]])*A*U", (_U, _AM, _D), equation="App. A.3 Step 2",
                 shape=("d+1", "d"), description="A~ := [[U^T, 0], [0, 1]] A U"),
    NamedFormula("x_weight_j", "lambda_j", (_LJ,), equation="App. A.3 Step 2",
                 description="f(b, A) = sum_j lambda_j E[((b^T C A + w*^T) U)[j]^2]"),
)


def rotation_symbolic(ctx: Context) -> TierResult:
    """At exactly orthogonal rational U (Cayley), d = 2, 2, 3, n = 2, with x^(i), w* random
    rationals and every entry of b, A a symbol (the laws with symbolic x, w*):
    (i) the new coordinates have the laws the proof needs: Cov(x~) = U^T Sigma U = Lambda,
    Cov(w~) = I, and the labels are unchanged, <x~^(i), w~> = <x^(i), w*>;
    (ii) (b^T C A + w*^T) U = b~^T C~ A~ + w~^T pointwise, C~ built from (x~^(i), y^(i));
    (iii) E_{x_q}[((b^T C A + w*^T) x_q)^2] = v Sigma v^T = sum_j weight_j ((vU)[j])^2."""
    F = ctx.formulas
    rng = ctx.rng("rotation")
    n = 2
    findings = []
    for d in (2, 2, 3):
        U = sympy.Matrix(cayley_orthogonal(d, rng))
        eigs = [R(1, 2), 2, R(3, 2)][:d]
        Lam = sympy.diag(*eigs)
        Sigma = U * Lam * U.T
        # x^(i), w* random rationals (exact), b and A symbols: the expansion stays small
        X = sympy.Matrix(d, n, lambda i, j: R(int(rng.integers(-4, 5)), int(rng.integers(1, 4))))
        w = sympy.Matrix(d, 1, lambda i, j: R(int(rng.integers(-4, 5)), int(rng.integers(1, 4))))
        b = sym_matrix("b", d + 1, 1)
        A = sym_matrix("A", d + 1, d)
        env = {"U": U, "d": d}
        xt = sympy.Matrix.hstack(*[sympy.Matrix(formula_value(F["x_tilde"],
                                                              {**env, "x": X[:, i]}))
                                   for i in range(n)])
        wt = sympy.Matrix(formula_value(F["w_tilde"], {**env, "w_star": w}))
        bt = sympy.Matrix(exact_value(F["b_tilde"], {**env, "b": b}))
        At = sympy.Matrix(exact_value(F["A_tilde"], {**env, "A": A}))
        # (i) laws: the formulas are linear maps; covariances by E[x x^T] = Sigma, E[w w^T] = I
        xs, ws = sym_matrix("s", d, 1), sym_matrix("t", d, 1)
        Fx = sympy.Matrix(formula_value(F["x_tilde"], {**env, "x": xs})).jacobian(list(xs))
        Fw = sympy.Matrix(formula_value(F["w_tilde"], {**env, "w_star": ws})).jacobian(list(ws))
        checks = {
            "law_x_tilde": (Fx * Sigma * Fx.T - Lam).expand(),
            "law_w_tilde": (Fw * Fw.T - sympy.eye(d)).expand(),
            "labels_unchanged": (xt.T * wt - X.T * w).expand(),
        }
        y = X.T * w

        def C_of(Xc):
            Z = sympy.Matrix.vstack(Xc, y.T)
            return Z * Z.T / n
        lhs = (b.T * C_of(X) * A + w.T) * U
        rhs = bt.T * C_of(xt) * At + wt.T
        checks["coordinates"] = (lhs - rhs).expand()
        v = b.T * C_of(X) * A + w.T
        weights = [sympy.sympify(formula_value(F["x_weight_j"], {"lambda_j": lam})) for lam in eigs]
        vU = v * U
        checks["weights"] = sympy.Matrix([sympy.expand((v * Sigma * v.T)[0, 0] - sum(
            wj * vU[0, j] ** 2 for j, wj in enumerate(weights)))])
        for name, diff in checks.items():
            bad = [e for e in diff if e != 0]
            ok = not bad
            if not ok and not any(f.name == name for f in findings):
                findings.append(Finding(name, False, {}, {
                    "d": d, "n": n, "U": str(U.tolist()), "Lambda": [str(e) for e in eigs],
                    "difference": str(sympy.factor(bad[0]))},
                    f"{name}: the identity of App. A.3 Step 2 fails"))
    if not findings:
        findings = [Finding(name, True, {"d": [2, 3], "n": n},
                            summary=f"{name} holds exactly (rational orthogonal U, d = 2, 3)")
                    for name in ("law_x_tilde", "law_w_tilde", "labels_unchanged",
                                 "coordinates", "weights")]
    steps = [step("Change of coordinates", r"(b^\top CA + w_\star^\top)U = \tilde b^\top\tilde C"
                  r"\tilde A + \tilde w_\star^\top",
                  "C from z^(i) = [x^(i); <x^(i), w*>], C~ from [x~^(i); y^(i)]; every entry of "
                  "x^(i), w*, b, A a symbol, U an exactly orthogonal rational matrix.")]
    return combine(findings, steps=steps)


THM1_ROTATION = Claim(
    id="ahn2023.thm1_rotation",
    title="App. A.3 Step 2: reduction of Σ = U Λ Uᵀ to the diagonal case",
    paper=PAPER,
    statement=(r"With $\tilde x^{(i)}=U^\top x^{(i)}\sim\mathcal N(0,\Lambda)$, "
               r"$\tilde w_\star=U^\top w_\star\sim\mathcal N(0,I)$, $\tilde b^\top=b^\top"
               r"\mathrm{diag}(U,1)$, $\tilde A=\mathrm{diag}(U^\top,1)AU$: "
               r"$f(b,A)=\sum_j\lambda_j\mathbf E[((b^\top CA+w_\star^\top)U)[j]^2]$ and "
               r"$(b^\top CA+w_\star^\top)U=\tilde b^\top\tilde C\tilde A+\tilde w_\star^\top$."),
    assumptions=("x ~ N(0, U Lambda U^T), w* ~ N(0, I_d), U orthogonal",),
    formulas=ROTATION_FORMULAS,
    checks={"symbolic": rotation_symbolic},
    setting=own_sigma("it is checked at rational Sigma = U Lambda U^T of its own (U exactly "
                      "orthogonal)"),
    notes="Lines 672 and 682 write <U x^(i), w*> and <x^(i), w~*> where <U x~_i, w*> and "
          "<x~_i, w~*> are meant; the check builds C~ from (x~^(i), y^(i)) and checks the labels "
          "<x~^(i), w~*> = y^(i).",
)


CLAIMS = [EQ15_COMPONENTS, LEMMA6_CONVEX, EQ15_C_BLOCKS, EQ17_INNER, EQ18, LEMMA6_UNIQUE,
          LEMMA7_DIAG, THM1_ROTATION]
