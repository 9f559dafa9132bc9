"""Isserlis' theorem and the Wishart moments in Sec. 4 and the proofs of Lemmas A.2, A.5
(lines 224, 396, 401, 440, 513).

Factor positions 1..2k of (sum_i x_i x_i^T)^k as in ``pairings``: position 2m - 1 is x_{i_m},
position 2m is x_{i_m}^T; a pairing p of the positions, G_p and G'_p its graphs.  The checks
derive each side without the paper's closed forms:

* line 224: a Wishart matrix (1/n) Y Y^T, Y with columns N(0, C), is symmetric at every draw and
  has the moments E[(W_C / n)^k] of ``moments.wishart``; the named matrix is tested for both
  (exact realisations; its moments by the moment kernel);
* (14): zero-mean jointly Gaussian matrices M^(j) = sum_m g_m C_{j,m} (g ~ N(0, I), rational
  C): E[M^(1) ... M^(2k)] from the Gaussian moments E g^a = prod (a_m - 1)!!, and the paired
  products E[M(p)^(1) ... M(p)^(2k)] from independent copies per pair (E g_m g_m' = delta);
* (15): E[(sum x_i x_i^T)^k] = (E tr W^k / d) I (``moments.wishart``) against the sum over the
  pairings of the named number of positions of the sample-tuple counts times the paired
  single-sample products (``pairings``);
* (18): the paired product of one sample from Gaussian moments of independent copies against the
  unrolled sum over index tuples in the named range;
* line 513: E[(sum x_i x_i^T)^k], x_i ~ N(0, Sigma*), from ``moments.wishart`` against the sum over
  pairings of the named term (n^{C(G_p)}, the traces of the cycles of G'_p other than c*, and
  Sigma*^{|c*|}) at rational Sigma*, n symbolic."""
from __future__ import annotations

import itertools
import math
from functools import lru_cache

import sympy

from moments import wishart_sympy as ws
from verify.claim import Claim, Context, Correction, TierResult
from verify.evidence import Finding, combine, step
from verify.formulas import FormulaSymbol, NamedFormula

from ..kit import looped_icl as li
from ..kit.matrices import evaluate
from ..kit.looped_loss import formula_expectation
from .common import _A, _A_HALF, _D, _K, _N, _SIGMA, _SIGMA_STAR, _SIGMA_STAR_HALF, PAPER, _setting
from .pairings import c_g, pairings, paired_single, sample_count

ISSERLIS_SETTING = _setting({"n": 4, "d": 3, "L": 2, "k": 3})
_CROSS = FormulaSymbol("crossings")
_CG = FormulaSymbol("C_G", positive=True)
_CSTAR = FormulaSymbol("c_star", positive=True)
_M1, _M2, _M3 = (FormulaSymbol(f"m{j}") for j in (1, 2, 3))
_P1, _P2, _P3 = (FormulaSymbol(f"p{j}", positive=True) for j in (1, 2, 3))


def _value(ctx: Context, name: str, env: dict):
    expr = ctx.formulas[name]
    return sympy.sympify(expr).subs({s: env[s.name] for s in expr.free_symbols if s.name in env})


def _gaussian_moment(powers) -> int:
    """E prod_m g_m^{a_m} for independent standard normals: prod (a_m - 1)!! (0 if one is odd)."""
    out = 1
    for a in powers:
        if a % 2:
            return 0
        out *= math.prod(range(1, a, 2))
    return out


def crossings(p) -> int:
    """The crossing pairs {a, b}, {c, e} of a pairing (a < c < b < e)."""
    return sum(1 for (a, b), (c, e) in itertools.combinations(p, 2)
               if a < c < b < e or c < a < e < b)


def _sigma_letter(expr) -> sympy.Symbol:
    """The commutative symbol Sigma of ``moments.wishart_sympy.power_moment``."""
    return next(x for x in expr.free_symbols if x.name == "Sigma")


def _at(expr, env: dict):
    """A matrix formula's exact value: its scalars substituted first (so that a power's
    exponent is a number), then its matrices."""
    scalars = {s: env[s.name] for s in expr.free_symbols
               if s.name in env and not isinstance(env[s.name], sympy.MatrixBase)}
    return evaluate(expr.xreplace(scalars), env, exact=True)


