"""yang2024 eqs. (45), (56) and (82): the gradients of the reparametrised loss l(xi) of Lemma 6 in
alpha_k and in Q_h, compared with the derivative of the derived loss (exactly, by sympy, on a
rational instance whose Zbar = (Z^T Z + m tau I)^{1/2} is rational) and with torch autograd."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
import numpy as np
import sympy
import torch

from models.device import randn
from models.softmax import attention_weights, coefficient_matrix, softmax_columns
from verify.claim import Claim, Context, Correction, TierResult
from verify.evidence import Finding, combine, settle_le, step, worse
from verify.formulas import FormulaSymbol, NamedFormula

from .setting import (ExactInstance, Instance, PAPER, SETTING, exact_quadratic, make_instance,
                      quadratic_loss, small_threads, token_loss)
from .common import (_A, _Ahat, _H, _K, _N, _d, _m, _safe_exact, dimension_finding, error_finding,
                     float_scalar, float_value)
from .gradient_bounds import _gam
from .softmax import _V, _sjk, _sk, _vj, _vk
from .reparametrisation import Dynamics, _grads_xi, dynamics


# ==============================================================================================
# A rational instance with a rational Zbar: N = 2, m = 3, m tau = 9
# ==============================================================================================
@dataclass(frozen=True)
class RationalZbar:
    """Z = (R; 0) with R = diag(4, 9/4) P^T, P the rotation (3/5, 4/5): Z^T Z = P diag(16, 81/16) P^T,
    so Z^T Z + 9 I = P diag(25, 225/16) P^T and Zbar = P diag(5, 15/4) P^T, with tau = 3 (m = 3)."""

    inst: ExactInstance
    tau: sympy.Rational
    Zbar: sympy.Matrix
    V_all: sympy.Matrix          # unit-norm rational tokens, d = 2


@lru_cache(maxsize=1)
def rational_zbar() -> RationalZbar:
    P = sympy.Matrix([[sympy.Rational(3, 5), -sympy.Rational(4, 5)], [sympy.Rational(4, 5), sympy.Rational(3, 5)]])
    R = sympy.diag(4, sympy.Rational(9, 4)) * P.T
    Z = sympy.Matrix.vstack(R, sympy.zeros(1, 2))
    ZQ = sympy.Matrix([[1, -2], [sympy.Rational(1, 2), 3], [-1, sympy.Rational(3, 2)]])
    inst = ExactInstance(3, 2, 4, sympy.Matrix.hstack(Z, ZQ))
    Zbar = P * sympy.diag(5, sympy.Rational(15, 4)) * P.T
    toks = [(1, 0), (0, 1), (sympy.Rational(3, 5), sympy.Rational(4, 5)), (-sympy.Rational(5, 13), sympy.Rational(12, 13))]
    V_all = sympy.Matrix([[a for a, _ in toks], [b for _, b in toks]])
    return RationalZbar(inst, sympy.Integer(3), Zbar, V_all)


def _check_zbar(rz: RationalZbar) -> Finding:
    """Zbar is symmetric positive definite with Zbar^2 the Hessian G = Z^T Z + m tau I of the derived loss."""
    G, _, _ = exact_quadratic(rz.inst, rz.tau)
    ok = rz.Zbar == rz.Zbar.T and rz.Zbar * rz.Zbar == G and all(e > 0 for e in rz.Zbar.eigenvals())
    return Finding("rational_Zbar", ok, {"Zbar": rz.Zbar, "G_from_the_derived_loss": G, "tau": rz.tau},
                   reason="" if ok else "the instance's Zbar is not the square root of the derived Hessian")


def _exact_loss(rz: RationalZbar, Ahat: sympy.Matrix) -> sympy.Expr:
    """The derived loss L(Ahat) = (1/K) sum_k [a_k^T G a_k / 2 - a_k^T b_k + c_k / 2] (eq. (9))."""
    return quadratic_loss(*exact_quadratic(rz.inst, rz.tau), Ahat)


def _exact_A(rz: RationalZbar) -> sympy.Matrix:
    G, B, _ = exact_quadratic(rz.inst, rz.tau)
    return G.inv() * B


# ==============================================================================================
# Formula symbols
# ==============================================================================================
_Bk = FormulaSymbol("B_k", "matrix", ("N", "H"))
_Zbar = FormulaSymbol("Zbar", "matrix", ("N", "N"), symmetric=True)
_dk = FormulaSymbol("delta_k", "matrix", ("N", "1"))
_zbj = FormulaSymbol("zbar_j", "matrix", ("N", "1"))
_zj = FormulaSymbol("z_j", "matrix", ("m", "1"))
_ahk = FormulaSymbol("alpha_hk")
_Lst = FormulaSymbol("L_star")

GRAD_SIZES = {"quick": {"K": 5, "d": 3, "m": 2, "N": 3, "H": 2},
              "default": {"K": 8, "d": 4, "m": 3, "N": 5, "H": 3},
              "paper": {"K": 12, "d": 6, "m": 4, "N": 7, "H": 4}}
GAMMAS = (0.5, 3.0)
TOL = 1e-9  # relative, float64 autograd of a softmax model against a sum of float64 terms


def _points(inst: Instance, gen: torch.Generator, count: int = 3):
    """(Q, w) at near-uniform and peaked attention (w generic: alpha_hk = w_hk / gamma)."""
    for i in range(count):
        Q = (0.5, 1.5, 3.0)[i % 3] * randn(inst.H, inst.d, inst.d, generator=gen, dtype=torch.float64)
        w = randn(inst.H, inst.K, generator=gen, dtype=torch.float64)
        yield Q, w


def _gamma_points(inst: Instance, gen: torch.Generator):
    """(gamma, i, Q, w, alpha = w / gamma) for every gamma of GAMMAS and every point i of ``_points``;
    a point is drawn only when it is asked for."""
    for gamma in GAMMAS:
        for i, (Q, w) in enumerate(_points(inst, gen)):
            yield gamma, i, Q, w, w / gamma


def _grad_instance(ctx: Context) -> Instance:
    sizes = dict(GRAD_SIZES[ctx.budget.name])
    sizes.update({k: v for k, v in ctx.sizes.items() if k in sizes})
    return make_instance(ctx, "gradients", SETTING.resolve(ctx.budget.name, sizes)
                         if ctx.sizes else sizes)


def _relative(paper: np.ndarray, ref: np.ndarray) -> float:
    return float(np.abs(paper - ref).max() / max(np.abs(ref).max(), 1e-300))


def _float_finding(name: str, worst: float, bad: dict | None, why: str, inst: Instance, what: str,
                   seed: int) -> Finding:
    if why:
        return Finding(name, False, {"error": why}, {"instance": inst.as_dict(), "error": why},
                       f"the formula cannot be evaluated at the instance's sizes: {why}")
    ok, undecided = settle_le(worst, TOL)
    return Finding(name, ok, {"max_relative_difference": worst, "tolerance": TOL,
                              "why_tolerance": "float64 autograd against float64 sums of the formula"},
                   None if ok is not False else {"instance": inst.as_dict(), **(bad or {}), "seed": seed},
                   undecided or ("" if ok else f"{what} differs from autograd"))


# ==============================================================================================
# Eq. (45): d l / d alpha_k = (gamma / K) B_k^T Zbar delta_k
# ==============================================================================================
EQ45_FORMULAS = (
    NamedFormula("grad_alpha_k", "gamma/K*B_k.T*Zbar*delta_k", (_gam, _K, _N, _H, _Bk, _Zbar, _dk),
                 equation="(45)", shape=("H", "1"),
                 description="d l(xi) / d alpha_k, alpha_k = (alpha_{1,k}, ..., alpha_{H,k})^T"),
)


def eq45_symbolic(ctx: Context) -> TierResult:
    F = ctx.formulas
    rz = rational_zbar()
    inst = rz.inst
    N, K, H = inst.N, inst.K, 2
    g = sympy.Symbol("gamma", positive=True)
    al = sympy.Matrix(H, K, lambda h, k: sympy.Symbol(f"alpha_{h}{k}"))
    # C_k: softmax columns at rational logits are not rational; (45) is an identity in alpha at a
    # fixed Q, so any positive columns summing to 1 are a C_k of some logits
    Cs = [sympy.Matrix(N, H, lambda j, h, k=k: sympy.Rational(1 + ((j + 2 * h + k) % 3), 1) /
                       sum(1 + ((i + 2 * h + k) % 3) for i in range(N))) for k in range(K)]
    Ahat = sympy.Matrix.hstack(*[g * Cs[k] * al[:, k] for k in range(K)])       # (35), w = gamma alpha
    loss = sympy.expand(_exact_loss(rz, Ahat))
    A = _exact_A(rz)
    findings = [dimension_finding(ctx, ["grad_alpha_k"]), _check_zbar(rz)]
    bad, why = None, ""
    for k in range(K):
        derived = sympy.Matrix([sympy.diff(loss, al[h, k]) for h in range(H)])
        vals = {"gamma": g, "K": K, "N": N, "H": H, "B_k": rz.Zbar * Cs[k], "Zbar": rz.Zbar,
                "delta_k": Ahat[:, k] - A[:, k]}
        val, why = _safe_exact(F["grad_alpha_k"], vals)
        if val is None:
            break
        val = sympy.Matrix(val) if isinstance(val, sympy.MatrixBase) else sympy.Matrix([val])
        diff = (val - derived).applyfunc(sympy.expand) if val.shape == derived.shape else None
        if diff is None or diff != sympy.zeros(H, 1):
            bad = {"token": k + 1, "paper": [str(x) for x in val], "derived": [str(x) for x in derived]}
            break
    if why:
        findings.append(Finding("gradient_identity", None, reason=f"cannot evaluate: {why}"))
    else:
        findings.append(Finding("gradient_identity", bad is None, {"tokens": K, "heads": H}, bad,
                                "" if bad is None else "(45) differs from the derivative of the derived loss"))
    steps = [step("Loss", r"\ell(\xi) = \frac1K\sum_k\Big(\tfrac12 \hat a_k^\top G\hat a_k - \hat a_k^\top b_k"
                  r" + \tfrac12 c_k\Big),\ \hat a_k = \gamma C_k\alpha_k",
                  "the derived population loss (9) as a quadratic in each column of Ahat (eq. (35)), "
                  "on a rational instance (N = 2, m = 3, tau = 3) whose Zbar is rational."),
             step("Derivative", r"\partial\ell/\partial\alpha_{h,k}",
                  "by sympy, with gamma and every alpha_hk symbols, compared exactly with (45) at "
                  "B_k = Zbar C_k (13), delta_k = Ahat_k - A_{:,k}.")]
    return combine(findings, {"instance": inst.as_dict(), "tau": str(rz.tau)}, steps=steps)


def eq45_numeric(ctx: Context) -> TierResult:
    F = ctx.formulas
    inst = _grad_instance(ctx)
    dyn = dynamics(inst)
    gen = torch.Generator().manual_seed(ctx.seed_for("eq45"))
    worst, bad, why = 0.0, None, ""
    Zbar = dyn.Zbar
    for gamma, i, Q, w, alpha in _gamma_points(inst, gen):
        _, _, ga = _grads_xi(dyn, Q, alpha, gamma)
        with torch.no_grad():
            B = dyn.B(Q).numpy()                                   # (K, N, H)
            delta = (dyn.Ahat(Q, w) - dyn.A).numpy()
        for k in range(inst.K):
            try:
                val = np.asarray(float_value(F["grad_alpha_k"], {
                    "gamma": gamma, "K": inst.K, "N": inst.N, "H": inst.H, "B_k": B[k],
                    "Zbar": Zbar, "delta_k": delta[:, [k]]})).reshape(-1)
                if val.shape != (inst.H,):
                    raise ValueError(f"the formula has {val.size} entries, alpha_k has {inst.H}")
            except Exception as exc:  # an ill-typed formula
                why = f"{type(exc).__name__}: {exc}"
                break
            rel = _relative(val, ga[:, k].numpy())
            if worse(rel, worst, TOL):  # a NaN is kept: undecided, never a pass
                worst, bad = rel, {"gamma": gamma, "point": i, "token": k + 1, "paper": val.tolist(),
                                   "autograd": ga[:, k].tolist()}
        if why:
            break
    return combine([_float_finding("autograd", worst, bad, why, inst, "(45)", ctx.seed)],
                   {"instance": inst.as_dict(), "gammas": list(GAMMAS)})


EQ45 = Claim(
    id="yang2024.eq45",
    title="Gradient in α_k: ∂ℓ/∂α_k = (γ/K) B_kᵀ Z̄ δ_k (eq. (45))",
    paper=PAPER,
    statement=(r"$\frac{\partial\ell(\xi)}{\partial\alpha_k}=\frac\gamma K(\bar ZC_k)^\top\bar Z\delta_k^\theta="
               r"\frac\gamma K B_k^\top\bar Z\delta_k^\theta$ for every $k\in[K]$."),
    assumptions=("l(xi) = L(theta) with w_h = gamma alpha_h (Lemma 6)",
                 "delta_k = Ahat_k - A_{:,k} ((33) with Z^T z_k; A of (34))"),
    formulas=EQ45_FORMULAS,
    checks={"symbolic": eq45_symbolic, "numeric": small_threads(eq45_numeric)},
    setting=SETTING,
)


# ==============================================================================================
# Eqs. (56) and (82): d l / d Q_h = (gamma / K) sum_k sum_j (Zbar delta_k)^T zbar_j G^{h,jk}
# ==============================================================================================
TERM_82 = "gamma/K*trace((Zbar*delta_k).T*zbar_j)*alpha_hk*s_jk*(v_j*OneMatrix(1, N) - V)*s_k*v_k.T"
TERM_56 = "gamma/K*trace((Zbar*delta_k).T*z_j)*alpha_hk*s_jk*(v_j*OneMatrix(1, N) - V)*s_k*v_k.T"
_TERM_SYMS = (_gam, _K, _N, _d, _Zbar, _dk, _ahk, _sjk, _vj, _V, _sk, _vk)
ELL_TEXT = "trace(Transpose(Zbar*(Ahat - A))*Zbar*(Ahat - A))/(2*K)"


def _term_formula(name: str, text: str, equation: str, extra: tuple) -> NamedFormula:
    return NamedFormula(name, text, _TERM_SYMS + extra, equation=equation, shape=("d", "d"),
                        description="the (k, j) term of d l / d Q_h: (gamma/K) (Zbar delta_k)^T x_j "
                                    "alpha_hk s_jk^h sum_i s_ik^h (v_j - v_i) v_k^T, the sum over i "
                                    "written as (v_j 1^T - V) s_k^h, the scalar (Zbar delta_k)^T x_j as "
                                    "a trace")


EQ82_FORMULAS = (
    _term_formula("grad_Q_term", TERM_82, "(82)", (_zbj,)),
    NamedFormula("ell", ELL_TEXT, (_K, _N, _Zbar, _Ahat, _A, _Lst), equation="App. D.5, before (82)",
                 description="l(xi) = L(theta) = (1/2K) sum_k ||Zbar delta_k||^2, the sum written as "
                             "||Zbar (Ahat - A)||_F^2 (delta_k = Ahat_k - A_{:,k})"),
)
EQ56_FORMULAS = (_term_formula("grad_Q_term", TERM_56, "(56)", (_m, _zj, _zbj)),)


def _term_values(gamma, K, N, d, Zbar, delta_k, alpha_hk, s_jk, V, s_k, v_k, j, z_j) -> dict:
    return {"gamma": gamma, "K": K, "N": N, "d": d, "m": z_j.shape[0], "Zbar": Zbar, "delta_k": delta_k,
            "alpha_hk": alpha_hk, "s_jk": s_jk, "v_j": V[:, j:j + 1] if not isinstance(V, sympy.MatrixBase)
            else V[:, j], "V": V, "s_k": s_k, "v_k": v_k,
            "zbar_j": Zbar[:, j:j + 1] if not isinstance(Zbar, sympy.MatrixBase) else Zbar[:, j], "z_j": z_j}


def _sum_terms(F, exact: bool, gamma, K: int, N: int, d: int, Zbar, Delta, alpha, S, V, V_all, Z, h: int):
    """sum_k sum_j of the formula's (k, j) term for head h, or (None, why)."""
    total = None
    for k in range(K):
        s_k = S[h][:, k] if exact else S[h][:, [k]]
        for j in range(N):
            vals = _term_values(gamma, K, N, d, Zbar, Delta[:, k] if exact else Delta[:, [k]],
                                alpha[h, k], s_k[j] if exact else float(s_k[j, 0]), V, s_k,
                                V_all[:, k] if exact else V_all[:, [k]], j, Z[:, j] if exact else Z[:, [j]])
            if exact:
                val, why = _safe_exact(F["grad_Q_term"], vals)
                if val is None:
                    return None, why
                val = sympy.Matrix(val)
            else:
                try:
                    val = np.asarray(float_value(F["grad_Q_term"], vals))
                except Exception as exc:  # an ill-typed formula
                    return None, f"{type(exc).__name__}: {exc}"
            if val.shape != (d, d):
                return None, f"the term is {val.shape[0]}x{val.shape[1]}, Q_h is {d}x{d}"
            total = val if total is None else total + val
    return total, ""


