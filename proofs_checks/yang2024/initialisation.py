"""yang2024 Sec. 3.1 and App. D.1: what Assumption 3 gives (the remark after it), and the steps of
Proposition 1's proof: the law (71) of q_h = Q_h^(0) v_k, the shape of Atilde = exp(D_k(:, 2:N))
in the integral after (71), and the zero set of g(q) = <y, exp(V^T q_1)> (finite, so of
probability 0).  Each compared with what the definitions give: the moment kernel for (71), the
matrices themselves for the shapes, exact root counts (Descartes, sympy) for g."""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import sympy
import torch

from models.device import randn
from moments.tensor import gaussian_matrix, vector
from moments.wick import expectation
from verify.claim import Claim, Context, Correction, TierResult
from verify.evidence import Finding, combine, step
from verify.formulas import FormulaSymbol, NamedFormula

from .setting import PAPER, SETTING, make_instance
from .common import _H, _K, _N, _d, _m, _mc_compare, float_value


def _value(expr, sizes: dict):
    """A scalar formula at concrete sizes (a number, or None where it is not one)."""
    v = sympy.sympify(expr).subs({s: sizes[s.name] for s in sympy.sympify(expr).free_symbols if s.name in sizes})
    return v if v.is_number and v.is_real else None


# ==============================================================================================
# The remark after Assumption 3 (Sec. 3.1): distinct tokens; orthogonal tokens force K <= d
# ==============================================================================================
SIZE_SETS = ({"N": 3, "K": 6, "d": 4, "m": 2, "H": 5}, {"N": 5, "K": 7, "d": 2, "m": 6, "H": 3})
REMARK_FORMULAS = (
    NamedFormula("distinct_upto", "K", (_N, _K, _d, _m, _H), equation="Sec. 3.1, after Assumption 3",
                 weaker="smaller",
                 description="c such that Assumption 3 makes v_1, ..., v_c pairwise distinct ('Assumption 3 "
                             "implies that the dictionary has distinct tokens': c = K)"),
    NamedFormula("K_max_orthogonal", "d", (_N, _d, _m), equation="Sec. 3.1, after Assumption 3",
                 weaker="larger", sharp=lambda: sympy.Symbol("d", positive=True, integer=True),
                 description="pairwise orthogonal (unit) tokens force K <= K_max_orthogonal"),
)


def _unit_rational(i: int, d: int) -> sympy.Matrix:
    """A rational unit vector in R^d whose first entry is (i^2 - 1)/(i^2 + 1) (distinct for i >= 2)."""
    v = sympy.zeros(d, 1)
    v[0], v[1] = sympy.Rational(i * i - 1, i * i + 1), sympy.Rational(2 * i, i * i + 1)
    return v


def _dictionary(sizes: dict, duplicate: bool) -> sympy.Matrix:
    """Prompt tokens with pairwise distinct first entries (Assumption 3); the query tokens copies of
    v_1 (``duplicate``: allowed, Assumption 3 speaks of V only) or further distinct tokens."""
    N, K, d = sizes["N"], sizes["K"], sizes["d"]
    cols = [_unit_rational(i + 2, d) for i in range(N)]
    cols += [cols[0] if duplicate else _unit_rational(N + i + 2, d) for i in range(K - N)]
    return sympy.Matrix.hstack(*cols)


def _assumption3(V: sympy.Matrix) -> bool:
    return any(len(set(V[r, :])) == V.shape[1] for r in range(V.shape[0]))


