"""ahn2023 Theorems 4 and 5: the set S (A_i = a_i Sigma^{-1}, B_i = b_i I) essentially contains
critical points: inf over S of the summed squared full-matrix gradient norms is 0 (eqs. (12), (14)).

Symbolic tier.  The loss f of the sparse model (9) or (13) is derived for full matrices A_i, B_i
from the forward pass by the moment kernel (``sparse.full_loss``).  On the named set every letter
is a function of Sigma, so the loss restricted to S, g(a, b), and every full-matrix gradient
grad_{A_i} f, grad_{B_i} f are scalar functions of an eigenvalue lambda of Sigma
(``moments.spectral``); with the paper's set they come out as c_i(a) Sigma and c'_i(a) I, and g
does not depend on Sigma at all (whitening).  T(a, b) = sum_i ||grad_{A_i} f||_F^2 +
||grad_{B_i} f||_F^2 is then an explicit polynomial at the instance's eigenvalues; its infimum
over S is decided at the critical points of g found by Newton's method in mpmath, along the
sequence a* + 10^{-m} (1, ..., 1).

Numeric tier.  At the instance Sigma = U^T D^2 U (D = diag(1, 1, 0.5, 0.25, 1), Secs. 5.3, 6.1),
the derived loss at the named point is compared with Monte Carlo of the real forward pass
(``models.lsa``), and the full-matrix gradient of the sampled loss (autograd through the real
forward pass) is z-tested for zero, Bonferroni over every component.
"""
from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import sympy
import torch

from models.device import cpu_threads, randn
from models.lsa import LSAConfig, LinearTransformer
from moments.letters import space_size
from moments.montecarlo import z_critical
from moments.spectral import LAMBDA, TR, spectral_value
from verify.claim import Claim, Context, TierResult
from verify.evidence import Finding, combine, step
from verify.formulas import FormulaSymbol, NamedFormula, formula_value

from ..kit.linear_icl import LinearICLSetting, SigmaSpec, prompt_law
from . import sparse
from .one_layer import PAPER

MU = sympy.Symbol("mu", positive=True)
D_EXPERIMENT = ("1", "1", "1/2", "1/4", "1")  # D of Secs. 5.3 and 6.1; Sigma = U^T D^2 U
DIGITS = 40


def experiment_spectrum() -> tuple:
    return tuple(sympy.Rational(v) ** 2 for v in D_EXPERIMENT)


THM4_SETTING = LinearICLSetting(
    w_prior="sigma_inverse",
    sizes={"quick": {"n": 20, "d": 5, "layers": 2}, "default": {"n": 20, "d": 5, "layers": 3},
           "paper": {"n": 20, "d": 5, "layers": 3}},
)
THM5_SETTING = LinearICLSetting(
    w_prior="sigma_inverse",
    sizes={"quick": {"n": 10, "d": 5, "layers": 2}, "default": {"n": 10, "d": 5, "layers": 2},
           "paper": {"n": 10, "d": 5, "layers": 2}},
)

_SIGMA = FormulaSymbol("Sigma", "matrix", ("d", "d"), symmetric=True)
_D = FormulaSymbol("d")
THM4_FORMULAS = (
    NamedFormula("S_A", "Inverse(Sigma)", (_SIGMA, _D), equation="Thm. 4",
                 description="the direction of A_i in S: A_i = a_i S_A", shape=("d", "d")),
)
THM5_FORMULAS = THM4_FORMULAS[:1] + (
    NamedFormula("S_B", "Identity(d)", (_SIGMA, _D), equation="Thm. 5",
                 description="the direction of B_i in S: B_i = b_i S_B", shape=("d", "d")),
)


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------
def spectral_function(expr) -> sympy.Expr | None:
    """f(lambda) when the formula is f(Sigma) (checked at Sigma = diag(lambda, mu)), else None."""
    val = formula_value(expr, {"Sigma": sympy.diag(LAMBDA, MU), "d": 2})
    m = sympy.Matrix(val) if isinstance(val, sympy.MatrixBase) else None
    if m is None or m.shape != (2, 2):
        return None
    f = sympy.simplify(m[0, 0])
    if sympy.simplify(m[0, 1]) != 0 or sympy.simplify(m[1, 0]) != 0:
        return None
    if sympy.simplify(m[1, 1] - f.subs(LAMBDA, MU)) != 0 or f.has(MU):
        return None
    return f


def _power_trace(e: int) -> sympy.Expr:
    if e == 0:
        return space_size("d")
    return sympy.Symbol(f"p{e}", positive=True) if e > 0 else sympy.Symbol(f"pinv{-e}",
                                                                           positive=True)


def resolve_traces(expr: sympy.Expr) -> sympy.Expr:
    """tr f(Sigma) for f a Laurent polynomial in lambda (scalar coefficients such as a_i) as
    sum_k c_k tr Sigma^k: p_k = tr Sigma^k, pinv_k = tr Sigma^{-k}, tr I = d."""
    def expand_tr(f):
        total = 0
        for term in sympy.Add.make_args(sympy.expand(f)):
            c, e = term.as_coeff_exponent(LAMBDA)
            if c.has(LAMBDA) or not e.is_Integer:
                return TR(f)
            total += c * _power_trace(int(e))
        return total
    return expr.replace(lambda e: getattr(e, "func", None) == TR, lambda e: expand_tr(e.args[0]))


def _is_trace_symbol(s) -> bool:
    name = s.name
    return (name[:1] == "p" and name[1:].isdigit()) or (name[:4] == "pinv" and name[4:].isdigit())


