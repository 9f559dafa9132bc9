"""Sub-checks ("findings") and their combination into a tier result; JSON-safe evidence values."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping

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
    # a search that is neither exhaustive nor certified (an optimiser's best ratio): its pass
    # says "no counterexample found", not that the statement holds
    search: bool = False
    # the step of the paper's proof this finding checks ("(59)"), or "": a proof finding says
    # whether the proof establishes the statement, never whether the statement is true
    proof_step: str = ""
    # how the model this finding checked is smaller than the paper's ("two layers for the
    # paper's three"), or "": such a check neither verifies nor refutes the paper's claim
    # about its model (its failure is undecided, its pass is support "stand-in")
    stand_in: str = ""
    # the comparison in one phrase, with the numbers it decided on ("eq. (8) = the derived
    # optimum exactly at 2 rational Sigma, n symbolic"): the terminal prints it under the claim
    summary: str = ""
    # a test of a Monte Carlo sample drawn through ``Context.mc_seed``/``mc_rng`` at a stated
    # level: its failure is a rejection a true statement meets once in 1/(1 - level) samples,
    # so it refutes only if an independent redraw rejects too (the runner redraws)
    sampled: bool = False
    # a comparison of the engine's own derivation with the real model that reads no formula
    # (the derived loss against Monte Carlo of the forward pass): a disagreement is the
    # engine's or the sample's, never a counterexample to the statement, so it is undecided
    self_check: bool = False

    def __post_init__(self) -> None:
        if self.ok is False and self.tested is False:  # a counterexample is a comparison
            self.tested = True
        if self.ok is False and self.stand_in:
            self.ok, self.counterexample = None, None
            self.reason = (f"undecided for the paper's model: {self.reason or 'it failed'} at a "
                           f"smaller model ({self.stand_in})")
        if self.ok is False and self.self_check:
            self.ok, self.counterexample = None, None
            self.reason = (f"the engine's derivation and the real model disagree "
                           f"({self.reason or 'the comparison failed'}); that is no "
                           f"counterexample to the statement")
        if self.ok is not None:  # one rule for every claim: NaN decides nothing
            where = _nan_in(self.counterexample if self.ok is False else None, self.margin)
            if where:
                self.ok, self.counterexample = None, None
                self.reason = (f"undecided: {where} is NaN, so the comparison says nothing"
                               + (f" ({self.reason})" if self.reason else ""))


def _nan_in(*values: Any, depth: int = 0) -> str:
    """The first place in ``values`` (a counterexample, a margin) holding a NaN, or ""."""
    for i, v in enumerate(values):
        where = _nan_at(v, depth)
        if where:
            return where
    return ""


def _nan_at(v: Any, depth: int, path: str = "") -> str:
    if depth > 6 or v is None or isinstance(v, (str, bool, int)):
        return ""
    if isinstance(v, Margin):
        return _nan_at(v.used, depth + 1, "the margin")
    if isinstance(v, dict):
        for k, x in list(v.items())[:200]:
            where = _nan_at(x, depth + 1, f"{path}.{k}" if path else str(k))
            if where:
                return where
        return ""
    if isinstance(v, (list, tuple)):
        for i, x in enumerate(v[:200]):
            where = _nan_at(x, depth + 1, f"{path}[{i}]")
            if where:
                return where
        return ""
    try:
        arr = np.asarray(v.detach().cpu().numpy() if hasattr(v, "detach") else v)
        if arr.dtype.kind in "fc" and arr.size <= 10**6 and np.isnan(arr).any():
            return path or "a value"
    except (TypeError, ValueError):
        pass
    if isinstance(v, sympy.Basic) and v.has(sympy.nan):
        return path or "a value"
    return ""


def resolution(dtype: Any = np.float64) -> float:
    """The smallest magnitude a float of ``dtype`` resolves to full relative precision: below
    it (the subnormal range) rounding errors are no longer relative, and a product may have
    underflowed to 0."""
    return float(np.finfo(dtype).tiny)


def worse(x: float, worst: float, limit: float) -> bool:
    """Whether ``x`` replaces ``worst``, the largest error (or ratio) a search has met so far,
    which must stay <= ``limit``.  A NaN decides nothing, and ``x > worst`` would drop it (the
    search then passes on the numbers it did compare): it replaces any error within the limit
    and only an error above it replaces the NaN, so that the search fails where a point failed
    and is undecided (``settle_le`` on a NaN) where a point was not a number and none failed.
    Between numbers, ``x > worst``."""
    if x != x:
        return not worst > limit
    return x > worst or (worst != worst and x > limit)


def settle_le(lhs: Any, rhs: Any, dtype: Any = np.float64,
              exact: Any = None) -> tuple[Any, str]:
    """lhs <= rhs entrywise, decided only where it can be: (ok, why) with ok True, False or None
    (undecided), the one rule every claim's float comparisons follow.  A comparison whose
    operands are not finite, or whose allowance ``rhs`` lies below the float's resolution
    (``resolution``: the numbers underflowed, and 0 <= 0 would pass on nothing), is undecided;
    a decided failure anywhere is a failure; otherwise any undecided entry leaves it
    undecided.  ``exact`` (a boolean mask) marks entries whose allowance is exactly what the
    structure gives (a component with no term at all, where 0 <= 0 is the statement): they are
    compared as they are."""
    a = np.asarray(lhs, dtype=float)
    b = np.broadcast_to(np.asarray(rhs, dtype=float), a.shape)
    finite = np.isfinite(a) & np.isfinite(b)
    structural = np.zeros(a.shape, bool) if exact is None else np.broadcast_to(
        np.asarray(exact, bool), a.shape)
    resolved = finite & ((np.abs(b) >= resolution(dtype)) | structural)
    if np.any(resolved & (a > b)):
        return False, ""
    if not np.all(finite):
        return None, f"{int(np.size(a) - finite.sum())} of {np.size(a)} compared numbers are not finite"
    if not np.all(resolved):
        return None, (f"{int(np.size(a) - resolved.sum())} of {np.size(a)} comparisons allow less "
                      f"than the float's resolution {resolution(dtype):.3g} (the numbers "
                      f"underflowed): they say nothing")
    return True, ""


def step(title: str, latex: str = "", text: str = "") -> dict:
    """One step of a derivation as the engine did it: a title, display LaTeX, and prose."""
    return {"title": title, "latex": latex, "text": text}


def as_stand_ins(findings: Iterable[Finding], why: str) -> list[Finding]:
    """Every finding marked as checked on a smaller model than the paper's (``why`` says how),
    or the findings as they are when ``why`` is "" (a failure then becomes undecided)."""
    return [replace(f, stand_in=why) for f in findings] if why else list(findings)


def smaller_than_paper(have: Mapping[str, int], paper: Mapping[str, int], where: str,
                       extra: str = "") -> str:
    """The stand-in reason when some size in ``have`` is below the paper's (or ``extra`` names
    another difference), else "": "d = 3, C = 6 for the paper's d = 10, C = 10 (where)"."""
    if all(have[k] >= v for k, v in paper.items()) and not extra:
        return ""
    shown = ", ".join(f"{k} = {have[k]}" for k in paper)
    wanted = ", ".join(f"{k} = {v}" for k, v in paper.items())
    return f"{shown}{extra} for the paper's {wanted} ({where})"


def combine(findings: Iterable[Finding], extra: dict | None = None,
            steps: list | None = None) -> TierResult:
    """fail if any finding failed; skipped if every finding was undecided (no comparison could
    be made: non-finite or underflowed numbers) or its searches over a hypothesis admitted no
    instance at all (a vacuous pass is no evidence); error if some were undecided; pass
    otherwise.  A pass all of whose findings are non-exhaustive searches has support
    "search"."""
    everything = list(findings)
    findings = [f for f in everything if not f.proof_step]
    proofs = [f for f in everything if f.proof_step]
    result = _combine(findings, extra)
    result.steps = list(steps or [])
    if proofs:  # beside the statement's findings: their evidence, and the proof part
        result.evidence.update(_entries(proofs))
        result.proof = [{"step": f.proof_step, "finding": f.name, "ok": f.ok,
                         "what": f.reason or ("the step holds" if f.ok else "undecided"),
                         **({"search": True} if f.search and f.ok else {})}
                        for f in proofs]
        if not findings:
            result.reason = f"checks the proof only ({', '.join(f.proof_step for f in proofs)})"
    passed = [f for f in findings if f.ok is True]
    if result.status == "pass" and passed and all(f.stand_in for f in passed):
        result.support = "stand-in"
        result.reason = "checked a smaller model than the paper's: " + "; ".join(
            dict.fromkeys(f.stand_in for f in passed))
    elif result.status == "pass" and passed and all(f.search for f in passed):
        result.support = "search"
    return result


def _entries(findings: list) -> dict:
    """The findings as evidence entries (JSON-safe), by name."""
    out = {}
    for f in findings:
        entry = {"ok": f.ok, **jsonable(f.evidence)}
        if f.reason:
            entry["reason"] = f.reason
        if f.margin is not None:
            entry["margin"] = f.margin.as_dict()
        if f.tested is False:
            entry["tested"] = False
        if f.proof_step:
            entry["proof_step"] = f.proof_step
        if f.summary:
            entry["summary"] = f.summary
        if f.sampled:
            entry["sampled_test"] = True
        out[f.name] = entry
    return out


def _combine(findings: list, extra: dict | None) -> TierResult:
    evidence = jsonable(dict(extra or {}))  # NaN/inf would print as invalid JSON
    evidence.update(_entries(findings))
    failed = [f for f in findings if f.ok is False]
    undecided = [f for f in findings if f.ok is None]
    if failed:
        f = failed[0]
        ce = jsonable(f.counterexample or {})
        ce.setdefault("check", f.name)
        return TierResult("fail", evidence, ce, reason=f"{f.name}: {f.reason or 'comparison failed'}",
                          sampled=all(x.sampled for x in failed))
    if undecided:
        why = "; ".join(f"{f.name}: {f.reason or 'undecided'}" for f in undecided)
        if len(undecided) == len(findings):
            return TierResult("skipped", evidence, reason=f"no comparison decided: {why}")
        return TierResult("error", evidence, reason=why)
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
    used = closest["used"]
    # exactly 1 is a bound attained (tight), not a violation; near 1, enough digits to tell
    amount = ("tight: the bound is attained, 1" if used == 1 else
              f"{used:.9g}" if abs(used - 1) < 1e-3 else f"{used:.3g}")
    return (f"closest approach: {amount} of the bound ({closest['measure']}; "
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