def _derived_gradQ(rz: RationalZbar, Qs: list, point: dict, w: sympy.Matrix, g, h: int,
                    digits: int = 60) -> sympy.Matrix:
    """d l / d Q_h at ``point`` by the chain rule through Ahat: d L / d a_k from the derived quadratic
    (sympy's gradient of L_k), d a_k / d Q_h = w_hk d s_k^h / d Q_h (sympy's derivative of the
    softmax entries); with w = gamma alpha, d l / d Q_h = d L / d Q_h.  Evaluated at ``digits``."""
    inst = rz.inst
    V = rz.V_all[:, :inst.N]
    d = Qs[h].shape[0]
    S0 = [Sh.evalf(digits, subs=point) for Sh in attention_weights(V, rz.V_all, Qs)]
    Ahat0 = coefficient_matrix(S0, w)
    a = sympy.Matrix(sympy.symbols(f"a0:{inst.N}"))
    G, B, c = exact_quadratic(rz.inst, rz.tau)
    out = sympy.zeros(d, d)
    for k in range(inst.K):
        Lk = token_loss(G, B, c, a, k)
        dL = sympy.Matrix([sympy.diff(Lk, x) for x in a]).subs(dict(zip(a, Ahat0[:, k]))) / inst.K
        s = softmax_columns(V.T * Qs[h] * rz.V_all[:, k])
        for p in range(d):
            for q in range(d):
                ds = sympy.Matrix([sympy.diff(x, Qs[h][p, q]).evalf(digits, subs=point) for x in s])
                out[p, q] += w[h, k] * (dL.T * ds)[0, 0]
    return out.applyfunc(lambda x: sympy.N(x, digits))