def at_eigenvalues(expr: sympy.Expr, eigs, n: int) -> sympy.Expr:
    """Replace tr f(Sigma) by sum_e f(lambda_e), p_k by sum_e lambda_e^k, d and n by numbers."""
    d = len(eigs)
    expr = expr.replace(lambda e: getattr(e, "func", None) == TR,
                        lambda e: sum(e.args[0].subs(LAMBDA, v) for v in eigs))
    subs = {s: sum(v ** (int(s.name[1:]) if s.name[1:].isdigit() else -int(s.name[4:]))
                   for v in eigs) for s in expr.free_symbols if _is_trace_symbol(s)}
    subs.update({space_size("d"): d, sparse.d_sym: d, space_size("n"): n, sparse.n_sym: n})
    return sympy.expand(expr.xreplace(subs))


def monomial(f: sympy.Expr):
    """(c, k) when f(lambda) = c lambda^k with c free of lambda, else None."""
    c, e = sympy.expand(f).as_coeff_exponent(LAMBDA)
    return (c, int(e)) if (e.is_Integer and not c.has(LAMBDA)) else None


def fast_spectral(poly, funcs: dict) -> sympy.Expr:
    """``spectral_value`` for letters that are monomials c lambda^k (the sets S of Thms. 4, 5):
    a word is a monomial, a trace of it c p_k; one Add at the end instead of one per term.
    Traces resolved as in ``resolve_traces``.  Falls back to ``spectral_value`` otherwise."""
    from moments.letters import FREE_LEFT, FREE_RIGHT

    monos = {k: monomial(v) for k, v in funcs.items()}
    if any(m is None for m in monos.values()):
        return resolve_traces(spectral_value(poly, funcs))
    acc: dict = {}
    for (cycles, chains), coeff in poly.terms.items():
        key = sympy.Integer(1)
        for w in cycles:
            c, e = sympy.Integer(1), 0
            for name, _ in w:
                mc, me = monos[name]
                c, e = c * mc, e + me
            key = key * c * _power_trace(e)
        for w in chains:
            c, e = sympy.Integer(1), 0
            for name, _ in w:
                if name in (FREE_LEFT, FREE_RIGHT):
                    continue
                mc, me = monos[name]
                c, e = c * mc, e + me
            key = key * c * LAMBDA ** e
        acc.setdefault(key, []).append(coeff)
    # monomials first, coefficients (rational in n, d) summed per monomial: no giant expand
    return sympy.Add(*[k * sympy.Add(*v) for k, v in acc.items()])


def _letter_functions(layers: int, model: str, fA, fB) -> dict:
    funcs = {"Sigma": LAMBDA, "Sigma_inv": 1 / LAMBDA}
    for i in range(layers):
        funcs[f"A_{i}"] = sparse.a_sym(i) * fA
        if model == "eq13":
            funcs[f"B_{i}"] = sparse.b_sym(i) * fB
    return funcs


def _gradient_letters(layers: int, model: str) -> list[str]:
    out = [f"A_{i}" for i in range(layers)]
    if model == "eq13":
        out += [f"B_{i}" for i in range(layers)]
    return out


def _mp(x):
    return mpmath.mpf(x.p) / x.q if isinstance(x, sympy.Rational) else mpmath.mpf(str(x))


