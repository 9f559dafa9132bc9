"""The kit's global-optimum check for one linear self-attention layer in linear ICL: "the stated
(b, A) minimises the population loss f over all weights", and, optionally, "the loss there is the
stated risk".

The model is one layer Z_1 = Z_0 + (1/n) P Z_0 M (Z_0^T Q Z_0) on the prompt
Z_0 = [[X, x_q], [y^T, 0]] with full P, Q, predicting -[Z_1]_{(d+1),(n+1)}; the data are
x ~ N(0, Sigma), w* ~ N(0, I), y = <w*, x> (``kit.linear_icl``).  Everything is derived from the
forward pass by the moment kernel (n symbolic):

- f(P, Q) = E[([Z_1]_{(d+1),(n+1)} + w*^T x_q)^2];
- the reduction: the prediction is b^T C A x_q with b the last row of P, A the first d columns
  of Q and C = Z_0 M Z_0^T / n, so f depends on (b, A) only and is a convex quadratic in
  T = b (x) A; a zero gradient in T at the stated point is therefore a *global* minimum;
- the lifted gradient 2 E[e (p^T C q)(r^T x_q)] (probes p, q, r), evaluated exactly at the stated
  point on rational Sigma = U Lambda U^T instances;
- the optimum itself under the ansatz b = [0; beta], A = [g(Sigma); 0], solved from the
  stationarity equation in an eigenvalue of Sigma, compared with the stated top block.

A claim gives ``point``: a function of the formula values at an instance returning (b, A), and
optionally a rescaling formula (A's factor when b is scaled by gamma), special cases (the
point claimed for Sigma = I, say) and a risk formula (the loss at the optimum).  The float64 and
training tiers are in ``layer_optimum_float``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Mapping, Sequence

import sympy

from models.lsa import lsa_forward, readout
from moments.blocks import BlockMat
from moments.poly import Poly
from moments.spectral import LAMBDA, depends_on_traces_of, power_sum, spectral_value
from moments.tensor import gaussian_matrix, matrix, scalar, vector, zeros
from moments.wick import canonical, expectation
from verify.claim import Check, Context, TierResult
from verify.evidence import Finding, combine, step
from verify.formulas import formula_value

from .linear_icl import Instance, LinearICLSetting, SigmaSpec, make_instance, symbolic_prompt
from .pointwise import Unevaluable

n_sym = sympy.Symbol("n", positive=True, integer=True)
d_sym = sympy.Symbol("d", positive=True, integer=True)
P_YY, Q_YY = sympy.symbols("p_yy q_yy")
PROBE_PY, PROBE_QY = sympy.symbols("p_y q_y")
N_SHOWN = 7  # n stays symbolic; a counterexample shows its values at n = 7
SPECIAL_DIMS = (2, 3, 4)  # a special case at a fixed Sigma is compared at these d


class PointValues:
    """The formulas' exact values at one instance (U, Lambda, Sigma; n may be symbolic), for a
    claim's ``point``: ``v("A_top")`` is a sympy matrix or scalar, ``v.d``, ``v.n`` the sizes."""

    def __init__(self, formulas: Mapping[str, sympy.Basic], inst: Instance, n: Any):
        self.formulas, self.d, self.n = formulas, inst.d, n
        U, eigs = inst.spectral()
        self._values = {"U": U, "Lambda": sympy.diag(*eigs), "Sigma": inst.sigma_exact,
                        "n": n, "d": inst.d}

    def __call__(self, name: str) -> Any:
        return formula_value(self.formulas[name], self._values)

    def column(self, *parts: Any) -> sympy.Matrix:
        """Stack blocks (a scalar is a 1 x 1 block) into one matrix."""
        return sympy.Matrix.vstack(*(sympy.Matrix(p) if isinstance(p, (sympy.MatrixBase,
                                                                       sympy.MatrixExpr))
                                     else sympy.Matrix([[p]]) for p in parts))


Point = Callable[[PointValues], tuple[Any, Any]]


