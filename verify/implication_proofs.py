"""Symbolic proofs that a mutant is implied (sympy decides a sign on the claim's domain): a
looser bound (``_implied_proof``), a narrower hypothesis (``_narrower_proof``) and a mutant
definition (``_definition_proof``).  ``verify.implication`` tries them where its sampling
decides, and the sampling stands where they fail."""
from __future__ import annotations

import sympy

from .domain import Domain
from .formulas import SIZE_NAMES, NamedFormula, formula_str

PROOF_OPS = 400           # larger differences are left to the sampling (simplify is slow there)


def _conditions(expr: sympy.Basic) -> list | None:
    """A conjunction of inequalities as [(g, strict, condition)] meaning g >= 0 (g > 0 if
    strict), or None (an Or, an equation, anything else)."""
    out = []
    for c in (expr.args if isinstance(expr, sympy.And) else (expr,)):
        if isinstance(c, (sympy.GreaterThan, sympy.StrictGreaterThan)):
            out.append((c.lhs - c.rhs, isinstance(c, sympy.StrictGreaterThan), c))
        elif isinstance(c, (sympy.LessThan, sympy.StrictLessThan)):
            out.append((c.rhs - c.lhs, isinstance(c, sympy.StrictLessThan), c))
        else:
            return None
    return out


def _sign_proved(expr: sympy.Expr, strict: bool) -> bool:
    """Is expr >= 0 (> 0 if strict) for all values of its (assumption-carrying) symbols? Decided
    on the expanded numerator and denominator of its ``together`` form, then on ``simplify``."""
    want = "is_positive" if strict else "is_nonnegative"
    if expr.is_zero:
        return not strict
    num, den = sympy.fraction(sympy.together(expr))
    num, den = sympy.expand(num), sympy.expand(den)
    if (getattr(num, want) and den.is_positive) or \
            (getattr(-num, want) and den.is_negative):
        return True
    if bool(getattr(sympy.simplify(expr), want)):
        return True
    return _product_sign(sympy.factor_terms(sympy.expand_power_base(expr)), strict)


def _product_sign(expr: sympy.Expr, strict: bool) -> bool:
    """A product of positive factors and differences of powers a^p - b^p (``_power_difference``)
    is >= 0 (> 0 if strict): the form 4 d ((9 L d / sqrt(n))^p - (8 L d / sqrt(n))^p) of a
    larger delta in 4 d delta^{4L-2} <= 1, p = (2L - 1)/L, which sympy leaves undecided."""
    factors = expr.args if isinstance(expr, sympy.Mul) else (expr,)
    return any(isinstance(f, sympy.Add) for f in factors) and all(
        f.is_positive or (not strict and f.is_nonnegative) or _power_difference(f, strict)
        for f in factors)


def _power_difference(expr: sympy.Expr, strict: bool) -> bool:
    """a^p - b^p >= 0 (> 0 if strict) from a - b >= 0 (> 0), p > 0 and b >= 0."""
    if not (isinstance(expr, sympy.Add) and len(expr.args) == 2):
        return False
    for plus, minus in (expr.args, expr.args[::-1]):
        minus = -minus
        if isinstance(plus, sympy.Pow) and isinstance(minus, sympy.Pow) and \
                plus.exp == minus.exp and plus.exp.is_positive and minus.base.is_nonnegative:
            return _sign_proved(plus.base - minus.base, strict)
    return False


def _narrower_proof(formula: NamedFormula, original: sympy.Basic, mutant: sympy.Basic) -> str:
    """A symbolic reason the mutant hypothesis implies the original, or "": both conjunctions of
    inequalities g >= 0, and each of the original's g_o follows from one of the mutant's g_m
    through g_o - g_m >= 0 on the whole domain (sizes 1 + t with t >= 0, unit scalars
    1/(1 + t) with t > 0, other scalars positive; a definition such as delta's is a positive
    value, so ignoring it only asks more)."""
    if any(not isinstance(v, sympy.Symbol) for v in formula.locals().values()):
        return ""
    steps = _conditions_follow(original, mutant, _domain_subs(formula, sizes=True))
    return "" if steps is None else \
        "the mutant hypothesis implies the original: " + "; ".join(steps or ["(the same)"])


def _conditions_follow(original: sympy.Basic, mutant: sympy.Basic, subs: dict) -> list | None:
    """The steps by which each condition of ``original`` follows from one of ``mutant``'s (a
    gap g_o - g_m that sympy shows >= 0, > 0 where only the original is strict, on the domain
    ``subs``), or None where one does not."""
    conds_o, conds_m = _conditions(original), _conditions(mutant)
    if not conds_o or not conds_m:
        return None
    steps = []
    try:
        for g_o, strict_o, c_o in conds_o:
            for g_m, strict_m, c_m in conds_m:
                gap = g_o - g_m
                if sympy.count_ops(gap) > PROOF_OPS:
                    continue
                strict = strict_o and not strict_m
                if _sign_proved(gap.xreplace(subs), strict):
                    if c_m != c_o:
                        steps.append(f"{formula_str(c_m)} gives {formula_str(c_o)}, the gap "
                                     f"being {formula_str(sympy.simplify(gap))} "
                                     f"{'>' if strict else '>='} 0")
                    break
            else:
                return None
    except Exception:  # noqa: BLE001 - the proof is an attempt; the sampling decided
        return None
    return steps


