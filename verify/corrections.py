"""Corrections the engine derives: the smallest change to a printed formula that its derivation
proves right.

A false formula's mutation neighbourhood (``mutants.generate``: one changed constant, one
swapped symbol, one dropped term, one sign, one transpose) is searched for the candidates the
claim's symbolic tier (the derivation from the forward pass and the data law) passes; the first,
in the order the neighbourhood lists them, is the minimal correction of that formula; where the
neighbourhood holds none, the closed form the claim's derivation writes (``Claim.derive``) is
tried.  Where a
claim has several wrong formulas, each is searched with the others at the derived value already
found, or else at the documented correction only while its own candidate is tried; the
correction returned is then checked on its own (every formula as derived), so no documented
text supports a derived verdict.  The search is too slow for every ``check`` (tens of symbolic
runs per formula), so ``scripts/derive_corrections.py`` writes what it finds to the paper's
``derived_corrections.json`` (beside its module, ``derived_file``: a paper plugin ships its own)
with the printed texts it started from; ``check`` takes an entry only while those texts are the
claim's own, and checks it in every tier like a ``--set``.  A formula with no correction in its
neighbourhood keeps its documented one (``source: documented``).
"""
from __future__ import annotations

import json
from functools import lru_cache
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .claim import Claim
from .errors import UsageError

DERIVED_NAME = "derived_corrections.json"


@lru_cache(maxsize=None)
def derived_file(paper: str) -> Path:
    """The paper's derived corrections: ``derived_corrections.json`` in its package's folder."""
    import importlib.util

    from .registry import paper_modules

    spec = importlib.util.find_spec(paper_modules()[paper].split(":", 1)[0])
    if spec is None or spec.origin is None:
        raise UsageError(f"paper {paper!r}: its module has no folder for {DERIVED_NAME}")
    return Path(spec.origin).resolve().parent / DERIVED_NAME


@dataclass(frozen=True)
class Derived:
    """A correction the engine found: {formula: text}, and per formula the one change made."""

    claim: str
    printed: dict[str, str]
    formulas: dict[str, str]
    changes: dict[str, str]
    tried: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"printed": self.printed, "formulas": self.formulas, "changes": self.changes,
                "tried": self.tried}

    def description(self) -> str:
        return "; ".join(f"{name}: {change}" for name, change in self.changes.items())


def _passes(claim: Claim, overrides: dict[str, str], budget: str, seed: int) -> bool:
    """The symbolic tier (the derivation) supports ``overrides``: a pass that read them."""
    from .runner import check_claim

    v = check_claim(claim, tiers=("symbolic",), budget=budget, device="cpu", seed=seed,
                    overrides=overrides)
    return v.verdict == "verified"


def search(claim: Claim, budget: str = "quick", seed: int = 0,
           passes: Callable[[Claim, dict, str, int], bool] = _passes) -> Derived | None:
    """The minimal correction of the formulas the claim's documented correction replaces, or
    None where a formula's neighbourhood holds none (or the claim has no symbolic tier)."""
    from .mutants import generate

    if claim.correction is None or "symbolic" not in claim.checks:
        return None
    names = list(claim.correction.formulas)
    # values only: a bound (``weaker``) or a hypothesis has a documented correction (the issue:
    # no closed form is derived for bounds, conditions, step sizes)
    if any(claim.formula(n).weaker is not None or claim.formula(n).expects == "condition"
           for n in names):
        return None
    if passes(claim, {}, budget, seed):  # the derivation does not refute the printed formulas
        return None
    found: dict[str, str] = {}
    changes: dict[str, str] = {}
    tried: dict[str, int] = {}
    for name in names:
        others = {n: found.get(n, claim.correction.formulas[n]) for n in names if n != name}
        mutants, _ = generate(claim.formula(name), extra=("factors", "signs"))
        tried[name] = 0
        for change, text in [(f"{m.change} ({m.operator})", m.text) for m in mutants] + \
                _borrowed_terms(claim, name):
            tried[name] += 1
            try:
                ok = passes(claim, {**others, name: text}, budget, seed)
            except UsageError:  # an ill-typed candidate
                continue
            if ok:
                found[name], changes[name] = text, change
                break
        else:  # no single change: the closed form the claim's derivation writes, if any
            closed = (claim.derive() if claim.derive is not None else {}).get(name)
            if closed is None or not passes(claim, {**others, name: closed}, budget, seed):
                return None
            found[name] = closed
            changes[name] = "no single change is proved; the closed form the derivation gives"
    if not passes(claim, found, budget, seed):  # on its own, no documented text beside it
        return None
    printed = {n: claim.formula(n).text for n in names}
    return Derived(claim.id, printed, found, changes, tried)