def _gradQ_symbolic(ctx: Context, claim: str) -> TierResult:
    F = ctx.formulas
    rz = rational_zbar()
    inst = rz.inst
    N, K, H, d = inst.N, inst.K, 2, 2
    Qs = [sympy.Matrix(d, d, lambda i, j, h=h: sympy.Symbol(f"q{h}_{i}{j}")) for h in range(H)]
    w = sympy.Matrix(H, K, lambda h, k: sympy.Rational((3 * h + 2 * k) % 5 - 2, 2))
    g = sympy.Rational(3, 2)
    V = rz.V_all[:, :N]
    point = {s: sympy.Rational((7 * i) % 5 - 2, 3) for i, s in enumerate(sorted(
        set().union(*[Q.free_symbols for Q in Qs]), key=str))}
    S0 = [Sh.evalf(60, subs=point) for Sh in attention_weights(V, rz.V_all, Qs)]  # s_k^h, (28)
    Delta = coefficient_matrix(S0, w) - _exact_A(rz)                       # delta_k, (35) - (34)
    findings = [dimension_finding(ctx, ["grad_Q_term"] + (["ell"] if claim == "eq82" else [])),
                _check_zbar(rz)]
    worst, bad, why = 0.0, None, ""
    for h in range(H):
        derived = _derived_gradQ(rz, Qs, point, w, g, h)
        total, why = _sum_terms(F, True, g, K, N, d, rz.Zbar, Delta, w / g, S0, V, rz.V_all, rz.inst.Z, h)
        if total is None:
            break
        total = total.applyfunc(lambda x: sympy.N(x, 60))
        scale = max(abs(x) for x in derived)
        rel = float(max(abs(x) for x in (total - derived)) / scale)
        if rel > worst:
            worst, bad = rel, {"head": h + 1, "paper_entry_00": str(sympy.N(total[0, 0], 20)),
                               "derived_entry_00": str(sympy.N(derived[0, 0], 20))}
    if why:
        findings.append(Finding("gradient_identity", None, reason=f"cannot evaluate: {why}"))
    else:
        ok = worst <= 1e-40
        findings.append(Finding("gradient_identity", ok, {"max_relative_difference_60_digits": worst,
                                                          "heads": H, "gamma": str(g)},
                                None if ok else {"instance": inst.as_dict(), **bad},
                                "" if ok else f"({claim[2:]}) differs from the derivative of the derived loss"))
    if claim == "eq82":
        findings.append(_ell_exact(F, rz))
    steps = [step("Loss", r"\ell(\xi) = \mathcal L(\theta),\ \hat A = \big(\textstyle\sum_h w_{h,k}s_k^h\big)_k",
                  "the derived loss (9) on a rational instance (N = 2, m = 3, K = 4, d = 2, tau = 3, "
                  "rational Zbar), H = 2 heads, Q_h symbols."),
             step("Derivative", r"\frac{\partial\ell}{\partial Q_h} = \sum_k w_{h,k}\Big(\frac{\partial s_k^h}"
                  r"{\partial Q_h}\Big)^\top\nabla_{\hat a_k}\mathcal L",
                  "the chain rule through Ahat (w = gamma alpha): sympy's gradient of the derived L_k and "
                  "sympy's derivative of the softmax entries, at a rational Q (exponentials of "
                  "rationals, 60 digits), against the formula's terms summed over k and j.")]
    return combine(findings, {"instance": inst.as_dict(), "tau": str(rz.tau)}, steps=steps)