# ----- line 224 ---------------------------------------------------------------------------------
def _wishart_symbolic(ctx: Context) -> TierResult:
    """Two exact instances (d = 2, 3: Sigma* = R^2, A = B^2 rational positive definite): the
    named matrix at an exact draw X (rational entries) against symmetry and positive
    semidefiniteness (principal minors), which every draw of a Wishart matrix has; and E[F^k],
    k = 2, 3, from the moment kernel (n symbolic) against the Wishart moments E[(W_C / n)^k]
    with C = E[F]."""
    F = ctx.formulas["wishart"]
    rng = ctx.rng("sec4-wishart")
    sym_bad, mom_bad, rows = None, None, []
    u0, u1 = sympy.MatrixSymbol("u0", li.D, 1), sympy.MatrixSymbol("u1", li.D, 1)
    polys = {k: formula_expectation([u0.T * (sympy.MatPow(F, k) if k > 1 else F) * u1], layers=2)
             for k in (1, 2, 3)}

    def moment(k: int, env: dict, d: int) -> sympy.Matrix:  # E[F^k] entry by entry
        def entry(i, j):
            e = {**env, "u0": sympy.eye(d)[:, i], "u1": sympy.eye(d)[:, j]}
            v = polys[k].evaluate(e, {"n": li.N, "d": d}, exact=True)
            return sympy.cancel(v[0, 0] if isinstance(v, sympy.MatrixBase) else v)
        return sympy.Matrix(d, d, entry)

    for d in (2, 3):
        R, B = li.spd(d, rng), li.spd(d, rng, values=(1, 2, 3, 4), dens=(2, 3))
        n = d + 2
        X = R * sympy.Matrix(d, n, lambda i, j: sympy.Rational(int(rng.integers(-3, 4)), 2))
        draw = sympy.Matrix(evaluate(F, {"Sigma": X * X.T / n, "A": B * B, "A_half": B,
                                         "Sigma_star": R * R, "Sigma_star_half": R,
                                         "n": n, "d": d}, exact=True))
        symmetric = draw - draw.T == sympy.zeros(d, d)
        psd = symmetric and all(draw.extract(list(c), list(c)).det() >= 0
                                for m in range(1, d + 1)
                                for c in itertools.combinations(range(d), m))
        rows.append({"d": d, "draw_symmetric": symmetric, "draw_psd": psd})
        if not psd and sym_bad is None:
            sym_bad = {"d": d, "n": n, "X": str(X.tolist()), "Sigma_star": str((R * R).tolist()),
                       "A": str((B * B).tolist()), "named_at_X": str(draw.tolist())}
        env = {"Sigma": R * R, "Sigma_inv": (R * R).inv(), "R": R, "R_inv": R.inv(), "A": B * B,
               "B": B, "u": sympy.zeros(d, 1)}
        C = moment(1, env, d)
        for k in (2, 3):
            named = moment(k, env, d)
            wish = ws.power_moment(k)
            poly = sympy.Poly(sympy.expand(wish), _sigma_letter(wish))
            target = sympy.zeros(d, d)
            for (s,), c in poly.terms():
                c = c.subs({li.power_sum(j): (C ** j).trace() for j in range(1, k + 1)})
                target += c * C ** s
            diff = (named - target / li.N ** k).applyfunc(lambda e: sympy.cancel(e))
            ok = diff == sympy.zeros(d, d)
            rows.append({"d": d, "k": k, "moment_agrees": ok})
            if not ok and mom_bad is None:
                mom_bad = {"d": d, "k": k, "E_F_k": str(named.applyfunc(sympy.factor).tolist()),
                           "wishart_moment_at_C": str((target / li.N ** k).applyfunc(
                               sympy.factor).tolist()), "C": str(C.tolist())}
    return combine([
        Finding("symmetric_draws", sym_bad is None, {"rows": rows}, sym_bad,
                "" if sym_bad is None else "the named matrix is not symmetric positive "
                "semidefinite at a draw, so it is not a Wishart matrix (every draw of (1/n) Y Y^T "
                "is)"),
        Finding("wishart_moments", mom_bad is None, {"rows": rows}, mom_bad,
                "" if mom_bad is None else "the named matrix's moments are not those of a "
                "Wishart matrix with covariance its mean")],
        steps=[step("Wishart", r"A^{1/2}\Sigma A^{1/2}=\tfrac1n (A^{1/2}X)(A^{1/2}X)^\top",
                    "the columns of A^{1/2} X are N(0, A^{1/2} Sigma* A^{1/2})")])


