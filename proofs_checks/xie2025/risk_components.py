"""App. A.2, Step 1 of Thm. 2's proof: the Frobenius rewriting of a head's term (line 441), the
split of the risk into L_1, ..., L_{d+1} (eq. (18)) and their gradients (eqs. (19), (20)).

The derived risk is the exact quadratic in T = sum_h b_h (x) A_h of ``saturated.lifted_problem``
(forward pass, moment kernel) at d = 2, C = 2 and a constant query guess y_q (the expansion of
eq. (17) treats y_q as independent of x_q; y_q = 0 in Sec. 3).  The named integrands of eq. (18)
are expected exactly over the Gaussian coordinates of the same prompt law (``gaussian_poly``), so
a mutated integrand of any degree is decided exactly too.
"""
from __future__ import annotations

import sympy

from verify.claim import Claim, Context, TierResult
from verify.evidence import Finding, step
from verify.formulas import FormulaSymbol, NamedFormula, formula_value

from . import derive, saturated as sat
from .common import finish
from .gaussian_poly import expect, gaussian_prompt
from .setting import SETTING
from .tensors import probe_tensor

PAPER = "xie2025"
DP1 = ("d+1", "d+1")
V1 = ("d+1", "1")
D = FormulaSymbol("d")
_G = FormulaSymbol("G", "matrix", DP1, symmetric=True)
_A = FormulaSymbol("a", "matrix", V1)
_B = FormulaSymbol("b", "matrix", V1)
_MI = FormulaSymbol("M_i", "matrix", DP1)
_ML = FormulaSymbol("M_last", "matrix", DP1)
_WHI = FormulaSymbol("w_hat_i")
_YQ = FormulaSymbol("y_q")
_EGMG = FormulaSymbol("EGMG", "matrix", DP1, symmetric=True)
_EWG = FormulaSymbol("EwG", "matrix", DP1, symmetric=True)
_M = FormulaSymbol("M", "matrix", DP1, symmetric=True)
D0, C0, W0 = 2, 2, (1, 2)  # d = 2, C = 2, w* = (1, 2)
BETA0 = sympy.Rational(3, 2)  # the constant query guess y_q

SPLIT_FORMULAS = (
    NamedFormula("tr_form", "trace(G*a*b.T)", (D, _G, _A, _B), "b^T G a written as "
                 "Tr(G a b^T)", "App. A.2"),
    NamedFormula("frob_form", "trace(G*(b*a.T).T)", (D, _G, _A, _B), "b^T G a written as "
                 "<G, b a^T> = Tr(G (b a^T)^T)", "App. A.2"),
    NamedFormula("L_i", "(trace(G*M_i.T) - w_hat_i)**2", (D, _G, _MI, _WHI),
                 "the integrand of L_i(M_i), i <= d", "(18)"),
    NamedFormula("L_last", "(1 + trace(G*M_last.T))**2*y_q**2", (D, _G, _ML, _YQ),
                 "the integrand of L_{d+1}(M_{d+1})", "(18)"),
    NamedFormula("grad_L", "2*EGMG - 2*EwG", (D, _EGMG, _EWG), "the gradient of L_i in M_i",
                 "(19)", DP1),
    NamedFormula("grad_L_last", "2*y_q**2*(M + EGMG)", (D, _YQ, _M, _EGMG),
                 "the gradient of L_{d+1} in M_{d+1}, with E[(1 + <G, M_{d+1}>) G] = M + "
                 "E[<G, M_{d+1}> G]", "(20)", DP1),
)


def _frobenius(F) -> Finding:
    """b^T G a against both named forms, exactly for symbolic a, b and a symmetric G."""
    n = D0 + 1
    G = sympy.Matrix(n, n, lambda i, j: sympy.Symbol(f"g{min(i, j)}_{max(i, j)}"))
    a = sympy.Matrix(n, 1, lambda i, _: sympy.Symbol(f"a{i}"))
    b = sympy.Matrix(n, 1, lambda i, _: sympy.Symbol(f"b{i}"))
    direct = sympy.expand((b.T * G * a)[0, 0])
    bad = {}
    for name in ("tr_form", "frob_form"):
        v = sympy.sympify(formula_value(F[name], {"d": D0, "G": G, "a": a, "b": b}))
        if sympy.expand(v - direct) != 0:
            bad[name] = str(sympy.expand(v))
    ok = not bad
    return Finding("frobenius_rewriting", ok, {"b^T G a": str(direct)},
                   None if ok else {"d": D0, "b^T G a": str(direct), **bad},
                   "" if ok else f"{', '.join(bad)} is not b^T G a")


def _directions() -> list[sympy.Matrix]:
    """M_1, ..., M_{d+1} (d = 2): fixed rational matrices."""
    r = sympy.Rational
    return [sympy.Matrix([[1, -1, r(1, 2)], [2, 0, 1], [0, r(-1, 3), 1]]),
            sympy.Matrix([[0, 2, -1], [r(1, 2), 1, 0], [1, 1, r(-1, 2)]]),
            sympy.Matrix([[r(1, 3), 0, 1], [-1, r(1, 2), 2], [1, 0, r(1, 4)]])]


