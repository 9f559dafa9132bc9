"""The kit's stationary-set check for linear ICL: "the stated set S essentially contains critical
points of the derived population loss", inf over S of sum_W ||grad_W f||_F^2 = 0.

S is named by directions: every weight letter W is a scalar x_W times a formula D_W(Sigma)
(ahn2023 Thms. 4, 5: A_i = a_i Sigma^{-1}, B_i = b_i I).  A claim gives the derived loss f of its
model for full letters (a ``moments.Poly`` built from the forward pass by the moment kernel),
optionally its faster form on sets c Sigma^k, and the torch model; everything else is here:

- spectral reduction: each D_W is checked to be a function D(lambda) of Sigma (at
  Sigma = diag(lambda, mu)); then every word of f and of grad_W f on S is a function of an
  eigenvalue lambda (``moments.spectral``), the loss restricted to S is g(x), and
  T(x) = sum_W ||grad_W f||_F^2 = sum_W sum_e G_W(lambda_e)^2 is an explicit polynomial at a
  rational instance's eigenvalues;
- the stationarity solve: g is minimised (BFGS), its critical point x* refined by Newton's
  method in mpmath (``minimise``), and T(x*) decides: inf T = 0 when T(x*) is zero to the
  working precision, else T > 0 there and the numerical minimum of T over S is reported;
- the gradient form: on S, grad_W f = c_W B_W(Sigma) with B_W the dual direction
  (tr(B_W D_W) = d), so d c_W = dg/dx_W when c_W does not depend on Sigma (whitening).

The float64 and Monte Carlo tier is in ``stationary_float``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import mpmath
import numpy as np
import sympy

from moments.letters import FREE_LEFT, FREE_RIGHT, space_size
from moments.poly import Poly
from moments.spectral import LAMBDA, TR, spectral_value
from verify.claim import Check, Context, ExactValues, TierResult
from verify.evidence import Finding, combine, step
from verify.formulas import NamedFormula, formula_value

from .linear_icl import Instance, LinearICLSetting

MU = sympy.Symbol("mu", positive=True)
n_sym = sympy.Symbol("n", positive=True, integer=True)
d_sym = sympy.Symbol("d", positive=True, integer=True)
DIGITS = 40
BASES = {"Sigma": LAMBDA, "I": sympy.Integer(1)}  # the gradient's form on S, in lambda


@dataclass(frozen=True)
class Direction:
    """W = x D(Sigma) on S: the weight letter, its scalar, the formula naming D, and B (the
    form ``basis`` of grad_W f on S: "Sigma" or "I"); ``free`` is False for a scalar the loss
    does not see (fixed at 0)."""

    letter: str
    scalar: sympy.Symbol
    formula: str
    basis: str = "Sigma"
    free: bool = True


@dataclass(frozen=True)
class StationarySet:
    """S = {W = x_W D_W(Sigma)} essentially contains critical points of f (module docstring).

    Every callable takes the number of layers (the size ``layers``).  ``loss_on_set(layers,
    monomials)`` gives (g, {letter: grad_W f or None}) on a set whose directions are monomials
    c Sigma^k (``monomials``: formula name -> (c, k)); ``optimum(inst, layers, starts)`` gives
    (runs, critical point) of g at the instance's sizes; ``model(inst, layers, weights)`` the
    torch model at float weights {letter: array}."""

    setting: LinearICLSetting
    directions: Callable[[int], Sequence[Direction]]
    loss: Callable[[int], Poly]
    optimum: Callable[[Instance, int, Sequence], tuple[list, Any]]
    model: Callable[[Instance, int, Mapping[str, np.ndarray]], Any]
    loss_on_set: Callable[[int, Mapping[str, tuple]], tuple[Poly, Mapping]] | None = None
    spectrum: tuple[str, ...] = ("1", "1", "1/2", "1/4", "1")  # eigenvalues, unless --sigma
    forward: str = ""  # the model, e.g. "eq. (9)", in the derivation
    # deg p of E[e^2 | X] = tr p(W) (whitened W = X X^T) at a point of the set, by layers: the
    # loss is then integrated exactly from the forward pass (``kit.spectral_mean``); None:
    # Monte Carlo
    error_degree: Callable[[int], int] | None = None


def stationary_set(spec: StationarySet) -> dict[str, Check]:
    """The symbolic and numeric checks of a stationary-set claim."""
    from .stationary_float import numeric_tier

    return {"symbolic": lambda ctx: symbolic_tier(spec, ctx),
            "numeric": lambda ctx: numeric_tier(spec, ctx)}


def stationary_truth(formulas: Sequence[NamedFormula]) -> ExactValues:
    """``Claim(exact=...)`` for ``icl-verify mutate``: a surviving mutant of a direction D_W is
    *true* when it is c D_W for a number c != 0 (checked on the spectral functions at d = 2
    and d = 3): x_W c D_W ranges over the same set as x_W D_W, since x_W is free (or fixed at
    0), so the mutated claim is the claim itself.  Other mutants are left undecided."""
    original = {f.name: f.parse() for f in formulas}

    def judge(name: str, mutant: sympy.Basic) -> tuple[str, str]:
        ratios = set()
        for d in (2, 3):
            fo, fm = _spectral_at(original[name], d), _spectral_at(mutant, d)
            if fo is None or fm is None or fo == 0:
                return "undecided", f"{name} is not a function of Sigma here"
            ratios.add(sympy.simplify(fm / fo))
        (c, *rest) = ratios
        if rest or not c.is_number or c == 0:
            return "undecided", f"the mutant is not a constant multiple of {name}"
        return "true", (f"the mutant is {c} times {name}: the scalars range over the same set, "
                        f"so the statement is the original one")

    return ExactValues(values=lambda point: None, words="the set the directions span",
                       definition=judge)


def _spectral_at(expr, d: int) -> sympy.Expr | None:
    """f(lambda) of a formula f(Sigma) at Sigma = diag(lambda, mu, ...) of size d (None if the
    value is not diagonal with that pattern)."""
    others = sympy.symbols(f"nu1:{d}", positive=True)
    try:
        m = sympy.Matrix(formula_value(expr, {"Sigma": sympy.diag(LAMBDA, *others), "d": d}))
    except Exception:  # noqa: BLE001 - a mutant that does not evaluate is not judged
        return None
    if m.shape != (d, d) or any(sympy.simplify(m[i, j]) != 0 for i in range(d)
                                for j in range(d) if i != j):
        return None
    f = sympy.simplify(m[0, 0])
    return None if f.has(*others) else f


def free_variables(directions: Sequence[Direction]) -> list[sympy.Symbol]:
    """The scalars g depends on, in the order of the directions."""
    return [dr.scalar for dr in directions if dr.free]


# ------------------------------------------------------------------------------ spectral helpers
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


def monomial(f: sympy.Expr):
    """(c, k) when f(lambda) = c lambda^k with c free of lambda, else None."""
    c, e = sympy.expand(f).as_coeff_exponent(LAMBDA)
    return (c, int(e)) if (e.is_Integer and not c.has(LAMBDA)) else None


def power_trace(e: int) -> sympy.Expr:
    """tr Sigma^e as a symbol: d, p_e or pinv_{-e}."""
    if e == 0:
        return space_size("d")
    return sympy.Symbol(f"p{e}", positive=True) if e > 0 else sympy.Symbol(f"pinv{-e}",
                                                                           positive=True)


def is_trace_symbol(s) -> bool:
    name = s.name
    return (name[:1] == "p" and name[1:].isdigit()) or (name[:4] == "pinv" and name[4:].isdigit())


def resolve_traces(expr: sympy.Expr) -> sympy.Expr:
    """tr f(Sigma) for f a Laurent polynomial in lambda (scalar coefficients such as a_i) as
    sum_k c_k tr Sigma^k (``power_trace``)."""
    def expand_tr(f):
        total = 0
        for term in sympy.Add.make_args(sympy.expand(f)):
            c, e = term.as_coeff_exponent(LAMBDA)
            if c.has(LAMBDA) or not e.is_Integer:
                return TR(f)
            total += c * power_trace(int(e))
        return total
    return expr.replace(lambda e: getattr(e, "func", None) == TR, lambda e: expand_tr(e.args[0]))


def at_eigenvalues(expr: sympy.Expr, eigs, n: int) -> sympy.Expr:
    """Replace tr f(Sigma) by sum_e f(lambda_e), p_k by sum_e lambda_e^k, d and n by numbers."""
    d = len(eigs)
    expr = expr.replace(lambda e: getattr(e, "func", None) == TR,
                        lambda e: sum(e.args[0].subs(LAMBDA, v) for v in eigs))
    subs = {s: sum(v ** (int(s.name[1:]) if s.name[1:].isdigit() else -int(s.name[4:]))
                   for v in eigs) for s in expr.free_symbols if is_trace_symbol(s)}
    subs.update({space_size("d"): d, d_sym: d, space_size("n"): n, n_sym: n})
    return sympy.expand(expr.xreplace(subs))


def fast_spectral(poly: Poly, funcs: dict) -> sympy.Expr:
    """``spectral_value`` for letters that are monomials c lambda^k: a word is a monomial, a
    trace of it c p_k; one Add at the end instead of one per term.  Traces resolved as in
    ``resolve_traces``.  Falls back to ``spectral_value`` otherwise."""
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
            key = key * c * power_trace(e)
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


def frob2(G: sympy.Expr, eigs, n: int) -> sympy.Expr:
    """||G(Sigma)||_F^2 = sum_e G(lambda_e)^2 for a spectral function G (with traces resolved)."""
    Ge = at_eigenvalues(G, eigs, n)
    return sympy.expand(sum(Ge.subs(LAMBDA, v) ** 2 for v in eigs))


# ------------------------------------------------------------------------------ critical points
@dataclass(frozen=True)
class CriticalPoint:
    """A stationary point of g, refined by Newton's method in mpmath."""

    point: tuple  # mpmath numbers, in the order of the variables
    value: object
    grad_norm: object
    hessian_eigenvalues: tuple
    digits: int

    def floats(self) -> np.ndarray:
        return np.array([float(v) for v in self.point])