LEMMA4_2_WISHART = Claim(
    id="gatmiry2024.lemma4_2_wishart",
    title="Sec. 4 (line 224): Σ A is a Wishart matrix", paper=PAPER,
    statement=r"$\Sigma A$ is a Wishart matrix (whose moments $\mathbb E[(A^{1/2}\Sigma "
              r"A^{1/2})^k]$ the proof needs).",
    assumptions=("Sigma = X X^T / n, x_i ~ N(0, Sigma*)", "A symmetric positive definite",
                 "a Wishart matrix: (1/n) Y Y^T with the n columns of Y iid N(0, C)"),
    formulas=(NamedFormula("wishart", "Sigma*A", (_N, _D, _SIGMA, _A, _A_HALF, _SIGMA_STAR,
                                                  _SIGMA_STAR_HALF),
                           equation="Sec. 4", shape=("d", "d"),
                           description="the matrix said to be Wishart"),),
    checks={"symbolic": _wishart_symbolic}, setting=ISSERLIS_SETTING,
    correction=Correction(
        description="A^{1/2} Sigma A^{1/2} (Wishart with covariance A^{1/2} Sigma* A^{1/2}, "
                    "scaled by 1/n)",
        reason="Sigma A is not symmetric (nor is its mean Sigma* A unless A and Sigma* commute); "
               "it is similar to A^{1/2} Sigma A^{1/2} = (1/n)(A^{1/2} X)(A^{1/2} X)^T, the "
               "Wishart matrix of Lemma A.6, so the traces of their powers agree",
        formulas={"wishart": "A_half*Sigma*A_half"}),
)


# ----- eq. (14) ---------------------------------------------------------------------------------
def _family(rng, count: int, gaussians: int, d: int) -> list:
    """M^(j) = sum_m g_m C_{j,m}: coefficient matrices C_{j,m} (rational), j < count; the rows
    and columns are chained (d x d throughout, a 1 x d or d x 1 end for vectors)."""
    return [[sympy.Matrix(d, d, lambda i, j: sympy.Integer(int(rng.integers(-2, 3))))
             for _ in range(gaussians)] for _ in range(count)]


def _lhs(C) -> sympy.Matrix:
    """E[M^(1) ... M^(2k)] from the joint Gaussian moments of g (no pairing used)."""
    m = len(C[0])
    out = sympy.zeros(*C[0][0].shape)
    for idx in itertools.product(range(m), repeat=len(C)):
        w = _gaussian_moment([idx.count(x) for x in range(m)])
        if w:
            prod = C[0][idx[0]]
            for j in range(1, len(C)):
                prod = prod * C[j][idx[j]]
            out += w * prod
    return out


def _paired(C, p) -> sympy.Matrix:
    """E[M(p)^(1) ... M(p)^(2k)]: each pair its own copy g^(c) of g, copies independent, so the
    expectation keeps the index tuples equal within each pair (E g_m g_m' = delta_{m m'})."""
    m = len(C[0])
    owner = {}
    for c, (a, b) in enumerate(p):
        owner[a - 1], owner[b - 1] = c, c
    out = sympy.zeros(*C[0][0].shape)
    for idx in itertools.product(range(m), repeat=len(p)):
        prod = C[0][idx[owner[0]]]
        for j in range(1, len(C)):
            prod = prod * C[j][idx[owner[j]]]
        out += prod
    return out


