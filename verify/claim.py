"""Claims as data: a paper's statement, its named formulas, and its checks per tier."""
from __future__ import annotations

import re
from collections.abc import Mapping as MappingABC
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping

import numpy as np
import sympy

from .definitions import Reading
from .errors import UsageError
from .formulas import NamedFormula

TIERS = ("symbolic", "numeric", "train")
STATUSES = ("pass", "fail", "skipped", "error")
SUPPORTS = ("checked", "search", "stand-in")
ID_PATTERN = re.compile(r"^[a-z]+[0-9]{4}\.(thm|lemma|prop|cor|eq|fig)[a-z0-9_]+$")


@dataclass(frozen=True)
class Budget:
    """How much work each tier may do: ``quick`` (CI, seconds), ``default``, ``paper`` (GPU)."""

    name: str
    mc_samples: int
    train_scale: float
    restarts: int


BUDGETS = {
    "quick": Budget("quick", mc_samples=40_000, train_scale=0.25, restarts=6),
    "default": Budget("default", mc_samples=200_000, train_scale=1.0, restarts=10),
    "paper": Budget("paper", mc_samples=1_000_000, train_scale=4.0, restarts=20),
}


@dataclass
class TierResult:
    """What one tier decided, and the numbers it decided on."""

    status: str
    evidence: dict = field(default_factory=dict)
    counterexample: dict | None = None
    reason: str = ""
    seconds: float = 0.0
    steps: list = field(default_factory=list)  # the derivation, as Step dicts (reports typeset it)
    # the named formulas the tier read (the runner records them; None: not run by the runner)
    reads: tuple[str, ...] | None = None
    # "search": every comparison that passed was a search that found no counterexample without
    # being exhaustive or certified (an optimiser's best ratio), not a check of the statement;
    # "stand-in": every comparison that passed was made at a smaller model than the paper's
    support: str = "checked"
    # the proof findings the tier made (step, finding, ok, what): they never decide its status
    proof: list = field(default_factory=list)
    # a failure that rests only on tests of Monte Carlo samples (``Finding.sampled``): it
    # refutes only if an independent redraw rejects too (``verify.runner``)
    sampled: bool = False

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown tier status {self.status!r}")
        if self.support not in SUPPORTS:
            raise ValueError(f"unknown tier support {self.support!r}")

    def as_dict(self) -> dict:
        out = {"status": self.status, "evidence": self.evidence, "seconds": round(self.seconds, 3)}
        if self.reads is not None:
            out["reads"] = list(self.reads)
        if self.support != "checked":
            out["support"] = self.support
        if self.proof:
            out["proof"] = list(self.proof)
        if self.reason:
            out["reason"] = self.reason
        if self.counterexample is not None:
            out["counterexample"] = self.counterexample
        if self.steps:
            out["derivation"] = self.steps
        return out


class FormulaReads(MappingABC):
    """A tier's view of the formulas that records which it reads (``read``): a formula a tier
    never looks up cannot be supported by it (the runner decides from ``read``).  Looking a name
    up (``F[name]``, ``F.get(name)``, ``items()``) reads it; ``in`` and iterating names do not."""

    def __init__(self, formulas: Mapping[str, Any]) -> None:
        self._formulas = dict(formulas)
        self.read: set[str] = set()

    def __getitem__(self, name: str) -> Any:
        value = self._formulas[name]
        self.read.add(name)
        return value

    def __contains__(self, name: object) -> bool:
        return name in self._formulas

    def __iter__(self) -> Iterator[str]:
        return iter(self._formulas)

    def __len__(self) -> int:
        return len(self._formulas)

    def __repr__(self) -> str:
        return f"FormulaReads({sorted(self._formulas)}, read={sorted(self.read)})"


@dataclass(frozen=True)
class Context:
    """Everything a check may read: the formulas to check, sizes, budget, device and seed."""

    claim_id: str
    formulas: Mapping[str, sympy.Basic]
    formula_texts: Mapping[str, str]
    budget: Budget
    device: str = "auto"
    seed: int = 0
    sizes: Mapping[str, int] = field(default_factory=dict)
    sigma: Any = None
    progress: bool = False
    # 0: the first Monte Carlo sample; k > 0: the k-th independent redraw of every sample drawn
    # through ``mc_seed``/``mc_rng`` (the runner redraws before a rejection refutes)
    replicate: int = 0
    # records the Monte Carlo streams the tier drew (the runner's; None outside it)
    samples: "SampleLog | None" = None

    def rng(self, *tags: int | str) -> np.random.Generator:
        """A numpy generator determined by the seed and the tags (stable across runs)."""
        words = [self.seed] + [_tag(t) for t in tags]
        return np.random.default_rng(words)

    def seed_for(self, *tags: int | str) -> int:
        return int(self.rng(*tags).integers(0, 2**31 - 1))

    def mc_rng(self, *tags: int | str) -> np.random.Generator:
        """The generator of a Monte Carlo sample: ``rng(*tags)`` in the first sample, an
        independent stream in each replicate.  A test whose failure rests on such a sample
        (``Finding.sampled``) refutes only if a redraw rejects too (``verify.runner``)."""
        return self.rng(*self._sample_tags(tags))

    def mc_seed(self, *tags: int | str) -> int:
        """The seed of a Monte Carlo sample (``seed_for(*tags)`` in the first sample; see
        ``mc_rng``)."""
        return self.seed_for(*self._sample_tags(tags))

    def _sample_tags(self, tags: tuple) -> tuple:
        if self.samples is not None:
            self.samples.drew(tags)
        return tags if self.replicate == 0 else ("replicate", self.replicate, *tags)