def _lambdas(g: sympy.Expr, xs: list, module: str):
    grad = [sympy.diff(g, x) for x in xs]
    hess = [[sympy.diff(gi, x) for x in xs] for gi in grad]
    return (sympy.lambdify(xs, g, module), sympy.lambdify(xs, grad, module),
            sympy.lambdify(xs, hess, module))


def minimise(g: sympy.Expr, xs: list, starts: np.ndarray, digits: int = DIGITS,
             max_norm: float = 1e6) -> CriticalPoint | None:
    """Minimise g from each start (BFGS), refine the best with Newton on grad g = 0 in mpmath.

    None when every run escapes (|x| > max_norm): then g has no minimiser in reach."""
    from scipy.optimize import minimize

    f, gr, _ = _lambdas(g, xs, "numpy")
    best = None
    for x0 in starts:
        res = minimize(lambda x: float(f(*x)), x0, jac=lambda x: np.array(gr(*x), dtype=float),
                       method="BFGS", options={"gtol": 1e-12, "maxiter": 2000})
        if np.all(np.isfinite(res.x)) and np.linalg.norm(res.x) < max_norm:
            if best is None or res.fun < best.fun:
                best = res
    return None if best is None else refine(g, xs, best.x, digits)


def refine(g: sympy.Expr, xs: list, x0, digits: int = DIGITS) -> CriticalPoint:
    """Newton's method on grad g = 0 from x0 in (digits + 10)-digit arithmetic."""
    with mpmath.workdps(digits + 10):
        f, gr, he = _lambdas(g, xs, "mpmath")
        x = mpmath.matrix([mpmath.mpf(float(v)) for v in x0])
        for _ in range(60):
            G = mpmath.matrix(gr(*x))
            if mpmath.norm(G) < mpmath.mpf(10) ** (-(digits + 5)):
                break
            x = x - mpmath.lu_solve(mpmath.matrix(he(*x)), G)
        G, H = mpmath.matrix(gr(*x)), mpmath.matrix(he(*x))
        eig = mpmath.eigsy(H)[0]
        return CriticalPoint(tuple(x), f(*x), mpmath.norm(G),
                             tuple(sorted(eig[i] for i in range(len(xs)))), digits)


