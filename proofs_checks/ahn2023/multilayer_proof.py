"""ahn2023 App. B: the displayed steps of the proofs of Theorems 3-5 (and what App. B.1/B.4 say).

The proofs work with the prompt Zbar_0 = [[X_0], [Y_0]] (query label <w*, x^(n+1)>, Lemma 9) and
drop the 1/n of (53) (absorbed into the A_i).  Everything is derived from the forward pass
``models.lsa.lsa_forward`` and the moment kernel (``proof_points``, ``proof_moments``), never
from the paper's recursions.

Claims here: (22) with the 1/n absorbed (App. B.2), the loss of App. B.1 (Thm. 3) and the loss
and commutation of App. B.4 (Lemma 8).  ``thm4_proof`` (App. B.2) and ``thm5_proof`` (App. B.3)
hold the other steps, ``auxiliary`` those of App. C.
"""
from __future__ import annotations

import dataclasses

from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np
import sympy
import torch

from models.device import randn as device_randn
from models.lsa import lsa_forward
from moments.blocks import BlockMat
from moments.tensor import matrix
from verify.claim import BUDGETS, Claim, Context, Correction, ExactValues, TierResult
from verify.evidence import Finding, combine, step
from verify.formulas import NamedFormula

from ..kit import ForwardIdentity, forward_identity, identity_truth
from ..kit.linear_icl import LinearICLSetting
from .one_layer import PAPER
from .proof_moments import (block_value, derived_loss, prompt_env, same_poly,
                            scalar_expectation)
from .proof_points import (Point, Pointwise, Unevaluable, _exact_compare, _float_compare, _merge,
                           _t, _weights, float_point, mul, on_set_points, proof_setting, sizes_of,
                           syms, tvalue, value)


# ================================================================================================
# (22) and the 1/n absorbed into A_i (App. B.2; B.3 says the same)
# ================================================================================================
EQ22_SIZES = {"quick": {"n": 3, "d": 2, "layers": 2}, "default": {"n": 4, "d": 3, "layers": 3},
              "paper": {"n": 5, "d": 3, "layers": 3}}
EQ22_SETTING = LinearICLSetting(w_prior="sigma_inverse", sizes=EQ22_SIZES,
                                fixed_sigma="the identity holds for every prompt")
EQ22_FORMULAS = (
    NamedFormula("A_absorbed", "A/n", syms("n", "d", "A"), equation="App. B.2 (prose)",
                 description="the recursion's A_i for the model (53)'s A_i: the 1/n absorbed",
                 shape=("d", "d")),
    NamedFormula("X_next", "X_i", syms("n", "d", "X_i"), equation="(22)", shape=("d", "n+1"),
                 description="X_{i+1} under (9) (so X_i = X_0)"),
    NamedFormula("Y_next", "Y_i + Y_i*M*X_i.T*A*X_i", syms("n", "d", "X_i", "Y_i", "M", "A"),
                 equation="(22)", shape=("1", "n+1"),
                 description="Y_{i+1} = Y_i + Y_i M X_i^T A_i X_i"),
    NamedFormula("factor", "Identity(n+1) + M*X_0.T*A*X_0", syms("n", "d", "X_0", "M", "A"),
                 equation="(22)", shape=("n+1", "n+1"),
                 description="Y_{i+1} = Y_0 prod_{l<=i} factor(A_l)"),
)


def _eq22_inputs(sizes) -> dict:
    out = {"X0": ("d", "n+1"), "Y0": ("1", "n+1")}
    out.update({f"A{i}": ("d", "d", "symmetric") for i in range(sizes["layers"])})
    return out


def eq22_model(a):
    """X_1..X_L and Y_1..Y_L of the model (53) with parameters (9) on Zbar_0 = [[X_0], [Y_0]]
    (1/n kept): lsa_forward."""
    d, L = a.sizes["d"], a.sizes["layers"]
    Z = a.blocks([[a["X0"]], [a["Y0"]]])
    layers = []
    for i in range(L):
        P = a.blocks([[a.zeros(d, d), a.zeros(d, 1)], [a.zeros(1, d), a.eye(1)]])
        Q = a.blocks([[a[f"A{i}"], a.zeros(d, 1)], [a.zeros(1, d), a.zeros(1, 1)]])
        layers.append((P, Q))
    Zs = lsa_forward(Z, layers, a.mask(a.sizes["n"]), a.sizes["n"], keep_all=True)[1:]
    return a.blocks([[Zl] for Zl in Zs] + [[Zl[d:, :]] for Zl in Zs])


