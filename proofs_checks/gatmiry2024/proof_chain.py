"""Steps of a proof ("lhs <= middle <= rhs") checked at a sequence of exact points: per link of
the chain the points compared and the first failure (its counterexample), where the caller
measures one the row nearest to failing, and one ``Finding`` per link.

The comparisons are the caller's (``exact_compare.real_le``, an exact identity): a sign no
precision settles raises ``Undecidable`` there and stops the tier undecided, never a pass nor a
failure; a chain whose hypothesis admitted no point is undecided (``none_admitted``), never a
pass."""
from __future__ import annotations

from typing import Callable, Mapping

import mpmath
import sympy

from verify.claim import TierResult
from verify.evidence import Finding, Margin, combine

from ..kit.exact_compare import mpf, value
from .dominance import _gd_expr


def num(x, digits: int = 12) -> str:
    """An exact number to ``digits`` significant digits (for rows and counterexamples)."""
    with mpmath.workdps(30):
        return mpmath.nstr(mpf(x), digits)


def values_at(env: dict, **exprs) -> dict[str, str]:
    """Each formula of ``exprs`` at ``env`` to 12 digits (computed at 30)."""
    with mpmath.workdps(30):
        return {k: mpmath.nstr(value(x, env), 12) for k, x in exprs.items()}


def formula_at(F, name: str, env: dict) -> sympy.Expr:
    """A named formula at exact values (delta by its formula where the claim has one)."""
    expr = _gd_expr(F, name)
    return sympy.sympify(expr).subs({s: env[s.name] for s in expr.free_symbols if s.name in env})


def none_admitted(name: str, reason: str = "the hypothesis admits no point") -> TierResult:
    """The tier of a search whose hypothesis admitted no point: undecided, never a pass."""
    return combine([Finding(name, None, {"points": 0}, reason=reason)])


class Chain:
    """The links of a chain, each named with what its failure says (``what``): per link the
    comparisons made (evidence ``key``), the first failure and the row with the largest
    "ratio" (the margin's, where the caller measures one)."""

    def __init__(self, what: Mapping[str, str], key: str = "points") -> None:
        self.what, self.key = dict(what), key
        self.count = dict.fromkeys(self.what, 0)
        self.first: dict = dict.fromkeys(self.what)
        self.worst: dict = dict.fromkeys(self.what)

    def see(self, name: str, ok, row: dict | Callable[[], dict], near: bool = False) -> None:
        """One comparison of link ``name``; at its first failure ``row`` (or what ``row()``
        gives, computed only there) is the counterexample; ``near``: ``row`` is measured too."""
        self.count[name] += 1
        if near:
            self.near(name, row)
        if not ok and self.first[name] is None:
            self.first[name] = row() if callable(row) else row

    def near(self, name: str, row: dict) -> None:
        """``row`` is link ``name``'s worst where its "ratio" exceeds the worst so far."""
        if self.worst[name] is None or row["ratio"] > self.worst[name]["ratio"]:
            self.worst[name] = row

    def finding(self, name: str, measure: str = "", keys: tuple = (),
                evidence: dict | None = None, **kw) -> Finding:
        """Link ``name`` as a ``Finding``: its count (or ``evidence``), and where it has a worst
        row and ``measure`` names the ratio, that row and its margin at ``keys``."""
        bad, worst = self.first[name], self.worst[name]
        evidence = {self.key: self.count[name]} if evidence is None else evidence
        margin = None
        if measure and worst is not None:
            evidence = {**evidence, "worst": worst}
            margin = Margin(worst["ratio"], measure, {k: worst[k] for k in keys})
        return Finding(name, bad is None, evidence, bad, "" if bad is None else self.what[name],
                       margin, **kw)

    def findings(self, measure: str = "", keys: tuple = ()) -> list[Finding]:
        """Every link's ``Finding``, in order (the measured ones with their margins)."""
        return [self.finding(name, measure, keys) for name in self.what]