def _ell_exact(F, rz: RationalZbar) -> Finding:
    """The display before (82): l(xi) = (1/2K) sum_k ||Zbar delta_k||^2, against the derived loss
    at a symbolic Ahat (exact polynomials)."""
    inst = rz.inst
    Ahat = sympy.Matrix(inst.N, inst.K, lambda i, k: sympy.Symbol(f"a_{i}{k}"))
    A = _exact_A(rz)
    L_min = sympy.expand(_exact_loss(rz, A))                 # the derived inf of the loss (at Ahat = A)
    val, why = _safe_exact(F["ell"], {"K": inst.K, "N": inst.N, "Zbar": rz.Zbar, "Ahat": Ahat, "A": A,
                                      "L_star": L_min})
    if val is None:
        return Finding("ell_is_the_loss", None, reason=f"cannot evaluate: {why}")
    derived = sympy.expand(_exact_loss(rz, Ahat))
    diff = sympy.expand(sympy.sympify(val) - derived)
    ok = diff == 0
    return Finding("ell_is_the_loss", ok, {"identity": "exact in the entries of Ahat",
                                           "derived_min_loss": str(L_min)},
        None if ok else {"instance": inst.as_dict(), "paper_minus_derived_loss": str(diff),
                         "derived_min_loss": str(L_min)},
        "" if ok else "the display is not l(xi) = L(theta): it differs from the derived loss by a constant"
        if not diff.free_symbols else "the display is not the derived loss")