def eq22_claimed(a):
    """(22) with the recursion's weights A_absorbed(A_i): X by X_next, Y by Y_next, and Y again
    as Y_0 times the product of the factors."""
    d, L = a.sizes["d"], a.sizes["layers"]
    M = a.mask(a.sizes["n"])
    X, Y, prod = a["X0"], a["Y0"], a["Y0"]
    rows, prods = [], []
    for i in range(L):
        A = a.formula("A_absorbed", A=a[f"A{i}"])
        X_new = a.formula("X_next", X_i=X)
        Y = a.formula("Y_next", Y_i=Y, X_i=X, A=A, M=M)
        prod = prod @ a.formula("factor", X_0=a["X0"], A=A, M=M)
        X = X_new
        rows.append(a.blocks([[X], [Y]]))
        prods.append(prod)
    return a.blocks([[r] for r in rows] + [[p] for p in prods])


EQ22_IDENTITY = ForwardIdentity(
    eq22_model, eq22_claimed, inputs=_eq22_inputs,
    exact_sizes=({"d": 2, "n": 2, "layers": 2},), sizes=EQ22_SIZES,
    prompts={"quick": 16, "default": 64, "paper": 128},
    what="the token and label rows after each layer (and the label row again)",
    model_latex=r"Z_{i+1} = Z_i + \tfrac1n P_i Z_i M Z_i^\top Q_i Z_i\ \text{(53), (9)}",
    claimed_latex=r"X_i = X_0,\ Y_{i+1} = Y_i + Y_i M X_0^\top A_i X_0 = "
                  r"Y_0\prod_{\ell\le i}(I + M X_0^\top A_\ell X_0)")

def rescaling_finding(ctx: Context) -> Finding:
    """"Doing so does not change the theorem statement": the absorbed weight is c A for one
    constant c != 0 (exact at rational Sigma^{-1} and a general symmetric A), so A -> c A maps
    S = {a Sigma^{-1}} onto itself and multiplies every gradient by the same c."""
    from .proof_points import exact_point

    p = exact_point(ctx.rng("rescaling"), 3, 2, 1, on_set=False)
    cs, rows = [], []
    for A in (p.Sigma_inv, p.A[0]):
        try:
            out = value(ctx.formulas, "A_absorbed", {"n": p.n, "d": p.d, "A": A}, True)
        except Unevaluable as exc:
            return Finding("rescaling_keeps_S", None if exc.undecided else False, {},
                           None if exc.undecided else {"error": str(exc)}, str(exc))
        k = next(i for i, e in enumerate(sympy.Matrix(A)) if e != 0)
        c = sympy.Matrix(out)[k] / sympy.Matrix(A)[k]
        rows.append(all(e == 0 for e in (sympy.Matrix(out) - c * sympy.Matrix(A))))
        cs.append(c)
    ok = all(rows) and cs[0] == cs[1] and cs[0] != 0
    return Finding("rescaling_keeps_S", ok, {"factor": str(cs[0]), "n": p.n},
                   None if ok else {"factors": [str(c) for c in cs], "n": p.n},
                   "" if ok else "A -> A_absorbed(A) is not one nonzero multiple of A: it does "
                                 "not map S onto S with the gradients scaled alike",
                   summary=f"A_absorbed = {cs[0]} A at n = {p.n}: S onto S")


def _eq22_checks() -> dict:
    kit = forward_identity(EQ22_IDENTITY)

    def symbolic(ctx: Context) -> TierResult:
        res = kit["symbolic"](ctx)
        return _merge(res, combine([rescaling_finding(ctx)]))

    return {"symbolic": symbolic, "numeric": kit["numeric"]}


EQ22 = Claim(
    id="ahn2023.eq22", title="The layers (9) on Zbar_0 with the 1/n absorbed (eq. (22))",
    paper=PAPER,
    statement=(r"With the $1/n$ of (53) absorbed into the $A_i$ ($A_i\to A_i/n$, which maps "
               r"$\mathcal S$ onto itself and scales the gradients alike), the parameters "
               r"(9) give $X_i=X_0$ and $Y_{i+1}=Y_i+Y_iMX_i^\top A_iX_i="
               r"Y_0\prod_{\ell=0}^i(I+MX_0^\top A_\ell X_0)$ (eq. (22))."),
    assumptions=("any prompt Zbar_0 = [[X_0], [Y_0]] (the identity is deterministic)",
                 "A_i symmetric (eq. (9))"),
    formulas=EQ22_FORMULAS, checks=_eq22_checks(), setting=EQ22_SETTING,
    exact=identity_truth(EQ22_IDENTITY, EQ22_FORMULAS, ({"d": 1, "n": 3, "layers": 3},)))


