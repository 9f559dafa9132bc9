"""Sub-checks ("findings") and their combination into a tier result; JSON-safe evidence values."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np
import sympy

from .claim import TierResult


@dataclass(frozen=True)
class Margin:
    """How near a bound check came to failing: ``used`` is the measured quantity over what the
    statement allows (a time over the named time, a deviation over the radius), the largest over
    the instances compared, so a value above 1 is a violation; ``at`` is that instance."""

    used: float
    measure: str
    at: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"used": jsonable(self.used), "measure": self.measure, "at": jsonable(self.at)}


class Closest:
    """Collects the comparisons of one check and keeps the one nearest to failing (``margin``);
    ``compared`` counts them, so that a search whose hypothesis admitted no instance can say so
    (``tested``)."""

    def __init__(self, measure: str) -> None:
        self.measure = measure
        self.used: float | None = None
        self.at: dict = {}
        self.compared = 0

    @property
    def tested(self) -> bool:
        """Whether any comparison was made (None passed to ``see`` is none)."""
        return self.compared > 0

    def see(self, used, at: dict) -> None:
        """One comparison: ``used`` = measured / allowed (anything float() takes; nan or complex
        says nothing about how near it came and is ignored; None is no comparison)."""
        if used is not None:
            self.compared += 1
        self._near(used, at)

    def _near(self, used, at: dict) -> None:
        try:
            value = float(used)
        except (TypeError, ValueError, OverflowError):
            return
        if np.isnan(value):
            return
        if self.used is None or value > self.used:
            self.used, self.at = value, dict(at)

    def see_le(self, lhs, rhs, at: dict) -> None:
        """A comparison lhs <= rhs: used = lhs / rhs where rhs > 0 (rhs / lhs where both are
        negative); other signs, and a bound that is not a finite real number, say nothing about
        how near it came and are ignored."""
        self.compared += 1
        try:
            x, y = float(lhs), float(rhs)
        except (TypeError, ValueError, OverflowError):
            return
        if not np.isfinite(y):
            return
        if y > 0:  # the ratio in the inputs' own arithmetic (mpmath stays at its precision)
            self._near(lhs / rhs, at)
        elif x < 0 and y < 0:
            self._near(rhs / lhs, at)

    @property
    def margin(self) -> Margin | None:
        return None if self.used is None else Margin(self.used, self.measure, self.at)


@dataclass
class Finding:
    """One comparison inside a tier: ``ok`` is True, False (a counterexample) or None (undecided);
    ``margin``, where the comparison is a bound, how near it came to failing; ``tested``, for a
    search over the instances a hypothesis admits, whether it admitted any (False: the search
    compared nothing, and passed vacuously)."""

    name: str
    ok: bool | None
    evidence: dict = field(default_factory=dict)
    counterexample: dict | None = None
    reason: str = ""
    margin: Margin | None = None
    tested: bool | None = None

    def __post_init__(self) -> None:
        if self.ok is False and self.tested is False:  # a counterexample is a comparison
            self.tested = True


def step(title: str, latex: str = "", text: str = "") -> dict:
    """One step of a derivation as the engine did it: a title, display LaTeX, and prose."""
    return {"title": title, "latex": latex, "text": text}


def combine(findings: Iterable[Finding], extra: dict | None = None,
            steps: list | None = None) -> TierResult:
    """fail if any finding failed, error if any was undecided, skipped if its searches over a
    hypothesis admitted no instance at all (a vacuous pass is no evidence), pass otherwise."""
    findings = list(findings)
    result = _combine(findings, extra)
    result.steps = list(steps or [])
    return result


def _combine(findings: list, extra: dict | None) -> TierResult:
    evidence = jsonable(dict(extra or {}))  # NaN/inf would print as invalid JSON
    for f in findings:
        entry = {"ok": f.ok, **jsonable(f.evidence)}
        if f.reason:
            entry["reason"] = f.reason
        if f.margin is not None:
            entry["margin"] = f.margin.as_dict()
        if f.tested is False:
            entry["tested"] = False
        evidence[f.name] = entry
    failed = [f for f in findings if f.ok is False]
    undecided = [f for f in findings if f.ok is None]
    if failed:
        f = failed[0]
        ce = jsonable(f.counterexample or {})
        ce.setdefault("check", f.name)
        return TierResult("fail", evidence, ce, reason=f"{f.name}: {f.reason or 'comparison failed'}")
    if undecided:
        return TierResult("error", evidence,
                          reason="; ".join(f"{f.name}: {f.reason or 'undecided'}" for f in undecided))
    if not findings:
        return TierResult("skipped", evidence, reason="nothing to check")
    vacuous = [f.name for f in findings if f.tested is False]
    if vacuous and not any(f.tested for f in findings):
        return TierResult("skipped", evidence, reason=(
            f"no instance these checks drew meets the hypothesis ({', '.join(vacuous)}), so they "
            f"compared nothing: sizes where it holds would decide it"))
    return TierResult("pass", evidence)


def closest_margin(evidence: dict) -> dict | None:
    """The margin nearest to failing among a tier's findings (``evidence`` as ``combine`` writes
    it), with the finding's name as ``check``."""
    best = None
    for name, entry in evidence.items():
        m = entry.get("margin") if isinstance(entry, dict) else None
        if isinstance(m, dict) and isinstance(m.get("used"), (int, float)):
            if best is None or m["used"] > best["used"]:
                best = {**m, "check": name}
    return best


def closest_over_tiers(results: dict) -> dict | None:
    """Over the tiers (name -> TierResult), the margin nearest to failing, with its tier."""
    found = [{**c, "tier": t} for t, r in results.items()
             if (c := closest_margin(r.evidence or {})) is not None]
    return max(found, key=lambda c: c["used"], default=None)


def cut(text: str, limit: int = 40) -> str:
    """``text`` to its first ``limit`` characters, with "..." where it was longer."""
    return text if len(text) <= limit else text[:limit] + "..."


def describe_approach(closest: dict) -> str:
    """A closest approach (``closest_over_tiers``) in words; long instance values are cut."""
    at = ", ".join(f"{k}={cut(str(v))}" for k, v in closest.get("at", {}).items())
    return (f"closest approach: {closest['used']:.3g} of the bound ({closest['measure']}; "
            f"{closest['tier']} {closest['check']}" + (f" at {at}" if at else "") + ")")


def jsonable(value: Any) -> Any:
    """Convert sympy/numpy/torch values into JSON types (exact numbers as strings)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (bool, str, type(None))):
        return value
    if isinstance(value, (int,)):
        return value
    if isinstance(value, float):
        return value if np.isfinite(value) else str(value)
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, (np.floating, np.integer, np.bool_)):
        return jsonable(value.item())
    if isinstance(value, sympy.MatrixBase):
        return [[jsonable(v) for v in row] for row in value.tolist()]
    if isinstance(value, sympy.Basic):
        if value.is_Integer:
            return int(value)
        return str(value)
    if hasattr(value, "detach"):
        return jsonable(value.detach().cpu().numpy())
    return str(value)
