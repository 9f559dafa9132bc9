"""The proof of Lemma A.2 (Appendix, eqs. (16)-(20), lines 418-462): Isserlis' theorem over the
pairings p of the 2k factors of (sum_i x_i x_i^T)^k, x_i ~ N(0, I_d), and the graphs of a
pairing.

Factor positions 1..2k: position 2m - 1 is x_{i_m}, position 2m is x_{i_m}^T.  G_p has the nodes
(1, 2), (3, 4), ..., (2k - 1, 2k) (the samples) and G'_p the nodes (2, 3), ..., (2k - 2, 2k - 1),
(1, 2k) (the inner products and the outer indices); each pair {a, b} of p is an edge between the
nodes holding a and b.  C(.) counts connected components.  The checks enumerate the pairings
and derive each quantity by brute force over the indices (no closed form of the paper used):

* (16): the sample tuples (i_1..i_k) in [n]^k whose paired expectation is non-zero (paired
  positions on one sample) number n^{C(G_p)};
* (19): the paired product of one sample, E_p[x x^T ... x x^T] (coordinate indices equal within
  each pair), is d^{C(G'_p) - 1} I;
* line 451: sum_p n^{C(G_p)} d^{C(G'_p) - 1} = E tr W^k / d, W ~ Wishart(n, I_d) (the moment
  kernel, symbolic in n, d);
* line 453: C(G_p) + C(G'_p) <= k + 1 and, with r self-loops in G_p, C(G'_p) <= k - r + 1;
* line 457: the pairings of 2m items number (2m - 1)!!, printed (2m)!!;
* (20): the Stirling step (2s)!! <= sqrt(2s) (2s/e)^s, and binom(k, s) (2s)!! <= (2k)^s."""
from __future__ import annotations

import itertools
import math
from functools import lru_cache

import mpmath
import sympy

from verify.claim import Claim, Context, Correction, ExactValues, TierResult
from verify.evidence import Finding, Margin, combine, step
from verify.formulas import FormulaSymbol, NamedFormula

from ..kit import looped_icl as li
from .common import _D, _K, _N, PAPER, _setting

PAIRING_SETTING = _setting({"n": 4, "d": 3, "L": 2, "k": 3})
_CG = FormulaSymbol("C_G", positive=True)
_CGP = FormulaSymbol("C_Gp", positive=True)
_R = FormulaSymbol("r")
_S = FormulaSymbol("s", positive=True)
_DF_EVEN = FormulaSymbol("dfact_even", positive=True)
_DF_ODD = FormulaSymbol("dfact_odd", positive=True)


@lru_cache(maxsize=None)
def pairings(m: int) -> tuple:
    """All pairings of {1, ..., m} (m even) as tuples of pairs (a, b), a < b."""
    if m == 0:
        return ((),)
    first, out = 1, []
    rest = tuple(range(2, m + 1))
    for b in rest:
        others = tuple(x for x in rest if x != b)
        relabel = {i + 1: x for i, x in enumerate(others)}
        for sub in pairings(m - 2):
            out.append(((first, b),) + tuple((relabel[a], relabel[c]) for a, c in sub))
    return tuple(out)


def _components(nodes: int, node_of, p) -> int:
    parent = list(range(nodes))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in p:
        parent[find(node_of(a))] = find(node_of(b))
    return len({find(x) for x in range(nodes)})


