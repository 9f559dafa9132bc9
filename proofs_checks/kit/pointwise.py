"""Pointwise checks: a proof step or identity that holds at every point of its setting, checked
exactly at rational points (symbolic tier: both sides as sympy matrices, their difference
simplified to 0, or a ``<=`` entrywise) and in float64 at Gaussian points within a rounding
allowance (numeric tier), with a judge for ``mutate`` that decides a surviving mutant at more
exact points.

A paper supplies the points (objects with ``label`` and ``describe()``) and ``sides(point, F)``,
which evaluates the named formulas ``F`` and the derived quantities at the point and returns the
comparisons ``(finding name, lhs, rhs[, "<="])``; ``Unevaluable`` marks a formula that has no
value there (ill-typed: a failure; not exactly evaluable here: ``undecided``, the point decides
nothing).  ``explain(finding, point, F, lhs, rhs)``, optional, says more about a failed exact
comparison (the difference factored, another reading of the formula): its fields join the
finding's evidence and counterexample."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Mapping, Sequence

import numpy as np
import sympy

from verify.claim import BUDGETS, Context, ExactValues, TierResult
from verify.evidence import Finding, combine, settle_le
from verify.formulas import NamedFormula
from verify.sigma import EVERY_SIGMA


class Unevaluable(Exception):
    """A formula that cannot be evaluated at the point: ill-typed or without a real value there
    (``undecided`` False: it is no matrix of the stated kind), or not exactly here (an irrational
    value, a singular inverse: ``undecided``, that point decides nothing)."""

    def __init__(self, message: str, undecided: bool = False) -> None:
        super().__init__(message)
        self.undecided = undecided


Compare = tuple  # (finding name, lhs, rhs)


@dataclass(frozen=True)
class Pointwise:
    """A proof step that holds at every point: ``sides(point, F)`` returns the comparisons
    (finding, lhs, rhs) at one point; ``points`` (exact) and ``float_points`` the instances."""

    sides: Callable[[object, Mapping], list]
    points: Callable[[Context, Mapping], list]
    float_points: Callable[[Context, Mapping], list]
    what: str
    steps: tuple = ()
    # optional: more about a failed exact comparison, explain(finding, point, F, lhs, rhs) ->
    # dict (the difference factored, another reading), added to its counterexample and evidence
    explain: Callable[[str, object, Mapping, sympy.Matrix, sympy.Matrix], dict] | None = None
    # optional: the exact zero test of an entry of lhs - rhs (default: a rational as it is, else
    # sympy.simplify); sympy.expand decides polynomial sides (rational coefficients: canonical)
    # and sympy.cancel rational functions at once, where simplify may spend seconds on a large
    # non-zero polynomial
    zero: Callable[[sympy.Expr], sympy.Expr] | None = None


def as_matrix(x) -> sympy.Matrix:
    if isinstance(x, sympy.MatrixBase):
        return sympy.Matrix(x)
    return sympy.Matrix([[sympy.sympify(x)]])


def _zero_test(e: sympy.Expr) -> sympy.Expr:
    """e itself when it is a rational number, else e simplified (radicals, symbols)."""
    e = sympy.sympify(e)
    return e if e.is_Rational else sympy.simplify(e)


def exact_compare(spec: Pointwise, ctx: Context, F) -> TierResult:
    results: dict[str, list] = {}
    ce: dict[str, dict] = {}
    explained: dict[str, dict] = {}
    undecided: list[str] = []
    for p in spec.points(ctx, F):
        try:
            comparisons = spec.sides(p, F)
        except Unevaluable as exc:
            if exc.undecided:
                undecided.append(f"{p.label}: {exc}")
                continue
            return combine([Finding("evaluable", False, {"point": p.label},
                                    {**p.describe(), "error": str(exc)},
                                    f"a formula cannot be evaluated (ill-typed): {exc}")],
                           steps=list(spec.steps))
        for name, lhs, rhs, *op in comparisons:
            L, R = as_matrix(lhs), as_matrix(rhs)
            if L.shape != R.shape:
                ok, i = False, 0
            elif op and op[0] == "<=":
                gaps = [sympy.simplify(x - y) for x, y in zip(L, R)]
                bad = [k for k, g in enumerate(gaps) if not g <= 0]
                ok, i = not bad, (bad[0] if bad else 0)
            else:
                diff = (L - R).applyfunc(spec.zero or _zero_test)
                bad = [k for k, e in enumerate(diff) if e != 0]
                ok, i = not bad, (bad[0] if bad else 0)
            results.setdefault(name, []).append(ok)
            if not ok and name not in ce:
                ce[name] = {**p.describe(), "relation": op[0] if op else "==",
                            "lhs": str(L[i]) if L.shape == R.shape else str(L.shape),
                            "rhs": str(R[i]) if L.shape == R.shape else str(R.shape)}
                if spec.explain is not None and L.shape == R.shape:
                    explained[name] = spec.explain(name, p, F, L, R)
                    ce[name].update(explained[name])
    findings = [Finding(name, all(oks), {"points": len(oks), "exact": True,
                                         **explained.get(name, {})}, ce.get(name),
                        "" if all(oks) else "the two sides differ at an exact point",
                        summary=f"exact at {len(oks)} rational points")
                for name, oks in results.items()]
    if undecided:
        findings.append(Finding("evaluable", None, {"points": undecided},
                                reason="; ".join(undecided)))
    return combine(findings, {"what": spec.what, "sigma_scope": EVERY_SIGMA},
                   steps=list(spec.steps))


ALLOWANCE_K = 1e4  # float64: a few hundred flops per entry at condition numbers <= ~10


def float_compare(spec: Pointwise, ctx: Context, F) -> TierResult:
    worst: dict[str, list] = {}
    bounds: set[str] = set()  # the comparisons that are inequalities lhs <= rhs
    undecided: list[str] = []
    for p in spec.float_points(ctx, F):
        try:
            comparisons = spec.sides(p, F)
        except Unevaluable as exc:
            if exc.undecided:
                undecided.append(f"{p.label}: {exc}")
                continue
            return combine([Finding("evaluable", False, {"point": p.label}, {"error": str(exc)},
                                    f"a formula cannot be evaluated (ill-typed): {exc}")])
        for name, lhs, rhs, *op in comparisons:
            a, b = np.atleast_2d(np.asarray(lhs, dtype=float)), np.atleast_2d(
                np.asarray(rhs, dtype=float))
            if a.shape != b.shape:
                worst.setdefault(name, []).append((np.inf, 1.0, p.label, a.shape, b.shape))
                continue
            if op and op[0] == "<=":
                bounds.add(name)
                gap = float(np.max(a - b)) if a.size else 0.0
            else:
                gap = float(np.max(np.abs(a - b))) if a.size else 0.0
            scale = 1.0 + max(float(np.max(np.abs(a))) if a.size else 0.0,
                              float(np.max(np.abs(b))) if b.size else 0.0)
            worst.setdefault(name, []).append((gap, ALLOWANCE_K * np.finfo(float).eps * scale,
                                               p.label, None, None))
    findings = []
    for name, rows in worst.items():
        gaps = np.array([r[0] for r in rows])
        allow = np.array([r[1] for r in rows])
        if any(r[3] is not None for r in rows):
            r = next(r for r in rows if r[3] is not None)
            findings.append(Finding(name, False, {}, {"shapes": [list(r[3]), list(r[4])]},
                                    "the two sides have different shapes"))
            continue
        ok, why = settle_le(gaps, allow)
        k = int(np.argmax(np.nan_to_num(gaps / allow, nan=np.inf)))
        finite = gaps[np.isfinite(gaps)]
        largest = float(finite.max()) if finite.size else None  # None: no gap is a number
        findings.append(Finding(
            name, ok, {"points": len(rows), "max_gap": largest,
                       "allowance": float(allow.min()),
                       "why_allowance": f"{ALLOWANCE_K:g} eps times the larger side's magnitude "
                                        "(a few hundred float64 operations per entry)"},
            None if ok is not False else {"point": rows[k][2], "gap": float(gaps[k]),
                                          "allowance": float(allow[k]), "seed": ctx.seed},
            why if ok is None else "" if ok else f"the sides differ by {gaps[k]:.3g}",
            summary=(f"float64 lhs - rhs <= {largest:.2g} at {len(rows)} Gaussian points"
                     if ok is not None and largest is not None and name in bounds else
                     f"float64 within {largest:.1e} at {len(rows)} Gaussian points"
                     if ok is not None and largest is not None else
                     f"not decided at {len(rows)} Gaussian points")))
    if undecided:
        findings.append(Finding("evaluable", None, {"points": undecided},
                                reason="; ".join(undecided)))
    return combine(findings, {"what": spec.what})


def pointwise_checks(spec: Pointwise) -> dict:
    return {"symbolic": lambda ctx: exact_compare(spec, ctx, ctx.formulas),
            "numeric": lambda ctx: float_compare(spec, ctx, ctx.formulas)}


def pointwise_truth(spec: Pointwise, formulas: Sequence[NamedFormula],
                    more: Callable[[Context, Mapping], list],
                    base: Mapping[str, str] | None = None,
                    extra: Callable[[Context], TierResult] | None = None,
                    judge_id: str = "kit.judge") -> ExactValues:
    """``Claim(exact=...)``: a surviving mutant is judged by the exact comparisons at more points
    (``more``: other sizes and seeds) than the check uses, like the kit's ``identity_truth``;
    the other formulas at ``base`` (a corrected claim's correction, which ``mutate`` mutates);
    ``extra(ctx)`` the claim's other exact checks (an exact Haar average)."""
    base = dict(base or {})

    def judge(name: str, mutant: sympy.Basic):
        F = {f.name: f.parse(base.get(f.name, f.text)) for f in formulas}
        F[name] = mutant
        ctx = Context(claim_id=judge_id, formulas=F, formula_texts={},
                      budget=BUDGETS["quick"], seed=7)
        try:
            res = exact_compare(replace(spec, points=lambda c, F_: spec.points(c, F_)
                                         + more(c, F_)), ctx, F)
            if res.status == "pass" and extra is not None:
                res = extra(ctx)
        except Exception as exc:  # noqa: BLE001 - a judge must not end a mutate run
            return "undecided", f"the exact step could not be evaluated: {exc}"
        if res.status == "pass":
            return "true", f"the step still holds with this {name} at every exact point drawn"
        if res.status == "fail":
            return "false", f"the step fails with this {name}: {res.reason}"
        return "undecided", res.reason or "not evaluable"

    return ExactValues(values=lambda point: None, words="the exact proof step at more points",
                       definition=judge)


def merge_results(*results: TierResult) -> TierResult:
    """One tier result from several: fail if one failed, error/skipped as ``combine`` says."""
    findings, steps = [], []
    for r in results:
        steps += r.steps
        for name, ev in r.evidence.items():
            if isinstance(ev, dict) and "ok" in ev:
                ok = ev["ok"]
                findings.append(Finding(name, ok, {k: v for k, v in ev.items() if k not in
                                                   ("ok", "reason", "summary", "sampled_test")},
                                        r.counterexample if ok is False and r.counterexample
                                        and r.counterexample.get("check") == name else None,
                                        ev.get("reason", ""), summary=ev.get("summary", ""),
                                        sampled=bool(ev.get("sampled_test"))))
    return combine(findings, steps=steps)
