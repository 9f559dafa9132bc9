"""Bound under a hypothesis: "if H holds, then Q >= B" (or Q <= B), where Q is a quantity the
check derives (a loss, a squared gradient norm, a moment) and H and B are named formulas of the
claim, checked exactly at every point of a search where H holds.

A search is a tuple of ``Family``s; each gives ``Line``s of points (exact sizes and values, and
the derived Q there).  Along a line the points are compared in order up to the first violation,
or, for a line whose failures are monotone (``smallest``: the bound fails from some size on), by
bisection for the smallest failing point, O(log n) comparisons over 2^20 sizes.  Each family
becomes one ``Finding``:
- H is decided exactly (``exact_compare.holds``); a point where it fails, or where it is not a
  relation between real numbers, is not admitted and compares nothing;
- Q against B exactly (``exact_compare.compare``): a bound that is not a real number at an
  admitted point bounds nothing there and fails; a derived Q that is NaN or complex is the
  derivation's failure and decides nothing, unless it is ``NotReal`` (taken at a named formula
  that is not real: the statement's failure); a sign no precision settles is undecided, never
  a violation nor a pass;
- the first violation is the counterexample, with the exact point, Q and B to 20 digits and the
  sides of H; the closest approach over the admitted points is the margin (B / Q for a lower
  bound, Q / B for an upper one, 60 digits); a family whose hypothesis admitted no point says so
  (``tested`` False: a vacuous pass).
``judge`` decides one point, for a paper's own float search that confirms its candidates
exactly."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Literal, Mapping, Sequence

import mpmath
import sympy

from verify.claim import Context
from verify.evidence import Closest, Finding

from .exact_compare import compare, holds, relation_values, value

QUANTITY = "quantity"  # the symbol under which a point's environment holds Q


@dataclass(frozen=True)
class NotReal:
    """A derived quantity that is not a real number because a named formula it is taken at is
    not one (the deviation at a named time that is complex, say): the statement says nothing
    real there, so the point fails, with ``why``.  Any other quantity that comes out NaN or
    complex is the derivation's failure, not the statement's: the point is undecided."""

    why: str


@dataclass(frozen=True)
class Point:
    """One point of a search: ``env`` the exact values of the formulas' symbols, ``quantity`` the
    derived Q there (exact, or an mpmath value at the precision it was derived to; a callable
    giving it is called only where the hypothesis holds: a quadrature, say), ``at`` the point as
    a reader names it (rows, counterexamples, the reason), ``shown`` more of its values for the
    counterexample (the loss there, say)."""

    env: Mapping[str, Any]
    quantity: Any
    at: Mapping[str, Any] = field(default_factory=dict)
    shown: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Line:
    """Points along one axis: ``point(v)`` for v in ``axis`` (None: the family has no point
    there, e.g. no admissible epsilon); ``smallest``: failures are monotone along the axis, so
    bisect for the first failing value instead of comparing every point."""

    label: str
    axis: Sequence[Any]
    point: Callable[[Any], Point | None]
    smallest: bool = False


@dataclass(frozen=True)
class Family:
    """One finding's search: ``lines(F, ctx)`` gives its lines (F: the claim's formulas, read
    through the context); ``description`` says what it searches, for the evidence; ``says``
    the relation in words, for the reason of a failure ("eq. (28) fails at ...")."""

    name: str
    description: str
    lines: Callable[[Mapping, Context], Iterable[Line]]
    says: str = ""


@dataclass(frozen=True)
class BoundSearch:
    """``quantity`` (how a reader writes Q) ``relation`` the named formula ``bound`` wherever the
    named ``hypothesis`` holds (None: everywhere); the named formulas in ``inline`` (a delta
    defined by its own formula) are substituted into the others first; ``key`` names Q in a
    counterexample (default: ``quantity``); ``named``: Q is itself a named formula (a relation
    between two of them, a step of a proof), and a point's ``quantity`` is None."""

    quantity: str
    bound: str
    relation: Literal[">=", "<="]
    families: tuple[Family, ...]
    hypothesis: str | None = None
    inline: tuple[str, ...] = ()
    key: str = ""
    named: str = ""

    @property
    def measure(self) -> str:
        if self.relation == ">=":
            return f"the named bound ({self.bound}) / {self.quantity}"
        return f"{self.quantity} / the named bound ({self.bound})"

    def expr(self, F: Mapping, name: str) -> sympy.Expr:
        """A named formula with the ``inline`` ones substituted."""
        out = F[name]
        for other in self.inline:
            if other in F and other != name:
                out = out.subs(sympy.Symbol(other, positive=True), F[other])
        return out