def _eq14_symbolic(ctx: Context) -> TierResult:
    """2k = 2, 4, 6 factors (8 at the default budget), d = 2, two Gaussians: random rational
    families, E[M^(1)...M^(2k)] against sum_p weight(p) E[M(p)^(1)...M(p)^(2k)]."""
    rng = ctx.rng("eq14")
    rows, bad = [], None
    for k in range(1, li.by_budget(ctx, 3, 4) + 1):
        for _ in range(2):
            C = _family(rng, 2 * k, 2, 2)
            lhs = _lhs(C)
            rhs = sympy.zeros(2, 2)
            for p in pairings(2 * k):
                rhs += _value(ctx, "weight", {"k": k, "crossings": crossings(p)}) * _paired(C, p)
            ok = sympy.expand(rhs - lhs) == sympy.zeros(2, 2)
            rows.append({"k": k, "pairings": len(pairings(2 * k)), "agree": ok})
            if not ok and bad is None:
                bad = {"k": k, "C": str([[c.tolist() for c in Cj] for Cj in C]),
                       "E_product": str(lhs.tolist()), "sum_over_pairings": str(rhs.tolist())}
    return combine([Finding("gaussian_families", bad is None, {"rows": rows}, bad,
                            "" if bad is None else "the weighted sum over pairings is not the "
                            "expectation of the product")],
                   steps=[step("Entrywise Isserlis", r"\mathbb E[M^{(1)}\cdots M^{(2k)}]="
                               r"\sum_{p}\mathbb E[M(p)^{(1)}\cdots M(p)^{(2k)}]",
                               "each entry of the product is a sum of products of 2k jointly "
                               "Gaussian entries")])


EQ14 = Claim(
    id="gatmiry2024.eq14", title="Eq. (14): Isserlis' theorem for products of Gaussian matrices",
    paper=PAPER,
    statement=r"$\mathbb E[M^{(1)}\cdots M^{(2k)}]=\sum_{p\in\mathcal P(2k)}\mathbb E[M(p)^{(1)}"
              r"\cdots M(p)^{(2k)}]$, each pairing with weight 1.",
    assumptions=("the entries of M^(1), ..., M^(2k) jointly Gaussian with mean zero (as the "
                 "vectors x, x^T the proof applies it to)",
                 "M(p): each pair of p an independent copy with the pair's joint law"),
    formulas=(NamedFormula("weight", "1", (_K, _CROSS), equation="(14)",
                           description="the weight of a pairing p (crossings: its crossing "
                                       "pairs)"),),
    checks={"symbolic": _eq14_symbolic}, setting=ISSERLIS_SETTING,
)


# ----- eq. (15) ---------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def _sample_sum(k: int, n: int, d: int, m: int):
    """sum_{p in P(m)} sum_{i in [n]^k} E[x_{i_1}(p) x_{i_1}(p)^T ... x_{i_k}(p) x_{i_k}(p)^T],
    or a reason it is not a matrix: P(m) pairs the positions 1..m; a position it leaves
    unpaired is an independent zero-mean factor (its term is 0); m > 2k pairs positions the
    product has not."""
    if m > 2 * k:
        return None, f"P({m}) pairs positions beyond the 2k = {2 * k} factors"
    if m < 0 or m % 2:
        return sympy.zeros(d, d), f"P({m}) is empty"
    if m < 2 * k:
        return sympy.zeros(d, d), (f"P({m}) leaves {2 * k - m} of the 2k factors unpaired: "
                                   f"independent, mean zero, every term is 0")
    total = sympy.zeros(d, d)
    for p in pairings(2 * k):
        total += sample_count(k, n, p) * paired_single(k, d, p)
    return total, ""