@dataclass(frozen=True)
class SpecialCase:
    """A point claimed for one fixed covariance (``sigma``: "identity"), compared with the
    derived optimum at d in ``SPECIAL_DIMS`` (n symbolic)."""

    label: str
    point: Point
    sigma: str = "identity"


@dataclass(frozen=True)
class LayerOptimum:
    """``point`` is a global minimum of the one-layer loss (module docstring)."""

    point: Point
    setting: LinearICLSetting
    what: str = "the stated point"  # e.g. "eq. (8)", in reasons and steps
    rescaling: str | None = None  # formula of A's factor when b is scaled by gamma
    special_cases: Sequence[SpecialCase] = ()
    risk: str | None = None  # formula of the loss at the optimum
    # where the paper states each step, shown in the derivation: "forward", "reduction", "loss"
    refs: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self):
        if self.setting.w_prior != "identity":
            raise ValueError("LayerOptimum derives the loss for w* ~ N(0, I) only")


def layer_optimum(spec: LayerOptimum) -> dict[str, Check]:
    """The symbolic, numeric and train checks of a one-layer global-optimum claim."""
    from .layer_optimum_float import numeric_tier, train_tier

    return {"symbolic": lambda ctx: symbolic_tier(spec, ctx),
            "numeric": lambda ctx: numeric_tier(spec, ctx),
            "train": lambda ctx: train_tier(spec, ctx)}


# ---------------------------------------------------------------------------------- derivation
def layer_weights(restricted: bool = False) -> tuple[BlockMat, BlockMat]:
    """Symbolic (P, Q) in blocks; ``restricted`` fixes b = [0; beta] and A's last row to 0."""
    if restricted:
        P = BlockMat([[matrix("P_xx"), vector("p_xy")], [zeros("1", "d"), scalar(P_YY)]])
        Q = BlockMat([[matrix("Q_xx"), vector("q_xy")], [zeros("1", "d"), scalar(Q_YY)]])
    else:
        P = BlockMat([[matrix("P_xx"), vector("p_xy")], [vector("p_yx").T, scalar(P_YY)]])
        Q = BlockMat([[matrix("Q_xx"), vector("q_xy")], [vector("q_yx").T, scalar(Q_YY)]])
    return P, Q


@dataclass(frozen=True)
class LayerLoss:
    """The derived objects: the loss f(P, Q), the lifted gradient, the loss restricted to
    b = [0; beta], A = [A_top; 0], and prediction - b^T C A x_q (zero: the reduction holds)."""

    loss: Poly
    lifted_gradient: Poly
    restricted_loss: Poly
    reduction: Poly


@lru_cache(maxsize=None)
def layer_loss() -> LayerLoss:
    """Derive f(P, Q) = E[([Z_1]_{(d+1),(n+1)} + w*^T x_q)^2] from the forward pass.

    The lifted gradient is 2 E[e (p^T C q)(r^T x_q)] with C = Z_0 M Z_0^T / n and probes p, q in
    R^{d+1}, r in R^d: the gradient of the loss as a (convex quadratic) function of T = b (x) A.
    """
    sp = symbolic_prompt("identity")
    P, Q = layer_weights()
    pred = readout(lsa_forward(sp.Z, [(P, Q)], sp.mask, n_sym))
    err = pred + sp.target
    loss = expectation(err * err).simplify()
    p = BlockMat([[vector("p_x")], [scalar(PROBE_PY)]])
    q = BlockMat([[vector("q_x")], [scalar(PROBE_QY)]])
    C_pq = (p.T @ sp.Z @ sp.mask @ sp.Z.T @ q)[0, 0] / n_sym
    grad = expectation(err * C_pq * (vector("r").T @ sp.xq)).scale(2).simplify()
    P1, Q1 = layer_weights(restricted=True)
    err1 = readout(lsa_forward(sp.Z, [(P1, Q1)], sp.mask, n_sym)) + sp.target
    restricted = expectation(err1 * err1).simplify()
    b = BlockMat([[vector("p_yx")], [scalar(P_YY)]])
    A = BlockMat([[matrix("Q_xx")], [vector("q_yx").T]])
    lifted = (b.T @ sp.Z @ sp.mask @ sp.Z.T @ A @ BlockMat([[sp.xq]]))[0, 0] / n_sym
    return LayerLoss(loss, grad, restricted, canonical(pred - lifted).simplify())