def c_g(k: int, p) -> int:
    """C(G_p): nodes (2m - 1, 2m), m = 1..k (position a on node (a - 1) // 2)."""
    return _components(k, lambda a: (a - 1) // 2, p)


def c_gp(k: int, p) -> int:
    """C(G'_p): nodes (2, 3), ..., (2k - 2, 2k - 1) and (1, 2k) (position a on node a // 2, the
    last node holding 1 and 2k)."""
    return _components(k, lambda a: (a // 2) % k, p)


def self_loops(p) -> int:
    """The self-loops of G_p: pairs (2m - 1, 2m)."""
    return sum(1 for a, b in p if b == a + 1 and a % 2 == 1)


def sample_count(k: int, n: int, p) -> int:
    """Tuples (i_1..i_k) in [n]^k with paired positions on one sample (position a on sample
    i_{(a + 1) // 2}): those whose paired expectation is non-zero."""
    return sum(1 for i in itertools.product(range(n), repeat=k)
               if all(i[(a - 1) // 2] == i[(b - 1) // 2] for a, b in p))


def paired_single(k: int, d: int, p) -> sympy.Matrix:
    """E_p[x x^T x x^T ... x x^T] for one x ~ N(0, I_d), pairing p: entry (r, c) sums over the
    inner indices j_1..j_{k-1} (positions 2m, 2m + 1 share j_m; position 1 is r, 2k is c) the
    product of the pairs' covariances delta(index_a, index_b)."""
    out = sympy.zeros(d, d)
    for r in range(d):
        for c in range(d):
            total = 0
            for js in itertools.product(range(d), repeat=k - 1):
                idx = {1: r, 2 * k: c}
                for m, j in enumerate(js, start=1):
                    idx[2 * m], idx[2 * m + 1] = j, j
                total += all(idx[a] == idx[b] for a, b in p)
            out[r, c] = total
    return out


def _value(F, name: str, env: dict):
    expr = F[name]
    return sympy.sympify(expr).subs({s: env[s.name] for s in expr.free_symbols})


def _mismatch(rows: list) -> dict | None:
    return next((r for r in rows if not r.pop("_ok")), None)


# ----- (16) -------------------------------------------------------------------------------------
def _eq16_symbolic(ctx: Context) -> TierResult:
    """Every pairing p of 2k factors, k <= 3 (4 at the default budget), n in {1, 2, 3}: the
    count of sample tuples against the named count at n, C(G_p)."""
    rows = []
    for k in range(1, li.by_budget(ctx, 3, 4) + 1):
        for p in pairings(2 * k):
            for n in (1, 2, 3):
                derived = sample_count(k, n, p)
                named = _value(ctx.formulas, "count", {"n": n, "k": k, "C_G": c_g(k, p)})
                rows.append({"k": k, "n": n, "pairing": str(p), "C_G": c_g(k, p),
                             "derived": derived, "named": str(named), "_ok": named == derived})
    bad = _mismatch(rows)
    return combine([Finding("pairings", bad is None, {"cases": len(rows)}, bad,
                            "" if bad is None else "the sample tuples of a pairing are not the "
                            "named count")],
                   steps=[step("Isserlis over samples", r"\#\{i\in[n]^k\}=n^{C(G_p)}",
                               "paired positions must lie on one sample (independent, zero mean)")])


EQ16 = Claim(
    id="gatmiry2024.eq16", title="Eq. (16): the non-zero sample tuples of a pairing number "
    "n^{C(G_p)}", paper=PAPER,
    statement=r"For a pairing $p$ of the $2k$ factors, the index tuples $(i_1,\dots,i_k)\in[n]^k$ "
              r"with a non-zero paired expectation number $n^{C(\mathcal G_p)}$, so "
              r"$\mathbb E[(\sum_i x_ix_i^\top)^k]=\sum_p n^{C(\mathcal G_p)}\mathbb E[x_1(p)"
              r"x_1(p)^\top\cdots]$.",
    assumptions=("x_i ~ N(0, I_d) independent",),
    formulas=(NamedFormula("count", "n**C_G", (_N, _K, _CG), equation="(16)",
                           description="the number of non-zero index tuples"),),
    checks={"symbolic": _eq16_symbolic}, setting=PAIRING_SETTING,
)


# ----- (19) -------------------------------------------------------------------------------------
def _eq19_symbolic(ctx: Context) -> TierResult:
    """Every pairing, k <= 3 (4), d in {1, 2, 3}: the paired product of one sample by brute
    force against the named matrix at n = 7 (any n other than d tells them apart)."""
    rows = []
    for k in range(1, li.by_budget(ctx, 3, 4) + 1):
        for p in pairings(2 * k):
            for d in (1, 2, 3):
                derived = paired_single(k, d, p)
                env = {"n": 7, "d": d, "k": k, "C_Gp": c_gp(k, p)}
                named = _value(ctx.formulas, "term", env)
                named = sympy.Matrix(named.as_explicit() if hasattr(named, "as_explicit")
                                     else named * sympy.eye(d))
                rows.append({"k": k, "d": d, "n": 7, "pairing": str(p), "C_Gp": c_gp(k, p),
                             "derived": str(derived.tolist()), "named": str(named.tolist()),
                             "_ok": named == derived})
    bad = _mismatch(rows)
    return combine([Finding("pairings", bad is None, {"cases": len(rows)}, bad,
                            "" if bad is None else "the paired product of one sample is not the "
                            "named matrix")],
                   steps=[step("One sample", r"\mathbb E_p[xx^\top\cdots xx^\top]=d^{C(G'_p)-1}I",
                               "a cycle of G'_p through (1, 2k) joins r and c (the identity); "
                               "every other cycle is a free index summed over [d]")])


EQ19 = Claim(
    id="gatmiry2024.eq19", title="Eq. (19): the paired product of one sample", paper=PAPER,
    statement=r"$\mathbb E[x_1(p)x_1(p)^\top\cdots x_1(p)x_1(p)^\top]=n^{C(\mathcal G'_p)}I$.",
    assumptions=("x_1 ~ N(0, I_d)", "each pair of p contributes its covariance (Isserlis)"),
    formulas=(NamedFormula("term", "n**C_Gp*Identity(d)", (_N, _D, _K, _CGP), equation="(19)",
                           shape=("d", "d"), description="the paired product of one sample"),),
    checks={"symbolic": _eq19_symbolic}, setting=PAIRING_SETTING,
    correction=Correction(
        description="d^{C(G'_p) - 1} I",
        reason="the cycle of G'_p through the node (1, 2k) carries the outer indices (it gives "
               "the identity); each other cycle is an index summed over [d]: at k = 1, "
               "E[x x^T] = I, not n I; line 451 uses d^{C(G'_p) - 1}",
        formulas={"term": "d**(C_Gp - 1)*Identity(d)"}),
)


# ----- line 451 ---------------------------------------------------------------------------------
def _genus_symbolic(ctx: Context) -> TierResult:
    """k <= 4 (5): sum over the pairings of the named term at (n, d, C(G_p), C(G'_p)), as a
    polynomial in n, d, against E tr W^k / d from the moment kernel (E[W^k] is a multiple of I)."""
    rows = []
    n, d = sympy.Symbol("n"), sympy.Symbol("d")
    for k in range(1, li.by_budget(ctx, 4, 5) + 1):
        total = sympy.Add(*[_value(ctx.formulas, "term", {"n": n, "d": d, "k": k,
                                                          "C_G": c_g(k, p), "C_Gp": c_gp(k, p)})
                            for p in pairings(2 * k)])
        moment = sympy.expand(li.trace_power(k).subs({li.N: n, li.D: d}) / d)
        ok = sympy.expand(total - moment) == 0
        rows.append({"k": k, "pairings": len(pairings(2 * k)), "sum": str(sympy.expand(total)),
                     "E_W_k_over_I": str(moment), "_ok": ok})
    bad = _mismatch(rows)
    return combine([Finding("wishart_moments", bad is None, {"rows": rows}, bad,
                            "" if bad is None else "the sum over pairings is not E[W^k]")],
                   steps=[step("Wishart moments", r"\mathbb E[W^k]=\tfrac1d\mathbb E\,"
                               r"\mathrm{tr}\,W^k\,I", "moments.wishart, exact in n and d")])


def _genus_sum_truth(name: str, mutant: sympy.Basic):
    """A mutated term is a true statement when its sum over the pairings is still E tr W^k / d
    for k = 1..6 (the genus expansion is symmetric in n <-> d: tr (X X^T)^k = tr (X^T X)^k, so
    n^{C(G'_p)} d^{C(G_p) - 1} sums to the same); None otherwise (the checks decide it)."""
    if name != "term":
        return None
    n, d = sympy.Symbol("n"), sympy.Symbol("d")
    for k in range(1, 7):
        total = sympy.Add(*[sympy.sympify(mutant).subs({s: {"n": n, "d": d, "k": k,
                                                            "C_G": c_g(k, p),
                                                            "C_Gp": c_gp(k, p)}[s.name]
                                                        for s in mutant.free_symbols})
                            for p in pairings(2 * k)])
        if sympy.expand(total - li.trace_power(k).subs({li.N: n, li.D: d}) / d) != 0:
            return None
    return "true", ("true: its sum over the pairings is E tr W^k / d for k = 1..6 (exact in n, d); "
                    "the genus expansion is symmetric in n <-> d (tr (X X^T)^k = tr (X^T X)^k)")


LEMMA_A2_GENUS_SUM = Claim(
    id="gatmiry2024.lemma_a2_genus_sum",
    title="Proof of Lemma A.2 (line 451): E[Wᵏ] as a sum over pairings", paper=PAPER,
    statement=r"$\mathbb E[(\sum_{i=1}^n x_ix_i^\top)^k]=\sum_{p}n^{C(\mathcal G_p)}"
              r"d^{C(\mathcal G'_p)-1}I$.",
    assumptions=("x_i ~ N(0, I_d) independent", "p over the pairings of the 2k factors"),
    formulas=(NamedFormula("term", "n**C_G*d**(C_Gp - 1)", (_N, _D, _K, _CG, _CGP),
                           equation="proof of Lemma A.2", description="the term of a pairing"),),
    checks={"symbolic": _genus_symbolic}, setting=PAIRING_SETTING,
    exact=ExactValues(lambda pt: None, "the sum over the pairings of 2k factors, k <= 6, against "
                      "E tr W^k / d", definition=_genus_sum_truth),
)


# ----- line 453 ---------------------------------------------------------------------------------
def _genus_bound_symbolic(ctx: Context) -> TierResult:
    """Every pairing, k <= 5 (6): C(G_p) + C(G'_p) against the named total bound and C(G'_p)
    against the named bound in the self-loops r of G_p."""
    F = ctx.formulas
    findings = []
    for name, what, quantity in (("total_bound", "C(G_p) + C(G'_p)", lambda k, p: c_g(k, p)
                                  + c_gp(k, p)),
                                 ("cp_bound", "C(G'_p)", lambda k, p: c_gp(k, p))):
        bad, worst, count = None, None, 0
        for k in range(1, li.by_budget(ctx, 5, 6) + 1):
            for p in pairings(2 * k):
                env = {"k": k, "r": self_loops(p)}
                q, b = quantity(k, p), _value(F, name, env)
                count += 1
                ratio = float(q / b) if b.is_positive else float("inf")
                row = {"k": k, "pairing": str(p), "r": env["r"], "C_G": c_g(k, p),
                       "C_Gp": c_gp(k, p), "quantity": q, "bound": str(b), "ratio": ratio}
                if worst is None or ratio > worst["ratio"]:
                    worst = row
                if not (b.is_real and q <= b) and bad is None:
                    bad = row
        findings.append(Finding(name, bad is None, {"pairings": count, "worst": worst}, bad,
                                "" if bad is None else f"{what} exceeds the named bound",
                                Margin(worst["ratio"], f"{what} / {name}",
                                       {"k": worst["k"], "pairing": worst["pairing"]})))
    return combine(findings)


_BOUND_SYMBOLS = (_K, _R)
LEMMA_A2_GENUS_BOUND = Claim(
    id="gatmiry2024.lemma_a2_genus_bound",
    title="Proof of Lemma A.2 (line 453): the cycles of G_p and G'_p", paper=PAPER,
    statement=r"$C(\mathcal G_p)+C(\mathcal G'_p)\le k+1$, and with $r$ self-loops in "
              r"$\mathcal G_p$, $C(\mathcal G'_p)\le k-r+1$.",
    assumptions=("p over the pairings of the 2k factors",
                 "C(G_p) <= r + floor((k - r)/2) is not checked (the parser has no floor)"),
    formulas=(NamedFormula("total_bound", "k + 1", _BOUND_SYMBOLS, equation="proof of Lemma A.2",
                           description="C(G_p) + C(G'_p) <=", weaker="larger"),
              NamedFormula("cp_bound", "k - r + 1", _BOUND_SYMBOLS, equation="proof of Lemma A.2",
                           description="C(G'_p) <=", weaker="larger")),
    checks={"symbolic": _genus_bound_symbolic}, setting=PAIRING_SETTING,
    exact=ExactValues(lambda pt: _genus_exact(pt), "the largest C(G_p) + C(G'_p) and C(G'_p) "
                      "over the pairings with r self-loops in G_p, k <= 7 (None where no pairing "
                      "has r self-loops, r > k included)"),
)


@lru_cache(maxsize=None)
def _genus_table(k: int) -> dict:
    out: dict = {}
    for p in pairings(2 * k):
        r = self_loops(p)
        t, c = out.get(r, (0, 0))
        out[r] = (max(t, c_g(k, p) + c_gp(k, p)), max(c, c_gp(k, p)))
    return out


def _genus_exact(point: dict) -> dict | None:
    """None off the integers: r counts self-loops."""
    if point["r"] != int(point["r"]):
        return None
    k, r = int(point["k"]), int(point["r"])
    if not 1 <= k <= 7 or r not in _genus_table(k):
        return None
    t, c = _genus_table(k)[r]
    return {"total_bound": t, "cp_bound": c}


# ----- line 457 ---------------------------------------------------------------------------------
def _count_symbolic(ctx: Context) -> TierResult:
    """m = 1..6: the pairings of 2m items, enumerated, against the named count at the double
    factorials (2m)!! and (2m - 1)!!."""
    rows = []
    for m in range(1, 7):
        env = {"dfact_even": math.prod(range(2, 2 * m + 1, 2)),
               "dfact_odd": math.prod(range(1, 2 * m, 2))}
        named = _value(ctx.formulas, "count", env)
        rows.append({"m": m, "pairings": len(pairings(2 * m)), "named": str(named), **env,
                     "_ok": named == len(pairings(2 * m))})
    bad = _mismatch(rows)
    return combine([Finding("pairings", bad is None, {"rows": rows}, bad,
                            "" if bad is None else "the pairings of 2m items are not the named "
                            "count")])


LEMMA_A2_PAIRING_COUNT = Claim(
    id="gatmiry2024.lemma_a2_pairing_count",
    title="Proof of Lemma A.2 (line 457): the number of pairings of 2(k - r) items", paper=PAPER,
    statement=r"The ways to allocate $\{1,\dots,2(k-r)\}$ into $k-r$ pairs number "
              r"$C_{k-r}=(2k-2r)!!$.",
    assumptions=("m = k - r", "dfact_even = (2m)!!, dfact_odd = (2m - 1)!!"),
    formulas=(NamedFormula("count", "dfact_even", (_DF_EVEN, _DF_ODD),
                           equation="proof of Lemma A.2", description="C_{k-r}"),),
    checks={"symbolic": _count_symbolic}, setting=PAIRING_SETTING,
    correction=Correction(
        description="(2m - 1)!!", reason="the first item has 2m - 1 partners, and so on: "
        "(2m - 1)(2m - 3)...1; (2m)!! = 2 for two items, which pair one way.  The bound the "
        "proof uses survives, as (2m)!! >= (2m - 1)!!",
        formulas={"count": "dfact_odd"}),
)


# ----- eq. (20) ---------------------------------------------------------------------------------
def _eq20_symbolic(ctx: Context) -> TierResult:
    """s = 1..40: (2s)!! = 2^s s! exactly against the named Stirling bound (40 digits), and
    binom(k, s) (2s)!! against the named term bound for 1 <= s <= k <= 30."""
    F = ctx.formulas
    findings = []
    for name, cases in (("stirling", [(s, None) for s in range(1, 41)]),
                        ("term_bound", [(s, k) for k in range(1, 31) for s in range(1, k + 1)])):
        bad, worst = None, None
        for s, k in cases:
            q = 2 ** s * math.factorial(s) * (math.comb(k, s) if k else 1)
            b = sympy.N(_value(F, name, {"s": s, "k": k or 1}), 40)
            ratio = float(sympy.N(q / b, 20)) if b.is_positive else float("inf")
            row = {"s": s, **({"k": k} if k else {}), "quantity": q, "bound": str(b),
                   "ratio": ratio}
            if worst is None or ratio > worst["ratio"]:
                worst = row
            if not (b.is_real and b.is_finite and q <= b) and bad is None:
                bad = row
        what = "(2s)!!" if name == "stirling" else "binom(k, s) (2s)!!"
        findings.append(Finding(name, bad is None, {"cases": len(cases), "worst": worst}, bad,
                                "" if bad is None else f"{what} exceeds the named bound",
                                Margin(worst["ratio"], f"{what} / {name}",
                                       {k_: worst[k_] for k_ in ("s", "k") if k_ in worst})))
    return combine(findings, steps=[step("Double factorial", r"(2s)!!=2^s s!", "exact integers")])


def _eq20_exact(point: dict) -> dict | None:
    """(2s)!! = 2^s s! and binom(k, s) (2s)!! = 2^s k! / (k - s)! at 1 <= s <= k, continued to
    real s by the Gamma function (2^s Gamma(s + 1), 2^s Gamma(k + 1) / Gamma(k - s + 1)): a
    mutant that holds on [1, k] holds at the integers the proof sums over; None elsewhere."""
    s, k = point["s"], int(point["k"])
    if not 1 <= s <= k or k > 200:
        return None
    two_s = mpmath.mpf(2) ** s
    return {"stirling": two_s * mpmath.gamma(s + 1),
            "term_bound": two_s * mpmath.gamma(k + 1) / mpmath.gamma(k - s + 1)}


EQ20 = Claim(
    id="gatmiry2024.eq20", title="Eq. (20): the Stirling step bounding (2s)!!", paper=PAPER,
    statement=r"$(2s)!!\le\sqrt{2s}(\frac{2s}{e})^s$ (with $\binom ks\le k^s/(\sqrt{2\pi s}"
              r"(s/e)^s)$), hence $\binom ks(2s)!!\le(2k)^s$.",
    assumptions=("1 <= s <= k",),
    formulas=(NamedFormula("stirling", "sqrt(2*s)*(2*s/exp(1))**s", (_S, _K), equation="(20)",
                           description="the bound on (2s)!!", weaker="larger"),
              NamedFormula("term_bound", "(2*k)**s", (_S, _K), equation="(20)",
                           description="the bound on binom(k, s) (2s)!!", weaker="larger")),
    checks={"symbolic": _eq20_symbolic}, setting=PAIRING_SETTING,
    exact=ExactValues(_eq20_exact, "(2s)!! = 2^s s! and binom(k, s) (2s)!! at 1 <= s <= k "
                      "(Gamma-continued between the integers)"),
    correction=Correction(
        description="(2s)!! = 2^s s! <= e sqrt(s) (2s/e)^s",
        reason="sqrt(2s) (2s/e)^s is about (2s)!! / sqrt(pi): at s = 1 it is 1.04 < 2 = 2!!; "
               "the Stirling upper bound s! <= e sqrt(s) (s/e)^s gives (2s)!! <= e sqrt(s) "
               "(2s/e)^s (equality at s = 1).  The chain's binom(k, s) (2s)!! <= (2k)^s holds "
               "anyway",
        formulas={"stirling": "exp(1)*sqrt(s)*(2*s/exp(1))**s"}),
)
