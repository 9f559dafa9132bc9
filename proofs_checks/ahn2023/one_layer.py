"""ahn2023: K. Ahn, X. Cheng, H. Daneshmand, S. Sra, "Transformers learn to implement
preconditioned gradient descent for in-context learning" (2023).

Linear self-attention Z_{l+1} = Z_l + (1/n) P_l Z_l M (Z_l^T Q_l Z_l) (eqs. (3)-(4)) on the prompt
of eq. (1), trained on the in-context loss (5) whose prediction is -[Z_k]_{(d+1),(n+1)}.

Claims here: Theorem 1 (the global optimum of one layer, eq. (8), its rescalings and the
isotropic special case); Lemma 2 is in ``gd_layers``.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import sympy
import torch

from models.device import runtime, randn
from models.lsa import LSAConfig, LinearTransformer, lsa_forward, readout
from models.sampler import sample_prompts
from models.exact import ExactLoss
from models.progress import Progress
from models.trainers import optimise, optimise_batched
from moments.blocks import BlockMat
from moments.montecarlo import Estimate, streaming_estimate, z_critical
from moments.poly import Poly
from moments.spectral import LAMBDA, depends_on_traces_of, power_sum, spectral_value
from moments.tensor import matrix, scalar, vector, zeros
from moments.wick import canonical, expectation
from verify.claim import Claim, Context, TierResult
from verify.evidence import Finding, combine, settle_le, step
from verify.formulas import FormulaSymbol, NamedFormula, formula_value

from ..kit.rounding import EPS64, magnitude, rounding_factor
from ..kit.linear_icl import LinearICLSetting, make_instance, prompt_law, symbolic_prompt

PAPER = "ahn2023"
n_sym = sympy.Symbol("n", positive=True, integer=True)
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

_P_LETTERS = dict(P_xx=("d", "d"), p_xy=("d", "1"), p_yx=("d", "1"))
_Q_LETTERS = dict(Q_xx=("d", "d"), q_xy=("d", "1"), q_yx=("d", "1"))
P_YY, Q_YY = sympy.symbols("p_yy q_yy")
PROBE_PY, PROBE_QY = sympy.symbols("p_y q_y")


def _layer_weights(restricted: bool = False) -> tuple[BlockMat, BlockMat]:
    """Symbolic (P, Q) in blocks; ``restricted`` fixes b = [0; beta] and A's last row to 0."""
    if restricted:
        P = BlockMat([[matrix("P_xx"), vector("p_xy")], [zeros("1", "d"), scalar(P_YY)]])
        Q = BlockMat([[matrix("Q_xx"), vector("q_xy")], [zeros("1", "d"), scalar(Q_YY)]])
    else:
        P = BlockMat([[matrix("P_xx"), vector("p_xy")], [vector("p_yx").T, scalar(P_YY)]])
        Q = BlockMat([[matrix("Q_xx"), vector("q_xy")], [vector("q_yx").T, scalar(Q_YY)]])
    return P, Q


@dataclass(frozen=True)
class OneLayer:
    """The derived one-layer objects: the loss (5)/(6) and the lifted gradient."""

    loss: Poly
    lifted_gradient: Poly
    restricted_loss: Poly


@lru_cache(maxsize=None)
def one_layer() -> OneLayer:
    """Derive f(P, Q) = E[([Z_1]_{(d+1),(n+1)} + w*^T x_q)^2] from the forward pass (eqs. 3-6).

    The lifted gradient is 2 E[e (p^T C q)(r^T x_q)] with C = Z_0 M Z_0^T / n and probes p, q in
    R^{d+1}, r in R^d: the gradient of the loss as a (convex quadratic) function of T = b (x) A.
    """
    sp = symbolic_prompt("identity")
    P, Q = _layer_weights()
    err = readout(lsa_forward(sp.Z, [(P, Q)], sp.mask, n_sym)) + sp.target
    loss = expectation(err * err).simplify()
    p = BlockMat([[vector("p_x")], [scalar(PROBE_PY)]])
    q = BlockMat([[vector("q_x")], [scalar(PROBE_QY)]])
    C_pq = (p.T @ sp.Z @ sp.mask @ sp.Z.T @ q)[0, 0] / n_sym
    grad = expectation(err * C_pq * (vector("r").T @ sp.xq)).scale(2).simplify()
    P1, Q1 = _layer_weights(restricted=True)
    err1 = readout(lsa_forward(sp.Z, [(P1, Q1)], sp.mask, n_sym)) + sp.target
    restricted = expectation(err1 * err1).simplify()
    return OneLayer(loss, grad, restricted)


def reduction_identity() -> Poly:
    """[Z_1]_{(d+1),(n+1)} - b^T C A x_q as a polynomial; zero iff the reduction of App. A.1 holds."""
    sp = symbolic_prompt("identity")
    P, Q = _layer_weights()
    pred = readout(lsa_forward(sp.Z, [(P, Q)], sp.mask, n_sym))
    b = BlockMat([[vector("p_yx")], [scalar(P_YY)]])
    A = BlockMat([[matrix("Q_xx")], [vector("q_yx").T]])
    xq = BlockMat([[sp.xq]])
    lifted = (b.T @ sp.Z @ sp.mask @ sp.Z.T @ A @ xq)[0, 0] / n_sym
    return canonical(pred - lifted).simplify()


