"""Mutants of a claim's named formulas and their judgement, the public names in one place:

- ``verify.mutation_operators``: ``OPERATORS``, ``CORRECTION_OPERATORS``, ``Mutant``,
  ``Invalid`` and ``generate`` (the mutation neighbourhood of a formula);
- ``verify.equivalence``: ``EQUIVALENCE_KINDS``, ``Equivalence``, ``equivalence`` and
  ``judged_by_exact`` (is a mutant the same statement, implied, true by the exact values);
- ``verify.domain``: ``Domain``, ``claim_domain`` and ``size_assignments`` (where they are
  judged).

``verify.implication`` (with ``verify.implication_proofs``) decides implication and exact truth.
The modules import one way: domain <- mutation_operators; domain <- implication_proofs <-
implication <- equivalence.
"""
from .domain import Domain, claim_domain, size_assignments
from .equivalence import EQUIVALENCE_KINDS, Equivalence, equivalence, judged_by_exact
from .mutation_operators import CORRECTION_OPERATORS, OPERATORS, Invalid, Mutant, generate

__all__ = ["CORRECTION_OPERATORS", "EQUIVALENCE_KINDS", "OPERATORS", "Domain", "Equivalence",
           "Invalid", "Mutant", "claim_domain", "equivalence", "generate", "judged_by_exact",
           "size_assignments"]
