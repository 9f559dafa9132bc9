"""Exact expectations of Gaussian polynomial expressions (Isserlis/Wick with means).

``expectation(m)`` takes a :class:`~moments.tensor.Mat` whose random letters carry Gaussian laws
and returns the exact :class:`~moments.poly.Poly`, symbolic in the sizes of the index spaces.

For each term, the occurrences of every random letter are paired in all ways (Isserlis); a vector
occurrence may also be replaced by the mean.  Pairing x_a with x_b inserts Cov_ab (or identifies
a and b when the covariance is the identity); pairing data-matrix entries X_ai, X_bj inserts
Sigma_ab and identifies the sample indices i and j.  Each closed loop of identified indices then
contributes the size of its space, so sums over samples give powers of n without ever expanding
n, e.g. E[X X^T A X X^T] = n^2 Sigma A Sigma + n Sigma A^T Sigma + n tr(A Sigma) Sigma.

``expectation`` is the memoised recursion of ``isserlis.py`` (one Isserlis step at a time on
canonical trace-word states); ``expectation_enumerated`` enumerates every outcome of every term
and is kept as the reference the tests compare with.  Pure Wishart moments E[W^m p_lam(W)] of any
order are in ``wishart.py``.
"""
from __future__ import annotations

import itertools
from typing import Iterator

import sympy

from .letters import GaussianMatrixLaw, GaussianVectorLaw, Letter
from .poly import Poly
from .tensor import Mat, Term
from .words import contract_network


def _pairings(items: list, law, start_node: int) -> Iterator[tuple[list, list, int]]:
    """All Isserlis outcomes for the occurrences ``items`` of one random letter.

    Yields ``(new_atoms, unions, next_free_node)``.  New atoms are covariance or mean letters; a
    covariance that is the identity becomes a union of the two feature nodes instead.
    """
    if not items:
        yield [], [], start_node
        return
    first, rest = items[0], items[1:]
    if isinstance(law, GaussianVectorLaw) and law.mean is not None:
        mean_atom = (law.mean.name, (first[1][0],))
        for atoms, unions, nxt in _pairings(rest, law, start_node):
            yield [mean_atom] + atoms, unions, nxt
    for j in range(len(rest)):
        other = rest[j]
        remaining = rest[:j] + rest[j + 1:]
        a, b = first[1][0], other[1][0]
        if isinstance(law, GaussianVectorLaw):
            cov = law.cov
            unions_here = []
        else:  # data matrix: identify the sample indices
            cov = law.row_cov
            unions_here = [(first[1][1], other[1][1])]
        if cov is None:
            atoms_here = []
            unions_here = unions_here + [(a, b)]
        else:
            atoms_here = [(cov.name, (a, b))]
        for atoms, unions, nxt in _pairings(remaining, law, start_node):
            yield atoms_here + atoms, unions_here + unions, nxt


def _term_outcomes(term: Term, letters: dict) -> Iterator[tuple[list, list]]:
    fixed, groups = [], {}
    for atom in term.atoms:
        letter = letters[atom[0]]
        if letter.is_random:
            groups.setdefault(atom[0], []).append(atom)
        else:
            fixed.append(atom)
    per_letter = []
    for name, items in groups.items():
        law = letters[name].law
        if isinstance(law, GaussianMatrixLaw) and len(items) % 2:
            return
        if isinstance(law, GaussianVectorLaw) and law.mean is None and len(items) % 2:
            return
        per_letter.append([(a, u) for a, u, _ in _pairings(items, law, 0)])
    for combo in itertools.product(*per_letter):
        atoms = list(fixed)
        unions: list = []
        for a, u in combo:
            atoms.extend(a)
            unions.extend(u)
        yield atoms, unions


def expectation_enumerated(m: Mat) -> Poly:
    """E[m] by enumerating every Isserlis outcome of every term (the reference implementation;
    exponential in the number of random occurrences, kept to cross-check ``expectation``)."""
    letters = dict(m.letters)
    fixed_letters = {k: v for k, v in letters.items() if not v.is_random}
    terms: dict = {}
    for term in m.terms:
        for atoms, unions in _term_outcomes(term, letters):
            factor, key = contract_network(atoms, unions, term.ntypes, term.row, term.col, letters)
            terms[key] = terms.get(key, 0) + term.coeff * factor
    return Poly(terms, fixed_letters, m.rows, m.cols)


def canonical(m: Mat) -> Poly:
    """The canonical polynomial of ``m`` itself, random letters kept as letters (no expectation).

    Two expressions are identical polynomials in the letters' entries iff their canonical
    polynomials are equal, which is how algebraic identities between forward passes are checked.
    """
    terms: dict = {}
    for term in m.terms:
        factor, key = contract_network(term.atoms, [], term.ntypes, term.row, term.col, m.letters)
        terms[key] = terms.get(key, 0) + term.coeff * factor
    return Poly(terms, dict(m.letters), m.rows, m.cols)


def random_letters(letters: dict) -> list[Letter]:
    return [l for l in letters.values() if l.is_random]


def count_pairings(m: Mat) -> int:
    """How many Isserlis outcomes the expectation of ``m`` enumerates (its cost)."""
    total = 0
    for term in m.terms:
        total += sum(1 for _ in _term_outcomes(term, dict(m.letters)))
    return total


from .isserlis import expectation  # noqa: E402  (memoised engine; same result, same API)

__all__ = ["expectation", "expectation_enumerated", "canonical", "count_pairings", "sympy"]