@dataclass(frozen=True)
class Judged:
    """One point decided: ``admitted`` (H holds), ``ok`` (Q relation B: True, False, or None where
    no precision settles it), ``used`` (the margin's ratio, None where it is not a number)."""

    admitted: bool
    ok: bool | None = None
    used: float | None = None
    bound_value: Any = None
    why: str = ""
    # the point's environment with Q in it, and Q's expression (for the counterexample: a
    # derived Q, a quadrature say, is not derived again)
    env: Mapping | None = None
    q: Any = None


def judge(spec: BoundSearch, F: Mapping, p: Point) -> Judged:
    """The point ``p`` decided exactly (see the module's rules)."""
    if spec.hypothesis is not None and not holds(spec.expr(F, spec.hypothesis), p.env):
        return Judged(False)
    env, q = _quantity(spec, F, p)
    if not spec.named and _not_a_number(env[QUANTITY]):
        raw = env[QUANTITY]
        if isinstance(raw, NotReal):
            return Judged(True, False, None, None, raw.why, env, q)
        return Judged(True, None, None, None, "the derived quantity is not a number", env, q)
    b = spec.expr(F, spec.bound)
    ok, x, y = compare(b, q, env) if spec.relation == ">=" else compare(q, b, env)
    bound_value = x if spec.relation == ">=" else y
    return Judged(True, ok, _ratio(b, q, env, spec.relation), bound_value, "", env, q)


def _quantity(spec: BoundSearch, F: Mapping, p: Point) -> tuple[dict, sympy.Expr]:
    """The point's environment and Q in it: the named formula, or the point's derived value."""
    if spec.named:
        return dict(p.env), spec.expr(F, spec.named)
    q = p.quantity() if callable(p.quantity) else p.quantity
    return {**p.env, QUANTITY: q if isinstance(q, NotReal) else sympy.sympify(q)}, \
        sympy.Symbol(QUANTITY)


def _not_a_number(q) -> bool:
    """A derived quantity that is NaN or complex (+-oo is compared as an extended real)."""
    if isinstance(q, NotReal):
        return True
    if isinstance(q, sympy.Rational):  # exact (thousands of digits at n = 10^100): a number
        return False
    with mpmath.workdps(30):
        return bool(mpmath.isnan(value(sympy.Symbol(QUANTITY), {QUANTITY: q})))


def _ratio(b, q, env: Mapping, relation: str) -> float | None:
    """How much of what the statement allows is used, at 60 digits: B / Q for a lower bound,
    Q / B for an upper one, where the allowing side is positive; the inverse where both are
    negative; infinite where the used side is positive and the allowing one is not (an upper
    bound <= 0 under a positive quantity allows nothing); None where not a real number."""
    with mpmath.workdps(60):
        bv, qv = value(b, env), value(q, env)
        num, den = (bv, qv) if relation == ">=" else (qv, bv)
        if mpmath.isnan(num) or mpmath.isnan(den):
            return None
        if den > 0:
            return float(num / den)
        if num < 0 and den < 0:
            return float(den / num)
        return float("inf") if num > 0 else None


def _shown(x, env: Mapping | None = None, digits: int = 20) -> str:
    with mpmath.workdps(digits + 10):
        v = value(x, env or {}) if not isinstance(x, (mpmath.mpf, mpmath.mpc)) else x
        return mpmath.nstr(v, digits)