def derived_top_block() -> tuple[sympy.Expr | None, sympy.Expr]:
    """Solve the stationarity equation in A_top with b = [0; beta], A's last row 0, A_top = g(Sigma).

    Returns (g(lambda) or None, the equation).  g depends on lambda, n, beta and p1 = tr Sigma.
    """
    L = one_layer().restricted_loss
    g = sympy.Symbol("g")
    eq = sympy.factor(spectral_value(L.diff("Q_xx"), {"Sigma": LAMBDA, "Q_xx": g}))
    if depends_on_traces_of(eq, g):
        return None, eq
    sols = sympy.solve(eq, g)
    return (sympy.simplify(sols[0]) if len(sols) == 1 else None), eq


N_SHOWN = 7  # the symbolic tier keeps n symbolic; a counterexample shows its values at n = 7


def _exact_instances(ctx: Context) -> list:
    """Exact rational (U, Lambda) instances for the symbolic tier, d = 2 and 3 (n stays
    symbolic; the instance carries N_SHOWN, the n at which a counterexample prints values)."""
    rng = ctx.rng("symbolic-instances")
    insts = []
    spec = ctx.sigma
    if spec is not None and spec.kind in ("identity", "diag", "rotated"):
        insts.append(make_instance(N_SHOWN, 3, spec, rng))
    for d in (2, 3):
        insts.append(make_instance(N_SHOWN, d, None, rng))
    return insts


def _named_point(formulas, inst, n_value) -> dict:
    """The paper's (b, A) at an instance, exactly, as letter values (n may be symbolic)."""
    values = {"U": inst.U_exact, "Lambda": sympy.diag(*inst.eigs_exact), "n": n_value, "d": inst.d}
    out = {
        "Q_xx": sympy.Matrix(formula_value(formulas["A_top"], values)),
        "q_yx": _as_matrix(formula_value(formulas["A_bottom"], values), inst.d, 1, transpose=True),
        "p_yx": _as_matrix(formula_value(formulas["b_x"], values), inst.d, 1),
        "p_yy": sympy.sympify(formula_value(formulas["b_y"], values)),
    }
    return out


def _as_matrix(value, rows: int, cols: int, transpose: bool = False):
    if isinstance(value, sympy.MatrixBase):
        m = sympy.Matrix(value)
        return m.T if transpose else m
    if value == 0:
        return sympy.zeros(rows, cols)
    raise ValueError(f"expected a matrix, got {value}")


def _is_zero_matrix(m: sympy.Matrix) -> tuple[bool, tuple | None]:
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            if sympy.cancel(sympy.together(m[i, j])) != 0:
                return False, (i, j)
    return True, None


def _at_n(expr, n_value: int = 7):
    return sympy.nsimplify(sympy.sympify(expr).subs(n_sym, n_value))


def thm1_symbolic(ctx: Context) -> TierResult:
    parts = one_layer()
    F = ctx.formulas
    findings = []

    # (a) App. A.1: the loss depends on P only through its last row b and on Q through its first
    # d columns A, and the prediction is b^T C A x_q (so the loss is convex in T = b (x) A).
    red = reduction_identity()
    letters = parts.loss.letter_names()
    params = {s.name for s in parts.loss.coefficient_symbols()} - {"n"}
    ok = red.is_zero() and letters <= {"Sigma", "p_yx", "Q_xx", "q_yx"} and params <= {"p_yy"}
    findings.append(Finding(
        "reduction_A1", ok,
        {"derived_loss": str(parts.loss), "derived_loss_latex": parts.loss.latex(),
         "letters_in_loss": sorted(letters), "scalars_in_loss": sorted(params),
         "prediction_minus_bCAx": str(red)},
        reason="" if ok else "the loss depends on more than the last row of P and the first d "
                             "columns of Q"))

    # (b) derive the optimum of the top block under the ansatz and compare with eq. (8)
    g, eq = derived_top_block()
    insts = _exact_instances(ctx)
    if g is None:
        findings.append(Finding("derived_optimum", None, {"equation": str(eq)},
                                reason="the stationarity equation is not pointwise in lambda"))
    else:
        findings.append(_compare_top_block(F, g, eq, insts))

    # (c) global optimality: the lifted gradient vanishes at the paper's point (convexity in T)
    findings.append(_lifted_gradient_exact(F, insts, parts.lifted_gradient))

    # (d) rescaling b <- gamma b, A <- A_scale A leaves the loss unchanged
    gamma = sympy.Symbol("gamma")
    a_scale = F["A_scale"]
    scaled = parts.loss.scale_letters({"p_yx": gamma, "Q_xx": a_scale, "q_yx": a_scale})
    scaled = scaled.subs({P_YY: gamma * P_YY})
    diff = (scaled - parts.loss).simplify()
    ok = diff.is_zero()
    ce = None
    if not ok:
        key, coeff = next(iter(diff.terms.items()))
        ce = {"gamma": 2, "monomial": diff.monomial_str(key),
              "coefficient_change": str(sympy.factor(coeff)),
              "at_gamma_2": str(sympy.factor(coeff.subs(gamma, 2)))}
    findings.append(Finding("rescaling", ok, {"A_scale": ctx.formula_texts["A_scale"],
                                              "loss_change": str(diff)}, ce,
                            "" if ok else "f(gamma b, A_scale A) != f(b, A)"))

    # (e) isotropic special case: derived g at lambda = 1, tr Sigma = d vs A_iso
    if g is not None:
        g_iso = sympy.simplify(g.subs({LAMBDA: 1, power_sum(1): d_sym, P_YY: 1}))
        delta = sympy.simplify(g_iso - F["A_iso"])
        ok = delta == 0
        ce = None if ok else {"n": 7, "d": 3, "derived": str(_at_n(g_iso.subs(d_sym, 3))),
                              "paper": str(_at_n(F["A_iso"].subs(d_sym, 3)))}
        findings.append(Finding("isotropic_case", ok,
                                {"derived": str(g_iso), "paper": ctx.formula_texts["A_iso"]}, ce,
                                "" if ok else "the isotropic formula differs from the derived one"))
    return combine(findings, {"method": "moment kernel on the symbolic forward pass; exact "
                                        "rational Sigma instances with n symbolic"},
                   steps=_thm1_steps(parts, red, g, eq, F))