def _distinct_upto(F) -> Finding:
    """Assumption 3 must make v_1..v_c distinct for every dictionary that meets it."""
    rows, bad = [], None
    for sizes in SIZE_SETS:
        c = _value(F["distinct_upto"], sizes)
        if c is None:
            return Finding("distinct_tokens", None, reason="the formula is not a number at the sizes")
        for duplicate in (False, True):
            Vall = _dictionary(sizes, duplicate)
            meets = _assumption3(Vall[:, :sizes["N"]])
            n = int(math.floor(c)) if c >= 0 else 0
            cols = [tuple(Vall[:, j]) for j in range(min(n, sizes["K"]))]
            ok = (not meets) or (n <= sizes["K"] and len(set(cols)) == len(cols))
            rows.append({**sizes, "duplicates": duplicate, "assumption_3": meets, "c": str(c), "ok": ok})
            if not ok and bad is None:
                first = next((j for j in range(1, len(cols)) if cols[j] in cols[:j]), None)
                bad = {**sizes, "c": str(c), "dictionary": "v_{N+1} = ... = v_K = v_1" if duplicate else "generic",
                       "equal_tokens": None if first is None else [cols.index(cols[first]) + 1, first + 1],
                       "why": "" if first is not None else "c exceeds the number K of tokens"}
    return Finding("distinct_tokens", bad is None, {"dictionaries": rows}, bad,
                   "" if bad is None else "a dictionary meets Assumption 3 but v_1..v_c are not distinct")


def _orthogonal(F) -> Finding:
    """Orthonormal tokens: the Gram matrix V^T V = I_K has rank K <= rank V <= d, and the standard basis
    attains K = d; so the formula must be >= d (and every value >= d holds)."""
    rows, bad = [], None
    for sizes in SIZE_SETS + ({"N": 2, "K": 7, "d": 7, "m": 3, "H": 2},):
        d = sizes["d"]
        E = sympy.eye(d)                                   # d pairwise orthogonal unit tokens
        gram_rank = (E.T * E).rank()
        b = _value(F["K_max_orthogonal"], sizes)
        ok = b is not None and gram_rank == d and bool(b >= d)
        rows.append({**sizes, "orthogonal_tokens_attained": d, "paper_bound": str(b), "ok": ok})
        if not ok and bad is None:
            bad = {**sizes, "paper_bound": str(b), "tokens": f"the standard basis of R^{d}: K = {d} pairwise orthogonal"}
    return Finding("orthogonal_tokens", bad is None, {"sizes": rows, "why": "rank(V^T V) = K <= rank(V) <= d"},
                   bad, "" if bad is None else "K = d orthogonal unit tokens exceed the bound")


def remark_symbolic(ctx: Context) -> TierResult:
    steps = [step("Assumption 3", r"x_i\ne x_j\ (i\ne j\le N)\Rightarrow v_i\ne v_j\ (i\ne j\le N)",
                  "a row of V = (v_1, ..., v_N) with distinct entries separates the prompt tokens only: the "
                  "dictionary with v_{N+1} = v_1 meets it (exact rational unit tokens)."),
             step("Orthogonal tokens", r"V^\top V = I_K\Rightarrow K=\operatorname{rank}(V^\top V)\le d",
                  "and the standard basis attains K = d.")]
    return combine([_distinct_upto(ctx.formulas), _orthogonal(ctx.formulas)], steps=steps)