@lru_cache(maxsize=None)
def derived_top_block() -> tuple[sympy.Expr | None, sympy.Expr]:
    """Solve the stationarity equation in A_top with b = [0; beta], A's last row 0, A_top = g(Sigma).

    Returns (g(lambda) or None, the equation).  g depends on lambda, n, beta and p1 = tr Sigma.
    """
    g = sympy.Symbol("g")
    eq = sympy.factor(spectral_value(layer_loss().restricted_loss.diff("Q_xx"),
                                     {"Sigma": LAMBDA, "Q_xx": g}))
    if depends_on_traces_of(eq, g):
        return None, eq
    sols = sympy.solve(eq, g)
    return (sympy.simplify(sols[0]) if len(sols) == 1 else None), eq


def letters(b: sympy.Matrix, A: sympy.Matrix) -> dict:
    """(b, A) as the loss's letters: b = [p_yx; p_yy], A = [Q_xx; q_yx^T]."""
    d = A.shape[1]
    return {"Q_xx": A[:d, :], "q_yx": A[d:, :].T, "p_yx": b[:d, :], "p_yy": b[d, 0]}


def exact_point(point: Point, formulas, inst: Instance, n: Any) -> tuple[sympy.Matrix,
                                                                          sympy.Matrix]:
    """The claim's (b, A) at an instance, exactly, shapes checked: (d+1) x 1 and (d+1) x d.

    Only the formulas' failures are ``Unevaluable`` (the stated point does not exist there: a
    failed check); the instance's values are built first, so that an error of the engine is a
    crash, which the runner reports, never a refutation."""
    values = PointValues(formulas, inst, n)
    try:
        b, A = point(values)
        b, A = sympy.Matrix(b), sympy.Matrix(A)
    except (ValueError, TypeError, ZeroDivisionError, sympy.ShapeError) as exc:
        raise Unevaluable(str(exc)) from exc
    d = inst.d
    if b.shape != (d + 1, 1) or A.shape != (d + 1, d):
        raise Unevaluable(f"the point has b of shape {b.shape} and A of shape {A.shape}; "
                          f"expected {(d + 1, 1)} and {(d + 1, d)}")
    return b, A


# ---------------------------------------------------------------------------------- symbolic tier
def exact_instances(ctx: Context) -> list[Instance]:
    """Rational (U, Lambda) instances, d = 2 and 3 (and the user's --sigma); n stays symbolic."""
    rng = ctx.rng("symbolic-instances")
    insts = []
    if ctx.sigma is not None and ctx.sigma.kind in ("identity", "diag", "rotated"):
        insts.append(make_instance(N_SHOWN, 3, ctx.sigma, rng))
    return insts + [make_instance(N_SHOWN, d, None, rng) for d in (2, 3)]


def _at_n(expr, n_value: int = N_SHOWN):
    return sympy.nsimplify(sympy.sympify(expr).subs(n_sym, n_value))


def _first_nonzero(m: sympy.Matrix) -> tuple | None:
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            if sympy.cancel(sympy.together(m[i, j])) != 0:
                return i, j
    return None