def _thm1_steps(parts: OneLayer, red: Poly, g, eq, F) -> list:
    sp = symbolic_prompt("identity")
    P, Q = _layer_weights()
    pred = canonical(readout(lsa_forward(sp.Z, [(P, Q)], sp.mask, n_sym))).simplify()
    S = matrix("Sigma", symmetric=True)
    from moments.tensor import gaussian_matrix

    Xs = gaussian_matrix("X", "d", "n", row_cov=S)
    wmw = expectation(Xs @ Xs.T @ matrix("M") @ Xs @ Xs.T).simplify()
    steps = [
        step("Forward pass", r"[Z_1]_{d+1,n+1} = " + pred.latex(),
             "One layer Z_1 = Z_0 + (1/n) P Z_0 M (Z_0^T Q Z_0) (eqs. (3)-(4)) run on the symbolic "
             "prompt Z_0 = [[X, x_q], [w^T X, 0]] with full P = [[P_xx, p_xy], [p_yx^T, p_yy]] and "
             "Q likewise; the entry is a polynomial in the random letters X, w, x_q."),
        step("Reduction (App. A.1)", r"[Z_1]_{d+1,n+1} - b^\top C A x_q = " + (red.latex() or "0"),
             "The prediction equals b^T C A x_q with b the last row of P, A the first d columns of "
             "Q and C = Z_0 M Z_0^T / n, so f depends only on (b, A) and is a convex quadratic in "
             "T = b (x) A."),
        step("Moments", r"\mathbb E[X_{ai}X_{bj}] = \Sigma_{ab}\delta_{ij},\quad "
             r"\mathbb E[w w^\top] = I,\quad \mathbb E[x_q x_q^\top] = \Sigma;\qquad "
             r"\mathbb E[W M W] = " + wmw.latex(),
             "Isserlis' theorem over the pairings of each random letter; sample indices that are "
             "paired collapse, and each free sample loop gives a factor n (W = X X^T)."),
        step("Population loss", r"f(b, A) = " + parts.loss.latex(),
             "E[([Z_1]_{d+1,n+1} + w^T x_q)^2] (eq. (6)), with b = [p_yx; p_yy] and "
             "A = [Q_xx; q_yx^T]."),
        step("Restricted loss", r"f\big([0;\beta], [A_{\mathrm{top}}; 0]\big) = "
             + parts.restricted_loss.latex(), "b = [0; beta] (beta = p_yy), last row of A = 0."),
        step("Stationarity", sympy.latex(eq) + " = 0",
             "grad_{A_top} f = 0 with the ansatz A_top = g(Sigma): every word is a function of "
             "Sigma, so the matrix equation is a scalar equation in an eigenvalue lambda "
             "(p_1 = tr Sigma)."),
    ]
    if g is not None:
        steps.append(step("Solution", r"g(\lambda) = " + sympy.latex(g),
                          "A_top = U diag(g(lambda_i)) U^T; with beta = 1 this is eq. (8)."))
    steps.append(step("Comparison with eq. (8)", r"A_{\mathrm{top}} = " + sympy.latex(F["A_top"]),
                      "Checked exactly (n symbolic) on rational instances Sigma = U Lambda U^T "
                      "with U from a Cayley transform; then the lifted gradient "
                      "2 E[e (p^T C q)(r^T x_q)] is evaluated at the paper's point."))
    return steps


