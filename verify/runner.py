"""Runs a claim's tiers and turns their results into a verdict (trying the correction if any)."""
from __future__ import annotations

import time
import traceback
import warnings
from dataclasses import replace
from typing import Mapping, Sequence

import sympy
import torch

from models.device import DeviceUnavailable, cpu_threads, gpu_monitor

from .claim import BUDGETS, TIERS, Claim, Context, FormulaReads, SampleLog, TierResult
from .corrections import chosen
from .errors import UsageError
from .limits import TimedOut, refuse_work, time_limit
from .sigma import EVERY_SIGMA, SigmaReads
from .verdict import Verdict, decide, first_counterexample, proof_of, unread, why_undecided


# torch modules whose first import warns (DeprecationWarnings of torch.jit.script, 18 of them in
# torch 2.13): imported lazily by the first forward-mode derivative, so whichever tier came first
# in a process would carry warnings that are not its own
_IMPORTS_THAT_WARN = ("torch._decomp.decompositions_for_jvp",)


def _import_quietly() -> None:
    """Import ``_IMPORTS_THAT_WARN`` with their warnings discarded (once; later imports are
    no-ops), so that a tier's warnings do not depend on the tiers before it in its process."""
    import importlib

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in _IMPORTS_THAT_WARN:
            try:
                importlib.import_module(name)
            except ImportError:  # another torch version: nothing to import
                pass


class _EveryWarning:
    """torch warns some things once per process (TORCH_WARN_ONCE: a requires_grad tensor read
    as a number, say); inside a tier it warns every time, so a tier reports what it did whatever
    ran before it in the same process (``--jobs N`` gives the JSON of ``--jobs 1``)."""

    def __enter__(self) -> None:
        self.before = torch.is_warn_always_enabled()
        torch.set_warn_always(True)

    def __exit__(self, *exc) -> None:
        torch.set_warn_always(self.before)


def run_tiers(claim: Claim, ctx: Context, tiers: Sequence[str],
              results: dict | None = None) -> dict[str, TierResult]:
    """Each tier on its own view of the formulas, which records what it read (``reads``);
    the results go into ``results`` as each tier ends (a time limit keeps the finished ones).
    A failure that rests only on Monte Carlo tests is redrawn before it refutes
    (``_redrawn``)."""
    results = {} if results is None else results
    _import_quietly()
    for tier in tiers:
        check = claim.checks.get(tier)
        if check is None:
            results[tier] = TierResult("skipped", reason=f"{claim.id} has no {tier} tier")
            continue
        start = time.perf_counter()
        reads = FormulaReads(ctx.formulas)
        log = SampleLog()
        result = _run_tier(check, replace(ctx, formulas=reads, samples=log), tier)
        if result.status == "fail" and result.sampled:
            again = FormulaReads(ctx.formulas)
            result = _redrawn(result, log, lambda: _run_tier(
                check, replace(ctx, formulas=again, replicate=1), tier))
            reads.read |= again.read
        result.seconds = time.perf_counter() - start
        result.reads = tuple(sorted(reads.read))
        results[tier] = result
    return results


def _run_tier(check, ctx: Context, tier: str) -> TierResult:
    """One tier's check on ``ctx``, with its warnings, the GPU's use and a crash in its
    evidence; a tier that never read ``--sigma`` is skipped (``_sigma_not_read``)."""
    sigma = SigmaReads(ctx.sigma) if ctx.sigma is not None else None
    caught: list = []
    monitor = gpu_monitor(ctx.device)
    try:
        with warnings.catch_warnings(record=True) as caught, monitor, _EveryWarning():
            warnings.simplefilter("always")
            if ctx.budget.name == "paper":  # paper sizes: large batches use every thread
                result = check(replace(ctx, sigma=sigma))
            else:
                with cpu_threads(ctx.device):
                    result = check(replace(ctx, sigma=sigma))
    except (UsageError, DeviceUnavailable):
        raise
    except Exception as exc:  # a crash in a check is reported, never a wrong verdict
        tb = traceback.extract_tb(exc.__traceback__)[-1]
        result = TierResult("error", evidence={
            "exception": f"{type(exc).__name__}: {exc}",
            "where": f"{tb.filename.rsplit('/', 1)[-1]}:{tb.lineno}",
        }, reason=f"the {tier} tier raised {type(exc).__name__}: {_first_line(exc)}")
    if sigma is not None and not sigma.read and result.status in ("pass", "fail") and \
            result.evidence.get("sigma_scope") != EVERY_SIGMA:
        result = _sigma_not_read(result, ctx.sigma)
    if caught:  # evidence, not noise on stderr: numpy's overflow warnings say where
        result.evidence = {**result.evidence, "warnings": _warning_lines(caught)}
    if monitor.active:  # how busy the GPU was while the tier ran
        result.evidence = {**result.evidence, "gpu_use": monitor.summary()}
    return result