def remark_numeric(ctx: Context) -> TierResult:
    """The same on float tokens: a random dictionary (Gaussian, normalised) with v_{N+1} := v_1, and
    d orthonormal tokens from a QR factorisation."""
    F = ctx.formulas
    gen = torch.Generator().manual_seed(ctx.seed_for("assumption3"))
    rows, bad = [], None
    for sizes in SIZE_SETS:
        inst = make_instance(ctx, "assumption3", {k: sizes[k] for k in ("K", "d", "m", "N", "H")})
        V = inst.dictionary.V_all.numpy().copy()
        V[:, sizes["N"]] = V[:, 0]                                       # a repeated query token
        meets = any(np.min(np.abs(np.subtract.outer(r, r))[~np.eye(sizes["N"], dtype=bool)]) > 1e-9
                    for r in V[:, :sizes["N"]])
        c = _value(F["distinct_upto"], sizes)
        n = int(math.floor(c)) if c is not None and c >= 0 else 0
        X = V[:, :min(n, sizes["K"])]
        dist = np.linalg.norm(X[:, :, None] - X[:, None, :], axis=0) + np.eye(X.shape[1]) if X.shape[1] else np.ones((1, 1))
        ok = c is not None and (not meets or (n <= sizes["K"] and float(dist.min()) > 1e-9))
        Qm, _ = torch.linalg.qr(randn(sizes["d"], sizes["d"], generator=gen, dtype=torch.float64))
        gram = (Qm.T @ Qm - torch.eye(sizes["d"], dtype=torch.float64)).abs().max().item()
        b = _value(F["K_max_orthogonal"], sizes)
        ok_o = b is not None and gram < 1e-12 and float(b) >= sizes["d"]
        rows.append({**sizes, "assumption_3": meets, "c": str(c), "distinct_ok": ok, "orthogonal_ok": ok_o})
        if not (ok and ok_o) and bad is None:
            bad = {**sizes, "c": str(c), "paper_bound": str(b), "seed": ctx.seed,
                   "distinct_ok": ok, "orthogonal_ok": ok_o}
    return combine([Finding("float_dictionaries", bad is None, {"rows": rows}, bad,
                            "" if bad is None else "a float dictionary contradicts the remark")])


PROP1_ASSUMPTION3 = Claim(
    id="yang2024.prop1_assumption3",
    title="What Assumption 3 gives: distinct prompt tokens; orthogonal tokens force K ≤ d (Sec. 3.1)",
    paper=PAPER,
    statement=(r"'Assumption 3 implies that $\mathcal V$ has distinct tokens, i.e., $v_j\ne v_k$ when $j\ne k$'; "
               r"pairwise orthogonal tokens imply that the dictionary size $K$ is at most $d$."),
    assumptions=("Assumption 3: a row of V = (v_1, ..., v_N) has pairwise distinct entries",
                 "unit-norm tokens (Sec. 2)"),
    formulas=REMARK_FORMULAS,
    checks={"symbolic": remark_symbolic, "numeric": remark_numeric},
    setting=SETTING,
    correction=Correction(
        description="Assumption 3 implies that the N prompt tokens v_1, ..., v_N are distinct",
        reason="Assumption 3 constrains a row of V = (v_1, ..., v_N) only: a dictionary whose query token "
               "v_{N+1} repeats v_1 meets it; distinctness of all K tokens is the separate assumption of Sec. 2",
        formulas={"distinct_upto": "N"}),
)


# ==============================================================================================
# App. D.1: the proof of Proposition 1
# ==============================================================================================
_beta = FormulaSymbol("beta", positive=True)
_vsq = FormulaSymbol("vk_sq", positive=True)
PROP1_PROOF_FORMULAS = (
    NamedFormula("q_var", "beta**2*vk_sq", (_beta, _vsq), equation="(71)",
                 description="the variance of each entry of q_h = Q_h^(0) v_k (i.i.d. entries)"),
    NamedFormula("Atilde_cols", "m - 1", (_m, _N, _H), equation="App. D.1, after (71)",
                 description="the integral runs over R^{N x (Atilde_cols)}, the space of Atilde = exp(D_k(:, 2:N))"),
    NamedFormula("P_zero", "0", (), equation="App. D.1, end",
                 description="P(<y, x(q_1)> = 0) for a fixed y != 0, x(q_1) = exp(V^T q_1)"),
)
_SHAPES = ({"N": 4, "m": 2, "H": 6, "d": 4}, {"N": 3, "m": 5, "H": 5, "d": 3})


@lru_cache(maxsize=1)
def _q_moment():
    """E[(a^T Q v)(b^T Q v)] for Q with i.i.d. N(0, 1) entries (the moment kernel): (a^T b)(v^T v)."""
    Q = gaussian_matrix("Q", "d", "d")
    a, b, v = vector("a", "d"), vector("b", "d"), vector("v", "d")
    return expectation((a.T @ Q @ v) * (b.T @ Q @ v)).simplify()