# ------------------------------------------------------------------------------------------------
# symbolic tier (Theorems 4 and 5)
# ------------------------------------------------------------------------------------------------
def inf_gradient_symbolic(ctx: Context, model: str, setting: LinearICLSetting) -> TierResult:
    F = ctx.formulas
    sizes = setting.sizes[ctx.budget.name]
    layers, n = int(ctx.sizes.get("layers", sizes["layers"])), int(ctx.sizes.get("n", sizes["n"]))
    eigs = experiment_spectrum()
    if ctx.sigma is not None and ctx.sigma.kind in ("diag", "rotated"):
        eigs = tuple(sympy.Rational(v.numerator, v.denominator) for v in ctx.sigma.values)
    fA = spectral_function(F["S_A"])
    fB = spectral_function(F["S_B"]) if model == "eq13" else None
    if fA is None or (model == "eq13" and fB is None):
        return combine([Finding("set_is_spectral", None, {"S_A": ctx.formula_texts["S_A"]},
                                reason="the named set is not a function of Sigma; the "
                                       "spectral reduction does not apply")])
    xs = sparse.variables(layers, model)
    mA, mB = monomial(fA), (monomial(fB) if fB is not None else (1, 0))
    if mA is not None and mB is not None:
        # the set is c Sigma^k: loss and gradients on the set by first-order perturbation
        L, G_on_set = sparse.loss_and_gradients_on_set(layers, model, mA, mB)
        funcs = {"Sigma": LAMBDA, "Sigma_inv": 1 / LAMBDA}
        g_sym = fast_spectral(L, funcs)
        grads = {name: (fast_spectral(G, funcs) if G is not None else sympy.Integer(0))
                 for name, G in G_on_set.items()}
    else:
        L = sparse.full_loss(layers, model)
        funcs = _letter_functions(layers, model, fA, fB)
        g_sym = fast_spectral(L, funcs)
        grads = {name: fast_spectral(L.diff(name), funcs)
                 for name in _gradient_letters(layers, model)}
    whitened = not (g_sym.has(LAMBDA) or g_sym.atoms(TR)
                    or any(_is_trace_symbol(s) for s in g_sym.free_symbols))
    # the mechanism of App. B.2/B.3: grad_{A_i} f = c_i Sigma, grad_{B_i} f = c'_i I with
    # c_i d = dg/da_i and c'_i d = dg/db_i (informational: the decision is on T below)
    form = {}
    d_num = len(eigs)
    sizes = {space_size("d"): d_num, sparse.d_sym: d_num, space_size("n"): n, sparse.n_sym: n}
    g_n = sympy.expand(g_sym.xreplace(sizes))
    for name, G in grads.items():
        kind, idx = name.split("_")
        var = (sparse.a_sym if kind == "A" else sparse.b_sym)(int(idx))
        basis = LAMBDA if kind == "A" else sympy.Integer(1)
        c = sympy.expand(G.xreplace(sizes) / basis)
        const = not (c.has(LAMBDA) or any(_is_trace_symbol(s_) for s_ in c.free_symbols))
        form[name] = {"gradient_over_" + ("Sigma" if kind == "A" else "I"): _short(c, 300),
                      "constant_in_Sigma": const,
                      f"d*c = dg/d{var} (at n = {n}, d = {d_num})":
                          (sympy.expand(c * d_num - sympy.diff(g_n, var)) == 0
                           if const and var in xs else None)}
    # T(a, b) at the instance's eigenvalues, exact rational coefficients
    g = at_eigenvalues(g_sym, eigs, n)
    T = sympy.expand(sum(_frob2(G, eigs, n) for G in grads.values()))
    rng = ctx.rng("thm-starts")
    starts = np.array([np.full(len(xs), -0.5)] + [rng.standard_normal(len(xs)) * 0.7
                                                  for _ in range(5)])
    cp = sparse.minimise(g, xs, starts, digits=DIGITS)
    findings = []
    evidence = {"layers": layers, "n": n, "eigenvalues": [str(e) for e in eigs],
                "restricted_loss_is_whitened": bool(whitened),
                "restricted_loss": _short(g_sym), "restricted_loss_at_n_d": _short(g_n), "gradient_form": form,
                "digits": DIGITS}
    if cp is None:
        findings.append(Finding("infimum_of_gradient_norms", None, evidence,
                                reason="no critical point of g found in reach"))
        return combine(findings, steps=_steps(L, g_sym, grads, layers, model, ctx))
    with mpmath.workdps(2 * DIGITS + 20):
        T_f = sympy.lambdify(xs, T, "mpmath")
        a_star = [mpmath.mpf(v) for v in cp.point]
        T0 = T_f(*[mpmath.mpf(0)] * len(xs))
        T_star = T_f(*a_star)
        seq = [{"m": m, "T": mpmath.nstr(T_f(*[v + mpmath.mpf(10) ** (-m) for v in a_star]), 8)}
               for m in range(1, 9)]
        scale = max(abs(T0), mpmath.mpf(1))
        ok = abs(T_star) <= scale * mpmath.mpf(10) ** (-DIGITS)
        evidence.update({
            "critical_point_of_g": [mpmath.nstr(v, 20) for v in a_star], "variables": [str(x) for x in xs],
            "g_at_critical_point": mpmath.nstr(cp.value, 20),
            "|grad g| at critical point": mpmath.nstr(cp.grad_norm, 5),
            "hessian_eigenvalues_of_g": [mpmath.nstr(e, 8) for e in cp.hessian_eigenvalues],
            "T_at_0": mpmath.nstr(T0, 10), "T_at_critical_point": mpmath.nstr(T_star, 5),
            "sequence_a*+10^-m": seq,
            "decision": f"inf T = 0 when T(a*) <= max(T(0), 1) * 10^-{DIGITS} (Newton in "
                        f"{2 * DIGITS + 20}-digit arithmetic)"})
        ce = None
        if not ok:
            # the positive lower bound: minimise T itself over the set (numerical, multi-start)
            low = sparse.minimise(T, xs, np.vstack([cp.floats()[None], starts]), digits=20)
            bound = mpmath.nstr(low.value, 10) if low is not None else "not found"
            evidence["numerical_minimum_of_T"] = bound
            evidence["minimiser_of_T"] = None if low is None else [mpmath.nstr(v, 12) for v in low.point]
            ce = {"n": n, "layers": layers, "eigenvalues": [str(e) for e in eigs],
                  "point": [mpmath.nstr(v, 15) for v in a_star], "T_at_point": mpmath.nstr(T_star, 10),
                  "T_numerical_minimum_over_S": bound,
                  "note": "T > 0 at the critical point of g; the minimum of T over S is a "
                          "numerical multi-start minimum, not a certified bound"}
    findings.append(Finding("infimum_of_gradient_norms", bool(ok), evidence, ce,
                            "" if ok else "the full-matrix gradient does not vanish on S"))
    return combine(findings, steps=_steps(L, g_sym, grads, layers, model, ctx))


def _short(expr, limit: int = 2000) -> str:
    """The expression as text, or, where printing it would be slow or long, how many terms it
    has (the derivation steps carry it in full); never cut in the middle."""
    terms = len(sympy.Add.make_args(expr))
    if terms > 60:
        return f"{terms} terms (in full in the derivation)"
    text = str(expr)
    return text if len(text) <= limit else f"{terms} terms (in full in the derivation)"


def _frob2(G: sympy.Expr, eigs, n: int) -> sympy.Expr:
    """||G(Sigma)||_F^2 = sum_e G(lambda_e)^2 for a spectral function G (with traces resolved)."""
    Ge = at_eigenvalues(G, eigs, n)
    return sympy.expand(sum(Ge.subs(LAMBDA, v) ** 2 for v in eigs))