def _theta(p: sat.LiftedProblem, Ms: list[sympy.Matrix]) -> sympy.Matrix:
    """Theta[(a, b), k] = M_k[a, b] + M_k[b, a] (a < b), M_k[a, a]: <G, M_k> in the features
    G_ab (a <= b) of ``saturated``."""
    return sympy.Matrix(len(p.pairs), len(p.ks), lambda r, c: (
        Ms[p.ks[c]][p.pairs[r]] + (Ms[p.ks[c]][p.pairs[r][::-1]] if p.pairs[r][0] != p.pairs[r][1]
                                   else 0)))


def _problem(beta) -> sat.LiftedProblem:
    return sat.lifted_problem(D0, C0, sympy.Matrix(W0), "affine", sympy.zeros(D0, 1), beta)


def _split(F) -> Finding:
    """Derived risk at (M_1, M_2, M_3) against E[sum_i L_i + L_{d+1}] of the named integrands."""
    Ms = _directions()
    p = _problem(BETA0)
    derived = sympy.nsimplify(p.risk(_theta(p, Ms)))
    gp = gaussian_prompt(D0, C0, W0)
    G = gp.gram()
    named = sympy.Integer(0)
    parts, L_i = {}, []
    for i in range(D0):
        v = expect(sympy.sympify(formula_value(F["L_i"], {
            "d": D0, "G": G, "M_i": Ms[i], "w_hat_i": gp.w_hat[i]})), gp.means)
        parts[f"L_{i + 1}"] = str(v)
        L_i.append(v)
        named += v
    v = expect(sympy.sympify(formula_value(F["L_last"], {
        "d": D0, "G": G, "M_last": Ms[D0], "y_q": BETA0})), gp.means)
    parts[f"L_{D0 + 1}"] = str(v)
    named += v
    ok = sympy.simplify(derived - named) == 0
    ev = {"d": D0, "C": C0, "w_star": list(W0), "y_q": str(BETA0),
          "M_1..M_3": [str(M.tolist()) for M in Ms], "derived_risk": str(derived),
          "named_sum": str(named), "terms": parts,
          "linear_guess": _linear_guess_gap(F, Ms, L_i)}
    return Finding("eq18_split", ok, ev, None if ok else ev,
                   "" if ok else "the risk is not the sum of the named L_i")


def _linear_guess_gap(F, Ms: list[sympy.Matrix], L_i: list[sympy.Expr]) -> dict:
    """Evidence only: with y_q = v^T x_q the split loses the cross terms
    2 v_i E[(1 + <G, M_{d+1}>)(<G, M_i> - w_hat[i])] (``L_i``: the named E[L_i], i <= d)."""
    v = sympy.Matrix([1, -1])
    gp = gaussian_prompt(D0, C0, W0)
    P = gp.poly
    G = gp.gram().applyfunc(P)
    xq = [P(x) for x in gp.x_q]
    yq = sum((int(v[a]) * xq[a] for a in range(D0)), P(0))
    zq = xq + [yq]
    # the lifted prediction y_q + sum_k <G, M_k> z_q[k] (App. A.1), in polynomial arithmetic
    pred = yq
    for k in range(D0 + 1):
        inner = P(0)
        for a in range(D0 + 1):
            for b in range(D0 + 1):
                inner += G[a, b] * Ms[k][a, b]
        pred += inner * zq[k]
    err = pred - sum((P(gp.w_hat[a]) * xq[a] for a in range(D0)), P(0))
    risk = expect(err ** 2, gp.means)
    last = expect(sympy.sympify(formula_value(F["L_last"], {
        "d": D0, "G": gp.gram(), "M_last": Ms[D0], "y_q": 1})), gp.means)
    named = sum(L_i, sympy.Integer(0)) + last * (v.T * v)[0, 0]
    return {"v": [1, -1], "risk": str(risk), "split_with_y_q^2 -> ||v||^2": str(named),
            "difference": str(sympy.simplify(risk - named)),
            "note": "eq. (18) needs y_q independent of x_q (a constant, as in Sec. 3)"}