@dataclass(frozen=True)
class Chosen:
    """The correction a refuted claim is checked with: derived where the engine found one,
    else the documented one."""

    source: str  # "derived" | "documented"
    formulas: dict[str, str]
    description: str
    reason: str
    changes: dict[str, str] = field(default_factory=dict)

    def as_json(self, claim: Claim, checked: dict[str, str]) -> dict:
        """The ``correction`` object of a verdict: texts for --set, LaTeX, and what passed."""
        from .latex import sympy_latex

        latex = {}
        for name, text in self.formulas.items():
            try:
                latex[name] = str(sympy_latex(claim.formula(name).parse(text)))
            except Exception:  # noqa: BLE001 - a text that does not typeset keeps its text
                latex[name] = ""
        out = {"source": self.source, "formulas": dict(self.formulas), "latex": latex,
               "changes": dict(self.changes), "description": self.description,
               "reason": self.reason, "checked": dict(checked)}
        readings = readings_of(claim)
        if readings:
            out["readings"] = readings
        return out

    def line(self) -> str:
        """One line for the terminal."""
        texts = "; ".join(f"{n} = {t}" for n, t in self.formulas.items())
        return f"[{self.source}] {self.description}: {texts}"


def readings_of(claim: Claim) -> list[dict]:
    """The readings of printed symbols the claim's correction makes, each with the paper's
    definition and the symbol it is read as (verify/definitions.py)."""
    if claim.correction is None or not claim.correction.readings:
        return []
    from .registry import definitions

    defs = definitions(claim.paper)
    return [defs.reading_view(r, claim.id) for r in claim.correction.readings]


def chosen(claim: Claim, table: dict[str, dict] | None = None) -> Chosen | None:
    """The correction to check for a refuted claim (None: it has none)."""
    if claim.correction is None:
        return None
    c = claim.correction
    found = derived_for(claim, table)
    if found is None:
        return Chosen("documented", dict(c.formulas), c.description, c.reason)
    closed = all(change.startswith("no single change") for change in found.changes.values())
    what = ("the closed form the claim's derivation writes in the paper's notation (no single "
            "change to the printed formula is proved)" if closed else
            f"the smallest change to the printed formula that the derivation proves: "
            f"{found.description()}")
    return Chosen("derived", dict(found.formulas), what, f"documented: {c.description}",
                  dict(found.changes))


def _borrowed_terms(claim: Claim, name: str) -> list[tuple[str, str]]:
    """The printed formula plus one term of another formula of the claim (a term the paper
    keeps in a sibling formula and drops in this one, e.g. m tau)."""
    import sympy

    from .formulas import formula_str

    own = claim.formula(name)
    base = own.parse()
    out, seen = [], set()
    for other in claim.formulas:
        if other.name == name:
            continue
        try:
            expr = other.parse()
        except UsageError:
            continue
        terms = expr.args if isinstance(expr, (sympy.Add, sympy.MatAdd)) else (expr,)
        for term in terms:
            text = formula_str(term)
            if text in seen:
                continue
            seen.add(text)
            out.append((f"add {text} (from {other.name})", f"{own.text} + ({text})"))
    return out


def load(path: Path) -> dict[str, dict]:
    """The derived corrections on file ({} when there is no file), read once per version of
    the file (every refuted claim consults it)."""
    try:
        return _read(path, path.stat().st_mtime_ns)
    except FileNotFoundError:
        return {}


@lru_cache(maxsize=4)
def _read(path: Path, version: int) -> dict[str, dict]:
    return json.loads(path.read_text())


def derived_for(claim: Claim, table: dict[str, dict] | None = None) -> Derived | None:
    """The derived correction on file for ``claim``, if it was derived from the texts the claim
    prints now (a changed formula invalidates the entry)."""
    entry = (load(derived_file(claim.paper)) if table is None else table).get(claim.id)
    if not entry:
        return None
    try:
        if any(claim.formula(n).text != text for n, text in entry["printed"].items()):
            return None
    except KeyError:
        return None
    return Derived(claim.id, dict(entry["printed"]), dict(entry["formulas"]),
                   dict(entry["changes"]), dict(entry.get("tried", {})))


def load_all(papers) -> dict[str, dict]:
    """The derived corrections of every paper in ``papers``, one table."""
    table: dict[str, dict] = {}
    for paper in papers:
        table.update(load(derived_file(paper)))
    return table


def write(entries: dict[str, Derived]) -> None:
    """Add ``entries`` to their papers' files (each claim to its own paper's)."""
    by_paper: dict[str, dict[str, Derived]] = {}
    for cid, d in entries.items():
        by_paper.setdefault(cid.split(".", 1)[0], {})[cid] = d
    for paper, found in by_paper.items():
        path = derived_file(paper)
        table = dict(load(path))
        table.update({cid: d.as_dict() for cid, d in found.items()})
        path.write_text(json.dumps(dict(sorted(table.items())), indent=1) + "\n")
