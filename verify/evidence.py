"""Sub-checks ("findings") and their combination into a tier result; JSON-safe evidence values."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np
import sympy

from .claim import TierResult


@dataclass
class Finding:
    """One comparison inside a tier: ``ok`` is True, False (a counterexample) or None (undecided)."""

    name: str
    ok: bool | None
    evidence: dict = field(default_factory=dict)
    counterexample: dict | None = None
    reason: str = ""


def step(title: str, latex: str = "", text: str = "") -> dict:
    """One step of a derivation as the engine did it: a title, display LaTeX, and prose."""
    return {"title": title, "latex": latex, "text": text}


def combine(findings: Iterable[Finding], extra: dict | None = None,
            steps: list | None = None) -> TierResult:
    """fail if any finding failed, error if any was undecided, pass otherwise."""
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
    return TierResult("pass", evidence)


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