def _gradients(F) -> list[Finding]:
    """The derived gradient of the lifted risk in M_i (i <= d) and M_{d+1} against eqs. (19),
    (20) with E[<G, K> G], E[w_hat[i] G] and M = E[G] from the kernel."""
    n = D0 + 1
    Ms = _directions()
    p = _problem(BETA0)
    grad_theta = -2 * p.Cmat + 2 * p.K_ctx * _theta(p, Ms) * p.K_q
    vec = {"w_star": list(W0)}
    GG = probe_tensor(derive.lifted("zero").ctx, derive.CTX_SLOTS, D0, vec, {"C": C0})
    Mt = probe_tensor(derive.mean_gram(), ("p", "q"), D0, vec, {"C": C0})
    M = sympy.Matrix(n, n, lambda a, b: Mt.get((a, b), 0))

    def egmg(K):
        return sympy.Matrix(n, n, lambda a, b: sum((K[c, e] * GG.get((c, e, a, b), 0)
                                                    for c in range(n) for e in range(n)), 0))

    def as_matrix(k):
        col = p.ks.index(k)
        idx = {pr: r for r, pr in enumerate(p.pairs)}
        return sympy.Matrix(n, n, lambda a, b: grad_theta[idx[(min(a, b), max(a, b))], col])

    out, rows, bad = [], [], None
    for i in range(D0):
        e = [1 if k == i else 0 for k in range(D0)]
        EwG = probe_tensor(derive.weighted_gram(), ("p", "q"), D0, {**vec, "e": e}, {"C": C0})
        EwG = sympy.Matrix(n, n, lambda a, b: EwG.get((a, b), 0))
        named = sympy.Matrix(formula_value(F["grad_L"], {"d": D0, "EGMG": egmg(Ms[i]),
                                                         "EwG": EwG}))
        derived = as_matrix(i)
        rows.append({"i": i + 1, "derived": str(derived.tolist()), "eq19": str(named.tolist())})
        if bad is None and (derived - named).applyfunc(sympy.simplify) != sympy.zeros(n, n):
            bad = {"d": D0, "C": C0, "w_star": list(W0), "i": i + 1, "M_i": str(Ms[i].tolist()),
                   "derived_gradient": str(derived.tolist()), "paper_eq19": str(named.tolist())}
    out.append(Finding("eq19_gradient", bad is None, {"rows": rows}, bad,
                       "" if bad is None else "eq. (19) differs from the derived gradient of L_i"))
    named = sympy.Matrix(formula_value(F["grad_L_last"], {
        "d": D0, "y_q": BETA0, "M": M, "EGMG": egmg(Ms[D0])}))
    derived = as_matrix(D0)
    ok = (derived - named).applyfunc(sympy.simplify) == sympy.zeros(n, n)
    ev = {"d": D0, "C": C0, "w_star": list(W0), "y_q": str(BETA0),
          "derived_gradient": str(derived.tolist()), "paper_eq20": str(named.tolist())}
    out.append(Finding("eq20_gradient", ok, ev, None if ok else ev,
                       "" if ok else "eq. (20) differs from the derived gradient of L_{d+1}"))
    return out


def split_symbolic(ctx: Context) -> TierResult:
    F = ctx.formulas
    findings = [_frobenius(F), _split(F)] + _gradients(F)
    steps = [
        step("Frobenius form", r"b^\top G a = \operatorname{Tr}(G a b^\top) = \langle G, b a^\top"
             r"\rangle", "Exact for symbolic a, b and a symmetric G."),
        step("Split (18)", r"\mathcal R = \sum_{i\le d}\mathbb E[(\langle G,M_i\rangle - \hat w_i)"
             r"^2] + \mathbb E[(1 + \langle G, M_{d+1}\rangle)^2]\,y_q^2",
             f"The lifted risk from the forward pass against the named integrands expected over "
             f"the Gaussian coordinates, d = {D0}, C = {C0}, w* = {W0}, y_q = {BETA0}."),
        step("Gradients (19), (20)", r"\nabla_{M_i}\mathcal L_i = 2\mathbb E[\langle G,M_i\rangle"
             r" G] - 2\mathbb E[\hat w_i G]", "The gradient of the lifted quadratic in T against "
             "the named forms with the kernel's moments of G."),
    ]
    return finish(findings, {"instance": {"d": D0, "C": C0, "w_star": list(W0),
                                          "y_q": str(BETA0)}}, steps=steps)


SPLIT = Claim(
    id="xie2025.eq18",
    title="Thm. 2's proof, Step 1: the risk splits into L_1, ..., L_{d+1} (18) with gradients "
          "(19), (20)",
    paper=PAPER,
    statement=(r"$b_h^\top Ga_i^h=\operatorname{Tr}(Ga_i^hb_h^\top)=\langle G,b_h(a_i^h)^\top"
               r"\rangle$; $\mathcal R=\sum_{i\le d+1}\mathcal L_i(M_i)$ with $\mathcal L_i="
               r"\mathbb E[(\langle G,M_i\rangle-\hat w[i])^2]$, $\mathcal L_{d+1}=\mathbb E[(1+"
               r"\langle G,M_{d+1}\rangle)^2y_q^2]$ (18); $\nabla\mathcal L_i=2\mathbb E[\langle "
               r"G,M_i\rangle G]-2\mathbb E[\hat w[i]G]$ (19), $\nabla\mathcal L_{d+1}=2y_q^2"
               r"\mathbb E[(1+\langle G,M_{d+1}\rangle)G]$ (20)."),
    assumptions=("x ~ N(0, I), w_hat ~ N(w*, I); y_q a constant (y_q = 0 in Sec. 3)",
                 "checked exactly at d = 2, C = 2, w* = (1, 2), y_q = 3/2"),
    formulas=SPLIT_FORMULAS,
    checks={"symbolic": split_symbolic},
    setting=SETTING,
    notes="With y_q = v^T x_q the split loses cross terms (evidence 'linear_guess').",
)