# ================================================================================================
# Loss representations: E of a formula integrand = the derived loss (App. B.1, B.4)
# ================================================================================================
@dataclass(frozen=True)
class LossForm:
    """E over the prompt of the integrand ``integrand`` equals f of (5) with the 1/n dropped.

    ``build(F, env, A)`` returns the integrand's environment additions (G from the formula
    "factor", say) given the kernel letters ``env`` and the layers' A letters; the symbolic tier
    takes both expectations by Isserlis (n, d symbolic) and compares the polynomials, the
    numeric tier compares the sampled integrand with the sampled squared query error."""

    integrands: tuple
    layers: int
    w_prior: str
    isotropic: bool
    build: Callable
    letter_names: tuple
    what: str
    build_float: Callable = lambda F, vals, As, sizes: {}


def _letters(spec: LossForm) -> dict:
    return {nm: BlockMat([[matrix(f"A_{i}", symmetric=True)]])
            for i, nm in enumerate(spec.letter_names)}


def loss_form_symbolic(spec: LossForm, ctx: Context) -> TierResult:
    F = ctx.formulas
    derived = derived_loss(spec.layers, "eq9", spec.w_prior, spec.isotropic)
    findings, differences = [], []
    for name in spec.integrands:
        env = {**prompt_env(spec.w_prior, spec.isotropic), **_letters(spec)}
        try:
            env.update(spec.build(F, env, [env[k] for k in spec.letter_names]))
            claimed = scalar_expectation(block_value(F[name], env))
        except Unevaluable as exc:
            findings.append(Finding(name, None, {}, reason=f"the kernel cannot take it: {exc}"))
            continue
        ok = same_poly(claimed, derived)
        ce = None
        if not ok:
            diff = (claimed - derived).map_coeffs(lambda c: sympy.factor(sympy.expand(c)))
            ce = {"integrand": ctx.formula_texts[name],
                  "E[integrand] - f": f"{len(diff.terms)} trace monomials (typeset in the "
                                      f"derivation's last step)", "layers": spec.layers}
            differences.append(step(f"E[{name}] - f", r"\mathbb E[\text{integrand}] - f = "
                                    + diff.latex(), "the difference, coefficients factored"))
        findings.append(Finding(name, ok, {"monomials": len(derived.terms)}, ce,
                                "" if ok else f"E[{name}] is not the in-context loss f",
                                summary=f"E[{name}] = f exactly (n, d symbolic, {spec.layers} "
                                        f"layers, full A_i)"))
    steps = [step("Derived loss", "", f"{spec.layers} layers of (9) through lsa_forward on the "
                  "prompt of eq. (1) (query label 0), 1/n dropped; E[e^2] by Isserlis."),
             step("Claimed loss", "", "The integrand read from the formulas as a block matrix "
                  "over the same letters (X_0 = [X, x_q]); its expectation by Isserlis."),
             step("Compare", "", "The two trace polynomials, coefficients cancelled."),
             *differences]
    return combine(findings, {"what": spec.what}, steps=steps)


def loss_form_truth(spec: LossForm, formulas: tuple, base: Mapping[str, str] | None = None,
                    extra: Callable | None = None) -> ExactValues:
    """``Claim(exact=...)``: a surviving mutant is judged by the same exact identity of trace
    polynomials (n, d and every letter symbolic: a proof for the layer count, not a sample), the
    other formulas at ``base`` (a corrected claim's correction); ``extra(F)`` adds the claim's
    other exact checks (their failure makes the mutant false)."""
    base = dict(base or {})

    def judge(name: str, mutant):
        F = {f.name: f.parse(base.get(f.name, f.text)) for f in formulas}
        F[name] = mutant
        ctx = Context(claim_id="ahn2023.judge", formulas=F, formula_texts={
            f.name: base.get(f.name, f.text) for f in formulas}, budget=BUDGETS["quick"])
        try:
            res = loss_form_symbolic(spec, ctx)
            if res.status == "pass" and extra is not None:
                res = extra(ctx)
        except Exception as exc:  # noqa: BLE001 - a judge must not end a mutate run
            return "undecided", f"not evaluable: {exc}"
        if res.status == "pass":
            return "true", f"the exact identity still holds with this {name} (n, d symbolic)"
        if res.status == "fail":
            return "false", f"it fails with this {name}: {res.reason}"
        return "undecided", res.reason or "undecided"

    return ExactValues(values=lambda point: None, words="the exact identity of the expectations",
                       definition=judge)


