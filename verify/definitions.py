"""The paper's own definitions of its symbols, declared once per paper, and readings.

Every symbol a claim's formulas use is bound to the paper's definition of it (``Definition``:
what the symbol is, and the equation or section where the paper defines it).  A paper module
declares them in ``DEFINITIONS`` next to ``CLAIMS``; the registry binds every claim to them when
it loads the paper and refuses a claim that uses a symbol the paper does not define, or that
describes a symbol otherwise than the paper does.

Where a paper uses one symbol for two things (gatmiry2024 writes Sigma for the empirical
covariance, Lemma 4.1, and in Lemma A.3's outer factors for what must be Sigma*), a check may
not choose the other reading for the printed statement: an alternative reading is a ``Reading``
and lives only in a claim's ``Correction``, so it is reported as a correction, with the paper's
definition and the reading side by side.

A paper may redefine a symbol locally (an appendix's own w): a ``Definition`` with ``claims``
applies to those claims only, in place of the paper-wide one.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:  # pragma: no cover
    from .claim import Claim


@dataclass(frozen=True)
class Definition:
    """How the paper defines ``name`` (the symbol's name in formulas), and where."""

    name: str
    meaning: str
    equation: str  # where the paper defines it: "Lemma 4.1", "Sec. 2, eq. (3)"
    # claim ids where this local definition applies instead of the paper-wide one; () = paper-wide
    claims: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.name or not self.meaning.strip() or not self.equation.strip():
            raise ValueError(f"definition of {self.name!r}: name, meaning and equation are "
                             f"required")

    def as_dict(self) -> dict:
        out = {"symbol": self.name, "meaning": self.meaning, "defined_in": self.equation}
        if self.claims:
            out["claims"] = list(self.claims)
        return out

    def line(self) -> str:
        return f"{self.name}: {self.meaning} ({self.equation})"


@dataclass(frozen=True)
class Reading:
    """A reading of the printed symbol ``symbol`` as the paper's ``read_as`` (another defined
    symbol) at ``where``: not the paper's definition, so only ever part of a correction."""

    symbol: str
    read_as: str
    where: str
    why: str

    def __post_init__(self) -> None:
        if self.symbol == self.read_as:
            raise ValueError(f"reading of {self.symbol!r} as itself is the paper's definition")
        if not self.where.strip() or not self.why.strip():
            raise ValueError(f"reading of {self.symbol!r}: where and why are required")


class Definitions:
    """One paper's definitions: at most one paper-wide definition per symbol, and local ones
    whose claim sets do not overlap."""

    def __init__(self, paper: str, definitions: Iterable[Definition]) -> None:
        self.paper = paper
        self._wide: dict[str, Definition] = {}
        self._local: dict[tuple[str, str], Definition] = {}
        for d in definitions:
            if not d.claims:
                if d.name in self._wide:
                    raise ValueError(f"{paper}: {d.name!r} is defined twice paper-wide")
                self._wide[d.name] = d
            for cid in d.claims:
                if not cid.startswith(paper + "."):
                    raise ValueError(f"{paper}: local definition of {d.name!r} names {cid}")
                if (d.name, cid) in self._local:
                    raise ValueError(f"{paper}: {d.name!r} is defined twice for {cid}")
                self._local[(d.name, cid)] = d

    def for_claim(self, name: str, claim_id: str) -> Definition | None:
        """The definition of ``name`` that applies in ``claim_id`` (None: the paper has none)."""
        return self._local.get((name, claim_id), self._wide.get(name))

    def all(self) -> list[Definition]:
        """Each definition once (a local one is stored per claim it names)."""
        unique = {id(d): d for d in (*self._wide.values(), *self._local.values())}
        return sorted(unique.values(), key=lambda d: (d.name, d.claims))

    def claims_named(self) -> set[str]:
        return {cid for _, cid in self._local}

    def problems(self, claim: "Claim") -> list[str]:
        """Why ``claim`` is not bound to the paper's definitions ([] when it is): a formula
        symbol the paper does not define, a symbol described otherwise than the paper defines
        it, or a correction's reading of an undefined symbol."""
        out = []
        for f in claim.formulas:
            for s in f.symbols:
                d = self.for_claim(s.name, claim.id)
                if d is None:
                    out.append(f"{claim.id}: formula {f.name!r} uses {s.name!r}, which the "
                               f"paper's definitions ({self.paper}.DEFINITIONS) do not define")
                elif s.description and s.description != d.meaning:
                    out.append(f"{claim.id}: symbol {s.name!r} is described as "
                               f"{s.description!r}; the paper defines it as {d.meaning!r} "
                               f"({d.equation}): another reading is only ever a correction "
                               f"(Correction.readings)")
        readings = claim.correction.readings if claim.correction is not None else ()
        for r in readings:
            for name in (r.symbol, r.read_as):
                if self.for_claim(name, claim.id) is None:
                    out.append(f"{claim.id}: the correction reads {r.symbol!r} as "
                               f"{r.read_as!r}; {name!r} is not defined by the paper")
        return out

    def reading_view(self, reading: Reading, claim_id: str) -> dict:
        """A reading with both definitions spelled out (the verdict's correction carries it)."""
        paper, read_as = (self.for_claim(reading.symbol, claim_id),
                          self.for_claim(reading.read_as, claim_id))
        return {"symbol": reading.symbol,
                "paper_definition": paper.line() if paper else reading.symbol,
                "read_as": read_as.line() if read_as else reading.read_as,
                "where": reading.where, "why": reading.why}

    def symbols_of(self, claim: "Claim") -> list[Definition]:
        """The definitions of the symbols ``claim``'s formulas use, in first-use order."""
        out, seen = [], set()
        for f in claim.formulas:
            for s in f.symbols:
                d = self.for_claim(s.name, claim.id)
                if d is not None and s.name not in seen:
                    seen.add(s.name)
                    out.append(d)
        return out