def _exp_sum_zeros(y: list, expo: list, scale: list) -> int:
    """The number of real zeros of g(q) = sum_i y_i s_i e^{q a_i} (rational a_i distinct, s_i > 0
    rational): with w = e^{q / D} (D the common denominator) g is w^{min} times a polynomial in w, and
    its positive roots are g's zeros (sympy counts them exactly)."""
    w = sympy.Symbol("w", positive=True)
    D = sympy.ilcm(*[sympy.Rational(a).q for a in expo])
    ints = [int(sympy.Rational(a) * D) for a in expo]
    low = min(ints)
    poly = sympy.Poly(sum(yi * si * w ** (e - low) for yi, si, e in zip(y, scale, ints)), w)
    if poly.is_zero:
        return -1                                   # g vanishes identically
    return sum(1 for r in sympy.real_roots(poly) if r > 0)


def prop1_proof_symbolic(ctx: Context) -> TierResult:
    F = ctx.formulas
    findings = []
    # (71): E[q q^T] = beta^2 ||v_k||^2 I_d, Q^(0) = beta N(0, 1)
    mom = _q_moment()
    beta = sympy.Symbol("beta", positive=True)
    rows, bad = [], None
    for v in (sympy.Matrix([1, 0, 0]), sympy.Matrix([sympy.Rational(3, 5), sympy.Rational(4, 5), 0]),
              sympy.Matrix([2, -1, 2])):
        for a, b in ((sympy.Matrix([1, 0, 0]), sympy.Matrix([1, 0, 0])), (sympy.Matrix([1, 0, 0]), sympy.Matrix([0, 1, 0]))):
            derived = beta ** 2 * mom.evaluate({"a": a, "b": b, "v": v}, {"d": 3}, exact=True)
            val = sympy.sympify(F["q_var"]).subs({sympy.Symbol("beta", positive=True): beta,
                                                   sympy.Symbol("vk_sq", positive=True): (v.T * v)[0]})
            paper = val * (a.T * b)[0]
            ok = sympy.simplify(paper - derived) == 0
            rows.append({"v": [str(x) for x in v], "same_entry": a == b, "ok": ok})
            if not ok and bad is None:
                bad = {"v": [str(x) for x in v], "entries": "same" if a == b else "different",
                       "paper": str(paper), "derived": str(derived)}
    findings.append(Finding("law_of_q_71", bad is None, {"cases": rows}, bad,
                            "" if bad is None else "(71) differs from E[(Q v)(Q v)^T] = beta^2 ||v||^2 I"))
    findings.append(_atilde(F, exact=True))
    findings.append(_zeros(F, ctx))
    steps = [step("(71)", r"\mathbb E[(Qv)(Qv)^\top] = \beta^2\|v\|_2^2 I_d",
                  "Wick over Q with i.i.d. N(0, beta^2) entries (independent Gaussian entries of q_h)."),
             step("Atilde", r"\tilde A = \exp(D_k(:,2{:}N))\in\mathbb R^{N\times(N-1)}",
                  "D_k = V^T (Q_1 v_k, ..., Q_H v_k) is N x H; its columns 2..N."),
             step("Zeros of g", r"g(q) = \sum_i y_ie^{\tilde q^\top\tilde v_i}e^{qv_{1i}}",
                  "with distinct rational v_1i: w = e^{q/D} makes g a polynomial with N terms; sympy counts its "
                  "positive roots (at most N - 1, Descartes): finitely many, so P(g = 0) = 0.")]
    return combine(findings, steps=steps)


