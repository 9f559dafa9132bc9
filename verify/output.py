"""Terminal rendering of claims and verdicts."""
from __future__ import annotations

import textwrap

from .claim import TIERS, Claim
from .definitions import Definition
from .evidence import closest_over_tiers, describe_approach
from .unicode_math import readable
from .verdict import Verdict


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def list_table(claims: list[Claim], references: dict[str, str] | None = None,
               verdicts: dict[str, str] | None = None) -> str:
    """The claims, headed by each paper's citation; with ``verdicts``, the recorded verdict."""
    head = [textwrap.fill(f"{paper}: {ref}", 100, subsequent_indent="  ")
            for paper, ref in (references or {}).items()]
    rows = [["id", "tiers", *(["recorded"] if verdicts is not None else []), "title"]]
    rows += [[c.id, ",".join(c.tiers),
              *([verdicts.get(c.id, "-")] if verdicts is not None else []), c.title]
             for c in claims]
    return "\n".join(head + ([""] if head else []) + [_table(rows)])


def definitions_table(defs: list[Definition]) -> str:
    rows = [["symbol", "defined in", "meaning"]]
    rows += [[d.name + (f" (in {', '.join(d.claims)})" if d.claims else ""), d.equation,
              d.meaning] for d in defs]
    return _table(rows)


def show_text(claim: Claim, defined: list[Definition] = ()) -> str:
    out = [f"{claim.id}: {claim.title}", "", "Statement:",
           textwrap.fill(readable(claim.statement), 96, initial_indent="  ",
                         subsequent_indent="  "),
           "", "Assumptions:"]
    out += [f"  - {a}" for a in claim.assumptions]
    out += ["", "Named formulas (override with --set NAME=EXPR):"]
    for f in claim.formulas:
        shape = f"{f.shape[0]}x{f.shape[1]} matrix" if f.shape else "scalar"
        syms = ", ".join(s.name for s in f.symbols) or "none"
        out.append(f"  {f.name} = {f.text}")
        out.append(f"      {f.equation}; {shape}; symbols: {syms}")
        if f.description:
            out.append(textwrap.indent(textwrap.fill(f.description, 90), "      "))
    if defined:
        out += ["", "Symbols, as the paper defines them:"]
        out += [textwrap.fill(d.line(), 96, initial_indent="  ", subsequent_indent="      ")
                for d in defined]
    out += ["", f"Tiers: {', '.join(claim.tiers)}"]
    if claim.correction:
        out += ["", f"Correction on file: {claim.correction.description} ({claim.correction.reason})"]
        out += [f"  reading (a correction): {r.symbol} at {r.where} read as {r.read_as}: {r.why}"
                for r in claim.correction.readings]
    if claim.notes:
        out += ["", "Notes:", textwrap.indent(textwrap.fill(claim.notes, 90), "  ")]
    return "\n".join(out)


def _number(x) -> str:
    return f"{x:.3g}" if isinstance(x, float) else str(x)


def _finding_phrase(name: str, entry: dict) -> str:
    """One finding in a few words: its own summary, else the numbers a generic comparison
    decided on (a z-test, a rounding ratio), else its name."""
    if entry.get("summary"):
        return entry["summary"]
    if isinstance(entry.get("z"), (int, float)) and isinstance(entry.get("z_critical"), float):
        n = entry.get("samples") or entry.get("n")
        return (f"{name}: |z| = {abs(entry['z']):.2g} <= {entry['z_critical']:.3g}"
                + (f" at {n:,} samples" if isinstance(n, int) else ""))
    if isinstance(entry.get("max_abs_z"), float) and isinstance(entry.get("z_critical"), float):
        return (f"{name}: max |z| = {entry['max_abs_z']:.2g} <= {entry['z_critical']:.3g}"
                + (f" over {entry['components']} components" if entry.get("components") else ""))
    ratios = [(k, v) for k, v in entry.items() if k.startswith("max_|") and "/" in k
              and isinstance(v, (int, float))]
    if ratios:
        k, v = ratios[0]
        return f"{name}: {k.removeprefix('max_')} <= {_number(v)} (must be <= 1)"
    return name


def status_word(status: str) -> str:
    """A tier status as a reader reads it: the schema's ``error`` (the tier ran and decided
    nothing: a timeout, an exception, a comparison that was not finite) is *undecided*."""
    return "undecided" if status == "error" else status


def tier_lines(v: Verdict, width: int = 100) -> list[str]:
    """Under a claim, one line per tier that ran: what it decided on, or why it decided nothing."""
    out = []
    for tier in TIERS:
        r = v.tiers.get(tier)
        if r is None:
            continue
        if r.status == "pass":
            found = [(k, e) for k, e in (r.evidence or {}).items()
                     if isinstance(e, dict) and e.get("ok") is True and not e.get("proof_step")]
            phrases = [_finding_phrase(k, e) for k, e in found]
            # two findings with the same summary are told apart by their names
            phrases = [f"{k}: {p}" if phrases.count(p) > 1 and not p.startswith(f"{k}:") else p
                       for (k, _), p in zip(found, phrases)]
            text = "; ".join(phrases) or "passed"
        else:
            text = f"{status_word(r.status)}: {r.reason or status_word(r.status)}"
        out.append(textwrap.fill(text, width, initial_indent=f"  {tier:<10}",
                                 subsequent_indent=" " * 12))
    return out


