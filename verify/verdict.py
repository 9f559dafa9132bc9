"""Verdicts: verified | corrected | refuted | inconclusive, decided from the tiers' statuses."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Mapping, Sequence

from .claim import TierResult

VERDICTS = ("verified", "corrected", "refuted", "inconclusive")
PASSING = ("verified", "corrected")
PROOF_STATUSES = ("supported", "gap", "not checked")


def proof_of(results: Mapping[str, TierResult]) -> dict:
    """The proof part of a verdict, from the tiers' proof findings: ``gap`` if a step failed,
    ``supported`` if steps were checked and all held, ``not checked`` otherwise.  It speaks of
    the paper's argument only: a gap does not make a true statement false."""
    findings = [{**p, "tier": t} for t, r in results.items() for p in r.proof]
    decided = [f for f in findings if f["ok"] is not None]
    if any(f["ok"] is False for f in decided):
        status = "gap"
    elif decided:
        status = "supported"
    else:
        status = "not checked"
    return {"status": status, "findings": findings}


def decide(results: Mapping[str, TierResult], overridden: Sequence[str] = ()) -> str:
    """refuted if a tier failed; inconclusive if one errored or none passed, if every pass was
    made at a smaller model than the paper's (a stand-in), or, where formulas were
    ``overridden``, if every pass is a search's "no counterexample found" and no proof the
    tiers rebuilt certifies the statement (``certified``); else verified."""
    statuses = [r.status for r in results.values()]
    if "fail" in statuses:
        return "refuted"
    if "error" in statuses or "pass" not in statuses:
        return "inconclusive"
    passes = [r for r in results.values() if r.status == "pass"]
    if all(r.support == "stand-in" for r in passes):  # a smaller model says nothing of the paper's
        return "inconclusive"
    if overridden and all(r.support in ("search", "stand-in") for r in passes) and \
            not certified(results):
        return "inconclusive"
    return "verified"


def certified(results: Mapping[str, TierResult]) -> bool:
    """A proof the engine rebuilt certifies the statement: it is supported, and no step of it
    held only because a search found no counterexample (a probe at sampled points)."""
    proof = proof_of(results)
    return proof["status"] == "supported" and not any(
        f.get("search") for f in proof["findings"] if f["ok"])


def unread(results: Mapping[str, TierResult], overridden: Sequence[str]) -> dict[str, TierResult]:
    """The tiers with every pass that read none of the ``overridden`` formulas made ``skipped``:
    a tier that never looked at a formula cannot support it (it checked the rest of the claim).
    A failure stands: it refutes the statement with the override, whatever it read."""
    if not overridden:
        return dict(results)
    out = {}
    for tier, r in results.items():
        if r.status == "pass" and r.reads is not None and not set(r.reads) & set(overridden):
            names = ", ".join(overridden)
            read = ", ".join(r.reads) or "no named formula"
            r = replace(r, status="skipped", reason=(
                f"does not read {names} (it read {read}), so its pass cannot support "
                f"{'them' if len(overridden) > 1 else 'it'}"))
        out[tier] = r
    return out


def why_undecided(results: Mapping[str, TierResult], overridden: Sequence[str] = ()) -> str:
    """Why ``decide`` said inconclusive: the errors, else the skipped tiers' reasons, else the
    searches that found no counterexample."""
    bad = [f"{t}: {r.reason or r.status}" for t, r in results.items() if r.status == "error"]
    stand_in = [f"{t}: {r.reason}" for t, r in results.items()
                if r.status == "pass" and r.support == "stand-in"]
    skipped = [f"{t}: {r.reason}" for t, r in results.items() if r.status == "skipped"
               and r.reason and not r.reason.endswith(f"has no {t} tier")]
    bad = bad or (stand_in + skipped) or [f"{t}: {r.reason}" for t, r in results.items()
                                          if r.status == "skipped" and r.reason]
    searches = [t for t, r in results.items() if r.status == "pass" and r.support == "search"]
    if overridden and searches and not any(r.status == "error" for r in results.values()):
        bad.append(f"{', '.join(searches)}: a search found no counterexample to "
                   f"{', '.join(overridden)}, but it is neither exhaustive nor certified; the "
                   f"symbolic tier (where the claim has one) would decide")
    return "; ".join(bad) or "no tier could decide"


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
    correction: dict | None = None  # verify.corrections.Chosen.as_json
    correction_tiers: dict[str, TierResult] | None = None
    formulas: dict[str, str] = field(default_factory=dict)
    overridden: list[str] = field(default_factory=list)
    reason: str = ""
    proof: dict = field(default_factory=lambda: {"status": "not checked", "findings": []})
    sharp: dict = field(default_factory=dict)  # {formula: {value, printed}}: derived least bounds
    # verify.vacuity: whether the conclusion is informative where the hypothesis admits sizes
    vacuous: dict = field(default_factory=lambda: {"status": "not checked", "where": ""})
    # what the user asked beyond the budget (--size, --sigma): a verdict holds at these only
    sizes: dict = field(default_factory=dict)
    sigma: str | None = None

    def asked(self) -> str:
        """``--size n=1 --sigma diag:2,1`` as asked, or '' at the budget's own sizes."""
        return " ".join([*(f"--size {k}={v}" for k, v in self.sizes.items()),
                         *([f"--sigma {self.sigma}"] if self.sigma else [])])

    def as_dict(self) -> dict:
        return {
            "claim": self.claim,
            "title": self.title,
            "paper": self.paper,
            "verdict": self.verdict,
            "reason": self.reason,
            "proof": self.proof,
            "tiers": {name: r.as_dict() for name, r in self.tiers.items()},
            "counterexample": self.counterexample,
            "correction": self.correction,
            "correction_tiers": None if self.correction_tiers is None else
            {name: r.as_dict() for name, r in self.correction_tiers.items()},
            "sharp": self.sharp,
            "vacuous": self.vacuous,
            "formulas": self.formulas,
            "overridden": self.overridden,
            "seed": self.seed,
            "budget": self.budget,
            "device": self.device,
            "sizes": self.sizes,
            "sigma": self.sigma,
        }

    @property
    def passed(self) -> bool:
        return self.verdict in PASSING
