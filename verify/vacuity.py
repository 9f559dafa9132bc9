"""Vacuity: where a bound claim's conclusion says something.  A true bound whose hypothesis
only admits sizes at which the conclusion is empty (a lower bound (1 - c) Sigma^{-1} with
c >= 1) is verified and useless; the engine says which.  The finding sits beside the verdict
(``Verdict.vacuous``), about usefulness, never truth.

A claim declares ``Vacuity(informative, vary, fixed)``: the condition under which its conclusion
is informative (over its formulas and sizes, ``c < 1``), the size that makes it so (``n``) and the
values of the other sizes to look at.  For each combination the engine finds, over n = 1, 2, 4,
... up to 2^MAX_DOUBLINGS and then by bisection, the smallest n the claim's ``hypothesis``
formula admits and the smallest at which the conclusion is informative (both predicates taken as
monotone in n, which the bisection assumes), evaluating the formulas (as read, ``--set``
included) with 50-digit arithmetic."""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import product
from typing import Any, Mapping, Sequence

import sympy

MAX_DOUBLINGS = 2000  # n up to 2^2000
DIGITS = 50


@dataclass(frozen=True)
class Vacuity:
    """Where the conclusion of a bound claim is informative (module docstring)."""

    informative: str  # a condition over the claim's formulas and sizes, e.g. "c < 1"
    what: str  # in words: "the lower bound (1 - c) Sigma*^{-1} is positive definite"
    vary: str = "n"
    fixed: Mapping[str, Sequence[int]] = field(default_factory=dict)  # other sizes -> values
    hypothesis: str = "hypothesis"  # the claim's formula holding its hypothesis


def _value(expr: sympy.Basic, env: dict, formulas: Mapping[str, sympy.Basic], depth: int = 0):
    """``expr`` with sizes and (recursively) the claim's scalar formulas substituted."""
    if depth > 8:
        raise ValueError("formulas refer to each other too deeply")
    subs = {}
    for s in expr.free_symbols:
        if s.name in env:
            subs[s] = env[s.name]
        elif s.name in formulas:
            subs[s] = _value(formulas[s.name], env, formulas, depth + 1)
    return expr.xreplace(subs)


def _holds(cond: sympy.Basic, env: dict, formulas) -> bool | None:
    value = _value(cond, env, formulas)
    if value in (sympy.true, sympy.false):
        return bool(value)
    if isinstance(value, sympy.Rel):
        gap = (value.lhs - value.rhs).evalf(DIGITS)
        if not gap.is_number or not gap.is_real:
            return None
        return bool(type(value)(gap, 0))
    if isinstance(value, (sympy.And, sympy.Or)):
        parts = [_holds(a, env, formulas) for a in value.args]
        if None in parts:
            return None
        return all(parts) if isinstance(value, sympy.And) else any(parts)
    return None


def _smallest(cond, env: dict, formulas, vary: str) -> int | None:
    """The smallest n >= 1 with cond (monotone in n), or None up to 2^MAX_DOUBLINGS."""
    hi = None
    for k in range(MAX_DOUBLINGS + 1):
        if _holds(cond, {**env, vary: sympy.Integer(2) ** k}, formulas):
            hi = 2 ** k
            break
    if hi is None:
        return None
    lo = hi // 2  # cond fails at lo (or lo = 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _holds(cond, {**env, vary: sympy.Integer(mid)}, formulas):
            hi = mid
        else:
            lo = mid
    return hi


def _shown(n: int) -> str:
    return f"{n:,}" if n < 10 ** 12 else f"about 10^{len(str(n)) - 1}"


def vacuity(spec: Vacuity, formulas: Mapping[str, sympy.Basic], parse) -> dict:
    """{"status": "informative" | "vacuous" | "not checked", "where": words, "rows": [...]}.

    ``parse(text)`` reads the informative condition with the claim's symbols and formulas."""
    try:
        informative = parse(spec.informative)
        hypothesis = formulas[spec.hypothesis]
    except Exception as exc:  # noqa: BLE001 - a finding about usefulness never stops a check
        return {"status": "not checked", "where": f"cannot read the conditions: {exc}"}
    rows = []
    names = sorted(spec.fixed)
    for values in product(*(spec.fixed[k] for k in names)):
        env = {k: sympy.Integer(v) for k, v in zip(names, values)}
        admitted = _smallest(hypothesis, env, formulas, spec.vary)
        useful = _smallest(sympy.And(hypothesis, informative), env, formulas, spec.vary)
        row: dict[str, Any] = {**{k: int(v) for k, v in env.items()},
                               "smallest_admitted": admitted, "smallest_informative": useful}
        if admitted is not None:
            at = {**env, spec.vary: sympy.Integer(admitted)}
            row["at_smallest_admitted"] = {
                str(s): str(sympy.N(_value(formulas[str(s)], at, formulas), 6))
                for s in sorted(informative.free_symbols, key=str) if str(s) in formulas}
        rows.append(row)
    if not rows:
        return {"status": "not checked", "where": "no sizes to look at"}
    good = [r for r in rows if r["smallest_informative"] is not None]
    label = lambda r: ", ".join(f"{k} = {r[k]}" for k in names)  # noqa: E731
    if not good:
        return {"status": "vacuous", "rows": rows, "where": (
            f"{spec.what} ({spec.informative}) at no {spec.vary} up to 2^{MAX_DOUBLINGS} the "
            f"hypothesis admits, for any of " + "; ".join(label(r) for r in rows))}
    first = good[0]
    note = ""
    if first["smallest_admitted"] is not None and first["smallest_admitted"] < \
            first["smallest_informative"]:
        vals = ", ".join(f"{k} = {v}" for k, v in first.get("at_smallest_admitted", {}).items())
        note = (f"; at the smallest {spec.vary} the hypothesis admits "
                f"({_shown(first['smallest_admitted'])}) {vals}")
    return {"status": "informative", "rows": rows, "where": (
        f"{spec.what} ({spec.informative}) from {spec.vary} = "
        f"{_shown(first['smallest_informative'])} at {label(first)}{note}")}