def _compare_top_block(F, g, eq, insts) -> Finding:
    evidence = {"stationarity_equation": f"{eq} = 0", "derived_g(lambda)": str(g),
                "derived_A_top": f"U diag(g(lambda_i)) U^T with g(lambda) = {g} (p1 = tr Sigma, "
                                 f"p_yy = b_y)", "instances": []}
    for inst in insts:
        named = _named_point(F, inst, n_sym)
        if named["p_yx"] != sympy.zeros(inst.d, 1) or named["q_yx"] != sympy.zeros(inst.d, 1):
            return Finding("derived_optimum", None, evidence,
                           reason="b_x or A_bottom is not zero, so the ansatz does not apply")
        p1 = sum(inst.eigs_exact)
        gl = [g.subs({LAMBDA: lam, power_sum(1): p1, P_YY: named["p_yy"]}) for lam in inst.eigs_exact]
        derived = inst.U_exact * sympy.diag(*gl) * inst.U_exact.T
        diff = sympy.Matrix(named["Q_xx"]) - derived
        ok, where = _is_zero_matrix(diff)
        evidence["instances"].append({"d": inst.d, "Sigma": inst.as_dict()["Sigma"], "agree": ok})
        if not ok:
            i, j = where
            return Finding("derived_optimum", False, evidence, {
                "instance": inst.as_dict(), "entry": [i, j],
                "paper_A_top": str(_at_n(named["Q_xx"][i, j])),
                "derived_A_top": str(_at_n(derived[i, j])),
                "difference_in_n": str(sympy.factor(diff[i, j]))},
                reason=f"eq. (8) differs from the derived optimum at entry {(i, j)}")
    return Finding("derived_optimum", True, evidence)


def _lifted_gradient_exact(F, insts, G: Poly) -> Finding:
    evidence = {"statement": "f(b, A) = F(b (x) A) with F a convex quadratic, so grad F = 0 at "
                             "T = b (x) A proves a global minimum",
                "lifted_gradient": str(G), "instances": []}
    for inst in insts:
        d = inst.d
        named = _named_point(F, inst, n_sym)
        px = sympy.Matrix(sympy.symbols(f"px0:{d}"))
        qx = sympy.Matrix(sympy.symbols(f"qx0:{d}"))
        r = sympy.Matrix(sympy.symbols(f"r0:{d}"))
        env = {"Sigma": inst.sigma_exact, "p_yx": named["p_yx"], "Q_xx": named["Q_xx"],
               "q_yx": named["q_yx"], "p_x": px, "q_x": qx, "r": r}
        val = G.evaluate(env, {"n": n_sym, "p_yy": named["p_yy"], "p_y": PROBE_PY, "q_y": PROBE_QY},
                         exact=True)
        val = sympy.cancel(sympy.together(sympy.expand(val)))
        ok = val == 0
        evidence["instances"].append({"d": d, "Sigma": inst.as_dict()["Sigma"], "zero": ok})
        if not ok:
            num, den = sympy.fraction(val)
            probe_syms = sorted(set(px) | set(qx) | set(r) | {PROBE_PY, PROBE_QY}, key=str)
            monom, coeff = sympy.Poly(sympy.expand(num), *probe_syms).terms()[0]
            entry = {str(s): e for s, e in zip(probe_syms, monom) if e}
            component = sympy.factor(sympy.cancel(coeff / den))
            return Finding("global_optimality", False, evidence, {
                "instance": inst.as_dict(), "gradient_component_in_probes": entry,
                "component_in_n": str(component), "component_at_n_7": str(_at_n(component))},
                reason="the gradient of the loss in T = b (x) A is not zero at the paper's point")
    return Finding("global_optimality", True, evidence)


# ---------------------------------------------------------------------------------- numeric
def _float_point(F, inst) -> tuple[np.ndarray, np.ndarray]:
    """The paper's (b, A) at an instance in float64: b in R^{d+1}, A in R^{(d+1) x d}."""
    named = _named_point(F, inst, inst.n)
    d = inst.d
    A = np.zeros((d + 1, d))
    A[:d] = np.array(named["Q_xx"].evalf(), dtype=float)
    A[d] = np.array(named["q_yx"].evalf(), dtype=float).ravel()
    b = np.zeros(d + 1)
    b[:d] = np.array(named["p_yx"].evalf(), dtype=float).ravel()
    b[d] = float(named["p_yy"])
    return b, A


def _letters_from_bA(b, A, d: int) -> tuple[dict, dict]:
    env = {"Q_xx": A[:d], "q_yx": A[d:].T, "p_yx": b[:d].reshape(-1, 1)}
    return env, {"p_yy": b[d]}


@lru_cache(maxsize=None)
def _magnitude(which: str) -> Poly:
    """The derived polynomial with |coefficients| (``kit.rounding.magnitude``): at |inputs| it
    bounds the float64 rounding error of an evaluation, K eps p~(|x|)."""
    return magnitude(getattr(one_layer(), which))


def loss_at(b, A, inst, magnitude: bool = False) -> float:
    """The derived population loss f(b, A) at a float instance (``magnitude``: f~ at |b|, |A|,
    |Sigma|, the scale of its float64 rounding error)."""
    if magnitude:
        b, A = np.abs(b), np.abs(A)
    env, scal = _letters_from_bA(b, A, inst.d)
    env["Sigma"] = np.abs(inst.sigma) if magnitude else inst.sigma
    poly = _magnitude("loss") if magnitude else one_layer().loss
    return float(poly.evaluate(env, {"n": inst.n, **scal}))


def _finite(*values) -> bool:
    return all(np.all(np.isfinite(np.asarray(v, dtype=float))) for v in values)


_OVERFLOW = ("float64 cannot hold these numbers (the moments of this Sigma overflow or "
             "underflow); the symbolic tier decides exactly")