def _gradQ_numeric(ctx: Context, claim: str) -> TierResult:
    F = ctx.formulas
    inst = _grad_instance(ctx)
    dyn = dynamics(inst)
    gen = torch.Generator().manual_seed(ctx.seed_for(claim))
    worst, bad, why = 0.0, None, ""
    Z = inst.dictionary.Z.numpy()
    V, V_all = inst.dictionary.V.numpy(), inst.dictionary.V_all.numpy()
    for gamma, i, Q, w, alpha in _gamma_points(inst, gen):
        _, gQ, _ = _grads_xi(dyn, Q, alpha, gamma)
        with torch.no_grad():
            S = attention_weights(dyn.V, dyn.V_all, Q).numpy()
            Delta = (dyn.Ahat(Q, w) - dyn.A).numpy()
        for h in range(inst.H):
            total, why = _sum_terms(F, False, gamma, inst.K, inst.N, inst.d, dyn.Zbar, Delta,
                                    alpha.numpy(), S, V, V_all, Z, h)
            if total is None:
                break
            rel = _relative(total, gQ[h].numpy())
            if worse(rel, worst, TOL):  # a NaN is kept: undecided, never a pass
                worst, bad = rel, {"gamma": gamma, "point": i, "head": h + 1, "paper": total.tolist(),
                                   "autograd": gQ[h].tolist()}
        if why:
            break
    findings = [_float_finding("autograd", worst, bad, why, inst, f"({claim[2:]})", ctx.seed)]
    if claim == "eq82":
        findings.append(_ell_numeric(ctx, F, inst, dyn, gen))
    return combine(findings, {"instance": inst.as_dict(), "gammas": list(GAMMAS)})