def symbolic_tier(spec: LayerOptimum, ctx: Context) -> TierResult:
    F, parts = ctx.formulas, layer_loss()
    insts = exact_instances(ctx)
    try:
        points = [(inst, exact_point(spec.point, F, inst, n_sym)) for inst in insts]
    except Unevaluable as exc:
        return combine([Finding("point", False, {}, {"error": str(exc)},
                                f"{spec.what} cannot be formed: {exc}")])
    findings = [_reduction(parts)]
    g, eq = derived_top_block()
    if g is None:
        findings.append(Finding("derived_optimum", None, {"equation": str(eq)},
                                reason="the stationarity equation is not pointwise in lambda"))
    else:
        findings.append(_compare_top_block("derived_optimum", g, eq, points, spec.what))
    findings.append(_lifted_gradient_exact(points, parts.lifted_gradient))
    if spec.rescaling:
        findings.append(_rescaling(parts.loss, F[spec.rescaling], ctx.formula_texts.get(
            spec.rescaling, str(F[spec.rescaling]))))
    for case in spec.special_cases:
        if g is None:
            continue
        rng = ctx.rng("special", case.label)
        fixed = [make_instance(N_SHOWN, d, SigmaSpec(case.sigma), rng) for d in SPECIAL_DIMS]
        try:
            pts = [(inst, exact_point(case.point, F, inst, n_sym)) for inst in fixed]
        except Unevaluable as exc:
            findings.append(Finding(f"{case.label}_case", False, {}, {"error": str(exc)},
                                    f"the {case.label} point cannot be formed: {exc}"))
            continue
        findings.append(_compare_top_block(f"{case.label}_case", g, eq, pts,
                                           f"the {case.label} formula"))
    if spec.risk:
        findings.append(_risk_exact(spec.risk, F, parts.loss, points))
    return combine(findings, {"method": "moment kernel on the symbolic forward pass; exact "
                                        "rational Sigma instances with n symbolic"},
                   steps=_steps(parts, g, eq, spec, F))


def _reduction(parts: LayerLoss) -> Finding:
    names = parts.loss.letter_names()
    params = {s.name for s in parts.loss.coefficient_symbols()} - {"n"}
    ok = parts.reduction.is_zero() and names <= {"Sigma", "p_yx", "Q_xx", "q_yx"} and \
        params <= {"p_yy"}
    return Finding("reduction", ok,
                   {"derived_loss": str(parts.loss), "derived_loss_latex": parts.loss.latex(),
                    "letters_in_loss": sorted(names), "scalars_in_loss": sorted(params),
                    "prediction_minus_bCAx": str(parts.reduction)},
                   reason="" if ok else "the loss depends on more than the last row of P and "
                                        "the first d columns of Q",
                   summary="the prediction is b^T C A x_q exactly: f depends on (b, A) only")


def _compare_top_block(name: str, g, eq, points, what: str) -> Finding:
    evidence = {"stationarity_equation": f"{eq} = 0", "derived_g(lambda)": str(g),
                "derived_A_top": f"U diag(g(lambda_i)) U^T with g(lambda) = {g} (p1 = tr Sigma, "
                                 f"p_yy = b_y)", "instances": []}
    for inst, (b, A) in points:
        d = inst.d
        if any(v != 0 for v in b[:d, :]) or any(v != 0 for v in A[d, :]):
            return Finding(name, None, evidence,
                           reason="b_x or A_bottom is not zero, so the ansatz does not apply")
        p1 = sum(inst.eigs_exact)
        gl = [g.subs({LAMBDA: lam, power_sum(1): p1, P_YY: b[d, 0]}) for lam in inst.eigs_exact]
        derived = inst.U_exact * sympy.diag(*gl) * inst.U_exact.T
        diff = A[:d, :] - derived
        where = _first_nonzero(diff)
        evidence["instances"].append({"d": d, "Sigma": inst.as_dict()["Sigma"],
                                      "agree": where is None})
        if where is not None:
            i, j = where
            return Finding(name, False, evidence, {
                "instance": inst.as_dict(), "entry": [i, j],
                "paper_A_top": str(_at_n(A[i, j])), "derived_A_top": str(_at_n(derived[i, j])),
                "difference_in_n": str(sympy.factor(diff[i, j]))},
                reason=f"{what} differs from the derived optimum at entry {(i, j)}")
    sizes = ", ".join(str(inst.d) for inst, _ in points)
    return Finding(name, True, evidence, summary=f"{what} = the derived optimum exactly "
                   f"(Sigma at d = {sizes}; n symbolic)")