def sample_prompts(gen: torch.Generator, count: int, n: int, d: int, H: np.ndarray,
                   w_prior: str):
    """X_0 with N(0, Sigma) columns (Sigma = H^2) and w* ~ N(0, I) or N(0, Sigma^{-1})."""
    Ht = _t(H)
    X0 = Ht @ device_randn(count, d, n + 1, generator=gen, dtype=torch.float64)
    w = device_randn(count, d, 1, generator=gen, dtype=torch.float64)
    if w_prior != "identity":
        w = torch.linalg.inv(Ht) @ w
    return X0, w


def query_errors(X0, w, As, divisor=1):
    """The query error of (5) per prompt: [Z_k]_{d+1,n+1} + <w*, x_q>, Z_0 of eq. (1)."""
    d, n1 = X0.shape[-2], X0.shape[-1]
    Y0 = w.mT @ X0
    Y0 = torch.cat([Y0[..., :, :-1], torch.zeros_like(Y0[..., :, -1:])], dim=-1)
    Z = torch.cat([X0, Y0], dim=-2)
    mask = torch.eye(n1, dtype=torch.float64)
    mask[-1, -1] = 0
    layers = [_weights(_t(A), None, d, False) for A in As]
    Zk = lsa_forward(Z, layers, mask, divisor)
    return Zk[..., -1, -1] + (w.mT @ X0[..., :, -1:])[..., 0, 0]


def loss_form_numeric(spec: LossForm, ctx: Context, sizes: Mapping) -> TierResult:
    """Monte Carlo of the integrand over sampled prompts against the derived loss (the
    polynomial in float64), and of the real forward pass's squared query error against it."""
    from moments.montecarlo import estimate, z_critical

    F = ctx.formulas
    n, d = sizes["n"], sizes["d"]
    rng = ctx.rng("loss-form")
    p = float_point(rng, n, d, spec.layers, on_set=False)
    H = np.eye(d) if spec.isotropic else p.H
    gen = torch.Generator().manual_seed(ctx.mc_seed("loss-form-mc"))
    count = ctx.budget.mc_samples
    X0, w = sample_prompts(gen, count, n, d, H, spec.w_prior)
    As = [_t(a) * 0.25 for a in p.A]  # small weights: the sampled polynomial's tails stay light
    e2 = query_errors(X0, w, As) ** 2
    env = {f"A_{i}": As[i].numpy() for i in range(spec.layers)}
    if not spec.isotropic:
        env.update({"Sigma": H @ H, "Sigma_inv": np.linalg.inv(H @ H)})
    exact = float(derived_loss(spec.layers, "eq9", spec.w_prior, spec.isotropic).evaluate(
        env, {"n": n, "d": d}))
    sizes_ = {"n": n, "d": d}
    M = torch.eye(n + 1, dtype=torch.float64)
    M[-1, -1] = 0
    vals = {"X_0": X0, "w_star": w, "M": M, "Sigma": _t(H @ H)}
    vals.update({nm: As[i] for i, nm in enumerate(spec.letter_names)})
    z = z_critical(0.999, len(spec.integrands) + 1)
    model = estimate(e2.numpy())
    findings = [Finding("derived_loss_vs_forward_pass", abs(model.mean - exact) <= z * model.se,
                        {"sampled": model.as_dict(), "derived": exact},
                        {"n": n, "d": d, "seed": ctx.seed, "sampled": model.mean,
                         "derived": exact}, "the derived loss disagrees with the forward pass",
                        sampled=True, self_check=True)]
    for name in spec.integrands:
        try:
            extra = spec.build_float(F, vals, As, sizes_)
            got = tvalue(F[name], {**vals, **extra}, sizes_)
        except (ValueError, KeyError, RuntimeError) as exc:
            findings.append(Finding(name, False, {}, {"error": str(exc)},
                                    f"the integrand cannot be evaluated: {exc}"))
            continue
        got = got.reshape(count, -1)[:, 0]
        est = estimate(got.numpy())
        ok = bool(abs(est.mean - exact) <= z * est.se) if np.isfinite(est.mean) else None
        findings.append(Finding(name, ok, {"sampled": est.as_dict(0.999, len(spec.integrands) + 1),
                                           "derived_loss": exact},
                                None if ok is not False else {
                                    "n": n, "d": d, "seed": ctx.seed,
                                    "A": [a.tolist() for a in As], "E[integrand]": est.mean,
                                    "se": est.se, "f": exact},
                                "" if ok else f"E[{name}] differs from the loss f", sampled=True,
                                summary=f"Monte Carlo over {count} prompts: E[{name}] = "
                                        f"{est.mean:.4g} +- {z * est.se:.2g}, f = {exact:.4g}"))
    return combine(findings, {"what": spec.what})


