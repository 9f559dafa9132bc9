"""The claim registry: every claim declared in ``proofs_checks``, found by id or paper key."""
from __future__ import annotations

import difflib
import importlib
from functools import lru_cache

from proofs_checks import PAPER_MODULES

from .claim import Claim
from .definitions import Definitions
from .errors import UsageError


@lru_cache(maxsize=None)
def _paper_claims(paper: str) -> tuple[Claim, ...]:
    module = importlib.import_module(PAPER_MODULES[paper])
    claims = tuple(module.CLAIMS)
    for c in claims:
        if c.paper != paper:
            raise ValueError(f"{c.id} is declared in the module of {paper}")
    defs = definitions(paper)
    unknown = defs.claims_named() - {c.id for c in claims}
    problems = [p for c in claims for p in defs.problems(c)]
    problems += [f"{paper}: a local definition names {cid}, which is not a claim"
                 for cid in sorted(unknown)]
    if problems:  # a paper module that does not bind its symbols does not load
        raise ValueError("; ".join(problems[:5]) + (f" (and {len(problems) - 5} more)"
                                                     if len(problems) > 5 else ""))
    return claims


@lru_cache(maxsize=None)
def definitions(paper: str) -> Definitions:
    """The paper's definitions of its symbols (its module's ``DEFINITIONS``)."""
    if paper not in PAPER_MODULES:
        raise UsageError(f"unknown paper {paper!r}{_hint(paper, list(PAPER_MODULES))}")
    module = importlib.import_module(PAPER_MODULES[paper])
    return Definitions(paper, getattr(module, "DEFINITIONS", ()))


def papers() -> list[str]:
    return list(PAPER_MODULES)


def all_claims() -> list[Claim]:
    out: list[Claim] = []
    for paper in PAPER_MODULES:
        out.extend(_paper_claims(paper))
    return out


def by_paper(paper: str) -> list[Claim]:
    if paper not in PAPER_MODULES:
        hint = _hint(paper, list(PAPER_MODULES))
        raise UsageError(f"unknown paper {paper!r}{hint} (papers: {', '.join(PAPER_MODULES)})")
    return list(_paper_claims(paper))


def find(claim_id: str) -> Claim:
    paper = claim_id.split(".", 1)[0]
    if paper in PAPER_MODULES:
        for c in _paper_claims(paper):
            if c.id == claim_id:
                return c
    ids = [c.id for c in all_claims()]
    raise UsageError(f"unknown claim {claim_id!r}{_hint(claim_id, ids)}; "
                     f"'icl-verify list' shows the {len(ids)} claims")


def _hint(word: str, options: list[str]) -> str:
    close = difflib.get_close_matches(word, options, n=1)
    return f" (did you mean {close[0]}?)" if close else ""
