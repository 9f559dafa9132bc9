"""The claim registry: every claim of every paper plugin, found by id or paper key.

A paper is a plugin: an entry point of the group ``icl_verify.papers`` whose name is the paper
key (the prefix of its claim ids) and whose value is a module that defines ``CLAIMS`` and
``DEFINITIONS`` (setup.cfg registers the four built-in papers the same way).  Where the
distribution is not installed (a checkout run with ``PYTHONPATH=.``) and the group is empty,
the built-in papers are found by their module names, ``BUILT_IN``.

A plugin that does not import, has no ``CLAIMS``, or whose claims are not bound to its
definitions is broken: naming it gives one line that says why (exit 2); listing every paper
skips it and says so once on stderr; the other papers load as usual.
"""
from __future__ import annotations

import difflib
import importlib
import sys
from functools import lru_cache
from importlib.metadata import entry_points

from .claim import Claim
from .definitions import Definitions
from .errors import UsageError

GROUP = "icl_verify.papers"
BUILT_IN = {
    "ahn2023": "proofs_checks.ahn2023",
    "gatmiry2024": "proofs_checks.gatmiry2024",
    "xie2025": "proofs_checks.xie2025",
    "yang2024": "proofs_checks.yang2024",
}


@lru_cache(maxsize=None)
def paper_modules() -> dict[str, str]:
    """{paper key: module name} of every registered paper plugin, built-in papers first."""
    found = {ep.name: ep.value for ep in entry_points(group=GROUP)}
    if not found:
        found = dict(BUILT_IN)
    ordered = {k: found[k] for k in BUILT_IN if k in found}
    ordered.update({k: v for k, v in sorted(found.items()) if k not in ordered})
    return ordered


@lru_cache(maxsize=None)
def _module(paper: str):
    name = paper_modules()[paper]
    try:
        module = importlib.import_module(name.split(":", 1)[0])
    except Exception as exc:  # noqa: BLE001 - any failure of a plugin's import is its breakage
        raise UsageError(f"paper plugin {paper!r} ({name}) does not import: "
                         f"{type(exc).__name__}: {_first_line(exc)}") from None
    if not hasattr(module, "CLAIMS"):
        raise UsageError(f"paper plugin {paper!r} ({name}) defines no CLAIMS")
    return module


@lru_cache(maxsize=None)
def _paper_claims(paper: str) -> tuple[Claim, ...]:
    module = _module(paper)
    try:
        claims = tuple(module.CLAIMS)
        for c in claims:
            if not isinstance(c, Claim):
                raise ValueError(f"CLAIMS holds {type(c).__name__}, not a Claim")
            if c.paper != paper:
                raise ValueError(f"{c.id} is declared in the module of {paper}")
        defs = definitions(paper)
        problems = [p for c in claims for p in defs.problems(c)]
        problems += [f"{paper}: a local definition names {cid}, which is not a claim"
                     for cid in sorted(defs.claims_named() - {c.id for c in claims})]
        if problems:  # a paper that does not bind its symbols does not load
            raise ValueError("; ".join(problems[:5]) + (f" (and {len(problems) - 5} more)"
                                                         if len(problems) > 5 else ""))
    except (ValueError, TypeError) as exc:
        raise UsageError(f"paper plugin {paper!r} ({paper_modules()[paper]}) is broken: "
                         f"{exc}") from None
    return claims


@lru_cache(maxsize=None)
def definitions(paper: str) -> Definitions:
    """The paper's definitions of its symbols (its module's ``DEFINITIONS``)."""
    if paper not in paper_modules():
        raise UsageError(f"unknown paper {paper!r}{_hint(paper, papers())}")
    try:
        return Definitions(paper, getattr(_module(paper), "DEFINITIONS", ()))
    except ValueError as exc:
        raise UsageError(f"paper plugin {paper!r} has malformed DEFINITIONS: {exc}") from None


def papers() -> list[str]:
    return list(paper_modules())


def all_claims() -> list[Claim]:
    """Every claim of every paper that loads; a broken plugin is skipped, said once."""
    out: list[Claim] = []
    for paper in paper_modules():
        try:
            out.extend(_paper_claims(paper))
        except UsageError as exc:
            _skipped(str(exc))
    return out


@lru_cache(maxsize=None)
def _skipped(message: str) -> None:
    print(f"icl-verify: skipping {message}", file=sys.stderr)


def by_paper(paper: str) -> list[Claim]:
    if paper not in paper_modules():
        raise UsageError(f"unknown paper {paper!r}{_hint(paper, papers())} "
                         f"(papers: {', '.join(papers())})")
    return list(_paper_claims(paper))


def find(claim_id: str) -> Claim:
    paper = claim_id.split(".", 1)[0]
    if paper in paper_modules():
        for c in _paper_claims(paper):
            if c.id == claim_id:
                return c
    ids = [c.id for c in all_claims()]
    raise UsageError(f"unknown claim {claim_id!r}{_hint(claim_id, ids)}; "
                     f"'icl-verify list' shows the {len(ids)} claims")


def reference(paper: str) -> str:
    """The paper's reference: the first paragraph of its module's docstring."""
    try:
        doc = _module(paper).__doc__ or ""
    except (KeyError, UsageError):
        return paper
    first = " ".join(doc.strip().split("\n\n", 1)[0].split())
    return first[len(paper) + 1:].strip() if first.startswith(paper + ":") else first


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


def _hint(word: str, options: list[str]) -> str:
    close = difflib.get_close_matches(word, options, n=1)
    return f" (did you mean {close[0]}?)" if close else ""