# ------------------------------------------------------------------------------ symbolic tier
def layer_count(spec: StationarySet, ctx: Context) -> tuple[int, int]:
    sizes = spec.setting.sizes[ctx.budget.name]
    return (int(ctx.sizes.get("layers", sizes["layers"])), int(ctx.sizes.get("n", sizes["n"])))


def spectrum(spec: StationarySet, ctx: Context) -> tuple:
    """The instance's eigenvalues: the spec's, or the user's identity/diagonal/rotated --sigma
    (a --sigma matrix is not read here: its eigenvalues are not rational in general)."""
    if ctx.sigma is not None and ctx.sigma.kind in ("diag", "rotated"):
        return tuple(sympy.Rational(v.numerator, v.denominator) for v in ctx.sigma.values)
    if ctx.sigma is not None and ctx.sigma.kind == "identity":
        ctx.sigma.describe()  # read: the asked covariance is the one checked
        return (sympy.Integer(1),) * len(spec.spectrum)
    return tuple(sympy.Rational(v) for v in spec.spectrum)


def direction_functions(F, directions) -> dict[str, sympy.Expr | None]:
    """D(lambda) of each formula naming a direction (None: not a function of Sigma)."""
    return {name: spectral_function(F[name]) for name in dict.fromkeys(dr.formula
                                                                        for dr in directions)}


