"""``icl-verify mutate``: mutation testing of the claims' checks.

Every named formula is mutated automatically (``verify.mutants``); each mutant replaces its
formula (exactly as ``--set NAME=MUTANT`` would) and the claim is checked again.  A mutant is
*killed* when the claim comes out ``refuted``.  The kill rate that matters is over the mutants
that are not equivalent to the original: an equivalent mutant says the same thing and must
survive, so each one is listed with the simplification or the exact evaluation that shows it.
A killed mutant that is equivalent to the original is a false alarm (a check refutes a true
statement) and fails the run like a surviving non-equivalent mutant does.

A mutant of a formula marked as a bound (``NamedFormula.weaker``) that is a looser bound on the
claim's whole domain (a larger upper bound, a larger sufficient threshold, a smaller lower bound)
is *implied*: the original claim implies it, so it is a true statement that no sound check can
refute.  Implied mutants are listed apart with the proof or the sampling that shows it (status
``implied``, count ``implied``); they are not counted as non-equivalent, and a killed implied
mutant is a false alarm (an unsound check) like a killed equivalent one.  A tighter mutant of a
bound stays non-equivalent: the checks must refute it.

A claim may carry its exact values (``Claim.exact``: what each bound bounds, computed from its
derivation, e.g. a* and f(a*) for gatmiry2024 Thm 3.2).  A survivor is then evaluated as a claim
at points of the domain drawn: *true* (status ``true``, count ``true``) when every bound holds for
the exact value at each of them, a true statement that no sound check can refute although it
claims something else than the original (not counted as non-equivalent); or a survivor with the
point where it is false (``false_at``), which says where a check does not look.  Killed mutants
are not judged this way: their counterexample is exact, a sampled "true" is not.

A mutant's tiers run cheapest first, as measured on the claim's baseline check (ties and
unmeasured tiers in the order numeric, symbolic, train); once one refutes it the verdict is
``refuted`` whatever the others say, so the rest are skipped (``--every-tier`` runs them all, to
see which tiers kill which mutants).  Survivors and equivalent mutants always run every tier.

``--mutant-timeout S`` stops a mutant whose tiers run longer than S seconds: it is counted as a
survivor (verdict ``inconclusive``, reason "not decided within S s"), never as killed.
``--mutant-memory GB`` does the same for a mutant whose checks grow past GB gigabytes of resident
memory (an exact power or expansion that explodes); by default half the machine's memory, shared
by the ``--jobs``.
``--jsonl PATH`` appends one JSON line per mutant as soon as it is decided (and one per skipped
claim, then the totals), so a run that is stopped still leaves its figures.

Default tiers are symbolic,numeric and the default budget is quick: the symbolic tier decides
the formulas exactly and the numeric tier re-checks them in float64 and against Monte Carlo; the
train tier compares trained weights with the same formulas, so it can only kill what the exact
tiers already kill, at a hundred times the cost.  ``--tier`` and ``--budget`` override both.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Callable

from .claim import Claim
from .evidence import closest_over_tiers, describe_approach, cut as _cut
from .errors import UsageError
from .limits import OverMemory, TimedOut, memory_limit, time_limit, total_memory
from .parallel import Executor, check_all
from .verdict import proof_of
from .mutants import (Equivalence, Invalid, Mutant, claim_domain, equivalence, generate,
                      judged_by_exact)

DEFAULT_TIERS = "symbolic,numeric"
DEFAULT_BUDGET = "quick"
STATUSES = ("killed", "equivalent", "implied", "true", "survived", "false_alarm")
TIER_COST = {"numeric": 0, "symbolic": 1, "train": 2}  # the order of tiers the baseline ties


@dataclass
class Outcome:
    """A checked mutant: the verdict, which tiers refuted it, and whether it is equivalent."""

    mutant: Mutant
    verdict: str
    killed_by: list[str]
    equivalence: Equivalence
    reason: str
    seconds: float = 0.0
    closest: dict | None = None  # the bound comparison nearest to failing (closest_approach)
    untested: bool = False  # its checks compared no bound, where the original's did
    # the proof steps that fail for the mutant where the original's proof is supported: the
    # checks tell it from the original (a kill) although no tier refutes it as a statement
    proof_gap: list = field(default_factory=list)

    @property
    def killed(self) -> bool:
        return self.verdict == "refuted" or bool(self.proof_gap)

    @property
    def status(self) -> str:
        if self.killed:  # a kill's counterexample is exact: a sampled "true" does not overrule it
            eq = self.equivalence
            return "false_alarm" if eq.equivalent and not eq.true else "killed"
        if self.equivalence.implied:
            return "implied"
        if self.equivalence.true:
            return "true"
        return "equivalent" if self.equivalence.equivalent else "survived"

    def explanation(self) -> str:
        """Why a mutant survived (or why its kill is a false alarm)."""
        eq = self.equivalence
        if self.status == "equivalent":
            label = {"assumptions": "equivalent under the claim's assumptions",
                     "scale": "equivalent up to a positive factor"}.get(
                         eq.kind, "equivalent to the original")
            return f"{label}: {eq.detail}"
        if self.status == "implied":
            return f"{eq.detail} (a weaker statement the original implies: it must survive)"
        if self.status == "true":
            return eq.detail + (f" ({eq.stronger})" if eq.stronger else "")
        if self.status == "false_alarm":
            if eq.implied:
                return (f"refuted although implied by the original, a weaker true statement (an "
                        f"unsound check; {eq.detail}): {self.reason}")
            return f"refuted although equivalent ({eq.detail}): {self.reason}"
        if self.status == "survived":
            where = ""
            if eq.witness:
                w = eq.witness
                at = f", entry {tuple(w['entry'])}" if "entry" in w else ""
                scalars = {k: v for k, v in w["values"].items()
                           if k not in w["sizes"] and not v.startswith("[")}
                point = ", ".join(f"{k}={v}" for k, v in {**w["sizes"], **scalars}.items())
                where = (f"; it differs from the original at ({point}){at}: "
                         f"{_cut(w['original'])} vs {_cut(w['mutant'])} (the instance is in "
                         f"--json)")
            false = (f"; it is {eq.false_at}: a check does not look there" if eq.false_at
                     else "")
            near = f"; {describe_approach(self.closest)}" if self.closest else ""
            if self.untested:
                near = ("; untested: its checks compared no bound, where the original's did (no "
                        "instance they drew meets its hypothesis, or its bound is not a finite "
                        "number there), so they never put it to the test")
            if eq.stronger:
                return (f"{eq.stronger}; the checks found no instance where it fails (verdict "
                        f"{self.verdict}; {self.reason}): the printed statement has at least this "
                        f"much slack wherever they looked, or a check is not sharp enough"
                        f"{near}{false}")
            return (f"the checks did not refute it (verdict {self.verdict}; {self.reason}){where}"
                    f"{near}{false}")
        return self.reason

    def as_dict(self) -> dict:
        return {"formula": self.mutant.formula, "operator": self.mutant.operator,
                "change": self.mutant.change, "text": self.mutant.text, "status": self.status,
                "verdict": self.verdict, "killed_by": self.killed_by,
                "equivalence": self.equivalence.as_dict(),
                "reason": self.reason if self.status == "killed" else self.explanation(),
                "seconds": round(self.seconds, 3),
                **({"proof_gap": self.proof_gap} if self.proof_gap else {}),
                **({"closest_approach": self.closest}
                   if self.closest and self.status == "survived" else {}),
                **({"untested": True} if self.untested and self.status == "survived" else {})}


@dataclass
class FormulaReport:
    claim: str
    formula: str
    outcomes: list[Outcome] = field(default_factory=list)
    invalid: list[Invalid] = field(default_factory=list)

    def counts(self) -> dict:
        """``equivalent``, ``implied`` and ``true`` include the false alarms of their kind
        (refuted anyway); ``non_equivalent`` (killed or survived) excludes all three."""
        by = {s: sum(1 for o in self.outcomes if o.status == s) for s in STATUSES}
        alarms = [o.equivalence for o in self.outcomes if o.status == "false_alarm"]
        alarms_implied = sum(1 for e in alarms if e.implied)
        alarms_true = sum(1 for e in alarms if e.true)
        return {"mutants": len(self.outcomes), "killed": by["killed"] + by["false_alarm"],
                "equivalent": by["equivalent"] + by["false_alarm"] - alarms_implied - alarms_true,
                "implied": by["implied"] + alarms_implied, "true": by["true"] + alarms_true,
                "invalid": len(self.invalid),
                "survived": by["survived"], "false_alarms": by["false_alarm"],
                "survived_stronger": sum(1 for o in self.outcomes if o.status == "survived"
                                         and o.equivalence.stronger),
                "survived_untested": sum(1 for o in self.outcomes if o.status == "survived"
                                         and o.untested),
                "non_equivalent": by["killed"] + by["survived"]}

    def as_dict(self) -> dict:
        return {"formula": self.formula, **self.counts(),
                "mutant_results": [o.as_dict() for o in self.outcomes],
                "invalid_mutants": [{"operator": i.operator, "change": i.change, "text": i.text,
                                     "error": i.error} for i in self.invalid]}


@dataclass
class ClaimReport:
    """A claim's mutants, or why it was skipped.  ``mutated`` is ``as printed`` or, for a
    corrected claim, ``corrected`` (the documented correction is the formula under test)."""

    claim: str
    baseline: str
    baseline_reason: str
    formulas: list[FormulaReport]
    mutated: str = "as printed"
    skipped: str | None = None

    def as_dict(self) -> dict:
        return {"claim": self.claim, "baseline_verdict": self.baseline,
                "baseline_reason": self.baseline_reason, "mutated": self.mutated,
                "skipped": self.skipped, "formulas": [f.as_dict() for f in self.formulas]}


def totals(reports: list[ClaimReport]) -> dict:
    keys = ("mutants", "killed", "equivalent", "implied", "true", "invalid", "survived",
            "false_alarms", "non_equivalent", "survived_stronger", "survived_untested")
    out = {k: sum(f.counts()[k] for r in reports for f in r.formulas) for k in keys}
    killed_non_eq = out["killed"] - out["false_alarms"]
    out["kill_rate"] = out["killed"] / out["mutants"] if out["mutants"] else None
    out["kill_rate_non_equivalent"] = (killed_non_eq / out["non_equivalent"]
                                       if out["non_equivalent"] else None)
    out["claims_mutated"] = sum(1 for r in reports if r.skipped is None)
    out["claims_skipped"] = sum(1 for r in reports if r.skipped is not None)
    return out


def mutate_claim(claim: Claim, options: dict, formulas: list[str] | None = None,
                 progress: bool = False, every_tier: bool = False,
                 mutant_timeout: float | None = None,
                 on_outcome: Callable[[Outcome], None] | None = None,
                 executor: Executor | None = None,
                 mutant_memory: int | None = None) -> ClaimReport:
    """Check the claim as printed (the baseline), then every mutant of every named formula.

    Mutants only say something about the checks of a formula that passes them: a claim that is
    refuted or inconclusive as printed is skipped; for a corrected claim the corrected formulas
    are the base that is mutated (the other formulas as printed)."""
    report = None if on_outcome is None else (lambda _claim, outcome: on_outcome(outcome))
    return mutate_claims([claim], options, formulas, progress, every_tier, mutant_timeout,
                         report, executor, mutant_memory)[0]


@dataclass(frozen=True)
class MutantTask:
    """One mutant to check: the claim (itself, or its registry id on another process), the
    corrected formulas that are its base, the mutant, and how to check it."""

    claim: Claim | str
    fixed: dict
    formula: str
    mutant: Mutant
    options: dict
    every_tier: bool
    timeout: float | None
    base_compares: bool
    base_proof: str = "not checked"  # the proof status of the formulas mutated
    memory: int | None = None  # bytes of resident memory the mutant's checks may reach


def run_mutant(task: MutantTask) -> Outcome:
    """Judge a mutant's equivalence, check it, and judge a survivor by the claim's exact values
    (on whichever process runs it: everything it needs is in the task or the registry)."""
    from .registry import find

    claim = find(task.claim) if isinstance(task.claim, str) else task.claim
    f, m, fixed = claim.formula(task.formula), task.mutant, task.fixed
    domain = _domain(claim, tuple(sorted(fixed.items())))
    # equivalence and implication are judged over every positive value unless the claim
    # restricts them; exact values are compared on the domain either way
    eq_domain = domain if domain is not None and domain.restricts else None
    seed = task.options.get("seed", 0)
    eq = equivalence(f, m.text, seed=seed, base=fixed.get(f.name), domain=eq_domain)
    outcome = _check_mutant(claim, fixed, f.name, m, eq, task.options, task.every_tier,
                            task.timeout, task.base_proof, task.memory)
    if outcome.status == "survived":
        outcome.equivalence = judged_by_exact(eq, f, m.text, seed, domain)
        outcome.untested = task.base_compares and outcome.closest is None
    return outcome


_DOMAINS: dict = {}  # per process: (claim id, its identity, fixed) -> (claim, domain)


def _domain(claim: Claim, fixed: tuple):
    """The claim's domain with ``fixed`` formulas, computed once per process (the claim is kept
    with it, so that its identity is not reused)."""
    key = (claim.id, id(claim), fixed)
    if key not in _DOMAINS:
        _DOMAINS[key] = (claim, claim_domain(claim.formulas, dict(fixed), claim.exact,
                                             claim.ranges))
    return _DOMAINS[key][1]


def lost_mutant(task: MutantTask, why: str) -> Outcome:
    """A mutant whose worker died twice: not refuted, and not judged."""
    return Outcome(task.mutant, "inconclusive", [],
                   Equivalence("none", "not judged: its worker was lost"), why)


def mutate_claims(claims: list[Claim], options: dict, formulas: list[str] | None = None,
                  progress: bool = False, every_tier: bool = False,
                  mutant_timeout: float | None = None,
                  on_outcome: Callable[[str, Outcome], None] | None = None,
                  executor: Executor | None = None,
                  mutant_memory: int | None = None) -> list[ClaimReport]:
    """``mutate_claim`` for each claim: the baselines one after the other, then every mutant of
    every claim as one batch of independent tasks on ``executor`` (default: here, in order);
    ``on_outcome(claim_id, outcome)`` as each mutant is decided."""
    from .runner import check_claim

    executor = executor or Executor(progress=progress, label="mutants")
    remote = executor.jobs > 1 or executor.scheduler is not None
    eligible = [c for c in claims if c.formulas and set(options["tiers"]) & set(c.tiers)]
    # the baselines are independent tasks too (on another process, claims go by registry id)
    bases = dict(zip((c.id for c in eligible), check_all(eligible, options, {}, executor)
                     if remote else [check_claim(c, **options) for c in eligible]))
    plans, tasks = [], []
    for claim in claims:
        if not claim.formulas:
            plans.append(ClaimReport(claim.id, "-", "", [],
                                     skipped="it has no named formulas to mutate"))
            continue
        if not set(options["tiers"]) & set(claim.tiers):
            plans.append(ClaimReport(claim.id, "-", "", [], skipped=f"it has no "
                                     f"{' or '.join(options['tiers'])} tier"))
            continue
        base = bases[claim.id]
        fixed: dict[str, str] = {}
        base_tiers = base.tiers
        if base.verdict == "corrected":  # the correction the check verified (derived or not)
            fixed = dict(base.correction["formulas"])
            base_tiers = base.correction_tiers
        elif base.verdict != "verified":
            plans.append(ClaimReport(claim.id, base.verdict, base.reason, [], skipped=(
                f"it is {base.verdict} as printed, so its mutants say nothing about its "
                f"checks")))
            continue
        elif base.proof["status"] == "gap" and claim.correction is not None:
            # a true statement whose proof has a gap: its mutants would share the gap, so the
            # documented correction, whose proof holds, is the base its proof checks can test
            fixed_base = check_claim(claim, **{**options, "overrides": claim.correction.formulas})
            if fixed_base.verdict == "verified" and fixed_base.proof["status"] == "supported":
                fixed, base_tiers = dict(claim.correction.formulas), fixed_base.tiers
        mine = {**options, "tiers": tier_order(options["tiers"], base.tiers)}
        base_compares = closest_over_tiers(base_tiers) is not None
        base_proof = proof_of(base_tiers)["status"]
        reports = []
        for f in claim.formulas:
            if formulas and f.name not in formulas:
                continue
            mutants, invalid = generate(f, fixed.get(f.name))
            reports.append(FormulaReport(claim.id, f.name, invalid=invalid))
            tasks += [(reports[-1], MutantTask(claim.id if remote else claim, fixed, f.name, m,
                                               mine, every_tier, mutant_timeout, base_compares,
                                               base_proof, mutant_memory))
                      for m in mutants]
        plans.append(ClaimReport(claim.id, base.verdict, base.reason, reports,
                                 mutated="corrected" if fixed else "as printed"))

    def done(i: int, outcome: Outcome) -> None:
        if on_outcome is not None:
            on_outcome(tasks[i][0].claim, outcome)

    outcomes = executor.map(run_mutant, [t for _, t in tasks], lost_mutant, done)
    for (report, _), outcome in zip(tasks, outcomes):
        report.outcomes.append(outcome)
    return plans


def tier_order(tiers: list[str], baseline: dict) -> list[str]:
    """The tiers cheapest first by the seconds each took on the baseline check (``baseline``:
    tier -> TierResult); a tier the baseline did not run counts as free, ties go by TIER_COST.
    yang2024 Thm. 1 and gatmiry2024 Thm. 3.2 have a numeric tier slower than their symbolic one."""
    def cost(t: str) -> tuple[float, int]:
        r = baseline.get(t)
        return (r.seconds if r is not None else 0.0, TIER_COST.get(t, len(TIER_COST)))

    return sorted(tiers, key=cost)


def _check_mutant(claim: Claim, fixed: dict, name: str, m: Mutant, eq: Equivalence,
                  options: dict, every_tier: bool, timeout: float | None = None,
                  base_proof: str = "not checked", memory: int | None = None) -> Outcome:
    """Run the tiers in the order given (``tier_order``); once one refutes the mutant the verdict
    is ``refuted`` whatever the others say, so the rest are skipped unless ``every_tier``; the
    same once a proof step fails for the mutant where ``base_proof`` (the original's) is
    supported: the checks tell it from the original.  A tier still running after ``timeout``
    seconds (all tiers together), or past ``memory`` bytes of resident memory, is stopped and
    counted as an error, so the mutant is not refuted by it."""
    import time

    from .claim import TierResult
    from .runner import check_claim
    from .verdict import decide

    results: dict = {}
    tier, start = None, time.perf_counter()
    try:
        with time_limit(timeout), memory_limit(memory):
            for tier in options["tiers"]:
                start = time.perf_counter()
                last = check_claim(claim, overrides={**fixed, name: m.text},
                                   **{**options, "tiers": [tier]}, usefulness=False)
                results.update(last.tiers)
                gap = _proof_gap(results, base_proof)
                if (last.verdict == "refuted" or gap) and not every_tier:
                    break
    except (TimedOut, OverMemory) as stop:
        if tier not in results:  # else the limit came after the last tier had finished
            results[tier] = TierResult(
                "error", seconds=time.perf_counter() - start,
                reason=f"not decided within the mutant timeout of {timeout:g} s"
                if isinstance(stop, TimedOut) else
                f"not decided within the mutant memory limit of {memory / 2**30:.3g} GB "
                f"(its checks reached {stop.resident / 2**30:.3g} GB)")
    verdict = decide(results)
    failed = [t for t, r in results.items() if r.status == "fail"]
    seconds = sum(r.seconds for r in results.values())
    gap = _proof_gap(results, base_proof)
    if verdict == "refuted":
        first = results[failed[0]]
        reason = f"{failed[0]}: {first.reason}"
    elif gap:
        reason = "proof gap: " + "; ".join(f"{g['tier']} {g['step']}: {g['what']}" for g in gap)
    else:
        reason = _not_refuted(verdict, results)
    killed_by = failed + [f"{g['tier']} (proof {g['step']})" for g in gap]
    return Outcome(m, verdict, killed_by, eq, reason, seconds, closest_over_tiers(results),
                   proof_gap=[{"step": g["step"], "tier": g["tier"], "what": g["what"]}
                              for g in gap])


def _proof_gap(results: dict, base_proof: str) -> list[dict]:
    """The failing proof steps of a mutant whose original's proof is supported (else none: a
    gap the original shares says nothing about the mutant)."""
    if base_proof != "supported":
        return []
    return [f for f in proof_of(results)["findings"] if f["ok"] is False]


def _not_refuted(verdict: str, results: dict) -> str:
    return "; ".join(f"{t} {r.status}" + (f" ({r.reason})" if r.reason else "")
                     for t, r in results.items())


# ---------------------------------------------------------------------------------- output
def _rate(killed: int, total: int) -> str:
    return f"{100 * killed / total:.0f}%" if total else "-"


def table(reports: list[ClaimReport]) -> str:
    from .output import _table

    rows = [["claim", "formula", "mutants", "killed", "equivalent", "implied", "true",
             "invalid", "survived", "kill rate (non-equivalent)"]]
    for r in reports:
        for f in r.formulas:
            c = f.counts()
            rows.append([r.claim, f.formula, str(c["mutants"]), str(c["killed"]),
                         str(c["equivalent"]), str(c["implied"]), str(c["true"]),
                         str(c["invalid"]), str(c["survived"]),
                         _rate(c["killed"] - c["false_alarms"], c["non_equivalent"])])
    t = totals(reports)
    rows.append(["total", "", str(t["mutants"]), str(t["killed"]), str(t["equivalent"]),
                 str(t["implied"]), str(t["true"]), str(t["invalid"]), str(t["survived"]),
                 _rate(t["killed"] - t["false_alarms"], t["non_equivalent"])])
    out = [_table(rows), "",
           f"kill rate: {t['killed']}/{t['mutants']} mutants refuted; "
           f"{t['killed'] - t['false_alarms']}/{t['non_equivalent']} non-equivalent mutants killed"
           f" ({_rate(t['killed'] - t['false_alarms'], t['non_equivalent'])})"
           + (f"; {t['implied']} implied (looser bounds, not counted)" if t["implied"] else "")
           + (f"; {t['true']} true where the claim's exact values were drawn (not counted)"
              if t["true"] else "")
           + (f"; {t['survived_stronger']} of the {t['survived']} survivors claim more than the "
              f"original (tighter bounds, wider hypotheses)" if t["survived_stronger"] else "")
           + (f"; {t['survived_untested']} untested (no instance drawn meets their hypothesis)"
              if t["survived_untested"] else "")]
    for r in reports:
        if r.skipped:
            out.append(f"\n{r.claim}: not mutated: {r.skipped}"
                       + (f" ({r.baseline_reason})" if r.baseline_reason else ""))
        elif r.mutated == "corrected":
            out.append(f"\n{r.claim}: corrected as printed; its documented correction is the "
                       f"formula under test")
    for heading, status in (("Surviving non-equivalent mutants (weak checks)", "survived"),
                            ("False alarms (equivalent or implied mutants refuted)",
                             "false_alarm"),
                            ("Equivalent mutants (survive, as they must)", "equivalent"),
                            ("Implied mutants (weaker bounds: true consequences, survive as they "
                             "must)", "implied"),
                            ("True mutants (the claim's exact values satisfy them: survive as "
                             "they must)", "true")):
        rows_ = [(r.claim, o) for r in reports for f in r.formulas for o in f.outcomes
                 if o.status == status]
        if rows_:
            out.append(f"\n{heading}:")
            for claim, o in rows_:
                out.append(f"  {claim} {o.mutant.formula} = {o.mutant.text}")
                out.append(f"      {o.mutant.operator}: {o.mutant.change}")
                out.append(f"      {o.explanation()}")
    invalid = sum(len(f.invalid) for r in reports for f in r.formulas)
    if invalid:
        out.append(f"\n{invalid} ill-typed mutants were not counted (--json lists them with the "
                   f"shape error)")
    return "\n".join(out)


def register(sub) -> None:
    from .cli import add_run_options, add_selection

    p = sub.add_parser(
        "mutate", help="mutation testing: mutate every named formula and check that the claim's "
                       "checks refute each mutant",
        description="Mutates each named formula (constants, symbol swaps, dropped terms, sign "
                    "flips, transposes), checks each mutant, and reports the kill rate. Default "
                    "tiers symbolic,numeric (the train tier is slow and decides the same "
                    "formulas) and budget quick.")
    add_selection(p)
    add_run_options(p)
    p.set_defaults(tier=DEFAULT_TIERS, budget=DEFAULT_BUDGET)
    p.add_argument("--formula", action="append", default=[], metavar="NAME",
                   help="only mutate this named formula (repeatable)")
    p.add_argument("--every-tier", action="store_true",
                   help="run every tier on every mutant (default: stop at the first tier that "
                        "refutes it) to see which tiers kill which mutants")
    p.add_argument("--mutant-timeout", type=float, default=None, metavar="SECONDS",
                   help="stop a mutant whose tiers run longer than this; it counts as a survivor "
                        "(not decided), never as killed")
    p.add_argument("--mutant-memory", type=float, default=None, metavar="GB",
                   help="stop a mutant whose checks grow past this many GB of resident memory; "
                        "it counts as a survivor (not decided), never as killed (default: half "
                        "the machine's memory, shared by the --jobs)")
    p.add_argument("--jsonl", metavar="PATH",
                   help="append one JSON line per mutant as it is decided (then the totals), so "
                        "a stopped run keeps its figures")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_mutate)


def cmd_mutate(args) -> int:
    from .cli import EXIT_FAILED, EXIT_OK, executor_from, run_options, select_claims

    claims = select_claims(args)
    options = run_options(args)
    known = {f.name for c in claims for f in c.formulas}
    for name in args.formula:
        if name not in known:
            raise UsageError(f"--formula {name}: no selected claim has a formula {name!r} "
                             f"(formulas: {', '.join(sorted(known)) or 'none'})")
    from .runner import validate

    for c in claims:  # fail on sizes/sigma before spending minutes on mutants
        validate(c, options["sizes"], options["sigma"], options["budget"], options["tiers"])
    if args.mutant_timeout is not None and not args.mutant_timeout > 0:
        raise UsageError(f"--mutant-timeout {args.mutant_timeout:g}: must be a positive number of "
                         f"seconds")
    executor = executor_from(args, "mutants")
    memory = mutant_memory(args.mutant_memory, executor.jobs)
    stream = _open_stream(args.jsonl)
    try:
        write = None if stream is None else (
            lambda cid, o: _line(stream, {"claim": cid, **o.as_dict()}))
        reports = mutate_claims(claims, options, args.formula or None, executor.progress,
                                args.every_tier, args.mutant_timeout, write, executor, memory)
        if stream is not None:
            for report in reports:
                if report.skipped:
                    _line(stream, {"claim": report.claim, "skipped": report.skipped})
            _line(stream, {"totals": totals(reports)})
    finally:
        if stream is not None:
            stream.close()
    t = totals(reports)
    if args.json:
        print(json.dumps({"tiers": options["tiers"], "every_tier": args.every_tier,
                          "mutant_timeout": args.mutant_timeout, "mutant_memory_bytes": memory,
                          "budget": options["budget"],
                          "device": options["device"], "seed": options["seed"],
                          "claims": [r.as_dict() for r in reports], "totals": t}, indent=2))
    else:
        print(table(reports))
    ok = t["survived"] == 0 and t["false_alarms"] == 0
    return EXIT_OK if ok else EXIT_FAILED


def mutant_memory(gigabytes: float | None, jobs: int = 1) -> int | None:
    """``--mutant-memory`` in bytes: the number given, or half the machine's memory shared by
    ``jobs`` processes (None where the machine's memory is unknown); UsageError unless positive
    and finite."""
    if gigabytes is None:
        total = total_memory()
        return None if total is None else total // (2 * max(jobs, 1))
    if not (math.isfinite(gigabytes) and gigabytes > 0):
        raise UsageError(f"--mutant-memory {gigabytes:g}: must be a positive number of GB")
    return int(gigabytes * 2**30)


def _open_stream(path: str | None):
    """The ``--jsonl`` file opened for appending, line-buffered (UsageError if it cannot be)."""
    if path is None:
        return None
    try:
        return open(path, "a", buffering=1, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--jsonl {path}: cannot write there ({exc.strerror or exc})") from None


def _line(stream, record: dict) -> None:
    stream.write(json.dumps(record) + "\n")