def _full_weights(b, A, rng, filler: float = 0.3) -> tuple[np.ndarray, np.ndarray]:
    """(P, Q) with last row of P = b, first d columns of Q = A, random elsewhere (irrelevant)."""
    d = A.shape[1]
    P = filler * rng.standard_normal((d + 1, d + 1))
    Q = filler * rng.standard_normal((d + 1, d + 1))
    P[d, :] = b
    Q[:, :d] = A
    return P, Q


def _mc_forward(P, Q, inst, samples: int, seed: int, extra=None):
    """Monte Carlo of the real forward pass: squared error (and optional features) per prompt."""
    law = prompt_law(inst, "identity")
    gen = torch.Generator().manual_seed(seed)
    Pt, Qt = torch.tensor(P), torch.tensor(Q)
    mask = torch.zeros(inst.n + 1, inst.n + 1, dtype=torch.float64)
    mask[:inst.n, :inst.n] = torch.eye(inst.n, dtype=torch.float64)

    def draw(k):
        pr = sample_prompts(law, k, gen)
        Z = pr.Z()
        err = readout(lsa_forward(Z, [(Pt, Qt)], mask, inst.n)) + pr.yq
        cols = [err ** 2]
        if extra is not None:
            cols.append(extra(pr, Z, err))
        return torch.cat([c.reshape(k, -1) for c in cols], dim=1).numpy()

    return streaming_estimate(draw, samples, chunk=20_000)


def _lifted_gradient_float(F, inst, b, A, magnitude: bool | str = False) -> np.ndarray:
    """G_{klj} = 2 E[e C_kl x_qj] from the derived polynomial, in float64 (``magnitude``: G~ at
    |b|, |A|, |Sigma|, the scale of its rounding error; ``"pattern"``: G~ with every non-zero
    entry of b, A, Sigma set to 1, zero exactly where a component has no term)."""
    G = _magnitude("lifted_gradient") if magnitude else one_layer().lifted_gradient
    d = inst.d
    sigma = inst.sigma
    if magnitude == "pattern":
        b, A, sigma = (np.asarray(x) != 0 for x in (b, A, sigma))
        b, A, sigma = b.astype(float), A.astype(float), sigma.astype(float)
    elif magnitude:
        b, A, sigma = np.abs(b), np.abs(A), np.abs(sigma)
    env, scal = _letters_from_bA(b, A, d)
    env["Sigma"] = sigma
    out = np.zeros((d + 1, d + 1, d))
    eye = np.eye(d)
    for k in range(d + 1):
        for l in range(d + 1):
            for j in range(d):
                px = eye[:, [k]] if k < d else np.zeros((d, 1))
                qx = eye[:, [l]] if l < d else np.zeros((d, 1))
                e = {**env, "p_x": px, "q_x": qx, "r": eye[:, [j]]}
                s = {**scal, "n": inst.n, "p_y": float(k == d), "q_y": float(l == d)}
                out[k, l, j] = G.evaluate(e, s)
    return out


