"""Terminal rendering of claims and verdicts."""
from __future__ import annotations

import textwrap

from .claim import TIERS, Claim
from .definitions import Definition
from .evidence import closest_over_tiers, describe_approach
from .verdict import Verdict


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def list_table(claims: list[Claim]) -> str:
    rows = [["id", "tiers", "title"]]
    rows += [[c.id, ",".join(c.tiers), c.title] for c in claims]
    return _table(rows)


def definitions_table(defs: list[Definition]) -> str:
    rows = [["symbol", "defined in", "meaning"]]
    rows += [[d.name + (f" (in {', '.join(d.claims)})" if d.claims else ""), d.equation,
              d.meaning] for d in defs]
    return _table(rows)


def show_text(claim: Claim, defined: list[Definition] = ()) -> str:
    out = [f"{claim.id}: {claim.title}", "", "Statement:", textwrap.indent(claim.statement, "  "),
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


def check_table(verdicts: list[Verdict]) -> str:
    rows = [["claim", "verdict", *TIERS, "seconds"]]
    for v in verdicts:
        cells = [v.claim, v.verdict]
        for t in TIERS:
            r = v.tiers.get(t)
            cells.append(r.status if r else "-")
        cells.append(f"{sum(r.seconds for r in v.tiers.values()):.1f}")
        rows.append(cells)
    out = [_table(rows)]
    for v in verdicts:
        gap = [f for f in v.proof.get("findings", []) if f["ok"] is False]
        if v.verdict == "verified":
            closest = closest_over_tiers(v.tiers)
            if closest:
                out.append(f"\n{v.claim}: {describe_approach(closest)}")
            if gap:
                out.append(f"\n{v.claim}: {_proof_line(gap)}")
            out += [f"\n{v.claim}: derived: the least {name} that holds is {s['value']} "
                    f"(printed: {s['printed']})" for name, s in v.sharp.items()
                    if s["value"] != s["printed"]]
            continue
        out.append(f"\n{v.claim}: {v.verdict}: {v.reason}")
        if v.counterexample:
            ce = {k: val for k, val in v.counterexample.items() if k not in ("reason",)}
            out.append("  counterexample: " + _short(ce))
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
    out.append("\n(--json prints every tier's evidence)")
    return "\n".join(out)


def _proof_line(gap: list[dict]) -> str:
    """The proof's status where it has a gap: the failing steps, and why."""
    first: dict[str, str] = {}
    for f in gap:  # one line per step: the first failure says why
        first.setdefault(f["step"], f["what"])
    steps = "; ".join(f"{step}: {what}" for step, what in first.items())
    return f"proof: gap at {steps} (the statement's verdict stands on its own)"


def _short(value, limit: int = 400) -> str:
    import json

    text = json.dumps(value, default=str)
    return text if len(text) <= limit else text[:limit] + " ..."