def _redrawn(first: TierResult, log: SampleLog, redraw) -> TierResult:
    """A failure that rests only on tests of Monte Carlo samples (``TierResult.sampled``)
    refutes only if the tier run again on independent samples (``redraw``: the context's
    replicate 1) fails too: a true statement's test rejects at level 0.999 once in 1,000 draws,
    twice in a row once in 10^6.  Otherwise the tier is undecided (status error), and so is a
    sampled failure whose samples were not drawn through ``Context.mc_seed``/``mc_rng`` (no
    independent redraw exists)."""
    def undecided(why: str, entry: dict) -> TierResult:
        return replace(first, status="error", counterexample=None, sampled=False,
                       reason=f"{first.reason}{why}", evidence={
                           **first.evidence, "redraw": entry,
                           "first_counterexample": first.counterexample})

    if not log.streams:
        return undecided(": a Monte Carlo test rejected, but its sample was not drawn through "
                         "the context's mc_seed, so no independent sample can repeat it: "
                         "undecided", {"status": "not possible", "streams": []})
    second = redraw()
    entry = {"status": second.status, "streams": log.streams, "replicate": 1,
             **({"reason": second.reason} if second.reason else {})}
    if second.status == "fail":
        return replace(first, evidence={**first.evidence, "redraw": entry}, reason=(
            f"{first.reason} (an independent redraw of its Monte Carlo samples rejects too)"))
    return undecided(f"; an independent redraw of its Monte Carlo samples did not reject "
                     f"({second.status}), so this decides nothing (a true statement's test "
                     f"rejects at level 0.999 once in 1,000 samples): another --seed would",
                     entry)


def _sigma_not_read(result: TierResult, sigma) -> TierResult:
    """A tier that never looked at ``--sigma`` checked the claim at its own covariance: it
    decides nothing about the one asked for (its finding stays in the evidence)."""
    return TierResult("skipped", evidence={
        "sigma_asked": sigma.describe(), "status_at_its_own_covariance": result.status,
        "reason_at_its_own_covariance": result.reason}, reason=(
        f"this tier does not read --sigma {sigma.describe()}: it checks the claim at a "
        f"covariance of its own, so it cannot decide it at the one asked for"))


def _warning_lines(caught: list, limit: int = 10) -> list[str]:
    """The warnings a tier raised, one line per distinct message with its count."""
    counts: dict[str, int] = {}
    for w in caught:
        line = f"{w.category.__name__}: {str(w.message).strip().splitlines()[0][:160]}" \
            if str(w.message).strip() else w.category.__name__
        counts[line] = counts.get(line, 0) + 1
    out = [f"{line} ({n}x)" if n > 1 else line for line, n in counts.items()]
    return out[:limit] + ([f"... and {len(out) - limit} more"] if len(out) > limit else [])


def _first_line(exc: Exception, limit: int = 160) -> str:
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else ""
    return text if len(text) <= limit else text[:limit] + " ..."


