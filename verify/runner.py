"""Runs a claim's tiers and turns their results into a verdict (trying the correction if any)."""
from __future__ import annotations

import time
import traceback
from typing import Mapping, Sequence

from models.device import DeviceUnavailable, cpu_threads

from .claim import BUDGETS, TIERS, Claim, Context, TierResult
from .errors import UsageError
from .verdict import Verdict, decide, first_counterexample


def run_tiers(claim: Claim, ctx: Context, tiers: Sequence[str]) -> dict[str, TierResult]:
    results: dict[str, TierResult] = {}
    for tier in tiers:
        check = claim.checks.get(tier)
        if check is None:
            results[tier] = TierResult("skipped", reason=f"{claim.id} has no {tier} tier")
            continue
        start = time.perf_counter()
        try:
            if ctx.budget.name == "paper":  # paper sizes: large batches use every thread
                result = check(ctx)
            else:
                with cpu_threads(ctx.device):
                    result = check(ctx)
        except (UsageError, DeviceUnavailable):
            raise
        except Exception as exc:  # a crash in a check is reported, never a wrong verdict
            tb = traceback.extract_tb(exc.__traceback__)[-1]
            result = TierResult("error", evidence={
                "exception": f"{type(exc).__name__}: {exc}",
                "where": f"{tb.filename.rsplit('/', 1)[-1]}:{tb.lineno}",
            }, reason=f"the {tier} tier raised {type(exc).__name__}: {_first_line(exc)}")
        result.seconds = time.perf_counter() - start
        results[tier] = result
    return results


def _first_line(exc: Exception, limit: int = 160) -> str:
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else ""
    return text if len(text) <= limit else text[:limit] + " ..."


def check_claim(claim: Claim, tiers: Sequence[str] = TIERS, budget: str = "quick",
                device: str = "auto", seed: int = 0, overrides: Mapping[str, str] | None = None,
                sizes: Mapping[str, int] | None = None, sigma=None,
                progress: bool = False) -> Verdict:
    """Check one claim: run the tiers on the formulas as printed (or as overridden)."""
    if budget not in BUDGETS:
        raise UsageError(f"unknown budget {budget!r} (use {', '.join(BUDGETS)})")
    overrides = dict(overrides or {})
    formulas, texts = claim.parsed_formulas(overrides)
    if claim.setting is not None and hasattr(claim.setting, "validate"):
        claim.setting.validate(dict(sizes or {}), sigma)
    ctx = Context(claim.id, formulas, texts, BUDGETS[budget], device, seed, dict(sizes or {}),
                  sigma, progress)
    results = run_tiers(claim, ctx, tiers)
    verdict = decide(results)
    out = Verdict(claim.id, claim.title, claim.paper, verdict, results, seed, budget, device,
                  counterexample=first_counterexample(results), formulas=texts,
                  overridden=sorted(overrides))
    if verdict == "refuted" and claim.correction is not None and not overrides:
        fixed, fixed_texts = claim.parsed_formulas(claim.correction.formulas)
        fixed_ctx = Context(claim.id, fixed, fixed_texts, BUDGETS[budget], device, seed,
                            dict(sizes or {}), sigma, progress)
        fixed_results = run_tiers(claim, fixed_ctx, tiers)
        out.correction = f"{claim.correction.description} ({claim.correction.reason})"
        out.correction_tiers = fixed_results
        if decide(fixed_results) == "verified":
            out.verdict = "corrected"
    out.reason = _reason(out)
    return out


def _reason(v: Verdict) -> str:
    if v.verdict == "verified":
        return "every tier that ran agrees with the statement as printed"
    if v.verdict == "corrected":
        return "the statement as printed fails; the documented correction passes every tier"
    if v.verdict == "refuted":
        ce = v.counterexample or {}
        return ce.get("reason", "a tier found a counterexample")
    bad = [f"{t}: {r.reason or r.status}" for t, r in v.tiers.items() if r.status == "error"]
    bad = bad or [f"{t}: {r.reason}" for t, r in v.tiers.items()
                  if r.status == "skipped" and r.reason]
    return "; ".join(bad) or "no tier could decide"