def thm1_numeric(ctx: Context) -> TierResult:
    F = ctx.formulas
    inst = THM1_SETTING.instance(ctx.budget.name, ctx.sizes, ctx.sigma, ctx.rng("instance"))
    b, A = _float_point(F, inst)
    rng = ctx.rng("numeric-point")
    d, n = inst.d, inst.n
    b_rand, A_rand = rng.standard_normal(d + 1) * 0.5, rng.standard_normal((d + 1, d)) * 0.5
    findings = []
    f_star = loss_at(b, A, inst)

    # (a) derived loss vs Monte Carlo of the real forward pass, at the paper's point and at a
    # random point (Bonferroni over the two comparisons)
    level = 0.999
    rows = []
    ok = True
    k_loss = rounding_factor(one_layer().loss, d)
    for label, (bb, AA) in (("paper_point", (b, A)), ("random_point", (b_rand, A_rand))):
        P, Q = _full_weights(bb, AA, rng)
        mean, se = _mc_forward(P, Q, inst, ctx.budget.mc_samples, ctx.seed_for("mc", label))
        est = Estimate(float(mean[0]), float(se[0]), ctx.budget.mc_samples)
        exact = loss_at(bb, AA, inst)
        # the interval is widened by the float64 rounding of the exact value (scale-aware:
        # it grows with Sigma's spread, where the loss is a difference of large terms)
        rounding = k_loss * EPS64 * loss_at(bb, AA, inst, magnitude=True)
        if not _finite(est.mean, est.se, exact, rounding):
            ok = None
        elif ok is not None:
            ok &= abs(est.mean - exact) <= z_critical(level, 2) * est.se + rounding
        rows.append({"point": label, "exact": exact, "z": est.z_score(exact),
                     "float64_rounding_of_exact": rounding, **est.as_dict(level, 2)})
    reason = {None: _OVERFLOW, True: "",
              False: "the derived loss is outside the Monte Carlo interval"}[ok]
    findings.append(Finding("derived_loss_vs_monte_carlo", ok, {"comparisons": rows},
                            None if ok is not False else {"instance": inst.as_dict(),
                                                          "rows": rows, "seed": ctx.seed},
                            reason))

    # (b) lifted gradient at the paper's point, from the derived polynomial in float64: each
    # component must vanish up to its own rounding error K eps G~ (G~: the same polynomial with
    # |coefficients| at |b|, |A|, |Sigma|), so the test is as strict in Sigma's small-eigenvalue
    # directions as in its large ones and needs no fixed epsilon
    sym = lambda T: (T + T.transpose(1, 0, 2)) / 2  # noqa: E731 - C is symmetric: only sym(T)
    G = sym(_lifted_gradient_float(F, inst, b, A))  # is identifiable
    G_mag = sym(_lifted_gradient_float(F, inst, b, A, magnitude=True))
    # components with no term at all (zero entries of b, A, Sigma): 0 <= 0 is exact there; every
    # other allowance below float64's resolution means the terms underflowed and decides nothing
    structural = sym(_lifted_gradient_float(F, inst, b, A, magnitude="pattern")) == 0
    k_grad = rounding_factor(one_layer().lifted_gradient, d)
    bound = k_grad * EPS64 * G_mag
    ok, why = settle_le(np.abs(G), bound, exact=structural)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(bound > 0, np.abs(G) / np.where(bound > 0, bound, 1.0),
                         np.where(G == 0, 0.0, np.inf))
    finite_ratio = np.where(np.isfinite(ratio), ratio, -np.inf) if _finite(G, bound) else ratio
    worst = float(np.nanmax(finite_ratio)) if np.size(ratio) else 0.0
    idx = np.unravel_index(int(np.nanargmax(finite_ratio)), G.shape)
    findings.append(Finding(
        "lifted_gradient_float64", ok,
        {"max_|G|/(K_eps_G~)": worst, "factor_K": k_grad, "eps": EPS64,
         "max_|G|": float(np.abs(G).max()),
         "why_tolerance": "float64 evaluation of a polynomial of T terms, each a product "
                          "of (d+1)-term inner products, errs by at most K eps G~ with "
                          "K = T + letters (d+1) + 2 (Higham, Sec. 3.1); a zero gradient "
                          "gives |G| <= K eps G~ in every component"},
        None if ok is not False else {"instance": inst.as_dict(),
                                      "component": [int(i) for i in idx],
                                      "value": float(G[idx]), "rounding_bound": float(bound[idx]),
                                      "ratio": worst},
        {None: f"{why} ({_OVERFLOW})", True: "",
         False: "the gradient in T = b (x) A is not zero at the paper's point"}[ok]))

    # (c) the same gradient estimated by Monte Carlo of the real forward pass, z-tested entrywise
    Pp, Qp = _full_weights(b, A, rng)

    def feats(pr, Z, err):
        Zd = Z[..., :-1]
        C = Zd @ Zd.mT / n
        return 2 * err[:, None, None, None] * C[..., None] * pr.xq[:, None, None, :]

    mean, se = _mc_forward(Pp, Qp, inst, ctx.budget.mc_samples, ctx.seed_for("mc-grad"), feats)
    gm = mean[1:].reshape(d + 1, d + 1, d)
    gs = se[1:].reshape(d + 1, d + 1, d)
    z = np.where(gs > 0, gm / np.where(gs > 0, gs, 1), 0.0)
    m = z.size
    zc = z_critical(level, m)
    zmax = float(np.abs(z).max())
    ok = zmax <= zc if _finite(gm, gs) else None
    findings.append(Finding(
        "lifted_gradient_monte_carlo", ok,
        {"max_abs_z": zmax, "z_critical": zc, "components": m, "samples": ctx.budget.mc_samples,
         "level": level},
        None if ok is not False else {"instance": inst.as_dict(), "seed": ctx.seed,
                                      "max_abs_z": zmax},
        {None: _OVERFLOW, True: "",
         False: "Monte Carlo finds a non-zero gradient at the paper's point"}[ok]))
    return combine(findings, {"instance": inst.as_dict(), "optimal_loss": f_star,
                              "seed": ctx.seed})


# ---------------------------------------------------------------------------------- train
def _lifted(b: np.ndarray, A: np.ndarray) -> np.ndarray:
    T = np.einsum("k,lj->klj", b, A)
    return (T + T.transpose(1, 0, 2)) / 2


@lru_cache(maxsize=None)
def _compiled_loss():
    return one_layer().loss.compile()


def _batched_exact_loss(P: torch.Tensor, Q: torch.Tensor, inst) -> ExactLoss:
    """The derived population loss of B weight pairs (P, Q) of shape (B, d+1, d+1)."""
    d = inst.d
    sigma = torch.tensor(inst.sigma, dtype=P.dtype, device=P.device)

    def bind():
        env = {"Sigma": sigma, "Q_xx": Q[:, :d, :d], "q_yx": Q[:, d:, :d].mT,
               "p_yx": P[:, d:, :d].mT}
        return env, {"n": inst.n, "p_yy": P[:, d, d]}

    return ExactLoss(_compiled_loss(), bind)


def _bA_of(model: LinearTransformer, d: int) -> tuple[np.ndarray, np.ndarray]:
    P = model.P[0].detach().cpu().double().numpy()
    Q = model.Q[0].detach().cpu().double().numpy()
    return P[d, :], Q[:, :d]