def _lifted_gradient_exact(points, G: Poly) -> Finding:
    evidence = {"statement": "f(b, A) = F(b (x) A) with F a convex quadratic, so grad F = 0 at "
                             "T = b (x) A proves a global minimum",
                "lifted_gradient": str(G), "instances": []}
    for inst, (b, A) in points:
        d = inst.d
        px = sympy.Matrix(sympy.symbols(f"px0:{d}"))
        qx = sympy.Matrix(sympy.symbols(f"qx0:{d}"))
        r = sympy.Matrix(sympy.symbols(f"r0:{d}"))
        lt = letters(b, A)
        env = {"Sigma": inst.sigma_exact, "p_yx": lt["p_yx"], "Q_xx": lt["Q_xx"],
               "q_yx": lt["q_yx"], "p_x": px, "q_x": qx, "r": r}
        val = G.evaluate(env, {"n": n_sym, "p_yy": lt["p_yy"], "p_y": PROBE_PY,
                               "q_y": PROBE_QY}, exact=True)
        val = sympy.cancel(sympy.together(sympy.expand(val)))
        evidence["instances"].append({"d": d, "Sigma": inst.as_dict()["Sigma"],
                                      "zero": val == 0})
        if val != 0:
            num, den = sympy.fraction(val)
            probes = sorted(set(px) | set(qx) | set(r) | {PROBE_PY, PROBE_QY}, key=str)
            monom, coeff = sympy.Poly(sympy.expand(num), *probes).terms()[0]
            component = sympy.factor(sympy.cancel(coeff / den))
            return Finding("global_optimality", False, evidence, {
                "instance": inst.as_dict(),
                "gradient_component_in_probes": {str(s): e for s, e in zip(probes, monom) if e},
                "component_in_n": str(component), "component_at_n_7": str(_at_n(component))},
                reason="the gradient of the loss in T = b (x) A is not zero at the stated point")
    return Finding("global_optimality", True, evidence, summary=(
        f"the gradient in T = b (x) A is exactly 0 there ({len(points)} rational Sigma, n "
        f"symbolic): a global minimum"))


def _rescaling(loss: Poly, a_scale, text: str) -> Finding:
    """f(gamma b, A_scale A) = f(b, A) for every gamma (A_scale a formula in gamma)."""
    gamma = sympy.Symbol("gamma")
    scaled = loss.scale_letters({"p_yx": gamma, "Q_xx": a_scale, "q_yx": a_scale})
    diff = (scaled.subs({P_YY: gamma * P_YY}) - loss).simplify()
    ce = None
    if not diff.is_zero():
        key, coeff = next(iter(diff.terms.items()))
        ce = {"gamma": 2, "monomial": diff.monomial_str(key),
              "coefficient_change": str(sympy.factor(coeff)),
              "at_gamma_2": str(sympy.factor(coeff.subs(gamma, 2)))}
    return Finding("rescaling", diff.is_zero(), {"A_scale": text, "loss_change": str(diff)}, ce,
                   "" if diff.is_zero() else "f(gamma b, A_scale A) != f(b, A)",
                   summary=f"f(gamma b, {text} A) = f(b, A) identically")


def _risk_exact(name: str, F, loss: Poly, points) -> Finding:
    """The stated risk equals the derived loss at the stated point (n symbolic)."""
    rows = []
    for inst, (b, A) in points:
        lt = letters(b, A)
        env = {"Sigma": inst.sigma_exact, **{k: lt[k] for k in ("p_yx", "Q_xx", "q_yx")}}
        derived = loss.evaluate(env, {"n": n_sym, "p_yy": lt["p_yy"]}, exact=True)
        stated = PointValues(F, inst, n_sym)(name)
        gap = sympy.factor(sympy.cancel(sympy.together(sympy.expand(derived - stated))))
        rows.append({"d": inst.d, "Sigma": inst.as_dict()["Sigma"], "agree": gap == 0})
        if gap != 0:
            return Finding("risk_at_optimum", False, {"instances": rows}, {
                "instance": inst.as_dict(), "derived_in_n": str(sympy.factor(derived)),
                "stated_in_n": str(sympy.factor(stated)), "derived_at_n_7": str(_at_n(derived)),
                "stated_at_n_7": str(_at_n(stated))},
                f"the stated {name} is not the derived loss at the optimum")
    return Finding("risk_at_optimum", True, {"instances": rows},
                   summary=f"{name} = the derived loss at the optimum exactly ({len(rows)} "
                           f"rational Sigma, n symbolic)")