def on_set(spec: StationarySet, layers: int, directions, fns: dict):
    """(L, g(lambda), {letter: grad_W f on S as a function of lambda})."""
    monos = {k: monomial(f) for k, f in fns.items()}
    funcs = {"Sigma": LAMBDA, "Sigma_inv": 1 / LAMBDA}
    if spec.loss_on_set is not None and all(m is not None for m in monos.values()):
        # the set is c Sigma^k: loss and gradients on the set by first-order perturbation
        L, G_on_set = spec.loss_on_set(layers, monos)
        return L, fast_spectral(L, funcs), {
            name: (fast_spectral(G, funcs) if G is not None else sympy.Integer(0))
            for name, G in G_on_set.items()}
    L = spec.loss(layers)
    funcs.update({dr.letter: dr.scalar * fns[dr.formula] for dr in directions})
    return L, fast_spectral(L, funcs), {dr.letter: fast_spectral(L.diff(dr.letter), funcs)
                                        for dr in directions}


def symbolic_tier(spec: StationarySet, ctx: Context) -> TierResult:
    F = ctx.formulas
    layers, n = layer_count(spec, ctx)
    eigs = spectrum(spec, ctx)
    directions = list(spec.directions(layers))
    fns = direction_functions(F, directions)
    if any(f is None for f in fns.values()):
        return combine([Finding("set_is_spectral", None,
                                {k: ctx.formula_texts[k] for k in fns},
                                reason="the named set is not a function of Sigma; the "
                                       "spectral reduction does not apply")])
    xs = free_variables(directions)
    L, g_sym, grads = on_set(spec, layers, directions, fns)
    whitened = not (g_sym.has(LAMBDA) or g_sym.atoms(TR)
                    or any(is_trace_symbol(s) for s in g_sym.free_symbols))
    d_num = len(eigs)
    g_n = sympy.expand(g_sym.xreplace({space_size("d"): d_num, d_sym: d_num,
                                       space_size("n"): n, n_sym: n}))
    evidence = {"layers": layers, "n": n, "eigenvalues": [str(e) for e in eigs],
                "restricted_loss_is_whitened": bool(whitened),
                "restricted_loss": short(g_sym), "restricted_loss_at_n_d": short(g_n),
                "gradient_form": gradient_form(directions, grads, g_n, n, d_num),
                "digits": DIGITS}
    g = at_eigenvalues(g_sym, eigs, n)
    T = sympy.expand(sum(frob2(G, eigs, n) for G in grads.values()))
    rng = ctx.rng("thm-starts")
    starts = np.array([np.full(len(xs), -0.5)] + [rng.standard_normal(len(xs)) * 0.7
                                                  for _ in range(5)])
    cp = minimise(g, xs, starts, digits=DIGITS)
    steps = _steps(spec, ctx, L, g_sym, grads, layers, directions)
    if cp is None:
        return combine([Finding("infimum_of_gradient_norms", None, evidence,
                                reason="no critical point of g found in reach")], steps=steps)
    return combine([_infimum(T, xs, cp, starts, evidence, n, layers, eigs)], steps=steps)


def gradient_form(directions, grads: dict, g_n, n: int, d_num: int) -> dict:
    """grad_W f = c_W B_W on S, and d c_W = dg/dx_W where c_W is constant in Sigma
    (informational: the decision is on T)."""
    form = {}
    sizes = {space_size("d"): d_num, d_sym: d_num, space_size("n"): n, n_sym: n}
    for dr in directions:
        c = sympy.expand(grads[dr.letter].xreplace(sizes) / BASES[dr.basis])
        const = not (c.has(LAMBDA) or any(is_trace_symbol(s_) for s_ in c.free_symbols))
        form[dr.letter] = {
            "gradient_over_" + dr.basis: short(c, 300), "constant_in_Sigma": const,
            f"d*c = dg/d{dr.scalar} (at n = {n}, d = {d_num})":
                (sympy.expand(c * d_num - sympy.diff(g_n, dr.scalar)) == 0
                 if const and dr.free else None)}
    return form