def _hessian_spectrum(b: np.ndarray, A: np.ndarray, inst) -> dict:
    """Eigenvalues of the Hessian of f in (b, A): tells a local minimum from a saddle."""
    from torch.func import hessian

    d = inst.d
    poly = one_layer().loss
    sigma = torch.tensor(inst.sigma)

    def f(vec):
        bb, AA = vec[:d + 1], vec[d + 1:].reshape(d + 1, d)
        env = {"Sigma": sigma, "Q_xx": AA[:d], "q_yx": AA[d:].T, "p_yx": bb[:d].reshape(-1, 1)}
        return poly.evaluate(env, {"n": inst.n, "p_yy": bb[d]})

    vec = torch.tensor(np.concatenate([b, A.ravel()])).requires_grad_()
    grad = torch.autograd.grad(f(vec), vec)[0]
    eig = torch.linalg.eigvalsh(hessian(f)(vec.detach())).numpy()
    top = float(np.abs(eig).max())
    # the point is stationary only up to the optimiser's tolerance: eigenvalues above
    # -1e-5 * |largest| count as zero
    kind = "local minimum" if eig.min() >= -1e-5 * top else "saddle point"
    return {"kind": kind, "min_eigenvalue": float(eig.min()), "max_eigenvalue": float(eig.max()),
            "gradient_norm": float(grad.norm()),
            "note": "one zero eigenvalue is the rescaling b -> gamma b, A -> A / gamma; "
                    "eigenvalues above -1e-5 * max count as zero"}


INIT_SCALE = 0.01  # small Gaussian init: reaches the global optimum far more often than O(1)


def _lbfgs_steps(ctx: Context) -> int:
    return {"quick": 200, "default": 400}.get(ctx.budget.name, 1000)


def _sampled_budget(ctx: Context) -> tuple[int, int]:
    """(Adam steps, batch) of the sampled-prompt runs (evidence beside the exact-loss runs)."""
    return {"quick": (150, 1024), "default": (300, 2048)}.get(ctx.budget.name, (2000, 8192))