def _ell_numeric(ctx: Context, F, inst: Instance, dyn: Dynamics, gen: torch.Generator) -> Finding:
    worst, bad = 0.0, None
    for i, (Q, w) in enumerate(_points(inst, gen)):
        with torch.no_grad():
            Ah = dyn.Ahat(Q, w).numpy()
        derived = dyn.fq.loss(Ah)
        try:
            val = float_scalar(F["ell"], {"K": inst.K, "N": inst.N, "Zbar": dyn.Zbar, "Ahat": Ah, "A": dyn.fq.A,
                                          "L_star": dyn.fq.L_star})
        except Exception as exc:  # an ill-typed formula
            return error_finding("ell_is_the_loss", exc)
        rel = abs(val - derived) / abs(derived)
        if worse(rel, worst, TOL):  # a NaN is kept: undecided, never a pass
            worst, bad = rel, {"point": i, "paper": val, "derived_loss": derived, "L_star": dyn.fq.L_star}
    ok, undecided = settle_le(worst, TOL)
    return Finding("ell_is_the_loss", ok, {"max_relative_difference": worst, "tolerance": TOL},
                   None if ok is not False else {"instance": inst.as_dict(), **bad, "seed": ctx.seed},
                   undecided or ("" if ok else "the display differs from the derived loss L(theta)"))