def _steps(L, g_sym, grads, layers, model, ctx) -> list:
    name = "(9)" if model == "eq9" else "(13)"
    sel = list(grads.items())[:2]
    return [
        step("Forward pass", "", f"{layers} layers of eq. {name} run by models.lsa.lsa_forward on "
             "the symbolic prompt Z_0 = [[X, x_q], [w*^T X, 0]], x ~ N(0, Sigma), "
             "w* ~ N(0, Sigma^{-1}); full letters A_i (symmetric)" +
             (" and B_i" if model == "eq13" else "") + "."),
        step("Population loss and gradients", "", f"E[e^2] by Isserlis ({len(L.terms)} trace "
             "monomials, exact in n and d); on a set A_i = a_i c Sigma^k the gradient in A_j is "
             "d/dR E[2 e_0 e_1] with e_1 the first-order change of the error along a free "
             "direction letter R (full matrices: the letter derivative of the full loss)."),
        step("Restriction to S", r"g = " + sympy.latex(g_sym) if len(g_sym.args) < 40 else "",
             f"A_i = a_i S_A(Sigma) = {ctx.formula_texts['S_A']}" +
             (f", B_i = b_i S_B(Sigma) = {ctx.formula_texts['S_B']}" if model == "eq13" else "") +
             ": every letter is a function of Sigma, so each word is a function of an "
             "eigenvalue lambda (moments.spectral); when g has no lambda and no tr Sigma^j the "
             "whitening x -> Sigma^{-1/2} x reduces S to a_i I at Sigma = I."),
        *[step(f"Full gradient in {nm}", r"\nabla_{" + nm + "} f = " + sympy.latex(G)
            if len(G.args) < 30 else "",
            "The letter derivative of the derived loss, evaluated on S as a function of Sigma "
            "(symmetrised for the symmetric A_i).") for nm, G in sel],
        step("Infimum over S", r"T(a) = \sum_i \|\nabla_{A_i} f\|_F^2" +
             (r" + \|\nabla_{B_i} f\|_F^2" if model == "eq13" else ""),
             "T at the instance's eigenvalues is an explicit polynomial; g is minimised "
             "(BFGS, then Newton in mpmath) and T is evaluated at the critical point and along "
             "a* + 10^{-m}(1, ..., 1)."),
    ]


def thm4_symbolic(ctx: Context) -> TierResult:
    return inf_gradient_symbolic(ctx, "eq9", THM4_SETTING)


def thm5_symbolic(ctx: Context) -> TierResult:
    return inf_gradient_symbolic(ctx, "eq13", THM5_SETTING)


# ------------------------------------------------------------------------------------------------
# numeric tier: derived loss vs Monte Carlo, and the Monte Carlo gradient at the named point
# ------------------------------------------------------------------------------------------------
def experiment_instance(ctx: Context, setting: LinearICLSetting, tag: str = "instance"):
    """Sigma = U^T D^2 U with an exact rational rotation U (Cayley), unless --sigma is given."""
    spec = ctx.sigma or SigmaSpec("rotated", tuple(Fraction(str(v)) for v in experiment_spectrum()))
    return setting.instance(ctx.budget.name, ctx.sizes, spec, ctx.rng(tag))


def named_point(F, inst, a, b=None) -> tuple[list, list | None]:
    """A_i = a_i S_A(Sigma), B_i = b_i S_B(Sigma) as float64 arrays at the instance."""
    vals = {"Sigma": inst.sigma_exact, "d": inst.d}
    SA = np.array(sympy.Matrix(formula_value(F["S_A"], vals)).evalf(), dtype=float)
    As = [float(ai) * SA for ai in a]
    Bs = None
    if b is not None:
        SB = np.array(sympy.Matrix(formula_value(F["S_B"], vals)).evalf(), dtype=float)
        Bs = [float(bi) * SB for bi in b]
    return As, Bs


def _model(inst, layers: int, model: str, As, Bs) -> LinearTransformer:
    m = LinearTransformer(LSAConfig(d=inst.d, layers=layers, parametrisation=model))
    with torch.no_grad():
        m.A.copy_(torch.tensor(np.array(As)))
        if model == "eq13":
            m.B.copy_(torch.tensor(np.array(Bs)))
    return m