def validate(claim: Claim, sizes: Mapping[str, int], sigma, budget: str,
             tiers: Sequence[str] = TIERS) -> None:
    """The sizes and Sigma the claim's setting accepts, within the work the budget can finish
    (UsageError otherwise, before any work)."""
    if claim.setting is None:
        return
    fixed = getattr(claim.setting, "fixed_sigma", "")
    if sigma is not None and fixed:
        raise UsageError(f"{claim.id} takes no --sigma: {fixed}")
    if hasattr(claim.setting, "validate"):
        claim.setting.validate(dict(sizes), sigma)
    _within_ranges(claim, sizes, budget)
    kind = getattr(sigma, "kind", None)
    dimension = len(sigma.values) if kind not in (None, "random", "identity") else None
    refuse_work(claim.setting, sizes, dimension, budget,
                tuple(t for t in tiers if t in claim.checks))


def _within_ranges(claim: Claim, sizes: Mapping[str, int], budget: str) -> None:
    """--size keeps the sizes the claim will run at (its setting's at the budget, with the
    overrides) within every stated relation between sizes (``ranges``, ``size_ranges``) that
    they touch: a claim checked outside its hypothesis would decide a statement the paper does
    not make (UsageError otherwise).  A relation the setting's own sizes do not meet is left to
    the claim's checks (they then do not run at those sizes: gatmiry2024's n >= 16 L^2 d^2 is
    checked symbolically in n)."""
    from .formulas import parse_in, size_symbol

    table = getattr(claim.setting, "sizes", None)
    at = table.get(budget) if isinstance(table, Mapping) else None
    if not sizes or not isinstance(at, Mapping):
        return
    full = {**at, **sizes}
    for text in (*claim.ranges, *claim.size_ranges):
        try:
            rel = parse_in(text, {k: size_symbol(k) for k in full}, what=f"range {text!r}")
        except UsageError:
            continue  # a range in scalars that are not sizes: the domain's, not --size's
        names = {x.name for x in rel.free_symbols}

        def holds(values: Mapping[str, int]) -> bool:
            return bool(rel.subs({size_symbol(k): int(values[k]) for k in names}))

        if names & set(sizes) and holds(at) and not holds(full):
            given = ", ".join(f"{k} = {full[k]}" for k in sorted(names))
            asked = " with --size " + " ".join(f"{k}={v}" for k, v in sizes.items()) \
                if sizes else ""
            raise UsageError(f"{claim.id} assumes {text}; at --budget {budget}{asked} the sizes "
                             f"are {given}")


def check_claim(claim: Claim, tiers: Sequence[str] = TIERS, budget: str = "quick",
                device: str = "auto", seed: int = 0, overrides: Mapping[str, str] | None = None,
                sizes: Mapping[str, int] | None = None, sigma=None,
                progress: bool = False, timeout: float | None = None,
                usefulness: bool = True) -> Verdict:
    """Check one claim: run the tiers on the formulas as printed (or as overridden).
    ``usefulness=False`` skips the vacuity finding (``mutate`` judges truth only).

    ``timeout`` (seconds, None: none) stops the claim where it is: the tiers that finished keep
    their results, the one running is an error "timed out after S s", and the verdict is
    inconclusive (or refuted, where a tier had already refuted the statement)."""
    if budget not in BUDGETS:
        raise UsageError(f"unknown budget {budget!r} (use {', '.join(BUDGETS)})")
    overrides = dict(overrides or {})
    formulas, texts = claim.parsed_formulas(overrides)
    validate(claim, sizes or {}, sigma, budget, tiers)
    ctx = Context(claim.id, formulas, texts, BUDGETS[budget], device, seed, dict(sizes or {}),
                  sigma, progress)
    names = sorted(overrides)
    start = time.perf_counter()
    results: dict[str, TierResult] = {}
    fixed_results: dict[str, TierResult] = {}
    timed_out = False
    limit = None
    fix = None
    try:
        with time_limit(timeout) as limit:
            run_tiers(claim, ctx, tiers, results)
            verdict = decide(unread(results, names), names)
            fix = chosen(claim) if verdict == "refuted" and not overrides else None
            if fix is not None:
                fixed, fixed_texts = claim.parsed_formulas(fix.formulas)
                fixed_ctx = Context(claim.id, fixed, fixed_texts, BUDGETS[budget], device, seed,
                                    dict(sizes or {}), sigma, progress)
                run_tiers(claim, fixed_ctx, tiers, fixed_results)
    except TimedOut as exc:
        if exc.limit is not limit:  # an outer limit (mutate's per mutant): its caller reports
            raise
        timed_out = True
        printed_done = len(results) == len(tiers) and fix is not None
        running = fixed_results if printed_done else results
        _stop(running, claim, tiers, timeout, time.perf_counter() - start)
    results = unread(results, names)
    verdict = decide(results, names)
    out = Verdict(claim.id, claim.title, claim.paper, verdict, results, seed, budget, device,
                  counterexample=first_counterexample(results), formulas=texts,
                  overridden=names, proof=proof_of(results), sizes=dict(sizes or {}),
                  sigma=sigma.describe() if sigma is not None else None)
    if fixed_results:
        fixed_names = sorted(fix.formulas)
        fixed_results = unread(fixed_results, fixed_names)
        out.correction = fix.as_json(claim, {t: r.status for t, r in fixed_results.items()})
        out.correction_tiers = fixed_results
        if decide(fixed_results, fixed_names) == "verified":
            out.verdict = "corrected"
    out.reason = _reason(out)
    out.sharp = _sharp(claim, texts, names) if out.verdict in ("verified", "corrected") else {}
    if usefulness:
        out.vacuous = _vacuous(claim, formulas) if out.verdict in ("verified", "corrected") \
            else {"status": "not checked", "where": "the statement is not verified"}
    if timed_out:
        out.reason = f"timed out after {timeout:g} s: {out.reason}"
    return out


