"""Verdicts: verified | corrected | refuted | inconclusive, decided from the tiers' statuses."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from .claim import TierResult

VERDICTS = ("verified", "corrected", "refuted", "inconclusive")
PASSING = ("verified", "corrected")


def decide(results: Mapping[str, TierResult]) -> str:
    """refuted if a tier failed; inconclusive if one errored or none ran; else verified."""
    statuses = [r.status for r in results.values()]
    if "fail" in statuses:
        return "refuted"
    if "error" in statuses or "pass" not in statuses:
        return "inconclusive"
    return "verified"


def first_counterexample(results: Mapping[str, TierResult]) -> dict | None:
    for tier, r in results.items():
        if r.status == "fail":
            ce = dict(r.counterexample or {})
            ce.setdefault("reason", r.reason or "the tier's comparison failed")
            ce["tier"] = tier
            return ce
    return None


@dataclass
class Verdict:
    """A claim's verdict with every tier's evidence (the ``--json`` object)."""

    claim: str
    title: str
    paper: str
    verdict: str
    tiers: dict[str, TierResult]
    seed: int
    budget: str
    device: str
    counterexample: dict | None = None
    correction: str | None = None
    correction_tiers: dict[str, TierResult] | None = None
    formulas: dict[str, str] = field(default_factory=dict)
    overridden: list[str] = field(default_factory=list)
    reason: str = ""

    def as_dict(self) -> dict:
        return {
            "claim": self.claim,
            "title": self.title,
            "paper": self.paper,
            "verdict": self.verdict,
            "reason": self.reason,
            "tiers": {name: r.as_dict() for name, r in self.tiers.items()},
            "counterexample": self.counterexample,
            "correction": self.correction,
            "correction_tiers": None if self.correction_tiers is None else
            {name: r.as_dict() for name, r in self.correction_tiers.items()},
            "formulas": self.formulas,
            "overridden": self.overridden,
            "seed": self.seed,
            "budget": self.budget,
            "device": self.device,
        }

    @property
    def passed(self) -> bool:
        return self.verdict in PASSING