def _atilde(F, exact: bool) -> Finding:
    rows, bad = [], None
    for sizes in _SHAPES:
        N, H, d = sizes["N"], sizes["H"], sizes["d"]
        V = sympy.Matrix(d, N, lambda i, j: sympy.Rational((3 * i + 5 * j) % 7 - 3, 4))
        Qs = [sympy.Matrix(d, d, lambda i, j, h=h: sympy.Rational((i + 2 * j + h) % 5 - 2, 3)) for h in range(H)]
        vk = sympy.Matrix([sympy.Rational(1, 2)] * d)
        Dk = sympy.Matrix.hstack(*[V.T * Qh * vk for Qh in Qs])            # N x H
        cols = Dk[:, 1:N].applyfunc(sympy.exp).shape[1]                    # Atilde = exp(D_k(:, 2:N))
        val = _value(F["Atilde_cols"], sizes)
        ok = val is not None and val == cols
        rows.append({**sizes, "Atilde_columns": cols, "paper": str(val), "ok": ok})
        if not ok and bad is None:
            bad = {**sizes, "Atilde_shape": [N, cols], "paper_columns": str(val)}
    return Finding("Atilde_shape", bad is None, {"sizes": rows}, bad,
                   "" if bad is None else "the integral's domain is not the space of Atilde = exp(D_k(:, 2:N))")


ZERO_CASES = ((3, (2, -3, 1), (sympy.Rational(1, 2), -1, sympy.Rational(1, 3))),
              (4, (1, -1, 1, -1), (-1, sympy.Rational(-1, 3), sympy.Rational(1, 4), 1)),
              (4, (3, 5, -2, 7), (0, sympy.Rational(2, 3), sympy.Rational(-3, 5), sympy.Rational(4, 5))))


def _zeros(F, ctx: Context) -> Finding:
    """P(<y, x> = 0) is 0 when g has finitely many zeros: counted exactly for rational instances with
    distinct exponents v_1i (Assumption 3) and positive factors e^{q~^T v~_i} (rational stand-ins)."""
    rng = ctx.rng("prop1-zeros")
    rows, derived = [], sympy.Integer(0)
    for N, y, expo in ZERO_CASES:
        for _ in range(2):
            scale = [sympy.Rational(int(rng.integers(1, 9)), int(rng.integers(1, 9))) for _ in range(N)]
            z = _exp_sum_zeros(list(y), list(expo), scale)
            rows.append({"N": N, "y": [str(v) for v in y], "exponents": [str(a) for a in expo],
                         "zeros": z, "finite": 0 <= z <= N - 1})
            if not 0 <= z <= N - 1:
                derived = None
    # without Assumption 3 (v_1 = v_2), y = (1, -1, 0, ...) makes g vanish identically: P = 1
    contrast = _exp_sum_zeros([1, -1, 0], [sympy.Rational(1, 2), sympy.Rational(1, 2), 1], [1, 1, 1])
    if derived is None:
        return Finding("zero_probability", None, {"cases": rows}, reason="a zero set was not finite")
    val = sympy.sympify(F["P_zero"])
    ok = val.is_number and sympy.simplify(val - derived) == 0
    return Finding("zero_probability", ok, {"cases": rows, "derived": "0: finitely many zeros (<= N - 1), a "
                                            "Gaussian null set", "paper": str(val),
                                            "without_assumption_3": "g vanishes identically" if contrast == -1 else contrast},
                   None if ok else {"paper": str(val), "derived": "0"},
                   "" if ok else "the probability of <y, x> = 0 is 0 (g has at most N - 1 real zeros)")


