"""Exact values of risk polynomials at structured points, symbolic in d, C and s = ||w*||^2.

The points the paper's proofs use are built from the identity and the prior mean only (eq. (7):
A = [[I, 0], [0, 0]], b = [-w*; 1], v = w*; the GD weights; zero heads).  Substituting such letters
into a trace-word polynomial leaves words in I and w* alone: a trace of I is d, a form
w*^T w* is s, and a gradient's free ends give I, w* or w* w*^T.  So the risk, and every component
of its gradient, is an exact rational function of (C, d, s) at once, for every dimension.

A point maps letters to ``(factor, target)`` with target ``"I"`` (a d x d letter), ``"w"`` (a
vector letter, meaning w*) or ``None`` (zero).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import sympy

from moments.letters import FREE_LEFT, FREE_RIGHT
from moments.poly import Poly

from .setting import D_SYM, S_SYM

Point = Mapping[str, tuple]  # letter -> (factor, "I" | "w" | None)


@dataclass(frozen=True)
class Value:
    """A scalar (parts {"1": x}), a d-vector ({"w": a}: a w*) or a d x d matrix
    ({"I": a, "ww": b}: a I + b w* w*^T)."""

    shape: str
    parts: dict

    def simplify(self) -> "Value":
        return Value(self.shape, {k: sympy.factor(sympy.cancel(v)) for k, v in self.parts.items()})

    def norm2(self) -> sympy.Expr:
        """The squared Euclidean/Frobenius norm, exactly (w*^T w* = s, tr I = d)."""
        p = self.parts
        if self.shape == "scalar":
            return p.get("1", 0) ** 2
        if self.shape == "vector":
            return p.get("w", 0) ** 2 * S_SYM
        a, b = p.get("I", 0), p.get("ww", 0)
        return a ** 2 * D_SYM + 2 * a * b * S_SYM + b ** 2 * S_SYM ** 2

    def subs(self, values) -> "Value":
        return Value(self.shape, {k: sympy.sympify(v).subs(values) for k, v in self.parts.items()})

    def is_zero(self) -> bool:
        return all(sympy.cancel(v) == 0 for v in self.parts.values())

    def __str__(self) -> str:
        names = {"1": "", "w": " w*", "I": " I", "ww": " w* w*^T"}
        items = [f"({sympy.sstr(v)}){names[k]}" for k, v in self.parts.items() if v != 0]
        return " + ".join(items) if items else "0"


def value_at(poly: Poly, point: Point, scalars: Mapping | None = None) -> Value:
    """poly at ``point`` (letters) and ``scalars`` (coefficient symbols by name), exactly."""
    scalars = {(k.name if isinstance(k, sympy.Symbol) else k): v for k, v in (scalars or {}).items()}
    shape = "scalar" if poly.is_scalar else ("vector" if poly.cols == "1" else "matrix")
    parts: dict = {}
    for (cycles, chains), coeff in poly.terms.items():
        c = coeff.subs({s: scalars[s.name] for s in coeff.free_symbols if s.name in scalars})
        factor, part = sympy.Integer(1), "1"
        dead = False
        for w in cycles:
            f, rest = _substitute(w, point)
            if f == 0:
                dead = True
                break
            if rest:
                raise ValueError(f"a trace with vectors left: {w}")
            factor *= f * D_SYM
        if dead:
            continue
        free_kinds = []
        for w in chains:
            f, rest = _substitute(w, point)
            if f == 0:
                dead = True
                break
            factor *= f
            names = [n for n, _ in rest]
            if FREE_LEFT in names or FREE_RIGHT in names:
                free_kinds.append(tuple(n for n in names))
            elif names == ["w_star", "w_star"]:
                factor *= S_SYM
            else:
                raise ValueError(f"unexpected form after substitution: {rest}")
        if dead:
            continue
        part = _free_part(free_kinds, shape)
        parts[part] = parts.get(part, 0) + c * factor
    return Value(shape, parts)


def _substitute(word, point: Point) -> tuple[sympy.Expr, list]:
    """(product of factors, remaining elements) for one word; factor 0 if a letter is zero."""
    factor, rest = sympy.Integer(1), []
    for name, t in word:
        if name in (FREE_LEFT, FREE_RIGHT):
            rest.append((name, t))
            continue
        if name not in point:
            raise ValueError(f"letter {name} has no value at this point")
        f, target = point[name]
        if target is None or f == 0:
            return sympy.Integer(0), []
        factor *= f
        if target == "w":
            rest.append(("w_star", t))
        elif target != "I":
            raise ValueError(f"unknown target {target!r}")
    return factor, rest


def _free_part(free: list, shape: str) -> str:
    if shape == "scalar":
        if free:
            raise ValueError("free ends in a scalar polynomial")
        return "1"
    if shape == "vector":
        if free == [(FREE_LEFT, "w_star")] or free == [("w_star", FREE_RIGHT)]:
            return "w"
        raise ValueError(f"unexpected vector form {free}")
    if free == [(FREE_LEFT, FREE_RIGHT)]:
        return "I"
    if sorted(free) == sorted([(FREE_LEFT, "w_star"), ("w_star", FREE_RIGHT)]):
        return "ww"
    raise ValueError(f"unexpected matrix form {free}")


def limit_inf(expr: sympy.Expr, C: sympy.Symbol) -> sympy.Expr:
    """lim_{C -> oo} of a rational function of C (sympy.oo or -oo if it diverges)."""
    num, den = sympy.fraction(sympy.cancel(sympy.together(expr)))
    dn, dd = sympy.degree(num, C), sympy.degree(den, C)
    if num == 0:
        return sympy.Integer(0)
    if dn < dd:
        return sympy.Integer(0)
    ratio = sympy.LC(sympy.Poly(num, C)) / sympy.LC(sympy.Poly(den, C))
    if dn == dd:
        return sympy.factor(ratio)
    return sympy.oo * sympy.sign(ratio)


def leading(expr: sympy.Expr, C: sympy.Symbol) -> tuple[sympy.Expr, sympy.Expr, sympy.Expr]:
    """(limit as C -> oo, k, a) with expr - limit ~ a C^k: the exact leading behaviour in C."""
    expr = sympy.cancel(sympy.together(expr))
    lim = limit_inf(expr, C)
    if not lim.is_finite:
        num, den = sympy.fraction(expr)
        k = sympy.degree(num, C) - sympy.degree(den, C)
        a = sympy.factor(sympy.LC(sympy.Poly(num, C)) / sympy.LC(sympy.Poly(den, C)))
        return lim, sympy.Integer(k), a
    rest = sympy.cancel(expr - lim)
    if rest == 0:
        return lim, sympy.Integer(0), sympy.Integer(0)
    num, den = sympy.fraction(rest)
    k = sympy.degree(num, C) - sympy.degree(den, C)
    a = sympy.factor(sympy.LC(sympy.Poly(num, C)) / sympy.LC(sympy.Poly(den, C)))
    return lim, sympy.Integer(k), a


def leading_text(expr: sympy.Expr, C: sympy.Symbol) -> str:
    """'L + a C^k + ...' as text: the limit and the exact leading correction."""
    lim, k, a = leading(expr, C)
    if a == 0:
        return sympy.sstr(lim)
    head = "" if lim == 0 else f"{sympy.sstr(lim)} + "
    return f"{head}({sympy.sstr(a)})*C^({k}) + o(C^({k}))"