def _eq15_symbolic(ctx: Context) -> TierResult:
    """k = 1..3 (4), n, d in {1, 2, 3}: E[(sum x_i x_i^T)^k] = (E tr W^k / d) I (the Wishart
    kernel) against the sum over P(m), m the named number of paired positions."""
    rows, bad = [], None
    for k in range(1, li.by_budget(ctx, 3, 4) + 1):
        expected_scalar = li.trace_power(k) / li.D
        for n in (1, 2, 3):
            for d in (1, 2, 3):
                m = _value(ctx, "paired_positions", {"k": k, "n": n, "d": d})
                target = sympy.expand(expected_scalar.subs({li.N: n, li.D: d})) * sympy.eye(d)
                if not (m.is_integer and m.is_number):
                    total, why = None, f"P({m}) is not a set of pairings"
                else:
                    total, why = _sample_sum(k, n, d, int(m))
                ok = total is not None and total == target
                rows.append({"k": k, "n": n, "d": d, "m": str(m), "agree": ok})
                if not ok and bad is None:
                    bad = {"k": k, "n": n, "d": d, "paired_positions": str(m),
                           "E_W_k": str(target.tolist()),
                           "sum": None if total is None else str(total.tolist()), "why": why}
    return combine([Finding("wishart_moments", bad is None, {"cases": len(rows)}, bad,
                            "" if bad is None else "the sum over the named pairings is not "
                            f"E[(sum x_i x_i^T)^k]: {bad['why']}")])


EQ15 = Claim(
    id="gatmiry2024.eq15", title="Eq. (15): E[(sum x_i x_iᵀ)ᵏ] as a sum over pairings",
    paper=PAPER,
    statement=r"$\mathbb E[(\sum_{i=1}^n x_ix_i^\top)^k]=\sum_{p\in\mathcal P(k)}\sum_{(i_1,"
              r"\dots,i_k)\in[n]^k}\mathbb E[x_{i_1}(p)x_{i_1}(p)^\top\cdots x_{i_k}(p)"
              r"x_{i_k}(p)^\top]$.",
    assumptions=("x_i ~ N(0, I_d) independent", "the printed subscripts (i_1, i_1, i_3, i_4, "
                 "...) read as i_1, i_1, i_2, i_2, ...",
                 "P(m): the pairings of the factor positions 1..m"),
    formulas=(NamedFormula("paired_positions", "k", (_N, _D, _K), equation="(15)",
                           description="m in P(m): how many of the factors the pairings pair"),),
    checks={"symbolic": _eq15_symbolic}, setting=ISSERLIS_SETTING,
    correction=Correction(
        description="p over P(2k), the pairings of the 2k factors",
        reason="Isserlis pairs the 2k Gaussian factors x, x^T; P(k) at k = 1 is empty (the sum "
               "would be 0, not n I) and at even k leaves k factors unpaired.  (16), (20) and "
               "line 451 repeat P(k)",
        formulas={"paired_positions": "2*k"}),
)


# ----- eq. (18) ---------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def _single_by_moments(k: int, d: int, p) -> sympy.Matrix:
    """E[x(p)^(1) x(p)^(2)T ... x(p)^(2k)T] for x ~ N(0, I_d): an independent copy per pair,
    the product expanded in its coordinates and each monomial's Gaussian moment taken."""
    copies = {}
    for c, (a, b) in enumerate(p):
        copies[a], copies[b] = c, c
    xs = [sympy.Matrix(d, 1, lambda i, _j, c=c: sympy.Symbol(f"g{c}_{i}")) for c in range(k)]
    prod = xs[copies[1]]
    for pos in range(2, 2 * k + 1):
        v = xs[copies[pos]]
        prod = prod * (v.T if pos % 2 == 0 else v)
    gens = [x for v in xs for x in v]

    def expect(e):
        poly = sympy.Poly(sympy.expand(e), *gens)
        return sum(coef * _gaussian_moment(mon) for mon, coef in poly.terms())

    return prod.applyfunc(expect)


def _unrolled(k: int, r: int, p) -> sympy.Matrix:
    """sum over (i_1..i_2k) in [r]^{2k}, equal within each pair of p, of e_{i_1} e_{i_2}^T ...
    e_{i_{2k-1}} e_{i_{2k}}^T, e_i the standard basis of R^r."""
    out = sympy.zeros(r, r)
    for idx in itertools.product(range(r), repeat=k):
        ind = {}
        for c, (a, b) in enumerate(p):
            ind[a], ind[b] = idx[c], idx[c]
        if all(ind[2 * m] == ind[2 * m + 1] for m in range(1, k)):
            out[ind[1], ind[2 * k]] += 1
    return out