def prop1_proof_numeric(ctx: Context) -> TierResult:
    F = ctx.formulas
    inst = make_instance(ctx)
    findings = [_atilde(F, exact=False)]
    # (71) by sampling: q = Q^(0) v with Q^(0) entries N(0, beta^2), for a unit token and for 2 v
    n = ctx.budget.mc_samples // 10
    gen = torch.Generator().manual_seed(ctx.mc_seed("prop1-71"))
    comparisons = 4
    for beta, v in ((1.0, inst.dictionary.V_all[:, 0]), (0.5, 2 * inst.dictionary.V_all[:, 1])):
        Q = beta * randn(n, inst.d, inst.d, generator=gen, dtype=torch.float64)   # Q_h^(0), Prop. 1
        q = (Q @ v).numpy()                                             # (n, d)
        vsq = float(v @ v)
        target = float(float_value(F["q_var"], {"beta": beta, "vk_sq": vsq}))
        findings.append(_mc_compare(f"variance_beta_{beta:g}", q[:, 0] ** 2, {"paper": target}, comparisons,
                                    ["paper"], {"beta": beta, "vk_sq": vsq}))
        findings.append(_mc_compare(f"covariance_beta_{beta:g}", q[:, 0] * q[:, 1], {"paper": 0.0}, comparisons,
                                    ["paper"], {"beta": beta, "vk_sq": vsq}))
    # P(<y, x> = 0): g has finitely many zeros on a float instance (sign changes of g on a fine grid
    # agree with the Descartes bound), and the Monte Carlo frequency of |<y, x>| <= 1e-12 |y| |x|
    V = inst.dictionary.V.numpy()
    rng = ctx.mc_rng("prop1-g")  # y, the grid's q and the sample: a redraw tests other ones
    y = rng.standard_normal(inst.N)
    counts = []
    qt = rng.standard_normal((20, inst.d - 1))
    grid = np.linspace(-60, 60, 24001)
    for t in qt:
        c = y * np.exp(V[1:].T @ t)
        gvals = (c[None] * np.exp(np.outer(grid, V[0]) - np.max(np.outer(grid, V[0]), axis=1, keepdims=True))).sum(1)
        counts.append(int((np.sign(gvals[1:]) != np.sign(gvals[:-1])).sum()))
    q1 = rng.standard_normal((ctx.budget.mc_samples, inst.d))
    x = np.exp(q1 @ V - (q1 @ V).max(1, keepdims=True))
    hits = (np.abs(x @ y) <= 1e-12 * np.linalg.norm(x, axis=1) * np.linalg.norm(y)).astype(float)
    finite = max(counts) <= inst.N - 1
    val = _value(F["P_zero"], {})
    f = _mc_compare("zero_probability", hits, {"paper": float(val) if val is not None else math.nan}, comparisons,
                    ["paper"], {"sign_changes_of_g": counts, "descartes_bound": inst.N - 1})
    if not finite:
        f = Finding("zero_probability", None, f.evidence, reason="more sign changes than N - 1: the grid is too coarse")
    findings.append(f)
    return combine(findings, {"instance": inst.as_dict()})


PROP1_PROOF = Claim(
    id="yang2024.prop1_proof",
    title="Steps of Prop. 1's proof (App. D.1): the law (71), the integral's domain, the zeros of g",
    paper=PAPER,
    statement=(r"$q_h=Q_hv_k$ has i.i.d. $\mathcal N(0,\beta^2\|v_k\|_2^2)$ entries (71); "
               r"'$\int_{\mathbb R^{N\times(m-1)}}\mathbb P(x\in\mathcal C(\tilde A)|\tilde A)d\mu(\tilde A)>0$' with "
               r"$\tilde A=\exp(D_k(:,2{:}N))$; $g(q|\tilde q_1)=\langle y,x(q_1)\rangle$ has finitely many zeros, so "
               r"$\mathbb P(\langle y,x\rangle=0)=0$."),
    assumptions=("Q_h^(0) entries i.i.d. N(0, beta^2)", "Assumption 3: the entries v_1i are distinct", "H >= N"),
    formulas=PROP1_PROOF_FORMULAS,
    checks={"symbolic": prop1_proof_symbolic, "numeric": prop1_proof_numeric},
    setting=SETTING,
    correction=Correction(
        description="the integral runs over R^{N x (N-1)}, the space of Atilde = exp(D_k(:, 2:N))",
        reason="D_k = V^T (q_1, ..., q_H) is N x H and Atilde takes its columns 2..N: N - 1 columns "
               "(the next line of the proof says Atilde in R^{N x (N-1)}); m is the representation dimension",
        formulas={"Atilde_cols": "N - 1"}),
)