def conditional_loss(model: LinearTransformer, X: torch.Tensor, Lx: torch.Tensor,
                     Lw: torch.Tensor) -> torch.Tensor:
    """E[e^2 | X] for each sampled X (B, d, n), through the real forward pass.

    Given the in-context covariates X the error e is bilinear in (w*, x_q) (the masked query
    column never feeds back), so E[e^2 | X] = sum_{j,k} e(w* = Lw e_j, x_q = Lx e_k)^2 with
    Cov w* = Lw Lw^T, Cov x_q = Lx Lx^T: d^2 forward passes per X instead of sampled w*, x_q
    (Rao-Blackwellisation; the high-degree error otherwise has a heavy right tail)."""
    from models.sampler import Prompts

    B, d, n = X.shape
    Xr = X.repeat_interleave(d * d, 0)
    idx = torch.arange(d * d)
    w = Lw.T[idx // d].repeat(B, 1)
    xq = Lx.T[idx % d].repeat(B, 1)
    y = torch.einsum("bdn,bd->bn", Xr, w)
    yq = torch.einsum("bd,bd->b", xq, w)
    pr = Prompts(Xr, xq, w, y, yq)
    e2 = (model.predict(pr.Z()) - yq) ** 2
    return e2.reshape(B, d * d).sum(1)


def mc_loss_and_gradient(model: LinearTransformer, inst, samples: int, seed: int,
                         chunks: int = 40) -> dict:
    """Mean and standard error of the loss and of its gradient in every weight, over ``chunks``
    independent batches (``samples`` forward passes in all) of ``conditional_loss``."""
    law = prompt_law(inst, "sigma_inverse")
    gen = torch.Generator().manual_seed(seed)
    d = inst.d
    Lx = torch.linalg.cholesky(law.sigma)
    Lw = torch.linalg.cholesky(law.w_cov)
    per = max(2, samples // (chunks * d * d))
    losses, grads = [], []
    params = [p for p in model.parameters()]
    for _ in range(chunks):
        X = Lx @ randn(per, d, inst.n, generator=gen, dtype=torch.float64)
        loss = conditional_loss(model, X, Lx, Lw).mean()
        g = torch.autograd.grad(loss, params)
        losses.append(float(loss.detach()))
        grads.append(torch.cat([x.reshape(-1) for x in g]).numpy())
    losses, grads = np.array(losses), np.array(grads)
    return {"loss_mean": losses.mean(), "loss_se": losses.std(ddof=1) / np.sqrt(chunks),
            "grad_mean": grads.mean(0), "grad_se": grads.std(0, ddof=1) / np.sqrt(chunks),
            "chunks": chunks, "covariate_draws": per * chunks,
            "forward_passes": per * chunks * d * d,
            "method": "E[e^2 | X] exactly over (w*, x_q) by d^2 real forward passes per X"}


def inf_gradient_numeric(ctx: Context, model: str, setting: LinearICLSetting) -> TierResult:
    with cpu_threads(ctx.device):
        return _inf_gradient_numeric(ctx, model, setting)


def _inf_gradient_numeric(ctx: Context, model: str, setting: LinearICLSetting) -> TierResult:
    F = ctx.formulas
    inst = experiment_instance(ctx, setting)
    layers = inst.extra["layers"]
    rng = ctx.rng("numeric-starts")
    m = len(sparse.variables(layers, model))
    starts = [np.full(m, -0.5)] + [rng.standard_normal(m) * 0.7 for _ in range(7)]
    runs = sparse.numeric_optimum(inst.n, inst.d, layers, model, starts)
    best = min(runs, key=lambda r: r["loss"])
    cp = sparse.newton_mp(layers, model, inst.n, inst.d, best["end"], digits=20)
    x = cp.floats()
    a, b = x[:layers], (list(x[layers:]) + [0.0] if model == "eq13" else None)
    As, Bs = named_point(F, inst, a, b)
    net = _model(inst, layers, model, As, Bs)
    mc = mc_loss_and_gradient(net, inst, ctx.budget.mc_samples, ctx.seed_for("mc"))
    level = 0.999
    zc = z_critical(level, 1)
    derived = float(cp.value)
    z_loss = (mc["loss_mean"] - derived) / mc["loss_se"]
    # the conditional error is a polynomial of high degree in X with a heavy right tail: its
    # normal interval confirms but cannot refute (at Sigma = diag(2, 1/2, 1), seed 0 put the
    # mean 4.1 standard errors low, seeds 1-3 within 1.1, the se varying 10x between seeds);
    # a named set that is not the whitened one moves the exact gradient below, which decides
    ok_loss = True if abs(z_loss) <= zc else None
    exact = exact_gradient(F, inst, layers, model, x, As, Bs)
    ok_grad = exact["max_|grad|/(K_eps_grad~)"] <= 1.0
    g_mean, g_se = mc["grad_mean"], mc["grad_se"]
    live = g_se > 0
    z_grad = np.where(live, g_mean / np.where(live, g_se, 1.0), 0.0)
    findings = [
        Finding("derived_loss_vs_monte_carlo", ok_loss,
                {"derived_g": derived, "mc_mean": mc["loss_mean"], "mc_se": mc["loss_se"],
                 "z": z_loss, "z_critical": zc, "level": level,
                 "covariate_draws": mc["covariate_draws"], "method": mc["method"]},
                None, "" if ok_loss else (
                    f"the Monte Carlo loss at the named point is {z_loss:.2g} standard errors "
                    f"from g(a*), but the error's heavy right tail makes the normal interval "
                    f"unreliable: this comparison confirms and cannot refute (the exact "
                    f"gradient decides)")),
        Finding("exact_full_gradient_float64", bool(ok_grad), exact,
                None if ok_grad else {"instance": inst.as_dict(), "point": x.tolist(),
                                      "gradient_norm": exact["gradient_norm"], "seed": ctx.seed},
                "" if ok_grad else "the derived full-matrix gradient is not zero at the named "
                                   "point (beyond float64 rounding)"),
    ]
    extra = {"instance": inst.as_dict(), "layers": layers, "critical_point": x.tolist(),
             "restarts": runs,
             "hessian_eigenvalues_of_g": [float(e) for e in cp.hessian_eigenvalues],
             "monte_carlo_gradient": {
                 "max_abs_z": float(np.abs(z_grad).max()), "components": int(live.sum()),
                 "z_critical_bonferroni": z_critical(level, int(live.sum())),
                 "max_abs_gradient": float(np.abs(g_mean).max()),
                 "note": "evidence only: the error is a polynomial of high degree in X, whose "
                         "heavy right tail makes normal-theory intervals of the gradient "
                         "unreliable at this sample size; the exact gradient decides"}}
    return combine(findings, extra)


def exact_gradient(F, inst, layers: int, model: str, x, As, Bs) -> dict:
    """grad f at the named point from the derived polynomials in float64, each component
    against its rounding scale K eps grad~ (grad~: the same polynomial with |coefficients| at
    |Sigma|, |Sigma^{-1}|, |a|, |b|, as in Theorem 1).  On a set c Sigma^k the gradient
    polynomials of ``sparse.loss_and_gradients_on_set`` are evaluated at the instance's Sigma;
    otherwise autograd of the full-matrix loss."""
    fA = spectral_function(F["S_A"])
    fB = spectral_function(F["S_B"]) if model == "eq13" else sympy.Integer(1)
    mA = monomial(fA) if fA is not None else None
    mB = monomial(fB) if fB is not None else None
    sig = inst.sigma
    env = {"Sigma": sig, "Sigma_inv": np.linalg.inv(sig)}
    env_abs = {k: np.abs(v) for k, v in env.items()}
    scal = {"n": inst.n, **{f"a_{i}": float(x[i]) for i in range(layers)}}
    if model == "eq13":
        scal.update({f"b_{i}": float(x[layers + i]) for i in range(layers - 1)})
        scal[f"b_{layers - 1}"] = 0.0
    if mA is not None and mB is not None:
        _, polys = sparse.loss_and_gradients_on_set(layers, model, mA, mB)
        G, G_mag, K = [], [], 0
        for name, P in polys.items():
            if P is None:
                continue
            P_val, P_mag = _numeric_coefficients(P, scal)
            G.append(np.ravel(np.asarray(P_val.evaluate(env, {}, exact=True), dtype=float)))
            G_mag.append(np.ravel(np.asarray(P_mag.evaluate(env_abs, {}, exact=True),
                                             dtype=float)))
            letters = max((sum(len(w) for w in cyc + ch) for cyc, ch in P.terms), default=0)
            K = max(K, len(P.terms) + letters * inst.d + 2)
        G, G_mag = np.concatenate(G), np.concatenate(G_mag)
        how = "gradient polynomials on the set at the instance's Sigma"
    else:
        G, G_mag, K = _autograd_full(inst, layers, model, As, Bs)
        how = "autograd of the full-matrix loss"
    bound = K * np.finfo(np.float64).eps * G_mag
    ratio = np.where(bound > 0, np.abs(G) / np.where(bound > 0, bound, 1.0),
                     np.where(G == 0, 0.0, np.inf))
    return {"gradient_norm": float(np.linalg.norm(G)), "max_|grad|": float(np.abs(G).max()),
            "max_|grad|/(K_eps_grad~)": float(ratio.max()), "factor_K": K, "method": how,
            "why_tolerance": "float64 evaluation of a polynomial errs by at most K eps times the "
                             "same polynomial with |coefficients| at |inputs| (Higham, Sec. 3.1)"}


def _numeric_coefficients(P, scal: dict):
    """P with each coefficient c(n, a, b) replaced by its float value, and by the sum of the
    |terms| of its expansion (the magnitude polynomial of the rounding bound)."""
    subs = {sympy.Symbol(k) if k != "n" else sparse.n_sym: v for k, v in scal.items()}
    subs[space_size("n")] = scal["n"]
    names = {s.name: s for c in P.terms.values() for s in c.free_symbols}
    subs = {names[k.name]: v for k, v in subs.items() if k.name in names}
    vals, mags = {}, {}
    for key, c in P.terms.items():
        terms = sympy.Add.make_args(sympy.expand(c))
        parts = [float(t.xreplace(subs)) for t in terms]
        vals[key] = sympy.Float(sum(parts))
        mags[key] = sympy.Float(sum(abs(v) for v in parts))
    return P._like(vals), P._like(mags)


def _autograd_full(inst, layers: int, model: str, As, Bs):
    poly = sparse.full_loss(layers, model)
    sig = inst.sigma

    def grads(p, absval: bool):
        f = np.abs if absval else (lambda v: v)
        env = {"Sigma": torch.tensor(f(sig)), "Sigma_inv": torch.tensor(f(np.linalg.inv(sig)))}
        leaves = []
        for i in range(layers):
            env[f"A_{i}"] = torch.tensor(f(As[i]), requires_grad=True)
            leaves.append(env[f"A_{i}"])
            if model == "eq13":
                env[f"B_{i}"] = torch.tensor(f(Bs[i]), requires_grad=True)
                leaves.append(env[f"B_{i}"])
        val = p(env, {"n": inst.n})
        return torch.cat([g.reshape(-1) for g in torch.autograd.grad(
            val, leaves, allow_unused=True) if g is not None]).numpy()

    letters = max((sum(len(w) for w in cyc + ch) for cyc, ch in poly.terms), default=0)
    return (grads(_compiled_full(layers, model), False),
            grads(_compiled_full(layers, model, magnitude=True), True),
            len(poly.terms) + letters * inst.d + 2)


_COMPILED_FULL: dict = {}


def _compiled_full(layers: int, model: str, magnitude: bool = False):
    key = (layers, model, magnitude)
    if key not in _COMPILED_FULL:
        poly = sparse.full_loss(layers, model)
        if magnitude:
            poly = poly.map_coeffs(sympy.Abs)
        _COMPILED_FULL[key] = poly.compile()
    return _COMPILED_FULL[key]


def thm4_numeric(ctx: Context) -> TierResult:
    return inf_gradient_numeric(ctx, "eq9", THM4_SETTING)


def thm5_numeric(ctx: Context) -> TierResult:
    return inf_gradient_numeric(ctx, "eq13", THM5_SETTING)


THM4 = Claim(
    id="ahn2023.thm4",
    title="k-layer sparse transformer (9): Aᵢ = aᵢ Σ⁻¹ essentially contains critical points",
    paper=PAPER,
    statement=(r"For $x^{(i)}\sim\mathcal N(0,\Sigma)$, $w_\star\sim\mathcal N(0,\Sigma^{-1})$ and "
               r"the parameters (9), with $\mathcal S=\{A: A_i=a_i\Sigma^{-1}\}$, "
               r"$\inf_{A\in\mathcal S}\sum_{i=0}^k\|\nabla_{A_i}f(A)\|_F^2=0$."),
    assumptions=("x^(i) ~ N(0, Sigma) i.i.d., w* ~ N(0, Sigma^{-1}), y = <w*, x>",
                 "P_i = [[0, 0], [0, 1]], Q_i = [[A_i, 0], [0, 0]], A_i symmetric (eq. (9))",
                 "layers counts attention layers A_0..A_k (the paper's k-layer model has k+1)"),
    formulas=THM4_FORMULAS,
    checks={"symbolic": thm4_symbolic, "numeric": thm4_numeric},
    setting=THM4_SETTING,
)

THM5 = Claim(
    id="ahn2023.thm5",
    title="k-layer transformer (13): Aᵢ = aᵢ Σ⁻¹, Bᵢ = bᵢ I essentially contains "
          "critical points",
    paper=PAPER,
    statement=(r"For $x^{(i)}\sim\mathcal N(0,\Sigma)$, $w_\star\sim\mathcal N(0,\Sigma^{-1})$ and "
               r"the parameters (13), with $\mathcal S=\{(A,B): A_i=a_i\Sigma^{-1}, B_i=b_iI\}$, "
               r"$\inf_{(A,B)\in\mathcal S}\sum_{i=0}^k\|\nabla_{A_i}f\|_F^2+"
               r"\|\nabla_{B_i}f\|_F^2=0$ (eq. (14))."),
    assumptions=("x^(i) ~ N(0, Sigma) i.i.d., w* ~ N(0, Sigma^{-1}), y = <w*, x>",
                 "P_i = [[B_i, 0], [0, 1]], Q_i = [[A_i, 0], [0, 0]], A_i symmetric (eq. (13))",
                 "layers counts attention layers; B of the last layer never acts on the output"),
    formulas=THM5_FORMULAS,
    checks={"symbolic": thm5_symbolic, "numeric": thm5_numeric},
    setting=THM5_SETTING,
)


# ================================================================================================
# Theorem 3: two layers of (9), Sigma = I, w* ~ N(0, I): diagonal A_0, A_1 are a global minimiser
# ================================================================================================
THM3_SETTING = LinearICLSetting(
    w_prior="identity",
    sizes={"quick": {"n": 10, "d": 3}, "default": {"n": 20, "d": 5}, "paper": {"n": 20, "d": 5}},
    fixed_sigma="Theorem 3 assumes isotropic covariates (Sigma_x = I, checked as its formula "
                "Sigma_x)",
)
THM3_FORMULAS = (
    NamedFormula("Sigma_x", "Identity(d)", (_D,), equation="Thm. 3",
                 description="the covariance of the covariates x_i (isotropic)", shape=("d", "d"),
                 scale_free="x -> sqrt(c) x scales every Z_k by sqrt(c) when A_i -> A_i / c, so "
                            "f(A; c Sigma_x) = c f(c A; Sigma_x) and the minimisers' structure "
                            "(diagonal, multiples of I) is the same for every c > 0"),
)


def _thm3_sigma(F, d: int) -> sympy.Matrix:
    return sympy.Matrix(formula_value(F["Sigma_x"], {"d": d}))


def _sym(M: torch.Tensor) -> torch.Tensor:
    return (M + M.transpose(-1, -2)) / 2


def thm3_loss(As: torch.Tensor, sigma: torch.Tensor, n: int) -> torch.Tensor:
    """The derived two-layer loss at a batch As (B, 2, d, d) of (symmetrised) A_0, A_1."""
    compiled = _thm3_compiled()
    A = _sym(As)
    return compiled({"Sigma": sigma, "A_0": A[:, 0], "A_1": A[:, 1]}, {"n": n})


_COMPILED = {}


def _thm3_compiled():
    if "thm3" not in _COMPILED:
        _COMPILED["thm3"] = sparse.full_loss(2, "eq9", w_prior="identity").compile()
    return _COMPILED["thm3"]


def _train_thm3(sigma, n: int, d: int, restarts: int, diagonal: bool, gen, steps: int = 400):
    from models.trainers import optimise_batched

    if diagonal:
        x = (0.5 * randn(restarts, 2, d, generator=gen, dtype=torch.float64)).requires_grad_()
        build = lambda: torch.diag_embed(x)  # noqa: E731
    else:
        x = (0.5 * randn(restarts, 2, d, d, generator=gen, dtype=torch.float64)).requires_grad_()
        build = lambda: x  # noqa: E731
    res = optimise_batched(lambda: thm3_loss(build(), sigma, n), [x], method="lbfgs", steps=steps,
                           grad_tol=1e-12)
    with torch.no_grad():
        losses = thm3_loss(build(), sigma, n)
    return _sym(build()).detach(), losses.detach(), res


def thm3_symbolic(ctx: Context) -> TierResult:
    """Exact structure of the derived loss (App. B.1's two facts) at rational instances."""
    F = ctx.formulas
    L = sparse.full_loss(2, "eq9", w_prior="identity")
    rng = ctx.rng("thm3-instance")
    d = 3
    Sx = _thm3_sigma(F, d)
    U = __import__("proofs_checks.kit.linear_icl", fromlist=["cayley_orthogonal"]).cayley_orthogonal(d, rng)

    def rat():
        return sympy.Rational(int(rng.integers(-5, 6)), int(rng.integers(1, 5)))

    D0 = sympy.diag(*[rat() for _ in range(d)])
    A1 = sympy.Matrix(d, d, lambda i, j: 0)
    for i in range(d):
        for j in range(i, d):
            A1[i, j] = A1[j, i] = rat()
    S = sympy.diag(*[(-1) ** int(rng.integers(0, 2)) for _ in range(d)])

    def f(A0, A1_):
        return sympy.factor(sympy.together(L.evaluate({"Sigma": Sx, "A_0": A0, "A_1": A1_},
                                                      {"n": sparse.n_sym}, exact=True)))

    base = f(U * D0 * U.T, A1)
    rotated = f(D0, U.T * A1 * U)
    flipped = f(S * D0 * S, S * A1 * S)
    same_flip = f(D0, S * A1 * S)
    rot_ok = sympy.simplify(base - rotated) == 0
    flip_ok = sympy.simplify(f(D0, A1) - flipped) == 0 and sympy.simplify(flipped - same_flip) == 0
    # convexity in A_1: f is a polynomial of degree 2 in A_1 (every monomial has <= 2 letters
    # A_1), and its A_1-quadratic part is E||A_1 W v / n||^2 >= 0 (checked below numerically)
    deg = max(sum(1 for w in cyc + ch for (name, _) in w if name == "A_1")
              for (cyc, ch) in L.terms)
    findings = [
        Finding("rotation_invariance", bool(rot_ok),
                {"statement": "f(U D_0 U^T, A_1) = f(D_0, U^T A_1 U) (d = 3, exact, n symbolic)"},
                None if rot_ok else {"U": str(U.tolist()), "D_0": str(D0.tolist()),
                                     "A_1": str(A1.tolist()), "Sigma_x": str(Sx.tolist()),
                                     "f(U D U^T, A_1)": str(base),
                                     "f(D, U^T A_1 U)": str(rotated)},
                "" if rot_ok else "the loss is not invariant under rotations: A_0 cannot be "
                                  "taken diagonal (App. B.1)"),
        Finding("sign_flip_invariance", bool(flip_ok),
                {"statement": "f(S D_0 S, S A_1 S) = f(D_0, A_1) = f(D_0, S A_1 S), S = diag(+-1)"},
                None if flip_ok else {"S": str(S.tolist()), "D_0": str(D0.tolist()),
                                      "A_1": str(A1.tolist())},
                "" if flip_ok else "the loss is not invariant under sign flips"),
        Finding("degree_in_A1", deg <= 2, {"max_letters_A_1_per_monomial": deg}),
    ]
    steps = [
        step("Population loss", "", f"Two layers of eq. (9) through lsa_forward on the symbolic "
             f"prompt, E[e^2] by Isserlis: {len(L.terms)} trace monomials in Sigma, A_0, A_1."),
        step("Invariances", "", "Exact evaluation at rational d = 3 instances (Cayley rotation U, "
             "random sign matrix S), n symbolic: the two facts App. B.1's proof uses."),
        step("Jensen", "", "f is a quadratic in A_1 with non-negative quadratic part, so "
             "E_S f(D_0, S A_1 S) >= f(D_0, diag(A_1)): diagonal pairs reach the global minimum."),
    ]
    return combine(findings, {"Sigma_x": ctx.formula_texts["Sigma_x"]}, steps=steps)


def thm3_numeric(ctx: Context) -> TierResult:
    """Global minimum over full symmetric pairs vs over diagonal pairs (exact loss, L-BFGS)."""
    F = ctx.formulas
    sizes = dict(THM3_SETTING.sizes[ctx.budget.name])
    sizes.update({k: v for k, v in ctx.sizes.items() if k in sizes})
    n, d = sizes["n"], sizes["d"]
    sigma = torch.tensor(np.array(_thm3_sigma(F, d).evalf(), dtype=float))
    gen = torch.Generator().manual_seed(ctx.seed_for("thm3-init"))
    R = max(4, ctx.budget.restarts)
    Ad, ld, _ = _train_thm3(sigma, n, d, R, True, gen)
    Af, lf, resf = _train_thm3(sigma, n, d, R, False, gen)
    best_d, best_f = float(ld.min()), float(lf.min())
    # the full gradient and the Hessian over symmetric pairs at the best diagonal pair
    from torch.func import hessian

    A_star = Ad[int(ld.argmin())]
    iu = torch.triu_indices(d, d)

    def f_vec(v):
        M = torch.zeros(2, d, d, dtype=torch.float64)
        M[:, iu[0], iu[1]] = v.reshape(2, -1)
        M = M + M.transpose(-1, -2) - torch.diag_embed(torch.diagonal(M, dim1=-2, dim2=-1))
        return thm3_loss(M[None], sigma, n)[0]

    v0 = A_star[:, iu[0], iu[1]].reshape(-1).clone().requires_grad_()
    grad = torch.autograd.grad(f_vec(v0), v0)[0]
    eig = torch.linalg.eigvalsh(hessian(f_vec)(v0.detach()))
    # float64 tolerance: L-BFGS stops at |grad| ~ 1e-12; the loss agrees to ~1e-12 relative
    tol = 1e-9 * max(1.0, abs(best_d))
    ok = best_f >= best_d - tol
    scalar = float(torch.stack([torch.linalg.norm(A - torch.trace(A) / d * torch.eye(
        d, dtype=A.dtype)) / torch.linalg.norm(A) for A in A_star]).max())
    ce = None
    if not ok:
        k = int(lf.argmin())
        ce = {"n": n, "d": d, "Sigma_x": ctx.formula_texts["Sigma_x"], "best_diagonal_loss": best_d,
              "full_matrix_loss": best_f, "full_A_0": Af[k, 0].tolist(), "full_A_1": Af[k, 1].tolist()}
    finding = Finding("diagonal_is_global", bool(ok), {
        "n": n, "d": d, "restarts": R, "best_diagonal_loss": best_d, "best_full_loss": best_f,
        "full_restart_losses": lf.tolist(), "diagonal_restart_losses": ld.tolist(),
        "diagonal_minimiser": A_star.tolist(), "relative_distance_to_scalar": scalar,
        "full_gradient_norm_at_diagonal_minimiser": float(grad.norm()),
        "hessian_min_eigenvalue": float(eig.min()), "hessian_max_eigenvalue": float(eig.max()),
        "tolerance": tol, "why_tolerance": "L-BFGS in float64 stops at |grad| <= 1e-12; two "
                                         "runs at one minimum agree to ~1e-12 relative"},
        ce, "" if ok else "full symmetric matrices reach a lower loss than every diagonal pair")
    return combine([finding])


THM3 = Claim(
    id="ahn2023.thm3",
    title="Two-layer sparse transformer (9), isotropic data: diagonal A₀, A₁ are a global minimiser",
    paper=PAPER,
    statement=(r"For $x_i\sim\mathcal N(0,I_d)$, $w_\star\sim\mathcal N(0,I_d)$ and two layers of "
               r"(9), there are diagonal $A_0, A_1$ that minimise $f$ globally."),
    assumptions=("x_i ~ N(0, Sigma_x) with Sigma_x = I_d, w* ~ N(0, I_d)",
                 "two attention layers of eq. (9) (A_0, A_1 symmetric)"),
    formulas=THM3_FORMULAS,
    checks={"symbolic": thm3_symbolic, "numeric": thm3_numeric},
    setting=THM3_SETTING,
)