def _stop(results: dict, claim: Claim, tiers: Sequence[str], timeout: float,
          elapsed: float) -> None:
    """The tier the time limit stopped (the first not in ``results``) as an error, and the
    tiers after it as skipped."""
    pending = [t for t in tiers if t not in results]
    for i, tier in enumerate(pending):
        if i == 0:
            results[tier] = TierResult("error", seconds=elapsed, reason=(
                f"timed out after {timeout:g} s (--timeout); a larger limit or a smaller budget "
                f"would decide"))
        else:
            results[tier] = TierResult("skipped", reason=f"not run: the claim timed out after "
                                                         f"{timeout:g} s")


def _vacuous(claim: Claim, formulas: Mapping) -> dict:
    """Where the claim's conclusion is informative (``Claim.vacuity``), from the formulas as
    read (``--set`` included)."""
    if claim.vacuity is None:
        return {"status": "not checked", "where": "the claim declares no informative condition"}
    from .formula_parser import read
    from .vacuity import vacuity

    names = {s.name: s.sympy() for f in claim.formulas for s in f.symbols}
    names.update({f.name: sympy.Symbol(f.name) for f in claim.formulas})
    return vacuity(claim.vacuity, formulas,
                   lambda text: read(text, names, what="informative condition",
                                     expect="condition").expr)


def _sharp(claim: Claim, texts: Mapping[str, str], overridden: Sequence[str]) -> dict:
    """The least value of each printed bound that holds, where the claim derives it
    (``NamedFormula.sharp``, e.g. yang2024 Lemma 2: C = 1, printed 2)."""
    out = {}
    for f in claim.formulas:
        if f.sharp is not None and f.name not in overridden:
            out[f.name] = {"value": str(f.sharp()), "printed": texts.get(f.name, f.text)}
    return out


def _reason(v: Verdict) -> str:
    if v.verdict == "verified":
        if v.overridden:
            return (f"every tier that ran agrees with the statement with {', '.join(v.overridden)} "
                    f"as set, and the tiers that passed read it")
        return "every tier that ran agrees with the statement as printed"
    if v.verdict == "corrected":
        how = ("the correction the engine derived" if v.correction["source"] == "derived"
               else "the documented correction")
        return f"the statement as printed fails; {how} passes every tier"
    if v.verdict == "refuted":
        ce = v.counterexample or {}
        return ce.get("reason", "a tier found a counterexample")
    return why_undecided(v.tiers, v.overridden)