def _eq18_symbolic(ctx: Context) -> TierResult:
    """Every pairing, k = 1..3 (4), (n, d) in {(1, 2), (3, 2), (2, 3), (2, 2)}: the paired
    product of one sample by Gaussian moments against the unrolled sum over [r]^{2k}, r the
    named range."""
    rows, bad = [], None
    for k in range(1, li.by_budget(ctx, 3, 4) + 1):
        for n, d in ((1, 2), (3, 2), (2, 3), (2, 2)):
            r = _value(ctx, "index_range", {"n": n, "d": d, "k": k})
            for p in pairings(2 * k):
                derived = _single_by_moments(k, d, p)
                named = _unrolled(k, int(r), p) if (r.is_integer and r.is_positive
                                                    and int(r) <= 6) else None
                ok = named is not None and named.shape == derived.shape and named == derived
                rows.append({"k": k, "n": n, "d": d, "range": str(r), "agree": ok})
                if not ok and bad is None:
                    bad = {"k": k, "n": n, "d": d, "pairing": str(p), "index_range": str(r),
                           "derived": str(derived.tolist()),
                           "unrolled": None if named is None else str(named.tolist()),
                           "why": "the unrolled sum is not the d x d paired product"
                                  + ("" if named is None or named.shape == derived.shape else
                                     f" (its e_i span R^{r}, a {r}x{r} matrix)")}
    return combine([Finding("pairings", bad is None, {"cases": len(rows)}, bad,
                            "" if bad is None else bad["why"])],
                   steps=[step("One sample", r"\mathbb E[x_ix_j]=\delta_{ij}=\sum_{l\in[d]}"
                               r"(e_l)_i(e_l)_j", "the coordinates of x ~ N(0, I_d)")])


EQ18 = Claim(
    id="gatmiry2024.eq18", title="Eq. (18): the paired product unrolled over basis vectors",
    paper=PAPER,
    statement=r"$\mathbb E[x_1(p)x_1(p)^\top\cdots x_1(p)x_1(p)^\top]=\sum_{(i_1,\dots,i_{2k})"
              r"\in[n]^{2k},\ i_{j_1}=i_{j_2}\ \forall (j_1,j_2)\in p}e_{i_1}e_{i_2}^\top\cdots "
              r"e_{i_{2k-1}}e_{i_{2k}}^\top$.",
    assumptions=("x_1 ~ N(0, I_d)", "e_i the standard basis vectors of (17)",
                 "index_range: the size of the index alphabet, [n] as printed"),
    formulas=(NamedFormula("index_range", "n", (_N, _D, _K), equation="(18)",
                           description="the indices range over [index_range]"),),
    checks={"symbolic": _eq18_symbolic}, setting=ISSERLIS_SETTING,
    correction=Correction(
        description="(i_1, ..., i_2k) in [d]^{2k}",
        reason="the e_i of (17) are the standard basis of R^d (E[x x^T] = sum_{i<=d} e_i e_i^T "
               "= I_d); over [n] they would span R^n (n x n, not d x d).  The sum_{i=1}^n of "
               "line 436 is the same slip",
        formulas={"index_range": "d"}),
)