# ------------------------------------------------------------------------------------------------
# App. B.1: the loss of Theorem 3 (Sigma = I, w* ~ N(0, I), two layers)
# ------------------------------------------------------------------------------------------------
_B1_RIGHT = "(Identity(n+1) + M*X_0.T*A_0*X_0)*(Identity(n+1) + M*X_0.T*A_1*X_0)"
_B1_LEFT = "(Identity(n+1) + X_0.T*A_1*X_0*M)*(Identity(n+1) + X_0.T*A_0*X_0*M)"
B1_FORMULAS = (
    NamedFormula("f_w", f"trace({_B1_LEFT}*X_0.T*w_star*w_star.T*X_0*{_B1_RIGHT})",
                 syms("n", "d", "X_0", "M", "A_0", "A_1", "w_star"), equation="App. B.1",
                 description="the integrand of f(A_0, A_1) before E over w*"),
    NamedFormula("f_x", f"trace({_B1_LEFT}*X_0.T*X_0*{_B1_RIGHT})",
                 syms("n", "d", "X_0", "M", "A_0", "A_1"), equation="App. B.1",
                 description="the integrand after E w* w*^T = I"),
)
B1_SPEC = LossForm(("f_w", "f_x"), 2, "identity", True, lambda F, env, A: {}, ("A_0", "A_1"),
                   "E Tr(...) of App. B.1 = the loss of two layers of (9), Sigma = I")
B1_SIZES = {"quick": {"n": 3, "d": 2}, "default": {"n": 5, "d": 3}, "paper": {"n": 10, "d": 3}}
_B1_FIX = "(Identity(n+1) - M)"
B1 = Claim(
    id="ahn2023.eq_b1_loss", title="The two-layer loss of App. B.1 (proof of Thm. 3)",
    paper=PAPER,
    statement=(r"$f(A_0,A_1)=\mathbf E\,\mathrm{Tr}\big(\prod(I+X_0^\top A_iX_0M)X_0^\top w_\star "
               r"w_\star^\top X_0\prod(I+MX_0^\top A_iX_0)\big)=\mathbf E\,\mathrm{Tr}\big(\prod"
               r"(I+X_0^\top A_iX_0M)X_0^\top X_0\prod(I+MX_0^\top A_iX_0)\big)$ "
               r"(products over the two layers, the left one the transpose of the right one)."),
    assumptions=("x ~ N(0, I_d), w* ~ N(0, I_d) (Thm. 3)", "two layers of (9), 1/n dropped "
                 "(absorbed into A_i as in (22))", "the printed left product runs over i = 1..2 "
                 "(A_2 does not exist): read as the transpose of the right one, A_1 then A_0"),
    formulas=B1_FORMULAS,
    checks={"symbolic": lambda ctx: loss_form_symbolic(B1_SPEC, ctx),
            "numeric": lambda ctx: loss_form_numeric(B1_SPEC, ctx, sizes_of(ctx, B1_SIZES))},
    setting=proof_setting(B1_SIZES, "identity", "Theorem 3 assumes Sigma = I"),
    correction=Correction(
        "the query column: Tr((I - M) ... (I - M))",
        "f is the expected squared query label of Zbar_k (Lemma 9, eq. (23)): without the "
        "projection I - M the trace sums the squared labels of all n + 1 columns",
        {"f_w": f"trace({_B1_FIX}*{_B1_LEFT}*X_0.T*w_star*w_star.T*X_0*{_B1_RIGHT}*{_B1_FIX})",
         "f_x": f"trace({_B1_FIX}*{_B1_LEFT}*X_0.T*X_0*{_B1_RIGHT}*{_B1_FIX})"}))