def _infimum(T, xs, cp: CriticalPoint, starts, evidence: dict, n: int, layers: int,
             eigs) -> Finding:
    """inf_S T = 0 when T(x*) vanishes to the working precision at g's critical point x*."""
    with mpmath.workdps(2 * DIGITS + 20):
        T_f = sympy.lambdify(xs, T, "mpmath")
        x_star = [mpmath.mpf(v) for v in cp.point]
        T0 = T_f(*[mpmath.mpf(0)] * len(xs))
        T_star = T_f(*x_star)
        seq = [{"m": m, "T": mpmath.nstr(T_f(*[v + mpmath.mpf(10) ** (-m) for v in x_star]), 8)}
               for m in range(1, 9)]
        ok = abs(T_star) <= max(abs(T0), mpmath.mpf(1)) * mpmath.mpf(10) ** (-DIGITS)
        evidence.update({
            "critical_point_of_g": [mpmath.nstr(v, 20) for v in x_star],
            "variables": [str(x) for x in xs],
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
            low = minimise(T, xs, np.vstack([cp.floats()[None], starts]), digits=20)
            bound = mpmath.nstr(low.value, 10) if low is not None else "not found"
            evidence["numerical_minimum_of_T"] = bound
            evidence["minimiser_of_T"] = (None if low is None
                                          else [mpmath.nstr(v, 12) for v in low.point])
            ce = {"n": n, "layers": layers, "eigenvalues": [str(e) for e in eigs],
                  "point": [mpmath.nstr(v, 15) for v in x_star],
                  "T_at_point": mpmath.nstr(T_star, 10), "T_numerical_minimum_over_S": bound,
                  "note": "T > 0 at the critical point of g; the minimum of T over S is a "
                          "numerical multi-start minimum, not a certified bound"}
    return Finding("infimum_of_gradient_norms", bool(ok), evidence, ce,
                   "" if ok else "the full-matrix gradient does not vanish on S")


def short(expr, limit: int = 2000) -> str:
    """The expression as text, or, where printing it would be slow or long, how many terms it
    has (the derivation steps carry it in full); never cut in the middle."""
    terms = len(sympy.Add.make_args(expr))
    if terms > 60:
        return f"{terms} terms (in full in the derivation)"
    text = str(expr)
    return text if len(text) <= limit else f"{terms} terms (in full in the derivation)"


def _steps(spec: StationarySet, ctx: Context, L: Poly, g_sym, grads: dict, layers: int,
           directions) -> list:
    letters = sorted({dr.letter.split("_")[0] for dr in directions})
    named = ", ".join(f"{dr.letter.split('_')[0]}_i = {dr.scalar.name.split('_')[0]}_i "
                      f"{dr.formula}(Sigma) = {ctx.formula_texts[dr.formula]}"
                      for dr in {dr.formula: dr for dr in directions}.values())
    sel = list(grads.items())[:2]
    norms = " + ".join(rf"\|\nabla_{{{x}_i}} f\|_F^2" for x in letters)
    return [
        step("Forward pass", "", f"{layers} layers of {spec.forward} run on the symbolic "
             "prompt Z_0 = [[X, x_q], [w*^T X, 0]], x ~ N(0, Sigma), w* ~ " +
             ("N(0, Sigma^{-1})" if spec.setting.w_prior == "sigma_inverse" else "N(0, I)") +
             "; full letters " + ", ".join(f"{x}_i" for x in letters) + "."),
        step("Population loss and gradients", "", f"E[e^2] by Isserlis ({len(L.terms)} trace "
             "monomials, exact in n and d); on a set W = x c Sigma^k the gradient in W is "
             "d/dR E[2 e_0 e_1] with e_1 the first-order change of the error along a free "
             "direction letter R (otherwise: the letter derivative of the full loss)."),
        step("Restriction to S", r"g = " + sympy.latex(g_sym) if len(g_sym.args) < 40 else "",
             f"{named}: every letter is a function of Sigma, so each word is a function of "
             "an eigenvalue lambda (moments.spectral); when g has no lambda and no tr Sigma^j "
             "the whitening x -> Sigma^{-1/2} x reduces S to Sigma = I."),
        *[step(f"Full gradient in {nm}", r"\nabla_{" + nm + "} f = " + sympy.latex(G)
               if len(G.args) < 30 else "",
               "The letter derivative of the derived loss, evaluated on S as a function of "
               "Sigma (symmetrised for a symmetric letter).") for nm, G in sel],
        step("Infimum over S", r"T = \sum_i " + norms,
             "T at the instance's eigenvalues is an explicit polynomial; g is minimised "
             "(BFGS, then Newton in mpmath) and T is evaluated at the critical point and along "
             "a* + 10^{-m}(1, ..., 1)."),
    ]