# ----- line 513 ---------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def cycles_gp(k: int, p) -> tuple:
    """(|c*|, lengths of the other cycles) of G'_p: nodes (2, 3), ..., (2k - 2, 2k - 1), (1, 2k)
    (position a on node a // 2 mod k, node 0 = (1, 2k) on c*)."""
    parent = list(range(k))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in p:
        parent[find((a // 2) % k)] = find((b // 2) % k)
    sizes: dict = {}
    for x in range(k):
        sizes[find(x)] = sizes.get(find(x), 0) + 1
    star = sizes.pop(find(0))
    return star, tuple(sorted(sizes.values()))


def _a5_symbolic(ctx: Context) -> TierResult:
    """k = 1..4, rational Sigma* (d = 2, 3), n symbolic: E[W^k] from ``moments.wishart``
    against the sum over the pairings of 2k factors of the named terms weight * Sigma*^power."""
    rng = ctx.rng("a5-genus")
    rows, bad = [], None
    for d in (2, 3):
        S = sympy.Matrix(li.spd(d, rng))
        tr = {j: (S ** j).trace() for j in range(0, 5)}
        for k in range(1, 5):  # k = 4 is the first with a cycle of 3 nodes besides c*
            total = sympy.zeros(d, d)
            for p in pairings(2 * k):
                star, others = cycles_gp(k, p)
                env = {"n": li.N, "d": d, "k": k, "C_G": c_g(k, p), "c_star": star,
                       **{f"m{j}": others.count(j) for j in (1, 2, 3)},
                       **{f"p{j}": tr[j] for j in (1, 2, 3)}}
                weight = sympy.expand(_value(ctx, "weight", env))
                power = sympy.sympify(_value(ctx, "power", env))
                if not (power.is_integer and power.is_nonnegative):  # no matrix power: no term
                    bad = bad or {"d": d, "k": k, "pairing": str(p), "power": str(power),
                                  "why": "the power of Sigma* is not a non-negative integer"}
                    break
                total += weight * S ** int(power)
            if bad is not None and "why" in bad:
                break
            wish = ws.power_moment(k)
            poly = sympy.Poly(sympy.expand(wish), _sigma_letter(wish))
            target = sympy.zeros(d, d)
            for (s,), c in poly.terms():
                target += c.subs({li.power_sum(j): tr[j] for j in range(1, k + 1)}) * S ** s
            diff = (total - target).applyfunc(sympy.expand)
            ok = diff == sympy.zeros(d, d)
            rows.append({"d": d, "k": k, "agree": ok})
            if not ok and bad is None:
                bad = {"d": d, "k": k, "Sigma_star": str(S.tolist()),
                       "sum_over_pairings": str(total.applyfunc(sympy.factor).tolist()),
                       "E_W_k": str(target.applyfunc(sympy.factor).tolist())}
    return combine([Finding("wishart_moments", bad is None, {"rows": rows}, bad,
                            "" if bad is None else bad.get("why", "the sum over pairings is not "
                                                                   "E[W^k]"))],
                   steps=[step("Wishart moments", r"\mathbb E[W^k],\ W=\sum_{i\le n}x_ix_i^\top,"
                               r"\ x_i\sim\mathcal N(0,\Sigma^*)",
                               "moments.wishart, exact in n and tr Sigma*^j")])


LEMMA_A5_GENUS_SUM = Claim(
    id="gatmiry2024.lemma_a5_genus_sum",
    title="Proof of Lemma A.5 (line 513): E[Wᵏ] for covariance Σ* as a sum over pairings",
    paper=PAPER,
    statement=r"$\mathbb E[(\sum_{i=1}^n x_ix_i^\top)^k]=\sum_{p\in\mathcal P(2k)}"
              r"n^{C(\mathcal G_p)}\big(\prod_{c\in C(\mathcal G'_p),\,c\neq c^*}"
              r"\mathrm{tr}(\Sigma^{*|c|})\big)\Sigma^{*|c^*|}$, $x_i\sim\mathcal N(0,\Sigma^*)$.",
    assumptions=("x_i ~ N(0, Sigma*) independent", "p over the pairings of the 2k factors",
                 "m_j: the cycles of G'_p other than c* with j nodes; p_j = tr Sigma*^j",
                 "the first display's sum over i = 1..r read as i = 1..n"),
    formulas=(NamedFormula("weight", "n**C_G*p1**m1*p2**m2*p3**m3",
                           (_N, _K, _CG, _CSTAR, _M1, _M2, _M3, _P1, _P2, _P3),
                           equation="proof of Lemma A.5",
                           description="the scalar factor n^{C(G_p)} prod_{c != c*} "
                                       "tr(Sigma*^{|c|}) of a pairing's term"),
              NamedFormula("power", "c_star", (_K, _CG, _CSTAR, _M1, _M2, _M3),
                           equation="proof of Lemma A.5",
                           description="the power of Sigma* in a pairing's term")),
    checks={"symbolic": _a5_symbolic}, setting=ISSERLIS_SETTING,
)