def _steps(parts: LayerLoss, g, eq, spec: LayerOptimum, formulas) -> list:
    sp = symbolic_prompt("identity")
    P, Q = layer_weights()
    pred = canonical(readout(lsa_forward(sp.Z, [(P, Q)], sp.mask, n_sym))).simplify()
    Xs = gaussian_matrix("X", "d", "n", row_cov=matrix("Sigma", symmetric=True))
    wmw = expectation(Xs @ Xs.T @ matrix("M") @ Xs @ Xs.T).simplify()
    ref = {k: f" ({v})" for k, v in spec.refs.items()}
    steps = [
        step("Forward pass", r"[Z_1]_{d+1,n+1} = " + pred.latex(),
             "One layer Z_1 = Z_0 + (1/n) P Z_0 M (Z_0^T Q Z_0)" + ref.get("forward", "") +
             " run on the symbolic prompt "
             "Z_0 = [[X, x_q], [w^T X, 0]] with full P = [[P_xx, p_xy], [p_yx^T, p_yy]] and Q "
             "likewise; the entry is a polynomial in the random letters X, w, x_q."),
        step("Reduction" + ref.get("reduction", ""), r"[Z_1]_{d+1,n+1} - b^\top C A x_q = " + (parts.reduction.latex() or "0"),
             "The prediction equals b^T C A x_q with b the last row of P, A the first d columns of "
             "Q and C = Z_0 M Z_0^T / n, so f depends only on (b, A) and is a convex quadratic in "
             "T = b (x) A."),
        step("Moments", r"\mathbb E[X_{ai}X_{bj}] = \Sigma_{ab}\delta_{ij},\quad "
             r"\mathbb E[w w^\top] = I,\quad \mathbb E[x_q x_q^\top] = \Sigma;\qquad "
             r"\mathbb E[W M W] = " + wmw.latex(),
             "Isserlis' theorem over the pairings of each random letter; sample indices that are "
             "paired collapse, and each free sample loop gives a factor n (W = X X^T)."),
        step("Population loss", r"f(b, A) = " + parts.loss.latex(),
             "E[([Z_1]_{d+1,n+1} + w^T x_q)^2]" + ref.get("loss", "") +
             ", with b = [p_yx; p_yy] and A = [Q_xx; q_yx^T]."),
        step("Restricted loss", r"f\big([0;\beta], [A_{\mathrm{top}}; 0]\big) = "
             + parts.restricted_loss.latex(), "b = [0; beta] (beta = p_yy), last row of A = 0."),
        step("Stationarity", sympy.latex(eq) + " = 0",
             "grad_{A_top} f = 0 with the ansatz A_top = g(Sigma): every word is a function of "
             "Sigma, so the matrix equation is a scalar equation in an eigenvalue lambda "
             "(p_1 = tr Sigma)."),
    ]
    if g is not None:
        steps.append(step("Solution", r"g(\lambda) = " + sympy.latex(g),
                          "A_top = U diag(g(lambda_i)) U^T."))
    shown = r",\quad ".join(f"{sympy.latex(sympy.Symbol(k))} = {sympy.latex(v)}"
                             for k, v in formulas.items())
    steps.append(step(f"Comparison with {spec.what}", shown,
                      "Checked exactly (n symbolic) on rational instances Sigma = U Lambda U^T "
                      "with U from a Cayley transform; then the lifted gradient "
                      "2 E[e (p^T C q)(r^T x_q)] is evaluated at the stated point."))
    return steps