class SampleLog:
    """The Monte Carlo streams a tier drew through ``Context.mc_seed``/``mc_rng``: a failure
    of a sampled test can be redrawn only where its sample came from one of them."""

    def __init__(self) -> None:
        self.streams: list[str] = []

    def drew(self, tags: tuple) -> None:
        name = "/".join(str(t) for t in tags)
        if name not in self.streams:
            self.streams.append(name)


def _tag(t: int | str) -> int:
    if isinstance(t, int):
        return t
    return int.from_bytes(t.encode()[:8].ljust(8, b"\0"), "little")


Check = Callable[[Context], TierResult]


@dataclass(frozen=True)
class Correction:
    """A documented minimal correction: formulas replaced, and why."""

    description: str
    reason: str
    formulas: Mapping[str, str]
    # readings of printed symbols other than the paper's definitions (verify/definitions.py):
    # a check may use one only through the correction, which reports it
    readings: tuple[Reading, ...] = ()


@dataclass(frozen=True)
class ExactValues:
    """What a claim's scalar bounds bound, computed from its derivation (a whole claim's
    ``NamedFormula.sharp``): ``values(point)`` takes a point of the claim's domain (its declared
    scalars by name, as mpmath numbers, definitions applied) and returns {bound formula name:
    the exact bounded quantity there, worst case over what the point leaves free}, or None where
    it cannot compute them (``words`` says where it can).  Where the worst case is not computable
    a value may be a pair (attained, enclosure): a value the quantity attains at the point and
    a sound bound on its worst case (Lemma 4.3's beta^(j)).  ``icl-verify mutate`` evaluates a
    mutated claim with it: a survivor true at every point drawn is a true statement; one false at
    a point is a survivor whose refutation a check misses, and the point says where.

    ``definition(name, mutant)`` covers a mutated matrix definition the scalar point does not
    see (gatmiry2024's Sigma^out := X X^T / n): the ExactValues of the claim so redefined, or
    (kind, why) decided from the mutant's form ("true" for a definition no instance meets), or
    None where it cannot say."""

    values: Callable[[dict], "dict | None"] = field(compare=False, repr=False)
    words: str
    definition: "Callable[[str, sympy.Basic], ExactValues | tuple[str, str] | None] | None" = \
        field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Claim:
    """One checkable statement of a paper."""

    id: str
    title: str
    paper: str
    statement: str
    assumptions: tuple[str, ...]
    formulas: tuple[NamedFormula, ...]
    checks: Mapping[str, Check]
    setting: Any = None
    correction: Correction | None = None
    notes: str = ""
    exact: ExactValues | None = None  # for mutate: see ExactValues
    # conditions on the sizes under which the paper states the claim (Lemma 4.2's 1 <= k <= 2L):
    # part of its domain, never mutated
    ranges: tuple[str, ...] = ()
    # relations between sizes the claim's assumptions need (yang2024's H >= N, Assumption 2)
    # that its formulas do not name: the engine refuses --size outside them (and outside the
    # ``ranges`` in sizes) before any work, since a theorem is not refuted outside its hypothesis
    size_ranges: tuple[str, ...] = ()
    # closed forms the claim's derivation writes back in the paper's notation, {formula: text}
    # (gatmiry2024's losses from the forward pass's bilinear error): what a correction falls
    # back to where no single change to the printed formula is proved (verify/corrections.py)
    derive: Callable[[], dict[str, str]] | None = field(default=None, compare=False, repr=False)
    # where the conclusion of a bound says something (verify.vacuity.Vacuity): a finding about
    # usefulness beside the verdict
    vacuity: Any = None

    def __post_init__(self) -> None:
        if not ID_PATTERN.match(self.id) or not self.id.startswith(self.paper + "."):
            raise ValueError(f"claim id {self.id!r} does not follow <paper>.<kind><number>")
        unknown = set(self.checks) - set(TIERS)
        if unknown:
            raise ValueError(f"claim {self.id}: unknown tiers {sorted(unknown)}")
        names = [f.name for f in self.formulas]
        if len(set(names)) != len(names):
            raise ValueError(f"claim {self.id}: duplicate formula names")

    @property
    def tiers(self) -> tuple[str, ...]:
        return tuple(t for t in TIERS if t in self.checks)

    def formula(self, name: str) -> NamedFormula:
        for f in self.formulas:
            if f.name == name:
                return f
        known = ", ".join(f.name for f in self.formulas) or "none"
        raise UsageError(f"claim {self.id} has no formula {name!r} (formulas: {known})")

    def parsed_formulas(self, overrides: Mapping[str, str] | None = None) -> tuple[dict, dict]:
        """Parsed formulas and their texts, with ``overrides`` (name -> text) applied."""
        overrides = dict(overrides or {})
        for name in overrides:
            self.formula(name)
        exprs, texts = {}, {}
        for f in self.formulas:
            text = overrides.get(f.name, f.text)
            exprs[f.name] = f.parse(text)
            texts[f.name] = text
        return exprs, texts

    def summary(self) -> dict:
        return {"id": self.id, "title": self.title, "paper": self.paper, "tiers": list(self.tiers)}

    def describe(self) -> dict:
        out = self.summary()
        out.update({
            "statement": self.statement,
            "assumptions": list(self.assumptions),
            "formulas": [f.as_dict() for f in self.formulas],
            "correction": None if self.correction is None else {
                "description": self.correction.description,
                "reason": self.correction.reason,
                "formulas": dict(self.correction.formulas),
            },
            "notes": self.notes,
        })
        return out