def thm1_train(ctx: Context) -> TierResult:
    F = ctx.formulas
    inst = THM1_SETTING.instance(ctx.budget.name, ctx.sizes, ctx.sigma, ctx.rng("instance"))
    rt = runtime(ctx.device)
    d = inst.d
    b_star, A_star = _float_point(F, inst)
    f_star = loss_at(b_star, A_star, inst)
    if not _finite(f_star, b_star, A_star):
        return combine([Finding("exact_loss_training", None, {"paper_loss": f_star},
                                reason=_OVERFLOW)], {"instance": inst.as_dict()})
    T_star = _lifted(b_star, A_star)
    # the float64 rounding of f (relative to f*) is a floor under the loss threshold: with an
    # ill-conditioned Sigma, f is a difference of much larger terms
    rounding = 4 * rounding_factor(one_layer().loss, d) * EPS64 * loss_at(
        b_star, A_star, inst, magnitude=True) / f_star
    loss_tol = max(rt.tolerance(1e-7, 1e3), rounding)
    weight_tol = 1e-3
    runs, other_points = [], []
    below = None
    # all restarts at once (one problem per seed) from small Gaussian initialisations: f(b, A) is
    # not convex and has spurious local minima (reported below, with their Hessian spectrum)
    B = ctx.budget.restarts
    gen = rt.generator(ctx.seed_for("train-init"))
    P = (INIT_SCALE * randn(B, d + 1, d + 1, generator=gen, dtype=rt.dtype,
                                  device=rt.device)).requires_grad_()
    Q = (INIT_SCALE * randn(B, d + 1, d + 1, generator=gen, dtype=rt.dtype,
                                  device=rt.device)).requires_grad_()
    steps = _lbfgs_steps(ctx)
    distances: list[list[float]] = [[] for _ in range(B)]
    with Progress(steps, "ahn2023.thm1 exact-loss L-BFGS", ctx.progress) as bar:
        show = bar.callback()

        def track(step, losses):
            Pd, Qd = P.detach().cpu().double().numpy(), Q.detach().cpu().double().numpy()
            for r in range(B):
                T = _lifted(Pd[r, d, :], Qd[r, :, :d])
                distances[r].append(float(np.linalg.norm(T - T_star) / np.linalg.norm(T_star)))
            show(step, losses)

        results = optimise_batched(_batched_exact_loss(P, Q, inst), [P, Q], method="lbfgs",
                                   steps=steps, progress=track)
    Pn, Qn = P.detach().cpu().double().numpy(), Q.detach().cpu().double().numpy()
    for restart, res in enumerate(results):
        b, A = Pn[restart, d, :], Qn[restart, :, :d]
        f = loss_at(b, A, inst)
        gap = (f - f_star) / f_star
        dist = float(np.linalg.norm(_lifted(b, A) - T_star) / np.linalg.norm(T_star))
        stride = max(1, len(distances[restart]) // 50)
        run = {"restart": restart, "trained_loss": f, "relative_loss_gap": gap,
               "lifted_distance": dist, **res.summary(curve_points=50),
               "distance_curve": distances[restart][::stride]}
        runs.append(run)
        if res.status != "converged":
            continue
        if gap < -loss_tol and below is None:
            below = {"trained_b": b.tolist(), "trained_A": A.tolist(), "trained_loss": f,
                     "paper_loss": f_star, **run}
        elif gap > loss_tol and not any(abs(p["loss"] - f) <= 1e-6 * f for p in other_points):
            other_points.append({"loss": f, "loss_ratio_to_optimum": f / f_star,
                                 "b": np.round(b, 6).tolist(), "A_last_row": np.round(A[d], 6).tolist(),
                                 **_hessian_spectrum(b, A, inst)})
    findings = []
    evidence = {"runs": runs, "other_stationary_points": other_points,
                "metric": "relative Frobenius distance of sym(b (x) A) to the paper's (the "
                          "prediction map; C is symmetric so only sym_kl(T) is identifiable)",
                "weight_threshold": weight_tol, "loss_threshold": loss_tol,
                "float64_rounding_of_f_relative": rounding,
                "why": "L-BFGS on the exact loss reaches float64 stationarity; 1e-3 leaves room "
                       "for the conditioning of the loss in T"}
    if below is not None:
        findings.append(Finding("exact_loss_training", False, evidence,
                                {"instance": inst.as_dict(), **below},
                                "training found weights with a lower loss than eq. (8)"))
    elif all(r["status"] == "diverged" for r in runs):
        findings.append(Finding("exact_loss_training", None, evidence,
                                reason=f"every restart diverged (restart 0: {runs[0]['reason']})"))
    else:
        best = min((r for r in runs if r["status"] != "diverged"),
                   key=lambda r: r["trained_loss"])
        at_min = [r for r in runs if r["status"] != "diverged"
                  and abs(r["relative_loss_gap"]) <= loss_tol]
        near = [r for r in at_min if r["lifted_distance"] <= weight_tol]
        if near:
            findings.append(Finding("exact_loss_training", True, evidence))
        elif at_min:
            # f is a positive definite quadratic in sym(T) (Sigma > 0): its minimiser is unique,
            # so the loss alone decides nothing where the weights land elsewhere
            closest = min(at_min, key=lambda r: r["lifted_distance"])
            eig = np.linalg.eigvalsh(inst.sigma)
            findings.append(Finding("exact_loss_training", None, evidence, reason=(
                f"training reached the paper's loss (relative gap "
                f"{closest['relative_loss_gap']:.1e}) but its weights end "
                f"{closest['lifted_distance']:.3g} from eq. (8) in sym(b (x) A), where the "
                f"minimiser is unique: either Sigma's conditioning (eigenvalues {eig.min():.3g} "
                f"to {eig.max():.3g}) hides the difference from the float64 loss within the "
                f"budget, or eq. (8) is not the minimiser; the symbolic tier decides")))
        else:
            findings.append(Finding("exact_loss_training", None, evidence,
                                    reason=f"no restart reached the paper's loss (best relative "
                                           f"gap {best['relative_loss_gap']:.2e}); more restarts "
                                           f"(a larger --budget) would decide"))
    evidence["reached_optimum"] = sum(abs(r["relative_loss_gap"]) <= loss_tol for r in runs)

    # sampled-prompt Adam on the real forward pass (as the anchors train): evidence, and a
    # counterexample if it beats the paper's loss
    gen = rt.generator(ctx.seed_for("train-sampled"))
    model = LinearTransformer(LSAConfig(d=d, parametrisation="full"), init_scale=INIT_SCALE,
                              generator=gen, dtype=rt.dtype, device=rt.device)
    law = prompt_law(inst, "identity")
    steps, batch = _sampled_budget(ctx)
    data_gen = rt.data_generator(ctx.seed_for("train-data"))

    def sampled_loss():
        pr = sample_prompts(law, batch, data_gen, dtype=rt.dtype, device=rt.device)
        return ((model.predict(pr.Z()) - pr.yq) ** 2).mean()

    with Progress(steps, "ahn2023.thm1 sampled-prompt Adam", ctx.progress) as bar:
        res = optimise(sampled_loss, model.parameters(), method="adam", steps=steps, lr=0.01,
                       progress=bar.callback())
    b, A = _bA_of(model, d)
    f = loss_at(b, A, inst)
    sampled = {"batch": batch, "trained_loss": f, "relative_loss_gap": (f - f_star) / f_star,
               "lifted_distance": float(np.linalg.norm(_lifted(b, A) - T_star) /
                                        np.linalg.norm(T_star)), **res.summary()}
    if res.status == "diverged":
        findings.append(Finding("sampled_prompt_training", None, sampled, reason=res.reason))
    elif (f - f_star) / f_star < -loss_tol:
        findings.append(Finding("sampled_prompt_training", False, sampled,
                                {"instance": inst.as_dict(), "trained_b": b.tolist(),
                                 "trained_A": A.tolist(), **sampled},
                                "sampled training found a lower exact loss than eq. (8)"))
    else:
        findings.append(Finding("sampled_prompt_training", True, sampled,
                                reason="evidence only: finite-batch Adam approaches the optimum"))
    return combine(findings, {"instance": inst.as_dict(), "paper_loss": f_star,
                              "runtime": rt.describe()})


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
    checks={"symbolic": thm1_symbolic, "numeric": thm1_numeric, "train": thm1_train},
    setting=THM1_SETTING,
)


CLAIMS = [THM1]