def _plain(value) -> str:
    """A value as a reader writes it: lists without quotes (exact numbers are strings)."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_plain(v) for v in value) + "]"
    return str(value)


def counterexample_block(ce: dict, width: int = 100) -> list[str]:
    """A counterexample as aligned ``key  value`` lines, a nested entry as ``key sub`` lines
    (values cut to the width; --json has them whole)."""
    items = []
    for k, v in ce.items():
        if k in ("reason", "tier"):
            continue
        if isinstance(v, dict):
            items += [(f"{k} {a}", b) for a, b in v.items()]
        else:
            items.append((k, v))
    if not items:
        return []
    pad = max(len(k) for k, _ in items)
    lines = [f"  counterexample ({ce['tier']}):" if "tier" in ce else "  counterexample:"]
    room = max(40, width - pad - 6)
    for k, v in items:
        text = _plain(v)
        if len(text) > room:
            text = text[:room - 24] + f" ... ({len(text)} characters)"
        lines.append(f"    {k.ljust(pad)}  {text}")
    return lines


def check_table(verdicts: list[Verdict], quiet: bool = False) -> str:
    rows = [["claim", "verdict", *TIERS, "seconds"]]
    for v in verdicts:
        cells = [v.claim, v.verdict]
        for t in TIERS:
            r = v.tiers.get(t)
            cells.append(status_word(r.status) if r else "-")
        cells.append(f"{sum(r.seconds for r in v.tiers.values()):.1f}")
        rows.append(cells)
    out = [_table(rows)]
    if quiet:
        return out[0]
    for v in verdicts:
        gap = [f for f in v.proof.get("findings", []) if f["ok"] is False]
        at = f" (at {v.asked()})" if v.asked() else ""  # the verdict holds there only
        if v.verdict == "verified":
            out.append(f"\n{v.claim}: verified{at}")
            out += tier_lines(v)
            closest = closest_over_tiers(v.tiers)
            if closest:
                out.append(f"  {describe_approach(closest)}")
            if gap:
                out.append(f"  {_proof_line(gap)}")
            out += [f"  derived: the least {name} that holds is {s['value']} "
                    f"(printed: {s['printed']})" for name, s in v.sharp.items()
                    if s["value"] != s["printed"]]
            out += _vacuity_lines(v)
            continue
        out.append(f"\n{v.claim}: {v.verdict}{at}: {v.reason}")
        out += tier_lines(v)
        if v.counterexample:
            out += counterexample_block(v.counterexample)
        if gap:
            out.append(f"  {_proof_line(gap)}")
        if v.correction:
            out.append(f"  correction ({v.correction['source']}): {v.correction['description']}")
            out += [f"    --set '{name}={text}'" for name, text in v.correction["formulas"].items()]
            out += [f"  reading (a correction, not the paper's definition): {r['symbol']} at "
                    f"{r['where']} read as {r['read_as']}; the paper defines "
                    f"{r['paper_definition']}" for r in v.correction.get("readings", [])]
            closest = closest_over_tiers(v.correction_tiers or {})
            if closest:
                out.append(f"  the correction's {describe_approach(closest)}")
            if v.verdict == "refuted":  # why the correction did not make it 'corrected'
                out += [f"  not confirmed: the correction's {t} tier "
                        f"{'fails' if r.status == 'fail' else 'is undecided'}: {r.reason}"
                        for t, r in (v.correction_tiers or {}).items()
                        if r.status in ("fail", "error")]
    out.append("\n(--json prints every tier's evidence)")
    return "\n".join(out)


def _vacuity_lines(v: Verdict) -> list[str]:
    """Whether the conclusion says something where the hypothesis admits sizes."""
    vac = v.vacuous or {}
    if vac.get("status") not in ("informative", "vacuous"):
        return []
    head = "usefulness: vacuous: " if vac["status"] == "vacuous" else "usefulness: informative: "
    return [textwrap.fill(head + vac["where"], 100, initial_indent="  ",
                          subsequent_indent="    ")]


def _proof_line(gap: list[dict]) -> str:
    """The proof's status where it has a gap: the failing steps, and why."""
    first: dict[str, str] = {}
    for f in gap:  # one line per step: the first failure says why
        first.setdefault(f["step"], f["what"])
    steps = "; ".join(f"{step}: {what}" for step, what in first.items())
    return f"proof: gap at {steps} (the statement's verdict stands on its own)"