EQ82 = Claim(
    id="yang2024.eq82",
    title="Gradient in Q_h (eq. (82)) and the loss it differentiates",
    paper=PAPER,
    statement=(r"$\ell(\xi)=\mathcal L(\theta)=\frac1{2K}\sum_k\|\bar Z\delta_k\|_2^2$ and "
               r"$\frac{\partial\ell}{\partial Q_h}=\frac\gamma K\sum_{k}\sum_{j}(\bar Z\delta_k)^\top"
               r"\bar z_j\,\alpha_{h,k}s^h_{jk}\sum_i s^h_{ik}(v_j-v_i)v_k^\top$."),
    assumptions=("l(xi) = L(theta) with w_h = gamma alpha_h (Lemma 6)",
                 "zbar_j the j-th column of Zbar (12); delta_k = Ahat_k - A_{:,k}"),
    formulas=EQ82_FORMULAS,
    checks={"symbolic": lambda ctx: _gradQ_symbolic(ctx, "eq82"),
            "numeric": small_threads(lambda ctx: _gradQ_numeric(ctx, "eq82"))},
    setting=SETTING,
    correction=Correction(
        description="l(xi) = (1/2K) sum_k ||Zbar delta_k||^2 + L*",
        reason="by (36) the loss is the sum plus the constant L* (the minimum of the loss), which "
               "the display drops; the gradient (82) is unaffected",
        formulas={"ell": ELL_TEXT + " + L_star"}),
)

EQ56 = Claim(
    id="yang2024.eq56",
    title="Gradient in Q_h as Lemma 10's proof writes it (eq. (56))",
    paper=PAPER,
    statement=(r"$\frac{\partial\ell}{\partial Q_h}=\frac\gamma K\sum_{k}\sum_{j}(\bar Z\delta_k)^\top"
               r" z_j\,\alpha_{h,k}s^h_{jk}\sum_i s^h_{ik}(v_j-v_i)v_k^\top$ (by (82))."),
    assumptions=("l(xi) = L(theta) with w_h = gamma alpha_h (Lemma 6)", "z_j = f(v_j) in R^m"),
    formulas=EQ56_FORMULAS,
    checks={"symbolic": lambda ctx: _gradQ_symbolic(ctx, "eq56"),
            "numeric": small_threads(lambda ctx: _gradQ_numeric(ctx, "eq56"))},
    setting=SETTING,
    correction=Correction(
        description="zbar_j (the j-th column of Zbar) for z_j, as in (82)",
        reason="(Zbar delta_k)^T is 1 x N and z_j = f(v_j) is in R^m: the product is defined only "
               "when m = N, and even then it is not the gradient; (82), which (56) cites, has zbar_j",
        formulas={"grad_Q_term": TERM_82}),
)