def _counterexample(spec: BoundSearch, F: Mapping, p: Point, j: Judged) -> dict:
    env, q = j.env, j.q
    shown_q = j.why if isinstance(env.get(QUANTITY), NotReal) else _shown(q, env)
    out = {**p.at, **p.shown, spec.key or spec.quantity: shown_q,
           spec.bound: _shown(j.bound_value) if j.bound_value is not None else "not a real number"}
    if spec.hypothesis is not None:
        out["hypothesis"] = relation_values(spec.expr(F, spec.hypothesis), p.env)
    return out


class _Search:
    """The state of one family's search: rows per line, the first violation, the closest
    approach, the points left undecided."""

    def __init__(self, spec: BoundSearch, F: Mapping) -> None:
        self.spec, self.F = spec, F
        self.near = Closest(spec.measure)
        self.rows: dict = {}
        self.first: Point | None = None
        self.first_case: dict | None = None
        self.first_rank: int | None = None
        self.undecided: list = []

    def decide(self, p: Point | None) -> Judged:
        if p is None:
            return Judged(False)
        j = judge(self.spec, self.F, p)
        if j.admitted:
            self.near.see(j.used, dict(p.at))
            if j.ok is None:
                self.undecided.append({**p.at, "why": j.why or "no precision settles the sign"})
        return j

    def fail(self, p: Point, j: Judged, rank: int | None = None) -> None:
        """Keep the first violation, or the one with the smallest rank (a bisection's index)."""
        if self.first is None or (rank is not None and self.first_rank is not None
                                  and rank < self.first_rank):
            self.first, self.first_rank = p, rank
            self.first_case = _counterexample(self.spec, self.F, p, j)

    def walk(self, line: Line) -> None:
        admitted, fails_at = 0, None
        for v in line.axis:
            p = line.point(v)
            j = self.decide(p)
            admitted += j.admitted
            if j.admitted and j.ok is False:
                fails_at = dict(p.at)
                self.fail(p, j)
                break
        self.rows[line.label] = {"points": len(line.axis), "admitted": admitted,
                                 "fails_at": fails_at}

    def bisect(self, line: Line) -> None:
        seen: dict = {}

        def fails(i):  # each point decided once (a point may cost a quadrature)
            if i not in seen:
                p = line.point(line.axis[i])
                j = self.decide(p)
                seen[i] = (j.admitted and j.ok is False, p, j)
            return seen[i]

        top = fails(len(line.axis) - 1)
        if not top[0]:
            self.rows[line.label] = {"smallest_failing": None, "checked_up_to": str(line.axis[-1])}
            return
        lo, hi = 0, len(line.axis) - 1
        if fails(0)[0]:
            hi = 0
        while lo + 1 < hi:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if fails(mid)[0] else (mid, hi)
        _, p, j = fails(hi)
        self.rows[line.label] = {"smallest_failing": str(line.axis[hi]), **p.at, **p.shown}
        self.fail(p, j, rank=hi)


def search_finding(spec: BoundSearch, family: Family, F: Mapping, ctx: Context) -> Finding:
    """One family searched (see the module's rules) as a ``Finding`` named for it."""
    s = _Search(spec, F)
    for line in family.lines(F, ctx):
        s.bisect(line) if line.smallest else s.walk(line)
    evidence = {"family": family.description, "by_line": s.rows}
    if s.undecided:
        evidence["undecided_points"] = s.undecided[:5]
    if s.first is not None:
        where = ", ".join(f"{k} = {v}" for k, v in s.first.at.items())
        said = f"{family.says} fails" if family.says else "fails"
        return Finding(family.name, False, evidence, s.first_case, f"{said} at {where}",
                       s.near.margin, tested=True)
    if s.undecided:
        return Finding(family.name, None, evidence, None,
                       f"undecided at {len(s.undecided)} admitted point(s): "
                       f"{s.undecided[0]['why']}", s.near.margin, tested=s.near.tested)
    return Finding(family.name, True, evidence, None, "", s.near.margin, tested=s.near.tested)


def bound_findings(spec: BoundSearch, ctx: Context) -> list[Finding]:
    """Every family of ``spec`` searched, in order (the first's counterexample comes first)."""
    return [search_finding(spec, family, ctx.formulas, ctx) for family in spec.families]