def _definition_proof(name: str, mutant: sympy.Expr, domain: Domain) -> str:
    """A symbolic reason the claim with the mutant definition of ``name`` is implied, or "":
    with each definition substituted, every hypothesis of the mutant claim gives the original's
    (``_conditions_follow``) and every bound that uses ``name`` is at least as loose (the
    difference has the weaker side's sign), on the domain as ``_symbol_subs`` states it.  For a
    larger delta in xi >= 2 (4 delta)^{2L}, whose narrowing (a factor 9/8 in xi for 8 -> 9)
    the draws rarely meet."""
    local = {s.name: s.sympy() for s in domain.symbols}
    sym = local.get(name)
    rest = {local[n]: e for n, e in domain.definitions if n != name}
    if sym is None or not domain.hypotheses or any(e.has(sym) for e in rest.values()):
        return ""
    original = dict(domain.definitions)[name]
    subs = _symbol_subs(domain.symbols, sizes=True)
    put = lambda e, v: e.xreplace({sym: v}).xreplace(rest)  # noqa: E731
    hyp = sympy.And(*domain.hypotheses)
    steps = _conditions_follow(put(hyp, original), put(hyp, mutant), subs)
    if steps is None:
        return ""
    looser = []
    try:
        for bname, expr, weaker in domain.bounds:
            if not expr.has(sym):
                continue
            diff = put(expr, mutant) - put(expr, original)
            if sympy.count_ops(diff) > PROOF_OPS or \
                    not _sign_proved(diff.xreplace(subs) * (1 if weaker == "larger" else -1),
                                     False):
                return ""
            looser.append(bname)
    except Exception:  # noqa: BLE001 - the proof is an attempt; the sampling decided
        return ""
    return (f"with {name} := {formula_str(mutant)} for {formula_str(original)}, "
            f"{'; '.join(steps) or 'the hypotheses are the same'}"
            + (f", and {', '.join(looser)} {'is' if len(looser) == 1 else 'are'} at least as "
               f"loose" if looser else "")
            + " (sizes >= 1, scalars positive, unit ones in (0, 1))")


def _implied_proof(formula: NamedFormula, original: sympy.Expr, mutant: sympy.Expr) -> str:
    """A symbolic reason the mutant is on the weaker side on the whole domain, or "": sympy
    decides the sign of (mutant)/(original) - 1 or of (mutant) - (original) with every scalar
    positive (a unit scalar u written 1/(1 + t), t > 0)."""
    op = ">=" if formula.weaker == "larger" else "<="
    subs = _domain_subs(formula)
    o, m = original.xreplace(subs), mutant.xreplace(subs)
    text_ratio = f"({formula_str(mutant)})/({formula_str(original)})"
    text_diff = f"({formula_str(mutant)}) - ({formula_str(original)})"
    try:
        if sympy.count_ops(m - o) > PROOF_OPS:
            return ""
        if o.is_positive or o.is_negative:
            ratio = sympy.simplify(m / o)
            above = (ratio - 1).is_nonnegative if o.is_positive else (ratio - 1).is_nonpositive
            below = (ratio - 1).is_nonpositive if o.is_positive else (ratio - 1).is_nonnegative
            if (above if formula.weaker == "larger" else below):
                cmp = ">=" if (ratio - 1).is_nonnegative else "<="
                sign = "positive" if o.is_positive else "negative"
                return (f"{text_ratio} = {_unsub(ratio, subs)} {cmp} 1 (the original is "
                        f"{sign})")
        diff = sympy.simplify(m - o)
        ok = diff.is_nonnegative if formula.weaker == "larger" else diff.is_nonpositive
        if ok:
            return f"{text_diff} = {_unsub(diff, subs)} {op} 0"
    except Exception:  # noqa: BLE001 - the proof is an attempt; the sampling decided
        return ""
    return ""


def _domain_subs(formula: NamedFormula, sizes: bool = False) -> dict:
    """The domain as sympy assumptions: a unit scalar u -> 1/(1 + t), t > 0, other scalars
    positive, and (``sizes``) a size -> 1 + t, t >= 0 (left as declared otherwise)."""
    return _symbol_subs(formula.symbols, sizes)


def _symbol_subs(symbols, sizes: bool = False) -> dict:
    """``_domain_subs`` for FormulaSymbols (keys their own sympy symbols); matrices skipped."""
    subs = {}
    for s in symbols:
        if s.kind != "scalar":
            continue
        sym = s.sympy()
        if s.name in SIZE_NAMES:
            if sizes:
                subs[sym] = 1 + sympy.Symbol(f"_t_{s.name}", nonnegative=True)
        elif s.unit:
            subs[sym] = 1 / (1 + sympy.Symbol(f"_t_{s.name}", positive=True))
        else:
            subs[sym] = sympy.Symbol(s.name, positive=True)
    return subs


def _unsub(expr: sympy.Basic, subs: dict) -> str:
    """Text of ``expr`` in the formula's own symbols (a unit scalar's 1/(1 + t) undone)."""
    back = {}
    for sym, new in subs.items():
        if isinstance(new, sympy.Symbol):
            back[new] = sympy.Symbol(sym.name)
        else:  # 1/(1 + t): t = 1/u - 1
            (t,) = new.free_symbols
            back[t] = 1 / sympy.Symbol(sym.name) - 1
    text = formula_str(expr.xreplace(back)) if back else formula_str(expr)
    return text if len(text) <= 80 else text[:77] + "..."