# ------------------------------------------------------------------------------------------------
# App. B.4: the loss of Lemma 8's proof and the commutation of adjacent factors on S
# ------------------------------------------------------------------------------------------------
B4_FORMULAS = (
    NamedFormula("factor", "Identity(n+1) + M*X_0.T*A*X_0", syms("n", "d", "X_0", "M", "A"),
                 equation="App. B.4", shape=("n+1", "n+1"),
                 description="G(X_0, A) = X_0 prod_l factor(A_l)"),
    NamedFormula("loss", "trace((Identity(n+1) - M)*G.T*Inverse(Sigma)*G*(Identity(n+1) - M))",
                 syms("n", "d", "G", "M", "Sigma"), equation="App. B.4",
                 description="f(A) = E[loss] (w* integrated out: E w* w*^T = Sigma^{-1})"),
)


def _b4_g(ev: Callable) -> Callable:
    """G = X_0 prod_l factor(A_l), each factor evaluated by ``ev(expr, values, *sizes)`` (the
    kernel's ``block_value`` or float64 ``tvalue``)."""
    def build(F, vals, As, *sizes):
        G = vals["X_0"]
        for a in As:
            G = G @ ev(F["factor"], {**vals, "A": a}, *sizes)
        return {"G": G}
    return build


B4_SPEC = LossForm(("loss",), 2, "sigma_inverse", False, _b4_g(block_value), ("A_0", "A_1"),
                   "E Tr((I - M) G^T Sigma^{-1} G (I - M)) = the loss of (9), "
                   "w* ~ N(0, Sigma^{-1})", _b4_g(tvalue))
B4_SIZES = {"quick": {"n": 3, "d": 2, "layers": 3}, "default": {"n": 5, "d": 3, "layers": 3},
            "paper": {"n": 10, "d": 3, "layers": 3}}


def _b4_commute(p: Point, F) -> list:
    """(I + M X_0^T A_l X_0)(I + M X_0^T A_{l+1} X_0) = the product in the other order, A_l on S."""
    vals = p.values()
    out = []
    for l in range(p.layers - 1):
        f0 = value(F, "factor", {**vals, "A": p.A[l]}, p.exact)
        f1 = value(F, "factor", {**vals, "A": p.A[l + 1]}, p.exact)
        out.append(("commutation", mul(f0, f1, exact=p.exact), mul(f1, f0, exact=p.exact)))
    return out


B4_COMMUTE = Pointwise(_b4_commute, *on_set_points(2),
                       "adjacent factors commute on S (A_l = a_l Sigma^{-1})")


def _b4_symbolic(ctx: Context) -> TierResult:
    loss = loss_form_symbolic(B4_SPEC, ctx)
    comm = _exact_compare(B4_COMMUTE, ctx, ctx.formulas)
    return _merge(loss, comm)


def _b4_numeric(ctx: Context) -> TierResult:
    loss = loss_form_numeric(B4_SPEC, ctx, sizes_of(ctx, B4_SIZES))
    comm = _float_compare(B4_COMMUTE, ctx, ctx.formulas)
    return _merge(loss, comm)


B4 = Claim(
    id="ahn2023.eq_b4_loss",
    title="Lemma 8's proof (App. B.4): the loss through G, and commuting factors on S",
    paper=PAPER,
    statement=(r"$f(A)=\mathbf E\,\mathrm{Tr}((I-M)G(X_0,A)^\top\Sigma^{-1}G(X_0,A)(I-M))$ with "
               r"$G(X_0,A)=X_0\prod_{\ell}(I+MX_0^\top A_\ell X_0)$, and for $A_\ell=a_\ell"
               r"\Sigma^{-1}$ the factors $(I+MX_0^\top A_\ell X_0)$, "
               r"$(I+MX_0^\top A_{\ell+1}X_0)$ "
               r"commute."),
    assumptions=("x ~ N(0, Sigma), w* ~ N(0, Sigma^{-1}) (Thm. 4)", "parameters (9), the 1/n "
                 "dropped (absorbed into A_i); the loss at two layers with full A_i"),
    formulas=B4_FORMULAS, checks={"symbolic": _b4_symbolic, "numeric": _b4_numeric},
    setting=proof_setting(B4_SIZES), exact=loss_form_truth(  # mutate's judge: the same identity
        B4_SPEC, B4_FORMULAS, extra=lambda ctx: _exact_compare(B4_COMMUTE, ctx, ctx.formulas)))


# mutate's judge of a surviving mutant: the same exact identity (from the correction)
B1 = dataclasses.replace(B1, exact=loss_form_truth(B1_SPEC, B1_FORMULAS, B1.correction.formulas))
