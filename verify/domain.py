"""Where a mutant of a claim's formula is judged: the claim's domain (``Domain``, built by
``claim_domain`` from its hypotheses, definitions, stated ranges and exact values) and the
concrete sizes a formula is sampled at (``size_assignments``), with two small helpers
(``_is_matrix``, ``_one_line``) that the mutation operators (``verify.mutation_operators``) and
the judgements (``verify.equivalence``, ``verify.implication``) share: they all import this
module, which imports none of them."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import sympy
from sympy.matrices.expressions.matexpr import MatrixExpr

from .errors import UsageError
from .formulas import SIZE_NAMES, NamedFormula, parse_in, shape_value


@dataclass(frozen=True)
class Domain:
    """Where a claim's bounds are asserted: its hypotheses hold (formulas marked
    ``weaker="narrower"``) and a symbol the claim also defines as a formula (gatmiry2024's
    delta := (8 L d / sqrt(n))^(1/(2L))) takes that formula's value.  ``symbols`` are all the
    claim's declared scalars, drawn for a point before the definitions are applied."""

    symbols: tuple
    definitions: tuple          # (name, expression) in the declared symbols
    hypotheses: tuple           # conditions in the declared symbols
    words: str
    bounds: tuple = ()          # (name, expression, weaker) of the claim's scalar bounds
    hypothesis_names: tuple = ()  # the formula names of ``hypotheses``, in order
    exact: Any = None           # the claim's ExactValues, or None
    ranges: tuple = ()          # the claim's stated ranges of sizes (Claim.ranges), relations

    def defines(self, name: str) -> bool:
        return any(n == name for n, _ in self.definitions)

    @property
    def restricts(self) -> bool:
        """Whether it is narrower than every positive value (hypotheses or stated ranges): a
        claim with exact values and neither has a domain only for ``exact_truth``."""
        return bool(self.hypotheses or self.ranges)


def claim_domain(formulas, fixed: dict | None = None, exact=None,
                 ranges: tuple[str, ...] = ()) -> Domain | None:
    """The domain of a claim with hypotheses, stated ranges or exact values (None without: bounds
    then hold for every positive value); ``fixed`` holds corrected texts, which define the claim
    when it is corrected; ``exact`` is the claim's ExactValues (``exact_truth``); ``ranges`` are
    its Claim.ranges."""
    fixed = fixed or {}
    hyps = [f for f in formulas if f.weaker == "narrower"]
    if not hyps and not ranges and exact is None:
        return None
    symbols = {}
    for f in formulas:
        for s in f.symbols:
            if s.kind == "scalar":
                symbols.setdefault(s.name, s)
    local = {s.name: s.sympy() for s in symbols.values()}
    stated = tuple(parse_in(r, local, what=f"range {r!r}") for r in ranges)
    for r, rel in zip(ranges, stated):
        unknown = sorted({x.name for x in rel.free_symbols} - set(local))
        if unknown or not isinstance(rel, sympy.core.relational.Relational):
            raise UsageError(f"range {r!r} is not a condition in the claim's scalars"
                             + (f" (unknown: {', '.join(unknown)})" if unknown else ""))
    defs = tuple((f.name, f.parse(fixed.get(f.name))) for f in formulas
                 if f.name in symbols and f.shape is None and f.weaker is None)
    parsed = tuple(f.parse(fixed.get(f.name)) for f in hyps)
    bounds = tuple((f.name, f.parse(fixed.get(f.name)), f.weaker) for f in formulas
                   if f.weaker in ("larger", "smaller") and f.shape is None
                   and all(s.kind == "scalar" for s in f.symbols))
    stated_words = [*ranges, *(fixed.get(f.name, f.text) for f in hyps)]
    words = (("the claim's hypotheses hold (" + "; ".join(stated_words) + ")") if stated_words
             else "scalars positive, unit ones in (0, 1), sizes positive integers") \
        + "".join(f", {n} := {e}" for n, e in defs)
    return Domain(tuple(symbols.values()), defs, parsed, words, bounds,
                  tuple(f.name for f in hyps), exact, stated)


# three assignments of distinct small sizes, so that a swapped size (n for d) shows
_SIZE_PATTERNS = ((2, 3, 4, 5, 6, 7, 8, 9, 10), (3, 5, 2, 6, 4, 7, 9, 8, 10),
                  (4, 2, 5, 3, 7, 6, 8, 10, 9))


def size_assignments(formula: NamedFormula) -> list[dict]:
    """Concrete sizes for the size names the formula uses (as scalars or in shapes)."""
    used = {s.name for s in formula.symbols if s.kind == "scalar" and s.name in SIZE_NAMES}
    for s in formula.symbols:
        if s.kind == "matrix":
            used |= {x for x in s.shape if not x.isdigit()}
    used |= {x for x in (formula.shape or ()) if not x.isdigit()}
    names = {x for x in used if x.isidentifier()}
    compound = sorted(used - names)  # "d+1": computed from the sizes it names, not drawn
    for entry in compound:
        names |= {x for x in re.findall(r"[A-Za-z_]\w*", entry)}
    order = [n for n in SIZE_NAMES if n in names] + sorted(names - set(SIZE_NAMES))
    out = []
    for pattern in _SIZE_PATTERNS:
        sizes = dict(zip(order, pattern))
        sizes.update({entry: shape_value(entry, sizes) for entry in compound})
        out.append(sizes)
    return out


def _is_matrix(expr) -> bool:
    return isinstance(expr, (MatrixExpr, sympy.MatrixBase))


def _one_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[-1] if text else ''}"
